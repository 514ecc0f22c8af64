from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_images"


# The suite compiles through the library's persistent compilation cache, as the commands do
# (imgproc.core.program_cache: ~/.cache/imgproc/jax, IMGPROC_CACHE_DIR another folder, or
# "off"), in every process of a run from its start: the two xdist workers, the commands
# the tests start and the x64 / four-device child processes read back a program another
# one compiled, in this run or an earlier one (a run's time is nearly all compiling).
# A program read back is the one XLA would build (the key holds the program, the flags
# and JAX's version), and counting compilations is unchanged: JAX's backend-compile event
# (the `compilations` fixture) covers a program read from the cache too.
# `IMGPROC_CACHE_DIR=off make test` measures a cold run. A test of the cache itself sets
# the variable for its own process.
#
# On a machine with no accelerator plugin (CI, this 2-core CPU), the suite's programs are
# compiled with LLVM's optimization level 1 instead of XLA's default 3 (XLA_FLAGS
# --xla_backend_optimization_level=1, added here before JAX starts and inherited by every
# child process). XLA's HLO passes, fusions and loops are the same, and so is the IR it
# emits; LLVM runs fewer passes over it. The values are those users get: XLA:CPU compiles
# without fast-math, so no level reorders a float operation, and levels 1 to 3 alike contract
# a multiply and an add into an FMA (checked: `a * b + c` gives the FMA's bits at 1, 2 and
# 3; tests/test_compile_level.py). Level 0 contracts none: its values differ, and 8 tests
# of bit-equality failed there (benchmarks/NOTES.md, "The test suite's time on a cold
# machine"). A cold run took 1,830 s here against 2,189 s at level 3. A level already in
# XLA_FLAGS is kept: `XLA_FLAGS=--xla_backend_optimization_level=3 make test` runs the
# suite as users compile.
TEST_OPT_LEVEL = "--xla_backend_optimization_level=1"


def _accelerator_plugin_installed() -> bool:
    from importlib.metadata import entry_points
    from importlib.util import find_spec

    return bool(entry_points(group="jax_plugins")) or find_spec("jax_plugins") is not None


def pytest_configure(config):
    import os

    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_backend_optimization_level" not in flags and not _accelerator_plugin_installed():
        os.environ["XLA_FLAGS"] = f"{flags} {TEST_OPT_LEVEL}".strip()

    from imgproc.core.program_cache import enable_compilation_cache

    enable_compilation_cache()


@pytest.fixture(autouse=True)
def _doctest_cwd(doctest_namespace, monkeypatch):
    # doctests refer to sample_images/ relative to the repository root
    monkeypatch.chdir(ROOT)


@pytest.fixture(autouse=True)
def _own_programs():
    # Equal pipelines and recipes share their compiled programs in a process
    # (imgproc.pipeline.pipeline.EQUAL_PIPELINES): each case starts without those of the
    # cases before it, so that what it counts (trace_count, compilations) is its own.
    from imgproc.pipeline.pipeline import EQUAL_PIPELINES
    from imgproc.pipeline.recipes import EQUAL_RECIPES

    EQUAL_PIPELINES.clear()
    EQUAL_RECIPES.clear()


# Backends. The suite runs on JAX's default backend (CI: CPU; `make test-gpu`: a GPU). A test
# of machinery that exists on CPU only, by design (imgproc/cpu: kept output buffers, NumPy
# input read in place, the per-core split of a batch, the own-loop barriers that shape
# XLA:CPU's loops; docs/scale.md, "Backends"), carries `@pytest.mark.cpu_only("what it
# checks")` and is skipped on another backend with that reason. Where the other backends
# have an expectation of their own (no per-core split, no barrier), a test that runs
# everywhere checks it with the `backend` fixture (the backend's name), or traces the other
# backends' programs on CPU with the `other_backend` fixture.
def pytest_runtest_setup(item):
    marker = item.get_closest_marker("cpu_only")
    if marker is not None:
        import jax

        if jax.default_backend() != "cpu":
            pytest.skip(f"CPU-only machinery, not used on {jax.default_backend()}: {marker.args[0]}")


@pytest.fixture
def backend():
    """The name of the backend the test runs on: ``"cpu"``, ``"gpu"`` or ``"tpu"``."""
    import jax

    return jax.default_backend()


@pytest.fixture
def other_backend():
    """A backend other than CPU, for a test of what the library does there: the real one
    off CPU; on CPU, ``"gpu"`` as ``jax.default_backend()`` reports it (the library's
    backend choices read it: a program traced then is the GPU's, run on the CPU;
    tests/backends.py)."""
    import jax

    from backends import reported_backend

    with reported_backend("gpu" if jax.default_backend() == "cpu" else jax.default_backend()) as name:
        yield name


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


# run by hand in a venv with torch (it writes tests/golden/*); --doctest-modules would import it
collect_ignore = ["golden/make_torchvision.py"]

# The fast tier (`make test-fast`): every test but those listed in tests/slow_tests.txt, the
# slowest of a whole run (`make slow-tests` measures the suite and writes the list again).
SLOW_TESTS = Path(__file__).with_name("slow_tests.txt")


def pytest_collection_modifyitems(config, items):
    slow = set(SLOW_TESTS.read_text().splitlines()) if SLOW_TESTS.exists() else set()
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
    # the tests that run part of the suite in a child process (minutes each) go first, so
    # that a parallel run does not end with one worker waiting for the last of them
    items.sort(key=lambda item: item.get_closest_marker("child_process") is None)
