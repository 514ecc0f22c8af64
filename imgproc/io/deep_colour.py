"""16-bit colour PNG and TIFF at full depth (Pillow reads them at 8 bits).

Both decoders return ``(H, W, 3)`` or ``(H, W, 4)`` uint16 in RGB(A) order (PNG also
``(H, W, 2)`` grey + alpha, which Pillow reads as 8-bit RGBA), or raise
:class:`~imgproc.errors.InvalidImageError`: there is no fallback to another decoder, so a
layout that cannot be read faithfully is refused, never returned scrambled.

* **PNG**: the file is reduced to its critical chunks (IHDR, IDAT, IEND) and decoded by
  libpng through ``imagecodecs``. So, as in Pillow's 8-bit path, a transparency colour
  (tRNS) does not add an alpha channel, and an animated PNG gives its default image (the
  IDAT one), never the first animation frame. libpng's messages on stderr are captured.
* **TIFF**: decoded by ``tifffile`` (with ``imagecodecs`` for LZW and the predictors) in
  every layout tifffile knows: strips or tiles, chunky or planar, little or big endian.
  Only the compressions that Pillow's libtiff also decodes are read (none, LZW, Deflate,
  PackBits, LZMA, Zstandard), so one rule holds at every bit depth; any other is refused
  by name (``unsupported TIFF compression: WebP``). Premultiplied
  alpha (ExtraSamples = 1, Pillow's "RGBa") is un-premultiplied exactly as Pillow does
  at 8 bits: ``c * 65535 // a`` saturated, and all zero where ``a == 0``.
"""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np

from imgproc.errors import InvalidImageError
from imgproc.io.native_stderr import captured, library_log

__all__ = ["decode_png16", "decode_tiff16", "unpremultiply", "TIFF_COMPRESSION_NAMES", "READ_TIFF16_COMPRESSIONS"]

# TIFF compression tag values and the names a user knows them by.
TIFF_COMPRESSION_NAMES = {
    1: "none", 2: "CCITT RLE", 3: "CCITT Group 3", 4: "CCITT Group 4", 5: "LZW", 6: "old-style JPEG",
    7: "JPEG", 8: "Deflate", 32773: "PackBits", 32946: "Deflate", 34925: "LZMA", 50000: "Zstandard",
    50001: "WebP", 50002: "JPEG XL", 34933: "PNG", 34934: "JPEG XR", 33003: "JPEG 2000", 33004: "JPEG 2000",
    33005: "JPEG 2000", 34712: "JPEG 2000", 34887: "LERC", 32809: "ThunderScan", 34676: "SGILog",
    34677: "SGILog24", 32771: "CCITT RLEW", 34892: "lossy JPEG (DNG)",
}
READ_TIFF16_COMPRESSIONS = {1, 5, 8, 32946, 32773, 34925, 50000}


def compression_name(value) -> str:
    value = int(value)
    return TIFF_COMPRESSION_NAMES.get(value, f"code {value}")


def unpremultiply(arr: np.ndarray) -> np.ndarray:
    """Premultiplied RGBa ``(H, W, 4)`` uint8 or uint16 to straight RGBA, like Pillow's
    ``RGBa`` unpacker: colour ``c * max // a`` (integer division), saturated at ``max``;
    every channel 0 where alpha is 0; alpha unchanged."""
    top = np.iinfo(arr.dtype).max
    a = arr[..., 3:4].astype(np.uint64)
    c = arr[..., :3].astype(np.uint64)
    colour = np.where(a == 0, 0, np.minimum(c * top // np.maximum(a, 1), top))
    return np.concatenate([colour, a], axis=-1).astype(arr.dtype)


def _chunks(data: bytes):
    pos = 8
    while pos + 8 <= len(data):
        n = struct.unpack(">I", data[pos:pos + 4])[0]
        ctype = data[pos + 4:pos + 8]
        yield ctype, pos, pos + 12 + n
        if ctype == b"IEND":
            return
        pos += 12 + n


def critical_png(data: bytes) -> bytes:
    """The PNG with only IHDR, PLTE, IDAT and IEND kept (tRNS, APNG frames, text, ICC...
    dropped). The kept chunks' CRCs are recomputed: Pillow, which has already accepted the
    file, does not check IDAT's CRC either, so both depths follow one rule."""
    parts = [data[:8]]
    for ctype, start, end in _chunks(data):
        if ctype in (b"IHDR", b"PLTE", b"IDAT", b"IEND"):
            body = data[start + 8:end - 4]
            parts.append(data[start:start + 8] + body + struct.pack(">I", zlib.crc32(ctype + body) & 0xFFFFFFFF))
    if not parts[-1][4:8] == b"IEND":
        parts.append(b"\x00\x00\x00\x00IEND\xaeB`\x82")
    return b"".join(parts)


def decode_png16(data: bytes, path, channels: int):
    """``(array, messages)`` for a 16-bit grey + alpha (``channels`` 2), RGB (3) or RGBA (4)
    PNG."""
    import imagecodecs

    with captured() as cap:
        try:
            arr = imagecodecs.png_decode(critical_png(data))
            error = None
        except Exception as e:  # noqa: BLE001 - imagecodecs.PngError and friends
            arr, error = None, str(e).splitlines()[0] if str(e) else type(e).__name__
    said = cap.lines()
    if arr is None:
        raise InvalidImageError(path, f"cannot decode 16-bit PNG ({'; '.join([error] + said)[:300]})")
    if arr.dtype != np.uint16 or arr.ndim != 3 or arr.shape[2] != channels:
        raise InvalidImageError(path, f"cannot decode 16-bit PNG faithfully (libpng gave {arr.dtype} {arr.shape})")
    return arr, [f"libpng: {m}" for m in said]


def decode_tiff16(data: bytes, path, channels: int, size: tuple[int, int]):
    """``(array, messages)`` for page 0 of a 16-bit RGB (``channels`` 3) or RGB + alpha (4)
    TIFF, in any layout tifffile reads. ``size``: ``(width, height)`` as Pillow read it
    from the header (and checked against the pixel limit); tifffile must agree before it
    decodes anything."""
    import tifffile

    with library_log() as msgs:
        try:
            with tifffile.TiffFile(io.BytesIO(data)) as tif:
                page = tif.pages[0]
                comp = int(page.compression)
                if comp not in READ_TIFF16_COMPRESSIONS:
                    raise InvalidImageError(path, f"unsupported TIFF compression: {compression_name(comp)}")
                if int(page.photometric) != 2:
                    raise InvalidImageError(path, f"unsupported: 16-bit TIFF with photometric interpretation {int(page.photometric)}")
                wh = (int(page.imagewidth), int(page.imagelength))
                if tuple(size) not in (wh, wh[::-1]):  # Pillow 13 reports orientations 5-8 turned
                    raise InvalidImageError(path, f"corrupt TIFF (tifffile reads {page.imagewidth}x{page.imagelength}, Pillow {size[0]}x{size[1]})")
                arr = page.asarray()
                axes = page.axes
                extra = tuple(int(x) for x in (page.extrasamples or ()))
        except InvalidImageError:
            raise
        except Exception as e:  # noqa: BLE001 - tifffile raises many kinds on bad bytes
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise InvalidImageError(path, f"cannot decode 16-bit TIFF ({'; '.join([reason] + msgs)[:300]})") from None
    if arr.ndim == 3 and axes.endswith("SYX"):
        arr = np.moveaxis(arr, 0, -1)
    elif not (arr.ndim == 3 and axes.endswith("YXS")):
        raise InvalidImageError(path, f"cannot decode 16-bit TIFF faithfully (layout {axes}, shape {arr.shape})")
    if arr.dtype != np.uint16 or arr.shape[2] != channels:
        raise InvalidImageError(path, f"cannot decode 16-bit TIFF faithfully ({arr.dtype}, {arr.shape[2]} samples)")
    if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and not np.little_endian):
        arr = arr.astype(np.uint16)
    if channels == 4 and extra[:1] == (1,):
        arr = unpremultiply(arr)
    return np.ascontiguousarray(arr), [f"tifffile: {m}" for m in msgs]
