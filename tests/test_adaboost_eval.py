"""AdaBoost's validation sets: eval_set, eval_sample_weight, eval_metric, evals_result_, early stopping."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from sklearn.metrics import accuracy_score, log_loss, mean_absolute_error, roc_auc_score, root_mean_squared_error
from sklearn.tree import DecisionTreeClassifier as SkTree

import gputrees
from gputrees._boost import EarlyStopping


def _cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return X[:400], y[:400], X[400:], y[400:]


def _weights(n, seed=0):
    return np.random.default_rng(seed).integers(1, 4, n).astype(np.float64)


@pytest.mark.parametrize("estimator", [None, SkTree(max_depth=1)], ids=["gputrees", "sklearn"])
def test_classifier_metrics_are_sklearns_after_every_learner(estimator):
    Xt, yt, Xv, yv = _cancer()
    wv = _weights(len(yv))
    model = gputrees.AdaBoostClassifier(estimator, n_estimators=25, random_state=0,
                                        eval_metric=["error", "logloss", "auc"])
    model.fit(Xt, yt, eval_set=[(Xt, yt), (Xv, yv)], eval_sample_weight=[None, wv])
    assert set(model.evals_result_) == {"validation_0", "validation_1"}
    got = model.evals_result_["validation_1"]
    proba = list(model.staged_predict_proba(Xv))
    assert len(got["error"]) == len(model.estimators_) == len(proba)
    np.testing.assert_allclose(got["error"], [1 - accuracy_score(yv, p, sample_weight=wv)
                                              for p in model.staged_predict(Xv)], atol=1e-12)
    np.testing.assert_allclose(got["logloss"], [log_loss(yv, p, sample_weight=wv) for p in proba], rtol=1e-10)
    np.testing.assert_allclose(got["auc"], [roc_auc_score(yv, p[:, 1], sample_weight=wv) for p in proba],
                               rtol=1e-10)
    train = model.evals_result_["validation_0"]["error"]
    np.testing.assert_allclose(train, [1 - accuracy_score(yt, p) for p in model.staged_predict(Xt)], atol=1e-12)


def test_multiclass_probabilities_and_a_callable_metric():
    X, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    X, y = X[order], y[order]
    calls = []

    def worst_class_error(y_true, proba, w):
        calls.append(proba.shape)
        pred = np.argmax(proba, axis=1)
        return max(float(np.mean(pred[y_true == c] != c)) for c in range(3))

    model = gputrees.AdaBoostClassifier(n_estimators=10, random_state=0,
                                        eval_metric=["logloss", worst_class_error])
    model.fit(X[:100], y[:100], eval_set=[(X[100:], y[100:])])
    got = model.evals_result_["validation_0"]
    np.testing.assert_allclose(got["logloss"], [log_loss(y[100:], p, labels=[0, 1, 2])
                                                for p in model.staged_predict_proba(X[100:])], rtol=1e-10)
    assert calls and all(shape == (50, 3) for shape in calls)
    assert len(got["worst_class_error"]) == len(model.estimators_)


def test_regressor_metrics_are_sklearns_after_every_learner():
    X, y = load_diabetes(return_X_y=True)
    wv = _weights(142, seed=1)
    model = gputrees.AdaBoostRegressor(n_estimators=15, random_state=0, eval_metric=["rmse", "mae"])
    model.fit(X[:300], y[:300], eval_set=[(X[300:], y[300:])], eval_sample_weight=[wv])
    got = model.evals_result_["validation_0"]
    preds = list(model.staged_predict(X[300:]))
    np.testing.assert_allclose(got["rmse"], [root_mean_squared_error(y[300:], p, sample_weight=wv) for p in preds],
                               rtol=1e-10)
    np.testing.assert_allclose(got["mae"], [mean_absolute_error(y[300:], p, sample_weight=wv) for p in preds],
                               rtol=1e-10)


@pytest.mark.parametrize("make", [
    lambda: gputrees.AdaBoostClassifier(n_estimators=150, learning_rate=0.5, random_state=0, eval_metric="logloss",
                                        early_stopping=True, n_iter_no_change=4),
    lambda: gputrees.AdaBoostRegressor(n_estimators=60, random_state=0, early_stopping=True, n_iter_no_change=3),
], ids=["classifier", "regressor"])
def test_a_weighted_set_stops_as_its_rows_repeated(make):
    """Integer weights count a row that many times: the same values and the same stop as the repeated rows."""
    Xt, yt, Xv, yv = _cancer()
    if "Regressor" in type(make()).__name__:
        yt, yv = Xt[:, 0] + Xt[:, 1], Xv[:, 0] + Xv[:, 1]
    wv = _weights(len(yv), seed=2)
    weighted = make().fit(Xt, yt, eval_set=[(Xv, yv)], eval_sample_weight=[wv])
    reps = wv.astype(int)
    repeated = make().fit(Xt, yt, eval_set=[(np.repeat(Xv, reps, axis=0), np.repeat(yv, reps))])
    assert len(weighted.estimators_) == len(repeated.estimators_) < make().n_estimators
    for name, values in weighted.evals_result_["validation_0"].items():
        np.testing.assert_allclose(values, repeated.evals_result_["validation_0"][name], rtol=1e-12)


def test_early_stopping_stops_where_the_curve_says():
    Xt, yt, Xv, yv = _cancer()
    kw = dict(n_estimators=120, learning_rate=0.5, random_state=0, eval_metric="logloss")
    full = gputrees.AdaBoostClassifier(**kw).fit(Xt, yt, eval_set=[(Xv, yv)])
    curve = [-v for v in full.evals_result_["validation_0"]["logloss"]]  # greater is better
    rule = EarlyStopping(n_iter_no_change=5, tol=1e-7)
    expected = next(t for t in range(1, len(curve) + 1) if rule.should_stop(curve[:t]))
    stopped = gputrees.AdaBoostClassifier(**kw, early_stopping=True, n_iter_no_change=5).fit(
        Xt, yt, eval_set=[(Xv, yv)])
    assert len(stopped.estimators_) == expected < len(full.estimators_)
    np.testing.assert_array_equal(stopped.evals_result_["validation_0"]["logloss"],
                                  full.evals_result_["validation_0"]["logloss"][:expected])
    np.testing.assert_array_equal(stopped.predict(Xv), list(full.staged_predict(Xv))[expected - 1])


def test_without_an_eval_set_there_is_no_result():
    Xt, yt, Xv, yv = _cancer()
    model = gputrees.AdaBoostClassifier(n_estimators=3).fit(Xt, yt, eval_set=[(Xv, yv)])
    assert hasattr(model, "evals_result_")
    model.fit(Xt, yt)
    assert not hasattr(model, "evals_result_")


def test_bad_eval_sets_are_named():
    Xt, yt, Xv, yv = _cancer()
    clf = gputrees.AdaBoostClassifier(n_estimators=3)
    with pytest.raises(ValueError, match="without an eval_set"):
        clf.fit(Xt, yt, eval_sample_weight=[np.ones(len(yv))])
    with pytest.raises(ValueError, match="early_stopping=True watches an eval_set"):
        gputrees.AdaBoostClassifier(n_estimators=3, early_stopping=True).fit(Xt, yt)
    with pytest.raises(ValueError, match="AdaBoost has no loss"):
        gputrees.AdaBoostClassifier(n_estimators=3, eval_metric="loss").fit(Xt, yt, eval_set=[(Xv, yv)])
    with pytest.raises(ValueError, match="not one of"):
        gputrees.AdaBoostRegressor(n_estimators=3, eval_metric="auc").fit(Xt, yt, eval_set=[(Xv, yv)])
    with pytest.raises(ValueError, match=r"labels \[7\] not in the training classes"):
        clf.fit(Xt, yt, eval_set=[(Xv, np.where(yv == 1, 7, 0))])
    with pytest.raises(ValueError, match="one weight vector"):
        clf.fit(Xt, yt, eval_set=[(Xv, yv)], eval_sample_weight=[None, None])
    with pytest.raises(ValueError, match="eval_sample_weight"):
        clf.fit(Xt, yt, eval_set=[(Xv, yv)], eval_sample_weight=[np.ones(3)])
    with pytest.raises(ValueError, match="pairs"):
        clf.fit(Xt, yt, eval_set=[Xv])
