"""imgproc: image-processing pipelines on JAX.

Filters match scipy.ndimage (float64 reference) to float32 precision; pipelines run as one
compiled XLA program on CPU, GPU or TPU. See the README for the tour and the layout.

``import imgproc`` is lazy (as scikit-image's is): it imports neither JAX nor NumPy. The
first public name looked up (``imgproc.gaussian_blur``, ``from imgproc import Pipeline``)
imports :mod:`imgproc._api`, which imports every op family at once, so every op is
registered for specs from then on. The command line relies on this: ``imgproc ...`` installs
its Ctrl-C and SIGTERM handlers before JAX is imported.

Example:
    >>> import numpy as np, imgproc
    >>> img = imgproc.load_image("sample_images/chelsea_noisy.jpg")
    >>> out = imgproc.presets.denoise()(img)
    >>> out.shape, out.dtype
    ((300, 451, 3), dtype('uint8'))
"""


def __getattr__(name: str):
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("imgproc-jax")
        except PackageNotFoundError:  # running from a source tree without installing
            return "0+unknown"
    if name.startswith("_") and name != "__all__":
        raise AttributeError(f"module 'imgproc' has no attribute {name!r}")
    import importlib
    import importlib.util
    import sys

    api = sys.modules.get(f"{__name__}._api")
    if api is not None and hasattr(api, name):  # the usual case, after the first look-up
        return getattr(api, name)
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        # a submodule (``from imgproc import kernels`` asks here first): import it alone
        return importlib.import_module(f"{__name__}.{name}")
    from imgproc import _api

    try:
        return getattr(_api, name)
    except AttributeError:
        raise AttributeError(f"module 'imgproc' has no attribute {name!r}") from None


def __dir__():
    from imgproc import _api

    return sorted({"__doc__", "__file__", "__name__", "__path__", "__version__", *_api.__all__})
