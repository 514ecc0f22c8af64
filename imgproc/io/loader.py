"""The defended image loader behind :func:`imgproc.load_image` and the command line.

What it promises, for any sequence of bytes:

* the format comes from the file's first bytes (its *signature*), never from its name, and
  only formats in the allowlist are decoded (default: JPEG, PNG, WebP, TIFF, BMP, GIF).
  PostScript/EPS, PSD, SVG, FITS, PDF and everything else are refused, so Pillow's
  riskier plugins (EPS runs Ghostscript) are never reached;
* the pixel count is checked from the header, before any pixel is decoded
  (``max_pixels``, default 90 megapixels), so a decompression bomb is refused in
  milliseconds and a few kilobytes of memory;
* a truncated file is refused unless ``allow_truncated=True`` (then what is there is
  decoded, the rest is grey/black, and a warning says so); the error suggests the option
  only when trying it does get pixels out of the file;
* an animated GIF/PNG/WebP or a multi-page TIFF gives its first frame (for an APNG the
  default image, at every bit depth), with a warning;
* a corrupt EXIF block is ignored with a warning (the image is still processed);
* every failure is an :class:`~imgproc.errors.InvalidImageError` (exit code 65) with one
  line saying why, never another exception (checked by the fuzz harness in ``fuzz/``);
  when the decoder's own message is vague, :mod:`imgproc.io.reasons` reads the true reason
  from the bytes (``unsupported: 12-bit JPEG``, ``unsupported TIFF compression: WebP``,
  ``corrupt PNG chunk iCCP (too large)``);
* nothing a native library prints reaches stderr: libtiff's and libpng's messages (fd 2)
  and tifffile's log are captured (:mod:`imgproc.io.native_stderr`) and end the error's
  reason, or become one warning when the file decoded anyway.

Content (see ``docs/cli.md``): EXIF orientation 2-8 is applied (the pixels are turned
upright, the returned EXIF says orientation 1), read after the pixels from wherever Pillow
finds it -- the EXIF block, a PNG eXIf chunk after the image data, ImageMagick's
``Raw profile type exif`` text chunk, and XMP ``tiff:Orientation`` when there is no EXIF
orientation (Pillow's ``ImageOps.exif_transpose`` rule); grey stays ``(H, W)``; grey +
alpha is ``(H, W, 2)``; palette images become RGB, or RGBA when they have transparency;
a transparency colour (tRNS) on a grey or RGB PNG adds no alpha at any bit depth; 1-bit
becomes uint8 0/255; 16-bit grey and 16-bit RGB(A) PNG/TIFF stay uint16 at full depth,
as does 16-bit grey + alpha PNG (``(H, W, 2)``, where Pillow gives 8-bit RGBA); 16-bit
min-is-white grey TIFF is inverted as Pillow does at 8 bits (Pillow leaves it raw)
(16-bit colour through :mod:`imgproc.io.deep_colour`: every TIFF layout, no fallback to a
decoder that could scramble it; premultiplied alpha un-premultiplied like Pillow's 8-bit
path); 32-bit float RGB TIFF is refused as unsupported (one-sample float TIFF is read);
CMYK is converted to RGB through its embedded ICC profile when it has one (else with the
plain inversion formula); any other ICC profile is kept as is (the pixels are not
converted) and written to the output unless metadata are stripped.

JPEG RGB and grey images are decoded with libjpeg-turbo through ``simplejpeg`` (faster
than Pillow; why: benchmarks/NOTES.md, "docs/cli.md: the native-stderr capture, the fast
JPEG path, size buckets"); 16-bit colour PNG with
libpng (imagecodecs) and TIFF with tifffile; Pillow does everything else and reads the
metadata.
"""

from __future__ import annotations

import dataclasses
import io
import threading
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from PIL import Image, ImageFile, UnidentifiedImageError

from imgproc.errors import ImgprocWarning, InputError, InvalidImageError
from imgproc.io.deep_colour import decode_png16, decode_tiff16
from imgproc.io.formats import ALLOWED_FORMATS, DEFAULT_MAX_PIXELS
from imgproc.io.native_stderr import captured, library_log
from imgproc.io.reasons import explain

__all__ = [
    "ALLOWED_FORMATS",
    "COMMAND_LINE_OPTIONS",
    "PYTHON_OPTIONS",
    "DEFAULT_MAX_PIXELS",
    "check_float_scale",
    "ImageInfo",
    "decode_bytes",
    "read_file_bytes",
    "read_image",
    "sniff_format",
]

# Files larger than this are refused before being read (an image within max_pixels at
# 16 bits x 4 channels uncompressed, plus room for metadata).
_MAX_FILE_BYTES_PER_PIXEL = 8

_SIGNATURES = [
    (b"\xff\xd8\xff", "JPEG"),
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
    (b"BM", "BMP"),
]
_REFUSED_SIGNATURES = [
    (b"%!PS", "PostScript/EPS"),
    (b"\xc5\xd0\xd3\xc6", "EPS"),
    (b"8BPS", "PSD"),
    (b"SIMPLE  =", "FITS"),
    (b"%PDF", "PDF"),
    (b"II+\x00", "BigTIFF"),
    (b"MM\x00+", "BigTIFF"),
    (b"\x00\x00\x00\x0cjP  ", "JPEG 2000"),
    (b"\xff\x4f\xff\x51", "JPEG 2000"),
    (b"\x00\x00\x01\x00", "ICO"),
    (b"icns", "ICNS"),
    (b"P1", "PNM"), (b"P2", "PNM"), (b"P3", "PNM"), (b"P4", "PNM"), (b"P5", "PNM"), (b"P6", "PNM"),
]


class _SharedExclusive:
    """A lock many holders may share, or one may hold alone (shared waits while an
    exclusive holder waits, so the exclusive one is not starved)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting = 0

    @contextmanager
    def shared(self):
        with self._cond:
            self._cond.wait_for(lambda: not self._exclusive and not self._waiting)
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self):
        with self._cond:
            self._waiting += 1
            self._cond.wait_for(lambda: not self._exclusive and not self._shared)
            self._waiting -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()


# Pillow's LOAD_TRUNCATED_IMAGES is a module global read during every decode, and while
# reading chunks (set, the PNG plugin skips the CRC check of ancillary chunks): a header
# read or load that may not see it set shares this lock, the one that sets the switch
# holds it alone (else another thread's truncated or corrupt file would be read without
# being asked).
_truncated_switch = _SharedExclusive()
_limit_lock = threading.Lock()
_meta_lock = threading.Lock()


@dataclasses.dataclass
class ImageInfo:
    """What :func:`read_image` learnt besides the pixels.

    Attributes:
        format: the format found in the bytes (``"JPEG"``, ``"PNG"``, ...).
        exif: the EXIF block to write with the output (orientation reset to 1), or None.
        icc_profile: the ICC profile to write with the output, or None (none, or the
            pixels were converted to sRGB).
        warnings: what was odd but not fatal, one line each.
        frames: number of frames/pages in the file (only the first is decoded).
    """

    format: str
    exif: bytes | None = None
    icc_profile: bytes | None = None
    warnings: list = dataclasses.field(default_factory=list)
    frames: int = 1


def sniff_format(head: bytes) -> str | None:
    """The format named by a file's first bytes: an allowlisted name, or None."""
    for sig, fmt in _SIGNATURES:
        if head.startswith(sig):
            return fmt
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WEBP"
    return None


def _refused_name(head: bytes) -> str | None:
    for sig, name in _REFUSED_SIGNATURES:
        if head.startswith(sig):
            return name
    text = head[:256].lstrip().lower()
    if text.startswith(b"<?xml") or text.startswith(b"<svg") or b"<svg" in text:
        return "SVG"
    return None


@contextmanager
def _pillow_limit(max_pixels: int):
    """Pillow refuses images beyond 2 x Image.MAX_IMAGE_PIXELS (and warns above it) on its
    own; our limit is checked separately, so lift Pillow's to ours while opening."""
    if max_pixels <= Image.MAX_IMAGE_PIXELS:
        yield
        return
    with _limit_lock:
        old = Image.MAX_IMAGE_PIXELS
        Image.MAX_IMAGE_PIXELS = max_pixels
        try:
            yield
        finally:
            Image.MAX_IMAGE_PIXELS = old


# How a message names the options that would change its outcome: as the caller spells them.
# Python (load_image, decode_image: the default) takes keyword arguments; the command line
# (imgproc/io/folder_runner.py, imgproc.ray) passes COMMAND_LINE_OPTIONS. A name missing
# from the mapping (imgproc augment, which has neither option) is not suggested.
PYTHON_OPTIONS = {"allow_truncated": "allow_truncated=True", "max_pixels": "max_pixels"}
COMMAND_LINE_OPTIONS = {"allow_truncated": "--allow-truncated", "max_pixels": "--max-pixels"}


def read_image(path, *, max_pixels: int = DEFAULT_MAX_PIXELS, allow_truncated: bool = False,
               formats=ALLOWED_FORMATS, warn=None, memory_check=None, options=PYTHON_OPTIONS):
    """Read an image file defensively: ``(array, ImageInfo)``.

    Args:
        path: the file.
        max_pixels: refuse images with more pixels than this (checked before decoding).
        allow_truncated: decode truncated files as far as they go (with a warning).
        formats: the allowlist of format names.
        warn: ``warn(path, message)`` for non-fatal problems; default issues an
            :class:`~imgproc.errors.ImgprocWarning`.
        memory_check: ``memory_check(path, width, height, channels, sample_bytes)``,
            called once the header is read and before any pixel is decoded; it raises
            to refuse the image (the command's ``--max-memory``, :mod:`imgproc.io.memory`).
        options: how messages spell the options that would help (``pass
            allow_truncated=True``): :data:`PYTHON_OPTIONS`, or :data:`COMMAND_LINE_OPTIONS`
            for the command line (``pass --allow-truncated``).

    Raises:
        InputError: missing, a folder, or unreadable (exit code 66).
        InvalidImageError: not a valid image of an allowed format (exit code 65).
    """
    data = read_file_bytes(path, max_pixels=max_pixels)
    return decode_bytes(data, Path(path), max_pixels=max_pixels, allow_truncated=allow_truncated, formats=formats,
                        warn=warn, memory_check=memory_check, options=options)


def read_file_bytes(path, *, max_pixels: int = DEFAULT_MAX_PIXELS) -> bytes:
    """The bytes of an image file, refused unread (InvalidImageError) when larger than an
    image within ``max_pixels`` can need; :class:`InputError` (exit 66) for a missing,
    unreadable file or a folder. What :func:`read_image` reads before it decodes."""
    path = Path(path)
    try:
        with _open_for_reading(path) as f:
            before = _file_stat(f)
            _check_size(before.st_size, max_pixels, path)  # before reading a huge file
            data = f.read()
            _check_unchanged(before, _file_stat(f), len(data), path)
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, "is a folder, not an image file") from None
    except PermissionError:
        raise InputError(path, "permission denied") from None
    except OSError as e:
        if isinstance(e, InvalidImageError):
            raise
        raise InputError(path, f"cannot read ({e.strerror or e})") from None
    return data


def _open_for_reading(path: Path):
    """``open(path, "rb")`` that does not wait for a writer: a named pipe (FIFO) nobody
    writes to would block ``open`` forever, where Ctrl-C cannot reach the thread. It is
    opened non-blocking, then read blocking: with no writer it reads as empty (refused as
    an empty file), with one (``<(command)``, a writer already there) it reads what the
    writer sends. Regular files read as always."""
    import os

    nonblock = getattr(os, "O_NONBLOCK", 0)
    if not nonblock:  # no such flag (Windows): no FIFOs to wait for either
        return open(path, "rb")
    fd = os.open(path, os.O_RDONLY | nonblock)
    try:
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _check_size(size: int, max_pixels, path):
    """Refuse more bytes than an image within ``max_pixels`` can need (16 bits x 4 channels
    uncompressed, plus 64 MiB of metadata), before decoding anything."""
    limit = max(int(max_pixels), 1) * _MAX_FILE_BYTES_PER_PIXEL + (64 << 20)
    if size > limit:
        raise InvalidImageError(path, f"file too large ({size} bytes) for the pixel limit {max_pixels}")


def _file_stat(f):
    import os
    import stat

    st = os.fstat(f.fileno())
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError
    return st


def _check_unchanged(before, after, read: int, path):
    """Refuse a regular file that changed while it was read (its size or modification
    time differs before and after, or fewer or more bytes came than it had): a file being
    rewritten in place reads as a mix of the old and the new image, which decodes without
    complaint. InvalidImageError (65); a file replaced by a rename is not affected (the
    open file is the old one, read whole)."""
    import stat

    if not stat.S_ISREG(before.st_mode):
        return
    what = []
    if after.st_size != before.st_size:
        what.append(f"size {before.st_size} -> {after.st_size} bytes")
    if after.st_mtime_ns != before.st_mtime_ns:
        what.append("modification time changed")
    if not what and read != before.st_size:
        what.append(f"{read} of {before.st_size} bytes read")
    if what:
        raise InvalidImageError(path, f"changed while it was read ({', '.join(what)}); "
                                      "process it again once nothing writes to it")


def decode_bytes(data: bytes, path="<bytes>", *, max_pixels: int = DEFAULT_MAX_PIXELS,
                 allow_truncated: bool = False, formats=ALLOWED_FORMATS, warn=None, memory_check=None,
                 options=PYTHON_OPTIONS):
    """Decode ``data`` (a whole image file) like :func:`read_image`; ``path`` names it in
    messages."""
    notes: list[str] = []

    def note(msg):
        notes.append(msg)
        if warn is None:
            warnings.warn(f"{path}: {msg}", ImgprocWarning, stacklevel=4)
        else:
            warn(path, msg)

    if isinstance(max_pixels, bool) or not isinstance(max_pixels, (int, np.integer)) or max_pixels < 1:
        raise ValueError(f"max_pixels must be a positive integer; got {max_pixels!r}")
    allowed = tuple(f.upper() for f in formats)
    _check_size(len(data), max_pixels, path)
    if len(data) == 0:
        raise InvalidImageError(path, "empty file")
    fmt = sniff_format(data[:32])
    if fmt is None:
        refused = _refused_name(data[:512])
        if refused:
            raise InvalidImageError(path, f"unsupported format {refused}; allowed: {', '.join(allowed)}")
        raise InvalidImageError(path, f"not a recognised image format; allowed: {', '.join(allowed)}")
    if fmt not in allowed:
        raise InvalidImageError(path, f"format {fmt} is not allowed here; allowed: {', '.join(allowed)}")
    said: list[str] = []
    try:
        with library_log() as logged:  # Pillow's plugins log some problems instead of warning
            try:
                arr, info = _decode(data, path, fmt, max_pixels, allow_truncated, note, notes, said, memory_check,
                                    options)
            finally:
                said.extend(f"Pillow: {m}" for m in logged)
        for m in dict.fromkeys(logged):
            note(f"Pillow: {m}"[:200])
            info.warnings.append(f"Pillow: {m}"[:200])
        return arr, info
    except (InvalidImageError, InputError):
        raise
    except MemoryError:
        raise InvalidImageError(path, "not enough memory to decode it") from None
    except Image.DecompressionBombError:
        raise InvalidImageError(path, f"too many pixels (over the limit of {max_pixels})"
                                      + _suggest(options, "max_pixels", "; raise {}")) from None
    except RecursionError:
        raise InvalidImageError(path, f"cannot decode {fmt} (nested too deeply)") from None
    except Exception as e:  # noqa: BLE001 - Pillow's plugins raise many kinds on bad bytes
        reason = explain(data, fmt, said)
        if reason:
            raise InvalidImageError(path, reason) from None
        if isinstance(e, UnidentifiedImageError):
            raise InvalidImageError(path, f"not a valid {fmt} file" + _native_suffix(said)) from None
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        if "truncated" in msg.lower() or "premature end" in msg.lower():
            if not allow_truncated and _truncated_decode_works(data, fmt, max_pixels):
                raise InvalidImageError(path, f"truncated {fmt} file ({msg})" + _suggest(
                    options, "allow_truncated", "; pass {} to decode what is there")) from None
            raise InvalidImageError(path, f"truncated {fmt} file ({msg})" + _native_suffix(said)) from None
        raise InvalidImageError(path, f"cannot decode {fmt} ({msg}{_native_suffix(said, ';')})") from None


def _suggest(options, name: str, template: str) -> str:
    """``template`` with the caller's spelling of option ``name`` (:data:`PYTHON_OPTIONS`),
    or nothing where the caller has no such option."""
    return template.format(options[name]) if name in options else ""


def _native_suffix(said, sep=" (") -> str:
    """What the native decoder printed, for the end of a reason."""
    if not said:
        return ""
    text = "; ".join(said)[:200]
    return f"; {text}" if sep == ";" else f" ({text})"


def _truncated_decode_works(data, fmt, max_pixels) -> bool:
    """Whether allowing truncation would get pixels out of this file (so suggesting it helps)."""
    try:
        with library_log():
            _decode(data, "<retry>", fmt, max_pixels, True, lambda m: None, [], [])
        return True
    except Exception:  # noqa: BLE001 - it does not help
        return False


def _decode(data, path, fmt, max_pixels, allow_truncated, note, notes, said, memory_check=None,
            options=PYTHON_OPTIONS):
    # Pillow reports corrupt EXIF (read while opening a JPEG) with a UserWarning, not an
    # exception: record warnings while reading the header and the metadata instead of
    # letting them reach stderr. catch_warnings is process-wide, hence the lock (the
    # header read is cheap; decoding happens outside it).
    with _meta_lock, _truncated_switch.shared(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with _pillow_limit(max_pixels):
            img = Image.open(io.BytesIO(data), formats=[fmt])
        w, h = img.size
        if w < 1 or h < 1:
            raise InvalidImageError(path, f"empty image ({w}x{h})")
        if w * h > max_pixels:
            raise InvalidImageError(path, f"too many pixels ({w}x{h} = {w * h} > {max_pixels})"
                                          + _suggest(options, "max_pixels", "; raise {} to allow it"))
        if fmt == "JPEG":
            _check_jpeg_scan_length(data, path, w, h)
        if memory_check is not None:
            memory_check(path, w, h, _decoded_channels(img), _sample_bytes(img, fmt, data))
        frames = 1
        try:
            frames = int(getattr(img, "n_frames", 1))
        except Exception:  # noqa: BLE001 - a broken later frame: the first one may still be fine
            frames = 1
        if frames > 1:
            img.seek(0)
    if frames > 1:
        kind = {"GIF": "animated GIF", "PNG": "animated PNG", "WEBP": "animated WebP"}.get(fmt, f"multi-page {fmt}")
        note(f"{kind} with {frames} frames: only the first is processed")

    arr = None
    if fmt == "JPEG" and img.mode in ("RGB", "L") and _jpeg_complete(data):
        arr = _decode_jpeg_fast(data, img.mode)
    channels = _deep_colour_channels(img, fmt, data) if arr is None else 0
    if channels and fmt == "PNG":
        # Pillow decodes first (at 8 bits, pure Python + zlib, silent) so that a corrupt
        # or truncated file is judged exactly as the 8-bit path judges it
        _load(img, path, fmt, allow_truncated, note, said, options)
        arr, messages = decode_png16(data, path, channels)
    elif channels:
        arr, messages = decode_tiff16(data, path, channels, img.size)
    if arr is not None and channels:
        for m in messages:
            note(m[:200])
    if arr is None:
        _load(img, path, fmt, allow_truncated, note, said, options)
        arr, icc = _to_array(img, path, img.info.get("icc_profile") or None, note)
        if fmt == "TIFF" and img.mode.startswith("I;16") and _tiff_min_is_white(img):
            arr = 65535 - arr  # Pillow inverts min-is-white at 8 bits but not at 16: one rule
    else:
        icc = img.info.get("icc_profile") or None
    # Orientation and EXIF are read after the pixels: a PNG's eXIf chunk may follow them
    with _meta_lock, _truncated_switch.shared(), warnings.catch_warnings(record=True) as caught_meta:
        warnings.simplefilter("always")
        orientation, exif_out = _read_exif(img, note)
    problems = [str(w.message).strip() for w in [*caught, *caught_meta] if issubclass(w.category, UserWarning)]
    if any("exif" in p.lower() for p in problems):
        note(f"corrupt EXIF ignored ({problems[0][:80]})")
        exif_out = None
    elif problems:
        note(problems[0][:120])
    arr = _orient(arr, orientation)
    return np.ascontiguousarray(arr), _info(fmt, exif_out, icc, notes, frames)


def _info(fmt, exif, icc, notes, frames):
    return ImageInfo(format=fmt, exif=exif, icc_profile=icc, warnings=list(notes), frames=frames)


def _load(img, path, fmt, allow_truncated, note, said, options=PYTHON_OPTIONS):
    """Pillow's decode. For TIFF (libtiff prints on fd 2) what libtiff says is captured:
    it goes into ``said`` (for the error's reason) and, when the decode succeeds, into
    one warning."""
    if fmt != "TIFF":
        truncated = _load_pixels(img, allow_truncated)
    else:
        # Pillow's TIFF load also re-reads the tags (ImageOps.exif_transpose in load_end)
        # and warns about corrupt ones through the warnings module: recorded here, under
        # the same lock as the header read, never printed.
        error = truncated = None
        with _meta_lock, warnings.catch_warnings(record=True) as caught, captured() as cap:
            warnings.simplefilter("always")
            try:
                truncated = _load_pixels(img, allow_truncated)
            except Exception as e:  # noqa: BLE001 - re-raised below, after the capture ends
                error = e
        lines = [f"libtiff: {line}" for line in cap.lines()]
        said.extend(lines)
        if error is not None:
            raise error
        if lines:
            note("; ".join(lines)[:200])
        problems = list(dict.fromkeys(str(w.message).strip() for w in caught if issubclass(w.category, UserWarning)))
        if problems:
            note(("corrupt TIFF tags ignored (" + "; ".join(problems))[:196] + ")")
    if truncated:
        note(f"truncated {fmt} file: decoded what was there" + _suggest(options, "allow_truncated", " ({})"))


def _load_pixels(img, allow_truncated) -> bool:
    """img.load(); True when it took LOAD_TRUNCATED_IMAGES to get the pixels."""
    try:
        with _truncated_switch.shared():
            img.load()
        return False
    except OSError as e:
        if "truncated" not in str(e).lower() or not allow_truncated:
            raise
    with _truncated_switch.exclusive():
        old = ImageFile.LOAD_TRUNCATED_IMAGES
        ImageFile.LOAD_TRUNCATED_IMAGES = True
        try:
            img.load()
        finally:
            ImageFile.LOAD_TRUNCATED_IMAGES = old
    return True


def _read_exif(img, note):
    """(orientation, EXIF bytes to write back with orientation 1)."""
    try:
        exif = img.getexif()
        orientation = exif.get(0x0112, 1)
        if not isinstance(orientation, int) or not 1 <= orientation <= 8:
            note(f"EXIF orientation {orientation!r} is not 1-8; ignored")
            orientation = 1
        if 0x0112 in exif:
            exif[0x0112] = 1
        raw = exif.tobytes() if len(exif) else None
        if img.format == "TIFF":
            raw = None  # a TIFF's tags describe its own layout; not copied as EXIF
        return orientation, raw
    except Exception as e:  # noqa: BLE001 - corrupt EXIF: process the pixels, drop the metadata
        note(f"corrupt EXIF ignored ({type(e).__name__}: {str(e)[:80]})")
        return 1, None


def _jpeg_complete(data: bytes) -> bool:
    return data.rstrip(b"\x00\r\n ").endswith(b"\xff\xd9")


def _decode_jpeg_fast(data, mode):
    try:
        import simplejpeg
    except ImportError:  # optional speed-up; Pillow decodes the same pixels
        return None
    try:
        arr = simplejpeg.decode_jpeg(data, colorspace="RGB" if mode == "RGB" else "GRAY")
    except (ValueError, RuntimeError):
        return None  # let Pillow decide (and explain)
    return arr[:, :, 0] if mode == "L" else arr


def _deep_colour_channels(img, fmt, data) -> int:
    """Channels of a 16-bit grey + alpha (2, PNG only), RGB (3) or RGBA (4) PNG or TIFF,
    decoded at full depth by :mod:`imgproc.io.deep_colour`; 0 for anything else. (Pillow
    reads these at 8 bits, 16-bit grey + alpha PNG even as RGBA.)"""
    if fmt == "PNG":
        if len(data) > 26 and data[24] == 16:
            return {4: 2, 2: 3, 6: 4}.get(data[25], 0)
        return 0
    if fmt != "TIFF" or img.mode not in ("RGB", "RGBA", "RGBa"):
        return 0
    channels = 3 if img.mode == "RGB" else 4
    try:
        bits = img.tag_v2.get(258)
    except Exception:  # noqa: BLE001
        return 0
    if isinstance(bits, tuple):
        return channels if len(bits) > 0 and all(b == 16 for b in bits) else 0
    return channels if bits == 16 else 0


def _tiff_min_is_white(img) -> bool:
    try:
        return img.tag_v2.get(262) == 0
    except Exception:  # noqa: BLE001
        return False


def _cmyk_to_rgb(img, icc, note):
    if icc:
        try:
            from PIL import ImageCms

            src = ImageCms.ImageCmsProfile(io.BytesIO(icc))
            return ImageCms.profileToProfile(img, src, ImageCms.createProfile("sRGB"), outputMode="RGB")
        except Exception as e:  # noqa: BLE001 - unusable profile: plain conversion
            note(f"CMYK ICC profile unusable ({str(e)[:60]}); converted without it")
    return img.convert("RGB")


def _to_array(img: Image.Image, path, icc, note):
    """(array, ICC profile to keep)."""
    mode = img.mode
    if mode in ("P", "PA"):
        img = img.convert("RGBA" if ("transparency" in img.info or mode == "PA") else "RGB")
    elif mode == "1":
        img = img.convert("L")
    elif mode == "CMYK":
        img, icc = _cmyk_to_rgb(img, icc, note), None
    elif mode in ("YCbCr", "LAB", "HSV", "RGBX"):
        img = img.convert("RGB")
    elif mode == "La":
        img = img.convert("LA")
    elif mode == "RGBa":
        img = img.convert("RGBA")
    arr = np.asarray(img)
    if img.mode in ("I;16", "I;16B", "I;16L", "I;16N"):
        return arr.astype(np.uint16), icc
    if img.mode == "I":
        if arr.size and (arr.min() < 0 or arr.max() > 65535):
            raise InvalidImageError(path, _wide_integer_reason(img, int(arr.min()), int(arr.max())))
        return arr.astype(np.uint16), icc  # signed or 32-bit samples within 0..65535: read exactly
    if img.mode == "F":
        arr = arr.astype(np.float32)
        if not np.isfinite(arr).all():
            raise InvalidImageError(path, "floating-point image contains NaN or infinity")
        return arr, icc
    if arr.dtype != np.uint8 or arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] not in (2, 3, 4)):
        raise InvalidImageError(path, f"unsupported image mode {img.mode}")
    return np.array(arr), icc


ALLOWED_SAMPLES = "allowed: unsigned 8- or 16-bit integers, or floating-point values in [0, 1]"


def _wide_integer_reason(img, lo: int, hi: int) -> str:
    """Why an integer image (Pillow's mode I) whose values do not fit 0..65535 is refused:
    its sample format and width as its tags say, and the values found. A signed TIFF
    whose values are all within 0..65535 is read (exactly, as uint16); there is no
    unsigned reading of negative values that would not be a guess."""
    tags = getattr(img, "tag_v2", {})
    try:
        signed = tags.get(339) in (2, (2,))
        bits = tags.get(258)
        bits = int(bits[0] if isinstance(bits, tuple) else bits or 32)
    except Exception:  # noqa: BLE001 - unreadable tags: say what the values say
        signed, bits = lo < 0, 32
    kind = f"{'signed' if signed else 'unsigned'} {bits}-bit integer"
    if lo < 0:
        return f"unsupported: {kind} image with negative values ({lo}..{hi}); {ALLOWED_SAMPLES}"
    return f"unsupported: {kind} image with values beyond 16 bits ({lo}..{hi}); {ALLOWED_SAMPLES}"


def check_float_scale(arr, path) -> None:
    """Refuse (:class:`InvalidImageError`, exit 65) a floating-point image whose values are
    clearly outside [0, 1], the scale on which the command reads and writes floats: a
    float TIFF of CT numbers or 0..255 values has no scale the command could know, and
    writing it would clip it to black and white. The bounds are those of the writer
    (:func:`imgproc.core.validate.check_saved_float_range`); :func:`read_image` itself
    returns such values as they are (as tifffile and Pillow do)."""
    from imgproc.core.validate import SAVE_FLOAT_MAX, SAVE_FLOAT_MIN

    if arr.dtype.kind != "f" or arr.size == 0:
        return
    lo, hi = float(arr.min()), float(arr.max())
    if lo < SAVE_FLOAT_MIN or hi > SAVE_FLOAT_MAX:
        raise InvalidImageError(path, f"floating-point image with values {lo:g}..{hi:g}, outside [0, 1]: its scale is "
                                      f"unknown (the command reads floats as 0..1 and writes round(255 x)); "
                                      "convert it to 0..1 or to 8/16-bit integers first")


def _decoded_channels(img) -> int:
    """Channels of the array :func:`_to_array` makes of ``img`` (from its mode, before
    decoding; CMYK counts its 4 decoded samples)."""
    mode = img.mode
    if mode in ("P", "PA"):
        return 4 if ("transparency" in img.info or mode == "PA") else 3
    if mode == "1":
        return 1
    return max(len(img.getbands()), 3 if mode in ("YCbCr", "LAB", "HSV") else 1)


def _sample_bytes(img, fmt, data) -> int:
    """Bytes a decoded sample takes: 4 for 32-bit integer and float, 2 for 16-bit, 1 else."""
    if img.mode in ("I", "F"):
        return 4
    if img.mode.startswith("I;16") or (fmt == "PNG" and len(data) > 24 and data[24] == 16):
        return 2
    if fmt == "TIFF":
        try:
            bits = img.tag_v2.get(258)
            bits = max(bits) if isinstance(bits, tuple) else int(bits or 8)
        except Exception:  # noqa: BLE001
            bits = 8
        return 2 if bits > 8 else 1
    return 1


# Huffman-coded JPEG frames (SOF0-3, 5-7); arithmetic coding (SOF9-11, 13-15) can spend
# less than a bit on a block, so no bound is derived for it
_HUFFMAN_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7}


def _check_jpeg_scan_length(data: bytes, path, width: int, height: int):
    """Refuse a Huffman-coded JPEG whose scan data cannot hold the image its header
    declares: every 8x8 block of every component is coded with at least one bit (its DC
    difference's Huffman code, in baseline and progressive files alike), so the bytes
    after the first scan header are at least ``blocks / 8``. A 517-byte file declaring
    9400x9500 (two million blocks, at least 262 KB) decoded to grey in 38 s and 1 GB,
    then was denoised for minutes: refused here, before decoding, with or without
    --allow-truncated (a cut photo keeps far more than a bit a block)."""
    pos, sof, components = 2, None, []
    while pos + 4 <= len(data):
        if data[pos] != 0xFF:
            return  # not a marker where one must be: the decoder explains
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in (0x01,) or 0xD0 <= marker <= 0xD8:
            pos += 2
            continue
        length = int.from_bytes(data[pos + 2:pos + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            sof = marker
            n = data[pos + 9] if pos + 9 < len(data) else 0
            components = [(data[pos + 11 + 3 * i] >> 4, data[pos + 11 + 3 * i] & 15)
                          for i in range(n) if pos + 11 + 3 * i < len(data)]
        if marker == 0xDA:  # start of scan: the rest is (at most) entropy-coded data
            if sof not in _HUFFMAN_SOF or not components:
                return
            hmax = max(h for h, _ in components) or 1
            vmax = max(v for _, v in components) or 1
            blocks = sum(-(-(-(-width * h // hmax)) // 8) * -(-(-(-height * v // vmax)) // 8) for h, v in components)
            scan = len(data) - (pos + 2 + length)
            need = blocks // 8
            if scan < need:
                raise InvalidImageError(path, f"JPEG declares {width}x{height} but holds {max(scan, 0)} bytes of scan "
                                              f"data, fewer than the {need} such an image needs at least "
                                              "(corrupt or forged size); not decoded")
            return
        pos += 2 + length


def _orient(arr, orientation):
    """Apply EXIF orientation to (H, W[, C]) like PIL.ImageOps.exif_transpose."""
    if orientation == 2:
        return arr[:, ::-1]
    if orientation == 3:
        return arr[::-1, ::-1]
    if orientation == 4:
        return arr[::-1]
    if orientation == 5:
        return arr.swapaxes(0, 1)
    if orientation == 6:
        return np.rot90(arr, -1)
    if orientation == 7:
        return arr[::-1, ::-1].swapaxes(0, 1)
    if orientation == 8:
        return np.rot90(arr, 1)
    return arr
