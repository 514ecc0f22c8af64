"""imgproc._eager: a deterministic op called eagerly runs as one compiled program with its
numbers as program arguments. One table of calls: each equals the op traced inside the
caller's jit, a new number does not compile again (or, for a number the op needs while
tracing, falls back to compiling it in), bad numbers still raise after good ones, and array
options run op by op."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import imgproc
from imgproc import _eager
from imgproc import augment as A

X = np.random.default_rng(0).integers(0, 256, (3, 20, 24, 3), dtype=np.uint8)

# (name, call with a number, the same call with another number, the level it traces at)
CALLS = [
    ("adjust_hue", lambda x, v: A.adjust_hue(x, v), (0.1, -0.2), "numbers"),
    ("adjust_gamma", lambda x, v: A.adjust_gamma(x, v, gain=0.9), (1.2, 0.7), "numbers"),
    ("rotate", lambda x, v: A.rotate(x, v, mode="reflect"), (10.0, -33.0), "numbers"),
    ("translate", lambda x, v: A.translate(x, v, 2), (3, -4), "numbers"),
    ("posterize", lambda x, v: A.posterize(x, v), (3, 6), "numbers"),
    ("affine", lambda x, v: A.affine(x, angle=v, translate=(1.5, -2.0), scale=1.1), (5.0, 20.0), "numbers"),
    ("adjust_sharpness", lambda x, v: A.adjust_sharpness(x, v), (1.5, 0.2), "numbers"),
    ("clahe", lambda x, v: A.clahe(x, clip_limit=v, tiles=(2, 3)), (2.0, 4.0), "floats"),  # tiles: shapes
    ("pad", lambda x, v: A.pad(x, v), (2, 5), "floats"),  # the padding is a shape (and no float to trace)
    ("resize", lambda x, v: A.resize(x, (v, 2 * v)), (9, 13), "floats"),
    ("equalize", lambda x, v: A.equalize(x), (None, None), "numbers"),
]


@pytest.fixture(autouse=True)
def fresh_programs():
    for cache in (_eager.PROGRAMS, _eager.LEVELS, _eager.CHECKED):
        cache.clear()


@pytest.mark.parametrize("name, call, values, level", CALLS, ids=[c[0] for c in CALLS])
def test_eager_is_the_jitted_op_and_new_numbers_do_not_compile(name, call, values, level, compilations):
    first, second = values
    # the caller's jit with the number traced too (one compiled in may fold into other
    # constants, and a .5 tie then rounds the other way); a shape must be static
    jitted = jax.jit(call, static_argnums=1 if name in ("pad", "resize") else ())
    eager = np.asarray(call(X, first))
    np.testing.assert_array_equal(eager, np.asarray(jitted(X, first)))
    # one image: its own program, fused differently (a .5 tie may round the other way)
    assert np.abs(np.asarray(call(X[0], first)).astype(int) - eager[0]).max() <= 1
    with compilations() as compiled:
        again = np.asarray(call(X, second))
    np.testing.assert_array_equal(again, np.asarray(jitted(X, second)))
    fn = getattr(A, name).__wrapped__.__wrapped__  # below callers_type and compiled_when_eager
    assert {v for k, v in _eager.LEVELS._programs.items() if k[0] is fn} == {level}
    if name not in ("pad", "resize") and first is not None:
        assert compiled == []  # the number is an argument of the program compiled for the first


@pytest.mark.parametrize("call, bad, message", [
    (lambda x, v: A.rotate(x, v), float("nan"), "angle"),
    (lambda x, v: A.adjust_gamma(x, v), -1.0, "gamma"),
    (lambda x, v: A.posterize(x, v), 9, "bits"),
    (lambda x, v: A.clahe(x, clip_limit=v), float("inf"), "clip_limit"),
])
def test_bad_numbers_raise_after_good_ones(call, bad, message):
    call(X, 1)  # compiled with the number as an argument, which skips the op's own checks
    with pytest.raises(ValueError, match=message):
        call(X, bad)  # so they run on the value first


def test_array_options_run_op_by_op():
    by_value = np.asarray(A.adjust_brightness(X, 0.1))
    programs = len(_eager.PROGRAMS)
    np.testing.assert_array_equal(np.asarray(A.adjust_brightness(X, jnp.float32(0.1))), by_value)
    assert len(_eager.PROGRAMS) == programs


def test_results_keep_the_callers_type_and_inputs_are_untouched():
    before = X.copy()
    out = A.rotate(X, 12.0)
    assert isinstance(out, np.ndarray) and out.dtype == np.uint8
    assert isinstance(A.rotate(jnp.asarray(X), 12.0), jax.Array)
    np.testing.assert_array_equal(X, before)
    assert isinstance(imgproc.rotate(X[0].astype(np.float32), 3.0), np.ndarray)
