"""The key rule and how a random op runs on its own.

Key rule (one function, :func:`stage_key`): image ``index`` of a batch draws from
``fold_in(key, index)``; inside a pipeline, stage ``s`` of that image draws from
``fold_in(fold_in(key, index), s)``. So a sample's result depends only on the key and its
index, never on the batch size or split, the device count or the worker count.

A random op is ``sample`` (draws a pytree of parameters for one image) and ``apply`` (the
deterministic op with them), see :mod:`imgproc.core.registry`. :func:`run_random_op` is the
body of every public ``random_x(key, image, ...)``, and :func:`random_op` writes that
function from the two pieces and returns its registry row (optax's factories, kornia's
parameter generators): a random op is its sampler, its deterministic op and one table line.
"""

from __future__ import annotations

import functools
import inspect

import jax
import jax.numpy as jnp
import numpy as np

from imgproc.core.array_type import callers_type
from imgproc.core.devices import batch_partition, freeze, map_batch
from imgproc.core.eager import run_compiled
from imgproc.core.images import check_image
from imgproc.core.registry import OpInfo, pick_options, takes
from imgproc.core.validate import check_key, is_int

__all__ = ["BATCH_LAYOUTS", "GAMMA_UNIFORMS", "below", "bernoulli", "beta", "beta_from", "dirichlet", "doctests",
           "draw_words", "log_gamma", "image_layout", "maybe", "random_op", "run_random_op", "sample_batch", "scaled",
           "stage_key", "uniform", "uniforms", "unit"]

BATCH_LAYOUTS = {"NHWC": "HWC", "NCHW": "CHW"}


def stage_key(key, index, stage=None):
    """The key image ``index`` draws from: ``fold_in(key, index)``, and for stage ``stage``
    of a pipeline ``fold_in(fold_in(key, index), stage)``."""
    k = jax.random.fold_in(key, index)
    return k if stage is None else jax.random.fold_in(k, stage)


def image_layout(layout: str) -> str:
    """The layout of one image of a batch in ``layout`` (the layout itself for one image)."""
    return BATCH_LAYOUTS.get(layout, layout)


def sample_batch(sample, keys, shape, **options):
    """``sample(keys[i], shape, **options)`` for every key of a batch (``vmap``)."""
    return jax.vmap(lambda k: sample(k, shape, **options))(keys)


def run_random_op(sample, apply, key, image, *, layout=None, run_batch=None, **options):
    """Draw and apply a random op on one image (``key`` as is) or a batch (NHWC/NCHW:
    image ``i`` draws from ``stage_key(key, i)``). ``options`` go to whichever of
    ``sample`` and ``apply`` (or ``run_batch`` for a batch) names them. A batch split over
    devices stays split, each image drawing from its global index
    (:mod:`imgproc.core.devices`). Called eagerly (nothing traced, options of Python values
    and stages), the draw and the op run as one compiled program per op and layout, its
    floats as arguments (:mod:`imgproc.core.eager`), not op by op (why: benchmarks/NOTES.md,
    "Hashed noise")."""
    key = check_key(key)
    image, layout = check_image(image, layout)
    image = jnp.asarray(image)
    if layout in BATCH_LAYOUTS:
        partition = batch_partition(image)
        if partition is not None:  # split over devices: each its own images, global indices
            frozen = freeze((layout, options))
            inner = image_layout(layout)
            return map_batch(functools.partial(_run_batch, sample, apply, run_batch, inner, options), image, partition,
                             replicated=(key,), with_indices=True,
                             key=None if frozen is None else (sample, apply, run_batch, frozen))
    return run_compiled((sample, apply, run_batch, layout),
                        functools.partial(_draw_and_apply, sample, apply, run_batch, layout), (image, key), options)


def _draw_and_apply(sample, apply, run_batch, layout, image, key, **options):
    if layout not in BATCH_LAYOUTS:
        draw = pick_options(sample, options)
        return apply(image, sample(key, image.shape, layout=layout, **draw), layout=layout, **pick_options(apply, options))
    return _run_batch(sample, apply, run_batch, image_layout(layout), options, image, key, jnp.arange(image.shape[0]))


def _run_batch(sample, apply, run_batch, inner, options, images, key, indices):
    keys = jax.vmap(lambda i: stage_key(key, i))(indices)
    params = sample_batch(sample, keys, images.shape[1:], layout=inner, **pick_options(sample, options))
    if run_batch is not None:
        return run_batch(params, images, layout=inner, **pick_options(run_batch, options))
    return jax.vmap(lambda x, p: apply(x, p, layout=inner, **pick_options(apply, options)))(images, params)


# --------------------------------------------------------------------------- the factory

# Parameters of the pieces that are not options of the public function: what the function
# or a pipeline supplies (the key, the image or batch, its shape, the drawn parameters,
# the layout, the lowering hints, a run's last step).
_NOT_OPTIONS = ("key", "shape", "image", "images", "params", "layout", "hints", "finish")


def random_op(name, sample, apply, *, doc, run_batch=None, check=None, hidden=(), module=None, **info) -> OpInfo:
    """The registry row of the random op ``name`` made of ``sample`` and ``apply`` (and
    ``run_batch``), its public function written from them: ``name(key, image, *, <options>,
    layout=None)`` runs :func:`run_random_op` and returns the caller's array type
    (:func:`~imgproc.core.array_type.callers_type`).

    The options are the keyword parameters of ``sample``, then those of ``apply`` and
    ``run_batch`` not named yet, with their defaults (a name given two defaults is refused),
    in that order, except that ``max_value`` (the value range, which a pipeline supplies)
    comes last; an option without a default (``random_choice``'s ``ops``) is a positional
    parameter after ``image``. ``hints=None`` follows ``layout`` when ``apply`` or
    ``run_batch`` takes the lowering hints.

    Args:
        name: the op's name: spec name and the function's ``__name__``.
        sample: ``sample(key, shape, *, layout, ...) -> params``.
        apply: ``apply(image, params, *, layout, ...) -> image``, the deterministic op.
        doc: the function's docstring (its examples run as doctests through
            :func:`doctests`).
        run_batch: ``run_batch(params, images, *, layout, ...)``: how a batch runs (ops with
            a strategy); None: ``apply`` under ``vmap``.
        check: checks the function makes on every call before anything is drawn (those a
            one-image call would otherwise skip, or make only later), called with the
            options it names.
        hidden: options of the pieces that the public function does not take (a pipeline
            supplies them).
        module: the function's ``__module__``; None: ``sample``'s.
        **info: the rest of the :class:`~imgproc.core.registry.OpInfo` (``parse``,
            ``targets``, ``checks``, ...).

    Example:
        >>> import inspect, jax.numpy as jnp, numpy as np
        >>> from imgproc.core.keys import random_op, uniform
        >>> def shift_params(key, shape, *, layout, max_shift=1.0):
        ...     return {"shift": uniform(key, -max_shift, max_shift)}
        >>> def apply_shift(image, params, *, layout):
        ...     return jnp.asarray(image) + params["shift"]
        >>> row = random_op("random_shift", shift_params, apply_shift, doc="Add a random shift.")
        >>> row.fn.__name__, str(inspect.signature(row.fn))
        ('random_shift', '(key, image, *, max_shift=1.0, layout=None)')
        >>> row.fn(0, np.zeros((2, 2), np.float32), max_shift=0.0).tolist()
        [[0.0, 0.0], [0.0, 0.0]]
    """
    pieces = [f for f in (sample, apply, run_batch) if f is not None]
    signature = _signature(name, pieces, hidden)
    names = [p.name for p in signature.parameters.values() if p.name not in ("key", "image", "layout")]

    def random_x(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:  # a wrong call, named as Python names it
            first = f"; the key comes first: {name}(key, image, ...)" if "key" in kwargs and args else ""
            raise TypeError(f"{name}() {e}{first}") from None
        bound.apply_defaults()
        given = bound.arguments
        _check_key_first(name, given["key"], given["image"])
        options = {k: given[k] for k in names}
        if check is not None:
            check(**pick_options(check, options))
        return run_random_op(sample, apply, given["key"], given["image"], layout=given["layout"], run_batch=run_batch,
                             **options)

    random_x.__signature__ = signature
    random_x.__name__ = random_x.__qualname__ = name
    random_x.__doc__ = doc
    random_x.__module__ = module or sample.__module__
    random_x.written_by_random_op = True  # functools.wraps carries it to the callers_type wrapper
    return OpInfo(name, callers_type(random_x), sample=sample, apply=apply, run_batch=run_batch, **info)


def _check_key_first(name: str, key, image) -> None:
    """Refuse a random op's call with the image and the key swapped (an image as the key,
    or a key or an int seed as the image), naming the order."""
    def is_key(v):
        return is_int(v) or (hasattr(v, "dtype") and jax.dtypes.issubdtype(v.dtype, jax.dtypes.prng_key))

    def is_legacy_keys(v):  # jax.random.PRNGKey's uint32 pairs
        return getattr(v, "dtype", None) == np.uint32 and np.shape(v)[-1:] == (2,)

    if (np.ndim(key) >= 2 and not is_key(key) and not is_legacy_keys(key)) or is_key(image):
        raise ValueError(f"{name} takes the key first, then the image: {name}(jax.random.key(seed), image, ...) "
                         f"(or an int seed as the key)")


def _signature(name, pieces, hidden) -> inspect.Signature:
    options = {}
    for piece in pieces:
        for p in inspect.signature(piece).parameters.values():
            if p.kind not in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) or p.name in _NOT_OPTIONS or p.name in hidden:
                continue
            if p.name in options and not _same(options[p.name].default, p.default):
                raise ValueError(f"{name}: option {p.name!r} has two defaults, {options[p.name].default!r} "
                                 f"and {p.default!r}")
            options.setdefault(p.name, p.replace(annotation=inspect.Parameter.empty))
    if "max_value" in options:
        options["max_value"] = options.pop("max_value")
    P = inspect.Parameter
    params = [P("key", P.POSITIONAL_OR_KEYWORD), P("image", P.POSITIONAL_OR_KEYWORD)]
    params += [P(n, P.POSITIONAL_OR_KEYWORD) for n, p in options.items() if p.default is P.empty]
    params += [P(n, P.KEYWORD_ONLY, default=p.default) for n, p in options.items() if p.default is not P.empty]
    params.append(P("layout", P.KEYWORD_ONLY, default=None))
    if "hints" not in hidden and any(takes(piece, "hints") for piece in pieces[1:]):
        params.append(P("hints", P.KEYWORD_ONLY, default=None))
    return inspect.Signature(params)


def _same(a, b) -> bool:
    return a is b or (type(a) is type(b) and a == b)


def doctests(ops) -> dict:
    """A module's ``__test__``: the docstrings of the functions in ``ops`` (registry rows)
    written by :func:`random_op`, which doctest's finder would not collect (they are not
    defined in the module), so that their examples run under ``pytest --doctest-modules``."""
    return {info.name: info.fn.__doc__ for info in ops
            if getattr(info.fn, "written_by_random_op", False) and ">>>" in (info.fn.__doc__ or "")}


# --------------------------------------------------------------------------- draws


def bernoulli(key, p):
    """True with probability ``p`` (traced)."""
    return jax.random.uniform(key) < jnp.asarray(p, jnp.float32)


# A sampler that needs several variates draws them all from one hash of its key
# (:func:`draw_words` or :func:`uniforms`) and takes them in turn, not from a key split per
# variate: each threefry call is a loop XLA compiles on its own (benchmarks/NOTES.md,
# "Real datasets": the fourth pass).


def draw_words(key, n: int):
    """``n`` uint32 words from one hash of ``key`` (``jax.random.bits``)."""
    return jax.random.bits(key, (n,), jnp.uint32)


def unit(words):
    """float32 uniforms in [0, 1) from uint32 ``words`` as ``jax.random.uniform`` makes them
    (the top 23 bits as a mantissa): ``unit(draw_words(key, n)) ==
    jax.random.uniform(key, (n,))``."""
    return jax.lax.bitcast_convert_type((words >> 9) | jnp.uint32(0x3F800000), jnp.float32) - 1.0


def uniforms(key, n: int):
    """``n`` float32 uniforms in [0, 1) from one hash of ``key``
    (``jax.random.uniform(key, (n,))``)."""
    return unit(draw_words(key, n))


def scaled(u, lo, hi):
    """Uniforms ``u`` in [0, 1) taken to [``lo``, ``hi``), as ``jax.random.uniform``'s
    ``minval``/``maxval`` (traced or not)."""
    lo, hi = jnp.asarray(lo, jnp.float32), jnp.asarray(hi, jnp.float32)
    return jnp.maximum(lo, u * (hi - lo) + lo)


def below(u, n):
    """int32 in [0, ``n``) from uniforms ``u`` in [0, 1): ``floor(u * n)`` (``n`` traced or
    not, at least 1; uniform to one part in 2**23 / n)."""
    n = jnp.asarray(n, jnp.float32)
    return jnp.minimum(jnp.floor(u * n), n - 1.0).astype(jnp.int32)


# proposals a Gamma draw makes at once (:func:`log_gamma`): each is accepted with
# probability at least 0.95, so all twelve fail with probability below 1e-15
GAMMA_PROPOSALS = 12
GAMMA_UNIFORMS = 2 * GAMMA_PROPOSALS + 1  # the uniforms one Gamma draw reads


def log_gamma(u, shape):
    """``log`` of a Gamma(``shape``, 1) draw (traced ``shape > 0``) from ``u``, a vector of
    :data:`GAMMA_UNIFORMS` independent uniforms in [0, 1): Marsaglia and Tsang's method with
    a fixed number of proposals (:data:`GAMMA_PROPOSALS`, normals by the inverse CDF), the
    first accepted kept; for ``shape < 1`` boosted by ``U ** (1 / shape)`` (in logs: no
    underflow at small shapes). ``jax.random.gamma`` draws the same distribution with a
    rejection ``while_loop`` and a key split per step, which took seconds to compile in every
    program holding it; here all the variates come from one draw."""
    k = jnp.asarray(shape, jnp.float32)
    tiny = jnp.finfo(jnp.float32).tiny
    boosted = k < 1.0
    d = jnp.where(boosted, k + 1.0, k) - 1.0 / 3.0
    c = 1.0 / jnp.sqrt(9.0 * d)
    n = GAMMA_PROPOSALS
    x = jnp.sqrt(2.0) * jax.lax.erf_inv(jnp.clip(2.0 * u[:n] - 1.0, -1.0 + 1e-7, 1.0 - 1e-7))
    v = (1.0 + c * x) ** 3
    log_v = jnp.log(jnp.where(v > 0, v, 1.0))
    accepted = (v > 0) & (jnp.log(jnp.maximum(u[n:2 * n], tiny)) < 0.5 * x * x + d - d * v + d * log_v)
    log_g = jnp.log(d) + jnp.where(accepted.any(), log_v[jnp.argmax(accepted)], 0.0)
    return log_g + jnp.where(boosted, jnp.log(jnp.maximum(u[2 * n], tiny)) / k, 0.0)


def beta(key, a, b):
    """A float32 Beta(``a``, ``b``) draw (traced ``a, b > 0``): ``G_a / (G_a + G_b)`` of two
    Gamma draws (:func:`log_gamma`), from one ``jax.random.uniform`` call."""
    u = jax.random.uniform(key, (2, GAMMA_UNIFORMS), jnp.float32)
    return beta_from(u, a, b)


def beta_from(u, a, b):
    """:func:`beta` from ``u``, ``(..., 2, GAMMA_UNIFORMS)`` uniforms in [0, 1): one draw for
    each leading index, ``a`` and ``b`` broadcast to those indices. All the Gamma draws are
    one vectorised :func:`log_gamma` (fewer loops to compile than a call per draw)."""
    lead = u.shape[:-2]
    a, b = (jnp.broadcast_to(jnp.asarray(v, jnp.float32), lead).reshape(-1) for v in (a, b))
    u = u.reshape(-1, 2, GAMMA_UNIFORMS)
    logs = jax.vmap(log_gamma)(u.reshape(-1, GAMMA_UNIFORMS), jnp.stack([a, b], -1).reshape(-1)).reshape(-1, 2)
    return jax.nn.sigmoid(logs[:, 0] - logs[:, 1]).reshape(lead)


def dirichlet(key, alpha):
    """A float32 Dirichlet(``alpha``) draw (``alpha`` a 1-D traced array, each > 0): Gamma
    draws (:func:`log_gamma`) normalised, from one ``jax.random.uniform`` call."""
    alpha = jnp.asarray(alpha, jnp.float32)
    return dirichlet_from(uniforms(key, alpha.shape[0] * GAMMA_UNIFORMS), alpha)


def dirichlet_from(u, alpha):
    """:func:`dirichlet` from ``u``, ``len(alpha) * GAMMA_UNIFORMS`` uniforms in [0, 1)."""
    alpha = jnp.asarray(alpha, jnp.float32)
    return jax.nn.softmax(jax.vmap(log_gamma)(u.reshape(alpha.shape[0], GAMMA_UNIFORMS), alpha))


def uniform(key, lo, hi):
    """A float32 scalar uniform in ``[lo, hi)`` (traced bounds)."""
    return jax.random.uniform(key, (), jnp.float32, jnp.asarray(lo, jnp.float32), jnp.asarray(hi, jnp.float32))


def maybe(cond, fn, x):
    """``fn(x)`` if ``cond`` else ``x``, as ``lax.cond``: a real branch for one image (and in
    a per-image ``lax.map``), a select under ``vmap``."""
    return jax.lax.cond(cond, fn, lambda x: x, x)
