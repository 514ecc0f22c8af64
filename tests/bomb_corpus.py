"""Memory bombs (issue 46): small files that declare, or inflate to, images far larger
than themselves. Each must be refused, or processed, within the run's memory budget
(``--max-memory``). Nothing binary is committed; run as a script to write them::

    python tests/bomb_corpus.py /tmp/bomb-corpus

``BOMBS`` lists ``Bomb(name, make, reason)``: ``reason`` is part of the one error line
the command must give with ``--max-memory 1G`` (None: processed within it).
"""

from __future__ import annotations

import dataclasses
import io
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).parent))
import bad_inputs  # noqa: E402 - the earlier hostile files: the 900-MP PNG, the 65535x65535 GIF


@dataclasses.dataclass
class Bomb:
    name: str
    make: object
    reason: str | None


def _chunk(ctype: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + ctype + body + struct.pack(">I", zlib.crc32(ctype + body) & 0xFFFFFFFF)


def forged_jpeg(width=9400, height=9500, *, progressive=True) -> bytes:
    """The issue's file: a 16x16 JPEG saved by Pillow whose SOF (SOF2 when progressive)
    says ``width`` x ``height`` (a few hundred bytes declaring 89 megapixels)."""
    flat = np.full((16, 16, 3), 128, np.uint8)
    flat[4:12, 4:12] = (200, 60, 30)
    buf = io.BytesIO()
    Image.fromarray(flat).save(buf, "JPEG", progressive=progressive, quality=50)
    data = bytearray(buf.getvalue())
    sof = data.index(b"\xff\xc2" if progressive else b"\xff\xc0")
    data[sof + 5:sof + 9] = struct.pack(">HH", height, width)
    return bytes(data)


def zlib_bomb_png(width=9400, height=9500) -> bytes:
    """A valid 8-bit grey PNG of ``width`` x ``height`` zeros: about 87 KB that inflate to
    89 MB (zlib's ratio is at most about 1032:1). Compressed row by row: the 89 MB are
    never held here."""
    z = zlib.compressobj(9)
    row = b"\0" * (width + 1)  # filter byte + samples
    parts = [z.compress(row) for _ in range(height)] + [z.flush()]
    idat = b"".join(parts)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")


def forged_tiff(width=60000, height=1400) -> bytes:
    """An uncompressed RGB TIFF of 16x16 whose tags say ``width`` x ``height`` (84 MP, 252
    MB of samples it does not have)."""
    buf = io.BytesIO()
    Image.fromarray(np.zeros((16, 16, 3), np.uint8)).save(buf, "TIFF")
    data = bytearray(buf.getvalue())
    ifd = struct.unpack("<I", data[4:8])[0]
    for k in range(struct.unpack("<H", data[ifd:ifd + 2])[0]):
        e = ifd + 2 + 12 * k
        tag, typ = struct.unpack("<HH", data[e:e + 4])
        if tag in (256, 257):
            value = width if tag == 256 else height
            data[e + 8:e + 12] = struct.pack("<H", value) + b"\0\0" if typ == 3 else struct.pack("<I", value)
    return bytes(data)


BOMBS = [
    Bomb("jpeg_progressive_forged_size.jpg", forged_jpeg, "JPEG declares 9400x9500 but holds"),
    Bomb("jpeg_baseline_forged_size.jpg", lambda: forged_jpeg(progressive=False), "JPEG declares 9400x9500 but holds"),
    Bomb("png_zlib_bomb.png", zlib_bomb_png, "over --max-memory"),
    Bomb("png_900_megapixels.png", bad_inputs.bomb, "too many pixels"),
    Bomb("gif_65535_square.gif", bad_inputs.gif_bomb, "too many pixels"),
    Bomb("tiff_forged_size.tif", forged_tiff, "over --max-memory"),
]


def generate(folder) -> dict[str, Path]:
    """Write every bomb into ``folder``; name -> path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for bomb in BOMBS:
        out[bomb.name] = folder / bomb.name
        out[bomb.name].write_bytes(bomb.make())
    return out


if __name__ == "__main__":
    for name, path in generate(sys.argv[1] if len(sys.argv) > 1 else "bomb-corpus").items():
        print(f"{path.stat().st_size:>8}  {path}")
