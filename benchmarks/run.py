"""`make bench`: the same work timed in one run for imgproc and the other libraries.

Prints a table per group and writes benchmarks/RESULTS.md with the machine, library
versions and date, the tables, the targets (looked up by group and row id) and
benchmarks/NOTES.md. Every number in RESULTS.md comes from this script (the GPU section
from benchmarks/gpu.py). All timing goes through benchmarks/harness.py.

    python benchmarks/run.py                           # everything
    python benchmarks/run.py --quick --out /tmp/r.md   # fewer repeats, smaller inputs: checks it runs
    python benchmarks/run.py --only filters,augment
    python benchmarks/run.py --only recipes          # the ImageNet training recipe
    python benchmarks/run.py --only dataset          # an epoch of JPEGs of every size, compilation included
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import augment  # noqa: E402
import dataset_epoch  # noqa: E402
import folder  # noqa: E402
import large_kernels  # noqa: E402
import morphology  # noqa: E402
import recipes  # noqa: E402
import threshold  # noqa: E402
from harness import (Case, Group, Target, command_env, load, print_group, save, tables, targets_table,  # noqa: E402
                     time_group)


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

REUSE_ID, REUSE_TITLE = "reuse_", "With imgproc.reuse_host_memory() in the process: "  # group prefixes


def filter_benchmarks(quick: bool, *, reuse: bool = False):
    """The filter groups on 2048x2048x3 float32 (and a batch of 224x224 images): imgproc
    against OpenCV, scipy.ndimage, dm-pix, Pillow and the seed chapter's NumPy code. With
    ``reuse`` (the ``reuse_host_memory()`` process) only imgproc and OpenCV are timed, in
    groups whose ids and titles carry the ``REUSE_ID`` and ``REUSE_TITLE`` prefixes."""
    import cv2
    import dm_pix
    import jax
    import scipy.ndimage as ndi
    import scipy.signal
    from PIL import Image, ImageFilter

    import imgproc
    from imgproc import kernels

    repeats = 3 if quick else 7
    cv2.setNumThreads(os.cpu_count() or 1)
    rng = np.random.default_rng(0)
    img = rng.random((2048, 2048, 3), dtype=np.float32)
    dev = jax.device_put(img)
    u8 = Image.fromarray((img * 255).astype(np.uint8))
    groups, rows = [], []

    def chapter(image, kernel):  # the seed chapter's NumPy code (convolve2d per channel)
        return np.stack([scipy.signal.convolve2d(image[:, :, i], kernel, mode="same") for i in range(3)], axis=2)

    def timed(group, cases):
        if reuse:
            group = Group(REUSE_ID + group.id, REUSE_TITLE + group.title, group.baseline)
            cases = [c for c in cases if c.name.startswith("imgproc") or c.name == "opencv"]
        new = time_group(group.id, cases, repeats)
        print_group(group, new)
        groups.append(group)
        rows.extend(new)

    for sigma, size in ((1.0, 5), (3.0, 25)):
        imgproc_fn = jax.jit(lambda x, s=sigma, k=size: imgproc.gaussian_blur(x, s, size=k))
        pix_fn = jax.jit(lambda x, s=sigma, k=size: dm_pix.gaussian_blur(x, s, k))
        g2 = kernels.gaussian(sigma, size=size)
        cases = [
            Case("imgproc_eager", "imgproc gaussian_blur (eager, NumPy in and out)",
                 lambda: imgproc.gaussian_blur(img, sigma, size=size)),
            Case("imgproc_jit", "imgproc gaussian_blur (jit, device array)", lambda: imgproc_fn(dev)),
            Case("opencv", "OpenCV cv2.GaussianBlur",
                 lambda: cv2.GaussianBlur(img, (size, size), sigma, borderType=cv2.BORDER_REFLECT)),
            Case("scipy", "scipy.ndimage.gaussian_filter",
                 lambda: ndi.gaussian_filter(img, (sigma, sigma, 0), truncate=(size // 2) / sigma)),
            Case("dmpix", "dm-pix gaussian_blur (jit)", lambda: pix_fn(dev)),
            Case("pillow", "Pillow GaussianBlur (uint8)", lambda: u8.filter(ImageFilter.GaussianBlur(sigma))),
        ]
        if size <= 5 or not quick:  # 25x25 convolve2d: 10 s a call
            cases.append(Case("seed_numpy", "seed chapter NumPy convolve2d", lambda: chapter(img, g2)))
        timed(Group(f"gaussian_sigma{sigma:g}_2048", f"Gaussian sigma={sigma:g} ({size}x{size}), 2048x2048x3 float32",
                    "opencv"), cases)

    box_fn = jax.jit(lambda x: imgproc.box_blur(x, 5))
    timed(Group("box5_2048", "Box 5x5, 2048x2048x3 float32", "opencv"), [
        Case("imgproc_eager", "imgproc box_blur (eager, NumPy in and out)", lambda: imgproc.box_blur(img, 5)),
        Case("imgproc_jit", "imgproc box_blur (jit, device array)", lambda: box_fn(dev)),
        Case("opencv", "OpenCV cv2.blur", lambda: cv2.blur(img, (5, 5), borderType=cv2.BORDER_REFLECT)),
        Case("scipy", "scipy.ndimage.uniform_filter", lambda: ndi.uniform_filter(img, (5, 5, 1))),
        Case("pillow", "Pillow BoxBlur (uint8)", lambda: u8.filter(ImageFilter.BoxBlur(2))),
        Case("seed_numpy", "seed chapter NumPy convolve2d", lambda: chapter(img, kernels.box(5))),
    ])

    if not reuse:  # large kernels: auto's FFT lowering on CPU (benchmarks/NOTES.md, "The FFT lowering")
        timed(Group("gaussian_sigma20_2048", "Gaussian sigma=20 (161x161), 2048x2048x3 float32", "opencv"), [
            Case("imgproc_eager", "imgproc gaussian_blur (eager, NumPy in and out; auto: FFT)",
                 lambda: imgproc.gaussian_blur(img, 20.0)),
            Case("imgproc_separable", "imgproc gaussian_blur, method=\"separable\" (eager)",
                 lambda: imgproc.gaussian_blur(img, 20.0, method="separable")),
            Case("opencv", "OpenCV cv2.GaussianBlur",
                 lambda: cv2.GaussianBlur(img, (161, 161), 20.0, borderType=cv2.BORDER_REFLECT)),
            Case("scipy", "scipy.ndimage.gaussian_filter", lambda: ndi.gaussian_filter(img, (20.0, 20.0, 0))),
        ])
        disk = large_kernels.disk(12)
        timed(Group("disk25_2048", "Disk 25x25 (not separable), 2048x2048x3 float32", "opencv"), [
            Case("imgproc_eager", "imgproc correlate (eager, NumPy in and out; auto: FFT)",
                 lambda: imgproc.correlate(img, disk)),
            Case("opencv", "OpenCV cv2.filter2D (a DFT for large kernels)",
                 lambda: cv2.filter2D(img, -1, disk, borderType=cv2.BORDER_REFLECT)),
        ])

    denoise = imgproc.presets.denoise()
    g5, sh = kernels.gaussian(1.0, size=5), kernels.sharpen()
    timed(Group("denoise_2048", "Denoise pipeline (Gaussian 5x5 + sharpen 5x5), 2048x2048x3 float32", "opencv"), [
        Case("imgproc_eager", "imgproc presets.denoise (NumPy in and out)", lambda: denoise(img)),
        Case("imgproc", "imgproc presets.denoise (device array)", lambda: denoise(dev)),
        Case("opencv", "OpenCV GaussianBlur + filter2D", lambda: cv2.filter2D(
            cv2.GaussianBlur(img, (5, 5), 1.0, borderType=cv2.BORDER_REFLECT), -1, sh, borderType=cv2.BORDER_REFLECT)),
        Case("scipy", "scipy.ndimage gaussian_filter + correlate", lambda: ndi.correlate(
            ndi.gaussian_filter(img, (1, 1, 0), truncate=2.0), sh[:, :, None])),
        Case("seed_numpy", "seed chapter NumPy convolve2d", lambda: chapter(chapter(img, g5), sh)),
    ])

    batch = rng.random((128, 224, 224, 3), dtype=np.float32)
    bdev = jax.device_put(batch)
    batch_fn = jax.jit(lambda x: imgproc.gaussian_blur(x, 1.0, size=5))
    pix_batch = jax.jit(jax.vmap(lambda x: dm_pix.gaussian_blur(x, 1.0, 5)))
    timed(Group("gaussian_sigma1_batch128", "Gaussian sigma=1 5x5 on a batch of 128 images 224x224x3 float32",
                "opencv"), [
        Case("imgproc_jit", "imgproc gaussian_blur (jit, NHWC batch)", lambda: batch_fn(bdev), images=128),
        Case("opencv", "OpenCV cv2.GaussianBlur, loop",
             lambda: [cv2.GaussianBlur(b, (5, 5), 1.0, borderType=cv2.BORDER_REFLECT) for b in batch], images=128),
        Case("scipy", "scipy.ndimage.gaussian_filter", lambda: ndi.gaussian_filter(batch, (0, 1, 1, 0), truncate=2.0),
             images=128),
        Case("dmpix", "dm-pix gaussian_blur (jit+vmap)", lambda: pix_batch(bdev), images=128),
    ])
    return groups, rows


def reuse_host_memory_benchmarks(quick: bool):
    """The filter groups again (imgproc and OpenCV only) in a second process that calls
    :func:`imgproc.reuse_host_memory` first, so freed image buffers are reused instead of
    being zeroed afresh by the kernel; it applies to every library in that process."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--reuse-host-memory-json", str(out)]
        subprocess.run(cmd + (["--quick"] if quick else []), check=True)
        return load(out)


# --------------------------------------------------------------------------- whole command


def command_benchmark(quick: bool):
    """`imgproc denoise` on a 12-megapixel JPEG as a whole command (a new process each call):
    cold (its compilation cache emptied before every call) and warm (cache filled by the
    warm-up call), against a plain OpenCV script doing the same work."""
    from PIL import Image

    group = Group("command_denoise_12mp", "imgproc denoise on a 12-megapixel JPEG (4000x3000), whole command")
    exe = str(Path(sys.executable).with_name("imgproc"))
    script = (
        "import cv2,sys,numpy as np; x=cv2.imread(sys.argv[1]); "
        "k=np.full((5,5),-1,np.float32); k[2,2]=50; k/=k.sum(); "
        "y=cv2.filter2D(cv2.GaussianBlur(x,(5,5),1.0),-1,k); cv2.imwrite(sys.argv[2],y,[cv2.IMWRITE_JPEG_QUALITY,95])"
    )
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src = tmp / "big.jpg"
        Image.open(ROOT / "sample_images" / "chelsea.jpg").resize((4000, 3000), Image.BICUBIC).save(src, quality=90)

        def imgproc_denoise(cache: Path, empty: bool):
            if empty:
                shutil.rmtree(cache, ignore_errors=True)
            # --method chapter: the Gaussian + sharpen the OpenCV script does (auto's NL-means
            # is timed per method in the denoise table)
            subprocess.run([exe, "denoise", str(src), str(tmp / "out.jpg"), "--method", "chapter", "--overwrite"], check=True,
                           env=command_env(XDG_CACHE_HOME=str(cache)))

        cases = [
            Case("imgproc_cold", "imgproc denoise --method chapter, cold (empty compilation cache)",
                 lambda: imgproc_denoise(tmp / "cold-cache", empty=True), megapixels=12),
            Case("imgproc_warm", "imgproc denoise --method chapter, warm (compilation cache filled)",
                 lambda: imgproc_denoise(tmp / "warm-cache", empty=False), megapixels=12),
            Case("opencv_script", "plain OpenCV script, same work",
                 lambda: subprocess.run([sys.executable, "-c", script, str(src), str(tmp / "cv.jpg")], check=True,
                                        env=command_env()),
                 megapixels=12),
        ]
        rows = time_group(group.id, cases, 1 if quick else 3)
    print_group(group, rows)
    return [group], rows


# --------------------------------------------------------------------------- report


def _gpu_bandwidth(sigma: int, fraction: float) -> Target:
    return Target(f"GPU Gaussian σ={sigma} (method=auto), 256×224×224×3: ≥ {fraction:.0%} of copy bandwidth (GPU section)",
                  group="gpu_gaussian", name="copy", baseline=f"imgproc_auto_sigma{sigma}", at_least=fraction,
                  fmt="{:.0%}")


TARGETS = [
    target
    for sigma, limit in ((1, 1.0), (3, 1.5))
    for target in (
        Target(f"Gaussian σ={sigma}, 2048²×3, eager on NumPy: ≤ {limit:.1f}× OpenCV's time",
               group=f"gaussian_sigma{sigma}_2048", name="imgproc_eager", baseline="opencv", at_most=limit),
        Target(f"Gaussian σ={sigma}: ≥ 20× faster than dm-pix (eager call)", group=f"gaussian_sigma{sigma}_2048",
               name="dmpix", baseline="imgproc_eager", at_least=20, fmt="{:.1f}×"),
        Target(f"Gaussian σ={sigma}: ≥ 4× faster than scipy.ndimage (eager call)", group=f"gaussian_sigma{sigma}_2048",
               name="scipy", baseline="imgproc_eager", at_least=4, fmt="{:.1f}×"),
    )
] + [
    Target("Box 5×5, 2048²×3, eager on NumPy: ≤ 1.0× OpenCV's time", group="box5_2048", name="imgproc_eager",
           baseline="opencv", at_most=1.0),
] + [
    target
    for op in ("erosion", "opening")
    for k in morphology.SIZES
    for target in (
        Target(f"{op.capitalize()} {k}×{k} square, 2048²×3 uint8, eager on NumPy: ≤ 1.5× OpenCV's time",
               group=f"{op}{k}_2048_u8", name="imgproc_eager", baseline="opencv", at_most=1.5),
        Target(f"{op.capitalize()} {k}×{k}: ≥ 10× faster than scipy.ndimage (eager call)", group=f"{op}{k}_2048_u8",
               name="scipy", baseline="imgproc_eager", at_least=10, fmt="{:.1f}×"),
    )
] + [
    Target("Denoise pipeline (chapter), NumPy in: ≤ 1.5× OpenCV GaussianBlur + filter2D", group="denoise_2048",
           name="imgproc_eager", baseline="opencv", at_most=1.5),
    Target("`imgproc denoise` 12 MP JPEG, warm: ≤ 2× the OpenCV script's time", group="command_denoise_12mp",
           name="imgproc_warm", baseline="opencv_script", at_most=2.0),
    Target("Folder of 1080p JPEGs: ≥ 1.0× the OpenCV script's images/s", group="folder_denoise",
           name="opencv_script", baseline="imgproc_cli", at_least=1.0),
    Target("Augment (default strategy on CPU, map): ≥ 3× albumentations' images/s", group="augment",
           name="albumentations", baseline="imgproc_map", at_least=3.0),
    Target("Augment (default strategy on CPU, map): ≥ 10× augmax's images/s", group="augment",
           name="augmax", baseline="imgproc_map", at_least=10, fmt="{:.1f}×"),
    Target("ImageNet training recipe (default strategy), float32 out: ≥ 2× albumentations' images/s",
           group="recipes", name="albumentations", baseline="imgproc_default", at_least=2.0),
    Target("ImageNet training recipe (default strategy), float32 out: ≥ 10× augmax's images/s", group="recipes",
           name="augmax", baseline="imgproc_default", at_least=10, fmt="{:.1f}×"),
    _gpu_bandwidth(1, 0.8),
    _gpu_bandwidth(3, 0.6),
    Target("GPU ImageNet recipe fed from host memory (prefetch_to_device): ≥ 50% of the device-input images/s "
           "(GPU section)", group="gpu_recipe", name="imgproc_device", baseline="imgproc_host_prefetch", at_least=0.5,
           fmt="{:.0%}"),
] + [
    Target(f"GPU {op} 15×15 square, 8×2048²×3 on the device: ≥ 2× faster than torch's max_pool2d (GPU section)",
           group="gpu_morphology15", name=f"torch_{op}_f32", baseline=f"imgproc_{op}_f32", at_least=2.0, fmt="{:.1f}×")
    for op in ("erosion", "opening")
]


def write_results(groups, rows, path: Path, notes: str = ""):
    """RESULTS.md: header, one table per group, the targets (over this run's rows and the
    GPU rows of RESULTS_GPU.json), the GPU section and the notes."""
    gpu_md, gpu_json = HERE / "RESULTS_GPU.md", HERE / "RESULTS_GPU.json"  # written by `make bench-gpu`
    gpu_rows = load(gpu_json)[1] if gpu_json.exists() else []
    lines = [
        "# Benchmark results",
        "",
        f"Written by `make bench` (`python benchmarks/run.py`) on {datetime.date.today().isoformat()}.",
        "",
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        f"- python {platform.python_version()}; " + ", ".join(f"{k} {v}" for k, v in versions().items()),
        "- times are medians of repeated runs after a warm-up, the implementations of a group timed in turns "
        "(one call each per round, benchmarks/harness.py; compilation excluded except in the whole-command rows);",
        "  \"cores busy\" is CPU time (this process and its finished children) divided by wall time while the case ran.",
        "",
        tables(groups, rows),
        "",
        "## Targets (from this run)",
        "",
        targets_table(TARGETS, rows + gpu_rows),
        "",
        "Why the missed ones are missed, and what was tried: see the notes below.",
    ]
    for md in (gpu_md, HERE / "RESULTS_GPU_DENOISE.md"):  # written by `make bench-gpu`
        if md.exists():
            lines += ["", md.read_text().strip()]
    for md in (HERE / "RESULTS_DATASET.md", HERE / "RESULTS_DENOISE.md"):  # dataset_epoch.py, denoise_quality.py
        if md.exists():
            lines += ["", md.read_text().strip()]
    if notes:
        lines += ["", notes]
    path.write_text("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats and smaller inputs (a check that it runs)")
    parser.add_argument("--only", default="filters,morphology,threshold,command,augment,recipes,dataset,folder,denoise")
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    parser.add_argument("--reuse-host-memory-json", help=argparse.SUPPRESS)  # internal: the second process
    args = parser.parse_args()
    only = set(args.only.split(","))
    if args.reuse_host_memory_json:
        import imgproc

        imgproc.reuse_host_memory()  # before any large allocation (imgproc.cpu.host_memory)
        save(Path(args.reuse_host_memory_json), *filter_benchmarks(args.quick, reuse=True))
        return
    groups, rows = [], []
    benchmarks = {
        "filters": lambda: filter_benchmarks(args.quick),
        "reuse": lambda: reuse_host_memory_benchmarks(args.quick),
        "morphology": lambda: morphology.run(args.quick),
        "threshold": lambda: threshold.run(args.quick),
        "command": lambda: command_benchmark(args.quick),
        "augment": lambda: augment.run(args.quick),
        "recipes": lambda: recipes.run(args.quick),
        "folder": lambda: folder.run(args.quick),
    }
    for name, bench in benchmarks.items():
        if name in only or (name == "reuse" and "filters" in only):
            new_groups, new_rows = bench()
            groups += new_groups
            rows += new_rows
    if "dataset" in only:  # its own section, with its targets (RESULTS_DATASET.md, included below)
        dataset_epoch.run(args.quick, out=None if args.quick else HERE / "RESULTS_DATASET.md")
    if "denoise" in only:  # quality and speed table of the denoisers (benchmarks/denoise_quality.py)
        import denoise_quality

        (HERE / "RESULTS_DENOISE.md").write_text(denoise_quality.run_section(args.quick) + "\n")
    notes_path = HERE / "NOTES.md"
    write_results(groups, rows, Path(args.out), notes_path.read_text() if notes_path.exists() else "")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
