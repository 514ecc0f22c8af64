from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_images"


@pytest.fixture(autouse=True)
def _doctest_cwd(doctest_namespace, monkeypatch):
    # doctests refer to sample_images/ relative to the repository root
    monkeypatch.chdir(ROOT)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def samples():
    return SAMPLES
