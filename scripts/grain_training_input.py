"""A training input pipeline with Grain and imgproc, for one host or many.

Each host reads only its shard of the records (``ShardByJaxProcess``: shard
``jax.process_index()`` of ``jax.process_count()``); Grain's worker processes augment
each record on the host (:class:`imgproc.grain.RandomAugment`, keyed by the record's
global index); each host's batch becomes one global batch over every device
(:func:`imgproc.global_batch`) and a device pipeline augments it with the records'
*global* indices as ``indices=``, so every record gets the same draw whatever the number
of hosts, devices or workers.

Grain starts its workers with ``multiprocessing``'s *spawn* method: each worker is a fresh
Python that imports this file again. Everything that starts work (building the loader,
iterating it) must sit under ``if __name__ == "__main__":``; without the guard each worker
would run the script's top level again and try to start workers of its own while it is
still starting (see docs/scale.md, "Training input: Grain").

    python scripts/grain_training_input.py --workers 2 [--records 8] [--batch 4]
    # two hosts (here: two processes of this machine)
    python scripts/grain_training_input.py --coordinator localhost:12345 --num-processes 2 --process-id 0 &
    python scripts/grain_training_input.py --coordinator localhost:12345 --num-processes 2 --process-id 1

Prints one line per record: its global index and a digest of its augmented image (the
test compares them between 0 and 2 workers).
"""

from __future__ import annotations

import argparse
import hashlib

import numpy as np

SPEC_HOST = [{"op": "random_flip_left_right"}, {"op": "random_brightness", "max_delta": 0.2}]
SPEC_DEVICE = [{"op": "random_rotate", "max_degrees": 20}, {"op": "random_contrast", "lower": 0.8, "upper": 1.2}]


class Records:
    """A random-access source of ``{"image": 16x16x3 uint8, "index": its global index}``."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        image = np.random.default_rng(int(i)).integers(0, 256, (16, 16, 3)).astype(np.uint8)
        return {"image": image, "index": np.int32(i)}


def loader(records: int, batch: int, workers: int, seed: int = 0):
    import grain.python as pygrain

    from imgproc.grain import RandomAugment

    return pygrain.DataLoader(
        data_source=Records(records),
        sampler=pygrain.IndexSampler(records, pygrain.ShardByJaxProcess(drop_remainder=True), shuffle=True,
                                     num_epochs=1, seed=seed),
        # keyed by the record's global index: the same draw whatever the order, workers or hosts
        operations=[RandomAugment(SPEC_HOST, field="image", key=1, index_field="index"),
                    pygrain.Batch(batch, drop_remainder=True)],
        worker_count=workers,
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--records", type=int, default=8)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--coordinator", help="host:port of process 0, for several processes (hosts)")
    parser.add_argument("--num-processes", type=int, default=1)
    parser.add_argument("--process-id", type=int, default=0)
    args = parser.parse_args(argv)
    if args.coordinator:  # one process per host; on a managed cluster initialize() needs no arguments
        import jax

        jax.distributed.initialize(args.coordinator, num_processes=args.num_processes, process_id=args.process_id)

    from absl import flags

    if not flags.FLAGS.is_parsed():  # Grain's workers read absl flags; no absl.app.run here
        flags.FLAGS.mark_as_parsed()
    import jax

    import imgproc

    pipe = imgproc.Pipeline(SPEC_DEVICE)
    key = jax.random.key(0)
    for step, batch in enumerate(loader(args.records, args.batch, args.workers)):
        images = imgproc.global_batch(batch["image"])  # every host's batch: one global array
        indices = imgproc.global_batch(batch["index"])  # the records' global indices
        out = pipe(images, key=jax.random.fold_in(key, 0), indices=indices)  # epoch 0
        # each host prints its own records: the shards on its devices
        shards = sorted(zip(out.addressable_shards, indices.addressable_shards), key=lambda s: s[0].device.id)
        for images_here, indices_here in shards:
            for index, image in zip(np.asarray(indices_here.data), np.asarray(images_here.data)):
                print(step, int(index), hashlib.sha256(image.tobytes()).hexdigest()[:16])

if __name__ == "__main__":
    main()
