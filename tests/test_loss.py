"""Boosting losses: gradients against finite differences, baselines, batched weighted quantiles."""

from __future__ import annotations

import numpy as np
import pytest

from gputrees import _loss
from gputrees.kernels import get_kernels

KERNELS = get_kernels(np)


def _losses():
    return [
        _loss.SquaredError(),
        _loss.AbsoluteError(),
        _loss.Quantile(0.8),
        _loss.Poisson(),
        _loss.Gamma(),
        _loss.BinaryLogLoss(),
        _loss.MultinomialLogLoss(3),
    ]


def _target(loss, rng, n):
    if isinstance(loss, (_loss.BinaryLogLoss,)):
        return rng.integers(0, 2, n).astype(np.float64)
    if isinstance(loss, _loss.MultinomialLogLoss):
        return rng.integers(0, 3, n).astype(np.float64)
    if isinstance(loss, (_loss.Poisson, _loss.Gamma)):
        return rng.gamma(2.0, 1.5, n) + (0.0 if isinstance(loss, _loss.Poisson) else 0.1)
    return rng.normal(size=n) * 3


@pytest.mark.parametrize("loss", _losses(), ids=lambda l: type(l).__name__)
def test_gradient_is_derivative_of_pointwise_loss(loss):
    rng = np.random.default_rng(0)
    n, k = 50, loss.n_trees_per_round
    y = _target(loss, rng, n)
    raw = rng.normal(size=(n, k))
    w = rng.uniform(0.5, 2.0, n)
    g, h = loss.gradients(np, raw, y, w)
    assert g.shape == h.shape == (n, k)
    eps = 1e-6
    for j in range(k):
        d = np.zeros_like(raw)
        d[:, j] = eps
        num = (loss.pointwise(np, raw + d, y) - loss.pointwise(np, raw - d, y)) / (2 * eps)
        np.testing.assert_allclose(g[:, j], num * w, rtol=1e-5, atol=1e-6)
        if not loss.needs_leaf_update:  # smooth losses: the hessian is the second derivative
            num_g = (loss.gradients(np, raw + d, y, w)[0][:, j] - loss.gradients(np, raw - d, y, w)[0][:, j]) / (
                2 * eps
            )
            np.testing.assert_allclose(h[:, j], num_g, rtol=1e-4, atol=1e-6)
    assert np.all(h > 0)


@pytest.mark.parametrize("loss", _losses(), ids=lambda l: type(l).__name__)
def test_baseline_minimises_the_mean_loss(loss):
    rng = np.random.default_rng(1)
    n, k = 200, loss.n_trees_per_round
    y = _target(loss, rng, n)
    w = rng.uniform(0.5, 2.0, n)
    base = loss.baseline(np, KERNELS, y, w)
    assert base.shape == (k,)
    at = loss.loss(np, np.broadcast_to(base, (n, k)), y, w)
    for j in range(k):
        for step in (-0.05, 0.05):
            shifted = base.copy()
            shifted[j] += step
            assert at <= loss.loss(np, np.broadcast_to(shifted, (n, k)), y, w) + 1e-12


def _quantile_by_hand(values, weights, alpha):
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    cum = np.cumsum(w)
    return v[np.flatnonzero(cum >= alpha * cum[-1] * (1 - 1e-12))[0]]


@pytest.mark.parametrize("alpha", [0.5, 0.1, 0.9])
def test_weighted_quantiles_per_segment(alpha):
    rng = np.random.default_rng(2)
    n, n_seg = 300, 12
    seg = rng.integers(0, n_seg - 2, n)  # the last two segments stay empty
    values = np.round(rng.normal(size=n), 1)  # ties
    weights = rng.choice([0.0, 0.5, 1.0, 3.0], n)
    got = _loss.weighted_quantiles(np, KERNELS, seg, values, weights, n_seg, alpha)
    for s in range(n_seg):
        m = (seg == s) & (weights > 0)
        expected = _quantile_by_hand(values[m], weights[m], alpha) if m.any() else 0.0
        assert got[s] == expected, s


def test_weighted_median_equal_weights_is_lower_median():
    seg = np.zeros(4, dtype=np.int64)
    got = _loss.weighted_quantiles(np, KERNELS, seg, np.array([4.0, 1.0, 3.0, 2.0]), np.ones(4), 1, 0.5)
    assert got[0] == 2.0


def test_weighted_quantiles_reference_kernels_agree():
    rng = np.random.default_rng(3)
    seg = rng.integers(0, 5, 100)
    values = rng.normal(size=100)
    w = rng.uniform(0, 1, 100)
    ref = get_kernels(np, "reference")
    assert KERNELS.name != "reference"
    np.testing.assert_array_equal(
        _loss.weighted_quantiles(np, KERNELS, seg, values, w, 5, 0.3),
        _loss.weighted_quantiles(np, ref, seg, values, w, 5, 0.3),
    )


def test_huber_leaf_estimate_is_median_plus_clipped_mean():
    loss = _loss.Huber(0.9, KERNELS)
    y = np.array([0.0, 1.0, 2.0, 10.0, 5.0, 6.0, 7.0])
    raw = np.zeros((7, 1))
    w = np.ones(7)
    loss.gradients(np, raw, y, w)  # sets delta = 0.9-quantile of |y - raw|
    assert loss.delta == 10.0 or loss.delta == 7.0
    loss.delta = 1.5
    leaf = np.array([0, 0, 0, 0, 1, 1, 1])
    got = loss.leaf_estimates(np, KERNELS, leaf, raw, y, w, 2)
    # leaf 0: median 1 (lower median of 0,1,2,10); deviations -1, 0, 1, 9 -> clipped -1, 0, 1, 1.5
    assert got[0] == pytest.approx(1.0 + (-1 + 0 + 1 + 1.5) / 4)
    # leaf 1: median 6, deviations -1, 0, 1
    assert got[1] == pytest.approx(6.0)
