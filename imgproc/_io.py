"""Loading and saving images (Pillow), safely.

``load_image`` returns a NumPy array: EXIF orientation applied; grayscale ``(H, W)``; grey
with alpha ``(H, W, 2)``; RGB ``(H, W, 3)``; RGBA ``(H, W, 4)``; 16-bit PNG kept as uint16;
palette images expanded to RGB (RGBA when the palette has transparency); CMYK converted to
RGB; 1-bit to uint8 0/255.

``save_image`` writes atomically: a temporary file in the destination folder, fsync,
``os.replace``; on any failure the temporary file is removed and nothing is left behind.
It refuses to replace an existing file unless ``overwrite=True`` and always refuses to write
over ``source`` (the image's own input, also through links).

Conversions on save (no hidden rescaling otherwise): float images are taken as values in
[0, 1] and written as 8-bit ``round(255 x)`` saturated; uint16 is written at full depth to
PNG/TIFF grayscale and scaled to 8 bits (``round(x / 257)``) for formats or channel counts
that cannot hold it; alpha is kept where the format allows and flattened on white for JPEG
and BMP.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from imgproc.errors import InputError, InvalidImageError, OutputError, WriteError

__all__ = ["load_image", "save_image", "OUTPUT_FORMATS"]

OUTPUT_FORMATS = {
    ".jpg": "JPEG",
    ".jpeg": "JPEG",
    ".png": "PNG",
    ".tif": "TIFF",
    ".tiff": "TIFF",
    ".webp": "WEBP",
    ".bmp": "BMP",
}
_NO_ALPHA = {"JPEG", "BMP"}
_SIXTEEN_BIT_GRAY = {"PNG", "TIFF"}


def _to_array(img: Image.Image, path) -> np.ndarray:
    mode = img.mode
    if mode == "P" or mode == "PA":
        img = img.convert("RGBA" if ("transparency" in img.info or mode == "PA") else "RGB")
    elif mode == "1":
        img = img.convert("L")
    elif mode in ("CMYK", "YCbCr", "LAB", "HSV"):
        img = img.convert("RGB")
    elif mode == "RGBX":
        img = img.convert("RGB")
    elif mode == "La":
        img = img.convert("LA")
    elif mode == "RGBa":
        img = img.convert("RGBA")
    arr = np.asarray(img)
    if img.mode in ("I;16", "I;16B", "I;16L", "I;16N"):
        return arr.astype(np.uint16)
    if img.mode == "I":
        if arr.min() >= 0 and arr.max() <= 65535:
            return arr.astype(np.uint16)
        raise InvalidImageError(path, "32-bit integer images are not supported (values beyond 16 bits)")
    if img.mode == "F":
        return arr.astype(np.float32)
    if arr.dtype != np.uint8:
        raise InvalidImageError(path, f"unsupported image mode {img.mode}")
    return np.array(arr)


def load_image(path) -> np.ndarray:
    """Read an image file into a NumPy array (see the module doc for shapes and dtypes).

    Raises:
        InputError: the file is missing or unreadable (exit code 66).
        InvalidImageError: it is not a valid image (exit code 65).

    Example:
        >>> import imgproc
        >>> imgproc.load_image("sample_images/chelsea.jpg").shape
        (300, 451, 3)
    """
    path = Path(path)
    if not path.exists():
        raise InputError(path, "no such file")
    if path.is_dir():
        raise InputError(path, "is a folder, not an image file")
    try:
        with open(path, "rb") as f:
            with Image.open(f) as img:
                img.load()
                img = ImageOps.exif_transpose(img)
                return _to_array(img, path)
    except PermissionError:
        raise InputError(path, "permission denied") from None
    except UnidentifiedImageError:
        raise InvalidImageError(path, "not a recognised image format") from None
    except Image.DecompressionBombError as e:
        raise InvalidImageError(path, f"too many pixels ({e})") from None
    except (OSError, SyntaxError, ValueError) as e:
        if isinstance(e, InvalidImageError):
            raise
        raise InvalidImageError(path, f"cannot decode image ({e})") from None


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


def save_image(path, image, *, quality: int = 95, overwrite: bool = False, source=None) -> Path:
    """Write ``image`` to ``path`` atomically; the format comes from the extension.

    Args:
        path: destination (``.jpg``, ``.jpeg``, ``.png``, ``.tif``, ``.tiff``, ``.webp``, ``.bmp``).
        image: ``(H, W)`` or ``(H, W, C)`` with C in 1..4; uint8, uint16 or float in [0, 1].
        quality: JPEG/WebP quality, 1..100.
        overwrite: replace an existing file (atomically).
        source: the image's input file; writing over it is always refused.

    Raises:
        OutputError: exists without ``overwrite``, same file as ``source``, unknown
            extension, folder missing or not writable (exit code 73).
        WriteError: I/O error while writing, e.g. disk full (exit code 74).
    """
    path = Path(path)
    fmt = output_format(path)
    if isinstance(quality, bool) or not isinstance(quality, (int, np.integer)) or not 1 <= quality <= 100:
        raise ValueError(f"quality must be an integer from 1 to 100; got {quality!r}")
    if source is not None and same_file(source, path):
        raise OutputError(path, "is the input file itself; choose another output")
    if path.exists() and not overwrite:
        raise OutputError(path, "exists; pass overwrite=True (--overwrite) to replace it")
    if path.is_dir():
        raise OutputError(path, "is a folder")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(path, f"folder {folder} does not exist")
    pil = _to_pil(np.asarray(image), fmt)
    params = {"quality": int(quality)} if fmt in ("JPEG", "WEBP") else {}
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise OutputError(path, f"folder not writable ({e.strerror or e})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            pil.save(f, format=fmt, **params)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        if path.exists() and not overwrite:  # appeared while we were writing
            raise OutputError(path, "exists; pass overwrite=True (--overwrite) to replace it")
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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
