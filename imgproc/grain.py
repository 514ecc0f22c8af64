"""Grain adapter: an imgproc pipeline as a per-record random map (optional extra
``pip install "imgproc-jax[grain]"``).

Two ways to put imgproc in a Grain input pipeline:

1. **Per record, on the host** (:class:`RandomAugment`): a ``grain.python.RandomMapTransform``
   that augments one record at a time in the loader's worker processes. By default the
   JAX key is derived from the ``np.random.Generator`` Grain gives each record, which
   Grain seeds with the sampler's seed plus the record's *position* in the sampled order:
   the output is the same with 0 or 2 workers, but changes with the shuffle, the epoch and
   the shard count (``ShardByJaxProcess`` on another number of hosts). With
   ``key=`` and ``index_field=`` the record's own global index (a field of the record)
   keys it instead, by the pipeline's key rule: the same whatever the order, workers or
   hosts. The transform pickles as its JSON spec and rebuilds (and compiles) the
   pipeline once per worker.

2. **Per batch of images of different sizes, on the host** (:class:`RandomAugmentBatch`
   after ``grain.python.Batch(n, batch_fn=ImageBatch("image"))``): records of a real
   dataset come in many sizes and cannot be stacked; :class:`ImageBatch` keeps the images
   of a batch as a list (and stacks the other fields), and :class:`RandomAugmentBatch`
   runs the pipeline or recipe on that list as one batch
   (:mod:`imgproc.pipeline.variable_size`): a few compiled programs per worker, whatever
   the sizes, and image ``i`` equal to the record augmented alone.
3. **Per batch, on the device** (recommended on GPU/TPU): let Grain batch the uint8
   images and call the jitted pipeline in the training step,
   ``pipe(batch, key=jax.random.fold_in(key, epoch), indices=record_indices)`` where
   ``record_indices`` are the records' global indices (e.g. from a
   ``MapWithIndexTransform``); image ``i`` then gets ``fold_in(key, indices[i])``,
   independent of the batch composition. See ``docs/augment.md``.

Compiled programs: the transforms turn on JAX's persistent compilation cache where they
run (:func:`imgproc.core.program_cache.enable_compilation_cache`: ``~/.cache/imgproc/jax``,
``IMGPROC_CACHE_DIR`` another folder, ``IMGPROC_CACHE_DIR=off`` none), so the workers of a
machine share one folder and each program compiles once per machine, not once per worker.

Example:
    >>> import numpy as np
    >>> import grain.python as pygrain
    >>> from imgproc.grain import RandomAugment
    >>> source = [np.full((8, 8, 3), i, np.uint8) for i in range(4)]
    >>> loader = pygrain.DataLoader(
    ...     data_source=source,
    ...     sampler=pygrain.IndexSampler(4, pygrain.NoSharding(), shuffle=False, num_epochs=1, seed=0),
    ...     operations=[RandomAugment([{"op": "random_brightness", "max_delta": 0.05}])],
    ...     worker_count=0)
    >>> [x.shape for x in loader]
    [(8, 8, 3), (8, 8, 3), (8, 8, 3), (8, 8, 3)]
"""

from __future__ import annotations

import json

import numpy as np

try:
    import grain.python as _pygrain

    _Base = _pygrain.RandomMapTransform
    _IMPORT_ERROR = None
except ImportError as e:  # grain is an optional extra
    _Base = object
    _IMPORT_ERROR = e

__all__ = ["ImageBatch", "RandomAugment", "RandomAugmentBatch", "record_key"]


def record_key(rng: np.random.Generator):
    """The JAX key of a record: ``jax.random.key`` of 32 bits drawn from Grain's per-record
    ``rng`` (the only draw made from it, so it is the same in every process)."""
    import jax

    return jax.random.key(int(rng.integers(0, 2**32, dtype=np.uint64)))


class RandomAugment(_Base):
    """Augment one record with an imgproc pipeline (``grain.python.RandomMapTransform``).

    Args:
        pipeline: an :class:`imgproc.Pipeline` or its spec (list of stages or JSON text).
            Stages must be spec-serialisable (registered ops, no plain callables).
        field: the key of the image in a dict record; None when the record is the image.
        layout: the image's layout (None infers HW / HWC).
        key: with ``index_field``: a ``jax.random.key(seed)`` or an int seed. Record ``i``
            (the value of its ``index_field``) is then augmented as image ``i`` of
            ``pipeline(batch, key=key, indices=...)`` would be (``stage_key(key, i, s)``),
            independent of Grain's per-record generator, so of the sampled order, the
            workers and the shard count.
        index_field: the field of a dict record holding its global index (an int).

    The record's image (uint8, uint16 or float; HW, HWC or CHW) is returned augmented as a
    NumPy array of the same dtype (float32 when the pipeline has a ``normalize`` or
    ``to_float`` stage, :meth:`imgproc.Pipeline.output_dtype`); other fields of a dict
    record are kept.
    """

    def __init__(self, pipeline, *, field=None, layout=None, key=None, index_field=None):
        if _IMPORT_ERROR is not None:
            raise ImportError('imgproc.grain needs Grain: pip install "imgproc-jax[grain]"') from _IMPORT_ERROR
        from imgproc.pipeline.pipeline import Pipeline

        if isinstance(pipeline, Pipeline):
            layout = pipeline.layout if layout is None else layout
            spec = pipeline.to_spec()
        elif isinstance(pipeline, (str, bytes)):
            spec = json.loads(pipeline)
        else:
            spec = pipeline
        self.spec_json = json.dumps(Pipeline.from_spec(spec).to_spec())  # validates; raises for callables
        self.field = field
        self.layout = layout
        if (key is None) != (index_field is None):
            raise ValueError("give key= and index_field= together (records keyed by their global index), "
                             "or neither (keyed by Grain's per-record generator)")
        if index_field is not None and field is None:
            raise ValueError("index_field= needs dict records: give field= the key of the image too")
        self.index_field = index_field
        self.key_data = None
        if key is not None:
            import jax

            from imgproc.core.validate import check_key

            self.key_data = np.asarray(jax.random.key_data(check_key(key)))  # pickles as NumPy
        self._pipe = None

    @property
    def pipeline(self):
        if self._pipe is None:
            from imgproc.core.program_cache import enable_compilation_cache
            from imgproc.pipeline.pipeline import Pipeline

            enable_compilation_cache()  # the workers of a machine share the compiled programs
            self._pipe = Pipeline.from_spec(self.spec_json, layout=self.layout)
        return self._pipe

    def __getstate__(self):
        return {"spec_json": self.spec_json, "field": self.field, "layout": self.layout,
                "index_field": self.index_field, "key_data": self.key_data}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._pipe = None

    def random_map(self, element, rng: np.random.Generator):
        image = element[self.field] if self.field is not None else element
        index = None if self.index_field is None else np.asarray([int(element[self.index_field])])
        return self._augmented(element, np.asarray(image), rng, index)

    def _augmented(self, element, images, rng, indices):
        """``images`` (one image, or a list) through the pipeline, keyed by Grain's
        generator, or by ``key`` and the records' ``indices`` (from ``index_field``), and
        put back into ``element``."""
        if indices is None:
            out = self.pipeline(images, key=record_key(rng))
        else:
            import jax

            out = self.pipeline(images, key=jax.random.wrap_key_data(self.key_data), indices=indices)
        out = np.asarray(out)
        if self.field is None:
            return out
        element = dict(element)
        element[self.field] = out
        return element


class ImageBatch:
    """A ``batch_fn`` for ``grain.python.Batch`` that keeps the images of a batch as a list
    (they may differ in size) and stacks every other field of dict records as Grain does.

    Args:
        field: the key of the image in a dict record; None when the record is the image.
    """

    def __init__(self, field=None):
        self.field = field

    def __call__(self, records):
        if self.field is None:
            return [np.asarray(r) for r in records]
        out = {k: np.stack([np.asarray(r[k]) for r in records]) for k in records[0] if k != self.field}
        out[self.field] = [np.asarray(r[self.field]) for r in records]
        return out


class RandomAugmentBatch(RandomAugment):
    """Augment a batch of records whose images may differ in size
    (``grain.python.RandomMapTransform``), after ``grain.python.Batch(n,
    batch_fn=ImageBatch(field))``: the batch's list of images goes through the pipeline
    as one call (:meth:`imgproc.Pipeline.__call__` with a list), which needs a pipeline
    whose first stage sets a fixed size (``random_resized_crop``, ``resize``, ...). The
    result is one stacked ``(n, h, w, C)`` array in ``field``.

    Args: as :class:`RandomAugment`. With ``key`` and ``index_field``, record ``i`` (its
    ``index_field``) is augmented as image ``i`` of the pipeline with those indices,
    whatever the batch it falls in; otherwise the batch's key comes from Grain's generator
    and the images take indices ``0..n-1`` of their batch.
    """

    def random_map(self, element, rng: np.random.Generator):
        images = element[self.field] if self.field is not None else element
        indices = None if self.index_field is None else np.asarray(element[self.index_field]).reshape(-1)
        return self._augmented(element, list(images), rng, indices)
