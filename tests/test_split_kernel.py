"""The compiled split scan (gputrees.kernels.cpu.scan) against the generic find_best_splits.

The generic array-API code is the reference: on hand-made and random
histograms the kernel must give the same record (found, feature, bin,
missing_left, left and right stats exactly; proxy and threshold to 1e-12
relative), for every criterion and option it covers, and None (the caller
then uses the generic code) for what it does not cover.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gputrees._backend import namespace_of
from gputrees._binning import fit_bin_mapper
from gputrees._criteria import Entropy, FriedmanMSE, Gini, Misclassification, Newton, NewtonGH, Poisson, SquaredError
from gputrees._records import SplitConstraints
from gputrees._splitting import find_best_splits

pytest.importorskip("numba")

from gputrees.kernels import cpu, get_kernels  # noqa: E402
from gputrees.kernels.interface import declines  # noqa: E402

NP = namespace_of(np.empty(0))
EXACT = ("found", "feature", "bin", "missing_left", "is_categorical", "cat_left", "left", "right")

CRITERIA = {
    "gini2": Gini(n_classes=2),
    "gini3": Gini(n_classes=3),
    "gini10": Gini(n_classes=10),  # more than 8 classes: NumPy's pairwise sums
    "entropy2": Entropy(n_classes=2),
    "entropy9": Entropy(n_classes=9),
    "misclassification3": Misclassification(n_classes=3),
    "squared_error": SquaredError(n_outputs=1),
    "squared_error2": SquaredError(n_outputs=2),
    "squared_error9": SquaredError(n_outputs=9),
    "friedman_mse": FriedmanMSE(n_outputs=1),
    "friedman_mse3": FriedmanMSE(n_outputs=3),
    "poisson": Poisson(n_outputs=1),
    "poisson2": Poisson(n_outputs=2),
    "newton": Newton(0.0),
    "newton_l2": Newton(1.5),
}


def _channels(criterion, rng, n):
    if isinstance(criterion, Newton):
        return criterion.row_channels(NP, rng.standard_normal(n), rng.random(n) + 0.05)
    w = rng.choice([0.5, 1.0, 2.0], n)
    if criterion.is_classification:
        return criterion.row_channels(NP, rng.integers(0, criterion.n_classes, n), w)
    y = rng.random((n, criterion.n_outputs)) * 3
    if isinstance(criterion, Poisson):
        y[rng.random(y.shape) < 0.2] = 0.0
    return criterion.row_channels(NP, y, w)


def make_case(rng, criterion, m, n_features, max_bins=16, rows=400, missing=0.1, discrete=True):
    """Histograms of ``m`` nodes built from binned random rows, with their bin mapper."""
    X = rng.standard_normal((rows, n_features))
    if discrete:  # some features with few values: exact bins, local thresholds differ
        X[:, ::2] = np.round(X[:, ::2] * 2)
    X[rng.random(X.shape) < missing] = np.nan
    is_cat = np.zeros(n_features, dtype=bool)
    mapper = fit_bin_mapper(NP, X, is_cat, max_bins)
    codes = np.asarray(mapper.transform(NP, X)).astype(np.int64)
    node = rng.integers(0, m, rows)
    w = _channels(criterion, rng, rows)
    hist = np.zeros((m, n_features, mapper.n_bins, w.shape[1]))
    for f in range(n_features):
        np.add.at(hist, (node, f, codes[:, f]), w)
    parent = np.zeros((m, w.shape[1]))
    np.add.at(parent, node, w)
    return hist, parent, mapper


def compare(hist, parent, criterion, cons=None, mapper=None, n_threads=1, is_cat=None, **kw):
    """Run both; assert equal records; return the kernel's."""
    cons = cons or SplitConstraints(min_samples_leaf=1, min_weight_leaf=0.0)
    is_cat = np.zeros(hist.shape[1], dtype=bool) if is_cat is None else is_cat
    want = find_best_splits(NP, hist, parent, criterion, cons, is_cat, bin_mapper=mapper, **kw)
    got = cpu.scan.best_splits(NP, hist, parent, criterion, cons, is_cat, bin_mapper=mapper,
                                   n_threads=n_threads, **kw)
    assert got is not None
    for k in EXACT:
        a, b = np.asarray(getattr(want, k)), np.asarray(getattr(got, k))
        assert a.shape == b.shape and a.dtype == b.dtype, k
        np.testing.assert_array_equal(b, a, err_msg=k)
    for k in ("proxy", "threshold"):
        np.testing.assert_allclose(getattr(got, k), getattr(want, k), rtol=1e-12, atol=0, equal_nan=True, err_msg=k)
    if not isinstance(criterion, (Entropy, Poisson)):
        # IEEE operations in the same order: bit for bit (logarithms may differ in the last ulp between libms)
        np.testing.assert_array_equal(got.proxy, want.proxy)
        np.testing.assert_array_equal(got.threshold, want.threshold)
    return got


@pytest.mark.parametrize("name", sorted(CRITERIA))
@pytest.mark.parametrize("missing", [0.0, 0.15])
def test_random_histograms_every_criterion(name, missing):
    criterion = CRITERIA[name]
    rng = np.random.default_rng(abs(hash((name, missing))) % 2**32)
    for m, f, rows in ((1, 3, 60), (7, 5, 300), (40, 4, 900)):
        hist, parent, mapper = make_case(rng, criterion, m, f, rows=rows, missing=missing)
        compare(hist, parent, criterion, mapper=mapper)
        compare(hist, parent, criterion, mapper=mapper, local_thresholds=False)


@pytest.mark.parametrize("name", ["gini2", "entropy9", "squared_error", "poisson", "newton_l2"])
def test_min_samples_and_weight_leaf(name):
    criterion = CRITERIA[name]
    rng = np.random.default_rng(1)
    hist, parent, mapper = make_case(rng, criterion, 12, 4, rows=500)
    for msl, mwl in ((1, 0.0), (5, 0.0), (20, 0.0), (1, 3.0), (10, 8.0), (400, 0.0)):
        compare(hist, parent, criterion, SplitConstraints(msl, mwl), mapper)


@pytest.mark.parametrize("name", ["gini3", "squared_error", "newton"])
def test_feature_mask_and_random_u(name):
    criterion = CRITERIA[name]
    rng = np.random.default_rng(2)
    hist, parent, mapper = make_case(rng, criterion, 25, 6, rows=800)
    mask = rng.random((25, 6)) < 0.5
    mask[0] = False  # a node with no feature drawn
    u = rng.random((25, 6))
    compare(hist, parent, criterion, mapper=mapper, feature_mask=mask)
    compare(hist, parent, criterion, mapper=mapper, random_u=u)
    compare(hist, parent, criterion, mapper=mapper, random_u=u, feature_mask=mask)


def test_feature_ids_and_monotonic_bounds():
    criterion = CRITERIA["newton_l2"]
    rng = np.random.default_rng(3)
    hist, parent, mapper = make_case(rng, criterion, 10, 6, rows=600)
    ids = np.stack([np.sort(rng.choice(6, 3, replace=False)) for _ in range(10)])
    sub = np.stack([hist[i, ids[i]] for i in range(10)])
    got = compare(sub, parent, criterion, mapper=mapper, feature_ids=ids, random_u=rng.random((10, 3)))
    assert set(got.feature.tolist()) <= set(ids.ravel().tolist())
    compare(sub, parent, criterion, mapper=mapper, feature_ids=ids)
    bounds = np.stack([-rng.random(10) * 0.3, rng.random(10) * 0.3], axis=1)
    bounds[0] = [-np.inf, np.inf]
    cst = np.array([1.0, -1.0, 0.0, 1.0, 0.0, -1.0])
    compare(hist, parent, criterion, mapper=mapper, bounds=bounds, monotonic_cst=cst)
    compare(sub, parent, criterion, mapper=mapper, bounds=bounds, monotonic_cst=cst, feature_ids=ids)


@pytest.mark.parametrize("l2", [0.0, 1.5])
@pytest.mark.parametrize("missing", [0.0, 0.15])
def test_newton_without_count(l2, missing):
    """Newton over [G, H] histograms (boosting's two channels): the kernel equals the generic search,
    and without missing values and with min_samples_leaf 1 both equal Newton over [count, G, H]."""
    full = Newton(l2)
    gh = full.without_count()
    assert isinstance(gh, NewtonGH) and not gh.has_count and gh.l2 == l2
    rng = np.random.default_rng(int(l2 * 10 + missing * 100))
    for m, f, rows in ((1, 3, 60), (9, 5, 400), (30, 4, 900)):
        hist, parent, mapper = make_case(rng, full, m, f, rows=rows, missing=missing)
        for mwl in (1e-3, 2.0):
            cons = SplitConstraints(1, mwl)
            got = compare(hist[..., 1:], parent[:, 1:], gh, cons, mapper, local_thresholds=False)
            ids = np.stack([np.sort(rng.choice(f, 2, replace=False)) for _ in range(m)])
            sub = np.stack([hist[i, ids[i], :, 1:] for i in range(m)])
            compare(sub, parent[:, 1:], gh, cons, mapper, local_thresholds=False, feature_ids=ids,
                    feature_mask=None)
            bounds = np.stack([-rng.random(m) * 0.3, rng.random(m) * 0.3], axis=1)
            cst = rng.choice([-1.0, 0.0, 1.0], f)
            compare(hist[..., 1:], parent[:, 1:], gh, cons, mapper, local_thresholds=False, bounds=bounds,
                    monotonic_cst=cst)
            with_count = find_best_splits(NP, hist, parent, full, cons, np.zeros(f, dtype=bool), bin_mapper=mapper,
                                          local_thresholds=False)
            for k in ("found", "feature", "bin", "proxy", "threshold"):
                np.testing.assert_array_equal(getattr(got, k), getattr(with_count, k), err_msg=k)
            np.testing.assert_array_equal(got.left, with_count.left[:, 1:])
            # NaN's side: the same where a node has missing values; False (decided by the grower) elsewhere
            has_missing = hist[np.arange(m), got.feature, -1, 0] > 0
            np.testing.assert_array_equal(got.missing_left[has_missing], with_count.missing_left[has_missing])
            assert not np.any(got.missing_left[~has_missing])


def test_newton_without_count_refuses_what_needs_counts():
    gh = NewtonGH(1.0)
    rng = np.random.default_rng(5)
    hist, parent, mapper = make_case(rng, Newton(1.0), 4, 3, rows=200)
    hist, parent = hist[..., 1:], parent[:, 1:]
    is_cat = np.zeros(3, dtype=bool)
    ok = SplitConstraints(1, 1.0)
    for kw in ({"local_thresholds": True}, {"random_u": rng.random((4, 3)), "local_thresholds": False},
               {"cons": SplitConstraints(2, 1.0), "local_thresholds": False},
               {"is_cat": np.array([False, True, False]), "local_thresholds": False}):
        kw = dict(kw)
        cons, cat = kw.pop("cons", ok), kw.pop("is_cat", is_cat)
        with pytest.raises(ValueError, match="without a count channel"):
            find_best_splits(NP, hist, parent, gh, cons, cat, bin_mapper=mapper, **kw)


@pytest.mark.parametrize("name", ["gini2", "squared_error", "newton"])
def test_ties_duplicate_and_mirrored_features(name):
    criterion = CRITERIA[name]
    rng = np.random.default_rng(4)
    hist, parent, mapper = make_case(rng, criterion, 8, 2, rows=300, missing=0.0, discrete=False)
    nb = hist.shape[2]
    mirrored = hist[:, :1].copy()
    mirrored[:, :, : nb - 1] = mirrored[:, :, nb - 2 :: -1]  # same cuts, reversed order
    tied = np.concatenate([hist[:, 1:2], hist[:, :1], hist[:, :1], mirrored], axis=1)
    got = compare(tied, parent, criterion)
    # wherever the duplicated feature wins, the first copy (column 1) does
    assert not np.any(got.found & (got.feature == 2))
    # a missing bin: "missing right" candidates come before "missing left" ones
    with_missing = tied.copy()
    with_missing[:, :, nb - 1] = 0
    compare(with_missing, parent, criterion)


@pytest.mark.parametrize("name", ["newton", "newton_l2"])
@pytest.mark.parametrize("missing", [0.0, 0.2])
def test_newton_near_ties_between_features(name, missing):
    """A feature within the tie tolerance of a later one that holds the node's best: the earlier one wins,
    at its first candidate at or above the node's target (the fused Newton scan's record is for a feature's
    own best, so this case scans the feature again)."""
    criterion = CRITERIA[name]
    rng = np.random.default_rng(11)
    hist, parent, mapper = make_case(rng, criterion, 40, 1, rows=2000, missing=missing, discrete=False)
    gi = 1  # [count, G, H]: G
    near = hist.copy()
    # the same cuts with every bin's G scaled by 1 - r * TIE_RTOL: the proxies move by about r TIE_RTOL
    near[..., gi] *= 1.0 - rng.uniform(0.05, 0.45, (40, 1, 1)) * _splitting_tie_rtol()
    got = compare(np.concatenate([near, hist], axis=1), parent, criterion)
    only_best = compare(hist, parent, criterion)
    assert np.all(got.found == only_best.found)
    # nodes where the earlier copy wins though the later one holds the best proxy
    assert np.any(got.found & (got.feature == 0) & (got.proxy < only_best.proxy))


def test_newton_near_tie_inside_the_first_near_best_feature():
    """Hand-made: feature 0's best candidate (after bin 2) is within the tie tolerance of feature 1's best,
    and its earlier candidate (after bin 0) within the tolerance of its own best but not of the node's: the
    split is feature 0 after bin 2 (the node's target decides, not the feature's own)."""
    rtol = _splitting_tie_rtol()

    def feature(g0, g3):
        # four value bins of 10 rows and hessian 10, G only in the outer two; the missing bin empty:
        # after bin 0 the proxy is g0^2 / 10 + g3^2 / 30, after bin 2 g0^2 / 30 + g3^2 / 10
        h = np.zeros((5, 3))
        h[:4, 0] = 10.0
        h[:4, 2] = 10.0
        h[0, 1], h[3, 1] = g0, g3
        return h

    eps, eta = 0.7 * rtol, 1.0 * rtol
    a = feature(1.0, 1.0 + eps)  # after bin 0: about eps (relative) below its own best, after bin 2
    b = feature(1.0 - eta / 2, 1.0 + eps + eta / 2)  # best after bin 2, about eta / 2 above feature 0's
    hist = np.stack([a, b])[None]
    parent = a.sum(axis=0)[None]
    got = compare(hist, parent, CRITERIA["newton"])
    assert got.found[0] and got.feature[0] == 0 and got.bin[0] == 2


def _splitting_tie_rtol():
    from gputrees._splitting import TIE_RTOL

    return TIE_RTOL


def test_empty_nodes_single_bin_nodes_and_wide_bins():
    criterion = CRITERIA["gini2"]
    rng = np.random.default_rng(5)
    hist, parent, mapper = make_case(rng, criterion, 6, 3, rows=200)
    hist[0] = 0.0  # an empty node
    parent[0] = 0.0
    hist[1] = 0.0  # a node whose rows all fall in one bin
    hist[1, :, 2] = parent[1]
    hist[2, :, :-1] = 0.0  # only missing values
    hist[2, :, -1] = parent[2]
    hist[3] = 0.0  # one value bin and missing values: the bin against the missing values
    hist[3, :, 2] = parent[3] * 0.75
    hist[3, :, -1] = parent[3] * 0.25
    got = compare(hist, parent, criterion, mapper=mapper)
    assert got.found.tolist()[:4] == [False, False, False, True]
    # "codes <= 2 left, missing right" ties with "codes <= 0 (none) and missing left": missing right first
    assert not got.missing_left[3] and got.bin[3] == 2
    # uint16-size bins
    for name in ("gini2", "newton"):
        crit = CRITERIA[name]
        hist, parent, mapper = make_case(rng, crit, 5, 3, max_bins=1024, rows=5000, discrete=False)
        assert hist.shape[2] == 1025
        compare(hist, parent, crit, mapper=mapper)
        compare(hist, parent, crit, mapper=mapper, local_thresholds=False, random_u=rng.random((5, 3)))


@pytest.mark.parametrize("name", ["gini2", "squared_error", "newton_l2"])
def test_few_valued_features_scan_their_value_bins(name):
    """Features with 2, 3 and 12 values next to continuous ones, 256 bins: the kernel scans a
    feature's ``n_value_bins`` only; the records equal the generic search's."""
    criterion = CRITERIA[name]
    rng = np.random.default_rng(11)
    rows, m = 3000, 9
    X = rng.standard_normal((rows, 5))
    X[:, 1] = rng.integers(0, 3, rows)
    X[:, 3] = rng.integers(0, 12, rows)
    X[:, 4] = rng.integers(0, 2, rows)
    X[rng.random(X.shape) < 0.05] = np.nan
    mapper = fit_bin_mapper(NP, X, np.zeros(5, dtype=bool), 255)
    assert mapper.n_bins == 256 and sorted(np.asarray(mapper.n_value_bins).tolist())[:3] == [2, 3, 12]
    codes = np.asarray(mapper.transform(NP, X)).astype(np.int64)
    node = rng.integers(0, m, rows)
    w = _channels(criterion, rng, rows)
    hist = np.zeros((m, 5, mapper.n_bins, w.shape[1]))
    for f in range(5):
        np.add.at(hist, (node, f, codes[:, f]), w)
    parent = np.zeros((m, w.shape[1]))
    np.add.at(parent, node, w)
    got = compare(hist, parent, criterion, mapper=mapper)
    assert got.found.all()
    compare(hist, parent, criterion, mapper=mapper, local_thresholds=False, random_u=rng.random((m, 5)))
    ids = np.stack([np.sort(rng.choice(5, 3, replace=False)) for _ in range(m)])
    sub = np.stack([hist[i, ids[i]] for i in range(m)])
    compare(sub, parent, criterion, mapper=mapper, feature_ids=ids)


@pytest.mark.parametrize("name", ["gini2", "newton"])
def test_threads_do_not_change_the_result(name):
    criterion = CRITERIA[name]
    rng = np.random.default_rng(6)
    hist, parent, mapper = make_case(rng, criterion, 64, 16, max_bins=256, rows=20000, discrete=False)
    one = compare(hist, parent, criterion, mapper=mapper, n_threads=1)
    many = compare(hist, parent, criterion, mapper=mapper, n_threads=8)
    for k in one.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(one, k), getattr(many, k), err_msg=k)


def make_categorical_case(rng, criterion, m, n_features, rows=600, missing=0.1, levels=(3, 12, 40), first=1):
    """Histograms of ``m`` nodes whose features ``first``, ``first + 2``, ... are categorical (``levels``
    categories, cycled), with their mapper and categorical mask; category rates differ by category so that
    the orderings matter."""
    X = rng.standard_normal((rows, n_features))
    is_cat = np.zeros(n_features, dtype=bool)
    is_cat[first::2] = True
    for j, f in enumerate(np.flatnonzero(is_cat)):
        n_levels = levels[j % len(levels)]
        X[:, f] = rng.integers(0, n_levels, rows) * 3 + 1  # category values need not be 0 .. n - 1
    X[rng.random(X.shape) < missing] = np.nan
    mapper = fit_bin_mapper(NP, X, is_cat, 32)
    codes = np.asarray(mapper.transform(NP, X)).astype(np.int64)
    node = rng.integers(0, m, rows)
    w = _channels(criterion, rng, rows)
    # rows of some categories weigh more in one channel: the categories' keys differ
    w[:, -1] *= 1.0 + (np.nan_to_num(X[:, 1 % n_features]) % 5)
    hist = np.zeros((m, n_features, mapper.n_bins, w.shape[1]))
    for f in range(n_features):
        np.add.at(hist, (node, f, codes[:, f]), w)
    parent = np.zeros((m, w.shape[1]))
    np.add.at(parent, node, w)
    return hist, parent, mapper, is_cat


@pytest.mark.parametrize("name", sorted(CRITERIA))
@pytest.mark.parametrize("missing", [0.0, 0.15])
def test_categorical_features_every_criterion(name, missing):
    """Batches with categorical features: the kernel scans the sorted categories as the generic search does
    (orderings, missing sides, tie order, the codes sent left), next to numerical features."""
    criterion = CRITERIA[name]
    rng = np.random.default_rng(abs(hash(("cat", name, missing))) % 2**32)
    for m, f, rows in ((1, 2, 80), (6, 4, 400), (30, 5, 1200)):
        hist, parent, mapper, is_cat = make_categorical_case(rng, criterion, m, f, rows=rows, missing=missing)
        got = compare(hist, parent, criterion, mapper=mapper, is_cat=is_cat)
        assert got.cat_left.shape == (m, mapper.n_bins)
        compare(hist, parent, criterion, mapper=mapper, is_cat=is_cat, local_thresholds=False)
        compare(hist, parent, criterion, SplitConstraints(5, 2.0), mapper, is_cat=is_cat)
        compare(hist, parent, criterion, mapper=mapper, is_cat=is_cat, random_u=rng.random((m, f)),
                feature_mask=rng.random((m, f)) < 0.7)
        compare(hist, parent, criterion, is_cat=is_cat)  # without a mapper: every value bin a position
        compare(hist, parent, criterion, mapper=mapper, is_cat=is_cat, n_threads=4)


def test_categorical_wins_and_no_split_records():
    """Categorical splits win somewhere (the test would not see them otherwise); nodes without a split
    report column 0's first candidate, a categorical one, as the generic search does; monotonic bounds."""
    rng = np.random.default_rng(8)
    for name in ("gini2", "gini3", "squared_error", "newton_l2"):
        criterion = CRITERIA[name]
        hist, parent, mapper, is_cat = make_categorical_case(rng, criterion, 20, 3, rows=800, first=0)
        hist[:3] = 0.0  # empty nodes: no split
        parent[:3] = 0.0
        hist[3, :, :-1] = 0.0  # only missing values
        hist[3, :, -1] = parent[3]
        got = compare(hist, parent, criterion, mapper=mapper, is_cat=is_cat)
        assert not got.found[:4].any() and got.is_categorical[:4].all()
        assert np.any(got.found & got.is_categorical) and np.all(got.bin[got.is_categorical] == -1)
        # bins past a feature's categories are not read (the compiled grower leaves them unwritten)
        dirty = hist.copy()
        for f in np.flatnonzero(is_cat):
            dirty[:, f, mapper.n_value_bins[f]: mapper.n_bins - 1] = np.nan
        again = cpu.scan.best_splits(NP, dirty, parent, criterion, SplitConstraints(1, 0.0), is_cat, bin_mapper=mapper)
        for k in got.__dataclass_fields__:
            np.testing.assert_array_equal(getattr(again, k), getattr(got, k), err_msg=k)
        if name == "newton_l2":
            bounds = np.stack([-rng.random(20) * 0.3, rng.random(20) * 0.3], axis=1)
            compare(hist, parent, criterion, mapper=mapper, is_cat=is_cat, bounds=bounds,
                    monotonic_cst=np.array([1.0, 0.0, -1.0]))


def test_uncovered_cases_fall_back():
    rng = np.random.default_rng(7)
    criterion = CRITERIA["gini2"]
    hist, parent, mapper = make_case(rng, criterion, 3, 3)
    cons = SplitConstraints(1, 0.0)
    is_cat = np.array([False, True, False])
    ids = np.array([[0, 1, 2]] * 3)
    assert cpu.scan.best_splits(NP, hist, parent, criterion, cons, is_cat, feature_ids=ids) is None

    class MyGini(Gini):  # a subclass may change the formulas
        pass

    no_cat = np.zeros(3, dtype=bool)
    assert cpu.scan.best_splits(NP, hist, parent, MyGini(n_classes=2), cons, no_cat) is None
    # find_best_splits then runs the generic code
    kernels = get_kernels(NP, "numba")
    a = find_best_splits(NP, hist, parent, criterion, cons, is_cat, bin_mapper=mapper, kernel=kernels.best_splits)
    b = find_best_splits(NP, hist, parent, criterion, cons, is_cat, bin_mapper=mapper)
    for k in a.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k), err_msg=k)


def test_kernel_sets():
    assert get_kernels(NP, "numba").best_splits is not declines
    assert get_kernels(NP, "bincount").best_splits is declines
    assert get_kernels(NP, "reference").best_splits is declines


# ---------------------------------------------------------------------------
# the sort-based search of small nodes
# ---------------------------------------------------------------------------


def _sorted_case(rng, criterion, m, n_features, rows_per_node=12, missing=0.1, max_bins=32):
    n = 400
    X = rng.standard_normal((n, n_features))
    X[:, ::2] = np.round(X[:, ::2] * 2)
    X[rng.random(X.shape) < missing] = np.nan
    mapper = fit_bin_mapper(NP, X, np.zeros(n_features, dtype=bool), max_bins)
    codes = mapper.transform(NP, X)
    counts = rng.integers(1, rows_per_node + 1, m)
    slot = np.repeat(np.arange(m), counts)
    rng.shuffle(slot)  # the nodes' rows interleaved, as the grower's row set gives them
    rows = rng.integers(0, n, slot.shape[0])
    weights = _channels(criterion, rng, slot.shape[0])
    if not isinstance(criterion, Newton):
        weights[:, 0] = rng.choice([1.0, 1.0, 2.0], slot.shape[0])  # bootstrap multiplicities
    parent = np.zeros((m, weights.shape[1]))
    np.add.at(parent, slot, weights)
    return codes, rows, slot, weights, parent, mapper, int(counts.max())


def compare_sorted(case, criterion, cons=None, n_threads=1, **kw):
    from gputrees._sorted_split import find_best_splits_sorted

    codes, rows, slot, weights, parent, mapper, max_rows = case
    cons = cons or SplitConstraints(min_samples_leaf=1, min_weight_leaf=0.0)
    args = (NP, codes, rows, slot, weights, parent, criterion, cons, mapper, max_rows)
    # the generic search with the numba set's sequential segmented sums: the same order of additions
    scans = dataclasses.replace(get_kernels(NP, "numba"), sorted_splits=declines)
    want = find_best_splits_sorted(*args, scans, **kw)
    got = cpu.sorted_scan.sorted_splits(*args, None, n_threads=n_threads, **kw)
    assert got is not None
    found = np.asarray(want.found)
    np.testing.assert_array_equal(got.found, found)
    np.testing.assert_allclose(got.proxy, want.proxy, rtol=1e-12, atol=0)
    # the other fields are specified for the nodes with a split
    for k in ("feature", "bin", "missing_left"):
        a, b = np.asarray(getattr(got, k)), np.asarray(getattr(want, k))
        np.testing.assert_array_equal(a[found], b[found], err_msg=k)
    # statistics: equal to rounding (the fast pass above SMALL_SORT_ROWS
    # rows sums each code's rows, then the codes; the generic search sums the
    # sorted rows one by one; integer channels are exact either way)
    for k in ("left", "right"):
        a, b = np.asarray(getattr(got, k)), np.asarray(getattr(want, k))
        np.testing.assert_allclose(a[found], b[found], rtol=1e-12, atol=1e-12, err_msg=k)
    np.testing.assert_allclose(got.threshold[found], np.asarray(want.threshold)[found], rtol=1e-12, atol=0)
    for k in ("is_categorical", "cat_left"):
        np.testing.assert_array_equal(getattr(got, k), getattr(want, k), err_msg=k)
    return got


@pytest.mark.parametrize("name", sorted(CRITERIA))
def test_sorted_search_every_criterion(name):
    criterion = CRITERIA[name]
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    for m, f, missing in ((1, 3, 0.0), (30, 5, 0.15), (60, 4, 0.0)):
        case = _sorted_case(rng, criterion, m, f, missing=missing)
        compare_sorted(case, criterion)
    u = rng.random((60, 4))
    mask = rng.random((60, 4)) < 0.6
    compare_sorted(case, criterion, feature_mask=mask)
    compare_sorted(case, criterion, random_u=u)
    compare_sorted(case, criterion, random_u=u, feature_mask=mask, cons=SplitConstraints(2, 1.0))


@pytest.mark.parametrize("name", ["gini2", "squared_error"])  # the two with a fast pass (_fast_feature)
def test_sorted_search_ties_and_threads(name):
    criterion = CRITERIA[name]
    rng = np.random.default_rng(8)
    codes, rows, slot, weights, parent, mapper, max_rows = _sorted_case(rng, criterion, 200, 3, rows_per_node=30)
    nb = mapper.n_bins
    mirrored = np.where(codes[:, :1] == nb - 1, nb - 1, (nb - 2) - codes[:, :1].astype(np.int64)).astype(codes.dtype)
    tied = np.concatenate([codes[:, 1:2], codes[:, :1], codes[:, :1], mirrored], axis=1)
    cols = [1, 0, 0, 0]
    mapper4 = dataclasses.replace(
        mapper,
        category_values=[mapper.category_values[c] for c in cols],
        **{k: np.asarray(getattr(mapper, k))[cols] for k in ("thresholds", "n_value_bins", "bin_values",
                                                              "is_exact", "is_categorical")},
    )
    case = (np.ascontiguousarray(tied), rows, slot, weights, parent, mapper4, max_rows)
    one = compare_sorted(case, criterion, n_threads=1)
    many = compare_sorted(case, criterion, n_threads=8)
    assert not np.any(one.found & (one.feature == 2))
    for k in one.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(one, k), getattr(many, k), err_msg=k)


def _fast_feature_oracle(key, w, P, msl, target, tie_rtol):
    """Candidates of a node's feature by np.unique: each present code's rows summed, then the codes in order."""
    codes, inv = np.unique(key, return_inverse=True)
    per_code = np.zeros((codes.shape[0], w.shape[1]))
    np.add.at(per_code, inv, w)
    L = np.cumsum(per_code, axis=0)
    R = P[None, :] - L
    sl, sr = (L[:, 1:] ** 2).sum(axis=1), (R[:, 1:] ** 2).sum(axis=1)
    wl, wr = L[:, 1:].sum(axis=1), R[:, 1:].sum(axis=1)
    ok = (L[:, 0] >= msl) & (R[:, 0] >= msl) & (wl > 0) & (wr > 0)
    proxy = np.where(ok, sl / np.where(ok, wl, 1.0) + sr / np.where(ok, wr, 1.0), -np.inf)
    best = proxy.max()
    t = best - tie_rtol * abs(best) if target == -np.inf else target
    hits = np.flatnonzero((proxy >= t) & (proxy > -np.inf))
    return best, codes, L, proxy, (int(hits[0]) if hits.size else -1)


@pytest.mark.parametrize("nb", [7, 64, 65, 256])
@pytest.mark.parametrize("n", [25, 100, 255])
def test_fast_feature_without_sorting_equals_its_oracle(n, nb):
    """Above SMALL_SORT_ROWS rows and up to PRESENT_BINS bins the fast pass marks the present codes in four
    words instead of sorting: the same candidates, the integer sums exact, its histogram left zeroed."""
    assert n > cpu.sorted_scan.SMALL_SORT_ROWS and nb <= cpu.sorted_scan.PRESENT_BINS
    rng = np.random.default_rng(n * 7 + nb)
    F, C = 3, 3
    n_rows = 300
    codes = rng.integers(0, nb - 1, (n_rows, F)).astype(np.uint8)  # below the missing code nb - 1
    edges = [c for c in (0, 63, 64, 127, 128, nb - 2) if c < nb - 1]
    codes[:, 2] = rng.choice(edges, n_rows)  # codes at the words' edges, many ties
    rows = rng.permutation(n_rows)
    y = rng.integers(0, 2, n_rows)
    mult = rng.integers(1, 4, n_rows).astype(float)
    weights = np.stack([mult, mult * (y == 0), mult * (y == 1)], axis=1)
    pairs = np.sort(rng.choice(n_rows, n, replace=False))
    P = weights[pairs].sum(axis=0)
    key, order, cand = (np.zeros(n_rows + 1, dtype=np.int64) for _ in range(3))
    count = np.zeros(nb + 1, dtype=np.int64)
    hb = np.zeros((nb, C))
    L, out = np.zeros((n_rows + 1, C)), np.zeros(n_rows + 1)
    for f in range(F):
        kf = codes[rows[pairs], f]
        best, want_codes, want_L, want_p, j = _fast_feature_oracle(kf, weights[pairs], P, 1.0, -np.inf, 1e-11)
        targets = [-np.inf, want_p[-2] if want_p.shape[0] > 1 else -np.inf]
        for target in targets:
            if target != -np.inf:
                best, want_codes, want_L, want_p, j = _fast_feature_oracle(kf, weights[pairs], P, 1.0, target, 1e-11)
            got = cpu.sorted_scan._fast_feature(codes, rows, weights, pairs, f, P[0], P[1], P[2], 0.0, False, 1.0,
                                             0.0, nb, 1e-11, target, key, order, cand, count, hb, L, out)
            missing, g_best, found, code, nxt, proxy = got[:6]
            assert not missing and g_best == best
            k = want_codes.shape[0]
            np.testing.assert_array_equal(cand[:k], want_codes)
            # the left sums by channel (L's memory as (C, rows): the proxies' loop reads them so)
            np.testing.assert_array_equal(L.reshape(C, -1)[:, :k].T, want_L)
            np.testing.assert_array_equal(out[:k], want_p)
            assert found == (j >= 0)
            if found:
                assert (code, proxy) == (want_codes[j], want_p[j])
                assert nxt == (want_codes[j + 1] if j + 1 < k else nb - 1)
                assert list(got[6:9]) == list(want_L[j])
            assert not hb.any()  # zeros again for the next call
    # a missing code: the general pass's case, and the histogram zeroed all the same
    codes[rows[pairs[n // 2]], 1] = nb - 1
    got = cpu.sorted_scan._fast_feature(codes, rows, weights, pairs, 1, P[0], P[1], P[2], 0.0, False, 1.0, 0.0, nb,
                                     1e-11, -np.inf, key, order, cand, count, hb, L, out)
    assert got[0] and not hb.any()


@pytest.mark.parametrize("n", [0, 1, 2, 23, 24, 25, 300])
@pytest.mark.parametrize("nb", [2, 7, 256])
def test_stable_order_equals_a_stable_argsort(n, nb):
    """The sort of the sort-based search (ranks up to SMALL_SORT_ROWS keys, else counting) is stable."""
    rng = np.random.default_rng(n * 1000 + nb)
    key = rng.integers(0, nb, n).astype(np.int64)  # many ties
    order = np.full(n, -1, dtype=np.int64)
    count = np.full(nb + 1, 99, dtype=np.int64)  # the kernel zeroes its work array
    cpu.sorted_scan._stable_order_n(key, n, nb, order, count)
    assert order.tolist() == np.argsort(key, kind="stable").tolist()
