"""BM3D denoising (block matching and 3-D collaborative filtering) written in JAX.

See :func:`bm3d`. The algorithm is Dabov, Foi, Katkovnik and Egiazarian, "Image denoising by
sparse 3-D transform-domain collaborative filtering", IEEE TIP 16(8), 2007, as analysed by
Lebrun, "An Analysis and Implementation of the BM3D Image Denoising Method", IPOL 2 (2012),
with the parameters of the reference ``bm3d`` package (PyPI 4.0.3, profile ``'np'``) where it
differs from the paper (threshold 3.0, Wiener factor 0.4).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from imgproc.core.array_type import callers_type
from imgproc.core.arrays import HIGHEST, check_dtype, from_nhwc, matmul, resolve_max, to_nhwc, to_output
from imgproc.core.images import check_image
from imgproc.core.registry import KEEPS_TARGETS, NOT_DIFFERENTIABLE, OpInfo, register_ops
from imgproc.core.validate import (MODE_CHECK, check_choice, check_int, check_mode, check_number, check_odd,
                                   check_per_image)
from imgproc.restoration.noise_level import sigma_nhwc

__all__ = ["bm3d"]

_JNP_MODE = {"reflect": "symmetric", "mirror": "reflect", "nearest": "edge", "wrap": "wrap", "constant": "constant"}
STAGES = ("both", "hard")
GROUP_SIZES = (1, 2, 4, 8, 16, 32, 64)
MAX_SEARCH = 75
MAX_BLOCK = 16


def check_stage(stage):
    """``stage`` if it is one of :data:`STAGES` (also checked when a pipeline stage is built)."""
    return check_choice("stage", stage, STAGES)


# Opponent colour transform of the reference package (rows: luma, two chroma channels).
_OPP = np.array([[1 / 3, 1 / 3, 1 / 3], [0.5, 0.0, -0.5], [0.25, -0.5, 0.25]])
_OPP_INV = np.linalg.inv(_OPP)
_OPP_NORM = np.sqrt((_OPP ** 2).sum(axis=1))  # noise std of each opponent channel per unit sigma


# --------------------------------------------------------------------------------------------
# transforms (NumPy constants, float32)


def _dct_matrix(n: int) -> np.ndarray:
    """Orthonormal DCT-II matrix (rows are basis functions)."""
    k = np.arange(n)[:, None]
    i = np.arange(n)[None, :]
    m = np.cos(np.pi * (2 * i + 1) * k / (2 * n)) * np.sqrt(2.0 / n)
    m[0] /= np.sqrt(2.0)
    return m


def _bior15_matrix8() -> np.ndarray:
    """Forward 8-point bior1.5 wavelet transform (full 3-level decomposition, periodic
    extension: PyWavelets' ``wavedec(x, 'bior1.5', mode='periodization')`` as a matrix), each
    row scaled to unit norm so that white noise of std sigma has std sigma on every coefficient
    (as in the BM3D package)."""
    row1 = np.array([21, 43, 43, 21, -21, -43, -43, -21]) / (64 * np.sqrt(2.0))
    row2 = np.array([75, 53, -53, -75, -11, 11, -11, 11]) / 128.0
    row3 = np.roll(row2, 4)
    m = np.vstack([np.full(8, 1 / np.sqrt(8.0)), row1, row2, row3,
                   np.kron(np.eye(4), [1.0, -1.0]) / np.sqrt(2.0)])
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _transform_2d(kind: str, b: int):
    """(forward, inverse) matrices (b*b, b*b) of a separable 2-D block transform."""
    m = _bior15_matrix8() if kind == "bior1.5" and b == 8 else _dct_matrix(b)
    f = np.kron(m, m)
    return jnp.asarray(f, jnp.float32), jnp.asarray(np.linalg.inv(f), jnp.float32)


def _haar_matrix(n: int) -> np.ndarray:
    """Orthonormal Haar matrix of a power-of-two size ``n`` (full decomposition)."""
    if n == 1:
        return np.ones((1, 1))
    h = _haar_matrix(n // 2)
    top = np.kron(h, [1.0, 1.0])
    bottom = np.kron(np.eye(n // 2), [1.0, -1.0])
    return np.vstack([top, bottom]) / np.sqrt(2.0)


def _kaiser2d(n: int, beta: float) -> np.ndarray:
    k = np.kaiser(n, beta)
    return np.outer(k, k)


def _estimate_sigma(image):
    """Noise standard deviation of an (H, W, C) image, averaged over channels:
    :func:`imgproc.restoration.estimate_sigma`'s rule (skimage's ``estimate_sigma(image,
    channel_axis=-1, average_sigmas=True)``; a flat image gives 0)."""
    return sigma_nhwc(image.astype(jnp.float32)[None])[0]


# --------------------------------------------------------------------------------------------
# the algorithm on one image (H, W, C) float32 in 0..255 units


class _Plan:
    """Static geometry of one call (all Python ints).

    References lie on a grid of ``ry`` rows and ``rx`` columns. A chunk (one step of the
    compiled loops) is a tile of ``rc`` rows by ``cx`` columns of that grid, about
    ``chunk_refs`` references: whole rows where a row holds at most ``chunk_refs``, else one
    row split into ``col_chunks`` even pieces. Chunk ``k`` is tile row ``k // col_chunks``,
    tile column ``k % col_chunks``; tiles past the grid's last row or column hold junk
    references (weight 0)."""

    def __init__(self, h, w, *, block, step, search, chunk_refs, parts=1):
        self.h, self.w, self.block, self.step = h, w, block, step
        self.r = search // 2
        self.s = search
        hc, wc = max(h, block), max(w, block)
        self.ry = -(-(hc - block) // step) + 1
        self.rx = -(-(wc - block) // step) + 1
        self.col_chunks = -(-self.rx // chunk_refs)
        self.cx = -(-self.rx // self.col_chunks)
        self.rc = max(1, min(self.ry, chunk_refs // self.cx)) if self.col_chunks == 1 else 1
        row_chunks = -(-self.ry // self.rc)
        if parts > 1:  # a whole number of chunks per part: rows spread evenly, junk ones last
            while (row_chunks * self.col_chunks) % parts:
                row_chunks += 1
            self.rc = max(1, -(-self.ry // row_chunks))
        self.chunks = row_chunks * self.col_chunks
        self.parts = parts
        self.per_part = self.chunks // parts
        self.he = (row_chunks * self.rc - 1) * step + block  # rows covered by references (junk ones included)
        self.we = (self.col_chunks * self.cx - 1) * step + block  # columns, the same
        self.hs = (self.rc - 1) * step + block  # rows one chunk's references cover
        self.ws = (self.cx - 1) * step + block  # columns, the same
        self.zh = self.he + 2 * self.r
        self.zw = self.we + 2 * self.r

    def tile(self, chunk):
        """First reference row and column of ``chunk`` (may be traced)."""
        return (chunk // self.col_chunks) * self.rc, (chunk % self.col_chunks) * self.cx


def _pad(x, plan, mode, cval):
    r = plan.r
    widths = [(r, plan.he - plan.h + r), (r, plan.we - plan.w + r), (0, 0)]
    if mode == "constant":
        return jnp.pad(x, widths, mode="constant", constant_values=cval)
    return jnp.pad(x, widths, mode=_JNP_MODE[mode])


def _distances(region, plan):
    """Block distances of a chunk's references to every displacement of the search window.

    ``region``: the (hs + 2r, ws + 2r) pixels of the matching image around one chunk's tile.
    Returns (rc * cx, s * s): the sum of squared differences over the block (the shifted-sum
    form: one squared difference and box sum per displacement, for all references at once)."""
    r, s, b, st = plan.r, plan.s, plan.block, plan.step
    hs, ws, rc, cx = plan.hs, plan.ws, plan.rc, plan.cx
    a = lax.dynamic_slice(region, (r, r), (hs, ws))

    def one_dy(dy):
        rows = lax.dynamic_slice(region, (dy, 0), (hs, ws + 2 * r))
        cand = jnp.stack([rows[:, dx:dx + ws] for dx in range(s)])  # (s, hs, ws)
        d2 = (cand - a[None]) ** 2
        v = sum(d2[:, i:i + (rc - 1) * st + 1:st, :] for i in range(b))  # (s, rc, ws)
        return sum(v[:, :, j:j + (cx - 1) * st + 1:st] for j in range(b))  # (s, rc, cx)

    d = lax.map(one_dy, jnp.arange(s))  # (s_dy, s_dx, rc, cx)
    return d.transpose(2, 3, 0, 1).reshape(rc * cx, s * s)


def _match(plan, match, n, part=0):
    """Block matching for the references of one part's chunks: (per_part, rc * cx, n) int32
    indices into the search window (``dy * s + dx``, best first; the reference itself first),
    one compiled loop over the chunks (tiles of the reference grid, :class:`_Plan`). ``part``
    may be traced."""
    r, s, st = plan.r, plan.s, plan.step
    centre = (s * s) // 2

    def one(chunk):
        y0, x0 = plan.tile(chunk)
        region = lax.dynamic_slice(match, (y0 * st, x0 * st), (plan.hs + 2 * r, plan.ws + 2 * r))
        d = _distances(region, plan)
        d = d.at[:, centre].set(-1.0)  # the reference itself always comes first
        return lax.top_k(-d, n)[1].astype(jnp.int32)

    return lax.map(one, part * plan.per_part + jnp.arange(plan.per_part))


def _tops(plan, chunk, idx):
    """Top-left corners (R, n, 2) on the padded canvas of the blocks ``idx`` (R, n) of the
    references of ``chunk``, and the references' validity (R,) (junk ones lie past the grid's
    last row or column)."""
    st, r, s = plan.step, plan.r, plan.s
    dy = idx // s - r
    dx = idx % s - r
    y0, x0 = plan.tile(chunk)
    i = y0 + jnp.arange(plan.rc)[:, None]  # reference rows and columns of the tile
    j = x0 + jnp.arange(plan.cx)[None, :]
    ref_y = (r + i * st + 0 * j).reshape(-1)
    ref_x = (r + j * st + 0 * i).reshape(-1)
    tops = jnp.stack([ref_y[:, None] + dy, ref_x[:, None] + dx], axis=-1)
    valid = ((i < plan.ry) & (j < plan.rx)).reshape(-1)
    return tops, valid


def _gather_blocks(canvas, tops, b):
    """Blocks (..., C, b, b) of the planar ``canvas`` (C, H, W) whose top-left corners are
    ``tops`` (..., 2): one windowed gather (no per-pixel indices)."""
    lead = tops.shape[:-1]
    dn = lax.GatherDimensionNumbers(offset_dims=(1, 2, 3), collapsed_slice_dims=(), start_index_map=(1, 2))
    out = lax.gather(canvas, tops.reshape(-1, 2), dn, slice_sizes=(canvas.shape[0], b, b),
                     mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)
    return out.reshape(lead + out.shape[1:])


def _scatter_blocks(canvas, tops, blocks):
    """The planar ``canvas`` (C, H, W) plus the blocks (..., C, b, b) added at ``tops``
    (..., 2): one windowed scatter-add."""
    dn = lax.ScatterDimensionNumbers(update_window_dims=(1, 2, 3), inserted_window_dims=(),
                                     scatter_dims_to_operand_dims=(1, 2))
    k = int(np.prod(tops.shape[:-1]))
    return lax.scatter_add(canvas, tops.reshape(k, 2), blocks.reshape((k,) + blocks.shape[-3:]), dn,
                           mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


_RS2 = float(1 / np.sqrt(2.0))


def _haar_fwd(g):
    """Orthonormal Haar transform (full decomposition) along axis 1 (a power of two) of
    groups (R, n, ...): [approximation, coarsest details, ..., finest details]."""
    details = []
    a = g
    while a.shape[1] > 1:
        a0, a1 = a[:, 0::2], a[:, 1::2]
        details.append((a0 - a1) * _RS2)
        a = (a0 + a1) * _RS2
    return jnp.concatenate([a] + details[::-1], axis=1)


def _haar_inv(c):
    n = c.shape[1]
    a = c[:, :1]
    pos = 1
    while pos < n:
        d = c[:, pos:2 * pos]
        a = jnp.stack([(a + d) * _RS2, (a - d) * _RS2], axis=2).reshape((a.shape[0], 2 * pos) + a.shape[2:])
        pos *= 2
    return a


def _forward(g, t2):
    """3-D transform of groups (R, n, C, b*b): 2-D transform of each block, Haar along the group."""
    return _haar_fwd(matmul(g, t2.T))


def _inverse(g, t2inv):
    return matmul(_haar_inv(g), t2inv.T)


def _stage_sums(plan, matches, z_noisy, z_pilot, sig, *, n, kind, lam, window, mu2=1.0, part=0):
    """One BM3D stage over one part's chunks of references, each with the ``n`` best
    ``matches`` (that part's, from :func:`_match`); returns, on the planar padded canvas
    (2C, zh, zw), the window-weighted sums of the blocks' estimates and each block's weight
    at its top-left corner (:func:`_spread` turns those into the window-weighted sums of the
    weights once, at the end). The parts' sums add up to the whole image's
    (:func:`_estimate`)."""
    b = plan.block
    p = b * b
    c = z_noisy.shape[0]
    t2, t2inv = _transform_2d("bior1.5" if kind == "hard" else "dct", b)
    win = jnp.asarray(window.reshape(-1), jnp.float32)
    sig2 = sig ** 2
    sig_c = sig[:, None]  # (C, 1): broadcasts against (..., C, b*b)

    def groups(canvas, tops):
        g = _gather_blocks(canvas, tops, b)  # (R, n, C, b, b)
        return g.reshape(g.shape[0], n, c, p)  # (R, n, C, b*b)

    def body(i, acc):
        tops, valid = _tops(plan, part * plan.per_part + i, matches[i, :, :n])
        spec = _forward(groups(z_noisy, tops), t2)  # (R, n, C, b*b)
        if kind == "hard":
            keep = jnp.abs(spec) > lam * sig_c
            spec = jnp.where(keep, spec, 0.0)
            count = jnp.sum(keep, axis=(1, 3)).astype(jnp.float32)  # (R, C)
            w = 1.0 / jnp.maximum(count, 1.0)
        else:
            p2 = _forward(groups(z_pilot, tops), t2) ** 2
            shrink = p2 / jnp.maximum(p2 + mu2 * sig2[:, None], 1e-12)
            shrink = jnp.where(sig2[:, None] > 0, shrink, 1.0)
            spec = spec * shrink
            w = 1.0 / jnp.maximum(jnp.sum(shrink ** 2, axis=(1, 3)), 1e-6)
        est = _inverse(spec, t2inv)  # (R, n, C, b*b)
        w = w * valid[:, None].astype(w.dtype)  # (R, C)
        num, corners = acc
        num = _scatter_blocks(num, tops, (est * (w[:, None, :, None] * win)).reshape(est.shape[:3] + (b, b)))
        # the weights' window sums are linear in the weights: add each block's weight at its
        # corner here (C values a block instead of C*b*b) and spread them once at the end
        corners = corners.at[:, tops[..., 0], tops[..., 1]].add(jnp.broadcast_to(w[:, None, :], est.shape[:3]).transpose(2, 0, 1))
        return num, corners

    zeros = jnp.zeros((c, plan.zh, plan.zw), jnp.float32)
    return jnp.concatenate(lax.fori_loop(0, plan.per_part, body, (zeros, zeros)), axis=0)


def _spread(corners, kaiser):
    """``sum over blocks of weight * outer(kaiser, kaiser)`` placed at each block: the
    weights (C, H, W) at the blocks' top-left corners correlated with the separable window
    (two 1-D passes of ``len(kaiser)`` taps; blocks lie inside the canvas)."""
    b = len(kaiser)
    h, w = corners.shape[1:]
    rows = jnp.pad(corners, ((0, 0), (b - 1, 0), (0, 0)))
    rows = sum(float(kaiser[i]) * rows[:, b - 1 - i:b - 1 - i + h] for i in range(b))
    cols = jnp.pad(rows, ((0, 0), (0, 0), (b - 1, 0)))
    return sum(float(kaiser[j]) * cols[:, :, b - 1 - j:b - 1 - j + w] for j in range(b))


def _estimate(sums, z_noisy, kaiser):
    """The aggregated estimate (C, zh, zw) from the parts' sums (each (2C, zh, zw), see
    :func:`_stage_sums`); the noisy value where no block landed."""
    acc = functools.reduce(jnp.add, sums)
    c = z_noisy.shape[0]
    num, den = acc[:c], _spread(acc[c:], kaiser)
    return jnp.where(den > 0, num / jnp.maximum(den, 1e-20), z_noisy)


def _prepare(x, sigma, cval, *, plan, mode, colour):
    """The padded planar image (C, zh, zw) that BM3D works on (opponent colour when
    ``colour``) and each channel's noise level (C,), from ``x`` (H, W, C) in 0..255 units."""
    c = x.shape[-1]
    z = _pad(x, plan, mode, cval)  # padding commutes with the (linear) colour transform
    if colour:
        z = jnp.einsum("ij,hwj->ihw", jnp.asarray(_OPP, jnp.float32), z[..., :3], precision=HIGHEST)  # planar
        sig = sigma * jnp.asarray(_OPP_NORM, jnp.float32)
    else:
        z = jnp.moveaxis(z, -1, 0)
        sig = jnp.broadcast_to(sigma, (c,)).astype(jnp.float32)
    return z, sig


def _hard_part(z, sig, part, *, plan, stage, n_hard, n_wiener, lam, beta, rematch, **_):
    """Stage 1 on one part's references: their matches (on the luma, the first channel;
    wide enough for stage 2 when both stages share them) and the part's sums."""
    n_match = max(n_hard, n_wiener) if stage == "both" and not rematch else n_hard
    matches = _match(plan, z[0], n_match, part)
    sums = _stage_sums(plan, matches, z, None, sig, n=n_hard, kind="hard", lam=lam,
                       window=_kaiser2d(plan.block, beta), part=part)
    return matches, sums


def _wiener_part(z, sig, hard_sums, matches, part, *, plan, n_wiener, lam, mu2, beta, rematch, **_):
    """Stage 2 on one part's references, against the basic estimate of all parts' stage-1
    ``hard_sums``; the part's sums."""
    pilot = _estimate(hard_sums, z, np.kaiser(plan.block, beta))
    if rematch:
        matches = _match(plan, pilot[0], n_wiener, part)
    return _stage_sums(plan, matches, z, pilot, sig, n=n_wiener, kind="wiener", lam=lam,
                       window=_kaiser2d(plan.block, beta), mu2=mu2, part=part)


def _finish(sums, z, *, plan, colour, beta):
    """The estimate (H, W, C) from the last stage's sums of all parts (colour: its three
    colour channels; :func:`_with_alpha` adds an alpha channel)."""
    r = plan.r
    est = _estimate(sums, z, np.kaiser(plan.block, beta))
    est = jnp.moveaxis(est[:, r:r + plan.h, r:r + plan.w], 0, -1)
    if colour:
        est = jnp.einsum("ij,hwj->hwi", jnp.asarray(_OPP_INV, jnp.float32), est, precision=HIGHEST)
    return est


def _with_alpha(y, img, colour):
    """The denoised ``y`` in the image's own units, with ``img``'s alpha (a fourth colour
    channel) appended as it is: taken from the input, not through the 0..255 scale and back,
    which is not exact in float32 (one unit in the last place on a GPU for most values)."""
    if colour and img.shape[-1] > 3:
        return jnp.concatenate([y, img[..., 3:]], axis=-1)
    return y


def _bm3d_one(x, sigma, cval, *, plan, **opts):
    """BM3D of one image ``x`` (H, W, C) float32 in 0..255 units with noise ``sigma`` (``cval``:
    the fill of ``mode="constant"`` in the same units), all references in one program."""
    z, sig = _prepare(x, sigma, cval, plan=plan, mode=opts["mode"], colour=opts["colour"])
    matches, sums = _hard_part(z, sig, 0, plan=plan, **opts)
    if opts["stage"] == "both":
        sums = _wiener_part(z, sig, [sums], matches, 0, plan=plan, **opts)
    return _finish([sums], z, plan=plan, colour=opts["colour"], beta=opts["beta"])


def _units(img, colour):
    """The images BM3D denoises for one (H, W, C) image: itself (colour or grey), or each
    channel as its own grey image (channels without colour meaning)."""
    if colour or img.shape[-1] == 1:
        return [img]
    return [img[..., k:k + 1] for k in range(img.shape[-1])]


def _sigma_of(img, sigma, estimate, colour):
    return _estimate_sigma(img[..., :3] if colour else img) if estimate else sigma


def _bm3d_batch(x, sigma, max_value, cval, *, estimate, static):
    """(B, H, W, C) float32 image in its own units -> denoised, same units."""
    geom, rest = static
    h, w = x.shape[1:3]
    plan = _Plan(h, w, **dict(geom))
    opts = dict(rest)
    scale = 255.0 / jnp.asarray(max_value, jnp.float32)

    def one(args):
        img, sg = args
        sg = _sigma_of(img, sg, estimate, opts["colour"]) * scale
        outs = [_bm3d_one(u * scale, sg, cval * scale, plan=plan, **opts) for u in _units(img, opts["colour"])]
        return _with_alpha(jnp.concatenate(outs, axis=-1) / scale, img, opts["colour"])

    sig = jnp.broadcast_to(jnp.asarray(sigma, jnp.float32), (x.shape[0],))
    return lax.map(one, (x, sig))


@functools.partial(jax.jit, static_argnames=("estimate", "static", "out_dtype"))
def _bm3d_jit(x, sigma, max_value, cval, *, estimate, static, out_dtype):
    y = _bm3d_batch(x.astype(jnp.float32), sigma, max_value, cval, estimate=estimate, static=static)
    return to_output(y, out_dtype)


# The same algorithm with each image's references split into parts run in threads (XLA:CPU
# runs the loop over chunks of references on one core for a grey image, little more for a
# colour one; several programs run in parallel):
# one program prepares the image, one runs stage 1 on a part, one stage 2 on a part (against
# the basic estimate of all parts' sums), one adds the parts' sums and finishes.

def _plan_opts(h, w, static, parts):
    geom, rest = static
    return _Plan(h, w, **dict(geom), parts=parts), dict(rest)


@functools.partial(jax.jit, static_argnames=("estimate", "static", "parts"))
def _prepare_jit(img, sigma, max_value, cval, *, estimate, static, parts):
    plan, opts = _plan_opts(img.shape[0], img.shape[1], static, parts)
    scale = 255.0 / max_value
    img = img.astype(jnp.float32)
    sg = _sigma_of(img, sigma, estimate, opts["colour"]) * scale
    return [_prepare(u * scale, sg, cval * scale, plan=plan, mode=opts["mode"], colour=opts["colour"])
            for u in _units(img, opts["colour"])]


@functools.partial(jax.jit, static_argnames=("shape", "static", "parts"))
def _hard_jit(z, sig, part, *, shape, static, parts):
    plan, opts = _plan_opts(*shape, static, parts)
    return _hard_part(z, sig, part, plan=plan, **opts)


@functools.partial(jax.jit, static_argnames=("shape", "static", "parts"))
def _wiener_jit(z, sig, hard_sums, matches, part, *, shape, static, parts):
    plan, opts = _plan_opts(*shape, static, parts)
    return _wiener_part(z, sig, hard_sums, matches, part, plan=plan, **opts)


@functools.partial(jax.jit, static_argnames=("static", "parts", "out_dtype"))
def _finish_jit(unit_sums, zs, img, max_value, *, static, parts, out_dtype):
    plan, opts = _plan_opts(img.shape[0], img.shape[1], static, parts)
    scale = 255.0 / max_value
    img = img.astype(jnp.float32)
    y = jnp.concatenate([_finish(s, z, plan=plan, colour=opts["colour"], beta=opts["beta"])
                         for s, (z, _) in zip(unit_sums, zs)], axis=-1)
    return to_output(_with_alpha(y / scale, img, opts["colour"]), out_dtype)


_COMPILED_PARTS: set = set()  # signatures of the part programs already compiled


def _in_parts(run, parts, signature):
    """``[run(p) for p in range(parts)]``, in threads (:func:`imgproc.cpu.threads.in_threads`:
    a new program's first part alone first)."""
    from imgproc.cpu import in_threads

    return in_threads(lambda p: jax.block_until_ready(run(p)), range(parts), lambda p: signature, _COMPILED_PARTS)


def _bm3d_parts(x, sigma, max_value, cval, *, estimate, static, out_dtype, parts):
    """:func:`_bm3d_jit` for a concrete batch (B, H, W, C), image by image, each image's
    references in ``parts`` parts run in threads. Equal to the one-program result up to the
    order of the floating-point sums."""
    b, h, w = x.shape[:3]
    kw = dict(static=static, parts=parts)
    sigmas = jnp.broadcast_to(jnp.asarray(sigma, jnp.float32), (b,))
    out = []
    for i in range(b):
        zs = _prepare_jit(x[i], sigmas[i], max_value, cval, estimate=estimate, **kw)
        unit_sums = []
        for z, sig in zs:
            sig_key = ("bm3d", z.shape, static, parts)
            first = _in_parts(lambda p: _hard_jit(z, sig, p, shape=(h, w), **kw), parts, sig_key + ("hard",))
            sums = [s for _, s in first]
            if dict(static[1])["stage"] == "both":
                sums = _in_parts(lambda p: _wiener_jit(z, sig, sums, first[p][0], p, shape=(h, w), **kw),
                                 parts, sig_key + ("wiener",))
            unit_sums.append(sums)
        out.append(_finish_jit(unit_sums, zs, x[i], max_value, out_dtype=out_dtype, **kw))
    return jnp.stack(out)


def _parts(x, h, w, geom, threads):
    """How many parts of each image's references to run in threads: ``threads`` (``None``:
    the CPU cores this process may use), at most the image's chunks of references; 1 (one
    program) for a traced batch or off the CPU."""
    from imgproc.cpu import cpu_cores
    from imgproc.core.validate import is_traced

    if is_traced(x) or jax.default_backend() != "cpu":
        return 1
    return max(1, min(cpu_cores() if threads is None else threads, _Plan(h, w, **dict(geom)).chunks))


# How many reference blocks times channels one chunk holds by default on CPU: 256 keeps a
# chunk's groups (chunk_refs * 16 blocks * channels * 64 values, float32) near 1 MB, inside a
# core's L2 cache; larger chunks, whose stage intermediates spill out of it, ran slower
# (benchmarks/NOTES.md, "BM3D"). On a GPU a step of the loop is a few dozen kernel
# launches whatever its size, so a chunk holds many more, which ran faster there
# (benchmarks/NOTES.md, "GPU"); 8192 keeps a stage's groups near 100 MB.
CPU_CHUNK_BLOCKS = 256
ACCELERATOR_CHUNK_REFS = 8192


def _default_chunk_refs(channels, backend=None):
    """The default ``chunk_refs`` for images of ``channels`` channels (3: opponent colour)
    on ``backend`` (default: the current one)."""
    if (backend or jax.default_backend()) != "cpu":
        return ACCELERATOR_CHUNK_REFS
    return max(1, CPU_CHUNK_BLOCKS // channels)


# --------------------------------------------------------------------------------------------
# public API


@callers_type
def bm3d(image, *, sigma=None, max_value=None, stage="both", block_size=8, step=3, search_size=21,
         group_size=(16, 16), lambda_hard=3.0, mu2=0.4, beta=2.0, rematch=False, mode="reflect",
         cval=0.0, layout=None, chunk_refs=None, threads=None):
    """BM3D denoising (block matching and 3-D collaborative filtering), both stages.

    Block matching: for every reference block (``block_size`` square, on a grid of ``step``
    pixels, the last row and column of references flush with the image edge), the sum of
    squared differences to the block at each displacement of a ``search_size`` square window
    (for each displacement one squared difference and box sum for all references at once),
    then ``lax.top_k``. Stage 1 takes the ``group_size[0]`` best blocks, applies the 3-D
    transform (bior1.5 of each block as a 64x64 matrix product, Haar along the group),
    hard-thresholds at ``lambda_hard * sigma`` and adds the inverse-transformed blocks into the
    image with the weight ``kaiser(beta) / nonzero`` (windowed scatter-add). Stage 2 groups the
    ``group_size[1]`` best blocks of the noisy image and of that basic estimate, transforms them
    with the 2-D DCT and Haar, and applies the empirical Wiener shrinkage
    ``|B|^2 / (|B|^2 + mu2 * sigma^2)`` of the basic estimate's spectrum (weight
    ``kaiser / sum(shrinkage^2)``). References are processed in chunks of about ``chunk_refs``
    (whole rows of the reference grid) by one compiled loop, so memory stays bounded on large
    images; every image shape and option set compiles once.

    Not differentiable: hard thresholding and block matching make the result jump where a
    coefficient crosses the threshold or a match changes (tests/test_gradients.py measures
    central differences that do not converge).

    Colour (3 channels, or 4 with alpha carried over unchanged) is denoised as BM3D does:
    the opponent colour transform of the reference package, grouping on the luma channel,
    each channel thresholded with its own noise level (``sigma`` times the norm of its row of
    the transform). Other channel counts are denoised channel by channel.

    Args:
      image: HW, HWC, CHW (named), NHWC or NCHW (named) array; uint8, uint16, float16,
        bfloat16 or float32. A batch is denoised image by image (``lax.map``).
      sigma: noise standard deviation in the image's own units (0..255 for uint8, 0..1 for
        floats with the default ``max_value``). ``None`` estimates it per image: the median
        absolute deviation of the finest diagonal ``db2`` wavelet band, as
        ``skimage.restoration.estimate_sigma`` (averaged over colour channels). Traced:
        changing it does not recompile. ``0`` returns the image unchanged (up to float
        rounding).
      max_value: the white of the image (``None``: 255 for uint8, 65535 for uint16, 1.0 for
        floats). The image is denoised on a 0..255 scale (``x * 255 / max_value``); only
        ``sigma / max_value`` matters.
      stage: ``"both"`` (default) or ``"hard"`` (stage 1, the basic estimate, only).
      block_size: block side, 2..16 (8 as in the paper; bior1.5 needs 8, other sizes use the
        DCT in stage 1 too).
      step: reference grid spacing, 1..block_size (3 as in the paper and the package; 4 is
        faster for 0.04-0.13 dB less PSNR, see Notes).
      search_size: odd side of the search window, 1..75 (the package: 39; here 21).
      group_size: blocks per group in stage 1 and stage 2, powers of two from 1 to 64 (paper:
        16 and 32; here 16 and 16, see Notes).
      lambda_hard: hard threshold in units of sigma (3.0, the package's value for white noise;
        the paper's 2.7).
      mu2: Wiener noise factor (0.4, the package's value for white noise; the paper's 1).
      beta: Kaiser window parameter of the aggregation weights (2.0).
      rematch: redo the block matching on the basic estimate for stage 2 (the paper's way);
        by default both stages use the matches found on the noisy image (see Notes).
      mode: boundary extension for blocks and searches near the border, scipy.ndimage's names
        ``"reflect"``, ``"mirror"``, ``"nearest"``, ``"wrap"``, ``"constant"`` (with ``cval``).
        Images smaller than a block or the window (1x1 included) are extended the same way.
      cval: fill value of ``mode="constant"`` (in image units).
      layout: None to infer from ndim (HW, HWC, NHWC), or ``"CHW"``/``"NCHW"``.
      threads: how many parts of each image's references (whole chunks, see ``chunk_refs``)
        run at once, in threads, for a concrete (not traced) batch on CPU; ``None`` (default):
        the CPU cores this process may use, at most the image's chunks. XLA:CPU runs the
        loop over chunks on little more than one core; the parts' sums are added before stage 2
        and at the end, so the result equals one program's up to the order of the
        floating-point sums (uint8 output: within one level). Inside ``jax.jit`` the image is
        one program.
      chunk_refs: about how many reference blocks one step of the compiled loop handles (a tile
        of the reference grid: whole rows, or pieces of one row when a row holds more).
        ``None`` (default): on CPU 256 for grey and 85 for colour (about 1 MB of groups a
        stage step, inside a core's L2 cache; why: benchmarks/NOTES.md, "BM3D"); 8192 on other
        backends (fewer, larger steps of the loop on a GPU). The result does not depend on
        it (up to float rounding).

    Returns:
      The denoised image: same shape, layout and dtype (integers rounded and saturated once).

    Raises:
      ValueError: before any work, for a negative or NaN sigma, an even or too large
        ``search_size``, a bad ``block_size``, ``step``, ``group_size``, ``stage``, ``mode``,
        ``max_value`` or layout.

    Notes:
      Reference: Dabov, Foi, Katkovnik, Egiazarian, "Image denoising by sparse 3-D
      transform-domain collaborative filtering", IEEE TIP 2007; Lebrun, "An Analysis and
      Implementation of the BM3D Image Denoising Method", IPOL 2012; the ``bm3d`` package
      (PyPI 4.0.3, profile ``'np'``, ``bm3d.bm3d(z, sigma_psd)`` / ``bm3d_rgb``).

      Deviations, each measured on 256x256 grey crops of scikit-image's ``camera``,
      ``astronaut`` and ``coffee`` at sigma 15, 25, 50 (PSNR against the package):

      - search window 21 instead of 39 (39: +0.04..0.14 dB, and slower);
      - one block matching, on the noisy luma, shared by both stages (``rematch=True``, the
        paper's second matching on the basic estimate, was 0.01-0.08 dB worse here and costs
        a second matching);
      - groups always hold exactly ``group_size`` blocks: no distance threshold tau_match
        (the package's thresholds change its own result by < 0.05 dB; applied as the paper
        states they cost us 0.4 dB); 16 blocks in stage 2 (32 was 0.01-0.02 dB worse with the
        shared matching);
      - the DC coefficient is thresholded like the others; opponent channels are not
        min/max-normalised (a linear rescaling that does not change the result).

      Result (``benchmarks/bm3d_vs_package.md``: 256x256 crops): grey
      camera/astronaut/coffee at sigma 15/25/50, PSNR 0.07-0.29 dB below the package (largest
      on the textured coffee crop: 0.24 and 0.29 dB at sigma 25 and 50); RGB
      astronaut/coffee/chelsea, 0.12-0.32 dB below ``bm3d_rgb`` (coffee at sigma 50: 0.32);
      both in a fraction of the package's CPU time (why: benchmarks/NOTES.md, "BM3D").
      ``step=4``: 0.12-0.35 dB below the package, in less time still.

    Example:
      >>> import numpy as np
      >>> import imgproc
      >>> from imgproc.restoration.block_matching import bm3d
      >>> rng = np.random.default_rng(0)
      >>> clean = np.full((32, 32), 0.5, np.float32)
      >>> noisy = clean + rng.normal(0, 0.1, clean.shape).astype(np.float32)
      >>> out = np.asarray(bm3d(noisy, sigma=0.1))
      >>> out.shape, out.dtype
      ((32, 32), dtype('float32'))
      >>> bool(np.abs(out - clean).std() < 0.3 * np.abs(noisy - clean).std())
      True
    """
    check_stage(stage)
    mode = check_mode(mode)
    block_size = check_int("block_size", block_size, low=2, high=MAX_BLOCK)
    step = check_int("step", step, low=1, high=block_size)
    search_size = check_odd("search_size", search_size, low=1, high=MAX_SEARCH)
    if chunk_refs is not None:
        chunk_refs = check_int("chunk_refs", chunk_refs, low=1, high=1 << 24)
    if threads is not None:
        threads = check_int("threads", threads, low=1, high=1024)
    if (not isinstance(group_size, (tuple, list)) or len(group_size) != 2
            or any(g not in GROUP_SIZES for g in group_size)):
        raise ValueError(f"group_size must be a pair of powers of two from {GROUP_SIZES}; got {group_size!r}")
    if max(group_size) > search_size ** 2:
        raise ValueError(f"group_size {tuple(group_size)} needs a search window of at least "
                         f"{max(group_size)} blocks; search_size={search_size} has {search_size ** 2}")
    for name, v in (("lambda_hard", lambda_hard), ("mu2", mu2), ("beta", beta)):
        check_number(name, v, low=0)
    check_per_image("sigma", sigma, allow_none=True)
    if max_value is not None:
        check_number("max_value", max_value, low=0, low_open=True)

    image, layout = check_image(image, layout)
    dtype = image.dtype
    check_dtype(dtype)
    max_value = resolve_max(max_value, dtype)
    x = to_nhwc(jnp.asarray(image), layout)
    b, h, w, c = x.shape
    if chunk_refs is None:
        chunk_refs = _default_chunk_refs(channels=3 if c in (3, 4) else 1)
    rest = (("stage", stage), ("mode", mode), ("colour", c in (3, 4)),
            ("n_hard", int(group_size[0])), ("n_wiener", int(group_size[1])),
            ("lam", float(lambda_hard)), ("mu2", float(mu2)), ("beta", float(beta)),
            ("rematch", bool(rematch)))
    geom = (("block", block_size), ("step", step), ("search", search_size), ("chunk_refs", chunk_refs))
    static = (geom, rest)
    sig = jnp.zeros(()) if sigma is None else jnp.asarray(sigma, jnp.float32)
    mx, cv = jnp.asarray(max_value, jnp.float32), jnp.asarray(cval, jnp.float32)
    out_dtype = jnp.dtype(dtype).name
    parts = _parts(x, h, w, geom, threads)
    if parts > 1:
        y = _bm3d_parts(x, sig, mx, cv, estimate=sigma is None, static=static, out_dtype=out_dtype, parts=parts)
    else:
        y = _bm3d_jit(x, sig, mx, cv, estimate=sigma is None, static=static, out_dtype=out_dtype)
    return from_nhwc(y, layout, image.shape)


OPS = (
    OpInfo("bm3d", bm3d, checks={**MODE_CHECK, "stage": check_stage}, not_differentiable=NOT_DIFFERENTIABLE["bm3d"]),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
