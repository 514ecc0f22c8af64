"""CPU-oriented lowering of 2-D correlation on planar ``(P, H, W)`` float32 stacks.

``correlate_separable(planes, k_rows, k_cols, mode=..., cval=...)`` equals
``scipy.ndimage.correlate1d(correlate1d(planes, k_rows, axis=1), k_cols, axis=2)`` and
``correlate_direct(planes, kernel2d, mode=..., cval=...)`` equals
``scipy.ndimage.correlate`` applied to each plane (``origin=0``; even lengths follow
scipy's rule: the centre tap is ``len // 2``).

How it is lowered (why: benchmarks/NOTES.md, "Lowering choices"): every pass
is a *shifted sum* over static slices, which XLA emits as one fused elementwise loop.
The border is never materialised as a full padded copy of the image: the interior of
the output is computed from valid slices of the input only (written into a
zero-extended buffer: XLA fuses that pad into the loop), and the thin border bands
(``radius`` rows/columns) from small strips gathered with
:func:`imgproc.core.boundary.index_map`, put over the buffer either in place
(``dynamic_update_slice``) or with a fused ``select`` (see :func:`_assemble` for which
and why). The column bands of a separable pair's second pass are computed from column
strips of the input, so nothing reads the first pass's result but the second pass's
interior loop. (A ``concatenate`` of the pieces is slower: XLA:CPU does not fuse a
concatenate along the minor axis, so it costs a full extra copy.) On GPU/TPU each pass
sums shifted slices of a padded copy instead (:func:`pad_first`).

Weights may be NumPy arrays (concrete) or traced ``jnp`` arrays; only their static
length/shape is needed. Concrete weights are baked in as constants, zero taps are
skipped and symmetric 1-D kernels use ``w_k * (x[i-k] + x[i+k])`` (half the multiplies).
"""

from __future__ import annotations

import collections

import numpy as np
import jax
import jax.numpy as jnp

from imgproc.core.arrays import slice_at
from imgproc.core.boundary import check_mode, index_map
from imgproc.cpu import LOOP_MAX_READS, in_loops, in_own_loop, kept_as_scratch, scratch

__all__ = ["correlate_direct", "correlate_separable", "shifted_sum"]


# --------------------------------------------------------------------------- weights


def concrete_values(w):
    """``w`` as a float64 NumPy array when its values are known at trace time, else None."""
    if isinstance(w, jax.core.Tracer):
        return None
    try:
        return np.asarray(w, dtype=np.float64)
    except Exception:  # pragma: no cover - defensive (e.g. abstract values)
        return None


def centre_weight(col, row):
    """The weight of a separable term that is a single tap at the centre of both axes
    (``col`` and ``row`` zero but at index ``len // 2``; :func:`imgproc.kernels.factor`
    gives one for the sharpen kernel), as a Python float; None for any other term or
    traced weights. Such a term is the image times the weight: no pass, no border."""
    c, r = concrete_values(col), concrete_values(row)
    if c is None or r is None or c.ndim != 1 or r.ndim != 1 or not c.size or not r.size:
        return None
    a, b = c.size // 2, r.size // 2
    if np.count_nonzero(c) > 1 or np.count_nonzero(r) > 1 or c[a] == 0 or r[b] == 0:
        return None
    return float(np.float32(c[a]) * np.float32(r[b]))


def terms_1d(w):
    """Static description of a 1-D kernel's taps.

    Returns ``(n, terms)`` where each term is ``(weight, (k,))`` or ``(weight, (k, k2))``
    (pair sharing one weight, for symmetric concrete kernels); weights are Python floats
    (concrete) or traced scalars.
    """
    w_np = concrete_values(w)
    if w_np is not None:
        if w_np.ndim != 1 or w_np.size == 0:
            raise ValueError(f"1-D weights must be a non-empty vector; got shape {w_np.shape}")
        n = w_np.size
        terms = []
        symmetric = np.array_equal(w_np, w_np[::-1])
        if symmetric:
            for k in range(n // 2):
                if w_np[k] != 0.0:
                    terms.append((float(np.float32(w_np[k])), (k, n - 1 - k)))
            if n % 2 and w_np[n // 2] != 0.0:
                terms.append((float(np.float32(w_np[n // 2])), (n // 2,)))
        else:
            for k in range(n):
                if w_np[k] != 0.0:
                    terms.append((float(np.float32(w_np[k])), (k,)))
        return n, terms
    w = jnp.asarray(w, jnp.float32)
    if w.ndim != 1 or w.shape[0] == 0:
        raise ValueError(f"1-D weights must be a non-empty vector; got shape {w.shape}")
    n = w.shape[0]
    return n, [(w[k], (k,)) for k in range(n)]


def _terms_2d(kernel):
    """Taps of a 2-D kernel as ``(weight, (dy, dx))``; zero concrete taps are skipped."""
    k_np = concrete_values(kernel)
    if k_np is not None:
        if k_np.ndim != 2 or k_np.size == 0:
            raise ValueError(f"2-D kernel must be a non-empty matrix; got shape {k_np.shape}")
        kh, kw = k_np.shape
        terms = [
            (float(np.float32(k_np[i, j])), (i, j))
            for i in range(kh)
            for j in range(kw)
            if k_np[i, j] != 0.0
        ]
        return (kh, kw), terms
    kernel = jnp.asarray(kernel, jnp.float32)
    if kernel.ndim != 2 or kernel.size == 0:
        raise ValueError(f"2-D kernel must be a non-empty matrix; got shape {kernel.shape}")
    kh, kw = kernel.shape
    return (kh, kw), [(kernel[i, j], (i, j)) for i in range(kh) for j in range(kw)]


# --------------------------------------------------------------------------- helpers


def _gather(x, idx, axis: int, cval):
    """``x`` taken at static indices ``idx`` along ``axis``; ``-1`` entries give ``cval``.

    Runs of consecutive indices become plain slices (cheaper than a gather for XLA);
    isolated indices (the reflected parts) are gathered together."""
    idx = [int(i) for i in np.asarray(idx)]
    runs = []  # [kind, [indices]] with kind in {"const", "slice", "take"}
    for i in idx:
        if i < 0:
            if runs and runs[-1][0] == "const":
                runs[-1][1].append(i)
            else:
                runs.append(["const", [i]])
        elif runs and runs[-1][0] != "const" and runs[-1][1][-1] + 1 == i:
            runs[-1][1].append(i)
            runs[-1][0] = "slice" if len(runs[-1][1]) == 2 or runs[-1][0] == "slice" else runs[-1][0]
        else:
            runs.append(["take", [i]])
    # a "take" run whose indices are consecutive is a slice; merge adjacent take runs
    merged = []
    for kind, ids in runs:
        if kind == "take" and merged and merged[-1][0] == "take":
            merged[-1][1].extend(ids)
        else:
            merged.append([kind, list(ids)])
    pieces = []
    for kind, ids in merged:
        if kind == "const":
            shape = list(x.shape)
            shape[axis] = len(ids)
            pieces.append(jnp.full(shape, jnp.asarray(cval, x.dtype), x.dtype))
        elif kind == "slice" or len(ids) == 1:
            pieces.append(jax.lax.slice_in_dim(x, ids[0], ids[0] + len(ids), axis=axis))
        else:
            pieces.append(jnp.take(x, jnp.asarray(ids, jnp.int32), axis=axis))
    return pieces[0] if len(pieces) == 1 else jnp.concatenate(pieces, axis=axis)


SUM_LOOP_TERMS = 48
"""A shifted sum of more than :data:`imgproc.cpu.LOOP_MAX_READS` reads (a 2-D kernel of more
than 250 weights, a 1-D pass of more than 250 taps) runs on CPU as loops of this many
terms, the running sum in a buffer between them, in the same order of additions; below
the line one loop is faster (benchmarks/NOTES.md, "Shifted sums of many terms")."""


def _reads(terms, axes) -> int:
    """How many slices a shifted sum of ``terms`` reads (a 1-D pair term reads two)."""
    return sum(2 if len(axes) == 1 and len(offs) == 2 else 1 for _, offs in terms)


def shifted_sum(xe, terms, out_shape, axes):
    """``sum_t w_t * xe[offset_t : offset_t + out_shape]`` over the given axes: the sum every
    correlation here is made of, for any op that sums shifted slices of an array (its
    derivative, below, is why they should use it).

    A term's offsets tuple holds one offset per axis in ``axes``; a 1-D pair term
    ``(k, k2)`` (only with a single axis) adds the two slices before multiplying. More than
    :data:`LOOP_MAX_READS` reads run in loops of :data:`SUM_LOOP_TERMS` terms on CPU.

    Differentiable in ``xe`` and in traced weights, with a derivative of its own: the same
    sum as a ``fori_loop`` over the terms (:func:`_sum_in_a_loop`). JAX's own transposes
    each slice into a ``pad``, which XLA:CPU compiled as a loop of its own per term: a
    Gaussian gradient magnitude's gradient (sigma 6) compiled in 15 s and ran 10x slower
    (benchmarks/NOTES.md, "Shifted sums of many terms")."""
    traced = tuple(i for i, (w, _) in enumerate(terms) if isinstance(w, jax.core.Tracer))

    def with_weights(values):
        weights = [w for w, _ in terms]
        for i, v in zip(traced, values):
            weights[i] = v
        return weights

    @jax.custom_jvp
    def summed(v, values):
        return _unrolled_sum(v, [(w, offs) for w, (_, offs) in zip(with_weights(values), terms)], out_shape, axes)

    @summed.defjvp
    def summed_jvp(primals, tangents):
        def in_a_loop(v, values):
            return _sum_in_a_loop(v, with_weights(values), [offs for _, offs in terms], out_shape, axes)

        return summed(*primals), jax.jvp(in_a_loop, primals, tangents)[1]

    return summed(xe, tuple(terms[i][0] for i in traced))


def _unrolled_sum(xe, terms, out_shape, axes):
    """:func:`shifted_sum` unrolled, each slice a static one (XLA fuses them)."""
    if _reads(terms, axes) <= LOOP_MAX_READS:
        return _sum_in_one_loop(xe, terms, out_shape, axes, None)
    chunks = [terms[first:first + SUM_LOOP_TERMS] for first in range(0, len(terms), SUM_LOOP_TERMS)]
    return in_loops(lambda out, chunk, v: _sum_in_one_loop(v, chunk, out_shape, axes, out), chunks, None, xe)


def _sum_in_a_loop(xe, weights, offsets, out_shape, axes):
    """:func:`shifted_sum` as a ``fori_loop`` over its slices (a pair term's two slices
    are two steps): the derivative's form, whose program does not grow with the terms and
    whose transpose adds each step's slice into the cotangent in place. Each step is
    computed again in reverse mode's backward pass (``jax.checkpoint``)."""
    slices = [(i, off) for i, offs in enumerate(offsets) for off in
              (((k,) for k in offs) if len(axes) == 1 else (offs,))]
    if not slices:
        return jnp.zeros(out_shape, xe.dtype)
    table = jnp.asarray([off for _, off in slices], jnp.int32)
    term = jnp.asarray([i for i, _ in slices], jnp.int32)
    weight = jnp.stack([jnp.asarray(w, xe.dtype) for w in weights])

    @jax.checkpoint
    def step(k, total):
        return total + weight[term[k]] * _term_slice(xe, [table[k, a] for a in range(len(axes))], out_shape, axes)

    return jax.lax.fori_loop(0, len(slices), step, jnp.zeros(out_shape, xe.dtype))


def _term_slice(xe, offsets, out_shape, axes):
    """The ``out_shape`` block of ``xe`` a term reads: at ``offsets`` along ``axes`` (ints: a
    static slice; traced: a dynamic one), from 0 along the others."""
    starts = [0] * xe.ndim
    for ax, off in zip(axes, offsets):
        starts[ax] = off
    return slice_at(xe, tuple(starts), out_shape)


def _sum_in_one_loop(xe, terms, out_shape, axes, start):
    """:func:`shifted_sum` as one expression, which XLA fuses into one loop; ``start``: a
    sum of earlier terms that these add to, one after the other (or ``None``)."""
    out = start
    for w, offs in terms:
        if len(axes) == 1 and len(offs) == 2:
            v = _term_slice(xe, offs[:1], out_shape, axes) + _term_slice(xe, offs[1:], out_shape, axes)
        else:
            v = _term_slice(xe, offs, out_shape, axes)
        t = w * v
        out = t if out is None else out + t
    if out is None:  # all-zero concrete kernel
        return jnp.zeros(out_shape, xe.dtype)
    return out.astype(xe.dtype)


# --------------------------------------------------------------------------- 1-D pass

# Traced first kernels of at most this many taps write the column-extended buffer;
# concrete ones always do (see correlate_separable).
EXTEND_MAX_TAPS = 9

# A pass along the rows (axis 1) of at least this many terms (19 taps and up) sums them in
# two loops (the first half in a loop of its own, the second half and that sum in the loop
# that writes the result) where one loop reading 25 rows at a time (sigma = 3) ran slower:
# over integers converted in the loop (uint8 images: float_rows False), and at row lengths
# that are a multiple of 4 KiB (2048x3 float32 values), which put all the rows a tap reads
# in one set of an x86 L1 cache (4 KiB ways, 8 of them), which made one loop much slower
# than at other row lengths. There, where more than L1_WAYS rows would share a set and
# the copy goes to kept memory (an eager call:
# imgproc.cpu.output_buffers.scratch), the pass reads a copy of its input in rows longer by
# ROWS_PAD values, in one loop. Float32 rows that do not alias: one loop
# (benchmarks/NOTES.md, "Large kernels").
ROWS_SPLIT_MIN_TERMS = 10
L1_WAYS = 8
ROWS_PAD = 16


def rows_alias(row_bytes: int, n: int) -> bool:
    """Whether ``n`` rows ``row_bytes`` apart put more than :data:`L1_WAYS` of them in one
    set of a cache with 4 KiB ways and 64-byte lines (x86's L1 data caches)."""
    sets = collections.Counter((k * row_bytes) % 4096 // 64 for k in range(n))
    return max(sets.values(), default=0) > L1_WAYS


# The last pass of a separable pair over rows of W*C values (C > 1) whose result the
# program returns (with its cast to the image's dtype, ``finish``): with more taps than
# this, it runs as a loop of its own, the cast in it. Fused with the reshape back to
# (..., W, C), XLA's loop runs over the innermost C = 3 values and does not vectorise, so a
# long fused pass is several times slower than alone (benchmarks/NOTES.md, "Large
# kernels"). Not where another stage reads the result.
COLS_FUSED_MAX_TAPS = 9


def pad_first() -> bool:
    """Whether a 1-D pass builds the extended (border-padded) array and sums shifted slices
    of it, rather than computing the interior and patching the border bands in place.
    On GPU/TPU the padded copy fuses into the pass and the in-place band updates cost
    extra kernels; on CPU the band updates avoid a full extra copy (why:
    benchmarks/NOTES.md, "Lowering choices")."""
    return jax.default_backend() != "cpu"


def _pass_1d(x, n, terms, axis: int, mode: str, cval, *, extend=None, split=False):
    """Correlate ``x`` along ``axis`` with an ``n``-tap kernel given as ``terms``.

    ``extend=(axis2, before, after)`` returns the result zero-extended along ``axis2``
    (written into the larger buffer by the same loop; the caller fills the margins).
    ``split``: the interior's terms are summed in two loops (:func:`_interior`)."""
    L = x.shape[axis]
    before = n // 2
    after = n - 1 - before
    full_idx = index_map(L, before, after, mode)  # extended index -> source index
    inner = L - n + 1  # outputs needing no border
    if n == 1 or inner <= 0 or pad_first():
        if n == 1:
            y = shifted_sum(x, terms, x.shape, (axis,))
        else:
            y = shifted_sum(_gather(x, full_idx, axis, cval), terms, x.shape, (axis,))
        if extend is not None:
            cfg = [(0, 0, 0)] * x.ndim
            cfg[extend[0]] = (extend[1], extend[2], 0)
            y = jax.lax.pad(y, jnp.zeros((), y.dtype), cfg)
        return y

    def band(out_start, out_len):
        if out_len == 0:
            return None
        # output positions [out_start, out_start + out_len) read ext positions
        # [out_start, out_start + out_len + n - 1)
        strip = _gather(x, full_idx[out_start : out_start + out_len + n - 1], axis, cval)
        shape = list(x.shape)
        shape[axis] = out_len
        return shifted_sum(strip, terms, tuple(shape), (axis,))

    # interior written into a zero-extended buffer (the pad fuses into the interior
    # loop), then the thin border bands updated in place: no concatenate, which XLA
    # does not fuse along the minor axis and would cost a full extra copy.
    shape = list(x.shape)
    shape[axis] = inner
    ext = [(0, 0)] * x.ndim
    ext[axis] = (before, after)
    if extend is not None:
        ext[extend[0]] = (extend[1], extend[2])

    def at(start):
        st = [0] * x.ndim
        st[axis] = start
        if extend is not None:
            st[extend[0]] = extend[1]
        return tuple(st)

    return _assemble(_interior(x, terms, tuple(shape), axis, split), ext,
                     [(band(0, before), at(0)), (band(L - after, after), at(L - after))], in_place=True)


def _interior(x, terms, shape, axis: int, split: bool):
    """The shifted sum of a 1-D pass's interior; with ``split``, in two loops: the first
    half of the terms in a loop of its own (its sum a kept scratch buffer when an eager
    call runs it: :func:`imgproc.cpu.output_buffers.scratch`), the rest and that sum in the
    loop that writes the result (:data:`ROWS_SPLIT_MIN_TERMS`)."""
    if not split:
        return shifted_sum(x, terms, shape, (axis,))
    half = len(terms) // 2
    first = scratch(in_own_loop(lambda v: shifted_sum(v, terms[:half], shape, (axis,)), x))
    return first + shifted_sum(x, terms[half:], shape, (axis,))


def _assemble(inner, ext, bands, *, in_place: bool):
    """Zero-extend ``inner`` by ``ext = [(before, after)]`` per axis (XLA fuses this pad
    into the loop computing ``inner``), then put each ``(band, start_indices)`` over it
    (``None`` bands are skipped).

    ``in_place=True`` writes the bands with ``dynamic_update_slice``; ``in_place=False``
    zero-extends each band and picks it with a ``select`` on an index mask, all fused
    into the loop that writes the output. Which is cheaper depends on what reads the
    result (why: benchmarks/NOTES.md, "Lowering choices"):

    * the first pass of a separable pair, and the last pass of a stage whose result
      feeds another stage of the same program: in place. (Selects there make XLA
      materialise each zero-extended band at full size.)
    * the last pass of the program's last stage (the caller's ``in_place=False``:
      :class:`imgproc.core.registry.LoweringHints` ``feeds_next`` not set): select. In place,
      XLA fuses the final reshape to the caller's shape into the update, which then
      cannot reuse the buffer and copies it.
    """
    out = jax.lax.pad(inner, jnp.zeros((), inner.dtype), [(b, a, 0) for b, a in ext])
    for band, start in bands:
        if band is None:
            continue
        if in_place:
            out = jax.lax.dynamic_update_slice(out, band, start)
            continue
        cfg = [(s, n - s - b, 0) for s, b, n in zip(start, band.shape, out.shape)]
        padded = jax.lax.pad(band, jnp.zeros((), band.dtype), cfg)
        inside = None
        for ax, (s, b, n) in enumerate(zip(start, band.shape, out.shape)):
            if b != n:
                i = jax.lax.broadcasted_iota(jnp.int32, out.shape, ax)
                m = (i >= s) & (i < s + b)
                inside = m if inside is None else inside & m
        out = padded if inside is None else jnp.where(inside, padded, out)
    return out


# --------------------------------------------------------------------------- public API


def _rows(a):
    """``(P, H, W)`` or ``(B, H, W, C)`` data as ``(P, H, W*C)``: W and C merged into one
    axis (a reshape), so that XLA's loops run over rows of contiguous values, which it
    vectorises, not over an innermost axis of C values."""
    return a.reshape(a.shape[:2] + (int(np.prod(a.shape[2:])),))


def _as_planes(planes):
    planes = jnp.asarray(planes, jnp.float32)
    if planes.ndim not in (3, 4):
        raise ValueError(f"planes must have shape (P, H, W) or (B, H, W, C); got shape {planes.shape}")
    return planes


def correlate_separable(planes, k_rows, k_cols, *, mode="reflect", cval=0.0, cval_after=None, in_place=False,
                        finish=None, keep=False, float_rows=False):
    """Separable 2-D correlation of planar ``(P, H, W)`` (or ``(B, H, W, C)``) float32 data.

    ``k_rows`` is applied along ``H`` (axis 1), then ``k_cols`` along ``W`` (axis 2);
    the result equals ``scipy.ndimage.correlate1d(correlate1d(planes, k_rows, axis=1,
    mode=mode, cval=cval), k_cols, axis=2, mode=mode, cval=cval_after)`` (``origin=0``;
    ``cval_after`` defaults to ``cval``) as float32. Weights may be concrete or traced;
    only their static length is used. ``in_place``: the result feeds another stage of
    the same program, so the last pass writes its border bands in place (see
    :func:`_assemble`); ``finish``: the program returns the result after this elementwise
    function (the cast to the image's dtype), so a long last pass may run as a loop of its
    own with ``finish`` applied in it (:data:`COLS_FUSED_MAX_TAPS`). Both change how XLA
    computes, never the numbers; the result is ``finish``-ed exactly when its dtype is
    no longer float32. ``keep``: the caller reads the result once more, elementwise (an
    unsharp mask's combination), and returns what it computes: the long last pass runs
    as a loop of its own as for ``finish``, its result marked
    :func:`imgproc.cpu.output_buffers.scratch` (a kept buffer, not fresh pages).
    ``float_rows``: the program's loops read ``planes`` from float32 values, not from
    integers converted in them; it picks how a long first pass sums (below).

    On CPU the second pass does no border work of its own: its margin columns are the
    first pass over thin column strips of the *input*, so nothing but the second pass's
    loop reads the first pass's result (reading it for the borders made XLA keep two
    versions of it: a full extra copy). Two forms, by the first kernel's length (why:
    benchmarks/NOTES.md, "Lowering choices"):

    * with concrete ``k_rows`` (compiled in as constants), or traced ones of up to
      :data:`EXTEND_MAX_TAPS` taps, the first pass writes into a buffer extended by the
      second kernel's radius along ``W`` (the pad fuses into its loop), the strips fill
      the margins in place and the second pass is a plain shifted sum over it. A first
      pass of :data:`ROWS_SPLIT_MIN_TERMS` terms or more runs in one loop over float32
      rows (``float_rows``) that do not alias in the L1 cache (:func:`rows_alias`), in
      one loop over a copy in longer rows where they do and the copy is in kept memory,
      and in two loops otherwise;
    * above that with traced weights (read from memory inside the loop), the pad along
      ``W`` slows the heavier first loop down, so the
      second pass sums the interior and puts the strips' results over its border
      columns (:func:`_assemble`).
    """
    mode = check_mode(mode)
    x = _as_planes(planes)
    cval_after = cval if cval_after is None else cval_after
    n1, t1 = terms_1d(k_rows)
    n2, t2 = terms_1d(k_cols)
    if n2 == 1 or pad_first():
        return _pass_1d(_pass_1d(x, n1, t1, 1, mode, cval), n2, t2, 2, mode, cval_after)
    W = x.shape[2]
    before, after = n2 // 2, n2 - 1 - n2 // 2
    col_idx = index_map(W, before, after, mode)  # extended column -> source column

    def strip_pass1(cols):
        """The first pass over the input's columns ``cols`` (extended indices)."""
        strip = _pass_1d(_gather(x, cols, 2, cval), n1, t1, 1, mode, cval)
        if mode == "constant":  # columns outside the image hold cval_after after pass 1
            outside = jnp.asarray(np.asarray(cols) < 0).reshape((1, 1, -1) + (1,) * (x.ndim - 3))
            strip = jnp.where(outside, jnp.asarray(cval_after, strip.dtype), strip)
        return strip

    def at(start):
        return (0, 0, start) + (0,) * (x.ndim - 3)

    if n1 <= EXTEND_MAX_TAPS or concrete_values(k_rows) is not None:
        c = int(np.prod(x.shape[3:]))
        rows, long, alias = _rows(x), len(t1) >= ROWS_SPLIT_MIN_TERMS, rows_alias(W * c * x.dtype.itemsize, n1)
        split = long and (alias or not float_rows)
        if long and alias and kept_as_scratch(rows):  # the copy in kept memory
            pad = [(0, 0, 0), (0, 0, 0), (0, ROWS_PAD, 0)]
            rows = scratch(in_own_loop(lambda v: jax.lax.pad(v, jnp.zeros((), v.dtype), pad), rows))[:, :, :W * c]
            split = False
        y = _pass_1d(rows, n1, t1, 1, mode, cval, extend=(2, before * c, after * c), split=split)
        for cols, start in ((col_idx[:before], 0), (col_idx[before + W:], before + W)):
            if len(cols):
                y = jax.lax.dynamic_update_slice(y, _rows(strip_pass1(cols)), (0, 0, start * c))
        t2c = [(w, tuple(k * c for k in offs)) for w, offs in t2]
        y = scratch(y)  # in a kept buffer when an eager call's program runs it (imgproc.cpu.output_buffers)
        cols_pass = lambda v: shifted_sum(v, t2c, x.shape[:2] + (W * c,), (2,))  # noqa: E731
        alone = c > 1 and n2 > COLS_FUSED_MAX_TAPS
        if alone and finish is not None:
            return in_own_loop(lambda v: finish(cols_pass(v)), y).reshape(x.shape)
        if alone and keep:
            return scratch(in_own_loop(cols_pass, y)).reshape(x.shape)
        return cols_pass(y).reshape(x.shape)

    y = _pass_1d(x, n1, t1, 1, mode, cval)
    inner = W - n2 + 1
    if inner <= 0:
        return _pass_1d(y, n2, t2, 2, mode, cval_after)

    def band(out_start, out_len):
        if out_len == 0:
            return None
        strip = strip_pass1(col_idx[out_start: out_start + out_len + n2 - 1])
        shape = list(x.shape)
        shape[2] = out_len
        return shifted_sum(strip, t2, tuple(shape), (2,))

    shape = list(x.shape)
    shape[2] = inner
    ext = [(0, 0), (0, 0), (before, after)] + [(0, 0)] * (x.ndim - 3)
    return _assemble(shifted_sum(y, t2, tuple(shape), (2,)), ext,
                     [(band(0, before), at(0)), (band(W - after, after), at(W - after))],
                     in_place=in_place)


def correlate_direct(planes, kernel2d, *, mode="reflect", cval=0.0, in_place=False):
    """Non-separable 2-D correlation of planar ``(P, H, W)`` (or ``(B, H, W, C)``) float32 data.

    Equals ``scipy.ndimage.correlate(planes[p], kernel2d, mode=mode, cval=cval)`` for
    every plane ``p`` (``origin=0``), as float32. ``kernel2d`` may be concrete or traced;
    only its static shape is used. ``in_place`` as for :func:`correlate_separable`.

    W and C are merged into one axis (:func:`_rows`), as for the separable passes. Unless
    the result feeds another stage (``in_place``), the pass is a loop of its own on CPU,
    so that XLA fuses neither the reshape back to ``(B, H, W, C)`` nor a cast into it; its
    border bands are then written in place (why: benchmarks/NOTES.md, "Large kernels").
    A kernel of more than :data:`LOOP_MAX_READS` weights sums over the image
    extended by its border, in loops of :data:`SUM_LOOP_TERMS` terms on CPU.
    """
    mode = check_mode(mode)
    x = _as_planes(planes)
    c = int(np.prod(x.shape[3:]))
    rows = _rows(x)
    if c > 1 and not in_place and jax.default_backend() == "cpu":
        out = in_own_loop(lambda v: _correlate_direct_rows(v, kernel2d, c, mode, cval, True), rows)
    else:
        out = _correlate_direct_rows(rows, kernel2d, c, mode, cval, in_place)
    return out.reshape(x.shape)


def _correlate_direct_rows(x, kernel2d, c, mode, cval, in_place):
    """:func:`correlate_direct` of ``(P, H, W*c)`` data whose columns are groups of ``c``
    values (the channels of a pixel): every column quantity counts values of that axis."""
    (kh, kw), terms = _terms_2d(kernel2d)
    H, W = x.shape[1], x.shape[2] // c
    bt, bl = kh // 2, kw // 2
    et, er = kh - 1 - bt, kw - 1 - bl
    rows_idx = index_map(H, bt, et, mode)
    cols_idx = index_map(W, bl, er, mode)
    in_h, in_w = H - kh + 1, W - kw + 1
    axes = (1, 2)
    if c > 1:
        terms = [(w, (i, j * c)) for w, (i, j) in terms]
        cols_idx = np.array([i * c + ch if i >= 0 else -1 for i in cols_idx for ch in range(c)])
        W, bl, er, kw, in_w = W * c, bl * c, er * c, (kw - 1) * c + 1, in_w * c
    if _reads(terms, axes) > LOOP_MAX_READS:
        # the sum runs in loops: over the image extended once (a copy), not over an
        # interior and border blocks, each block gathered again by every loop
        xe = in_own_loop(lambda v: _gather(_gather(v, rows_idx, 1, cval), cols_idx, 2, cval), x)
        return shifted_sum(xe, terms, x.shape, axes)
    if in_h <= 0 or in_w <= 0 or kh * kw == 1:
        xe = _gather(_gather(x, rows_idx, 1, cval), cols_idx, 2, cval)
        return shifted_sum(xe, terms, x.shape, axes)

    def block(r0, nr, c0, nc, src_rows, src_cols):
        """Output block rows [r0, r0+nr) x cols [c0, c0+nc)."""
        xe = x
        if src_rows:
            xe = _gather(xe, rows_idx[r0 : r0 + nr + kh - 1], 1, cval)
        else:  # interior rows: ext rows r0.. map to source r0 - bt ..
            xe = jax.lax.slice_in_dim(xe, r0 - bt, r0 - bt + nr + kh - 1, axis=1)
        if src_cols:
            xe = _gather(xe, cols_idx[c0 : c0 + nc + kw - 1], 2, cval)
        else:
            xe = jax.lax.slice_in_dim(xe, c0 - bl, c0 - bl + nc + kw - 1, axis=2)
        shape = list(x.shape)
        shape[1:3] = nr, nc
        return shifted_sum(xe, terms, tuple(shape), axes)

    def at(r, col):
        return (0, r, col)

    interior = block(bt, in_h, bl, in_w, False, False)
    bands = []
    if bt:
        bands.append((block(0, bt, 0, W, True, True), at(0, 0)))
    if et:
        bands.append((block(H - et, et, 0, W, True, True), at(H - et, 0)))
    if bl:  # left/right bands of the rows that need no row border
        bands.append((block(bt, in_h, 0, bl, False, True), at(bt, 0)))
    if er:
        bands.append((block(bt, in_h, W - er, er, False, True), at(bt, W - er)))
    return _assemble(interior, [(0, 0), (bt, et), (bl, er)], bands, in_place=in_place)
