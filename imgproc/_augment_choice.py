"""``random_choice`` and ``random_apply``, and the strategies that run them over a batch.

Under ``vmap``, ``lax.switch`` becomes a ``select``: every branch runs for every image. So a
batch can be run three ways (all give the same numbers: each image's branch and the key
its branch gets depend only on the image's own key):

``"select"``
    ``vmap`` of the per-image ``lax.switch``: every branch for every image, fully
    vectorised. Cost: the sum of all branches. Good on GPU/TPU where the batch runs in
    parallel and control flow is expensive.
``"map"``
    ``lax.map`` over the images: a real conditional per image, so only the chosen branch
    runs. Cost: the chosen branches, one image at a time. Good on CPU.
``"group"``
    draw every image's branch first, sort the batch by branch, cut it in chunks of
    ``group_size`` and, per chunk, run (``vmap``) each branch that some image of the chunk
    chose (``lax.cond``). Cost: about the chosen branches plus one chunk per branch, in
    vectorised chunks, plus two gathers (sort and unsort).

``strategy=None`` picks :func:`default_strategy` for the backend.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from imgproc._checks import check_image
from imgproc._augment_base import BATCH_LAYOUTS, check_key, check_number, check_static, image_keys

STRATEGIES = ("select", "map", "group")


def default_strategy(backend: str | None = None) -> str:
    """The strategy used when ``strategy=None``: ``"map"`` on CPU (measured fastest there by
    ``benchmarks/augment.py``: 5-14x ``"select"``, 1.2-3.1x ``"group"`` on 2 cores), ``"select"`` on
    GPU/TPU (measured fastest on an H100 by ``benchmarks/gpu.py``: 3.2x ``"map"`` and 1.8x
    ``"group"`` from host memory, 16x and 2.3x with the batch already on the device;
    not measured on a TPU)."""
    backend = backend or jax.default_backend()
    return "map" if backend == "cpu" else "select"


class _Branch:
    """One choice: a pipeline :class:`~imgproc._pipeline.Stage` or a plain callable ``f(image)``."""

    def __init__(self, item):
        from imgproc._pipeline import Stage

        self.stage = None
        self.fn = None
        if isinstance(item, _Branch):
            self.stage, self.fn = item.stage, item.fn
            return
        try:
            self.stage = Stage.of(item)
        except ValueError:
            if not callable(item) or isinstance(item, (dict, str)):
                raise
            self.fn = item

    def __call__(self, key, image, layout):
        if self.stage is not None:
            return self.stage(image, key, layout=layout)
        return self.fn(image)


def _branches(ops, name):
    if isinstance(ops, (str, dict)) or not hasattr(ops, "__iter__"):
        raise ValueError(f"{name} must be a list of ops (spec dicts, (op, options) pairs or functions); got {ops!r}")
    out = [_Branch(o) for o in ops]
    if not out:
        raise ValueError(f"{name} must not be empty")
    return out


def _check_weights(weights, n):
    if weights is None or isinstance(weights, jax.core.Tracer):
        return weights
    if isinstance(weights, (list, tuple)) and any(isinstance(w, jax.core.Tracer) for w in weights):
        if len(weights) != n:
            raise ValueError(f"weights must be {n} non-negative numbers (one per op); got {len(weights)}")
        return weights
    w = np.asarray(weights, np.float64)
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"weights must be {n} non-negative numbers (one per op) with a positive sum; got {weights!r}")
    return weights


def _choice_draw(n, weights):
    def draw(key):
        kc, kb = jax.random.split(key)
        if weights is None:
            idx = jax.random.randint(kc, (), 0, n)
        else:
            w = jnp.asarray(weights, jnp.float32)
            c = jnp.cumsum(w) / jnp.sum(w)
            idx = jnp.minimum(jnp.searchsorted(c, jax.random.uniform(kc), side="right"), n - 1)
        return idx.astype(jnp.int32), kb

    return draw


def _apply_draw(p):
    def draw(key):
        kc, kb = jax.random.split(key)
        return (jax.random.uniform(kc) < jnp.asarray(p, jnp.float32)).astype(jnp.int32), kb

    return draw


def _one(key, image, branches, draw, layout):
    idx, k = draw(key)
    fns = [lambda k, x, b=b: b(k, x, layout) for b in branches]
    if len(fns) == 1:
        return fns[0](k, image)
    return jax.lax.switch(idx, fns, k, image)


def run_batch(keys, images, branches, draw, *, layout, strategy, group_size=16):
    """Run a switch-like random op on a batch (``images[i]`` with ``keys[i]``), one image
    layout ``layout`` (HW/HWC/CHW) per image, with ``strategy``."""
    strategy = default_strategy() if strategy is None else check_static("strategy", strategy, STRATEGIES)
    one = lambda k, x: _one(k, x, branches, draw, layout)  # noqa: E731
    if strategy == "select":
        return jax.vmap(one)(keys, images)
    if strategy == "map":
        from imgproc._convolution import image_loop

        def body(kx):
            with image_loop():
                return one(*kx)

        return jax.lax.map(body, (keys, images))
    if isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)) or group_size < 1:
        raise ValueError(f"group_size must be a positive integer; got {group_size!r}")
    n = images.shape[0]
    g = min(int(group_size), n)
    idx, sub = jax.vmap(draw)(keys)
    order = jnp.argsort(idx, stable=True)
    inverse = jnp.argsort(order)
    xs, ks, ids = images[order], sub[order], idx[order]
    chunks = -(-n // g)
    pad = chunks * g - n
    if pad:
        xs = jnp.concatenate([xs, xs[:pad]])
        ks = jnp.concatenate([ks, ks[:pad]])
        ids = jnp.concatenate([ids, jnp.full((pad,), -1, ids.dtype)])
    xs = xs.reshape((chunks, g) + xs.shape[1:])
    ks = ks.reshape((chunks, g) + ks.shape[1:])
    ids = ids.reshape(chunks, g)
    tail = (1,) * (xs.ndim - 2)

    def chunk(args):
        kc, xc, ic = args
        out = xc
        for j, b in enumerate(branches):
            sel = ic == j
            y = jax.lax.cond(
                jnp.any(sel),
                lambda kc=kc, xc=xc, b=b: jax.vmap(lambda k, x: b(k, x, layout))(kc, xc),
                lambda kc=kc, xc=xc: xc,
            )
            out = jnp.where(sel.reshape(sel.shape + tail), y, out)
        return out

    ys = jax.lax.map(chunk, (ks, xs, ids))
    ys = ys.reshape((chunks * g,) + ys.shape[2:])[:n]
    return ys[inverse]


def _dispatch(key, image, branches, draw, layout, strategy, group_size):
    check_key(key)
    image, layout = check_image(image, layout)
    if strategy is not None:
        check_static("strategy", strategy, STRATEGIES)
    image = jnp.asarray(image)
    if layout in BATCH_LAYOUTS:
        keys = image_keys(key, image.shape[0])
        return run_batch(keys, image, branches, draw, layout=BATCH_LAYOUTS[layout], strategy=strategy, group_size=group_size)
    return _one(key, image, branches, draw, layout)


def random_choice(key, image, ops, *, weights=None, strategy=None, group_size=16, layout=None):
    """Apply one of ``ops``, drawn with probabilities ``weights / sum(weights)`` (uniform by
    default), built on ``lax.switch``.

    Args:
        key: a JAX PRNG key.
        image: one image (HW, HWC, CHW) or a batch (NHWC, NCHW; image ``i`` drawn with
            ``fold_in(key, i)``); uint8, uint16, float16, bfloat16 or float32.
        ops: list of stages: spec dicts (``{"op": "gaussian_blur", "sigma": 1.0}``),
            ``(op, options)`` pairs, registered ops, or plain callables ``f(image)``. Every
            op must keep the shape and dtype. A random op gets a key derived from ``key``.
        weights: one non-negative number per op (traced), or None for uniform.
        strategy: how a batch runs: ``"select"``, ``"map"`` or ``"group"`` (see
            :mod:`imgproc._augment_choice`); None picks :func:`default_strategy`. Results
            are the same for every strategy. One image: always a real ``lax.switch``.
        group_size: chunk size of the ``"group"`` strategy.
        layout: None infers HW/HWC/NHWC; name CHW/NCHW.

    Returns:
        The image(s), same shape and dtype.

    Example:
        >>> import jax, numpy as np, imgproc
        >>> x = np.arange(6, dtype=np.float32).reshape(2, 3)
        >>> y = imgproc.random_choice(jax.random.key(0), x, ["flip_left_right", "flip_up_down"])
        >>> any(np.array_equal(y, f(x)) for f in (np.fliplr, np.flipud))
        True
    """
    branches = _branches(ops, "ops")
    _check_weights(weights, len(branches))
    return _dispatch(key, image, branches, _choice_draw(len(branches), weights), layout, strategy, group_size)


def _identity(image, *, layout=None):
    return image


def random_apply(key, image, op, *, p=0.5, strategy=None, group_size=16, layout=None):
    """Apply ``op`` with probability ``p`` (traced), else return the image unchanged.

    ``op`` is one stage as in :func:`random_choice`; ``strategy`` and ``group_size`` as there
    (``"map"`` and ``"group"`` run ``op`` only on the images that drew it). In a spec:
    ``{"op": "random_apply", "p": 0.5, "stage": {"op": "gaussian_blur", "sigma": 2.0}}``.

    Example:
        >>> import jax, numpy as np, imgproc
        >>> x = np.ones((2, 2), np.uint8)
        >>> np.asarray(imgproc.random_apply(jax.random.key(0), x, "flip_left_right", p=0.0)).tolist()
        [[1, 1], [1, 1]]
    """
    check_number("p", p, low=0, high=1)
    branches = [_Branch(_identity), _Branch(op)]
    return _dispatch(key, image, branches, _apply_draw(p), layout, strategy, group_size)


# --------------------------------------------------------------------------- pipeline glue


def _stage_random_choice(key, image, *, ops, weights=None, strategy=None, group_size=16, layout=None):
    return random_choice(key, image, ops, weights=weights, strategy=strategy, group_size=group_size, layout=layout)


def _stage_random_apply(key, image, *, stage, p=0.5, strategy=None, group_size=16, layout=None):
    return random_apply(key, image, stage, p=p, strategy=strategy, group_size=group_size, layout=layout)


def _batch_random_choice(keys, images, *, ops, weights=None, strategy=None, group_size=16, layout):
    branches = _branches(ops, "ops")
    _check_weights(weights, len(branches))
    if strategy is not None:
        check_static("strategy", strategy, STRATEGIES)
    draw = _choice_draw(len(branches), weights)
    return run_batch(keys, images, branches, draw, layout=layout, strategy=strategy, group_size=group_size)


def _batch_random_apply(keys, images, *, stage, p=0.5, strategy=None, group_size=16, layout):
    check_number("p", p, low=0, high=1)
    if strategy is not None:
        check_static("strategy", strategy, STRATEGIES)
    branches = [_Branch(_identity), _Branch(stage)]
    return run_batch(keys, images, branches, _apply_draw(p), layout=layout, strategy=strategy, group_size=group_size)


_stage_random_choice.apply_batch = _batch_random_choice
_stage_random_apply.apply_batch = _batch_random_apply


def _parse_choice(opts):
    from imgproc._pipeline import Stage

    if "ops" not in opts:
        raise ValueError('random_choice needs "ops": a list of stages')
    ops = opts["ops"]
    if isinstance(ops, (str, dict)) or not hasattr(ops, "__iter__"):
        raise ValueError(f'random_choice "ops" must be a list of stages; got {ops!r}')
    out = dict(opts, ops=[Stage.of(o) for o in ops])
    if not out["ops"]:
        raise ValueError('random_choice "ops" must not be empty')
    if "weights" in out and out["weights"] is not None:
        _check_weights(out["weights"], len(out["ops"]))
        out["weights"] = [float(w) for w in out["weights"]]
    return out


def _parse_apply(opts):
    from imgproc._pipeline import Stage

    if "stage" not in opts:
        raise ValueError('random_apply needs "stage": the stage to apply with probability p')
    return dict(opts, stage=Stage.of(opts["stage"]))
