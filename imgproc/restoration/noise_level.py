"""The noise level of an image: skimage's ``estimate_sigma`` (wavelet median absolute
deviation of the finest diagonal db2 detail band): the public :func:`estimate_sigma`, and
the traced core (:func:`sigma_nhwc`) that ``nl_means``, ``denoise(method="auto")`` and
:mod:`imgproc.restoration.block_matching` compute inside their programs."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from imgproc.core.array_type import callers_type
from imgproc.core.arrays import to_nhwc
from imgproc.core.boundary import pad_axis_strips
from imgproc.restoration.common import per_image, prepare

__all__ = ["estimate_sigma", "order_statistics", "sigma_nhwc", "sigma_planes"]

# PyWavelets' db2 decomposition high-pass filter (pywt.Wavelet("db2").dec_hi)
_DB2_HI = np.array([-0.48296291314469025, 0.836516303737469, -0.22414386804185735, -0.12940952255092145], np.float32)
_NORM_PPF_075 = 0.6744897501960817  # scipy.stats.norm.ppf(0.75)


def _dwt_hi(x, axis, offset=None):
    """PyWavelets' ``dwt`` detail coefficients along ``axis`` (mode "symmetric", db2):
    length ``(n + 3) // 2``; ``y[k] = sum_j h[j] x_ext[2k + 1 - j]``.

    ``offset``: ``x`` is a canvas whose image starts at that index along ``axis``, its
    symmetric extension already written around it (at least 3 values a side); the
    coefficients are then those of every ``k`` the canvas holds, the image's first
    ``(n + 3) // 2`` of them equal to the image's own, value for value."""
    if offset is None:
        xe, first = pad_axis_strips(x, 3, 3, axis, "reflect"), 3  # pywt "symmetric" is scipy's "reflect"
        k = (x.shape[axis] + 3) // 2
    else:
        xe, first = x, offset
        k = (x.shape[axis] - offset - 2) // 2 + 1  # every k whose taps lie in the canvas
    out = 0.0
    for j, hj in enumerate(_DB2_HI):
        start = first + 1 - j  # x_ext index 2k + 1 - j
        sl = [slice(None)] * x.ndim
        sl[axis] = slice(start, start + 2 * k - 1, 2)
        out = out + float(hj) * xe[tuple(sl)]
    return out


# (shift, width) of the digits a radix selection reads, most significant first: together
# the 31 bits below the sign of a float32
_DIGITS = ((20, 11), (10, 10), (0, 10))


def _histogram(digits, nbins: int):
    """Counts of each digit ``0 .. nbins - 1`` in each row of (P, M) ``digits`` (the digit
    ``nbins`` is not counted): one scatter-add."""
    p = digits.shape[0]
    index = digits + jnp.arange(p, dtype=jnp.int32)[:, None] * (nbins + 1)
    return jnp.zeros(p * (nbins + 1), jnp.int32).at[index.reshape(-1)].add(1).reshape(p, nbins + 1)[:, :nbins]


def order_statistics(a, ranks):
    """The values of 0-based ascending ``ranks`` (P, R) int32 in each row of ``a`` (P, M),
    non-negative finite float32: ``jnp.sort(a, axis=1)`` at ``ranks``, exactly.

    A radix selection: for such floats the order of the values is the order of their bit
    patterns as integers, so the sought value's bits are found 11, 10 and 10 at a time,
    each from a histogram of that digit over the values that share the digits found so
    far. Three scatter-adds over ``a`` per rank instead of a sort, whose comparisons cost
    much more on CPU (why: benchmarks/NOTES.md, "Noise estimate").

    >>> import numpy as np
    >>> a = np.array([[3.0, 0.0, 2.5, 7.0, 2.5]], np.float32)
    >>> np.asarray(order_statistics(a, np.array([[0, 2, 3, 4]])))
    array([[0. , 2.5, 3. , 7. ]], dtype=float32)
    """
    # materialised once: XLA would otherwise compute ``a`` again in each digit's loop
    bits = lax.optimization_barrier(lax.bitcast_convert_type(jnp.asarray(a, jnp.float32), jnp.int32))
    ranks = jnp.asarray(ranks, jnp.int32)
    found = []
    for r in range(ranks.shape[1]):
        k = ranks[:, r]  # the rank among the values that share the digits found so far
        prefix = jnp.zeros_like(k)  # those digits
        for level, (shift, width) in enumerate(_DIGITS):
            nbins = 1 << width
            digits = (bits >> shift) & (nbins - 1)
            if level:
                digits = jnp.where((bits >> (shift + width)) == prefix[:, None], digits, nbins)
            below = jnp.cumsum(_histogram(digits, nbins), axis=1)  # values with a digit <= d
            d = jnp.sum(below <= k[:, None], axis=1)
            k = k - jnp.where(d > 0, jnp.take_along_axis(below, jnp.maximum(d - 1, 0)[:, None], 1)[:, 0], 0)
            prefix = (prefix << width) | d
        found.append(prefix)
    # int32 bits back to float32 (with x64 on, the sums above are int64, and a 64-bit
    # bitcast to float32 would split each value in two)
    return lax.bitcast_convert_type(jnp.stack(found, axis=1).astype(jnp.int32), jnp.float32)


@jax.custom_jvp
def _selected(a, ranks):
    """:func:`order_statistics`, differentiable: a value's derivative is that of the element
    it is (found only when differentiated: the bit patterns carry no gradient)."""
    return order_statistics(a, ranks)


@_selected.defjvp
def _selected_jvp(primals, tangents):
    a, ranks = primals
    v = order_statistics(a, ranks)
    at = jnp.argmax(a[:, None, :] == v[:, :, None], axis=2)
    return v, jnp.take_along_axis(tangents[0], at, axis=1)


def sigma_planes(planes, true_hw=None):
    """skimage's ``_sigma_est_dwt`` for each (H, W) plane of (P, H, W): the median absolute
    value of the nonzero finest diagonal (db2) detail coefficients divided by
    ``norm.ppf(0.75)``; 0 when every coefficient is 0 (skimage gives NaN there).

    ``true_hw``: ``(sizes, offset)``, the planes are canvases holding an image of ``sizes``
    (traced ``(height, width)``) at ``(offset, offset)``, its symmetric extension written
    around it (at least 3 pixels a side: :func:`imgproc.pipeline.execution.extend_from`):
    the image's own estimate, bit for bit. The coefficients past the image's are set to 0,
    which the median leaves out as it does the image's own zeros, so the ranks fall on the
    same values."""
    if true_hw is None:
        dd = _dwt_hi(_dwt_hi(planes, 1), 2)
    else:
        sizes, offset = true_hw
        dd = _dwt_hi(_dwt_hi(planes, 1, offset), 2, offset)
        rows = jnp.arange(dd.shape[1]) < (sizes[0] + 3) // 2
        cols = jnp.arange(dd.shape[2]) < (sizes[1] + 3) // 2
        dd = jnp.where(rows[:, None] & cols[None, :], dd, 0.0)
    a = jnp.abs(dd.reshape(dd.shape[0], -1))
    total = a.shape[1]
    zeros = jnp.sum(a == 0, axis=1)
    m = total - zeros
    lo = jnp.clip(zeros + (m - 1) // 2, 0, total - 1)
    hi = jnp.clip(zeros + m // 2, 0, total - 1)
    ranks = jnp.stack([lo, hi], axis=1)
    if jax.default_backend() == "cpu":
        v = _selected(a, ranks)
    else:  # GPU/TPU sorts fast; the histograms' scatter-adds there are not measured (no GPU lent)
        v = jnp.take_along_axis(jnp.sort(a, axis=1), ranks, axis=1)
    return jnp.where(m > 0, 0.5 * (v[:, 0] + v[:, 1]) / _NORM_PPF_075, 0.0)


def sigma_nhwc(x, true_hw=None):
    """Noise sigma per image of (N, H, W, C) float32: the mean over channels (``true_hw``:
    canvases, as for :func:`sigma_planes`). The channels' sigmas are added one after another,
    not by a reduction, whose order a GPU program chooses by its fusion: an image on a
    canvas and the image alone add them in the same order (with ``mean``, an H200 gave
    estimates one unit in the last place apart; this form has not been run there yet)."""
    n, h, w, c = x.shape
    planes = jnp.moveaxis(x, 3, 1).reshape(n * c, h, w)
    per_channel = sigma_planes(planes, true_hw).reshape(n, c)
    total = per_channel[:, 0]
    for k in range(1, c):
        total = total + per_channel[:, k]
    return total / c


@functools.partial(jax.jit, static_argnames=("layout",))
def _estimate_sigma(image, *, layout):
    return sigma_nhwc(to_nhwc(image.astype(jnp.float32), layout))


@callers_type
def estimate_sigma(image, *, max_value=None, layout=None):
    """Estimate the standard deviation of additive Gaussian noise, per image.

    Matches ``skimage.restoration.estimate_sigma(plane)`` (wavelet median absolute deviation
    of the finest diagonal db2 detail band, PyWavelets' "symmetric" extension) for each
    channel, averaged over the channels (skimage's ``average_sigmas=True``), in the image's
    own value units: a uint8 image gives values on 0..255 (skimage, which does not rescale
    integers here either, gives the same number). A flat image gives 0 (skimage: NaN).

    A flat band (a letterbox, a saturated sky) has detail coefficients that are 0 in exact
    arithmetic. skimage leaves out the ones PyWavelets' float64 sum makes exactly 0 and
    keeps the ones it leaves at about 1e-14 of the value, which depends on the band's
    value; imgproc's float32 coefficients there are about 1e-7 of it and always counted.
    So where PyWavelets gets exact zeros the two differ (a 40×40 uint8 image with a
    6-row band of 55: 3.74 against 4.49), and where it does not they agree; counting the
    band never (exact zeros in float32) agreed with skimage less often on random bands
    (25 of 120 cases against 88 of 120), so it was not made.

    Args:
        image: HW, HWC, NHWC (or CHW/NCHW with ``layout``); any supported dtype.
        max_value: unused by the estimate itself (kept for a uniform signature; the result
            is in the image's units whatever it is).
        layout: as for :func:`imgproc.correlate`.

    Returns:
        A float32 JAX scalar for one image, an ``(N,)`` array for a batch.

    Example:
        >>> import numpy as np, imgproc
        >>> rng = np.random.default_rng(0)
        >>> noisy = 0.5 + 0.1 * rng.standard_normal((64, 64)).astype(np.float32)
        >>> round(float(imgproc.estimate_sigma(noisy)), 1)
        0.1
    """
    image, layout = prepare(image, layout)
    return per_image(_estimate_sigma(image, layout=layout), layout)
