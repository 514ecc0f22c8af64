"""Child Pythons that import imgproc the way this process did: this interpreter
(``sys.executable``), with the folder this process imported the package from first on
``PYTHONPATH``. However the package is laid out (installed, an editable checkout, a
folder of links on a machine without an install, as benchmarks/gpu_all.sh makes), the
child then imports the same code; a path only this process added to ``sys.path`` (pytest's
root, ``python -m``'s working folder) is not inherited otherwise."""

from __future__ import annotations

import os
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
