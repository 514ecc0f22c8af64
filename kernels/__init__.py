"""Filter-kernel constructors (``imgproc.kernels``).

Pure NumPy: every function returns a ``float32`` array and never traces JAX. The
kernels are *correlation* weights in scipy.ndimage's sense: ``out[i, j] =
sum(k[a, b] * x[i + a - ka // 2, j + b - kb // 2])``, so they are applied by
:func:`imgproc.correlate` as they are written down here.

Normalisation, stated per kernel:

* ``box``, ``gaussian`` (``normalize=True``), ``gaussian_1d``: sum to 1 (mean kept).
* ``sharpen``: sums to 1 (mean kept); ``-1`` around a positive centre, divided by the sum.
* ``emboss``: sums to 1 (flat areas kept, relief added).
* ``laplacian``, ``sobel``: sum to 0 (flat areas go to 0).
* ``identity``: a single 1 in the centre.

Examples:
    >>> from imgproc import kernels
    >>> kernels.box(3).sum()
    np.float32(1.0)
    >>> float(kernels.gaussian(1.0, size=5, normalize=False)[2, 2])  # the seed chapter's table
    0.15915493667125702
    >>> round(float(kernels.sharpen()[2, 2]), 6)  # 50 / 26
    1.923077
"""

from __future__ import annotations

import numpy as np

from imgproc.core.validate import MAX_KERNEL_SIDE, check_number, check_odd

__all__ = [
    "box",
    "gaussian",
    "gaussian_1d",
    "gaussian_derivative_1d",
    "gaussian_radius",
    "sharpen",
    "emboss",
    "laplacian",
    "sobel",
    "prewitt",
    "identity",
    "combine",
    "factor",
    "rebalance",
]


def _check_sigma(sigma) -> float:
    return float(check_number("sigma", sigma, low=0))


def gaussian_radius(sigma: float, truncate: float = 4.0) -> int:
    """Radius scipy.ndimage uses for a Gaussian: ``int(truncate * sigma + 0.5)``, at most
    ``MAX_KERNEL_SIDE // 2`` (32767 pixels; else ValueError)."""
    s = _check_sigma(sigma)
    t = float(check_number("truncate", truncate, low=0, low_open=True))
    radius = t * s + 0.5
    if radius >= MAX_KERNEL_SIDE // 2 + 1:
        raise ValueError(f"truncate * sigma must be below {MAX_KERNEL_SIDE // 2 + 0.5} (the kernel's radius in pixels, "
                         f"a side of at most {MAX_KERNEL_SIDE}); got sigma={sigma!r}, truncate={truncate!r}")
    return int(radius)


def box(size: int) -> np.ndarray:
    """``size``×``size`` mean filter, every weight ``1/size²`` (sums to 1).

    Matches ``scipy.ndimage.uniform_filter(x, size)`` when applied with :func:`imgproc.correlate`.
    """
    size = check_odd("size", size)
    return np.full((size, size), 1.0 / (size * size), dtype=np.float32)


def gaussian_1d(sigma: float, *, size: int | None = None, truncate: float = 4.0) -> np.ndarray:
    """1-D Gaussian weights, normalised to sum 1 (scipy.ndimage's ``_gaussian_kernel1d``).

    Length ``2 * int(truncate * sigma + 0.5) + 1`` unless ``size`` (odd) is given.
    ``sigma == 0`` gives ``[1.]`` (identity).
    """
    s = _check_sigma(sigma)
    radius = gaussian_radius(s, truncate) if size is None else check_odd("size", size) // 2
    if s == 0:
        k = np.zeros(2 * radius + 1, np.float64)
        k[radius] = 1.0
        return k.astype(np.float32)
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    k = np.exp(-0.5 * (x / s) ** 2)
    return rebalance((k / k.sum()).astype(np.float32))


def gaussian_derivative_1d(sigma: float, order: int, *, size: int | None = None,
                           truncate: float = 4.0) -> np.ndarray:
    """1-D correlation weights of the ``order``-th derivative of a Gaussian: what
    ``scipy.ndimage.gaussian_filter1d(x, sigma, order=order)`` correlates with (scipy's
    ``_gaussian_kernel1d`` reversed). ``order=0`` is :func:`gaussian_1d`; ``sigma == 0``
    gives the identity for every order (scipy skips such an axis).

    Length ``2 * int(truncate * sigma + 0.5) + 1`` unless ``size`` (odd) is given.

    Example:
        >>> from imgproc import kernels
        >>> kernels.gaussian_derivative_1d(1.0, 1, size=3).round(4)  # a central difference, smoothed
        array([-0.2741,  0.    ,  0.2741], dtype=float32)
    """
    s = _check_sigma(sigma)
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 0:
        raise ValueError(f"order must be a non-negative integer; got {order!r}")
    if order == 0 or s == 0:
        return gaussian_1d(s, size=size, truncate=truncate)
    radius = gaussian_radius(s, truncate) if size is None else check_odd("size", size) // 2
    return gaussian_derivative_taps(np.arange(-radius, radius + 1, dtype=np.float64), s, int(order), np)[::-1].astype(
        np.float32)


def gaussian_derivative_taps(x, sigma, order: int, xp):
    """scipy's ``_gaussian_kernel1d(sigma, order, radius)`` at the offsets ``x`` (not
    reversed), in the array module ``xp`` (NumPy, or ``jax.numpy`` for a traced ``sigma``):
    the normalised Gaussian times the polynomial that its ``order``-th derivative brings,
    found as scipy does (``q' = D q + P q``, applied ``order`` times)."""
    sigma2 = sigma * sigma
    phi = xp.exp(-0.5 * x * x / sigma2)
    phi = phi / xp.sum(phi)
    q = [1.0] + [0.0] * order  # coefficients of x**0 .. x**order
    for _ in range(order):  # q' = D q (the derivative) + P q (times the Gaussian's -x / sigma2)
        q = [(k + 1) * q[k + 1] * (k < order) - (q[k - 1] / sigma2 if k > 0 else 0.0) for k in range(order)] + \
            [-q[order - 1] / sigma2]
    poly = sum(c * x ** k for k, c in enumerate(q))
    return poly * phi


def rebalance(weights: np.ndarray) -> np.ndarray:
    """float32 ``weights`` of a symmetric kernel nudged so that their exact sum is as close
    to 1 as float32 allows, symmetry kept.

    Rounding each tap of a normalised float64 kernel to float32 leaves a sum of about
    1 + 2e-8 (σ = 1): a gain of 1 + 4e-8 over a 2-D blur, which moves the sum of a ramp up
    to 9,999 by 2 (scipy's own ``test_gauss03``). The residual is put on the largest
    symmetric pair (or the centre) whose float32 spacing can hold it.
    """
    k = np.asarray(weights, np.float32).copy()
    n = k.size
    for _ in range(4):
        err = 1.0 - float(k.astype(np.float64).sum())
        if err == 0.0:
            break
        for j in np.argsort(-k[: (n + 1) // 2], kind="stable"):
            pair = j != n - 1 - j
            new = np.float32(np.float64(k[j]) + err / (2 if pair else 1))
            if new != k[j]:
                k[j] = k[n - 1 - j] = new
                break
    return k


def gaussian(sigma: float, *, size: int | None = None, truncate: float = 4.0, normalize: bool = True) -> np.ndarray:
    """2-D Gaussian kernel.

    ``normalize=True`` (default): the outer product of :func:`gaussian_1d`, summing to 1, so
    applying it matches ``scipy.ndimage.gaussian_filter(x, sigma, truncate=truncate)`` over
    two axes. ``normalize=False``: the density ``exp(-d²/2σ²) / (2πσ²)`` sampled on the grid,
    which is the seed chapter's table for ``gaussian(1.0, size=5, normalize=False)``
    (centre 0.15915494, sum 0.9818).
    """
    if normalize:
        k1 = gaussian_1d(sigma, size=size, truncate=truncate).astype(np.float64)
        return np.outer(k1, k1).astype(np.float32)
    s = _check_sigma(sigma)
    if s == 0:
        raise ValueError("sigma must be > 0 when normalize=False (the density is undefined at 0)")
    radius = gaussian_radius(s, truncate) if size is None else check_odd("size", size) // 2
    y, x = np.mgrid[-radius : radius + 1, -radius : radius + 1].astype(np.float64)
    k = np.exp(-(x**2 + y**2) / (2 * s**2)) / (2 * np.pi * s**2)
    return k.astype(np.float32)


def sharpen(size: int = 5, *, center: float | None = None) -> np.ndarray:
    """Sharpen kernel: ``-1`` everywhere, ``center`` in the middle, divided by its sum.

    ``center`` defaults to ``2 * size²`` (50 for 5×5), so the 5×5 default is the seed chapter's
    matrix: centre ``50/26 = 1.923077``, others ``-1/26 = -0.03846154``. It sums to 1.
    """
    size = check_odd("size", size)
    if size == 1:
        return np.ones((1, 1), np.float32)
    c = 2.0 * size * size if center is None else float(center)
    total = c - (size * size - 1)
    if not np.isfinite(c) or total <= 0:
        raise ValueError(
            f"center must be a finite number > size**2 - 1 = {size * size - 1} so the kernel sums to a "
            f"positive value; got {center!r}"
        )
    k = -np.ones((size, size), np.float64)
    k[size // 2, size // 2] = c
    return (k / total).astype(np.float32)


def emboss() -> np.ndarray:
    """3×3 emboss kernel (relief lit from the top left), sums to 1."""
    return np.array([[-2, -1, 0], [-1, 1, 1], [0, 1, 2]], np.float32)


def laplacian() -> np.ndarray:
    """3×3 Laplacian (4-neighbour), sums to 0; matches ``scipy.ndimage.laplace`` via correlate."""
    return np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], np.float32)


def sobel(axis: int) -> np.ndarray:
    """3×3 Sobel derivative along ``axis`` (0: rows/vertical, 1: columns/horizontal).

    Correlating with it equals ``scipy.ndimage.sobel(x, axis)`` on a 2-D image; sums to 0.
    """
    if axis not in (0, 1):
        raise ValueError(f"axis must be 0 (vertical derivative) or 1 (horizontal); got {axis!r}")
    k = np.outer([-1.0, 0.0, 1.0], [1.0, 2.0, 1.0]).astype(np.float32)
    return k if axis == 0 else np.ascontiguousarray(k.T)


def prewitt(axis: int) -> np.ndarray:
    """3×3 Prewitt derivative along ``axis`` (0: rows/vertical, 1: columns/horizontal):
    ``[-1, 0, 1]`` along the axis, ``[1, 1, 1]`` across it; sums to 0.

    Correlating with it equals ``scipy.ndimage.prewitt(x, axis)`` on a 2-D image (away
    from a ``"constant"`` border with ``cval != 0``, where scipy pads its intermediate
    result with ``cval`` again; :func:`imgproc.prewitt` matches that too).
    """
    if axis not in (0, 1):
        raise ValueError(f"axis must be 0 (vertical derivative) or 1 (horizontal); got {axis!r}")
    k = np.outer([-1.0, 0.0, 1.0], [1.0, 1.0, 1.0]).astype(np.float32)
    return k if axis == 0 else np.ascontiguousarray(k.T)


def identity(size: int = 1) -> np.ndarray:
    """``size``×``size`` kernel with a single 1 in the centre (leaves an image unchanged)."""
    size = check_odd("size", size)
    k = np.zeros((size, size), np.float32)
    k[size // 2, size // 2] = 1.0
    return k


def combine(*kernels) -> np.ndarray:
    """One kernel equal to correlating with each of ``kernels`` in turn.

    The result is the full 2-D convolution of the kernels, of size ``sum(k) - (n - 1)`` per
    axis. Applied once, it equals applying the kernels one after the other exactly with
    ``mode="wrap"`` and, for the other modes, everywhere except within the combined radius
    of the border (a border is then handled once instead of once per kernel).
    All kernels must be 2-D with odd sides.
    """
    if not kernels:
        raise ValueError("combine needs at least one kernel")
    out = None
    for k in kernels:
        k = np.asarray(k, np.float64)
        if k.ndim != 2 or k.shape[0] % 2 == 0 or k.shape[1] % 2 == 0:
            raise ValueError(f"combine takes 2-D kernels with odd sides; got shape {k.shape}")
        if out is None:
            out = k
            continue
        h = out.shape[0] + k.shape[0] - 1
        w = out.shape[1] + k.shape[1] - 1
        res = np.zeros((h, w))
        for a in range(k.shape[0]):
            for b in range(k.shape[1]):
                res[a : a + out.shape[0], b : b + out.shape[1]] += k[a, b] * out
        out = res
    return out.astype(np.float32)


def factor(kernel, *, rtol: float = 1e-6):
    """Split a 2-D kernel into separable terms: ``[(col, row), ...]`` with
    ``kernel ≈ sum(np.outer(col, row))``.

    Uses the singular value decomposition and keeps the terms whose singular value exceeds
    ``rtol`` times the largest. A Gaussian or box gives one term. A rank-2 kernel that is a
    weight at the centre (index ``size // 2``) plus a rank-1 kernel (the sharpen kernel:
    ``(center + 1) / s`` at the centre minus a box) gives those two terms, the centre term
    first (``col`` and ``row`` zero but at the centre): the filters apply it as a scaled
    copy of the image, without a pass. Returns float32 1-D arrays.

    Example:
        >>> [int(np.count_nonzero(c)) for c, r in factor(sharpen(5))]  # the centre, then the box
        [1, 5]
    """
    k = np.asarray(kernel, np.float64)
    if k.ndim != 2:
        raise ValueError(f"factor takes a 2-D kernel; got shape {k.shape}")
    terms = _svd_terms(k, rtol)
    if len(terms) == 2:
        return _centre_and_rank1(k, rtol) or terms
    return terms


def _svd_terms(k, rtol):
    """The separable terms of float64 ``k`` by its singular values above ``rtol`` times the
    largest (all zero: one zero term), as float32."""
    u, s, vt = np.linalg.svd(k)
    if s[0] == 0:
        return [(np.zeros(k.shape[0], np.float32), np.zeros(k.shape[1], np.float32))]
    terms = []
    for i in range(len(s)):
        if s[i] <= rtol * s[0]:
            break
        scale = np.sqrt(s[i])
        col, row = u[:, i] * scale, vt[i] * scale
        if row.sum() < 0:  # keep the row factor positive-sum for readability
            col, row = -col, -row
        terms.append((col.astype(np.float32), row.astype(np.float32)))
    return terms


def _centre_and_rank1(k, rtol):
    """``[(centre col, centre row), (col, row)]`` when ``k`` minus a weight at its centre
    has rank 1, else None. A rank-1 ``m`` has ``m[a, b] = m[a, j] * m[i, b] / m[i, j]``
    for any ``i != a, j != b`` with ``m[i, j] != 0``: that fixes the centre weight."""
    a, b = k.shape[0] // 2, k.shape[1] // 2
    off = np.abs(k).copy()
    off[a, :] = 0
    off[:, b] = 0
    i, j = np.unravel_index(np.argmax(off), k.shape)
    if off[i, j] == 0:
        return None
    rest = k.copy()
    rest[a, b] = k[a, j] * k[i, b] / k[i, j]
    terms = _svd_terms(rest, rtol)
    if len(terms) != 1:
        return None
    centre_col, centre_row = np.zeros(k.shape[0], np.float32), np.zeros(k.shape[1], np.float32)
    centre_col[a], centre_row[b] = k[a, b] - rest[a, b], 1.0
    return [(centre_col, centre_row), terms[0]]
