"""MixUp / CutMix (imgproc/augment/mix.py): the definitions (torchvision v2's MixUp and
CutMix box, per image), pairing and reproducibility, distributions, bad arguments."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

import imgproc

RNG = np.random.default_rng(3)
X = RNG.integers(0, 256, (6, 10, 12, 3)).astype(np.uint8)
LABELS = np.eye(6, dtype=np.float32)
IDX = np.array([10, 11, 12, 13, 14, 15])
OPS = [imgproc.mixup, imgproc.cutmix]


@pytest.mark.parametrize("fn", OPS, ids=["mixup", "cutmix"])
def test_definition_from_the_drawn_parameters(fn):
    y, labels, p = fn(X, LABELS, key=4, alpha=0.7, indices=IDX, return_params=True)
    partner, lam, box = np.asarray(p["partner"]), np.asarray(p["lam"]), np.asarray(p["box"])
    assert sorted(partner.tolist()) == list(range(6)) and np.all(partner != np.arange(6))  # a cycle, no self-pair
    xf = X.astype(np.float64)
    for i in range(6):
        j = partner[i]
        if fn is imgproc.mixup:
            ref = lam[i] * xf[i] + (1 - lam[i]) * xf[j]
            w = lam[i]
        else:
            x1, y1, x2, y2 = box[i]
            r = 0.5 * math.sqrt(1 - lam[i])  # torchvision's box around a centre inside the image
            assert x2 - x1 <= 2 * int(r * 12) and y2 - y1 <= 2 * int(r * 10)
            assert 0 <= x1 <= x2 <= 12 and 0 <= y1 <= y2 <= 10
            ref = xf[i].copy()
            ref[y1:y2, x1:x2] = xf[j, y1:y2, x1:x2]
            w = 1 - (x2 - x1) * (y2 - y1) / 120
        np.testing.assert_array_equal(y[i], np.clip(np.round(ref), 0, 255).astype(np.uint8))
        np.testing.assert_allclose(labels[i], w * LABELS[i] + (1 - w) * LABELS[j], atol=1e-6)
    np.testing.assert_allclose(labels.sum(1), 1.0, atol=1e-6)


@pytest.mark.parametrize("fn", OPS, ids=["mixup", "cutmix"])
def test_reproducible_and_independent_of_batch_order(fn):
    a = fn(X, LABELS, key=4, indices=IDX)
    b = fn(X, LABELS, key=4, indices=IDX)
    np.testing.assert_array_equal(a[0], b[0])
    perm = np.array([3, 0, 5, 1, 4, 2])
    c = fn(X[perm], LABELS[perm], key=4, indices=IDX[perm])
    np.testing.assert_array_equal(c[0], a[0][perm])
    np.testing.assert_allclose(c[1], a[1][perm], atol=1e-7)
    d = fn(X, LABELS, key=5, indices=IDX)
    assert not np.array_equal(d[0], a[0])
    # NCHW gives the NHWC numbers; jit equals eager
    e = fn(np.moveaxis(X, -1, 1), LABELS, key=4, indices=IDX, layout="NCHW")
    np.testing.assert_array_equal(np.moveaxis(e[0], 1, -1), a[0])
    f = jax.jit(lambda x, y: fn(x, y, key=jax.random.key(4), indices=IDX))(X, LABELS)
    np.testing.assert_array_equal(np.asarray(f[0]), a[0])


def test_lambda_is_beta_alpha_alpha():
    n = 4000
    x = np.zeros((n, 2, 2, 1), np.float32)
    labels = np.zeros((n, 2), np.float32)
    labels[:, 0] = 1
    for alpha in (0.2, 1.0):
        _, _, p = imgproc.mixup(x, labels, key=0, alpha=alpha, return_params=True)
        lam = np.asarray(p["lam"], np.float64)
        var = 1 / (4 * (2 * alpha + 1))
        assert abs(lam.mean() - 0.5) < 4.5 * math.sqrt(var / n)
        assert abs(lam.var() - var) < 0.1 * var


def test_mix_batch_spec_and_integer_labels():
    spec = [{"op": "mixup", "alpha": 0.2}, {"op": "cutmix", "alpha": 1.0}]
    y, labels, p = imgproc.mix_batch(X, np.arange(6), spec, key=2, num_classes=8, return_params=True)
    assert labels.shape == (6, 8) and np.allclose(labels.sum(1), 1)
    ops = np.asarray(p["op"])
    # each image as its own op would give it, with the same key and index
    for k, name in enumerate(("mixup", "cutmix")):
        one = imgproc.mix_batch(X, np.arange(6), {"op": name, "alpha": spec[k]["alpha"]}, key=2, num_classes=8)
        np.testing.assert_array_equal(y[ops == k], one[0][ops == k])
    big = imgproc.mix_batch(np.zeros((400, 4, 4, 1), np.uint8), np.zeros(400, int), spec, key=0, num_classes=2,
                            return_params=True)[2]
    assert 150 <= int(np.asarray(big["op"]).sum()) <= 250
    single = imgproc.mix_batch(X, LABELS, {"op": "cutmix"}, key=2)
    np.testing.assert_array_equal(single[0], imgproc.cutmix(X, LABELS, key=2)[0])


@pytest.mark.parametrize("call, match", [
    (lambda: imgproc.mixup(X, LABELS, key=0, alpha=0.0), "alpha must be"),
    (lambda: imgproc.cutmix(X, LABELS[:5], key=0), r"labels must be one-hot .* \(6, K\)"),
    (lambda: imgproc.mixup(X[0], LABELS, key=0), "need a batch"),
    (lambda: imgproc.mixup(X, np.arange(6), key=0), "need num_classes"),
    (lambda: imgproc.mixup(X, np.arange(6), key=0, num_classes=3), r"class labels must be in \[0, 2\]"),
    (lambda: imgproc.mixup(X, LABELS, key=0, indices=[1, 2]), "one integer per image"),
    (lambda: imgproc.mix_batch(X, LABELS, {"op": "blend"}, key=0), "mix ops are 'mixup', 'cutmix'"),
    (lambda: imgproc.mix_batch(X, LABELS, {"op": "mixup", "beta": 1}, key=0), "no option 'beta'"),
    (lambda: imgproc.mix_batch(X, LABELS, [], key=0), "a mix spec is"),
    (lambda: imgproc.mix_batch(X, LABELS, {"op": "mixup"}, key=0, count=7), r"count must be an integer in \[1, 6\]"),
    (lambda: imgproc.mix_batch(X, LABELS, {"op": "mixup"}, key=0, count=0), r"count must be an integer in \[1, 6\]"),
])
def test_bad_arguments_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_count_leaves_the_padding_out_of_the_mix():
    """mix_batch(count=k) on a padded batch: the first k results are those of the k images
    alone, eager and with a traced count."""
    spec = [{"op": "mixup", "alpha": 0.2}, {"op": "cutmix", "alpha": 1.0}]
    padded_x = np.concatenate([X[:4], np.zeros_like(X[:2])])
    padded_y = np.concatenate([LABELS[:4], np.zeros_like(LABELS[:2])])
    alone = imgproc.mix_batch(X[:4], LABELS[:4], spec, key=3)
    eager = imgproc.mix_batch(padded_x, padded_y, spec, key=3, indices=np.arange(6), count=4)
    traced = jax.jit(lambda x, y, k: imgproc.mix_batch(x, y, spec, key=3, indices=np.arange(6), count=k))(
        padded_x, padded_y, 4)
    for out in (eager, traced):
        np.testing.assert_array_equal(np.asarray(out[0])[:4], alone[0])
    np.testing.assert_array_equal(np.asarray(eager[1])[:4], alone[1])
    # under the caller's jit XLA folds the label weight's arithmetic its own way (1 ulp)
    np.testing.assert_allclose(np.asarray(traced[1])[:4], alone[1], rtol=1e-6, atol=0)
