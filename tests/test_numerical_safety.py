"""Numerical safety: finite gains and leaf values at zero hessians / weights,
and float64 accumulation of histograms over many rows."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gputrees

from estimator_zoo import available_kernels


@pytest.mark.parametrize(
    "kernels",
    # the pure array-API reference kernel takes ~10 s on 10**7 rows
    [pytest.param(k, marks=pytest.mark.slow) if k == "reference" else k for k in available_kernels()],
)
def test_root_sums_of_ten_million_equal_gradients(kernels):
    """10**7 rows of gradient 0.1 (not a binary fraction): the root sums equal n * g to
    float64 rounding (float32 accumulation would be off by percent), the count exactly."""
    from gputrees.kernels import get_kernels

    n, g, h = 10**7, 0.1, 0.3
    k = get_kernels(np, kernels)
    codes = np.zeros((n, 1), dtype=np.uint8)
    w = np.empty((n, 3))
    w[:, 0], w[:, 1], w[:, 2] = 1.0, g, h
    hist = k.build_histograms(np, codes, np.arange(n), np.zeros(n, dtype=np.int64), w, 1, 2)
    sums = hist.sum(axis=(0, 1, 2))
    assert hist.dtype == np.float64
    assert sums[0] == n
    np.testing.assert_allclose(sums[1], n * g, rtol=1e-9)
    np.testing.assert_allclose(sums[2], n * h, rtol=1e-9)


def test_boosting_root_gradient_sum_ten_million_rows():
    """One depth-1 round on 10**7 rows of equal targets offset from the baseline."""
    n = 10**7
    X = np.zeros((n, 1), dtype=np.float32)
    X[: n // 2] = 1.0
    y = np.full(n, 0.1)
    est = gputrees.GradientBoostingRegressor(n_estimators=1, max_depth=1, learning_rate=1.0, early_stopping=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        est.fit(X, y)
    pred = est.predict(X[:: n // 10])
    np.testing.assert_allclose(pred, 0.1, rtol=1e-12)


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_zero_hessians_and_weights_stay_finite():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] > 0).astype(int)
    # separable data, big steps: p -> 0/1 and hessians p(1 - p) -> 0
    clf = gputrees.GradientBoostingClassifier(
        n_estimators=60, learning_rate=5.0, l2_regularization=0.0, min_child_weight=0.0, max_depth=3
    ).fit(X, y)
    assert np.isfinite(clf.decision_function(X)).all()
    values = [np.asarray(v) for v in clf.tree_values_] if isinstance(clf.tree_values_, list) else [
        np.asarray(clf.tree_values_)]
    assert all(np.isfinite(v).all() for v in values)
    assert np.isfinite(clf.get_feature_importance("gain")).all()
    # zero weights on half the rows, no regularisation: nodes with H = 0 are not split into
    sw = np.where(np.arange(400) % 2 == 0, 0.0, 1.0)
    reg = gputrees.GradientBoostingRegressor(
        n_estimators=5, l2_regularization=0.0, min_child_weight=0.0, max_depth=4
    ).fit(X, X[:, 0], sample_weight=sw)
    assert np.isfinite(reg.predict(X)).all()
    assert np.isfinite(reg.get_feature_importance("gain")).all()
    tree = gputrees.DecisionTreeRegressor().fit(X, X[:, 1], sample_weight=sw)
    assert np.isfinite(tree.tree_.impurity).all() and np.isfinite(tree.predict(X)).all()
