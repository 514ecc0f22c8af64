"""The noise level of an image: skimage's ``estimate_sigma`` (wavelet median absolute
deviation of the finest diagonal db2 detail band), shared by :mod:`imgproc.restoration`
and :mod:`imgproc._bm3d`."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from imgproc._boundary import pad_axis

__all__ = ["sigma_nhwc", "sigma_planes"]

_DB2_HI = np.array([-0.48296291314469025, 0.836516303737469, -0.22414386804185735, -0.12940952255092145], np.float32)
_NORM_PPF_075 = 0.6744897501960817  # scipy.stats.norm.ppf(0.75)


def _dwt_hi(x, axis):
    """PyWavelets' ``dwt`` detail coefficients along ``axis`` (mode "symmetric", db2):
    length ``(n + 3) // 2``; ``y[k] = sum_j h[j] x_ext[2k + 1 - j]``."""
    n = x.shape[axis]
    xe = pad_axis(x, 3, 3, axis, "reflect")  # pywt "symmetric" is scipy's "reflect"
    k = (n + 3) // 2
    out = 0.0
    for j, hj in enumerate(_DB2_HI):
        start = 4 - j  # x_ext index 2k + 1 - j, shifted by the pad of 3
        sl = [slice(None)] * x.ndim
        sl[axis] = slice(start, start + 2 * k - 1, 2)
        out = out + float(hj) * xe[tuple(sl)]
    return out


def sigma_planes(planes):
    """skimage's ``_sigma_est_dwt`` for each (H, W) plane of (P, H, W): the median absolute
    value of the nonzero finest diagonal (db2) detail coefficients divided by
    ``norm.ppf(0.75)``; 0 when every coefficient is 0 (skimage gives NaN there)."""
    dd = _dwt_hi(_dwt_hi(planes, 1), 2)
    a = jnp.sort(jnp.abs(dd.reshape(dd.shape[0], -1)), axis=1)
    total = a.shape[1]
    zeros = jnp.sum(a == 0, axis=1)
    m = total - zeros
    lo = jnp.clip(zeros + (m - 1) // 2, 0, total - 1)
    hi = jnp.clip(zeros + m // 2, 0, total - 1)
    med = 0.5 * (jnp.take_along_axis(a, lo[:, None], 1)[:, 0] + jnp.take_along_axis(a, hi[:, None], 1)[:, 0])
    return jnp.where(m > 0, med / _NORM_PPF_075, 0.0)


def sigma_nhwc(x):
    """Noise sigma per image of (N, H, W, C) float32: the mean over channels."""
    n, h, w, c = x.shape
    planes = jnp.moveaxis(x, 3, 1).reshape(n * c, h, w)
    return sigma_planes(planes).reshape(n, c).mean(axis=1)
