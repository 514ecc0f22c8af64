"""The memory budget of a file or folder run (``--max-memory``): each image's peak is
estimated from its header, before any pixel is decoded, and an image whose estimate is
over the budget is refused (exit 65) instead of taking the machine's memory.

The estimate is ``width x height x channels x (decode + work)`` bytes:

* decode: :data:`DECODE_COPIES` copies of the decoded samples (the decoder's image, the
  NumPy array, a turned or contiguous copy), at the file's sample size (1, 2 or 4 bytes);
* work: the pipeline's buffers per value, :data:`FILTER_WORK_BYTES` for filters and
  :data:`DENOISE_WORK_BYTES` for the denoisers (float32 input, output and scratch; the
  measurements behind both: benchmarks/NOTES.md, "The memory budget (issue 46)").

Only the standard library: the command line parses ``--max-memory`` without NumPy.
"""

from __future__ import annotations

import os
import re

__all__ = ["DEFAULT_FRACTION", "DECODE_COPIES", "DENOISE_WORK_BYTES", "FILTER_WORK_BYTES", "SIZE_FORMS",
           "default_max_memory", "estimate", "format_size", "parse_size", "physical_memory"]

DEFAULT_FRACTION = 0.5  # of the machine's physical memory: --max-memory's default
DECODE_COPIES = 3
FILTER_WORK_BYTES = 16  # per value (pixel x channel): four float32 arrays of the image
DENOISE_WORK_BYTES = 32  # eight: the estimate, the method's own buffers, the result
SIZE_FORMS = "a size such as 4G, 1.5G, 512M (K, M, G, T: powers of 1024), a share of the RAM such as 50%, or 0 for no limit"

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def physical_memory() -> int | None:
    """The machine's physical memory in bytes, or None where it cannot be read."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def default_max_memory() -> int | None:
    """:data:`DEFAULT_FRACTION` of the physical memory (None, no limit, where unknown)."""
    ram = physical_memory()
    return None if ram is None else int(ram * DEFAULT_FRACTION)


def parse_size(text: str) -> int | None:
    """Bytes from ``"4G"``, ``"1.5g"``, ``"512M"``, ``"2GiB"``, ``"1000000"`` or ``"50%"`` (of the
    physical memory); None for ``"0"`` (no limit). A ``ValueError`` naming the allowed
    forms otherwise.

    >>> parse_size("1.5G"), parse_size("512M"), parse_size("0")
    (1610612736, 536870912, None)
    """
    s = str(text).strip().upper().replace(" ", "")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)%", s)
    if m:
        ram = physical_memory()
        share = float(m.group(1))
        if ram is None or not 0 < share <= 100:
            raise ValueError(f"{text!r} is not a usable share of the RAM; give {SIZE_FORMS}")
        return int(ram * share / 100)
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)(?:I?B)?", s)
    if not m:
        raise ValueError(f"{text!r} is not a memory size; give {SIZE_FORMS}")
    n = int(float(m.group(1)) * _UNITS[m.group(2)])
    return n or None


def format_size(n: int) -> str:
    """A size in the largest binary unit it reaches, never rounded to 0: ``--max-memory 1K``
    was said as "0 MiB".

    >>> format_size(1610612736), format_size(300 << 20), format_size(1536 << 10), format_size(1024), format_size(100)
    ('1.5 GiB', '300 MiB', '1.5 MiB', '1 KiB', '100 bytes')
    """
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            value = n / size
            if unit == "GiB":
                return f"{value:.1f} GiB"
            return f"{value:.{0 if value >= 10 else 1}f} {unit}".replace(".0 ", " ")
    return f"{n} byte{'s' * (n != 1)}"


def estimate(width: int, height: int, channels: int, sample_bytes: int, work_bytes_per_value: float) -> int:
    """The estimated peak bytes of decoding and processing one image (module doc)."""
    values = int(width) * int(height) * int(channels)
    return int(values * (DECODE_COPIES * sample_bytes + work_bytes_per_value))
