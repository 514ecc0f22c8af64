"""Mathematical morphology with scipy.ndimage's definitions: grey :func:`erosion`,
:func:`dilation`, :func:`opening`, :func:`closing`, :func:`white_tophat`,
:func:`black_tophat` and :func:`morphological_gradient` (``scipy.ndimage.grey_*``), and
:func:`binary_erosion`, :func:`binary_dilation`, :func:`binary_opening` and
:func:`binary_closing` (``scipy.ndimage.binary_*``).

**The structuring element** (flat): ``size=`` an int or ``(height, width)`` (a rectangle,
even sides as scipy places them), or ``footprint=`` ``"square"``, ``"disk"`` or ``"cross"``
of side ``size`` (3 by default; a disk of side ``2r + 1`` is ``skimage.morphology.disk(r)``;
with two sides, an ellipse), or a 2-D array of booleans (scipy's ``footprint``; a JSON spec
gives nested lists). Erosion takes the minimum over the footprint placed with its centre
at ``size // 2`` (scipy's origin 0); dilation the maximum over the footprint reflected,
as scipy (the same set for a symmetric footprint).

**How.** Each op runs in the image's own dtype (order statistics: nothing is rounded, so
integer images give scipy's result bit for bit), on each channel of the two spatial axes,
in any layout. The extremum over a run of ``L`` pixels along an axis is taken by doubling:
the extremum of 2, 4, 8 ... consecutive pixels, then two overlapping pieces of the largest
(``ceil(log2 L)`` comparisons a pixel, 4 for ``L = 15``). A rectangle is a run along the
columns, then along the rows; any other footprint is a run per row of the footprint, the
rows combined with one comparison each. (van Herk/Gil-Werman's block prefix and suffix
extrema need 3 comparisons a pixel for every ``L``, but XLA runs their per-block scans
10-20 times slower than the doubling's whole-array passes; benchmarks/NOTES.md,
"Morphology".) The border comes from the same index maps as the filters'
(:mod:`imgproc.core.boundary`): scipy's five modes, ``cval`` for ``"constant"``. A
rectangle's pass reads the image once: the runs inside it are taken on the image itself
(along the columns, on its memory as one flat row, a misaligned NumPy image read in place
included), the few at each end from strips of the extended border, and XLA joins them in
the same loop (:func:`_run_along`).

**Composite ops** are compositions as scipy computes them, each pass extending its own
input: ``opening = dilation(erosion(x))``, ``closing = erosion(dilation(x))``,
``white_tophat = x - opening``, ``black_tophat = closing - x``,
``morphological_gradient = dilation - erosion``. The second op's columns read the first
op's result as one flat row and its border strips from that result's edge columns,
computed apart on the image's own (:func:`_edge_columns`), so the first result is
written once. A difference of an integer image
saturates at 0 where scipy's wraps around (-1 becoming 255): that happens only near the
border, where the extension of the first pass's result can lift an opening above the
image or lower a closing below it (``mode="constant"``, or an even-sided or asymmetric
footprint); everywhere else the top-hats are scipy's bit for bit too. The gradient
saturates the same way, anywhere, when the footprint leaves out its centre (erosion and
dilation then take disjoint sets, and the dilation can be the smaller); with the centre
in, it is never negative.

**float64** is computed in float32, as by every op (docs/guide.md, "dtypes and
rounding"): the result is scipy's on the image rounded to float32, returned as float64.

**Binary ops** follow ``scipy.ndimage.binary_*``: a pixel is set where it is nonzero; the
outside is ``border_value``; the default footprint is scipy's 3×3 cross; ``iterations``
repeats the op. A bool image gives a bool image (scipy's result exactly); any other dtype
gives ``max_value`` (255 for uint8, 65535 for uint16, 1 for floats; a pipeline passes its
input's) where set and 0 elsewhere, in that dtype.
"""

from __future__ import annotations

import functools

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

from imgproc.core.array_type import callers_type
from imgproc.core.arrays import from_bhwc, resolve_max, to_bhwc
from imgproc.core.boundary import extended_band, pad_axis_strips
from imgproc.core.images import check_image
from imgproc.core.registry import KEEPS_TARGETS, NOT_DIFFERENTIABLE, OpInfo, register_ops
from imgproc.core.validate import (MODE_CHECK, check_choice, check_int, check_layout, check_mode, check_number,
                                   check_size_pair, is_traced)
from imgproc.cpu import IntoBuffer, from_flat, scratch

__all__ = ["FOOTPRINTS", "binary_closing", "binary_dilation", "binary_erosion", "binary_opening", "black_tophat",
           "closing", "dilation", "erosion", "footprint_array", "morphological_gradient", "opening", "white_tophat"]

FOOTPRINTS = ("square", "disk", "cross")


def footprint_array(size=None, footprint=None, *, default=None) -> np.ndarray:
    """The structuring element as a 2-D bool array: a rectangle of ``size``, a named
    ``footprint`` (:data:`FOOTPRINTS`) of side ``size`` (3 when None), or ``footprint``
    itself (an array or nested lists). ``default``: the array when neither is given (the
    binary ops: scipy's cross); None refuses that, as scipy's grey ops do."""
    if footprint is None:
        if size is None:
            if default is None:
                raise ValueError("size or footprint must be given: size=3 (a 3x3 square), size=(h, w), "
                                 f"footprint= one of {', '.join(FOOTPRINTS)} (side size), or a 2-D array of booleans")
            return default
        h, w = check_size_pair("size", size)
        return np.ones((h, w), bool)
    if isinstance(footprint, str):
        check_choice("footprint", footprint, FOOTPRINTS)
        h, w = check_size_pair("size", 3 if size is None else size)
        if footprint == "square":
            return np.ones((h, w), bool)
        if footprint == "cross":
            fp = np.zeros((h, w), bool)
            fp[h // 2, :] = fp[:, w // 2] = True
            return fp
        if h % 2 == 0 or w % 2 == 0:
            raise ValueError(f"a disk needs odd sides (2r + 1); got size={size!r}")
        ry, rx = h // 2, w // 2
        y, x = np.mgrid[-ry:ry + 1, -rx:rx + 1]
        if ry == rx:  # skimage.morphology.disk(r), in integers
            return y * y + x * x <= ry * ry
        return (y / max(ry, 1)) ** 2 + (x / max(rx, 1)) ** 2 <= 1.0
    if size is not None:
        raise ValueError("give size or a footprint array, not both (size sets a named footprint's side only)")
    if is_traced(footprint):
        raise ValueError("footprint must be concrete (its shape decides the program)")
    fp = np.asarray(footprint)
    if fp.ndim != 2 or 0 in fp.shape or fp.dtype.kind not in "biuf" or not np.isin(fp, (0, 1)).all():
        raise ValueError(f"footprint must be one of {', '.join(FOOTPRINTS)} or a non-empty 2-D array of booleans "
                         f"(or 0/1); got {np.asarray(footprint).dtype} array of shape {fp.shape}")
    fp = fp.astype(bool)
    if not fp.any():
        raise ValueError("footprint must contain at least one True")
    return fp


def _key(fp: np.ndarray) -> str:
    """The footprint as a static option of the programs: its rows of 0/1 joined by "/"
    (one hashable leaf: an eager call hashes it on every call)."""
    return "/".join("".join("1" if v else "0" for v in row) for row in fp.tolist())


def _from_key(key: str) -> np.ndarray:
    """The bool array of a :func:`_key`."""
    return np.array([[c == "1" for c in row] for row in key.split("/")], bool)


def _offsets(fp, reflect: bool):
    """The footprint's ``(dy, dx)`` offsets: scipy's centre ``shape // 2`` for erosion,
    negated (the footprint reflected, scipy's dilation) with ``reflect``."""
    ys, xs = np.nonzero(np.asarray(fp))
    dy, dx = ys - fp.shape[0] // 2, xs - fp.shape[1] // 2
    return (-dy, -dx) if reflect else (dy, dx)


def _runs(x, lengths, axis: int, step: int, op):
    """``{L: r}`` for each run length ``L``: ``r[i] = op(x[i], x[i + step], ..., x[i + (L - 1)
    * step])`` along ``axis`` (``step``: positions a pixel), of length ``n - (L - 1) *
    step``. By doubling: the extrema of 1, 2, 4 ... consecutive pixels, each from the one
    before, then two overlapping pieces of the largest that fits."""
    n = x.shape[axis]
    pieces = {1: x}
    w = 1
    while 2 * w <= max(lengths):
        m = pieces[w]
        size = m.shape[axis] - w * step
        pieces[2 * w] = op(lax.slice_in_dim(m, 0, size, axis=axis), lax.slice_in_dim(m, w * step, w * step + size,
                                                                                      axis=axis))
        w *= 2
    out = {}
    for length in lengths:
        w = 1 << (length.bit_length() - 1)
        size = n - (length - 1) * step
        m = pieces[w]
        out[length] = m if w == length else op(lax.slice_in_dim(m, 0, size, axis=axis),
                                               lax.slice_in_dim(m, (length - w) * step, (length - w) * step + size,
                                                                axis=axis))
    return out


def _run_along(x, length: int, before: int, after: int, axis: int, op, mode: str, cval, flat=None, edges=None):
    """``op`` over the run of ``length`` pixels starting ``before`` pixels ahead of each
    pixel (``before + after == length - 1``) along ``axis`` (1: rows, 2: columns) of the
    ``(B, H, W, C)`` array ``x``, the outside given by scipy's ``mode``.

    The runs that lie inside the image are taken on ``x`` itself, and only the ``before``
    and ``after`` pixels at the two ends from strips gathered with their border: XLA fuses
    the pieces and their joining into one pass over the image, where an extended copy of
    the image would be one more pass (why: benchmarks/NOTES.md, "Morphology"). Along the
    columns W and C are one axis (a pixel is C values), and the inside runs are taken on
    the whole image as one flat row, as the median does (a run that crosses from one row
    into the next lands on a border pixel, which its strip replaces): ``flat``, ``(values,
    start)``, is that row when ``x``'s values begin at ``start`` of the 1-D array
    ``values`` (a misaligned NumPy image read in place, whose slices are taken from the
    view directly: XLA would copy ``x`` out of it first). ``edges``, :func:`_edge_columns`
    of ``x`` computed apart, is where the columns' strips are read instead of ``x``: when
    ``x`` is a pass's result, XLA would otherwise compute it twice, once in ``x``'s shape
    for the strips and once more as the flat row (benchmarks/NOTES.md, "Morphology")."""
    b, h, w, c = x.shape
    n = x.shape[axis]
    if n < length:  # no run lies inside: the whole axis from the extended image
        return _runs_of(pad_axis_strips(x, before, after, axis, mode, cval), length, axis, op)
    if axis == 2:
        values, start = (x.reshape(-1), 0) if flat is None else flat
        count = x.size - (length - 1) * c
        inside = _runs(values, [length], 0, c, op)[length][start:start + count]
        inside = jnp.pad(inside, (before * c, after * c)).reshape(x.shape)[:, :, before:w - after]
    else:
        inside = _runs_of(x, length, axis, op)
    band, m = (x, n) if edges is None else (edges, edges.shape[axis])  # the edges hold what the strips read
    parts = [_runs_of(extended_band(band, -before, length - 1, axis, mode, cval), length, axis, op) if before else None,
             inside,
             _runs_of(extended_band(band, m - length + 1, m + after, axis, mode, cval), length, axis, op) if after
             else None]
    parts = [p for p in parts if p is not None]
    return jnp.concatenate(parts, axis=axis) if len(parts) > 1 else parts[0]


def _edge_columns(x, m: int):
    """The first and the last ``m`` columns of the ``(B, H, W, C)`` array ``x`` side by side,
    ``(B, H, 2m, C)``: all that the columns' strips of a run of up to ``m`` pixels read, in
    every mode (``"wrap"`` reads the other end, which lies beyond this array's own end)."""
    return jnp.concatenate([x[:, :, :m], x[:, :, -m:]], axis=2)


def _runs_of(x, length: int, axis: int, op):
    """The runs of ``length`` pixels of the ``(B, H, W, C)`` array ``x`` along ``axis``
    (:func:`_runs`; along the columns, W and C as one axis)."""
    if axis == 1:
        return _runs(x, [length], 1, 1, op)[length]
    b, h, w, c = x.shape
    return _runs(x.reshape(b, h, w * c), [length], 2, c, op)[length].reshape(b, h, -1, c)


def _extremum(x, cval, *, fp, reflect, minimum, mode, flat=None, edges=None, edge_width=0):
    """Erosion (``minimum``) or dilation of the ``(B, H, W, C)`` array ``x`` over the
    footprint ``fp`` (a :func:`_key`), in ``x``'s dtype (``flat``, ``edges``: as for
    :func:`_run_along`). With ``edge_width``, ``(result, its edge columns or None)`` for
    the next pass (:func:`_edge_columns`)."""
    fp = _from_key(fp)
    op = jnp.minimum if minimum else jnp.maximum
    dy, dx = _offsets(fp, reflect)
    top, bottom, left, right = -dy.min(), dy.max(), -dx.min(), dx.max()
    b, h, w, c = x.shape

    def extended(v, before, after, axis):  # a negative side: the footprint is off its centre
        e = pad_axis_strips(v, max(before, 0), max(after, 0), axis, mode, cval)
        return lax.slice_in_dim(e, max(-before, 0), e.shape[axis] - max(-after, 0), axis=axis)

    if fp.all():  # a rectangle: a run along the columns, then along the rows
        # the columns' result is as large as the image: an eager call writes it into a kept
        # buffer, not fresh pages (imgproc.cpu.output_buffers.scratch; benchmarks/NOTES.md)
        cols = scratch(_run_along(x, fp.shape[1], left, right, 2, op, mode, cval, flat, edges))
        out = _run_along(cols, fp.shape[0], top, bottom, 1, op, mode, cval)
        if not edge_width:
            return out
        m = edge_width + fp.shape[1]  # the columns the result's edge columns read
        if 2 * m > w:
            return out, None
        # the result's edge columns, computed apart on the image's own (not taken from the
        # columns' pass, which XLA would then materialise in another form: NOTES)
        narrow = _run_along(_edge_columns(x, m), fp.shape[1], left, right, 2, op, mode, cval)
        narrow = _run_along(narrow, fp.shape[0], top, bottom, 1, op, mode, cval)
        return out, _edge_columns(narrow, edge_width)
    # any other footprint: the runs of each footprint row along the columns, on the image
    # extended once, then the rows (offset dy) combined with one comparison each
    spans = {}
    for y, xo in zip(dy.tolist(), dx.tolist()):
        spans.setdefault(y, []).append(xo)
    row_runs = []
    for y, xs in sorted(spans.items()):
        xs = sorted(xs)
        start = xs[0]
        for a, nxt in zip(xs, xs[1:] + [None]):
            if nxt != a + 1:
                row_runs.append((y, start, a - start + 1))
                start = nxt
    rows = extended(extended(x, top, bottom, 1), left, right, 2)
    rows = rows.reshape(b, rows.shape[1], -1)
    runs = _runs(rows, sorted({length for _, _, length in row_runs}), 2, c, op)
    y0, x0 = dy.min(), dx.min()
    out = None
    for y, start, length in row_runs:
        i0, j0 = y - y0, (start - x0) * c
        piece = runs[length][:, i0:i0 + h, j0:j0 + w * c]
        out = piece if out is None else op(out, piece)
    out = out.reshape(b, h, w, c)
    return (out, None) if edge_width else out


def _cval(cval, dtype):
    """``cval`` in ``dtype``: truncated as scipy's cast, and clipped to an integer dtype's
    range where scipy's cast wraps (uint8 -5: 0 here, 251 in scipy; docs/guide.md)."""
    v = jnp.asarray(cval, jnp.float32)
    if jnp.issubdtype(dtype, jnp.integer):
        info = jnp.iinfo(dtype)
        v = jnp.trunc(jnp.clip(v, info.min, info.max))
    return v.astype(dtype)


def _difference(a, b):
    """``a - b`` in their dtype; integers saturate at the dtype's range (scipy wraps)."""
    if jnp.issubdtype(a.dtype, jnp.integer):
        info = jnp.iinfo(a.dtype)
        return jnp.clip(a.astype(jnp.int32) - b.astype(jnp.int32), info.min, info.max).astype(a.dtype)
    return a - b


# each grey op as passes (minimum?, reflected?) and how the result is formed from them
def _grey_body(x, cval, *, name, fp, mode, flat=None):
    """The grey op ``name`` of the ``(B, H, W, C)`` array ``x``; ``flat``: ``x``'s values in
    a flat view, for the passes that read ``x`` (:func:`_run_along`)."""
    def ero(v, flat=None, edges=None, edge_width=0):
        return _extremum(v, cval, fp=fp, reflect=False, minimum=True, mode=mode, flat=flat, edges=edges,
                         edge_width=edge_width)

    def dil(v, flat=None, edges=None, edge_width=0):
        return _extremum(v, cval, fp=fp, reflect=True, minimum=False, mode=mode, flat=flat, edges=edges,
                         edge_width=edge_width)

    def then(second, first):  # second(first(x)), the first pass's edge columns computed apart
        out, edges = first(x, flat, edge_width=_from_key(fp).shape[1])
        return second(out, edges=edges)

    if name == "erosion":
        return ero(x, flat)
    if name == "dilation":
        return dil(x, flat)
    if name == "opening":
        return then(dil, ero)
    if name == "closing":
        return then(ero, dil)
    if name == "white_tophat":
        return _difference(x, then(dil, ero))
    if name == "black_tophat":
        return _difference(then(ero, dil), x)
    return _difference(dil(x, flat), ero(x, flat))  # morphological_gradient


def _grey_program(image, cval, *, name, fp, mode, layout, view=None):
    """The grey op of ``image``, or of the image in the flat view ``image`` (``view``, as
    for :func:`imgproc.cpu.output_buffers.from_flat`: a misaligned NumPy image read in
    place), whose channel-last values the first pass reads from the view itself."""
    x = to_bhwc(from_flat(image, view), layout)
    flat = (image, view[0]) if view is not None and layout in ("HW", "HWC", "NHWC") else None
    shape = image.shape if view is None else view[1]
    return from_bhwc(_grey_body(x, _cval(cval, image.dtype), name=name, fp=fp, mode=mode, flat=flat), shape)


# a NumPy image is read in place and the result written into a dropped earlier result's
# buffer, as the filters' programs (imgproc.cpu.output_buffers)
_grey = IntoBuffer(_grey_program, reads_flat=True, static_argnames=("name", "fp", "mode", "layout"))


def _grey_op(name, image, size, footprint, mode, cval, layout):
    fp = footprint_array(size, footprint)
    image, layout = check_image(image, layout, read_in_place=True)  # for the IntoBuffer program
    mode = check_mode(mode)
    check_number("cval", cval)
    # a concrete cval as a NumPy scalar: jnp.asarray of a Python float took 0.15 ms a call
    return _grey(image, cval if is_traced(cval) else np.float32(cval), name=name, fp=_key(fp), mode=mode,
                 layout=layout)


@callers_type
def erosion(image, *, size=None, footprint=None, mode="reflect", cval=0.0, layout=None):
    """Grey erosion: the minimum over the footprint, per channel.

    Matches ``scipy.ndimage.grey_erosion(plane, size=size, footprint=footprint, mode=mode,
    cval=cval)`` on each 2-D channel, bit for bit in every dtype but float64 (computed in
    float32; the module docstring: footprints, how it runs, dtypes). ``cv2.erode(img, np.ones((k, k)), borderType=
    cv2.BORDER_REPLICATE)`` is ``mode="nearest"``.

    Args:
        image: HW, HWC, NHWC (or CHW/NCHW with ``layout``); uint8, uint16, float16,
            bfloat16, float32 or float64, NumPy, list or JAX.
        size: a rectangle's side or ``(height, width)``, or a named footprint's side.
        footprint: ``"square"``, ``"disk"``, ``"cross"`` or a 2-D bool array (static);
            one of ``size`` and ``footprint`` must be given.
        mode: scipy.ndimage's boundary modes (``"reflect"``, the default, ``"mirror"``,
            ``"nearest"``, ``"wrap"``, ``"constant"``; ``grid-*`` aliases).
        cval: the outside for ``mode="constant"`` (traced; an integer image's is clipped
            to its range and truncated).
        layout: as for :func:`imgproc.correlate`.

    Returns:
        The image's shape and dtype, the caller's array type.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((5, 7), np.uint8); x[1:4, 1:6] = 9  # a 3x5 block
        >>> imgproc.erosion(x, size=3)[2].tolist()  # a 3x3 square eats one pixel off each side
        [0, 0, 9, 9, 9, 0, 0]
        >>> int(imgproc.erosion(x, size=3).sum() // 9)
        3
    """
    return _grey_op("erosion", image, size, footprint, mode, cval, layout)


@callers_type
def dilation(image, *, size=None, footprint=None, mode="reflect", cval=0.0, layout=None):
    """Grey dilation: the maximum over the footprint reflected, per channel.

    Matches ``scipy.ndimage.grey_dilation(plane, size=size, footprint=footprint, mode=mode,
    cval=cval)`` on each 2-D channel, bit for bit. Arguments as for :func:`erosion`.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((5, 5), np.uint8); x[2, 2] = 7
        >>> imgproc.dilation(x, footprint="cross")[1:4, 1:4].tolist()
        [[0, 7, 0], [7, 7, 7], [0, 7, 0]]
    """
    return _grey_op("dilation", image, size, footprint, mode, cval, layout)


@callers_type
def opening(image, *, size=None, footprint=None, mode="reflect", cval=0.0, layout=None):
    """Grey opening, ``dilation(erosion(x))``: removes bright details smaller than the
    footprint. ``scipy.ndimage.grey_opening`` per channel, bit for bit; arguments as for
    :func:`erosion`.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.full((6, 6), 10, np.uint8); x[2, 3] = 200  # one bright speck
        >>> int(imgproc.opening(x, size=3).max())
        10
    """
    return _grey_op("opening", image, size, footprint, mode, cval, layout)


@callers_type
def closing(image, *, size=None, footprint=None, mode="reflect", cval=0.0, layout=None):
    """Grey closing, ``erosion(dilation(x))``: fills dark details smaller than the
    footprint. ``scipy.ndimage.grey_closing`` per channel, bit for bit; arguments as for
    :func:`erosion`.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.full((6, 6), 100, np.uint8); x[3, 2] = 0  # one dark speck
        >>> int(imgproc.closing(x, size=3).min())
        100
    """
    return _grey_op("closing", image, size, footprint, mode, cval, layout)


@callers_type
def white_tophat(image, *, size=None, footprint=None, mode="reflect", cval=0.0, layout=None):
    """White top-hat, ``x - opening(x)``: the bright details smaller than the footprint.
    ``scipy.ndimage.white_tophat`` per channel, bit for bit (an integer difference
    saturates where scipy's would wrap: the module docstring); arguments as for
    :func:`erosion`.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.full((6, 6), 10, np.uint8); x[2, 3] = 200
        >>> int(imgproc.white_tophat(x, size=3)[2, 3])
        190
    """
    return _grey_op("white_tophat", image, size, footprint, mode, cval, layout)


@callers_type
def black_tophat(image, *, size=None, footprint=None, mode="reflect", cval=0.0, layout=None):
    """Black top-hat, ``closing(x) - x``: the dark details smaller than the footprint.
    ``scipy.ndimage.black_tophat`` per channel, bit for bit (saturating, see
    :func:`white_tophat`); arguments as for :func:`erosion`.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.full((6, 6), 100, np.uint8); x[3, 2] = 30
        >>> int(imgproc.black_tophat(x, size=3)[3, 2])
        70
    """
    return _grey_op("black_tophat", image, size, footprint, mode, cval, layout)


@callers_type
def morphological_gradient(image, *, size=None, footprint=None, mode="reflect", cval=0.0, layout=None):
    """Morphological gradient, ``dilation(x) - erosion(x)``: the local range.
    ``scipy.ndimage.morphological_gradient`` per channel, bit for bit (an integer
    difference saturates at 0 where scipy's would wrap, which a footprint without its
    centre allows: the module docstring); arguments as for :func:`erosion`.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((4, 6), np.uint8); x[:, 3:] = 50  # a step
        >>> imgproc.morphological_gradient(x, size=3)[1].tolist()
        [0, 0, 50, 50, 0, 0]
    """
    return _grey_op("morphological_gradient", image, size, footprint, mode, cval, layout)


# --------------------------------------------------------------------------- binary

# scipy's default structure for the binary ops: generate_binary_structure(2, 1)
CROSS = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], bool)


def _binary_body(x, *, name, fp, border, iterations):
    ero = functools.partial(_extremum, cval=border, fp=fp, reflect=False, minimum=True, mode="constant")
    dil = functools.partial(_extremum, cval=border, fp=fp, reflect=True, minimum=False, mode="constant")

    def repeat(f, v):
        for _ in range(iterations):
            v = f(v)
        return v

    if name == "binary_erosion":
        return repeat(ero, x)
    if name == "binary_dilation":
        return repeat(dil, x)
    if name == "binary_opening":
        return repeat(dil, repeat(ero, x))
    return repeat(ero, repeat(dil, x))  # binary_closing


@functools.partial(jax.jit, static_argnames=("name", "fp", "border", "iterations", "layout"))
def _binary(image, on, *, name, fp, border, iterations, layout):
    x = to_bhwc(image != 0, layout)
    y = from_bhwc(_binary_body(x, name=name, fp=fp, border=border, iterations=iterations), image.shape)
    if image.dtype == jnp.bool_:
        return y
    return jnp.where(y, on.astype(image.dtype), jnp.zeros((), image.dtype))


def _binary_op(name, image, size, footprint, border_value, iterations, max_value, layout):
    fp = footprint_array(size, footprint, default=CROSS)
    border = bool(check_choice("border_value", border_value, (0, 1, False, True)))
    iterations = check_int("iterations", iterations, low=1, high=1 << 16)
    if not hasattr(image, "dtype") or not hasattr(image, "shape"):
        image = np.asarray(image)
    if image.dtype == np.bool_:
        layout = check_layout(layout, image.ndim, image.shape)
        if any(n == 0 for n in image.shape):
            raise ValueError(f"image must not be empty; got shape {tuple(image.shape)}")
    else:
        image, layout = check_image(image, layout)
    on = resolve_max(max_value, image.dtype)
    check_number("max_value", on, low=0, low_open=True)
    return _binary(jnp.asarray(image), jnp.asarray(on, jnp.float32), name=name, fp=_key(fp), border=border,
                   iterations=iterations, layout=layout)


_BINARY_DOC = """Binary {what} of each channel: ``scipy.ndimage.{name}(plane != 0, structure=footprint,
    iterations=iterations, border_value=border_value)``, exactly.

    Args:
        image: HW, HWC, NHWC (or CHW/NCHW with ``layout``): bool (a bool result), or uint8,
            uint16, float16, bfloat16, float32, float64 (set where nonzero; the result is
            ``max_value`` where set, 0 elsewhere, in the image's dtype).
        size, footprint: the structuring element as for :func:`erosion`; neither: scipy's
            3×3 cross.
        border_value: 0 or 1, the outside (static).
        iterations: how many times the op is repeated ({repeat}; static).
        max_value: the value of a set pixel for non-bool images (None: 255 for uint8,
            65535 for uint16, 1 for floats).
        layout: as for :func:`imgproc.correlate`.

    Not differentiable: the result is a set of pixels (two levels), piecewise constant in
    the image (its gradient is 0 almost everywhere).
"""


@callers_type
def binary_erosion(image, *, size=None, footprint=None, border_value=0, iterations=1, max_value=None, layout=None):
    return _binary_op("binary_erosion", image, size, footprint, border_value, iterations, max_value, layout)


@callers_type
def binary_dilation(image, *, size=None, footprint=None, border_value=0, iterations=1, max_value=None, layout=None):
    return _binary_op("binary_dilation", image, size, footprint, border_value, iterations, max_value, layout)


@callers_type
def binary_opening(image, *, size=None, footprint=None, border_value=0, iterations=1, max_value=None, layout=None):
    return _binary_op("binary_opening", image, size, footprint, border_value, iterations, max_value, layout)


@callers_type
def binary_closing(image, *, size=None, footprint=None, border_value=0, iterations=1, max_value=None, layout=None):
    return _binary_op("binary_closing", image, size, footprint, border_value, iterations, max_value, layout)


binary_erosion.__doc__ = _BINARY_DOC.format(what="erosion", name="binary_erosion", repeat="erosions") + """
    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((5, 5), bool); x[1:4, 1:4] = True
        >>> imgproc.binary_erosion(x).astype(int)[1:4, 1:4].tolist()  # the cross keeps the centre
        [[0, 0, 0], [0, 1, 0], [0, 0, 0]]
    """
binary_dilation.__doc__ = _BINARY_DOC.format(what="dilation", name="binary_dilation", repeat="dilations") + """
    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((3, 5), np.uint8); x[1, 2] = 1
        >>> imgproc.binary_dilation(x, size=(1, 3))[1].tolist()  # uint8 in: 255 where set
        [0, 255, 255, 255, 0]
    """
binary_opening.__doc__ = _BINARY_DOC.format(what="opening", name="binary_opening",
                                            repeat="erosions, then as many dilations") + """
    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((7, 7), bool); x[1:6, 1:6] = True; x[0, 0] = True  # a square and a speck
        >>> int(imgproc.binary_opening(x, size=3).sum()), bool(imgproc.binary_opening(x, size=3)[0, 0])
        (25, False)
    """
binary_closing.__doc__ = _BINARY_DOC.format(what="closing", name="binary_closing",
                                            repeat="dilations, then as many erosions") + """
    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((7, 7), bool); x[1:6, 1:6] = True; x[3, 3] = False  # a hole
        >>> bool(imgproc.binary_closing(x, size=3)[3, 3])
        True
    """


def _footprint_reach(options, passes=1):
    fp = footprint_array(options.get("size"), options.get("footprint"), default=CROSS)
    return passes * (max(fp.shape) // 2)


MORPHOLOGY_CHECKS = {**MODE_CHECK, "footprint": lambda f: footprint_array(3 if isinstance(f, str) else None, f)}

# One pass from the same extended image (erosion, dilation, their difference) has a reach
# (size buckets); a composite op extends the result of its first pass again, which a
# bucket's refill cannot reproduce in every mode, so it has none (runs at its exact size).
OPS = (
    OpInfo("erosion", erosion, radius=_footprint_reach, checks=MORPHOLOGY_CHECKS),
    OpInfo("dilation", dilation, radius=_footprint_reach, checks=MORPHOLOGY_CHECKS),
    OpInfo("morphological_gradient", morphological_gradient, radius=_footprint_reach, checks=MORPHOLOGY_CHECKS),
    OpInfo("opening", opening, checks=MORPHOLOGY_CHECKS),
    OpInfo("closing", closing, checks=MORPHOLOGY_CHECKS),
    OpInfo("white_tophat", white_tophat, checks=MORPHOLOGY_CHECKS),
    OpInfo("black_tophat", black_tophat, checks=MORPHOLOGY_CHECKS),
    OpInfo("binary_erosion", binary_erosion, checks={"footprint": MORPHOLOGY_CHECKS["footprint"]},
           not_differentiable=NOT_DIFFERENTIABLE["binary"]),
    OpInfo("binary_dilation", binary_dilation, checks={"footprint": MORPHOLOGY_CHECKS["footprint"]},
           not_differentiable=NOT_DIFFERENTIABLE["binary"]),
    OpInfo("binary_opening", binary_opening, checks={"footprint": MORPHOLOGY_CHECKS["footprint"]},
           not_differentiable=NOT_DIFFERENTIABLE["binary"]),
    OpInfo("binary_closing", binary_closing, checks={"footprint": MORPHOLOGY_CHECKS["footprint"]},
           not_differentiable=NOT_DIFFERENTIABLE["binary"]),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
