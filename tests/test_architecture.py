"""The structure the architecture issue asked for, checked: no import cycle, no context
variables, a registry that imports no op module, and dm-pix-style API conventions
(``dm_pix/_src/api_test.py``): random ops take ``key`` first, optional arguments are
keyword-only, every public op is registered and round-trips through a spec."""

import ast
import inspect
import json
from pathlib import Path

import jax
import numpy as np
import pytest

import imgproc
from imgproc.core.registry import lookup
from op_examples import EXAMPLE_OPTIONS

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "imgproc"

# The layers, bottom to top (docs/architecture.md). A module may import its own unit and the
# units of lower layers; units of one layer do not import each other.
LAYERS = [
    ["imgproc.errors"],
    ["imgproc.cpu"],
    ["imgproc.core"],
    ["imgproc.kernels", "imgproc.io", "imgproc.metrics", "imgproc.figures"],
    ["imgproc.filters"],
    ["imgproc.restoration"],
    ["imgproc.augment"],
    ["imgproc.pipeline"],
    ["imgproc.grain", "imgproc.ray"],
    ["imgproc"],
    ["imgproc.cli"],
]
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}
# What the command line may import besides itself: the public API, io, and public modules.
# imgproc.cpu: the allocator setting (reuse_host_memory), which only a process's entry point may make,
# before JAX is imported.
CLI_MAY_IMPORT = {"imgproc", "imgproc.cpu", "imgproc.errors", "imgproc.figures", "imgproc.ray", "imgproc.restoration"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules():
    mods = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    mods["imgproc.kernels"] = ROOT / "kernels" / "__init__.py"  # installed as imgproc.kernels
    for p in (ROOT / "cli").glob("*.py"):  # installed as imgproc.cli
        mods["imgproc.cli" + ("" if p.stem == "__init__" else "." + p.stem)] = p
    return mods


MODULES = _modules()


def _unit(module: str) -> str:
    """The layer table's unit that holds ``module`` (its longest prefix in :data:`RANK`)."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in RANK:
            return ".".join(parts[:n])
    raise AssertionError(f"{module} is in no layer of LAYERS")


def _imports(path: Path):
    """``(module, names)`` for each imgproc import in ``path`` (module level or inside a
    function): the module imported, and the names taken from it (empty for a module)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from ((a.name, ()) for a in node.names if a.name.startswith("imgproc"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("imgproc"):
            subs = [a.name for a in node.names if f"{node.module}.{a.name}" in MODULES]
            yield from ((f"{node.module}.{name}", ()) for name in subs)
            names = tuple(a.name for a in node.names if a.name not in subs)
            if names:
                yield node.module, names


def _graph():
    return {m: {t for t, _ in _imports(p) if t in MODULES} - {m} for m, p in MODULES.items()}


def test_every_module_is_in_a_layer():
    for m in MODULES:
        _unit(m)


def test_imports_run_downward_only():
    upward = []
    for m, p in MODULES.items():
        for target, _ in _imports(p):
            a, b = _unit(m), _unit(target)
            if a != b and RANK[b] >= RANK[a]:
                upward.append(f"{m} imports {target} ({a}, layer {RANK[a]}, may not import {b}, layer {RANK[b]})")
    assert not upward, "\n".join(upward)


def test_the_cpu_machinery_is_reached_through_its_seam():
    """Outside imgproc/cpu/, the package imports ``imgproc.cpu`` (its __init__: the seam),
    never one of its modules (tests may)."""
    through = [f"{m} imports {t}" for m, p in MODULES.items() if _unit(m) != "imgproc.cpu"
               for t, _ in _imports(p) if t.startswith("imgproc.cpu.")]
    assert not through, through


def test_no_module_takes_another_modules_private_names():
    taken = [f"{m} takes {', '.join(n for n in names if n.startswith('_'))} from {t}"
             for m, p in MODULES.items() for t, names in _imports(p)
             if t != m and any(n.startswith("_") for n in names)]
    assert not taken, "\n".join(taken)


def test_the_command_line_imports_only_the_public_api_and_io():
    reached = sorted({t for m, p in MODULES.items() if m.startswith("imgproc.cli") for t, _ in _imports(p)
                      if not t.startswith(("imgproc.cli", "imgproc.io")) and t not in CLI_MAY_IMPORT})
    assert not reached, reached


def test_the_layer_check_sees_an_upward_import(tmp_path):
    """The check above can fail: an import from core into pipeline is named."""
    fake = tmp_path / "fake.py"
    fake.write_text("def f():\n    from imgproc.pipeline.pipeline import Pipeline\n")
    (target, names), = _imports(fake)
    assert (target, names) == ("imgproc.pipeline.pipeline", ("Pipeline",))
    assert RANK[_unit(target)] > RANK[_unit("imgproc.core.registry")]


def test_no_import_cycle_in_imgproc():
    graph = _graph()
    state, cycle = {}, []

    def visit(m, path):
        state[m] = "open"
        for n in sorted(graph[m]):
            if n == m.rsplit(".", 1)[0] or m == n.rsplit(".", 1)[0]:
                continue  # a package and its own modules: how packages work, not a cycle
            if state.get(n) == "open":
                cycle.append(path + [n])
            elif n not in state:
                visit(n, path + [n])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycle, f"import cycles: {cycle}"


def test_no_context_variables_in_imgproc():
    offenders = [p.name for p in PACKAGE.rglob("*.py") if "ContextVar" in p.read_text() or "contextvars" in p.read_text()]
    assert not offenders


def test_the_registry_imports_no_op_module():
    graph = _graph()
    assert graph["imgproc.core.registry"] == set()
    assert graph["imgproc.core.validate"] <= {"imgproc.errors"}  # itself a leaf
    assert graph["imgproc.errors"] == set()


def test_no_registration_through_globals():
    for p in PACKAGE.rglob("*.py"):
        assert "globals()" not in p.read_text(), p.name


# Public functions of the flat namespace that are not pipeline stages, and why.
NOT_STAGES = {
    "load_image": "I/O", "save_image": "I/O", "decode_image": "I/O", "encode_image": "I/O", "psnr": "metric", "register_op": "registry",
    "registered_ops": "registry", "op_info": "registry", "reuse_host_memory": "process setting",
    "release_output_buffers": "memory held for reuse", "default_strategy": "a query",
    "sample": "takes per-pixel coordinate arrays", "rgb_to_hsv": "a colour-space conversion (HSV out)",
    "hsv_to_rgb": "a colour-space conversion (HSV in)", "ssim": "metric",
    "estimate_sigma": "returns the noise level, not an image", "impulse_fraction": "returns a fraction, not an image",
    "shard_batch": "device placement", "global_batch": "device placement",
    "prefetch_to_device": "device placement (an iterator of batches)", "pad_images": "pads a list into one batch",
    "mixup": "a batch op on images and labels", "cutmix": "a batch op on images and labels",
    "mix_batch": "a batch op on images and labels", "rgb_to_ycbcr": "a colour-space conversion (YCbCr out)",
    "ycbcr_to_rgb": "a colour-space conversion (YCbCr in)", "rgb_to_lab": "a colour-space conversion (Lab out)",
    "lab_to_rgb": "a colour-space conversion (Lab in)", "threshold_otsu": "returns a threshold, not an image",
}
PUBLIC_FUNCTIONS = sorted(
    n for n in imgproc.__all__ if inspect.isfunction(getattr(imgproc, n))
)
OPS = [n for n in PUBLIC_FUNCTIONS if n not in NOT_STAGES]


@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_optional_arguments_are_keyword_only(name):
    sig = inspect.signature(getattr(imgproc, name))
    positional_defaults = [p.name for p in sig.parameters.values()
                           if p.default is not p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert not positional_defaults, f"{name}: options {positional_defaults} should be keyword-only"


@pytest.mark.parametrize("name", OPS)
def test_every_public_op_is_registered_key_first_when_random(name):
    fn = getattr(imgproc, name)
    info = lookup(name)
    assert info.fn is fn
    params = list(inspect.signature(fn).parameters)
    if info.random:
        assert params[:2] == ["key", "image"], name
    else:
        assert params[0] == "image", name
    assert "layout" in params


def _lowered(pipe, x, key):
    """``pipe`` on ``x`` traced and lowered inside ``jax.jit`` (not compiled)."""
    return jax.jit(lambda images: pipe(images, key=key)).lower(x)


def _program_text(pipe, x, key):
    """The StableHLO of ``pipe`` on ``x``, lowered for the CPU on every machine: equal texts
    are the same program (every constant, kernel weights and index maps included, is
    written out in it). Not the GPU's: Mosaic GPU names each kernel it lowers with a count
    kept by the process (``body_0``, ``body_1``, ...), so two lowerings of one program
    differ there (seen on an H200 with jax 0.11.2)."""
    return jax.jit(lambda images: pipe(images, key=key)).trace(x).lower(lowering_platforms=("cpu",)).as_text()


@pytest.mark.parametrize("name", sorted(imgproc.registered_ops()))
def test_every_registered_op_round_trips_through_a_spec(name):
    spec = [{"op": name, **EXAMPLE_OPTIONS.get(name, {})}]
    pipe = imgproc.Pipeline(spec)
    assert json.loads(pipe.to_json()) == spec
    again = imgproc.Pipeline.from_spec(pipe.to_json())
    assert again.to_spec() == spec
    x = np.random.default_rng(0).integers(0, 256, (2, 10, 10, 3)).astype(np.uint8)
    key = jax.random.key(1) if pipe.is_random else None
    # it builds as a stage of a batch (traced, not compiled: every op runs, jitted and
    # eager, in tests/test_conformance.py, and the heavy policies take 5 s to compile)
    lowered = _lowered(pipe, x, key)
    assert jax.tree.leaves(lowered.out_info)[0].shape[0] == 2
    # the rebuilt pipeline is the same program; the text tells programs apart that differ
    # only in a kernel weight or a boundary mode (tested just below)
    assert _program_text(again, x, key) == lowered.as_text()


def test_program_text_tells_apart_one_weight_or_one_mode():
    x = np.random.default_rng(0).integers(0, 256, (2, 10, 10, 3)).astype(np.uint8)
    kernel = np.random.default_rng(1).random((7, 7)).astype(np.float32)
    nudged = kernel.copy()
    nudged[6, 6] += 1e-3
    pipes = [imgproc.Pipeline([{"op": "correlate", "kernel": k.tolist()}]) for k in (kernel, nudged)]
    assert _program_text(pipes[0], x, None) != _program_text(pipes[1], x, None)
    pipes = [imgproc.Pipeline([{"op": "median", "mode": m}]) for m in ("reflect", "mirror")]
    assert _program_text(pipes[0], x, None) != _program_text(pipes[1], x, None)


# options that take a name besides numbers, whose default is a number: (op, option) -> a
# name they take (found by grepping the ops for a string check of a non-string default)
NAMED_BESIDES_NUMBERS = {("random_erasing", "value"): "random"}


def _choice_options(info):
    """The options of an op whose default is a name (a mode, method, interpolation...),
    or that take a name besides numbers (:data:`NAMED_BESIDES_NUMBERS`), with a name each
    takes."""
    options = {option: named for (op, option), named in NAMED_BESIDES_NUMBERS.items() if op == info.name}
    for part in (info.fn, info.sample, info.apply):
        for p in inspect.signature(part).parameters.values() if part is not None else ():
            if p.kind == p.KEYWORD_ONLY and isinstance(p.default, str):
                options[p.name] = p.default
    return options


CHOICE_OPS = sorted(n for n in imgproc.registered_ops() if _choice_options(lookup(n)))


@pytest.mark.parametrize("name", CHOICE_OPS)
def test_a_bad_choice_is_refused_when_the_stage_is_built(name):
    """Every registered op with a named choice (mode, method, interpolation, stage...)
    refuses a bad one in ``Pipeline(...)``, naming the allowed values, and takes its
    default there (kept as written), before anything runs; an option that also takes
    numbers (``random_erasing``'s ``value``) takes its name."""
    base = {"op": name, **EXAMPLE_OPTIONS.get(name, {})}
    for option, default in _choice_options(lookup(name)).items():
        with pytest.raises(ValueError, match=rf"{option} must be one of .*; got 'bogus'"):
            imgproc.Pipeline([{**base, option: "bogus"}])
        spec = [{**base, option: default}]
        assert json.loads(imgproc.Pipeline(spec).to_json()) == spec


def test_a_registered_op_declares_its_checks():
    def tint(image, *, colour="red", layout=None):
        return image

    def check_colour(colour):
        if colour not in ("red", "green"):
            raise ValueError(f"colour must be one of red, green; got {colour!r}")

    imgproc.register_op("tint_for_checks", tint, checks={"colour": check_colour})
    assert imgproc.Pipeline([{"op": "tint_for_checks", "colour": "green"}]).to_spec()[0]["colour"] == "green"
    with pytest.raises(ValueError, match="colour must be one of red, green; got 'blue'"):
        imgproc.Pipeline([{"op": "tint_for_checks", "colour": "blue"}])
    # a check of an option the op does not take could never run: refused when registered
    with pytest.raises(ValueError, match="'tint_typo' declares checks for 'color', which it does not take; its "
                                         "options: colour"):
        imgproc.register_op("tint_typo", tint, checks={"color": check_colour})


def test_unknown_and_missing_spec_options_are_refused_naming_the_options():
    with pytest.raises(ValueError, match=r"gaussian_blur has no option 'radius'; its options: .*sigma.*size"):
        imgproc.Pipeline([{"op": "gaussian_blur", "sigma": 1.0, "radius": 3}])
    with pytest.raises(ValueError, match="gaussian_blur needs 'sigma'"):
        imgproc.Pipeline([{"op": "gaussian_blur"}])


# --------------------------------------------------------------------------- draws apart


RANDOM_SPECS = [
    [{"op": "random_flip_left_right"}, {"op": "random_rot90"}, {"op": "random_brightness"}],
    [{"op": "gaussian_blur", "sigma": 1.0}, {"op": "random_rotate", "max_degrees": 40}, {"op": "sharpen"}],
    [{"op": "random_choice", "ops": [{"op": "random_gaussian_blur"}, {"op": "gaussian_noise"}, {"op": "random_hue"}]},
     {"op": "random_erasing", "value": "random"}],
    [{"op": "random_choice", "strategy": "select", "ops": [{"op": "random_gamma"}, {"op": "salt_and_pepper"}]}],
    [{"op": "random_choice", "strategy": "group", "group_size": 3,
      "ops": [{"op": "random_contrast"}, {"op": "random_translate"}]}],
    [{"op": "random_apply", "p": 0.5, "stage": {"op": "random_resized_crop", "size": [12, 12]}}],
]


@pytest.mark.parametrize("spec", RANDOM_SPECS, ids=range(len(RANDOM_SPECS)))
@pytest.mark.parametrize("batched", [True, False])
def test_replayed_params_give_the_same_result(spec, batched):
    x = np.random.default_rng(2).integers(0, 256, (9, 12, 12, 3)).astype(np.uint8)
    x = x if batched else x[0]
    pipe = imgproc.Pipeline(spec)
    key = jax.random.key(7)
    y, params = pipe(x, key=key, return_params=True)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(pipe(x, key=key)))
    np.testing.assert_array_equal(np.asarray(pipe.apply(x, params)), np.asarray(y))
    assert len(params) == len(spec)
    assert [p is None for p in params] == [not imgproc.Pipeline([s]).is_random for s in spec]


def test_replay_moves_a_mask_with_its_image():
    # the use the training-recipe issue builds on: the same draw applied to a second array
    image = np.random.default_rng(3).random((4, 16, 16, 3), dtype=np.float32)
    mask = np.zeros((4, 16, 16, 1), np.float32)
    mask[:, 2:6, 3:9] = 1.0
    spec = [{"op": "random_flip_left_right"}, {"op": "random_rot90"}]
    pipe = imgproc.Pipeline(spec)
    _, params = pipe(image, key=jax.random.key(0), return_params=True)
    moved = np.asarray(pipe.apply(mask, params))
    for i in range(4):
        ref = mask[i]
        if params[0]["flip"][i]:
            ref = ref[:, ::-1]
        ref = np.rot90(ref, int(params[1]["k"][i]), axes=(0, 1))
        np.testing.assert_array_equal(moved[i], ref)
