"""Shared pieces of the augmentation ops: value range, layouts, per-image keys.

Value range
    Colour and noise ops need to know what "white" is. Every such op takes
    ``max_value=None``; ``None`` resolves, in order, to: the range of the dtype a
    :class:`imgproc.Pipeline` was called with (the pipeline computes in float32, so a uint8
    image arrives as float32 0..255 and the pipeline says "255"); else ``iinfo(dtype).max``
    for an integer image (255 for uint8, 65535 for uint16); else ``1.0`` for float images.

Batches
    Random ops work on one image (HW, HWC, CHW). Called on a batch (NHWC, NCHW) they give
    image ``i`` the key ``jax.random.fold_in(key, i)``: the rule of the pipeline, so a
    sample's draw depends only on (key, index).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools

import jax
import jax.numpy as jnp
import numpy as np

from imgproc._checks import check_image
from imgproc._arrays import channel_axis, spatial_axes

_PIPELINE_MAX: contextvars.ContextVar = contextvars.ContextVar("imgproc_pipeline_max_value", default=None)
_PIPELINE_DTYPE: contextvars.ContextVar = contextvars.ContextVar("imgproc_pipeline_dtype", default=None)

BATCH_LAYOUTS = {"NHWC": "HWC", "NCHW": "CHW"}


def dtype_max(dtype) -> float:
    """White for ``dtype``: ``iinfo.max`` for integers, 1.0 for floats."""
    dt = jnp.dtype(dtype)
    return float(jnp.iinfo(dt).max) if jnp.issubdtype(dt, jnp.integer) else 1.0


@contextlib.contextmanager
def pipeline_value_range(dtype):
    """While a pipeline traces, ops with ``max_value=None`` use ``dtype``'s range."""
    token = _PIPELINE_MAX.set(dtype_max(dtype))
    token_dtype = _PIPELINE_DTYPE.set(jnp.dtype(dtype))
    try:
        yield
    finally:
        _PIPELINE_MAX.reset(token)
        _PIPELINE_DTYPE.reset(token_dtype)


def pipeline_dtype():
    """The dtype the tracing pipeline was called with (None outside a pipeline)."""
    return _PIPELINE_DTYPE.get()


def resolve_max(max_value, dtype):
    """The ``max_value`` an op uses (see the module docstring)."""
    if max_value is not None:
        return max_value
    ctx = _PIPELINE_MAX.get()
    if ctx is not None:
        return ctx
    return dtype_max(dtype)


def hw(image, layout):
    """(H, W) of ``image``."""
    a, b = spatial_axes(layout)
    return image.shape[a], image.shape[b]


def channels(image, layout) -> int:
    ax = channel_axis(layout)
    return 1 if ax is None else image.shape[ax]


def need_rgb(image, layout, name):
    if channels(image, layout) != 3:
        raise ValueError(f"{name} needs an RGB image (3 channels); got shape {tuple(image.shape)} with layout {layout!r}")


def to_float(image):
    return image.astype(jnp.float32) if image.dtype != jnp.float32 else image


def back(y, dtype):
    """Cast a float result to the input's dtype (integers rounded and saturated)."""
    from imgproc._arrays import to_output

    return to_output(y, dtype)


def check_static(name, value, allowed):
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    return value


def check_range(name, value, *, low=None, high=None):
    """A concrete ``(lo, hi)`` pair with ``low <= lo <= hi <= high``; traced passes through."""
    if isinstance(value, jax.core.Tracer) or (
        isinstance(value, (tuple, list)) and any(isinstance(v, jax.core.Tracer) for v in value)
    ):
        return value
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (low, high); got {value!r}") from None
    ok = np.isfinite(lo) and np.isfinite(hi) and lo <= hi
    ok = ok and (low is None or lo >= low) and (high is None or hi <= high)
    if not ok:
        bounds = f" within [{'-inf' if low is None else low:g}, {'inf' if high is None else high:g}]"
        raise ValueError(f"{name} must be a pair low <= high{bounds}; got {value!r}")
    return value


def check_number(name, value, *, low=None, high=None):
    """A concrete finite number within ``[low, high]``; traced values pass through."""
    if isinstance(value, jax.core.Tracer):
        return value
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number; got {value!r}") from None
    if not np.isfinite(v) or (low is not None and v < low) or (high is not None and v > high):
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        raise ValueError(f"{name} must be a finite number in [{lo}, {hi}]; got {value!r}")
    return value


def check_key(key):
    if key is None:
        raise ValueError("a random op needs a key: jax.random.key(seed)")
    return key


def image_keys(key, n, indices=None):
    """Per-image keys ``fold_in(key, i)`` for ``i`` in ``indices`` (default ``arange(n)``)."""
    idx = jnp.arange(n) if indices is None else jnp.asarray(indices)
    return jax.vmap(lambda i: jax.random.fold_in(key, i))(idx)


def random_op(fn):
    """Make a one-image random op ``fn(key, image, *, layout, **kw)`` accept batches too:
    image ``i`` of an NHWC/NCHW batch is drawn with ``fold_in(key, i)``."""

    @functools.wraps(fn)
    def wrapper(key, image, *, layout=None, **kwargs):
        check_key(key)
        image, layout = check_image(image, layout)
        if layout in BATCH_LAYOUTS:
            inner = BATCH_LAYOUTS[layout]
            keys = image_keys(key, image.shape[0])
            return jax.vmap(lambda k, im: fn(k, im, layout=inner, **kwargs))(keys, jnp.asarray(image))
        return fn(key, image, layout=layout, **kwargs)

    return wrapper


# --------------------------------------------------------------------------- per-pixel noise
#
# Per-pixel random fields (noise, salt and pepper) are drawn from a counter-based hash
# keyed by two words of ``jax.random.bits(key)``, not by ``jax.random.normal`` on the whole
# image: on one CPU core threefry normals cost about 16 ns a value, hashed ones about 3.5 ns
# (measured on 256 images of 224x224x3). Each value is ``mix(mix(counter ^ k0) + k1)`` with ``mix`` the
# "lowbias32" integer finaliser (an invertible 32-bit mixer; Wellons 2018); normals are
# ``sqrt(2) * erfinv(2u - 1)`` like ``jax.random.normal``. Reproducible for a given key,
# independent across keys derived by ``fold_in``/``split``.


def _mix(v):
    v = v ^ (v >> 16)
    v = v * jnp.uint32(0x7FEB352D)
    v = v ^ (v >> 15)
    v = v * jnp.uint32(0x846CA68B)
    return v ^ (v >> 16)


def _counter(shape, layout):
    """The index of each element in (H, W, C) order, whatever the layout, so a channel-first
    image gets the same field as its channel-last twin."""
    if layout in ("CHW", "NCHW"):
        c, h, w = shape[-3:]
        ic = jax.lax.broadcasted_iota(jnp.uint32, shape, len(shape) - 3)
        ih = jax.lax.broadcasted_iota(jnp.uint32, shape, len(shape) - 2)
        iw = jax.lax.broadcasted_iota(jnp.uint32, shape, len(shape) - 1)
        i = (ih * w + iw) * c + ic
        if layout == "NCHW":
            i = i + jax.lax.broadcasted_iota(jnp.uint32, shape, 0) * (c * h * w)
        return i
    return jnp.arange(int(np.prod(shape)), dtype=jnp.uint32).reshape(shape)


def _hash_fields(key, shape, count, layout=None):
    """``count`` independent uint32 fields of ``shape``: field ``j`` at counter ``i`` is
    ``mix(mix(i ^ k[2j]) + k[2j + 1])`` with ``k = jax.random.bits(key, (2 * count,))``."""
    k = jax.random.bits(key, (2 * count,), jnp.uint32)
    i = _counter(shape, layout)
    return [_mix(_mix(i ^ k[2 * j]) + k[2 * j + 1]) for j in range(count)]


def _unit(words):
    """Uniform in (0, 1) from 32-bit words (24-bit resolution, never 0 or 1)."""
    return ((words >> 8).astype(jnp.float32) + 0.5) * (1.0 / 16777216.0)


def hash_uniform(key, shape, layout=None):
    """Uniform (0, 1) float32 field of ``shape`` (see the block comment above); the same
    numbers at the same (H, W, C) position for channel-first and channel-last layouts."""
    return _unit(_hash_fields(key, shape, 1, layout)[0])


def hash_normal(key, shape, layout=None):
    """Standard normal float32 field of ``shape``: ``sqrt(2) * erfinv(2u - 1)`` of a hashed
    uniform field (the inverse-CDF method of ``jax.random.normal``; elementwise, so XLA fuses
    it into one loop; Box-Muller's ``cos`` costs 3x more on CPU)."""
    u = _unit(_hash_fields(key, shape, 1, layout)[0])
    return np.float32(np.sqrt(2.0)) * jax.scipy.special.erfinv(2.0 * u - 1.0)
