"""What a file or folder run reads, runs and writes: :class:`RunOptions`, one value per option
the command line shares (``imgproc blur``, ``imgproc run``, ``imgproc denoise``...), built by
:func:`imgproc.cli._options.io_options` and read by the folder runner and :mod:`imgproc.ray`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from imgproc.io.formats import DEFAULT_MAX_PIXELS, OUTPUT_FORMATS

__all__ = ["RunOptions", "output_extension"]


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """IN, OUT and how to read, run and write them (one value per shared option)."""

    input: str = ""  # the one IN; with several, the first (``inputs`` has them all)
    output: str = ""
    inputs: tuple = ()  # every IN given (``imgproc blur a.jpg b.jpg outdir``)
    quality: int = 95
    overwrite: bool = False
    recursive: bool = False
    out_format: str | None = None  # ".png" etc.; None: see output_extension
    max_pixels: int = DEFAULT_MAX_PIXELS
    allow_truncated: bool = False
    strip: bool = False
    fail_fast: bool = False
    quiet: bool = False
    log_format: str = "text"
    batch_size: int = 8
    workers: int | None = None
    shard_index: int = 0
    num_shards: int = 1
    log_interval: float = 10.0
    engine: str = "local"  # "ray": folder runs on Ray Data (imgproc.ray)
    ray_address: str | None = None
    debug: bool = False  # the group's --debug: tracebacks of internal errors
    max_memory: int | None = None  # bytes an image's decode and pipeline may take (imgproc.io.memory); None: no limit
    work_bytes_per_value: float = 16.0  # the pipeline's buffers per value, for that estimate (imgproc.io.memory)


def output_extension(src, out_format: str | None = None) -> str:
    """The extension of the output written for input ``src``: ``out_format`` (``--format``)
    when given, else the input's own extension, spelled as the input spells it, when it is
    an output format, else ``.png`` (GIF inputs, say).

    >>> output_extension("a/photo.JPG"), output_extension("x.jpe"), output_extension("anim.gif"), output_extension("x.tif", ".png")
    ('.JPG', '.jpe', '.png', '.png')
    """
    if out_format is not None:
        return out_format
    ext = Path(src).suffix
    return ext if ext.lower() in OUTPUT_FORMATS else ".png"
