"""The thread pool that runs a batch's slices, one per core.

XLA:CPU runs a per-image loop on one core; the pipeline splits such a batch into one slice
per core and runs the slices here (:func:`in_threads`).
"""

from __future__ import annotations

import concurrent.futures
import threading

from imgproc.cpu.cores import cpu_cores

__all__ = ["in_threads"]

_POOL = []
_POOL_PREFIX = "imgproc"


def _thread_pool():
    if not _POOL:
        _POOL.append(concurrent.futures.ThreadPoolExecutor(cpu_cores(), thread_name_prefix=_POOL_PREFIX))
    return _POOL[0]


def in_threads(run, items, signature, compiled: set) -> list:
    """``[run(item) for item in items]``, run in the pool's threads, one per core. The
    first item of each program signature (``signature(item)``) not yet in ``compiled`` runs
    alone first, so that each program is traced and compiled once (then added to
    ``compiled``). Called from one of the pool's own threads, the items run one after the
    other instead of waiting on the pool they occupy."""
    items = list(items)
    if threading.current_thread().name.startswith(_POOL_PREFIX):
        return [run(item) for item in items]
    outs = {}
    for k, item in enumerate(items):  # compile each new signature once, before going parallel
        sig = signature(item)
        if sig not in compiled:
            outs[k] = run(item)
            compiled.add(sig)
    todo = [k for k in range(len(items)) if k not in outs]
    for k, out in zip(todo, _thread_pool().map(lambda k: run(items[k]), todo)):
        outs[k] = out
    return [outs[k] for k in range(len(items))]


