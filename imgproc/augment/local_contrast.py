"""CLAHE (contrast-limited adaptive histogram equalisation) with OpenCV's definition
(``cv2.createCLAHE(clipLimit, tileGridSize).apply``), each channel on its own.

OpenCV's algorithm, step by step (``modules/imgproc/src/clahe.cpp``):

1. the image is cut in ``tiles`` = (rows, columns) tiles; when a side is not a multiple of
   the tile count, both sides are first extended (``BORDER_REFLECT_101``) by ``tiles -
   side % tiles`` (so a side that is a multiple gains a full tile count, as in OpenCV);
2. per tile, a 256-bin histogram; bins above ``limit = max(int(clip_limit * tile_area /
   256), 1)`` are cut to it and the excess is spread: ``excess // 256`` to every bin, the
   remaining ``r`` one each to bins ``0, s, 2s, ...`` with ``s = max(256 // r, 1)``
   (``clip_limit <= 0``: no clipping);
3. the tile's map is ``round(cumsum(hist) * 255 / tile_area)``;
4. each pixel interpolates the maps of the four nearest tile centres bilinearly
   (``t = x / tile_width - 0.5``, clamped to the outer tiles), rounded once.

Values are binned in 256 levels ``round(clip(x, 0, max) / max * 255)`` (exactly the values
of a uint8 image; OpenCV uses 65536 bins for 16-bit input, imgproc 256) and the result is
scaled back by ``max / 255``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from imgproc.augment.common import back
from imgproc.core.array_type import callers_type
from imgproc.core.arrays import from_nhwc, resolve_max, to_nhwc
from imgproc.core.eager import compiled_when_eager
from imgproc.core.images import check_image
from imgproc.core.keys import doctests, random_op, uniform
from imgproc.core.registry import KEEPS_TARGETS, NOT_DIFFERENTIABLE, OpInfo, register_ops
from imgproc.core.validate import check_number, check_range, check_size_pair

BINS = 256


def _tile_maps(v, tiles, clip_limit):
    """(tY, tX, 256) maps of an extended plane of integer levels ``v`` (int32)."""
    ty, tx = tiles
    h, w = v.shape
    th, tw = h // ty, w // tx
    area = th * tw
    tile_id = (jnp.arange(h)[:, None] // th) * tx + jnp.arange(w)[None, :] // tw
    hist = jnp.zeros(ty * tx * BINS, jnp.int32).at[(tile_id * BINS + v).ravel()].add(1).reshape(ty * tx, BINS)
    c = jnp.asarray(clip_limit, jnp.float32)
    limit = jnp.maximum(jnp.floor(c * area / BINS).astype(jnp.int32), 1)
    clipped = jnp.minimum(hist, limit)
    excess = jnp.sum(hist - clipped, axis=1, keepdims=True)
    batch = excess // BINS
    residual = excess - batch * BINS
    step = jnp.maximum(BINS // jnp.maximum(residual, 1), 1)
    i = jnp.arange(BINS)[None, :]
    extra = ((residual > 0) & (i % step == 0) & (i // step < residual)).astype(jnp.int32)
    hist = jnp.where(c > 0, clipped + batch + extra, hist)
    scale = jnp.float32((BINS - 1) / area)
    lut = jnp.clip(jnp.round(jnp.cumsum(hist, axis=1).astype(jnp.float32) * scale), 0, 255)
    return lut.reshape(ty, tx, BINS), th, tw


def _clahe_plane(plane, m, tiles, clip_limit):
    h, w = plane.shape
    v = jnp.clip(jnp.round(plane / m * 255.0), 0, 255).astype(jnp.int32)
    ty, tx = tiles
    ext = v
    if h % ty or w % tx:  # OpenCV adds tiles - n % tiles on both sides (a full tile count on a divisible one)
        ext = jnp.pad(v, ((0, ty - h % ty), (0, tx - w % tx)), mode="reflect")  # jnp "reflect" = REFLECT_101
    lut, th, tw = _tile_maps(ext, tiles, clip_limit)

    def rounded(product):
        # Compiled, XLA:CPU's backend fuses a multiply that feeds an add into one
        # multiply-add, rounded once, and a sum then lands on the other side of a .5 tie
        # (one level off OpenCV, which rounds each product; 31 of 19,311 pixels of the
        # parity test). A min with a bound no product reaches keeps the multiply apart.
        return jnp.minimum(product, jnp.float32(3e38))

    def coords(n, size, count):
        f = rounded(jnp.arange(n, dtype=jnp.float32) * jnp.float32(1.0 / size)) - 0.5
        lo = jnp.floor(f)
        a = f - lo
        lo = lo.astype(jnp.int32)
        return jnp.maximum(lo, 0), jnp.minimum(lo + 1, count - 1), a

    y1, y2, ya = coords(h, th, ty)
    x1, x2, xa = coords(w, tw, tx)
    ya, xa = ya[:, None], xa[None, :]

    def at(ti, tj):
        return lut[ti[:, None], tj[None, :], v]

    top = rounded(at(y1, x1) * (1.0 - xa)) + rounded(at(y1, x2) * xa)
    bottom = rounded(at(y2, x1) * (1.0 - xa)) + rounded(at(y2, x2) * xa)
    res = rounded(top * (1.0 - ya)) + rounded(bottom * ya)
    return jnp.clip(jnp.round(res), 0, 255) * (m / 255.0)


@callers_type
@compiled_when_eager
def clahe(image, *, clip_limit=40.0, tiles=(8, 8), max_value=None, layout=None):
    """Contrast-limited adaptive histogram equalisation of each channel: OpenCV's
    ``cv2.createCLAHE(clipLimit=clip_limit, tileGridSize=(tiles[1], tiles[0])).apply``
    (module docstring: every step). uint8 results equal OpenCV's (tested on grayscale
    images and per channel of RGB ones). Not differentiable: lookups in per-tile
    histograms (its gradient is 0 almost everywhere).

    Args:
        image: HW, HWC, CHW, NHWC or NCHW; any accepted dtype (binned in 256 levels).
        clip_limit: OpenCV's ``clipLimit`` (traced; 40 is its default; <= 0: no clipping).
        tiles: (rows, columns) of the tile grid (static; OpenCV's default 8 x 8).

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.tile(np.arange(60, 124, dtype=np.uint8), (64, 1))  # a ramp over 64 levels
        >>> y = imgproc.clahe(x, clip_limit=2.0)
        >>> y.dtype, int(y.max()) - int(y.min()) > 63  # stretched
        (dtype('uint8'), True)
    """
    check_number("clip_limit", clip_limit)
    tiles = check_size_pair("tiles", tiles)
    image, layout = check_image(image, layout)
    m = resolve_max(max_value, image.dtype)
    x = to_nhwc(jnp.asarray(image).astype(jnp.float32), layout)
    h, w = x.shape[1], x.shape[2]
    if tiles[0] > h or tiles[1] > w:
        raise ValueError(f"tiles {tiles} must not exceed the image size ({h}, {w})")
    fn = jax.vmap(jax.vmap(lambda p: _clahe_plane(p, m, tiles, clip_limit), in_axes=-1, out_axes=-1))
    return back(from_nhwc(fn(x), layout, image.shape), image.dtype)


def _clahe_params(key, shape, *, layout, clip_range=(1.0, 4.0)):
    check_range("clip_range", clip_range, low=0)
    return {"clip_limit": uniform(key, clip_range[0], clip_range[1])}


def _apply_clahe(image, params, *, layout, tiles=(8, 8), max_value=None):
    return clahe(image, clip_limit=params["clip_limit"], tiles=tiles, max_value=max_value, layout=layout)


OPS = (
    OpInfo("clahe", clahe, not_differentiable=NOT_DIFFERENTIABLE["clahe"]),
    random_op("random_clahe", _clahe_params, _apply_clahe,
              doc=""":func:`clahe` with ``clip_limit ~ U(clip_range)`` (albumentations' ``CLAHE(clip_limit=(1,
    4))`` range; it applies CLAHE to the L channel of Lab for RGB images, imgproc to each
    channel). Parameters: ``{"clip_limit"}``. Not differentiable, as :func:`clahe`.""",
              not_differentiable=NOT_DIFFERENTIABLE["clahe"]),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
__test__ = doctests(OPS)  # the examples of the functions random_op wrote
