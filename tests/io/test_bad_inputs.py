"""Every bad and odd input (tests/bad_inputs.py) through the Python API, the CLI on one file,
and the CLI on a folder: exit code, one line, input bytes unchanged, no stray files."""

import hashlib
import io
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

import imgproc
from imgproc.cli import cli as imgproc_cli
from imgproc.errors import ImgprocWarning, InvalidImageError
from imgproc.io.loader import read_image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared case tables
from bad_inputs import CASES, cmyk_jpeg, generate, photo  # noqa: E402

BY_NAME = {c.name: c for c in CASES}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("cases"))


def digest(p):
    return hashlib.sha256(Path(p).read_bytes()).hexdigest()


def cli(*args):
    r = CliRunner().invoke(imgproc_cli, [str(a) for a in args])
    return r.exit_code, r.stderr


def _api_kwargs(case):
    kw = {}
    if "--max-pixels" in case.args:
        kw["max_pixels"] = int(case.args[case.args.index("--max-pixels") + 1])
    if "--allow-truncated" in case.args:
        kw["allow_truncated"] = True
    return kw


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_api(case, inputs, tmp_path):
    src = inputs[case.name]
    before = digest(src)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if case.code:
            with pytest.raises(InvalidImageError, match=case.message) as e:
                imgproc.load_image(src, **_api_kwargs(case))
            assert e.value.exit_code == case.code and "\n" not in str(e.value)
        else:
            img = imgproc.load_image(src, **_api_kwargs(case))
            out = imgproc.presets.denoise()(img)
            assert out.shape == img.shape and out.dtype == img.dtype
            imgproc.save_image(tmp_path / "o.png", out)
    ours = [str(w.message) for w in caught if issubclass(w.category, ImgprocWarning)]
    if case.code == 0 and case.message:
        assert any(case.message in m for m in ours), ours
    assert not [w for w in caught if not issubclass(w.category, (ImgprocWarning, DeprecationWarning))]
    assert digest(src) == before


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_cli_single_file(case, inputs, tmp_path):
    src = inputs[case.name]
    before, listing = digest(src), sorted(os.listdir(src.parent))
    out = tmp_path / "out.png"
    code, err = cli("denoise", src, out, *case.args)
    assert code == case.code, err
    lines = err.strip().splitlines()
    assert "Traceback" not in err
    if case.code:
        assert len(lines) == 1 and lines[0].startswith(f"error: {src}: ") and case.message in lines[0], err
        assert os.listdir(tmp_path) == []
    else:
        assert os.listdir(tmp_path) == ["out.png"]
        if case.message:
            assert lines == [f"warning: {src}: {m}" for m in [lines[0].split(": ", 2)[2]]] and case.message in err
        else:
            assert lines == [], err
    assert digest(src) == before and sorted(os.listdir(src.parent)) == listing


def test_cli_folder_of_every_case(inputs, tmp_path):
    folder = next(iter(inputs.values())).parent
    before = {p.name: digest(p) for p in folder.iterdir()}
    out = tmp_path / "out"
    # the option-dependent cases behave like plain files here (no per-file options)
    code, err = cli("denoise", folder, out, "--log-interval", "1000")
    assert code == 1 and "Traceback" not in err
    bad = {c.name for c in CASES if c.code and not c.args} | {"truncated_allowed.jpg"}
    for c in CASES:
        produced = (out / _out_name(c.name)).exists()
        assert produced == (c.name not in bad), c.name
        if c.name in bad:
            assert err.count(f"error: {folder / c.name}: ") == 1, c.name
    assert f"{len(bad)} failed" in err and "failed (" in err
    assert sorted(p.name for p in out.iterdir()) == sorted(_out_name(c.name) for c in CASES if c.name not in bad)
    assert {p.name: digest(p) for p in folder.iterdir()} == before


def _out_name(name):
    return name[:-4] + ".png" if name.endswith(".gif") else name


# --- content: what the odd inputs must give ----------------------------------------------


@pytest.mark.parametrize("k", range(2, 9))
def test_exif_orientation_upright_and_reset(k, inputs, tmp_path):
    img = imgproc.load_image(inputs[f"exif_orientation_{k}.jpg"])
    assert np.abs(img.astype(float) - photo()).mean() < 4
    assert cli("denoise", inputs[f"exif_orientation_{k}.jpg"], tmp_path / "o.jpg")[0] == 0
    with Image.open(tmp_path / "o.jpg") as o:
        assert o.size == (photo().shape[1], photo().shape[0])
        assert o.getexif().get(0x0112) == 1


@pytest.mark.parametrize("icc", [False, True])
def test_cmyk_gives_correct_rgb(icc, tmp_path):
    p = tmp_path / "c.jpg"
    p.write_bytes(cmyk_jpeg(icc))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ImgprocWarning)  # the profile must be usable
        img, info = read_image(p)
    left, right = img[:, :20].reshape(-1, 3).mean(0), img[:, -20:].reshape(-1, 3).mean(0)
    assert left[0] < 60 and left[1] > 190 and left[2] > 190  # cyan
    assert right[1] < 60 and right[0] > 190 and right[2] > 190  # magenta
    assert info.icc_profile is None  # converted to sRGB: the CMYK profile is not carried over


def test_alpha_kept_in_png_flattened_in_jpeg(inputs, tmp_path):
    for name, channels in [("rgba.png", 4), ("grey_alpha.png", 2), ("palette_transparent.png", 4), ("transparent.gif", 4)]:
        src = inputs[name]
        img = imgproc.load_image(src)
        assert img.shape[2] == channels
        assert cli("denoise", src, tmp_path / f"{name}.png")[0] == 0
        out = imgproc.load_image(tmp_path / f"{name}.png")
        assert out.shape == img.shape
        np.testing.assert_array_equal(out[..., -1], img[..., -1])  # alpha carried over unchanged
        assert cli("denoise", src, tmp_path / f"{name}.jpg")[0] == 0
        assert imgproc.load_image(tmp_path / f"{name}.jpg").ndim == (2 if channels == 2 else 3)


def test_grey_one_bit_and_sixteen_bit(inputs, tmp_path):
    for name in ("grey.jpg", "grey.png", "one_bit.png", "one_bit.bmp", "one_bit.tif"):
        assert cli("denoise", inputs[name], tmp_path / f"{name}.png")[0] == 0
        assert imgproc.load_image(tmp_path / f"{name}.png").ndim == 2
    assert set(np.unique(imgproc.load_image(inputs["one_bit.png"]))) <= {0, 255}
    for name, ndim in [("grey16.png", 2), ("rgb16.png", 3), ("rgb16.tif", 3)]:
        src = inputs[name]
        img = imgproc.load_image(src)
        assert img.dtype == np.uint16 and img.ndim == ndim and img.max() > 255
        ext = ".tif" if name.endswith(".tif") else ".png"
        assert cli("blur", src, tmp_path / f"{name}{ext}", "--sigma", "0")[0] == 0
        np.testing.assert_array_equal(imgproc.load_image(tmp_path / f"{name}{ext}"), img)  # full depth
        assert cli("blur", src, tmp_path / f"{name}.bmp", "--sigma", "0")[0] == 0  # BMP: 8 bits only
        eight = imgproc.load_image(tmp_path / f"{name}.bmp").astype(float)
        assert np.abs(eight - img / 257.0).max() <= 0.5 + 1e-9  # scaled, not clipped


def test_rgb16_pixels_exact(inputs):
    np.testing.assert_array_equal(imgproc.load_image(inputs["rgb16.png"]), photo().astype(np.uint16) * 257 + 3)


def test_icc_and_exif_kept_unless_strip(inputs, tmp_path):
    src = inputs["srgb_icc.jpg"]
    with Image.open(src) as i:
        icc = i.info["icc_profile"]
    for ext in (".jpg", ".png", ".webp", ".tif"):
        assert cli("denoise", src, tmp_path / f"keep{ext}")[0] == 0
        with Image.open(tmp_path / f"keep{ext}") as o:
            assert o.info.get("icc_profile") == icc, ext
    assert cli("denoise", src, tmp_path / "strip.jpg", "--strip")[0] == 0
    with Image.open(tmp_path / "strip.jpg") as o:
        assert "icc_profile" not in o.info
    exif_src = inputs["exif_orientation_6.jpg"]
    assert cli("denoise", exif_src, tmp_path / "e.jpg")[0] == 0
    assert cli("denoise", exif_src, tmp_path / "e_strip.jpg", "--strip")[0] == 0
    with Image.open(tmp_path / "e.jpg") as o, Image.open(tmp_path / "e_strip.jpg") as s:
        assert len(o.getexif()) > 0 and len(s.getexif()) == 0


def test_format_comes_from_bytes_and_allowlist():
    from imgproc.io.loader import decode_bytes

    png = io.BytesIO()
    Image.fromarray(photo()).save(png, "PNG")
    with pytest.raises(InvalidImageError, match="format PNG is not allowed here; allowed: JPEG"):
        decode_bytes(png.getvalue(), "x.png", formats=("JPEG",))


def test_bomb_refused_fast_and_small(inputs):
    import time
    import tracemalloc

    tracemalloc.start()
    t = time.perf_counter()
    with pytest.raises(InvalidImageError, match="too many pixels"):
        imgproc.load_image(inputs["bomb.png"])
    elapsed = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert elapsed < 0.5 and peak < 5_000_000


def test_fast_jpeg_paths_match_pillow(tmp_path):
    from imgproc.io.codec import _encode

    rng = np.random.default_rng(0)
    x = (photo(64, 80).astype(int) + rng.integers(-20, 20, (64, 80, 3))).clip(0, 255).astype(np.uint8)
    data = _encode(x, "JPEG", 90, None, None)
    (tmp_path / "a.jpg").write_bytes(data)
    ours = imgproc.load_image(tmp_path / "a.jpg")
    with Image.open(tmp_path / "a.jpg") as im:
        pil = np.asarray(im.convert("RGB"))
    assert np.abs(ours.astype(int) - pil).max() <= 1  # same libjpeg-turbo, maybe another IDCT
    buf = io.BytesIO()
    Image.fromarray(x).save(buf, "JPEG", quality=90)  # Pillow's encoder: the same 4:2:0 at q90
    with Image.open(buf) as im:
        pil_err = np.abs(np.asarray(im).astype(float) - x).mean()
    assert np.abs(ours.astype(float) - x).mean() < 1.1 * pil_err
