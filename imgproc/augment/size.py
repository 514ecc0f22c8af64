"""Size: resize (five methods), resize of the shorter side, centre crop, pad, letterbox and
random scale jitter.

Output shapes are static: every size is a Python option, known when the program is traced.
An op whose output size depends on the input's size (:func:`resize_shorter`,
:func:`letterbox`'s inner size) computes it from the array's H and W; a batch shares one
H and W, so every image of a batch gets the same output size. Scale jitter
(:func:`random_resize`) draws a scale per image but writes it onto a canvas of a fixed
``size`` (cropping or padding the scaled image), as detection scale jitter does.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax
import numpy as np

from imgproc.augment.common import back, crop_window_params, fixed_size, hw, to_float
from imgproc.augment.resample import area_taps, filter_taps, nearest_source, resample_axis, tap_count
from imgproc.augment.targets import matrix_rule, move_one, scale_translate
from imgproc.core.array_type import callers_type
from imgproc.core.arrays import HIGHEST, spatial_axes
from imgproc.core.boundary import pad_axis
from imgproc.core.eager import compiled_when_eager
from imgproc.core.images import check_image
from imgproc.core.keys import doctests, random_op, scaled, uniforms
from imgproc.core.registry import CanvasForm, OpInfo, TargetRule, register_ops, resolve_targets
from imgproc.core.validate import MODE_CHECK, check_bool, check_choice, check_mode, check_number, check_range, check_size_pair

__all__ = ["RESIZE_METHODS", "center_crop", "letterbox", "pad", "random_resize", "resize", "resize_shorter"]

RESIZE_METHODS = ("linear", "cubic", "nearest", "area", "lanczos3")


def _check_method(method):
    return check_choice("method", method, RESIZE_METHODS)


def nearest_index(n_in: int, n_out: int) -> np.ndarray:
    """The source index of each of ``n_out`` outputs along an axis of ``n_in`` for the
    ``"nearest"`` resize: ``floor((i + 0.5) * n_in / n_out)`` in integers,
    ``(2 i + 1) n_in // (2 n_out)``, exact at every tie (``jax.image.resize``, Pillow and
    OpenCV compute it in floating point and each misses a few ties: 52 -> 90 outputs,
    Pillow and OpenCV one of 90). :func:`imgproc.augment.resample.nearest_source` is the
    same rule on traced sizes.

    Example:
        >>> nearest_index(8, 4).tolist(), nearest_index(3, 7).tolist()
        ([1, 3, 5, 7], [0, 0, 1, 1, 1, 2, 2])
    """
    return (2 * np.arange(n_out, dtype=np.int64) + 1) * n_in // (2 * n_out)


def _resize_axis(x, axis, n_valid, n_full, first, n_out, method, antialias, max_inv, fill):
    """Positions ``first + [0, n_out)`` along ``axis`` of the resize of ``x``'s first
    ``n_valid`` pixels to ``n_full`` (positions outside ``[0, n_full)``: ``fill``)."""
    j = jnp.asarray(first, jnp.int32) + jnp.arange(n_out, dtype=jnp.int32)
    if method == "nearest":
        y = jnp.take(x, nearest_source(j, n_valid, n_full), axis=axis)
    else:
        if method == "area":
            index, weight = area_taps(j, n_valid, n_full, taps=tap_count("area", max_inv, False))
        else:
            inv = jnp.asarray(n_valid, jnp.float32) / jnp.asarray(n_full, jnp.float32)
            centre = (j.astype(jnp.float32) + 0.5) * inv - 0.5
            width = jnp.maximum(inv, 1.0) if antialias else 1.0
            index, weight = filter_taps(centre, n_valid, method=method, width=width,
                                        taps=tap_count(method, max_inv, antialias))
        y = resample_axis(x, axis, index, weight)
    if fill is not None:
        shape = [1] * y.ndim
        shape[axis] = n_out
        y = jnp.where(((j < 0) | (j >= n_full)).reshape(shape), fill, y)
    return y


def resize_window(image, true_hw, full_hw, first, out_hw, *, layout, method, antialias, max_inv, cval=None):
    """Rows ``first[0] + [0, out_hw[0])`` and columns ``first[1] + [0, out_hw[1])`` of the
    resize of ``image``'s top-left ``true_hw`` pixels to ``full_hw`` (every size may be
    traced but ``out_hw``): the engine of every op that resizes, so that an image on a
    canvas and the image alone give the same bits (:mod:`imgproc.augment.resample`).
    Positions outside the resized image get ``cval`` (None: the caller keeps inside).
    ``max_inv``: static bounds of ``true / full`` per axis (they fix the tap counts).
    Height first, then width; ``"nearest"`` gathers in the image's dtype, the others
    compute in float32 and round once. Dtype kept."""
    a, b = spatial_axes(layout)
    nearest = method == "nearest"
    x = jnp.asarray(image)  # the filters' first pass converts to float32 as it reads (resample_axis)
    # sizes as runtime values, known or not: with known sizes XLA computed the weights up
    # to 2e-6 apart from those of traced ones (so an image alone and on a canvas differed)
    true_hw, full_hw, first = jax.lax.optimization_barrier(
        tuple(tuple(jnp.asarray(n, jnp.int32) for n in pair) for pair in (true_hw, full_hw, first)))
    fill = None
    if cval is not None:
        fill = back(jnp.asarray(cval, jnp.float32), image.dtype) if nearest else jnp.asarray(cval, jnp.float32)
    for axis, n_valid, n_full, j0, n_out, bound in zip((a, b), true_hw, full_hw, first, out_hw, max_inv):
        x = _resize_axis(x, axis, n_valid, n_full, j0, n_out, method, antialias, bound, fill)
    return x if nearest else back(x, image.dtype)


def _resize(image, out_hw, layout, method, antialias):
    """Resize a checked jax array (any layout) to ``out_hw``; dtype kept."""
    a, b = spatial_axes(layout)
    in_hw = (image.shape[a], image.shape[b])
    if in_hw == tuple(out_hw):
        return image
    return resize_window(image, in_hw, out_hw, (0, 0), out_hw, layout=layout, method=method, antialias=antialias,
                         max_inv=(in_hw[0] / out_hw[0], in_hw[1] / out_hw[1]))


@callers_type
@compiled_when_eager
def resize(image, size, *, method="linear", antialias=True, layout=None):
    """Resize to ``size = (height, width)`` (an int: a square) with ``method``.

    Any layout (HW, HWC, CHW, NHWC, NCHW); a batch is resized image by image to the same
    size. Output dtype equals the input's: uint8/uint16 results are rounded and saturated,
    float stays float (no clipping: cubic and lanczos3 overshoot).

    Methods (pixel centres at half-integers throughout):

    * ``"linear"``, ``"cubic"`` (Keys, a = -0.5), ``"lanczos3"``: ``jax.image.resize``'s
      weights, applied as a few taps per pixel (:mod:`imgproc.augment.resample`). With
      ``antialias`` a downscale widens the kernel by the scale factor; this is what
      Pillow's ``BILINEAR``, ``BICUBIC`` and ``LANCZOS`` always do (measured equal on float
      planes; uint8 within 1 level, Pillow rounds between its two passes, except where
      Pillow's first pass overshoots 0..255, which it clips before the second).

      Against torchvision 0.29 (``F.resize``, tests/golden/): ``"linear"`` is within one
      level on uint8 and 1e-5 on float, with and without ``antialias``; ``"nearest"`` is
      ``NEAREST_EXACT``, equal; ``"cubic"`` with ``antialias`` (torchvision's default) is
      within 1e-5 on float. Stated differences: (1) uint8 ``"cubic"``: torchvision
      resamples uint8 natively as Pillow does, columns then rows, rounding and clipping
      0..255 between the passes, where imgproc computes in float32 and rounds once: equal
      within one level on photos, up to 16 levels on 1-2 % of the pixels of uniform noise
      (where the first pass overshoots); (2) ``"cubic"`` without ``antialias``: torchvision
      uses Keys' a = -0.75 and repeats the border pixels, imgproc (as ``jax.image``) a =
      -0.5 with the weights renormalised at the border: up to 3 levels on photos, 19 on
      noise, 0.075 on float noise; (3) ``"lanczos3"`` (torchvision resizes PIL images
      only, with Pillow): Pillow's clipping between passes, up to 10 levels on a downscale
      and 34 on an upscale of noise, within one level on photos. Pillow's ``BICUBIC``
      differs as (1).
    * ``"nearest"``: the source pixel holding the output pixel's centre,
      ``floor((i + 0.5) * in / out)`` in exact integer arithmetic (:func:`nearest_index`;
      Pillow ``NEAREST`` and OpenCV ``INTER_NEAREST_EXACT`` are the same rule in floating
      point, which lands on the other pixel at a few exact ties; OpenCV's
      ``INTER_NEAREST`` uses ``floor(i * in / out)``). Exact in every dtype.
    * ``"area"``: OpenCV's ``INTER_AREA``: each output pixel is the mean of the source
      pixels it covers, weighted by their overlap (a plain block mean for integer
      factors). Equals ``cv2.resize`` when both sides shrink or both grow; when one side
      shrinks and the other grows OpenCV switches to another rule, this stays the overlap
      mean on each axis.

    ``size`` must be positive integers: checked before tracing (``ValueError``).

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.arange(16, dtype=np.float32).reshape(4, 4)
        >>> np.asarray(imgproc.resize(x, (2, 2), method="area")).tolist()
        [[2.5, 4.5], [10.5, 12.5]]
        >>> imgproc.resize(np.zeros((2, 6, 8, 3), np.uint8), (3, 4)).shape
        (2, 3, 4, 3)
    """
    out_hw = check_size_pair("size", size)
    method = _check_method(method)
    check_bool("antialias", antialias)
    image, layout = check_image(image, layout)
    return _resize(jnp.asarray(image), out_hw, layout, method, antialias)


def _where(condition, if_true, if_false):
    """``if_true if condition else if_false`` for Python values, ``jnp.where`` for traced ones."""
    if isinstance(condition, (bool, np.bool_)):
        return if_true if condition else if_false
    return jnp.where(condition, if_true, if_false)


def _round_ratio(num, den):
    """``round(num / den)`` (Python's, half to even) of non-negative integers, in integer
    arithmetic (ints or traced int32)."""
    q, rem = num // den, num % den
    up = (2 * rem > den) | ((2 * rem == den) & (q % 2 == 1))
    return q + _where(up, 1, 0)


def shorter_side_size(h, w, size: int, max_size=None) -> tuple:
    """torchvision's ``Resize(size: int, max_size)`` output size for an (h, w) image: the
    shorter side becomes ``size`` and the longer ``floor(size * long / short)`` (in exact
    integers: what torchvision's float division gives for image sizes); if that exceeds
    ``max_size``, the longer side becomes ``max_size`` and the shorter ``int(max_size *
    short / long)``. Without ``max_size``, ``h`` and ``w`` may be traced (a canvas's true
    size), and the result is the same for both."""
    w_shorter = w <= h
    short, long = _where(w_shorter, w, h), _where(w_shorter, h, w)
    new_short, new_long = size, size * long // short
    if max_size is not None and new_long > max_size:
        new_short, new_long = max(int(max_size * new_short / new_long), 1), max_size
    return _where(w_shorter, new_long, new_short), _where(w_shorter, new_short, new_long)


def _check_shorter(size, max_size):
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise ValueError(f"size must be a positive integer (the shorter side's length); got {size!r}")
    if max_size is not None:
        if isinstance(max_size, bool) or not isinstance(max_size, (int, np.integer)) or max_size <= size:
            raise ValueError(f"max_size must be None or an integer larger than size={size}; got {max_size!r}")
    return int(size), None if max_size is None else int(max_size)


@callers_type
@compiled_when_eager
def resize_shorter(image, size, *, max_size=None, method="linear", antialias=True, layout=None):
    """Resize so the shorter side is ``size``, keeping the aspect ratio (torchvision's
    ``Resize(size: int, max_size=...)`` output-size rule, :func:`shorter_side_size`;
    pixels by :func:`resize` with ``method``).

    The output size depends on the input's (H, W): it is computed from the array's shape,
    so a batch (NHWC/NCHW), whose images share H and W, gets one output size. Any layout;
    dtype kept.

    Example:
        >>> import numpy as np, imgproc
        >>> imgproc.resize_shorter(np.zeros((300, 451, 3), np.uint8), 256).shape
        (256, 384, 3)
        >>> imgproc.resize_shorter(np.zeros((100, 400), np.float32), 50, max_size=150).shape
        (37, 150)
    """
    size, max_size = _check_shorter(size, max_size)
    method = _check_method(method)
    check_bool("antialias", antialias)
    image, layout = check_image(image, layout)
    h, w = hw(image, layout)
    return _resize(jnp.asarray(image), shorter_side_size(h, w, size, max_size), layout, method, antialias)


def _padding4(padding):
    """torchvision's padding: an int (all sides), ``(left/right, top/bottom)`` or ``(left,
    top, right, bottom)``; returns ``(left, top, right, bottom)`` of non-negative ints."""
    values = [padding] if isinstance(padding, (int, np.integer)) and not isinstance(padding, bool) else padding
    try:
        values = list(values)
        ok = len(values) in (1, 2, 4) and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0
                                                for v in values)
    except TypeError:
        ok = False
    if not ok:
        raise ValueError("padding must be a non-negative int, a pair (left/right, top/bottom) or four ints "
                         f"(left, top, right, bottom); got {padding!r}")
    if len(values) == 1:
        values = values * 4
    elif len(values) == 2:
        values = values * 2
    return tuple(int(v) for v in values)


def _pad(image, ltrb, layout, mode, cval):
    left, top, right, bottom = ltrb
    a, b = spatial_axes(layout)
    if mode == "constant":
        # the fill in the image's dtype (rounded and saturated for integers, like any result)
        fill = back(jnp.asarray(cval, jnp.float32), image.dtype)
        widths = [(0, 0)] * image.ndim
        widths[a], widths[b] = (top, bottom), (left, right)
        if not isinstance(cval, jax.core.Tracer):
            return jnp.pad(image, widths, constant_values=fill)
        # a traced cval: the pad's transpose (jax.grad) fails when only the fill is
        # differentiated, so the fill goes in with a select outside the image instead
        shape = [n + lo + hi for n, (lo, hi) in zip(image.shape, widths)]
        inside = jnp.ones((), bool)
        for axis in (a, b):
            lo, n = widths[axis][0], image.shape[axis]
            idx = lax.broadcasted_iota(jnp.int32, shape, axis)
            inside = inside & (idx >= lo) & (idx < lo + n)
        return jnp.where(inside, jnp.pad(image, widths), fill.astype(image.dtype))
    x = pad_axis(image, top, bottom, a, mode)
    return pad_axis(x, left, right, b, mode)


@callers_type
def pad(image, padding, *, mode="constant", cval=0.0, layout=None):
    """Pad the borders: ``padding`` is an int (every side), ``(left/right, top/bottom)`` or
    ``(left, top, right, bottom)`` (torchvision's ``F.pad`` order), static.

    ``mode`` is one of scipy.ndimage's names (:data:`imgproc.MODES`): ``constant`` (with
    ``cval``), ``reflect`` (``d c b a | a b c d``; torchvision/NumPy ``symmetric``),
    ``mirror`` (``d c b | a b c d``; torchvision/NumPy ``reflect``), ``nearest``
    (torchvision ``edge``) and ``wrap``; a padding wider than the image repeats the rule.
    Matches ``np.pad`` with the matching NumPy mode. Any layout; dtype kept (an integer
    image gets ``cval`` rounded and saturated).

    Example:
        >>> import numpy as np, imgproc
        >>> np.asarray(imgproc.pad(np.array([[1, 2, 3]], np.uint8), (2, 0), mode="reflect")).tolist()
        [[2, 1, 1, 2, 3, 3, 2]]
    """
    ltrb = _padding4(padding)
    mode = check_mode(mode)
    check_number("cval", cval)
    image, layout = check_image(image, layout)
    return _pad(jnp.asarray(image), ltrb, layout, mode, cval)


def center_crop_box(h: int, w: int, size) -> tuple[tuple[int, int, int, int], int, int]:
    """torchvision's ``F.center_crop`` arithmetic for an (h, w) image and crop ``size``:
    returns ``((left, top, right, bottom) padding, top, left)`` of the crop window in the
    padded image (``round`` is Python's, half to even, as torchvision's)."""
    ch, cw = size
    ltrb = (0, 0, 0, 0)
    if cw > w or ch > h:
        ltrb = ((cw - w) // 2 if cw > w else 0, (ch - h) // 2 if ch > h else 0,
                (cw - w + 1) // 2 if cw > w else 0, (ch - h + 1) // 2 if ch > h else 0)
        h, w = h + ltrb[1] + ltrb[3], w + ltrb[0] + ltrb[2]
    return ltrb, _round_ratio(h - ch, 2), _round_ratio(w - cw, 2)


@callers_type
def center_crop(image, size, *, cval=0.0, layout=None):
    """Cut the centred ``size = (height, width)`` window (an int: a square), with
    torchvision's ``F.center_crop`` rounding (top = ``round((H - height) / 2)``, Python's
    round, half to even); a crop larger than the image pads it first with ``cval``
    (``(size - H) // 2`` before, the rest after), as torchvision does.

    Any layout; a batch is cropped with one window; dtype kept.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.arange(16, dtype=np.uint8).reshape(4, 4)
        >>> np.asarray(imgproc.center_crop(x, 2)).tolist()
        [[5, 6], [9, 10]]
        >>> np.asarray(imgproc.center_crop(np.ones((1, 1), np.uint8), (1, 3))).tolist()
        [[0, 1, 0]]
    """
    ch, cw = check_size_pair("size", size)
    check_number("cval", cval)
    image, layout = check_image(image, layout)
    h, w = hw(image, layout)
    ltrb, top, left = center_crop_box(h, w, (ch, cw))
    x = _pad(jnp.asarray(image), ltrb, layout, "constant", cval)
    a, b = spatial_axes(layout)
    x = jax.lax.slice_in_dim(x, top, top + ch, axis=a)
    return jax.lax.slice_in_dim(x, left, left + cw, axis=b)


def letterbox_box(h, w, size) -> tuple:
    """Where :func:`letterbox` puts an (h, w) image on a ``size`` canvas: ``(top, left,
    height, width)`` of the resized image (scale ``min(H / h, W / w)``, the other side
    ``round(side * scale)``, half to even, in exact integer arithmetic; centred with the
    odd pixel after, as Ultralytics' ``LetterBox(center=True)``, which rounds the float
    product and can land on the other side of an exact tie). ``h`` and ``w`` may be traced.

    Example:
        >>> letterbox_box(300, 451, (224, 224))
        (37, 0, 149, 224)
    """
    oh, ow = size
    height_fits = oh * w <= ow * h  # min(oh / h, ow / w) == oh / h
    nh = _where(height_fits, oh, _round_ratio(h * ow, w))
    nw = _where(height_fits, _round_ratio(w * oh, h), ow)
    if isinstance(nh, (int, np.integer)) and isinstance(nw, (int, np.integer)):
        nh, nw = min(max(int(nh), 1), oh), min(max(int(nw), 1), ow)
    else:
        nh, nw = jnp.clip(nh, 1, oh), jnp.clip(nw, 1, ow)
    return (oh - nh) // 2, (ow - nw) // 2, nh, nw


@callers_type
@compiled_when_eager
def letterbox(image, size, *, cval=0.0, method="linear", antialias=True, layout=None):
    """Resize keeping the aspect ratio to fit ``size = (height, width)``, then pad to
    ``size`` with ``cval``, centred (:func:`letterbox_box`; pixels by :func:`resize`).

    The inner size is computed from the array's (H, W), so a batch shares it. Any layout;
    dtype kept.

    Example:
        >>> import numpy as np, imgproc
        >>> y = imgproc.letterbox(np.full((2, 4), 9, np.uint8), (4, 4))
        >>> np.asarray(y).tolist()
        [[0, 0, 0, 0], [9, 9, 9, 9], [9, 9, 9, 9], [0, 0, 0, 0]]
    """
    oh, ow = check_size_pair("size", size)
    method = _check_method(method)
    check_bool("antialias", antialias)
    check_number("cval", cval)
    image, layout = check_image(image, layout)
    h, w = hw(image, layout)
    return _letterbox(image, (h, w), (oh, ow), layout=layout, cval=cval, method=method, antialias=antialias,
                      max_inv=None)


def _letterbox(image, true_hw, size, *, layout, cval, method, antialias, max_inv):
    """:func:`letterbox` of the top-left ``true_hw`` of ``image`` (traced or not);
    ``max_inv``: bounds of the inverse scale (None: the true sizes are static)."""
    top, left, nh, nw = letterbox_box(*true_hw, size)
    if max_inv is None:
        if (nh, nw) == tuple(true_hw):  # fits already: a copy, padded
            return _pad(jnp.asarray(image), (left, top, size[1] - nw - left, size[0] - nh - top), layout,
                        "constant", cval)
        max_inv = (true_hw[0] / nh, true_hw[1] / nw)
    return resize_window(image, true_hw, (nh, nw), (-top, -left), size, layout=layout, method=method,
                         antialias=antialias, max_inv=max_inv, cval=cval)


# --------------------------------------------------------------------------- scale jitter

SCALED_METHODS = ("linear", "cubic", "lanczos3", "nearest")


def _check_scaled_method(method):
    return check_choice("method", method, SCALED_METHODS)


def scaled_placement(image, scale, top, left, size, *, layout, method="linear", antialias=True, cval=0.0):
    """Resize ``image`` by ``scale`` (traced; relative to the fit of the image in
    ``size``, ``min(H' / h, W' / w)``) and place its top-left corner at ``(top, left)``
    (traced pixels, negative: cropped) on a ``size`` canvas filled with ``cval``. An output
    pixel whose centre maps outside the source is ``cval``."""
    oh, ow = size
    h, w = hw(image, layout)
    a, b = spatial_axes(layout)
    s = jnp.asarray(scale, jnp.float32) * min(oh / h, ow / w)
    top, left = jnp.asarray(top, jnp.float32), jnp.asarray(left, jnp.float32)
    shape = list(image.shape)
    shape[a], shape[b] = oh, ow
    r = (jnp.arange(oh, dtype=jnp.float32) + 0.5 - top) / s  # source coordinates of output centres
    c = (jnp.arange(ow, dtype=jnp.float32) + 0.5 - left) / s
    if method == "nearest":
        ri = jnp.clip(jnp.floor(r).astype(jnp.int32), 0, h - 1)
        ci = jnp.clip(jnp.floor(c).astype(jnp.int32), 0, w - 1)
        y = to_float(jnp.take(jnp.take(jnp.asarray(image), ri, axis=a), ci, axis=b))
    else:
        y = jax.image.scale_and_translate(to_float(jnp.asarray(image)), tuple(shape), (a, b), jnp.stack([s, s]),
                                          jnp.stack([top, left]), method=method, antialias=bool(antialias),
                                          precision=HIGHEST)
    inside_r = (r >= 0) & (r < h)
    inside_c = (c >= 0) & (c < w)
    inside = inside_r[:, None] & inside_c[None, :]
    bshape = [1] * y.ndim
    bshape[a], bshape[b] = oh, ow
    y = jnp.where(inside.reshape(bshape), y, jnp.asarray(cval, jnp.float32))
    return back(y, image.dtype)


def _canvas(size, shape, layout):
    return hw(shape, layout) if size is None else check_size_pair("size", size)


def _resize_params(key, shape, *, layout, size=None, scale=(0.5, 2.0)):
    oh, ow = _canvas(size, shape, layout)
    check_range("scale", scale, low=1e-3)
    h, w = hw(shape, layout)
    u = uniforms(key, 3)
    s = scaled(u[0], scale[0], scale[1])
    fit = min(oh / h, ow / w)
    sh, sw = jnp.round(h * fit * s), jnp.round(w * fit * s)
    # every placement equally likely: the whole scaled image inside the canvas when it is
    # smaller, the canvas inside the scaled image when it is larger (per axis)
    dh, dw = oh - sh, ow - sw
    return {"scale": s, "top": jnp.sign(dh) * jnp.floor(u[1] * (jnp.abs(dh) + 1.0)),
            "left": jnp.sign(dw) * jnp.floor(u[2] * (jnp.abs(dw) + 1.0))}


def _check_resize(size, cval, method):
    _check_scaled_method(method)
    if size is not None:
        check_size_pair("size", size)
    check_number("cval", cval)


def _apply_resize(image, params, *, layout, size=None, cval=0.0, method="linear", antialias=True):
    _check_scaled_method(method)
    image = jnp.asarray(image)
    return scaled_placement(image, params["scale"], params["top"], params["left"], _canvas(size, image.shape, layout),
                            layout=layout, method=method, antialias=antialias, cval=cval)


# --------------------------------------------------------------------------- targets
# how boxes, masks and keypoints follow each op (imgproc.augment.targets): one matrix each


def _pad_matrix(q, i, o, /, padding, **_):
    left, top, _, _ = _padding4(padding)
    return scale_translate(1.0, 1.0, left, top)


def _center_crop_matrix(q, i, o, /, size, **_):
    ch, cw = check_size_pair("size", size)  # i: ints, or traced on a canvas
    return scale_translate(1.0, 1.0, -center_offset(i[1], cw), -center_offset(i[0], ch))


def _random_resize_matrix(q, i, o, /, **_):
    s = q["scale"] * min(o[0] / i[0], o[1] / i[1])
    return scale_translate(s, s, q["left"], q["top"])


def _nearest_rule(place=None) -> TargetRule:
    """The rule of an op that resizes the image and puts it at ``place(in_hw, **options)
    -> (top, left, height, width)`` on the output (default: the whole output): points are
    scaled and shifted to that box; masks are resized by the image's own ``"nearest"``
    (:func:`nearest_index`: the same pixels, ties included, whatever the image's method)
    with zeros around. ``in_hw`` may be traced (a mask on a canvas)."""

    def box(in_hw, out_hw, options):
        return (0, 0, *out_hw) if place is None else place(in_hw, **options)

    def matrix(q, in_hw, out_hw, /, **options):
        top, left, nh, nw = box(in_hw, out_hw, options)
        return _resize_matrix(in_hw, (nh, nw), (-top, -left))

    def mask(m, params, *, in_hw, out_hw, **options):
        top, left, nh, nw = box(in_hw, out_hw, options)
        return _nearest_mask(m, in_hw, (nh, nw), (-top, -left), out_hw)

    return TargetRule(matrix_rule(matrix).points, mask)


def _resize_matrix(in_hw, full_hw, first):
    """The pixel-index matrix of the window at ``first`` of the resize of ``in_hw`` to
    ``full_hw`` (sizes ints or traced; the scale divided in float32 either way)."""
    f = lambda n: jnp.asarray(n, jnp.float32)  # noqa: E731
    sy, sx = f(full_hw[0]) / f(in_hw[0]), f(full_hw[1]) / f(in_hw[1])
    return scale_translate(sx, sy, -f(first[1]), -f(first[0]))


def _nearest_mask(m, in_hw, full_hw, first, out_hw):
    """An ``(H, W, M)`` float mask's top-left ``in_hw`` resized to ``full_hw`` by the
    ``"nearest"`` rule, read at the ``out_hw`` window at ``first``, zero outside."""
    return resize_window(m, in_hw, full_hw, first, out_hw, layout="HWC", method="nearest", antialias=False,
                         max_inv=(1.0, 1.0), cval=0.0)


_SHORTER_RULE = _nearest_rule()  # resize_shorter's: its own and that of its canvas form with a crop


def _letterbox_place(in_hw, *, size, **_):
    return letterbox_box(*in_hw, check_size_pair("size", size))


# --------------------------------------------------------------------------- canvas forms
# Each size-setting op on an image held in the top-left of a larger canvas, its true size
# traced (imgproc.core.registry.CanvasForm): the same arithmetic as the op on the image
# alone, so the same bits.


def _canvas_bound(image, layout, out_hw, factor=1.0):
    """Static bounds of ``true / out`` per axis on this canvas (they fix the tap counts)."""
    return tuple(factor * n / o for n, o in zip(hw(image, layout), out_hw))


def _resize_canvas(image, params, true_hw, *, layout, size, method="linear", antialias=True):
    out = check_size_pair("size", size)
    return resize_window(image, true_hw, out, (0, 0), out, layout=layout, method=method, antialias=antialias,
                         max_inv=_canvas_bound(image, layout, out))


def center_offset(n, crop: int):
    """The source index of the first pixel of torchvision's centre crop of ``crop`` pixels
    out of ``n`` (:func:`center_crop_box`; negative: padded before), for an int or a
    traced ``n``."""
    return _where(n < crop, -((crop - n) // 2), _round_ratio(n - crop, 2))


def _window(image, true_hw, first, out_hw, layout, cval):
    """The ``out_hw`` window of ``image`` starting at ``first`` (traced): a gather; pixels
    outside the true image get ``cval`` (rounded to the dtype). Exact in every dtype."""
    x = jnp.asarray(image)
    fill = back(jnp.asarray(cval, jnp.float32), x.dtype)
    for axis, n, j0, size in zip(spatial_axes(layout), true_hw, first, out_hw):
        j = jnp.asarray(j0, jnp.int32) + jnp.arange(size, dtype=jnp.int32)
        x = jnp.take(x, jnp.clip(j, 0, jnp.maximum(n - 1, 0)), axis=axis)
        shape = [1] * x.ndim
        shape[axis] = size
        x = jnp.where(((j < 0) | (j >= n)).reshape(shape), fill, x)
    return x


def _center_crop_canvas(image, params, true_hw, *, layout, size, cval=0.0):
    out = check_size_pair("size", size)
    first = tuple(center_offset(n, c) for n, c in zip(true_hw, out))
    return _window(image, true_hw, first, out, layout, cval)


def _letterbox_canvas(image, params, true_hw, *, layout, size, cval=0.0, method="linear", antialias=True):
    out = check_size_pair("size", size)
    bound = max(_canvas_bound(image, layout, out, factor=2.0))  # round() can shrink a side: at most 2x
    return _letterbox(image, true_hw, out, layout=layout, cval=cval, method=method, antialias=antialias,
                      max_inv=(bound, bound))


def _fuse_shorter(options, next_stage):
    """``resize_shorter`` followed by ``center_crop`` or ``random_crop`` to a fixed size, on
    a canvas: only the crop's window of the resized image is computed, with the weights
    the two stages give at the exact size. None for other pairs (and with ``max_size``)."""
    name, crop_options = next_stage.info.name, next_stage.options
    if options.get("max_size") is not None or name not in ("center_crop", "random_crop"):
        return None
    if crop_options.get("size") is None:
        return None
    size = int(options["size"])
    method, antialias = options.get("method", "linear"), options.get("antialias", True)
    crop = check_size_pair("size", crop_options["size"])

    def resized(image, true_hw, first, layout, cval):
        full = shorter_side_size(*true_hw, size)
        bound = max(hw(image, layout)) / max(1, size - 1)  # long / floor(size * long / short) <= short / (size - 1)
        return resize_window(image, true_hw, full, first, crop, layout=layout, method=method, antialias=antialias,
                             max_inv=(bound, bound), cval=cval)

    def first(params, full):  # the crop's window in the resized image
        if name == "center_crop":
            return tuple(center_offset(n, c) for n, c in zip(full, crop))
        return params["top"], params["left"]

    def apply(image, params, true_hw, *, layout):
        full = shorter_side_size(*true_hw, size)
        return resized(image, true_hw, first(params, full), layout, crop_options.get("cval", 0.0) if name == "center_crop" else None)

    crop_rule = resolve_targets(next_stage)

    def move(t, params, true_hw, *, min_area, min_visibility):
        """The targets of both stages: boxes and keypoints stage by stage, as on the image
        alone (clipped and checked in between); masks as one window of the resized mask."""
        full = shorter_side_size(*true_hw, size)
        t = dict(t)
        masks = t.pop("masks", None)
        t = move_one(_SHORTER_RULE, t, None, true_hw, full, options, min_area, min_visibility)
        t = move_one(crop_rule, t, params, full, crop, crop_options, min_area, min_visibility)
        if masks is not None:
            t["masks"] = _nearest_mask(masks, true_hw, full, first(params, full), crop)
        return t

    def sample(key, true_hw, *, layout):
        return crop_window_params(key, shorter_side_size(*true_hw, size), crop)

    return CanvasForm(out_size=lambda _: crop, apply=apply, sample=sample if name == "random_crop" else None,
                      move_targets=move)


# the resampling method and the boundary mode, checked when a stage is built
OPS = (
    OpInfo("resize", resize, targets=_nearest_rule(), checks={"method": _check_method},
           canvas=CanvasForm(fixed_size, _resize_canvas)),
    OpInfo("resize_shorter", resize_shorter, targets=_SHORTER_RULE, checks={"method": _check_method},
           canvas=CanvasForm(lambda _: None, None, fuse=_fuse_shorter)),
    OpInfo("pad", pad, targets=matrix_rule(_pad_matrix), checks=MODE_CHECK),
    OpInfo("center_crop", center_crop, targets=matrix_rule(_center_crop_matrix),
           canvas=CanvasForm(fixed_size, _center_crop_canvas)),
    OpInfo("letterbox", letterbox, targets=_nearest_rule(_letterbox_place),
           checks={"method": _check_method}, canvas=CanvasForm(fixed_size, _letterbox_canvas)),
    random_op("random_resize", _resize_params, _apply_resize, check=_check_resize,
              targets=matrix_rule(_random_resize_matrix, half_up=True), checks={"method": _check_scaled_method},
              doc="""Scale jitter with a static output ``size = (height, width)`` (None: the input's): the image is resized by
    ``s * min(height / H, width / W)`` with ``s`` uniform in ``scale`` (``s = 1`` fits it in
    ``size``, keeping the aspect ratio), then placed at a uniform random integer position
    on a ``size`` canvas of ``cval``: padded where it is smaller, cropped where larger (the
    "large scale jitter" of detection training: resize, then random crop or pad to a fixed
    size). ``method``: linear, cubic, lanczos3 or nearest.

    Every image of a batch draws its own scale and position; the output shape is ``size``
    for all. Parameters: ``{"scale", "top", "left"}`` (``top``/``left``: the scaled image's
    top-left corner on the canvas, pixels, negative when cropped). Any layout; dtype kept.

    Example:
        >>> import jax, numpy as np, imgproc
        >>> imgproc.random_resize(0, np.zeros((2, 30, 40, 3), np.uint8), size=(32, 32)).shape
        (2, 32, 32, 3)
    """),
)
register_ops(OPS)
__test__ = doctests(OPS)  # the examples of the functions random_op wrote
