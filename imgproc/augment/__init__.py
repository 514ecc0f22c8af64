"""Training augmentation: key-first random ops, their deterministic twins, random choice.

Every random op is ``random_x(key, image, *, ...)``: it draws its parameters from ``key``
and calls the public deterministic op (``random_hue`` calls :func:`adjust_hue`). Called on
one image (HW, HWC, CHW) it uses ``key`` as is; called on a batch (NHWC, NCHW) image ``i``
uses ``jax.random.fold_in(key, i)``. In an :class:`imgproc.Pipeline`, image ``i`` of the
batch and stage ``s`` use ``fold_in(fold_in(key, indices[i]), s)``, so a sample's result
depends only on (key, index): never on the batch size or split, the device or worker count.

Every op returns the caller's array type (NumPy or a list in: a writable NumPy array out;
a ``jax.Array`` in: a ``jax.Array`` out) and accepts what the filters accept (float64
computed in float32 and returned as float64); see :mod:`imgproc.core.array_type`. An int ``key`` is
a seed, ``jax.random.key(key)``.

All ops are also pipeline stages (``{"op": "random_hue"}`` works with its defaults; every
option is a keyword of the function). Shape-setting options (``size``, ``mode``,
``layout``, ``strategy``) are static; numeric ones are traced.

Draws apart from their application: every random op is two pure pieces, a sampler of
its parameters and the deterministic op applied with them (see :mod:`imgproc.core.registry`);
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
``random_sharpen``) stand beside their filters in :mod:`imgproc.filters.linear`.

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

# Importing each module registers its ops; imgproc/__init__.py makes them public by name.
from imgproc.augment import (blur, choice, colour, colourspace, erasing, geometry, intensity, jpeg,  # noqa: F401
                             local_contrast, mix, noise, policies, size, warp)
from imgproc.core.registry import lookup, registered_ops
from imgproc.filters import linear  # noqa: F401 - registers the filters' random twins, random_gaussian_blur, random_sharpen

RANDOM_OPS = tuple(op for op in registered_ops() if lookup(op).random)
DETERMINISTIC_OPS = tuple(op for op in registered_ops()
                          if not lookup(op).random and lookup(op).fn.__module__.startswith(__name__ + "."))

__all__ = ["DETERMINISTIC_OPS", "RANDOM_OPS"]


def __getattr__(name: str):
    """An op by name (``imgproc.augment.rotate``): the same function as ``imgproc.rotate``."""
    if name in RANDOM_OPS or name in DETERMINISTIC_OPS:
        return lookup(name).fn
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
