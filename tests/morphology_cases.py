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
}


def scipy_footprint(options) -> np.ndarray:
    if not options:
        return CROSS
    return footprint_array(options.get("size"), options.get("footprint"))


def grey_reference(name, plane, options, mode, cval=0.0):
    """scipy's result on one 2-D plane; an integer top-hat saturated at 0 where scipy's
    unsigned difference wraps around (imgproc's rule: integers saturate)."""
    fp = scipy_footprint(options)
    if np.issubdtype(plane.dtype, np.integer) and name in ("white_tophat", "black_tophat"):
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
