import numpy as np
import pytest
import scipy.ndimage as ndi

from imgproc import kernels

SEED_GAUSS = np.array(
    [
        [0.00291502, 0.01306424, 0.02153928, 0.01306424, 0.00291502],
        [0.01306424, 0.05854984, 0.09653235, 0.05854984, 0.01306424],
        [0.02153928, 0.09653235, 0.15915494, 0.09653235, 0.02153928],
        [0.01306424, 0.05854984, 0.09653235, 0.05854984, 0.01306424],
        [0.00291502, 0.01306424, 0.02153928, 0.01306424, 0.00291502],
    ],
    np.float32,
)


def test_seed_gaussian_table_reproduced():
    k = kernels.gaussian(1.0, size=5, normalize=False)
    assert k.dtype == np.float32
    np.testing.assert_allclose(k, SEED_GAUSS, atol=1e-8, rtol=0)  # printed to 8 decimals
    assert abs(k[2, 2] - 0.15915494) < 5e-9  # the chapter prints 8 decimals


def test_seed_sharpen_matrix_reproduced():
    k = kernels.sharpen()
    expected = np.full((5, 5), -1.0, np.float32)
    expected[2, 2] = 50
    expected /= expected.sum()
    np.testing.assert_array_equal(k, expected)
    assert abs(k[2, 2] - 1.923077) < 5e-7 and abs(k[0, 0] + 0.03846154) < 5e-9  # as printed
    assert abs(float(k.sum()) - 1) < 1e-6


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.3, 4.0])
def test_gaussian_1d_matches_scipy(sigma):
    k = kernels.gaussian_1d(sigma)
    impulse = np.zeros(2 * len(k) + 1)
    impulse[len(k)] = 1
    ref = ndi.gaussian_filter1d(impulse, sigma)[len(k) - len(k) // 2 : len(k) + len(k) // 2 + 1]
    np.testing.assert_allclose(k, ref, atol=1e-7)
    assert len(k) == 2 * int(4 * sigma + 0.5) + 1


def test_gaussian_normalised_and_separable():
    k = kernels.gaussian(1.5)
    assert abs(float(k.sum()) - 1) < 1e-6
    assert len(kernels.factor(k)) == 1
    assert kernels.gaussian_1d(0.0).tolist() == [1.0]


def test_box_identity_and_zero_sum_kernels():
    assert np.allclose(kernels.box(5), 1 / 25)
    assert kernels.identity(3).sum() == 1 and kernels.identity(3)[1, 1] == 1
    for k in (kernels.laplacian(), kernels.sobel(0), kernels.sobel(1)):
        assert k.sum() == 0
    assert kernels.emboss().sum() == 1


def test_sobel_matches_scipy():
    x = np.random.default_rng(0).random((9, 11))
    for axis in (0, 1):
        np.testing.assert_allclose(ndi.correlate(x, kernels.sobel(axis).astype(float)), ndi.sobel(x, axis), atol=1e-12)
    np.testing.assert_allclose(ndi.correlate(x, kernels.laplacian().astype(float)), ndi.laplace(x), atol=1e-12)


def test_combine_equals_applying_in_turn():
    x = np.random.default_rng(1).random((20, 24))
    a, b = kernels.gaussian(1.0, size=5), kernels.sharpen()
    both = kernels.combine(a, b)
    assert both.shape == (9, 9)
    seq = ndi.correlate(ndi.correlate(x, a.astype(float), mode="wrap"), b.astype(float), mode="wrap")
    np.testing.assert_allclose(ndi.correlate(x, both.astype(float), mode="wrap"), seq, atol=1e-6)
    np.testing.assert_allclose(kernels.combine(kernels.emboss()), kernels.emboss())


def test_factor_ranks():
    assert len(kernels.factor(kernels.box(3))) == 1
    assert len(kernels.factor(kernels.sharpen())) == 2
    terms = kernels.factor(kernels.emboss())
    np.testing.assert_allclose(sum(np.outer(c, r) for c, r in terms), kernels.emboss(), atol=1e-6)


def _plus_centre(k, w):
    k = np.array(k, np.float64)
    k[k.shape[0] // 2, k.shape[1] // 2] += w
    return k


@pytest.mark.parametrize("kernel", [kernels.sharpen(3), kernels.sharpen(5), kernels.sharpen(7, center=60.0),
                                    _plus_centre(np.outer([1.0, -2.0, 0.5], [0.3, 0.1, 0.2, 0.4, -0.1]), 5.0),
                                    _plus_centre(np.outer([0.5, 0.0, 2.0], [1.0, 1.0, 0.0]), -3.0)])
def test_factor_centre_plus_rank1(kernel):
    """A weight at the centre plus a rank-1 kernel factors as those two terms, the centre
    term first: zero but at index size // 2 of both axes (the filters apply it without a pass)."""
    kernel = np.asarray(kernel, np.float32)
    (cc, cr), (col, row) = kernels.factor(kernel)
    assert np.count_nonzero(cc) == 1 and cc[len(cc) // 2] != 0
    assert np.count_nonzero(cr) == 1 and cr[len(cr) // 2] != 0
    np.testing.assert_allclose(np.outer(cc, cr) + np.outer(col, row), kernel, atol=1e-6)
    assert np.linalg.matrix_rank(np.outer(col, row).astype(np.float64), tol=1e-5) == 1


def test_factor_keeps_svd_terms_without_a_centre_plus_rank1_form():
    laplace = np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], np.float32)  # rank 2, off-centre taps on the cross only
    two = np.outer([1.0, 2.0, 3.0], [1.0, 0.0, 1.0]) + np.outer([0.0, 1.0, -1.0], [2.0, 1.0, 0.5])
    for k in (laplace, two.astype(np.float32)):
        terms = kernels.factor(k)
        assert len(terms) == 2 and all(np.count_nonzero(c) > 1 for c, r in terms)
        np.testing.assert_allclose(sum(np.outer(c, r) for c, r in terms), k, atol=1e-5)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: kernels.box(4), "odd integer"),
        (lambda: kernels.box(0), "odd integer"),
        (lambda: kernels.gaussian(-1.0), r"sigma must be a finite number in \[0, inf\)"),
        (lambda: kernels.gaussian(float("nan")), "sigma must be a finite number"),
        (lambda: kernels.gaussian(0.0, normalize=False), "sigma must be > 0"),
        (lambda: kernels.gaussian_1d(1.0, truncate=0), "truncate must be"),
        (lambda: kernels.sharpen(5, center=10), "center must be"),
        (lambda: kernels.sobel(2), "axis must be 0"),
        (lambda: kernels.combine(), "at least one"),
        (lambda: kernels.combine(np.ones((2, 2))), "odd sides"),
    ],
)
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.3])
@pytest.mark.parametrize("order", [0, 1, 2, 3])
def test_gaussian_derivative_weights_are_scipys(sigma, order):
    w = kernels.gaussian_derivative_1d(sigma, order)
    r = w.size // 2
    impulse = np.zeros(2 * r + 1)
    impulse[r] = 1.0  # correlating an impulse with w gives w reversed
    ref = ndi.gaussian_filter1d(impulse, sigma, order=order, mode="constant")[::-1]
    assert w.dtype == np.float32
    np.testing.assert_allclose(w, ref, rtol=0, atol=1e-7)
    assert kernels.gaussian_derivative_1d(0.0, order).tolist() == [1.0]  # sigma 0: the axis is skipped


def test_prewitt_kernel_is_scipys():
    x = np.random.default_rng(0).random((7, 8))
    for axis in (0, 1):
        np.testing.assert_allclose(ndi.correlate(x, kernels.prewitt(axis).astype(np.float64), mode="nearest"),
                                   ndi.prewitt(x, axis, mode="nearest"), atol=1e-12)
    with pytest.raises(ValueError, match="axis must be 0"):
        kernels.prewitt(2)
