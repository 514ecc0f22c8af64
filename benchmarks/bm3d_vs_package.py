"""imgproc's BM3D against the ``bm3d`` package (PyPI): PSNR and time per image.

    python benchmarks/bm3d_vs_package.py [--size 256] [--sigmas 15,25,50] [--images camera,astronaut,coffee]
        [--repeat 3] [--colour] [--option step=4]

Grey crops (size x size, from the image centre-left; colour images averaged to grey, or RGB
crops against ``bm3d.bm3d_rgb`` with ``--colour``) of
scikit-image's bundled images, Gaussian noise of the given sigmas (0..255 scale, seed 0),
denoised as [0, 1] float32 by ``bm3d.bm3d(noisy, sigma_psd=sigma / 255)`` (profile 'np') and by
``imgproc.restoration.block_matching.bm3d(noisy, sigma=sigma / 255)``. Times: best of ``--repeat`` runs after one
warm-up (ours compiles once per shape), wall clock and process CPU time (the machine may be
shared; CPU time is the steadier figure). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import ast
import time

import numpy as np


def _crop(name, size, colour=False):
    from skimage import data

    img = getattr(data, name)()
    if img.ndim == 3 and not colour:
        img = img[..., :3].mean(-1).round()
    elif img.ndim == 3:
        img = img[..., :3]
    h, w = img.shape[:2]
    y, x = max(0, (h - size) // 2), max(0, (w - size) // 4)
    return (img[y:y + size, x:x + size] / 255.0).astype(np.float32)


def _timed(fn, repeat):
    fn()
    walls, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return out, min(walls), min(cpus)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--sigmas", default="15,25,50")
    parser.add_argument("--images", default="camera,astronaut,coffee")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--package-repeat", type=int, default=1)
    parser.add_argument("--colour", action="store_true", help="RGB crops, against bm3d.bm3d_rgb")
    parser.add_argument("--option", action="append", default=[], help="NAME=VALUE passed to imgproc's bm3d")
    args = parser.parse_args(argv)

    import bm3d as package
    from skimage.metrics import peak_signal_noise_ratio as psnr

    from imgproc.restoration.block_matching import bm3d

    options = {k: ast.literal_eval(v) for k, v in (o.split("=", 1) for o in args.option)}
    kind = "RGB" if args.colour else "grey"
    print(f"options: {options or 'defaults'}; {args.size}x{args.size} {kind} crops\n")
    print("| image | sigma | PSNR noisy | PSNR package | PSNR ours | diff | package wall / CPU s "
          "| ours wall / CPU ms | CPU ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.images.split(","):
        clean = _crop(name, args.size, args.colour)
        rng = np.random.default_rng(0)
        for sigma in (float(s) for s in args.sigmas.split(",")):
            noisy = clean + rng.standard_normal(clean.shape).astype(np.float32) * sigma / 255
            pkg = package.bm3d_rgb if args.colour else package.bm3d
            ref, pw, pc = _timed(lambda: pkg(noisy, sigma / 255), args.package_repeat)
            ours, ow, oc = _timed(lambda: np.asarray(bm3d(noisy, sigma=sigma / 255, **options)), args.repeat)
            p0 = psnr(clean, np.clip(noisy, 0, 1), data_range=1)
            p1 = psnr(clean, np.clip(ref, 0, 1), data_range=1)
            p2 = psnr(clean, np.clip(ours, 0, 1), data_range=1)
            print(f"| {name} | {sigma:g} | {p0:.2f} | {p1:.3f} | {p2:.3f} | {p2 - p1:+.3f} | "
                  f"{pw:.2f} / {pc:.2f} | {ow * 1e3:.0f} / {oc * 1e3:.0f} | {pc / oc:.1f}x |", flush=True)


if __name__ == "__main__":
    main()
