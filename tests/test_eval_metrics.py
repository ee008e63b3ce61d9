"""``eval_metric``: built-in metrics equal scikit-learn's, ``evals_result_``, early stopping on a custom metric."""

from __future__ import annotations

import io

import numpy as np
import pytest
from sklearn import metrics as skm
from sklearn.datasets import load_breast_cancer, load_iris

from gputrees import GradientBoostingClassifier, GradientBoostingRegressor
from gputrees._progress import _losses as _progress_line
from gputrees.metrics import builtin_metric, make_metric


def _check_equal(name, ours_args, theirs, **kw):
    y, p, w = ours_args
    got = float(builtin_metric(name, **kw)(y, p, w))
    np.testing.assert_allclose(got, theirs, rtol=1e-12, atol=1e-15, err_msg=name)


def test_classification_metrics_equal_sklearns():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, size=500).astype(np.float64)
    p = rng.uniform(size=500)
    p[:20] = 0.0  # saturated probabilities: clipped as log_loss clips them
    p[20:40] = 1.0
    p[40:80] = np.round(p[40:80], 1)  # ties for the AUC
    w = rng.integers(0, 4, size=500).astype(np.float64)
    for sw in (np.ones(500), w):
        _check_equal("logloss", (y, p, sw), skm.log_loss(y, p, sample_weight=sw))
        _check_equal("error", (y, p, sw), 1.0 - skm.accuracy_score(y, p > 0.5, sample_weight=sw))
        _check_equal("auc", (y, p, sw), skm.roc_auc_score(y, p, sample_weight=sw))
    # multi-class: (n, K) probabilities
    yk = rng.integers(0, 3, size=500).astype(np.float64)
    pk = rng.dirichlet(np.ones(3), size=500)
    for sw in (np.ones(500), w):
        _check_equal("logloss", (yk, pk, sw), skm.log_loss(yk, pk, sample_weight=sw, labels=[0, 1, 2]))
        _check_equal("error", (yk, pk, sw), 1.0 - skm.accuracy_score(yk, pk.argmax(1), sample_weight=sw))
        _check_equal("auc", (yk, pk, sw), skm.roc_auc_score(yk, pk, sample_weight=sw, multi_class="ovr"))


def test_regression_metrics_equal_sklearns():
    rng = np.random.default_rng(1)
    y = rng.gamma(2.0, size=400)
    y[:30] = 0.0  # zeros for MAPE's and Poisson's special cases
    p = rng.gamma(2.0, size=400) + 0.1
    w = rng.integers(0, 4, size=400).astype(np.float64)
    pos = y > 0
    for sw in (np.ones(400), w):
        _check_equal("rmse", (y, p, sw), skm.root_mean_squared_error(y, p, sample_weight=sw))
        _check_equal("mse", (y, p, sw), skm.mean_squared_error(y, p, sample_weight=sw))
        _check_equal("mae", (y, p, sw), skm.mean_absolute_error(y, p, sample_weight=sw))
        _check_equal("mape", (y, p, sw), skm.mean_absolute_percentage_error(y, p, sample_weight=sw))
        _check_equal("quantile", (y, p, sw), skm.mean_pinball_loss(y, p, alpha=0.3, sample_weight=sw), alpha=0.3)
        _check_equal("poisson", (y, p, sw), skm.mean_poisson_deviance(y, p, sample_weight=sw))
        _check_equal("gamma", (y[pos], p[pos], sw[pos]), skm.mean_gamma_deviance(y[pos], p[pos], sample_weight=sw[pos]))
        _check_equal("r2", (y, p, sw), skm.r2_score(y, p, sample_weight=sw))


def test_evals_result_holds_every_metric_of_every_set_each_round():
    X, y = load_breast_cancer(return_X_y=True)
    X, y, Xa, ya, Xb, yb = X[:300], y[:300], X[300:450], y[300:450], X[450:], y[450:]
    wb = np.arange(len(yb)) % 3 + 1.0
    m = GradientBoostingClassifier(n_estimators=6, max_depth=3, early_stopping=False,
                                   eval_metric=["logloss", "error", "auc"])
    m.fit(X, y, eval_set=[(Xa, ya), (Xb, yb)], eval_sample_weight=[None, wb])
    assert list(m.evals_result_) == ["validation_0", "validation_1"]
    for key, Xv, yv, wv in (("validation_0", Xa, ya, None), ("validation_1", Xb, yb, wb)):
        res = m.evals_result_[key]
        assert list(res) == ["logloss", "error", "auc"] and all(len(v) == 6 for v in res.values())
        for r, proba in enumerate(m.staged_predict_proba(Xv)):
            np.testing.assert_allclose(res["logloss"][r], skm.log_loss(yv, proba, sample_weight=wv), rtol=1e-10)
            np.testing.assert_allclose(res["auc"][r], skm.roc_auc_score(yv, proba[:, 1], sample_weight=wv), rtol=1e-10)
            acc = skm.accuracy_score(yv, m.classes_[proba.argmax(1)], sample_weight=wv)
            np.testing.assert_allclose(res["error"][r], 1.0 - acc, rtol=1e-10)
    # the stopping score is the last metric (greater is better) on the last set, baseline first
    np.testing.assert_allclose(m.validation_score_[1:], m.evals_result_["validation_1"]["auc"])


def test_default_metric_is_the_loss():
    X, y = load_iris(return_X_y=True)
    m = GradientBoostingClassifier(n_estimators=4, early_stopping=False).fit(X, y, eval_set=[(X, y)])
    np.testing.assert_allclose(m.evals_result_["validation_0"]["loss"], -m.validation_score_[1:])
    np.testing.assert_allclose(m.validation_score_, m.train_score_, rtol=1e-12)


@pytest.mark.parametrize("greater", [False, True])
def test_early_stopping_on_a_custom_metric_stops_where_the_curve_says(greater):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(300, 3))
    y = X[:, 0] + rng.normal(scale=1.0, size=300)
    Xv = rng.uniform(size=(300, 3))
    yv = Xv[:, 0] + rng.normal(scale=1.0, size=300)

    def median_abs(y_true, y_pred, sample_weight):  # a metric no loss of the fit is
        return float(np.median(np.abs(y_true - y_pred)))

    metric = make_metric(lambda a, b, w: -median_abs(a, b, w), greater_is_better=True, name="neg_med") if greater \
        else median_abs
    params = dict(n_estimators=150, learning_rate=0.3, max_depth=4, min_samples_leaf=1, n_iter_no_change=5, tol=0.0,
                  eval_metric=metric)
    full = GradientBoostingRegressor(early_stopping=False, **params).fit(X, y, eval_set=[(Xv, yv)])
    # the curve by hand: the metric of each staged prediction, the baseline first
    curve = [median_abs(yv, np.full_like(yv, full._baseline[0]), None)]
    curve += [median_abs(yv, p, None) for p in full.staged_predict(Xv)]
    scores = -np.asarray(curve)
    np.testing.assert_allclose(full.validation_score_, scores, rtol=1e-12)
    stop = next(i for i in range(6, len(scores)) if not np.any(scores[i - 4 : i + 1] > scores[i - 5]))
    assert stop < 100
    es = GradientBoostingRegressor(early_stopping=True, **params).fit(X, y, eval_set=[(Xv, yv)])
    assert len(es.validation_score_) == stop + 1
    best = int(np.argmax(scores[1 : stop + 1]))
    assert es.best_iteration_ == best and es.n_iter_ == best + 1
    name = "neg_med" if greater else "median_abs"
    assert len(es.evals_result_["validation_0"][name]) == stop


@pytest.mark.parametrize(
    "est,metric,match",
    [
        (GradientBoostingRegressor, "auc", "not one of"),
        (GradientBoostingClassifier, "rmse", "not one of"),
        (GradientBoostingRegressor, [], "empty list"),
        (GradientBoostingRegressor, [3], "names or callables"),
        (GradientBoostingRegressor, ["mae", make_metric(len, name="mae")], "repeat a name"),
    ],
)
def test_bad_eval_metric(est, metric, match):
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match=match):
        est(n_estimators=2, eval_metric=metric).fit(X, y, eval_set=[(X, y)])


def test_warm_start_keeps_metric_history_and_refuses_a_new_metric():
    X, y = load_breast_cancer(return_X_y=True)
    m = GradientBoostingClassifier(n_estimators=3, early_stopping=False, eval_metric="auc", warm_start=True)
    m.fit(X, y, eval_set=[(X, y)])
    m.set_params(n_estimators=5).fit(X, y, eval_set=[(X, y)])
    assert len(m.evals_result_["validation_0"]["auc"]) == 5
    with pytest.raises(ValueError, match="differs from the first fit"):
        m.set_params(n_estimators=6, eval_metric="logloss").fit(X, y, eval_set=[(X, y)])



def test_progress_names_scores_and_losses():
    from gputrees.callbacks import Logger

    X, y = load_breast_cancer(return_X_y=True)
    for kw, train, valid in (({}, "train loss", "valid loss"), ({"eval_metric": "auc"}, "train loss", "valid score"),
                             ({"loss": lambda y, r, w: (r - y, w)}, "train score", "valid score")):
        log = Logger(stream=io.StringIO())
        GradientBoostingClassifier(n_estimators=2, early_stopping=False, callbacks=[log], **kw).fit(
            X, y, eval_set=[(X, y)])
        line = _progress_line(log.history[-1])
        assert train in line and valid in line, line
