"""Native categorical splits: a set of categories goes left, the rest right."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import gputrees

CATS = list("abcd")


def _abcd(n=400, seed=0, nan_rows=0):
    """Category column with a, c -> class 1 and b, d -> class 0 (non-monotone
    in the category order), plus a noise column; ``nan_rows`` missing
    categories of class 1 at the end."""
    rng = np.random.default_rng(seed)
    c = rng.choice(CATS, n).astype(object)
    y = np.isin(c, ["a", "c"]).astype(np.int64)
    if nan_rows:
        c[-nan_rows:] = None
        y[-nan_rows:] = 1
    X = pd.DataFrame(
        {"c": pd.Categorical(c, categories=CATS), "x": rng.standard_normal(n)}
    )
    return X, y


def _left_set(est, node=0):
    return set(np.asarray(est.tree_.categories_left[node]).tolist())


# ---------------------------------------------------------------------------
# one node where an ordinal encoding needs several
# ---------------------------------------------------------------------------


def test_non_monotone_categories_split_in_one_node():
    X, y = _abcd()
    est = gputrees.DecisionTreeClassifier(max_depth=1).fit(X, y)
    tree = est.tree_
    assert est.is_categorical_.tolist() == [True, False]
    assert tree.feature[0] == 0 and tree.is_categorical[0]
    assert np.isnan(tree.threshold[0])
    assert _left_set(est) in ({"a", "c"}, {"b", "d"})
    assert est.score(X, y) == 1.0
    assert tree.impurity[tree.children_left[0]] == 0.0
    assert tree.impurity[tree.children_right[0]] == 0.0
    text = gputrees.export_text(est)
    assert text.splitlines()[0] in ("|--- c in {a, c}", "|--- c in {b, d}")
    # the same column as ordinal codes 0..3 needs more than one split
    codes = X.assign(c=X["c"].cat.codes.astype(float))
    ordinal = gputrees.DecisionTreeClassifier(max_depth=1).fit(codes, y)
    assert ordinal.score(codes, y) < 0.9
    assert gputrees.DecisionTreeClassifier(max_depth=2).fit(codes, y).score(codes, y) < 1.0
    deep = gputrees.DecisionTreeClassifier().fit(codes, y)
    assert deep.get_n_leaves() >= 3  # the ordinal tree needs (at least) 3 cuts: {a}{b}{c}{d}
    assert deep.tree_.node_count >= 7


def _int_frame(n=400, seed=1):
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 4, n)
    y = np.isin(c, [0, 2]).astype(np.int64)
    return pd.DataFrame({"c": c, "x": rng.standard_normal(n)}), y


@pytest.mark.parametrize(
    "spec", [[0], np.array([0]), ["c"], [True, False], np.array([True, False])],
    ids=["indices", "index-array", "names", "mask", "mask-array"],
)
def test_categorical_features_spec_on_dataframe(spec):
    X, y = _int_frame()
    est = gputrees.DecisionTreeClassifier(max_depth=1, categorical_features=spec).fit(X, y)
    assert est.is_categorical_.tolist() == [True, False]
    assert est.tree_.is_categorical[0]
    assert est.score(X, y) == 1.0
    assert _left_set(est) in ({0.0, 2.0}, {1.0, 3.0})
    # undeclared, the integer column is numerical and one split is not enough
    plain = gputrees.DecisionTreeClassifier(max_depth=1).fit(X, y)
    assert not plain.tree_.is_categorical.any()
    assert plain.score(X, y) < 0.9


@pytest.mark.parametrize("spec", [[0], [True, False]], ids=["indices", "mask"])
def test_categorical_features_spec_on_array(spec):
    X, y = _int_frame()
    A = X.to_numpy(dtype=float)
    est = gputrees.DecisionTreeClassifier(max_depth=1, categorical_features=spec).fit(A, y)
    assert est.tree_.is_categorical[0]
    assert est.score(A, y) == 1.0


def test_names_need_a_dataframe():
    X, y = _int_frame()
    with pytest.raises(ValueError):
        gputrees.DecisionTreeClassifier(categorical_features=["c"]).fit(X.to_numpy(dtype=float), y)


# ---------------------------------------------------------------------------
# unseen categories go where missing values go
# ---------------------------------------------------------------------------


def _missing_child(tree, node=0):
    return tree.children_left[node] if tree.missing_go_to_left[node] else tree.children_right[node]


def test_unseen_category_goes_with_missing_learned_direction():
    """NaN at fit (all class 1): the split learns where missing values go, and
    a category never seen at fit follows them."""
    X, y = _abcd(nan_rows=40)
    est = gputrees.DecisionTreeClassifier(max_depth=1).fit(X, y)
    tree = est.tree_
    assert est.score(X, y) == 1.0
    miss = _missing_child(tree)
    assert tree.value[miss, 0, 1] == 1.0  # the class-1 side: with a and c
    Xt = pd.DataFrame(
        {"c": pd.Categorical(["e", None, "a", "b"], categories=CATS + ["e"]), "x": [0.0] * 4}
    )
    leaves = est.apply(Xt)
    assert leaves[0] == leaves[1] == miss
    assert est.predict(Xt).tolist() == [1, 1, 1, 0]


def test_unseen_category_without_missing_at_fit_goes_to_missing_side():
    X, y = _abcd()
    est = gputrees.DecisionTreeClassifier(max_depth=1).fit(X, y)
    tree = est.tree_
    miss = _missing_child(tree)
    # no missing value at fit: missing (and unseen) go to the child with more rows
    other = tree.children_right[0] if miss == tree.children_left[0] else tree.children_left[0]
    assert tree.n_node_samples[miss] >= tree.n_node_samples[other]
    Xt = pd.DataFrame({"c": pd.Categorical(["e", None], categories=CATS + ["e"]), "x": [0.0, 0.0]})
    assert est.apply(Xt).tolist() == [miss, miss]


def test_unseen_string_category_goes_with_missing():
    X, y = _abcd(nan_rows=40)
    Xs = X.assign(c=X["c"].astype(object))  # plain strings (and None), declared categorical
    est = gputrees.DecisionTreeClassifier(max_depth=1, categorical_features=["c"]).fit(Xs, y)
    assert est.score(Xs, y) == 1.0
    miss = _missing_child(est.tree_)
    Xt = pd.DataFrame({"c": ["zzz", None, np.nan, "b"], "x": [0.0] * 4})
    leaves = est.apply(Xt)
    assert leaves[:3].tolist() == [miss] * 3
    assert leaves[3] != miss


def test_unseen_numeric_category_goes_with_missing():
    X, y = _int_frame()
    A = X.to_numpy(dtype=float)
    A[:30, 0] = np.nan
    y = y.copy()
    y[:30] = 1
    est = gputrees.DecisionTreeClassifier(max_depth=1, categorical_features=[0]).fit(A, y)
    assert est.score(A, y) == 1.0
    miss = _missing_child(est.tree_)
    Xt = np.array([[9.0, 0.0], [np.nan, 0.0], [1.5, 0.0]])  # 9 and 1.5 were never seen
    assert est.apply(Xt).tolist() == [miss] * 3


# ---------------------------------------------------------------------------
# regression and multi-class
# ---------------------------------------------------------------------------


def _best_bipartition(codes, y, cost):
    cats = np.unique(codes)
    best = None
    for r in range(1, len(cats)):
        for left in itertools.combinations(cats, r):
            mask = np.isin(codes, left)
            c = cost(y[mask]) + cost(y[~mask])
            if best is None or c < best[0] - 1e-12:
                best = (c, set(left))
    return best


def _sse(v):
    return float(np.sum((v - v.mean()) ** 2)) if v.size else 0.0


def test_regression_two_level_mean_pattern_one_split():
    rng = np.random.default_rng(2)
    c = rng.choice(CATS, 500)
    means = {"a": 5.0, "b": 1.0, "c": 5.0, "d": 1.0}
    y = np.array([means[v] for v in c])
    X = pd.DataFrame({"c": pd.Categorical(c, categories=CATS), "x": rng.standard_normal(500)})
    est = gputrees.DecisionTreeRegressor(max_depth=1).fit(X, y)
    assert est.tree_.is_categorical[0]
    assert _left_set(est) in ({"a", "c"}, {"b", "d"})
    np.testing.assert_allclose(est.predict(X), y)  # perfect with one split
    assert est.tree_.impurity[1] == pytest.approx(0.0, abs=1e-12)
    assert est.tree_.impurity[2] == pytest.approx(0.0, abs=1e-12)


def test_regression_categories_ordered_by_mean_target():
    """Four category means d < b < a < c (not the label order a < b < c < d):
    the best of the 7 bipartitions is {b, d} | {a, c}, one cut in the
    mean order; two levels separate all four categories."""
    rng = np.random.default_rng(3)
    c = rng.choice(CATS, 800)
    means = {"a": 2.0, "b": -1.0, "c": 3.0, "d": -2.0}
    y = np.array([means[v] for v in c]) + 0.1 * rng.standard_normal(800)
    X = pd.DataFrame({"c": pd.Categorical(c, categories=CATS)})
    est = gputrees.DecisionTreeRegressor(max_depth=1).fit(X, y)
    codes = X["c"].cat.codes.to_numpy()
    best_cost, best_left = _best_bipartition(codes, y, _sse)
    left = {CATS.index(v) for v in _left_set(est)}
    assert left in (best_left, set(range(4)) - best_left)
    assert {CATS[i] for i in best_left} in ({"a", "c"}, {"b", "d"})
    tree = est.tree_
    ours_cost = sum(tree.impurity[j] * tree.weighted_n_node_samples[j] for j in (1, 2))
    assert ours_cost == pytest.approx(best_cost, rel=1e-9)
    # depth 2: every category alone, leaf values are the category means
    est2 = gputrees.DecisionTreeRegressor(max_depth=2).fit(X, y)
    assert est2.get_n_leaves() == 4
    cat_means = {v: y[c == v].mean() for v in CATS}
    np.testing.assert_allclose(est2.predict(X), [cat_means[v] for v in c], rtol=1e-12)
    # an ordinal encoding at depth 1 does worse
    ordinal = gputrees.DecisionTreeRegressor(max_depth=1).fit(codes[:, None].astype(float), y)
    assert ordinal.score(codes[:, None].astype(float), y) < est.score(X, y) - 0.1


def test_multiclass_six_categories():
    """3 classes, 6 categories (a, d -> 0; b, e -> 1; c, f -> 2): the root cuts
    off whole classes (as good as the best of all 31 bipartitions), and two
    levels classify perfectly where ordinal codes cannot."""
    rng = np.random.default_rng(4)
    cats = list("abcdef")
    cls_of = {"a": 0, "b": 1, "c": 2, "d": 0, "e": 1, "f": 2}
    c = rng.choice(cats, 900)
    y = np.array([cls_of[v] for v in c])
    X = pd.DataFrame({"c": pd.Categorical(c, categories=cats), "x": rng.standard_normal(900)})
    est = gputrees.DecisionTreeClassifier(max_depth=1).fit(X, y)
    tree = est.tree_
    assert tree.is_categorical[0] and tree.feature[0] == 0
    left = _left_set(est)
    # every class's categories stay together
    for group in ({"a", "d"}, {"b", "e"}, {"c", "f"}):
        assert group <= left or not (group & left)

    def gini_cost(v):
        if v.size == 0:
            return 0.0
        p = np.bincount(v, minlength=3) / v.size
        return v.size * (1 - np.sum(p**2))

    codes = X["c"].cat.codes.to_numpy()
    best_cost, _ = _best_bipartition(codes, y, gini_cost)
    ours_cost = sum(tree.impurity[j] * tree.weighted_n_node_samples[j] for j in (1, 2))
    assert ours_cost == pytest.approx(best_cost, rel=1e-9)
    est2 = gputrees.DecisionTreeClassifier(max_depth=2).fit(X, y)
    assert est2.score(X, y) == 1.0
    ordinal = codes[:, None].astype(float)
    assert gputrees.DecisionTreeClassifier(max_depth=2).fit(ordinal, y).score(ordinal, y) < 1.0


# ---------------------------------------------------------------------------
# errors and importances
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["object", "string"])
def test_undeclared_string_column_raises(kind):
    X, y = _abcd()
    col = X["c"].astype(object) if kind == "object" else X["c"].astype(object).astype("string")
    Xs = X.assign(c=col)
    with pytest.raises(ValueError, match="categorical_features"):
        gputrees.DecisionTreeClassifier().fit(Xs, y)


def test_undeclared_string_array_raises():
    X, y = _abcd()
    A = np.column_stack([X["c"].astype(object).to_numpy(), X["x"].to_numpy()]).astype(object)
    with pytest.raises(ValueError, match="categorical_features"):
        gputrees.DecisionTreeClassifier().fit(A, y)
    # declared, it works
    est = gputrees.DecisionTreeClassifier(max_depth=1, categorical_features=[0]).fit(A, y)
    assert est.score(A, y) == 1.0


def test_feature_importances_credit_the_categorical_feature():
    rng = np.random.default_rng(5)
    X, y = _abcd(n=600, seed=5)
    X = X.assign(x2=rng.standard_normal(600), x3=rng.standard_normal(600))
    est = gputrees.DecisionTreeClassifier(max_depth=1).fit(X, y)
    np.testing.assert_allclose(est.feature_importances_, [1.0, 0.0, 0.0, 0.0])
    # with label noise and a deep tree the noise features get some credit too,
    # but the categorical feature keeps most of it
    flip = rng.random(600) < 0.1
    y_noisy = np.where(flip, 1 - y, y)
    deep = gputrees.DecisionTreeClassifier(min_samples_leaf=5).fit(X, y_noisy)
    imp = deep.feature_importances_
    assert imp.sum() == pytest.approx(1.0)
    assert np.argmax(imp) == 0
    assert imp[0] > 0.5
    assert deep.tree_.is_categorical[0]


def test_predict_on_categories_in_another_order_or_with_more_of_them():
    """A category column's codes are read as they are only where its categories are the fit's in the fit's
    order; reordered, extended or shortened categories are looked up by label: the same predictions."""
    X, y = _abcd(nan_rows=5)
    est = gputrees.DecisionTreeClassifier(random_state=0).fit(X, y)
    want = est.predict_proba(X)
    for categories in (list("dcba"), list("abcde"), ["z", *CATS]):
        other = X.assign(c=pd.Categorical(X["c"].astype(object), categories=categories))
        np.testing.assert_array_equal(est.predict_proba(other), want)
    assert not np.array_equal(pd.Categorical(X["c"], categories=list("dcba")).codes, X["c"].cat.codes)
    unseen = X.assign(c=pd.Categorical(["e"] * len(X), categories=list("abcde")))
    np.testing.assert_array_equal(est.predict_proba(unseen), est.predict_proba(X.assign(c=np.nan)))
