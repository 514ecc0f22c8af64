"""Every bad and odd input the command line and the loader must handle, made from code.

Nothing binary is committed: each case is a function returning the file's bytes. Run as a
script to write them all into a folder (to look at them, or to try the CLI by hand)::

    python tests/bad_inputs.py /tmp/odd-inputs

``CASES`` lists ``Case(name, make, code, message)``: ``code`` is the exit code of
``imgproc denoise FILE OUT`` (0, 65 or 66) and ``message`` a fragment of the one ``error:``
line (bad inputs) or of the ``warning:`` line (odd inputs that work with a warning), or
None. ``args`` are extra CLI options for the case.
"""

from __future__ import annotations

import dataclasses
import io
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
from PIL import Image, ImageCms

W, H = 48, 32  # small: the suite runs every case three ways


def photo(h=H, w=W, seed=0) -> np.ndarray:
    """A smooth colour image with an unmistakable top-left marker (for orientation)."""
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x + y) * 255 // max(w + h - 2, 1)], -1)
    img = img.astype(np.uint8)
    img[: h // 4, : w // 4] = (255, 0, 0)
    return img


def _save(img: Image.Image, fmt, **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    return buf.getvalue()


def jpeg(arr=None, **kw) -> bytes:
    return _save(Image.fromarray(photo() if arr is None else arr), "JPEG", quality=95, **kw)


def png(arr=None, **kw) -> bytes:
    return _save(Image.fromarray(photo() if arr is None else arr), "PNG", **kw)


# The inverse of EXIF orientation k: store the upright photo so that a viewer applying
# orientation k shows it upright (PIL's transposes; see imgproc.io.loader._orient).
_STORE = {
    2: lambda a: a[:, ::-1], 3: lambda a: a[::-1, ::-1], 4: lambda a: a[::-1],
    5: lambda a: a.swapaxes(0, 1), 6: lambda a: np.rot90(a, 1), 7: lambda a: a[::-1, ::-1].swapaxes(0, 1),
    8: lambda a: np.rot90(a, -1),
}


def exif_oriented(k: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = k
    return jpeg(np.ascontiguousarray(_STORE[k](photo())), exif=exif.tobytes())


def corrupt_exif() -> bytes:
    data = jpeg()
    body = b"Exif\x00\x00" + b"MM\x00*\x00\x00\x00\x08\xff\xff\x01\x12\x00\x03\x00"
    return data[:2] + b"\xff\xe1" + (len(body) + 2).to_bytes(2, "big") + body + data[2:]


def cmyk_profile() -> bytes:
    """A small valid ICC v2 CMYK printer profile (CMYK -> Lab through a 3-point lut16),
    built here so no profile file has to be committed."""
    grid = 3
    from skimage.color import rgb2lab

    pts = np.linspace(0, 1, grid)
    clut = []
    for c in pts:
        for m in pts:
            for yy in pts:
                for k in pts:
                    rgb = np.array([(1 - c) * (1 - k), (1 - m) * (1 - k), (1 - yy) * (1 - k)])
                    L, a, b = rgb2lab(rgb[None, None])[0, 0]
                    clut += [int(round(L / 100 * 65280)), int(round((a + 128) * 256)), int(round((b + 128) * 256))]
    clut = [min(max(v, 0), 65535) for v in clut]
    lut = b"mft2" + b"\0" * 4 + bytes([4, 3, grid, 0])
    lut += b"".join(struct.pack(">i", v) for v in (65536, 0, 0, 0, 65536, 0, 0, 0, 65536))
    lut += struct.pack(">HH", 2, 2)
    lut += struct.pack(">8H", *([0, 65535] * 4))
    lut += struct.pack(f">{len(clut)}H", *clut)
    lut += struct.pack(">6H", *([0, 65535] * 3))

    def s15(v):
        return struct.pack(">i", int(round(v * 65536)))

    text = b"imgproc test CMYK"
    desc = b"desc" + b"\0" * 4 + struct.pack(">I", len(text) + 1) + text + b"\0" + b"\0" * 8 + b"\0" * 3 + b"\0" * 67
    wtpt = b"XYZ " + b"\0" * 4 + s15(0.9642) + s15(1.0) + s15(0.8249)
    cprt = b"text" + b"\0" * 4 + b"public domain\0"
    tags = [(b"desc", desc), (b"wtpt", wtpt), (b"cprt", cprt), (b"A2B0", lut)]
    offset = 128 + 4 + 12 * len(tags)
    table, body = b"", b""
    for sig, data in tags:
        while (offset + len(body)) % 4:
            body += b"\0"
        table += sig + struct.pack(">II", offset + len(body), len(data))
        body += data
    size = offset + len(body)
    header = struct.pack(">I", size) + b"lcms" + bytes([2, 0x10, 0, 0]) + b"prtr" + b"CMYK" + b"Lab "
    header += struct.pack(">6H", 2024, 1, 1, 0, 0, 0) + b"acsp" + b"\0" * 4 + b"\0" * 4 + b"\0" * 8 + b"\0" * 8
    header += struct.pack(">I", 0) + s15(0.9642) + s15(1.0) + s15(0.8249) + b"\0" * 4 + b"\0" * 44
    assert len(header) == 128
    return header + struct.pack(">I", len(tags)) + table + body


def cmyk_jpeg(icc: bool) -> bytes:
    """Cyan left half, magenta right half, in CMYK."""
    a = np.zeros((H, W, 4), np.uint8)
    a[:, : W // 2, 0] = 255
    a[:, W // 2:, 1] = 255
    img = Image.fromarray(a, "CMYK")
    return _save(img, "JPEG", quality=95, **({"icc_profile": cmyk_profile()} if icc else {}))


def palette_transparent() -> bytes:
    img = Image.fromarray(photo()).convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
    return _save(img, "PNG", transparency=0)


def gif_transparent() -> bytes:
    img = Image.fromarray(photo()).convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
    return _save(img, "GIF", transparency=0)


def animated_gif() -> bytes:
    frames = [Image.fromarray(np.roll(photo(), 7 * i, axis=1)).convert("P") for i in range(3)]
    return _save(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=50, loop=0)


def multipage_tiff() -> bytes:
    frames = [Image.fromarray(photo()) for _ in range(2)]
    return _save(frames[0], "TIFF", save_all=True, append_images=frames[1:])


def grey_alpha() -> bytes:
    a = np.stack([photo()[..., 1], np.full((H, W), 128, np.uint8)], -1)
    return _save(Image.fromarray(a, "LA"), "PNG")


def rgba() -> bytes:
    a = np.concatenate([photo(), np.tile(np.arange(W, dtype=np.uint8)[None, :, None] * 5, (H, 1, 1))], -1)
    return png(a)


def one_bit(fmt) -> bytes:
    img = Image.fromarray(photo()[..., 0] > 128).convert("1")
    return _save(img, fmt)


def grey16() -> bytes:
    a = (np.arange(H * W).reshape(H, W) * 40).astype(np.uint16)
    return _save(Image.fromarray(a), "PNG")


def rgb16(ext) -> bytes:
    import cv2

    a = (photo().astype(np.uint16) * 257 + 3)[..., ::-1]  # BGR for OpenCV
    ok, buf = cv2.imencode(ext, np.ascontiguousarray(a))
    return buf.tobytes()


def srgb_icc_jpeg() -> bytes:
    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    return jpeg(icc_profile=icc)


def bomb() -> bytes:
    """A PNG that says 30000 x 30000 (900 megapixels) with a few rows of real data: the
    pixel limit must refuse it from the header alone."""
    ihdr = struct.pack(">IIBBBBB", 30000, 30000, 8, 0, 0, 0, 0)
    idat = zlib.compress(b"\0" * 30001 * 4, 9)

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def gif_bomb() -> bytes:
    """A GIF whose logical screen and frame say 65535 x 65535."""
    data = bytearray(_save(Image.fromarray(photo()).convert("P"), "GIF"))
    data[6:10] = struct.pack("<HH", 65535, 65535)
    i = data.index(b",")  # image descriptor
    data[i + 5: i + 9] = struct.pack("<HH", 65535, 65535)
    return bytes(data)


def int32_tiff() -> bytes:
    return _save(Image.fromarray(np.full((H, W), 1 << 20, np.int32)), "TIFF")


def nan_tiff() -> bytes:
    a = np.zeros((H, W), np.float32)
    a[3, 3] = np.nan
    return _save(Image.fromarray(a), "TIFF")


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    make: object  # () -> bytes
    code: int
    message: str | None = None
    args: tuple = ()


CASES = [
    # bad: refused with 65 and one line
    Case("empty.jpg", lambda: b"", 65, "empty file"),
    Case("text.jpg", lambda: b"hello, not an image\n", 65, "not a recognised image format"),
    Case("truncated.jpg", lambda: jpeg()[: len(jpeg()) // 2], 65, "truncated JPEG file"),
    Case("truncated.png", lambda: png()[: len(png()) // 2], 65, "truncated PNG file"),
    Case("header_only.jpg", lambda: jpeg()[:200], 65, "JPEG"),
    Case("bad_header.bmp", lambda: b"BM" + b"\x00\x01" * 40, 65, "BMP"),
    Case("fake.psd.jpg", lambda: b"8BPS\x00\x01" + b"\x00" * 40, 65, "unsupported format PSD"),
    Case("fake.eps.png", lambda: b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\n", 65, "unsupported format PostScript/EPS"),
    Case("drawing.svg.png", lambda: b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>', 65, "unsupported format SVG"),
    Case("sky.fits.tif", lambda: b"SIMPLE  =                    T" + b" " * 50, 65, "unsupported format FITS"),
    Case("doc.pdf.jpg", lambda: b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", 65, "unsupported format PDF"),
    Case("bomb.png", bomb, 65, "too many pixels"),
    Case("bomb.gif", gif_bomb, 65, "too many pixels"),
    Case("over_limit.png", png, 65, "too many pixels", ("--max-pixels", "1000")),
    Case("truncated_rgb16.png", lambda: rgb16(".png")[: len(rgb16(".png")) // 2], 65, "truncated PNG file"),
    Case("int32.tif", int32_tiff, 65, "beyond 16 bits"),
    Case("nan.tif", nan_tiff, 65, "NaN"),
    # odd: processed (exit 0), some with a warning line
    *[Case(f"exif_orientation_{k}.jpg", lambda k=k: exif_oriented(k), 0) for k in range(2, 9)],
    Case("corrupt_exif.jpg", corrupt_exif, 0, "corrupt EXIF ignored"),
    Case("cmyk.jpg", lambda: cmyk_jpeg(False), 0),
    Case("cmyk_icc.jpg", lambda: cmyk_jpeg(True), 0),
    Case("palette_transparent.png", palette_transparent, 0),
    Case("transparent.gif", gif_transparent, 0),
    Case("animated.gif", animated_gif, 0, "animated GIF with 3 frames: only the first is processed"),
    Case("multipage.tif", multipage_tiff, 0, "multi-page TIFF with 2 frames"),
    Case("grey_alpha.png", grey_alpha, 0),
    Case("rgba.png", rgba, 0),
    Case("one_bit.png", lambda: one_bit("PNG"), 0),
    Case("one_bit.bmp", lambda: one_bit("BMP"), 0),
    Case("one_bit.tif", lambda: one_bit("TIFF"), 0),
    Case("grey.jpg", lambda: jpeg(photo()[..., 1]), 0),
    Case("grey.png", lambda: png(photo()[..., 1]), 0),
    Case("grey16.png", grey16, 0),
    Case("rgb16.png", lambda: rgb16(".png"), 0),
    Case("rgb16.tif", lambda: rgb16(".tiff"), 0),
    Case("srgb_icc.jpg", srgb_icc_jpeg, 0),
    Case("png_named.jpg", png, 0),
    Case("truncated_allowed.jpg", lambda: jpeg()[: len(jpeg()) * 2 // 3], 0, "truncated JPEG file: decoded what was there", ("--allow-truncated",)),
    Case("tiny_1x1.png", lambda: png(photo(1, 1)), 0),
    Case("strip_1xN.png", lambda: png(photo(1, 37)), 0),
    Case("column_Nx1.jpg", lambda: jpeg(photo(29, 1)), 0),
    Case("plain.webp", lambda: _save(Image.fromarray(photo()), "WEBP", quality=90), 0),
    Case("plain.bmp", lambda: _save(Image.fromarray(photo()), "BMP"), 0),
]


def generate(folder, cases=CASES) -> dict[str, Path]:
    """Write every case into ``folder``; returns name -> path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for case in cases:
        p = folder / case.name
        p.write_bytes(case.make())
        paths[case.name] = p
    return paths


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "bad-inputs")
    for name, path in generate(out).items():
        print(path)
