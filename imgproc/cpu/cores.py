"""How many CPU cores this process may use (the split of threaded work)."""

from __future__ import annotations

import os

__all__ = ["cpu_cores"]


def cpu_cores() -> int:
    """CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
