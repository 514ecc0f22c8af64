"""Otsu's threshold with scikit-image's definition (:func:`threshold_otsu`), and the op that
binarises an image at it or at a given value (:func:`threshold`)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from imgproc.core.array_type import callers_type
from imgproc.core.arrays import from_nhwc, integer_bits, resolve_max, to_nhwc, to_output
from imgproc.core.eager import compiled_when_eager
from imgproc.core.images import check_image
from imgproc.core.registry import KEEPS_TARGETS, NOT_DIFFERENTIABLE, OpInfo, register_ops
from imgproc.core.validate import check_int, check_number, is_traced

__all__ = ["level_counts", "otsu_of_levels", "threshold", "threshold_otsu"]


def _otsu(counts, centers):
    """skimage's ``threshold_otsu`` from one histogram: the bin centre that maximises the
    between-class variance of the classes ``<= centre`` and above it (empty classes never
    win; the first maximum on ties, as ``np.argmax``)."""
    w1 = jnp.cumsum(counts)
    w2 = jnp.cumsum(counts[::-1])[::-1]
    s1 = jnp.cumsum(counts * centers)
    s2 = jnp.cumsum((counts * centers)[::-1])[::-1]
    m1 = s1 / jnp.maximum(w1, 1.0)
    m2 = s2 / jnp.maximum(w2, 1.0)
    variance = w1[:-1] * w2[1:] * (m1[:-1] - m2[1:]) ** 2
    variance = jnp.where((w1[:-1] > 0) & (w2[1:] > 0), variance, -1.0)
    # across a run of empty bins the variance is one value, exactly tied in skimage's
    # float64 sums; XLA's parallel prefix sums round it differently along the run, so
    # each bin takes the value at the last non-empty bin up to it (ties stay ties)
    index = jnp.arange(counts.shape[0] - 1)
    last = jax.lax.cummax(jnp.where(counts[:-1] > 0, index, 0))
    return centers[jnp.argmax(variance[last])]


def otsu_of_levels(counts) -> np.ndarray:
    """``skimage.filters.threshold_otsu`` of an integer image from its counts per level
    (NumPy, on the host), in scikit-image's own arithmetic: the histogram trimmed to the
    image's range, the counts as float32 with float32 cumulative sums, the class means in
    float64. Used for uint16 images, whose 65,536 levels' sums in float32 moved the
    threshold by a few levels (26600 against 26604 on sample_images/gradient_16bit.png);
    a uint8 image's 256 levels give scikit-image's threshold in float32 on the device.

    >>> otsu_of_levels(np.bincount([10, 12, 11, 200, 198, 11, 201, 12], minlength=65536)).item()
    12.0
    """
    counts = np.asarray(counts)
    present = np.flatnonzero(counts)
    low, high = present[0], present[-1]
    if low == high:  # one value: its own (scikit-image's rule)
        return np.float32(low)
    c = counts[low:high + 1].astype(np.float32)
    centers = np.arange(low, high + 1)
    w1, w2 = np.cumsum(c), np.cumsum(c[::-1])[::-1]
    m1 = np.cumsum(c * centers) / w1
    m2 = (np.cumsum((c * centers)[::-1]) / w2[::-1])[::-1]
    return np.float32(centers[np.argmax(w1[:-1] * w2[1:] * (m1[:-1] - m2[1:]) ** 2)])


# Histograms of up to this many levels count the values in pairs (:func:`level_counts`).
PAIR_MAX_LEVELS = 256


def level_counts(index, levels: int):
    """``np.bincount(index.ravel(), minlength=levels)`` as int32, exactly, for int32 ``index``
    in ``[0, levels)``.

    Up to :data:`PAIR_MAX_LEVELS` levels the values are counted in pairs: one scatter-add
    of ``index[2k] * levels + index[2k + 1]`` into a ``levels²`` table, whose row and column
    sums are the counts (an odd last value is added alone). Half the updates, and far
    fewer of them land on one bin one after another: on XLA:CPU a 4-megapixel uint8
    image's 256 counts took 13-15 ms in one scatter-add and 2.0-2.8 ms in pairs
    (benchmarks/NOTES.md, "Otsu's histogram, and the threshold op")."""
    flat = index.reshape(-1)
    if levels > PAIR_MAX_LEVELS or flat.shape[0] < 2:
        return jnp.zeros(levels, jnp.int32).at[flat].add(1)
    even = flat.shape[0] // 2 * 2
    pairs = flat[:even].reshape(-1, 2)
    table = jnp.zeros(levels * levels, jnp.int32).at[pairs[:, 0] * levels + pairs[:, 1]].add(1)
    table = table.reshape(levels, levels)
    counts = table.sum(0) + table.sum(1)
    return counts if even == flat.shape[0] else counts.at[flat[-1]].add(1)


@functools.partial(jax.jit, static_argnames=("layout", "nbins"))
def _threshold_otsu(image, *, layout, nbins):
    x = to_nhwc(image, layout)
    flat = x.reshape(x.shape[0], -1)
    integer = jnp.issubdtype(image.dtype, jnp.integer)

    def one(v):
        lo, hi = jnp.min(v), jnp.max(v)
        if integer:  # one bin per integer value (skimage's bincount histogram)
            levels = jnp.iinfo(image.dtype).max + 1
            counts = level_counts(v.astype(jnp.int32), levels)
            if levels > PAIR_MAX_LEVELS:  # float32 sums over 65,536 levels move it: skimage's own arithmetic
                return jax.pure_callback(otsu_of_levels, jax.ShapeDtypeStruct((), jnp.float32), counts,
                                         vmap_method="sequential")
            counts = counts.astype(jnp.float32)
            centers = jnp.arange(levels, dtype=jnp.float32)
        else:  # np.histogram(v, nbins, range=(lo, hi)): the maximum in the last bin
            f = v.astype(jnp.float32)
            lo32, hi32 = lo.astype(jnp.float32), hi.astype(jnp.float32)
            width = (hi32 - lo32) / nbins
            index = jnp.clip(jnp.floor((f - lo32) / jnp.where(width > 0, width, 1.0)), 0, nbins - 1).astype(jnp.int32)
            counts = level_counts(index, nbins).astype(jnp.float32)
            edges = lo32 + width * jnp.arange(nbins + 1, dtype=jnp.float32)
            centers = (edges[:-1] + edges[1:]) / 2
        return jnp.where(lo == hi, lo.astype(jnp.float32), _otsu(counts, centers))

    return jax.vmap(one)(flat)


@callers_type
def threshold_otsu(image, *, nbins=256, layout=None):
    """Otsu's threshold of each image: ``skimage.filters.threshold_otsu(image, nbins)``
    over all of one image's pixels and channels, per image in a batch.

    Integer images are binned one bin per value, as scikit-image does (``nbins`` unused),
    so the result equals scikit-image's (uint16's 65,536 levels: the counts go to the host
    for the last step, :func:`otsu_of_levels`, a callback inside ``jit`` too); float
    images in ``nbins`` bins between their minimum and maximum (``np.histogram``),
    computed in float32: a value on a bin edge may
    fall in the next bin, which can move the result by one bin. A constant image gives its
    value (scikit-image's rule). Pixels ``> threshold`` are the foreground.

    Not differentiable (and not a registered op: it returns a number, not an image): a
    histogram's best split, piecewise constant in the image (float images: moves with
    the minimum and maximum only).

    Args:
        image: HW, HWC, NHWC (or CHW/NCHW with ``layout``); any supported dtype.
        nbins: bins of a float image's histogram (static).
        layout: as for :func:`imgproc.correlate`.

    Returns:
        float32 in the image's units: a scalar for one image, ``(N,)`` for a batch.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.array([[10, 12, 11, 200], [198, 11, 201, 12]], np.uint8)
        >>> float(imgproc.threshold_otsu(x))
        12.0
        >>> imgproc.threshold_otsu(np.stack([x, x // 2])[..., None]).tolist()
        [12.0, 6.0]
    """
    nbins = check_int("nbins", nbins, low=2, high=1 << 20)
    image, layout = check_image(image, layout)
    out = _threshold_otsu(jnp.asarray(image), layout=layout, nbins=nbins)
    return out if layout in ("NHWC", "NCHW") else out[0]


def _check_nbins(nbins) -> int:
    return check_int("nbins", nbins, low=2, high=1 << 20)


def _check_levels(levels):
    if not isinstance(levels, (bool, np.bool_)):
        raise ValueError(f"levels must be True (a float image with max_value 255 or 65535 holds integer levels) or "
                         f"False (a float image's values: nbins bins between its minimum and maximum); got {levels!r}")


def _check_value(value):
    """A concrete ``value`` of :func:`threshold` as a float64 array (a number, or one per
    image), or None; else ValueError."""
    if value is None:
        return None
    try:
        values = np.asarray(value, np.float64)
    except (TypeError, ValueError):
        values = None
    if values is None or values.ndim > 1 or not np.all(np.isfinite(values)):
        raise ValueError(f"value must be a finite number, one per image, or None (Otsu's threshold); got {value!r}")
    return values


def _per_image(v, n: int):
    """A scalar, or one value per image (``(N,)``), as an array broadcasting over NHWC."""
    v = jnp.asarray(v, jnp.float32)
    return v.reshape(n, 1, 1, 1) if v.ndim == 1 else v


@callers_type
@compiled_when_eager
def threshold(image, *, value=None, nbins=256, max_value=None, levels=True, layout=None):
    """Binarise each image: ``max_value`` where a value is above the threshold, 0 elsewhere,
    in the image's dtype. OpenCV's ``cv2.threshold(image, value, max_value,
    cv2.THRESH_BINARY)``, exactly; with ``value=None`` each image's own
    :func:`threshold_otsu` (scikit-image's ``image > threshold_otsu(image)``, which on a
    one-channel uint8 image is OpenCV's ``THRESH_BINARY | THRESH_OTSU``). Each channel's
    values are compared; Otsu's threshold is taken over all of an image's channels.

    Not differentiable: a two-level result, piecewise constant in the image.

    Args:
        image: HW, HWC, NHWC (or CHW/NCHW with ``layout``); uint8, uint16, float16,
            bfloat16, float32 or float64.
        value: the threshold in the image's own units (a number, or one per image of a
            batch), or None: Otsu's, per image.
        nbins: bins of a float image's histogram for Otsu's threshold (static). Integer
            images use one bin per value, and so does a float image whose ``max_value`` is
            255 or 65535 (a uint8 or uint16 image in a pipeline's float32), rounded, unless
            ``levels`` is False.
        levels: whether such a float image holds an integer image's levels (True: it is
            rounded to them and thresholded as that integer image would be, Otsu's
            threshold one bin per level, so that a pipeline gives what the eager chain of
            its ops gives; False: its values as they are, Otsu's threshold by scikit-image's
            float rule, ``nbins`` bins between its minimum and maximum). A
            pipeline passes False to a threshold stage that follows a stage returning
            float32 in the image's units (a derivative filter: signed, unrounded values,
            which an eager ``threshold(imgproc.sobel(x))`` also bins as floats).
        max_value: the value of pixels above the threshold (None: 255 for uint8, 65535
            for uint16, 1 for floats; in a pipeline, the range it passes).
        layout: as for :func:`imgproc.correlate`.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.array([[10, 12, 11, 200], [198, 11, 201, 12]], np.uint8)
        >>> imgproc.threshold(x).tolist()  # Otsu's threshold is 12
        [[0, 0, 0, 255], [255, 0, 255, 0]]
        >>> imgproc.threshold(x, value=11, max_value=1).tolist()
        [[0, 1, 0, 1], [1, 0, 1, 1]]
    """
    nbins = _check_nbins(nbins)
    _check_levels(levels)
    image, layout = check_image(image, layout)
    on = resolve_max(max_value, image.dtype)
    check_number("max_value", on, low=0, low_open=True)
    x = to_nhwc(jnp.asarray(image), layout)
    n, dtype = x.shape[0], x.dtype
    bits = integer_bits(on) if np.ndim(on) == 0 and levels and not jnp.issubdtype(dtype, jnp.integer) else None
    if bits is not None:  # a float image of integer levels: thresholded as those levels (rounded)
        x = jnp.clip(jnp.round(x.astype(jnp.float32)), 0, float(on)).astype(f"uint{bits}")
    if value is None:
        t = _threshold_otsu(x, layout="NHWC", nbins=nbins).reshape(n, 1, 1, 1)
    else:
        if not is_traced(value):
            values = _check_value(value)
            if values.ndim == 1 and values.shape[0] != n:
                raise ValueError(f"value must give one number per image: {n} here; got {values.shape[0]}")
        t = _per_image(value, n)
    top = to_output(_per_image(on, n), dtype)
    if jnp.issubdtype(x.dtype, jnp.integer):  # x > t exactly when x > floor(t): compared as integers
        cut = jnp.clip(jnp.floor(t), -1, jnp.iinfo(x.dtype).max).astype(jnp.int32)
        out = jnp.where(x.astype(jnp.int32) > cut, top, jnp.zeros((), dtype))
    else:
        out = jnp.where(x.astype(jnp.float32) > t, top, jnp.zeros((), dtype))
    return from_nhwc(out, layout, image.shape)


OPS = (
    OpInfo("threshold", threshold, radius=lambda o: None if o.get("value") is None else 0,
           not_differentiable=NOT_DIFFERENTIABLE["binary"],
           checks={"value": _check_value, "nbins": _check_nbins, "levels": _check_levels}),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
