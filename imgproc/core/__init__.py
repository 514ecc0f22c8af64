"""The core every op stands on: the op registry (:mod:`.registry`), argument validation
(:mod:`.validate`), layouts and dtypes (:mod:`.arrays`), the image argument's checks
(:mod:`.images`), the caller's array type (:mod:`.array_type`), the key rule
``fold_in(key, index)`` (:mod:`.keys`), boundary modes (:mod:`.boundary`), eager calls
compiled once per structure (:mod:`.eager`, :mod:`.program_cache`) and the batch's
partition over devices (:mod:`.devices`).

Imports only :mod:`imgproc.errors` and the CPU seam :mod:`imgproc.cpu` below it.
"""
