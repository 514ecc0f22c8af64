"""Size and warp ops (imgproc.augment.size, _warp) from one table of cases: reference
parity (Pillow, OpenCV, NumPy ports of torchvision's published arithmetic), jit equals
eager, a batch equals a loop over its images, layouts, and bad arguments raising."""

import dataclasses
import json
from typing import Callable

import cv2
import jax
import numpy as np
import pytest
from PIL import Image

import imgproc
from imgproc.augment.warp import perspective_matrix

RNG = np.random.default_rng(0)
F32 = RNG.random((23, 31), dtype=np.float32)
U8 = (RNG.random((23, 31, 3)) * 255).astype(np.uint8)
PIL_METHODS = {"linear": Image.BILINEAR, "cubic": Image.BICUBIC, "lanczos3": Image.LANCZOS, "nearest": Image.NEAREST}
NP_MODES = {"constant": "constant", "reflect": "symmetric", "mirror": "reflect", "nearest": "edge", "wrap": "wrap"}


def pil_resize(plane, size, method):
    return np.asarray(Image.fromarray(plane, "F").resize(size[::-1], PIL_METHODS[method]))


def tv_shorter_side(h, w, size, max_size=None):
    """torchvision.transforms.functional._compute_resized_output_size for Resize(int)."""
    short, long = (w, h) if w <= h else (h, w)
    requested_new_short = size
    new_short, new_long = requested_new_short, int(requested_new_short * long / short)
    if max_size is not None and new_long > max_size:
        new_short, new_long = int(max_size * new_short / new_long), max_size
    new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
    return new_h, new_w


def tv_center_crop(img, output_size):
    """torchvision.transforms.functional.center_crop on a NumPy (H, W[, C]) array."""
    image_height, image_width = img.shape[:2]
    crop_height, crop_width = output_size
    if crop_width > image_width or crop_height > image_height:
        padding_ltrb = [
            (crop_width - image_width) // 2 if crop_width > image_width else 0,
            (crop_height - image_height) // 2 if crop_height > image_height else 0,
            (crop_width - image_width + 1) // 2 if crop_width > image_width else 0,
            (crop_height - image_height + 1) // 2 if crop_height > image_height else 0,
        ]
        widths = [(padding_ltrb[1], padding_ltrb[3]), (padding_ltrb[0], padding_ltrb[2])] + [(0, 0)] * (img.ndim - 2)
        img = np.pad(img, widths)
        image_height, image_width = img.shape[:2]
        if crop_width == image_width and crop_height == image_height:
            return img
    crop_top = int(round((image_height - crop_height) / 2.0))
    crop_left = int(round((image_width - crop_width) / 2.0))
    return img[crop_top:crop_top + crop_height, crop_left:crop_left + crop_width]


def ultralytics_letterbox(img, new_shape, value):
    """Ultralytics LetterBox(center=True) arithmetic, resized with Pillow BILINEAR (float planes)."""
    shape = img.shape[:2]
    r = min(new_shape[0] / shape[0], new_shape[1] / shape[1])
    new_unpad = int(round(shape[1] * r)), int(round(shape[0] * r))
    dw, dh = (new_shape[1] - new_unpad[0]) / 2, (new_shape[0] - new_unpad[1]) / 2
    if shape[::-1] != new_unpad:
        img = pil_resize(img, new_unpad[::-1], "linear")
    top, bottom = int(round(dh - 0.1)), int(round(dh + 0.1))
    left, right = int(round(dw - 0.1)), int(round(dw + 0.1))
    return np.pad(img, ((top, bottom), (left, right)), constant_values=value)


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    call: Callable  # call(image, **layout) -> array
    reference: Callable  # reference(float32 2-D plane) -> plane
    # float32 sums of up to 20 taps in another order than Pillow's (2.5e-6 on an H200,
    # where XLA fuses the multiply-adds, for lanczos3 at a 3.3x downscale)
    atol: float = 4e-6


CASES = [
    *[Case(f"resize_{m}_{s}", (lambda m, s: lambda x, **o: imgproc.resize(x, s, method=m, **o))(m, s),
           (lambda m, s: lambda p: pil_resize(p, s, m))(m, s))
      for m in PIL_METHODS for s in [(11, 13), (40, 50), (7, 60), (23, 31)]],
    *[Case(f"resize_area_{s}", (lambda s: lambda x, **o: imgproc.resize(x, s, method="area", **o))(s),
           (lambda s: lambda p: cv2.resize(p, s[::-1], interpolation=cv2.INTER_AREA))(s))
      for s in [(11, 13), (5, 7), (46, 62), (50, 90), (23, 31), (4, 4)]],
    *[Case(f"resize_shorter_{s}_{m}", (lambda s, m: lambda x, **o: imgproc.resize_shorter(x, s, max_size=m, **o))(s, m),
           (lambda s, m: lambda p: pil_resize(p, tv_shorter_side(*p.shape, s, m), "linear"))(s, m))
      for s, m in [(16, None), (40, None), (16, 18), (23, None), (10, 11)]],
    *[Case(f"center_crop_{s}", (lambda s: lambda x, **o: imgproc.center_crop(x, s, **o))(s),
           (lambda s: lambda p: tv_center_crop(p, s))(s), atol=0)
      for s in [(10, 10), (22, 30), (23, 31), (24, 31), (30, 40), (1, 1), (23, 36)]],
    *[Case(f"pad_{mode}_{pd}", (lambda mode, pd: lambda x, **o: imgproc.pad(x, pd, mode=mode, cval=0.5, **o))(mode, pd),
           (lambda mode, pd: lambda p: np.pad(p, ((pd[1], pd[3]), (pd[0], pd[2])), NP_MODES[mode],
                                               **({"constant_values": 0.5} if mode == "constant" else {})))(mode, pd),
           atol=0)
      for mode in NP_MODES for pd in [(1, 2, 3, 4), (40, 0, 0, 25)]],
    *[Case(f"letterbox_{s}", (lambda s: lambda x, **o: imgproc.letterbox(x, s, cval=0.25, **o))(s),
           (lambda s: lambda p: ultralytics_letterbox(p, s, 0.25))(s))
      for s in [(32, 32), (16, 40), (20, 20), (23, 31), (64, 20)]],
]
IDS = [c.name for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_reference(case):
    ref = case.reference(F32.astype(np.float32))
    out = np.asarray(case.call(F32))
    assert out.shape == ref.shape and out.dtype == np.float32
    np.testing.assert_allclose(out, ref, atol=case.atol, rtol=0)


@pytest.mark.parametrize("case", CASES[::3], ids=IDS[::3])
def test_jit_equals_eager_and_batch_equals_loop_in_every_layout(case):
    batch = np.stack([U8, U8[::-1], 255 - U8])
    eager = np.asarray(case.call(batch))
    jitted = np.asarray(jax.jit(lambda x: case.call(x))(batch))
    np.testing.assert_array_equal(jitted, eager)
    loop = np.stack([np.asarray(case.call(im)) for im in batch])
    np.testing.assert_array_equal(eager, loop)
    assert eager.dtype == np.uint8
    nchw = np.asarray(case.call(np.moveaxis(batch, -1, 1), layout="NCHW"))
    np.testing.assert_allclose(np.moveaxis(nchw, 1, -1).astype(int), eager.astype(int), atol=1)
    chw = np.asarray(case.call(np.moveaxis(batch[0], -1, 0), layout="CHW"))
    np.testing.assert_allclose(np.moveaxis(chw, 0, -1).astype(int), eager[0].astype(int), atol=1)


@pytest.mark.parametrize("size", [(11, 13), (46, 62), (5, 7)])
def test_area_uint8_matches_opencv(size):
    ours = np.asarray(imgproc.resize(U8, size, method="area")).astype(int)
    ref = cv2.resize(U8, size[::-1], interpolation=cv2.INTER_AREA).astype(int)
    assert np.abs(ours - ref).max() <= 1  # OpenCV's fixed-point sums round once more


def test_area_differs_from_opencv_only_when_one_side_grows_and_the_other_shrinks():
    ours = np.asarray(imgproc.resize(F32, (7, 60), method="area"))
    ref = cv2.resize(F32, (60, 7), interpolation=cv2.INTER_AREA)
    assert np.abs(ours - ref).max() > 0.1  # documented: OpenCV switches rule there
    # ours stays the overlap mean: a constant stays constant, the mean of each column band is kept
    np.testing.assert_allclose(np.asarray(imgproc.resize(np.full((23, 31), 0.3, np.float32), (7, 60), method="area")), 0.3,
                               atol=1e-6)


@pytest.mark.parametrize("method", ["linear", "nearest"])
def test_uint8_resize_is_within_one_level_of_pillow_on_downscale(method):
    ours = np.asarray(imgproc.resize(U8, (11, 13), method=method)).astype(int)
    ref = np.asarray(Image.fromarray(U8).resize((13, 11), PIL_METHODS[method])).astype(int)
    assert np.abs(ours - ref).max() <= (0 if method == "nearest" else 1)


@pytest.mark.parametrize("size", [(11, 13), (40, 50), (7, 60)])
def test_nearest_equals_opencv_nearest_exact_not_inter_nearest(size):
    ours = np.asarray(imgproc.resize(U8, size, method="nearest"))
    np.testing.assert_array_equal(ours, cv2.resize(U8, size[::-1], interpolation=cv2.INTER_NEAREST_EXACT))
    assert (ours != cv2.resize(U8, size[::-1], interpolation=cv2.INTER_NEAREST)).any()  # floor(i * in / out)


def test_nearest_is_exact_and_keeps_uint16():
    x = (RNG.random((9, 7)) * 65535).astype(np.uint16)
    y = np.asarray(imgproc.resize(x, (4, 15), method="nearest"))
    r = np.floor((np.arange(4) + 0.5) * 9 / 4).astype(int)
    c = np.floor((np.arange(15) + 0.5) * 7 / 15).astype(int)
    assert y.dtype == np.uint16
    np.testing.assert_array_equal(y, x[r][:, c])


def test_cubic_uint8_is_rounded_and_saturated_once():
    x = np.zeros((8, 8), np.uint8)
    x[:, 4:] = 255
    y = np.asarray(imgproc.resize(x, (8, 32), method="cubic"))
    f = np.asarray(imgproc.resize(x.astype(np.float32), (8, 32), method="cubic"))
    assert f.min() < 0 and f.max() > 255  # overshoot kept in float
    np.testing.assert_array_equal(y, np.clip(np.round(f), 0, 255).astype(np.uint8))


def test_resize_shorter_sizes_follow_torchvision():
    for h, w in [(300, 451), (451, 300), (100, 100), (7, 1000), (33, 34)]:
        for size, max_size in [(256, None), (32, None), (20, 40), (5, 6)]:
            x = np.zeros((h, w), np.uint8)
            # torchvision would return a side of 0 for (7, 1000) with max_size=40; ours keeps 1
            expected = tuple(max(v, 1) for v in tv_shorter_side(h, w, size, max_size))
            # the shape alone: traced, not compiled (20 programs took 36 s of the suite)
            shape = jax.eval_shape(lambda a: imgproc.resize_shorter(a, size, max_size=max_size), x).shape
            assert shape == expected


def test_center_crop_rounding_is_python_round():
    # (H - h) / 2 = 0.5 rounds to 0 and 1.5 to 2 (torchvision uses Python's round)
    x = np.arange(5 * 5, dtype=np.uint8).reshape(5, 5)
    np.testing.assert_array_equal(np.asarray(imgproc.center_crop(x, (4, 2))), x[0:4, 2:4])


def test_random_resize_places_a_scaled_copy_and_replays():
    x = RNG.random((4, 20, 30, 3), dtype=np.float32)
    pipe = imgproc.Pipeline([{"op": "random_resize", "size": [24, 24], "scale": [0.5, 1.5], "cval": -1.0}])
    y, params = pipe(x, key=3, return_params=True)
    assert y.shape == (4, 24, 24, 3)
    np.testing.assert_array_equal(np.asarray(pipe.apply(x, params)), np.asarray(y))
    p = params[0]
    assert not np.allclose(np.asarray(p["scale"]), np.asarray(p["scale"])[0])
    for i in range(4):
        s = float(p["scale"][i]) * min(24 / 20, 24 / 30)
        top, left = float(p["top"][i]), float(p["left"][i])
        assert top == int(top) and left == int(left)
        # the reference: Pillow's bilinear resize of the image at that scale, placed at (top, left)
        rows = (np.arange(24) + 0.5 - top) / s
        cols = (np.arange(24) + 0.5 - left) / s
        inside = ((rows >= 0) & (rows < 20))[:, None] & ((cols >= 0) & (cols < 30))[None]
        out = np.asarray(y[i, ..., 0])
        assert (out[~inside] == -1.0).all()
        sh, sw = int(round(20 * s)), int(round(30 * s))
        if abs(sh - 20 * s) < 1e-3 and abs(sw - 30 * s) < 1e-3:  # exact integer size: compare with Pillow
            ref = pil_resize(x[i, ..., 0], (sh, sw), "linear")
            canvas = np.full((24, 24), -1.0, np.float32)
            t, l = int(top), int(left)
            ys, xs = slice(max(t, 0), min(t + sh, 24)), slice(max(l, 0), min(l + sw, 24))
            canvas[ys, xs] = ref[ys.start - t:ys.stop - t, xs.start - l:xs.stop - l]
            np.testing.assert_allclose(out, canvas, atol=1e-5)


def test_random_resize_at_scale_one_equals_letterbox_placed_at_the_drawn_position():
    x = RNG.random((2, 20, 30, 1), dtype=np.float32)
    pipe = imgproc.Pipeline([{"op": "random_resize", "size": [30, 30], "scale": [1.0, 1.0]}])
    y, params = pipe(x, key=0, return_params=True)
    box = np.asarray(imgproc.resize(x, (20, 30)))
    for i in range(2):
        t = int(params[0]["top"][i])
        assert 0 <= t <= 10 and int(params[0]["left"][i]) == 0
        np.testing.assert_allclose(np.asarray(y[i, t:t + 20]), box[i], atol=1e-6)
        assert (np.asarray(y[i, :t]) == 0).all() and (np.asarray(y[i, t + 20:]) == 0).all()


def test_size_ops_in_a_pipeline_round_trip_their_spec():
    spec = [{"op": "resize_shorter", "size": 16}, {"op": "center_crop", "size": [14, 14]},
            {"op": "pad", "padding": [1, 2], "mode": "reflect"}, {"op": "letterbox", "size": [20, 24]},
            {"op": "resize", "size": [10, 12], "method": "area"}]
    pipe = imgproc.Pipeline.from_spec(json.dumps(spec))
    assert pipe.to_spec() == spec
    x = np.stack([U8, U8[::-1]])
    y = pipe(x)
    assert y.shape == (2, 10, 12, 3) and y.dtype == np.uint8
    f = x.astype(np.float32)
    for s in spec:
        f = np.asarray(imgproc.Pipeline([s])(f))
    np.testing.assert_allclose(np.asarray(y).astype(float), np.clip(np.round(f), 0, 255), atol=1)


@pytest.mark.parametrize("call, match", [
    (lambda: imgproc.resize(U8, 0), "size must be positive integers"),
    (lambda: imgproc.resize(U8, (-3, 4)), "size must be positive integers"),
    (lambda: imgproc.resize(U8, (3.5, 4)), "size must be positive integers"),
    (lambda: imgproc.resize(U8, (3, 4), method="bilinear"), "method must be one of 'linear', 'cubic'"),
    (lambda: imgproc.resize_shorter(U8, 0), "size must be a positive integer"),
    (lambda: imgproc.resize_shorter(U8, 20, max_size=20), "max_size must be None or an integer larger than size"),
    (lambda: imgproc.pad(U8, -1), "padding must be a non-negative int"),
    (lambda: imgproc.pad(U8, (1, 2, 3)), "padding must be a non-negative int"),
    (lambda: imgproc.pad(U8, 1, mode="symmetric"), "mode must be one of reflect, mirror"),
    (lambda: imgproc.center_crop(U8, (0, 3)), "size must be positive integers"),
    (lambda: imgproc.letterbox(U8, (5, -1)), "size must be positive integers"),
    (lambda: imgproc.letterbox(U8, 5, cval=float("nan")), "cval must be a finite number"),
    (lambda: imgproc.random_resize(0, U8, size=(8, 8), scale=(2.0, 1.0)), "scale must be a pair low <= high"),
    (lambda: imgproc.random_resize(0, U8, size=(8, 8), method="area"), "method must be one of 'linear'"),
    (lambda: imgproc.Pipeline([{"op": "resize", "size": [0, 4]}])(U8), "size must be positive integers"),
    (lambda: imgproc.resize(U8, (3, 4), antialias="no"), "antialias must be True or False"),
    (lambda: imgproc.resize_shorter(U8, 8, antialias=None), "antialias must be True or False"),
    (lambda: imgproc.letterbox(U8, 5, antialias=1), "antialias must be True or False"),
    (lambda: imgproc.resized_crop(U8, 0, 0, 4, 4, size=(2, 2), antialias="yes"), "antialias must be True or False"),
    (lambda: imgproc.rotate(U8, 30.0, cval=float("nan")), "cval must be a finite number"),
    (lambda: imgproc.translate(U8, 1, 0, cval=float("inf")), "cval must be a finite number"),
    (lambda: imgproc.sample(U8, np.zeros((2, 2)), np.zeros((2, 2)), cval=float("nan")), "cval must be a finite number"),
    (lambda: imgproc.erase(U8, 1, 1, -2, 2), r"height must be a finite number in \[0, inf\)"),
    (lambda: imgproc.erase(U8, 1, float("nan"), 2, 2), "left must be a finite number"),
    (lambda: imgproc.erase(U8, 1, 1, 2, 2, value=(1, 2)), r"value must be a number or one value per channel \(3\)"),
    (lambda: imgproc.adjust_brightness(U8, 0.5, max_value=0), "max_value must be a finite number > 0"),
    (lambda: imgproc.rgb_to_lab(U8, max_value=0), "max_value must be a finite number > 0"),
    (lambda: imgproc.invert(U8, max_value=float("nan")), "max_value must be a finite number > 0"),
    (lambda: imgproc.hsv_to_rgb(U8), "hsv_to_rgb takes a float HSV image"),
    (lambda: imgproc.gaussian_blur(U8, "1"), "sigma must be a finite number"),
    (lambda: imgproc.rotate(U8, "30"), "angle must be a finite number"),
])
def test_bad_arguments_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------------------- warps


import scipy.ndimage as ndi  # noqa: E402
from torchvision_reference import inverse_affine_matrix as tv_inverse_affine_matrix  # noqa: E402


def tv_affine_source(h, w, angle, translate, scale, shear):
    """Source (rows, cols) of every output pixel in F.affine: its grid is pixel centres
    relative to the image centre (``_gen_affine_grid``), center_f = [0, 0]."""
    m = tv_inverse_affine_matrix([0.0, 0.0], angle, translate, scale, shear)
    y, x = np.meshgrid(np.arange(h) + 0.5 - h / 2, np.arange(w) + 0.5 - w / 2, indexing="ij")
    sx = m[0] * x + m[1] * y + m[2]
    sy = m[3] * x + m[4] * y + m[5]
    return sy + h / 2 - 0.5, sx + w / 2 - 0.5


AFFINES = [
    dict(angle=30.0), dict(angle=-90.0), dict(translate=(3, -2)), dict(scale=1.7), dict(scale=0.6),
    dict(shear=(20.0, 0.0)), dict(shear=(-10.0, 15.0)),
    dict(angle=-37.0, translate=(2.5, 1.0), scale=1.2, shear=(8.0, -5.0)),
]


@pytest.mark.parametrize("opts", AFFINES, ids=range(len(AFFINES)))
@pytest.mark.parametrize("cval", [0.0, 0.7])
def test_affine_matches_torchvision_matrix_with_scipy_sampling(opts, cval):
    full = dict(angle=0.0, translate=(0, 0), scale=1.0, shear=(0.0, 0.0)) | opts
    rows, cols = tv_affine_source(23, 31, **full)
    ref = ndi.map_coordinates(F32.astype(np.float64), [rows, cols], order=1, mode="grid-constant", cval=0.0)
    if cval:  # torchvision's fill: the zero-padded result blended with a warped mask of ones
        mask = ndi.map_coordinates(np.ones(F32.shape), [rows, cols], order=1, mode="grid-constant", cval=0.0)
        ref = (ref - cval) * mask + cval
    out = np.asarray(imgproc.affine(F32, cval=cval, **opts))
    np.testing.assert_allclose(out, ref, atol=2e-5)


@pytest.mark.parametrize("opts", AFFINES[::2], ids=range(len(AFFINES[::2])))
def test_affine_matches_opencv_warp_affine(opts):
    full = dict(angle=0.0, translate=(0, 0), scale=1.0, shear=(0.0, 0.0)) | opts
    h, w = F32.shape
    m = tv_inverse_affine_matrix([0.0, 0.0], **full)
    # the same inverse map in pixel indices: col = m0 (x + .5 - w/2) + m1 (y + .5 - h/2) + m2 + w/2 - .5
    inv = np.array([[m[0], m[1], m[2] + m[0] * (0.5 - w / 2) + m[1] * (0.5 - h / 2) + w / 2 - 0.5],
                    [m[3], m[4], m[5] + m[3] * (0.5 - w / 2) + m[4] * (0.5 - h / 2) + h / 2 - 0.5]])
    ref = cv2.warpAffine(F32, inv, (w, h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                         borderMode=cv2.BORDER_CONSTANT, borderValue=0.0)
    out = np.asarray(imgproc.affine(F32, **opts))  # zero padding (another cval blends as torchvision does)
    np.testing.assert_allclose(out, ref, atol=1 / 32)  # OpenCV quantises weights to 1/32 of a pixel


def test_affine_nearest_follows_rounded_source_and_keeps_uint8():
    opts = dict(angle=23.0, translate=(1, 2), scale=1.3, shear=(5.0, 0.0))
    rows, cols = tv_affine_source(23, 31, **opts)
    ri, ci = np.round(rows).astype(int), np.round(cols).astype(int)  # half to even, as torch's nearbyint
    inside = (ri >= 0) & (ri < 23) & (ci >= 0) & (ci < 31)
    ref = np.where(inside[..., None], U8[ri.clip(0, 22), ci.clip(0, 30)], 9)
    out = np.asarray(imgproc.affine(U8, interpolation="nearest", cval=9, **opts))
    assert out.dtype == np.uint8
    assert (out != ref).mean() < 0.01  # only float32-vs-float64 ties at .5 may differ
    assert np.asarray(imgproc.affine(U8, angle=180.0, interpolation="nearest")).tolist() == U8[::-1, ::-1].tolist()


PERSPECTIVES = [
    [[0, 0], [30, 0], [30, 22], [0, 22]],
    [[3, 2], [27, 0], [30, 20], [1, 22]],
    [[5, 5], [25, 3], [28, 18], [2, 15]],
    [[-4, 1], [33, 2], [29, 25], [0, 20]],
]
START = [[0, 0], [30, 0], [30, 22], [0, 22]]


@pytest.mark.parametrize("end", PERSPECTIVES, ids=range(len(PERSPECTIVES)))
def test_perspective_matches_opencv(end):
    h, w = F32.shape
    hmat = cv2.getPerspectiveTransform(np.float32(START), np.float32(end))
    ours = np.asarray(perspective_matrix(START, end))
    np.testing.assert_allclose(ours / ours[2, 2], hmat, atol=2e-4, rtol=1e-4)
    inv = np.linalg.inv(hmat)
    y, x = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    den = inv[2, 0] * x + inv[2, 1] * y + inv[2, 2]
    cols = (inv[0, 0] * x + inv[0, 1] * y + inv[0, 2]) / den
    rows = (inv[1, 0] * x + inv[1, 1] * y + inv[1, 2]) / den
    exact = ndi.map_coordinates(F32.astype(np.float64), [rows, cols], order=1, mode="grid-constant", cval=0.2)
    out = np.asarray(imgproc.perspective(F32, START, end, cval=0.2))
    np.testing.assert_allclose(out, exact, atol=1e-3)
    warped = cv2.warpPerspective(F32, hmat, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
                                 borderValue=0.2)
    np.testing.assert_allclose(out, warped, atol=1 / 32 + 1e-3)


WARP_CALLS = [
    lambda x, **o: imgproc.affine(x, angle=20.0, scale=0.9, translate=(1, -1), **o),
    lambda x, **o: imgproc.affine(x, shear=(10.0, 5.0), interpolation="nearest", **o),
    lambda x, **o: imgproc.perspective(x, START, PERSPECTIVES[2], **o),
]


@pytest.mark.parametrize("call", WARP_CALLS, ids=range(len(WARP_CALLS)))
def test_warps_jit_equals_eager_and_batch_equals_loop(call):
    # float32 in: XLA may fuse the coordinate arithmetic differently under jit (1 ulp),
    # which can move a uint8 result across a .5 rounding boundary
    batch = np.stack([U8, U8[::-1], 255 - U8]).astype(np.float32) / 255
    eager = np.asarray(call(batch))
    np.testing.assert_allclose(np.asarray(jax.jit(lambda x: call(x))(batch)), eager, atol=1e-5)
    np.testing.assert_allclose(np.stack([np.asarray(call(im)) for im in batch]), eager, atol=1e-5)
    nchw = np.asarray(call(np.moveaxis(batch, -1, 1), layout="NCHW"))
    np.testing.assert_allclose(np.moveaxis(nchw, 1, -1), eager, atol=1e-5)
    u8 = np.asarray(call((batch * 255).round().astype(np.uint8)))
    assert u8.dtype == np.uint8 and np.abs(u8.astype(int) - np.round(eager * 255)).max() <= 1


def test_random_affine_draws_like_torchvision_and_replays():
    x = RNG.random((64, 12, 16, 1), dtype=np.float32)
    pipe = imgproc.Pipeline([{"op": "random_affine", "degrees": [-20, 40], "translate": [0.25, 0.5],
                              "scale": [0.5, 0.75], "shear": [1, 2, 3, 4]}])
    y, params = pipe(x, key=5, return_params=True)
    p = {k: np.asarray(v) for k, v in params[0].items()}
    assert (p["angle"] >= -20).all() and (p["angle"] <= 40).all() and p["angle"].std() > 10
    assert (np.abs(p["tx"]) <= 4).all() and (np.abs(p["ty"]) <= 6).all() and (p["tx"] == np.round(p["tx"])).all()
    assert (p["scale"] >= 0.5).all() and (p["scale"] <= 0.75).all()
    assert (p["shear_x"] >= 1).all() and (p["shear_x"] <= 2).all() and (p["shear_y"] >= 3).all()
    np.testing.assert_array_equal(np.asarray(pipe.apply(x, params)), np.asarray(y))
    i = 7
    one = imgproc.affine(x[i], angle=float(p["angle"][i]), translate=(float(p["tx"][i]), float(p["ty"][i])),
                         scale=float(p["scale"][i]), shear=(float(p["shear_x"][i]), float(p["shear_y"][i])))
    np.testing.assert_allclose(np.asarray(y[i]), np.asarray(one), atol=1e-5)


def test_random_perspective_corners_follow_torchvision_ranges():
    x = np.zeros((200, 13, 17, 1), np.float32)
    pipe = imgproc.Pipeline([{"op": "random_perspective", "distortion_scale": 0.6, "p": 0.5}])
    _, params = pipe(x, key=1, return_params=True)
    e = np.asarray(params[0]["endpoints"])
    corners = np.float32(START[:0] or [[0, 0], [16, 0], [16, 12], [0, 12]])
    moved = (e != corners).any(axis=(1, 2))
    assert 0.35 < moved.mean() < 0.65
    dx, dy = int(0.6 * (17 // 2)), int(0.6 * (13 // 2))
    assert (e == np.round(e)).all()
    assert e[:, 0, 0].max() == dx and e[:, 0, 1].max() == dy and e[:, 1, 0].min() == 16 - dx
    assert e[:, 2, 1].min() == 12 - dy and (e[:, [0, 3], 0] >= 0).all() and (e[:, [1, 2], 0] <= 16).all()


@pytest.mark.parametrize("call, match", [
    (lambda: imgproc.affine(U8, scale=0), "scale must be a finite number in \\(0, inf\\)"),
    (lambda: imgproc.affine(U8, angle=float("nan")), "angle must be a finite number"),
    (lambda: imgproc.affine(U8, interpolation="cubic"), "interpolation must be one of 'bilinear', 'nearest'"),
    (lambda: imgproc.affine(U8, shear=(1, 2, 3)), "shear must be a number or a pair"),
    (lambda: imgproc.perspective(U8, START, START[:3]), "endpoints must be four finite"),
    (lambda: imgproc.perspective(U8, START, [[0, float("nan")]] * 4), "endpoints must be four finite"),
    (lambda: imgproc.random_affine(0, U8, degrees=-5), "degrees must be a finite number in \\[0"),
    (lambda: imgproc.random_affine(0, U8, translate=(0.1, 1.5)), "translate\\[1\\] must be a finite number in \\[0, 1\\]"),
    (lambda: imgproc.random_affine(0, U8, shear=(1, 2, 3)), "shear must be a number, a pair"),
    (lambda: imgproc.random_perspective(0, U8, distortion_scale=1.5), "distortion_scale must be"),
])
def test_bad_warp_arguments_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_traced_numbers_do_not_recompile():
    traces = []

    @jax.jit
    def f(x, angle, shear, key, lo, hi, scale_lo):
        traces.append(1)
        a = imgproc.affine(x, angle=angle, shear=(shear, 0.0))
        b = imgproc.random_affine(key, x, degrees=(lo, hi), scale=(scale_lo, 1.0))
        c = imgproc.random_resize(key, x, size=(20, 20), scale=(scale_lo, 1.0))
        d = imgproc.random_perspective(key, x, distortion_scale=lo / 100, p=scale_lo)
        return a, b, c, d

    x = np.stack([U8, U8]).astype(np.float32)
    k = jax.random.key(0)
    first = f(x, 10.0, 5.0, k, 10.0, 20.0, 0.5)
    second = f(x, 30.0, -5.0, k, 30.0, 40.0, 0.7)
    assert len(traces) == 1
    assert all(not np.allclose(a, b) for a, b in zip(first, second))


def test_antialias_off_is_plain_jax_resize_and_half_precision_is_kept():
    down = np.asarray(imgproc.resize(F32, (7, 9), antialias=False))  # jax.image's weights, as taps
    np.testing.assert_allclose(down, np.asarray(jax.image.resize(F32, (7, 9), "linear", antialias=False)), atol=1e-6)
    assert not np.allclose(down, np.asarray(imgproc.resize(F32, (7, 9))))  # antialias widens the kernel on downscale
    for dtype in (np.float16, jax.numpy.bfloat16):
        y = imgproc.resize(F32.astype(dtype), (11, 13), method="cubic")
        assert y.dtype == dtype
        np.testing.assert_allclose(np.asarray(y, np.float32), pil_resize(F32, (11, 13), "cubic"), atol=2e-2)


@pytest.mark.parametrize("method", ["linear", "cubic", "lanczos3"])
@pytest.mark.parametrize("antialias", [True, False])
def test_resize_under_jit_is_jax_image_resize_whatever_the_sizes(method, antialias):
    """Regression: with every size known, XLA:CPU folded the filter width into the taps'
    gathers and an upscale came out up to 220 levels wrong under jit (not eagerly)."""
    x = np.random.default_rng(1).random((13, 9, 3), dtype=np.float32) * 255
    for out in [(31, 20), (6, 4)]:
        want = np.asarray(jax.image.resize(x, out + (3,), method, antialias=antialias))
        got = np.asarray(jax.jit(lambda a: imgproc.resize(a, out, method=method, antialias=antialias))(x))
        np.testing.assert_allclose(got, want, atol=1e-3)


@pytest.mark.cpu_only("how XLA:CPU's loops compute a resample's two passes (imgproc.cpu.fusion.in_own_loop)")
@pytest.mark.parametrize("method", ["linear", "cubic"])
def test_each_resample_pass_is_computed_once(method):
    """The rows' pass is a buffer of its own before the columns' pass reads it: no loop of
    the compiled program gathers more than one pass's taps (left to fusion, the columns'
    loop gathered its taps from the rows' taps, recomputed for every output pixel)."""
    import re

    from imgproc.augment.resample import tap_count

    x = RNG.random((97, 83, 3), dtype=np.float32)
    text = jax.jit(lambda a: imgproc.resize(a, (20, 27), method=method)).lower(x).compile().as_text()
    most = max(block.count(" gather(") for block in re.split(r"\n(?=%|ENTRY)", text))
    assert most == max(tap_count(method, 97 / 20, True), tap_count(method, 83 / 27, True))


@pytest.mark.cpu_only("how XLA:CPU's loops compute a warp's sample points (imgproc.cpu.fusion.in_own_loop)")
def test_a_warp_computes_its_sample_points_once():
    """The four taps' indices and weights are arrays of their own before the gathers read
    them: no loop that gathers also computes the points (left to fusion, XLA recomputed
    the warp's grid, floors and weights for every tap and channel)."""
    import re

    x = RNG.random((40, 52, 3), dtype=np.float32)
    text = jax.jit(lambda a: imgproc.rotate(a, 17.0)).lower(x).compile().as_text()
    gathering = [block for block in re.split(r"\n(?=%|ENTRY)", text) if " gather(" in block]
    assert gathering and not any(" floor(" in block for block in gathering)


@pytest.mark.parametrize("mode", ["constant", "grid-constant", "nearest", "reflect", "mirror", "wrap"])
@pytest.mark.parametrize("layout", ["HW", "HWC"])
def test_sample_equals_scipy_map_coordinates_in_every_mode(mode, layout):
    """imgproc.sample against scipy.ndimage.map_coordinates(order=1) per plane, points
    inside, on the edges and far outside, a nonzero cval; jit and eager."""
    rng = np.random.default_rng(21)
    x = rng.random((11, 14, 3) if layout == "HWC" else (11, 14)).astype(np.float32)
    rows = rng.uniform(-5, 16, (9, 13)).astype(np.float32)
    cols = rng.uniform(-5, 19, (9, 13)).astype(np.float32)
    rows[0, :6], cols[0, :6] = [-1, 0, 10, 11, -2.5, 4], [-1, 13, 0, 14, 15.5, 13.5]
    scipy_mode = {"wrap": "grid-wrap"}.get(mode, mode)
    planes = x[..., None] if layout == "HW" else x
    want = np.stack([ndi.map_coordinates(planes[..., c].astype(np.float64), [rows, cols], order=1, mode=scipy_mode,
                                         cval=0.3) for c in range(planes.shape[-1])], -1)
    want = want[..., 0] if layout == "HW" else want
    for out in (imgproc.sample(x, rows, cols, mode=mode, cval=0.3),
                jax.jit(lambda a, r, c: imgproc.sample(a, r, c, mode=mode, cval=0.3))(x, rows, cols)):
        np.testing.assert_allclose(np.asarray(out), want, atol=2e-6, err_msg=mode)


@pytest.mark.cpu_only("how XLA:CPU's gathers are counted in a compiled warp")
def test_a_grid_constant_sample_gathers_each_row_pair_of_neighbours_at_once():
    """With grid-constant borders (every warp's), the two horizontal neighbours of a point
    are one gather of two pixels of the image extended by its fill: two gathers where
    there were four (geometry._bilinear_pairs)."""
    import re

    x = RNG.random((40, 52, 3), dtype=np.float32)
    text = jax.jit(lambda a: imgproc.rotate(a, 17.0, mode="grid-constant", cval=0.5)).lower(x).compile().as_text()
    entry = text[text.index("\nENTRY"):]
    called = set(re.findall(r"calls=%(\S+?)[,\s]", entry))
    bodies = [block for block in re.split(r"\n(?=%|ENTRY)", text) if any(block.startswith(f"%{c} ") for c in called)]
    assert sum(block.count(" gather(") for block in bodies) + entry.count(" gather(") == 2


@pytest.mark.parametrize("call", [lambda x: imgproc.resize(x, (3, 5)), lambda x: imgproc.resize(x, (4, 6), method="lanczos3"),
                                  lambda x: imgproc.letterbox(x, (6, 6)), lambda x: imgproc.resize(x, (40, 30))])
def test_a_long_resample_off_cpu_sums_its_taps_in_a_loop_with_the_same_bits(call, other_backend):
    """Off CPU more than UNROLLED_MAX_TAPS taps, and the weight table's columns, are added
    LOOP_TAPS at a time in a loop (unrolled sums of hundreds of terms took XLA:GPU many
    seconds to compile), in the same order: the GPU's program, run here, gives the CPU's
    pixels exactly; a short resample stays unrolled."""
    from backends import reported_backend
    from jaxprs import equations

    from imgproc.augment.resample import UNROLLED_MAX_TAPS, tap_count

    x = np.random.default_rng(5).integers(0, 256, (2, 150, 170, 3)).astype(np.uint8)
    jaxpr = jax.make_jaxpr(call)(x).jaxpr
    loops = len(equations(jaxpr, "scan")) + len(equations(jaxpr, "while"))  # fori_loop: a scan
    assert loops == (4 if call(x).shape[1] < 10 else 0)  # both axes long (taps, weights' sums), or neither
    got = np.asarray(call(x))
    with reported_backend("cpu"):
        want = np.asarray(call(x))
    np.testing.assert_array_equal(got, want)
    assert tap_count("linear", 170 / 5, True) > UNROLLED_MAX_TAPS >= tap_count("linear", 170 / 30, True)
