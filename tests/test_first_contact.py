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
