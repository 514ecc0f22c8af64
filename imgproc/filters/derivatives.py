"""Derivative filters with scipy.ndimage's definitions, on the convolution engine:
:func:`sobel`, :func:`prewitt`, :func:`laplace`, :func:`gaussian_laplace` and
:func:`gaussian_gradient_magnitude` (and :func:`imgproc.gaussian_blur`'s ``order=``).

Each acts on the two spatial axes of each channel, in every layout, boundary mode and
lowering (``method=``) of :func:`imgproc.correlate`, and matches scipy's function on each
2-D channel (its float64 result) to float32 precision. With ``mode="constant"``, scipy's
separable derivatives pad the input of each 1-D pass with ``cval`` (so the second pass
reads ``cval`` outside, not the first pass applied to ``cval``); these do the same
(:func:`imgproc.filters.convolution.per_axis_border`).

**dtype: float32 out, for every input dtype.** A derivative is signed: scipy returns the
input dtype, so a uint8 Sobel wraps its negative values around (-1 becomes 255), and
saturating them instead would lose every falling edge. These filters return float32 in
the image's own units (a uint8 image's Sobel lies in -1020..1020), the values scipy
computes on ``x.astype(float)``; a pipeline with one of them returns float32 (as with
``normalize``), and tells the stages after it the input's range (``max_value``), the
units the result is in (after ``normalize``: 1.0). :func:`imgproc.gaussian_blur` with
``order=`` keeps the dtype like every blur.
"""

from __future__ import annotations

import numpy as np
import jax.numpy as jnp

from imgproc import kernels as _kernels
from imgproc.core.array_type import callers_type
from imgproc.core.arrays import magnitude
from imgproc.core.images import check_image
from imgproc.core.registry import KEEPS_TARGETS, OpInfo, register_ops
from imgproc.core.validate import check_dtype, check_mode
from imgproc.filters.convolution import apply_plan, apply_stage, per_axis_border, plan_lowering, run_lowering
from imgproc.filters.linear import FILTER_CHECKS, gaussian_radii, gaussian_term, is_concrete

__all__ = ["gaussian_gradient_magnitude", "gaussian_laplace", "laplace", "prewitt", "sobel"]

_DIFFERENCE = np.array([-1.0, 0.0, 1.0], np.float32)  # the central difference, as correlation weights
_SOBEL_SMOOTH = np.array([1.0, 2.0, 1.0], np.float32)
_PREWITT_SMOOTH = np.array([1.0, 1.0, 1.0], np.float32)


def check_axis(axis) -> int:
    """The spatial axis of a derivative: 0 (rows: the vertical derivative) or 1 (columns:
    horizontal); scipy's -2 and -1 name them too."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or axis not in (0, 1, -1, -2):
        raise ValueError(f"axis must be one of 0 (rows: vertical derivative), 1 (columns: horizontal), -2, -1; "
                         f"got {axis!r}")
    return int(axis) % 2


def as_float32(image):
    """``image`` as float32 (its dtype checked first): the derivatives' result dtype."""
    if not hasattr(image, "dtype") or not hasattr(image, "shape"):
        image = np.asarray(image)
    check_dtype(image.dtype)
    return image if image.dtype == np.float32 else image.astype(np.float32)


def _first_then(axis, difference, smooth):
    """scipy's ``sobel``/``prewitt``: the difference along ``axis`` first, then the smoothing
    along the other axis. Returns the separable term ``(col, row)`` and its border fix."""
    if axis == 0:
        return (difference, smooth), (2, difference, smooth)  # rows pass first; the second along W
    return (smooth, difference), (1, difference, smooth)  # columns pass first; the second along H


def _difference_filter(image, axis, smooth, *, mode, cval, layout, method, hints):
    term, fix = _first_then(check_axis(axis), _DIFFERENCE, smooth)
    plan = plan_lowering(None, terms=[term], method=method, hints=hints)
    return apply_plan(as_float32(image), plan, mode=mode, cval=cval, layout=layout, hints=hints, fixes=[fix])


@callers_type(fixed_dtype=True)  # float32 out
def sobel(image, axis, *, mode="reflect", cval=0.0, layout=None, method="auto", hints=None):
    """Sobel derivative of each channel along ``axis``: ``[-1, 0, 1]`` along it and
    ``[1, 2, 1]`` across it.

    Matches ``scipy.ndimage.sobel(plane, axis, mode=mode, cval=cval)`` on each 2-D channel
    (scipy's order of passes, and its ``"constant"`` border, included), as float32.

    Args:
        image: HW, HWC, NHWC (or CHW/NCHW with ``layout``); uint8, uint16, float16,
            bfloat16, float32 or float64, NumPy, list or JAX.
        axis: 0 (rows: the vertical derivative, positive where values grow downwards) or 1
            (columns: horizontal); -2 and -1 as scipy.
        mode, cval, layout, method, hints: as for :func:`imgproc.correlate`.

    Returns:
        float32 of the image's shape, in the image's units (float64 in: float32 out too),
        the caller's array type. Why float32: the module docstring.

    Example:
        >>> import numpy as np, imgproc
        >>> ramp = np.tile(np.arange(6, dtype=np.uint8) * 10, (5, 1))  # +10 a column
        >>> out = imgproc.sobel(ramp, 1)
        >>> out.dtype, float(out[2, 2])  # 10 * 2 (the difference) * 4 (the smoothing)
        (dtype('float32'), 80.0)
        >>> float(imgproc.sobel(ramp[:, ::-1], 1)[2, 2])  # falling edges keep their sign
        -80.0
    """
    return _difference_filter(image, axis, _SOBEL_SMOOTH, mode=mode, cval=cval, layout=layout, method=method,
                              hints=hints)


@callers_type(fixed_dtype=True)  # float32 out
def prewitt(image, axis, *, mode="reflect", cval=0.0, layout=None, method="auto", hints=None):
    """Prewitt derivative of each channel along ``axis``: ``[-1, 0, 1]`` along it and
    ``[1, 1, 1]`` across it.

    Matches ``scipy.ndimage.prewitt(plane, axis, mode=mode, cval=cval)`` on each 2-D
    channel, as float32. Arguments and result as for :func:`sobel`.

    Example:
        >>> import numpy as np, imgproc
        >>> ramp = np.tile(np.arange(5, dtype=np.float32)[:, None], (1, 4))  # +1 a row
        >>> float(imgproc.prewitt(ramp, 0)[2, 1])  # 2 (the difference) * 3 (the sum)
        6.0
    """
    return _difference_filter(image, axis, _PREWITT_SMOOTH, mode=mode, cval=cval, layout=layout, method=method,
                              hints=hints)


@callers_type(fixed_dtype=True)  # float32 out
def laplace(image, *, mode="reflect", cval=0.0, layout=None, method="auto", hints=None):
    """Discrete Laplacian of each channel: ``[1, -2, 1]`` along the rows plus along the
    columns (:func:`imgproc.kernels.laplacian`).

    Matches ``scipy.ndimage.laplace(plane, mode=mode, cval=cval)`` on each 2-D channel, as
    float32. Arguments and result as for :func:`sobel` (without ``axis``).

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((5, 5), np.uint8); x[2, 2] = 1
        >>> imgproc.laplace(x)[1:4, 1:4].tolist()
        [[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]]
    """
    plan = plan_lowering(_kernels.laplacian(), method=method, hints=hints)
    return apply_plan(as_float32(image), plan, mode=mode, cval=cval, layout=layout, hints=hints)


def _gaussian_terms(sigma, size, truncate, orders):
    """The separable terms of Gaussian derivatives of ``orders`` (``(rows, cols)`` each)
    and their border fixes (scipy's ``gaussian_filter`` passes: rows first, then columns)."""
    terms = [gaussian_term(sigma, size, truncate, order) for order in orders]
    return terms, [(2, col, row) for col, row in terms]


@callers_type(fixed_dtype=True)  # float32 out
def gaussian_laplace(image, sigma, *, size=None, truncate=4.0, mode="reflect", cval=0.0, layout=None,
                     method="auto", hints=None):
    """Laplacian of Gaussian of each channel: the second Gaussian derivative along the rows
    plus along the columns (two separable terms).

    Matches ``scipy.ndimage.gaussian_laplace(plane, sigma, mode=mode, cval=cval,
    truncate=truncate)`` on each 2-D channel, as float32. ``sigma`` (a number or a pair
    ``(rows, cols)``), ``size`` and ``truncate`` as for :func:`imgproc.gaussian_blur`;
    the rest as for :func:`sobel`. On CPU, ``method="auto"`` runs the two terms as 1-D
    passes (4 passes of ``2r + 1`` weights instead of ``(2r + 1)²``) up to large sigmas.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((15, 15), np.float32); x[7, 7] = 1
        >>> bool(imgproc.gaussian_laplace(x, 1.5)[7, 7] < 0)  # a bright spot: negative at its centre
        True
    """
    terms, fixes = _gaussian_terms(sigma, size, truncate, [(2, 0), (0, 2)])
    concrete = all(is_concrete(w) for term in terms for w in term)
    kernel = sum(np.outer(col, row) for col, row in terms) if concrete else None  # for the plan's choice
    plan = plan_lowering(kernel, terms=terms, method=method, hints=hints)
    return apply_plan(as_float32(image), plan, mode=mode, cval=cval, layout=layout, hints=hints, fixes=fixes)


def _magnitude_body(x, plans, cval, fixes, *, mode, methods, axes, in_place, finish, float_rows):
    del finish  # the passes are not the result
    total = None
    for (kernel, terms), method, fix, axis in zip(plans, methods, fixes, axes):
        g = run_lowering(x, (method, kernel, terms), mode, cval, in_place=in_place, float_rows=float_rows)
        g = per_axis_border(g, cval, [(axis, *fix)], mode)
        total = g * g if total is None else total + g * g
    return magnitude(total)


@callers_type(fixed_dtype=True)  # float32 out
def gaussian_gradient_magnitude(image, sigma, *, size=None, truncate=4.0, mode="reflect", cval=0.0, layout=None,
                                method="auto", hints=None):
    """Gradient magnitude with Gaussian derivatives, per channel: ``hypot(gaussian_blur(x,
    sigma, order=(1, 0)), gaussian_blur(x, sigma, order=(0, 1)))`` in float32.

    Matches ``scipy.ndimage.gaussian_gradient_magnitude(plane, sigma, mode=mode, cval=cval,
    truncate=truncate)`` on each 2-D channel, as float32. Arguments as for
    :func:`gaussian_laplace`.

    Example:
        >>> import numpy as np, imgproc
        >>> ramp = np.tile(np.arange(12, dtype=np.uint8) * 3, (12, 1))  # +3 a column
        >>> round(float(imgproc.gaussian_gradient_magnitude(ramp, 1.0)[6, 6]), 3)
        3.0
    """
    terms, fixes = _gaussian_terms(sigma, size, truncate, [(1, 0), (0, 1)])
    image, layout = check_image(as_float32(image), layout, read_in_place=True)
    mode = check_mode(mode)
    plans = [plan_lowering(None, terms=[term], method=method, hints=hints) for term in terms]
    traced = {"plans": [(k, t) for _, k, t in plans], "cval": jnp.asarray(cval, jnp.float32),
              "fixes": [(first, second) for _, first, second in fixes]}
    return apply_stage(_magnitude_body, image, layout, traced, hints=hints, mode=mode,
                       methods=tuple(m for m, _, _ in plans), axes=tuple(a for a, _, _ in fixes))


def _gaussian_reach(options) -> int:
    return max(gaussian_radii(options.get("sigma", 1.0), options.get("size"), options.get("truncate", 4.0)))


# float32 out whatever the input: a pipeline with one of them returns float32
OPS = (
    OpInfo("sobel", sobel, radius=lambda o: 1, checks={**FILTER_CHECKS, "axis": check_axis}, out_dtype="float32"),
    OpInfo("prewitt", prewitt, radius=lambda o: 1, checks={**FILTER_CHECKS, "axis": check_axis}, out_dtype="float32"),
    OpInfo("laplace", laplace, radius=lambda o: 1, checks=FILTER_CHECKS, out_dtype="float32"),
    OpInfo("gaussian_laplace", gaussian_laplace, radius=_gaussian_reach, checks=FILTER_CHECKS, out_dtype="float32"),
    OpInfo("gaussian_gradient_magnitude", gaussian_gradient_magnitude, radius=_gaussian_reach, checks=FILTER_CHECKS,
           out_dtype="float32"),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
