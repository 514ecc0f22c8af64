"""Does fusing the denoise pipeline's two linear stages into one kernel pay on this backend?

Times, in one run, on a 2048x2048x3 float32 image:
- the pipeline as it runs (Gaussian 5x5 separable, then the 5x5 sharpen, one XLA program);
- the combined 9x9 kernel (``kernels.combine``) as one direct 2-D pass (81 taps);
- the combined kernel as its two separable terms (``kernels.factor``: rank 2).
The combined forms are exact only away from the border (a border is handled once instead
of twice), so they are measured here to decide whether an exact fused path is worth
building; `python benchmarks/fusion.py` prints the table.
"""

from __future__ import annotations

import jax
import numpy as np

import imgproc
from imgproc import kernels

from run import _block, measure


def run(repeats=7) -> list[dict]:
    x = jax.device_put(np.random.default_rng(0).random((2048, 2048, 3), dtype=np.float32))
    combined = kernels.combine(kernels.gaussian(1.0, size=5), kernels.sharpen())
    pipe = imgproc.presets.denoise()
    cases = {
        "pipeline: Gaussian (separable) then sharpen (direct)": lambda: _block(pipe(x)),
        "combined 9x9 kernel, direct (81 taps)": jax.jit(lambda a: imgproc.correlate(a, combined, method="direct")),
        "combined 9x9 kernel, 2 separable terms": jax.jit(lambda a: imgproc.correlate(a, combined, method="separable")),
    }
    rows = []
    for name, fn in cases.items():
        call = fn if name.startswith("pipeline") else (lambda f=fn: _block(f(x)))
        ms, busy = measure(call, repeats)
        rows.append({"group": "Fusing the denoise pipeline, 2048x2048x3 float32", "name": name, "ms": ms * 1e3, "cores": busy})
    base = rows[0]["ms"]
    for r in rows:
        r["vs"], r["baseline"] = r["ms"] / base, "the pipeline"
    return rows


if __name__ == "__main__":
    for r in run():
        print(f"{r['name']:<55} {r['ms']:8.1f} ms  {r['vs']:.2f}x  cores {r['cores']:.2f}")
