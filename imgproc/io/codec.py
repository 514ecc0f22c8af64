"""Loading and saving images (Pillow), safely.

``load_image`` returns a NumPy array: EXIF orientation applied; grayscale ``(H, W)``; grey
with alpha ``(H, W, 2)``; RGB ``(H, W, 3)``; RGBA ``(H, W, 4)``; 16-bit grey and 16-bit RGB(A)
PNG/TIFF kept as uint16; palette images expanded to RGB (RGBA when the palette has
transparency); CMYK converted to RGB (through its ICC profile when it has one); 1-bit to
uint8 0/255. The defences (format from the bytes, allowlist, pixel limit before decoding,
truncated files) are in :mod:`imgproc.io.loader`.

``save_image`` writes atomically: a temporary file in the destination folder, fsync,
``os.replace``; on any failure the temporary file is removed and nothing is left behind.
It refuses to replace an existing file unless ``overwrite=True`` and always refuses to write
over ``source`` (the image's own input, also through links). Encoders that may print on
stderr (libtiff, libpng through imagecodecs, tifffile's log) run with that output captured
(:mod:`imgproc.io.native_stderr`); it is part of the error when the encoder fails and
dropped when it succeeds.

Conversions on save (no hidden rescaling otherwise): float images are taken as values in
[0, 1] and written as 8-bit ``round(255 x)`` saturated; a float image clearly outside
[0, 1] (max > 1.5 or min < -0.5: 0..255 floats) is refused, naming the fix
(:func:`imgproc.core.validate.check_saved_float_range`); uint16 is written at full depth to
PNG/TIFF (grey through Pillow, colour and grey + alpha to PNG through imagecodecs, colour to TIFF
through tifffile) and scaled to 8 bits
(``round(x / 257)``, never clipped) for formats that cannot hold it; alpha is kept where the format allows and flattened on white for JPEG
and BMP. TIFF is written with lossless Deflate (zlib) compression.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

from imgproc.core.validate import check_saved_float_range
from imgproc.errors import OutputError, OutputExistsError, WriteError
from imgproc.io.formats import DEFAULT_MAX_PIXELS, OUTPUT_FORMATS
from imgproc.io.interrupts import writing
from imgproc.io.loader import decode_bytes, read_image
from imgproc.io.native_stderr import captured, library_log

__all__ = ["decode_image", "encode_image", "load_image", "save_image", "OUTPUT_FORMATS", "output_format", "same_file"]

TEMP_SUFFIX = ".imgproc-tmp"
_NO_ALPHA = {"JPEG", "BMP"}
_SIXTEEN_BIT_GRAY = {"PNG", "TIFF"}


def load_image(path, *, max_pixels: int = DEFAULT_MAX_PIXELS, allow_truncated: bool = False) -> np.ndarray:
    """Read an image file into a NumPy array (see the module doc for shapes and dtypes).

    The format is read from the file's bytes (JPEG, PNG, WebP, TIFF, BMP, GIF allowed), the
    pixel count is checked against ``max_pixels`` before decoding, and truncated files are
    refused unless ``allow_truncated``. Non-fatal oddities (first frame of an animation,
    corrupt EXIF) issue an :class:`imgproc.errors.ImgprocWarning`. Details:
    :mod:`imgproc.io.loader`; metadata too: :func:`imgproc.io.loader.read_image`.

    Raises:
        InputError: the file is missing or unreadable (exit code 66).
        InvalidImageError: it is not a valid image (exit code 65).

    Example:
        >>> import imgproc
        >>> imgproc.load_image("sample_images/chelsea.jpg").shape
        (300, 451, 3)
    """
    return read_image(path, max_pixels=max_pixels, allow_truncated=allow_truncated)[0]


def decode_image(data, *, max_pixels: int = DEFAULT_MAX_PIXELS, allow_truncated: bool = False, name: str = "<bytes>",
                 return_info: bool = False, warn=None):
    """Decode a whole image file held in memory (``bytes``, ``bytearray`` or ``memoryview``:
    an object-store read, an HTTP body) into a NumPy array, exactly as :func:`load_image`
    decodes the same file: it is the same decoder (:func:`load_image` is "read the file's
    bytes, then this"), with the same defences and metadata rules.

    The format comes from the first bytes (JPEG, PNG, WebP, TIFF, BMP, GIF allowed; EPS,
    PSD, SVG, PDF, ... refused), the pixel count is checked from the header against
    ``max_pixels`` before any pixel is decoded (and more bytes than such an image can need
    are refused before looking at them), truncated data is refused unless
    ``allow_truncated``. The array is what :func:`load_image` returns: EXIF orientation
    applied; ``(H, W)`` grey, ``(H, W, 2)`` grey + alpha, ``(H, W, 3)`` RGB, ``(H, W, 4)``
    RGBA (HWC layout); uint8, or uint16 for 16-bit PNG/TIFF at full depth; float32 for
    one-sample float TIFF. Non-fatal oddities (first frame of an animation, corrupt EXIF)
    issue an :class:`imgproc.errors.ImgprocWarning`.

    Args:
        data: the file's bytes.
        max_pixels: refuse images with more pixels than this (default 90 megapixels).
        allow_truncated: decode truncated data as far as it goes (with a warning).
        name: what error messages and warnings call the data (a path or URL).
        return_info: also return an :class:`imgproc.io.loader.ImageInfo` (format, the EXIF
            block to write back with orientation 1, the ICC profile to keep, warnings).
        warn: ``warn(name, message)`` for each non-fatal problem instead of an
            :class:`~imgproc.errors.ImgprocWarning` (a worker collecting them for a report).

    Returns:
        the array, or ``(array, info)`` with ``return_info=True``.

    Raises:
        InvalidImageError: not a valid image of an allowed format (the reason is the one
            :func:`load_image` gives for the same bytes; exit code 65 on the command line).
        TypeError: ``data`` is not bytes-like.

    Example:
        >>> import pathlib, imgproc
        >>> data = pathlib.Path("sample_images/chelsea.jpg").read_bytes()
        >>> imgproc.decode_image(data).shape
        (300, 451, 3)
        >>> imgproc.decode_image(b"%PDF-1.7 ...")
        Traceback (most recent call last):
        imgproc.errors.InvalidImageError: <bytes>: unsupported format PDF; allowed: JPEG, PNG, WEBP, TIFF, BMP, GIF
    """
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    elif isinstance(data, np.ndarray) and data.dtype == np.uint8 and data.ndim == 1:
        data = data.tobytes()
    elif not isinstance(data, bytes):
        raise TypeError(f"data must be bytes, bytearray, memoryview or a 1-D uint8 array; got {type(data).__name__}")
    arr, info = decode_bytes(data, name, max_pixels=max_pixels, allow_truncated=allow_truncated, warn=warn)
    return (arr, info) if return_info else arr


def _format_name(format) -> str:
    """``"JPEG"``, ``"jpg"``, ``".jpg"``, ... -> the Pillow format name, or a ValueError
    naming the allowed values."""
    if isinstance(format, str):
        text = format.strip().lower()
        ext = text if text.startswith(".") else "." + text
        if ext in OUTPUT_FORMATS:
            return OUTPUT_FORMATS[ext]
        if text.upper() in OUTPUT_FORMATS.values():
            return text.upper()
    names = sorted(set(OUTPUT_FORMATS.values()))
    raise ValueError(f"format must be one of {', '.join(names)} (or an extension: "
                     f"{', '.join(sorted(OUTPUT_FORMATS))}); got {format!r}")


def encode_image(image, format, *, quality: int = 95, exif: bytes | None = None,
                 icc_profile: bytes | None = None) -> bytes:
    """The bytes of an image file of ``format`` holding ``image``: what
    :func:`save_image` writes (it is "this, then an atomic write"), for writers to object
    stores that need no temporary file.

    Args:
        image: ``(H, W)`` or ``(H, W, C)`` (HWC) with C in 1..4; uint8, uint16 or float in
            [0, 1] (NumPy or JAX). The conversions are :func:`save_image`'s: floats written
            as ``round(255 x)`` saturated (values clearly outside [0, 1] refused), uint16 at
            full depth to PNG/TIFF and ``round(x / 257)`` elsewhere, alpha flattened on
            white for JPEG and BMP.
        format: ``"JPEG"``, ``"PNG"``, ``"TIFF"``, ``"WEBP"``, ``"BMP"`` (any case) or an
            extension (``"jpg"``, ``".png"``, ``".tif"``, ...).
        quality: JPEG/WebP quality, 1..100.
        exif: EXIF block to embed (JPEG, PNG, WebP, TIFF); None writes none.
        icc_profile: ICC profile to embed (JPEG, PNG, WebP, TIFF); None writes none.

    Raises:
        ValueError: an unknown format, a quality outside 1..100, a float image clearly
            outside [0, 1], or a shape that is not an image.

    Example:
        >>> import numpy as np, imgproc
        >>> img = np.zeros((4, 6, 3), np.uint8)
        >>> data = imgproc.encode_image(img, "png")
        >>> data[:4], imgproc.decode_image(data).shape
        (b'\x89PNG', (4, 6, 3))
    """
    fmt = _format_name(format)
    _check_encode_args(image, quality)
    return _encode(image, fmt, quality, exif, icc_profile)


def _check_encode_args(image, quality):
    check_saved_float_range(image)
    if isinstance(quality, bool) or not isinstance(quality, (int, np.integer)) or not 1 <= quality <= 100:
        raise ValueError(f"quality must be an integer from 1 to 100; got {quality!r}")


def output_format(path) -> str:
    """Pillow format name for an output path, from its extension."""
    ext = Path(path).suffix.lower()
    if ext not in OUTPUT_FORMATS:
        raise OutputError(path, f"unknown output extension {ext or '(none)'!r}; use one of {', '.join(sorted(OUTPUT_FORMATS))}")
    return OUTPUT_FORMATS[ext]


def _to_8bit(arr: np.ndarray) -> np.ndarray:
    if arr.dtype == np.uint8:
        return arr
    if arr.dtype == np.uint16:
        return np.round(arr / 257.0).astype(np.uint8)
    if np.issubdtype(arr.dtype, np.floating):
        return np.clip(np.round(arr.astype(np.float64) * 255.0), 0, 255).astype(np.uint8)
    raise ValueError(f"image dtype must be uint8, uint16 or float; got {arr.dtype}")


def _to_pil(arr: np.ndarray, fmt: str) -> Image.Image:
    arr = np.asarray(arr)
    if arr.dtype.name == "bfloat16" or arr.dtype == np.float16:
        arr = arr.astype(np.float32)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.ndim == 2 and arr.dtype == np.uint16 and fmt in _SIXTEEN_BIT_GRAY:
        return Image.fromarray(np.ascontiguousarray(arr))  # mode I;16
    arr = _to_8bit(arr)
    if arr.ndim == 2:
        return Image.fromarray(arr)  # mode L
    if arr.ndim != 3 or arr.shape[2] not in (2, 3, 4):
        raise ValueError(f"image must be (H, W), (H, W, 1), (H, W, 2), (H, W, 3) or (H, W, 4); got {arr.shape}")
    mode = {2: "LA", 3: "RGB", 4: "RGBA"}[arr.shape[2]]
    img = Image.fromarray(np.ascontiguousarray(arr))  # LA, RGB or RGBA from the shape
    if mode in ("LA", "RGBA") and fmt in _NO_ALPHA:
        background = Image.new("RGBA", img.size, (255, 255, 255, 255))
        img = Image.alpha_composite(background, img.convert("RGBA"))
        img = img.convert("L" if mode == "LA" else "RGB")
    return img


def same_file(a, b) -> bool:
    """True when ``a`` and ``b`` name the same file (symlinks and hard links included)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _encode(arr: np.ndarray, fmt: str, quality: int, exif, icc_profile) -> bytes:
    """The file's bytes. JPEG (8-bit RGB or grey) goes through libjpeg-turbo (simplejpeg,
    faster than Pillow); 16-bit colour PNG through imagecodecs (libpng) and TIFF through
    tifffile (Pillow cannot write them; neither writes metadata); everything else through
    Pillow."""
    arr = np.asarray(arr)
    if arr.dtype.name == "bfloat16" or arr.dtype == np.float16:
        arr = arr.astype(np.float32)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.dtype == np.uint16 and arr.ndim == 3 and arr.shape[2] in (3, 4) and fmt in _SIXTEEN_BIT_GRAY:
        return _encode_16bit_colour(arr, fmt)
    if arr.dtype == np.uint16 and arr.ndim == 3 and arr.shape[2] == 2 and fmt == "PNG":
        import imagecodecs  # 16-bit grey + alpha: Pillow cannot write it

        with _native_call(fmt):
            return bytes(imagecodecs.png_encode(np.ascontiguousarray(arr)))
    if fmt == "JPEG":
        encoded = _encode_jpeg_fast(arr, quality, exif, icc_profile)
        if encoded is not None:
            return encoded
    pil = _to_pil(arr, fmt)
    params = {"quality": int(quality)} if fmt in ("JPEG", "WEBP") else {}
    if exif and fmt in ("JPEG", "PNG", "WEBP", "TIFF"):
        params["exif"] = exif
    if icc_profile and fmt in ("JPEG", "PNG", "WEBP", "TIFF"):
        params["icc_profile"] = icc_profile
    if fmt == "TIFF":  # lossless Deflate (zlib), as tifffile writes 16-bit colour
        params["compression"] = "tiff_adobe_deflate"
    buf = io.BytesIO()
    if fmt == "TIFF":  # libtiff (Pillow's TIFF writer with compression) prints on fd 2
        with _native_call(fmt):
            pil.save(buf, format=fmt, **params)
    else:
        pil.save(buf, format=fmt, **params)
    return buf.getvalue()


@contextlib.contextmanager
def _native_call(fmt):
    """Run an encoder with its native stderr and tifffile's log captured: nothing reaches
    stderr; a failure becomes one RuntimeError naming the format and what the library said
    (an encoder refusing a valid array is an internal error, exit code 70)."""
    error = None
    with captured() as cap, library_log() as msgs:
        try:
            yield
        except (ValueError, TypeError):
            raise
        except Exception as e:  # noqa: BLE001 - re-raised below with what the library said
            error = e
    if error is not None:
        said = "; ".join([str(error).splitlines()[0] if str(error) else type(error).__name__] + cap.lines() + msgs)
        raise RuntimeError(f"cannot encode {fmt} ({said[:300]})") from error


def _encode_16bit_colour(arr, fmt):
    """16-bit RGB(A) ``(H, W, 3|4)`` uint16 as TIFF (tifffile, Deflate) or PNG (libpng
    through imagecodecs, in RGB(A) order as given). The PNG settings are OpenCV's
    ``imencode(".png")`` defaults, which wrote these files before: zlib level 1, the RLE
    strategy and the Sub filter (fast; the same bytes as OpenCV wrote)."""
    if fmt == "TIFF":
        import tifffile

        buf = io.BytesIO()
        with _native_call(fmt):
            tifffile.imwrite(buf, np.ascontiguousarray(arr), photometric="rgb", compression="zlib")
        return buf.getvalue()
    import imagecodecs

    png = imagecodecs.PNG
    with _native_call(fmt):  # libpng's messages go to fd 2
        return bytes(imagecodecs.png_encode(np.ascontiguousarray(arr), level=png.COMPRESSION.SPEED,
                                            strategy=png.STRATEGY.RLE, filter=png.FILTER.SUB))


def _encode_jpeg_fast(arr, quality, exif, icc_profile):
    if arr.dtype != np.uint8 or not (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] == 3)):
        return None
    if exif and len(exif) > 65000:
        return None  # needs Pillow's handling
    try:
        import simplejpeg
    except ImportError:
        return None
    if arr.ndim == 2:
        data = simplejpeg.encode_jpeg(np.ascontiguousarray(arr[:, :, None]), quality=int(quality), colorspace="GRAY")
    else:
        data = simplejpeg.encode_jpeg(np.ascontiguousarray(arr), quality=int(quality), colorspace="RGB", colorsubsampling="420")
    return _insert_jpeg_metadata(data, exif, icc_profile)


def _insert_jpeg_metadata(data: bytes, exif, icc_profile) -> bytes:
    """Insert EXIF (APP1) and ICC (APP2, chunked) segments after SOI and JFIF's APP0."""
    segments = b""
    if exif:
        body = exif if exif.startswith(b"Exif\x00\x00") else b"Exif\x00\x00" + exif
        segments += b"\xff\xe1" + (len(body) + 2).to_bytes(2, "big") + body
    if icc_profile:
        chunk = 65519
        parts = [icc_profile[i:i + chunk] for i in range(0, len(icc_profile), chunk)]
        for n, part in enumerate(parts, 1):
            body = b"ICC_PROFILE\x00" + bytes([n, len(parts)]) + part
            segments += b"\xff\xe2" + (len(body) + 2).to_bytes(2, "big") + body
    if not segments:
        return data
    pos = 2
    if data[2:4] == b"\xff\xe0":
        pos = 4 + int.from_bytes(data[4:6], "big")
    return data[:pos] + segments + data[pos:]


def save_image(path, image, *, quality: int = 95, overwrite: bool = False, source=None,
               exif: bytes | None = None, icc_profile: bytes | None = None) -> Path:
    """Write ``image`` to ``path`` atomically; the format comes from the extension.

    Args:
        path: destination (``.jpg``, ``.jpeg``, ``.png``, ``.tif``, ``.tiff``, ``.webp``, ``.bmp``).
        image: ``(H, W)`` or ``(H, W, C)`` with C in 1..4; uint8, uint16 or float in [0, 1]
            (NumPy or JAX). Floats are written as ``round(255 x)`` saturated, so a little
            overshoot (a sharpened image) is clipped; values clearly outside [0, 1] (max >
            1.5 or min < -0.5, e.g. 0..255 floats) are refused with a ValueError naming the
            fix (``image / 255`` or ``.astype(np.uint8)``) instead of writing a white image.
        quality: JPEG/WebP quality, 1..100.
        overwrite: replace an existing file (atomically).
        source: the image's input file; writing over it is always refused.
        exif: EXIF block to embed (JPEG, PNG, WebP, TIFF), e.g. from
            :func:`imgproc.io.loader.read_image`; None writes none.
        icc_profile: ICC profile to embed (JPEG, PNG, WebP, TIFF); None writes none.

    Raises:
        ValueError: a float image clearly outside [0, 1].
        OutputError: exists without ``overwrite``, same file as ``source``, unknown
            extension, folder missing or not writable (exit code 73).
        WriteError: I/O error while writing, e.g. disk full (exit code 74).
    """
    path = Path(path)
    fmt = output_format(path)
    _check_encode_args(image, quality)
    _check_destination(path, overwrite, source)  # before the work of encoding
    return write_atomically(path, _encode(image, fmt, quality, exif, icc_profile), overwrite=overwrite, source=source)


def _check_destination(path: Path, overwrite: bool, source):
    if source is not None and same_file(source, path):
        raise OutputError(path, "is the input file itself; choose another output")
    if path.exists() and not overwrite:
        raise OutputExistsError(path, "exists; pass overwrite=True to replace it")
    if path.is_dir():
        raise OutputError(path, "is a folder")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(path, f"folder {folder} does not exist")


def write_atomically(path, data: bytes, *, overwrite: bool = False, source=None) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file in the same folder, fsync,
    ``os.replace``), with :func:`save_image`'s refusals (raising the same errors): an existing file without
    ``overwrite``, ``source`` itself. Nothing is left behind on failure."""
    path = Path(path)
    _check_destination(path, overwrite, source)
    folder = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.{os.getpid()}.", suffix=TEMP_SUFFIX)
    except OSError as e:
        raise OutputError(path, f"folder not writable ({e.strerror or e})") from None
    try:
        with writing(tmp):  # a command that leaves mid-write removes it (imgproc.io.interrupts)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o666 & ~_umask())
            if source is not None and same_file(source, path):  # became a link to the input meanwhile
                raise OutputError(path, "is the input file itself; choose another output")
            if overwrite or not _publish_new(tmp, path):
                if path.exists() and not overwrite:  # appeared while we were writing
                    raise OutputExistsError(path, "exists (it appeared while this was written); pass overwrite=True to replace it")
                os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(e, OSError) and not isinstance(e, (OutputError, WriteError)):
            raise WriteError(path, f"cannot write ({e.strerror or e})") from None
        raise
    return path


def _publish_new(tmp, path) -> bool:
    """Give ``tmp`` the name ``path`` only if no file has it, in one step: a hard link
    fails when the name exists, where checking and then renaming would let a file that
    another process wrote in between be replaced. True when done (``tmp`` is then
    removed); False where the file system has no hard links (the caller checks and
    renames). Raises :class:`OutputExistsError` when ``path`` exists."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise OutputExistsError(path, "exists (it appeared while this was written); pass overwrite=True to replace it") from None
    except OSError as e:
        if e.errno in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK, errno.ENOSYS):
            return False
        raise
    os.unlink(tmp)
    return True


def temp_files_for(path) -> list[Path]:
    """Temporary files that a killed process left for ``path``: a :func:`save_image` killed
    with SIGKILL cannot clean up. Temporary names carry the writer's process id; only those
    of processes that no longer exist are returned (the next run removes them)."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    stale = []
    try:
        candidates = sorted(folder.glob(f".{glob_escape(path.name)}.*{TEMP_SUFFIX}"))
    except OSError:
        return []
    for c in candidates:
        pid = c.name[len(path.name) + 2:].split(".", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            stale.append(c)
        except OSError:
            pass
    return stale


def glob_escape(name: str) -> str:
    import glob

    return glob.escape(name)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
