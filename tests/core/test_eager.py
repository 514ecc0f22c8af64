"""imgproc.core.eager: a deterministic op called eagerly runs as one compiled program with its
numbers as program arguments. One table of calls: each equals the op traced inside the
caller's jit, a new number does not compile again (or, for a number the op needs while
tracing, falls back to compiling it in), bad numbers still raise after good ones, and array
options run op by op."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import imgproc
from imgproc import augment as A
from imgproc.core import eager as _eager

X = np.random.default_rng(0).integers(0, 256, (3, 20, 24, 3), dtype=np.uint8)

# (name, call with a number, the same call with another number, whether that one compiles:
# floats are program arguments, ints are compiled in)
CALLS = [
    ("adjust_hue", lambda x, v: A.adjust_hue(x, v), (0.1, -0.2), False),
    ("adjust_gamma", lambda x, v: A.adjust_gamma(x, v, gain=0.9), (1.2, 0.7), False),
    ("rotate", lambda x, v: A.rotate(x, v, mode="reflect"), (10.0, -33.0), False),
    ("posterize", lambda x, v: A.posterize(x, v), (3, 6), True),
    ("affine", lambda x, v: A.affine(x, angle=v, translate=(1.5, -2.0), scale=1.1), (5.0, 20.0), False),
    ("adjust_sharpness", lambda x, v: A.adjust_sharpness(x, v), (1.5, 0.2), False),
    ("clahe", lambda x, v: A.clahe(x, clip_limit=v, tiles=(2, 3)), (2.0, 4.0), False),
    ("solarize", lambda x, v: A.solarize(x, v), (100.0, 200.0), False),
    ("equalize", lambda x, v: A.equalize(x), (None, None), False),
]


@pytest.fixture(autouse=True)
def fresh_programs():
    for cache in (_eager.PROGRAMS, _eager.LEVELS, _eager.CHECKED):
        cache.clear()


@pytest.mark.parametrize("name, call, values, compiles", CALLS, ids=[c[0] for c in CALLS])
def test_eager_is_the_jitted_op_and_new_floats_do_not_compile(name, call, values, compiles, compilations):
    first, second = values
    # the caller's jit with the number traced too (one compiled in may fold into other
    # constants, and a .5 tie then rounds the other way); ints are static, as in the eager call
    jitted = jax.jit(call, static_argnums=1 if isinstance(first, int) else ())
    eager = np.asarray(call(X, first))
    np.testing.assert_array_equal(eager, np.asarray(jitted(X, first)))
    # one image: its own program, fused differently (a .5 tie may round the other way)
    assert np.abs(np.asarray(call(X[0], first)).astype(int) - eager[0]).max() <= 1
    with compilations() as compiled:
        again = np.asarray(call(X, second))
    np.testing.assert_array_equal(again, np.asarray(jitted(X, second)))
    fn = getattr(A, name).__wrapped__.__wrapped__  # below callers_type and compiled_when_eager
    assert {v for k, v in _eager.LEVELS._programs.items() if k[0] is fn} == {"floats"}
    if not compiles and first is not None:
        assert compiled == []  # the float is an argument of the program compiled for the first


@pytest.mark.parametrize("name, value, max_value", [
    ("posterize", 3, 255), ("adjust_sharpness", 1.7, 255), ("adjust_sharpness", 1.7, 255.0),
])
def test_max_value_picks_the_definition_as_in_the_callers_jit(name, value, max_value):
    """``max_value`` is compiled in whatever its type: traced, ``integer_bits`` would take
    the float definition (557 of 1,440 posterized values differed when it was an argument)."""
    op = getattr(A, name)
    static = jax.jit(lambda x: op(x, value, max_value=max_value))  # max_value a Python number
    np.testing.assert_array_equal(np.asarray(op(X, value, max_value=max_value)), np.asarray(static(X)))


def test_random_ops_with_an_integer_max_value_equal_their_jit():
    call = lambda k, x: A.random_posterize(k, x, bits=3, p=1.0, max_value=255)  # noqa: E731
    key = jax.random.key(3)
    np.testing.assert_array_equal(np.asarray(call(key, X)), np.asarray(jax.jit(call)(key, X)))


def test_numpy_images_are_still_checked():
    bad = X.astype(np.float32)
    bad[0, 1, 2, 0] = np.nan
    for call in (lambda x: A.rotate(x, 10.0), lambda x: A.adjust_hue(x, 0.1)):
        with pytest.raises(ValueError, match="NaN"):
            call(bad)


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


@pytest.mark.cpu_only("JAX's CPU client reads an aligned NumPy argument in place")
def test_an_aligned_numpy_image_goes_to_the_program_as_it_is(monkeypatch):
    # jnp.asarray would copy it (2 ms for a 12 MB image, every call); passed as it is, the
    # program reads it in place (benchmarks/NOTES.md, "Otsu's histogram, and the threshold op")
    from imgproc.core.images import host_aligned

    image = host_aligned(np.random.default_rng(4).integers(0, 256, (600, 700, 3), dtype=np.uint8))
    given = []
    run = _eager.run_compiled
    monkeypatch.setattr(_eager, "run_compiled", lambda op, fn, arrays, options: given.append(arrays) or
                        run(op, fn, arrays, options))
    before = image.copy()
    for call in (lambda x: A.invert(x), lambda x: A.adjust_gamma(x, 0.8), lambda x: imgproc.threshold(x)):
        out = call(image)
        assert given[-1][0] is image
        assert not np.may_share_memory(out, image)
        np.testing.assert_array_equal(out, np.asarray(call(jnp.asarray(image))))
    np.testing.assert_array_equal(image, before)
    assert not np.may_share_memory(A.adjust_gamma(image, 1.0), image)  # an identity is a copy


@pytest.mark.parametrize("skew", [16, 48])
def test_a_misaligned_numpy_image_goes_to_the_program_as_its_aligned_flat_view(skew, monkeypatch):
    # NumPy's and PIL's arrays often start 16-48 bytes past a 64-byte boundary, where JAX
    # copies them (1.4 ms for a 12 MB image): the program reads the flat view from the
    # boundary before (imgproc.cpu.from_flat), and gives the same values, the image untouched
    from imgproc.cpu.output_buffers import aligned_empty

    buffer = aligned_empty((600 * 700 * 3 + 64,), np.uint8)
    image = buffer[skew:skew + 600 * 700 * 3].reshape(600, 700, 3)
    image[...] = np.random.default_rng(5).integers(0, 256, image.shape, dtype=np.uint8)
    image.flags.writeable = False  # as np.asarray(PIL image) gives it
    given = []
    run = _eager.run_compiled
    monkeypatch.setattr(_eager, "run_compiled", lambda op, fn, arrays, options: given.append((arrays, options)) or
                        run(op, fn, arrays, options))
    before = image.copy()
    for call in (lambda x: A.invert(x), lambda x: A.adjust_gamma(x, 0.8), lambda x: imgproc.threshold(x, value=90),
                 lambda x: A.adjust_sharpness(x, 0.5), lambda x: imgproc.rgb_to_lab(x)):
        out = call(image)
        (flat,), options = given[-1]
        assert flat.ndim == 1 and flat.ctypes.data % 64 == 0 and np.shares_memory(flat, image)
        assert options["view"] == (skew, image.shape)
        np.testing.assert_array_equal(out, np.asarray(call(jnp.asarray(image))))
    np.testing.assert_array_equal(image, before)
