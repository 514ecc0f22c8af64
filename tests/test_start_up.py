"""Start-up (issue 15 item 4, issue 17 item 1): ``import imgproc`` and the command's entry
module import neither NumPy nor JAX, so the command installs its signal handlers before
the heavy imports, and a Ctrl-C or SIGTERM during them ends the command with 130."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import imgproc
from imgproc.core.registry import registered_ops


def _modules_after(code: str) -> set:
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sys.modules))"],
                         capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize("code", ["import imgproc", "import imgproc.cli", "from imgproc.cli import main"])
def test_the_package_and_the_entry_point_import_neither_numpy_nor_jax(code):
    loaded = _modules_after(code)
    assert not {"jax", "numpy", "PIL", "scipy"} & loaded


def test_the_first_public_name_loads_every_family():
    loaded = _modules_after("import imgproc\nimgproc.gaussian_blur")
    assert {"jax", "imgproc.filters.linear", "imgproc.restoration", "imgproc.augment", "imgproc.pipeline.pipeline"} <= loaded


def _package_ops():
    """The ops the package registers (another test may have registered one of its own)."""
    from imgproc.core.registry import lookup

    return [op for op in registered_ops() if lookup(op).fn.__module__.startswith("imgproc.")]


def test_the_lazy_package_offers_exactly_the_api():
    """The API is declared once, in imgproc/__init__.py: every registered op, the names of
    its _NAMES table and the submodules of _MODULES; nothing else."""
    public = imgproc.__all__  # loads every op family
    declared = set(_package_ops()) | set(imgproc._MODULES)
    declared |= {entry.partition("=")[0] for entry in sum(imgproc._NAMES.values(), ())}
    assert sorted(public) == sorted(declared)
    for name in imgproc.__all__:
        assert getattr(imgproc, name) is not None
    assert set(imgproc.__all__) <= set(dir(imgproc))
    namespace = {}
    exec("from imgproc import *", namespace)
    assert set(imgproc.__all__) <= set(namespace)
    assert isinstance(imgproc.__version__, str)
    with pytest.raises(AttributeError, match="no attribute 'gausian_blur'"):
        imgproc.gausian_blur


def test_every_op_is_public_as_its_registered_function():
    from imgproc.core.registry import lookup

    imgproc.__all__  # noqa: B018 - loads every op family
    for op in _package_ops():
        assert getattr(imgproc, op) is lookup(op).fn, op


def test_importing_a_public_submodule_alone_works():
    out = subprocess.run([sys.executable, "-c", "from imgproc import presets as p\nimport numpy as np\n"
                          "print(p.denoise()(np.zeros((8, 8), np.uint8)).shape)"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "(8, 8)", out.stderr


def _handles_sigterm(pid: int) -> bool:
    """Whether process ``pid`` has a handler for SIGTERM (Python installs none by default:
    the bit appears when :func:`imgproc.cli.main` installs its handlers)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = int(next(line for line in status.splitlines() if line.startswith("SigCgt:")).split()[1], 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the handler mask from /proc")
@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_while_jax_is_imported_ends_with_130(signame, tmp_path):
    """The window issue 17 left open: a signal in the first second, while JAX is imported.
    From the moment the handlers are in (read from /proc), a signal at any moment ends the
    command with 130, one line and no traceback, whatever it was doing."""
    exe = Path(sys.executable).with_name("imgproc")
    src = tmp_path / "in.png"
    Image.fromarray(np.full((40, 50, 3), 90, np.uint8)).save(src)
    env = dict(os.environ, IMGPROC_CACHE_DIR="off")
    rng = random.Random(1)
    interrupted = 0
    for attempt in range(4):
        out = tmp_path / f"out{attempt}.png"
        proc = subprocess.Popen([str(exe), "denoise", str(src), str(out), "--method", "chapter"],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while not _handles_sigterm(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(rng.uniform(0.0, 0.3))  # JAX's import takes about half a second
        proc.send_signal(getattr(signal, signame))
        _, err = proc.communicate(timeout=120)
        text = err.decode()
        if proc.returncode == 0:  # finished before the signal (a slow machine's luck)
            continue
        assert proc.returncode == 130, text[-500:]
        assert "Traceback" not in text and "Fatal Python error" not in text
        assert "interrupted" in text
        assert not out.exists() and not list(tmp_path.glob("*.imgproc-tmp"))
        interrupted += 1
    assert interrupted >= 2  # the signals did arrive before the command finished
