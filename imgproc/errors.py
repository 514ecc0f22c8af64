"""Errors a user can cause, each with the command line's exit code (docs/cli.md, "Exit codes")."""

from __future__ import annotations

__all__ = [
    "ImgprocError",
    "InvalidImageError",
    "InputError",
    "OutputError",
    "OutputExistsError",
    "WriteError",
    "UnavailableError",
    "ImgprocWarning",
    "LayoutWarning",
]


class ImgprocError(Exception):
    """Base class; ``exit_code`` is what ``imgproc`` exits with, ``path`` the file concerned."""

    exit_code = 70

    def __init__(self, path, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


class InvalidImageError(ImgprocError, ValueError):
    """The input is not a valid image (corrupt, truncated, unsupported, too many pixels). Exit 65."""

    exit_code = 65


class InputError(ImgprocError, OSError):
    """The input is missing or unreadable. Exit 66."""

    exit_code = 66


class OutputError(ImgprocError, OSError):
    """The output cannot be created (exists without overwrite, same file as the input,
    unknown extension, folder not writable). Exit 73."""

    exit_code = 73


class OutputExistsError(OutputError):
    """The output exists and replacing it was not asked for (``overwrite=False``),
    including one that appeared while it was being written (another process wrote it
    first; the command reports that as skipped). Exit 73."""


class WriteError(ImgprocError, OSError):
    """An I/O error while writing (disk full). Exit 74."""

    exit_code = 74


class UnavailableError(ImgprocError, ConnectionError):
    """A service the run needs cannot be reached: a Ray cluster address that does not
    answer, or the ``ray`` package not installed (``--engine ray``). Exit 69
    (``EX_UNAVAILABLE``)."""

    exit_code = 69


class ImgprocWarning(UserWarning):
    """Something odd but not fatal about an input (first frame only, corrupt EXIF ignored,
    truncated file decoded with allow_truncated)."""


class LayoutWarning(ImgprocWarning):
    """An array given without ``layout=`` whose inferred layout is implausible: a 3-D
    array with 1, 3 or 4 on its first axis and more than 4 on its last (HWC would mean
    that many channels) looks channel-first (``layout="CHW"``); a 4-D one with 1, 3 or 4
    on axis 1 and more than 4 on its last looks like ``layout="NCHW"``. A warning, not an
    error: naming the layout (``layout="HWC"`` too) silences it."""
