"""Issue 14 item 4: ``imgproc.ray`` and ``--engine ray`` on a local Ray cluster
(``ray.init(num_cpus=2)``, once for the module) over a small folder of downscaled sample
images plus a corrupt file, a truncated file and a non-image: the same bytes as the plain
command line (deterministic and random specs, whatever the number of actors), bad files
reported with the command line's reasons, a re-run skipping done files, an unreachable
cluster refused in seconds with exit 69, a bad spec refused before Ray starts."""

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
import ray  # in the test extra (CI installs it): these tests always run
from click.testing import CliRunner
from PIL import Image

import imgproc
import imgproc.ray as engine
from imgproc.cli import cli
from imgproc.errors import UnavailableError

# slow; and in one test worker under `make test` (--dist loadgroup): one local Ray cluster
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]

EXE = os.path.join(os.path.dirname(sys.executable), "imgproc")
SAMPLES = Path(__file__).resolve().parents[2] / "sample_images"
RANDOM_SPEC = [{"op": "random_flip_left_right"}, {"op": "random_brightness", "max_delta": 0.2}]
BAD = {"corrupt.jpg", "truncated.png", "notes.png", "huge.png"}


@pytest.fixture(scope="module")
def cluster():
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Six sample images at a third of their size (JPEG with EXIF rotation, grey PNG,
    RGBA PNG, 16-bit PNG; several of one size, so batches hold several) and one in a
    subfolder, a corrupt JPEG, a truncated PNG, a text file named .png and a PNG whose
    header claims 100 megapixels."""
    d = tmp_path_factory.mktemp("in")
    for name in ["chelsea.jpg", "chelsea_noisy.jpg", "chelsea_exif_rot90.jpg", "camera_gray.png", "logo_rgba.png",
                 "gradient_16bit.png"]:
        with Image.open(SAMPLES / name) as im:
            small = im.resize((max(8, im.width // 3), max(8, im.height // 3)))
            kw = {"exif": im.info["exif"]} if "exif" in im.info else {}
            small.save(d / name, **kw)
    (d / "sub").mkdir()
    shutil.copy(d / "chelsea.jpg", d / "sub" / "again.jpg")
    (d / "corrupt.jpg").write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF" + bytes(range(256)) * 4)
    png = (d / "camera_gray.png").read_bytes()
    (d / "truncated.png").write_bytes(png[: len(png) // 2])
    (d / "notes.png").write_text("not an image\n")
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    (d / "huge.png").write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 10000, 10000, 8, 2, 0, 0, 0))
                                 + chunk(b"IDAT", zlib.compress(bytes(1000))) + chunk(b"IEND", b""))  # 100 Mpx, refused unread
    return d


def cli_local(*args):
    """The plain command line (threads in one process); its JSON summary."""
    r = subprocess.run([EXE, *map(str, args), "--log-format", "json", "-r"], capture_output=True, text=True, timeout=300)
    events = [json.loads(line) for line in r.stderr.splitlines() if line.startswith("{")]
    return r.returncode, [e for e in events if e["event"] == "summary"][0]


def outputs(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def failures(table):
    return {(Path(r.path).name, r.reason, r.exit_code) for r in table.itertuples() if r.status == "failed"}


@pytest.fixture(scope="module")
def denoised_by_cli(folder, tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "out"
    code, summary = cli_local("denoise", folder, out, "--method", "chapter")
    assert code == 1 and summary["written"] == 7 and summary["failed"] == 4
    return out, {(Path(f["path"]).name, f["reason"], f["exit_code"]) for f in summary["failures"]}


def test_same_bytes_and_reasons_as_the_plain_cli(cluster, folder, denoised_by_cli, tmp_path):
    from imgproc.cli import _denoise

    ref, ref_failures = denoised_by_cli
    table = engine.process(folder, tmp_path / "out", _denoise.build("chapter"), recursive=True)
    assert outputs(tmp_path / "out") == outputs(ref)
    assert len(outputs(ref)) == 7
    assert failures(table) == ref_failures
    assert {Path(p).name for p in table.path[table.status == "failed"]} == BAD
    assert (table.status == "written").sum() == 7
    reasons = dict((n, r) for n, r, _ in ref_failures)
    assert "not a recognised image format" in reasons["notes.png"]
    assert "truncated PNG file" in reasons["truncated.png"]
    assert reasons["huge.png"].startswith("too many pixels (10000x10000 = 100000000 > 90000000)")


def test_a_rerun_skips_done_files(cluster, folder, tmp_path):
    out = tmp_path / "out"
    spec = [{"op": "gaussian_blur", "sigma": 1.0}]
    first = engine.process(folder, out, spec, recursive=True)
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    again = engine.process(folder, out, spec, recursive=True)
    assert list(again.status[again.status != "failed"]) == ["skipped"] * 7
    assert failures(again) == failures(first)  # bad files have no output: reported again, as the CLI does
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == stamps
    (out / "chelsea.jpg").unlink()
    third = engine.process(folder, out, spec, recursive=True)
    assert list(third.path[third.status == "written"]) == [str(folder / "chelsea.jpg")]


def test_random_spec_same_bytes_as_cli_seed_whatever_the_actors(cluster, folder, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(RANDOM_SPEC))
    code, _ = cli_local("run", spec, folder, tmp_path / "cli", "--seed", "3")
    assert code == 1
    # three actors of half a CPU, batches of 3 (padded to 4): other batches than the CLI's 8
    engine.process(folder, tmp_path / "ray", RANDOM_SPEC, key=3, num_actors=3, cpus_per_actor=0.5, batch_size=3,
                   recursive=True)
    assert outputs(tmp_path / "ray") == outputs(tmp_path / "cli")
    # and through the command line's --engine ray (the module's cluster is used, not shut down)
    result = CliRunner().invoke(cli, ["run", str(spec), str(folder), str(tmp_path / "cli-ray"), "--seed", "3", "-r",
                                      "--engine", "ray", "-q"])
    assert result.exit_code == 1, result.output
    assert outputs(tmp_path / "cli-ray") == outputs(tmp_path / "cli")
    assert ray.is_initialized()


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_unreachable_cluster_exits_69_fast_with_one_line(folder, tmp_path):
    address = f"127.0.0.1:{_closed_port()}"
    start = time.monotonic()
    r = subprocess.run([EXE, "denoise", folder, tmp_path / "out", "--engine", "ray", "--ray-address", address],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 69
    assert time.monotonic() - start < 30
    assert r.stderr.splitlines() == [f"error: {address}: cannot reach the Ray cluster (Connection refused)"]


def test_a_bad_spec_is_refused_before_ray_starts(folder, tmp_path):
    spec = tmp_path / "bad.json"
    spec.write_text('[{"op": "gaussian_blur", "sigmaa": 1}]')
    address = f"127.0.0.1:{_closed_port()}"  # refused (69) if anything tried to reach it
    r = subprocess.run([EXE, "run", spec, folder, tmp_path / "out", "--engine", "ray", "--ray-address", address],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "gaussian_blur has no option 'sigmaa'" in r.stderr and "Ray" not in r.stderr
    with pytest.raises(ValueError, match="has no option 'sigmaa'"):
        engine.process(folder, tmp_path / "out2", [{"op": "gaussian_blur", "sigmaa": 1}], address=address)
    with pytest.raises(ValueError, match="random stages: pass key="):
        engine.process(folder, tmp_path / "out2", RANDOM_SPEC, address=address)
    assert not (tmp_path / "out2").exists()


def test_engine_ray_usage_errors(folder, tmp_path):
    runner = CliRunner()
    for args, message in [
        (["--ray-address", "127.0.0.1:1"], "--ray-address needs --engine ray"),
        (["--engine", "ray", "--fail-fast"], "--fail-fast is not supported with --engine ray"),
    ]:
        result = runner.invoke(cli, ["blur", str(folder), str(tmp_path / "out"), *args])
        assert result.exit_code == 2 and message in result.output
    result = runner.invoke(cli, ["blur", str(folder / "chelsea.jpg"), str(tmp_path / "x.jpg"), "--engine", "ray"])
    assert result.exit_code == 2 and "--engine ray runs folders" in result.output


def test_without_ray_one_line_names_the_extra(monkeypatch, folder, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)
    monkeypatch.setitem(sys.modules, "ray.data", None)
    with pytest.raises(UnavailableError, match=r'ray: not installed; pip install "imgproc-jax\[ray\]"'):
        engine.connect()
    result = CliRunner().invoke(cli, ["blur", str(folder), str(tmp_path / "out"), "--engine", "ray"])
    assert result.exit_code == 69
    assert result.output.strip().splitlines()[-1] == 'error: ray: not installed; pip install "imgproc-jax[ray]"'


def test_actors_that_would_starve_the_read_tasks_are_refused(cluster, folder, tmp_path):
    # two one-CPU actors on two CPUs: no CPU left for the read tasks, a silent hang in Ray
    with pytest.raises(ValueError, match=r"num_actors=2 x cpus_per_actor=1 leaves less than 0.5 of the cluster's 2 CPUs"
                                         r".*use num_actors <= 1"):
        engine.process(folder, tmp_path / "out", [{"op": "gaussian_blur", "sigma": 1.0}], num_actors=2, cpus_per_actor=1)


def test_partial_batches_are_padded_to_a_few_compiled_sizes():
    from imgproc.io.folder_plan import Job
    from imgproc.io.folder_runner import BatchStage, Decoded

    pipe = imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 1.0}], bucket=True)
    reference = imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 1.0}])
    stage = BatchStage(pipe, batch_size=8, key=None, pad=True)
    rng = np.random.default_rng(0)
    seen = []
    for n in (3, 4, 2, 7, 8, 5):  # padded to 4, 4, 2, 8, 8, 8: three programs
        images = rng.integers(0, 256, (n, 20, 30, 3), dtype=np.uint8)
        results = []
        for i, im in enumerate(images):
            results += stage.add(Decoded(Job(Path(f"{i}.png"), Path("o.png"), "", i), im, None, False, None, []))
        results += stage.flush()
        assert [r.image.shape for r in results] == [(20, 30, 3)] * n
        np.testing.assert_array_equal(np.stack([r.image for r in results]), reference(images))
        seen.append(pipe.trace_count)
    assert seen[-1] == 3


@pytest.mark.parametrize("n, batch_size, num_actors", [(1, 8, 2), (20, 8, 2), (200, 8, 2), (1000, 8, 2), (999, 5, 3),
                                                       (64, 1, 1), (7, 16, 4)])
def test_read_blocks_are_whole_batches_so_no_batch_is_padded_but_the_last(n, batch_size, num_actors):
    rows = list(range(n))
    blocks = engine.read_blocks(rows, batch_size, num_actors)
    assert [r for b in blocks for r in b] == rows
    assert all(len(b) % batch_size == 0 for b in blocks[:-1])
    assert max(len(b) for b in blocks) <= max(batch_size, engine.READ_BLOCK_FILES + batch_size - 1)
    batches = -(-n // batch_size)
    assert len(blocks) >= min(batches, 2 * num_actors)  # every actor gets work where there is enough


def test_an_interrupted_run_counts_the_outputs_written_before_their_rows_arrived(tmp_path):
    # Ctrl-C: actors write whole outputs before their status rows reach the driver; the
    # summary counts those, and not an output from before the run (left for --overwrite)
    import types

    from imgproc.cli._process import _Recording, written_unreported

    jobs = [types.SimpleNamespace(src=tmp_path / f"in{i}.jpg", dst=tmp_path / f"out{i}.jpg") for i in range(5)]
    old = jobs[3].dst
    old.write_bytes(b"from an earlier run")
    os.utime(old, (time.time() - 60, time.time() - 60))
    since = time.time()
    for job in jobs[:3]:
        job.dst.write_bytes(b"written by this run")

    class Counts:
        def __init__(self):
            self.ok_paths, self.errors = [], []

        def ok(self, skipped=False, path=None):
            self.ok_paths.append(path)

        def error(self, path, reason, code):
            self.errors.append(path)

        def warning(self, path, message):
            pass

    counts = Counts()
    recorded = _Recording(counts)
    recorded.ok(path=str(jobs[0].src))  # its row arrived
    recorded.error(str(jobs[1].dst), "disk full", 74)  # reported by its output path
    assert counts.ok_paths == [str(jobs[0].src)] and counts.errors == [str(jobs[1].dst)]
    # jobs[2]: written, row not arrived; jobs[3]: older output; jobs[4]: not written
    assert written_unreported(jobs, recorded.reported, since) == [jobs[2]]
