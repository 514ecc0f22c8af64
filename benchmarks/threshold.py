"""Binarisation on 2048x2048 uint8: imgproc's `threshold` against OpenCV (`cv2.threshold`,
THRESH_BINARY) and scikit-image / NumPy. Two groups: Otsu's threshold of each image
(`value=None`) on a grey photo (sample_images/camera_gray.png enlarged), against
`cv2.threshold(..., THRESH_BINARY + THRESH_OTSU)` and scikit-image's
`(x > threshold_otsu(x)) * 255`; and a fixed threshold on an RGB photo
(sample_images/chelsea.jpg enlarged), against OpenCV and NumPy's `(x > 127) * 255`.
Every implementation gives the same pixels (checked before timing). Part of `make bench`
(`--only threshold`); alone: `python benchmarks/threshold.py [--quick]`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from harness import Case, Group, print_group, time_group

SAMPLES = Path(__file__).resolve().parent.parent / "sample_images"
SIDE = 2048
FIXED = 127  # the fixed group's threshold


def photo(name: str, mode: str) -> np.ndarray:
    """A sample photo enlarged to SIDE x SIDE (bicubic), as uint8 HW or HWC."""
    from PIL import Image

    with Image.open(SAMPLES / name) as im:
        return np.asarray(im.convert(mode).resize((SIDE, SIDE), Image.BICUBIC))


def run(quick: bool = False):
    import cv2
    import jax
    from skimage.filters import threshold_otsu

    import imgproc

    cv2.setNumThreads(os.cpu_count() or 1)
    repeats = 3 if quick else 15
    megapixels = SIDE * SIDE / 1e6
    grey, rgb = photo("camera_gray.png", "L"), photo("chelsea.jpg", "RGB")
    otsu_jit = jax.jit(lambda a: imgproc.threshold(a))
    fixed_jit = jax.jit(lambda a: imgproc.threshold(a, value=FIXED))
    plans = (
        (Group("otsu_2048_u8", f"Otsu binarisation, {SIDE}×{SIDE} grey uint8 photo", baseline="opencv"), grey,
         lambda: imgproc.threshold(grey), otsu_jit,
         ("OpenCV cv2.threshold(THRESH_BINARY + THRESH_OTSU)",
          lambda: cv2.threshold(grey, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)[1]),
         ("scikit-image (x > threshold_otsu(x)) * 255", "skimage",
          lambda: (grey > threshold_otsu(grey)).astype(np.uint8) * np.uint8(255))),
        (Group("threshold_2048_u8", f"Threshold at {FIXED}, {SIDE}×{SIDE}×3 uint8 photo", baseline="opencv"), rgb,
         lambda: imgproc.threshold(rgb, value=FIXED), fixed_jit,
         ("OpenCV cv2.threshold(THRESH_BINARY)", lambda: cv2.threshold(rgb, FIXED, 255, cv2.THRESH_BINARY)[1]),
         (f"NumPy (x > {FIXED}) * 255", "numpy", lambda: (rgb > FIXED).astype(np.uint8) * np.uint8(255))),
    )
    timed = []
    for group, x, eager, jitted, (cv_title, cv), (other_title, other_id, other) in plans:
        dev = jax.device_put(x)
        for result in (eager(), np.asarray(jitted(dev)), other()):  # the same pixels
            assert np.array_equal(result, cv()), group.id
        cases = [
            Case("imgproc_eager", "imgproc threshold (eager, NumPy in and out)", eager, megapixels=megapixels),
            Case("imgproc_jit", "imgproc threshold (jit, device array)", lambda j=jitted, d=dev: j(d),
                 megapixels=megapixels),
            Case("opencv", cv_title, cv, megapixels=megapixels),
            Case(other_id, other_title, other, megapixels=megapixels),
        ]
        timed.append((group, time_group(group.id, cases, repeats, settle=True)))  # settle: as morphology.py
        print_group(*timed[-1])
    return [group for group, _ in timed], [row for _, rows in timed for row in rows]


if __name__ == "__main__":
    run("--quick" in sys.argv)
