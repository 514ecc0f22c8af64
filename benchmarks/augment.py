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

Times include moving the uint8 batch in and the result back to a NumPy array; the cases
take turns (round-robin), so a change in the machine's load hits all of them alike.

    python benchmarks/augment.py [--n 256] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

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


def _time_interleaved(cases, repeats):
    """Median seconds of each case; the cases take turns (round-robin) so that a change in
    the machine's load during the run hits all of them alike. One warm-up call each, and
    in every round an untimed call just before the timed one, so that a case does not pay
    for the caches and freed memory the previous case left behind (the select strategy
    leaves gigabytes of temporaries: the case after it measured 1.3-1.8x slower)."""
    for _, fn in cases:
        fn()  # warm-up (compilation)
    times = {name: [] for name, _ in cases}
    for _ in range(repeats):
        for name, fn in cases:
            fn()
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def run(n_images=256, repeats=5) -> list[dict]:
    """Time every implementation on the same batch; rows ``{"name", "images_per_s", "ms", ...}``
    (``ms`` per batch, median of ``repeats`` after a warm-up)."""
    import jax

    import imgproc

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (n_images, 224, 224, 3), dtype=np.uint8)
    group = f"Augment {n_images} uint8 images 224x224x3 (flip, rot90, brightness/contrast, one of blur/sharpen/noise)"
    rows = []

    cases = []

    def add(name, fn):
        cases.append((name, fn))

    key = jax.random.key(0)
    for strategy in STRATEGIES:
        pipe = imgproc.Pipeline(imgproc_spec(strategy))
        calls = iter(range(10**9))
        add(
            f"imgproc Pipeline, strategy={strategy}"
            + (" (default on this backend)" if strategy == imgproc.default_strategy() else ""),
            lambda pipe=pipe, calls=calls: np.asarray(pipe(images, key=jax.random.fold_in(key, next(calls)))),
        )

    # blur and sharpen forced to convolve2d: since "auto" picks it inside the per-image map
    # on CPU, this row should equal the default row (a check of that choice)
    pipe = imgproc.Pipeline(imgproc_spec("map", method="convolve2d"))
    calls2 = iter(range(10**9))
    add("imgproc Pipeline, strategy=map, blur/sharpen method=convolve2d",
        lambda pipe=pipe: np.asarray(pipe(images, key=jax.random.fold_in(key, next(calls2)))))

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
        add(f"albumentations {A.__version__} (one process)", lambda: np.stack([aug(image=im)["image"] for im in images]))
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

        add(f"augmax {augmax.__version__} (jit+vmap)", augmax_run)
    except ImportError as e:
        print(f"augmax skipped: {e}")

    for name, seconds in _time_interleaved(cases, repeats).items():
        rows.append({"group": group, "name": name, "ms": seconds * 1e3, "images_per_s": n_images / seconds})
    by = {r["name"].split(" ")[0]: r for r in rows}
    for r in rows:  # for benchmarks/run.py's RESULTS.md: time relative to albumentations
        if "albumentations" in by:
            r["vs"], r["baseline"] = r["ms"] / by["albumentations"]["ms"], "albumentations"
        for other in ("albumentations", "augmax"):
            if other in by and r["name"].startswith("imgproc"):
                r[f"vs_{other}"] = r["images_per_s"] / by[other]["images_per_s"]
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import jax

    print(f"{os.cpu_count()} cores, jax {jax.__version__}, backend {jax.default_backend()}")
    rows = run(args.n, args.repeats)
    print(rows[0]["group"])
    for r in rows:
        ratios = "  ".join(f"{v:6.2f}x {k[3:]}'s images/s" for k, v in r.items() if k.startswith("vs_"))
        print(f"  {r['name']:<62} {r['images_per_s']:8.0f} images/s  {r['ms']:8.1f} ms  {ratios}")


if __name__ == "__main__":
    main()
