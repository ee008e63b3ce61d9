"""The compiled row set of node segments (gputrees.kernels.cpu.segment_rows) against LocalRows: the same batch."""

from __future__ import annotations

import types

import numpy as np
import pytest

from gputrees._backend import namespace_of
from gputrees._binning import fit_bin_mapper
from gputrees._criteria import Newton
from gputrees._grower import grow
from gputrees._records import GrowerInputs, GrowerParams
from gputrees._rows import LocalRows

pytest.importorskip("numba")
from gputrees.kernels import get_kernels  # noqa: E402
from gputrees.kernels.cpu.segment_rows import SegmentRows, segment_rows  # noqa: E402

NP = namespace_of(np.empty(0))
BATCH_FIELDS = ("node_count", "left", "right", "feature", "bin", "missing_left", "is_categorical", "cat_left",
                "threshold", "stats", "depth", "max_depth", "row_leaf", "lower", "upper")


def _round(seed, n, p, *, trees=1, subsample=False, missing=0.0, categorical=False):
    """A boosting round's codes, mapper and channels (K, n, 3) ``[in-bag count, g, h]``."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    is_cat = np.zeros(p, dtype=bool)
    if categorical:
        is_cat[1] = True
        X[:, 1] = rng.integers(0, 12, n)
    if missing:
        X[rng.random((n, p)) < missing] = np.nan
    mapper = fit_bin_mapper(NP, X, is_cat, 255)
    codes = mapper.transform(NP, X)
    count = (rng.random(n) < 0.7).astype(np.float64) if subsample else np.ones(n)
    signal = np.nan_to_num(X[:, 0]) + np.sin(2 * np.nan_to_num(X[:, 1]))
    table = np.empty((trees, n, 3))
    for t in range(trees):
        q = 1 / (1 + np.exp(-(signal + t - trees / 2 + 0.3 * rng.standard_normal(n))))
        table[t] = np.stack([count, (q - (signal > t - 1)) * count, q * (1 - q) * count], axis=1)
    return codes, mapper, table


CASES = {
    "one_tree": ({}, {}),
    "three_trees": ({"trees": 3}, {}),
    "subsample": ({"subsample": True}, {}),
    "missing_values": ({"missing": 0.1}, {"min_samples_leaf": 5, "min_samples_split": 10}),
    "categorical": ({"categorical": True}, {}),
    "best_first": ({"trees": 2}, {"max_leaf_nodes": 9, "max_depth": None}),
    "drawn_features": ({}, {"max_features": 2}),
    # nodes summed by blocks of rows in the histogram kernel, and rows partitioned in several tasks
    "row_blocks": ({"n": 90_000, "p": 3}, {"max_depth": 4}),
    # the last level's children are leaves (written by one pass), and so are some before it
    "leaves_at_every_level": ({"n": 3000}, {"max_depth": 4, "min_weight_leaf": 20.0}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_segment_rows_grow_the_local_rows_batch(case):
    """The same trees, node statistics and rows' leaves bit for bit, over two batches (the second on the first's
    buffers)."""
    data, extra = CASES[case]
    n, p = data.pop("n", 4000), data.pop("p", 6)
    params = dict(max_depth=5, min_samples_split=2, min_samples_leaf=1, min_weight_leaf=0.5,
                  sorted_small_nodes=False, local_thresholds=False)
    params.update(extra)
    kernels = get_kernels(NP, "numba", n_jobs=2)
    previous = None
    for seed in (0, 1):
        codes, mapper, table = _round(seed, n, p, **data)
        by_feature = kernels.feature_major(NP, codes)
        channels = table if table.shape[0] > 1 else table[0]

        def inputs():  # (a generator of its own each: the grower draws the node keys from it)
            return GrowerInputs(codes=None, channels=None, multiplicity=None, bin_mapper=mapper,
                                criterion=Newton(1.0), kernels=kernels, rng=np.random.default_rng(seed),
                                record_leaves=True)

        local = LocalRows(NP, codes, channels, kernels, record_leaves=True, codes_by_feature=by_feature)
        want = grow(NP, inputs(), GrowerParams(**params), rows=local)
        rows = segment_rows(NP, codes, channels, by_feature, previous=previous, unit_count=not data.get("subsample"),
                            n_threads=2)
        assert isinstance(rows, SegmentRows)
        got = grow(NP, inputs(), GrowerParams(**params), rows=rows)
        for name in BATCH_FIELDS:
            u, v = getattr(want, name), getattr(got, name)
            if u is None or v is None:
                assert u is None and v is None, name
                continue
            np.testing.assert_array_equal(np.asarray(u), np.asarray(v), err_msg=f"{name} (batch {seed})")
        assert int(np.max(got.node_count)) >= 5  # the trees did grow
        previous = rows


def test_segment_rows_decline_what_they_do_not_cover():
    codes = np.zeros((10, 2), dtype=np.uint8)
    assert segment_rows(NP, codes, np.ones((10, 3), dtype=np.float32)) is None  # not float64
    assert segment_rows(NP, codes, np.ones((11, 3))) is None  # not one channel row a row
    assert segment_rows(NP, codes, np.ones((10, 3))) is not None


@pytest.mark.parametrize("n", [3000, 90_000])
def test_unit_hessian_histograms_are_the_channel_ones(n):
    """Where every hessian is 1, the count-free histograms read the gradients alone and add 1.0 for the hessian:
    the same [G, H] bit for bit as read from the channel table, at the root (rows in sequence; in blocks of rows
    for 90,000) and at children whose rows lie apart."""
    codes, mapper, table = _round(0, n, 4)
    table[0, :, 2] = 1.0
    n_bins = int(mapper.n_bins)
    split = types.SimpleNamespace(feature=np.array([0, 1]), bin=np.array([100, 60]),
                                  missing_left=np.array([False, True]), is_categorical=np.zeros(2, dtype=bool),
                                  cat_left=np.zeros((2, n_bins), dtype=bool))
    got = []
    for unit in (False, True):
        rows = segment_rows(NP, codes, table[0], unit_count=True, unit_hessian=unit, n_threads=2)
        rows.histogram_count = False
        root = rows.histograms(np.array([0]), 1, n_bins)
        rows.route(np.array([0]), split, 1, int(mapper.missing_bin))
        children = rows.histograms(np.array([-1, 1, 0]), 2, n_bins)  # right child first: slots out of node order
        got.append((root, children))
    for want, have in zip(got[0], got[1]):
        assert want.shape[-1] == 2
        np.testing.assert_array_equal(want, have)
    assert got[0][1][0, :, :, 1].sum() > 0  # the slot has rows
