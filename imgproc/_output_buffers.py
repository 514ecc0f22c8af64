"""Output buffers written again: an eager call on a NumPy image writes its result into the
buffer of an earlier result that the caller has dropped, instead of into fresh memory.

Why. On CPU every output of a few MB that XLA allocates is fresh memory from the kernel,
zeroed page by page on first touch (4 KiB pages: transparent huge pages are ``madvise``
on most systems, and XLA's allocations are not advised). For a 2048x2048x3 float32 blur
that zeroing costs more than the blur (benchmarks/NOTES.md, "The eager call"). NumPy
advises huge pages for its own large arrays, which is part of why OpenCV is faster there.
:func:`imgproc.reuse_host_memory` removes the cost for the whole process; this module
removes the output's share without touching the process's allocator.

How. A program made with :class:`IntoBuffer` takes one more argument, ``into``, which it
donates and does not read: XLA writes the program's array output into that buffer. The
buffer is one that an earlier such program wrote and whose NumPy view (the caller's
result, :func:`imgproc._types._host_view`) has since been freed: the view's owner hands
it back here (:func:`keep`). A loop that drops each result before the next call (``for
f in files: save(blur(load(f)))``, or keeping the last few) then writes the same few
buffers over and over. When none is free, ``into`` is a new buffer (fresh pages, the
cost as before, plus a copy).

What it keeps. Only buffers these programs wrote (never an array that may share the
caller's memory), on one CPU device, of at least :data:`MIN_BYTES`; at most
:data:`KEPT_PER_SHAPE` per shape and dtype and :data:`KEPT_BYTES` in all, the oldest
dropped first. :func:`release` (``imgproc.release_output_buffers()``) frees them all.
Results handed out as ``jax.Array`` are the caller's to keep and are never taken back, so
calls on JAX arrays run the plain program.
"""

from __future__ import annotations

import collections
import functools
import threading
import weakref

import jax
import numpy as np

__all__ = ["IntoBuffer", "KEPT_BYTES", "KEPT_PER_SHAPE", "MIN_BYTES", "keep", "kept_bytes", "release"]

MIN_BYTES = 1 << 20  # smaller results are copied out (imgproc._types.VIEW_MIN_BYTES): nothing to take back
KEPT_PER_SHAPE = 4  # a threaded batch split writes two at once; a caller may hold the last one or two
KEPT_BYTES = 1 << 30

_lock = threading.Lock()
_kept: collections.OrderedDict = collections.OrderedDict()  # (shape, dtype) -> [jax.Array], oldest first
_written: dict = {}  # id(array) -> weakref: the outputs IntoBuffer programs wrote (the only ones kept)


def _key(shape, dtype):
    return tuple(int(n) for n in shape), np.dtype(dtype).str


def _held() -> int:
    """Bytes in kept buffers (the caller holds the lock)."""
    return sum(a.nbytes for arrays in _kept.values() for a in arrays)


def kept_bytes() -> int:
    """Bytes held in kept buffers now."""
    with _lock:
        return _held()


def keep(array) -> None:
    """Take back ``array`` (an output an :class:`IntoBuffer` program wrote, which nothing
    else references any more) for a later call of its shape; anything else is ignored."""
    ref = _written.pop(id(array), None)
    if ref is None or ref() is not array or array.is_deleted():
        return
    key = _key(array.shape, array.dtype)
    with _lock:
        arrays = _kept.setdefault(key, [])
        arrays.append(array)
        _kept.move_to_end(key)
        if len(arrays) > KEPT_PER_SHAPE:
            arrays.pop(0)
        total = _held()
        while total > KEPT_BYTES and _kept:
            oldest, group = next(iter(_kept.items()))
            total -= group.pop(0).nbytes
            if not group:
                del _kept[oldest]


def _take(shape, dtype):
    with _lock:
        arrays = _kept.get(_key(shape, dtype))
        return arrays.pop() if arrays else None


def release() -> int:
    """Free every kept output buffer; returns the bytes freed."""
    with _lock:
        freed = _held()
        _kept.clear()
    return freed


def _forget(key, _ref):
    _written.pop(key, None)


def _run_ignoring(fn, *args, into, **kwargs):
    del into  # donated only: its memory receives the output
    return fn(*args, **kwargs)


class IntoBuffer:
    """``jax.jit(fn, **jit_options)`` whose array output (the first, when ``fn`` returns a
    tuple) is written into a kept buffer when its first argument is a NumPy array on CPU
    (module docstring).

    The output's shape and dtype are learned once per argument signature by tracing with
    a guess, ``out_like(image)`` (default: the first argument's own shape and dtype, as for
    a filter), and the real call reuses that trace. When the guess is wrong (a program
    that crops or resizes), that signature runs the plain program: one more trace, once.

    ``program(image, *args, **kwargs)``; ``program.plain`` is the jitted ``fn`` itself.
    """

    def __init__(self, fn, *, out_like=None, **jit_options):
        self.plain = jax.jit(fn, **jit_options)
        self._into = jax.jit(functools.partial(_run_ignoring, fn), donate_argnames=("into",), keep_unused=True,
                             **jit_options)
        self._out_like = out_like or (lambda image: jax.ShapeDtypeStruct(image.shape, image.dtype))
        self._outs = {}  # argument signature -> the output's ShapeDtypeStruct, or None: plain program

    def __call__(self, image, *args, **kwargs):
        if not isinstance(image, np.ndarray) or image.nbytes < MIN_BYTES or jax.default_backend() != "cpu":
            return self.plain(image, *args, **kwargs)
        signature = _signature((image, args, kwargs))
        if signature not in self._outs:
            guess = self._out_like(image)
            out = jax.tree_util.tree_leaves(self._into.trace(image, *args, into=guess, **kwargs).out_info)[0]
            right = (out.shape, out.dtype) == (guess.shape, guess.dtype) and out.size * out.dtype.itemsize >= MIN_BYTES
            self._outs[signature] = guess if right else None
        out_struct = self._outs[signature]
        if out_struct is None:
            return self.plain(image, *args, **kwargs)
        into = _take(out_struct.shape, out_struct.dtype)
        if into is None:  # a copy of uninitialised memory: no program to compile per shape, as zeros would be
            into = jax.device_put(np.empty(out_struct.shape, out_struct.dtype))
        out = self._into(image, *args, into=into, **kwargs)
        first = jax.tree_util.tree_leaves(out)[0]
        _written[id(first)] = weakref.ref(first, functools.partial(_forget, id(first)))
        return out


def _signature(tree):
    """What selects a compiled program: the tree's structure, each array leaf's shape and
    dtype, every other leaf's value (static options)."""
    leaves, structure = jax.tree_util.tree_flatten(tree)
    return structure, tuple((tuple(x.shape), str(x.dtype)) if hasattr(x, "shape") and hasattr(x, "dtype") else x
                            for x in leaves)
