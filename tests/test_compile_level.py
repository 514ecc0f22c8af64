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

import numpy as np
import pytest

from subprocesses import python_env


# run here (the suite's level) and in a child at level 3: the same source in both
_PROBE = """
import numpy as np, jax
a = np.full(64, 1 + 2 ** -12, np.float32)
c = np.full(64, -(1 + 2 ** -11), np.float32)
multiply_add = np.asarray(jax.jit(lambda a, b, c: a * b + c)(a, a, c))
"""


@pytest.mark.cpu_only("the suite's LLVM level (tests/conftest.py) is set on CPU only")
def test_the_suites_compile_level_gives_the_values_of_users_programs():
    """tests/conftest.py compiles the suite at LLVM level 1 where users' programs get XLA's
    default, 3. Their values agree while both contract ``a * b + c`` into an FMA (level 0
    does not): ``a * a = 1 + 2**-11 + 2**-24`` rounds to ``1 + 2**-11`` first and the sum
    is 0; fused, it is ``2**-24``. Here in the suite's process, and in a child at level 3."""
    if "--xla_backend_optimization_level=" not in os.environ.get("XLA_FLAGS", ""):
        pytest.skip("the suite compiles at XLA's default level here (an accelerator plugin is installed)")
    here = {}
    exec(_PROBE, here)
    fused = np.full(64, 2.0 ** -24, np.float32)
    np.testing.assert_array_equal(here["multiply_add"], fused)
    flags = re.sub(r"--xla_backend_optimization_level=\d", "--xla_backend_optimization_level=3", os.environ["XLA_FLAGS"])
    users = subprocess.run([sys.executable, "-c", _PROBE + "print(multiply_add.tobytes().hex())"],
                           env=python_env(JAX_PLATFORMS="cpu", XLA_FLAGS=flags), capture_output=True, text=True,
                           check=True).stdout
    assert users.strip() == fused.tobytes().hex()
