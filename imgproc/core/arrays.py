"""Layouts and dtypes: the one place images are reshaped and cast.

Every filter works internally on a 4-D ``(B, H, W, C)`` float32 array obtained by
*reshaping only* (no transpose):

===========  ======================  =============================
layout       caller's shape          internal (B, H, W, C)
===========  ======================  =============================
``HW``       (H, W)                  (1, H, W, 1)
``HWC``      (H, W, C)               (1, H, W, C)
``NHWC``     (N, H, W, C)            (N, H, W, C)
``CHW``      (C, H, W)               (C, H, W, 1)  (channels as planes)
``NCHW``     (N, C, H, W)            (N*C, H, W, 1)
===========  ======================  =============================

``layout=None`` infers ``HW``, ``HWC`` or ``NHWC`` from ``ndim`` (2, 3, 4); channel-first
layouts must be named.

dtypes: uint8, uint16, float16, bfloat16 and float32 are accepted; arithmetic is float32;
the output has the input's dtype. Integer output is rounded to nearest and saturated to
the dtype's range once, at the end (no clipping between stages for floats).
"""

from __future__ import annotations

import numpy as np
import jax
import jax.numpy as jnp

from imgproc.core.validate import DTYPES, LAYOUTS, check_dtype, check_layout, check_per_image, is_traced

# The precision every matrix product and convolution of the library states (tests/test_precision.py
# checks each traced program): float32 products on every backend. Left to the backend, a
# GPU computes float32 products in TF32 (about 3 significant digits): warp matrices, BM3D's
# transforms and colour conversions then depend on the device (docs/scale.md, "Precision").
HIGHEST = jax.lax.Precision.HIGHEST


def matmul(a, b):
    """``a @ b`` in float32 precision on every backend (:data:`HIGHEST`). On CPU the same
    bits as ``a @ b``: XLA:CPU computes float32 products in float32 whatever the precision."""
    return jnp.matmul(a, b, precision=HIGHEST)


def magnitude(squares):
    """``sqrt(squares)`` (a sum of squares: a gradient's length), whose derivative at 0 is
    taken as 0: the square root's is infinite there, and a gradient through a flat region
    of an image (every photo has one) was NaN. The values are ``jnp.sqrt``'s."""
    positive = squares > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, squares, 1.0)), 0.0)

__all__ = [
    "DTYPES", "LAYOUTS", "canvas_side", "channel_axis", "check_dtype", "check_layout", "compute_dtype", "dtype_max",
    "from_bhwc", "from_nhwc", "magnitude", "repeated", "resolve_max",
    "spatial_axes", "to_bhwc", "to_compute", "to_nhwc", "to_output",
]


def to_bhwc(x, layout: str):
    """Reshape ``x`` (in ``layout``) to the internal (B, H, W, C); no data movement."""
    s = x.shape
    if layout == "HW":
        return x.reshape(1, s[0], s[1], 1)
    if layout == "HWC":
        return x.reshape(1, *s)
    if layout == "CHW":
        return x.reshape(s[0], s[1], s[2], 1)
    if layout == "NCHW":
        return x.reshape(s[0] * s[1], s[2], s[3], 1)
    return x


def from_bhwc(y, shape):
    """Inverse of :func:`to_bhwc` for an image of the original ``shape``."""
    return y.reshape(shape)


def spatial_axes(layout: str) -> tuple[int, int]:
    """Axes of (H, W) in an array of ``layout``."""
    return {"HW": (0, 1), "HWC": (0, 1), "CHW": (1, 2), "NHWC": (1, 2), "NCHW": (2, 3)}[layout]


def channel_axis(layout: str):
    """Axis of C in ``layout`` (None for HW)."""
    return {"HW": None, "HWC": 2, "CHW": 0, "NHWC": 3, "NCHW": 1}[layout]


def compute_dtype(dtype) -> np.dtype:
    """float32 for every supported input dtype (float64 stays float64 when x64 is on)."""
    return jnp.promote_types(dtype, jnp.float32) if jnp.dtype(dtype) == jnp.float64 else jnp.dtype(jnp.float32)


def to_compute(x):
    return x.astype(compute_dtype(x.dtype))


def to_output(y, dtype):
    """Cast float ``y`` to ``dtype``: integers rounded to nearest and saturated, once."""
    dt = jnp.dtype(dtype)
    if jnp.issubdtype(dt, jnp.integer):
        info = jnp.iinfo(dt)
        return jnp.clip(jnp.round(y), info.min, info.max).astype(dt)
    return y.astype(dt)


def dtype_max(dtype) -> float:
    """White for ``dtype``: ``iinfo.max`` for integers, 1.0 for floats."""
    dt = jnp.dtype(dtype)
    return float(jnp.iinfo(dt).max) if jnp.issubdtype(dt, jnp.integer) else 1.0


_INTEGER_BITS = {255.0: 8, 65535.0: 16}


def integer_bits(max_value):
    """8 or 16 when ``max_value`` is an integer range (255, 65535: values are integer
    levels, as a uint8 or uint16 image's in a pipeline's float32), else None (float
    definitions; also for a traced ``max_value``)."""
    if is_traced(max_value):
        return None
    return _INTEGER_BITS.get(float(max_value))


def resolve_max(max_value, dtype):
    """The ``max_value`` an op uses: the given one (a finite number > 0, or one per image
    of a batch; ``ValueError`` otherwise), else the range of ``dtype``."""
    if max_value is None:
        return dtype_max(dtype)
    return check_per_image("max_value", max_value, low_open=True)


def to_nhwc(x, layout):
    """(N, H, W, C) view of ``x``: channels kept together (transposes channel-first)."""
    if layout == "HW":
        return x[None, :, :, None]
    if layout == "HWC":
        return x[None]
    if layout == "CHW":
        return jnp.moveaxis(x, 0, -1)[None]
    if layout == "NCHW":
        return jnp.moveaxis(x, 1, -1)
    return x


def from_nhwc(y, layout, shape):
    """Inverse of :func:`to_nhwc` for a result of the original ``shape``."""
    if layout == "CHW":
        return jnp.moveaxis(y[0], -1, 0)
    if layout == "NCHW":
        return jnp.moveaxis(y, -1, 1)
    return y.reshape(shape)


def slice_at(x, starts, sizes):
    """The block of ``x`` of ``sizes`` at ``starts``: ``lax.slice`` where every start is an
    int, ``lax.dynamic_slice`` where one is traced (a loop over offsets: the same code
    unrolled or in a ``fori_loop``).

    Example:
        >>> import jax.numpy as jnp
        >>> slice_at(jnp.arange(6).reshape(2, 3), (0, 1), (2, 2)).tolist()
        [[1, 2], [4, 5]]
    """
    if all(isinstance(s, int) for s in starts):
        return jax.lax.slice(x, starts, tuple(s + n for s, n in zip(starts, sizes)))
    return jax.lax.dynamic_slice(x, [jnp.asarray(s, jnp.int32) for s in starts], sizes)  # one index dtype (x64 too)


def repeated(x, count: int, axis: int):
    """``x`` (size 1 along ``axis``) repeated ``count`` times along ``axis``: what
    broadcasting would give, written as a join so that reverse mode sums the ``count``
    cotangents with additions. Broadcasting transposes to a ``reduce`` over ``axis``,
    which jaxlib 0.10's XLA:CPU hands to its YNNPACK library (on by default), where a
    reduction over an outer axis of a large array runs 10-45 times slower than XLA's own
    loop: a weight map shared by the colour planes (N, 1, H, W) against (N, C, H, W)
    (why: benchmarks/NOTES.md, "XLA:CPU's library reductions").

    Example:
        >>> import jax.numpy as jnp
        >>> repeated(jnp.ones((1, 1, 2)), 3, axis=1).shape
        (1, 3, 2)
    """
    if x.shape[axis] != 1:
        raise ValueError(f"repeated takes an array of size 1 along axis {axis}, not {x.shape}")
    return jnp.concatenate([x] * count, axis=axis) if count > 1 else x


def materialized(table):
    """``table`` (float32, any shape; small: a lookup table, resampling weights) passed
    through a matrix product with the identity, which is exact: XLA then computes it once,
    as an array. Left to fusion, XLA:CPU recomputes a table's whole expression for every
    element that reads it (per pixel), which made histogram equalisation and resampling
    taps slower (why: benchmarks/NOTES.md, "ImageNet training recipe")."""
    rows = table.reshape(-1, table.shape[-1])
    eye = jnp.eye(table.shape[-1], dtype=jnp.float32)
    return jnp.dot(rows.astype(jnp.float32), eye, precision=HIGHEST).reshape(table.shape)


def canvas_side(n: int) -> int:
    """A canvas side for images up to ``n`` pixels: the smallest of 16 and ``m * 2**k``
    (``m`` in 4..7: four steps an octave, at most 25 % padding) that holds ``n``. Coarse on
    purpose: the programs compiled are one per canvas side met (the variable-size batches
    of :mod:`imgproc.pipeline.variable_size`, whose size-setting stage reads only the taps
    it needs, so padding costs little; :func:`imgproc.restoration.auto_choice`).

    Example:
        >>> [canvas_side(n) for n in (5, 17, 37, 300, 375, 500, 1000)]
        [16, 20, 40, 320, 384, 512, 1024]
    """
    n = max(int(n), 16)
    k = max(n.bit_length() - 3, 0)
    return -(-n // (1 << k)) * (1 << k)
