"""Issue 17, the Python API: what a new user meets first (array types, dtypes, scipy's
conventions, clear errors, channel-first arrays, saving float images)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import imgproc

KEY = jax.random.key(0)
RANDOM_SPEC = [{"op": "random_flip_left_right"}, {"op": "gaussian_noise", "sigma": 0.05}]

# --------------------------------------------------------------------------- 4: NumPy in, NumPy out

# One table of entry points: name -> call(x) on an image (HWC) or a batch (NHWC).
ENTRY_POINTS = {
    "gaussian_blur": lambda x: imgproc.gaussian_blur(x, 1.0),
    "box_blur": lambda x: imgproc.box_blur(x, 3),
    "sharpen": lambda x: imgproc.sharpen(x),
    "correlate": lambda x: imgproc.correlate(x, np.ones((3, 3)) / 9),
    "edges": lambda x: imgproc.edges(x),
    "unsharp_mask": lambda x: imgproc.unsharp_mask(x),
    "adjust_brightness": lambda x: imgproc.adjust_brightness(x, 0.1),
    "rotate": lambda x: imgproc.rotate(x, 10.0),
    "flip_left_right": lambda x: imgproc.flip_left_right(x),
    "random_hue": lambda x: imgproc.random_hue(KEY, x),
    "random_rotate": lambda x: imgproc.random_rotate(KEY, x),
    "random_gaussian_blur": lambda x: imgproc.random_gaussian_blur(KEY, x),
    "random_choice": lambda x: imgproc.random_choice(KEY, x, [{"op": "sharpen"}, {"op": "emboss"}]),
    "pipeline": lambda x: imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 1.0}, {"op": "sharpen"}])(x),
    "pipeline_bucket": lambda x: imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 1.0}], bucket=True)(x),
    "pipeline_random": lambda x: imgproc.Pipeline(RANDOM_SPEC)(x, key=KEY),
    "pipeline_return_params": lambda x: imgproc.Pipeline(RANDOM_SPEC)(x, key=KEY, return_params=True)[0],
    "pipeline_apply": lambda x: imgproc.Pipeline(RANDOM_SPEC).apply(
        x, imgproc.Pipeline(RANDOM_SPEC)(x, key=KEY, return_params=True)[1]),
}


def _image(batch: bool):
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, ((2,) if batch else ()) + (10, 12, 3)).astype(np.uint8)


@pytest.mark.parametrize("batch", [False, True], ids=["image", "batch"])
@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_numpy_in_numpy_out_jax_in_jax_out(name, batch):
    call = ENTRY_POINTS[name]
    x = _image(batch)
    got = call(x)
    assert type(got) is np.ndarray and got.flags.writeable, name
    assert got.dtype == x.dtype and got.shape == x.shape
    got[...] = 0  # in-place edits work (cv2 / Pillow take it as it is)
    from_list = call(x.tolist())
    assert type(from_list) is np.ndarray and from_list.dtype == np.uint8  # a list is NumPy input
    from_jax = call(jnp.asarray(x))
    assert isinstance(from_jax, jax.Array), name
    np.testing.assert_array_equal(np.asarray(from_jax), call(x))
    traced = jax.jit(call)(jnp.asarray(x))  # inside jit, tracers pass through
    assert isinstance(traced, jax.Array)


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_large_numpy_results_are_handed_over_without_a_copy_and_never_alias_the_input(name, backend):
    """Issue 15 item 1: a large result on CPU is a writable view of the result's buffer (no
    extra copy into fresh pages); on every backend it is writable and never shares memory
    with the caller's array, even for an op that returns its input unchanged (off CPU the
    result is downloaded into NumPy memory of its own)."""
    from imgproc.core.array_type import VIEW_MIN_BYTES

    x = np.random.default_rng(1).integers(0, 256, (2, 600, 600, 3)).astype(np.uint8)
    assert x.nbytes >= VIEW_MIN_BYTES
    before = x.copy()
    got = ENTRY_POINTS[name](x)
    assert type(got) is np.ndarray and got.flags.writeable
    # pipeline_bucket assembles its NumPy result from its size buckets
    if backend == "cpu" and name != "pipeline_bucket":
        assert type(got.base).__name__ == "_BufferOwner"  # the result's own buffer, not a copy
    assert not np.may_share_memory(got, x)
    got[...] = 7
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("identity", [lambda x: imgproc.gaussian_blur(x, 0.0), lambda x: imgproc.box_blur(x, 1),
                                      lambda x: imgproc.unsharp_mask(x, amount=0.0)])
def test_an_identity_call_returns_a_copy_not_the_callers_array(identity):
    x = np.random.default_rng(2).random((600, 600, 3), dtype=np.float32)
    before = x.copy()
    got = identity(x)
    assert not np.may_share_memory(got, x)
    got[...] = 0
    np.testing.assert_array_equal(x, before)


def test_split_and_chunked_pipelines_follow_the_rule(monkeypatch, backend):
    """NumPy in, NumPy out (writable) and jax.Array in, jax.Array out, for a batch split over
    the cores (on CPU; other backends run it whole) and for one run in chunks, which gives
    the same values."""
    from imgproc.pipeline import execution

    x = np.random.default_rng(1).integers(0, 256, (16, 8, 8, 3)).astype(np.uint8)
    monkeypatch.setattr(execution, "cpu_cores", lambda: 2)
    pipe = imgproc.Pipeline([{"op": "gaussian_noise", "sigma": 0.05}])
    assert execution.loop_parts(x, loops=True, batched=True) == (2 if backend == "cpu" else 1)
    split = pipe(x, key=KEY)
    assert type(split) is np.ndarray and split.flags.writeable
    split_params = pipe(x, key=KEY, return_params=True)
    assert type(split_params[0]) is np.ndarray
    assert isinstance(pipe(jnp.asarray(x), key=KEY), jax.Array)
    monkeypatch.setattr(execution, "chunk_size", lambda shape, **k: 5)  # chunks of 5 images
    chunked = pipe(x, key=KEY)
    assert type(chunked) is np.ndarray and chunked.flags.writeable
    np.testing.assert_array_equal(chunked, split)


# --------------------------------------------------------------------------- 5: float64, lists, psnr


def test_float64_is_computed_in_float32_and_returned_as_float64():
    skimage = pytest.importorskip("skimage")
    x = skimage.img_as_float(_image(False))  # float64 in [0, 1]
    got = imgproc.gaussian_blur(x, 1.0)
    assert got.dtype == np.float64 and type(got) is np.ndarray
    np.testing.assert_array_equal(got, imgproc.gaussian_blur(x.astype(np.float32), 1.0).astype(np.float64))
    piped = imgproc.Pipeline([{"op": "sharpen"}])(x)
    assert piped.dtype == np.float64
    assert imgproc.gaussian_blur(x.tolist(), 1.0).dtype == np.float64  # a float list is float64


def test_an_op_with_a_fixed_output_dtype_returns_it_for_float64_too():
    """normalize, to_float and the derivative filters return float32 for every input
    (their OpInfo.out_dtype), float64 included; so do pipelines and recipes with a
    normalize stage, as their output_dtype says."""
    from imgproc.core.registry import lookup, registered_ops
    x = np.random.default_rng(0).random((8, 9, 3))  # float64
    fixed = [name for name in registered_ops() if lookup(name).out_dtype is not None]
    assert {"normalize", "to_float", "sobel", "prewitt", "laplace", "gaussian_laplace",
            "gaussian_gradient_magnitude"} <= set(fixed)
    options = {"normalize": {"mean": 0.5, "std": 0.25}, "sobel": {"axis": 0}, "prewitt": {"axis": 1},
               "gaussian_laplace": {"sigma": 1.0}, "gaussian_gradient_magnitude": {"sigma": 1.0}}
    for name in fixed:
        got = getattr(imgproc, name)(x, **options.get(name, {}))
        assert got.dtype == np.dtype(lookup(name).out_dtype), name
        want = getattr(imgproc, name)(x.astype(np.float32), **options.get(name, {}))
        np.testing.assert_array_equal(got, want, err_msg=name)
    for spec in ([{"op": "normalize", "mean": 0.5, "std": 0.25}], [{"op": "to_float"}, {"op": "sharpen"}],
                 [{"op": "sharpen"}]):
        pipe = imgproc.Pipeline(spec)
        assert pipe(x).dtype == pipe.output_dtype(np.float64) == pipe.apply(x, [None] * len(spec)).dtype, spec
    recipe = imgproc.recipes.imagenet_eval(8, 8)  # ends with normalize
    assert recipe(x[None], key=0)["images"].dtype == recipe.output_dtype(np.float64) == np.float32


@pytest.mark.parametrize("values, dtype", [([[0, 128], [255, 3]], np.uint8), ([[0, 1000], [65535, 3]], np.uint16)])
def test_integer_lists_become_uint8_or_uint16(values, dtype):
    got = imgproc.box_blur(values, 1)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.asarray(values, dtype))


@pytest.mark.parametrize("bad, words", [
    ([[0, 70000], [1, 2]], "0..65535"),
    ([[-1, 5], [1, 2]], "0..255"),
    (np.zeros((4, 4), np.int64), "astype(np.uint8)"),
    (np.zeros((4, 4), np.int32), "astype(np.uint8)"),
])
def test_ambiguous_integers_are_refused_naming_the_fix(bad, words):
    with pytest.raises(ValueError, match=__import__("re").escape(words)):
        imgproc.gaussian_blur(bad, 1.0)


def test_psnr_refuses_mismatched_ranges_and_matches_skimage():
    metrics = pytest.importorskip("skimage.metrics")
    rng = np.random.default_rng(2)
    ref = rng.random((16, 16))
    noisy = np.clip(ref + rng.normal(0, 0.05, ref.shape), 0, 1)
    as_uint8 = (ref * 255).round().astype(np.uint8)
    with pytest.raises(ValueError, match="uint8 .0..255. but image is float64 .0..1.*img_as_float"):
        imgproc.psnr(as_uint8, noisy)
    for a, b in [(ref, noisy), (ref * 2 - 1, noisy * 2 - 1), (as_uint8, (noisy * 255).round().astype(np.uint8))]:
        assert imgproc.psnr(a, b) == pytest.approx(metrics.peak_signal_noise_ratio(a, b), rel=1e-12)
    assert imgproc.psnr(as_uint8, noisy * 255, data_range=255) > 20  # an explicit range is trusted
    with pytest.raises(ValueError, match="data_range"):
        imgproc.psnr(ref * 255, noisy * 255)  # floats beyond [-1, 1]: skimage refuses too


def test_ssim_matches_skimage_and_refuses_what_it_cannot_compare():
    """imgproc.ssim against skimage.metrics.structural_similarity: unsigned, signed (the
    dtype's range is max - min) and float images, Gaussian windows, channel axes; a mix
    of ranges and an axis the images do not have are refused (the axis wrapped around)."""
    metrics = pytest.importorskip("skimage.metrics")
    rng = np.random.default_rng(3)
    ref = rng.random((24, 28, 3))
    noisy = np.clip(ref + rng.normal(0, 0.1, ref.shape), 0, 1)
    u8 = [(v * 255).round().astype(np.uint8) for v in (ref, noisy)]
    u16 = [(v * 65535).round().astype(np.uint16) for v in (ref, noisy)]
    i16 = [(v * 6000 - 3000).round().astype(np.int16) for v in (ref, noisy)]
    cases = [(u8, {}), (u16, {}), (i16, {}), ((ref, noisy), {"data_range": 1.0}),
             (u8, {"gaussian_weights": True, "sigma": 1.5, "use_sample_covariance": False})]
    for (a, b), options in cases:
        for axis in (None, -1, 2):
            x, y = (a[..., 0], b[..., 0]) if axis is None else (a, b)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # skimage: "Setting data_range based on im1.dtype"
                want = metrics.structural_similarity(x, y, channel_axis=axis, **options)
            assert imgproc.ssim(x, y, channel_axis=axis, **options) == pytest.approx(want, rel=1e-9)
    with pytest.raises(ValueError, match="uint8 .0..255. but image is float64 .0..1."):
        imgproc.ssim(u8[0], noisy)
    with pytest.raises(ValueError, match=r"channel_axis must be an axis of the 3-D images \(-3..2\) or None; got 3"):
        imgproc.ssim(u8[0], u8[1], channel_axis=3)


# --------------------------------------------------------------------------- 6: scipy's conventions

import scipy.ndimage as ndi  # noqa: E402
from cases import CASE_IDS, CASES, GRID_MODES, reference  # noqa: E402


@pytest.mark.parametrize("grid, plain", list(GRID_MODES.items()))
def test_scipy_grid_modes_equal_their_plain_modes(grid, plain):
    # the premise of the aliases, checked on scipy itself
    p = np.random.default_rng(3).random((9, 11))
    assert np.array_equal(ndi.gaussian_filter(p, 1.5, mode=grid, cval=0.3), ndi.gaussian_filter(p, 1.5, mode=plain, cval=0.3))
    assert np.array_equal(ndi.correlate(p, np.ones((3, 5)), mode=grid, cval=0.3),
                          ndi.correlate(p, np.ones((3, 5)), mode=plain, cval=0.3))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("grid", list(GRID_MODES))
def test_every_filter_takes_scipys_grid_modes(case, grid):
    hwc = np.random.default_rng(4).random((13, 17, 2), dtype=np.float32)
    got = case.call(hwc, mode=grid, cval=0.25)
    np.testing.assert_allclose(got, reference(case, hwc, grid, 0.25), atol=1e-5, rtol=0)


def test_per_axis_sigma_and_size_match_scipy():
    p = np.random.default_rng(5).random((15, 21), dtype=np.float32)
    want = ndi.gaussian_filter(p.astype(np.float64), (1, 3))
    np.testing.assert_allclose(imgproc.gaussian_blur(p, (1, 3)), want, atol=1e-5)
    np.testing.assert_allclose(imgproc.gaussian_blur(p, (0.5, 2), size=(5, 9)),
                               ndi.gaussian_filter(p.astype(np.float64), (0.5, 2), radius=(2, 4)), atol=1e-5)
    np.testing.assert_allclose(imgproc.box_blur(p, (5, 5)), ndi.uniform_filter(p.astype(np.float64), 5), atol=1e-5)
    np.testing.assert_array_equal(imgproc.sharpen(p, size=(5, 5)), imgproc.sharpen(p, size=5))
    with pytest.raises(ValueError, match="square"):
        imgproc.sharpen(p, size=(3, 5))
    with pytest.raises(ValueError, match=r"size\[1\] must be an odd"):
        imgproc.box_blur(p, (3, 4))
    spec = [{"op": "gaussian_blur", "sigma": [1, 3], "mode": "grid-wrap"}, {"op": "box_blur", "size": [3, 5]}]
    want = ndi.uniform_filter(ndi.gaussian_filter(p.astype(np.float64), (1, 3), mode="wrap"), (3, 5))
    for bucket in (False, True):
        np.testing.assert_allclose(imgproc.Pipeline(spec, bucket=bucket)(p), want, atol=1e-5)


@pytest.mark.parametrize("mode", ["grid-constant", "grid-wrap", "grid-mirror"])
def test_geometry_takes_scipys_grid_modes(mode):
    # scipy's interpolation grid-constant differs from constant (cval interpolated in
    # beyond the edge): implemented, as are the two aliases
    p = np.random.default_rng(6).random((12, 15), dtype=np.float32)
    want = ndi.rotate(p.astype(np.float64), 17, reshape=False, order=1, mode=mode, cval=0.3)
    np.testing.assert_allclose(imgproc.rotate(p, 17.0, mode=mode, cval=0.3), want, atol=1e-5)
    shifted = ndi.shift(p.astype(np.float64), (1.5, -2.25), order=1, mode=mode, cval=0.3)
    np.testing.assert_allclose(imgproc.translate(p, 1.5, -2.25, mode=mode, cval=0.3), shifted, atol=1e-5)


# --------------------------------------------------------------------------- 7: clear errors


def test_an_int_key_is_a_seed():
    x = _image(True)
    pipe = imgproc.Pipeline(RANDOM_SPEC)
    np.testing.assert_array_equal(pipe(x, key=7), pipe(x, key=jax.random.key(7)))
    np.testing.assert_array_equal(pipe(x, key=np.int64(7)), pipe(x, key=jax.random.key(7)))
    np.testing.assert_array_equal(imgproc.random_hue(3, x), imgproc.random_hue(jax.random.key(3), x))
    with pytest.raises(ValueError, match=r"jax.random.key\(seed\)"):
        pipe(x, key="seven")
    with pytest.raises(ValueError, match=r"jax.random.key\(seed\)"):
        pipe(x)


def test_images_of_different_sizes_say_what_to_do():
    images = [np.zeros((8, 8, 3), np.uint8), np.zeros((9, 8, 3), np.uint8)]
    with pytest.raises(ValueError, match="different sizes.*once per image.*folder"):
        imgproc.gaussian_blur(images, 1.0)
    # a pipeline takes such a list when it starts by setting the size (variable_size)
    with pytest.raises(ValueError, match="different sizes needs a pipeline that starts by setting a fixed size.*"
                                         "sharpen, keeps each image's size.*once per image"):
        imgproc.Pipeline([{"op": "sharpen"}])(images)


def test_unknown_spec_option_names_the_allowed_ones():
    with pytest.raises(ValueError, match="gaussian_blur has no option 'radius'; its options: .*sigma.*size"):
        imgproc.Pipeline([{"op": "gaussian_blur", "radius": 3}])


# --------------------------------------------------------------------------- 3: channel-first arrays

import warnings  # noqa: E402


@pytest.mark.parametrize("shape, named", [((3, 24, 20), "CHW"), ((4, 24, 20), "CHW"), ((1, 24, 20), "CHW"),
                                          ((2, 3, 24, 20), "NCHW")])
def test_channel_first_looking_arrays_warn_naming_the_layout(shape, named):
    x = np.zeros(shape, np.float32)
    for call in (lambda a, **o: imgproc.gaussian_blur(a, 1.0, **o), imgproc.Pipeline([{"op": "sharpen"}])):
        with pytest.warns(imgproc.LayoutWarning, match=f"layout='{named}'") as record:
            call(x)
        assert record[0].filename == __file__  # points at the caller's line
    assert issubclass(imgproc.LayoutWarning, UserWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        imgproc.gaussian_blur(x, 1.0, layout=named)  # named: silent
        imgproc.gaussian_blur(x, 1.0, layout="HWC" if len(shape) == 3 else "NHWC")  # HWC on purpose: silent
        imgproc.gaussian_blur(np.zeros((24, 20, 3), np.float32), 1.0)  # plausible HWC: silent
        imgproc.gaussian_blur(np.zeros((3, 20, 4), np.float32), 1.0)  # 4 channels: plausible, silent


# --------------------------------------------------------------------------- 2: saving 0..255 floats


@pytest.mark.parametrize("scale, ok", [(1.0, True), (1.3, True), (255.0, False), (-1.0, False)])
def test_save_image_refuses_floats_clearly_outside_0_1(tmp_path, scale, ok):
    x = _image(False).astype(np.float32) / 255 * scale  # uint8 data as floats, scaled
    path = tmp_path / "out.png"
    if ok:  # [0, 1], or a little overshoot (sharpening): clipped on save as documented
        imgproc.save_image(path, x)
        assert path.exists()
        return
    with pytest.raises(ValueError, match=r"image / 255.*astype\(np.uint8\)"):
        imgproc.save_image(path, x)
    assert not path.exists()
    with pytest.raises(ValueError, match="image / 255"):  # what a pipeline returns for float input
        imgproc.save_image(path, imgproc.gaussian_blur(jnp.asarray(x), 1.0))


@pytest.mark.parametrize("seed", [0, 1, 7, 2 ** 31 - 1, -1, -(2 ** 31)])
def test_an_int_seed_makes_jax_random_keys_words(seed):
    from imgproc.core.validate import check_key
    np.testing.assert_array_equal(jax.random.key_data(check_key(seed)), jax.random.key_data(jax.random.key(seed)))
