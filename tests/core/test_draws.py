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
