"""`pip install .` installs imgproc (with imgproc.kernels and imgproc.cli) and nothing else
at the top level: `kernels` and `cli` are names taken on PyPI. The docs ship inside it
(`imgproc.docs`), for `imgproc docs`."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_pip_install_layout(tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(ROOT)],
        check=True,
        capture_output=True,
    )
    top = {p.name for p in target.iterdir() if not p.name.endswith((".dist-info", ".egg-info")) and p.name != "bin"}
    assert top == {"imgproc"}, top
    assert (target / "imgproc" / "kernels" / "__init__.py").exists()
    assert (target / "imgproc" / "cli" / "__init__.py").exists()
    res = subprocess.run(
        [sys.executable, "-c", "import imgproc.kernels, imgproc.cli, imgproc; print(imgproc.__file__)"],
        cwd=tmp_path, env={"PYTHONPATH": str(target)}, capture_output=True, text=True,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().startswith(str(target))
    for page in ("cli.md", "augment.md"):
        assert (target / "imgproc" / "docs" / page).exists(), page
    res = subprocess.run(
        [sys.executable, "-c", "from imgproc.cli import cli; cli(['docs', 'augment'])"],
        cwd=tmp_path, env={"PYTHONPATH": str(target)}, capture_output=True, text=True,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("# Training augmentation")
