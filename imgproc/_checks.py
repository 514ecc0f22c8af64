"""The image argument of every public op: checked, and handed to JAX without a copy.

Policy: float input must be finite (NaN or infinity is a ValueError naming the first bad
position) and within ``±max_abs`` (default 1e6: far outside any image range, a sign of
wrong units); integer input is always in range. Host (NumPy) data only: arrays already on
a device are not inspected, so dispatch stays asynchronous.
"""

from __future__ import annotations

import math

import numpy as np

from imgproc._arrays import check_dtype, check_layout

__all__ = ["aligned_empty", "check_finite", "check_image", "host_aligned"]

DEFAULT_MAX_ABS = 1e6


def check_image(image, layout):
    """Validate an image argument of any public op; returns ``(array, layout)``: dtype in the
    allowed list, ``layout`` valid for its ndim (or inferred; a channel-first-looking array
    without ``layout`` warns, :class:`imgproc.errors.LayoutWarning`), no empty axis, and (host
    NumPy data only: device arrays stay asynchronous) :func:`check_finite`."""
    if not hasattr(image, "shape") or not hasattr(image, "dtype"):
        image = np.asarray(image)
    check_dtype(image.dtype)
    layout = check_layout(layout, image.ndim, image.shape)
    if any(n == 0 for n in image.shape):
        raise ValueError(f"image must not be empty; got shape {tuple(image.shape)}")
    if isinstance(image, np.ndarray):
        check_finite(image)
        image = host_aligned(image)
    return image, layout


HOST_ALIGNMENT = 64  # bytes: what JAX's CPU client needs to use a NumPy buffer in place


def host_aligned(array: np.ndarray) -> np.ndarray:
    """``array``, or an aligned C-contiguous copy of it, so that the CPU backend reads it in
    place instead of copying it. JAX's CPU client aliases a NumPy argument whose data is
    C-contiguous and 64-byte aligned, and otherwise copies it much more slowly than NumPy
    does (benchmarks/NOTES.md, "Aligned host input"; NumPy's own allocations are usually
    only 16-byte aligned). The caller's array is never written.
    Other backends and small arrays (< 1 MiB) are returned as they are."""
    if array.nbytes < (1 << 20) or (array.flags.c_contiguous and array.ctypes.data % HOST_ALIGNMENT == 0):
        return array
    import jax

    if jax.default_backend() != "cpu":
        return array
    out = aligned_empty(array.shape, array.dtype)
    np.copyto(out, array)
    return out


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialised C-contiguous NumPy array whose data is 64-byte aligned (see
    :func:`host_aligned`)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    buffer = np.empty(nbytes + HOST_ALIGNMENT, np.uint8)
    start = (-buffer.ctypes.data) % HOST_ALIGNMENT
    return buffer[start:start + nbytes].view(dtype).reshape(shape)


def check_finite(image, *, max_abs: float = DEFAULT_MAX_ABS, name: str = "image") -> None:
    """Raise ValueError for NaN/Inf or |value| > max_abs in a float array (concrete only).

    Two reductions (min and max: NaN propagates through both) and no temporary array, so
    the check costs two reads of the image (the element-wise search for the first bad
    index runs only on the error path; benchmarks/NOTES.md, "The eager call")."""
    arr = np.asarray(image)
    if not np.issubdtype(arr.dtype, np.floating) and arr.dtype.name != "bfloat16":
        return
    if arr.size == 0:
        return
    if arr.dtype.name == "bfloat16":
        arr = arr.astype(np.float32)
    lo, hi = float(arr.min()), float(arr.max())
    if not (math.isfinite(lo) and math.isfinite(hi)):
        where = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise ValueError(f"{name} contains NaN or infinity (first at index {where}); only finite values are allowed")
    peak = max(-lo, hi)
    if peak > max_abs:
        raise ValueError(f"{name} has values up to {peak:g}, beyond the allowed ±{max_abs:g}; "
                         "images are expected in [0, 1], [0, 255] or [0, 65535]")
