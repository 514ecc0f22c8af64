"""Blurs of the augmentation family: ``median_blur`` (a thin wrapper of
:func:`imgproc.restoration.median` with OpenCV's border) and ``motion_blur`` (a line kernel
of a given length and angle, applied with :func:`imgproc.correlate`), with random twins.
"""

from __future__ import annotations

import jax.numpy as jnp

from imgproc.core.array_type import callers_type
from imgproc.core.eager import compiled_when_eager
from imgproc.core.keys import below, bernoulli, doctests, maybe, random_op, scaled, uniforms
from imgproc.core.registry import KEEPS_TARGETS, OpInfo, register_ops
from imgproc.core.validate import MODE_CHECK, check_number, check_odd, check_range
from imgproc.filters.convolution import correlate
from imgproc.restoration import median


@callers_type
@compiled_when_eager
def median_blur(image, *, size=3, mode="nearest", layout=None):
    """Median over a ``size`` x ``size`` window per channel: :func:`imgproc.restoration.median`
    with ``mode="nearest"`` by default, which is ``cv2.medianBlur`` (OpenCV repeats the edge
    pixels; tested) and so albumentations' ``MedianBlur``. Any layout and dtype.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((5, 5), np.uint8); x[2, 2] = 255
        >>> int(imgproc.median_blur(x, size=3).max())
        0
    """
    return median(image, size=size, mode=mode, layout=layout)


def motion_kernel(size, angle, length=None):
    """The ``size`` x ``size`` motion-blur kernel (float32, sums to 1): a segment of
    ``length`` pixels (default ``size``; odd) through the centre at ``angle`` degrees
    (counter-clockwise from the +x axis, the row axis pointing down), drawn with bilinear
    weights (kornia's ``get_motion_kernel2d`` construction: the horizontal segment
    rotated): tap ``(dy, dx)`` weighs ``max(0, 1 - |v|) * clip((length + 1) / 2 - |u|, 0,
    1)`` with ``(u, v)`` its coordinates along and across the segment. ``angle`` and
    ``length`` may be traced.

    Example:
        >>> import numpy as np
        >>> from imgproc.augment.blur import motion_kernel
        >>> (np.asarray(motion_kernel(3, 0.0)) * 3).round(6).tolist()
        [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    """
    size = check_odd("size", size, low=1)
    half = (size - 1) / 2.0
    n = jnp.asarray(size if length is None else length, jnp.float32)
    a = jnp.deg2rad(jnp.asarray(angle, jnp.float32))
    d = jnp.arange(size, dtype=jnp.float32) - half
    dy, dx = d[:, None], d[None, :]
    u = dx * jnp.cos(a) - dy * jnp.sin(a)  # along the segment (y points down: counter-clockwise)
    v = dx * jnp.sin(a) + dy * jnp.cos(a)
    w = jnp.maximum(0.0, 1.0 - jnp.abs(v)) * jnp.clip((n + 1.0) / 2.0 - jnp.abs(u), 0.0, 1.0)
    return w / jnp.sum(w)


@callers_type
def motion_blur(image, length, angle, *, mode="mirror", layout=None):
    """Blur along a line: :func:`imgproc.correlate` with :func:`motion_kernel` ``(length,
    angle)`` (``length`` odd, static: the kernel side; ``angle`` degrees, traced). With the
    default ``mode="mirror"`` (OpenCV's ``BORDER_REFLECT_101``) it equals
    ``cv2.filter2D(image, -1, kernel)`` on the same kernel (tested), what albumentations'
    ``MotionBlur`` applies.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((7, 7), np.float32); x[3, 3] = 1.0
        >>> y = imgproc.motion_blur(x, 3, 0.0)
        >>> [round(float(v), 4) for v in y[3, 2:5]], float(y[2].max())
        ([0.3333, 0.3333, 0.3333], 0.0)
    """
    check_odd("length", length, low=1)
    check_number("angle", angle)
    return correlate(image, motion_kernel(length, angle), mode=mode, layout=layout)


# --------------------------------------------------------------------------- random twins


def _median_params(key, shape, *, layout, size=3, p=0.5):
    check_odd("size", size, low=1)
    check_number("p", p, low=0, high=1)
    return {"apply": bernoulli(key, p)}


def _apply_median(image, params, *, layout, size=3, mode="nearest"):
    return maybe(params["apply"], lambda x: median_blur(x, size=size, mode=mode, layout=layout), jnp.asarray(image))


def _motion_params(key, shape, *, layout, size=7, length_range=(3, 7), angle_range=(0.0, 360.0)):
    size = check_odd("size", size, low=3)
    check_range("length_range", length_range, low=1, high=size)
    check_range("angle_range", angle_range)
    u = uniforms(key, 2)
    lo, hi = (jnp.asarray(v, jnp.int32) for v in length_range)
    odd = lo // 2 + below(u[0], (hi + 1) // 2 - lo // 2)  # k of the odd lengths 2k + 1 in the range
    return {"length": (2 * odd + 1).astype(jnp.float32), "angle": scaled(u[1], angle_range[0], angle_range[1])}


def _apply_motion(image, params, *, layout, size=7, mode="mirror"):
    kernel = motion_kernel(size, params["angle"], params["length"])
    return correlate(image, kernel, mode=mode, layout=layout)


OPS = (
    OpInfo("median_blur", median_blur, checks=MODE_CHECK),
    OpInfo("motion_blur", motion_blur, checks=MODE_CHECK),
    random_op("random_median_blur", _median_params, _apply_median, checks=MODE_CHECK,
              doc=""":func:`median_blur` with probability ``p``. Parameters: ``{"apply": bool}``."""),
    random_op("random_motion_blur", _motion_params, _apply_motion, checks=MODE_CHECK,
              doc=""":func:`motion_blur` with an odd length drawn uniformly from ``length_range`` and an
    angle from ``U(angle_range)`` degrees (albumentations' ``MotionBlur(blur_limit=(3, 7))``
    draws the same). The kernel side is ``size`` (static) and the segment's length is
    traced, so one program serves every draw. Parameters: ``{"length", "angle"}``."""),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
__test__ = doctests(OPS)  # the examples of the functions random_op wrote
