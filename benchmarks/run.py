"""`make bench`: the same work timed in one run for imgproc and the other libraries.

Prints a table of medians and ratios and writes benchmarks/RESULTS.md with the machine,
library versions and date. Every number in RESULTS.md comes from this script.

    python benchmarks/run.py            # everything
    python benchmarks/run.py --quick    # fewer repeats, smaller command test
    python benchmarks/run.py --only gaussian,box
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(fn, repeats: int):
    """Median wall seconds of ``fn()`` and the cores it kept busy (CPU time / wall time),
    after a warm-up call."""
    return measure_round_robin([fn], repeats)[0]


def measure_round_robin(fns, repeats: int):
    """``[(median wall seconds, cores busy)]`` for each of ``fns``, timed in turns (one call
    of each per round, after a warm-up call of each), so that a change in the machine's
    load during the group hits every implementation alike: on this shared 2-core machine
    OpenCV's 5-tap blur measured 8.8-17.5 ms in back-to-back runs of whole groups."""
    for fn in fns:
        fn()
    walls = [[] for _ in fns]
    cpus = [0.0 for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            c, t = cpu_seconds(), time.perf_counter()
            fn()
            walls[i].append(time.perf_counter() - t)
            cpus[i] += cpu_seconds() - c
    return [(statistics.median(w), cpu / max(sum(w), 1e-9)) for w, cpu in zip(walls, cpus)]


def _block(x):
    if hasattr(x, "block_until_ready"):
        x.block_until_ready()
    return x


def versions() -> dict:
    out = {}
    for name in ("imgproc-jax", "jax", "jaxlib", "numpy", "scipy", "opencv-python-headless", "dm-pix", "pillow",
                 "albumentations", "augmax", "torch", "torchvision"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


# --------------------------------------------------------------------------- filters


def filter_benchmarks(repeats: int, *, title_prefix: str = ""):
    """The filter groups; with ``title_prefix`` (the ``reuse_host_memory()`` process) their
    titles carry it and only imgproc and OpenCV are timed."""
    import cv2
    import dm_pix
    import jax
    import scipy.ndimage as ndi
    import scipy.signal
    from PIL import Image, ImageFilter

    import imgproc
    from imgproc import kernels

    cv2.setNumThreads(os.cpu_count() or 1)
    rng = np.random.default_rng(0)
    img = rng.random((2048, 2048, 3), dtype=np.float32)
    dev = jax.device_put(img)
    u8 = Image.fromarray((img * 255).astype(np.uint8))

    def chapter(image, kernel):  # the seed chapter's NumPy code (convolve2d per channel)
        return np.stack([scipy.signal.convolve2d(image[:, :, i], kernel, mode="same") for i in range(3)], axis=2)

    rows = []
    for sigma, size in ((1.0, 5), (3.0, 25)):
        title = f"Gaussian sigma={sigma:g} ({size}x{size}), 2048x2048x3 float32"
        imgproc_fn = jax.jit(lambda x, s=sigma, k=size: imgproc.gaussian_blur(x, s, size=k))
        pix_fn = jax.jit(lambda x, s=sigma, k=size: dm_pix.gaussian_blur(x, s, k))
        g2 = kernels.gaussian(sigma, size=size)
        cases = [
            ("imgproc gaussian_blur (jit)", lambda: _block(imgproc_fn(dev))),
            ("OpenCV cv2.GaussianBlur", lambda: cv2.GaussianBlur(img, (size, size), sigma, borderType=cv2.BORDER_REFLECT)),
            ("scipy.ndimage.gaussian_filter", lambda: ndi.gaussian_filter(img, (sigma, sigma, 0), truncate=(size // 2) / sigma)),
            ("dm-pix gaussian_blur (jit)", lambda: _block(pix_fn(dev))),
            ("Pillow GaussianBlur (uint8)", lambda: u8.filter(ImageFilter.GaussianBlur(sigma))),
        ]
        if size <= 5 or repeats > 3:
            cases.append(("seed chapter NumPy convolve2d", lambda: chapter(img, g2)))
        rows += run_group(title, cases, repeats, baseline="OpenCV cv2.GaussianBlur", title_prefix=title_prefix)

    box_fn = jax.jit(lambda x: imgproc.box_blur(x, 5))
    rows += run_group(
        "Box 5x5, 2048x2048x3 float32",
        [
            ("imgproc box_blur (jit)", lambda: _block(box_fn(dev))),
            ("OpenCV cv2.blur", lambda: cv2.blur(img, (5, 5), borderType=cv2.BORDER_REFLECT)),
            ("scipy.ndimage.uniform_filter", lambda: ndi.uniform_filter(img, (5, 5, 1))),
            ("Pillow BoxBlur (uint8)", lambda: u8.filter(ImageFilter.BoxBlur(2))),
            ("seed chapter NumPy convolve2d", lambda: chapter(img, kernels.box(5))),
        ],
        repeats,
        baseline="OpenCV cv2.blur",
        title_prefix=title_prefix,
    )

    denoise = imgproc.presets.denoise()
    g5, sh = kernels.gaussian(1.0, size=5), kernels.sharpen()
    rows += run_group(
        "Denoise pipeline (Gaussian 5x5 + sharpen 5x5), 2048x2048x3 float32",
        [
            ("imgproc presets.denoise", lambda: _block(denoise(dev))),
            ("OpenCV GaussianBlur + filter2D", lambda: cv2.filter2D(
                cv2.GaussianBlur(img, (5, 5), 1.0, borderType=cv2.BORDER_REFLECT), -1, sh, borderType=cv2.BORDER_REFLECT)),
            ("scipy.ndimage gaussian_filter + correlate", lambda: ndi.correlate(
                ndi.gaussian_filter(img, (1, 1, 0), truncate=2.0), sh[:, :, None])),
            ("seed chapter NumPy convolve2d", lambda: chapter(chapter(img, g5), sh)),
        ],
        repeats,
        baseline="OpenCV GaussianBlur + filter2D",
        title_prefix=title_prefix,
    )

    batch = rng.random((128, 224, 224, 3), dtype=np.float32)
    bdev = jax.device_put(batch)
    batch_fn = jax.jit(lambda x: imgproc.gaussian_blur(x, 1.0, size=5))
    pix_batch = jax.jit(jax.vmap(lambda x: dm_pix.gaussian_blur(x, 1.0, 5)))
    rows += run_group(
        "Gaussian sigma=1 5x5 on a batch of 128 images 224x224x3 float32",
        [
            ("imgproc gaussian_blur (jit, NHWC batch)", lambda: _block(batch_fn(bdev))),
            ("OpenCV cv2.GaussianBlur, loop", lambda: [cv2.GaussianBlur(b, (5, 5), 1.0, borderType=cv2.BORDER_REFLECT) for b in batch]),
            ("scipy.ndimage.gaussian_filter", lambda: ndi.gaussian_filter(batch, (0, 1, 1, 0), truncate=2.0)),
            ("dm-pix gaussian_blur (jit+vmap)", lambda: _block(pix_batch(bdev))),
        ],
        repeats,
        baseline="OpenCV cv2.GaussianBlur, loop",
        title_prefix=title_prefix,
    )
    return rows


def run_group(title, cases, repeats, baseline, *, title_prefix=""):
    title = title_prefix + title
    if title_prefix:  # the reuse_host_memory() run: imgproc and the baseline only
        cases = [(n, f) for n, f in cases if n.startswith(("imgproc", "OpenCV"))]
    print(f"\n{title}")
    results = [{"group": title, "name": name, "ms": median * 1e3, "cores": busy}
               for (name, _), (median, busy) in zip(cases, measure_round_robin([f for _, f in cases], repeats))]
    base = next(r["ms"] for r in results if r["name"] == baseline)
    for r in results:
        r["vs"] = r["ms"] / base
        r["baseline"] = baseline
        print(f"  {r['name']:<45} {r['ms']:9.1f} ms  {r['vs']:7.2f}x {baseline.split()[0]}  cores busy {r['cores']:.2f}")
    return results


REUSE_PREFIX = "With imgproc.reuse_host_memory() in the process: "


def reuse_host_memory_rows(quick: bool):
    """The filter groups again (imgproc and OpenCV only) in a second process that calls
    :func:`imgproc.reuse_host_memory` first, so freed image buffers are reused instead of
    being zeroed afresh by the kernel; it applies to every library in that process."""
    import json

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--reuse-host-memory-json", str(out)]
        subprocess.run(cmd + (["--quick"] if quick else []), check=True)
        return json.loads(out.read_text())


# --------------------------------------------------------------------------- whole command


def command_benchmark(quick: bool):
    """`imgproc denoise` on a 12-megapixel JPEG as a whole command, cold (empty compilation
    cache) and warm (second run, cache filled)."""
    from PIL import Image

    title = "imgproc denoise on a 12-megapixel JPEG (4000x3000), whole command"
    print(f"\n{title}")
    exe = str(Path(sys.executable).with_name("imgproc"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src = tmp / "big.jpg"
        cat = Image.open(ROOT / "sample_images" / "chelsea.jpg").resize((4000, 3000), Image.BICUBIC)
        cat.save(src, quality=90)
        env = dict(os.environ, XDG_CACHE_HOME=str(tmp / "cache"))
        runs = [("cold (empty compilation cache)", 1), ("warm (second run)", 1 if quick else 3)]
        for label, n in runs:
            times = []
            for _ in range(n):
                out = tmp / "out.jpg"
                t = time.perf_counter()
                subprocess.run([exe, "denoise", str(src), str(out), "--overwrite"], check=True, env=env)
                times.append(time.perf_counter() - t)
            ms = statistics.median(times) * 1e3
            rows.append({"group": title, "name": f"imgproc denoise, {label}", "ms": ms, "cores": float("nan"), "vs": float("nan"), "baseline": ""})
            print(f"  {label:<45} {ms:9.1f} ms")
        script = (
            "import cv2,sys,numpy as np; x=cv2.imread(sys.argv[1]); "
            "k=np.full((5,5),-1,np.float32); k[2,2]=50; k/=k.sum(); "
            "y=cv2.filter2D(cv2.GaussianBlur(x,(5,5),1.0),-1,k); cv2.imwrite(sys.argv[2],y,[cv2.IMWRITE_JPEG_QUALITY,95])"
        )
        try:
            import cv2  # noqa: F401

            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", script, str(src), str(tmp / "cv.jpg")], check=True)
            ms = (time.perf_counter() - t) * 1e3
            rows.append({"group": title, "name": "plain OpenCV script, same work", "ms": ms, "cores": float("nan"), "vs": float("nan"), "baseline": ""})
            print(f"  {'plain OpenCV script, same work':<45} {ms:9.1f} ms")
        except ImportError:
            pass
    return rows


# --------------------------------------------------------------------------- report


def _find(rows, group_part, name_part):
    for r in rows:
        if group_part in r["group"] and r["name"].startswith(name_part):
            return r
    return None


def _gpu_fraction(label):
    """Fraction of copy bandwidth of the ``label`` row in RESULTS_GPU.md (None when absent)."""
    import re

    gpu = HERE / "RESULTS_GPU.md"
    if not gpu.exists():
        return None
    m = re.search(rf"\| {re.escape(label)} \| [0-9.]+ \| ([0-9]+)% \|", gpu.read_text())
    return None if m is None else int(m.group(1)) / 100


def targets_section(rows) -> str:
    """The issue's targets against this run's numbers: measured value, target, met or missed."""
    lines = ["## Targets (from this run)", "", "| target | measured | met? |", "|---|---:|---|"]

    def add(text, value, ok, fmt):
        lines.append(f"| {text} | {'not measured' if value is None else fmt.format(value)} | "
                     f"{'' if value is None else ('yes' if ok(value) else '**missed**')} |")

    for sigma, size in (("1", 5), ("3", 25)):
        group = f"Gaussian sigma={sigma} ({size}x{size})"
        me = _find(rows, group, "imgproc")
        others = {k: _find(rows, group, k) for k in ("OpenCV", "dm-pix", "scipy")}
        ok = me is not None and all(others.values())
        add(f"Gaussian σ={sigma}, 2048²×3: ≤ 2.0× OpenCV's time", me["vs"] if ok else None, lambda v: v <= 2.0, "{:.2f}×")
        add(f"Gaussian σ={sigma}: ≥ 20× faster than dm-pix", others["dm-pix"]["ms"] / me["ms"] if ok else None,
            lambda v: v >= 20, "{:.1f}×")
        add(f"Gaussian σ={sigma}: ≥ 4× faster than scipy.ndimage", others["scipy"]["ms"] / me["ms"] if ok else None,
            lambda v: v >= 4, "{:.1f}×")
    me = _find(rows, "Denoise pipeline", "imgproc")
    add("Denoise pipeline: ≤ 2.5× OpenCV GaussianBlur + filter2D", me and me["vs"], lambda v: v <= 2.5, "{:.2f}×")
    for sigma, size in (("1", 5), ("3", 25)):
        me = _find(rows, f"{REUSE_PREFIX}Gaussian sigma={sigma} ({size}x{size})", "imgproc")
        add(f"Gaussian σ={sigma}, 2048²×3: ≤ 2.0× OpenCV's time, both with `reuse_host_memory()`",
            me and me["vs"], lambda v: v <= 2.0, "{:.2f}×")
    me = _find(rows, "whole command", "imgproc denoise, warm")
    add("`imgproc denoise` 12 MP JPEG, warm: < 2.5 s", me and me["ms"] / 1e3, lambda v: v < 2.5, "{:.2f} s")
    me = _find(rows, "Augment", "imgproc Pipeline, strategy=map (default")
    alb, amx = _find(rows, "Augment", "albumentations"), _find(rows, "Augment", "augmax")
    add("Augment (default strategy): ≥ 1.5× albumentations' images/s",
        alb["ms"] / me["ms"] if me and alb else None, lambda v: v >= 1.5, "{:.2f}×")
    add("Augment (default strategy): ≥ 10× augmax's images/s",
        amx["ms"] / me["ms"] if me and amx else None, lambda v: v >= 10, "{:.1f}×")
    for sigma, size in (("1", 5), ("3", 25)):
        add(f"GPU separable Gaussian σ={sigma}, 256×224×224×3: ≥ 60% of copy bandwidth (GPU section)",
            _gpu_fraction(f"imgproc method=separable, σ={sigma} ({size}×{size})"), lambda v: v >= 0.6, "{:.0%}")
    lines += ["", "Why the missed ones are missed, and what was tried: see the notes below."]
    return "\n".join(lines)


def write_results(rows, path: Path, notes: str = ""):
    lines = [
        "# Benchmark results",
        "",
        f"Written by `make bench` (`python benchmarks/run.py`) on {datetime.date.today().isoformat()}.",
        "",
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        f"- python {platform.python_version()}; " + ", ".join(f"{k} {v}" for k, v in versions().items()),
        "- times are medians of repeated runs after a warm-up, the implementations of a group timed in turns (one call each per round; compilation excluded except in the whole-command rows);",
        "  \"cores busy\" is process CPU time divided by wall time while the case ran.",
        "",
    ]
    group = None
    for r in rows:
        if r["group"] != group:
            group = r["group"]
            lines += ["", f"## {group}", "", "| implementation | median ms | ratio | cores busy |", "|---|---:|---:|---:|"]
        ratio = "" if r["vs"] != r["vs"] else f"{r['vs']:.2f}× {r['baseline']}"
        cores = "" if r["cores"] != r["cores"] else f"{r['cores']:.2f}"
        lines.append(f"| {r['name']} | {r['ms']:.1f} | {ratio} | {cores} |")
    lines += ["", targets_section(rows)]
    gpu = HERE / "RESULTS_GPU.md"  # written by `make bench-gpu` on a GPU machine
    if gpu.exists():
        lines += ["", gpu.read_text().strip()]
    denoise = HERE / "RESULTS_DENOISE.md"  # written by benchmarks/denoise_quality.py
    if denoise.exists():
        lines += ["", denoise.read_text().strip()]
    if notes:
        lines += ["", notes]
    path.write_text("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="filters,command,augment,folder,denoise")
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    parser.add_argument("--reuse-host-memory-json", help=argparse.SUPPRESS)  # internal: the second process
    args = parser.parse_args()
    repeats = 3 if args.quick else 7
    only = set(args.only.split(","))
    if args.reuse_host_memory_json:
        import json

        import imgproc

        imgproc.reuse_host_memory()  # before any large allocation (imgproc.host_memory)
        rows = filter_benchmarks(repeats, title_prefix=REUSE_PREFIX)
        Path(args.reuse_host_memory_json).write_text(json.dumps(rows))
        return
    rows = []
    if "filters" in only:
        rows += filter_benchmarks(repeats)
        rows += reuse_host_memory_rows(args.quick)
    if "command" in only:
        rows += command_benchmark(args.quick)
    for name in ("augment", "folder"):  # optional modules, each with run() -> rows
        if name in only and (HERE / f"{name}.py").exists():
            mod = importlib.import_module(name)
            for r in mod.run():
                rows.append({"group": r.get("group", name), "name": r["name"], "ms": r.get("ms", float("nan")),
                             "cores": r.get("cores", float("nan")), "vs": r.get("vs", float("nan")), "baseline": r.get("baseline", "")})
    if "denoise" in only:  # quality and speed table of the denoisers (benchmarks/denoise_quality.py)
        import denoise_quality

        (HERE / "RESULTS_DENOISE.md").write_text(denoise_quality.run_section(args.quick) + "\n")
    notes_path = HERE / "NOTES.md"
    write_results(rows, Path(args.out), notes_path.read_text() if notes_path.exists() else "")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
