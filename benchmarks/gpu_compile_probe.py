"""The first call's compile of the blurs with weights computed in the program, and of a long
resize, on a GPU (benchmarks/NOTES.md, "GPU").

On an H200 (jax 0.11.2, 2026-11-30) the first eager ``random_gaussian_blur`` of a 2xSxSx3 uint8
batch took 0.6-1.3 s for S up to 256 and 33-45 s at S = 400 (over 75 s at 600): XLA:GPU
fused the Gaussian's weights (computed from the drawn sigma) into the passes as one Triton
kernel. Compiled for an H200 off the GPU (benchmarks/gpu_compile_offline.py with jax
0.11.2) the same program took 62-102 s, and 1.0-2.0 s once the convolution engine put
weights computed in the program behind an ``optimization_barrier``
(imgproc.filters.convolution.run_lowering). This probe checks that on a GPU: each case runs
in a process of its own under a time limit and prints its first call's time and a later
call's; ``--dump`` keeps XLA's optimised HLO of the first case at the first size (the
fusions it made) as ``optimised_CASE_S.txt``.

    python benchmarks/gpu_compile_probe.py --out OUT [--sizes 400,600] [--limit 60] [--dump]

Cases: the random blur (``random``); ``gaussian_blur`` with sigma a traced scalar
(``traced``); ``unsharp_mask`` with a traced sigma (``unsharp``: 57 s off the GPU before the
barrier); ``gaussian_gradient_magnitude`` with a traced sigma (``magnitude``: over 60 s);
with a concrete sigma and ``method="separable"`` (``concrete``: no weights computed in the
program, the baseline); ``resize_loop``: a resize to 7×13, whose taps are summed in a loop
off CPU (imgproc.augment.resample), timed and compared bit for bit with the same taps
unrolled (give it sizes of 600 or less: unrolled, 1200 took 25 s to compile). Off a GPU it
runs the same cases (a dry run)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

CASES = ("random", "traced", "unsharp", "magnitude", "concrete", "resize_loop")

CHILD = r"""
import sys, time
import numpy as np, jax, jax.numpy as jnp, imgproc
case, s = sys.argv[1], int(sys.argv[2])
x = jnp.asarray(np.random.default_rng(1).integers(0, 256, (2, s, s, 3)).astype(np.uint8))
key = jax.random.key(0)
first, extra = None, ""
if case == "unsharp":
    f = jax.jit(lambda v, sigma: imgproc.unsharp_mask(v, sigma=sigma, size=17, layout="NHWC"))
    call = lambda: f(x, jnp.float32(1.3))
elif case == "magnitude":
    f = jax.jit(lambda v, sigma: imgproc.gaussian_gradient_magnitude(v, sigma, size=17, layout="NHWC"))
    call = lambda: f(x, jnp.float32(1.3))
elif case == "random":
    call = lambda: imgproc.random_gaussian_blur(key, x)
elif case == "resize_loop":  # a long shrink: its taps in a loop off CPU, against them unrolled
    from imgproc.augment import resample
    f = jax.jit(lambda v: imgproc.resize(v, (7, 13)))
    call = lambda: f(x)
    unrolled_limit = resample.UNROLLED_MAX_TAPS
    t = time.perf_counter(); looped = jax.block_until_ready(call()); first = time.perf_counter() - t
    resample.UNROLLED_MAX_TAPS = 1 << 30
    g = jax.jit(lambda v: imgproc.resize(v, (7, 13)))
    t = time.perf_counter(); unrolled = jax.block_until_ready(g(x)); first_unrolled = time.perf_counter() - t
    resample.UNROLLED_MAX_TAPS = unrolled_limit
    same = bool(np.array_equal(np.asarray(looped), np.asarray(unrolled)))
    extra = f"; unrolled: first call {first_unrolled:.2f} s, the same bits: {same}"
elif case == "traced":
    f = jax.jit(lambda v, sigma: imgproc.gaussian_blur(v, sigma, size=17, layout="NHWC"))
    call = lambda: f(x, jnp.float32(1.3))
else:
    f = jax.jit(lambda v: imgproc.gaussian_blur(v, 2.0, method="separable", layout="NHWC"))
    call = lambda: f(x)
if first is None:
    t = time.perf_counter(); jax.block_until_ready(call()); first = time.perf_counter() - t
t = time.perf_counter(); jax.block_until_ready(call()); again = time.perf_counter() - t
print(f"{case} {s}: first call {first:.2f} s, then {again * 1e3:.2f} ms on {jax.default_backend()}{extra}", flush=True)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for the log (and the HLO with --dump)")
    ap.add_argument("--sizes", default="400,600", help="image sides S, comma-separated")
    ap.add_argument("--cases", default=",".join(CASES), help=f"some of {', '.join(CASES)}")
    ap.add_argument("--limit", type=float, default=60.0, help="seconds each process may take")
    ap.add_argument("--dump", action="store_true", help="keep XLA's optimised HLO of the first case and size")
    args = ap.parse_args()
    cases = args.cases.split(",")
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        ap.error(f"--cases: {', '.join(unknown)} unknown; choose from {', '.join(CASES)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    lines = []
    for i, case in enumerate(cases):
        for j, s in enumerate(sizes):
            env = dict(os.environ, PYTHONUNBUFFERED="1", XLA_PYTHON_CLIENT_PREALLOCATE="false")
            if args.dump and i == 0 and j == 0:
                env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + f" --xla_dump_to={out / 'hlo'} --xla_dump_hlo_as_text"
                                    " --xla_dump_hlo_module_re=.*with_numbers.*").strip()
            start = time.perf_counter()
            try:
                run = subprocess.run([sys.executable, "-c", CHILD, case, str(s)], env=env, capture_output=True,
                                     text=True, timeout=args.limit)
                said = run.stdout.strip().splitlines()[-1:] or [f"{case} {s}: exit {run.returncode}: "
                                                                 + (run.stderr.strip().splitlines() or [""])[-1]]
                line = said[0]
            except subprocess.TimeoutExpired:
                line = f"{case} {s}: no result within {args.limit:.0f} s"
            line += f" (process {time.perf_counter() - start:.1f} s)"
            if "XLA_FLAGS" in env and (out / "hlo").exists():  # the optimised program, one file
                for f in sorted((out / "hlo").glob("*with_numbers*after_optimizations.txt")):
                    (out / f"optimised_{case}_{s}.txt").write_bytes(f.read_bytes())
                shutil.rmtree(out / "hlo")
            print(line, flush=True)
            lines.append(line)
    (out / "compile_probe.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
