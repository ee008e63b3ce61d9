"""Forests grown by the GPU's device level step (gputrees.kernels.gpu.tree) in numba-cuda's simulator.

A forest's batch (bootstrap multiplicities, an impurity criterion over class
or regression channels quantised as the cuda set quantises them, per-node
feature draws keyed by the node's path) grown on the device equals the
level-wise grower's (on the CPU's NumPy set), tree for tree: the same splits,
thresholds and statistics (exact: fixed point). Whole forests fitted with
the cuda set in the simulator equal the same fits grown level by level and,
for classifiers (integer channels), the CPU's forests (grown by its NumPy set, which the CPU tests hold
equal to its Numba one: nothing compiles in this simulator process).

Run by tests/test_kernels_cuda_sim.py in a process with ``NUMBA_ENABLE_CUDASIM=1``.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from device_inputs import assert_same_batch, device_params, forest_batch, level_wise

from gputrees import RandomForestClassifier, RandomForestRegressor
from gputrees._backend import namespace_of
from gputrees._grower import grow

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":  # pragma: no cover - guarded by tests/conftest.py
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 (run by tests/test_kernels_cuda_sim.py)", allow_module_level=True)

from gputrees.kernels.gpu import tree  # noqa: E402

NP = namespace_of(np.empty(0))
# the simulator runs the keys' mixing (wrapping uint64 arithmetic, as meant) on NumPy scalars, which warn
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

#: forest_batch's arguments and the grower's parameters (a forest's: local thresholds, small nodes sorted);
#: max_features 2 of 5 builds each node's histograms over its drawn features, 3 of 5 over all (subtraction)
CASES = {
    "gini": dict(criterion="gini", params=dict(max_features=2)),
    "entropy": dict(criterion="entropy", params=dict(max_features=2)),
    "gini_weighted_every_feature": dict(criterion="gini", weights=True, params=dict()),
    "squared_error": dict(criterion="squared_error", params=dict(max_features=3)),
    "squared_error_two_outputs": dict(criterion="squared_error", n_outputs=2, params=dict(max_features=2)),
    "feature_thresholds": dict(criterion="gini", params=dict(max_features=2, local_thresholds=False,
                                                             sorted_small_nodes=False)),
    "leaf_rules": dict(criterion="entropy", params=dict(max_features=3, min_samples_leaf=4, min_samples_split=10,
                                                        min_impurity_decrease=0.01)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_forest_batches_equal_the_level_wise_grower(case):
    kw = dict(CASES[case])
    params = device_params(**{"max_depth": 4, "local_thresholds": True, "sorted_small_nodes": True, **kw.pop("params")})
    kw.update(n=100, k=2)  # (seconds: the simulator runs a CUDA thread as a Python thread)
    inputs, scale = forest_batch(3, **kw)
    k = params.max_features
    assert tree.histogram_features(inputs, params) == ((k, True) if k == 2 else (5, False))
    got = tree.grow_tree(NP, inputs, params, scale=scale)
    assert got is not None
    # the level-wise grower draws the trees' keys from the same generator: a fresh one each
    want = grow(NP, level_wise(forest_batch(3, **kw)[0]), params)
    assert_same_batch(got, want)
    assert int(np.min(want.node_count)) > 5  # every tree split
    if params.max_features is not None:  # the trees drew different features in their nodes
        assert len({tuple(np.asarray(f)[np.asarray(f) >= 0]) for f in want.feature}) > 1


def test_per_tree_feature_subsets_with_node_draws():
    """max_features_per_tree's subsets and max_features' per-node draws among them (every feature's histograms)."""
    allowed = np.array([[True, True, False, True, True], [True, False, True, True, False]])

    def batch():
        inputs, scale = forest_batch(6, n=100, k=2)
        return dataclasses.replace(inputs, tree_features=allowed), scale

    inputs, scale = batch()
    params = device_params(max_depth=4, max_features=2, local_thresholds=True, sorted_small_nodes=True)
    assert tree.histogram_features(inputs, params) == (5, False)
    got = tree.grow_tree(NP, inputs, params, scale=scale)
    assert_same_batch(got, grow(NP, level_wise(batch()[0]), params))
    feats = np.asarray(got.feature)
    for t in range(2):
        assert np.all(allowed[t][feats[t][feats[t] >= 0]])


def test_forests_too_large_for_one_pass_are_grown_a_few_trees_at_a_time():
    """The batch's trees in passes of what the memory bound holds: the same trees."""
    inputs, scale = forest_batch(5, k=3, n=100)
    params = device_params(max_depth=3, max_features=2, local_thresholds=True, sorted_small_nodes=True)
    per_tree = tree.trees_per_pass(inputs, params)
    small = device_params(max_depth=3, max_features=2, local_thresholds=True, sorted_small_nodes=True,
                          memory_limit=params.memory_limit // per_tree * 2)
    assert tree.trees_per_pass(inputs, small) == 2
    assert_same_batch(tree.grow_tree(NP, inputs, small, scale=scale),
                      grow(NP, level_wise(forest_batch(5, k=3, n=100)[0]), params))


def test_deep_forest_batches_equal_the_level_wise_grower(monkeypatch):
    """max_depth=None: the levels below the perfect ones compact (one host read a level) and are built a group of
    nodes at a time (what memory_limit holds: 4 here), the node table widens as the trees grow; the same trees as
    the level-wise grower's, laid out."""
    monkeypatch.setattr(tree, "DEEP_PERFECT_LEVELS", 2)  # compact from level 2 (the simulator: few blocks a level)
    monkeypatch.setattr(tree, "group_slots", lambda *a: 4)
    # 3 of 5 features: the perfect levels subtract, the compact ones build every node over every feature (the
    # forests' tests below build over the drawn features)
    params = device_params(max_depth=None, max_features=3, local_thresholds=True, sorted_small_nodes=True)
    inputs, scale = forest_batch(2, criterion="squared_error", n=100, k=1)
    assert tree.histogram_features(inputs, params) == (5, False)
    widened = []
    real_widen = tree._widen
    monkeypatch.setattr(tree, "_widen", lambda *a: widened.append(a[2]) or real_widen(*a))
    got = tree.grow_tree(NP, inputs, params, scale=scale)
    want = grow(NP, level_wise(forest_batch(2, criterion="squared_error", n=100, k=1)[0]), params)
    assert got.node_count is not None  # laid out by grow_tree (the levels read their live counts anyway)
    np.testing.assert_array_equal(got.node_count, want.node_count)
    assert got.max_depth == want.max_depth > tree.MAX_DEPTH, want.max_depth  # beyond the perfect-tree layout
    for name in ("left", "right", "feature", "bin", "missing_left", "threshold", "depth", "stats"):
        np.testing.assert_array_equal(np.asarray(getattr(got, name)), np.asarray(getattr(want, name)), err_msg=name)
    assert len(widened) >= 2, widened  # from the 7 nodes of the first levels


def test_uncovered_forest_batches_decline():
    inputs, scale = forest_batch(1)
    params = device_params(max_features=2, local_thresholds=True, sorted_small_nodes=True)
    assert tree.grow_tree(NP, inputs, params, scale=scale) is not None
    assert tree.grow_tree(NP, inputs, dataclasses.replace(params, max_leaf_nodes=6), scale=scale) is None
    for criterion in ("misclassification", "friedman_mse", "poisson"):
        other, other_scale = forest_batch(1, criterion=criterion)
        assert tree.grow_tree(NP, other, params, scale=other_scale) is None
    assert tree.grow_tree(NP, dataclasses.replace(inputs, random_splits=True), params, scale=scale) is None


def _fit(cls, kw, X, y, monkeypatch, kernels, device_step=True):
    """A forest fitted with ``kernels``; the cuda set's batches on the device or (``device_step`` False) level by
    level; the trees' arrays and how many batches the device grew."""
    calls = []
    real = tree.grow_tree

    def counted(*a, **k):
        out = real(*a, **k) if device_step else None
        calls.append(out is not None)
        return out

    monkeypatch.setattr(tree, "grow_tree", counted)
    monkeypatch.setenv("GPUTREES_KERNELS", kernels)
    model = cls(**kw).fit(X, y)
    monkeypatch.setattr(tree, "grow_tree", real)
    fields = ("node_count", "left", "feature", "bin", "missing_left", "threshold", "stats")
    return [{f: np.asarray(getattr(b, f)) for f in fields} for b in model._batches], sum(calls), model


@pytest.mark.parametrize("kind", ["gini", "regressor"])
def test_forests_on_the_device_equal_the_level_wise_and_cpu_ones(kind, monkeypatch):
    rng = np.random.default_rng(4)
    n = 120
    X = rng.normal(size=(n, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    signal = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 2]) + rng.normal(size=n) * 0.3
    if kind == "regressor":
        cls, y, crit = RandomForestRegressor, signal, "squared_error"
    else:
        cls, y, crit = RandomForestClassifier, np.digitize(signal, [-0.7, 0.7]), kind
    kw = dict(n_estimators=2, batch_size=1, max_depth=3, max_bins=16, max_features=2, criterion=crit,
              random_state=7)
    device, on_device, model = _fit(cls, kw, X, y, monkeypatch, "cuda")
    assert on_device == 2  # both batches grown on the device
    level, grown, _ = _fit(cls, kw, X, y, monkeypatch, "cuda", device_step=False)
    assert grown == 0
    cpu, _, cpu_model = _fit(cls, kw, X, y, monkeypatch, "bincount")
    for d, lw, c in zip(device, level, cpu):
        for name in d:
            np.testing.assert_array_equal(d[name], lw[name], err_msg=name)
            if kind != "regressor" or name != "stats":
                # classes are integer channels, quantised as they are; regression's sums move by < 1e-13
                np.testing.assert_array_equal(d[name], c[name], err_msg=name)
            else:  # each channel's sums within what quantising its values moves them (2^-52 n of the largest)
                bound = 2.0 ** -50 * n * n * np.max(np.abs(c[name]), axis=(0, 1))
                assert np.all(np.abs(d[name] - c[name]) <= bound), name
    np.testing.assert_allclose(model.predict(X), cpu_model.predict(X), rtol=1e-10, atol=1e-10)


def test_deep_forests_on_the_device_equal_the_cpu_ones(monkeypatch):
    """A forest deeper than the perfect-tree layout (4 here: the simulator's time) grown by the device step, its
    trees stopping at max_depth (6 of their 8 levels), a tree a pass (each pass its own levels in the shared node
    table): the CPU's forest (classes are integer channels: the same statistics)."""
    monkeypatch.setattr(tree, "DEEP_PERFECT_LEVELS", 3)  # compact levels within the trees' depth
    monkeypatch.setattr(tree, "MAX_DEPTH", 4)
    monkeypatch.setattr(tree, "trees_per_pass", lambda *a: 1)
    rng = np.random.default_rng(6)
    n = 120
    X = rng.normal(size=(n, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.digitize(np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 2]) + rng.normal(size=n), [-0.7, 0.7])
    kw = dict(n_estimators=2, batch_size=2, max_depth=6, max_bins=16, max_features=2, random_state=3)
    device, on_device, model = _fit(RandomForestClassifier, kw, X, y, monkeypatch, "cuda")
    assert on_device == 1
    cpu, _, cpu_model = _fit(RandomForestClassifier, kw, X, y, monkeypatch, "bincount")
    assert model._batches[0].max_depth == 6  # the trees cut at 6 of their 8 levels
    for d, c in zip(device, cpu):
        for name in d:
            np.testing.assert_array_equal(d[name], c[name], err_msg=name)
    np.testing.assert_array_equal(model.predict_proba(X), cpu_model.predict_proba(X))
