"""A pytest plugin for the GPU lane (benchmarks/gpu_check.sh loads it with ``-p``): each
failure's report is appended to the file ``$PYTEST_FAILURES_LOG`` names as soon as the test
ends (in the main process only, under pytest-xdist too), so a run stopped at its time limit
still says why the tests that failed before the stop failed. Without the variable it does
nothing."""

from __future__ import annotations

import os

_config = None


def pytest_configure(config):
    global _config
    _config = config


def pytest_runtest_logreport(report):
    path = os.environ.get("PYTEST_FAILURES_LOG")
    if path and report.failed and not hasattr(_config, "workerinput"):  # a worker's reports reach the main process
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"==== {report.nodeid} ({report.when})\n{report.longreprtext[-5000:]}\n\n")
