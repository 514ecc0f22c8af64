"""Linear (triangle-filter) resampling along one axis as a few gathered taps per output
pixel, for resizes whose scale is traced but bounded (the random resized crop).

``jax.image.scale_and_translate`` builds a dense ``(n_out, n_in)`` weight matrix and
contracts it with the image, one matrix product per axis: about ``n_out * n_in`` multiply-adds
per output row, where linear resampling needs two (or ``2 / scale`` when an antialiased
resize shrinks). Here each output index reads only the ``taps`` input indices its filter
covers: the height pass gathers whole rows (contiguous ``W * C`` runs), the width pass
gathers whole columns after a transpose. Same weights as ``scale_and_translate(...,
method="linear")``: half-pixel centres, the triangle widened by ``1 / scale`` when
``antialias`` and shrinking, input indices outside ``[0, n_in)`` dropped and the rest
renormalised, and an output pixel whose centre maps outside the input is 0. Equal to it
within float rounding (tests/augment/test_augment.py compares both, and Pillow's ``F``-mode
bilinear resize with a ``box``).

Measured against the dense matrices: benchmarks/NOTES.md, "ImageNet training recipe".
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from imgproc.core.arrays import materialized

__all__ = ["linear_taps", "resample_axis", "tap_count"]


def tap_count(max_inv_scale: float, antialias: bool) -> int:
    """Taps per output index for a linear resize whose ``n_in / n_out`` (the inverse
    scale) is at most ``max_inv_scale``: ``ceil(2 * max(1, max_inv_scale))`` with
    ``antialias`` (the triangle's support widens with the shrink), 2 without."""
    width = max(1.0, float(max_inv_scale)) if antialias else 1.0
    return max(2, math.ceil(2 * width - 1e-9))


def linear_taps(n_in: int, n_out: int, scale, translation, *, antialias: bool, taps: int):
    """Input indices ``(n_out, taps)`` int32 and weights ``(n_out, taps)`` float32 of the
    1-D linear resample ``out[i] = sum_k weight[i, k] * x[index[i, k]]``, matching
    ``jax.image.scale_and_translate(..., method="linear")``'s weights for ``scale`` and
    ``translation`` (traced scalars; output coordinate ``= scale * input + translation``).
    ``taps`` (static) must be at least :func:`tap_count` of ``1 / scale``."""
    scale = jnp.asarray(scale, jnp.float32)
    inv = 1.0 / scale
    centre = (jnp.arange(n_out, dtype=jnp.float32) + 0.5) * inv - jnp.asarray(translation, jnp.float32) * inv - 0.5
    inside = (centre >= -0.5) & (centre <= n_in - 0.5)  # outside: no weight at all (output 0)
    if taps == 2:
        # The filter is never widened (taps == 2 means no shrink): two neighbours, and
        # dropping an index outside the input then renormalising is clamping the centre.
        c = jnp.clip(centre, 0.0, n_in - 1.0)
        first = jnp.floor(c).astype(jnp.int32)
        frac = jnp.where(inside, c - first, 0.0)
        index = jnp.stack([first, jnp.minimum(first + 1, n_in - 1)], axis=1)
        return index, jnp.stack([jnp.where(inside, 1.0 - frac, 0.0), frac], axis=1)
    width = jnp.maximum(inv, 1.0) if antialias else jnp.float32(1.0)
    first = jnp.floor(centre - width).astype(jnp.int32) + 1  # the first index the open support reaches
    index = first[:, None] + jnp.arange(taps, dtype=jnp.int32)[None, :]
    weight = jnp.maximum(0.0, 1.0 - jnp.abs(centre[:, None] - index.astype(jnp.float32)) / width)
    weight = jnp.where((index >= 0) & (index < n_in), weight, 0.0)
    total = jnp.sum(weight, axis=1, keepdims=True)
    weight = jnp.where(jnp.abs(total) > 1000.0 * float(jnp.finfo(jnp.float32).eps),
                       weight / jnp.where(total != 0, total, 1.0), 0.0)
    weight = jnp.where(inside[:, None], weight, 0.0)
    # computed once (fused into the resample, XLA recomputes them per pixel)
    both = materialized(jnp.concatenate([jnp.clip(index, 0, n_in - 1).astype(jnp.float32), weight], axis=1))
    return both[:, :taps].astype(jnp.int32), both[:, taps:]


def resample_axis(x, axis: int, index, weight):
    """``out[..., i, ...] = sum_k weight[i, k] * x[..., index[i, k], ...]`` along ``axis`` of
    the float array ``x`` (one image): the axis is moved to the front and whole slices are
    gathered, one gather per tap (one gather of all taps then split measured slower on
    XLA:CPU), then it is moved back."""
    front = jnp.moveaxis(x, axis, 0)
    wshape = (index.shape[0],) + (1,) * (front.ndim - 1)
    out = sum(front[index[:, k]] * weight[:, k].reshape(wshape) for k in range(index.shape[1]))
    return jnp.moveaxis(out, 0, axis)
