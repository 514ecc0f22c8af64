"""Colour: HSV conversions, brightness, contrast, saturation, hue, gamma and grayscale,
each deterministic op beside its key-first random twin (``_x_params`` draws, the
deterministic op applies). Definitions are dm-pix's, which are TensorFlow's ``tf.image``
ones; each docstring names its reference.
"""

from __future__ import annotations

import jax.numpy as jnp

from imgproc.augment.common import back, need_rgb, to_float
from imgproc.core.array_type import callers_type
from imgproc.core.arrays import channel_axis, resolve_max, spatial_axes
from imgproc.core.eager import compiled_when_eager
from imgproc.core.images import check_image
from imgproc.core.keys import bernoulli, doctests, maybe, random_op, uniform
from imgproc.core.registry import KEEPS_TARGETS, OpInfo, register_ops
from imgproc.core.validate import check_number, check_range

GRAY_WEIGHTS = (0.2989, 0.5870, 0.1140)
# Channel ranges and values at or below this count as 0 in the HSV conversion (hue and
# saturation 0): far below any 8- or 16-bit level, and it keeps the gradient finite for
# the tiny tails of a blur (1 / range**2 overflows float32 for ranges near 1e-20).
HSV_TINY = 1e-10


def _channel_split(x, layout):
    ax = channel_axis(layout)
    return [jnp.take(x, i, axis=ax) for i in range(3)], ax


@callers_type
@compiled_when_eager
def rgb_to_hsv(image, *, layout=None):
    """RGB to HSV, float32, the definition of ``dm_pix.rgb_to_hsv`` (as ``tf.image.rgb_to_hsv``):
    hue in [0, 1), saturation = (max - min) / max, value = max (in the image's own range).
    Channel ranges and values up to :data:`HSV_TINY` count as 0, so ``jax.grad`` stays
    finite everywhere.

    Example:
        >>> import numpy as np, imgproc
        >>> np.asarray(imgproc.rgb_to_hsv(np.array([[[1.0, 0.0, 0.0]]], np.float32))).tolist()
        [[[0.0, 1.0, 1.0]]]
    """
    return on_planes(image, layout, "rgb_to_hsv", _rgb_to_hsv)[0]


def _rgb_to_hsv(red, green, blue):
    value = jnp.maximum(jnp.maximum(red, green), blue)
    minimum = jnp.minimum(jnp.minimum(red, green), blue)
    range_ = value - minimum
    has_value = value > HSV_TINY
    has_range = range_ > HSV_TINY
    safe_value = jnp.where(has_value, value, 1.0)
    safe_range = jnp.where(has_range, range_, 1.0)
    saturation = jnp.where(has_value, range_ / safe_value, 0.0)
    norm = 1.0 / (6.0 * safe_range)
    # dm-pix picks the branch with ``value == red`` / ``value == green``; under jit, XLA may
    # recompute a fused producer (e.g. a rotation) for each use with different rounding,
    # so that equality fails for every channel. Comparing the channels with each other
    # gives the same branches (red first, then green, then blue) and is robust to that.
    red_max = (red >= green) & (red >= blue)
    green_max = ~red_max & (green >= blue)
    hue = jnp.where(green_max, norm * (blue - red) + 2.0 / 6.0, norm * (red - green) + 4.0 / 6.0)
    hue = jnp.where(red_max, norm * (green - blue), hue)
    hue = jnp.where(has_range, hue, 0.0)
    hue = hue + (hue < 0.0).astype(hue.dtype)
    return hue, saturation, value


def _hsv_to_rgb(hue, saturation, value):
    dh = jnp.mod(hue, 1.0) * 6.0  # hue wraps: 1.2 is 0.2 (dm-pix, TensorFlow)
    dr = jnp.clip(jnp.abs(dh - 3.0) - 1.0, 0.0, 1.0)
    dg = jnp.clip(2.0 - jnp.abs(dh - 2.0), 0.0, 1.0)
    db = jnp.clip(2.0 - jnp.abs(dh - 4.0), 0.0, 1.0)
    one_minus_s = 1.0 - saturation
    return tuple(value * (one_minus_s + saturation * d) for d in (dr, dg, db))


@callers_type
@compiled_when_eager
def hsv_to_rgb(image, *, layout=None):
    """HSV to RGB, float32, the inverse of :func:`rgb_to_hsv` (``dm_pix.hsv_to_rgb``). The hue
    is taken modulo 1 first (a hue of 1.2 is 0.2), as dm-pix and TensorFlow do. It takes
    what :func:`rgb_to_hsv` returns: a float image, hue and saturation in [0, 1]; an
    integer image (whose hue would always be 0) is refused.

    Example:
        >>> import numpy as np, imgproc
        >>> np.asarray(imgproc.hsv_to_rgb(np.array([[[1.0, 1.0, 1.0]]], np.float32))).tolist()
        [[[1.0, 0.0, 0.0]]]
    """
    if jnp.issubdtype(image.dtype, jnp.integer):
        raise ValueError(f"hsv_to_rgb takes a float HSV image (what rgb_to_hsv returns: hue and saturation in "
                         f"[0, 1]); got {image.dtype}")
    return on_planes(image, layout, "hsv_to_rgb", _hsv_to_rgb)[0]


def on_planes(image, layout, name, fn):
    """``fn(p0, p1, p2)`` of a 3-channel image's float32 planes, stacked back along the
    channel axis; also the checked image (for its dtype)."""
    image, layout = check_image(image, layout)
    need_rgb(image, layout, name)
    planes, ax = _channel_split(to_float(jnp.asarray(image)), layout)
    return jnp.stack(fn(*planes), axis=ax), image


def _hsv_op(image, layout, name, fn):
    y, image = on_planes(image, layout, name, lambda r, g, b: _hsv_to_rgb(*fn(*_rgb_to_hsv(r, g, b))))
    return back(y, image.dtype)


@callers_type
@compiled_when_eager
def adjust_hue(image, delta, *, layout=None):
    """Rotate the hue by ``delta`` turns (``delta`` in [-1, 1]; 0.5 is half a turn).

    ``dm_pix.adjust_hue`` (TF's ``tf.image.adjust_hue``): RGB to HSV, ``h = (h + delta) mod
    1``, back. Works in any value range (HSV conversion is scale-equivariant). RGB only.
    """
    check_number("delta", delta, low=-1, high=1)
    d = jnp.asarray(delta, jnp.float32)
    return _hsv_op(image, layout, "adjust_hue", lambda h, s, v: (jnp.mod(h + d, 1.0), s, v))


@callers_type
@compiled_when_eager
def adjust_saturation(image, factor, *, layout=None):
    """Scale the HSV saturation by ``factor`` (clipped to [0, 1]): ``dm_pix.adjust_saturation``
    (TF's ``tf.image.adjust_saturation``). Any value range; RGB only."""
    check_number("factor", factor, low=0)
    f = jnp.asarray(factor, jnp.float32)
    return _hsv_op(image, layout, "adjust_saturation", lambda h, s, v: (h, jnp.clip(s * f, 0.0, 1.0), v))


@callers_type
@compiled_when_eager
def adjust_brightness(image, delta, *, max_value=None, layout=None):
    """Add ``delta * max_value`` to every pixel (``delta`` is a fraction of the range).

    With ``max_value=1`` this is ``dm_pix.adjust_brightness`` (``image + delta``). No
    clipping (floats); integer output saturates. ``max_value``: the image dtype's range
    by default (:mod:`imgproc.augment`).

    Example:
        >>> import numpy as np, imgproc
        >>> np.asarray(imgproc.adjust_brightness(np.array([[100, 250]], np.uint8), 0.1)).tolist()
        [[126, 255]]
    """
    image, layout = check_image(image, layout)
    check_number("delta", delta)
    m = resolve_max(max_value, image.dtype)
    y = to_float(jnp.asarray(image)) + jnp.asarray(delta, jnp.float32) * jnp.asarray(m, jnp.float32)
    return back(y, image.dtype)


@callers_type
@compiled_when_eager
def adjust_contrast(image, factor, *, layout=None):
    """``(x - mean) * factor + mean`` with the per-image, per-channel mean over H and W:
    ``dm_pix.adjust_contrast`` (TF's ``tf.image.adjust_contrast``). For a batch, each image
    uses its own mean. Any value range.

    Example:
        >>> import numpy as np, imgproc
        >>> np.asarray(imgproc.adjust_contrast(np.array([[1.0, 3.0]], np.float32), 2.0)).tolist()
        [[0.0, 4.0]]
    """
    image, layout = check_image(image, layout)
    check_number("factor", factor, low=0)
    x = to_float(jnp.asarray(image))
    mean = _spatial_mean(x, layout)
    return back((x - mean) * jnp.asarray(factor, jnp.float32) + mean, image.dtype)


def _spatial_mean(x, layout):
    """Per-image, per-channel mean over H and W, kept as broadcastable dims. Channel-last:
    mean over rows of the (H, W*C) view, then over W (faster on CPU than one reduction
    over the two outer axes)."""
    if layout in ("HWC", "NHWC"):
        *lead, h, w, c = x.shape
        m = x.reshape(*lead, h, w * c).mean(-2).reshape(*lead, w, c).mean(-2)
        return m.reshape(*lead, 1, 1, c)
    return jnp.mean(x, axis=spatial_axes(layout), keepdims=True)


@callers_type
@compiled_when_eager
def adjust_gamma(image, gamma, *, gain=1.0, max_value=None, layout=None):
    """``gain * max_value * (clip(x, 0, max_value) / max_value) ** gamma``; with
    ``max_value=1`` this is ``dm_pix.adjust_gamma`` (which clips the input to [0, 1]
    first, then ``gain * image ** gamma``).

    Differentiable; with ``gamma < 1`` the derivative with respect to the image is
    infinite at black (0), as ``x ** gamma``'s is (and torch's and dm-pix's gradients of it).

    Example:
        >>> import numpy as np, imgproc
        >>> np.asarray(imgproc.adjust_gamma(np.array([[-0.5, 0.25, 4.0]], np.float32), 0.5)).tolist()
        [[0.0, 0.5, 1.0]]
    """
    image, layout = check_image(image, layout)
    check_number("gamma", gamma, low=0)
    check_number("gain", gain)
    m = jnp.asarray(resolve_max(max_value, image.dtype), jnp.float32)
    x = jnp.clip(to_float(jnp.asarray(image)), 0.0, m) / m
    y = jnp.asarray(gain, jnp.float32) * m * x ** jnp.asarray(gamma, jnp.float32)
    return back(y, image.dtype)


@callers_type
@compiled_when_eager
def rgb_to_grayscale(image, *, keep_channels=True, layout=None):
    """Luma ``0.2989 R + 0.5870 G + 0.1140 B`` (``dm_pix.rgb_to_grayscale``, ITU-R 601-2).

    With ``keep_channels`` (default) the luma is repeated in all three channels, so the shape
    is kept (what a pipeline stage needs); else the channel axis has size 1. RGB only.
    """
    image, layout = check_image(image, layout)
    need_rgb(image, layout, "rgb_to_grayscale")
    (r, g, b), ax = _channel_split(to_float(jnp.asarray(image)), layout)
    y = GRAY_WEIGHTS[0] * r + GRAY_WEIGHTS[1] * g + GRAY_WEIGHTS[2] * b
    y = jnp.expand_dims(y, ax)
    if keep_channels:
        y = jnp.repeat(y, 3, axis=ax)
    return back(y, image.dtype)


# --------------------------------------------------------------------------- random twins


def _brightness_params(key, shape, *, layout, max_delta=0.2):
    check_number("max_delta", max_delta, low=0)
    m = jnp.asarray(max_delta, jnp.float32)
    return {"delta": uniform(key, -m, m)}


def _hue_params(key, shape, *, layout, max_delta=0.1):
    check_number("max_delta", max_delta, low=0, high=0.5)
    m = jnp.asarray(max_delta, jnp.float32)
    return {"delta": uniform(key, -m, m)}


def _factor_params(key, shape, *, layout, lower=0.8, upper=1.2):
    check_range("(lower, upper)", (lower, upper), low=0)
    return {"factor": uniform(key, lower, upper)}


def _gamma_params(key, shape, *, layout, min_gamma=0.8, max_gamma=1.25):
    check_range("(min_gamma, max_gamma)", (min_gamma, max_gamma), low=0)
    return {"gamma": uniform(key, min_gamma, max_gamma)}


def _grayscale_params(key, shape, *, layout, p=0.1):
    check_number("p", p, low=0, high=1)
    return {"gray": bernoulli(key, p)}


def _apply_brightness(image, params, *, layout, max_value=None):
    return adjust_brightness(image, params["delta"], max_value=max_value, layout=layout)


def _apply_contrast(image, params, *, layout):
    return adjust_contrast(image, params["factor"], layout=layout)


def _apply_saturation(image, params, *, layout):
    return adjust_saturation(image, params["factor"], layout=layout)


def _apply_hue(image, params, *, layout):
    return adjust_hue(image, params["delta"], layout=layout)


def _apply_gamma(image, params, *, layout, gain=1.0, max_value=None):
    return adjust_gamma(image, params["gamma"], gain=gain, max_value=max_value, layout=layout)


def _apply_grayscale(image, params, *, layout):
    return maybe(params["gray"], lambda x: rgb_to_grayscale(x, layout=layout), jnp.asarray(image))


OPS = (
    OpInfo("adjust_brightness", adjust_brightness),
    OpInfo("adjust_contrast", adjust_contrast),
    OpInfo("adjust_saturation", adjust_saturation),
    OpInfo("adjust_hue", adjust_hue),
    OpInfo("adjust_gamma", adjust_gamma),
    OpInfo("rgb_to_grayscale", rgb_to_grayscale),
    random_op("random_brightness", _brightness_params, _apply_brightness,
              doc=""":func:`adjust_brightness` by ``delta ~ U(-max_delta, max_delta)`` (``dm_pix.random_brightness``).
    Parameters: ``{"delta"}``."""),
    random_op("random_contrast", _factor_params, _apply_contrast,
              doc=""":func:`adjust_contrast` by ``factor ~ U(lower, upper)`` (``dm_pix.random_contrast``).
    Parameters: ``{"factor"}``."""),
    random_op("random_saturation", _factor_params, _apply_saturation,
              doc=""":func:`adjust_saturation` by ``factor ~ U(lower, upper)`` (``dm_pix.random_saturation``).
    Parameters: ``{"factor"}``."""),
    random_op("random_hue", _hue_params, _apply_hue,
              doc=""":func:`adjust_hue` by ``delta ~ U(-max_delta, max_delta)``, ``max_delta`` in [0, 0.5]
    (``dm_pix.random_hue``). Parameters: ``{"delta"}``."""),
    random_op("random_gamma", _gamma_params, _apply_gamma,
              doc=""":func:`adjust_gamma` with ``gamma ~ U(min_gamma, max_gamma)`` (``dm_pix.random_gamma``).
    Parameters: ``{"gamma"}``."""),
    random_op("random_grayscale", _grayscale_params, _apply_grayscale,
              doc="""With probability ``p``, :func:`rgb_to_grayscale` (three equal channels); else unchanged.
    The default ``p=0.1`` is ``torchvision.transforms.RandomGrayscale``'s. Parameters:
    ``{"gray": bool}``."""),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
__test__ = doctests(OPS)  # the examples of the functions random_op wrote
