"""imgproc.grain: a pipeline as a Grain per-record random map."""

import pickle

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
