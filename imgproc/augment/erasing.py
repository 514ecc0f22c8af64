"""Erasing: fill a box (:func:`erase`) and its random twin (``torchvision``'s RandomErasing)."""

from __future__ import annotations

import jax.numpy as jnp

from imgproc.augment.common import back, draw_box, hw, to_float
from imgproc.augment.noise import hash_normal
from imgproc.core.array_type import callers_type
from imgproc.core.arrays import channel_axis, resolve_max, spatial_axes
from imgproc.core.images import check_image
from imgproc.core.keys import below, doctests, draw_words, maybe, random_op, unit
from imgproc.core.registry import KEEPS_TARGETS, OpInfo, register_ops
from imgproc.core.validate import check_choice, check_number


def _box_mask(shape, layout, top, left, height, width):
    """Broadcastable boolean mask of rows ``[top, top + height)`` x cols ``[left, left + width)``."""
    a, b = spatial_axes(layout)
    h, w = hw(shape, layout)
    rows, cols = jnp.arange(h), jnp.arange(w)
    inr = (rows >= top) & (rows < top + jnp.asarray(height))
    inc = (cols >= left) & (cols < left + jnp.asarray(width))
    mshape = [1] * len(shape)
    mshape[a], mshape[b] = h, w
    return (inr[:, None] & inc[None, :]).reshape(mshape)


@callers_type
def erase(image, top, left, height, width, *, value=0.0, layout=None):
    """Set the box ``rows [top, top + height) x cols [left, left + width)`` to ``value``
    (a number or one value per channel, in the image's own range); box bounds may be traced.
    A fractional bound selects the pixels whose index lies in the half-open range (``top=1.5``
    starts at row 2); ``height`` and ``width`` must be >= 0.

    The fill of ``torchvision.transforms.functional.erase``. Shape and dtype kept.

    Example:
        >>> import numpy as np, imgproc
        >>> np.asarray(imgproc.erase(np.ones((3, 3), np.uint8), 1, 1, 2, 1)).tolist()
        [[1, 1, 1], [1, 0, 1], [1, 0, 1]]
    """
    image, layout = check_image(image, layout)
    for name, bound in (("top", top), ("left", left)):
        check_number(name, bound)
    for name, extent in (("height", height), ("width", width)):
        check_number(name, extent, low=0)
    mask = _box_mask(image.shape, layout, jnp.asarray(top), jnp.asarray(left), height, width)
    val = jnp.asarray(value, jnp.float32)
    cax = channel_axis(layout)
    channels = 1 if cax is None else image.shape[cax]
    if val.ndim > 1 or (val.ndim == 1 and val.shape[0] not in (1, channels)):
        raise ValueError(f"value must be a number or one value per channel ({channels}); got shape {val.shape}")
    if val.ndim == 1 and cax is not None:
        vshape = [1] * image.ndim
        vshape[cax] = val.shape[0]
        val = val.reshape(vshape)
    x = to_float(jnp.asarray(image))
    return back(jnp.where(mask, val, x), image.dtype)


def _erasing_params(key, shape, *, layout, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3)):
    check_number("p", p, low=0, high=1)
    h, w = hw(shape, layout)
    words = draw_words(key, 7)  # whether, the box's area and aspect, its position; the fill's two words
    u = unit(words[:5])
    a, b = draw_box(u[1:3], h, w, scale, ratio)
    bh = jnp.clip(jnp.round(a), 1, h).astype(jnp.int32)
    bw = jnp.clip(jnp.round(b), 1, w).astype(jnp.int32)
    return {
        "erase": u[0] < jnp.asarray(p, jnp.float32),
        "top": below(u[3], h - bh + 1),
        "left": below(u[4], w - bw + 1),
        "height": bh,
        "width": bw,
        "fill_words": words[5:],
    }


def _check_fill(value):
    """A fill given by name must be ``"random"`` (numbers pass: :func:`erase` takes them)."""
    if isinstance(value, str):
        check_choice("value", value, ("random",))


def _apply_erasing(image, params, *, layout, value=0.0, max_value=None):
    _check_fill(value)
    x = jnp.asarray(image)
    box = params["top"], params["left"], params["height"], params["width"]

    def erased(x):
        if not isinstance(value, str):
            return erase(x, *box, value=value, layout=layout)
        m = resolve_max(max_value, x.dtype)
        fill = (0.5 + 0.25 * hash_normal(params["fill_words"], x.shape, layout)) * m
        return back(jnp.where(_box_mask(x.shape, layout, *box), fill, to_float(x)), x.dtype)

    return maybe(params["erase"], erased, x)


OPS = (
    OpInfo("erase", erase),
    random_op("random_erasing", _erasing_params, _apply_erasing,
              checks={"value": _check_fill},
              doc="""``torchvision.transforms.RandomErasing``: with probability ``p`` erase a box of area
    ``U(scale) * H * W`` and aspect ``exp(U(log ratio))`` at a uniform position, filled with
    ``value`` (a number, per-channel values, or ``"random"``: normal noise of the image's
    range, ``N(0.5, 0.25) * max_value``). One draw (a box too large is shrunk to fit).
    Parameters: ``{"erase", "top", "left", "height", "width", "fill_words"}``."""),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
__test__ = doctests(OPS)  # the examples of the functions random_op wrote
