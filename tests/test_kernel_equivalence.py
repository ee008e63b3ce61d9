"""Whole models: fitted with the Numba kernels, they equal those fitted with the NumPy kernels.

Every fitted array of the estimator (tree structure, thresholds, node
statistics, values, boosting rounds, AdaBoost weights...) is compared: integer
and boolean arrays exactly, float arrays to 1e-10 relative (the kernels sum in
the same order, so in practice they are equal bit for bit).
"""

from __future__ import annotations

import numpy as np
import pytest

import gputrees
from estimator_zoo import assert_same_model

pytest.importorskip("numba")


def _data(task, seed=0, n=600, categorical=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    X[:, 4] = np.round(X[:, 4] * 2)  # few distinct values: exact thresholds
    signal = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1] * X[:, 2]) + 0.3 * rng.standard_normal(n)
    if categorical:
        import pandas as pd

        X = pd.DataFrame(X, columns=list("abcde"))
        X["c"] = pd.Categorical(rng.choice(list("pqrs"), n))
        signal = signal + (X["c"] == "q").to_numpy()
    if task == "binary":
        return X, (signal > 0).astype(int)
    if task == "multiclass":
        return X, np.digitize(signal, [-0.7, 0.7])
    return X, signal


CASES = {
    "tree-classifier": (lambda: gputrees.DecisionTreeClassifier(max_depth=6), "multiclass"),
    "tree-regressor-best-first": (lambda: gputrees.DecisionTreeRegressor(max_leaf_nodes=20), "regression"),
    "tree-pruned": (lambda: gputrees.DecisionTreeClassifier(ccp_alpha=0.002), "binary"),
    "tree-random-features": (lambda: gputrees.DecisionTreeRegressor(max_features=2, random_state=0), "regression"),
    "forest": (lambda: gputrees.RandomForestClassifier(n_estimators=8, max_depth=5, random_state=0), "multiclass"),
    "forest-balanced-subsample": (
        lambda: gputrees.RandomForestClassifier(
            n_estimators=6, max_depth=4, class_weight="balanced_subsample", random_state=1
        ),
        "binary",
    ),
    "extra-trees": (lambda: gputrees.ExtraTreesRegressor(n_estimators=6, max_depth=5, random_state=0), "regression"),
    "gbdt-binary": (
        lambda: gputrees.GradientBoostingClassifier(n_estimators=8, subsample=0.8, random_state=0), "binary"
    ),
    "gbdt-binary-every-row": (lambda: gputrees.GradientBoostingClassifier(n_estimators=8), "binary"),
    "gbdt-squared-error": (lambda: gputrees.GradientBoostingRegressor(n_estimators=8), "regression"),
    "gbdt-multiclass": (lambda: gputrees.GradientBoostingClassifier(n_estimators=5, max_depth=3), "multiclass"),
    "gbdt-huber": (lambda: gputrees.GradientBoostingRegressor(n_estimators=6, loss="huber"), "regression"),
    "adaboost": (lambda: gputrees.AdaBoostClassifier(n_estimators=6, random_state=0), "multiclass"),
    "adaboost-r2": (lambda: gputrees.AdaBoostRegressor(n_estimators=5, random_state=0), "regression"),
}


@pytest.mark.parametrize("categorical", [False, True], ids=["numeric", "categorical"])
@pytest.mark.parametrize("case", list(CASES))
def test_numba_model_equals_numpy_model(case, categorical, monkeypatch):
    make, task = CASES[case]
    X, y = _data(task, categorical=categorical)
    monkeypatch.setenv("GPUTREES_KERNELS", "bincount")
    ref = make().fit(X, y)
    monkeypatch.setenv("GPUTREES_KERNELS", "numba")
    fast = make().fit(X, y)
    assert_same_model(ref, fast)
    out = "predict_proba" if hasattr(ref, "predict_proba") else "predict"
    assert np.array_equal(getattr(fast, out)(X), getattr(ref, out)(X))


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_thread_count_does_not_change_the_model(n_jobs, monkeypatch):
    monkeypatch.setenv("GPUTREES_KERNELS", "numba")
    X, y = _data("binary", n=2000)
    one = gputrees.GradientBoostingClassifier(n_estimators=5, n_jobs=1).fit(X, y)
    many = gputrees.GradientBoostingClassifier(n_estimators=5, n_jobs=n_jobs).fit(X, y)
    assert_same_model(one, many)
    assert np.array_equal(one.predict_proba(X), many.predict_proba(X))


def test_forced_kernels_are_used(monkeypatch):
    """GPUTREES_KERNELS picks the set; a name that does not exist is refused."""
    from gputrees import kernels

    seen = []
    real = kernels.get_kernels

    def spy(xp, *a, **kw):
        k = real(xp, *a, **kw)
        seen.append(k.name)
        return k

    monkeypatch.setattr(gputrees._classes, "get_kernels", spy)
    X, y = _data("binary", n=100)
    for name in ("bincount", "numba", "reference"):
        monkeypatch.setenv("GPUTREES_KERNELS", name)
        gputrees.DecisionTreeClassifier(max_depth=2).fit(X, y)
        assert seen[-1] == name
    monkeypatch.setenv("GPUTREES_KERNELS", "fast")
    with pytest.raises(ValueError, match="kernels must be one of"):
        gputrees.DecisionTreeClassifier(max_depth=2).fit(X, y)
