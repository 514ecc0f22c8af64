"""Output buffers written again: an eager call on a NumPy image writes its result into the
buffer of an earlier result that the caller has dropped, instead of into fresh memory.

Why. On CPU every output of a few MB that XLA allocates is fresh memory from the kernel,
zeroed page by page on first touch (4 KiB pages: transparent huge pages are ``madvise``
on most systems, and XLA's allocations are not advised). For a 2048x2048x3 float32 blur
that zeroing costs more than the blur (why: benchmarks/NOTES.md, "The eager call"). NumPy
advises huge pages for its own large arrays, which is part of why OpenCV is faster there.
:func:`imgproc.reuse_host_memory` removes the cost for the whole process; this module
removes the output's share without touching the process's allocator.

How. A program made with :class:`IntoBuffer` takes one more argument, ``into``, which it
donates and does not read: XLA writes the program's array output into that buffer. The
buffer is one that an earlier such program wrote and whose NumPy view (the caller's
result, :func:`imgproc.core.array_type._host_view`) has since been freed: the view's owner hands
it back here (:func:`keep`). A loop that drops each result before the next call (``for
f in files: save(blur(load(f)))``, or keeping the last few) then writes the same few
buffers over and over. When none is free, ``into`` is a new buffer (fresh pages, the
cost as before, plus a copy).

What it keeps. Only buffers these programs wrote (never an array that may share the
caller's memory), on one CPU device, of at least :data:`MIN_BYTES`; at most
:data:`KEPT_PER_SHAPE` per shape and dtype and :data:`KEPT_BYTES` in all, the oldest
dropped first. :func:`release` (``imgproc.release_output_buffers()``) frees them all.
Results handed out as ``jax.Array`` are the caller's to keep and are never taken back, so
calls on JAX arrays write only their scratch (below) into kept buffers.

Scratch. A large intermediate that the program materialises anyway (a separable blur's
first pass, 50 MB for a 2048x2048x3 float32 image) is fresh memory too, and no caller
ever sees it. The code that makes one marks it with :func:`scratch` while it is traced;
an :class:`IntoBuffer` program then returns it as one more output, written into one more
donated kept buffer, and puts that buffer straight back. Marking changes where XLA writes
the array, never its values; outside an :class:`IntoBuffer` trace (plain ``jit``,
``vmap``, a loop body) it does nothing.

Host input read in place. JAX's CPU client reads a NumPy argument in place only when its
data is 64-byte aligned, and NumPy's large arrays are usually 16 bytes past a boundary.
An :class:`IntoBuffer` program given such an array reads it in place all the same: its
argument is a read-only flat view that starts at the boundary before the data
(:func:`aligned_flat_view`), and the program's first step, a slice and a reshape that XLA
fuses into the loops that read the image, finds the image in it.

Host staging. Elsewhere, a NumPy argument that is not 64-byte aligned is copied into an
aligned array before JAX reads it in place (:func:`imgproc.core.images.host_aligned`); that
copy is fresh memory too. :func:`host_buffer` hands out the memory of an earlier staging copy
that nothing references any more (no view of it lives: JAX holds its arguments' NumPy
arrays while it reads them, and a result that is one of them keeps it too), at most
:data:`STAGING_PER_SHAPE` per shape and dtype, counted in :data:`KEPT_BYTES`. The
joined result of a batch split over the cores (:func:`imgproc.pipeline.execution.run_parts`) is
host memory the CPU client uses in place too, and comes from the same place: once the
caller drops that result, the next split batch of its shape is joined into it.
"""

from __future__ import annotations

import collections
import functools
import sys
import threading
import weakref

import jax
import numpy as np

__all__ = ["HOST_ALIGNMENT", "IntoBuffer", "KEPT_BYTES", "KEPT_PER_SHAPE", "MIN_BYTES", "STAGING_PER_SHAPE",
           "aligned_empty", "aligned_flat_view", "aligned_view", "flat_argument", "flat_view_offset", "from_flat",
           "host_buffer", "keep", "kept", "kept_as_scratch", "kept_bytes", "on_one_cpu", "release", "scratch"]

MIN_BYTES = 1 << 20  # smaller results are copied out (imgproc.core.array_type.VIEW_MIN_BYTES): nothing to take back
KEPT_PER_SHAPE = 4  # a threaded batch split writes two at once; a caller may hold the last one or two
KEPT_BYTES = 1 << 30
STAGING_PER_SHAPE = 2  # JAX lets go of the last call's argument only after the next call has begun
HOST_ALIGNMENT = 64  # bytes: what JAX's CPU client needs to use a NumPy buffer in place

_lock = threading.Lock()
_kept: collections.OrderedDict = collections.OrderedDict()  # (shape, dtype) -> [jax.Array], oldest first
_written: dict = {}  # id(array) -> weakref: the outputs IntoBuffer programs wrote (the only ones kept)
_staging: collections.OrderedDict = collections.OrderedDict()  # (shape, dtype) -> [owning uint8 NumPy buffer]


def _key(shape, dtype):
    return tuple(int(n) for n in shape), np.dtype(dtype).str


def _held() -> int:
    """Bytes in kept buffers (the caller holds the lock)."""
    return (sum(a.nbytes for arrays in _kept.values() for a in arrays)
            + sum(b.nbytes for buffers in _staging.values() for b in buffers))


def kept_bytes() -> int:
    """Bytes held in kept buffers now (outputs, scratch and host staging)."""
    with _lock:
        return _held()


def kept(*, staging: bool = False) -> dict:
    """How many buffers are kept now, by ``(shape, dtype string)``: XLA buffers (outputs
    and scratch), or with ``staging`` the host staging buffers."""
    with _lock:
        return {key: len(group) for key, group in (_staging if staging else _kept).items() if group}


def keep(array) -> None:
    """Take back ``array`` (an output an :class:`IntoBuffer` program wrote, which nothing
    else references any more) for a later call of its shape; anything else is ignored."""
    ref = _written.pop(id(array), None)
    if ref is None or ref() is not array or array.is_deleted():
        return
    _put(array)


def _put(array) -> None:
    key = _key(array.shape, array.dtype)
    with _lock:
        arrays = _kept.setdefault(key, [])
        arrays.append(array)
        _kept.move_to_end(key)
        if len(arrays) > KEPT_PER_SHAPE:
            arrays.pop(0)
        _bound()


def _bound() -> None:
    """Drop the oldest kept buffers until :data:`KEPT_BYTES` holds (the caller holds the lock).
    A group emptied elsewhere is removed on the way, never popped from."""
    total = _held()
    for pool in (_kept, _staging):
        while total > KEPT_BYTES and pool:
            oldest, group = next(iter(pool.items()))
            if group:
                total -= group.pop(0).nbytes
            if not group:
                del pool[oldest]


def host_buffer(shape, dtype) -> np.ndarray:
    """An uninitialised C-contiguous NumPy array of ``shape`` and ``dtype`` whose data is
    64-byte aligned: the memory of an earlier one when no view of it lives any more
    (module docstring, "Host staging"), else new memory (kept for later, for arrays of at
    least :data:`MIN_BYTES`)."""
    dtype = np.dtype(dtype)
    if int(np.prod(shape)) * dtype.itemsize < MIN_BYTES:
        return aligned_empty(shape, dtype)
    key = _key(shape, dtype)
    with _lock:
        buffers = _staging.setdefault(key, [])
        _staging.move_to_end(key)
        # free: referenced by the list, the loop variable and getrefcount's argument only
        free = next((b for b in buffers if sys.getrefcount(b) <= 3), None)
        if free is not None:
            return aligned_view(free, shape, dtype)
        out = aligned_empty(shape, dtype)
        buffers.append(out.base)
        if len(buffers) > STAGING_PER_SHAPE:
            buffers.pop(0)
        _bound()
        return out


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialised C-contiguous NumPy array whose data is 64-byte aligned (see
    :func:`imgproc.core.images.host_aligned`); its ``base`` is the owning buffer (:func:`aligned_view`)."""
    dtype = np.dtype(dtype)
    return aligned_view(np.empty(int(np.prod(shape)) * dtype.itemsize + HOST_ALIGNMENT, np.uint8), shape, dtype)


def aligned_view(buffer: np.ndarray, shape, dtype) -> np.ndarray:
    """The C-contiguous array of ``shape`` and ``dtype`` at the first 64-byte boundary of
    ``buffer`` (uint8, :data:`HOST_ALIGNMENT` bytes longer than the array)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    start = (-buffer.ctypes.data) % HOST_ALIGNMENT
    return buffer[start:start + nbytes].view(dtype).reshape(shape)


class _HostMemory:
    """Read-only host memory as NumPy's array interface describes it; NumPy's view of it
    keeps this object, and through :attr:`owner` the array the memory belongs to, alive."""

    def __init__(self, owner: np.ndarray, address: int, size: int):
        self.owner = owner
        self.__array_interface__ = {"data": (address, True), "shape": (size,), "typestr": owner.dtype.str,
                                    "version": 3}


def aligned_flat_view(array: np.ndarray):
    """``(flat, offset)``: a read-only 1-D view of ``array``'s memory that starts at the
    64-byte boundary at or before its data, which JAX's CPU client reads in place, and
    where the array starts in it (``flat[offset:offset + array.size]`` is
    ``array.ravel()``). ``None`` when ``array`` is aligned already (or empty), not
    C-contiguous, its data is not a whole number of elements past the boundary, or its
    dtype is float64 (which JAX converts to float32: a copy anyway).

    Float images too since the rows pass of large kernels runs in two loops: a float
    image's finite check then reads it without writing an aligned copy, and the blurs
    read it at the skew faster than they read the copy (why: benchmarks/NOTES.md,
    "Misaligned input read in place").

    The view begins up to 63 bytes before ``array``'s data. Those bytes lie in the same
    memory page as the data (a page is a multiple of 64 bytes), so they can be read, and
    nothing reads them: the program slices them off (:class:`IntoBuffer`).

    Example:
        >>> import numpy as np
        >>> buffer = np.arange(40, dtype=np.int32)
        >>> base = aligned_view(buffer.view(np.uint8), (24,), np.int32)
        >>> flat, offset = aligned_flat_view(base[4:12])
        >>> offset, flat.flags.writeable, bool((flat[offset:] == base[4:12]).all())
        (4, False, True)
    """
    offset = flat_view_offset(array)
    if offset is None:
        return None
    start = array.ctypes.data - offset * array.itemsize
    return interface_array(_HostMemory(array, start, array.size + offset), array.dtype), offset


def interface_array(owner, dtype) -> np.ndarray:
    """NumPy's array of ``owner``'s ``__array_interface__``, as ``dtype``: the interface
    names a bfloat16 (ml_dtypes) only as raw 2-byte values, so such an array is viewed
    back (other dtypes come as they are, the array's base still ``owner``)."""
    array = np.asarray(owner)
    return array if array.dtype == dtype else array.view(dtype)


def flat_view_offset(array: np.ndarray):
    """Where ``array`` starts in its :func:`aligned_flat_view` (in elements), or ``None``
    when it has none (the cases that docstring lists): the rule alone, no view made."""
    skew = array.ctypes.data % HOST_ALIGNMENT
    if (skew == 0 or array.size == 0 or not array.flags.c_contiguous or skew % array.itemsize
            or array.dtype == np.float64):
        return None
    return skew // array.itemsize


def flat_argument(image):
    """``(argument, view)`` for a program that reads ``image`` through :func:`from_flat`:
    a misaligned NumPy image's :func:`aligned_flat_view` and ``(offset, shape)``;
    otherwise ``image`` itself and ``None``."""
    flat = aligned_flat_view(image) if isinstance(image, np.ndarray) else None
    return (image, None) if flat is None else (flat[0], (flat[1], tuple(image.shape)))


def from_flat(image, view):
    """The image in an :func:`aligned_flat_view` (``view``: its offset and shape), or
    ``image`` itself when ``view`` is ``None``; traced, XLA fuses it into the readers."""
    if view is None:
        return image
    offset, shape = view
    return image[offset:offset + int(np.prod(shape))].reshape(shape)


def _take(shape, dtype):
    key = _key(shape, dtype)
    with _lock:
        arrays = _kept.get(key)
        if not arrays:
            return None
        array = arrays.pop()
        if not arrays:  # no empty groups: _bound drops the oldest group's first buffer
            del _kept[key]
        return array


def release() -> int:
    """Free every kept output and staging buffer; returns the bytes freed (memory a
    caller's result still uses stays with that result)."""
    with _lock:
        freed = _held()
        _kept.clear()
        _staging.clear()
    return freed


def _forget(key, _ref):
    _written.pop(key, None)


_marking = threading.local()  # .trace, .arrays: the IntoBuffer trace that collects scratch()


def scratch(array):
    """Mark ``array``, an intermediate of the program being traced, as scratch (module
    docstring): inside an :class:`IntoBuffer` trace, and only at its own level (not in a
    ``vmap`` or loop body traced within it), it is written into a kept buffer. Returns
    ``array``."""
    if kept_as_scratch(array):
        _marking.arrays.append(array)
    return array


def kept_as_scratch(array) -> bool:
    """Whether :func:`scratch` would write ``array`` into a kept buffer (not XLA's fresh
    memory): a lowering may choose its form by that."""
    trace = getattr(_marking, "trace", None)
    return trace is not None and getattr(array, "_trace", None) is trace and array.size * array.dtype.itemsize >= MIN_BYTES


def _call(fn, image, args, kwargs, view, reads_flat: bool):
    """``fn`` on the image found in a flat view (:func:`from_flat`), or, for a program that
    ``reads_flat``, on the argument itself and its ``view``."""
    if reads_flat:
        return fn(image, *args, view=view, **kwargs)
    return fn(from_flat(image, view), *args, **kwargs)


def _run_viewed(fn, reads_flat, image, *args, view, **kwargs):
    """``fn(image, *args, **kwargs)``, the image found in a flat view first (:func:`_call`)."""
    return _call(fn, image, args, kwargs, view, reads_flat)


def _run_into(fn, reads_flat, image, *args, into, scratch_into, view, **kwargs):
    """``(fn(image, *args, **kwargs), the arrays it marked with scratch())``, the image
    found in a flat view first (:func:`_call`). ``into`` and ``scratch_into`` are
    donated only: their memory receives the outputs."""
    del into, scratch_into
    from jax._src import core

    outer = getattr(_marking, "trace", None), getattr(_marking, "arrays", None)
    _marking.trace, _marking.arrays = core.trace_ctx.trace, []
    try:
        out = _call(fn, image, args, kwargs, view, reads_flat)
        return out, tuple(_marking.arrays)
    finally:
        _marking.trace, _marking.arrays = outer


class IntoBuffer:
    """``jax.jit(fn, **jit_options)`` whose array output (the first, when ``fn`` returns a
    tuple) is written into a kept buffer when its first argument is a NumPy array on CPU,
    and whose scratch arrays are, when it is a NumPy array or a ``jax.Array`` on one CPU
    device (module docstring).

    The output's shape and dtype, and the arrays the program marks as scratch, are learned
    once per argument signature by tracing with a guess, ``out_like(image)`` (default: the
    first argument's own shape and dtype, as for a filter), and no scratch buffers; the
    real call reuses that trace when nothing is marked and traces once more when something
    is (its scratch buffers are arguments). When the guess is wrong (a program that crops
    or resizes), that signature runs the plain program: one more trace, once.

    A NumPy image that is not 64-byte aligned is read in place all the same, through a
    flat view (module docstring, "Host input read in place"; one more program per such
    image signature). With ``reads_flat``, ``fn`` takes that view itself: it is called as
    ``fn(argument, *args, view=view, **kwargs)`` with ``view`` None (the argument is the
    image) or as for :func:`from_flat`, for a program whose first pass reads the image
    through several slices (XLA copies the image out of the view before such a pass; the
    pass can take its slices from the view directly instead).

    ``program(image, *args, **kwargs)``; ``program.plain`` is the jitted ``fn`` itself.
    """

    def __init__(self, fn, *, out_like=None, reads_flat=False, **jit_options):
        self.plain = jax.jit(fn, **jit_options)
        options = dict(jit_options, static_argnames=(*jit_options.get("static_argnames", ()), "view"))
        self._viewed = jax.jit(functools.partial(_run_viewed, fn, reads_flat), **options)
        self._into = jax.jit(functools.partial(_run_into, fn, reads_flat), donate_argnames=("into", "scratch_into"),
                             keep_unused=True, **options)
        self._out_like = out_like or (lambda image: jax.ShapeDtypeStruct(image.shape, image.dtype))
        self._outs = {}  # argument signature -> (output's ShapeDtypeStruct, scratch ones), or None: plain program

    def __call__(self, image, *args, **kwargs):
        host = isinstance(image, np.ndarray)
        if not (host or on_one_cpu(image)) or image.nbytes < MIN_BYTES or jax.default_backend() != "cpu":
            return self.plain(image, *args, **kwargs)
        read, view = flat_argument(image)
        signature = _signature((image, args, kwargs))
        if signature not in self._outs:
            guess = self._out_like(image)
            out_info, scratch_info = self._into.trace(read, *args, into=guess, scratch_into=(), view=view,
                                                      **kwargs).out_info
            out = jax.tree_util.tree_leaves(out_info)[0]
            right = (out.shape, out.dtype) == (guess.shape, guess.dtype) and out.size * out.dtype.itemsize >= MIN_BYTES
            scratch_structs = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in scratch_info)
            self._outs[signature] = (guess, scratch_structs) if right else None
        structs = self._outs[signature]
        if structs is None or not (host or structs[1]):
            if view is None:
                return self.plain(image, *args, **kwargs)
            return self._viewed(read, *args, view=view, **kwargs)
        # a jax.Array's result is the caller's for good: only the scratch is written again
        into = _take_or_new(structs[0]) if host else None
        scratch_into = tuple(_take_or_new(s) for s in structs[1])
        out, scratch_out = self._into(read, *args, into=into, scratch_into=scratch_into, view=view, **kwargs)
        for array in scratch_out:  # nothing else references them
            _put(array)
        if host:
            first = jax.tree_util.tree_leaves(out)[0]
            _written[id(first)] = weakref.ref(first, functools.partial(_forget, id(first)))
        return out


def on_one_cpu(image) -> bool:
    """Whether ``image`` is a concrete ``jax.Array`` on one CPU device."""
    if not isinstance(image, jax.Array) or isinstance(image, jax.core.Tracer):
        return False
    devices = image.devices()
    return len(devices) == 1 and next(iter(devices)).platform == "cpu"


def _take_or_new(struct):
    """A kept buffer of ``struct``'s shape and dtype, or else a new one (a copy of
    uninitialised memory: no program to compile per shape, as zeros would be)."""
    kept = _take(struct.shape, struct.dtype)
    return kept if kept is not None else jax.device_put(np.empty(struct.shape, struct.dtype))


def _signature(tree):
    """What selects a compiled program: the tree's structure, each array leaf's shape and
    dtype, every other leaf's value (static options)."""
    leaves, structure = jax.tree_util.tree_flatten(tree)
    return structure, tuple((tuple(x.shape), str(x.dtype)) if hasattr(x, "shape") and hasattr(x, "dtype") else x
                            for x in leaves)
