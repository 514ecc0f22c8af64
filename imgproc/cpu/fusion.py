"""Where XLA:CPU's loops begin and end, when its own choice is slow.

XLA fuses a producer into every consumer that reads it, and a reshape of a result into the
loop that computes it. A loop of many operations over rows of W*C values whose result is
reshaped to (N, H, W, C) then runs over an innermost axis of C = 3, which does not
vectorise (the 5x5 median ran several times slower that way).

:func:`in_own_loop` makes a result a buffer of its own (why: benchmarks/NOTES.md, "Median").
"""

from __future__ import annotations

import jax
from jax import lax

__all__ = ["LOOP_MAX_READS", "in_loops", "in_own_loop"]

LOOP_MAX_READS = 250
"""The most shifted values one XLA:CPU loop should read and combine for each value it writes
(a shifted sum's terms, a median's window). LLVM's code for a loop of some 250 reads or more
runs several times slower, and for a loop of about 500 over an image smaller than the
window its compile took gigabytes and aborted the process; longer work is split into loops
of their own (:func:`in_loops`) that hand their partial result on (benchmarks/NOTES.md,
"Shifted sums of many terms")."""


def in_own_loop(fn, x):
    """``fn(x)``, computed by loops of its own on CPU (other backends: ``fn(x)`` as it is).
    ``x``: an array, or a tuple of arrays (the predicate reads the first).

    An ``optimization_barrier`` does not do this (XLA removes it before fusing), but a
    conditional's result is a buffer of its own. Both branches are ``fn``, so the
    predicate, read from the data so that XLA cannot fold it away, never changes the
    result; under ``vmap`` the two identical branches are computed once (and fused as
    before). Not on GPUs, where a conditional waits for its predicate on the host, and not
    outside tracing: an eager call runs op by op, where nothing is fused, and an eager
    conditional would trace ``fn`` again on every call."""
    leaves = jax.tree_util.tree_leaves(x)
    first = leaves[0]
    if first.size == 0 or jax.default_backend() != "cpu" or not any(isinstance(v, jax.core.Tracer) for v in leaves):
        return fn(x)
    return lax.cond(first.reshape(-1)[0] == 0, fn, fn, x)


def in_loops(step, parts, carry, operands):
    """``carry = step(carry, part, operands)`` for each of ``parts`` in turn, each step in a
    loop of its own on CPU (:func:`in_own_loop`), its result handed to the next: long work
    (more than :data:`LOOP_MAX_READS` reads) split in order, so that the result is the one
    loop's. ``carry`` may be ``None`` for the first step; ``operands``: what every step reads."""
    for part in parts:
        carry = in_own_loop(lambda v, part=part: step(v[0], part, v[1]), (carry, operands))
    return carry
