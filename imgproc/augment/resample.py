"""Resampling along one axis as a few gathered taps per output pixel: the engine beneath
:func:`imgproc.resize` and the other ops that resize (``resize_shorter``, ``letterbox``,
``resized_crop``, ``random_resized_crop``).

``jax.image.scale_and_translate`` builds a dense ``(n_out, n_in)`` weight matrix and
contracts it with the image: about ``n_out * n_in`` multiply-adds per output row, where a
filter of radius ``R`` needs ``2 R`` (``2 R / scale`` when an antialiased resize shrinks).
Here each output index reads only the ``taps`` input indices its filter covers: whole
slices gathered along the axis, one gather per tap. The weights are
``scale_and_translate``'s (half-pixel centres; the filter widened by ``1 / scale`` when
``antialias`` and shrinking; indices outside the image dropped and the rest
renormalised; an output pixel whose centre maps outside the image is 0): equal to it
within float rounding.

The image may be the top-left part of a larger array (a *canvas*, as a batch of images of
different sizes is held): ``n_valid``, the image's true length along the axis, may be a
traced integer, and only indices below it are read. The arithmetic is written so that
the result does not depend on the canvas: weights are summed and applied tap by tap in a
fixed order, and taps beyond a filter's support weigh exactly 0, so the same image on any
canvas, with any tap count that covers the support, gives bit-equal pixels. This is what
lets a pipeline run a list of images of many sizes in one program and still return, for
each image, exactly what a call on that image alone returns (``docs/augment.md``, "Real
datasets").
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from imgproc.core.arrays import materialized
from imgproc.cpu import in_own_loop

__all__ = ["FILTER_RADIUS", "area_taps", "filter_taps", "nearest_source", "resample_axis", "tap_count"]

# The filters of scale_and_translate's methods, each with its support radius.
FILTER_RADIUS = {"linear": 1, "cubic": 2, "lanczos3": 3}


def _triangle(x):
    return jnp.maximum(0.0, 1.0 - x)


def _keys_cubic(x):
    """Keys' cubic, a = -0.5 (``jax.image``'s and Pillow's bicubic)."""
    out = ((1.5 * x - 2.5) * x) * x + 1.0
    out = jnp.where(x >= 1.0, ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0, out)
    return jnp.where(x >= 2.0, 0.0, out)


def _sin_pi(x):
    """``sin(pi x)``, exactly 0 at integers (float32's ``sin(pi * 1)`` is -8.7e-8): a
    resize to the same size is then an exact copy, as with the other filters."""
    whole = jnp.round(x)
    return jnp.sin(np.pi * (x - whole)) * (1.0 - 2.0 * jnp.mod(whole, 2.0))


def _lanczos3(x):
    """Lanczos with a = 3 (``jax.image``'s and Pillow's ``LANCZOS``)."""
    y = 3.0 * _sin_pi(x) * jnp.sin(np.pi * x / 3.0)
    out = jnp.where(x > 1e-3, y / jnp.where(x != 0, np.pi ** 2 * x ** 2, 1.0), 1.0)
    return jnp.where(x >= 3.0, 0.0, out)


_FILTERS = {"linear": _triangle, "cubic": _keys_cubic, "lanczos3": _lanczos3}


def tap_count(method: str, max_inv_scale: float, antialias: bool) -> int:
    """Taps per output index for a ``method`` resize whose ``n_in / n_out`` (the inverse
    scale) is at most ``max_inv_scale``: ``ceil(2 R w)`` for the filter's radius ``R``,
    ``w = max(1, max_inv_scale)`` with ``antialias`` (the support widens as it shrinks),
    1 without; ``"area"``: ``ceil(max_inv_scale) + 1``."""
    if method == "area":
        return max(1, math.ceil(float(max_inv_scale) - 1e-9)) + 1
    width = max(1.0, float(max_inv_scale)) if antialias else 1.0
    return max(2, math.ceil(2 * FILTER_RADIUS[method] * width - 1e-9))


# Off CPU, a sum of more terms than UNROLLED_MAX_TAPS (a resample's taps, the columns of
# its weight table) adds LOOP_TAPS of them a step in a loop, in the same order: the same
# bits. XLA:GPU's compile time grows much faster than the unrolled terms do: resizing a
# 1200x1200 image to 7x13 (about 340 and 190 taps) took 25 s to compile for an H200, 1.4 s
# in steps of 16 (a 3000x3000 image 12 s until the weight table's columns were added so
# too); a 112x112 thumbnail of it (about 22 taps) takes 1.1 s unrolled
# (benchmarks/NOTES.md, "GPU").
UNROLLED_MAX_TAPS = 32
LOOP_TAPS = 16


def _ordered_sum(first, term, count: int):
    """``first + term(1) + ... + term(count - 1)``, added left to right; ``term`` takes an
    int, or a traced one in the loop off CPU (:data:`UNROLLED_MAX_TAPS`)."""
    total, start = first, 1
    if count > UNROLLED_MAX_TAPS and jax.default_backend() != "cpu":
        steps = (count - 1) // LOOP_TAPS

        def step(j, partial):
            for i in range(LOOP_TAPS):
                partial = partial + term(1 + j * LOOP_TAPS + i)
            return partial

        total = jax.lax.fori_loop(0, steps, step, total)
        start = 1 + steps * LOOP_TAPS
    for k in range(start, count):
        total = total + term(k)
    return total


def _sum_columns(a):
    """``a.sum(axis=1)`` added column by column, left to right: the same bits whatever
    the number of trailing zero columns."""
    return _ordered_sum(a[:, 0], lambda k: a[:, k], a.shape[1])


def _normalised(index, weight, n_valid, inside):
    """Weights of indices outside ``[0, n_valid)`` dropped, the rest renormalised (0 where
    they sum to about nothing), rows not ``inside`` 0 (:func:`_table`)."""
    weight = jnp.where((index >= 0) & (index < n_valid), weight, 0.0)
    total = _sum_columns(weight)[:, None]
    weight = jnp.where(jnp.abs(total) > 1000.0 * float(jnp.finfo(jnp.float32).eps),
                       weight / jnp.where(total != 0, total, 1.0), 0.0)
    return _table(index, jnp.where(inside[:, None], weight, 0.0), n_valid)


def _table(index, weight, n_valid):
    """The taps' indices clipped into the image and their weights, computed once as one
    array (XLA would recompute a fused weight per pixel): ``(index int32, weight)``."""
    index = jnp.clip(index, 0, jnp.maximum(n_valid - 1, 0))
    taps = index.shape[1]
    both = materialized(jnp.concatenate([index.astype(jnp.float32), weight], axis=1))
    return both[:, :taps].astype(jnp.int32), both[:, taps:]


def filter_taps(centre, n_valid, *, method: str, width, taps: int):
    """Input indices ``(n_out, taps)`` int32 and weights ``(n_out, taps)`` float32 of a
    ``method`` (linear, cubic, lanczos3) resample whose output pixel ``i`` is centred on
    input coordinate ``centre[i]`` (pixel indices, float32), the filter widened by
    ``width`` (``max(1, 1 / scale)`` when antialiasing a shrink, else 1), over an image of
    ``n_valid`` pixels (an int or a traced int). ``taps`` (static) must be at least
    :func:`tap_count`'s."""
    radius = FILTER_RADIUS[method]
    # the width as a runtime value: with a known width, the jitted resample of a cubic or
    # lanczos3 upscale came out up to 220 levels wrong on XLA:CPU (eager was right; the
    # cause inside XLA was not traced; tests/augment/test_geometry_size.py guards it)
    width = jax.lax.optimization_barrier(jnp.asarray(width, jnp.float32))
    first = jnp.floor(centre - radius * width).astype(jnp.int32) + 1  # the first index the open support reaches
    index = first[:, None] + jnp.arange(taps, dtype=jnp.int32)[None, :]
    weight = _FILTERS[method](jnp.abs(centre[:, None] - index.astype(jnp.float32)) / width)
    inside = (centre >= -0.5) & (centre <= jnp.asarray(n_valid, jnp.float32) - 0.5)
    return _normalised(index, weight, n_valid, inside)


def area_taps(positions, n_valid, n_full, *, taps: int):
    """OpenCV's ``INTER_AREA`` as taps: output position ``j`` (int32) of a resize of
    ``n_valid`` pixels to ``n_full`` covers the input interval ``[j, j + 1) * n_valid /
    n_full`` and takes the mean of the pixels it overlaps, weighted by the overlap. The
    overlaps are exact integers (in units of ``1 / n_full`` pixel), each weight one
    rounding of ``overlap / n_valid``. Positions outside ``[0, n_full)`` weigh nothing.
    Same return as :func:`filter_taps`."""
    n_valid = jnp.asarray(n_valid, jnp.int32)
    n_full = jnp.asarray(n_full, jnp.int32)
    lo, hi = positions * n_valid, (positions + 1) * n_valid
    index = (lo // n_full)[:, None] + jnp.arange(taps, dtype=jnp.int32)[None, :]
    overlap = jnp.minimum(hi[:, None], (index + 1) * n_full) - jnp.maximum(lo[:, None], index * n_full)
    inside = (positions >= 0) & (positions < n_full)
    weight = jnp.where((overlap > 0) & (index < n_valid) & inside[:, None],
                       overlap.astype(jnp.float32) / n_valid.astype(jnp.float32), 0.0)
    return _table(index, weight, n_valid)


def nearest_source(positions, n_valid, n_full):
    """The source index of output positions ``positions`` (int32) of a nearest resize of
    ``n_valid`` pixels to ``n_full``: ``floor((i + 0.5) * n_valid / n_full)`` in exact
    integer arithmetic, ``(2 i + 1) n_valid // (2 n_full)``, clipped into the image
    (``n_valid`` and ``n_full`` ints or traced ints)."""
    n_valid = jnp.asarray(n_valid, jnp.int32)
    src = (2 * positions + 1) * n_valid // (2 * jnp.asarray(n_full, jnp.int32))
    return jnp.clip(src, 0, n_valid - 1)


def resample_axis(x, axis: int, index, weight):
    """``out[..., i, ...] = sum_k weight[i, k] * x[..., index[i, k], ...]`` along ``axis`` of
    the array ``x`` (one image; any real dtype, each gathered value converted to float32,
    so that a uint8 image is read as it is), summed tap by tap in order, float32: the axis
    is moved to the front and whole slices are gathered, one gather per tap (one gather of
    all taps then split measured slower on XLA:CPU), then it is moved back.

    On CPU the result is a buffer of its own (:func:`imgproc.cpu.fusion.in_own_loop`): left
    to fusion, XLA computed the next axis's taps with this axis's inside them, every
    output pixel gathering ``taps * taps`` input pixels, and the random resized crop ran
    2.7 times slower (benchmarks/NOTES.md, "Real datasets"). The same bits either way."""
    return in_own_loop(lambda v: _taps_along(v, axis, index, weight), x)


def _taps_along(x, axis, index, weight):
    front = jnp.moveaxis(x, axis, 0)
    wshape = (index.shape[0],) + (1,) * (front.ndim - 1)

    def term(k):  # tap k (an int, or traced in the loop) of every output index
        return front[index[:, k]].astype(jnp.float32) * weight[:, k].reshape(wshape)

    return jnp.moveaxis(_ordered_sum(term(0), term, index.shape[1]), 0, axis)
