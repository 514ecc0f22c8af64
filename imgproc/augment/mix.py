"""Batch ops: ``mixup`` and ``cutmix`` of an image batch and its one-hot labels, and
``mix_batch`` that runs one of them (or one per image) from a spec.

They are not pipeline stages: a stage sees one image, these mix two images of a batch and
their labels. Run them after the pipeline, on its output::

    x = pipe(images, key=k, indices=idx)
    x, y = imgproc.mix_batch(x, labels, [{"op": "mixup", "alpha": 0.2}, {"op": "cutmix", "alpha": 1.0}],
                             key=k2, indices=idx)

Pairing and reproducibility. Image ``i`` draws everything from ``fold_in(key,
indices[i])`` (``indices`` defaults to ``arange(B)``, as in a pipeline): its mixing weight,
its CutMix box, and a sort key. The batch is put in the order of the sort keys and each
image is mixed with the next one in that cycle (its *partner*; never itself when the batch
has two or more images). So the result for a sample depends on the key, its index and the
set of (index, image) pairs in its batch: the same batch with the same key gives the same
result, in any order of the batch (a permuted batch with its permuted ``indices`` gives the
permuted result; tested); a different batch composition (another batch size or split)
gives other partners, necessarily, since the partner must be in the batch.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from imgproc.core.array_type import callers_type
from imgproc.core.arrays import to_output
from imgproc.core.images import check_image
from imgproc.core.keys import BATCH_LAYOUTS, GAMMA_UNIFORMS, beta_from, stage_key, uniforms
from imgproc.core.validate import check_indices, check_int, check_key, check_number, is_traced

MIX_OPS = ("mixup", "cutmix")


def _check_batch(images, labels, layout, indices, num_classes):
    images, layout = check_image(images, layout)
    if layout not in BATCH_LAYOUTS:
        raise ValueError(f"mixup and cutmix need a batch (NHWC or NCHW); got shape {tuple(images.shape)} with layout "
                         f"{layout!r}")
    n = images.shape[0]
    labels = jnp.asarray(labels)
    if labels.ndim == 1 and jnp.issubdtype(labels.dtype, jnp.integer):
        if num_classes is None:
            raise ValueError("integer class labels need num_classes (or pass one-hot labels of shape (B, num_classes))")
        if not is_traced(labels) and (int(labels.min()) < 0 or int(labels.max()) >= num_classes):
            raise ValueError(f"class labels must be in [0, {num_classes - 1}]; got "
                             f"{int(labels.min())}..{int(labels.max())}")
        labels = jax.nn.one_hot(labels, num_classes, dtype=jnp.float32)
    if labels.ndim != 2 or labels.shape[0] != n:
        raise ValueError(f"labels must be one-hot (or soft) of shape (B, num_classes) = ({n}, K) for {n} images; got "
                         f"shape {tuple(labels.shape)}")
    indices = jnp.arange(n) if indices is None else check_indices(indices, n)
    return images, labels.astype(jnp.float32), layout, indices


def _partners(u, count=None):
    """Image ``i``'s partner: the next image in the cycle sorted by each image's draw
    ``u[i]`` (ties, improbable, by position), among the first ``count`` images (traced;
    None: all; the rest, padding, sort after them and are nobody's partner)."""
    n = u.shape[0]
    if count is None:
        count = n
    else:  # a traced count is held to [1, n] (a concrete one is checked: _run)
        count = jnp.clip(count, 1, n)
        u = jnp.where(jnp.arange(n) < count, u, jnp.inf)
    order = jnp.argsort(u, stable=True)
    rank = jnp.argsort(order)
    return order[(rank + 1) % count]


def _mix_params(key, images, layout, indices, alphas, op_index, count=None):
    """Per-image draws: partner, ``lam`` (from the alpha of the image's op), CutMix box
    ``(x1, y1, x2, y2)`` and op (0 mixup, 1 cutmix: ``op_index``, or drawn when None).
    Every variate of image ``i`` comes from one ``jax.random.uniform`` call on its key
    (each random call is a hash XLA compiles on its own: twenty of them took seconds)."""
    n = images.shape[0]
    h, w = (images.shape[1], images.shape[2]) if layout == "NHWC" else (images.shape[2], images.shape[3])
    g = GAMMA_UNIFORMS
    # per image: two Beta draws (one per alpha), the op, the box centre, the partner order
    u = jax.vmap(lambda i: uniforms(stage_key(key, i), 4 * g + 4))(indices)
    a = jnp.stack([jnp.asarray(alpha, jnp.float32) for alpha in alphas])
    betas = beta_from(u[:, :4 * g].reshape(n, 2, 2, g), a, a).T  # (alpha, image)
    rest = u[:, 4 * g:]
    op = (rest[:, 0] < 0.5).astype(jnp.int32) if op_index is None else jnp.full((n,), op_index, jnp.int32)
    lam = jnp.where(op == 1, betas[1], betas[0])
    cx = jnp.minimum(jnp.floor(rest[:, 1] * w).astype(jnp.int32), w - 1)
    cy = jnp.minimum(jnp.floor(rest[:, 2] * h).astype(jnp.int32), h - 1)
    r = 0.5 * jnp.sqrt(1.0 - lam)
    rw, rh = jnp.floor(r * w).astype(jnp.int32), jnp.floor(r * h).astype(jnp.int32)
    box = jnp.stack([jnp.maximum(cx - rw, 0), jnp.maximum(cy - rh, 0), jnp.minimum(cx + rw, w),
                     jnp.minimum(cy + rh, h)], -1)
    return {"partner": _partners(rest[:, 3], count), "lam": lam, "box": box, "op": op}


def _apply_mix(images, labels, params, layout):
    x = images.astype(jnp.float32)
    p = params["partner"]
    xp, yp = x[p], labels[p]
    lam, box, cut = params["lam"], params["box"], params["op"] == 1
    n = x.shape[0]
    h, w = (x.shape[1], x.shape[2]) if layout == "NHWC" else (x.shape[2], x.shape[3])
    rows = jnp.arange(h)[None, :, None]
    cols = jnp.arange(w)[None, None, :]
    inside = ((rows >= box[:, 1, None, None]) & (rows < box[:, 3, None, None]) & (cols >= box[:, 0, None, None])
              & (cols < box[:, 2, None, None]))  # (N, H, W)
    area = ((box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1])).astype(jnp.float32)
    lam_cut = 1.0 - area / (h * w)
    weight = jnp.where(cut, lam_cut, lam)  # the label weight of image i itself
    m = inside[..., None] if layout == "NHWC" else inside[:, None]
    shape = (n,) + (1,) * (x.ndim - 1)
    mixed = jnp.where(cut.reshape(shape), jnp.where(m, xp, x), lam.reshape(shape) * x + (1.0 - lam.reshape(shape)) * xp)
    y = weight[:, None] * labels + (1.0 - weight[:, None]) * yp
    return to_output(mixed, images.dtype), y, weight


def _run(images, labels, key, alphas, indices, layout, num_classes, op_index, return_params, count=None):
    key = check_key(key)
    for a in alphas:
        check_number("alpha", a, low=0, low_open=True)
    images, labels, layout, indices = _check_batch(images, labels, layout, indices, num_classes)
    if count is not None and not is_traced(count):
        count = check_int("count", count, low=1, high=images.shape[0])
    images = jnp.asarray(images)
    params = _mix_params(key, images, layout, indices, alphas, op_index, count)
    x, y, weight = _apply_mix(images, labels, params, layout)
    if return_params:
        return x, y, dict(params, label_weight=weight)
    return x, y


@callers_type
def mixup(images, labels, *, key, alpha=0.2, indices=None, num_classes=None, layout=None, return_params=False):
    """MixUp: image ``i`` becomes ``lam_i * x_i + (1 - lam_i) * x_j`` and its label
    ``lam_i * y_i + (1 - lam_i) * y_j``, ``lam_i ~ Beta(alpha, alpha)``, ``j`` its partner
    in the batch (module docstring: pairing and reproducibility). torchvision v2's
    ``MixUp(alpha)``, except that it draws one ``lam`` per batch and pairs ``i`` with ``i -
    1``; here both are per image, drawn from ``fold_in(key, indices[i])``.

    Args:
        images: NHWC or NCHW batch (``layout``), any accepted dtype (integers rounded and
            saturated once).
        labels: one-hot or soft labels ``(B, num_classes)``; or integer class ids ``(B,)``
            with ``num_classes``.
        key: a JAX key or an int seed. alpha: > 0 (traced). indices: one int per image
            (default ``arange(B)``).
        return_params: also return ``{"partner", "lam", "box", "op", "label_weight"}``.

    Returns:
        ``(images, labels)``: same shape and dtype as the images; labels float32 (B, K).

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.stack([np.zeros((4, 4, 3)), np.ones((4, 4, 3))]).astype(np.float32)
        >>> y, labels = imgproc.mixup(x, np.eye(2, dtype=np.float32), key=0, alpha=1.0)
        >>> bool(np.allclose(labels.sum(1), 1.0)), bool(np.allclose(y[0].mean(), labels[0, 1]))
        (True, True)
    """
    return _run(images, labels, key, (alpha, alpha), indices, layout, num_classes, 0, return_params)


@callers_type
def cutmix(images, labels, *, key, alpha=1.0, indices=None, num_classes=None, layout=None, return_params=False):
    """CutMix: a box of image ``i`` is replaced by the same box of its partner ``j`` and the
    label becomes ``w * y_i + (1 - w) * y_j`` with ``w = 1 - box area / (H * W)``. The box is
    torchvision v2's ``CutMix(alpha)``: ``lam ~ Beta(alpha, alpha)``, centre ``(r_x, r_y)``
    uniform over the pixels, half sides ``int(0.5 * sqrt(1 - lam) * W)`` and ``... * H)``,
    clipped to the image. Per image and paired as :func:`mixup` (module docstring);
    arguments and return as there.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.stack([np.zeros((8, 8, 3)), np.full((8, 8, 3), 255)]).astype(np.uint8)
        >>> y, labels, p = imgproc.cutmix(x, np.eye(2, dtype=np.float32), key=1, return_params=True)
        >>> bool(np.isclose(labels[0, 1], (y[0] == 255).mean()))
        True
    """
    return _run(images, labels, key, (alpha, alpha), indices, layout, num_classes, 1, return_params)


def parse_spec(spec):
    specs = [spec] if isinstance(spec, dict) else list(spec) if isinstance(spec, (list, tuple)) else None
    if not specs:
        raise ValueError(f'a mix spec is {{"op": "mixup"|"cutmix", "alpha": ...}} or a list of them; got {spec!r}')
    out = []
    for s in specs:
        if not isinstance(s, dict) or s.get("op") not in MIX_OPS:
            raise ValueError(f"mix ops are {', '.join(map(repr, MIX_OPS))}; got {s!r}")
        unknown = sorted(set(s) - {"op", "alpha"})
        if unknown:
            raise ValueError(f"{s['op']} has no option {', '.join(map(repr, unknown))}; its options: alpha")
        alpha = s.get("alpha", 0.2 if s["op"] == "mixup" else 1.0)
        check_number("alpha", alpha, low=0, low_open=True)
        out.append((s["op"], float(alpha)))
    if len(out) > 2 or len({o for o, _ in out}) != len(out):
        raise ValueError("a mix spec lists mixup and/or cutmix once each")
    return out


@callers_type
def mix_batch(images, labels, spec, *, key, indices=None, num_classes=None, layout=None, return_params=False,
              count=None):
    """Run a JSON mix spec on a batch after a pipeline: ``{"op": "mixup", "alpha": 0.2}``,
    ``{"op": "cutmix", "alpha": 1.0}``, or a list of both, in which case each image draws
    one of the two with probability 1/2 (torchvision's ``RandomChoice([MixUp, CutMix])``
    draws one per batch; here per image, from ``fold_in(key, indices[i])``). Arguments and
    reproducibility as :func:`mixup`. ``count`` (an int in ``[1, B]``, traced or not; a
    traced one is held to that range): only the first ``count`` images are the batch and
    the rest padding, which no image mixes with (a partial batch run in a full batch's
    program: the first ``count`` results are those of the ``count`` images alone).

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((4, 8, 8, 3), np.uint8)
        >>> spec = [{"op": "mixup", "alpha": 0.2}, {"op": "cutmix", "alpha": 1.0}]
        >>> y, labels = imgproc.mix_batch(x, np.array([0, 1, 2, 3]), spec, key=0, num_classes=10)
        >>> y.shape, labels.shape
        ((4, 8, 8, 3), (4, 10))
    """
    ops = dict(parse_spec(spec))
    if len(ops) == 1:
        (op, alpha), = ops.items()
        return _run(images, labels, key, (alpha, alpha), indices, layout, num_classes, MIX_OPS.index(op),
                    return_params, count)
    return _run(images, labels, key, (ops["mixup"], ops["cutmix"]), indices, layout, num_classes, None,
                return_params, count)


__all__ = ["MIX_OPS", "cutmix", "mix_batch", "mixup"]
