"""imgproc.grain: a pipeline as a Grain per-record random map."""

import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pygrain = pytest.importorskip("grain.python")

from imgproc.grain import RandomAugment  # noqa: E402

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


# --------------------------------------------------------------------------- spawned workers

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "grain_training_input.py"


def _run_script(path, workers, *, devices=1, timeout=300):
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}".strip())
    return subprocess.run([sys.executable, str(path), "--workers", str(workers), "--records", "8", "--batch", "4"],
                          cwd=path.parent, env=env, capture_output=True, text=True, timeout=timeout)


def _records(stdout):
    """``{global record index: digest of its augmented image}`` from the script's lines."""
    lines = [line.split() for line in stdout.splitlines() if re.fullmatch(r"\d+ \d+ [0-9a-f]{16}", line)]
    return {int(index): digest for _, index, digest in lines}


def test_guarded_script_gives_each_record_the_same_draw_with_workers_and_devices():
    """scripts/grain_training_input.py (the ``__main__`` guard, ShardByJaxProcess, global
    batch, record indices as keys) with 0 workers on one device and with 2 spawned workers
    on 4 devices: every record's augmented image is the same."""
    serial = _run_script(SCRIPT, 0, devices=1)
    assert serial.returncode == 0, serial.stderr[-3000:]
    parallel = _run_script(SCRIPT, 2, devices=4)
    assert parallel.returncode == 0, parallel.stderr[-3000:]
    one, two = _records(serial.stdout), _records(parallel.stdout)
    assert sorted(one) == list(range(8)), serial.stdout
    assert one == two
    assert len(set(one.values())) == 8


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
