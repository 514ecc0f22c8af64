"""Batches split over several devices: put a batch on the devices, one share each.

A pipeline (or a public op) called on a batch whose axis 0 is split over a mesh returns
the same values as on one device, split the same way, with no data exchanged between the
devices: each device runs the compiled program on its own images (``jax.shard_map``), and
random stages draw image ``i``'s parameters from its *global* index, so the values do not
depend on the device count. See ``docs/scale.md``, "Several devices".

* :func:`shard_batch`: a host batch on this process's devices (one machine).
* :func:`global_batch`: one global batch from each process's share of it (several
  machines, ``jax.make_array_from_process_local_data``).

Example:
    >>> import numpy as np, jax, imgproc
    >>> x = np.zeros((2 * jax.local_device_count(), 8, 8, 3), np.uint8)
    >>> xs = imgproc.shard_batch(x)
    >>> y = imgproc.pipeline.presets.denoise()(xs)
    >>> y.sharding == xs.sharding, y.shape[1:]
    (True, (8, 8, 3))
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["BATCH_AXIS", "batch_sharding", "global_batch", "shard_batch"]

BATCH_AXIS = "batch"


def batch_sharding(*, mesh=None, axis=None) -> NamedSharding:
    """The ``NamedSharding`` that splits axis 0 over ``axis`` of ``mesh`` (other axes whole).

    Args:
        mesh: a ``jax.sharding.Mesh``; None: a 1-D mesh named ``"batch"`` over
            ``jax.devices()`` (every process's devices; on one machine, the local ones).
        axis: the mesh axis name (or tuple of names) axis 0 is split over; None: all of
            the mesh's axes.
    """
    if mesh is None:
        mesh = Mesh(np.array(jax.devices()), (BATCH_AXIS,))
    if not isinstance(mesh, Mesh):
        raise ValueError(f"mesh must be a jax.sharding.Mesh or None; got {type(mesh).__name__}")
    names = tuple(mesh.axis_names)
    axes = names if axis is None else (tuple(axis) if isinstance(axis, (tuple, list)) else (axis,))
    unknown = [a for a in axes if a not in names]
    if unknown or not axes:
        raise ValueError(f"axis must name axes of the mesh ({', '.join(map(repr, names))}); got {axis!r}")
    return NamedSharding(mesh, PartitionSpec(axes[0] if len(axes) == 1 else axes))


def _parts(sharding: NamedSharding) -> int:
    spec = sharding.spec[0]
    axes = spec if isinstance(spec, tuple) else (spec,)
    return int(np.prod([sharding.mesh.shape[a] for a in axes]))


def _check_batch(x, parts: int, what: str):
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError("a batch needs a batch axis (axis 0: NHWC or NCHW); got a scalar")
    if x.shape[0] % parts:
        raise ValueError(f"{what} of {x.shape[0]} images cannot be split evenly over {parts} devices: "
                         f"use a multiple of {parts} (pad the batch, or drop the remainder)")
    return x


def shard_batch(x, *, mesh=None, axis=None) -> jax.Array:
    """Put a batch on this process's devices, axis 0 split evenly over them.

    Args:
        x: a batch (NumPy or JAX array, NHWC or NCHW, any dtype; axis 0 is the batch, so
            labels or indices of shape ``(N, ...)`` work too). ``N`` must be a multiple
            of the device count: a batch that is not is refused (ValueError naming the
            count) rather than padded, since padding would change what the caller gets
            back.
        mesh: a ``jax.sharding.Mesh`` of this process's devices; None: a 1-D mesh named
            ``"batch"`` over ``jax.local_devices()``.
        axis: as for :func:`batch_sharding`.

    Returns:
        A ``jax.Array`` of ``x``'s shape and dtype, sharded by :func:`batch_sharding`.

    Example:
        >>> import numpy as np, jax, imgproc
        >>> n = jax.local_device_count()
        >>> xs = imgproc.shard_batch(np.zeros((n, 4, 4, 3), np.uint8))
        >>> len(xs.sharding.device_set) == n
        True
    """
    if mesh is None:
        mesh = Mesh(np.array(jax.local_devices()), (BATCH_AXIS,))
    sharding = batch_sharding(mesh=mesh, axis=axis)
    x = _check_batch(x, _parts(sharding), "a batch")
    return jax.device_put(x, sharding)


def global_batch(local, *, mesh=None, axis=None) -> jax.Array:
    """One global batch from each process's share of it (multi-host training).

    Every process calls it with its own ``local`` batch (the same shape in every
    process); the result is a global ``jax.Array`` of ``process_count() * N`` images,
    process ``p``'s images at rows ``p * N ... (p + 1) * N - 1`` (with the default mesh),
    each on one of that process's devices (``jax.make_array_from_process_local_data``).
    A pipeline called on it runs on every device at once, without exchanging data. On one
    process this is :func:`shard_batch` over all devices.

    For random pipelines, a sample's draw depends on its index in the batch it is called
    on; to make it depend on the *record* instead (the same whatever the host count or
    batch composition), pass the records' global indices as ``indices=`` (make them a
    global array the same way: ``global_batch(record_indices, mesh=mesh)``).

    Args:
        local: this process's share, ``(N, ...)`` (NumPy). ``N`` must be a multiple of
            this process's device count in the mesh.
        mesh: a ``jax.sharding.Mesh`` over the devices of every process; None: a 1-D mesh
            named ``"batch"`` over ``jax.devices()``.
        axis: as for :func:`batch_sharding`.

    Example:
        >>> import numpy as np, jax, imgproc
        >>> n = jax.local_device_count()
        >>> xs = imgproc.global_batch(np.zeros((n, 4, 4, 3), np.uint8))
        >>> xs.shape[0] == n * jax.process_count()
        True
    """
    sharding = batch_sharding(mesh=mesh, axis=axis)
    local_parts = _parts(sharding) // jax.process_count()
    local = _check_batch(np.asarray(local), max(local_parts, 1), "this process's share")
    return jax.make_array_from_process_local_data(sharding, local)
