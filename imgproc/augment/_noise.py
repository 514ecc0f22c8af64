"""Per-pixel noise: Gaussian, speckle and salt-and-pepper, and the hashed random fields
they are drawn from.

Per-pixel random fields are drawn from a counter-based hash keyed by two 32-bit words
(drawn once per image from its key with ``jax.random.bits``), not by
``jax.random.normal`` on the whole image: on CPU threefry normals cost several times more
per value (benchmarks/NOTES.md, "Hashed noise"). Each value
is ``mix(mix(counter ^ w0) + w1)`` with ``mix`` the "lowbias32" integer finaliser (an
invertible 32-bit mixer; Wellons 2018); normals come from Box-Muller on pairs of values
(:func:`hash_normal`). The two words are the op's drawn parameters, so a replay gives the
same field. Reproducible for a given key, independent across keys derived by
``fold_in``/``split``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from imgproc._arrays import resolve_max
from imgproc._types import callers_type
from imgproc._random import run_random_op
from imgproc._stages import KEEPS_TARGETS, OpInfo, register_ops
from imgproc._validate import check_number
from imgproc.augment._common import back, to_float


def _mix(v):
    v = v ^ (v >> 16)
    v = v * jnp.uint32(0x7FEB352D)
    v = v ^ (v >> 15)
    v = v * jnp.uint32(0x846CA68B)
    return v ^ (v >> 16)


def _counter(shape, layout):
    """The index of each element in (H, W, C) order, whatever the layout, so a channel-first
    image gets the same field as its channel-last twin."""
    if layout in ("CHW", "NCHW"):
        c, h, w = shape[-3:]
        ic = jax.lax.broadcasted_iota(jnp.uint32, shape, len(shape) - 3)
        ih = jax.lax.broadcasted_iota(jnp.uint32, shape, len(shape) - 2)
        iw = jax.lax.broadcasted_iota(jnp.uint32, shape, len(shape) - 1)
        i = (ih * w + iw) * c + ic
        if layout == "NCHW":
            i = i + jax.lax.broadcasted_iota(jnp.uint32, shape, 0) * (c * h * w)
        return i
    return jnp.arange(int(np.prod(shape)), dtype=jnp.uint32).reshape(shape)


def field_words(key):
    """The two uint32 words a hashed field of ``key`` is keyed by."""
    return jax.random.bits(key, (2,), jnp.uint32)


def _unit(words):
    """Uniform in (0, 1) from 32-bit words (24-bit resolution, never 0 or 1)."""
    return ((words >> 8).astype(jnp.float32) + 0.5) * (1.0 / 16777216.0)


def _hash(counter, words):
    """The 32-bit word of each ``counter`` value, keyed by ``words``: a bijection of the
    counter for given words."""
    return _mix(_mix(counter ^ words[0]) + words[1])


def hash_uniform(words, shape, layout=None):
    """Uniform (0, 1) float32 field of ``shape`` keyed by ``words`` (:func:`field_words`);
    the same numbers at the same (H, W, C) position for channel-first and channel-last
    layouts."""
    return _unit(_hash(_counter(shape, layout), words))


def hash_normal(words, shape, layout=None):
    """Standard normal float32 field of ``shape`` keyed by ``words``: Box-Muller on pairs of
    consecutive (H, W, C) positions. Pair ``p`` draws ``u`` (from counter ``p``) and ``v``
    (from counter ``p + 2**31``: disjoint counters of one bijective hash, so independent
    draws); position ``2p`` gets ``sqrt(-2 ln u) cos(2 pi v)`` and ``2p + 1`` the sine
    (the cosine of the angle three quarters of a turn on, added to ``v``'s 32 bits). The
    angle's cosine is a polynomial on an eighth of a turn (within 2e-7 of ``cos``), so the
    field is one elementwise loop: 2.4x faster than ``sqrt(2) * erfinv(2u - 1)`` (the
    inverse-CDF method of ``jax.random.normal``) and 15x faster than with ``jnp.cos``/``sin``
    (benchmarks/NOTES.md, "Hashed noise"). With 24-bit ``u`` the largest value is about 5.9."""
    i = _counter(shape, layout)
    pair = i >> 1
    u = _hash(pair, words)
    v = _hash(pair | jnp.uint32(1 << 31), words)
    turn = v + (i & 1) * jnp.uint32(0xC0000000)  # sin(a) = cos(a + 3/4 turn), wrapping mod 2**32
    return jnp.sqrt(-2.0 * jnp.log(_unit(u))) * _cos_turns(turn)


def _cos_turns(t):
    """cos(2 pi t / 2**32) of uint32 ``t``: the octant from the top 3 bits, then a sine or
    cosine polynomial (Taylor to degree 9 / 8 on [0, pi/4], error < 2e-7)."""
    octant = t >> 29
    f = ((t << 3) >> 8).astype(jnp.float32) * np.float32(1.0 / 16777216.0)  # position in the octant, [0, 1)
    f = jnp.where((octant & 1) == 1, 1.0 - f, f)  # odd octants run backwards
    a = f * np.float32(np.pi / 4)
    a2 = a * a
    sin = a * (1.0 + a2 * (-1 / 6 + a2 * (1 / 120 + a2 * (-1 / 5040 + a2 * (1 / 362880)))))
    cos = 1.0 + a2 * (-0.5 + a2 * (1 / 24 + a2 * (-1 / 720 + a2 * (1 / 40320))))
    # octants 0, 3, 4, 7 take the cosine of the reduced angle, 1, 2, 5, 6 its sine;
    # negative in octants 2 to 5
    value = jnp.where(((octant + 1) & 2) == 2, sin, cos)
    return jnp.where((octant >= 2) & (octant <= 5), -value, value)


def _field_params(key, shape, *, layout):
    return {"words": field_words(key)}


def _gaussian_noise_params(key, shape, *, layout, sigma=0.05):
    check_number("sigma", sigma, low=0)
    return _field_params(key, shape, layout=layout)


def _apply_gaussian_noise(image, params, *, layout, sigma=0.05, max_value=None):
    x = jnp.asarray(image)
    m = resolve_max(max_value, x.dtype)
    n = hash_normal(params["words"], x.shape, layout)
    return back(to_float(x) + n * (jnp.asarray(sigma, jnp.float32) * m), x.dtype)


@callers_type
def gaussian_noise(key, image, *, sigma=0.05, max_value=None, layout=None):
    """Add i.i.d. normal noise of standard deviation ``sigma * max_value`` to every value
    (``skimage.util.random_noise(mode="gaussian", var=sigma**2)`` without its clipping).
    Parameters: ``{"words"}`` (the two uint32 words of the field)."""
    return run_random_op(_gaussian_noise_params, _apply_gaussian_noise, key, image, layout=layout, sigma=sigma,
                         max_value=max_value)


def _speckle_params(key, shape, *, layout, sigma=0.1):
    check_number("sigma", sigma, low=0)
    return _field_params(key, shape, layout=layout)


def _apply_speckle(image, params, *, layout, sigma=0.1):
    x = jnp.asarray(image)
    n = hash_normal(params["words"], x.shape, layout) * jnp.asarray(sigma, jnp.float32)
    xf = to_float(x)
    return back(xf + xf * n, x.dtype)


@callers_type
def speckle_noise(key, image, *, sigma=0.1, layout=None):
    """Multiplicative noise ``x + x * n``, ``n ~ N(0, sigma**2)``
    (``skimage.util.random_noise(mode="speckle", var=sigma**2)`` without its clipping).
    Parameters: ``{"words"}``."""
    return run_random_op(_speckle_params, _apply_speckle, key, image, layout=layout, sigma=sigma)


def _salt_and_pepper_params(key, shape, *, layout, amount=0.05, salt_vs_pepper=0.5):
    check_number("amount", amount, low=0, high=1)
    check_number("salt_vs_pepper", salt_vs_pepper, low=0, high=1)
    k1, k2 = jax.random.split(key)
    return {"hit_words": field_words(k1), "salt_words": field_words(k2)}


def _apply_salt_and_pepper(image, params, *, layout, amount=0.05, salt_vs_pepper=0.5, max_value=None):
    x = jnp.asarray(image)
    m = resolve_max(max_value, x.dtype)
    hit = hash_uniform(params["hit_words"], x.shape, layout) < jnp.asarray(amount, jnp.float32)
    salt = hash_uniform(params["salt_words"], x.shape, layout) < jnp.asarray(salt_vs_pepper, jnp.float32)
    y = jnp.where(hit, jnp.where(salt, jnp.asarray(m, jnp.float32), 0.0), to_float(x))
    return back(y, x.dtype)


@callers_type
def salt_and_pepper(key, image, *, amount=0.05, salt_vs_pepper=0.5, max_value=None, layout=None):
    """Replace a fraction ``amount`` of the values by ``max_value`` (salt, with probability
    ``salt_vs_pepper``) or 0 (pepper), each value independently:
    ``skimage.util.random_noise(mode="s&p")``'s definition (per value, not per pixel).
    Parameters: ``{"hit_words", "salt_words"}``."""
    return run_random_op(_salt_and_pepper_params, _apply_salt_and_pepper, key, image, layout=layout, amount=amount,
                         salt_vs_pepper=salt_vs_pepper, max_value=max_value)


OPS = (
    OpInfo("gaussian_noise", gaussian_noise, sample=_gaussian_noise_params, apply=_apply_gaussian_noise),
    OpInfo("speckle_noise", speckle_noise, sample=_speckle_params, apply=_apply_speckle),
    OpInfo("salt_and_pepper", salt_and_pepper, sample=_salt_and_pepper_params, apply=_apply_salt_and_pepper),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
