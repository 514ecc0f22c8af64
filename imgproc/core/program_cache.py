"""Compiled programs kept for reuse: in this process (:class:`KeptPrograms`), and on disk
for the command line (JAX's persistent compilation cache).

The ``imgproc`` command compiles its pipeline on first use; with the cache, a second
run on an image of a size it has met (its exact size, or its size bucket: ``Pipeline``'s
``bucket="auto"``) loads the compiled program from disk instead of compiling it again.
The cache lives in the user's cache folder, ``$XDG_CACHE_HOME/imgproc/jax`` (default
``~/.cache/imgproc/jax``), created private (mode 0700). ``IMGPROC_CACHE_DIR`` overrides
the folder; ``IMGPROC_CACHE_DIR=off`` disables the cache. Library users opt in by calling :func:`enable_compilation_cache`.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path

__all__ = ["KeptPrograms", "enable_compilation_cache", "default_cache_dir"]


class KeptPrograms:
    """Programs kept under hashable keys (an op and its frozen options,
    :func:`imgproc.core.devices.freeze`), at most ``limit``, the least recently used dropped
    first; :mod:`imgproc.core.eager` also keeps small facts about them this way (the level an
    op traced at, the options already checked). Safe to share between threads (``build`` runs under the lock: it only wraps a
    function, the compiling happens at the program's first call)."""

    def __init__(self, limit: int):
        self.limit = limit
        self._programs = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, build):
        """The program kept under ``key``; ``build()`` makes it the first time."""
        with self._lock:
            if key in self._programs:
                self._programs.move_to_end(key)
            else:
                if len(self._programs) >= self.limit:
                    self._programs.popitem(last=False)
                self._programs[key] = build()
            return self._programs[key]

    def find(self, key):
        """The program kept under ``key`` (now the most recently used), or None."""
        with self._lock:
            if key not in self._programs:
                return None
            self._programs.move_to_end(key)
            return self._programs[key]

    def drop(self, key):
        """Forget ``key`` (nothing when it is not kept)."""
        with self._lock:
            self._programs.pop(key, None)

    def __len__(self):
        return len(self._programs)

    def values(self):
        with self._lock:
            return list(self._programs.values())

    def clear(self):
        with self._lock:
            self._programs.clear()


def default_cache_dir() -> Path | None:
    override = os.environ.get("IMGPROC_CACHE_DIR")
    if override is not None:
        return None if override.lower() in ("", "off", "0", "none") else Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "imgproc" / "jax"


def enable_compilation_cache(path=None) -> Path | None:
    """Point JAX's persistent compilation cache at ``path`` (default: :func:`default_cache_dir`),
    caching every compiled program. Returns the folder, or None when disabled or when the
    folder cannot be created (the command then simply compiles)."""
    folder = Path(path) if path is not None else default_cache_dir()
    if folder is None:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(folder, 0o700)
    except OSError:
        return None
    import jax

    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return folder
