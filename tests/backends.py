"""Tracing another backend's programs on this one: the library's backend choices read
``jax.default_backend()``, so with it reporting ``"gpu"`` a traced program is the one a GPU
would run (the lowering plans, strategies, barriers), run or inspected here."""

from __future__ import annotations

import contextlib

import pytest


@contextlib.contextmanager
def reported_backend(name: str):
    """``jax.default_backend()`` reports ``name`` inside the block. JAX's caches of traced
    programs are cleared on the way in and out: a program traced for the real backend must
    not stand in for ``name``'s, nor ``name``'s for the real backend's in later tests."""
    import jax

    if name == jax.default_backend():
        yield name
        return
    jax.clear_caches()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jax, "default_backend", lambda: name)
        try:
            yield name
        finally:
            jax.clear_caches()
