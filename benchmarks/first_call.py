"""The first call of the ImageNet training recipe in a fresh process: its wall time and the
XLA compilations it makes (JAX's compile events), on 8 decoded images of ImageNet sizes
given as a list. Run it twice with one cache folder: the second process loads the
programs from the persistent compilation cache instead of compiling them.

    export IMGPROC_CACHE_DIR=$(mktemp -d)
    python benchmarks/first_call.py; python benchmarks/first_call.py
"""

import json
import time

t0 = time.perf_counter()

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax._src.dispatch import BACKEND_COMPILE_EVENT  # noqa: E402

import imgproc  # noqa: E402

SIZES = [(375, 500), (333, 500), (500, 375), (281, 500), (500, 333), (400, 300), (300, 451), (480, 360)]


def main():
    compiles = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, seconds, **_: compiles.append(seconds) if event == BACKEND_COMPILE_EVENT else None)
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, s + (3,), dtype=np.uint8) for s in SIZES]
    recipe = imgproc.recipes.imagenet_train()
    t1 = time.perf_counter()
    out = recipe(images, np.arange(len(images)), key=0, indices=np.arange(len(images)), num_classes=1000)
    np.asarray(out["images"])
    t2 = time.perf_counter()
    print(json.dumps({"first_call_s": round(t2 - t1, 2), "compilations": len(compiles),
                      "compile_s": round(sum(compiles), 2), "import_s": round(t1 - t0, 2)}))


if __name__ == "__main__":
    main()
