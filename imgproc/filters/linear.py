"""Filters: thin functions over the convolution engine.

Each takes an image in any layout of :mod:`imgproc.core.arrays` (``layout=None`` infers HW,
HWC or NHWC) and any supported dtype (uint8, uint16, float16, bfloat16, float32; float64
computed in float32 and returned as float64), and returns the same shape and dtype in the
caller's array type (NumPy or a list in: NumPy out; JAX in: JAX out; :mod:`imgproc.core.array_type`). Options are
keyword-only; shape-setting ones (``size``, ``mode``, ``layout``, ``method``) are static,
numeric ones (``sigma``, ``amount``, ``center``, ``cval``) are traced, so changing them
does not recompile.
"""

from __future__ import annotations

import numpy as np
import jax.numpy as jnp

from imgproc import kernels as _kernels
from imgproc.core.array_type import callers_type
from imgproc.core.arrays import magnitude
from imgproc.core.images import check_image
from imgproc.filters.convolution import (
    apply_plan,
    apply_stage,
    convolve,
    correlate,
    is_concrete,
    plan_lowering,
    run_lowering,
)
from imgproc.core.keys import doctests, random_op, uniform
from imgproc.core.registry import KEEPS_TARGETS, OpInfo, register_ops
from imgproc.core.validate import (MODE_CHECK, check_method, check_mode, check_number, check_odd, check_odd_pair, check_range,
                               check_sigma_pair, is_traced)

__all__ = ["box_blur", "edges", "emboss", "gaussian_blur", "random_gaussian_blur", "random_sharpen", "sharpen", "unsharp_mask"]


def gaussian_radius(sigma, size, truncate) -> int:
    """Static radius of a Gaussian: from ``size`` if given, else scipy's rule
    ``int(truncate * sigma + 0.5)``, which needs a concrete sigma."""
    if size is not None:
        return check_odd("size", size) // 2
    if not is_concrete(sigma):
        raise ValueError("size must be given when sigma is traced (the kernel size is static)")
    return _kernels.gaussian_radius(float(sigma), truncate)


def gaussian_weights(sigma, radius: int, order: int = 0):
    """1-D Gaussian weights of length ``2 * radius + 1`` for a (possibly traced)
    ``sigma``, normalised (``order=0``) or of the Gaussian's ``order``-th derivative
    (scipy's ``gaussian_filter1d(order=)`` correlation weights); ``sigma == 0`` gives the
    identity ``[0, .., 1, .., 0]`` for every order (scipy skips such an axis).

    A concrete ``sigma`` gives NumPy weights (:func:`imgproc.kernels.gaussian_1d`,
    :func:`imgproc.kernels.gaussian_derivative_1d`): inside
    a jitted function or pipeline XLA then compiles them in as constants, and the passes
    run faster than with weights computed in the program (2048x2048x3, 5 taps: 31 -> 26
    ms). The value is still passed to the stage as an array, so a new sigma does not
    recompile."""
    if is_concrete(sigma):
        if order:
            return _kernels.gaussian_derivative_1d(float(sigma), order, size=2 * radius + 1)
        return _kernels.gaussian_1d(float(sigma), size=2 * radius + 1)
    x = jnp.arange(-radius, radius + 1, dtype=jnp.float32)
    s = jnp.asarray(sigma, jnp.float32)
    safe = jnp.where(s > 0, s, 1.0)
    identity = (x == 0).astype(jnp.float32)
    if order:
        return jnp.where(s > 0, _kernels.gaussian_derivative_taps(x, safe, order, jnp)[::-1], identity)
    w = jnp.where(s > 0, jnp.exp(-0.5 * (x / safe) ** 2), identity)
    return w / jnp.sum(w)


def check_order_pair(order) -> tuple[int, int]:
    """scipy's ``order`` of a Gaussian: a non-negative int, or a pair ``(rows, cols)``."""
    pair = tuple(order) if isinstance(order, (list, tuple)) else (order, order)
    if len(pair) != 2 or not all(isinstance(o, (int, np.integer)) and not isinstance(o, bool) and o >= 0
                                 for o in pair):
        raise ValueError(f"order must be a non-negative integer or a pair (rows, cols) of them (0: smooth, 1: first "
                         f"derivative, 2: second...); got {order!r}")
    return int(pair[0]), int(pair[1])


def gaussian_radii(sigma, size, truncate) -> tuple[int, int]:
    """Static ``(rows, cols)`` radii of a Gaussian of ``sigma`` (a number or a pair) and
    ``size`` (None, an odd int or a pair of them)."""
    sy, sx = check_sigma_pair("sigma", sigma)
    if size is not None:
        ky, kx = check_odd_pair("size", size)
        return ky // 2, kx // 2
    return gaussian_radius(sy, None, truncate), gaussian_radius(sx, None, truncate)


def gaussian_term(sigma, size, truncate, order=(0, 0)):
    """The separable term ``(down the rows, along the cols)`` of a Gaussian of ``sigma``
    (a number or a pair) and ``order`` (a pair)."""
    sy, sx = check_sigma_pair("sigma", sigma)
    ry, rx = gaussian_radii(sigma, size, truncate)
    return gaussian_weights(sy, ry, order[0]), gaussian_weights(sx, rx, order[1])


def _plan_gaussian(sigma, size, truncate, method, hints, order=(0, 0)):
    terms = [gaussian_term(sigma, size, truncate, order)]
    return plan_lowering(None, terms=terms, method=method, hints=hints)


def _prepare(image, layout, mode):
    image, layout = check_image(image, layout, read_in_place=True)  # for apply_stage, an IntoBuffer program
    return image, layout, check_mode(mode)


@callers_type
def box_blur(image, size, *, mode="reflect", cval=0.0, layout=None, method="auto", hints=None):
    """Mean over a ``size``×``size`` window (odd ``size``, or a pair ``(height, width)`` of
    odd sides), per channel.

    Matches ``scipy.ndimage.uniform_filter(x, size, mode=mode, cval=cval)`` over the spatial
    axes only (``size=1`` on the others).

    Args:
        image: HW, HWC, NHWC (or CHW/NCHW with ``layout``); uint8, uint16, float16,
            bfloat16, float32 or float64 (computed in float32), NumPy, list or JAX.
        size: odd window side, or ``(height, width)`` (static).

    Returns:
        The image's shape, dtype and array type (NumPy in, NumPy out).
        mode, cval, layout, method, hints: as for :func:`imgproc.correlate`.

    Example:
        >>> import numpy as np, imgproc
        >>> float(imgproc.box_blur(np.ones((4, 4), np.float32), 3).mean())
        1.0
    """
    sh, sw = check_odd_pair("size", size)
    terms = [(np.full(sh, 1.0 / sh, np.float32), np.full(sw, 1.0 / sw, np.float32))]
    plan = plan_lowering(None, terms=terms, method=method, hints=hints)
    return apply_plan(image, plan, mode=mode, cval=cval, layout=layout, hints=hints)


@callers_type
def gaussian_blur(image, sigma, *, order=0, size=None, truncate=4.0, mode="reflect", cval=0.0, layout=None,
                  method="auto", hints=None):
    """Gaussian blur of each channel, or with ``order`` a derivative of it.

    Matches ``scipy.ndimage.gaussian_filter(x, sigma, order=order, mode=mode, cval=cval,
    truncate=truncate)`` over the spatial axes only (sigma 0 on the channel/batch axes).
    ``sigma`` may be a pair ``(rows, cols)``: ``gaussian_blur(x, (1, 3))`` is
    ``scipy.ndimage.gaussian_filter(plane, (1, 3))`` per plane. The kernel radius is
    ``int(truncate * sigma + 0.5)`` per axis (scipy's rule) unless ``size`` (odd, or a
    pair of odd sides) is given; ``sigma`` is traced, so a new sigma with the same size does not
    recompile (inside ``jit``, give ``size``). ``sigma=0`` is the identity (on an axis of
    sigma 0 the order is ignored, as scipy skips that axis).

    ``order`` (an int, or a pair ``(rows, cols)``) correlates with the Gaussian's
    ``order``-th derivative along each axis, as scipy: ``order=(0, 1)`` is the smoothed
    horizontal derivative. With ``mode="constant"`` the passes pad their own input with
    ``cval`` one axis after the other, as scipy's do. The result keeps the image's dtype
    like every blur: a derivative of an integer image saturates at 0 (scipy wraps
    around); for signed values pass a float image, or use :func:`imgproc.sobel`,
    :func:`imgproc.gaussian_gradient_magnitude` and the other derivative filters, which
    return float32.

    Args:
        image: HW, HWC, NHWC (or CHW/NCHW with ``layout``); uint8, uint16, float16,
            bfloat16 or float32.
        sigma: standard deviation in pixels, >= 0, or a pair ``(rows, cols)``.
        order: 0 (the blur), or the derivative's order per axis, ``(rows, cols)`` (static).
        size: odd kernel side or ``(height, width)``, or None for scipy's rule.
        truncate: radius in standard deviations when ``size`` is None.
        mode, cval, layout, method, hints: as for :func:`imgproc.correlate`.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((9, 9), np.float32); x[4, 4] = 1
        >>> round(float(imgproc.gaussian_blur(x, 1.0)[4, 4]), 4)  # 1 / (2 pi) for sigma 1
        0.1592
        >>> ramp = np.tile(np.arange(9, dtype=np.float32), (9, 1))  # rises by 1 a column
        >>> round(float(imgproc.gaussian_blur(ramp, 1.0, order=(0, 1))[4, 4]), 3)  # scipy: 0.9999 (truncated)
        1.0
    """
    order = check_order_pair(order)
    if order == (0, 0):
        plan = _plan_gaussian(sigma, size, truncate, method, hints)
        return apply_plan(image, plan, mode=mode, cval=cval, layout=layout, hints=hints)
    col, row = gaussian_term(sigma, size, truncate, order)
    plan = plan_lowering(None, terms=[(col, row)], method=method, hints=hints)
    # scipy's gaussian_filter passes run down the rows (axis 0) first, then along the cols
    return apply_plan(image, plan, mode=mode, cval=cval, layout=layout, hints=hints, fixes=[(2, col, row)])


def _sharpen_kernel(size, center):
    if is_concrete(center):
        return _kernels.sharpen(size, center=center)
    n = size * size
    c = jnp.asarray(center, jnp.float32)
    delta = jnp.asarray(_kernels.identity(size))
    return (delta * (c + 1.0) - 1.0) / (c - (n - 1))


@callers_type
def sharpen(image, *, size=5, center=None, mode="reflect", cval=0.0, layout=None, method="auto", hints=None):
    """Sharpen with :func:`imgproc.kernels.sharpen`: ``-1`` around ``center``, divided by the
    sum (default ``center = 2 * size²``: the seed chapter's 5×5 matrix). The mean is kept.

    Matches ``scipy.ndimage.correlate(x[..., c], kernels.sharpen(size, center=center))``.

    Example:
        >>> import numpy as np, imgproc
        >>> round(float(imgproc.sharpen(np.full((6, 6), 0.5, np.float32)).max()), 5)
        0.5
    """
    sh, sw = check_odd_pair("size", size)
    if sh != sw:
        raise ValueError(f"sharpen's kernel is square: size must be an odd int or a pair of equal sides; got {size!r}")
    size = sh
    if center is None:
        center = 2.0 * size * size
    check_number("center", center, low=size * size - 1, low_open=True)
    plan = plan_lowering(_sharpen_kernel(size, center), method=method, hints=hints)
    return apply_plan(image, plan, mode=mode, cval=cval, layout=layout, hints=hints)


@callers_type
def emboss(image, *, mode="reflect", cval=0.0, layout=None, method="auto", hints=None):
    """Emboss with :func:`imgproc.kernels.emboss` (3×3, sums to 1: flat areas kept).

    Matches ``scipy.ndimage.correlate(x[..., c], kernels.emboss())`` per channel.
    """
    plan = plan_lowering(_kernels.emboss(), method=method, hints=hints)
    return apply_plan(image, plan, mode=mode, cval=cval, layout=layout, hints=hints)


def _unsharp_body(x, kernel, terms, cval, amount, *, mode, method, in_place, finish, float_rows):
    # with finish (nothing else follows), the blur's long last pass may run on its own
    # (keep): the combination and cast then run as one elementwise loop after it
    blurred = run_lowering(x, (method, kernel, terms), mode, cval, in_place=in_place, keep=finish is not None,
                           float_rows=float_rows)
    return x + amount * (x - blurred)


@callers_type
def unsharp_mask(image, *, sigma=1.0, amount=1.0, size=None, truncate=4.0, mode="reflect", cval=0.0, layout=None,
                 method="auto", hints=None):
    """Unsharp masking: ``x + amount * (x - gaussian_blur(x, sigma))``, computed in float32
    and cast once (no clipping for floats; integers saturate).

    The formula of ``skimage.filters.unsharp_mask(x, radius=sigma, amount=amount,
    preserve_range=True)``, with our boundary ``mode`` for the blur. ``amount=0`` or
    ``sigma=0`` is the identity.
    """
    check_number("amount", amount)
    image, layout, mode = _prepare(image, layout, mode)
    method, kernel, terms = _plan_gaussian(sigma, size, truncate, method, hints)
    traced = {
        "kernel": kernel,
        "terms": terms,
        "cval": jnp.asarray(cval, jnp.float32),
        "amount": jnp.asarray(amount, jnp.float32),
    }
    return apply_stage(_unsharp_body, image, layout, traced, hints=hints, mode=mode, method=method)


def _edges_body(x, plans, cval, *, mode, methods, in_place, finish, float_rows):
    del finish, float_rows  # the passes are not the result; 3 taps
    gy = run_lowering(x, (methods[0], *plans[0]), mode, cval, in_place=in_place)
    gx = run_lowering(x, (methods[1], *plans[1]), mode, cval, in_place=in_place)
    return magnitude(gy * gy + gx * gx)


@callers_type
def edges(image, *, mode="reflect", cval=0.0, layout=None, method="auto", hints=None):
    """Sobel gradient magnitude per channel: ``hypot(sobel_y, sobel_x)``.

    Matches ``np.hypot(scipy.ndimage.sobel(x, 0, mode=mode), scipy.ndimage.sobel(x, 1,
    mode=mode))`` for each 2-D channel. With ``mode="constant"`` the outside is ``cval`` in 2-D
    (``scipy.ndimage.correlate`` with :func:`imgproc.kernels.sobel`); scipy's ``sobel`` pads its
    intermediate result with ``cval`` again, which differs when ``cval != 0``. uint8 input
    saturates at 255.
    """
    image, layout, mode = _prepare(image, layout, mode)
    plans = [plan_lowering(_kernels.sobel(a), method=method, hints=hints) for a in (0, 1)]
    traced = {"plans": [(k, t) for _, k, t in plans], "cval": jnp.asarray(cval, jnp.float32)}
    return apply_stage(_edges_body, image, layout, traced, hints=hints, mode=mode, methods=tuple(m for m, _, _ in plans))


# --------------------------------------------------------------------------- random twins


def _blur_size(sigma_range, size):
    """The static kernel side of :func:`random_gaussian_blur`."""
    if size is not None:
        return size
    if is_traced(sigma_range):
        raise ValueError("size must be given when sigma_range is traced (the kernel size is static)")
    return 2 * int(4.0 * float(sigma_range[1]) + 0.5) + 1


def _blur_params(key, shape, *, layout, sigma_range=(0.1, 2.0)):
    check_range("sigma_range", sigma_range, low=0)
    return {"sigma": uniform(key, sigma_range[0], sigma_range[1])}


def _apply_blur(image, params, *, layout, sigma_range=(0.1, 2.0), size=None, mode="reflect", hints=None):
    return gaussian_blur(image, params["sigma"], size=_blur_size(sigma_range, size), mode=mode, layout=layout, hints=hints)


def _sharpen_params(key, shape, *, layout, center_range=(40.0, 100.0), size=5):
    check_range("center_range", center_range, low=size * size - 1 + 1e-3)
    return {"center": uniform(key, center_range[0], center_range[1])}


def _apply_sharpen(image, params, *, layout, size=5, mode="reflect", hints=None):
    return sharpen(image, center=params["center"], size=size, mode=mode, layout=layout, hints=hints)


def _gaussian_reach(options) -> int:
    size = options.get("size")
    if size is not None:
        return max(check_odd_pair("size", size)) // 2
    sigma = options.get("sigma", 1.0)
    sigmas = sigma if isinstance(sigma, (list, tuple)) else (sigma,)  # per axis
    return max(_kernels.gaussian_radius(s, options.get("truncate", 4.0)) for s in sigmas)  # checks both


def _size_reach(options, default=None) -> int:
    return max(check_odd_pair("size", options.get("size", default))) // 2


def _kernel_reach(options) -> int:
    return max(np.shape(options["kernel"])) // 2


# a filter stage's boundary mode and lowering, checked when the stage is built
FILTER_CHECKS = {**MODE_CHECK, "method": check_method}


def _kernel_option(options):
    """A spec's kernel (nested lists) as a float32 array."""
    return {**options, "kernel": np.asarray(options["kernel"], np.float32)}


# The filter family as pipeline stages; ``radius`` is how far each reaches (size buckets).
OPS = (
    OpInfo("correlate", correlate, parse=_kernel_option, radius=_kernel_reach, checks=FILTER_CHECKS),
    OpInfo("convolve", convolve, parse=_kernel_option, radius=_kernel_reach, checks=FILTER_CHECKS),
    OpInfo("box_blur", box_blur, radius=_size_reach, checks=FILTER_CHECKS),
    OpInfo("gaussian_blur", gaussian_blur, radius=_gaussian_reach, checks=FILTER_CHECKS),
    OpInfo("sharpen", sharpen, radius=lambda o: _size_reach(o, 5), checks=FILTER_CHECKS),
    OpInfo("unsharp_mask", unsharp_mask, radius=_gaussian_reach, checks=FILTER_CHECKS),
    OpInfo("emboss", emboss, radius=lambda o: 1, checks=FILTER_CHECKS),
    OpInfo("edges", edges, radius=lambda o: 1, checks=FILTER_CHECKS),
    random_op("random_gaussian_blur", _blur_params, _apply_blur, check=_blur_size, checks=MODE_CHECK,
              doc=""":func:`gaussian_blur` with ``sigma ~ U(sigma_range)``. The kernel side is static:
    ``size`` or, by default, scipy's rule for the largest sigma (``2 * int(4 * hi + 0.5) + 1``).
    ``sigma`` is traced: a new draw (or a new ``sigma_range``) never recompiles.
    Parameters: ``{"sigma"}``."""),
    random_op("random_sharpen", _sharpen_params, _apply_sharpen, checks=MODE_CHECK,
              doc=""":func:`sharpen` with the kernel's centre weight ``~ U(center_range)`` (smaller
    is stronger; must stay above ``size**2 - 1``; the seed chapter's 5x5 kernel has 50).
    Parameters: ``{"center"}``."""),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
__test__ = doctests(OPS)  # the examples of the functions random_op wrote
