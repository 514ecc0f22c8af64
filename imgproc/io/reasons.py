"""True reasons for files that Pillow refuses, read from the bytes.

Pillow's messages often do not name the problem ("cannot identify image file",
"decoder error -2", "Decompressed data too large for PngImagePlugin.MAX_TEXT_CHUNK").
When decoding fails, :func:`explain` looks at the file itself and returns one short
reason, or None when it finds nothing more precise than Pillow's message:

* JPEG: the frame header's sample precision and process: ``unsupported: 12-bit JPEG``,
  ``unsupported: lossless JPEG``;
* PNG: a walk over the chunks: ``corrupt PNG chunk iCCP (too large)``, ``(empty)``,
  ``(CRC error)``, ``(length N runs past the end of the file)``, ``(bad compressed data)``;
* TIFF: page 0's tags through tifffile: ``unsupported TIFF compression: WebP``,
  ``unsupported: 32-bit floating-point RGB TIFF``.

Only called on the failure path; nothing here decodes pixels.
"""

from __future__ import annotations

import io
import struct
import zlib

__all__ = ["explain", "png_chunk_problem", "jpeg_problem", "tiff_problem"]

# Pillow refuses text and ICC chunks that inflate beyond this (PngImagePlugin.MAX_TEXT_CHUNK).
_PNG_ZCHUNKS = {b"iCCP", b"zTXt", b"iTXt"}
_PILLOW_TIFF_COMPRESSIONS = {1, 2, 3, 4, 5, 6, 7, 8, 32771, 32773, 32946, 32809, 34676, 34677, 34925, 50000}


def explain(data: bytes, fmt: str, said: list[str] = ()) -> str | None:
    """A precise reason for ``data`` (a file of format ``fmt``) failing, or None.
    ``said``: what the native decoder printed while failing."""
    try:
        if fmt == "JPEG":
            return jpeg_problem(data)
        if fmt == "PNG":
            return png_chunk_problem(data)
        if fmt == "TIFF":
            return tiff_problem(data, said)
    except Exception:  # noqa: BLE001 - a diagnosis must never replace the real error
        return None
    return None


def jpeg_problem(data: bytes) -> str | None:
    """``unsupported: N-bit JPEG`` / ``unsupported: lossless JPEG`` from the SOF marker."""
    pos = 2
    while pos + 4 <= len(data):
        if data[pos] != 0xFF:
            return None
        marker = data[pos + 1]
        if marker == 0xFF:
            pos += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            pos += 2
            continue
        length = struct.unpack(">H", data[pos + 2:pos + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            if pos + 4 >= len(data):
                return None
            precision = data[pos + 4]
            if marker in (0xC3, 0xC7, 0xCB, 0xCF):
                return f"unsupported: lossless JPEG ({precision}-bit)"
            if precision != 8:
                return f"unsupported: {precision}-bit JPEG"
            return None
        if marker == 0xDA:
            return None
        pos += 2 + length
    return None


def png_chunk_problem(data: bytes, max_text: int | None = None) -> str | None:
    """The first broken chunk of a PNG, as ``corrupt PNG chunk NAME (why)``. A file that
    ends inside or after its pixel data is not reported here (that is truncation)."""
    if max_text is None:
        from PIL import PngImagePlugin

        max_text = PngImagePlugin.MAX_TEXT_CHUNK
    pos, seen_idat = 8, False
    while pos + 8 <= len(data):
        n = struct.unpack(">I", data[pos:pos + 4])[0]
        ctype = data[pos + 4:pos + 8]
        name = ctype.decode("latin-1")
        if not name.isalpha():
            return f"corrupt PNG chunk at byte {pos} (invalid chunk type {ctype!r})"
        if ctype == b"IDAT":
            seen_idat = True
        if pos + 12 + n > len(data):
            if ctype == b"IDAT" or seen_idat:
                return None  # truncated image data
            if n > len(data):
                return f"corrupt PNG chunk {name} (length {n} runs past the end of the file)"
            return None  # cut before the pixels: a truncated file
        body = data[pos + 8:pos + 8 + n]
        crc = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]
        if zlib.crc32(ctype + body) & 0xFFFFFFFF != crc:
            return f"corrupt PNG chunk {name} (CRC error)"
        if ctype in _PNG_ZCHUNKS | {b"tEXt"} and n == 0:
            return f"corrupt PNG chunk {name} (empty)"
        if ctype in _PNG_ZCHUNKS:
            why = _zchunk_problem(ctype, body, max_text)
            if why:
                return f"corrupt PNG chunk {name} ({why})"
        if ctype == b"IEND":
            return None
        pos += 12 + n
    return None


def _zchunk_problem(ctype, body, max_text):
    i = body.find(b"\0")
    if i < 0:
        return "no keyword terminator"
    if ctype == b"iTXt":
        if len(body) < i + 3:
            return "too short"
        if body[i + 1] == 0:
            return None  # not compressed
        start = body.find(b"\0", body.find(b"\0", i + 3) + 1) + 1
        if start <= 0:
            return "too short"
        payload = body[start:]
    else:
        payload = body[i + 2:]
    d = zlib.decompressobj()
    try:
        out = d.decompress(payload, max_text + 1)
    except zlib.error:
        return "bad compressed data"
    if len(out) > max_text:
        return "too large"
    if ctype == b"iCCP" and not out:
        return "empty"
    return None


def tiff_problem(data: bytes, said=()) -> str | None:
    """Why Pillow cannot read a TIFF's first page: an unsupported compression or sample
    format, named."""
    if any("compression support is not configured" in s or "not implemented" in s.lower() for s in said):
        comp = _tiff_tag(data, 259)
        if comp is not None:
            from imgproc.io.deep_colour import compression_name

            return f"unsupported TIFF compression: {compression_name(comp)}"
    import tifffile

    from imgproc.io.native_stderr import library_log

    with library_log():
        with tifffile.TiffFile(io.BytesIO(data)) as tif:
            page = tif.pages[0]
            comp = int(page.compression)
            fmt = int(page.sampleformat)
            bits = int(page.bitspersample)
            spp = int(page.samplesperpixel)
            photometric = int(page.photometric)
    if comp not in _PILLOW_TIFF_COMPRESSIONS:
        from imgproc.io.deep_colour import compression_name

        return f"unsupported TIFF compression: {compression_name(comp)}"
    kind = {0: "white-is-zero grey", 1: "grey", 2: "RGB", 3: "palette", 5: "CMYK", 6: "YCbCr", 8: "CIELab"}.get(photometric, f"photometric {photometric}")
    if fmt == 3:
        return f"unsupported: {bits}-bit floating-point {kind} TIFF (imgproc reads 32-bit floating-point grey only)"
    if fmt == 2 and spp > 1:
        return f"unsupported: signed {bits}-bit integer {kind} TIFF (imgproc reads signed integers in grey only, when none is negative)"
    if bits not in (1, 2, 4, 8, 16) or (bits == 16 and (spp > 4 or (photometric in (0, 1) and spp > 1))):
        return f"unsupported: {bits}-bit {kind} TIFF with {spp} samples per pixel"
    return None


def _tiff_tag(data: bytes, tag: int):
    """Value of a SHORT/LONG tag of the first IFD, or None."""
    if len(data) < 8:
        return None
    bo = "<" if data[:2] == b"II" else ">"
    ifd = struct.unpack(bo + "I", data[4:8])[0]
    if ifd + 2 > len(data):
        return None
    n = struct.unpack(bo + "H", data[ifd:ifd + 2])[0]
    for k in range(n):
        e = ifd + 2 + 12 * k
        if e + 12 > len(data):
            return None
        t, typ, count = struct.unpack(bo + "HHI", data[e:e + 8])
        if t == tag:
            return struct.unpack(bo + "H", data[e + 8:e + 10])[0] if typ == 3 else struct.unpack(bo + "I", data[e + 8:e + 12])[0]
    return None
