"""``denoise``: one entry point to every denoiser (:data:`DENOISE_METHODS`), with
``method="auto"`` deciding per image inside the compiled program (switching median for
salt-and-pepper noise, else NL-means at the estimated noise level), and
:func:`auto_choice`, the same decision computed on the host."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from imgproc.core.array_type import callers_type
from imgproc.core.arrays import canvas_side, from_nhwc, resolve_max, to_compute, to_nhwc, to_output
from imgproc.core.eager import compiled_when_eager
from imgproc.core.registry import KEEPS_TARGETS, OpInfo, register_ops
from imgproc.core.validate import check_odd, check_per_image
from imgproc.filters.linear import gaussian_blur, sharpen as sharpen_filter
from imgproc.restoration.bilateral_filter import bilateral, bilateral_radius
from imgproc.restoration.block_matching import bm3d
from imgproc.restoration.common import per_image, prepare
from imgproc.restoration.median_filter import (IMPULSE_MAX_RESIDUAL, IMPULSE_MIN_FRACTION, impulse_mask, impulse_share,
                                               median, median_nhwc)
from imgproc.restoration.noise_level import estimate_sigma, sigma_nhwc
from imgproc.restoration.non_local_means import (H_PER_SIGMA, nl_means, nl_means_nhwc, nl_means_on_canvas,
                                                 nl_means_reach)
from imgproc.restoration.total_variation import tv_chambolle

__all__ = ["DENOISE_METHODS", "auto_choice", "denoise"]

DENOISE_METHODS = ("auto", "nl_means", "bm3d", "tv", "bilateral", "median", "chapter")


def _decide(x, max_value, true_hw=None):
    """What ``auto`` decides for one (1, H, W, C) image, and what it decides from:
    ``(branch, sigma, impulse fraction, x with its impulses replaced by their 3×3 median,
    the impulse mask)``. Branches 0 and 1: impulse noise (the rule of
    :func:`imgproc.restoration.median_filter.impulse_fraction`), the switching median of
    3×3 or 5×5 (from 20 % impulses); 2: NL-means. The noise of the image and of the image
    cleaned of its impulses are estimated in one call (the same numbers as two: each plane
    apart), and the 3×3 median is computed once for the decision and the branches: a
    program with one of each compiles faster than with three (benchmarks/NOTES.md,
    "Denoise: compiling auto").

    ``true_hw``: ``(sizes, offset)``, ``x`` is a size bucket's canvas holding the image
    at ``(offset, offset)`` with its reflected border written around it (at least 4
    pixels a side): the same decision and numbers, from the image's samples only (the
    3×3 median of a reflected border is the reflection of the image's, so is the cleaned
    image's)."""
    med3 = median_nhwc(x, size=3, mode="reflect")
    mask = impulse_mask(x, med3, max_value)
    if true_hw is None:
        frac = impulse_share(mask, mask.size)
    else:
        sizes, offset = true_hw
        rows = (jnp.arange(x.shape[1]) >= offset) & (jnp.arange(x.shape[1]) < offset + sizes[0])
        cols = (jnp.arange(x.shape[2]) >= offset) & (jnp.arange(x.shape[2]) < offset + sizes[1])
        frac = impulse_share(mask & rows[None, :, None, None] & cols[None, None, :, None],
                             sizes[0] * sizes[1] * x.shape[3])
    cleaned = jnp.where(mask, med3, x)  # only the impulses replaced
    sigma, residual = sigma_nhwc(jnp.concatenate([x, cleaned]), true_hw)
    impulsive = (frac > IMPULSE_MIN_FRACTION) & (residual < IMPULSE_MAX_RESIDUAL * max_value)
    return jnp.where(impulsive, jnp.where(frac < 0.2, 0, 1), 2), sigma, frac, cleaned, mask


def _auto_one(x, max_value, sigma_override, true_hw, *, r, d):
    """``auto`` on one (1, H, W, C) image inside the program: impulse noise -> switching
    median (3x3 below 20 % impulses, else 5x5), otherwise NL-means with h = 0.6 sigma
    (``true_hw``: a canvas, as for :func:`_decide`)."""
    branch, estimate, _, cleaned, mask = _decide(x, max_value, true_hw)
    sigma = jnp.where(sigma_override >= 0, sigma_override, estimate)
    return lax.switch(branch, [
        lambda im, cleaned, mask: cleaned,
        lambda im, cleaned, mask: jnp.where(mask, median_nhwc(im, size=5, mode="reflect"), im),
        lambda im, cleaned, mask: nl_means_nhwc(im, sigma[None], H_PER_SIGMA * sigma[None], r=r, d=d,
                                                mode="reflect"),
    ], x, cleaned, mask)


@functools.partial(jax.jit, static_argnames=("layout", "r", "d", "offset"))
def _auto(image, max_value, sigma, sizes=None, *, layout, r, d, offset=None):
    x = to_nhwc(image.astype(jnp.float32), layout)
    true_hw = None if sizes is None else (sizes, offset)
    # one image at a time (lax.map): lax.switch then runs only the chosen method
    y = lax.map(lambda im: _auto_one(im[None], max_value, sigma, true_hw, r=r, d=d)[0], x)
    return to_output(from_nhwc(y, layout, image.shape), image.dtype)


@functools.partial(jax.jit, static_argnames=("offset",))
def _choices(canvas, max_value, sizes, *, offset):
    return lax.map(lambda im: _decide(im[None], max_value, (sizes, offset))[:3], canvas)


AUTO_BRANCHES = ("median3", "median5", "nl_means")  # auto_choice's names of _decide's branches
# the reflected border _decide reads around an image on a canvas: the wavelet's 3 and the median's 1
DECIDE_BORDER = 4


def auto_choice(image, *, max_value=None, layout=None):
    """What ``denoise(method="auto")`` picks for each image, by the same rule and numbers
    as its program: a list of ``(method, sigma, impulse_fraction)`` with method
    ``"median3"``, ``"median5"`` or ``"nl_means"``.

    Computed on a square canvas (:func:`imgproc.core.arrays.canvas_side` of the longer
    side, with a reflected border) holding the image, so that the images of a folder of
    many sizes compile a program per canvas side, not per image size (``imgproc denoise
    --verbose``); the numbers are the image's own, bit for bit."""
    image, layout = prepare(image, layout)
    mv = resolve_max(max_value, image.dtype)
    x = np.asarray(to_nhwc(np.asarray(image, np.float32), layout))  # on the host: no program a size
    n, h, w, c = x.shape
    b, side = DECIDE_BORDER, canvas_side(max(h, w) + 2 * DECIDE_BORDER)
    canvas = np.zeros((n, side, side, c), np.float32)
    canvas[:, :h + 2 * b, :w + 2 * b] = np.pad(x, ((0, 0), (b, b), (b, b), (0, 0)), mode="symmetric")  # scipy's reflect
    branch, sigma, frac = (np.asarray(v) for v in _choices(canvas, np.asarray(mv, np.float32),
                                                               np.array([h, w], np.int32), offset=b))
    return [(AUTO_BRANCHES[int(i)], float(s), float(f)) for i, s, f in zip(branch, sigma, frac)]


@compiled_when_eager
def _chapter(image, *, layout=None, sigma=1.0, size=5, sharpen=True, mode="reflect"):
    """The seed chapter's preset (:func:`imgproc.pipeline.presets.denoise`, the same pixels):
    a Gaussian then the 5×5 sharpen in float32, cast once at the end; ``sigma`` here is the
    Gaussian's sigma in pixels, as in the preset (not a noise level)."""
    y = gaussian_blur(to_compute(image), sigma, size=size, mode=mode, layout=layout)
    y = sharpen_filter(y, size=5, mode=mode, layout=layout) if sharpen else y
    return to_output(y, image.dtype)


def _denoise_auto(image, *, sigma=None, max_value=None, layout=None, patch_size=7, search_size=21, true_hw=None):
    patch_size = check_odd("patch_size", patch_size, high=51)
    search_size = check_odd("search_size", search_size, high=51)
    check_per_image("sigma", sigma, allow_none=True)
    image, layout = prepare(image, layout)
    mv = resolve_max(max_value, image.dtype)
    s = -1.0 if sigma is None else sigma
    sizes, offset = (None, None) if true_hw is None else true_hw
    return _auto(image, jnp.asarray(mv, jnp.float32), jnp.asarray(s, jnp.float32), sizes, layout=layout,
                 r=patch_size // 2, d=search_size // 2, offset=offset)


def _denoise_on_canvas(image, true_hw, *, method="auto", sigma=None, max_value=None, layout=None, **options):
    """``denoise`` in a size bucket's program (``OpInfo.on_canvas``): ``image`` a canvas
    holding the image at ``true_hw = (sizes, offset)`` with its border written around it
    (:func:`_denoise_radius` pixels); the image's own result there, bit for bit on integer
    images (float32: NL-means within a relative 3e-7). The noise estimates of ``auto``,
    ``nl_means`` and ``bilateral`` read the image's own samples; ``median`` is local. The
    other methods have no radius, so they never run on a canvas."""
    if method == "auto":
        return _denoise_auto(image, sigma=sigma, max_value=max_value, layout=layout, true_hw=true_hw, **options)
    if method == "nl_means":
        return nl_means_on_canvas(image, true_hw, sigma=sigma, layout=layout, **options)
    if method == "bilateral":
        return _denoise_bilateral(image, sigma=sigma, layout=layout, true_hw=true_hw, **options)
    if method == "median":
        return _denoise_median(image, sigma=sigma, layout=layout, **options)
    raise ValueError(f"denoise runs in size buckets with method auto, nl_means, bilateral or median; "
                     f"got {method!r}")


def _denoise_radius(options):
    """The pixels a bucketed ``denoise`` reads around the image: ``auto``'s (NL-means'
    padding, at least the decision's border), ``nl_means``', ``bilateral``'s window
    radius, ``median``'s; None (run at the exact size) for ``bm3d`` and ``tv``, whose
    block grid or iterations see the whole image, and ``chapter``, two filters in one
    stage (its pipeline, :func:`imgproc.pipeline.presets.denoise`, runs in buckets)."""
    method = options.get("method", "auto")
    if method == "auto":
        return max(nl_means_reach(options), DECIDE_BORDER)
    if method == "nl_means":
        return nl_means_reach(options)
    if method == "bilateral":
        return bilateral_radius(options.get("sigma_spatial", 2.0), options.get("size"))
    if method == "median":
        return check_odd("size", options.get("size", 3)) // 2
    return None


def _denoise_bm3d(image, **options):
    return bm3d(image, **options)


def _denoise_tv(image, *, sigma=None, **options):
    return tv_chambolle(image, **options)


def _denoise_bilateral(image, *, sigma=None, sigma_color=None, sigma_spatial=2.0, true_hw=None, **options):
    """``sigma_color = 2 * sigma`` per image (the estimate's when ``sigma`` is None;
    ``true_hw``: a canvas, the estimate from the image's own samples)."""
    if sigma_color is None:
        check_per_image("sigma", sigma, allow_none=True)
        if sigma is None:
            image, layout = prepare(image, options.get("layout"))
            sigma = estimate_sigma(image, layout=layout) if true_hw is None else \
                per_image(sigma_nhwc(to_nhwc(image.astype(jnp.float32), layout), true_hw), layout)
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


def _check_denoise_method(method):
    if not isinstance(method, str) or method not in _METHODS:
        raise ValueError(f"method must be one of {', '.join(DENOISE_METHODS)}; got {method!r}")
    return method


# denoise estimates the noise from the whole image: in a size bucket (methods auto,
# nl_means, bilateral and median: _denoise_radius) it runs its canvas form, which
# estimates it from the image's own samples.
OPS = (
    OpInfo("denoise", denoise, checks={"method": _check_denoise_method}, radius=_denoise_radius,
           on_canvas=_denoise_on_canvas),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
