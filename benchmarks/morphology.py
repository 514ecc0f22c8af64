"""Morphology on 2048x2048x3 uint8: imgproc's erosion and opening with a 5x5 and a 15x15
square against OpenCV (cv2.erode, cv2.morphologyEx) and scipy.ndimage (grey_erosion,
grey_opening with size (k, k, 1)), all with the edge pixel repeated (mode="nearest",
BORDER_REPLICATE, the same pixels). Part of `make bench` (`--only morphology`); alone:
`python benchmarks/morphology.py [--quick]`."""

from __future__ import annotations

import os
import sys

import numpy as np

from harness import Case, Group, print_group, time_group

SIZES = (5, 15)


def run(quick: bool = False):
    import cv2
    import jax
    import scipy.ndimage as ndi

    import imgproc

    cv2.setNumThreads(os.cpu_count() or 1)
    x = np.random.default_rng(0).integers(0, 256, (2048, 2048, 3), dtype=np.uint8)
    dev = jax.device_put(x)
    repeats = 3 if quick else 11
    groups, rows = [], []
    for k in SIZES:
        kernel = np.ones((k, k), np.uint8)
        jitted = {op: jax.jit(lambda a, op=op: getattr(imgproc, op)(a, size=k, mode="nearest"))
                  for op in ("erosion", "opening")}
        for op, cv, sp in (("erosion", lambda: cv2.erode(x, kernel, borderType=cv2.BORDER_REPLICATE),
                            lambda: ndi.grey_erosion(x, size=(k, k, 1), mode="nearest")),
                           ("opening", lambda: cv2.morphologyEx(x, cv2.MORPH_OPEN, kernel,
                                                                borderType=cv2.BORDER_REPLICATE),
                            lambda: ndi.grey_opening(x, size=(k, k, 1), mode="nearest"))):
            assert np.array_equal(getattr(imgproc, op)(x, size=k, mode="nearest"), cv())  # the same pixels
            group = Group(f"{op}{k}_2048_u8", f"{op.capitalize()}, {k}×{k} square, 2048×2048×3 uint8, edge repeated",
                          baseline="opencv")
            cases = [
                Case("imgproc_eager", f"imgproc {op} (eager, NumPy in and out)",
                     lambda op=op: getattr(imgproc, op)(x, size=k, mode="nearest"), megapixels=4.19),
                Case("imgproc_jit", f"imgproc {op} (jit, device array)", lambda op=op: jitted[op](dev),
                     megapixels=4.19),
                Case("opencv", "OpenCV " + ("cv2.erode" if op == "erosion" else "cv2.morphologyEx(MORPH_OPEN)"), cv,
                     megapixels=4.19),
                Case("scipy", f"scipy.ndimage.grey_{op}", sp, megapixels=4.19),
            ]
            # each sample after an untimed call of its own case, as augment.py's: what the case
            # before leaves behind (freed memory, busy threads) is not paid for here
            new = time_group(group.id, cases, repeats, settle=True)
            print_group(group, new)
            groups.append(group)
            rows.extend(new)
    return groups, rows


if __name__ == "__main__":
    run("--quick" in sys.argv)
