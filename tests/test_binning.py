"""Tests of the binning stage (gputrees._binning): edges, codes, dtypes, subsampling.

Small hand-made inputs, in the style of scikit-learn's
``ensemble/_hist_gradient_boosting/tests/test_binning.py``. Every test that
runs array code is parametrized over the ``backend`` fixture (NumPy,
array-api-strict, CuPy where a GPU is present); ``xp`` is always taken from
the array itself with :func:`gputrees._backend.namespace_of`.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from gputrees import _binning
from gputrees._backend import namespace_of, to_numpy
from gputrees._binning import MAX_BINS_LIMIT, fit_bin_mapper


NP_XP = namespace_of(np.empty(0))


def _fit(conv, X, is_cat=None, max_bins=255):
    """Fit a BinMapper on ``X`` (host array) moved to a backend; return (xp, Xd, mapper)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if is_cat is None:
        is_cat = np.zeros(X.shape[1], dtype=bool)
    Xd = conv(X)
    xp = namespace_of(Xd)
    return xp, Xd, fit_bin_mapper(xp, Xd, np.asarray(is_cat, dtype=bool), max_bins)


def _codes(xp, bm, Xd):
    return to_numpy(bm.transform(xp, Xd))


# ---------------------------------------------------------------------------
# exact (one bin per distinct value) numerical binning
# ---------------------------------------------------------------------------


def test_exact_midpoint_thresholds(backend):
    _, _, conv = backend
    xp, Xd, bm = _fit(conv, [1.0, 2.0, 2.0, 5.0])
    thr = to_numpy(bm.thresholds)
    assert bm.n_value_bins.tolist() == [3]
    assert bm.n_bins == 4
    assert bm.missing_bin == 3
    assert thr.shape == (1, 3)
    # midpoints of the distinct values, then +inf ("everything left")
    assert_array_equal(thr[0], [1.5, 3.5, np.inf])
    assert bool(bm.is_exact[0])
    assert_array_equal(to_numpy(bm.bin_values)[0], [1.0, 2.0, 5.0])
    assert_array_equal(_codes(xp, bm, Xd)[:, 0], [0, 1, 1, 2])


def test_exact_thresholds_several_features(backend):
    """Each feature gets its own midpoints; shorter features are padded with +inf."""
    _, _, conv = backend
    X = np.array(
        [
            [0.0, -3.0, 10.0],
            [1.0, -1.0, 10.0],
            [0.0, 4.0, 10.0],
            [1.0, 0.5, 10.0],
        ]
    )
    xp, Xd, bm = _fit(conv, X)
    thr = to_numpy(bm.thresholds)
    assert bm.n_value_bins.tolist() == [2, 4, 1]
    assert bm.n_bins == 5
    assert_array_equal(thr[0], [0.5, np.inf, np.inf, np.inf])
    assert_array_equal(thr[1], [-2.0, -0.25, 2.25, np.inf])
    assert_array_equal(thr[2], [np.inf] * 4)
    assert_array_equal(
        _codes(xp, bm, Xd),
        [[0, 0, 0], [1, 1, 0], [0, 3, 0], [1, 2, 0]],
    )


def test_exact_midpoint_of_adjacent_floats(backend):
    """Where a/2 + b/2 rounds onto b, the threshold is a (so that b still goes right)."""
    _, _, conv = backend
    a = 1.0
    b = np.nextafter(a, 2.0)
    xp, Xd, bm = _fit(conv, [a, b, a, b])
    thr = to_numpy(bm.thresholds)[0, 0]
    assert a <= thr < b
    assert_array_equal(_codes(xp, bm, Xd)[:, 0], [0, 1, 0, 1])


# ---------------------------------------------------------------------------
# the code <-> threshold contract
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("max_bins", [2, 7, 32, 255])
def test_codes_agree_with_thresholds(backend, max_bins):
    """code <= b  iff  x <= thresholds[f, b], for every value bin b (random data)."""
    _, _, conv = backend
    rng = np.random.default_rng(0)
    n = 2000
    X = np.column_stack(
        [
            rng.standard_normal(n),  # continuous: quantile bins
            np.round(rng.standard_normal(n), 1),  # many ties
            rng.integers(0, 5, n).astype(np.float64),  # few distinct values: exact
            rng.exponential(size=n) ** 3,  # skewed
        ]
    )
    X[rng.random(X.shape) < 0.05] = np.nan
    xp, Xd, bm = _fit(conv, X, max_bins=max_bins)
    codes = _codes(xp, bm, Xd).astype(np.int64)
    thr = to_numpy(bm.thresholds)
    assert np.all(bm.n_value_bins <= max_bins)
    for f in range(X.shape[1]):
        x = X[:, f]
        nan = np.isnan(x)
        assert np.all(codes[nan, f] == bm.missing_bin)
        assert np.all(codes[~nan, f] < bm.n_value_bins[f])
        # thresholds are strictly increasing over the value bins
        nvb = int(bm.n_value_bins[f])
        assert np.all(np.diff(thr[f, : nvb - 1]) > 0)
        assert np.all(np.isinf(thr[f, nvb - 1 :]))
        for b in range(nvb):
            assert_array_equal(codes[~nan, f] <= b, x[~nan] <= thr[f, b])


def test_transform_new_data_agrees_with_thresholds(backend):
    """The contract also holds for data not seen at fit (values between and beyond edges)."""
    _, _, conv = backend
    rng = np.random.default_rng(1)
    X = rng.standard_normal((500, 2))
    X[:, 1] = np.round(X[:, 1])  # exact feature
    xp, _, bm = _fit(conv, X, max_bins=16)
    Xnew = np.concatenate([rng.standard_normal((300, 2)) * 3, [[-1e300, 1e300], [np.inf, -np.inf]]])
    codes = to_numpy(bm.transform(xp, conv(Xnew))).astype(np.int64)
    thr = to_numpy(bm.thresholds)
    for f in range(2):
        for b in range(int(bm.n_value_bins[f])):
            assert_array_equal(codes[:, f] <= b, Xnew[:, f] <= thr[f, b])


# ---------------------------------------------------------------------------
# missing values, degenerate columns
# ---------------------------------------------------------------------------


def test_nan_goes_to_missing_bin(backend):
    _, _, conv = backend
    X = np.array(
        [
            [1.0, np.nan],
            [np.nan, 2.0],
            [3.0, 2.0],
            [1.0, 5.0],
            [np.nan, np.nan],
        ]
    )
    xp, Xd, bm = _fit(conv, X)
    assert bm.n_value_bins.tolist() == [2, 2]
    assert bm.n_bins == 3
    assert bm.missing_bin == 2
    assert_array_equal(_codes(xp, bm, Xd), [[0, 2], [2, 0], [1, 0], [0, 1], [2, 2]])
    # NaN at transform time
    codes = to_numpy(bm.transform(xp, conv(np.array([[np.nan, np.nan]]))))
    assert_array_equal(codes, [[2, 2]])


def test_missing_bin_shared_by_all_features(backend):
    """The missing bin is n_bins - 1 for every feature, also those with few value bins."""
    _, _, conv = backend
    X = np.column_stack([np.arange(10.0), np.r_[np.zeros(9), np.nan]])
    xp, Xd, bm = _fit(conv, X)
    assert bm.n_value_bins.tolist() == [10, 1]
    assert bm.n_bins == 11
    codes = _codes(xp, bm, Xd)
    assert_array_equal(codes[:, 0], np.arange(10))
    assert_array_equal(codes[:, 1], [0] * 9 + [10])


def test_all_nan_column(backend):
    _, _, conv = backend
    X = np.column_stack([np.full(6, np.nan), [0.0, 1.0, 2.0, 0.0, 1.0, 2.0]])
    xp, Xd, bm = _fit(conv, X)
    assert bm.n_value_bins.tolist() == [1, 3]
    assert bm.n_bins == 4
    assert np.all(np.isinf(to_numpy(bm.thresholds)[0]))
    codes = _codes(xp, bm, Xd)
    assert_array_equal(codes[:, 0], [3] * 6)
    assert_array_equal(codes[:, 1], [0, 1, 2, 0, 1, 2])
    # any value at transform time lands in the single value bin
    codes = to_numpy(bm.transform(xp, conv(np.array([[-5.0, 0.0], [7.0, 0.0]]))))
    assert_array_equal(codes[:, 0], [0, 0])


def test_all_nan_single_column(backend):
    _, _, conv = backend
    xp, Xd, bm = _fit(conv, np.full(4, np.nan))
    assert bm.n_value_bins.tolist() == [1]
    assert bm.n_bins == 2
    assert_array_equal(_codes(xp, bm, Xd)[:, 0], [1, 1, 1, 1])


def test_all_nan_categorical_column(backend):
    _, _, conv = backend
    X = np.column_stack([np.full(4, np.nan), [0.0, 1.0, 0.0, 1.0]])
    xp, Xd, bm = _fit(conv, X, is_cat=[True, False])
    assert bm.n_value_bins.tolist() == [1, 2]
    assert bm.category_values[0].shape[0] == 0
    codes = _codes(xp, bm, Xd)
    assert_array_equal(codes[:, 0], [bm.missing_bin] * 4)
    codes = to_numpy(bm.transform(xp, conv(np.array([[3.0, 0.0]]))))
    assert_array_equal(codes[:, 0], [bm.missing_bin])


def test_constant_column(backend):
    _, _, conv = backend
    X = np.column_stack([np.full(5, 3.25), [1.0, 2.0, 3.0, 4.0, np.nan]])
    xp, Xd, bm = _fit(conv, X)
    assert bm.n_value_bins.tolist() == [1, 4]
    assert np.all(np.isinf(to_numpy(bm.thresholds)[0]))
    assert_array_equal(to_numpy(bm.bin_values)[0, :1], [3.25])
    codes = _codes(xp, bm, Xd)
    assert_array_equal(codes[:, 0], [0] * 5)
    assert_array_equal(codes[:, 1], [0, 1, 2, 3, bm.missing_bin])


def test_constant_column_with_nan(backend):
    _, _, conv = backend
    xp, Xd, bm = _fit(conv, [2.0, np.nan, 2.0])
    assert bm.n_value_bins.tolist() == [1]
    assert bm.n_bins == 2
    assert_array_equal(_codes(xp, bm, Xd)[:, 0], [0, 1, 0])


# ---------------------------------------------------------------------------
# code dtype
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n_distinct, max_bins, n_bins, dtype",
    [
        (2, 255, 3, "uint8"),
        (255, 255, 256, "uint8"),  # the default: missing bin 255 still fits in uint8
        (256, 300, 257, "uint16"),
        (300, 300, 301, "uint16"),
        (1000, 300, None, "uint16"),  # quantile binning with more than 255 bins
    ],
)
def test_code_dtype(backend, n_distinct, max_bins, n_bins, dtype):
    name, mod, conv = backend
    x = np.arange(n_distinct, dtype=np.float64)
    xp, Xd, bm = _fit(conv, np.r_[x, np.nan], max_bins=max_bins)
    if n_bins is not None:
        assert bm.n_bins == n_bins
    assert bm.code_dtype_name == dtype
    codes = bm.transform(xp, Xd)
    assert codes.dtype == getattr(xp, dtype)
    host = to_numpy(codes)
    assert host.dtype == np.dtype(dtype)
    assert int(host[-1, 0]) == bm.missing_bin
    assert int(host[:-1, 0].max()) == bm.n_value_bins[0] - 1
    if n_distinct <= max_bins:
        assert_array_equal(host[:-1, 0], np.arange(n_distinct))


# ---------------------------------------------------------------------------
# quantile binning
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("max_bins", [2, 5, 10, 64])
def test_quantile_bins_roughly_equal_counts(backend, max_bins):
    _, _, conv = backend
    rng = np.random.default_rng(3)
    n = 20_000
    x = rng.standard_normal(n)
    xp, Xd, bm = _fit(conv, x, max_bins=max_bins)
    assert not bool(bm.is_exact[0])
    nvb = int(bm.n_value_bins[0])
    assert nvb <= max_bins
    # continuous data: no quantile collapses, every value bin is used
    assert nvb == max_bins
    counts = np.bincount(_codes(xp, bm, Xd)[:, 0].astype(np.int64), minlength=bm.n_bins)
    assert counts[bm.missing_bin] == 0
    expected = n / max_bins
    assert np.all(np.abs(counts[:nvb] - expected) <= 0.02 * expected + 2), counts


def test_quantile_bins_at_most_max_bins_with_heavy_ties(backend):
    """A value repeated over many quantiles collapses edges: fewer, never more, than max_bins."""
    _, _, conv = backend
    rng = np.random.default_rng(4)
    x = np.r_[np.zeros(5000), rng.standard_normal(5000)]
    xp, Xd, bm = _fit(conv, x, max_bins=20)
    nvb = int(bm.n_value_bins[0])
    assert nvb < 20
    codes = _codes(xp, bm, Xd)[:, 0].astype(np.int64)
    counts = np.bincount(codes, minlength=nvb)
    assert np.all(counts[:nvb] > 0)  # no empty value bin
    assert codes.max() == nvb - 1


def test_quantile_edges_below_max(backend):
    """The largest value is never an edge, so the last value bin is not empty."""
    _, _, conv = backend
    x = np.r_[np.arange(100.0), np.full(100, 1000.0)]
    xp, Xd, bm = _fit(conv, x, max_bins=10)
    thr = to_numpy(bm.thresholds)[0, : int(bm.n_value_bins[0]) - 1]
    assert np.all(thr < 1000.0)
    codes = _codes(xp, bm, Xd)[:, 0]
    assert np.all(codes[100:] == bm.n_value_bins[0] - 1)


# ---------------------------------------------------------------------------
# categorical features
# ---------------------------------------------------------------------------


def test_categorical_codes_are_ranks(backend):
    _, _, conv = backend
    X = np.column_stack(
        [
            [10.0, 3.0, 7.0, 3.0, np.nan, 10.0],
            [0.5, 0.25, 0.125, 0.5, 0.25, 0.125],  # numerical feature next to it
        ]
    )
    xp, Xd, bm = _fit(conv, X, is_cat=[True, False])
    assert_array_equal(to_numpy(bm.category_values[0]), [3.0, 7.0, 10.0])
    assert bm.category_values[1] is None
    assert bm.n_value_bins.tolist() == [3, 3]
    assert bm.is_categorical.tolist() == [True, False]
    codes = _codes(xp, bm, Xd)
    assert_array_equal(codes[:, 0], [2, 0, 1, 0, bm.missing_bin, 2])
    assert_array_equal(codes[:, 1], [2, 1, 0, 2, 1, 0])


def test_categorical_unseen_categories_go_to_missing_bin(backend):
    _, _, conv = backend
    xp, _, bm = _fit(conv, [4.0, 1.0, 9.0, 1.0], is_cat=[True])
    Xnew = np.array([[1.0], [0.0], [4.0], [5.0], [9.0], [100.0], [-1.0], [np.nan], [4.5]])
    codes = to_numpy(bm.transform(xp, conv(Xnew)))[:, 0]
    m = bm.missing_bin
    assert_array_equal(codes, [0, m, 1, m, 2, m, m, m, m])


def test_categorical_encode_for_predict(backend):
    _, _, conv = backend
    X = np.column_stack([[5.0, 2.0, 5.0], [1.5, 2.5, 3.5]])
    xp, Xd, bm = _fit(conv, X, is_cat=[True, False])
    enc = to_numpy(bm.encode_for_predict(xp, conv(np.array([[2.0, 9.0], [5.0, -1.0], [3.0, 0.0]]))))
    assert_array_equal(enc, [[0.0, 9.0], [1.0, -1.0], [float(bm.missing_bin), 0.0]])


def test_categorical_max_bins_categories_ok(backend):
    _, _, conv = backend
    x = np.arange(8.0)[::-1]
    xp, Xd, bm = _fit(conv, x, is_cat=[True], max_bins=8)
    assert bm.n_value_bins.tolist() == [8]
    assert_array_equal(_codes(xp, bm, Xd)[:, 0], np.arange(8)[::-1])


def test_categorical_more_categories_than_max_bins(backend):
    _, _, conv = backend
    X = conv(np.arange(9.0)[:, None])
    xp = namespace_of(X)
    with pytest.raises(ValueError, match="categories"):
        fit_bin_mapper(xp, X, np.array([True]), 8)
    # the same column as a numerical feature is fine (quantile bins)
    bm = fit_bin_mapper(xp, X, np.array([False]), 8)
    assert int(bm.n_value_bins[0]) <= 8


# ---------------------------------------------------------------------------
# max_bins validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("max_bins", [-1, 0, 1, MAX_BINS_LIMIT + 1, 100_000])
def test_max_bins_out_of_range(backend, max_bins):
    _, _, conv = backend
    X = conv(np.arange(4.0)[:, None])
    xp = namespace_of(X)
    with pytest.raises(ValueError, match="max_bins"):
        fit_bin_mapper(xp, X, np.array([False]), max_bins)


@pytest.mark.parametrize("max_bins", [2, MAX_BINS_LIMIT])
def test_max_bins_limits_accepted(backend, max_bins):
    _, _, conv = backend
    xp, Xd, bm = _fit(conv, [0.0, 1.0, 2.0, np.nan], max_bins=max_bins)
    assert int(bm.n_value_bins[0]) <= max_bins
    codes = _codes(xp, bm, Xd)[:, 0]
    assert codes[-1] == bm.missing_bin


# ---------------------------------------------------------------------------
# subsampling of large inputs
# ---------------------------------------------------------------------------

N_SUB = 50


def _subsample_rows(n):
    """The rows the binning sample draws (same generator and seed as gputrees)."""
    rng = np.random.default_rng(_binning.BIN_SUBSAMPLE_SEED)
    return np.sort(rng.choice(n, N_SUB, replace=False))


@pytest.fixture
def small_subsample(monkeypatch):
    monkeypatch.setattr(_binning, "BIN_SUBSAMPLE", N_SUB)
    return N_SUB


def test_subsample_rare_value_still_exact(backend, small_subsample):
    """A low-cardinality feature whose rare value the sample misses still gets exact bins."""
    _, _, conv = backend
    n = 1000
    sampled = _subsample_rows(n)
    unsampled = np.setdiff1d(np.arange(n), sampled)
    rare_row, rare_nan_row = int(unsampled[0]), int(unsampled[1])
    rng = np.random.default_rng(5)
    x = rng.integers(0, 3, n).astype(np.float64)  # values 0, 1, 2
    x[rare_row] = 7.0  # seen by no sampled row
    x[rare_nan_row] = np.nan
    cat = x.copy()  # same column as a categorical feature
    cont = rng.standard_normal(n)  # a continuous feature next to it
    X = np.column_stack([x, cat, cont])
    assert 7.0 not in x[sampled]
    xp, Xd, bm = _fit(conv, X, is_cat=[False, True, False], max_bins=16)
    # numerical: one bin per value, the rare one included
    assert bool(bm.is_exact[0])
    assert bm.n_value_bins[0] == 4
    assert_array_equal(to_numpy(bm.thresholds)[0, :4], [0.5, 1.5, 4.5, np.inf])
    # categorical: the rare category has its own code
    assert_array_equal(to_numpy(bm.category_values[1]), [0.0, 1.0, 2.0, 7.0])
    codes = _codes(xp, bm, Xd)
    expected = np.where(np.isnan(x), bm.missing_bin, np.searchsorted([0.0, 1.0, 2.0, 7.0], x))
    assert_array_equal(codes[:, 0], expected)
    assert_array_equal(codes[:, 1], expected)
    assert codes[rare_row, 0] == 3 and codes[rare_row, 1] == 3
    # continuous feature: quantile bins from the sample, contract still holds on all rows
    assert not bool(bm.is_exact[2])
    assert int(bm.n_value_bins[2]) <= 16
    thr = to_numpy(bm.thresholds)
    for b in range(int(bm.n_value_bins[2])):
        assert_array_equal(codes[:, 2] <= b, cont <= thr[2, b])


def test_subsample_checked_by_numba_kernels_gives_the_same_edges(small_subsample):
    """The kernels' ``covered_values`` (Numba) in place of the reference: the same mapper, a feature whose
    rare values the sample misses included (NumPy only)."""
    pytest.importorskip("numba")
    from gputrees.kernels import get_kernels

    n = 1000
    rng = np.random.default_rng(9)
    unsampled = np.setdiff1d(np.arange(n), _subsample_rows(n))
    X = np.column_stack([
        rng.integers(0, 3, n).astype(np.float64),  # the sample sees every value
        rng.integers(0, 3, n).astype(np.float64),  # and a rare one it misses
        rng.standard_normal(n),  # quantile bins
        rng.integers(0, 4, n).astype(np.float64),  # categorical, a rare category
    ])
    X[unsampled[:2], 1] = [7.0, 9.5]
    X[unsampled[2], 3] = 11.0
    X[rng.random(X.shape) < 0.05] = np.nan
    is_cat = np.array([False, False, False, True])
    want = fit_bin_mapper(NP_XP, X, is_cat, 16)
    got = fit_bin_mapper(NP_XP, X, is_cat, 16, get_kernels(NP_XP, "numba", n_jobs=2))
    assert_array_equal(got.thresholds, want.thresholds)
    assert_array_equal(got.n_value_bins, want.n_value_bins)
    assert_array_equal(got.is_exact, want.is_exact)
    assert_array_equal(got.bin_values, want.bin_values)
    assert_array_equal(got.category_values[3], want.category_values[3])
    assert got.n_value_bins.tolist()[:2] == [3, 5] and 11.0 in got.category_values[3]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sampled", [False, True])
def test_numba_sorted_columns_give_the_same_mapper(dtype, sampled, monkeypatch):
    """The kernels' ``sorted_columns`` (Numba's radix sort) in place of NumPy's sorts: the same mapper, with
    and without the row sample, by groups of features or not (NumPy only)."""
    pytest.importorskip("numba")
    from gputrees.kernels import get_kernels

    if sampled:
        monkeypatch.setattr(_binning, "BIN_SUBSAMPLE", N_SUB)
    rng = np.random.default_rng(10)
    n = 1500
    X = np.column_stack([
        rng.standard_normal(n) * 1e3,  # quantile bins
        rng.integers(-3, 3, n).astype(np.float64),  # exact bins
        np.round(rng.standard_normal(n), 2),  # a few hundred values
        rng.exponential(size=n),
        rng.integers(0, 5, n).astype(np.float64),  # categorical
    ]).astype(dtype)
    X[rng.random(X.shape) < 0.05] = np.nan
    is_cat = np.array([False, False, False, False, True])
    kernels = get_kernels(NP_XP, "numba", n_jobs=2)
    for group_bytes in (None, (N_SUB if sampled else n) * 8 * 2):
        if group_bytes is not None:
            monkeypatch.setattr(_binning, "SAMPLE_GATHER_BYTES", group_bytes)
        want = fit_bin_mapper(NP_XP, X, is_cat, 64)
        got = fit_bin_mapper(NP_XP, X, is_cat, 64, kernels)
        assert_array_equal(got.thresholds, want.thresholds)
        assert_array_equal(got.n_value_bins, want.n_value_bins)
        assert_array_equal(got.is_exact, want.is_exact)
        assert_array_equal(got.bin_values, want.bin_values)
        assert_array_equal(got.category_values[4], want.category_values[4])
        assert got.is_exact.tolist() == [False, True, False, False, False]


@pytest.mark.parametrize("group", [1, 2, 3, 5])
def test_subsample_gathered_by_groups_of_features_gives_the_same_edges(backend, small_subsample, monkeypatch, group):
    """The sampled rows gathered a group of features at a time (SAMPLE_GATHER_BYTES): the edges of one gather."""
    _, _, conv = backend
    rng = np.random.default_rng(8)
    X = rng.standard_normal((1000, 5))
    X[:, 1] = rng.integers(0, 3, 1000)  # exact bins, checked against every row
    X[rng.random(1000) < 0.05, 3] = np.nan
    _, _, want = _fit(conv, X, max_bins=16)
    monkeypatch.setattr(_binning, "SAMPLE_GATHER_BYTES", N_SUB * 8 * group)
    _, _, got = _fit(conv, X, max_bins=16)
    assert_array_equal(to_numpy(got.thresholds), to_numpy(want.thresholds))
    assert_array_equal(to_numpy(got.n_value_bins), to_numpy(want.n_value_bins))
    assert_array_equal(to_numpy(got.is_exact), to_numpy(want.is_exact))
    assert not bool(got.is_exact[0]) and bool(got.is_exact[1])


def test_subsample_all_values_seen_exact(backend, small_subsample):
    """When the sample sees every value, binning is exact as on the full data."""
    _, _, conv = backend
    n = 400
    x = np.tile([0.0, 10.0], n // 2)
    xp, Xd, bm = _fit(conv, x)
    assert bm.n_value_bins.tolist() == [2]
    assert_array_equal(to_numpy(bm.thresholds)[0, :1], [5.0])
    assert_array_equal(_codes(xp, bm, Xd)[:, 0], np.tile([0, 1], n // 2))


def test_subsample_does_not_change_small_data(backend, small_subsample):
    """Exactly BIN_SUBSAMPLE rows: no sampling, so quantiles come from every row."""
    _, _, conv = backend
    rng = np.random.default_rng(6)
    x = rng.standard_normal(N_SUB)
    xp, Xd, bm = _fit(conv, x, max_bins=N_SUB)
    assert bool(bm.is_exact[0])
    assert_array_equal(np.sort(_codes(xp, bm, Xd)[:, 0]), np.arange(N_SUB))
