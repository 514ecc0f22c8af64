"""Child Pythons that import imgproc the way this process did: this interpreter
(``sys.executable``), with the folder this process imported the package from first on
``PYTHONPATH``. However the package is laid out (installed, an editable checkout, a
folder of links on a machine without an install, as benchmarks/gpu_all.sh makes), the
child then imports the same code; a path only this process added to ``sys.path`` (pytest's
root, ``python -m``'s working folder) is not inherited otherwise."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path


def package_root() -> str:
    """The ``sys.path`` entry this process imported ``imgproc`` from: the folder holding it
    (not resolved: a folder of links stays the folder of links)."""
    import imgproc

    return str(Path(os.path.abspath(imgproc.__file__)).parent.parent)


def python_env(base=None, **overrides) -> dict:
    """``base`` (default ``os.environ``) with ``overrides``, and ``PYTHONPATH`` the package's
    folder, then what it held. ``PYTHONSAFEPATH`` is set (Python 3.11+): ``python -m`` and
    ``python -c`` then do not put the working folder first on ``sys.path``, where a
    checkout's ``imgproc/`` (which lacks ``imgproc.kernels`` and ``imgproc.cli`` until it is
    installed) would shadow the package this process imported."""
    env = dict(os.environ if base is None else base, **overrides)
    paths = [package_root(), *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONSAFEPATH"] = "1"
    return env


def run_suite_part(test_file: str, env: dict, *, deselect: str, min_passed: int, markexpr: str = "",
                   timeout: float = 1800) -> None:
    """Run ``test_file`` again in a child pytest with ``env`` (from the repository root, no
    plugins' caches, no xdist, the caller's ``-m`` when given), leaving out ``deselect`` (the
    test that starts the child), and fail with the child's output unless it passed at
    least ``min_passed`` tests and skipped, failed or erred none."""
    root = Path(__file__).resolve().parents[1]
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-o", "addopts=",
           str(Path(test_file).resolve().relative_to(root)), "-k", f"not {deselect}"]
    if markexpr:
        cmd += ["-m", markexpr]
    run = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True, timeout=timeout)
    tail = run.stdout[-8000:] + run.stderr[-3000:]
    assert run.returncode == 0, tail
    passed = re.search(r"(\d+) passed", run.stdout)
    assert passed and int(passed.group(1)) >= min_passed, tail
    assert not re.search(r"\d+ (skipped|failed|error)", run.stdout), tail
