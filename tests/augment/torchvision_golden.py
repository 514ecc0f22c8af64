"""The golden outputs of torchvision 0.29 and kornia 0.9 (``tests/golden/``, written by
``tests/golden/make_torchvision.py`` in a venv with torch) and imgproc's equivalent of each
case: what the parity tests compare (no torch at test time)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import jax.numpy as jnp
import numpy as np

import imgproc
from imgproc.augment import policies as P
from imgproc.augment.blur import motion_kernel

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
METHOD = {"bilinear": "linear", "bicubic": "cubic", "nearest-exact": "nearest", "lanczos": "lanczos3"}


@lru_cache(maxsize=1)
def golden():
    """``(cases, inputs, outputs)``: the case list and two dicts of arrays."""
    z = np.load(GOLDEN / "torchvision_ops.npz")
    table = json.loads(bytes(z["cases.json"]).decode())
    inputs = {k.split("/", 1)[1]: z[k] for k in z.files if k.startswith("input/")}
    outputs = {k.split("/", 1)[1]: z[k] for k in z.files if k.startswith("case/")}
    return table["cases"], inputs, outputs


@lru_cache(maxsize=1)
def stats():
    return json.loads((GOLDEN / "torchvision_stats.json").read_text())


def cases(op=None):
    return [c for c in golden()[0] if op is None or c["op"] == op]


def _fill(value, dtype):
    if value is None:
        return 0.0
    return value * 255.0 if dtype == np.uint8 else value


def ours(c):
    """imgproc's result for case ``c`` (NumPy, HWC, the input's dtype)."""
    a = c["args"]
    if c["op"] == "kornia_motion_kernel":
        return np.asarray(motion_kernel(a["size"], a["angle"]))
    x = golden()[1][c["input"]]
    op = c["op"]
    if op in ("resize", "resize_pil"):
        method = METHOD[a["interpolation"]]
        aa = a.get("antialias", True)
        if isinstance(a["size"], int):
            return imgproc.resize_shorter(x, a["size"], max_size=a.get("max_size"), method=method, antialias=aa)
        return imgproc.resize(x, tuple(a["size"]), method=method, antialias=aa)
    if op == "resized_crop":
        return imgproc.resized_crop(x, a["top"], a["left"], a["height"], a["width"], size=tuple(a["size"]),
                                    antialias=a["antialias"])
    if op == "affine":
        return imgproc.affine(x, angle=a["angle"], translate=tuple(a["translate"]), scale=a["scale"],
                              shear=a["shear"], interpolation=a["interpolation"], cval=_fill(a["fill"], x.dtype))
    if op == "rotate":  # F.rotate turns counter-clockwise, imgproc.affine clockwise (as F.affine)
        return imgproc.affine(x, angle=-a["angle"], interpolation=a["interpolation"], cval=_fill(a["fill"], x.dtype))
    if op == "equalize":
        return imgproc.equalize(x)
    if op == "invert":
        return imgproc.invert(x)
    if op == "autocontrast":
        return imgproc.autocontrast(x)
    if op == "posterize":
        return imgproc.posterize(x, a["bits"])
    if op == "solarize":
        return imgproc.solarize(x, a["threshold"] * (255.0 if x.dtype == np.uint8 else 1.0))
    if op == "adjust_sharpness":
        return imgproc.adjust_sharpness(x, a["factor"])
    if op == "policy_op":
        m = 255.0 if x.dtype == np.uint8 else 1.0
        y = P.op_fn(a["name"], jnp.asarray(x, jnp.float32), jnp.float32(a["magnitude"]), m,
                    jnp.float32(_fill(a["fill"], x.dtype)), interpolation=a["interpolation"])
        y = np.asarray(y)
        return np.clip(np.round(y), 0, 255).astype(np.uint8) if x.dtype == np.uint8 else y
    raise ValueError(op)


def difference(c):
    """``(max |ours - theirs|, fraction of values more than one level apart (uint8) or
    1e-5 apart (float))``."""
    want = golden()[2][c["id"]]
    got = np.asarray(ours(c))
    assert got.shape == want.shape, (c["id"], got.shape, want.shape)
    d = np.abs(got.astype(np.float64) - want.astype(np.float64))
    tol = 1.0 if want.dtype == np.uint8 else 1e-5
    return float(d.max()), float((d > tol).mean())
