"""The ``"pallas"`` lowering: one separable term as a fused Pallas (Mosaic GPU) kernel.

``correlate_fused(x, col, row, mode=..., cval=..., interpret=...)`` equals the
``"separable"`` lowering of one term (:func:`imgproc.filters.separable.correlate_separable`):
``scipy.ndimage.correlate`` of each channel of the float32 ``(B, H, W, C)`` array ``x`` with ``outer(col, row)``
(``origin=0``, scipy's boundary modes), to float32 rounding.

How (one program per output tile of ``TILE_ROWS`` rows by up to ``TILE_COLS`` values of
the ``W * C`` axis, channels interleaved as in NHWC):

1. XLA extends the image by the kernel's radii with the boundary ``mode`` (the same
   :func:`imgproc.core.boundary.pad_bhwc` as the ``"conv"`` lowering) and zero-pads it to
   whole tiles, as one fused copy;
2. the kernel copies its tile and the halo around it into shared memory with one TMA
   copy, sums ``len(col)`` row-shifted slices of it into registers (the vertical pass),
   writes that to shared memory, sums ``len(row)`` column-shifted slices of it (the
   horizontal pass; a tap is ``C`` values apart) and copies the result to global memory.
   Both passes read on-chip memory: the image is read from and written to global memory
   once each (plus the halo's share of re-reads).

The weights are compiled into the kernel as constants (zero taps skipped, symmetric
pairs share a multiply, as in :mod:`imgproc.filters.separable`), so the weights must be concrete.
On a CUDA GPU the kernel runs natively; on every other backend it runs in Pallas's GPU
interpret mode, which simulates the shared memory, the TMA copies and the barriers on the
host: the same kernel, slow, for testing (tests/filters/test_filters.py runs the shared parity
table through it). ``auto`` picks this lowering on a GPU for a concrete kernel of one
separable term where a tile fits (:func:`fits`): it is faster than the XLA passes there,
and the tile of 16 rows by 224 values was the fastest of those timed by
benchmarks/gpu_pallas.py (why: benchmarks/NOTES.md, "GPU").
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from imgproc.core.boundary import pad_bhwc
from imgproc.filters.separable import concrete_values, terms_1d

# Output tile: rows, and values of the (W * C) axis. TMA copies move at most TMA_BOX
# elements along each axis and a multiple of 128 bytes; shared memory holds SMEM_FLOATS.
TILE_ROWS = 16
TILE_COLS = 224
TMA_BOX = 256
_ALIGN = 32  # float32 values: 128 bytes
SMEM_FLOATS = 200 * 1024 // 4
# CUDA launches at most 65535 blocks along a grid's y and z axes (the tiles' rows and the
# batch here): a larger batch runs in several launches, a taller image is refused.
MAX_GRID = 65535


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def tile_shape(ry: int, rx: int, channels: int) -> tuple[int, int, int]:
    """``(rows, cols, width)``: the output tile (``rows`` by ``cols`` values of the ``W * C``
    axis) and its input tile's width (``cols`` plus the halo, a multiple of 128 bytes), for a
    kernel of radii ``ry`` x ``rx`` on ``channels`` interleaved channels. The widest tile
    (up to ``TILE_COLS``) that fits, with fewer rows when the halo would not fit one TMA copy
    or shared memory, then narrower tiles (a tall kernel); ``ValueError`` when none fit."""
    halo_x = 2 * rx * channels
    widest = min(TILE_COLS, TMA_BOX - _round_up(halo_x, _ALIGN))
    for cols in dict.fromkeys(c for c in (widest, 128, 64, _ALIGN) if _ALIGN <= c <= widest):
        width = _round_up(cols + halo_x, _ALIGN)
        for rows in (TILE_ROWS, TILE_ROWS // 2, TILE_ROWS // 4):
            in_rows = rows + 2 * ry
            if in_rows <= TMA_BOX and in_rows * width + rows * (width + cols) <= SMEM_FLOATS:
                return rows, cols, width
    raise ValueError(
        f"method='pallas' needs a tile and its halo to fit one TMA copy (at most {TMA_BOX} rows and "
        f"{TMA_BOX} values of W x C) and {SMEM_FLOATS * 4 // 1024} KiB of shared memory; a kernel of "
        f"radius {ry} x {rx} on {channels} channel(s) does not: use method='separable'")


def fits(ry: int, rx: int, channels: int, height: int = 1) -> bool:
    """Whether :func:`tile_shape` finds a tile for these radii and channels, and an image
    of ``height`` rows needs at most :data:`MAX_GRID` of them (``auto`` then picks this
    lowering on a GPU; otherwise it takes the separable passes)."""
    try:
        rows = tile_shape(ry, rx, channels)[0]
    except ValueError:
        return False
    return -(-height // rows) <= MAX_GRID


def _weighted_sum(load, taps):
    """``sum(w * (load(k) [+ load(k2)]))`` over ``taps`` from :func:`terms_1d`."""
    acc = None
    for w, ks in taps:
        v = load(ks[0]) if len(ks) == 1 else load(ks[0]) + load(ks[1])
        v = v * w
        acc = v if acc is None else acc + v
    return acc


def _kernel(shape, col_taps, row_taps, channels, tile, interpret):
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import mosaic_gpu as plgpu

    batch, rows_out, cols_out = shape
    rows, cols, width = tile
    in_rows = rows + col_taps[0] - 1  # the tile and its halo: len(col) is odd

    def body(x_gmem, o_gmem, x_smem, mid_smem, out_smem, barrier):
        b, i, j = lax.axis_index("batch"), lax.axis_index("rows"), lax.axis_index("cols")
        src = x_gmem.at[b, pl.ds(i * rows, in_rows), pl.ds(j * cols, width)]
        plgpu.copy_gmem_to_smem(src, x_smem, barrier)
        plgpu.barrier_wait(barrier)
        mid_smem[...] = _weighted_sum(lambda k: x_smem[pl.ds(k, rows), :], col_taps[1])
        plgpu.commit_smem()  # the horizontal pass reads other threads' writes
        out_smem[...] = _weighted_sum(lambda k: mid_smem[:, pl.ds(k * channels, cols)], row_taps[1])
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(out_smem, o_gmem.at[b, pl.ds(i * rows, rows), pl.ds(j * cols, cols)])
        plgpu.wait_smem_to_gmem(0)

    return plgpu.kernel(
        body,
        out_type=jax.ShapeDtypeStruct((batch, rows_out, cols_out), jnp.float32),
        scratch_types=[plgpu.SMEM((in_rows, width), jnp.float32), plgpu.SMEM((rows, width), jnp.float32),
                       plgpu.SMEM((rows, cols), jnp.float32), plgpu.Barrier(num_arrivals=1)],
        grid=(batch, rows_out // rows, cols_out // cols),
        grid_names=("batch", "rows", "cols"),
        interpret=interpret,
    )


def _interpret_params():
    try:  # not exported by jax.experimental.pallas (jax 0.10)
        from jax._src.pallas.mosaic_gpu.interpret.params import InterpretGPUParams
    except ImportError as err:  # pragma: no cover - depends on the installed jax
        raise ValueError(
            f"method='pallas' off a CUDA GPU needs Pallas's GPU interpret mode (jax >= 0.10); "
            f"this jax ({jax.__version__}) has none: use method='separable'") from err
    return InterpretGPUParams()


def runs_natively(backend=None) -> bool:
    """Whether the kernel runs compiled on ``backend`` (default: the current one): a GPU.
    Elsewhere :func:`correlate_fused` runs it in Pallas's GPU interpret mode."""
    return (backend or jax.default_backend()) == "gpu"


def correlate_fused(x, col, row, *, mode: str, cval, interpret: bool):
    """Correlate the float32 ``(B, H, W, C)`` array ``x`` with ``outer(col, row)`` (odd
    lengths, concrete) in one fused kernel; see the module docstring. ``interpret``: run
    the kernel in Pallas's GPU interpret mode (off a GPU: ``not runs_natively()``)."""
    c, r = concrete_values(col), concrete_values(row)
    if c is None or r is None:
        raise ValueError("method='pallas' compiles the weights into the kernel and needs concrete "
                         "ones; use method='separable' for traced weights")
    b, h, w, ch = x.shape
    if b > MAX_GRID:  # one launch per MAX_GRID images
        return jnp.concatenate([correlate_fused(x[i:i + MAX_GRID], col, row, mode=mode, cval=cval, interpret=interpret)
                                for i in range(0, b, MAX_GRID)])
    ry, rx = c.size // 2, r.size // 2
    rows, cols, width = tile = tile_shape(ry, rx, ch)
    if -(-h // rows) > MAX_GRID:
        raise ValueError(f"method='pallas' launches one program per {rows} rows, at most {MAX_GRID} of them: an "
                         f"image of {h} rows is too tall; use method='separable'")
    rows_out, cols_out = _round_up(h, rows), _round_up(w * ch, cols)
    xp = pad_bhwc(x, ry, rx, mode, cval)
    xp = xp.reshape(b, h + 2 * ry, (w + 2 * rx) * ch)
    xp = jnp.pad(xp, ((0, 0), (0, rows_out - h), (0, cols_out - cols + width - xp.shape[2])))
    col_taps, row_taps = terms_1d(c), terms_1d(r)
    if not col_taps[1] or not row_taps[1]:  # every weight 0 (a derivative folded onto a 1-pixel side)
        return jnp.zeros(x.shape, jnp.float32)
    kernel = _kernel((b, rows_out, cols_out), col_taps, row_taps, ch, tile,
                     interpret=_interpret_params() if interpret else None)
    out = kernel(xp)
    return out[:, :h, : w * ch].reshape(b, h, w, ch)


__all__ = ["correlate_fused", "fits", "runs_natively", "tile_shape"]
