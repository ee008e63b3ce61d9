"""Tests of the split finder (gputrees._splitting.find_best_splits) and the criteria.

Histograms are built by hand (channels ``[count, class 0, class 1]`` for Gini
on two classes) so that the expected split can be computed on paper; a
brute-force enumeration of the candidates, in the documented tie order, checks
random histograms.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from gputrees._backend import namespace_of, to_numpy
from gputrees._binning import fit_bin_mapper
from gputrees._criteria import (
    Entropy,
    FriedmanMSE,
    Gini,
    Misclassification,
    Poisson,
    SquaredError,
)
from gputrees._records import SplitConstraints
from gputrees._splitting import find_best_splits
from gputrees.kernels import reference as _reference

NP = namespace_of(np.empty(0))
GINI2 = Gini(n_classes=2)


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def cls_hist(nodes):
    """Histogram from class counts.

    nodes : list (nodes) of list (features) of list (bins, the missing bin
    last) of [n_class0, n_class1]. Returns (m, f, nb, 3) float64 with channels
    [count, class 0, class 1] (unit weights).
    """
    a = np.asarray(nodes, dtype=np.float64)
    return np.concatenate([a.sum(axis=-1, keepdims=True), a], axis=-1)


def run(
    conv,
    hist,
    criterion=GINI2,
    is_cat=None,
    min_samples_leaf=1,
    min_weight_leaf=0.0,
    feature_mask=None,
    bin_mapper=None,
    parent=None,
):
    """find_best_splits on a backend; returns a dict of NumPy arrays."""
    hist = np.asarray(hist, dtype=np.float64)
    if parent is None:
        parent = hist[:, 0].sum(axis=1)
    if is_cat is None:
        is_cat = np.zeros(hist.shape[1], dtype=bool)
    h = conv(hist)
    xp = namespace_of(h)
    mask = None if feature_mask is None else conv(np.asarray(feature_mask, dtype=bool))
    bm = None if bin_mapper is None else bin_mapper.to_namespace(xp)
    rec = find_best_splits(
        xp,
        h,
        conv(parent),
        criterion,
        SplitConstraints(min_samples_leaf=min_samples_leaf, min_weight_leaf=min_weight_leaf),
        np.asarray(is_cat, dtype=bool),
        feature_mask=mask,
        bin_mapper=bm,
    )
    return {k: to_numpy(getattr(rec, k)) for k in rec.__dataclass_fields__}


def np_proxy(criterion, left, right):
    return float(criterion.proxy(NP, np.asarray(left, dtype=np.float64), np.asarray(right, dtype=np.float64)))


def brute_numerical(hist, parent, criterion, min_samples_leaf=1, min_weight_leaf=0.0, mask=None):
    """Best numerical split of one node by enumeration in the documented tie order.

    Order: features ascending; within a feature every "missing right" candidate
    (bins ascending), then every "missing left" one (bins ascending); the first
    candidate with the largest proxy wins. Returns (proxy, feature, bin,
    missing_left_of_candidate) or None.
    """
    f_count, nb, _ = hist.shape
    best = None
    for f in range(f_count):
        if mask is not None and not mask[f]:
            continue
        miss = hist[f, nb - 1]
        for var in (0, 1):
            if var == 1 and miss[0] <= 0:
                continue
            for b in range(nb - 1):
                left = hist[f, : b + 1].sum(axis=0) + (miss if var else 0.0)
                right = parent - left
                wl = float(criterion.weight(NP, left))
                wr = float(criterion.weight(NP, right))
                if not (
                    left[0] >= min_samples_leaf
                    and right[0] >= min_samples_leaf
                    and wl >= min_weight_leaf
                    and wr >= min_weight_leaf
                    and wl > 0
                    and wr > 0
                ):
                    continue
                p = np_proxy(criterion, left, right)
                if math.isnan(p):
                    continue
                if best is None or p > best[0]:
                    best = (p, f, b, bool(var))
    return best


# ---------------------------------------------------------------------------
# numerical features: hand-made histograms
# ---------------------------------------------------------------------------


def test_obvious_best_bin(backend):
    _, _, conv = backend
    # 4 value bins + missing bin (empty)
    hist = cls_hist([[[[5, 0], [5, 0], [0, 5], [0, 5], [0, 0]]]])
    r = run(conv, hist)
    assert r["found"].tolist() == [True]
    assert r["feature"].tolist() == [0]
    assert r["bin"].tolist() == [1]
    assert r["is_categorical"].tolist() == [False]
    assert_array_equal(r["left"], [[10, 10, 0]])
    assert_array_equal(r["right"], [[10, 0, 10]])
    assert_allclose(r["proxy"], [100 / 10 + 100 / 10])
    assert np.isnan(r["threshold"]).all()  # no bin_mapper


def test_best_feature_among_several(backend):
    _, _, conv = backend
    hist = cls_hist(
        [
            [
                [[5, 5], [5, 5], [0, 0]],  # useless
                [[9, 1], [1, 9], [0, 0]],  # good
                [[8, 2], [2, 8], [0, 0]],  # less good
            ]
        ]
    )
    r = run(conv, hist)
    assert r["feature"].tolist() == [1]
    assert r["bin"].tolist() == [0]
    assert_array_equal(r["left"], [[10, 9, 1]])


def test_batch_of_nodes_independent(backend):
    """Each node of a batch gets its own best split, the same as alone."""
    _, _, conv = backend
    nodes = [
        [[[5, 0], [0, 5], [3, 3], [0, 0]], [[2, 3], [2, 2], [1, 3], [0, 0]]],
        [[[1, 1], [4, 0], [0, 6], [0, 0]], [[0, 4], [5, 3], [0, 0], [0, 0]]],
        [[[2, 2], [0, 0], [0, 0], [0, 0]], [[2, 2], [0, 0], [0, 0], [0, 0]]],  # one bin: no split
    ]
    hist = cls_hist(nodes)
    r = run(conv, hist)
    for k in range(3):
        rk = run(conv, hist[k : k + 1])
        for key in ("found", "proxy", "feature", "bin", "missing_left", "left", "right"):
            assert_array_equal(r[key][k], rk[key][0], err_msg=key)
    assert r["found"].tolist() == [True, True, False]


def test_min_samples_leaf_masks_better_split(backend):
    _, _, conv = backend
    # bin 0 holds 2 pure rows: isolating them is the best split ...
    hist = cls_hist([[[[0, 2], [5, 3], [5, 3], [0, 0]]]])
    parent = hist[0, 0].sum(axis=0)
    p0 = np_proxy(GINI2, hist[0, 0, :1].sum(0), parent - hist[0, 0, :1].sum(0))
    p1 = np_proxy(GINI2, hist[0, 0, :2].sum(0), parent - hist[0, 0, :2].sum(0))
    assert p0 > p1
    r = run(conv, hist, min_samples_leaf=1)
    assert r["bin"].tolist() == [0]
    assert_allclose(r["proxy"], [p0])
    # ... but it leaves a child with 2 rows: with min_samples_leaf=3 the next one wins
    r = run(conv, hist, min_samples_leaf=3)
    assert r["found"].tolist() == [True]
    assert r["bin"].tolist() == [1]
    assert_allclose(r["proxy"], [p1])
    assert_array_equal(r["left"], [[10, 5, 5]])
    # and no split at all when every child would be too small
    r = run(conv, hist, min_samples_leaf=9)
    assert r["found"].tolist() == [False]


def test_min_weight_leaf_masks_light_child(backend):
    _, _, conv = backend
    # channels [count, w*class0, w*class1]: bin 0 has 4 rows of total weight 0.4
    hist = np.array([[[[4, 0, 0.4], [8, 5, 3], [8, 5, 3], [0, 0, 0]]]])
    r = run(conv, hist)
    assert r["bin"].tolist() == [0]
    # enough rows for min_samples_leaf, too little weight for min_weight_leaf
    r = run(conv, hist, min_samples_leaf=4, min_weight_leaf=1.0)
    assert r["bin"].tolist() == [1]
    assert_allclose(r["left"], [[12, 5, 3.4]])
    r = run(conv, hist, min_weight_leaf=8.0)  # right child of bin 1 weighs 8
    assert r["bin"].tolist() == [1]
    r = run(conv, hist, min_weight_leaf=8.5)
    assert r["found"].tolist() == [False]


def test_zero_weight_child_is_not_a_split(backend):
    """A child with rows but no weight is never valid (scikit-learn's rule)."""
    _, _, conv = backend
    hist = np.array([[[[3, 0, 0], [5, 2, 3], [0, 0, 0]]]])
    r = run(conv, hist)
    assert r["found"].tolist() == [False]


@pytest.mark.parametrize(
    "nodes",
    [
        [[[[4, 0], [0, 0], [0, 0]]]],  # all rows in one value bin
        [[[[0, 0], [0, 0], [3, 1]]]],  # all rows missing
        [[[[1, 0], [0, 0], [0, 0]]]],  # a single row
        [[[[0, 0], [0, 0], [0, 0]]]],  # an empty node
    ],
    ids=["one_bin", "all_missing", "single_row", "empty"],
)
def test_no_valid_split(backend, nodes):
    _, _, conv = backend
    r = run(conv, cls_hist(nodes))
    assert r["found"].tolist() == [False]
    assert r["proxy"].tolist() == [-np.inf]


def test_missing_goes_left_when_it_helps(backend):
    _, _, conv = backend
    # missing rows are class 0 like bin 0
    hist = cls_hist([[[[5, 0], [0, 5], [5, 0]]]])
    r = run(conv, hist)
    assert r["found"].tolist() == [True]
    assert r["bin"].tolist() == [0]
    assert r["missing_left"].tolist() == [True]
    assert_array_equal(r["left"], [[10, 10, 0]])
    assert_array_equal(r["right"], [[5, 0, 5]])
    assert_allclose(r["proxy"], [100 / 10 + 25 / 5])


def test_missing_goes_right_when_it_helps(backend):
    _, _, conv = backend
    # missing rows are class 1 like bin 1
    hist = cls_hist([[[[5, 0], [0, 5], [0, 5]]]])
    r = run(conv, hist)
    assert r["bin"].tolist() == [0]
    assert r["missing_left"].tolist() == [False]
    assert_array_equal(r["left"], [[5, 5, 0]])
    assert_array_equal(r["right"], [[10, 0, 10]])


def test_missing_left_with_later_bin(backend):
    _, _, conv = backend
    # bins: c0, c0, c1, c1 ; missing: c1 -> best: bin 1, missing right
    # bins: c1, c1, c0, c0 ; missing: c1 -> best: bin 1, missing left
    hist = cls_hist(
        [
            [[[3, 0], [3, 0], [0, 3], [0, 3], [0, 2]]],
            [[[0, 3], [0, 3], [3, 0], [3, 0], [0, 2]]],
        ]
    )
    r = run(conv, hist)
    assert r["bin"].tolist() == [1, 1]
    assert r["missing_left"].tolist() == [False, True]
    assert_array_equal(r["left"], [[6, 6, 0], [8, 0, 8]])


def test_split_off_missing_values_only(backend):
    """All value rows left, missing rows right: bin = last value bin with rows."""
    _, _, conv = backend
    hist = cls_hist([[[[4, 0], [4, 0], [0, 0], [0, 6]]]])
    r = run(conv, hist)
    assert r["found"].tolist() == [True]
    assert r["missing_left"].tolist() == [False]
    assert_array_equal(r["left"], [[8, 8, 0]])
    assert_array_equal(r["right"], [[6, 0, 6]])
    # bins 1 and 2 give the same partition: the lowest bin wins
    assert r["bin"].tolist() == [1]


@pytest.mark.parametrize(
    "bins, expected_left",
    [
        ([[3, 0], [0, 7], [0, 0]], False),  # left child 3 rows, right 7
        ([[0, 7], [3, 0], [0, 0]], True),  # left child 7 rows, right 3
    ],
)
def test_no_missing_in_node_goes_to_larger_child(backend, bins, expected_left):
    _, _, conv = backend
    r = run(conv, cls_hist([[bins]]))
    assert r["bin"].tolist() == [0]
    assert r["missing_left"].tolist() == [expected_left]


def test_no_missing_rule_counts_rows_not_weight(backend):
    """The larger child is the one with more rows (count channel), not more weight."""
    _, _, conv = backend
    # left: 2 rows of weight 10 ; right: 5 rows of weight 1
    hist = np.array([[[[2, 20, 0], [5, 0, 5], [0, 0, 0]]]])
    r = run(conv, hist)
    assert r["bin"].tolist() == [0]
    assert r["missing_left"].tolist() == [False]


def test_no_missing_in_this_node_but_in_another_of_the_batch(backend):
    _, _, conv = backend
    hist = cls_hist(
        [
            [[[0, 7], [3, 0], [0, 0]]],  # no missing: larger child (left)
            [[[5, 0], [0, 5], [5, 0]]],  # missing, better on the left
            [[[5, 0], [0, 5], [0, 5]]],  # missing, better on the right
        ]
    )
    r = run(conv, hist)
    assert r["missing_left"].tolist() == [True, True, False]
    assert r["bin"].tolist() == [0, 0, 0]


def test_feature_mask_hides_best_feature(backend):
    _, _, conv = backend
    hist = cls_hist(
        [
            [
                [[9, 0], [0, 9], [0, 0]],  # perfect
                [[7, 2], [2, 7], [0, 0]],  # worse
                [[5, 4], [4, 5], [0, 0]],  # worst
            ]
        ]
        * 3
    )
    r = run(conv, hist, feature_mask=[[True, True, True], [False, True, True], [False, False, True]])
    assert r["feature"].tolist() == [0, 1, 2]
    assert r["found"].tolist() == [True, True, True]
    assert_array_equal(r["left"], [[9, 9, 0], [9, 7, 2], [9, 5, 4]])
    r = run(conv, hist[:1], feature_mask=[[False, False, False]])
    assert r["found"].tolist() == [False]


# ---------------------------------------------------------------------------
# tie rule
# ---------------------------------------------------------------------------


def test_tie_between_features_lowest_index(backend):
    _, _, conv = backend
    f = [[6, 1], [1, 6], [0, 0]]
    weak = [[4, 3], [3, 4], [0, 0]]
    hist = cls_hist([[weak, f, f, f], [weak, weak, f, f]])
    r = run(conv, hist)
    assert r["feature"].tolist() == [1, 2]


def test_tie_within_feature_lowest_bin(backend):
    _, _, conv = backend
    # bins 1 and 2 are empty: candidate bins 0, 1 and 2 give the same partition
    hist = cls_hist([[[[5, 0], [0, 0], [0, 0], [0, 5], [0, 0]]]])
    r = run(conv, hist)
    assert r["bin"].tolist() == [0]


def test_tie_missing_right_before_missing_left(backend):
    """An equal-gain "missing right" candidate at a higher bin beats "missing left" at a lower one."""
    _, _, conv = backend
    # bins b0 [4,4], b1 [1,3], b2 [4,4], missing [3,2]:
    # missing right at bin 1: {b0, b1} | {b2, M} = [5, 7] | [7, 6]
    # missing left at bin 0:  {b0, M} | {b1, b2} = [7, 6] | [5, 7]  (same gain)
    hist = cls_hist([[[[4, 4], [1, 3], [4, 4], [3, 2]]]])
    parent = hist[0, 0].sum(0)
    mr1 = hist[0, 0, :2].sum(0)
    ml0 = hist[0, 0, 0] + hist[0, 0, 3]
    assert np_proxy(GINI2, mr1, parent - mr1) == np_proxy(GINI2, ml0, parent - ml0)
    assert brute_numerical(hist[0], parent, GINI2)[1:] == (0, 1, False)
    r = run(conv, hist)
    assert r["bin"].tolist() == [1]
    assert r["missing_left"].tolist() == [False]
    assert_array_equal(r["left"], [mr1])


def test_tie_missing_only_split_is_missing_right(backend):
    """Splitting off the missing rows: "values | missing" (missing right) wins over the mirror."""
    _, _, conv = backend
    # bin 0 is empty, so "missing left at bin 0" = {M} | {values}, mirror of
    # "missing right at the last bin" = {values} | {M}
    hist = cls_hist([[[[0, 0], [4, 1], [4, 1], [0, 3]]]])
    parent = hist[0, 0].sum(0)
    values = hist[0, 0, :3].sum(0)
    assert np_proxy(GINI2, values, parent - values) == np_proxy(GINI2, parent - values, values)
    r = run(conv, hist)
    assert r["missing_left"].tolist() == [False]
    assert_array_equal(r["right"], [[3, 0, 3]])
    assert r["bin"].tolist() == [2]


# ---------------------------------------------------------------------------
# randomized comparison with brute force (numerical)
# ---------------------------------------------------------------------------


def _random_node_hists(seed, m=6, n_features=3, n_bins=6, n_rows=40, missing_frac=0.15):
    """Consistent histograms (every feature sees the same rows) from random rows."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, n_bins - 1, size=(n_rows * m, n_features)).astype(np.uint8)
    codes[rng.random(codes.shape) < missing_frac] = n_bins - 1
    y = rng.integers(0, 2, size=n_rows * m)
    w = np.c_[np.ones(n_rows * m), y == 0, y == 1].astype(np.float64)
    node = rng.integers(0, m, size=n_rows * m).astype(np.int64)
    rows = np.arange(n_rows * m, dtype=np.int64)
    return np.asarray(_reference.build_histograms(NP, codes, rows, node, w, m, n_bins))


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("min_samples_leaf", [1, 5])
def test_numerical_matches_brute_force(backend, seed, min_samples_leaf):
    _, _, conv = backend
    hist = _random_node_hists(seed, missing_frac=0.0 if seed % 4 == 0 else 0.15)
    rng = np.random.default_rng(100 + seed)
    mask = rng.random(hist.shape[:2]) < 0.8
    r = run(conv, hist, min_samples_leaf=min_samples_leaf, feature_mask=mask)
    for k in range(hist.shape[0]):
        parent = hist[k, 0].sum(axis=0)
        best = brute_numerical(hist[k], parent, GINI2, min_samples_leaf, mask=mask[k])
        if best is None:
            assert not r["found"][k]
            continue
        proxy, f, b, var_left = best
        assert r["found"][k]
        assert r["proxy"][k] == proxy
        assert (r["feature"][k], r["bin"][k]) == (f, b)
        left = hist[k, f, : b + 1].sum(axis=0) + (hist[k, f, -1] if var_left else 0.0)
        assert_array_equal(r["left"][k], left)
        assert_array_equal(r["right"][k], parent - left)
        if hist[k, f, -1, 0] > 0:
            assert r["missing_left"][k] == var_left
        else:
            assert r["missing_left"][k] == (left[0] > parent[0] - left[0])


# ---------------------------------------------------------------------------
# categorical features
# ---------------------------------------------------------------------------


def _brute_categorical(cat_hist, criterion):
    """Best proxy over every 2-way partition of the categories (2^(K-1) - 1 of them)."""
    k = cat_hist.shape[0]
    parent = cat_hist.sum(axis=0)
    best = -np.inf
    for r in range(0, k - 1):
        for rest in itertools.combinations(range(1, k), r):
            left_set = (0,) + rest  # category 0 on the left: each partition once
            left = cat_hist[list(left_set)].sum(axis=0)
            best = max(best, np_proxy(criterion, left, parent - left))
    return best


@pytest.mark.parametrize("seed", range(10))
def test_categorical_gini_binary_equals_brute_force(backend, seed):
    _, _, conv = backend
    rng = np.random.default_rng(seed)
    k = 5
    counts = rng.integers(1, 15, size=(k, 2)).astype(np.float64)
    cat_hist = np.c_[counts.sum(1), counts]
    # one categorical feature: 5 category bins + empty missing bin
    hist = np.concatenate([cat_hist, np.zeros((1, 3))])[None, None]
    r = run(conv, hist, is_cat=[True])
    best = _brute_categorical(cat_hist, GINI2)
    assert r["found"].tolist() == [True]
    assert r["is_categorical"].tolist() == [True]
    assert r["bin"].tolist() == [-1]
    assert r["proxy"][0] == best
    cat_left = r["cat_left"][0]
    assert cat_left.shape == (k + 1,)
    assert 0 < cat_left[:k].sum() < k
    left = cat_hist[cat_left[:k]].sum(axis=0)
    assert_array_equal(r["left"][0], left)
    assert np_proxy(GINI2, left, cat_hist.sum(0) - left) == best
    assert np.isnan(r["threshold"][0])


@pytest.mark.parametrize("seed", range(5))
def test_categorical_squared_error_equals_brute_force(backend, seed):
    """Ordering categories by their mean is also optimal for squared error."""
    _, _, conv = backend
    rng = np.random.default_rng(50 + seed)
    crit = SquaredError(n_outputs=1)
    k = 5
    rows = []
    for _ in range(k):
        y = rng.integers(-5, 6, size=rng.integers(1, 6)).astype(np.float64)
        rows.append([y.size, y.size, y.sum(), (y * y).sum()])
    cat_hist = np.asarray(rows)
    hist = np.concatenate([cat_hist, np.zeros((1, 4))])[None, None]
    r = run(conv, hist, criterion=crit, is_cat=[True])
    best = _brute_categorical(cat_hist, crit)
    assert_allclose(r["proxy"], [best], rtol=1e-12)
    left = cat_hist[r["cat_left"][0][:k]].sum(axis=0)
    assert_allclose(np_proxy(crit, left, cat_hist.sum(0) - left), best, rtol=1e-12)


def test_categorical_hand_made(backend):
    _, _, conv = backend
    # categories 0 and 2 are class 0, 1 and 3 class 1: not contiguous codes
    hist = cls_hist([[[[4, 0], [0, 3], [5, 0], [0, 6], [0, 0]]]])
    r = run(conv, hist, is_cat=[True])
    assert r["found"].tolist() == [True]
    cat_left = r["cat_left"][0]
    # pure children; which side is which follows the ordering (class-1 rate ascending)
    assert cat_left.tolist() == [True, False, True, False, False]
    assert_array_equal(r["left"], [[9, 9, 0]])
    assert_array_equal(r["right"], [[9, 0, 9]])


def test_categorical_absent_category_goes_right(backend):
    _, _, conv = backend
    # category 1 is absent from the node
    hist = cls_hist([[[[4, 0], [0, 0], [0, 5], [4, 1], [0, 0]]]])
    r = run(conv, hist, is_cat=[True])
    cat_left = r["cat_left"][0]
    assert not cat_left[1]
    # the last entry is the missing bin: no missing rows here, so it follows the
    # larger child (left: 9 rows against 5)
    assert cat_left.tolist() == [True, False, False, True, True]
    assert r["missing_left"].tolist() == [True]


def test_categorical_missing_values(backend):
    _, _, conv = backend
    # missing rows are class 1: they join categories 1 and 3
    hist = cls_hist([[[[4, 0], [0, 3], [5, 0], [0, 6], [0, 4]]]])
    r = run(conv, hist, is_cat=[True])
    assert_array_equal(r["left"], [[9, 9, 0]])
    assert r["missing_left"].tolist() == [False]
    assert r["cat_left"][0].tolist() == [True, False, True, False, False]
    # missing rows are class 0: they go with categories 0 and 2 (left)
    hist = cls_hist([[[[4, 0], [0, 3], [5, 0], [0, 6], [4, 0]]]])
    r = run(conv, hist, is_cat=[True])
    assert_array_equal(r["left"], [[13, 13, 0]])
    assert r["missing_left"].tolist() == [True]
    assert r["cat_left"][0].tolist() == [True, False, True, False, True]


def test_mixed_numerical_and_categorical_features(backend):
    _, _, conv = backend
    hist = cls_hist(
        [
            [
                [[4, 1], [1, 4], [4, 4], [0, 0], [0, 0]],  # numerical, imperfect
                [[4, 0], [0, 4], [5, 0], [0, 5], [0, 0]],  # categorical, perfect
            ],
            [
                [[9, 0], [0, 9], [0, 0], [0, 0], [0, 0]],  # numerical, perfect
                [[4, 0], [0, 4], [5, 1], [0, 4], [0, 0]],  # categorical, imperfect
            ],
        ]
    )
    r = run(conv, hist, is_cat=[False, True])
    assert r["feature"].tolist() == [1, 0]
    assert r["is_categorical"].tolist() == [True, False]
    assert r["bin"].tolist() == [-1, 0]
    assert r["cat_left"][0].tolist() == [True, False, True, False, False]
    assert not r["cat_left"][1].any()


# ---------------------------------------------------------------------------
# thresholds
# ---------------------------------------------------------------------------


def _bin_mapper(conv, X, is_cat=None, max_bins=255):
    X = np.asarray(X, dtype=np.float64)
    Xd = conv(X)
    if is_cat is None:
        is_cat = np.zeros(X.shape[1], dtype=bool)
    return fit_bin_mapper(namespace_of(Xd), Xd, np.asarray(is_cat), max_bins)


def test_threshold_is_midpoint_of_present_neighbours(backend):
    _, _, conv = backend
    bm = _bin_mapper(conv, [[1.0], [2.0], [4.0], [8.0]])
    assert bm.n_bins == 5
    hist = cls_hist(
        [
            [[[3, 0], [0, 0], [0, 3], [0, 2], [0, 0]]],  # value 2 absent from the node
            [[[3, 0], [2, 0], [0, 3], [0, 2], [0, 0]]],  # all present
            [[[3, 0], [3, 0], [0, 0], [0, 2], [0, 0]]],  # value 4 absent
            [[[3, 0], [3, 0], [0, 0], [0, 0], [0, 4]]],  # only missing values go right
        ]
    )
    r = run(conv, hist, bin_mapper=bm)
    assert r["bin"].tolist() == [0, 1, 1, 1]
    assert r["missing_left"].tolist() == [False, False, True, False]
    # node thresholds: (1+4)/2, (2+4)/2, (2+8)/2, and inf (only NaN goes right)
    assert_array_equal(r["threshold"], [2.5, 3.0, 5.0, np.inf])
    # the bin mapper's global edges would have been 1.5, 3.0, 3.0
    assert_array_equal(to_numpy(bm.thresholds)[0], [1.5, 3.0, 6.0, np.inf])


def test_threshold_quantile_feature_is_bin_edge(backend):
    _, _, conv = backend
    x = np.linspace(0.0, 1.0, 101)
    bm = _bin_mapper(conv, np.c_[np.round(x * 3), x], max_bins=4)
    assert bool(bm.is_exact[0]) and not bool(bm.is_exact[1])
    assert bm.n_bins == 5
    edges = to_numpy(bm.thresholds)
    hist = cls_hist(
        [
            [
                [[5, 5], [5, 5], [5, 5], [5, 5], [0, 0]],
                [[5, 0], [5, 0], [0, 5], [0, 5], [0, 0]],
            ]
        ]
    )
    r = run(conv, hist, bin_mapper=bm)
    assert r["feature"].tolist() == [1]
    assert r["bin"].tolist() == [1]
    assert_array_equal(r["threshold"], [edges[1, 1]])


def test_threshold_nan_for_categorical(backend):
    _, _, conv = backend
    bm = _bin_mapper(conv, [[0.0], [1.0], [2.0]], is_cat=[True])
    hist = cls_hist([[[[3, 0], [0, 3], [3, 0], [0, 0]]]])
    r = run(conv, hist, is_cat=[True], bin_mapper=bm)
    assert r["found"].tolist() == [True]
    assert np.isnan(r["threshold"]).all()


# ---------------------------------------------------------------------------
# criteria
# ---------------------------------------------------------------------------


def _stats(criterion, y, w=None):
    y = np.asarray(y, dtype=np.int64 if criterion.is_classification else np.float64)
    if not criterion.is_classification and y.ndim == 1:
        y = y[:, None]
    w = np.ones(y.shape[0]) if w is None else np.asarray(w, dtype=np.float64)
    return np.asarray(criterion.row_channels(NP, y, w)).sum(axis=0)


def test_classification_impurities_textbook():
    s = np.array([4.0, 3.0, 1.0])  # counts [3, 1]
    assert float(Gini(n_classes=2).impurity(NP, s)) == pytest.approx(0.375, abs=1e-15)
    assert float(Entropy(n_classes=2).impurity(NP, s)) == pytest.approx(0.8112781244591328, abs=1e-15)
    assert float(Misclassification(n_classes=2).impurity(NP, s)) == pytest.approx(0.25, abs=1e-15)
    # pure node
    pure = np.array([5.0, 5.0, 0.0])
    for crit in (Gini, Entropy, Misclassification):
        assert float(crit(n_classes=2).impurity(NP, pure)) == 0.0
    # uniform over 4 classes
    uni = np.array([8.0, 2.0, 2.0, 2.0, 2.0])
    assert float(Gini(n_classes=4).impurity(NP, uni)) == pytest.approx(0.75)
    assert float(Entropy(n_classes=4).impurity(NP, uni)) == pytest.approx(2.0)
    assert float(Misclassification(n_classes=4).impurity(NP, uni)) == pytest.approx(0.75)


def test_classification_row_channels_and_value():
    crit = Gini(n_classes=3)
    s = _stats(crit, [0, 2, 2, 1, 2], w=[1.0, 2.0, 1.0, 0.5, 0.5])
    assert_array_equal(s, [5.0, 1.0, 0.5, 3.5])
    assert float(crit.weight(NP, s)) == 5.0
    assert_allclose(np.asarray(crit.value(NP, s)), [[0.2, 0.1, 0.7]])
    assert float(crit.impurity(NP, s)) == pytest.approx(1 - (0.04 + 0.01 + 0.49))


def test_squared_error_impurity_is_variance():
    rng = np.random.default_rng(0)
    y = rng.standard_normal(50) * 3 + 1
    crit = SquaredError(n_outputs=1)
    s = _stats(crit, y)
    assert float(crit.impurity(NP, s)) == pytest.approx(np.var(y), rel=1e-12)
    assert_allclose(np.asarray(crit.value(NP, s)), [[np.mean(y)]], rtol=1e-12)
    # weighted
    w = rng.random(50)
    s = _stats(crit, y, w)
    mean = np.average(y, weights=w)
    assert float(crit.impurity(NP, s)) == pytest.approx(np.average((y - mean) ** 2, weights=w), rel=1e-10)
    # two outputs: mean of the per-output variances
    Y = rng.standard_normal((30, 2))
    crit2 = SquaredError(n_outputs=2)
    s2 = _stats(crit2, Y)
    assert float(crit2.impurity(NP, s2)) == pytest.approx(np.var(Y, axis=0).mean(), rel=1e-12)


def test_poisson_impurity():
    rng = np.random.default_rng(1)
    y = rng.poisson(3.0, size=60).astype(np.float64) + 0.5
    y[:5] = 0.0  # zeros contribute 0 * log(0) = 0
    crit = Poisson(n_outputs=1)
    s = _stats(crit, y)
    mean = y.mean()
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(y > 0, y * np.log(y / mean), 0.0)
    assert float(crit.impurity(NP, s)) == pytest.approx(terms.mean(), rel=1e-12)
    # a node with a zero target sum cannot be a child
    zero = _stats(crit, [0.0, 0.0])
    assert float(crit.impurity(NP, zero)) == np.inf


@pytest.mark.parametrize(
    "crit, y",
    [
        (Gini(n_classes=3), [0, 1, 2, 2, 1, 0, 0, 2]),
        (Entropy(n_classes=2), [0, 1, 1, 1, 0, 0, 1, 1]),
        (SquaredError(n_outputs=1), [0.5, 1.0, -2.0, 3.0, 4.0, 0.0, 1.5, 2.0]),
        (Poisson(n_outputs=1), [0.5, 1.0, 2.0, 3.0, 4.0, 0.2, 1.5, 2.0]),
    ],
    ids=["gini", "entropy", "squared_error", "poisson"],
)
def test_proxy_orders_like_weighted_impurity(crit, y):
    """proxy(left, right) = -(w_l i_l + w_r i_r) + a constant of the node."""
    rows = np.asarray(crit.row_channels(NP, np.asarray(y) if crit.is_classification else np.asarray(y, float)[:, None], np.ones(len(y))))
    diffs = []
    for cut in range(1, len(y)):
        left, right = rows[:cut].sum(0), rows[cut:].sum(0)
        wl, wr = float(crit.weight(NP, left)), float(crit.weight(NP, right))
        weighted = wl * float(crit.impurity(NP, left)) + wr * float(crit.impurity(NP, right))
        diffs.append(float(crit.proxy(NP, left, right)) + weighted)
    assert_allclose(diffs, diffs[0], rtol=1e-10, atol=1e-10)


def test_friedman_mse_orders_like_squared_error_single_output():
    rng = np.random.default_rng(2)
    y = rng.standard_normal(20)
    se, fm = SquaredError(n_outputs=1), FriedmanMSE(n_outputs=1)
    rows = np.asarray(se.row_channels(NP, y[:, None], np.ones(20)))
    p_se = [float(se.proxy(NP, rows[:c].sum(0), rows[c:].sum(0))) for c in range(1, 20)]
    p_fm = [float(fm.proxy(NP, rows[:c].sum(0), rows[c:].sum(0))) for c in range(1, 20)]
    assert np.argmax(p_se) == np.argmax(p_fm)
    # squared_error improvement of the best split: the weighted variance decrease
    c = int(np.argmax(p_se)) + 1
    parent, left, right = rows.sum(0), rows[:c].sum(0), rows[c:].sum(0)
    imp_se = float(se.improvement(NP, parent, left, right, 20.0))
    expected = np.var(y) - c / 20 * np.var(y[:c]) - (20 - c) / 20 * np.var(y[c:])
    assert imp_se == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("criterion", [Gini(n_classes=5), SquaredError()], ids=["gini5", "squared_error"])
def test_categorical_search_over_the_categories_bins_equals_the_whole_width(criterion):
    """With a bin mapper the categorical search scores only the categories' bins (12 of 255 here); every
    field of the records equals the search over the whole histogram width (no mapper)."""
    rng = np.random.default_rng(3)
    n, m = 3000, 8
    X = np.column_stack([rng.normal(size=n), rng.integers(0, 12, n), rng.normal(size=n), rng.integers(0, 5, n)])
    X[rng.random(X.shape) < 0.1] = np.nan
    is_cat = np.array([False, True, False, True])
    mapper = fit_bin_mapper(NP, X, is_cat, 255)
    codes = mapper.transform(NP, X)
    assert int(mapper.n_value_bins[is_cat].max()) == 12 and mapper.n_bins == 256
    y = rng.integers(0, 5, n) if isinstance(criterion, Gini) else rng.normal(size=(n, 1))
    channels = criterion.row_channels(NP, y, np.ones(n))
    node = rng.integers(0, m, n).astype(np.int64)
    hist = _reference.build_histograms(NP, codes, np.arange(n, dtype=np.int64), node, channels, m, mapper.n_bins)
    parent = hist[:, 0].sum(axis=1)
    cons = SplitConstraints(min_samples_leaf=5, min_weight_leaf=0.0)
    fields = ("found", "proxy", "feature", "bin", "missing_left", "is_categorical", "cat_left", "left", "right")
    for u in (None, rng.random((m, 4))):
        got = find_best_splits(NP, hist, parent, criterion, cons, is_cat, bin_mapper=mapper, random_u=u)
        want = find_best_splits(NP, hist, parent, criterion, cons, is_cat, random_u=u)
        assert np.asarray(got.is_categorical).any()
        for name in fields:
            assert_array_equal(np.asarray(getattr(got, name)), np.asarray(getattr(want, name)), err_msg=name)
