"""Total-variation denoising: :func:`tv_chambolle` (Chambolle's projection algorithm,
scikit-image's ``denoise_tv_chambolle``). Layouts, dtypes and the value range
(``max_value``, "the module docstring" below): see :mod:`imgproc.restoration`."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from imgproc.core.array_type import callers_type
from imgproc.core.arrays import resolve_max, to_bhwc, to_output
from imgproc.core.registry import KEEPS_TARGETS, OpInfo, register_ops
from imgproc.core.validate import check_per_image, is_traced
from imgproc.restoration.common import prepare

__all__ = ["tv_chambolle"]


def _tv_plane(f, weight, eps, n_iter):
    """skimage's ``_denoise_tv_chambolle_nd`` on one 2-D plane (float32)."""
    tau = 0.25  # 1 / (2 * ndim)

    def grad(u):
        gy = jnp.concatenate([u[1:] - u[:-1], jnp.zeros_like(u[:1])], axis=0)
        gx = jnp.concatenate([u[:, 1:] - u[:, :-1], jnp.zeros_like(u[:, :1])], axis=1)
        return gy, gx

    def step(p, i):
        py, px = p
        d = -(py + px)
        d = d.at[1:].add(py[:-1])
        d = d.at[:, 1:].add(px[:, :-1])
        d = jnp.where(i > 0, d, 0.0)
        out = f + d
        gy, gx = grad(out)
        norm = jnp.sqrt(gy * gy + gx * gx)
        e = (jnp.sum(d * d) + weight * jnp.sum(norm)) / f.size
        norm = 1.0 + norm * (tau / weight)
        return ((py - tau * gy) / norm, (px - tau * gx) / norm), out, e

    def cond(state):
        i, _, _, _, _, done = state
        return (i < n_iter) & ~done

    def body(state):
        i, p, _, e_init, e_prev, _ = state
        p_new, out, e = step(p, i)
        e_init = jnp.where(i == 0, e, e_init)
        stop = (i > 0) & (jnp.abs(e_prev - e) < eps * e_init)
        return i + 1, p_new, out, e_init, e, stop

    zeros = jnp.zeros_like(f)
    z = jnp.float32(0)
    state = (jnp.int32(0), (zeros, zeros), f, z, z, jnp.bool_(False))
    return lax.while_loop(cond, body, state)[2]


@functools.partial(jax.jit, static_argnames=("layout",))
def _tv_chambolle(image, weight, eps, n_iter, *, layout):
    x = to_bhwc(image.astype(jnp.float32), layout)
    b, h, w, c = x.shape
    planes = jnp.moveaxis(x, 3, 1).reshape(b * c, h, w)
    fn = jax.vmap(lambda pl: _tv_plane(pl, weight, eps, n_iter))
    y = jnp.moveaxis(fn(planes).reshape(b, c, h, w), 1, 3)
    return to_output(y.reshape(image.shape), image.dtype)


@callers_type
def tv_chambolle(image, *, weight=0.1, n_iter=200, eps=2e-4, max_value=None, layout=None):
    """Total-variation denoising (Chambolle's projection algorithm), per channel.

    Matches ``skimage.restoration.denoise_tv_chambolle(img_as_float(x), weight=weight,
    eps=eps, max_num_iter=n_iter, channel_axis=-1)`` scaled back to the image's range: the
    ``weight`` is relative to ``max_value`` (as skimage's is to 1.0 after ``img_as_float``),
    so the same weight means the same smoothing for uint8, uint16 and float images. Each
    channel stops when its energy changes by less than ``eps`` times its first energy, or
    after ``n_iter`` iterations.

    Args:
        image: HW, HWC, NHWC (or CHW/NCHW with ``layout``); any supported dtype.
        weight: denoising weight relative to ``max_value`` (> 0; larger: smoother).
        n_iter: maximum number of iterations (integer >= 1; traced).
        eps: relative energy change that stops the iteration (>= 0).
        max_value: white; ``None``: the dtype's range (see the module docstring).
        layout: as for :func:`imgproc.correlate`.

    Returns:
        The denoised image, same shape and dtype.

    Example:
        >>> import numpy as np, imgproc
        >>> x = np.zeros((8, 8), np.float32); x[:, 4:] = 1.0
        >>> y = np.asarray(imgproc.tv_chambolle(x, weight=0.05))
        >>> bool(y[:, :4].max() < 0.1 and y[:, 4:].min() > 0.9)
        True
    """
    check_per_image("weight", weight, low_open=True)
    check_per_image("eps", eps)
    if not is_traced(n_iter) and (isinstance(n_iter, bool) or not isinstance(n_iter, (int, np.integer)) or n_iter < 1):
        raise ValueError(f"n_iter must be an integer >= 1; got {n_iter!r}")
    image, layout = prepare(image, layout)
    mv = check_per_image("max_value", resolve_max(max_value, image.dtype), low_open=True)
    w = jnp.asarray(weight, jnp.float32) * jnp.asarray(mv, jnp.float32)
    return _tv_chambolle(image, w, jnp.asarray(eps, jnp.float32), jnp.asarray(n_iter, jnp.int32), layout=layout)


# It iterates over the whole image: registered without a radius, so a pipeline runs it at
# the image's exact size, never in padded size buckets.
OPS = (
    OpInfo("tv_chambolle", tv_chambolle),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
