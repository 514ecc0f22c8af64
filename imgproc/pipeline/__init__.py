"""The pipeline layer: :class:`~imgproc.pipeline.pipeline.Pipeline` (a spec compiled into one
program), how it runs (:mod:`.execution`: chunks, buckets, one slice per core), its random
stages (:mod:`.random_runs`), lists of images of different sizes (:mod:`.variable_size`),
several devices (:mod:`.sharding`), host batches uploaded ahead (:mod:`.prefetch`), and the
ready-made pipelines: :mod:`.presets`, :mod:`.recipes`.
"""
