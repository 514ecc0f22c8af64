"""imgproc: image-processing pipelines on JAX.

Filters match scipy.ndimage (float64 reference) to float32 precision; pipelines run as one
compiled XLA program on CPU, GPU or TPU. See the README for the tour and the layout.

Example:
    >>> import numpy as np, imgproc
    >>> img = imgproc.load_image("sample_images/chelsea_noisy.jpg")
    >>> out = imgproc.presets.denoise()(img)
    >>> out.shape, out.dtype
    ((300, 451, 3), dtype('uint8'))
"""

from importlib.metadata import PackageNotFoundError, version as _version

from imgproc import kernels
from imgproc._convolution import convolve, correlate
from imgproc._filters import box_blur, edges, emboss, gaussian_blur, sharpen, unsharp_mask
from imgproc._io import decode_image, encode_image, load_image, save_image
from imgproc._pipeline import Pipeline
from imgproc._stages import LoweringHints, register_op, registered_ops
from imgproc._validate import DTYPES, LAYOUTS, METHODS, MODES
from imgproc import augment, presets
from imgproc.augment import *  # noqa: F401,F403 - flat namespace: imgproc.random_hue, ...
from imgproc.errors import (ImgprocError, InputError, InvalidImageError, LayoutWarning, OutputError, UnavailableError,
                            WriteError)
from imgproc.metrics import psnr, ssim
from imgproc import restoration  # registers the denoising ops as pipeline stages
from imgproc.restoration import (
    bilateral,
    bm3d,
    denoise,
    estimate_sigma,
    impulse_fraction,
    median,
    nl_means,
    tv_chambolle,
)
from imgproc.host_memory import reuse_host_memory

try:
    __version__ = _version("imgproc-jax")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0+unknown"

__all__ = [
    "DTYPES",
    "LAYOUTS",
    "METHODS",
    "MODES",
    "ImgprocError",
    "InputError",
    "InvalidImageError",
    "LayoutWarning",
    "LoweringHints",
    "OutputError",
    "Pipeline",
    "UnavailableError",
    "WriteError",
    "box_blur",
    "convolve",
    "correlate",
    "decode_image",
    "edges",
    "encode_image",
    "emboss",
    "gaussian_blur",
    "kernels",
    "load_image",
    "presets",
    "psnr",
    "ssim",
    "register_op",
    "registered_ops",
    "reuse_host_memory",
    "save_image",
    "sharpen",
    "unsharp_mask",
]
__all__ += ["augment", *augment.__all__]
__all__ += ["restoration", "bilateral", "bm3d", "denoise", "estimate_sigma", "impulse_fraction", "median", "nl_means",
            "tv_chambolle"]
