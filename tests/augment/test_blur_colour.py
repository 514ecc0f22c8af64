"""median_blur / motion_blur against OpenCV, colour spaces against scikit-image
(imgproc/augment/blur.py, imgproc/augment/colourspace.py)."""

from __future__ import annotations

import warnings

import cv2
import jax
import numpy as np
import pytest
import skimage.color as skc
import skimage.data

import imgproc
from imgproc.augment.blur import motion_kernel

RNG = np.random.default_rng(5)
X = RNG.integers(0, 256, (21, 26, 3)).astype(np.uint8)
X16 = np.random.default_rng(16).integers(0, 65536, X.shape).astype(np.uint16)


@pytest.mark.parametrize("size", [3, 5, 7])
def test_median_blur_is_cv2_median_blur(size):
    np.testing.assert_array_equal(imgproc.median_blur(X, size=size), cv2.medianBlur(X, size))
    assert np.array_equal(imgproc.median_blur(X, size=size), imgproc.median(X, size=size, mode="nearest"))


@pytest.mark.parametrize("length, angle", [(3, 0.0), (5, 30.0), (7, 135.0), (9, -60.0), (5, 90.0)])
def test_motion_blur_is_cv2_filter2d_on_the_same_kernel(length, angle):
    k = np.asarray(motion_kernel(length, angle))
    assert k.shape == (length, length) and abs(k.sum() - 1) < 1e-6 and k.min() >= 0
    ref = cv2.filter2D(X.astype(np.float32), -1, k)  # BORDER_REFLECT_101 = mode "mirror"
    np.testing.assert_allclose(imgproc.motion_blur(X.astype(np.float32), length, angle), ref, atol=1e-3)
    np.testing.assert_array_equal(imgproc.motion_blur(X, length, angle), cv2.filter2D(X, -1, k))


def test_motion_kernel_geometry():
    assert np.allclose(np.asarray(motion_kernel(5, 0.0))[2], 0.2)  # the middle row
    assert np.allclose(np.asarray(motion_kernel(5, 90.0))[:, 2], 0.2)  # the middle column
    k45 = np.asarray(motion_kernel(5, 45.0))  # counter-clockwise: up and to the right
    assert k45[0, 4] > 0 and k45[4, 0] > 0 and k45[0, 0] == 0 and k45[4, 4] == 0
    short = np.asarray(motion_kernel(7, 0.0, 3))  # a length-3 segment in a 7x7 kernel
    assert np.allclose(short[3, 2:5], 1 / 3) and short[3, [0, 1, 5, 6]].sum() == 0


def test_random_blurs():
    x = np.stack([X] * 16)
    y, params = imgproc.Pipeline([{"op": "random_motion_blur", "size": 7, "length_range": [3, 7]}])(
        x, key=2, return_params=True)
    lengths, angles = np.asarray(params[0]["length"]), np.asarray(params[0]["angle"])
    assert set(lengths.tolist()) <= {3.0, 5.0, 7.0} and len(set(lengths.tolist())) > 1
    assert np.all((angles >= 0) & (angles < 360))
    for i in range(3):
        k = np.asarray(motion_kernel(7, angles[i], lengths[i]))
        np.testing.assert_array_equal(y[i], cv2.filter2D(X, -1, k))
    m = imgproc.random_median_blur(0, x, p=1.0, size=5)
    np.testing.assert_array_equal(m[0], cv2.medianBlur(X, 5))


def test_blur_bad_arguments():
    with pytest.raises(ValueError, match="length must be an odd integer"):
        imgproc.motion_blur(X, 4, 0.0)
    with pytest.raises(ValueError, match="angle must be a finite number"):
        imgproc.motion_blur(X, 5, float("inf"))
    with pytest.raises(ValueError, match="length_range"):
        imgproc.random_motion_blur(0, X, size=5, length_range=(3, 9))
    with pytest.raises(ValueError, match="size must be an odd integer"):
        imgproc.median_blur(X, size=4)


# --------------------------------------------------------------------------- colour spaces

CONVERSIONS = [
    ("rgb_to_ycbcr", imgproc.rgb_to_ycbcr, skc.rgb2ycbcr, X, 1e-4),
    ("ycbcr_to_rgb", imgproc.ycbcr_to_rgb, skc.ycbcr2rgb, skc.rgb2ycbcr(X).astype(np.float32), 1e-5),
    ("rgb_to_lab", imgproc.rgb_to_lab, skc.rgb2lab, X, 2e-4),
    # uint16 over its range 65535, as skimage takes it, and a given max_value (12-bit levels
    # in uint16) as skimage's rgb2lab of x / max
    ("rgb_to_lab_uint16", imgproc.rgb_to_lab, skc.rgb2lab, X16, 2e-4),
    ("rgb_to_lab_max_value", lambda x, **o: imgproc.rgb_to_lab(x, max_value=4095, **o),
     lambda x: skc.rgb2lab(x / 4095), X16 >> 4, 2e-4),
    # float64, scikit-image's own float input: float64 out (computed in float32), the library's rule
    ("rgb_to_lab_float64", imgproc.rgb_to_lab, skc.rgb2lab, X / 255.0, 2e-4),
    ("lab_to_rgb", imgproc.lab_to_rgb, skc.lab2rgb, skc.rgb2lab(X).astype(np.float32), 1e-5),
    ("lab_to_rgb_out_of_gamut", imgproc.lab_to_rgb, skc.lab2rgb,
     RNG.uniform([0, -120, -120], [100, 120, 120], (12, 14, 3)).astype(np.float32), 1e-5),
]


@pytest.mark.parametrize("name, ours, ref, x, atol", CONVERSIONS, ids=[c[0] for c in CONVERSIONS])
def test_colour_spaces_match_skimage(name, ours, ref, x, atol):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # skimage warns about clipped negative Z
        expected = ref(x)
    y = np.asarray(ours(x))
    assert y.dtype == (np.float64 if x.dtype == np.float64 else np.float32)
    np.testing.assert_allclose(y, expected, atol=atol, rtol=1e-5)
    batch = np.asarray(ours(np.stack([x, x[::-1]])))
    np.testing.assert_allclose(batch[1], y[::-1], atol=atol)
    chw = np.asarray(ours(np.moveaxis(x, -1, 0), layout="CHW"))
    np.testing.assert_allclose(np.moveaxis(chw, 0, -1), y, atol=atol)
    jitted = np.asarray(jax.jit(ours)(x))
    np.testing.assert_allclose(jitted, y, atol=atol, rtol=1e-6)  # float32 reassociation under jit


def test_full_range_ycbcr_matches_pillow_within_one_level():
    """``full_range=True`` is BT.601 full range as JPEG: Pillow's ``convert("YCbCr")`` and
    back (Pillow rounds fixed-point sums: within one level on uint8)."""
    from PIL import Image

    corners = np.array([[[0, 0, 0], [255, 255, 255], [255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0],
                         [0, 255, 255], [255, 0, 255], [128, 128, 128], [1, 254, 3], [200, 10, 90], [17, 17, 230],
                         [99, 180, 42], [250, 250, 5]]], np.uint8)
    rgb = np.concatenate([X.reshape(1, -1, 3), corners], axis=1)
    ours = np.asarray(imgproc.rgb_to_ycbcr(rgb, full_range=True))
    pil = np.asarray(Image.fromarray(rgb, "RGB").convert("YCbCr")).astype(np.float32)
    assert np.abs(np.clip(np.round(ours), 0, 255) - pil).max() <= 1
    assert np.abs(ours - pil).max() <= 1.0
    back = np.asarray(imgproc.ycbcr_to_rgb(pil, full_range=True)) * 255
    pil_back = np.asarray(Image.fromarray(pil.astype(np.uint8), "YCbCr").convert("RGB")).astype(np.float32)
    assert np.abs(np.clip(np.round(back), 0, 255) - pil_back).max() <= 1
    f = X.astype(np.float32) / 255
    np.testing.assert_allclose(imgproc.ycbcr_to_rgb(imgproc.rgb_to_ycbcr(f, full_range=True), full_range=True), f,
                               atol=1e-5)
    np.testing.assert_allclose(imgproc.rgb_to_ycbcr(f, full_range=True), ours[0, :X[..., 0].size].reshape(X.shape),
                               atol=1e-3)  # any value range: a float image in [0, 1] gives the same levels
    default = np.asarray(imgproc.rgb_to_ycbcr(X))
    np.testing.assert_allclose(default, skc.rgb2ycbcr(X), atol=1e-4)  # the default stays skimage's studio range
    with pytest.raises(ValueError, match="full_range must be True"):
        imgproc.rgb_to_ycbcr(X, full_range="jpeg")


def test_colour_space_ranges_and_round_trips():
    f = X.astype(np.float32) / 255
    np.testing.assert_allclose(imgproc.rgb_to_lab(f), imgproc.rgb_to_lab(X), atol=1e-4)
    np.testing.assert_allclose(imgproc.rgb_to_ycbcr(X.astype(np.uint16) * 257), imgproc.rgb_to_ycbcr(X), atol=1e-3)
    np.testing.assert_allclose(imgproc.lab_to_rgb(imgproc.rgb_to_lab(f)), f, atol=1e-4)
    np.testing.assert_allclose(imgproc.ycbcr_to_rgb(imgproc.rgb_to_ycbcr(f)), f, atol=1e-5)
    with pytest.raises(ValueError, match="rgb_to_lab needs an RGB image"):
        imgproc.rgb_to_lab(X[..., :2])


# scikit-image's own cases (skimage/color/tests/test_colorconv.py) for the conversions
# imgproc has, on float32 (skimage's on float64, hence a few places fewer where it asks
# for 7): its colour bars, the colour wheel sampled every 16 pixels against Python's
# colorsys, Bruce Lindbloom's Lab values, its out-of-gamut Lab points and its YCbCr values.
COLBARS = np.swapaxes(np.array([[1, 1, 0, 0, 1, 1, 0, 0],
                                [1, 1, 1, 1, 0, 0, 0, 0],
                                [1, 0, 1, 0, 1, 0, 1, 0]], np.float32).reshape(3, 4, 2), 0, 2)
WHEEL = skimage.data.colorwheel()[::16, ::16]


def test_skimages_rgb_to_hsv_against_colorsys():  # test_rgb2hsv_conversion
    import colorsys

    rgb = WHEEL.astype(np.float32) / 255
    want = np.array([colorsys.rgb_to_hsv(*p) for p in rgb.reshape(-1, 3).astype(np.float64)])
    np.testing.assert_allclose(np.asarray(imgproc.rgb_to_hsv(rgb)).reshape(-1, 3), want, atol=2e-6)


def test_skimages_hsv_to_rgb_against_colorsys():  # test_hsv2rgb_conversion: values up to 255, decimal=4
    import colorsys

    rgb = WHEEL.astype(np.float32)
    hsv = np.array([colorsys.rgb_to_hsv(*p) for p in rgb.reshape(-1, 3)], np.float32).reshape(rgb.shape)
    np.testing.assert_allclose(np.asarray(imgproc.hsv_to_rgb(hsv)), rgb, atol=1.5e-4 * 255)


def test_skimages_lab_cases():
    # test_rgb2lab_brucelindbloom: D65, sRGB, decimal=2
    lindbloom = np.array([[100, 0, 0], [97.1393, -21.5537, 94.4780], [91.1132, -48.0875, -14.1312],
                          [87.7347, -86.1827, 83.1793], [60.3242, 98.2343, -60.8249], [53.2408, 80.0925, 67.2032],
                          [32.2970, 79.1875, -107.8602], [0, 0, 0]]).T
    want = np.swapaxes(lindbloom.reshape(3, 4, 2), 0, 2)
    np.testing.assert_allclose(np.asarray(imgproc.rgb_to_lab(COLBARS)), want, atol=1.5e-2)
    # test_lab_rgb_outlier: out-of-gamut Lab clipped into [0, 1], decimal=3
    lab = np.array([[[50, -12, 85]], [[50, 12, -85]], [[90, -4, -47]]], np.float32)
    want = np.array([[[0.501, 0.481, 0]], [[0, 0.482, 1.]], [[0.578, 0.914, 1.]]])
    np.testing.assert_allclose(np.asarray(imgproc.lab_to_rgb(lab)), want, atol=1.5e-3)
    # test_lab_rgb_roundtrip on the colour wheel (decimal=6 on float64)
    rgb = WHEEL.astype(np.float32) / 255
    np.testing.assert_allclose(np.asarray(imgproc.lab_to_rgb(imgproc.rgb_to_lab(rgb))), rgb, atol=2e-5)


def test_skimages_ycbcr_cases():  # test_yuv and test_yuv_roundtrip (decimal=6 on float64)
    white_green = np.array([[[1.0, 1.0, 1.0]], [[0.0, 1.0, 0.0]]], np.float32)
    np.testing.assert_allclose(np.asarray(imgproc.rgb_to_ycbcr(white_green)),
                               [[[235, 128, 128]], [[144.553, 53.797, 34.214]]], atol=1e-4)
    rgb = WHEEL.astype(np.float32) / 255
    np.testing.assert_allclose(np.asarray(imgproc.ycbcr_to_rgb(imgproc.rgb_to_ycbcr(rgb))), rgb, atol=2e-6)


# --------------------------------------------------------------------------- CLAHE

CAT = np.asarray(__import__("PIL.Image", fromlist=["Image"]).open(
    __import__("pathlib").Path(__file__).resolve().parents[2] / "sample_images" / "chelsea.jpg").convert("RGB"))


@pytest.mark.parametrize("clip, tiles", [(40.0, (8, 8)), (2.0, (8, 8)), (4.0, (4, 6)), (0.0, (3, 3)), (1.0, (3, 1))])
def test_clahe_is_opencvs(clip, tiles):
    g = CAT[:123, :157, 1]  # sides not multiples of most tile counts: OpenCV's extension
    ref = cv2.createCLAHE(clipLimit=clip, tileGridSize=(tiles[1], tiles[0])).apply(g)
    np.testing.assert_array_equal(imgproc.clahe(g, clip_limit=clip, tiles=tiles), ref)
    # compiled (a pipeline stage, the caller's jit), fused multiply-adds must not move ties
    np.testing.assert_array_equal(jax.jit(lambda x, c: imgproc.clahe(x, clip_limit=c, tiles=tiles))(g, clip), ref)
    rgb = CAT[:64, :80]
    ours = np.asarray(imgproc.clahe(rgb, clip_limit=clip, tiles=tiles))
    for c in range(3):
        np.testing.assert_array_equal(ours[..., c], cv2.createCLAHE(clip, (tiles[1], tiles[0])).apply(
            np.ascontiguousarray(rgb[..., c])))


def test_clahe_batch_float_and_random():
    x = np.stack([CAT[:48, :64], CAT[60:108, 100:164]])
    y = np.asarray(imgproc.clahe(x, clip_limit=3.0, tiles=(4, 4)))
    np.testing.assert_array_equal(y[1], imgproc.clahe(x[1], clip_limit=3.0, tiles=(4, 4)))
    f = np.asarray(imgproc.clahe(x.astype(np.float32) / 255, clip_limit=3.0, tiles=(4, 4)))
    np.testing.assert_allclose(f * 255, y, atol=1e-3)
    out, params = imgproc.Pipeline([{"op": "random_clahe", "clip_range": [1.0, 4.0], "tiles": [4, 4]}])(
        x, key=1, return_params=True)
    c = np.asarray(params[0]["clip_limit"])
    assert np.all((c >= 1) & (c < 4))
    direct = np.asarray(imgproc.clahe(x[0], clip_limit=float(c[0]), tiles=(4, 4))).astype(int)
    # compiled in a loop, XLA may fuse the bilinear blend differently: a value on a .5 tie can round the other way
    assert np.abs(out[0].astype(int) - direct).max() <= 1 and np.mean(out[0] == direct) > 0.99
    with pytest.raises(ValueError, match="tiles"):
        imgproc.clahe(x, tiles=(0, 4))
    with pytest.raises(ValueError, match="must not exceed the image size"):
        imgproc.clahe(x, tiles=(64, 4))
    with pytest.raises(ValueError, match="clip_limit must be a finite number"):
        imgproc.clahe(x, clip_limit=float("nan"))
