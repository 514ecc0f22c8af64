"""Intensity: normalize and to_float (the ops that output float32), invert, posterize,
solarize, equalize, autocontrast and adjust_sharpness, each deterministic op beside its
key-first random twin (torchvision's ``RandomInvert``, ``RandomPosterize``, ...: applied
with probability ``p``).

Definitions are torchvision's (``torchvision.transforms.v2.functional``), which on uint8
images are PIL's (``PIL.ImageOps`` / ``PIL.ImageEnhance``, what torchvision's PIL backend
calls); each docstring says where they differ.

Value range: every op takes ``max_value=None``, the range of the input dtype (255 for
uint8, 65535 for uint16, 1.0 for float images); a pipeline passes the range of the dtype
it was called with. A ``max_value`` of 255 or 65535 means *integer levels* (what
torchvision does for uint8/uint16 tensors: posterize masks bits, sharpness rounds its
smoothed image); any other ``max_value`` follows torchvision's float definitions.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from imgproc.augment.common import back, to_float as _as_f32
from imgproc.core.array_type import callers_type
from imgproc.core.arrays import channel_axis, from_nhwc, integer_bits, materialized, resolve_max, to_nhwc
from imgproc.core.eager import compiled_when_eager
from imgproc.core.images import check_image
from imgproc.core.keys import bernoulli, doctests, maybe, random_op
from imgproc.core.registry import KEEPS_TARGETS, NOT_DIFFERENTIABLE, OpInfo, register_ops
from imgproc.core.validate import check_number, is_traced
from imgproc.filters.separable import shifted_sum

# The 3x3 smoothing kernel of PIL's ImageFilter.SMOOTH and torchvision's adjust_sharpness.
SMOOTH_KERNEL = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], np.float32) / 13.0


def _prepare(image, layout, max_value):
    image, layout = check_image(image, layout)
    m = resolve_max(max_value, image.dtype)
    check_number("max_value", m, low=0, low_open=True)
    return image, layout, m, _as_f32(jnp.asarray(image))


def _channel_shape(x, layout, values, name):
    """``values`` (a number or one per channel) as an array broadcasting along the channel
    axis of ``x``."""
    v = jnp.asarray(values, jnp.float32)
    if v.ndim == 0:
        return v
    ax = channel_axis(layout)
    n = 1 if ax is None else x.shape[ax]
    if v.ndim != 1 or v.shape[0] not in (1, n):
        raise ValueError(f"{name} must be a number or one number per channel ({n}); got shape {tuple(v.shape)}")
    if ax is None:
        return v[0]
    shape = [1] * x.ndim
    shape[ax] = v.shape[0]
    return v.reshape(shape)


def _check_per_channel(name, values, *, nonzero=False):
    if is_traced(values):
        return
    arr = np.asarray(values, dtype=np.float64) if not isinstance(values, jax.Array) else np.asarray(values)
    if arr.ndim > 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be a finite number or a list of finite numbers (one per channel); "
                         f"got {values!r}")
    if nonzero and np.any(arr == 0):
        raise ValueError(f"{name} must not contain 0 (normalize divides by it); got {values!r}")


# --------------------------------------------------------------------------- to float


@callers_type(fixed_dtype=True)  # float32 out
def to_float(image, *, max_value=None, layout=None):
    """The image as float32 in [0, 1]: ``x / max_value`` (255 for uint8, 65535 for uint16,
    1 for floats: float input is only cast). torchvision's ``ToTensor`` /
    ``to_dtype(torch.float32, scale=True)``. The output dtype is float32 whatever the input
    (see :func:`normalize` for what that means in a pipeline).

    Example:
        >>> import numpy as np, imgproc
        >>> imgproc.to_float(np.array([[0, 255]], np.uint8)).tolist()
        [[0.0, 1.0]]
    """
    image, layout, m, x = _prepare(image, layout, max_value)
    return x / jnp.asarray(m, jnp.float32)


@callers_type(fixed_dtype=True)  # float32 out
def normalize(image, mean, std, *, max_value=None, layout=None):
    """``(x / max_value - mean) / std`` per channel, as float32: torchvision's
    ``ToTensor()`` followed by ``Normalize(mean, std)`` (a uint8 image is first scaled to
    [0, 1] by 1/255, a uint16 one by 1/65535; a float image is taken as already in [0, 1]).

    The one op family that changes the dtype: the result is float32 for every input dtype
    (no rounding, no saturation). In a :class:`imgproc.Pipeline`, a pipeline with a
    ``normalize`` (or :func:`to_float`) stage returns float32 instead of its input dtype;
    stages after it are told ``max_value=1.0``.

    Args:
        image: HW, HWC, CHW, NHWC or NCHW; any accepted dtype.
        mean, std: a number or one number per channel (traced: new values do not
            recompile); ``std`` must not contain 0 (``ValueError``).
        max_value: the input range (None: the dtype's, see the module docstring).

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.full((1, 1, 3), 255, np.uint8)
        >>> y = imgproc.normalize(x, mean=(0.5, 0.5, 0.5), std=(0.25, 0.5, 0.5))
        >>> y.dtype, y.tolist()
        (dtype('float32'), [[[2.0, 1.0, 1.0]]])
    """
    _check_per_channel("mean", mean)
    _check_per_channel("std", std, nonzero=True)
    image, layout, m, x = _prepare(image, layout, max_value)
    mean_ = _channel_shape(x, layout, mean, "mean")
    std_ = _channel_shape(x, layout, std, "std")
    return (x / jnp.asarray(m, jnp.float32) - mean_) / std_


# --------------------------------------------------------------------------- point ops


@callers_type
@compiled_when_eager
def invert(image, *, max_value=None, layout=None):
    """``max_value - x``: torchvision's ``invert`` (``PIL.ImageOps.invert`` on uint8).

    Example:
        >>> import numpy as np, imgproc
        >>> imgproc.invert(np.array([[0, 100, 255]], np.uint8)).tolist()
        [[255, 155, 0]]
    """
    image, layout, m, x = _prepare(image, layout, max_value)
    return back(jnp.asarray(m, jnp.float32) - x, image.dtype)


def posterize_float(x, bits, m):
    b = jnp.asarray(bits, jnp.float32)
    nbits = integer_bits(m)
    if nbits is not None:  # integer levels: keep the top `bits` bits (x & mask)
        q = 2.0 ** (nbits - b)
        return jnp.floor(jnp.clip(x, 0.0, m) / q) * q
    levels = 2.0 ** b  # torchvision's float definition
    return jnp.clip(jnp.floor(x / m * levels), 0.0, levels - 1.0) * (m / levels)


@callers_type
@compiled_when_eager
def posterize(image, bits, *, max_value=None, layout=None):
    """Keep the top ``bits`` bits of each value: torchvision's ``posterize``
    (``PIL.ImageOps.posterize`` on uint8: ``x & (0xFF << (8 - bits))``). Not
    differentiable: integer levels (its gradient is 0 almost everywhere).

    Integer ranges (``max_value`` 255 or 65535, see the module docstring) mask the bits of
    ``floor(clip(x, 0, max))`` (8 or 16 of them); a float range uses torchvision's float
    definition ``clip(floor(x / max * 2**bits), 0, 2**bits - 1) * max / 2**bits``.
    ``bits`` is an integer in [0, 8] (traced: policies draw it).

    Example:
        >>> import numpy as np, imgproc
        >>> imgproc.posterize(np.array([[0, 100, 255]], np.uint8), 2).tolist()
        [[0, 64, 192]]
    """
    if not is_traced(bits) and (isinstance(bits, bool) or not float(bits).is_integer()):
        raise ValueError(f"bits must be an integer in [0, 8]; got {bits!r}")
    check_number("bits", bits, low=0, high=8)
    image, layout, m, x = _prepare(image, layout, max_value)
    return back(posterize_float(x, bits, m), image.dtype)


def solarize_float(x, threshold, m):
    t = jnp.asarray(threshold, jnp.float32)
    return jnp.where(x >= t, jnp.asarray(m, jnp.float32) - x, x)


@callers_type
@compiled_when_eager
def solarize(image, threshold, *, max_value=None, layout=None):
    """Invert the values at or above ``threshold``: torchvision's ``solarize``
    (``PIL.ImageOps.solarize``: ``x if x < threshold else max - x``). ``threshold`` is in
    the image's own units, in [0, max_value] (128 on uint8 is PIL's default).

    Example:
        >>> import numpy as np, imgproc
        >>> imgproc.solarize(np.array([[0, 127, 128, 255]], np.uint8), 128).tolist()
        [[0, 127, 127, 0]]
    """
    image, layout, m, x = _prepare(image, layout, max_value)
    check_number("threshold", threshold, low=0, high=None if is_traced(m) else float(m))
    return back(solarize_float(x, threshold, m), image.dtype)


# --------------------------------------------------------------------------- per-channel ops


def equalize_nhwc(y, m):
    """PIL's ``ImageOps.equalize`` on every channel of every image of the NHWC float array
    ``y``, binned in 256 levels as torchvision's ``to_dtype(uint8)`` bins: ``x`` itself on
    integer levels (``m`` 255), ``floor(x / m * 255.999)`` otherwise. One histogram for all channels
    and images (each channel's bins offset by 256) and one table lookup: per plane it was
    slower on XLA:CPU (vmapped scatters and strided planes), and the table is
    :func:`materialized` (benchmarks/NOTES.md, "ImageNet training recipe")."""
    n, h, w, c = y.shape
    offset = (jnp.arange(n, dtype=jnp.int32)[:, None] * c + jnp.arange(c, dtype=jnp.int32)[None, :]) * 256
    if integer_bits(m) == 8:  # integer levels (a uint8 image in float32): its own bins
        v = jnp.clip(jnp.round(y), 0, 255).astype(jnp.int32)
    else:
        v = jnp.clip(jnp.floor(y / m * 255.999), 0, 255).astype(jnp.int32)
    flat = (v + offset[:, None, None, :]).ravel()
    hist = jnp.zeros(n * c * 256, jnp.int32).at[flat].add(1).reshape(n, c, 256)
    last = 255 - jnp.argmax(hist[..., ::-1] > 0, axis=-1)  # the highest level present
    step = (h * w - jnp.take_along_axis(hist, last[..., None], axis=-1)) // 255
    safe = jnp.maximum(step, 1)
    before = jnp.cumsum(hist, axis=-1) - hist  # pixels below each level
    lut = jnp.minimum((step // 2 + before) // safe, 255)
    lut = jnp.where(step > 0, lut, jnp.arange(256))  # one level, or too few pixels: identity
    lut = materialized(lut.astype(jnp.float32) * (m / 255.0))
    return lut.ravel()[flat].reshape(y.shape)


def channel_extrema(y):
    """Per image and channel ``(min, max)`` over H and W of the NHWC array ``y``, each
    ``(N, 1, 1, C)``. Reduced as rows of ``k * C`` values (``k`` up to 16 pixels), then
    the ``k``: XLA:CPU reduces the plain ``(H, W)`` axes with channel-strided reads, several
    times slower (benchmarks/NOTES.md, "ImageNet training recipe")."""
    n, h, w, c = y.shape
    k = next(k for k in (16, 8, 4, 2, 1) if (h * w) % k == 0)
    rows = y.reshape(n, h * w // k, k * c)
    lo = jnp.min(rows, axis=1).reshape(n, k, c).min(axis=1)
    hi = jnp.max(rows, axis=1).reshape(n, k, c).max(axis=1)
    return lo[:, None, None, :], hi[:, None, None, :]


@callers_type
@compiled_when_eager
def equalize(image, *, max_value=None, layout=None):
    """Histogram equalisation of each channel of each image: ``PIL.ImageOps.equalize`` (what
    torchvision's ``equalize`` computes, also for tensors). Not differentiable: a lookup in a
    histogram (its gradient is 0 almost everywhere).

    The values are binned in 256 levels as torchvision converts a tensor to uint8 first:
    a uint8 image (``max_value`` 255) is its own levels, any other range ``floor(clip(x, 0,
    max) / max * 255.999)`` (torchvision's ``to_dtype(uint8, scale=True)``; a 65535 range
    is binned so too, where torchvision shifts uint16 right by 8 bits); with ``h`` the
    histogram and ``step = (pixels - h[highest
    level present]) // 255``, level ``i`` maps to ``min((step // 2 + pixels below i) //
    step, 255)``; a plane with one level or ``step == 0`` keeps its levels. The result is
    scaled back by ``max / 255`` (so a float image comes back on the 1/255 grid, as
    torchvision's does).

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.repeat(np.array([10, 20, 30], np.uint8), 300).reshape(30, 30)
        >>> np.unique(imgproc.equalize(x)).tolist()
        [0, 150, 255]
    """
    image, layout, m, x = _prepare(image, layout, max_value)
    return back(from_nhwc(equalize_nhwc(to_nhwc(x, layout), m), layout, x.shape),
                image.dtype)


def autocontrast_float(x, layout, m):
    y = to_nhwc(x, layout)
    lo, hi = channel_extrema(y)
    flat = hi <= lo
    lo = jnp.where(flat, 0.0, lo)
    span = jnp.where(flat, m, hi - lo)
    out = jnp.clip((y - lo) * (m / span), 0.0, m)
    return from_nhwc(out, layout, x.shape)


@callers_type
@compiled_when_eager
def autocontrast(image, *, max_value=None, layout=None):
    """Stretch each channel of each image to the full range: ``(x - min) * max_value / (max -
    min)`` clipped to [0, max_value], a constant channel unchanged. torchvision's
    ``autocontrast`` and ``PIL.ImageOps.autocontrast`` (cutoff 0). PIL and torchvision
    truncate the uint8 result; imgproc rounds (the project's rule), so uint8 results differ
    from PIL's by at most one level (tested).

    Example:
        >>> import numpy as np, imgproc
        >>> imgproc.autocontrast(np.array([[50, 100, 150]], np.uint8)).tolist()
        [[0, 128, 255]]
    """
    image, layout, m, x = _prepare(image, layout, max_value)
    return back(autocontrast_float(x, layout, jnp.asarray(m, jnp.float32)), image.dtype)


def sharpness_float(x, factor, layout, m):
    y = to_nhwc(x, layout)
    h, w = y.shape[1], y.shape[2]
    if h <= 2 or w <= 2:  # torchvision: nothing inside the border
        return x
    terms = [(float(SMOOTH_KERNEL[i, j]), (i, j)) for i in range(3) for j in range(3)]
    blur = shifted_sum(y, terms, (y.shape[0], h - 2, w - 2, y.shape[3]), (1, 2))
    if integer_bits(m) is not None:
        blur = jnp.round(blur)
    f = jnp.asarray(factor, jnp.float32)
    inner = y[:, 1:-1, 1:-1]
    inner = jnp.clip(inner + (1.0 - f) * (blur - inner), 0.0, jnp.asarray(m, jnp.float32))
    # a select, not y.at[...].set(inner): XLA:CPU updated y's buffer in place while the
    # blur still read it when y is a slice of the program's argument (a misaligned NumPy
    # image's flat view), up to 0.03 off (tests/pipeline: every op on a misaligned image)
    inside = np.zeros((1, h, w, 1), bool)
    inside[:, 1:-1, 1:-1] = True
    out = jnp.where(inside, jnp.pad(inner, ((0, 0), (1, 1), (1, 1), (0, 0))), y)
    return from_nhwc(out, layout, x.shape)


@callers_type
@compiled_when_eager
def adjust_sharpness(image, factor, *, max_value=None, layout=None):
    """Blend with a smoothed copy: ``factor * x + (1 - factor) * smooth(x)``, clipped to [0,
    max_value]; torchvision's ``adjust_sharpness`` (``PIL.ImageEnhance.Sharpness``).

    ``smooth`` is the 3x3 kernel ``[[1, 1, 1], [1, 5, 1], [1, 1, 1]] / 13`` (PIL's
    ``ImageFilter.SMOOTH``); the one-pixel border keeps its values. ``factor`` 0 gives the
    smoothed image, 1 the original, 2 sharpens (traced). On integer ranges the smoothed image
    is rounded first, as torchvision does; torchvision and PIL truncate the uint8 blend,
    imgproc rounds it, so uint8 results differ by at most one level (tested).

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((3, 3), np.uint8); x[1, 1] = 130
        >>> imgproc.adjust_sharpness(x, 0.0).tolist()
        [[0, 0, 0], [0, 50, 0], [0, 0, 0]]
    """
    check_number("factor", factor, low=0)
    image, layout, m, x = _prepare(image, layout, max_value)
    return back(sharpness_float(x, factor, layout, m), image.dtype)


# --------------------------------------------------------------------------- random twins


def _p_params(key, shape, *, layout, p=0.5):
    check_number("p", p, low=0, high=1)
    return {"apply": bernoulli(key, p)}


def _posterize_params(key, shape, *, layout, bits=4, p=0.5):
    check_number("bits", bits, low=0, high=8)
    return _p_params(key, shape, layout=layout, p=p)


def _solarize_params(key, shape, *, layout, threshold=None, p=0.5):
    if threshold is not None:
        check_number("threshold", threshold, low=0)
    return _p_params(key, shape, layout=layout, p=p)


def _sharpness_params(key, shape, *, layout, factor=2.0, p=0.5):
    check_number("factor", factor, low=0)
    return _p_params(key, shape, layout=layout, p=p)


def _maybe(op):
    def apply(image, params, *, layout, max_value=None, **options):
        def run(x):
            return op(x, max_value=max_value, layout=layout, **options)
        return maybe(params["apply"], run, jnp.asarray(image))
    return apply


def _apply_invert(image, params, *, layout, max_value=None):
    return _maybe(invert)(image, params, layout=layout, max_value=max_value)


def _apply_posterize(image, params, *, layout, bits=4, max_value=None):
    return _maybe(posterize)(image, params, layout=layout, max_value=max_value, bits=bits)


def _apply_solarize(image, params, *, layout, threshold=None, max_value=None):
    m = resolve_max(max_value, image.dtype)
    t = 0.5 * m if threshold is None else threshold
    return _maybe(solarize)(image, params, layout=layout, max_value=max_value, threshold=t)


def _apply_equalize(image, params, *, layout, max_value=None):
    return _maybe(equalize)(image, params, layout=layout, max_value=max_value)


def _apply_autocontrast(image, params, *, layout, max_value=None):
    return _maybe(autocontrast)(image, params, layout=layout, max_value=max_value)


def _apply_sharpness(image, params, *, layout, factor=2.0, max_value=None):
    return _maybe(adjust_sharpness)(image, params, layout=layout, max_value=max_value, factor=factor)


OPS = (
    OpInfo("to_float", to_float, out_dtype="float32", out_max_value=1.0),
    OpInfo("normalize", normalize, out_dtype="float32", out_max_value=1.0),
    OpInfo("invert", invert),
    OpInfo("posterize", posterize, not_differentiable=NOT_DIFFERENTIABLE["posterize"]),
    OpInfo("solarize", solarize),
    OpInfo("equalize", equalize, not_differentiable=NOT_DIFFERENTIABLE["equalize"]),
    OpInfo("autocontrast", autocontrast),
    OpInfo("adjust_sharpness", adjust_sharpness),
    random_op("random_invert", _p_params, _apply_invert,
              doc=""":func:`invert` with probability ``p`` (torchvision's ``RandomInvert``). Parameters:
    ``{"apply": bool}``."""),
    random_op("random_posterize", _posterize_params, _apply_posterize,
              doc=""":func:`posterize` with probability ``p`` (torchvision's ``RandomPosterize``; its
    ``bits`` has no default, imgproc's is 4). Parameters: ``{"apply": bool}``. Not
    differentiable, as :func:`posterize`.""", not_differentiable=NOT_DIFFERENTIABLE["posterize"]),
    random_op("random_solarize", _solarize_params, _apply_solarize,
              doc=""":func:`solarize` with probability ``p`` (torchvision's ``RandomSolarize``;
    ``threshold=None`` is half the range, 127.5 on uint8). Parameters: ``{"apply": bool}``."""),
    random_op("random_equalize", _p_params, _apply_equalize,
              doc=""":func:`equalize` with probability ``p`` (torchvision's ``RandomEqualize``). Parameters:
    ``{"apply": bool}``. Not differentiable, as :func:`equalize`.""",
              not_differentiable=NOT_DIFFERENTIABLE["equalize"]),
    random_op("random_autocontrast", _p_params, _apply_autocontrast,
              doc=""":func:`autocontrast` with probability ``p`` (torchvision's ``RandomAutocontrast``).
    Parameters: ``{"apply": bool}``."""),
    random_op("random_adjust_sharpness", _sharpness_params, _apply_sharpness,
              doc=""":func:`adjust_sharpness` by ``factor`` with probability ``p`` (torchvision's
    ``RandomAdjustSharpness(sharpness_factor, p)``; imgproc's default factor is 2).
    Parameters: ``{"apply": bool}``."""),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
__test__ = doctests(OPS)  # the examples of the functions random_op wrote
