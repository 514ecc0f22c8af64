"""imgproc._output_buffers: an eager call on NumPy input writes into the buffer of a dropped
earlier result (issue 15 item 3), never into one the caller still holds or into the
caller's own memory, without new compilations, within its bounds."""

import gc

import jax.numpy as jnp
import numpy as np
import pytest

import imgproc
from imgproc import _output_buffers as buffers


@pytest.fixture
def image():
    buffers.release()
    yield np.random.default_rng(0).random((300, 400, 3), dtype=np.float32)  # 1.4 MB: above MIN_BYTES
    buffers.release()


def test_a_dropped_result_is_written_again(image):
    first = imgproc.gaussian_blur(image, 1.0)
    where, expected = first.ctypes.data, first.copy()
    del first
    gc.collect()
    assert buffers.kept_bytes() == image.nbytes
    second = imgproc.gaussian_blur(image, 1.0)
    assert second.ctypes.data == where and buffers.kept_bytes() == 0
    np.testing.assert_array_equal(second, expected)
    assert second.flags.writeable


def test_held_results_and_the_input_are_never_written(image):
    original = image.copy()
    held = [imgproc.gaussian_blur(image, s) for s in (1.0, 2.0)]
    copies = [h.copy() for h in held]
    for sigma in (1.0, 2.0, 3.0):  # more calls, some results dropped at once
        imgproc.gaussian_blur(image, sigma)
        gc.collect()
    for h, c in zip(held, copies):
        np.testing.assert_array_equal(h, c)
    np.testing.assert_array_equal(image, original)
    assert all(h.ctypes.data != image.ctypes.data for h in held)


def test_a_view_keeps_its_buffer_until_the_last_view_goes(image):
    result = imgproc.box_blur(image, 3)
    corner = result[:10, :10]
    expected = corner.copy()
    del result
    gc.collect()
    assert buffers.kept_bytes() == 0  # the slice still holds the buffer
    imgproc.box_blur(image + 1, 3)
    np.testing.assert_array_equal(corner, expected)


def test_second_and_later_calls_do_not_compile(image, compilations):
    imgproc.gaussian_blur(image, 1.7)  # compiles (and writes into a new buffer)
    gc.collect()
    with compilations() as compiled:
        kept = imgproc.gaussian_blur(image, 1.7)  # a kept buffer
        held = imgproc.gaussian_blur(image, 1.7)  # none free: a new buffer
    assert compiled == []
    np.testing.assert_array_equal(kept, held)


def test_jax_input_and_small_results_are_not_kept(image):
    out = imgproc.gaussian_blur(jnp.asarray(image), 1.0)
    del out
    small = imgproc.gaussian_blur(image[:20, :20], 1.0)
    del small
    gc.collect()
    assert buffers.kept_bytes() == 0


def test_bounded_per_shape_and_released(image, monkeypatch):
    results = [imgproc.gaussian_blur(image, 1.0) for _ in range(buffers.KEPT_PER_SHAPE + 2)]
    del results
    gc.collect()
    assert buffers.kept_bytes() == buffers.KEPT_PER_SHAPE * image.nbytes
    assert buffers.release() == buffers.KEPT_PER_SHAPE * image.nbytes and buffers.kept_bytes() == 0
    monkeypatch.setattr(buffers, "KEPT_BYTES", image.nbytes)
    results = [imgproc.gaussian_blur(image, 1.0) for _ in range(3)]
    del results
    gc.collect()
    assert buffers.kept_bytes() == image.nbytes


def test_public_release():
    assert imgproc.release_output_buffers() >= 0
