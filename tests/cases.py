"""The shared table of filter cases: one row per filter, used by every filter test.

Each case gives the call under test and its scipy.ndimage reference on one 2-D float64
channel, plus the properties the filter must have.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np
import scipy.ndimage as ndi

import imgproc
from imgproc import kernels

K53 = np.array(
    [[0.1, -0.2, 0.3], [0.05, 0.5, 0.1], [-0.1, 0.2, 0.05], [0.3, 0.1, -0.2], [0.0, 0.1, 0.2]], np.float32
)


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    call: Callable  # call(image, **options) -> array
    reference: Callable  # reference(plane2d_float64, mode, cval) -> plane
    keeps_mean: bool = False  # a constant image stays constant
    identity_options: dict | None = None  # options that make it the identity
    separable: bool = False  # has a single separable term: every lowering applies
    float_out: bool = False  # float32 out for every input dtype (the derivative filters)


def derivative(name: str, op: str, *args, **options) -> Case:
    """A derivative filter's case: ``imgproc.<op>`` against ``scipy.ndimage.<op>`` with the
    same arguments (float32 out)."""
    return Case(name, lambda x, **o: getattr(imgproc, op)(x, *args, **options, **o),
                lambda p, mode, cval: getattr(ndi, op)(p, *args, **options, mode=mode, cval=cval), float_out=True)


# a weight at the centre plus an asymmetric rank-1 kernel: factor() gives the centre term
# (applied without a pass) and one separable term
K53_CENTRE = np.outer([0.2, -0.1, 0.4, 0.3, 0.1], [0.5, -0.3, 0.2]).astype(np.float32)
K53_CENTRE[2, 1] += 0.7

# 17x17 (289 taps), not separable: "auto" takes the FFT lowering on CPU (FFT_MIN_TAPS)
K17 = (np.random.default_rng(17).random((17, 17)) - 0.3).astype(np.float32) / 40


CASES = [
    Case(
        "correlate",
        lambda x, **o: imgproc.correlate(x, K53, **o),
        lambda p, mode, cval: ndi.correlate(p, K53.astype(np.float64), mode=mode, cval=cval),
    ),
    Case(
        "correlate_centre_plus_rank1",
        lambda x, **o: imgproc.correlate(x, K53_CENTRE, **o),
        lambda p, mode, cval: ndi.correlate(p, K53_CENTRE.astype(np.float64), mode=mode, cval=cval),
    ),
    Case(
        "convolve",
        lambda x, **o: imgproc.convolve(x, K53, **o),
        lambda p, mode, cval: ndi.convolve(p, K53.astype(np.float64), mode=mode, cval=cval),
    ),
    Case(
        "gaussian_blur",
        lambda x, **o: imgproc.gaussian_blur(x, 1.3, **o),
        lambda p, mode, cval: ndi.gaussian_filter(p, 1.3, mode=mode, cval=cval),
        keeps_mean=True,
        separable=True,
    ),
    Case(
        "box_blur",
        lambda x, **o: imgproc.box_blur(x, 5, **o),
        lambda p, mode, cval: ndi.uniform_filter(p, 5, mode=mode, cval=cval),
        keeps_mean=True,
        separable=True,
    ),
    Case(  # scipy's per-axis sigma: (rows, cols)
        "gaussian_blur_per_axis",
        lambda x, **o: imgproc.gaussian_blur(x, (0.8, 2.0), **o),
        lambda p, mode, cval: ndi.gaussian_filter(p, (0.8, 2.0), mode=mode, cval=cval),
        keeps_mean=True,
        separable=True,
    ),
    Case(  # scipy's per-axis size: (height, width)
        "box_blur_per_axis",
        lambda x, **o: imgproc.box_blur(x, (3, 7), **o),
        lambda p, mode, cval: ndi.uniform_filter(p, (3, 7), mode=mode, cval=cval),
        keeps_mean=True,
        separable=True,
    ),
    Case(  # 289 taps: auto's FFT on CPU, kernel larger than the test images
        "correlate_large",
        lambda x, **o: imgproc.correlate(x, K17, **o),
        lambda p, mode, cval: ndi.correlate(p, K17.astype(np.float64), mode=mode, cval=cval),
    ),
    Case(  # 145 taps each way (290 for the two passes): auto's FFT on CPU
        "gaussian_blur_large",
        lambda x, **o: imgproc.gaussian_blur(x, 18.0, **o),
        lambda p, mode, cval: ndi.gaussian_filter(p, 18.0, mode=mode, cval=cval),
        keeps_mean=True,
    ),
    Case(
        "sharpen",
        lambda x, **o: imgproc.sharpen(x, **o),
        lambda p, mode, cval: ndi.correlate(p, kernels.sharpen().astype(np.float64), mode=mode, cval=cval),
        keeps_mean=True,
    ),
    Case(
        "emboss",
        lambda x, **o: imgproc.emboss(x, **o),
        lambda p, mode, cval: ndi.correlate(p, kernels.emboss().astype(np.float64), mode=mode, cval=cval),
        keeps_mean=True,
    ),
    Case(
        "edges",
        lambda x, **o: imgproc.edges(x, **o),
        # 2-D semantics: outside is cval (scipy's sobel pads its intermediate with cval
        # again, which differs only for mode="constant" with cval != 0)
        lambda p, mode, cval: np.hypot(
            ndi.correlate(p, kernels.sobel(0).astype(np.float64), mode=mode, cval=cval),
            ndi.correlate(p, kernels.sobel(1).astype(np.float64), mode=mode, cval=cval),
        ),
    ),
    Case(
        "unsharp_mask",
        lambda x, **o: imgproc.unsharp_mask(x, sigma=1.0, amount=0.7, **o),
        lambda p, mode, cval: p + 0.7 * (p - ndi.gaussian_filter(p, 1.0, mode=mode, cval=cval)),
        keeps_mean=True,
    ),
    Case(  # scipy's gaussian_filter(order=): a derivative along the columns, the dtype kept
        "gaussian_blur_order",
        lambda x, **o: imgproc.gaussian_blur(x, 1.3, order=(0, 1), **o),
        lambda p, mode, cval: ndi.gaussian_filter(p, 1.3, order=(0, 1), mode=mode, cval=cval),
    ),
    Case(  # per-axis sigma and order; with mode="constant" scipy pads each pass's input with cval
        "gaussian_blur_order_per_axis",
        lambda x, **o: imgproc.gaussian_blur(x, (0.8, 2.0), order=(2, 1), **o),
        lambda p, mode, cval: ndi.gaussian_filter(p, (0.8, 2.0), order=(2, 1), mode=mode, cval=cval),
    ),
    derivative("sobel_rows", "sobel", 0),
    # the columns' difference pass runs first in scipy: its border fix is along the rows
    derivative("sobel_cols", "sobel", 1),
    derivative("prewitt_cols", "prewitt", -1),
    derivative("laplace", "laplace"),
    # two separable terms (rows'' and cols'' second derivatives)
    derivative("gaussian_laplace", "gaussian_laplace", 1.4),
    derivative("gaussian_gradient_magnitude", "gaussian_gradient_magnitude", (1.0, 1.6)),
    # a pair sigma (rows, cols) and truncate: radii int(2.5 * 1.6 + 0.5) = 4 and 2
    derivative("gaussian_laplace_per_axis_truncate", "gaussian_laplace", (1.6, 0.8), truncate=2.5),
    # the pair the other way round, and a shorter truncate: radii 2 and 3
    derivative("gaussian_gradient_magnitude_truncate", "gaussian_gradient_magnitude", (0.9, 1.7), truncate=2.0),
    # scipy's -2 names the rows too
    derivative("sobel_rows_axis_minus2", "sobel", -2),
    derivative("prewitt_rows_axis_minus2", "prewitt", -2),
    Case(  # 13 taps: the blur's last pass runs on its own before the combination (keep)
        "unsharp_mask_wide",
        lambda x, **o: imgproc.unsharp_mask(x, sigma=1.5, amount=1.2, **o),
        lambda p, mode, cval: p + 1.2 * (p - ndi.gaussian_filter(p, 1.5, mode=mode, cval=cval)),
        keeps_mean=True,
    ),
]
CASE_IDS = [c.name for c in CASES]

# scipy's grid-* mode names, which its filters compute exactly as these modes
GRID_MODES = {"grid-mirror": "reflect", "grid-wrap": "wrap", "grid-constant": "constant"}


def reference(case: Case, image_hwc: np.ndarray, mode: str, cval: float = 0.0) -> np.ndarray:
    """Apply the case's float64 reference to each channel of an HWC image."""
    x = image_hwc.astype(np.float64)
    return np.stack([case.reference(x[..., c], mode, cval) for c in range(x.shape[-1])], axis=-1)


def to_layout(hwc: np.ndarray, layout: str) -> np.ndarray:
    """An HWC image (or NHWC batch for N-layouts, built from shifted copies) in ``layout``."""
    if layout == "HW":
        return hwc[..., 0]
    if layout == "HWC":
        return hwc
    if layout == "CHW":
        return np.moveaxis(hwc, -1, 0)
    batch = np.stack([hwc, hwc[::-1], hwc[:, ::-1]])
    return batch if layout == "NHWC" else np.moveaxis(batch, -1, 1)


def from_layout(x: np.ndarray, layout: str) -> np.ndarray:
    """Inverse of :func:`to_layout` for results: back to HWC or NHWC."""
    if layout == "HW":
        return x[..., None]
    if layout == "CHW":
        return np.moveaxis(x, 0, -1)
    if layout == "NCHW":
        return np.moveaxis(x, 1, -1)
    return x


# scipy's own cases (scipy/ndimage/tests/test_filters.py: test_sobel01-04, test_prewitt01-04,
# test_laplace01, test_gaussian_laplace01, test_gaussian_gradient_magnitude01, and
# gaussian_filter's order): its 3x5 image, each filter against the definition scipy's test
# checks it with (1-D correlations, Gaussian derivatives), reflect mode. Rows: (name, call,
# image scale, definition(image float64) -> float64). tests/filters/test_filters.py runs them.
SCIPY_IMAGE = np.array([[3, 2, 5, 1, 4], [5, 8, 3, 7, 1], [5, 6, 9, 3, 5]], np.float64)


def _c1(x, w, axis):
    return ndi.correlate1d(x, np.asarray(w, np.float64), axis)


SCIPY_FILTER_CASES = [
    ("sobel01", lambda x: imgproc.sobel(x, 0), 1, lambda a: _c1(_c1(a, [-1, 0, 1], 0), [1, 2, 1], 1)),
    ("sobel03", lambda x: imgproc.sobel(x, 1), 1, lambda a: _c1(_c1(a, [-1, 0, 1], 1), [1, 2, 1], 0)),
    ("sobel04", lambda x: imgproc.sobel(x, -1), 1, lambda a: ndi.sobel(a, 1)),
    ("prewitt01", lambda x: imgproc.prewitt(x, 0), 1, lambda a: _c1(_c1(a, [-1, 0, 1], 0), [1, 1, 1], 1)),
    ("prewitt03", lambda x: imgproc.prewitt(x, 1), 1, lambda a: _c1(_c1(a, [-1, 0, 1], 1), [1, 1, 1], 0)),
    ("prewitt04", lambda x: imgproc.prewitt(x, -1), 1, lambda a: ndi.prewitt(a, 1)),
    ("laplace01", imgproc.laplace, 100, lambda a: _c1(a, [1, -2, 1], 0) + _c1(a, [1, -2, 1], 1)),
    ("gaussian_laplace01", lambda x: imgproc.gaussian_laplace(x, 1.0), 100,
     lambda a: ndi.gaussian_filter(a, 1.0, [2, 0]) + ndi.gaussian_filter(a, 1.0, [0, 2])),
    ("gaussian_gradient_magnitude01", lambda x: imgproc.gaussian_gradient_magnitude(x, 1.0), 100,
     lambda a: np.hypot(ndi.gaussian_filter(a, 1.0, [1, 0]), ndi.gaussian_filter(a, 1.0, [0, 1]))),
    ("gauss01_sigma0", lambda x: imgproc.gaussian_blur(x, 0.0), 1, lambda a: a),
    ("gauss05_order1", lambda x: imgproc.gaussian_blur(x, 1.0, order=1), 1, lambda a: ndi.gaussian_filter(a, 1.0, 1)),
    ("gauss06_per_axis_sigma", lambda x: imgproc.gaussian_blur(x, (1.0, 1.0)), 1, lambda a: ndi.gaussian_filter(a, 1.0)),
    ("orders_gauss_order3", lambda x: imgproc.gaussian_blur(x, 1.0, order=(3, 0)), 1,
     lambda a: ndi.gaussian_filter(a, 1.0, (3, 0))),
]
