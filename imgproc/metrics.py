"""Image-quality metrics."""

from __future__ import annotations

import numpy as np

__all__ = ["psnr"]


def psnr(reference, image, *, data_range=None) -> float:
    """Peak signal-to-noise ratio in dB, ``10 log10(data_range² / MSE)``, computed in float64.

    Matches ``skimage.metrics.peak_signal_noise_ratio``. ``data_range`` defaults to the
    dtype's range for integers (255 for uint8, 65535 for uint16) and 1.0 for floats.
    """
    ref = np.asarray(reference)
    img = np.asarray(image)
    if ref.shape != img.shape:
        raise ValueError(f"reference and image must have the same shape; got {ref.shape} and {img.shape}")
    if data_range is None:
        data_range = float(np.iinfo(ref.dtype).max) if np.issubdtype(ref.dtype, np.integer) else 1.0
    mse = np.mean((ref.astype(np.float64) - img.astype(np.float64)) ** 2)
    if mse == 0:
        return float("inf")
    return float(10 * np.log10(data_range**2 / mse))
