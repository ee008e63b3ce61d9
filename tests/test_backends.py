"""One code path, several array libraries: NumPy, array-api-strict and CuPy
(the ``backend`` fixture; CuPy is skipped without a GPU) grow the same trees
and predict the same values, returned in the namespace of the input."""

from __future__ import annotations

import array_api_compat
import numpy as np
import pytest

import gputrees
from conftest import to_numpy
from estimator_zoo import ESTIMATORS as ZOO

# ---------------------------------------------------------------------------
# data and settings
# ---------------------------------------------------------------------------


def _data(task, seed=0, n=400, exact=True):
    """Features with NaN and an integer-coded column; targets and weights.

    ``exact``: regression targets and sample weights are multiples of 1/4, so
    every histogram sum is exact whatever order a library adds in, and two
    libraries can only disagree through a real difference of code path.
    ``exact=False``: float targets and weights (see the last test).
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5))
    X[:, 1] = rng.integers(0, 6, n)  # integer codes: categorical in the "categorical" case
    X[rng.random((n, 5)) < 0.1] = np.nan
    x0 = np.nan_to_num(X[:, 0])
    cat_effect = np.isin(X[:, 1], [0, 3, 4]).astype(float)  # non-monotone in the code
    signal = x0 + 1.5 * cat_effect - np.nan_to_num(X[:, 2]) * 0.5 + 0.3 * rng.standard_normal(n)
    if task == "classification":
        y = np.digitize(signal, [0.0, 1.2]).astype(np.int64)
    else:
        y = np.round(4.0 * signal) / 4.0 if exact else signal
    w = rng.integers(2, 9, n) / 4.0 if exact else rng.uniform(0.5, 2.0, n)
    return X, y, w


CASES = {
    "nan": dict(max_depth=6),
    "nan-weights": dict(max_depth=5, min_samples_leaf=3, sample_weight=True),
    "categorical": dict(max_depth=5, categorical_features=[1]),
    "categorical-mask": dict(max_depth=4, categorical_features=[False, True, False, False, False]),
    "max_leaf_nodes": dict(max_leaf_nodes=12),
    "max_leaf_nodes-categorical": dict(max_leaf_nodes=9, categorical_features=[1]),
    "max_features": dict(max_features=2, random_state=0, max_depth=6),
    "max_features-sqrt-categorical": dict(max_features="sqrt", random_state=3, categorical_features=[1], max_depth=5),
    "quantile-bins": dict(max_bins=8, max_depth=6),
}

ESTIMATORS = {
    "classification": gputrees.DecisionTreeClassifier,
    "regression": gputrees.DecisionTreeRegressor,
}


def _fit(task, case, X, y, w, conv=None, **extra):
    params = dict(CASES[case])
    use_w = params.pop("sample_weight", False)
    est = ESTIMATORS[task](**params, **extra)
    conv = conv or np.asarray
    return est.fit(conv(X), conv(y), sample_weight=conv(w) if use_w else None)


def _namespace_kind(a):
    if isinstance(a, np.ndarray):
        return "numpy"
    if array_api_compat.is_cupy_array(a):
        return "cupy"
    if array_api_compat.is_array_api_strict_namespace(array_api_compat.array_namespace(a)):
        return "array_api_strict"
    return type(a).__module__


def _assert_same_tree(a, b, task):
    """Structure and splits exactly; node values, impurities and weights to
    rounding (the impurity of regression nodes is a difference of sums)."""
    assert a.node_count == b.node_count
    for name in ("children_left", "children_right", "feature", "threshold", "missing_go_to_left",
                 "is_categorical", "n_node_samples"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    for node in np.flatnonzero(a.is_categorical):
        np.testing.assert_array_equal(a.categories_left[node], b.categories_left[node])
    np.testing.assert_allclose(a.value, b.value, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(a.impurity, b.impurity, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.weighted_n_node_samples, b.weighted_n_node_samples, rtol=1e-11)


def _predictions(est, X, task):
    out = {"apply": est.apply(X), "predict": est.predict(X)}
    if task == "classification":
        out["predict_proba"] = est.predict_proba(X)
    return out


def _test_X(seed=1):
    X, _, _ = _data("classification", seed=seed, n=300)
    X[:7, 1] = 17.0  # categories never seen at fit: they go where missing values go
    return X


# ---------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("task", list(ESTIMATORS))
def test_same_tree_and_predictions_on_every_backend(backend, task, case):
    name, _, conv = backend
    X, y, w = _data(task)
    ref = _fit(task, case, X, y, w)
    est = _fit(task, case, X, y, w, conv=conv)
    assert est.tree_.node_count > 3
    _assert_same_tree(est.tree_, ref.tree_, task)
    np.testing.assert_allclose(est.feature_importances_, ref.feature_importances_, rtol=1e-9, atol=1e-12)
    if "categorical" in case:
        assert est.tree_.is_categorical.any()
    Xt = _test_X()
    ours, theirs = _predictions(est, conv(Xt), task), _predictions(ref, Xt, task)
    for key, value in ours.items():
        # predictions come back in the namespace of the input
        assert _namespace_kind(value) == name, key
        if key == "apply" or (key == "predict" and task == "classification"):
            np.testing.assert_array_equal(to_numpy(value), theirs[key], err_msg=key)
        else:
            np.testing.assert_allclose(to_numpy(value), theirs[key], rtol=1e-10, atol=1e-12, err_msg=key)


@pytest.mark.parametrize("task", list(ESTIMATORS))
def test_training_runs_in_the_input_namespace(backend, task):
    name, _, conv = backend
    X, y, w = _data(task)
    est = _fit(task, "nan", X, y, w, conv=conv)
    # the fitted device arrays live where the input lived
    assert _namespace_kind(est._batch.left) == name
    # tree_ is always NumPy
    assert isinstance(est.tree_.children_left, np.ndarray)
    assert isinstance(est.tree_.value, np.ndarray)


@pytest.mark.parametrize("task", list(ESTIMATORS))
def test_device_cpu_with_strict_input_trains_on_numpy(task):
    import array_api_strict as xs

    X, y, w = _data(task)
    ref = _fit(task, "categorical", X, y, w)
    est = _fit(task, "categorical", X, y, w, conv=lambda a: xs.asarray(np.asarray(a)), device="cpu")
    assert isinstance(est._batch.left, np.ndarray)  # numpy-backed training
    _assert_same_tree(est.tree_, ref.tree_, task)
    Xt = _test_X()
    pred = est.predict(xs.asarray(Xt))
    assert _namespace_kind(pred) == "array_api_strict"  # still returned in the input's namespace
    np.testing.assert_allclose(to_numpy(pred), ref.predict(Xt))
    # NumPy input to the same fitted model: NumPy output
    assert isinstance(est.predict(Xt), np.ndarray)


def test_strict_fit_predicts_numpy_for_numpy_input():
    import array_api_strict as xs

    X, y, w = _data("classification")
    est = _fit("classification", "nan", X, y, w, conv=lambda a: xs.asarray(np.asarray(a)))
    Xt = _test_X()
    out = est.predict_proba(Xt)
    assert isinstance(out, np.ndarray)
    ref = _fit("classification", "nan", X, y, w)
    np.testing.assert_array_equal(out, ref.predict_proba(Xt))


def test_strict_string_classes_predict():
    """Non-numeric classes cannot live in a strict array: predict gives NumPy labels."""
    import array_api_strict as xs

    X, y, w = _data("classification")
    labels = np.array(["low", "mid", "high"])[y]
    est = gputrees.DecisionTreeClassifier(max_depth=4).fit(xs.asarray(X), labels)
    ref = gputrees.DecisionTreeClassifier(max_depth=4).fit(X, labels)
    Xt = _test_X()
    np.testing.assert_array_equal(np.asarray(est.predict(xs.asarray(Xt))), ref.predict(Xt))


@pytest.mark.parametrize("task", list(ESTIMATORS))
def test_max_features_draws_do_not_depend_on_backend(backend, task):
    """random_state draws happen on the host: same seed, same tree everywhere;
    another seed, another tree."""
    _, _, conv = backend
    X, y, w = _data(task, seed=5)
    trees = {}
    for seed in (0, 1):
        ref = ESTIMATORS[task](max_features=1, random_state=seed, max_depth=6).fit(X, y)
        est = ESTIMATORS[task](max_features=1, random_state=seed, max_depth=6).fit(conv(X), conv(y))
        _assert_same_tree(est.tree_, ref.tree_, task)
        trees[seed] = ref.tree_
    assert not (
        trees[0].node_count == trees[1].node_count
        and np.array_equal(trees[0].feature, trees[1].feature)
        and np.array_equal(trees[0].threshold, trees[1].threshold, equal_nan=True)
    )


@pytest.mark.parametrize("case", ["nan", "nan-weights", "quantile-bins"])
@pytest.mark.parametrize("task", list(ESTIMATORS))
def test_float_targets_and_weights_same_tree_on_every_backend(backend, task, case):
    """Float targets and weights: each library adds the histogram sums in its
    own order, so sums differ in the last bits. That must not change the tree:
    a node whose rows are all of one class (or one target value) is a leaf
    everywhere, and exact ties in gain (e.g. two features cutting a node into
    the same two row sets) go to the lowest feature index everywhere."""
    _, _, conv = backend
    X, y, w = _data(task, exact=False)
    ref = _fit(task, case, X, y, w)
    est = _fit(task, case, X, y, w, conv=conv)
    _assert_same_tree(est.tree_, ref.tree_, task)
    Xt = _test_X()
    np.testing.assert_allclose(to_numpy(est.predict(conv(Xt))), ref.predict(Xt), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", list(ZOO))
def test_score_takes_every_backend_and_equals_scikit_learns(backend, name):
    """``score`` on (X, y, sample_weight) of the input's namespace: CuPy refuses
    the ``numpy.asarray`` that scikit-learn's mixins call, so ours copy to the
    host first; the value is the mixin's on the same NumPy data."""
    from sklearn.base import ClassifierMixin, RegressorMixin

    _, _, conv = backend
    X, y, w = _data("classification" if name.endswith("_clf") else "regression")
    est = ZOO[name]().fit(conv(X), conv(y))
    score = est.score(conv(X), conv(y), sample_weight=conv(w))
    assert isinstance(score, float)
    mixin = ClassifierMixin if name.endswith("_clf") else RegressorMixin
    on_numpy = ZOO[name]().fit(X, y)
    assert score == pytest.approx(mixin.score(on_numpy, X, y, sample_weight=w), rel=1e-12)
