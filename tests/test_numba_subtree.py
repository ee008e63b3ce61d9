"""Small nodes' subtrees grown in one compiled call (gputrees.kernels.cpu.subtree) against level-wise growth."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gputrees import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from gputrees import _grower
from gputrees._backend import namespace_of
from gputrees._binning import fit_bin_mapper
from gputrees._criteria import Entropy, FriedmanMSE, Gini, SquaredError
from gputrees._grower import grow
from gputrees._records import GrowerInputs, GrowerParams, SplitConstraints, SubtreeParams

pytest.importorskip("numba")
from gputrees.kernels import cpu, get_kernels, reference  # noqa: E402
from gputrees.kernels.interface import NoSubtrees  # noqa: E402

NP = namespace_of(np.empty(0))
SEED = 11
BATCH_FIELDS = ("node_count", "left", "right", "feature", "bin", "missing_left", "is_categorical", "cat_left",
                "threshold", "depth", "max_depth")


def _data(seed, n, p, *, classes=3, regression=False, missing=0.0, max_bins=255):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    X[:, 0] = np.round(X[:, 0], 1)  # a feature with few values: ties inside small nodes
    if missing:
        X[rng.random((n, p)) < missing] = np.nan
    signal = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) * np.nan_to_num(X[:, -1]) + rng.standard_normal(n)
    y = signal if regression else np.digitize(signal, np.quantile(signal, np.linspace(0, 1, classes + 1)[1:-1]))
    return X, y


def _categorical(X, y, rng, categories):
    """``X`` with two columns replaced by categories (``categories`` and 3 of them) tied to ``y``, NaN kept as
    missing; the categorical mask."""
    X = X.copy()
    is_cat = np.zeros(X.shape[1], dtype=bool)
    rank = np.argsort(np.argsort(y + 0.5 * rng.standard_normal(y.shape[0]))) / y.shape[0]
    for col, k in ((1, categories), (3, 3)):
        codes = np.where(rng.random(y.shape[0]) < 0.7, np.floor(rank * k), rng.integers(0, k, y.shape[0]))
        X[:, col] = np.where(np.isnan(X[:, col]), np.nan, rng.permutation(k)[codes.astype(np.int64)])
        is_cat[col] = True
    return X, is_cat


def _inputs(seed, n=3000, p=6, *, criterion=None, trees=3, bootstrap=True, missing=0.0, max_bins=255,
            random_splits=False, tree_features=False, weights=False, categories=0):
    classes = criterion.n_classes if isinstance(criterion, (Gini, Entropy)) else 3
    X, y = _data(seed, n, p, classes=classes, regression=isinstance(criterion, SquaredError), missing=missing)
    rng = np.random.default_rng(seed + 1)
    criterion = criterion or Gini(n_classes=3)
    is_cat = np.zeros(p, dtype=bool)
    if categories:
        X, is_cat = _categorical(X, y, rng, categories)
    mapper = fit_bin_mapper(NP, X, is_cat, max_bins)
    codes = mapper.transform(NP, X)
    w = rng.uniform(0.5, 2.0, n) if weights else np.ones(n)
    target = y[:, None] if isinstance(criterion, SquaredError) else y.astype(np.int64)
    channels = criterion.row_channels(NP, target, w)
    mult = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(trees)]).astype(float)
    tf = rng.random((trees, p)) < 0.7 if tree_features else None
    if tf is not None:
        tf[:, 0] = True
    kernels = get_kernels(NP, "numba", n_jobs=2)
    return GrowerInputs(codes=codes, channels=channels, multiplicity=mult if bootstrap else None, bin_mapper=mapper,
                        criterion=criterion, kernels=kernels, rng=np.random.default_rng(seed),
                        random_splits=random_splits, tree_features=tf)


def _level_wise(inputs):
    """The same inputs (a new generator of the same seed) without the subtree kernel."""
    fast = dataclasses.replace(inputs.kernels.fast, subtrees=NoSubtrees())
    return dataclasses.replace(inputs, kernels=dataclasses.replace(inputs.kernels, fast=fast),
                               rng=np.random.default_rng(SEED))


def _fresh(inputs):
    return dataclasses.replace(inputs, rng=np.random.default_rng(SEED))


def _assert_same_trees(a, b):
    for name in BATCH_FIELDS:
        u, v = np.asarray(getattr(a, name)), np.asarray(getattr(b, name))
        assert u.shape == v.shape, name
        np.testing.assert_array_equal(u, v, err_msg=name)
    # statistics summed in another order: equal to rounding
    np.testing.assert_allclose(np.asarray(a.stats), np.asarray(b.stats), rtol=1e-12, atol=1e-12)


CASES = {
    "gini_bootstrap": ({}, {"max_features": 2}),
    # two classes: three channels, summed in registers (_hist_node, _sorted_feature, _sum_rows)
    "binary_gini": ({"criterion": Gini(n_classes=2)}, {"max_features": 2}),
    "binary_missing": ({"criterion": Gini(n_classes=2), "missing": 0.1}, {"max_features": 3}),
    "entropy": ({"criterion": Entropy(n_classes=3)}, {"max_features": 3}),
    "regression": ({"criterion": SquaredError()}, {"max_features": 4}),
    # squared error, one output: four channels in registers and the fast passes (_fast_feature, _fast_scan)
    "regression_fully_grown": ({"criterion": SquaredError()}, {"max_features": 2}),
    "regression_missing": ({"criterion": SquaredError(), "missing": 0.1}, {"max_features": 3}),
    "regression_weights": ({"criterion": SquaredError(), "weights": True}, {"max_features": 2,
                                                                             "min_weight_leaf": 1.5}),
    "all_features": ({"bootstrap": False}, {}),
    "sample_weights": ({"weights": True}, {"max_features": 2, "min_weight_leaf": 1.5}),
    "missing_values": ({"missing": 0.1}, {"max_features": 3}),
    "min_samples": ({}, {"max_features": 2, "min_samples_split": 9, "min_samples_leaf": 3}),
    "max_depth": ({}, {"max_features": 2, "max_depth": 10}),
    "min_impurity_decrease": ({}, {"max_features": 2, "min_impurity_decrease": 2e-4}),
    "extremely_randomised": ({"random_splits": True}, {"max_features": 3}),
    # five and six channels: the sums of a random candidate and of a child a channel at a time (_random_feature,
    # _sum_rows: registers up to four)
    "random_four_classes": ({"criterion": Entropy(n_classes=4), "random_splits": True, "missing": 0.1},
                            {"max_features": 3}),
    "random_five_classes": ({"criterion": Gini(n_classes=5), "random_splits": True}, {"max_features": 3}),
    "tree_features": ({"tree_features": True}, {"max_features": 2}),
    "few_bins": ({"max_bins": 16}, {"max_features": 2}),
    "uint16_codes": ({"max_bins": 1000, "n": 5000}, {"max_features": 2}),
    # categorical features: every node searched by histograms, categories sorted by the criterion's key
    "categorical": ({"categories": 12}, {"max_features": 3}),
    "categorical_binary_missing": ({"criterion": Gini(n_classes=2), "categories": 40, "missing": 0.1},
                                   {"max_features": 3}),
    "categorical_regression": ({"criterion": SquaredError(), "categories": 12, "missing": 0.05},
                               {"max_features": 3}),
    "categorical_random": ({"categories": 12, "random_splits": True}, {"max_features": 3}),
    # squared error without missing values: a small node's numerical features scanned over their present codes
    # (fast_scan; with random splits, the filled bins' sums), the same splits as every bin's scan level-wise
    "categorical_regression_present_codes": ({"criterion": SquaredError(), "categories": 12}, {"max_features": 3}),
    "categorical_random_regression": ({"criterion": SquaredError(), "categories": 12, "random_splits": True},
                                      {"max_features": 3}),
    "categorical_bin_thresholds": ({"categories": 6}, {"max_features": 4, "local_thresholds": False}),
    # random splits with both missing-value variants, features without value rows in small nodes, bin edges
    "categorical_random_missing": ({"categories": 12, "random_splits": True, "missing": 0.3}, {"max_features": 3}),
    "categorical_random_bin_thresholds": ({"categories": 6, "random_splits": True, "missing": 0.1},
                                          {"max_features": 4, "local_thresholds": False}),
    "categorical_min_samples": ({"categories": 20, "criterion": Entropy(n_classes=3)},
                                {"max_features": 3, "min_samples_leaf": 4}),
}


@pytest.mark.parametrize("case", ["gini_bootstrap", "regression", "max_depth", "min_samples", "categorical"])
def test_compiled_layout_equals_the_array_api_one(case, monkeypatch):
    """The subtree kernel's compiled layout (one pass) lays the batch out as the array-API reference
    (:func:`gputrees.kernels.reference.layout_grouped`) does: every field equal, statistics bit for bit."""
    data, params = CASES[case]
    inputs = _inputs(7, **data)
    p = GrowerParams(**params)
    calls = []
    sub = inputs.kernels.fast.subtrees

    class Counted(type(sub)):
        def layout(self, *args):
            calls.append(1)
            return super().layout(*args)

    class Reference(type(sub)):
        def layout(self, *args):
            return reference.layout_grouped(*args)

    def with_subtrees(kind):
        fast = dataclasses.replace(inputs.kernels.fast, subtrees=kind(sub.n_threads))
        return dataclasses.replace(_fresh(inputs), kernels=dataclasses.replace(inputs.kernels, fast=fast))

    got = grow(NP, with_subtrees(Counted), p)
    assert calls
    want = grow(NP, with_subtrees(Reference), p)
    _assert_same_trees(got, want)
    np.testing.assert_array_equal(np.asarray(got.stats), np.asarray(want.stats))
    assert np.asarray(got.left).shape[0] == 3 and int(np.asarray(got.node_count).min()) > 50


@pytest.mark.parametrize("case", list(CASES))
def test_subtrees_equal_level_wise_growth(case, monkeypatch):
    """The same trees split for split, nodes numbered the same (breadth-first), with the kernel doing the work."""
    data, params = CASES[case]
    inputs = _inputs(4, **data)
    p = GrowerParams(**params)
    calls = []
    kernel = cpu.subtree._grow_subtrees
    monkeypatch.setattr(cpu.subtree, "_grow_subtrees", lambda *a: calls.append(len(a[5])) or kernel(*a))
    got = grow(NP, _fresh(inputs), p)
    assert calls  # small nodes went to the kernel
    want = grow(NP, _level_wise(inputs), p)
    _assert_same_trees(got, want)
    assert int(got.node_count.min()) > 50
    if data.get("categories"):
        # categorical splits inside the grown subtrees, not only above them
        cat = np.asarray(got.is_categorical)
        assert cat[np.asarray(got.depth) > 4].sum() > 10


@pytest.mark.parametrize("random_splits", [False, True], ids=["best", "random"])
@pytest.mark.parametrize("criterion", [Gini(n_classes=3), Gini(n_classes=2), SquaredError()])
def test_forest_rounds_hand_whole_subtrees_over(criterion, random_splits, monkeypatch):
    """With drawn features and enough sibling pairs per thread, a round hands every pair to the kernel, whose
    large nodes are searched with histograms (with random splits: the pairs the level-wise growth searches
    so): the same trees as level-wise growth."""
    inputs = _inputs(9, n=8000, trees=12, criterion=criterion, random_splits=random_splits)
    p = GrowerParams(max_features=3)
    largest = []
    kernel = cpu.subtree._grow_subtrees
    monkeypatch.setattr(cpu.subtree, "_grow_subtrees",
                        lambda *a: largest.append(int(np.diff(a[4]).max())) or kernel(*a))
    got = grow(NP, _fresh(inputs), p)
    assert max(largest) > 8 * 256  # above SUBTREE_BELOW_BINS x bins: handed over whole, histograms inside
    _assert_same_trees(got, grow(NP, _level_wise(inputs), p))


WHOLE_TREE_CASES = {
    "gini": ({"criterion": Gini(n_classes=3)}, {"max_features": 3}),
    "binary_missing": ({"criterion": Gini(n_classes=2), "missing": 0.1}, {"max_features": 2}),
    "regression_weights": ({"criterion": SquaredError(), "weights": True}, {"max_features": 2}),
    "tree_features": ({"tree_features": True}, {"max_features": 2, "max_depth": 12}),
    "weight_multiplicity": ({"criterion": Gini(n_classes=2)}, {"max_features": 2, "min_samples_leaf": 2}),
    "extremely_randomised": ({"criterion": Gini(n_classes=3), "random_splits": True}, {"max_features": 3}),
    "random_regression": ({"criterion": SquaredError(), "random_splits": True, "missing": 0.1},
                          {"max_features": 2}),
    # extra trees over every feature (the regressors' default): no draws, whole trees all the same
    "random_every_feature": ({"criterion": SquaredError(), "random_splits": True, "missing": 0.1}, {}),
    # categorical features: whole trees with extremely randomised splits (drawn features alone go level-wise)
    "categorical_random": ({"criterion": Gini(n_classes=3), "categories": 7, "missing": 0.05, "random_splits": True},
                           {"max_features": 3}),
    "categorical_regression": ({"criterion": SquaredError(), "categories": 5, "random_splits": True}, {}),
    # a tree whose in-bag rows are all of one class: its root alone, laid out beside the grown trees
    "pure_tree": ({"criterion": Gini(n_classes=3)}, {"max_features": 3}),
}


@pytest.mark.parametrize("case", list(WHOLE_TREE_CASES))
def test_whole_trees_grow_from_their_roots(case, monkeypatch):
    """With enough trees for every thread, every root goes to the kernel with its rows read from the
    multiplicities (no row set is made): the trees of the handover one level down, bit for bit, and of
    level-wise growth."""
    data, params = WHOLE_TREE_CASES[case]
    inputs = _inputs(21, n=5000, trees=_grower.SUBTREE_PAIRS_PER_THREAD * 2, **data)
    if case == "weight_multiplicity":  # a per-tree class weight on the weighted channels
        factor = np.random.default_rng(4).uniform(0.5, 2.0, inputs.multiplicity.shape)
        inputs = dataclasses.replace(inputs, weight_multiplicity=inputs.multiplicity * factor)
    if case == "pure_tree":
        mult = inputs.multiplicity.copy()
        mult[1] *= inputs.channels[:, 1] > 0  # class 0's rows only
        inputs = dataclasses.replace(inputs, multiplicity=mult)
    p = GrowerParams(**params)
    sources = []
    kernel = cpu.subtree._grow_subtrees
    monkeypatch.setattr(cpu.subtree, "_grow_subtrees", lambda *a: sources.append(a[27][0]) or kernel(*a))
    monkeypatch.setattr(_grower, "LocalRows", lambda *a, **k: pytest.fail("a row set was made"))
    got = grow(NP, _fresh(inputs), p)
    assert sources == [True]
    if case == "pure_tree":
        assert np.asarray(got.node_count)[1] == 1 and min(np.asarray(got.node_count)) == 1 < max(got.node_count)
    monkeypatch.undo()
    # the roots' level grown by the grower, every child handed over (as before TreeRows)
    monkeypatch.setattr(_grower.Grower, "_whole_trees", lambda self: None)
    one_level = grow(NP, _fresh(inputs), p)
    _assert_same_trees(got, one_level)
    np.testing.assert_array_equal(np.asarray(got.stats), np.asarray(one_level.stats))
    _assert_same_trees(got, grow(NP, _level_wise(inputs), p))


def test_whole_trees_go_to_the_kernel_in_calls_of_a_multiple_of_its_workers(monkeypatch):
    """Trees grown whole from their roots, under a memory bound that needs several calls: every call but the
    last holds a multiple of the kernel's two workers (no call ends with one worker growing its last tree
    alone), each within the bound, and the batch is the greedy calls' bit for bit."""
    trees = _grower.SUBTREE_PAIRS_PER_THREAD * 2 + 1
    inputs = _inputs(24, n=4000, trees=trees, criterion=Gini(n_classes=2))
    per_row = _grower.SUBTREE_PAIR_BYTES + _grower.SUBTREE_PAIR_CHANNEL_BYTES * inputs.channels.shape[1]
    rows = inputs.multiplicity.sum(axis=1)
    p = GrowerParams(max_features=2, memory_limit=int(5 * rows.max() * per_row))  # five trees a call at most
    calls = []
    kernel = cpu.subtree._grow_subtrees
    monkeypatch.setattr(cpu.subtree, "_grow_subtrees", lambda *a: calls.append(len(a[6])) or kernel(*a))
    got = grow(NP, _fresh(inputs), p)
    assert sum(calls) == trees and len(calls) > 1
    assert all(c % 2 == 0 for c in calls[:-1]) and max(calls) <= 5
    greedy = []
    monkeypatch.setattr(_grower.Grower, "_tree_batches",
                        lambda self, counts, per, workers: greedy.extend(self._row_batches(counts, per)) or greedy)
    calls.clear()
    want = grow(NP, _fresh(inputs), p)
    assert calls == [b - a for a, b in greedy] and any(c % 2 for c in calls[:-1])
    for name in BATCH_FIELDS + ("stats",):
        np.testing.assert_array_equal(np.asarray(getattr(got, name)), np.asarray(getattr(want, name)), err_msg=name)


def test_too_few_trees_grow_their_first_level_first(monkeypatch):
    """Fewer trees than SUBTREE_PAIRS_PER_THREAD per thread: the roots' level is the grower's (rows in a row
    set), the subtrees follow."""
    inputs = _inputs(22, n=3000, trees=3, criterion=Gini(n_classes=2))
    sources = []
    kernel = cpu.subtree._grow_subtrees
    monkeypatch.setattr(cpu.subtree, "_grow_subtrees", lambda *a: sources.append(a[27][0]) or kernel(*a))
    grow(NP, _fresh(inputs), GrowerParams(max_features=2))
    assert sources and not any(sources)


@pytest.mark.parametrize("weighted", [False, True])
def test_tree_sums_equal_the_row_sets_root_sums(weighted):
    """``tree_sums`` gives each root the row set's sums of its pairs, bit for bit, without making the pairs."""
    rng = np.random.default_rng(8)
    n, trees = 3000, 5
    mult = rng.integers(0, 3, (trees, n)).astype(float)
    mult[2] = 0.0  # a tree without rows
    wmult = mult * rng.uniform(0.1, 3.0, (trees, n)) if weighted else None
    chan = np.column_stack([np.ones(n), rng.standard_normal((n, 3)) * 1e3])
    kernels = get_kernels(NP, "numba", n_jobs=2)
    from gputrees._rows import LocalRows
    from gputrees.kernels import TreeRows
    from gputrees.kernels.reference import children_slot_table

    codes = np.zeros((n, 1), dtype=np.uint8)
    local = LocalRows(NP, codes, chan, kernels, mult, wmult)
    want = local.sums(children_slot_table(NP, trees, 0, trees), trees)
    got = kernels.fast.subtrees.tree_sums(TreeRows(mult, wmult, chan))
    assert got.shape == (trees, 4)
    np.testing.assert_array_equal(got, want)
    assert np.all(got[2] == 0.0)


def test_subtrees_do_not_depend_on_the_threads():
    """Workers take the subtrees from a shared counter, largest first: every thread count grows the same nodes."""
    inputs = _inputs(12, n=6000, criterion=Gini(n_classes=2))
    codes, rng = inputs.codes, np.random.default_rng(3)
    m = 9
    slot = np.repeat(np.arange(m), [1500, 20, 900, 3, 600, 300, 2, 80, 400])  # uneven subtree sizes
    rows = rng.permutation(codes.shape[0])[: slot.shape[0]]
    w = np.asarray(inputs.channels)[rows]
    stats = np.stack([w[slot == i].sum(axis=0) for i in range(m)])
    args = (NP, codes, rows, slot, w, stats, np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64),
            np.arange(m, dtype=np.uint64) + 77, np.array([w[:, 0].sum()]), Gini(n_classes=2), SplitConstraints(1, 0.0),
            SubtreeParams(2.0, -1, 0.0, 2), inputs.bin_mapper)
    one = cpu.subtree.grow_subtrees(*args, n_threads=1).nodes()
    assert int(one.region[-1]) > 2 * m
    for n_threads in (2, 3):
        other = cpu.subtree.grow_subtrees(*args, n_threads=n_threads).nodes()
        for field in dataclasses.fields(one):
            np.testing.assert_array_equal(getattr(one, field.name), getattr(other, field.name), err_msg=field.name)


@pytest.mark.parametrize("categories", [0, 12], ids=["numerical", "categorical"])
@pytest.mark.parametrize("criterion", [Gini(n_classes=2), SquaredError()])
def test_records_equal_their_numpy_twin(criterion, categories):
    """``Subtrees.records`` (one compiled pass) gives the grower's records as NumPy's gathers do, bit for bit."""
    inputs = _inputs(14, n=4000, criterion=criterion, categories=categories)
    codes, rng = inputs.codes, np.random.default_rng(5)
    m = 6
    slot = np.repeat(np.arange(m), [900, 1, 300, 40, 2, 700])  # a one-row subtree: its root only
    rows = rng.permutation(codes.shape[0])[: slot.shape[0]]
    w = np.asarray(inputs.channels)[rows]
    stats = np.stack([w[slot == i].sum(axis=0) for i in range(m)])
    sub = cpu.subtree.grow_subtrees(
        NP, codes, rows, slot, w, stats, np.zeros(m, dtype=np.int64), np.arange(m, dtype=np.int64) % 2,
        np.arange(m, dtype=np.uint64) + 5, np.array([w[:, 0].sum(), w[:, 0].sum()]), criterion,
        SplitConstraints(1, 0.0), SubtreeParams(2.0, -1, 0.0, 3), inputs.bin_mapper, n_threads=2,
    )
    root_ids = np.array([40, 3, 17, 8, 9, 41], dtype=np.int64)
    got, want = sub.records(root_ids, 100), sub.records_reference(root_ids, 100)
    assert int(got.split_ids.shape[0]) > m and int(got.parent.shape[0]) > 2 * m
    for field in dataclasses.fields(want):
        a, b = getattr(got, field.name), getattr(want, field.name)
        assert a.dtype == b.dtype and a.shape == b.shape, field.name
        np.testing.assert_array_equal(a, b, err_msg=field.name)
    # a column per category and the missing bin's, not one per bin
    assert got.cat_left.shape[1] == (categories + 1 if categories else 0)
    assert bool(got.is_categorical.any()) == bool(categories)


def test_uncovered_criterion_goes_level_wise(monkeypatch):
    inputs = _inputs(5, criterion=FriedmanMSE())
    monkeypatch.setattr(cpu.subtree, "_grow_subtrees", lambda *a: pytest.fail("kernel called"))
    p = GrowerParams(max_features=3)
    _assert_same_trees(grow(NP, _fresh(inputs), p), grow(NP, _level_wise(inputs), p))


def test_memory_bound_splits_small_nodes_into_chunks(monkeypatch):
    inputs = _inputs(6)
    calls = []
    kernel = cpu.subtree._grow_subtrees
    monkeypatch.setattr(cpu.subtree, "_grow_subtrees", lambda *a: calls.append(len(a[5])) or kernel(*a))
    small = GrowerParams(max_features=2, memory_limit=200_000)
    got = grow(NP, _fresh(inputs), small)
    assert max(calls) < 60  # about 35 rows per chunk: a node or two
    _assert_same_trees(got, grow(NP, _level_wise(inputs), small))


def test_kernel_on_a_hand_made_node():
    """Six rows, one feature, two classes split at the middle: the root, its split, two pure leaves."""
    codes = np.array([[0], [1], [2], [3], [4], [5]], dtype=np.uint8)
    X = codes.astype(float)
    mapper = fit_bin_mapper(NP, X, np.zeros(1, dtype=bool), 255)
    y = np.array([0, 0, 0, 1, 1, 1])
    crit = Gini(n_classes=2)
    w = crit.row_channels(NP, y, np.ones(6))
    stats = w.sum(axis=0)[None]
    sub = cpu.subtree.grow_subtrees(
        NP, mapper.transform(NP, X), np.arange(6), np.zeros(6, dtype=np.int64), w, stats, np.array([4]),
        np.array([0]), np.array([123], dtype=np.uint64), np.array([6.0]), crit, SplitConstraints(1, 0.0),
        SubtreeParams(2.0, -1, 0.0, 1), mapper, n_threads=1).nodes()
    np.testing.assert_array_equal(sub.region, [0, 3])
    np.testing.assert_array_equal(sub.parent, [-1, 0, 0])
    np.testing.assert_array_equal(sub.depth, [4, 5, 5])
    np.testing.assert_array_equal(sub.split, [True, False, False])
    assert sub.feature[0] == 0 and sub.bin[0] == 2 and sub.first_child[0] == 1
    assert sub.threshold[0] == 2.5  # midpoint of the values 2 and 3
    np.testing.assert_array_equal(sub.stats, [[6, 3, 3], [3, 3, 0], [3, 0, 3]])
    from gputrees.kernels.node_draws import child_keys

    np.testing.assert_array_equal(sub.key[1:], child_keys(np.array([123], dtype=np.uint64)))


@pytest.mark.parametrize("Model, kw", [
    (RandomForestClassifier, {"n_estimators": 4}),
    # two classes: the sort-based search's fast pass (_fast_feature)
    (RandomForestClassifier, {"n_estimators": 4, "classes": 2}),
    (DecisionTreeClassifier, {"max_features": 3, "random_state": 2, "classes": 2}),
    (RandomForestClassifier, {"n_estimators": 3, "classes": 2, "missing": 0.05}),
    (ExtraTreesClassifier, {"n_estimators": 3, "max_features": 0.5}),
    (RandomForestRegressor, {"n_estimators": 3, "max_features": 0.4, "min_samples_leaf": 2}),
    (RandomForestRegressor, {"n_estimators": 3, "max_features": "sqrt", "missing": 0.05}),
    (ExtraTreesRegressor, {"n_estimators": 3}),
    (RandomForestClassifier, {"n_estimators": 3, "class_weight": "balanced_subsample", "max_depth": 9}),
    (DecisionTreeClassifier, {"max_features": 3, "random_state": 1}),
    (DecisionTreeRegressor, {}),
    # enough trees for two threads: whole trees grown from their roots (Grower._whole_trees)
    (RandomForestClassifier, {"n_estimators": 16, "n_jobs": 2, "classes": 2}),
    (RandomForestRegressor, {"n_estimators": 16, "n_jobs": 2, "max_features": "sqrt"}),
    # categorical features: subtrees searched by histograms (categories sorted per node)
    (RandomForestClassifier, {"n_estimators": 4, "categories": 12}),
    (ExtraTreesRegressor, {"n_estimators": 3, "categories": 12, "missing": 0.05}),
    (DecisionTreeClassifier, {"classes": 2, "categories": 30}),
])
def test_estimators_equal_the_numpy_kernels(Model, kw, monkeypatch):
    """Whole models: the Numba set (subtrees compiled) against the NumPy set (level-wise), split for split."""
    regression = "Regressor" in Model.__name__
    kw = dict(kw)
    classes, missing, categories = kw.pop("classes", 3), kw.pop("missing", 0.0), kw.pop("categories", 0)
    X, y = _data(8, 4000, 7, classes=classes, regression=regression, missing=missing)
    if categories:
        X, is_cat = _categorical(X, y, np.random.default_rng(9), categories)
        kw["categorical_features"] = np.flatnonzero(is_cat)
    if not regression:
        y = y.astype(np.int64)
    kw = {"random_state": 0, **kw}
    grown = []
    orig = _grower.Grower._finish_subtrees
    monkeypatch.setattr(_grower.Grower, "_finish_subtrees",
                        lambda self, *a, **k: grown.append(1) or orig(self, *a, **k))
    monkeypatch.setenv("GPUTREES_KERNELS", "numba")
    a = Model(**kw).fit(X, y)
    assert grown
    monkeypatch.setenv("GPUTREES_KERNELS", "bincount")
    b = Model(**kw).fit(X, y)
    trees_a = [e.tree_ for e in getattr(a, "estimators_", [a])]
    trees_b = [e.tree_ for e in getattr(b, "estimators_", [b])]
    for ta, tb in zip(trees_a, trees_b):
        np.testing.assert_array_equal(ta.children_left, tb.children_left)
        np.testing.assert_array_equal(ta.feature, tb.feature)
        np.testing.assert_array_equal(ta.threshold, tb.threshold)
        np.testing.assert_allclose(ta.value, tb.value, rtol=1e-10)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-10)
