#!/usr/bin/env python
"""(Re)create the small sample images in ``sample_images/``.

Every image is derived from data bundled with scikit-image (``skimage.data``
functions that need no network download), so the script works offline and is
deterministic: running it again rewrites byte-identical files (given the same
numpy / scikit-image / Pillow versions).

Usage (from the repository root)::

    python sample_images/make_samples.py

Only numpy, scikit-image and Pillow are used.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps
from skimage import data, transform

OUT_DIR = Path(__file__).resolve().parent

JPEG_QUALITY = 95
NOISE_SIGMA = 0.1  # std-dev; variance 0.01 == skimage.util.random_noise default
NOISE_SEED = 0
GRAY_MAX_SIDE = 256
LOGO_MAX_SIDE = 200
GRAD16_MAX_SIDE = 200
EXIF_ORIENTATION_TAG = 0x0112
EXIF_ROTATE_90_CW = 6  # "rotate 90 degrees clockwise to display"


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------
def _to_uint8(img: np.ndarray) -> np.ndarray:
    """Float image in [0, 1] -> uint8 by rounding (after clipping)."""
    return np.round(np.clip(img, 0.0, 1.0) * 255.0).astype(np.uint8)


def _downscale(img: np.ndarray, max_side: int) -> np.ndarray:
    """Anti-aliased downscale so the long side is <= max_side.

    Returns a float64 image in [0, 1] (input uint8 is rescaled).
    """
    h, w = img.shape[:2]
    scale = min(1.0, max_side / max(h, w))
    new_hw = (max(1, round(h * scale)), max(1, round(w * scale)))
    as_float = img.astype(np.float64) / 255.0 if img.dtype == np.uint8 else img
    if new_hw == (h, w):
        return as_float
    return transform.resize(
        as_float, new_hw + img.shape[2:], order=1, mode="reflect",
        anti_aliasing=True, preserve_range=True,
    )


def _save(img: Image.Image, name: str, **kwargs) -> Path:
    path = OUT_DIR / name
    buf = io.BytesIO()
    img.save(buf, format=kwargs.pop("format"), **kwargs)
    path.write_bytes(buf.getvalue())  # overwrite => idempotent
    print(f"wrote {path.relative_to(OUT_DIR.parent)}  "
          f"mode={img.mode} size(w,h)={img.size}  {path.stat().st_size} bytes")
    return path


# --------------------------------------------------------------------------
# individual samples
# --------------------------------------------------------------------------
def make_chelsea() -> None:
    cat = data.chelsea()  # (300, 451, 3) uint8
    _save(Image.fromarray(cat, "RGB"), "chelsea.jpg",
          format="JPEG", quality=JPEG_QUALITY, optimize=True)


def make_chelsea_noisy() -> None:
    cat = data.chelsea().astype(np.float64) / 255.0
    rng = np.random.default_rng(NOISE_SEED)
    noisy = cat + rng.normal(0.0, NOISE_SIGMA, size=cat.shape)
    _save(Image.fromarray(_to_uint8(noisy), "RGB"), "chelsea_noisy.jpg",
          format="JPEG", quality=JPEG_QUALITY, optimize=True)


def make_camera_gray() -> None:
    cam = _downscale(data.camera(), GRAY_MAX_SIDE)  # (256, 256) float
    _save(Image.fromarray(_to_uint8(cam), "L"), "camera_gray.png",
          format="PNG", optimize=True)


def make_logo_rgba() -> None:
    logo = data.logo().astype(np.float64) / 255.0  # (500, 500, 4)
    # The bundled logo is RGBA but fully opaque (alpha == 255 everywhere): a
    # coloured disc on a white square.  Give it real transparency by replacing
    # alpha with an anti-aliased disc fitted to the bounding box of the
    # non-white pixels (a flood fill of the white background would leak into
    # the white "S" stripe, which touches the disc's rim).
    non_white = (logo[..., :3] < 240 / 255).any(axis=-1)
    rows = np.flatnonzero(non_white.any(axis=1))
    cols = np.flatnonzero(non_white.any(axis=0))
    cy, cx = (rows[0] + rows[-1]) / 2.0, (cols[0] + cols[-1]) / 2.0
    radius = (rows[-1] - rows[0] + cols[-1] - cols[0] + 2) / 4.0
    yy, xx = np.mgrid[0:logo.shape[0], 0:logo.shape[1]]
    dist = np.hypot(yy - cy, xx - cx)
    logo[..., 3] = np.clip(radius + 0.5 - dist, 0.0, 1.0)
    # Resample in premultiplied-alpha space so fully transparent pixels do
    # not bleed their (meaningless) colour into the edges.
    rgb, alpha = logo[..., :3], logo[..., 3:]
    premult = np.concatenate([rgb * alpha, alpha], axis=-1)
    small = _downscale(premult, LOGO_MAX_SIDE)
    a = np.clip(small[..., 3:], 0.0, 1.0)
    rgb_small = np.where(a > 0, small[..., :3] / np.maximum(a, 1e-12), 0.0)
    rgba = _to_uint8(np.concatenate([rgb_small, a], axis=-1))
    _save(Image.fromarray(rgba, "RGBA"), "logo_rgba.png",
          format="PNG", optimize=True)


def make_gradient_16bit() -> None:
    cam = _downscale(data.camera(), GRAD16_MAX_SIDE)  # float in [0, 1]
    h, w = cam.shape
    yy, xx = np.mgrid[0:h, 0:w]
    ramp = (xx + yy) / float((h - 1) + (w - 1))  # smooth diagonal 0..1
    img = 0.75 * cam + 0.25 * ramp
    img = (img - img.min()) / (img.max() - img.min())  # span full range
    u16 = np.round(img * 65535.0).astype(np.uint16)
    # "I;16" = 16-bit unsigned little-endian grayscale -> 16-bit PNG.
    pil = Image.frombytes("I;16", (w, h), u16.astype("<u2").tobytes())
    _save(pil, "gradient_16bit.png", format="PNG", optimize=True)


def make_chelsea_exif_rot90() -> None:
    cat = data.chelsea()  # upright: (H=300, W=451)
    # Orientation 6 means "rotate the stored pixels 90 deg clockwise to
    # display", so store the cat rotated 90 deg counter-clockwise.
    stored = np.ascontiguousarray(np.rot90(cat, k=1))  # (H=451, W=300)
    pil = Image.fromarray(stored, "RGB")
    exif = Image.Exif()
    exif[EXIF_ORIENTATION_TAG] = EXIF_ROTATE_90_CW
    _save(pil, "chelsea_exif_rot90.jpg", format="JPEG",
          quality=JPEG_QUALITY, optimize=True, exif=exif.tobytes())


# --------------------------------------------------------------------------
# verification
# --------------------------------------------------------------------------
def verify() -> None:
    cat = data.chelsea()

    def _psnr(a: np.ndarray, b: np.ndarray) -> float:
        mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
        return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)

    with Image.open(OUT_DIR / "chelsea.jpg") as im:
        arr = np.asarray(im)
        assert im.mode == "RGB" and arr.shape == (300, 451, 3), arr.shape
        p = _psnr(arr, cat)
        assert p > 35, p
        print(f"ok chelsea.jpg: {arr.shape} PSNR vs original {p:.1f} dB")

    with Image.open(OUT_DIR / "chelsea_noisy.jpg") as im:
        arr = np.asarray(im)
        assert arr.shape == (300, 451, 3)
        resid = arr.astype(np.float64) / 255 - cat / 255
        # Pre-JPEG residual std is ~0.099; JPEG (4:2:0 chroma subsampling)
        # averages away part of the colour noise, leaving ~0.07.
        print(f"ok chelsea_noisy.jpg: {arr.shape} residual std vs clean "
              f"{resid.std():.3f} (noise sigma {NOISE_SIGMA} before "
              f"clipping/JPEG)")
        assert 0.05 < resid.std() < 0.12, resid.std()

    with Image.open(OUT_DIR / "camera_gray.png") as im:
        arr = np.asarray(im)
        assert im.mode == "L" and arr.dtype == np.uint8 and arr.ndim == 2
        assert max(arr.shape) <= GRAY_MAX_SIDE
        print(f"ok camera_gray.png: mode L {arr.shape} {arr.dtype}")

    with Image.open(OUT_DIR / "logo_rgba.png") as im:
        arr = np.asarray(im)
        assert im.mode == "RGBA" and arr.shape[2] == 4
        a = arr[..., 3]
        n0, n255 = int((a == 0).sum()), int((a == 255).sum())
        assert n0 > 0 and n255 > 0
        print(f"ok logo_rgba.png: {arr.shape}, alpha==0 px {n0}, "
              f"alpha==255 px {n255}, partial {a.size - n0 - n255}")

    with Image.open(OUT_DIR / "gradient_16bit.png") as im:
        mode = im.mode
        arr = np.asarray(im)
        assert mode in ("I;16", "I"), mode
        assert mode == "I" or arr.dtype == np.uint16, arr.dtype
        arr = arr.astype(np.uint16) if mode == "I" else arr
        assert arr.max() > 255 and arr.min() == 0 and arr.max() == 65535
        frac257 = float(np.mean(arr % 257 == 0))
        assert frac257 < 0.05, frac257
        nuniq = len(np.unique(arr))
        print(f"ok gradient_16bit.png: mode {mode} dtype {np.asarray(im).dtype} "
              f"{arr.shape} range [{arr.min()}, {arr.max()}], "
              f"{nuniq} unique values, {frac257:.2%} multiples of 257")

    with Image.open(OUT_DIR / "chelsea_exif_rot90.jpg") as im:
        raw_size = im.size
        orient = im.getexif().get(EXIF_ORIENTATION_TAG)
        up = ImageOps.exif_transpose(im)
        up_arr = np.asarray(up)
        assert orient == EXIF_ROTATE_90_CW, orient
        assert raw_size == (300, 451), raw_size
        assert up.size == (451, 300), up.size
        p = _psnr(up_arr, cat)
        assert p > 35, p
        print(f"ok chelsea_exif_rot90.jpg: Orientation={orient}, raw (w,h)="
              f"{raw_size}, exif_transpose (w,h)={up.size}, "
              f"PSNR vs upright original {p:.1f} dB")


def main() -> None:
    make_chelsea()
    make_chelsea_noisy()
    make_camera_gray()
    make_logo_rgba()
    make_gradient_16bit()
    make_chelsea_exif_rot90()
    verify()


if __name__ == "__main__":
    main()
