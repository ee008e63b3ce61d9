"""Cost-complexity and reduced-error pruning (gputrees._pruning and the estimators).

Oracles: scikit-learn's ``cost_complexity_pruning_path`` and ``ccp_alpha`` on
trees both libraries grow alike; hand-built trees whose prunings are worked
out by hand below; a plain recursive NumPy reference of reduced-error pruning;
single trees against the same trees pruned inside a batch.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn import datasets
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier as SkClassifier
from sklearn.tree import DecisionTreeRegressor as SkRegressor
from sklearn.utils._param_validation import InvalidParameterError

import gputrees
from gputrees import _backend
from gputrees._binning import fit_bin_mapper
from gputrees._criteria import CLASSIFICATION_CRITERIA, REGRESSION_CRITERIA, Gini
from gputrees._grower import grow
from gputrees._records import GrowerInputs, GrowerParams, TreeBatch
from gputrees._predictor import apply_trees
from gputrees._pruning import ccp_path, prune_ccp, prune_reduced_error
from gputrees.datasets import load_titanic
from gputrees.kernels import get_kernels

from test_grower import assert_same_tree

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _canon(est, X):
    """The tree as nested (rows, left, right) tuples: which training rows each
    node holds, whatever feature (of several tied ones) made each split."""
    tree = est.tree_
    path = est.decision_path(X).tocsc()

    def node(i):
        rows = tuple(path.indices[path.indptr[i] : path.indptr[i + 1]].tolist())
        if tree.children_left[i] < 0:
            return (rows,)
        return (rows, node(tree.children_left[i]), node(tree.children_right[i]))

    return node(0)


def _sklearn_twin(sk_cls, ours, X, y, sample_weight=None, n_seeds=20, **params):
    """scikit-learn's seed whose unpruned tree partitions the rows as ours does.

    With max_features=None scikit-learn's only randomness is the feature
    order that breaks exact ties of gain; ours takes the lowest feature. A
    seed that happens to break the ties our way gives the same tree; pruning
    then depends only on the node statistics.
    """
    target = _canon(ours, X)
    for seed in range(n_seeds):
        est = sk_cls(random_state=seed, **params).fit(X, y, sample_weight=sample_weight)
        if _canon(est, X) == target:
            return seed
    pytest.skip("exact ties: no scikit-learn seed grows our tree")


def _alpha_groups(alphas, rtol=1e-12):
    """Indices of the last alpha of each run of (near-)equal alphas.

    scikit-learn records one step per pruned node; nodes of equal effective
    alpha are all pruned by ``ccp_alpha`` set to that alpha, in both libraries.
    """
    keep = []
    for i in range(len(alphas)):
        if i + 1 == len(alphas) or alphas[i + 1] > alphas[i] * (1 + rtol) + 1e-300:
            keep.append(i)
    return keep


def _diabetes():
    X, y = datasets.load_diabetes(return_X_y=True)
    return X.astype(np.float32), y


def _breast_cancer():
    X, y = datasets.load_breast_cancer(return_X_y=True)
    return X.astype(np.float32), y


def _wine():
    X, y = datasets.load_wine(return_X_y=True)
    return X.astype(np.float32), y


def _synthetic_classification():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 5)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + 0.3 * rng.standard_normal(300) > 0).astype(int)
    return X, y


def _weights(n):
    # integer weights keep every sum exact in both libraries
    return np.random.default_rng(1).integers(1, 4, size=n).astype(np.float64)


# (name, data, regression?, params, sample weights?)
CCP_CASES = [
    ("diabetes-msl5", _diabetes, True, {"min_samples_leaf": 5}, False),
    ("diabetes-leaves30", _diabetes, True, {"max_leaf_nodes": 30}, False),
    ("diabetes-poisson", _diabetes, True, {"criterion": "poisson", "min_samples_leaf": 10}, False),
    ("diabetes-weighted", _diabetes, True, {"min_samples_leaf": 8}, True),
    ("breast-cancer-leaves12", _breast_cancer, False, {"max_leaf_nodes": 12}, False),
    ("breast-cancer-depth4", _breast_cancer, False, {"max_depth": 4}, False),
    ("wine", _wine, False, {}, False),
    ("wine-entropy", _wine, False, {"criterion": "entropy", "min_samples_leaf": 3}, False),
    ("synthetic", _synthetic_classification, False, {"min_samples_leaf": 3}, False),
]


# ---------------------------------------------------------------------------
# 1. cost-complexity pruning against scikit-learn
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", CCP_CASES, ids=[c[0] for c in CCP_CASES])
def test_ccp_path_and_each_alpha_match_sklearn(case):
    _, load, regression, params, weighted = case
    X, y = load()
    sw = _weights(X.shape[0]) if weighted else None
    ours_cls = gputrees.DecisionTreeRegressor if regression else gputrees.DecisionTreeClassifier
    sk_cls = SkRegressor if regression else SkClassifier
    full = ours_cls(max_bins=65535, **params).fit(X, y, sample_weight=sw)
    seed = _sklearn_twin(sk_cls, full, X, y, sample_weight=sw, **params)

    path = ours_cls(max_bins=65535, **params).cost_complexity_pruning_path(X, y, sample_weight=sw)
    sk_path = sk_cls(random_state=seed, **params).cost_complexity_pruning_path(X, y, sample_weight=sw)
    assert path.ccp_alphas.shape == sk_path.ccp_alphas.shape
    np.testing.assert_allclose(path.ccp_alphas, sk_path.ccp_alphas, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(path.impurities, sk_path.impurities, rtol=1e-9, atol=1e-15)
    assert path.ccp_alphas[0] == 0.0
    assert np.all(np.diff(path.impurities) >= -1e-12)

    # each alpha of the path (ours with ours, scikit-learn with its own), and
    # alphas half-way between successive ones
    idx = _alpha_groups(sk_path.ccp_alphas)
    uniq = sk_path.ccp_alphas[idx]
    pairs = [(path.ccp_alphas[i], sk_path.ccp_alphas[i]) for i in idx]
    pairs += [(m, m) for m in ((uniq[1:] + uniq[:-1]) / 2)[::2]]
    for ours_alpha, sk_alpha in pairs:
        ours = ours_cls(max_bins=65535, ccp_alpha=ours_alpha, **params).fit(X, y, sample_weight=sw)
        theirs = sk_cls(random_state=seed, ccp_alpha=sk_alpha, **params).fit(X, y, sample_weight=sw)
        assert _canon(ours, X) == _canon(theirs, X), ours_alpha
        assert ours.get_n_leaves() == theirs.get_n_leaves()
        assert ours.get_depth() == theirs.get_depth()
        if regression:
            np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-10)
        else:
            np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=1e-10, atol=1e-12)
    # the impurity recorded for an alpha is the pruned tree's
    for i in idx[::4]:
        t = ours_cls(max_bins=65535, ccp_alpha=path.ccp_alphas[i], **params).fit(X, y, sample_weight=sw).tree_
        leaves = t.children_left < 0
        total = np.sum(t.weighted_n_node_samples[leaves] * t.impurity[leaves]) / t.weighted_n_node_samples[0]
        assert total == pytest.approx(path.impurities[i], rel=1e-9, abs=1e-15)


def test_ccp_alpha_zero_and_beyond_the_path():
    X, y = _breast_cancer()
    full = gputrees.DecisionTreeClassifier(max_bins=65535).fit(X, y)
    path = full.cost_complexity_pruning_path(X, y)
    zero = gputrees.DecisionTreeClassifier(max_bins=65535, ccp_alpha=0.0).fit(X, y)
    assert_same_tree(zero.tree_, full.tree_)
    stump = gputrees.DecisionTreeClassifier(max_bins=65535, ccp_alpha=path.ccp_alphas[-1] * 2).fit(X, y)
    assert stump.tree_.node_count == 1
    assert stump.get_depth() == 0
    np.testing.assert_allclose(stump.predict_proba(X), np.tile(full.tree_.value[0, 0], (X.shape[0], 1)))
    np.testing.assert_array_equal(stump.apply(X), np.zeros(X.shape[0]))


# ---------------------------------------------------------------------------
# 2. hand-built trees
# ---------------------------------------------------------------------------


def _hand_batch(xp, children, stats):
    """A one-tree TreeBatch from {node: (left, right)} and per-node channel sums.

    Every internal node splits feature 0 at its node index (the thresholds
    play no part in pruning).
    """
    n = len(stats)
    left = np.full(n, -1, dtype=np.int64)
    right = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    for node, (lc, rc) in sorted(children.items()):
        left[node], right[node] = lc, rc
        depth[lc] = depth[rc] = depth[node] + 1
    internal = left >= 0
    feature = np.where(internal, 0, -2)
    dev = lambda a: _backend.from_numpy(xp, np.asarray(a)[None, ...])  # noqa: E731
    return TreeBatch(
        node_count=np.asarray([n], dtype=np.int64),
        left=dev(left),
        right=dev(right),
        feature=dev(feature),
        bin=dev(np.where(internal, 0, -1)),
        missing_left=dev(np.zeros(n, dtype=bool)),
        is_categorical=dev(np.zeros(n, dtype=bool)),
        cat_left=dev(np.zeros((n, 0), dtype=bool)),
        threshold=dev(np.where(internal, np.arange(n, dtype=np.float64), -2.0)),
        stats=dev(np.asarray(stats, dtype=np.float64)),
        depth=dev(depth),
        max_depth=int(depth.max()),
    )


def _class_stats(counts):
    """Channels (count, class 0 weight, class 1 weight) of unit-weight rows."""
    return [[sum(c), c[0], c[1]] for c in counts]


def _host(a):
    return _backend.to_numpy(a)


# root [6, 4] -> A [5, 1] -> [5, 0], [0, 1]
#             -> B [1, 3] -> [1, 1], [0, 2]
# With W = 10 and Gini: R(root) = 0.48, R(A) = 1/6, R(B) = 0.15, R([1, 1]) = 0.1,
# pure leaves 0.
#   g(A) = (1/6 - 0) / 1 = 0.1667, g(B) = (0.15 - 0.1) / 1 = 0.05,
#   g(root) = (0.48 - 0.1) / 3 = 0.1267.
# Step 1 prunes B (0.05): the tree's impurity 0.1 -> 0.15, and g(root) becomes
# (0.48 - 0.15) / 2 = 0.165 < g(A): step 2 prunes the root (0.165), A never
# alone.
HAND_CCP_CHILDREN = {0: (1, 2), 1: (3, 4), 2: (5, 6)}
HAND_CCP_STATS = _class_stats([(6, 4), (5, 1), (1, 3), (5, 0), (0, 1), (1, 1), (0, 2)])


def test_hand_built_tree_cost_complexity(backend):
    _, mod, _ = backend
    xp = _backend.namespace_of(mod.asarray([0]))
    batch = _hand_batch(xp, HAND_CCP_CHILDREN, HAND_CCP_STATS)
    crit = Gini(n_outputs=1, n_classes=2)
    (alphas, impurities), = ccp_path(xp, batch, crit)
    np.testing.assert_allclose(alphas, [0.0, 0.05, 0.165], rtol=1e-12)
    np.testing.assert_allclose(impurities, [0.1, 0.15, 0.48], rtol=1e-12)

    unchanged = prune_ccp(xp, batch, crit, 0.0)
    assert unchanged is batch
    small = prune_ccp(xp, batch, crit, 0.1)  # B becomes a leaf, its leaves go
    np.testing.assert_array_equal(small.node_count, [5])
    np.testing.assert_array_equal(_host(small.left)[0], [1, 3, -1, -1, -1])
    np.testing.assert_array_equal(_host(small.right)[0], [2, 4, -1, -1, -1])
    np.testing.assert_array_equal(_host(small.feature)[0], [0, 0, -2, -2, -2])
    np.testing.assert_array_equal(_host(small.threshold)[0], [0.0, 1.0, -2.0, -2.0, -2.0])
    np.testing.assert_array_equal(_host(small.stats)[0], np.asarray(HAND_CCP_STATS)[[0, 1, 2, 3, 4]])
    assert small.max_depth == 2
    at = prune_ccp(xp, batch, crit, 0.165)  # exactly the root's alpha: pruned (<=)
    np.testing.assert_array_equal(at.node_count, [1])
    assert at.max_depth == 0
    below = prune_ccp(xp, batch, crit, 0.165 * (1 - 1e-9))
    np.testing.assert_array_equal(below.node_count, [5])


# Reduced-error pruning, 2 classes, training majority classes:
#   0: [11, 9] -> 0     1: [9, 3] -> 0     2: [2, 6] -> 1
#   3: [8, 0] -> 0      4: [1, 3] -> 1     5: [2, 1] -> 0     6: [0, 5] -> 1
# Validation rows (leaf: labels):
#   3: 0 0          errors as leaf 3: 0, at 1: 0, at root: 0
#   4: 0 0 1        leaf 4: 2, node 1: 1, root: 1
#   5: 1 1          leaf 5: 2, node 2: 0, root: 2
#   6: 1            leaf 6: 0, node 2: 0, root: 1
# Subtree error - leaf error: node 1: 2 - 1 = 1, node 2: 2 - 0 = 2,
# root: 4 - 4 = 0. Step 1 prunes node 2 (error 4 -> 2); node 1 still gains 1
# (2 -> 1); the root would lose (1 - 4 < 0): stop. Pruned: [2, 1].
HAND_REP_CHILDREN = {0: (1, 2), 1: (3, 4), 2: (5, 6)}
HAND_REP_STATS = _class_stats([(11, 9), (9, 3), (2, 6), (8, 0), (1, 3), (2, 1), (0, 5)])
HAND_REP_ROWS = [(3, 0), (3, 0), (4, 0), (4, 0), (4, 1), (5, 1), (5, 1), (6, 1)]
# a tie: a fourth row of class 0 in leaf 4 makes node 1 gain 3 - 1 = 2 like
# node 2; the lower index (node 1) goes first, then node 2 (errors 5, 3, 1).
HAND_REP_TIE_ROWS = HAND_REP_ROWS + [(4, 0)]


def _hand_rep(xp, rows, weights=None):
    batch = _hand_batch(xp, HAND_REP_CHILDREN, HAND_REP_STATS)
    crit = Gini(n_outputs=1, n_classes=2)
    leaves = _backend.from_numpy(xp, np.asarray([[r[0]] for r in rows], dtype=np.int64))
    y = _backend.from_numpy(xp, np.asarray([r[1] for r in rows], dtype=np.int64))
    w = np.ones(len(rows)) if weights is None else np.asarray(weights, dtype=np.float64)
    return prune_reduced_error(
        xp, batch, crit.value(xp, batch.stats), leaves, y, _backend.from_numpy(xp, w), True, get_kernels(xp)
    )


def test_hand_built_tree_reduced_error(backend):
    _, mod, _ = backend
    xp = _backend.namespace_of(mod.asarray([0]))
    pruned_batch, pruned, errors = _hand_rep(xp, HAND_REP_ROWS)
    np.testing.assert_array_equal(pruned[0], [2, 1])
    np.testing.assert_array_equal(errors[0], [4.0, 2.0, 1.0])
    np.testing.assert_array_equal(pruned_batch.node_count, [3])
    np.testing.assert_array_equal(_host(pruned_batch.left)[0], [1, -1, -1])
    np.testing.assert_array_equal(_host(pruned_batch.stats)[0], np.asarray(HAND_REP_STATS)[:3])

    _, pruned, errors = _hand_rep(xp, HAND_REP_TIE_ROWS)
    np.testing.assert_array_equal(pruned[0], [1, 2])
    np.testing.assert_array_equal(errors[0], [5.0, 3.0, 1.0])

    # weights: the class-1 row of leaf 4 weighs 3, so node 1 as a leaf makes
    # 3 errors against 2 in its subtree: only node 2 is pruned
    w = [1, 1, 1, 1, 3, 1, 1, 1]
    _, pruned, errors = _hand_rep(xp, HAND_REP_ROWS, w)
    np.testing.assert_array_equal(pruned[0], [2])
    np.testing.assert_array_equal(errors[0], [4.0, 2.0])

    # nothing to gain: validation rows all right at their leaves
    batch, pruned, errors = _hand_rep(xp, [(3, 0), (4, 1), (6, 1)])
    assert pruned[0].size == 0
    np.testing.assert_array_equal(errors[0], [0.0])
    np.testing.assert_array_equal(batch.node_count, [7])


# ---------------------------------------------------------------------------
# 3. reduced-error pruning on real data
# ---------------------------------------------------------------------------


def _validation_errors_by_node(est, X, y, sample_weight):
    """Per node of est.tree_: validation error as a leaf (E) and of its subtree (S), NumPy."""
    t = est.tree_
    path = est.decision_path(X).toarray().astype(bool)  # (n, nodes)
    leaf = est.apply(X)
    w = np.ones(X.shape[0]) if sample_weight is None else sample_weight
    if hasattr(est, "classes_"):
        pred = np.argmax(t.value[:, 0, :], axis=1)
        codes = np.searchsorted(est.classes_, y)
        err_at = w[:, None] * (pred[None, :] != codes[:, None])  # (n, nodes)
    else:
        err_at = w[:, None] * (t.value[None, :, 0, 0] - y[:, None]) ** 2
    row_leaf_err = err_at[np.arange(X.shape[0]), leaf]
    E = np.sum(err_at * path, axis=0)
    S = np.sum(row_leaf_err[:, None] * path, axis=0)
    return E, S


def _reference_reduced_error(est, X, y, sample_weight=None):
    """Plain reduced-error pruning: recursion over nodes, one prune per loop."""
    t = est.tree_
    E, _ = _validation_errors_by_node(est, X, y, sample_weight)
    left, right = t.children_left, t.children_right
    is_leaf = left < 0
    alive = np.ones(t.node_count, dtype=bool)

    def subtree_error(node):
        if is_leaf[node]:
            return E[node]
        return subtree_error(left[node]) + subtree_error(right[node])

    def kill(node):
        alive[node] = False
        if left[node] >= 0:
            kill(left[node])
            kill(right[node])

    scale = max(E.max(), subtree_error(0))
    pruned, errors = [], [subtree_error(0)]
    while True:
        best, best_node = -np.inf, None
        for node in range(t.node_count):  # lowest index wins ties
            if alive[node] and not is_leaf[node]:
                gain = subtree_error(node) - E[node]
                if gain > best + 1e-12 * scale:
                    best, best_node = gain, node
        if best_node is None or best <= 1e-12 * scale:
            return pruned, errors
        kill(left[best_node])
        kill(right[best_node])
        is_leaf[best_node] = True
        pruned.append(best_node)
        errors.append(subtree_error(0))


REP_CASES = [
    ("breast-cancer", _breast_cancer, gputrees.DecisionTreeClassifier, {}),
    ("wine-entropy", _wine, gputrees.DecisionTreeClassifier, {"criterion": "entropy"}),
    ("diabetes", _diabetes, gputrees.DecisionTreeRegressor, {"min_samples_leaf": 2}),
    ("titanic", lambda: load_titanic(return_X_y=True), gputrees.DecisionTreeClassifier, {"max_depth": 8}),
]


@pytest.mark.parametrize("case", REP_CASES, ids=[c[0] for c in REP_CASES])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_reduced_error_pruning_properties(case, weighted):
    _, load, cls, params = case
    X, y = load()
    Xtr, Xv, ytr, yv = train_test_split(X, y, test_size=0.3, random_state=0)
    wv = _weights(yv.shape[0]) if weighted else None
    est = cls(random_state=0, **params).fit(Xtr, ytr)
    ref_pruned, ref_errors = _reference_reduced_error(est, Xv, yv, wv)
    E0, S0 = _validation_errors_by_node(est, Xv, yv, wv)
    n_leaves = est.get_n_leaves()
    assert est.prune(Xv, yv, sample_weight=wv) is est
    # the same steps as the plain reference
    np.testing.assert_array_equal(est.pruned_nodes_, ref_pruned)
    np.testing.assert_allclose(est.validation_errors_, ref_errors, rtol=1e-9)
    # the validation error never increases (each step lowers it)
    errs = est.validation_errors_
    assert errs[0] == pytest.approx(S0[0], rel=1e-12)
    assert np.all(np.diff(errs) < 0)
    assert est.get_n_leaves() <= n_leaves
    # the recorded error is the pruned tree's error
    E, S = _validation_errors_by_node(est, Xv, yv, wv)
    assert S[0] == pytest.approx(errs[-1], rel=1e-9, abs=1e-9)
    # and it stops only where no single prune reduces it
    internal = est.tree_.children_left >= 0
    assert np.all(S[internal] - E[internal] <= 1e-9 * max(E.max(), 1.0))


def test_reduced_error_pruning_on_categorical_titanic():
    data = load_titanic(as_frame=True)
    Xtr, Xv, ytr, yv = train_test_split(data.data, data.target, test_size=0.3, random_state=1)
    est = gputrees.DecisionTreeClassifier(random_state=0).fit(Xtr, ytr)
    full = gputrees.DecisionTreeClassifier(random_state=0).fit(Xtr, ytr)
    ref_pruned, _ = _reference_reduced_error(est, Xv, yv)
    est.prune(Xv, yv)
    np.testing.assert_array_equal(est.pruned_nodes_, ref_pruned)
    assert est.validation_errors_[-1] == pytest.approx((1 - est.score(Xv, yv)) * len(yv))
    _assert_pruned_routes_like_full(full, est, data.data)


def _assert_pruned_routes_like_full(full, pruned, X):
    """Each row's leaf in the pruned tree is the node of the full tree's path at
    that depth (same statistics): pruning only cuts paths short."""
    depth = np.zeros(pruned.tree_.node_count, dtype=np.int64)
    for node in range(pruned.tree_.node_count):
        for c in (pruned.tree_.children_left[node], pruned.tree_.children_right[node]):
            if c >= 0:
                depth[c] = depth[node] + 1
    full_depth = np.zeros(full.tree_.node_count, dtype=np.int64)
    for node in range(full.tree_.node_count):
        for c in (full.tree_.children_left[node], full.tree_.children_right[node]):
            if c >= 0:
                full_depth[c] = full_depth[node] + 1
    leaf = pruned.apply(X)
    path = full.decision_path(X).toarray().astype(bool)
    for i in range(0, X.shape[0], 7):
        nodes = np.flatnonzero(path[i])
        node = nodes[full_depth[nodes] == depth[leaf[i]]][0]
        assert full.tree_.n_node_samples[node] == pruned.tree_.n_node_samples[leaf[i]]
        np.testing.assert_array_equal(full.tree_.value[node], pruned.tree_.value[leaf[i]])


def test_ccp_on_categorical_titanic_cuts_paths_short():
    data = load_titanic(as_frame=True)
    full = gputrees.DecisionTreeClassifier(random_state=0).fit(data.data, data.target)
    path = full.cost_complexity_pruning_path(data.data, data.target)
    for alpha in path.ccp_alphas[[len(path.ccp_alphas) // 3, -4]]:
        pruned = gputrees.DecisionTreeClassifier(random_state=0, ccp_alpha=alpha).fit(data.data, data.target)
        assert pruned.get_n_leaves() < full.get_n_leaves()
        _assert_pruned_routes_like_full(full, pruned, data.data)


# ---------------------------------------------------------------------------
# 4. estimator options
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [gputrees.DecisionTreeClassifier, gputrees.DecisionTreeRegressor])
def test_pruning_parameters(cls):
    X, y = _breast_cancer()
    est = cls()
    params = est.get_params()
    assert params["ccp_alpha"] == 0.0
    assert params["pruning"] is None
    assert params["validation_fraction"] == 0.3
    for bad in ({"ccp_alpha": -0.1}, {"pruning": "pessimistic"}, {"validation_fraction": 1.0},
                {"validation_fraction": 0.0}):
        with pytest.raises(InvalidParameterError):
            cls(**bad).fit(X, y)
    with pytest.raises(NotFittedError):
        cls().prune(X, y)


def test_pruning_reduced_error_option_holds_rows_out():
    X, y = _breast_cancer()
    n = X.shape[0]
    a = gputrees.DecisionTreeClassifier(pruning="reduced_error", random_state=3).fit(X, y)
    b = gputrees.DecisionTreeClassifier(pruning="reduced_error", random_state=3).fit(X, y)
    assert_same_tree(a.tree_, b.tree_)
    n_val = math.ceil(0.3 * n)
    assert a.tree_.n_node_samples[0] == n - n_val
    assert np.all(np.diff(a.validation_errors_) < 0)
    # stratified: the class shares of the training part follow the data's
    counts = a.tree_.value[0, 0] * a.tree_.weighted_n_node_samples[0]
    np.testing.assert_allclose(counts / counts.sum(), np.bincount(y) / n, atol=0.01)
    c = gputrees.DecisionTreeClassifier(pruning="reduced_error", validation_fraction=0.5, random_state=3).fit(X, y)
    assert c.tree_.n_node_samples[0] == n - math.ceil(0.5 * n)
    # the path is that of the tree grown on the training part, unpruned
    p = gputrees.DecisionTreeClassifier(pruning="reduced_error", random_state=3).cost_complexity_pruning_path(X, y)
    assert p.impurities[-1] == pytest.approx(a.tree_.impurity[0])
    # refitting without pruning forgets the records
    a.set_params(pruning=None).fit(X, y)
    assert not hasattr(a, "pruned_nodes_")
    reg = gputrees.DecisionTreeRegressor(pruning="reduced_error", random_state=0).fit(*_diabetes())
    assert reg.get_n_leaves() >= 1 and np.all(np.diff(reg.validation_errors_) < 0)


def test_prune_unseen_labels_count_as_errors():
    X, y = _breast_cancer()
    est = gputrees.DecisionTreeClassifier(max_depth=4).fit(X[:400], y[:400])
    yv = y[400:].copy()
    est.prune(X[400:], np.where(np.arange(yv.shape[0]) % 10 == 0, 7, yv))
    assert est.validation_errors_[-1] == pytest.approx(
        np.sum(est.predict(X[400:]) != np.where(np.arange(yv.shape[0]) % 10 == 0, 7, yv))
    )
    with pytest.raises(ValueError):
        gputrees.DecisionTreeRegressor(max_depth=2).fit(X, y).prune(X, np.stack([y, y], axis=1))


# ---------------------------------------------------------------------------
# 5. backends and batches
# ---------------------------------------------------------------------------


def test_same_pruned_trees_on_every_backend(backend):
    name, _, conv = backend
    X, y = _diabetes()
    Xtr, Xv, ytr, yv = train_test_split(X.astype(np.float64), y, test_size=0.3, random_state=0)
    params = {"min_samples_leaf": 3, "max_bins": 65535}
    ref_path = gputrees.DecisionTreeRegressor(**params).cost_complexity_pruning_path(Xtr, ytr)
    path = gputrees.DecisionTreeRegressor(**params).cost_complexity_pruning_path(conv(Xtr), conv(ytr))
    np.testing.assert_array_equal(path.ccp_alphas, ref_path.ccp_alphas)
    np.testing.assert_array_equal(path.impurities, ref_path.impurities)
    alpha = ref_path.ccp_alphas[len(ref_path.ccp_alphas) // 2]
    ref = gputrees.DecisionTreeRegressor(ccp_alpha=alpha, **params).fit(Xtr, ytr)
    ours = gputrees.DecisionTreeRegressor(ccp_alpha=alpha, **params).fit(conv(Xtr), conv(ytr))
    assert_same_tree(ours.tree_, ref.tree_)
    ref = gputrees.DecisionTreeRegressor(**params).fit(Xtr, ytr).prune(Xv, yv)
    ours = gputrees.DecisionTreeRegressor(**params).fit(conv(Xtr), conv(ytr)).prune(conv(Xv), conv(yv))
    assert_same_tree(ours.tree_, ref.tree_)
    np.testing.assert_array_equal(ours.pruned_nodes_, ref.pruned_nodes_)
    Xc, yc = _breast_cancer()
    ref = gputrees.DecisionTreeClassifier(pruning="reduced_error", random_state=0).fit(Xc, yc)
    ours = gputrees.DecisionTreeClassifier(pruning="reduced_error", random_state=0).fit(conv(Xc), conv(yc))
    assert_same_tree(ours.tree_, ref.tree_)
    if name != "numpy":
        out = ours.predict_proba(conv(Xc))
        assert not isinstance(out, np.ndarray)


def _bootstrap_batch(task, n_trees=5, **grower):
    X, y = _diabetes() if task == "regression" else _breast_cancer()
    X = X.astype(np.float64)
    rng = np.random.default_rng(7)
    n = X.shape[0]
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=n_trees).astype(np.float64)
    xp = _backend.namespace_for(X, None)
    bin_mapper = fit_bin_mapper(xp, X, np.zeros(X.shape[1], dtype=bool), 255)
    if task == "classification":
        crit = CLASSIFICATION_CRITERIA["gini"](n_outputs=1, n_classes=2)
        y_dev = y.astype(np.int64)
    else:
        crit = REGRESSION_CRITERIA["squared_error"](n_outputs=1, n_classes=1)
        y_dev = y.astype(np.float64)[:, None]
    inputs = GrowerInputs(
        codes=bin_mapper.transform(xp, X),
        channels=crit.row_channels(xp, y_dev, np.ones(n)),
        multiplicity=counts,
        bin_mapper=bin_mapper,
        criterion=crit,
        kernels=get_kernels(xp),
        rng=_backend.host_rng(0),
    )
    batch = grow(xp, inputs, GrowerParams(**grower))
    return xp, X, y_dev, counts, bin_mapper, crit, batch


def _one_tree(batch, t):
    return batch.tree(t)


def _assert_same_batch_tree(batch, t, single):
    n = int(single.node_count[0])
    assert int(batch.node_count[t]) == n
    for field in ("left", "right", "feature", "bin", "missing_left", "is_categorical", "threshold", "stats", "depth"):
        np.testing.assert_array_equal(getattr(batch, field)[t, :n], getattr(single, field)[0], err_msg=field)
    # padding past the node count is made of leaves
    assert np.all(batch.left[t, n:] == -1) and np.all(batch.feature[t, n:] == -2)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_batch_pruned_at_once_equals_each_tree_alone(task):
    xp, X, y_dev, counts, bin_mapper, crit, batch = _bootstrap_batch(task, min_samples_leaf=2)
    n_trees = batch.left.shape[0]
    total_w = crit.weight(xp, batch.stats[:, 0, :])
    paths = ccp_path(xp, batch, crit)
    alphas = np.asarray([p[0][len(p[0]) // 2] for p in paths])
    for alpha in (float(np.median(alphas)), alphas):  # one alpha for all, or one per tree
        pruned = prune_ccp(xp, batch, crit, alpha, total_w)
        assert pruned.max_depth == int(pruned.depth.max())
        for t in range(n_trees):
            one = _one_tree(batch, t)
            a = alpha if np.ndim(alpha) == 0 else alpha[t]
            _assert_same_batch_tree(pruned, t, prune_ccp(xp, one, crit, a))
            (pa, pi), = ccp_path(xp, one, crit)
            np.testing.assert_array_equal(paths[t][0], pa)
            np.testing.assert_array_equal(paths[t][1], pi)
    # reduced error with per-tree weights: each tree is validated on its
    # out-of-bag rows
    oob = (counts == 0).astype(np.float64).T  # (n, trees)
    leaves = apply_trees(xp, batch, X, bin_mapper.missing_bin)
    values = crit.value(xp, batch.stats)
    y_val = y_dev if task == "classification" else y_dev
    out, pruned_nodes, errors = prune_reduced_error(
        xp, batch, values, leaves, y_val, oob, task == "classification", get_kernels(xp)
    )
    assert any(p.size for p in pruned_nodes)
    for t in range(n_trees):
        one = _one_tree(batch, t)
        lv = apply_trees(xp, one, X, bin_mapper.missing_bin)
        o1, p1, e1 = prune_reduced_error(
            xp, one, crit.value(xp, one.stats), lv, y_val, oob[:, t], task == "classification", get_kernels(xp)
        )
        _assert_same_batch_tree(out, t, o1)
        np.testing.assert_array_equal(pruned_nodes[t], p1[0])
        np.testing.assert_allclose(errors[t], e1[0], rtol=1e-12)
