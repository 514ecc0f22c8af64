"""Recipes (imgproc/recipes.py): shapes and dtypes, the strategies agree, reproducibility
from key and indices, one program under jit, the eval recipe against the ops step by step
and torchvision's normalize formula, boxes/masks aligned with the image through the
detection recipe, JSON round trip, bad input."""

from __future__ import annotations

import functools
import json
import pickle
import re

import jax
import numpy as np
import pytest

import imgproc
from imgproc import recipes

RNG = np.random.default_rng(13)
X = RNG.integers(0, 256, (8, 64, 64, 3)).astype(np.uint8)
CLASSES = np.array([0, 1, 2, 3, 4, 5, 6, 7])
IDX = np.arange(100, 108)
MEAN, STD = np.array(recipes.IMAGENET_MEAN), np.array(recipes.IMAGENET_STD)


def _train(**options):
    return recipes.get("imagenet_train", size=32, **options)


@functools.cache
def _select_reference():
    return _train(strategy="select")(X, CLASSES, key=5, indices=IDX, num_classes=10)


@pytest.mark.parametrize("strategy", list(imgproc.STRATEGIES))
def test_imagenet_train_shapes_labels_and_strategies_agree(strategy):
    out = _train(strategy=strategy)(X, CLASSES, key=5, indices=IDX, num_classes=10)
    x, y = out["images"], out["labels"]
    assert set(out) == {"images", "labels"}
    assert x.shape == (8, 32, 32, 3) and x.dtype == np.float32 and isinstance(x, np.ndarray)
    assert y.shape == (8, 10) and y.dtype == np.float32
    np.testing.assert_allclose(y.sum(1), 1.0, atol=1e-6)
    assert np.all(y >= 0)
    partners = []
    for i in range(8):  # its own class (weight > 0 but for a CutMix box over all) and one partner's
        others = set(np.flatnonzero(y[i] > 1e-7)) - {CLASSES[i]}
        assert len(others) <= 1 and others <= set(range(8))
        partners += list(others)
    assert len(partners) == len(set(partners)) >= 6  # a cycle through the batch: every partner once
    # normalized values: (x / 255 - mean) / std lies in [(0 - mean) / std, (1 - mean) / std] up to
    # trivial_augment's float excursions (no clipping between stages)
    assert x.min() < -1.0 and x.max() > 1.0
    reference = _select_reference()
    # every strategy, the same numbers up to float rounding (docs/augment.md, "Strategies"):
    # XLA rounds the crop and the warps differently under vmap and lax.map, so a rare pixel
    # of the uint8 augmentation lands one level apart (1 / 255 / std after normalize), and
    # Equalize, which counts levels, can turn such a tie into a few levels on a few pixels
    # (key 5: 3 of 24,576 values, up to 4 levels)
    level = 1.0 / 255 / min(recipes.IMAGENET_STD)
    diff = np.abs(x - reference["images"])
    assert np.mean(diff > level + 1e-4) < 5e-4 and diff.max() < 8 * level
    assert np.mean(diff > 1e-4) < 1e-3
    np.testing.assert_allclose(y, reference["labels"], atol=1e-6)


@pytest.mark.parametrize("dtype, input_max", [(np.uint8, 255.0), (np.float32, 1.0)])
def test_erased_boxes_are_zero_after_normalize_as_torchvision(dtype, input_max):
    """torchvision erases to 0 after Normalize; the recipe fills the mean before it."""
    r = _train(random_erase=1.0, mixup_alpha=0.0, cutmix_alpha=0.0, input_max=input_max, scale=(1.0, 1.0))
    x = X.astype(dtype) if dtype == np.uint8 else X.astype(dtype) / 255
    spec = r.to_spec()["pipeline"]
    assert [s["op"] for s in spec][-2:] == ["random_erasing", "normalize"]
    pipe = imgproc.Pipeline(spec)
    y, params = pipe(x, key=2, return_params=True)
    erasing = params[3]
    for i in range(8):
        t, l, h, w = (int(erasing[k][i]) for k in ("top", "left", "height", "width"))
        assert erasing["erase"][i] and h * w > 0
        np.testing.assert_allclose(y[i, t:t + h, l:l + w], 0.0, atol=1e-6)
        assert np.abs(y[i]).max() > 0.5  # the rest is not erased
    # the recipe rounds its augmented uint8 batch before normalize (as torchvision's uint8
    # transforms): the erased pixels are the mean rounded to a level, within half a level of 0
    out = r(x, key=2)["images"]
    half_level = 0.5 / 255 / min(STD) if dtype == np.uint8 else 1e-6
    for i in range(8):
        t, l, h, w = (int(erasing[k][i]) for k in ("top", "left", "height", "width"))
        np.testing.assert_allclose(out[i, t:t + h, l:l + w], 0.0, atol=half_level)


def test_imagenet_train_one_hot_labels_equal_integer_labels():
    r = _train()
    a = r(X, CLASSES, key=1, indices=IDX, num_classes=8)
    b = r(X, np.eye(8, dtype=np.float32)[CLASSES], key=1, indices=IDX)
    np.testing.assert_array_equal(a["images"], b["images"])
    np.testing.assert_array_equal(a["labels"], b["labels"])


def test_pipeline_part_is_reproducible_in_any_split_and_order():
    """Without the mix every sample depends only on (key, its index)."""
    r = _train(mixup_alpha=0.0, cutmix_alpha=0.0)
    assert r.mix is None
    whole = r(X, key=3, indices=IDX)["images"]
    halves = np.concatenate([r(X[:3], key=3, indices=IDX[:3])["images"], r(X[3:], key=3, indices=IDX[3:])["images"]])
    np.testing.assert_allclose(halves, whole, atol=1e-5)
    perm = RNG.permutation(8)
    np.testing.assert_allclose(r(X[perm], key=3, indices=IDX[perm])["images"], whole[perm], atol=1e-5)
    assert not np.allclose(r(X, key=4, indices=IDX)["images"], whole)


def test_mixed_recipe_is_reproducible_for_the_same_batch_in_any_order():
    """With MixUp/CutMix: the same batch (images and indices) and key give the same result in
    any order of the batch; partners come from the batch, so another split differs."""
    r = _train()
    a = r(X, CLASSES, key=7, indices=IDX, num_classes=8)
    again = r(X, CLASSES, key=7, indices=IDX, num_classes=8)
    np.testing.assert_array_equal(a["images"], again["images"])
    perm = RNG.permutation(8)
    p = r(X[perm], CLASSES[perm], key=7, indices=IDX[perm], num_classes=8)
    np.testing.assert_allclose(p["images"], a["images"][perm], atol=1e-5)
    np.testing.assert_allclose(p["labels"], a["labels"][perm], atol=1e-6)


def test_one_program_under_jit_and_no_recompile():
    r = _train()
    traces = []

    def step(x, y, k, idx):
        traces.append(1)
        return r(x, y, key=k, indices=idx, num_classes=8)

    fn = jax.jit(step)
    a = fn(X, CLASSES, jax.random.key(0), IDX)
    b = fn(X[::-1].copy(), CLASSES, jax.random.key(1), IDX + 8)
    assert len(traces) == 1  # the second call (new key, images, indices) reuses the program
    assert isinstance(a["images"], jax.Array) and a["images"].dtype == np.float32
    assert not np.allclose(np.asarray(a["images"]), np.asarray(b["images"]))
    eager = r(X, CLASSES, key=jax.random.key(0), indices=IDX, num_classes=8)  # the recipe's own program
    r(X, CLASSES, key=jax.random.key(1), indices=IDX + 8, num_classes=8)
    assert r.trace_count == 2  # traced once in the caller's jit, once for concrete input: not again
    np.testing.assert_allclose(np.asarray(a["images"]), eager["images"], atol=1e-4)
    np.testing.assert_allclose(np.asarray(a["labels"]), eager["labels"], atol=1e-6)


def test_imagenet_eval_equals_the_ops_step_by_step_and_torchvision_normalize():
    x = RNG.integers(0, 256, (3, 48, 64, 3)).astype(np.uint8)
    out = recipes.imagenet_eval(32, 40)(x, key=0)["images"]
    assert out.shape == (3, 32, 32, 3) and out.dtype == np.float32
    # the augmentation keeps float32 between its stages and returns uint8 (rounded once), as
    # torchvision's Resize and CenterCrop on a uint8 image; then ToDtype/Normalize in float
    step = imgproc.resize_shorter(x.astype(np.float32), 40)
    assert step.shape == (3, 40, 53, 3)
    step = np.clip(np.round(imgproc.center_crop(step, 32)), 0, 255).astype(np.uint8)
    # torchvision: ToTensor (x / 255) then Normalize ((t - mean) / std), in float64
    reference = (step.astype(np.float64) / 255.0 - MEAN) / STD
    np.testing.assert_allclose(out, reference, atol=2e-5)
    ops = imgproc.normalize(step, MEAN.tolist(), STD.tolist())
    np.testing.assert_allclose(out, ops, atol=1e-6)
    labels = np.array([1, 2, 3])  # no mix: labels pass through
    np.testing.assert_array_equal(recipes.imagenet_eval(32, 40)(x, labels, key=0)["labels"], labels)


def _scene(rng, n, h, w):
    """Grey images, black background with one white rectangle each; its box and mask."""
    images = np.zeros((n, h, w, 3), np.uint8)
    masks = np.zeros((n, h, w), np.uint8)
    boxes = np.zeros((n, 1, 4), np.float32)
    for i in range(n):
        bw, bh = rng.integers(w // 5, w // 2), rng.integers(h // 5, h // 2)
        x1, y1 = rng.integers(0, w - bw), rng.integers(0, h - bh)
        images[i, y1:y1 + bh, x1:x1 + bw] = 255
        masks[i, y1:y1 + bh, x1:x1 + bw] = 1
        boxes[i, 0] = (x1, y1, x1 + bw, y1 + bh)
    return images, boxes, masks


def _extent(on):
    rows, cols = np.flatnonzero(on.any(1)), np.flatnonzero(on.any(0))
    return np.array([cols[0], rows[0], cols[-1] + 1, rows[-1] + 1], np.float64)


def test_detection_boxes_and_masks_stay_on_the_object():
    """The issue's alignment test: draw a box and its filled mask into the image, run the
    recipe with both, and check the box, the mask and the object coincide within a pixel."""
    images, boxes, masks = _scene(np.random.default_rng(0), 12, 48, 64)
    r = recipes.detection_train((40, 40), cval=0.0)
    centres = (boxes[:, :, :2] + boxes[:, :, 2:]) / 2  # a keypoint at each box's centre
    out = r(images, key=11, indices=np.arange(12), targets={"boxes": boxes, "masks": masks, "keypoints": centres})
    y, t = out["images"], out["targets"]
    assert y.shape == (12, 40, 40, 3) and y.dtype == np.uint8
    assert t["boxes"].shape == (12, 1, 4) and t["masks"].shape == (12, 40, 40) and t["box_valid"].shape == (12, 1)
    checked = centred = 0
    for i in range(12):
        if not t["box_valid"][i, 0]:
            assert t["masks"][i].sum() < 2  # a dropped box had (almost) nothing left in view
            continue
        grey = y[i].astype(np.float64).mean(-1)
        obj = grey > (grey.min() + grey.max()) / 2  # the white object, whatever the colour jitter did
        box = t["boxes"][i, 0].astype(np.float64)
        np.testing.assert_allclose(_extent(t["masks"][i] > 0), box, atol=1.0, err_msg=f"mask vs box, image {i}")
        np.testing.assert_allclose(_extent(obj), box, atol=1.0, err_msg=f"image vs box, image {i}")
        if t["keypoint_valid"][i, 0] and np.all(box[:2] > 0) and np.all(box[2:] < 40):  # the box was not cut
            np.testing.assert_allclose(t["keypoints"][i, 0], (box[:2] + box[2:]) / 2, atol=1e-3)
            centred += 1
        checked += 1
    assert checked >= 8 and centred >= 3
    flipped_or_moved = np.abs(t["boxes"][:, 0] - boxes[:, 0] * 40 / 64).max()
    assert flipped_or_moved > 2  # the draws did move the boxes


def test_detection_targets_follow_the_same_draw_as_a_split_batch():
    images, boxes, masks = _scene(np.random.default_rng(1), 8, 32, 32)
    r = recipes.detection_train((24, 24))
    whole = r(images, key=2, indices=IDX, targets={"boxes": boxes})
    half = r(images[4:], key=2, indices=IDX[4:], targets={"boxes": boxes[4:]})
    np.testing.assert_array_equal(half["images"], whole["images"][4:])
    np.testing.assert_allclose(half["targets"]["boxes"], whole["targets"]["boxes"][4:], atol=1e-4)


@pytest.mark.parametrize("name", recipes.names())
def test_json_round_trip(name):
    r = recipes.get(name, size=24) if name != "imagenet_eval" else recipes.get(name, size=24, resize=28)
    text = json.dumps(r.to_spec())
    back = recipes.Recipe.from_spec(json.loads(text))
    assert back.to_spec() == r.to_spec() and recipes.Recipe.from_spec(text).to_spec() == r.to_spec()
    assert pickle.loads(pickle.dumps(r)).to_spec() == r.to_spec()  # pickles as its spec (worker processes)
    if name != "imagenet_train":  # the train recipe's numbers: the tests above
        x = X[:2, :40, :48]
        np.testing.assert_array_equal(back(x, key=9)["images"], r(x, key=9)["images"])


@pytest.mark.parametrize("make, message", [
    (lambda: recipes.get("imagenet_tran"), "recipe must be one of 'imagenet_train'"),
    (lambda: recipes.get("imagenet_train", size=0), "size must be positive"),
    (lambda: recipes.imagenet_train(size=-3), "size must be positive"),
    (lambda: recipes.imagenet_train(size=(32,)), "size must be an int or a pair"),
    (lambda: recipes.imagenet_train(size=2.5), "size must be an int or a pair"),
    (lambda: recipes.imagenet_eval(224, resize=0), "resize must be a positive integer"),
    (lambda: recipes.imagenet_eval(224, resize=200), "must be at least the crop size"),
    (lambda: recipes.detection_train((0, 640)), "size must be positive"),
    (lambda: recipes.imagenet_train(mixup_alpha=-1), "mixup_alpha must be"),
    (lambda: recipes.imagenet_train(random_erase=2), "random_erase must be"),
    (lambda: recipes.imagenet_train(scale=(1.5, 0.1)), "scale must be a pair low <= high"),
    (lambda: recipes.imagenet_train(scale=(0.0, 1.0)), "scale[0] must be"),
    (lambda: recipes.imagenet_train(std=(0.2, 0.0, 0.2)), "std[1] must be"),
    (lambda: recipes.imagenet_eval(mean=(0.5, 0.5)), "one value per channel"),
    (lambda: recipes.imagenet_train(input_max=0), "input_max must be"),
    (lambda: recipes.detection_train(contrast=(1.5, 0.5)), "contrast must be a pair low <= high"),
    (lambda: recipes.detection_train(hue=0.7), "hue must be"),
    (lambda: recipes.Recipe({"name": "x", "pipeline": [], "mixx": None}), "no key 'mixx'"),
    (lambda: recipes.Recipe({"pipeline": []}), "needs 'name'"),
    (lambda: recipes.Recipe({"name": "x", "pipeline": [], "mix": {"op": "blend"}}), "mix ops are 'mixup', 'cutmix'"),
    (lambda: recipes.Recipe({"name": "x", "pipeline": [], "targets": ["polygons"]}), "targets must be one of"),
    (lambda: recipes.Recipe({"name": "x", "pipeline": [], "targets": ["boxes"], "mix": {"op": "mixup"}}),
     "cannot mix"),
    (lambda: recipes.Recipe({"name": "x", "pipeline": [{"op": "no_such_op"}]}), "no_such_op"),
])
def test_bad_recipes_are_refused(make, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make()


def test_bad_calls_are_refused():
    r = _train()
    with pytest.raises(ValueError, match="mixes labels"):
        r(X, key=0)
    with pytest.raises(ValueError, match="need num_classes"):
        r(X, CLASSES, key=0)
    with pytest.raises(ValueError, match=r"class labels must be in \[0, 4\]"):
        r(X, CLASSES, key=0, num_classes=5)
    with pytest.raises(ValueError, match="moves no targets"):
        recipes.imagenet_eval(32, 40)(X, key=0, targets={"boxes": np.zeros((8, 1, 4), np.float32)})
    with pytest.raises(ValueError, match="takes targets"):
        recipes.detection_train((32, 32))(X, key=0, targets={"labels": np.zeros((8, 1))})
    with pytest.raises(ValueError, match="key"):
        r(X, CLASSES, key=None, num_classes=8)
    bad = X.astype(np.float32) / 255
    bad[0, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        r(bad, CLASSES, key=0, num_classes=8)
