"""Training augmentation: key-first random ops, their deterministic twins, random choice.

Every random op is ``random_x(key, image, *, ...)``: it draws its parameters from ``key``
and calls the public deterministic op (``random_hue`` calls :func:`adjust_hue`). Called on
one image (HW, HWC, CHW) it uses ``key`` as is; called on a batch (NHWC, NCHW) image ``i``
uses ``jax.random.fold_in(key, i)``. In an :class:`imgproc.Pipeline`, image ``i`` of the
batch and stage ``s`` use ``fold_in(fold_in(key, indices[i]), s)``, so a sample's result
depends only on (key, index): never on the batch size or split, the device or worker count.

Every op returns the caller's array type (NumPy or a list in: a writable NumPy array out;
a ``jax.Array`` in: a ``jax.Array`` out) and accepts what the filters accept (float64
computed in float32 and returned as float64); see :mod:`imgproc._types`. An int ``key`` is
a seed, ``jax.random.key(key)``.

All ops are also pipeline stages (``{"op": "random_hue"}`` works with its defaults; every
option is a keyword of the function). Shape-setting options (``size``, ``mode``,
``layout``, ``strategy``) are static; numeric ones are traced.

Draws apart from their application: every random op is two pure pieces, a sampler of
its parameters and the deterministic op applied with them (see :mod:`imgproc._stages`);
each function's docstring names its parameters. A pipeline returns what it drew with
``pipe(x, key=k, return_params=True)`` and replays it with ``pipe.apply(x, params)``.

Value range: colour and noise ops take ``max_value=None``, meaning the input dtype's
range: 255 for uint8, 65535 for uint16, 1.0 for float images. Inside a pipeline the ops see
float32, so the pipeline passes ``max_value`` explicitly: the range of the dtype it was
called with (a uint8 batch is treated as 0..255, a float batch as 0..1). Ops do not clip
(a float result may leave [0, max_value]); integer results are rounded and saturated
once, at the end.

Modules by concern: ``_geometry`` (flips, crops, rotation, translation), ``_size``
(resize, pad, centre crop, letterbox, scale jitter), ``_warp`` (affine, perspective),
``_targets`` (boxes, masks and keypoints that follow the image), ``_colour``
(HSV, brightness, contrast, gamma, grayscale), ``_intensity`` (normalize, to_float,
invert, posterize, solarize, equalize, autocontrast, sharpness: torchvision's
definitions), ``_policies`` (RandAugment, TrivialAugmentWide, AutoAugment, AugMix on
``lax.switch``), ``_mix`` (MixUp/CutMix: batch ops on images and labels, after a
pipeline), ``_jpeg`` (JPEG artefacts in JAX), ``_blur`` (median and motion blur),
``_colourspace`` (YCbCr and Lab, skimage's), ``_clahe`` (OpenCV's CLAHE), ``_noise``,
``_erasing`` and ``_choice``
(``random_choice``/``random_apply`` and their batch strategies); each deterministic op
stands beside its random twin. The random twins of the filters (``random_gaussian_blur``,
``random_sharpen``) stand beside their filters in :mod:`imgproc._filters`.

Colour definitions are dm-pix's (which are TensorFlow's ``tf.image`` ones): see each
function. Geometry follows NumPy / scipy.ndimage (``rotate``, ``translate`` match
``scipy.ndimage.rotate`` / ``shift`` with ``order=1``).

Example:
    >>> import jax, numpy as np, imgproc
    >>> pipe = imgproc.Pipeline([
    ...     {"op": "random_flip_left_right"},
    ...     {"op": "random_brightness", "max_delta": 0.1},
    ...     {"op": "random_choice", "ops": [{"op": "gaussian_blur", "sigma": 1.0, "size": 5},
    ...                                     {"op": "sharpen"}, {"op": "gaussian_noise"}]},
    ... ])
    >>> x = np.zeros((4, 16, 16, 3), np.uint8)
    >>> y = pipe(x, key=jax.random.key(0))
    >>> y.shape, y.dtype
    ((4, 16, 16, 3), dtype('uint8'))
"""

from __future__ import annotations

from imgproc._filters import random_gaussian_blur, random_sharpen
from imgproc.augment._blur import median_blur, motion_blur, random_median_blur, random_motion_blur
from imgproc.augment._clahe import clahe, random_clahe
from imgproc.augment._choice import STRATEGIES, default_strategy, random_apply, random_choice
from imgproc.augment._colour import (
    adjust_brightness,
    adjust_contrast,
    adjust_gamma,
    adjust_hue,
    adjust_saturation,
    hsv_to_rgb,
    random_brightness,
    random_contrast,
    random_gamma,
    random_grayscale,
    random_hue,
    random_saturation,
    rgb_to_grayscale,
    rgb_to_hsv,
)
from imgproc.augment._colourspace import lab_to_rgb, rgb_to_lab, rgb_to_ycbcr, ycbcr_to_rgb
from imgproc.augment._erasing import erase, random_erasing
from imgproc.augment._geometry import (
    SAMPLE_MODES,
    crop,
    flip_left_right,
    flip_up_down,
    random_crop,
    random_flip_left_right,
    random_flip_up_down,
    random_resized_crop,
    random_rot90,
    random_rotate,
    random_translate,
    resized_crop,
    rot90,
    rotate,
    sample,
    translate,
)
from imgproc.augment._intensity import (
    adjust_sharpness,
    autocontrast,
    equalize,
    invert,
    normalize,
    posterize,
    random_adjust_sharpness,
    random_autocontrast,
    random_equalize,
    random_invert,
    random_posterize,
    random_solarize,
    solarize,
    to_float,
)
from imgproc.augment._jpeg import jpeg_compression, random_jpeg_compression
from imgproc.augment._mix import MIX_OPS, cutmix, mix_batch, mixup
from imgproc.augment._noise import gaussian_noise, salt_and_pepper, speckle_noise
from imgproc.augment._warp import INTERPOLATIONS, affine, perspective, random_affine, random_perspective
from imgproc.augment._size import (
    RESIZE_METHODS,
    center_crop,
    letterbox,
    pad,
    random_resize,
    resize,
    resize_shorter,
)
from imgproc.augment._policies import POLICIES, aug_mix, auto_augment, rand_augment, trivial_augment

DETERMINISTIC_OPS = (
    "flip_left_right", "flip_up_down", "rot90", "crop", "resized_crop", "rotate", "translate", "erase",
    "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue", "adjust_gamma", "rgb_to_grayscale",
    "resize", "resize_shorter", "pad", "center_crop", "letterbox", "affine", "perspective",
    "to_float", "normalize", "invert", "posterize", "solarize", "equalize", "autocontrast", "adjust_sharpness",
    "jpeg_compression", "median_blur", "motion_blur", "clahe",
)
RANDOM_OPS = (
    "random_flip_left_right", "random_flip_up_down", "random_rot90", "random_crop", "random_resized_crop",
    "random_rotate", "random_translate", "random_brightness", "random_contrast", "random_saturation",
    "random_hue", "random_gamma", "random_grayscale", "gaussian_noise", "speckle_noise", "salt_and_pepper",
    "random_gaussian_blur", "random_sharpen", "random_erasing", "random_choice", "random_apply",
    "random_resize", "random_affine", "random_perspective",
    "random_invert", "random_posterize", "random_solarize", "random_equalize", "random_autocontrast",
    "random_adjust_sharpness", "rand_augment", "trivial_augment", "auto_augment", "aug_mix",
    "random_jpeg_compression", "random_median_blur", "random_motion_blur", "random_clahe",
)

__all__ = [
    "DETERMINISTIC_OPS",
    "INTERPOLATIONS",
    "MIX_OPS",
    "POLICIES",
    "RANDOM_OPS",
    "RESIZE_METHODS",
    "SAMPLE_MODES",
    "STRATEGIES",
    "adjust_brightness",
    "adjust_contrast",
    "adjust_gamma",
    "adjust_hue",
    "adjust_saturation",
    "affine",
    "center_crop",
    "adjust_sharpness",
    "aug_mix",
    "auto_augment",
    "autocontrast",
    "clahe",
    "crop",
    "cutmix",
    "default_strategy",
    "equalize",
    "erase",
    "flip_left_right",
    "flip_up_down",
    "gaussian_noise",
    "hsv_to_rgb",
    "letterbox",
    "pad",
    "perspective",
    "random_affine",
    "invert",
    "jpeg_compression",
    "lab_to_rgb",
    "median_blur",
    "mix_batch",
    "mixup",
    "motion_blur",
    "normalize",
    "posterize",
    "rand_augment",
    "random_adjust_sharpness",
    "random_apply",
    "random_autocontrast",
    "random_brightness",
    "random_choice",
    "random_clahe",
    "random_contrast",
    "random_crop",
    "random_equalize",
    "random_erasing",
    "random_flip_left_right",
    "random_flip_up_down",
    "random_gamma",
    "random_gaussian_blur",
    "random_perspective",
    "random_grayscale",
    "random_hue",
    "random_resize",
    "random_invert",
    "random_jpeg_compression",
    "random_median_blur",
    "random_motion_blur",
    "random_posterize",
    "random_resized_crop",
    "random_rot90",
    "random_rotate",
    "random_saturation",
    "random_sharpen",
    "random_solarize",
    "random_translate",
    "resize",
    "resize_shorter",
    "resized_crop",
    "rgb_to_grayscale",
    "rgb_to_hsv",
    "rgb_to_lab",
    "rgb_to_ycbcr",
    "rot90",
    "rotate",
    "salt_and_pepper",
    "sample",
    "solarize",
    "speckle_noise",
    "to_float",
    "translate",
    "trivial_augment",
    "ycbcr_to_rgb",
]
