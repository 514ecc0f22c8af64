"""Folder throughput: ``imgproc denoise IN OUT`` on 200 JPEGs of 1920x1080 against a plain
OpenCV script doing the same work (decode, 5x5 Gaussian sigma 1, 5x5 sharpen, encode at
quality 95, in a thread pool). Images are generated (a photo resized with noise).

    python benchmarks/folder.py            # prints a table; run() returns the rows
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

N, W, H = 200, 1920, 1080


def make_inputs(folder: Path, n=N):
    import cv2
    from skimage import data

    base = cv2.resize(data.chelsea(), (W, H), interpolation=cv2.INTER_CUBIC)
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        img = np.clip(base.astype(np.int16) + rng.integers(-12, 12, base.shape, dtype=np.int16), 0, 255).astype(np.uint8)
        cv2.imwrite(str(folder / f"img{i:03d}.jpg"), img[:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, 90])


def opencv_script(src: Path, dst: Path, workers: int):
    import cv2

    sharpen = -np.ones((5, 5), np.float32)
    sharpen[2, 2] = 50
    sharpen /= sharpen.sum()
    dst.mkdir(parents=True, exist_ok=True)

    def one(p):
        img = cv2.imread(str(p), cv2.IMREAD_COLOR)
        img = cv2.GaussianBlur(img.astype(np.float32), (5, 5), 1.0, borderType=cv2.BORDER_REFLECT)
        img = cv2.filter2D(img, -1, sharpen, borderType=cv2.BORDER_REFLECT)
        cv2.imwrite(str(dst / p.name), np.clip(np.rint(img), 0, 255).astype(np.uint8), [cv2.IMWRITE_JPEG_QUALITY, 95])

    with cf.ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, sorted(src.iterdir())))


def run(n=N) -> list[dict]:
    tmp = Path(tempfile.mkdtemp(prefix="imgproc-folder-bench-"))
    try:
        src = tmp / "in"
        make_inputs(src, n)
        rows = []
        exe = os.path.join(os.path.dirname(sys.executable), "imgproc")
        for label, extra in [("imgproc denoise (CLI, whole process)", [])]:
            out = tmp / "out-imgproc"
            t = time.perf_counter()
            r = subprocess.run([exe, "denoise", str(src), str(out), "-q"], capture_output=True, text=True)
            elapsed = time.perf_counter() - t
            assert r.returncode == 0, r.stderr
            rows.append({"name": label, "images": n, "seconds": round(elapsed, 2), "images_per_s": round(n / elapsed, 1)})
        workers = min(8, (os.cpu_count() or 2) + 2)
        t = time.perf_counter()
        opencv_script(src, tmp / "out-cv", workers)
        elapsed = time.perf_counter() - t
        rows.append({"name": f"OpenCV script ({workers} threads)", "images": n, "seconds": round(elapsed, 2),
                     "images_per_s": round(n / elapsed, 1)})
        for r in rows:  # for benchmarks/run.py's RESULTS.md
            r["group"] = f"Folder of {n} JPEGs {W}x{H}: denoise, whole job (ms per image)"
            r["name"] = f"{r['name']}: {r['images_per_s']:.1f} images/s"
            r["ms"] = r["seconds"] * 1e3 / n
            r["vs"], r["baseline"] = r["seconds"] / rows[-1]["seconds"], "OpenCV script"
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    rows = run(int(sys.argv[1]) if len(sys.argv) > 1 else N)
    print(f"{'':40s} {'images':>7s} {'s':>8s} {'images/s':>9s}")
    for r in rows:
        print(f"{r['name']:40s} {r['images']:7d} {r['seconds']:8.2f} {r['images_per_s']:9.1f}")
