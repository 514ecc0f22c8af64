import numpy as np
import pytest

import imgproc
from imgproc._checks import check_finite, run_in_chunks


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
    chunked = run_in_chunks(pipe, batch, max_bytes=8 * 9 * 3 * 4 * 4 * 2)  # two images a chunk
    np.testing.assert_array_equal(np.asarray(chunked), np.asarray(whole))
