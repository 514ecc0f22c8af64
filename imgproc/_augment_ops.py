"""Deterministic augmentation ops (geometry, colour, erasing) and their key-first random
twins. See :mod:`imgproc.augment` for the overview and :mod:`imgproc._augment_base` for
the value-range and batch rules.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from imgproc._arrays import channel_axis, spatial_axes
from imgproc._checks import check_image
from imgproc._augment_base import (
    back,
    check_number,
    check_range,
    check_static,
    hash_normal,
    hash_uniform,
    hw,
    need_rgb,
    random_op,
    resolve_max,
    to_float,
)
from imgproc._filters import gaussian_blur, sharpen

SAMPLE_MODES = ("constant", "nearest", "reflect", "mirror", "wrap")

# --------------------------------------------------------------------------- geometry


def flip_left_right(image, *, layout=None):
    """Mirror the columns (W axis). Any layout; shape and dtype kept.

    Matches ``np.flip(image, axis=W)`` (``tf.image.flip_left_right``, ``dm_pix.flip_left_right``).

    Example:
        >>> import numpy as np, imgproc
        >>> np.asarray(imgproc.flip_left_right(np.array([[1, 2, 3]], np.uint8))).tolist()
        [[3, 2, 1]]
    """
    image, layout = check_image(image, layout)
    return jnp.flip(jnp.asarray(image), spatial_axes(layout)[1])


def flip_up_down(image, *, layout=None):
    """Mirror the rows (H axis). Any layout; shape and dtype kept. Matches ``np.flip(image, axis=H)``."""
    image, layout = check_image(image, layout)
    return jnp.flip(jnp.asarray(image), spatial_axes(layout)[0])


def rot90(image, k=1, *, layout=None):
    """Rotate by ``k`` quarter turns counter-clockwise (``np.rot90(image, k, axes=(H, W))``).

    ``k`` is static (an odd ``k`` swaps H and W). Any layout; dtype kept.

    Example:
        >>> import numpy as np, imgproc
        >>> np.asarray(imgproc.rot90(np.array([[1, 2], [3, 4]]).astype(np.uint8))).tolist()
        [[2, 4], [1, 3]]
    """
    image, layout = check_image(image, layout)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"k must be an integer number of quarter turns; got {k!r}")
    return jnp.rot90(jnp.asarray(image), int(k), axes=spatial_axes(layout))


def _check_size(size, image, layout, name="size"):
    h, w = hw(image, layout)
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        size = (int(size), int(size))
    try:
        sh, sw = (int(s) for s in size)
        ok = all(float(s) == int(s) for s in size)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an int or a pair (height, width); got {size!r}") from None
    if not ok or sh < 1 or sw < 1:
        raise ValueError(f"{name} must be positive integers (height, width); got {size!r}")
    return sh, sw, h, w


def crop(image, top, left, *, size, layout=None):
    """Cut the ``size = (height, width)`` window whose top-left pixel is ``(top, left)``.

    ``size`` is static; ``top`` and ``left`` may be traced (``lax.dynamic_slice``: a window
    reaching past the border is moved back inside, as XLA clamps start indices).

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.arange(16, dtype=np.uint8).reshape(4, 4)
        >>> np.asarray(imgproc.crop(x, 1, 2, size=(2, 2))).tolist()
        [[6, 7], [10, 11]]
    """
    image, layout = check_image(image, layout)
    sh, sw, h, w = _check_size(size, image, layout)
    if sh > h or sw > w:
        raise ValueError(f"crop size {(sh, sw)} is larger than the image {(h, w)}")
    a, b = spatial_axes(layout)
    x = jax.lax.dynamic_slice_in_dim(jnp.asarray(image), jnp.asarray(top, jnp.int32), sh, axis=a)
    return jax.lax.dynamic_slice_in_dim(x, jnp.asarray(left, jnp.int32), sw, axis=b)


def resized_crop(image, top, left, height, width, *, size, antialias=True, layout=None):
    """Crop the box ``(top, left, height, width)`` (pixels, may be fractional and traced) and
    resize it to the static ``size = (out_height, out_width)`` with linear interpolation.

    Built on ``jax.image.scale_and_translate`` (half-pixel centres, triangle filter widened
    when shrinking if ``antialias``): the box edges map exactly onto the output edges, as in
    ``torchvision.transforms.functional.resized_crop`` with bilinear antialiased resizing.
    Output dtype equals the input's.
    """
    image, layout = check_image(image, layout)
    oh, ow, _, _ = _check_size(size, image, layout)
    a, b = spatial_axes(layout)
    shape = list(image.shape)
    shape[a], shape[b] = oh, ow
    sy = oh / jnp.asarray(height, jnp.float32)
    sx = ow / jnp.asarray(width, jnp.float32)
    ty = -jnp.asarray(top, jnp.float32) * sy
    tx = -jnp.asarray(left, jnp.float32) * sx
    y = jax.image.scale_and_translate(
        to_float(jnp.asarray(image)), tuple(shape), (a, b), jnp.stack([sy, sx]), jnp.stack([ty, tx]),
        method="linear", antialias=antialias,
    )
    return back(y, image.dtype)


def _wrap_index(i, n, mode):
    if mode == "nearest" or mode == "constant":
        return jnp.clip(i, 0, n - 1)
    if mode == "wrap":
        return jnp.mod(i, n)
    if mode == "reflect":
        j = jnp.mod(i, 2 * n)
        return jnp.where(j >= n, 2 * n - 1 - j, j)
    if n == 1:  # mirror
        return jnp.zeros_like(i)
    p = 2 * n - 2
    j = jnp.mod(i, p)
    return jnp.where(j >= n, p - j, j)


def sample(image, rows, cols, *, mode="constant", cval=0.0, layout=None):
    """Bilinear sampling of ``image`` at float coordinates ``rows``, ``cols`` (each of the
    output's (H', W') shape), every channel at once.

    Matches ``scipy.ndimage.map_coordinates(plane, [rows, cols], order=1, mode=m)`` per 2-D
    plane, with ``m`` = ``mode`` for ``constant`` (points outside ``[0, n - 1]`` get
    ``cval``, no interpolation beyond the edge), ``nearest``, ``reflect`` and ``mirror``, and
    ``grid-wrap`` for ``wrap``.
    """
    image, layout = check_image(image, layout)
    check_static("mode", mode, SAMPLE_MODES)
    a, b = spatial_axes(layout)
    h, w = hw(image, layout)
    x = jnp.moveaxis(to_float(jnp.asarray(image)), (a, b), (0, 1))
    r0f, c0f = jnp.floor(rows), jnp.floor(cols)
    fr, fc = rows - r0f, cols - c0f
    r0, c0 = r0f.astype(jnp.int32), c0f.astype(jnp.int32)
    extra = (1,) * (x.ndim - 2)
    out = 0.0
    for dr, wr in ((0, 1 - fr), (1, fr)):
        ri = _wrap_index(r0 + dr, h, mode)
        for dc, wc in ((0, 1 - fc), (1, fc)):
            ci = _wrap_index(c0 + dc, w, mode)
            out = out + (wr * wc).reshape(wr.shape + extra) * x[ri, ci]
    if mode == "constant":
        eps = 1e-4
        inside = (rows >= -eps) & (rows <= h - 1 + eps) & (cols >= -eps) & (cols <= w - 1 + eps)
        out = jnp.where(inside.reshape(inside.shape + extra), out, jnp.asarray(cval, jnp.float32))
    y = jnp.moveaxis(out, (0, 1), (a, b))
    return back(y, image.dtype)


def _grid(h, w):
    return jnp.meshgrid(jnp.arange(h, dtype=jnp.float32), jnp.arange(w, dtype=jnp.float32), indexing="ij")


def rotate(image, angle, *, mode="constant", cval=0.0, layout=None):
    """Rotate by ``angle`` degrees counter-clockwise about the image centre, keeping the shape.

    Matches ``scipy.ndimage.rotate(plane, angle, reshape=False, order=1, mode=mode,
    cval=cval)`` per 2-D plane (``mode`` as for :func:`sample`). ``angle`` may be traced.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.arange(9, dtype=np.float32).reshape(3, 3)
        >>> np.asarray(imgproc.rotate(x, 90.0)).round(4).tolist() == np.rot90(x).tolist()
        True
    """
    image, layout = check_image(image, layout)
    check_number("angle", angle)
    h, w = hw(image, layout)
    t = jnp.deg2rad(jnp.asarray(angle, jnp.float32))
    cy, cx = (h - 1) / 2.0, (w - 1) / 2.0
    r, c = _grid(h, w)
    dy, dx = r - cy, c - cx
    cos, sin = jnp.cos(t), jnp.sin(t)
    rows = cy + cos * dy + sin * dx
    cols = cx - sin * dy + cos * dx
    return sample(image, rows, cols, mode=mode, cval=cval, layout=layout)


def translate(image, dy, dx, *, mode="constant", cval=0.0, layout=None):
    """Shift the content by ``(dy, dx)`` pixels (down, right; may be fractional and traced).

    Matches ``scipy.ndimage.shift(plane, (dy, dx), order=1, mode=mode, cval=cval)`` per 2-D
    plane (``mode`` as for :func:`sample`).

    Example:
        >>> import numpy as np, imgproc
        >>> np.asarray(imgproc.translate(np.array([[1, 2, 3]], np.float32), 0, 1)).tolist()
        [[0.0, 1.0, 2.0]]
    """
    image, layout = check_image(image, layout)
    check_number("dy", dy)
    check_number("dx", dx)
    h, w = hw(image, layout)
    r, c = _grid(h, w)
    return sample(image, r - jnp.asarray(dy, jnp.float32), c - jnp.asarray(dx, jnp.float32), mode=mode, cval=cval, layout=layout)


def erase(image, top, left, height, width, *, value=0.0, layout=None):
    """Set the box ``rows [top, top + height) x cols [left, left + width)`` to ``value``
    (a number or one value per channel, in the image's own range); box bounds may be traced.

    The fill of ``torchvision.transforms.functional.erase``. Shape and dtype kept.

    Example:
        >>> import numpy as np, imgproc
        >>> np.asarray(imgproc.erase(np.ones((3, 3), np.uint8), 1, 1, 2, 1)).tolist()
        [[1, 1, 1], [1, 0, 1], [1, 0, 1]]
    """
    image, layout = check_image(image, layout)
    a, b = spatial_axes(layout)
    h, w = hw(image, layout)
    rows = jnp.arange(h)
    cols = jnp.arange(w)
    top, left = jnp.asarray(top), jnp.asarray(left)
    inr = (rows >= top) & (rows < top + jnp.asarray(height))
    inc = (cols >= left) & (cols < left + jnp.asarray(width))
    shape = [1] * image.ndim
    shape[a], shape[b] = h, w
    mask = (inr[:, None] & inc[None, :]).reshape(shape)
    val = jnp.asarray(value, jnp.float32)
    cax = channel_axis(layout)
    if val.ndim == 1 and cax is not None:
        vshape = [1] * image.ndim
        vshape[cax] = val.shape[0]
        val = val.reshape(vshape)
    x = to_float(jnp.asarray(image))
    return back(jnp.where(mask, val, x), image.dtype)


# --------------------------------------------------------------------------- colour


def _channel_split(x, layout):
    ax = channel_axis(layout)
    return [jnp.take(x, i, axis=ax) for i in range(3)], ax


def rgb_to_hsv(image, *, layout=None):
    """RGB to HSV, float32, the definition of ``dm_pix.rgb_to_hsv`` (as ``tf.image.rgb_to_hsv``):
    hue in [0, 1), saturation = (max - min) / max, value = max (in the image's own range).

    Example:
        >>> import numpy as np, imgproc
        >>> np.asarray(imgproc.rgb_to_hsv(np.array([[[1.0, 0.0, 0.0]]], np.float32))).tolist()
        [[[0.0, 1.0, 1.0]]]
    """
    image, layout = check_image(image, layout)
    need_rgb(image, layout, "rgb_to_hsv")
    (r, g, b), ax = _channel_split(to_float(jnp.asarray(image)), layout)
    return jnp.stack(_rgb_to_hsv(r, g, b), axis=ax)


def _rgb_to_hsv(red, green, blue):
    value = jnp.maximum(jnp.maximum(red, green), blue)
    minimum = jnp.minimum(jnp.minimum(red, green), blue)
    range_ = value - minimum
    safe_value = jnp.where(value > 0, value, 1.0)
    safe_range = jnp.where(range_ > 0, range_, 1.0)
    saturation = jnp.where(value > 0, range_ / safe_value, 0.0)
    norm = 1.0 / (6.0 * safe_range)
    # dm-pix picks the branch with ``value == red`` / ``value == green``; under jit, XLA may
    # recompute a fused producer (e.g. a rotation) for each use with different rounding,
    # so that equality fails for every channel. Comparing the channels with each other
    # gives the same branches (red first, then green, then blue) and is robust to that.
    red_max = (red >= green) & (red >= blue)
    green_max = ~red_max & (green >= blue)
    hue = jnp.where(green_max, norm * (blue - red) + 2.0 / 6.0, norm * (red - green) + 4.0 / 6.0)
    hue = jnp.where(red_max, norm * (green - blue), hue)
    hue = jnp.where(range_ > 0, hue, 0.0) + (hue < 0.0).astype(hue.dtype)
    return hue, saturation, value


def _hsv_to_rgb(hue, saturation, value):
    dh = hue * 6.0
    dr = jnp.clip(jnp.abs(dh - 3.0) - 1.0, 0.0, 1.0)
    dg = jnp.clip(2.0 - jnp.abs(dh - 2.0), 0.0, 1.0)
    db = jnp.clip(2.0 - jnp.abs(dh - 4.0), 0.0, 1.0)
    one_minus_s = 1.0 - saturation
    return tuple(value * (one_minus_s + saturation * d) for d in (dr, dg, db))


def hsv_to_rgb(image, *, layout=None):
    """HSV to RGB, float32, the inverse of :func:`rgb_to_hsv` (``dm_pix.hsv_to_rgb``)."""
    image, layout = check_image(image, layout)
    need_rgb(image, layout, "hsv_to_rgb")
    (h, s, v), ax = _channel_split(to_float(jnp.asarray(image)), layout)
    return jnp.stack(_hsv_to_rgb(h, s, v), axis=ax)


def _hsv_op(image, layout, name, fn):
    image, layout = check_image(image, layout)
    need_rgb(image, layout, name)
    (r, g, b), ax = _channel_split(to_float(jnp.asarray(image)), layout)
    h, s, v = _rgb_to_hsv(r, g, b)
    h, s, v = fn(h, s, v)
    return back(jnp.stack(_hsv_to_rgb(h, s, v), axis=ax), image.dtype)


def adjust_hue(image, delta, *, layout=None):
    """Rotate the hue by ``delta`` turns (``delta`` in [-1, 1]; 0.5 is half a turn).

    ``dm_pix.adjust_hue`` (TF's ``tf.image.adjust_hue``): RGB to HSV, ``h = (h + delta) mod
    1``, back. Works in any value range (HSV conversion is scale-equivariant). RGB only.
    """
    check_number("delta", delta, low=-1, high=1)
    d = jnp.asarray(delta, jnp.float32)
    return _hsv_op(image, layout, "adjust_hue", lambda h, s, v: (jnp.mod(h + d, 1.0), s, v))


def adjust_saturation(image, factor, *, layout=None):
    """Scale the HSV saturation by ``factor`` (clipped to [0, 1]): ``dm_pix.adjust_saturation``
    (TF's ``tf.image.adjust_saturation``). Any value range; RGB only."""
    check_number("factor", factor, low=0)
    f = jnp.asarray(factor, jnp.float32)
    return _hsv_op(image, layout, "adjust_saturation", lambda h, s, v: (h, jnp.clip(s * f, 0.0, 1.0), v))


def adjust_brightness(image, delta, *, max_value=None, layout=None):
    """Add ``delta * max_value`` to every pixel (``delta`` is a fraction of the range).

    With ``max_value=1`` this is ``dm_pix.adjust_brightness`` (``image + delta``). No
    clipping (floats); integer output saturates. ``max_value``: see :mod:`imgproc.augment`.

    Example:
        >>> import numpy as np, imgproc
        >>> np.asarray(imgproc.adjust_brightness(np.array([[100, 250]], np.uint8), 0.1)).tolist()
        [[126, 255]]
    """
    image, layout = check_image(image, layout)
    check_number("delta", delta)
    m = resolve_max(max_value, image.dtype)
    y = to_float(jnp.asarray(image)) + jnp.asarray(delta, jnp.float32) * jnp.asarray(m, jnp.float32)
    return back(y, image.dtype)


def adjust_contrast(image, factor, *, layout=None):
    """``(x - mean) * factor + mean`` with the per-image, per-channel mean over H and W:
    ``dm_pix.adjust_contrast`` (TF's ``tf.image.adjust_contrast``). For a batch, each image
    uses its own mean. Any value range.

    Example:
        >>> import numpy as np, imgproc
        >>> np.asarray(imgproc.adjust_contrast(np.array([[1.0, 3.0]], np.float32), 2.0)).tolist()
        [[0.0, 4.0]]
    """
    image, layout = check_image(image, layout)
    check_number("factor", factor, low=0)
    x = to_float(jnp.asarray(image))
    mean = _spatial_mean(x, layout)
    return back((x - mean) * jnp.asarray(factor, jnp.float32) + mean, image.dtype)


def _spatial_mean(x, layout):
    """Per-image, per-channel mean over H and W, kept as broadcastable dims. Channel-last:
    mean over rows of the (H, W*C) view, then over W (2x faster on CPU than one reduction
    over the two outer axes)."""
    if layout in ("HWC", "NHWC"):
        *lead, h, w, c = x.shape
        m = x.reshape(*lead, h, w * c).mean(-2).reshape(*lead, w, c).mean(-2)
        return m.reshape(*lead, 1, 1, c)
    return jnp.mean(x, axis=spatial_axes(layout), keepdims=True)


def adjust_gamma(image, gamma, *, gain=1.0, max_value=None, layout=None):
    """``gain * max_value * (x / max_value) ** gamma``; with ``max_value=1`` this is
    ``dm_pix.adjust_gamma`` (``gain * image ** gamma``). Negative values count as 0."""
    image, layout = check_image(image, layout)
    check_number("gamma", gamma, low=0)
    check_number("gain", gain)
    m = jnp.asarray(resolve_max(max_value, image.dtype), jnp.float32)
    x = jnp.maximum(to_float(jnp.asarray(image)), 0.0) / m
    y = jnp.asarray(gain, jnp.float32) * m * x ** jnp.asarray(gamma, jnp.float32)
    return back(y, image.dtype)


GRAY_WEIGHTS = (0.2989, 0.5870, 0.1140)


def rgb_to_grayscale(image, *, keep_channels=True, layout=None):
    """Luma ``0.2989 R + 0.5870 G + 0.1140 B`` (``dm_pix.rgb_to_grayscale``, ITU-R 601-2).

    With ``keep_channels`` (default) the luma is repeated in all three channels, so the shape
    is kept (what a pipeline stage needs); else the channel axis has size 1. RGB only.
    """
    image, layout = check_image(image, layout)
    need_rgb(image, layout, "rgb_to_grayscale")
    (r, g, b), ax = _channel_split(to_float(jnp.asarray(image)), layout)
    y = GRAY_WEIGHTS[0] * r + GRAY_WEIGHTS[1] * g + GRAY_WEIGHTS[2] * b
    y = jnp.expand_dims(y, ax)
    if keep_channels:
        y = jnp.repeat(y, 3, axis=ax)
    return back(y, image.dtype)


# --------------------------------------------------------------------------- random twins


def _bernoulli(key, p):
    check_number("p", p, low=0, high=1)
    return jax.random.uniform(key) < jnp.asarray(p, jnp.float32)


def _uniform(key, lo, hi):
    return jax.random.uniform(key, (), jnp.float32, jnp.asarray(lo, jnp.float32), jnp.asarray(hi, jnp.float32))


def _maybe(cond, fn, x):
    """``fn(x)`` if ``cond`` else ``x``, as ``lax.cond``: a real branch for one image (and in
    a per-image ``lax.map``), a select under ``vmap``."""
    return jax.lax.cond(cond, fn, lambda x: x, x)


@random_op
def random_flip_left_right(key, image, *, p=0.5, layout=None):
    """Flip left-right with probability ``p`` (:func:`flip_left_right`). One image, or a batch
    (image ``i`` drawn with ``fold_in(key, i)``), any layout; shape and dtype kept."""
    x = jnp.asarray(image)
    return _maybe(_bernoulli(key, p), lambda x: flip_left_right(x, layout=layout), x)


@random_op
def random_flip_up_down(key, image, *, p=0.5, layout=None):
    """Flip up-down with probability ``p`` (:func:`flip_up_down`)."""
    x = jnp.asarray(image)
    return _maybe(_bernoulli(key, p), lambda x: flip_up_down(x, layout=layout), x)


@random_op
def random_rot90(key, image, *, layout=None):
    """Rotate by ``k`` quarter turns, ``k`` uniform in {0, 1, 2, 3} (:func:`rot90`). The image
    must be square (a quarter turn of a non-square image changes its shape)."""
    x = jnp.asarray(image)
    h, w = hw(x, layout)
    if h != w:
        raise ValueError(f"random_rot90 needs a square image (H == W); got H={h}, W={w}")
    a, b = spatial_axes(layout)
    k = jax.random.randint(key, (), 0, 4)
    # rot90 as three cheap selects: k=1: transpose(flip W); k=2: flip both; k=3: flip W(transpose)
    t = jnp.swapaxes(x, a, b)
    return jax.lax.switch(k, [lambda: x, lambda: jnp.flip(t, a), lambda: jnp.flip(x, (a, b)), lambda: jnp.flip(t, b)])


@random_op
def random_crop(key, image, *, size=None, layout=None):
    """Crop a ``size = (height, width)`` window at a uniform random position (every window
    equally likely); ``size=None`` crops 7/8 of each side (224 of 256). :func:`crop`."""
    x = jnp.asarray(image)
    h, w = hw(x, layout)
    if size is None:
        size = (max(1, h * 7 // 8), max(1, w * 7 // 8))
    sh, sw, _, _ = _check_size(size, x, layout)
    if sh > h or sw > w:
        raise ValueError(f"crop size {(sh, sw)} is larger than the image {(h, w)}")
    kt, kl = jax.random.split(key)
    top = jax.random.randint(kt, (), 0, h - sh + 1)
    left = jax.random.randint(kl, (), 0, w - sw + 1)
    return crop(x, top, left, size=(sh, sw), layout=layout)


@random_op
def random_resized_crop(key, image, *, size=None, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3), antialias=True, layout=None):
    """Inception-style crop: a box of area ``U(scale) * H * W`` and aspect ``exp(U(log
    ratio))``, resized to ``size`` (default: the input's size). :func:`resized_crop`.

    The box follows ``torchvision.transforms.RandomResizedCrop`` but with one draw instead of
    ten tries: a box larger than the image is shrunk to fit (keeping it inside the image).
    """
    x = jnp.asarray(image)
    h, w = hw(x, layout)
    size = (h, w) if size is None else size
    check_range("scale", scale, low=0, high=1)
    check_range("ratio", ratio, low=1e-6)
    ka, kr, kt, kl = jax.random.split(key, 4)
    area = _uniform(ka, scale[0], scale[1]) * (h * w)
    logr = _uniform(kr, jnp.log(jnp.asarray(ratio[0], jnp.float32)), jnp.log(jnp.asarray(ratio[1], jnp.float32)))
    r = jnp.exp(logr)
    bw = jnp.clip(jnp.sqrt(area * r), 1.0, w)
    bh = jnp.clip(jnp.sqrt(area / r), 1.0, h)
    top = jax.random.uniform(kt) * (h - bh)
    left = jax.random.uniform(kl) * (w - bw)
    return resized_crop(x, top, left, bh, bw, size=size, antialias=antialias, layout=layout)


@random_op
def random_rotate(key, image, *, max_degrees=15.0, mode="constant", cval=0.0, layout=None):
    """Rotate by an angle uniform in ``[-max_degrees, max_degrees]`` (:func:`rotate`)."""
    check_number("max_degrees", max_degrees, low=0)
    check_static("mode", mode, SAMPLE_MODES)
    m = jnp.asarray(max_degrees, jnp.float32)
    return rotate(image, _uniform(key, -m, m), mode=mode, cval=cval, layout=layout)


@random_op
def random_translate(key, image, *, max_fraction=0.1, mode="constant", cval=0.0, layout=None):
    """Shift by ``(dy, dx)`` uniform in ``±max_fraction * (H, W)`` pixels (:func:`translate`;
    ``max_fraction`` a number or a pair (rows, cols))."""
    x = jnp.asarray(image)
    h, w = hw(x, layout)
    fy, fx = (max_fraction, max_fraction) if np.ndim(max_fraction) == 0 else max_fraction
    check_number("max_fraction", fy, low=0, high=1)
    check_number("max_fraction", fx, low=0, high=1)
    check_static("mode", mode, SAMPLE_MODES)
    ky, kx = jax.random.split(key)
    my, mx = jnp.asarray(fy, jnp.float32) * h, jnp.asarray(fx, jnp.float32) * w
    return translate(x, _uniform(ky, -my, my), _uniform(kx, -mx, mx), mode=mode, cval=cval, layout=layout)


@random_op
def random_brightness(key, image, *, max_delta=0.2, max_value=None, layout=None):
    """:func:`adjust_brightness` by ``delta ~ U(-max_delta, max_delta)`` (``dm_pix.random_brightness``)."""
    check_number("max_delta", max_delta, low=0)
    m = jnp.asarray(max_delta, jnp.float32)
    return adjust_brightness(image, _uniform(key, -m, m), max_value=max_value, layout=layout)


@random_op
def random_contrast(key, image, *, lower=0.8, upper=1.2, layout=None):
    """:func:`adjust_contrast` by ``factor ~ U(lower, upper)`` (``dm_pix.random_contrast``)."""
    check_range("(lower, upper)", (lower, upper), low=0)
    return adjust_contrast(image, _uniform(key, lower, upper), layout=layout)


@random_op
def random_saturation(key, image, *, lower=0.8, upper=1.2, layout=None):
    """:func:`adjust_saturation` by ``factor ~ U(lower, upper)`` (``dm_pix.random_saturation``)."""
    check_range("(lower, upper)", (lower, upper), low=0)
    return adjust_saturation(image, _uniform(key, lower, upper), layout=layout)


@random_op
def random_hue(key, image, *, max_delta=0.1, layout=None):
    """:func:`adjust_hue` by ``delta ~ U(-max_delta, max_delta)``, ``max_delta`` in [0, 0.5]
    (``dm_pix.random_hue``)."""
    check_number("max_delta", max_delta, low=0, high=0.5)
    m = jnp.asarray(max_delta, jnp.float32)
    return adjust_hue(image, _uniform(key, -m, m), layout=layout)


@random_op
def random_gamma(key, image, *, min_gamma=0.8, max_gamma=1.25, gain=1.0, max_value=None, layout=None):
    """:func:`adjust_gamma` with ``gamma ~ U(min_gamma, max_gamma)`` (``dm_pix.random_gamma``)."""
    check_range("(min_gamma, max_gamma)", (min_gamma, max_gamma), low=0)
    g = _uniform(key, min_gamma, max_gamma)
    return adjust_gamma(image, g, gain=gain, max_value=max_value, layout=layout)


@random_op
def random_grayscale(key, image, *, p=0.1, layout=None):
    """With probability ``p``, :func:`rgb_to_grayscale` (three equal channels); else unchanged.
    The default ``p=0.1`` is ``torchvision.transforms.RandomGrayscale``'s."""
    x = jnp.asarray(image)
    return _maybe(_bernoulli(key, p), lambda x: rgb_to_grayscale(x, layout=layout), x)


@random_op
def gaussian_noise(key, image, *, sigma=0.05, max_value=None, layout=None):
    """Add i.i.d. normal noise of standard deviation ``sigma * max_value`` to every value
    (``skimage.util.random_noise(mode="gaussian", var=sigma**2)`` without its clipping)."""
    x = jnp.asarray(image)
    check_number("sigma", sigma, low=0)
    m = resolve_max(max_value, x.dtype)
    n = hash_normal(key, x.shape, layout)
    return back(to_float(x) + n * (jnp.asarray(sigma, jnp.float32) * m), x.dtype)


@random_op
def speckle_noise(key, image, *, sigma=0.1, layout=None):
    """Multiplicative noise ``x + x * n``, ``n ~ N(0, sigma**2)``
    (``skimage.util.random_noise(mode="speckle", var=sigma**2)`` without its clipping)."""
    x = jnp.asarray(image)
    check_number("sigma", sigma, low=0)
    n = hash_normal(key, x.shape, layout) * jnp.asarray(sigma, jnp.float32)
    xf = to_float(x)
    return back(xf + xf * n, x.dtype)


@random_op
def salt_and_pepper(key, image, *, amount=0.05, salt_vs_pepper=0.5, max_value=None, layout=None):
    """Replace a fraction ``amount`` of the values by ``max_value`` (salt, with probability
    ``salt_vs_pepper``) or 0 (pepper), each value independently:
    ``skimage.util.random_noise(mode="s&p")``'s definition (per value, not per pixel)."""
    x = jnp.asarray(image)
    check_number("amount", amount, low=0, high=1)
    check_number("salt_vs_pepper", salt_vs_pepper, low=0, high=1)
    m = resolve_max(max_value, x.dtype)
    k1, k2 = jax.random.split(key)
    hit = hash_uniform(k1, x.shape, layout) < jnp.asarray(amount, jnp.float32)
    salt = hash_uniform(k2, x.shape, layout) < jnp.asarray(salt_vs_pepper, jnp.float32)
    y = jnp.where(hit, jnp.where(salt, jnp.asarray(m, jnp.float32), 0.0), to_float(x))
    return back(y, x.dtype)


@random_op
def random_gaussian_blur(key, image, *, sigma_range=(0.1, 2.0), size=None, mode="reflect", layout=None):
    """:func:`imgproc.gaussian_blur` with ``sigma ~ U(sigma_range)``. The kernel side is static:
    ``size`` or, by default, scipy's rule for the largest sigma (``2 * int(4 * hi + 0.5) + 1``).
    ``sigma`` is traced: a new draw (or a new ``sigma_range``) never recompiles."""
    check_range("sigma_range", sigma_range, low=0)
    if size is None:
        if any(isinstance(v, jax.core.Tracer) for v in sigma_range):
            raise ValueError("size must be given when sigma_range is traced (the kernel size is static)")
        size = 2 * int(4.0 * float(sigma_range[1]) + 0.5) + 1
    return gaussian_blur(image, _uniform(key, sigma_range[0], sigma_range[1]), size=size, mode=mode, layout=layout)


@random_op
def random_sharpen(key, image, *, center_range=(40.0, 100.0), size=5, mode="reflect", layout=None):
    """:func:`imgproc.sharpen` with the kernel's centre weight ``~ U(center_range)`` (smaller
    is stronger; must stay above ``size**2 - 1``; the seed chapter's 5x5 kernel has 50)."""
    check_range("center_range", center_range, low=size * size - 1 + 1e-3)
    c = _uniform(key, center_range[0], center_range[1])
    return sharpen(image, center=c, size=size, mode=mode, layout=layout)


@random_op
def random_erasing(key, image, *, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0.0, layout=None):
    """``torchvision.transforms.RandomErasing``: with probability ``p`` erase a box of area
    ``U(scale) * H * W`` and aspect ``exp(U(log ratio))`` at a uniform position, filled with
    ``value`` (a number, per-channel values, or ``"random"``: normal noise of the image's
    range, ``N(0.5, 0.25) * max_value``). One draw (a box too large is shrunk to fit)."""
    x = jnp.asarray(image)
    h, w = hw(x, layout)
    check_range("scale", scale, low=0, high=1)
    check_range("ratio", ratio, low=1e-6)
    kp, ka, kr, kt, kl, kv = jax.random.split(key, 6)
    if isinstance(value, str):
        check_static("value", value, ("random",))

    def erased(x):
        area = _uniform(ka, scale[0], scale[1]) * (h * w)
        r = jnp.exp(_uniform(kr, jnp.log(jnp.asarray(ratio[0], jnp.float32)), jnp.log(jnp.asarray(ratio[1], jnp.float32))))
        bh = jnp.clip(jnp.round(jnp.sqrt(area * r)), 1, h).astype(jnp.int32)
        bw = jnp.clip(jnp.round(jnp.sqrt(area / r)), 1, w).astype(jnp.int32)
        top = jax.random.randint(kt, (), 0, h - bh + 1)
        left = jax.random.randint(kl, (), 0, w - bw + 1)
        if not isinstance(value, str):
            return erase(x, top, left, bh, bw, value=value, layout=layout)
        m = resolve_max(None, x.dtype)
        fill = (0.5 + 0.25 * hash_normal(kv, x.shape, layout)) * m
        a, b = spatial_axes(layout)
        rows, cols = jnp.arange(h), jnp.arange(w)
        shape = [1] * x.ndim
        shape[a], shape[b] = h, w
        mask = (((rows >= top) & (rows < top + bh))[:, None] & ((cols >= left) & (cols < left + bw))[None, :]).reshape(shape)
        return back(jnp.where(mask, fill, to_float(x)), x.dtype)

    return _maybe(_bernoulli(kp, p), erased, x)


GEOMETRY = ("flip_left_right", "flip_up_down", "rot90", "crop", "resized_crop", "rotate", "translate", "erase")
COLOUR = ("adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue", "adjust_gamma", "rgb_to_grayscale")
RANDOM = (
    "random_flip_left_right", "random_flip_up_down", "random_rot90", "random_crop", "random_resized_crop",
    "random_rotate", "random_translate", "random_brightness", "random_contrast", "random_saturation",
    "random_hue", "random_gamma", "random_grayscale", "gaussian_noise", "speckle_noise", "salt_and_pepper",
    "random_gaussian_blur", "random_sharpen", "random_erasing",
)

