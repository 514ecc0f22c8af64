"""One epoch of a realistic dataset through the ImageNet training recipe, compilation included.

The data: 1,000 JPEGs (quick: 128) written once into a temporary folder with ImageNet's
size spread: shorter side uniform in 200..500, aspect ratio log-uniform in 0.5..2, real
photo content (scikit-image's sample photos, scaled, cropped and flipped). Every side
pair is different, as in a real dataset.

Each row is one epoch in a **fresh process** (so the first epoch pays for compilation, as
a user's does), decode included (Pillow, the same for every library), images of every
size given as they are, batches of 64:

* ``imgproc_first``: ``imgproc.recipes.imagenet_train()`` called on each batch as a list
  of images (:mod:`imgproc.pipeline.variable_size`), labels mixed (MixUp/CutMix): the
  first epoch, compilation included, and the XLA programs compiled (JAX's compile events;
  the persistent compilation cache in an empty folder). ``imgproc_steady``: the second
  epoch of the same process. ``imgproc_warm``: the first epoch of a second process with
  that cache folder, as a later run on the machine (or another worker) has it.
* ``albumentations``: ``A.Compose`` of ``RandomResizedCrop(224)``, ``HorizontalFlip``, a
  TrivialAugment-like ``OneOf`` (benchmarks/recipes.py), ``CoarseDropout`` and
  ``Normalize`` per image in one process; ``albumentations_2threads``: decode and
  augmentation of each image in a pool of 2 threads (cv2 and Pillow release the GIL);
  ``albumentations_2proc``: the same in 2 worker processes (a ``multiprocessing`` pool,
  decode in the workers, as a DataLoader does).

Decoding overlaps the computation for imgproc as for the threaded and multi-process
albumentations rows: imgproc decodes the next batch in 2 threads while the recipe
computes the current one (the recipe itself runs one slice of the batch per core),
as a loader's workers would.
* ``torchvision``: v2 ``RandomResizedCrop``, ``RandomHorizontalFlip``,
  ``TrivialAugmentWide``, ``ToDtype``, ``Normalize``, ``RandomErasing``, where installed.

A second table times the recipe's first call alone (``benchmarks/first_call.py`` in a
fresh process with an empty cache folder: 8 photos as a list), against the issue's bound
of 5 s of compilation.

A first epoch cannot be warmed up (that is what it measures), so each row is one timed
run of its process, one process after the other (benchmarks/harness.py's rows; the epoch
is timed inside the process, around the loop, and reported on stdout as JSON).

    python benchmarks/dataset_epoch.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from harness import Group, Row, Target, command_env, cpu_seconds, find, group_table, print_group, targets_table

BATCH = 64
TARGETS = [
    Target("Dataset epoch (every size different), steady state: ≥ 2× albumentations' images/s", group="dataset_epoch",
           name="albumentations", baseline="imgproc_steady", at_least=2.0),
    Target("Dataset epoch, first epoch with compilation (cold cache): ≥ 1× albumentations' images/s",
           group="dataset_epoch", name="albumentations", baseline="imgproc_first", at_least=1.0),
    Target("First call of `imagenet_train` in a fresh process (8 photos as a list, empty cache): ≤ 5 s of "
           "compilation", group="first_call", name="compile", at_most=5.0, fmt="{:.1f} s"),
]
N_IMAGES = 1000
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
NUM_CLASSES = 1000


def make_dataset(folder: Path, n: int, seed: int = 0) -> list[Path]:
    """``n`` JPEGs with ImageNet's size spread (module docstring), quality 90."""
    from PIL import Image
    from skimage import data

    photos = [getattr(data, name)() for name in ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry")]
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        short = int(rng.integers(200, 501))
        aspect = float(np.exp(rng.uniform(np.log(0.5), np.log(2.0))))
        h, w = (short, int(round(short * aspect))) if aspect >= 1 else (int(round(short / aspect)), short)
        photo = photos[i % len(photos)]
        ph, pw = photo.shape[:2]
        crop_h, crop_w = int(rng.integers(ph // 2, ph + 1)), int(rng.integers(pw // 2, pw + 1))
        top, left = int(rng.integers(0, ph - crop_h + 1)), int(rng.integers(0, pw - crop_w + 1))
        image = Image.fromarray(photo[top:top + crop_h, left:left + crop_w]).resize((w, h), Image.BILINEAR)
        if rng.random() < 0.5:
            image = image.transpose(Image.FLIP_LEFT_RIGHT)
        path = folder / f"{i:05d}.jpg"
        image.save(path, quality=90)
        paths.append(path)
    return paths


def decode(path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


# --------------------------------------------------------------------------- one epoch per process


def epoch_imgproc(paths, epochs: int) -> dict:
    import jax
    from jax._src.dispatch import BACKEND_COMPILE_EVENT, JAXPR_TO_MLIR_MODULE_EVENT, JAXPR_TRACE_EVENT

    import imgproc

    compiles, staging = [], []  # XLA's compilations; tracing and lowering (what the persistent cache cannot save)

    def listen(event, seconds, **_):
        if event == BACKEND_COMPILE_EVENT:
            compiles.append(seconds)
        elif event in (JAXPR_TRACE_EVENT, JAXPR_TO_MLIR_MODULE_EVENT):
            staging.append(seconds)

    jax.monitoring.register_event_duration_secs_listener(listen)
    recipe = imgproc.recipes.imagenet_train()
    labels = np.arange(len(paths)) % NUM_CLASSES
    start_cpu = cpu_seconds()
    out = {}
    starts = range(0, len(paths), BATCH)
    with ThreadPoolExecutor(2) as decoders:  # the next batch decodes while this one computes
        for e in range(epochs):
            t0 = time.perf_counter()
            batches = [decoders.map(decode, paths[b:b + BATCH]) for b in starts[:1]]
            for i, b in enumerate(starts):
                images = list(batches[i])
                if i + 1 < len(starts):
                    batches.append(decoders.map(decode, paths[starts[i + 1]:starts[i + 1] + BATCH]))
                idx = np.arange(b, b + len(images))
                result = recipe(images, labels[idx], key=e, indices=idx, num_classes=NUM_CLASSES)
                np.asarray(result["images"])
            out[f"epoch{e}"] = time.perf_counter() - t0
            out[f"programs{e}"] = len(compiles)
            out[f"compile_seconds{e}"] = sum(compiles)
            out[f"staging_seconds{e}"] = sum(staging)
            out[f"cpu{e}"] = cpu_seconds() - sum(out.get(f"cpu{k}", 0.0) for k in range(e)) - start_cpu
    return out


def _albumentations_pipeline():
    import albumentations as A

    from recipes import albumentations_trivial_augment

    return A.Compose([
        A.RandomResizedCrop(size=(224, 224), scale=(0.08, 1.0)),
        A.HorizontalFlip(p=0.5),
        albumentations_trivial_augment(A),
        A.CoarseDropout(p=0.1),
        A.Normalize(mean=MEAN, std=STD),
    ], seed=0)


_WORKER_AUG = None


def _albumentations_one(path):
    global _WORKER_AUG
    if _WORKER_AUG is None:
        _WORKER_AUG = _albumentations_pipeline()
    return _WORKER_AUG(image=decode(path))["image"]


def epoch_albumentations(paths, workers: int, threads: int = 1) -> dict:
    t0, c0 = time.perf_counter(), cpu_seconds()
    if threads > 1:  # decode and augment each image in a thread pool (cv2 and Pillow release the GIL)
        with ThreadPoolExecutor(threads) as pool:
            for b in range(0, len(paths), BATCH):
                np.stack(list(pool.map(_albumentations_one, paths[b:b + BATCH])))
    elif workers == 1:
        for b in range(0, len(paths), BATCH):
            np.stack([_albumentations_one(p) for p in paths[b:b + BATCH]])
    else:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            for b in range(0, len(paths), BATCH):
                np.stack(pool.map(_albumentations_one, paths[b:b + BATCH], chunksize=8))
    return {"epoch0": time.perf_counter() - t0, "cpu0": cpu_seconds() - c0}


def epoch_torchvision(paths) -> dict:
    import torch
    from torchvision.transforms import v2

    torch.manual_seed(0)
    aug = v2.Compose([v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip(),
                      v2.TrivialAugmentWide(interpolation=v2.InterpolationMode.BILINEAR),
                      v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD), v2.RandomErasing(0.1)])
    t0 = time.perf_counter()
    for b in range(0, len(paths), BATCH):
        torch.stack([aug(torch.from_numpy(decode(p)).permute(2, 0, 1)) for p in paths[b:b + BATCH]])
    return {"epoch0": time.perf_counter() - t0}


def worker(kind: str, folder: str) -> None:
    paths = sorted(Path(folder).glob("*.jpg"))
    if kind == "imgproc":
        result = epoch_imgproc(paths, epochs=2)
    elif kind == "albumentations":
        result = epoch_albumentations(paths, 1)
    elif kind == "albumentations_2proc":
        result = epoch_albumentations(paths, 2)
    elif kind == "albumentations_2threads":
        result = epoch_albumentations(paths, 1, threads=2)
    elif kind == "torchvision":
        result = epoch_torchvision(paths)
    else:
        raise ValueError(f"unknown worker {kind!r}")
    print("RESULT " + json.dumps(result))


def _in_process(kind: str, folder: Path, cache: str = "off") -> dict | None:
    r = subprocess.run([sys.executable, __file__, "--worker", kind, str(folder)], capture_output=True, text=True,
                       env=command_env(IMGPROC_CACHE_DIR=cache))
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    if r.returncode != 0 or not lines:
        print(f"{kind} failed: {r.stderr.strip().splitlines()[-1:] or r.returncode}")
        return None
    return json.loads(lines[-1][len("RESULT "):])


def _cpu_note(cpu_s: float, n: int) -> str:
    return f"{1000 * cpu_s / n:.1f} ms of CPU per image"


def run(quick: bool = False, out: Path | None = None):
    """``(groups, rows)``: each library's epoch in a fresh process, on the same JPEGs;
    with ``out``, its section of RESULTS.md (the table and the targets) written there."""
    n = 128 if quick else N_IMAGES
    group = Group("dataset_epoch", f"One epoch of {n} JPEGs of ImageNet's size spread (every size different), "
                  f"decode included, ImageNet training recipe, batches of {BATCH}, fresh process",
                  baseline="albumentations")
    rows = []
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="imgproc-dataset-") as tmp:
        folder = Path(tmp)
        make_dataset(folder, n)
        kinds = ["imgproc", "albumentations", "albumentations_2threads", "albumentations_2proc"]
        try:
            import torchvision  # noqa: F401

            kinds.append("torchvision")
        except ImportError:
            print("torchvision not installed: its row is left out")
        cache = str(folder / "compilation-cache")  # empty: the first process compiles everything
        imgproc_run = None
        for kind in kinds:
            result = _in_process(kind, folder, cache if kind == "imgproc" else "off")
            if result is None:
                continue
            if kind == "imgproc":
                imgproc_run = result
                rows.append(Row(group.id, "imgproc_first", "imgproc recipes.imagenet_train(), list of images: first "
                                "epoch, compilation included (cold cache)", result["epoch0"], 1, images=n,
                                notes=f"{result['programs0']} programs compiled, {result['compile_seconds0']:.1f} s; "
                                      + _cpu_note(result["cpu0"], n)))
                rows.append(Row(group.id, "imgproc_steady", "imgproc, second epoch (steady state)", result["epoch1"], 1,
                                images=n, notes=f"{result['programs1'] - result['programs0']} programs compiled; "
                                                + _cpu_note(result["cpu1"], n)))
                # a later run on the same machine (or another worker): the programs come from the
                # persistent compilation cache the first process filled
                warm = _in_process(kind, folder, cache)
                if warm is not None:
                    rows.append(Row(group.id, "imgproc_warm", "imgproc, first epoch of a later process (warm "
                                    "compilation cache)", warm["epoch0"], 1, images=n,
                                    notes=f"{warm['compile_seconds0']:.1f} s in compile events (cache loads)"))
            else:
                label = {"albumentations": "albumentations, one process",
                         "albumentations_2threads": "albumentations, 2 threads",
                         "albumentations_2proc": "albumentations, 2 worker processes",
                         "torchvision": "torchvision v2, one process"}[kind]
                rows.append(Row(group.id, kind, label, result["epoch0"], 1, images=n, notes=_cpu_note(result["cpu0"], n)))
        # the first call alone (benchmarks/first_call.py), its own fresh process and empty cache
        first = Group("first_call", "The first call of imagenet_train in a fresh process: 8 decoded photos of "
                      "ImageNet sizes as a list, empty compilation cache (benchmarks/first_call.py)")
        call = _first_call(folder / "first-call-cache")
        if call is not None:
            rows.append(Row(first.id, "compile", "compilation (JAX's compile events)", call["compile_s"], 1,
                            notes=f"{call['compilations']} programs"))
            rows.append(Row(first.id, "call", "the whole call", call["first_call_s"], 1,
                            notes=f"after {call['import_s']:.2f} s of imports"))
    print_group(group, rows)
    print_group(first, rows)
    if out is not None:
        after = os.getloadavg()[0]
        shared = (" (above the core count, other work shared the machine: wall times are inflated, the CPU time "
                  "per image much less)") if max(load[0], after) > (os.cpu_count() or 1) else ""
        Path(out).write_text("\n".join([
            group_table(group, rows), "", group_table(first, rows, heading="###"), "",
            f"Measured {time.strftime('%Y-%m-%d')} by `python benchmarks/dataset_epoch.py` (part of `make bench`), "
            f"load average {load[0]:.1f} before and {after:.1f} after on {os.cpu_count()} cores{shared}; where the "
            "time goes and why a target is missed: benchmarks/NOTES.md, \"Real datasets\".", "",
            "### Targets", "", targets_table(TARGETS, rows), "", _first_epoch_why(imgproc_run, rows)]) + "\n")
    return [group, first], rows


def _first_epoch_why(result: dict | None, rows) -> str:
    """Where the cold first epoch's time went, from this run's own numbers: what keeps it
    below albumentations' epoch when it is."""
    baseline = find(rows, "dataset_epoch", "albumentations")
    if result is None or baseline is None:
        return ""
    first, steady, albu = result["epoch0"], result["epoch1"], baseline.seconds
    if first <= albu:
        return "The cold first epoch took no longer than albumentations' epoch."
    compile_s, staging_s = result["compile_seconds0"], result.get("staging_seconds0", 0.0)
    rest = first - compile_s - staging_s
    return (f"**Where the cold first epoch went** (this run, JAX's compile events in the imgproc process): "
            f"{first:.1f} s = XLA compiling {result['programs0']} programs {compile_s:.1f} s + tracing and lowering "
            f"them {staging_s:.1f} s + decoding and augmenting the images {rest:.1f} s (the second epoch, the same "
            f"work compiled: {steady:.1f} s). albumentations' whole epoch took {albu:.1f} s, "
            + (f"less than XLA's compilation alone ({compile_s / albu:.0%} of it): no speed of the compiled programs "
               "brings the cold first epoch to 1×" if compile_s >= albu else
               f"and compiling, tracing and lowering took {(compile_s + staging_s) / albu:.0%} of that")
            + f" (it reads {albu / first:.2f}×). A later process loads the programs from the persistent cache (the "
            "warm row). Profiles of the programs: benchmarks/NOTES.md, \"Real datasets\".")


def _first_call(cache: Path) -> dict | None:
    cache.mkdir()
    r = subprocess.run([sys.executable, str(Path(__file__).with_name("first_call.py"))], capture_output=True, text=True,
                       env=command_env(IMGPROC_CACHE_DIR=str(cache)))
    if r.returncode != 0:
        print(f"first_call failed: {r.stderr.strip().splitlines()[-1:] or r.returncode}")
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="128 images (a check that it runs)")
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        worker(*args.worker)
    else:
        run(args.quick, out=None if args.quick else Path(__file__).with_name("RESULTS_DATASET.md"))
