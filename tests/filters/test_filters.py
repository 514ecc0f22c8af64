"""Every filter from the shared case table: reference parity, transforms, properties."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import imgproc
import scipy.ndimage as ndi
from cases import CASE_IDS, CASES, SCIPY_FILTER_CASES, SCIPY_IMAGE, from_layout, reference, to_layout
from jaxprs import equations

MODES = imgproc.MODES
LAYOUTS = imgproc.LAYOUTS
CVAL = 0.25


def _image(rng, h=19, w=23, c=3):
    return rng.random((h, w, c), dtype=np.float32)


def _expected(case, hwc, layout, mode, cval=CVAL):
    """Reference in the same layout as the input of ``to_layout(hwc, layout)``."""
    src = from_layout(to_layout(hwc, layout), layout)
    if src.ndim == 4:
        return np.stack([reference(case, im, mode, cval) for im in src])
    return reference(case, src, mode, cval)


# Every filter's body sees (B, H, W, C) whatever the caller's layout (the stage moves the
# image there first: imgproc.filters.convolution._stage_fn, to_bhwc), so a mode's borders
# cannot depend on the layout: every mode in NCHW (batched and channels first, the layout
# moved most), and every other layout in mode "constant" (cval's borders).
MODE_LAYOUT = [(mode, "NCHW") for mode in MODES] + [("constant", layout) for layout in LAYOUTS if layout != "NCHW"]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("mode, layout", MODE_LAYOUT)
def test_float32_parity_every_mode_and_layout(case, mode, layout, rng):
    hwc = _image(rng)
    x = to_layout(hwc, layout)
    layout_arg = layout if layout in ("CHW", "NCHW") else None
    got = np.asarray(case.call(x, mode=mode, cval=CVAL, layout=layout_arg))
    assert got.dtype == np.float32 and got.shape == x.shape
    np.testing.assert_allclose(from_layout(got, layout), _expected(case, hwc, layout, mode), atol=1e-5, rtol=0)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("mode", MODES)
def test_uint8_within_one_level(case, mode, rng, strict_promotion):
    hwc = rng.integers(0, 256, (21, 18, 3)).astype(np.uint8)
    got = np.asarray(case.call(hwc, mode=mode, cval=40.0))
    if case.float_out:  # signed values in the image's units, not wrapped around as scipy's uint8
        assert got.dtype == np.float32
        ref = reference(case, hwc, mode, 40.0)
        np.testing.assert_allclose(got, ref, rtol=0, atol=2e-6 * max(1.0, np.abs(ref).max()))
        return
    assert got.dtype == np.uint8
    ref = np.clip(np.round(reference(case, hwc, mode, 40.0)), 0, 255)
    assert np.abs(got.astype(int) - ref).max() <= 1


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("dtype", ["uint16", "float16", "bfloat16"])
def test_other_dtypes(case, dtype, rng, strict_promotion):
    if dtype == "uint16":
        x = rng.integers(0, 65536, (16, 17, 2)).astype(np.uint16)
        got = np.asarray(case.call(x))
        if case.float_out:
            assert got.dtype == np.float32
            ref = reference(case, x, "reflect")
            np.testing.assert_allclose(got, ref, rtol=0, atol=2e-6 * max(1.0, np.abs(ref).max()))
            return
        ref = np.clip(np.round(reference(case, x, "reflect")), 0, 65535)
        assert got.dtype == np.uint16
        assert np.abs(got.astype(np.int64) - ref).max() <= 1
        return
    x32 = rng.random((16, 17, 2), dtype=np.float32)
    x = jnp.asarray(x32, dtype)
    got = case.call(x)
    assert got.dtype == (jnp.float32 if case.float_out else jnp.dtype(dtype))
    ref = reference(case, np.asarray(x.astype(jnp.float32)), "reflect")
    eps = float(jnp.finfo(dtype).eps)
    np.testing.assert_allclose(np.asarray(got.astype(jnp.float32)), ref, atol=4 * eps * max(1.0, np.abs(ref).max()))


# the derivative filters promise every lowering of imgproc.correlate (their module
# docstring): each of them is here, Sobel along both axes
METHOD_CASES = [c for c in CASES if c.name in ("correlate", "correlate_centre_plus_rank1", "convolve", "gaussian_blur",
                                                "box_blur", "sharpen", "gaussian_blur_order_per_axis", "sobel_rows",
                                                "sobel_cols", "prewitt_cols", "laplace", "gaussian_laplace",
                                                "gaussian_gradient_magnitude")]
# The primitive a lowering's program holds and no other lowering's does (the separable
# passes, the direct sums and the Pallas kernel hold neither): the method asked for is the
# one that ran, not "auto" (whose passes give the same values).
LOWERING_PRIMITIVES = {"conv": "conv_general_dilated", "convolve2d": "conv_general_dilated", "fft": "fft"}


# Each lowering writes the borders of every mode itself: every mode for an asymmetric
# kernel, a symmetric separable one and a derivative; the other kernels (the terms and
# centre weights the plans split them into) in a reflected and a constant border.
ALL_MODES_CASES = ("correlate", "gaussian_blur", "sobel_cols")
LOWERING_CASES = [(case, mode) for case in METHOD_CASES
                  for mode in (MODES if case.name in ALL_MODES_CASES else ("reflect", "constant"))]


@pytest.mark.parametrize("case, mode", LOWERING_CASES, ids=[f"{c.name}-{m}" for c, m in LOWERING_CASES])
@pytest.mark.parametrize("method", ["direct", "conv", "convolve2d", "fft", "separable", "pallas"])
def test_every_lowering_matches_reference(case, method, mode, rng):
    if method == "pallas":  # off a GPU it runs in Pallas's GPU interpret mode (jax >= 0.10)
        pytest.importorskip("jax._src.pallas.mosaic_gpu.interpret.params")
    hwc = _image(rng, 13, 11, 2)
    got = np.asarray(case.call(hwc, mode=mode, cval=CVAL, method=method))
    np.testing.assert_allclose(got, reference(case, hwc, mode, CVAL), atol=1e-5, rtol=0)
    program = jax.make_jaxpr(lambda im: case.call(im, mode=mode, cval=CVAL, method=method))(hwc).jaxpr
    for primitive in set(LOWERING_PRIMITIVES.values()):
        assert bool(equations(program, primitive)) == (LOWERING_PRIMITIVES.get(method) == primitive), primitive


@pytest.mark.parametrize("mode", MODES)
def test_a_kernel_far_larger_than_the_image_matches_its_reference_at_the_images_cost(mode, rng):
    """Kernels hundreds of times the image's side (sigma 500: 4,001 taps on 7 x 9 pixels;
    a random 61 x 61 kernel on 5 x 6) equal scipy's in every mode, and no array in the
    program is larger than the image extended by about its own size (the taps are folded
    onto what the extension repeats; unfolded, the FFT's plane would hold 16 million values)."""
    x = _image(rng, 7, 9)
    k = rng.standard_normal((61, 61)).astype(np.float32)
    # the 2-D kernel against NumPy's own extension (np.pad reflects again and again): scipy
    # 1.17's 2-D correlate returned values near 1e30 in reflect mode at this size
    # (its correlate1d and gaussian_filter are right)
    pad = {"reflect": "symmetric", "mirror": "reflect", "nearest": "edge"}.get(mode, mode)
    extended = np.pad(x[:5, :6].astype(np.float64), ((30, 30), (30, 30), (0, 0)), mode=pad,
                      **({"constant_values": 0.3} if mode == "constant" else {}))
    windows = np.lib.stride_tricks.sliding_window_view(extended, (61, 61), axis=(0, 1))
    calls = [(lambda a: imgproc.gaussian_blur(a, 500.0, mode=mode, cval=0.3), ndi.gaussian_filter(
                 x, (500.0, 500.0, 0), mode=mode, cval=0.3)),
             (lambda a: imgproc.correlate(a[:5, :6], k, mode=mode, cval=0.3, method="direct"),
              np.einsum("hwcij,ij->hwc", windows, k))]
    for call, want in calls:
        np.testing.assert_allclose(np.asarray(call(x)), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
        sizes = [int(np.prod(v.aval.shape)) for eqn in jax.make_jaxpr(call)(x).jaxpr.eqns for v in eqn.outvars]
        assert max(sizes) <= 64 * x.size


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_jit_equals_eager(case, rng):
    x = _image(rng)
    eager = np.asarray(case.call(x))
    jitted = np.asarray(jax.jit(lambda im: case.call(im))(x))
    np.testing.assert_allclose(jitted, eager, atol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_vmap_equals_loop(case, rng):
    batch = rng.random((3, 12, 14, 3), dtype=np.float32)
    mapped = np.asarray(jax.vmap(lambda im: case.call(im))(batch))
    looped = np.stack([np.asarray(case.call(im)) for im in batch])
    np.testing.assert_allclose(mapped, looped, atol=1e-6)


@pytest.mark.parametrize("case", [c for c in CASES if c.keeps_mean], ids=[c.name for c in CASES if c.keeps_mean])
@pytest.mark.parametrize("mode", ["reflect", "wrap", "nearest", "mirror"])
def test_constant_image_is_kept(case, mode):
    x = np.full((9, 10, 3), 0.375, np.float32)
    np.testing.assert_allclose(np.asarray(case.call(x, mode=mode)), x, atol=1e-6)


@pytest.mark.parametrize("case", [c for c in CASES if c.keeps_mean], ids=[c.name for c in CASES if c.keeps_mean])
def test_mean_preserved_with_wrap(case, rng):
    x = _image(rng)
    assert abs(float(np.asarray(case.call(x, mode="wrap")).mean()) - float(x.mean())) < 1e-5


def test_sigma_zero_is_identity(rng):
    x = _image(rng)
    np.testing.assert_array_equal(np.asarray(imgproc.gaussian_blur(x, 0.0)), x)
    np.testing.assert_array_equal(np.asarray(imgproc.unsharp_mask(x, sigma=0.0)), x)
    np.testing.assert_array_equal(np.asarray(imgproc.unsharp_mask(x, amount=0.0)), x)
    np.testing.assert_array_equal(np.asarray(imgproc.box_blur(x, 1)), x)


DERIVATIVES = {
    "sobel": lambda x, **o: imgproc.sobel(x, 0, **o),
    "prewitt": lambda x, **o: imgproc.prewitt(x, 1, **o),
    "laplace": imgproc.laplace,
    "gaussian_laplace": lambda x, **o: imgproc.gaussian_laplace(x, 1.0, **o),
    "gaussian_gradient_magnitude": lambda x, **o: imgproc.gaussian_gradient_magnitude(x, 1.0, **o),
    "gaussian_blur_order": lambda x, **o: imgproc.gaussian_blur(x, 1.0, order=(1, 2), **o),
}


@pytest.mark.parametrize("name", sorted(DERIVATIVES))
@pytest.mark.parametrize("mode", ["reflect", "wrap", "nearest", "mirror"])
def test_derivatives_of_a_constant_image_are_zero(name, mode):
    x = np.full((9, 10, 3), 0.375, np.float32)
    # scipy's second-derivative weights sum to about -7e-5 (sigma 1), not 0: so do these
    np.testing.assert_allclose(np.asarray(DERIVATIVES[name](x, mode=mode)), 0.0, atol=1e-4)


@pytest.mark.parametrize("name", ["sobel", "prewitt", "laplace", "gaussian_laplace", "gaussian_gradient_magnitude"])
@pytest.mark.parametrize("dtype", ["uint8", "uint16", "float16", "bfloat16", "float32"])
def test_derivative_filters_return_float32_for_every_dtype(name, dtype):
    """Signed values in the image's units: a falling uint8 edge stays negative (scipy's
    uint8 result would wrap it around to a large positive value)."""
    x = np.tile(np.arange(8)[::-1, None] * 30, (1, 6)).astype(np.float32)  # falls down the rows
    got = DERIVATIVES[name](jnp.asarray(x, dtype))
    assert got.dtype == jnp.float32
    ref = DERIVATIVES[name](x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=0, atol=1e-4)
    if name in ("sobel", "prewitt"):
        assert float(DERIVATIVES[name](x.astype(np.uint8))[4, 3]) <= 0  # prewitt's axis 1: 0 here
    pipe = imgproc.Pipeline([{"op": name, **({"axis": 0} if name in ("sobel", "prewitt") else {}),
                              **({"sigma": 1.0} if name.startswith("gaussian") else {})}])
    out = pipe(x.astype(np.uint8))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, np.asarray(DERIVATIVES[name](x.astype(np.uint8))) if name != "prewitt"
                               else np.asarray(imgproc.prewitt(x.astype(np.uint8), 0)), atol=1e-3)


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "float32"])
def test_stages_after_a_derivative_keep_the_images_range(dtype):
    """A derivative's float32 result stays in the image's units, so the stages after it in
    a pipeline are told the input's range (a uint8 image's: 255), not [0, 1] as after
    ``normalize``: an identity gamma leaves a gradient magnitude alone instead of clipping
    it at 1, and a normalize after a Sobel scales it by the input's range."""
    scale = {"uint8": 30, "uint16": 7000, "float32": 0.1}[dtype]
    x = (np.tile(np.arange(8)[::-1, None], (1, 6)) * scale).astype(dtype)
    white = float(np.iinfo(dtype).max) if dtype != "float32" else 1.0
    magnitude = np.asarray(imgproc.gaussian_gradient_magnitude(x, 1.0))
    assert magnitude.max() > 1.0 or dtype == "float32"
    got = imgproc.Pipeline([{"op": "gaussian_gradient_magnitude", "sigma": 1.0}, {"op": "adjust_gamma", "gamma": 1.0}])(x)
    np.testing.assert_allclose(got, np.asarray(imgproc.adjust_gamma(magnitude, 1.0, max_value=white)), rtol=1e-6)
    np.testing.assert_allclose(got, np.minimum(magnitude, white), rtol=1e-5, atol=1e-6 * white)
    got = imgproc.Pipeline([{"op": "sobel", "axis": 0}, {"op": "normalize", "mean": -4, "std": 8}])(x)
    np.testing.assert_allclose(got, (np.asarray(imgproc.sobel(x, 0)) / white + 4) / 8, rtol=1e-6, atol=1e-6)
    assert 0 <= float(np.min(got)) and float(np.max(got)) <= 1  # -4..4 times the range: into [0, 1]


def test_traced_sigma_of_the_gaussian_derivatives(rng):
    x = _image(rng, 13, 15, 2)
    for op, order in ((imgproc.gaussian_laplace, None), (imgproc.gaussian_gradient_magnitude, None),
                      (imgproc.gaussian_blur, (1, 2))):
        opts = {} if order is None else {"order": order}
        traced = jax.jit(lambda im, s: op(im, s, size=7, mode="constant", cval=0.5, **opts))(x, 1.2)
        eager = op(x, 1.2, size=7, mode="constant", cval=0.5, **opts)
        np.testing.assert_allclose(np.asarray(traced), np.asarray(eager), atol=1e-5)


def test_traced_sigma_does_not_recompile(rng):
    x = _image(rng)
    traces = []

    @jax.jit
    def blur(im, sigma):
        traces.append(1)
        return imgproc.gaussian_blur(im, sigma, size=9)

    a = blur(x, 1.0)
    b = blur(x, 2.0)
    assert len(traces) == 1
    np.testing.assert_allclose(np.asarray(a), np.asarray(imgproc.gaussian_blur(x, 1.0, size=9)), atol=1e-6)
    assert not np.allclose(np.asarray(a), np.asarray(b))


def test_eager_calls_compile_their_weights_once_and_keep_a_bounded_number(rng, compilations):
    """Issue 15 item 1: an eager call compiles its weights in as constants; the same weights
    again reuse that program (no compilation); a sweep over sigma keeps at most
    EAGER_PROGRAMS programs; results equal the traced-weights program's."""
    from imgproc.filters import convolution

    x = _image(rng)
    convolution._constant_stage.cache_clear()
    a = imgproc.gaussian_blur(x, 1.3)
    with compilations() as compiled:
        b = imgproc.gaussian_blur(x.copy(), 1.3)
    assert compiled == []
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    traced = jax.jit(lambda im, s: imgproc.gaussian_blur(im, s, size=11))(x, 1.3)  # scipy: radius 5
    np.testing.assert_allclose(np.asarray(a), np.asarray(traced), rtol=0, atol=1e-6)
    for sigma in np.linspace(0.5, 2.0, convolution.EAGER_PROGRAMS + 8):
        imgproc.gaussian_blur(x[:8, :8], float(sigma))
    assert convolution._constant_stage.cache_info().currsize == convolution.EAGER_PROGRAMS


def test_traced_sigma_needs_size():
    with pytest.raises(ValueError, match="size must be given"):
        jax.jit(lambda im, s: imgproc.gaussian_blur(im, s))(np.zeros((4, 4), np.float32), 1.0)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda x: imgproc.gaussian_blur(x, -1.0), r"sigma must be a finite number in \[0, inf\)"),
        (lambda x: imgproc.gaussian_blur(x, float("nan")), "sigma must be a finite number"),
        (lambda x: imgproc.gaussian_blur(x, float("inf")), "sigma must be a finite number"),
        (lambda x: imgproc.gaussian_blur(x, 1.0, size=4), "odd integer"),
        (lambda x: imgproc.box_blur(x, 0), "odd integer"),
        (lambda x: imgproc.box_blur(x, 2.5), "odd integer"),
        (lambda x: imgproc.box_blur(x, 3, mode="symmetric"), "reflect, mirror, nearest, wrap, constant"),
        (lambda x: imgproc.correlate(x, np.ones((3, 3)), method="fft9"), "auto, separable, direct, conv, convolve2d"),
        (lambda x: imgproc.correlate(x, np.ones(3)), "non-empty 2-D"),
        (lambda x: imgproc.correlate(x, np.full((3, 3), np.nan)), "finite"),
        (lambda x: imgproc.correlate(x, np.ones((3, 3)) * 1j), "kernel must hold real numbers; got complex"),
        (lambda x: imgproc.gaussian_blur(x, 1.0, mode="constant", cval=float("nan")), "cval must be a finite number"),
        (lambda x: imgproc.edges(x, cval=float("inf")), "cval must be a finite number"),
        (lambda x: imgproc.unsharp_mask(x, cval=float("nan")), "cval must be a finite number"),
        (lambda x: imgproc.sharpen(x, center=3.0), "center must be"),
        (lambda x: imgproc.unsharp_mask(x, amount=float("nan")), "amount must be a finite number"),
        (lambda x: imgproc.edges(x, layout="WHC"), "HW, HWC, CHW, NHWC, NCHW"),
        (lambda x: imgproc.edges(x, layout="NCHW"), "needs a 4-D array"),
        (lambda x: imgproc.edges(x.astype(np.int32)), "uint8, uint16, float16, bfloat16, float32"),
        (lambda x: imgproc.edges(x[None, None]), "2 \\(HW\\), 3 \\(HWC\\) or 4 \\(NHWC\\)"),
        (lambda x: imgproc.edges(x[:0]), "must not be empty"),
        (lambda x: imgproc.sobel(x, 2), r"axis must be one of 0 \(rows: vertical derivative\), 1 \(columns"),
        (lambda x: imgproc.prewitt(x, True), "axis must be one of 0"),
        (lambda x: imgproc.sobel(x.astype(np.int32), 0), "uint8, uint16, float16, bfloat16, float32"),
        (lambda x: imgproc.laplace(x, mode="symmetric"), "reflect, mirror, nearest, wrap, constant"),
        (lambda x: imgproc.gaussian_blur(x, 1.0, order=-1), "order must be a non-negative integer or a pair"),
        (lambda x: imgproc.gaussian_blur(x, 1.0, order=(1, 0.5)), "order must be a non-negative integer"),
        (lambda x: imgproc.gaussian_laplace(x, -1.0), r"sigma must be a finite number in \[0, inf\)"),
        (lambda x: imgproc.gaussian_gradient_magnitude(x, 1.0, size=4), "odd integer"),
        (lambda x: imgproc.gaussian_gradient_magnitude(x, 1.0, cval=float("nan")), "cval must be a finite number"),
        # kernels past MAX_KERNEL_SIDE: refused before gigabytes of weights are asked for
        (lambda x: imgproc.gaussian_blur(x, 1e9), r"truncate \* sigma must be below 32767.5 .* got sigma=1"),
        (lambda x: imgproc.gaussian_laplace(x, 1e30), r"truncate \* sigma must be below 32767.5"),
        (lambda x: imgproc.gaussian_blur(x, 9000.0, truncate=4.0), r"truncate \* sigma must be below"),
        (lambda x: imgproc.box_blur(x, 10**9 + 1), r"size must be an odd integer >= 1 and <= 65535"),
        (lambda x: imgproc.median_blur(x, size=65537), r"size must be an odd integer >= 1 and <= 65535"),
    ],
)
def test_bad_arguments_raise_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call(np.zeros((6, 6, 3), np.float32))


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (7, 1), (2, 3, 3)])
def test_images_smaller_than_the_kernel(shape, rng):
    x = rng.random(shape, dtype=np.float32)
    import scipy.ndimage as ndi

    for mode in MODES:
        got = np.asarray(imgproc.gaussian_blur(x, 2.0, mode=mode))
        sig = (2.0, 2.0) + ((0,) if x.ndim == 3 else ())
        np.testing.assert_allclose(got, ndi.gaussian_filter(x.astype(np.float64), sig, mode=mode), atol=1e-5)


def test_input_is_not_modified(rng):
    x = rng.random((8, 9, 3), dtype=np.float32)
    before = x.copy()
    imgproc.gaussian_blur(x, 1.0)
    imgproc.presets.denoise()(x)
    np.testing.assert_array_equal(x, before)


# what auto plans for a concrete kernel of one separable term on this backend
ONE_TERM_PLAN = "pallas-if-it-fits" if jax.default_backend() == "gpu" else "separable"


def test_auto_plan_on_this_backend():
    from imgproc.filters.convolution import plan_lowering

    other = "direct" if jax.default_backend() == "cpu" else "conv"
    assert plan_lowering(imgproc.kernels.gaussian(2.0))[0] == ONE_TERM_PLAN
    # rank 2, but the centre plus a box: one separable pass and a scaled copy
    method, _, terms = plan_lowering(imgproc.kernels.sharpen())
    assert method == ONE_TERM_PLAN and len(terms) == 2
    assert plan_lowering(np.random.default_rng(0).random((5, 5)))[0] == other
    laplace = np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], np.float32)  # rank 2, no centre + rank-1 form
    assert plan_lowering(laplace)[0] == other


@pytest.mark.parametrize("backend, n_terms, expected", [
    ("cpu", 1, "separable"), ("cpu", 2, "direct"), ("cpu", None, "direct"),
    ("gpu", 1, "pallas-if-it-fits"), ("gpu", 2, "conv"), ("gpu", None, "conv"), ("tpu", 2, "conv"),
    ("tpu", 1, "separable"),
])
def test_auto_method_per_backend(backend, n_terms, expected):
    from imgproc.filters.convolution import auto_method

    assert auto_method(n_terms, backend) == expected
    assert auto_method(n_terms, backend, taps=25, in_loop=False) == expected


@pytest.mark.parametrize("backend, n_terms, taps, pass_taps, expected", [
    # at FFT_MIN_TAPS weights for each output value or more, the FFT on CPU
    ("cpu", 1, 129 * 129, 258, "separable"), ("cpu", 1, 145 * 145, 290, "fft"), ("cpu", 2, 15 * 15, 60, "direct"),
    ("cpu", 2, 17 * 17, 68, "fft"), ("cpu", None, 17 * 17, None, "fft"),
    ("gpu", 1, 145 * 145, 290, "pallas-if-it-fits"), ("gpu", 2, 17 * 17, 68, "conv"), ("tpu", 1, 145 * 145, 290, "separable"),
])
def test_auto_takes_the_fft_for_large_kernels_on_cpu(backend, n_terms, taps, pass_taps, expected):
    from imgproc.filters.convolution import auto_method

    assert auto_method(n_terms, backend, taps=taps, pass_taps=pass_taps) == expected


def test_auto_plan_for_large_kernels():
    from imgproc.filters.convolution import pass_taps, plan_lowering

    centre, wide = (np.ones(1, np.float32),) * 2, (np.ones(145, np.float32),) * 2
    assert pass_taps([centre, wide]) == 290  # a centre weight needs no pass

    cpu = jax.default_backend() == "cpu"
    assert plan_lowering(imgproc.kernels.gaussian(18.0))[0] == ("fft" if cpu else ONE_TERM_PLAN)
    assert plan_lowering(imgproc.kernels.gaussian(16.0))[0] == ONE_TERM_PLAN  # 129 taps a pass
    disk = (np.hypot(*np.mgrid[-8:9, -8:9]) <= 8).astype(np.float32)
    assert plan_lowering(disk)[0] == ("fft" if cpu else "conv")
    # its 15x15 core has 4 separable terms of 120 weights against 193: their passes
    assert plan_lowering(disk[1:-1, 1:-1])[0] == ("separable" if cpu else "conv")


def _dog(size):
    """A difference of Gaussians: 2 separable terms (the same as a Laplacian's shape)."""
    r = size // 2
    q = np.sum(np.mgrid[-r:r + 1, -r:r + 1].astype(np.float64) ** 2, axis=0)
    return (np.exp(-q / (2 * (size / 6) ** 2)) / (size / 6) ** 2
            - np.exp(-q / (2 * (size / 4) ** 2)) / (size / 4) ** 2).astype(np.float32)


def test_auto_plan_for_low_rank_kernels():
    from imgproc.filters.convolution import auto_method, low_rank, plan_lowering

    cpu = jax.default_backend() == "cpu"
    other = "direct" if cpu else "conv"
    dog = _dog(9)
    terms = imgproc.kernels.factor(dog)
    assert len(terms) == 2 and low_rank(dog, terms)  # 36 weights in the passes, 81 in the kernel
    assert plan_lowering(dog)[0] == ("separable" if cpu else "conv")
    assert plan_lowering(_dog(5))[0] == ("separable" if cpu else "conv")  # 20 against 25: at the line
    assert plan_lowering(_dog(5) - _dog(5).mean())[0] == other  # 3 terms: 30 weights against 25
    disk = (np.hypot(*np.mgrid[-7:8, -7:8]) <= 7.5).astype(np.float32)
    assert len(imgproc.kernels.factor(disk)) == 5 and plan_lowering(disk)[0] == other  # more than 4 terms
    assert plan_lowering(np.random.default_rng(0).random((9, 9)))[0] == other  # full rank
    # zero weights do not count, on either side: a plus sign is 2 terms of 9 + 9 weights
    # (36 in the passes), but its direct pass applies only its 17 nonzero weights
    plus = np.zeros((9, 9), np.float32)
    plus[4, :] = plus[:, 4] = 1
    assert len(imgproc.kernels.factor(plus)) == 2 and not low_rank(plus, imgproc.kernels.factor(plus))
    assert plan_lowering(plus)[0] == other
    ringed = np.pad(_dog(5), 1)  # its terms' zero ends do not count either: 20 against 25, at the line
    assert low_rank(ringed, imgproc.kernels.factor(ringed))
    assert auto_method(2, "cpu", taps=81, pass_taps=36, low_rank=True) == "separable"
    assert auto_method(2, "cpu", taps=81, pass_taps=36, low_rank=True, in_loop=True) == "separable"
    assert auto_method(3, "cpu", taps=81, pass_taps=54, low_rank=True, in_loop=True) == "direct"
    assert auto_method(2, "gpu", taps=81, pass_taps=36, low_rank=True) == "conv"
    # the FFT threshold applies to the passes' weights: 3 terms of 45 taps apply 270, of 47 taps 282
    assert plan_lowering(_dog(45) - _dog(45).mean())[0] == ("separable" if cpu else "conv")
    assert plan_lowering(_dog(47) - _dog(47).mean())[0] == ("fft" if cpu else "conv")
    # as the shared table's cases: jit equals eager, vmap equals a loop
    batch = np.random.default_rng(3).random((2, 12, 14, 3), dtype=np.float32)
    eager = np.asarray(imgproc.correlate(batch, dog))
    np.testing.assert_allclose(np.asarray(jax.jit(lambda b: imgproc.correlate(b, dog))(batch)), eager, atol=1e-6)
    mapped = np.asarray(jax.vmap(lambda im: imgproc.correlate(im, dog))(batch))
    np.testing.assert_allclose(mapped, np.stack([np.asarray(imgproc.correlate(im, dog)) for im in batch]), atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_low_rank_kernels_through_auto_match_scipy(mode, rng):
    """The passes of a 2-term kernel, as ``auto`` runs them, in every mode: float32 to
    1e-5 and uint8 within one level, channels last and first."""
    from imgproc.filters.convolution import plan_lowering

    k = _dog(9)
    assert plan_lowering(k)[0] == ("separable" if jax.default_backend() == "cpu" else "conv")
    x = _image(rng, 21, 17, 3)
    want = np.stack([ndi.correlate(x[..., c].astype(np.float64), k.astype(np.float64), mode=mode, cval=CVAL)
                     for c in range(3)], -1)
    np.testing.assert_allclose(np.asarray(imgproc.correlate(x, k, mode=mode, cval=CVAL)), want, atol=1e-5)
    chw = np.asarray(imgproc.correlate(x.transpose(2, 0, 1), k, mode=mode, cval=CVAL, layout="CHW"))
    np.testing.assert_allclose(chw.transpose(1, 2, 0), want, atol=1e-5)
    u8 = (x * 255).round().astype(np.uint8)
    want8 = np.stack([ndi.correlate(u8[..., c].astype(np.float64), k.astype(np.float64), mode=mode, cval=CVAL * 255)
                      for c in range(3)], -1)
    got8 = np.asarray(imgproc.correlate(u8, k, mode=mode, cval=CVAL * 255), np.float64)
    assert np.abs(got8 - np.clip(np.round(want8), 0, 255)).max() <= 1


@pytest.mark.parametrize("mode", ["reflect", "constant"])
def test_fft_derivatives_equal_the_direct_lowerings(mode, rng):
    """jax.grad through the FFT lowering, with respect to the image and to cval."""
    x = _image(rng, 11, 13, 2)
    k = rng.random((5, 7)).astype(np.float32)
    weights = rng.random((11, 13, 2)).astype(np.float32)

    def loss(method):
        return lambda im, c: jnp.sum(weights * imgproc.correlate(im, k, mode=mode, cval=c, method=method))

    got = jax.grad(loss("fft"), argnums=(0, 1))(x, 0.3)
    want = jax.grad(loss("direct"), argnums=(0, 1))(x, 0.3)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), atol=1e-5)
    np.testing.assert_allclose(float(got[1]), float(want[1]), rtol=1e-5)


@pytest.mark.parametrize("backend, n_terms, taps, expected", [
    ("cpu", 1, 25, "separable"), ("cpu", 2, 9, "separable"), ("cpu", 3, 9, "convolve2d"),
    ("cpu", None, 25, "convolve2d"), ("cpu", 1, 49, "separable"), ("cpu", 3, 49, "direct"), ("gpu", 2, 25, "conv"),
    ("gpu", 1, 25, "pallas-if-it-fits"),
])
def test_auto_method_in_image_loop(backend, n_terms, taps, expected):
    """One image at a time inside a lax.map on CPU: kernels of one or two separable terms
    take separable passes, other small kernels convolve2d."""
    from imgproc.filters.convolution import auto_method

    assert auto_method(n_terms, backend, taps=taps, in_loop=True) == expected


def test_in_loop_hint_reaches_the_plan():
    from imgproc.filters.convolution import plan_lowering

    loop = imgproc.LoweringHints(in_loop=True)
    assert plan_lowering(imgproc.kernels.sharpen(), hints=loop)[0] == ONE_TERM_PLAN
    rank3 = np.random.default_rng(0).random((5, 5)).astype(np.float32)
    if jax.default_backend() == "cpu":
        assert plan_lowering(rank3, hints=loop)[0] == "convolve2d"
    assert plan_lowering(imgproc.kernels.gaussian(3.0, size=25), hints=loop)[0] == ONE_TERM_PLAN
    assert plan_lowering(imgproc.kernels.sharpen())[0] != "convolve2d"


def test_map_strategy_filters_match_the_batch_filters():
    """random_choice with strategy="map" runs its filters per image (on CPU separable passes
    for the sharpen and the Gaussian, convolve2d for a rank-3 kernel); the numbers equal the
    whole-batch filter's."""
    x = np.random.default_rng(5).random((3, 16, 20, 3), dtype=np.float32)
    rank3 = np.random.default_rng(0).random((5, 5)).astype(np.float32)
    for op, ref in (({"op": "sharpen"}, imgproc.sharpen), ({"op": "gaussian_blur", "sigma": 1.0, "size": 5},
                                                          lambda a: imgproc.gaussian_blur(a, 1.0, size=5)),
                    ({"op": "correlate", "kernel": rank3.tolist()}, lambda a: imgproc.correlate(a, rank3))):
        pipe = imgproc.Pipeline([{"op": "random_choice", "ops": [op], "strategy": "map"}])
        got = np.asarray(pipe(x, key=jax.random.key(0)))
        np.testing.assert_allclose(got, np.asarray(ref(x)), atol=2e-6)


@pytest.mark.parametrize("mode", MODES)
def test_pad_first_passes_match_scipy(monkeypatch, mode):
    """The GPU/TPU form of the 1-D passes (padded copy, then shifted sums), run here on CPU."""
    from imgproc.filters import separable as _separable

    monkeypatch.setattr(_separable, "pad_first", lambda: True)
    x = np.random.default_rng(3).random((2, 19, 23), dtype=np.float32)
    w = imgproc.kernels.gaussian_1d(2.0)
    got = np.asarray(_separable.correlate_separable(x, w, w, mode=mode, cval=0.25))
    ref = ndi.correlate1d(ndi.correlate1d(x.astype(np.float64), w, axis=1, mode=mode, cval=0.25), w, axis=2, mode=mode, cval=0.25)
    np.testing.assert_allclose(got, ref, atol=1e-5)


def test_separable_needs_a_concrete_kernel():
    with pytest.raises(ValueError, match="needs a concrete kernel"):
        jax.jit(lambda x, k: imgproc.correlate(x, k, method="separable"))(np.zeros((5, 5), np.float32), np.ones((3, 3)))


@pytest.mark.parametrize("name, call, scale, definition", SCIPY_FILTER_CASES, ids=[c[0] for c in SCIPY_FILTER_CASES])
def test_scipys_own_cases(name, call, scale, definition):
    """scipy's ndimage test_filters.py cases for the derivative filters (tests/cases.py)."""
    x = SCIPY_IMAGE * scale
    got = np.asarray(call(x.astype(np.float32)))
    assert got.dtype == np.float32 and got.shape == x.shape
    np.testing.assert_allclose(got, definition(x), rtol=1e-5, atol=1e-4 * scale)
