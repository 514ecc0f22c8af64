"""Image-quality metrics."""

from __future__ import annotations

import numpy as np

from imgproc._validate import check_same_range

__all__ = ["psnr"]


def psnr(reference, image, *, data_range=None) -> float:
    """Peak signal-to-noise ratio in dB, ``10 log10(data_range² / MSE)``, computed in float64.

    Matches ``skimage.metrics.peak_signal_noise_ratio``: ``data_range`` defaults to the
    dtype's range (255 for uint8, 65535 for uint16; 1.0 for floats, 2.0 for a float
    reference with negative values), and a reference outside its dtype's range (a float
    reference beyond [-1, 1]) needs an explicit ``data_range``. Unlike scikit-image, which
    only warns, images whose dtypes imply different ranges (uint8 against float64, uint8
    against uint16) are refused without ``data_range``: their PSNR would be meaningless.

    Args:
        reference, image: arrays (NumPy, JAX or lists) of the same shape; any dtype.
        data_range: the peak value range, or None for the dtype's.

    Returns:
        A Python float (``inf`` for identical images).
    """
    ref = np.asarray(reference)
    img = np.asarray(image)
    if ref.shape != img.shape:
        raise ValueError(f"reference and image must have the same shape; got {ref.shape} and {img.shape}")
    if data_range is None:
        check_same_range(ref, img)
        if np.issubdtype(ref.dtype, np.integer):
            info = np.iinfo(ref.dtype)
            lo, hi, data_range = info.min, info.max, float(info.max)
        else:
            lo, hi, data_range = -1.0, 1.0, 1.0
        ref_min, ref_max = float(ref.min()), float(ref.max())
        if ref_min < lo or ref_max > hi:
            raise ValueError("reference has values outside the range expected for its dtype "
                             f"({ref_min:g}..{ref_max:g}); pass data_range= explicitly")
        if ref_min < 0:
            data_range = float(hi - lo)
    mse = np.mean((ref.astype(np.float64) - img.astype(np.float64)) ** 2)
    if mse == 0:
        return float("inf")
    return float(10 * np.log10(data_range**2 / mse))
