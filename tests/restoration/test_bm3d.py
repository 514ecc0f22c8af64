"""Tests of imgproc.restoration.block_matching.bm3d: parity with the ``bm3d`` package, jit/eager, batches, dtypes,
layouts, boundaries and bad options. Small images only (2 shared CPU cores)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from skimage import data
from skimage.metrics import peak_signal_noise_ratio as psnr

from imgproc.restoration.block_matching import _bior15_matrix8, _estimate_sigma, bm3d

NO_PYWAVELETS = "PyWavelets is not installed (pip install PyWavelets): scikit-image's estimate_sigma, the reference, needs it"

SIGMA = 25 / 255


def _noisy(img, sigma, seed=1):
    rng = np.random.default_rng(seed)
    return (img + rng.standard_normal(img.shape) * sigma).astype(np.float32)


@pytest.fixture(scope="module")
def camera96():
    return data.camera()[200:296, 200:296].astype(np.float32) / 255


def test_parity_with_bm3d_package(camera96):
    bm3d_pkg = pytest.importorskip("bm3d")
    noisy = _noisy(camera96, SIGMA)
    ref = np.clip(bm3d_pkg.bm3d(noisy, sigma_psd=SIGMA), 0, 1)
    ours = np.clip(np.asarray(bm3d(noisy, sigma=SIGMA)), 0, 1)
    p_ref = psnr(camera96, ref, data_range=1)
    p_ours = psnr(camera96, ours, data_range=1)
    assert p_ours > psnr(camera96, np.clip(noisy, 0, 1), data_range=1) + 8
    assert p_ours > p_ref - 0.3, (p_ours, p_ref)


def test_parity_with_bm3d_package_rgb():
    bm3d_pkg = pytest.importorskip("bm3d")
    img = data.astronaut()[100:164, 200:264].astype(np.float32) / 255
    noisy = _noisy(img, SIGMA, seed=2)
    ref = np.clip(bm3d_pkg.bm3d_rgb(noisy, SIGMA), 0, 1)
    ours = np.clip(np.asarray(bm3d(noisy, sigma=SIGMA)), 0, 1)
    assert psnr(img, ours, data_range=1) > psnr(img, ref, data_range=1) - 0.4


def test_jit_equals_eager_and_sigma_is_traced(camera96):
    noisy = _noisy(camera96[:40, :40], SIGMA)
    eager = np.asarray(bm3d(noisy, sigma=SIGMA))
    jitted = np.asarray(jax.jit(lambda x, s: bm3d(x, sigma=s))(noisy, jnp.float32(SIGMA)))
    np.testing.assert_allclose(jitted, eager, atol=1e-5)
    from imgproc.restoration.block_matching import _bm3d_jit

    before = _bm3d_jit._cache_size()
    bm3d(noisy, sigma=0.05)
    assert _bm3d_jit._cache_size() == before  # a new sigma does not recompile


def test_batch_equals_loop_nhwc_and_nchw():
    rng = np.random.default_rng(3)
    batch = rng.random((2, 20, 24, 3)).astype(np.float32)
    out = np.asarray(bm3d(batch, sigma=0.1))
    loop = np.stack([np.asarray(bm3d(im, sigma=0.1)) for im in batch])
    np.testing.assert_allclose(out, loop, atol=1e-5)
    nchw = np.asarray(bm3d(batch.transpose(0, 3, 1, 2), sigma=0.1, layout="NCHW"))
    np.testing.assert_allclose(nchw.transpose(0, 2, 3, 1), out, atol=1e-5)
    chw = np.asarray(bm3d(batch[0].transpose(2, 0, 1), sigma=0.1, layout="CHW"))
    np.testing.assert_allclose(chw.transpose(1, 2, 0), out[0], atol=1e-5)


def test_flat_image_unchanged():
    flat = np.full((30, 33, 3), 0.4, np.float32)  # sigma estimated: about 0
    np.testing.assert_allclose(np.asarray(bm3d(flat)), flat, atol=1e-5)
    flat8 = np.full((17, 9), 200, np.uint8)
    np.testing.assert_array_equal(np.asarray(bm3d(flat8, sigma=20)), flat8)
    # cval is in image units, also through the colour transform
    out = bm3d(flat, sigma=0.1, mode="constant", cval=0.4)
    np.testing.assert_allclose(np.asarray(out), flat, atol=1e-5)


def test_sigma_zero_is_identity():
    rng = np.random.default_rng(4)
    img8 = rng.integers(0, 256, (17, 9), dtype=np.uint8)
    np.testing.assert_array_equal(np.asarray(bm3d(img8, sigma=0)), img8)
    img = rng.random((24, 24)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(bm3d(img, sigma=0.0)), img, atol=1e-5)


@pytest.mark.parametrize("dtype,scale", [(np.uint8, 255), (np.uint16, 65535), (np.float32, 1.0)])
def test_dtypes_share_one_result(camera96, dtype, scale):
    clean = camera96[:24, :24]
    noisy = np.clip(_noisy(clean, SIGMA), 0, 1)
    x = (noisy * scale).round().astype(dtype) if dtype != np.float32 else noisy
    out = bm3d(x, sigma=SIGMA * scale)
    assert out.dtype == dtype and out.shape == x.shape
    as_float = np.asarray(out, np.float64) / scale
    ref = np.asarray(bm3d(x.astype(np.float32) / scale, sigma=SIGMA), np.float64)
    assert np.abs(as_float - ref).max() <= (1.0 / scale if scale > 1 else 1e-6) + 1e-5


@pytest.mark.parametrize("shape,mode", [((1, 1), "reflect"), ((1, 1, 3), "nearest"), ((3, 5), "mirror"),
                                        ((7, 2, 3), "wrap"), ((9, 30), "constant")])
def test_tiny_images_and_modes(shape, mode):
    rng = np.random.default_rng(5)
    img = rng.random(shape).astype(np.float32)
    out = np.asarray(bm3d(img, sigma=0.05, mode=mode, search_size=7, group_size=(4, 8)))
    assert out.shape == img.shape and np.all(np.isfinite(out))


@pytest.mark.parametrize("max_value", [None, 0.7])
def test_alpha_channel_is_carried_over(max_value):
    """Bit for bit: the alpha is taken from the input, not through the 0..255 scale and back
    (``x * s / s`` differs from ``x`` in the last place for 17 % of float32 values when
    ``s = 255 / 0.7``, and for most values on a GPU, which divides by multiplying)."""
    rng = np.random.default_rng(6)
    img = rng.random((20, 20, 4)).astype(np.float32) * (max_value or 1.0)
    out = np.asarray(bm3d(img, sigma=0.1 * (max_value or 1.0), max_value=max_value))
    np.testing.assert_array_equal(out[..., 3], img[..., 3])
    parts = np.asarray(bm3d(img, sigma=0.1 * (max_value or 1.0), max_value=max_value, threads=2))
    np.testing.assert_array_equal(parts[..., 3], img[..., 3])


def test_estimate_sigma_matches_skimage(camera96):
    pytest.importorskip("pywt", reason=NO_PYWAVELETS)
    from skimage.restoration import estimate_sigma

    for img in (_noisy(camera96[:33, :40], 0.1), _noisy(data.astronaut()[:31, :30] / 255.0, 0.05)):
        x = img if img.ndim == 3 else img[..., None]
        ref = estimate_sigma(img, channel_axis=-1 if img.ndim == 3 else None, average_sigmas=True)
        np.testing.assert_allclose(float(jax.jit(_estimate_sigma)(jnp.asarray(x))), ref, rtol=1e-4)
    assert float(jax.jit(_estimate_sigma)(jnp.ones((8, 8, 1)))) < 1e-6


def test_bior15_matrix_matches_pywavelets():
    pywt = pytest.importorskip("pywt", reason="PyWavelets is not installed (pip install PyWavelets): the reference transform")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = np.array([np.concatenate(pywt.wavedec(e, "bior1.5", mode="periodization", level=3))
                      for e in np.eye(8)]).T
    np.testing.assert_allclose(_bior15_matrix8(), m / np.linalg.norm(m, axis=1, keepdims=True), atol=1e-12)


@pytest.mark.parametrize("kwargs,match", [
    (dict(sigma=-1.0), "sigma"),
    (dict(sigma=float("nan")), "sigma"),
    (dict(search_size=20), "search_size"),
    (dict(search_size=101), "search_size"),
    (dict(block_size=0), "block_size"),
    (dict(step=9), "step"),
    (dict(stage="wiener"), "'both', 'hard'"),
    (dict(mode="symmetric"), "reflect, mirror, nearest, wrap, constant"),
    (dict(group_size=(16, 24)), "group_size"),
    (dict(search_size=3, group_size=(16, 32)), "group_size"),
    (dict(max_value=0), "max_value"),
    (dict(layout="XYZ"), "layout"),
    (dict(threads=0), "threads"),
    (dict(chunk_refs=0), "chunk_refs"),
])
def test_bad_options_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bm3d(np.zeros((8, 8), np.float32), **kwargs)


def test_chunking_does_not_change_the_result(camera96):
    noisy = _noisy(camera96[:40, :40], SIGMA)
    one = np.asarray(bm3d(noisy, sigma=SIGMA))
    # 12 reference rows in chunks of 5: three chunks, the last with three junk rows
    chunked = np.asarray(bm3d(noisy, sigma=SIGMA, chunk_refs=60))
    np.testing.assert_allclose(chunked, one, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
def test_column_tiles_equal_whole_rows(threads):
    # a reference row of 14 in tiles of 5: three tiles a row, the last with one junk column
    from imgproc.restoration.block_matching import _Plan

    plan = _Plan(40, 30, block=4, step=2, search=5, chunk_refs=5)
    assert (plan.col_chunks, plan.cx, plan.rc, plan.chunks) == (3, 5, 1, 57)
    assert plan.tile(4) == (1, 5) and plan.we >= 30
    assert _Plan(40, 30, block=4, step=2, search=5, chunk_refs=5, parts=2).chunks == 60  # junk row of tiles
    img = np.random.default_rng(9).random((40, 30, 3)).astype(np.float32)
    kw = dict(search_size=5, block_size=4, step=2, group_size=(4, 4))
    whole = np.asarray(bm3d(img, sigma=0.1, chunk_refs=10 ** 6, threads=1, **kw))
    tiled = np.asarray(bm3d(img, sigma=0.1, chunk_refs=5, threads=threads, **kw))
    np.testing.assert_allclose(tiled, whole, atol=1e-5)


def test_default_chunk_holds_about_256_blocks_times_channels_on_cpu():
    from imgproc.restoration.block_matching import _default_chunk_refs

    assert (_default_chunk_refs(1, "cpu"), _default_chunk_refs(3, "cpu")) == (256, 85)
    assert _default_chunk_refs(3, "gpu") == _default_chunk_refs(1, "tpu") == 8192


@pytest.mark.parametrize("stage, rematch", [("both", False), ("both", True), ("hard", False)])
def test_parts_in_threads_equal_one_program(stage, rematch, backend):
    """On CPU an image's references run in parts, in threads (at most one per chunk of
    references); off the CPU in one program, whatever ``threads`` says."""
    rng = np.random.default_rng(7)
    img = rng.random((2, 40, 30, 3)).astype(np.float32)  # a batch: image by image
    kw = dict(search_size=5, block_size=4, step=2, group_size=(4, 4), chunk_refs=56, stage=stage, rematch=rematch)
    from imgproc.restoration.block_matching import _Plan, _parts

    assert _Plan(40, 30, block=4, step=2, search=5, chunk_refs=56).chunks == 5  # 19 reference rows of 14, 4 a chunk
    plan = _Plan(40, 30, block=4, step=2, search=5, chunk_refs=56, parts=3)
    assert (plan.chunks, plan.per_part, plan.rc) == (6, 2, 4)  # 24 rows for 19: the last chunk all junk
    one = np.asarray(bm3d(img, sigma=0.1, threads=1, **kw))
    three = np.asarray(bm3d(img, sigma=0.1, threads=3, **kw))
    np.testing.assert_allclose(three, one, atol=1e-5)
    parts = _parts(jnp.zeros((1, 40, 30, 3)), 40, 30, (("block", 4), ("step", 2), ("search", 5), ("chunk_refs", 56)), 8)
    assert parts == (5 if backend == "cpu" else 1)


def test_parts_are_one_program_under_jit():
    img = np.random.default_rng(8).random((24, 24)).astype(np.float32)
    kw = dict(search_size=5, block_size=4, step=2, group_size=(4, 4), chunk_refs=20)
    np.testing.assert_allclose(np.asarray(jax.jit(lambda x: bm3d(x, sigma=0.1, threads=4, **kw))(img)),
                               np.asarray(bm3d(img, sigma=0.1, threads=1, **kw)), atol=1e-6)


def test_fast_haar_is_the_orthonormal_haar_matrix():
    from imgproc.restoration.block_matching import _haar_fwd, _haar_inv, _haar_matrix

    g = np.random.default_rng(8).random((3, 16, 2, 5)).astype(np.float32)
    spec = np.asarray(_haar_fwd(jnp.asarray(g)))
    m = _haar_matrix(16)
    np.testing.assert_allclose(spec, np.einsum("mn,rnck->rmck", m, g), atol=1e-5)
    np.testing.assert_allclose(np.asarray(_haar_inv(jnp.asarray(spec))), g, atol=1e-5)


def test_spread_weights_equal_the_windows_added_at_each_block():
    # stage sums keep each block's weight at its corner; _spread adds the Kaiser window there
    from imgproc.restoration.block_matching import _kaiser2d, _spread

    rng = np.random.default_rng(9)
    b, h, w = 4, 11, 9
    corners = np.zeros((2, h, w), np.float32)
    corners[:, :h - b + 1, :w - b + 1] = rng.random((2, h - b + 1, w - b + 1))
    want = np.zeros_like(corners)
    win = _kaiser2d(b, 2.0)
    for y in range(h - b + 1):
        for x in range(w - b + 1):
            want[:, y:y + b, x:x + b] += corners[:, y, x][:, None, None] * win
    np.testing.assert_allclose(np.asarray(_spread(jnp.asarray(corners), np.kaiser(b, 2.0))), want, rtol=1e-5, atol=1e-6)
