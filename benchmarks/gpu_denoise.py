"""Denoising on a GPU: the quality-and-speed table of benchmarks/denoise_quality.py for
imgproc's methods, and BM3D on a 12-megapixel photo (issue 12's GPU targets).

Run on a machine with an NVIDIA GPU (JAX's CUDA backend):

    python benchmarks/gpu_denoise.py --out gpu_denoise.md

1. **Quality and speed**: imgproc's methods on the same 256x256 crops and noises as
   ``denoise_quality.py`` (:func:`denoise_quality.quality_rows`), computed on the GPU;
   ms/MP per call with NumPy uint8 in and out (the upload and download included).
2. **Against the reference implementations**: ``denoise_quality.speed_rows``; imgproc on the
   GPU, OpenCV and scikit-image on that machine's CPU cores.
3. **BM3D, 12 MP**: ``chelsea.jpg`` resized to 4000x3000 (bicubic), Gaussian noise sigma 25,
   uint8 NumPy in and out, ``imgproc.bm3d(noisy, sigma=25, chunk_refs=N)`` for each N of
   ``--chunk-refs`` (``default``: imgproc's own choice): the first call (compilation included), the median of ``--repeats`` warm
   calls (``harness.time_group``, after one more warm-up call), and the PSNR against the
   clean photo.

Writes the markdown to ``--out`` and prints it.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
import traceback
from pathlib import Path

import numpy as np

from harness import Case, error_line, time_group

HERE = Path(__file__).resolve().parent


def bm3d_12mp(chunk_list, repeats, log):
    from PIL import Image

    import imgproc

    clean = np.asarray(Image.open(HERE.parent / "sample_images" / "chelsea.jpg").convert("RGB").resize((4000, 3000), Image.BICUBIC))
    rng = np.random.default_rng(0)
    noisy = np.clip(np.round(clean + 25 * rng.standard_normal(clean.shape, dtype=np.float32)), 0, 255).astype(np.uint8)
    lines = ["| chunk_refs | first call s | warm s (median) | PSNR dB (noisy: "
             f"{imgproc.psnr(clean, noisy):.2f}) |", "|---:|---:|---:|---:|"]
    for chunk in chunk_list:
        try:
            t = time.perf_counter()
            out = np.asarray(imgproc.bm3d(noisy, sigma=25.0, chunk_refs=chunk))  # None: the default
            first = time.perf_counter() - t
            warm = time_group("bm3d_12mp", [Case("bm3d", "bm3d", lambda chunk=chunk: np.asarray(
                imgproc.bm3d(noisy, sigma=25.0, chunk_refs=chunk)))], repeats)[0].seconds
            lines.append(f"| {chunk or 'default'} | {first:.2f} | {warm:.3f} | {imgproc.psnr(clean, out):.2f} |")
        except Exception as err:  # noqa: BLE001 - reported in the table, the run goes on
            log(traceback.format_exc())
            lines.append(f"| {chunk or 'default'} | {error_line(err, 150)} | | |")
        log(lines[-1])
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="gpu_denoise.md")
    parser.add_argument("--chunk-refs", default="default,1024,65536", help="'default': imgproc's choice")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--parts", default="bm3d,table,speed", help="which sections, in this order")
    parser.add_argument("--quick", action="store_true", help="two images; any backend")
    args = parser.parse_args()
    import jax

    import denoise_quality as dq

    if jax.default_backend() != "gpu" and not args.quick:
        raise SystemExit("benchmarks/gpu_denoise.py needs a GPU backend; found " + jax.default_backend())
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    out = Path(args.out)
    lines = [f"## Denoising on the GPU: {jax.devices()[0].device_kind} (`benchmarks/gpu_denoise.py`, "
             f"{datetime.date.today().isoformat()})", "", f"jax {jax.__version__}."]

    def save():
        out.write_text("\n".join(lines) + "\n")

    for part in args.parts.split(","):
        if part == "bm3d":
            lines += ["", "### BM3D on a 12-megapixel photo (4000x3000x3 uint8, noise σ = 25, NumPy in and out)", ""]
            lines += bm3d_12mp([None if c == "default" else int(c) for c in args.chunk_refs.split(",")], args.repeats, log)
        elif part == "table":
            data = dq.images(args.quick)
            cases = {name: dq.noisy_versions(clean, seed) for seed, (name, clean) in enumerate(data.items())}
            lines += ["", f"### Quality (PSNR dB / SSIM) and ms/MP, images {', '.join(data)} (256x256 crops); "
                      "NumPy uint8 in and out (the transfers included)", ""]
            lines += dq.quality_rows(data, cases, dq.methods(references=False), log)
        elif part == "speed":
            lines += ["", "### Against the reference implementations: imgproc on the GPU, OpenCV and scikit-image "
                      "on this machine's CPU cores"]
            lines += dq.speed_rows(args.quick)
        else:
            raise SystemExit(f"--parts: unknown section {part!r}; allowed: bm3d, table, speed")
        save()
        log(f"{part}: done")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
