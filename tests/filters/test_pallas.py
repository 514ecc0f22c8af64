"""The ``"pallas"`` lowering (imgproc.filters.pallas): the fused Mosaic GPU kernel, run here in
Pallas's GPU interpret mode, and lowered for CUDA without a GPU. The shared parity table
runs through it in test_filters.py (test_every_lowering_matches_reference)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.ndimage as ndi

import imgproc
from imgproc.filters import pallas as _pallas

pytest.importorskip("jax._src.pallas.mosaic_gpu.interpret.params")


def _reference(x, col, row, mode, cval):
    k = np.outer(np.asarray(col, np.float64), np.asarray(row, np.float64))
    return np.stack([np.stack([ndi.correlate(im[..., c].astype(np.float64), k, mode=mode, cval=cval)
                               for c in range(x.shape[-1])], -1) for im in x])


# (B, H, W, C), sigma, mode: several row and column tiles with partial last tiles, an
# image smaller than the kernel, one and four channels, and a radius that narrows the tile.
TILE_CASES = [
    ((2, 70, 150, 3), 1.0, "reflect"),
    ((1, 33, 47, 3), 3.0, "constant"),
    ((1, 40, 45, 1), 2.0, "wrap"),
    ((3, 5, 4, 3), 3.0, "mirror"),
    ((1, 64, 100, 4), 1.5, "nearest"),
    ((1, 50, 60, 3), 9.0, "reflect"),
]


@pytest.mark.parametrize("shape, sigma, mode", TILE_CASES)
def test_fused_kernel_matches_scipy_across_tiles(shape, sigma, mode, rng):
    x = rng.random(shape, dtype=np.float32)
    col, row = imgproc.kernels.factor(imgproc.kernels.gaussian(sigma))[0]
    got = np.asarray(jax.jit(lambda v: _pallas.correlate_fused(v, col, row, mode=mode, cval=0.25, interpret=True))(x))
    np.testing.assert_allclose(got, _reference(x, col, row, mode, 0.25), atol=2e-6, rtol=0)


def test_asymmetric_weights_and_zero_taps(rng):
    x = rng.random((1, 37, 41, 3), dtype=np.float32)
    col, row = np.array([0.5, 0.0, -1.0, 2.0, 0.25]), np.array([1.0, 0.0, 0.0])
    got = np.asarray(_pallas.correlate_fused(x, col, row, mode="reflect", cval=0.0, interpret=True))
    np.testing.assert_allclose(got, _reference(x, col, row, "reflect", 0.0), atol=2e-6, rtol=0)


def test_weights_that_are_all_zero_give_zeros(monkeypatch, rng):
    """A derivative folded onto an image one pixel tall has no weight left (``[-1, 0, 1]`` in
    reflect mode on one row: 0); the kernel had no sum to write and failed to trace on an
    H200 (``edges`` of a 1x1 image, planned as on a GPU here)."""
    from imgproc.filters import convolution

    x = rng.random((1, 1, 1, 3), dtype=np.float32)
    for col, row in ((np.zeros(3), np.array([1.0, 2.0, 1.0])), (np.array([1.0, 2.0, 1.0]), np.zeros(1))):
        got = np.asarray(_pallas.correlate_fused(x, col, row, mode="reflect", cval=0.0, interpret=True))
        np.testing.assert_array_equal(got, np.zeros_like(x))
    monkeypatch.setattr(convolution, "auto_method", lambda *a, **k: convolution.FUSED_IF_IT_FITS)
    f = jax.jit(lambda v: imgproc.edges(v, mode="reflect", layout="NHWC"))
    exported = jax.export.export(f, platforms=["cuda"])(jax.ShapeDtypeStruct((1, 1, 1, 3), jnp.uint8))
    assert exported.out_avals[0].shape == (1, 1, 1, 3)


def test_no_races_and_no_uninitialised_reads(monkeypatch, rng):
    """The interpreter's race detector watches the TMA copies against the kernel's loads and
    stores (it reports a race when the barrier wait is left out); unwritten shared memory
    reads as NaN."""
    from jax._src.pallas.mosaic_gpu.interpret.interpret_pallas_call import get_races
    from jax._src.pallas.mosaic_gpu.interpret.params import InterpretGPUParams

    monkeypatch.setattr(_pallas, "_interpret_params",
                        lambda: InterpretGPUParams(detect_races=True, uninitialized_memory="nan"))
    x = rng.random((2, 40, 50, 3), dtype=np.float32)
    col, row = imgproc.kernels.factor(imgproc.kernels.gaussian(1.0))[0]
    got = np.asarray(_pallas.correlate_fused(x, col, row, mode="reflect", cval=0.0, interpret=True))
    assert not get_races().races_found
    assert np.isfinite(got).all()


@pytest.mark.parametrize("dtype, layout", [("uint8", "NCHW"), ("float32", "HWC"), ("uint16", "CHW")])
def test_public_filters_take_the_lowering(dtype, layout, rng):
    x = rng.random((2, 3, 30, 40) if layout == "NCHW" else (3, 30, 40) if layout == "CHW" else (30, 40, 3))
    x = (x * np.iinfo(dtype).max).astype(dtype) if dtype != "float32" else x.astype(np.float32)
    arg = None if layout == "HWC" else layout
    for f in (lambda v, m: imgproc.gaussian_blur(v, 1.5, layout=arg, method=m),
              lambda v, m: imgproc.sharpen(v, layout=arg, method=m),
              lambda v, m: imgproc.box_blur(v, 5, layout=arg, method=m, mode="constant", cval=7.0)):
        got, ref = np.asarray(f(x, "pallas")), np.asarray(f(x, "separable"))
        assert got.dtype == x.dtype and got.shape == x.shape
        np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), atol=1 if dtype != "float32" else 2e-6)


def test_vmap_and_jit_equal_eager(rng):
    batch = rng.random((3, 12, 14, 3), dtype=np.float32)
    call = lambda im: imgproc.gaussian_blur(im, 1.0, method="pallas")  # noqa: E731
    looped = np.stack([np.asarray(call(im)) for im in batch])
    np.testing.assert_allclose(np.asarray(jax.vmap(call)(batch)), looped, atol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.jit(call)(batch[0])), looped[0], atol=1e-6)


@pytest.mark.parametrize("sigma, shape", [(1.0, (1, 2048, 2048, 3)), (3.0, (1, 2048, 2048, 3)),
                                          (3.0, (4, 100, 70, 1)), (9.0, (1, 64, 64, 3))])
def test_lowers_for_cuda_without_a_gpu(sigma, shape):
    """Mosaic GPU lowers the kernel for CUDA in Python (TMA sizes and alignment, register
    layouts of the shifted loads), so a kernel that would not compile fails here; what this
    cannot check is the PTX compile and the speed (benchmarks/NOTES.md, "GPU")."""
    col, row = imgproc.kernels.factor(imgproc.kernels.gaussian(sigma))[0]
    f = jax.jit(lambda v: _pallas.correlate_fused(v, col, row, mode="reflect", cval=0.0, interpret=False))
    exported = jax.export.export(f, platforms=["cuda"])(jax.ShapeDtypeStruct(shape, jnp.float32))
    assert "custom_call @mosaic_gpu" in exported.mlir_module()


@pytest.mark.parametrize("ry, rx, channels, expected", [
    (1, 1, 3, (16, 224, 256)), (12, 12, 3, (16, 160, 256)), (36, 36, 3, (16, 32, 256)),
    (2, 2, 1, (16, 224, 256)), (40, 1, 1, (16, 224, 256)),
    # tall kernels: the 256-wide input tile would overflow shared memory, a narrower one fits
    (120, 1, 1, (16, 128, 160)), (121, 1, 1, (8, 128, 160)),
    (80, 36, 3, (16, 32, 256)), (90, 36, 3, (8, 32, 256)),
])
def test_tile_shape(ry, rx, channels, expected):
    rows, cols, width = _pallas.tile_shape(ry, rx, channels)
    assert (rows, cols, width) == expected
    assert width % 32 == 0 and width <= _pallas.TMA_BOX and rows + 2 * ry <= _pallas.TMA_BOX
    assert width >= cols + 2 * rx * channels


@pytest.mark.parametrize("call, match", [
    # on images larger than the kernels (on smaller ones their taps fold onto the image's extension)
    (lambda x: imgproc.gaussian_blur(np.zeros((200, 200, 3), np.float32), 20.0, method="pallas"),
     "radius 80 x 80 on 3 channel.* use method='separable'"),
    (lambda x: imgproc.box_blur(np.zeros((400, 400, 3), np.float32), 301, method="pallas"), "fit one TMA copy"),
    (lambda x: jax.jit(lambda v, s: imgproc.gaussian_blur(v, s, size=9, method="pallas"))(x, 1.0),
     "needs concrete"),
    (lambda x: jax.jit(lambda v, k: imgproc.correlate(v, k, method="pallas"))(x, np.ones((3, 3))),
     "method='pallas' needs a concrete kernel"),
])
def test_bad_arguments_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call(np.zeros((20, 20, 3), np.float32))


def test_pipeline_stage_takes_the_lowering(rng):
    """A spec names the lowering like any option; the stage's numbers equal the default's."""
    x = rng.random((2, 24, 30, 3), dtype=np.float32)
    spec = [{"op": "gaussian_blur", "sigma": 1.0, "size": 5}, {"op": "sharpen"}]
    fused = imgproc.Pipeline([dict(s, method="pallas") for s in spec])
    np.testing.assert_allclose(np.asarray(fused(x)), np.asarray(imgproc.Pipeline(spec)(x)), atol=2e-6)
    assert imgproc.Pipeline.from_spec(fused.to_spec()).to_spec() == fused.to_spec()


def test_auto_on_a_gpu_plans_the_fused_kernel_only_for_concrete_weights(monkeypatch):
    """``auto`` on a GPU plans "pallas-if-it-fits" for one separable term; traced weights
    (a random blur's sigma) cannot be compiled into the kernel, so they plan the passes."""
    from imgproc.filters import convolution

    assert convolution.auto_method(1, "gpu") == convolution.FUSED_IF_IT_FITS
    monkeypatch.setattr(convolution, "auto_method", lambda *a, **k: convolution.FUSED_IF_IT_FITS)
    assert convolution.plan_lowering(imgproc.kernels.gaussian(1.0))[0] == convolution.FUSED_IF_IT_FITS
    planned = []
    jax.jit(lambda s: planned.append(convolution.plan_lowering(None, terms=[(s * jnp.ones(3), jnp.ones(3))])[0]))(1.0)
    assert planned == ["separable"]


@pytest.mark.parametrize("channels, sigma, fused", [(3, 1.0, True), (1, 3.0, True), (40, 1.0, False), (3, 20.0, False)])
def test_auto_on_a_gpu_takes_the_passes_where_no_tile_fits(rng, channels, sigma, fused, backend):
    """The fit depends on the image's channels, known when the stage is traced: a program
    compiled for CUDA holds the fused kernel where a tile fits and the passes elsewhere;
    compiled for the CPU (arrays put there on a GPU machine) it holds the passes, always,
    and gives their pixels. Where the fused kernel runs (a GPU), it sums the same products in
    another order: within float32 rounding of the passes (1.2e-7 seen on an H200)."""
    from imgproc.filters import convolution

    x = rng.random((1, 170, 174, channels), dtype=np.float32)  # larger than the kernel: its taps are not folded
    col, row = imgproc.kernels.factor(imgproc.kernels.gaussian(sigma))[0]
    terms = ((col, row),)
    auto = jax.jit(lambda v: convolution.run_lowering(v, (convolution.FUSED_IF_IT_FITS, None, terms), "reflect", 0.0))
    arg = jax.ShapeDtypeStruct(x.shape, jnp.float32)
    assert ("mosaic_gpu" in jax.export.export(auto, platforms=["cuda"])(arg).mlir_module()) == fused
    assert "mosaic_gpu" not in jax.export.export(auto, platforms=["cpu"])(arg).mlir_module()
    passes = jax.jit(lambda v: convolution.run_lowering(v, ("separable", None, terms), "reflect", 0.0))
    if fused and backend == "gpu":
        np.testing.assert_allclose(np.asarray(auto(x)), np.asarray(passes(x)), rtol=0, atol=1e-6)
    else:
        np.testing.assert_array_equal(np.asarray(auto(x)), np.asarray(passes(x)))


def test_a_batch_past_the_grid_limit_runs_in_several_launches(monkeypatch, rng):
    """CUDA launches at most 65535 blocks along the batch's grid axis: a larger batch runs
    in several launches (the same result); an image needing more row tiles is refused."""
    monkeypatch.setattr(_pallas, "MAX_GRID", 2)
    x = rng.random((5, 12, 9, 3), dtype=np.float32)
    col, row = imgproc.kernels.factor(imgproc.kernels.gaussian(1.0))[0]
    got = np.asarray(_pallas.correlate_fused(x, col, row, mode="reflect", cval=0.0, interpret=True))
    np.testing.assert_allclose(got, _reference(x, col, row, "reflect", 0.0), atol=2e-6, rtol=0)
    assert not _pallas.fits(2, 2, 3, height=40)  # 3 tiles of 16 rows
    with pytest.raises(ValueError, match="too tall; use method='separable'"):
        _pallas.correlate_fused(np.zeros((1, 40, 9, 3), np.float32), col, row, mode="reflect", cval=0.0, interpret=True)


@pytest.mark.parametrize("mode", ["reflect", "constant", "wrap"])
def test_derivatives_through_the_fused_kernel_equal_the_passes(rng, mode):
    """The Pallas kernel has no derivative rule; the lowering gives it one (the same
    correlation of the tangents through the XLA passes), so ``jax.grad``, ``jvp`` and the
    derivative with respect to ``cval`` work as with ``method="separable"``."""
    x = rng.random((2, 14, 17, 3), dtype=np.float32)
    w = rng.random((2, 14, 17, 3), dtype=np.float32)

    def loss(v, cval, method):
        return jnp.sum(w * imgproc.gaussian_blur(v, 1.5, mode=mode, cval=cval, method=method) ** 2)

    # with respect to the image, to the image and cval, and to cval alone (the NumPy image
    # concrete: the weights stay constants, which the kernel needs)
    for argnums in (0, (0, 1), 1):
        got = jax.grad(loss, argnums=argnums)(x, 0.3, "pallas")
        want = jax.grad(loss, argnums=argnums)(x, 0.3, "separable")
        for g, h in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(h), rtol=2e-5, atol=2e-5)
    t = rng.random(x.shape, dtype=np.float32)
    blur = lambda m: lambda v: imgproc.gaussian_blur(v, 1.5, mode=mode, cval=0.3, method=m)  # noqa: E731
    (_, got), (_, want) = jax.jvp(blur("pallas"), (x,), (t,)), jax.jvp(blur("separable"), (x,), (t,))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=2e-6)
