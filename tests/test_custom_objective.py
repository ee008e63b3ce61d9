"""``loss=callable``: custom objectives take the generic round path and give the built-in losses' models."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris

from gputrees import GradientBoostingClassifier, GradientBoostingRegressor

SPLITS = ("left", "right", "feature", "bin", "missing_left", "threshold")


def squared_error(y, raw, w):
    return (raw - y) * w, w


def logistic(y, raw, w):
    p = 1.0 / (1.0 + np.exp(-raw))
    return (p - y) * w, np.maximum(p * (1.0 - p), 1e-16) * w


def softmax(y, raw, w):
    e = np.exp(raw - raw.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    onehot = (y[:, None] == np.arange(raw.shape[1])[None, :]).astype(float)
    return (p - onehot) * w[:, None], np.maximum(p * (1.0 - p), 1e-16) * w[:, None]


def _same_model(a, b, atol=1e-10):
    for name in SPLITS:
        np.testing.assert_array_equal(np.asarray(getattr(a.trees_, name)), np.asarray(getattr(b.trees_, name)),
                                      err_msg=name)
    np.testing.assert_allclose(b.tree_values_, a.tree_values_, rtol=0, atol=atol)


@pytest.mark.parametrize("params", [{}, {"subsample": 0.7, "random_state": 3}, {"weighted": True}])
def test_custom_squared_error_is_the_built_in_model(params):
    X, y = load_diabetes(return_X_y=True)
    params = dict(params)
    sw = np.random.default_rng(0).integers(1, 4, size=len(y)).astype(float) if params.pop("weighted", 0) else None
    kw = dict(n_estimators=15, max_depth=4, early_stopping=False, **params)
    built_in = GradientBoostingRegressor(**kw).fit(X, y, sample_weight=sw)
    custom = GradientBoostingRegressor(loss=squared_error, **kw).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(custom._baseline, built_in._baseline, rtol=1e-15)
    _same_model(built_in, custom)
    np.testing.assert_allclose(custom.predict(X), built_in.predict(X), rtol=1e-12)
    # its training score is minus the stopping metric (rmse) of the training rows
    rmse = np.sqrt(np.average((custom.predict(X) - y) ** 2, weights=sw)) if not params else None
    if rmse is not None:
        np.testing.assert_allclose(custom.train_score_[-1], -rmse, rtol=1e-12)


def test_custom_logistic_is_the_built_in_model():
    X, y = load_breast_cancer(return_X_y=True)
    kw = dict(n_estimators=15, max_depth=3, early_stopping=False)
    built_in = GradientBoostingClassifier(**kw).fit(X, y)
    custom = GradientBoostingClassifier(loss=logistic, **kw).fit(X, y)
    np.testing.assert_allclose(custom._baseline, built_in._baseline, rtol=0, atol=1e-10)  # Newton steps from 0
    _same_model(built_in, custom)
    np.testing.assert_allclose(custom.predict_proba(X), built_in.predict_proba(X), atol=1e-10)
    np.testing.assert_array_equal(custom.predict(X), built_in.predict(X))


def test_custom_softmax_gives_the_built_in_probabilities():
    X, y = load_iris(return_X_y=True)
    kw = dict(n_estimators=8, max_depth=3, early_stopping=False)
    built_in = GradientBoostingClassifier(**kw).fit(X, y)
    custom = GradientBoostingClassifier(loss=softmax, **kw).fit(X, y)
    # the softmax is shift-invariant: the baselines may differ by a constant, the gradients do not
    _same_model(built_in, custom)
    np.testing.assert_allclose(custom.predict_proba(X), built_in.predict_proba(X), atol=1e-10)


def test_baseline_parameter():
    X, y = load_diabetes(return_X_y=True)
    m = GradientBoostingRegressor(loss=squared_error, baseline=100.0, n_estimators=2, early_stopping=False).fit(X, y)
    assert m._baseline.tolist() == [100.0]
    b = GradientBoostingRegressor(baseline=[100.0], n_estimators=2, early_stopping=False).fit(X, y)
    _same_model(m, b)
    with pytest.raises(ValueError, match="baseline must be a finite number or 1"):
        GradientBoostingRegressor(baseline=[1.0, 2.0], n_estimators=2).fit(X, y)
    Xi, yi = load_iris(return_X_y=True)
    c = GradientBoostingClassifier(baseline=0.0, n_estimators=2, early_stopping=False).fit(Xi, yi)
    assert c._baseline.tolist() == [0.0, 0.0, 0.0]


def _fails_in_round(bad_round, kind, baseline_calls=2):
    calls = []

    def loss(y, raw, w):
        g, h = squared_error(y, raw, w)
        calls.append(1)
        # the baseline's Newton steps make 2 calls (the second finds no step), then one call a round
        if len(calls) - baseline_calls - 1 == bad_round:
            if kind == "nan":
                g = g.copy()
                g[3] = np.nan
            elif kind == "negative":
                h = h - 2.0 * h.max()
            elif kind == "shape":
                g = g[:, None]
            elif kind == "tuple":
                return g
        return g, h

    return loss


@pytest.mark.parametrize(
    "kind,match",
    [
        ("nan", r"gradient has NaN or infinite values for boosting round 3 \(0-based\)"),
        ("negative", r"hessian has negative values for boosting round 3"),
        ("shape", r"gradient has shape \(442, 1\), expected \(442,\) .* for boosting round 3"),
        ("tuple", r"must return \(gradient, hessian\).* for boosting round 3"),
    ],
)
@pytest.mark.parametrize("subsample", [1.0, 0.8])
def test_bad_gradients_name_the_round(kind, match, subsample):
    X, y = load_diabetes(return_X_y=True)
    m = GradientBoostingRegressor(loss=_fails_in_round(3, kind), n_estimators=6, early_stopping=False,
                                  subsample=subsample, random_state=0)
    with pytest.raises(ValueError, match=match):
        m.fit(X, y)
    assert not hasattr(m, "_rounds")  # no model kept


def test_bad_baseline_gradients_and_warm_start_round_numbers():
    X, y = load_diabetes(return_X_y=True)
    with pytest.raises(ValueError, match="while finding the baseline"):
        GradientBoostingRegressor(loss=lambda y, r, w: (r - y, -w)).fit(X, y)
    with pytest.raises(ValueError, match="hessian sums to 0"):
        GradientBoostingRegressor(loss=lambda y, r, w: (r - y, 0 * w)).fit(X, y)
    m = GradientBoostingRegressor(loss=squared_error, n_estimators=3, early_stopping=False, warm_start=True).fit(X, y)
    seen = []
    m.set_params(loss=lambda y, r, w: seen.append(1) or (_ for _ in ()).throw(RuntimeError("round")), n_estimators=5)
    with pytest.raises(RuntimeError):
        m.fit(X, y)
    m.set_params(loss=_fails_in_round(1, "nan", baseline_calls=0))  # warm: its 2nd call is round 4 (0-based)
    with pytest.raises(ValueError, match="round 4"):
        m.fit(X, y)
