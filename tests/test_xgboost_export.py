"""export_xgboost_json: the file loads in xgboost and predicts what gputrees predicts."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris

import gputrees
from gputrees._xgboost import split_conditions
from gputrees.datasets import load_titanic

xgb = pytest.importorskip("xgboost")

TOL = 1e-6


def _with_missing(X):
    """X as float32-representable values (what XGBoost reads), with NaN in two columns."""
    X = X.astype(np.float32).astype(np.float64)
    X[::5, 0] = np.nan
    X[2::7, 1] = np.nan
    return X


def _xgb_predict(est, X, tmp_path):
    path = tmp_path / "model.json"
    assert est.export_xgboost_json(path) is est
    booster = xgb.Booster(model_file=str(path))
    dm = xgb.DMatrix(X)
    return booster.predict(dm, output_margin=True), booster.predict(dm)


def test_split_conditions_match_less_or_equal():
    rng = np.random.default_rng(0)
    x = rng.normal(size=20000).astype(np.float32)
    a = np.sort(rng.choice(x, 500))
    thresholds = np.concatenate([a[:-1] / 2 + a[1:] / 2, rng.normal(size=200), a, [np.inf]])
    cond = split_conditions(thresholds)
    assert cond.dtype == np.float32
    ours = x[:, None].astype(np.float64) <= thresholds[None, :]
    theirs = x[:, None] < cond[None, :]
    assert np.array_equal(ours, theirs)


def test_binary_classifier(tmp_path):
    X, y = load_breast_cancer(return_X_y=True)
    X = _with_missing(X)
    est = gputrees.GradientBoostingClassifier(n_estimators=20, max_depth=4).fit(X, y)
    margin, proba = _xgb_predict(est, X, tmp_path)
    np.testing.assert_allclose(margin, est.decision_function(X), rtol=0, atol=TOL)
    np.testing.assert_allclose(proba, est.predict_proba(X)[:, 1], rtol=0, atol=TOL)


def test_multiclass_classifier(tmp_path):
    X, y = load_iris(return_X_y=True)
    X = _with_missing(X)
    est = gputrees.GradientBoostingClassifier(n_estimators=10, max_depth=3).fit(X, y)
    margin, proba = _xgb_predict(est, X, tmp_path)
    assert margin.shape == (X.shape[0], 3)
    np.testing.assert_allclose(margin, est.decision_function(X), rtol=0, atol=TOL)
    np.testing.assert_allclose(proba, est.predict_proba(X), rtol=0, atol=TOL)


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error", "quantile", "poisson", "gamma"])
def test_regressor(loss, tmp_path):
    X, y = load_diabetes(return_X_y=True)
    X = _with_missing(X)
    y = y / 100.0  # O(1) targets: float32 rounding of XGBoost stays below TOL relative
    est = gputrees.GradientBoostingRegressor(loss=loss, n_estimators=15, max_depth=3, alpha=0.3).fit(X, y)
    margin, pred = _xgb_predict(est, X, tmp_path)
    raw = np.log(est.predict(X)) if loss in ("poisson", "gamma") else est.predict(X)
    np.testing.assert_allclose(margin, raw, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(pred, est.predict(X), rtol=TOL, atol=TOL)


def test_feature_names_are_exported(tmp_path):
    data = load_titanic(as_frame=True)
    X = data.data.drop(columns=["Sex", "Embarked"]).astype(np.float32).astype(np.float64)
    est = gputrees.GradientBoostingClassifier(n_estimators=5).fit(X, data.target)
    est.export_xgboost_json(tmp_path / "m.json")
    booster = xgb.Booster(model_file=str(tmp_path / "m.json"))
    assert booster.feature_names == list(X.columns)
    proba = booster.predict(xgb.DMatrix(X))
    np.testing.assert_allclose(proba, est.predict_proba(X)[:, 1], rtol=0, atol=TOL)


def test_refused_models(tmp_path):
    data = load_titanic(as_frame=True)
    est = gputrees.GradientBoostingClassifier(n_estimators=2).fit(data.data, data.target)
    with pytest.raises(ValueError, match="categorical features \\[1, 6\\] cannot be exported"):
        est.export_xgboost_json(tmp_path / "m.json")
    X, y = load_diabetes(return_X_y=True)
    huber = gputrees.GradientBoostingRegressor(loss="huber", n_estimators=2).fit(X, y)
    with pytest.raises(ValueError, match="loss='huber' has no XGBoost objective"):
        huber.export_xgboost_json(tmp_path / "m.json")
    assert not list(tmp_path.iterdir())
