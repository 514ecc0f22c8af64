"""The CPU machinery, behind this one seam: the rest of the package imports these names
from ``imgproc.cpu`` and never its modules.

What it does and why (each module's docstring has the detail and points to the
measurement behind it):

* :mod:`.output_buffers`: a result on the CPU written into the memory of an earlier result
  that nothing references any more (``host_buffer``, ``keep``, ``IntoBuffer``), and handed
  to NumPy without a copy (``interface_array``); ``release`` gives the memory back;
* :mod:`.aligned`: the aligned copy of a NumPy input, chunked and split between the cores,
  that JAX's CPU client then reads in place;
* :mod:`.threads`: one slice of a batch per core (``in_threads``); :mod:`.cores`: how many;
* :mod:`.fusion`: a pass in a loop of its own (``in_own_loop``), so XLA:CPU does not fuse
  it into its consumer, long work split into such loops in order (``in_loops``), and how many
  values one loop may read (``LOOP_MAX_READS``);
* :mod:`.host_memory`: glibc's allocator told to keep large blocks (``reuse_host_memory``).

On a GPU or TPU every function here is either not called or returns its argument.
"""

# name -> the module of this package that defines it; imported at the first look-up, so that
# ``from imgproc.cpu import reuse_host_memory`` (the command line, before JAX) stays light.
_SEAM = {
    "copy_min_max": "aligned", "stays_in_place": "aligned",
    "cpu_cores": "cores",
    "in_own_loop": "fusion", "in_loops": "fusion", "LOOP_MAX_READS": "fusion",
    "reuse_host_memory": "host_memory",
    "HOST_ALIGNMENT": "output_buffers", "MIN_BYTES": "output_buffers", "IntoBuffer": "output_buffers",
    "flat_argument": "output_buffers", "flat_view_offset": "output_buffers", "from_flat": "output_buffers",
    "host_buffer": "output_buffers", "interface_array": "output_buffers", "keep": "output_buffers",
    "kept_as_scratch": "output_buffers", "on_one_cpu": "output_buffers", "release": "output_buffers",
    "scratch": "output_buffers",
    "in_threads": "threads",
}
__all__ = sorted(_SEAM)


def __getattr__(name: str):
    if name not in _SEAM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{_SEAM[name]}"), name)
