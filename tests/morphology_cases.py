"""The shared table of morphology cases: each op with its scipy.ndimage reference, and the
structuring elements every case runs with (tests/filters/test_morphology.py)."""

from __future__ import annotations

import numpy as np
import scipy.ndimage as ndi

from imgproc.filters.morphology import CROSS, footprint_array

# op name -> scipy.ndimage's function
GREY = {
    "erosion": ndi.grey_erosion,
    "dilation": ndi.grey_dilation,
    "opening": ndi.grey_opening,
    "closing": ndi.grey_closing,
    "white_tophat": ndi.white_tophat,
    "black_tophat": ndi.black_tophat,
    "morphological_gradient": ndi.morphological_gradient,
}
BINARY = {name: getattr(ndi, name) for name in ("binary_erosion", "binary_dilation", "binary_opening",
                                                 "binary_closing")}

# structuring elements: imgproc's options; scipy gets footprint_array() of them
FOOTPRINTS = {
    "square3": {"size": 3},
    "rect2x5": {"size": (2, 5)},  # an even side: scipy's placement (and reflection for dilation)
    "disk5": {"footprint": "disk", "size": 5},
    "cross": {"footprint": "cross"},
    "asymmetric": {"footprint": [[1, 0, 0, 1], [0, 0, 1, 1], [1, 1, 0, 0]]},  # off-centre, not symmetric
    # its centre left out: erosion and dilation (reflected) take disjoint sets, so the
    # gradient can be negative anywhere (an integer one saturates at 0)
    "no_centre": {"footprint": [[1, 1, 0], [0, 0, 1]]},
}


def scipy_footprint(options) -> np.ndarray:
    if not options:
        return CROSS
    return footprint_array(options.get("size"), options.get("footprint"))


def grey_reference(name, plane, options, mode, cval=0.0):
    """scipy's result on one 2-D plane; an integer difference (top-hat, gradient) saturated
    at 0 where scipy's unsigned difference wraps around (imgproc's rule: integers saturate)."""
    fp = scipy_footprint(options)
    if np.issubdtype(plane.dtype, np.integer) and name in ("white_tophat", "black_tophat", "morphological_gradient"):
        info = np.iinfo(plane.dtype)
        wide = GREY[name](plane.astype(np.float64), footprint=fp, mode=mode, cval=cval)
        return np.clip(wide, info.min, info.max).astype(plane.dtype)
    return GREY[name](plane, footprint=fp, mode=mode, cval=cval)


def per_plane(fn, hwc):
    """``fn`` on each channel of an HWC image, stacked back."""
    return np.stack([fn(hwc[..., c]) for c in range(hwc.shape[-1])], axis=-1)


# scipy's own cases (scipy/ndimage/tests/test_morphology.py: test_grey_erosion01,
# test_grey_dilation01 with their literal results; test_grey_opening01, test_grey_closing01,
# test_morphological_gradient02, test_white_tophat02, test_black_tophat02 against the
# compositions they check): its 3x5 image and off-centre 2x3 footprints, scipy's default mode
# (reflect). Rows: (name, op, footprint, expected: an array, or a function of the image).
# Cases with a non-flat ``structure`` have no counterpart (imgproc's footprints are flat).
SCIPY_IMAGE = np.array([[3, 2, 5, 1, 4], [7, 6, 9, 3, 5], [5, 8, 3, 7, 1]], np.uint8)
_FP_E = [[1, 0, 1], [1, 1, 0]]
_FP_D = [[0, 1, 1], [1, 0, 1]]
SCIPY_MORPHOLOGY_CASES = [
    ("grey_erosion01", "erosion", _FP_E, np.array([[2, 2, 1, 1, 1], [2, 3, 1, 3, 1], [5, 5, 3, 3, 1]])),
    ("grey_dilation01", "dilation", _FP_D, np.array([[7, 7, 9, 9, 5], [7, 9, 8, 9, 7], [8, 8, 8, 7, 7]])),
    ("grey_opening01", "opening", _FP_E,
     lambda a: ndi.grey_dilation(ndi.grey_erosion(a, footprint=_FP_E), footprint=_FP_E)),
    ("grey_closing01", "closing", _FP_E,
     lambda a: ndi.grey_erosion(ndi.grey_dilation(a, footprint=_FP_E), footprint=_FP_E)),
    ("morphological_gradient02", "morphological_gradient", _FP_E,
     lambda a: ndi.grey_dilation(a, footprint=_FP_E) - ndi.grey_erosion(a, footprint=_FP_E)),
    ("white_tophat02", "white_tophat", _FP_E, lambda a: a - ndi.grey_opening(a, footprint=_FP_E)),
    ("black_tophat02", "black_tophat", _FP_E, lambda a: ndi.grey_closing(a, footprint=_FP_E) - a),
]


# scipy's own binary cases (scipy/ndimage/tests/test_morphology.py, TestNdimageMorphology):
# (name, op, options, image, expected), the arrays copied from scipy's test as written.
# options are imgproc's; scipy's ``structure`` is ``footprint`` (its
# generate_binary_structure(2, 2) is ``size=3``); no footprint is scipy's default, the 3x3 cross.
# Where scipy's test loops over dtypes the image is bool; one case per op keeps scipy's uint8
# data (0/1) to check the result is 255 where set (test_scipys_own_binary_cases also runs it
# as bool). Tests that differ from another only by an ``output=`` array (imgproc returns a
# new array) are left out: erosion28/30/32 and dilation30/32 are 27/29/27 and 29/31.
# erosion39/40 pass ``iterations`` as np.int32/np.int64, as scipy's do.
# 1-D cases (erosion03-11, 14; dilation03-09, 12, 13) run as 1xN images with the 1-D
# structure as one row (scipy's 1-D default is generate_binary_structure(1, 1) = [1, 1, 1]:
# ``footprint=[[1, 1, 1]]``), which gives scipy's 1-D result exactly (the test checks that
# scipy gives it on the 1xN image too); without that row footprint a 1xN image would meet
# the 2-D cross, whose vertical neighbours are all border (erosion05 [0, 1, 0] vs erosion18).
# Left out (no counterpart in imgproc, or nothing literal to compare):
#   0-D data: erosion01, 02, dilation01, 02, dilation36 (which also has iterations=-1);
#   origin != 0: erosion12, 13, 15, 26, 31; dilation10, 11, 14, 15, 24, 25;
#   mask: erosion33 (and iterations=-1), 34, 35 (and origin), 36 (and origin);
#   dilation33, 34 (both iterations=-1), 35 (and origin);
#   iterations < 1 with brute_force: erosion37 (iterations=0);
#   a TypeError for a float ``iterations``/``brute_force``, on 1-D data, no literal result:
#   erosion38, test_binary_{erosion,dilation,opening,closing}_noninteger_iterations,
#   test_binary_closing_noninteger_brute_force_passes_when_true;
#   test_binary_axes (3-D data, axes=, origin), test_binary_input_as_output (1-D random data,
#   output=, brute_force), TestDilateFix (grey against binary dilation, no literal),
#   TestBinaryOpeningClosing (scipy's positional arguments old and new, no literal).


def _b(rows, dtype=bool):
    return np.asarray(rows, dtype)


_ROW3 = [[1, 1, 1]]  # scipy's 1-D default structure, as one row
_CROSS = [[0, 1, 0], [1, 1, 1], [0, 1, 0]]
_RING = [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
_CORNER = [[0, 1], [1, 1]]
_E_DATA = [[0, 0, 0, 0, 0, 0, 0, 0],  # erosion22-24
           [0, 1, 0, 0, 0, 0, 0, 0],
           [0, 0, 0, 0, 0, 1, 1, 1],
           [0, 0, 1, 1, 1, 1, 1, 1],
           [0, 0, 1, 1, 1, 1, 0, 0],
           [0, 1, 1, 1, 1, 1, 1, 0],
           [0, 1, 1, 0, 0, 1, 1, 0],
           [0, 0, 0, 0, 0, 0, 0, 0]]
_E_RING_DATA = [[0, 0, 0, 0, 0, 0, 0, 0],  # erosion25
                [0, 1, 0, 0, 0, 0, 0, 0],
                [0, 0, 0, 0, 0, 1, 1, 1],
                [0, 0, 1, 1, 1, 0, 1, 1],
                [0, 0, 1, 0, 1, 1, 0, 0],
                [0, 1, 0, 1, 1, 1, 1, 0],
                [0, 1, 1, 0, 0, 1, 1, 0],
                [0, 0, 0, 0, 0, 0, 0, 0]]
_E_IT2_DATA = [[0, 0, 0, 0, 0, 0, 0],  # erosion27, 28, 32
               [0, 0, 0, 1, 0, 0, 0],
               [0, 0, 1, 1, 1, 0, 0],
               [0, 1, 1, 1, 1, 1, 0],
               [0, 0, 1, 1, 1, 0, 0],
               [0, 0, 0, 1, 0, 0, 0],
               [0, 0, 0, 0, 0, 0, 0]]
_E_IT3_DATA = [[0, 0, 0, 1, 0, 0, 0],  # erosion29, 30, 39, 40
               [0, 0, 1, 1, 1, 0, 0],
               [0, 1, 1, 1, 1, 1, 0],
               [1, 1, 1, 1, 1, 1, 1],
               [0, 1, 1, 1, 1, 1, 0],
               [0, 0, 1, 1, 1, 0, 0],
               [0, 0, 0, 1, 0, 0, 0]]
_E_CENTRE = [[0, 0, 0, 0, 0, 0, 0],  # erosion27-30, 32, 39, 40's expected
             [0, 0, 0, 0, 0, 0, 0],
             [0, 0, 0, 0, 0, 0, 0],
             [0, 0, 0, 1, 0, 0, 0],
             [0, 0, 0, 0, 0, 0, 0],
             [0, 0, 0, 0, 0, 0, 0],
             [0, 0, 0, 0, 0, 0, 0]]
_D_DATA = [[0, 0, 0, 0, 0, 0, 0, 0],  # dilation22, 23, 26, 27
           [0, 1, 0, 0, 0, 0, 0, 0],
           [0, 0, 0, 0, 0, 0, 0, 0],
           [0, 0, 0, 0, 0, 1, 0, 0],
           [0, 0, 0, 1, 1, 0, 0, 0],
           [0, 0, 1, 0, 0, 1, 0, 0],
           [0, 0, 0, 0, 0, 0, 0, 0],
           [0, 0, 0, 0, 0, 0, 0, 0]]
_D_IT_DATA = [[0, 0, 0, 0, 0],  # dilation29-32
              [0, 0, 0, 0, 0],
              [0, 0, 0, 0, 0],
              [0, 0, 0, 1, 0],
              [0, 0, 0, 0, 0]]
_D_IT2 = [[0, 0, 0, 0, 0],  # dilation29, 30's expected
          [0, 0, 0, 1, 0],
          [0, 0, 1, 1, 0],
          [0, 1, 1, 1, 0],
          [0, 0, 0, 0, 0]]
_D_IT3 = [[0, 0, 0, 1, 0],  # dilation31, 32's expected
          [0, 0, 1, 1, 0],
          [0, 1, 1, 1, 0],
          [1, 1, 1, 1, 0],
          [0, 0, 0, 0, 0]]
_OC1_DATA = [[0, 1, 0, 0, 0, 0, 0, 0],  # opening01, closing01
             [1, 1, 1, 0, 0, 0, 0, 0],
             [0, 1, 0, 0, 0, 1, 0, 0],
             [0, 0, 0, 1, 1, 1, 1, 0],
             [0, 0, 1, 1, 0, 1, 0, 0],
             [0, 1, 1, 1, 1, 1, 1, 0],
             [0, 0, 1, 0, 0, 1, 0, 0],
             [0, 0, 0, 0, 0, 0, 0, 0]]
_OC2_DATA = [[1, 1, 1, 0, 0, 0, 0, 0],  # opening02, closing02
             [1, 1, 1, 0, 0, 0, 0, 0],
             [1, 1, 1, 1, 1, 1, 1, 0],
             [0, 0, 1, 1, 1, 1, 1, 0],
             [0, 1, 1, 1, 0, 1, 1, 0],
             [0, 1, 1, 1, 1, 1, 1, 0],
             [0, 1, 1, 1, 1, 1, 1, 0],
             [0, 0, 0, 0, 0, 0, 0, 0]]

SCIPY_BINARY_CASES = [
    # binary_erosion: 1-D data as one row
    ("binary_erosion03", "binary_erosion", {"footprint": _ROW3}, np.ones((1, 1), bool), _b([[0]])),
    ("binary_erosion04", "binary_erosion", {"footprint": _ROW3, "border_value": 1}, np.ones((1, 1), bool),
     _b([[1]])),
    ("binary_erosion05", "binary_erosion", {"footprint": _ROW3}, np.ones((1, 3), bool), _b([[0, 1, 0]])),
    ("binary_erosion05_broadcasted", "binary_erosion", {"footprint": _ROW3},
     np.broadcast_to(np.ones((1, 1), bool), (1, 3)), _b([[0, 1, 0]])),
    ("binary_erosion06", "binary_erosion", {"footprint": _ROW3, "border_value": 1}, np.ones((1, 3), bool),
     _b([[1, 1, 1]])),
    ("binary_erosion07", "binary_erosion", {"footprint": _ROW3}, np.ones((1, 5), bool), _b([[0, 1, 1, 1, 0]])),
    ("binary_erosion08", "binary_erosion", {"footprint": _ROW3, "border_value": 1}, np.ones((1, 5), bool),
     _b([[1, 1, 1, 1, 1]])),
    ("binary_erosion09", "binary_erosion", {"footprint": _ROW3}, _b([[1, 1, 0, 1, 1]]), _b([[0, 0, 0, 0, 0]])),
    ("binary_erosion10", "binary_erosion", {"footprint": _ROW3, "border_value": 1}, _b([[1, 1, 0, 1, 1]]),
     _b([[1, 0, 0, 0, 1]])),
    ("binary_erosion11", "binary_erosion", {"footprint": [[1, 0, 1]], "border_value": 1}, _b([[1, 1, 0, 1, 1]]),
     _b([[1, 0, 1, 0, 1]])),
    ("binary_erosion14", "binary_erosion", {"footprint": [[1, 1]], "border_value": 1}, _b([[1, 1, 0, 1, 1]]),
     _b([[1, 1, 0, 0, 1]])),
    # binary_erosion: 2-D data
    ("binary_erosion16", "binary_erosion", {"border_value": 1}, np.ones((1, 1), bool), _b([[1]])),
    ("binary_erosion17", "binary_erosion", {}, np.ones((1, 1), bool), _b([[0]])),
    ("binary_erosion18", "binary_erosion", {}, np.ones((1, 3), bool), _b([[0, 0, 0]])),
    ("binary_erosion19", "binary_erosion", {"border_value": 1}, np.ones((1, 3), bool), _b([[1, 1, 1]])),
    ("binary_erosion20", "binary_erosion", {}, np.ones((3, 3), bool),
     _b([[0, 0, 0],
         [0, 1, 0],
         [0, 0, 0]])),
    ("binary_erosion21", "binary_erosion", {"border_value": 1}, np.ones((3, 3), bool),
     _b([[1, 1, 1],
         [1, 1, 1],
         [1, 1, 1]])),
    ("binary_erosion22", "binary_erosion", {"border_value": 1}, _b(_E_DATA, np.uint8),
     _b([[0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 1, 0, 0],
         [0, 0, 0, 1, 1, 0, 0, 0],
         [0, 0, 1, 0, 0, 1, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0]])),
    ("binary_erosion23", "binary_erosion", {"size": 3, "border_value": 1}, _b(_E_DATA),
     _b([[0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 1, 1, 0, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0]])),
    ("binary_erosion24", "binary_erosion", {"footprint": _CORNER, "border_value": 1}, _b(_E_DATA),
     _b([[0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 1, 1, 1],
         [0, 0, 0, 1, 1, 1, 0, 0],
         [0, 0, 1, 1, 1, 1, 0, 0],
         [0, 0, 1, 0, 0, 0, 1, 0],
         [0, 0, 0, 0, 0, 0, 0, 0]])),
    ("binary_erosion25", "binary_erosion", {"footprint": _RING, "border_value": 1}, _b(_E_RING_DATA),
     _b([[0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 1, 0, 0],
         [0, 0, 0, 1, 0, 0, 0, 0],
         [0, 0, 1, 0, 0, 1, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0]])),
    ("binary_erosion27", "binary_erosion", {"footprint": _CROSS, "border_value": 1, "iterations": 2},
     _b(_E_IT2_DATA), _b(_E_CENTRE)),
    ("binary_erosion29", "binary_erosion", {"footprint": _CROSS, "border_value": 1, "iterations": 3},
     _b(_E_IT3_DATA), _b(_E_CENTRE)),
    ("binary_erosion39", "binary_erosion", {"footprint": _CROSS, "border_value": 1, "iterations": np.int32(3)},
     _b(_E_IT3_DATA), _b(_E_CENTRE)),
    ("binary_erosion40", "binary_erosion", {"footprint": _CROSS, "border_value": 1, "iterations": np.int64(3)},
     _b(_E_IT3_DATA), _b(_E_CENTRE)),
    # binary_dilation: 1-D data as one row
    ("binary_dilation03", "binary_dilation", {"footprint": _ROW3}, np.ones((1, 1), bool), _b([[1]])),
    ("binary_dilation04", "binary_dilation", {"footprint": _ROW3}, np.zeros((1, 1), bool), _b([[0]])),
    ("binary_dilation05", "binary_dilation", {"footprint": _ROW3}, np.ones((1, 3), bool), _b([[1, 1, 1]])),
    ("binary_dilation05_broadcasted", "binary_dilation", {"footprint": _ROW3},
     np.broadcast_to(np.ones((1, 1), bool), (1, 3)), _b([[1, 1, 1]])),
    ("binary_dilation06", "binary_dilation", {"footprint": _ROW3}, np.zeros((1, 3), bool), _b([[0, 0, 0]])),
    ("binary_dilation07", "binary_dilation", {"footprint": _ROW3}, _b([[0, 1, 0]]), _b([[1, 1, 1]])),
    ("binary_dilation08", "binary_dilation", {"footprint": _ROW3}, _b([[0, 1, 0, 1, 0]]), _b([[1, 1, 1, 1, 1]])),
    ("binary_dilation09", "binary_dilation", {"footprint": _ROW3}, _b([[0, 1, 0, 0, 0]]), _b([[1, 1, 1, 0, 0]])),
    ("binary_dilation12", "binary_dilation", {"footprint": [[1, 0, 1]]}, _b([[0, 1, 0, 0, 0]]),
     _b([[1, 0, 1, 0, 0]])),
    ("binary_dilation13", "binary_dilation", {"footprint": [[1, 0, 1]], "border_value": 1},
     _b([[0, 1, 0, 0, 0]]), _b([[1, 0, 1, 0, 1]])),
    # binary_dilation: 2-D data
    ("binary_dilation16", "binary_dilation", {}, np.ones((1, 1), bool), _b([[1]])),
    ("binary_dilation17", "binary_dilation", {}, np.zeros((1, 1), bool), _b([[0]])),
    ("binary_dilation18", "binary_dilation", {}, np.ones((1, 3), bool), _b([[1, 1, 1]])),
    ("binary_dilation19", "binary_dilation", {}, np.ones((3, 3), bool),
     _b([[1, 1, 1],
         [1, 1, 1],
         [1, 1, 1]])),
    ("binary_dilation20", "binary_dilation", {}, _b([[0, 0, 0], [0, 1, 0], [0, 0, 0]]),
     _b([[0, 1, 0],
         [1, 1, 1],
         [0, 1, 0]])),
    ("binary_dilation21", "binary_dilation", {"size": 3}, _b([[0, 0, 0], [0, 1, 0], [0, 0, 0]]),
     _b([[1, 1, 1],
         [1, 1, 1],
         [1, 1, 1]])),
    ("binary_dilation22", "binary_dilation", {}, _b(_D_DATA, np.uint8),
     _b([[0, 1, 0, 0, 0, 0, 0, 0],
         [1, 1, 1, 0, 0, 0, 0, 0],
         [0, 1, 0, 0, 0, 1, 0, 0],
         [0, 0, 0, 1, 1, 1, 1, 0],
         [0, 0, 1, 1, 1, 1, 0, 0],
         [0, 1, 1, 1, 1, 1, 1, 0],
         [0, 0, 1, 0, 0, 1, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0]])),
    ("binary_dilation23", "binary_dilation", {"border_value": 1}, _b(_D_DATA),
     _b([[1, 1, 1, 1, 1, 1, 1, 1],
         [1, 1, 1, 0, 0, 0, 0, 1],
         [1, 1, 0, 0, 0, 1, 0, 1],
         [1, 0, 0, 1, 1, 1, 1, 1],
         [1, 0, 1, 1, 1, 1, 0, 1],
         [1, 1, 1, 1, 1, 1, 1, 1],
         [1, 0, 1, 0, 0, 1, 0, 1],
         [1, 1, 1, 1, 1, 1, 1, 1]])),
    ("binary_dilation26", "binary_dilation", {"size": 3}, _b(_D_DATA),
     _b([[1, 1, 1, 0, 0, 0, 0, 0],
         [1, 1, 1, 0, 0, 0, 0, 0],
         [1, 1, 1, 0, 1, 1, 1, 0],
         [0, 0, 1, 1, 1, 1, 1, 0],
         [0, 1, 1, 1, 1, 1, 1, 0],
         [0, 1, 1, 1, 1, 1, 1, 0],
         [0, 1, 1, 1, 1, 1, 1, 0],
         [0, 0, 0, 0, 0, 0, 0, 0]])),
    ("binary_dilation27", "binary_dilation", {"footprint": _CORNER}, _b(_D_DATA),
     _b([[0, 1, 0, 0, 0, 0, 0, 0],
         [1, 1, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 1, 0, 0],
         [0, 0, 0, 1, 1, 1, 0, 0],
         [0, 0, 1, 1, 1, 1, 0, 0],
         [0, 1, 1, 0, 1, 1, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0]])),
    ("binary_dilation28", "binary_dilation", {"border_value": 1}, np.zeros((4, 4), bool),
     _b([[1, 1, 1, 1],
         [1, 0, 0, 1],
         [1, 0, 0, 1],
         [1, 1, 1, 1]])),
    ("binary_dilation29", "binary_dilation", {"footprint": _CORNER, "iterations": 2}, _b(_D_IT_DATA), _b(_D_IT2)),
    ("binary_dilation31", "binary_dilation", {"footprint": _CORNER, "iterations": 3}, _b(_D_IT_DATA), _b(_D_IT3)),
    # binary_opening, binary_closing
    ("binary_opening01", "binary_opening", {}, _b(_OC1_DATA, np.uint8),
     _b([[0, 1, 0, 0, 0, 0, 0, 0],
         [1, 1, 1, 0, 0, 0, 0, 0],
         [0, 1, 0, 0, 0, 1, 0, 0],
         [0, 0, 0, 0, 1, 1, 1, 0],
         [0, 0, 1, 0, 0, 1, 0, 0],
         [0, 1, 1, 1, 1, 1, 1, 0],
         [0, 0, 1, 0, 0, 1, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0]])),
    ("binary_opening02", "binary_opening", {"size": 3}, _b(_OC2_DATA),
     _b([[1, 1, 1, 0, 0, 0, 0, 0],
         [1, 1, 1, 0, 0, 0, 0, 0],
         [1, 1, 1, 0, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0],
         [0, 1, 1, 1, 0, 0, 0, 0],
         [0, 1, 1, 1, 0, 0, 0, 0],
         [0, 1, 1, 1, 0, 0, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0]])),
    ("binary_closing01", "binary_closing", {}, _b(_OC1_DATA, np.uint8),
     _b([[0, 0, 0, 0, 0, 0, 0, 0],
         [0, 1, 1, 0, 0, 0, 0, 0],
         [0, 1, 1, 1, 0, 1, 0, 0],
         [0, 0, 1, 1, 1, 1, 1, 0],
         [0, 0, 1, 1, 1, 1, 0, 0],
         [0, 1, 1, 1, 1, 1, 1, 0],
         [0, 0, 1, 0, 0, 1, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0]])),
    ("binary_closing02", "binary_closing", {"size": 3}, _b(_OC2_DATA),
     _b([[0, 0, 0, 0, 0, 0, 0, 0],
         [0, 1, 1, 0, 0, 0, 0, 0],
         [0, 1, 1, 1, 1, 1, 1, 0],
         [0, 1, 1, 1, 1, 1, 1, 0],
         [0, 1, 1, 1, 1, 1, 1, 0],
         [0, 1, 1, 1, 1, 1, 1, 0],
         [0, 1, 1, 1, 1, 1, 1, 0],
         [0, 0, 0, 0, 0, 0, 0, 0]])),
]
