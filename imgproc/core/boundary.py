"""Boundary handling with scipy.ndimage's mode names.

scipy.ndimage names (and what ``jnp.pad`` calls them):

========== ============================== ==================
mode       extension of ``a b c d``        ``jnp.pad`` name
========== ============================== ==================
reflect    ``d c b a | a b c d | d c b a`` ``"symmetric"``
mirror     ``d c b | a b c d | c b a``     ``"reflect"``
nearest    ``a a a | a b c d | d d d``     ``"edge"``
wrap       ``b c d | a b c d | a b c``     ``"wrap"``
constant   ``k k k | a b c d | k k k``     ``"constant"``
========== ============================== ==================

Instead of ``jnp.pad`` (whose reflecting modes cost more than a filter on CPU), the
border is described by a static integer index map built with NumPy at trace time, so
any radius works, also one larger than the image (scipy reflects repeatedly).
"""

from __future__ import annotations

import numpy as np
import jax.numpy as jnp
from jax import lax

from imgproc.core.validate import MODES, check_mode

__all__ = ["MODES", "check_mode", "extended_band", "folded_taps", "index_map", "pad_2d", "pad_axis", "pad_bhwc",
           "padded_planes", "source_index"]

def source_index(i, n, mode: str, xp=np):
    """scipy.ndimage's source index for position ``i`` (any integers, also outside
    ``[0, n)``) of an axis of length ``n``; ``-1`` outside for ``"constant"``.

    ``xp`` is ``numpy`` for static index maps or ``jax.numpy`` when ``n`` is traced (the
    size buckets of :class:`imgproc.Pipeline`). ``n == 1`` maps everything to 0 for the
    reflecting modes.
    """
    if mode == "constant":
        return xp.where((i >= 0) & (i < n), i, -1)
    if mode == "nearest":
        return xp.clip(i, 0, n - 1)
    if mode == "wrap":
        return xp.mod(i, n)
    if mode == "reflect":
        period = 2 * n
        j = xp.mod(i, period)
        return xp.where(j < n, j, period - 1 - j)
    period = xp.maximum(2 * n - 2, 1)  # mirror
    j = xp.mod(i, period)
    return xp.where(n == 1, 0, xp.where(j < n, j, period - j))


def _equivalent_offsets(d: np.ndarray, n: int, mode: str) -> np.ndarray:
    """For each offset ``d`` of a correlation's taps along an axis of length ``n``, the
    smallest offset that reads the same extended sample from every position ``i`` in
    ``[0, n)``: the extensions repeat with a period (wrap ``n``, reflect ``2n``, mirror
    ``2n - 2``), and past ``n - 1`` (``nearest``: the edge) or ``n`` (``constant``: cval)
    every position reads the same value."""
    if mode == "constant":
        return np.clip(d, -n, n)
    if mode == "nearest" or n == 1:  # one sample: every offset reads it
        return np.clip(d, -(n - 1), n - 1)
    if mode == "wrap":
        return (d + n // 2) % n - n // 2
    if mode == "reflect":
        return (d + n) % (2 * n) - n
    return (d + n - 1) % (2 * n - 2) - (n - 1)  # mirror


def folded_taps(weights, n: int, axis: int, mode: str):
    """Correlation ``weights`` (odd length ``2r + 1`` along ``axis``, centred; NumPy or
    traced) for an image axis of ``n`` samples, folded onto the shortest radius that gives
    the same correlation in ``mode``: taps whose offsets read the same extended sample from
    every position are added into one. Unchanged unless ``r`` exceeds what such offsets
    span (about ``n``): a Gaussian of sigma 1000 on a 20-pixel image is a 41-tap kernel,
    not a 8001-tap one over an image extended to 8020 pixels (the FFT's 3.8 GB).

    >>> folded_taps(np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32), 1, 0, "reflect").tolist()
    [15.0]
    """
    r = np.shape(weights)[axis] // 2
    folded = _equivalent_offsets(np.arange(-r, r + 1), n, mode)
    reach = int(np.abs(folded).max())
    if reach == r:
        return weights
    index = folded + reach
    if isinstance(weights, np.ndarray):
        out = np.zeros(np.shape(weights)[:axis] + (2 * reach + 1,) + np.shape(weights)[axis + 1:], np.float64)
        np.add.at(np.moveaxis(out, axis, 0), index, np.moveaxis(weights.astype(np.float64), axis, 0))
        return out.astype(weights.dtype)
    moved = jnp.moveaxis(weights, axis, 0)
    return jnp.moveaxis(jnp.zeros((2 * reach + 1,) + moved.shape[1:], moved.dtype).at[index].add(moved), 0, axis)


def index_map(n: int, before: int, after: int, mode: str) -> np.ndarray:
    """Source index for each position of an axis of length ``n`` extended by
    ``before``/``after`` elements, following scipy.ndimage's ``mode``.

    Returns an int array of length ``before + n + after``. For ``"constant"`` the
    positions outside ``[0, n)`` hold ``-1`` (the caller fills them with ``cval``).
    """
    mode = check_mode(mode)
    return np.asarray(source_index(np.arange(-before, n + after), n, mode))


def extended_band(x, start: int, stop: int, axis: int, mode: str, cval=0):
    """Positions ``start <= i < stop`` of ``x`` extended along ``axis`` with ``mode``
    (static ints, also outside ``[0, n)``; ``"constant"`` fills ``cval``, a scalar of
    ``x``'s dtype, traced or not), for a border strip that needs no padded copy of the
    whole array.

    Made of slices of ``x`` (a run of consecutive source positions is one slice) joined
    together, not a gather: XLA fuses slices into the loops that read the band, also
    when ``x`` is itself a slice of a flat view (:func:`imgproc.cpu.output_buffers.from_flat`),
    where a gather made it copy ``x`` whole first."""
    mode = check_mode(mode)
    axis = axis % x.ndim
    idx = np.asarray(source_index(np.arange(start, stop), x.shape[axis], mode)).tolist()
    pieces, i = [], 0
    while i < len(idx):
        j = i + 1
        if idx[i] < 0:
            while j < len(idx) and idx[j] < 0:
                j += 1
            shape = list(x.shape)
            shape[axis] = j - i
            pieces.append(jnp.full(shape, jnp.asarray(cval, x.dtype)))
        else:
            while j < len(idx) and idx[j] == idx[j - 1] + 1:
                j += 1
            pieces.append(lax.slice_in_dim(x, idx[i], idx[i] + j - i, axis=axis))
        i = j
    return pieces[0] if len(pieces) == 1 else jnp.concatenate(pieces, axis=axis)


def pad_axis(x, before: int, after: int, axis: int, mode: str, cval=0.0):
    """Extend ``x`` along ``axis`` by ``before``/``after`` elements with scipy's
    ``mode``. Works for any radius, also one larger than the axis."""
    if before == 0 and after == 0:
        return x
    mode = check_mode(mode)  # a grid-* alias compares as its canonical name below
    n = x.shape[axis]
    idx = index_map(n, before, after, mode)
    if mode != "constant":
        return jnp.take(x, jnp.asarray(idx), axis=axis)
    shape_b = list(x.shape)
    shape_b[axis] = before
    shape_a = list(x.shape)
    shape_a[axis] = after
    fill = jnp.asarray(cval, x.dtype)
    return jnp.concatenate(
        [jnp.full(shape_b, fill, x.dtype), x, jnp.full(shape_a, fill, x.dtype)], axis=axis
    )


def pad_axis_strips(x, before: int, after: int, axis: int, mode: str, cval=0.0):
    """:func:`pad_axis` that makes only the two border strips (:func:`extended_band`) and
    joins them to ``x`` (a gather of the whole extended array costs much more on CPU)."""
    n = x.shape[axis]
    parts = [extended_band(x, -before, 0, axis, mode, cval) if before else None, x,
             extended_band(x, n, n + after, axis, mode, cval) if after else None]
    parts = [p for p in parts if p is not None]
    return jnp.concatenate(parts, axis=axis) if len(parts) > 1 else x


def padded_planes(x, r, mode: str, dtype=jnp.float32, cval=0.0):
    """The channel planes ``(N, C, H + 2ry, W + 2rx)`` of the ``(N, H, W, C)`` image ``x``,
    extended by ``r`` (an int, or ``(ry, rx)``) on both sides of H and W with ``mode``
    (``"constant"`` fills ``cval``) and cast to ``dtype``.

    The extension is made in NHWC, in ``x``'s own dtype, before the transpose: there its
    joins run along outer axes, which XLA's loops write at copy speed, whereas joining
    planes along their innermost axis (W) is a concatenate XLA does not fuse, a large part
    of a bilateral's time (why: benchmarks/NOTES.md, "Bilateral"). W first: XLA then fuses
    its join into H's, one loop instead of two."""
    ry, rx = (r, r) if isinstance(r, int) else r
    extended = pad_axis_strips(pad_axis_strips(x, rx, rx, 2, mode, cval), ry, ry, 1, mode, cval)
    planes = jnp.moveaxis(extended, 3, 1).astype(dtype)
    return lax.optimization_barrier(planes)  # materialised once, then read by every offset


def pad_bhwc(x, ry: int, rx: int, mode: str, cval=0.0):
    """Extend the H and W axes of a ``(B, H, W, C)`` array by ``ry`` and ``rx`` on both sides."""
    return pad_axis(pad_axis(x, ry, ry, 1, mode, cval), rx, rx, 2, mode, cval)


def pad_2d(x, radii, mode: str, cval=0.0):
    """Extend the last two axes of ``x`` by ``radii = ((top, bottom), (left, right))``."""
    (t, b), (l, r) = radii
    x = pad_axis(x, t, b, x.ndim - 2, mode, cval)
    return pad_axis(x, l, r, x.ndim - 1, mode, cval)
