"""Stages and the op registry: the leaf module every op family registers into.

An op is described by an :class:`OpInfo`: its public function and, for a random op, the
two pure pieces it is made of (kornia's parameter generator / ``apply_transform`` split,
dm-pix's key-first twins):

* ``sample(key, shape, *, layout, **draw_options) -> params``: draws the op's parameters
  (a pytree of arrays) for one image of ``shape`` in ``layout``;
* ``apply(image, params, *, layout, **apply_options) -> image``: the deterministic op
  applied with them.

``random_x(key, image, ...)`` is ``apply(image, sample(key, image.shape, ...))``; a
:class:`imgproc.Pipeline` calls the two pieces itself, so it can return the parameters
it drew and replay them (on masks, boxes, keypoints, or to reproduce a sample).

A stage's options go to whichever of ``fn``, ``sample`` and ``apply`` name them in their
signature. Besides the spec's own options, a pipeline passes two things explicitly: the
value range ``max_value`` (to ops that take it and were not given one) and the
:class:`LoweringHints` (to ops that take ``hints``). Nothing else reaches an op.

This module imports no op module: families register themselves with
:func:`register_ops` from one explicit table each.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Callable, Mapping

import jax
import numpy as np

__all__ = ["KEEPS_TARGETS", "NOT_DIFFERENTIABLE", "CanvasForm", "LoweringHints", "OpInfo", "Stage", "TargetRule", "lookup", "range_left_by", "register_op", "resolve_targets", "register_ops",
           "registered_ops"]

# OpInfo.targets of an op that changes pixel values only: boxes, masks and keypoints stay.
KEEPS_TARGETS = "keeps targets"

# OpInfo.not_differentiable of the ops with no useful gradient, by kind (the families' tables
# name them; tests/test_gradients.py checks that exactly these ops say so).
_PIECEWISE = "its result is piecewise constant in the image, so its gradient is 0 almost everywhere"
NOT_DIFFERENTIABLE = {
    "posterize": "integer levels: " + _PIECEWISE,
    "equalize": "a lookup in the histogram of 256 levels: " + _PIECEWISE,
    "clahe": "lookups in per-tile histograms of 256 levels: " + _PIECEWISE,
    "jpeg_compression": "quantised DCT coefficients and 8-bit levels: " + _PIECEWISE,
    "binary": "a set of pixels (a two-level result): " + _PIECEWISE,
    "bm3d": ("hard thresholding and block matching: its result jumps where a coefficient crosses the "
             "threshold or a block's match changes, so its gradient describes no neighbourhood"),
}


@dataclasses.dataclass(frozen=True)
class TargetRule:
    """How a geometric op moves the targets that go with an image (boxes, masks, keypoints),
    for one image with the op's parameters (None for a deterministic op).

    Attributes:
        points: ``points(xy, params, *, in_hw, out_hw, **options) -> xy``: moves ``(N, 2)``
            points ``(x, y)`` in pixel-edge coordinates (pixel ``(r, c)`` spans ``[c, c + 1]
            × [r, r + 1]``) from the input image to the output. Boxes move by their corners.
        mask: ``mask(mask, params, *, in_hw, out_hw, **options) -> mask``: the op applied to
            an ``(H, W, M)`` float32 mask with nearest interpolation and zero fill.
    """

    points: Callable
    mask: Callable


@dataclasses.dataclass(frozen=True)
class CanvasForm:
    """How an op that sets the output size reads an image held in the top-left corner of
    a larger array (a *canvas*: a batch of images of different sizes, zero-padded to one
    size), given the image's true ``(height, width)`` (ints, or traced int32 scalars).
    Its result for the canvas equals, bit for bit, the op's result on the image alone.

    Attributes:
        out_size: ``out_size(options) -> (height, width)``: the fixed output size for these
            options, or None when it depends on the input's size (then the op has no
            canvas form with these options, unless ``fuse`` gives one with the next stage).
        apply: ``apply(image, params, true_hw, *, layout, **options) -> image`` of
            ``out_size`` (``params`` None for a deterministic op; ``layout`` one image's).
        sample: random ops: ``sample(key, true_hw, *, layout, **options) -> params``, the
            op's own draw for an image of that size.
        fuse: ``fuse(options, next_stage) -> CanvasForm | None``: for an op whose output
            size depends on the input (``resize_shorter``), the canvas form of it followed
            by ``next_stage`` (a crop to a fixed size), whose options and parameters it
            then takes; None when the pair has none.
        move_targets: ``move_targets(targets, params, true_hw, *, min_area,
            min_visibility) -> targets`` (one image's, as
            :func:`imgproc.augment.targets.move_one` moves them) where the op's own
            :class:`TargetRule` does not serve: a fused pair. None: the op's own rule,
            called with the true size as a traced ``in_hw``.

        apply_looped: ``apply_looped(canvas, slot, params, true_hw, *, layout, **options)``:
            ``apply`` for image ``slot`` (traced) of the whole ``canvas`` batch, one image
            at a time in a loop over the batch (``lax.map``, the CPU's way), where choosing
            per image what to compute pays (``lax.switch`` branches; under ``vmap`` they
            would all run) and reading only part of the image's canvas does. It takes the
            canvas in its own dtype (``apply`` takes one image converted to float32) and
            gives what ``apply`` gives, float32, unrounded. None: ``apply``.
    """

    out_size: Callable
    apply: Callable
    sample: Callable | None = None
    fuse: Callable | None = None
    move_targets: Callable | None = None
    apply_looped: Callable | None = None


@dataclasses.dataclass(frozen=True)
class LoweringHints:
    """Where a stage is traced inside a compiled program. Hints choose how XLA computes a
    result, never the result (every lowering gives the same numbers, tested).

    Attributes:
        feeds_next: the stage's result feeds another stage of the same program (not the
            caller): filters then write their border bands in place.
        cast_after: the program converts the stage's result after it (a pipeline's cast
            back to integer images, or its crop of a size bucket): filters then leave
            their last loop to be fused with that work.
        in_loop: the stage is traced for one image at a time inside a per-image loop
            (``lax.map``): ``method="auto"`` takes it into account.
        from_integers: the stage's float input was converted from integer pixels in the
            same program (a pipeline's first stage on integer images), so its loops read
            those: a long rows pass then keeps its two loops (one loop is faster over
            float32 rows only; why: benchmarks/NOTES.md, "Large kernels").
    """

    feeds_next: bool = False
    in_loop: bool = False
    cast_after: bool = False
    from_integers: bool = False


NO_HINTS = LoweringHints()
IN_LOOP = LoweringHints(in_loop=True)  # a stage run inside a per-image loop (lax.map, a switch branch)

# Arguments that a stage supplies itself; never spec options.
_SUPPLIED = ("key", "image", "images", "shape", "params", "layout", "hints", "finish")


@functools.lru_cache(maxsize=None)
def keywords(fn) -> tuple[frozenset, frozenset]:
    """``(all, required)`` keyword names ``fn`` accepts, without the ones a stage supplies."""
    names, required = set(), set()
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in _SUPPLIED:
            continue
        names.add(p.name)
        if p.default is p.empty:
            required.add(p.name)
    return frozenset(names), frozenset(required)


@functools.lru_cache(maxsize=None)
def takes(fn, name: str) -> bool:
    """Whether ``fn`` has a parameter called ``name``."""
    return name in inspect.signature(fn).parameters


@functools.lru_cache(maxsize=None)
def _open_ended(fn) -> bool:
    """Whether ``fn`` takes ``**options`` (it checks its own option names)."""
    return any(p.kind == p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values())


def pick_options(fn, options: dict) -> dict:
    """The ``options`` that ``fn`` names (all of them when it takes ``**options``)."""
    if _open_ended(fn):
        return dict(options)
    accepted = keywords(fn)[0]
    return {k: v for k, v in options.items() if k in accepted}


@dataclasses.dataclass(frozen=True)
class OpInfo:
    """A registered op.

    Attributes:
        name: the spec name (``{"op": name}``), the public function's name.
        fn: the public function: ``fn(image, **options)``, or ``fn(key, image, **options)``
            for a random op.
        sample: random ops: ``sample(key, shape, *, layout, ...) -> params``.
        apply: random ops: ``apply(image, params, *, layout, ...) -> image``.
        run_batch: how a batch runs (ops with a choice of strategy, e.g. ``random_choice``):
            ``run_batch(params, images, *, layout, ...)`` with per-image ``params``; None
            applies ``apply`` under ``vmap``.
        parse: converts spec options to call options (nested stages to :class:`Stage`).
        radius: local ops: the reach in pixels for given options (size buckets need it),
            or None for options that make the op read the whole image.
        on_canvas: ops that read the whole image (a noise estimate) but can run in a size
            bucket: ``on_canvas(image, true_hw, **options)`` on the bucket's canvas, which
            holds the image at ``true_hw = (sizes, offset)`` (traced ``(height, width)``,
            static offset) with ``radius`` pixels of its border written around it; the
            image's own result there. None: the op itself runs on the canvas (local ops).
        targets: what the op does to targets (boxes, masks, keypoints) passed with the
            image: :data:`KEEPS_TARGETS` (pixel values only), a :class:`TargetRule`
            (geometric), a function of the stage's options returning one of those or None
            (ops holding other stages), or None: unknown, and refused when targets are given.
        out_dtype: ops whose result has a fixed dtype whatever the input (``"float32"``
            for ``normalize``, ``to_float`` and the derivative filters); a pipeline with such
            a stage returns it (None: the op keeps the input dtype, the rule).
        out_max_value: the value range (``max_value``) a pipeline tells the stages after
            this op: ``1.0`` for ``normalize`` and ``to_float``, whose result is on [0, 1];
            None (the rule): the input dtype's, kept by the derivative filters too, whose
            float32 result stays in the image's units (a uint8 image's Sobel in
            -1020..1020).
        canvas: ops that set the output size: their :class:`CanvasForm`, which lets a
            pipeline take a list of images of different sizes in one program.
        checks: option name -> the function the op checks that option's value with
            (raising ``ValueError`` naming the allowed values; e.g. ``{"mode": check_mode}``),
            run on the spec's value when the stage is built, so that a bad choice is refused
            by ``Pipeline(...)`` (and ``imgproc run`` names the spec file) rather than at the
            first call. The option is kept as written (an alias stays an alias).
        not_differentiable: why the op has no useful gradient (its result is piecewise
            constant in the image: integer levels, histograms, sets of pixels), also said
            in its docstring; None (the rule): ``jax.grad`` with respect to the image and
            its continuous options is right wherever the op is smooth (between documented
            kinks), checked over the registry by tests/test_gradients.py.
    """

    name: str
    fn: Callable
    sample: Callable | None = None
    apply: Callable | None = None
    run_batch: Callable | None = None
    parse: Callable[[dict], dict] | None = None
    radius: Callable[[dict], int | None] | None = None
    on_canvas: Callable | None = None
    targets: object = None
    out_dtype: str | None = None
    out_max_value: float | None = None
    canvas: CanvasForm | None = None
    checks: Mapping[str, Callable] = dataclasses.field(default_factory=dict, compare=False)
    not_differentiable: str | None = None

    @property
    def random(self) -> bool:
        return self.sample is not None

    def option_names(self) -> tuple[frozenset, frozenset]:
        """``(allowed, required)`` spec options: the union of what ``fn``, ``sample`` and
        ``apply`` accept."""
        allowed, required = keywords(self.fn)
        for part in (self.sample, self.apply):
            if part is not None:
                allowed = allowed | keywords(part)[0]
        return allowed, required


_REGISTRY: dict[str, OpInfo] = {}


def register_ops(infos, *, targets=None) -> None:
    """Register a family's table of :class:`OpInfo`. ``targets``: the family's default for
    ops that do not say (:data:`KEEPS_TARGETS` for families that change pixel values only)."""
    for info in infos:
        if info.random != (info.apply is not None):
            raise ValueError(f"op {info.name!r}: a random op needs both sample and apply")
        allowed = info.option_names()[0]
        unchecked = sorted(set(info.checks) - allowed)
        if unchecked and not _open_ended(info.fn):
            raise ValueError(f"op {info.name!r} declares checks for {', '.join(map(repr, unchecked))}, which it does "
                             f"not take; its options: {', '.join(sorted(allowed)) or 'none'}")
        if info.targets is None and targets is not None:
            info = dataclasses.replace(info, targets=targets)
        _REGISTRY[info.name] = info


def register_op(name: str, fn: Callable, *, sample=None, apply=None, run_batch=None, parse=None, radius=None,
                targets=None, checks=None) -> Callable:
    """Make ``fn`` usable as a pipeline stage called ``name`` in specs (see :class:`OpInfo`).

    A deterministic op is ``fn(image, *, layout=None, **options)``; a random one gives its
    ``sample`` and ``apply`` pieces; ``targets`` says what it does to boxes, masks and
    keypoints (:data:`KEEPS_TARGETS` or a :class:`TargetRule`; None refuses targets);
    ``checks`` maps option names to the functions that check their values when a stage is
    built (see :class:`OpInfo`; a check of an option ``fn`` does not take is refused here,
    as it could never run). Returns ``fn``.

    Example:
        >>> import imgproc
        >>> def invert(image, *, layout=None):
        ...     return 255 - image
        >>> _ = imgproc.register_op("invert_uint8", invert)
        >>> "invert_uint8" in imgproc.registered_ops()
        True
    """
    register_ops([OpInfo(name, fn, sample=sample, apply=apply, run_batch=run_batch, parse=parse, radius=radius,
                         targets=targets, checks=checks or {})])
    return fn


def registered_ops() -> tuple[str, ...]:
    """Names accepted as ``"op"`` in a spec."""
    return tuple(sorted(_REGISTRY))


def lookup(op) -> OpInfo:
    """The :class:`OpInfo` of an op name or a registered public function."""
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


def resolve_targets(stage):
    """What ``stage`` does to targets: :data:`KEEPS_TARGETS`, a :class:`TargetRule`, or None
    (unknown). An op holding other stages registers a function of its options."""
    t = stage.info.targets
    if callable(t) and not isinstance(t, TargetRule):
        t = t(stage.options)
    return t


def _check_options(info: OpInfo, options: dict) -> None:
    allowed, required = info.option_names()
    unknown = [] if _open_ended(info.fn) else sorted(set(options) - allowed)
    if unknown:
        names = ", ".join(sorted(allowed)) or "none"
        raise ValueError(f"{info.name} has no option {', '.join(map(repr, unknown))}; its options: {names}")
    missing = sorted(required - set(options))
    if missing:
        raise ValueError(f"{info.name} needs {', '.join(map(repr, missing))}")


@dataclasses.dataclass(frozen=True)
class Stage:
    """One op with its options. ``Stage.of(x)`` accepts a spec dict, a ``(fn_or_name,
    options)`` pair, a registered function or its name; unknown or missing options are
    refused there, naming the op's options."""

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
            info = lookup(item["op"])
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], dict):
            info, opts = lookup(item[0]), dict(item[1])
        else:
            info, opts = lookup(item), {}
        _check_options(info, opts)
        for name, check in info.checks.items():
            if name in opts:
                check(opts[name])
        if info.parse is not None:
            opts = info.parse(opts)
        return cls(info, opts)

    def to_spec(self) -> dict:
        return {"op": self.info.name, **{k: _spec_value(v) for k, v in self.options.items()}}

    def _options(self, fn, layout, max_value, hints) -> dict:
        """The options of ``fn``: the stage's own, plus what the caller supplies explicitly
        (``max_value`` where not given, ``hints``) to a function that takes it."""
        opts = pick_options(fn, self.options)
        if max_value is not None and takes(fn, "max_value") and opts.get("max_value") is None:
            opts["max_value"] = max_value
        if hints is not None and takes(fn, "hints"):
            opts["hints"] = hints
        opts["layout"] = layout
        return opts

    def __call__(self, image, key=None, *, layout=None, max_value=None, hints=None):
        """Apply the op to ``image``: ``fn(image, ...)``, or ``fn(key, image, ...)`` for a
        random op (one image at a time, or a batch as the op defines)."""
        opts = self._options(self.info.fn, layout, max_value, hints)
        if self.info.random:
            return self.info.fn(key, image, **opts)
        return self.info.fn(image, **opts)

    def sample(self, key, shape, *, layout, max_value=None):
        """A random stage's parameters for one image of ``shape`` (None for others)."""
        if not self.info.random:
            return None
        return self.info.sample(key, tuple(shape), **self._options(self.info.sample, layout, max_value, None))

    def apply(self, image, params, *, layout, max_value=None, hints=None, finish=None):
        """Apply with drawn ``params`` (a deterministic stage ignores them), then
        ``finish`` (a function of the result, e.g. the final cast of a run; None: none).

        An op whose ``apply`` takes ``finish`` (the conditionals ``random_choice`` and
        ``random_apply``) applies it inside each branch: a conditional's result is a
        buffer of its own, so work after it would be one more pass over the image, while
        inside a branch it fuses with the branch's last loop."""
        if not self.info.random:
            out = self(image, layout=layout, max_value=max_value, hints=hints)
        else:
            opts = self._options(self.info.apply, layout, max_value, hints)
            if finish is not None and takes(self.info.apply, "finish"):
                return self.info.apply(image, params, finish=finish, **opts)
            out = self.info.apply(image, params, **opts)
        return out if finish is None else finish(out)

    def run_batch(self, params, images, *, layout, max_value=None, hints=None):
        """Apply to a batch with per-image ``params``: the op's own batch runner (its
        strategy), or ``apply`` under ``vmap``."""
        if self.info.run_batch is not None:
            opts = self._options(self.info.run_batch, layout, max_value, hints)
            return self.info.run_batch(params, images, **opts)
        return jax.vmap(lambda x, p: self.apply(x, p, layout=layout, max_value=max_value, hints=hints))(images, params)


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


def range_left_by(stages):
    """The value range (``max_value``) ``stages`` leave their result in: the last
    ``OpInfo.out_max_value`` among them (``normalize`` and ``to_float``: 1.0), or None: the
    input's, which a derivative filter's float32 result keeps too (its values stay in the
    image's units)."""
    fixed = [s.info.out_max_value for s in stages if s.info.out_max_value is not None]
    return fixed[-1] if fixed else None
