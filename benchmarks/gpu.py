"""GPU comparison (`make bench-gpu`, on a machine with an NVIDIA GPU and torch/torchvision).

Writes ``benchmarks/RESULTS_GPU.md`` (``make bench`` copies it into ``RESULTS.md``) and prints
the same table. Everything is timed in one run, on one batch:

* **Gaussian blur** (σ = 1, 5×5 and σ = 3, 25×25) on a 256×224×224×3 float32 batch that
  lives on the device: imgproc's shifted-sum lowering (``method="separable"``, the CPU
  default), its single-pass ``method="direct"``, its ``lax.conv_general_dilated`` lowering
  (``method="conv"``), its fused Pallas kernel (``method="pallas"``: a tile and its halo
  in shared memory for both passes; what ``"auto"`` picks on a GPU since these rows were
  first timed, 2026-11-26) and torchvision's ``gaussian_blur``
  (NCHW). With ``--quick`` off a GPU the Pallas row runs in interpret mode (seconds a
  call). Each row gives its achieved bandwidth as a fraction of the device's measured copy
  bandwidth (``y = x + 0`` in JAX). The traffic counted is the ideal one of one blur: one
  read and one write of the batch.
* **The denoise preset** (5×5 Gaussian then 5×5 sharpen) on the same batch: imgproc's
  Pipeline against torchvision's blur followed by a depthwise ``conv2d`` with the sharpen
  kernel.
* **Augmentation**: the pipeline of ``benchmarks/augment.py`` (256 uint8 images 224×224×3)
  with each ``random_choice`` strategy, fed from host memory (as a loader does) and from
  device memory, to pick the GPU default; and the default strategy fed from host memory
  through ``imgproc.prefetch_to_device`` (uploaded ahead, output on the device).
* **The ImageNet training recipe** on the same batch: from device memory, NumPy in and
  out, and through ``prefetch_to_device`` (issue 43's target: host input at least half
  the device input's images/s).
* **Morphology** (issue 45: "fast on a GPU"): erosion and opening with a 5×5 and a 15×15
  square, edge repeated, on 8 uint8 images 2048×2048×3 on the device, against a copy of the
  batch and against torch's ``max_pool2d`` (the usual GPU erosion: ``-max_pool2d(-x)``
  after a replicate pad, as kornia's and most training code's) on the same pixels as
  float32 NCHW (torch's CUDA max pooling takes no uint8), and imgproc on that float32
  batch too.

Timed with benchmarks/harness.py: the rows of a group in turns, each sample ``calls`` calls
issued back to back (asynchronously, as a training loop does) and one synchronisation, so
the launch latency is not added to every call. Also writes the rows as JSON beside the
markdown (``RESULTS_GPU.json``), where ``make bench`` looks up the GPU targets by id.

    python benchmarks/gpu.py                              # on a GPU: RESULTS_GPU.md/.json
    python benchmarks/gpu.py --quick --out /tmp/gpu.md    # tiny batch, any backend: checks it runs
    python benchmarks/gpu.py --only recipe,morphology     # some groups (filters, augment, recipe, morphology)
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import itertools
from pathlib import Path

import numpy as np

from harness import Case, Group, block, error_line, save, tables, time_group

HERE = Path(__file__).resolve().parent


def _torch():
    try:
        import torch
        import torchvision.transforms.v2.functional as TF

        return torch, TF
    except ImportError:
        return None, None


def _sync(torch):
    """Wait for JAX results and, with torch, for the CUDA stream."""
    def sync(out):
        block(out)
        if torch is not None:
            torch.cuda.synchronize()
    return sync


def filter_benchmarks(n, calls, repeats, h=224, w=224, c=3):
    """The Gaussian and denoise groups; each row's notes give its achieved bandwidth (one
    read and one write of the batch) as a fraction of the copy row's."""
    import jax

    import imgproc

    x = jax.device_put(np.random.default_rng(0).random((n, h, w, c), dtype=np.float32))
    torch, TF = _torch()
    xt = None if torch is None else torch.from_numpy(np.array(x)).permute(0, 3, 1, 2).contiguous().cuda()
    copy = jax.jit(lambda a: a + 0)
    blur = Group("gpu_gaussian", f"Gaussian blur, {n}x{h}x{w}x{c} float32 on the device")
    cases = [Case("copy", "copy (x + 0)", lambda: copy(x))]
    failed = []
    for sigma, size in ((1.0, 5), (3.0, 25)):
        for method in ("separable", "direct", "conv", "pallas", "auto"):
            f = jax.jit(lambda a, m=method, s=sigma, k=size: imgproc.gaussian_blur(a, s, size=k, method=m))
            try:  # a lowering that does not compile on this device is reported, not fatal
                jax.block_until_ready(f(x))
            except Exception as err:  # noqa: BLE001
                failed.append(f"method={method}, σ={sigma:g}: {error_line(err)}")
                continue
            cases.append(Case(f"imgproc_{method}_sigma{sigma:g}", f"imgproc method={method}, σ={sigma:g} ({size}×{size})",
                              lambda f=f: f(x)))
        if torch is not None:
            cases.append(Case(f"torchvision_sigma{sigma:g}", f"torchvision gaussian_blur (NCHW), σ={sigma:g} ({size}×{size})",
                              lambda size=size, sigma=sigma: TF.gaussian_blur(xt, [size, size], [sigma, sigma])))
    rows = time_group(blur.id, cases, repeats, calls=calls, sync=_sync(torch))

    denoise = Group("gpu_denoise", f"Denoise preset (5×5 Gaussian σ=1, then 5×5 sharpen), {n}x{h}x{w}x{c} float32 on the device")
    pipe = imgproc.presets.denoise()
    cases = [Case("imgproc", "imgproc presets.denoise() Pipeline", lambda: pipe(x))]
    if torch is not None:
        sharp = torch.from_numpy(np.asarray(imgproc.kernels.sharpen(), np.float32)).cuda()
        weight = sharp.expand(c, 1, *sharp.shape).contiguous()

        def torch_denoise():
            y = TF.gaussian_blur(xt, [5, 5], [1.0, 1.0])
            y = torch.nn.functional.pad(y, (2, 2, 2, 2), mode="reflect")
            return torch.nn.functional.conv2d(y, weight, groups=c)

        cases.append(Case("torchvision", "torchvision gaussian_blur + depthwise conv2d (NCHW)", torch_denoise))
    rows += time_group(denoise.id, cases, repeats, calls=calls, sync=_sync(torch))

    copy_s = rows[0].seconds
    bandwidth = 2 * x.size * 4 / copy_s
    rows = [dataclasses.replace(r, notes=f"{copy_s / r.seconds:.0%} of copy bandwidth"
                                + (f" ({bandwidth / 1e9:.0f} GB/s)" if r.name == "copy" else "")) for r in rows]
    return [blur, denoise], rows, failed


def augment_benchmarks(n, calls, repeats):
    """Each strategy on a batch from host memory (upload included) and from device memory."""
    import jax

    import imgproc
    from augment import STRATEGIES, imgproc_spec

    images = np.random.default_rng(0).integers(0, 256, (n, 224, 224, 3), dtype=np.uint8)
    on_device = jax.device_put(images)
    group = Group("gpu_augment", f"Augment {n} uint8 images 224x224x3 (pipeline of benchmarks/augment.py)")
    key = jax.random.key(0)
    cases = []
    for strategy in STRATEGIES:
        pipe = imgproc.Pipeline(imgproc_spec(strategy))
        default = " (default)" if strategy == imgproc.default_strategy() else ""
        for where, batch in (("host", images), ("device", on_device)):
            draws = itertools.count()
            cases.append(Case(f"imgproc_{strategy}_{where}", f"imgproc strategy={strategy}{default}, batch from {where} memory",
                              lambda pipe=pipe, batch=batch, draws=draws: pipe(batch, key=jax.random.fold_in(key, next(draws))),
                              images=n))
        if strategy == imgproc.default_strategy():  # the fast path for host input: uploaded ahead, output on the device
            uploaded = imgproc.prefetch_to_device(_host_batches(images))
            draws = itertools.count()
            cases.append(Case(f"imgproc_{strategy}_host_prefetch", f"imgproc strategy={strategy}{default}, batch from "
                              "host memory via prefetch_to_device, output on the device",
                              lambda pipe=pipe, draws=draws: pipe(next(uploaded), key=jax.random.fold_in(key, next(draws))),
                              images=n))
    return [group], time_group(group.id, cases, repeats, calls=calls)


def _host_batches(first):
    """An endless loader of NumPy batches like ``first`` (four distinct arrays in turn, so
    every item is a real upload)."""
    batches = [first] + [np.roll(first, k, axis=0) for k in (1, 2, 3)]
    return itertools.cycle(batches)


def recipe_benchmarks(n, calls, repeats):
    """The ImageNet training recipe (issue 43's host-input target): the batch on the device,
    NumPy in and out, and NumPy batches uploaded ahead by prefetch_to_device with the
    output left on the device (what a training loop fed from host memory does)."""
    import jax

    import imgproc

    images = np.random.default_rng(0).integers(0, 256, (n, 224, 224, 3), dtype=np.uint8)
    labels = np.arange(n) % 1000
    recipe = imgproc.recipes.imagenet_train()
    group = Group("gpu_recipe", f"ImageNet training recipe, {n} uint8 images 224x224x3, float32 out")
    draws = itertools.count()
    on_device, device_labels = jax.device_put(images), jax.device_put(labels)
    uploaded = imgproc.prefetch_to_device(zip(_host_batches(images), itertools.repeat(labels)))

    def from_host_ahead():
        x, y = next(uploaded)
        return recipe(x, y, key=next(draws), num_classes=1000)["images"]

    cases = [
        Case("imgproc_device", "batch from device memory (jax.Array in and out)",
             lambda: recipe(on_device, device_labels, key=next(draws), num_classes=1000)["images"], images=n),
        Case("imgproc_host", "batch from host memory, NumPy in and NumPy out",
             lambda: recipe(images, labels, key=next(draws), num_classes=1000)["images"], images=n),
        Case("imgproc_host_prefetch", "batch from host memory via prefetch_to_device (uploaded ahead), output on the "
             "device", from_host_ahead, images=n),
    ]
    return [group], time_group(group.id, cases, repeats, calls=calls)


GROUPS = ("filters", "augment", "recipe", "morphology")  # what --only selects


def morphology_benchmarks(n, calls, repeats, side=2048):
    """Erosion and opening, 5×5 and 15×15 squares, edge repeated, on ``n`` uint8 images
    ``side``×``side``×3 on the device; each row's notes give its bandwidth (one read and one
    write of the batch in the row's own dtype: 4 bytes a value for the float32 rows) as a
    fraction of the uint8 copy's."""
    import jax
    import scipy.ndimage as ndi

    import imgproc

    images = np.random.default_rng(0).integers(0, 256, (n, side, side, 3), dtype=np.uint8)
    x = jax.device_put(images)
    xf = jax.device_put(images.astype(np.float32))
    torch, _ = _torch()
    xt = None if torch is None else torch.from_numpy(images.astype(np.float32)).permute(0, 3, 1, 2).contiguous().cuda()
    copy = jax.jit(lambda a: a + 0)
    groups, rows = [], []
    for k in (5, 15):
        ops = {op: jax.jit(lambda a, op=op: getattr(imgproc, op)(a, size=k, mode="nearest"))
               for op in ("erosion", "opening")}
        # the same pixels as scipy's, checked here on one image's corner before anything is timed
        for op in ops:
            want = getattr(ndi, f"grey_{op}")(images[0, :256, :256], size=(k, k, 1), mode="nearest")
            got = np.asarray(getattr(imgproc, op)(jax.device_put(images[0, :256, :256]), size=k, mode="nearest"))
            assert np.array_equal(got, want), f"{op} {k}x{k} differs from scipy on the GPU"
        group = Group(f"gpu_morphology{k}", f"Erosion and opening, {k}×{k} square, edge repeated, {n}x{side}x{side}x3 on the device")
        cases = [Case("copy", "copy of the uint8 batch (x + 0)", lambda: copy(x), images=n)]
        for op, f in ops.items():
            cases.append(Case(f"imgproc_{op}_u8", f"imgproc {op} (jit), uint8", lambda f=f: f(x), images=n))
            cases.append(Case(f"imgproc_{op}_f32", f"imgproc {op} (jit), float32", lambda f=f: f(xf), images=n))
        cases.append(Case("imgproc_erosion_eager_u8", "imgproc erosion (eager, jax.Array in and out), uint8",
                          lambda: imgproc.erosion(x, size=k, mode="nearest"), images=n))
        if torch is not None:
            pool = torch.nn.functional.max_pool2d
            r = k // 2

            def t_erode(a, k=k, r=r):
                return -pool(torch.nn.functional.pad(-a, (r, r, r, r), mode="replicate"), k, stride=1)

            def t_dilate(a, k=k, r=r):
                return pool(torch.nn.functional.pad(a, (r, r, r, r), mode="replicate"), k, stride=1)

            cases.append(Case("torch_erosion_f32", "torch -max_pool2d(-x) after a replicate pad, float32 NCHW",
                              lambda: t_erode(xt), images=n))
            cases.append(Case("torch_opening_f32", "torch erosion then dilation by max_pool2d, float32 NCHW",
                              lambda: t_dilate(t_erode(xt)), images=n))
            got = t_erode(xt[:1, :, :256, :256]).permute(0, 2, 3, 1).cpu().numpy()[0]
            want = ndi.grey_erosion(images[0, :256, :256].astype(np.float32), size=(k, k, 1), mode="nearest")
            assert np.array_equal(got, want), "torch's erosion is not the same pixels"
        new = time_group(group.id, cases, repeats, calls=calls, sync=_sync(torch))
        copy_rate = 2 * images.nbytes / new[0].seconds

        def note(row):
            moved = 2 * images.nbytes * (4 if row.name.endswith("_f32") else 1)
            return f"{moved / row.seconds / 1e9:.0f} GB/s, {moved / row.seconds / copy_rate:.0%} of the uint8 copy's"

        new = [dataclasses.replace(row, notes=note(row)) for row in new]
        groups.append(group)
        rows.extend(new)
    return groups, rows


def _pallas_tile():
    from imgproc.filters import pallas as _pallas

    return f"{_pallas.TILE_ROWS} rows x {_pallas.TILE_COLS} values of W*C"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(HERE / "RESULTS_GPU.md"))
    parser.add_argument("--quick", action="store_true", help="batch of 8, 3 calls, 2 rounds, on any backend")
    parser.add_argument("--pallas-tile", default=None, metavar="ROWSxCOLS",
                        help="the Pallas kernel's output tile (default: imgproc.filters.pallas's TILE_ROWS x TILE_COLS)")
    parser.add_argument("--only", default=",".join(GROUPS),
                        help=f"comma-separated groups to time: {', '.join(GROUPS)} (default: all)")
    args = parser.parse_args()
    only = args.only.split(",")
    unknown = sorted(set(only) - set(GROUPS))
    if unknown:
        parser.error(f"--only takes {', '.join(GROUPS)}; got {', '.join(unknown)}")
    import jax

    if jax.default_backend() != "gpu" and not args.quick:
        raise SystemExit("benchmarks/gpu.py needs a GPU backend (jax[cuda]); found " + jax.default_backend())
    n, calls, augment_calls, repeats = (8, 3, 3, 2) if args.quick else (256, 30, 10, 5)
    torch, _ = _torch()
    if args.pallas_tile:
        from imgproc.filters import pallas as _pallas

        _pallas.TILE_ROWS, _pallas.TILE_COLS = (int(v) for v in args.pallas_tile.split("x"))
    groups, rows, failed = filter_benchmarks(n, calls, repeats) if "filters" in only else ([], [], [])
    for name, more in (("augment", augment_benchmarks), ("recipe", recipe_benchmarks)):
        if name in only:
            more_groups, more_rows = more(n, augment_calls, repeats)
            groups, rows = groups + more_groups, rows + more_rows
    if "morphology" in only:
        more_groups, more_rows = morphology_benchmarks(2 if args.quick else 8, calls, repeats,
                                                       side=256 if args.quick else 2048)
        groups, rows = groups + more_groups, rows + more_rows
    text = (
        f"## GPU: {jax.devices()[0].device_kind} (`make bench-gpu`, {datetime.date.today().isoformat()})\n\n"
        f"jax {jax.__version__}" + (f", torch {torch.__version__}" if torch else ", torch not installed")
        + f". Each row: calls issued back to back ({calls}; {augment_calls} for augmentation) and synchronised once,"
        f" median of {repeats} rounds after a warm-up call, the rows of a group in turns. Augmentation \"batch from"
        " device memory\": a jax.Array in and out, the output left on the device (as a training step uses it);"
        " \"batch from host memory\": NumPy in and NumPy out (imgproc returns the caller's array type), so the row"
        " includes the upload and the download into pageable host memory; \"via prefetch_to_device\": NumPy batches"
        " uploaded ahead in a thread while the calls before run, the output left on the device.\n\n"
        + (f"Pallas output tile: {_pallas_tile()}.\n\n")
        + "".join(f"Not timed (did not run on this device): {f}\n\n" for f in failed)
        + tables(groups, rows, heading="###") + "\n"
    )
    print(text)
    out = Path(args.out)
    out.write_text(text)
    save(out.with_suffix(".json"), groups, rows)
    print(f"wrote {out} and {out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
