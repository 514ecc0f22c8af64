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


def test_split_and_chunked_pipelines_follow_the_rule(monkeypatch):
    from imgproc import _execution

    x = np.random.default_rng(1).integers(0, 256, (16, 8, 8, 3)).astype(np.uint8)
    monkeypatch.setattr(_execution, "cpu_cores", lambda: 2)
    pipe = imgproc.Pipeline([{"op": "gaussian_noise", "sigma": 0.05}])
    assert _execution.loop_parts(x, loops=True, batched=True) == 2
    split = pipe(x, key=KEY)
    assert type(split) is np.ndarray and split.flags.writeable
    split_params = pipe(x, key=KEY, return_params=True)
    assert type(split_params[0]) is np.ndarray
    assert isinstance(pipe(jnp.asarray(x), key=KEY), jax.Array)
    monkeypatch.setattr(_execution, "chunk_size", lambda shape, **k: 5)  # chunks of 5 images
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
