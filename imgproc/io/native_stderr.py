"""What native libraries say on stderr, captured instead of printed.

libtiff (inside Pillow), libpng (inside imagecodecs and OpenCV) and their kin print their
complaints straight to file descriptor 2 (``TIFFFillStrip: Read error on strip 0``,
``PNG warning: tEXt: CRC error``); a Python-level ``sys.stderr`` redirect does not see them.
tifffile and Pillow's TIFF and PNG plugins report through Python loggers, which print
on stderr when nobody has configured logging. Either way the text would break the command line's promise of one
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

:func:`library_log` collects the warnings and errors that the ``tifffile`` and Pillow
loggers record on the calling thread instead (no lock needed).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
import threading

__all__ = ["LOCK", "Captured", "captured", "library_log", "tidy"]

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


# Python loggers of the decoders: with no logging configured, their warnings and errors
# are printed on stderr by logging's last-resort handler.
_LOGGERS = {"tifffile": "tifffile", "PIL.TiffImagePlugin": "Pillow", "PIL.PngImagePlugin": "Pillow", "PIL.ImageFile": "Pillow"}


class _LibraryLogFilter(logging.Filter):
    def filter(self, record):
        sink = getattr(_local, "log", None)
        if sink is None or record.levelno < logging.WARNING:
            return True  # not ours (or below what would be printed): normal logging
        try:
            sink.append(record.getMessage())
        except Exception:  # noqa: BLE001 - a malformed record: keep the rest
            pass
        return False


_filter = _LibraryLogFilter()


@contextlib.contextmanager
def library_log():
    """``with library_log() as msgs: call()`` -- warnings and errors that tifffile and
    Pillow log from this thread land in ``msgs`` (a list) instead of on stderr."""
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        if _filter not in logger.filters:
            logger.addFilter(_filter)
    previous = getattr(_local, "log", None)
    msgs: list[str] = []
    _local.log = msgs
    try:
        yield msgs
    finally:
        _local.log = previous  # nested blocks keep their own messages
