"""Restoration: denoising methods, noise estimation and ``denoise(method="auto")``.

Every function takes an image in any layout of :mod:`imgproc.core.arrays` (``layout=None``
infers HW, HWC or NHWC; ``"CHW"`` and ``"NCHW"`` must be named) and any supported dtype
(uint8, uint16, float16, bfloat16, float32), computes in float32 and returns the input's
shape and dtype (integers rounded and saturated once). Batches (NHWC, NCHW) are processed
image by image in one compiled program.

Units: ``sigma``, ``h`` and ``sigma_color`` are in the image's own value units (0..255 for
uint8, 0..65535 for uint16, 0..1 for floats). ``max_value=None`` means the input dtype's
range (255, 65535 or 1.0; inside a :class:`imgproc.Pipeline`, the range of the dtype the
pipeline was called with), resolved by :func:`imgproc.core.arrays.resolve_max`.

Options that set shapes (``patch_size``, ``search_size``, ``size``, ``mode``, ``layout``,
``method``) are static; numeric ones (``sigma``, ``h``, ``weight``, ``eps``, ``n_iter``,
``sigma_color``, ``sigma_spatial`` with an explicit ``size``) are traced: a new value does
not recompile.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from imgproc.core.array_type import callers_type
from imgproc.core.arrays import from_nhwc, resolve_max, to_bhwc, to_compute, to_nhwc, to_output
from imgproc.core.boundary import extended_band, padded_planes
from imgproc.core.eager import compiled_when_eager
from imgproc.core.images import check_image
from imgproc.core.registry import KEEPS_TARGETS, OpInfo, register_ops
from imgproc.core.validate import MODE_CHECK, check_mode, check_odd, check_per_image, is_traced
from imgproc.cpu import flat_argument, from_flat, in_own_loop
from imgproc.filters.linear import gaussian_blur, sharpen as sharpen_filter
from imgproc.restoration.block_matching import bm3d, check_stage as check_bm3d_stage
from imgproc.restoration.noise_level import sigma_nhwc
from imgproc.restoration.non_local_means import half_window, nl_means_nhwc

__all__ = [
    "DENOISE_METHODS",
    "bilateral",
    "bm3d",
    "denoise",
    "estimate_sigma",
    "impulse_fraction",
    "median",
    "nl_means",
    "tv_chambolle",
]

# ----------------------------------------------------------------------------- checks


def _prepare(image, layout, mode=None, *, read_in_place=False):
    image, layout = check_image(image, layout, read_in_place=read_in_place)
    if mode is not None:
        check_mode(mode)
    return image, layout


# ----------------------------------------------------------------------------- layouts


def _per_image(values, layout):
    """Per-image values (N,) as the caller sees them: a scalar for one image."""
    return values if layout in ("NHWC", "NCHW") else values[0]


def _per_image_scalar(value, n):
    """A scalar or per-image (N,) option as float32 (N,)."""
    v = jnp.asarray(value, jnp.float32)
    return jnp.broadcast_to(v.reshape(-1) if v.ndim else v, (n,))


# ----------------------------------------------------------------------------- estimate_sigma

# PyWavelets' db2 decomposition high-pass filter (pywt.Wavelet("db2").dec_hi)
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
    image, layout = _prepare(image, layout)
    return _per_image(_estimate_sigma(image, layout=layout), layout)


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


# sizes up to this use the selection network; larger ones sort the stacked copies
_NETWORK_MAX_SIZE = 5


def _window_median(shifted, size, c):
    """The ``size``x``size`` median from the window's rows: ``shifted(i)`` is the operand of
    window row ``i`` (the image shifted by ``i - size // 2`` rows), ``(..., L + 2 * r * c)``
    values with W and C merged; a shift by one pixel is a shift by ``c`` values. Returns
    ``(..., L)``.

    3x3: each column of three is sorted once (shared by the three windows that contain
    it); the median is then ``med3(max of the minima, med3 of the middles, min of the
    maxima)`` (Paeth's rule), 18 min/max operations a pixel instead of the 24 comparators
    of the 9-input network. 5x5: the pruned network (:func:`median_network`); larger sizes
    sort the stacked copies."""
    r = size // 2
    rows = [shifted(i) for i in range(size)]
    width = rows[0].shape[-1] - 2 * r * c

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
    if size <= _NETWORK_MAX_SIZE:
        for i, j in median_network(size * size):
            vals[i], vals[j] = jnp.minimum(vals[i], vals[j]), jnp.maximum(vals[i], vals[j])
        return vals[(size * size) // 2]
    return jnp.sort(jnp.stack(vals, axis=0), axis=0)[(size * size) // 2]


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
    return _window_median(lambda i: band[:, i:i + h - 2 * r], size, c)


def _median_rows(x, *, size, mode, flat=None):
    """The median of the ``(N, H, W, C)`` image ``x`` as rows ``(N, H, W*C)``.

    W and C are merged into one axis: a shift by one pixel is a shift by C values, and
    XLA's loops run over long rows, which vectorise, instead of an innermost axis of C
    (benchmarks/NOTES.md, "Median"). The rows that the window does not take past the
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
    start, length = start + (r + 1) * wc - r * c, (h - 2 * r - 2) * wc + 2 * r * c
    interior = _window_median(lambda i: values[:, start + (i - r) * wc:start + (i - r) * wc + length], size, c)
    rows = jnp.concatenate([_median_of_extended(x, (0, r + 1), (0, w), size=size, mode=mode),
                            interior.reshape(n, h - 2 * r - 2, wc),
                            _median_of_extended(x, (h - r - 1, h), (0, w), size=size, mode=mode)], axis=1)
    rows = lax.dynamic_update_slice(rows, _median_of_extended(x, (0, h), (0, r), size=size, mode=mode), (0, 0, 0))
    return lax.dynamic_update_slice(rows, _median_of_extended(x, (0, h), (w - r, w), size=size, mode=mode),
                                    (0, 0, (w - r) * c))


def _median_nhwc(x, *, size, mode):
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
    with ``mode="nearest"`` (OpenCV replicates the edge pixel) (and away from the border for any mode). Sizes up to 5 run a
    selection network (Batcher's odd-even merge sort pruned to the median wire) over
    shifted copies, in the input dtype; larger odd sizes sort the stacked copies.

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
    image, layout = _prepare(image, layout, mode, read_in_place=True)  # _median reads it through its flat view
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


def _impulse_mask(x, med, max_value):
    extreme = (x <= IMPULSE_LEVEL * max_value) | (x >= (1.0 - IMPULSE_LEVEL) * max_value)
    return extreme & (jnp.abs(x - med) > IMPULSE_JUMP * max_value)


@functools.partial(jax.jit, static_argnames=("layout",))
def _impulse_fraction(image, max_value, *, layout):
    x = to_nhwc(image.astype(jnp.float32), layout)
    med = _median_nhwc(x, size=3, mode="reflect")
    return _impulse_mask(x, med, max_value).mean(axis=(1, 2, 3))


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
    image, layout = _prepare(image, layout)
    max_value = check_per_image("max_value", resolve_max(max_value, image.dtype), low_open=True)
    return _per_image(_impulse_fraction(image, jnp.asarray(max_value, jnp.float32), layout=layout), layout)


# ... and when, with the impulses replaced by their 3x3 median, the estimated noise sigma
# is below IMPULSE_MAX_RESIDUAL * max_value: strong Gaussian noise clipped at 0 and white
# also makes extreme samples that differ from their median (sigma 50 on 0..255: 2-3 % of
# the samples), but the rest of the image stays noisy (residual sigma about 41 there,
# against about 3 for 5 % salt-and-pepper; benchmarks/denoise_quality.py images).
IMPULSE_MAX_RESIDUAL = 0.04


def _is_impulsive(x, frac, max_value):
    """Per-image decision of ``auto`` for one (1, H, W, C) image."""
    residual = sigma_nhwc(_switching_median(x, 3, max_value))[0]
    return (frac > IMPULSE_MIN_FRACTION) & (residual < IMPULSE_MAX_RESIDUAL * max_value)


def _switching_median(x, size, max_value):
    """Replace only the detected impulses by the ``size``×``size`` median."""
    med3 = _median_nhwc(x, size=3, mode="reflect")
    med = med3 if size == 3 else _median_nhwc(x, size=size, mode="reflect")
    return jnp.where(_impulse_mask(x, med3, max_value), med, x)


# ----------------------------------------------------------------------------- nl_means

# h = H_PER_SIGMA * sigma when h is not given: measured with benchmarks/denoise_quality.py
# (its "NL-means strength rule" table, 4 images, estimated sigma: k = 0.6-0.7 best at
# sigma 15 and 25 (within 0.15 dB), 0.6 best at sigma 50 where 0.8 loses 0.4 dB)
H_PER_SIGMA = 0.6


@functools.partial(jax.jit, static_argnames=("r", "d", "mode", "layout", "estimate"))
def _nl_means(image, sigma, h, *, r, d, mode, layout, estimate):
    x = to_nhwc(image.astype(jnp.float32), layout)
    n = x.shape[0]
    if estimate:
        sigma = sigma_nhwc(x)
        h = H_PER_SIGMA * sigma
    else:
        sigma = _per_image_scalar(sigma, n)
        h = _per_image_scalar(h, n)
    y = nl_means_nhwc(x, sigma, h, r=r, d=d, mode=mode)
    return to_output(from_nhwc(y, layout, image.shape), image.dtype)


@callers_type
def nl_means(image, *, sigma=None, h=None, patch_size=7, search_size=21, mode="reflect", max_value=None, layout=None):
    """Non-local means, the fast (shifted-difference) form.

    For each offset ``t`` of the ``search_size``×``search_size`` window, the patch distance
    ``d(p, p+t)`` is the mean over a ``patch_size``×``patch_size`` patch and the channels of
    the squared difference of the image and its shifted copy (a box filter); the weight is
    ``exp(-max(d - 2σ², 0) / h²)``, dropped when the exponent exceeds 5; the result is the
    weighted mean of the shifted pixels. This is the definition of
    ``skimage.restoration.denoise_nl_means(fast_mode=True, patch_size=patch_size,
    patch_distance=search_size // 2, h=h, sigma=sigma, channel_axis=-1)`` including its
    multichannel normalisation (the distance is averaged over channels); with
    ``mode="mirror"`` the border matches skimage's too (skimage pads with NumPy's
    "reflect", which is scipy's "mirror").

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
    patch_size = check_odd("patch_size", patch_size, high=51)
    search_size = check_odd("search_size", search_size, high=51)
    check_per_image("sigma", sigma, allow_none=True)
    check_per_image("h", h, allow_none=True)
    image, layout = _prepare(image, layout, mode)
    estimate = sigma is None and h is None
    if not estimate:
        if sigma is None:
            sigma = 0.0
        if h is None:
            h = H_PER_SIGMA * jnp.asarray(sigma, jnp.float32)
    return _nl_means(image, sigma, h, r=patch_size // 2, d=search_size // 2, mode=mode, layout=layout,
                     estimate=estimate)


# ----------------------------------------------------------------------------- tv_chambolle


def _tv_plane(f, weight, eps, n_iter):
    """skimage's ``_denoise_tv_chambolle_nd`` on one 2-D plane (float32)."""
    tau = 0.25  # 1 / (2 * ndim)

    def grad(u):
        gy = jnp.concatenate([u[1:] - u[:-1], jnp.zeros_like(u[:1])], axis=0)
        gx = jnp.concatenate([u[:, 1:] - u[:, :-1], jnp.zeros_like(u[:, :1])], axis=1)
        return gy, gx

    def step(p, i):
        py, px = p
        d = -(py + px)
        d = d.at[1:].add(py[:-1])
        d = d.at[:, 1:].add(px[:, :-1])
        d = jnp.where(i > 0, d, 0.0)
        out = f + d
        gy, gx = grad(out)
        norm = jnp.sqrt(gy * gy + gx * gx)
        e = (jnp.sum(d * d) + weight * jnp.sum(norm)) / f.size
        norm = 1.0 + norm * (tau / weight)
        return ((py - tau * gy) / norm, (px - tau * gx) / norm), out, e

    def cond(state):
        i, _, _, _, _, done = state
        return (i < n_iter) & ~done

    def body(state):
        i, p, _, e_init, e_prev, _ = state
        p_new, out, e = step(p, i)
        e_init = jnp.where(i == 0, e, e_init)
        stop = (i > 0) & (jnp.abs(e_prev - e) < eps * e_init)
        return i + 1, p_new, out, e_init, e, stop

    zeros = jnp.zeros_like(f)
    z = jnp.float32(0)
    state = (jnp.int32(0), (zeros, zeros), f, z, z, jnp.bool_(False))
    return lax.while_loop(cond, body, state)[2]


@functools.partial(jax.jit, static_argnames=("layout",))
def _tv_chambolle(image, weight, eps, n_iter, *, layout):
    x = to_bhwc(image.astype(jnp.float32), layout)
    b, h, w, c = x.shape
    planes = jnp.moveaxis(x, 3, 1).reshape(b * c, h, w)
    fn = jax.vmap(lambda pl: _tv_plane(pl, weight, eps, n_iter))
    y = jnp.moveaxis(fn(planes).reshape(b, c, h, w), 1, 3)
    return to_output(y.reshape(image.shape), image.dtype)


@callers_type
def tv_chambolle(image, *, weight=0.1, n_iter=200, eps=2e-4, max_value=None, layout=None):
    """Total-variation denoising (Chambolle's projection algorithm), per channel.

    Matches ``skimage.restoration.denoise_tv_chambolle(img_as_float(x), weight=weight,
    eps=eps, max_num_iter=n_iter, channel_axis=-1)`` scaled back to the image's range: the
    ``weight`` is relative to ``max_value`` (as skimage's is to 1.0 after ``img_as_float``),
    so the same weight means the same smoothing for uint8, uint16 and float images. Each
    channel stops when its energy changes by less than ``eps`` times its first energy, or
    after ``n_iter`` iterations.

    Args:
        image: HW, HWC, NHWC (or CHW/NCHW with ``layout``); any supported dtype.
        weight: denoising weight relative to ``max_value`` (> 0; larger: smoother).
        n_iter: maximum number of iterations (integer >= 1; traced).
        eps: relative energy change that stops the iteration (>= 0).
        max_value: white; ``None``: the dtype's range (see the module docstring).
        layout: as for :func:`imgproc.correlate`.

    Returns:
        The denoised image, same shape and dtype.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((8, 8), np.float32); x[:, 4:] = 1.0
        >>> y = np.asarray(imgproc.tv_chambolle(x, weight=0.05))
        >>> bool(y[:, :4].max() < 0.1 and y[:, 4:].min() > 0.9)
        True
    """
    check_per_image("weight", weight, low_open=True)
    check_per_image("eps", eps)
    if not is_traced(n_iter) and (isinstance(n_iter, bool) or not isinstance(n_iter, (int, np.integer)) or n_iter < 1):
        raise ValueError(f"n_iter must be an integer >= 1; got {n_iter!r}")
    image, layout = _prepare(image, layout)
    mv = check_per_image("max_value", resolve_max(max_value, image.dtype), low_open=True)
    w = jnp.asarray(weight, jnp.float32) * jnp.asarray(mv, jnp.float32)
    return _tv_chambolle(image, w, jnp.asarray(eps, jnp.float32), jnp.asarray(n_iter, jnp.int32), layout=layout)


# ----------------------------------------------------------------------------- bilateral


def bilateral_radius(sigma_spatial, size) -> int:
    """OpenCV's window radius: ``size // 2`` if ``size`` is given, else
    ``max(round(1.5 * sigma_spatial), 1)``."""
    if size is not None:
        return check_odd("size", size) // 2
    if is_traced(sigma_spatial):
        raise ValueError("size must be given when sigma_spatial is traced (the window size is static)")
    return max(int(round(1.5 * float(sigma_spatial))), 1)


def _bilateral_nhwc(x, sigma_color, sigma_spatial, *, r, mode):
    """Bilateral filter of (N, H, W, C) ``x`` (any dtype), computed in float32 on planes
    (N, C, H, W): with the channels innermost XLA's loops do not vectorise (measured 2x
    slower). Returns (N, H, W, C) float32.

    The weight is symmetric, ``w(p, p + t) = w(p + t, p)``, so one weight map per offset
    of one half of the window serves ``t`` and ``-t`` (as in :mod:`imgproc.restoration.non_local_means`):
    each map covers the image extended by ``r``, and pixel ``q`` receives ``w_t(q) x(q + t)``
    and ``w_t(q - t) x(q - t)``; the centre's weight is 1. Half the exponentials of the
    plain loop (benchmarks/NOTES.md, "Bilateral")."""
    n, h, w, c = x.shape
    pad = 2 * r  # the maps cover the image extended by r, their offsets r more
    p = padded_planes(x, pad, mode)
    # per-image sigmas (N,) (denoise's estimate for a batch) or scalars
    sigma_color = jnp.reshape(sigma_color, (-1, 1, 1, 1)) if jnp.ndim(sigma_color) else sigma_color
    sigma_spatial = jnp.reshape(sigma_spatial, (-1, 1, 1, 1)) if jnp.ndim(sigma_spatial) else sigma_spatial
    cc = -0.5 / (sigma_color * sigma_color)
    sc = -0.5 / (sigma_spatial * sigma_spatial)
    eh, ew = h + 2 * r, w + 2 * r
    extended = p[:, :, r:r + eh, r:r + ew]  # map index (a + r, b + r) is pixel (a, b)
    num = p[:, :, pad:pad + h, pad:pad + w]
    den = jnp.ones((n, 1, h, w), p.dtype)
    for i, j in half_window(r).tolist():
        if math.sqrt(i * i + j * j) > r:  # OpenCV's round window
            continue
        shifted = p[:, :, r + i:r + i + eh, r + j:r + j + ew]
        dist = sum(jnp.abs(shifted[:, k:k + 1] - extended[:, k:k + 1]) for k in range(c))
        wgt = jnp.exp(sc * float(i * i + j * j) + cc * dist * dist)  # the exponential last: read three times
        w_fwd = wgt[:, :, r:r + h, r:r + w]
        w_bwd = wgt[:, :, r - i:r - i + h, r - j:r - j + w]
        num = (num + w_fwd * p[:, :, pad + i:pad + i + h, pad + j:pad + j + w]
               + w_bwd * p[:, :, pad - i:pad - i + h, pad - j:pad - j + w])
        den = den + w_fwd + w_bwd
    return jnp.moveaxis(num / den, 1, 3)


@functools.partial(jax.jit, static_argnames=("r", "mode", "layout"))
def _bilateral(image, sigma_color, sigma_spatial, *, r, mode, layout):
    y = _bilateral_nhwc(to_nhwc(image, layout), sigma_color, sigma_spatial, r=r, mode=mode)
    return to_output(from_nhwc(y, layout, image.shape), image.dtype)


@callers_type
def bilateral(image, *, sigma_color, sigma_spatial, size=None, mode="reflect", layout=None):
    """Bilateral filter with OpenCV's definition.

    ``out(p) = sum_q w(p, q) x(q) / sum_q w(p, q)`` over the round window ``|q - p| <=
    radius`` with ``w = exp(-|q - p|² / (2 sigma_spatial²)) * exp(-D² / (2 sigma_color²))``
    where ``D`` is the sum over channels of ``|x(q) - x(p)|`` (OpenCV's L1 colour distance;
    the plain difference for one channel). Matches ``cv2.bilateralFilter(x, size,
    sigma_color, sigma_spatial)`` with ``mode="mirror"`` (OpenCV's default border), within
    one level for uint8 (OpenCV tabulates the weights). Note: skimage's
    ``denoise_bilateral`` builds its spatial table over a window one pixel narrower than
    ``win_size`` in current releases, so it is not the reference here.

    Args:
        image: HW, HWC, NHWC (or CHW/NCHW with ``layout``); any supported dtype. Channels
            are filtered together (one weight per pixel pair).
        sigma_color: range sigma in the image's units (0..255 for uint8), > 0.
        sigma_spatial: spatial sigma in pixels, > 0.
        size: odd window side (static); ``None``: OpenCV's rule, radius
            ``max(round(1.5 * sigma_spatial), 1)``.
        mode: boundary mode (scipy.ndimage's names).
        layout: as for :func:`imgproc.correlate`.

    Returns:
        The filtered image, same shape and dtype.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((6, 6), np.uint8); x[:, 3:] = 200  # a step edge survives
        >>> np.asarray(imgproc.bilateral(x, sigma_color=20, sigma_spatial=2))[0]
        array([  0,   0,   0, 200, 200, 200], dtype=uint8)
    """
    check_per_image("sigma_color", sigma_color, low_open=True)
    check_per_image("sigma_spatial", sigma_spatial, low_open=True)
    r = bilateral_radius(sigma_spatial, size)
    image, layout = _prepare(image, layout, mode)
    return _bilateral(image, jnp.asarray(sigma_color, jnp.float32), jnp.asarray(sigma_spatial, jnp.float32),
                      r=r, mode=mode, layout=layout)


# ----------------------------------------------------------------------------- denoise

DENOISE_METHODS = ("auto", "nl_means", "bm3d", "tv", "bilateral", "median", "chapter")


def _auto_one(x, max_value, sigma_override, *, r, d):
    """``auto`` on one (1, H, W, C) image inside the program: impulse noise -> switching
    median (3x3 below 20 % impulses, else 5x5), otherwise NL-means with h = 0.6 sigma."""
    frac = _impulse_mask(x, _median_nhwc(x, size=3, mode="reflect"), max_value).mean()
    sigma = jnp.where(sigma_override >= 0, sigma_override, sigma_nhwc(x)[0])
    branch = jnp.where(_is_impulsive(x, frac, max_value), jnp.where(frac < 0.2, 0, 1), 2)
    return lax.switch(branch, [
        lambda im: _switching_median(im, 3, max_value),
        lambda im: _switching_median(im, 5, max_value),
        lambda im: nl_means_nhwc(im, sigma[None], H_PER_SIGMA * sigma[None], r=r, d=d, mode="reflect"),
    ], x)


@functools.partial(jax.jit, static_argnames=("layout", "r", "d"))
def _auto(image, max_value, sigma, *, layout, r, d):
    x = to_nhwc(image.astype(jnp.float32), layout)
    # one image at a time (lax.map): lax.switch then runs only the chosen method
    y = lax.map(lambda im: _auto_one(im[None], max_value, sigma, r=r, d=d)[0], x)
    return to_output(from_nhwc(y, layout, image.shape), image.dtype)


def auto_choice(image, *, max_value=None, layout=None):
    """What ``denoise(method="auto")`` picks for each image, computed on the host:
    a list of ``(method, sigma, impulse_fraction)`` with method ``"median3"``,
    ``"median5"`` or ``"nl_means"``."""
    image, layout = _prepare(image, layout)
    s = np.atleast_1d(np.asarray(estimate_sigma(image, layout=layout)))
    f = np.atleast_1d(np.asarray(impulse_fraction(image, max_value=max_value, layout=layout)))
    out = []
    for si, fi in zip(s, f):
        method = "nl_means" if fi <= IMPULSE_MIN_FRACTION else ("median3" if fi < 0.2 else "median5")
        out.append((method, float(si), float(fi)))
    return out


@compiled_when_eager
def _chapter(image, *, layout=None, sigma=1.0, size=5, sharpen=True, mode="reflect"):
    """The seed chapter's preset (:func:`imgproc.pipeline.presets.denoise`, the same pixels):
    a Gaussian then the 5×5 sharpen in float32, cast once at the end; ``sigma`` here is the
    Gaussian's sigma in pixels, as in the preset (not a noise level)."""
    y = gaussian_blur(to_compute(image), sigma, size=size, mode=mode, layout=layout)
    y = sharpen_filter(y, size=5, mode=mode, layout=layout) if sharpen else y
    return to_output(y, image.dtype)


def _denoise_auto(image, *, sigma=None, max_value=None, layout=None, patch_size=7, search_size=21):
    patch_size = check_odd("patch_size", patch_size, high=51)
    search_size = check_odd("search_size", search_size, high=51)
    check_per_image("sigma", sigma, allow_none=True)
    image, layout = _prepare(image, layout)
    mv = check_per_image("max_value", resolve_max(max_value, image.dtype), low_open=True)
    s = -1.0 if sigma is None else sigma
    return _auto(image, jnp.asarray(mv, jnp.float32), jnp.asarray(s, jnp.float32), layout=layout,
                 r=patch_size // 2, d=search_size // 2)


def _denoise_bm3d(image, **options):
    return bm3d(image, **options)


def _denoise_tv(image, *, sigma=None, **options):
    return tv_chambolle(image, **options)


def _denoise_bilateral(image, *, sigma=None, sigma_color=None, sigma_spatial=2.0, **options):
    if sigma_color is None:
        check_per_image("sigma", sigma, allow_none=True)
        if sigma is None:
            image, layout = _prepare(image, options.get("layout"))
            sigma = estimate_sigma(image, layout=layout)
            sigma = float(np.mean(np.asarray(sigma))) if not is_traced(sigma) else sigma
        sigma_color = jnp.maximum(2.0 * jnp.asarray(sigma, jnp.float32), 1e-6)
        options.setdefault("size", 2 * bilateral_radius(sigma_spatial, None) + 1)
    return bilateral(image, sigma_color=sigma_color, sigma_spatial=sigma_spatial, **options)


def _denoise_median(image, *, sigma=None, size=3, **options):
    return median(image, size=size, **options)


# Methods whose result depends on the value range (max_value).
_USE_VALUE_RANGE = frozenset({"auto", "nl_means", "tv", "bm3d"})
_METHODS = {
    "auto": _denoise_auto,
    "nl_means": nl_means,
    "bm3d": _denoise_bm3d,
    "tv": _denoise_tv,
    "bilateral": _denoise_bilateral,
    "median": _denoise_median,
    "chapter": _chapter,
}


@callers_type
def denoise(image, *, method="auto", sigma=None, max_value=None, layout=None, **options):
    """Denoise with one of :data:`DENOISE_METHODS`.

    ``"auto"`` decides per image, inside the compiled program (so it also works as a
    pipeline stage and for every image of a batch): when the image has salt-and-pepper
    noise (the rule in :func:`impulse_fraction`) each detected impulse is replaced by the
    median of its 3×3 window (5×5 from 20 % impulses; other pixels are kept); otherwise
    :func:`nl_means` with ``sigma`` (estimated by :func:`estimate_sigma` when None) and
    ``h = 0.6 * sigma`` (measured best, benchmarks/RESULTS.md), patch 7, search window 21 (``patch_size``/``search_size``
    change them). ``"nl_means"``, ``"tv"`` (:func:`tv_chambolle`), ``"bilateral"``
    (``sigma_color = 2 * sigma`` unless given, ``sigma_spatial=2``), ``"median"``
    (``size=3``), ``"bm3d"`` (:func:`bm3d`) and ``"chapter"`` (the seed
    chapter's 5×5 Gaussian then 5×5 sharpen, :func:`imgproc.pipeline.presets.denoise`) pass the
    other ``options`` on.

    Args:
        image: HW, HWC, NHWC (or CHW/NCHW with ``layout``); any supported dtype.
        method: one of ``DENOISE_METHODS``.
        sigma: noise sigma in the image's units (None: estimated where needed).
        max_value: the value range (None: the dtype's), passed to the methods that use
            it (auto, nl_means, tv, bm3d).
        layout: as for :func:`imgproc.correlate`.
        **options: passed to the method.

    Returns:
        The denoised image, same shape and dtype.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.full((16, 16, 3), 100, np.uint8)
        >>> bool((np.asarray(imgproc.denoise(x)) == 100).all())
        True
    """
    fn = _METHODS[_check_denoise_method(method)]
    if max_value is not None and method in _USE_VALUE_RANGE:
        options["max_value"] = max_value
    if method == "chapter":
        return fn(image, layout=layout, **options)
    return fn(image, sigma=sigma, layout=layout, **options)


# ----------------------------------------------------------------------------- pipeline stages
# Ops that estimate the noise from the whole image (nl_means without sigma/h, denoise) or
# iterate over it (tv_chambolle) are registered without a radius: a pipeline runs them at
# the image's exact size, never in padded size buckets.

def _check_denoise_method(method):
    if not isinstance(method, str) or method not in _METHODS:
        raise ValueError(f"method must be one of {', '.join(DENOISE_METHODS)}; got {method!r}")
    return method


OPS = (
    OpInfo("nl_means", nl_means, checks=MODE_CHECK),
    OpInfo("tv_chambolle", tv_chambolle),
    OpInfo("bilateral", bilateral, radius=lambda o: bilateral_radius(o.get("sigma_spatial", 1.0), o.get("size")),
           checks=MODE_CHECK),
    OpInfo("median", median, radius=lambda o: int(o.get("size", 3)) // 2, checks=MODE_CHECK),
    OpInfo("bm3d", bm3d, checks={**MODE_CHECK, "stage": check_bm3d_stage}),
    OpInfo("denoise", denoise, checks={"method": _check_denoise_method}),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
