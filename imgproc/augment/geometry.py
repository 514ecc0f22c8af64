"""Geometry: flips, quarter turns, crops, resized crops, bilinear sampling, rotation and
translation, each deterministic op beside its key-first random twin.

A random twin is two pure pieces (see :mod:`imgproc.core.registry`): ``_x_params(key, shape,
*, layout, ...)`` draws the parameters for one image and ``_apply_x(image, params, *,
layout, ...)`` calls the deterministic op with them.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from imgproc.core.array_type import callers_type
from imgproc.core.arrays import matmul, spatial_axes
from imgproc.core.boundary import source_index
from imgproc.core.eager import compiled_when_eager
from imgproc.core.images import check_image
from imgproc.core.keys import below, bernoulli, doctests, maybe, random_op, scaled, uniform, uniforms
from imgproc.core.registry import CanvasForm, OpInfo, register_ops, takes
from imgproc.core.validate import (SAMPLE_MODES, check_bool, check_choice, check_number, check_range, check_sample_mode, check_size_pair,
                               is_traced)
from imgproc.augment.common import back, crop_window_params, fixed_size, hw, to_float
from imgproc.augment.resample import filter_taps, resample_axis, tap_count
from imgproc.augment.targets import matrix_rule, scale_translate
from imgproc.cpu import in_own_loop



@callers_type
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


@callers_type
def flip_up_down(image, *, layout=None):
    """Mirror the rows (H axis). Any layout; shape and dtype kept. Matches ``np.flip(image, axis=H)``."""
    image, layout = check_image(image, layout)
    return jnp.flip(jnp.asarray(image), spatial_axes(layout)[0])


@callers_type
def rot90(image, *, k=1, layout=None):
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


def _fitting_size(size, shape, layout):
    sh, sw = check_size_pair("size", size)
    h, w = hw(shape, layout)
    if sh > h or sw > w:
        raise ValueError(f"crop size {(sh, sw)} is larger than the image {(h, w)}")
    return sh, sw


@callers_type
def crop(image, top, left, *, size, layout=None):
    """Cut the ``size = (height, width)`` window whose top-left pixel is ``(top, left)``.

    ``size`` is static; ``top`` and ``left`` may be traced. A window reaching past the
    border is moved back inside: ``top`` is clamped to ``[0, H - height]`` and ``left``
    to ``[0, W - width]`` (a negative start is 0, not counted from the far edge).

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.arange(16, dtype=np.uint8).reshape(4, 4)
        >>> np.asarray(imgproc.crop(x, 1, 2, size=(2, 2))).tolist()
        [[6, 7], [10, 11]]
    """
    image, layout = check_image(image, layout)
    sh, sw = _fitting_size(size, image.shape, layout)
    a, b = spatial_axes(layout)
    h, w = hw(image.shape, layout)
    # clamped here: lax.dynamic_slice would count a negative start from the far edge
    top = jnp.clip(jnp.asarray(top, jnp.int32), 0, h - sh)
    left = jnp.clip(jnp.asarray(left, jnp.int32), 0, w - sw)
    x = jax.lax.dynamic_slice_in_dim(jnp.asarray(image), top, sh, axis=a)
    return jax.lax.dynamic_slice_in_dim(x, left, sw, axis=b)


@callers_type
def resized_crop(image, top, left, height, width, *, size, antialias=True, layout=None):
    """Crop the box ``(top, left, height, width)`` (pixels, may be fractional and traced) and
    resize it to the static ``size = (out_height, out_width)`` with linear interpolation:
    ``torchvision.transforms.v2.functional.resized_crop`` (bilinear), which crops, then
    resizes.

    The box edges map exactly onto the output edges; the weights are :func:`imgproc.resize`'s
    (half-pixel centres, the triangle widened when shrinking if ``antialias``) over the
    pixels the box covers only, renormalised at its edges: nothing outside the box bleeds
    in. For an integer box this is ``F.resized_crop(..., antialias=antialias)``: within one
    level on uint8 and 1e-5 on float (tests/golden/); a fractional box reads the pixels
    from ``floor(top)`` to ``ceil(top + height)`` (and so for columns); pixels of the box
    outside the image are 0, as torchvision's crop pads them. Output dtype equals the
    input's.

    Each output pixel reads only the input pixels its filter covers
    (:mod:`imgproc.augment.resample`); a traced ``height`` or ``width`` is held to the
    image's size (at most H and W), which then bounds the taps. Called eagerly with a
    known box, the op is one compiled program with the box's numbers as its arguments
    (a new box needing no more taps does not compile again), bit-equal to the same call
    inside ``jit``.
    """
    image, layout = check_image(image, layout)
    size = check_size_pair("size", size)
    if is_traced(height) or is_traced(width):  # held to the image, whose size bounds the taps
        height, width = _held_box({"height": height, "width": width}, hw(image, layout))
        return _resized_crop_taps(image, top, left, height, width, size, antialias, layout,
                                  taps=_crop_taps(hw(image, layout), size, antialias))
    check_number("top", top)
    check_number("left", left)
    check_number("height", height, low=0, low_open=True)
    check_number("width", width, low=0, low_open=True)
    taps = _crop_taps((float(height), float(width)), size, antialias)
    if is_traced((image, top, left)):
        return _resized_crop_taps(image, top, left, height, width, size, antialias, layout, taps=taps)
    box = [np.float32(v) for v in (top, left, height, width)]
    return _resized_crop_program(image, *box, size=size, antialias=antialias, layout=layout, taps=taps)


@functools.partial(jax.jit, static_argnames=("size", "antialias", "layout", "taps"))
def _resized_crop_program(image, top, left, height, width, *, size, antialias, layout, taps):
    """:func:`resized_crop` called eagerly with a known box: one compiled program per image
    shape and dtype, output size and tap counts, the box's numbers its arguments (a new box
    needing no more taps does not compile again); op by op, a call compiled dozens of
    one-primitive programs for each new shape. The same bits as the call inside ``jit``."""
    return _resized_crop_taps(image, top, left, height, width, size, antialias, layout, taps=taps)


def _crop_taps(max_box, size, antialias) -> tuple[int, int]:
    """The taps per output pixel of a resized crop to ``size`` of a box at most ``max_box``
    (static ``(height, width)``), per axis."""
    check_bool("antialias", antialias)
    return tuple(tap_count("linear", bound / n_out, antialias) for bound, n_out in zip(max_box, size))


def _resized_crop_taps(image, top, left, height, width, size, antialias, layout, *, taps, true_hw=None,
                       origin=None, dtype=None):
    """:func:`resized_crop` with ``taps = (rows, cols)`` (static) gathered taps per output
    pixel (:mod:`imgproc.augment.resample`), enough for the box (:func:`_crop_taps` of a
    bound on its ``height``/``width``, which may be traced). The box's numbers enter as
    runtime values even when known, so a known box and the same box traced give the same
    bits (XLA would fold known weights with other roundings). ``true_hw``: the image's size when it is the
    top-left of a larger canvas (None: the array's). ``origin``: ``image`` is only a
    window of the image, its first pixel at ``origin = (row, col)`` (traced), which the
    caller placed to hold every pixel the box's filters reach (:func:`_window_origin`);
    the same bits. ``dtype``: the result's (None: the image's)."""
    axes = spatial_axes(layout)
    y = jnp.asarray(image)  # converted to float32 by the first pass, as it reads (resample_axis)
    if true_hw is None:
        true_hw = tuple(y.shape[a] for a in axes)
    top, left, height, width = jax.lax.optimization_barrier(
        tuple(jnp.asarray(v, jnp.float32) for v in (top, left, height, width)))
    for axis, n_valid, n_out, start, length, n_taps, offset in zip(axes, true_hw, size, (top, left), (height, width),
                                                                     taps, origin or (0, 0)):
        scale = n_out / jnp.asarray(length, jnp.float32)
        inv = 1.0 / scale
        translation = -jnp.asarray(start, jnp.float32) * scale
        centre = (jnp.arange(n_out, dtype=jnp.float32) + 0.5) * inv - translation * inv - 0.5
        width_ = jnp.maximum(inv, 1.0) if antialias else 1.0
        # crop, then resize (torchvision's resized_crop): only the pixels the box covers are
        # read, the filter renormalised at the box's edges; a box pixel outside the image is
        # 0 (torchvision's crop pads with zeros)
        start_f = jnp.asarray(start, jnp.float32)
        first = jnp.floor(start_f).astype(jnp.int32)
        end = jnp.ceil(start_f + jnp.asarray(length, jnp.float32)).astype(jnp.int32)
        index, weight = filter_taps(centre - first.astype(jnp.float32), jnp.maximum(end - first, 1),
                                    method="linear", width=width_, taps=n_taps)
        index = index + first
        weight = jnp.where((index >= 0) & (index < n_valid), weight, 0.0)
        index = jnp.clip(index, 0, jnp.maximum(jnp.asarray(n_valid, jnp.int32) - 1, 0))
        if origin is not None:  # the same taps, indexed in the window (those outside weigh 0)
            index = jnp.clip(index - offset, 0, y.shape[axis] - 1)
        y = resample_axis(y, axis, index, weight)
    return back(y, image.dtype if dtype is None else dtype)


def _window_origin(start, length, n_out, antialias, side: int, extent: int):
    """Where a window of ``side`` pixels (static) along an axis of ``extent`` pixels starts
    so that it holds every pixel a resized crop's taps reach (:func:`_box_reach`) for a box
    from ``start`` of ``length`` (traced) resized to ``n_out``; int32."""
    first = jnp.floor(jnp.asarray(start, jnp.float32) - _box_reach(length, n_out, antialias)[0]).astype(jnp.int32)
    return jnp.clip(first, 0, extent - side)


def _box_reach(length, n_out, antialias):
    """How far a resized crop's linear taps reach outside its box along an axis of box
    ``length`` (traced) resized to ``n_out``: ``(before, span)``, pixels before the box's
    start and the whole extent read (a pixel of margin on each side for rounding)."""
    inv = jnp.asarray(length, jnp.float32) / n_out
    radius = jnp.maximum(inv, 1.0) if antialias else jnp.ones((), jnp.float32)
    return radius + 1.0, jnp.asarray(length, jnp.float32) + 2.0 * radius + 2.0


@callers_type
def sample(image, rows, cols, *, mode="constant", cval=0.0, layout=None):
    """Bilinear sampling of ``image`` at float coordinates ``rows``, ``cols`` (each of the
    output's (H', W') shape), every channel at once.

    Matches ``scipy.ndimage.map_coordinates(plane, [rows, cols], order=1, mode=m)`` per 2-D
    plane, with ``m`` = ``mode`` for ``constant`` (a point outside ``[0, n - 1]`` by any
    amount gets ``cval``; no interpolation beyond the edge), ``grid-constant`` (neighbours
    outside the image are ``cval``, interpolated with those inside), ``nearest``,
    ``reflect`` (alias ``grid-mirror``) and ``mirror``, and ``grid-wrap`` for ``wrap`` (both
    names accepted). Out-of-image neighbours are found with the filters' boundary rule
    (:func:`imgproc.core.boundary.source_index`).
    """
    image, layout = check_image(image, layout)
    mode = check_sample_mode(mode)
    check_number("cval", cval)
    a, b = spatial_axes(layout)
    h, w = hw(image, layout)
    x = jnp.moveaxis(to_float(jnp.asarray(image)), (a, b), (0, 1))
    extra = (1,) * (x.ndim - 2)
    if mode == "grid-constant":  # a neighbour outside the image is cval: two gathers of pairs
        out = _bilinear_pairs(x, rows, cols, jnp.asarray(cval, jnp.float32))
    else:
        index_mode = "nearest" if mode == "constant" else mode  # constant: masked below
        flat, weight = _bilinear_taps(rows, cols, h, w, index_mode)
        planes = x.reshape((h * w,) + x.shape[2:])
        out = 0.0
        for k in range(4):  # (0, 0), (0, 1), (1, 0), (1, 1), summed in that order
            out = out + weight[k].reshape(weight[k].shape + extra) * planes[flat[k]]
    if mode == "constant":
        inside = (rows >= 0) & (rows <= h - 1) & (cols >= 0) & (cols <= w - 1)
        out = jnp.where(inside.reshape(inside.shape + extra), out, jnp.asarray(cval, jnp.float32))
    y = jnp.moveaxis(out, (0, 1), (a, b))
    return back(y, image.dtype)


def _corner(points):
    """The upper-left neighbour ``(r0, c0)`` (int32) of each point of ``points`` (rows,
    cols) and the four weights ``(1 - fr)(1 - fc)``, ``(1 - fr) fc``, ``fr (1 - fc)``,
    ``fr fc`` of the neighbours (0, 0), (0, 1), (1, 0), (1, 1), in that order."""
    r0f, c0f = jnp.floor(points[0]), jnp.floor(points[1])
    fr, fc = points[0] - r0f, points[1] - c0f
    return r0f.astype(jnp.int32), c0f.astype(jnp.int32), [wr * wc for wr in (1 - fr, fr) for wc in (1 - fc, fc)]


def _bilinear_taps(rows, cols, h, w, index_mode):
    """The four neighbours of each sample point: flat pixel indices ``(4, H', W')`` int32
    (``row * w + col``, out-of-image neighbours mapped by ``index_mode``) and their weights
    (``(1 - fr)(1 - fc)``, ``(1 - fr) fc``, ``fr (1 - fc)``, ``fr fc``). Computed once as
    arrays on CPU (:func:`imgproc.cpu.in_own_loop`):
    fused into the gathers, XLA recomputed the points' whole arithmetic (a warp's grid
    included) for every tap and channel."""
    def taps(points):
        r0, c0, weight = _corner(points)
        flat = [source_index(r0 + dr, h, index_mode, jnp) * w + source_index(c0 + dc, w, index_mode, jnp)
                for dr in (0, 1) for dc in (0, 1)]
        return jnp.stack(flat), jnp.stack(weight)

    return in_own_loop(taps, jnp.stack(jnp.broadcast_arrays(rows, cols)))


def _bilinear_pairs(x, rows, cols, fill):
    """Bilinear sampling with ``grid-constant`` borders (neighbours outside the image are
    ``fill``) of ``x``, ``(h, w, ...)`` float32, at ``rows``, ``cols``: the same sums as
    :func:`sample`'s four gathers, in the same order, from two. ``x`` is extended by two
    pixels of ``fill`` on each side, so the two horizontal neighbours of a point are
    consecutive pixels of the extended image's flat rows, gathered as one slice of two
    (a point farther outside reads the border pixels only). Each gather of XLA:CPU is a
    loop over points, whose cost is per slice (benchmarks/NOTES.md, "Real datasets")."""
    h, w = x.shape[0], x.shape[1]
    wp = w + 4

    def taps(points):
        r0, c0, weight = _corner(points)
        r0 = jnp.clip(r0 + 2, 0, h + 2)  # the upper neighbours' row of the extended image
        c0 = jnp.clip(c0 + 2, 0, w + 2)
        return jnp.stack([r0 * wp + c0, (r0 + 1) * wp + c0]), jnp.stack(weight)

    starts, weight = in_own_loop(taps, jnp.stack(jnp.broadcast_arrays(rows, cols)))
    extended = jnp.pad(x, ((2, 2), (2, 2)) + ((0, 0),) * (x.ndim - 2), constant_values=fill)
    flat = extended.reshape((-1,) + x.shape[2:])
    rest = x.shape[2:]
    dims = jax.lax.GatherDimensionNumbers(offset_dims=tuple(range(starts.ndim - 1, starts.ndim + len(rest))),
                                          collapsed_slice_dims=(), start_index_map=(0,))
    top, bottom = (jax.lax.gather(flat, s[..., None], dims, slice_sizes=(2,) + rest, mode="clip") for s in starts)
    extra = (1,) * len(rest)
    out = 0.0
    for k, value in enumerate((top[:, :, 0], top[:, :, 1], bottom[:, :, 0], bottom[:, :, 1])):
        out = out + weight[k].reshape(weight[k].shape + extra) * value
    return out


def _grid(h, w):
    return jnp.meshgrid(jnp.arange(h, dtype=jnp.float32), jnp.arange(w, dtype=jnp.float32), indexing="ij")


def cos_sin_degrees(angle):
    """cos and sin of ``angle`` degrees, exact at multiples of 90 (float32's cos(pi/2) is
    -4.4e-8, which would move edge pixels of a quarter turn outside the image)."""
    a = jnp.asarray(angle, jnp.float32)
    quarter = jnp.mod(a, 360.0) / 90.0
    exact = quarter == jnp.round(quarter)
    q = jnp.mod(jnp.round(quarter).astype(jnp.int32), 4)
    t = jnp.deg2rad(a)
    cos = jnp.where(exact, jnp.asarray([1.0, 0.0, -1.0, 0.0])[q], jnp.cos(t))
    sin = jnp.where(exact, jnp.asarray([0.0, 1.0, 0.0, -1.0])[q], jnp.sin(t))
    return cos, sin


@callers_type
@compiled_when_eager
def rotate(image, angle, *, mode="constant", cval=0.0, layout=None):
    """Rotate by ``angle`` degrees counter-clockwise about the image centre, keeping the shape.

    Matches ``scipy.ndimage.rotate(plane, angle, reshape=False, order=1, mode=mode,
    cval=cval)`` per 2-D plane (``mode`` as for :func:`sample`). ``angle`` may be traced.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.arange(9, dtype=np.float32).reshape(3, 3)
        >>> np.asarray(imgproc.rotate(x, 90.0)).tolist() == np.rot90(x).tolist()
        True
    """
    image, layout = check_image(image, layout)
    check_number("angle", angle)
    h, w = hw(image, layout)
    cos, sin = cos_sin_degrees(angle)
    cy, cx = (h - 1) / 2.0, (w - 1) / 2.0
    r, c = _grid(h, w)
    dy, dx = r - cy, c - cx
    rows = cy + cos * dy + sin * dx
    cols = cx - sin * dy + cos * dx
    return sample(image, rows, cols, mode=mode, cval=cval, layout=layout)


@callers_type
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


# --------------------------------------------------------------------------- random twins


def _flip_params(key, shape, *, layout, p=0.5):
    check_number("p", p, low=0, high=1)
    return {"flip": bernoulli(key, p)}


def _maybe_flip(flip, mirror, x):
    """``mirror(x)`` where ``flip``, else ``x``. A float image: a select of the image and its
    mirror, one loop that XLA joins with the selects around it (erasing's in the ImageNet
    recipe); :func:`maybe`'s conditional copied each image into and out of its branches
    there. An integer image: the conditional, which mirrors only the images it flips (a
    mirror of 3-byte pixels does not vectorise, and the select made the augmentation
    benchmark's uint8 pipeline 20 % slower). The same values either way
    (benchmarks/NOTES.md, "Real datasets")."""
    if jnp.issubdtype(x.dtype, jnp.floating):
        return jnp.where(flip, mirror(x), x)
    return maybe(flip, mirror, x)


def _apply_flip_left_right(image, params, *, layout):
    return _maybe_flip(params["flip"], lambda x: flip_left_right(x, layout=layout), jnp.asarray(image))


def _apply_flip_up_down(image, params, *, layout):
    return _maybe_flip(params["flip"], lambda x: flip_up_down(x, layout=layout), jnp.asarray(image))


def _rot90_params(key, shape, *, layout):
    h, w = hw(shape, layout)
    if h != w:
        raise ValueError(f"random_rot90 needs a square image (H == W); got H={h}, W={w}")
    return {"k": below(uniforms(key, 1)[0], 4)}


def _apply_rot90(image, params, *, layout):
    x = jnp.asarray(image)
    a, b = spatial_axes(layout)
    # rot90 as flips of the transpose: k=1: flip H(transpose); k=2: flip both; k=3: flip W(transpose).
    # The transpose is taken inside the branches that need it: taken before the switch, it
    # ran for every image, k = 0 and 2 included.
    def turn(k):
        return lambda x: jnp.flip(jnp.swapaxes(x, a, b), a if k == 1 else b)

    return jax.lax.switch(params["k"], [lambda x: x, turn(1), lambda x: jnp.flip(x, (a, b)), turn(3)], x)


def _crop_size(size, shape, layout):
    h, w = hw(shape, layout)
    if size is None:
        size = (max(1, h * 7 // 8), max(1, w * 7 // 8))
    return _fitting_size(size, shape, layout)


def _crop_params(key, shape, *, layout, size=None):
    return crop_window_params(key, hw(shape, layout), _crop_size(size, shape, layout))


def _apply_crop(image, params, *, layout, size=None):
    return crop(image, params["top"], params["left"], size=_crop_size(size, image.shape, layout), layout=layout)


def _resized_crop_params(key, shape, *, layout, size=None, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    if size is not None:  # the output's size: what apply checks, checked with the draw
        check_size_pair("size", size)
    return _draw_resized_crop(key, hw(shape, layout), scale, ratio)


TRIES = 10  # torchvision's RandomResizedCrop.get_params tries ten boxes


def _draw_resized_crop(key, in_hw, scale, ratio):
    """random_resized_crop's box in an ``in_hw`` image (sides ints or traced): torchvision's
    ``RandomResizedCrop.get_params`` with its ten tries drawn at once. Try ``k`` draws an
    area ``U(scale) * H * W`` and an aspect ``exp(U(log ratio))``, and the integer sides
    ``round(sqrt(area * aspect))`` wide, ``round(sqrt(area / aspect))`` high (half to even,
    Python's round); the first try that fits (both sides in ``[1, side]``) is the box, at an
    integer position uniform over those that keep it inside. When none fits, the centre
    crop of torchvision's fallback: the whole image, or the largest box of the nearest
    ratio bound (``round(W / min(ratio))`` high or ``round(H * max(ratio))`` wide)."""
    h, w = in_hw
    check_range("scale", scale, low=0, high=1)
    check_range("ratio", ratio, low=1e-6)
    hf, wf = jnp.asarray(h, jnp.float32), jnp.asarray(w, jnp.float32)
    u = uniforms(key, 2 * TRIES + 2)  # the tries' areas and aspects, then the position
    area = scaled(u[:TRIES], scale[0], scale[1]) * (hf * wf)
    log_lo, log_hi = jnp.log(jnp.asarray(ratio[0], jnp.float32)), jnp.log(jnp.asarray(ratio[1], jnp.float32))
    aspect = jnp.exp(scaled(u[TRIES:2 * TRIES], log_lo, log_hi))
    bw, bh = jnp.round(jnp.sqrt(area * aspect)), jnp.round(jnp.sqrt(area / aspect))
    fits = (bw >= 1) & (bw <= wf) & (bh >= 1) & (bh <= hf)
    first = jnp.argmax(fits)  # the first try that fits (0 when none does: the fallback below)
    lo_ratio = jnp.minimum(jnp.asarray(ratio[0], jnp.float32), jnp.asarray(ratio[1], jnp.float32))
    hi_ratio = jnp.maximum(jnp.asarray(ratio[0], jnp.float32), jnp.asarray(ratio[1], jnp.float32))
    in_ratio = wf / hf
    fw = jnp.where(in_ratio > hi_ratio, jnp.round(hf * hi_ratio), wf)
    fh = jnp.where(in_ratio < lo_ratio, jnp.round(wf / lo_ratio), hf)
    found = fits.any()
    bw, bh = jnp.where(found, bw[first], fw), jnp.where(found, bh[first], fh)
    top = jnp.where(found, jnp.floor(u[2 * TRIES] * (hf - bh + 1)), jnp.floor((hf - bh) / 2))
    left = jnp.where(found, jnp.floor(u[2 * TRIES + 1] * (wf - bw + 1)), jnp.floor((wf - bw) / 2))
    return {"top": jnp.minimum(top, hf - bh), "left": jnp.minimum(left, wf - bw), "height": bh, "width": bw}


def _apply_resized_crop(image, params, *, layout, size=None, antialias=True):
    """The drawn box is inside the image; replayed parameters are held to that too (a box
    height or width beyond the image's is clipped to it, as the draw clips), which bounds
    the taps each output pixel reads."""
    size = hw(image, layout) if size is None else check_size_pair("size", size)
    h, w = hw(image, layout)
    height, width = _held_box(params, (h, w))
    return _resized_crop_taps(image, params["top"], params["left"], height, width, size, antialias, layout,
                              taps=_crop_taps((h, w), size, antialias))


# canvas forms (imgproc.core.registry.CanvasForm): the ops on an image in the top-left of
# a larger array, its true size traced; the same arithmetic as on the image alone


def _resized_crop_canvas(image, params, true_hw, *, layout, top, left, height, width, size, antialias=True):
    size = check_size_pair("size", size)
    return _resized_crop_taps(image, top, left, height, width, size, antialias, layout,
                              taps=_crop_taps((float(height), float(width)), size, antialias), true_hw=true_hw)


def _random_resized_crop_canvas_params(key, true_hw, *, layout, size=None, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    return _draw_resized_crop(key, true_hw, scale, ratio)


def _random_resized_crop_canvas(image, params, true_hw, *, layout, size=None, antialias=True):
    height, width = _held_box(params, true_hw)
    size = check_size_pair("size", size)
    return _resized_crop_taps(image, params["top"], params["left"], height, width, size, antialias, layout,
                              taps=_crop_taps(hw(image, layout), size, antialias), true_hw=true_hw)


# window sides a looped random_resized_crop reads its box from (besides the whole canvas)
WINDOW_SIDES = (160, 288, 512)


def _random_resized_crop_looped(canvas, slot, params, true_hw, *, layout, size=None, antialias=True):
    """:func:`_random_resized_crop_canvas` for image ``slot`` (traced) of the ``canvas``
    batch, one image at a time (a ``lax.map`` over the batch): the box is read from the
    smallest of a few square windows that holds what its filters reach (``WINDOW_SIDES``,
    else the whole canvas), each a branch of a ``lax.switch``: an image's work then follows
    its box, not the canvas (a box of 300 pixels in a canvas of 1024 read 1024 columns
    with taps for a 1024-pixel box). A window is sliced from the batch directly, so the
    rest of the image's canvas is never read (nor copied). The same bits: the same taps
    and weights, indexed in the window. Takes the canvas in its dtype (only the window is
    converted), gives float32 (``CanvasForm.apply_looped``)."""
    size = check_size_pair("size", size)
    height, width = _held_box(params, true_hw)
    axes = spatial_axes(layout)
    extent = tuple(canvas.shape[1 + a] for a in axes)
    sides = [s for s in WINDOW_SIDES if s < min(extent)]
    need = jnp.maximum(_box_reach(height, size[0], antialias)[1], _box_reach(width, size[1], antialias)[1])
    branch = sum((need > s).astype(jnp.int32) for s in sides) if sides else 0
    box = params["top"], params["left"]

    def read(side):
        def crop(batch, i):
            if side is None:
                x, origin, bound = jax.lax.dynamic_index_in_dim(batch, i, keepdims=False), None, extent
            else:
                origin = tuple(_window_origin(start, length, n_out, antialias, side, n)
                               for start, length, n_out, n in zip(box, (height, width), size, extent))
                starts, shape = [i] + [0] * (batch.ndim - 1), [1, *batch.shape[1:]]
                for axis, first in zip(axes, origin):
                    starts[1 + axis], shape[1 + axis] = first, side
                x, bound = jax.lax.dynamic_slice(batch, starts, shape)[0], (float(side), float(side))
            return _resized_crop_taps(x, *box, height, width, size, antialias, layout,
                                      taps=_crop_taps(bound, size, antialias),
                                      true_hw=true_hw, origin=origin, dtype=jnp.float32)
        return crop

    return jax.lax.switch(branch, [read(s) for s in sides] + [read(None)], canvas, slot)


def _random_crop_canvas_params(key, true_hw, *, layout, size=None):
    return crop_window_params(key, true_hw, check_size_pair("size", size))


def _random_crop_canvas(image, params, true_hw, *, layout, size=None):
    sh, sw = check_size_pair("size", size)
    a, b = spatial_axes(layout)
    x = jax.lax.dynamic_slice_in_dim(jnp.asarray(image), jnp.asarray(params["top"], jnp.int32), sh, axis=a)
    return jax.lax.dynamic_slice_in_dim(x, jnp.asarray(params["left"], jnp.int32), sw, axis=b)


def _held_box(params, in_hw):
    """A resized crop's ``(height, width)`` held to the image's (at least 1 pixel): what
    the image and its targets both use."""
    return (jnp.clip(jnp.asarray(params["height"], jnp.float32), 1.0, in_hw[0]),
            jnp.clip(jnp.asarray(params["width"], jnp.float32), 1.0, in_hw[1]))


def _rotate_params(key, shape, *, layout, max_degrees=15.0):
    check_number("max_degrees", max_degrees, low=0)
    m = jnp.asarray(max_degrees, jnp.float32)
    return {"angle": uniform(key, -m, m)}


def _apply_rotate(image, params, *, layout, mode="constant", cval=0.0):
    return rotate(image, params["angle"], mode=mode, cval=cval, layout=layout)


def _translate_params(key, shape, *, layout, max_fraction=0.1):
    h, w = hw(shape, layout)
    fy, fx = (max_fraction, max_fraction) if np.ndim(max_fraction) == 0 else max_fraction
    check_number("max_fraction", fy, low=0, high=1)
    check_number("max_fraction", fx, low=0, high=1)
    u = uniforms(key, 2)
    my, mx = jnp.asarray(fy, jnp.float32) * h, jnp.asarray(fx, jnp.float32) * w
    return {"dy": scaled(u[0], -my, my), "dx": scaled(u[1], -mx, mx)}


def _apply_translate(image, params, *, layout, mode="constant", cval=0.0):
    return translate(image, params["dy"], params["dx"], mode=mode, cval=cval, layout=layout)


# --------------------------------------------------------------------------- targets
# Each op is one 3x3 matrix in pixel indices (x = col, y = row): how boxes, masks and
# keypoints follow the image (imgproc.augment.targets).


def _flip_lr_matrix(h, w):
    return jnp.asarray([[-1, 0, w - 1], [0, 1, 0], [0, 0, 1]], jnp.float32)


def _flip_ud_matrix(h, w):
    return jnp.asarray([[1, 0, 0], [0, -1, h - 1], [0, 0, 1]], jnp.float32)


def _rot90_matrices(h, w):
    """np.rot90 by k = 0..3 quarter turns (counter-clockwise) of an (h, w) image."""
    return jnp.asarray([[[1, 0, 0], [0, 1, 0], [0, 0, 1]], [[0, 1, 0], [-1, 0, w - 1], [0, 0, 1]],
                        [[-1, 0, w - 1], [0, -1, h - 1], [0, 0, 1]], [[0, -1, h - 1], [1, 0, 0], [0, 0, 1]]],
                       jnp.float32)


def _crop_matrix(top, left, in_hw, out_hw):
    (h, w), (oh, ow) = in_hw, out_hw  # the window is moved inside, as crop's dynamic_slice does
    return scale_translate(1.0, 1.0, -jnp.clip(jnp.asarray(left, jnp.float32), 0, w - ow),
                           -jnp.clip(jnp.asarray(top, jnp.float32), 0, h - oh))


def _resized_crop_matrix(top, left, height, width, out_hw):
    sy, sx = out_hw[0] / jnp.asarray(height, jnp.float32), out_hw[1] / jnp.asarray(width, jnp.float32)
    return scale_translate(sx, sy, -jnp.asarray(left, jnp.float32) * sx, -jnp.asarray(top, jnp.float32) * sy)


def _rotate_matrix(angle, h, w):
    """Forward matrix of :func:`rotate` (scipy.ndimage.rotate about the centre pixel)."""
    cos, sin = cos_sin_degrees(angle)
    cx, cy = (w - 1) / 2.0, (h - 1) / 2.0
    one, zero = jnp.ones((), jnp.float32), jnp.zeros((), jnp.float32)
    rot = jnp.stack([jnp.stack([cos, sin, zero]), jnp.stack([-sin, cos, zero]), jnp.stack([zero, zero, one])])
    # a shift is the same in both coordinates
    return matmul(matmul(scale_translate(1, 1, cx, cy), rot), scale_translate(1, 1, -cx, -cy))


_RULES = {
    "flip_left_right": matrix_rule(lambda q, i, o, /, **_: _flip_lr_matrix(*i)),
    "flip_up_down": matrix_rule(lambda q, i, o, /, **_: _flip_ud_matrix(*i)),
    "rot90": matrix_rule(lambda q, i, o, /, k=1, **_: _rot90_matrices(*i)[int(k) % 4]),
    "crop": matrix_rule(lambda q, i, o, /, top, left, **_: _crop_matrix(top, left, i, o)),
    "resized_crop": matrix_rule(lambda q, i, o, /, top, left, height, width, **_: _resized_crop_matrix(top, left, height,
                                                                                                   width, o)),
    "rotate": matrix_rule(lambda q, i, o, /, angle, **_: _rotate_matrix(angle, *i)),
    "translate": matrix_rule(lambda q, i, o, /, dy, dx, **_: scale_translate(1, 1, dx, dy)),
    "random_flip_left_right": matrix_rule(
        lambda q, i, o, /, **_: jnp.where(q["flip"], _flip_lr_matrix(*i), jnp.eye(3, dtype=jnp.float32))),
    "random_flip_up_down": matrix_rule(
        lambda q, i, o, /, **_: jnp.where(q["flip"], _flip_ud_matrix(*i), jnp.eye(3, dtype=jnp.float32))),
    "random_rot90": matrix_rule(lambda q, i, o, /, **_: _rot90_matrices(*i)[q["k"]]),
    "random_crop": matrix_rule(lambda q, i, o, /, **_: _crop_matrix(q["top"], q["left"], i, o)),
    "random_resized_crop": matrix_rule(
        lambda q, i, o, /, **_: _resized_crop_matrix(q["top"], q["left"], *_held_box(q, i), o)),
    "random_rotate": matrix_rule(lambda q, i, o, /, **_: _rotate_matrix(q["angle"], *i)),
    "random_translate": matrix_rule(lambda q, i, o, /, **_: scale_translate(1, 1, q["dx"], q["dy"])),
}

_CANVAS = {
    "resized_crop": CanvasForm(fixed_size, _resized_crop_canvas),
    "random_crop": CanvasForm(fixed_size, _random_crop_canvas, sample=_random_crop_canvas_params),
    "random_resized_crop": CanvasForm(fixed_size, _random_resized_crop_canvas,
                                      sample=_random_resized_crop_canvas_params,
                                      apply_looped=_random_resized_crop_looped),
}


def _op(name, fn, **pieces):
    """The op's registry entry, with its target rule (every geometry op moves targets) and,
    for an op with a sampling ``mode``, that mode checked when a stage is built."""
    checks = {"mode": check_sample_mode} if takes(fn, "mode") else {}
    return OpInfo(name, fn, targets=_RULES[name], checks=checks, canvas=_CANVAS.get(name), **pieces)


def _random(name, sample, apply, **options):
    """A random op's registry entry and public function (:func:`random_op`), as :func:`_op`
    says; an op with a sampling ``mode`` also checks it first on every call."""
    if takes(apply, "mode"):
        return random_op(name, sample, apply, targets=_RULES[name], checks={"mode": check_sample_mode},
                         check=check_sample_mode, **options)
    return random_op(name, sample, apply, targets=_RULES[name], canvas=_CANVAS.get(name), **options)


OPS = (
    _op("flip_left_right", flip_left_right),
    _op("flip_up_down", flip_up_down),
    _op("rot90", rot90),
    _op("crop", crop),
    _op("resized_crop", resized_crop),
    _op("rotate", rotate),
    _op("translate", translate),
    _random("random_flip_left_right", _flip_params, _apply_flip_left_right,
            doc="""Flip left-right with probability ``p`` (:func:`flip_left_right`). One image, or a batch
    (image ``i`` drawn with ``fold_in(key, i)``), any layout; shape and dtype kept.
    Parameters: ``{"flip": bool}``."""),
    _random("random_flip_up_down", _flip_params, _apply_flip_up_down,
            doc="""Flip up-down with probability ``p`` (:func:`flip_up_down`). Parameters: ``{"flip": bool}``."""),
    _random("random_rot90", _rot90_params, _apply_rot90,
            doc="""Rotate by ``k`` quarter turns, ``k`` uniform in {0, 1, 2, 3} (:func:`rot90`). The image
    must be square (a quarter turn of a non-square image changes its shape).
    Parameters: ``{"k": int}``."""),
    _random("random_crop", _crop_params, _apply_crop,
            doc="""Crop a ``size = (height, width)`` window at a uniform random position (every window
    equally likely); ``size=None`` crops 7/8 of each side (224 of 256). :func:`crop`.
    Parameters: ``{"top": int, "left": int}``."""),
    _random("random_resized_crop", _resized_crop_params, _apply_resized_crop,
            doc="""Inception-style crop: a box of area ``U(scale) * H * W`` and aspect ``exp(U(log
    ratio))``, resized to ``size`` (default: the input's size). :func:`resized_crop`.

    The box is ``torchvision.transforms.v2.RandomResizedCrop``'s: integer sides, ten tries
    drawn at once (the first that fits the image is taken) and, when none fits,
    torchvision's centre-crop fallback; the crop distribution therefore matches
    torchvision's (tested against its statistics, tests/golden/). Parameters: ``{"top",
    "left", "height", "width"}`` (float32 holding whole pixels).
    """),
    _random("random_rotate", _rotate_params, _apply_rotate,
            doc="""Rotate by an angle uniform in ``[-max_degrees, max_degrees]`` (:func:`rotate`).
    Parameters: ``{"angle": degrees}``."""),
    _random("random_translate", _translate_params, _apply_translate,
            doc="""Shift by ``(dy, dx)`` uniform in ``±max_fraction * (H, W)`` pixels (:func:`translate`;
    ``max_fraction`` a number or a pair (rows, cols)). Parameters: ``{"dy", "dx"}``."""),
)
register_ops(OPS)
__test__ = doctests(OPS)  # the examples of the functions random_op wrote
