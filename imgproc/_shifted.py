"""1-D correlation along one spatial axis of a ``(B, H, W, C)`` array, as shifted sums.

``correlate1d_bhwc(x, w, axis, mode, cval)`` equals ``scipy.ndimage.correlate1d(x, w,
axis=axis, mode=mode, cval=cval)`` for an odd-length ``w`` (concrete or traced values;
only its length must be static).
"""

from __future__ import annotations

import jax.numpy as jnp

from imgproc._boundary import pad_axis


def correlate1d_bhwc(x, w, *, axis: int, mode: str, cval=0.0):
    n = w.shape[0]
    r = n // 2
    length = x.shape[axis]
    xp = pad_axis(x, r, r, axis, mode, cval)
    out = None
    for k in range(n):
        sl = [slice(None)] * x.ndim
        sl[axis] = slice(k, k + length)
        term = w[k] * xp[tuple(sl)]
        out = term if out is None else out + term
    return out
