"""The bilateral filter with OpenCV's definition: :func:`bilateral` and its window radius
:func:`bilateral_radius`."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from jax import lax

from imgproc.core.array_type import callers_type
from imgproc.core.arrays import from_nhwc, repeated, slice_at, to_nhwc, to_output
from imgproc.core.boundary import padded_planes
from imgproc.core.registry import KEEPS_TARGETS, OpInfo, register_ops
from imgproc.core.validate import MODE_CHECK, check_odd, check_per_image, is_traced
from imgproc.cpu import in_loops
from imgproc.restoration.common import prepare
from imgproc.restoration.non_local_means import half_window

__all__ = ["bilateral", "bilateral_radius"]


def bilateral_radius(sigma_spatial, size) -> int:
    """OpenCV's window radius: ``size // 2`` if ``size`` is given, else
    ``max(round(1.5 * sigma_spatial), 1)``."""
    if size is not None:
        return check_odd("size", size) // 2
    if is_traced(sigma_spatial):
        raise ValueError("size must be given when sigma_spatial is traced (the window size is static)")
    return max(int(round(1.5 * float(sigma_spatial))), 1)


BILATERAL_ONE_LOOP_MAX_OFFSETS = 24
"""Windows of more offsets than this in their half (from 11x11) sum their weighted values in
loops of :data:`BILATERAL_LOOP_OFFSETS` offsets each on CPU (:func:`imgproc.cpu.in_loops`),
the sums so far handed from one loop to the next in the same order: one loop of them all
ran several times slower from about 21x21 (LLVM's code for very long loops, as for the
shifted sums: benchmarks/NOTES.md, "Bilateral"); 9x9 and smaller run faster in one loop.
The derivative, at every size, sums the offsets in one ``fori_loop`` (:func:`_sums_in_a_loop`)."""
BILATERAL_LOOP_OFFSETS = 16


def _bilateral_nhwc(x, sigma_color, sigma_spatial, *, r, mode):
    """Bilateral filter of (N, H, W, C) ``x`` (any dtype), computed in float32 on planes
    (N, C, H, W): with the channels innermost XLA's loops do not vectorise (slower).
    Returns (N, H, W, C) float32.

    The weight is symmetric, ``w(p, p + t) = w(p + t, p)``, so one weight map per offset
    of one half of the window serves ``t`` and ``-t`` (as in :mod:`imgproc.restoration.non_local_means`):
    each map covers the image extended by ``r``, and pixel ``q`` receives ``w_t(q) x(q + t)``
    and ``w_t(q - t) x(q - t)``; the centre's weight is 1. Half the exponentials of the
    plain loop (why: benchmarks/NOTES.md, "Bilateral"). Large windows in loops of
    :data:`BILATERAL_LOOP_OFFSETS` offsets on CPU."""
    n, h, w, c = x.shape
    p = padded_planes(x, 2 * r, mode)  # the maps cover the image extended by r, their offsets r more
    # per-image sigmas (N,) (denoise's estimate for a batch) or scalars
    sigma_color = jnp.reshape(sigma_color, (-1, 1, 1, 1)) if jnp.ndim(sigma_color) else sigma_color
    sigma_spatial = jnp.reshape(sigma_spatial, (-1, 1, 1, 1)) if jnp.ndim(sigma_spatial) else sigma_spatial
    # the two factors as float32 values, whether the sigmas are numbers or arrays: a loop
    # of offsets and its derivative (_weighted_sums) then round their products alike
    cc = jnp.asarray(-0.5 / (sigma_color * sigma_color), p.dtype)
    sc = jnp.asarray(-0.5 / (sigma_spatial * sigma_spatial), p.dtype)
    offsets = tuple((i, j) for i, j in half_window(r).tolist() if math.sqrt(i * i + j * j) <= r)  # OpenCV's round window
    sums = (p[:, :, 2 * r:2 * r + h, 2 * r:2 * r + w], jnp.ones((n, 1, h, w), p.dtype))
    num, den = _weighted_sums(offsets, sums, p, cc, sc)
    return jnp.moveaxis(num / repeated(den, c, 1), 1, 3)


def _add_offsets(sums, offsets, operands):
    """``sums = (num, den)`` with the terms of each window offset ``(i, j)`` of ``offsets``
    added in turn (ints, or traced: :func:`_sums_in_a_loop`); ``operands = (p, cc, sc)``:
    the planes extended by ``2 r`` and the two weights' factors."""
    p, cc, sc = operands
    num, den = sums
    n, _, h, w = den.shape
    c = p.shape[1]
    r = (p.shape[2] - h) // 4
    eh, ew = h + 2 * r, w + 2 * r
    extended = p[:, :, r:r + eh, r:r + ew]  # map index (a + r, b + r) is pixel (a, b)
    for i, j in offsets:
        shifted = slice_at(p, (0, 0, r + i, r + j), (n, c, eh, ew))
        dist = sum(jnp.abs(shifted[:, k:k + 1] - extended[:, k:k + 1]) for k in range(c))
        wgt = jnp.exp(sc * (i * i + j * j) + cc * dist * dist)  # the exponential last: read three times
        w_fwd = wgt[:, :, r:r + h, r:r + w]
        w_bwd = slice_at(wgt, (0, 0, r - i, r - j), (n, 1, h, w))
        num = (num + repeated(w_fwd, c, 1) * slice_at(p, (0, 0, 2 * r + i, 2 * r + j), (n, c, h, w))
               + repeated(w_bwd, c, 1) * slice_at(p, (0, 0, 2 * r - i, 2 * r - j), (n, c, h, w)))
        den = den + w_fwd + w_bwd
    return num, den


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _weighted_sums(offsets, sums, p, cc, sc):
    """:func:`_add_offsets` of all ``offsets``: in one loop up to
    :data:`BILATERAL_ONE_LOOP_MAX_OFFSETS`, else in loops of :data:`BILATERAL_LOOP_OFFSETS`
    on CPU, the sums so far handed from one loop to the next (the same additions as one
    loop). Its derivative is the one of :func:`_sums_in_a_loop`."""
    if len(offsets) <= BILATERAL_ONE_LOOP_MAX_OFFSETS:
        return _add_offsets(sums, offsets, (p, cc, sc))
    step = BILATERAL_LOOP_OFFSETS
    parts = [offsets[first:first + step] for first in range(0, len(offsets), step)]
    return in_loops(_add_offsets, parts, sums, (p, cc, sc))


@_weighted_sums.defjvp
def _weighted_sums_jvp(offsets, primals, tangents):
    _, tangent = jax.jvp(functools.partial(_sums_in_a_loop, offsets), primals, tangents)
    return _weighted_sums(offsets, *primals), tangent


def _sums_in_a_loop(offsets, sums, p, cc, sc):
    """:func:`_add_offsets` of all ``offsets`` as a ``fori_loop`` over them: the filter's
    derivative, whose program does not grow with the window; each step is computed again
    in reverse mode's backward pass (``jax.checkpoint``) rather than keeping each offset's
    weights (benchmarks/NOTES.md, "Bilateral"). JAX's own derivative of the unrolled
    offsets made a padded copy of each slice, a loop each: 80x the filter's time."""
    table = jnp.asarray(offsets, jnp.int32)

    @jax.checkpoint
    def step(k, carry):
        return _add_offsets(carry, ((table[k, 0], table[k, 1]),), (p, cc, sc))

    return lax.fori_loop(0, len(offsets), step, sums)


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
    image, layout = prepare(image, layout, mode)
    return _bilateral(image, jnp.asarray(sigma_color, jnp.float32), jnp.asarray(sigma_spatial, jnp.float32),
                      r=r, mode=mode, layout=layout)


OPS = (
    OpInfo("bilateral", bilateral, radius=lambda o: bilateral_radius(o.get("sigma_spatial", 1.0), o.get("size")),
           checks=MODE_CHECK),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
