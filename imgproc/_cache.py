"""JAX's persistent compilation cache for the command line.

The ``imgproc`` command compiles its pipeline on first use; with the cache, a second
run on an image of the same size bucket loads the compiled program from disk instead
of compiling it again. The cache lives in the user's cache folder,
``$XDG_CACHE_HOME/imgproc/jax`` (default ``~/.cache/imgproc/jax``), created private
(mode 0700). ``IMGPROC_CACHE_DIR`` overrides the folder; ``IMGPROC_CACHE_DIR=off``
disables the cache. Library users opt in by calling :func:`enable_compilation_cache`.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["enable_compilation_cache", "default_cache_dir"]


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
