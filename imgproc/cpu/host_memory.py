"""Keep freed host memory for reuse: a large win for big images on Linux.

By default glibc's ``malloc`` serves every block above its mmap threshold (at most
32 MB) straight from the kernel and hands it back on ``free``; the next block of that
size is fresh memory that the kernel must zero page by page on first touch. A
2048x2048x3 float32 image is 50 MB, so every buffer a filter writes (XLA's output and
temporaries, NumPy's and OpenCV's outputs alike) pays that zeroing, which costs more than
the filter itself, for imgproc and OpenCV alike (why: benchmarks/NOTES.md, "Host memory
reuse").

:func:`reuse_host_memory` raises the thresholds (``mallopt``) so freed blocks stay in
the process and are reused. It changes the whole process: memory freed after the peak
is kept, not returned to the system. So the library never calls it on import; the
``imgproc`` command calls it at start, and a program that processes large images can
call it once, early (before the first large allocation: threads created by earlier work
keep their own malloc arenas, and only part of the gain is left). The same effect for
any program: ``MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=2147483647``
in the environment.

Without it, the library already avoids fresh pages for the outputs of eager calls on
NumPy input: they are written into the buffers of dropped earlier results
(:mod:`imgproc.cpu.output_buffers`, ``imgproc.release_output_buffers()``), which changes
nothing outside imgproc. Intermediate buffers inside a program still get fresh pages.
"""

from __future__ import annotations

import ctypes

__all__ = ["reuse_host_memory"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 1 << 30  # bytes: blocks up to 1 GiB come from (and return to) the heap
TRIM_THRESHOLD = (1 << 31) - 1  # bytes of free heap top kept before returning memory


def reuse_host_memory() -> bool:
    """Ask glibc's malloc to keep and reuse freed blocks up to 1 GiB (see the module
    docstring for what it changes and what it gains). Returns True when applied, False
    where there is no glibc (macOS, Windows, musl): nothing is changed there."""
    try:  # the symbols already loaded into the process (libc's among them); no search
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):  # no mallopt (macOS, musl) or no CDLL(None)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
