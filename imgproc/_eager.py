"""An op called eagerly runs as one compiled program, its numbers as program arguments.

Why. A JAX function called on concrete arrays runs op by op: each primitive is its own
small program over the whole image or batch, with fresh temporaries. On 64 images of
224x224x3 that made ``rotate`` 244 ms against 15 ms inside ``jit``, ``adjust_hue`` 136
against 14, ``posterize`` 67 against 1.3 (benchmarks/NOTES.md, "Eager augmentation ops").

How. :func:`run_compiled` runs ``fn(*arrays, **options)``, when nothing is traced and every option
is a Python value (numbers, strings, sequences, dicts, stages), as a program compiled once
per op, option structure and array shapes (:data:`PROGRAMS`, the last 64 kept):

* Numbers (ints and floats, not bools) are arguments of the program, so a new value does
  not compile again (the design's rule 4). An op that needs a number while tracing (a
  size, a count, a kernel radius) fails to trace with it as an argument; that is found
  at its first call and remembered (:data:`LEVELS`): its ints are then compiled in and only
  its floats are arguments, or, when a float is needed too, every option is compiled in
  (one program per value).
* An op's checks let traced numbers through (:func:`imgproc._validate.check_number`), so
  the options' checks run first on the concrete values, by tracing the op without
  computing anything (``jax.eval_shape``), once per op, options and shapes
  (:data:`CHECKED`, the last 4096 kept). Bad options raise the op's own error, as before.
* An op may also refuse a traced number with its own error (a size must be a Python
  int); since the options' checks have passed on the concrete values by then, any error
  while tracing with numbers as arguments moves on to the next level, and the last one,
  with every option compiled in, raises what the op raises.
* Options that hold arrays (per-image values) are not compiled: the op runs op by op.

The program computes what the op computes inside the caller's ``jit``.
"""

from __future__ import annotations

import functools

import jax

from imgproc._cache import KeptPrograms
from imgproc._sharded import freeze
from imgproc._validate import is_traced

__all__ = ["CHECKED", "LEVELS", "PROGRAMS", "compiled_when_eager", "run_compiled"]

PROGRAMS = KeptPrograms(64)  # (op, structure, level, static options) -> jitted program
LEVELS = KeptPrograms(1024)  # (op, structure) -> which numbers trace as arguments
CHECKED = KeptPrograms(4096)  # (op, options, shapes) -> True: their checks ran

# which option values are program arguments, tried in this order
_LEVELS = ("numbers", "floats", "none")
_INT32 = (-(2 ** 31), 2 ** 31 - 1)


def _is_argument(value, level) -> bool:
    if level == "none" or isinstance(value, bool):
        return False
    if isinstance(value, float):
        return True
    return level == "numbers" and isinstance(value, int) and _INT32[0] <= value <= _INT32[1]


def run_compiled(op, fn, arrays, options):
    """``fn(*arrays, **options)``; compiled as the module docstring says when ``arrays``
    are concrete and ``options`` hold no array. ``op`` names the op in the caches (the
    function itself, or a tuple of what makes it)."""
    leaves, tree = jax.tree_util.tree_flatten(options)
    frozen = [freeze(v) for v in leaves]
    if is_traced(tuple(arrays)) or any(f is None for f in frozen):
        return fn(*arrays, **options)
    shapes = tuple((a.shape, str(a.dtype)) for a in arrays)
    kinds = tuple(("number", type(v).__name__) if _is_argument(v, "numbers") else f for v, f in zip(leaves, frozen))
    known = LEVELS.find((op, tree, kinds))
    tried = set()
    for trial in _LEVELS[_LEVELS.index(known) if known is not None else 0:]:
        mask = [_is_argument(v, trial) for v in leaves]
        if tuple(mask) in tried:  # no int among the options: "floats" is "numbers" again
            continue
        tried.add(tuple(mask))
        if any(mask) and CHECKED.find((op, tree, tuple(frozen), shapes)) is None:
            jax.eval_shape(functools.partial(fn, **options), *arrays)  # the checks, on the values
            CHECKED.get((op, tree, tuple(frozen), shapes), lambda: True)
        static = tuple(None if m else f for m, f in zip(mask, frozen))
        program = PROGRAMS.get((op, tree, trial, static),
                               lambda: jax.jit(functools.partial(_with_numbers, fn, tree, leaves, mask)))
        numbers = [v for v, m in zip(leaves, mask) if m]
        try:
            out = program(tuple(arrays), numbers)
        except Exception:  # noqa: BLE001 - a number the op needs while tracing (see below)
            if not any(mask):  # every option compiled in: the op's own error
                raise
            PROGRAMS.drop((op, tree, trial, static))
            continue
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
    :func:`imgproc._types.callers_type`): called on a concrete image, it runs through
    :func:`run_compiled`; traced, as it is."""

    @functools.wraps(fn)
    def wrapper(image, *args, **options):
        if not args:
            return run_compiled(fn, fn, (image,), options)
        return run_compiled(fn, _positional(fn, len(args)), (image,), {"args": args, **options})

    return wrapper


@functools.lru_cache(maxsize=None)
def _positional(fn, count):
    """``fn`` taking its ``count`` positional options as one ``args`` keyword (so they are
    options of :func:`run_compiled`, like the keyword ones)."""

    def with_args(image, args, **options):
        return fn(image, *args, **options)

    return with_args
