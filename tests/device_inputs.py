"""A boosting round's and a forest batch's inputs for the GPU's device level step (gputrees.kernels.gpu.tree),
and the comparison of its trees with the level-wise grower's, shared by its simulator tests
(tests/cuda_sim/test_device_tree.py, test_device_forest.py) and its compilation test (tests/test_cuda_compiles.py)."""

from __future__ import annotations

import dataclasses

import numpy as np

from gputrees._backend import namespace_of
from gputrees._binning import fit_bin_mapper
from gputrees._criteria import CLASSIFICATION_CRITERIA, REGRESSION_CRITERIA, Newton
from gputrees._records import GrowerInputs, GrowerParams
from gputrees.kernels import get_kernels, quantisation_scale, quantise, reference
from gputrees.kernels.interface import declines

NP = namespace_of(np.empty(0))


def _features(rng, n, n_features, missing, max_bins):
    """Binned rows (a feature of few distinct values: exact bins) with missing values, and their bin mapper."""
    X = rng.normal(size=(n, n_features))
    X[:, 0] = np.round(X[:, 0] * 2)
    X[rng.random(X.shape) < missing] = np.nan
    mapper = fit_bin_mapper(NP, X, np.zeros(n_features, dtype=bool), max_bins)
    return X, mapper, mapper.transform(NP, X)


def boosting_round(seed, n=120, n_features=3, k=1, missing=0.1, max_bins=12, subsample=None, kernels="cuda"):
    """(inputs, scale): binned rows, quantised [count, G, H] channels of K trees, the ``kernels`` set
    (the cuda set needs the simulator on NumPy arrays)."""
    rng = np.random.default_rng(seed)
    X, mapper, codes = _features(rng, n, n_features, missing, max_bins)
    g = rng.normal(size=(k, n))
    h = rng.uniform(0.1, 1.0, size=(k, n))
    count = np.ones((k, n)) if subsample is None else (rng.random((k, n)) < subsample).astype(float)
    chan = np.stack([count, g * count, h * count], axis=2)
    scale = quantisation_scale(NP, chan, n)
    chan = quantise(NP, chan, scale)
    kernel_set = get_kernels(NP, kernels).quantised(scale)
    return GrowerInputs(codes=codes, channels=chan if k > 1 else chan[0], multiplicity=None, bin_mapper=mapper,
                        criterion=Newton(1.0), kernels=kernel_set, rng=np.random.default_rng(seed),
                        record_leaves=True, count_free_histograms=False), scale


def device_params(**kw):
    """Grower parameters the device step covers (depth 3 unless given)."""
    base = dict(max_depth=3, min_samples_split=2, min_samples_leaf=1, min_weight_leaf=0.5,
                sorted_small_nodes=False, local_thresholds=False)
    base.update(kw)
    return GrowerParams(**base)


def forest_batch(seed, criterion="gini", n=150, n_features=5, k=3, missing=0.1, max_bins=12, n_outputs=1,
                 weights=False, kernels="cuda"):
    """(inputs, scale): a batch of ``k`` forest trees as the forests make it on the cuda set: bootstrap counts
    (the count channel's multiplicity in or out of the bag, the weighted channels' the draws), channels of
    ``criterion`` (classes or ``[w, wy, wy^2]``) quantised, the batch's generator of the trees' draw keys."""
    rng = np.random.default_rng(seed)
    X, mapper, codes = _features(rng, n, n_features, missing, max_bins)
    signal = np.nan_to_num(X[:, 1]) + rng.normal(size=n) * 0.5
    if criterion in CLASSIFICATION_CRITERIA:
        y = np.digitize(signal, [-0.5, 0.5])
        crit = CLASSIFICATION_CRITERIA[criterion](n_classes=3)
    else:
        y = np.stack([signal * (j + 1) for j in range(n_outputs)], axis=1)
        crit = REGRESSION_CRITERIA[criterion](n_outputs=n_outputs)
    w = rng.uniform(0.5, 2.0, size=n) if weights else np.ones(n)
    chan = crit.row_channels(NP, y, w)
    scale = quantisation_scale(NP, chan, n)
    chan = quantise(NP, chan, scale)
    draws = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(k)]).astype(np.float64)
    kernel_set = get_kernels(NP, kernels).quantised(scale)
    return GrowerInputs(codes=codes, channels=chan, multiplicity=np.minimum(draws, 1.0), bin_mapper=mapper,
                        criterion=crit, kernels=kernel_set, rng=np.random.default_rng([seed, 1]),
                        weight_multiplicity=draws), scale


def level_wise(inputs):
    """The same inputs grown level by level on the CPU's NumPy (``bincount``) set: its float64 sums of the
    quantised channels are exact, so they equal the device's fixed-point ones; the simulated cuda set's own
    level-wise kernels (as slow to simulate as the device step) are compared with the CPU's in
    ``test_cuda_kernels.py``."""
    kernels = get_kernels(NP, "bincount")
    assert not kernels.fixed_point and kernels.fast.grow_tree is declines  # nothing to quantise or decline
    return dataclasses.replace(inputs, kernels=kernels)


def assert_same_batch(got, want):
    """The device's batch (perfect-tree layout) laid out, against the level-wise grower's: the same nodes,
    splits, thresholds, statistics (exact: fixed point) and rows' leaves."""
    assert got.node_count is None  # nothing was read to lay it out
    got, _ = reference.compact_batch(NP, got)
    np.testing.assert_array_equal(got.node_count, want.node_count)
    assert got.max_depth == want.max_depth
    for name in ("left", "right", "feature", "bin", "missing_left", "threshold", "depth", "stats"):
        np.testing.assert_array_equal(np.asarray(getattr(got, name)), np.asarray(getattr(want, name)), err_msg=name)
    assert (got.row_leaf is None) == (want.row_leaf is None)
    if want.row_leaf is not None:
        np.testing.assert_array_equal(np.asarray(got.row_leaf), np.asarray(want.row_leaf))
