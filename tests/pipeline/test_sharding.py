"""Batches split over devices (imgproc.core.devices, imgproc.sharding): same values as on one
device, same sharding out as in, no recompilation on the second call, no collective in the
compiled program.

These tests need 4 devices. XLA's device count is fixed when JAX starts, so in an
ordinary pytest process (one CPU device, or a GPU) ``test_in_a_four_device_process`` runs
this file again in its own process with ``--xla_force_host_platform_device_count=4`` on
CPU and fails unless every test there passed (none skipped): CI always runs them.
"""

import contextlib
import logging
import os
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import imgproc
from imgproc import presets
from imgproc.core import devices as _sharded
from imgproc.pipeline import execution
from subprocesses import python_env, run_suite_part

DEVICES = 4
FOUR = jax.device_count() == DEVICES and jax.default_backend() == "cpu"
four_devices = pytest.mark.skipif(not FOUR, reason="runs in its own 4-device process (test_in_a_four_device_process)")
COLLECTIVES = re.compile(r"all-gather|all-reduce|collective-permute|all-to-all|reduce-scatter|collective-broadcast")
KEY = jax.random.key(7)


@pytest.mark.child_process
@pytest.mark.skipif(FOUR, reason="this is the 4-device process itself")
def test_in_a_four_device_process():
    flags = os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={DEVICES}"
    env = python_env(XLA_FLAGS=flags.strip(), JAX_PLATFORMS="cpu")  # imports imgproc as this process did
    run_suite_part(__file__, env, deselect="test_in_a_four_device_process", min_passed=20, timeout=900)


# --------------------------------------------------------------------------- helpers


def _batch(layout="NHWC", dtype=np.uint8, n=8):
    rng = np.random.default_rng(3)
    shape = (n, 16, 12, 3) if layout == "NHWC" else (n, 3, 16, 12)
    if dtype == np.uint8:
        return rng.integers(0, 256, shape).astype(np.uint8)
    return rng.random(shape, dtype=np.float32)


def _mesh(shape=(DEVICES,), names=("batch",)):
    return Mesh(np.array(jax.devices()).reshape(shape), names)


def _same_sharding(out, x):
    assert out.sharding == x.sharding, (out.sharding, x.sharding)


def _no_collective(program, *args):
    text = program.lower(*args).compile().as_text()
    assert "ENTRY" in text  # an HLO module
    found = sorted(set(COLLECTIVES.findall(text)))
    assert not found, f"collectives in the compiled program: {found}"


@contextlib.contextmanager
def _compilations():
    """The XLA compilations that happen inside the block (``jax.log_compiles``)."""
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles(True):
            yield seen
    finally:
        logger.removeHandler(handler)


def _compiled(messages):
    return [m for m in messages if "Compiling" in m or "compilation" in m.lower()]


def _pipeline_program(pipe):
    (program,) = pipe._programs.sharded.values()
    return program


def _random_spec(strategy):
    """Every way a random run executes: a plain run (fused per image when the strategy is
    "map"), random_choice and random_apply with the strategy, then a deterministic stage."""
    return [
        {"op": "random_flip_left_right"},
        {"op": "random_choice", "ops": [{"op": "random_flip_up_down"}, {"op": "random_hue", "max_delta": 0.1}],
         "strategy": strategy, "group_size": 2},
        {"op": "random_apply", "stage": {"op": "gaussian_blur", "sigma": 1.0, "size": 3}, "strategy": strategy,
         "group_size": 2},
        {"op": "random_brightness", "max_delta": 0.2},
        {"op": "sharpen"},
    ]


# --------------------------------------------------------------------------- pipelines


@four_devices
@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_deterministic_pipeline_keeps_the_split(layout, dtype):
    x = _batch(layout, dtype)
    pipe = presets.denoise(layout=layout)
    want = np.asarray(pipe(x))
    xs = imgproc.shard_batch(x)
    assert len(xs.sharding.device_set) == DEVICES
    out = pipe(xs)
    _same_sharding(out, xs)
    np.testing.assert_array_equal(np.asarray(out), want)
    traces = pipe.trace_count
    with _compilations() as seen:
        again = pipe(xs)
    assert pipe.trace_count == traces and not _compiled(seen), seen
    np.testing.assert_array_equal(np.asarray(again), want)
    _no_collective(_pipeline_program(pipe), xs, None, None, None)
    # a spec naming every axis, and size buckets (which run the split batch at its size)
    xs = jax.device_put(x, NamedSharding(_mesh(), P("batch", None, None, None)))
    out = presets.denoise(layout=layout, bucket=True)(xs)
    _same_sharding(out, xs)
    np.testing.assert_array_equal(np.asarray(out), want)


# each strategy once, each layout twice (every pair took 45 of the 4-device process's 80 s;
# the layouts reach the split the same way for every strategy)
@four_devices
@pytest.mark.parametrize("strategy,layout", [("select", "NHWC"), ("map", "NCHW"), ("group", "NCHW"), (None, "NHWC")])
def test_random_pipeline_same_draws_as_one_device(strategy, layout):
    x = _batch(layout)
    spec = _random_spec(strategy)
    if strategy is None:  # the backend default (fused per image on CPU), no choice stage
        spec = [spec[0], spec[3], {"op": "random_rotate", "max_degrees": 15}, spec[4]]
    pipe = imgproc.Pipeline(spec, layout=layout)
    want, want_params = pipe(x, key=KEY, return_params=True)
    xs = imgproc.shard_batch(x)
    out = pipe(xs, key=KEY)
    _same_sharding(out, xs)
    np.testing.assert_array_equal(np.asarray(out), want)
    assert not np.array_equal(want, x)  # really random
    traces = pipe.trace_count
    with _compilations() as seen:
        pipe(xs, key=KEY)
    assert pipe.trace_count == traces and not _compiled(seen), seen
    _no_collective(_pipeline_program(pipe), xs, KEY, None, None)
    # the drawn parameters are the one-device ones too, split the same way, and replay
    out, params = pipe(xs, key=KEY, return_params=True)
    np.testing.assert_array_equal(np.asarray(out), want)
    for got, ref in zip(jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(want_params)):
        assert len(got.sharding.device_set) == DEVICES
        np.testing.assert_array_equal(np.asarray(got), ref)
    np.testing.assert_array_equal(np.asarray(pipe.apply(xs, params)), want)


@four_devices
def test_batches_uploaded_ahead_split_over_the_devices():
    """prefetch_to_device with batch_sharding: every array of an item split as
    shard_batch splits it, and the pipeline keeps the split (no gather to one device)."""
    x, indices = _batch(), np.arange(100, 108)
    pipe = imgproc.Pipeline(_random_spec("select"))
    want = pipe(x, key=KEY, indices=indices)
    sharding = imgproc.sharding.batch_sharding()
    (xs, idx), = list(imgproc.prefetch_to_device([(x, indices)], sharding=sharding))
    assert xs.sharding == imgproc.shard_batch(x).sharding and idx.sharding == sharding
    out = pipe(xs, key=KEY, indices=idx)
    _same_sharding(out, xs)
    np.testing.assert_array_equal(np.asarray(out), want)
    # an array the sharding cannot split is named, in the loop, after the items before it
    items = [(x, indices), (x, np.array(3, np.int32)), (x[:6], indices[:6])]
    got = []
    with pytest.raises(ValueError, match=r"prefetch_to_device cannot put \[1\] \(shape \(\), int32\)"):
        for item in imgproc.prefetch_to_device(items, sharding=sharding):
            got.append(item)
    assert len(got) == 1


@four_devices
def test_given_indices_are_global_record_indices():
    x = _batch()
    pipe = imgproc.Pipeline(_random_spec("select"))
    indices = np.arange(100, 108)
    want = pipe(x, key=KEY, indices=indices)
    out = pipe(imgproc.shard_batch(x), key=KEY, indices=imgproc.shard_batch(indices))
    np.testing.assert_array_equal(np.asarray(out), want)
    np.testing.assert_array_equal(np.asarray(pipe(imgproc.shard_batch(x), key=KEY, indices=indices)), want)
    # image 2 alone, with its index, draws what it drew in the batch
    np.testing.assert_array_equal(pipe(x[2:3], key=KEY, indices=indices[2:3])[0], want[2])


@four_devices
def test_two_dimensional_mesh_split_and_partly_replicated():
    x = _batch()
    pipe = imgproc.Pipeline(_random_spec("map"))
    want = pipe(x, key=KEY)
    mesh = _mesh((2, 2), ("data", "model"))
    for axis in (("data", "model"), "data"):  # over both axes; over one, replicated over the other
        xs = imgproc.shard_batch(x, mesh=mesh, axis=axis)
        out = pipe(xs, key=KEY)
        _same_sharding(out, xs)
        np.testing.assert_array_equal(np.asarray(out), want)


@four_devices
def test_other_multi_device_arrays_are_not_split_into_threads():
    x = _batch(n=32)
    pipe = imgproc.Pipeline(_random_spec("map"))
    want = pipe(x, key=KEY)
    replicated = jax.device_put(x, NamedSharding(_mesh(), P()))
    loops = True  # a fused per-image run: a one-device CPU batch this big is split per core
    assert execution.loop_parts(jnp.asarray(x), loops=loops, batched=True) == min(execution.cpu_cores(), 4)
    assert execution.loop_parts(replicated, loops=loops, batched=True) == 1
    assert _sharded.batch_partition(replicated) is None
    np.testing.assert_array_equal(np.asarray(pipe(replicated, key=KEY)), want)
    # an uneven split is not a device-sharded batch: one jit program, correct values
    spatial = jax.device_put(x, NamedSharding(_mesh(), P(None, "batch")))
    assert _sharded.batch_partition(spatial) is None
    np.testing.assert_array_equal(np.asarray(pipe(spatial, key=KEY)), want)


# --------------------------------------------------------------------------- public ops


OPS = {
    "gaussian_blur": lambda a, layout: imgproc.gaussian_blur(a, 1.5, layout=layout),
    "median": lambda a, layout: imgproc.median(a, size=3, layout=layout),
    "rotate": lambda a, layout: imgproc.rotate(a, 17.0, layout=layout),
    "random_brightness": lambda a, layout: imgproc.random_brightness(KEY, a, max_delta=0.3, layout=layout),
    "random_rotate": lambda a, layout: imgproc.random_rotate(KEY, a, max_degrees=30, layout=layout),
    "random_choice": lambda a, layout: imgproc.random_choice(
        KEY, a, [imgproc.random_hue, ("random_brightness", {"max_delta": 0.3})], strategy="select", layout=layout),
}


@four_devices
@pytest.mark.parametrize("name,layout", [(name, "NHWC") for name in sorted(OPS)]
                         + [("gaussian_blur", "NCHW"), ("random_choice", "NCHW")])  # NCHW: one of each kind
def test_public_op_keeps_the_split(name, layout):
    op = OPS[name]
    x = _batch(layout)
    # the split batch runs compiled: bit-equal to the op compiled on one device (eager
    # op-by-op dispatch may round one uint8 level differently, as jit does anywhere)
    want = np.asarray(jax.jit(lambda a: op(a, layout))(jax.device_put(x, jax.devices()[0])))
    np.testing.assert_allclose(np.asarray(op(x, layout), np.float32), want, atol=1)
    xs = imgproc.shard_batch(x)
    _sharded._PROGRAMS.clear()
    out = op(xs, layout)
    _same_sharding(out, xs)
    np.testing.assert_array_equal(np.asarray(out), want)
    with _compilations() as seen:
        op(xs, layout)
    assert not _compiled(seen), seen
    (program,) = _sharded._PROGRAMS.values()
    args = (xs, KEY) if name.startswith("random") else (xs,)
    _no_collective(program, *args)


@four_devices
def test_per_image_results_keep_the_split():
    x = _batch(dtype=np.float32)
    xs = imgproc.shard_batch(x)
    out = imgproc.estimate_sigma(xs)
    assert out.shape == (8,) and len(out.sharding.device_set) == DEVICES
    np.testing.assert_array_equal(np.asarray(out), imgproc.estimate_sigma(x))
    # an array option (here a kernel; it could hold per-image values) is not closed over
    # in a per-device program: the op runs as it would on any array, with the same values
    kernel = np.float32([[0, 1, 0], [1, 4, 1], [0, 1, 0]]) / 8
    np.testing.assert_array_equal(np.asarray(imgproc.correlate(xs, kernel)), imgproc.correlate(x, kernel))


# --------------------------------------------------------------------------- helpers


@four_devices
def test_shard_batch_refuses_an_uneven_batch():
    with pytest.raises(ValueError, match="6 images cannot be split evenly over 4 devices"):
        imgproc.shard_batch(_batch(n=6))
    with pytest.raises(ValueError, match="axis must name axes of the mesh"):
        imgproc.shard_batch(_batch(), mesh=_mesh(), axis="data")
    with pytest.raises(ValueError, match="mesh must be a jax.sharding.Mesh"):
        imgproc.shard_batch(_batch(), mesh="batch")


@four_devices
def test_global_batch_on_one_process_is_shard_batch():
    x = _batch()
    g = imgproc.global_batch(x)
    s = imgproc.shard_batch(x)
    assert g.sharding == s.sharding and g.shape == x.shape
    np.testing.assert_array_equal(np.asarray(g), x)
    with pytest.raises(ValueError, match="this process's share of 5 images cannot be split evenly over 4"):
        imgproc.global_batch(_batch(n=5))
