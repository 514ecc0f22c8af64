"""Variable-size input: a list of images of different sizes through one pipeline, in a few
compiled programs.

A pipeline whose first stage sets a fixed output size (``random_resized_crop``,
``resize``, ``center_crop``, ``letterbox``, ``random_crop`` or ``resized_crop`` with a
``size``, or ``resize_shorter`` followed by ``center_crop`` or ``random_crop``) takes a
Python list of images of any sizes. The images are zero-padded into one *canvas* batch,
each in its top-left corner, with its true height and width beside it
(:func:`to_canvas`); the size-setting stage reads each image from the canvas with its true
size as a traced value (its :class:`imgproc.core.registry.CanvasForm`), and every later
stage runs on the fixed-size batch it makes. The canvas's sides are rounded up to four
steps an octave (:func:`imgproc.core.arrays.canvas_side`), so a dataset of any size distribution compiles one
program per batch size and canvas pair met, not one per image size. Image ``i`` of the result equals the pipeline run on that image alone at its exact
size with the same key and index, bit for bit (the canvas forms compute with the same
arithmetic; tests/pipeline/test_variable_size.py checks every size-setting op).

The padded form is the same program for callers who pad themselves (inside ``jax.jit``):
``pipe(canvas, key=k, sizes=true_hw)`` with ``canvas`` an ``(N, H, W, C)`` (or ``NCHW``)
batch and ``true_hw`` an ``(N, 2)`` integer array.

Targets follow per image: with a list of images, ``targets`` is a list of one dict per
image (as for that image alone: its own number of boxes and keypoints, masks of its own
size), and the call returns one such dict per image (:func:`list_targets`); with the
padded form, one batched dict whose masks are padded as the images are. The size-setting
stage moves them with the image's true size traced (:func:`move_first`), the later stages
as on any batch: the same arithmetic as for the image alone, so the same values on CPU (on
a GPU, coordinates within a unit or two in the last place: docs/augment.md).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from imgproc.augment.common import fixed_size
from imgproc.augment.size import shorter_side_size
from imgproc.augment.targets import check_targets, move_one
from imgproc.core.arrays import canvas_side, spatial_axes
from imgproc.core.keys import stage_key
from imgproc.core.registry import CanvasForm, Stage, TargetRule, pick_options
from imgproc.core.validate import LAYOUT_NDIM, check_size_pair
from imgproc.cpu import host_buffer

__all__ = ["CanvasPlan", "CanvasShapes", "check_fits", "is_image_list", "list_targets", "move_first", "pad_images",
           "per_image_layout", "plan", "run_plan", "to_canvas"]

@dataclasses.dataclass(frozen=True)
class CanvasPlan:
    """How a pipeline runs a canvas: its first ``stop`` stages run as ``form`` (the first
    stage, or ``resize_shorter`` fused with the crop after it), whose drawn parameters
    belong to stage ``param_stage``; the stages from ``stop`` on run on the fixed-size
    batch it makes."""

    stop: int
    form: CanvasForm
    options: dict
    param_stage: int

    def sample(self, key, true_hw, *, layout):
        return self.form.sample(key, true_hw, layout=layout, **pick_options(self.form.sample, self.options))

    def apply(self, image, params, true_hw, *, layout):
        """The form on one image (float32)."""
        return self.form.apply(image, params, true_hw, layout=layout, **pick_options(self.form.apply, self.options))

    def apply_looped(self, canvas, slot, params, true_hw, *, layout):
        """The form on image ``slot`` of the ``canvas`` batch (its dtype), one image at a
        time in a loop over the batch: the form's ``apply_looped``."""
        fn = self.form.apply_looped
        return fn(canvas, slot, params, true_hw, layout=layout, **pick_options(fn, self.options))


SIZE_SETTERS = ("random_resized_crop, resize, center_crop, letterbox, random_crop or resized_crop with a size, "
                "or resize_shorter followed by center_crop or random_crop")


def _refusal(why: str) -> ValueError:
    return ValueError(f"a list of images of different sizes needs a pipeline that starts by setting a fixed size "
                      f"({SIZE_SETTERS}): {why}")


def _fixed_size(stage) -> bool:
    form = stage.info.canvas
    return form is not None and form.out_size(stage.options) is not None


def plan(stages: tuple[Stage, ...]) -> CanvasPlan:
    """The :class:`CanvasPlan` of ``stages``, or ``ValueError`` saying why they cannot take
    images of different sizes in one call, and what to do."""
    if not stages:
        raise _refusal("this one has no stages")
    stage = stages[0]
    name = stage.info.name
    form = stage.info.canvas
    if form is None:
        later = next((s.info.name for s in stages[1:] if _fixed_size(s)), None)
        if later is not None:
            raise _refusal(f"move {name} after {later}, or call it once per image")
        raise _refusal(f"its first stage, {name}, keeps each image's size; add one first, or call it once per image")
    if form.out_size(stage.options) is not None:
        return CanvasPlan(1, form, dict(stage.options), 0)
    fused = form.fuse(stage.options, stages[1]) if form.fuse is not None and len(stages) > 1 else None
    if fused is None:
        if form.fuse is not None:
            raise _refusal(f"{name}'s output size depends on each image's: follow it with center_crop or random_crop "
                           "with a size (and no max_size)")
        raise _refusal(f"{name} without size= keeps each image's size: give it size=(height, width)")
    return CanvasPlan(2, fused, {}, 1)


def is_image_list(images) -> bool:
    """Whether ``images`` is a list (or tuple) of arrays: one image each, which may differ
    in size (a nested list of numbers is one array, as everywhere)."""
    return (isinstance(images, (list, tuple)) and len(images) > 0
            and all(hasattr(x, "shape") and hasattr(x, "dtype") for x in images))


def per_image_layout(layout, ndim: int) -> str:
    """One image's layout in a list given to a pipeline of ``layout``: HW for 2-D images;
    HWC, or CHW when the pipeline says ``CHW``/``NCHW``."""
    if ndim == 2:
        return "HW"
    if ndim != 3:
        raise ValueError(f"a list of images holds HW or HWC (or CHW) images, 2 or 3 dimensions each; got {ndim}")
    if layout in ("CHW", "NCHW"):
        return "CHW"
    if layout not in (None, "HWC", "NHWC"):
        raise ValueError(f"a pipeline of layout {layout!r} takes {LAYOUT_NDIM.get(layout, '?')}-D arrays; a list of "
                         "3-D images needs layout None, 'HWC', 'NHWC', 'CHW' or 'NCHW'")
    return "HWC"


def to_canvas(images, layout: str, *, xp=np, shapes=None, slot_multiple=1, zero_padding=False, sides=None):
    """Pad ``images`` (arrays of one dtype and channel count, in ``layout``: HW, HWC or
    CHW) into one batch: ``(canvas, true_hw)``, ``canvas`` ``(N, H, W, C)`` (``NCHW`` for
    CHW; ``C = 1`` for HW) with image ``i`` in the top-left of ``canvas[i]`` (the padding
    is zero for float images and whatever the buffer held for integer ones:
    :func:`_zero_around`), its sides
    :func:`canvas_side` of the largest height and width; ``true_hw`` ``(N, 2)`` int32.
    ``xp``: ``numpy`` for host images, ``jax.numpy`` for device ones. ``shapes``: a
    :class:`CanvasShapes` (host images only) that may choose a larger canvas, one already
    compiled: its slots beyond ``len(images)`` hold zero images of the canvas's size
    (``slot_multiple``: :meth:`CanvasShapes.choose`'s ``multiple``). ``zero_padding``: a
    host canvas of integer images zeroed around them too; ``sides``: the canvas's
    ``(height, width)``, which must hold every image (both for :func:`pad_images`)."""
    first = images[0]
    for i, x in enumerate(images):
        if x.dtype != first.dtype:
            raise ValueError(f"the images of a list must share one dtype; image 0 is {first.dtype}, image {i} is "
                             f"{x.dtype}")
        if x.ndim != first.ndim:
            raise ValueError(f"the images of a list must all be 2-D (HW) or all 3-D; image 0 has {first.ndim} "
                             f"dimensions, image {i} has {x.ndim}")
    planes = [x[:, :, None] if layout == "HW" else x for x in images]  # HW as HWC with one channel
    channel_axis = 0 if layout == "CHW" else 2
    hw_axes = (1, 2) if layout == "CHW" else (0, 1)
    channels = {p.shape[channel_axis] for p in planes}
    if len(channels) > 1:
        raise ValueError(f"the images of a list must have one channel count; got {sorted(channels)}")
    true_hw = np.array([[p.shape[a] for a in hw_axes] for p in planes], np.int32)
    if sides is None:
        sides = tuple(canvas_side(int(n)) for n in true_hw.max(axis=0))
    else:
        large = np.nonzero((true_hw > np.asarray(sides)).any(axis=1))[0]
        if len(large):
            i = int(large[0])
            raise ValueError(f"the canvas size {tuple(sides)} does not hold image {i} {tuple(map(int, true_hw[i]))}: "
                             "give a canvas at least as large as every image, or size=None")
    slots = len(planes)
    if shapes is not None and xp is np:
        slots, *sides = shapes.choose(slots, *sides, signature=(first.dtype.str, layout, planes[0].shape[channel_axis]),
                                      multiple=slot_multiple)
        true_hw = np.concatenate([true_hw, np.tile(np.int32(sides), (slots - len(planes), 1))])
    shape = [slots, 0, 0, 0]
    shape[channel_axis + 1] = channels.pop()
    shape[hw_axes[0] + 1], shape[hw_axes[1] + 1] = sides
    if xp is np:
        # aligned host memory the CPU client reads in place (a copy of the canvas into
        # the program cost more than the random resized crop of it)
        canvas = host_buffer(tuple(shape), first.dtype)
        a, b = hw_axes
        for i, p in enumerate(planes):
            canvas[(i,) + tuple(slice(0, n) for n in p.shape)] = p
            if zero_padding or np.issubdtype(first.dtype, np.floating):
                _zero_around(canvas[i], p.shape, a, b)
        canvas[len(planes):] = 0  # slots of a larger canvas chosen (shapes)
    else:
        canvas = xp.stack([xp.pad(p, [(0, n - m) for n, m in zip(shape[1:], p.shape)]) for p in planes])
    return canvas, true_hw


def pad_images(images, *, size=None, layout=None):
    """The padded form of a list of images of different sizes: ``(canvas, sizes)``, to
    give a pipeline or recipe as ``pipe(canvas, key=k, sizes=sizes)`` where the list would
    go, with the same result. For a loader that uploads its batches ahead
    (:func:`imgproc.prefetch_to_device`: one array is one upload) or a ``jax.jit`` step
    that takes a fixed-shape batch.

    Args:
        images: a list (or tuple) of NumPy images of one dtype and channel count, HW or
            HWC, or CHW with ``layout="CHW"``.
        size: the canvas's ``(height, width)`` (an int: square), which every image must
            fit: one canvas for a whole dataset, one program. ``None``: the largest height
            and width rounded up to four steps an octave
            (:func:`imgproc.core.arrays.canvas_side`: at most 25 % more), and a square of
            the larger where that at most doubles the canvas (as a list call's new
            canvas: the next batch's tallest photo is often its widest turned), so a
            dataset's batches fall in a few canvas shapes and compile a few programs.
        layout: ``None``/``"HWC"`` (HW images are taken as one channel) or ``"CHW"``.

    Returns:
        ``canvas``: ``(N, H, W, C)`` (``(N, C, H, W)`` for CHW; ``C = 1`` for HW images) in
        the images' dtype, image ``i`` in the top-left corner of ``canvas[i]`` and zero
        around it. ``sizes``: ``(N, 2)`` int32, each image's ``(height, width)``. A smaller
        last batch is a new batch shape, which compiles its own programs (a list call
        pads it into the full batch's canvas): drop it, as training loaders do, or pad
        the list with images of your own.

    Example:
        >>> import numpy as np, imgproc
        >>> canvas, sizes = imgproc.pad_images([np.ones((75, 100, 3), np.uint8), np.ones((96, 64, 3), np.uint8)])
        >>> canvas.shape, sizes.tolist(), int(canvas[0, 75:].max())
        ((2, 112, 112, 3), [[75, 100], [96, 64]], 0)
        >>> imgproc.pad_images([np.ones((75, 100, 3), np.uint8)], size=(128, 160))[0].shape
        (1, 128, 160, 3)
        >>> pipe = imgproc.Pipeline([{"op": "resize", "size": [32, 32]}])
        >>> bool((pipe(canvas, sizes=sizes) == pipe([np.ones((75, 100, 3), np.uint8), np.ones((96, 64, 3), np.uint8)])).all())
        True
    """
    if layout not in (None, "HWC", "CHW"):
        raise ValueError(f"layout must be None, 'HWC' or 'CHW' (one image's layout); got {layout!r}")
    if not is_image_list(images):
        raise ValueError(f"images must be a non-empty list of arrays (HW, HWC or CHW); got {type(images).__name__}")
    images = [np.asarray(x) for x in images]
    one = per_image_layout(layout, images[0].ndim)
    if size is None:  # the canvas a list call makes when it has met none: CanvasShapes' own rule
        return to_canvas(images, one, zero_padding=True, shapes=CanvasShapes())
    return to_canvas(images, one, zero_padding=True, sides=check_size_pair("size", size))


def _zero_around(slot, shape, a: int, b: int) -> None:
    """Zero a canvas slot outside its image (of ``shape``; ``a``, ``b``: the height and
    width axes). Float canvases, and :func:`pad_images`' (the caller sees them): the
    size-setting forms read the padding at most with a weight of exactly 0 or under a mask
    (tests/pipeline/test_variable_size.py fills it with 255 and NaN), and ``0 * x`` is 0
    for every finite ``x``, but an uninitialised float buffer may hold a NaN or an
    infinity, which a zero weight does not cancel. An integer canvas of a list call is
    left as it is: writing the padding of a 64-image batch of ImageNet's sizes cost as
    much as its random resized crops (benchmarks/NOTES.md, "Real datasets")."""
    below, right = [slice(None)] * 3, [slice(None)] * 3
    below[a] = slice(shape[a], None)
    right[a], right[b] = slice(0, shape[a]), slice(shape[b], None)
    slot[tuple(below)] = 0
    slot[tuple(right)] = 0


class CanvasShapes:
    """The canvases a pipeline ran, so that a batch that fits one of them runs in it
    rather than compile a program of its own: an epoch's last, smaller batch, a batch
    whose largest image is a little smaller (and, with one slot, the size buckets of
    ``Pipeline(bucket=...)``: an image that fits a canvas met before). :meth:`choose` takes the smallest canvas
    ``(slots, height, width)`` met before that holds the batch with at most ``MAX_GROWTH``
    times its slots and ``MAX_GROWTH`` times its pixels per slot; otherwise the batch's own
    canvas, grown to the sides of the largest canvas met with as many slots when that
    stays within the bound (so a dataset's canvases converge on one). An extra slot costs
    an image's share of the size-setting stage, extra pixels the canvas's filling (the
    crop reads a window around its box); the images' results do not depend on the canvas."""

    MAX_GROWTH = 2.0

    def __init__(self):
        self._met = {}  # signature (dtype, layout, channels) -> set of (slots, height, width)

    def choose(self, slots: int, height: int, width: int, *, signature, multiple: int = 1) -> tuple[int, int, int]:
        """The canvas ``(slots, height, width)`` for a batch of ``slots`` images whose own
        canvas sides are ``height`` and ``width``; ``multiple``: the slots are rounded up to
        a multiple of it (the slices the batch is split into then have one shape: one
        program, not two). A new canvas is square when that stays within the bound (the
        next batch's tallest image may be its widest turned)."""
        slots = -(-slots // multiple) * multiple
        met = self._met.setdefault(signature, set())
        area = self.MAX_GROWTH * height * width

        def within(m):
            return m[0] <= self.MAX_GROWTH * slots and m[1] * m[2] <= area

        fits = [m for m in met if m[0] >= slots and m[1] >= height and m[2] >= width and within(m)]
        if fits:
            return min(fits, key=lambda m: (m[0] * m[1] * m[2], m))
        same = [m for m in met if m[0] == slots]
        if same:
            grown = (slots, max(height, max(m[1] for m in same)), max(width, max(m[2] for m in same)))
            if within(grown):
                height, width = grown[1:]
        side = max(height, width)
        if within((slots, side, side)):
            height = width = side
        met.add((slots, height, width))
        return slots, height, width


def check_fits(plan_: CanvasPlan, stages, true_hw: np.ndarray) -> None:
    """Refuse images too small for a crop that cannot pad (``random_crop``: its window must
    fit, at the image's size or, after ``resize_shorter``, at the resized size)."""
    crop_stage = stages[plan_.param_stage]
    if crop_stage.info.name != "random_crop":
        return
    sides = true_hw
    if plan_.stop == 2:  # after resize_shorter: the resized sizes
        sides = np.array([shorter_side_size(int(h), int(w), int(stages[0].options["size"])) for h, w in true_hw])
    size = fixed_size(crop_stage.options)  # given: a random_crop without one has no canvas form
    small = np.nonzero((sides[:, 0] < size[0]) | (sides[:, 1] < size[1]))[0]
    if len(small):
        i = int(small[0])
        h, w = (int(n) for n in sides[i])
        raise ValueError(f"random_crop's window {tuple(size)} is larger than image {i} ({h}, {w}) where it is "
                         "cropped: crop smaller, or resize first")


def list_targets(targets, images, layout: str, canvas_hw):
    """Per-image targets of a list call as one padded batch: ``(batched, restore)``.

    ``targets``: a list of one dict per image of ``images`` (as :func:`check_targets` takes
    for one image of ``layout``), each with the same keys and number of masks. Boxes and
    keypoints are padded to the largest count (the padding invalid), masks with zeros to
    ``canvas_hw``. ``restore(moved)`` gives back one dict per image in the caller's shapes
    and dtypes (its own number of boxes and keypoints)."""
    if not isinstance(targets, (list, tuple)) or len(targets) != len(images):
        raise ValueError(f"with a list of images, targets is a list of one dict per image ({len(images)} dicts); got "
                         f"{len(targets) if isinstance(targets, (list, tuple)) else type(targets).__name__}")
    checked, restores = [], []
    for i, (t, x) in enumerate(zip(targets, images)):
        try:
            one, restore = check_targets(t, x.shape, layout, False)
        except ValueError as e:
            raise ValueError(f"targets[{i}]: {e}") from None
        if i and set(one) != set(checked[0]):
            raise ValueError(f"the targets of a list must have the same keys; targets[0] has {sorted(checked[0])}, "
                             f"targets[{i}] has {sorted(one)}")
        if i and "masks" in one and one["masks"].shape[-1] != checked[0]["masks"].shape[-1]:
            raise ValueError(f"the targets of a list must have one number of masks; targets[0] has "
                             f"{checked[0]['masks'].shape[-1]}, targets[{i}] has {one['masks'].shape[-1]}")
        checked.append(one)
        restores.append(restore)
    counts = {k: [int(t[k].shape[1]) for t in checked] for k in ("boxes", "keypoints") if k in checked[0]}
    pad_to = {k: max(c) for k, c in counts.items()}
    pad_to.update(box_valid=pad_to.get("boxes"), keypoint_valid=pad_to.get("keypoints"))

    def padded(k, v):
        if k == "masks":
            return jnp.pad(v, [(0, 0), (0, canvas_hw[0] - v.shape[1]), (0, canvas_hw[1] - v.shape[2]), (0, 0)])
        widths = [(0, 0), (0, pad_to[k] - v.shape[1])] + [(0, 0)] * (v.ndim - 2)
        return jnp.pad(v, widths)  # zeros: padded boxes and keypoints are invalid

    batched = {k: jnp.concatenate([padded(k, t[k]) for t in checked]) for k in checked[0]}

    def restore(moved):
        out = []
        for i, back in enumerate(restores):
            own = {}
            for k, v in moved.items():
                v = v[i:i + 1]
                of = {"box_valid": "boxes", "keypoint_valid": "keypoints"}.get(k, k)
                own[k] = v[:, :counts[of][i]] if of in counts else v
            out.append(back(own))
        return out

    return batched, restore


def move_first(plan_: CanvasPlan, rule: TargetRule, targets, params, true_hw, out_hw, *, min_area, min_visibility):
    """Move a canvas batch's ``targets`` (batched, masks as the canvas) through the plan's
    size-setting stage(s), each image with its true size traced: the first stage's
    ``rule``, or the form's own ``move_targets`` (a fused pair). A keypoint in the
    canvas's padding (outside its true image) is invalid, as one outside an image is."""

    def one(t, p, hw):
        hw = (hw[0], hw[1])
        if "keypoints" in t:
            kp = t["keypoints"]
            t = dict(t, keypoint_valid=t["keypoint_valid"] & (kp[:, 0] < hw[1]) & (kp[:, 1] < hw[0]))
        if plan_.form.move_targets is not None:
            return plan_.form.move_targets(t, p, hw, min_area=min_area, min_visibility=min_visibility)
        return move_one(rule, t, p, hw, out_hw, plan_.options, min_area, min_visibility)

    return jax.vmap(one, in_axes=(0, None if params is None else 0, 0))(targets, params, jnp.asarray(true_hw, jnp.int32))


# square windows (besides the whole slot) a form looped over the images reads its image
# from: the smallest that holds the image's true size
IMAGE_WINDOW_SIDES = (288, 512, 768)


def _in_window(plan_: CanvasPlan, canvas, slot, params, true_hw, *, layout):
    """The form on image ``slot`` (traced) of the ``canvas`` batch, read from the smallest
    top-left window of its slot that holds its true size (``IMAGE_WINDOW_SIDES`` at least
    as large as the output, else the whole slot; a branch of a ``lax.switch`` each): a window is a smaller canvas, so the
    form's taps are bounded by it rather than by the canvas (a resize of a 300-pixel image
    in a 1024-pixel canvas gathered taps for 1024 pixels), and the rest of the slot is
    neither copied nor converted to float32. The same bits: the forms' results do not
    depend on the canvas (:mod:`imgproc.augment.resample`)."""
    axes = tuple(1 + a for a in spatial_axes(layout))
    # every branch is traced: a window smaller than the output would not hold a crop of it
    least = max(plan_.form.out_size(plan_.options))
    sides = [s for s in IMAGE_WINDOW_SIDES if least <= s < min(canvas.shape[a] for a in axes)]
    branch = sum((jnp.maximum(true_hw[0], true_hw[1]) > s).astype(jnp.int32) for s in sides) if sides else 0

    def read(side):
        def form(batch, i, p):
            shape = [1, *batch.shape[1:]]
            for axis in axes if side is not None else ():
                shape[axis] = side
            x = jax.lax.dynamic_slice(batch, [i] + [0] * (batch.ndim - 1), shape)[0]
            return plan_.apply(x.astype(jnp.float32), p, true_hw, layout=layout)
        return form

    return jax.lax.switch(branch, [read(s) for s in sides] + [read(None)], canvas, slot, params)


def run_plan(plan_: CanvasPlan, canvas, true_hw, key, indices, params, *, layout, per_image, then=None):
    """The size-setting stage(s) on the canvas batch (traced): each image converted to
    float32 and read with its true size; returns the ``(N, h, w, C)`` float32 batch and the
    drawn parameters (batched; None for a deterministic form). ``per_image``: ``lax.map``
    (one image at a time, the CPU default) rather than ``vmap``, each image read from the
    canvas by the form's ``apply_looped`` or from a window that holds it (:func:`_in_window`).

    ``then``: ``(stages, body)``, the fused random run that follows the plan
    (:func:`imgproc.pipeline.random_runs.fused_body`), run on each image in the same loop
    (per image only): the batch is then the run's result, and a third value holds the
    run's drawn parameters. One loop instead of two: the crop's result is not written out
    as a batch and read back, and the loop's output is allocated once."""
    looped = per_image and plan_.form.apply_looped is not None

    def one(args):
        i, image, hw, given, given_then = args  # per image: image is the slot's number; the form reads the canvas
        sizes = (hw[0], hw[1])
        p = None
        if plan_.form.sample is not None:
            p = plan_.sample(stage_key(key, i, plan_.param_stage), sizes, layout=layout) if given is None else given
        if looped:  # reads the canvas in its dtype, gives float32
            y = plan_.apply_looped(canvas, image, p, sizes, layout=layout)
        elif per_image:
            y = _in_window(plan_, canvas, image, p, sizes, layout=layout)
        else:
            y = plan_.apply(image.astype(jnp.float32), p, sizes, layout=layout)
        if then is None:
            return y, p
        y, drawn = then[1](i, y, given_then)
        return y, p, drawn

    given = None if params is None else params[plan_.param_stage]
    given_then = None if params is None or then is None else tuple(params[s] for s in then[0])
    args = (indices, jnp.arange(canvas.shape[0], dtype=jnp.int32) if per_image else canvas, true_hw, given, given_then)
    if per_image:
        return jax.lax.map(one, args)
    if then is not None:
        raise ValueError("a random run chained to the plan runs per image only")
    return jax.vmap(one)(args)
