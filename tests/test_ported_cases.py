"""Cases ported from other projects' own test suites that found bugs in imgproc (issue 11):
scipy's ``ndimage/tests/test_filters.py``, dm-pix's ``augment_test.py`` and
``color_conversion_test.py``, scipy's ``test_interpolation.py``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.ndimage as ndi

import imgproc
from imgproc import kernels


def test_scipy_gauss03_float32_ramp_keeps_its_sum():
    # scipy test_gauss03: a float32 ramp up to 9,999 keeps its sum to decimal=0
    x = np.arange(100 * 100).astype(np.float32).reshape(100, 100)
    y = np.asarray(imgproc.gaussian_blur(x, 1.0))
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_almost_equal(y.sum(dtype="d"), x.sum(dtype="d"), decimal=0)
    assert ((x.astype("d") - y) ** 2).sum() > 1.0


@pytest.mark.parametrize("sigma", [0.3, 0.5, 1.0, 1.3, 2.0, 3.0, 5.0, 8.0])
def test_gaussian_weights_sum_to_one_in_float32_and_stay_symmetric(sigma):
    k = kernels.gaussian_1d(sigma)
    assert abs(k.astype(np.float64).sum() - 1.0) < 1e-10
    np.testing.assert_array_equal(k, k[::-1])
    r = np.arange(-(k.size // 2), k.size // 2 + 1)
    ref = np.exp(-0.5 * (r / sigma) ** 2)
    np.testing.assert_allclose(k, ref / ref.sum(), rtol=0, atol=3e-8)  # within float32 spacing of 1


def test_hsv_to_rgb_wraps_the_hue_like_dm_pix():
    pix = pytest.importorskip("dm_pix")
    hsv = np.array([[[1.2, 1.0, 1.0], [-0.3, 0.5, 0.8], [2.0, 1.0, 0.5]]], np.float32)
    wrapped = hsv.copy()
    wrapped[..., 0] = np.mod(wrapped[..., 0], 1.0)
    got = np.asarray(imgproc.hsv_to_rgb(hsv))
    np.testing.assert_allclose(got, np.asarray(imgproc.hsv_to_rgb(wrapped)), atol=1e-6)
    np.testing.assert_allclose(got, np.asarray(pix.hsv_to_rgb(jnp.asarray(hsv))), atol=1e-6)


def test_adjust_gamma_clips_its_input_like_dm_pix():
    pix = pytest.importorskip("dm_pix")
    x = np.array([[[-0.5, 0.25, 1.7]]], np.float32)
    got = np.asarray(imgproc.adjust_gamma(x, 0.7, gain=1.3))
    np.testing.assert_allclose(got, np.asarray(pix.adjust_gamma(jnp.asarray(x), 0.7, gain=1.3)), atol=1e-6)


def test_rgb_to_hsv_gradient_is_finite_for_tiny_channel_ranges():
    # the 1e-30 tails of a narrow blur: the range is tiny but not zero
    x = jnp.asarray([[[1e-30, 2e-30, 3e-30], [0.2, 0.2 + 1e-30, 0.2], [0.5, 0.25, 0.1]]], jnp.float32)
    grads = jax.grad(lambda a: jnp.sum(imgproc.rgb_to_hsv(a) ** 2))(x)
    assert np.all(np.isfinite(np.asarray(grads)))
    g2 = jax.grad(lambda a: jnp.sum(imgproc.adjust_hue(a, 0.1)))(x)
    assert np.all(np.isfinite(np.asarray(g2)))


# coordinates are float32: offsets below their float32 spacing (2.4e-7 near 3) are lost
@pytest.mark.parametrize("offset", [1e-6, 5e-5, 1e-3])
def test_constant_mode_gives_cval_for_any_offset_outside_like_scipy(offset):
    x = np.arange(1.0, 13.0, dtype=np.float32).reshape(3, 4)
    for dy, dx in ((offset, 0.0), (0.0, -offset)):
        got = np.asarray(imgproc.translate(x, dy, dx, cval=-1.0))
        ref = ndi.shift(x.astype(np.float64), (dy, dx), order=1, mode="constant", cval=-1.0)
        outside = ref == -1.0
        assert outside.any()
        np.testing.assert_array_equal(got[outside], -1.0)
        np.testing.assert_allclose(got[~outside], ref[~outside], atol=1e-4)


@pytest.mark.parametrize("angle", [90.0, 180.0, -90.0, 270.0, 450.0])
def test_quarter_turns_are_exact_in_constant_mode(angle):
    x = np.arange(1.0, 26.0, dtype=np.float32).reshape(5, 5)
    got = np.asarray(imgproc.rotate(x, angle))
    ref = ndi.rotate(x.astype(np.float64), angle, reshape=False, order=1, mode="constant")
    np.testing.assert_array_equal(got, ref.astype(np.float32))
