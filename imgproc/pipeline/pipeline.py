"""Pipelines: stages chained into one compiled XLA program.

A stage is a registered public op and its keyword options (:mod:`imgproc.core.registry`). The
JSON spec of a pipeline is a list of ``{"op": NAME, ...options}`` where NAME is the
public function's name::

    [{"op": "gaussian_blur", "sigma": 1.0, "size": 5}, {"op": "sharpen"}]

Semantics (docs/guide.md, "Semantics"):

* The whole chain runs in float32; the result is cast to the input dtype once, at the end
  (integers rounded and saturated), never between stages. A pipeline with a stage of
  fixed output dtype (``normalize``, ``to_float``, the derivative filters: float32) returns that dtype instead. The
  pipeline passes each stage the value range of the input dtype (``max_value``; after a ``normalize`` or
  ``to_float`` stage, 1.0: :func:`max_value_after`) and its lowering hints explicitly.
* Deterministic stages run on the whole batch at once. A random stage draws its
  parameters for image ``i`` from ``stage_key(key, indices[i], s)`` =
  ``fold_in(fold_in(key, indices[i]), s)`` (``indices`` defaults to ``arange(B)``) and
  applies them; a sample's result depends only on (key, its index). The drawn parameters
  can be returned (``return_params=True``) and replayed (:meth:`Pipeline.apply`).
* One compiled program per input shape, dtype and layout (``jax.jit``'s cache); a second
  call with the same shape does not recompile (``pipe.trace_count`` counts traces). Equal
  pipelines (same ops, options, layout and ``bucket``) share their programs in a process: a
  pipeline built again runs those the first one compiled (docs/guide.md, "Compiled when").

How a call is carried out (chunks, size buckets, one slice per core) is
:mod:`imgproc.pipeline.execution`; how random stages run over a batch, :mod:`imgproc.pipeline.random_runs`.
"""

from __future__ import annotations

import dataclasses
import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from imgproc.pipeline import execution

from imgproc.augment.targets import check_targets, move_targets, target_rules
from imgproc.core import devices as _sharded
from imgproc.core.devices import freeze
from imgproc.core.program_cache import KeptPrograms
from imgproc.core.array_type import callers_type
from imgproc.core.arrays import dtype_max, spatial_axes, to_output
from imgproc.core.images import check_image, no_check
from imgproc.core.keys import BATCH_LAYOUTS, image_layout, stage_key
from imgproc.core.registry import LoweringHints, Stage, range_left_by, register_op, registered_ops, takes
from imgproc.core.validate import (LAYOUT_NDIM, check_choice, check_indices, check_key, check_layout, check_number,
                                   is_traced)
from imgproc.cpu import IntoBuffer, host_buffer
from imgproc.augment.choice import default_strategy
from imgproc.pipeline import variable_size
from imgproc.pipeline.random_runs import fused_body, fused_run, loops_over_images, run_random

__all__ = ["Pipeline", "register_op", "registered_ops"]

BUCKET_CHOICES = (False, True, "auto")  # Pipeline(bucket=...)
EXACT_SIZES = 2  # bucket="auto": the sizes met first that run at their exact size
EXACT_AFTER = 16  # bucket="auto": images of a size run in canvases before it gets its exact program

# equal pipelines' compiled programs, the most recently built first kept (tests start each
# case without them: tests/conftest.py)
EQUAL_PIPELINES = KeptPrograms(64)


def returns_fixed_dtype(pipeline) -> bool:
    """Whether ``pipeline`` (a :class:`Pipeline`, or a recipe: anything with
    ``output_dtype``) returns one dtype whatever its input's: it has a ``normalize`` or
    ``to_float`` stage. A float64 batch's result is then that dtype, not float64
    (:func:`imgproc.core.array_type.callers_type`)."""
    return pipeline.output_dtype(np.float64) != np.float64


def _sharing_key(stages, layout, bucket):
    """What makes two pipelines run the same programs: each stage's op (the registered
    entry itself) and options, the layout and the bucket rule; None when an option is an
    array or a function from outside imgproc (such a pipeline keeps programs of its own)."""
    options = tuple(freeze(s.options) for s in stages)
    if any(o is None for o in options):
        return None
    return tuple(id(s.info) for s in stages), options, layout, bucket


class _Programs:
    """A pipeline's compiled programs and what its calls met, kept by the first of equal
    pipelines (``owner``; its stages are every sharer's) and shared by the others under
    ``key`` (None: not shared)."""

    def __init__(self, owner: "Pipeline", key):
        self.owner, self.key = owner, key
        self.traces = 0  # counted while tracing: compilations
        # size buckets: per signature (layout, dtype, the other dims), the sizes met and how
        # they ran ("exact" or "canvas": bucket="auto"), and the canvases compiled
        self.sizes_met = {}
        self.canvases = variable_size.CanvasShapes()
        # on NumPy input, the result is written into a dropped earlier result's buffer
        # when it keeps the input's shape (imgproc.cpu.output_buffers)
        self.compiled = IntoBuffer(owner._run, static_argnames=("layout", "return_params"),
                                   out_like=lambda x: jax.ShapeDtypeStruct(x.shape, owner.output_dtype(x.dtype)))
        self.compiled_parts = set()  # slice signatures already compiled (execution.run_parts)
        self.sharded = {}  # (mesh, axes, spec, layout, ...) -> jit(shard_map) program (Pipeline._on_devices)
        # images of different sizes: one program per canvas shape (imgproc.pipeline.variable_size)
        self.canvas_program = jax.jit(owner._run_canvas, static_argnames=("layout", "return_params"))
        self.canvas_shapes = variable_size.CanvasShapes()  # canvases run: a batch that fits one runs in it


class Pipeline:
    """A chain of stages compiled into one XLA program.

    Args:
        stages: sequence of spec dicts (``{"op": "gaussian_blur", "sigma": 1.0}``),
            ``(fn_or_name, options)`` pairs, registered functions or op names. Unknown or
            missing options are refused here, naming the op's options.
        layout: ``None`` (infer HW/HWC/NHWC from ndim), ``"HW"``, ``"HWC"``, ``"CHW"``,
            ``"NHWC"`` or ``"NCHW"``.
        bucket: ``False`` (the default: one program per image size), ``True`` or
            ``"auto"``. ``True`` compiles once per *canvas* instead of once per image
            size: the image is placed ``reach`` pixels from the top/left of a zero array
            (``reach`` = the largest stage radius), each stage re-extends the image from
            its true size with its boundary mode (so results are exactly those of the
            unpadded image; a stage that reads the whole image, such as ``denoise``'s
            noise estimate, reads the true image only: ``OpInfo.on_canvas``; NL-means on
            float32 images is within a relative 3e-7) and the output is
            cropped back. The canvas is the image's size bucket (sides with
            ``reach`` on both ends, rounded up to a step of about 1/16 of the side), or
            the smallest canvas compiled before that holds it with at most twice its
            pixels (:class:`imgproc.pipeline.variable_size.CanvasShapes`), so a folder of
            any sizes compiles a few programs. ``"auto"`` (what the command line and
            :mod:`imgproc.ray` use) runs the first two sizes met at their exact size (a
            folder of one size, or a camera's landscape and portrait photos, get exact
            programs, 3-4× faster than a canvas's on a cheap filter: benchmarks/NOTES.md,
            "Folder throughput"), other sizes in canvases until 16 images of that size
            have come (then its own program pays), so the programs are few for any mix
            of sizes. The pixels are the same either
            way. Buckets apply when every stage is local (has a radius for its options)
            or has a canvas form; otherwise the pipeline runs at the exact size.

    Call it on one image or a batch: ``pipe(x)``, or ``pipe(x, key=key, indices=None)`` when
    it has random stages; ``return_params=True`` also returns what each stage drew (a
    tuple with one entry per stage: None for deterministic stages, a pytree of arrays
    with a leading batch axis for random ones), which :meth:`apply` replays. Output
    shape and dtype equal the input's (except that a pipeline with a ``normalize``,
    ``to_float`` or derivative stage returns float32, see :meth:`output_dtype`; the stages
    after a ``normalize`` or ``to_float`` are told ``max_value=1.0``, those after a
    derivative the input's range, its units); its type is the caller's (:mod:`imgproc.core.array_type`):
    NumPy (or a list) in gives a writable NumPy array, a ``jax.Array`` gives a
    ``jax.Array``, the same for buckets, chunks and the per-core split. On CPU a concrete batch whose random stages loop
    per image is run as one slice per core, in threads (:mod:`imgproc.pipeline.execution`); the
    result is the same array.

    Example:
        >>> import jax, numpy as np, imgproc
        >>> pipe = imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 1.0}, {"op": "sharpen"}])
        >>> pipe.to_spec()
        [{'op': 'gaussian_blur', 'sigma': 1.0}, {'op': 'sharpen'}]
        >>> pipe(np.zeros((8, 8, 3), np.uint8)).dtype
        dtype('uint8')
        >>> aug = imgproc.Pipeline([{"op": "random_rotate", "max_degrees": 30}])
        >>> x = np.random.default_rng(0).random((2, 8, 8, 3), dtype=np.float32)
        >>> y, params = aug(x, key=jax.random.key(0), return_params=True)
        >>> params[0]["angle"].shape
        (2,)
        >>> bool((aug.apply(x, params) == y).all())
        True
    """

    def __init__(self, stages, *, layout=None, bucket=False):
        if isinstance(stages, (str, dict)) or not hasattr(stages, "__iter__"):
            raise ValueError("stages must be a list of stages (spec dicts, (op, options) pairs or ops)")
        self.stages = _not_levels_after_float_results(tuple(Stage.of(s) for s in stages))
        if layout is not None:
            check_layout(layout, LAYOUT_NDIM.get(layout, 0))
        self.layout = layout
        # a stage's reach for its options; None: it reads the whole image (or draws)
        radii = (None if s.info.radius is None or s.info.random else s.info.radius(s.options) for s in self.stages)
        self.radii = tuple(None if r is None else int(r) for r in radii)
        bucket = check_choice("bucket", bucket, BUCKET_CHOICES)
        local = all(r is not None for r in self.radii)
        self.bucket = (bucket if bucket == "auto" else bool(bucket)) if local else False
        # compiled programs and what they met, shared by equal pipelines (same ops, options,
        # layout and buckets): a pipeline built again, in a loop or per call, does not compile again
        key = _sharing_key(self.stages, layout, self.bucket)
        self._programs = _Programs(self, None) if key is None else EQUAL_PIPELINES.get(key, lambda: _Programs(self, key))

    @property
    def trace_count(self) -> int:
        """Traces of this pipeline's programs (each one compiles), counted over every equal
        pipeline in this process: they share their programs."""
        return self._programs.traces

    @property
    def is_random(self) -> bool:
        return any(s.info.random for s in self.stages)

    @property
    def takes_lists(self) -> bool:
        """Whether a call takes a list of images of different sizes: the first stage sets
        a fixed output size (:mod:`imgproc.pipeline.variable_size`)."""
        try:
            variable_size.plan(self.stages)
        except ValueError:
            return False
        return True

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

    def __getstate__(self):
        """A pipeline pickles as its spec and options (``multiprocessing`` with spawn,
        Grain workers); the other side builds and compiles it again on first use."""
        return {"spec": self.to_spec(), "layout": self.layout, "bucket": self.bucket}

    def __setstate__(self, state):
        self.__init__(state["spec"], layout=state["layout"], bucket=state["bucket"])

    def __call__(self, images, *, key=None, indices=None, return_params=False, targets=None, min_box_area=1.0,
                 min_box_visibility=0.0, sizes=None):
        """Run on ``images``; random stages draw from ``key`` (see the class docstring): a
        ``jax.random.key(seed)``, or an int seed, taken as ``jax.random.key(seed)``.

        ``images``: one image, a batch, or a Python list of images of different sizes (HW,
        HWC, or CHW with ``layout="CHW"``; one dtype and channel count) when the pipeline's
        first stage sets a fixed output size: the result is then one ``(N, h, w, C)`` batch
        (``(N, h, w)`` for HW images), image ``i`` equal bit for bit to the pipeline on that
        image alone with index ``indices[i]`` (:mod:`imgproc.pipeline.variable_size`).
        ``sizes``: the padded form of the same: ``images`` an ``(N, H, W, C)`` (or NCHW)
        batch with image ``i`` in the top-left of ``images[i]``, ``sizes`` its true
        ``(height, width)`` per image, ``(N, 2)`` integers (traced inside ``jax.jit``).

        ``targets``: boxes, masks and keypoints that go with the images (a dict with keys
        among ``boxes``, ``box_valid``, ``masks``, ``keypoints``, ``keypoint_valid``; see
        :mod:`imgproc.augment.targets` and ``docs/augment.md``), moved with the same draws:
        the call then returns ``(images, targets)`` (``(images, targets, params)`` with
        ``return_params``). Boxes whose visible area falls below ``min_box_area`` pixels or
        ``min_box_visibility`` of their moved area are marked invalid. With a list of images,
        ``targets`` is a list of one such dict per image (each as for that image alone: its
        own number of boxes, masks of its size) and one dict per image comes back; with
        ``sizes=``, one batched dict whose masks are padded as the images."""
        if self.is_random and key is None:
            raise ValueError("this pipeline has random stages: call it with key=jax.random.key(seed) "
                             "(or an int seed, key=0)")
        if key is not None:
            key = check_key(key)
        if sizes is not None or variable_size.is_image_list(images):
            return self._variable_size(images, sizes, key=key, indices=indices, params=None,
                                       return_params=return_params, targets=targets, min_box_area=min_box_area,
                                       min_box_visibility=min_box_visibility)
        return self._call_batch(images, key=key, indices=indices, return_params=return_params, targets=targets,
                                min_box_area=min_box_area, min_box_visibility=min_box_visibility)

    @callers_type(fixed_dtype=returns_fixed_dtype)
    def _call_batch(self, images, *, key, indices, return_params, targets, min_box_area, min_box_visibility):
        if targets is not None:
            return self._with_targets(images, targets, key=key, indices=indices, params=None,
                                      return_params=return_params, min_area=min_box_area,
                                      min_visibility=min_box_visibility)
        return self._call(images, key=key, indices=indices, params=None, return_params=return_params)

    def apply(self, images, params, *, indices=None, targets=None, min_box_area=1.0, min_box_visibility=0.0,
              sizes=None):
        """Run with the parameters a call with ``return_params=True`` returned, instead of
        drawing them: ``pipe.apply(x, pipe(x, key=k, return_params=True)[1])`` equals
        ``pipe(x, key=k)``. ``params`` must match the batch (one entry per stage).
        ``targets``: as for a call; returns ``(images, targets)``. A list of images of
        different sizes, or ``sizes``: as for a call."""
        if not isinstance(params, (tuple, list)) or len(params) != len(self.stages):
            raise ValueError(f"params must hold one entry per stage ({len(self.stages)}), as returned with "
                             "return_params=True")
        if sizes is not None or variable_size.is_image_list(images):
            return self._variable_size(images, sizes, key=None, indices=indices, params=tuple(params),
                                       return_params=False, targets=targets, min_box_area=min_box_area,
                                       min_box_visibility=min_box_visibility)
        return self._apply_batch(images, params, indices=indices, targets=targets, min_box_area=min_box_area,
                                 min_box_visibility=min_box_visibility)

    @callers_type(fixed_dtype=returns_fixed_dtype)
    def _apply_batch(self, images, params, *, indices, targets, min_box_area, min_box_visibility):
        if targets is not None:
            return self._with_targets(images, targets, key=None, indices=indices, params=tuple(params),
                                      return_params=False, min_area=min_box_area, min_visibility=min_box_visibility)
        return self._call(images, key=None, indices=indices, params=tuple(params), return_params=False)

    def _with_targets(self, images, targets, *, key, indices, params, return_params, min_area, min_visibility):
        """The images as a plain call makes them, and the targets moved with the parameters
        that call drew (or was given)."""
        rules = target_rules(self.stages)  # refuses a stage without a rule, before anything runs
        check_number("min_box_area", min_area, low=0)
        check_number("min_box_visibility", min_visibility, low=0, high=1)
        checked, layout = check_image(images, self.layout)
        moved, restore = check_targets(targets, checked.shape, layout, layout in BATCH_LAYOUTS)
        if params is None:
            y, drawn = self._call(images, key=key, indices=indices, params=None, return_params=True)
        else:
            y, drawn = self._call(images, key=None, indices=indices, params=params, return_params=False), params
        moved = self._programs.owner._move_targets(moved, tuple(drawn), jnp.float32(min_area),
                                                   jnp.float32(min_visibility), shape=tuple(checked.shape),
                                                   dtype=str(checked.dtype), layout=layout, rules=tuple(rules))
        out = restore(moved)
        return (y, out, drawn) if return_params else (y, out)

    @functools.partial(jax.jit, static_argnums=0, static_argnames=("shape", "dtype", "layout", "rules"))
    def _move_targets(self, targets, params, min_area, min_visibility, *, shape, dtype, layout, rules):
        return move_targets(self.stages, rules, params, shape, layout, targets, max_value=dtype_max(jnp.dtype(dtype)),
                            min_area=min_area, min_visibility=min_visibility)

    def _call(self, images, *, key, indices, params, return_params):
        # a NumPy batch that self._programs.compiled reads in place is checked (finite, in range) by
        # finish_check: on the plain path of a pipeline without size buckets while the
        # program computes, before the result is handed over, as the filters do
        # (imgproc.core.images.check_image); on the other paths first
        images, layout, finish_check = check_image(images, self.layout, read_in_place=True, check_later=True)
        batched = layout in BATCH_LAYOUTS
        if indices is not None:
            indices = check_indices(indices, images.shape[0] if batched else 1)
        if isinstance(images, np.ndarray) and batched and images.shape[0] > execution.chunk_size(images.shape):
            # a host batch too large to hold on the device at once; indices keep each
            # image's random draw what it would be in one call (each chunk is checked by
            # its own call)
            return execution.run_in_chunks(self._call, images, key=key, indices=indices, params=params,
                                            return_params=return_params)
        partition = _sharded.batch_partition(images) if batched else None
        if partition is not None:  # a batch split over devices stays split (imgproc.core.devices)
            return self._on_devices(images, partition, key=key, indices=indices, params=params,
                                    layout=layout, return_params=return_params)
        if (key is not None or params is not None) and indices is None:
            indices = jnp.arange(images.shape[0] if batched else 1)
        if indices is not None:
            indices = jnp.asarray(indices)
        if self.bucket and not isinstance(images, jax.core.Tracer):  # traced images run at their exact size
            finish_check()  # first: the "auto" rule records a good image's size, and the bucket copies
            finish_check = no_check
            if self._in_bucket(images, layout):
                out = self._bucketed(images, layout)
                return (out, (None,) * len(self.stages)) if return_params else out
        parts = execution.loop_parts(images, loops=loops_over_images(self.stages), batched=batched,
                                      traced_args=(key, indices, params))
        if parts > 1:
            finish_check()

            def run(part, idx, p):
                return self._programs.compiled(part, key, idx, p, None, layout=layout, return_params=return_params)

            def signature(shape):
                return shape, str(images.dtype), layout, None if key is None else str(key.dtype), params is None

            return execution.run_parts(run, images, indices, params, parts, self._programs.compiled_parts, signature,
                                       return_params=return_params)
        out = self._programs.compiled(images, key, indices, params, None, layout=layout, return_params=return_params)
        finish_check()
        return out

    def _variable_size(self, images, sizes, *, key, indices, params, return_params, targets, min_box_area,
                       min_box_visibility):
        """A list of images of different sizes, or a padded batch with its ``sizes``: one
        canvas program (:mod:`imgproc.pipeline.variable_size`)."""
        plan = variable_size.plan(self.stages)  # refuses a pipeline whose output size depends on the input's
        if targets is not None:  # refused before anything runs, as for a batch
            rules = tuple(target_rules(self.stages))
            check_number("min_box_area", min_box_area, low=0)
            check_number("min_box_visibility", min_box_visibility, low=0, high=1)
        squeeze = False
        if sizes is None:
            one = variable_size.per_image_layout(self.layout, images[0].ndim)
            traced = any(is_traced(x) for x in images)
            # a replay keeps its own canvas (its parameters are one per image)
            canvas, true_hw = variable_size.to_canvas(images if traced else [np.asarray(x) for x in images], one,
                                                      xp=jnp if traced else np,
                                                      shapes=self._programs.canvas_shapes if params is None else None,
                                                      slot_multiple=execution.part_count(
                                                          len(images), loops=default_strategy() == "map"))
            on_device = next((x for x in images if isinstance(x, jax.Array)), None)
            if on_device is not None and not traced:
                # device images are padded on the host too (on the device, padding each size is a program
                # of its own) and the canvas goes back to their device: the result is a jax.Array there
                canvas = jax.device_put(canvas, min(on_device.devices(), key=lambda d: d.id))
            layout, squeeze = ("NCHW" if one == "CHW" else "NHWC"), one == "HW"
            if targets is not None:
                targets, restore = variable_size.list_targets(
                    targets, images, one, [canvas.shape[a] for a in spatial_axes(layout)])
        else:
            canvas, layout = images, ("NCHW" if self.layout in ("CHW", "NCHW") else "NHWC")
            true_hw = sizes
            if not hasattr(canvas, "ndim") or canvas.ndim != 4:
                raise ValueError(f"with sizes=, images is one padded batch (N, H, W, C) or (N, C, H, W); got "
                                 f"{getattr(canvas, 'shape', type(canvas).__name__)}")
            if np.shape(true_hw) != (canvas.shape[0], 2):
                raise ValueError(f"sizes holds each image's (height, width): shape ({canvas.shape[0]}, 2); got "
                                 f"{np.shape(true_hw)}")
            if targets is not None:  # one batched dict, masks padded as the images
                targets, restore = check_targets(targets, canvas.shape, layout, True)
        if not is_traced(true_hw):
            true_hw = np.asarray(true_hw)
            limits = np.asarray([canvas.shape[a] for a in spatial_axes(layout)])
            if not np.issubdtype(true_hw.dtype, np.integer) or (true_hw < 1).any() or (true_hw > limits).any():
                raise ValueError(f"sizes must be integers from 1 to the padded batch's (height, width) {tuple(limits)}")
            variable_size.check_fits(plan, self.stages, true_hw)
            true_hw = true_hw.astype(np.int32)
        n = len(images) if sizes is None else canvas.shape[0]  # the canvas may hold more slots (CanvasShapes)
        if indices is not None:
            indices = check_indices(indices, n)
        if canvas.shape[0] > n:
            indices = np.concatenate([np.arange(n, dtype=np.int32) if indices is None else indices,
                                      np.zeros(canvas.shape[0] - n, np.int32)])
        out = self._canvas_call(canvas, true_hw, key=key, indices=indices, params=params, layout=layout,
                                return_params=return_params or (targets is not None and params is None))
        y, drawn = out if isinstance(out, tuple) else (out, params)
        if canvas.shape[0] > n:
            y, drawn = y[:n], jax.tree_util.tree_map(lambda a: a[:n], drawn)
        if squeeze:
            y = y[..., 0]
        if targets is None:
            return (y, drawn) if return_params else y
        moved = self._canvas_targets(canvas[:n], targets, drawn, true_hw[:n], min_box_area, min_box_visibility,
                                     restore=restore, layout=layout, rules=rules)
        return (y, moved, drawn) if return_params else (y, moved)

    def _canvas_targets(self, canvas, targets, params, true_hw, min_area, min_visibility, *, restore, layout, rules):
        """The targets of a canvas batch moved with the parameters its call drew (or was
        given), in the caller's structure (``restore``) and array type: NumPy (writable)
        for a host canvas, as :func:`imgproc.core.array_type.callers_type` gives."""
        moved = restore(self._move_canvas_targets(targets, tuple(params), jnp.asarray(true_hw, jnp.int32),
                                                  jnp.float32(min_area), jnp.float32(min_visibility),
                                                  shape=tuple(canvas.shape), dtype=str(canvas.dtype), layout=layout,
                                                  rules=rules))
        return jax.tree_util.tree_map(np.array, moved) if isinstance(canvas, np.ndarray) else moved

    @functools.partial(jax.jit, static_argnums=0, static_argnames=("shape", "dtype", "layout", "rules"))
    def _move_canvas_targets(self, targets, params, true_hw, min_area, min_visibility, *, shape, dtype, layout, rules):
        plan = variable_size.plan(self.stages)
        out_hw = plan.form.out_size(plan.options)
        moved = variable_size.move_first(plan, rules[0], targets, params[plan.param_stage], true_hw, out_hw,
                                         min_area=min_area, min_visibility=min_visibility)
        a, b = spatial_axes(layout)
        fixed = list(shape)
        fixed[a], fixed[b] = out_hw
        return move_targets(self.stages[plan.stop:], rules[plan.stop:], params[plan.stop:], tuple(fixed), layout, moved,
                            max_value=dtype_max(jnp.dtype(dtype)), min_area=min_area, min_visibility=min_visibility)

    @callers_type(fixed_dtype=returns_fixed_dtype)
    def _canvas_call(self, images, true_hw, *, key, indices, params, layout, return_params):
        images, layout = check_image(images, layout)
        # host arrays unless traced: the per-core split slices them without a program of its own
        indices = np.arange(images.shape[0], dtype=np.int32) if indices is None else indices
        if not is_traced(indices):
            indices = np.asarray(indices)
        if not is_traced(true_hw):
            true_hw = np.asarray(true_hw, np.int32)
        parts = execution.loop_parts(images, loops=default_strategy() == "map", batched=True,
                                     traced_args=(key, indices, params, true_hw))
        if parts > 1:  # one slice per core, in threads, as for a batch (imgproc.pipeline.execution)
            def run(part, idx, sizes_and_params):
                sizes, p = sizes_and_params
                return self._programs.canvas_program(part, sizes, key, idx, p, layout=layout,
                                                     return_params=return_params)

            def signature(shape):
                return "canvas", shape, str(images.dtype), layout, None if key is None else str(key.dtype), params is None

            return execution.run_parts(run, images, indices, (true_hw, params), parts, self._programs.compiled_parts,
                                       signature, return_params=return_params)
        return self._programs.canvas_program(images, true_hw, key, indices, params, layout=layout,
                                             return_params=return_params)

    def _run_canvas(self, canvas, true_hw, key, indices, params, *, layout, return_params):
        self._programs.traces += 1  # runs only while tracing: counts compilations
        plan = variable_size.plan(self.stages)
        per_image = default_strategy() == "map"
        # a fused random run right after the plan runs in the plan's loop (run_plan's ``then``)
        run = fused_run(self.stages, plan.stop) if per_image else None
        then = None if run is None else (run, fused_body(
            self.stages, plan.stop, key=key, layout=image_layout(layout),
            max_value=max_value_after(self.stages, plan.stop, canvas.dtype),
            out_dtype=self.output_dtype(canvas.dtype)))
        x, p, *run_drawn = variable_size.run_plan(plan, canvas, true_hw, key, indices, params,
                                                  layout=image_layout(layout), per_image=per_image, then=then)
        y, drawn = self._run_stages(x, key, indices, params, None, layout=layout,
                                    start=plan.stop if run is None else run.stop, in_dtype=canvas.dtype)
        drawn = list(drawn)
        drawn[plan.param_stage] = p
        if run is not None:
            drawn[run.start:run.stop] = run_drawn[0]
        return (y, tuple(drawn)) if return_params else y

    def _on_devices(self, images, partition, *, key, indices, params, layout, return_params):
        """Run a device-sharded batch as one ``shard_map`` program: each device its own
        images, random stages with the images' global indices (given, else computed on
        the device), the result sharded as the input. Size buckets do not apply."""
        mesh, axes, spec = partition
        split = _sharded.batch_spec(axes)
        if indices is not None:
            indices = jax.device_put(jnp.asarray(indices), jax.sharding.NamedSharding(mesh, split))
        if params is not None:
            params = jax.device_put(params, jax.sharding.NamedSharding(mesh, split))
        random = key is not None or params is not None
        signature = (mesh, axes, spec, layout, return_params, random, indices is None)
        if signature not in self._programs.sharded:
            def body(x, k, idx, p):
                if random and idx is None:
                    idx = _sharded.global_indices(axes, x.shape[0])  # x: this device's images
                return self._run(x, k, idx, p, None, layout=layout, return_params=return_params)

            out_specs = (spec, split) if return_params else spec
            self._programs.sharded[signature] = _sharded.shard_over_batch(
                body, mesh, axes, (spec, PartitionSpec(), split, split), out_specs)
        return self._programs.sharded[signature](images, key, indices, params)

    def _in_bucket(self, images, layout) -> bool:
        """Whether this call runs in a canvas program: always with ``bucket=True``; with
        ``"auto"``, unless its size is one of the first :data:`EXACT_SIZES` sizes this
        pipeline met (a folder of one size, a camera's landscape and portrait photos run
        their exact programs) or has come in :data:`EXACT_AFTER` images (a size that keeps
        coming pays for its own program); every other size runs in a canvas, so the
        programs stay few however many sizes come."""
        if self.bucket is True:
            return True
        # images count whatever batches they come in
        met = self._programs.sizes_met.setdefault(_bucket_signature(images, layout, batch=False), {})
        true_hw = tuple(images.shape[a] for a in spatial_axes(layout))
        how = met.get(true_hw)  # "exact", or how many images ran in canvases
        if how is None and sum(h == "exact" for h in met.values()) < EXACT_SIZES:
            how = "exact"
        elif how != "exact":
            seen = (how or 0) + (images.shape[0] if layout in BATCH_LAYOUTS else 1)
            how = "exact" if seen > EXACT_AFTER else seen
        met[true_hw] = how
        return how != "exact"

    @property
    def _reach(self) -> int:
        return max(self.radii, default=0)

    def _bucket_sides(self, true_hw) -> tuple[int, ...]:
        """The spatial sides of the size bucket of an image of sides ``true_hw``: each
        side with the reach on both ends, rounded up (:func:`imgproc.pipeline.execution.bucket_size`)."""
        return tuple(execution.bucket_size(n + 2 * self._reach) for n in true_hw)

    def _bucketed(self, images, layout):
        """``images`` in a canvas program: the smallest canvas compiled before that holds
        their size bucket with at most twice its pixels, else the bucket's own (grown
        towards those met, :class:`imgproc.pipeline.variable_size.CanvasShapes`), so a
        folder of any sizes compiles a few canvases."""
        axes = spatial_axes(layout)
        true_hw = [images.shape[a] for a in axes]
        reach = self._reach
        _, *sides = self._programs.canvases.choose(1, *self._bucket_sides(true_hw),
                                                   signature=_bucket_signature(images, layout))
        pads = [(0, 0)] * images.ndim
        crop = [slice(None)] * images.ndim
        for a, n, side in zip(axes, true_hw, sides):
            pads[a] = (reach, side - n - reach)
            crop[a] = slice(reach, reach + n)
        padded = _zero_padded(np.asarray(images), pads)
        true = jnp.asarray(true_hw, jnp.int32)
        out = self._programs.compiled(padded, None, None, None, true, layout=layout, return_params=False)
        return np.asarray(out)[tuple(crop)]

    def _run(self, images, key, indices, params, true_hw, *, layout, return_params):
        """``true_hw``: a size bucket's call, the image's traced ``(height, width)``; it lies
        at ``(reach, reach)`` of the canvas ``images`` (static: the same in every call)."""
        self._programs.traces += 1  # runs only while tracing: counts compilations
        true_hw = None if true_hw is None else (true_hw, self._reach)
        y, drawn = self._run_stages(images, key, indices, params, true_hw, layout=layout)
        return (y, drawn) if return_params else y

    def output_dtype(self, dtype):
        """The dtype a call on ``dtype`` input returns: the input's, or float32 when a stage
        has a fixed output dtype (``normalize``, ``to_float``, the derivative filters)."""
        fixed = [s.info.out_dtype for s in self.stages if s.info.out_dtype is not None]
        return jnp.dtype(fixed[-1]) if fixed else jnp.dtype(dtype)

    def _run_stages(self, images, key, indices, params, true_hw, *, layout, start=0, in_dtype=None):
        """The stages from ``start`` on (earlier ones ran already: ``images`` is then their
        float32 result, ``in_dtype`` the caller's dtype)."""
        in_dtype = images.dtype if in_dtype is None else in_dtype
        max_value = max_value_after(self.stages, start, in_dtype)  # what "white" is for ops with max_value=None
        out_dtype = self.output_dtype(in_dtype)
        x = images.astype(jnp.float32)
        one = image_layout(layout)
        drawn = [None] * len(self.stages)
        next_random = 0
        for s, stage in enumerate(self.stages):
            if s < start:
                continue
            if true_hw is not None:
                x = execution.extend_from(x, true_hw, spatial_axes(layout), stage.options, self.radii[s])
            if not stage.info.random:
                # a stage feeding another one writes its border bands in place (cheaper
                # for XLA there; the last stage's output goes to the caller)
                hints = LoweringHints(feeds_next=s + 1 < len(self.stages),
                                      cast_after=out_dtype != jnp.float32 or true_hw is not None,
                                      from_integers=s == 0 and jnp.issubdtype(images.dtype, jnp.integer))
                if true_hw is not None and stage.info.on_canvas is not None:  # reads the whole image
                    x = stage.info.on_canvas(x, true_hw, **stage._options(stage.info.on_canvas, layout, max_value,
                                                                          None))
                else:
                    x = stage(x, layout=layout, max_value=max_value, hints=hints)
                max_value = max_value_after(self.stages, s + 1, in_dtype)  # normalize, to_float: [0, 1] now
                continue
            if layout not in BATCH_LAYOUTS:
                p = stage.sample(stage_key(key, indices[0], s), x.shape, layout=layout, max_value=max_value) \
                    if params is None else params[s]
                x = stage.apply(x, p, layout=layout, max_value=max_value)
                drawn[s] = p
                continue
            if s < next_random:  # already run, fused with an earlier random stage
                continue
            x, next_random, run_params = run_random(
                self.stages, s, images if s == 0 else x, key=key, indices=indices, params=params, layout=one,
                max_value=max_value, out_dtype=out_dtype)
            drawn[s:next_random] = run_params
        return to_output(x, out_dtype), tuple(drawn)


def _not_levels_after_float_results(stages):
    """``stages``, with ``levels=False`` given to each stage whose op takes ``levels`` (the
    ``threshold`` op's Otsu bins) and was not given it, once a stage before it returns a
    fixed float dtype (``OpInfo.out_dtype``: the derivative filters, ``normalize``,
    ``to_float``): such values are not an integer image's levels, as in the eager chain
    ``threshold(imgproc.sobel(x))``, where the threshold meets float32."""
    out, floats = [], False
    for stage in stages:
        if floats and "levels" not in stage.options and takes(stage.info.fn, "levels"):
            stage = dataclasses.replace(stage, options={**stage.options, "levels": False})
        floats = floats or stage.info.out_dtype is not None
        out.append(stage)
    return tuple(out)


def max_value_after(stages, count: int, dtype) -> float:
    """The value range (``max_value``) a pipeline tells the stage after the first ``count``
    of ``stages`` on ``dtype`` input: the dtype's, or the last ``OpInfo.out_max_value``
    among them (``normalize`` and ``to_float``: 1.0). A derivative
    filter's float32 result keeps the image's units, so it keeps the range: after a uint8
    image's Gaussian gradient magnitude, ``adjust_gamma`` clips at 255, not at 1.

    >>> import numpy as np
    >>> stages = [Stage.of({"op": "sobel", "axis": 0}), Stage.of({"op": "normalize", "mean": 0.5, "std": 0.2})]
    >>> max_value_after(stages, 1, np.uint8), max_value_after(stages, 2, np.uint8)
    (255.0, 1.0)
    """
    fixed = range_left_by(stages[:count])
    return dtype_max(dtype) if fixed is None else fixed


def _bucket_signature(images, layout, *, batch=True) -> tuple:
    """What images share size buckets by: layout, dtype and the shape but for the spatial
    sides (``batch=False``: and for a batch's length)."""
    left_out = set(spatial_axes(layout)) | ({0} if not batch and layout in BATCH_LAYOUTS else set())
    return layout, str(images.dtype), tuple(n for a, n in enumerate(images.shape) if a not in left_out)


def _zero_padded(array: np.ndarray, pads) -> np.ndarray:
    """``np.pad(array, pads)`` (zeros), written into aligned host memory that the CPU
    client reads in place: the memory of an earlier such copy that nothing references any
    more (:func:`imgproc.cpu.output_buffers.host_buffer`), not fresh pages; only the bands
    around the image are zeroed."""
    out = host_buffer(tuple(n + lo + hi for n, (lo, hi) in zip(array.shape, pads)), array.dtype)
    inside = []
    for axis, (lo, hi) in enumerate(pads):
        band = [slice(None)] * out.ndim
        band[axis] = slice(0, lo)
        out[tuple(band)] = 0
        band[axis] = slice(lo + array.shape[axis], None)
        out[tuple(band)] = 0
        inside.append(slice(lo, lo + array.shape[axis]))
    out[tuple(inside)] = array
    return out
