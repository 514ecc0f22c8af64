"""Folder throughput: ``imgproc denoise IN OUT`` on 200 JPEGs of 1920x1080 (a new process,
the whole job) against a plain OpenCV script doing the same work (decode, 5x5 Gaussian
sigma 1, 5x5 sharpen, encode at quality 95, in a thread pool). Images are generated (a
photo resized with noise). Timed with benchmarks/harness.py: a warm-up job of each (it
fills imgproc's compilation cache), then the jobs in turns.

    python benchmarks/folder.py [--quick]    # --quick: 20 images
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from harness import Case, Group, command_env, print_group, time_group

N, W, H = 200, 1920, 1080


def make_inputs(folder: Path, n=N, w=W, h=H):
    """``n`` noisy JPEGs of ``w``x``h`` (the cat resized, uniform noise of ±12, quality 90)."""
    import cv2
    from skimage import data

    base = cv2.resize(data.chelsea(), (w, h), interpolation=cv2.INTER_CUBIC)
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        img = np.clip(base.astype(np.int16) + rng.integers(-12, 12, base.shape, dtype=np.int16), 0, 255).astype(np.uint8)
        cv2.imwrite(str(folder / f"img{i:04d}.jpg"), img[:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, 90])


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


def run(quick: bool = False):
    """``(groups, rows)``: one timed job each (after a warm-up job), on 200 images (``quick``: 20)."""
    n = 20 if quick else N
    tmp = Path(tempfile.mkdtemp(prefix="imgproc-folder-bench-"))
    try:
        src = tmp / "in"
        make_inputs(src, n)
        exe = os.path.join(os.path.dirname(sys.executable), "imgproc")

        def imgproc_job():
            r = subprocess.run([exe, "denoise", str(src), str(tmp / "out-imgproc"), "--method", "chapter", "-q", "--overwrite"],
                               capture_output=True, text=True, env=command_env())
            assert r.returncode == 0, r.stderr

        workers = min(8, (os.cpu_count() or 2) + 2)
        group = Group("folder_denoise", f"Folder of {n} JPEGs {W}x{H}: denoise, whole job", baseline="opencv_script")
        rows = time_group(group.id, [
            Case("imgproc_cli", "imgproc denoise --method chapter (CLI, whole process)", imgproc_job, images=n),
            Case("opencv_script", f"OpenCV script ({workers} threads)",
                 lambda: opencv_script(src, tmp / "out-cv", workers), images=n),
        ], repeats=1)
        print_group(group, rows)
        return [group], rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    run(parser.parse_args().quick)
