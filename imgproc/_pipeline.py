"""Pipelines: stages chained into one compiled XLA program.

A stage is a registered public op and its keyword options. The JSON spec of a pipeline
is a list of ``{"op": NAME, ...options}`` where NAME is the public function's name::

    [{"op": "gaussian_blur", "sigma": 1.0, "size": 5}, {"op": "sharpen"}]

Semantics (documented in the README):

* The whole chain runs in float32; the result is cast to the input dtype once, at the end
  (integers rounded and saturated), never between stages.
* Deterministic stages run on the whole batch at once. Random stages (registered with
  ``random=True``, called ``op(key, image, **options)``) run per image under ``vmap``;
  image ``i`` of the batch gets ``jax.random.fold_in(key, indices[i])`` (``indices``
  defaults to ``arange(B)``), and stage ``s`` uses ``fold_in(that, s)``. A sample's result
  depends only on (key, its index).
* One compiled program per input shape, dtype and layout (``jax.jit``'s cache); a second
  call with the same shape does not recompile (``pipe.trace_count`` counts traces).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import json
import os
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from imgproc._arrays import check_layout, layout_ndim, spatial_axes, to_output
from imgproc._boundary import source_index
from imgproc._checks import chunk_size, run_in_chunks
from imgproc._checks import aligned_empty, check_image, host_aligned
from imgproc._augment_run import loops_over_images
from imgproc._separable import feeds_next_stage

__all__ = ["Pipeline", "register_op", "registered_ops"]


@dataclasses.dataclass(frozen=True)
class OpInfo:
    name: str
    fn: Callable
    random: bool = False
    # Converts spec options to call options (e.g. nested stages to Stage objects).
    parse: Callable[[dict], dict] | None = None
    # For local (neighbourhood) ops: the kernel radius for given options. Size buckets
    # need it; ops without one (geometry, random) run at their exact size.
    radius: Callable[[dict], int] | None = None


_REGISTRY: dict[str, OpInfo] = {}


def register_op(name: str, fn: Callable, *, random: bool = False, parse=None, radius=None) -> Callable:
    """Make ``fn`` usable as a pipeline stage called ``name`` in specs.

    Deterministic ops are called ``fn(image, **options)``; random ops (``random=True``)
    ``fn(key, image, **options)`` on one image at a time. ``radius(options)`` gives the
    reach of a local op in pixels (enables size buckets).
    """
    _REGISTRY[name] = OpInfo(name, fn, random, parse, radius)
    return fn


def registered_ops() -> tuple[str, ...]:
    """Names accepted as ``"op"`` in a spec."""
    return tuple(sorted(_REGISTRY))


def _lookup(op) -> OpInfo:
    if isinstance(op, str):
        if op not in _REGISTRY:
            raise ValueError(f"unknown op {op!r}; known ops: {', '.join(registered_ops())}")
        return _REGISTRY[op]
    for info in _REGISTRY.values():
        if info.fn is op:
            return info
    raise ValueError(
        f"{getattr(op, '__name__', op)!r} is not a registered op; use one of "
        f"{', '.join(registered_ops())} or imgproc.register_op"
    )


@dataclasses.dataclass(frozen=True)
class Stage:
    """One op with its options. ``Stage.of(x)`` accepts a spec dict, a ``(fn_or_name,
    options)`` pair, a registered function or its name."""

    info: OpInfo
    options: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, item) -> "Stage":
        if isinstance(item, Stage):
            return item
        if isinstance(item, dict):
            if "op" not in item:
                raise ValueError(f"a spec stage needs an 'op' key; got {item!r}")
            opts = {k: v for k, v in item.items() if k != "op"}
            info = _lookup(item["op"])
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], dict):
            info, opts = _lookup(item[0]), dict(item[1])
        else:
            info, opts = _lookup(item), {}
        if info.parse is not None:
            opts = info.parse(opts)
        return cls(info, opts)

    def to_spec(self) -> dict:
        return {"op": self.info.name, **{k: _spec_value(v) for k, v in self.options.items()}}

    def __call__(self, image, key=None, *, layout=None):
        """Apply to ``image`` (``key`` required for random ops, one image at a time)."""
        opts = dict(self.options)
        if layout is not None:
            opts["layout"] = layout
        if self.info.random:
            return self.info.fn(key, image, **opts)
        return self.info.fn(image, **opts)


def _spec_value(v):
    if isinstance(v, Stage):
        return v.to_spec()
    if isinstance(v, (list, tuple)):
        return [_spec_value(x) for x in v]
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    return v


class Pipeline:
    """A chain of stages compiled into one XLA program.

    Args:
        stages: sequence of spec dicts (``{"op": "gaussian_blur", "sigma": 1.0}``),
            ``(fn_or_name, options)`` pairs, registered functions or op names.
        layout: ``None`` (infer HW/HWC/NHWC from ndim), ``"HW"``, ``"HWC"``, ``"CHW"``,
            ``"NHWC"`` or ``"NCHW"``.
        bucket: compile once per *size bucket* instead of once per image size (for
            programs that meet images of many sizes, like the command line). The image is
            placed ``reach`` pixels from the top/left of a zero array of the bucket's size
            (sides rounded up to a step of about 1/16 of the side, with at least ``reach``
            = the largest stage radius on every side), each stage
            re-extends the image from its true size with its boundary mode (so results
            are exactly those of the unpadded image) and the output is cropped back and
            returned as a NumPy array. Applies when every stage is local (has a radius);
            otherwise the pipeline runs at the exact size.

    Call it on one image or a batch: ``pipe(x)``, or ``pipe(x, key=key, indices=None)`` when
    it has random stages. Output shape and dtype equal the input's. On CPU a concrete batch
    whose random stages loop per image is run as one slice per core, in threads (see
    ``_loop_parts``); the result is the same array.

    Example:
        >>> import numpy as np, imgproc
        >>> pipe = imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 1.0}, {"op": "sharpen"}])
        >>> pipe.to_spec()
        [{'op': 'gaussian_blur', 'sigma': 1.0}, {'op': 'sharpen'}]
        >>> pipe(np.zeros((8, 8, 3), np.uint8)).dtype
        dtype('uint8')
    """

    def __init__(self, stages, *, layout=None, bucket=False):
        if isinstance(stages, (str, dict)) or not hasattr(stages, "__iter__"):
            raise ValueError("stages must be a list of stages (spec dicts, (op, options) pairs or ops)")
        self.stages = tuple(Stage.of(s) for s in stages)
        if layout is not None:
            check_layout(layout, layout_ndim(layout))
        self.layout = layout
        self.radii = tuple(
            None if s.info.radius is None or s.info.random else int(s.info.radius(s.options)) for s in self.stages
        )
        self.bucket = bool(bucket) and all(r is not None for r in self.radii)
        self.trace_count = 0
        self._compiled = jax.jit(self._run, static_argnames=("layout",))
        self._compiled_parts = set()  # slice signatures already compiled (_run_parts)

    @property
    def is_random(self) -> bool:
        return any(s.info.random for s in self.stages)

    def to_spec(self) -> list[dict]:
        """The JSON-serialisable spec: ``[{"op": NAME, ...options}, ...]``."""
        return [s.to_spec() for s in self.stages]

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_spec(), **kwargs)

    @classmethod
    def from_spec(cls, spec, *, layout=None, bucket=False) -> "Pipeline":
        """Build from a spec list (or its JSON text)."""
        if isinstance(spec, (str, bytes)):
            spec = json.loads(spec)
        if not isinstance(spec, list):
            raise ValueError(f"a pipeline spec is a JSON list of stages; got {type(spec).__name__}")
        return cls(spec, layout=layout, bucket=bucket)

    def __repr__(self):
        return f"Pipeline({self.to_spec()!r}, layout={self.layout!r})"

    def __call__(self, images, *, key=None, indices=None):
        images, layout = check_image(images, self.layout)
        if (isinstance(images, np.ndarray) and layout in ("NHWC", "NCHW")
                and images.shape[0] > chunk_size(images.shape)):
            # a host batch too large to hold on the device at once; indices keep each
            # image's random draw what it would be in one call
            return run_in_chunks(self, images, key=key, indices=indices)
        if self.is_random and key is None:
            raise ValueError("this pipeline has random stages: call it with key=jax.random.key(...)")
        if key is not None and indices is None:
            n = images.shape[0] if layout in ("NHWC", "NCHW") else 1
            indices = jnp.arange(n)
        if indices is not None:
            indices = jnp.asarray(indices)
        if not self.bucket:
            parts = self._loop_parts(images, key, indices, layout)
            if parts > 1:
                return self._run_parts(images, key, indices, layout, parts)
            return self._compiled(images, key, indices, None, layout=layout)
        axes = spatial_axes(layout)
        true_hw = [images.shape[a] for a in axes]
        reach = max(self.radii, default=0)
        pads = [(0, 0)] * images.ndim
        crop = [slice(None)] * images.ndim
        for a, n in zip(axes, true_hw):
            pads[a] = (reach, bucket_size(n + 2 * reach) - n - reach)
            crop[a] = slice(reach, reach + n)
        padded = host_aligned(np.pad(np.asarray(images), pads))  # read in place on CPU
        true = jnp.asarray(true_hw, jnp.int32)
        return np.asarray(self._compiled(padded, key, indices, (true, reach), layout=layout))[tuple(crop)]

    def _loop_parts(self, images, key, indices, layout) -> int:
        """How many slices of the batch to run at once, one per core (1: the whole batch in
        one call). XLA:CPU runs a per-image ``lax.map`` (the ``"map"`` strategy of random
        stages, the CPU default) on one core, so a batch split across the cores in
        threads runs up to that many times faster (256 images with Gaussian noise on 2
        cores: 212 -> 104 ms). Only for concrete batches on CPU, at least
        :data:`MIN_IMAGES_PER_PART` images a slice; results are unchanged since image
        ``i`` draws from ``fold_in(key, indices[i])`` in any slice."""
        if (layout not in ("NHWC", "NCHW") or jax.default_backend() != "cpu"
                or any(isinstance(a, jax.core.Tracer) for a in (images, key, indices))
                or not loops_over_images(self.stages)):
            return 1
        return max(1, min(cpu_cores(), images.shape[0] // MIN_IMAGES_PER_PART))

    def _run_parts(self, images, key, indices, layout, parts):
        """Run ``parts`` slices of the batch in threads (the first slice of a new shape
        alone first, so each program is traced and compiled once) and join them."""
        bounds = np.linspace(0, images.shape[0], parts + 1).astype(int)
        slices = [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]

        def run(sl):
            part = host_aligned(images[sl]) if isinstance(images, np.ndarray) else images[sl]
            return self._compiled(part, key, indices[sl], None, layout=layout)

        outs = {}
        for sl in slices:  # compile each slice shape once, before going parallel
            shape = (sl.stop - sl.start,) + tuple(images.shape[1:])
            sig = (shape, str(images.dtype), layout, str(key.dtype))
            if sig not in self._compiled_parts:
                outs[sl.start] = jax.block_until_ready(run(sl))
                self._compiled_parts.add(sig)
        todo = [sl for sl in slices if sl.start not in outs]
        for sl, out in zip(todo, _thread_pool().map(lambda sl: jax.block_until_ready(run(sl)), todo)):
            outs[sl.start] = out
        # joined by NumPy into an aligned buffer that the CPU client then uses in place:
        # 2 x 128 x 224x224x3 uint8, 9 ms against 19 ms for jnp.concatenate
        first = outs[0]
        joined = aligned_empty((images.shape[0],) + tuple(first.shape[1:]), first.dtype)
        np.concatenate([np.asarray(outs[sl.start]) for sl in slices], out=joined)
        try:
            return jax.device_put(joined, may_alias=True)
        except TypeError:  # a jax older than device_put's may_alias: one more copy
            return jnp.asarray(joined)

    def _run(self, images, key, indices, true_hw, *, layout):
        self.trace_count += 1  # runs only while tracing: counts compilations
        from imgproc._augment_base import pipeline_value_range

        with pipeline_value_range(images.dtype):  # max_value=None of colour/noise ops: the input's range
            return self._run_stages(images, key, indices, true_hw, layout=layout)

    def _run_stages(self, images, key, indices, true_hw, *, layout):
        x = images.astype(jnp.float32)
        is_batch = layout in ("NHWC", "NCHW")
        image_layout = {"NHWC": "HWC", "NCHW": "CHW"}.get(layout, layout)
        next_random = 0
        for s, stage in enumerate(self.stages):
            if true_hw is not None:
                x = _extend_from(x, true_hw, spatial_axes(layout), stage.options, self.radii[s])
            if not stage.info.random:
                # a stage feeding another one writes its border bands in place (cheaper
                # for XLA there; the last stage's output goes to the caller)
                feeds = s + 1 < len(self.stages)
                with feeds_next_stage() if feeds else contextlib.nullcontext():
                    x = stage(x, layout=layout)
                continue
            if not is_batch:
                k = jax.random.fold_in(jax.random.fold_in(key, indices[0]), s)
                x = stage(x, k, layout=image_layout)
                continue
            if s < next_random:  # already run, fused with an earlier random stage
                continue
            from imgproc._augment_run import run_random  # strategies: fused lax.map, vmap, group

            x, next_random = run_random(self.stages, s, key, indices, images if s == 0 else x, layout=image_layout)
        return to_output(x, images.dtype)


MIN_IMAGES_PER_PART = 8
_POOL = []


def cpu_cores() -> int:
    """CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _thread_pool():
    if not _POOL:
        _POOL.append(concurrent.futures.ThreadPoolExecutor(cpu_cores(), thread_name_prefix="imgproc"))
    return _POOL[0]


def bucket_size(n: int) -> int:
    """Round ``n`` up to its size bucket: a multiple of ``2 ** max(4, bit_length(n) - 4)``
    (steps of 16 up to 511, then about 1/16 of the size: at most ~12% padding)."""
    step = 1 << max(4, int(n).bit_length() - 4)
    return -(-int(n) // step) * step


def _extend_from(x, true_hw, axes, options, radius):
    """Refill the ``radius`` pixels around the true image (traced size ``true_hw[0]``,
    placed at static offset ``true_hw[1]``) along ``axes`` with the stage's boundary
    extension of the true image, so the stage on the padded array gives exactly the
    result on the true image inside it (every mode, ``wrap`` included). Only the strips
    the stage reads are written (in place); farther padding holds values no kept output
    depends on."""
    if radius == 0:
        return x
    mode = options.get("mode", "reflect")
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
