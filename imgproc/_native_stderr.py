"""What native libraries say on stderr, captured instead of printed.

libtiff (inside Pillow), libpng (inside imagecodecs and OpenCV) and their kin print their
complaints straight to file descriptor 2 (``TIFFFillStrip: Read error on strip 0``,
``PNG warning: tEXt: CRC error``); a Python-level ``sys.stderr`` redirect does not see them.
tifffile reports through the ``tifffile`` logger, which prints on stderr when nobody has
configured logging. Either way the text would break the command line's promise of one
``error: PATH: reason`` line per failed file and of JSON-only lines with
``--log-format json``.

:func:`captured` runs a native call with fd 2 pointed at a temporary file and hands back
what was written there (the loader turns it into the error's reason, or a warning).
Pointing fd 2 elsewhere affects the whole process, so captures are serialized by one
process-wide lock (:data:`LOCK`), and whoever writes its own lines on stderr while other
threads may be decoding (the folder runner's ``Reporter``) holds :data:`LOCK` while it
writes, so no line of imgproc's lands in a capture. Only calls into libraries known to
print are wrapped (libtiff decoding, libpng, OpenCV and Pillow's libtiff-backed TIFF
writer); the fast paths (libjpeg-turbo through simplejpeg, Pillow's PNG, WebP, GIF and
BMP decoders) never print and run unserialized.

:func:`tifffile_messages` collects the ``tifffile`` logger's records of the calling thread
instead (no lock needed).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
import threading

__all__ = ["LOCK", "Captured", "captured", "tifffile_messages", "tidy"]

LOCK = threading.RLock()
_local = threading.local()
_sink_fd = None  # one unlinked temporary file, reused under LOCK
_MAX_READ = 16384


class Captured:
    """The text written to fd 2 during a :func:`captured` block (set when it ends)."""

    def __init__(self):
        self.text = ""

    def lines(self) -> list[str]:
        return tidy(self.text)


def tidy(text: str) -> list[str]:
    """Non-empty, de-duplicated message lines, without Pillow's ``tempfile.tif:`` prefix."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        for prefix in ("tempfile.tif: ", "tempfile.tif:"):
            if line.startswith(prefix):
                line = line[len(prefix):].strip()
        if line and line not in out:
            out.append(line)
    return out


def _get_sink() -> int:
    global _sink_fd
    if _sink_fd is None:
        fd, name = tempfile.mkstemp(prefix="imgproc-stderr-")
        os.unlink(name)
        _sink_fd = fd
    return _sink_fd


@contextlib.contextmanager
def captured():
    """``with captured() as c: native_call()`` -- afterwards ``c.text`` is what the call
    wrote to file descriptor 2. Nested blocks on one thread collect into the outer one.
    Where fd 2 cannot be redirected (no fd 2), the call runs uncaptured."""
    cap = Captured()
    if getattr(_local, "depth", 0):
        _local.depth += 1
        try:
            yield cap
        finally:
            _local.depth -= 1
        return
    with LOCK:
        try:
            fd = _get_sink()
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            saved = os.dup(2)
        except OSError:
            yield cap
            return
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.dup2(fd, 2)
        _local.depth = 1
        try:
            yield cap
        finally:
            _local.depth = 0
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            os.lseek(fd, 0, os.SEEK_SET)
            data = os.read(fd, _MAX_READ)
            os.ftruncate(fd, 0)
            cap.text = data.decode("utf-8", "replace")


class _TifffileFilter(logging.Filter):
    def filter(self, record):
        sink = getattr(_local, "tifffile", None)
        if sink is None:
            return True  # not ours: normal logging
        try:
            sink.append(record.getMessage())
        except Exception:  # noqa: BLE001 - a malformed record: keep the rest
            pass
        return False


_filter = _TifffileFilter()


@contextlib.contextmanager
def tifffile_messages():
    """``with tifffile_messages() as msgs: tifffile_call()`` -- the ``tifffile`` logger's
    messages from this thread land in ``msgs`` (a list) instead of on stderr."""
    logger = logging.getLogger("tifffile")
    if _filter not in logger.filters:
        logger.addFilter(_filter)
    previous = getattr(_local, "tifffile", None)
    msgs: list[str] = []
    _local.tifffile = msgs
    try:
        yield msgs
    finally:
        _local.tifffile = previous
