"""Intensity ops (imgproc/augment/intensity.py) against their references, from one table.

torchvision is not installed here; on uint8 images torchvision's definitions are PIL's
(``PIL.ImageOps`` / ``PIL.ImageEnhance``, what its PIL backend calls), so each case is
compared with Pillow. The parameter sets are those of torchvision's
``test/test_transforms_v2.py`` correctness tests (posterize bits 1, 4, 8; solarize at 0,
0.1, 0.5, 0.9 and 1.0 of the range; sharpness 0.1, 0.5, 1.0; equalize on the ranges
[0, 255], [64, 192] and a constant image).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image, ImageEnhance, ImageOps

import imgproc


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    ours: Callable  # ours(image, **options) -> image
    pil: Callable  # pil(PIL.Image, **options) -> PIL.Image
    options: tuple = ({},)  # the option sets tested
    atol: int = 0  # uint8 levels: PIL truncates blends, imgproc rounds


CASES = [
    Case("invert", imgproc.invert, ImageOps.invert),
    Case("posterize", imgproc.posterize, lambda im, bits: ImageOps.posterize(im, bits),
         tuple({"bits": b} for b in (1, 4, 7, 8))),
    Case("solarize", imgproc.solarize, lambda im, threshold: ImageOps.solarize(im, threshold),
         tuple({"threshold": int(255 * f)} for f in (0.0, 0.1, 0.5, 0.9, 1.0))),
    Case("equalize", imgproc.equalize, ImageOps.equalize),
    Case("autocontrast", imgproc.autocontrast, ImageOps.autocontrast, atol=1),
    Case("adjust_sharpness", imgproc.adjust_sharpness, lambda im, factor: ImageEnhance.Sharpness(im).enhance(factor),
         tuple({"factor": f} for f in (0.0, 0.1, 0.5, 1.0, 2.0)), atol=1),
]
IDS = [c.name for c in CASES]
OPTION_CASES = [(c, o) for c in CASES for o in c.options]
OPTION_IDS = [f"{c.name}-{o}" for c, o in OPTION_CASES]


def images():
    """uint8 HWC images: full range, torchvision's [64, 192] and few-level ranges, constant."""
    rng = np.random.default_rng(0)
    full = rng.integers(0, 256, (24, 32, 3)).astype(np.uint8)
    mid = rng.integers(64, 193, (24, 32, 3)).astype(np.uint8)
    few = rng.choice(np.array([30, 31, 200], np.uint8), (24, 32, 3))
    const = np.full((24, 32, 3), 128, np.uint8)
    # one channel nearly constant: one odd pixel (PIL's single-level / step-0 branches)
    odd = full.copy()
    odd[..., 1] = 90
    odd[3, 4, 1] = 91
    return {"full": full, "mid": mid, "few": few, "const": const, "odd": odd}


IMAGES = images()


def pil_ref(case, x, options):
    if x.ndim == 2:
        return np.asarray(case.pil(Image.fromarray(x), **options))
    return np.asarray(case.pil(Image.fromarray(x), **options))


@pytest.mark.parametrize("case, options", OPTION_CASES, ids=OPTION_IDS)
@pytest.mark.parametrize("which", list(IMAGES))
def test_uint8_matches_pil(case, options, which):
    x = IMAGES[which]
    ours = np.asarray(case.ours(x, **options)).astype(int)
    ref = pil_ref(case, x, options).astype(int)
    assert ours.shape == ref.shape
    np.testing.assert_allclose(ours, ref, rtol=0, atol=case.atol)


@pytest.mark.parametrize("case, options", OPTION_CASES, ids=OPTION_IDS)
def test_grayscale_hw_matches_pil(case, options):
    x = IMAGES["full"][..., 0]
    ours = np.asarray(case.ours(x, **options)).astype(int)
    np.testing.assert_allclose(ours, pil_ref(case, x, options).astype(int), rtol=0, atol=case.atol)


def test_exact_cases_are_mostly_exact():
    """The blends differ from PIL's truncation by one level only where rounding does."""
    x = IMAGES["full"]
    for factor in (0.0, 2.0):  # no fractional blend: identical
        ours = np.asarray(imgproc.adjust_sharpness(x, factor))
        assert np.array_equal(ours, np.asarray(ImageEnhance.Sharpness(Image.fromarray(x)).enhance(factor)))
    ours = np.asarray(imgproc.autocontrast(x)).astype(int)
    ref = np.asarray(ImageOps.autocontrast(Image.fromarray(x))).astype(int)
    assert np.all((ours - ref >= 0) & (ours - ref <= 1))  # truncation below rounding, never above


@pytest.mark.parametrize("case, options", OPTION_CASES, ids=OPTION_IDS)
def test_float_follows_the_uint8_definition(case, options):
    """A float image in [0, 1] gives the uint8 result / 255 (torchvision's float kernels on
    values that are exact levels), except posterize, whose float definition differs."""
    x = IMAGES["full"]
    opts = dict(options)
    if "threshold" in opts:
        opts["threshold"] = opts["threshold"] / 255
    ours = np.asarray(case.ours(x.astype(np.float32) / 255, **opts))
    assert ours.dtype == np.float32
    if case.name == "posterize":  # torchvision: clip(floor(x * 2**b), 0, 2**b - 1) / 2**b
        levels = 2.0 ** opts["bits"]
        ref = np.clip(np.floor(x.astype(np.float64) / 255 * levels), 0, levels - 1) / levels
        np.testing.assert_allclose(ours, ref, atol=1e-6)
        return
    ref = np.asarray(case.ours(x, **options)).astype(np.float64) / 255
    # float results are not rounded to levels: within half a level (+ sharpness' rounded blur)
    np.testing.assert_allclose(ours, ref, atol=(0.5 + 1.0 * (case.name == "adjust_sharpness")) / 255 + 1e-6)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_jit_equals_eager_and_batch_equals_loop(case):
    options = case.options[-1]
    xs = np.stack([IMAGES["full"], IMAGES["mid"], IMAGES["few"]])
    eager = np.asarray(case.ours(xs, **options))
    jitted = np.asarray(jax.jit(lambda a: case.ours(a, **options))(jnp.asarray(xs)))
    assert np.array_equal(eager, jitted)
    loop = np.stack([np.asarray(case.ours(x, **options)) for x in xs])
    assert np.array_equal(eager, loop)
    nchw = np.asarray(case.ours(np.moveaxis(xs, -1, 1), layout="NCHW", **options))
    assert np.array_equal(np.moveaxis(nchw, 1, -1), eager)


def test_traced_options_do_not_recompile():
    traces = []

    @jax.jit
    def f(x, factor, bits, threshold):
        traces.append(1)
        return (imgproc.adjust_sharpness(x, factor), imgproc.posterize(x, bits), imgproc.solarize(x, threshold))

    x = jnp.asarray(IMAGES["full"])
    for factor, bits, threshold in ((0.5, 3, 100), (1.5, 5, 200)):
        a, b, c = f(x, factor, bits, threshold)
        assert np.array_equal(np.asarray(b), np.asarray(imgproc.posterize(IMAGES["full"], bits)))
        assert np.array_equal(np.asarray(c), np.asarray(imgproc.solarize(IMAGES["full"], threshold)))
    assert len(traces) == 1


def test_posterize_zero_bits_is_black():
    """torchvision accepts bits=0 (mask 0); PIL does not."""
    assert not np.asarray(imgproc.posterize(IMAGES["full"], 0)).any()


def test_uint16_uses_the_16_bit_range():
    x = (IMAGES["full"].astype(np.uint16) * 257)
    assert np.array_equal(np.asarray(imgproc.invert(x)), 65535 - x)
    assert np.array_equal(np.asarray(imgproc.posterize(x, 4)), x & 0xF000)
    eq8 = np.asarray(imgproc.equalize(IMAGES["full"])).astype(np.uint16)
    assert np.array_equal(np.asarray(imgproc.equalize(x)), eq8 * 257)


# --------------------------------------------------------------------------- normalize


def test_normalize_is_totensor_then_normalize():
    x = IMAGES["full"]
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    y = imgproc.normalize(x, mean, std)
    ref = (x.astype(np.float64) / 255 - np.array(mean)) / np.array(std)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    chw = imgproc.normalize(np.moveaxis(x, -1, 0), mean, std, layout="CHW")
    np.testing.assert_allclose(np.moveaxis(chw, 0, -1), y, rtol=1e-6, atol=1e-6)
    x16 = x.astype(np.uint16) * 257
    np.testing.assert_allclose(imgproc.normalize(x16, mean, std), y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(imgproc.normalize(x.astype(np.float32) / 255, mean, std), y, rtol=1e-5, atol=1e-5)
    assert imgproc.normalize(x, 0.5, 0.5).dtype == np.float32
    np.testing.assert_allclose(imgproc.to_float(x), x / 255, rtol=1e-6)


@pytest.mark.parametrize("mean, std, match", [
    ((0.5, 0.5, 0.5), 0.0, "std must not contain 0"),
    ((0.5, 0.5, 0.5), (0.2, 0.0, 0.2), "std must not contain 0"),
    ((0.5, 0.5), (0.2, 0.2, 0.2), "one number per channel"),
    ((0.5, float("nan"), 0.5), 0.2, "finite"),
])
def test_normalize_bad_arguments(mean, std, match):
    with pytest.raises(ValueError, match=match):
        imgproc.normalize(IMAGES["full"], mean, std)
    with pytest.raises(ValueError, match=match):
        imgproc.Pipeline([{"op": "normalize", "mean": list(np.atleast_1d(mean)), "std": list(np.atleast_1d(std))}])(
            IMAGES["full"][None])


def test_pipeline_output_dtype_follows_normalize():
    x = np.stack([IMAGES["full"], IMAGES["mid"]])
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    plain = imgproc.Pipeline([{"op": "flip_left_right"}])
    assert plain(x).dtype == np.uint8 and plain.output_dtype(np.uint8) == np.uint8
    pipe = imgproc.Pipeline([{"op": "flip_left_right"}, {"op": "normalize", "mean": mean, "std": std}])
    y = pipe(x)
    assert y.dtype == np.float32 and pipe.output_dtype(np.uint8) == np.float32
    np.testing.assert_allclose(y, imgproc.normalize(x[:, :, ::-1], mean, std), rtol=1e-6, atol=1e-6)
    # random stages after it run (fused per image on CPU, or stage by stage) with max_value 1.0
    for strategy in ("select", "map", "group"):
        spec = [{"op": "to_float"},
                {"op": "random_apply", "p": 1.0, "strategy": strategy, "stage": {"op": "invert"}}]
        out = imgproc.Pipeline(spec)(x, key=0)
        assert out.dtype == np.float32
        np.testing.assert_allclose(out, 1.0 - x / 255.0, rtol=1e-6, atol=1e-6)
    tail = imgproc.Pipeline([{"op": "to_float"}, {"op": "random_invert", "p": 1.0}])
    np.testing.assert_allclose(tail(x, key=0), 1.0 - x / 255.0, rtol=1e-6, atol=1e-6)
    assert imgproc.Pipeline.from_spec(pipe.to_json()).to_spec() == pipe.to_spec()


# --------------------------------------------------------------------------- random twins

RANDOM = [
    ("random_invert", imgproc.invert, {}),
    ("random_posterize", imgproc.posterize, {"bits": 3}),
    ("random_solarize", imgproc.solarize, {"threshold": 100}),
    ("random_equalize", imgproc.equalize, {}),
    ("random_autocontrast", imgproc.autocontrast, {}),
    ("random_adjust_sharpness", imgproc.adjust_sharpness, {"factor": 0.3}),
]


@pytest.mark.parametrize("name, op, options", RANDOM, ids=[r[0] for r in RANDOM])
def test_random_twins_apply_with_probability_p(name, op, options):
    fn = getattr(imgproc, name)
    x = np.stack([IMAGES["mid"]] * 64)
    assert np.array_equal(fn(0, x, p=0.0, **options), x)
    done = np.asarray(op(IMAGES["mid"], **options))
    assert np.array_equal(fn(0, x, p=1.0, **options), np.stack([done] * 64))
    y = fn(jax.random.key(3), x, p=0.5, **options)
    applied = np.array([np.array_equal(a, done) and not np.array_equal(a, IMAGES["mid"]) for a in y])
    kept = np.array([np.array_equal(a, IMAGES["mid"]) for a in y])
    assert np.all(applied | kept) and 16 <= applied.sum() <= 48  # p=0.5 of 64: far outside 4.5 sigma otherwise
    pipe = imgproc.Pipeline([{"op": name, "p": 0.5, **options}])
    y2, params = pipe(x, key=3, return_params=True)
    assert params[0]["apply"].shape == (64,)
    assert np.array_equal(y2[params[0]["apply"]], np.stack([done] * int(params[0]["apply"].sum())))


@pytest.mark.parametrize("call, match", [
    (lambda x: imgproc.posterize(x, 9), r"bits must be a finite number in \[0, 8\]"),
    (lambda x: imgproc.posterize(x, 2.5), "bits must be an integer"),
    (lambda x: imgproc.posterize(x, -1), "bits"),
    (lambda x: imgproc.solarize(x, 256), r"threshold must be a finite number in \[0, 255\]"),
    (lambda x: imgproc.solarize(x.astype(np.float32) / 255, 1.5), r"threshold .* \[0, 1\]"),
    (lambda x: imgproc.adjust_sharpness(x, -1), "factor must be"),
    (lambda x: imgproc.random_invert(0, x, p=1.5), "p must be"),
    (lambda x: imgproc.random_posterize(0, x, bits=12), "bits"),
    (lambda x: imgproc.random_adjust_sharpness(0, x, factor=-0.5), "factor"),
])
def test_bad_arguments_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call(IMAGES["full"])


def test_registered_and_listed():
    for name in ("normalize", "to_float", "invert", "posterize", "solarize", "equalize", "autocontrast",
                 "adjust_sharpness") + tuple(r[0] for r in RANDOM):
        assert name in imgproc.registered_ops()
        assert name in imgproc.__all__


def test_sharpness_of_images_without_an_inside_is_the_identity():
    """torchvision's edge case: an image of height or width <= 2 has no interior pixel."""
    for shape in ((2, 9, 3), (9, 2, 3), (1, 1)):
        x = np.random.default_rng(1).integers(0, 256, shape).astype(np.uint8)
        assert np.array_equal(imgproc.adjust_sharpness(x, 0.0), x)
        assert np.array_equal(np.asarray(ImageEnhance.Sharpness(Image.fromarray(x)).enhance(0.0)), x)
