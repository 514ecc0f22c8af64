"""The policies' tables and the random draws against torchvision 0.29's own, stored by
tests/golden/make_torchvision.py in tests/golden/torchvision_stats.json (torch is not needed
here): torchvision v2's AutoAugment family tables (``_AUGMENTATION_SPACE``, AutoAugment's
sub-policies), RandomResizedCrop's box distribution (the ImageNet recipe's crop), MixUp's
and CutMix's ``lam`` (TestCutMixMixUp) and AugMix's mixing weight, each compared as
statistics with the tolerances stored beside them."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

import imgproc
from imgproc.augment import policies as P
from imgproc.augment.geometry import _draw_resized_crop
from torchvision_golden import stats

N = 4000


def _cdf_tol(n_ours, n_theirs):
    """4 standard errors of the difference of two empirical CDFs at a median."""
    return 4 * math.sqrt(0.25 / n_ours + 0.25 / n_theirs)


def assert_same_distribution(values, ref, label):
    """``values`` (imgproc's draws) against torchvision's stored statistics ``ref``: the
    mean within ``mean_tol`` (scaled to the sample sizes) and, at each of torchvision's
    deciles ``q_k``, the fraction of draws below ``q_k`` at most, and the fraction up to
    ``q_k`` at least, ``k / 10`` give or take the CDF tolerance (atoms, such as a fallback
    box, allowed)."""
    v = np.asarray(values, np.float64)
    n, m = len(v), ref["n"]
    mean_tol = 4 * ref["std"] * math.sqrt(1 / n + 1 / m) + 1e-6
    assert abs(v.mean() - ref["mean"]) <= mean_tol, f"{label}: mean {v.mean()} vs {ref['mean']} ± {mean_tol}"
    tol = _cdf_tol(n, m)
    for k, q in enumerate(ref["deciles"], start=1):
        eps = 1e-5 * max(1.0, abs(q))
        below, upto = (v < q - eps).mean(), (v <= q + eps).mean()
        assert below <= k / 10 + tol and upto >= k / 10 - tol, f"{label}: decile {k} at {q}: {below}..{upto}"


# --------------------------------------------------------------------------- tables


@pytest.mark.parametrize("policy", ["rand", "wide", "auto", "augmix"])
def test_policy_tables_equal_torchvisions(policy):
    """Same ops in the same order, same magnitude bins and signs, as torchvision's
    ``_AUGMENTATION_SPACE`` evaluated at the same image size."""
    table = stats()["tables"][policy]
    h, w = stats()["tables"]["image_hw"]
    ours = [(n, m, s) for n, m, s in P.augmentation_space(policy, table["num_bins"], h, w)]
    if policy in ("augmix", "auto"):
        # imgproc's op 0: AugMix's padding of chains shorter than 3, AutoAugment's skipped step
        assert ours[0][0] == "Identity"
        ours = ours[1:]
    theirs = table["ops"]
    assert [n for n, _, _ in ours] == list(theirs)
    for name, mags, signed in ours:
        assert signed == theirs[name]["signed"], name
        if theirs[name]["magnitudes"] is None:
            assert mags is None, name
        else:
            np.testing.assert_allclose(np.asarray(mags, np.float64), theirs[name]["magnitudes"], rtol=1e-6,
                                       atol=1e-6, err_msg=name)


@pytest.mark.parametrize("policy", ["imagenet", "cifar10", "svhn"])
def test_auto_augment_sub_policies_equal_torchvisions(policy):
    theirs = [[tuple(step) for step in sub] for sub in stats()["tables"]["auto_policies"][policy]]
    ours = [[tuple(step) for step in sub] for sub in P._AUTO_POLICIES[policy]]
    assert ours == theirs


# --------------------------------------------------------------------------- draws


@pytest.mark.parametrize("h, w", [(300, 451), (224, 448), (100, 100), (32, 400)])
def test_random_resized_crop_draws_torchvisions_boxes(h, w):
    """The ImageNet recipe's crop: torchvision's ten tries and centre-crop fallback give its
    box distribution (area, aspect, position), and the aspect stays in [3/4, 4/3]."""
    keys = jax.random.split(jax.random.key(44), N)
    boxes = jax.vmap(lambda k: _draw_resized_crop(k, (h, w), (0.08, 1.0), (3 / 4, 4 / 3)))(keys)
    b = {k: np.asarray(v, np.float64) for k, v in boxes.items()}
    assert (b["top"] >= 0).all() and (b["top"] + b["height"] <= h).all()
    assert (b["left"] >= 0).all() and (b["left"] + b["width"] <= w).all()
    for k in b:
        assert (b[k] == np.round(b[k])).all(), k  # whole pixels, as torchvision's
    ref = stats()["draws"][f"random_resized_crop_{h}x{w}"]
    assert_same_distribution(b["height"] * b["width"] / (h * w), ref["scale"], "scale")
    assert_same_distribution(np.log(b["width"] / b["height"]), ref["log_ratio"], "log ratio")
    assert_same_distribution((b["top"] + b["height"] / 2) / h, ref["centre_y"], "centre row")
    assert_same_distribution((b["left"] + b["width"] / 2) / w, ref["centre_x"], "centre column")
    ratio = b["width"] / b["height"]
    # rounding the sides moves the aspect a little past the bounds, as in torchvision
    assert ratio.max() <= max(ref["max_ratio"], 4 / 3) * 1.02 and ratio.min() >= min(ref["min_ratio"], 3 / 4) / 1.02


def _own_weight(mix, images, **options):
    """Each image's weight on its own label (``lam`` for MixUp, ``1 - box area / (H W)``
    for CutMix), from a batch whose labels are all different."""
    n = images.shape[0]
    _, labels = mix(images, np.arange(n), key=jax.random.key(3), num_classes=n, **options)
    return np.diagonal(np.asarray(labels))


def test_mixup_lam_is_torchvisions_beta():
    """TestCutMixMixUp: MixUp(alpha=0.2)'s lam, Beta(0.2, 0.2); the image is the same
    blend as the label (``lam x_i + (1 - lam) x_j``)."""
    n = 2000
    x = np.zeros((n, 2, 2, 1), np.float32)
    x[:, 0, 0, 0] = np.arange(n) % 2
    images, labels = imgproc.mixup(x, np.arange(n), key=jax.random.key(3), alpha=0.2, num_classes=n)
    labels = np.asarray(labels)
    np.testing.assert_allclose(labels.sum(1), 1.0, atol=1e-5)
    assert ((labels > 0).sum(1) <= 2).all()
    assert_same_distribution(np.diagonal(labels), stats()["draws"]["mixup_lam_alpha0.2"], "MixUp lam")


def test_cutmix_label_weight_is_torchvisions():
    """TestCutMixMixUp: CutMix(alpha=1)'s label weight ``1 - box area / (H W)`` on 32x32
    images, and the image keeps exactly that share of its own pixels (its partner's
    pixels pasted in the box)."""
    n = 2000
    parity = (np.arange(n) % 2).astype(np.float32)
    x = np.broadcast_to(parity[:, None, None, None], (n, 32, 32, 1)).copy()
    images, labels = imgproc.cutmix(x, np.arange(n), key=jax.random.key(3), alpha=1.0, num_classes=n)
    labels = np.asarray(labels)
    np.testing.assert_allclose(labels.sum(1), 1.0, atol=1e-5)
    own = np.diagonal(labels).copy()
    others = labels.copy()
    np.fill_diagonal(others, 0.0)
    partner = others.argmax(1)
    kept = (np.asarray(images)[..., 0] == x[..., 0]).mean(axis=(1, 2))
    differ = (parity[partner] != parity) & (own < 1)
    np.testing.assert_allclose(kept[differ], own[differ], atol=1e-6)
    assert_same_distribution(own, stats()["draws"]["cutmix_lam_adjusted_32x32"], "CutMix weight")


def test_aug_mix_weight_of_the_original_is_torchvisions():
    keys = jax.random.split(jax.random.key(9), N)
    draws = jax.vmap(lambda k: P._augmix_params(k, (16, 16, 3), layout="HWC"))(keys)
    assert_same_distribution(np.asarray(draws["weights"][:, 0]), stats()["draws"]["augmix_m0_alpha1"], "AugMix m0")
