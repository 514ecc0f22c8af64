"""Augmentation policies on ``lax.switch``: ``rand_augment``, ``trivial_augment``,
``auto_augment`` and ``aug_mix``, with torchvision's op lists, magnitude bins and
sub-policies (``torchvision.transforms.v2``: ``RandAugment``, ``TrivialAugmentWide``,
``AutoAugment``, ``AugMix``).

Every policy is a random op: its sampler draws, per image, the op index and the signed
magnitude of every step (and AugMix's mixing weights); applying it is a sequence of
``lax.switch`` steps over the op list (``lax.scan`` over the steps, so every op is traced
once), in which the five warps are one branch (each warp's 2×3 matrix, then one warp). A
batch runs with the ``strategy`` of :mod:`imgproc.augment.choice` (``"select"``,
``"map"``, ``"group"``); all give the same numbers (bit for bit with nearest sampling; with
bilinear, the warps' float rounding can differ between strategies, so an integer image
may come out a level apart at a rare pixel).

The ops are torchvision's ``_apply_image_or_video_transform`` definitions:

* ``ShearX/ShearY(m)``: ``affine(shear=degrees(atan(m)), center=[0, 0])``;
  ``TranslateX/TranslateY(m)``: ``affine(translate=int(m))``; ``Rotate(m)``:
  ``rotate(m)`` degrees counter-clockwise about the centre, sampled with the policy's
  ``interpolation`` (``"nearest"`` or ``"bilinear"``; the default is torchvision's:
  nearest for RandAugment, TrivialAugmentWide and AutoAugment, bilinear for AugMix),
  pixels from outside filled with ``fill``: torchvision's grid and fill exactly
  (:func:`imgproc.augment.warp.affine_inverse` and ``warp_affine``).
* ``Brightness(m)``: ``clip(x * (1 + m))``; ``Color(m)``: blend with the luma ``0.2989 R +
  0.587 G + 0.114 B`` (floored on integer ranges) by ``1 + m``; ``Contrast(m)``: blend with
  the mean luma by ``1 + m``; ``Sharpness(m)``: :func:`imgproc.adjust_sharpness` by ``1 + m``.
* ``Posterize(m)``: :func:`imgproc.posterize` with ``int(m)`` bits; ``Solarize(m)``:
  :func:`imgproc.solarize` at ``m * max_value`` (m in [0, 1], torchvision v2's table);
  ``AutoContrast``, ``Equalize``, ``Invert``: :mod:`imgproc.augment.intensity`.

torchvision rounds (or truncates) a uint8 image after every op; a policy here keeps float32
between its steps and rounds once at the end (the project's rule), so uint8 results can
differ from torchvision's by a level where an op's output is fractional.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from imgproc.augment.choice import STRATEGIES, resolve_strategy, run_choice_batch
from imgproc.augment.common import back, hw
from imgproc.augment.warp import INTERPOLATIONS, affine_inverse, warp_affine
from imgproc.core.arrays import integer_bits, resolve_max
from imgproc.core.keys import GAMMA_UNIFORMS, below, dirichlet_from, doctests, random_op, uniforms
from imgproc.core.registry import IN_LOOP, register_ops
from imgproc.core.validate import check_choice, check_int, check_number, is_traced
from imgproc.augment.intensity import (
    autocontrast_float,
    equalize_nhwc,
    posterize_float,
    sharpness_float,
    solarize_float,
)

POLICIES = ("imagenet", "cifar10", "svhn")
GRAY = (0.2989, 0.587, 0.114)

# torchvision.transforms.v2.AutoAugment._get_policies: (op, probability, magnitude bin)
_AUTO_POLICIES = {
    "imagenet": (
        (("Posterize", 0.4, 8), ("Rotate", 0.6, 9)),
        (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
        (("Posterize", 0.6, 7), ("Posterize", 0.6, 6)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)),
        (("Equalize", 0.4, None), ("Rotate", 0.8, 8)),
        (("Solarize", 0.6, 3), ("Equalize", 0.6, None)),
        (("Posterize", 0.8, 5), ("Equalize", 1.0, None)),
        (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)),
        (("Equalize", 0.6, None), ("Posterize", 0.4, 6)),
        (("Rotate", 0.8, 8), ("Color", 0.4, 0)),
        (("Rotate", 0.4, 9), ("Equalize", 0.6, None)),
        (("Equalize", 0.0, None), ("Equalize", 0.8, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
        (("Color", 0.8, 8), ("Solarize", 0.8, 7)),
        (("Sharpness", 0.4, 7), ("Invert", 0.6, None)),
        (("ShearX", 0.6, 5), ("Equalize", 1.0, None)),
        (("Color", 0.4, 0), ("Equalize", 0.6, None)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)),
        (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
    ),
    "cifar10": (
        (("Invert", 0.1, None), ("Contrast", 0.2, 6)),
        (("Rotate", 0.7, 2), ("TranslateX", 0.3, 9)),
        (("Sharpness", 0.8, 1), ("Sharpness", 0.9, 3)),
        (("ShearY", 0.5, 8), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.5, None), ("Equalize", 0.9, None)),
        (("ShearY", 0.2, 7), ("Posterize", 0.3, 7)),
        (("Color", 0.4, 3), ("Brightness", 0.6, 7)),
        (("Sharpness", 0.3, 9), ("Brightness", 0.7, 9)),
        (("Equalize", 0.6, None), ("Equalize", 0.5, None)),
        (("Contrast", 0.6, 7), ("Sharpness", 0.6, 5)),
        (("Color", 0.7, 7), ("TranslateX", 0.5, 8)),
        (("Equalize", 0.3, None), ("AutoContrast", 0.4, None)),
        (("TranslateY", 0.4, 3), ("Sharpness", 0.2, 6)),
        (("Brightness", 0.9, 6), ("Color", 0.2, 8)),
        (("Solarize", 0.5, 2), ("Invert", 0.0, None)),
        (("Equalize", 0.2, None), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.2, None), ("Equalize", 0.6, None)),
        (("Color", 0.9, 9), ("Equalize", 0.6, None)),
        (("AutoContrast", 0.8, None), ("Solarize", 0.2, 8)),
        (("Brightness", 0.1, 3), ("Color", 0.7, 0)),
        (("Solarize", 0.4, 5), ("AutoContrast", 0.9, None)),
        (("TranslateY", 0.9, 9), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.9, None), ("Solarize", 0.8, 3)),
        (("Equalize", 0.8, None), ("Invert", 0.1, None)),
        (("TranslateY", 0.7, 9), ("AutoContrast", 0.9, None)),
    ),
    "svhn": (
        (("ShearX", 0.9, 4), ("Invert", 0.2, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.6, None), ("Solarize", 0.6, 6)),
        (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("AutoContrast", 0.8, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.4, None)),
        (("ShearY", 0.9, 5), ("Solarize", 0.2, 6)),
        (("Invert", 0.9, None), ("AutoContrast", 0.8, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("Solarize", 0.3, 3)),
        (("ShearY", 0.8, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.9, None), ("TranslateY", 0.6, 6)),
        (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Contrast", 0.3, 3), ("Rotate", 0.8, 4)),
        (("Invert", 0.8, None), ("TranslateY", 0.0, 2)),
        (("ShearY", 0.7, 6), ("Solarize", 0.4, 8)),
        (("Invert", 0.6, None), ("Rotate", 0.8, 4)),
        (("ShearY", 0.3, 7), ("TranslateX", 0.9, 3)),
        (("ShearX", 0.1, 6), ("Invert", 0.6, None)),
        (("Solarize", 0.7, 2), ("TranslateY", 0.6, 7)),
        (("ShearY", 0.8, 4), ("Invert", 0.8, None)),
        (("ShearX", 0.7, 9), ("TranslateY", 0.8, 3)),
        (("ShearY", 0.8, 5), ("AutoContrast", 0.7, None)),
        (("ShearX", 0.7, 2), ("Invert", 0.1, None)),
    ),
}


def _posterize_bins(num_bins, top, span):
    return np.round(top - np.arange(num_bins) / ((num_bins - 1) / span)).astype(np.int64).astype(np.float64)


def augmentation_space(policy: str, num_bins: int, height: int, width: int):
    """``[(op name, magnitudes (NumPy array) or None, signed), ...]`` in torchvision v2's
    order for ``policy`` in ``"rand"`` (RandAugment), ``"wide"`` (TrivialAugmentWide),
    ``"auto"`` (AutoAugment) and ``"augmix"`` (AugMix, all ops)."""
    lin = np.linspace
    if policy in ("rand", "auto"):
        space = [
            ("ShearX", lin(0.0, 0.3, num_bins), True),
            ("ShearY", lin(0.0, 0.3, num_bins), True),
            ("TranslateX", lin(0.0, 150.0 / 331.0 * width, num_bins), True),
            ("TranslateY", lin(0.0, 150.0 / 331.0 * height, num_bins), True),
            ("Rotate", lin(0.0, 30.0, num_bins), True),
            ("Brightness", lin(0.0, 0.9, num_bins), True),
            ("Color", lin(0.0, 0.9, num_bins), True),
            ("Contrast", lin(0.0, 0.9, num_bins), True),
            ("Sharpness", lin(0.0, 0.9, num_bins), True),
            ("Posterize", _posterize_bins(num_bins, 8, 4), False),
            ("Solarize", lin(1.0, 0.0, num_bins), False),
            ("AutoContrast", None, False),
            ("Equalize", None, False),
        ]
        return [("Identity", None, False)] + space + ([("Invert", None, False)] if policy == "auto" else [])
    if policy == "wide":
        return [
            ("Identity", None, False),
            ("ShearX", lin(0.0, 0.99, num_bins), True),
            ("ShearY", lin(0.0, 0.99, num_bins), True),
            ("TranslateX", lin(0.0, 32.0, num_bins), True),
            ("TranslateY", lin(0.0, 32.0, num_bins), True),
            ("Rotate", lin(0.0, 135.0, num_bins), True),
            ("Brightness", lin(0.0, 0.99, num_bins), True),
            ("Color", lin(0.0, 0.99, num_bins), True),
            ("Contrast", lin(0.0, 0.99, num_bins), True),
            ("Sharpness", lin(0.0, 0.99, num_bins), True),
            ("Posterize", _posterize_bins(num_bins, 8, 6), False),
            ("Solarize", lin(1.0, 0.0, num_bins), False),
            ("AutoContrast", None, False),
            ("Equalize", None, False),
        ]
    if policy == "augmix":
        return [
            ("Identity", None, False),  # imgproc's: the padding of chains shorter than 3
            ("ShearX", lin(0.0, 0.3, num_bins), True),
            ("ShearY", lin(0.0, 0.3, num_bins), True),
            ("TranslateX", lin(0.0, width / 3.0, num_bins), True),
            ("TranslateY", lin(0.0, height / 3.0, num_bins), True),
            ("Rotate", lin(0.0, 30.0, num_bins), True),
            ("Posterize", _posterize_bins(num_bins, 4, 4), False),
            ("Solarize", lin(1.0, 0.0, num_bins), False),
            ("AutoContrast", None, False),
            ("Equalize", None, False),
            ("Brightness", lin(0.0, 0.9, num_bins), True),
            ("Color", lin(0.0, 0.9, num_bins), True),
            ("Contrast", lin(0.0, 0.9, num_bins), True),
            ("Sharpness", lin(0.0, 0.9, num_bins), True),
        ]
    raise ValueError(f"unknown augmentation space {policy!r}")


def _tables(space, num_bins):
    """``(magnitudes[op, bin], signed[op])`` as float32 / bool arrays (0 for ops without)."""
    mags = np.zeros((len(space), num_bins), np.float32)
    for i, (_, m, _) in enumerate(space):
        if m is not None:
            mags[i] = m
    return jnp.asarray(mags), jnp.asarray([s for _, _, s in space])


# --------------------------------------------------------------------------- the ops (HWC, float32)


def _affine(x, fill, interpolation, **transform):
    """torchvision's ``F.affine(x, **transform, interpolation=interpolation, fill=fill)`` on
    one HWC float32 image: :func:`imgproc.augment.warp.warp_affine` (torchvision's grid and
    fill, float32 operation for operation), kept in float32."""
    h, w = x.shape[0], x.shape[1]
    return warp_affine(x, affine_inverse(h, w, **transform), layout="HWC", interpolation=interpolation, cval=fill)


WARP_OPS = ("ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate")


def _warp_transform(name, mag):
    """``F.affine``'s arguments for the warp op ``name`` (one of :data:`WARP_OPS`) with
    signed magnitude ``mag``."""
    if name in ("ShearX", "ShearY"):
        deg = jnp.rad2deg(jnp.arctan(mag))
        return {"shear": (deg, 0.0) if name == "ShearX" else (0.0, deg), "center": (0.0, 0.0)}
    if name in ("TranslateX", "TranslateY"):
        t = jnp.trunc(mag)  # int(magnitude)
        return {"translate": (t, 0.0) if name == "TranslateX" else (0.0, t)}
    return {"angle": -mag}  # F.rotate turns counter-clockwise, F.affine clockwise


def _warp(x, warps, kind, mag, fill, interpolation):
    """The warp op ``warps[kind]`` (``kind`` traced) on one HWC float32 image: every warp's
    2×3 matrix (a few scalars) and one warp with the chosen one. A policy's warps share one
    branch this way: five warps as branches of their own were a fifth of the ImageNet
    recipe's compiled loops, and under ``vmap`` (the ``"select"`` strategy) ran five warps
    an image."""
    h, w = x.shape[0], x.shape[1]
    inverses = jnp.stack([affine_inverse(h, w, **_warp_transform(n, mag)) for n in warps])
    return warp_affine(x, inverses[kind], layout="HWC", interpolation=interpolation, cval=fill)

def _luma(x, m):
    if x.shape[-1] == 1:
        return x
    # as a matrix-vector product: a luma that XLA fuses into a reduction (Contrast's mean)
    # is read with channel strides, slower on XLA:CPU (benchmarks/NOTES.md, "ImageNet training recipe")
    g = jnp.dot(x, jnp.asarray(GRAY, jnp.float32), precision="highest")[..., None]
    return jnp.floor(g) if integer_bits(m) is not None else g


def _blend(x, other, factor, m):
    return jnp.clip(factor * x + (1.0 - factor) * other, 0.0, m)


def _color(x, factor, m):
    if x.shape[-1] == 1:
        return x
    return _blend(x, _luma(x, m), factor, m)


def _contrast(x, factor, m):
    g = _luma(x, m) if x.shape[-1] == 3 else x
    return _blend(x, jnp.mean(g), factor, m)


def op_fn(name, x, mag, m, fill, interpolation="nearest"):
    """torchvision's op ``name`` with signed magnitude ``mag`` on one HWC float32 image."""
    if name == "Identity":
        return x
    if name in WARP_OPS:
        return _affine(x, fill, interpolation, **_warp_transform(name, mag))
    if name == "Brightness":
        return _blend(x, 0.0, 1.0 + mag, m)
    if name == "Color":
        return _color(x, 1.0 + mag, m)
    if name == "Contrast":
        return _contrast(x, 1.0 + mag, m)
    if name == "Sharpness":
        return sharpness_float(x, 1.0 + mag, "HWC", m)
    if name == "Posterize":
        return posterize_float(x, jnp.trunc(mag), m)
    if name == "Solarize":
        return solarize_float(x, mag * m, m)
    if name == "AutoContrast":
        return autocontrast_float(x, "HWC", m)
    if name == "Equalize":
        return equalize_nhwc(x[None], m)[0]
    if name == "Invert":
        return m - x
    raise ValueError(f"unknown policy op {name!r}")


def _branches(names):
    """The switch a policy's step runs: ``(branch names, warps, op -> branch, op -> warp
    kind)``. The warp ops (:data:`WARP_OPS`) are one branch, ``"Warp"``, at the first
    one's place (:func:`_warp`); every other op a branch of its own."""
    warps = tuple(n for n in names if n in WARP_OPS)
    branch_names, to_branch, kind = [], [], []
    for n in names:
        b = "Warp" if n in WARP_OPS else n
        if b not in branch_names:
            branch_names.append(b)
        to_branch.append(branch_names.index(b))
        kind.append(warps.index(n) if n in WARP_OPS else 0)
    return tuple(branch_names), warps, jnp.asarray(to_branch, jnp.int32), jnp.asarray(kind, jnp.int32)


def _branch_fn(name, warps, m, fill, interpolation):
    """Branch ``name`` of :func:`_branches` as ``f(x, mag, kind)``."""
    if name == "Warp":
        return lambda x, mag, kind: _warp(x, warps, kind, mag, fill, interpolation)
    return lambda x, mag, kind: op_fn(name, x, mag, m, fill, interpolation)


class _OpBranch:
    """One branch of a policy's step (:func:`_branches`) as a branch of
    :func:`imgproc.augment.choice.run_choice_batch`."""

    def __init__(self, fn):
        self.fn = fn

    def apply(self, image, params, layout, max_value, hints):
        return self.fn(image, params["m"], params["kind"])


# --------------------------------------------------------------------------- running steps


def _to_hwc(x, layout):
    if layout == "HW":
        return x[..., None]
    if layout == "CHW":
        return jnp.moveaxis(x, -3, -1)
    return x


def _from_hwc(y, layout):
    if layout == "HW":
        return y[..., 0]
    if layout == "CHW":
        return jnp.moveaxis(y, -1, -3)
    return y


def _one_step(names, m, fill, interpolation):
    branch_names, warps, to_branch, kind = _branches(names)
    fns = [_branch_fn(b, warps, m, fill, interpolation) for b in branch_names]

    def step(x, op, mag):
        return jax.lax.switch(to_branch[op], fns, x, mag, kind[op])

    return step


def _batch_step(names, m, fill, strategy, group_size, interpolation):
    branch_names, warps, to_branch, kind = _branches(names)
    branches = [_OpBranch(_branch_fn(b, warps, m, fill, interpolation)) for b in branch_names]

    def step(x, op, mag):
        params = {"index": to_branch[op], "branches": tuple({"m": mag, "kind": kind[op]} for _ in branches)}
        return run_choice_batch(branches, params, x, "HWC", strategy, group_size, m, IN_LOOP)

    return step


def _bcast(w, x):
    return w.reshape(w.shape + (1,) * (x.ndim - w.ndim))


def _compose(x, params, step):
    """Run the steps of ``params`` on ``x`` (one HWC image, or a batch when ``step`` is a
    batch step: every array of ``params`` then has a leading batch axis)."""
    ops, mags = params["op"], params["magnitude"]
    lead = ops.ndim - (2 if "weights" in params else 1)  # 0 for one image, 1 for a batch

    def chain(y, ops_k, mags_k):
        def body(y, om):
            return step(y, om[0], om[1]), None
        return jax.lax.scan(body, y, (jnp.moveaxis(ops_k, lead, 0), jnp.moveaxis(mags_k, lead, 0)))[0]

    if "weights" not in params:
        return chain(x, ops, mags)
    w = params["weights"]  # (..., width + 1): the original's weight, then each chain's

    def mix(acc, args):
        ops_i, mags_i, w_i = args
        return acc + _bcast(w_i, x) * chain(x, ops_i, mags_i), None

    acc = _bcast(w[..., 0], x) * x
    per_chain = (jnp.moveaxis(ops, lead, 0), jnp.moveaxis(mags, lead, 0), jnp.moveaxis(w[..., 1:], lead, 0))
    return jax.lax.scan(mix, acc, per_chain)[0]


def _fill(fill):
    """``fill`` for the warps: a known value stays a Python float, which the switch's branches
    see as a constant (a zero fill then warps no mask: :func:`imgproc.augment.warp.warp_affine`);
    an array would become an operand of the branches, a traced value."""
    return fill if is_traced(fill) else float(fill)


def _apply_policy(image, params, names, *, layout, fill, max_value, interpolation):
    m = resolve_max(max_value, image.dtype)
    x = _to_hwc(jnp.asarray(image).astype(jnp.float32), layout)
    y = _compose(x, params, _one_step(names, m, _fill(fill), interpolation))
    return back(_from_hwc(y, layout), image.dtype)


def _batch_policy(params, images, names, *, layout, fill, strategy, group_size, max_value, interpolation):
    strategy = resolve_strategy(strategy)
    if strategy != "group":
        one = lambda x, p: _apply_policy(x, p, names, layout=layout, fill=fill, max_value=max_value,  # noqa: E731
                                         interpolation=interpolation)
        if strategy == "select":
            return jax.vmap(one)(images, params)
        return jax.lax.map(lambda xp: one(*xp), (images, params))
    m = resolve_max(max_value, images.dtype)
    x = _to_hwc(images.astype(jnp.float32), layout)
    y = _compose(x, params, _batch_step(names, m, _fill(fill), strategy, group_size, interpolation))
    return back(_from_hwc(y, layout), images.dtype)


def _policy_runners(policy, num_bins, interpolation):
    """``(apply, run_batch)`` of a policy whose ops are ``augmentation_space(policy,
    num_bins)``'s, for its OpInfo: the drawn steps (``op``, ``magnitude`` and AugMix's
    ``weights``; other drawn parameters, such as AutoAugment's ``sub_policy``, are left
    out) run on one image, or on a batch with a strategy. ``interpolation``: the default
    of the geometric ops' sampling (torchvision's default for the policy)."""
    default = interpolation

    def names():
        return tuple(n for n, _, _ in augmentation_space(policy, num_bins, 1, 1))

    def steps(params):
        return {k: params[k] for k in ("op", "magnitude", "weights") if k in params}

    def apply(image, params, *, layout, fill=0.0, interpolation=default, max_value=None):
        return _apply_policy(image, steps(params), names(), layout=layout, fill=fill, max_value=max_value,
                             interpolation=_check_interpolation(interpolation))

    def run_batch(params, images, *, layout, fill=0.0, interpolation=default, strategy=None, group_size=16,
                  max_value=None):
        return _batch_policy(steps(params), images, names(), layout=layout, fill=fill, strategy=strategy,
                             group_size=group_size, max_value=max_value,
                             interpolation=_check_interpolation(interpolation))

    return apply, run_batch


# --------------------------------------------------------------------------- option checks


def _check_interpolation(interpolation):
    return check_choice("interpolation", interpolation, INTERPOLATIONS)


def _check_common(fill, strategy, group_size, interpolation="nearest"):
    check_number("fill", fill)
    _check_interpolation(interpolation)
    if strategy is not None:
        check_choice("strategy", strategy, STRATEGIES)
    check_int("group_size", group_size, low=1, high=2**31 - 1)


def _check_bins(magnitude, num_magnitude_bins):
    bins = check_int("num_magnitude_bins", num_magnitude_bins, low=2, high=10_000)
    check_int("magnitude", magnitude, low=0, high=bins - 1)
    return bins


def _check_auto(policy, fill, strategy, group_size, interpolation="nearest"):
    check_choice("policy", policy, POLICIES)
    _check_common(fill, strategy, group_size, interpolation)


def _signed(u, mags, signed, ops):
    """torchvision: a signed op's magnitude is negated when ``rand() <= 0.5`` (``u``:
    uniforms of ``ops``' shape)."""
    return jnp.where(signed[ops] & (u.reshape(ops.shape) <= 0.5), -mags, mags)


# --------------------------------------------------------------------------- RandAugment


def _rand_params(key, shape, *, layout, num_ops=2, magnitude=9, num_magnitude_bins=31):
    bins = _check_bins(magnitude, num_magnitude_bins)
    n_steps = check_int("num_ops", num_ops, low=0, high=64)
    h, w = hw(shape, layout)
    space = augmentation_space("rand", bins, h, w)
    table, signed = _tables(space, bins)
    u = uniforms(key, 2 * n_steps)  # the ops, then the signs
    ops = below(u[:n_steps], len(space))
    return {"op": ops, "magnitude": _signed(u[n_steps:], table[ops, magnitude], signed, ops)}


_apply_rand, _batch_rand = _policy_runners("rand", 2, "nearest")


# --------------------------------------------------------------------------- TrivialAugmentWide


def _wide_params(key, shape, *, layout, num_magnitude_bins=31):
    bins = check_int("num_magnitude_bins", num_magnitude_bins, low=2, high=10_000)
    space = augmentation_space("wide", bins, 1, 1)
    table, signed = _tables(space, bins)
    u = uniforms(key, 3)  # the op, its magnitude bin, its sign
    ops, b = below(u[:1], len(space)), below(u[1:2], bins)
    return {"op": ops, "magnitude": _signed(u[2:], table[ops, b], signed, ops)}


_apply_wide, _batch_wide = _policy_runners("wide", 2, "nearest")


# --------------------------------------------------------------------------- AutoAugment


def _auto_tables(policy, h, w):
    """Per sub-policy and step: op index, probability, unsigned magnitude."""
    space = augmentation_space("auto", 10, h, w)
    index = {n: i for i, (n, _, _) in enumerate(space)}
    table = dict((n, m) for n, m, _ in space)
    subs = _AUTO_POLICIES[policy]
    ops = np.array([[index[n] for n, _, _ in sp] for sp in subs], np.int32)
    probs = np.array([[p for _, p, _ in sp] for sp in subs], np.float32)
    mags = np.array([[0.0 if b is None else table[n][b] for n, _, b in sp] for sp in subs], np.float32)
    signed = jnp.asarray([s for _, _, s in space])
    return jnp.asarray(ops), jnp.asarray(probs), jnp.asarray(mags), signed


def _auto_params(key, shape, *, layout, policy="imagenet"):
    check_choice("policy", policy, POLICIES)
    h, w = hw(shape, layout)
    ops, probs, mags, signed = _auto_tables(policy, h, w)
    u = uniforms(key, 5)  # the sub-policy, whether each step applies, the steps' signs
    sub = below(u[0], ops.shape[0])
    applied = u[1:3] <= probs[sub]
    op = jnp.where(applied, ops[sub], 0)  # 0: Identity (the step is skipped)
    return {"sub_policy": sub, "op": op.astype(jnp.int32),
            "magnitude": _signed(u[3:], jnp.where(applied, mags[sub], 0.0), signed, op)}


_apply_auto, _batch_auto = _policy_runners("auto", 2, "nearest")


# --------------------------------------------------------------------------- AugMix


def _augmix_params(key, shape, *, layout, severity=3, width=3, depth=-1, alpha=1.0):
    sev = check_int("severity", severity, low=1, high=10)
    n_chains = check_int("width", width, low=1, high=64)
    if depth != -1:
        check_int("depth", depth, low=1, high=64)
    check_number("alpha", alpha, low=0, low_open=True)
    steps = 3 if depth == -1 else int(depth)
    h, w = hw(shape, layout)
    space = augmentation_space("augmix", 10, h, w)
    table, signed = _tables(space, 10)
    g, cells = GAMMA_UNIFORMS, n_chains * steps
    # the mix weight's and the chains' Dirichlet draws, the chains' depths, then each
    # step's op, magnitude bin and sign
    u = uniforms(key, (2 + n_chains) * g + n_chains + 3 * cells)
    a = jnp.asarray(alpha, jnp.float32)
    m = dirichlet_from(u[:2 * g], jnp.stack([a, a]))
    weights = dirichlet_from(u[2 * g:(2 + n_chains) * g], jnp.full((n_chains,), a)) * m[1]
    u = u[(2 + n_chains) * g:]
    chain_depth = jnp.full((n_chains, 1), steps) if depth != -1 else 1 + below(u[:n_chains, None], 3)
    u = u[n_chains:].reshape(3, n_chains, steps)
    ops = 1 + below(u[0], len(space) - 1)  # 0 is Identity, not drawn
    ops = jnp.where(jnp.arange(steps)[None, :] < chain_depth, ops, 0)
    b = below(u[1], sev)
    return {"op": ops, "magnitude": _signed(u[2], table[ops, b], signed, ops),
            "weights": jnp.concatenate([m[:1], weights])}


_apply_augmix, _batch_augmix = _policy_runners("augmix", 10, "bilinear")


def _parse(opts):
    _check_common(opts.get("fill", 0.0), opts.get("strategy"), opts.get("group_size", 16),
                  opts.get("interpolation", "nearest"))
    return opts


def _parse_rand(opts):
    _check_bins(opts.get("magnitude", 9), opts.get("num_magnitude_bins", 31))
    check_int("num_ops", opts.get("num_ops", 2), low=0, high=64)
    return _parse(opts)


def _parse_auto(opts):
    check_choice("policy", opts.get("policy", "imagenet"), POLICIES)
    return _parse(opts)


OPS = (
    random_op("rand_augment", _rand_params, _apply_rand, run_batch=_batch_rand, check=_check_common, parse=_parse_rand,
              doc="""RandAugment: ``num_ops`` ops drawn uniformly (with replacement) from torchvision's 14
    (Identity, ShearX, ShearY, TranslateX, TranslateY, Rotate, Brightness, Color, Contrast,
    Sharpness, Posterize, Solarize, AutoContrast, Equalize), each at bin ``magnitude`` of
    ``num_magnitude_bins`` (negated with probability 1/2 for signed ops): torchvision v2's
    ``RandAugment(num_ops, magnitude, num_magnitude_bins)`` (see the module docstring for
    the ops and their tables).

    Args:
        key: a JAX key (an int is a seed); image ``i`` of a batch uses ``fold_in(key, i)``.
        image: HW, HWC, CHW, NHWC or NCHW; 1 or 3 channels; any accepted dtype.
        num_ops, magnitude, num_magnitude_bins: static integers; ``magnitude`` in
            ``[0, num_magnitude_bins - 1]`` (``ValueError`` otherwise).
        fill: the value of pixels brought in from outside by the geometric ops (image units).
        interpolation: ``"nearest"`` (torchvision's default here) or ``"bilinear"``: how
            the geometric ops sample.
        strategy, group_size: how a batch runs (:mod:`imgproc.augment.choice`); same numbers.

    Returns:
        The image(s), same shape and dtype. Parameters: ``{"op": int32[num_ops] (index in
        the list above), "magnitude": float32[num_ops] (signed)}``.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.random.default_rng(0).integers(0, 256, (4, 16, 16, 3)).astype(np.uint8)
        >>> imgproc.rand_augment(0, x, num_ops=2, magnitude=9).shape
        (4, 16, 16, 3)
    """),
    random_op("trivial_augment", _wide_params, _apply_wide, run_batch=_batch_wide, check=_check_common, parse=_parse,
              doc="""TrivialAugment Wide: one op drawn uniformly from torchvision's 14 (as
    :func:`rand_augment`, with the wide ranges: shear 0.99, translate 32 px, rotate 135°,
    colour 0.99, posterize 8..2 bits) at a bin drawn uniformly from ``num_magnitude_bins``:
    torchvision v2's ``TrivialAugmentWide``. Options and layouts as :func:`rand_augment`.
    Parameters: ``{"op": int32[1], "magnitude": float32[1]}``.

    Example:
        >>> import numpy as np, imgproc
        >>> imgproc.trivial_augment(0, np.zeros((2, 8, 8, 3), np.uint8)).dtype
        dtype('uint8')
    """),
    random_op("auto_augment", _auto_params, _apply_auto, run_batch=_batch_auto, check=_check_auto, parse=_parse_auto,
              doc="""AutoAugment: one of the 25 sub-policies of ``policy`` (``"imagenet"``, ``"cifar10"``,
    ``"svhn"``) drawn uniformly, each of its two ops applied with its probability, at its
    bin of 10 (negated with probability 1/2 for signed ops): torchvision v2's
    ``AutoAugment(policy)``. Options and layouts as :func:`rand_augment`.
    Parameters: ``{"sub_policy": int32, "op": int32[2] (0 = skipped), "magnitude":
    float32[2]}``.

    Example:
        >>> import numpy as np, imgproc
        >>> imgproc.auto_augment(0, np.zeros((2, 8, 8, 3), np.uint8), policy="svhn").shape
        (2, 8, 8, 3)
    """),
    random_op("aug_mix", _augmix_params, _apply_augmix, run_batch=_batch_augmix, check=_check_common, parse=_parse,
              doc="""AugMix: ``width`` chains of ``depth`` ops (1 to 3, drawn per chain, for ``depth=-1``)
    drawn uniformly from torchvision's 13 AugMix ops at a bin drawn uniformly from the
    first ``severity`` of 10, mixed as ``m0 * x + m1 * sum(w_i * chain_i(x))`` with ``(m0,
    m1) ~ Dirichlet(alpha, alpha)`` and ``w ~ Dirichlet(alpha, ..., alpha)``: torchvision
    v2's ``AugMix(severity, mixture_width=width, chain_depth=depth, alpha, all_ops=True)``,
    whose default ``interpolation`` is ``"bilinear"`` (as here). Options and layouts as
    :func:`rand_augment`. Parameters: ``{"op": int32[width, D],
    "magnitude": float32[width, D], "weights": float32[width + 1]}`` (D = 3 for
    ``depth=-1``; op 0 pads a shorter chain).

    Example:
        >>> import numpy as np, imgproc
        >>> imgproc.aug_mix(0, np.zeros((2, 8, 8, 3), np.uint8)).shape
        (2, 8, 8, 3)
    """),
)
register_ops(OPS)
__test__ = doctests(OPS)  # the examples of the functions random_op wrote
