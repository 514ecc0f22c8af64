"""Morphology from its shared table (tests/morphology_cases.py): scipy.ndimage parity bit
for bit in every mode, footprint, layout and dtype; jit equals eager; vmap equals a loop;
the order properties; bad arguments refused naming the allowed values."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.ndimage as ndi

import imgproc
from imgproc.filters.morphology import CROSS, footprint_array
from cases import GRID_MODES, from_layout, to_layout
from morphology_cases import (BINARY, FOOTPRINTS, GREY, SCIPY_BINARY_CASES, SCIPY_IMAGE, SCIPY_MORPHOLOGY_CASES,
                               grey_reference, per_plane, scipy_footprint)

MODES = imgproc.MODES


@pytest.mark.parametrize("name", sorted(GREY))
def test_grey_ops_equal_scipy_bit_for_bit(name, rng):
    """Every footprint kind, mode (scipy's ``grid-*`` aliases included, each given to scipy
    as it is) and dtype (uint8, float32) of one op in one compiled program: the 96 variants
    cost one compilation instead of 96 eager ones (the suite's time); jit equals eager is
    tested below, so the parity holds for eager calls too."""
    op = getattr(imgproc, name)
    images = {}
    for dtype, cval in ((np.uint8, 40.0), (np.float32, 0.625)):
        x = rng.integers(0, 256, (11, 13)).astype(dtype)
        images[np.dtype(dtype).name] = (x / 255 if dtype == np.float32 else x, cval)
    cases = [(fp, mode, dt) for fp in sorted(FOOTPRINTS) for mode in MODES + tuple(GRID_MODES)
             for dt in sorted(images)]

    @jax.jit
    def run_all(xs, cvals):
        return [op(xs[dt], mode=mode, cval=cvals[dt], **FOOTPRINTS[fp]) for fp, mode, dt in cases]

    xs = {dt: x for dt, (x, _) in images.items()}
    got = run_all(xs, {dt: cval for dt, (_, cval) in images.items()})
    for (fp, mode, dt), out in zip(cases, got):
        x, cval = images[dt]
        want = grey_reference(name, x, FOOTPRINTS[fp], mode, cval)
        assert out.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(out), want, err_msg=f"{name} {fp} {mode} {dt}")


@pytest.mark.parametrize("layout", imgproc.LAYOUTS)
def test_every_layout(layout, rng):
    hwc = rng.integers(0, 256, (9, 10, 3)).astype(np.uint8)
    x = to_layout(hwc, layout)
    got = imgproc.opening(x, footprint="disk", size=5, mode="mirror",
                          layout=layout if layout in ("CHW", "NCHW") else None)
    assert got.shape == x.shape and got.dtype == np.uint8
    src = from_layout(x, layout)
    ref = lambda im: per_plane(lambda p: ndi.grey_opening(p, footprint=scipy_footprint(FOOTPRINTS["disk5"]),
                                                          mode="mirror"), im)
    want = np.stack([ref(im) for im in src]) if src.ndim == 4 else ref(src)
    np.testing.assert_array_equal(from_layout(np.asarray(got), layout), want)


@pytest.mark.parametrize("dtype", ["uint16", "float16", "bfloat16"])
def test_other_dtypes_are_exact(dtype, rng):
    x = jnp.asarray(rng.integers(0, 65536, (8, 9, 2)) if dtype == "uint16" else rng.random((8, 9, 2)), dtype)
    plane = np.asarray(x.astype(jnp.float32)) if dtype != "uint16" else np.asarray(x)
    for name in ("erosion", "dilation", "closing"):  # order statistics: exact in any dtype
        got = getattr(imgproc, name)(x, size=(3, 2), mode="nearest")
        assert got.dtype == jnp.dtype(dtype)
        want = per_plane(lambda p: grey_reference(name, p, {"size": (3, 2)}, "nearest"), plane)
        np.testing.assert_array_equal(np.asarray(got.astype(jnp.float32)), want.astype(np.float32))
    # a difference is taken in the image's dtype, as scipy takes it in the input's
    closed = imgproc.closing(x, size=(3, 2), mode="nearest")
    got = imgproc.black_tophat(x, size=(3, 2), mode="nearest")
    want = (closed.astype(jnp.int32) - x.astype(jnp.int32)).astype(x.dtype) if dtype == "uint16" else closed - x
    np.testing.assert_array_equal(np.asarray(got.astype(jnp.float32)), np.asarray(want.astype(jnp.float32)))


def test_float64_is_scipys_result_on_the_image_rounded_to_float32(rng):
    x = rng.random((9, 11))  # float64, as skimage.img_as_float gives
    for name in ("erosion", "opening", "morphological_gradient"):
        got = getattr(imgproc, name)(x, size=(3, 4), mode="wrap")
        assert got.dtype == np.float64
        want = grey_reference(name, x.astype(np.float32), {"size": (3, 4)}, "wrap")
        np.testing.assert_array_equal(got, want.astype(np.float64))


ALL_OPS = sorted(GREY) + sorted(BINARY)


@pytest.mark.parametrize("name", ALL_OPS)
def test_jit_equals_eager_and_vmap_equals_a_loop(name, rng):
    batch = rng.integers(0, 256, (3, 10, 12, 2)).astype(np.uint8)
    op = getattr(imgproc, name)
    eager = np.asarray(op(batch, footprint="disk", size=3))
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda b: op(b, footprint="disk", size=3))(batch)), eager)
    mapped = np.asarray(jax.vmap(lambda im: op(im, footprint="disk", size=3))(batch))
    np.testing.assert_array_equal(mapped, np.stack([np.asarray(op(im, footprint="disk", size=3)) for im in batch]))
    np.testing.assert_array_equal(mapped, eager)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_equal_scipy(name, rng):
    """Every footprint kind, border value and iteration count in one compiled program."""
    op = getattr(imgproc, name)
    x = rng.random((12, 14)) > 0.35
    cases = [(fp, bv, it) for fp in sorted(FOOTPRINTS) + ["default"] for bv in (0, 1) for it in (1, 2)]
    got = jax.jit(lambda x: [op(x, border_value=bv, iterations=it, **FOOTPRINTS.get(fp, {})) for fp, bv, it in cases])(x)
    for (fp, bv, it), out in zip(cases, got):
        options = FOOTPRINTS.get(fp, {})
        want = BINARY[name](x, structure=scipy_footprint(options), border_value=bv, iterations=it)
        assert out.dtype == bool
        np.testing.assert_array_equal(np.asarray(out), want, err_msg=f"{name} {fp} {bv} {it}")


def test_binary_ops_on_other_dtypes_give_max_value_where_set(rng):
    x = rng.random((9, 11, 3)) > 0.5
    want = np.stack([ndi.binary_closing(x[..., c]) for c in range(3)], -1)
    for dtype, on in ((np.uint8, 255), (np.uint16, 65535), (np.float32, 1.0)):
        got = np.asarray(imgproc.binary_closing(x.astype(dtype) * np.asarray(7, dtype)))  # nonzero is set
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want.astype(dtype) * np.asarray(on, dtype))
    assert float(np.asarray(imgproc.binary_dilation(x.astype(np.float32), max_value=0.5)).max()) == 0.5
    # in a pipeline on uint8 images a set pixel is 255, as when called on them
    pipe = imgproc.Pipeline([{"op": "binary_opening", "size": 3}, {"op": "binary_dilation", "footprint": "cross"}])
    u8 = x.astype(np.uint8) * 255
    np.testing.assert_array_equal(pipe(u8), imgproc.binary_dilation(imgproc.binary_opening(u8, size=3),
                                                                     footprint="cross"))


@pytest.mark.parametrize("dtype", [bool, np.uint8])
@pytest.mark.parametrize("layout", imgproc.LAYOUTS)
def test_binary_ops_in_every_layout(layout, dtype, rng):
    """Each binary op on each channel of the two spatial axes whatever the layout: a bool
    image (whose layout is checked apart from the other dtypes') and a uint8 one, channels
    last and first, one image and a batch, against scipy's op on each plane."""
    hwc = rng.random((9, 10, 3)) > 0.4
    x = to_layout(hwc.astype(dtype) * np.asarray(1 if dtype is bool else 9, dtype), layout)
    options = FOOTPRINTS["asymmetric"]  # off-centre: a transposed plane would not give the same set
    layout_arg = layout if layout in ("CHW", "NCHW") else None
    got = jax.jit(lambda im: [getattr(imgproc, name)(im, border_value=1, layout=layout_arg, **options)
                              for name in sorted(BINARY)])(x)
    src = from_layout(to_layout(hwc, layout), layout)
    for name, out in zip(sorted(BINARY), got):
        ref = lambda im: per_plane(lambda p: BINARY[name](p, structure=scipy_footprint(options), border_value=1), im)
        want = np.stack([ref(im) for im in src]) if src.ndim == 4 else ref(src)
        if dtype is not bool:
            want = want.astype(dtype) * np.asarray(255, dtype)
        assert out.dtype == dtype and out.shape == x.shape
        np.testing.assert_array_equal(from_layout(np.asarray(out), layout), want, err_msg=f"{name} {layout}")


COMPOSITES = ["opening", "closing", "white_tophat", "black_tophat"]


def test_composites_on_an_image_wide_enough_for_edge_columns_equal_scipy(rng):
    """A composite op's second pass reads its border strips from the first pass's edge
    columns computed apart (morphology._edge_columns), taken where the image is at least
    four footprints wide: the 11×13 table above falls back for most footprints, so every
    composite, mode and an odd, an even and an off-centre footprint again on 19×44."""
    x = rng.integers(0, 256, (19, 44, 2)).astype(np.uint8)
    cases = [(name, mode, options) for name in COMPOSITES for mode in MODES
             for options in ({"size": 9}, {"size": (3, 4)}, FOOTPRINTS["asymmetric"])]

    @jax.jit
    def run_all(img):
        return [getattr(imgproc, name)(img, mode=mode, cval=40.0, **options) for name, mode, options in cases]

    for (name, mode, options), out in zip(cases, run_all(x)):
        want = per_plane(lambda p: grey_reference(name, p, options, mode, 40.0), x)
        np.testing.assert_array_equal(np.asarray(out), want, err_msg=f"{name} {mode} {options}")


@pytest.mark.cpu_only("how XLA:CPU fuses a composite op's passes into loops")
@pytest.mark.parametrize("name", ["opening", "white_tophat"])
def test_a_composite_makes_one_pass_over_memory_per_axis_and_op(name):
    """Four loops write an image-sized result: the two ops' columns and rows. Left to
    fusion, XLA also wrote the first op's result a second time, in the flat form the
    second op's columns read (15×15 on 2048²×3 uint8: 5 passes, 8.2 ms against 6.9)."""
    import re

    x = np.zeros((64, 80, 3), np.uint8)
    text = jax.jit(lambda a: getattr(imgproc, name)(a, size=15, mode="nearest")).lower(x).compile().as_text()
    entry = text[text.index("\nENTRY"):]
    sizes = [np.prod([int(d) for d in m.group(1).split(",") if d])
             for m in re.finditer(r"\n\s+(?:ROOT )?%\S+ = \w+\[([\d,]*)\]\S* fusion\(", entry)]
    assert sum(size >= x.size for size in sizes) == 4


@pytest.mark.parametrize("op, cval, border", [("erosion", -5.0, 0), ("dilation", 300.0, 255), ("erosion", 7.9, 7)])
def test_an_integer_images_cval_is_truncated_and_clipped_to_its_range(op, cval, border, rng):
    """scipy truncates a fractional cval as its cast does, and wraps one outside the range
    (uint8 -5 -> 251, 300 -> 44); imgproc clips those to the range (docs/guide.md)."""
    x = rng.integers(20, 200, (9, 10)).astype(np.uint8)
    got = getattr(imgproc, op)(x, size=3, mode="constant", cval=cval)
    want = getattr(ndi, f"grey_{op}")(x, size=3, mode="constant", cval=border)
    np.testing.assert_array_equal(got, want)
    if cval in (-5.0, 300.0):  # scipy's own wraps around
        wrapped = getattr(ndi, f"grey_{op}")(x, size=3, mode="constant", cval=cval)
        assert not np.array_equal(wrapped, want)


@pytest.mark.parametrize("mode", ["reflect", "mirror", "nearest", "wrap"])
def test_order_properties(mode, rng):
    """erosion <= opening <= x <= closing <= dilation (a symmetric footprint), opening and
    closing are idempotent, and erosion is dilation's dual on floats."""
    x = rng.random((12, 13, 2)).astype(np.float32)
    fp = {"footprint": "disk", "size": 5, "mode": mode}
    ero, dil = np.asarray(imgproc.erosion(x, **fp)), np.asarray(imgproc.dilation(x, **fp))
    op, cl = np.asarray(imgproc.opening(x, **fp)), np.asarray(imgproc.closing(x, **fp))
    assert (ero <= op).all() and (op <= x).all() and (x <= cl).all() and (cl <= dil).all()
    np.testing.assert_array_equal(np.asarray(imgproc.opening(op, **fp)), op)
    np.testing.assert_array_equal(np.asarray(imgproc.closing(cl, **fp)), cl)
    np.testing.assert_array_equal(ero, -np.asarray(imgproc.dilation(-x, **fp)))
    np.testing.assert_array_equal(np.asarray(imgproc.white_tophat(x, **fp)), x - op)
    np.testing.assert_array_equal(np.asarray(imgproc.morphological_gradient(x, **fp)), dil - ero)


def test_named_footprints():
    from imgproc.filters.morphology import footprint_array

    skm = pytest.importorskip("skimage.morphology")
    for r in (1, 2, 3, 7):
        np.testing.assert_array_equal(footprint_array(2 * r + 1, "disk"), skm.disk(r).astype(bool))
    np.testing.assert_array_equal(footprint_array(None, "cross"), ndi.generate_binary_structure(2, 1))
    np.testing.assert_array_equal(footprint_array((3, 5), "square"), np.ones((3, 5), bool))
    assert footprint_array((5, 9), "disk").shape == (5, 9)  # an ellipse


def test_a_spec_takes_a_footprint_as_nested_lists_and_runs_like_the_call(rng):
    x = rng.integers(0, 256, (2, 10, 11, 3)).astype(np.uint8)
    spec = [{"op": "closing", "footprint": [[0, 1, 1], [1, 1, 0]], "mode": "wrap"},
            {"op": "morphological_gradient", "size": [3, 1]}]
    pipe = imgproc.Pipeline.from_spec(imgproc.Pipeline(spec).to_json())
    assert pipe.to_spec() == spec
    want = imgproc.morphological_gradient(imgproc.closing(x, footprint=[[0, 1, 1], [1, 1, 0]], mode="wrap"),
                                          size=(3, 1))
    np.testing.assert_array_equal(pipe(x), want)
    # size buckets (the command line's) give the same pixels for the one-pass ops
    bucketed = imgproc.Pipeline([{"op": "erosion", "size": 5, "mode": "nearest"}], bucket=True)
    np.testing.assert_array_equal(bucketed(x[0]), imgproc.erosion(x[0], size=5, mode="nearest"))


@pytest.mark.parametrize("call, match", [
    (lambda x: imgproc.erosion(x), "size or footprint must be given"),
    (lambda x: imgproc.dilation(x, footprint="star"), "footprint must be one of 'square', 'disk', 'cross'"),
    (lambda x: imgproc.opening(x, footprint="disk", size=4), "a disk needs odd sides"),
    (lambda x: imgproc.closing(x, size=0), "size must be positive integers"),
    (lambda x: imgproc.closing(x, size=(3, 3, 3)), "size must be an int or a pair"),
    (lambda x: imgproc.white_tophat(x, footprint=np.zeros((3, 3))), "at least one True"),
    (lambda x: imgproc.white_tophat(x, footprint=np.full((3, 3), 2)), "2-D array of booleans"),
    (lambda x: imgproc.black_tophat(x, footprint=[[1, 1]], size=3), "not both"),
    (lambda x: imgproc.erosion(x, size=3, mode="symmetric"), "reflect, mirror, nearest, wrap, constant"),
    (lambda x: imgproc.erosion(x, size=3, cval=float("nan")), "cval must be a finite number"),
    (lambda x: imgproc.erosion(x.astype(np.int32), size=3), "uint8, uint16, float16, bfloat16, float32"),
    (lambda x: imgproc.erosion(x, size=3, layout="NCHW"), "needs a 4-D array"),
    (lambda x: imgproc.binary_erosion(x, border_value=2), r"border_value must be one of 0, 1"),
    (lambda x: imgproc.binary_opening(x, iterations=0), r"iterations must be an integer in \[1, "),
    (lambda x: imgproc.binary_closing(x.astype(np.int8)), "uint8, uint16, float16, bfloat16, float32"),
])
def test_bad_arguments_raise_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call(np.zeros((6, 6, 3), np.float32))


def test_a_bad_footprint_is_refused_when_the_stage_is_built():
    with pytest.raises(ValueError, match="footprint must be one of 'square', 'disk', 'cross'"):
        imgproc.Pipeline([{"op": "opening", "footprint": "ring"}])


@pytest.mark.parametrize("name, op, footprint, expected", SCIPY_MORPHOLOGY_CASES,
                         ids=[c[0] for c in SCIPY_MORPHOLOGY_CASES])
def test_scipys_own_cases(name, op, footprint, expected):
    """scipy's ndimage test_morphology.py cases (tests/morphology_cases.py), uint8 and float32."""
    # scipy's test runs on int64, where a top-hat of this off-centre footprint goes negative:
    # float32 keeps that, uint8 saturates at 0 (imgproc's rule) where scipy's uint8 would wrap
    want = np.asarray(expected(SCIPY_IMAGE.astype(np.int64)) if callable(expected) else expected)
    for dtype, want_dt in ((np.uint8, np.clip(want, 0, 255)), (np.float32, want)):
        got = np.asarray(getattr(imgproc, op)(SCIPY_IMAGE.astype(dtype), footprint=footprint))
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want_dt.astype(dtype), err_msg=f"{name} {dtype.__name__}")


@pytest.mark.parametrize("name, op, options, image, expected", SCIPY_BINARY_CASES,
                         ids=[c[0] for c in SCIPY_BINARY_CASES])
def test_scipys_own_binary_cases(name, op, options, image, expected):
    """scipy's binary_* cases (tests/morphology_cases.py): imgproc gives scipy's literal result
    exactly, bool on a bool image, 255 where set on scipy's uint8 0/1 data; and scipy itself
    gives that literal on this input (the literal was copied right, a 1-D case's 1xN image is
    honest)."""
    structure = footprint_array(options.get("size"), options.get("footprint"), default=CROSS)
    rest = {k: v for k, v in options.items() if k not in ("size", "footprint")}
    np.testing.assert_array_equal(BINARY[op](image, structure=structure, **rest), expected, err_msg="scipy")
    for x in [image] if image.dtype == bool else [image.astype(bool), image]:  # a broadcast view as it is
        got = np.asarray(getattr(imgproc, op)(x, **options))
        assert got.dtype == x.dtype and got.shape == expected.shape
        want = expected if x.dtype == bool else expected.astype(x.dtype) * np.asarray(255, x.dtype)
        np.testing.assert_array_equal(got, want, err_msg=f"{name} {x.dtype}")
