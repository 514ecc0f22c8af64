import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import imgproc
from imgproc.errors import InputError, InvalidImageError, OutputError
from subprocesses import python_env


def test_sample_shapes_and_dtypes(samples):
    assert imgproc.load_image(samples / "chelsea.jpg").shape == (300, 451, 3)
    gray = imgproc.load_image(samples / "camera_gray.png")
    assert gray.ndim == 2 and gray.dtype == np.uint8
    rgba = imgproc.load_image(samples / "logo_rgba.png")
    assert rgba.shape[2] == 4 and rgba[..., 3].min() == 0
    deep = imgproc.load_image(samples / "gradient_16bit.png")
    assert deep.dtype == np.uint16 and deep.ndim == 2 and deep.max() > 255


def test_exif_orientation_applied(samples):
    upright = imgproc.load_image(samples / "chelsea.jpg").astype(float)
    rotated = imgproc.load_image(samples / "chelsea_exif_rot90.jpg").astype(float)
    assert rotated.shape == upright.shape
    assert np.abs(rotated - upright).mean() < 5


@pytest.mark.parametrize("name", ["a.png", "a.jpg", "a.tif", "a.webp", "a.bmp"])
def test_round_trip(tmp_path, name):
    x = np.random.default_rng(0).integers(0, 256, (12, 10, 3)).astype(np.uint8)
    imgproc.save_image(tmp_path / name, x)
    y = imgproc.load_image(tmp_path / name)
    assert y.shape == x.shape
    if name.endswith((".png", ".tif", ".bmp")):
        np.testing.assert_array_equal(y, x)


def test_sixteen_bit_png_kept(tmp_path, samples):
    deep = imgproc.load_image(samples / "gradient_16bit.png")
    imgproc.save_image(tmp_path / "d.png", deep)
    np.testing.assert_array_equal(imgproc.load_image(tmp_path / "d.png"), deep)


def _deep_colour(channels):
    """uint16 (H, W, channels): every channel different (so a swapped R/B shows), the
    whole 16-bit range, low bytes not all zero, one pure-red pixel."""
    rng = np.random.default_rng(channels)
    x = rng.integers(0, 65536, (9, 13, channels), dtype=np.uint16)
    x[0, 0] = [65535, 0, 0, 40000][:channels]
    return x


@pytest.mark.parametrize("channels", [3, 4])
def test_sixteen_bit_colour_png_round_trips_exactly(tmp_path, channels):
    """Issue 41 item 6: 16-bit RGB(A) PNG is written by imagecodecs (libpng), not OpenCV;
    a 16-bit PNG of colour type RGB / RGBA in RGB order, the same pixels through our
    loader, imagecodecs' decoder and Pillow (which reads 16-bit colour as the high bytes)."""
    import imagecodecs

    x = _deep_colour(channels)
    path = imgproc.save_image(tmp_path / "deep.png", x)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    assert data[24] == 16 and data[25] == {3: 2, 4: 6}[channels]  # bit depth 16; colour type RGB / RGBA
    np.testing.assert_array_equal(imgproc.load_image(path), x)
    back = imagecodecs.png_decode(data)
    assert back.dtype == np.uint16
    np.testing.assert_array_equal(back, x)
    assert list(back[0, 0, :3]) == [65535, 0, 0]  # red stays red (OpenCV wanted BGR)
    with Image.open(path) as im:
        assert im.mode == {3: "RGB", 4: "RGBA"}[channels]
        np.testing.assert_array_equal(np.asarray(im), (x >> 8).astype(np.uint8))
    assert data == imgproc.encode_image(x, "png")


@pytest.mark.parametrize("channels", [3, 4])
def test_sixteen_bit_colour_png_is_what_opencv_wrote(channels):
    """The PNG settings are OpenCV's imencode defaults (zlib level 1, RLE, Sub filter):
    the files are byte for byte what the OpenCV path wrote."""
    cv2 = pytest.importorskip("cv2")
    x = _deep_colour(channels)
    bgr = np.ascontiguousarray(x[..., [2, 1, 0, 3][:channels]])
    ok, buf = cv2.imencode(".png", bgr)
    assert ok and imgproc.encode_image(x, "png") == buf.tobytes()


def test_sixteen_bit_png_saving_needs_no_opencv(tmp_path):
    """OpenCV is no dependency: with ``import cv2`` failing, 16-bit colour PNG (RGB and
    RGBA) and grey PNG are still written at full depth (the old code fell back to 8 bits)."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import sys
        sys.modules["cv2"] = None  # any `import cv2` now raises ImportError
        import numpy as np, imgproc
        rng = np.random.default_rng(0)
        for shape in [(9, 13, 3), (9, 13, 4), (9, 13)]:
            x = rng.integers(0, 65536, shape, dtype=np.uint16)
            p = imgproc.save_image({str(tmp_path)!r} + f"/d{{len(shape)}}{{shape[-1]}}.png", x)
            y = imgproc.load_image(p)
            assert y.dtype == np.uint16 and (y == x).all(), shape
        assert sys.modules["cv2"] is None
        print("ok")
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip() == "ok"


def test_rgba_flattened_on_white_for_jpeg(tmp_path):
    x = np.zeros((8, 8, 4), np.uint8)  # fully transparent black
    imgproc.save_image(tmp_path / "f.jpg", x)
    assert imgproc.load_image(tmp_path / "f.jpg").min() > 250


def test_refuses_to_overwrite_then_replaces_atomically(tmp_path):
    p = tmp_path / "o.png"
    imgproc.save_image(p, np.zeros((4, 4), np.uint8))
    with pytest.raises(OutputError, match="exists; pass overwrite=True"):
        imgproc.save_image(p, np.ones((4, 4), np.uint8))
    assert imgproc.load_image(p).max() == 0
    imgproc.save_image(p, np.full((4, 4), 7, np.uint8), overwrite=True)
    assert imgproc.load_image(p).max() == 7
    assert sorted(os.listdir(tmp_path)) == ["o.png"]


def test_refuses_own_input_even_with_overwrite(tmp_path, samples):
    src = tmp_path / "in.png"
    Image.fromarray(np.zeros((4, 4), np.uint8)).save(src)
    link = tmp_path / "link.png"
    link.symlink_to(src)
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    for dst in (src, link):
        with pytest.raises(OutputError, match="is the input file itself"):
            imgproc.save_image(dst, np.ones((4, 4), np.uint8), overwrite=True, source=src)
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before


def test_failed_write_leaves_nothing(tmp_path):
    with pytest.raises(ValueError):
        imgproc.save_image(tmp_path / "bad.png", np.zeros((4, 4, 7), np.uint8))
    assert os.listdir(tmp_path) == []


def test_a_write_in_flight_is_known_until_it_ends(tmp_path, monkeypatch):
    """write_atomically marks its temporary file as in flight while it writes (the command's
    hard exit removes such files), and no longer once the file is published."""
    from imgproc.io import codec, interrupts

    seen = []

    def fsync(fd):
        seen.extend(w.path for w in interrupts._AT_LEAVE if isinstance(w, interrupts.writing))

    monkeypatch.setattr(codec.os, "fsync", fsync)
    codec.write_atomically(tmp_path / "a.bin", b"data")
    assert len(seen) == 1 and os.path.dirname(seen[0]) == str(tmp_path)
    assert not interrupts._AT_LEAVE and os.listdir(tmp_path) == ["a.bin"]


def test_a_command_that_leaves_mid_write_removes_its_temporary_file(tmp_path):
    """Interrupts._leave (the command leaving with 130 when no safe point came in time)
    removes the temporary files of writes in flight: a run interrupted while XLA compiled
    left one (tests/cli/test_folder_runs.py, interrupts while compiling)."""
    tmp = tmp_path / ".out.png.1.x.imgproc-tmp"
    tmp.write_bytes(b"half")
    code = ("import sys; from imgproc.io.interrupts import INTERRUPTS, writing\n"
            f"with writing({str(tmp)!r}):\n"
            "    INTERRUPTS._leave()\n")
    run = subprocess.run([sys.executable, "-c", code], env=python_env(), capture_output=True, text=True, timeout=60)
    assert run.returncode == 130 and "interrupted" in run.stderr
    assert not tmp.exists()


def test_a_command_that_leaves_removes_the_output_folder_it_created_and_left_empty(tmp_path):
    """The hard exit (Interrupts._leave, Ctrl-C with no safe point in time) runs the
    cleanups of removed_if_left_empty: the folders a run created and wrote nothing into
    go, a folder holding a file stays."""
    empty, kept = tmp_path / "new" / "out", tmp_path / "kept"
    code = ("import os; from imgproc.io.folder_plan import removed_if_left_empty\n"
            "from imgproc.io.interrupts import INTERRUPTS\n"
            f"with removed_if_left_empty({str(empty)!r}), removed_if_left_empty({str(kept)!r}):\n"
            f"    os.makedirs({str(empty)!r}); os.makedirs({str(kept)!r})\n"
            f"    open(os.path.join({str(kept)!r}, 'a.png'), 'wb').close()\n"
            "    INTERRUPTS._leave()\n")
    run = subprocess.run([sys.executable, "-c", code], env=python_env(), capture_output=True, text=True, timeout=60)
    assert run.returncode == 130 and "interrupted" in run.stderr
    assert os.listdir(tmp_path) == ["kept"] and os.listdir(kept) == ["a.png"]


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda p: None, InputError, "no such file"),
        (lambda p: p.write_bytes(b"not an image at all"), InvalidImageError, "not a recognised image format"),
        (lambda p: p.write_bytes(open(os.path.join("sample_images", "chelsea.jpg"), "rb").read()[:2000]), InvalidImageError, "truncated JPEG file"),
    ],
)
def test_bad_inputs(tmp_path, make, error, match):
    p = tmp_path / "x.jpg"
    make(p)
    with pytest.raises(error, match=match):
        imgproc.load_image(p)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this OS")
def test_a_named_pipe_nobody_writes_to_is_refused_not_waited_for(tmp_path):
    """open() of a FIFO waits for a writer, in a decode thread that Ctrl-C cannot reach
    (a new user's `mkfifo x.jpg; imgproc blur x.jpg out.png` hung through SIGINT and
    SIGTERM); it reads as an empty file instead. A folder is still a folder."""
    import threading

    fifo = tmp_path / "pipe.jpg"
    os.mkfifo(fifo)
    raised = []

    def read():
        try:
            imgproc.load_image(fifo)
        except Exception as e:  # noqa: BLE001 - checked below
            raised.append(e)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=30)
    assert not reader.is_alive(), "load_image waited for a writer"
    assert isinstance(raised[0], InvalidImageError) and "empty file" in str(raised[0])
    with pytest.raises(InputError, match="is a folder"):
        imgproc.load_image(tmp_path)


def test_nan_is_refused_on_save_not_written_black(tmp_path):
    x = np.full((8, 8, 3), 0.5, np.float32)
    x[2, 3] = np.nan
    for save in (lambda: imgproc.encode_image(x, "png"), lambda: imgproc.save_image(tmp_path / "x.png", x)):
        with pytest.raises(ValueError, match="must hold finite values; this one holds NaN or infinity"):
            save()
    assert os.listdir(tmp_path) == []


def test_unknown_extension_and_bad_quality(tmp_path):
    with pytest.raises(OutputError, match="unknown output extension '.xyz'"):
        imgproc.save_image(tmp_path / "a.xyz", np.zeros((2, 2), np.uint8))
    with pytest.raises(ValueError, match="quality must be an integer from 1 to 100"):
        imgproc.save_image(tmp_path / "a.jpg", np.zeros((2, 2), np.uint8), quality=0)


@pytest.mark.parametrize("dtype, channels", [(np.uint8, 3), (np.uint8, 4), (np.uint8, 0), (np.uint16, 0), (np.uint16, 3)])
def test_tiff_output_is_compressed_losslessly(tmp_path, dtype, channels):
    yy, xx = np.mgrid[0:64, 0:64]
    scale = 1000 if dtype == np.uint16 else 3
    planes = [xx * scale, yy * scale, (xx + yy) * (scale // 2), np.full((64, 64), 200)]
    image = (np.stack(planes[:channels], -1) if channels else xx * scale).astype(dtype)
    out = tmp_path / "smooth.tif"
    imgproc.save_image(out, image)
    back = imgproc.load_image(out)
    assert back.dtype == image.dtype and np.array_equal(back, image)
    assert out.stat().st_size < image.nbytes
    with Image.open(out) as im:
        assert im.info.get("compression") == "tiff_adobe_deflate"


def test_a_file_that_appears_while_writing_is_never_replaced(tmp_path, monkeypatch):
    """Issue 46 item 4: the name is published in one step (a hard link that fails when the
    name exists), so a file another process wrote while this one was writing stays, and
    the refusal says so; no temporary file is left."""
    import imgproc.io.codec as codec
    from imgproc.errors import OutputExistsError

    p = tmp_path / "o.png"
    real_fsync = os.fsync

    def other_writer(fd):  # another process finishes the same output meanwhile
        real_fsync(fd)
        p.write_bytes(b"theirs")

    monkeypatch.setattr(codec.os, "fsync", other_writer)
    with pytest.raises(OutputExistsError, match=r"appeared while this was written\); pass overwrite=True"):
        imgproc.save_image(p, np.zeros((4, 4), np.uint8))
    assert p.read_bytes() == b"theirs" and os.listdir(tmp_path) == ["o.png"]
    imgproc.save_image(p, np.zeros((4, 4), np.uint8), overwrite=True)  # overwrite replaces it
    assert imgproc.load_image(p).shape == (4, 4) and os.listdir(tmp_path) == ["o.png"]


@pytest.mark.parametrize("change", ["append", "same_size"])
def test_an_input_that_changes_while_it_is_read_is_refused(tmp_path, monkeypatch, change):
    """Issue 46 item 5: a file rewritten while it was read decoded as a silent mix of two
    images. Its size or modification time differing before and after the read refuses it
    (65), in the API and in a folder run, where the other files go on."""
    import imgproc.io.loader as loader
    from imgproc.errors import InvalidImageError

    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("a.png", "b.png"):
        imgproc.save_image(folder / name, np.full((16, 16, 3), 9, np.uint8))
    victim = folder / "b.png"
    original = loader._open_for_reading

    class Rewritten:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.f.__exit__(*exc)

        def fileno(self):
            return self.f.fileno()

        def read(self):
            data = self.f.read()
            if change == "append":  # the writer got further meanwhile
                with open(victim, "ab") as w:
                    w.write(b"\0" * 10)
            else:  # rewritten with as many bytes: only the time says so
                st = os.stat(victim)
                os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
            return data

    def opening(path):
        f = original(path)
        return Rewritten(f) if Path(path).name == "b.png" else f

    monkeypatch.setattr(loader, "_open_for_reading", opening)
    reason = "size [0-9]+ -> [0-9]+ bytes" if change == "append" else "modification time changed"
    with pytest.raises(InvalidImageError, match=f"changed while it was read \\({reason}") as e:
        imgproc.load_image(victim)
    assert e.value.exit_code == 65 and e.value.path == str(victim)
    from click.testing import CliRunner

    from imgproc.cli import cli

    r = CliRunner().invoke(cli, ["blur", str(folder), str(tmp_path / "out")])
    assert r.exit_code == 1 and f"error: {victim}: changed while it was read" in r.stderr
    assert os.listdir(tmp_path / "out") == ["a.png"]
    r = CliRunner().invoke(cli, ["blur", str(victim), str(tmp_path / "one.png")])
    assert r.exit_code == 65 and not (tmp_path / "one.png").exists()
