"""The pipeline layer: :class:`~imgproc.pipeline.pipeline.Pipeline` (a spec compiled into one
program), how it runs (:mod:`.execution`: chunks, buckets, one slice per core), its random
stages (:mod:`.random_runs`), targets that follow the image (:mod:`.targets`), several
devices (:mod:`.sharding`), and the ready-made pipelines: :mod:`.presets`, :mod:`.recipes`.
"""
