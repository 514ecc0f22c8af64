"""imgproc.grain: a pipeline as a Grain per-record random map."""

import os
import pickle
import re
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pygrain = pytest.importorskip("grain.python")

from imgproc.grain import ImageBatch, RandomAugment, RandomAugmentBatch  # noqa: E402

SPEC = [{"op": "random_flip_left_right"}, {"op": "random_brightness", "max_delta": 0.2}]


def _loader(workers, transform):
    rng = np.random.default_rng(0)
    source = [{"image": rng.integers(0, 256, (8, 10, 3)).astype(np.uint8), "label": i} for i in range(6)]
    return pygrain.DataLoader(
        data_source=source,
        sampler=pygrain.IndexSampler(6, pygrain.NoSharding(), shuffle=True, num_epochs=1, seed=3),
        operations=[transform, pygrain.Batch(3)],
        worker_count=workers,
    )


def test_pickles_and_rebuilds():
    t = RandomAugment(SPEC, field="image")
    t.pipeline  # built lazily; not part of the pickle
    u = pickle.loads(pickle.dumps(t))
    assert u.pipeline.to_spec() == SPEC and u.field == "image"
    with pytest.raises(ValueError, match="unknown op"):
        RandomAugment([{"op": "nope"}])


def _indexed_records(n=6):
    rng = np.random.default_rng(0)
    return [{"image": rng.integers(0, 256, (8, 10, 3)).astype(np.uint8), "index": np.int32(i)} for i in range(n)]


def test_keyed_by_record_index_whatever_the_shard_and_order():
    """With key= and index_field=, record i is augmented as image i of the batch pipeline
    with indices (the pipeline's key rule), whichever host shard or order it comes in."""
    import jax

    import imgproc

    source = _indexed_records()
    t = pickle.loads(pickle.dumps(RandomAugment(SPEC, field="image", key=5, index_field="index")))

    def run(shard_options, seed):
        loader = pygrain.DataLoader(
            data_source=source,
            sampler=pygrain.IndexSampler(6, shard_options, shuffle=True, num_epochs=1, seed=seed),
            operations=[t], worker_count=0)
        return {int(r["index"]): r["image"] for r in loader}

    whole = run(pygrain.NoSharding(), 3)
    halves = {**run(pygrain.ShardOptions(0, 2), 4), **run(pygrain.ShardOptions(1, 2), 9)}
    assert sorted(whole) == sorted(halves) == list(range(6))
    batch = np.stack([r["image"] for r in source])
    want = imgproc.Pipeline(SPEC)(batch, key=jax.random.key(5), indices=np.arange(6))
    for i in range(6):
        np.testing.assert_array_equal(whole[i], want[i])
        np.testing.assert_array_equal(halves[i], want[i])
    assert sum(not np.array_equal(want[i], batch[i]) for i in range(6)) >= 5
    with pytest.raises(ValueError, match="key= and index_field= together"):
        RandomAugment(SPEC, field="image", index_field="index")
    with pytest.raises(ValueError, match="needs dict records"):
        RandomAugment(SPEC, key=0, index_field="index")


def test_same_output_with_0_and_2_workers():
    from absl import flags

    if not flags.FLAGS.is_parsed():  # Grain's worker processes read absl flags (no app.run here)
        flags.FLAGS.mark_as_parsed()
    t = RandomAugment(SPEC, field="image")
    def by_label(batches):  # with workers, Grain batches within each worker: compare per record
        return {int(l): im for b in batches for l, im in zip(b["label"], b["image"])}

    serial = by_label(_loader(0, t))
    parallel = by_label(_loader(2, t))
    assert sorted(serial) == sorted(parallel) == list(range(6))
    for label, image in serial.items():
        assert image.dtype == np.uint8 and image.shape == (8, 10, 3)
        np.testing.assert_array_equal(parallel[label], image)
    source = np.random.default_rng(0).integers(0, 256, (6, 8, 10, 3)).astype(np.uint8)
    assert sum(not np.array_equal(serial[i], source[i]) for i in range(6)) >= 5  # really augmented
    again = by_label(_loader(0, RandomAugment(SPEC, field="image")))
    for label, image in serial.items():
        np.testing.assert_array_equal(again[label], image)


RAGGED_SPEC = [{"op": "random_resized_crop", "size": [12, 12]}, {"op": "random_flip_left_right"},
               {"op": "random_brightness", "max_delta": 0.2}]


def _ragged_records(n=32):
    """n records of n distinct sizes, each with its global index."""
    rng = np.random.default_rng(1)
    return [{"image": rng.integers(0, 256, (14 + i, 40 - i, 3)).astype(np.uint8), "index": np.int32(i)}
            for i in range(n)]


def test_batches_of_records_of_different_sizes_same_with_0_and_2_workers(tmp_path, monkeypatch):
    """32 sizes, batches of 4 kept as lists (ImageBatch) and augmented as one call each:
    the same output with 0 and 2 workers, each record equal to the pipeline on it alone
    with its global index; the workers share one compilation cache folder."""
    from absl import flags

    import imgproc

    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()
    monkeypatch.setenv("IMGPROC_CACHE_DIR", str(tmp_path / "cache"))
    source = _ragged_records()
    transform = RandomAugmentBatch(RAGGED_SPEC, field="image", key=3, index_field="index")

    def run(workers):
        loader = pygrain.DataLoader(
            data_source=source,
            sampler=pygrain.IndexSampler(len(source), pygrain.NoSharding(), shuffle=True, num_epochs=1, seed=0),
            operations=[pygrain.Batch(4, batch_fn=ImageBatch("image")), transform], worker_count=workers)
        return {int(i): im for b in loader for i, im in zip(b["index"], b["image"])}

    serial, parallel = run(0), run(2)
    assert sorted(serial) == sorted(parallel) == list(range(32))
    pipe = imgproc.Pipeline(RAGGED_SPEC)
    for i, image in serial.items():
        np.testing.assert_array_equal(parallel[i], image)
    for i in (0, 17, 31):  # a few records alone (each size compiles its own program)
        np.testing.assert_array_equal(serial[i], pipe(source[i]["image"][None], key=3, indices=[i])[0])
    assert any((tmp_path / "cache").iterdir())  # the workers' programs went to the shared folder


def test_image_batch_keeps_images_as_a_list_and_stacks_the_rest():
    records = _ragged_records(3)
    batch = ImageBatch("image")(records)
    assert [x.shape for x in batch["image"]] == [(14, 40, 3), (15, 39, 3), (16, 38, 3)]
    assert batch["index"].tolist() == [0, 1, 2]
    assert [x.shape for x in ImageBatch()([r["image"] for r in records])] == [(14, 40, 3), (15, 39, 3), (16, 38, 3)]


# --------------------------------------------------------------------------- spawned workers

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "grain_training_input.py"


def _command(path, workers, *extra):
    return [sys.executable, str(path), "--workers", str(workers), "--records", "8", "--batch", "4", *extra]


def _env(devices):
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}"
    return dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=flags.strip())


def _run_script(path, workers, *, devices=1, timeout=300):
    return subprocess.run(_command(path, workers), cwd=path.parent, env=_env(devices), capture_output=True, text=True,
                          timeout=timeout)


def _records(stdout):
    """``{global record index: digest of its augmented image}`` from the script's lines."""
    lines = [line.split() for line in stdout.splitlines() if re.fullmatch(r"\d+ \d+ [0-9a-f]{16}", line)]
    return {int(index): digest for _, index, digest in lines}


@pytest.fixture(scope="module")
def serial_records():
    """The script's records with 0 workers, one process on one device."""
    serial = _run_script(SCRIPT, 0, devices=1)
    assert serial.returncode == 0, serial.stderr[-3000:]
    records = _records(serial.stdout)
    assert sorted(records) == list(range(8)), serial.stdout
    assert len(set(records.values())) == 8
    return records


def test_guarded_script_gives_each_record_the_same_draw_with_workers_and_devices(serial_records):
    """scripts/grain_training_input.py (the ``__main__`` guard, ShardByJaxProcess, global
    batch, record indices as keys) with 2 spawned workers on 4 devices: every record's
    augmented image is the one of 0 workers on one device."""
    parallel = _run_script(SCRIPT, 2, devices=4)
    assert parallel.returncode == 0, parallel.stderr[-3000:]
    assert _records(parallel.stdout) == serial_records


def test_two_hosts_each_read_their_shard_and_draw_by_record(serial_records):
    """The script as two JAX processes (two "hosts" on this machine, 2 CPU devices each,
    jax.distributed): each reads its half of the records (ShardByJaxProcess), the pipeline
    runs on the 4-device global batch, and every record gets the one-process draw."""
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    hosts = [subprocess.Popen(_command(SCRIPT, 0, "--coordinator", f"localhost:{port}", "--num-processes", "2",
                                       "--process-id", str(i)),
                              cwd=ROOT, env=_env(2), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(2)]
    outs = []
    try:
        for host in hosts:
            out, err = host.communicate(timeout=300)
            assert host.returncode == 0, err[-3000:]
            outs.append(_records(out))
    finally:
        for host in hosts:
            host.kill()  # no-op for a process that has exited
    assert sorted(outs[0]) != sorted(outs[1]) and not set(outs[0]) & set(outs[1])  # each its own shard
    assert {**outs[0], **outs[1]} == serial_records


def test_script_without_the_main_guard_fails_in_its_workers(tmp_path):
    """What docs/scale.md describes: without the guard each spawned worker runs the
    script's top level again, tries to start workers while it is starting, and dies; the
    loader then raises in the main process."""
    text = SCRIPT.read_text()
    assert 'if __name__ == "__main__":\n    main()' in text
    unguarded = tmp_path / "unguarded.py"
    unguarded.write_text(text.replace('if __name__ == "__main__":\n    main()', "main()  # no guard"))
    run = _run_script(unguarded, 2)
    assert run.returncode != 0
    assert "bootstrapping phase" in run.stderr, run.stderr[-3000:]
    assert "Worker process was terminated unexpectedly" in run.stderr, run.stderr[-3000:]
