"""Every registered op is differentiable (kornia's ``gradcheck`` in its ``BaseTester``, run
over the registry): on a float image, ``jax.grad`` with respect to the image and to each
continuous option agrees with central differences of the same function. An op with no
useful gradient by nature says so (``OpInfo.not_differentiable``, and its docstring), and
this file checks exactly that list.

How: ``f(x, options) = sum(w * op(x, options))`` for a fixed random ``w``; its reverse-mode
gradient, projected on random directions ``v`` (of the image, of each option), against
``(f(p + eps v) - f(p - eps v)) / (2 eps)`` evaluated in float64, at points away from the
documented kinks (the image's values are distinct levels ``1/n`` apart, so a step of
``eps`` reorders no two pixels: the order statistics and the clips keep their branch). A
random op is checked with its drawn parameters held (``apply`` with fixed ``params``).

The differences need x64: JAX fixes ``jax_enable_x64`` when it starts, so in an ordinary
pytest process ``test_in_an_x64_process`` runs this file again in its own process with
``JAX_ENABLE_X64=1`` (and the caller's ``-m``, so the fast tier leaves out the cases
listed in tests/slow_tests.txt there too) and fails unless every case there passed. The
cases are dealt into ``X64_SHARDS`` such processes (``IMGPROC_X64_SHARD=i/n``), so that the
workers of a parallel run share them. The
ops still compute in float32 inside (their documented precision), so the step and the
tolerance are sized for float32 rounding (``_tolerance``), not float64's.
"""

from __future__ import annotations

import functools
import inspect
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import imgproc
from imgproc.core.registry import Stage, lookup
from jaxprs import equations
from op_examples import EXAMPLE_OPTIONS
from subprocesses import run_suite_part

X64 = bool(jax.config.jax_enable_x64)
in_x64 = pytest.mark.skipif(not X64, reason="runs in its own x64 process (test_in_an_x64_process)")
OPS = sorted(imgproc.registered_ops())
X64_SHARDS = 4


def _shard(names):
    """The names this x64 process checks: every ``n``-th from the ``i``-th of
    ``IMGPROC_X64_SHARD=i/n``, all of them without it."""
    spec = os.environ.get("IMGPROC_X64_SHARD")
    if spec is None:
        return names
    i, n = map(int, spec.split("/"))
    return names[i::n]

# The ops with no useful gradient: their result is piecewise constant in the image (each
# one's OpInfo.not_differentiable and docstring say why). Every other op is checked.
NOT_DIFFERENTIABLE = {
    "posterize", "random_posterize", "equalize", "random_equalize", "clahe", "random_clahe",
    "jpeg_compression", "random_jpeg_compression", "bm3d",
    "binary_erosion", "binary_dilation", "binary_opening", "binary_closing", "threshold",
}

# Options for a float image in 0..1 where tests/op_examples.py gives uint8 levels.
FLOAT_OPTIONS = {
    "solarize": {"threshold": 0.4},
    "bm3d": {"sigma": 0.08},
    "bilateral": {"sigma_color": 0.2, "sigma_spatial": 1.5},
    # a factor that keeps the result inside [0, 1], away from the clip's kink
    "random_adjust_sharpness": {"factor": 0.5, "p": 1.0},
    # auto compiles every method's gradient in its per-image switch (minutes); one method
    # checks the dispatch, and each method is checked as its own op
    "denoise": {"method": "bilateral", "sigma": 0.1},
    # one chain of one op: the mix's own gradient (its weights, the skip); each op a
    # chain can draw is checked as its own op
    "aug_mix": {"width": 1, "depth": 1},
}

# The continuous options of each op, and the point their derivative is taken at, with the
# static options that must go with them (a traced Gaussian sigma needs a size). Options
# that are not here are integers, names, shapes, or thresholds whose result jumps
# (solarize's threshold, a random op's probabilities): a step has no derivative.
OPTION_POINTS = {
    "adjust_brightness": ({"delta": 0.1}, {}),
    "adjust_contrast": ({"factor": 1.5}, {}),
    "adjust_gamma": ({"gamma": 0.8, "gain": 1.1}, {}),
    "adjust_hue": ({"delta": 0.2}, {}),
    "adjust_saturation": ({"factor": 0.5}, {}),
    "adjust_sharpness": ({"factor": 0.5}, {}),
    "affine": ({"angle": 12.0, "scale": 0.9, "cval": 0.3}, {}),
    "rotate": ({"angle": 20.0, "cval": 0.3}, {"mode": "constant"}),
    # not a whole shift: a sample exactly on the edge jumps to cval in mode constant (scipy's rule)
    "translate": ({"dy": 1.4, "dx": -2.3}, {}),
    "gaussian_blur": ({"sigma": 1.5, "cval": 0.3}, {"size": 7, "mode": "constant"}),
    "gaussian_laplace": ({"sigma": 1.0}, {"size": 7}),
    "gaussian_gradient_magnitude": ({"sigma": 1.2}, {"size": 7}),
    "unsharp_mask": ({"amount": 1.2, "sigma": 1.0}, {"size": 5}),
    "sharpen": ({"center": 5.0}, {}),
    "box_blur": ({"cval": 0.3}, {"mode": "constant"}),
    "bilateral": ({"sigma_color": 0.2, "sigma_spatial": 1.5}, {"size": 5}),
    "nl_means": ({"h": 0.2, "sigma": 0.05}, {"patch_size": 3, "search_size": 5}),
    "tv_chambolle": ({"weight": 0.1}, {"n_iter": 30, "eps": 0.0}),
    "normalize": ({"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}, {}),
    "erase": ({"value": 0.3}, {}),
    "pad": ({"cval": 0.3}, {"mode": "constant"}),
    "letterbox": ({"cval": 0.5}, {}),
    "resized_crop": ({"top": 1.5, "left": 0.5, "height": 5.0, "width": 6.0}, {}),
}

SHAPE = (12, 14, 3)
STEPS = (1e-3, 3e-4, 1e-4)
# the float32 rounding allowance's margin: the tightest op (nl_means) needs more than 0.5;
# at 10 a 5 % error in a gradient passed (the separable passes' JVP scaled by 1.05); at 2
# one of 1 % fails the filters' checks
ROUNDING_MARGIN = 2


@pytest.mark.child_process
@pytest.mark.skipif(X64, reason="this is the x64 process itself")
@pytest.mark.parametrize("shard", range(X64_SHARDS))
def test_in_an_x64_process(request, shard):
    env = dict(os.environ, JAX_ENABLE_X64="1", JAX_PLATFORMS="cpu", IMGPROC_X64_SHARD=f"{shard}/{X64_SHARDS}")
    # the colour-planes check reads the programs' structure: once, here, is enough
    run_suite_part(__file__, env, deselect="(test_in_an_x64_process or test_no_gradient_sums_over_the_colour_planes)",
                   min_passed=5,
                   markexpr=request.config.getoption("markexpr") or "")


def test_the_ops_without_a_gradient_are_exactly_those_that_say_so():
    said = {n for n in OPS if lookup(n).not_differentiable}
    assert said == NOT_DIFFERENTIABLE
    for name in said:
        doc = " ".join((lookup(name).fn.__doc__ or "").split()).lower()
        assert "not differentiable" in doc, name
    assert all(n in OPS for n in OPTION_POINTS)
    assert "not differentiable" in " ".join(imgproc.threshold_otsu.__doc__.split()).lower()


def _image(shape=SHAPE, seed=0):
    """Distinct levels 0.8/n apart in [0.1, 0.9], shuffled: the smallest step moves no two
    pixels past each other (order statistics and clips keep their branch)."""
    n = int(np.prod(shape))
    levels = 0.1 + 0.8 * np.arange(n) / (n - 1)
    return jnp.asarray(np.random.default_rng(seed).permutation(levels).reshape(shape))


def _flat_grey_black_white(shape):
    """An image with what photos have and :func:`_image` avoids: a flat patch, grey pixels
    (R = G = B: hue undefined), black (0) and white (1)."""
    x = np.asarray(_image(shape, seed=3)).copy()
    x[:5, :6] = 0.5
    x[6:, 8:] = x[6:, 8:, :1]
    x[0, -4:], x[1, -4:] = 0.0, 1.0
    return jnp.asarray(x)


# ops whose gradient is infinite at black, as x ** gamma's for gamma < 1 (their docstrings)
INFINITE_AT_BLACK = {"adjust_gamma", "random_gamma"}


def _agrees(name, what, ana, nums, w, y):
    """``ana`` (grad · v) against the central differences ``nums`` at each of STEPS: it must
    agree with one of them within ROUNDING_MARGIN times the float32 rounding of
    ``sum(w * y)`` over twice the step (the ops compute in float32) plus 0.2 %. Several steps, since a kink (a clip, a max,
    a hue sextant) a step crosses spoils that step's difference but not a smaller one's."""
    rounding = 6e-8 * ROUNDING_MARGIN * float(jnp.linalg.norm(w)) * max(1.0, float(jnp.max(jnp.abs(y))))
    errors = [abs(ana - num) - (2e-3 * abs(ana) + rounding / eps + 1e-6) for num, eps in zip(nums, STEPS)]
    assert min(errors) <= 0, (f"{name}, {what}: grad·v {ana:.6g}, central differences "
                              f"{', '.join(f'{float(n):.6g}' for n in nums)} at steps {STEPS}")


@in_x64
@pytest.mark.parametrize("name", _shard([n for n in OPS if n not in NOT_DIFFERENTIABLE]))
def test_image_gradient_matches_central_differences(name):
    stage = Stage.of({"op": name, **EXAMPLE_OPTIONS.get(name, {}), **FLOAT_OPTIONS.get(name, {})})
    x = _image((12, 12, 3) if "rot90" in name else SHAPE)
    params = stage.sample(jax.random.key(1), x.shape, layout="HWC", max_value=1.0)
    _check_image_gradient(name, lambda a: stage.apply(a, params, layout="HWC", max_value=1.0), x,
                          _flat_grey_black_white(x.shape))


# The colour-space conversions (functions, not stages), each with what makes its input
# from an RGB image in [0, 1]: the inverse conversions read the forward ones' results.
CONVERSIONS = {
    "rgb_to_hsv": (imgproc.rgb_to_hsv, None),
    "hsv_to_rgb": (imgproc.hsv_to_rgb, imgproc.rgb_to_hsv),
    "rgb_to_ycbcr": (imgproc.rgb_to_ycbcr, None),
    "rgb_to_ycbcr, full range": (functools.partial(imgproc.rgb_to_ycbcr, full_range=True), None),
    "ycbcr_to_rgb": (imgproc.ycbcr_to_rgb, imgproc.rgb_to_ycbcr),
    "rgb_to_lab": (imgproc.rgb_to_lab, None),
    "lab_to_rgb": (imgproc.lab_to_rgb, imgproc.rgb_to_lab),
}


def test_the_colour_conversions_are_the_public_ones():
    from test_architecture import NOT_STAGES

    public = {n for n, why in NOT_STAGES.items() if why.startswith("a colour-space conversion")}
    assert public == {name.split(",")[0] for name in CONVERSIONS}


@in_x64
@pytest.mark.parametrize("name", _shard(sorted(CONVERSIONS)))
def test_colour_conversion_gradient_matches_central_differences(name):
    convert, prepare = CONVERSIONS[name]
    made = (lambda a: jnp.asarray(prepare(a), jnp.float64)) if prepare else (lambda a: a)
    _check_image_gradient(name, lambda a: convert(a, layout="HWC"), made(_image()),
                          made(_flat_grey_black_white(SHAPE)))


def _check_image_gradient(name, op, x, photo):
    """``op``'s gradient with respect to the image ``x`` against central differences along
    two random directions, and finite at ``photo`` (flat, grey, black and white pixels)."""
    rng = np.random.default_rng(1)
    w = jnp.asarray(rng.standard_normal(jax.eval_shape(op, x).shape))
    f = lambda a: jnp.sum(w * op(a))
    vs = jnp.asarray(rng.uniform(-1, 1, (2, *x.shape)))
    steps = jnp.asarray(STEPS)

    def value_and_gradient(a):  # the op and its gradient in one: grad f = pullback(w)
        y, pullback = jax.vjp(op, a)
        return y, pullback(w.astype(y.dtype))[0]

    @jax.jit
    def check(x):
        # at the image and at the photo-like one in one batch (one backward program)
        (y, _), (g, g_photo) = jax.vmap(value_and_gradient)(jnp.stack([x, photo]))
        # the differences' shifted images in one batch: direction x (+steps, -steps)
        shifts = jnp.concatenate([steps, -steps])
        values = jax.vmap(lambda v: jax.vmap(lambda e: f(x + e * v))(shifts))(vs)
        return y, g, (values[:, :len(STEPS)] - values[:, len(STEPS):]) / (2 * steps), g_photo

    y, g, nums, g_photo = check(x)
    assert np.any(np.asarray(nums) != 0), f"{name}: the result does not depend on the image"
    # finite on flat, grey, black and white pixels too (a square root or a division at 0
    # there made tv_chambolle's NaN, a cube root rgb_to_lab's)
    bad = ~np.isfinite(np.asarray(g_photo))
    allowed = np.asarray(photo == 0) if name in INFINITE_AT_BLACK else np.zeros_like(bad)
    assert not (bad & ~allowed).any(), f"{name}: gradient not finite at {np.argwhere(bad & ~allowed)[:4].tolist()}"
    for k in range(len(vs)):
        _agrees(name, f"image direction {k}", float(jnp.vdot(g, vs[k])), np.asarray(nums[k]), w, y)


@in_x64
@pytest.mark.parametrize("name", _shard(sorted(OPTION_POINTS)))
def test_option_gradients_match_central_differences(name):
    info = lookup(name)
    traced, static = OPTION_POINTS[name]
    static = {**EXAMPLE_OPTIONS.get(name, {}), **FLOAT_OPTIONS.get(name, {}), **static}
    static = {k: v for k, v in static.items() if k not in traced}
    if "max_value" in inspect.signature(info.fn).parameters:
        static["max_value"] = 1.0
    x = _image()
    rng = np.random.default_rng(2)
    point = {k: jnp.asarray(v, jnp.float64) for k, v in traced.items()}
    op = lambda a, opts: info.fn(a, **static, **opts, layout="HWC")
    w = jnp.asarray(rng.standard_normal(jax.eval_shape(op, x, point).shape))
    f = lambda opts: jnp.sum(w * op(x, opts))
    # a direction for each option in turn, scaled to its value (an angle in degrees moves more)
    dirs = []
    for k, v in point.items():
        d = {j: jnp.zeros_like(u) for j, u in point.items()}
        d[k] = jnp.asarray(rng.uniform(0.5, 1.0, v.shape) * np.maximum(1.0, np.abs(np.asarray(v))))
        dirs.append((k, d))

    stacked = {j: jnp.stack([d[j] for _, d in dirs]) for j in point}  # the directions, one per row
    steps = jnp.asarray(STEPS)

    @jax.jit
    def check(point):
        y, pullback = jax.vjp(lambda p: op(x, p), point)  # the op and its gradient in one
        (g,) = pullback(w.astype(y.dtype))
        # the differences' points in one batch: direction x (+steps, -steps)
        shifts = jnp.concatenate([steps, -steps])
        moved = lambda d, e: f(jax.tree.map(lambda p, dd: p + e * dd, point, d))
        values = jax.vmap(lambda d: jax.vmap(lambda e: moved(d, e))(shifts))(stacked)
        return y, g, (values[:, :len(STEPS)] - values[:, len(STEPS):]) / (2 * steps)

    y, g, nums = check(point)
    for (k, d), num in zip(dirs, nums):
        ana = float(sum(jnp.vdot(g[j], d[j]) for j in point))
        assert np.any(np.asarray(num) != 0), f"{name}: the result does not depend on {k}"
        _agrees(name, k, ana, np.asarray(num), w, y)


def _outer_sums(jaxpr):
    """The ``reduce_sum`` equations of ``jaxpr`` (nested ones too) over an axis other than
    the last that leave at least 2048 values inside each summed element (of a 64 x 64
    image: the colour planes), with the axes of size 1 left out (a reshape)."""
    found = []
    for eqn in equations(jaxpr, "reduce_sum"):
        shape = eqn.invars[0].aval.shape
        axes = [a for a in eqn.params["axes"] if shape[a] > 1]
        if axes and len(shape) - 1 not in axes and np.prod(shape[max(axes) + 1:]) >= 2048:
            found.append((shape, tuple(axes)))
    return found


@pytest.mark.parametrize("name", [n for n in OPS if n not in NOT_DIFFERENTIABLE])
def test_no_gradient_sums_over_the_colour_planes(name):
    """No op's gradient sums over an outer axis of a large array: reverse mode writes a
    broadcast's derivative as such a sum (a weight map shared by the colour planes), and
    jaxlib 0.10's XLA:CPU runs it in YNNPACK 10-45 times slower than its own loop (the
    bilateral's and NL-means' gradients were 4 times slower; benchmarks/NOTES.md,
    "XLA:CPU's library reductions"). ``imgproc.core.arrays.repeated`` is the way round."""
    stage = Stage.of({"op": name, **EXAMPLE_OPTIONS.get(name, {}), **FLOAT_OPTIONS.get(name, {})})
    x = jnp.zeros((64, 64, 3), jnp.float32)
    params = stage.sample(jax.random.key(1), x.shape, layout="HWC", max_value=1.0)
    op = lambda a: stage.apply(a, params, layout="HWC", max_value=1.0)
    w = jnp.ones(jax.eval_shape(op, x).shape, jnp.float32)
    traced = jax.make_jaxpr(jax.grad(lambda a: jnp.sum(w * op(a))))(x)
    assert _outer_sums(traced.jaxpr) == [], name
