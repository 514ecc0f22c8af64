"""JPEG compression artefacts, written in JAX: ``jpeg_compression(quality)`` and
``random_jpeg_compression(quality_range)``.

The image goes through what a baseline JPEG encoder and decoder (libjpeg, what Pillow
uses) do to it, without the entropy coding (lossless, so it does not change a pixel):

1. RGB to YCbCr (JFIF, full range), rounded to integers;
2. 4:2:0 chroma subsampling: the mean of each 2x2 block with libjpeg's alternating
   rounding bias (1, 2, 1, 2, ...), the image first extended to a multiple of 16 pixels by
   repeating its last row and column (libjpeg's edge expansion);
3. level shift by -128 and the 8x8 DCT-II (orthonormal, which is the JPEG FDCT);
4. quantisation with the standard IJG tables (ITU T.81 Annex K) scaled by ``quality``
   exactly as libjpeg's ``jpeg_quality_scaling``: ``scale = 5000 / q`` below 50, else ``200
   - 2 q``, entries ``(base * scale + 50) // 100`` clipped to [1, 255]; coefficients
   rounded half away from zero, as libjpeg does;
5. dequantisation, inverse DCT, +128, rounded and clipped to [0, 255];
6. chroma upsampling with libjpeg's "fancy" triangle filter (``h2v2_fancy_upsample``:
   weights 9/16, 3/16, 3/16, 1/16 with its rounding biases 8 and 7);
7. YCbCr to RGB (JFIF), rounded and clipped, and the extension cropped away.

One-channel images are the Y channel alone (no subsampling). Values are mapped to 0..255
first (``x * 255 / max_value``) and back at the end, so any range works. The DCT is in
float32 where libjpeg's default uses a 13-bit fixed-point one (``JDCT_ISLOW``): results
differ from Pillow's by rounding, measured in ``tests/augment/test_jpeg.py`` and
``docs/augment.md`` (PSNR between this and Pillow's decoded JPEG).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from imgproc.augment.common import back, channels
from imgproc.core.array_type import callers_type
from imgproc.core.arrays import from_nhwc, resolve_max, to_nhwc
from imgproc.core.images import check_image
from imgproc.core.keys import below, doctests, random_op, uniforms
from imgproc.core.registry import KEEPS_TARGETS, NOT_DIFFERENTIABLE, OpInfo, register_ops
from imgproc.core.validate import check_int, check_range, is_traced

# ITU T.81 Annex K.1 (the IJG "standard" tables), in natural (row-major) order.
LUMINANCE_TABLE = np.array([
    16, 11, 10, 16, 24, 40, 51, 61,
    12, 12, 14, 19, 26, 58, 60, 55,
    14, 13, 16, 24, 40, 57, 69, 56,
    14, 17, 22, 29, 51, 87, 80, 62,
    18, 22, 37, 56, 68, 109, 103, 77,
    24, 35, 55, 64, 81, 104, 113, 92,
    49, 64, 78, 87, 103, 121, 120, 101,
    72, 92, 95, 98, 112, 100, 103, 99,
], np.int32).reshape(8, 8)
CHROMINANCE_TABLE = np.array([
    17, 18, 24, 47, 99, 99, 99, 99,
    18, 21, 26, 66, 99, 99, 99, 99,
    24, 26, 56, 99, 99, 99, 99, 99,
    47, 66, 99, 99, 99, 99, 99, 99,
    99, 99, 99, 99, 99, 99, 99, 99,
    99, 99, 99, 99, 99, 99, 99, 99,
    99, 99, 99, 99, 99, 99, 99, 99,
    99, 99, 99, 99, 99, 99, 99, 99,
], np.int32).reshape(8, 8)


def _dct_matrix():
    k = np.arange(8)
    c = np.sqrt(2 / 8) * np.cos((2 * k[None, :] + 1) * k[:, None] * np.pi / 16)
    c[0] /= np.sqrt(2)
    return c.astype(np.float32)


DCT = _dct_matrix()


def quantisation_tables(quality):
    """libjpeg's ``jpeg_set_quality``: the luminance and chrominance tables (int32 8x8) for
    ``quality`` in 1..100 (traced integers work)."""
    q = jnp.clip(jnp.asarray(quality, jnp.int32), 1, 100)
    scale = jnp.where(q < 50, 5000 // q, 200 - 2 * q)

    def scaled(base):
        return jnp.clip((jnp.asarray(base) * scale + 50) // 100, 1, 255)

    return scaled(LUMINANCE_TABLE), scaled(CHROMINANCE_TABLE)


def _round_away(x):
    return jnp.sign(x) * jnp.floor(jnp.abs(x) + 0.5)


def _blocks_roundtrip(plane, table):
    """DCT, quantise, dequantise, IDCT of every 8x8 block of (N, H, W) planes (H, W
    multiples of 8), level-shifted."""
    n, h, w = plane.shape
    b = (plane - 128.0).reshape(n, h // 8, 8, w // 8, 8)
    c = jnp.asarray(DCT)
    hi = jax.lax.Precision.HIGHEST
    coef = jnp.einsum("uy,naybx,vx->nabuv", c, b, c, precision=hi)
    t = table.astype(jnp.float32)
    coef = _round_away(coef / t) * t
    out = jnp.einsum("uy,nabuv,vx->naybx", c, coef, c, precision=hi)
    return jnp.clip(jnp.round(out.reshape(n, h, w) + 128.0), 0.0, 255.0)


def _downsample(plane):
    """libjpeg ``h2v2_downsample``: (sum of 2x2 + bias) >> 2, bias 1, 2, 1, 2... by column."""
    n, h, w = plane.shape
    s = plane.reshape(n, h // 2, 2, w // 2, 2).sum((2, 4))
    bias = jnp.where(jnp.arange(w // 2) % 2 == 0, 1.0, 2.0)
    return jnp.floor((s + bias) / 4.0)


def _upsample(plane):
    """libjpeg ``h2v2_fancy_upsample`` (triangle filter; edges repeat the last row/column)."""
    up = jnp.concatenate([plane[:, :1], plane[:, :-1]], 1)
    down = jnp.concatenate([plane[:, 1:], plane[:, -1:]], 1)
    cols = jnp.stack([3 * plane + up, 3 * plane + down], 2)  # (n, h, 2, w): upper, lower output rows
    n, h, _, w = cols.shape
    cols = cols.reshape(n, 2 * h, w)
    left = jnp.concatenate([cols[..., :1], cols[..., :-1]], -1)
    right = jnp.concatenate([cols[..., 1:], cols[..., -1:]], -1)
    even = jnp.floor((3 * cols + left + 8) / 16)
    odd = jnp.floor((3 * cols + right + 7) / 16)
    return jnp.stack([even, odd], -1).reshape(n, 2 * h, 2 * w)


def _jpeg_nhwc(x, quality):
    """JPEG round trip of (N, H, W, C) float32 values in 0..255, C in (1, 3)."""
    n, h, w, c = x.shape
    ph, pw = -h % 16, -w % 16
    x = jnp.pad(x, ((0, 0), (0, ph), (0, pw), (0, 0)), mode="edge")
    luma, chroma = quantisation_tables(quality)
    if c == 1:
        y = _blocks_roundtrip(jnp.round(x[..., 0]), luma)
        return y[:, :h, :w, None]
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    y = jnp.clip(jnp.round(0.299 * r + 0.587 * g + 0.114 * b), 0, 255)
    cb = jnp.clip(jnp.round(-0.168735892 * r - 0.331264108 * g + 0.5 * b + 128.0), 0, 255)
    cr = jnp.clip(jnp.round(0.5 * r - 0.418687589 * g - 0.081312411 * b + 128.0), 0, 255)
    y = _blocks_roundtrip(y, luma)
    cb = _upsample(_blocks_roundtrip(_downsample(cb), chroma))
    cr = _upsample(_blocks_roundtrip(_downsample(cr), chroma))
    cb, cr = cb - 128.0, cr - 128.0
    rgb = jnp.stack([y + 1.402 * cr, y - 0.344136286 * cb - 0.714136286 * cr, y + 1.772 * cb], -1)
    return jnp.clip(jnp.round(rgb), 0, 255)[:, :h, :w]


def _check_quality(quality):
    if is_traced(quality):
        return quality
    if isinstance(quality, bool) or not float(quality).is_integer():
        raise ValueError(f"quality must be an integer in [1, 100]; got {quality!r}")
    return check_int("quality", int(quality), low=1, high=100)


@callers_type
def jpeg_compression(image, quality, *, max_value=None, layout=None):
    """The image after a JPEG encode and decode at ``quality`` (1..100, libjpeg's scale),
    computed in JAX (see the module docstring for every step): 4:2:0 chroma subsampling,
    8x8 DCT, the IJG quantisation tables scaled as libjpeg does, libjpeg's fancy chroma
    upsampling. Not differentiable: quantised coefficients and 8-bit levels (its gradient
    is 0 almost everywhere). Compared with Pillow's encoder and decoder at the same quality in
    ``tests/augment/test_jpeg.py`` (PSNR, see docs/augment.md).

    Args:
        image: HW, HWC, CHW, NHWC or NCHW with 1 or 3 channels; any accepted dtype (values
            scaled to 0..255 by ``255 / max_value`` and back).
        quality: integer in [1, 100] (traced: new values do not recompile).

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.full((16, 16, 3), (200, 30, 90), np.uint8)
        >>> y = imgproc.jpeg_compression(x, 75)
        >>> y.dtype, int(np.abs(y.astype(int) - x).max()) <= 3
        (dtype('uint8'), True)
    """
    _check_quality(quality)
    image, layout = check_image(image, layout)
    c = channels(image, layout)
    if c not in (1, 3):
        raise ValueError(f"jpeg_compression needs 1 or 3 channels; got shape {tuple(image.shape)} "
                         f"with layout {layout!r}")
    m = resolve_max(max_value, image.dtype)
    x = to_nhwc(jnp.asarray(image).astype(jnp.float32), layout) * (255.0 / jnp.asarray(m, jnp.float32))
    y = _jpeg_nhwc(x, quality) * (jnp.asarray(m, jnp.float32) / 255.0)
    return back(from_nhwc(y, layout, image.shape), image.dtype)


def _jpeg_params(key, shape, *, layout, quality_range=(30, 95)):
    check_range("quality_range", quality_range, low=1, high=100)
    lo, hi = quality_range
    lo, hi = jnp.asarray(lo, jnp.int32), jnp.asarray(hi, jnp.int32)
    return {"quality": lo + below(uniforms(key, 1)[0], hi - lo + 1)}


def _apply_jpeg(image, params, *, layout, max_value=None):
    return jpeg_compression(image, params["quality"], max_value=max_value, layout=layout)


OPS = (
    OpInfo("jpeg_compression", jpeg_compression, not_differentiable=NOT_DIFFERENTIABLE["jpeg_compression"]),
    random_op("random_jpeg_compression", _jpeg_params, _apply_jpeg,
              doc=""":func:`jpeg_compression` at a quality drawn uniformly from the integers of
    ``quality_range`` (inclusive; albumentations' ``ImageCompression`` default range is
    (99, 100), torchvision's ``JPEG`` takes the range explicitly). Parameters:
    ``{"quality": int32}``. Not differentiable, as :func:`jpeg_compression`.""",
              not_differentiable=NOT_DIFFERENTIABLE["jpeg_compression"]),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
__test__ = doctests(OPS)  # the examples of the functions random_op wrote
