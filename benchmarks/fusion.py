"""Does fusing the denoise pipeline's two linear stages into one kernel pay on this backend?

Times, in turns (benchmarks/harness.py), on a 2048x2048x3 float32 image:
- the pipeline as it runs (Gaussian 5x5 separable, then the 5x5 sharpen, one XLA program);
- the combined 9x9 kernel (``kernels.combine``) as one direct 2-D pass (81 taps);
- the combined kernel as its two separable terms (``kernels.factor``: rank 2).
The combined forms are exact only away from the border (a border is handled once instead
of twice), so they are measured here to decide whether an exact fused path is worth
building (the result: benchmarks/NOTES.md, "Fusing linear stages").

    python benchmarks/fusion.py [--quick]    # --quick: 512x512, 2 rounds
"""

from __future__ import annotations

import argparse

import jax
import numpy as np

import imgproc
from harness import Case, Group, print_group, time_group
from imgproc import kernels


def run(quick: bool = False):
    """``(groups, rows)`` for the three forms (7 rounds; ``quick``: a 512x512 image, 2 rounds)."""
    side, repeats = (512, 2) if quick else (2048, 7)
    x = jax.device_put(np.random.default_rng(0).random((side, side, 3), dtype=np.float32))
    combined = kernels.combine(kernels.gaussian(1.0, size=5), kernels.sharpen())
    pipe = imgproc.presets.denoise()
    direct = jax.jit(lambda a: imgproc.correlate(a, combined, method="direct"))
    separable = jax.jit(lambda a: imgproc.correlate(a, combined, method="separable"))
    group = Group("fusion_denoise", f"Fusing the denoise pipeline, {side}x{side}x3 float32", baseline="pipeline")
    rows = time_group(group.id, [
        Case("pipeline", "pipeline: Gaussian (separable) then sharpen (direct)", lambda: pipe(x)),
        Case("combined_direct", "combined 9x9 kernel, direct (81 taps)", lambda: direct(x)),
        Case("combined_separable", "combined 9x9 kernel, 2 separable terms", lambda: separable(x)),
    ], repeats)
    print_group(group, rows)
    return [group], rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    run(parser.parse_args().quick)
