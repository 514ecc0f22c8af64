"""GPU comparison (`make bench-gpu`, on a machine with an NVIDIA GPU and torch/torchvision).

Separable Gaussian blur (sigma 1, 5x5 and sigma 3, 25x25) on a 256x224x224x3 float32 batch:
imgproc's shifted-sum lowering (`method="separable"`), its `lax.conv_general_dilated`
lowering (`method="conv"`, the GPU default) and torchvision's `GaussianBlur` (NCHW), timed
in one run, plus the achieved memory bandwidth of each as a fraction of the device's
measured copy bandwidth (`y = x + 0` in JAX: one read and one write).

Bandwidth counts the ideal traffic of one blur: one read and one write of the batch.
"""

from __future__ import annotations

import statistics
import time

import numpy as np


def _median_seconds(fn, repeats=20):
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def run(n=256, h=224, w=224, c=3) -> list[dict]:
    import jax
    import jax.numpy as jnp

    import imgproc

    if jax.default_backend() != "gpu":
        raise SystemExit("benchmarks/gpu.py needs a GPU backend (jax[cuda]); found " + jax.default_backend())
    x = jax.device_put(np.random.default_rng(0).random((n, h, w, c), dtype=np.float32))
    nbytes = 2 * x.size * 4
    copy = jax.jit(lambda a: a + 0)
    copy_s = _median_seconds(lambda: copy(x).block_until_ready())
    copy_bw = nbytes / copy_s
    group = f"GPU ({jax.devices()[0].device_kind}): Gaussian on {n}x{h}x{w}x{c} float32"
    rows = [{"group": group, "name": f"copy bandwidth (x + 0): {copy_bw / 1e9:.0f} GB/s", "ms": copy_s * 1e3}]
    for sigma, size in ((1.0, 5), (3.0, 25)):
        for method in ("separable", "conv"):
            f = jax.jit(lambda a, m=method, s=sigma, k=size: imgproc.gaussian_blur(a, s, size=k, method=m))
            sec = _median_seconds(lambda: f(x).block_until_ready())
            rows.append({"group": group, "name": f"imgproc method={method}, sigma={sigma:g} ({size}x{size}); "
                         f"{nbytes / sec / copy_bw:.0%} of copy bandwidth", "ms": sec * 1e3})
        try:
            import torch
            import torchvision.transforms.v2.functional as TF

            xt = torch.from_numpy(np.asarray(x)).permute(0, 3, 1, 2).contiguous().cuda()

            def torch_blur():
                TF.gaussian_blur(xt, [size, size], [sigma, sigma])
                torch.cuda.synchronize()

            sec = _median_seconds(torch_blur)
            rows.append({"group": group, "name": f"torchvision gaussian_blur (NCHW), sigma={sigma:g}; "
                         f"{nbytes / sec / copy_bw:.0%} of copy bandwidth", "ms": sec * 1e3})
        except ImportError:
            pass
    return rows


if __name__ == "__main__":
    for r in run():
        print(f"{r['name']:<80} {r['ms']:8.2f} ms")
