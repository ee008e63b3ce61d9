"""Validation sets of gradient boosting: per-row weights (``eval_sample_weight``)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from gputrees import GradientBoostingClassifier, GradientBoostingRegressor


def _noisy_regression(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(300, 3))
    y = X[:, 0] + rng.normal(scale=1.0, size=300)
    Xv = rng.uniform(size=(200, 3))
    yv = Xv[:, 0] + rng.normal(scale=1.0, size=200)
    return X, y, Xv, yv


@pytest.mark.parametrize("task", ["regression", "binary"])
def test_weighted_eval_set_stops_as_its_rows_repeated(task):
    """Integer weights count a row that many times: the same validation curve, stop and best round."""
    rng = np.random.default_rng(1)
    if task == "regression":
        X, y, Xv, yv = _noisy_regression()
        est = GradientBoostingRegressor
    else:
        Xa, ya = load_breast_cancer(return_X_y=True)
        X, y, Xv, yv = Xa[:300], ya[:300], Xa[300:], ya[300:]
        est = GradientBoostingClassifier
    wv = rng.integers(0, 4, size=len(yv))  # zeros included: those rows do not count
    Xr, yr = np.repeat(Xv, wv, axis=0), np.repeat(yv, wv)
    params = dict(n_estimators=200, learning_rate=0.3, max_depth=4, min_samples_leaf=1, n_iter_no_change=5,
                  tol=0.0, early_stopping=True, random_state=0)
    weighted = est(**params).fit(X, y, eval_set=[(Xv, yv)], eval_sample_weight=[wv])
    repeated = est(**params).fit(X, y, eval_set=[(Xr, yr)])
    unweighted = est(**params).fit(X, y, eval_set=[(Xv, yv)])
    assert weighted.n_iter_ < 200  # it does stop early
    assert len(weighted.validation_score_) == len(repeated.validation_score_)
    np.testing.assert_allclose(weighted.validation_score_, repeated.validation_score_, rtol=1e-12)
    assert weighted.best_iteration_ == repeated.best_iteration_ and weighted.n_iter_ == repeated.n_iter_
    # the weights matter: without them the curve differs
    m = min(len(unweighted.validation_score_), len(weighted.validation_score_))
    assert not np.allclose(unweighted.validation_score_[:m], weighted.validation_score_[:m])


def test_eval_sample_weight_none_entries_and_several_sets():
    X, y, Xv, yv = _noisy_regression()
    params = dict(n_estimators=5, early_stopping=False)
    a = GradientBoostingRegressor(**params).fit(X, y, eval_set=[(Xv, yv), (X, y)], eval_sample_weight=[None, None])
    b = GradientBoostingRegressor(**params).fit(X, y, eval_set=[(Xv, yv), (X, y)])
    np.testing.assert_array_equal(a.validation_score_, b.validation_score_)


@pytest.mark.parametrize(
    "fit_kw,match",
    [
        (dict(eval_sample_weight=[np.ones(200)]), "without an eval_set"),
        (dict(eval_set="v", eval_sample_weight=[np.ones(200)]), "pairs"),
        (dict(eval_set="v", eval_sample_weight=np.ones(200)), "one weight vector"),
        (dict(eval_set="v", eval_sample_weight=[np.ones(199)]), "eval_sample_weight: sample_weight.shape"),
        (dict(eval_set="v", eval_sample_weight=[-np.ones(200)]), "eval_sample_weight: .*negative"),
        (dict(eval_set="v", eval_sample_weight=[np.zeros(200)]), "eval_sample_weight: .*zero for every"),
    ],
)
def test_bad_eval_sample_weight(fit_kw, match):
    X, y, Xv, yv = _noisy_regression()
    if fit_kw.get("eval_set") == "v":
        fit_kw = {**fit_kw, "eval_set": [(Xv, yv)]}
    if match == "pairs":
        fit_kw = {**fit_kw, "eval_set": []}
    with pytest.raises(ValueError, match=match):
        GradientBoostingRegressor(n_estimators=2).fit(X, y, **fit_kw)
