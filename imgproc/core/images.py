"""The image argument of every public op: checked, and handed to JAX without a copy.

Policy: float input must be finite (NaN or infinity is a ValueError naming the first bad
position) and within ``±max_abs`` (default 1e6: far outside any image range, a sign of
wrong units); integer input is always in range. Host (NumPy) data only: arrays already on
a device are not inspected, so dispatch stays asynchronous.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from imgproc.core.arrays import check_dtype, check_layout
from imgproc.cpu import HOST_ALIGNMENT, copy_min_max, host_buffer, stays_in_place

__all__ = ["HOST_ALIGNMENT", "check_finite", "check_image", "host_aligned"]

DEFAULT_MAX_ABS = 1e6


def check_image(image, layout, *, read_in_place=False, check_later=False):
    """Validate an image argument of any public op; returns ``(array, layout)``: dtype in the
    allowed list, ``layout`` valid for its ndim (or inferred; a channel-first-looking array
    without ``layout`` warns, :class:`imgproc.errors.LayoutWarning`), no empty axis, and (host
    NumPy data only: device arrays stay asynchronous) :func:`check_finite`.

    NumPy data comes back aligned (:func:`host_aligned`); with ``read_in_place`` (the
    caller hands it to an :class:`imgproc.cpu.output_buffers.IntoBuffer` program, which reads
    a misaligned array in place itself), such an array comes back as it is (checked).

    With ``check_later`` (and ``read_in_place``) it returns ``(array, layout, finish)``: an
    array read where it is, without a copy, is not checked for finite values and range
    here but by ``finish()``, which the caller calls right after dispatching its program
    and before it hands the result over, so that the check runs while the program
    computes and a bad image still raises instead of giving a result (why:
    benchmarks/NOTES.md, "Misaligned input read in place"). An array that is copied is
    checked in the copy, and ``finish()`` does nothing."""
    if not hasattr(image, "shape") or not hasattr(image, "dtype"):
        image = np.asarray(image)
    check_dtype(image.dtype)
    layout = check_layout(layout, image.ndim, image.shape)
    if any(n == 0 for n in image.shape):
        raise ValueError(f"image must not be empty; got shape {tuple(image.shape)}")
    finish = no_check
    if isinstance(image, np.ndarray):
        if check_later and read_in_place and stays_in_place(image, copy=False):
            finish = functools.partial(_check_in_place, image)
        else:
            image = host_aligned(image, check=True, copy=not read_in_place)
    return (image, layout, finish) if check_later else (image, layout)


def no_check():
    """``finish`` for an image with nothing left to check (copied and checked, not NumPy, or
    checked already)."""


def host_aligned(array: np.ndarray, *, check: bool = False, copy: bool = True) -> np.ndarray:
    """``array``, or an aligned C-contiguous copy of it, so that the CPU backend reads it in
    place instead of copying it; with ``check``, :func:`check_finite` too, in the same pass.
    Without ``copy``, an array that an :class:`imgproc.cpu.output_buffers.IntoBuffer` program
    reads in place as it is (:func:`imgproc.cpu.output_buffers.aligned_flat_view`: a
    misaligned array) comes back itself (checked, without a copy).

    JAX's CPU client aliases a NumPy argument whose data is C-contiguous and 64-byte
    aligned, and otherwise copies it much more slowly than NumPy does (why:
    benchmarks/NOTES.md, "Aligned host input"; NumPy's own allocations are usually only
    16-byte aligned). The copy goes into the memory of an earlier one that nothing references
    any more (:func:`imgproc.cpu.output_buffers.host_buffer`), chunk by chunk, each chunk's
    minimum and maximum taken while it is in cache, the chunks shared between the cores.
    The caller's array is never written.
    Other backends and small arrays (< 1 MiB) are returned as they are (and checked)."""
    if stays_in_place(array, copy=copy):
        if check:  # one chunked pass on the cores (an aligned array: often an earlier result)
            _check_in_place(array)
        return array
    check = check and _is_float(array.dtype) and array.size > 0
    out = host_buffer(array.shape, array.dtype)
    if not check:
        np.copyto(out, array)
        return out
    _raise_unless_finite(array, *copy_min_max(array, out))
    return out


def _check_in_place(array: np.ndarray) -> None:
    """:func:`check_finite` of a float ``array`` in one chunked pass on the cores, no copy."""
    if _is_float(array.dtype) and array.size > 0:
        _raise_unless_finite(array, *copy_min_max(array, None))


def _is_float(dtype) -> bool:
    return np.issubdtype(dtype, np.floating) or dtype.name == "bfloat16"


def check_finite(image, *, max_abs: float = DEFAULT_MAX_ABS, name: str = "image") -> None:
    """Raise ValueError for NaN/Inf or |value| > max_abs in a float array (concrete only).

    Two reductions (min and max: NaN propagates through both) and no temporary array, so
    the check costs two reads of the image (the element-wise search for the first bad
    index runs only on the error path; why: benchmarks/NOTES.md, "The eager call")."""
    arr = np.asarray(image)
    if not _is_float(arr.dtype) or arr.size == 0:
        return
    values = arr.astype(np.float32) if arr.dtype.name == "bfloat16" else arr
    _raise_unless_finite(arr, float(values.min()), float(values.max()), max_abs=max_abs, name=name)


def _raise_unless_finite(arr, lo: float, hi: float, *, max_abs: float = DEFAULT_MAX_ABS, name: str = "image"):
    """The errors of :func:`check_finite`, given ``arr``'s minimum and maximum."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        values = arr.astype(np.float32) if arr.dtype.name == "bfloat16" else arr
        where = tuple(int(i) for i in np.argwhere(~np.isfinite(values))[0])
        raise ValueError(f"{name} contains NaN or infinity (first at index {where}); only finite values are allowed")
    peak = max(-lo, hi)
    if peak > max_abs:
        raise ValueError(f"{name} has values up to {peak:g}, beyond the allowed ±{max_abs:g}; "
                         "images are expected in [0, 1], [0, 255] or [0, 65535]")
