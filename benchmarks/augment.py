"""Augmentation throughput: imgproc (each random-choice strategy) vs albumentations vs augmax.

The work (issue 4): 256 uint8 images of 224x224x3 through a random left-right flip, a
random quarter turn, random brightness and contrast (±20%), and one of (Gaussian blur
σ=1 5x5, the 5x5 sharpen, Gaussian noise σ=5% of the range), every image with its own draw.

* imgproc: one jitted :class:`imgproc.Pipeline` on the whole batch (uint8 in, uint8 out),
  once per strategy of ``random_choice`` (``select``, ``map``, ``group``).
* albumentations: ``A.Compose`` with ``OneOf``, a Python loop over the images in one process
  (OpenCV's default threading).
* augmax: ``jit(vmap(chain))`` on the batch; augmax has no ``OneOf``, sharpen or noise, so
  its last step is ``GaussianBlur(sigma=1, p=1/3)`` (a third of the images blurred, the
  expected share of blur in the others), and it needs ``ByteToFloat`` first.

Times include moving the uint8 batch in and the result back to a NumPy array. Timed with
benchmarks/harness.py in turns, each timed call preceded by an untimed one (``settle``), so
a case does not pay for the temporaries the previous one left behind.

    python benchmarks/augment.py [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import os

import numpy as np

from harness import Case, Group, print_group, time_group

STRATEGIES = ("select", "map", "group")


def imgproc_spec(strategy, method=None):
    extra = {} if method is None else {"method": method}
    return [
        {"op": "random_flip_left_right"},
        {"op": "random_rot90"},
        {"op": "random_brightness", "max_delta": 0.2},
        {"op": "random_contrast", "lower": 0.8, "upper": 1.2},
        {
            "op": "random_choice",
            "ops": [
                {"op": "gaussian_blur", "sigma": 1.0, "size": 5, **extra},
                {"op": "sharpen", **extra},
                {"op": "gaussian_noise", "sigma": 0.05},
            ],
            "strategy": strategy,
        },
    ]


def run(quick: bool = False):
    """``(groups, rows)``: every implementation on the same batch (256 images, 5 rounds;
    ``quick``: 64 images, 2 rounds)."""
    import jax

    import imgproc

    n_images, repeats = (64, 2) if quick else (256, 5)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (n_images, 224, 224, 3), dtype=np.uint8)
    group = Group("augment", f"Augment {n_images} uint8 images 224x224x3 (flip, rot90, brightness/contrast, "
                  "one of blur/sharpen/noise)", baseline="albumentations")
    key = jax.random.key(0)
    cases = []

    def add_pipeline(name, label, pipe):
        draws = itertools.count()  # a new draw every call
        cases.append(Case(name, label, lambda: np.asarray(pipe(images, key=jax.random.fold_in(key, next(draws)))),
                          images=n_images))

    for strategy in STRATEGIES:
        default = " (default on this backend)" if strategy == imgproc.default_strategy() else ""
        add_pipeline(f"imgproc_{strategy}", f"imgproc Pipeline, strategy={strategy}{default}",
                     imgproc.Pipeline(imgproc_spec(strategy)))
    # blur and sharpen forced to convolve2d: since "auto" picks it inside the per-image map
    # on CPU, this row should equal the default row (a check of that choice)
    add_pipeline("imgproc_map_convolve2d", "imgproc Pipeline, strategy=map, blur/sharpen method=convolve2d",
                 imgproc.Pipeline(imgproc_spec("map", method="convolve2d")))

    try:
        import albumentations as A

        aug = A.Compose([
            A.HorizontalFlip(p=0.5),
            A.RandomRotate90(p=1.0),
            A.RandomBrightnessContrast(brightness_limit=0.2, contrast_limit=0.2, p=1.0),
            A.OneOf([
                A.GaussianBlur(blur_limit=(5, 5), sigma_limit=(1.0, 1.0), p=1.0),
                A.Sharpen(p=1.0),
                A.GaussNoise(std_range=(0.05, 0.05), p=1.0),
            ], p=1.0),
        ], seed=0)
        cases.append(Case("albumentations", f"albumentations {A.__version__} (one process)",
                          lambda: np.stack([aug(image=im)["image"] for im in images]), images=n_images))
    except ImportError as e:
        print(f"albumentations skipped: {e}")

    try:
        import augmax
        import jax.numpy as jnp

        chain = augmax.Chain(
            augmax.ByteToFloat(),
            augmax.HorizontalFlip(),
            augmax.Rotate90(),
            augmax.RandomBrightness(range=(-0.4, 0.4), p=1.0),
            augmax.RandomContrast(range=(-0.4, 0.4), p=1.0),
            augmax.GaussianBlur(sigma=1, p=1 / 3),
        )
        fn = jax.jit(jax.vmap(chain))

        def augmax_run():
            keys = jax.random.split(jax.random.PRNGKey(0), n_images)
            out = fn(keys, jnp.asarray(images))
            return np.asarray(jnp.clip(jnp.round(out * 255), 0, 255).astype(jnp.uint8))

        cases.append(Case("augmax", f"augmax {augmax.__version__} (jit+vmap)", augmax_run, images=n_images))
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
