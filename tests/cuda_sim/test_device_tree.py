"""The GPU's device level step (gputrees.kernels.gpu.tree) in numba-cuda's simulator, against the CPU.

A boosting round's trees grown on the device equal the level-wise grower's
with quantised channels (every kernel set's sums of quantised values are
exact, so the CPU's float64 sums and the device's int64 ones are the same
numbers): the same splits, thresholds, statistics, node numbering and rows'
leaves. Whole boosting fits with the cuda set in the simulator equal the
CPU's quantised fits. The device step's work is counted: a fixed number of
launches a level, and one host read a batch (its node counts).

Run by tests/test_kernels_cuda_sim.py in a process with ``NUMBA_ENABLE_CUDASIM=1``.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from device_inputs import assert_same_batch, boosting_round, device_params, level_wise

from gputrees import GradientBoostingClassifier, GradientBoostingRegressor
from gputrees._backend import namespace_of
from gputrees._grower import grow
from gputrees.kernels import reference

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":  # pragma: no cover - guarded by tests/conftest.py
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 (run by tests/test_kernels_cuda_sim.py)", allow_module_level=True)

from gputrees.kernels.gpu import tree  # noqa: E402

NP = namespace_of(np.empty(0))
# the simulator runs the node keys' mixing (wrapping uint64 arithmetic, as meant) on NumPy scalars, which warn
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


CASES = {
    "one_tree": dict(),
    "three_trees": dict(k=3),
    "no_missing": dict(missing=0.0),
    "subsample": dict(subsample=0.6),
    "deeper": dict(n=160, max_bins=8, params=dict(max_depth=4)),
    "leaf_rules": dict(params=dict(min_samples_leaf=6, min_samples_split=14, min_weight_leaf=2.0,
                                   min_impurity_decrease=0.05)),
    "no_hessian_floor": dict(params=dict(min_weight_leaf=0.0)),
    # per-node feature draws (max_features): over the drawn features' histograms (2 of 5), or every feature's
    "node_draws": dict(n_features=5, params=dict(max_features=2)),
    "node_draws_all_histograms": dict(n_features=4, params=dict(max_features=3)),
    # thresholds at the next value of the node, small nodes searched by sorting on the level-wise side
    "local_thresholds": dict(n=160, max_bins=40, params=dict(max_depth=4, local_thresholds=True,
                                                             sorted_small_nodes=True)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_device_trees_equal_the_level_wise_grower(case):
    kw = dict(CASES[case])
    params = device_params(**kw.pop("params", {}))
    inputs, scale = boosting_round(3, **kw)
    got = tree.grow_tree(NP, inputs, params, scale=scale)
    assert got is not None
    # per-node draws take the trees' keys from the inputs' generator: the level-wise grower a fresh one
    want = grow(NP, level_wise(boosting_round(3, **kw)[0]), params)
    assert_same_batch(got, want)
    assert int(np.max(want.node_count)) > 3  # the trees did split


def test_the_perfect_layout_predicts_as_the_laid_out_batch():
    """Every row reaches the same leaf in the device's batch as in its laid-out form (the padding is unreachable)."""
    inputs, scale = boosting_round(9, k=2)
    perfect = tree.grow_tree(NP, inputs, device_params(max_depth=4), scale=scale)
    values = np.asarray(perfect.stats)[:, :, 1]  # any per-node values
    laid_out, laid_values = reference.compact_batch(NP, perfect, values)
    X = np.random.default_rng(2).normal(size=(80, 3))
    X[::7, 1] = np.nan
    X = inputs.bin_mapper.encode_for_predict(NP, X)
    leaves = reference.apply_trees(NP, perfect, X, inputs.bin_mapper.missing_bin)
    want = reference.apply_trees(NP, laid_out, X, inputs.bin_mapper.missing_bin)
    np.testing.assert_array_equal(reference.gather_node_values(NP, values, leaves),
                                  reference.gather_node_values(NP, laid_values, want))
    # the training rows' leaves, renumbered: each row's laid-out leaf holds the value its perfect leaf held
    np.testing.assert_array_equal(np.take_along_axis(laid_values, np.asarray(laid_out.row_leaf), axis=1),
                                  np.take_along_axis(values, np.asarray(perfect.row_leaf), axis=1))


def test_rounds_compacted_together_equal_each_compacted_alone():
    """A fit's rounds laid out in one pass equal each round laid out alone: same widths, nodes and values."""
    batches, values = [], []
    for seed, depth_seed in ((9, 2), (4, 3), (11, 5)):
        inputs, scale = boosting_round(seed, k=2)
        batch = tree.grow_tree(NP, inputs, device_params(max_depth=4), scale=scale)
        batches.append(batch)
        values.append(np.asarray(batch.stats)[:, :, 1] * depth_seed)
    together = reference.compact_batches(NP, batches, values)
    for (got, got_values), batch, v in zip(together, batches, values):
        want, want_values = reference.compact_batch(NP, batch, v)
        for field in dataclasses.fields(want):
            a, b = getattr(got, field.name), getattr(want, field.name)
            assert (a is None) == (b is None), field.name
            if a is not None:
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=field.name)
        np.testing.assert_array_equal(got_values, want_values)
    assert len({int(np.max(b.node_count)) for b, _ in together}) > 1  # the rounds' widths differ

# (budget in bytes, the build kernel of each of the 4 levels): 2 trees x 13 bins x 3 int64 = 624 bytes a
# feature of a slot; 4 features
SHARED_CASES = {
    "all_features_a_block": (48 * 1024, ["_build_shared"] * 4),
    "two_features_a_block": (2 * 624 + 100, ["_build_shared", "_build_shared", "_build_shared", "_build"]),
    "one_feature_a_block": (624, ["_build_shared", "_build_shared", "_build", "_build"]),
    "global_atomics": (0, ["_build"] * 4),
}


@pytest.mark.parametrize("case", list(SHARED_CASES))
def test_histograms_summed_in_shared_memory_equal_global_atomics(case, monkeypatch):
    """The histograms summed in blocks' shared memory (features split over blocks by the budget, levels
    whose slots do not fit left to global atomics) give the level-wise grower's trees."""
    budget, kernels = SHARED_CASES[case]
    monkeypatch.setattr(tree, "SHARED_HISTOGRAM_BYTES", budget)
    launched = _recording_launches(monkeypatch)
    inputs, scale = boosting_round(13, n=140, n_features=4, k=2)
    params = device_params(max_depth=4)
    got = tree.grow_tree(NP, inputs, params, scale=scale)
    builds = [k.__name__ if hasattr(k, "__name__") else k.fn.__name__ for k in launched
              if k in (tree._build, tree._build_shared)]
    assert builds == kernels
    assert_same_batch(got, grow(NP, level_wise(inputs), params))


def test_shared_group_width_balances_the_groups(monkeypatch):
    monkeypatch.setattr(tree, "SHARED_HISTOGRAM_BYTES", 48 * 1024)
    assert tree.shared_group_width(1, 257, 28, 3) == 7  # 7 features of 6,168 bytes: 4 groups of 7
    assert tree.shared_group_width(1, 257, 8, 3) == 4  # 2 groups of 4, not 7 and 1
    assert tree.shared_group_width(2, 257, 28, 3) == 3  # 3 fit: 10 groups, of 3 (and one of 1)
    assert tree.shared_group_width(8, 257, 28, 3) == 0  # not one feature: global atomics
    assert tree.shared_group_width(1, 13, 3, 3) == 3


def test_per_tree_feature_subsets():
    inputs, scale = boosting_round(5, k=2, n_features=4)
    allowed = np.array([[True, False, True, True], [False, True, False, True]])
    inputs = dataclasses.replace(inputs, tree_features=allowed)
    params = device_params()
    got = tree.grow_tree(NP, inputs, params, scale=scale)
    assert_same_batch(got, grow(NP, level_wise(inputs), params))
    feats = np.asarray(got.feature)
    for t in range(2):
        used = feats[t][feats[t] >= 0]
        assert np.all(allowed[t][used])


def test_uncovered_batches_decline():
    inputs, scale = boosting_round(1)
    assert tree.grow_tree(NP, inputs, device_params(), scale=None) is None  # not quantised
    assert tree.grow_tree(NP, inputs, device_params(max_leaf_nodes=5), scale=scale) is None  # best-first
    assert tree.grow_tree(NP, inputs, device_params(max_depth=None), scale=scale) is None  # to the end
    assert tree.grow_tree(NP, dataclasses.replace(inputs, random_splits=True), device_params(), scale=scale) is None
    # the sort-based search of small nodes puts non-local thresholds elsewhere
    assert tree.grow_tree(NP, inputs, device_params(sorted_small_nodes=True), scale=scale) is None
    mono = dataclasses.replace(inputs, monotonic_cst=np.array([1, 0, 0]))
    assert tree.grow_tree(NP, mono, device_params(), scale=scale) is None


def _recording_launches(monkeypatch):
    """The kernels ``tree`` launches, in order, appended to the returned list."""
    launched = []
    real = tree.launch

    def record(kernel, *args, **kw):
        launched.append(kernel)
        real(kernel, *args, **kw)

    monkeypatch.setattr(tree, "launch", record)
    return launched


def test_a_level_is_a_fixed_number_of_launches(monkeypatch):
    """Two kernels a level (and the zeroing) whatever the data, the leaves' routing after the last, and
    nothing read to the host until the layout."""
    launched = _recording_launches(monkeypatch)
    inputs, scale = boosting_round(7, k=2)
    params = device_params(max_depth=4)
    tree.grow_tree(NP, inputs, params, scale=scale)
    assert launched == [tree._build, tree._split] * params.max_depth + [tree._route, tree._finish]
    print(f"device step: {len(launched)} launches for {params.max_depth} levels "
          f"({tree.LAUNCHES_PER_LEVEL} device operations a level)")


def test_a_fit_workspace_grows_each_batch_as_a_fresh_one():
    """Inside a fit's workspace the next round's batch reuses the last one's node table, positions and level
    histograms (reset by the kernels, not by the host): it equals the same batch grown with fresh arrays, here
    in passes of 2 of 3 trees (the last pass narrower than the first)."""
    from gputrees.kernels.gpu.workspace import workspace

    first, scale = boosting_round(21, k=3)
    other, other_scale = boosting_round(22, k=3)
    second = dataclasses.replace(first, channels=other.channels, rng=np.random.default_rng(5))
    params = device_params(max_depth=4)
    per_tree = params.memory_limit // tree.trees_per_pass(first, params)
    params = dataclasses.replace(params, memory_limit=2 * per_tree)
    assert tree.trees_per_pass(first, params) == 2
    fresh = tree.grow_tree(NP, second, params, scale=other_scale)
    with workspace():
        tree.grow_tree(NP, first, params, scale=scale)
        again = tree.grow_tree(NP, second, params, scale=other_scale)
    for name in ("left", "right", "feature", "bin", "missing_left", "is_categorical", "threshold", "depth",
                 "stats", "row_leaf"):
        np.testing.assert_array_equal(getattr(again, name), getattr(fresh, name), err_msg=name)


@pytest.mark.parametrize("kind", ["classifier", "regressor", "multiclass"])
def test_boosting_on_the_device_equals_the_cpu(kind, monkeypatch):
    """A whole fit with the cuda set in the simulator (the device step growing each round's trees) equals the
    CPU's fit with quantised gradients: the same trees, values and predictions. (The CPU's NumPy set, which the
    CPU tests hold equal to its Numba one: nothing compiles in this simulator process.)"""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(150, 3))
    X[rng.random(X.shape) < 0.05] = np.nan
    if kind == "regressor":
        y, cls = X[:, 0] * 2 + rng.normal(size=150) * 0.3, GradientBoostingRegressor
        y = np.nan_to_num(y)
    else:
        n_classes = 3 if kind == "multiclass" else 2
        y, cls = rng.integers(0, n_classes, 150), GradientBoostingClassifier
    kw = dict(n_estimators=3, max_depth=3, max_bins=12, learning_rate=0.3, min_samples_leaf=1,
              early_stopping=False, quantised_gradients=True)
    calls = []
    real = tree.grow_tree
    monkeypatch.setattr(tree, "grow_tree", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setenv("GPUTREES_KERNELS", "cuda")
    on_device = cls(**kw).fit(X, y)
    assert calls
    monkeypatch.setenv("GPUTREES_KERNELS", "bincount")
    on_cpu = cls(**kw).fit(X, y)
    for name in ("left", "feature", "bin", "missing_left", "threshold", "stats"):
        np.testing.assert_array_equal(getattr(on_device.trees_, name), getattr(on_cpu.trees_, name), err_msg=name)
    np.testing.assert_array_equal(on_device.tree_values_, on_cpu.tree_values_)
    np.testing.assert_array_equal(on_device.train_score_, on_cpu.train_score_)
