"""Folder and glob runs, and output safety: summary and exit codes, re-runs, Ctrl-C, kills,
shards, JSON logs, links, unwritable folders and a full disk."""

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from imgproc.cli import cli as imgproc_cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared case tables
from bad_inputs import bomb, photo  # noqa: E402

BAD = {
    "a/garbage.jpg": b"not an image",
    "a/b/empty.jpg": b"",
    "truncated.jpg": None,  # filled below
    "layers.psd.jpg": b"8BPS\x00\x01" + b"\x00" * 40,
    "a/bomb.png": None,
}


def cli(*args):
    r = CliRunner().invoke(imgproc_cli, [str(a) for a in args])
    return r.exit_code, r.stderr


def make_folder(root: Path, n_good: int, size=(24, 32)) -> list[str]:
    """n_good small photos in a nested tree (a few shapes) plus the 5 bad files."""
    rng = np.random.default_rng(0)
    names = []
    for i in range(n_good):
        h, w = size[0] + 8 * (i % 3), size[1]
        img = (photo(h, w).astype(int) + rng.integers(-10, 10, (h, w, 3))).clip(0, 255).astype(np.uint8)
        rel = f"{'a/' if i % 2 else ''}{'a/b/' if i % 5 == 0 else ''}img{i:03d}.jpg".replace("a/a/", "a/")
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(img).save(root / rel, quality=90)
        names.append(rel)
    good = (root / names[0]).read_bytes()
    for rel, data in BAD.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        if rel == "truncated.jpg":
            data = good[: len(good) // 2]
        elif rel == "a/bomb.png":
            data = bomb()
        (root / rel).write_bytes(data)
    return names


def tree(folder: Path):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def snapshot(folder: Path):
    return {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def photos(tmp_path):
    src = tmp_path / "in"
    names = make_folder(src, 20)
    return src, names


@pytest.mark.slow
def test_two_hundred_photos_five_bad_rerun_and_kill(tmp_path):
    src = tmp_path / "in"
    names = make_folder(src, 195)
    before = snapshot(src)
    out = tmp_path / "out"
    code, err = cli("denoise", src, out, "-r", "--log-interval", "1000")
    assert code == 1, err
    assert tree(out) == sorted(names)
    summary = err[err.index("summary:"):]
    assert "195 written, 0 skipped (output exists), 5 failed, of 200" in summary
    for rel in BAD:
        assert f"  {src / rel}: " in summary and err.count(f"error: {src / rel}: ") == 1
    assert "Traceback" not in err
    written = snapshot(out)
    # re-running redoes nothing
    code, err = cli("denoise", src, out, "-r")
    assert code == 1 and "0 written, 195 skipped (output exists), 5 failed" in err
    assert snapshot(out) == written
    assert snapshot(src) == before
    # killed midway (SIGKILL: no chance to clean up), then re-run: completes, nothing stray
    out2 = tmp_path / "out2"
    exe = os.path.join(os.path.dirname(sys.executable), "imgproc")
    proc = subprocess.Popen([exe, "denoise", str(src), str(out2), "-r", "--batch-size", "1", "--workers", "1"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not out2.exists() or len(tree(out2)) < 10):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = tree(out2)
    assert 10 <= len(partial) and set(p for p in partial if not p.endswith(".imgproc-tmp")) <= set(names)
    code, err = cli("denoise", src, out2, "-r")
    assert code == 1 and "5 failed" in err
    assert tree(out2) == sorted(names)  # complete, and any stale temporary file removed
    assert snapshot(src) == before


def _raise_on_call(monkeypatch, n: int, error):
    """Make the ``n``-th call of any pipeline raise ``error`` (the others run as usual)."""
    import imgproc.pipeline.pipeline as pl

    calls = {"n": 0}
    original = pl.Pipeline.__call__

    def raising(self, images, **kw):
        calls["n"] += 1
        if calls["n"] == n:
            raise error
        return original(self, images, **kw)

    monkeypatch.setattr(pl.Pipeline, "__call__", raising)


def test_ctrl_c_exits_130_with_partial_summary_and_no_temp_files(photos, tmp_path, monkeypatch):
    src, names = photos
    _raise_on_call(monkeypatch, 3, KeyboardInterrupt)
    out = tmp_path / "out"
    code, err = cli("denoise", src, out, "-r", "--batch-size", "2", "--workers", "1")
    assert code == 130, err
    assert err.strip().splitlines()[-1].startswith("  ") or "interrupted:" in err
    assert "interrupted:" in err and "not done" in err
    done = tree(out)
    assert 0 < len(done) < len(names) and all(not p.endswith(".imgproc-tmp") for p in done)
    monkeypatch.undo()  # the pipeline as it is again
    code, err = cli("denoise", src, out, "-r")
    assert code == 1 and f"{len(done)} skipped" in err and tree(out) == sorted(names)


def test_fail_fast_quiet_and_json(photos, tmp_path):
    src, names = photos
    code, err = cli("denoise", src, tmp_path / "ff", "-r", "--fail-fast", "--workers", "1")
    assert code == 65 and "stopped at the first failure (--fail-fast)" in err
    code, err = cli("denoise", src, tmp_path / "q", "-r", "-q")
    assert code == 1 and "progress" not in err and "warning" not in err and "failed (5)" in err
    ok = tmp_path / "ok"
    ok.mkdir()
    shutil.copy(src / names[0], ok / "x.jpg")
    code, err = cli("denoise", ok, tmp_path / "q2", "-q")
    assert code == 0 and err == ""
    code, err = cli("denoise", src, tmp_path / "j", "-r", "--log-format", "json", "--log-interval", "0")
    events = [json.loads(line) for line in err.strip().splitlines()]  # every line is JSON
    kinds = {e["event"] for e in events}
    assert code == 1 and {"error", "progress", "summary"} <= kinds
    summary = events[-1]
    assert summary["event"] == "summary" and summary["written"] == len(names) and summary["failed"] == 5
    assert sorted(f["path"] for f in summary["failures"]) == sorted(str(src / r) for r in BAD)


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_an_internal_error_stops_the_run_with_a_summary(photos, tmp_path, monkeypatch, log_format):
    """Issue 46 item 1: an exception of the run itself (the output buffers' IndexError) ended
    a JSON run with a plain-text line and no summary; now it is an error event, then the
    summary says the run stopped, and the exit code is 70."""
    src, names = photos
    _raise_on_call(monkeypatch, 2, IndexError("pop from empty list"))
    out = tmp_path / "out"
    code, err = cli("blur", src, out, "-r", "--batch-size", "2", "--workers", "1", "--log-format", log_format)
    assert code == 70, err
    if log_format == "text":
        assert "error: internal error: IndexError: pop from empty list (run with --debug" in err
        assert "stopped: " in err and "stopped at an internal error" in err
        return
    events = [json.loads(line) for line in err.strip().splitlines()]  # every line is JSON
    fatal = [e for e in events if e["event"] == "error" and e["path"] is None]
    assert len(fatal) == 1 and fatal[0]["exit_code"] == 70 and "IndexError" in fatal[0]["reason"]
    summary = events[-1]
    assert summary["event"] == "summary" and summary["stopped"] == "stopped at an internal error"
    assert summary["written"] == len(tree(out)) and summary["not_done"] > 0


def test_outputs_another_run_writes_meanwhile_are_skipped_not_errors(photos, tmp_path, monkeypatch):
    """Issue 46 item 4: an output that appears during the run (another run on the same
    folder wrote it) is "skipped (written by another run)", in the command's words, exit
    0; the other run's file is kept as it is."""
    src, names = photos
    import imgproc.io.codec as codec
    import imgproc.io.folder_runner as runner

    out = tmp_path / "out"
    theirs = {}
    original = runner.save_image

    def racing(path, image, **kw):
        if len(theirs) < 3:  # the other run finishes these first
            codec.write_atomically(path, codec.encode_image(image, path.suffix), overwrite=False)
            theirs[path] = path.read_bytes()
        return original(path, image, **kw)

    monkeypatch.setattr(runner, "save_image", racing)
    good = tmp_path / "good"
    shutil.copytree(src, good, ignore=lambda d, files: [f for f in files if f in {Path(b).name for b in BAD}])
    code, err = cli("blur", good, out, "-r", "--workers", "1")
    assert code == 0, err
    assert "overwrite=True" not in err and "error" not in err
    for path in theirs:
        assert f"note: {path}: skipped (written by another run)" in err
        assert path.read_bytes() == theirs[path]
    assert f"{len(names) - 3} written, 0 skipped (output exists), 3 skipped (written by another run), 0 failed" in err
    theirs.clear()
    code, err = cli("blur", good, tmp_path / "j", "-r", "--workers", "1", "--log-format", "json")
    events = [json.loads(line) for line in err.strip().splitlines()]
    assert code == 0 and events[-1]["skipped_by_another_run"] == 3 and events[-1]["failed"] == 0
    assert sum(e["event"] == "skipped" and e["reason"] == "written by another run" for e in events) == 3


def test_two_runs_into_one_folder_both_succeed(tmp_path):
    """Two real processes on the same folder at once: both exit 0 with no error line, and
    every output is written by exactly one of them (none replaced by the other)."""
    src = tmp_path / "in"
    names = make_folder(src, 40)
    for rel in BAD:
        (src / rel).unlink()
    out = tmp_path / "out"
    exe = os.path.join(os.path.dirname(sys.executable), "imgproc")
    procs = [subprocess.Popen([exe, "blur", str(src), str(out), "-r", "--batch-size", "1", "--workers", "2",
                               "--log-format", "json"], stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    summaries = []
    for code, err in results:
        events = [json.loads(line) for line in err.strip().splitlines()]
        assert code == 0 and not [e for e in events if e["event"] == "error"], err
        summaries.append(events[-1])
    assert sum(s["written"] for s in summaries) == len(names)
    for s in summaries:
        assert s["written"] + s["skipped"] + s["skipped_by_another_run"] == len(names)
    assert tree(out) == sorted(names)


def test_shards_split_the_work(photos, tmp_path):
    src, names = photos
    out = tmp_path / "out"
    for i in range(3):
        code, err = cli("denoise", src, out, "-r", "--num-shards", "3", "--shard-index", i)
        assert code in (0, 1), err
    assert tree(out) == sorted(names)
    code, err = cli("denoise", src, out, "--num-shards", "2", "--shard-index", "2")
    assert code == 2 and "--shard-index must be in 0..1" in err


def test_glob_and_non_recursive_and_format(photos, tmp_path):
    src, names = photos
    code, err = cli("blur", f"{src}/**/img*.jpg", tmp_path / "g", "--format", "png")
    assert code == 0, err
    assert tree(tmp_path / "g") == sorted(str(Path(n).with_suffix(".png")) for n in names)
    code, err = cli("blur", src, tmp_path / "top")
    assert code == 1 and tree(tmp_path / "top") == sorted(n for n in names if "/" not in n)
    code, err = cli("blur", src, tmp_path / "bad", "--format", "xyz")
    assert code == 2 and "'xyz' is not one of" in err and not (tmp_path / "bad").exists()
    code, err = cli("blur", f"{tmp_path}/nothing/*.jpg", tmp_path / "none")
    assert code == 66 and err.startswith("error: ") and "no image files found" in err


def test_output_inside_input_and_same_folder(photos, tmp_path):
    src, names = photos
    code, err = cli("blur", src, src, "-r")
    assert code == 73 and "is the input folder itself" in err
    code, err = cli("blur", src, src / "out", "-r")  # the output folder is not read as input
    assert code == 1 and tree(src / "out") == sorted(names)
    code, err = cli("blur", src, src / "out", "-r")
    assert "0 written" in err


def test_hard_link_and_symlink_outputs_refused(tmp_path, samples):
    src = tmp_path / "in.png"
    shutil.copy(samples / "camera_gray.png", src)
    before = src.read_bytes()
    os.link(src, tmp_path / "hard.png")
    (tmp_path / "soft.png").symlink_to(src)
    for dst in ("hard.png", "soft.png"):
        code, err = cli("blur", src, tmp_path / dst, "--overwrite")
        assert code == 73 and "is the input file itself" in err
    folder = tmp_path / "f"
    folder.mkdir()
    shutil.copy(samples / "camera_gray.png", folder / "a.png")
    out = tmp_path / "o"
    out.mkdir()
    os.link(folder / "a.png", out / "a.png")
    code, err = cli("blur", folder, out, "--overwrite")
    assert code == 1 and "is the input file itself" in err
    assert src.read_bytes() == before and (folder / "a.png").read_bytes() == before


def test_unwritable_output_folder(tmp_path, samples, monkeypatch):
    """Simulated (the tests may run as root, where permissions do not stop writes): the
    folder refuses new files with EACCES."""
    import tempfile

    import imgproc.io.folder_plan as plan

    def refuse(*a, **k):
        raise PermissionError(errno.EACCES, "Permission denied")

    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    code, err = cli("denoise", samples / "chelsea.jpg", out / "o.jpg")
    assert code == 73 and "folder not writable (Permission denied)" in err and len(err.splitlines()) == 1
    monkeypatch.setattr(plan.os, "open", refuse)
    code, err = cli("denoise", samples, out)
    assert code == 73 and "folder not writable" in err and len(err.splitlines()) == 1
    assert os.listdir(out) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permissions")
def test_unwritable_output_folder_for_real(tmp_path, samples):
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o500)
    try:
        code, err = cli("denoise", samples, out)
        assert code == 73 and "folder not writable" in err
        assert os.listdir(out) == []
    finally:
        out.chmod(0o700)


def test_disk_full_exit_74_nothing_left(tmp_path, samples, monkeypatch):
    """Disk full simulated by making fsync fail with ENOSPC (see also the tmpfs test)."""
    import imgproc.io.codec as io_mod

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(io_mod.os, "fsync", full)
    code, err = cli("denoise", samples / "chelsea.jpg", tmp_path / "o.jpg")
    assert code == 74 and err.strip() == f"error: {tmp_path / 'o.jpg'}: cannot write (No space left on device)"
    assert os.listdir(tmp_path) == []
    code, err = cli("denoise", samples, tmp_path / "out")
    assert code == 74 and "stopped at an I/O error while writing" in err
    assert tree(tmp_path / "out") == []


def test_disk_full_summary_counts_the_outputs_on_disk(tmp_path, monkeypatch):
    """Issue 46 item 6: the summary said 101 written with 103 complete outputs on disk.
    Writes that completed together with the failing one were dropped from the count when
    the write error stopped the run; the summary now counts every complete output."""
    import threading

    import imgproc.io.codec as io_mod

    src = tmp_path / "in"
    make_folder(src, 24)
    for rel in BAD:
        (src / rel).unlink()
    calls, lock = [0], threading.Lock()
    real_fsync = os.fsync

    def filling(fd):
        with lock:
            calls[0] += 1
            n = calls[0]
        time.sleep(0.05)  # the writes of a batch complete together
        if n >= 12:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(io_mod.os, "fsync", filling)
    out = tmp_path / "out"
    code, err = cli("blur", src, out, "-r", "--batch-size", "8", "--workers", "6", "--log-format", "json")
    events = [json.loads(line) for line in err.strip().splitlines()]
    on_disk = [p for p in tree(out) if not p.endswith(".imgproc-tmp")]
    assert code == 74 and events[-1]["event"] == "summary", err
    assert events[-1]["written"] == len(on_disk) == len(tree(out)) and 0 < len(on_disk) < 24


def _tiny_tmpfs(path: Path) -> bool:
    path.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(path)], capture_output=True)
    return r.returncode == 0


def test_disk_full_on_a_real_tiny_tmpfs(tmp_path, samples):
    mnt = tmp_path / "small"
    if not _tiny_tmpfs(mnt):
        pytest.skip("cannot mount a tmpfs here (needs root/CAP_SYS_ADMIN)")
    try:
        big = np.random.default_rng(0).integers(0, 256, (400, 400, 3)).astype(np.uint8)  # ~480 kB as PNG
        src = tmp_path / "big.png"
        Image.fromarray(big).save(src)
        code, err = cli("blur", src, mnt / "o.png", "--sigma", "0")
        assert code == 74 and "No space left on device" in err and len(err.splitlines()) == 1
        assert os.listdir(mnt) == []
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_existing_output_file_for_folder_input(photos, tmp_path):
    src, _ = photos
    f = tmp_path / "file.png"
    f.write_bytes(b"x")
    code, err = cli("blur", src, f)
    assert code == 73 and "a folder or glob input needs an output folder" in err


def test_single_file_into_folder(tmp_path, samples):
    out = tmp_path / "o"
    out.mkdir()
    code, err = cli("blur", samples / "chelsea.jpg", out)
    assert code == 0 and os.listdir(out) == ["chelsea.jpg"]


@pytest.mark.parametrize("many", [False, True])
def test_a_signal_while_a_batch_computes_writes_none_of_it(tmp_path, samples, monkeypatch, many):
    """Ctrl-C during a long compute (one photo through BM3D takes seconds) stops the run
    before that batch's outputs are written: exit 130, no output, no temporary file."""
    import signal as signals

    from imgproc.io import folder_runner
    from imgproc.io.interrupts import INTERRUPTS

    computed = folder_runner.BatchStage._run

    def signal_during_the_compute(self, group):
        results = computed(self, group)
        INTERRUPTS._record(signals.SIGINT, None)  # as the handler does when Ctrl-C comes
        return results

    monkeypatch.setattr(folder_runner.BatchStage, "_run", signal_during_the_compute)
    src = samples if many else samples / "chelsea.jpg"
    out = tmp_path / ("out" if many else "o.png")
    code, err = cli("blur", src, out)
    assert code == 130 and "interrupted" in err, err
    assert not out.exists() or tree(out) == []
    assert not list(tmp_path.rglob("*.imgproc-tmp"))


@pytest.mark.slow
@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_interrupts_while_compiling_always_end_with_130(signame, tmp_path):
    """Issue 17, item 1: a signal that arrives while XLA compiles (the compilation cache off)
    ends the run with 130 and a partial summary, never a crash, a swallowed interrupt, a
    temporary file or an empty output folder. Repeated, at varying moments after the run
    has started."""
    import random

    exe = Path(sys.executable).with_name("imgproc")
    src = tmp_path / "in"
    src.mkdir()
    for i in range(6):  # six sizes: six compilations
        Image.fromarray(np.full((30 + 11 * i, 40 + 5 * i, 3), 40 * i, np.uint8)).save(src / f"im{i}.png")
    env = dict(os.environ, IMGPROC_CACHE_DIR="off")
    rng = random.Random(0)
    interrupted = 0
    for attempt in range(4):
        out = tmp_path / f"out{attempt}"
        proc = subprocess.Popen([str(exe), "denoise", str(src), str(out), "--method", "chapter", "--batch-size", "1"],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while not out.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)  # the output folder exists once the run is planned
        time.sleep(rng.uniform(0.0, 0.8))
        proc.send_signal(getattr(signal, signame))
        _, err = proc.communicate(timeout=120)
        text = err.decode()
        if proc.returncode == 0:  # finished before the signal: nothing to check
            continue
        assert proc.returncode == 130, text[-500:]
        assert "Traceback" not in text and "Fatal Python error" not in text
        assert "interrupted" in text
        assert not list(out.rglob("*.imgproc-tmp"))
        assert not out.exists() or any(out.iterdir()), "the run left its output folder empty"
        interrupted += 1
    assert interrupted >= 2  # the signals did arrive mid-run


# --------------------------------------------------------------------------- mixed sizes

SIZE_SETTING_SPEC = [{"op": "random_resized_crop", "size": [16, 16]}, {"op": "random_flip_left_right"}]


def _mixed_sizes(folder: Path) -> list[Path]:
    """12 PNGs of 12 sizes, all within one canvas (40 x 48: imgproc.pipeline.variable_size)."""
    rng = np.random.default_rng(4)
    sizes = [(33 + i % 8, 41 + (3 * i + i // 8) % 8) for i in range(12)]
    assert len(set(sizes)) == 12
    folder.mkdir()
    paths = []
    for i, size in enumerate(sizes):
        path = folder / f"{i:02d}.png"
        Image.fromarray(rng.integers(0, 256, size + (3,), dtype=np.uint8)).save(path)
        paths.append(path)
    return paths


def test_folders_of_mixed_sizes_compile_a_few_programs(tmp_path, compilations):
    """12 sizes through a spec that starts by setting the size: `imgproc run` batches them
    as lists (one canvas program per canvas and batch shape, not one per size) and
    `imgproc augment` too; each output equals the pipeline on that image alone with its
    index. (Each count also holds the few small programs of a run: the key, indices.)"""
    import imgproc

    paths = _mixed_sizes(tmp_path / "in")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SIZE_SETTING_SPEC))
    with compilations() as seen:
        r = CliRunner().invoke(imgproc_cli, ["run", str(spec), str(tmp_path / "in"), str(tmp_path / "out"),
                                             "--seed", "3", "--batch-size", "4", "-q"])
    assert r.exit_code == 0, r.output
    assert len(seen) <= 4, f"{len(seen)} compilations for 12 sizes"
    pipe = imgproc.Pipeline(SIZE_SETTING_SPEC)
    for i in (0, 11):
        with Image.open(tmp_path / "out" / paths[i].name) as im:
            got = np.asarray(im)
        alone = pipe(np.asarray(Image.open(paths[i]))[None], key=3, indices=[i])[0]
        np.testing.assert_array_equal(got, alone)
    with compilations() as seen:
        r = CliRunner().invoke(imgproc_cli, ["augment", str(tmp_path / "in"), str(tmp_path / "variants"),
                                             "--spec", str(spec), "--count", "2", "--no-sheet"])
    assert r.exit_code == 0, r.output
    assert len(seen) <= 4, f"{len(seen)} compilations for 12 sizes"
