"""An op called eagerly runs as one compiled program, its float options as program arguments.

Why. A JAX function called on concrete arrays runs op by op: each primitive is its own
small program over the whole image or batch, with fresh temporaries, many times slower
than the same call inside ``jit`` (why: benchmarks/NOTES.md, "Eager augmentation ops").

How. :func:`run_compiled` runs ``fn(*arrays, **options)``, when nothing is traced and every option
is a Python value (numbers, strings, sequences, dicts, stages), as a program compiled once
per op and option structure (:data:`PROGRAMS`, the last 64 kept):

* Float options are arguments of the program, so a new angle, factor or sigma does not
  compile again (the design's rule 4). Ints (sizes, paddings, counts, bits) and bools are
  compiled in: an op may need them while tracing, and ``max_value`` (named in
  :data:`COMPILED_IN`) picks a definition (integer levels or floats), not a value, so it is
  compiled in whatever its type. An op that needs a float while tracing fails to trace with
  it as an argument; that is found at its first call and remembered (:data:`LEVELS`), and
  its floats are then compiled in too (one program per value).
* An op's checks let traced numbers through (:func:`imgproc.core.validate.check_number`), so
  the options are first checked on their values by tracing the op without computing
  anything (``jax.eval_shape``), once per op, options and shapes (:data:`CHECKED`, the
  last 4096 kept). Bad options raise the op's own error, as before.
* Options that hold arrays (per-image values) are not compiled: the op runs op by op.

:func:`compiled_when_eager` checks a NumPy image first (:func:`imgproc.core.images.check_image`:
finite values, the aligned copy, the layout warning), since inside the program it is a
tracer. Only ops whose floats are values are decorated; ops that pick a path by whether an
option is traced (``resized_crop``, which compiles its own program for a known box: its
tap counts come from the box), whose kernel is built from a float (``motion_blur``), or
that only move data (crops, flips, pads, which already ran fast) are not. The resizes
are: their weights must be computed as inside ``jit`` (XLA contracts multiply-adds in a
compiled program, not op by op), so that an eager call and a list of images of different
sizes (:mod:`imgproc.pipeline.variable_size`) give the same bits.

The program computes what the op computes inside the caller's ``jit``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from imgproc.core.devices import freeze
from imgproc.core.images import check_image
from imgproc.core.program_cache import KeptPrograms
from imgproc.core.validate import is_traced
from imgproc.cpu import flat_argument, from_flat

__all__ = ["CHECKED", "COMPILED_IN", "LEVELS", "PROGRAMS", "compiled_when_eager", "run_compiled"]

PROGRAMS = KeptPrograms(64)  # (op, structure, level, static options) -> jitted program
LEVELS = KeptPrograms(1024)  # (op, structure) -> the level that traced: floats as arguments or none
CHECKED = KeptPrograms(4096)  # (op, options, shapes) -> True: their checks ran

# which option values are program arguments, tried in this order
_LEVELS = ("floats", "none")
COMPILED_IN = frozenset({"max_value"})  # options that pick a definition: always compiled in


def _floats(leaves, paths):
    """Which option leaves are program arguments at the level ``"floats"`` (at ``"none"``,
    none is)."""
    return [isinstance(v, float) and not (set(p) & COMPILED_IN) for v, p in zip(leaves, paths)]


def _names(path):
    return tuple(getattr(k, "key", None) for k in path)


def run_compiled(op, fn, arrays, options):
    """``fn(*arrays, **options)``; compiled as the module docstring says when ``arrays``
    are concrete and ``options`` hold no array. ``op`` names the op in the caches (the
    function itself, or a tuple of what makes it)."""
    flat, tree = jax.tree_util.tree_flatten_with_path(options)
    leaves = [v for _, v in flat]
    paths = [_names(p) for p, _ in flat]
    frozen = [freeze(v) for v in leaves]
    if is_traced(tuple(arrays)) or any(f is None for f in frozen):
        return fn(*arrays, **options)
    shapes = tuple((a.shape, str(a.dtype)) for a in arrays)
    floats = _floats(leaves, paths)
    kinds = tuple(("float",) if m else f for m, f in zip(floats, frozen))
    known = LEVELS.find((op, tree, kinds))
    for trial in _LEVELS[_LEVELS.index(known) if known is not None else 0:]:
        mask = floats if trial == "floats" else [False] * len(leaves)
        if any(mask) and CHECKED.find((op, tree, tuple(frozen), shapes)) is None:
            jax.eval_shape(functools.partial(fn, **options), *arrays)  # the checks, on the values
            CHECKED.get((op, tree, tuple(frozen), shapes), lambda: True)
        static = tuple(None if m else f for m, f in zip(mask, frozen))
        program = PROGRAMS.get((op, tree, trial, static),
                               lambda: jax.jit(functools.partial(_with_numbers, fn, tree, leaves, mask)))
        numbers = [v for v, m in zip(leaves, mask) if m]
        try:
            out = program(tuple(arrays), numbers)
        except (TypeError, ValueError, IndexError):  # a float the op needs while tracing
            if not any(mask):  # every option compiled in: the op's own error
                raise
            PROGRAMS.drop((op, tree, trial, static))
            continue
        if trial != known:
            LEVELS.drop((op, tree, kinds))
            LEVELS.get((op, tree, kinds), lambda: trial)
        return out
    raise AssertionError("unreachable: the last level compiles every option in")


def _with_numbers(fn, tree, leaves, mask, arrays, numbers):
    """``fn(*arrays, **options)`` with the masked option leaves taken from ``numbers``."""
    given = iter(numbers)
    values = [next(given) if m else v for v, m in zip(leaves, mask)]
    return fn(*arrays, **jax.tree_util.tree_unflatten(tree, values))


def compiled_when_eager(fn):
    """Decorate a deterministic op ``fn(image, *args, **options)`` (below
    :func:`imgproc.core.array_type.callers_type`): called on a concrete image, it runs through
    :func:`run_compiled`; traced, as it is."""

    @functools.wraps(fn)
    def wrapper(image, *args, **options):
        target = _positional(fn, len(args)) if args else fn
        options = {"args": args, **options} if args else options
        if isinstance(image, np.ndarray):  # checked; read in place, a misaligned one through its flat view
            image, view = flat_argument(check_image(image, options.get("layout"), read_in_place=True)[0])
            if view is not None:  # NumPy's and PIL's arrays start 16-48 bytes past a boundary: JAX would copy
                return run_compiled(fn, _reading_flat(target), (image,), {"view": view, **options})
        return run_compiled(fn, target, (image,), options)

    return wrapper


@functools.lru_cache(maxsize=None)
def _reading_flat(fn):
    """``fn`` on the image in a misaligned NumPy image's aligned flat view (``view``: its
    offset and shape, static; :func:`imgproc.cpu.from_flat`, which XLA fuses into the
    loops that read the image): JAX's copy, 1.2-1.4 ms on a 12.6 MB image, not made."""

    def read(flat, view, **options):
        return fn(from_flat(flat, view), **options)

    return read


@functools.lru_cache(maxsize=None)
def _positional(fn, count):
    """``fn`` taking its ``count`` positional options as one ``args`` keyword (so they are
    options of :func:`run_compiled`, like the keyword ones)."""

    def with_args(image, args, **options):
        return fn(image, *args, **options)

    return with_args
