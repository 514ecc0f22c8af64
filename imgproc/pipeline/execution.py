"""How a :class:`imgproc.Pipeline` call is carried out, apart from what it computes:
chunks of a host batch too large for memory, size buckets (one compiled program for many
image sizes), and the split of a concrete CPU batch into one slice per core.

Each of these gives the same result as one call of the compiled program on the whole
batch: a random draw depends only on the key and the image's index (the indices, and any
replayed parameters, are sliced with the batch).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from imgproc.core.boundary import source_index
from imgproc.core.devices import on_several_devices
from imgproc.core.images import host_aligned
from imgproc.core.validate import check_mode, is_traced
from imgproc.cpu import cpu_cores, host_buffer, in_threads, keep

__all__ = [
    "MIN_IMAGES_PER_PART", "bucket_size", "chunk_size", "extend_from", "loop_parts", "part_count", "run_in_chunks",
    "run_parts",
]

DEFAULT_MAX_BYTES = 1 << 30
MIN_IMAGES_PER_PART = 8


def _slice(tree, sl):
    return jax.tree_util.tree_map(lambda a: a[sl], tree)


def _join(parts):
    return jax.tree_util.tree_map(lambda *a: np.concatenate([np.asarray(x) for x in a]), *parts)


# --------------------------------------------------------------------------- chunks


def chunk_size(shape, *, max_bytes: int = DEFAULT_MAX_BYTES, copies: int = 4) -> int:
    """Images per chunk so that ``copies`` float32 copies of a chunk fit in ``max_bytes``."""
    per_image = int(np.prod(shape[1:])) * 4 * copies
    return max(1, max_bytes // max(per_image, 1))


def run_in_chunks(fn, batch, *, max_bytes: int = DEFAULT_MAX_BYTES, key=None, indices=None, params=None,
                  return_params=False):
    """``fn(batch[i:j], key=key, indices=indices[i:j], params=params[i:j], ...)`` over
    chunks, joined (as NumPy). With the indices and parameters sliced along, random
    pipelines give the same result as one call."""
    batch = np.asarray(batch)
    n = chunk_size(batch.shape, max_bytes=max_bytes)
    if batch.shape[0] <= n:
        return fn(batch, key=key, indices=indices, params=params, return_params=return_params)
    base = np.arange(batch.shape[0]) if indices is None else np.asarray(indices)
    outs = []
    for i in range(0, batch.shape[0], n):
        sl = slice(i, i + n)
        random = key is not None or params is not None
        outs.append(fn(batch[sl], key=key, indices=base[sl] if random else None,
                       params=None if params is None else _slice(params, sl), return_params=return_params))
    return _join(outs)


# --------------------------------------------------------------------------- size buckets


def bucket_size(n: int) -> int:
    """Round ``n`` up to its size bucket: a multiple of ``2 ** max(4, bit_length(n) - 4)``
    (steps of 16 up to 511, then about 1/16 of the size: at most ~12% padding)."""
    step = 1 << max(4, int(n).bit_length() - 4)
    return -(-int(n) // step) * step


def extend_from(x, true_hw, axes, options, radius):
    """Refill the ``radius`` pixels around the true image (traced size ``true_hw[0]``,
    placed at static offset ``true_hw[1]``) along ``axes`` with the stage's boundary
    extension of the true image, so the stage on the padded array gives exactly the
    result on the true image inside it (every mode, ``wrap`` included). Only the strips
    the stage reads are written (in place); farther padding holds values no kept output
    depends on."""
    if radius == 0:
        return x
    mode = check_mode(options.get("mode", "reflect"))
    cval = options.get("cval", 0.0)
    sizes, offset = true_hw
    for axis, n in zip(axes, (sizes[0], sizes[1])):
        for start in (offset - radius, offset + n):  # before and after the true image
            src = source_index(start - offset + jnp.arange(radius), n, mode, jnp)
            strip = jnp.take(x, jnp.maximum(src, 0) + offset, axis=axis)
            if mode == "constant":
                shape = [1] * x.ndim
                shape[axis] = radius
                strip = jnp.where((src >= 0).reshape(shape), strip, jnp.asarray(cval, x.dtype))
            starts = [0] * x.ndim
            starts[axis] = start
            x = jax.lax.dynamic_update_slice(x, strip, [jnp.asarray(v, jnp.int32) for v in starts])
    return x


# --------------------------------------------------------------------------- one slice per core


def loop_parts(images, *, loops: bool, batched: bool, traced_args=()) -> int:
    """How many slices of the batch to run at once, one per core (1: the whole batch in
    one call). XLA:CPU runs a per-image ``lax.map`` (``loops``: the ``"map"`` strategy of
    random stages, the CPU default) on one core, so a batch split across the cores in
    threads runs up to that many times faster. Only for concrete batches on CPU, at least
    :data:`MIN_IMAGES_PER_PART` images a slice. Never for an array on several devices
    (:mod:`imgproc.core.devices`): its split is the devices'."""
    if not batched or any(is_traced(a) for a in (images, *traced_args)) or on_several_devices(images):
        return 1
    return part_count(images.shape[0], loops=loops)


def part_count(n: int, *, loops: bool) -> int:
    """How many slices a concrete host batch of ``n`` images is split into
    (:func:`loop_parts`); a batch size that is a multiple of it splits into slices of one
    shape (one program, not two)."""
    if not loops or jax.default_backend() != "cpu":
        return 1
    return max(1, min(cpu_cores(), n // MIN_IMAGES_PER_PART))


def run_parts(run, images, indices, params, parts, compiled: set, signature, *, return_params=False):
    """Run ``run(images[sl], indices[sl], params[sl])`` for ``parts`` slices in threads
    (:func:`in_threads`: the first slice of a new shape alone first, so each program is
    traced and compiled once; ``compiled`` holds the slice signatures already compiled,
    ``signature(shape)`` makes one) and join them. ``run`` returns images, or ``(images, params)`` with
    ``return_params``; so does this, joined."""
    bounds = np.linspace(0, images.shape[0], parts + 1).astype(int)
    slices = [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]

    def one(sl):
        part = host_aligned(images[sl]) if isinstance(images, np.ndarray) else images[sl]
        return jax.block_until_ready(run(part, indices[sl], None if params is None else _slice(params, sl)))

    ordered = in_threads(one, slices, lambda sl: signature((sl.stop - sl.start,) + tuple(images.shape[1:])), compiled)
    if not return_params:
        return _join_aligned(ordered)
    return _join_aligned([o[0] for o in ordered]), _join([o[1] for o in ordered])


def _join_aligned(parts):
    """Join image slices with NumPy into an aligned buffer that the CPU client then uses in
    place (about half the time of ``jnp.concatenate``): the memory of an earlier joined
    result that nothing references any more, else new memory
    (:func:`imgproc.cpu.output_buffers.host_buffer`)."""
    first = parts[0]
    joined = host_buffer((sum(p.shape[0] for p in parts),) + tuple(first.shape[1:]), first.dtype)
    np.concatenate([np.asarray(p) for p in parts], out=joined)
    for part in parts:  # copied out: their buffers may be written again (imgproc.cpu.output_buffers)
        keep(part)
    try:
        return jax.device_put(joined, may_alias=True)
    except TypeError:  # a jax older than device_put's may_alias: one more copy
        return jnp.asarray(joined)
