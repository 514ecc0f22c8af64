"""The suite's compile level gives the values users' programs give.

tests/conftest.py compiles the suite on CPU with LLVM's optimization level 1, where users'
programs get XLA's default, 3 (docs/architecture.md, "The test suite's budget"). Their
values agree while both contract a multiply and an add into an FMA; level 0 does not, and
its values differ (benchmarks/NOTES.md, "The test suite's time on a cold machine").
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import jax
import numpy as np
import pytest

from subprocesses import python_env


def _multiply_add(a, b, c):
    return a * b + c


_USERS_LEVEL = """
import numpy as np, jax
a = np.full(64, 1 + 2 ** -12, np.float32)
c = np.full(64, -(1 + 2 ** -11), np.float32)
print(np.asarray(jax.jit(lambda a, b, c: a * b + c)(a, a, c)).tobytes().hex())
"""


@pytest.mark.cpu_only("the suite's LLVM level (tests/conftest.py) is set on CPU only")
def test_the_suites_compile_level_gives_the_values_of_users_programs():
    """tests/conftest.py compiles the suite at LLVM level 1 where users' programs get XLA's
    default, 3. Their values agree while both contract ``a * b + c`` into an FMA (level 0
    does not): ``a * a = 1 + 2**-11 + 2**-24`` rounds to ``1 + 2**-11`` first and the sum
    is 0; fused, it is ``2**-24``. Here in the suite's process, and in a child at level 3."""
    if "--xla_backend_optimization_level=" not in os.environ.get("XLA_FLAGS", ""):
        pytest.skip("the suite compiles at XLA's default level here (an accelerator plugin is installed)")
    a = np.full(64, 1 + 2 ** -12, np.float32)
    here = np.asarray(jax.jit(_multiply_add)(a, a, np.full(64, -(1 + 2 ** -11), np.float32)))
    fused = np.full(64, 2.0 ** -24, np.float32)
    np.testing.assert_array_equal(here, fused)
    flags = re.sub(r"--xla_backend_optimization_level=\d", "--xla_backend_optimization_level=3", os.environ["XLA_FLAGS"])
    users = subprocess.run([sys.executable, "-c", _USERS_LEVEL], env=python_env(JAX_PLATFORMS="cpu", XLA_FLAGS=flags),
                           capture_output=True, text=True, check=True).stdout
    assert users.strip() == fused.tobytes().hex()
