import numpy as np
import pytest

import imgproc
from imgproc.core.images import check_finite
from imgproc.pipeline.execution import run_in_chunks


@pytest.mark.parametrize("bad, match", [(np.nan, "NaN or infinity"), (np.inf, "NaN or infinity"), (1e9, "beyond the allowed")])
def test_check_finite(bad, match):
    x = np.zeros((3, 4), np.float32)
    x[1, 2] = bad
    with pytest.raises(ValueError, match=match):
        check_finite(x)
    check_finite(np.full((3, 4), 255, np.uint8))


def test_run_in_chunks_equals_one_call():
    pipe = imgproc.presets.denoise()
    batch = np.random.default_rng(0).integers(0, 256, (5, 8, 9, 3)).astype(np.uint8)
    whole = pipe(batch)
    chunked = run_in_chunks(pipe._call, batch, max_bytes=8 * 9 * 3 * 4 * 4 * 2)  # two images a chunk
    np.testing.assert_array_equal(np.asarray(chunked), np.asarray(whole))


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "float32"])
def test_host_aligned_copies_misaligned_arrays_only(dtype):
    """NumPy input is handed to JAX 64-byte aligned (read in place on CPU); the caller's
    array is never modified, and the pipeline's result is the same either way."""
    import jax

    from imgproc.core.images import HOST_ALIGNMENT, host_aligned

    raw = np.random.default_rng(0).integers(0, 200, 100 * 64 * 64 * 3 + 1).astype(dtype)
    misaligned = raw[1:].reshape(100, 64, 64, 3)  # offset by one element
    before = misaligned.copy()
    out = host_aligned(misaligned)
    np.testing.assert_array_equal(out, before)
    np.testing.assert_array_equal(misaligned, before)
    if jax.default_backend() == "cpu":
        assert out.ctypes.data % HOST_ALIGNMENT == 0 and out.flags.c_contiguous
        assert host_aligned(out) is out  # already aligned: no copy
    small = misaligned[:1, :4]
    assert host_aligned(small) is small  # below 1 MiB: left to JAX
    pipe = imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 1.0}])
    np.testing.assert_array_equal(np.asarray(pipe(misaligned)), np.asarray(pipe(before)))
    np.testing.assert_array_equal(misaligned, before)


def test_reuse_host_memory_applies_on_glibc_and_the_entry_point_calls_it(monkeypatch, capsys):
    import platform
    import sys

    import imgproc
    import imgproc.cli as cli

    applied = imgproc.reuse_host_memory()
    assert applied is (platform.system() == "Linux" and platform.libc_ver()[0] == "glibc")
    calls = []
    import imgproc.cpu.host_memory

    monkeypatch.setattr(imgproc.cpu.host_memory, "reuse_host_memory", lambda: calls.append(1) or True)
    monkeypatch.setattr(sys, "argv", ["imgproc", "info"])
    with pytest.raises(SystemExit) as exit:
        cli.main()  # the console script's target: imgproc = "imgproc.cli:main"
    assert exit.value.code == 0 and "backend " in capsys.readouterr().out
    assert calls == [1]


def _at_offset(shape, dtype, offset):
    """A C-contiguous array whose data starts ``offset`` bytes after a 64-byte boundary."""
    raw = np.zeros(int(np.prod(shape)) * np.dtype(dtype).itemsize + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    return raw[start:start + int(np.prod(shape)) * np.dtype(dtype).itemsize].view(dtype).reshape(shape)


@pytest.mark.parametrize("offset", [4, 0])  # copied, or already aligned (checked in place)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "uint8"])
@pytest.mark.parametrize("shape", [(700, 800, 3), (1, 1500, 1400, 3)])  # 1.7-25 MB: one thread, then the cores
def test_check_in_the_aligned_copy_equals_check_finite(dtype, shape, offset, backend):
    """host_aligned(check=True) copies and checks in one chunked pass (split between the
    cores for large arrays; an aligned array is only checked): the copy is exact and it
    raises exactly what check_finite raises, at the first bad position, wherever the value
    lies (first and last chunk). Off the CPU nothing is copied (the array comes back
    itself) and the check is the same."""
    import ml_dtypes

    from imgproc.core.images import host_aligned

    dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    x = _at_offset(shape, dt, offset)
    x[...] = np.random.default_rng(1).integers(0, 200, shape).astype(dt)
    before = x.copy()
    out = host_aligned(x, check=True)
    if backend == "cpu":
        assert out.ctypes.data % 64 == 0 and (out is x) == (offset == 0)
    else:
        assert out is x
    np.testing.assert_array_equal(out, before)
    if dtype == "uint8":
        return
    flat = x.reshape(-1)
    for where in (0, flat.size // 2 + 7, flat.size - 1):
        for bad, match in ((np.nan, "NaN or infinity"), (-np.inf, "NaN or infinity"), (3e6, "beyond the allowed")):
            if bad == 3e6 and dtype == "float16":
                continue  # not representable
            flat[where] = bad
            with pytest.raises(ValueError, match=match) as caught:
                host_aligned(x, check=True)
            with pytest.raises(ValueError) as expected:
                check_finite(x)
            assert str(caught.value) == str(expected.value)
            flat[where] = before.reshape(-1)[where]
    np.testing.assert_array_equal(x, before)  # the caller's array is never written


def test_check_in_the_aligned_copy_of_a_strided_array(backend):
    from imgproc.core.images import host_aligned

    base = np.random.default_rng(2).random((1200, 1000, 4), dtype=np.float32)
    view = base[::2, :, :3]  # not contiguous
    out = host_aligned(view, check=True)
    if backend == "cpu":
        assert out.flags.c_contiguous and out.ctypes.data % 64 == 0
    else:  # left to JAX's own transfer
        assert out is view
    np.testing.assert_array_equal(out, view)
    base[10, 3, 1] = np.nan  # a strided view's row 5
    with pytest.raises(ValueError, match=r"first at index \(5, 3, 1\)"):
        host_aligned(view, check=True)


@pytest.mark.cpu_only("NumPy input read in place by XLA:CPU through an aligned flat view (110 s an H200 run "
                      "spent compiling every op twice for a path it does not take)")
@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_every_op_gives_a_misaligned_numpy_image_what_it_gives_a_device_array(dtype, monkeypatch):
    """A pipeline reads a misaligned NumPy image through its aligned flat view (a slice of
    the program's argument): every registered op then gives exactly what it gives the same
    image as a jax.Array. ``adjust_sharpness`` did not: XLA:CPU updated the image's buffer in
    place (``y.at[...].set``) while the blur still read it, up to 0.03 off on float32."""
    import warnings

    import jax
    import jax.numpy as jnp

    from imgproc.cpu import output_buffers
    from imgproc.cpu.output_buffers import aligned_empty
    from op_examples import EXAMPLE_OPTIONS

    monkeypatch.setattr(output_buffers, "MIN_BYTES", 0)  # a small image takes the large one's path

    shape = (40, 52, 3)
    n, size = int(np.prod(shape)), np.dtype(dtype).itemsize
    buffer = aligned_empty((n + 64,), dtype)
    image = buffer[16 // size:16 // size + n].reshape(shape)  # 16 bytes past a boundary, as NumPy's
    image[...] = (np.random.default_rng(0).random(shape) * (255 if dtype == np.uint8 else 1)).astype(dtype)
    assert image.ctypes.data % 64 == 16
    differ, ran = [], 0
    for name in sorted(imgproc.registered_ops()):
        pipe = imgproc.Pipeline([{"op": name, **EXAMPLE_OPTIONS.get(name, {})}])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                want = np.asarray(pipe(jnp.asarray(image), key=jax.random.key(0)))
            except ValueError:  # an op this image cannot take (a uint8-only option, a mask op)
                continue
            got = np.asarray(pipe(image, key=jax.random.key(0)))
        ran += 1
        if got.shape != want.shape or not np.array_equal(got, want):
            differ.append(name)
    assert not differ
    assert ran >= 100
