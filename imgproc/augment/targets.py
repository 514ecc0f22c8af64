"""Targets that follow the image: boxes, masks and keypoints moved with the same draw.

A pipeline called with ``targets=`` (:meth:`imgproc.Pipeline.__call__`) runs the images as
usual, keeps the parameters every random stage drew, and moves the targets stage by stage
with them. What an op does to targets is registered with the op (``OpInfo.targets``):

* :data:`imgproc.core.registry.KEEPS_TARGETS`: ops that change pixel values only (colour, noise,
  filters, erasing, denoising) leave every target as it is;
* a :class:`imgproc.core.registry.TargetRule`: every geometric op. Here all of them are one 3×3
  matrix in pixel indices (:func:`matrix_rule`): flips, quarter turns, crops and resized
  crops, resize, pad, letterbox, rotation, translation, affine and perspective warps;
* anything else (an op registered without a rule, ``random_choice`` holding a geometric
  op) is refused with a ``ValueError`` naming the op, before anything runs.

Conventions (one image; a batch adds a leading axis ``B`` to every array):

* ``boxes``: ``(K, 4)`` float ``x1, y1, x2, y2`` in pixel-edge coordinates (the image is
  ``[0, W] × [0, H]``; pixel ``(r, c)`` is ``[c, c + 1] × [r, r + 1]``), ragged sets padded
  to ``K`` with ``box_valid`` ``(K,)`` bool (default all True). A box moves by its four
  corners (the enclosing box of the moved corners: exact for flips, quarter turns, crops,
  resizes and translations, the enclosing box under rotation, shear or perspective), is
  clipped to the output image, and stays valid only while its clipped area is at least
  ``min_box_area`` pixels and ``min_box_visibility`` times its moved, unclipped area.
  Coordinates of invalid boxes are unspecified.
* ``masks``: ``(H, W)`` or ``(H, W, M)`` (any number of masks, channels last whatever the
  image layout), any numeric dtype or bool; moved with nearest interpolation (exact label
  values up to 2**24) and zero outside the source; dtype kept (64-bit types come back as
  JAX holds them: 32-bit unless x64 is enabled; so do float64 coordinates).
* ``keypoints``: ``(P, 2)`` ``(x, y)`` in the same pixel-edge coordinates (the centre of
  pixel ``(r, c)`` is ``(c + 0.5, r + 0.5)``), with ``keypoint_valid`` ``(P,)`` bool. A
  keypoint that leaves the output image ``[0, W) × [0, H)`` is marked invalid (its
  coordinates are still moved); one given outside the input image is not an error: it
  is marked invalid at once.

Bad input (``ValueError`` before anything is traced, where the values are concrete): an
unknown key, a wrong shape or batch size, a mask whose (H, W) differs from the image's,
NaN or infinite coordinates, a valid box with ``x2 < x1`` or ``y2 < y1``.

Pixels that a boundary mode creates (``pad`` with ``reflect``, ``rotate`` with ``wrap``)
are copies of image content, but targets are not copied with them: masks read zero there
and boxes are not duplicated.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from imgproc.augment.common import hw, sample_nearest, warp_coordinates
from imgproc.core.arrays import spatial_axes
from imgproc.core.keys import BATCH_LAYOUTS, image_layout
from imgproc.core.registry import KEEPS_TARGETS, TargetRule, resolve_targets
from imgproc.core.validate import is_traced

__all__ = ["TARGET_KEYS", "check_targets", "matrix_rule", "move_one", "move_points", "move_targets", "scale_translate",
           "target_rules"]

TARGET_KEYS = ("boxes", "box_valid", "masks", "keypoints", "keypoint_valid")


# --------------------------------------------------------------------------- rules


def scale_translate(sx, sy, tx, ty):
    """The pixel-index 3×3 matrix of ``x' = sx * x + tx, y' = sy * y + ty`` in pixel-edge
    coordinates (a resize by ``(sx, sy)`` then a shift by ``(tx, ty)`` pixels)."""
    f = lambda v: jnp.asarray(v, jnp.float32)  # noqa: E731
    sx, sy, tx, ty = f(sx), f(sy), f(tx), f(ty)
    zero, one = jnp.zeros((), jnp.float32), jnp.ones((), jnp.float32)
    return jnp.stack([jnp.stack([sx, zero, 0.5 * sx + tx - 0.5]), jnp.stack([zero, sy, 0.5 * sy + ty - 0.5]),
                      jnp.stack([zero, zero, one])])


def move_points(xy, matrix):
    """Move ``(N, 2)`` pixel-edge points ``(x, y)`` by a pixel-index 3×3 ``matrix``."""
    m = jnp.asarray(matrix, jnp.float32)
    x, y = xy[:, 0] - 0.5, xy[:, 1] - 0.5
    den = m[2, 0] * x + m[2, 1] * y + m[2, 2]
    return jnp.stack([(m[0, 0] * x + m[0, 1] * y + m[0, 2]) / den, (m[1, 0] * x + m[1, 1] * y + m[1, 2]) / den], -1) + 0.5


def matrix_rule(matrix, *, half_up=False) -> TargetRule:
    """The :class:`TargetRule` of an op that is one 3×3 matrix in pixel indices:
    ``matrix(params, in_hw, out_hw, **options)`` (params None for a deterministic op).
    Masks are sampled as the op's image is with nearest interpolation: rounded half to even
    (the warps), or with ``half_up`` the pixel that holds each output centre (a random
    resize, whose image's ``"nearest"`` does that: at an even downscale every output
    centre is a tie, and the two rules pick different pixels; the fixed-size resize ops
    resize their masks with the image's own index maps, ``_size._nearest_rule``)."""

    def points(xy, params, *, in_hw, out_hw, **options):
        return move_points(xy, matrix(params, in_hw, out_hw, **options))

    def mask(m, params, *, in_hw, out_hw, **options):
        rows, cols = warp_coordinates(matrix(params, in_hw, out_hw, **options), out_hw)
        return sample_nearest(m, rows, cols, "HWC", 0.0, half_up=half_up)

    return TargetRule(points, mask)


def target_rules(stages):
    """Each stage's rule (:data:`KEEPS_TARGETS` or a :class:`TargetRule`); a stage without one
    is refused, naming it."""
    rules = []
    for stage in stages:
        rule = resolve_targets(stage)
        if rule is None:
            raise ValueError(
                f"op {stage.info.name!r} does not say how it moves targets (boxes, masks, keypoints), so a pipeline "
                "holding it cannot take targets=; geometric ops need a TargetRule (register_op(..., targets=...)), "
                "pixel-value ops targets=KEEPS_TARGETS; random_choice/random_apply take targets only when every op "
                "they hold keeps them")
        rules.append(rule)
    return rules


# --------------------------------------------------------------------------- checks


def _concrete(a):
    return None if is_traced(a) else np.asarray(a)


def check_targets(targets, image_shape, layout, batched):
    """Validate ``targets`` against the image batch; returns ``(targets, restore)``: the
    targets as batched float32/bool jax arrays with masks as (B, H, W, M), and a function
    that gives the moved targets back in the caller's structure, shapes and dtypes."""
    if not isinstance(targets, dict):
        raise ValueError(f"targets must be a dict with keys among {', '.join(TARGET_KEYS)}; got {type(targets).__name__}")
    unknown = sorted(set(targets) - set(TARGET_KEYS))
    if unknown:
        raise ValueError(f"unknown target key(s) {', '.join(map(repr, unknown))}; targets take {', '.join(TARGET_KEYS)}")
    for flag, of in (("box_valid", "boxes"), ("keypoint_valid", "keypoints")):
        if flag in targets and of not in targets:
            raise ValueError(f"targets has {flag!r} without {of!r}")
    a, b = spatial_axes(layout)
    h, w = image_shape[a], image_shape[b]
    n = image_shape[0] if batched else None
    lead = (n,) if batched else ()
    where = "(B, " if batched else "("
    out, info = {}, {}

    def shaped(name, value, tail, what):
        arr = jnp.asarray(value) if is_traced(value) else np.asarray(value)
        if arr.ndim != len(lead) + len(tail) or tuple(arr.shape[:len(lead)]) != lead or any(
                t is not None and s != t for s, t in zip(arr.shape[len(lead):], tail)):
            raise ValueError(f"targets[{name!r}] must have shape {where}{what}) for a batch of shape "
                             f"{tuple(image_shape)}; got {tuple(arr.shape)}")
        return arr

    def finite(name, arr):
        c = _concrete(arr)
        if c is not None and not np.isfinite(c.astype(np.float64)).all():
            raise ValueError(f"targets[{name!r}] holds NaN or infinite coordinates")

    if "boxes" in targets:
        boxes = shaped("boxes", targets["boxes"], (None, 4), "K, 4")
        finite("boxes", boxes)
        k = boxes.shape[-2]
        valid = shaped("box_valid", targets.get("box_valid", np.ones(lead + (k,), bool)), (k,), "K")
        cb, cv = _concrete(boxes), _concrete(valid)
        if cb is not None and cv is not None:
            bad = cv.astype(bool) & ((cb[..., 2] < cb[..., 0]) | (cb[..., 3] < cb[..., 1]))
            if bad.any():
                where_bad = tuple(int(i) for i in np.argwhere(bad)[0])
                raise ValueError(f"targets['boxes'] must be x1, y1, x2, y2 with x2 >= x1 and y2 >= y1; box {where_bad} "
                                 f"is {cb[where_bad].tolist()}")
        out["boxes"] = jnp.asarray(boxes, jnp.float32)
        out["box_valid"] = jnp.asarray(valid).astype(bool)
        info["boxes"] = np.dtype(getattr(boxes, "dtype", np.float32))
    if "keypoints" in targets:
        kp = shaped("keypoints", targets["keypoints"], (None, 2), "P, 2")
        finite("keypoints", kp)
        p = kp.shape[-2]
        valid = shaped("keypoint_valid", targets.get("keypoint_valid", np.ones(lead + (p,), bool)), (p,), "P")
        kpf = jnp.asarray(kp, jnp.float32)
        inside = (kpf[..., 0] >= 0) & (kpf[..., 0] < w) & (kpf[..., 1] >= 0) & (kpf[..., 1] < h)
        out["keypoints"] = kpf
        out["keypoint_valid"] = jnp.asarray(valid).astype(bool) & inside
        info["keypoints"] = np.dtype(getattr(kp, "dtype", np.float32))
    if "masks" in targets:
        m = targets["masks"]
        nd = np.ndim(m) - len(lead)
        if nd not in (2, 3) or tuple(np.shape(m)[:len(lead)]) != lead or tuple(np.shape(m)[len(lead):len(lead) + 2]) != (h, w):
            raise ValueError(f"targets['masks'] must have shape {where}H, W) or {where}H, W, M) with the image's "
                             f"H, W = {(h, w)}; got {tuple(np.shape(m))} for a batch of shape {tuple(image_shape)}")
        info["masks"] = (np.dtype(m.dtype) if hasattr(m, "dtype") else np.asarray(m).dtype, nd)
        m = jnp.asarray(m).astype(jnp.float32)
        out["masks"] = m if nd == 3 else m[..., None]
    if not batched:
        out = {k: v[None] for k, v in out.items()}

    def restore(moved):
        res = {}
        for k, v in moved.items():
            if k not in targets and k in ("box_valid", "keypoint_valid"):
                res[k] = v  # computed: returned even when not given
                continue
            if k == "masks":
                dtype, nd = info["masks"]
                dtype = jax.dtypes.canonicalize_dtype(dtype)  # int64 -> int32 without x64
                v = v if nd == 3 else v[..., 0]
                if dtype == np.bool_:
                    v = v > 0.5
                elif np.issubdtype(dtype, np.integer):
                    v = jnp.round(v).astype(dtype)
                else:
                    v = v.astype(dtype)
            elif k in info and np.issubdtype(info[k], np.floating):
                v = v.astype(jax.dtypes.canonicalize_dtype(info[k]))  # float64 -> float32 without x64
            res[k] = v
        return res if batched else {k: v[0] for k, v in res.items()}

    return out, restore


# --------------------------------------------------------------------------- moving


def move_one(rule, t, params, in_hw, out_hw, options, min_area, min_visibility):
    """Move one image's targets (unbatched, as :func:`check_targets` makes them) through
    one stage of ``rule``: ``in_hw`` ints, or traced (an image on a canvas)."""
    out = dict(t)
    h, w = out_hw
    if "boxes" in t:
        x1, y1, x2, y2 = (t["boxes"][:, i] for i in range(4))
        corners = jnp.stack([jnp.stack([x1, y1], -1), jnp.stack([x2, y1], -1), jnp.stack([x2, y2], -1),
                             jnp.stack([x1, y2], -1)], 1)
        moved = rule.points(corners.reshape(-1, 2), params, in_hw=in_hw, out_hw=out_hw, **options).reshape(-1, 4, 2)
        lo, hi = moved.min(axis=1), moved.max(axis=1)
        limit = jnp.asarray([w, h], jnp.float32)
        clo, chi = jnp.clip(lo, 0.0, limit), jnp.clip(hi, 0.0, limit)
        area = jnp.prod(hi - lo, axis=-1)
        visible = jnp.prod(chi - clo, axis=-1)
        keep = (visible >= min_area) & (visible >= min_visibility * area)
        out["boxes"] = jnp.concatenate([clo, chi], axis=-1)
        out["box_valid"] = t["box_valid"] & keep
    if "keypoints" in t:
        kp = rule.points(t["keypoints"], params, in_hw=in_hw, out_hw=out_hw, **options)
        inside = (kp[:, 0] >= 0) & (kp[:, 0] < w) & (kp[:, 1] >= 0) & (kp[:, 1] < h)
        out["keypoints"] = kp
        out["keypoint_valid"] = t["keypoint_valid"] & inside
    if "masks" in t:
        out["masks"] = rule.mask(t["masks"], params, in_hw=in_hw, out_hw=out_hw, **options)
    return out


def move_targets(stages, rules, params, image_shape, layout, targets, *, max_value, min_area, min_visibility):
    """Move batched ``targets`` (from :func:`check_targets`) through ``stages`` with the
    parameters each random stage drew (batched, as ``return_params`` gives them). The
    size of the image after each stage comes from ``jax.eval_shape`` (no pixels are
    computed)."""
    batched = layout in BATCH_LAYOUTS
    if not batched:  # one image: a batch of one
        params = tuple(None if p is None else jax.tree_util.tree_map(lambda a: jnp.asarray(a)[None], p) for p in params)
        image_shape = (1, *image_shape)
        layout = {"HWC": "NHWC", "CHW": "NCHW", "HW": "NHWC"}[layout]
        if len(image_shape) == 3:  # HW: a channel axis
            image_shape = (*image_shape, 1)
    one = image_layout(layout)
    x = jax.ShapeDtypeStruct(image_shape, jnp.float32)
    for s, (stage, rule) in enumerate(zip(stages, rules)):
        if stage.info.random:
            y = jax.eval_shape(lambda x, p, st=stage: st.run_batch(p, x, layout=one, max_value=max_value), x, params[s])
        else:
            y = jax.eval_shape(lambda x, st=stage: st(x, layout=layout, max_value=max_value), x)
        if rule is not KEEPS_TARGETS:
            in_hw, out_hw = hw(x.shape, layout), hw(y.shape, layout)
            options = dict(stage.options)

            def one_image(t, p, rule=rule, in_hw=in_hw, out_hw=out_hw, options=options):
                return move_one(rule, t, p, in_hw, out_hw, options, min_area, min_visibility)

            p = params[s] if stage.info.random else None
            targets = jax.vmap(one_image, in_axes=(0, 0 if p is not None else None))(targets, p)
        x = y
    return targets
