"""The key rule and how a random op runs on its own.

Key rule (one function, :func:`stage_key`): image ``index`` of a batch draws from
``fold_in(key, index)``; inside a pipeline, stage ``s`` of that image draws from
``fold_in(fold_in(key, index), s)``. So a sample's result depends only on the key and its
index, never on the batch size or split, the device count or the worker count.

A random op is ``sample`` (draws a pytree of parameters for one image) and ``apply`` (the
deterministic op with them), see :mod:`imgproc.core.registry`. :func:`run_random_op` is the
body of every public ``random_x(key, image, ...)``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from imgproc.core.devices import batch_partition, freeze, map_batch
from imgproc.core.eager import run_compiled
from imgproc.core.images import check_image
from imgproc.core.registry import pick_options
from imgproc.core.validate import check_key

__all__ = ["BATCH_LAYOUTS", "bernoulli", "image_layout", "maybe", "run_random_op", "sample_batch", "stage_key", "uniform"]

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
    floats as arguments (:mod:`imgproc.core.eager`): run op by op, a batch of 256 images of
    224x224x3 took seconds (benchmarks/NOTES.md, "Hashed noise")."""
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


# --------------------------------------------------------------------------- draws


def bernoulli(key, p):
    """True with probability ``p`` (traced)."""
    return jax.random.uniform(key) < jnp.asarray(p, jnp.float32)


def uniform(key, lo, hi):
    """A float32 scalar uniform in ``[lo, hi)`` (traced bounds)."""
    return jax.random.uniform(key, (), jnp.float32, jnp.asarray(lo, jnp.float32), jnp.asarray(hi, jnp.float32))


def maybe(cond, fn, x):
    """``fn(x)`` if ``cond`` else ``x``, as ``lax.cond``: a real branch for one image (and in
    a per-image ``lax.map``), a select under ``vmap``."""
    return jax.lax.cond(cond, fn, lambda x: x, x)
