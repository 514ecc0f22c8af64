"""Property tests (hypothesis) for the filters: shape and dtype kept, smoothing stays within
the input's range, finite in gives finite out. Small images and ~30 examples keep them fast;
shapes are drawn from a few sizes so the number of compilations stays small."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import imgproc

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SHAPES = st.sampled_from([(1, 1), (1, 7), (7, 1), (5, 6), (9, 4, 3), (3, 8, 1)])
DTYPES = st.sampled_from([np.uint8, np.uint16, np.float32])
MODES = st.sampled_from(["reflect", "mirror", "nearest", "wrap"])


@st.composite
def images(draw):
    shape, dtype = draw(SHAPES), draw(DTYPES)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if dtype == np.float32:
        scale = draw(st.sampled_from([1.0, 255.0, 1e4]))
        return (rng.standard_normal(shape) * scale).astype(np.float32)
    hi = np.iinfo(dtype).max
    return rng.integers(0, hi, shape, endpoint=True).astype(dtype)


@SETTINGS
@given(images(), st.floats(0.3, 3.0), MODES)
def test_gaussian_keeps_shape_dtype_and_range(img, sigma, mode):
    out = np.asarray(imgproc.gaussian_blur(img, sigma, size=5, mode=mode))
    assert out.shape == img.shape and out.dtype == img.dtype
    lo, hi = img.min(axis=(0, 1)), img.max(axis=(0, 1))
    tol = 1e-4 * max(1.0, float(np.abs(img).max())) if img.dtype == np.float32 else 0
    assert (out >= lo - tol).all() and (out <= hi + tol).all()  # normalised, non-negative kernel


@SETTINGS
@given(images(), st.sampled_from([1, 3, 5]), MODES)
def test_box_keeps_shape_dtype_and_range(img, size, mode):
    out = np.asarray(imgproc.box_blur(img, size, mode=mode))
    assert out.shape == img.shape and out.dtype == img.dtype
    tol = 1e-4 * max(1.0, float(np.abs(img).max())) if img.dtype == np.float32 else 0
    assert (out >= img.min(axis=(0, 1)) - tol).all() and (out <= img.max(axis=(0, 1)) + tol).all()


@settings(max_examples=15, deadline=None)
@given(images(), st.sampled_from(["sharpen", "edges", "unsharp_mask"]), MODES)
def test_finite_in_finite_out(img, op, mode):
    out = np.asarray(getattr(imgproc, op)(img, mode=mode))
    assert out.shape == img.shape and out.dtype == img.dtype
    if out.dtype == np.float32:
        assert np.isfinite(out).all()


DENOISE = imgproc.presets.denoise()  # one pipeline: compiled once per shape and dtype


@settings(max_examples=15, deadline=None)
@given(images())
def test_pipeline_preserves_shape_and_dtype(img):
    out = DENOISE(img)
    assert np.asarray(out).shape == img.shape and np.asarray(out).dtype == img.dtype


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_bad_sigma_refused(bad):
    with pytest.raises(ValueError, match="sigma"):
        imgproc.gaussian_blur(np.zeros((4, 4), np.float32), bad)


@pytest.mark.parametrize("size", [0, 2, 4, -3, 1.5, 10**6 + 2])
def test_bad_sizes_refused(size):
    with pytest.raises(ValueError, match="size must be an odd integer"):
        imgproc.box_blur(np.zeros((4, 4), np.float32), size)
