"""GPU comparison (`make bench-gpu`, on a machine with an NVIDIA GPU and torch/torchvision).

Writes ``benchmarks/RESULTS_GPU.md`` (``make bench`` copies it into ``RESULTS.md``) and prints
the same table. Everything is timed in one run, on one batch:

* **Gaussian blur** (σ = 1, 5×5 and σ = 3, 25×25) on a 256×224×224×3 float32 batch that
  lives on the device: imgproc's shifted-sum lowering (``method="separable"``, the CPU
  default), its single-pass ``method="direct"``, its ``lax.conv_general_dilated`` lowering
  (``method="conv"``, what ``"auto"`` picks on GPU) and torchvision's ``gaussian_blur``
  (NCHW). Each row gives its achieved bandwidth as a fraction of the device's measured copy
  bandwidth (``y = x + 0`` in JAX). The traffic counted is the ideal one of one blur: one
  read and one write of the batch.
* **The denoise preset** (5×5 Gaussian then 5×5 sharpen) on the same batch: imgproc's
  Pipeline against torchvision's blur followed by a depthwise ``conv2d`` with the sharpen
  kernel.
* **Augmentation**: the pipeline of ``benchmarks/augment.py`` (256 uint8 images 224×224×3)
  with each ``random_choice`` strategy, fed from host memory (as a loader does) and from
  device memory, to pick the GPU default.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _seconds(issue, sync, calls=30, repeats=5):
    """Seconds per call: ``calls`` calls issued back to back (asynchronously, as a training
    loop does), then one ``sync``; the median of ``repeats`` such rounds after two warm-up
    calls. Per-call synchronisation would add the launch latency (~0.1 ms) to every row."""
    sync(issue())
    sync(issue())
    rounds = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            out = issue()
        sync(out)
        rounds.append((time.perf_counter() - t) / calls)
    return statistics.median(rounds)


def _jax_seconds(issue, **kw):
    return _seconds(issue, lambda out: out.block_until_ready(), **kw)


def _torch():
    try:
        import torch
        import torchvision.transforms.v2.functional as TF

        return torch, TF
    except ImportError:
        return None, None


def filter_rows(n=256, h=224, w=224, c=3) -> list[dict]:
    import jax

    import imgproc

    x = jax.device_put(np.random.default_rng(0).random((n, h, w, c), dtype=np.float32))
    nbytes = 2 * x.size * 4
    copy = jax.jit(lambda a: a + 0)
    copy_s = _jax_seconds(lambda: copy(x))
    copy_bw = nbytes / copy_s
    group = f"Gaussian blur, {n}x{h}x{w}x{c} float32 on the device"
    rows = [{"group": group, "name": f"copy (x + 0): {copy_bw / 1e9:.0f} GB/s = 100%", "ms": copy_s * 1e3, "bw": 1.0}]

    def add(name, seconds):
        rows.append({"group": group, "name": name, "ms": seconds * 1e3, "bw": nbytes / seconds / copy_bw})

    torch, TF = _torch()
    torch_sync = None if torch is None else (lambda out: torch.cuda.synchronize())
    xt = None if torch is None else torch.from_numpy(np.array(x)).permute(0, 3, 1, 2).contiguous().cuda()
    for sigma, size in ((1.0, 5), (3.0, 25)):
        for method in ("separable", "direct", "conv", "auto"):
            f = jax.jit(lambda a, m=method, s=sigma, k=size: imgproc.gaussian_blur(a, s, size=k, method=m))
            add(f"imgproc method={method}, σ={sigma:g} ({size}×{size})", _jax_seconds(lambda: f(x)))
        if torch is not None:
            add(f"torchvision gaussian_blur (NCHW), σ={sigma:g} ({size}×{size})",
                _seconds(lambda size=size, sigma=sigma: TF.gaussian_blur(xt, [size, size], [sigma, sigma]), torch_sync))

    group = f"Denoise preset (5×5 Gaussian σ=1, then 5×5 sharpen), {n}x{h}x{w}x{c} float32 on the device"
    pipe = imgproc.presets.denoise()
    add("imgproc presets.denoise() Pipeline", _jax_seconds(lambda: pipe(x)))
    if torch is not None:
        sharp = torch.from_numpy(np.asarray(imgproc.kernels.sharpen(), np.float32)).cuda()
        weight = sharp.expand(c, 1, *sharp.shape).contiguous()

        def torch_denoise():
            y = TF.gaussian_blur(xt, [5, 5], [1.0, 1.0])
            y = torch.nn.functional.pad(y, (2, 2, 2, 2), mode="reflect")
            return torch.nn.functional.conv2d(y, weight, groups=c)

        add("torchvision gaussian_blur + depthwise conv2d (NCHW)", _seconds(torch_denoise, torch_sync))
    return rows


def augment_rows(n=256) -> list[dict]:
    import jax

    import imgproc
    from augment import STRATEGIES, imgproc_spec

    images = np.random.default_rng(0).integers(0, 256, (n, 224, 224, 3), dtype=np.uint8)
    on_device = jax.device_put(images)
    group = f"Augment {n} uint8 images 224x224x3 (pipeline of benchmarks/augment.py)"
    rows = []
    key = jax.random.key(0)
    for strategy in STRATEGIES:
        pipe = imgproc.Pipeline(imgproc_spec(strategy))
        default = " (default)" if strategy == imgproc.default_strategy() else ""
        for where, batch in (("host", images), ("device", on_device)):
            calls = iter(range(10**9))
            sec = _jax_seconds(lambda: pipe(batch, key=jax.random.fold_in(key, next(calls))), calls=10)
            rows.append({"group": group, "name": f"imgproc strategy={strategy}{default}, batch from {where} memory",
                         "ms": sec * 1e3, "images_per_s": n / sec})
    return rows


def markdown(rows, header: str) -> str:
    lines = [header, ""]
    group = None
    for r in rows:
        if r["group"] != group:
            group = r["group"]
            extra = "images/s" if "images_per_s" in r else "of copy bandwidth"
            lines += ["", f"### {group}", "", f"| implementation | median ms | {extra} |", "|---|---:|---:|"]
        value = f"{r['images_per_s']:.0f}" if "images_per_s" in r else f"{r['bw']:.0%}"
        lines.append(f"| {r['name']} | {r['ms']:.2f} | {value} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(HERE / "RESULTS_GPU.md"))
    args = parser.parse_args()
    import datetime

    import jax

    if jax.default_backend() != "gpu":
        raise SystemExit("benchmarks/gpu.py needs a GPU backend (jax[cuda]); found " + jax.default_backend())
    torch, _ = _torch()
    device = jax.devices()[0].device_kind
    header = (
        f"## GPU: {device} (`make bench-gpu`, {datetime.date.today().isoformat()})\n\n"
        f"jax {jax.__version__}" + (f", torch {torch.__version__}" if torch else ", torch not installed")
        + ". Each row: calls issued back to back (30; 10 for augmentation) and synchronised once,"
        " median of 5 rounds after two warm-up calls. Augmentation output stays on the device"
        " (as a training step would use it); \"batch from host memory\" includes the upload."
    )
    rows = filter_rows() + augment_rows()
    text = markdown(rows, header)
    print(text)
    Path(args.out).write_text(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
