"""Issue 15 items 1 and 3: where an eager Gaussian call on NumPy input spends its time, each
piece timed alone in one process, in turns (benchmarks/harness.py). Run it plain, with --reuse
(imgproc.reuse_host_memory() first), and under GLIBC_TUNABLES=glibc.malloc.hugetlb=1."""
import sys, time
import numpy as np
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from harness import Case, Group, print_group, time_group
import cv2, jax, jax.numpy as jnp
import imgproc
from imgproc.core import array_type
from imgproc.core.images import check_finite, host_aligned
from imgproc.filters import convolution

if "--reuse" in sys.argv:
    imgproc.reuse_host_memory()
cv2.setNumThreads(2)
x = np.random.default_rng(0).random((2048, 2048, 3), dtype=np.float32)
xa = host_aligned(x)
dev = jnp.asarray(x)
f = jax.jit(lambda a: imgproc.gaussian_blur(a, 1.0, size=5))
# the stage compiled with its weights as arguments (the library keeps no such program since
# 2026-11-27: traced values come only from a transformation around the call)
_args_program = jax.jit(convolution._stage_fn, static_argnames=("body", "layout", "static", "in_place", "cast_after"))
args_stage = lambda a: _args_program(a, {"kernel": None, "terms": tuple((np.asarray(c), np.asarray(r)) for c, r in [(imgproc.kernels.gaussian_1d(1.0, size=5),) * 2]), "cval": jnp.float32(0)}, body=convolution.correlate_body, layout="HWC", static=(("method", "separable"), ("mode", "reflect")), in_place=False)

def copy_out():  # the old hand-over: a writable copy of the result
    return np.array(f(dev))

cases = [
    Case("eager_numpy", "gaussian_blur(NumPy) eager: check + aligned copy + constants + view", lambda: imgproc.gaussian_blur(x, 1.0, size=5)),
    Case("eager_numpy_aligned", "same, input already 64-byte aligned (no copy)", lambda: imgproc.gaussian_blur(xa, 1.0, size=5)),
    Case("eager_jax", "gaussian_blur(jax.Array) eager", lambda: imgproc.gaussian_blur(dev, 1.0, size=5)),
    Case("jit", "jit, device array in and out", lambda: f(dev)),
    Case("jit_copy_out", "jit + writable NumPy copy of the result (the hand-over before)", copy_out),
    Case("weights_as_args", "eager with the weights as arguments (before)", lambda: args_stage(dev)),
    Case("check_finite", "check_finite alone (min and max)", lambda: check_finite(x)),
    Case("host_aligned", "aligned copy alone (into kept staging memory)", lambda: host_aligned(x)),
    Case("host_aligned_checked", "aligned copy and check in one chunked pass, both cores (what the call does)",
         lambda: host_aligned(x, check=True)),
    Case("opencv", "cv2.GaussianBlur", lambda: cv2.GaussianBlur(x, (5, 5), 1.0, borderType=cv2.BORDER_REFLECT)),
]
g = Group("eager_costs", "Eager Gaussian sigma=1 5x5 on 2048x2048x3 float32" + (" (reuse_host_memory)" if "--reuse" in sys.argv else ""), "opencv")
print_group(g, time_group(g.id, cases, 9))
