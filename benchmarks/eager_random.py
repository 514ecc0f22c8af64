"""Eager calls of the noise ops on a batch (what a user types), and the one-stage pipeline:
256 uint8 (and float32) images of 224x224x3, timed in turns with benchmarks/harness.py.
To compare two versions of the library, run it in alternating processes with each on
PYTHONPATH (benchmarks/NOTES.md, "Hashed noise").

    python benchmarks/eager_random.py
"""

from __future__ import annotations

import jax
import numpy as np

import imgproc
from imgproc import augment as A
from harness import Case, Group, print_group, time_group


def main(repeats: int = 7):
    x8 = np.random.default_rng(0).integers(0, 256, (256, 224, 224, 3), dtype=np.uint8)
    xf = x8.astype(np.float32) / 255
    key = jax.random.key(0)
    pipe = imgproc.Pipeline([{"op": "gaussian_noise", "sigma": 0.05}])
    cases = [
        Case("noise_uint8", "gaussian_noise(key, uint8 batch)", lambda: A.gaussian_noise(key, x8, sigma=0.05), images=256),
        Case("noise_float32", "gaussian_noise(key, float32 batch)", lambda: A.gaussian_noise(key, xf, sigma=0.05),
             images=256),
        Case("speckle_float32", "speckle_noise(key, float32 batch)", lambda: A.speckle_noise(key, xf, sigma=0.1),
             images=256),
        Case("pipeline_uint8", "Pipeline([gaussian_noise])(uint8 batch)", lambda: pipe(x8, key=key), images=256),
    ]
    group = Group("eager_random", f"Eager noise ops, 256 images 224x224x3 (imgproc from {imgproc.__file__})")
    print_group(group, time_group(group.id, cases, repeats))


if __name__ == "__main__":
    main()
