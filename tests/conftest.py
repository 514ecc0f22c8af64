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


@pytest.fixture
def strict_promotion():
    """JAX's strict dtype promotion for a test: an implicit uint8 -> float32 (or float16 ->
    float32) promotion inside an op is then an error, so every cast must be explicit."""
    import jax

    with jax.numpy_dtype_promotion("strict"):
        yield


@pytest.fixture
def compilations():
    """``with compilations() as c: ...``: ``c`` lists one entry per XLA compilation made
    inside the block (JAX's backend-compile event)."""
    import contextlib

    import jax
    from jax._src.dispatch import BACKEND_COMPILE_EVENT

    @contextlib.contextmanager
    def count():
        seen = []

        def listener(event, duration, **kwargs):
            if event == BACKEND_COMPILE_EVENT:
                seen.append(duration)

        jax.monitoring.register_event_duration_secs_listener(listener)
        try:
            yield seen
        finally:
            jax.monitoring.unregister_event_duration_listener(listener)

    return count


# The fast tier (`make test-fast`): every test but those listed in tests/slow_tests.txt, the
# slowest of a whole run (`make slow-tests` measures the suite and writes the list again).
SLOW_TESTS = Path(__file__).with_name("slow_tests.txt")


def pytest_collection_modifyitems(config, items):
    slow = set(SLOW_TESTS.read_text().splitlines()) if SLOW_TESTS.exists() else set()
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
