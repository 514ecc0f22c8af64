"""Everything ``import imgproc`` offers, imported at once.

``imgproc/__init__.py`` is lazy: ``import imgproc`` imports neither JAX nor NumPy, so the
command line starts (and installs its signal handlers) before the heavy imports. The first
attribute looked up on the package (``imgproc.gaussian_blur``) imports this module, which
imports every op family; importing the families registers their ops, so specs can name any
of them from then on.
"""

from imgproc import kernels
from imgproc._convolution import convolve, correlate
from imgproc._filters import box_blur, edges, emboss, gaussian_blur, sharpen, unsharp_mask
from imgproc._io import decode_image, encode_image, load_image, save_image
from imgproc._pipeline import Pipeline
from imgproc._stages import KEEPS_TARGETS, LoweringHints, TargetRule, register_op, registered_ops
from imgproc._validate import DTYPES, LAYOUTS, METHODS, MODES
from imgproc import augment, presets, recipes
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
from imgproc._output_buffers import release as release_output_buffers
from imgproc import sharding
from imgproc.sharding import global_batch, shard_batch

__all__ = [
    "DTYPES",
    "LAYOUTS",
    "METHODS",
    "MODES",
    "ImgprocError",
    "InputError",
    "InvalidImageError",
    "KEEPS_TARGETS",
    "LayoutWarning",
    "LoweringHints",
    "OutputError",
    "Pipeline",
    "TargetRule",
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
    "global_batch",
    "kernels",
    "load_image",
    "presets",
    "recipes",
    "psnr",
    "ssim",
    "register_op",
    "registered_ops",
    "release_output_buffers",
    "reuse_host_memory",
    "save_image",
    "shard_batch",
    "sharding",
    "sharpen",
    "unsharp_mask",
]
__all__ += ["augment", *augment.__all__]
__all__ += ["restoration", "bilateral", "bm3d", "denoise", "estimate_sigma", "impulse_fraction", "median", "nl_means",
            "tv_chambolle"]
