"""ImageNet training recipe throughput: imgproc.recipes.imagenet_train vs albumentations vs augmax.

The work (issue 13): 256 uint8 images of 224x224x3 (quick: 64) through the ImageNet
training recipe, float32 out: random resized crop to 224, random left-right flip,
TrivialAugment (one of 14 ops per image), normalize with the ImageNet mean/std, random
erasing (p=0.1), then per image MixUp (alpha 0.2) or CutMix (alpha 1.0) of the images and
their one-hot labels (1000 classes).

* imgproc: ``imgproc.recipes.imagenet_train()`` called on the NumPy batch (one jitted
  program for the pipeline and the mix), default strategy and each of ``map``/``select``/
  ``group`` for trivial_augment.
* albumentations: ``A.Compose`` in a Python loop in one process: ``A.RandomResizedCrop``,
  ``A.HorizontalFlip``, an ``A.OneOf`` of its equivalents of TrivialAugmentWide's 14 ops
  (``NoOp``, ``Affine`` shear x / shear y / translate x / translate y / rotate,
  ``ColorJitter`` brightness / saturation / contrast, ``Sharpen``, ``Posterize``,
  ``Solarize``, ``AutoContrast``, ``Equalize``, torchvision's ranges), ``A.Normalize``,
  ``A.Erasing(p=0.1)``; then MixUp or CutMix (one draw per batch, as torchvision's
  ``RandomChoice([MixUp, CutMix])``, partner ``i - 1``) in NumPy.
* augmax: ``jit(vmap(chain))``: ``ByteToFloat``, ``RandomSizedCrop``, ``HorizontalFlip``,
  and (augmax has no ``OneOf``) its TrivialAugment-like ops each with p=1/14 (``Rotate``,
  ``RandomBrightness``, ``RandomContrast``, ``ColorJitter`` saturation, ``Solarization``),
  ``Normalize``; no erasing; MixUp in ``jnp`` in the same jit.

Times include moving the uint8 batch in and the float32 result back to NumPy. Timed with
benchmarks/harness.py in turns, each timed call preceded by an untimed one.

    python benchmarks/recipes.py [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import os

import numpy as np

from harness import Case, Group, print_group, time_group

STRATEGIES = ("select", "map", "group")
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
NUM_CLASSES = 1000


def numpy_mix(images, labels, rng):
    """torchvision v2's ``RandomChoice([MixUp(0.2), CutMix(1.0)])`` in NumPy: one ``lam``
    and one op per batch, image ``i`` mixed with image ``i - 1``."""
    y = np.eye(NUM_CLASSES, dtype=np.float32)[labels]
    xp, yp = np.roll(images, 1, axis=0), np.roll(y, 1, axis=0)
    if rng.random() < 0.5:
        lam = np.float32(rng.beta(0.2, 0.2))
        return lam * images + (1 - lam) * xp, lam * y + (1 - lam) * yp
    lam = rng.beta(1.0, 1.0)
    h, w = images.shape[1:3]
    cx, cy = rng.integers(w), rng.integers(h)
    rw, rh = int(0.5 * np.sqrt(1 - lam) * w), int(0.5 * np.sqrt(1 - lam) * h)
    x1, x2, y1, y2 = max(cx - rw, 0), min(cx + rw, w), max(cy - rh, 0), min(cy + rh, h)
    out = images.copy()
    out[:, y1:y2, x1:x2] = xp[:, y1:y2, x1:x2]
    lam = np.float32(1 - (x2 - x1) * (y2 - y1) / (h * w))
    return out, lam * y + (1 - lam) * yp


def albumentations_trivial_augment(A):
    """albumentations' equivalents of TrivialAugmentWide's 14 ops, one drawn per image
    (``A.OneOf``), torchvision's ranges."""
    return A.OneOf([
        A.NoOp(p=1.0),
        A.Affine(shear={"x": (-44.7, 44.7), "y": (0, 0)}, p=1.0),  # atan(0.99) in degrees
        A.Affine(shear={"x": (0, 0), "y": (-44.7, 44.7)}, p=1.0),
        A.Affine(translate_px={"x": (-32, 32), "y": (0, 0)}, p=1.0),
        A.Affine(translate_px={"x": (0, 0), "y": (-32, 32)}, p=1.0),
        A.Affine(rotate=(-135, 135), p=1.0),
        A.ColorJitter(brightness=(0.01, 1.99), contrast=0, saturation=0, hue=0, p=1.0),
        A.ColorJitter(brightness=0, contrast=0, saturation=(0.01, 1.99), hue=0, p=1.0),
        A.ColorJitter(brightness=0, contrast=(0.01, 1.99), saturation=0, hue=0, p=1.0),
        A.Sharpen(p=1.0),
        A.Posterize(num_bits=(2, 8), p=1.0),
        A.Solarize(threshold_range=(0.0, 1.0), p=1.0),
        A.AutoContrast(p=1.0),
        A.Equalize(p=1.0),
    ], p=1.0)


def run(quick: bool = False):
    """``(groups, rows)``: every implementation on the same batch (256 images, 5 rounds;
    ``quick``: 64 images, 2 rounds)."""
    import jax

    import imgproc

    n_images, repeats = (64, 2) if quick else (256, 5)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (n_images, 224, 224, 3), dtype=np.uint8)
    labels = rng.integers(0, NUM_CLASSES, n_images)
    indices = np.arange(n_images)
    group = Group("recipes", f"ImageNet training recipe on {n_images} uint8 images 224x224x3, float32 out "
                  "(random resized crop, flip, TrivialAugment, normalize, erasing p=0.1, MixUp/CutMix)",
                  baseline="albumentations")
    key = jax.random.key(0)
    cases = []

    def add_recipe(name, label, recipe):
        draws = itertools.count()  # a new draw every call

        def call():
            out = recipe(images, labels, key=jax.random.fold_in(key, next(draws)), indices=indices,
                         num_classes=NUM_CLASSES)
            return np.asarray(out["images"]), np.asarray(out["labels"])

        cases.append(Case(name, label, call, images=n_images))

    add_recipe("imgproc_default", f"imgproc.recipes.imagenet_train() (default strategy, "
               f"{imgproc.default_strategy()})", imgproc.recipes.imagenet_train())
    for strategy in STRATEGIES:
        add_recipe(f"imgproc_{strategy}", f"imgproc.recipes.imagenet_train(strategy={strategy!r})",
                   imgproc.recipes.imagenet_train(strategy=strategy))

    try:
        import albumentations as A

        trivial = albumentations_trivial_augment(A)
        aug = A.Compose([
            A.RandomResizedCrop(size=(224, 224), scale=(0.08, 1.0)),
            A.HorizontalFlip(p=0.5),
            trivial,
            A.Normalize(mean=MEAN, std=STD),
            A.Erasing(p=0.1),
        ], seed=0)
        mix_rng = np.random.default_rng(1)

        def albumentations_run():
            x = np.stack([aug(image=im)["image"] for im in images])
            return numpy_mix(x, labels, mix_rng)

        cases.append(Case("albumentations", f"albumentations {A.__version__} (one process) + MixUp/CutMix in NumPy",
                          albumentations_run, images=n_images))
    except ImportError as e:
        print(f"albumentations skipped: {e}")

    try:
        import augmax
        import jax.numpy as jnp

        p = 1 / 14
        chain = augmax.Chain(
            augmax.ByteToFloat(),
            augmax.RandomSizedCrop(224, 224),
            augmax.HorizontalFlip(),
            augmax.Rotate(angle_range=(-135, 135), p=p),
            augmax.RandomBrightness(p=p),
            augmax.RandomContrast(p=p),
            augmax.ColorJitter(brightness=0, contrast=0, saturation=0.99, hue=0, p=p),
            augmax.Solarization(p=p),
            augmax.Normalize(),
        )

        @jax.jit
        def augmax_fn(k, x, y):
            keys = jax.random.split(k, x.shape[0] + 1)
            out = jax.vmap(chain)(keys[1:], x)
            lam = jax.random.beta(keys[0], 0.2, 0.2)
            onehot = jax.nn.one_hot(y, NUM_CLASSES)
            return (lam * out + (1 - lam) * jnp.roll(out, 1, 0),
                    lam * onehot + (1 - lam) * jnp.roll(onehot, 1, 0))

        draws = itertools.count()

        def augmax_run():
            out, y = augmax_fn(jax.random.PRNGKey(next(draws)), jnp.asarray(images), jnp.asarray(labels))
            return np.asarray(out), np.asarray(y)

        cases.append(Case("augmax", f"augmax {augmax.__version__} (jit+vmap, MixUp in the jit)", augmax_run,
                          images=n_images))
    except ImportError as e:
        print(f"augmax skipped: {e}")

    rows = time_group(group.id, cases, repeats, settle=True)
    print_group(group, rows)
    return [group], rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="64 images, 2 rounds (a check that it runs)")
    args = parser.parse_args()
    import jax

    print(f"{os.cpu_count()} cores, jax {jax.__version__}, backend {jax.default_backend()}")
    run(args.quick)


if __name__ == "__main__":
    main()
