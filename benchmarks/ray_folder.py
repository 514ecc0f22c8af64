"""Ray Data against the plain command line on one machine (issue 14, item 6):
``imgproc denoise IN OUT --method chapter``, the same split into two processes with
``--num-shards 2``, and with ``--engine ray`` (a new process each, the whole job: Ray's
start-up and the shutdown of its local cluster included)
on a folder of generated photos (the cat photo resized, with noise, as in
``benchmarks/folder.py``). Timed with benchmarks/harness.py: a warm-up job of each on
16 of the images (it fills imgproc's compilation cache), then the jobs on all of them in
turns; the outputs of the plain and the Ray run are checked to be the same bytes.

    python benchmarks/ray_folder.py [--n 1000] [--size 1920x1080] [--repeats 1] [--engines cli,shards2,ray,ray_nice0]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


from folder import make_inputs  # the same generated photos as the folder benchmark
from harness import Case, Group, print_group, time_group

WARM_UP = 16  # images of the warm-up job (fills imgproc's compilation cache, starts nothing else)


def run(n: int, w: int, h: int, repeats: int, engines=("cli", "shards2", "ray", "ray_nice0")):
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

        def job(out, *extra, env=None):
            def go():
                r = subprocess.run([exe, "denoise", str(folder(out)), str(tmp / out), "--method", "chapter", "-q",
                                    "--overwrite", *extra], capture_output=True, text=True,
                                   env=None if env is None else {**os.environ, **env})
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
        cases = {
            "cli": Case("cli", "imgproc denoise (threads in one process)", job("out-cli"), images=n),
            "shards2": Case("shards2", "imgproc denoise --num-shards 2 (two processes at once)", shards(2), images=n),
            "ray": Case("ray", "imgproc denoise --engine ray (local Ray cluster, start-up included)",
                        job("out-ray", "--engine", "ray"), images=n),
            # Ray starts its workers at nice 15 (RAY_worker_niceness): on a machine shared with
            # other users' processes at nice 0 they get less CPU than the plain command does
            "ray_nice0": Case("ray_nice0", "imgproc denoise --engine ray, Ray workers at nice 0 (RAY_worker_niceness=0)",
                              job("out-ray0", "--engine", "ray", env={"RAY_worker_niceness": "0"}), images=n),
        }
        rows = time_group(group.id, [cases[c] for c in engines], repeats=repeats)
        print_group(group, rows)
        a = sorted((tmp / "out-cli").iterdir())
        for out in ("out-ray", "out-ray0"):
            if (tmp / out).exists():
                b = sorted((tmp / out).iterdir())
                same = [x.name for x in a] == [y.name for y in b] and all(x.read_bytes() == y.read_bytes() for x, y in zip(a, b))
                print(f"\n{out}: same output bytes as the plain run: {same} ({len(b)} files)")
        for r in rows[1:]:
            print(f"{r.name} / cli wall time: {r.seconds / rows[0].seconds:.2f}x (target for ray: <= 1.3x)")
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--engines", default="cli,shards2,ray,ray_nice0",
                        help="comma-separated: cli (always first, the baseline), shards2, ray, ray_nice0")
    args = parser.parse_args()
    w, h = map(int, args.size.lower().split("x"))
    engines = ["cli"] + [e for e in args.engines.split(",") if e and e != "cli"]
    run(args.n, w, h, args.repeats, engines)


if __name__ == "__main__":
    main()
