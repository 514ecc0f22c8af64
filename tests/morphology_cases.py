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
