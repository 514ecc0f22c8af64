"""imgproc.restoration from one shared table of cases: reference parity, jit equals eager,
batch equals a loop, layouts, dtypes, properties, bad arguments, no recompilation."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Callable

import cv2
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.ndimage as ndi
import skimage.restoration as skr

import imgproc
from imgproc import presets, restoration as R
from imgproc.restoration import bilateral_filter, non_local_means, total_variation
from imgproc.restoration.median_filter import IMPULSE_MIN_FRACTION, median_network
from imgproc.restoration.noise_level import sigma_nhwc
from imgproc.restoration.non_local_means import nl_means_nhwc
from cases import GRID_MODES
from jaxprs import equations

# imgproc.estimate_sigma has its own db2 transform; the tests' reference, skimage's, imports PyWavelets
NO_PYWAVELETS = "PyWavelets is not installed (pip install PyWavelets): scikit-image's estimate_sigma, the reference, needs it"


def _per_channel(fn):
    def ref(x):
        x = np.asarray(x)
        if x.ndim == 2:
            return fn(x)
        return np.stack([fn(x[..., c]) for c in range(x.shape[-1])], -1)
    return ref


def _tapered_weight(e):
    """NL-means' weight: ``exp(-e)`` (skimage's) to ``e = 4``, then ``exp(-e - s²/(1 - s))``
    with ``s = e - 4``, 0 from the cutoff at 5 (float64)."""
    s = np.clip(e - 4.0, 0.0, 1.0)
    with np.errstate(divide="ignore"):
        return np.where(s < 1, np.exp(-e - s * s / np.where(s < 1, 1 - s, 1)), 0.0)


def _nlm_reference(x, sigma, h, patch, search, mode):
    """Brute-force NumPy NL-means of the documented definition (HWC float64)."""
    x = np.asarray(x, np.float64)
    x = x[..., None] if x.ndim == 2 else x
    hh, ww, c = x.shape
    r, d = patch // 2, search // 2
    np_mode = {"reflect": "symmetric", "mirror": "reflect", "nearest": "edge", "wrap": "wrap"}[mode]
    p = np.pad(x, ((r + d, r + d), (r + d, r + d), (0, 0)), mode=np_mode)
    num = np.zeros_like(x)
    den = np.zeros((hh, ww))
    for dy in range(-d, d + 1):
        for dx in range(-d, d + 1):
            sq = ((p[d:d + hh + 2 * r, d:d + ww + 2 * r] - p[d + dy:d + dy + hh + 2 * r, d + dx:d + dx + ww + 2 * r]) ** 2)
            sq = sq.sum(-1)
            dist = sum(sq[i:i + hh, j:j + ww] for i in range(2 * r + 1) for j in range(2 * r + 1)) / (c * (2 * r + 1) ** 2)
            e = np.maximum(dist - 2 * sigma ** 2, 0) / h ** 2
            wgt = _tapered_weight(e)
            num += wgt[..., None] * p[r + d + dy:r + d + dy + hh, r + d + dx:r + d + dx + ww]
            den += wgt
    return (num / den[..., None]).squeeze()


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    call: Callable  # call(image, **options) -> array
    reference: Callable | None  # reference(hwc float64 in 0..1) -> float64, same shape
    atol: float = 1e-5
    per_channel: bool = True  # channels are independent (CHW planes == HWC channels)
    identity: dict | None = None  # options that make it the identity
    local: bool = True  # has a finite reach (flat image exactly kept)


CASES = [
    Case("median3", lambda x, **o: imgproc.median(x, **{"size": 3, **o}),
         _per_channel(lambda p: ndi.median_filter(p, 3, mode="reflect")), atol=0, identity={"size": 1}),
    Case("median5", lambda x, **o: imgproc.median(x, size=5, **o),
         _per_channel(lambda p: ndi.median_filter(p, 5, mode="reflect")), atol=0),
    Case("bilateral", lambda x, **o: imgproc.bilateral(x, sigma_color=0.2, sigma_spatial=1.5, mode="mirror", **o),
         lambda x: cv2.bilateralFilter(np.asarray(x, np.float32), -1, 0.2, 1.5), atol=1e-5, per_channel=False),
    Case("tv_chambolle", lambda x, **o: imgproc.tv_chambolle(x, weight=0.1, **o),
         lambda x: skr.denoise_tv_chambolle(x, weight=0.1, channel_axis=-1 if x.ndim == 3 else None),
         atol=1e-4, local=False),
    Case("nl_means", lambda x, **o: imgproc.nl_means(x, **{"sigma": 0.05, "h": 0.2, "patch_size": 3, "search_size": 5, **o}),
         lambda x: _nlm_reference(x, 0.05, 0.2, 3, 5, "reflect"), atol=2e-5, per_channel=False,
         identity={"h": 0.0, "sigma": 0.0}),
]
IDS = [c.name for c in CASES]


@pytest.fixture
def rng():
    return np.random.default_rng(12)


def _img(rng, h=13, w=15, c=3):
    return rng.random((h, w, c)).astype(np.float32)


@pytest.mark.parametrize("case", [c for c in CASES if c.reference is not None], ids=lambda c: c.name)
@pytest.mark.parametrize("channels", [0, 3])
def test_reference_parity(case, channels, rng):
    x = _img(rng, c=max(channels, 1))
    x = x[..., 0] if channels == 0 else x
    got = np.asarray(case.call(x))
    assert got.shape == x.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, case.reference(x.astype(np.float64)), atol=case.atol, rtol=0)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_jit_equals_eager(case, rng):
    x = _img(rng)
    eager = np.asarray(case.call(x))
    jitted = np.asarray(jax.jit(lambda v: case.call(v))(jnp.asarray(x)))
    np.testing.assert_allclose(jitted, eager, atol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_batch_and_layouts_equal_a_loop(case, rng):
    xs = np.stack([_img(rng), _img(rng) * 0.5])
    loop = np.stack([np.asarray(case.call(x)) for x in xs])
    np.testing.assert_allclose(np.asarray(case.call(xs)), loop, atol=1e-6)
    nchw = np.asarray(case.call(np.moveaxis(xs, -1, 1), layout="NCHW"))
    np.testing.assert_allclose(np.moveaxis(nchw, 1, -1), loop, atol=1e-6)
    chw = np.asarray(case.call(np.moveaxis(xs[0], -1, 0), layout="CHW"))
    np.testing.assert_allclose(np.moveaxis(chw, 0, -1), loop[0], atol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", ["uint8", "uint16"])
def test_dtypes_and_flat_image(case, dtype, rng):
    top = {"uint8": 255, "uint16": 65535}.get(dtype, 1.0)
    flat = np.full((9, 10, 3), 0.4 * top).astype(jnp.dtype(dtype))
    out = np.asarray(case.call(flat))
    assert out.dtype == flat.dtype and out.shape == flat.shape
    np.testing.assert_allclose(out.astype(np.float64), flat.astype(np.float64), rtol=1e-2)
    noisy = (rng.random((9, 10, 3)) * top).astype(jnp.dtype(dtype))
    assert np.asarray(case.call(noisy)).dtype == noisy.dtype


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("shape", [(1, 1, 3), (4, 2, 1)])
def test_tiny_images(case, shape, rng):
    x = rng.random(shape).astype(np.float32)
    out = np.asarray(case.call(x))
    assert out.shape == x.shape and np.isfinite(out).all()


@pytest.mark.parametrize("case", [c for c in CASES if c.identity], ids=lambda c: c.name)
def test_identity_options(case, rng):
    x = _img(rng)
    np.testing.assert_allclose(np.asarray(case.call(x, **case.identity)), x, atol=1e-6)


def test_auto_per_image_in_a_batch_and_properties(rng):
    """denoise(method="auto") decides per image inside the program: a batch equals a loop."""
    clean = (ndi.gaussian_filter(rng.random((20, 22, 3)), 2) * 255).astype(np.uint8)
    sp = clean.copy()
    m = rng.random(sp.shape)
    sp[m < 0.03], sp[m > 0.97] = 0, 255
    gauss = np.clip(clean + 20 * rng.standard_normal(clean.shape), 0, 255).astype(np.uint8)
    call = lambda x, **o: imgproc.denoise(x, patch_size=3, search_size=5, **o)  # noqa: E731
    batch = np.asarray(call(np.stack([sp, gauss])))
    np.testing.assert_array_equal(batch[0], np.asarray(call(sp)))
    np.testing.assert_array_equal(batch[1], np.asarray(call(gauss)))
    nchw = np.asarray(call(np.moveaxis(np.stack([sp, gauss]), -1, 1), layout="NCHW"))
    np.testing.assert_array_equal(np.moveaxis(nchw, 1, -1), batch)
    flat16 = np.full((9, 10, 3), 30000, np.uint16)
    np.testing.assert_array_equal(np.asarray(call(flat16)), flat16)
    assert np.asarray(call(np.ones((1, 1), np.float32))).shape == (1, 1)
    assert [c[0] for c in R.auto_choice(np.stack([sp, gauss]))] == ["median3", "nl_means"]


def test_median_matches_opencv_uint8(rng):
    x = (rng.random((20, 22, 3)) * 255).astype(np.uint8)
    for size in (3, 5, 7, 9, 17):  # Paeth's rule, the networks, one bit at a time (17: in two loops)
        # OpenCV's medianBlur replicates the border: scipy's "nearest"
        np.testing.assert_array_equal(np.asarray(imgproc.median(x, size=size, mode="nearest")), cv2.medianBlur(x, size))
    for mode in imgproc.MODES:
        ref = np.stack([ndi.median_filter(x[..., c], 5, mode=mode) for c in range(3)], -1)
        np.testing.assert_array_equal(np.asarray(imgproc.median(x, size=5, mode=mode)), ref)


@pytest.mark.parametrize("size", [3, 5, 7, 9])  # Paeth's rule, the networks, one bit at a time
def test_the_median_has_a_selections_gradient(size, rng):
    # the comparisons carry no derivative; each output passes its tangent to the window
    # value it selected (no ties in random floats), in reverse and forward mode
    x = rng.random((10, 11), dtype=np.float32)
    w = rng.random((10, 11), dtype=np.float32)
    f = lambda v: jnp.sum(imgproc.median(v, size=size) * w)  # noqa: E731
    g = np.asarray(jax.jit(jax.grad(f))(jnp.asarray(x)))
    r = size // 2
    rows, cols = np.pad(np.arange(10), r, mode="symmetric"), np.pad(np.arange(11), r, mode="symmetric")
    ref = np.zeros_like(x)
    for i in range(10):
        for j in range(11):
            rr, cc = rows[i:i + size], cols[j:j + size]
            a, b = np.unravel_index(np.argsort(x[np.ix_(rr, cc)], axis=None)[size * size // 2], (size, size))
            ref[rr[a], cc[b]] += w[i, j]
    np.testing.assert_allclose(g, ref, rtol=1e-6)
    v = rng.standard_normal(x.shape).astype(np.float32)
    _, forward = jax.jvp(f, (jnp.asarray(x),), (jnp.asarray(v),))
    np.testing.assert_allclose(float(forward), float(np.sum(ref * v)), rtol=1e-5)


def test_the_median_gradient_computes_the_median_once(rng):
    # its program holds the forward program's comparisons, not one copy of the network for
    # each of the window's values (XLA fused the median into each saved comparison: a 5x5
    # gradient compiled in 7 s, a 7x7 one in 50)
    x = jnp.asarray(rng.random((10, 11, 3), dtype=np.float32))
    f = lambda v: jnp.sum(imgproc.median(v, size=5))  # noqa: E731
    minima = lambda g: jax.jit(g).lower(x).compile().as_text().count("minimum(")  # noqa: E731
    assert minima(jax.grad(f)) == minima(f) > 0


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "float16", "bfloat16", "float32"])
def test_a_median_found_one_bit_at_a_time_is_scipys_in_every_dtype(dtype, rng):
    # sizes above the networks' (9x9 here) order the values by their bits: floats with
    # their sign (negative values, -0.0 and 0.0, the largest a float image may hold),
    # unsigned integers as they are
    import ml_dtypes

    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    if dtype.startswith("uint"):
        x = rng.integers(0, np.iinfo(np_dtype).max, (13, 16, 2), endpoint=True).astype(np_dtype)
    else:
        x = (rng.standard_normal((13, 16, 2)) * 100).astype(np_dtype)
        top = min(float(ml_dtypes.finfo(np_dtype).max), 1e6)
        x[0, :4, 0] = np.array([-0.0, 0.0, top, -top]).astype(np_dtype)
    wide = x.astype(np.float64)  # scipy's median of the same values (bfloat16 it does not take)
    for mode in ("reflect", "constant", "wrap"):
        ref = np.stack([ndi.median_filter(wide[..., c], 9, mode=mode) for c in range(2)], -1)
        got = np.asarray(imgproc.median(x, size=9, mode=mode))
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got.astype(np.float64), ref, err_msg=mode)


def test_bilateral_matches_opencv_uint8(rng):
    x = (rng.random((20, 22, 3)) * 255).astype(np.uint8)
    for size, sc, ss in [(5, 30, 2), (None, 20, 2)]:
        got = np.asarray(imgproc.bilateral(x, sigma_color=sc, sigma_spatial=ss, size=size, mode="mirror"))
        ref = cv2.bilateralFilter(x, size or -1, sc, ss)
        assert np.abs(got.astype(int) - ref).max() <= 1
        got = np.asarray(imgproc.bilateral(x[..., 0], sigma_color=sc, sigma_spatial=ss, size=size, mode="mirror"))
        assert np.abs(got.astype(int) - cv2.bilateralFilter(x[..., 0], size or -1, sc, ss)).max() <= 1


def test_a_large_bilateral_window_sums_in_loops_as_in_one(rng, monkeypatch, backend):
    # 13x13: 56 offsets in the half window, more than BILATERAL_ONE_LOOP_MAX_OFFSETS: on CPU
    # loops of BILATERAL_LOOP_OFFSETS (conditionals), the same additions as one loop; OpenCV's
    # values to one level
    from imgproc.restoration import bilateral_filter as bf

    x = (rng.random((24, 26, 3)) * 255).astype(np.uint8)
    call = lambda v: R.bilateral(v, sigma_color=30, sigma_spatial=3, size=13, mode="mirror")  # noqa: E731
    loops = len(list(equations(jax.make_jaxpr(call)(x).jaxpr, "cond")))
    assert loops == (-(-56 // bf.BILATERAL_LOOP_OFFSETS) if backend == "cpu" else 0)
    got = np.asarray(call(x))
    assert np.abs(got.astype(int) - cv2.bilateralFilter(x, 13, 30, 3)).max() <= 1
    with monkeypatch.context() as m:
        m.setattr(bf, "BILATERAL_ONE_LOOP_MAX_OFFSETS", 56)
        one_loop = np.asarray(jax.jit(lambda v: bf._bilateral_nhwc(v, 30.0, 3.0, r=6, mode="mirror"))(x[None]))
    in_loops = np.asarray(jax.jit(lambda v: bf._bilateral_nhwc(v, 30.0, 3.0, r=6, mode="mirror"))(x[None]))
    np.testing.assert_array_equal(in_loops, one_loop)


@pytest.mark.parametrize("size", [5, 13])  # one loop; loops of offsets on CPU
def test_the_bilateral_derivative_is_jaxs_own_of_the_unrolled_offsets(size, rng, monkeypatch):
    # the derivative is a fori_loop over the offsets (_sums_in_a_loop); JAX's own
    # derivative of the offsets unrolled in one sum is the reference, in reverse and
    # forward mode, in the image and both sigmas
    from imgproc.restoration import bilateral_filter as bf

    f = rng.random((1, 24, 26, 3), dtype=np.float32)
    w = rng.random(f.shape, dtype=np.float32)
    v = rng.standard_normal(f.shape).astype(np.float32)

    def derivatives():  # new functions each time: jax.jit would reuse their traces
        fn = lambda a, sc, ss: jnp.sum(w * bf._bilateral_nhwc(a, sc, ss, r=size // 2, mode="mirror"))  # noqa: E731
        return (*jax.jit(jax.grad(fn, (0, 1, 2)))(f, 0.12, 3.0),
                jax.jit(lambda a, sc, ss: jax.jvp(fn, (a, sc, ss), (v, 0.5, -0.3))[1])(f, 0.12, 3.0))

    got = derivatives()
    monkeypatch.setattr(bf, "_weighted_sums", lambda offsets, sums, p, cc, sc: bf._add_offsets(sums, offsets, (p, cc, sc)))
    for g, want in zip(got, derivatives()):
        np.testing.assert_allclose(np.asarray(g), np.asarray(want), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["bilateral", "nl_means"])
def test_planes_are_padded_along_outer_axes_only(op):
    # joining the (N, C, H, W) planes along W, their innermost axis, is a concatenate
    # XLA:CPU does not fuse: it took half the time of a 1024x1024x3 bilateral
    x = np.zeros((1, 12, 14, 3), np.uint8)
    call = {"bilateral": lambda x: R.bilateral(x, sigma_color=30, sigma_spatial=2, size=5, mode="mirror"),
            "nl_means": lambda x: R.nl_means(x, sigma=10.0, h=6.0, mode="mirror")}[op]
    joins = list(equations(jax.make_jaxpr(call)(x).jaxpr, "concatenate"))
    assert joins and all(e.params["dimension"] < e.outvars[0].aval.ndim - 1 for e in joins)


@pytest.mark.parametrize("size", [3, 5])
def test_median_runs_over_rows_in_a_loop_of_its_own(size, rng, backend):
    # on CPU the comparisons run over rows of W*C values inside a conditional (a result of
    # its own), reshaped to (N, H, W, C) after it; reshaped inside, XLA:CPU ran the 5x5
    # network in loops over an innermost axis of C and took 8x longer. Other backends have
    # no such conditional (on a GPU it would wait for its predicate on the host). The
    # values are scipy's everywhere.
    x = rng.integers(0, 256, (2, 9, 11, 3), dtype=np.uint8)
    jaxpr = jax.make_jaxpr(lambda x: R.median(x, size=size, mode="nearest"))(x).jaxpr
    if backend == "cpu":
        (cond,) = equations(jaxpr, "cond")
        assert cond.outvars[0].aval.shape == (2, 9, 11 * 3)
    else:
        assert equations(jaxpr, "cond") == []
    for first in (0, 7):  # the conditional's predicate reads the first value: both branches
        x[0, 0, 0, 0] = first
        ref = np.stack([ndi.median_filter(x[..., c], (1, size, size), mode="nearest") for c in range(3)], -1)
        np.testing.assert_array_equal(np.asarray(R.median(x, size=size, mode="nearest")), ref)


def test_median_has_no_loop_of_its_own_off_cpu(other_backend):
    x = np.zeros((2, 9, 11, 3), np.uint8)
    assert equations(jax.make_jaxpr(lambda x: R.median(x, size=5, mode="nearest"))(x).jaxpr, "cond") == []


@pytest.mark.parametrize("size", [3, 5, 7])
def test_median_interior_from_the_flat_image_and_border_bands_match_scipy(size, rng):
    # rows the window keeps inside the image come from slices of the flat image, the top and
    # bottom rows and the first and last columns from small bands of the extension: the
    # smallest images with such an interior, those just without one, and narrow ones
    r = size // 2
    for h, w in [(2 * r + 3, 2 * r + 1), (2 * r + 2, 9), (9, 2 * r), (1, 7), (2 * r + 4, 2 * r + 2)]:
        x = rng.random((h, w, 2)).astype(np.float32)
        for mode in imgproc.MODES:
            ref = np.stack([ndi.median_filter(x[..., c], size, mode=mode) for c in range(2)], -1)
            got = np.asarray(imgproc.median(x, size=size, mode=mode))
            np.testing.assert_array_equal(got, ref, err_msg=f"{h}x{w} {mode}")


@pytest.mark.parametrize("grid, plain", list(GRID_MODES.items()))
def test_every_restoration_op_takes_scipys_grid_modes(grid, plain, rng):
    # the aliases are the same extension (scipy's premise, checked in tests/core/test_conventions.py);
    # the borders compared the mode's name with "constant" before canonicalising it, so
    # "grid-constant" extended by the edge pixel: wrong pixels for median and bilateral
    x = (rng.random((12, 13, 3)) * 200 + 30).astype(np.uint8)
    calls = [lambda m: imgproc.median(x, mode=m), lambda m: imgproc.median(x, size=5, mode=m),
             lambda m: imgproc.bilateral(x, sigma_color=30, sigma_spatial=2, size=5, mode=m),
             lambda m: imgproc.nl_means(x, sigma=10.0, h=8.0, mode=m),
             lambda m: imgproc.Pipeline([{"op": "median", "mode": m}])(x)]
    for call in calls:
        np.testing.assert_array_equal(np.asarray(call(grid)), np.asarray(call(plain)))
    ref = np.stack([ndi.median_filter(x[..., c], 3, mode=grid) for c in range(3)], -1)
    np.testing.assert_array_equal(np.asarray(imgproc.median(x, mode=grid)), ref)


def test_median_pads_no_copy_of_the_whole_image():
    # the border bands take only what their windows read (a band of all the rows gathered
    # before its columns were picked was a gather of the whole image, 0.3 ms of 0.9); a band
    # is slices joined (imgproc.core.boundary.extended_band), and the one join of the
    # image's size is the result's rows assembled
    x = np.zeros((1, 40, 50, 3), np.uint8)
    for mode in imgproc.MODES:
        jaxpr = jax.make_jaxpr(lambda v: R.median(v, size=5, mode=mode))(x).jaxpr
        sizes = [e.outvars[0].aval.size for op in ("gather", "pad", "concatenate") for e in equations(jaxpr, op)]
        bands = [n for n in sizes if n != x.size]
        assert bands and max(bands) < x.size // 4, (mode, sizes)


def test_tv_chambolle_runs_a_while_loop_and_is_differentiated_as_the_scan_of_the_same_values(rng):
    """The call runs the while_loop form (no scan in its program), the gradient goes
    through the scan form (a custom JVP), both forms give the same bits, and a gradient
    through a flat region is finite (sqrt's derivative at 0 made it NaN)."""
    x = rng.random((20, 24, 3)).astype(np.float32)
    x[:8, :10] = 0.5  # a flat patch
    planes = jnp.moveaxis(jnp.asarray(x), 2, 0)
    w, eps = jnp.float32(0.1), jnp.float32(2e-4)
    forms = {loop: jax.jit(lambda p, loop=loop: total_variation._iterate(p, w, eps, 50, loop=loop))(planes)
             for loop in ("while", "scan")}
    np.testing.assert_array_equal(forms["while"], forms["scan"])
    jaxpr = jax.make_jaxpr(lambda v: imgproc.tv_chambolle(v, weight=0.1, n_iter=50))(x).jaxpr
    assert equations(jaxpr, "while") and not equations(jaxpr, "scan")
    grads = jax.grad(lambda v, wt: (imgproc.tv_chambolle(v, weight=wt, n_iter=50) ** 2).sum(), argnums=(0, 1))(x, 0.1)
    assert all(np.isfinite(np.asarray(g)).all() for g in grads)
    # the scan form runs its steps in rounds, each round recomputed in the backward pass:
    # reverse mode keeps ~2 sqrt(n_iter) states, not n_iter (5.8 GB at 512x512x3); the
    # last round's extra steps hold the state, so any n_iter gives the while_loop's bits
    for n_iter, lengths in ((200, [14, 15]), (50, [7, 8]), (7, [3, 3]), (1, [1, 1])):  # rounds, steps a round
        scan = jax.make_jaxpr(lambda p: total_variation._iterate(p, w, 0.0, n_iter, loop="scan"))(planes).jaxpr
        assert [e.params["length"] for e in equations(scan, "scan")] == lengths
        assert equations(scan, "remat2") or equations(scan, "checkpoint")  # jax.checkpoint, by either name
        # a round after every plane stopped is skipped whole (a conditional around its steps)
        assert any(equations(branch.jaxpr, "scan") for c in equations(scan, "cond") for branch in c.params["branches"])
        np.testing.assert_array_equal(
            jax.jit(lambda p: total_variation._iterate(p, w, 0.0, n_iter, loop="scan"))(planes),
            jax.jit(lambda p: total_variation._iterate(p, w, 0.0, n_iter, loop="while"))(planes))


def test_tv_chambolle_uint8_matches_skimage(rng):
    x = (rng.random((16, 17, 3)) * 255).astype(np.uint8)
    ref = np.round(skr.denoise_tv_chambolle(x, weight=0.1, channel_axis=-1) * 255)
    assert np.abs(np.asarray(imgproc.tv_chambolle(x, weight=0.1)).astype(int) - ref).max() <= 1


def test_nl_means_matches_skimage_fast_mode(rng):
    """With skimage's (s-1)x(s-1) distance window (see imgproc.restoration.non_local_means) and its border, the
    result is skimage's up to its approximate exponential (Schraudolph's fast_exp)."""
    x = rng.random((18, 19, 3))
    for ps, pd in [(3, 1), (5, 3), (7, 4)]:
        ref = skr.denoise_nl_means(x, patch_size=ps, patch_distance=pd, h=0.3, sigma=0.1, fast_mode=True, channel_axis=-1)
        got = nl_means_nhwc(jnp.asarray(x[None], jnp.float32), jnp.array([0.1]), jnp.array([0.3]), r=ps // 2, d=pd,
                            mode="mirror", skimage_window=True)
        assert np.abs(np.asarray(got)[0] - ref).max() < 1e-2
        assert np.abs(np.asarray(got)[0] - ref).mean() < 2e-3


_NUMPY_PAD = {"reflect": "symmetric", "mirror": "reflect", "nearest": "edge", "wrap": "wrap", "constant": "constant"}


def _nl_means_every_offset(x, sigma, h, r, d, mode):
    """The definition, in NumPy: every offset of the full window, each pixel's own
    distance (no symmetry), float64."""
    hh, ww, c = x.shape
    p = np.pad(x.astype(np.float64), ((r + d, r + d), (r + d, r + d), (0, 0)), mode=_NUMPY_PAD[mode])
    centre = p[d:d + hh + 2 * r, d:d + ww + 2 * r]
    num, den = np.zeros((hh, ww, c)), np.zeros((hh, ww))
    for dy in range(2 * d + 1):
        for dx in range(2 * d + 1):
            shifted = p[dy:dy + hh + 2 * r, dx:dx + ww + 2 * r]
            sq = ((centre - shifted) ** 2).sum(-1)
            box = sum(sq[i:i + hh, j:j + ww] for i in range(2 * r + 1) for j in range(2 * r + 1))
            e = np.maximum(box / (c * (2 * r + 1) ** 2) - 2 * sigma ** 2, 0) / h ** 2
            wgt = _tapered_weight(e)
            num += wgt[..., None] * shifted[r:r + hh, r:r + ww]
            den += wgt
    return num / den[..., None]


@pytest.mark.parametrize("mode", ["reflect", "mirror", "nearest", "wrap", "constant"])
@pytest.mark.parametrize("shape, r, d", [((13, 17, 3), 1, 3), ((9, 8, 1), 2, 4), ((3, 2, 2), 1, 5), ((1, 1, 3), 3, 2)])
def test_nl_means_half_window_equals_every_offset(rng, mode, shape, r, d):
    """The kernel computes one half of the offsets and uses each distance map twice; the
    result is the definition's sum over every offset (images smaller than the windows
    too)."""
    x = rng.random(shape)
    ref = _nl_means_every_offset(x, 0.05, 0.2, r, d, mode)
    got = nl_means_nhwc(jnp.asarray(x[None], jnp.float32), jnp.array([0.05]), jnp.array([0.2]), r=r, d=d, mode=mode)
    np.testing.assert_allclose(np.asarray(got)[0], ref, atol=2e-6)


def test_nl_means_in_strips_equals_one_block(rng, monkeypatch):
    """Large images run in strips of rows (imgproc.restoration.non_local_means.strip_rows); the values are
    those of the whole image in one block, a strip boundary included, and a last strip
    that runs past the image (up to float32 rounding: XLA's loops differ with the shape)."""
    import imgproc.restoration.non_local_means as M

    x = jnp.asarray(rng.random((2, 37, 23, 3)), jnp.float32)
    s, h = jnp.array([0.05, 0.1]), jnp.array([0.2, 0.3])
    whole = M.nl_means_nhwc(x, s, h, r=1, d=2, mode="reflect")
    monkeypatch.setattr(M, "strip_rows", lambda n, hh, ww, d: 8)  # 5 strips, the last one 3 rows past the image
    strips = M.nl_means_nhwc(x, s, h, r=1, d=2, mode="reflect")
    np.testing.assert_allclose(np.asarray(strips), np.asarray(whole), rtol=0, atol=1e-6)


def test_nl_means_reduces_noise_and_estimates(rng):
    clean = np.tile(np.linspace(0, 200, 24, dtype=np.float32), (24, 1))[..., None].repeat(3, -1)
    noisy = np.clip(clean + 20 * rng.standard_normal(clean.shape), 0, 255).astype(np.uint8)
    out = np.asarray(imgproc.nl_means(noisy, patch_size=5, search_size=11))
    assert imgproc.psnr(clean.astype(np.uint8), out) > imgproc.psnr(clean.astype(np.uint8), noisy) + 3


def test_estimate_sigma_matches_skimage(rng):
    pytest.importorskip("pywt", reason=NO_PYWAVELETS)
    x = np.clip(0.5 + 0.1 * rng.standard_normal((31, 26, 3)), 0, 1).astype(np.float32)
    ref = np.mean(skr.estimate_sigma(x.astype(np.float64), channel_axis=-1))
    assert abs(float(imgproc.estimate_sigma(x)) - ref) < 1e-5
    assert abs(float(imgproc.estimate_sigma(x[..., 1])) - skr.estimate_sigma(x[..., 1].astype(np.float64))) < 1e-5
    u8 = (x * 255).astype(np.uint8)
    ref = np.mean(skr.estimate_sigma(u8, channel_axis=-1))
    assert abs(float(imgproc.estimate_sigma(u8)) - ref) < 1e-3
    batch = np.asarray(imgproc.estimate_sigma(np.stack([x, x * 0.5])))
    np.testing.assert_allclose(batch, [float(imgproc.estimate_sigma(x)), float(imgproc.estimate_sigma(x * 0.5))], rtol=1e-5)
    assert abs(float(imgproc.estimate_sigma(np.full((8, 8), 3, np.uint8)))) < 1e-6


def test_estimate_sigma_and_auto_need_no_pywavelets(monkeypatch, rng):
    """The noise estimate (and denoise's auto, built on it) is imgproc's own: it runs with
    PyWavelets absent (an import of it fails here)."""
    import sys

    monkeypatch.setitem(sys.modules, "pywt", None)
    with pytest.raises(ImportError):
        import pywt  # noqa: F401
    x = np.clip(0.5 + 0.1 * rng.standard_normal((29, 23, 3)), 0, 1).astype(np.float32)  # a shape of its own: traced here
    assert 0.05 < float(imgproc.estimate_sigma(x)) < 0.15
    assert imgproc.denoise(x).shape == x.shape


@pytest.mark.parametrize("case", ["gray", "masked", "colour"])
def test_estimate_sigma_cases_of_scikit_image(case):
    # scikit-image's test_estimate_sigma_{gray,masked_image,color} (restoration/tests/
    # test_denoise.py): noise sigma 0.1 added to the astronaut, or to the centre of a zero
    # image (the zero coefficients of the clean border are left out of the median)
    pytest.importorskip("pywt", reason=NO_PYWAVELETS)
    from skimage import color, data

    rstate = np.random.default_rng(1234)
    if case == "masked":
        img = np.zeros((128, 128))
        img[32:96, 32:96] = 0.1 * rstate.standard_normal((64, 64))
    else:
        img = data.astronaut()[:256, :256] / 255.0
        img = color.rgb2gray(img) if case == "gray" else img
        img = img + 0.1 * rstate.standard_normal(img.shape)
    img = img.astype(np.float32)
    channel_axis = -1 if case == "colour" else None
    ref = np.mean(skr.estimate_sigma(img.astype(np.float64), channel_axis=channel_axis))
    got = float(imgproc.estimate_sigma(img))
    assert abs(got - 0.1) < (0.15 if case == "masked" else 0.015)  # its decimal=1 and decimal=2
    assert abs(got - ref) < 1e-6


@pytest.mark.parametrize("values", ["normal", "repeated", "zeros", "extremes", "one"])
def test_order_statistics_equal_a_sort(rng, values):
    # the noise estimate's median is a radix selection over the values' bits
    from imgproc.restoration.noise_level import order_statistics

    a = np.abs(rng.standard_normal((3, 1001))).astype(np.float32)
    if values == "repeated":
        a = np.round(a * 4) / 4  # few distinct values, many ties
    elif values == "zeros":
        a[:, ::2] = 0
        a[1] = 0
    elif values == "extremes":  # subnormals, the largest finite float, values differing in the last bit
        a[:, :5] = [1e-45, 3e-39, np.finfo(np.float32).max, 1.0, np.nextafter(np.float32(1), np.float32(2))]
    elif values == "one":
        a = a[:, :1]
    n = a.shape[1]
    ranks = np.stack([np.arange(3) * 7 % n, np.full(3, n - 1), np.full(3, n // 2), np.zeros(3, int)], 1)
    got = np.asarray(jax.jit(order_statistics)(a, ranks))
    np.testing.assert_array_equal(got, np.take_along_axis(np.sort(a, axis=1), ranks, axis=1))


def test_noise_estimate_sorts_off_cpu_with_the_same_result(rng, monkeypatch):
    # other backends keep the sort (their scatter-adds are not measured); both are exact
    from imgproc.restoration.noise_level import sigma_planes

    planes = np.round(rng.normal(0, 9, (3, 40, 37))).astype(np.float32)
    planes[1, :, :20] = 0
    on_cpu = np.asarray(jax.jit(sigma_planes)(planes))
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda p: sigma_planes(p))(planes)), on_cpu)  # traced anew


@pytest.mark.parametrize("hw", [(37, 41), (1, 5), (7, 2), (64, 33)])
def test_the_noise_estimate_on_a_canvas_is_the_images(hw, rng):
    """``sigma_nhwc(canvas, (sizes, offset))``: an image in a larger zero canvas with its
    reflected border written around it gives the image's own estimate, bit for bit (zeros
    of its own included, which the median leaves out as it does the canvas's)."""
    from imgproc.pipeline.execution import extend_from

    h, w = hw
    x = np.round(rng.random((2, h, w, 3)) * 255).astype(np.float32)
    x[0, :3, :4] = 0
    want = np.asarray(jax.jit(sigma_nhwc)(x))
    offset = 5
    canvas = np.zeros((2, h + 2 * offset + 7, w + 2 * offset + 4, 3), np.float32)
    canvas[:, offset:offset + h, offset:offset + w] = x

    @jax.jit
    def on_canvas(c, sizes):
        return sigma_nhwc(extend_from(c, (sizes, offset), (1, 2), {"mode": "reflect"}, offset), (sizes, offset))

    np.testing.assert_array_equal(np.asarray(on_canvas(canvas, jnp.array(hw, jnp.int32))), want)


def _noisy_set(rng, h, w):
    """A smooth image with Gaussian noise, with 3 % and with 30 % salt and pepper: what
    ``auto`` sends to NL-means, the 3x3 and the 5x5 switching median."""
    clean = (ndi.gaussian_filter(rng.random((h, w, 3)), (2, 2, 0)) * 255).astype(np.uint8)
    gauss = np.clip(clean + 20 * rng.standard_normal(clean.shape), 0, 255).astype(np.uint8)
    m = rng.random(clean.shape)
    sp, sp5 = clean.copy(), clean.copy()
    sp[m < 0.015], sp[m > 0.985] = 0, 255
    sp5[m < 0.15], sp5[m > 0.85] = 0, 255
    return gauss, sp, sp5


@pytest.mark.parametrize("layout", ["HWC", "NCHW"])
def test_denoise_auto_runs_in_size_buckets_with_the_exact_pixels(layout, rng):
    """``denoise`` (method auto) estimates the noise from the whole image, and ran at each
    image's exact size: a folder of photos of many sizes compiled a program a size (4-6 s
    each here). In a size bucket's canvas it estimates from the image's own samples: the
    same decision and the same uint8 pixels, for every branch and layout; float32 within a
    relative 3e-7 (NL-means' multiply-adds contract differently with the row length: up to
    4 units in the last place here); sizes that fit a canvas met before share its
    program."""
    def images(h, w):
        images = _noisy_set(rng, h, w)
        assert [c[0] for c in R.auto_choice(np.stack(images))] == ["nl_means", "median3", "median5"]
        return (*images, images[0].astype(np.float32) / 255)

    _bucketed_equals_exact([{"op": "denoise", "patch_size": 3, "search_size": 5}], 5, layout, images)


BUCKET_SIZES = [(37, 41), (40, 33), (9, 12), (39, 40)]


def _bucketed_equals_exact(spec, reach, layout, images):
    """``spec`` with ``bucket=True`` against its exact-size pipeline on ``images(h, w)`` at
    each of :data:`BUCKET_SIZES` (in ``layout``: NCHW a batch of two): uint8 bit for bit,
    float32 within a relative 3e-7; fewer programs than sizes and dtypes ((37, 41) and
    (39, 40) share a canvas)."""
    exact = imgproc.Pipeline(spec, layout=layout)
    bucketed = imgproc.Pipeline(spec, layout=layout, bucket=True)
    assert bucketed.bucket is True and bucketed.radii == (reach,)
    for h, w in BUCKET_SIZES:
        for x in images(h, w):
            if layout == "NCHW":
                x = np.moveaxis(np.stack([x, x[::-1]]), -1, 1)
            got, want = bucketed(x), np.asarray(exact(x))
            if x.dtype == np.uint8:
                np.testing.assert_array_equal(got, want)
            else:
                np.testing.assert_allclose(got, want, rtol=3e-7, atol=0)
    assert bucketed.trace_count < 2 * len(BUCKET_SIZES)


BUCKETED_DENOISERS = [
    pytest.param([{"op": "nl_means", "patch_size": 3, "search_size": 5}], 5, id="nl_means-estimated"),
    pytest.param([{"op": "nl_means", "sigma": 12.0, "patch_size": 3, "search_size": 5, "mode": "nearest"}], 5,
                 id="nl_means-sigma-nearest"),
    pytest.param([{"op": "denoise", "method": "nl_means", "patch_size": 3, "search_size": 5}], 5,
                 id="denoise-nl_means"),
    pytest.param([{"op": "denoise", "method": "bilateral"}], 3, id="denoise-bilateral-estimated"),
    pytest.param([{"op": "denoise", "method": "bilateral", "sigma": 9.0, "mode": "wrap", "size": 3}], 1,
                 id="denoise-bilateral-wrap"),
    pytest.param([{"op": "denoise", "method": "median", "size": 5, "mode": "constant"}], 2,
                 id="denoise-median-constant"),
]


@pytest.mark.parametrize("layout", ["HWC", "NCHW"])
@pytest.mark.parametrize("spec, reach", BUCKETED_DENOISERS)
def test_the_other_denoisers_run_in_size_buckets_with_the_exact_pixels(spec, reach, layout, rng):
    """``imgproc denoise --method nl-means`` (or bilateral) on a folder of photos of 20
    sizes compiled 20 programs: NL-means and the bilateral filter estimate the noise from
    the whole image, and ran at each exact size. In a canvas they estimate from the image's
    own samples (as ``auto`` does): uint8 bit for bit, float32 within a relative 3e-7 (XLA
    orders NL-means' sums by the row length: up to 3 units in the last place here), in
    the reflect, nearest, wrap and constant modes; a few programs for many sizes."""
    def images(h, w):
        gauss, sp, _ = _noisy_set(rng, h, w)
        return gauss, sp, gauss.astype(np.float32) / 255

    _bucketed_equals_exact(spec, reach, layout, images)


def test_denoisers_that_see_the_whole_image_run_at_the_exact_size():
    """BM3D's block grid and TV's iterations depend on the whole image, and ``chapter`` is
    two filters in one stage (its two-stage pipeline, ``presets.denoise``, buckets): these
    run at the exact size even with ``bucket=True``."""
    for method in ("bm3d", "tv", "chapter"):
        assert imgproc.Pipeline([{"op": "denoise", "method": method}], bucket=True).bucket is False
    for op in ("bm3d", "tv_chambolle"):
        assert imgproc.Pipeline([{"op": op}], bucket=True).bucket is False
    assert presets.denoise(bucket=True).bucket is True


def test_eager_denoise_estimates_each_image_of_a_batch_alone(rng):
    """``denoise(batch, method="bilateral")`` without ``sigma`` gave every image of an eager
    batch the batch's mean noise estimate (a pipeline gave each its own): a quiet image
    beside a noisy one was smoothed as if noisy."""
    quiet, noisy = (np.clip(128 + s * rng.standard_normal((24, 30, 3)), 0, 255).astype(np.uint8) for s in (4, 40))
    batch = np.asarray(imgproc.denoise(np.stack([quiet, noisy]), method="bilateral"))
    for got, x in zip(batch, (quiet, noisy)):
        np.testing.assert_array_equal(got, np.asarray(imgproc.denoise(x, method="bilateral")))


def test_auto_choice_runs_on_canvases_with_the_exact_numbers(rng, compilations):
    """``auto_choice`` (``imgproc denoise --verbose``) compiled its program at each image
    size; it now runs on square canvases of a few sides, with the image's own numbers."""
    from imgproc.restoration.auto import _decide

    exact = jax.jit(lambda x, mv: jax.lax.map(lambda im: _decide(im[None], mv)[:3], x))
    sizes = [(37, 41), (40, 33), (1, 5), (7, 2), (33, 38), (39, 36)]
    images = [x for h, w in sizes
              for x in (_noisy_set(rng, h, w) if min(h, w) > 4 else [rng.integers(0, 256, (h, w, 3), dtype=np.uint8)])]
    with compilations() as compiled:
        choices = [R.auto_choice(x) for x in images]
    sides = {imgproc.core.arrays.canvas_side(max(h, w) + 2 * R.auto.DECIDE_BORDER) for h, w in sizes}
    assert len(compiled) == len(sides) == 3  # sides of 16, 48 and 56 pixels: one program each
    for x, got in zip(images, choices):
        branch, sigma, frac = exact(x[None].astype(np.float32), jnp.float32(255))
        assert got == [(R.auto.AUTO_BRANCHES[int(branch[0])], float(sigma[0]), float(frac[0]))]
    assert {c[0][0] for c in choices} == {"nl_means", "median3", "median5"}


def test_impulse_fraction_and_auto_choice(rng):
    clean = (ndi.gaussian_filter(rng.random((40, 40, 3)), 3) * 255).astype(np.uint8)
    assert float(imgproc.impulse_fraction(clean)) == 0.0
    sp = clean.copy()
    m = rng.random(sp.shape)
    sp[m < 0.025] = 0
    sp[m > 0.975] = 255
    assert 0.03 < float(imgproc.impulse_fraction(sp)) < 0.06
    assert R.auto_choice(sp)[0][0] == "median3"
    assert R.auto_choice(clean)[0][0] == "nl_means"
    out = np.asarray(imgproc.denoise(sp))
    assert imgproc.psnr(clean, out) > imgproc.psnr(clean, np.asarray(imgproc.median(sp))) - 0.1
    assert imgproc.psnr(clean, out) > imgproc.psnr(clean, sp) + 8
    # strongly clipped Gaussian noise has extreme samples too, but a high residual noise:
    # auto runs NL-means, and auto_choice (what --verbose prints) said median3 by a rule of
    # its own (the impulse fraction alone)
    for noise in (60, 90):
        g = np.clip(clean + noise * rng.standard_normal(clean.shape), 0, 255).astype(np.uint8)
        assert float(imgproc.impulse_fraction(g)) > IMPULSE_MIN_FRACTION
        (method, sigma, frac), = R.auto_choice(g)
        assert method == "nl_means" and sigma == float(imgproc.estimate_sigma(g))
        assert frac == float(imgproc.impulse_fraction(g))
        kept = (g > 0.02 * 255) & (g < 0.98 * 255)  # a switching median changes none of these
        assert np.mean(np.asarray(imgproc.denoise(g, patch_size=3, search_size=5))[kept] != g[kept]) > 0.5


def test_denoise_methods_and_pipeline_stages(rng):
    x = (rng.random((12, 14, 3)) * 255).astype(np.uint8)
    for method in ("nl_means", "tv", "bilateral", "median", "chapter", "auto"):
        out = np.asarray(imgproc.denoise(x, method=method, sigma=20.0) if method != "chapter" else imgproc.denoise(x, method=method))
        assert out.shape == x.shape and out.dtype == np.uint8
    np.testing.assert_array_equal(np.asarray(imgproc.denoise(x, method="chapter")), np.asarray(imgproc.presets.denoise()(x)))
    for stage, direct in [({"op": "median", "size": 5}, imgproc.median(x, size=5)),
                          ({"op": "nl_means", "h": 10.0, "patch_size": 3, "search_size": 5},
                           imgproc.nl_means(x, h=10.0, patch_size=3, search_size=5)),
                          ({"op": "denoise", "patch_size": 3, "search_size": 5},
                           imgproc.denoise(x, patch_size=3, search_size=5)),
                          ({"op": "tv_chambolle", "weight": 0.2}, imgproc.tv_chambolle(x, weight=0.2)),
                          ({"op": "bilateral", "sigma_color": 30.0, "sigma_spatial": 2.0},
                           imgproc.bilateral(x, sigma_color=30.0, sigma_spatial=2.0))]:
        got = np.asarray(imgproc.Pipeline([stage])(x))
        assert np.abs(got.astype(int) - np.asarray(direct)).max() <= 1, stage
    bucketed = imgproc.Pipeline([{"op": "median", "size": 3}], bucket=True)
    np.testing.assert_array_equal(bucketed(x), np.asarray(imgproc.median(x)))


def test_bm3d_method_and_stage_are_bm3d():
    x = (np.random.default_rng(8).random((20, 22)) * 255).astype(np.uint8)
    want = np.asarray(imgproc.bm3d(x, sigma=20.0))
    np.testing.assert_array_equal(np.asarray(imgproc.denoise(x, method="bm3d", sigma=20.0)), want)
    np.testing.assert_array_equal(np.asarray(imgproc.Pipeline([{"op": "bm3d", "sigma": 20.0}])(x)), want)


BAD = [
    (lambda x: imgproc.nl_means(x, sigma=-1.0), "sigma"),
    (lambda x: imgproc.nl_means(x, sigma=float("nan")), "sigma"),
    (lambda x: imgproc.nl_means(x, h=-0.1), "h"),
    (lambda x: imgproc.nl_means(x, patch_size=4), "patch_size"),
    (lambda x: imgproc.nl_means(x, search_size=53), "search_size"),
    (lambda x: imgproc.nl_means(x, mode="edge"), "mode"),
    (lambda x: imgproc.tv_chambolle(x, n_iter=0), "n_iter"),
    (lambda x: imgproc.tv_chambolle(x, weight=0.0), "weight"),
    (lambda x: imgproc.tv_chambolle(x, eps=-1.0), "eps"),
    (lambda x: imgproc.bilateral(x, sigma_color=-1.0, sigma_spatial=1.0), "sigma_color"),
    (lambda x: imgproc.bilateral(x, sigma_color=1.0, sigma_spatial=float("nan")), "sigma_spatial"),
    (lambda x: imgproc.bilateral(x, sigma_color=1.0, sigma_spatial=1.0, size=4), "size"),
    (lambda x: imgproc.median(x, size=2), "size"),
    (lambda x: imgproc.median(x, size=3.0), "size"),
    (lambda x: imgproc.denoise(x, method="wavelet"), "method"),
    (lambda x: imgproc.denoise(x, sigma=-2.0), "sigma"),
    (lambda x: imgproc.impulse_fraction(x, max_value=0.0), "max_value"),
    (lambda x: imgproc.estimate_sigma(x, layout="XY"), "layout"),
]


@pytest.mark.parametrize("call,word", BAD, ids=[w + str(i) for i, (_, w) in enumerate(BAD)])
def test_bad_arguments_raise_naming_the_option(call, word):
    with pytest.raises(ValueError, match=word):
        call(np.zeros((8, 8, 3), np.float32))


def test_new_numeric_option_does_not_recompile(rng):
    x = _img(rng)
    imgproc.nl_means(x, sigma=0.1, h=0.05, patch_size=3, search_size=5)
    imgproc.tv_chambolle(x, weight=0.1, n_iter=5)
    imgproc.bilateral(x, sigma_color=0.1, sigma_spatial=1.0, size=3)
    sizes = [non_local_means._nl_means._cache_size(), total_variation._tv_chambolle._cache_size(),
             bilateral_filter._bilateral._cache_size()]
    imgproc.nl_means(x, sigma=0.2, h=0.07, patch_size=3, search_size=5)
    imgproc.tv_chambolle(x, weight=0.3, n_iter=5, eps=1e-3)  # n_iter is static: the scan's length
    imgproc.bilateral(x, sigma_color=0.3, sigma_spatial=2.0, size=3)
    assert [non_local_means._nl_means._cache_size(), total_variation._tv_chambolle._cache_size(),
            bilateral_filter._bilateral._cache_size()] == sizes


def test_median_network_selects_the_median():
    for n in (9, 25):
        net = median_network(n)
        for _ in range(20):
            v = list(np.random.default_rng(n + _).permutation(n))
            for i, j in net:
                v[i], v[j] = min(v[i], v[j]), max(v[i], v[j])
            assert v[n // 2] == n // 2
    assert math.isclose(len(median_network(9)), 24)


def _cli(*args):
    from click.testing import CliRunner

    from imgproc.cli import cli as main

    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.stderr


def test_cli_verbose_names_each_file_of_a_folder_run(tmp_path, rng):
    """--verbose in a folder run: one line per file, named by its path (not by its place in
    a batch), the impulse-noise file getting the median."""
    src = tmp_path / "in"
    src.mkdir()
    clean = (ndi.gaussian_filter(rng.random((24, 26, 3)), 2) * 255).astype(np.uint8)
    imgproc.save_image(src / "gauss.png", np.clip(clean + 15 * rng.standard_normal(clean.shape), 0, 255).astype(np.uint8))
    pepper = clean.copy()
    hit = rng.random(clean.shape[:2]) < 0.08
    pepper[hit] = np.where(rng.random(hit.sum()) < 0.5, 0, 255)[:, None]
    imgproc.save_image(src / "pepper.png", pepper)
    code, err = _cli("denoise", src, tmp_path / "out", "--verbose", "--quiet")
    lines = sorted(err.splitlines())
    assert code == 0 and len(lines) == 2, err
    assert lines[0].startswith(f"{src / 'gauss.png'}: ") and lines[0].endswith("method nl-means")
    assert lines[1].startswith(f"{src / 'pepper.png'}: ") and "method median" in lines[1]
    # with --log-format json every line on stderr is JSON, the estimates included
    code, err = _cli("denoise", src, tmp_path / "out_json", "--verbose", "--log-format", "json")
    events = [json.loads(line) for line in err.splitlines()]
    estimates = sorted((e for e in events if e["event"] == "estimate"), key=lambda e: e["path"])
    assert code == 0 and [e["path"] for e in estimates] == [str(src / "gauss.png"), str(src / "pepper.png")]
    assert [e["method"] for e in estimates] == ["nl-means", "median3"] and estimates[0]["noise_sigma"] > 5
    assert events[-1]["event"] == "summary"


def test_cli_denoise_methods(tmp_path, rng):
    clean = (ndi.gaussian_filter(rng.random((24, 26, 3)), 2) * 255).astype(np.uint8)
    noisy = np.clip(clean + 15 * rng.standard_normal(clean.shape), 0, 255).astype(np.uint8)
    src = tmp_path / "in.png"
    imgproc.save_image(src, noisy)
    code, err = _cli("denoise", src, tmp_path / "auto.png", "--verbose")
    assert code == 0 and err.count("\n") == 1 and "noise sigma" in err and "method nl-means" in err
    assert err.startswith(f"{src}: ")
    np.testing.assert_array_equal(imgproc.load_image(tmp_path / "auto.png"), np.asarray(imgproc.denoise(noisy)))
    code, _ = _cli("denoise", src, tmp_path / "med.png", "--method", "median", "--size", "5")
    assert code == 0
    np.testing.assert_array_equal(imgproc.load_image(tmp_path / "med.png"), np.asarray(imgproc.median(noisy, size=5)))
    code, _ = _cli("denoise", src, tmp_path / "ch.png", "--method", "chapter")
    np.testing.assert_array_equal(imgproc.load_image(tmp_path / "ch.png"), np.asarray(imgproc.presets.denoise()(noisy)))
    code, err = _cli("denoise", src, tmp_path / "nl.png", "--method", "nl-means", "--noise-sigma", "15", "--verbose")
    # the sigma used, and the estimate it replaced (it printed the estimate alone, as if used)
    estimate = float(imgproc.estimate_sigma(noisy))
    assert code == 0 and f"noise sigma 15.00 given (estimated {estimate:.2f})" in err and "method nl-means" in err
    np.testing.assert_array_equal(imgproc.load_image(tmp_path / "nl.png"),
                                  np.asarray(imgproc.nl_means(noisy, sigma=15.0)))
    code, err = _cli("denoise", src, tmp_path / "nl2.png", "--noise-sigma", "15", "--verbose", "--log-format", "json")
    assert code == 0 and json.loads(err.splitlines()[0])["given_sigma"] == 15.0
    assert _cli("denoise", src, tmp_path / "x.png", "--method", "wiener")[0] == 2
    assert _cli("denoise", src, tmp_path / "x.png", "--noise-sigma", "-1")[0] == 2
    assert _cli("denoise", src, tmp_path / "auto.png")[0] == 73  # exists without --overwrite
