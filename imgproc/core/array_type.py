"""The caller's array type and dtype: one rule for every public entry point.

:func:`callers_type` wraps every public op and :meth:`imgproc.Pipeline.__call__` /
:meth:`~imgproc.Pipeline.apply`:

* **NumPy in, NumPy out.** A NumPy array (or a nested Python list) gives a writable
  ``np.ndarray``; a ``jax.Array`` gives a ``jax.Array`` (nothing waits for the result:
  dispatch stays asynchronous); inside ``jax.jit`` tracers pass through untouched. Every
  array in the result follows the rule (the drawn parameters of ``return_params=True``
  too).
* **Input dtypes** (:func:`as_input`, the one place they are accepted): uint8, uint16,
  float16, bfloat16 and float32 as they are; float64 (what ``skimage.img_as_float`` and
  float lists give) is computed in float32 and returned as float64, except by an op with
  a fixed output dtype (``fixed_dtype``: ``normalize``, ``to_float``, the derivative
  filters, a pipeline with one of the first two), which returns that; a Python list of
  integers becomes uint8 when every value is in 0..255, uint16 when in 0..65535, and is
  refused otherwise. Other integer arrays (int32, int64, ...) are refused with the cast to
  make: their value range is ambiguous.
"""

from __future__ import annotations

import functools
import inspect
import sys

import jax
import jax.numpy as jnp
import numpy as np

from imgproc.core.devices import batch_partition, freeze, map_batch
from imgproc.core.validate import DTYPES, check_list_values
from imgproc.cpu import MIN_BYTES, interface_array, keep, on_one_cpu

__all__ = ["as_input", "callers_type", "host_result"]


def as_input(image):
    """``(array, out_dtype)``: ``image`` as an array of an accepted dtype, and the dtype the
    result must be cast back to (None: the array's own). See the module docstring."""
    if isinstance(image, (list, tuple)):
        image = list_to_array(image)
    if not hasattr(image, "dtype") or not hasattr(image, "shape"):
        image = np.asarray(image)
    if image.dtype == np.float64 and not isinstance(image, jax.core.Tracer):
        return image.astype(np.float32), np.dtype(np.float64)
    return image, None


def list_to_array(images) -> np.ndarray:
    """A nested Python list (or a list of arrays) as one NumPy array: integers from Python
    become uint8 or uint16 (:func:`imgproc.core.validate.check_list_values`); arrays keep their
    dtype. Images of different sizes cannot be stacked: refused, saying what to do."""
    try:
        array = np.asarray(images)
    except ValueError:
        shapes = sorted({tuple(np.shape(x)) for x in images})
        raise ValueError(f"a list of images of different sizes cannot be one batch (shapes {shapes[:4]}"
                         f"{' ...' if len(shapes) > 4 else ''}): call the op or pipeline once per image, or use "
                         "the folder runner of the command line for many files (imgproc run SPEC.json IN_DIR OUT_DIR)") from None
    if array.dtype.kind in "iu" and array.dtype.name not in DTYPES:
        array = array.astype(check_list_values(array))
    return array


def _is_host(x) -> bool:
    return not isinstance(x, (jax.Array, jax.core.Tracer))


def _to_numpy(leaf, inputs=()):
    if isinstance(leaf, jax.core.Tracer):  # NumPy image, traced options inside jit
        return leaf
    if isinstance(leaf, jax.Array) and not jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
        return _host_view(leaf, inputs)
    if isinstance(leaf, np.ndarray) and (not leaf.flags.writeable or _overlaps(leaf, inputs)):
        return leaf.copy()  # never hand the caller's own buffer back as the result
    return leaf


# Results at least this large are handed over as a view of their CPU buffer instead of
# copied (a copy into fresh pages cost more than a small blur; benchmarks/NOTES.md, "The
# eager call"); the same bound as the buffers imgproc.cpu.output_buffers takes back, which
# only views return.
VIEW_MIN_BYTES = MIN_BYTES


class _BufferOwner:
    """Keeps a CPU ``jax.Array`` alive for the NumPy view of its buffer (the view's
    ``base``) and presents that buffer as writable: the result is the caller's alone."""

    def __init__(self, array: jax.Array):
        self.array = array
        self.__array_interface__ = {"shape": array.shape, "typestr": array.dtype.str, "version": 3,
                                    "data": (array.unsafe_buffer_pointer(), False)}

    def __del__(self, _keep=keep, _finalizing=sys.is_finalizing):
        # the last view is gone: the buffer may be written again (imgproc.cpu.output_buffers);
        # not at interpreter exit, when module globals are already gone
        if not _finalizing():
            _keep(self.array)


def _host_view(leaf: jax.Array, inputs) -> np.ndarray:
    """``leaf`` as a writable NumPy array: on CPU, for a large single-device result that no
    input shares, a view of its buffer (no copy); otherwise a copy."""
    if leaf.nbytes < VIEW_MIN_BYTES or not on_one_cpu(leaf):
        return np.array(leaf)
    leaf.block_until_ready()
    view = interface_array(_BufferOwner(leaf), leaf.dtype)
    return view.copy() if _overlaps(view, inputs) else view


def _overlaps(array: np.ndarray, inputs) -> bool:
    """Whether ``array``'s memory may overlap any of ``inputs`` (host arrays; bounds only,
    so a doubt makes a copy)."""
    return any(np.may_share_memory(array, x) for x in inputs)


def host_result(array) -> np.ndarray:
    """A result as a NumPy array the way :func:`callers_type` hands it over (a large CPU
    result as a view of its buffer, no copy), for code that slices it before returning."""
    return _to_numpy(array)


def _to_jax(leaf):
    return jnp.asarray(leaf) if isinstance(leaf, np.ndarray) and leaf.dtype != object else leaf


def _image_position(fn) -> tuple[int, str]:
    for i, p in enumerate(inspect.signature(fn).parameters.values()):
        if p.name in ("image", "images"):
            return i, p.name
    raise TypeError(f"{fn.__name__} has no image argument")


def callers_type(fn=None, *, fixed_dtype=False):
    """Decorate a public op (or pipeline method) taking ``image``/``images``: its input is
    converted by :func:`as_input` and its result returned in the caller's array type.

    ``fixed_dtype``: True for an op whose result has one dtype whatever the input's (its
    ``OpInfo.out_dtype``), so that a float64 image's result is not cast back to float64;
    for a method, a function of its object saying so (a pipeline with a ``normalize``
    stage). Used as ``@callers_type`` or ``@callers_type(fixed_dtype=True)``."""
    if fn is None:
        return functools.partial(callers_type, fixed_dtype=fixed_dtype)
    pos, name = _image_position(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        args = list(args)
        if len(args) > pos:
            image = args[pos]
        elif name in kwargs:
            image = kwargs[name]
        else:
            return fn(*args, **kwargs)  # the op reports the missing argument
        if isinstance(image, jax.core.Tracer):
            return fn(*args, **kwargs)
        host = _is_host(image)
        original = image
        image, out_dtype = as_input(image)
        if len(args) > pos:
            args[pos] = image
        else:
            kwargs[name] = image
        if pos == 0 and not host:
            out = _on_devices(fn, args, kwargs, name, image)
            if out is not None:
                return out
        out = fn(*args, **kwargs)
        if host:
            inputs = tuple(x for x in (original, image) if isinstance(x, np.ndarray))
            out = jax.tree_util.tree_map(functools.partial(_to_numpy, inputs=inputs), out)
        else:
            out = jax.tree_util.tree_map(_to_jax, out)
        if out_dtype is None or (fixed_dtype(args[0]) if callable(fixed_dtype) else fixed_dtype):
            return out
        return _cast_images(out, out_dtype)

    return wrapper


def _on_devices(fn, args, kwargs, name, image):
    """A deterministic op on a device-sharded batch (:mod:`imgproc.core.devices`): run once per
    device on its images, the result split as the input; None when the batch is not
    device-sharded, or when an option holds an array (it may hold per-image values, which
    a per-device program cannot close over): the op then runs as on any other array."""
    partition = batch_partition(image) if image.ndim == 4 else None
    if partition is None:
        return None
    rest = tuple(args[1:])
    options = {k: v for k, v in kwargs.items() if k != name}
    frozen = freeze((rest, options))
    if frozen is None:
        return None
    return map_batch(lambda local: fn(local, *rest, **options), image, partition, key=(fn, frozen))


def _cast_images(out, dtype):
    """Cast the image of a result (the result, or the first item of ``(images, params)``)."""
    if isinstance(out, tuple):
        return (out[0].astype(dtype), *out[1:])
    return out.astype(dtype)
