"""Helpers shared by the restoration modules: the argument checks every denoiser starts
with, and per-image values (a scalar for one image, ``(N,)`` for a batch)."""

from __future__ import annotations

import jax.numpy as jnp

from imgproc.core.images import check_image
from imgproc.core.validate import check_mode

__all__ = ["per_image", "per_image_scalar", "prepare"]


def prepare(image, layout, mode=None, *, read_in_place=False):
    image, layout = check_image(image, layout, read_in_place=read_in_place)
    if mode is not None:
        check_mode(mode)
    return image, layout


def per_image(values, layout):
    """Per-image values (N,) as the caller sees them: a scalar for one image."""
    return values if layout in ("NHWC", "NCHW") else values[0]


def per_image_scalar(value, n):
    """A scalar or per-image (N,) option as float32 (N,)."""
    v = jnp.asarray(value, jnp.float32)
    return jnp.broadcast_to(v.reshape(-1) if v.ndim else v, (n,))
