"""One generated file per problem class that real-world corpora showed the loader (issue 16).

Nothing binary is committed: every file is made here with Pillow, tifffile (+imagecodecs),
NumPy and byte surgery on PNG chunks and TIFF strips. Run as a script to write them::

    python tests/loader_corpus.py /tmp/loader-corpus

``GOOD`` lists ``Good(name, make, reference, pillow)``: files imgproc must accept, with
the exact array it must return (``reference()``, NumPy) and ``pillow``: how Pillow's own
decode relates to it -- ``"equal"`` (the same array), ``"high byte"`` (Pillow reads 16 bits
at 8: ``reference >> 8``), ``"grey+alpha as RGBA, high byte"`` (Pillow reads 16-bit grey +
alpha PNG as 8-bit RGBA: grey, grey, grey, alpha), ``"exif_transpose"`` (``ImageOps.exif_transpose`` of Pillow's
decode), or None where Pillow itself gets the file wrong (said in ``why``).

``BAD`` lists ``Bad(name, make, reason)``: files refused with exit code 65 and one line
containing ``reason``.

What cannot be generated: every class of the issue can be. A 12-bit JPEG comes from
imagecodecs' libjpeg-turbo 3 (``jpeg8_encode(..., bitspersample=12)``); Pillow cannot
write one. Interlaced 16-bit PNG, APNG, eXIf-after-IDAT, tRNS and broken chunks are
written byte by byte here (``png_raw``, ``apng``, ``insert_png``, ``bad_crc``); damaged
TIFF strips are made by overwriting the middle of each strip (``corrupt_tiff_strips``).
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
import bad_inputs  # noqa: E402 - the corpus writer of the earlier hostile-file cases

H, W = 24, 40


def ramp16(channels=3, h=H, w=W, seed=0) -> np.ndarray:
    """uint16 (h, w, channels) using the whole 16-bit range, low bytes not all zero."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 65535 // (w - 1), y * 65535 // (h - 1), (x + y) * 65535 // (w + h - 2), 65535 - x * 1000 % 65536][:channels], -1)
    return np.clip(base + rng.integers(0, 256, base.shape), 0, 65535).astype(np.uint16)


def rgb8(h=H, w=W) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w]
    a = np.stack([x * 255 // (w - 1), y * 255 // (h - 1), (x + y) * 255 // (w + h - 2)], -1).astype(np.uint8)
    a[: h // 4, : w // 4] = (255, 0, 0)  # orientation marker
    return a


def premultiplied(dtype) -> np.ndarray:
    """Straight RGBA with alpha 0, full and in between, premultiplied (c <= a)."""
    top = np.iinfo(dtype).max
    rng = np.random.default_rng(3)
    a = rng.integers(0, top + 1, (H, W, 1), dtype=np.int64)
    a[0, :4] = 0
    a[1, :4] = top
    c = rng.integers(0, top + 1, (H, W, 3), dtype=np.int64) * a // top
    return np.concatenate([c, a], -1).astype(dtype)


def unpremultiplied(arr) -> np.ndarray:
    """NumPy reference: Pillow's RGBa unpacker (c * max // a, 0 where a == 0)."""
    top = int(np.iinfo(arr.dtype).max)
    out = arr.astype(np.int64)
    a = out[..., 3:4]
    out[..., :3] = np.where(a == 0, 0, np.minimum(out[..., :3] * top // np.maximum(a, 1), top))
    return out.astype(arr.dtype)


# --- writers ---------------------------------------------------------------------------


def tiff(arr, **kw) -> bytes:
    import tifffile

    buf = io.BytesIO()
    tifffile.imwrite(buf, arr, **kw)
    return buf.getvalue()


# signed 16-bit grey as image-tiff's int16.tif: negative and positive values
INT16 = (np.arange(64 * 64).reshape(64, 64) - 2000).astype(np.int16)


def planar(arr) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(arr, -1, 0))


def pil(arr, fmt, **kw) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, fmt, **kw)
    return buf.getvalue()


def png16(arr) -> bytes:
    import imagecodecs

    return bytes(imagecodecs.png_encode(np.ascontiguousarray(arr)))


_ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def png_raw(arr, *, interlace=False) -> bytes:
    """A PNG written here (filter 0), for what no library at hand writes: 16-bit colour
    with Adam7 interlacing. ``arr``: (H, W[, C]) uint8 or uint16, C in 1..4."""
    arr = np.asarray(arr)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    h, w, c = arr.shape
    bits = 16 if arr.dtype == np.uint16 else 8
    colour_type = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    big = arr.astype(">u2") if bits == 16 else arr

    def rows(a):
        return b"".join(b"\x00" + a[y].tobytes() for y in range(a.shape[0]))

    if interlace:
        raw = b"".join(rows(np.ascontiguousarray(big[y0::dy, x0::dx])) for x0, y0, dx, dy in _ADAM7
                       if big[y0::dy, x0::dx].size)
    else:
        raw = rows(big)
    ihdr = struct.pack(">IIBBBBB", w, h, bits, colour_type, 0, 0, 1 if interlace else 0)
    return assemble([(b"IHDR", ihdr), (b"IDAT", zlib.compress(raw)), (b"IEND", b"")])


def chunk(ctype: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + ctype + body + struct.pack(">I", zlib.crc32(ctype + body) & 0xFFFFFFFF)


def chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    out, pos = [], 8
    while pos + 8 <= len(data):
        n = struct.unpack(">I", data[pos:pos + 4])[0]
        out.append((data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]))
        pos += 12 + n
    return out


def assemble(parts) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + b"".join(chunk(t, b) if isinstance(t, bytes) else t for t, b in parts)


def insert_png(data: bytes, ctype: bytes, body: bytes, *, after: bytes = b"IHDR") -> bytes:
    """``data`` with a chunk inserted after the last chunk of type ``after``."""
    parts = chunks(data)
    i = max(k for k, (t, _) in enumerate(parts) if t == after) + 1
    return assemble(parts[:i] + [(ctype, body)] + parts[i:])


def exif_bytes(orientation) -> bytes:
    e = Image.Exif()
    e[0x0112] = orientation
    return e.tobytes()


def store_for(orientation, arr):
    """The stored pixels that orientation ``orientation`` turns into ``arr`` (6: rot90 ccw)."""
    assert orientation == 6
    return np.ascontiguousarray(np.rot90(arr, 1))


def raw_profile_exif(orientation) -> bytes:
    """ImageMagick's way: a zTXt chunk ``Raw profile type exif`` holding the APP1 payload in hex."""
    payload = b"Exif\x00\x00" + exif_bytes(orientation)
    hexed = payload.hex()
    text = f"\nexif\n{len(payload):8d}\n" + "\n".join(hexed[i:i + 72] for i in range(0, len(hexed), 72)) + "\n"
    return b"Raw profile type exif\x00\x00" + zlib.compress(text.encode())


def xmp_orientation(orientation) -> bytes:
    xmp = ('<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
           f'<rdf:Description rdf:about="" xmlns:tiff="http://ns.adobe.com/tiff/1.0/" tiff:Orientation="{orientation}"/>'
           "</rdf:RDF></x:xmpmeta>")
    return b"XML:com.adobe.xmp\x00\x00\x00\x00\x00" + xmp.encode()


def apng(default: bytes, frames: list[bytes], *, default_in_animation: bool) -> bytes:
    """An APNG from PNG files of one size: ``default``'s IDAT is the default image;
    ``frames`` become fcTL/fdAT animation frames."""
    parts = chunks(default)
    ihdr = parts[0]
    w, h = struct.unpack(">II", ihdr[1][:8])
    n = len(frames) + (1 if default_in_animation else 0)
    seq = 0

    def fctl():
        nonlocal seq
        body = struct.pack(">IIIIIHHBB", seq, w, h, 0, 0, 1, 10, 0, 0)
        seq += 1
        return (b"fcTL", body)

    out = [ihdr, (b"acTL", struct.pack(">II", n, 0))]
    if default_in_animation:
        out.append(fctl())
    out += [p for p in parts if p[0] == b"IDAT"]
    for f in frames:
        out.append(fctl())
        for t, body in chunks(f):
            if t == b"IDAT":
                out.append((b"fdAT", struct.pack(">I", seq) + body))
                seq += 1
    out.append((b"IEND", b""))
    return assemble(out)


def trns_rgb(data: bytes, colour, bits) -> bytes:
    fmt = ">HHH"
    return insert_png(data, b"tRNS", struct.pack(fmt, *[int(c) for c in colour]))


def bad_crc(data: bytes, ctype: bytes) -> bytes:
    """``data`` with the CRC of its first ``ctype`` chunk wrong."""
    i = data.index(ctype)
    n = struct.unpack(">I", data[i - 4:i])[0]
    end = i + 4 + n + 4
    return data[:end - 1] + bytes([data[end - 1] ^ 0xFF]) + data[end:]


def corrupt_tiff_strips(data: bytes, seed=1) -> bytes:
    """Random bytes over the middle of every strip/tile of page 0 (tags left intact)."""
    import tifffile

    with tifffile.TiffFile(io.BytesIO(data)) as tif:
        page = tif.pages[0]
        spans = list(zip(page.dataoffsets, page.databytecounts))
    out = bytearray(data)
    rng = np.random.default_rng(seed)
    for off, n in spans:
        a, b = off + n // 4, off + 3 * n // 4
        out[a:b] = rng.integers(0, 256, b - a, dtype=np.uint8).tobytes()
    return bytes(out)


def _cut(data: bytes, fraction: float) -> bytes:
    return data[: int(len(data) * fraction)]


def jpeg12() -> bytes:
    """A real 12-bit JPEG from imagecodecs' libjpeg-turbo 3; where that build cannot write
    one, an 8-bit JPEG whose frame header says 12 bits (SOF1, precision 12): Pillow refuses
    both alike, and the reason comes from that header."""
    a = (ramp16(3) >> 4).astype(np.uint16)
    try:
        import imagecodecs

        return bytes(imagecodecs.jpeg8_encode(a, level=90, bitspersample=12))
    except Exception:  # noqa: BLE001 - no 12-bit support in this imagecodecs build
        data = bytearray(pil(rgb8(), "JPEG", quality=90))
        i = data.index(b"\xff\xc0")
        data[i + 1], data[i + 4] = 0xC1, 12
        return bytes(data)


def one_bit_g4() -> bytes:
    return pil(rgb8()[..., 0] > 100, "TIFF", compression="group4")


# --- the classes -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Good:
    name: str
    make: object  # () -> bytes
    reference: object  # () -> np.ndarray
    pillow: str | None
    why: str = ""


@dataclasses.dataclass(frozen=True)
class Bad:
    name: str
    make: object
    reason: str


RGB16, RGBA16 = ramp16(3), ramp16(4)
PRE16, PRE8 = premultiplied(np.uint16), premultiplied(np.uint8)
_EXIF6 = store_for(6, rgb8())

GOOD = [
    # 1. 16-bit TIFF in every layout: the exact array; Pillow reads the high byte
    Good("tiff16_rgb_strips.tif", lambda: tiff(RGB16, photometric="rgb", rowsperstrip=5), lambda: RGB16, "high byte"),
    Good("tiff16_rgb_tiled.tif", lambda: tiff(RGB16, photometric="rgb", tile=(16, 16)), lambda: RGB16, "high byte"),
    Good("tiff16_rgb_planar.tif", lambda: tiff(planar(RGB16), photometric="rgb", planarconfig="separate"), lambda: RGB16, None,
         "Pillow 13 mixes the planes of uncompressed planar 16-bit RGB"),
    Good("tiff16_rgb_lzw.tif", lambda: tiff(RGB16, photometric="rgb", compression="lzw"), lambda: RGB16, "high byte"),
    Good("tiff16_rgb_lzw_planar.tif", lambda: tiff(planar(RGB16), photometric="rgb", planarconfig="separate", compression="lzw"),
         lambda: RGB16, "high byte"),
    Good("tiff16_rgb_lzw_predictor_tiled.tif", lambda: tiff(RGB16, photometric="rgb", compression="lzw", predictor=True, tile=(16, 16)),
         lambda: RGB16, "high byte"),
    Good("tiff16_rgb_deflate_bigendian.tif", lambda: tiff(RGB16, photometric="rgb", compression="zlib", byteorder=">"), lambda: RGB16, "high byte"),
    Good("tiff16_rgb_zstd.tif", lambda: tiff(RGB16, photometric="rgb", compression="zstd"), lambda: RGB16, "high byte"),
    Good("tiff16_rgba.tif", lambda: tiff(RGBA16, photometric="rgb", extrasamples=[2]), lambda: RGBA16, "high byte"),
    Good("tiff16_rgba_lzw_planar.tif", lambda: tiff(planar(RGBA16), photometric="rgb", extrasamples=[2], planarconfig="separate", compression="lzw"),
         lambda: RGBA16, "high byte"),
    Good("tiff16_rgb_planar_tiled.tif", lambda: tiff(planar(RGB16), photometric="rgb", planarconfig="separate", tile=(16, 16)), lambda: RGB16,
         None, "Pillow 13 mixes the planes of uncompressed planar 16-bit RGB"),
    Good("tiff16_grey_bigendian_tiled.tif", lambda: tiff(RGB16[..., 0], byteorder=">", tile=(16, 16)), lambda: RGB16[..., 0], "equal"),
    Good("tiff16_min_is_white.tif", lambda: tiff(RGB16[..., 0], photometric="miniswhite"), lambda: 65535 - RGB16[..., 0], None,
         "Pillow inverts min-is-white grey at 8 bits but returns it raw at 16; imgproc inverts at both"),
    Good("tiff8_min_is_white.tif", lambda: tiff(rgb8()[..., 1], photometric="miniswhite"), lambda: 255 - rgb8()[..., 1], "equal"),
    Good("tiff8_rgb_planar.tif", lambda: tiff(planar(rgb8()), photometric="rgb", planarconfig="separate"), rgb8, "equal"),
    Good("tiff8_rgba_planar_tiled.tif", lambda: tiff(planar(RGBA16 >> 8).astype(np.uint8), photometric="rgb", planarconfig="separate",
                                                      extrasamples=[2], tile=(16, 16)), lambda: (RGBA16 >> 8).astype(np.uint8), "equal"),
    Good("tiff16_premultiplied.tif", lambda: tiff(PRE16, photometric="rgb", extrasamples=[1]), lambda: unpremultiplied(PRE16), None,
         "Pillow un-premultiplies 16-bit RGBa from the high bytes only (8-bit precision, far off for small alpha)"),
    Good("tiff8_premultiplied.tif", lambda: tiff(PRE8, photometric="rgb", extrasamples=[1]), lambda: unpremultiplied(PRE8), "equal"),
    # 3. orientation from every place Pillow reads it
    Good("tiff16_orientation_6.tif", lambda: tiff(store_for(6, RGB16), photometric="rgb", compression="lzw", extratags=[(274, "H", 1, 6, True)]),
         lambda: RGB16, "high byte"),
    Good("tiff8_orientation_6.tif", lambda: tiff(_EXIF6, photometric="rgb", extratags=[(274, "H", 1, 6, True)]), rgb8, "exif_transpose"),
    Good("png_exif_after_idat.png", lambda: insert_png(pil(_EXIF6, "PNG"), b"eXIf", exif_bytes(6), after=b"IDAT"), rgb8, "exif_transpose"),
    Good("png16_exif_after_idat.png", lambda: insert_png(png16(store_for(6, RGB16)), b"eXIf", exif_bytes(6), after=b"IDAT"),
         lambda: RGB16, "high byte"),
    Good("png_raw_profile_exif.png", lambda: insert_png(pil(_EXIF6, "PNG"), b"zTXt", raw_profile_exif(6)), rgb8, "exif_transpose"),
    Good("png_xmp_orientation.png", lambda: insert_png(pil(_EXIF6, "PNG"), b"iTXt", xmp_orientation(6)), rgb8, "exif_transpose"),
    Good("jpeg_xmp_orientation.jpg", lambda: pil(_EXIF6, "JPEG", quality=95, xmp=xmp_orientation(6)[22:]), None, "exif_transpose"),
    # 5. one rule for tRNS and animation at every depth
    Good("png16_rgb_trns.png", lambda: trns_rgb(png16(RGB16), RGB16[0, 0], 16), lambda: RGB16, "high byte"),
    Good("png16_grey_trns.png", lambda: insert_png(png16(RGB16[..., 0]), b"tRNS", struct.pack(">H", int(RGB16[0, 0, 0]))),
         lambda: RGB16[..., 0], "equal"),
    Good("png16_rgb_interlaced.png", lambda: png_raw(RGB16, interlace=True), lambda: RGB16, "high byte"),
    Good("png16_rgba_interlaced.png", lambda: png_raw(RGBA16, interlace=True), lambda: RGBA16, "high byte"),
    Good("png8_rgb_interlaced.png", lambda: png_raw(rgb8(), interlace=True), rgb8, "equal"),
    Good("png16_grey_alpha.png", lambda: png_raw(ramp16(2)), lambda: ramp16(2), "grey+alpha as RGBA, high byte"),
    Good("png8_grey_alpha.png", lambda: png_raw(rgb8()[..., 1:3]), lambda: rgb8()[..., 1:3], "equal"),
    Good("png16_rgba.png", lambda: png16(RGBA16), lambda: RGBA16, "high byte"),
    Good("png8_rgb_trns.png", lambda: trns_rgb(pil(rgb8(), "PNG"), rgb8()[0, 0], 8), rgb8, "equal"),
    Good("apng16_default_image.png", lambda: apng(png16(RGB16), [png16(65535 - RGB16), png16(RGB16 // 2)], default_in_animation=False),
         lambda: RGB16, "high byte"),
    Good("apng16_default_in_animation.png", lambda: apng(png16(RGB16), [png16(65535 - RGB16)], default_in_animation=True),
         lambda: RGB16, "high byte"),
    Good("apng8_default_image.png", lambda: apng(pil(rgb8(), "PNG"), [pil(255 - rgb8(), "PNG")], default_in_animation=False), rgb8, "equal"),
    # issue 46: a signed TIFF whose values are all within 0..65535 is read exactly, as uint16
    Good("tiff_int16_grey_non_negative.tif", lambda: tiff(INT16.clip(0, None)), lambda: INT16.clip(0, None).astype(np.uint16), "equal"),
    # libtiff complains (on fd 2) but Pillow decodes: a warning, never raw text
    Good("tiff_g4_damaged.tif", lambda: corrupt_tiff_strips(one_bit_g4(), seed=0), None, "equal"),
]

BAD = [
    Bad("jpeg12.jpg", jpeg12, "unsupported: 12-bit JPEG"),
    Bad("tiff_webp.tif", lambda: tiff(rgb8(), photometric="rgb", compression="webp"), "unsupported TIFF compression: WebP"),
    Bad("tiff16_png_compressed.tif", lambda: tiff(RGB16, photometric="rgb", compression="png"), "unsupported TIFF compression: PNG"),
    Bad("tiff16_grey_alpha.tif", lambda: tiff(ramp16(2), photometric="minisblack", extrasamples=[2]),
        "unsupported: 16-bit grey TIFF with 2 samples per pixel"),
    Bad("tiff_float_rgb.tif", lambda: tiff(RGB16.astype(np.float32) / 65535, photometric="rgb"), "unsupported: 32-bit floating-point RGB TIFF"),
    Bad("tiff_int16_grey.tif", lambda: tiff(INT16), "unsupported: signed 16-bit integer image with negative values (-2000..2095)"),
    Bad("tiff_int16_rgb.tif", lambda: tiff(np.stack([INT16] * 3, -1), photometric="rgb"),
        "unsupported: signed 16-bit integer RGB TIFF"),
    Bad("tiff_uint32_grey.tif", lambda: tiff(INT16.astype(np.uint32) + 70000), "unsupported: unsigned 32-bit integer image with values beyond 16 bits"),
    Bad("png_iccp_too_large.png", lambda: insert_png(pil(rgb8(), "PNG"), b"iCCP", b"icc\x00\x00" + zlib.compress(b"\0" * (3 << 20))),
        "corrupt PNG chunk iCCP (too large)"),
    Bad("png_iccp_empty.png", lambda: insert_png(pil(rgb8(), "PNG"), b"iCCP", b""), "corrupt PNG chunk iCCP (empty)"),
    Bad("png_ztxt_too_large.png", lambda: insert_png(pil(rgb8(), "PNG"), b"zTXt", b"k\x00\x00" + zlib.compress(b"a" * (5 << 20))),
        "corrupt PNG chunk zTXt (too large)"),
    Bad("png_text_bad_crc.png", lambda: bad_crc(insert_png(pil(rgb8(), "PNG"), b"tEXt", b"k\x00v"), b"tEXt"),
        "corrupt PNG chunk tEXt (CRC error)"),
    Bad("tiff8_lzw_damaged.tif", lambda: corrupt_tiff_strips(pil(rgb8(), "TIFF", compression="tiff_lzw")), "libtiff:"),
    Bad("tiff16_lzw_damaged.tif", lambda: corrupt_tiff_strips(tiff(RGB16, photometric="rgb", compression="lzw")), "cannot decode 16-bit TIFF"),
    Bad("tiff16_truncated.tif", lambda: tiff(RGB16, photometric="rgb", compression="lzw", rowsperstrip=4)[:1500], "TIFF"),
    Bad("png16_truncated.png", lambda: png16(RGB16)[:2000], "truncated PNG file"),
    Bad("jpeg_truncated.jpg", lambda: _cut(pil(rgb8(80, 120), "JPEG", quality=95), 2 / 3), "to decode what is there"),
    Bad("jpeg_header_only.jpg", lambda: pil(rgb8(), "JPEG", quality=95)[:400], "truncated JPEG file"),
    Bad("webp_truncated.webp", lambda: pil(rgb8(), "WEBP", quality=90)[:200], "WEBP"),
]


def generate(folder, cases=(*GOOD, *BAD)) -> dict[str, Path]:
    """Write every case into ``folder``; returns name -> path (``bad_inputs.generate``)."""
    return bad_inputs.generate(folder, cases)


if __name__ == "__main__":
    for name, path in generate(Path(sys.argv[1] if len(sys.argv) > 1 else "loader-corpus")).items():
        print(path)
