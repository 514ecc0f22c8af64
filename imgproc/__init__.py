"""imgproc: image-processing pipelines on JAX.

Filters match scipy.ndimage (float64 reference) to float32 precision; pipelines run as one
compiled XLA program on CPU, GPU or TPU. See the README for the tour and docs/architecture.md
for the layers.

The public API is declared here, once:

* every op the package registers (filters, restoration, augmentation; not one a user adds
  with :func:`register_op`) is public under its own name: ``imgproc.gaussian_blur``, ``imgproc.random_hue``. The modules that
  register them are :data:`_OP_FAMILIES`; a new op is its function, its registry entry and
  its docs line, nothing here;
* every other public name is in :data:`_NAMES` (the module that defines it), and the public
  submodules in :data:`_MODULES`.

``import imgproc`` is lazy (as scikit-image's is): it imports neither JAX nor NumPy. The
first public name looked up imports every op family at once, so every op is registered for
specs from then on. The command line relies on this: ``imgproc ...`` installs its Ctrl-C and
SIGTERM handlers before JAX is imported.

Example:
    >>> import numpy as np, imgproc
    >>> img = imgproc.load_image("sample_images/chelsea_noisy.jpg")
    >>> out = imgproc.presets.denoise()(img)
    >>> out.shape, out.dtype
    ((300, 451, 3), dtype('uint8'))
"""

# The modules whose import registers the ops (imgproc.augment imports each of its modules).
_OP_FAMILIES = ("imgproc.filters.convolution", "imgproc.filters.linear", "imgproc.filters.derivatives",
                "imgproc.filters.morphology", "imgproc.filters.threshold", "imgproc.restoration", "imgproc.augment")

# Public names that are not ops: module -> names ("public=internal" where they differ).
_NAMES = {
    "imgproc.errors": ("ImgprocError", "InputError", "InvalidImageError", "LayoutWarning", "OutputError",
                       "UnavailableError", "WriteError"),
    "imgproc.core.registry": ("KEEPS_TARGETS", "LoweringHints", "TargetRule", "op_info=lookup", "register_op",
                              "registered_ops"),
    "imgproc.core.validate": ("DTYPES", "LAYOUTS", "METHODS", "MODES", "SAMPLE_MODES"),
    "imgproc.cpu": ("release_output_buffers=release", "reuse_host_memory"),
    "imgproc.io.codec": ("decode_image", "encode_image", "load_image", "save_image"),
    "imgproc.metrics": ("psnr", "ssim"),
    "imgproc.filters.threshold": ("threshold_otsu",),
    "imgproc.restoration": ("estimate_sigma", "impulse_fraction"),
    "imgproc.augment": ("DETERMINISTIC_OPS", "RANDOM_OPS"),
    "imgproc.augment.choice": ("STRATEGIES", "default_strategy"),
    "imgproc.augment.colour": ("hsv_to_rgb", "rgb_to_hsv"),
    "imgproc.augment.colourspace": ("lab_to_rgb", "rgb_to_lab", "rgb_to_ycbcr", "ycbcr_to_rgb"),
    "imgproc.augment.geometry": ("sample",),
    "imgproc.augment.mix": ("MIX_OPS", "cutmix", "mix_batch", "mixup"),
    "imgproc.augment.policies": ("POLICIES",),
    "imgproc.augment.size": ("RESIZE_METHODS",),
    "imgproc.augment.warp": ("INTERPOLATIONS",),
    "imgproc.pipeline.pipeline": ("Pipeline",),
    "imgproc.pipeline.prefetch": ("prefetch_to_device",),
    "imgproc.pipeline.sharding": ("global_batch", "shard_batch"),
    "imgproc.pipeline.variable_size": ("pad_images",),
}

# Public submodules: imgproc.NAME.
_MODULES = {
    "augment": "imgproc.augment",
    "kernels": "imgproc.kernels",
    "metrics": "imgproc.metrics",
    "presets": "imgproc.pipeline.presets",
    "recipes": "imgproc.pipeline.recipes",
    "restoration": "imgproc.restoration",
    "sharding": "imgproc.pipeline.sharding",
}

_LOADED = {}


def _load() -> dict:
    """Every public name, with its object: the op families imported (registering their ops)."""
    if not _LOADED:
        import importlib

        for module in _OP_FAMILIES:
            importlib.import_module(module)
        from imgproc.core.registry import lookup, registered_ops

        ops = (lookup(op) for op in registered_ops())  # the package's own: not ops a user registered
        names = {info.name: info.fn for info in ops if info.fn.__module__.startswith(__name__ + ".")}
        for module, entries in _NAMES.items():
            mod = importlib.import_module(module)
            for entry in entries:
                public, _, internal = entry.partition("=")
                names[public] = getattr(mod, internal or public)
        names.update({name: importlib.import_module(module) for name, module in _MODULES.items()})
        _LOADED.update(names)
    return _LOADED


def __getattr__(name: str):
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("imgproc-jax")
        except PackageNotFoundError:  # running from a source tree without installing
            return "0+unknown"
    if name == "__all__":
        return sorted(_load())
    if name.startswith("_"):
        raise AttributeError(f"module 'imgproc' has no attribute {name!r}")
    if name in _LOADED:  # the usual case, after the first look-up
        return _LOADED[name]
    import importlib
    import importlib.util

    if name in _MODULES:  # a public submodule (``from imgproc import kernels``): imported alone
        return importlib.import_module(_MODULES[name])
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:  # imgproc.grain, imgproc.errors, ...
        return importlib.import_module(f"{__name__}.{name}")
    try:
        return _load()[name]
    except KeyError:
        raise AttributeError(f"module 'imgproc' has no attribute {name!r}") from None


def __dir__():
    return sorted({"__doc__", "__file__", "__name__", "__path__", "__version__", *_load()})
