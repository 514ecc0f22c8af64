"""CPU-oriented lowering of 2-D correlation on planar ``(P, H, W)`` float32 stacks.

``correlate_separable(planes, k_rows, k_cols, mode=..., cval=...)`` equals
``scipy.ndimage.correlate1d(correlate1d(planes, k_rows, axis=1), k_cols, axis=2)`` and
``correlate_direct(planes, kernel2d, mode=..., cval=...)`` equals
``scipy.ndimage.correlate`` applied to each plane (``origin=0``; even lengths follow
scipy's rule: the centre tap is ``len // 2``).

How it is lowered (measured on a 2-core x86 CPU, see the benchmark notes in the report
that introduced this file): every pass is a *shifted sum* over static slices, which XLA
emits as one fused elementwise loop. The border is never materialised as a full padded
copy of the image: the interior of the output is computed from valid slices of the
input only (written into a zero-extended buffer: XLA fuses that pad into the loop),
and the thin border bands (``radius`` rows/columns) from small strips gathered with
:func:`imgproc._boundary.index_map`, written over the buffer in place with
``dynamic_update_slice``. (A ``concatenate`` of the pieces is slower: XLA:CPU does not
fuse a concatenate along the minor axis, so it costs a full extra copy.)

Weights may be NumPy arrays (concrete) or traced ``jnp`` arrays; only their static
length/shape is needed. Concrete weights are baked in as constants, zero taps are
skipped and symmetric 1-D kernels use ``w_k * (x[i-k] + x[i+k])`` (half the multiplies).
"""

from __future__ import annotations

import numpy as np
import jax
import jax.numpy as jnp

from imgproc._boundary import check_mode, index_map

__all__ = ["correlate_separable", "correlate_direct"]


# --------------------------------------------------------------------------- weights


def _concrete(w):
    """``w`` as a float64 NumPy array when its values are known at trace time, else None."""
    if isinstance(w, jax.core.Tracer):
        return None
    try:
        return np.asarray(w, dtype=np.float64)
    except Exception:  # pragma: no cover - defensive (e.g. abstract values)
        return None


def _terms_1d(w):
    """Static description of a 1-D kernel's taps.

    Returns ``(n, terms)`` where each term is ``(weight, (k,))`` or ``(weight, (k, k2))``
    (pair sharing one weight, for symmetric concrete kernels); weights are Python floats
    (concrete) or traced scalars.
    """
    w_np = _concrete(w)
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
    k_np = _concrete(kernel)
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


def _shifted_sum(xe, terms, out_shape, axes):
    """``sum_t w_t * xe[offset_t : offset_t + out_shape]`` over the given axes.

    A term's offsets tuple holds one offset per axis in ``axes``; a 1-D pair term
    ``(k, k2)`` (only with a single axis) adds the two slices before multiplying."""
    def sl(offsets):
        starts = [0] * xe.ndim
        limits = list(xe.shape)
        for ax, off in zip(axes, offsets):
            starts[ax] = off
            limits[ax] = off + out_shape[ax]
        return jax.lax.slice(xe, starts, limits)

    out = None
    for w, offs in terms:
        if len(axes) == 1 and len(offs) == 2:
            v = sl((offs[0],)) + sl((offs[1],))
        else:
            v = sl(offs)
        t = w * v
        out = t if out is None else out + t
    if out is None:  # all-zero concrete kernel
        return jnp.zeros(out_shape, xe.dtype)
    return out.astype(xe.dtype)


# --------------------------------------------------------------------------- 1-D pass


def pad_first() -> bool:
    """Whether a 1-D pass builds the extended (border-padded) array and sums shifted slices
    of it, rather than computing the interior and patching the border bands in place.
    On GPU/TPU the padded copy fuses into the pass and the in-place band updates cost
    extra kernels (H100, 256x224x224x3, sigma 3: 1.27 ms against 2.62 ms, see
    benchmarks/RESULTS.md); on CPU the band updates avoid a full extra copy."""
    return jax.default_backend() != "cpu"


def _pass_1d(x, n, terms, axis: int, mode: str, cval):
    """Correlate ``x`` along ``axis`` with an ``n``-tap kernel given as ``terms``."""
    L = x.shape[axis]
    before = n // 2
    after = n - 1 - before
    if n == 1:
        return _shifted_sum(x, terms, x.shape, (axis,))
    full_idx = index_map(L, before, after, mode)  # extended index -> source index
    inner = L - n + 1  # outputs needing no border
    if inner <= 0 or pad_first():
        xe = _gather(x, full_idx, axis, cval)
        return _shifted_sum(xe, terms, x.shape, (axis,))

    def band(out_start, out_len):
        if out_len == 0:
            return None
        # output positions [out_start, out_start + out_len) read ext positions
        # [out_start, out_start + out_len + n - 1)
        strip = _gather(x, full_idx[out_start : out_start + out_len + n - 1], axis, cval)
        shape = list(x.shape)
        shape[axis] = out_len
        return _shifted_sum(strip, terms, tuple(shape), (axis,))

    # interior written into a zero-extended buffer (the pad fuses into the interior
    # loop), then the thin border bands updated in place: no concatenate, which XLA
    # does not fuse along the minor axis and would cost a full extra copy.
    shape = list(x.shape)
    shape[axis] = inner
    ext = [(0, 0)] * x.ndim
    ext[axis] = (before, after)

    def at(start):
        st = [0] * x.ndim
        st[axis] = start
        return tuple(st)

    return _assemble(_shifted_sum(x, terms, tuple(shape), (axis,)), ext,
                     [(band(0, before), at(0)), (band(L - after, after), at(L - after))])


def _assemble(inner, ext, bands):
    """Zero-extend ``inner`` by ``ext = [(before, after)]`` per axis (XLA fuses this pad
    into the loop computing ``inner``), then write each ``(band, start_indices)`` over it
    in place with ``dynamic_update_slice`` (``None`` bands are skipped)."""
    out = jax.lax.pad(inner, jnp.zeros((), inner.dtype), [(b, a, 0) for b, a in ext])
    for band, start in bands:
        if band is not None:
            out = jax.lax.dynamic_update_slice(out, band, start)
    return out


# --------------------------------------------------------------------------- public API


def _as_planes(planes):
    planes = jnp.asarray(planes, jnp.float32)
    if planes.ndim not in (3, 4):
        raise ValueError(f"planes must have shape (P, H, W) or (B, H, W, C); got shape {planes.shape}")
    return planes


def correlate1d(x, w, *, axis: int, mode="reflect", cval=0.0):
    """``scipy.ndimage.correlate1d(x, w, axis=axis, mode=mode, cval=cval)`` for float32
    ``x`` of any rank (the engine's ``(B, H, W, C)``); ``w`` concrete or traced."""
    n, terms = _terms_1d(w)
    return _pass_1d(jnp.asarray(x, jnp.float32), n, terms, axis, mode, cval)


def correlate_separable(planes, k_rows, k_cols, *, mode="reflect", cval=0.0):
    """Separable 2-D correlation of planar ``(P, H, W)`` float32 data.

    ``k_rows`` is applied along ``H`` (axis 1), then ``k_cols`` along ``W`` (axis 2);
    the result equals ``scipy.ndimage.correlate1d(correlate1d(planes, k_rows, axis=1,
    mode=mode, cval=cval), k_cols, axis=2, mode=mode, cval=cval)`` (``origin=0``) as
    float32. Weights may be concrete or traced; only their static length is used.
    """
    check_mode(mode)
    y = correlate1d(_as_planes(planes), k_rows, axis=1, mode=mode, cval=cval)
    return correlate1d(y, k_cols, axis=2, mode=mode, cval=cval)


def correlate_direct(planes, kernel2d, *, mode="reflect", cval=0.0):
    """Non-separable 2-D correlation of planar ``(P, H, W)`` (or ``(B, H, W, C)``) float32 data.

    Equals ``scipy.ndimage.correlate(planes[p], kernel2d, mode=mode, cval=cval)`` for
    every plane ``p`` (``origin=0``), as float32. ``kernel2d`` may be concrete or traced;
    only its static shape is used.
    """
    check_mode(mode)
    x = _as_planes(planes)
    (kh, kw), terms = _terms_2d(kernel2d)
    H, W = x.shape[1], x.shape[2]
    bt, bl = kh // 2, kw // 2
    et, er = kh - 1 - bt, kw - 1 - bl
    rows_idx = index_map(H, bt, et, mode)
    cols_idx = index_map(W, bl, er, mode)
    in_h, in_w = H - kh + 1, W - kw + 1
    axes = (1, 2)
    if in_h <= 0 or in_w <= 0 or kh * kw == 1:
        xe = _gather(_gather(x, rows_idx, 1, cval), cols_idx, 2, cval)
        return _shifted_sum(xe, terms, x.shape, axes)

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
        return _shifted_sum(xe, terms, tuple(shape), axes)

    def at(r, c):
        return (0, r, c) + (0,) * (x.ndim - 3)

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
    return _assemble(interior, [(0, 0), (bt, et), (bl, er)] + [(0, 0)] * (x.ndim - 3), bands)
