"""The aligned copy of a NumPy input, chunk by chunk and split between the cores.

JAX's CPU client reads a NumPy argument in place only when its data is C-contiguous and
64-byte aligned; :mod:`imgproc.core.images` hands every other host array over as a copy made
here, taking each chunk's minimum and maximum while it is in cache (the finite-value check
of the input costs no second pass).
"""

from __future__ import annotations

import numpy as np

from imgproc.cpu.cores import cpu_cores
from imgproc.cpu.output_buffers import HOST_ALIGNMENT, flat_view_offset

__all__ = ["CHUNK_BYTES", "THREADS_MIN_BYTES", "copy_min_max", "stays_in_place"]

CHUNK_BYTES = 1 << 18  # copied and checked while it is in the core's cache
THREADS_MIN_BYTES = 8 << 20  # smaller arrays are copied and checked by the caller's thread alone


def stays_in_place(array: np.ndarray, *, copy: bool) -> bool:
    """Whether :func:`imgproc.core.images.host_aligned` returns ``array`` itself (no copy to make)."""
    aligned = array.flags.c_contiguous and array.ctypes.data % HOST_ALIGNMENT == 0
    read_at_skew = not copy and flat_view_offset(array) is not None
    return array.nbytes < (1 << 20) or aligned or read_at_skew or not _on_cpu()


def _on_cpu() -> bool:
    import jax

    return jax.default_backend() == "cpu"


def copy_min_max(src: np.ndarray, dst: np.ndarray | None):
    """Copy ``src`` into ``dst`` (same shape, C-contiguous; ``None``: no copy) chunk by
    chunk; the minimum and maximum of the values (NaN when there is one), as floats, each
    chunk's taken while it is in cache. Arrays of at least :data:`THREADS_MIN_BYTES` are
    split between the CPU cores: the caller's thread takes one share, a small pool the
    others (NumPy releases the GIL in both loops). A strided ``src`` is copied whole, then
    checked."""
    if not src.flags.c_contiguous:
        if dst is not None:
            np.copyto(dst, src)
        values = src if dst is None else dst
        values = values.astype(np.float32) if values.dtype.name == "bfloat16" else values
        return float(values.min()), float(values.max())
    flat_src = src.reshape(-1)
    flat_dst = flat_src if dst is None else dst.reshape(-1)
    step = max(1, CHUNK_BYTES // src.dtype.itemsize)

    def share(lo: int, hi: int):
        mins, maxs = [], []
        for a in range(lo, hi, step):
            chunk = flat_dst[a:min(a + step, hi)]
            if dst is not None:
                np.copyto(chunk, flat_src[a:a + chunk.size])
            values = chunk.astype(np.float32) if chunk.dtype.name == "bfloat16" else chunk
            mins.append(values.min())
            maxs.append(values.max())
        return np.minimum.reduce(mins), np.maximum.reduce(maxs)

    n = flat_src.size
    shares = 1 if src.nbytes < THREADS_MIN_BYTES else cpu_cores()
    bounds = [min(n, -(-n * k // shares // step) * step) for k in range(shares + 1)]
    futures = [_pool().submit(share, a, b) for a, b in zip(bounds[1:-1], bounds[2:]) if b > a]
    results = [share(bounds[0], bounds[1])] + [f.result() for f in futures]
    return float(np.minimum.reduce([r[0] for r in results])), float(np.maximum.reduce([r[1] for r in results]))


_POOL = []


def _pool():
    if not _POOL:
        import concurrent.futures

        _POOL.append(concurrent.futures.ThreadPoolExecutor(max(1, cpu_cores() - 1), thread_name_prefix="imgproc-copy"))
    return _POOL[0]


