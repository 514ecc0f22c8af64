"""The command line as a user meets it: exit codes, one-line errors, untouched inputs."""

import hashlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

import imgproc
from imgproc.cli import cli as imgproc_cli


def run(*args):
    result = CliRunner().invoke(imgproc_cli, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def digest(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture
def noisy(tmp_path, samples):
    p = tmp_path / "in.jpg"
    shutil.copy(samples / "chelsea_noisy.jpg", p)
    return p


def test_denoise_writes_output_and_keeps_input(noisy, tmp_path, samples):
    before = digest(noisy)
    code, _, err = run("denoise", noisy, tmp_path / "out.png")
    assert code == 0, err
    assert digest(noisy) == before
    clean = imgproc.load_image(samples / "chelsea.jpg")
    out = imgproc.load_image(tmp_path / "out.png")
    assert imgproc.psnr(clean, out) > imgproc.psnr(clean, imgproc.load_image(noisy)) + 3


def test_blur_sharpen_and_run(noisy, tmp_path):
    assert run("blur", noisy, tmp_path / "b.png", "--sigma", "3")[0] == 0
    assert run("blur", noisy, tmp_path / "bb.png", "--kind", "box", "--size", "7")[0] == 0
    assert run("sharpen", noisy, tmp_path / "s.png")[0] == 0
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps([{"op": "gaussian_blur", "sigma": 1.0}, {"op": "edges"}]))
    assert run("run", spec, noisy, tmp_path / "r.png")[0] == 0
    assert imgproc.load_image(tmp_path / "r.png").shape == (300, 451, 3)


@pytest.fixture
def strip_rgba(tmp_path, samples):
    """The sample logo with an alpha opaque only in a strip at the left (and half at the
    top): any op that moves pixels moves it visibly."""
    image = imgproc.load_image(samples / "logo_rgba.png").copy()
    image[..., 3] = 0
    image[:, :60, 3] = 255
    image[:40, :, 3] = 128
    path = tmp_path / "strip.png"
    imgproc.save_image(path, image)
    return path, image


@pytest.mark.parametrize("stage, expect", [
    ({"op": "flip_left_right"}, lambda a: a[:, ::-1]),
    ({"op": "flip_up_down"}, lambda a: a[::-1]),
    ({"op": "rot90"}, lambda a: np.rot90(a)),
    ({"op": "rot90", "k": 3}, lambda a: np.rot90(a, 3)),
    ({"op": "crop", "top": 30, "left": 20, "size": [100, 150]}, lambda a: a[30:130, 20:170]),
])
def test_alpha_follows_flips_turns_and_crops_exactly(stage, expect, strip_rgba, tmp_path):
    """The alpha moves with the colour (it used to stay where it was: a flipped logo kept
    its left strip opaque), in single-file and folder runs."""
    path, image = strip_rgba
    code, _, err = run("run", json.dumps([stage]), path, tmp_path / "one.png")
    assert code == 0 and err == "", err
    np.testing.assert_array_equal(imgproc.load_image(tmp_path / "one.png"), expect(image))
    code, _, err = run("run", json.dumps([stage]), path, path, tmp_path / "out", "--overwrite")  # several IN
    assert code in (0, 1), err
    np.testing.assert_array_equal(imgproc.load_image(tmp_path / "out" / "strip.png"), expect(image))


def test_alpha_follows_resizes_and_rotations_nearest(strip_rgba, tmp_path, samples):
    """A resize or a rotation keeps the alpha (it was dropped, with a warning): resampled
    nearest-neighbour, as masks are (imgproc.Pipeline targets=), zero where the rotation
    brings in pixels from outside; the colour is what the same spec makes of an RGB image."""
    path, image = strip_rgba
    spec = [{"op": "resize", "size": [90, 130]}, {"op": "gaussian_blur", "sigma": 1.0}]
    code, _, err = run("run", json.dumps(spec), path, tmp_path / "r.png")
    assert code == 0 and err == "", err
    out = imgproc.load_image(tmp_path / "r.png")
    np.testing.assert_array_equal(out[..., 3], imgproc.resize(image[..., 3], size=(90, 130), method="nearest"))
    np.testing.assert_array_equal(out[..., :3], imgproc.Pipeline(spec)(image[..., :3]))
    spec = [{"op": "rotate", "angle": 30}]
    code, _, err = run("run", json.dumps(spec), path, tmp_path / "t.png")
    assert code == 0 and err == "", err
    out = imgproc.load_image(tmp_path / "t.png")
    _, moved = imgproc.Pipeline(spec)(image[..., :3], targets={"masks": image[..., 3]})
    np.testing.assert_array_equal(out[..., 3], moved["masks"])
    assert out[0, 0, 3] == 0 and out[100, 10, 3] == 255  # a corner from outside; inside the strip
    # the old drop case: the sample logo through a resize keeps its alpha, in a folder run too
    spec = json.dumps([{"op": "resize", "size": [40, 60]}])
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("logo_rgba.png", "chelsea.jpg"):
        shutil.copy(samples / name, folder / name)
    code, _, err = run("run", spec, folder, tmp_path / "out", "--log-format", "json")
    events = [json.loads(line) for line in err.splitlines()]
    assert code == 0 and [e["event"] for e in events] == ["summary"] and events[0]["written"] == 2
    assert imgproc.load_image(tmp_path / "out" / "logo_rgba.png").shape == (40, 60, 4)
    assert imgproc.load_image(tmp_path / "out" / "chelsea.jpg").shape == (40, 60, 3)


def test_alpha_follows_random_flips_and_turns(strip_rgba, tmp_path):
    """`imgproc run --seed` and `imgproc augment`: each output's alpha is the same flip or
    quarter turn of the input's alpha as its colour is of the input's colour."""
    path, image = strip_rgba
    spec = json.dumps([{"op": "random_flip_left_right"}, {"op": "random_rot90"}])
    code, _, err = run("augment", path, tmp_path / "aug", "--spec", spec, "--count", 8, "--seed", 3, "--no-sheet")
    assert code == 0, err
    outputs = [imgproc.load_image(tmp_path / "aug" / f"strip_{k:03d}.png") for k in range(8)]
    code, _, err = run("run", spec, path, tmp_path / "r.png", "--seed", 5)
    assert code == 0 and err == "", err
    outputs.append(imgproc.load_image(tmp_path / "r.png"))
    seen = set()
    for out in outputs:
        moves = [(f, k) for f in (False, True) for k in range(4)
                 if np.array_equal(np.rot90(image[:, ::-1, :3] if f else image[..., :3], k), out[..., :3])]
        assert len(moves) == 1, moves
        f, k = moves[0]
        np.testing.assert_array_equal(out[..., 3], np.rot90(image[:, ::-1, 3] if f else image[..., 3], k))
        seen.add(moves[0])
    assert len(seen) > 2  # the draws did move it


def test_alpha_follows_a_random_augment_and_is_dropped_only_by_ops_that_cannot_move_it(strip_rgba, tmp_path):
    path, image = strip_rgba
    spec = [{"op": "random_rotate", "max_degrees": 30}, {"op": "random_resized_crop", "size": [120, 120]},
            {"op": "random_brightness"}]
    code, _, err = run("augment", path, tmp_path / "aug", "--spec", json.dumps(spec), "--count", 3, "--seed", 0,
                       "--no-sheet")
    assert code == 0 and "warning" not in err, err
    import jax
    masks = np.repeat(image[None, ..., 3], 3, 0)
    colour, moved = imgproc.Pipeline(spec)(np.repeat(image[None, ..., :3], 3, 0), key=jax.random.key(0),
                                           indices=np.arange(3), targets={"masks": masks})
    for k in range(3):
        out = imgproc.load_image(tmp_path / "aug" / f"strip_{k:03d}.png")
        np.testing.assert_array_equal(out[..., :3], np.asarray(colour[k]))
        np.testing.assert_array_equal(out[..., 3], np.asarray(moved["masks"][k]))
    # rand_augment does not say how it moves pixels: no alpha rather than a misplaced one
    message = f"warning: {path}: alpha channel dropped (op 'rand_augment' cannot move it with the image)"
    code, _, err = run("run", '[{"op": "rand_augment"}]', path, tmp_path / "ra.png", "--seed", 0)
    assert code == 0 and err.splitlines() == [message], err
    assert imgproc.load_image(tmp_path / "ra.png").shape == (200, 200, 3)
    code, _, err = run("augment", path, tmp_path / "aug2", "--spec", '[{"op": "rand_augment"}]', "--count", 1,
                       "--no-sheet")
    assert code == 0 and message in err, err
    assert imgproc.load_image(tmp_path / "aug2" / "strip_000.png").shape == (200, 200, 3)


def test_alpha_kept_by_filters_and_scaled_with_a_float_result(strip_rgba, tmp_path):
    """Filters leave the alpha as it is; a spec ending in to_float writes the alpha scaled
    as the colour is (it was refused: the alpha's 255 read as a float out of [0, 1])."""
    path, image = strip_rgba
    assert run("run", json.dumps([{"op": "gaussian_blur", "sigma": 1.0}]), path, tmp_path / "inline.png")[0] == 0
    kept = imgproc.load_image(tmp_path / "inline.png")
    np.testing.assert_array_equal(kept[..., 3], image[..., 3])
    code, _, err = run("run", '[{"op": "to_float"}]', path, tmp_path / "f.png")
    assert code == 0 and err == "", err
    np.testing.assert_array_equal(imgproc.load_image(tmp_path / "f.png"), image)


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["denoise", "{missing}", "{out}"], 66, "error: {missing}: no such file"),
        (["denoise", "{garbage}", "{out}"], 65,
         "error: {garbage}: not a recognised image format; allowed: JPEG, PNG, WEBP, TIFF, BMP, GIF\n"),
        (["denoise", "{tga}", "{out}"], 65,
         "error: {tga}: not a recognised image format; allowed: JPEG, PNG, WEBP, TIFF, BMP, GIF\n"),
        (["denoise", "{noisy}", "{noisy}"], 73, "is the input file itself"),
        (["denoise", "{noisy}", "{existing}"], 73, "exists; pass --overwrite"),
        (["denoise", "{noisy}", "{tmp}/o.xyz"], 73, "unknown output extension '.xyz'"),
        (["denoise", "{noisy}", "{tmp}/nofolder/o.png"], 73, "does not exist"),
        (["denoise", "{noisy}", "{out}", "--method", "median", "--size", "4"], 2, "size must be an odd integer"),
        # an option the method does not use is refused, naming the methods it applies to
        (["denoise", "{noisy}", "{out}", "--method", "nl-means", "--sigma", "3", "--size", "9", "--no-sharpen"], 2,
         "error: --method nl-means does not use these options: --sigma applies to --method chapter only; "
         "--size applies to --method chapter or median; --no-sharpen applies to --method chapter only\n"),
        (["denoise", "{noisy}", "{out}", "--method", "tv", "--mode", "reflect"], 2,
         "error: --method tv does not use this option: --mode applies to --method chapter, median, bilateral or "
         "nl-means\n"),
        (["denoise", "{noisy}", "{out}", "--method", "tv", "--noise-sigma", "5"], 2,
         "--noise-sigma applies to --method auto, nl-means, bm3d or bilateral"),
        (["denoise", "{noisy}", "{out}", "--method", "median", "--noise-sigma", "5"], 2,
         "error: --method median does not use this option: --noise-sigma applies to"),
        (["denoise", "{noisy}", "{out}", "--sharpen"], 2,
         "error: --method auto (the default) does not use this option: --sharpen applies to --method chapter only"),
        (["denoise", "{noisy}", "{out}", "--mode", "symmetric"], 2, "'symmetric' is not one of"),
        (["denoise", "{noisy}", "{out}", "--noise-sigma", "nan"], 2, "'--noise-sigma': nan is not a finite number >= 0"),
        (["denoise", "{noisy}", "{out}", "--method", "chapter", "--sigma", "inf"], 2, "'--sigma': inf is not a finite number"),
        (["blur", "{noisy}", "{out}", "--sigma", "-inf"], 2, "'--sigma': -inf is not in the range x>=0"),
        (["run", "{badspec}", "{noisy}", "{out}"], 2, "unknown op 'blurr'"),
        (["run", "{tmp}/nospec.json", "{noisy}", "{out}"], 66, "no such file (SPEC is a JSON file, or the JSON list"),
        (["run", '[{{"op": "blurr"}}]', "{noisy}", "{out}"], 2, "error: the spec: unknown op 'blurr'"),
        (["run", '[{{"op": "random_rotate"}}]', "{noisy}", "{out}"], 2, "error: the spec: has random ops; pass --seed"),
        (["run", '[{{"op": ', "{noisy}", "{out}"], 2, "error: the spec: not valid JSON"),
        (["run", '{{"op": "erosion", "size": 5}}', "{noisy}", "{out}"], 2,
         'got one stage: write it as [{{"op": "erosion", "size": 5}}]'),
        (["run", '{{"op": ', "{noisy}", "{out}"], 2, "error: the spec: not valid JSON"),
        # a derivative's result is in the image's units, and floats are written as [0, 1]
        (["run", '[{{"op": "sobel", "axis": 1}}]', "{noisy}", "{out}"], 2,
         'error: {noisy}: the result holds '),
        # an image the spec cannot take: the file named, with its own size (not the batch's shape)
        (["run", '[{{"op": "adjust_hue", "delta": 0.1}}]', "{grey}", "{out}"], 2,
         "error: {grey}: cannot process (adjust_hue needs an RGB image (3 channels); got a 333x411 grey image)\n"),
    ],
)
def test_errors_are_one_line_with_exit_code(args, code, message, noisy, tmp_path):
    garbage = tmp_path / "garbage.jpg"
    garbage.write_bytes(b"hello")
    tga = tmp_path / "image.tga"  # a format without a signature to name it by
    Image.fromarray(np.zeros((4, 5, 3), np.uint8)).save(tga)
    grey = tmp_path / "grey.png"
    Image.fromarray(np.zeros((411, 333), np.uint8)).save(grey)
    existing = tmp_path / "existing.png"
    existing.write_bytes(b"keep me")
    badspec = tmp_path / "bad.json"
    badspec.write_text('[{"op": "blurr"}]')
    names = dict(missing=tmp_path / "missing.jpg", garbage=garbage, tga=tga, grey=grey, noisy=noisy, existing=existing,
                 out=tmp_path / "out.png", tmp=tmp_path, badspec=badspec)
    before = {p: digest(p) for p in (noisy, garbage, existing, tga, grey)}
    files_before = set(os.listdir(tmp_path))
    got_code, _, err = run(*[a.format(**names) for a in args])
    assert got_code == code, err
    assert message.format(**names) in err
    assert "Traceback" not in err
    if code != 2:
        assert len(err.strip().splitlines()) == 1 and err.startswith("error: ")
    assert {p: digest(p) for p in before} == before
    assert set(os.listdir(tmp_path)) == files_before  # nothing new, no temporary files


def test_denoise_takes_the_options_its_method_uses(tmp_path):
    """Each option of denoise is accepted with every method that uses it (the refusals
    above are for the others), and defaults never count as given."""
    src = tmp_path / "small.png"
    imgproc.save_image(src, np.random.default_rng(0).integers(0, 256, (24, 32, 3)).astype(np.uint8))
    cases = [("chapter", "--sigma", "1.5", "--size", "3", "--no-sharpen", "--mode", "wrap"),
             ("median", "--size", "5", "--mode", "nearest"), ("nl-means", "--noise-sigma", "10", "--mode", "mirror"),
             ("bilateral", "--noise-sigma", "10", "--mode", "wrap"), ("auto", "--noise-sigma", "10"), ("tv",)]
    for i, (method, *options) in enumerate(cases):
        code, _, err = run("denoise", src, tmp_path / f"{i}.png", "--method", method, *options)
        assert code == 0 and err == "", (method, err)


def test_an_image_the_spec_cannot_take_is_named_with_its_own_shape(tmp_path):
    """In a folder run each refused image gets its size and channels (the alpha set aside),
    never the batch's internal shape (1, H, W, C) and layout."""
    src = tmp_path / "in"
    src.mkdir()
    Image.fromarray(np.zeros((411, 333), np.uint8)).save(src / "grey.png")
    Image.fromarray(np.zeros((20, 30, 2), np.uint8), "LA").save(src / "la.png")
    Image.fromarray(np.zeros((20, 30, 3), np.uint8)).save(src / "rgb.png")
    code, _, err = run("run", '[{"op": "adjust_hue", "delta": 0.1}]', src, tmp_path / "out", "-q")
    assert code == 1, err
    hue = "cannot process (adjust_hue needs an RGB image (3 channels); got"
    assert f"error: {src / 'grey.png'}: {hue} a 333x411 grey image)" in err.splitlines()
    assert (f"error: {src / 'la.png'}: {hue} a 30x20 grey + alpha image (its alpha is set aside: the ops see "
            "1 channel))") in err.splitlines()
    assert "NHWC" not in err and (tmp_path / "out" / "rgb.png").is_file()


@pytest.mark.parametrize("spec", [
    [{"op": "gaussian_gradient_magnitude", "sigma": 1.0}],  # 0..45 on the photo: a Sobel's recipe gave grey
    [{"op": "sobel", "axis": 0}],
    [{"op": "to_float"}, {"op": "laplace"}],  # after to_float, normalize divides by 1, not 255
])
def test_a_float_result_out_of_range_gets_a_normalize_that_fits_it(spec, samples, tmp_path):
    """The refusal of a derivative's result suggests the normalize stage that maps this
    file's values onto [0, 1], whatever the op; the spec ending with it writes the file,
    using the range (not a grey band of it)."""
    code, _, err = run("run", json.dumps(spec), samples / "chelsea.jpg", tmp_path / "o.png")
    assert code == 2 and err.startswith(f"error: {samples / 'chelsea.jpg'}: the result holds "), err
    stage = json.loads(err.split("such as ", 1)[1].split("}, which", 1)[0] + "}")
    assert stage["op"] == "normalize"
    code, _, err = run("run", json.dumps(spec + [stage]), samples / "chelsea.jpg", tmp_path / "o.png")
    assert code == 0 and err == "", err
    out = imgproc.load_image(tmp_path / "o.png")
    assert out.max() - out.min() > 200


def test_overwrite_replaces(noisy, tmp_path):
    out = tmp_path / "o.png"
    out.write_bytes(b"old")
    assert run("denoise", noisy, out, "--overwrite")[0] == 0
    assert imgproc.load_image(out).shape == (300, 451, 3)


def test_help_documents_exit_codes_and_info_runs():
    code, out, _ = run("--help")
    assert code == 0 and "65" in out and "73" in out and "130" in out
    code, out, _ = run("info")
    assert code == 0 and "backend cpu" in out and "jax " in out


@pytest.mark.parametrize("command, own", [("denoise", "--method"), ("blur", "--kind"), ("sharpen", "--center"), ("run", "--seed")])
def test_help_lists_own_options_before_shared(command, own):
    code, out, _ = run(command, "--help")
    assert code == 0
    assert out.index(own) < out.index("--overwrite") < out.index("--batch-size")
    if command == "denoise":
        assert out.index("--noise-sigma") < out.index("--overwrite")


def test_docs_command_prints_the_installed_docs():
    code, out, _ = run("docs", "cli")
    assert code == 0 and out.startswith("# The `imgproc` command line\n")
    code, out, _ = run("docs", "augment")
    assert code == 0 and out.startswith("# Training augmentation\n")
    code, out, _ = run("docs", "scale")
    assert code == 0 and out.startswith("# Scaling out\n")
    assert run("docs")[1].startswith("# The `imgproc` command line")
    code, out, _ = run("--help")
    assert "imgproc docs cli" in out


def test_installed_console_script(noisy, tmp_path):
    exe = os.path.join(os.path.dirname(sys.executable), "imgproc")
    res = subprocess.run([exe, "denoise", str(noisy), str(tmp_path / "o.jpg")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    res = subprocess.run([exe, "denoise", str(tmp_path / "nope.jpg"), str(tmp_path / "o2.jpg")], capture_output=True, text=True)
    assert res.returncode == 66 and res.stderr.strip() == f"error: {tmp_path / 'nope.jpg'}: no such file"


def test_a_reader_that_closes_the_pipe_stops_the_command_quietly():
    """`imgproc ops | head -1` was an internal error (BrokenPipeError, exit 70)."""
    exe = os.path.join(os.path.dirname(sys.executable), "imgproc")
    proc = subprocess.Popen([exe, "ops"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader goes away before the command (still starting) writes
    err = proc.stderr.read().decode()
    assert proc.wait() == 141 and err == ""
