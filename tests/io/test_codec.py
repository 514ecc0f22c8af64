"""Issue 14 item 3: the public codec. ``imgproc.decode_image`` is the decoder behind
``load_image`` (same arrays, metadata, warnings and reasons for the same bytes) and
``imgproc.encode_image`` the encoder behind ``save_image`` (the same bytes as the file
written), over the loader corpus (tests/loader_corpus.py) and the sample images."""

import io
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import imgproc
from imgproc.errors import ImgprocWarning, InvalidImageError
from imgproc.io.loader import read_image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared case tables
from loader_corpus import BAD, GOOD, generate, ramp16, rgb8  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[2] / "sample_images"
SAMPLE_FILES = sorted(p.name for p in SAMPLES.iterdir() if p.suffix in (".jpg", ".png"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("corpus"))


def _warned(fn, *args, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kw)
    return out, [str(w.message).split(": ", 1)[1] for w in caught if issubclass(w.category, ImgprocWarning)]


def _same_decode(path: Path):
    (arr, info), warned = _warned(read_image, path)
    (arr2, info2), warned2 = _warned(imgproc.decode_image, path.read_bytes(), name=str(path), return_info=True)
    assert arr2.dtype == arr.dtype and arr2.shape == arr.shape
    np.testing.assert_array_equal(arr2, arr)
    assert (info2.format, info2.exif, info2.icc_profile, info2.frames) == (info.format, info.exif, info.icc_profile, info.frames)
    assert warned2 == warned


@pytest.mark.parametrize("case", GOOD, ids=lambda c: c.name)
def test_decode_of_the_bytes_equals_load_image_of_the_file(case, corpus):
    _same_decode(corpus[case.name])


@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_decode_equals_load_image_on_the_samples(name):
    _same_decode(SAMPLES / name)  # EXIF rotation (chelsea_exif_rot90.jpg), 16-bit, RGBA, grey


@pytest.mark.parametrize("case", BAD, ids=lambda c: c.name)
def test_bad_bytes_raise_the_loaders_error_with_its_reason(case, corpus):
    path = corpus[case.name]
    with pytest.raises(InvalidImageError) as from_file:
        imgproc.load_image(path)
    with pytest.raises(InvalidImageError) as from_bytes:
        imgproc.decode_image(path.read_bytes())
    assert case.reason in from_bytes.value.reason
    assert from_bytes.value.reason == from_file.value.reason
    assert from_bytes.value.exit_code == 65
    assert str(from_bytes.value).startswith("<bytes>: ")


@pytest.mark.parametrize("data, reason", [
    (b"", "empty file"),
    (b"hello, not an image", "not a recognised image format"),
    (b"%PDF-1.7\n", "unsupported format PDF; allowed: JPEG, PNG, WEBP, TIFF, BMP, GIF"),
    (b"8BPS\x00\x01", "unsupported format PSD"),
])
def test_refusals_from_the_first_bytes(data, reason, tmp_path):
    with pytest.raises(InvalidImageError, match="^<bytes>: " + reason):
        imgproc.decode_image(data)
    p = tmp_path / "f.jpg"
    p.write_bytes(data)
    with pytest.raises(InvalidImageError) as e:
        imgproc.load_image(p)
    assert e.value.reason.startswith(reason)


def test_pixel_limit_is_checked_before_decoding():
    data = imgproc.encode_image(np.zeros((100, 100, 3), np.uint8), "png")
    with pytest.raises(InvalidImageError, match=r"too many pixels \(100x100 = 10000 > 9999\)"):
        imgproc.decode_image(data, max_pixels=9999)
    assert imgproc.decode_image(data, max_pixels=10000).shape == (100, 100, 3)


def test_more_bytes_than_the_pixel_limit_allows_are_refused_unread():
    data = b"\x89PNG\r\n\x1a\n" + bytes(8 + (64 << 20))  # 8 bytes over the limit (1 px * 8 bytes + 64 MiB)
    with pytest.raises(InvalidImageError, match=r"file too large \(67108880 bytes\) for the pixel limit 1"):
        imgproc.decode_image(data, max_pixels=1)


def test_truncated_bytes_refused_unless_allowed(corpus):
    data = corpus["jpeg_truncated.jpg"].read_bytes()
    with pytest.raises(InvalidImageError, match=r"pass allow_truncated=True to decode"):  # Python's spelling
        imgproc.decode_image(data)
    arr, warned = _warned(imgproc.decode_image, data, allow_truncated=True)
    ref, warned_file = _warned(imgproc.load_image, corpus["jpeg_truncated.jpg"], allow_truncated=True)
    np.testing.assert_array_equal(arr, ref)
    assert warned == warned_file and any("truncated JPEG" in w for w in warned)


def test_messages_name_the_options_as_the_caller_spells_them(corpus, tmp_path):
    """From Python the fix is a keyword argument (allow_truncated=True, max_pixels), on the
    command line an option (--allow-truncated, --max-pixels); imgproc augment has neither,
    so nothing is suggested there. load_image said "pass --allow-truncated"."""
    from click.testing import CliRunner

    from imgproc.cli import cli

    cut = corpus["jpeg_truncated.jpg"]
    with pytest.raises(InvalidImageError, match=r"; pass allow_truncated=True to decode what is there$"):
        imgproc.load_image(cut)
    _, warned = _warned(imgproc.load_image, cut, allow_truncated=True)
    assert any(w.endswith("decoded what was there (allow_truncated=True)") for w in warned), warned
    with pytest.raises(InvalidImageError, match=r"\); raise max_pixels to allow it$"):
        imgproc.load_image(SAMPLES / "chelsea.jpg", max_pixels=100)

    def cli_error(*args):
        r = CliRunner().invoke(cli, [str(a) for a in args])
        return r.exit_code, r.stderr

    code, err = cli_error("blur", cut, tmp_path / "o.png")
    assert code == 65 and err.endswith("; pass --allow-truncated to decode what is there\n"), err
    code, err = cli_error("blur", cut, tmp_path / "o.png", "--allow-truncated")
    assert code == 0 and err.endswith("decoded what was there (--allow-truncated)\n"), err
    code, err = cli_error("blur", SAMPLES / "chelsea.jpg", tmp_path / "p.png", "--max-pixels", 100)
    assert code == 65 and err.endswith("); raise --max-pixels to allow it\n"), err
    code, err = cli_error("augment", cut, tmp_path / "aug", "--spec", '[{"op": "random_flip_left_right"}]')
    assert code == 65 and "truncated JPEG file" in err and "allow" not in err, err


def test_truncated_refused_while_another_thread_decodes_one_allowed(corpus):
    # Pillow's LOAD_TRUNCATED_IMAGES is process-wide: a decode that was not allowed to
    # read a truncated file must not run while another thread has the switch on (a folder
    # run once wrote a truncated JPEG's output without --allow-truncated this way)
    import threading

    from PIL import ImageFile

    from imgproc.io.loader import _truncated_switch

    data = corpus["jpeg_truncated.jpg"].read_bytes()
    with pytest.raises(InvalidImageError):
        imgproc.decode_image(data)  # everything imported before the timing below
    outcome = []

    def plain():
        try:
            imgproc.decode_image(data)
            outcome.append("decoded")
        except InvalidImageError as e:
            outcome.append(str(e))

    with _truncated_switch.exclusive():
        ImageFile.LOAD_TRUNCATED_IMAGES = True  # as the allowed decode sets it
        try:
            t = threading.Thread(target=plain)
            t.start()
            t.join(1.0)
            assert t.is_alive() and outcome == []  # waits for the switch
        finally:
            ImageFile.LOAD_TRUNCATED_IMAGES = False
    t.join(10)
    assert len(outcome) == 1 and "pass allow_truncated=True" in outcome[0]


def test_bytes_like_inputs_and_wrong_types():
    data = (SAMPLES / "chelsea.jpg").read_bytes()
    ref = imgproc.decode_image(data)
    for same in (bytearray(data), memoryview(data), np.frombuffer(data, np.uint8)):
        np.testing.assert_array_equal(imgproc.decode_image(same), ref)
    with pytest.raises(TypeError, match="data must be bytes, bytearray, memoryview or a 1-D uint8 array; got str"):
        imgproc.decode_image("sample_images/chelsea.jpg")


# --------------------------------------------------------------------------- encode

LOSSLESS = [
    ("png", rgb8()), ("png", ramp16(3)), ("png", ramp16(4)), ("png", ramp16(2)), ("png", ramp16(1)[..., 0]),
    ("png", rgb8()[..., :2]), ("tiff", rgb8()), ("tiff", ramp16(3)), ("tiff", ramp16(4)), ("tiff", ramp16(1)[..., 0]),
    ("bmp", rgb8()), ("bmp", rgb8()[..., 0]), ("webp", rgb8()),
]


@pytest.mark.parametrize("fmt, image", LOSSLESS, ids=lambda v: v if isinstance(v, str) else f"{v.dtype}{v.shape}")
def test_lossless_round_trip_is_exact(fmt, image):
    data = imgproc.encode_image(image, fmt, quality=100)
    out = imgproc.decode_image(data)
    if fmt == "webp":  # WebP at quality 100 is still lossy (Pillow writes lossy unless lossless=True)
        assert out.shape == image.shape and imgproc.psnr(out, image) > 30  # 4:2:0 chroma on a 24x40 ramp
        return
    assert out.dtype == image.dtype
    np.testing.assert_array_equal(out, image)


@pytest.mark.parametrize("fmt", ["jpg", "JPEG", ".jpeg", "webp", "png", "tif", "bmp"])
@pytest.mark.parametrize("name", ["chelsea.jpg", "logo_rgba.png", "gradient_16bit.png", "camera_gray.png"])
def test_encode_is_the_bytes_save_image_writes(fmt, name, tmp_path):
    img, info = read_image(SAMPLES / name)
    ext = "." + fmt.lower().lstrip(".").replace("jpeg", "jpg")
    path = imgproc.save_image(tmp_path / f"out{ext}", img, quality=90, exif=info.exif, icc_profile=info.icc_profile)
    data = imgproc.encode_image(img, fmt, quality=90, exif=info.exif, icc_profile=info.icc_profile)
    assert data == path.read_bytes()
    back = imgproc.decode_image(data)
    assert back.shape[:2] == img.shape[:2]


def test_jpeg_round_trip_keeps_the_picture_and_metadata():
    data = (SAMPLES / "chelsea_exif_rot90.jpg").read_bytes()
    img, info = imgproc.decode_image(data, return_info=True)
    out, info2 = imgproc.decode_image(imgproc.encode_image(img, "jpeg", quality=95, exif=info.exif), return_info=True)
    assert out.shape == img.shape  # orientation was applied once and reset to 1: not rotated again
    assert imgproc.psnr(out, img) > 35
    assert Image.open(io.BytesIO(imgproc.encode_image(img, "jpeg", exif=info.exif))).getexif().get(0x0112) == 1


def test_encode_refusals_name_the_allowed_values():
    img = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(ValueError, match=r"format must be one of BMP, JPEG, PNG, TIFF, WEBP .*got 'gif'"):
        imgproc.encode_image(img, "gif")
    with pytest.raises(ValueError, match="quality must be an integer from 1 to 100; got 0"):
        imgproc.encode_image(img, "jpeg", quality=0)
    with pytest.raises(ValueError, match=r"image / 255"):
        imgproc.encode_image(np.full((4, 4, 3), 200.0, np.float32), "png")
