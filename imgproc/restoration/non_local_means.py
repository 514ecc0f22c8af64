"""Non-local means: the public :func:`nl_means`, and the fast (shifted-difference) kernel
behind it and ``denoise(method="auto")`` (:func:`nl_means_nhwc`).

For each offset ``t`` of the search window, the patch distance of every pixel ``p`` to
``p + t`` is a box filter of the squared difference of the image and its shifted copy,
summed over the channels; the weight ``w_t(p)`` follows from it; the result is the
weighted mean of the shifted pixels (scikit-image's ``denoise_nl_means(fast_mode=True)``,
the reference named in ``nl_means``'s docstring).

What makes it fast on XLA:CPU (why: benchmarks/NOTES.md, "NL-means"):

* **Half the offsets.** The distance is symmetric, ``d(p, p + t) = d(p + t, p)``, so
  ``w_{-t}(q) = w_t(q - t)``: one distance map per offset of one half of the window
  serves two offsets. Each map covers the image extended by the search radius ``d`` (so
  that ``q - t`` stays inside it); every pixel ``q`` receives ``w_t(q) x(q + t)`` and
  ``w_t(q - t) x(q - t)``. The padded image is the same array for both, so the result is
  the full-window sum, value for value (tested against the plain loop over all offsets).
* **Planes, channels summed by hand.** The image is handled as (N, C, H, W) planes and
  the squared differences summed channel by channel in one elementwise expression; a
  ``jnp.sum`` over the channel axis made XLA copy the shifted slice and call a reduction
  kernel each offset (much slower in all). The weight is one exponential of
  :func:`weight_exponent`, its taper inside the exponent, so the exponential is the last
  operation: with a ``where`` after it, XLA recomputed the box sums inside each of its
  three readers. The taper is a division, not a logarithm (a third of the kernel's time).
* **Column sums through the loop carry.** Fused into the row sums that read them, each
  column sum was recomputed ``2r + 1`` times; passed from one iteration to the next they
  are written once.
* **Strips of rows** (:func:`strip_rows`) for large images, so that a strip's maps stay
  in the cache.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from imgproc.core.array_type import callers_type
from imgproc.core.arrays import from_nhwc, repeated, to_nhwc, to_output
from imgproc.core.boundary import padded_planes
from imgproc.core.registry import KEEPS_TARGETS, OpInfo, register_ops
from imgproc.core.validate import MODE_CHECK, check_odd, check_per_image
from imgproc.restoration.common import per_image_scalar, prepare
from imgproc.restoration.noise_level import sigma_nhwc

DISTANCE_CUTOFF = 5.0  # skimage: weights exp(-e) with e > 5 are dropped
# ... and ours reach 0 there smoothly: exp(-e) times exp(-s² / (1 - s)), s the way through
# the last TAPER before the cutoff, so the result has no step in h, sigma or the image
# (skimage's weight jumps from exp(-5) to 0, and jax.grad cannot see a jump)
DISTANCE_TAPER = 1.0
_TAPER_END = 1.0 - 1e-6  # s stops here: exp(-e - 1e6) is 0, and the division stays finite


def weight_exponent(e):
    """The exponent ``-e - s² / (1 - s)`` of the weight, ``s = (e - (CUTOFF - TAPER)) /
    TAPER`` clipped to [0, 1): ``-e`` (skimage's weight) up to ``e = 4``, then falling
    smoothly (every derivative continuous) to a weight of exactly 0 just before the cutoff.
    One division instead of a logarithm of a linear taper (which cost a third of the
    kernel's time); the exponential stays the last operation (see the module docstring)
    and the gradient stays finite.

    >>> import numpy as np
    >>> e = np.array([0.0, 4.0, 4.5, 5.0, 9.0], np.float32)
    >>> np.round(np.exp(np.asarray(weight_exponent(e), np.float64)), 4).tolist()
    [1.0, 0.0183, 0.0067, 0.0, 0.0]
    """
    s = jnp.clip((e - (DISTANCE_CUTOFF - DISTANCE_TAPER)) / DISTANCE_TAPER, 0.0, _TAPER_END)
    return -e - s * s / (1.0 - s)


def _box_valid(a, r, axis, first=0):
    """Sums of the elements ``first .. 2r`` of each run of 2r+1 consecutive elements along
    ``axis`` (valid part: length n - 2r); ``first=0``: the whole run."""
    n = a.shape[axis] - 2 * r
    out = jnp.zeros_like(lax.slice_in_dim(a, 0, n, axis=axis))
    for i in range(first, 2 * r + 1):
        out = out + lax.slice_in_dim(a, i, i + n, axis=axis)
    return out


def half_window(d: int) -> np.ndarray:
    """The offsets ``(dy, dx)`` of one half of the ``(2d+1)²`` search window, without
    ``(0, 0)``: the other half are their negatives. int32 ``((2d+1)² - 1) / 2, 2)``.

    >>> half_window(1).tolist()
    [[0, 1], [1, -1], [1, 0], [1, 1]]
    """
    return np.array([(dy, dx) for dy in range(d + 1) for dx in range(-d, d + 1) if dy > 0 or dx > 0],
                    np.int32).reshape(-1, 2)


def nl_means_nhwc(x, sigma, h, *, r, d, mode, skimage_window=False):
    """Fast NL-means of (N, H, W, C) float32 with patch radius ``r`` and search radius
    ``d``; ``sigma`` and ``h`` per image (N,) float32. Returns (N, H, W, C) float32.

    The patch distance is the mean over the ``(2r+1)²`` patch and the channels of the
    squared difference; the weight ``exp(-e)`` with ``e = max(dist - 2σ², 0) / h²``, tapered
    smoothly to 0 over ``e`` in [4, 5] (:func:`weight_exponent`) so that it is
    continuous; the centre's own weight is 1. Pixels outside the
    image come from ``mode`` (scipy.ndimage's names; ``"constant"`` is 0).

    ``skimage_window``: sum the patch distance over skimage's (s-1)x(s-1) window (rows and
    columns ``-r+1 .. r``; still divided by s²): scikit-image's fast mode reads its integral
    image one row and column short (0.26: ``integral[row - offset, ...]`` where the patch
    needs ``row - offset - 1``). For parity tests only.
    """
    n, hh, ww, c = x.shape
    pad = r + 2 * d  # the distance maps cover the image extended by d, their patches r more
    p = padded_planes(x, pad, mode)
    block = functools.partial(_block, sigma=sigma, h=h, r=r, d=d, first=1 if skimage_window else 0)
    rows = strip_rows(n, hh, ww, d)
    if rows >= hh:
        return jnp.moveaxis(block(p, hh, ww), 1, 3)
    # strips of rows, one after the other, so that each strip's maps stay in the cache
    strips = -(-hh // rows)
    p = jnp.pad(p, ((0, 0), (0, 0), (0, strips * rows - hh), (0, 0)))  # rows below the image feed no output
    out = lax.map(lambda i: block(lax.dynamic_slice_in_dim(p, i * rows, rows + 2 * pad, axis=2), rows, ww),
                  jnp.arange(strips))  # (strips, N, C, rows, W)
    out = jnp.moveaxis(out, 0, 2).reshape(n, c, strips * rows, ww)[:, :, :hh]
    return jnp.moveaxis(out, 1, 3)


STRIP_BYTES = 1 << 19  # bytes of one distance map of a strip (measured: benchmarks/NOTES.md, "NL-means")


def strip_rows(n: int, height: int, width: int, d: int) -> int:
    """Rows of the strips a batch of ``n`` images is processed in: a strip's distance maps
    (its rows plus ``2d``, float32) take about :data:`STRIP_BYTES`, with at least ``4d``
    rows (each strip computes ``2d`` rows of maps twice); the strips then share the
    height evenly.

    >>> strip_rows(1, 512, 512, 10), strip_rows(1, 1024, 1024, 10), strip_rows(1, 3000, 4000, 10)
    (171, 103, 40)
    """
    target = max(STRIP_BYTES // (4 * n * (width + 2 * d)) - 2 * d, 4 * d, 8)
    strips = -(-height // target)
    return -(-height // strips)


def _block(p, hh, ww, *, sigma, h, r, d, first):
    """NL-means of the ``hh`` x ``ww`` pixels of the padded planes ``p`` (N, C, hh + 2pad,
    ww + 2pad), ``pad = r + 2d``: (N, C, hh, ww)."""
    n, c = p.shape[:2]
    pad = r + 2 * d
    cells = (2 * r + 1 - first) ** 2
    eh, ew = hh + 2 * d, ww + 2 * d  # the extended image: map index (i + d, j + d) is pixel (i, j)
    base = lax.slice(p, (0, 0, d, d), (n, c, d + eh + 2 * r, d + ew + 2 * r))
    var2 = (2.0 * sigma * sigma)[:, None, None] * (cells / (2 * r + 1) ** 2)
    inv_h2 = (1.0 / jnp.maximum(h * h, 1e-30))[:, None, None]
    scale = 1.0 / (c * (2 * r + 1) ** 2)
    offsets = jnp.asarray(half_window(d), int)  # the slices' other indices' type (int64 with x64 on)

    def column_sums(k):
        """Offset ``k``'s squared differences summed over the channels and down each
        patch column."""
        dy, dx = offsets[k, 0], offsets[k, 1]
        shifted = lax.dynamic_slice(p, (0, 0, d + dy, d + dx), (n, c, eh + 2 * r, ew + 2 * r))
        diff = base - shifted
        return _box_valid(sum(diff[:, i] * diff[:, i] for i in range(c)), r, 1, first)

    def accumulate(k, columns, num, den):
        dy, dx = offsets[k, 0], offsets[k, 1]
        dist = _box_valid(columns, r, 2, first) * scale
        e = jnp.maximum(dist - var2, 0.0) * inv_h2
        wgt = jnp.exp(weight_exponent(e))
        w_fwd = lax.slice(wgt, (0, d, d), (n, d + hh, d + ww))  # w_t(q)
        w_bwd = lax.dynamic_slice(wgt, (0, d - dy, d - dx), (n, hh, ww))  # w_t(q - t) = w_{-t}(q)
        x_fwd = lax.dynamic_slice(p, (0, 0, pad + dy, pad + dx), (n, c, hh, ww))
        x_bwd = lax.dynamic_slice(p, (0, 0, pad - dy, pad - dx), (n, c, hh, ww))
        return num + repeated(w_fwd[:, None], c, 1) * x_fwd + repeated(w_bwd[:, None], c, 1) * x_bwd, den + w_fwd + w_bwd

    @jax.checkpoint  # reverse mode recomputes each offset instead of keeping its maps: 1.8 -> 0.5 GB on 256^2
    def body(k, carry):
        # offset k's column sums go through the loop's carry, so XLA writes them once:
        # fused into the row sums that read them, it recomputed each 2r+1 times
        num, den, columns = carry
        num, den = accumulate(k - 1, columns, num, den)
        return num, den, column_sums(k)

    centre = lax.slice(p, (0, 0, pad, pad), (n, c, pad + hh, pad + ww))
    last = offsets.shape[0] - 1
    if last < 0:  # a 1x1 search window: the centre alone
        return centre
    num, den, columns = lax.fori_loop(1, last + 1, body, (centre, jnp.ones((n, hh, ww), p.dtype), column_sums(0)))
    num, den = accumulate(last, columns, num, den)
    return num / repeated(den[:, None], c, 1)


# ----------------------------------------------------------------------------- nl_means

# h = H_PER_SIGMA * sigma when h is not given: measured with benchmarks/denoise_quality.py
# (its "NL-means strength rule" table, 4 images, estimated sigma: k = 0.6-0.7 best at
# sigma 15 and 25 (within 0.15 dB), 0.6 best at sigma 50 where 0.8 loses 0.4 dB)
H_PER_SIGMA = 0.6


@functools.partial(jax.jit, static_argnames=("r", "d", "mode", "layout", "estimate", "offset"))
def _nl_means(image, sigma, h, sizes=None, *, r, d, mode, layout, estimate, offset=None):
    """``sizes``/``offset``: ``image`` is a size bucket's canvas holding the image of
    traced sides ``sizes`` at ``(offset, offset)`` with ``r + 2 d`` pixels of its border
    written around it (:func:`nl_means_reach`); the estimate reads the image's samples
    only."""
    x = to_nhwc(image.astype(jnp.float32), layout)
    n = x.shape[0]
    if estimate:
        sigma = sigma_nhwc(x, None if sizes is None else (sizes, offset))
        h = H_PER_SIGMA * sigma
    else:
        sigma = per_image_scalar(sigma, n)
        h = per_image_scalar(h, n)
    y = nl_means_nhwc(x, sigma, h, r=r, d=d, mode=mode)
    return to_output(from_nhwc(y, layout, image.shape), image.dtype)


def _nl_means_args(sigma, h, patch_size, search_size):
    """The checked options as ``_nl_means`` takes them: ``(sigma, h, r, d, estimate)``."""
    patch_size = check_odd("patch_size", patch_size, high=51)
    search_size = check_odd("search_size", search_size, high=51)
    check_per_image("sigma", sigma, allow_none=True)
    check_per_image("h", h, allow_none=True)
    estimate = sigma is None and h is None
    if not estimate:
        if sigma is None:
            sigma = 0.0
        if h is None:
            h = H_PER_SIGMA * jnp.asarray(sigma, jnp.float32)
    return sigma, h, patch_size // 2, search_size // 2, estimate


@callers_type
def nl_means(image, *, sigma=None, h=None, patch_size=7, search_size=21, mode="reflect", max_value=None, layout=None):
    """Non-local means, the fast (shifted-difference) form.

    For each offset ``t`` of the ``search_size``×``search_size`` window, the patch distance
    ``d(p, p+t)`` is the mean over a ``patch_size``×``patch_size`` patch and the channels of
    the squared difference of the image and its shifted copy (a box filter); the weight is
    ``exp(-e)``, ``e = max(d - 2σ², 0) / h²``, dropped when ``e`` exceeds 5 and tapered
    smoothly to 0 over ``e`` in [4, 5] (:func:`weight_exponent`), so that it has no step
    (differentiable in the image, ``h`` and ``sigma``); the result is the weighted mean of
    the shifted pixels.
    This is the definition of
    ``skimage.restoration.denoise_nl_means(fast_mode=True, patch_size=patch_size,
    patch_distance=search_size // 2, h=h, sigma=sigma, channel_axis=-1)`` including its
    multichannel normalisation (the distance is averaged over channels), with two
    differences: the taper, and the patch. skimage's fast mode sums the distance over an
    (s-1)×(s-1) window (its integral image is read one row and column short; with
    ``patch_size=1`` the window is empty and ``h`` does nothing), imgproc over the full
    s×s patch, so the results differ by more than rounding (on a 96×96 crop of
    ``skimage.data.camera()`` in [0, 1] with noise σ 0.05-0.1 and ``h=0.6σ``, 7/21: up to
    0.1-0.2, 0.004-0.007 on average). With skimage's window, the results agree within 1e-2, 2e-3 on
    average (``tests/restoration/test_restoration.py``). With ``mode="mirror"`` the border
    matches skimage's too (skimage pads with NumPy's "reflect", which is scipy's "mirror").

    Args:
        image: HW, HWC, NHWC (or CHW/NCHW with ``layout``); any supported dtype. Channels
            are denoised together (one weight per pixel and offset).
        sigma: noise standard deviation in the image's units (0..255 for uint8), >= 0.
            ``None``: estimated per image with :func:`estimate_sigma` when ``h`` is None
            too, else 0 (skimage's default).
        h: filter strength in the image's units, >= 0. ``None``: ``0.6 * sigma`` (the
            estimate's when sigma is None). ``h=0`` with ``sigma=0`` keeps the image.
        patch_size: odd patch side >= 1 (static).
        search_size: odd search-window side >= 1 (static), at most 51.
        mode: boundary mode (scipy.ndimage's names; ``"constant"`` fills 0).
        max_value: unused (the units are the image's own); for a uniform signature.
        layout: as for :func:`imgproc.correlate`.

    Returns:
        The denoised image, same shape and dtype.

    Example:
        >>> import numpy as np, imgproc
        >>> rng = np.random.default_rng(0)
        >>> clean = np.full((32, 32), 0.5, np.float32)
        >>> noisy = clean + 0.1 * rng.standard_normal(clean.shape).astype(np.float32)
        >>> out = np.asarray(imgproc.nl_means(noisy, sigma=0.1, patch_size=5, search_size=11))
        >>> bool(np.abs(out - clean).std() < 0.03)
        True
    """
    sigma, h, r, d, estimate = _nl_means_args(sigma, h, patch_size, search_size)
    image, layout = prepare(image, layout, mode)
    return _nl_means(image, sigma, h, r=r, d=d, mode=mode, layout=layout, estimate=estimate)


def nl_means_reach(options) -> int:
    """The pixels ``nl_means`` reads around the image for ``options``: the patch radius
    plus twice the search radius (its distance maps cover the image extended by the
    search radius)."""
    return check_odd("patch_size", options.get("patch_size", 7), high=51) // 2 \
        + 2 * (check_odd("search_size", options.get("search_size", 21), high=51) // 2)


def nl_means_on_canvas(image, true_hw, *, sigma=None, h=None, patch_size=7, search_size=21, mode="reflect",
                        max_value=None, layout=None):
    """``nl_means`` in a size bucket's program (``OpInfo.on_canvas``): ``image`` a float32
    canvas holding the image at ``true_hw = (sizes, offset)`` with
    :func:`nl_means_reach` pixels of its border written around it; the noise estimate
    (without ``sigma`` and ``h``) reads the image's own samples, so the result is the
    image's own (bit for bit on integer images; float32 within a relative 3e-7, where XLA
    orders the sums otherwise for another row length)."""
    sigma, h, r, d, estimate = _nl_means_args(sigma, h, patch_size, search_size)
    sizes, offset = true_hw
    return _nl_means(image, sigma, h, sizes, r=r, d=d, mode=mode, layout=layout, estimate=estimate, offset=offset)


# Without sigma and h it estimates the noise from the whole image: in a size bucket it runs
# its canvas form, whose estimate reads the image's own samples.
OPS = (
    OpInfo("nl_means", nl_means, checks=MODE_CHECK, radius=nl_means_reach, on_canvas=nl_means_on_canvas),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
