"""Parity of the planar separable/direct correlation lowering with scipy.ndimage."""

import numpy as np
import pytest
import scipy.ndimage as ndi

import jax
import jax.numpy as jnp

import imgproc
from imgproc.core.boundary import MODES
from imgproc.filters.separable import correlate_direct, correlate_separable
from jaxprs import equations

CVAL = 0.25
TOL = 1e-5
# How the passes are laid out in XLA:CPU's loops (imgproc.cpu.fusion.in_own_loop's
# conditionals, border bands written in place, a restrided copy in a kept buffer): CPU only;
# test_other_backends_run_each_pass_as_xla_fuses_it checks the other backends' programs.
CPU_LOOPS = pytest.mark.cpu_only("the loops XLA:CPU runs a pass in (own-loop conditionals, bands written in place)")


def _ref_separable(x, kr, kc, mode):
    x = np.asarray(x, np.float64)
    y = ndi.correlate1d(x, np.asarray(kr, np.float64), axis=1, mode=mode, cval=CVAL)
    return ndi.correlate1d(y, np.asarray(kc, np.float64), axis=2, mode=mode, cval=CVAL)


def _ref_direct(x, k, mode):
    k = np.asarray(k, np.float64)
    if x.ndim == 4:  # (B, H, W, C): each channel of each image
        return np.moveaxis(np.stack([_ref_direct(x[..., c], k, mode) for c in range(x.shape[3])]), 0, -1)
    return np.stack([ndi.correlate(p.astype(np.float64), k, mode=mode, cval=CVAL) for p in x])


def _planes(rng, shape):
    return rng.random(shape, dtype=np.float32)


def _check(out, ref):
    out = np.asarray(out)
    assert out.dtype == np.float32
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=0, atol=TOL)


# (P, H, W), rows-kernel length, cols-kernel length
SEP_CASES = [
    ((2, 9, 13), 5, 5),  # odd, interior + borders
    ((2, 9, 13), 4, 6),  # even lengths (scipy's origin rule)
    ((1, 1, 1), 13, 13),  # radius-6 kernel on tiny images: repeated reflection
    ((1, 1, 7), 13, 4),
    ((1, 3, 2), 13, 13),
    ((2, 6, 5), 6, 7),  # L == n - 1 and L < n - 1
    ((1, 5, 9), 1, 2),
    ((2, 30, 33), 17, 5),  # traced first kernel above EXTEND_MAX_TAPS: the second pass patches its borders
    ((1, 20, 12), 25, 13),
    ((1, 3, 2), 17, 17),
    ((2, 41, 37), 25, 9),  # rows pass above ROWS_LOOP_MAX_TERMS with an interior: two loops
    ((1, 27, 30), 10, 25),  # 10 terms: the smallest pass split in two
    ((2, 11, 14, 3), 5, 11),  # (B, H, W, C): the second pass above COLS_FUSED_MAX_TAPS
    ((1, 20, 12, 3), 25, 25),
    ((1, 7, 5, 2), 9, 9),
]


# the last pass writes its border bands with a select (the program's output) or in place
# (feeding another stage), and runs as a loop of its own, the program's last conversion
# in it, where nothing else reads the result; a long rows pass over float32 rows sums in
# one loop (float_rows): all must give the reference
BAND_WRITES = {"select": {}, "in place": {"in_place": True}, "finished": {"finish": lambda y: y},
               "float rows": {"finish": lambda y: y, "float_rows": True}}


# the shapes each other band write is checked on (the select's: all of SEP_CASES): a
# reflection repeated past a tiny image, even lengths, the patching second pass, the rows
# pass in two loops, a (B, H, W, C) block with a long second pass
BAND_CASES = [SEP_CASES[i] for i in (1, 2, 7, 10, 12)]


@pytest.mark.parametrize("weights", ["constant", "traced"])
@pytest.mark.parametrize("bands", BAND_WRITES)
@pytest.mark.parametrize("mode", MODES)
def test_separable_matches_scipy(mode, bands, weights, rng):
    # constant weights always take the column-extended buffer; traced ones above
    # EXTEND_MAX_TAPS the second pass that patches its own borders
    for shape, nr, nc in SEP_CASES if bands == "select" else BAND_CASES:
        x = _planes(rng, shape)
        kr = rng.standard_normal(nr).astype(np.float32)
        kc = rng.standard_normal(nc).astype(np.float32)
        how = BAND_WRITES[bands]
        if weights == "constant":
            out = jax.jit(lambda a: correlate_separable(a, kr, kc, mode=mode, cval=CVAL, **how))(x)
        else:
            out = jax.jit(lambda a, b, c: correlate_separable(a, b, c, mode=mode, cval=CVAL, **how))(x, kr, kc)
        _check(out, _ref_separable(x, kr, kc, mode))


@pytest.mark.parametrize("mode", MODES)
def test_separable_second_pass_cval(mode, rng):
    # the engine's 2-D correlation fills the second pass with cval * sum(k_rows)
    x = _planes(rng, (2, 12, 15))
    kr, kc = rng.standard_normal(5), rng.standard_normal(7)
    f = jax.jit(lambda a: correlate_separable(a, kr, kc, mode=mode, cval=CVAL, cval_after=-0.5))
    y = ndi.correlate1d(x.astype(np.float64), kr, axis=1, mode=mode, cval=CVAL)
    _check(f(x), ndi.correlate1d(y, kc, axis=2, mode=mode, cval=-0.5))


@pytest.mark.parametrize("mode", MODES)
def test_separable_symmetric_kernel(mode, rng):
    # concrete symmetric weights take the paired w_k * (x[i-k] + x[i+k]) path
    r = np.arange(-6, 7)
    g = np.exp(-0.5 * (r / 2.0) ** 2)
    g /= g.sum()
    box = np.ones(4) / 4
    for shape in [(3, 20, 17), (1, 3, 2)]:
        x = _planes(rng, shape)
        f = jax.jit(lambda a: correlate_separable(a, g, box, mode=mode, cval=CVAL))
        _check(f(x), _ref_separable(x, g, box, mode))
    r = np.arange(-12, 13)  # sigma = 3's 25 taps: 13 terms, summed in two loops along the rows
    g25 = np.exp(-0.5 * (r / 3.0) ** 2)
    g25 /= g25.sum()
    x = _planes(rng, (2, 50, 31))
    _check(jax.jit(lambda a: correlate_separable(a, g25, g25, mode=mode, cval=CVAL))(x), _ref_separable(x, g25, g25, mode))


@CPU_LOOPS
def test_rows_pass_with_many_terms_runs_in_two_loops():
    """A rows pass of at least ROWS_SPLIT_MIN_TERMS terms sums its first half in a loop of
    its own (a conditional's result, on CPU); the columns pass and short rows passes do not."""
    from jaxprs import equations

    from imgproc.filters.separable import ROWS_SPLIT_MIN_TERMS

    x = np.zeros((1, 64, 64), np.float32)

    def conds(n_rows, n_cols):
        kr, kc = np.ones(n_rows, np.float32), np.ones(n_cols, np.float32)  # symmetric: (n + 1) // 2 terms
        return len(equations(jax.make_jaxpr(lambda a: correlate_separable(a, kr, kc))(x).jaxpr, "cond"))

    most = 2 * ROWS_SPLIT_MIN_TERMS - 3  # the longest symmetric kernel with fewer terms
    assert conds(most, 25) == 0
    assert conds(most + 2, 5) == 1
    assert conds(25, 5) == 1


@CPU_LOOPS
def test_a_long_rows_pass_over_float32_rows_is_one_loop_unless_they_alias(rng):
    """float_rows (the loops read float32 values, not integers converted in them): one loop
    at a width that does not alias; two where it does (inside jit: no kept copy). Eager
    calls and pipelines pass it from the image's dtype."""
    import imgproc

    x = rng.random((1, 40, 64, 3), dtype=np.float32)  # 768-byte rows: no aliasing
    k = np.ones(25, np.float32) / 25
    one, two = (lambda a: correlate_separable(a, k, k, float_rows=True)), (lambda a: correlate_separable(a, k, k))
    assert _conditionals(one, x) == 0 and _conditionals(two, x) == 1
    np.testing.assert_allclose(one(x), two(x), rtol=0, atol=1e-6)  # the same sums, another order
    wide = np.zeros((1, 40, 1024, 3), np.float32)  # 12 KiB rows: the 25 rows alias
    assert _conditionals(lambda a: correlate_separable(a, k, k, float_rows=True), wide) == 1
    image = x[0] * 255
    blur = lambda a: imgproc.gaussian_blur(a, 3.0, method="separable")  # noqa: E731
    assert _conditionals(blur, image) == 1  # the last pass's own loop only
    assert _conditionals(blur, image.astype(np.uint8)) == 2  # and the first half's
    pipe = imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 3.0, "method": "separable"}])
    assert _conditionals(pipe, x.astype(np.uint8)) == 1  # the first stage reads the integers
    pipe = imgproc.Pipeline([{"op": "sharpen"}, {"op": "gaussian_blur", "sigma": 3.0, "method": "separable"}])
    assert _conditionals(pipe, x.astype(np.uint8)) == 0  # the second reads the first's float32 result


def test_rows_alias_counts_rows_per_cache_set():
    from imgproc.filters.separable import L1_WAYS, rows_alias

    assert rows_alias(2048 * 3 * 4, 25)  # 24 KiB rows: all 25 in one set
    assert rows_alias(4096, L1_WAYS + 1) and not rows_alias(4096, L1_WAYS)
    assert not rows_alias(1920 * 3 * 4, 25)  # 22.5 KiB: spread over the sets
    assert not rows_alias(2048 * 3 * 4 + 64, 25)  # one line longer: the restrided copy
    assert not rows_alias(2048 * 3, 13) and rows_alias(2048 * 3, 25)  # 6 KiB: two sets


@CPU_LOOPS
def test_an_eager_long_rows_pass_at_an_aliasing_width_reads_a_restrided_copy(rng):
    """Rows of a multiple of 4 KiB and 19 taps or more: an eager call copies the input into
    rows ROWS_PAD values longer (kept memory) and sums in one loop; inside jit (the copy
    would be fresh memory) the two loops stay. Both give scipy's values."""
    import imgproc
    from imgproc.cpu import output_buffers as buffers
    from imgproc.filters.separable import ROWS_PAD

    image = rng.random((96, 1024, 3), dtype=np.float32)  # rows of 12 KiB, 1.2 MB
    for mode in MODES:
        ref = np.stack([ndi.gaussian_filter(image[..., c].astype(np.float64), 3.0, mode=mode, cval=CVAL)
                        for c in range(3)], -1)
        buffers.release()
        eager = imgproc.gaussian_blur(image, 3.0, mode=mode, cval=CVAL)
        assert ((1, 96, 1024 * 3 + ROWS_PAD), "<f4") in buffers.kept()
        assert not any(shape[1] == 96 - 24 for shape, _ in buffers.kept())  # no first-half sum: one loop
        jitted = jax.jit(lambda a: imgproc.gaussian_blur(a, 3.0, mode=mode, cval=CVAL))(image)
        np.testing.assert_allclose(eager, ref, rtol=0, atol=TOL)
        np.testing.assert_allclose(np.asarray(jitted), ref, rtol=0, atol=TOL)
    np.testing.assert_array_equal(imgproc.gaussian_blur(image, 3.0, mode=mode, cval=CVAL), eager)  # again
    buffers.release()
    narrower = image[:, :1000].copy()  # 11.7 KiB rows: no copy
    imgproc.gaussian_blur(narrower, 3.0)
    assert not any(shape[-1] == 1000 * 3 + ROWS_PAD for shape, _ in buffers.kept())
    buffers.release()


# (P, H, W), kernel shape
DIRECT_CASES = [
    ((2, 9, 13), (3, 3)),
    ((1, 12, 10), (5, 4)),
    ((1, 1, 1), (13, 13)),
    ((1, 3, 2), (13, 5)),
    ((1, 1, 7), (2, 3)),
    ((2, 9, 13, 3), (5, 5)),  # (B, H, W, C): W and C merged into one axis
    ((1, 6, 4, 2), (3, 6)),
    ((1, 2, 3, 3), (7, 7)),
]


@pytest.mark.parametrize("bands", ["select", "in place"])
@pytest.mark.parametrize("mode", MODES)
def test_direct_matches_scipy(mode, bands, rng):
    for shape, kshape in DIRECT_CASES:
        x = _planes(rng, shape)
        k = rng.standard_normal(kshape)
        f = jax.jit(lambda a, k=k: correlate_direct(a, k, mode=mode, cval=CVAL, **BAND_WRITES[bands]))
        _check(f(x), _ref_direct(x, k, mode))


# kernels of more than LOOP_MAX_READS weights: the image extended once, summed in
# loops of SUM_LOOP_TERMS terms; with an interior, on an image smaller than the
# kernel (once a process abort in XLA's compile), with channels merged, with zero weights
MANY_TERMS_CASES = [
    ((2, 30, 26), (17, 17)),
    ((1, 1, 2), (23, 23)),
    ((1, 5, 4, 3), (17, 18)),
]


@pytest.mark.parametrize("mode", MODES)
def test_a_direct_kernel_of_many_terms_matches_scipy_and_the_one_loop_sum(mode, rng, monkeypatch):
    from imgproc.filters import separable

    for shape, kshape in MANY_TERMS_CASES:
        x = _planes(rng, shape)
        k = rng.standard_normal(kshape)
        k[::3, 1::4] = 0.0  # skipped terms
        k /= np.abs(k).sum()  # results within [-1, 1], as TOL assumes
        assert np.count_nonzero(k) > separable.LOOP_MAX_READS
        in_loops = jax.jit(lambda a, k=k: correlate_direct(a, k, mode=mode, cval=CVAL))(x)
        _check(in_loops, _ref_padded(x, k, mode))
        with monkeypatch.context() as m:  # the same additions in one loop
            m.setattr(separable, "LOOP_MAX_READS", k.size)
            one_loop = jax.jit(lambda a, k=k: correlate_direct(a, k, mode=mode, cval=CVAL))(x)
        # the same float32 values, but where XLA folds the terms that read cval into constants
        np.testing.assert_allclose(np.asarray(in_loops), np.asarray(one_loop), rtol=0,
                                   atol=1e-7 if mode == "constant" else 0)


@pytest.mark.parametrize("mode", ["reflect", "constant"])
def test_a_pass_of_many_terms_matches_scipy(mode, rng):
    # a symmetric 261-tap kernel: 131 pair terms, 262 reads, past LOOP_MAX_READS;
    # along H and along W, with an interior and with none
    from imgproc.cpu import LOOP_MAX_READS

    half = rng.random(131)
    long = np.concatenate([half, half[-2::-1]])
    long /= long.sum()
    assert 2 * (long.size // 2) > LOOP_MAX_READS
    short = np.array([0.25, 0.5, 0.25])
    for shape in [(1, 270, 262), (1, 9, 4, 3)]:
        x = _planes(rng, shape)
        for kr, kc in [(long, short), (short, long)]:
            out = jax.jit(lambda a, kr=kr, kc=kc: correlate_separable(a, kr, kc, mode=mode, cval=CVAL))(x)
            _check(out, _ref_separable(x, kr, kc, mode))


_NUMPY_PADS = {"reflect": "symmetric", "mirror": "reflect", "nearest": "edge", "wrap": "wrap", "constant": "constant"}


def _ref_padded(x, k, mode):
    """scipy's correlation of each plane of ``x`` computed as numpy's border and a sum of
    windows, in float64: scipy 1.17's own ``correlate`` in mode ``"reflect"`` returns
    wrong values for a kernel much larger than the image (its reflection runs out)."""
    if x.ndim == 4:
        return np.moveaxis(np.stack([_ref_padded(x[..., c], k, mode) for c in range(x.shape[3])]), 0, -1)
    (kh, kw), k = k.shape, np.asarray(k, np.float64)
    extra = {"constant_values": CVAL} if mode == "constant" else {}
    pad = ((0, 0), (kh // 2, kh - 1 - kh // 2), (kw // 2, kw - 1 - kw // 2))
    xp = np.pad(x.astype(np.float64), pad, mode=_NUMPY_PADS[mode], **extra)
    windows = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(1, 2))
    return np.einsum("phwij,ij->phw", windows, k)


@CPU_LOOPS
def test_a_direct_kernel_of_many_terms_runs_in_loops_of_at_most_so_many_terms():
    from imgproc.cpu import LOOP_MAX_READS
    from imgproc.filters.separable import SUM_LOOP_TERMS

    x = np.zeros((1, 40, 40), np.float32)
    for n in (15, 16, 23):  # 225 weights: one loop; 256 and 529: the padded image, then loops
        loops = _conditionals(lambda a: correlate_direct(a, np.ones((n, n), np.float32)), x)
        expected = 0 if n * n <= LOOP_MAX_READS else 1 + -(-n * n // SUM_LOOP_TERMS)
        assert loops == expected, (n, loops)


def test_a_large_direct_kernel_on_a_tiny_image_compiles_in_bounded_memory():
    """A 23x23 kernel on a 1x2 image once made XLA:CPU's compile take more than 5 GB and
    abort the process (std::bad_alloc); in loops it takes about 0.3 GB. The child runs on
    the CPU on every machine, and once JAX has started (1.3 GB of address space here) it
    may take 1.75 GB more: JAX loads an installed CUDA plugin even for the CPU, and that
    load reserves more than a fixed 3 GB (it aborted the child on an H200)."""
    import subprocess
    import sys

    from subprocesses import python_env

    code = ("import resource, numpy as np, jax, imgproc\n"
            "jax.devices()\n"
            "held = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmSize')) << 10\n"
            "resource.setrlimit(resource.RLIMIT_AS, (held + (7 << 28), held + (7 << 28)))\n"
            "k = np.random.default_rng(0).random((23, 23)).astype(np.float32)\n"
            "out = imgproc.correlate(np.ones((1, 2), np.float32), k, mode='wrap', method='direct')\n"
            "print(round(float(out[0, 0] / k.sum()), 4))\n")
    run = subprocess.run([sys.executable, "-c", code], env=python_env(JAX_PLATFORMS="cpu"), capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "1.0"


@CPU_LOOPS
def test_feeds_next_hint_selects_the_band_writes_and_keys_the_stage():
    import imgproc
    from imgproc.filters import convolution

    feeds = imgproc.LoweringHints(feeds_next=True)

    x = np.zeros((40, 44, 3), np.float32)

    def updates(op, image=x):  # a new function each time: make_jaxpr caches per function
        return str(jax.make_jaxpr(lambda a, s: op(a, s))(image, 3.0)).count("dynamic_update_slice")

    # a direct pass over colour data writes its bands in place either way (alone, in a loop
    # of its own: a conditional whose two branches are the pass); over one channel it
    # selects them unless it feeds a stage
    direct = lambda a, s, h=None: imgproc.sharpen(a, method="direct", hints=h)  # noqa: E731
    assert updates(direct) == 2 * updates(lambda a, s: direct(a, s, feeds)) == 8
    assert updates(direct, x[..., 0]) + 4 == updates(lambda a, s: direct(a, s, feeds), x[..., 0])
    ops = [  # (op, border bands its last pass writes: in place when feeding a stage)
        (lambda a, s, h=None: imgproc.gaussian_blur(a, s, size=25, hints=h), 2),  # traced, above EXTEND_MAX_TAPS
        (lambda a, s, h=None: imgproc.gaussian_blur(a, 1.0, size=25, hints=h), 0),  # constants: extended buffer
    ]
    for op, bands in ops:
        alone = updates(op)
        feeding = updates(lambda a, s: op(a, s, feeds))
        assert feeding == alone + bands
        assert updates(op) == alone
    # called eagerly, the hint is part of the compiled stage's key
    convolution._constant_stage.cache_clear()
    plain = imgproc.sharpen(x)
    feeding = imgproc.sharpen(x, hints=feeds)
    assert convolution._constant_stage.cache_info().currsize == 2
    np.testing.assert_allclose(np.asarray(plain), np.asarray(feeding), rtol=0, atol=1e-6)


def test_direct_sharpen_with_zero_taps(rng):
    k = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.float32)
    x = _planes(rng, (3, 17, 19))
    _check(jax.jit(lambda a: correlate_direct(a, k, mode="reflect", cval=CVAL))(x), _ref_direct(x, k, "reflect"))


@pytest.mark.parametrize("mode", ["reflect", "constant"])
def test_traced_weights(mode, rng):
    x = _planes(rng, (2, 11, 14))
    kr = rng.standard_normal(7).astype(np.float32)
    kc = rng.standard_normal(4).astype(np.float32)
    f = jax.jit(lambda a, b, c: correlate_separable(a, b, c, mode=mode, cval=CVAL))
    _check(f(x, kr, kc), _ref_separable(x, kr, kc, mode))
    k2 = rng.standard_normal((3, 4)).astype(np.float32)
    g = jax.jit(lambda a, k: correlate_direct(a, k, mode=mode, cval=CVAL))
    _check(g(x, k2), _ref_direct(x, k2, mode))


def test_weights_from_traced_sigma(rng):
    x = _planes(rng, (1, 15, 12))
    r = jnp.arange(-4, 5, dtype=jnp.float32)

    @jax.jit
    def blur(a, sigma):
        w = jnp.exp(-0.5 * (r / sigma) ** 2)
        w = w / w.sum()
        return correlate_separable(a, w, w, mode="mirror")

    g = np.exp(-0.5 * (np.arange(-4, 5) / 1.5) ** 2)
    g /= g.sum()
    _check(blur(x, jnp.float32(1.5)), _ref_separable(x, g, g, "mirror"))


BARRIER_CASES = [  # (name, call(image, sigma), barriers): weights computed in the program, then concrete ones
    ("traced sigma", lambda a, s: imgproc.gaussian_blur(a, s, size=9), 1),
    ("drawn sigma", lambda a, s: imgproc.random_gaussian_blur(jax.random.key(0), a), 1),
    ("unsharp mask", lambda a, s: imgproc.unsharp_mask(a, sigma=s, size=9), 1),
    ("derivative, constant", lambda a, s: imgproc.gaussian_blur(a, s, size=9, order=(0, 1), mode="constant"), 1),
    ("gradient magnitude", lambda a, s: imgproc.gaussian_gradient_magnitude(a, s, size=9), 2),  # one per axis
    ("traced kernel", lambda a, s: imgproc.correlate(a, jnp.full((3, 3), s / 9), method="direct"), 1),
    ("traced centre", lambda a, s: imgproc.sharpen(a, center=s * 40), 1),
    ("concrete sigma", lambda a, s: imgproc.gaussian_blur(a, 1.5), 0),
    ("concrete kernel", lambda a, s: imgproc.sharpen(a), 0),
]


@pytest.mark.parametrize("backend", ["cpu", "gpu"])
def test_weights_computed_in_the_program_reach_the_passes_behind_a_barrier(backend):
    """Weights the program computes (a traced or drawn sigma, a traced kernel) reach the
    passes behind one ``optimization_barrier`` per lowering, on every backend; NumPy
    weights need none. Without it XLA:GPU fused a Gaussian's weights into the passes and
    compiled ``random_gaussian_blur`` of 2×400×400×3 for 62-102 s (1.0 s with it; an
    H200's compile with jax 0.11.2, benchmarks/NOTES.md, "GPU")."""
    from backends import reported_backend

    x = np.zeros((2, 24, 30, 3), np.uint8)
    with reported_backend(backend):
        counts = {name: len(equations(jax.make_jaxpr(call)(x, 1.5).jaxpr, "optimization_barrier"))
                  for name, call, _ in BARRIER_CASES}
    assert counts == {name: n for name, _, n in BARRIER_CASES}


DERIVATIVE_CASES = [  # (name, call(planes, kernels), kernels): symmetric pairs, plain taps, 2-D, traced, many terms
    ("symmetric", lambda a, k: correlate_separable(a, np.array([1, 2, 3, 2, 1.0]) / 9, np.array([1, 4, 1.0]) / 6,
                                                   mode="reflect"), ()),
    ("plain taps, constant", lambda a, k: correlate_separable(a, np.array([1, -2, 3, 0.5]), np.array([2, 1.0, -1]),
                                                              mode="constant", cval=0.3), ()),
    ("traced weights", lambda a, k: correlate_separable(a, k[0], k[1], mode="wrap"), (7, 4)),
    ("direct", lambda a, k: correlate_direct(a, np.arange(12.0).reshape(3, 4) / 66, mode="mirror"), ()),
    ("direct, traced", lambda a, k: correlate_direct(a, k[0].reshape(3, 5), mode="nearest"), (15,)),
    ("direct, many terms (in loops)", lambda a, k: correlate_direct(a, np.linspace(-1, 1, 17 * 17).reshape(17, 17),
                                                                    mode="reflect"), ()),
]


@pytest.mark.parametrize("case", DERIVATIVE_CASES, ids=[c[0] for c in DERIVATIVE_CASES])
def test_the_shifted_sums_derivative_is_jaxs_own_of_the_unrolled_sum(case, rng, monkeypatch):
    # each shifted sum is differentiated as a fori_loop over its slices (_sum_in_a_loop);
    # JAX's own derivative of the unrolled slices is the reference, in reverse and forward
    # mode, in the image and in traced weights
    from imgproc.filters import separable

    _, call, sizes = case
    x = _planes(rng, (2, 23, 21))
    ks = tuple(jnp.asarray(rng.standard_normal(n).astype(np.float32)) for n in sizes)
    w = rng.standard_normal(np.asarray(call(x, ks)).shape).astype(np.float32)
    v = rng.standard_normal(x.shape).astype(np.float32)

    def derivatives():  # new functions each time: jax.jit would reuse their traces
        f = lambda a, k: jnp.sum(w * call(a, k))  # noqa: E731
        return jax.jit(jax.grad(f, (0, 1)))(x, ks), jax.jit(lambda a, k: jax.jvp(lambda b: f(b, k), (a,), (v,))[1])(x, ks)

    (gx, gk), jvp = derivatives()
    monkeypatch.setattr(separable, "shifted_sum", separable._unrolled_sum)
    (rx, rk), rjvp = derivatives()
    scale = float(np.abs(rx).max())
    np.testing.assert_allclose(np.asarray(gx), np.asarray(rx), rtol=1e-5, atol=1e-5 * scale)
    for a, b in zip(gk, rk):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-4 * float(np.abs(b).max()))
    np.testing.assert_allclose(float(jvp), float(rjvp), rtol=1e-4)


@pytest.mark.cpu_only("XLA:CPU's pad per term; on a GPU the fused kernel's derivative is JAX's own transpose of "
                      "the XLA passes (198 pads for sigma 6), which XLA:GPU compiles in seconds (NOTES, 'GPU')")
def test_a_long_gaussian_derivatives_gradient_has_no_pad_per_term():
    # JAX transposes each slice of an unrolled sum into a pad, which XLA:CPU compiled as a
    # loop of its own: 398 pads for sigma 6, a 15 s compile; the loop's transpose has none
    x = jnp.zeros((40, 44, 3), jnp.float32)
    jaxpr = jax.make_jaxpr(jax.grad(lambda v: jnp.sum(imgproc.gaussian_gradient_magnitude(v, sigma=6.0))))(x)
    assert len(list(equations(jaxpr.jaxpr, "pad"))) <= 16


def test_vmap_equals_loop(rng):
    xs = _planes(rng, (3, 2, 10, 9))
    kr = rng.standard_normal(5).astype(np.float32)
    kc = rng.standard_normal(3).astype(np.float32)
    one = jax.jit(lambda a: correlate_separable(a, kr, kc, mode="wrap"))
    loop = np.stack([np.asarray(one(a)) for a in xs])
    np.testing.assert_allclose(np.asarray(jax.jit(jax.vmap(one))(xs)), loop, rtol=0, atol=1e-6)
    # vmapped traced weights too
    krs = rng.standard_normal((3, 5)).astype(np.float32)
    g = jax.jit(jax.vmap(lambda a, k: correlate_direct(a, k.reshape(1, 5), mode="nearest")))
    loop = np.stack([_ref_direct(a, k.reshape(1, 5), "nearest") for a, k in zip(xs, krs)])
    _check(g(xs, krs), loop)


def test_rejects_bad_input():
    x = np.zeros((1, 4, 4), np.float32)
    with pytest.raises(ValueError, match="mode"):
        correlate_separable(x, np.ones(3), np.ones(3), mode="edge")
    with pytest.raises(ValueError, match="shape"):
        correlate_separable(np.zeros((4, 4), np.float32), np.ones(3), np.ones(3))
    with pytest.raises(ValueError):
        correlate_direct(x, np.ones(3))


def _conditionals(fn, *args):
    return str(jax.make_jaxpr(fn)(*args)).count("cond[")


@CPU_LOOPS
def test_a_long_last_pass_runs_alone_with_the_cast_where_nothing_else_reads_it(rng):
    # the columns pass of more than COLS_FUSED_MAX_TAPS taps over (..., W, C) data is a loop
    # of its own (a conditional: imgproc.cpu.fusion.in_own_loop) with the program's last
    # conversion (finish) in it, only where the program returns it: not for a short kernel,
    # not where a stage reads the result or a pipeline still casts or crops it
    import imgproc
    from imgproc.core.arrays import to_output

    x = rng.random((1, 16, 40, 3), dtype=np.float32) * 255
    k = np.ones(11, np.float32) / 11
    to_uint8 = lambda y: to_output(y, np.uint8)  # noqa: E731
    finished = correlate_separable(x, k, k, finish=to_uint8)
    assert finished.dtype == np.uint8  # applied in the loop: the caller does not cast again
    np.testing.assert_array_equal(finished, to_uint8(correlate_separable(x, k, k)))
    assert correlate_separable(x, k[:9], k[:9], finish=to_uint8).dtype == np.float32  # left to the caller
    assert _conditionals(lambda a: correlate_separable(a, k, k, finish=to_uint8), x) == 1
    assert _conditionals(lambda a: correlate_separable(a, k, k), x) == 0
    assert _conditionals(lambda a: correlate_separable(a, k[:9], k[:9], finish=to_uint8), x) == 0
    image = x[0]
    blur = lambda a: imgproc.gaussian_blur(a, 3.0, method="separable")  # noqa: E731
    assert _conditionals(blur, image) == _conditionals(blur, image.astype(np.uint8)) == 1
    np.testing.assert_array_equal(  # the eager uint8 call rounds and saturates once, as before
        imgproc.gaussian_blur(image.astype(np.uint8), 3.0),
        to_uint8(imgproc.gaussian_blur(image.astype(np.uint8).astype(np.float32), 3.0)))
    blur = lambda a: imgproc.gaussian_blur(a, 1.0, size=5, method="separable")  # noqa: E731
    assert _conditionals(blur, image) == _conditionals(blur, image.astype(np.uint8)) == 0
    # in a pipeline, the last stage's blur is finished there for float32 images only: the
    # pipeline casts integer images after its last stage
    pipe = imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 3.0, "method": "separable"}])
    assert _conditionals(pipe, x) == _conditionals(pipe, x.astype(np.uint8)) + 1


@CPU_LOOPS
def test_a_long_last_pass_read_again_elementwise_runs_alone_into_a_kept_buffer(rng):
    # keep (the unsharp mask's combination reads the blur): the long columns pass is a loop
    # of its own as with finish, and its result is left unfinished for the caller
    import imgproc

    x = rng.random((1, 16, 40, 3), dtype=np.float32)
    k = np.ones(11, np.float32) / 11
    # the same sums; the loop alone may round the last bit otherwise (vectorised differently)
    np.testing.assert_allclose(correlate_separable(x, k, k, keep=True), correlate_separable(x, k, k),
                               rtol=0, atol=1e-6)
    assert _conditionals(lambda a: correlate_separable(a, k, k, keep=True), x) == 1
    assert _conditionals(lambda a: correlate_separable(a, k[:9], k[:9], keep=True), x) == 0
    assert _conditionals(lambda a: correlate_separable(a, k, k, keep=True), x[..., 0]) == 0  # planes
    image = x[0] * 255
    sharp = lambda a: imgproc.unsharp_mask(a, sigma=3.0, method="separable")  # noqa: E731
    assert _conditionals(sharp, image) == _conditionals(sharp, image.astype(np.uint8)) == 1
    sharp = lambda a: imgproc.unsharp_mask(a, sigma=1.0, method="separable")  # noqa: E731
    assert _conditionals(sharp, image) == 0
    # in a pipeline: the last stage of float32 images only (integer images are cast after
    # it), and never a stage that feeds the next
    pipe = imgproc.Pipeline([{"op": "unsharp_mask", "sigma": 3.0, "method": "separable"}])
    assert _conditionals(pipe, x) == _conditionals(pipe, x.astype(np.uint8)) + 1
    pipe = imgproc.Pipeline([{"op": "unsharp_mask", "sigma": 3.0, "method": "separable"}, {"op": "sharpen"}])
    assert _conditionals(pipe, x) == 0


@CPU_LOOPS
def test_a_direct_pass_over_colour_data_is_a_loop_of_its_own_unless_it_feeds_a_stage():
    x = np.zeros((1, 12, 10, 3), np.float32)
    k = np.arange(9, dtype=np.float32).reshape(3, 3)
    assert _conditionals(lambda a: correlate_direct(a, k), x) == 1
    assert _conditionals(lambda a: correlate_direct(a, k, in_place=True), x) == 0
    assert _conditionals(lambda a: correlate_direct(a, k), x[..., 0]) == 0  # planes: nothing to merge


def test_other_backends_run_each_pass_as_xla_fuses_it(other_backend):
    """Off CPU no pass is put in a loop of its own (on a GPU a conditional waits for its
    predicate on the host) and the passes write no border band in place (the padded copy
    fuses into the pass there): the programs the CPU tests above count loops in hold
    neither. (A direct pass feeding a stage writes its bands in place on every backend.)"""
    import imgproc
    from imgproc.core.arrays import to_output

    x = np.zeros((1, 40, 1024, 3), np.float32)  # rows that alias: the CPU's restrided copy
    k25, k11 = np.ones(25, np.float32) / 25, np.ones(11, np.float32) / 11
    k = np.arange(9, dtype=np.float32).reshape(3, 3)
    calls = [lambda a: correlate_separable(a, k25, k25), lambda a: correlate_separable(a, k25, k25, float_rows=True),
             lambda a: correlate_separable(a, k11, k11, finish=lambda y: to_output(y, np.uint8)),
             lambda a: correlate_separable(a, k11, k11, keep=True), lambda a: correlate_direct(a, k),
             lambda a: imgproc.gaussian_blur(a[0].astype(np.uint8), 3.0, method="separable"),
             lambda a: imgproc.unsharp_mask(a[0], sigma=3.0, method="separable"),
             imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 3.0, "method": "separable"},
                               {"op": "sharpen", "method": "separable"}])]
    for call in calls:
        text = str(jax.make_jaxpr(call)(x))
        assert "cond[" not in text and "dynamic_update_slice" not in text
