"""Ray Data against the plain command line on one machine (issue 14, item 6):
``imgproc denoise IN OUT --method chapter``, the same split into two processes with
``--num-shards 2``, and with ``--engine ray`` (a new process each, the whole job: Ray's
start-up and the shutdown of its local cluster included)
on a folder of generated photos (the cat photo resized, with noise, as in
``benchmarks/folder.py``). Timed with benchmarks/harness.py: a warm-up job of each on
16 of the images (it fills imgproc's compilation cache), then the jobs on all of them in
turns; the outputs of the plain and the Ray run are checked to be the same bytes.

    python benchmarks/ray_folder.py [--n 1000] [--size 1920x1080] [--repeats 1]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from harness import Case, Group, print_group, time_group

WARM_UP = 16  # images of the warm-up job (fills imgproc's compilation cache, starts nothing else)


def make_inputs(folder: Path, n: int, w: int, h: int):
    import cv2
    from skimage import data

    base = cv2.resize(data.chelsea(), (w, h), interpolation=cv2.INTER_CUBIC)
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        img = np.clip(base.astype(np.int16) + rng.integers(-12, 12, base.shape, dtype=np.int16), 0, 255).astype(np.uint8)
        cv2.imwrite(str(folder / f"img{i:04d}.jpg"), img[:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, 90])


def run(n: int, w: int, h: int, repeats: int):
    tmp = Path(tempfile.mkdtemp(prefix="imgproc-ray-bench-"))
    try:
        src, warm = tmp / "in", tmp / "warm"
        make_inputs(src, n, w, h)
        warm.mkdir()
        for p in sorted(src.iterdir())[:WARM_UP]:
            os.link(p, warm / p.name)
        exe = os.path.join(os.path.dirname(sys.executable), "imgproc")
        calls = {}

        def folder(name):
            """The harness's warm-up call (each case's first) runs on WARM_UP of the images."""
            calls[name] = calls.get(name, 0) + 1
            return warm if calls[name] == 1 else src

        def job(out, *extra):
            def go():
                r = subprocess.run([exe, "denoise", str(folder(out)), str(tmp / out), "--method", "chapter", "-q",
                                    "--overwrite", *extra], capture_output=True, text=True)
                assert r.returncode == 0, r.stderr
            return go

        def shards(k):
            def go():
                inp = folder("shards")
                procs = [subprocess.Popen([exe, "denoise", str(inp), str(tmp / "out-shards"), "--method", "chapter", "-q",
                                           "--overwrite", "--num-shards", str(k), "--shard-index", str(i)],
                                          stderr=subprocess.PIPE, text=True) for i in range(k)]
                for p in procs:
                    _, err = p.communicate()
                    assert p.returncode == 0, err
            return go

        group = Group("ray_folder", f"Folder of {n} JPEGs {w}x{h}: denoise --method chapter, whole job", baseline="cli")
        rows = time_group(group.id, [
            Case("cli", "imgproc denoise (threads in one process)", job("out-cli"), images=n),
            Case("shards2", "imgproc denoise --num-shards 2 (two processes at once)", shards(2), images=n),
            Case("ray", "imgproc denoise --engine ray (local Ray cluster, start-up included)", job("out-ray", "--engine", "ray"),
                 images=n),
        ], repeats=repeats)
        print_group(group, rows)
        a, b = sorted((tmp / "out-cli").iterdir()), sorted((tmp / "out-ray").iterdir())
        same = [x.name for x in a] == [y.name for y in b] and all(x.read_bytes() == y.read_bytes() for x, y in zip(a, b))
        print(f"\nsame output bytes: {same} ({len(a)} files)")
        ratio = rows[2].seconds / rows[0].seconds
        print(f"ray / cli wall time: {ratio:.2f}x (target <= 1.3x)")
        return rows, same
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    w, h = map(int, args.size.lower().split("x"))
    run(args.n, w, h, args.repeats)


if __name__ == "__main__":
    main()
