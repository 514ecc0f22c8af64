"""Pieces the augmentation families share: the value range, shapes, draws.

Value range
    Colour and noise ops need to know what "white" is. Every such op takes
    ``max_value=None``, meaning the range of the image's own dtype
    (:func:`imgproc.core.arrays.resolve_max`: 255 for uint8, 65535 for uint16, 1.0 for float
    images). A :class:`imgproc.Pipeline` computes in float32, so it passes ``max_value``
    explicitly: the range of the dtype it was called with (a uint8 batch is treated as
    0..255 all the way through).
"""

from __future__ import annotations

import jax.numpy as jnp

from imgproc.core.arrays import channel_axis, spatial_axes, to_output
from imgproc.core.keys import below, scaled, uniforms
from imgproc.core.validate import check_range, check_size_pair

__all__ = ["back", "channels", "crop_window_params", "draw_box", "fixed_size", "hw", "need_rgb", "sample_nearest",
           "to_float", "warp_coordinates"]


def hw(shape_or_image, layout):
    """(H, W) of an image or of an image's shape in ``layout``."""
    shape = getattr(shape_or_image, "shape", shape_or_image)
    a, b = spatial_axes(layout)
    return shape[a], shape[b]


def channels(shape_or_image, layout) -> int:
    shape = getattr(shape_or_image, "shape", shape_or_image)
    ax = channel_axis(layout)
    return 1 if ax is None else shape[ax]


def need_rgb(image, layout, name):
    if channels(image, layout) != 3:
        raise ValueError(f"{name} needs an RGB image (3 channels); got shape {tuple(image.shape)} with layout {layout!r}")


def to_float(image):
    return image.astype(jnp.float32) if image.dtype != jnp.float32 else image


def back(y, dtype):
    """Cast a float result to the input's dtype (integers rounded and saturated)."""
    return to_output(y, dtype)


def draw_box(u, h, w, scale, ratio):
    """A box of area ``U(scale) * H * W`` and aspect ``r = exp(U(log ratio))``:
    ``(sqrt(area * r), sqrt(area / r))``, unrounded, from two uniforms ``u`` in [0, 1)."""
    check_range("scale", scale, low=0, high=1)
    check_range("ratio", ratio, low=1e-6)
    area = scaled(u[0], scale[0], scale[1]) * (h * w)
    r = jnp.exp(scaled(u[1], jnp.log(jnp.asarray(ratio[0], jnp.float32)), jnp.log(jnp.asarray(ratio[1], jnp.float32))))
    return jnp.sqrt(area * r), jnp.sqrt(area / r)


def fixed_size(options):
    """The fixed output size ``(height, width)`` of a resize or crop stage whose options
    give a ``size`` (None when they do not: the output then has the input's size)."""
    return None if options.get("size") is None else check_size_pair("size", options["size"])


def crop_window_params(key, in_hw, crop):
    """``random_crop``'s draw: a uniform ``crop`` window in an ``in_hw`` image (sides ints
    or traced): ``{"top", "left"}``."""
    u = uniforms(key, 2)
    return {"top": below(u[0], in_hw[0] - crop[0] + 1), "left": below(u[1], in_hw[1] - crop[1] + 1)}


def warp_coordinates(matrix, out_hw):
    """Source ``(rows, cols)`` of every pixel of an ``out_hw`` output under the forward 3×3
    ``matrix`` (pixel indices, ``x = col, y = row``): ``matrix⁻¹ (x, y, 1)`` after the
    projective divide."""
    h, w = out_hw
    inv = jnp.linalg.inv(jnp.asarray(matrix, jnp.float32))
    ys, xs = jnp.meshgrid(jnp.arange(h, dtype=jnp.float32), jnp.arange(w, dtype=jnp.float32), indexing="ij")
    den = inv[2, 0] * xs + inv[2, 1] * ys + inv[2, 2]
    cols = (inv[0, 0] * xs + inv[0, 1] * ys + inv[0, 2]) / den
    rows = (inv[1, 0] * xs + inv[1, 1] * ys + inv[1, 2]) / den
    return rows, cols


def sample_nearest(image, rows, cols, layout, cval, *, half_up=False):
    """Nearest sampling at float ``rows``/``cols`` (pixel indices, rounded half to even, as
    PyTorch's ``grid_sample(mode="nearest")``; with ``half_up``, half up: the pixel that holds
    the point, as the resize ops' ``"nearest"`` takes the pixel holding an output centre); a
    pixel outside the image reads ``cval``. dtype kept."""
    a, b = spatial_axes(layout)
    h, w = hw(image, layout)
    nearest = (lambda v: jnp.floor(v + 0.5)) if half_up else jnp.round
    ri, ci = nearest(rows).astype(jnp.int32), nearest(cols).astype(jnp.int32)
    inside = (ri >= 0) & (ri < h) & (ci >= 0) & (ci < w)
    x = jnp.moveaxis(to_float(jnp.asarray(image)), (a, b), (0, 1))
    value = x[jnp.clip(ri, 0, h - 1), jnp.clip(ci, 0, w - 1)]
    extra = (1,) * (x.ndim - 2)
    value = jnp.where(inside.reshape(inside.shape + extra), value, jnp.asarray(cval, jnp.float32))
    return back(jnp.moveaxis(value, (0, 1), (a, b)), image.dtype)
