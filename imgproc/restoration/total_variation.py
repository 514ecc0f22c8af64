"""Total-variation denoising: :func:`tv_chambolle` (Chambolle's projection algorithm,
scikit-image's ``denoise_tv_chambolle``). Layouts, dtypes and the value range
(``max_value``, "the module docstring" below): see :mod:`imgproc.restoration`."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from imgproc.core.array_type import callers_type
from imgproc.core.arrays import magnitude, resolve_max, to_bhwc, to_output
from imgproc.core.registry import KEEPS_TARGETS, OpInfo, register_ops
from imgproc.core.validate import check_per_image, is_traced
from imgproc.restoration.common import prepare

__all__ = ["tv_chambolle"]


def _tv_step(f, p, i, weight):
    """One iteration of skimage's ``_denoise_tv_chambolle_nd`` on one 2-D plane ``f``:
    ``(p_new, out, energy)``, ``out`` the estimate of dual variable ``p``."""
    tau = 0.25  # 1 / (2 * ndim)
    py, px = p
    d = -(py + px)
    d = d.at[1:].add(py[:-1])
    d = d.at[:, 1:].add(px[:, :-1])
    d = jnp.where(i > 0, d, 0.0)
    out = f + d
    gy = jnp.concatenate([out[1:] - out[:-1], jnp.zeros_like(out[:1])], axis=0)
    gx = jnp.concatenate([out[:, 1:] - out[:, :-1], jnp.zeros_like(out[:, :1])], axis=1)
    norm = magnitude(gy * gy + gx * gx)
    e = (jnp.sum(d * d) + weight * jnp.sum(norm)) / f.size
    norm = 1.0 + norm * (tau / weight)
    return ((py - tau * gy) / norm, (px - tau * gx) / norm), out, e


def _iterate(planes, weight, eps, n_iter: int, *, loop: str):
    """skimage's ``_denoise_tv_chambolle_nd`` on each 2-D plane of ``planes`` (P, H, W): at
    most ``n_iter`` iterations; a plane whose energy changed by less than ``eps`` times its
    first energy stops there, as in skimage (its state is held while the others go on).

    ``loop="while"`` stops once every plane has stopped (a ``lax.while_loop``);
    ``loop="scan"`` runs ``n_iter`` steps as a ``lax.scan`` (of rounds of steps) whose
    steps after that skip the work (a ``lax.cond``), which reverse-mode differentiation
    can go through. The two compute the same values in the same order; the scan is 2-4
    times slower on CPU (each step's conditional copies the state: 8 image-sized copies
    in its compiled program against the while_loop's 2)."""
    step = jax.vmap(_tv_step, in_axes=(0, 0, None, None))

    def advance(state):
        i, p, out, e_init, e_prev, done = state
        p_new, out_new, e = step(planes, p, i, weight)
        e_init = jnp.where(i == 0, e, e_init)
        stop = (i > 0) & (jnp.abs(e_prev - e) < eps * e_init)
        hold = done[:, None, None]
        p = tuple(jnp.where(hold, a, b) for a, b in zip(p, p_new))
        out = jnp.where(hold, out, out_new)
        return i + 1, p, out, e_init, jnp.where(done, e_prev, e), done | stop

    zeros = jnp.zeros_like(planes)
    z = jnp.zeros(planes.shape[:1], planes.dtype)
    state = (jnp.int32(0), (zeros, zeros), planes, z, z, jnp.zeros(planes.shape[:1], bool))
    if loop == "while":
        return lax.while_loop(lambda s: (s[0] < n_iter) & ~jnp.all(s[5]), advance, state)[2]

    def finished(state):  # every plane stopped, or past n_iter (the outer loop's last round)
        return jnp.all(state[5]) | (state[0] >= n_iter)

    def body(state, _):
        return lax.cond(finished(state), lambda s: s, advance, state), None

    # the steps as rounds of about sqrt(n_iter), each round recomputed in reverse mode's
    # backward pass (jax.checkpoint): it keeps the state of each round and of one round's
    # steps, not of every step (n_iter = 200 on 512x512x3: 5.8 GB; benchmarks/NOTES.md, "TV")
    inner = math.isqrt(n_iter - 1) + 1  # n_iter >= 1

    @jax.checkpoint
    def round_of_steps(state, _):  # a round after the planes stopped is skipped whole
        steps = lambda s: lax.scan(body, s, None, length=inner)[0]
        return lax.cond(finished(state), lambda s: s, steps, state), None

    return lax.scan(round_of_steps, state, None, length=-(-n_iter // inner))[0][2]


@functools.partial(jax.custom_jvp, nondiff_argnums=(3,))
def _tv_planes(planes, weight, eps, n_iter: int):
    """:func:`_iterate` as a ``while_loop``; differentiated (forward or reverse mode) as the
    ``scan`` form, whose values are the same: the gradient is that of the iterations each
    plane ran (its stop is held, not differentiated). Reverse mode keeps the state of each
    round of about ``sqrt(n_iter)`` steps and of one round's steps (:func:`_iterate`)."""
    return _iterate(planes, weight, eps, n_iter, loop="while")


@_tv_planes.defjvp
def _tv_planes_jvp(n_iter, primals, tangents):
    return jax.jvp(functools.partial(_iterate, n_iter=n_iter, loop="scan"), primals, tangents)


@functools.partial(jax.jit, static_argnames=("layout", "n_iter"))
def _tv_chambolle(image, weight, eps, *, n_iter, layout):
    x = to_bhwc(image.astype(jnp.float32), layout)
    b, h, w, c = x.shape
    planes = jnp.moveaxis(x, 3, 1).reshape(b * c, h, w)
    y = jnp.moveaxis(_tv_planes(planes, weight, eps, n_iter).reshape(b, c, h, w), 1, 3)
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

    Differentiable (``jax.grad`` with respect to the image and ``weight``): the iterations
    run as a ``lax.while_loop`` that ends when every channel has stopped, and are
    differentiated as a ``lax.scan`` of ``n_iter`` steps with the same values (a custom
    JVP: reverse mode cannot go through a ``while_loop``); the gradient is that of the
    iterations each channel ran (its stop is held, not differentiated); reverse mode keeps
    every iteration's state, so its memory grows with ``n_iter``.

    Args:
        image: HW, HWC, NHWC (or CHW/NCHW with ``layout``); any supported dtype.
        weight: denoising weight relative to ``max_value`` (> 0; larger: smoother).
        n_iter: maximum number of iterations (integer >= 1; static: the differentiated
            program is a ``lax.scan`` of this length; a new value compiles again).
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
    if is_traced(n_iter):
        raise ValueError("n_iter sets the length of tv_chambolle's loop: it must be a Python integer >= 1, "
                         "not a traced value")
    if isinstance(n_iter, bool) or not isinstance(n_iter, (int, np.integer)) or n_iter < 1:
        raise ValueError(f"n_iter must be an integer >= 1; got {n_iter!r}")
    image, layout = prepare(image, layout)
    mv = resolve_max(max_value, image.dtype)
    w = jnp.asarray(weight, jnp.float32) * jnp.asarray(mv, jnp.float32)
    return _tv_chambolle(image, w, jnp.asarray(eps, jnp.float32), n_iter=int(n_iter), layout=layout)


# It iterates over the whole image: registered without a radius, so a pipeline runs it at
# the image's exact size, never in padded size buckets.
OPS = (
    OpInfo("tv_chambolle", tv_chambolle),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
