"""The ``"fft"`` lowering: a correlation as a product of spectra.

The image's channel planes, extended by the kernel's radius with the boundary mode
(:func:`imgproc.core.boundary.padded_planes`), and the kernel are transformed with real 2-D
FFTs of one size (at least the extended plane's, rounded up to a product of 2, 3, 5 and
7, the sizes FFT libraries are fastest at); the image's spectrum is multiplied by the
conjugate of the kernel's (a correlation, not a convolution) and transformed back, and the
``(H, W)`` corner of each plane is the result. The transform is at least as large as
every output position plus the kernel's reach, so its wrap-around never reaches the
result.

Its cost hardly depends on the kernel's size, where shifted sums grow with its taps, so
``method="auto"`` picks it on CPU for kernels with at least :data:`FFT_MIN_TAPS` taps per
output value (why: benchmarks/NOTES.md, "The FFT lowering"). Accuracy: float32
spectra; the result differs from scipy's float64 sums by about 1e-6 of the image's
largest value (tested to 1e-5 on [0, 1] images in every mode).
"""

from __future__ import annotations

import jax.numpy as jnp

from imgproc.core.boundary import padded_planes

# On CPU, ``method="auto"`` takes the FFT for a kernel whose lowering would sum at least
# this many taps for each output value (a separable term's two passes: their two lengths;
# a direct pass: every tap of the kernel), below it shifted sums (benchmarks/NOTES.md,
# "The FFT lowering").
FFT_MIN_TAPS = 280

_FAST_PRIMES = (2, 3, 5, 7)


def fft_size(n: int) -> int:
    """The smallest ``m >= n`` whose prime factors are all 2, 3, 5 or 7."""
    m = max(1, int(n))
    while True:
        rest = m
        for p in _FAST_PRIMES:
            while rest % p == 0:
                rest //= p
        if rest == 1:
            return m
        m += 1


def correlate_fft(x, kernel, mode: str, cval):
    """Correlate each ``(H, W)`` plane of the ``(B, H, W, C)`` float32 array ``x`` with the
    odd-sided 2-D ``kernel`` (concrete or traced) through real FFTs; ``mode`` and ``cval``
    as in scipy.ndimage. Returns ``(B, H, W, C)`` float32."""
    kh, kw = kernel.shape
    h, w = x.shape[1:3]
    planes = padded_planes(x, (kh // 2, kw // 2), mode, cval=cval)  # (B, C, H + kh - 1, W + kw - 1)
    size = (fft_size(planes.shape[2]), fft_size(planes.shape[3]))
    k = jnp.asarray(kernel, jnp.float32)  # a constant kernel's spectrum too is computed by the program
    spectrum = jnp.fft.rfft2(planes, s=size) * jnp.conj(jnp.fft.rfft2(k, s=size))
    return jnp.moveaxis(jnp.fft.irfft2(spectrum, s=size)[:, :, :h, :w], 1, 3)
