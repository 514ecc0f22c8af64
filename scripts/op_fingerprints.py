"""Fingerprints of every registered op's output on fixed inputs, for a change that must not
change behaviour (a refactor): run it before and after, and compare the two JSON files.

    python scripts/op_fingerprints.py > before.json
    ... change ...
    python scripts/op_fingerprints.py --compare before.json

Each op runs as a one-stage Pipeline (with a key, so random ops draw) and, where it is a
public function, called directly, on a uint8 and a float32 batch; an op that needs an option
gets it from ``REQUIRED``. A fingerprint is the SHA-256 of the result's dtype, shape and
bytes, or the error's type and message.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import sys

import jax
import numpy as np

import imgproc

REQUIRED = {
    "bilateral": {"sigma_color": 20.0, "sigma_spatial": 2.0},
    "correlate": {"kernel": [[0.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.0, 1.0, 0.0]]},
    "convolve": {"kernel": [[0.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.0, 1.0, 0.0]]},
    "random_choice": {"ops": [{"op": "gaussian_blur", "sigma": 1.0}, {"op": "random_hue", "max_delta": 0.2}]},
    "random_apply": {"stage": {"op": "random_brightness", "max_delta": 0.3}},
    "box_blur": {"size": 5},
    "gaussian_blur": {"sigma": 1.5},
    "crop": {"top": 2, "left": 3, "size": [12, 14]},
    "resized_crop": {"top": 2, "left": 3, "height": 12, "width": 14, "size": [10, 12]},
    "random_crop": {"size": [12, 14]},
    "center_crop": {"size": [12, 14]},
    "random_resized_crop": {"size": [12, 14]},
    "resize": {"size": [20, 18]},
    "resize_shorter": {"size": 20},
    "letterbox": {"size": [20, 20]},
    "pad": {"padding": 3},
    "rotate": {"angle": 17.0},
    "translate": {"dx": 2.5, "dy": -1.0},
    "affine": {"angle": 10.0, "translate": [1.0, 2.0], "scale": 1.1, "shear": [5.0, 0.0]},
    "perspective": {"startpoints": [[0, 0], [31, 0], [31, 23], [0, 23]],
                    "endpoints": [[1, 2], [30, 0], [29, 22], [0, 21]]},
    "adjust_brightness": {"delta": 0.1},
    "adjust_contrast": {"factor": 1.3},
    "adjust_gamma": {"gamma": 0.8},
    "adjust_hue": {"delta": 0.1},
    "adjust_saturation": {"factor": 1.4},
    "adjust_sharpness": {"factor": 1.5},
    "posterize": {"bits": 3},
    "solarize": {"threshold": 0.5},
    "erase": {"top": 2, "left": 3, "height": 5, "width": 6},
    "normalize": {"mean": [0.4, 0.5, 0.6], "std": [0.2, 0.25, 0.3]},
    "jpeg_compression": {"quality": 40},
    "motion_blur": {"length": 5, "angle": 30.0},
    "median_blur": {"size": 3},
}


def _digest(x) -> str:
    a = np.asarray(x)
    h = hashlib.sha256(f"{a.dtype}{a.shape}".encode())
    h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _run(fn):
    try:
        return _digest(fn())
    except Exception as e:  # noqa: BLE001 - the refusal is part of the behaviour
        return f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"


def fingerprints() -> dict:
    rng = np.random.default_rng(0)
    images = {
        "uint8": rng.integers(0, 256, (2, 24, 32, 3), dtype=np.uint8),
        "float32": rng.random((2, 24, 32, 3), dtype=np.float32),
    }
    key = jax.random.key(7)
    out = {}
    for name in imgproc.registered_ops():
        opts = REQUIRED.get(name, {})
        fn = getattr(imgproc, name, None)
        for dtype, x in images.items():
            if name == "random_rot90":  # square images only
                x = x[:, :, :24]
            out[f"{name}/pipeline/{dtype}"] = _run(lambda: imgproc.Pipeline([{"op": name, **opts}])(x, key=key))
            if callable(fn):
                if next(iter(inspect.signature(fn).parameters)) == "key":
                    out[f"{name}/direct/{dtype}"] = _run(lambda: fn(key, x, **opts))
                else:
                    out[f"{name}/direct/{dtype}"] = _run(lambda: fn(x, **opts))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", help="a JSON file written before the change")
    args = parser.parse_args()
    now = fingerprints()
    if not args.compare:
        json.dump(now, sys.stdout, indent=1, sort_keys=True)
        return 0
    before = json.load(open(args.compare))
    changed = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
    for k in changed:
        print(f"{k}: {before.get(k)} -> {now.get(k)}")
    print(f"{len(before)} before, {len(now)} now, {len(changed)} differ")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
