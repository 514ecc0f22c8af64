"""Filters: thin functions over the convolution engine.

Each takes an image in any layout of :mod:`imgproc._arrays` (``layout=None`` infers HW,
HWC or NHWC) and any supported dtype, and returns the same shape and dtype. Options are
keyword-only; shape-setting ones (``size``, ``mode``, ``layout``, ``method``) are static,
numeric ones (``sigma``, ``amount``, ``center``, ``cval``) are traced, so changing them
does not recompile.
"""

from __future__ import annotations

import numpy as np
import jax.numpy as jnp

from imgproc import kernels as _kernels
from imgproc._boundary import check_mode
from imgproc._checks import check_image
from imgproc._convolution import (
    apply_plan,
    apply_stage,
    is_concrete,
    plan_lowering,
    run_lowering,
)

__all__ = ["box_blur", "gaussian_blur", "sharpen", "unsharp_mask", "emboss", "edges"]


def _check_number(name, value, *, minimum=None, allow_equal=True):
    """Validate a concrete numeric option (traced values pass through unchecked)."""
    if not is_concrete(value):
        return value
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number; got {value!r}") from None
    bad = not np.isfinite(v)
    if minimum is not None:
        bad = bad or (v < minimum if allow_equal else v <= minimum)
    if bad:
        bound = "" if minimum is None else f" {'>=' if allow_equal else '>'} {minimum:g}"
        raise ValueError(f"{name} must be a finite number{bound}; got {value!r}")
    return value


def _check_odd(name, size):
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1 or size % 2 == 0:
        raise ValueError(f"{name} must be an odd integer >= 1 (1, 3, 5, ...); got {size!r}")
    return int(size)


def gaussian_radius(sigma, size, truncate) -> int:
    """Static radius of a Gaussian: from ``size`` if given, else scipy's rule
    ``int(truncate * sigma + 0.5)``, which needs a concrete sigma."""
    if size is not None:
        return _check_odd("size", size) // 2
    if not is_concrete(sigma):
        raise ValueError("size must be given when sigma is traced (the kernel size is static)")
    return _kernels.gaussian_radius(float(sigma), truncate)


def gaussian_weights(sigma, radius: int):
    """Normalised 1-D Gaussian weights of length ``2 * radius + 1`` for a (possibly traced)
    ``sigma``; ``sigma == 0`` gives the identity ``[0, .., 1, .., 0]``.

    A concrete ``sigma`` gives NumPy weights (:func:`imgproc.kernels.gaussian_1d`): inside
    a jitted function or pipeline XLA then compiles them in as constants, and the passes
    run faster than with weights computed in the program (2048x2048x3, 5 taps: 31 -> 26
    ms). The value is still passed to the stage as an array, so a new sigma does not
    recompile."""
    if is_concrete(sigma):
        return _kernels.gaussian_1d(float(sigma), size=2 * radius + 1)
    x = jnp.arange(-radius, radius + 1, dtype=jnp.float32)
    s = jnp.asarray(sigma, jnp.float32)
    safe = jnp.where(s > 0, s, 1.0)
    w = jnp.where(s > 0, jnp.exp(-0.5 * (x / safe) ** 2), (x == 0).astype(jnp.float32))
    return w / jnp.sum(w)


def _plan_gaussian(sigma, size, truncate, method):
    _check_number("sigma", sigma, minimum=0)
    radius = gaussian_radius(sigma, size, truncate)
    w = gaussian_weights(sigma, radius)
    return plan_lowering(None, terms=[(w, w)], method=method)


def _prepare(image, layout, mode):
    image, layout = check_image(image, layout)
    check_mode(mode)
    return image, layout


def box_blur(image, size=3, *, mode="reflect", cval=0.0, layout=None, method="auto"):
    """Mean over a ``size``×``size`` window (odd ``size``), per channel.

    Matches ``scipy.ndimage.uniform_filter(x, size, mode=mode, cval=cval)`` over the spatial
    axes only (``size=1`` on the others).

    Args:
        image: HW, HWC, NHWC (or CHW/NCHW with ``layout``); uint8, uint16, float16,
            bfloat16 or float32.
        size: odd window side (static).
        mode, cval, layout, method: as for :func:`imgproc.correlate`.

    Example:
        >>> import numpy as np, imgproc
        >>> float(imgproc.box_blur(np.ones((4, 4), np.float32), 3).mean())
        1.0
    """
    size = _check_odd("size", size)
    w = np.full(size, 1.0 / size, np.float32)
    plan = plan_lowering(None, terms=[(w, w)], method=method)
    return apply_plan(image, plan, mode=mode, cval=cval, layout=layout)


def gaussian_blur(image, sigma=1.0, *, size=None, truncate=4.0, mode="reflect", cval=0.0, layout=None, method="auto"):
    """Gaussian blur of each channel.

    Matches ``scipy.ndimage.gaussian_filter(x, sigma, mode=mode, cval=cval,
    truncate=truncate)`` over the spatial axes only (sigma 0 on the channel/batch axes).
    The kernel radius is ``int(truncate * sigma + 0.5)`` (scipy's rule) unless ``size``
    (odd) is given; ``sigma`` is traced, so a new sigma with the same size does not
    recompile (inside ``jit``, give ``size``). ``sigma=0`` is the identity.

    Args:
        image: HW, HWC, NHWC (or CHW/NCHW with ``layout``); uint8, uint16, float16,
            bfloat16 or float32.
        sigma: standard deviation in pixels, >= 0.
        size: odd kernel side, or None for scipy's rule.
        truncate: radius in standard deviations when ``size`` is None.
        mode, cval, layout, method: as for :func:`imgproc.correlate`.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((9, 9), np.float32); x[4, 4] = 1
        >>> round(float(imgproc.gaussian_blur(x, 1.0)[4, 4]), 4)  # 1 / (2 pi) for sigma 1
        0.1592
    """
    plan = _plan_gaussian(sigma, size, truncate, method)
    return apply_plan(image, plan, mode=mode, cval=cval, layout=layout)


def _sharpen_kernel(size, center):
    if is_concrete(center):
        return _kernels.sharpen(size, center=center)
    n = size * size
    c = jnp.asarray(center, jnp.float32)
    delta = jnp.asarray(_kernels.identity(size))
    return (delta * (c + 1.0) - 1.0) / (c - (n - 1))


def sharpen(image, *, size=5, center=None, mode="reflect", cval=0.0, layout=None, method="auto"):
    """Sharpen with :func:`imgproc.kernels.sharpen`: ``-1`` around ``center``, divided by the
    sum (default ``center = 2 * size²``: the seed chapter's 5×5 matrix). The mean is kept.

    Matches ``scipy.ndimage.correlate(x[..., c], kernels.sharpen(size, center=center))``.

    Example:
        >>> import numpy as np, imgproc
        >>> round(float(imgproc.sharpen(np.full((6, 6), 0.5, np.float32)).max()), 5)
        0.5
    """
    size = _check_odd("size", size)
    if center is None:
        center = 2.0 * size * size
    _check_number("center", center, minimum=size * size - 1, allow_equal=False)
    plan = plan_lowering(_sharpen_kernel(size, center), method=method)
    return apply_plan(image, plan, mode=mode, cval=cval, layout=layout)


def emboss(image, *, mode="reflect", cval=0.0, layout=None, method="auto"):
    """Emboss with :func:`imgproc.kernels.emboss` (3×3, sums to 1: flat areas kept).

    Matches ``scipy.ndimage.correlate(x[..., c], kernels.emboss())`` per channel.
    """
    plan = plan_lowering(_kernels.emboss(), method=method)
    return apply_plan(image, plan, mode=mode, cval=cval, layout=layout)


def _unsharp_body(x, kernel, terms, cval, amount, *, mode, method):
    blurred = run_lowering(x, (method, kernel, terms), mode, cval)
    return x + amount * (x - blurred)


def unsharp_mask(image, *, sigma=1.0, amount=1.0, size=None, truncate=4.0, mode="reflect", cval=0.0, layout=None, method="auto"):
    """Unsharp masking: ``x + amount * (x - gaussian_blur(x, sigma))``, computed in float32
    and cast once (no clipping for floats; integers saturate).

    The formula of ``skimage.filters.unsharp_mask(x, radius=sigma, amount=amount,
    preserve_range=True)``, with our boundary ``mode`` for the blur. ``amount=0`` or
    ``sigma=0`` is the identity.
    """
    _check_number("amount", amount)
    image, layout = _prepare(image, layout, mode)
    method, kernel, terms = _plan_gaussian(sigma, size, truncate, method)
    traced = {
        "kernel": kernel,
        "terms": terms,
        "cval": jnp.asarray(cval, jnp.float32),
        "amount": jnp.asarray(amount, jnp.float32),
    }
    return apply_stage(_unsharp_body, image, layout, traced, mode=mode, method=method)


def _edges_body(x, plans, cval, *, mode, methods):
    gy = run_lowering(x, (methods[0], *plans[0]), mode, cval)
    gx = run_lowering(x, (methods[1], *plans[1]), mode, cval)
    return jnp.sqrt(gy * gy + gx * gx)


def edges(image, *, mode="reflect", cval=0.0, layout=None, method="auto"):
    """Sobel gradient magnitude per channel: ``hypot(sobel_y, sobel_x)``.

    Matches ``np.hypot(scipy.ndimage.sobel(x, 0, mode=mode), scipy.ndimage.sobel(x, 1,
    mode=mode))`` for each 2-D channel. With ``mode="constant"`` the outside is ``cval`` in 2-D
    (``scipy.ndimage.correlate`` with :func:`imgproc.kernels.sobel`); scipy's ``sobel`` pads its
    intermediate result with ``cval`` again, which differs when ``cval != 0``. uint8 input
    saturates at 255.
    """
    image, layout = _prepare(image, layout, mode)
    plans = [plan_lowering(_kernels.sobel(a), method=method) for a in (0, 1)]
    traced = {"plans": [(k, t) for _, k, t in plans], "cval": jnp.asarray(cval, jnp.float32)}
    return apply_stage(_edges_body, image, layout, traced, mode=mode, methods=tuple(m for m, _, _ in plans))


def _gaussian_reach(options) -> int:
    size = options.get("size")
    if size is not None:
        return int(size) // 2
    return _kernels.gaussian_radius(float(options.get("sigma", 1.0)), options.get("truncate", 4.0))


def _kernel_reach(options) -> int:
    return max(np.shape(options["kernel"])) // 2 if "kernel" in options else 0


# How far each filter reaches, for the size buckets of imgproc.Pipeline.
RADII = {
    "box_blur": lambda o: int(o.get("size", 3)) // 2,
    "gaussian_blur": _gaussian_reach,
    "sharpen": lambda o: int(o.get("size", 5)) // 2,
    "unsharp_mask": _gaussian_reach,
    "emboss": lambda o: 1,
    "edges": lambda o: 1,
    "correlate": _kernel_reach,
    "convolve": _kernel_reach,
}
