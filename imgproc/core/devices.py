"""Batches split over several devices (``jax.sharding``): how a pipeline or a public op
keeps the split instead of gathering the batch on one device.

A batch is *device-sharded* when it is a concrete ``jax.Array`` whose ``NamedSharding``
splits axis 0 (the batch axis of NHWC and NCHW) evenly over one or more mesh axes and no
other axis. Every imgproc op works on each image alone, so such a batch runs as one
``jax.shard_map`` program: each device computes its own images, nothing is exchanged (no
collective in the compiled program) and the result has the input's sharding. Random draws
use the images' *global* indices (``lax.axis_index`` times the per-device batch plus the
local position), so image ``i`` draws from ``stage_key(key, i, ...)`` exactly as on one
device and the values are identical.

Other multi-device arrays (replicated, or split along a spatial axis) run as one ``jit``
program on their sharding (correct values; XLA may exchange data); they are never split
into the per-core threads of :mod:`imgproc.pipeline.execution`.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec

from imgproc.core.program_cache import KeptPrograms

__all__ = ["batch_partition", "global_indices", "on_several_devices", "shard_over_batch"]


def on_several_devices(x) -> bool:
    """Whether ``x`` is a concrete ``jax.Array`` placed on more than one device."""
    return (isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer)
            and len(x.sharding.device_set) > 1)


def batch_partition(x):
    """``(mesh, axes, spec)`` when ``x`` is a device-sharded batch (see the module
    docstring): ``axes`` the mesh axes axis 0 is split over, ``spec`` the input's
    ``PartitionSpec``; None otherwise."""
    if not on_several_devices(x) or x.ndim == 0:
        return None
    sharding = x.sharding
    if not isinstance(sharding, NamedSharding):
        return None
    spec = tuple(sharding.spec) + (None,) * (x.ndim - len(sharding.spec))
    if spec[0] is None or any(s is not None for s in spec[1:]):
        return None
    axes = tuple(spec[0]) if isinstance(spec[0], (tuple, list)) else (spec[0],)
    parts = math.prod(sharding.mesh.shape[a] for a in axes)
    if parts < 2 or x.shape[0] % parts:
        return None
    return sharding.mesh, axes, sharding.spec


def batch_spec(axes) -> PartitionSpec:
    """The ``PartitionSpec`` splitting axis 0 over ``axes`` (other axes whole)."""
    return PartitionSpec(axes[0] if len(axes) == 1 else tuple(axes))


def global_indices(axes, local_n: int):
    """Inside ``shard_map``: the global batch indices of this device's ``local_n`` images."""
    return jax.lax.axis_index(tuple(axes)) * local_n + jnp.arange(local_n)


def shard_over_batch(fn, mesh, axes, in_specs, out_specs):
    """``jax.jit(jax.shard_map(fn, ...))``: ``fn`` runs once per device on its images.
    ``check_vma=False``: the random strategies mix per-device values with the replicated
    key in primitives that the varying-axes check refuses ("requires varying manual axes
    to match"), and nothing here needs its transpose rules."""
    return jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False))


_PROGRAMS = KeptPrograms(256)


def freeze(value):
    """A hashable stand-in for an op's option (Python scalars, strings, lists, dicts and
    stages as their spec), or None when it holds an array: such an option may be
    per image and cannot be closed over in a per-device program."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return ("v", type(value).__name__, value)
    if isinstance(value, (list, tuple)):
        items = tuple(freeze(v) for v in value)
        return None if any(i is None for i in items) else ("seq", items)
    if isinstance(value, dict):
        items = tuple((k, freeze(v)) for k, v in sorted(value.items(), key=lambda kv: str(kv[0])))
        return None if any(i is None for _, i in items) else ("map", items)
    if hasattr(value, "to_spec") and hasattr(value, "info"):  # a Stage (nested in random_choice, ...)
        return freeze(value.to_spec())
    if dataclasses.is_dataclass(value) and value.__dataclass_params__.frozen:  # LoweringHints
        fields = freeze(dataclasses.asdict(value))
        return None if fields is None else ("dataclass", type(value).__qualname__, fields)
    if callable(value) and getattr(value, "__module__", "").startswith("imgproc"):
        return ("fn", value.__module__, getattr(value, "__qualname__", repr(value)))
    return None


def map_batch(fn, x, partition, *, replicated=(), key=None, with_indices=False):
    """``fn(images, *replicated[, indices])`` once per device on its images of the
    device-sharded batch ``x`` (``partition`` from :func:`batch_partition`); every output
    leaf is split along axis 0 like ``x``. ``indices``: the images' global indices.
    ``key``: a hashable description of ``fn`` (with its closed-over options) under which
    the compiled program is kept; None builds a new one."""
    mesh, axes, spec = partition

    def body(local, *rest):
        return fn(local, *rest, global_indices(axes, local.shape[0])) if with_indices else fn(local, *rest)

    def build():
        return shard_over_batch(body, mesh, axes, (spec,) + (PartitionSpec(),) * len(replicated), batch_spec(axes))

    if key is None:
        return build()(x, *replicated)
    return _PROGRAMS.get((key, mesh, axes, spec, len(replicated), with_indices), build)(x, *replicated)
