"""Policies (imgproc/augment/policies.py): torchvision's tables, the draw distributions,
every op against its definition, and the same numbers under every strategy.

torchvision is not installed; its definitions are ported here in NumPy (float64) from
``torchvision/transforms/v2/functional`` (colour ops) and its PIL backend is called for the
geometric ops (``Image.transform(AFFINE, NEAREST)`` with torchvision's inverse affine
matrix, what ``F.affine`` / ``F.rotate`` do on PIL images).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

import imgproc
from imgproc.augment import policies as P
from torchvision_reference import inverse_affine_matrix as _tv_inverse_affine

STRATEGIES = ("select", "map", "group")
RNG = np.random.default_rng(7)
X = RNG.integers(0, 256, (20, 24, 3)).astype(np.uint8)
BATCH = RNG.integers(0, 256, (5, 10, 12, 3)).astype(np.uint8)
N_DRAWS = 3000
KEYS = jax.random.split(jax.random.key(11), N_DRAWS)


def within(count, n, p, z=4.5):
    return abs(count - n * p) <= z * math.sqrt(n * p * (1 - p)) + 1


def op(name, x, mag, m=255.0, fill=0.0):
    return np.asarray(P.op_fn(name, jnp.asarray(x, jnp.float32), jnp.float32(mag), m, fill))


# --------------------------------------------------------------------------- tables


def test_published_tables():
    names = [n for n, _, _ in P.augmentation_space("rand", 31, 224, 224)]
    assert names == ["Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness", "Color",
                     "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize"]
    rand = {n: m for n, m, _ in P.augmentation_space("rand", 31, 200, 331)}
    # RandAugment(magnitude=9) of 31 bins
    assert rand["ShearX"][9] == pytest.approx(0.09) and rand["Rotate"][9] == pytest.approx(9.0)
    assert rand["TranslateX"][30] == pytest.approx(150.0) and rand["TranslateY"][30] == pytest.approx(150 / 331 * 200)
    assert rand["Brightness"][9] == pytest.approx(0.27) and rand["Solarize"][9] == pytest.approx(0.7)
    assert rand["Posterize"].tolist() == [8] * 4 + [7] * 8 + [6] * 7 + [5] * 8 + [4] * 4  # torch.round: half to even
    wide = {n: m for n, m, _ in P.augmentation_space("wide", 31, 1, 1)}
    assert wide["Rotate"][-1] == 135.0 and wide["TranslateX"][-1] == 32.0 and wide["Color"][-1] == pytest.approx(0.99)
    assert wide["Posterize"][0] == 8 and wide["Posterize"][-1] == 2
    mix = {n: m for n, m, _ in P.augmentation_space("augmix", 10, 30, 60)}
    assert mix["Posterize"].tolist() == [4, 4, 3, 3, 2, 2, 1, 1, 0, 0]  # round(4 - i / 2.25), half to even
    assert mix["TranslateX"][-1] == pytest.approx(20.0)
    assert mix["TranslateY"][-1] == pytest.approx(10.0)
    auto = P.augmentation_space("auto", 10, 1, 1)
    assert auto[-1][0] == "Invert" and len(P._AUTO_POLICIES["imagenet"]) == 25
    assert all(len(v) == 25 for v in P._AUTO_POLICIES.values())


# --------------------------------------------------------------------------- per-op definitions


def _pil_affine(x, matrix, fill=0):
    h, w = x.shape[:2]
    return np.asarray(Image.fromarray(x).transform((w, h), Image.AFFINE, tuple(matrix), Image.NEAREST, fillcolor=fill))


def _matrix(name, mag, h, w):
    """torchvision's PIL-path matrix for the op: F.affine / F.rotate with their centres."""
    if name.startswith("Shear"):
        d = math.degrees(math.atan(mag))
        return _tv_inverse_affine((0.0, 0.0), 0.0, (0.0, 0.0), 1.0, (d, 0.0) if name == "ShearX" else (0.0, d))
    if name.startswith("Translate"):
        t = float(int(mag))
        return _tv_inverse_affine((w * 0.5, h * 0.5), 0.0, (t, 0.0) if name == "TranslateX" else (0.0, t), 1.0,
                                  (0.0, 0.0))
    return _tv_inverse_affine((w * 0.5, h * 0.5), -mag, (0.0, 0.0), 1.0, (0.0, 0.0))


@pytest.mark.parametrize("name, mag", [("ShearX", 0.3), ("ShearX", -0.99), ("ShearY", 0.23), ("ShearY", -0.6),
                                       ("TranslateX", 7.9), ("TranslateY", -5.2), ("Rotate", 30.0),
                                       ("Rotate", -135.0), ("Rotate", 90.0)])
def test_geometric_ops_match_torchvision_on_pil(name, mag):
    """Equal to PIL's nearest affine warp except where the source coordinate is within
    1e-4 of a pixel boundary (a tie: grid_sample rounds half to even, PIL floors)."""
    h, w = X.shape[:2]
    m = _matrix(name, mag, h, w)
    ours = op(name, X, mag).astype(np.uint8)
    ref = _pil_affine(X, m)
    jj, ii = np.meshgrid(np.arange(w) + 0.5, np.arange(h) + 0.5)
    xin = m[0] * jj + m[1] * ii + m[2]
    yin = m[3] * jj + m[4] * ii + m[5]
    near = lambda v: np.abs(v - np.round(v)) < 1e-4  # noqa: E731
    differ = (ours != ref).any(-1)
    assert not np.any(differ & ~(near(xin) | near(yin)))
    assert differ.mean() < 0.1
    if name == "Rotate" and mag == 90.0:  # a quarter turn counter-clockwise of a square crop is np.rot90
        sq = X[:20, :20]
        assert np.array_equal(op(name, sq, mag).astype(np.uint8), np.rot90(sq))


def test_translate_is_an_integer_shift_with_fill():
    y = op("TranslateX", X, 3.7, fill=17.0)  # int(3.7) = 3 pixels right
    assert np.array_equal(y[:, 3:], X[:, :-3]) and np.all(y[:, :3] == 17)
    y = op("TranslateY", X, -2.2)
    assert np.array_equal(y[:-2], X[2:]) and np.all(y[-2:] == 0)


def _tv_luma(x, integer):
    g = 0.2989 * x[..., 0:1] + 0.587 * x[..., 1:2] + 0.114 * x[..., 2:3]
    return np.floor(g) if integer else g


def _tv_colour(name, x, mag, bound, integer):
    """torchvision v2 adjust_brightness / adjust_saturation / adjust_contrast (float64),
    ``_blend(image, other, 1 + mag)`` clamped to [0, bound]."""
    f = 1.0 + mag
    if name == "Brightness":
        other = 0.0
    elif name == "Color":
        other = _tv_luma(x, integer)
    else:
        other = _tv_luma(x, integer).mean()
    return np.clip(f * x + (1 - f) * other, 0, bound)


@pytest.mark.parametrize("name", ["Brightness", "Color", "Contrast"])
@pytest.mark.parametrize("mag", [-0.9, -0.27, 0.5, 0.99])
def test_colour_ops_match_torchvision(name, mag):
    xf = X.astype(np.float64) / 255
    np.testing.assert_allclose(op(name, xf, mag, m=1.0), _tv_colour(name, xf, mag, 1.0, False), atol=2e-6)
    ours = op(name, X, mag)  # float result before the final rounding
    np.testing.assert_allclose(ours, _tv_colour(name, X.astype(np.float64), mag, 255.0, True), atol=2e-4)


@pytest.mark.parametrize("name, mag, ref", [
    ("Sharpness", 0.5, lambda x: imgproc.adjust_sharpness(x, 1.5)),
    ("Sharpness", -0.9, lambda x: imgproc.adjust_sharpness(x, 0.1)),
    ("Posterize", 5.0, lambda x: imgproc.posterize(x, 5)),
    ("Solarize", 0.7, lambda x: imgproc.solarize(x, 0.7 * 255)),
    ("AutoContrast", 0.0, imgproc.autocontrast),
    ("Equalize", 0.0, imgproc.equalize),
    ("Invert", 0.0, imgproc.invert),
    ("Identity", 0.0, lambda x: x),
])
def test_intensity_ops_are_the_public_ones(name, mag, ref):
    """Sharpness, Posterize, ... are the intensity ops tested against Pillow in test_intensity."""
    from imgproc.core.arrays import to_output
    ours = np.asarray(to_output(jnp.asarray(op(name, X, mag)), np.uint8))
    assert np.array_equal(ours, np.asarray(ref(X)))


# --------------------------------------------------------------------------- distributions


def _draw(sample, **options):
    return jax.vmap(lambda k: sample(k, (16, 16, 3), layout="HWC", **options))(KEYS)


def _check_magnitudes(ops, mags, space, bins=None):
    for i, (name, table, signed) in enumerate(space):
        sel = ops == i
        if not sel.any():
            continue
        got = np.abs(mags[sel])
        if table is None:
            assert np.all(got == 0), name
            continue
        allowed = np.abs(table if bins is None else table[bins]).astype(np.float32)
        assert np.all(np.isin(got, allowed)), name
        if signed and np.any(got > 0):
            neg = np.sum(mags[sel] < 0)
            assert within(neg, int(np.sum(got > 0)), 0.5), name


def test_rand_augment_draws():
    p = _draw(P._rand_params, num_ops=2, magnitude=9)
    ops, mags = np.asarray(p["op"]), np.asarray(p["magnitude"])
    assert ops.shape == (N_DRAWS, 2)
    counts = np.bincount(ops.ravel(), minlength=14)
    assert all(within(c, ops.size, 1 / 14) for c in counts), counts
    _check_magnitudes(ops.ravel(), mags.ravel(), P.augmentation_space("rand", 31, 16, 16), bins=9)


def test_trivial_augment_draws():
    p = _draw(P._wide_params)
    ops, mags = np.asarray(p["op"]).ravel(), np.asarray(p["magnitude"]).ravel()
    counts = np.bincount(ops, minlength=14)
    assert all(within(c, ops.size, 1 / 14) for c in counts), counts
    space = P.augmentation_space("wide", 31, 16, 16)
    _check_magnitudes(ops, mags, space)
    rot = np.abs(mags[ops == 5])  # Rotate: the bin is uniform over 31
    bins = np.round(rot / (135.0 / 30)).astype(int)
    assert all(within(c, rot.size, 1 / 31) for c in np.bincount(bins, minlength=31))


def test_auto_augment_draws():
    p = _draw(P._auto_params, policy="imagenet")
    sub, ops, mags = np.asarray(p["sub_policy"]), np.asarray(p["op"]), np.asarray(p["magnitude"])
    assert all(within(c, N_DRAWS, 1 / 25) for c in np.bincount(sub, minlength=25))
    names = [n for n, _, _ in P.augmentation_space("auto", 10, 16, 16)]
    table = {n: m for n, m, _ in P.augmentation_space("auto", 10, 16, 16)}
    applied_total = {}
    for s, policy in enumerate(P._AUTO_POLICIES["imagenet"]):
        rows = sub == s
        for k, (name, prob, b) in enumerate(policy):
            applied = ops[rows, k] != 0
            assert np.all(ops[rows, k][applied] == names.index(name))
            if b is not None:
                assert np.allclose(np.abs(mags[rows, k][applied]), np.float32(table[name][b]))
            applied_total.setdefault(prob, [0, 0])
            applied_total[prob][0] += int(applied.sum())
            applied_total[prob][1] += int(rows.sum())
    for prob, (a, n) in applied_total.items():  # each probability, pooled over the steps that use it
        assert within(a, n, prob) if 0 < prob < 1 else a == n * prob, (prob, a, n)


def test_aug_mix_draws():
    p = _draw(P._augmix_params, severity=3, width=3, depth=-1, alpha=1.0)
    ops, mags, w = np.asarray(p["op"]), np.asarray(p["magnitude"]), np.asarray(p["weights"])
    assert ops.shape == (N_DRAWS, 3, 3) and w.shape == (N_DRAWS, 4)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)
    assert np.all(w >= 0)
    assert abs(w[:, 0].mean() - 0.5) < 0.03  # Beta(1, 1) for the original's weight
    depth = (ops != 0).sum(-1)
    assert np.all(ops[..., 0] != 0) and np.all(np.diff((ops != 0).astype(int), axis=-1) <= 0)
    assert all(within(c, depth.size, 1 / 3) for c in np.bincount(depth.ravel(), minlength=4)[1:])
    drawn = ops[ops != 0]
    assert all(within(c, drawn.size, 1 / 13) for c in np.bincount(drawn, minlength=14)[1:])
    _check_magnitudes(ops.ravel(), mags.ravel(), P.augmentation_space("augmix", 10, 16, 16), bins=slice(0, 3))


# --------------------------------------------------------------------------- running


SPECS = [
    {"op": "rand_augment", "num_ops": 3, "magnitude": 15},
    {"op": "trivial_augment"},
    {"op": "auto_augment", "policy": "imagenet"},
    {"op": "aug_mix", "severity": 5, "width": 2},
]


@pytest.mark.parametrize("spec", SPECS, ids=[s["op"] for s in SPECS])
def test_every_strategy_gives_the_same_values(spec):
    outs = [imgproc.Pipeline([{**spec, "strategy": s, "group_size": 2}])(BATCH, key=5) for s in STRATEGIES]
    for o in outs[1:]:
        np.testing.assert_array_equal(outs[0], o)
    assert not np.array_equal(outs[0], BATCH)
    # the op called directly on one image with the pipeline's key of image i gives image i
    fn = getattr(imgproc, spec["op"])
    options = {k: v for k, v in spec.items() if k != "op"}
    key = jax.random.fold_in(jax.random.fold_in(jax.random.key(5), 2), 0)  # image 2, stage 0
    np.testing.assert_array_equal(fn(key, BATCH[2], **options), outs[0][2])


@pytest.mark.parametrize("policy", ["rand", "wide", "auto", "augmix"])
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
def test_the_warps_share_one_branch_with_each_warps_own_numbers(policy, interpolation):
    """A policy's five warps are one branch of its step's switch (policies._warp): each
    gives what the op alone gives (op_fn, checked against torchvision above), bit for bit."""
    names = tuple(n for n, _, _ in P.augmentation_space(policy, 10, 1, 1))
    x = jnp.asarray(X, jnp.float32)
    step = jax.jit(P._one_step(names, 255.0, jnp.float32(7.0), interpolation))
    for op, name in enumerate(names):
        if name in P.WARP_OPS:
            for mag in (-0.4, 3.7, 17.0):
                want = jax.jit(lambda v, m, n=name: P.op_fn(n, v, m, 255.0, jnp.float32(7.0), interpolation))
                np.testing.assert_array_equal(step(x, op, jnp.float32(mag)), want(x, jnp.float32(mag)),
                                              err_msg=f"{policy} {name} {mag}")
    jaxpr = jax.make_jaxpr(lambda v, o, m: P._one_step(names, 255.0, 7.0, interpolation)(v, o, m))(x, 1, 0.5)
    (switch,) = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "cond"]
    assert len(switch.params["branches"]) == len(names) - len(P.WARP_OPS) + 1


@pytest.mark.cpu_only("how XLA:CPU's gathers are counted in a compiled step")
def test_a_known_zero_fill_warps_the_image_alone():
    """A fill known when the step is built stays a constant in the switch's branches (an
    array would become an operand there, a traced value): a zero fill (TrivialAugment's
    default) warps the image alone, two gathers fewer than a nonzero fill's warp, which
    also warps a mask of ones (policies._fill, warp.warp_affine); its values are those of
    a traced zero fill, bit for bit."""
    names = tuple(n for n, _, _ in P.augmentation_space("wide", 31, 1, 1))
    x = jnp.asarray(X, jnp.float32)

    def gathers(fill):
        step = jax.jit(lambda v, o, m: P._one_step(names, 255.0, P._fill(fill), "bilinear")(v, o, m))
        return step.lower(x, 1, jnp.float32(0.5)).compile().as_text().count(" gather(")

    assert gathers(3.0) - gathers(0.0) == 2
    known = jax.jit(lambda v, o, m: P._one_step(names, 255.0, P._fill(0.0), "bilinear")(v, o, m))
    traced = jax.jit(lambda v, o, m, f: P._one_step(names, 255.0, P._fill(f), "bilinear")(v, o, m))
    for op, name in enumerate(names):
        if name in P.WARP_OPS:
            for mag in (-0.4, 3.7, 17.0):
                np.testing.assert_array_equal(known(x, op, jnp.float32(mag)),
                                              traced(x, op, jnp.float32(mag), jnp.float32(0.0)), err_msg=name)


def test_nchw_gives_the_nhwc_numbers():
    nhwc = imgproc.rand_augment(5, BATCH, num_ops=3, magnitude=20, strategy="map")
    nchw = imgproc.rand_augment(5, np.moveaxis(BATCH, -1, 1), num_ops=3, magnitude=20, strategy="map", layout="NCHW")
    np.testing.assert_array_equal(np.moveaxis(nchw, 1, -1), nhwc)


@pytest.mark.parametrize("spec", SPECS[:1], ids=[s["op"] for s in SPECS[:1]])
def test_pipeline_batch_split_and_replay(spec):
    pipe = imgproc.Pipeline([spec, {"op": "random_flip_left_right"}])
    y, params = pipe(BATCH, key=9, return_params=True)
    a = pipe(BATCH[:2], key=9, indices=np.arange(2))
    b = pipe(BATCH[2:], key=9, indices=np.arange(2, 5))
    np.testing.assert_array_equal(np.concatenate([a, b]), y)
    np.testing.assert_array_equal(pipe.apply(BATCH, params), y)


def test_grayscale_and_float_images():
    gray = BATCH[0, ..., 0]
    for seed in (1,):
        one = imgproc.trivial_augment(seed, gray)
        assert one.shape == gray.shape and one.dtype == np.uint8
        p = P._wide_params(jax.random.key(seed), gray.shape, layout="HW")
        name = [n for n, _, _ in P.augmentation_space("wide", 31, 1, 1)][int(p["op"][0])]
        ref = op(name, gray[..., None], float(p["magnitude"][0]))[..., 0]
        np.testing.assert_array_equal(one, np.clip(np.round(ref), 0, 255).astype(np.uint8))
    f = imgproc.rand_augment(1, BATCH.astype(np.float32) / 255, num_ops=4)
    assert f.dtype == np.float32 and f.min() >= 0 and f.max() <= 1


@pytest.mark.parametrize("call, match", [
    (lambda x: imgproc.rand_augment(0, x, magnitude=31), r"magnitude must be an integer in \[0, 30\]"),
    (lambda x: imgproc.rand_augment(0, x, magnitude=-1), "magnitude"),
    (lambda x: imgproc.rand_augment(0, x, magnitude=5, num_magnitude_bins=5), r"\[0, 4\]"),
    (lambda x: imgproc.rand_augment(0, x, num_ops=-1), "num_ops"),
    (lambda x: imgproc.rand_augment(0, x, strategy="fast"), "strategy must be one of"),
    (lambda x: imgproc.auto_augment(0, x, policy="coco"), "policy must be one of 'imagenet', 'cifar10', 'svhn'"),
    (lambda x: imgproc.aug_mix(0, x, severity=0), "severity"),
    (lambda x: imgproc.aug_mix(0, x, severity=11), "severity"),
    (lambda x: imgproc.aug_mix(0, x, alpha=0.0), "alpha"),
    (lambda x: imgproc.aug_mix(0, x, width=0), "width"),
    (lambda x: imgproc.trivial_augment(0, x, fill=float("nan")), "fill"),
    (lambda x: imgproc.Pipeline([{"op": "rand_augment", "magnitude": 40}]), "magnitude"),
    (lambda x: imgproc.Pipeline([{"op": "auto_augment", "policy": "x"}]), "policy"),
])
def test_bad_arguments_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call(BATCH)
