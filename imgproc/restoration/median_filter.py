"""The median filter and salt-and-pepper impulses: :func:`median` (a pruned sorting network
for small windows), :func:`impulse_fraction`, and the impulse detection and switching
median that ``denoise(method="auto")`` runs inside its program. Layouts, dtypes and
the value range (``max_value``, "the module docstring" below): see :mod:`imgproc.restoration`."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax

from imgproc.core.array_type import callers_type
from imgproc.core.arrays import resolve_max, slice_at, to_bhwc, to_nhwc
from imgproc.core.boundary import extended_band
from imgproc.core.registry import KEEPS_TARGETS, OpInfo, register_ops
from imgproc.core.validate import MODE_CHECK, check_odd
from imgproc.cpu import flat_argument, from_flat, in_loops, in_own_loop
from imgproc.restoration.common import per_image, prepare

__all__ = ["impulse_fraction", "median"]

# ----------------------------------------------------------------------------- median

def _batcher_pairs(n):
    """Batcher's odd-even merge sort comparators for ``n`` wires (a power of 2)."""
    pairs = []

    def merge(lo, hi, r):
        step = r * 2
        if step < hi - lo:
            merge(lo, hi, step)
            merge(lo + r, hi, step)
            pairs.extend((i, i + r) for i in range(lo + r, hi - r, step))
        else:
            pairs.append((lo, lo + r))

    def sort(lo, hi):
        if hi - lo >= 1:
            mid = lo + (hi - lo) // 2
            sort(lo, mid)
            sort(mid + 1, hi)
            merge(lo, hi, 1)

    sort(0, n - 1)
    return pairs


@functools.lru_cache(maxsize=None)
def median_network(n):
    """The comparators ``(i, j)`` (min to ``i``, max to ``j``) of a selection network whose
    wire ``n // 2`` ends holding the median of ``n`` values: Batcher's sort for the next
    power of 2, without the comparators that touch the padding (+inf) wires or that do not
    reach the median wire."""
    size = 1 << max(0, (n - 1).bit_length())
    pairs = [(i, j) for i, j in _batcher_pairs(size) if j < n]
    needed, kept = {n // 2}, []
    for i, j in reversed(pairs):
        if i in needed or j in needed:
            kept.append((i, j))
            needed |= {i, j}
    return tuple(reversed(kept))


# sizes up to this use the selection network; larger ones find the median one bit at a
# time (_median_by_bits), whose program does not grow with the bits and compiles in about a
# second where the 9x9 and 11x11 networks took 5 and 9 (benchmarks/NOTES.md, "Median")
_NETWORK_MAX_SIZE = 7


def _window_median(source, window, width, size, c):
    """The ``size``x``size`` median of an image's window values, ``(..., width)``.

    ``window(src, i, j, n)``: the ``n`` values (W and C merged) that window row ``i`` and
    column ``j`` reads for the first output, from ``src`` (``source`` or its tangent); the
    image shifted by ``i - size // 2`` rows and ``j - size // 2`` pixels, a shift by one
    pixel being a shift by ``c`` values. ``i`` and ``j`` are ints, or traced (the
    derivative's loop, :func:`_selection_tangent`).

    The value is found on the source without its derivative; the derivative is a
    selection's (:func:`_selected`): differentiating the comparisons that found it instead
    gave a program that took a minute to compile for a 5x5 window (benchmarks/NOTES.md,
    "Median")."""
    plain = lax.stop_gradient(source)
    row = width + 2 * (size // 2) * c  # a window row with its neighbours: each column is a slice of it
    value = _median_value(lambda i: window(plain, i, 0, row), size, c, width)
    return _selected(window, size, value, source)


def _median_value(shifted, size, c, width):
    """The median of :func:`_window_median`, ``width`` values wide, from ``shifted(i)``:
    window row ``i`` with the ``size // 2`` pixels either side, ``width + 2 * (size // 2) * c``
    values, of which each window column is a slice.

    3x3: each column of three is sorted once (shared by the three windows that contain
    it); the median is then ``med3(max of the minima, med3 of the middles, min of the
    maxima)`` (Paeth's rule), 18 min/max operations a pixel instead of the 24 comparators
    of the 9-input network. 5x5 and 7x7: the pruned network (:func:`median_network`);
    larger sizes one bit at a time (:func:`_median_by_bits`)."""
    if size > _NETWORK_MAX_SIZE:
        return _median_by_bits(shifted, size, c, width)
    rows = [shifted(i) for i in range(size)]

    def cols(v):
        return [v[..., j * c:j * c + width] for j in range(size)]

    if size == 3:
        a, b, c3 = rows
        lo, hi = jnp.minimum(a, b), jnp.maximum(a, b)
        mid = jnp.minimum(hi, c3)
        hi = jnp.maximum(hi, c3)
        lo, mid = jnp.minimum(lo, mid), jnp.maximum(lo, mid)

        def med3(u, v, t):
            return jnp.maximum(jnp.minimum(u, v), jnp.minimum(jnp.maximum(u, v), t))

        l0, l1, l2 = cols(lo)
        h0, h1, h2 = cols(hi)
        return med3(jnp.maximum(jnp.maximum(l0, l1), l2), med3(*cols(mid)), jnp.minimum(jnp.minimum(h0, h1), h2))
    vals = [v for row in rows for v in cols(row)]
    for i, j in median_network(size * size):
        vals[i], vals[j] = jnp.minimum(vals[i], vals[j]), jnp.maximum(vals[i], vals[j])
    return vals[(size * size) // 2]


def _order_keys(dtype):
    """``(key dtype, to_key, from_key)``: unsigned integers of ``dtype``'s width whose order
    is the values' order (floats: the sign bit flipped for positive values, every bit for
    negative ones; unsigned integers as they are)."""
    bits = 8 * jnp.dtype(dtype).itemsize
    unsigned = jnp.dtype(f"uint{bits}")
    if jnp.issubdtype(dtype, jnp.unsignedinteger):
        return unsigned, (lambda v: v), (lambda k: k)
    sign, ones = unsigned.type(1 << (bits - 1)), unsigned.type((1 << bits) - 1)

    def to_key(v):
        b = lax.bitcast_convert_type(v, unsigned)
        return b ^ jnp.where(b >= sign, ones, sign)

    def from_key(k):
        return lax.bitcast_convert_type(k ^ jnp.where(k >= sign, sign, ones), dtype)

    return unsigned, to_key, from_key


# the most window values one loop of _median_by_bits compares: a compare, a conversion and
# an add for each, so its loops fall off LLVM's cliff (imgproc.cpu.LOOP_MAX_READS) earlier
# (31x31 in loops of 248 values: 1.27 s; of 200 or fewer: 0.30 s; benchmarks/NOTES.md, "Median")
_COUNT_LOOP_MAX_READS = 200


def _median_by_bits(shifted, size, c, width):
    """The ``size``x``size`` median (as :func:`_window_median`) found one bit at a time, from
    the highest: the median is the largest value ``m`` with at most ``size * size // 2``
    values of the window below it, so each bit is set where the count of the window's
    values below the prefix with that bit set allows it. The bits are the steps of one
    ``fori_loop`` (compiled once), each reading the window's ``size * size`` shifted values
    once: ``8 * itemsize`` passes over the image, whatever the window
    (benchmarks/NOTES.md, "Median")."""
    first = shifted(0)
    key_dtype, to_key, from_key = _order_keys(first.dtype)
    keyed = lambda i: to_key(shifted(i))  # noqa: E731
    rank = size * size // 2
    count_dtype = jnp.int16 if size * size < 2 ** 15 else jnp.int32
    bits = 8 * key_dtype.itemsize
    loops = -(-size * size // _COUNT_LOOP_MAX_READS)  # each comparing as many of the window's rows
    group = -(-size // loops)

    def below(count, candidate, rows):
        """``count`` plus, for each value, how many of the window ``rows``' values lie below
        ``candidate``."""
        for i in rows:
            row = keyed(i)
            for j in range(size):
                less = (row[..., j * c:j * c + width] < candidate).astype(count_dtype)
                count = less if count is None else count + less
        return count

    def with_bit(step, prefix):
        candidate = prefix | jnp.left_shift(jnp.ones((), key_dtype), (bits - 1 - step).astype(key_dtype))
        groups = [range(start, min(start + group, size)) for start in range(0, size, group)]
        count = below(None, candidate, groups[0])
        # more than _COUNT_LOOP_MAX_READS: the other rows in loops of their own
        count = in_loops(lambda total, rows, cand: below(total, cand, rows), groups[1:], count, candidate)
        return jnp.where(count <= rank, candidate, prefix)

    prefix = lax.fori_loop(0, bits, with_bit, jnp.zeros(first.shape[:-1] + (width,), key_dtype))
    return from_key(prefix)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def _selected(window, size, median, source):
    """``median``, one of the window values (:func:`_window_median`'s ``window`` and ``size``
    on ``source``), with a selection's derivative: the window values equal to it share
    its tangent (the comparisons that found it have none). Nothing of it is computed
    unless the call is differentiated."""
    return median


@_selected.defjvp
def _selected_jvp(window, size, primals, tangents):
    median, source = primals
    return median, _selection_tangent(window, size, median, source, tangents[1])


def _selection_tangent(window, size, median, source, source_tangent):
    """The tangent of :func:`_selected`: the mean of the tangents of the window values equal
    to ``median``, summed over the window in a loop (the program does not grow with the
    window, nor does its transpose, a loop adding into the source's cotangent). Reverse
    mode recomputes each step's comparison (``jax.checkpoint``) instead of saving the
    ``size * size`` comparisons, each a residual of its own, that XLA fused the whole
    median network into (benchmarks/NOTES.md, "Median")."""
    width = median.shape[-1]

    @jax.checkpoint
    def step(k, carry):
        count, total = carry
        i, j = k // size, k % size
        equal = window(source, i, j, width) == median
        return count + equal.astype(median.dtype), total + jnp.where(equal, window(source_tangent, i, j, width), 0)

    zeros = jnp.zeros_like(median)
    count, total = lax.fori_loop(0, size * size, step, (zeros, jnp.zeros_like(zeros)))
    return total / count


def _median_of_extended(x, rows, cols, *, size, mode):
    """The median of the output rows and columns ``rows = (start, stop)``, ``cols = ...``
    of the ``(N, H, W, C)`` image ``x``, from just the part of its extension they read
    (:func:`imgproc.core.boundary.extended_band`); ``(N, stop - start, (cols' stop - start) * C)``."""
    r = size // 2
    bands = ((rows[0] - r, rows[1] + r, 1), (cols[0] - r, cols[1] + r, 2))
    if (rows[1] - rows[0]) * x.shape[2] > (cols[1] - cols[0]) * x.shape[1]:
        bands = bands[::-1]  # the narrower band first: the second gathers only from it
    band = x
    for start, stop, axis in bands:
        band = extended_band(band, start, stop, axis, mode)
    n, h, w, c = band.shape
    band = band.reshape(n, h, w * c)

    def window(src, i, j, length):
        return slice_at(src, (0, i, j * c), (n, h - 2 * r, length))

    return _window_median(band, window, (w - 2 * r) * c, size, c)


def _median_rows(x, *, size, mode, flat=None):
    """The median of the ``(N, H, W, C)`` image ``x`` as rows ``(N, H, W*C)``.

    W and C are merged into one axis: a shift by one pixel is a shift by C values, and
    XLA's loops run over long rows, which vectorise, instead of an innermost axis of C
    (why: benchmarks/NOTES.md, "Median"). The rows that the window does not take past the
    image's top or bottom are computed from the flat image itself, without a padded copy:
    a shift by one row is a shift by W*C values, so each window row is one slice. There
    the pixels of the first and last ``r`` columns read the ends of the rows next to
    theirs; they, and the top and bottom rows, are computed again from small bands of the
    extended image and written over (:func:`_median_of_extended`).

    ``flat``: ``(values, start)``, where ``x``'s values begin in the 2-D array ``values``
    (a flat view read in place: the slices are taken from it directly, since XLA would
    copy ``x`` if its slice of the view had readers of its own)."""
    r = size // 2
    n, h, w, c = x.shape
    if h < 2 * r + 3 or w < 2 * r + 1:  # no flat interior to speak of: pad the whole image
        return _median_of_extended(x, (0, h), (0, w), size=size, mode=mode)
    wc = w * c
    values, start = (x.reshape(n, h * wc), 0) if flat is None else flat
    start = start + (r + 1) * wc - r * c

    def window(src, i, j, length):
        return slice_at(src, (0, start + (i - r) * wc + j * c), (n, length))

    interior = _window_median(values, window, (h - 2 * r - 2) * wc, size, c)
    rows = jnp.concatenate([_median_of_extended(x, (0, r + 1), (0, w), size=size, mode=mode),
                            interior.reshape(n, h - 2 * r - 2, wc),
                            _median_of_extended(x, (h - r - 1, h), (0, w), size=size, mode=mode)], axis=1)
    rows = lax.dynamic_update_slice(rows, _median_of_extended(x, (0, h), (0, r), size=size, mode=mode), (0, 0, 0))
    return lax.dynamic_update_slice(rows, _median_of_extended(x, (0, h), (w - r, w), size=size, mode=mode),
                                    (0, 0, (w - r) * c))


def median_nhwc(x, *, size, mode):
    rows = in_own_loop(functools.partial(_median_rows, size=size, mode=mode), x)
    return rows.reshape(x.shape)


@functools.partial(jax.jit, static_argnames=("view", "size", "mode", "layout"))
def _median(image, *, view, size, mode, layout):
    """The median of ``image``, or of the image in the flat view ``image`` (``view``, as
    for :func:`imgproc.cpu.output_buffers.from_flat`: a misaligned NumPy image read in
    place). The conditional of :func:`in_own_loop` takes the argument itself: given a slice
    of it, XLA would copy the slice first."""
    shape = image.shape if view is None else view[1]

    def rows(arg):  # exact in any dtype: the median is one of the values
        x = to_bhwc(from_flat(arg, view), layout)
        one_image = view is not None and layout in ("HW", "HWC", "NHWC") and x.shape[0] == 1
        flat = (arg[None], view[0]) if one_image else None
        return _median_rows(x, size=size, mode=mode, flat=flat)

    return in_own_loop(rows, image).reshape(shape)


@callers_type
def median(image, *, size=3, mode="reflect", layout=None):
    """Median over a ``size``×``size`` window, per channel.

    Matches ``scipy.ndimage.median_filter(plane, size, mode=mode)`` on each channel (exactly:
    the median is one of the values), hence ``cv2.medianBlur(img, size)`` for uint8 images
    with ``mode="nearest"`` (OpenCV replicates the edge pixel) (and away from the border for
    any mode). Sizes up to 7 run a selection network (Batcher's odd-even merge sort pruned
    to the median wire) over shifted copies, in the input dtype; larger odd sizes find the
    median one bit at a time (a pass over the window for each bit of the dtype: 8 for
    uint8, 32 for float32). The derivative is a selection's: each output's tangent is the
    window value's it selected (shared equally among equal values at a tie).

    Args:
        image: HW, HWC, NHWC (or CHW/NCHW with ``layout``); any supported dtype.
        size: odd window side >= 1 (static). ``size=1`` is the identity.
        mode: boundary mode, scipy.ndimage's names (``"constant"`` fills 0).
        layout: as for :func:`imgproc.correlate`.

    Returns:
        The filtered image, same shape and dtype.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((5, 5), np.uint8); x[2, 2] = 255  # one impulse
        >>> int(np.asarray(imgproc.median(x)).max())
        0
    """
    size = check_odd("size", size)
    image, layout = prepare(image, layout, mode, read_in_place=True)  # _median reads it through its flat view
    if size == 1:
        return jnp.asarray(image)
    argument, view = flat_argument(image)
    return _median(argument, view=view, size=size, mode=mode, layout=layout)


# ----------------------------------------------------------------------------- impulse noise

# A sample is an impulse when it sits within IMPULSE_LEVEL of the range's ends (0 or
# max_value) and differs from its 3x3 median by more than IMPULSE_JUMP (both fractions of
# max_value); an image has impulse noise when more than IMPULSE_MIN_FRACTION of its samples
# are impulses.
IMPULSE_LEVEL = 0.02
IMPULSE_JUMP = 0.25
IMPULSE_MIN_FRACTION = 0.005


def impulse_mask(x, med, max_value):
    extreme = (x <= IMPULSE_LEVEL * max_value) | (x >= (1.0 - IMPULSE_LEVEL) * max_value)
    return extreme & (jnp.abs(x - med) > IMPULSE_JUMP * max_value)


def impulse_share(mask, samples, axis=None):
    """The share of ``mask``'s true elements (over ``axis``) among ``samples``, in a mean's
    dtype (float32; float64 with x64): counted in integers (exact past 2**24, where a
    float32 sum is not) and divided at run time. XLA turns a division by a constant into
    a product with its reciprocal, one unit in the last place away, and a canvas's count
    of samples is traced (:func:`imgproc.restoration.auto._decide`): both divide alike."""
    real = jnp.result_type(float)
    count = jnp.sum(mask, axis=axis, dtype=jnp.int32).astype(real)
    return count / lax.optimization_barrier(jnp.asarray(samples).astype(real))


@functools.partial(jax.jit, static_argnames=("layout",))
def _impulse_fraction(image, max_value, *, layout):
    x = to_nhwc(image.astype(jnp.float32), layout)
    med = median_nhwc(x, size=3, mode="reflect")
    return impulse_share(impulse_mask(x, med, max_value), x[0].size, axis=(1, 2, 3))


@callers_type
def impulse_fraction(image, *, max_value=None, layout=None):
    """Fraction of samples (pixels × channels) that look like salt-and-pepper impulses.

    Rule: a sample is an impulse when it lies within 2 % of the value range's ends (``<=
    0.02 * max_value`` or ``>= 0.98 * max_value``) *and* differs from the median of its
    3×3 neighbourhood (same channel, reflected border) by more than ``0.25 * max_value``.
    Saturated areas of a clean photo agree with their median and do not count.
    :func:`denoise` treats an image as having impulse noise when this fraction exceeds
    ``IMPULSE_MIN_FRACTION`` (0.5 %) and, with those samples replaced by their 3×3 median,
    the estimated Gaussian noise is below ``IMPULSE_MAX_RESIDUAL * max_value`` (4 %;
    strongly clipped Gaussian noise also has extreme samples).

    Args:
        image: HW, HWC, NHWC (or CHW/NCHW with ``layout``); any supported dtype.
        max_value: white; ``None``: the dtype's range (see the module docstring).
        layout: as for :func:`imgproc.correlate`.

    Returns:
        Float32 JAX scalar in [0, 1] per image (``(N,)`` for a batch).

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.full((10, 10), 128, np.uint8); x[::5, ::5] = 255
        >>> round(float(imgproc.impulse_fraction(x)), 4)
        0.04
    """
    image, layout = prepare(image, layout)
    max_value = resolve_max(max_value, image.dtype)
    return per_image(_impulse_fraction(image, jnp.asarray(max_value, jnp.float32), layout=layout), layout)


# ... and when, with the impulses replaced by their 3x3 median, the estimated noise sigma
# is below IMPULSE_MAX_RESIDUAL * max_value: strong Gaussian noise clipped at 0 and white
# also makes extreme samples that differ from their median (sigma 50 on 0..255: 2-3 % of
# the samples), but the rest of the image stays noisy (residual sigma about 41 there,
# against about 3 for 5 % salt-and-pepper; benchmarks/denoise_quality.py images).
IMPULSE_MAX_RESIDUAL = 0.04


OPS = (
    OpInfo("median", median, radius=lambda o: int(o.get("size", 3)) // 2, checks=MODE_CHECK),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
