"""``random_choice`` and ``random_apply``, and the strategies that run them over a batch.

Both are random ops like the others: their parameters are ``{"index": int, "branches":
(params of each branch, ...)}`` (every branch's parameters are drawn, so the structure
is the same for every image; only the chosen branch's are used), and applying them is a
``lax.switch`` on the index.

Under ``vmap``, ``lax.switch`` becomes a ``select``: every branch runs for every image. So a
batch can be run three ways (all give the same numbers: each image's branch and its
parameters depend only on the image's own key):

``"select"``
    ``vmap`` of the per-image ``lax.switch``: every branch for every image, fully
    vectorised. Cost: the sum of all branches. Good on GPU/TPU where the batch runs in
    parallel and control flow is expensive.
``"map"``
    ``lax.map`` over the images: a real conditional per image, so only the chosen branch
    runs. Cost: the chosen branches, one image at a time. Good on CPU.
``"group"``
    sort the batch by drawn branch, cut it in chunks of ``group_size`` and, per chunk,
    run (``vmap``) each branch that some image of the chunk chose (``lax.cond``). Cost:
    about the chosen branches plus one chunk per branch, in vectorised chunks, plus two
    gathers (sort and unsort).

``strategy=None`` picks :func:`default_strategy` for the backend.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from imgproc.core.keys import doctests, random_op
from imgproc.core.registry import IN_LOOP, KEEPS_TARGETS, Stage, register_ops, resolve_targets
from imgproc.core.validate import check_choice, check_number, is_traced

STRATEGIES = ("select", "map", "group")


def default_strategy(*, backend: str | None = None) -> str:
    """The strategy used when ``strategy=None``: ``"map"`` on CPU, ``"select"`` on GPU/TPU:
    the fastest measured on each (``benchmarks/augment.py`` on CPU, ``benchmarks/gpu.py``
    on an H100; not measured on a TPU; numbers in benchmarks/NOTES.md, "Strategies")."""
    backend = backend or jax.default_backend()
    return "map" if backend == "cpu" else "select"


def resolve_strategy(strategy) -> str:
    """``strategy``, checked, or the backend's default for ``None``."""
    return default_strategy() if strategy is None else check_choice("strategy", strategy, STRATEGIES)


class _Branch:
    """One choice: a pipeline :class:`~imgproc.core.registry.Stage` or a plain callable ``f(image)``."""

    def __init__(self, item):
        self.stage = None
        self.fn = None
        try:
            self.stage = Stage.of(item)
        except ValueError:
            if not callable(item) or isinstance(item, (dict, str)):
                raise
            self.fn = item

    def sample(self, key, shape, layout, max_value):
        return None if self.stage is None else self.stage.sample(key, shape, layout=layout, max_value=max_value)

    def apply(self, image, params, layout, max_value, hints):
        if self.stage is None:
            return self.fn(image)
        return self.stage.apply(image, params, layout=layout, max_value=max_value, hints=hints)


def _branches(ops, name="ops"):
    if isinstance(ops, (str, dict)) or not hasattr(ops, "__iter__"):
        raise ValueError(f"{name} must be a list of ops (spec dicts, (op, options) pairs or functions); got {ops!r}")
    out = [_Branch(o) for o in ops]
    if not out:
        raise ValueError(f"{name} must not be empty")
    return out


def _check_weights(weights, n):
    if weights is None or is_traced(weights):
        if isinstance(weights, (list, tuple)) and len(weights) != n:
            raise ValueError(f"weights must be {n} non-negative numbers (one per op); got {len(weights)}")
        return weights
    w = np.asarray(weights, np.float64)
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"weights must be {n} non-negative numbers (one per op) with a positive sum; got {weights!r}")
    return weights


def _params(branches, index, kb, shape, layout, max_value):
    return {"index": index.astype(jnp.int32),
            "branches": tuple(b.sample(kb, shape, layout, max_value) for b in branches)}


def _choice_params(key, shape, *, layout, ops, weights=None, max_value=None):
    branches = _branches(ops)
    n = len(branches)
    _check_weights(weights, n)
    kc, kb = jax.random.split(key)
    if weights is None:
        idx = jax.random.randint(kc, (), 0, n)
    else:
        w = jnp.asarray(weights, jnp.float32)
        c = jnp.cumsum(w) / jnp.sum(w)
        idx = jnp.minimum(jnp.searchsorted(c, jax.random.uniform(kc), side="right"), n - 1)
    return _params(branches, idx, kb, shape, layout, max_value)


def _switch(branches, image, params, layout, max_value, hints, finish=None):
    """The branch ``params["index"]`` of ``branches`` on ``image``, then ``finish`` (inside
    the branch, where it fuses: :meth:`imgproc.core.registry.Stage.apply`)."""
    finish = finish or (lambda y: y)
    fns = [lambda x, b=b, p=p: finish(b.apply(x, p, layout, max_value, hints))
           for b, p in zip(branches, params["branches"])]
    if len(fns) == 1:
        return fns[0](image)
    return jax.lax.switch(params["index"], fns, image)


def run_choice_batch(branches, params, images, layout, strategy, group_size, max_value, hints):
    """Apply per-image ``params`` to a batch (one image layout ``layout`` per image) with
    ``strategy``."""
    strategy = resolve_strategy(strategy)
    if strategy == "select":
        return jax.vmap(lambda x, p: _switch(branches, x, p, layout, max_value, hints))(images, params)
    if strategy == "map":
        return jax.lax.map(lambda xp: _switch(branches, *xp, layout, max_value, IN_LOOP), (images, params))
    if isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)) or group_size < 1:
        raise ValueError(f"group_size must be a positive integer; got {group_size!r}")
    n = images.shape[0]
    g = min(int(group_size), n)
    idx = params["index"]
    order = jnp.argsort(idx, stable=True)
    inverse = jnp.argsort(order)
    chunks = -(-n // g)
    pad = chunks * g - n

    def grouped(a, fill=None):
        a = a[order]
        if pad:
            a = jnp.concatenate([a, a[:pad] if fill is None else jnp.full((pad,) + a.shape[1:], fill, a.dtype)])
        return a.reshape((chunks, g) + a.shape[1:])

    xs = grouped(images)
    ps = jax.tree_util.tree_map(grouped, params["branches"])
    ids = grouped(idx, fill=-1)
    tail = (1,) * (xs.ndim - 2)

    def chunk(args):
        xc, pc, ic = args
        out = xc
        for j, b in enumerate(branches):
            sel = ic == j
            y = jax.lax.cond(
                jnp.any(sel),
                lambda xc=xc, p=pc[j], b=b: jax.vmap(lambda x, q: b.apply(x, q, layout, max_value, hints))(xc, p),
                lambda xc=xc: xc,
            )
            out = jnp.where(sel.reshape(sel.shape + tail), y, out)
        return out

    ys = jax.lax.map(chunk, (xs, ps, ids))
    ys = ys.reshape((chunks * g,) + ys.shape[2:])[:n]
    return ys[inverse]


def _apply_choice(image, params, *, layout, ops, max_value=None, hints=None, finish=None):
    return _switch(_branches(ops), image, params, layout, max_value, hints, finish)


def _choice_batch(params, images, *, layout, ops, strategy=None, group_size=16, max_value=None, hints=None):
    return run_choice_batch(_branches(ops), params, images, layout, strategy, group_size, max_value, hints)


def _identity(image, *, layout=None):
    return image


def _apply_params(key, shape, *, layout, stage, p=0.5, max_value=None):
    check_number("p", p, low=0, high=1)
    kc, kb = jax.random.split(key)
    index = jax.random.uniform(kc) < jnp.asarray(p, jnp.float32)
    return _params(_branches([_identity, stage], "stage"), index, kb, shape, layout, max_value)


def _apply_apply(image, params, *, layout, stage, max_value=None, hints=None, finish=None):
    return _switch(_branches([_identity, stage], "stage"), image, params, layout, max_value, hints, finish)


def _apply_batch(params, images, *, layout, stage, strategy=None, group_size=16, max_value=None, hints=None):
    return run_choice_batch(_branches([_identity, stage], "stage"), params, images, layout, strategy, group_size, max_value, hints)


def _check_choice(ops, weights, strategy):
    _check_weights(weights, len(_branches(ops)))
    resolve_strategy(strategy)


def _check_apply(p, strategy):
    check_number("p", p, low=0, high=1)
    resolve_strategy(strategy)


def _parse_choice(opts):
    ops = opts["ops"]
    if isinstance(ops, (str, dict)) or not hasattr(ops, "__iter__"):
        raise ValueError(f'random_choice "ops" must be a list of stages; got {ops!r}')
    out = dict(opts, ops=[Stage.of(o) for o in ops])
    if not out["ops"]:
        raise ValueError('random_choice "ops" must not be empty')
    if out.get("weights") is not None:
        _check_weights(out["weights"], len(out["ops"]))
        out["weights"] = [float(w) for w in out["weights"]]
    if out.get("strategy") is not None:
        check_choice("strategy", out["strategy"], STRATEGIES)
    return out


def _parse_apply(opts):
    if opts.get("strategy") is not None:
        check_choice("strategy", opts["strategy"], STRATEGIES)
    return dict(opts, stage=Stage.of(opts["stage"]))


def _keeps_if_all_keep(stages):
    """Targets rule of a stage holding ``stages``: they stay when every held op keeps them;
    otherwise unknown (None: refused), since moving them would need the branch drawn."""
    return KEEPS_TARGETS if all(resolve_targets(s) is KEEPS_TARGETS for s in stages) else None


# What a pipeline gives the stages held (their value range, its lowering hints); a call
# leaves them to the held ops.
HIDDEN = ("max_value", "hints")

OPS = (
    random_op("random_choice", _choice_params, _apply_choice, run_batch=_choice_batch, check=_check_choice,
              hidden=HIDDEN, parse=_parse_choice, targets=lambda o: _keeps_if_all_keep(o["ops"]),
              doc="""Apply one of ``ops``, drawn with probabilities ``weights / sum(weights)`` (uniform by
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
            :mod:`imgproc.augment.choice`); None picks :func:`default_strategy`. Results
            are the same for every strategy. One image: always a real ``lax.switch``.
        group_size: chunk size of the ``"group"`` strategy.
        layout: None infers HW/HWC/NHWC; name CHW/NCHW.

    Returns:
        The image(s), same shape and dtype. Parameters: ``{"index", "branches"}``.

    Example:
        >>> import jax, numpy as np, imgproc
        >>> x = np.arange(6, dtype=np.float32).reshape(2, 3)
        >>> y = imgproc.random_choice(jax.random.key(0), x, ["flip_left_right", "flip_up_down"])
        >>> any(np.array_equal(y, f(x)) for f in (np.fliplr, np.flipud))
        True
    """),
    random_op("random_apply", _apply_params, _apply_apply, run_batch=_apply_batch, check=_check_apply,
              hidden=HIDDEN, parse=_parse_apply, targets=lambda o: _keeps_if_all_keep([o["stage"]]),
              doc="""Apply ``stage`` with probability ``p`` (traced), else return the image unchanged.

    ``stage`` is one op as in :func:`random_choice`; ``strategy`` and ``group_size`` as there
    (``"map"`` and ``"group"`` run it only on the images that drew it). In a spec:
    ``{"op": "random_apply", "p": 0.5, "stage": {"op": "gaussian_blur", "sigma": 2.0}}``.
    Parameters: ``{"index": 0 or 1, "branches": (None, the stage's parameters)}``.

    Example:
        >>> import jax, numpy as np, imgproc
        >>> x = np.ones((2, 2), np.uint8)
        >>> np.asarray(imgproc.random_apply(jax.random.key(0), x, "flip_left_right", p=0.0)).tolist()
        [[1, 1], [1, 1]]
    """),
)
register_ops(OPS)
__test__ = doctests(OPS)  # the examples of the functions random_op wrote
