"""XLA:GPU's compile time of every registered op, for an H200, on a machine without a GPU.

JAX compiles for a CUDA device it does not have when its CUDA plugin is installed and
given the device's description (``jax.experimental.topologies``). Programs are traced with
the library's GPU plans (``jax.default_backend()`` reports ``"gpu"``, as tests/backends.py
does) and compiled, not run: this finds programs that XLA:GPU takes long to compile (a
resize's unrolled taps took 25 s; benchmarks/NOTES.md, "GPU") without a device. XLA's
version is the installed jaxlib's, which may differ from a GPU machine's.

Set up once, in a scratch virtual environment (not the project's: the plugin makes JAX
look for CUDA), with the jax version ``V`` to check: the GPU machine's (0.11.2 on
2026-11-30, which needs Python 3.12: pyenv has ``/root/.pyenv/versions/3.12.1/bin/python``
here) reproduces its compile times; this machine's 0.10.2 did not show the blurs' fused
weights (benchmarks/NOTES.md, "GPU")::

    python3.12 -m venv /tmp/gpuenv
    /tmp/gpuenv/bin/pip install "jax==$V" "jaxlib==$V" "jax-cuda13-plugin==$V" "jax-cuda13-pjrt==$V" \\
        numpy scipy pillow absl-py
    /tmp/gpuenv/bin/pip install --no-deps -e .
    JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 /tmp/gpuenv/bin/python benchmarks/gpu_compile_offline.py --sizes 400,600

(no NVIDIA libraries or driver: ``JAX_SKIP_CUDA_CONSTRAINTS_CHECK`` skips the plugin's
check for them). Prints each op's compile time as it goes, then the slowest, for a
2×S×S×3 uint8 batch with tests/op_examples.py's options; random ops take their key as an
argument, as an eager call does. ``--ops a,b`` compiles only those."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# An H200's description as XLA:GPU reads it (compute capability 9.0, 132 multiprocessors).
H200 = """
gpu_device_info {
  threads_per_block_limit: 1024 threads_per_warp: 32 shared_memory_per_block: 49152
  shared_memory_per_core: 233472 threads_per_core_limit: 2048 core_count: 132
  fpus_per_core: 128 block_dim_limit_x: 2147483647 block_dim_limit_y: 65535
  block_dim_limit_z: 65535 memory_bandwidth: 4800000000000 l2_cache_size: 52428800
  clock_rate_ghz: 1.98 device_memory_size: 150000000000 shared_memory_per_block_optin: 232448
  cuda_compute_capability { major: 9 } registers_per_core_limit: 65536 registers_per_block_limit: 65536
}
platform_name: "CUDA"
dnn_version_info { major: 9 minor: 19 }
runtime_version { major: 13 minor: 0 patch: 0 }
device_description_str: "NVIDIA H200"
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="400", help="image sides S, comma-separated")
    ap.add_argument("--ops", default="", help="ops to compile, comma-separated (default: all registered)")
    args = ap.parse_args()

    import jax
    import jax.numpy as jnp
    from jax.experimental import topologies

    topology = topologies.get_topology_desc(platform="cuda", target_config=H200, topology="1x1x1")
    mesh = topologies.make_mesh(topology, (1,), ("x",))
    on_gpu = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    jax.default_backend = lambda: "gpu"  # the library's GPU plans

    import imgproc

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from op_examples import EXAMPLE_OPTIONS

    names = [n for n in args.ops.split(",") if n] or sorted(imgproc.registered_ops())
    unknown = sorted(set(names) - set(imgproc.registered_ops()))
    if unknown:
        ap.error(f"--ops: {', '.join(unknown)} not registered; `imgproc ops` lists them")
    rows = []
    for side in (int(s) for s in args.sizes.split(",")):
        image = jax.ShapeDtypeStruct((2, side, side, 3), jnp.uint8, sharding=on_gpu)
        key = jax.ShapeDtypeStruct((2,), jnp.uint32, sharding=on_gpu)
        for name in names:
            info = imgproc.op_info(name)
            options = dict(EXAMPLE_OPTIONS.get(name, {}))
            options = info.parse(options) if info.parse else options
            op = getattr(imgproc, name)
            if info.random:
                fn = lambda x, k, op=op, o=options: op(jax.random.wrap_key_data(k, impl="threefry2x32"), x, **o)
                operands = (image, key)
            else:
                fn = lambda x, op=op, o=options: op(x, **o)
                operands = (image,)
            start = time.perf_counter()
            try:
                jax.jit(fn).lower(*operands).compile()
                failed = ""
            except Exception as e:  # reported, and the sweep goes on
                failed = "  failed: " + (str(e).splitlines() or [type(e).__name__])[0][:120]
            seconds = time.perf_counter() - start
            rows.append((seconds, side, name))
            print(f"{seconds:7.2f} s  {side}  {name}{failed}", flush=True)
    print("slowest:", ", ".join(f"{name} at {side}: {s:.1f} s" for s, side, name in sorted(rows)[-8:][::-1]))


if __name__ == "__main__":
    main()
