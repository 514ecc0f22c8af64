"""threshold_otsu against skimage.filters.threshold_otsu: integer images exactly, float
images within one histogram bin, per image in a batch, in every layout; and the Otsu cases
of scikit-image's own ``skimage/filters/tests/test_thresholding.py``."""

import jax
import numpy as np
import pytest

import imgproc

skf = pytest.importorskip("skimage.filters")
# the reference warns that an HWC image "looks like RGB"; it is flattened, as imgproc's is
pytestmark = pytest.mark.filterwarnings("ignore:threshold_otsu is expected to work correctly only for grayscale")


def _bimodal(rng, n, scale=1.0):
    values = np.concatenate([rng.normal(60, 15, n // 2), rng.normal(170, 20, n - n // 2)]).clip(0, 255)
    return values * scale


@pytest.mark.parametrize("dtype, scale", [(np.uint8, 1.0), (np.uint16, 250.0)])
def test_integer_images_equal_skimage(dtype, scale, rng):
    for _ in range(8):
        x = _bimodal(rng, 12 * 14 * 3, scale).astype(dtype).reshape(12, 14, 3)
        assert float(imgproc.threshold_otsu(x)) == skf.threshold_otsu(x)


def test_float_images_within_one_bin(rng):
    for _ in range(8):
        x = (_bimodal(rng, 20 * 30) / 255).astype(np.float32).reshape(20, 30)
        width = (x.max() - x.min()) / 256
        assert abs(float(imgproc.threshold_otsu(x)) - skf.threshold_otsu(x)) <= width * 1.001


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_per_image_in_a_batch(layout, rng):
    batch = np.stack([_bimodal(rng, 10 * 11 * 3).astype(np.uint8).reshape(10, 11, 3) for _ in range(3)])
    batch[2] = 77  # a constant image: its value (skimage's rule)
    x = batch if layout == "NHWC" else np.moveaxis(batch, -1, 1)
    got = imgproc.threshold_otsu(x, layout=layout)
    assert got.shape == (3,) and got.dtype == np.float32
    assert got.tolist() == [float(skf.threshold_otsu(im)) for im in batch[:2]] + [77.0]
    np.testing.assert_array_equal(jax.jit(lambda b: imgproc.threshold_otsu(b, layout=layout))(x), got)


# scikit-image's test_thresholding.py: TestSimpleImage's image (int there; uint8, uint16
# and float32 here, and its "negative int" case as float32: imgproc takes no signed integers)
SIMPLE = np.array([[0, 0, 1, 3, 5],
                   [0, 1, 4, 3, 4],
                   [1, 2, 5, 4, 1],
                   [2, 4, 5, 2, 1],
                   [4, 5, 1, 0, 0]])


def test_skimages_simple_image():
    assert float(imgproc.threshold_otsu(SIMPLE.astype(np.uint8))) == 2  # test_otsu
    assert float(imgproc.threshold_otsu(SIMPLE.astype(np.uint16))) == 2
    assert 2 <= float(imgproc.threshold_otsu(SIMPLE.astype(np.float32))) < 3  # test_otsu_float_image
    shifted = (SIMPLE - 2).astype(np.float32)  # test_otsu_negative_int, in float
    assert 0 <= float(imgproc.threshold_otsu(shifted)) < 1
    assert float(imgproc.threshold_otsu(shifted)) == skf.threshold_otsu(shifted)


@pytest.mark.parametrize("name, as_float, low, high", [
    ("camera", False, 101, 103),  # test_otsu_camera_image (the camera photo of skimage >= 0.18)
    ("coins", False, 106, 108),  # test_otsu_coins_image
    ("coins", True, 0.41, 0.42),  # test_otsu_coins_image_as_float
    ("astronaut", False, 109, 111),  # test_otsu_astro_image: an RGB image, flattened
])
def test_skimages_photos(name, as_float, low, high):
    skimage = pytest.importorskip("skimage")
    image = skimage.img_as_ubyte(getattr(skimage.data, name)())
    if as_float:
        image = skimage.img_as_float(image).astype(np.float32)
    got = float(imgproc.threshold_otsu(image))
    assert low < got < high
    want = skf.threshold_otsu(image)
    assert got == want if not as_float else abs(got - want) <= 1e-6


def test_skimages_one_colour_image():
    # test_otsu_one_color_image: a constant image's threshold is its value
    assert float(imgproc.threshold_otsu(np.ones((10, 10), np.uint8))) == 1


@pytest.mark.parametrize("call, match", [
    (lambda x: imgproc.threshold_otsu(x, nbins=1), r"nbins must be an integer in \[2, "),
    (lambda x: imgproc.threshold_otsu(x.astype(np.int32)), "uint8, uint16, float16, bfloat16, float32"),
    (lambda x: imgproc.threshold_otsu(x, layout="NCHW"), "needs a 4-D array"),
])
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call(np.zeros((6, 6, 3), np.float32))
