"""Every registered op, from one table (kornia's ``BaseTester``, run over the registry): jit
equals eager, a batch equals a loop over its images, the dtype is kept, and bad arguments
are refused with a ``ValueError`` before anything runs. Reference parity is per family, in
the families' own tables (tests/cases.py for the filters; tests/restoration/,
tests/augment/ for the others).

The checks run on float32 images (an integer result may differ by one level where the
rounding order differs; integer dtypes are in each family's table). A random op called on
a batch gives image ``i`` the key ``fold_in(key, i)``; on one image it uses the key as it is
(the key rule, docs/guide.md).
"""

import jax
import numpy as np
import pytest

import imgproc
from imgproc.core.registry import lookup
from op_examples import EXAMPLE_OPTIONS

OPS = sorted(imgproc.registered_ops())
# options in the float range where tests/op_examples.py gives uint8 levels
FLOAT_OPTIONS = {"solarize": {"threshold": 0.4}}


def _batch(name):
    shape = (2, 12, 12, 3) if "rot90" in name else (2, 12, 14, 3)
    return np.random.default_rng(5).random(shape, dtype=np.float32)


def _call(name, key, x, **options):
    info = lookup(name)
    opts = {**EXAMPLE_OPTIONS.get(name, {}), **FLOAT_OPTIONS.get(name, {}), **options}
    return info.fn(key, x, **opts) if info.random else info.fn(x, **opts)


def _close(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", OPS)
def test_jit_equals_eager_and_the_batch_equals_a_loop(name):
    x = _batch(name)
    key = jax.random.key(3)
    eager = _call(name, key, x)
    assert isinstance(eager, np.ndarray) and eager.dtype == np.float32  # NumPy in, NumPy out
    jitted = jax.jit(lambda k, a: _call(name, k, a))(key, x)
    _close(jitted, eager)
    for i in range(x.shape[0]):
        _close(_call(name, jax.random.fold_in(key, i), x[i]), eager[i])


@pytest.mark.parametrize("name", OPS)
def test_bad_arguments_are_refused(name):
    x = _batch(name)
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="layout"):
        _call(name, key, x, layout="HWCN")
    bad = x.copy()
    bad[0, 1, 2, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        _call(name, key, bad)
    with pytest.raises(ValueError, match="dtype"):
        _call(name, key, x.astype(np.int8))
