"""Host input for a training loop (imgproc/pipeline/prefetch.py, imgproc.pad_images): each
batch is uploaded ahead in a thread, bounded by ``size``; the caller gets its items in
order, NumPy arrays as device arrays and everything else as it was; a source's error
reaches the caller after the items before it; leaving the loop early stops the thread,
and so does the process's exit;
pipelines and recipes given the uploaded batches return device arrays equal to what the
NumPy batches give; a list of images of any sizes goes as its padded form, and a list of
device images no longer compiles a program per image size; a detection recipe takes the
padded form with one batched targets dict."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import jax
import numpy as np
import pytest

import imgproc
from imgproc import recipes
from subprocesses import python_env
from imgproc.core.arrays import canvas_side

RNG = np.random.default_rng(5)


def _wait_for(condition, seconds=10.0):
    """Poll ``condition`` until it holds (True) or ``seconds`` pass (False)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.005)
    return condition()


def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "imgproc-prefetch"]


def test_items_come_in_order_with_their_numpy_arrays_on_the_device():
    ready = jax.device_put(np.float32(1.5))
    items = [(RNG.integers(0, 256, (2, 4, 4, 3), dtype=np.uint8), {"index": np.arange(2) + 2 * i, "name": f"b{i}"},
              i, None, ready) for i in range(4)]
    out = list(imgproc.prefetch_to_device(iter(items), size=2))
    assert len(out) == len(items)
    for got, want in zip(out, items):
        images, meta, number, nothing, same = got
        assert isinstance(images, jax.Array) and isinstance(meta["index"], jax.Array)
        assert images.devices() == {jax.devices()[0]}
        np.testing.assert_array_equal(np.asarray(images), want[0])
        np.testing.assert_array_equal(np.asarray(meta["index"]), want[1]["index"])
        assert (meta["name"], number, nothing) == (want[1]["name"], want[2], None)
        assert same is ready


def test_uploads_run_ahead_of_the_caller_by_size_items():
    pulled = []

    def source():
        for i in range(10):
            pulled.append(i)
            yield np.full((2, 3), i, np.float32)

    for size in (1, 3):
        pulled.clear()
        batches = imgproc.prefetch_to_device(source(), size=size)
        first = next(batches)
        # while the caller holds item 0, the thread uploads the next `size` items and no more
        assert _wait_for(lambda: len(pulled) == 1 + size)
        time.sleep(0.05)
        assert len(pulled) == 1 + size
        second = next(batches)
        assert _wait_for(lambda: len(pulled) == 2 + size)
        assert float(first[0, 0]) == 0 and float(second[0, 0]) == 1
        assert all(float(x[0, 0]) == i + 2 for i, x in enumerate(batches))
        assert pulled == list(range(10))


def test_an_error_of_the_source_reaches_the_caller_after_the_items_before_it():
    def source():
        yield np.zeros(2)
        yield np.ones(2)
        raise OSError("record 2 is unreadable")

    got = []
    with pytest.raises(OSError, match="record 2 is unreadable"):
        for x in imgproc.prefetch_to_device(source()):
            got.append(np.asarray(x))
    assert [g.tolist() for g in got] == [[0, 0], [1, 1]]


def test_leaving_the_loop_early_stops_the_thread():
    pulled = []

    def source():
        for i in range(1000):
            pulled.append(i)
            yield np.zeros(4)

    batches = imgproc.prefetch_to_device(source(), size=2)
    for _ in batches:
        break
    batches.close()
    assert _wait_for(lambda: not _prefetch_threads())
    assert len(pulled) <= 3  # the item in hand and the two uploaded ahead


def test_a_process_that_leaves_a_loop_unfinished_exits_cleanly():
    """The thread is stopped at exit: stopped by Python inside an upload, it aborted the
    process (``FATAL: exception not rethrown``, exit 134) in 4 of 5 runs."""
    code = ("import itertools, numpy as np, imgproc\n"
            "x = np.zeros((8, 224, 224, 3), np.uint8)\n"
            "batches = imgproc.prefetch_to_device(itertools.cycle([x, x + 1]))\n"
            "for _ in range(5): next(batches)\n")
    for _ in range(3):
        run = subprocess.run([sys.executable, "-c", code], env=python_env(JAX_PLATFORMS="cpu"), capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-2000:]
        assert "FATAL" not in run.stderr


@pytest.mark.parametrize("size", [0, -1, 1.5, True, "2"])
def test_a_bad_size_is_refused(size):
    with pytest.raises(ValueError, match="size must be an int of at least 1"):
        imgproc.prefetch_to_device([np.zeros(2)], size=size)


def test_a_bad_sharding_is_refused():
    with pytest.raises(ValueError, match="sharding must be None .* a jax.Device or a jax.sharding.Sharding"):
        imgproc.prefetch_to_device([np.zeros(2)], sharding="gpu")


def test_a_device_is_where_the_arrays_go():
    device = jax.devices()[-1]
    (x,) = list(imgproc.prefetch_to_device([np.zeros((2, 2))], sharding=device))
    assert x.devices() == {device}


def test_pipelines_and_recipes_on_uploaded_batches_give_device_arrays_equal_to_numpy_ones():
    batches = [RNG.integers(0, 256, (4, 20, 24, 3), dtype=np.uint8) for _ in range(3)]
    pipe = imgproc.Pipeline([{"op": "random_flip_left_right"}, {"op": "random_brightness", "max_delta": 0.3}])
    for i, x in enumerate(imgproc.prefetch_to_device(batches)):
        out = pipe(x, key=1, indices=np.arange(4) + 4 * i)
        assert isinstance(out, jax.Array) and out.devices() == x.devices()
        np.testing.assert_array_equal(np.asarray(out), pipe(batches[i], key=1, indices=np.arange(4) + 4 * i))
    recipe = recipes.imagenet_train(16)
    labels = np.arange(4) % 10
    for x, y in imgproc.prefetch_to_device((b, labels) for b in batches[:1]):
        out = recipe(x, y, key=2, num_classes=10)
        want = recipe(batches[0], labels, key=2, num_classes=10)
        for k in ("images", "labels"):
            assert isinstance(out[k], jax.Array)
            np.testing.assert_array_equal(np.asarray(out[k]), want[k])


def test_a_list_of_any_sizes_goes_as_its_padded_form(compilations):
    """pad_images, uploaded ahead, through a recipe with sizes=: the list's result, on the
    device; the second batch of new sizes in the same canvas bucket compiles nothing."""
    sizes = [(37, 50), (61, 29), (24, 24), (44, 58), (30, 31), (52, 40), (58, 61), (25, 45)]
    images = [RNG.integers(0, 256, s + (3,), dtype=np.uint8) for s in sizes]
    recipe = recipes.imagenet_train(16)
    labels, indices = np.arange(8) % 10, np.arange(8) + 40
    loader = ((*imgproc.pad_images(images[b:b + 4]), labels[b:b + 4], indices[b:b + 4]) for b in (0, 4))
    outs = []
    with compilations() as compiled:
        for n, (canvas, true_hw, y, idx) in enumerate(imgproc.prefetch_to_device(loader)):
            if n == 1:
                first = len(compiled)
            outs.append(recipe(canvas, y, key=3, indices=idx, num_classes=10, sizes=true_hw))
    assert len(compiled) == first  # batch 2: other sizes, the same canvas (64 × 64) and programs
    for b, out in zip((0, 4), outs):
        want = recipe(images[b:b + 4], labels[b:b + 4], key=3, indices=indices[b:b + 4], num_classes=10)
        for k in ("images", "labels"):
            assert isinstance(out[k], jax.Array)
            np.testing.assert_array_equal(np.asarray(out[k]), want[k])


def test_pad_images_puts_each_image_top_left_with_zeros_around():
    images = [RNG.integers(1, 256, s, dtype=np.uint8) for s in ((5, 7, 3), (9, 4, 3))]
    canvas, sizes = imgproc.pad_images(images)
    side = canvas_side(9)  # square: the larger side's bucket (a list call's new canvas is too)
    assert canvas.shape == (2, side, side, 3) and canvas.dtype == np.uint8
    assert sizes.dtype == np.int32
    assert sizes.tolist() == [[5, 7], [9, 4]]
    for c, x in zip(canvas, images):
        np.testing.assert_array_equal(c[:x.shape[0], :x.shape[1]], x)
        assert c.sum() == x.astype(np.int64).sum()  # nothing but zeros around
    chw, _ = imgproc.pad_images([np.moveaxis(x, -1, 0) for x in images], layout="CHW")
    np.testing.assert_array_equal(chw, np.moveaxis(canvas, -1, 1))
    grey, _ = imgproc.pad_images([x[..., 0] for x in images])
    np.testing.assert_array_equal(grey, canvas[..., :1])


def test_pad_images_canvas_is_square_unless_that_more_than_doubles_it_or_a_size_is_given():
    wide = [np.zeros((20, 100, 3), np.uint8)]
    assert imgproc.pad_images([np.zeros((60, 100, 3), np.uint8)])[0].shape[1:3] == (canvas_side(100),) * 2
    assert imgproc.pad_images(wide)[0].shape[1:3] == (canvas_side(20), canvas_side(100))
    canvas, sizes = imgproc.pad_images(wide, size=(32, 128))
    assert canvas.shape == (1, 32, 128, 3) and sizes.tolist() == [[20, 100]]
    chw, _ = imgproc.pad_images([np.zeros((3, 20, 100), np.uint8)], size=128, layout="CHW")
    assert chw.shape == (1, 3, 128, 128)


@pytest.mark.parametrize("images, kwargs, match", [
    ([], {}, "images must be a non-empty list of arrays"),
    (np.zeros((2, 4, 4, 3)), {}, "images must be a non-empty list of arrays"),
    ([np.zeros((4, 4, 3))], {"layout": "NHWC"}, "layout must be None, 'HWC' or 'CHW'"),
    ([np.zeros((4, 4, 3), np.uint8), np.zeros((4, 4, 3), np.float32)], {}, "must share one dtype"),
    ([np.zeros((4, 4, 3)), np.zeros((9, 4, 3))], {"size": 8}, r"size \(8, 8\) does not hold image 1 \(9, 4\)"),
    ([np.zeros((4, 4, 3))], {"size": 0}, "size must be positive integers"),
    ([np.zeros((4, 4, 3))], {"size": "big"}, r"size must be an int or a pair \(height, width\)"),
])
def test_pad_images_refuses_what_is_not_a_list_of_images(images, kwargs, match):
    with pytest.raises(ValueError, match=match):
        imgproc.pad_images(images, **kwargs)


def test_a_list_of_device_images_compiles_per_canvas_not_per_image_size(compilations):
    pipe = imgproc.Pipeline([{"op": "random_resized_crop", "size": [16, 16]}])
    shapes = [(int(h), int(w), 3) for h, w in RNG.integers(33, 63, (16, 2))]
    images = [jax.device_put(RNG.integers(0, 256, s, dtype=np.uint8)) for s in shapes]
    pipe(images[:8], key=1)
    with compilations() as compiled:
        out = pipe(images[8:], key=1, indices=np.arange(8, 16))
    assert not compiled  # eight new sizes, the canvas of the first eight
    assert isinstance(out, jax.Array) and out.devices() == images[0].devices()
    np.testing.assert_array_equal(np.asarray(out), pipe([np.asarray(x) for x in images[8:]], key=1,
                                                        indices=np.arange(8, 16)))


def test_a_detection_recipe_takes_the_padded_form_with_one_batched_targets_dict():
    """detection_train on (canvas, sizes) and a batched dict of boxes (padded to one count,
    the extra boxes invalid) moves the boxes as the list with one dict per image does."""
    sizes = [(30, 44), (41, 27), (36, 36)]
    images = [RNG.integers(0, 256, s + (3,), dtype=np.uint8) for s in sizes]
    boxes = [np.array([[2.0, 3.0, 20.0, 25.0]], np.float32),
             np.array([[1.0, 1.0, 10.0, 12.0], [5.0, 6.0, 25.0, 38.0]], np.float32),
             np.array([[0.0, 0.0, 36.0, 36.0]], np.float32)]
    recipe = recipes.detection_train((24, 24))
    want = recipe(images, key=4, indices=[7, 8, 9], targets=[{"boxes": b} for b in boxes])
    canvas, true_hw = imgproc.pad_images(images)
    padded = np.zeros((3, 2, 4), np.float32)
    valid = np.zeros((3, 2), bool)
    for i, b in enumerate(boxes):
        padded[i, :len(b)], valid[i, :len(b)] = b, True
    got = recipe(canvas, key=4, indices=[7, 8, 9], sizes=true_hw, targets={"boxes": padded, "box_valid": valid})
    np.testing.assert_array_equal(got["images"], want["images"])
    for i, b in enumerate(boxes):
        moved = want["targets"][i]
        np.testing.assert_array_equal(got["targets"]["boxes"][i, :len(b)], moved["boxes"])
        np.testing.assert_array_equal(got["targets"]["box_valid"][i, :len(b)], moved["box_valid"])
