"""AdaBoostClassifier (discrete AdaBoost / SAMME) and AdaBoostRegressor (AdaBoost.R2).

Weight convention: ``estimator_weights_`` holds the course's ``w_t = 1/2
ln((1 - err_t) / err_t)`` (plus ``1/2 ln(K - 1)`` for K classes), half of
scikit-learn's ``ln((1 - err_t) / err_t) + ln(K - 1)``; learners, row
weights, predictions and probabilities are scikit-learn's.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris, make_friedman1
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import AdaBoostClassifier as SkAdaBoostClassifier
from sklearn.ensemble import AdaBoostRegressor as SkAdaBoostRegressor
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.tree import DecisionTreeClassifier as SkDecisionTreeClassifier
from sklearn.tree import DecisionTreeRegressor as SkDecisionTreeRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

import gputrees
from conftest import to_numpy
from gputrees import AdaBoostClassifier, AdaBoostRegressor, DecisionTreeClassifier, DecisionTreeRegressor
from gputrees._weight_boosting import _weighted_bootstrap

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "adaboost_toy.py"
HAS_MPL = importlib.util.find_spec("matplotlib") is not None

#: exact binning: the stumps split where scikit-learn's do
EXACT = dict(max_bins=65535)


@pytest.fixture(scope="module")
def cancer():
    return load_breast_cancer(return_X_y=True)


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


@pytest.fixture(scope="module")
def diabetes():
    return load_diabetes(return_X_y=True)


# --------------------------------------------------------------------------
# the course's toy example, by hand
# --------------------------------------------------------------------------

#: Ten points, 6 positive and 4 negative (examples/adaboost_toy.py; the
#: course slides give no coordinates). Gini stumps misclassify 3 points in
#: each of three rounds, as in Freund and Schapire's tutorial figure.
TOY_X = np.array(
    [[7, 2], [5, 4], [10, 5], [2, 8], [1, 3], [3, 9], [4, 1], [6, 7], [9, 6], [8, 10]], dtype=np.float64
)
TOY_Y = np.array([1, 1, 1, 1, 1, 1, -1, -1, -1, -1])


def _toy_by_hand():
    """Each round's misclassified rows, error, learner weight and row weights, with the course's formulas."""
    m = 10
    alpha = [1.0 / m] * m  # "start same weight for all points: 1/m"
    # the stumps (axis-parallel lines), read off the picture of the points:
    #   h1: +1 iff x <= 3.5   misses the positives at rows 0, 1, 2 (x = 7, 5, 10)
    #   h2: +1 iff y <= 5.5   misses rows 3, 5 (positives above) and 6 (negative below)
    #   h3: -1 iff y <= 1.5   misses the negatives at rows 7, 8, 9 (y = 7, 6, 10)
    missed = [[0, 1, 2], [3, 5, 6], [7, 8, 9]]
    rounds = []
    for wrong in missed:
        err = sum(alpha[i] for i in wrong)
        w = 0.5 * math.log((1 - err) / err)
        rounds.append({"alpha": list(alpha), "missed": wrong, "err": err, "w": w})
        # "alpha_i * e^{w} if misclassified, alpha_i * e^{-w} if correct; normalise"
        alpha = [a * math.exp(w) if i in wrong else a * math.exp(-w) for i, a in enumerate(alpha)]
        total = sum(alpha)
        alpha = [a / total for a in alpha]
    return rounds


def test_toy_example_matches_the_course_by_hand():
    hand = _toy_by_hand()
    # the hand arithmetic itself, in fractions: 3/10, then 3 x 1/14, then 3 x 1/22
    assert [r["err"] for r in hand] == pytest.approx([3 / 10, 3 / 14, 3 / 22], rel=1e-14)
    assert hand[1]["alpha"] == pytest.approx([1 / 6] * 3 + [1 / 14] * 7, rel=1e-14)
    assert hand[2]["alpha"] == pytest.approx(
        [7 / 66, 7 / 66, 7 / 66, 1 / 6, 1 / 22, 1 / 6, 1 / 6, 1 / 22, 1 / 22, 1 / 22], rel=1e-14
    )
    assert [r["w"] for r in hand] == pytest.approx(
        [0.5 * math.log(7 / 3), 0.5 * math.log(11 / 3), 0.5 * math.log(19 / 3)], rel=1e-14
    )
    # w_1 = 1/2 ln(7/3) "about 0.42" (tutorial: 0.42, 0.65, 0.92)
    assert [round(r["w"], 2) for r in hand] == [0.42, 0.65, 0.92]

    model = AdaBoostClassifier(n_estimators=3).fit(TOY_X, TOY_Y)  # default weak learner: a gputrees stump
    assert all(isinstance(e, DecisionTreeClassifier) and e.get_depth() == 1 for e in model.estimators_)
    np.testing.assert_allclose(model.estimator_errors_, [r["err"] for r in hand], rtol=1e-12)
    np.testing.assert_allclose(model.estimator_weights_, [r["w"] for r in hand], rtol=1e-12)
    staged = list(model.staged_sample_weight(TOY_X, TOY_Y))
    assert len(staged) == 3
    for t, (stump, r, rw) in enumerate(zip(model.estimators_, hand, staged)):
        np.testing.assert_allclose(rw, r["alpha"], rtol=1e-12, err_msg=f"round {t + 1}")
        wrong = np.flatnonzero(stump.predict(TOY_X) != TOY_Y)
        assert wrong.tolist() == r["missed"], f"round {t + 1}"
        # the stump was grown with these row weights: its leaves hold their sums
        tree = stump.tree_
        leaf_of_row = stump.apply(TOY_X)
        for leaf in (tree.children_left[0], tree.children_right[0]):
            expected = sum(a for a, lf in zip(r["alpha"], leaf_of_row) if lf == leaf)
            assert tree.weighted_n_node_samples[leaf] == pytest.approx(expected, rel=1e-12)
    rules = [(e.tree_.feature[0], e.tree_.threshold[0]) for e in model.estimators_]
    assert rules == [(0, 3.5), (1, 5.5), (1, 1.5)]

    # the combined classifier: sign(w1 h1 + w2 h2 + w3 h3), every point right
    h = np.stack([e.predict(TOY_X) for e in model.estimators_])  # +-1
    F = sum(r["w"] * h[t] for t, r in enumerate(hand))
    np.testing.assert_array_equal(np.sign(F), TOY_Y)
    np.testing.assert_array_equal(model.predict(TOY_X), TOY_Y)
    # decision_function = 2 F / sum(w) (scikit-learn's normalisation), its sign the course's
    np.testing.assert_allclose(model.decision_function(TOY_X), 2 * F / sum(r["w"] for r in hand), rtol=1e-12)


def test_toy_example_same_as_sklearn_up_to_the_factor_two():
    ours = AdaBoostClassifier(n_estimators=3).fit(TOY_X, TOY_Y)
    theirs = SkAdaBoostClassifier(SkDecisionTreeClassifier(max_depth=1), n_estimators=3).fit(TOY_X, TOY_Y)
    np.testing.assert_allclose(theirs.estimator_weights_, 2 * ours.estimator_weights_, rtol=1e-12)
    np.testing.assert_allclose(theirs.estimator_errors_, ours.estimator_errors_, rtol=1e-12)


def _load_example():
    spec = importlib.util.spec_from_file_location("example_adaboost_toy", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_toy_example_script(tmp_path, capsys):
    module = _load_example()
    np.testing.assert_array_equal(module.X, TOY_X)
    np.testing.assert_array_equal(module.Y, TOY_Y)
    out = module.main(["--out", str(tmp_path / "toy.png")])
    hand = _toy_by_hand()
    np.testing.assert_allclose(out["errors"], [r["err"] for r in hand], rtol=1e-12)
    np.testing.assert_allclose(out["weights"], [r["w"] for r in hand], rtol=1e-12)
    for rw, r in zip(out["row_weights"], hand):
        np.testing.assert_allclose(rw, r["alpha"], rtol=1e-12)
    assert out["misclassified"] == [r["missed"] for r in hand]
    assert out["stumps"] == [(0, 3.5, 1, -1), (1, 5.5, 1, -1), (1, 1.5, -1, 1)]
    assert out["train_accuracy"] == 1.0
    text = capsys.readouterr().out
    assert "w_1 = 1/2 ln((1 - err_1) / err_1) = 1/2 ln(7/3) = 0.4236" in text
    assert "w_2 = 1/2 ln((1 - err_2) / err_2) = 1/2 ln(11/3) = 0.6496" in text
    assert "w_3 = 1/2 ln((1 - err_3) / err_3) = 1/2 ln(19/3) = 0.9229" in text
    assert "err_1 = 0.3000 = 3/10" in text and "err_3 = 0.1364 = 3/22" in text
    assert "sign(0.42 * h_1(x) + 0.65 * h_2(x) + 0.92 * h_3(x))" in text
    assert (tmp_path / "toy.png").is_file() == HAS_MPL
    assert out["picture"] == (str(tmp_path / "toy.png") if HAS_MPL else None)
    # a folder as --out: adaboost_toy.png in it
    module.main(["--out", str(tmp_path / "pics")])
    assert (tmp_path / "pics" / "adaboost_toy.png").is_file() == HAS_MPL


def test_toy_example_without_matplotlib(tmp_path, monkeypatch, capsys):
    module = _load_example()
    monkeypatch.setattr(module, "pyplot", lambda: None)
    out = module.main(["--out", str(tmp_path / "toy.png")])
    assert out["picture"] is None
    assert list(tmp_path.iterdir()) == []
    assert "matplotlib is not installed" in capsys.readouterr().out


# --------------------------------------------------------------------------
# same as scikit-learn
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dataset", ["cancer", "iris"])
def test_stumps_same_as_sklearn(dataset, request):
    """Breast cancer (2 classes) and iris (3 classes, SAMME): every round's stump
    splits the training rows as scikit-learn's, so the learner weights are
    scikit-learn's / 2 and the predictions are equal. (On iris, petal length
    and petal width separate setosa equally well: scikit-learn picks one by
    its random feature order, gputrees the lower index; same partition.)"""
    X, y = request.getfixturevalue(dataset)
    ours = AdaBoostClassifier(DecisionTreeClassifier(max_depth=1, **EXACT), n_estimators=50).fit(X, y)
    theirs = SkAdaBoostClassifier(SkDecisionTreeClassifier(max_depth=1), n_estimators=50, random_state=0).fit(X, y)
    assert len(ours.estimators_) == len(theirs.estimators_) == 50
    for a, b in zip(ours.estimators_, theirs.estimators_):
        np.testing.assert_array_equal(a.predict(X), b.predict(X))
        if dataset == "cancer":
            assert a.tree_.feature[0] == b.tree_.feature[0]
            # scikit-learn's thresholds are midpoints of float32 values
            assert a.tree_.threshold[0] == pytest.approx(b.tree_.threshold[0], rel=1e-6)
    np.testing.assert_allclose(ours.estimator_weights_, theirs.estimator_weights_ / 2, rtol=1e-10)
    np.testing.assert_allclose(ours.estimator_errors_, theirs.estimator_errors_, rtol=1e-10)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    np.testing.assert_allclose(ours.decision_function(X), theirs.decision_function(X), atol=1e-12)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-12)
    for a, b in zip(ours.staged_predict(X), theirs.staged_predict(X)):
        np.testing.assert_array_equal(a, b)
    if dataset == "cancer":
        np.testing.assert_allclose(ours.feature_importances_, theirs.feature_importances_, atol=1e-12)


def test_multiclass_samme_weights(iris):
    X, y = iris
    model = AdaBoostClassifier(n_estimators=10, learning_rate=0.5).fit(X, y)
    assert model.n_classes_ == 3
    err = model.estimator_errors_
    np.testing.assert_allclose(model.estimator_weights_, 0.5 * 0.5 * (np.log((1 - err) / err) + np.log(2)), rtol=1e-12)
    dec = model.decision_function(X)
    assert dec.shape == (150, 3)
    # each learner votes w for its class and -w/2 for the other two: rows sum to 0
    np.testing.assert_allclose(dec.sum(axis=1), 0.0, atol=1e-12)
    np.testing.assert_array_equal(model.predict(X), np.argmax(dec, axis=1))
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(np.argmax(proba, axis=1), model.predict(X))
    assert model.score(X, y) > 0.9


def test_sklearn_estimator_as_weak_learner(cancer):
    X, y = cancer
    learner = SkDecisionTreeClassifier(max_depth=1)
    ours = AdaBoostClassifier(learner, n_estimators=20, random_state=0).fit(X, y)
    theirs = SkAdaBoostClassifier(learner, n_estimators=20, random_state=0).fit(X, y)
    assert all(isinstance(e, SkDecisionTreeClassifier) for e in ours.estimators_)
    assert [e.random_state for e in ours.estimators_] == [e.random_state for e in theirs.estimators_]
    np.testing.assert_allclose(ours.estimator_weights_, theirs.estimator_weights_ / 2, rtol=1e-12)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-12)


@pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning")  # scikit-learn's log(0)
def test_sample_weight_same_as_sklearn(cancer):
    X, y = cancer
    w = np.random.default_rng(0).uniform(0.2, 3.0, len(y))
    w[:40] = 0.0  # rows of weight 0 take no part
    ours = AdaBoostClassifier(DecisionTreeClassifier(max_depth=1, **EXACT), n_estimators=30).fit(X, y, w)
    theirs = SkAdaBoostClassifier(SkDecisionTreeClassifier(max_depth=1), n_estimators=30).fit(X, y, w)
    np.testing.assert_allclose(ours.estimator_weights_, theirs.estimator_weights_ / 2, rtol=1e-10)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    # weight 0 is the same as leaving the rows out
    cut = AdaBoostClassifier(DecisionTreeClassifier(max_depth=1, **EXACT), n_estimators=30).fit(X[40:], y[40:], w[40:])
    np.testing.assert_allclose(ours.estimator_weights_, cut.estimator_weights_, rtol=1e-12)
    np.testing.assert_array_equal(ours.predict(X), cut.predict(X))


def test_integer_sample_weight_is_repeating_rows(iris):
    X, y = iris
    reps = np.random.default_rng(1).integers(1, 4, len(y))
    weighted = AdaBoostClassifier(n_estimators=15).fit(X, y, sample_weight=reps)
    repeated = AdaBoostClassifier(n_estimators=15).fit(np.repeat(X, reps, axis=0), np.repeat(y, reps))
    np.testing.assert_allclose(weighted.estimator_weights_, repeated.estimator_weights_, rtol=1e-10)
    np.testing.assert_array_equal(weighted.predict(X), repeated.predict(X))


def test_string_labels(cancer):
    X, y = cancer
    names = np.array(["malignant", "benign"])[y]
    ints = AdaBoostClassifier(n_estimators=10).fit(X, y)
    strs = AdaBoostClassifier(n_estimators=10).fit(X, names)
    np.testing.assert_array_equal(strs.classes_, ["benign", "malignant"])
    # "benign" sorts first, so the classes are swapped and the decision flips sign
    np.testing.assert_array_equal(strs.predict(X), np.array(["malignant", "benign"])[ints.predict(X)])
    np.testing.assert_allclose(strs.decision_function(X), -ints.decision_function(X), atol=1e-12)
    np.testing.assert_allclose(strs.estimator_weights_, ints.estimator_weights_, rtol=1e-12)
    assert strs.score(X, names) == ints.score(X, y)


def test_binned_rounds_equal_refitting_a_tree_each_round():
    """Binning once (``_bin_once`` / ``_fit_binned``) grows the trees a plain fit
    with the round's weights grows: NaN, a categorical column, class_weight."""
    rng = np.random.default_rng(3)
    n = 300
    X = rng.standard_normal((n, 4))
    X[:, 1] = rng.integers(0, 5, n)
    y = (X[:, 0] + np.isin(X[:, 1], [1, 3]) + 0.5 * rng.standard_normal(n) > 0.8).astype(int)
    X[rng.random((n, 4)) < 0.1] = np.nan
    learner = DecisionTreeClassifier(max_depth=2, categorical_features=[1], class_weight="balanced")
    model = AdaBoostClassifier(learner, n_estimators=6).fit(X, y)
    w = np.full(n, 1.0 / n)
    for t in range(6):
        tree = DecisionTreeClassifier(**learner.get_params()).fit(X, y, sample_weight=w)
        wrong = tree.predict(X) != y
        err = w[wrong].sum() / w.sum()
        w_t = 0.5 * math.log((1 - err) / err)
        assert model.estimator_errors_[t] == pytest.approx(err, rel=1e-10)
        assert model.estimator_weights_[t] == pytest.approx(w_t, rel=1e-10)
        np.testing.assert_array_equal(model.estimators_[t].predict(X), tree.predict(X))
        np.testing.assert_allclose(model.estimators_[t].tree_.value, tree.tree_.value, rtol=1e-10)
        w = w * np.exp(np.where(wrong, w_t, -w_t))
        w = w / w.sum()


def test_regressor_round_is_a_tree_on_the_bootstrap_rows(diabetes):
    """Draw counts as row multiplicities grow the tree scikit-learn's AdaBoost
    fits on the repeated rows (same draws: one seed for the learner, then the
    weighted bootstrap). Exact bins: with the default max_bins=255, a feature
    of more distinct values is split at the quantile edges of all the
    training rows (binned once), not of each sample."""
    X, y = diabetes
    model = AdaBoostRegressor(DecisionTreeRegressor(max_depth=3, **EXACT), n_estimators=1, random_state=7).fit(X, y)
    rs = np.random.RandomState(7)
    seed = rs.randint(np.iinfo(np.int32).max)
    idx = rs.choice(np.arange(len(y)), size=len(y), replace=True, p=np.full(len(y), 1.0 / len(y)))
    tree = DecisionTreeRegressor(max_depth=3, random_state=seed, **EXACT).fit(X[idx], y[idx])
    np.testing.assert_allclose(model.estimators_[0].tree_.threshold, tree.tree_.threshold, rtol=1e-12)
    assert model.estimators_[0].random_state == seed
    np.testing.assert_allclose(model.estimators_[0].predict(X), tree.predict(X), rtol=1e-12)
    np.testing.assert_array_equal(model.estimators_[0].tree_.n_node_samples[0], len(y))


# --------------------------------------------------------------------------
# early stopping
# --------------------------------------------------------------------------


def test_perfect_learner_stops():
    X = np.array([[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]])
    y = np.array([0, 0, 0, 1, 1, 1])
    model = AdaBoostClassifier(n_estimators=10).fit(X, y)
    assert len(model.estimators_) == 1
    np.testing.assert_array_equal(model.estimator_errors_, [0.0])
    # err = 0 would give an infinite weight: scikit-learn's 1, i.e. 1/2 in the course's units
    np.testing.assert_array_equal(model.estimator_weights_, [0.5])
    np.testing.assert_array_equal(model.predict(X), y)
    theirs = SkAdaBoostClassifier(SkDecisionTreeClassifier(max_depth=1), n_estimators=10).fit(X, y)
    assert len(theirs.estimators_) == 1 and theirs.estimator_weights_[0] == 1.0


def test_chance_level_first_learner_raises():
    # XOR: every stump errs on half the weight
    X = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
    y = np.array([0, 0, 1, 1])
    with pytest.raises(ValueError, match="worse than random"):
        AdaBoostClassifier().fit(X, y)
    with pytest.raises(ValueError, match="worse than random"):
        SkAdaBoostClassifier(SkDecisionTreeClassifier(max_depth=1)).fit(X, y)


def test_worse_than_chance_learner_stops():
    """A learner that ignores the weights (always class 0) errs 3/10 in round 1;
    with learning_rate=2 its error in the new weights is 0.7 >= 1/2: dropped, stop."""
    X = np.arange(10.0)[:, None]
    y = np.array([0] * 7 + [1] * 3)
    learner = DummyClassifier(strategy="constant", constant=0)
    model = AdaBoostClassifier(learner, n_estimators=5, learning_rate=2.0).fit(X, y)
    assert len(model.estimators_) == 1
    np.testing.assert_allclose(model.estimator_errors_, [0.3], rtol=1e-12)
    np.testing.assert_allclose(model.estimator_weights_, [2.0 * 0.5 * math.log(7 / 3)], rtol=1e-12)
    # round 2 by hand: the 3 misclassified rows times e^{w_1}, the 7 others times e^{-w_1}
    w1 = math.log(7 / 3)
    err2 = 3 * 0.1 * math.exp(w1) / (3 * 0.1 * math.exp(w1) + 7 * 0.1 * math.exp(-w1))
    assert err2 == pytest.approx(0.7) and err2 >= 0.5
    theirs = SkAdaBoostClassifier(learner, n_estimators=5, learning_rate=2.0).fit(X, y)
    assert len(theirs.estimators_) == 1
    np.testing.assert_allclose(theirs.estimator_weights_[:1], 2 * model.estimator_weights_, rtol=1e-12)


# --------------------------------------------------------------------------
# backends, reproducibility
# --------------------------------------------------------------------------


def test_backends_agree(backend, cancer, diabetes):
    name, _, conv = backend
    X, y = cancer
    ref = AdaBoostClassifier(n_estimators=8).fit(X, y)
    est = AdaBoostClassifier(n_estimators=8).fit(conv(X), conv(y))
    np.testing.assert_allclose(est.estimator_weights_, ref.estimator_weights_, rtol=1e-10)
    pred = est.predict(conv(X))
    assert not isinstance(pred, np.ndarray) or name == "numpy"  # in the input's namespace
    np.testing.assert_array_equal(to_numpy(pred), ref.predict(X))
    np.testing.assert_allclose(to_numpy(est.predict_proba(conv(X))), ref.predict_proba(X), atol=1e-12)
    np.testing.assert_allclose(to_numpy(est.decision_function(conv(X))), ref.decision_function(X), atol=1e-12)
    assert est.score(conv(X), conv(y)) == ref.score(X, y)
    Xr, yr = diabetes
    ref = AdaBoostRegressor(n_estimators=8, random_state=0).fit(Xr, yr)
    est = AdaBoostRegressor(n_estimators=8, random_state=0).fit(conv(Xr), conv(yr))
    np.testing.assert_allclose(est.estimator_weights_, ref.estimator_weights_, rtol=1e-10)
    pred = est.predict(conv(Xr))
    np.testing.assert_allclose(to_numpy(pred), ref.predict(Xr), rtol=1e-12)
    # the learners were grown in the input's namespace
    assert type(est.estimators_[0]._batch.left) is type(conv(Xr[:1]))


def test_same_random_state_same_model(diabetes):
    X, y = diabetes
    a = AdaBoostRegressor(n_estimators=10, random_state=3).fit(X, y)
    b = AdaBoostRegressor(n_estimators=10, random_state=3).fit(X, y)
    c = AdaBoostRegressor(n_estimators=10, random_state=4).fit(X, y)
    np.testing.assert_array_equal(a.estimator_weights_, b.estimator_weights_)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert not np.array_equal(a.estimator_weights_, c.estimator_weights_)
    # random learners (max_features) in the classifier: seeded per round from random_state
    clf = [AdaBoostClassifier(DecisionTreeClassifier(max_depth=2, max_features=1), n_estimators=8, random_state=s)
           for s in (0, 0, 1)]
    X2, y2 = load_iris(return_X_y=True)
    for m in clf:
        m.fit(X2, y2)
    np.testing.assert_array_equal(clf[0].estimator_weights_, clf[1].estimator_weights_)
    np.testing.assert_array_equal(clf[0].predict_proba(X2), clf[1].predict_proba(X2))
    assert [e.random_state for e in clf[0].estimators_] != [e.random_state for e in clf[2].estimators_]


def test_weighted_bootstrap_is_numpy_choice():
    import array_api_compat.numpy as xnp

    w = np.random.default_rng(0).random(57)
    w[[3, 10, 11]] = 0.0
    w /= w.sum()
    idx, counts = _weighted_bootstrap(xnp, np.random.RandomState(5), w, 57)
    expected = np.random.RandomState(5).choice(np.arange(57), size=57, replace=True, p=w)
    np.testing.assert_array_equal(idx, expected)
    np.testing.assert_array_equal(counts, np.bincount(expected, minlength=57))


# --------------------------------------------------------------------------
# AdaBoost.R2
# --------------------------------------------------------------------------


@pytest.mark.parametrize("loss", ["linear", "square", "exponential"])
def test_regressor_same_as_sklearn_when_the_trees_are(loss):
    """Friedman #1 (continuous features, no ties): the same bootstrap draws and the
    same regression stumps every round, hence the same model."""
    X, y = make_friedman1(n_samples=300, random_state=0)
    w = np.random.default_rng(2).uniform(0.5, 2.0, len(y))
    w[::7] = 0.0
    ours = AdaBoostRegressor(DecisionTreeRegressor(max_depth=1, **EXACT), loss=loss, random_state=0)
    theirs = SkAdaBoostRegressor(SkDecisionTreeRegressor(max_depth=1), loss=loss, random_state=0)
    ours.fit(X, y, sample_weight=w)
    theirs.fit(X, y, sample_weight=w)
    n = len(theirs.estimators_)
    assert len(ours.estimators_) == n
    np.testing.assert_allclose(ours.estimator_weights_, theirs.estimator_weights_[:n], rtol=1e-10)
    np.testing.assert_allclose(ours.estimator_errors_, theirs.estimator_errors_[:n], rtol=1e-10)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-12)
    for a, b in zip(ours.staged_predict(X[:20]), theirs.staged_predict(X[:20])):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_regressor_comparable_to_sklearn_on_diabetes(diabetes):
    """Depth-3 trees: the rounds are scikit-learn's until two splits of a small node
    tie (scikit-learn breaks ties by its random feature order, gputrees by the
    lowest feature), then the row weights part ways; the scores stay close."""
    X, y = diabetes
    ours = AdaBoostRegressor(DecisionTreeRegressor(max_depth=3, **EXACT), random_state=0).fit(X, y)
    theirs = SkAdaBoostRegressor(SkDecisionTreeRegressor(max_depth=3), random_state=0).fit(X, y)
    np.testing.assert_allclose(ours.estimator_errors_[:4], theirs.estimator_errors_[:4], rtol=1e-10)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    r2 = {}
    for name, model in (
        ("ours", AdaBoostRegressor(random_state=0)),  # default: gputrees DecisionTreeRegressor(max_depth=3)
        ("theirs", SkAdaBoostRegressor(random_state=0)),
    ):
        r2[name] = model.fit(Xtr, ytr).score(Xte, yte)
    assert r2["ours"] > 0.3 and r2["theirs"] > 0.3
    assert abs(r2["ours"] - r2["theirs"]) < 0.08


def test_regressor_weighted_median_by_hand(diabetes):
    X, y = diabetes
    model = AdaBoostRegressor(n_estimators=7, random_state=1).fit(X, y)
    preds = np.stack([e.predict(X[:30]) for e in model.estimators_], axis=1)
    w = model.estimator_weights_
    expected = []
    for row in preds:
        order = np.argsort(row, kind="stable")
        cdf = np.cumsum(w[order])
        expected.append(row[order][np.argmax(cdf >= 0.5 * cdf[-1])])
    np.testing.assert_allclose(model.predict(X[:30]), expected, rtol=1e-12)
    err = model.estimator_errors_
    np.testing.assert_allclose(w, np.log((1 - err) / err), rtol=1e-12)  # ln(1 / beta)
    assert list(model.staged_score(X, y))[-1] == pytest.approx(model.score(X, y))


# --------------------------------------------------------------------------
# API
# --------------------------------------------------------------------------


def test_staged_methods_end_at_the_final_model(iris):
    X, y = iris
    model = AdaBoostClassifier(n_estimators=6).fit(X, y)
    stages = list(model.staged_predict(X))
    assert len(stages) == len(model.estimators_) == 6
    np.testing.assert_array_equal(stages[-1], model.predict(X))
    np.testing.assert_allclose(list(model.staged_decision_function(X))[-1], model.decision_function(X))
    np.testing.assert_allclose(list(model.staged_predict_proba(X))[-1], model.predict_proba(X))
    scores = list(model.staged_score(X, y))
    assert scores[-1] == model.score(X, y)
    assert scores[0] == pytest.approx(np.mean(model.estimators_[0].predict(X) == y))
    # the first stage is the first learner alone
    np.testing.assert_array_equal(stages[0], model.estimators_[0].predict(X))


def test_feature_importances_weighted_mean(cancer):
    X, y = cancer
    model = AdaBoostClassifier(n_estimators=12).fit(X, y)
    w = model.estimator_weights_
    expected = sum(wt * e.feature_importances_ for wt, e in zip(w, model.estimators_)) / w.sum()
    np.testing.assert_allclose(model.feature_importances_, expected, rtol=1e-12)
    assert model.feature_importances_.sum() == pytest.approx(1.0)


def test_dataframe_feature_names(iris):
    import pandas as pd

    X, y = iris
    df = pd.DataFrame(X, columns=["sl", "sw", "pl", "pw"])
    model = AdaBoostClassifier(n_estimators=5).fit(df, y)
    np.testing.assert_array_equal(model.feature_names_in_, ["sl", "sw", "pl", "pw"])
    np.testing.assert_array_equal(model.predict(df), AdaBoostClassifier(n_estimators=5).fit(X, y).predict(X))


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(n_estimators=0), "n_estimators"),
        (dict(learning_rate=0.0), "learning_rate"),
        (dict(learning_rate=-1.0), "learning_rate"),
        (dict(estimator=KNeighborsClassifier()), "doesn't support sample_weight"),
        (dict(estimator="tree"), "estimator"),
        (dict(device="gpu"), "device"),
    ],
)
def test_bad_parameters(params, match, iris):
    X, y = iris
    with pytest.raises(ValueError, match=match):
        AdaBoostClassifier(**params).fit(X, y)


def test_bad_regressor_parameters(diabetes):
    X, y = diabetes
    with pytest.raises(ValueError, match="loss"):
        AdaBoostRegressor(loss="huber").fit(X, y)
    with pytest.raises(ValueError, match="y must be 1-D"):
        AdaBoostRegressor().fit(X, np.c_[y, y])
    with pytest.raises(ValueError, match="numeric"):
        AdaBoostRegressor().fit(X, np.array(["a"] * len(y)))


def _expected_failed_checks(estimator):
    if isinstance(estimator, AdaBoostRegressor):
        # scikit-learn lists the same expected failure for its own AdaBoostRegressor
        why = "weighted bootstrap: sample_weight is not equivalent to removing/repeating samples"
        return {f"check_sample_weight_equivalence_on_{kind}_data": why for kind in ("dense", "sparse")}
    return {}


@parametrize_with_checks(
    [AdaBoostClassifier(n_estimators=5), AdaBoostRegressor(n_estimators=5)],
    expected_failed_checks=_expected_failed_checks,
    xfail_strict=True,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_exported_from_package():
    assert "AdaBoostClassifier" in gputrees.__all__ and "AdaBoostRegressor" in gputrees.__all__
    assert sys.modules["gputrees"].AdaBoostClassifier is AdaBoostClassifier
