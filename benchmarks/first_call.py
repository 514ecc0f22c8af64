"""The first call of the ImageNet training recipe in a fresh process: its wall time and the
XLA compilations it makes (JAX's compile events), on 8 decoded images of ImageNet sizes
given as a list. Run it twice with one IMGPROC_CACHE_DIR: the second process loads the
programs from the persistent compilation cache.

    IMGPROC_CACHE_DIR=$(mktemp -d) python benchmarks/first_call.py   # twice
"""

import time, json, sys
t0 = time.perf_counter()
import numpy as np, jax
from jax._src.dispatch import BACKEND_COMPILE_EVENT
seen = []
jax.monitoring.register_event_duration_secs_listener(lambda e, d, **k: seen.append(d) if e == BACKEND_COMPILE_EVENT else None)
import imgproc
rng = np.random.default_rng(0)
sizes = [(375, 500), (333, 500), (500, 375), (281, 500), (500, 333), (400, 300), (300, 451), (480, 360)]
images = [rng.integers(0, 256, s + (3,), dtype=np.uint8) for s in sizes]
r = imgproc.recipes.imagenet_train()
t1 = time.perf_counter()
out = r(images, np.arange(8), key=0, indices=np.arange(8), num_classes=1000)
np.asarray(out["images"])
t2 = time.perf_counter()
print(json.dumps({"first_call_s": round(t2 - t1, 2), "compilations": len(seen), "compile_s": round(sum(seen), 2), "import_s": round(t1 - t0, 2)}))
