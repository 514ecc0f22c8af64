"""Targets (boxes, masks, keypoints) move with the image: every geometric op's rule against
the image itself (a box and its filled mask drawn into the image stay together within one
pixel; a keypoint follows its marked pixel), exact moves of the deterministic ops, replay,
refusals and bad input."""

import jax
import numpy as np
import pytest

import imgproc
from imgproc.augment.size import letterbox_box
from imgproc.core.registry import KEEPS_TARGETS

B, H, W = 5, 32, 40


def scene(h=H, w=W, seed=0):
    """Images with one bright box each, its mask, its box, a far-away second box and a keypoint
    at the centre of a marked 3×3 block (in a second channel)."""
    rng = np.random.default_rng(seed)
    x = np.zeros((B, h, w, 3), np.uint8)
    masks = np.zeros((B, h, w), np.uint8)
    boxes = np.zeros((B, 2, 4), np.float32)
    kp = np.zeros((B, 1, 2), np.float32)
    for i in range(B):
        x1, y1 = rng.integers(6, w // 2 - 2), rng.integers(6, h // 2 - 2)
        x2, y2 = x1 + rng.integers(8, w // 2 - 4), y1 + rng.integers(8, h // 2 - 4)
        x[i, y1:y2, x1:x2, 0] = 255
        masks[i, y1:y2, x1:x2] = 1
        boxes[i] = [[x1, y1, x2, y2], [0, 0, 2, 2]]
        r, c = rng.integers(8, h - 8), rng.integers(8, w - 8)
        x[i, r - 1:r + 2, c - 1:c + 2, 1] = 255
        kp[i, 0] = [c + 0.5, r + 0.5]
    return x, {"boxes": boxes, "masks": masks, "keypoints": kp}


def bbox(a):
    ys, xs = np.nonzero(a)
    return None if len(xs) == 0 else np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], float)


GEOMETRIC = [
    [{"op": "random_flip_left_right"}, {"op": "random_flip_up_down"}],
    [{"op": "random_crop", "size": [24, 30]}, {"op": "random_flip_left_right"}],
    [{"op": "random_resized_crop", "size": [28, 28], "scale": [0.5, 1.0]}],
    [{"op": "random_rotate", "max_degrees": 60}],
    [{"op": "random_translate", "max_fraction": 0.3}],
    [{"op": "random_affine", "degrees": 45, "translate": [0.1, 0.1], "scale": [0.8, 1.3], "shear": 10}],
    [{"op": "random_perspective", "p": 1.0, "distortion_scale": 0.4}],
    [{"op": "random_resize", "size": [36, 36], "scale": [0.6, 1.6]}, {"op": "random_brightness"}],
    [{"op": "resize_shorter", "size": 48}, {"op": "center_crop", "size": [40, 40]}, {"op": "random_flip_up_down"}],
    [{"op": "pad", "padding": [3, 4]}, {"op": "letterbox", "size": [50, 30]}, {"op": "random_gaussian_blur"}],
    # one rotation-like warp per chain: the box of a rotated box's enclosing box grows (known
    # limit of axis-aligned boxes), which the one-pixel check would flag
    [{"op": "affine", "angle": 30.0, "scale": 0.8}, {"op": "flip_left_right"}],
    [{"op": "resize", "size": [40, 48]}, {"op": "perspective", "startpoints": [[0, 0], [47, 0], [47, 39], [0, 39]],
                                          "endpoints": [[3, 2], [44, 0], [47, 38], [1, 35]]}],
    [{"op": "rot90", "k": 3}, {"op": "random_crop", "size": [30, 24]}, {"op": "random_choice",
                                                                         "ops": [{"op": "random_brightness", "max_delta": 0.05}, {"op": "random_gamma"}]}],
]


@pytest.mark.parametrize("spec", GEOMETRIC, ids=range(len(GEOMETRIC)))
def test_box_mask_keypoint_and_image_stay_together(spec):
    x, targets = scene()
    y, t = imgproc.Pipeline(spec)(x, key=11, targets=targets)
    y, boxes, valid, masks = np.asarray(y), np.asarray(t["boxes"]), np.asarray(t["box_valid"]), np.asarray(t["masks"])
    kp, ok = np.asarray(t["keypoints"]), np.asarray(t["keypoint_valid"])
    assert masks.dtype == np.uint8 and set(np.unique(masks)) <= {0, 1} and masks.shape == y.shape[:3]
    boxed = followed = 0
    for i in range(B):
        # the box and its filled mask drawn into channel 0 coincide within one pixel
        drawn, mask = bbox(y[i, ..., 0] > 127), bbox(masks[i])
        if drawn is not None and valid[i, 0]:
            np.testing.assert_allclose(mask, drawn, atol=1.0)
            np.testing.assert_allclose(boxes[i, 0], drawn, atol=1.0 + 1e-4)
            boxed += 1
        # the keypoint follows the centre of its marked 3x3 block in channel 1
        mark = y[i, ..., 1].astype(float)
        hh, ww = mark.shape
        if ok[i, 0] and mark.max() > 127 and 1 <= kp[i, 0, 0] < ww - 1 and 1 <= kp[i, 0, 1] < hh - 1:
            ys, xs = np.nonzero(mark > 0.5 * mark.max())
            np.testing.assert_allclose(kp[i, 0], [xs.mean() + 0.5, ys.mean() + 0.5], atol=1.0)
            followed += 1
        elif not ok[i, 0]:  # marked invisible: it left the image
            assert not (0 <= kp[i, 0, 0] < ww and 0 <= kp[i, 0, 1] < hh)
    assert boxed >= 3 and followed >= 2


def test_deterministic_moves_are_exact():
    x, targets = scene()
    b = targets["boxes"][:, :1]
    one = {"boxes": b, "keypoints": targets["keypoints"]}

    def run(spec):
        _, t = imgproc.Pipeline(spec)(x, targets=one)
        return np.asarray(t["boxes"])[:, 0], np.asarray(t["keypoints"])[:, 0]

    x1, y1, x2, y2 = (b[:, 0, i] for i in range(4))
    kx, ky = targets["keypoints"][:, 0, 0], targets["keypoints"][:, 0, 1]
    box, kp = run([{"op": "flip_left_right"}])
    np.testing.assert_allclose(box, np.stack([W - x2, y1, W - x1, y2], -1), atol=1e-5)
    np.testing.assert_allclose(kp, np.stack([W - kx, ky], -1), atol=1e-5)
    box, kp = run([{"op": "rot90", "k": 1}])  # np.rot90: (x, y) -> (y, W - x)
    np.testing.assert_allclose(box, np.stack([y1, W - x2, y2, W - x1], -1), atol=1e-5)
    np.testing.assert_allclose(kp, np.stack([ky, W - kx], -1), atol=1e-5)
    box, _ = run([{"op": "resize", "size": [64, 20]}])
    np.testing.assert_allclose(box, np.stack([x1 / 2, y1 * 2, x2 / 2, y2 * 2], -1), atol=1e-5)
    box, _ = run([{"op": "pad", "padding": [1, 2, 3, 4]}])
    np.testing.assert_allclose(box, np.stack([x1 + 1, y1 + 2, x2 + 1, y2 + 2], -1), atol=1e-5)
    box, _ = run([{"op": "center_crop", "size": [20, 50]}])  # pads 5 left/right, crops rows 6..26
    np.testing.assert_allclose(box, np.clip(np.stack([x1 + 5, y1 - 6, x2 + 5, y2 - 6], -1), 0, [50, 20, 50, 20]), atol=1e-5)
    box, kp = run([{"op": "translate", "dy": 2.0, "dx": -3.0}])
    np.testing.assert_allclose(kp, np.stack([kx - 3, ky + 2], -1), atol=1e-5)
    box, kp = run([{"op": "rotate", "angle": 90.0}])  # about the centre pixel, shape kept: check on the pixels
    y = np.asarray(imgproc.rotate(x[..., 1:2], 90.0))[..., 0]
    for i in range(B):
        ys, xs = np.nonzero(y[i] > 127)
        if len(xs):
            np.testing.assert_allclose(kp[i], [xs.mean() + 0.5, ys.mean() + 0.5], atol=1e-4)


@pytest.mark.parametrize("stage", [
    {"op": "resize", "size": [4, 4], "method": "nearest"},
    {"op": "resize", "size": [4, 4]},  # a linear image: its mask still takes the pixel holding each centre
    {"op": "resize_shorter", "size": 4, "method": "nearest"},
    {"op": "letterbox", "size": [4, 4], "method": "nearest"},
    {"op": "random_resize", "size": [4, 4], "scale": [1, 1], "method": "nearest"},
])
def test_masks_follow_a_nearest_resize_at_its_ties(stage):
    """At a 2x downscale every output centre is a tie between two source pixels: the mask
    takes the one the image's "nearest" takes (the pixel holding the centre), not the one
    rounding half to even gives (it was off by a pixel, found by a review)."""
    img = np.zeros((8, 8), np.uint8)
    img[2:5, 3:6] = 255
    mask = (img > 0).astype(np.int32)
    pipe = imgproc.Pipeline([stage])
    key = 0 if pipe.is_random else None
    _, t = pipe(img, key=key, targets={"masks": mask})
    nearest = {**stage, "method": "nearest"} if stage["op"] != "resize_shorter" else stage
    y = np.asarray(imgproc.Pipeline([nearest])(img, key=key))
    np.testing.assert_array_equal(np.asarray(t["masks"]), (y > 0).astype(np.int32))


@pytest.mark.parametrize("size", [(25, 90), (4, 4), (97, 203)])
def test_masks_of_a_resize_take_the_images_nearest_pixels_at_every_tie(size):
    """52 -> 90 columns has exact ties that floating point lands either side of: the
    image's "nearest" computes its index maps in integers, and the masks take the same maps
    (a mask of the image's own pixel positions comes out as the image)."""
    h, w = 40, 52
    img = (np.arange(h * w).reshape(h, w, 1) % 251).astype(np.uint8)
    positions = np.arange(h * w, dtype=np.int32).reshape(h, w)
    for stage in ({"op": "resize", "size": list(size), "method": "nearest"},
                  {"op": "letterbox", "size": list(size), "method": "nearest"}):
        y, t = imgproc.Pipeline([stage])(img, targets={"masks": positions})
        picked = np.asarray(t["masks"])
        top, left, nh, nw = letterbox_box(h, w, size) if stage["op"] == "letterbox" else (0, 0, *size)
        inner = picked[top:top + nh, left:left + nw]
        np.testing.assert_array_equal((inner % 251).astype(np.uint8), np.asarray(y)[top:top + nh, left:left + nw, 0])
        rows, cols = np.divmod(inner, w)
        np.testing.assert_array_equal(rows[:, 0], (2 * np.arange(nh) + 1) * h // (2 * nh))
        np.testing.assert_array_equal(cols[0], (2 * np.arange(nw) + 1) * w // (2 * nw))


def test_a_replayed_resized_crop_larger_than_the_image_moves_targets_as_the_image():
    """Replayed parameters of a box beyond the image are held to it for the image; the
    targets follow the same held box (they used the box as given)."""
    img = np.zeros((40, 56, 1), np.uint8)
    img[17:26, 21:32] = 255
    box = np.array([[21, 17, 32, 26]], np.float32)
    pipe = imgproc.Pipeline([{"op": "random_resized_crop", "size": [40, 56]}])
    params = ({"top": np.array([0.0]), "left": np.array([0.0]), "height": np.array([80.0]), "width": np.array([56.0])},)
    y, t = pipe.apply(img[None], params, targets={"boxes": box[None], "masks": (img[..., 0] > 0)[None]})
    np.testing.assert_allclose(np.asarray(t["boxes"])[0, 0], box[0], atol=1e-4)  # the held box is the whole image
    np.testing.assert_array_equal(np.asarray(t["masks"])[0], np.asarray(y)[0, ..., 0] > 127)


def test_boxes_are_clipped_and_dropped_below_the_visible_area():
    x = np.zeros((1, 20, 20, 1), np.float32)
    boxes = np.array([[[2, 2, 8, 8], [15, 15, 19, 19], [9, 0, 12, 2], [4, 4, 6, 6]]], np.float32)
    valid = np.array([[True, True, True, False]])
    pipe = imgproc.Pipeline([{"op": "crop", "top": 5, "left": 5, "size": [10, 10]}])
    _, t = pipe(x, targets={"boxes": boxes, "box_valid": valid})
    np.testing.assert_allclose(np.asarray(t["boxes"])[0, :2], [[0, 0, 3, 3], [10, 10, 10, 10]])
    assert np.asarray(t["box_valid"]).tolist() == [[True, False, False, False]]  # empty, outside, given invalid
    _, t = pipe(x, targets={"boxes": boxes}, min_box_visibility=0.3)
    assert np.asarray(t["box_valid"])[0, 0] == False  # noqa: E712 - 9 of 36 pixels visible
    _, t = pipe(x, targets={"boxes": boxes}, min_box_area=10.0)
    assert np.asarray(t["box_valid"])[0, 0] == False  # noqa: E712


def test_replay_single_image_and_mask_dtypes():
    x, targets = scene()
    labels = (np.asarray(targets["masks"], np.int32) * 7)[..., None].repeat(2, axis=-1)
    labels[..., 1] = 65000
    spec = [{"op": "random_affine", "degrees": 30}, {"op": "random_crop", "size": [30, 30]}]
    pipe = imgproc.Pipeline(spec)
    y, t, params = pipe(x, key=3, targets={"masks": labels, "boxes": targets["boxes"]}, return_params=True)
    y2, t2 = pipe.apply(x, params, targets={"masks": labels, "boxes": targets["boxes"]})
    np.testing.assert_array_equal(np.asarray(y2), np.asarray(y))
    np.testing.assert_array_equal(np.asarray(t2["masks"]), np.asarray(t["masks"]))
    m = np.asarray(t["masks"])
    assert m.dtype == np.int32 and m.shape == (B, 30, 30, 2) and set(np.unique(m[..., 0])) <= {0, 7}
    assert set(np.unique(m[..., 1])) <= {0, 65000}
    # one image: targets without the batch axis, bool mask
    y1, t1 = pipe(x[0], key=3, targets={"masks": targets["masks"][0] > 0, "keypoints": targets["keypoints"][0]})
    assert np.asarray(t1["masks"]).dtype == bool and np.asarray(t1["masks"]).shape == (30, 30)
    assert np.asarray(t1["keypoints"]).shape == (1, 2) and np.asarray(t1["keypoint_valid"]).shape == (1,)


def test_jit_of_a_targets_call_and_indices():
    x, targets = scene()
    pipe = imgproc.Pipeline([{"op": "random_rotate"}, {"op": "random_flip_left_right"}])
    _, full = pipe(x, key=4, targets={"boxes": targets["boxes"]})
    _, part = pipe(x[2:], key=4, indices=np.arange(2, B), targets={"boxes": targets["boxes"][2:]})
    np.testing.assert_allclose(np.asarray(part["boxes"]), np.asarray(full["boxes"])[2:], atol=1e-5)


def test_an_op_without_a_target_rule_is_refused():
    def my_shift(image, *, layout=None):
        return image

    imgproc.register_op("my_shift_no_rule", my_shift)
    x, targets = scene()
    with pytest.raises(ValueError, match="op 'my_shift_no_rule' does not say how it moves targets"):
        imgproc.Pipeline([{"op": "my_shift_no_rule"}])(x, targets={"boxes": targets["boxes"]})
    imgproc.Pipeline([{"op": "my_shift_no_rule"}])(x)  # fine without targets
    with pytest.raises(ValueError, match="op 'random_choice' does not say how it moves targets"):
        imgproc.Pipeline([{"op": "random_choice", "ops": [{"op": "flip_left_right"}, {"op": "random_hue"}]}])(
            x, key=0, targets={"boxes": targets["boxes"]})
    imgproc.register_op("my_shift_keeps", my_shift, targets=KEEPS_TARGETS)
    _, t = imgproc.Pipeline([{"op": "my_shift_keeps"}])(x, targets={"boxes": targets["boxes"]})
    np.testing.assert_array_equal(np.asarray(t["boxes"]), targets["boxes"])


def test_every_registered_geometric_op_has_a_rule_and_colour_ops_keep_targets():
    from imgproc.core.registry import TargetRule, lookup
    geometric = ["flip_left_right", "flip_up_down", "rot90", "crop", "resized_crop", "rotate", "translate", "resize",
                 "resize_shorter", "pad", "center_crop", "letterbox", "affine", "perspective"]
    for name in geometric + ["random_" + n for n in ("flip_left_right", "flip_up_down", "rot90", "crop", "resized_crop",
                                                     "rotate", "translate", "resize", "affine", "perspective")]:
        assert isinstance(lookup(name).targets, TargetRule), name
    for name in ("random_hue", "gaussian_blur", "gaussian_noise", "random_erasing", "median", "adjust_gamma"):
        assert lookup(name).targets is KEEPS_TARGETS, name


@pytest.mark.parametrize("targets, match", [
    ({"boxes": np.array([[[5, 5, 2, 9]]] * B, np.float32)}, r"x2 >= x1 and y2 >= y1; box \(0, 0\)"),
    ({"boxes": np.array([[[5, np.nan, 6, 9]]] * B, np.float32)}, "NaN or infinite"),
    ({"keypoints": np.array([[[np.inf, 1]]] * B, np.float32)}, "NaN or infinite"),
    ({"boxes": np.zeros((B, 3, 5), np.float32)}, r"targets\['boxes'\] must have shape \(B, K, 4\)"),
    ({"boxes": np.zeros((B + 1, 3, 4), np.float32)}, r"targets\['boxes'\] must have shape"),
    ({"masks": np.zeros((B, H, W + 1), np.uint8)}, r"with the image's H, W = \(32, 40\)"),
    ({"labels": np.zeros(3)}, "unknown target key"),
    ({"box_valid": np.ones((B, 1), bool)}, "'box_valid' without 'boxes'"),
    ([np.zeros((B, 1, 4))], "targets must be a dict"),
])
def test_bad_targets_raise(targets, match):
    x, _ = scene()
    with pytest.raises(ValueError, match=match):
        imgproc.Pipeline([{"op": "random_flip_left_right"}])(x, key=0, targets=targets)


def test_keypoints_outside_at_input_are_invisible_not_an_error():
    x, _ = scene()
    kp = np.array([[[-1.0, 3.0], [3.0, 3.0], [40.0, 3.0]]] * B, np.float32)
    _, t = imgproc.Pipeline([{"op": "flip_left_right"}])(x, targets={"keypoints": kp})
    assert np.asarray(t["keypoint_valid"]).tolist() == [[False, True, False]] * B
    np.testing.assert_allclose(np.asarray(t["keypoints"])[0], [[41, 3], [37, 3], [0, 3]])


def test_nchw_images_take_channels_last_masks_and_give_the_nhwc_targets():
    x, targets = scene()
    spec = [{"op": "random_affine", "degrees": 20}, {"op": "random_resize", "size": [30, 30]}]
    _, nhwc = imgproc.Pipeline(spec)(x, key=5, targets=targets)
    _, nchw = imgproc.Pipeline(spec, layout="NCHW")(np.moveaxis(x, -1, 1), key=5, targets=targets)
    for k in nhwc:
        np.testing.assert_allclose(np.asarray(nchw[k]), np.asarray(nhwc[k]), atol=1e-5)


def test_64_bit_targets_come_back_in_32_bits_without_warnings():
    import warnings
    x, targets = scene()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, t = imgproc.Pipeline([{"op": "random_flip_left_right"}])(
            x, key=0, targets={"boxes": targets["boxes"].astype(np.float64), "masks": targets["masks"].astype(np.int64)})
    assert np.asarray(t["boxes"]).dtype == np.float32 and np.asarray(t["masks"]).dtype == np.int32


def test_degenerate_boxes_are_dropped_and_never_come_back():
    # torchvision's test_transforms_v2 degenerate xyxy boxes: no area, no height, no width
    # (its x1 > x2 / y1 > y2 cases are refused here: see test_bad_targets_raise)
    x = np.zeros((1, 12, 12, 1), np.float32)
    boxes = np.array([[[0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0], [2, 2, 6, 6], [3, 3, 5, 5]]], np.float32)
    valid = np.array([[True, True, True, True, False]])
    _, t = imgproc.Pipeline([{"op": "flip_left_right"}, {"op": "random_rotate"}])(
        x, key=0, targets={"boxes": boxes, "box_valid": valid})
    assert np.asarray(t["box_valid"]).tolist() == [[False, False, False, True, False]]
