"""`imgproc augment IN OUTDIR --spec SPEC --count N --seed S`."""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from imgproc.cli import cli as imgproc_cli

SPEC = [{"op": "random_flip_left_right"}, {"op": "random_brightness"},
        {"op": "random_choice", "ops": [{"op": "gaussian_blur", "sigma": 1.0, "size": 3}, {"op": "gaussian_noise"}]}]


@pytest.fixture
def setup(tmp_path):
    rng = np.random.default_rng(0)
    src = tmp_path / "in"
    src.mkdir()
    for name in ("a.png", "b.png"):
        Image.fromarray(rng.integers(0, 256, (20, 24, 3)).astype(np.uint8)).save(src / name)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    return src, spec, tmp_path


def run(*args):
    return CliRunner().invoke(imgproc_cli, ["augment", *map(str, args)])


def test_writes_variants_and_contact_sheet_reproducibly(setup):
    src, spec, tmp = setup
    r = run(src, tmp / "out", "--spec", spec, "--count", 3, "--seed", 7)
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in (tmp / "out").iterdir())
    assert names == ["a_000.png", "a_001.png", "a_002.png", "b_000.png", "b_001.png", "b_002.png", "contact_sheet.png"]
    with Image.open(tmp / "out" / "contact_sheet.png") as im:
        assert im.format == "PNG" and im.width > im.height
    variants = [np.asarray(Image.open(tmp / "out" / f"a_00{k}.png")) for k in range(3)]
    assert variants[0].shape == (20, 24, 3) and not np.array_equal(variants[0], variants[1])
    # the same seed gives the same files; a single input file gets sample indices 0..N-1 too
    r = run(src / "a.png", tmp / "again", "--spec", spec, "--count", 3, "--seed", 7, "--no-sheet")
    assert r.exit_code == 0, r.output
    for k in range(3):
        np.testing.assert_array_equal(np.asarray(Image.open(tmp / "again" / f"a_00{k}.png")), variants[k])
    assert not (tmp / "again" / "contact_sheet.png").exists()


def test_errors_and_exit_codes(setup):
    src, spec, tmp = setup
    assert run(src, tmp / "out", "--spec", spec, "--count", 1).exit_code == 0
    r = run(src, tmp / "out", "--spec", spec, "--count", 1)  # a re-run skips what exists (issue 17 item 12)
    assert r.exit_code == 0 and "2 skipped" in r.output and "--overwrite" in r.output
    assert run(src, tmp / "out", "--spec", spec, "--count", 1, "--overwrite").exit_code == 0
    bad = tmp / "bad.json"
    bad.write_text('[{"op": "random_hue", "max_delta": 3}]')
    r = run(src, tmp / "o2", "--spec", bad)
    assert r.exit_code == 2 and "max_delta" in r.output
    bad.write_text("[{")
    assert run(src, tmp / "o3", "--spec", bad).exit_code == 2
    assert run(tmp / "missing.png", tmp / "o4", "--spec", spec).exit_code == 66
    r = run(src / "a.png", tmp / "a_blurred.png", "--spec", spec)  # meant a file: refused, nothing created
    assert r.exit_code == 2 and "OUTDIR" in r.output and "looks like an image file" in r.output
    assert not (tmp / "a_blurred.png").exists()
