"""Reading traced programs in tests: which primitives a call's jaxpr holds."""

from __future__ import annotations

import jax
import jax.extend.core


def equations(jaxpr, primitive: str):
    """Every equation of ``primitive`` (a name: ``"cond"``, ``"concatenate"``) in ``jaxpr``
    and in the jaxprs nested in it (jit, map, cond branches), in program order."""
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == primitive:
            found.append(eqn)
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            found += equations(sub, primitive)
    return found
