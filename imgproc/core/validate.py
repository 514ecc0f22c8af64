"""The one place user-facing arguments are checked.

Every check raises ``ValueError`` with a message naming the argument and the allowed
values, eagerly, before anything is traced. Traced values (inside ``jax.jit``) cannot be
inspected and pass through unchanged. A leaf module: it imports no other imgproc module
than :mod:`imgproc.errors` (itself a leaf).
"""

from __future__ import annotations

import os
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from imgproc.errors import LayoutWarning

# scipy.ndimage's boundary modes (imgproc.core.boundary implements them)
MODES = ("reflect", "mirror", "nearest", "wrap", "constant")
# scipy's grid-* names: for filters (ndimage.correlate, gaussian_filter, uniform_filter)
# scipy computes exactly the same as these modes (verified in tests/core/test_conventions.py)
MODE_ALIASES = {"grid-mirror": "reflect", "grid-wrap": "wrap", "grid-constant": "constant"}
# modes of the geometry ops (sample, rotate, translate): scipy.ndimage's interpolation names.
# Their "wrap" is scipy's "grid-wrap"; "grid-mirror" is "reflect"; "grid-constant" (cval
# beyond the edge, interpolated with it) differs from "constant" and is its own mode.
SAMPLE_MODES = ("constant", "nearest", "reflect", "mirror", "wrap", "grid-constant")
SAMPLE_MODE_ALIASES = {"grid-mirror": "reflect", "grid-wrap": "wrap"}
# lowerings of a correlation (imgproc.filters.convolution)
METHODS = ("auto", "separable", "direct", "conv", "convolve2d", "fft", "pallas")
LAYOUTS = ("HW", "HWC", "CHW", "NHWC", "NCHW")
LAYOUT_NDIM = {"HW": 2, "HWC": 3, "CHW": 3, "NHWC": 4, "NCHW": 4}
_INFERRED_LAYOUT = {2: "HW", 3: "HWC", 4: "NHWC"}
DTYPES = ("uint8", "uint16", "float16", "bfloat16", "float32")

__all__ = [
    "DTYPES",
    "MODE_ALIASES",
    "SAMPLE_MODES",
    "LAYOUTS",
    "METHODS",
    "MODES",
    "check_bool",
    "check_choice",
    "check_dtype",
    "check_indices",
    "check_layout",
    "check_list_values",
    "check_same_range",
    "check_saved_float_range",
    "check_sample_mode",
    "check_method",
    "check_mode",
    "check_key",
    "check_number",
    "check_int",
    "check_odd",
    "check_per_image",
    "check_odd_pair",
    "check_sigma_pair",
    "check_range",
    "check_size_pair",
    "is_traced",
]


def is_traced(value) -> bool:
    """True for a value only known while tracing (``jax.core.Tracer``), also inside a list."""
    if isinstance(value, (list, tuple)):
        return any(is_traced(v) for v in value)
    return isinstance(value, jax.core.Tracer)


def check_number(name, value, *, low=None, high=None, low_open=False):
    """A finite number within ``[low, high]`` (``(low, high]`` with ``low_open``); returns
    it unchanged. Traced values pass through.

    Example:
        >>> check_number("sigma", -1, low=0)
        Traceback (most recent call last):
        ...
        ValueError: sigma must be a finite number in [0, inf); got -1
    """
    if is_traced(value):
        return value
    try:
        if isinstance(value, (str, bytes)):  # float("1") would pass, and the op then fail later
            raise TypeError
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number; got {value!r}") from None
    too_low = low is not None and (v <= low if low_open else v < low)
    if not np.isfinite(v) or too_low or (high is not None and v > high):
        lo = "(-inf" if low is None else f"{'(' if low_open else '['}{low:g}"
        hi = "inf)" if high is None else f"{high:g}]"
        raise ValueError(f"{name} must be a finite number in {lo}, {hi}; got {value!r}")
    return value


def check_indices(indices, n: int):
    """``indices`` for ``n`` images (random draws ``fold_in(key, index)``): ``n`` integers
    in ``[0, 2**31)``, as int32 (a NumPy array for host data: a ``jax.Array`` made here would
    compile a conversion program per batch size); a single image (``n == 1``) may give one
    integer.
    A float index would be truncated and a 64-bit one wrapped into another image's draw,
    so both are refused (values only for host data: a ``jax.Array`` is left on its devices).

    Example:
        >>> check_indices([0.5, 1.0], 2)
        Traceback (most recent call last):
        ...
        ValueError: indices must hold one integer per image (2) in [0, 2**31); got float64 values
    """
    want = f"indices must hold one integer per image ({n}) in [0, 2**31)"
    # a jax.Array's values are not fetched (it may span other hosts' devices, or be traced)
    traced = isinstance(indices, jax.Array)
    a = indices if traced else np.asarray(indices)
    if n == 1 and a.ndim == 0:
        a = a.reshape(1)
    if a.shape != (n,):
        raise ValueError(f"{want}; got shape {tuple(a.shape)}")
    if not jnp.issubdtype(a.dtype, jnp.integer) or a.dtype == bool:
        raise ValueError(f"{want}; got {a.dtype} values")
    if not traced and a.size and (a.min() < 0 or a.max() >= 2 ** 31):
        raise ValueError(f"{want}; got values {int(a.min())}..{int(a.max())}")
    return a.astype(jnp.int32) if traced else a.astype(np.int32)


def check_range(name, value, *, low=None, high=None):
    """A pair ``(lo, hi)`` with ``low <= lo <= hi <= high``; returns it unchanged. Traced
    pairs pass through."""
    if is_traced(value):
        return value
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (low, high); got {value!r}") from None
    ok = np.isfinite(lo) and np.isfinite(hi) and lo <= hi
    ok = ok and (low is None or lo >= low) and (high is None or hi <= high)
    if not ok:
        bounds = f" within {'(-inf' if low is None else f'[{low:g}'}, {'inf)' if high is None else f'{high:g}]'}"
        raise ValueError(f"{name} must be a pair low <= high{bounds}; got {value!r}")
    return value


def check_choice(name, value, allowed):
    """``value`` if it is one of ``allowed`` (a static option: mode, method, strategy...)."""
    if isinstance(value, (list, dict, np.ndarray)) or value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    return value


def check_bool(name, value) -> bool:
    """``value`` if it is True or False (a static switch: ``antialias``, ``full_range``):
    a string such as ``"no"`` would otherwise read as true.

    Example:
        >>> check_bool("antialias", "no")
        Traceback (most recent call last):
        ...
        ValueError: antialias must be True or False; got 'no'
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_int(name, value, *, low, high) -> int:
    """An integer in ``[low, high]``, as ``int``."""
    if not is_int(value) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}]; got {value!r}")
    return int(value)


# The largest kernel or window side (a Gaussian's ``2 * radius + 1`` too): JPEG's largest
# image side. Larger ones asked for gigabytes of weights before failing (sigma=1e9).
MAX_KERNEL_SIDE = 65535


def check_odd(name, size, *, low=1, high=None) -> int:
    """An odd integer in ``[low, high]`` (a kernel or window side; ``high`` None:
    :data:`MAX_KERNEL_SIDE`), as ``int``."""
    high = MAX_KERNEL_SIDE if high is None else high
    if not is_int(size) or size < low or size % 2 == 0 or size > high:
        raise ValueError(f"{name} must be an odd integer >= {low} and <= {high} ({low}, {low + 2}, ...); got {size!r}")
    return int(size)


def check_per_image(name, value, *, low_open=False, allow_none=False):
    """A finite number >= 0 (> 0 with ``low_open``), or one per image of a batch (a 1-D
    array); None where ``allow_none``. Traced values pass through."""
    if value is None and allow_none:
        return None
    if is_traced(value):
        return value
    try:
        arr = np.asarray(value, np.float64)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim > 1 or not np.all(np.isfinite(arr)) or np.any(arr <= 0 if low_open else arr < 0):
        bound = "> 0" if low_open else ">= 0"
        raise ValueError(f"{name} must be a finite number {bound}{' or None' if allow_none else ''}; got {value!r}")
    return value


def check_odd_pair(name, size) -> tuple[int, int]:
    """An odd int or a pair ``(height, width)`` of odd ints (scipy's per-axis ``size``), each
    at most :data:`MAX_KERNEL_SIDE`, as a tuple of ints."""
    if isinstance(size, (list, tuple, np.ndarray)):
        if len(size) != 2:
            raise ValueError(f"{name} must be an odd int or a pair (height, width) of odd ints; got {size!r}")
        return check_odd(f"{name}[0]", size[0]), check_odd(f"{name}[1]", size[1])
    s = check_odd(name, size)
    return s, s


def check_sigma_pair(name, sigma):
    """A sigma >= 0, or a pair ``(rows, cols)`` of them (scipy's per-axis sigma): returns the
    pair. Traced values pass through (a traced pair is an array of shape (2,))."""
    shape = np.shape(sigma) if not is_traced(sigma) or hasattr(sigma, "shape") else ()
    if shape == ():
        check_number(name, sigma, low=0)
        return sigma, sigma
    if shape != (2,):
        raise ValueError(f"{name} must be a number or a pair (rows, cols); got {sigma!r}")
    return check_number(f"{name}[0]", sigma[0], low=0), check_number(f"{name}[1]", sigma[1], low=0)


def check_size_pair(name, size) -> tuple[int, int]:
    """An int or a pair ``(height, width)`` of positive integers, as a tuple of ints."""
    if is_int(size):
        size = (size, size)
    try:
        sh, sw = size
        ok = all(is_int(s) or (isinstance(s, float) and s.is_integer()) for s in (sh, sw))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an int or a pair (height, width); got {size!r}") from None
    if not ok or sh < 1 or sw < 1:
        raise ValueError(f"{name} must be positive integers (height, width); got {size!r}")
    return int(sh), int(sw)


def check_key(key):
    """A JAX PRNG key: ``jax.random.key(seed)`` (or a legacy ``jax.random.PRNGKey``); a
    Python or NumPy int is taken as the seed, ``jax.random.key(seed)``. Refuses ``None`` and
    anything else with how to make a key."""
    if is_int(key):
        seed = int(key)
        if -2 ** 31 <= seed < 2 ** 31 and not jax.config.jax_enable_x64:
            # jax.random.key(seed)'s words, [0, seed mod 2**32], without the two small
            # programs it compiles on its first call
            return jax.random.wrap_key_data(np.array([0, seed & 0xFFFFFFFF], np.uint32))
        return jax.random.key(seed)
    if key is None:
        raise ValueError("a random op needs a key: key=jax.random.key(seed) (or an int seed, key=0)")
    if not hasattr(key, "dtype") or not hasattr(key, "shape"):
        raise ValueError(f"key must be a JAX PRNG key, jax.random.key(seed), or an int seed; got {type(key).__name__}")
    return key


def check_mode(mode: str) -> str:
    """One of :data:`MODES` (scipy.ndimage's names) or a ``grid-*`` alias of
    :data:`MODE_ALIASES`; returns the canonical name (``"grid-wrap"`` -> ``"wrap"``)."""
    if isinstance(mode, str) and mode in MODE_ALIASES:
        return MODE_ALIASES[mode]
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES + tuple(MODE_ALIASES))}; got {mode!r}")
    return mode


# a stage's boundary mode, checked when the stage is built (OpInfo.checks)
MODE_CHECK = {"mode": check_mode}


def check_sample_mode(mode: str) -> str:
    """A geometry op's mode (:data:`SAMPLE_MODES` or an alias of
    :data:`SAMPLE_MODE_ALIASES`), as its canonical name."""
    if isinstance(mode, str) and mode in SAMPLE_MODE_ALIASES:
        return SAMPLE_MODE_ALIASES[mode]
    return check_choice("mode", mode, SAMPLE_MODES + tuple(SAMPLE_MODE_ALIASES))


def check_method(method: str) -> str:
    """One of :data:`METHODS`."""
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    return method


# channel counts a channel-first array has on its channel axis (LayoutWarning)
_FEW_CHANNELS = (1, 3, 4)


def check_layout(layout, ndim: int, shape=None) -> str:
    """``layout`` for an array of ``ndim`` dimensions (``None`` infers HW, HWC or NHWC).
    With the array's ``shape``, an inferred layout that looks channel-first (see
    :class:`imgproc.errors.LayoutWarning`) warns, naming ``layout="CHW"`` / ``"NCHW"``."""
    if layout is None:
        if ndim not in _INFERRED_LAYOUT:
            raise ValueError(f"image must have 2 (HW), 3 (HWC) or 4 (NHWC) dimensions; got ndim={ndim}")
        inferred = _INFERRED_LAYOUT[ndim]
        if shape is not None and ndim in (3, 4) and shape[ndim - 3] in _FEW_CHANNELS and shape[-1] > 4:
            first = "CHW" if ndim == 3 else "NCHW"
            warnings.warn(
                f"an image of shape {tuple(shape)} without layout= is read as {inferred}, with {shape[-1]} channels; "
                f"if it is channel-first, pass layout={first!r} (layout={inferred!r} silences this warning)",
                LayoutWarning, stacklevel=_user_stacklevel())
        return inferred
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)} or None; got {layout!r}")
    if LAYOUT_NDIM[layout] != ndim:
        raise ValueError(f"layout {layout!r} needs a {LAYOUT_NDIM[layout]}-D array; got ndim={ndim}")
    return layout


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside imgproc, for a warning issued by the
    caller of this function."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # imgproc/, above core/
    frame, level = sys._getframe(2), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def check_dtype(dtype):
    """``dtype`` if it is one of :data:`DTYPES` (float64 is converted before this check by
    :func:`imgproc.core.array_type.as_input`), or float64 itself when it is a JAX array's
    dtype: only possible with ``jax_enable_x64`` on, where ops compute in float64 (what the
    gradient checks use, tests/test_gradients.py)."""
    dt = jnp.dtype(dtype)
    if dt.name == "float64" and jax.config.jax_enable_x64:
        return dt
    if dt.name not in DTYPES:
        hint = ""
        if dt.kind in "iu":
            hint = (" (the value range of an integer array of this type is ambiguous: convert it, e.g. "
                    "x.astype(np.uint8) for 0..255 data or x.astype(np.float32) / x.max() for 0..1)")
        elif dt.kind == "b":
            hint = (" (convert a mask with x.astype(np.uint8) * 255 or x.astype(np.float32); the binary "
                    "morphology ops called directly take bool masks: imgproc.binary_opening(mask, size=3))")
        raise ValueError(f"image dtype must be one of {', '.join(DTYPES)} or float64; got {dt.name}{hint}")
    return dt


def check_list_values(array) -> np.dtype:
    """The dtype a Python list of integers becomes: uint8 when every value is in 0..255,
    uint16 when in 0..65535; other values are refused."""
    lo, hi = (int(array.min()), int(array.max())) if array.size else (0, 0)
    if lo >= 0 and hi <= 255:
        return np.dtype(np.uint8)
    if lo >= 0 and hi <= 65535:
        return np.dtype(np.uint16)
    raise ValueError(f"a list of integers must hold values in 0..255 (uint8) or 0..65535 (uint16); got {lo}..{hi}. "
                     "Pass a NumPy array of an accepted dtype (uint8, uint16, float32 in [0, 1])")


def _range_name(dtype) -> str:
    dt = np.dtype(dtype)
    return f"0..{np.iinfo(dt).max}" if dt.kind in "iu" else "0..1"


def check_same_range(reference, image) -> None:
    """Refuse two images whose dtypes imply different value ranges (uint8 0..255 against a
    float 0..1 image): a metric of the two would be meaningless (psnr: about 5 dB)."""
    a, b = np.dtype(reference.dtype), np.dtype(image.dtype)
    if _range_name(a) != _range_name(b):
        raise ValueError(
            f"reference is {a.name} ({_range_name(a)}) but image is {b.name} ({_range_name(b)}): convert one to the "
            "other's range first, e.g. skimage.img_as_float(x) or (x * 255).round().astype(np.uint8), "
            "or pass data_range= if the values really share one range")


# A float image to save must look like [0, 1]: filters overshoot a little (sharpen, unsharp
# masking) and that is clipped on save, but values beyond these are another range (0..255
# floats, what ``uint8_image.astype(np.float32)`` or a pipeline's float32 gives), which
# saturation would turn white (or black).
SAVE_FLOAT_MAX = 1.5
SAVE_FLOAT_MIN = -0.5


class FloatRangeError(ValueError):
    """A float image to save holds values clearly outside [0, 1]: ``low``..``high``."""

    def __init__(self, message: str, low: float, high: float):
        super().__init__(message)
        self.low, self.high = low, high


def check_saved_float_range(array) -> None:
    """Refuse a float image to be saved whose values are clearly outside [0, 1] (max >
    :data:`SAVE_FLOAT_MAX` or min < :data:`SAVE_FLOAT_MIN`; :class:`FloatRangeError`),
    naming the fix."""
    a = np.asarray(array)
    if a.dtype.kind != "f" and a.dtype.name != "bfloat16" or a.size == 0:
        return
    a = a.astype(np.float32, copy=False)
    lo, hi = float(a.min()), float(a.max())  # NaN comes through both
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError("a float image to save must hold finite values; this one holds NaN or infinity "
                         "(it would come out black there)")
    if hi > SAVE_FLOAT_MAX or lo < SAVE_FLOAT_MIN:
        raise FloatRangeError(
            f"a float image is saved as values in [0, 1], but this one holds {lo:g}..{hi:g} (it would come out "
            f"{'white' if hi > SAVE_FLOAT_MAX else 'black'}): for 0..255 data pass image / 255, or "
            "np.clip(image, 0, 255).round().astype(np.uint8); for 0..65535 data, image / 65535", lo, hi)
