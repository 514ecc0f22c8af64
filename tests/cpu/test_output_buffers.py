"""imgproc.cpu.output_buffers: an eager call on NumPy input writes into the buffer of a dropped
earlier result (issue 15 item 3), its separable first pass into a kept scratch buffer, and
its aligned copy of the input into kept host memory; never into one the caller still
holds or into the caller's own memory, without new compilations, within its bounds.

The machinery exists where XLA:CPU's arrays are this process's host memory; on another
backend the library does not use it (``IntoBuffer`` runs the plain program, input is
uploaded, not read in place), and its tests are skipped there (``cpu_only``). What holds on
every backend runs everywhere: results and input never written, no second compilation,
the values (bfloat16 at any alignment, the scratch marking), the input checks, the bound's
bookkeeping."""

import gc

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.ndimage as ndi

import imgproc
from imgproc.core.images import HOST_ALIGNMENT, host_aligned
from imgproc.cpu import output_buffers as buffers

KEPT = pytest.mark.cpu_only("results and scratch written into kept XLA:CPU buffers")
IN_PLACE = pytest.mark.cpu_only("NumPy input read in place by XLA:CPU through an aligned flat view")
STAGED = pytest.mark.cpu_only("misaligned NumPy input staged in kept aligned host memory for XLA:CPU")


def key(array):
    return tuple(array.shape), array.dtype.str


def outputs_kept(image):
    """Kept XLA buffers of the image's own shape (outputs; scratch has other shapes)."""
    return buffers.kept().get(key(image), 0)


@pytest.fixture
def image():
    buffers.release()
    yield np.random.default_rng(0).random((300, 400, 3), dtype=np.float32)  # 1.4 MB: above MIN_BYTES
    buffers.release()


@KEPT
def test_a_dropped_result_is_written_again(image):
    first = imgproc.gaussian_blur(image, 1.0)
    where, expected = first.ctypes.data, first.copy()
    del first
    gc.collect()
    assert outputs_kept(image) == 1
    second = imgproc.gaussian_blur(image, 1.0)
    assert second.ctypes.data == where and outputs_kept(image) == 0
    np.testing.assert_array_equal(second, expected)
    assert second.flags.writeable


def test_held_results_and_the_input_are_never_written(image):
    original = image.copy()
    held = [imgproc.gaussian_blur(image, s) for s in (1.0, 2.0)]
    copies = [h.copy() for h in held]
    for sigma in (1.0, 2.0, 3.0):  # more calls, some results dropped at once
        imgproc.gaussian_blur(image, sigma)
        gc.collect()
    for h, c in zip(held, copies):
        np.testing.assert_array_equal(h, c)
    np.testing.assert_array_equal(image, original)
    assert all(h.ctypes.data != image.ctypes.data for h in held)


@KEPT
def test_a_view_keeps_its_buffer_until_the_last_view_goes(image):
    result = imgproc.box_blur(image, 3)
    corner = result[:10, :10]
    expected = corner.copy()
    del result
    gc.collect()
    assert outputs_kept(image) == 0  # the slice still holds the buffer
    imgproc.box_blur(image + 1, 3)
    np.testing.assert_array_equal(corner, expected)


def test_second_and_later_calls_do_not_compile(image, compilations):
    imgproc.gaussian_blur(image, 1.7)  # compiles (and writes into a new buffer)
    gc.collect()
    with compilations() as compiled:
        kept = imgproc.gaussian_blur(image, 1.7)  # a kept buffer
        held = imgproc.gaussian_blur(image, 1.7)  # none free: a new buffer
    assert compiled == []
    np.testing.assert_array_equal(kept, held)


@KEPT
def test_jax_input_keeps_only_scratch_and_small_results_nothing(image):
    device = jnp.asarray(image)
    out = imgproc.gaussian_blur(device, 1.0)
    assert isinstance(out, jax.Array)
    del out
    gc.collect()
    assert key(image) not in buffers.kept() and len(buffers.kept()) == 1  # the first pass only
    again = imgproc.gaussian_blur(device, 1.0)  # takes the scratch, puts it back
    assert len(buffers.kept()) == 1
    np.testing.assert_array_equal(np.asarray(again), imgproc.gaussian_blur(image, 1.0))
    buffers.release()
    small = imgproc.gaussian_blur(image[:20, :20], 1.0)
    del small
    gc.collect()
    assert buffers.kept() == {} and buffers.kept(staging=True) == {}


@KEPT
def test_bounded_per_shape_and_released(image, monkeypatch):
    results = [imgproc.gaussian_blur(image, 1.0) for _ in range(buffers.KEPT_PER_SHAPE + 2)]
    del results
    gc.collect()
    assert outputs_kept(image) == buffers.KEPT_PER_SHAPE
    assert buffers.kept(staging=True).get(key(image), 0) <= buffers.STAGING_PER_SHAPE
    total = buffers.kept_bytes()
    assert buffers.release() == total and buffers.kept_bytes() == 0 and buffers.kept() == {}
    monkeypatch.setattr(buffers, "KEPT_BYTES", image.nbytes)
    results = [imgproc.gaussian_blur(image, 1.0) for _ in range(3)]
    del results
    gc.collect()
    assert buffers.kept_bytes() <= image.nbytes


def test_other_backends_keep_nothing_and_read_nothing_in_place(image, other_backend, monkeypatch):
    """Off CPU the machinery is not used: an eager call on NumPy input keeps no buffer and
    stages nothing (its input is uploaded, its result downloaded), and misaligned input is
    not read through a flat view; the values are the same."""
    views = recorded_views(monkeypatch, buffers)
    expected = ndi.gaussian_filter(image, (1.0, 1.0, 0))
    for source in (image, misaligned(image, 16)):
        out = imgproc.gaussian_blur(source, 1.0)
        np.testing.assert_allclose(out, expected, atol=1e-5)
        del out
        gc.collect()
    assert buffers.kept() == {} and buffers.kept(staging=True) == {}
    assert [v for v in views if v is not None] == []


def test_public_release():
    assert imgproc.release_output_buffers() >= 0


@KEPT
def test_the_first_pass_is_written_into_a_kept_scratch_buffer(image):
    expected = imgproc.gaussian_blur(jnp.asarray(image), 1.0)  # the plain program: no scratch
    out = imgproc.gaussian_blur(image, 1.0)
    scratch = [k for k in buffers.kept() if k != key(image)]
    assert len(scratch) == 1  # the first pass, extended by the radii: not the image's shape
    where = buffers._kept[scratch[0]][0].unsafe_buffer_pointer()
    again = imgproc.gaussian_blur(image, 1.0)  # takes it, writes it (donated), puts it back
    assert buffers._kept[scratch[0]][0].unsafe_buffer_pointer() == where
    np.testing.assert_array_equal(out, np.asarray(expected))
    np.testing.assert_array_equal(again, out)


@KEPT
def test_an_unsharp_masks_blur_run_alone_is_kept_too(image):
    # sigma = 3: the blur's last pass runs on its own (the combination reads it), its
    # result (the whole blur, rows of W*C values) kept beside the first pass's buffers
    blur = ((1, 300, 1200), "<f4")
    imgproc.gaussian_blur(image, 3.0)  # there the blur is the output: not kept as scratch
    assert blur not in buffers.kept()
    expected = imgproc.unsharp_mask(jnp.asarray(image), sigma=3.0)
    out = imgproc.unsharp_mask(image, sigma=3.0)
    assert buffers.kept()[blur] == 1
    np.testing.assert_array_equal(out, np.asarray(expected))
    np.testing.assert_array_equal(imgproc.unsharp_mask(image, sigma=3.0), out)


def test_scratch_is_marked_only_at_the_programs_own_level(image):
    """Inside jit, vmap or a pipeline's per-image loop nothing is collected (no tracer
    leaks out of an inner trace) and the values are the plain ones."""
    batch = np.stack([image, image[::-1]])
    expected = np.asarray(imgproc.gaussian_blur(jnp.asarray(batch), 2.0))
    np.testing.assert_allclose(np.asarray(jax.jit(lambda x: imgproc.gaussian_blur(x, 2.0))(batch)), expected,
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.vmap(lambda x: imgproc.gaussian_blur(x, 2.0))(batch)), expected,
                               rtol=1e-6, atol=1e-6)
    looped = imgproc.Pipeline([{"op": "random_gaussian_blur", "sigma_range": [2.0, 2.0]}])  # a per-image loop on CPU
    np.testing.assert_allclose(looped(batch, key=jax.random.key(0)), expected, rtol=1e-5, atol=1e-5)
    pipe = imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 2.0}, {"op": "sharpen"}])
    np.testing.assert_array_equal(pipe(batch), np.asarray(pipe(jnp.asarray(batch))))


def recorded_views(monkeypatch, module) -> list:
    """The ``view`` of every call of ``module.from_flat`` from now on (the calls go on)."""
    views = []
    real = module.from_flat
    monkeypatch.setattr(module, "from_flat", lambda image, view: views.append(view) or real(image, view))
    return views


def misaligned(image, skew=4):
    """A C-contiguous copy of ``image`` whose data lies ``skew`` bytes past a 64-byte boundary."""
    raw = np.empty(image.nbytes + 2 * HOST_ALIGNMENT, np.uint8)
    start = (-raw.ctypes.data) % HOST_ALIGNMENT + skew
    out = raw[start:start + image.nbytes].view(image.dtype).reshape(image.shape)
    out[...] = image
    return out


@STAGED
def test_staging_memory_is_reused_only_when_nothing_references_it(image):
    source = misaligned(image)
    held = host_aligned(source)
    assert held.ctypes.data % HOST_ALIGNMENT == 0 and held is not source
    np.testing.assert_array_equal(held, image)
    other = host_aligned(source)  # the first is still referenced: other memory
    assert not np.may_share_memory(other, held)
    where = other.ctypes.data
    del other
    again = host_aligned(source)  # now free: the same memory, written again
    assert again.ctypes.data == where
    np.testing.assert_array_equal(held, image)


@STAGED
def test_eager_calls_on_misaligned_input_reuse_their_staging(image):
    wide = np.random.default_rng(2).integers(0, 65535, (600, 800, 3), dtype=np.uint16)
    source = misaligned(wide, 1)  # at an odd byte: no flat view, a staging copy
    before = source.copy()
    first = imgproc.gaussian_blur(source, 1.0)
    for _ in range(3):
        out = imgproc.gaussian_blur(source, 1.0)
        np.testing.assert_array_equal(out, first)
        del out
    assert buffers.kept(staging=True)[key(source)] <= buffers.STAGING_PER_SHAPE
    np.testing.assert_array_equal(source, before)  # the caller's array is never written


@STAGED
def test_a_split_batch_is_joined_into_the_memory_of_a_dropped_result(monkeypatch):
    """A concrete batch split over the cores (imgproc.pipeline.execution.run_parts) is joined into
    host memory of an earlier joined result once nothing references it: never while the
    caller holds that result, as a jax.Array or as a NumPy view of one."""
    from imgproc.pipeline import execution

    monkeypatch.setattr(execution, "cpu_cores", lambda: 2)  # two slices, on any machine
    batch = buffers.aligned_empty((16, 160, 160, 3), np.uint8)  # 1.2 MB, read in place: no staging copy
    batch[...] = np.random.default_rng(1).integers(0, 256, batch.shape, dtype=np.uint8)
    pipe = imgproc.Pipeline([{"op": "random_flip_left_right"}, {"op": "random_brightness", "max_delta": 0.2}])
    assert execution.loop_parts(batch, loops=True, batched=True) == 2
    keys = [jax.random.key(i) for i in range(6)]

    buffers.release()
    first = np.asarray(pipe(batch, key=keys[0]))
    where, expected = first.ctypes.data, first.copy()
    assert buffers.kept(staging=True) == {key(batch): 1}  # the joined result's memory
    del first
    gc.collect()
    for _ in range(2):  # dropped each time: the same memory, written again
        again = np.asarray(pipe(batch, key=keys[0]))
        assert again.ctypes.data == where
        np.testing.assert_array_equal(again, expected)
        del again
        gc.collect()

    held_jax = pipe(jnp.asarray(batch), key=keys[1])  # a jax.Array in, a jax.Array out
    assert isinstance(held_jax, jax.Array)
    held_view = np.asarray(pipe(batch, key=keys[2]))
    copies = [np.array(held_jax), held_view.copy()]
    for k in keys[3:]:  # more results, dropped at once
        pipe(batch, key=k)
        gc.collect()
    np.testing.assert_array_equal(np.asarray(held_jax), copies[0])
    np.testing.assert_array_equal(held_view, copies[1])
    assert not np.may_share_memory(np.asarray(held_jax), held_view)


# (dtype, bytes past the boundary, image height: a shape of its own, so each case traces afresh)
# (every dtype; a skew of one element, of a 16-byte vector and past a cache line's third)
READ_IN_PLACE = [(np.uint8, 1, 601), (np.uint8, 48, 603), (np.uint16, 2, 604), (np.float32, 16, 606),
                 (np.float16, 2, 608)]


def random_image(rng, shape, dtype):
    """Random values over the dtype's image range (integers: all of it; floats: [0, 1))."""
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, np.iinfo(dtype).max, shape, dtype=dtype)
    return rng.random(shape, dtype=np.float32).astype(dtype)


@IN_PLACE
@pytest.mark.parametrize("dtype, skew, height", READ_IN_PLACE)
def test_misaligned_input_is_read_in_place(dtype, skew, height, monkeypatch, compilations):
    """No staging copy: the program reads a flat view from the boundary before the data,
    and the pixels are those of the same image on the device, for the filters (sigma = 3:
    its rows pass in two loops), their unsharp stage and a pipeline; a second call does
    not compile; the caller's array is never written."""
    clean = random_image(np.random.default_rng(skew), (height, 800, 3), dtype)
    source = misaligned(clean, skew)
    before = source.copy()
    views = recorded_views(monkeypatch, buffers)
    calls = [lambda x: imgproc.gaussian_blur(x, 1.5), lambda x: imgproc.box_blur(x, 5),
             lambda x: imgproc.gaussian_blur(x, 3.0), lambda x: imgproc.unsharp_mask(x, sigma=2.0),
             imgproc.presets.denoise()]
    buffers.release()
    for call in calls:
        views.clear()
        out = call(source)
        assert {v for v in views if v is not None} == {(skew // clean.itemsize, clean.shape)}
        assert isinstance(out, np.ndarray)
        np.testing.assert_array_equal(out, np.asarray(call(jnp.asarray(clean))))
        with compilations() as compiled:
            np.testing.assert_array_equal(call(source), out)
        assert compiled == []
    assert buffers.kept(staging=True) == {}
    np.testing.assert_array_equal(source, before)


# (layout, shape, dtype, bytes past the boundary, window side, mode)
MEDIAN_READ_IN_PLACE = [("HWC", (301, 90, 3), np.uint8, 16, 3, "nearest"), ("HW", (302, 91), np.uint8, 48, 5, "wrap"),
                        ("NHWC", (1, 303, 90, 3), np.uint16, 32, 3, "mirror"),
                        ("NHWC", (2, 304, 90, 3), np.uint8, 16, 3, "reflect"),
                        ("CHW", (3, 305, 90), np.uint8, 32, 5, "constant"),
                        ("NCHW", (2, 3, 306, 90), np.uint16, 2, 3, "wrap"),
                        ("HWC", (1001, 90, 3), np.float32, 16, 3, "reflect"),
                        ("NHWC", (1, 1002, 90, 3), np.float16, 6, 5, "nearest")]


@IN_PLACE
@pytest.mark.parametrize("layout, shape, dtype, skew, size, mode", MEDIAN_READ_IN_PLACE)
def test_the_median_reads_misaligned_input_in_place(layout, shape, dtype, skew, size, mode, monkeypatch):
    """The median's program takes the flat view itself (its conditional's operand: given
    the slice, XLA copied it), in every layout; the pixels are scipy's, the caller's array
    is never written."""
    from imgproc.restoration import median_filter

    clean = random_image(np.random.default_rng(skew), shape, dtype)
    source = misaligned(clean, skew)
    before = source.copy()
    views = recorded_views(monkeypatch, median_filter)
    out = imgproc.median(source, size=size, mode=mode, layout=layout)
    assert views == [(skew // clean.itemsize, shape)]
    axes = [layout.index("H"), layout.index("W")]
    planes = np.moveaxis(clean, axes, [-2, -1])
    # scipy takes no float16: the median is one of the values, exact in float32
    wide = planes.astype(np.float32) if dtype == np.float16 else planes
    filtered = [ndi.median_filter(p, size, mode=mode).astype(dtype) for p in wide.reshape(-1, *planes.shape[-2:])]
    ref = np.moveaxis(np.stack(filtered).reshape(planes.shape), [-2, -1], axes)
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(source, before)


@IN_PLACE
def test_a_pipeline_that_changes_the_size_reads_misaligned_input_in_place_too(monkeypatch):
    """Its output has another shape, so it runs the program without an output buffer;
    that program reads the flat view as well, and gives the aligned image's pixels."""
    clean = np.random.default_rng(5).integers(0, 256, (2, 400, 500, 3), dtype=np.uint8)
    source = misaligned(clean, 32)
    views = recorded_views(monkeypatch, buffers)
    pipe = imgproc.Pipeline([{"op": "center_crop", "size": 300}, {"op": "gaussian_blur", "sigma": 1.0}])
    buffers.release()
    out = pipe(source)
    assert out.shape == (2, 300, 300, 3) and (32, clean.shape) in views
    np.testing.assert_array_equal(out, np.asarray(pipe(jnp.asarray(clean))))
    assert buffers.kept(staging=True) == {}


@STAGED
def test_what_is_not_read_in_place_is_staged(image):
    """A float64 image is copied while it is checked (JAX converts it: a copy anyway); an
    integer one at an odd byte, or not C-contiguous, has no flat view and is copied too;
    the values are right."""
    buffers.release()
    assert buffers.aligned_flat_view(misaligned(image.astype(np.float64), 16)) is None
    assert buffers.aligned_flat_view(misaligned(image, 16)) is not None
    wide = np.random.default_rng(3).integers(0, 65535, (600, 800, 3), dtype=np.uint16)
    odd = misaligned(wide, 1)
    assert not odd.flags.aligned and buffers.aligned_flat_view(odd) is None
    assert buffers.aligned_flat_view(misaligned(wide, 16)[:, ::2]) is None
    assert buffers.aligned_flat_view(buffers.aligned_empty(wide.shape, wide.dtype)) is None
    np.testing.assert_array_equal(imgproc.gaussian_blur(odd, 1.0), imgproc.gaussian_blur(wide, 1.0))
    assert buffers.kept(staging=True).get(key(wide), 0) >= 1


@STAGED
def test_a_bucketed_batch_is_padded_into_kept_aligned_memory():
    """The size bucket's zero-padded copy of a misaligned batch goes into aligned host
    memory (one program, whatever the caller's skew), written again once nothing
    references it: the pixels are the exact-size pipeline's, the memory bounded."""
    buffers.release()
    pipe = imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 1.0}, {"op": "sharpen"}], bucket=True)
    clean = np.random.default_rng(4).integers(0, 256, (2, 500, 700, 3), dtype=np.uint8)
    source = misaligned(clean, 16)
    before = source.copy()
    expected = np.asarray(imgproc.Pipeline(pipe.stages)(clean))  # exact size, no bucket
    for _ in range(3):
        np.testing.assert_array_equal(pipe(source), expected)
        gc.collect()
    staged = buffers.kept(staging=True)
    assert len(staged) == 1 and list(staged.values())[0] <= buffers.STAGING_PER_SHAPE
    ((shape, _),) = staged
    assert shape[0] == 2 and shape[1:3] != (500, 700)  # the bucket's size
    np.testing.assert_array_equal(source, before)


@STAGED
def test_the_command_stacks_its_batches_into_aligned_memory():
    """The folder runner stacks a batch into kept aligned host memory, so decoded images
    at any skew (the decoder's allocation varies from run to run) meet one compiled program
    of their shape, and one entry of the persistent cache, where a fresh stack at another
    skew would compile (and cache) the program again; the stack is read in place."""
    from pathlib import Path

    from imgproc.io.folder_plan import Job
    from imgproc.io.folder_runner import BatchStage, Decoded

    pipe = imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 1.0}, {"op": "sharpen"}], bucket="auto")
    reference = imgproc.Pipeline(pipe.stages)
    skews, traces = [], []

    def run(batch):
        skews.append(batch.ctypes.data % HOST_ALIGNMENT)
        return pipe(batch)

    stage = BatchStage(run, batch_size=2)
    rng = np.random.default_rng(9)
    for skew in (16, 48, 0, 32):
        images = [misaligned(rng.integers(0, 256, (400, 500, 3), dtype=np.uint8), skew) for _ in range(2)]  # >= MIN_BYTES
        results = []
        for i, im in enumerate(images):
            results += stage.add(Decoded(Job(Path(f"{i}.png"), Path("o.png"), "", i), im, None, False, None, []))
        np.testing.assert_array_equal(np.stack([r.image for r in results]), reference(np.stack(images)))
        traces.append(pipe.trace_count)
    assert skews == [0, 0, 0, 0]
    assert traces[1:] == traces[:1] * 3  # one program (its traces all made by the first batch)
    staged = [shape for shape, _ in buffers.kept(staging=True)]
    assert (2, 400, 500, 3) in staged


def test_a_float_image_read_in_place_is_still_checked():
    """Read where it is (misaligned through its flat view, or aligned), a float image still
    gets its finite and range check (without a copy): one ValueError naming the first bad
    position, for the filters (checked while their program computes) and a pipeline."""
    clean = np.random.default_rng(11).random((500, 700, 3), dtype=np.float32)
    calls = [lambda x: imgproc.gaussian_blur(x, 1.0), lambda x: imgproc.box_blur(x, 5),
             lambda x: imgproc.correlate(x, np.ones((3, 3), np.float32)), imgproc.presets.denoise()]
    for bad, match in ((np.nan, r"NaN or infinity \(first at index \(123, 45, 1\)\)"), (3e6, r"beyond the allowed")):
        for source in (misaligned(clean, 16), misaligned(clean, 0)):
            source[123, 45, 1] = bad
            before = source.copy()
            for call in calls:
                with pytest.raises(ValueError, match=match):
                    call(source)
            np.testing.assert_array_equal(source, before)


@IN_PLACE
def test_a_pipeline_checks_numpy_input_while_its_program_computes(monkeypatch):
    """A pipeline without size buckets does as the filters do: it dispatches, then checks
    the NumPy batch it reads in place. With buckets it checks first (the bucket path copies;
    the "auto" rule must not record a bad image's size as its bucket's exact one)."""
    from imgproc.core import images as _checks

    order = []
    check = _checks._check_in_place
    monkeypatch.setattr(_checks, "_check_in_place", lambda a: order.append("check") or check(a))
    clean = np.random.default_rng(13).random((500, 700, 3), dtype=np.float32)
    want = np.asarray(imgproc.presets.denoise()(clean.copy()))
    for bucket, expected in ((False, ["dispatch", "check"]), (True, ["check", "dispatch"]),
                             ("auto", ["check", "dispatch"])):
        pipe = imgproc.Pipeline(imgproc.presets.denoise().to_spec(), bucket=bucket)
        compiled = pipe._programs.compiled
        monkeypatch.setattr(pipe._programs, "compiled", lambda *a, c=compiled, **k: order.append("dispatch") or c(*a, **k))
        order.clear()
        np.testing.assert_allclose(pipe(misaligned(clean, 16)), want, atol=1e-5)
        assert order == expected, bucket
    bad = misaligned(np.ascontiguousarray(clean[:300, :400]), 16)  # a size of a bucket not met yet
    bad[7, 8, 2] = np.nan
    pipe = imgproc.Pipeline(imgproc.presets.denoise().to_spec(), bucket="auto")
    met = {k: dict(v) for k, v in pipe._programs.sizes_met.items()}  # the loop's "auto" pipeline's (shared)
    with pytest.raises(ValueError, match="NaN"):
        pipe(bad)
    assert pipe._programs.sizes_met == met


@IN_PLACE
def test_a_filter_checks_numpy_input_while_its_program_computes(monkeypatch):
    """The filters dispatch their program first and check a NumPy image read in place
    after (the check overlaps the computation); the result is handed over only after the
    check, and an image that is copied is checked in the copy, before the program."""
    from imgproc.core import images as _checks
    from imgproc.filters import convolution

    order = []
    dispatch, check = convolution.apply_stage, _checks._check_in_place
    monkeypatch.setattr(convolution, "apply_stage", lambda *a, **k: order.append("dispatch") or dispatch(*a, **k))
    monkeypatch.setattr(_checks, "_check_in_place", lambda a: order.append("check") or check(a))
    clean = np.random.default_rng(12).random((500, 700, 3), dtype=np.float32)
    out = imgproc.gaussian_blur(misaligned(clean, 16), 1.0)
    assert order == ["dispatch", "check"]
    np.testing.assert_allclose(out, ndi.gaussian_filter(clean, (1.0, 1.0, 0)), atol=1e-5)
    order.clear()
    strided = misaligned(np.repeat(clean, 2, axis=1), 16)[:, ::2]  # no flat view: copied, checked in the copy
    np.testing.assert_array_equal(imgproc.gaussian_blur(strided, 1.0), out)
    assert order == ["dispatch"]


@pytest.mark.parametrize("skew", [0, 2, 16])
@pytest.mark.parametrize("shape", [(16, 16, 3), (320, 320, 3)])
def test_bfloat16_numpy_images_at_any_alignment(skew, shape):
    """bfloat16 images (ml_dtypes) read in place at a skew and handed back as views: NumPy's
    array interface names them only as raw 2-byte values, so both views are made as
    bfloat16 again (a misaligned one failed to trace, an aligned result of 1 MiB or more
    came back as dtype '|V2'; found by a review)."""
    import ml_dtypes

    base = np.empty(int(np.prod(shape)) * 2 + 2 * HOST_ALIGNMENT, np.uint8)
    start = (-base.ctypes.data) % HOST_ALIGNMENT + skew
    x = base[start:start + int(np.prod(shape)) * 2].view(ml_dtypes.bfloat16).reshape(shape)
    x[...] = np.random.default_rng(0).random(shape).astype(ml_dtypes.bfloat16)
    before = x.view(np.uint16).copy()
    ref = np.stack([ndi.gaussian_filter(x[..., c].astype(np.float64), 1.0) for c in range(3)], -1)
    for call in (lambda a: imgproc.gaussian_blur(a, 1.0), lambda a: imgproc.Pipeline([{"op": "gaussian_blur",
                                                                                          "sigma": 1.0}])(a)):
        y = call(x)
        assert isinstance(y, np.ndarray) and y.dtype == x.dtype and y.shape == shape
        np.testing.assert_allclose(y.astype(np.float64), ref, atol=8e-3)
    assert imgproc.median(x).dtype == x.dtype
    np.testing.assert_array_equal(x.view(np.uint16), before)


def test_a_buffer_taken_back_leaves_no_empty_group_for_the_bound_to_pop(monkeypatch):
    """Issue 46 item 1, the sequence that ended a folder run with exit 70: a kept buffer taken
    by the next call left an empty group in the kept table, and the byte bound then popped
    from it (IndexError) once large results pushed the total over KEPT_BYTES (here 24 MB,
    so that 6 MB results do it; the run's were 6000x6000 photos against 1 GB)."""
    buffers.release()
    monkeypatch.setattr(buffers, "KEPT_BYTES", 24 << 20)
    try:
        p = imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 1.0}])
        a = np.zeros((1000, 1000, 3), np.uint8)
        r = p(a)
        del r
        h = p(a)
        for i in range(6):
            p(np.zeros((1400 + 8 * i, 1500, 3), np.uint8))  # each result dropped at once
            assert all(buffers.kept().values()) and buffers.kept_bytes() <= buffers.KEPT_BYTES
        del h
        assert all(n > 0 for n in buffers.kept().values())
    finally:
        buffers.release()


def test_the_bound_skips_an_empty_group(monkeypatch):
    buffers.release()
    try:
        monkeypatch.setattr(buffers, "KEPT_BYTES", 3 << 20)
        small = jax.device_put(np.zeros((1 << 20,), np.uint8))
        with buffers._lock:
            buffers._kept[buffers._key((5,), np.uint8)] = []  # as an older version left behind
        for _ in range(4):
            buffers._put(jax.device_put(np.zeros((1 << 20,), np.uint8)))
        assert buffers.kept_bytes() <= 3 << 20 and all(buffers.kept().values())
        del small
    finally:
        buffers.release()


# (layout, shape, dtype, bytes past the boundary, op, size, mode): images of at least
# MIN_BYTES, the first in a kept output buffer
MORPHOLOGY_READ_IN_PLACE = [("HWC", (301, 1200, 3), np.uint8, 16, "erosion", 5, "nearest"),
                            ("NHWC", (2, 160, 1200, 3), np.uint8, 48, "opening", (3, 8), "reflect"),
                            ("HW", (700, 800), np.uint16, 2, "morphological_gradient", 4, "constant"),
                            ("CHW", (3, 301, 1200), np.uint8, 16, "dilation", 5, "wrap"),
                            ("HWC", (150, 700, 3), np.float32, 32, "black_tophat", (5, 2), "mirror")]


@IN_PLACE
@pytest.mark.parametrize("layout, shape, dtype, skew, op, size, mode", MORPHOLOGY_READ_IN_PLACE)
def test_morphology_reads_misaligned_input_in_place(layout, shape, dtype, skew, op, size, mode, monkeypatch):
    """The grey morphology program takes the flat view itself: its first pass's slices
    come from the view (given the image sliced out of it, XLA copied the image first);
    the pixels are scipy's in every layout, the caller's array is never written."""
    from imgproc.filters import morphology

    clean = random_image(np.random.default_rng(skew), shape, dtype)
    source = misaligned(clean, skew)
    before = source.copy()
    views = recorded_views(monkeypatch, morphology)
    out = getattr(imgproc, op)(source, size=size, mode=mode, cval=3.0, layout=layout)
    assert (skew // clean.itemsize, shape) in views
    sizes = np.ones(clean.ndim, int)
    sizes[[layout.index("H"), layout.index("W")]] = (size, size) if isinstance(size, int) else size
    reference = getattr(ndi, op if op in ("morphological_gradient", "black_tophat") else "grey_" + op)
    np.testing.assert_array_equal(out, reference(clean, size=tuple(sizes), mode=mode, cval=3.0))
    np.testing.assert_array_equal(source, before)
