"""Restoration: denoising methods, noise estimation and ``denoise(method="auto")``.

Every function takes an image in any layout of :mod:`imgproc.core.arrays` (``layout=None``
infers HW, HWC or NHWC; ``"CHW"`` and ``"NCHW"`` must be named) and any supported dtype
(uint8, uint16, float16, bfloat16, float32), computes in float32 and returns the input's
shape and dtype (integers rounded and saturated once). Batches (NHWC, NCHW) are processed
image by image in one compiled program.

Units: ``sigma``, ``h`` and ``sigma_color`` are in the image's own value units (0..255 for
uint8, 0..65535 for uint16, 0..1 for floats). ``max_value=None`` means the input dtype's
range (255, 65535 or 1.0; inside a :class:`imgproc.Pipeline`, the range of the dtype the
pipeline was called with), resolved by :func:`imgproc.core.arrays.resolve_max`.

Options that set shapes or loop lengths (``patch_size``, ``search_size``, ``size``, ``mode``,
``layout``, ``method``, ``n_iter``) are static; numeric ones (``sigma``, ``h``, ``weight``, ``eps``,
``sigma_color``, ``sigma_spatial`` with an explicit ``size``) are traced: a new value does
not recompile.

Modules by concern:

* ``common``: the argument checks every method starts with, per-image values;
* ``noise_level``: :func:`estimate_sigma` and its traced core (skimage's wavelet estimate);
* ``non_local_means``: :func:`nl_means` and its fast shifted-difference kernel;
* ``total_variation``: :func:`tv_chambolle` (Chambolle's projection algorithm);
* ``bilateral_filter``: :func:`bilateral` (OpenCV's definition) and its window radius;
* ``median_filter``: :func:`median`, :func:`impulse_fraction` and the switching median for impulses;
* ``block_matching``: :func:`bm3d`;
* ``auto``: :func:`denoise`, :data:`DENOISE_METHODS` and ``method="auto"``'s per-image choice.

Each module registers its own ops as pipeline stages.
"""

from __future__ import annotations

# Importing a module registers its ops, so these imports are not sorted: they keep the
# registry's order, which users see (the filters that ``auto`` uses, then nl_means,
# tv_chambolle, bilateral, median, bm3d and denoise).
from imgproc.filters import linear  # noqa: F401, I001
from imgproc.restoration import non_local_means, total_variation, bilateral_filter, median_filter  # noqa: F401, I001
from imgproc.restoration import block_matching, auto  # noqa: F401, I001

from imgproc.restoration.auto import DENOISE_METHODS, auto_choice, denoise  # noqa: F401 (auto_choice: cli)
from imgproc.restoration.bilateral_filter import bilateral
from imgproc.restoration.block_matching import bm3d
from imgproc.restoration.median_filter import impulse_fraction, median
from imgproc.restoration.noise_level import estimate_sigma
from imgproc.restoration.non_local_means import nl_means
from imgproc.restoration.total_variation import tv_chambolle

__all__ = [
    "DENOISE_METHODS",
    "bilateral",
    "bm3d",
    "denoise",
    "estimate_sigma",
    "impulse_fraction",
    "median",
    "nl_means",
    "tv_chambolle",
]
