"""Host batches uploaded ahead, for a training loop fed from host memory.

A loader gives NumPy batches; a training step wants them on the accelerator. Called on a
NumPy batch, a pipeline or recipe returns NumPy (the caller's array type,
:mod:`imgproc.core.array_type`): on a GPU that is an upload before the program and a
download after it, both in the caller's thread. :func:`prefetch_to_device` puts each
batch on the device in a background thread, ``size`` batches ahead of the one in use, so
the upload overlaps the programs the caller dispatches meanwhile; a pipeline or recipe
given the uploaded ``jax.Array`` returns a ``jax.Array`` on the same device: no download.
See ``docs/scale.md``, "Host input".

A list of images of different sizes is best padded into one batch first,
:func:`imgproc.pad_images` (the padded form the pipelines and recipes take with
``sizes=``): one upload, and a program per canvas bucket rather than per image size.
"""

from __future__ import annotations

import atexit
import queue
import threading

import jax
import numpy as np

__all__ = ["prefetch_to_device"]

_DONE = object()  # the producer's last item: the source is exhausted


class _Failed:
    """The producer's last item when the source (or an upload) raised: raised again in
    the caller's thread, at that item's place."""

    def __init__(self, error: BaseException):
        self.error = error


def prefetch_to_device(batches, *, size: int = 2, sharding=None):
    """Yield the items of ``batches`` with their NumPy arrays on the device, uploaded
    ``size`` items ahead in a background thread.

    Args:
        batches: an iterable of items, each an array or a pytree of them (a tuple, list or
            dict: ``(images, labels)``, ``{"image": ..., "index": ...}``). Every NumPy
            array in an item is put on the device; other leaves (``jax.Array``, numbers,
            strings, ``None``) come through as they are. A list of images of different
            sizes would go image by image, as any list of arrays: pad it into one batch
            first with :func:`imgproc.pad_images` and give the pipeline ``sizes=``.
        size: how many items are uploaded ahead of the one the caller holds (an int, at
            least 1). Up to ``size + 1`` items are on the device at once.
        sharding: where the arrays go: ``None`` (JAX's default device), a ``jax.Device``,
            or a ``jax.sharding.Sharding`` applied to every array of an item (for
            several devices, ``imgproc.sharding.batch_sharding()``: axis 0 of every array
            split over them, as :func:`imgproc.shard_batch` does).

    Yields:
        Each item in order, its arrays ``jax.Array`` already on the device (the upload
        has completed). An exception raised by ``batches`` is raised here, after the
        items before it; so is a ``ValueError`` naming an array the sharding cannot take
        (a scalar, or a batch that does not split evenly). Leaving the loop early stops
        the thread after the item it is uploading, and so does the end of the process.

    Example:
        >>> import numpy as np, jax, imgproc
        >>> pipe = imgproc.Pipeline([{"op": "random_flip_left_right"}])
        >>> loader = ((np.zeros((4, 8, 8, 3), np.uint8), np.arange(4) + 4 * i) for i in range(3))
        >>> for images, indices in imgproc.prefetch_to_device(loader):
        ...     out = pipe(images, key=0, indices=indices)
        >>> type(out) is type(images), out.devices() == images.devices()
        (True, True)
    """
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise ValueError(f"size must be an int of at least 1 (items uploaded ahead); got {size!r}")
    if sharding is not None and not isinstance(sharding, (jax.Device, jax.sharding.Sharding)):
        raise ValueError(f"sharding must be None (JAX's default device), a jax.Device or a jax.sharding.Sharding; got "
                         f"{type(sharding).__name__}")
    return _prefetched(iter(batches), int(size), sharding)


def _upload(item, sharding):
    """``item`` with its NumPy arrays on the device, the transfers completed; an array
    that cannot go there (a scalar under a sharding that splits axis 0) is named."""
    def put(path, leaf):
        if not isinstance(leaf, np.ndarray):
            return leaf
        try:
            return jax.device_put(leaf, sharding)
        except (ValueError, TypeError) as error:
            where = jax.tree_util.keystr(path) or "the item"
            raise ValueError(f"prefetch_to_device cannot put {where} (shape {leaf.shape}, {leaf.dtype}) on "
                             f"{sharding}: {str(error).splitlines()[0]}") from None

    return jax.block_until_ready(jax.tree_util.tree_map_with_path(put, item))


# the producers running, each with its stop event: stopped and joined at interpreter exit,
# before Python stops daemon threads (one stopped inside a JAX call aborts the process)
_RUNNING: dict[threading.Thread, threading.Event] = {}
_RUNNING_LOCK = threading.Lock()


@atexit.register
def _stop_all(timeout: float = 2.0) -> None:
    with _RUNNING_LOCK:
        running = list(_RUNNING.items())
    for _, stop in running:
        stop.set()
    for thread, _ in running:
        thread.join(timeout)


def _prefetched(source, size: int, sharding):
    items = queue.Queue()
    slots = threading.Semaphore(size)  # an item is pulled from the source only when it may be uploaded ahead
    stop = threading.Event()

    def produce():
        try:
            while True:
                while not slots.acquire(timeout=0.1):
                    if stop.is_set():
                        return
                if stop.is_set():
                    return
                try:
                    item = next(source)
                except StopIteration:
                    items.put(_DONE)
                    return
                items.put(_upload(item, sharding))
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
            items.put(_Failed(error))
        finally:
            with _RUNNING_LOCK:
                _RUNNING.pop(threading.current_thread(), None)

    thread = threading.Thread(target=produce, name="imgproc-prefetch", daemon=True)
    with _RUNNING_LOCK:
        _RUNNING[thread] = stop
    thread.start()
    try:
        while True:
            item = items.get()
            if item is _DONE:
                return
            if isinstance(item, _Failed):
                raise item.error
            slots.release()  # the next item may be uploaded while the caller uses this one
            yield item
    finally:
        stop.set()
