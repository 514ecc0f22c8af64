"""How an :class:`imgproc.Pipeline` runs its random stages on a batch.

A maximal run of consecutive random stages is executed either

* **fused, per image** (``lax.map`` over the batch, every stage of the run applied to one
  image before the next image starts): used when the run's strategy is ``"map"``, the
  default on CPU (:func:`imgproc.default_strategy`). Each image stays in cache through
  the whole run and ``random_choice``/``random_apply`` are real conditionals, so only the
  chosen branch runs; or
* **stage by stage, over the whole batch**: plain random ops under ``vmap``, and
  ``random_choice``/``random_apply`` with their own ``"select"`` or ``"group"`` strategy.

A run is fused when every ``random_choice``/``random_apply`` stage in it resolves to
``"map"`` (its ``strategy`` option, or the backend default when it has none) and, for a
run without such stages, when the backend default is ``"map"``. Either way stage ``s`` of
image ``i`` gets the key ``fold_in(fold_in(key, indices[i]), s)``, so the results are the
same (up to float rounding of vectorised code).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from imgproc._arrays import to_output
from imgproc._augment_base import pipeline_dtype
from imgproc._augment_choice import default_strategy
from imgproc._convolution import image_loop


# Random ops that only move pixels (exact in any dtype): a fused run applies them before
# casting to float32, on 1-byte pixels when the input is uint8.
KEEPS_DTYPE = frozenset({"random_flip_left_right", "random_flip_up_down", "random_rot90", "random_crop"})


def _strategy(stage):
    if getattr(stage.info.fn, "apply_batch", None) is None:
        return None
    return stage.options.get("strategy") or default_strategy()


def _is_fused(stages, run) -> bool:
    chosen = {_strategy(stages[s]) for s in run} - {None}
    return chosen == {"map"} or (not chosen and default_strategy() == "map")


def _random_run(stages, first):
    """The maximal run of consecutive random stages starting at ``stages[first]``."""
    end = first
    while end < len(stages) and stages[end].info.random:
        end += 1
    return range(first, end)


def random_runs(stages):
    """The maximal runs of consecutive random stages, as ranges of stage indices."""
    runs, s = [], 0
    while s < len(stages):
        if stages[s].info.random:
            runs.append(_random_run(stages, s))
            s = runs[-1].stop
        else:
            s += 1
    return runs


def loops_over_images(stages) -> bool:
    """Whether a batch through ``stages`` runs some of them in a per-image ``lax.map``
    (a fused run, see :func:`run_random`). XLA:CPU runs such a loop on one core."""
    return any(_is_fused(stages, run) for run in random_runs(stages))


def run_random(stages, first, key, indices, x, *, layout):
    """Run the random stages of a batch ``x`` starting at ``stages[first]`` (``layout`` is
    the per-image layout). ``x`` is float32, or the input itself when ``first == 0``.
    Returns ``(x, next_stage_index)``; ``x`` has the output dtype when the run ended the
    pipeline fused, else float32."""
    run = _random_run(stages, first)
    end = run.stop
    if _is_fused(stages, run):
        # x may still be the input dtype (first stage: the cast happens per image, in cache)
        # and the last run writes the output dtype per image (rounded and saturated once,
        # as the pipeline's final cast would).
        out_dtype = pipeline_dtype() if end == len(stages) else None

        def body(args):
            i, image = args
            k = jax.random.fold_in(key, i)
            with image_loop():  # auto lowerings for one image in a loop
                return _one_image(image, k)

        def _one_image(image, k):
            for s in run:
                if stages[s].info.name not in KEEPS_DTYPE:  # pure moves run on the input dtype
                    image = image.astype(jnp.float32)
                image = stages[s](image, jax.random.fold_in(k, s), layout=layout)
            return image.astype(jnp.float32) if out_dtype is None else to_output(image, out_dtype)

        return jax.lax.map(body, (indices, x)), end
    x = x.astype(jnp.float32)
    s, stage = first, stages[first]
    keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.fold_in(key, i), s))(indices)
    batch_fn = getattr(stage.info.fn, "apply_batch", None)
    if batch_fn is not None:
        return batch_fn(keys, x, layout=layout, **stage.options), first + 1
    return jax.vmap(lambda k, im: stage(im, k, layout=layout))(keys, x), first + 1
