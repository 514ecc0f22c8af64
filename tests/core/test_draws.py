"""The distributions the random ops draw from without ``jax.random``'s samplers
(imgproc/core/keys.py): Beta and Dirichlet from Gamma draws with a fixed number of
proposals, checked against scipy.stats by Kolmogorov-Smirnov tests, and compiled without
a loop."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from imgproc.core.keys import beta, dirichlet

N = 4000


@pytest.mark.parametrize("a,b", [(0.2, 0.2), (1.0, 1.0), (2.5, 0.7), (40.0, 3.0)])
def test_beta_draws_follow_the_beta_distribution(a, b):
    keys = jax.random.split(jax.random.key(0), N)
    draws = np.asarray(jax.jit(jax.vmap(lambda k: beta(k, a, b)))(keys))
    assert np.isfinite(draws).all() and draws.min() >= 0 and draws.max() <= 1
    assert stats.kstest(draws, stats.beta(a, b).cdf).pvalue > 1e-3


def test_dirichlet_marginals_are_beta_and_sum_to_one():
    alpha = jnp.asarray([0.5, 1.0, 3.0])
    keys = jax.random.split(jax.random.key(1), N)
    draws = np.asarray(jax.jit(jax.vmap(lambda k: dirichlet(k, alpha)))(keys))
    np.testing.assert_allclose(draws.sum(axis=1), 1.0, atol=1e-5)
    for i, a in enumerate(np.asarray(alpha)):
        assert stats.kstest(draws[:, i], stats.beta(a, float(alpha.sum()) - a).cdf).pvalue > 1e-3


def test_the_draws_hold_no_loop():
    """jax.random.gamma's rejection while_loop took seconds to compile in each program."""
    jaxpr = str(jax.make_jaxpr(lambda k: (beta(k, 0.2, 0.2), dirichlet(k, jnp.ones(3))))(jax.random.key(0)))
    assert "while" not in jaxpr


def test_uniforms_and_words_are_jax_randoms_own():
    """The helpers the samplers draw with (imgproc.core.keys) give jax.random's numbers."""
    from imgproc.core.keys import draw_words, scaled, uniforms, unit

    key = jax.random.key(3)
    want = jax.random.uniform(key, (9,))
    np.testing.assert_array_equal(unit(draw_words(key, 9)), want)
    np.testing.assert_array_equal(uniforms(key, 9), want)
    # the same formula; jax.random's compiled form may fuse it into a multiply-add (1 ulp)
    np.testing.assert_allclose(scaled(want, -2.0, 5.0), jax.random.uniform(key, (9,), minval=-2.0, maxval=5.0),
                               rtol=2e-7, atol=0)


@pytest.mark.parametrize("n", [1, 4, 14, 481])
def test_below_is_uniform_over_its_range(n):
    from imgproc.core.keys import below, uniforms

    draws = np.asarray(jax.jit(lambda k, m: below(uniforms(k, N * 4), m))(jax.random.key(n), n))
    assert draws.dtype == np.int32 and draws.min() >= 0 and draws.max() <= n - 1
    if n > 1:
        counts = np.bincount(draws, minlength=n)
        assert stats.chisquare(counts).pvalue > 1e-3


def _sampled_ops():
    import imgproc
    from imgproc.core.registry import lookup

    # random_choice and random_apply hand each sub-stage a key of its own (a split)
    return [n for n in imgproc.registered_ops()
            if lookup(n).sample is not None and n not in ("random_choice", "random_apply")]


@pytest.mark.parametrize("name", _sampled_ops())
def test_a_sampler_draws_from_one_hash_of_its_key(name):
    """Every random op's parameters come from one threefry call on its key: each call is a
    loop XLA compiles on its own (docs/augment.md, "Rules"; a sampler that split its key
    per number made the recipe's draws a quarter of its compilation)."""
    from imgproc.core.registry import lookup

    jaxpr = str(jax.make_jaxpr(lambda k: lookup(name).sample(k, (32, 32, 3), layout="HWC"))(jax.random.key(0)))
    assert jaxpr.count("random_bits") == 1 and "random_split" not in jaxpr and "random_fold_in" not in jaxpr
