"""imgproc.augment: reproducibility, per-image draws and their frequencies, geometry
invariants, colour ops against dm-pix, layouts and dtypes. Small images keep it fast."""

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.ndimage as ndi
from scipy import stats

import imgproc
from imgproc import augment as A
from jaxprs import equations

KEY = jax.random.key(42)
STRATEGIES = imgproc.STRATEGIES
SIMPLE_RANDOM = [n for n in A.RANDOM_OPS if n not in ("random_choice", "random_apply")]


def batch(n=6, h=12, w=12, dtype=np.uint8, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:
        return rng.integers(0, 256, (n, h, w, 3)).astype(np.uint8)
    return rng.random((n, h, w, 3), dtype=np.float32)


MIXED_SPEC = [
    {"op": "random_flip_left_right"},
    {"op": "random_rot90"},
    {"op": "random_brightness", "max_delta": 0.1},
    {"op": "random_choice", "ops": [{"op": "gaussian_blur", "sigma": 1.0, "size": 3}, {"op": "sharpen", "size": 3},
                                    {"op": "gaussian_noise"}], "weights": [1, 1, 2]},
    {"op": "random_apply", "p": 0.5, "stage": {"op": "random_hue"}},
]


@functools.cache
def mixed(strategy, layout=None):
    spec = json.loads(json.dumps(MIXED_SPEC))
    spec[3]["strategy"] = strategy
    spec[4]["strategy"] = strategy
    return imgproc.Pipeline(spec, layout=layout)


# --------------------------------------------------------------------------- reproducibility


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_same_key_same_output_and_batch_split_invariance(strategy):
    x = batch(8)
    pipe = mixed(strategy)
    full = np.asarray(pipe(x, key=KEY))
    np.testing.assert_array_equal(full, np.asarray(pipe(x, key=KEY)))
    assert not np.array_equal(full, np.asarray(pipe(x, key=jax.random.key(43))))
    parts = [pipe(x[:4], key=KEY, indices=np.arange(4)), pipe(x[4:], key=KEY, indices=np.arange(4, 8))]
    np.testing.assert_array_equal(np.concatenate([np.asarray(p) for p in parts]), full)
    if strategy == "map":  # the first image alone (as a single HWC image) gets index 0's draw
        np.testing.assert_array_equal(np.asarray(pipe(x[0], key=KEY)), full[0])


def test_strategies_give_the_same_numbers():
    x = batch(8)
    outs = [np.asarray(mixed(s)(x, key=KEY)).astype(int) for s in STRATEGIES]
    for o in outs[1:]:
        assert np.abs(o - outs[0]).max() <= 1  # float rounding of vectorised vs sequential code


def test_identical_images_get_different_draws():
    x = np.repeat(batch(1), 8, axis=0)
    y = np.asarray(imgproc.Pipeline([{"op": "random_brightness"}, {"op": "random_hue"}])(x, key=KEY))
    assert len({im.tobytes() for im in y}) == 8


def test_direct_batch_call_uses_fold_in_per_image():
    x = batch(4, dtype=np.float32)
    got = np.asarray(A.random_hue(KEY, x))
    for i in range(4):
        np.testing.assert_allclose(got[i], np.asarray(A.random_hue(jax.random.fold_in(KEY, i), x[i])), atol=1e-6)


# --------------------------------------------------------------------------- frequencies


def _binomial_ok(count, n, p, z=4.5):
    return abs(count - n * p) <= z * np.sqrt(n * p * (1 - p)) + 1


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_random_apply_frequency(strategy):
    n, p = 400, 0.3
    x = np.zeros((n, 2, 2, 1), np.float32)
    pipe = imgproc.Pipeline([{"op": "random_apply", "p": p, "stage": {"op": "adjust_brightness", "delta": 1.0},
                              "strategy": strategy}])
    applied = int(np.asarray(pipe(x, key=KEY))[:, 0, 0, 0].sum())
    assert _binomial_ok(applied, n, p)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_random_choice_weights(strategy):
    n, w = 600, np.array([1.0, 2.0, 5.0])
    x = np.zeros((n, 2, 2, 1), np.float32)
    ops = [{"op": "adjust_brightness", "delta": float(d)} for d in (1, 2, 3)]
    pipe = imgproc.Pipeline([{"op": "random_choice", "ops": ops, "weights": w.tolist(), "strategy": strategy}])
    chosen = np.asarray(pipe(x, key=KEY))[:, 0, 0, 0].round().astype(int) - 1
    counts = np.bincount(chosen, minlength=3)
    assert counts.sum() == n
    assert stats.chisquare(counts, n * w / w.sum()).pvalue > 1e-4
    # uniform without weights
    pipe = imgproc.Pipeline([{"op": "random_choice", "ops": ops, "strategy": strategy}])
    counts = np.bincount(np.asarray(pipe(x, key=KEY))[:, 0, 0, 0].round().astype(int) - 1, minlength=3)
    assert stats.chisquare(counts).pvalue > 1e-4


def test_flip_probability_and_grayscale_probability():
    n = 400
    x = np.tile(np.arange(3, dtype=np.float32), (n, 3, 1))[..., None]  # (n, 3, 3, 1) rows 0 1 2
    flipped = (np.asarray(A.random_flip_left_right(KEY, x, p=0.25))[:, 0, 0, 0] == 2).sum()
    assert _binomial_ok(flipped, n, 0.25)
    rgb = np.zeros((n, 2, 2, 3), np.float32)
    rgb[..., 0] = 1
    gray = (np.asarray(A.random_grayscale(KEY, rgb, p=0.5))[:, 0, 0, 1] > 0).sum()
    assert _binomial_ok(gray, n, 0.5)


# --------------------------------------------------------------------------- geometry


def test_flips_and_rot90_are_involutions_and_match_numpy():
    x = batch(2, 5, 7)
    np.testing.assert_array_equal(A.flip_left_right(A.flip_left_right(x)), x)
    np.testing.assert_array_equal(A.flip_up_down(A.flip_up_down(x)), x)
    np.testing.assert_array_equal(A.flip_left_right(x), x[:, :, ::-1])
    y = x
    for _ in range(4):
        y = A.rot90(y)
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(A.rot90(x, k=3), np.rot90(x, 3, axes=(1, 2)))
    nchw = np.moveaxis(x, -1, 1)
    np.testing.assert_array_equal(A.rot90(nchw, k=1, layout="NCHW"), np.rot90(nchw, 1, axes=(2, 3)))


@pytest.mark.parametrize("dtype, branches", [(np.uint8, 1), (np.float32, 0)])
def test_a_random_flip_branches_on_integer_images_and_selects_on_float(dtype, branches):
    """A random flip of an integer image is a conditional (only the flipped images are
    mirrored), of a float image a select (one loop, joined with the selects around it):
    geometry._maybe_flip. The same values either way."""
    from imgproc.augment import geometry

    x = batch(1, 5, 7)[0].astype(dtype)
    apply = lambda v, f: geometry._apply_flip_left_right(v, {"flip": f}, layout="HWC")  # noqa: E731
    jaxpr = jax.make_jaxpr(apply)(x, True).jaxpr
    assert len(equations(jaxpr, "cond")) == branches
    for flip in (True, False):
        np.testing.assert_array_equal(jax.jit(apply)(x, flip), x[:, ::-1] if flip else x)


def test_random_rot90_is_one_of_four_rotations():
    x = batch(1, 6, 6)[0]
    seen = set()
    for i in range(24):
        y = np.asarray(A.random_rot90(jax.random.key(i), x))
        k = [j for j in range(4) if np.array_equal(y, np.rot90(x, j))]
        assert len(k) == 1
        seen.add(k[0])
    assert seen == {0, 1, 2, 3}
    with pytest.raises(ValueError, match="square"):
        A.random_rot90(KEY, np.zeros((4, 5), np.float32))


@pytest.mark.parametrize("layout, axes", [("HWC", (0, 1)), ("CHW", (1, 2))])
def test_rot90_transposes_only_in_the_branches_that_turn(layout, axes):
    # taken before the switch, the transpose ran for every image (k = 0 and 2 included):
    # 12 % of the augment benchmark's pipeline
    from imgproc.augment.geometry import _apply_rot90

    x = batch(1, 6, 6)[0] if layout == "HWC" else np.moveaxis(batch(1, 6, 6)[0], -1, 0)
    for k in range(4):
        np.testing.assert_array_equal(_apply_rot90(x, {"k": jnp.int32(k)}, layout=layout), np.rot90(x, k, axes=axes))
    jaxpr = jax.make_jaxpr(lambda x, k: _apply_rot90(x, {"k": k}, layout=layout))(x, jnp.int32(1))
    assert [e.primitive.name for e in jaxpr.eqns if e.primitive.name == "transpose"] == []


def test_random_crop_stays_inside():
    h, w = 10, 13
    x = (np.arange(h)[:, None] * 100 + np.arange(w)[None, :]).astype(np.float32)
    for i in range(20):
        y = np.asarray(A.random_crop(jax.random.key(i), x, size=(4, 6)))
        top, left = int(y[0, 0]) // 100, int(y[0, 0]) % 100
        assert 0 <= top <= h - 4 and 0 <= left <= w - 6
        np.testing.assert_array_equal(y, x[top:top + 4, left:left + 6])
    assert A.random_crop(KEY, np.zeros((16, 8, 3), np.uint8)).shape == (14, 7, 3)
    with pytest.raises(ValueError, match="larger than the image"):
        A.random_crop(KEY, x, size=(11, 2))


@pytest.mark.parametrize("top, left, want", [(-1, 0, (0, 0)), (0, -1, (0, 0)), (-7, -30, (0, 0)), (9, 2, (6, 2)),
                                             (2, 99, (2, 7))])
def test_crop_moves_a_window_past_the_border_back_inside(top, left, want):
    """A negative start is clamped to 0 (lax.dynamic_slice alone would count it from the
    far edge), a start past the end to the last place the window fits; eager and jit."""
    x = (np.arange(10)[:, None] * 100 + np.arange(13)[None, :]).astype(np.uint16)
    expected = x[want[0]:want[0] + 4, want[1]:want[1] + 6]
    np.testing.assert_array_equal(A.crop(x, top, left, size=(4, 6)), expected)
    traced = jax.jit(lambda t, l: A.crop(x, t, l, size=(4, 6)))(top, left)
    np.testing.assert_array_equal(np.asarray(traced), expected)


def test_resized_crop_identity_and_plain_crop():
    x = batch(1, 9, 11, np.float32)[0]
    np.testing.assert_allclose(A.resized_crop(x, 0, 0, 9, 11, size=(9, 11)), x, atol=1e-5)
    np.testing.assert_allclose(A.resized_crop(x, 2, 3, 4, 5, size=(4, 5)), x[2:6, 3:8], atol=1e-5)
    y = np.asarray(A.random_resized_crop(KEY, x, size=(5, 6)))
    assert y.shape == (5, 6, 3) and x.min() - 1e-5 <= y.min() and y.max() <= x.max() + 1e-5


# (image h, w), box (top, left, height, width), output size: shrinking (2 to 4 taps),
# enlarging, 1:1, fractional boxes, one output row, a box reaching the image's edges
RESIZED_CROP_CASES = [
    ((40, 50), (3.3, 4.1, 20.5, 31.2), (17, 23)),
    ((40, 50), (0.0, 0.0, 40.0, 50.0), (9, 11)),
    ((40, 50), (10.7, 2.2, 7.5, 9.9), (30, 28)),
    ((37, 41), (0.0, 0.0, 37.0, 41.0), (37, 41)),
    ((24, 24), (5.5, 0.25, 18.5, 23.75), (1, 24)),
    ((30, 20), (1.0, 2.0, 29.0, 18.0), (12, 7)),
]


@pytest.mark.parametrize("hw, box, size", RESIZED_CROP_CASES)
def test_resized_crop_matches_pillow(hw, box, size):
    """Crop, then resize (torchvision's resized_crop): Pillow's bilinear ``resize(size,
    box=...)`` on float (``F``) images, per channel, of the pixels the box covers (cropped
    from ``floor`` to ``ceil`` of its edges, so nothing outside it is read): the same
    antialiased triangle filter over the same box (enlarging: plain bilinear)."""
    import math

    from PIL import Image

    x = (batch(1, *hw, np.float32, seed=3)[0] * 255).astype(np.float32)
    top, left, height, width = box
    t0, l0 = math.floor(top), math.floor(left)
    part = x[t0:math.ceil(top + height), l0:math.ceil(left + width)]
    ref = np.stack([np.asarray(Image.fromarray(np.ascontiguousarray(part[..., c]), mode="F").resize(
        size[::-1], Image.Resampling.BILINEAR, box=(left - l0, top - t0, left - l0 + width, top - t0 + height)))
        for c in range(3)], -1)
    np.testing.assert_allclose(np.asarray(A.resized_crop(x, *box, size=size)), ref, atol=2e-3)


@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("layout", ["HWC", "CHW", "HW", "NHWC"])
def test_resized_crop_concrete_box_equals_traced_box(layout, antialias):
    """A concrete box (taps bounded by the box) equals the same box traced inside ``jit``
    (taps bounded by the image), in every layout, boxes partly outside the image included
    (its pixels outside are 0, as torchvision's crop pads)."""
    rng = np.random.default_rng(7)
    shape = {"HWC": (23, 31, 3), "CHW": (3, 23, 31), "HW": (23, 31), "NHWC": (2, 23, 31, 3)}[layout]
    x = rng.random(shape, dtype=np.float32)
    traced = jax.jit(lambda img, b: A.resized_crop(img, b[0], b[1], b[2], b[3], size=(13, 40), antialias=antialias,
                                                   layout=layout))
    for box in [(2.5, 3.0, 17.0, 9.5), (0.0, 0.0, 23.0, 31.0), (-3.0, 20.0, 20.0, 20.0), (1.2, -1.7, 4.4, 30.0)]:
        got = np.asarray(A.resized_crop(x, *box, size=(13, 40), antialias=antialias, layout=layout))
        np.testing.assert_allclose(got, np.asarray(traced(x, jnp.asarray(box, jnp.float32))), atol=2e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_an_eager_resized_crop_is_one_program_with_the_bits_of_jit(dtype, compilations):
    """Called eagerly with a known box, ``resized_crop`` runs one compiled program whose
    arguments are the box's numbers: a new box of the same tap counts compiles nothing
    (op by op, each new shape compiled dozens of one-primitive programs), and the result
    is the same call's inside ``jit``, bit for bit, boxes outside the image included."""
    rng = np.random.default_rng(11)
    x = (rng.random((23, 31, 3)) * 255).astype(dtype)
    boxes = [(2.5, 3.0, 17.0, 9.5), (-3.0, 20.0, 20.0, 20.0), (0.0, 0.0, 23.0, 31.0)]
    for box in boxes:
        eager = A.resized_crop(x, *box, size=(13, 40))
        assert isinstance(eager, np.ndarray) and eager.dtype == dtype
        in_jit = jax.jit(lambda img: A.resized_crop(img, *box, size=(13, 40)))(x)  # noqa: B023
        np.testing.assert_array_equal(eager, np.asarray(in_jit), err_msg=str(box))
    with compilations() as later:
        A.resized_crop(x, 1.5, 2.0, 16.0, 9.0, size=(13, 40))  # the first box's tap counts
    assert later == []


def test_random_resized_crop_batch_equals_each_box_traced():
    """A batch of drawn boxes (gathered taps under vmap) equals each box resized alone
    (traced); replayed parameters beyond the image are held to it, as the draw is."""
    x = batch(5, 30, 26, np.float32)
    pipe = imgproc.Pipeline([{"op": "random_resized_crop", "size": [11, 17]}])
    y, (params,) = pipe(x, key=KEY, return_params=True)
    dense = jax.jit(lambda img, t, l, h, w: A.resized_crop(img, t, l, h, w, size=(11, 17)))
    for i in range(5):
        p = {k: np.asarray(v)[i] for k, v in params.items()}
        ref = dense(x[i], p["top"], p["left"], p["height"], p["width"])
        np.testing.assert_allclose(np.asarray(y)[i], np.asarray(ref), atol=2e-6)
    wide = {k: np.asarray(v).copy() for k, v in params.items()}
    wide["height"][:] = 1e6
    clipped = {**wide, "height": np.full(5, 30.0, np.float32)}
    np.testing.assert_array_equal(np.asarray(pipe.apply(x, [wide])), np.asarray(pipe.apply(x, [clipped])))


def test_resized_crop_bad_box():
    with pytest.raises(ValueError, match="height"):
        A.resized_crop(np.zeros((8, 8, 3), np.float32), 0, 0, 0, 4, size=(4, 4))
    with pytest.raises(ValueError, match="width"):
        A.resized_crop(np.zeros((8, 8, 3), np.float32), 0, 0, 4, -1.0, size=(4, 4))
    for name, box in (("top", (np.nan, 0, 4, 4)), ("left", (0, np.inf, 4, 4))):
        with pytest.raises(ValueError, match=f"{name} must be a finite number"):
            A.resized_crop(np.zeros((8, 8, 3), np.float32), *box, size=(4, 4))


@pytest.mark.parametrize("mode", ["constant", "nearest", "reflect", "mirror"])
def test_rotate_matches_scipy(mode):
    x = batch(1, 11, 9, np.float32)[0]
    got = np.asarray(A.rotate(x, 23.0, mode=mode, cval=0.5))
    ref = np.stack([ndi.rotate(x[..., c].astype(np.float64), 23.0, reshape=False, order=1, mode=mode, cval=0.5)
                    for c in range(3)], -1)
    np.testing.assert_allclose(got, ref, atol=1e-4)


@pytest.mark.parametrize("mode, ref_mode", [("constant", "constant"), ("nearest", "nearest"), ("reflect", "reflect"),
                                            ("mirror", "mirror"), ("wrap", "grid-wrap")])
def test_translate_matches_scipy_shift(mode, ref_mode):
    x = batch(1, 8, 10, np.float32)[0]
    got = np.asarray(A.translate(x, 1.5, -2.25, mode=mode))
    ref = np.stack([ndi.shift(x[..., c].astype(np.float64), (1.5, -2.25), order=1, mode=ref_mode) for c in range(3)], -1)
    np.testing.assert_allclose(got, ref, atol=1e-4)


def test_erase_and_random_erasing():
    x = np.ones((2, 8, 8, 3), np.uint8) * 9
    y = np.asarray(A.erase(x, 2, 3, 4, 2, value=[1, 2, 3]))
    assert (y[:, 2:6, 3:5] == [1, 2, 3]).all() and (y.sum() == 9 * (2 * 64 * 3 - 2 * 8 * 3) + 2 * 8 * 6)
    z = np.asarray(A.random_erasing(KEY, np.ones((50, 8, 8, 1), np.float32), p=1.0))
    assert (z == 0).any(axis=(1, 2, 3)).all()


# --------------------------------------------------------------------------- colour vs dm-pix


@pytest.fixture(scope="module")
def pix():
    return pytest.importorskip("dm_pix")


def rgb01(seed=0):
    return np.random.default_rng(seed).random((2, 6, 7, 3), dtype=np.float32)


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (lambda x: A.adjust_hue(x, 0.23), lambda p, x: p.adjust_hue(x, 0.23)),
        (lambda x: A.adjust_hue(x, -0.4), lambda p, x: p.adjust_hue(x, -0.4)),
        (lambda x: A.adjust_saturation(x, 1.7), lambda p, x: p.adjust_saturation(x, 1.7)),
        (lambda x: A.adjust_saturation(x, 0.3), lambda p, x: p.adjust_saturation(x, 0.3)),
        (lambda x: A.adjust_contrast(x, 1.4), lambda p, x: p.adjust_contrast(x, 1.4)),
        (lambda x: A.adjust_brightness(x, 0.1), lambda p, x: p.adjust_brightness(x, 0.1)),
        (lambda x: A.adjust_gamma(x, 0.7, gain=1.1), lambda p, x: p.adjust_gamma(x, 0.7, gain=1.1)),
        (lambda x: imgproc.rgb_to_hsv(x), lambda p, x: p.rgb_to_hsv(x)),
        (lambda x: A.rgb_to_grayscale(x, keep_channels=False), lambda p, x: p.rgb_to_grayscale(x)),
    ],
)
def test_colour_ops_match_dm_pix(pix, ours, theirs):
    x = rgb01()
    np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(theirs(pix, x)), atol=2e-5)


def test_colour_ops_in_the_uint8_range_and_channel_first():
    x = np.random.default_rng(1).integers(0, 256, (2, 6, 7, 3)).astype(np.uint8)
    xf = x.astype(np.float32) / 255
    for ours in (lambda im, **k: A.adjust_hue(im, 0.3, **k), lambda im, **k: A.adjust_saturation(im, 0.5, **k),
                 lambda im, **k: A.adjust_brightness(im, -0.1, **k), lambda im, **k: A.adjust_gamma(im, 1.3, **k)):
        ref = np.clip(np.round(np.asarray(ours(xf)) * 255), 0, 255)
        got = np.asarray(ours(x))
        assert got.dtype == np.uint8 and np.abs(got.astype(int) - ref).max() <= 1
        nchw = np.asarray(ours(np.moveaxis(x, -1, 1), layout="NCHW"))
        np.testing.assert_array_equal(np.moveaxis(nchw, 1, -1), got)


def test_hsv_round_trip():
    x = rgb01(3)
    np.testing.assert_allclose(imgproc.hsv_to_rgb(imgproc.rgb_to_hsv(x)), x, atol=1e-5)


# --------------------------------------------------------------------------- pipelines, dtypes, layouts


@pytest.mark.parametrize("name", SIMPLE_RANDOM)
def test_every_random_op_works_with_defaults(name):
    x = batch(3, 16, 16)
    y = imgproc.Pipeline([{"op": name}])(x, key=KEY)
    assert y.dtype == np.uint8 and y.shape[0] == 3
    assert y.shape == x.shape or name == "random_crop"


def test_pipeline_uses_the_input_range():
    x = np.full((2, 4, 4, 3), 100, np.uint8)
    y = np.asarray(imgproc.Pipeline([{"op": "adjust_brightness", "delta": 0.1}])(x))
    assert (y == 126).all()  # 100 + 0.1 * 255, rounded once
    xf = np.full((2, 4, 4, 3), 0.5, np.float32)
    yf = np.asarray(imgproc.Pipeline([{"op": "random_brightness", "max_delta": 0.1}])(xf, key=KEY))
    assert yf.dtype == np.float32 and np.abs(yf - 0.5).max() <= 0.1 + 1e-6
    u8 = np.asarray(imgproc.Pipeline([{"op": "salt_and_pepper", "amount": 1.0}])(x, key=KEY))
    assert set(np.unique(u8)) <= {0, 255}


def test_nchw_equals_nhwc():
    x = batch(8)
    nhwc = np.asarray(mixed("map")(x, key=KEY))
    nchw = np.asarray(mixed("map", "NCHW")(np.moveaxis(x, -1, 1), key=KEY))
    np.testing.assert_array_equal(np.moveaxis(nchw, 1, -1), nhwc)


def test_spec_round_trip():
    pipe = imgproc.Pipeline.from_spec(json.dumps(MIXED_SPEC))
    assert pipe.to_spec() == MIXED_SPEC
    assert pipe.is_random


def test_traced_sigma_does_not_recompile():
    traces = []

    @jax.jit
    def f(key, x, lo, hi):
        traces.append(1)
        return A.random_gaussian_blur(key, x, sigma_range=(lo, hi), size=7)

    x = batch(2, 12, 12, np.float32)
    a = f(KEY, x, 0.5, 1.0)
    b = f(KEY, x, 1.5, 2.0)
    assert len(traces) == 1 and not np.allclose(a, b)


def test_noise_statistics():
    x = np.full((4, 64, 64, 3), 0.5, np.float32)
    n = np.asarray(A.gaussian_noise(KEY, x, sigma=0.1)) - 0.5
    assert abs(n.std() - 0.1) < 0.003 and abs(n.mean()) < 0.003
    assert stats.kstest(n.ravel()[:20000] / 0.1, "norm").pvalue > 1e-4
    sp = np.asarray(A.salt_and_pepper(KEY, x, amount=0.2))
    hit = sp != 0.5
    assert abs(hit.mean() - 0.2) < 0.01 and abs((sp[hit] == 1.0).mean() - 0.5) < 0.03
    sk = np.asarray(A.speckle_noise(KEY, x, sigma=0.2))
    assert abs((sk / 0.5 - 1).std() - 0.2) < 0.006


def test_hashed_normals_are_box_muller():
    """The signed quarter-turn cosine against NumPy's on random words and the ends of the
    quarter turn, and its values spread as ``cos`` of a uniform angle; the normals' moments
    and KS test; neighbouring values uncorrelated, also in their squares; the same field
    for channel-first and channel-last layouts; a field past 2**31 values refused."""
    from imgproc.augment.noise import _signed_cos, hash_normal

    t = np.concatenate([np.random.default_rng(1).integers(0, 2**32, 200_000, dtype=np.uint64),
                        np.array([0, 1, 2**31 - 1, 2**31, 2**31 + 1, 2**32 - 1], dtype=np.uint64)])
    got = np.asarray(_signed_cos(jnp.asarray(t.astype(np.uint32))))
    f = ((t << 1) % 2**32 >> 8) / 2**24
    want = np.where(t >= 2**31, -1.0, 1.0) * np.cos(np.pi / 2 * f)
    np.testing.assert_allclose(got, want, atol=3e-7, rtol=0)
    assert stats.kstest(got[:200_000], lambda c: 1 - np.arccos(np.clip(c, -1, 1)) / np.pi).pvalue > 1e-4
    words = jnp.asarray([7, 11], jnp.uint32)
    z = np.asarray(hash_normal(words, (256, 256, 3))).ravel()
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01 and abs(stats.kurtosis(z)) < 0.05
    assert stats.kstest(z, "norm").pvalue > 1e-4
    assert abs(np.corrcoef(z[0::2], z[1::2])[0, 1]) < 0.01 and abs(np.corrcoef(z[0::2] ** 2, z[1::2] ** 2)[0, 1]) < 0.01
    chw = np.asarray(hash_normal(words, (3, 256, 256), "CHW"))
    np.testing.assert_array_equal(np.moveaxis(chw, 0, -1).ravel(), z)
    with pytest.raises(ValueError, match="at most 2\\*\\*31 values"):
        jax.eval_shape(lambda: hash_normal(words, (2**16, 2**15, 2)))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda x: A.random_choice(KEY, x, ["flip_left_right"], strategy="nope"), "strategy must be one of"),
        (lambda x: A.random_choice(KEY, x, ["flip_left_right"], weights=[1, 2]), "weights must be 1"),
        (lambda x: A.random_apply(KEY, x, "flip_left_right", p=1.5), r"p must be a finite number in \[0, 1\]"),
        (lambda x: A.random_hue(KEY, x, max_delta=0.9), "max_delta"),
        (lambda x: A.random_rotate(KEY, x, mode="edge"), "mode must be one of"),
        (lambda x: A.adjust_hue(x[..., :2], 0.1), "RGB"),
        (lambda x: A.random_hue(None, x), "needs a key"),
        # the image and the key swapped: the order named
        (lambda x: A.random_rotate(x, KEY), r"random_rotate takes the key first, then the image"),
        (lambda x: A.random_rotate(x, 0), r"random_rotate takes the key first"),
        (lambda x: A.gaussian_noise(x[0], KEY), r"gaussian_noise takes the key first"),
    ],
)
def test_bad_options_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call(batch(2, 8, 8, np.float32))


def test_a_key_given_by_name_after_the_image_names_the_order():
    with pytest.raises(TypeError, match=r"multiple values for argument 'key'; the key comes first: "
                                        r"random_rotate\(key, image, ...\)"):
        A.random_rotate(batch(2, 8, 8, np.float32), key=0)
    assert A.random_rotate(key=0, image=batch(2, 8, 8, np.float32)).shape == (2, 8, 8, 3)


def test_bad_specs_raise():
    with pytest.raises(ValueError, match="random_choice needs 'ops'"):
        imgproc.Pipeline([{"op": "random_choice"}])
    with pytest.raises(ValueError, match="random_apply needs 'stage'"):
        imgproc.Pipeline([{"op": "random_apply", "p": 0.5}])
    with pytest.raises(ValueError, match="weights must be 2"):
        imgproc.Pipeline([{"op": "random_choice", "ops": ["flip_up_down", "rot90"], "weights": [1]}])


def test_random_choice_with_plain_callables_and_one_image():
    x = jnp.arange(6.0).reshape(2, 3)
    ys = {np.asarray(A.random_choice(jax.random.key(i), x, [lambda im: im + 1, lambda im: im * 0])).tobytes()
          for i in range(12)}
    assert ys == {np.asarray(x + 1).tobytes(), np.asarray(x * 0).tobytes()}


def test_fused_runs_match_stage_by_stage():
    # a deterministic stage first, then a random run that changes the shape and ends the
    # pipeline: the fused per-image map (CPU default) equals stage-by-stage vmap ("select")
    x = batch(5, 14, 14)
    spec = [{"op": "gaussian_blur", "sigma": 1.0, "size": 3}, {"op": "random_crop", "size": [10, 10]},
            {"op": "random_apply", "p": 0.5, "stage": {"op": "gaussian_noise"}}, {"op": "random_contrast"}]
    outs = []
    for strategy in ("map", "select"):
        spec[2]["strategy"] = strategy
        outs.append(np.asarray(imgproc.Pipeline(spec)(x, key=KEY)).astype(int))
    assert outs[0].shape == (5, 10, 10, 3)
    assert np.abs(outs[0] - outs[1]).max() <= 1


@pytest.mark.parametrize("last", [
    {"op": "random_choice", "ops": [{"op": "gaussian_blur", "sigma": 1.0, "size": 5}, {"op": "gaussian_noise"}]},
    {"op": "random_apply", "p": 0.5, "stage": {"op": "gaussian_noise"}},
])
def test_a_fused_run_casts_inside_its_last_conditional(last):
    """A fused run that ends the pipeline in a conditional writes the output dtype inside
    each branch (Stage.apply's ``finish``): the conditional yields uint8, not float32 for a
    cast pass of its own; the numbers equal stage-by-stage ("select") within a level."""
    x = batch(6, 12, 12)
    spec = [{"op": "random_flip_left_right"}, {"op": "random_brightness"}, dict(last, strategy="map")]
    pipe = imgproc.Pipeline(spec)
    conds = equations(jax.make_jaxpr(lambda im: pipe(im, key=KEY))(x).jaxpr, "cond")
    # the last stage's conditional: the first that takes the float32 image (the flip's takes
    # uint8; conditionals inside its branches come after it, as the blur's choice of the
    # fused kernel where "auto" plans it: on a GPU)
    cond = [c for c in conds if np.dtype(np.float32) in [v.aval.dtype for v in c.invars[1:]]][0]
    assert [v.aval.dtype for v in cond.outvars] == [np.dtype(np.uint8)]
    fused = np.asarray(pipe(x, key=KEY)).astype(int)
    staged = np.asarray(imgproc.Pipeline(spec[:2] + [dict(last, strategy="select")])(x, key=KEY)).astype(int)
    assert np.abs(fused - staged).max() <= 1 and (fused != staged).mean() < 0.01


def test_new_keys_and_indices_do_not_recompile():
    pipe = imgproc.Pipeline([{"op": "random_flip_left_right"}, {"op": "random_gaussian_blur", "size": 5}])
    x = batch(3, 10, 10)
    a = np.asarray(pipe(x, key=jax.random.key(1)))
    b = np.asarray(pipe(x, key=jax.random.key(2), indices=np.array([7, 8, 9])))
    assert pipe.trace_count == 1 and not np.array_equal(a, b)
    assert imgproc.random_hue is A.random_hue and "random_choice" in imgproc.__all__


def test_eager_random_ops_compile_once_per_op(compilations):
    """An eager random op is one compiled program per op and layout, its numbers program
    arguments (imgproc.core.eager): a new key, new images of the same shape or a new sigma
    reuse it; its result equals the op traced inside the caller's jit, for a batch and for
    one image."""
    from imgproc.core import eager as _eager

    x = batch(4, 12, 10)
    _eager.PROGRAMS.clear()
    a = np.asarray(A.gaussian_noise(jax.random.key(1), x, sigma=0.1))
    with compilations() as compiled:
        b = np.asarray(A.gaussian_noise(jax.random.key(2), x[::-1], sigma=0.1))
        c = np.asarray(A.gaussian_noise(jax.random.key(1), x, sigma=0.2))
    assert compiled == [] and len(_eager.PROGRAMS) == 1
    assert not np.array_equal(a, b) and not np.array_equal(a, c)
    with pytest.raises(ValueError, match="sigma"):  # checked on the value, though an argument
        A.gaussian_noise(KEY, x, sigma=-1.0)
    for call in (lambda k, im: A.gaussian_noise(k, im, sigma=0.1), lambda k, im: A.random_brightness(k, im, max_delta=0.3),
                 lambda k, im: A.random_choice(k, im, ["flip_left_right", {"op": "gaussian_noise"}])):
        for im in (x, x[0]):
            np.testing.assert_array_equal(np.asarray(call(KEY, im)), np.asarray(jax.jit(call)(KEY, im)))
    traced_sigma = jnp.asarray(0.1)  # an array option: run as before, op by op
    np.testing.assert_array_equal(np.asarray(A.gaussian_noise(jax.random.key(1), x, sigma=traced_sigma)), a)


def test_hue_is_robust_to_fused_producers(pix):
    # regression: under jit XLA recomputed the rotation for each use with other rounding,
    # so dm-pix's ``max == channel`` tests failed and hues jumped by up to half a turn
    x = batch(1, 24, 24, np.float32)[0] * 255
    fused = np.asarray(jax.jit(lambda im: A.adjust_hue(A.rotate(im, 10.0), 0.05))(x))
    ref = np.asarray(pix.adjust_hue(np.asarray(A.rotate(x, 10.0)) / 255, 0.05)) * 255
    assert np.abs(fused - ref).max() < 0.05


def test_traced_weights_and_p():
    x = np.zeros((64, 2, 2, 1), np.float32)
    ops = [{"op": "adjust_brightness", "delta": 1.0}, {"op": "adjust_brightness", "delta": 2.0}]

    @jax.jit
    def f(w0, p):
        y = A.random_choice(KEY, x, ops, weights=[w0, 1.0 - w0])
        return A.random_apply(KEY, y, {"op": "adjust_brightness", "delta": 10.0}, p=p)

    assert set(np.unique(np.asarray(f(1.0, 0.0)))) == {1.0}
    assert set(np.unique(np.asarray(f(0.0, 1.0)))) == {12.0}


SPLIT_SPEC = [
    {"op": "random_flip_left_right"},
    {"op": "random_rot90"},
    {"op": "random_choice", "ops": [{"op": "gaussian_blur", "sigma": 1.0}, {"op": "gaussian_noise"}]},
]


def loop_parts(pipe, x, key, indices, layout):
    """How many slices the pipeline runs ``x`` in (imgproc.pipeline.execution.loop_parts)."""
    from imgproc.pipeline.execution import loop_parts as parts
    from imgproc.pipeline.random_runs import loops_over_images

    return parts(x, loops=loops_over_images(pipe.stages), batched=layout in ("NHWC", "NCHW"), traced_args=(key, indices))


PER_CORE = pytest.mark.cpu_only("a batch split over the cores in threads, for XLA:CPU's per-image loops")


@PER_CORE
@pytest.mark.parametrize("n", [16, 21])
def test_batch_split_across_cores_equals_one_call(n, monkeypatch):
    # on CPU a per-image loop runs on one core, so a concrete batch is split across the
    # cores in threads; the result is the same array as one call, compiled once per slice shape
    from imgproc.pipeline import execution

    x = batch(n, 12, 12)
    monkeypatch.setattr(execution, "cpu_cores", lambda: 1)
    one = imgproc.Pipeline(SPLIT_SPEC)
    want = one(x, key=KEY)
    monkeypatch.setattr(execution, "cpu_cores", lambda: 2)
    split = imgproc.Pipeline(SPLIT_SPEC)
    assert loop_parts(split, x, KEY, jnp.arange(n), "NHWC") == 2
    for k in (KEY, jax.random.key(5)):
        got = split(x, key=k)
        assert isinstance(got, np.ndarray) and got.dtype == np.uint8 and got.shape == x.shape  # NumPy in, NumPy out
        np.testing.assert_array_equal(np.asarray(got), np.asarray(one(x, key=k)))
    np.testing.assert_array_equal(np.asarray(split(x, key=KEY, indices=np.arange(n) + 3)),
                                  np.asarray(one(x, key=KEY, indices=np.arange(n) + 3)))
    # equal pipelines share their programs: the whole batch's (one's, before the split), then
    # slices of n/2, or of n//2 and n//2 + 1
    assert split.trace_count == 1 + (1 if n % 2 == 0 else 2)
    assert np.array_equal(np.asarray(want), np.asarray(one(x, key=KEY)))


@PER_CORE
def test_batch_split_only_where_a_loop_runs(monkeypatch):
    from imgproc.pipeline import execution

    monkeypatch.setattr(execution, "cpu_cores", lambda: 4)
    x = batch(40, 8, 8)
    idx = jnp.arange(40)
    assert loop_parts(imgproc.Pipeline(SPLIT_SPEC), x, KEY, idx, "NHWC") == 4
    assert loop_parts(imgproc.Pipeline(SPLIT_SPEC), x[:20], KEY, idx[:20], "NHWC") == 2  # >= 8 a slice
    assert loop_parts(imgproc.Pipeline(SPLIT_SPEC), x[0], KEY, idx[:1], "HWC") == 1  # one image
    select = [dict(SPLIT_SPEC[2], strategy="select")]
    assert loop_parts(imgproc.Pipeline(select), x, KEY, idx, "NHWC") == 1  # vectorised already
    assert loop_parts(imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 1.0}]), x, None, None, "NHWC") == 1
    pipe = imgproc.Pipeline(SPLIT_SPEC)
    traced = jax.jit(lambda a, k: pipe(a, key=k))(x, KEY)  # inside a trace: one program
    np.testing.assert_array_equal(np.asarray(traced), np.asarray(pipe(x, key=KEY)))


def test_no_split_over_cores_on_other_backends(monkeypatch, other_backend):
    """On a GPU or TPU a per-image loop is the device's, not one core's: a batch is never
    split into slices in threads, and the pipeline's values are one program's."""
    from imgproc.pipeline import execution

    monkeypatch.setattr(execution, "cpu_cores", lambda: 4)
    x = batch(40, 8, 8)
    pipe = imgproc.Pipeline([dict(SPLIT_SPEC[2], strategy="map")])  # loops over the images
    assert loop_parts(pipe, x, KEY, jnp.arange(40), "NHWC") == 1
    runs = []
    real = execution.run_parts
    monkeypatch.setattr(execution, "run_parts", lambda *a, **k: runs.append(1) or real(*a, **k))
    eager, traced = np.asarray(pipe(x, key=KEY)), np.asarray(jax.jit(lambda a: pipe(a, key=KEY))(x))
    assert runs == []
    assert np.abs(eager.astype(int) - traced).max() <= 1  # jit inside jit may round a level otherwise
