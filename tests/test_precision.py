"""Every matrix product and convolution the library traces states its precision: float32
(``Precision.HIGHEST``) wherever the result is an image or a coordinate. Left to the
backend, a GPU computes float32 products in TF32 (about 3 significant digits): warp
matrices, BM3D's transforms and colour conversions then differed between a batch and its
halves, and from torchvision, on an H200 (issue 43). XLA:CPU ignores the precision (it
always computes in float32), so a missing one passes every numeric test on CPU; this test
reads the traced programs instead, for every registered op, the convolution lowerings,
the denoising methods, the random strategies, the geometric ops' target rules and the
recipes, with ``jax.default_backend()`` reporting a GPU, then a TPU (the lowering choices
read it), so the programs whose precision matters are checked here on CPU.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax._src import source_info_util

import imgproc
from imgproc import recipes
from imgproc.augment.choice import STRATEGIES
from imgproc.core.registry import TargetRule, lookup
from imgproc.core.validate import METHODS
from imgproc.restoration.auto import DENOISE_METHODS
from backends import reported_backend
from jaxprs import equations
from op_examples import EXAMPLE_OPTIONS

PRODUCTS = ("dot_general", "conv_general_dilated")
# Products whose precision is deliberately left to the backend, as "file:function" of the
# call site: none. An entry needs a reason beside it (why the backend's default is right).
EXCEPTIONS: dict[str, str] = {}
# the backends whose programs honour a product's precision: XLA:CPU computes every float32
# product in float32 whatever it says, so a CPU program's precision changes no number
BACKENDS = ("gpu", "tpu")
OPS = sorted(imgproc.registered_ops())
FLOAT_OPTIONS = {"solarize": {"threshold": 0.4}}
POLICIES = ("random_choice", "trivial_augment", "rand_augment", "auto_augment", "aug_mix")
KEY = jax.random.key(3)


def _highest(precision) -> bool:
    if precision is None:
        return False
    pair = precision if isinstance(precision, tuple) else (precision, precision)
    return all(p == jax.lax.Precision.HIGHEST for p in pair)


def _site(eqn) -> str:
    frame = source_info_util.user_frame(eqn.source_info.traceback)
    if frame is None:
        return "?"
    return f"{frame.file_name.rsplit('/', 1)[-1]}:{frame.function_name}"


def unstated(fn, *args) -> list[str]:
    """The products in ``fn(*args)``'s traced program (nested jaxprs included) whose
    precision is not HIGHEST, as ``"primitive at file:function (precision)"``."""
    jaxpr = jax.make_jaxpr(fn)(*args).jaxpr
    found = []
    for primitive in PRODUCTS:
        for eqn in equations(jaxpr, primitive):
            if not _highest(eqn.params.get("precision")) and _site(eqn) not in EXCEPTIONS:
                found.append(f"{primitive} at {source_info_util.summarize(eqn.source_info)} "
                             f"({eqn.params.get('precision')})")
    return found


@pytest.fixture(scope="module", params=BACKENDS)
def traced_for(request):
    """The lowering choices see ``request.param`` as the default backend (tests/backends.py;
    module-scoped: the tests run grouped by backend, JAX's caches cleared between groups)."""
    with reported_backend(request.param) as name:
        yield name


def _image(name="", batch=2):
    shape = (batch, 12, 12, 3) if "rot90" in name else (batch, 12, 14, 3)
    return np.random.default_rng(5).random(shape, dtype=np.float32)


def _call(name, key, x, **options):
    info = lookup(name)
    opts = {**EXAMPLE_OPTIONS.get(name, {}), **FLOAT_OPTIONS.get(name, {}), **options}
    return info.fn(key, x, **opts) if info.random else info.fn(x, **opts)


def test_the_check_sees_a_product_left_to_the_backend():
    a = np.ones((3, 3), np.float32)
    assert len(unstated(lambda m: m @ m, a)) == 1
    assert unstated(lambda m: jax.numpy.matmul(m, m, precision="highest"), a) == []
    conv = lambda x: jax.lax.conv_general_dilated(x, x, (1, 1), "VALID")  # noqa: E731
    assert len(unstated(conv, np.ones((1, 1, 3, 3), np.float32))) == 1


@pytest.mark.parametrize("name", OPS)
def test_every_op_states_its_precision(name, traced_for):
    assert unstated(lambda k, x: _call(name, k, x), KEY, _image(name)) == []


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("kernel", [np.outer([1, 2, 1], [1, 0, -1]), np.arange(9).reshape(3, 3)],
                         ids=["rank1", "full"])
def test_every_lowering_states_its_precision(method, kernel, traced_for):
    if method == "pallas" and traced_for != "gpu":
        pytest.skip("the fused Pallas kernel is traced for a GPU only")
    x = _image()
    assert unstated(lambda a: imgproc.correlate(a, kernel.astype(np.float32), method=method), x) == []
    if method in ("auto", "separable", "pallas"):  # a Gaussian's weights are its own lowering's case
        assert unstated(lambda a: imgproc.gaussian_blur(a, 1.5, method=method), x) == []


@pytest.mark.parametrize("method", DENOISE_METHODS)
def test_every_denoising_method_states_its_precision(method, traced_for):
    x = _image(batch=1)[0] * 255
    assert unstated(lambda a: imgproc.denoise(a, method=method, sigma=20.0, max_value=255.0), x) == []
    if method == "bm3d":
        for stage in ("hard", "both"):
            assert unstated(lambda a: imgproc.bm3d(a, sigma=20.0, stage=stage, max_value=255.0), x) == []


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("name", POLICIES)
def test_every_random_strategy_states_its_precision(name, strategy, traced_for):
    assert unstated(lambda k, x: _call(name, k, x, strategy=strategy), KEY, _image(name)) == []


@pytest.mark.parametrize("name", [n for n in OPS if isinstance(lookup(n).targets, TargetRule)])
def test_every_target_rule_states_its_precision(name, traced_for):
    """Boxes, masks and keypoints move by the op's matrix: coordinates, float32 too."""
    x = _image(name)
    targets = {"boxes": np.array([[[1.0, 2.0, 8.0, 9.0]]] * 2, np.float32),
               "keypoints": np.array([[[3.0, 4.0]]] * 2, np.float32),
               "masks": (x[..., 0] > 0.5)}
    options = {**EXAMPLE_OPTIONS.get(name, {}), **FLOAT_OPTIONS.get(name, {})}
    pipe = imgproc.Pipeline([{"op": name, **options}])
    random = lookup(name).random

    def run(k, a):
        return pipe(a, key=k, targets=targets) if random else pipe(a, targets=targets)

    assert unstated(run, KEY, x) == []


@pytest.mark.parametrize("name", recipes.names())
def test_every_recipe_states_its_precision(name, traced_for):
    x = (_image(batch=4) * 255).astype(np.uint8)
    options = {"size": 8} if name.startswith("imagenet") else {"size": (8, 8)}
    strategies = STRATEGIES if name == "imagenet_train" else (None,)
    for strategy in strategies:
        r = recipes.get(name, **options, **({"strategy": strategy} if strategy else {}))
        labels = np.arange(4)
        if name == "imagenet_train":
            assert unstated(lambda k, a: r(a, labels, key=k, indices=np.arange(4), num_classes=4)["images"],
                            KEY, x) == []
        else:
            assert unstated(lambda k, a: r(a, key=k)["images"], KEY, x) == []
