"""Pipelines on a batch split over 4 CPU devices against the same batch on one device.

Runs in its own process with ``--xla_force_host_platform_device_count=4`` (set here before
JAX starts). The 4 "devices" are XLA:CPU devices sharing this machine's cores, so the
target is only "no worse than one device" (no gather, no exchange); on 4 real
accelerators each device does a quarter of the work. Rows, timed in turns by the harness
on device-resident inputs:

* ``one_device``: the batch on device 0 (``jax.device_put(x, jax.devices()[0])``);
* ``sharded``: ``imgproc.shard_batch(x)`` (4 devices; one ``shard_map`` program);
* ``jit_gspmd``: the sharded batch through ``jax.jit(lambda a: pipe(a))``: inside a jit
  the pipeline sees a tracer and XLA's partitioner places the work (what every call did
  before the split was kept); its compiled program's collectives are counted.

    python benchmarks/sharding.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import re

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402

import imgproc  # noqa: E402
from harness import Case, Group, print_group, time_group  # noqa: E402

COLLECTIVES = re.compile(r"all-gather|all-reduce|collective-permute|all-to-all|reduce-scatter")

PIPELINES = {
    "denoise": (imgproc.presets.denoise_spec(), False),
    "augment": ([{"op": "random_flip_left_right"}, {"op": "random_rotate", "max_degrees": 15},
                 {"op": "random_brightness", "max_delta": 0.2}, {"op": "random_contrast", "lower": 0.8, "upper": 1.2}],
                True),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a smaller batch, fewer repeats")
    args = parser.parse_args()
    n, side, repeats = (16, 64, 3) if args.quick else (32, 256, 9)
    assert jax.device_count() == 4, jax.devices()
    x = np.random.default_rng(0).integers(0, 256, (n, side, side, 3)).astype(np.uint8)
    one = jax.device_put(x, jax.devices()[0])
    sharded = imgproc.shard_batch(x)
    key = jax.random.key(0)
    print(f"batch {x.shape} uint8, {jax.device_count()} CPU devices on {os.cpu_count()} cores, {repeats} repeats")
    for name, (spec, random) in PIPELINES.items():
        pipe = imgproc.Pipeline(spec)
        kw = {"key": key} if random else {}
        jitted = jax.jit(lambda a, k=None, pipe=pipe, random=random: pipe(a, key=k) if random else pipe(a))
        jit_args = (key,) if random else ()
        gathers = COLLECTIVES.findall(jitted.lower(sharded, *jit_args).compile().as_text())
        np.testing.assert_array_equal(np.asarray(pipe(sharded, **kw)), np.asarray(pipe(one, **kw)))
        group = f"sharding_{name}"
        rows = time_group(group, [
            Case("one_device", "1 device", lambda: pipe(one, **kw), images=n),
            Case("sharded", "4 devices (imgproc.shard_batch)", lambda: pipe(sharded, **kw), images=n),
            Case("jit_gspmd", f"4 devices, jax.jit(pipe) ({len(gathers)} collectives)",
                 lambda: jitted(sharded, *jit_args), images=n),
        ], repeats)
        print_group(Group(group, f"{name}: {n} images {side}x{side}x3 uint8"), rows)


if __name__ == "__main__":
    main()
