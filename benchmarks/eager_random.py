"""Eager calls of the noise ops on a batch (what a user types), and the one-stage pipeline.

256 uint8 (and float32) images of 224x224x3, medians of 7 in turns, one process. To compare
two versions of the library, run it in alternating processes with each on PYTHONPATH
(benchmarks/NOTES.md, "Hashed noise").

    python benchmarks/eager_random.py
"""

from __future__ import annotations

import time

import jax
import numpy as np

import imgproc
from imgproc import augment as A


def main(repeats: int = 7):
    x8 = np.random.default_rng(0).integers(0, 256, (256, 224, 224, 3), dtype=np.uint8)
    xf = x8.astype(np.float32) / 255
    key = jax.random.key(0)
    pipe = imgproc.Pipeline([{"op": "gaussian_noise", "sigma": 0.05}])
    cases = {
        "gaussian_noise(key, uint8 batch)": lambda: A.gaussian_noise(key, x8, sigma=0.05),
        "gaussian_noise(key, float32 batch)": lambda: A.gaussian_noise(key, xf, sigma=0.05),
        "speckle_noise(key, float32 batch)": lambda: A.speckle_noise(key, xf, sigma=0.1),
        "Pipeline([gaussian_noise])(uint8 batch)": lambda: pipe(x8, key=key),
    }
    for call in cases.values():  # compile
        np.asarray(call())
    times = {name: [] for name in cases}
    for _ in range(repeats):
        for name, call in cases.items():
            t = time.perf_counter()
            np.asarray(call())
            times[name].append(time.perf_counter() - t)
    print(f"imgproc from {imgproc.__file__}")
    for name, ts in times.items():
        print(f"{name:42s} {np.median(ts) * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
