"""Write torchvision's (and kornia's) outputs for imgproc's parity tests: run by hand, in a
virtual environment that has torch, torchvision, kornia, numpy and pillow (none of them is a
test dependency of imgproc; the tests read only the files written here)::

    python3 -m venv /tmp/tvenv
    /tmp/tvenv/bin/pip install torch torchvision kornia numpy pillow
    /tmp/tvenv/bin/python tests/golden/make_torchvision.py      # from the repository root

It writes, next to itself:

* ``torchvision_ops.npz``: the inputs (``input/<name>``, HWC), one output per case
  (``case/<id>``, HWC, the input's dtype) and ``cases.json`` (as bytes): for each case its
  ``id``, ``op`` (torchvision's function, or kornia's), ``input`` and ``args``. The tests map
  each op to imgproc's equivalent (tests/augment/test_torchvision_parity.py).
* ``torchvision_stats.json``: the policies' magnitude tables and AutoAugment's
  sub-policies, and statistics of the random draws (RandomResizedCrop's boxes, MixUp's and
  CutMix's ``lam``, AugMix's mixing weight) over many draws, each with the tolerance the
  test applies to imgproc's draws of the same size.

The cases follow torchvision's own tests (``test/test_transforms_v2.py``: TestResize,
TestAffine, TestRotate, TestResizedCrop, TestEqualize, the AutoAugment family,
TestCutMixMixUp) on small images, plus the cases issue 44 found.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import PIL.Image
import torch
import torchvision
import torchvision.transforms.v2 as T
import torchvision.transforms.v2.functional as F
from torchvision import tv_tensors

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
I = T.InterpolationMode
INTERP = {"bilinear": I.BILINEAR, "bicubic": I.BICUBIC, "nearest": I.NEAREST, "nearest-exact": I.NEAREST_EXACT,
          "lanczos": I.LANCZOS}

torch.manual_seed(0)
torch.set_num_threads(1)


# --------------------------------------------------------------------------- inputs (HWC)


def _inputs():
    rng = np.random.default_rng(44)
    photo = np.asarray(PIL.Image.open(ROOT / "sample_images" / "chelsea.jpg").convert("RGB"))
    photo = photo[110:137, 180:220].copy()  # 27 x 40: H - W odd, a quarter turn ties every sample
    noise = rng.integers(0, 256, (13, 20, 3), dtype=np.uint8)  # H - W odd too
    tv = rng.integers(0, 256, (17, 11, 3), dtype=np.uint8)  # torchvision's make_image() size
    small = photo[5:21, 10:31].copy()  # 16 x 21, H - W odd
    inputs = {"photo_u8": photo, "noise_u8": noise, "tv_u8": tv, "small_u8": small,
              "photo_f32": photo.astype(np.float32) / np.float32(255), "noise_f32": noise.astype(np.float32) / np.float32(255),
              "small_f32": small.astype(np.float32) / np.float32(255),
              "tv_f32": tv.astype(np.float32) / np.float32(255),
              "offgrid_f32": rng.random((13, 20, 3), dtype=np.float32),
              "issue_eq_f32": np.array([[0.1, 0.5], [0.5, 0.9]], np.float32)[..., None],
              "issue_box_f32": np.pad(np.ones((4, 1, 1), np.float32), ((0, 0), (0, 5), (0, 0)))}
    for low, high in ((0, 64), (64, 192), (128, 255)):  # TestEqualize's ranges
        inputs[f"eq{low}_{high}_u8"] = rng.integers(low, high + 1, (17, 11, 3), dtype=np.uint8)
    return inputs


def _chw(x):
    return torch.from_numpy(np.ascontiguousarray(np.moveaxis(x, -1, 0)))


def _hwc(t):
    return np.ascontiguousarray(np.moveaxis(t.numpy(), 0, -1))


# --------------------------------------------------------------------------- cases


CASES = []


def case(cid, op, inp, **args):
    CASES.append({"id": cid, "op": op, "input": inp, "args": args})


def _resize_cases():
    sizes = {"noise": [(7, 9), (19, 29), (9, 33)], "photo": [(12, 17), (33, 47), (20, 44)]}
    for name, outs in sizes.items():
        for dt in (("u8", "f32") if name == "noise" else ("u8",)):
            for out in outs:
                for interp, aas in (("bilinear", (True, False)), ("bicubic", (True, False)), ("nearest-exact", (False,))):
                    for aa in aas:
                        case(f"resize-{name}_{dt}-{out[0]}x{out[1]}-{interp}-aa{int(aa)}", "resize", f"{name}_{dt}",
                             size=list(out), interpolation=interp, antialias=aa)
        for out in outs:  # lanczos: torchvision resizes PIL images only (Pillow's LANCZOS)
            case(f"resize_pil-{name}_u8-{out[0]}x{out[1]}-lanczos", "resize_pil", f"{name}_u8", size=list(out),
                 interpolation="lanczos")
            case(f"resize_pil-{name}_u8-{out[0]}x{out[1]}-bicubic", "resize_pil", f"{name}_u8", size=list(out),
                 interpolation="bicubic")
    # TestResize: INPUT_SIZE (17, 11), sizes 17 (the shorter side), [12, 13], max_size = size + 1
    for dt in ("u8", "f32"):
        for interp in ("bilinear", "bicubic", "nearest-exact"):
            for size, max_size in ((17, None), (17, 18), ([12, 13], None)):
                tag = f"{size}" if isinstance(size, int) else f"{size[0]}x{size[1]}"
                case(f"resize-tv_{dt}-{tag}-max{max_size}-{interp}", "resize", f"tv_{dt}", size=size,
                     max_size=max_size, interpolation=interp, antialias=True)


def _resized_crop_cases():
    case("resized_crop-issue", "resized_crop", "issue_box_f32", top=0, left=1, height=4, width=4, size=[4, 8],
         interpolation="bilinear", antialias=True)
    for dt in ("u8", "f32"):  # TestResizedCrop: (17, 11), top 2 left 2 height 5 width 7 -> (19, 32)
        for aa in (True, False):
            case(f"resized_crop-tv_{dt}-aa{int(aa)}", "resized_crop", f"tv_{dt}", top=2, left=2, height=5, width=7,
                 size=[19, 32], interpolation="bilinear", antialias=aa)
        for box, out in (((3, 5, 20, 30), (16, 16)), ((0, 0, 27, 40), (24, 24)), ((10, 20, 15, 15), (22, 22)),
                         ((1, 33, 26, 7), (11, 5))):
            for aa in ((True, False) if dt == "u8" else (True,)):
                case(f"resized_crop-photo_{dt}-{'_'.join(map(str, box))}-aa{int(aa)}", "resized_crop", f"photo_{dt}",
                     top=box[0], left=box[1], height=box[2], width=box[3], size=list(out), interpolation="bilinear",
                     antialias=aa)


def _affine_cases():
    # TestAffine's correctness values (its _CORRECTNESS_AFFINE_KWARGS, centre None)
    for dt in ("u8", "f32"):
        for interp in ("nearest", "bilinear"):
            for translate in ([6.3, -0.6], [1, -3]):
                for shear in (35.6, [5.4, 21.8], [-47, 51]):
                    case(f"affine-tv_{dt}-{interp}-t{translate[0]}_{translate[1]}-s{shear}", "affine", f"tv_{dt}",
                         angle=-10.9, translate=translate, scale=0.5, shear=shear, interpolation=interp, fill=None)
            case(f"affine-tv_{dt}-{interp}-fill", "affine", f"tv_{dt}", angle=30.0, translate=[2, 1], scale=0.8,
                 shear=[10.0, 0.0], interpolation=interp, fill=0.5)
    # quarter turns of images whose H - W is odd: every sample an exact half-pixel tie
    for name in ("photo", "noise"):
        for angle in (90.0, -90.0, 180.0, 270.0):
            case(f"affine-{name}_u8-nearest-a{angle}", "affine", f"{name}_u8", angle=angle, translate=[0, 0], scale=1.0,
                 shear=[0.0, 0.0], interpolation="nearest", fill=None)
    # TestRotate (angle -10.9, centre None) and rotations of the policies' range
    for dt in ("u8", "f32"):
        for interp in ("nearest", "bilinear"):
            for angle in (-10.9, 45.0, 90.0, -90.0, 135.0):
                if dt == "f32" and interp == "nearest" and angle not in (90.0, -90.0):
                    continue
                case(f"rotate-noise_{dt}-{interp}-a{angle}", "rotate", f"noise_{dt}", angle=angle, interpolation=interp,
                     fill=None)


def _intensity_cases():
    for inp in ("noise_u8", "photo_u8", "tv_u8", "eq0_64_u8", "eq64_192_u8", "eq128_255_u8", "photo_f32", "offgrid_f32",
                "issue_eq_f32"):
        case(f"equalize-{inp}", "equalize", inp)
    for inp in ("small_u8", "small_f32"):
        case(f"invert-{inp}", "invert", inp)
        case(f"autocontrast-{inp}", "autocontrast", inp)
        for bits in (1, 4, 7):
            if inp.endswith("u8"):
                case(f"posterize-{inp}-{bits}", "posterize", inp, bits=bits)
        for thr in (0.0, 0.5, 0.9):
            case(f"solarize-{inp}-{thr}", "solarize", inp, threshold=thr)
        for factor in (0.5, 2.0):
            case(f"adjust_sharpness-{inp}-{factor}", "adjust_sharpness", inp, factor=factor)


POLICY_OPS = [
    ("ShearX", (0.3, -0.99)), ("ShearY", (0.5, -0.2)), ("TranslateX", (14.2, -32.0)), ("TranslateY", (9.6, -13.0)),
    ("Rotate", (30.0, -135.0, 90.0, -90.0)), ("Brightness", (0.5, -0.5)), ("Color", (0.5, -0.9)),
    ("Contrast", (0.5, -0.5)), ("Sharpness", (0.5, -0.9)), ("Posterize", (4.0, 2.0)), ("Solarize", (0.5,)),
    ("AutoContrast", (0.0,)), ("Equalize", (0.0,)), ("Invert", (0.0,)),
]
GEOMETRIC = ("ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate")


def _policy_op_cases():
    for dt in ("u8", "f32"):
        for name, mags in POLICY_OPS:
            for mag in (mags if dt == "u8" else mags[:1]):  # float: one magnitude per op (file size)
                mag = float(np.float32(mag))  # a policy's magnitudes come from float32 tables (torch.linspace)
                for interp in (("nearest", "bilinear") if name in GEOMETRIC else ("nearest",)):
                    case(f"policy_op-small_{dt}-{name}-{mag}-{interp}", "policy_op", f"small_{dt}", name=name,
                         magnitude=mag, interpolation=interp, fill=None)
        case(f"policy_op-small_{dt}-Rotate-30-fill", "policy_op", f"small_{dt}", name="Rotate", magnitude=30.0,
             interpolation="nearest", fill=0.5)


def _kornia_cases():
    for size in (3, 5, 7, 9):
        for angle in (0.0, 30.0, 45.0, 90.0, 135.0):
            case(f"motion_kernel-{size}-{angle}", "kornia_motion_kernel", None, size=size, angle=angle)


# --------------------------------------------------------------------------- running torchvision


def _fill(value, dtype):
    if value is None:
        return None
    return value * 255 if dtype == torch.uint8 else value


def run(c, inputs):
    a = c["args"]
    if c["op"] == "kornia_motion_kernel":
        import kornia
        k = kornia.filters.get_motion_kernel2d(a["size"], float(a["angle"]), 0.0, mode="bilinear")
        return k[0].numpy().astype(np.float32)
    x = _chw(inputs[c["input"]])
    op = c["op"]
    if op == "resize":
        y = F.resize(x, a["size"], interpolation=INTERP[a["interpolation"]], max_size=a.get("max_size"),
                     antialias=a["antialias"])
    elif op == "resize_pil":
        pil = PIL.Image.fromarray(inputs[c["input"]])
        return np.asarray(F.resize(pil, a["size"], interpolation=INTERP[a["interpolation"]]))
    elif op == "resized_crop":
        y = F.resized_crop(x, a["top"], a["left"], a["height"], a["width"], a["size"],
                           interpolation=INTERP[a["interpolation"]], antialias=a["antialias"])
    elif op == "affine":
        y = F.affine(x, angle=a["angle"], translate=a["translate"], scale=a["scale"], shear=a["shear"],
                     interpolation=INTERP[a["interpolation"]], fill=_fill(a["fill"], x.dtype))
    elif op == "rotate":
        y = F.rotate(x, a["angle"], interpolation=INTERP[a["interpolation"]], fill=_fill(a["fill"], x.dtype))
    elif op == "equalize":
        y = F.equalize(x)
    elif op == "invert":
        y = F.invert(x)
    elif op == "autocontrast":
        y = F.autocontrast(x)
    elif op == "posterize":
        y = F.posterize(x, a["bits"])
    elif op == "solarize":
        y = F.solarize(x, a["threshold"] * (255 if x.dtype == torch.uint8 else 1.0))
    elif op == "adjust_sharpness":
        y = F.adjust_sharpness(x, a["factor"])
    elif op == "policy_op":
        t = T.TrivialAugmentWide(fill=_fill(a["fill"], x.dtype))
        y = t._apply_image_or_video_transform(x, a["name"], a["magnitude"], interpolation=INTERP[a["interpolation"]],
                                              fill=t._fill)
    else:
        raise ValueError(op)
    return _hwc(y)


# --------------------------------------------------------------------------- tables and draws


def _space(transform, num_bins, h, w):
    out = {}
    for name, (fn, signed) in transform._AUGMENTATION_SPACE.items():
        mags = fn(num_bins, h, w)
        out[name] = {"magnitudes": None if mags is None else [float(v) for v in mags.tolist()], "signed": bool(signed)}
    return out


def _tables():
    h, w = 27, 40
    tables = {
        "image_hw": [h, w],
        "rand": {"num_bins": 31, "ops": _space(T.RandAugment(), 31, h, w)},
        "wide": {"num_bins": 31, "ops": _space(T.TrivialAugmentWide(), 31, h, w)},
        "auto": {"num_bins": 10, "ops": _space(T.AutoAugment(), 10, h, w)},
        "augmix": {"num_bins": 10, "ops": _space(T.AugMix(), 10, h, w)},
        "auto_policies": {},
    }
    for policy in ("imagenet", "cifar10", "svhn"):
        t = T.AutoAugment(T.AutoAugmentPolicy(policy))
        tables["auto_policies"][policy] = [[[n, p, b] for n, p, b in sp] for sp in t._policies]
    return tables


def _deciles(values):
    return [float(v) for v in np.quantile(np.asarray(values, np.float64), np.linspace(0.1, 0.9, 9))]


def _stat(values, what):
    """Deciles and mean of ``values``, with the tolerances the test applies to an imgproc
    sample of the same size: each decile's CDF within ``cdf_tol`` of its nominal 0.1 k
    (about 4 standard errors of the difference of two such samples), the mean within
    ``mean_tol`` (4 standard errors of the difference of the means)."""
    v = np.asarray(values, np.float64)
    n = len(v)
    return {"what": what, "n": n, "mean": float(v.mean()), "std": float(v.std()), "deciles": _deciles(v),
            "mean_tol": float(4 * v.std() * math.sqrt(2.0 / n)), "cdf_tol": float(4 * math.sqrt(2 * 0.25 / n))}


def _draws(n=4000):
    stats = {}
    torch.manual_seed(1)
    for h, w in ((300, 451), (224, 448), (100, 100), (32, 400)):
        t = T.RandomResizedCrop(16, antialias=True)
        img = tv_tensors.Image(torch.zeros(3, h, w, dtype=torch.uint8))
        boxes = [t.make_params([img]) for _ in range(n)]
        area = [b["height"] * b["width"] / (h * w) for b in boxes]
        logr = [math.log(b["width"] / b["height"]) for b in boxes]
        cy = [(b["top"] + b["height"] / 2) / h for b in boxes]
        cx = [(b["left"] + b["width"] / 2) / w for b in boxes]
        stats[f"random_resized_crop_{h}x{w}"] = {
            "scale": _stat(area, "box area / image area"), "log_ratio": _stat(logr, "log(box width / box height)"),
            "centre_y": _stat(cy, "box centre row / H"), "centre_x": _stat(cx, "box centre column / W"),
            "max_ratio": float(np.exp(max(logr))), "min_ratio": float(np.exp(min(logr))),
        }
    mixup = T.MixUp(alpha=0.2, num_classes=10)
    stats["mixup_lam_alpha0.2"] = _stat([mixup.make_params([])["lam"] for _ in range(n)], "MixUp lam, Beta(0.2, 0.2)")
    cutmix = T.CutMix(alpha=1.0, num_classes=10)
    img = tv_tensors.Image(torch.zeros(3, 32, 32))
    stats["cutmix_lam_adjusted_32x32"] = _stat([cutmix.make_params([img])["lam_adjusted"] for _ in range(n)],
                                               "CutMix label weight of the image itself (1 - box area / H W), 32x32")
    augmix = T.AugMix()
    m0 = [float(augmix._sample_dirichlet(torch.tensor([[1.0, 1.0]]))[0, 0]) for _ in range(n)]
    stats["augmix_m0_alpha1"] = _stat(m0, "AugMix weight of the original image, Dirichlet(1, 1)[0]")
    return stats


def main():
    inputs = _inputs()
    _resize_cases()
    _resized_crop_cases()
    _affine_cases()
    _intensity_cases()
    _policy_op_cases()
    _kornia_cases()
    arrays = {f"input/{k}": v for k, v in inputs.items()}
    for c in CASES:
        arrays[f"case/{c['id']}"] = run(c, inputs)
    meta = {"torch": torch.__version__, "torchvision": torchvision.__version__}
    import kornia
    meta["kornia"] = kornia.__version__
    arrays["cases.json"] = np.frombuffer(json.dumps({"versions": meta, "cases": CASES}).encode(), np.uint8)
    np.savez_compressed(HERE / "torchvision_ops.npz", **arrays)
    stats = {"versions": meta, "tables": _tables(), "draws": _draws()}
    (HERE / "torchvision_stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    print(f"{len(CASES)} cases; {(HERE / 'torchvision_ops.npz').stat().st_size} bytes;",
          f"stats {(HERE / 'torchvision_stats.json').stat().st_size} bytes")


if __name__ == "__main__":
    main()
