"""How a call's time depends on how long the cores were idle before it: a 15×15 erosion of
2048×2048×3 uint8 (imgproc jitted on a device array, and OpenCV's cv2.erode), each call
after the calling thread has spun for a gap (the other core idle), median of ``--calls``.
Not part of `make bench`: it explains why the morphology rows move between runs on a
virtual machine (benchmarks/NOTES.md, "Why the 15×15 erosion reads 1.1× or 1.6× OpenCV").

    python benchmarks/idle_core.py [--calls 30]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

GAPS_MS = (0, 2, 10, 50)


def spin(seconds: float) -> None:
    """Keep the calling thread busy for ``seconds`` (a sleep would idle both cores)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def main(calls: int) -> None:
    import cv2
    import jax

    import imgproc

    cv2.setNumThreads(os.cpu_count() or 1)
    x = np.random.default_rng(0).integers(0, 256, (2048, 2048, 3), dtype=np.uint8)
    dev = jax.device_put(x)
    kernel = np.ones((15, 15), np.uint8)
    jitted = jax.jit(lambda a: imgproc.erosion(a, size=15, mode="nearest"))
    cases = {"imgproc erosion (jit, device array)": lambda: jitted(dev).block_until_ready(),
             "OpenCV cv2.erode": lambda: cv2.erode(x, kernel, borderType=cv2.BORDER_REPLICATE)}
    print("| gap before each call | " + " | ".join(cases) + " |")
    print("| ---: |" + " ---: |" * len(cases))
    for fn in cases.values():
        fn(), fn()
    for gap in GAPS_MS:
        medians = []
        for fn in cases.values():
            times = []
            for _ in range(calls):
                spin(gap / 1e3)
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            medians.append(f"{np.median(times) * 1e3:.2f} ms")
        print(f"| {gap} ms | " + " | ".join(medians) + " |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=30)
    main(parser.parse_args().calls)
