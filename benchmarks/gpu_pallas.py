"""The fused Pallas kernel (``method="pallas"``) on a real GPU: parity, then tile sizes.

Run on a machine with an NVIDIA GPU (it needs the native Mosaic GPU lowering; off a GPU the
kernel is tested in interpret mode by tests/filters/test_pallas.py instead):

    python benchmarks/gpu_pallas.py --out pallas.json

1. **Parity**: ``imgproc.filters.pallas.correlate_fused`` compiled for the GPU against
   ``scipy.ndimage.correlate`` in float64 on the host, over tests/filters/test_pallas.py's tile
   cases (partial tiles, an image smaller than the kernel, 1, 3 and 4 channels, every
   boundary mode) on fresh random inputs; the largest absolute error of each.
2. **Tile sizes**: the Gaussian σ = 1 (5×5) and σ = 3 (25×25) on a 256×224×224×3 float32
   batch on the device, for each output tile (rows × values of the W·C axis) in
   ``--tiles``, against ``method="separable"`` and a copy (``x + 0``): median ms of
   ``--repeats`` rounds of ``--calls`` calls issued back to back and synchronised once.
   Each variant is checked against the separable result, then a sigma's variants are timed
   in turns (``harness.time_group``).

Prints a table and writes every number (and each failure's first line) as JSON to ``--out``;
the tile that is fastest at both sigmas is ``"best"`` there.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from harness import Case, error_line, time_group  # noqa: E402


def _reference(x, col, row, mode, cval):
    import scipy.ndimage as ndi

    k = np.outer(np.asarray(col, np.float64), np.asarray(row, np.float64))
    return np.stack([np.stack([ndi.correlate(im[..., c].astype(np.float64), k, mode=mode, cval=cval)
                               for c in range(x.shape[-1])], -1) for im in x])


def parity(rng, errors, small=False):
    import jax

    import imgproc
    from imgproc.filters import pallas as _pallas
    from test_pallas import TILE_CASES

    cases = TILE_CASES + [((2, 224, 224, 3), 1.0, "reflect"), ((2, 224, 224, 3), 3.0, "mirror"),
                          ((1, 97, 131, 3), 2.0, "constant")]
    cases = cases[:2] if small else cases
    out = []
    for shape, sigma, mode in cases:
        x = rng.random(shape, dtype=np.float32)
        col, row = imgproc.kernels.factor(imgproc.kernels.gaussian(sigma))[0]
        name = f"{shape} sigma={sigma} {mode}"
        try:
            f = jax.jit(lambda v, col=col, row=row, mode=mode: _pallas.correlate_fused(
                v, col, row, mode=mode, cval=0.25, interpret=not _pallas.runs_natively()))
            got = np.asarray(f(x))
            err = float(np.abs(got - _reference(x, col, row, mode, 0.25)).max())
            out.append({"case": name, "max_abs_error": err, "ok": bool(err <= 2e-6)})
        except Exception as e:  # noqa: BLE001 - reported, and the run goes on
            errors.append(f"parity {name}:\n{traceback.format_exc()}")
            out.append({"case": name, "error": error_line(e), "ok": False})
        print(out[-1], flush=True)
    return out


def tiles(rng, tile_list, calls, repeats, errors, batch=256):
    import jax

    import imgproc
    from imgproc.filters import pallas as _pallas

    x = jax.device_put(rng.random((batch, 224, 224, 3), dtype=np.float32))
    copy = jax.jit(lambda a: a + 0)
    ms = lambda cases: {r.name: r.ms for r in time_group("gpu_pallas", cases, repeats, calls=calls)}  # noqa: E731
    rows = [{"variant": "copy", "ms": ms([Case("copy", "copy", lambda: copy(x))])["copy"]}]
    default = (_pallas.TILE_ROWS, _pallas.TILE_COLS)
    for sigma, size in ((1.0, 5), (3.0, 25)):
        sep = jax.jit(lambda a, s=sigma, k=size: imgproc.gaussian_blur(a, s, size=k, method="separable"))
        ref = np.asarray(sep(x))
        cases = [Case("separable", "separable", lambda sep=sep: sep(x))]
        variants = [{"variant": "separable", "sigma": sigma}]
        for tr, tc in tile_list:
            # the tile is read when the program is traced: checked here, then timed in turns
            _pallas.TILE_ROWS, _pallas.TILE_COLS = tr, tc
            row = {"variant": f"pallas {tr}x{tc}", "sigma": sigma}
            try:
                row["tile"] = list(_pallas.tile_shape(size // 2, size // 2, 3))
                f = jax.jit(lambda a, s=sigma, k=size: imgproc.gaussian_blur(a, s, size=k, method="pallas"))
                t0 = time.perf_counter()
                got = np.asarray(f(x))
                row["compile_s"] = time.perf_counter() - t0
                row["max_abs_error_vs_separable"] = float(np.abs(got - ref).max())
                if row["max_abs_error_vs_separable"] > 1e-5:
                    row["error"] = "wrong result"
                else:
                    cases.append(Case(row["variant"], row["variant"], lambda f=f: f(x)))
            except Exception as e:  # noqa: BLE001 - reported, and the run goes on
                errors.append(f"tile {tr}x{tc} sigma={sigma}:\n{traceback.format_exc()}")
                row["error"] = error_line(e)
            finally:
                _pallas.TILE_ROWS, _pallas.TILE_COLS = default
            variants.append(row)
        timed = ms(cases)
        for row in variants:
            if row["variant"] in timed:
                row["ms"] = timed[row["variant"]]
            print(row, flush=True)
        rows += variants
    copy_ms = rows[0]["ms"]
    for r in rows:
        if "ms" in r:
            r["of_copy_bandwidth"] = copy_ms / r["ms"]
    timed = {}
    for r in rows:
        if r["variant"].startswith("pallas") and "ms" in r:
            timed.setdefault(r["variant"], {})[r["sigma"]] = r["ms"]
    both = {v: t for v, t in timed.items() if len(t) == 2}
    best = min(both, key=lambda v: sum(both[v][s] / min(t[s] for t in both.values()) for s in (1.0, 3.0))) if both else None
    return rows, best


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="pallas.json")
    parser.add_argument("--errors", default=None, help="file for the full tracebacks (default: beside --out)")
    parser.add_argument("--tiles", default="16x224,8x224,32x224,16x160,16x128,32x128,8x128",
                        help="output tiles to time, ROWSxCOLS,... (the first is the module's default)")
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--no-parity", action="store_true", help="the tile sweep alone")
    parser.add_argument("--any-backend", action="store_true",
                        help="run off a GPU too (interpret mode, seconds a call): checks the script itself")
    args = parser.parse_args()
    import jax

    if jax.default_backend() != "gpu" and not args.any_backend:
        raise SystemExit("benchmarks/gpu_pallas.py needs a GPU backend; found " + jax.default_backend())
    rng = np.random.default_rng(0)
    errors = []
    result = {"device": jax.devices()[0].device_kind, "jax": jax.__version__}
    result["parity"] = [] if args.no_parity else parity(rng, errors, small=args.any_backend)
    tile_list = [tuple(int(v) for v in t.split("x")) for t in args.tiles.split(",")]
    result["tiles"], result["best"] = tiles(rng, tile_list, args.calls, args.repeats, errors, args.batch)
    out = Path(args.out)
    out.write_text(json.dumps(result, indent=1))
    Path(args.errors or out.with_suffix(".errors.txt")).write_text("\n\n".join(errors))
    print("| variant | σ | ms | of copy | note |\n|---|---:|---:|---:|---|")
    for r in result["tiles"]:
        print(f"| {r['variant']} | {r.get('sigma', '')} | {r.get('ms', float('nan')):.3f} | "
              f"{r.get('of_copy_bandwidth', 0):.0%} | {r.get('error', '')} |")
    print("parity:", sum(p["ok"] for p in result["parity"]), "of", len(result["parity"]), "within 2e-6; best tile:",
          result["best"])


if __name__ == "__main__":
    main()
