"""Warps: affine (rotation, scale, shear and translation in one resampling) and
perspective, each beside its key-first random twin.

Both are one 3×3 matrix ``M`` in pixel-index coordinates (pixel ``(row, col)`` is the
point ``x = col, y = row``; the image spans ``[-0.5, W - 0.5] × [-0.5, H - 0.5]``): the
output pixel at ``(x, y)`` takes the source value at ``M⁻¹ (x, y, 1)`` (after the
projective divide), read with bilinear or nearest interpolation; a source point outside
the image reads ``cval`` (bilinear: neighbours outside are ``cval`` and interpolated with
those inside, scipy's ``grid-constant``; torchvision's zero padding with ``cval = 0``).
:func:`affine_matrix` and :func:`perspective_matrix` give ``M``; the matrix moves points
(boxes, keypoints) the way the warp moves pixels.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from imgproc.augment.common import back, hw, sample_nearest, warp_coordinates
from imgproc.augment.geometry import cos_sin_degrees, sample
from imgproc.augment.targets import matrix_rule
from imgproc.core.array_type import callers_type
from imgproc.core.arrays import matmul, spatial_axes
from imgproc.core.eager import compiled_when_eager
from imgproc.core.images import check_image
from imgproc.core.keys import below, doctests, random_op, scaled, uniforms
from imgproc.core.registry import OpInfo, register_ops
from imgproc.core.validate import check_choice, check_number, check_range, is_traced

__all__ = ["INTERPOLATIONS", "affine", "affine_inverse", "affine_matrix", "affine_source", "perspective",
           "perspective_matrix", "random_affine", "random_perspective", "warp", "warp_affine"]

INTERPOLATIONS = ("bilinear", "nearest")


def _translation(tx, ty):
    one, zero = jnp.ones((), jnp.float32), jnp.zeros((), jnp.float32)
    return jnp.stack([jnp.stack([one, zero, tx]), jnp.stack([zero, one, ty]), jnp.stack([zero, zero, one])])


def _rotation_shear(angle, shear):
    """torchvision's ``RSS`` coefficients ``(a, b, c, d)`` of a rotation by ``angle`` and a
    ``shear`` (degrees, float32; cos and sin exact at multiples of 90 degrees, so a
    quarter turn keeps every pixel): the one computation both matrices below share."""
    f32 = lambda v: jnp.asarray(v, jnp.float32)  # noqa: E731
    cos_r, sin_r = cos_sin_degrees(angle)
    cos_rs, sin_rs = cos_sin_degrees(f32(angle) - f32(shear[1]))
    cos_sy, _ = cos_sin_degrees(shear[1])
    cos_sx, sin_sx = cos_sin_degrees(shear[0])
    tan_sx = sin_sx / cos_sx
    return (cos_rs / cos_sy, -cos_rs * tan_sx / cos_sy - sin_r, sin_rs / cos_sy, -sin_rs * tan_sx / cos_sy + cos_r)


def affine_matrix(h, w, *, angle=0.0, translate=(0.0, 0.0), scale=1.0, shear=(0.0, 0.0), center=None):
    """The forward 3×3 matrix (pixel-index coordinates) of :func:`affine` on an (h, w)
    image: torchvision's ``_get_inverse_affine_matrix(center, angle, translate, scale,
    shear)``, whose inverse ``F.affine`` samples with, moved from torchvision's centred grid
    to pixel indices. ``center``: ``F.affine``'s ``center`` (x, y) in torchvision's pixel
    coordinates, where pixel (0, 0) spans [0, 1]; default the image centre. Traced values
    allowed."""
    f32 = lambda v: jnp.asarray(v, jnp.float32)  # noqa: E731
    a, b, c, d = _rotation_shear(angle, shear)
    zero, one = jnp.zeros((), jnp.float32), jnp.ones((), jnp.float32)
    rss = f32(scale) * jnp.stack([jnp.stack([a, b, zero]), jnp.stack([c, d, zero]), jnp.stack([zero, zero, one / f32(scale)])])
    # the centre in pixel indices (index i is the pixel centre i + 0.5 of torchvision's coordinates)
    cx, cy = ((w - 1) / 2.0, (h - 1) / 2.0) if center is None else (center[0] - 0.5, center[1] - 0.5)
    to_centre = _translation(f32(-cx), f32(-cy))
    back_and_shift = _translation(f32(cx) + f32(translate[0]), f32(cy) + f32(translate[1]))
    return matmul(matmul(back_and_shift, rss), to_centre)


def _apart(product):
    """``product`` kept rounded on its own: compiled, XLA:CPU fuses a multiply that feeds an
    add into one multiply-add rounded once, and a sampling coordinate then lands on the
    other side of an exact tie from torchvision's (a min with a bound no product reaches
    keeps the multiply apart, as in :mod:`imgproc.augment.local_contrast`)."""
    return jnp.minimum(product, jnp.float32(3e38))


def affine_inverse(h, w, *, angle=0.0, translate=(0.0, 0.0), scale=1.0, shear=(0.0, 0.0), center=None):
    """torchvision's ``_get_inverse_affine_matrix(center_f, angle, translate, scale, shear)``
    in float32, the same operations in the same order (traced values allowed): the 2×3
    matrix (six numbers, a (6,) array) from output to input points in torchvision's centred
    coordinates (the image centre at 0, pixel edges at ±W/2). ``center``: ``F.affine``'s
    ``center`` (x, y) in torchvision's pixel coordinates, where pixel (0, 0) spans [0, 1];
    default the image centre. cos and sin are exact at multiples of 90 degrees, where
    torchvision's float64 ``cos(pi / 2)`` is 6e-17: the same float32 grid either way."""
    f32 = lambda v: jnp.asarray(v, jnp.float32)  # noqa: E731
    cx, cy = (0.0, 0.0) if center is None else (f32(center[0]) - w * 0.5, f32(center[1]) - h * 0.5)
    tx, ty = f32(translate[0]), f32(translate[1])
    a, b, c, d = _rotation_shear(angle, shear)
    s = f32(scale)
    m0, m1, m3, m4 = d / s, -b / s, -c / s, a / s
    # torchvision sums m0 (-cx - tx) + m1 (-cy - ty) + cx in float64; the centre's own term
    # first here, so that it cancels exactly where torchvision's does (a shear about the
    # corner, a translation): the float32 result is then torchvision's rounded to float32
    m2 = (_apart(m0 * (-cx - tx)) + cx) + _apart(m1 * (-cy - ty))
    m5 = (_apart(m4 * (-cy - ty)) + cy) + _apart(m3 * (-cx - tx))
    return jnp.stack([m0, m1, m2, m3, m4, m5])


def affine_source(inverse, h, w):
    """The source ``(rows, cols)`` (pixel indices) of every pixel of an (h, w) output under
    torchvision's 2×3 ``inverse`` (:func:`affine_inverse`): its ``_affine_grid`` (the centred
    base grid times the matrix divided by half the size, ``(x a + y b) + c``) and
    ``grid_sample``'s unnormalisation ``(g + 1) * size / 2 - 0.5`` (``align_corners=False``),
    float32 operation for operation, each product rounded on its own, as torch computes them
    on CPU: the same bits, so nearest sampling breaks every exact half-pixel tie (a quarter
    turn of an image whose H - W is odd makes every sample one) as torchvision does."""
    theta = jnp.asarray(inverse, jnp.float32).reshape(2, 3)
    half = jnp.asarray([0.5 * w, 0.5 * h], jnp.float32)
    r = theta.T / half[None, :]  # torchvision's rescaled_theta, (3, 2)
    bx = jnp.arange(w, dtype=jnp.float32) - jnp.float32((w - 1) * 0.5)  # torch.linspace: exact half-integers
    by = jnp.arange(h, dtype=jnp.float32) - jnp.float32((h - 1) * 0.5)
    x, y = bx[None, :], by[:, None]
    gx = (_apart(x * r[0, 0]) + _apart(y * r[1, 0])) + r[2, 0]
    gy = (_apart(x * r[0, 1]) + _apart(y * r[1, 1])) + r[2, 1]
    cols = _apart((gx + 1.0) * jnp.float32(w / 2)) - 0.5
    rows = _apart((gy + 1.0) * jnp.float32(h / 2)) - 0.5
    return rows, cols


def warp_affine(image, inverse, *, layout, interpolation="bilinear", cval=0.0):
    """torchvision's ``_apply_grid_transform`` of a checked image with the 2×3 ``inverse``
    (:func:`affine_inverse`; traced), output the input's size. ``"nearest"``: the pixel at
    the rounded source point (half to even, ``grid_sample``'s ``nearbyint``), ``cval``
    outside. ``"bilinear"``: zero padding (``grid_sample(padding_mode="zeros")``), then, for
    ``cval != 0``, torchvision's fill: the result ``v`` and a warped mask of ones ``k`` give
    ``(v - cval) * k + cval``. ``cval == 0`` is torchvision's ``fill=None`` (its default);
    torchvision's ``fill=0`` blends with the mask too (``v * k``, darker border pixels)."""
    h, w = hw(image, layout)
    rows, cols = affine_source(inverse, h, w)
    if interpolation == "nearest":
        return sample_nearest(image, rows, cols, layout, cval)
    x = jnp.asarray(image)
    v = sample(x.astype(jnp.float32), rows, cols, mode="grid-constant", cval=0.0, layout=layout)
    if not is_traced(cval) and float(cval) == 0:  # a known zero fill: no mask to warp
        return back(v, x.dtype)
    k = sample(jnp.ones((h, w), jnp.float32), rows, cols, mode="grid-constant", cval=0.0, layout="HW")
    a, b = spatial_axes(layout)
    k = jnp.expand_dims(k, [i for i in range(v.ndim) if i not in (a, b)])
    fill = jnp.asarray(cval, jnp.float32)
    blended = (v - fill) * k + fill
    return back(blended if not is_traced(cval) else jnp.where(fill == 0, v, blended), x.dtype)


def _check_interpolation(interpolation):
    return check_choice("interpolation", interpolation, INTERPOLATIONS)


def warp(image, matrix, *, layout, interpolation="bilinear", cval=0.0, size=None):
    """Resample a checked image with the forward 3×3 ``matrix`` (pixel indices, traced):
    output pixel ``(x, y)`` reads the source at ``matrix⁻¹ (x, y, 1)``. ``size``: the output
    (H, W), default the input's."""
    rows, cols = warp_coordinates(matrix, hw(image, layout) if size is None else size)
    if interpolation == "nearest":
        return sample_nearest(image, rows, cols, layout, cval)
    return sample(image, rows, cols, mode="grid-constant", cval=cval, layout=layout)


def _shape(value):
    """The shape of a number, a list/tuple (of possibly traced numbers) or an array."""
    if isinstance(value, (list, tuple)):
        return (len(value),)
    return tuple(getattr(value, "shape", np.shape(value)))


def _pair(name, value):
    if _shape(value) == ():
        return check_number(name, value), 0.0
    if _shape(value) != (2,):
        raise ValueError(f"{name} must be a number or a pair (x, y); got {value!r}")
    return check_number(f"{name}[0]", value[0]), check_number(f"{name}[1]", value[1])


@callers_type
@compiled_when_eager
def affine(image, *, angle=0.0, translate=(0.0, 0.0), scale=1.0, shear=(0.0, 0.0), interpolation="bilinear",
           cval=0.0, layout=None):
    """Rotate, scale, shear and translate in one warp, about the image centre:
    ``torchvision.transforms.functional.affine(img, angle, translate, scale, shear)``.

    ``angle`` degrees clockwise (torchvision's convention for ``affine``; :func:`rotate`
    turns counter-clockwise), ``translate = (x, y)`` pixels (right, down), ``scale`` > 0,
    ``shear = (x, y)`` degrees (a number: x only). All may be traced. ``interpolation``
    ``"bilinear"`` or ``"nearest"`` (static). torchvision's sampling exactly
    (:func:`affine_inverse`, :func:`affine_source`, :func:`warp_affine`): its inverse matrix
    and sampling grid float32 operation for operation, so nearest sampling breaks exact
    ties (every sample of a quarter turn when H - W is odd) as torchvision does, and its
    fill: ``cval = 0`` is torchvision's default ``fill=None`` (zero padding), another
    ``cval`` is ``fill=cval`` (nearest: ``cval`` outside; bilinear: the zero-padded result
    blended with a warped mask). Compared with torchvision 0.29 (tests/golden/): bilinear
    within one level on uint8 and 1e-5 on float, nearest equal. The matrix is computed in
    float32 where torchvision uses float64; at angles other than multiples of 90 degrees a
    sample on an exact tie could therefore, rarely, take the neighbouring pixel (none in the
    golden cases). Targets move with :func:`affine_matrix`. Any layout; shape and dtype
    kept.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.arange(9, dtype=np.float32).reshape(3, 3)
        >>> np.asarray(imgproc.affine(x, translate=(1, 0))).tolist()
        [[0.0, 0.0, 1.0], [0.0, 3.0, 4.0], [0.0, 6.0, 7.0]]
        >>> bool((np.asarray(imgproc.affine(x, angle=-90.0)) == np.rot90(x)).all())
        True
    """
    interpolation = _check_interpolation(interpolation)
    check_number("angle", angle)
    tx, ty = _pair("translate", translate)
    check_number("scale", scale, low=0, low_open=True)
    shx, shy = _pair("shear", shear)
    check_number("cval", cval)
    image, layout = check_image(image, layout)
    h, w = hw(image, layout)
    inverse = affine_inverse(h, w, angle=angle, translate=(tx, ty), scale=scale, shear=(shx, shy))
    return warp_affine(jnp.asarray(image), inverse, layout=layout, interpolation=interpolation, cval=cval)


def perspective_matrix(startpoints, endpoints, *, normalise=None):
    """The 3×3 matrix mapping the four ``startpoints`` onto the four ``endpoints`` (each
    ``(4, 2)`` of ``(x, y)``; traced allowed): ``cv2.getPerspectiveTransform(start, end)``.
    Solved in float32 on coordinates divided by ``normalise`` (default: the largest
    absolute coordinate) to keep the 8×8 system well conditioned."""
    src = jnp.asarray(startpoints, jnp.float32)
    dst = jnp.asarray(endpoints, jnp.float32)
    k = jnp.maximum(jnp.max(jnp.abs(jnp.concatenate([src, dst]))), 1.0) if normalise is None else normalise
    s, d = src / k, dst / k
    x, y, u, v = s[:, 0], s[:, 1], d[:, 0], d[:, 1]
    one, zero = jnp.ones(4), jnp.zeros(4)
    rows_u = jnp.stack([x, y, one, zero, zero, zero, -u * x, -u * y], axis=1)
    rows_v = jnp.stack([zero, zero, zero, x, y, one, -v * x, -v * y], axis=1)
    coef = jnp.linalg.solve(jnp.concatenate([rows_u, rows_v]), jnp.concatenate([u, v]))
    hn = jnp.append(coef, 1.0).reshape(3, 3)
    scale = jnp.diag(jnp.stack([k, k, 1.0]))
    unscale = jnp.diag(jnp.stack([1.0 / k, 1.0 / k, 1.0]))
    return matmul(matmul(scale, hn), unscale)


def _check_points(name, points):
    if is_traced(points):
        return points
    arr = np.asarray(points, np.float64)
    if arr.shape != (4, 2) or not np.isfinite(arr).all():
        raise ValueError(f"{name} must be four finite (x, y) points, shape (4, 2); got {points!r}")
    return arr.astype(np.float32)


@callers_type
@compiled_when_eager
def perspective(image, startpoints, endpoints, *, interpolation="bilinear", cval=0.0, layout=None):
    """Warp so that the four ``startpoints`` move to the four ``endpoints`` (``(x, y)``
    pixel indices; may be traced): ``cv2.warpPerspective(image,
    cv2.getPerspectiveTransform(start, end), (W, H))`` with ``BORDER_CONSTANT``, ``cval``
    outside (:func:`perspective_matrix`). torchvision's ``F.perspective`` takes the same
    points but reads them half a pixel off (its grid uses pixel-edge coordinates).
    ``interpolation`` ``"bilinear"`` or ``"nearest"``. Any layout; shape and dtype kept.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.arange(12, dtype=np.float32).reshape(3, 4)
        >>> c = [[0, 0], [3, 0], [3, 2], [0, 2]]
        >>> bool(np.allclose(imgproc.perspective(x, c, c), x))
        True
    """
    interpolation = _check_interpolation(interpolation)
    start, end = _check_points("startpoints", startpoints), _check_points("endpoints", endpoints)
    check_number("cval", cval)
    image, layout = check_image(image, layout)
    return warp(jnp.asarray(image), perspective_matrix(start, end), layout=layout, interpolation=interpolation, cval=cval)


# --------------------------------------------------------------------------- random twins


def _range(name, value):
    """A number ``v`` as ``(-v, v)`` (``v >= 0``), or a pair ``(low, high)``."""
    if _shape(value) == ():
        check_number(name, value, low=0)
        return -value, value
    return tuple(check_range(name, value))


def _shear_ranges(shear):
    if _shape(shear) == ():
        return _range("shear", shear), (0.0, 0.0)
    if _shape(shear) == (2,):
        return tuple(check_range("shear", shear)), (0.0, 0.0)
    if _shape(shear) == (4,):
        return tuple(check_range("shear", shear[:2])), tuple(check_range("shear", shear[2:]))
    raise ValueError(f"shear must be a number, a pair (x range) or four numbers (x range, y range); got {shear!r}")


def _affine_params(key, shape, *, layout, degrees=10.0, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=0.0):
    h, w = hw(shape, layout)
    lo, hi = _range("degrees", degrees)
    fx, fy = check_number("translate[0]", translate[0], low=0, high=1), check_number("translate[1]", translate[1], low=0, high=1)
    check_range("scale", scale, low=0)
    (sx_lo, sx_hi), (sy_lo, sy_hi) = _shear_ranges(shear)
    u = uniforms(key, 6)
    mx, my = jnp.asarray(fx, jnp.float32) * w, jnp.asarray(fy, jnp.float32) * h
    return {"angle": scaled(u[0], lo, hi), "tx": jnp.round(scaled(u[1], -mx, mx)), "ty": jnp.round(scaled(u[2], -my, my)),
            "scale": scaled(u[3], scale[0], scale[1]), "shear_x": scaled(u[4], sx_lo, sx_hi),
            "shear_y": scaled(u[5], sy_lo, sy_hi)}


def _affine_params_matrix(params, shape, layout):
    h, w = hw(shape, layout)
    return affine_matrix(h, w, angle=params["angle"], translate=(params["tx"], params["ty"]), scale=params["scale"],
                         shear=(params["shear_x"], params["shear_y"]))


def _apply_affine(image, params, *, layout, interpolation="bilinear", cval=0.0):
    image = jnp.asarray(image)
    h, w = hw(image, layout)
    inverse = affine_inverse(h, w, angle=params["angle"], translate=(params["tx"], params["ty"]),
                             scale=params["scale"], shear=(params["shear_x"], params["shear_y"]))
    return warp_affine(image, inverse, layout=layout, interpolation=_check_interpolation(interpolation), cval=cval)


def _check_warp(interpolation, cval):
    _check_interpolation(interpolation)
    check_number("cval", cval)


def _check_affine(translate, interpolation, cval):
    _check_warp(interpolation, cval)
    if _shape(translate) != (2,):
        raise ValueError(f"translate must be a pair of fractions (x, y) in [0, 1]; got {translate!r}")


def corners(h, w):
    """The four corner pixels ``[[0, 0], [W-1, 0], [W-1, H-1], [0, H-1]]`` as ``(x, y)``."""
    return np.asarray([[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]], np.float32)


def _perspective_params(key, shape, *, layout, distortion_scale=0.5, p=0.5):
    check_number("distortion_scale", distortion_scale, low=0, high=1)
    check_number("p", p, low=0, high=1)
    h, w = hw(shape, layout)
    d = jnp.asarray(distortion_scale, jnp.float32)
    dx, dy = jnp.floor(d * (w // 2)).astype(jnp.int32), jnp.floor(d * (h // 2)).astype(jnp.int32)
    u = uniforms(key, 9)  # whether, then the eight coordinates
    r = lambda i, lo, hi: (lo + below(u[i], hi - lo)).astype(jnp.float32)  # noqa: E731  [lo, hi)
    # torchvision's RandomPerspective.get_params: each corner moves inwards by up to
    # distortion_scale * half the side, integer pixels
    end = jnp.stack([
        jnp.stack([r(1, 0, dx + 1), r(2, 0, dy + 1)]),
        jnp.stack([r(3, w - dx - 1, w), r(4, 0, dy + 1)]),
        jnp.stack([r(5, w - dx - 1, w), r(6, h - dy - 1, h)]),
        jnp.stack([r(7, 0, dx + 1), r(8, h - dy - 1, h)]),
    ])
    return {"endpoints": jnp.where(u[0] < jnp.asarray(p, jnp.float32), end, jnp.asarray(corners(h, w)))}


def _perspective_params_matrix(params, shape, layout):
    h, w = hw(shape, layout)
    return perspective_matrix(corners(h, w), params["endpoints"], normalise=float(max(h, w)))


def _apply_perspective(image, params, *, layout, interpolation="bilinear", cval=0.0):
    image = jnp.asarray(image)
    return warp(image, _perspective_params_matrix(params, image.shape, layout), layout=layout,
                interpolation=_check_interpolation(interpolation), cval=cval)


# how boxes, masks and keypoints follow each warp (imgproc.augment.targets): its matrix


def _affine_options_matrix(q, i, o, /, angle=0.0, translate=(0.0, 0.0), scale=1.0, shear=(0.0, 0.0), **_):
    return affine_matrix(*i, angle=angle, translate=_pair("translate", translate), scale=scale,
                         shear=_pair("shear", shear))


INTERPOLATION_CHECK = {"interpolation": _check_interpolation}  # checked when a stage is built
OPS = (
    OpInfo("affine", affine, targets=matrix_rule(_affine_options_matrix), checks=INTERPOLATION_CHECK),
    OpInfo("perspective", perspective,
           targets=matrix_rule(lambda q, i, o, /, startpoints, endpoints, **_: perspective_matrix(startpoints, endpoints)),
           checks=INTERPOLATION_CHECK),
    random_op("random_affine", _affine_params, _apply_affine, check=_check_affine,
              targets=matrix_rule(lambda q, i, o, /, **_: _affine_params_matrix(q, i, "HW")), checks=INTERPOLATION_CHECK,
              doc="""torchvision's ``RandomAffine(degrees, translate, scale, shear)`` draw, applied with
    :func:`affine`: angle uniform in ``degrees`` (a number ``d``: ``(-d, d)``), translation
    ``round(U(-fx * W, fx * W))``, ``round(U(-fy * H, fy * H))`` pixels for ``translate =
    (fx, fy)``, scale uniform in ``scale``, shear ``x`` uniform in ``shear`` (a number
    ``s``: ``(-s, s)``; four numbers: x range then y range). ``(0, 0)`` / ``(1, 1)`` / ``0``
    turn a part off. Parameters: ``{"angle", "tx", "ty", "scale", "shear_x", "shear_y"}``.
    Any layout; shape and dtype kept.

    Example:
        >>> import numpy as np, imgproc
        >>> imgproc.random_affine(0, np.zeros((2, 8, 8, 3), np.uint8), degrees=30).shape
        (2, 8, 8, 3)
    """),
    random_op("random_perspective", _perspective_params, _apply_perspective, check=_check_warp,
              targets=matrix_rule(lambda q, i, o, /, **_: _perspective_params_matrix(q, i, "HW")),
              checks=INTERPOLATION_CHECK,
              doc="""With probability ``p``, :func:`perspective` from the image's corners to corners moved
    inwards by up to ``distortion_scale`` times half the side (integer pixels, torchvision's
    ``RandomPerspective.get_params``). Parameters: ``{"endpoints": (4, 2)}`` (the corners
    themselves when not applied). Any layout; shape and dtype kept.

    Example:
        >>> import numpy as np, imgproc
        >>> imgproc.random_perspective(0, np.zeros((2, 8, 8, 3), np.uint8), p=1.0).shape
        (2, 8, 8, 3)
    """),
)
register_ops(OPS)
__test__ = doctests(OPS)  # the examples of the functions random_op wrote
