"""Variable-size input (imgproc/pipeline/variable_size.py): a list of images of different
sizes through a pipeline or recipe whose first stage sets the size. Image i of the list's
result equals the pipeline on that image alone at its exact size, with the same key and
index, bit for bit, for every size-setting op in each interpolation and antialias
setting, uint8 and float32, HWC and CHW; the padded form under jit gives the same; a
dataset of many sizes compiles a bounded number of programs; bad lists are refused with
one line that says what to do."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import imgproc
from imgproc import recipes
from imgproc.core.arrays import canvas_side

RNG = np.random.default_rng(42)
SIZES = [(37, 50), (61, 29), (24, 24)]  # taller, wider, square; one smaller than most outputs
IMAGES = [RNG.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in SIZES]

# One table of size-setting stages (and pairs): every op with a canvas form, each
# resampling method and antialias setting.
CASES = {
    **{f"resize-{m}-aa{aa}": [{"op": "resize", "size": [20, 27], "method": m, "antialias": aa}]
       for m in ("linear", "cubic", "lanczos3") for aa in (True, False)},
    "resize-nearest": [{"op": "resize", "size": [20, 27], "method": "nearest"}],
    "resize-area": [{"op": "resize", "size": [20, 27], "method": "area"}],
    "resize-upscale-cubic": [{"op": "resize", "size": [70, 66], "method": "cubic"}],
    "center_crop-pads-some": [{"op": "center_crop", "size": [30, 40], "cval": 7.0}],
    "letterbox-linear": [{"op": "letterbox", "size": [32, 32], "cval": 114.0}],
    "letterbox-nearest": [{"op": "letterbox", "size": [28, 36], "method": "nearest"}],
    "letterbox-lanczos3-noaa": [{"op": "letterbox", "size": [32, 32], "method": "lanczos3", "antialias": False}],
    "random_crop": [{"op": "random_crop", "size": [18, 20]}],
    "resized_crop": [{"op": "resized_crop", "top": 2.5, "left": 3, "height": 15, "width": 12.5, "size": [10, 10]}],
    "random_resized_crop-aa": [{"op": "random_resized_crop", "size": [24, 24]}],
    "random_resized_crop-noaa": [{"op": "random_resized_crop", "size": [16, 20], "antialias": False}],
    "shorter+center_crop": [{"op": "resize_shorter", "size": 22}, {"op": "center_crop", "size": [20, 20]}],
    "shorter-area+center_crop-pads": [{"op": "resize_shorter", "size": 20, "method": "area"},
                                      {"op": "center_crop", "size": [24, 24]}],
    "shorter+random_crop": [{"op": "resize_shorter", "size": 24, "method": "cubic"},
                            {"op": "random_crop", "size": [20, 20]}],
    "rrc+flip+jitter": [{"op": "random_resized_crop", "size": [16, 16]}, {"op": "random_flip_left_right"},
                        {"op": "random_brightness", "max_delta": 0.2}],
}


def _as(dtype, image):
    return image if dtype == np.uint8 else (image / 255.0).astype(np.float32)


def _alone(pipe, image, i, key):
    """The pipeline on image ``i`` alone at its exact size (a batch of one, index i)."""
    return pipe(image[None], key=key, indices=[i])[0] if pipe.is_random else pipe(image[None])[0]


# every case in uint8 (where rounding shows a difference first); float32 for one case of
# each size-setting op (the list machinery does not look at the dtype)
FLOAT_CASES = ("resize-linear-aaTrue", "center_crop-pads-some", "letterbox-linear", "random_crop", "resized_crop",
               "random_resized_crop-aa", "shorter+center_crop")
DTYPE_CASES = [(name, np.uint8) for name in CASES] + [(name, np.float32) for name in FLOAT_CASES]


@pytest.fixture
def dirty_canvases(monkeypatch):
    """Canvas buffers that hold 255 (integer) or NaN (float) before the images are written
    into them, as a reused buffer may: the images' results must not depend on it."""
    from imgproc.pipeline import variable_size
    clean = variable_size.host_buffer

    def dirty(shape, dtype):
        out = clean(shape, dtype)
        out[...] = np.nan if np.issubdtype(dtype, np.floating) else 255
        return out

    monkeypatch.setattr(variable_size, "host_buffer", dirty)


@pytest.fixture
def small_windows(monkeypatch):
    """Windows of 16, 32 and 48 pixels for the forms read per image (the library's are
    288-768): the test's small images then take every branch (those at least as large as
    the output), the whole slot included."""
    from imgproc.pipeline import variable_size
    monkeypatch.setattr(variable_size, "IMAGE_WINDOW_SIDES", (16, 32, 48))


@pytest.mark.parametrize("name, dtype", DTYPE_CASES, ids=[f"{n}-{np.dtype(d).name}" for n, d in DTYPE_CASES])
def test_each_image_of_a_list_equals_the_image_alone(name, dtype, dirty_canvases, small_windows):
    """(In canvases whose padding held 255 or NaN before, ``dirty_canvases``; each image
    read from a window of its slot, ``small_windows``.)"""
    pipe = imgproc.Pipeline(CASES[name])
    images = [_as(dtype, x) for x in IMAGES]
    key = 7 if pipe.is_random else None
    out = pipe(images, key=key)
    assert isinstance(out, np.ndarray) and out.dtype == dtype and out.shape[0] == len(images)
    for i, image in enumerate(images):
        np.testing.assert_array_equal(out[i], _alone(pipe, image, i, key), err_msg=f"image {i} {SIZES[i]}")


@pytest.mark.parametrize("name", ["resize-linear-aaTrue", "letterbox-linear", "random_resized_crop-aa",
                                  "shorter+center_crop"])
def test_channels_first_lists_equal_channels_last(name):
    hwc = imgproc.Pipeline(CASES[name])
    chw = imgproc.Pipeline(CASES[name], layout="CHW")
    key = 3 if hwc.is_random else None
    out = chw([np.moveaxis(x, -1, 0) for x in IMAGES], key=key)
    np.testing.assert_array_equal(np.moveaxis(out, 1, -1), hwc(IMAGES, key=key))


def test_grey_images_give_a_batch_of_planes():
    pipe = imgproc.Pipeline(CASES["random_resized_crop-aa"])
    planes = [x[..., 0] for x in IMAGES]
    out = pipe(planes, key=1)
    assert out.shape == (3, 24, 24)
    for i, plane in enumerate(planes):
        np.testing.assert_array_equal(out[i], pipe(plane[None, ..., None], key=1, indices=[i])[0, ..., 0])


def test_params_replay_indices_and_array_types():
    pipe = imgproc.Pipeline(CASES["rrc+flip+jitter"])
    y, params = pipe(IMAGES, key=5, indices=[10, 11, 12], return_params=True)
    assert params[0]["height"].shape == (3,)
    np.testing.assert_array_equal(pipe.apply(IMAGES, params, indices=[10, 11, 12]), y)
    np.testing.assert_array_equal(y[1], pipe(IMAGES[1][None], key=5, indices=[11])[0])
    on_device = pipe([jnp.asarray(x) for x in IMAGES], key=5, indices=[10, 11, 12])
    assert isinstance(on_device, jax.Array)
    np.testing.assert_array_equal(np.asarray(on_device), y)
    wide = pipe([x.astype(np.float64) / 255 for x in IMAGES], key=5)
    assert wide.dtype == np.float64


def test_padded_form_under_jit_equals_the_list():
    pipe = imgproc.Pipeline(CASES["rrc+flip+jitter"])
    canvas = np.zeros((3, 70, 80, 3), np.uint8)
    for i, x in enumerate(IMAGES):
        canvas[i, :x.shape[0], :x.shape[1]] = x
    run = jax.jit(lambda c, s, k: pipe(c, key=k, sizes=s))
    out = run(canvas, np.array(SIZES), jax.random.key(9))
    np.testing.assert_array_equal(np.asarray(out), pipe(IMAGES, key=9))


def test_many_sizes_compile_a_few_programs_and_never_again(compilations):
    """48 sizes in batches of 16: one canvas bucket, so one augmentation program (and the
    recipe's normalize + mix); a second epoch compiles nothing."""
    rng = np.random.default_rng(0)
    sizes = list(dict.fromkeys((int(rng.integers(20, 61)), int(rng.integers(20, 61))) for _ in range(80)))[:48]
    images = [rng.integers(0, 256, s + (3,), dtype=np.uint8) for s in sizes]
    canvases = {tuple(canvas_side(max(s[a] for s in sizes[b:b + 16])) for a in (0, 1)) for b in range(0, 48, 16)}
    recipe = recipes.imagenet_train(16)

    def epoch(key):
        for b in range(0, 48, 16):
            idx = np.arange(b, b + 16)
            recipe(images[b:b + 16], idx % 10, key=key, indices=idx, num_classes=10)

    with compilations() as first:
        epoch(0)
    assert len(sizes) == 48 and len(canvases) <= 2
    # one program per canvas at most: a batch that fits a canvas met before runs in it
    assert recipe._augment.trace_count <= len(canvases) and recipe.trace_count == 1
    assert len(first) <= 8, f"{len(first)} compilations for 48 sizes"
    with compilations() as second:
        epoch(1)
    assert second == []


def test_recipes_take_lists_and_eval_needs_no_key():
    train = recipes.imagenet_train(16)
    out = train(IMAGES, np.array([0, 1, 2]), key=2, num_classes=3)
    assert out["images"].shape == (3, 16, 16, 3) and out["labels"].shape == (3, 3)
    alone = train(IMAGES[2][None], np.array([2]), key=2, indices=[2], num_classes=3)
    # the mix pairs images within a batch: compare the augmentation, which is per image
    np.testing.assert_array_equal(train._augment(IMAGES, key=2)[2], train._augment(IMAGES[2][None], key=2, indices=[2])[0])
    assert alone["images"].shape == (1, 16, 16, 3)
    evaluate = recipes.imagenet_eval(16, 20)
    out = evaluate(IMAGES)["images"]
    for i, x in enumerate(IMAGES):
        np.testing.assert_array_equal(out[i], evaluate(x[None])["images"][0])
    with pytest.raises(ValueError, match="draws random parameters: call it with key="):
        train(IMAGES, np.array([0, 1, 2]), num_classes=3)


BAD = [
    ([{"op": "gaussian_blur", "sigma": 1.0}], "its first stage, gaussian_blur, keeps each image's size"),
    ([{"op": "random_flip_left_right"}, {"op": "random_resized_crop", "size": 8}],
     "move random_flip_left_right after random_resized_crop"),
    ([{"op": "random_resized_crop"}], "random_resized_crop without size= keeps each image's size"),
    ([{"op": "resize_shorter", "size": 10}], "resize_shorter's output size depends on each image's"),
    ([{"op": "resize_shorter", "size": 10, "max_size": 20}, {"op": "center_crop", "size": 8}],
     "resize_shorter's output size depends on each image's"),
    ([{"op": "random_crop", "size": [30, 30]}], r"random_crop's window \(30, 30\) is larger than image 1 \(61, 29\)"),
]


@pytest.mark.parametrize("spec,message", BAD)
def test_lists_a_pipeline_cannot_batch_are_refused(spec, message):
    with pytest.raises(ValueError, match=message):
        imgproc.Pipeline(spec)(IMAGES, key=0)


def test_bad_lists_and_padded_batches_are_refused():
    pipe = imgproc.Pipeline(CASES["random_crop"])
    with pytest.raises(ValueError, match="share one dtype"):
        pipe([IMAGES[0], IMAGES[1].astype(np.float32)], key=0)
    with pytest.raises(ValueError, match="one channel count"):
        pipe([IMAGES[0], IMAGES[1][..., :1]], key=0)
    with pytest.raises(ValueError, match="all be 2-D"):
        pipe([IMAGES[0], IMAGES[1][..., 0]], key=0)
    with pytest.raises(ValueError, match="targets is a list of one dict per image"):
        pipe(IMAGES, key=0, targets={"boxes": np.zeros((3, 1, 4), np.float32)})
    with pytest.raises(ValueError, match=r"targets\[1\]: targets\['masks'\] must have shape"):
        pipe(IMAGES, key=0, targets=[{"masks": np.zeros(s, bool)} for s in SIZES[:1] * 3])
    with pytest.raises(ValueError, match="the same keys"):
        pipe(IMAGES, key=0, targets=[TARGETS[0], {"boxes": TARGETS[1]["boxes"]}, TARGETS[2]])
    with pytest.raises(ValueError, match="one number of masks"):
        pipe(IMAGES, key=0, targets=[TARGETS[0], dict(TARGETS[1], masks=TARGETS[1]["masks"][..., :1]), TARGETS[2]])
    with pytest.raises(ValueError, match="does not say how it moves targets"):
        imgproc.Pipeline(CASES["random_crop"] + [{"op": "random_choice", "ops": [{"op": "random_rotate"}]}])(
            IMAGES, key=0, targets=TARGETS)
    canvas = np.zeros((3, 64, 64, 3), np.uint8)
    with pytest.raises(ValueError, match=r"sizes holds each image's \(height, width\)"):
        pipe(canvas, key=0, sizes=np.array([30, 30]))
    with pytest.raises(ValueError, match="sizes must be integers from 1 to"):
        pipe(canvas, key=0, sizes=np.array([[30, 30], [65, 30], [30, 30]]))


def test_a_mixing_recipe_takes_indices_as_a_list_and_a_batch_of_one():
    """Indices given as a Python list reached the jitted mix as a list of scalars (an
    internal error, whatever the batch size)."""
    train = recipes.imagenet_train(16)
    one = train(IMAGES[2][None], [2], key=2, indices=[2], num_classes=3)
    assert one["images"].shape == (1, 16, 16, 3) and one["labels"].shape == (1, 3)
    listed = train(IMAGES, [0, 1, 2], key=2, indices=[5, 6, 7], num_classes=3)
    np.testing.assert_array_equal(listed["images"], train(IMAGES, np.array([0, 1, 2]), key=2,
                                                          indices=np.array([5, 6, 7]), num_classes=3)["images"])


def _targets(h, w, boxes, rng):
    x1, y1 = rng.uniform(-2, w - 3, boxes), rng.uniform(-2, h - 3, boxes)
    return {"boxes": np.stack([x1, y1, x1 + rng.uniform(1, 9, boxes), y1 + rng.uniform(1, 9, boxes)], -1).astype(np.float32),
            "keypoints": np.stack([rng.uniform(0, w, boxes + 1), rng.uniform(0, h, boxes + 1)], -1).astype(np.float32),
            "masks": rng.integers(0, 5, (h, w, 2)).astype(np.uint8)}


TARGET_RNG = np.random.default_rng(5)
TARGETS = [_targets(h, w, n, TARGET_RNG) for (h, w), n in zip(SIZES, (3, 1, 4))]  # ragged: 3, 1 and 4 boxes
# one case per target rule a size-setting stage (or pair) moves targets with
TARGET_CASES = ["resize-linear-aaTrue", "center_crop-pads-some", "letterbox-linear", "random_crop", "resized_crop",
                "random_resized_crop-aa", "shorter-area+center_crop-pads", "shorter+random_crop", "rrc+flip+jitter"]


def _assert_same_targets(got, alone, backend="cpu"):
    """Equal; off the CPU, coordinates within 4 units in the last place (an H200 gave 1-2:
    for the image alone its sizes are compile-time constants, which XLA:GPU folds into
    multiply-adds in another rounding than the list's traced sizes; docs/augment.md)."""
    assert set(got) == set(alone)
    for k, v in alone.items():
        assert got[k].shape == v.shape and got[k].dtype == v.dtype, k
        if backend != "cpu" and v.dtype == np.float32:
            np.testing.assert_array_max_ulp(got[k], v, maxulp=4)
        else:
            np.testing.assert_array_equal(got[k], v, err_msg=k)


@pytest.mark.parametrize("name", TARGET_CASES)
def test_targets_follow_each_image_of_a_list(name, backend):
    pipe = imgproc.Pipeline(CASES[name])
    key = 4 if pipe.is_random else None
    out, moved = pipe(IMAGES, key=key, targets=TARGETS, min_box_area=2.0)
    assert isinstance(moved, list) and len(moved) == len(IMAGES)
    for i, (image, t) in enumerate(zip(IMAGES, TARGETS)):
        y, alone = pipe(image[None], key=key, indices=[i], targets={k: v[None] for k, v in t.items()}, min_box_area=2.0)
        np.testing.assert_array_equal(out[i], y[0])
        assert isinstance(moved[i]["boxes"], np.ndarray) and moved[i]["boxes"].shape == t["boxes"].shape
        _assert_same_targets(moved[i], {k: np.asarray(v[0]) for k, v in alone.items()}, backend)


def test_targets_with_channels_first_grey_replay_and_the_padded_form():
    pipe = imgproc.Pipeline(CASES["rrc+flip+jitter"])
    y, moved, params = pipe(IMAGES, key=6, targets=TARGETS, return_params=True)
    replayed = pipe.apply(IMAGES, params, targets=TARGETS)
    np.testing.assert_array_equal(replayed[0], y)
    chw = imgproc.Pipeline(CASES["rrc+flip+jitter"], layout="CHW")
    _, moved_chw = chw([np.moveaxis(x, -1, 0) for x in IMAGES], key=6, targets=TARGETS)
    _, moved_grey = pipe([x[..., 0] for x in IMAGES], key=6, targets=TARGETS)
    for i in range(len(IMAGES)):
        for other in (replayed[1], moved_chw, moved_grey):
            _assert_same_targets(other[i], moved[i])
    # the padded form: one batched dict, masks padded as the images, under jit
    canvas = np.zeros((3, 70, 80, 3), np.uint8)
    masks = np.zeros((3, 70, 80, 2), np.uint8)
    for i, (x, t) in enumerate(zip(IMAGES, TARGETS)):
        canvas[i, :x.shape[0], :x.shape[1]] = x
        masks[i, :x.shape[0], :x.shape[1]] = t["masks"]
    keypoints = np.stack([t["keypoints"][:2] for t in TARGETS])
    run = jax.jit(lambda c, s, k, t: pipe(c, key=k, sizes=s, targets=t))
    y_padded, batched = run(canvas, np.array(SIZES), jax.random.key(6), {"masks": masks, "keypoints": keypoints})
    np.testing.assert_array_equal(np.asarray(y_padded), y)
    for i in range(len(IMAGES)):
        np.testing.assert_array_equal(np.asarray(batched["masks"][i]), moved[i]["masks"])
        np.testing.assert_array_equal(np.asarray(batched["keypoints"][i]), moved[i]["keypoints"][:2])
        np.testing.assert_array_equal(np.asarray(batched["keypoint_valid"][i]), moved[i]["keypoint_valid"][:2])


@pytest.mark.parametrize("antialias", [True, False])
def test_looped_random_resized_crop_reads_a_window_with_the_same_bits(antialias):
    """The per-image loop reads each box from a window around it (a branch per window
    side), sliced from the canvas batch: boxes at the corners, the edges and the middle,
    small to whole, give the canvas form's bits."""
    from imgproc.augment.geometry import WINDOW_SIDES, _random_resized_crop_canvas, _random_resized_crop_looped
    rng = np.random.default_rng(1)
    canvas = np.zeros((640, 704, 3), np.uint8)
    canvas[:600, :650] = rng.integers(0, 256, (600, 650, 3), dtype=np.uint8)
    true_hw = (jnp.int32(600), jnp.int32(650))
    boxes = [(0, 0, 30, 40), (590.5, 640.2, 9.5, 9.8), (100.3, 200.7, 150, 170), (50, 60, 280, 300),
             (300, 10, 299.9, 400), (400, 500, 200, 150), (0, 0, 600, 650), (0.4, 3, 597.6, 640)]
    for size in ((24, 24), (224, 160)):
        batch = np.stack([255 - canvas, canvas])  # image 1 of a batch: only its slot is read
        run = jax.jit(lambda x, p: (_random_resized_crop_looped(batch, 1, p, true_hw, layout="HWC", size=size,
                                                                antialias=antialias),
                                    _random_resized_crop_canvas(x.astype(jnp.float32), p, true_hw, layout="HWC",
                                                                size=size, antialias=antialias)))
        for top, left, height, width in boxes:
            params = {k: jnp.float32(v) for k, v in zip(("top", "left", "height", "width"), (top, left, height, width))}
            looped, whole = run(canvas, params)
            np.testing.assert_array_equal(np.asarray(looped), np.asarray(whole), err_msg=f"{size} {top, left, height, width}")
    assert WINDOW_SIDES[-1] < 640  # every window and the whole canvas were read


def test_a_smaller_batch_runs_in_a_canvas_met_before(compilations):
    """An epoch's last, smaller batch (and one of smaller images) runs in the canvas the
    full batches compiled, in its extra slots zero images; the results are the images'."""
    rng = np.random.default_rng(3)
    full = [rng.integers(0, 256, (int(rng.integers(40, 61)), int(rng.integers(40, 61)), 3), dtype=np.uint8)
            for _ in range(8)]
    last = [rng.integers(0, 256, (int(rng.integers(30, 50)), int(rng.integers(30, 50)), 3), dtype=np.uint8)
            for _ in range(5)]
    pipe = imgproc.Pipeline(CASES["rrc+flip+jitter"])
    pipe(full, key=1)
    with compilations() as later:
        out = pipe(last, key=1, indices=np.arange(8, 13))
    assert pipe.trace_count == 1 and later == []
    assert out.shape == (5, 16, 16, 3)
    for i in (0, 4):
        np.testing.assert_array_equal(out[i], pipe(last[i][None], key=1, indices=[8 + i])[0])
    again, params = pipe(last, key=1, indices=np.arange(8, 13), return_params=True)
    assert params[0]["top"].shape == (5,)
    np.testing.assert_array_equal(again, out)
    np.testing.assert_array_equal(pipe.apply(last, params, indices=np.arange(8, 13)), out)


def test_the_detection_recipe_takes_photos_of_different_sizes_with_their_targets():
    detect = recipes.detection_train((24, 24))
    targets = [{k: t[k] for k in ("boxes", "masks")} for t in TARGETS]
    out = detect(IMAGES, key=3, indices=[4, 5, 6], targets=targets)
    assert out["images"].shape == (3, 24, 24, 3) and len(out["targets"]) == 3
    for i, (image, t) in enumerate(zip(IMAGES, targets)):
        alone = detect(image[None], key=3, indices=[4 + i], targets={k: v[None] for k, v in t.items()})
        np.testing.assert_array_equal(out["images"][i], alone["images"][0])
        for k, v in alone["targets"].items():
            np.testing.assert_array_equal(out["targets"][i][k], np.asarray(v[0]), err_msg=k)
    with pytest.raises(ValueError, match="imagenet_train' moves no targets"):
        recipes.imagenet_train(16)(IMAGES, [0, 1, 2], key=0, num_classes=3, targets=targets)


def test_a_mixing_recipes_last_smaller_batch_compiles_nothing(compilations):
    """A dataset's last batch runs in the programs of the full batches: the canvas's, and
    normalize + mix padded to the full batch, where the padding mixes with no image; its
    images and labels are those of the smaller batch run alone. The batches are over 1 MB,
    where a misaligned padded batch would be read through a flat view, another program."""
    rng = np.random.default_rng(5)
    photos = [rng.integers(0, 256, (int(rng.integers(40, 70)), int(rng.integers(40, 70)), 3), dtype=np.uint8)
              for _ in range(24)]
    labels = np.arange(24) % 4
    recipe = imgproc.recipes.get("imagenet_train", size=128)
    recipe(photos, labels, key=2, num_classes=4)
    with compilations() as later:
        out = recipe(photos[:13], labels[:13], key=2, indices=np.arange(13), num_classes=4)
    assert later == [] and out["images"].shape == (13, 128, 128, 3) and out["labels"].shape == (13, 4)
    alone = imgproc.recipes.get("imagenet_train", size=128)(photos[:13], labels[:13], key=2, indices=np.arange(13),
                                                            num_classes=4)
    np.testing.assert_array_equal(out["images"], alone["images"])
    np.testing.assert_array_equal(out["labels"], alone["labels"])
