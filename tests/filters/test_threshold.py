"""threshold_otsu against skimage.filters.threshold_otsu: integer images exactly, float
images within one histogram bin, per image in a batch, in every layout; and the Otsu cases
of scikit-image's own ``skimage/filters/tests/test_thresholding.py``. The ``threshold`` op
against OpenCV's ``cv2.threshold`` (``THRESH_BINARY``, with and without ``THRESH_OTSU``)
and scikit-image's ``image > threshold_otsu(image)``."""

from pathlib import Path

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


def _sixteen_bit_images(rng):
    camera = pytest.importorskip("skimage").data.camera().astype(np.int64)
    return {
        "the 16-bit sample": imgproc.load_image(Path(__file__).parents[2] / "sample_images" / "gradient_16bit.png"),
        "camera x 257 + noise": (camera * 257 + rng.integers(-300, 300, camera.shape)).clip(0, 65535).astype(np.uint16),
        "normal noise": rng.normal(30000, 5000, (300, 400)).clip(0, 65535).astype(np.uint16),
    }


def test_sixteen_bit_images_of_many_levels_equal_skimage(rng):
    """Tens of thousands of levels, where float32 sums moved the threshold by a few levels
    (26600 against 26604 on the sample): scikit-image's arithmetic, on the host
    (``otsu_of_levels``), eagerly, jitted, per image in a batch, and binarised."""
    images = _sixteen_bit_images(rng)
    for name, x in images.items():
        assert float(imgproc.threshold_otsu(x)) == skf.threshold_otsu(x), name
        np.testing.assert_array_equal(imgproc.threshold(x), np.where(x > skf.threshold_otsu(x), 65535, 0), name)
    batch = np.stack([x[:200, :200] for x in images.values()])
    want = [skf.threshold_otsu(x) for x in batch]
    assert imgproc.threshold_otsu(batch[..., None]).tolist() == want
    assert jax.jit(lambda b: imgproc.threshold_otsu(b))(batch[..., None]).tolist() == want


@pytest.mark.parametrize("nbins", [256, 16, 1000])
def test_float_images_within_one_bin(nbins, rng):
    for _ in range(8):
        x = (_bimodal(rng, 20 * 30) / 255).astype(np.float32).reshape(20, 30)
        width = (x.max() - x.min()) / nbins
        got = float(imgproc.threshold_otsu(x, **({} if nbins == 256 else {"nbins": nbins})))
        assert abs(got - skf.threshold_otsu(x, nbins=nbins)) <= width * 1.001
        centre = (got - x.min()) / width - 0.5  # the centre of one of the nbins bins, as scikit-image's
        assert abs(centre - round(centre)) < 0.01


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
    (lambda x: imgproc.threshold(x, value="grey"), r"value must be a finite number, one per image, or None"),
    (lambda x: imgproc.threshold(x, value=np.nan), r"value must be a finite number"),
    (lambda x: imgproc.threshold(x, value=[[1.0]]), r"value must be a finite number"),
    (lambda x: imgproc.threshold(x, value=[1.0, 2.0]), r"value must give one number per image: 1 here; got 2"),
    (lambda x: imgproc.threshold(x, max_value=0), r"max_value must be a finite number > 0"),
    (lambda x: imgproc.threshold(x, nbins=1), r"nbins must be an integer in \[2, "),
    (lambda x: imgproc.threshold(x.astype(bool)), "uint8, uint16, float16, bfloat16, float32"),
    (lambda x: imgproc.threshold(x, levels="yes"), r"levels must be True .* or False"),
    # a pipeline refuses them when it is built, before any image
    (lambda x: imgproc.Pipeline([{"op": "threshold", "nbins": 1}]), r"nbins must be an integer in \[2, "),
    (lambda x: imgproc.Pipeline([{"op": "threshold", "value": "otsu"}]), r"value must be a finite number"),
    (lambda x: imgproc.Pipeline([{"op": "threshold", "levels": 1}]), r"levels must be True"),
])
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call(np.zeros((6, 6, 3), np.float32))


# ---------------------------------------------------------------- the threshold op


def _photos():
    skimage = pytest.importorskip("skimage")
    grey = skimage.img_as_ubyte(skimage.color.rgb2gray(skimage.data.astronaut()))
    return {"camera": skimage.data.camera(), "coins": skimage.data.coins(), "astronaut_grey": grey,
            "page": skimage.data.page(), "text": skimage.data.text()}


def test_otsu_binarisation_equals_opencvs_on_grey_uint8(rng):
    cv2 = pytest.importorskip("cv2")
    images = _photos()
    for i in range(40):  # small images of other spreads, where a tie or an empty bin would show
        lo, hi = rng.integers(0, 100), rng.integers(150, 256)
        images[f"random{i}"] = rng.integers(lo, hi, tuple(rng.integers(2, 40, 2)), dtype=np.uint8)
    for name, x in images.items():
        _, want = cv2.threshold(x, 0, 255, cv2.THRESH_BINARY | cv2.THRESH_OTSU)
        np.testing.assert_array_equal(imgproc.threshold(x), want, err_msg=name)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_a_given_value_equals_opencvs_binary_threshold(dtype, rng):
    cv2 = pytest.importorskip("cv2")
    x = rng.integers(0, 256, (17, 23, 3)).astype(dtype)
    if dtype == np.float32:
        x = x / 255 + rng.normal(0, 1e-3, x.shape).astype(np.float32)
    for value, top in ((100, 255), (100.5, 7), (0.4, 1.0), (-1, 3)):
        _, want = cv2.threshold(x, value, top, cv2.THRESH_BINARY)
        np.testing.assert_array_equal(imgproc.threshold(x, value=value, max_value=top), want)


@pytest.mark.parametrize("dtype, scale", [(np.uint16, 250.0), (np.float32, 1 / 255)])
def test_otsu_binarisation_equals_skimages_rule(dtype, scale, rng):
    """scikit-image's ``x > threshold_otsu(x)``, pixel for pixel. Colour images too: Otsu's
    threshold over all of the image's values, each value compared. Float images as well
    (and the photos as skimage.img_as_float gives them, float64): a value on a bin edge
    could fall in the next bin of imgproc's float32 histogram (threshold_otsu's docstring),
    but none here does (nor in 600 such random images, float32 and float64 photos alike)."""
    top = 65535 if dtype == np.uint16 else 1.0
    images = [(_bimodal(rng, int(np.prod(shape))) * scale).astype(dtype).reshape(shape)
              for shape in ((20, 30), (12, 14, 3))]
    if dtype == np.float32:
        skimage = pytest.importorskip("skimage")
        images += [skimage.img_as_float(photo) for photo in _photos().values()]
    for x in images:
        want = np.where(x > skf.threshold_otsu(x), top, 0).astype(x.dtype)
        np.testing.assert_array_equal(imgproc.threshold(x), want)


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_each_image_of_a_batch_its_own_threshold(layout, rng):
    batch = np.stack([(_bimodal(rng, 10 * 11 * 3) * s).astype(np.uint8).reshape(10, 11, 3) for s in (1.0, 0.5, 0.2)])
    x = batch if layout == "NHWC" else np.moveaxis(batch, -1, 1)
    got = imgproc.threshold(x, layout=layout)
    want = np.stack([imgproc.threshold(x[i], layout=layout[1:]) for i in range(3)])
    np.testing.assert_array_equal(got, want)
    assert len({int(imgproc.threshold_otsu(im)) for im in batch}) == 3  # three thresholds
    per_image = imgproc.threshold(x, value=[50, 60, 70], layout=layout)
    np.testing.assert_array_equal(per_image, np.stack([imgproc.threshold(x[i], value=v, layout=layout[1:])
                                                       for i, v in enumerate((50, 60, 70))]))
    np.testing.assert_array_equal(jax.jit(lambda b: imgproc.threshold(b, layout=layout))(x), got)


def test_in_a_pipeline_the_range_is_the_pipelines(rng):
    x = _bimodal(rng, 16 * 16 * 3).astype(np.uint8).reshape(16, 16, 3)
    np.testing.assert_array_equal(imgproc.Pipeline([{"op": "threshold"}])(x), imgproc.threshold(x))
    # the pipeline computes in float32 with max_value 255: Otsu's bins are still the levels
    np.testing.assert_array_equal(imgproc.threshold(x.astype(np.float32), max_value=255), imgproc.threshold(x))
    scaled = imgproc.Pipeline([{"op": "to_float"}, {"op": "threshold", "value": 0.5}])(x)
    np.testing.assert_array_equal(scaled, np.where(x / 255 > 0.5, 1.0, 0.0).astype(np.float32))
    assert imgproc.op_info("threshold").not_differentiable


def test_in_a_pipeline_a_uint16_image_is_binned_one_bin_per_level(rng):
    """A uint16 image reaches a pipeline's threshold stage as float32 with max_value 65535:
    Otsu's bins are its levels, one bin each, as an eager call on the uint16 image bins
    them (not nbins bins between its minimum and maximum): scikit-image's ``x >
    threshold_otsu(x)`` on images of thousands of levels and of few."""
    skimage = pytest.importorskip("skimage")
    pipe = imgproc.Pipeline([{"op": "threshold"}])
    images = {f"many {shape}": (_bimodal(rng, int(np.prod(shape))) * 257).astype(np.uint16).reshape(shape)
              for shape in ((96, 96), (40, 50, 3))}
    assert all(len(np.unique(x)) > 4000 for x in images.values())
    images["camera"] = skimage.data.camera()[::2, ::2].astype(np.uint16) * 257  # 256 levels
    for name, x in images.items():
        got = pipe(x)
        assert got.dtype == np.uint16
        np.testing.assert_array_equal(got, np.where(x > skf.threshold_otsu(x), 65535, 0).astype(np.uint16),
                                      err_msg=name)
        np.testing.assert_array_equal(got, imgproc.threshold(x), err_msg=name)


@pytest.mark.parametrize("before", [
    [{"op": "sobel", "axis": 0}], [{"op": "gaussian_laplace", "sigma": 2.0}],
    [{"op": "gaussian_gradient_magnitude", "sigma": 1.0}],  # float32 results: not levels
    [{"op": "edges"}], [{"op": "gaussian_blur", "sigma": 2.0}], [{"op": "median_blur", "size": 3}],  # uint8 results
])
def test_in_a_pipeline_after_a_stage_it_is_what_the_eager_chain_gives(before):
    """scikit-image's ``y > threshold_otsu(y)`` of what the stages before give: a float32
    result (a derivative's signed values) binned as floats (the pipeline passes
    ``levels=False``), a uint8 one's unrounded float32 in the pipeline rounded to its levels."""
    skimage = pytest.importorskip("skimage")
    photo = skimage.data.camera()[::2, ::2]
    pipe = imgproc.Pipeline(before + [{"op": "threshold"}])
    y = imgproc.Pipeline(before)(photo)
    want = np.where(y > skf.threshold_otsu(y), 255, 0).astype(y.dtype)
    np.testing.assert_array_equal(pipe(photo), want)
    assert ("levels" in pipe.to_spec()[-1]) == (y.dtype == np.float32)


def _two_modes(seed, width, top, n=65536):
    """Counts of ``n`` levels: two modes of ``width`` bins (random counts below ``top``)
    with a long run of empty bins between them, and empty bins at both ends."""
    rng = np.random.default_rng(seed)
    counts = np.zeros(n)
    a, b = rng.integers(width + 1, n // 3), rng.integers(2 * n // 3, n - width - 1)
    counts[a - width:a + 1] = rng.integers(1, top, width + 1)
    counts[b:b + width] = rng.integers(1, top, width)
    return counts


def _dyadic(n):
    """Bin centres of a float image's ``n`` bins over [-1.5, 2.5), exact in float32."""
    return -1.5 + (np.arange(n) + 0.5) * (4 / n)


# (name, counts, centres): the histograms Otsu's threshold is taken from, of 65,536 bins (a
# float image's nbins, up to 2**20; uint16 levels, which threshold_otsu sends to the
# host's otsu_of_levels instead) and of 256 (uint8 levels, the default nbins). Between two
# modes every split has the same variance (the classes do not change along a run of empty
# bins): scikit-image's sequential sums tie there exactly and its argmax takes the first
# split; XLA's prefix sums round along a long run, so imgproc takes the variance at the
# run's last non-empty bin (threshold._otsu): without that, 6 of the 65,536-bin cases here
# took a split further along the run (XLA:CPU; the 256-bin ones tie either way).
OTSU_HISTOGRAMS = [
    *[(f"levels65536_{seed}", _two_modes(seed, 3000, 30), np.arange(65536)) for seed in range(12)],
    *[(f"levels65536_narrow_modes_{seed}", _two_modes(seed, 200, 100), np.arange(65536)) for seed in range(6)],
    *[(f"float65536_{seed}", _two_modes(seed, 3000, 30), _dyadic(65536)) for seed in range(12)],
    ("uint8_two_modes", _two_modes(0, 20, 1000, n=256), np.arange(256)),
    ("float_two_modes", _two_modes(1, 20, 1000, n=256), _dyadic(256)),
    # exact ties between splits that are not one run: 5, _, 5, _, 5 splits equally after
    # the first and the second mode, and scikit-image takes the first
    ("tie_three_modes", np.array([5, 0, 5, 0, 5]), np.arange(5)),
    ("tie_three_modes_float", np.array([0, 0, 7, 0, 0, 0, 7, 0, 0, 0, 7, 0]), _dyadic(256)[:12]),
    ("tie_two_levels", np.array([0, 3, 0, 0, 0, 0, 3, 0]), np.arange(8)),
]


@pytest.mark.parametrize("name, counts, centers", OTSU_HISTOGRAMS, ids=[h[0] for h in OTSU_HISTOGRAMS])
def test_otsu_of_a_histogram_equals_skimages(name, counts, centers):
    """The histogram-to-threshold step alone, compiled as threshold_otsu compiles it, against
    ``skimage.filters.threshold_otsu(hist=(counts, centres))`` (which trims the empty bins at
    the ends, where imgproc's mask refuses an empty class); a histogram of levels from 0 up
    also through the host's ``otsu_of_levels`` (uint16 images')."""
    from imgproc.filters.threshold import _otsu, otsu_of_levels

    want = skf.threshold_otsu(hist=(counts, centers))
    got = jax.jit(_otsu)(np.asarray(counts, np.float32), np.asarray(centers, np.float32))
    assert float(got) == want
    if np.array_equal(centers, np.arange(len(counts))):
        assert otsu_of_levels(counts) == want


@pytest.mark.parametrize("count, levels", [(1, 256), (2, 256), (7, 256), (1000, 256), (999, 200), (501, 65536)])
def test_level_counts_are_bincount(count, levels, rng):
    # the pair table's rows and columns, an odd last value alone; above 256 levels one scatter
    from imgproc.filters.threshold import level_counts

    index = rng.integers(0, levels, count).astype(np.int32)
    index[: count // 3] = index[0]  # runs of one value, as a photo's flat regions
    got = jax.jit(level_counts, static_argnums=1)(index, levels)
    np.testing.assert_array_equal(got, np.bincount(index, minlength=levels))
    assert got.dtype == np.int32
