import json

import jax
import numpy as np
import pytest
import scipy.ndimage as ndi

import imgproc
from imgproc import kernels, presets


def test_spec_round_trip_is_json():
    spec = [
        {"op": "gaussian_blur", "sigma": 1.5, "mode": "mirror"},
        {"op": "sharpen", "size": 3},
        {"op": "correlate", "kernel": [[0, 1, 0], [1, -4, 1], [0, 1, 0]]},
    ]
    pipe = imgproc.Pipeline.from_spec(json.dumps(spec))
    assert pipe.to_spec() == spec
    assert json.loads(pipe.to_json()) == spec
    again = imgproc.Pipeline.from_spec(pipe.to_spec())
    x = np.random.default_rng(0).random((10, 12, 3), dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(pipe(x)), np.asarray(again(x)))


def test_stages_from_functions_and_pairs():
    pipe = imgproc.Pipeline([(imgproc.gaussian_blur, {"sigma": 2.0}), imgproc.emboss, "edges"])
    assert [s["op"] for s in pipe.to_spec()] == ["gaussian_blur", "emboss", "edges"]


def test_pipeline_equals_float64_chain_and_rounds_once():
    x = np.random.default_rng(1).integers(0, 256, (16, 18, 3)).astype(np.uint8)
    pipe = presets.denoise()
    got = np.asarray(pipe(x))
    assert got.dtype == np.uint8
    xf = x.astype(np.float64)
    ref = np.stack(
        [
            ndi.correlate(ndi.gaussian_filter(xf[..., c], 1.0, truncate=2.0), kernels.sharpen().astype(float))
            for c in range(3)
        ],
        -1,
    )
    ref = np.clip(np.round(ref), 0, 255)
    assert np.abs(got.astype(int) - ref).max() <= 1


@pytest.mark.parametrize("mode", ["reflect", "mirror", "nearest", "wrap", "constant"])
def test_three_linear_stages_equal_the_float64_chain(mode):
    # stages before the last write their borders in place, the last with a select
    x = np.random.default_rng(2).random((2, 19, 23, 3), dtype=np.float32)
    pipe = imgproc.Pipeline([
        {"op": "gaussian_blur", "sigma": 1.0, "mode": mode, "cval": 0.5},
        {"op": "sharpen", "mode": mode, "cval": 0.5},
        {"op": "box_blur", "size": 3, "mode": mode, "cval": 0.5},
    ])
    ref = x.astype(np.float64)
    spatial = lambda f: np.stack([np.stack([f(im[..., c]) for c in range(3)], -1) for im in ref])  # noqa: E731
    ref = spatial(lambda p: ndi.gaussian_filter(p, 1.0, mode=mode, cval=0.5))
    ref = np.stack([np.stack([ndi.correlate(im[..., c], kernels.sharpen().astype(float), mode=mode, cval=0.5)
                              for c in range(3)], -1) for im in ref])
    ref = np.stack([np.stack([ndi.uniform_filter(im[..., c], 3, mode=mode, cval=0.5)
                              for c in range(3)], -1) for im in ref])
    np.testing.assert_allclose(np.asarray(pipe(x)), ref, rtol=0, atol=2e-5)


def test_second_call_does_not_recompile():
    pipe = presets.denoise()
    x = np.zeros((20, 24, 3), np.uint8)
    pipe(x)
    pipe(x + 1)
    assert pipe.trace_count == 1
    with jax.log_compiles(True):
        pass
    pipe(np.zeros((20, 24, 3), np.float32))  # new dtype: one more
    assert pipe.trace_count == 2


def test_a_pipeline_built_again_runs_the_programs_of_an_equal_one(compilations):
    """A pipeline built per call (in a loop, in a function) compiled again each time:
    0.6 s a call on a 300x400 photo instead of 5 ms. Equal pipelines (same ops, options,
    layout and buckets) now share their programs; others keep their own."""
    spec = [{"op": "gaussian_blur", "sigma": 1.5}, {"op": "random_rotate", "max_degrees": 20}]
    x = np.random.default_rng(0).integers(0, 256, (2, 12, 14, 3), dtype=np.uint8)
    want = imgproc.Pipeline(spec)(x, key=3)
    with compilations() as again:
        for _ in range(3):
            np.testing.assert_array_equal(imgproc.Pipeline(json.loads(json.dumps(spec)))(x, key=3), want)
        np.testing.assert_array_equal(imgproc.Pipeline.from_spec(json.dumps(spec))(x, key=3), want)
    assert again == [] and imgproc.Pipeline(spec).trace_count == 1
    for other in ([{**spec[0], "sigma": 1.0}, spec[1]],  # another option
                  [{**spec[0], "sigma": 1}, spec[1]],  # an int traces other constants than a float
                  spec[::-1]):  # another order
        assert imgproc.Pipeline(other).trace_count == 0
    assert imgproc.Pipeline(spec, layout="NHWC").trace_count == 0
    imgproc.Pipeline(spec[:1])(x)  # buckets apply to local stages only
    assert imgproc.Pipeline(spec[:1], bucket=True).trace_count == 0 < imgproc.Pipeline(spec[:1]).trace_count
    # an option that is an array keeps its own programs (it may be per image)
    kernel = np.ones((3, 3), np.float32) / 9
    first = imgproc.Pipeline([{"op": "correlate", "kernel": kernel}])
    first(x)
    assert imgproc.Pipeline([{"op": "correlate", "kernel": kernel}]).trace_count == 0 < first.trace_count
    # a recipe got again: its augmentation and its normalize + mix programs both
    recipe = imgproc.recipes.get("imagenet_train", size=16)
    labels = np.arange(2)
    want = recipe(x, labels, key=1, num_classes=4)
    with compilations() as again:
        got = imgproc.recipes.get("imagenet_train", size=16)(x, labels, key=1, num_classes=4)
    assert again == []
    np.testing.assert_array_equal(got["images"], want["images"])
    np.testing.assert_array_equal(got["labels"], want["labels"])


def test_layouts_and_batches():
    x = np.random.default_rng(2).random((2, 3, 10, 11), dtype=np.float32)  # NCHW
    pipe = imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 1.0}], layout="NCHW")
    got = np.asarray(pipe(x))
    ref = ndi.gaussian_filter(x.astype(np.float64), (0, 0, 1.0, 1.0))
    np.testing.assert_allclose(got, ref, atol=1e-5)
    nhwc = np.moveaxis(x, 1, -1)
    np.testing.assert_allclose(np.asarray(imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 1.0}])(nhwc)), np.moveaxis(ref, 1, -1), atol=1e-5)


@pytest.mark.parametrize(
    "spec, match",
    [
        ([{"op": "nope"}], "unknown op 'nope'; known ops: .*gaussian_blur"),
        ([{"sigma": 1}], "needs an 'op' key"),
        ({"op": "sharpen"}, "JSON list"),
    ],
)
def test_bad_specs(spec, match):
    with pytest.raises(ValueError, match=match):
        imgproc.Pipeline.from_spec(spec)


def test_bad_options_raise_before_running():
    with pytest.raises(ValueError, match=r"sigma must be a finite number in \[0, inf\)"):
        imgproc.Pipeline([{"op": "gaussian_blur", "sigma": -2}])
    with pytest.raises(ValueError, match="mode must be one of reflect"):
        imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 1.0, "mode": "edge"}])
    with pytest.raises(ValueError, match="method must be one of auto, separable, direct, conv, convolve2d, fft"):
        imgproc.Pipeline([{"op": "correlate", "kernel": [[1.0]], "method": "fft2"}])
    # every op's named choices: test_architecture.py, test_a_bad_choice_is_refused_when_the_stage_is_built
    spec = [{"op": "gaussian_blur", "sigma": 1.0, "mode": "grid-mirror", "method": "fft"}]
    assert imgproc.Pipeline(spec).to_spec() == spec  # checked, kept as written
    with pytest.raises(ValueError, match="layout must be one of"):
        imgproc.Pipeline([], layout="XYZ")


def test_denoise_improves_psnr_on_the_sample(samples):
    clean = imgproc.load_image(samples / "chelsea.jpg")
    noisy = imgproc.load_image(samples / "chelsea_noisy.jpg")
    restored = np.asarray(presets.denoise()(noisy))
    assert imgproc.psnr(clean, restored) > imgproc.psnr(clean, noisy) + 3


def test_size_buckets_compile_once_per_bucket_and_match_exactly():
    from imgproc.pipeline.execution import bucket_size

    rng = np.random.default_rng(5)
    sizes = [(int(h), int(w)) for h, w in rng.integers(90, 124, (50, 2))]
    exact = presets.denoise()
    bucketed = presets.denoise(bucket=True)
    for h, w in sizes[:6]:
        x = rng.integers(0, 256, (h, w, 3)).astype(np.uint8)
        np.testing.assert_array_equal(bucketed(x), np.asarray(exact(x)))
    for h, w in sizes[6:]:
        bucketed(np.zeros((h, w, 3), np.uint8))
    buckets = {(bucket_size(h + 4), bucket_size(w + 4)) for h, w in sizes}
    # one program per canvas: an image runs in a canvas met before that holds its bucket
    # with at most twice its pixels
    (canvases,) = bucketed._programs.canvases._met.values()
    assert bucketed.trace_count == len(canvases) < len(buckets) < len(sizes)
    for h, w in sizes:
        own = bucket_size(h + 4) * bucket_size(w + 4)
        assert any(ch >= bucket_size(h + 4) and cw >= bucket_size(w + 4) and ch * cw <= 2 * own
                   for _, ch, cw in canvases)


def test_auto_buckets_run_the_first_two_sizes_exactly(monkeypatch):
    """``bucket="auto"`` (the command line's): the first two sizes met get their own
    exact-size programs; a later size runs in a canvas (one met before that holds it,
    else its bucket's) until 16 images of it have come, then in its own program; the
    pixels are the exact pipeline's either way."""
    from imgproc.pipeline.execution import bucket_size

    bucketed_sizes = []
    run_in_bucket = imgproc.Pipeline._bucketed
    monkeypatch.setattr(imgproc.Pipeline, "_bucketed",
                        lambda self, x, layout: bucketed_sizes.append(x.shape[1:3]) or run_in_bucket(self, x, layout))
    rng = np.random.default_rng(7)
    exact = presets.denoise()
    auto = presets.denoise(bucket="auto")
    first, second, third, elsewhere = (100, 120), (101, 121), (102, 119), (300, 120)
    assert len({(bucket_size(h + 4), bucket_size(w + 4)) for h, w in (first, second, third)}) == 1
    assert bucket_size(elsewhere[0] + 4) != bucket_size(first[0] + 4)
    traces = []
    for h, w in [first, first, second, third, first, elsewhere, second]:
        x = rng.integers(0, 256, (2, h, w, 3), dtype=np.uint8)
        np.testing.assert_array_equal(auto(x), np.asarray(exact(x)))
        traces.append(auto.trace_count)
    # first and second: exact; third: a canvas; elsewhere: a canvas of its own (more
    # than twice the pixels of third's); second again: its exact program
    assert traces == [1, 1, 2, 3, 3, 4, 4]
    assert bucketed_sizes == [third, elsewhere]
    # the same sizes again, as a second epoch or a folder run twice: nothing new
    for h, w in [third, elsewhere, first, second]:
        auto(rng.integers(0, 256, (2, h, w, 3), dtype=np.uint8))
    assert auto.trace_count == 4
    # third has come in 4 images; 12 more stay in the canvas, the next gets its program
    for _ in range(6):
        auto(rng.integers(0, 256, (2, *third, 3), dtype=np.uint8))
    assert auto.trace_count == 4
    x = rng.integers(0, 256, (2, *third, 3), dtype=np.uint8)
    np.testing.assert_array_equal(auto(x), np.asarray(exact(x)))
    assert auto.trace_count == 5 and bucketed_sizes == [third, elsewhere] + [third, elsewhere] + [third] * 6
    # counted in images, whatever the batches: a batch of one of a size met in pairs
    auto(rng.integers(0, 256, (1, *elsewhere, 3), dtype=np.uint8))  # a new batch shape: its canvas
    assert auto.trace_count == 6 and bucketed_sizes[-1] == elsewhere
    for bad in ("yes", 2, None):
        with pytest.raises(ValueError, match=r"bucket must be one of False, True, 'auto'"):
            imgproc.Pipeline([{"op": "sharpen"}], bucket=bad)


def test_the_command_builds_auto_bucketed_pipelines():
    from imgproc.cli._denoise import build

    for method in ("chapter", "median", "auto", "nl-means", "bilateral"):  # the noise estimates have canvas forms
        assert build(method).bucket == "auto", method
    for method in ("bm3d", "tv"):  # their block grid, their iterations: exact sizes
        assert build(method).bucket is False, method


@pytest.mark.parametrize("mode", imgproc.MODES)
def test_size_buckets_exact_in_every_mode(mode):
    rng = np.random.default_rng(6)
    spec = [{"op": "emboss", "mode": mode, "cval": 0.3}, {"op": "gaussian_blur", "sigma": 1.5, "mode": mode},
            {"op": "correlate", "kernel": [[1, 2, 0], [0, 0, -1.5]], "mode": mode}]
    for shape in [(1, 1, 3), (3, 17, 1), (23, 9, 2)]:
        x = rng.random(shape, dtype=np.float32)
        np.testing.assert_allclose(imgproc.Pipeline(spec, bucket=True)(x), np.asarray(imgproc.Pipeline(spec)(x)), atol=1e-6)


CACHE_PROBE = """
import jax, numpy as np
from imgproc import presets
from imgproc.core.program_cache import enable_compilation_cache
hits = []
jax.monitoring.register_event_listener(lambda name, **kw: hits.append(name))
enable_compilation_cache()
presets.denoise(bucket=True)(np.zeros((33, 35, 3), np.uint8))
print("hit" if "/jax/compilation_cache/cache_hits" in hits else "miss")
"""


def test_persistent_compilation_cache_is_private_and_hit(tmp_path):
    """Two processes, as two runs of the command: the second loads the compiled program
    from the private cache folder in the user's cache home."""
    import os
    import subprocess
    import sys

    from subprocesses import python_env

    env = python_env(XDG_CACHE_HOME=str(tmp_path))  # this interpreter, importing imgproc as this process did
    env.pop("IMGPROC_CACHE_DIR", None)
    runs = [subprocess.run([sys.executable, "-c", CACHE_PROBE], env=env, capture_output=True, text=True) for _ in range(2)]
    assert [r.stdout.strip() for r in runs] == ["miss", "hit"], [r.stderr[-500:] for r in runs]
    folder = tmp_path / "imgproc" / "jax"
    assert any(folder.iterdir())
    assert (folder.stat().st_mode & 0o777) == 0o700


def test_nan_and_out_of_range_host_input_is_refused():
    bad = np.ones((6, 6, 3), np.float32)
    bad[2, 3, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinity \(first at index \(2, 3, 1\)\)"):
        presets.denoise()(bad)
    with pytest.raises(ValueError, match="NaN or infinity"):
        imgproc.gaussian_blur(bad, 1.0)
    with pytest.raises(ValueError, match="beyond the allowed"):
        imgproc.box_blur(np.full((4, 4), 3e7, np.float32), 3)


def test_large_host_batches_run_in_chunks(monkeypatch):
    import imgproc.pipeline.execution as execution

    x = np.random.default_rng(3).integers(0, 256, (7, 10, 12, 3)).astype(np.uint8)
    pipe = presets.denoise()
    whole = np.asarray(pipe(x))
    monkeypatch.setattr(execution, "chunk_size", lambda shape, **kw: 3)
    chunked = pipe(x)
    np.testing.assert_array_equal(chunked, whole)
    assert pipe.trace_count == 3  # batch of 7, then chunks of 3 and 1


def test_a_pipeline_pickles_as_its_spec():
    import pickle

    pipe = imgproc.Pipeline([{"op": "correlate", "kernel": [[0, 1, 0], [1, -4, 1], [0, 1, 0]]},
                             {"op": "random_choice", "ops": [{"op": "random_hue"}, {"op": "flip_up_down"}]}],
                            layout="NHWC")
    x = np.random.default_rng(4).random((3, 9, 10, 3), dtype=np.float32)
    key = jax.random.key(2)
    want = np.asarray(pipe(x, key=key))
    again = pickle.loads(pickle.dumps(pipe))
    assert again.to_spec() == pipe.to_spec() and again.layout == "NHWC"
    np.testing.assert_array_equal(np.asarray(again(x, key=key)), want)
    assert again.trace_count == pipe.trace_count == 1  # in this process, it runs pipe's program


def test_indices_are_one_integer_per_image():
    """A float index was truncated and a 64-bit one wrapped into another image's draw; a
    wrong count gave JAX's scan error (found by a review)."""
    x = np.random.default_rng(0).integers(0, 256, (4, 8, 8, 3)).astype(np.uint8)
    pipe = imgproc.Pipeline([{"op": "random_brightness"}])
    for bad, said in [(2, "shape \\(\\)"), ([0, 1], "shape \\(2,\\)"), ([0.5, 1.7, 2.2, 3.9], "float64 values"),
                      (np.array([0, 1, 2, 2 ** 32]), "values 0..4294967296"), ([-1, 0, 1, 2], "values -1..2")]:
        with pytest.raises(ValueError, match=r"indices must hold one integer per image \(4\) in \[0, 2\*\*31\); got " + said):
            pipe(x, key=0, indices=bad)
    np.testing.assert_array_equal(np.asarray(pipe(x, key=0, indices=np.arange(4, 8, dtype=np.int64))),
                                  np.asarray(pipe(x, key=0, indices=[4, 5, 6, 7])))
    np.testing.assert_array_equal(np.asarray(pipe(x[0], key=0, indices=5)), np.asarray(pipe(x[0], key=0, indices=[5])))
