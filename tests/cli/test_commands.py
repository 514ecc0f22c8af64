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


def test_a_spec_that_changes_the_size_drops_alpha_with_a_warning(tmp_path, samples):
    """A resize or crop leaves the input's alpha the wrong size: the output has none and
    a warning says so, in single-file and folder runs (it was a NumPy concatenate error
    that ended a folder run with nothing written), as `imgproc augment` does."""
    spec = tmp_path / "resize.json"
    spec.write_text(json.dumps([{"op": "resize", "size": [40, 60]}]))
    code, _, err = run("run", spec, samples / "logo_rgba.png", tmp_path / "one.png")
    assert code == 0 and err == f"warning: {samples / 'logo_rgba.png'}: alpha channel dropped (the spec changes the image size)\n"
    assert imgproc.load_image(tmp_path / "one.png").shape == (40, 60, 3)
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("logo_rgba.png", "chelsea.jpg"):
        shutil.copy(samples / name, folder / name)
    code, _, err = run("run", spec, folder, tmp_path / "out", "--log-format", "json")
    events = [json.loads(line) for line in err.splitlines()]
    assert code == 0 and [e["event"] for e in events] == ["warning", "summary"] and events[1]["written"] == 2
    assert imgproc.load_image(tmp_path / "out" / "logo_rgba.png").shape == (40, 60, 3)
    assert imgproc.load_image(tmp_path / "out" / "chelsea.jpg").shape == (40, 60, 3)
    # the spec written out on the command line instead of in a file
    assert run("run", json.dumps([{"op": "gaussian_blur", "sigma": 1.0}]), samples / "logo_rgba.png",
               tmp_path / "inline.png")[0] == 0
    # a spec that keeps the size keeps the alpha
    spec.write_text(json.dumps([{"op": "gaussian_blur", "sigma": 1.0}]))
    assert run("run", spec, samples / "logo_rgba.png", tmp_path / "kept.png")[0] == 0
    assert imgproc.load_image(tmp_path / "kept.png").shape[2] == 4
    np.testing.assert_array_equal(imgproc.load_image(tmp_path / "inline.png"), imgproc.load_image(tmp_path / "kept.png"))


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["denoise", "{missing}", "{out}"], 66, "error: {missing}: no such file"),
        (["denoise", "{garbage}", "{out}"], 65, "error: {garbage}: not a recognised image format"),
        (["denoise", "{noisy}", "{noisy}"], 73, "is the input file itself"),
        (["denoise", "{noisy}", "{existing}"], 73, "exists; pass --overwrite"),
        (["denoise", "{noisy}", "{tmp}/o.xyz"], 73, "unknown output extension '.xyz'"),
        (["denoise", "{noisy}", "{tmp}/nofolder/o.png"], 73, "does not exist"),
        (["denoise", "{noisy}", "{out}", "--size", "4"], 2, "size must be an odd integer"),
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
         'as floats, and a float result is written as values in [0, 1]: end the spec with a stage'),
    ],
)
def test_errors_are_one_line_with_exit_code(args, code, message, noisy, tmp_path):
    garbage = tmp_path / "garbage.jpg"
    garbage.write_bytes(b"hello")
    existing = tmp_path / "existing.png"
    existing.write_bytes(b"keep me")
    badspec = tmp_path / "bad.json"
    badspec.write_text('[{"op": "blurr"}]')
    names = dict(missing=tmp_path / "missing.jpg", garbage=garbage, noisy=noisy, existing=existing,
                 out=tmp_path / "out.png", tmp=tmp_path, badspec=badspec)
    before = {p: digest(p) for p in (noisy, garbage, existing)}
    files_before = set(os.listdir(tmp_path))
    got_code, _, err = run(*[a.format(**names) for a in args])
    assert got_code == code, err
    assert message.format(**names) in err
    assert "Traceback" not in err
    if code != 2:
        assert len(err.strip().splitlines()) == 1 and err.startswith("error: ")
    assert {p: digest(p) for p in before} == before
    assert set(os.listdir(tmp_path)) == files_before  # nothing new, no temporary files


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
