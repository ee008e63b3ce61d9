"""The batched grower: tree invariants, memory chunking, best-first growth,
batches of trees and ``max_features`` draws."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn import datasets
from sklearn.tree import DecisionTreeClassifier as SkClassifier
from sklearn.tree import DecisionTreeRegressor as SkRegressor

import gputrees
from gputrees import _backend
from gputrees import _grower
from gputrees._binning import fit_bin_mapper
from gputrees._criteria import CLASSIFICATION_CRITERIA, REGRESSION_CRITERIA
from gputrees._grower import grow
from gputrees._records import GrowerInputs, GrowerParams
from gputrees._predictor import apply_trees
from gputrees.kernels.reference import gather_node_values
from gputrees._tree import Tree
from gputrees.datasets import load_titanic
from gputrees.kernels import get_kernels, reference

from test_exactness import assert_same_as_sklearn


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _node_depths(tree):
    depth = np.zeros(tree.node_count, dtype=np.int64)
    for node in range(tree.node_count):  # children are always created after parents
        for child in (tree.children_left[node], tree.children_right[node]):
            if child >= 0:
                assert child > node
                depth[child] = depth[node] + 1
    return depth


TREE_ARRAYS = (
    "children_left",
    "children_right",
    "feature",
    "threshold",
    "missing_go_to_left",
    "is_categorical",
    "n_node_samples",
    "weighted_n_node_samples",
    "impurity",
    "value",
)


def assert_same_tree(a, b, fields=TREE_ARRAYS):
    """Node-for-node equality of two ``tree_`` objects (exact, NaN == NaN)."""
    assert a.node_count == b.node_count
    for name in fields:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    for node in np.flatnonzero(a.is_categorical):
        np.testing.assert_array_equal(a.categories_left[node], b.categories_left[node])


def _trees_equal(a, b) -> bool:
    try:
        assert_same_tree(a, b)
    except AssertionError:
        return False
    return True


# ---------------------------------------------------------------------------
# 1. invariants, property-based
# ---------------------------------------------------------------------------


@st.composite
def tree_problems(draw):
    n = draw(st.integers(5, 200))
    n_features = draw(st.integers(1, 5))
    task = draw(st.sampled_from(["binary", "three_classes", "regression"]))
    seed = draw(st.integers(0, 2**32 - 1))
    nan_rate = draw(st.sampled_from([0.0, 0.05, 0.3]))
    n_distinct = draw(st.sampled_from([3, 10, None]))  # None: continuous values
    zero_weights = draw(st.booleans())
    categorical = draw(st.booleans())
    params = dict(
        max_depth=draw(st.integers(1, 6)),
        min_samples_leaf=draw(st.integers(1, 10)),
        min_samples_split=draw(st.integers(2, 20)),
        max_bins=draw(st.sampled_from([4, 16, 255])),
    )
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, n_features))
    if n_distinct is not None:
        X = np.round(X * n_distinct / 4.0)  # ties between rows
    if categorical:
        X[:, 0] = rng.integers(0, 4, n)  # integer-coded categories (<= max_bins), declared below
        params["categorical_features"] = [0]
    X[rng.random((n, n_features)) < nan_rate] = np.nan
    signal = np.nan_to_num(X[:, 0], nan=1.0) + rng.standard_normal(n)
    if task == "binary":
        y = (signal > 0).astype(np.int64)
    elif task == "three_classes":
        y = np.digitize(signal, [-0.5, 0.5]).astype(np.int64)
    else:
        y = np.round(3.0 * signal + rng.standard_normal(n), 2)
    w = rng.uniform(0.1, 5.0, n)
    if zero_weights:
        w[rng.random(n) < 0.2] = 0.0
        w[0] = max(w[0], 1.0)  # at least one row is there
    return task, X, y, w, params


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree_problems())
def test_tree_invariants(problem):
    task, X, y, w, params = problem
    if task == "regression":
        est = gputrees.DecisionTreeRegressor(**params)
    else:
        est = gputrees.DecisionTreeClassifier(**params)
    est.fit(X, y, sample_weight=w)
    tree = est.tree_
    # rows of weight 0 are not in the tree: they count nowhere
    present = w > 0
    Xp, yp, wp = X[present], y[present], w[present]
    path = est.decision_path(Xp).tocsc()
    leaves = est.apply(Xp)
    rows_of = [set(path[:, j].nonzero()[0].tolist()) for j in range(tree.node_count)]
    internal = tree.children_left >= 0
    is_leaf = ~internal

    # the root holds every training row; apply() ends each row in a leaf that its path reaches
    assert rows_of[0] == set(range(Xp.shape[0]))
    assert np.all(is_leaf[leaves])
    assert np.all(np.asarray(path[np.arange(Xp.shape[0]), leaves]).ravel() == 1)

    for node in range(tree.node_count):
        rows = np.fromiter(rows_of[node], dtype=np.int64)
        # counts and weights of the rows reaching each node
        assert tree.n_node_samples[node] == rows.size, node
        np.testing.assert_allclose(tree.weighted_n_node_samples[node], wp[rows].sum(), rtol=1e-12)
        if node > 0:
            assert tree.n_node_samples[node] >= params["min_samples_leaf"], node
        if not internal[node]:
            continue
        left, right = tree.children_left[node], tree.children_right[node]
        # children partition the parent's rows
        assert tree.n_node_samples[left] + tree.n_node_samples[right] == tree.n_node_samples[node]
        assert rows_of[left].isdisjoint(rows_of[right])
        assert rows_of[left] | rows_of[right] == rows_of[node]
        assert tree.n_node_samples[node] >= params["min_samples_split"]

    # depth
    depth = _node_depths(tree)
    assert depth.max() <= params["max_depth"]
    assert est.get_depth() == depth.max()
    assert est.get_n_leaves() == int(is_leaf.sum())

    # values and impurities, recomputed from the rows of each node
    for node in range(tree.node_count):
        rows = np.fromiter(rows_of[node], dtype=np.int64)
        wr, yr = wp[rows], yp[rows]
        W = wr.sum()
        if task == "regression":
            mean = np.sum(wr * yr) / W
            var = np.sum(wr * (yr - mean) ** 2) / W
            np.testing.assert_allclose(tree.value[node, 0, 0], mean, rtol=1e-9, atol=1e-9)
            np.testing.assert_allclose(tree.impurity[node], var, rtol=1e-7, atol=1e-8)
        else:
            frac = np.array([wr[yr == c].sum() for c in est.classes_]) / W
            np.testing.assert_allclose(tree.value[node, 0], frac, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(tree.impurity[node], 1.0 - np.sum(frac**2), rtol=1e-9, atol=1e-12)

    # leaf values are what predict returns for the training rows
    if task == "regression":
        np.testing.assert_allclose(est.predict(Xp), tree.value[leaves, 0, 0])
    else:
        np.testing.assert_allclose(est.predict_proba(Xp), tree.value[leaves, 0])


def test_absent_classes_with_float_weights():
    """Non-integer sample weights: sums of weights round.

    scikit-learn computes each node's value from the node's rows, so a class
    absent from a node has a value of exactly 0; it grows 45 leaves here.
    No class fraction may be off zero (or negative), and the tree must be
    scikit-learn's (not one that splits nodes holding a single class because
    rounding left them a ~1e-14 "impurity").
    """
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 3))
    y = (X[:, 0] + 0.3 * rng.standard_normal(400) > 0).astype(int)
    w = rng.uniform(0.5, 2.0, 400)
    est = gputrees.DecisionTreeClassifier(max_bins=65535).fit(X, y, sample_weight=w)
    tree = est.tree_
    path = est.decision_path(X).tocsc()
    assert tree.value.min() >= 0.0
    for j in range(tree.node_count):
        absent = np.setdiff1d(est.classes_, y[path[:, j].nonzero()[0]])
        np.testing.assert_array_equal(tree.value[j, 0, absent], 0.0, err_msg=f"node {j}")
    assert_same_as_sklearn(est, SkClassifier, X, y, sample_weight=w)


# ---------------------------------------------------------------------------
# 2. memory_limit: chunked levels without parent histograms
# ---------------------------------------------------------------------------


def _spy_histogram_builds(monkeypatch):
    """Record the number of nodes of every histogram build of the next fits.

    With one sibling pair per chunk, a chunk whose parents have histograms
    builds one node (the smaller child; the other is parent - child), and a
    chunk without parent histograms builds both children: a build of 2 nodes
    is a chunked level without parent histograms.
    """
    import dataclasses

    from gputrees import _classes

    calls = []
    real = _classes.get_kernels

    def spying_get_kernels(xp, *args, **kwargs):
        k = real(xp, *args, **kwargs)
        build = k.node_histograms

        def spy(xp_, codes, active, chan, slot_of_node, n_slots, n_bins):
            calls.append(int(n_slots))
            return build(xp_, codes, active, chan, slot_of_node, n_slots, n_bins)

        return dataclasses.replace(k, node_histograms=spy)

    monkeypatch.setattr(_classes, "get_kernels", spying_get_kernels)
    return calls


def test_small_memory_limit_best_first_grows_the_same_tree():
    """Best-first growth keeps the frontier's histograms as the chunks' arrays (a tuple): the same tree."""
    rng = np.random.default_rng(8)
    X = rng.standard_normal((20000, 20))
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.standard_normal(20000) > 0).astype(int)
    big = gputrees.DecisionTreeClassifier(max_leaf_nodes=300).fit(X, y)
    small = gputrees.DecisionTreeClassifier(max_leaf_nodes=300, memory_limit=1 << 20).fit(X, y)
    assert big.tree_.n_leaves == 300
    assert_same_tree(small.tree_, big.tree_)


@pytest.mark.parametrize("kind", ["classifier", "regressor", "regressor_integer_y"])
def test_small_memory_limit_grows_the_same_tree(kind, monkeypatch):
    """memory_limit bounds memory only: the tree must not change.

    ``regressor_integer_y`` has exactly representable channel sums (as the
    classifier's counts); ``regressor`` has float targets, whose histogram
    sums round differently when a child is built from its rows or as
    parent - sibling.
    """
    rng = np.random.default_rng(7)
    n, f = (20000, 20) if kind == "classifier" else (8000, 10)
    X = rng.standard_normal((n, f))
    X[rng.random((n, f)) < 0.05] = np.nan
    signal = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1] * X[:, 2]) + rng.standard_normal(n)
    if kind == "classifier":
        y = np.digitize(signal, [-0.7, 0.7])
        cls = gputrees.DecisionTreeClassifier
    else:
        y = signal if kind == "regressor" else np.round(4.0 * signal)
        cls = gputrees.DecisionTreeRegressor
    calls = _spy_histogram_builds(monkeypatch)
    # the levels of nodes of a few thousand rows built as histograms (not compiled subtrees)
    monkeypatch.setattr(_grower, "SUBTREE_BELOW_BINS", 1)
    monkeypatch.setattr(_grower, "SUBTREE_MIN_BINS", 0)
    big = cls(max_depth=None).fit(X, y)
    big_calls = list(calls)
    calls.clear()
    small = cls(max_depth=None, memory_limit=1 << 20).fit(X, y)
    # the default limit builds a whole level at once; 1 MiB holds one sibling
    # pair per chunk (hist of 2 nodes * SCAN_FACTOR > 1 MiB / 2), and some
    # levels have no parent histograms (both children built from their rows)
    assert max(big_calls) > 2
    assert max(calls) <= 2
    assert calls.count(2) > 0
    assert len(calls) > len(big_calls)
    assert big.tree_.node_count > 1000
    assert_same_tree(small.tree_, big.tree_)
    out = "predict_proba" if kind == "classifier" else "predict"
    Xt = rng.standard_normal((2000, f))
    Xt[rng.random((2000, f)) < 0.05] = np.nan
    np.testing.assert_array_equal(getattr(small, out)(Xt), getattr(big, out)(Xt))
    np.testing.assert_array_equal(small.apply(X), big.apply(X))


# ---------------------------------------------------------------------------
# 3. best-first growth
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("max_leaf_nodes", [2, 3, 7, 16, 50])
@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_best_first_reaches_max_leaf_nodes(kind, max_leaf_nodes):
    rng = np.random.default_rng(max_leaf_nodes)
    X = rng.standard_normal((600, 4))
    signal = X[:, 0] + np.sin(3 * X[:, 1]) + 0.5 * rng.standard_normal(600)
    if kind == "classifier":
        est = gputrees.DecisionTreeClassifier(max_leaf_nodes=max_leaf_nodes)
        y = (signal > 0).astype(int)
    else:
        est = gputrees.DecisionTreeRegressor(max_leaf_nodes=max_leaf_nodes)
        y = signal
    est.fit(X, y)
    assert est.get_n_leaves() == max_leaf_nodes
    assert est.tree_.node_count == 2 * max_leaf_nodes - 1
    # greedy best-first order: a bigger budget keeps every split and adds more
    bigger = type(est)(max_leaf_nodes=max_leaf_nodes + 5).fit(X, y)

    def splits(t):
        internal = np.flatnonzero(t.children_left >= 0)
        return {(int(t.n_node_samples[j]), int(t.feature[j]), float(t.threshold[j])) for j in internal}

    assert splits(est.tree_) < splits(bigger.tree_)


def test_best_first_with_max_depth_stops_early_when_data_run_out():
    X = np.arange(8, dtype=float)[:, None]
    y = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    est = gputrees.DecisionTreeClassifier(max_leaf_nodes=100).fit(X, y)
    assert est.get_n_leaves() == 8  # every row alone: no more splits possible
    est = gputrees.DecisionTreeClassifier(max_leaf_nodes=100, max_depth=2).fit(X, y)
    assert est.get_n_leaves() <= 4


def _f32(X):
    return np.asarray(X, dtype=np.float32)


BEST_FIRST_CASES = {
    "synthetic-20": (
        lambda: datasets.make_classification(n_samples=600, n_features=8, n_informative=5, random_state=0),
        SkClassifier,
        {"max_leaf_nodes": 20},
    ),
    "digits-13": (lambda: datasets.load_digits(return_X_y=True), SkClassifier, {"max_leaf_nodes": 13}),
    "wine-5": (lambda: datasets.load_wine(return_X_y=True), SkClassifier, {"max_leaf_nodes": 5, "criterion": "entropy"}),
    "titanic-25": (lambda: load_titanic(return_X_y=True), SkClassifier, {"max_leaf_nodes": 25}),
    "diabetes-30": (lambda: datasets.load_diabetes(return_X_y=True), SkRegressor, {"max_leaf_nodes": 30}),
    "diabetes-6-msl": (
        lambda: datasets.load_diabetes(return_X_y=True),
        SkRegressor,
        {"max_leaf_nodes": 6, "min_samples_leaf": 10},
    ),
}


@pytest.mark.parametrize("case", list(BEST_FIRST_CASES))
def test_best_first_matches_sklearn(case):
    load, sk_cls, params = BEST_FIRST_CASES[case]
    X, y = load()
    X = _f32(X)
    ours_cls = gputrees.DecisionTreeClassifier if sk_cls is SkClassifier else gputrees.DecisionTreeRegressor
    ours = ours_cls(max_bins=65535, **params).fit(X, y)
    assert ours.get_n_leaves() == params["max_leaf_nodes"]
    assert_same_as_sklearn(ours, sk_cls, X, y, **params)


# ---------------------------------------------------------------------------
# 4. a batch of trees (bootstrap multiplicities) equals single-tree fits
# ---------------------------------------------------------------------------


def _batch_problem(task, seed=0):
    rng = np.random.default_rng(seed)
    n = 300
    X = np.round(rng.standard_normal((n, 4)) * 4.0)  # few distinct values: exact binning
    X[rng.random((n, 4)) < 0.1] = np.nan
    signal = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) + 2.0 * rng.standard_normal(n)
    if task == "classification":
        y = np.digitize(signal, [-2.0, 2.0]).astype(np.int64)
    else:
        # multiples of 1/2: every channel sum (w*y, w*y**2, integer w) is exact, so
        # no split is decided by float rounding and the trees must agree exactly
        y = np.round(2.0 * signal) / 2.0
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=3).astype(np.float64)  # 3 bootstrap draws
    return X, y, counts


def _grow_batch(backend, X, y, counts, task, params):
    """GrowerInputs built the way DecisionTree*._fit builds them, with a multiplicity matrix."""
    _, _, conv = backend
    xp = _backend.namespace_for(conv(X), None)
    Xd = _backend.convert_to_namespace(xp, conv(X))
    is_cat = np.zeros(X.shape[1], dtype=bool)
    bin_mapper = fit_bin_mapper(xp, Xd, is_cat, 255)
    codes = bin_mapper.transform(xp, Xd)
    if task == "classification":
        criterion = CLASSIFICATION_CRITERIA["gini"](n_outputs=1, n_classes=int(y.max()) + 1)
        y_dev = _backend.from_numpy(xp, y.astype(np.int64))
    else:
        criterion = REGRESSION_CRITERIA["squared_error"](n_outputs=1, n_classes=1)
        y_dev = _backend.from_numpy(xp, y.astype(np.float64)[:, None])
    channels = criterion.row_channels(xp, y_dev, _backend.from_numpy(xp, np.ones(X.shape[0])))
    inputs = GrowerInputs(
        codes=codes,
        channels=channels,
        multiplicity=_backend.from_numpy(xp, counts),
        bin_mapper=bin_mapper,
        criterion=criterion,
        kernels=get_kernels(xp),
        rng=_backend.host_rng(0),
    )
    batch = grow(xp, inputs, params)
    values = criterion.value(xp, batch.stats)
    leaves = apply_trees(xp, batch, bin_mapper.encode_for_predict(xp, Xd), bin_mapper.missing_bin)
    per_row = _backend.to_numpy(gather_node_values(xp, values, leaves))  # (n, trees, outputs, k)
    trees = [Tree(batch, criterion, xp, bin_mapper, None, tree_index=t) for t in range(counts.shape[0])]
    return batch, trees, per_row


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_batch_equals_single_fits_with_sample_weight(backend, task):
    """Each tree of a 3-tree batch equals a single fit with sample_weight = its counts.

    What is compared: in the batch, channel 0 (the row count) is the
    multiplicity, so ``n_node_samples`` counts a row drawn twice twice; a
    single fit with ``sample_weight=counts`` counts it once (and drops rows of
    count 0) and puts the counts in the weights. Hence:

    * equal exactly: structure (children), split features, thresholds (exact
      binning: midpoints of the values in the node, the same with or without
      the out-of-bag rows), weighted sample counts, impurities and node values;
    * the batch's ``n_node_samples`` equals the single fit's *weighted* counts;
    * ``missing_go_to_left`` only where the node's training rows had a missing
      value in the split feature: elsewhere NaN goes to the child with more
      *rows* (channel 0), which differs between the two by construction;
    * predictions on the rows that reach no such node with a NaN: in-bag rows
      and rows without NaN.

    With min_samples_leaf=1 and min_samples_split=2 the count/weight
    difference changes no split: a node with positive impurity holds two
    distinct rows either way.
    """
    X, y, counts = _batch_problem(task)
    params = GrowerParams(max_depth=5)
    batch, trees, per_row = _grow_batch(backend, X, y, counts, task, params)
    assert batch.left.shape[0] == 3
    cls = gputrees.DecisionTreeClassifier if task == "classification" else gputrees.DecisionTreeRegressor
    for t in range(3):
        single = cls(max_depth=5).fit(X, y, sample_weight=counts[t])
        ref = single.tree_
        assert_same_tree(
            trees[t],
            ref,
            fields=("children_left", "children_right", "feature", "threshold", "weighted_n_node_samples", "value"),
        )
        np.testing.assert_allclose(trees[t].impurity, ref.impurity, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(trees[t].n_node_samples, ref.weighted_n_node_samples.astype(np.int64))
        in_bag = counts[t] > 0
        path = single.decision_path(X[in_bag]).tocsc()
        saw_nan = np.array(
            [
                ref.children_left[j] >= 0
                and bool(np.isnan(X[in_bag][path[:, j].nonzero()[0], ref.feature[j]]).any())
                for j in range(ref.node_count)
            ]
        )
        assert saw_nan.any()
        np.testing.assert_array_equal(trees[t].missing_go_to_left[saw_nan], ref.missing_go_to_left[saw_nan])
        rows = in_bag | ~np.isnan(X).any(axis=1)
        if task == "classification":
            np.testing.assert_allclose(per_row[rows, t, 0, :], single.predict_proba(X[rows]), rtol=1e-12, atol=1e-15)
        else:
            np.testing.assert_allclose(per_row[rows, t, 0, 0], single.predict(X[rows]), rtol=1e-12, atol=1e-12)
    # the trees of the batch differ (different bootstrap draws)
    assert not _trees_equal(trees[0], trees[1])


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_batch_equals_single_fits_on_repeated_rows(backend, task):
    """Each tree of the batch equals a single fit on X with every row repeated
    ``counts`` times: here channel 0 agrees too, so *every* tree_ array is
    compared, ``n_node_samples`` included, with a ``min_samples_leaf`` that
    counts repeated rows."""
    X, y, counts = _batch_problem(task, seed=1)
    params = GrowerParams(max_depth=6, min_samples_leaf=4, min_samples_split=10)
    _, trees, per_row = _grow_batch(backend, X, y, counts, task, params)
    cls = gputrees.DecisionTreeClassifier if task == "classification" else gputrees.DecisionTreeRegressor
    for t in range(3):
        rep = np.repeat(np.arange(X.shape[0]), counts[t].astype(np.int64))
        single = cls(max_depth=6, min_samples_leaf=4, min_samples_split=10).fit(X[rep], y[rep])
        assert_same_tree(trees[t], single.tree_, fields=TREE_ARRAYS[:-2])
        np.testing.assert_allclose(trees[t].impurity, single.tree_.impurity, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(trees[t].value, single.tree_.value, rtol=1e-12, atol=1e-15)
        out = single.predict_proba(X) if task == "classification" else single.predict(X)[:, None]
        np.testing.assert_allclose(per_row[:, t, 0, :], out, rtol=1e-12, atol=1e-12)


def test_batch_of_one_tree_without_multiplicity_matches_estimator():
    X, y, _ = _batch_problem("classification")
    ones = np.ones((1, X.shape[0]))
    _, trees, _ = _grow_batch(("numpy", np, np.asarray), X, y, ones, "classification", GrowerParams(max_depth=4))
    single = gputrees.DecisionTreeClassifier(max_depth=4).fit(X, y)
    assert_same_tree(trees[0], single.tree_)


# ---------------------------------------------------------------------------
# 5. max_features and random_state
# ---------------------------------------------------------------------------


def _many_informative():
    return datasets.make_classification(
        n_samples=800, n_features=20, n_informative=15, n_redundant=0, random_state=0
    )


@pytest.mark.parametrize("max_features", [3, "sqrt", 0.5])
def test_max_features_same_seed_same_tree(max_features):
    X, y = _many_informative()
    a = gputrees.DecisionTreeClassifier(max_features=max_features, random_state=42).fit(X, y)
    b = gputrees.DecisionTreeClassifier(max_features=max_features, random_state=42).fit(X, y)
    assert_same_tree(a.tree_, b.tree_)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    # a RandomState is accepted too, and reproducible
    c = gputrees.DecisionTreeClassifier(max_features=max_features, random_state=np.random.RandomState(5)).fit(X, y)
    d = gputrees.DecisionTreeClassifier(max_features=max_features, random_state=np.random.RandomState(5)).fit(X, y)
    assert_same_tree(c.tree_, d.tree_)


def test_max_features_random_state_as_documented():
    """random_state is None, an int or a RandomState (scikit-learn's rule); a Generator is refused clearly."""
    X, y = _many_informative()
    a = gputrees.DecisionTreeClassifier(max_features=3, random_state=np.random.RandomState(42)).fit(X, y)
    b = gputrees.DecisionTreeClassifier(max_features=3, random_state=np.random.RandomState(42)).fit(X, y)
    assert_same_tree(a.tree_, b.tree_)
    with pytest.raises(ValueError, match="random_state"):
        gputrees.DecisionTreeClassifier(random_state=np.random.default_rng(42)).fit(X, y)


@pytest.mark.parametrize("max_features", [3, "sqrt", 0.5])
def test_max_features_different_seeds_different_trees(max_features):
    X, y = _many_informative()
    trees = [
        gputrees.DecisionTreeClassifier(max_features=max_features, random_state=s).fit(X, y).tree_
        for s in range(4)
    ]
    for i in range(4):
        for j in range(i + 1, 4):
            assert not _trees_equal(trees[i], trees[j]), (i, j)
    # the root feature is not always the same (it is drawn among max_features)
    assert len({int(t.feature[0]) for t in trees}) > 1 or max_features == 0.5


def test_max_features_regressor_reproducible():
    X, y = datasets.make_regression(n_samples=500, n_features=12, n_informative=10, random_state=1)
    a = gputrees.DecisionTreeRegressor(max_features=4, random_state=3, max_depth=6).fit(X, y)
    b = gputrees.DecisionTreeRegressor(max_features=4, random_state=3, max_depth=6).fit(X, y)
    c = gputrees.DecisionTreeRegressor(max_features=4, random_state=4, max_depth=6).fit(X, y)
    assert_same_tree(a.tree_, b.tree_)
    assert not _trees_equal(a.tree_, c.tree_)
    assert a.max_features_ == 4


def test_max_features_all_equals_none():
    X, y = _many_informative()
    a = gputrees.DecisionTreeClassifier(max_features=20, random_state=1).fit(X, y)
    b = gputrees.DecisionTreeClassifier(max_features=None, random_state=2).fit(X, y)
    assert_same_tree(a.tree_, b.tree_)


def test_local_rows_retire_and_row_leaves_with_and_without_scatter():
    """retire keeps, drops or records pairs; row_leaves is the same with the scatter kernel and the argsort."""
    import dataclasses as dc

    from gputrees._records import LeafLayout
    from gputrees._rows import LocalRows
    from gputrees.kernels import get_kernels

    xp = _backend.namespace_of(np.empty(0))
    rng = np.random.default_rng(3)
    n = 50
    codes = rng.integers(0, 4, (n, 3)).astype(np.uint8)
    channels = rng.standard_normal((1, n, 3))
    node = rng.integers(0, 3, n).astype(np.int64)
    leaves = []
    for scatter in (True, False):
        kernels = get_kernels(xp, "numba")
        if not scatter:
            kernels = dc.replace(kernels, scatter_rows=reference.scatter_rows)
        rows = LocalRows(xp, codes, channels, kernels, record_leaves=True)
        assert rows.key is rows.row  # one tree: one array
        order = np.argsort(node, kind="stable")
        rows.row = rows.key = order.astype(np.int64)
        rows.node = node[order]
        rows.retire(np.array([0, 1, 2], dtype=np.int64))  # every node stays: nothing recorded
        assert rows.node.shape[0] == n and not rows._leaf_keys
        # the same, counted from the node runs (bounds), and a node leaving despite them
        rows.bounds = np.searchsorted(rows.node, np.arange(4), side="left").astype(np.int64)
        rows.retire(np.array([0, 1, 2, -1], dtype=np.int64))
        assert rows.node.shape[0] == n and not rows._leaf_keys and rows.bounds is not None
        rows.retire(np.array([0, -1, 1], dtype=np.int64))  # node 1 leaves
        assert (rows.node != 1).all() and rows.key is rows.row
        assert rows._leaf_nodes[0].tolist() == [1] * int((node == 1).sum())
        layout = LeafLayout(
            parent=np.array([-1, 0, 0], dtype=np.int64), keep=np.ones(3, dtype=bool),
            new_id=np.arange(3, dtype=np.int64), local_of_new=np.arange(3, dtype=np.int64), n_rounds=1,
        )
        got = rows.row_leaves(layout)
        assert rows.node.shape[0] == 0
        assert got.tolist() == [node.tolist()]
        leaves.append(got)
    assert np.array_equal(*leaves)


@pytest.mark.parametrize("kernel_set", ["numba", "bincount", "reference"])
def test_local_rows_counts_from_runs_and_from_a_pass(kernel_set):
    """counts() of consecutive node ids: from the routing's node runs where known, else a pass; both the pairs."""
    from gputrees._rows import LocalRows
    from gputrees.kernels import get_kernels

    xp = _backend.namespace_of(np.empty(0))
    rng = np.random.default_rng(5)
    n = 40
    node = np.sort(rng.integers(0, 6, n)).astype(np.int64)  # node 4 has no pair when drawn so
    node[node == 4] = 5
    rows = LocalRows(xp, rng.integers(0, 4, (n, 2)).astype(np.uint8), rng.standard_normal((n, 3)),
                     get_kernels(xp, kernel_set))
    rows.node = node
    want = np.array([(node == i).sum() for i in range(2, 6)], dtype=np.float64)
    rows.bounds = None
    assert np.asarray(rows.counts(2, 4)).tolist() == want.tolist()
    rows.bounds = np.searchsorted(node, np.arange(7), side="left").astype(np.int64)
    got = rows.counts(2, 4)
    assert got.dtype == np.float64 and np.asarray(got).tolist() == want.tolist()
    # pairs with multiplicities (bootstrap counts): their totals, not the pairs
    mult = rng.integers(0, 3, (2, n)).astype(np.float64)
    boot = LocalRows(xp, rng.integers(0, 4, (n, 2)).astype(np.uint8), rng.standard_normal((n, 3)),
                     get_kernels(xp, kernel_set), multiplicity=mult)
    assert boot.bounds is not None
    assert np.asarray(boot.counts(0, 2)).tolist() == mult.sum(axis=1).tolist()


@pytest.mark.parametrize("ids", [[], [0], [3, 4, 9], [0, 5, 11], [11], list(range(12))])
def test_slot_table_positions_of_sorted_ids(ids):
    """Every node id 0 .. n_ids - 1: its position among the sorted ids asked about, or -1."""
    from gputrees._grower import _slot_table

    xp = _backend.namespace_of(np.empty(0))
    got = np.asarray(_slot_table(xp, np.asarray(ids, dtype=np.int64), 12))
    want = np.full(12, -1, dtype=np.int64)
    want[ids] = np.arange(len(ids))
    assert got.dtype == np.int64 and got.tolist() == want.tolist()


@pytest.mark.parametrize("kernel_set", ["numba", "bincount"])
@pytest.mark.parametrize("with_mult", [False, True])
def test_retire_by_runs_equals_retire_by_mask(with_mult, kernel_set, monkeypatch):
    """Pairs grouped by node: retiring by slices of the node runs keeps and records what the boolean mask does
    (the Numba set's ``keep_pairs`` or boolean indexing), in the same order, and both keep the runs known."""
    from gputrees import _rows
    from gputrees.kernels import get_kernels

    xp = _backend.namespace_of(np.empty(0))
    rng = np.random.default_rng(9)
    n, n_ids = 200, 12
    results = []
    for max_blocks in (64, 0):  # runs, then (no block allowed) the mask
        monkeypatch.setattr(_rows, "RETIRE_MAX_BLOCKS", max_blocks)
        rng = np.random.default_rng(9)
        mult = rng.integers(0, 3, (1, n)).astype(np.float64) + 1 if with_mult else None
        rows = _rows.LocalRows(xp, rng.integers(0, 4, (n, 2)).astype(np.uint8), rng.standard_normal((n, 3)),
                               get_kernels(xp, kernel_set), multiplicity=mult, record_leaves=not with_mult)
        node = np.sort(rng.integers(0, n_ids, rows.row.shape[0])).astype(np.int64)
        perm = rng.permutation(rows.row.shape[0])
        one = rows.key is rows.row
        rows.row = rows.row[perm]
        rows.key = rows.row if one else rows.key[perm]
        if rows.mult is not None:
            rows.mult = rows.mult[perm]
        rows.node = node
        rows.bounds = np.searchsorted(node, np.arange(n_ids + 1), side="left").astype(np.int64)
        slots = np.where(rng.random(n_ids) < 0.5, np.arange(n_ids), -1).astype(np.int64)
        slots[node[0]] = 0  # some pairs stay
        rows.retire(slots)
        assert rows.bounds is not None
        assert rows.bounds[-1] == rows.node.shape[0]
        assert np.array_equal(np.repeat(np.arange(n_ids), np.diff(rows.bounds)), rows.node)
        results.append((rows.row.copy(), rows.node.copy(), None if rows.mult is None else rows.mult.copy(),
                        [a.copy() for a in rows._leaf_keys], [a.copy() for a in rows._leaf_nodes]))
    (r1, n1, m1, k1, l1), (r2, n2, m2, k2, l2) = results
    assert np.array_equal(r1, r2) and np.array_equal(n1, n2)
    assert (m1 is None and m2 is None) or np.array_equal(m1, m2)
    assert len(k1) == len(k2) and all(np.array_equal(a, b) for a, b in zip(k1 + l1, k2 + l2))
    assert np.all(slots[n1] >= 0)


@pytest.mark.parametrize("task", ["binary", "binary categorical", "multiclass", "regression"])
def test_a_small_tree_grown_whole_from_its_root_is_the_level_wise_tree(task, monkeypatch):
    from estimator_zoo import assert_same_model

    rng = np.random.default_rng(7)
    X = rng.normal(size=(400, 6))
    X[:, 1] = np.round(X[:, 1] * 2)  # few distinct values: exact midpoints
    if task == "binary categorical":
        X[:, 0] = rng.integers(0, 5, size=400)
    signal = X[:, 0] + X[:, 1] + 0.5 * rng.normal(size=400)
    if task == "regression":
        cls, y = gputrees.DecisionTreeRegressor, signal
    else:
        cls = gputrees.DecisionTreeClassifier
        y = (signal > 0).astype(int) + ((signal > 1) if task == "multiclass" else 0)
    params = dict(categorical_features=[0]) if task == "binary categorical" else {}
    whole = []
    small_tree = _grower.Grower._small_tree

    def spy(self):
        whole.append(small_tree(self))
        return whole[-1]

    monkeypatch.setattr(_grower.Grower, "_small_tree", spy)
    from_root = cls(random_state=0, **params).fit(X, y)
    assert whole == [True]
    monkeypatch.setattr(_grower, "WHOLE_TREE_CELLS", 0)
    level_wise = cls(random_state=0, **params).fit(X, y)
    assert whole == [True, False]
    assert_same_model(from_root, level_wise)
