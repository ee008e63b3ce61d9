"""scikit-learn's ensembles around gputrees trees and forests: bagging
(bootstrap, pasting, random subspaces, random patches), voting and stacking,
sample_weight included.

BaggingClassifier draws each estimator's rows and passes them as integer
``sample_weight`` to estimators that take one (gputrees trees and forests do);
since scikit-learn 1.8 a ``sample_weight`` given to the bagging's fit is the
probability of drawing each row. Each bagged tree is checked against a
gputrees tree fitted by hand on its features and counts.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.ensemble import (
    BaggingClassifier,
    BaggingRegressor,
    StackingClassifier,
    StackingRegressor,
    VotingClassifier,
    VotingRegressor,
)
from sklearn.linear_model import LogisticRegression, RidgeCV
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import gputrees

BAGGING_SETTINGS = {
    "bootstrap": dict(bootstrap=True),
    "pasting": dict(bootstrap=False, max_samples=0.5),
    "random_subspaces": dict(bootstrap=False, max_samples=1.0, max_features=0.5),
    "random_patches": dict(bootstrap=False, max_samples=0.5, max_features=0.5),
}


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return train_test_split(X, y, test_size=0.3, random_state=0)


def _weights(n, seed=0):
    """Integer weights 0..3 (a quarter of the rows absent)."""
    return np.random.default_rng(seed).integers(0, 4, n).astype(np.float64)


def _out(est, X):
    return est.predict_proba(X) if hasattr(est, "predict_proba") else est.predict(X)


def _assert_bagged_estimators_by_hand(bag, X, y):
    """Estimator i equals its clone fitted on its features with sample_weight = its row counts."""
    n = len(y)
    for est, rows, feats in zip(bag.estimators_, bag.estimators_samples_, bag.estimators_features_):
        counts = np.bincount(rows, minlength=n).astype(np.float64)
        ref = clone(est).fit(X[:, feats], y, sample_weight=counts)
        np.testing.assert_array_equal(_out(est, X[:, feats]), _out(ref, X[:, feats]))
        np.testing.assert_array_equal(est.tree_.threshold, ref.tree_.threshold)


# --------------------------------------------------------------------------
# bagging
# --------------------------------------------------------------------------


@pytest.mark.parametrize("setting", list(BAGGING_SETTINGS))
def test_bagging_classifier_settings(setting, cancer):
    Xtr, Xte, ytr, yte = cancer
    n, p = Xtr.shape
    params = BAGGING_SETTINGS[setting]
    bag = BaggingClassifier(
        estimator=gputrees.DecisionTreeClassifier(), n_estimators=8, random_state=0, **params
    ).fit(Xtr, ytr)
    assert all(isinstance(e, gputrees.DecisionTreeClassifier) for e in bag.estimators_)
    counts = np.stack([np.bincount(r, minlength=n) for r in bag.estimators_samples_])
    n_feats = {len(f) for f in bag.estimators_features_}
    if params["bootstrap"]:
        assert counts.max() > 1 and np.all(counts.sum(axis=1) == n)
    else:
        assert counts.max() == 1 and np.all(counts.sum(axis=1) == int(params["max_samples"] * n))
    assert n_feats == {int(params.get("max_features", 1.0) * p)}
    if "max_features" in params:  # each tree splits on its own subset of columns only
        assert len({tuple(sorted(f)) for f in bag.estimators_features_}) > 1
        for est in bag.estimators_:
            assert est.n_features_in_ == p // 2
    _assert_bagged_estimators_by_hand(bag, Xtr, ytr)
    # the bagging averages its trees' probabilities
    proba = np.mean([e.predict_proba(Xte[:, f]) for e, f in zip(bag.estimators_, bag.estimators_features_)], axis=0)
    np.testing.assert_allclose(bag.predict_proba(Xte), proba, rtol=1e-12)
    assert bag.score(Xte, yte) > 0.9


@pytest.mark.parametrize("setting", ["bootstrap", "random_patches"])
def test_bagging_regressor_settings(setting, diabetes):
    Xtr, Xte, ytr, yte = diabetes
    bag = BaggingRegressor(
        estimator=gputrees.DecisionTreeRegressor(min_samples_leaf=5),
        n_estimators=10,
        random_state=0,
        **BAGGING_SETTINGS[setting],
    ).fit(Xtr, ytr)
    _assert_bagged_estimators_by_hand(bag, Xtr, ytr)
    assert bag.score(Xte, yte) > 0.2


def test_bagging_classifier_sample_weight(cancer):
    """sample_weight reaches the draws: rows of weight 0 are never drawn, heavy rows more often."""
    Xtr, Xte, ytr, yte = cancer
    n = len(ytr)
    w = _weights(n)
    bag = BaggingClassifier(estimator=gputrees.DecisionTreeClassifier(), n_estimators=10, random_state=0)
    bag.fit(Xtr, ytr, sample_weight=w)
    counts = np.stack([np.bincount(r, minlength=n) for r in bag.estimators_samples_])
    assert np.all(counts[:, w == 0] == 0)
    per_draw = counts.sum(axis=0) / w.clip(min=1)
    assert abs(per_draw[w == 3].mean() / per_draw[w == 1].mean() - 1) < 0.3  # drawn in proportion to w
    _assert_bagged_estimators_by_hand(bag, Xtr, ytr)
    assert bag.score(Xte, yte) > 0.9
    plain = clone(bag).fit(Xtr, ytr)
    assert not np.array_equal(plain.predict_proba(Xte), bag.predict_proba(Xte))


def test_pasting_with_sample_weight_warns(cancer):
    Xtr, _, ytr, _ = cancer
    bag = BaggingClassifier(
        estimator=gputrees.DecisionTreeClassifier(), n_estimators=3, bootstrap=False, max_samples=0.5, random_state=0
    )
    w = np.where(_weights(len(ytr)) > 1, 2.0, 1.0)  # max_samples is a fraction of sum(w): at most n rows
    with pytest.warns(UserWarning, match="bootstrap=True"):
        bag.fit(Xtr, ytr, sample_weight=w)
    _assert_bagged_estimators_by_hand(bag, Xtr, ytr)


@pytest.mark.parametrize("Forest", [gputrees.RandomForestClassifier, gputrees.ExtraTreesClassifier])
def test_bagging_of_forests(Forest, cancer):
    Xtr, Xte, ytr, yte = cancer
    bag = BaggingClassifier(
        estimator=Forest(n_estimators=3, max_depth=6), n_estimators=3, max_features=0.5, random_state=0
    ).fit(Xtr, ytr)
    assert all(isinstance(e, Forest) and len(e.estimators_) == 3 for e in bag.estimators_)
    assert bag.score(Xte, yte) > 0.9


# --------------------------------------------------------------------------
# voting
# --------------------------------------------------------------------------


def _members():
    return [
        ("tree", gputrees.DecisionTreeClassifier(max_depth=4, random_state=0)),
        ("rf", gputrees.RandomForestClassifier(n_estimators=8, random_state=0)),
        ("et", gputrees.ExtraTreesClassifier(n_estimators=8, random_state=0)),
    ]


@pytest.mark.parametrize("voting", ["soft", "hard"])
def test_voting_classifier(voting, cancer):
    Xtr, Xte, ytr, yte = cancer
    vote = VotingClassifier(_members(), voting=voting).fit(Xtr, ytr)
    assert vote.score(Xte, yte) > 0.9
    if voting == "soft":
        mean = np.mean([e.predict_proba(Xte) for e in vote.estimators_], axis=0)
        np.testing.assert_allclose(vote.predict_proba(Xte), mean, rtol=1e-12)
    else:
        votes = np.stack([e.predict(Xte) for e in vote.estimators_])
        np.testing.assert_array_equal(vote.predict(Xte), (votes.sum(axis=0) >= 2).astype(int))


def test_voting_classifier_sample_weight(cancer):
    """VotingClassifier.fit passes sample_weight to every member's fit."""
    Xtr, Xte, ytr, yte = cancer
    w = _weights(len(ytr))
    vote = VotingClassifier(_members(), voting="soft").fit(Xtr, ytr, sample_weight=w)
    for name, member in _members():
        by_hand = member.fit(Xtr, ytr, sample_weight=w)
        np.testing.assert_array_equal(vote.named_estimators_[name].predict_proba(Xte), by_hand.predict_proba(Xte))
        unweighted = clone(member).fit(Xtr, ytr)
        assert not np.array_equal(unweighted.predict_proba(Xte), by_hand.predict_proba(Xte)), name
    assert vote.score(Xte, yte) > 0.9


def test_voting_regressor_sample_weight(diabetes):
    Xtr, Xte, ytr, yte = diabetes
    members = [
        ("rf", gputrees.RandomForestRegressor(n_estimators=8, min_samples_leaf=5, random_state=0)),
        ("et", gputrees.ExtraTreesRegressor(n_estimators=8, min_samples_leaf=5, random_state=0)),
    ]
    w = _weights(len(ytr), seed=1)
    vote = VotingRegressor(members).fit(Xtr, ytr, sample_weight=w)
    for name, member in members:
        np.testing.assert_array_equal(
            vote.named_estimators_[name].predict(Xte), clone(member).fit(Xtr, ytr, sample_weight=w).predict(Xte)
        )
    assert vote.score(Xte, yte) > 0.25


# --------------------------------------------------------------------------
# stacking
# --------------------------------------------------------------------------


def test_stacking_classifier(cancer):
    Xtr, Xte, ytr, yte = cancer
    stack = StackingClassifier(_members(), final_estimator=LogisticRegression(max_iter=2000), cv=3).fit(Xtr, ytr)
    assert stack.score(Xte, yte) > 0.9
    assert stack.predict_proba(Xte).shape == (len(yte), 2)
    # binary: one column per member, its probability of the positive class
    feats = stack.transform(Xte)
    expected = np.column_stack([e.predict_proba(Xte)[:, 1] for e in stack.estimators_])
    np.testing.assert_allclose(feats, expected, rtol=1e-12)


def test_stacking_classifier_sample_weight(cancer):
    """StackingClassifier.fit passes sample_weight to the members' refits on all rows."""
    Xtr, Xte, ytr, yte = cancer
    w = _weights(len(ytr), seed=2)
    stack = StackingClassifier(_members(), final_estimator=LogisticRegression(max_iter=2000), cv=3)
    stack.fit(Xtr, ytr, sample_weight=w)
    for (name, member), fitted in zip(_members(), stack.estimators_):
        by_hand = member.fit(Xtr, ytr, sample_weight=w)
        np.testing.assert_array_equal(fitted.predict_proba(Xte), by_hand.predict_proba(Xte), err_msg=name)
    assert stack.score(Xte, yte) > 0.9


def test_stacking_with_a_forest_on_top(cancer, diabetes):
    Xtr, Xte, ytr, yte = cancer
    stack = StackingClassifier(
        [
            ("tree", gputrees.DecisionTreeClassifier(max_depth=3)),
            ("lr", make_pipeline(StandardScaler(), LogisticRegression())),
        ],
        final_estimator=gputrees.RandomForestClassifier(n_estimators=10, max_depth=3, random_state=0),
        passthrough=True,
        cv=3,
    ).fit(Xtr, ytr)
    assert stack.final_estimator_.n_features_in_ == 2 + Xtr.shape[1]
    assert stack.score(Xte, yte) > 0.9
    Xtr, Xte, ytr, yte = diabetes
    reg = StackingRegressor(
        [
            ("rf", gputrees.RandomForestRegressor(n_estimators=8, min_samples_leaf=5, random_state=0)),
            ("ridge", RidgeCV()),
        ],
        final_estimator=RidgeCV(),
    ).fit(Xtr, ytr, sample_weight=_weights(len(ytr), seed=3) + 1)
    assert reg.score(Xte, yte) > 0.3
