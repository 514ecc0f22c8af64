"""Issue 16: the generated corpus (tests/loader_corpus.py) through the API, one file on
the command line, and folder runs in text and JSON mode -- pixels equal to Pillow's or to a
NumPy reference, true reasons, one ``error:`` line per failed file, JSON-only lines, and
nothing that a native library printed on stderr."""

import io
import json
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageOps

import imgproc
from imgproc.errors import ImgprocWarning, InvalidImageError
from imgproc.io.native_stderr import captured

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared case tables
from loader_corpus import BAD, GOOD, generate  # noqa: E402

EXE = os.path.join(os.path.dirname(sys.executable), "imgproc")
ORIENTED = {"png_exif_after_idat.png", "png_raw_profile_exif.png", "png_xmp_orientation.png", "jpeg_xmp_orientation.jpg"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("corpus"))


def pillow_pixels(path):
    """Pillow's decode, orientation applied (ImageOps.exif_transpose), 1-bit as 0/255."""
    with Image.open(path) as im:
        im = ImageOps.exif_transpose(im)
        if im.mode == "1":
            im = im.convert("L")
        return np.asarray(im)


def load(path, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        arr = imgproc.load_image(path, **kw)
    return arr, [str(w.message) for w in caught if issubclass(w.category, ImgprocWarning)]


def run(*args):
    return subprocess.run([EXE, *map(str, args)], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("case", GOOD, ids=lambda c: c.name)
def test_good_pixels_equal_pillow_or_reference(case, corpus):
    ours, _ = load(corpus[case.name])
    if case.reference is not None:
        np.testing.assert_array_equal(ours, case.reference())
    if case.pillow is None:
        assert case.why  # Pillow itself is wrong here; say why in the corpus
        return
    ref = pillow_pixels(corpus[case.name])
    if case.pillow == "high byte":
        assert ours.dtype == np.uint16
        np.testing.assert_array_equal(ours >> 8, ref)
    elif case.pillow == "grey+alpha as RGBA, high byte":
        assert ours.dtype == np.uint16 and ours.shape[2] == 2 and ref.shape[2] == 4
        np.testing.assert_array_equal((ours >> 8)[..., [0, 0, 0, 1]], ref)
    elif case.name.endswith(".jpg"):  # libjpeg-turbo via simplejpeg vs Pillow's: IDCT rounding
        assert ours.shape == ref.shape and np.abs(ours.astype(int) - ref).max() <= 1
    else:
        np.testing.assert_array_equal(ours, ref)


def test_same_rule_at_8_and_16_bits(corpus):
    # tRNS on RGB: no alpha at either depth; APNG: the default image at either depth
    for eight, sixteen, channels in [("png8_rgb_trns.png", "png16_rgb_trns.png", 3),
                                     ("apng8_default_image.png", "apng16_default_image.png", 3),
                                     ("png8_grey_alpha.png", "png16_grey_alpha.png", 2)]:
        a, b = load(corpus[eight])[0], load(corpus[sixteen])[0]
        assert a.shape[2] == b.shape[2] == channels
    # premultiplied alpha: the same formula at both depths
    from loader_corpus import PRE8, PRE16, unpremultiplied

    np.testing.assert_array_equal(load(corpus["tiff8_premultiplied.tif"])[0], unpremultiplied(PRE8))
    np.testing.assert_array_equal(load(corpus["tiff16_premultiplied.tif"])[0], unpremultiplied(PRE16))


def test_two_loads_give_the_same_pixels(corpus):
    for name in ("tiff16_rgb_planar.tif", "tiff16_rgb_lzw_planar.tif"):
        np.testing.assert_array_equal(load(corpus[name])[0], load(corpus[name])[0])


def test_a_damaged_strip_decodes_to_the_same_pixels_every_time(corpus):
    """Pillow 10.4 to 12.3 left the rows libtiff could not decode in a damaged Group 4
    strip as uninitialised memory: 58 to 242 of its 960 pixels changed from one decode of
    the same bytes to the next (hence ``pillow>=13``, pyproject.toml). Freed buffers of
    0xA5 bytes between the loads make such memory show."""
    first = load(corpus["tiff_g4_damaged.tif"])[0]
    for _ in range(10):
        litter = [bytearray(b"\xa5" * n) for n in (first.size, 4 * first.size, 1 << 16)]
        del litter
        np.testing.assert_array_equal(load(corpus["tiff_g4_damaged.tif"])[0], first)


def test_native_complaint_on_a_good_file_is_a_warning(corpus):
    _, notes = load(corpus["tiff_g4_damaged.tif"])
    assert any(": libtiff: " in n for n in notes), notes  # e.g. "libtiff: Fax4Decode: Bad code word ..."


@pytest.mark.parametrize("case", BAD, ids=lambda c: c.name)
def test_bad_reason_is_true(case, corpus):
    with pytest.raises(InvalidImageError) as e:
        load(corpus[case.name])
    reason = e.value.reason
    assert case.reason in reason and "\n" not in reason and e.value.exit_code == 65, reason
    # allow_truncated=True is suggested exactly when it gets pixels out of the file, spelled
    # as Python takes it (this is load_image; the command line says --allow-truncated)
    try:
        load(corpus[case.name], allow_truncated=True)
        helps = True
    except InvalidImageError:
        helps = False
    assert ("pass allow_truncated=True to decode what is there" in reason) == helps and "--" not in reason, reason


@pytest.mark.parametrize("name", ["tiff_webp.tif", "tiff8_lzw_damaged.tif", "tiff16_truncated.tif"])
def test_cli_single_file_one_line(name, corpus, tmp_path):
    r = run("denoise", corpus[name], tmp_path / "o.png")
    assert r.returncode == 65
    assert r.stderr.splitlines() == [f"error: {corpus[name]}: {r.stderr.split(': ', 2)[2].rstrip()}"], r.stderr
    assert next(c.reason for c in BAD if c.name == name) in r.stderr


def _folder(corpus, tmp_path, copies=1):
    """Every corpus file, the noisy bad ones ``copies`` times (more work for the threads)."""
    folder = tmp_path / "in"
    folder.mkdir()
    bad = set()
    for name, path in corpus.items():
        n = copies if name.startswith(("tiff", "png16")) else 1
        for k in range(n):
            dst = folder / (name if k == 0 else f"{k}_{name}")
            dst.write_bytes(path.read_bytes())
            if any(c.name == name for c in BAD):
                bad.add(dst)
    return folder, bad


def test_folder_text_one_error_line_per_failure(corpus, tmp_path):
    folder, bad = _folder(corpus, tmp_path)
    # blur, not denoise: the files and the report are under test, and denoise's auto compiles
    # every method for each of the corpus's sizes (17 s a run)
    r = run("blur", folder, tmp_path / "out", "--log-interval", "1000", "--workers", "4")
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    for p in bad:
        assert sum(line.startswith(f"error: {p}: ") for line in lines) == 1, p
    assert sum(line.startswith("error: ") for line in lines) == len(bad)
    allowed = ("error: ", "warning: ", "summary: ", "failed (", f"  {folder}")
    assert [line for line in lines if not line.startswith(allowed)] == [], r.stderr
    assert not [line for line in lines if "error: " in line[1:] and not line.startswith("  ")], r.stderr  # nothing glued on
    out = tmp_path / "out"
    for name in ORIENTED:  # turned upright, the output's EXIF says orientation 1
        with Image.open(out / name) as o:
            assert o.size == (corpus_shape(corpus[name])[1], corpus_shape(corpus[name])[0])
            assert o.getexif().get(0x0112) == 1, name


def corpus_shape(path):
    return load(path)[0].shape


def test_folder_json_only_json_lines(corpus, tmp_path):
    folder, bad = _folder(corpus, tmp_path, copies=4)
    r = run("blur", folder, tmp_path / "out", "--log-format", "json", "--workers", "4", "--batch-size", "2")
    assert r.returncode == 1
    events = [json.loads(line) for line in r.stderr.splitlines()]  # raises on any non-JSON line
    errors = {e["path"]: e["reason"] for e in events if e["event"] == "error"}
    assert set(errors) == {str(p) for p in bad}
    for p in bad:
        expected = next(c.reason for c in BAD if p.name.endswith(c.name))
        assert expected in errors[str(p)], (p, errors[str(p)])
        if p.name.endswith("jpeg_truncated.jpg"):  # the command line's spelling of the option
            assert "; pass --allow-truncated to decode what is there" in errors[str(p)], errors[str(p)]
    warned = [e["message"] for e in events if e["event"] == "warning"]
    assert any(m.startswith("libtiff: ") for m in warned), warned
    assert events[-1]["event"] == "summary" and events[-1]["failed"] == len(bad)


def test_capture_sees_fd2_and_is_serialized(capfd):
    def native_print(text):
        os.write(2, text.encode())

    results = {}

    def worker(i):
        with captured() as cap:
            native_print(f"message {i}\n")
        results[i] = cap.text

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: f"message {i}\n" for i in range(8)}
    assert capfd.readouterr().err == ""


def test_damaged_files_of_every_format_print_nothing(capfd):
    """Random byte damage and cuts in JPEG, WebP, PNG, GIF, BMP and TIFF (8/16-bit, LZW,
    JPEG, Deflate, G4, planar): each file decodes or raises InvalidImageError, and not one
    byte reaches file descriptor 2 (before the capture, libtiff and libpng printed 137
    lines for 900 such files)."""
    from imgproc.io.loader import decode_bytes
    from loader_corpus import one_bit_g4, pil, planar, png16, ramp16, rgb8, tiff

    a = rgb8(48, 64)
    cmyk = io.BytesIO()
    Image.fromarray(np.concatenate([a, a[..., :1]], -1), "CMYK").save(cmyk, "JPEG")
    seeds = {
        "jpeg": pil(a, "JPEG", quality=90), "jpeg_progressive": pil(a, "JPEG", progressive=True), "jpeg_cmyk": cmyk.getvalue(),
        "webp": pil(a, "WEBP", quality=80), "png": pil(a, "PNG"), "png16": png16(ramp16(3, 48, 64)), "gif": pil(a[..., 0], "GIF"),
        "bmp": pil(a, "BMP"), "tiff_lzw": pil(a, "TIFF", compression="tiff_lzw"), "tiff_jpeg": pil(a, "TIFF", compression="jpeg"),
        "tiff_g4": one_bit_g4(), "tiff_deflate": pil(a, "TIFF", compression="tiff_adobe_deflate"),
        "tiff16": tiff(ramp16(3, 48, 64), photometric="rgb", compression="lzw"),
        "tiff16_planar": tiff(planar(ramp16(3, 48, 64)), photometric="rgb", planarconfig="separate"),
    }
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as escaped:  # Python warnings would reach stderr too
        warnings.simplefilter("always")
        _damage_all(seeds, decode_bytes)
    assert [str(w.message) for w in escaped] == []
    assert capfd.readouterr().err == ""


def _damage_all(seeds, decode_bytes):
    for name, data in seeds.items():
        for seed in range(20):
            rng = np.random.default_rng(seed)
            d = bytearray(data)
            for _ in range(int(rng.integers(1, 8))):
                d[int(rng.integers(8, len(d)))] = int(rng.integers(0, 256))
            if seed % 5 == 0:
                d = d[: int(len(d) * rng.uniform(0.3, 0.95))]
            try:
                decode_bytes(bytes(d), name, warn=lambda p, m: None, allow_truncated=bool(seed % 2))
            except InvalidImageError as e:
                assert "\n" not in str(e)


def test_encoders_print_nothing(capfd, tmp_path):
    from loader_corpus import ramp16, rgb8

    capfd.readouterr()
    images = [rgb8(), rgb8()[..., 0], ramp16(3), ramp16(4), ramp16(1)[..., 0], np.dstack([rgb8(), rgb8()[..., :1]])]
    for i, img in enumerate(images):
        for ext in (".png", ".tif", ".jpg", ".webp", ".bmp"):
            imgproc.save_image(tmp_path / f"{i}{ext}", img)
    assert capfd.readouterr().err == ""


def test_a_truncated_retry_in_another_thread_does_not_hide_a_crc_error(corpus):
    # a folder run found a bad tEXt CRC read as fine, at random: another worker was
    # retrying a truncated file with Pillow's LOAD_TRUNCATED_IMAGES set, and with it set
    # the PNG plugin skips the CRC checks of ancillary chunks while reading the header
    from PIL import ImageFile

    from imgproc.io import loader

    holding, release, result = threading.Event(), threading.Event(), {}

    def truncated_retry():
        with loader._truncated_switch.exclusive():
            old, ImageFile.LOAD_TRUNCATED_IMAGES = ImageFile.LOAD_TRUNCATED_IMAGES, True
            holding.set()
            release.wait(10)
            ImageFile.LOAD_TRUNCATED_IMAGES = old

    def read():
        try:
            imgproc.load_image(corpus["png_text_bad_crc.png"])
            result["read"] = "fine"
        except InvalidImageError as e:
            result["read"] = str(e)

    retry = threading.Thread(target=truncated_retry)
    retry.start()
    assert holding.wait(10)
    reader = threading.Thread(target=read)
    reader.start()
    reader.join(0.5)  # the header read waits for the switch (before, it went on)
    release.set()
    retry.join(10)
    reader.join(10)
    assert "tEXt (CRC error)" in result["read"], result


def test_float_tiff_out_of_range_read_raw_and_refused_by_the_command(tmp_path):
    """Issue 46 item 3: a float TIFF of CT numbers (as Pillow's 10ct_32bit_128.tiff) exited 2
    (a usage error) with NumPy advice and no path; a folder run gave 65. load_image returns
    the values as tifffile and Pillow do; the command refuses the file with 65, naming it
    and its range; a float TIFF within [0, 1] is still processed."""
    import tifffile

    ct = np.linspace(-1000, 3000, 32 * 40, dtype=np.float32).reshape(32, 40)
    path = tmp_path / "in" / "ct.tif"
    path.parent.mkdir()
    tifffile.imwrite(path, ct)
    np.testing.assert_array_equal(load(path)[0], tifffile.imread(path))
    with Image.open(path) as im:
        np.testing.assert_array_equal(load(path)[0], np.asarray(im))
    r = run("blur", path, tmp_path / "o.png")
    assert r.returncode == 65 and r.stderr.splitlines() == [
        f"error: {path}: floating-point image with values -1000..3000, outside [0, 1]: its scale is unknown "
        "(the command reads floats as 0..1 and writes round(255 x)); convert it to 0..1 or to 8/16-bit integers first"]
    tifffile.imwrite(tmp_path / "in" / "unit.tif", (ct + 1000) / 4000)
    r = run("blur", tmp_path / "in", tmp_path / "out", "--log-format", "json")
    events = [json.loads(line) for line in r.stderr.splitlines()]
    assert r.returncode == 1 and events[-1]["written"] == 1
    assert [(f["path"], f["exit_code"]) for f in events[-1]["failures"]] == [(str(path), 65)]
    assert sorted(os.listdir(tmp_path / "out")) == ["unit.tif"]
