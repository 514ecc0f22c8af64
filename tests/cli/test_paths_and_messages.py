"""The command line as a first-time user meets it (issue 17, items 8-14): paths that would
silently do something else, several inputs, seeds for random specs, messages that name
the real problem, augment on the sample images, output names, progress."""

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

import imgproc
from imgproc.cli import cli as imgproc_cli


def run(*args, **kwargs):
    r = CliRunner().invoke(imgproc_cli, [str(a) for a in args], **kwargs)
    return r.exit_code, r.stdout, r.stderr


def small(path, size=(16, 20), channels=3, seed=0):
    rng = np.random.default_rng(seed)
    shape = size if channels == 1 else (*size, channels)
    Image.fromarray(rng.integers(0, 256, shape).astype(np.uint8)).save(path)
    return path


@pytest.fixture
def folder(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    for i, name in enumerate(("a.png", "b.png", "c.png")):
        small(src / name, seed=i)
    return src


def listing(root: Path):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


# -- 8. an empty or file-like OUT never turns into a folder run ------------------------------

@pytest.mark.parametrize("args, message", [
    (["", "x.jpg"], "IN is an empty path"),
    (["{a}", ""], "OUT is an empty path"),
    (["{folder}", "out.jpg"], "looks like an image file"),
    (["{folder}/*.png", "out.png"], "looks like an image file"),
])
def test_empty_or_file_like_out_is_refused(args, message, folder, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = listing(tmp_path)
    code, _, err = run("blur", *[a.format(folder=folder, a=folder / "a.png") for a in args])
    assert code == 2, err
    assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1
    assert listing(tmp_path) == before  # no folder x.jpg/ or out.jpg/, nothing processed


# -- 9. several inputs (a shell-expanded glob) into a folder --------------------------------

def test_several_inputs_into_a_folder(folder, tmp_path):
    code, _, err = run("blur", folder / "a.png", folder / "b.png", tmp_path / "outdir", "--quiet")
    assert code == 0, err
    assert listing(tmp_path / "outdir") == ["a.png", "b.png"]
    # the single-IN forms still work
    assert run("blur", folder / "c.png", tmp_path / "one.png")[0] == 0
    assert run("blur", folder, tmp_path / "all", "-q")[0] == 0 and listing(tmp_path / "all") == ["a.png", "b.png", "c.png"]
    code, out, _ = run("blur", "--help")
    assert code == 0 and "IN... OUT" in out


def test_a_missing_input_among_several_fails_alone(folder, tmp_path):
    """Several IN is a folder run (docs/cli.md): a missing one is reported as failed and
    the others are done (it used to stop the run with 66 before a.png was processed)."""
    missing = tmp_path / "missing.jpg"
    code, _, err = run("blur", folder / "a.png", missing, folder / "b.png", tmp_path / "od1")
    assert code == 1, err
    assert listing(tmp_path / "od1") == ["a.png", "b.png"]
    assert f"error: {missing}: no such file" in err.splitlines()
    assert "summary: 2 written, 0 skipped (output exists), 1 failed, of 3" in err
    code, _, err = run("blur", folder / "a.png", missing, tmp_path / "od2", "--fail-fast", "-q")
    assert code == 66 and f"error: {missing}: no such file" in err, err


@pytest.mark.parametrize("options", [["--fail-fast"], []])
def test_a_run_that_writes_nothing_leaves_no_folder(options, folder, tmp_path):
    """The output folder (and folders above it) that a run created is removed when nothing
    was written in it; one that was there before stays."""
    text = tmp_path / "notimage.jpg"
    text.write_text("hello")
    code, _, err = run("blur", text, tmp_path / "missing.jpg", tmp_path / "new" / "deeper" / "od", *options)
    assert code == (65 if options else 1), err
    assert not (tmp_path / "new").exists()
    (tmp_path / "there").mkdir()
    assert run("blur", text, tmp_path / "missing.jpg", tmp_path / "there", *options)[0] == code
    assert (tmp_path / "there").is_dir() and listing(tmp_path / "there") == []
    # augment too: every input failed
    code, _, err = run("augment", text, tmp_path / "aug", "--spec", '[{"op": "random_flip_left_right"}]')
    assert code == 65 and not (tmp_path / "aug").exists(), err
    # a run that wrote something keeps its folder
    code, _, err = run("blur", text, folder / "a.png", tmp_path / "kept", *options)
    assert (tmp_path / "kept").is_dir() or options, err


# -- 10. --seed for random specs; imgproc ops --------------------------------------------------

def test_run_random_spec_with_seed_and_key_rule(folder, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps([{"op": "gaussian_noise", "sigma": 20.0}]))
    code, _, err = run("run", spec, folder / "a.png", tmp_path / "nokey.png")
    assert code == 2 and "--seed" in err and "key=" not in err
    assert run("run", spec, folder / "a.png", tmp_path / "s1.png", "--seed", 3)[0] == 0
    assert run("run", spec, folder / "a.png", tmp_path / "s2.png", "--seed", 3)[0] == 0
    one = imgproc.load_image(tmp_path / "s1.png")
    np.testing.assert_array_equal(one, imgproc.load_image(tmp_path / "s2.png"))
    # a folder's file i gets sample i of the key, whatever the batch or shard
    assert run("run", spec, folder, tmp_path / "f", "--seed", 3, "-q", "--batch-size", 2)[0] == 0
    assert run("run", spec, folder, tmp_path / "g", "--seed", 3, "-q", "--num-shards", 2, "--shard-index", 0)[0] == 0
    assert run("run", spec, folder, tmp_path / "g", "--seed", 3, "-q", "--num-shards", 2, "--shard-index", 1)[0] == 0
    pipe = imgproc.Pipeline.from_spec(spec.read_text())
    import jax

    for i, name in enumerate(("a.png", "b.png", "c.png")):
        x = imgproc.load_image(folder / name)
        want = np.asarray(pipe(x[None], key=jax.random.key(3), indices=np.asarray([i])))[0]
        got = imgproc.load_image(tmp_path / "f" / name)
        assert np.abs(got.astype(int) - np.clip(np.round(want), 0, 255).astype(int)).max() <= 1
        np.testing.assert_array_equal(got, imgproc.load_image(tmp_path / "g" / name))


def test_ops_lists_ops_and_options():
    code, out, _ = run("ops")
    assert code == 0
    lines = {line.split(":")[0]: line for line in out.splitlines()}
    assert set(imgproc.registered_ops()) <= {name.split(" ")[0] for name in lines}
    assert "sigma*" in lines["gaussian_blur"] and "(random)" in lines["gaussian_noise (random)"]


# -- 11. messages that name the real problem -------------------------------------------------

@pytest.mark.parametrize("args, code, message", [
    (["{a}", "{tmp}/missing/o"], 73, "folder {tmp}/missing does not exist"),
    (["{a}", "{tmp}/newdir/"], 73, "{tmp}/newdir/: folder does not exist"),
    (["http://example.com/x.jpg", "{tmp}/o.png"], 66, "URLs are not read"),
    (["https://example.com/x.jpg", "{tmp}/o.png"], 66, "URLs are not read"),
])
def test_messages_name_the_real_problem(args, code, message, folder, tmp_path):
    names = dict(a=folder / "a.png", tmp=tmp_path)
    got, _, err = run("blur", *[a.format(**names) for a in args])
    assert got == code, err
    assert message.format(**names) in err and "(none)" not in err and len(err.strip().splitlines()) == 1


def test_augment_says_urls_are_not_read(tmp_path):
    spec = tmp_path / "s.json"
    spec.write_text('[{"op": "random_flip_left_right"}]')
    code, _, err = run("augment", "https://example.com/x.jpg", tmp_path / "o", "--spec", spec)
    assert code == 66 and "URLs are not read" in err


def test_augment_names_the_stage_a_float_result_needs(folder, tmp_path):
    """A derivative's result is in the image's units; written as [0, 1] it is refused with
    the stage to end the spec with, which then works (as for imgproc run)."""
    spec = tmp_path / "s.json"
    spec.write_text('[{"op": "sobel", "axis": 0}, {"op": "random_flip_left_right"}]')
    code, _, err = run("augment", folder / "a.png", tmp_path / "o", "--spec", spec, "--count", 1, "--no-sheet")
    assert code == 2 and 'end the spec with a stage that maps it there' in err and "image / 255" not in err
    spec.write_text('[{"op": "sobel", "axis": 0}, {"op": "normalize", "mean": -4, "std": 8}, '
                    '{"op": "random_flip_left_right"}]')
    code, _, err = run("augment", folder / "a.png", tmp_path / "o", "--spec", spec, "--count", 1, "--no-sheet")
    assert code == 0, err
    assert (tmp_path / "o" / "a_000.png").is_file()


def test_tilde_is_expanded(folder, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    code, _, err = run("blur", "~/in/a.png", "~/o.png")
    assert code == 0, err
    assert (tmp_path / "o.png").is_file()
    spec = tmp_path / "s.json"
    spec.write_text('[{"op": "random_flip_left_right"}]')
    code, _, err = run("augment", "~/in/a.png", "~/aug", "--spec", "~/s.json", "--count", 1, "--no-sheet")
    assert code == 0, err
    assert (tmp_path / "aug" / "a_000.png").is_file()


# -- 12. imgproc augment on the sample images -------------------------------------------------

def _help_spec():
    _, out, _ = run("augment", "--help")
    text = out.split("Example spec (augment.json):", 1)[1].split("\n\n", 1)[0]
    return json.loads(" ".join(line.strip() for line in text.strip().splitlines()))


def test_augment_help_example_runs_on_the_samples_and_reruns(samples, tmp_path):
    spec = tmp_path / "augment.json"
    spec.write_text(json.dumps(_help_spec()))
    src = tmp_path / "samples"
    src.mkdir()
    for name in ("camera_gray.png", "logo_rgba.png", "chelsea.jpg"):
        shutil.copy(samples / name, src / name)
    code, out, err = run("augment", src, tmp_path / "out", "--spec", spec, "--count", 2, "--no-sheet")
    assert code == 0, err + out
    assert "grey" in err  # a colour op on a grey image: the image is converted, with a warning
    grey = imgproc.load_image(tmp_path / "out" / "camera_gray_000.png")
    assert grey.ndim == 3 and grey.shape[-1] == 3
    rgba = imgproc.load_image(tmp_path / "out" / "logo_rgba_000.png")
    source = imgproc.load_image(src / "logo_rgba.png")
    assert rgba.shape[-1] == 4  # alpha kept, not dropped
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out").iterdir()}
    code, out, err = run("augment", src, tmp_path / "out", "--spec", spec, "--count", 2, "--no-sheet")
    assert code == 0, err + out
    assert "skipped" in out + err
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out").iterdir()} == before
    assert source.shape[-1] == 4


# -- 13. output names keep the input's extension spelling -------------------------------------

def test_output_names_keep_the_extension_spelling(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    small(src / "photo.JPG")
    small(src / "x.jpe")
    code, _, err = run("blur", src, tmp_path / "out", "-q")
    assert code == 0, err
    assert listing(tmp_path / "out") == ["photo.JPG", "x.jpe"]
    with Image.open(tmp_path / "out" / "x.jpe") as im:
        assert im.format == "JPEG"


@pytest.mark.parametrize("names, options, hint, not_hint", [
    (["a.gif", "a.png"], [], "; rename one (a .gif input is written as .png)", "--format"),
    (["a.jpg", "a.png"], ["--format", "png"], "; rename one or drop --format (it gives both .png)", None),
    # dropping --format would not help: a GIF is written as PNG anyway (it was advised)
    (["a.gif", "a.png"], ["--format", "png"], "; rename one (without --format too: a .gif input is written as .png)",
     "drop --format"),
    (["a.jpg", "sub/a.jpg"], ["--format", "png"], "; rename one", "drop --format"),
])
def test_collision_message_fits_the_options(names, options, hint, not_hint, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    for name in names:
        (src / name).parent.mkdir(exist_ok=True)
        small(src / name)
    code, _, err = run("blur", *(src / name for name in names), tmp_path / "out", *options)
    assert code == 1
    line = next(line for line in err.splitlines() if "is also the output of" in line)
    assert hint in line and (not_hint is None or not_hint not in line)


# -- 14. progress: no early ETA, labelled columns --------------------------------------------

def test_progress_has_no_early_eta_and_labelled_columns(monkeypatch):
    from imgproc.cli import _report
    from imgproc.io.run_options import RunOptions

    clock = [100.0]
    monkeypatch.setattr(_report.time, "monotonic", lambda: clock[0])
    lines = []
    rep = _report.Reporter(10, RunOptions(log_interval=0))
    monkeypatch.setattr(rep, "_line", lines.append)
    clock[0] += 0.1
    rep.ok()  # 1 image in 0.1 s: no ETA yet
    assert rep.eta() is None and "ETA -" in lines[-1]
    assert lines[-1].startswith("progress: done 1/10, rate ") and "failed 0" in lines[-1]
    clock[0] += 3
    rep.ok()
    rep.ok()
    assert rep.eta() is not None and "ETA -" not in lines[-1] and "ETA " in lines[-1]


def test_the_rate_counts_written_images_only(monkeypatch):
    """A rerun that skipped 9 files and failed 2 in a blink wrote nothing: 0 images/s (it
    said 173), and the summary says so; the ETA still runs on every file done."""
    from imgproc.cli import _report
    from imgproc.io.run_options import RunOptions

    clock = [100.0]
    monkeypatch.setattr(_report.time, "monotonic", lambda: clock[0])
    lines = []
    rep = _report.Reporter(12, RunOptions(log_interval=1e9))
    monkeypatch.setattr(rep, "_line", lines.append)
    for _ in range(9):
        rep.ok(skipped=True)
    rep.error("a.jpg", "truncated", 65)
    rep.error("b.jpg", "truncated", 65)
    clock[0] += 0.01
    assert rep.rate() == 0.0
    rep.summary()
    assert "0 written, 9 skipped (output exists), 2 failed, 1 not done" in lines[-4] and "(0.0 images/s)" in lines[-4]
    clock[0] += 1.99
    rep.ok()
    assert rep.rate() == 0.5 and rep.eta() is not None


def test_progress_bar_columns_are_labelled(monkeypatch):
    from imgproc.cli import _report
    from imgproc.io.run_options import RunOptions

    monkeypatch.setattr(_report, "_stderr_is_tty", lambda: True)
    rep = _report.Reporter(10, RunOptions())
    try:
        rep.ok()
        texts = [getattr(c, "text_format", "") for c in rep.bar.columns]
        task = rep.bar.tasks[0]
        assert "done" in texts
        assert task.fields["rate"].startswith("rate ") and task.fields["eta"] == "ETA -"
        assert not any(type(c).__name__ == "TimeRemainingColumn" for c in rep.bar.columns)
    finally:
        rep.bar.stop()


def test_morphology_and_derivatives_run_from_the_command_line(folder, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps([{"op": "opening", "footprint": "disk", "size": 5},
                                {"op": "morphological_gradient", "size": 3}]))
    assert run("run", spec, folder / "a.png", tmp_path / "out.png")[0] == 0
    x = imgproc.load_image(folder / "a.png")
    want = imgproc.morphological_gradient(imgproc.opening(x, footprint="disk", size=5), size=3)
    np.testing.assert_array_equal(imgproc.load_image(tmp_path / "out.png"), want)
    code, out, _ = run("ops")
    assert code == 0
    for name in ("erosion", "dilation", "opening", "closing", "white_tophat", "black_tophat", "binary_erosion",
                 "sobel", "prewitt", "laplace", "gaussian_laplace", "gaussian_gradient_magnitude"):
        assert f"\n{name}: " in out
    assert "sobel: axis*, cval, method, mode" in out
