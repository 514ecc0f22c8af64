"""Per-pixel noise: Gaussian, speckle and salt-and-pepper, and the hashed random fields
they are drawn from.

Per-pixel random fields are drawn from a counter-based hash keyed by two 32-bit words
(drawn once per image from its key with ``jax.random.bits``), not by
``jax.random.normal`` on the whole image: on CPU threefry normals cost several times more
per value (benchmarks/NOTES.md, "Hashed noise"). Each value
is ``mix(mix(counter ^ w0) + w1)`` with ``mix`` the "lowbias32" integer finaliser (an
invertible 32-bit mixer; Wellons 2018); normals come from Box-Muller, one per value
(:func:`hash_normal`). The two words are the op's drawn parameters, so a replay gives the
same field. Reproducible for a given key, independent across keys derived by
``fold_in``/``split``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from imgproc.augment.common import back, to_float
from imgproc.core.arrays import resolve_max
from imgproc.core.keys import doctests, draw_words, random_op
from imgproc.core.registry import KEEPS_TARGETS, register_ops
from imgproc.core.validate import check_number


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
    return draw_words(key, 2)


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


# counters at or above this value would meet the second draw's counters (``i | 2**31``)
MAX_FIELD_VALUES = 1 << 31


def hash_normal(words, shape, layout=None):
    """Standard normal float32 field of ``shape`` keyed by ``words``: Box-Muller, one value
    per counter. The value at counter ``i`` draws ``u`` (from counter ``i``) and ``v``
    (from counter ``i + 2**31``: disjoint counters of one bijective hash, so independent
    draws) and is ``sqrt(-2 ln u) cos(2 pi v)``, with the cosine of a uniform angle drawn
    as the cosine of a uniform quarter turn with a random sign (:func:`_signed_cos`): the
    same distribution, and one short polynomial. At most :data:`MAX_FIELD_VALUES` values
    a field; with 24-bit ``u`` the largest value is about 5.9.

    Written for XLA:CPU's loop emitter (why: benchmarks/NOTES.md, "Hashed noise"): on an
    image whose last axis is 3 channels, a loop body past a size limit is vectorised along
    that axis alone (4 lanes, masked) instead of across pixels, which is slower; the Box-Muller pair
    of consecutive counters (``i >> 1``) and the octant-reduced cosine each put the noise
    op over that limit."""
    size = int(np.prod(shape))
    if size > MAX_FIELD_VALUES:
        raise ValueError(f"a hashed noise field holds at most 2**31 values; got shape {tuple(shape)} ({size} values)")
    i = _counter(shape, layout)
    u = _hash(i, words)
    v = _hash(i | jnp.uint32(MAX_FIELD_VALUES), words)
    return jnp.sqrt(-2.0 * jnp.log(_unit(u))) * _signed_cos(v)


# cos(a) = sum_k (-1)**k a**(2k) / (2k)!, to a**12: within 7e-9 of cos on [0, pi/2]
_COS_TAYLOR = [(-1) ** k / float(np.prod(np.arange(1, 2 * k + 1))) for k in range(7)]


def _signed_cos(v):
    """``±cos(pi/2 * f)`` of uint32 ``v``: ``f`` in [0, 1) from the 24 bits below the top
    one, the sign from the top bit. For uniform ``v`` it has the distribution of ``cos(2 pi v / 2**32)``
    (the cosine of a uniform angle is that of a uniform quarter turn, either sign) and
    equals ``sign * cos(pi/2 * f)`` to 3e-7."""
    f = ((v << 1) >> 8).astype(jnp.float32) * np.float32(1.0 / 16777216.0)
    a = f * np.float32(np.pi / 2)
    a2 = a * a
    c = np.float32(_COS_TAYLOR[-1])
    for coef in _COS_TAYLOR[-2::-1]:
        c = c * a2 + np.float32(coef)
    sign = v & jnp.uint32(0x80000000)
    return jax.lax.bitcast_convert_type(jax.lax.bitcast_convert_type(c, jnp.uint32) ^ sign, jnp.float32)


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


def _speckle_params(key, shape, *, layout, sigma=0.1):
    check_number("sigma", sigma, low=0)
    return _field_params(key, shape, layout=layout)


def _apply_speckle(image, params, *, layout, sigma=0.1):
    x = jnp.asarray(image)
    n = hash_normal(params["words"], x.shape, layout) * jnp.asarray(sigma, jnp.float32)
    xf = to_float(x)
    return back(xf + xf * n, x.dtype)


def _salt_and_pepper_params(key, shape, *, layout, amount=0.05, salt_vs_pepper=0.5):
    check_number("amount", amount, low=0, high=1)
    check_number("salt_vs_pepper", salt_vs_pepper, low=0, high=1)
    words = draw_words(key, 4)
    return {"hit_words": words[:2], "salt_words": words[2:]}


def _apply_salt_and_pepper(image, params, *, layout, amount=0.05, salt_vs_pepper=0.5, max_value=None):
    x = jnp.asarray(image)
    m = resolve_max(max_value, x.dtype)
    hit = hash_uniform(params["hit_words"], x.shape, layout) < jnp.asarray(amount, jnp.float32)
    salt = hash_uniform(params["salt_words"], x.shape, layout) < jnp.asarray(salt_vs_pepper, jnp.float32)
    y = jnp.where(hit, jnp.where(salt, jnp.asarray(m, jnp.float32), 0.0), to_float(x))
    return back(y, x.dtype)


OPS = (
    random_op("gaussian_noise", _gaussian_noise_params, _apply_gaussian_noise,
              doc="""Add i.i.d. normal noise of standard deviation ``sigma * max_value`` to every value
    (``skimage.util.random_noise(mode="gaussian", var=sigma**2)`` without its clipping).
    Parameters: ``{"words"}`` (the two uint32 words of the field)."""),
    random_op("speckle_noise", _speckle_params, _apply_speckle,
              doc="""Multiplicative noise ``x + x * n``, ``n ~ N(0, sigma**2)``
    (``skimage.util.random_noise(mode="speckle", var=sigma**2)`` without its clipping).
    Parameters: ``{"words"}``."""),
    random_op("salt_and_pepper", _salt_and_pepper_params, _apply_salt_and_pepper,
              doc="""Replace a fraction ``amount`` of the values by ``max_value`` (salt, with probability
    ``salt_vs_pepper``) or 0 (pepper), each value independently:
    ``skimage.util.random_noise(mode="s&p")``'s definition (per value, not per pixel).
    Parameters: ``{"hit_words", "salt_words"}``."""),
)
register_ops(OPS, targets=KEEPS_TARGETS)  # pixel values only: targets stay
__test__ = doctests(OPS)  # the examples of the functions random_op wrote
