"""Colour-space conversions with scikit-image's definitions: ``rgb_to_ycbcr`` /
``ycbcr_to_rgb`` (``skimage.color.rgb2ycbcr``: ITU-R BT.601, studio range; with
``full_range=True``, BT.601 full range as JPEG/JFIF and Pillow's ``convert("YCbCr")``) and
``rgb_to_lab`` / ``lab_to_rgb`` (``skimage.color.rgb2lab``: sRGB, D65, 2° observer).

Like scikit-image, the RGB side is in [0, 1]: an RGB input is divided by ``max_value``
(255 for uint8, 65535 for uint16, 1 for floats) and an RGB output is float32 in [0, 1]
(``lab_to_rgb`` clips to it, as skimage does). YCbCr and Lab values are float32 in
skimage's units (Y in [16, 235], Cb and Cr in [16, 240]; full range: Y in [0, 255], Cb
and Cr in [0.5, 255.5], 128 ± 127.5, pure blue's Cb and pure red's Cr 255.5 where
Pillow's uint8 levels saturate at 255; L in [0, 100]). A float64 input gives float64
(computed in float32, the library's rule for float64). They are conversions, not
pipeline stages (a stage keeps the value range).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from imgproc.augment.colour import on_planes
from imgproc.core.array_type import callers_type
from imgproc.core.arrays import resolve_max
from imgproc.core.eager import compiled_when_eager

YCBCR_FROM_RGB = np.array([[65.481, 128.553, 24.966], [-37.797, -74.203, 112.0], [112.0, -93.786, -18.214]])
RGB_FROM_YCBCR = np.linalg.inv(YCBCR_FROM_RGB)
# BT.601 full range (JFIF, what JPEG files and Pillow's "YCbCr" mode hold), on 0..255 levels
YCBCR_FULL_FROM_RGB = np.array([[0.299, 0.587, 0.114], [-0.168735892, -0.331264108, 0.5],
                                [0.5, -0.418687589, -0.081312411]])
RGB_FROM_YCBCR_FULL = np.linalg.inv(YCBCR_FULL_FROM_RGB)
XYZ_FROM_RGB = np.array([[0.412453, 0.357580, 0.180423], [0.212671, 0.715160, 0.072169],
                         [0.019334, 0.119193, 0.950227]])
RGB_FROM_XYZ = np.linalg.inv(XYZ_FROM_RGB)
D65_2DEG = (0.95047, 1.0, 1.08883)


def _mat(m, planes, offset=(0.0, 0.0, 0.0)):
    return tuple(float(m[i, 0]) * planes[0] + float(m[i, 1]) * planes[1] + float(m[i, 2]) * planes[2] + offset[i]
                 for i in range(3))


def _scaled(image, max_value):
    return 1.0 / resolve_max(max_value, image.dtype)


@callers_type
@compiled_when_eager
def rgb_to_ycbcr(image, *, full_range=False, max_value=None, layout=None):
    """RGB to YCbCr (ITU-R BT.601), float32 out; 3 channels, any layout.

    ``full_range=False`` (the default): the studio range of ``skimage.color.rgb2ycbcr``,
    ``Y = 16 + 65.481 R + 128.553 G + 24.966 B``, ... with R, G, B in [0, 1] (``x /
    max_value``): Y in [16, 235], Cb and Cr in [16, 240]. ``full_range=True``: the full
    range of JPEG/JFIF, what Pillow's ``Image.convert("YCbCr")`` computes (within one level;
    Pillow rounds its fixed-point sums): ``Y = 0.299 R + 0.587 G + 0.114 B``, ``Cb = 128 +
    0.5 (B - Y) / 0.886``, ``Cr = 128 + 0.5 (R - Y) / 0.701`` with R, G, B in 0..255: Y in
    [0, 255], Cb and Cr in [0.5, 255.5] (pure red's Cr is 255.5, below; Pillow's uint8
    levels saturate it at 255).

    Example:
        >>> import numpy as np, imgproc
        >>> np.round(imgproc.rgb_to_ycbcr(np.array([[[255, 255, 255]]], np.uint8)), 3).tolist()
        [[[235.0, 128.0, 128.0]]]
        >>> np.round(imgproc.rgb_to_ycbcr(np.array([[[255, 0, 0]]], np.uint8), full_range=True)).tolist()
        [[[76.0, 85.0, 256.0]]]
    """
    _check_full_range(full_range)
    s = _scaled(image, max_value)
    if full_range:
        s = s * 255.0
        return on_planes(image, layout, "rgb_to_ycbcr",
                          lambda r, g, b: _mat(YCBCR_FULL_FROM_RGB, (r * s, g * s, b * s), (0.0, 128.0, 128.0)))[0]
    return on_planes(image, layout, "rgb_to_ycbcr",
                      lambda r, g, b: _mat(YCBCR_FROM_RGB, (r * s, g * s, b * s), (16.0, 128.0, 128.0)))[0]


def _check_full_range(full_range):
    if not isinstance(full_range, (bool, np.bool_)):
        raise ValueError(f"full_range must be True (BT.601 full range, as JPEG and Pillow) or False (studio "
                         f"range, as skimage); got {full_range!r}")


@callers_type
@compiled_when_eager
def ycbcr_to_rgb(image, *, full_range=False, layout=None):
    """YCbCr to RGB in [0, 1], float32 (the inverse matrix; not clipped, as skimage).

    ``full_range=False``: YCbCr in skimage's studio-range units, ``skimage.color.ycbcr2rgb``.
    ``full_range=True``: BT.601 full range on 0..255 levels (JPEG/JFIF; a Pillow "YCbCr"
    image), whose RGB Pillow's ``convert("RGB")`` gives (times 255, within one level).

    Example:
        >>> import numpy as np, imgproc
        >>> np.round(imgproc.ycbcr_to_rgb(np.array([[[235.0, 128.0, 128.0]]], np.float32)), 4).tolist()
        [[[1.0, 1.0, 1.0]]]
        >>> np.round(imgproc.ycbcr_to_rgb(np.array([[[255.0, 128.0, 128.0]]], np.float32), full_range=True), 4).tolist()
        [[[1.0, 1.0, 1.0]]]
    """
    _check_full_range(full_range)
    if full_range:
        return on_planes(image, layout, "ycbcr_to_rgb",
                          lambda y, cb, cr: tuple(p / 255.0 for p in _mat(RGB_FROM_YCBCR_FULL, (y, cb - 128.0, cr - 128.0))))[0]
    return on_planes(image, layout, "ycbcr_to_rgb",
                      lambda y, cb, cr: _mat(RGB_FROM_YCBCR, (y - 16.0, cb - 128.0, cr - 128.0)))[0]


def _lab_f(t):
    # cbrt of the clamped value: cbrt's infinite slope at 0 would make the gradient NaN
    # at black, through the branch not taken (the same values: the clamp is inactive where taken)
    return jnp.where(t > 0.008856, jnp.cbrt(jnp.maximum(t, 0.008856)), 7.787 * t + 16.0 / 116.0)


@callers_type
@compiled_when_eager
def rgb_to_lab(image, *, max_value=None, layout=None):
    """sRGB to CIE L*a*b* (D65, 2° observer) as ``skimage.color.rgb2lab``: the sRGB curve
    undone, ``skimage.color.xyz_from_rgb``, then Lab relative to the D65 white. RGB in [0, 1]
    (``x / max_value``); float32 out. 3 channels.

    Example:
        >>> import numpy as np, imgproc
        >>> lab = imgproc.rgb_to_lab(np.ones((1, 1, 3), np.float32))  # white: L = 100, a and b near 0
        >>> round(float(lab[0, 0, 0]), 3), bool(np.abs(lab[0, 0, 1:]).max() < 0.01)
        (100.0, True)
    """
    s = _scaled(image, max_value)

    def conv(r, g, b):
        lin = [jnp.where(c > 0.04045, ((jnp.maximum(c, 0.04045) + 0.055) / 1.055) ** 2.4, c / 12.92)
               for c in (r * s, g * s, b * s)]
        x, y, z = _mat(XYZ_FROM_RGB, lin)
        fx, fy, fz = _lab_f(x / D65_2DEG[0]), _lab_f(y / D65_2DEG[1]), _lab_f(z / D65_2DEG[2])
        return 116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)

    return on_planes(image, layout, "rgb_to_lab", conv)[0]


@callers_type
@compiled_when_eager
def lab_to_rgb(image, *, layout=None):
    """CIE L*a*b* (D65, 2°) to sRGB in [0, 1], float32, as ``skimage.color.lab2rgb``
    (negative Z clipped to 0 and the result clipped to [0, 1], as skimage does, without its
    warning).

    Example:
        >>> import numpy as np, imgproc
        >>> np.round(imgproc.lab_to_rgb(np.array([[[100.0, 0.0, 0.0]]], np.float32)), 4).tolist()
        [[[1.0, 1.0, 1.0]]]
    """
    def conv(L, a, b):
        fy = (L + 16.0) / 116.0
        f = (a / 500.0 + fy, fy, jnp.maximum(fy - b / 200.0, 0.0))
        xyz = [jnp.where(t > 0.2068966, t ** 3, (t - 16.0 / 116.0) / 7.787) * w for t, w in zip(f, D65_2DEG)]
        lin = _mat(RGB_FROM_XYZ, xyz)
        return tuple(jnp.clip(jnp.where(c > 0.0031308, 1.055 * jnp.maximum(c, 0.0031308) ** (1 / 2.4) - 0.055,
                                        c * 12.92), 0.0, 1.0) for c in lin)

    return on_planes(image, layout, "lab_to_rgb", conv)[0]
