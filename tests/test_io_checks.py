import numpy as np
import pytest

import imgproc
from imgproc._checks import check_finite
from imgproc._execution import run_in_chunks


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

    from imgproc._checks import HOST_ALIGNMENT, host_aligned

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
    import imgproc.host_memory

    monkeypatch.setattr(imgproc.host_memory, "reuse_host_memory", lambda: calls.append(1) or True)
    monkeypatch.setattr(sys, "argv", ["imgproc", "info"])
    with pytest.raises(SystemExit) as exit:
        cli.main()  # the console script's target: imgproc = "imgproc.cli:main"
    assert exit.value.code == 0 and "backend " in capsys.readouterr().out
    assert calls == [1]
