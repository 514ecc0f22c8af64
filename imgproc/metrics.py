"""Image-quality metrics."""

from __future__ import annotations

import numpy as np

from imgproc.core.validate import check_same_range

__all__ = ["psnr", "ssim"]


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


def ssim(a, b, *, data_range=None, win_size=None, gaussian_weights=False, sigma=1.5, use_sample_covariance=True,
         channel_axis=None) -> float:
    """Mean structural similarity (SSIM) of two images, computed in float64 on the host.

    Matches ``skimage.metrics.structural_similarity(a, b, data_range=..., win_size=...,
    gaussian_weights=..., sigma=..., use_sample_covariance=..., channel_axis=...)``: local
    means, variances and covariance over a ``win_size`` box (``uniform_filter``, reflected
    border) or, with ``gaussian_weights``, a Gaussian of ``sigma`` truncated at 3.5 sigma;
    constants ``K1 = 0.01``, ``K2 = 0.03``; the mean over the image less a border of
    ``(win_size - 1) // 2``; with ``channel_axis`` the mean over channels.

    Args:
        a, b: images of the same shape (any dimensionality; NumPy or JAX arrays).
        data_range: value range; ``None``: the dtype's range for integers (max - min: 255
            for uint8, 65535 for uint16 and int16) and 1.0 for floats (skimage refuses
            ``None`` for floats); images whose dtypes imply different ranges (uint8
            against float) are then refused, as :func:`psnr` refuses them.
        win_size: odd window side; ``None``: 7, or ``2 * int(3.5 * sigma + 0.5) + 1`` with
            ``gaussian_weights`` (skimage's rule).
        gaussian_weights: weight the window with a Gaussian (Wang et al.'s SSIM with
            ``use_sample_covariance=False``).
        sigma: the Gaussian's standard deviation (>= 0).
        use_sample_covariance: normalise covariances by N - 1 instead of N.
        channel_axis: axis of the channels (averaged), or None for one channel.

    Returns:
        The mean SSIM, a Python float in [-1, 1].

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.random.default_rng(0).integers(0, 256, (32, 32)).astype(np.uint8)
        >>> imgproc.ssim(x, x)
        1.0
    """
    from scipy import ndimage as ndi

    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape; got {a.shape} and {b.shape}")
    if not np.isfinite(sigma) or sigma < 0:
        raise ValueError(f"sigma must be a finite number >= 0; got {sigma!r}")
    if data_range is None:  # scikit-image's dtype range: max - min (65535 for int16)
        check_same_range(a, b)
        info = np.iinfo(a.dtype) if np.issubdtype(a.dtype, np.integer) else None
        data_range = float(info.max) - float(info.min) if info is not None else 1.0
    if channel_axis is not None:
        if isinstance(channel_axis, bool) or not isinstance(channel_axis, (int, np.integer)) \
                or not -a.ndim <= channel_axis < a.ndim:
            raise ValueError(f"channel_axis must be an axis of the {a.ndim}-D images ({-a.ndim}..{a.ndim - 1}) "
                             f"or None; got {channel_axis!r}")
        ax = channel_axis % a.ndim
        vals = [ssim(np.take(a, c, axis=ax), np.take(b, c, axis=ax), data_range=data_range, win_size=win_size,
                     gaussian_weights=gaussian_weights, sigma=sigma, use_sample_covariance=use_sample_covariance)
                for c in range(a.shape[ax])]
        return float(np.mean(vals))
    truncate = 3.5
    if win_size is None:
        win_size = 2 * int(truncate * sigma + 0.5) + 1 if gaussian_weights else 7
    if isinstance(win_size, bool) or not isinstance(win_size, (int, np.integer)) or win_size < 1 or win_size % 2 == 0:
        raise ValueError(f"win_size must be an odd integer >= 1 (3, 5, 7, ...); got {win_size!r}")
    if any(n < win_size for n in a.shape):
        raise ValueError(f"win_size {win_size} exceeds the image's extent {a.shape}; pass a smaller odd win_size "
                         "(and channel_axis for colour images)")
    x = a.astype(np.float64)
    y = b.astype(np.float64)
    if gaussian_weights:
        def filt(v):
            return ndi.gaussian_filter(v, sigma, truncate=truncate, mode="reflect")
    else:
        def filt(v):
            return ndi.uniform_filter(v, size=win_size)
    n = win_size ** x.ndim
    cov_norm = n / (n - 1) if use_sample_covariance and n > 1 else 1.0
    ux, uy = filt(x), filt(y)
    vx = cov_norm * (filt(x * x) - ux * ux)
    vy = cov_norm * (filt(y * y) - uy * uy)
    vxy = cov_norm * (filt(x * y) - ux * uy)
    c1 = (0.01 * data_range) ** 2
    c2 = (0.03 * data_range) ** 2
    s = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux ** 2 + uy ** 2 + c1) * (vx + vy + c2))
    pad = (win_size - 1) // 2
    s = s[tuple(slice(pad, n_ - pad) for n_ in s.shape)]
    return float(s.mean(dtype=np.float64))
