"""Otsu's threshold with scikit-image's definition (:func:`threshold_otsu`)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from imgproc.core.array_type import callers_type
from imgproc.core.arrays import to_nhwc
from imgproc.core.images import check_image
from imgproc.core.validate import check_int

__all__ = ["threshold_otsu"]


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


@functools.partial(jax.jit, static_argnames=("layout", "nbins"))
def _threshold_otsu(image, *, layout, nbins):
    x = to_nhwc(image, layout)
    flat = x.reshape(x.shape[0], -1)
    integer = jnp.issubdtype(image.dtype, jnp.integer)

    def one(v):
        lo, hi = jnp.min(v), jnp.max(v)
        if integer:  # one bin per integer value (skimage's bincount histogram)
            levels = jnp.iinfo(image.dtype).max + 1
            counts = jnp.zeros(levels, jnp.float32).at[v.astype(jnp.int32)].add(1.0)
            centers = jnp.arange(levels, dtype=jnp.float32)
        else:  # np.histogram(v, nbins, range=(lo, hi)): the maximum in the last bin
            f = v.astype(jnp.float32)
            lo32, hi32 = lo.astype(jnp.float32), hi.astype(jnp.float32)
            width = (hi32 - lo32) / nbins
            index = jnp.clip(jnp.floor((f - lo32) / jnp.where(width > 0, width, 1.0)), 0, nbins - 1).astype(jnp.int32)
            counts = jnp.zeros(nbins, jnp.float32).at[index].add(1.0)
            edges = lo32 + width * jnp.arange(nbins + 1, dtype=jnp.float32)
            centers = (edges[:-1] + edges[1:]) / 2
        return jnp.where(lo == hi, lo.astype(jnp.float32), _otsu(counts, centers))

    return jax.vmap(one)(flat)


@callers_type
def threshold_otsu(image, *, nbins=256, layout=None):
    """Otsu's threshold of each image: ``skimage.filters.threshold_otsu(image, nbins)``
    over all of one image's pixels and channels, per image in a batch.

    Integer images are binned one bin per value, as scikit-image does (``nbins`` unused),
    so the result equals scikit-image's; float images in ``nbins`` bins between their
    minimum and maximum (``np.histogram``), computed in float32: a value on a bin edge may
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
