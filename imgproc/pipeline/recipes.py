"""Standard training recipes, each one JSON spec: ImageNet training and evaluation, detection.

A recipe is a dict that ``json.dumps`` can write::

    {"name": "imagenet_train",
     "pipeline": [{"op": "random_resized_crop", "size": [224, 224]}, ...],   # a Pipeline spec
     "mix": [{"op": "mixup", "alpha": 0.2}, {"op": "cutmix", "alpha": 1.0}],  # or None
     "targets": [],                            # target kinds it moves: boxes, masks, keypoints
     "min_box_area": 1.0}                      # only with targets

:class:`Recipe` runs it: the :class:`imgproc.Pipeline` of ``"pipeline"`` on the uint8 batch,
then (when ``"mix"`` is set) :func:`imgproc.mix_batch` on the pipeline's output and the
labels. ``get(name, **options)`` builds one of the shipped recipes (:func:`names` lists
them); ``Recipe.from_spec(spec)`` any spec (or its JSON text), ``recipe.to_spec()`` gives it
back.

Calling: ``recipe(images, labels=None, *, key, indices=None, targets=None,
num_classes=None)`` returns a dict: ``{"images": ...}``, plus ``"labels"`` when labels were
given (float32 ``(B, K)``, mixed, when the recipe mixes; as given otherwise) and
``"targets"`` when targets were given (the pipeline's targets dict, see
``docs/augment.md``). NumPy in, NumPy out; ``jax.Array`` in, ``jax.Array`` out.

Programs. A recipe whose pipeline ends with ``normalize`` (the shipped ImageNet recipes)
runs the stages before it as its *augmentation*, on the input's dtype: a uint8 batch
comes out uint8, rounded once (the project's rule for a pipeline), as torchvision's
transforms on uint8 images do before ``ToDtype``/``Normalize``. Then ``normalize`` and
the mix run as one program. So a recipe's images equal ``normalize`` of the rounded
augmentation, within half a level (``0.5 / 255 / std``, at most 0.0098 for ImageNet's
std) of the same pipeline kept in float32, and erased boxes (filled with the mean before
``normalize``) are within that of torchvision's 0.

Inside the caller's ``jax.jit`` (``jax.jit(lambda x, y, k: recipe(x, y, key=k))``)
everything is traced into the caller's one program. On a concrete batch (NumPy or
``jax.Array``) the recipe calls its augmentation (on CPU its fast path: one slice per
core, in threads), then its jitted normalize + mix (``recipe.trace_count`` counts that
program's traces); on NumPy input the latter writes into the buffer of a dropped earlier
result (:mod:`imgproc.cpu.output_buffers`). The key, images, labels and indices are traced,
so a new key or batch of the same shape does not recompile. This split into programs is
the faster on CPU (one program runs the per-image loop on one core; why:
benchmarks/NOTES.md, "ImageNet training recipe").

Compiled programs. A recipe turns on JAX's persistent compilation cache on its first call
(:func:`imgproc.core.program_cache.enable_compilation_cache`: ``~/.cache/imgproc/jax``;
``IMGPROC_CACHE_DIR`` names another folder, ``IMGPROC_CACHE_DIR=off`` turns it off), so a
new process loads the programs an earlier one compiled instead of compiling them again.

Randomness. The pipeline draws image ``i``'s stages from ``fold_in(key, indices[i])`` as
any pipeline (so its output for a sample depends only on the key and its index, in any
batch split or order). The mix draws from ``fold_in(key, MIX_STREAM)`` with the same
per-image rule, and pairs each image with a partner of the same batch: the same batch and
key give the same result in any order of the batch, another batch composition gives other
partners (:mod:`imgproc.augment.mix`).
"""

from __future__ import annotations

import json

import jax
import numpy as np

from imgproc.augment.intensity import normalize
from imgproc.augment.mix import mix_batch, parse_spec
from imgproc.augment.targets import TARGET_KEYS
from imgproc.core.array_type import callers_type, host_result
from imgproc.core.images import check_image
from imgproc.core.devices import freeze
from imgproc.core.program_cache import KeptPrograms, enable_compilation_cache
from imgproc.core.validate import (check_choice, check_indices, check_key, check_number, check_range, check_size_pair,
                                   is_int, is_traced)
from imgproc.cpu import IntoBuffer, host_buffer
from imgproc.pipeline.pipeline import Pipeline, returns_fixed_dtype
from imgproc.pipeline.variable_size import is_image_list

__all__ = ["IMAGENET_MEAN", "IMAGENET_STD", "MIX_STREAM", "Recipe", "detection_train", "get", "imagenet_eval",
           "imagenet_train", "names"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
MIX_STREAM = 0x6D6978  # "mix": the mix draws from fold_in(key, MIX_STREAM), apart from the stages' keys
SPEC_KEYS = ("name", "pipeline", "mix", "targets", "min_box_area")
TARGET_KINDS = ("boxes", "masks", "keypoints")


# equal recipes' normalize + mix programs (tests start each case without them: tests/conftest.py)
EQUAL_RECIPES = KeptPrograms(16)


class _Finish:
    """A recipe's normalize + mix program and the batch sizes it was called with, kept by
    the first of equal recipes (``owner``) and shared by the others."""

    def __init__(self, owner: "Recipe"):
        self.traces = 0  # counted while tracing: compilations
        self.sizes = set()  # the batch sizes the program was called with
        # on a concrete batch: the augmentation's own call, then this; written into a
        # dropped earlier result's buffer on NumPy input (imgproc.cpu.output_buffers)
        self.program = IntoBuffer(
            owner._finish, static_argnames=("num_classes",),
            out_like=lambda x: jax.ShapeDtypeStruct(x.shape, owner.pipeline.output_dtype(x.dtype)))


class Recipe:
    """A training or evaluation recipe: a pipeline, optionally followed by MixUp/CutMix,
    built from one JSON-able spec (module docstring).

    Args:
        spec: ``{"name": str, "pipeline": [stage specs], "mix": mix spec or None,
            "targets": [kinds among "boxes", "masks", "keypoints"], "min_box_area": float}``
            (``mix``, ``targets`` and ``min_box_area`` optional), or its JSON text.

    Example:
        >>> import numpy as np, imgproc
        >>> r = imgproc.pipeline.recipes.get("imagenet_eval", size=8, resize=10)
        >>> out = r(np.zeros((2, 12, 16, 3), np.uint8), key=0)
        >>> out["images"].shape, out["images"].dtype
        ((2, 8, 8, 3), dtype('float32'))
        >>> imgproc.pipeline.recipes.Recipe.from_spec(r.to_json()).to_spec() == r.to_spec()
        True
    """

    def __init__(self, spec):
        if isinstance(spec, (str, bytes)):
            spec = json.loads(spec)
        if not isinstance(spec, dict):
            raise ValueError(f"a recipe spec is a dict with keys {', '.join(SPEC_KEYS)}; got {type(spec).__name__}")
        unknown = sorted(set(spec) - set(SPEC_KEYS))
        if unknown:
            raise ValueError(f"a recipe spec has no key {', '.join(map(repr, unknown))}; its keys: "
                             f"{', '.join(SPEC_KEYS)}")
        for required in ("name", "pipeline"):
            if required not in spec:
                raise ValueError(f"a recipe spec needs {required!r}; its keys: {', '.join(SPEC_KEYS)}")
        if not isinstance(spec["name"], str) or not spec["name"]:
            raise ValueError(f"a recipe's name is a non-empty string; got {spec['name']!r}")
        self.name = spec["name"]
        self.pipeline = Pipeline.from_spec(spec["pipeline"])
        mix = spec.get("mix")
        self.mix = None if mix is None else [dict(s) for s in ([mix] if isinstance(mix, dict) else mix)]
        if self.mix is not None:
            parse_spec(self.mix)  # refuses a bad mix spec now, naming the allowed ops and options
        kinds = spec.get("targets", [])
        if not isinstance(kinds, (list, tuple)):
            raise ValueError(f"a recipe's targets is a list of kinds among {', '.join(TARGET_KINDS)}; got {kinds!r}")
        for kind in kinds:
            check_choice("targets", kind, TARGET_KINDS)
        if kinds and self.mix is not None:
            raise ValueError("a recipe with targets cannot mix (MixUp/CutMix move no boxes, masks or keypoints)")
        self.targets = list(kinds)
        self.min_box_area = float(check_number("min_box_area", spec.get("min_box_area", 1.0), low=0))
        # A pipeline that ends with normalize runs as its augmentation (the stages before
        # normalize, on the input's dtype: uint8 stays uint8, rounded once), then normalize
        # and the mix in one program (module docstring, "Programs").
        stages = self.pipeline.to_spec()
        if stages and stages[-1]["op"] == "normalize":
            self._augment = Pipeline.from_spec(stages[:-1], layout=self.pipeline.layout)
            self._normalize = {k: v for k, v in stages[-1].items() if k != "op"}
        else:
            self._augment, self._normalize = self.pipeline, None
        self._cache_on = False  # the persistent compilation cache, turned on by the first call
        # the normalize + mix program, shared by equal recipes as their pipelines share theirs
        key = self._sharing_key()
        self._programs = _Finish(self) if key is None else EQUAL_RECIPES.get(key, lambda: _Finish(self))

    def _sharing_key(self):
        """Equal recipes: their pipelines share programs, and their normalize and mix are equal."""
        pipeline, augment = self.pipeline._programs.key, self._augment._programs.key
        if pipeline is None or augment is None:
            return None  # a pipeline with programs of its own
        return pipeline, augment, freeze(self._normalize), freeze(self.mix)

    @property
    def trace_count(self) -> int:
        """Traces of the normalize + mix program (tests: a second call does not recompile),
        counted over every equal recipe in this process: they share it."""
        return self._programs.traces

    @classmethod
    def from_spec(cls, spec) -> "Recipe":
        """Build from a spec dict or its JSON text (the module docstring's format)."""
        return cls(spec)

    def to_spec(self) -> dict:
        """The JSON-able spec: ``Recipe.from_spec(r.to_spec())`` builds the same recipe."""
        mix = None if self.mix is None else [dict(m) for m in self.mix]
        spec = {"name": self.name, "pipeline": self.pipeline.to_spec(), "mix": mix, "targets": list(self.targets)}
        if self.targets:
            spec["min_box_area"] = self.min_box_area
        return spec

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_spec(), **kwargs)

    def __repr__(self):
        return f"Recipe({self.to_spec()!r})"

    def __getstate__(self):
        """A recipe pickles as its spec (worker processes build and compile it again)."""
        return {"spec": self.to_spec()}

    def __setstate__(self, state):
        self.__init__(state["spec"])

    def output_dtype(self, dtype):
        """The dtype of ``"images"`` for input of ``dtype`` (float32 after ``normalize``)."""
        return self.pipeline.output_dtype(dtype)

    def _finish(self, x, labels, key, indices, count=None, *, num_classes):
        """The pipeline's ``normalize`` (when it ends with one) and the mix (when the recipe
        mixes and labels are given) of the augmented batch ``x``: ``(images, labels)``
        (``count``: as for :func:`imgproc.mix_batch`)."""
        self._programs.traces += 1
        if self._normalize is not None:
            x = normalize(x, **self._normalize, layout=self.pipeline.layout)
        if self.mix is None or labels is None:
            return x, labels
        return mix_batch(x, labels, self.mix, key=jax.random.fold_in(key, MIX_STREAM), indices=indices,
                         num_classes=num_classes, count=count)

    def _finished(self, x, labels, key, indices, num_classes):
        if self._normalize is None and (self.mix is None or labels is None):
            return x, labels
        if any(map(is_traced, (x, labels, key, indices))):
            return self._finish(x, labels, key, indices, num_classes=num_classes)
        # a partial batch (a dataset's last) runs in the program of a batch up to twice its
        # size compiled before, padded, instead of compiling one of its own: the padding
        # mixes with no image, so the first n results are those of the n images alone
        n = x.shape[0]
        finish = self._programs
        size = min((s for s in finish.sizes if n <= s <= 2 * n), default=n) if isinstance(x, np.ndarray) else n
        finish.sizes.add(size)
        if size == n:
            return finish.program(x, labels, key, indices, np.int32(n), num_classes=num_classes)

        def padded(a):  # aligned, as the program's argument is read in place (a misaligned one compiled its own)
            a = np.asarray(a)
            out = host_buffer((size,) + a.shape[1:], a.dtype)
            out[:n], out[n:] = a, 0
            return out

        out = finish.program(padded(x), None if labels is None else padded(labels), key,
                             None if indices is None else padded(indices), np.int32(n), num_classes=num_classes)
        return tuple(None if a is None else host_result(a)[:n] for a in out)

    def __call__(self, images, labels=None, *, key=None, indices=None, targets=None, num_classes=None, sizes=None):
        """Run the recipe on a batch ``images`` (NHWC, uint8 for the shipped recipes), or on
        a list of images of different sizes (HWC), as a dataset's decoded images come:
        the pipeline's first stage sets the output size (the shipped classification
        recipes' do), so the list runs as one batch in a few compiled programs, image
        ``i`` equal to the recipe on that image alone with index ``indices[i]``
        (:mod:`imgproc.pipeline.variable_size`).

        Args:
            images: ``(B, H, W, C)`` batch, any dtype a pipeline takes, or a list of
                ``(H_i, W_i, C)`` images of one dtype.
            labels: with a mixing recipe, one-hot or soft ``(B, K)`` labels, or integer ids
                ``(B,)`` with ``num_classes`` (required there); otherwise optional and
                returned unchanged.
            key: a JAX key or an int seed (not needed by a recipe that draws nothing,
                such as ``imagenet_eval``). indices: one int per image (default
                ``arange(B)``): the samples' global indices, which fix their draws.
            targets: for a recipe that lists target kinds: ``{"boxes", "box_valid",
                "masks", "keypoints", "keypoint_valid"}`` as a pipeline takes them (with a
                list of images, a list of one such dict per image).
            sizes: the padded form of a list (:func:`imgproc.pad_images`): ``images`` one
                ``(N, H, W, C)`` batch holding image ``i`` in the top-left of
                ``images[i]``, ``sizes`` its ``(height, width)`` per image, ``(N, 2)``
                integers; the same result as the list (``targets``: one batched dict,
                masks padded as the images).

        Returns:
            ``{"images": (B, h, w, C) array, "labels": (B, K) float32 (when given),
            "targets": dict (when given)}``.
        """
        if not self._cache_on:
            # compiled programs outlive the process: a fresh process loads them instead of
            # compiling (imgproc.core.program_cache; IMGPROC_CACHE_DIR=off turns it off)
            enable_compilation_cache()
            self._cache_on = True
        if sizes is not None or is_image_list(images):
            return self._call_list(images, labels, key=key, indices=indices, targets=targets, num_classes=num_classes,
                                   sizes=sizes)
        return self._call_batch(images, labels, key=key, indices=indices, targets=targets, num_classes=num_classes)

    def _call_list(self, images, labels, *, key, indices, targets, num_classes, sizes):
        """A list of images (or its padded form, ``sizes``): the augmentation makes one
        batch of them (and moves their targets: a list of one dict per image, one per image
        back; one batched dict with ``sizes``), then the rest as for a batch (the caller's
        array type: the augmentation's)."""
        key = self._key(key)
        count = len(images) if sizes is None else np.shape(images)[0]
        if targets is not None and sizes is not None:
            self._check_target_keys(targets)
        elif targets is not None:
            if not isinstance(targets, (list, tuple)):
                raise ValueError(f"with a list of images, targets is a list of one dict per image ({len(images)} "
                                 f"dicts); got {type(targets).__name__}")
            for t in targets:
                self._check_target_keys(t)
        if self.mix is not None and labels is not None:
            _check_labels(labels, count, num_classes)
            if indices is None:
                indices = np.arange(count)
        if targets is None:
            x = self._augment(images, key=key, indices=indices, sizes=sizes)
        else:
            x, moved = self._augment(images, key=key, indices=indices, targets=targets, min_box_area=self.min_box_area,
                                     sizes=sizes)
        out = self._call_batch(x, labels, key=key, indices=indices, targets=None, num_classes=num_classes,
                               augmented=True)
        if targets is not None:
            out["targets"] = moved
        return out

    def _check_target_keys(self, targets):
        """Refuse targets this recipe does not move (its spec's ``"targets"``)."""
        if not self.targets:
            raise ValueError(f"recipe {self.name!r} moves no targets (its spec lists none); detection_train does")
        allowed = {"boxes": ("boxes", "box_valid"), "masks": ("masks",), "keypoints": ("keypoints", "keypoint_valid")}
        ok = {k for kind in self.targets for k in allowed[kind]}
        extra = sorted(set(targets) - ok) if isinstance(targets, dict) else []
        if extra:
            raise ValueError(f"recipe {self.name!r} takes targets {', '.join(sorted(ok))}; got "
                             f"{', '.join(map(repr, extra))} (all target keys: {', '.join(TARGET_KEYS)})")

    def _key(self, key):
        if key is None:
            if self.pipeline.is_random or self.mix is not None:
                raise ValueError(f"recipe {self.name!r} draws random parameters: call it with key=jax.random.key(seed) "
                                 "(or an int seed, key=0)")
            return None
        return check_key(key)

    @callers_type(fixed_dtype=returns_fixed_dtype)
    def _call_batch(self, images, labels, *, key, indices, targets, num_classes, augmented=False):
        key = self._key(key)
        if targets is not None:
            self._check_target_keys(targets)
        if self.mix is not None and labels is None:
            raise ValueError(f"recipe {self.name!r} mixes labels (MixUp/CutMix): pass labels, one-hot (B, K) or "
                             "integer ids with num_classes")
        mixing = self.mix is not None and labels is not None
        if mixing and not augmented:
            if not is_traced(images):
                check_image(images, self.pipeline.layout)  # what the traced pipeline cannot check (finite values)
            _check_labels(labels, images.shape[0], num_classes)
        if mixing and indices is None:
            indices = np.arange(images.shape[0])
        elif indices is not None and not is_traced(indices):
            # one array (a Python list would enter the jitted mix as a list of scalars)
            indices = check_indices(indices, images.shape[0])
        if augmented:
            x = images
        elif targets is not None:
            x, moved = self._augment(images, key=key, indices=indices, targets=targets, min_box_area=self.min_box_area)
        else:
            x = self._augment(images, key=key, indices=indices)
        x, y = self._finished(x, labels if mixing else None, key, indices, num_classes)
        out = {"images": x}
        if targets is not None:
            out["targets"] = moved
        if labels is not None:
            out["labels"] = y if mixing else labels
        return out


def _check_labels(labels, n, num_classes):
    """Concrete integer labels in range (the jitted mix cannot check them)."""
    if num_classes is not None and (not is_int(num_classes) or num_classes < 1):
        raise ValueError(f"num_classes must be a positive integer; got {num_classes!r}")
    if is_traced(labels):
        return
    arr = np.asarray(labels)
    if arr.ndim == 1 and np.issubdtype(arr.dtype, np.integer):
        if num_classes is None:
            raise ValueError("integer class labels need num_classes (or pass one-hot labels of shape (B, num_classes))")
        if arr.size and (arr.min() < 0 or arr.max() >= num_classes):
            raise ValueError(f"class labels must be in [0, {num_classes - 1}]; got {arr.min()}..{arr.max()}")
    elif arr.ndim != 2 or arr.shape[0] != n:
        raise ValueError(f"labels must be integer ids (B,) or one-hot (B, num_classes) for {n} images; got shape "
                         f"{arr.shape}")


def _size(name, size):
    return list(check_size_pair(name, size))


def _mix_spec(mixup_alpha, cutmix_alpha):
    mix = []
    for op, alpha in (("mixup", mixup_alpha), ("cutmix", cutmix_alpha)):
        check_number(f"{op}_alpha", alpha, low=0)
        if alpha > 0:
            mix.append({"op": op, "alpha": float(alpha)})
    return mix or None


def _mean_std(mean, std):
    """Per-channel mean and std (finite, std > 0, as many of each) as lists of floats."""
    try:
        mean, std = [float(m) for m in mean], [float(s) for s in std]
    except (TypeError, ValueError):
        raise ValueError(f"mean and std must be sequences of numbers (one per channel); got {mean!r}, {std!r}") from None
    for i, (m, s) in enumerate(zip(mean, std)):
        check_number(f"mean[{i}]", m)
        check_number(f"std[{i}]", s, low=0, low_open=True)
    if len(mean) != len(std) or not mean:
        raise ValueError(f"mean and std need one value per channel, as many of each; got {len(mean)} and {len(std)}")
    return mean, std


def imagenet_train(size=224, *, scale=(0.08, 1.0), flip_p=0.5, random_erase=0.1, mixup_alpha=0.2,
                   cutmix_alpha=1.0, mean=IMAGENET_MEAN, std=IMAGENET_STD, strategy=None, input_max=255.0) -> Recipe:
    """torchvision's ImageNet classification reference training recipe (``references/
    classification``, ``--auto-augment ta_wide --random-erase 0.1 --mixup-alpha 0.2
    --cutmix-alpha 1.0``, as in its "how to train state-of-the-art models" recipe).

    ``random_resized_crop(size, scale)`` -> ``random_flip_left_right(p=flip_p)`` ->
    ``trivial_augment`` (TrivialAugmentWide, 31 bins, bilinear: what the reference's
    ``presets.py`` passes) -> ``random_erasing(p=random_erase)``
    -> ``normalize(mean, std)`` (float32 out) -> per image one of MixUp(``mixup_alpha``) /
    CutMix(``cutmix_alpha``) on images and labels (an alpha of 0 leaves that op out; both 0:
    no mix). uint8 ``(B, H, W, 3)`` in, float32 ``(B, size, size, 3)`` and float32 one-hot
    ``(B, K)`` labels out. ``strategy``: trivial_augment's batch strategy (None: the
    backend's default, ``"map"`` on CPU).

    Erasing: torchvision erases to 0 after ``Normalize``, i.e. to the mean. Here the box is
    filled with ``mean * input_max`` before ``normalize``, which ``normalize`` maps to 0
    (within half a level on integer input, where the augmentation is rounded: module
    docstring): the same pixels, and the erasing runs in the same per-image loop as
    the crop, flip and TrivialAugment: one per-image loop fewer than erasing after
    normalize, and faster (why: benchmarks/NOTES.md, "docs/augment.md: recipes (programs,
    choices, speed) and the augmentation benchmark"). ``input_max`` is the range of the images
    the recipe is called with: 255 for uint8 (default), 65535 for uint16, 1.0 for float
    images in [0, 1].

    Example:
        >>> import numpy as np, imgproc
        >>> r = imgproc.pipeline.recipes.imagenet_train(16)
        >>> out = r(np.zeros((4, 20, 20, 3), np.uint8), np.arange(4), key=0, num_classes=10)
        >>> out["images"].shape, out["images"].dtype, out["labels"].shape
        ((4, 16, 16, 3), dtype('float32'), (4, 10))
    """
    size = _size("size", size)
    check_range("scale", scale, low=0)
    check_number("scale[0]", scale[0], low=0, low_open=True)
    check_number("flip_p", flip_p, low=0, high=1)
    check_number("random_erase", random_erase, low=0, high=1)
    check_number("input_max", input_max, low=0, low_open=True)
    mean, std = _mean_std(mean, std)
    ta = {"op": "trivial_augment", "interpolation": "bilinear"}  # references/classification/presets.py
    if strategy is not None:
        ta["strategy"] = strategy
    pipeline = [
        {"op": "random_resized_crop", "size": size, "scale": [float(s) for s in scale]},
        {"op": "random_flip_left_right", "p": float(flip_p)},
        ta,
    ]
    if random_erase > 0:
        pipeline.append({"op": "random_erasing", "p": float(random_erase),
                         "value": [m * float(input_max) for m in mean]})
    pipeline.append({"op": "normalize", "mean": mean, "std": std})
    return Recipe({"name": "imagenet_train", "pipeline": pipeline, "mix": _mix_spec(mixup_alpha, cutmix_alpha),
                   "targets": []})


def imagenet_eval(size=224, resize=256, *, mean=IMAGENET_MEAN, std=IMAGENET_STD) -> Recipe:
    """torchvision's ImageNet evaluation transform: ``resize_shorter(resize)`` (bilinear,
    antialiased) -> ``center_crop(size)`` -> ``normalize(mean, std)``. Deterministic: called
    without a key. uint8 in, float32 ``(B, size, size, 3)`` out. A batch resizes as one; a
    list of images of different sizes is resized and cropped image by image in one program
    (:meth:`Recipe.__call__`).

    Example:
        >>> import numpy as np, imgproc
        >>> imgproc.pipeline.recipes.imagenet_eval(8, 10)(np.zeros((1, 10, 20, 3), np.uint8))["images"].shape
        (1, 8, 8, 3)
        >>> photos = [np.zeros((12, 16, 3), np.uint8), np.zeros((20, 11, 3), np.uint8)]  # any sizes
        >>> imgproc.pipeline.recipes.imagenet_eval(8, 10)(photos)["images"].shape
        (2, 8, 8, 3)
    """
    size = _size("size", size)
    if not is_int(resize) or resize < 1:
        raise ValueError(f"resize must be a positive integer (the shorter side); got {resize!r}")
    if resize < min(size):
        raise ValueError(f"resize ({resize}) must be at least the crop size {size}: the centre crop would pad")
    mean, std = _mean_std(mean, std)
    pipeline = [
        {"op": "resize_shorter", "size": int(resize)},
        {"op": "center_crop", "size": size},
        {"op": "normalize", "mean": mean, "std": std},
    ]
    return Recipe({"name": "imagenet_eval", "pipeline": pipeline, "mix": None, "targets": []})


def detection_train(size=(640, 640), *, scale=(0.5, 1.5), flip_p=0.5, brightness=0.125, contrast=(0.5, 1.5),
                    saturation=(0.5, 1.5), hue=0.05, cval=114.0, min_box_area=1.0) -> Recipe:
    """A detection training recipe with boxes, masks and keypoints following the image:
    ``letterbox(size, cval)`` (fit, keep the aspect ratio, pad) -> ``random_resize(size,
    scale)`` (scale jitter: resize by ``s ~ U(scale)``, random crop or pad with ``cval`` to
    ``size``, the "large scale jitter" of detection training) -> ``random_flip_left_right``
    -> colour jitter (``random_brightness(brightness)``, ``random_contrast(contrast)``,
    ``random_saturation(saturation)``, ``random_hue(hue)``, every image each: the ranges
    of torchvision's detection reference ``RandomPhotometricDistort``, there applied with p
    0.5 each, brightness there a factor, here dm-pix's additive delta in the range).
    ``cval`` is in the input's range (114 of 255: Ultralytics' grey). The letterbox comes
    first so that every later op runs at the output size. Boxes whose visible area falls
    below ``min_box_area`` pixels are marked invalid. uint8 in, uint8 out (no normalize:
    detectors differ there).

    Example:
        >>> import numpy as np, imgproc
        >>> r = imgproc.pipeline.recipes.detection_train((32, 32))
        >>> boxes = np.array([[[2.0, 2.0, 10.0, 12.0]]], np.float32)
        >>> out = r(np.zeros((1, 24, 40, 3), np.uint8), key=0, targets={"boxes": boxes})
        >>> out["images"].shape, out["targets"]["boxes"].shape
        ((1, 32, 32, 3), (1, 1, 4))
    """
    size = _size("size", size)
    check_range("scale", scale, low=0)
    check_number("scale[0]", scale[0], low=0, low_open=True)
    check_number("flip_p", flip_p, low=0, high=1)
    check_number("brightness", brightness, low=0, high=1)
    check_range("contrast", contrast, low=0)
    check_range("saturation", saturation, low=0)
    check_number("hue", hue, low=0, high=0.5)
    check_number("cval", cval)
    check_number("min_box_area", min_box_area, low=0)
    pipeline = [
        {"op": "letterbox", "size": size, "cval": float(cval)},
        {"op": "random_resize", "size": size, "scale": [float(s) for s in scale], "cval": float(cval)},
        {"op": "random_flip_left_right", "p": float(flip_p)},
        {"op": "random_brightness", "max_delta": float(brightness)},
        {"op": "random_contrast", "lower": float(contrast[0]), "upper": float(contrast[1])},
        {"op": "random_saturation", "lower": float(saturation[0]), "upper": float(saturation[1])},
        {"op": "random_hue", "max_delta": float(hue)},
    ]
    return Recipe({"name": "detection_train", "pipeline": pipeline, "mix": None, "targets": list(TARGET_KINDS),
                   "min_box_area": float(min_box_area)})


RECIPES = {"imagenet_train": imagenet_train, "imagenet_eval": imagenet_eval, "detection_train": detection_train}


def names() -> tuple[str, ...]:
    """The shipped recipes' names."""
    return tuple(RECIPES)


def get(name: str, **options) -> Recipe:
    """The shipped recipe ``name`` built with ``options`` (its function's keywords, e.g.
    ``get("imagenet_train", size=160)``).

    Example:
        >>> import imgproc
        >>> imgproc.pipeline.recipes.get("imagenet_eval").to_spec()["pipeline"][0]
        {'op': 'resize_shorter', 'size': 256}
    """
    check_choice("recipe", name, tuple(RECIPES))
    return RECIPES[name](**options)
