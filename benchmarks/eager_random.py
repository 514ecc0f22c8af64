"""Eager calls of the noise ops on a batch (what a user types), and the one-stage pipeline:
256 uint8 (and float32) images of 224x224x3; and on one image, with the same sigma every
call and with a new one (numeric options are compiled in: a new value compiles). Timed in
turns with benchmarks/harness.py.
To compare two versions of the library, run it in alternating processes with each on
PYTHONPATH (benchmarks/NOTES.md, "Hashed noise").

    python benchmarks/eager_random.py
"""

from __future__ import annotations

import itertools

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
    one = x8[0]
    sigmas = (0.05 + 1e-6 * i for i in itertools.count(1))
    cases = [
        Case("noise_uint8", "gaussian_noise(key, uint8 batch)", lambda: A.gaussian_noise(key, x8, sigma=0.05), images=256),
        Case("noise_float32", "gaussian_noise(key, float32 batch)", lambda: A.gaussian_noise(key, xf, sigma=0.05),
             images=256),
        Case("speckle_float32", "speckle_noise(key, float32 batch)", lambda: A.speckle_noise(key, xf, sigma=0.1),
             images=256),
        Case("pipeline_uint8", "Pipeline([gaussian_noise])(uint8 batch)", lambda: pipe(x8, key=key), images=256),
        Case("one_image_same_sigma", "gaussian_noise(key, one uint8 image), the same sigma",
             lambda: A.gaussian_noise(key, one, sigma=0.05), images=1),
        Case("one_image_new_sigma", "gaussian_noise(key, one uint8 image), a new sigma each call",
             lambda: A.gaussian_noise(key, one, sigma=next(sigmas)), images=1),
    ]
    group = Group("eager_random", f"Eager noise ops, 224x224x3 images (imgproc from {imgproc.__file__})")
    print_group(group, time_group(group.id, cases, repeats))


if __name__ == "__main__":
    main()
