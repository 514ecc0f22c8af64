"""How an :class:`imgproc.Pipeline` runs its random stages on a batch.

Each random stage draws its parameters (``Stage.sample``) from the key rule of
:func:`imgproc.core.keys.stage_key`, or takes them from the caller (a replay), then applies
them (``Stage.apply``). A maximal run of consecutive random stages is executed either

* **fused, per image** (``lax.map`` over the batch, every stage of the run drawn and
  applied to one image before the next image starts): used when the run's strategy is
  ``"map"``, the default on CPU (:func:`imgproc.default_strategy`). Each image stays in
  cache through the whole run and ``random_choice``/``random_apply`` are real
  conditionals, so only the chosen branch runs. The run's final cast (to float32, or to
  the pipeline's output dtype) is the last stage's ``finish``, which a conditional
  applies inside each branch (:meth:`imgproc.core.registry.Stage.apply`); or
* **stage by stage, over the whole batch**: parameters drawn under ``vmap``, plain random
  ops applied under ``vmap``, and ``random_choice``/``random_apply`` with their own
  ``"select"`` or ``"group"`` strategy (their ``run_batch``).

A run is fused when every stage with a strategy in it resolves to ``"map"`` (its
``strategy`` option, or the backend default when it has none) and, for a run without such
stages, when the backend default is ``"map"``. Either way the results are the same (up to
float rounding of vectorised code), and so are the parameters.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from imgproc.augment.choice import default_strategy
from imgproc.core.arrays import to_output
from imgproc.core.keys import stage_key
from imgproc.core.registry import IN_LOOP

__all__ = ["fused_body", "fused_run", "loops_over_images", "random_runs", "run_random"]

# Random ops that only move pixels (exact in any dtype): a fused run applies them before
# casting to float32, on 1-byte pixels when the input is uint8.
KEEPS_DTYPE = frozenset({"random_flip_left_right", "random_flip_up_down", "random_rot90", "random_crop"})


def _strategy(stage):
    if stage.info.run_batch is None:
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


def fused_run(stages, first):
    """The run of random stages from ``stages[first]`` when it runs fused, per image
    (:func:`run_random`); None otherwise (not a random stage, or a run run stage by stage)."""
    if first >= len(stages) or not stages[first].info.random:
        return None
    run = _random_run(stages, first)
    return run if _is_fused(stages, run) else None


def fused_body(stages, first, *, key, layout, max_value, out_dtype):
    """The per-image function of the fused run from ``stages[first]`` (:func:`fused_run`):
    ``body(i, image, given) -> (image, drawn)`` for image ``image`` of index ``i`` (traced),
    ``given`` the run's replayed parameters (a tuple, one per stage; None to draw them). The
    image comes out float32, or ``out_dtype`` when the run ends the pipeline."""
    run = _random_run(stages, first)
    end = run.stop
    fused_dtype = out_dtype if end == len(stages) else None

    def finish(image):
        return image.astype(jnp.float32) if fused_dtype is None else to_output(image, fused_dtype)

    def body(i, image, given):
        drawn = []
        for j, s in enumerate(run):
            if stages[s].info.name not in KEEPS_DTYPE:  # pure moves run on the input dtype
                image = image.astype(jnp.float32)
            p = stages[s].sample(stage_key(key, i, s), image.shape, layout=layout, max_value=max_value) \
                if given is None else given[j]
            # the run's final cast goes into the last stage (inside a conditional's
            # branches, where it fuses with the branch's last loop)
            image = stages[s].apply(image, p, layout=layout, max_value=max_value, hints=IN_LOOP,
                                    finish=finish if s == end - 1 else None)
            drawn.append(p)
        return image, tuple(drawn)

    return body


def run_random(stages, first, x, *, key, indices, params, layout, max_value, out_dtype):
    """Run the random stages of a batch ``x`` starting at ``stages[first]`` (``layout`` is
    the per-image layout). ``x`` is float32, or the input itself when ``first == 0``.
    ``params``: the replayed parameters of every stage (batched; None to draw them from
    ``key`` and ``indices``). ``out_dtype``: the pipeline's output dtype when the run
    ends the pipeline (a fused run then writes it per image, rounded and saturated once,
    as the pipeline's final cast would), else None.

    Returns ``(x, next_stage_index, run_params)``: ``x`` has ``out_dtype`` when the run
    ended the pipeline fused, else float32; ``run_params`` the parameters of each stage of
    the run (batched)."""
    run = _random_run(stages, first)
    end = run.stop
    if _is_fused(stages, run):
        body = fused_body(stages, first, key=key, layout=layout, max_value=max_value, out_dtype=out_dtype)
        given = None if params is None else tuple(params[s] for s in run)
        y, drawn = jax.lax.map(lambda args: body(*args), (indices, x, given))
        return y, end, drawn
    x = x.astype(jnp.float32)
    stage = stages[first]
    if params is None:
        p = jax.vmap(lambda i: stage.sample(stage_key(key, i, first), x.shape[1:], layout=layout,
                                            max_value=max_value))(indices)
    else:
        p = params[first]
    y = stage.run_batch(p, x, layout=layout, max_value=max_value)
    return y, first + 1, (p,)
