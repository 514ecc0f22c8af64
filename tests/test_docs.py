"""Every Python code block of the README and of docs/*.md runs as written (issue 17, item
16's Python part)."""

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
DOC_BLOCKS = [(doc.name, i, block) for doc in sorted((ROOT / "docs").glob("*.md"))
              for i, block in enumerate(re.findall(r"```python\n(.*?)```", doc.read_text(), re.S))]


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_block_runs(index, tmp_path, monkeypatch):
    (tmp_path / "sample_images").symlink_to(ROOT / "sample_images")
    monkeypatch.chdir(tmp_path)  # blocks write files (out.jpg): into a fresh folder
    exec(compile(BLOCKS[index], f"README.md python block {index}", "exec"), {"__name__": "__readme__"})


@pytest.mark.parametrize("doc, index, block", DOC_BLOCKS, ids=[f"{d}-{i}" for d, i, _ in DOC_BLOCKS])
def test_docs_python_block_runs(doc, index, block, tmp_path, monkeypatch):
    (tmp_path / "sample_images").symlink_to(ROOT / "sample_images")
    monkeypatch.chdir(tmp_path)
    exec(compile(block, f"docs/{doc} python block {index}", "exec"), {"__name__": "__docs__"})
