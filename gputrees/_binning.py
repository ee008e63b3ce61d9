"""Binning: map every feature once per fit to small integer codes.

Layout of the codes
-------------------
Every feature ``f`` gets ``n_value_bins[f]`` value bins, coded ``0 ..
n_value_bins[f] - 1``, ordered like the values. Missing values (NaN, and
categories never seen at fit) get the *missing bin*, the last code
``n_bins - 1``, shared by all features. ``n_bins = max(n_value_bins) + 1``, so
the histogram's bin axis is as short as the data allows. Codes are stored as
uint8 when ``n_bins <= 256`` and uint16 otherwise; ``max_bins`` (the largest
number of *value* bins) ranges from 2 to 65535, so the missing bin always
fits: with the default ``max_bins=255`` the codes are uint8.

Numerical features with at most ``max_bins`` distinct values get one bin per
value, and the threshold between two neighbouring bins is the midpoint of the
two values (computed as ``a / 2 + b / 2``, as scikit-learn does), so the split
search is exact. Other features get quantile bins. A value ``x`` has code
``b`` iff ``thresholds[f, b - 1] < x <= thresholds[f, b]``, hence "code <= b"
is the same test as "x <= thresholds[f, b]".

Categorical features are coded by the rank of the category among the
categories seen at fit (at most ``max_bins`` of them).

The edges are computed with array-API operations on the device of the data
(one sort per feature: this runs once per fit, and the loop is over features,
not rows).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from . import _sparse
from ._backend import from_numpy, to_numpy
from .kernels.rules import midpoint
from .kernels import reference

MAX_BINS_LIMIT = 65535
#: Rows sampled to place quantile edges on large data (as LightGBM and
#: scikit-learn's HistGradientBoosting do); exact (distinct-value) binning is
#: still checked against every row.
BIN_SUBSAMPLE = 200_000
#: Seed of that sample: fixed, so binning never depends on random_state.
BIN_SUBSAMPLE_SEED = 0
#: Most bytes of sampled rows gathered at once (a group of features' values
#: at the sampled rows, :func:`fit_bin_mapper`)
SAMPLE_GATHER_BYTES = 1 << 26


@dataclass(frozen=True)
class BinMapper:
    """Fitted bin edges.

    Attributes
    ----------
    thresholds : array of shape (n_features, n_bins - 1), float64, on the device
        ``thresholds[f, b]`` is the split value that sends codes ``<= b`` left.
        ``+inf`` from ``b = n_value_bins[f] - 1`` on (the split "all values
        left, missing right").
    category_values : list of (array of shape (n_categories_f,), float64) or None
        The numeric values (pandas codes, or user values) of each categorical
        feature, sorted; the code of a category is its position here.
    n_value_bins : ndarray of shape (n_features,), int64 (host)
    is_categorical : ndarray of shape (n_features,), bool (host)
    n_bins : int
        Length of the bin axis, the missing bin included.
    bin_values : array of shape (n_features, n_bins - 1), float64, on the device
        For *exact* numerical features (one bin per distinct value), the value
        of each bin; NaN elsewhere. Split thresholds are the midpoints of the
        values present in the node, as scikit-learn's.
    is_exact : ndarray of shape (n_features,), bool (host)
    """

    thresholds: object
    category_values: list
    n_value_bins: np.ndarray
    is_categorical: np.ndarray
    n_bins: int
    bin_values: object = None
    is_exact: np.ndarray = None

    @property
    def missing_bin(self) -> int:
        return self.n_bins - 1

    @property
    def code_dtype_name(self) -> str:
        return "uint8" if self.n_bins <= 256 else "uint16"

    def transform(self, xp, X, kernels=None):
        """Codes of ``X``.

        Parameters
        ----------
        X : array of shape (n_samples, n_features), float64, in namespace ``xp``
        kernels : Kernels or None
            The fit's kernel set, whose ``bin_codes`` makes them (the Numba
            set's compiled pass; ``stored_codes`` a sparse X's stored values'),
            None: the array-API reference
            (:func:`gputrees.kernels.reference.bin_codes`). Same codes.

        Returns
        -------
        codes : array of shape (n_samples, n_features), uint8 or uint16
        """
        ks = reference if kernels is None else kernels
        if _sparse.is_sparse(X):
            codes, columns = _sparse.sparse_codes(X, self, ks.stored_codes)
            if columns is not None:
                ks.note_sparse_codes(codes, int(self.n_bins), columns)
            return codes
        return ks.bin_codes(xp, X, self)

    def encode_for_predict(self, xp, X):
        """``X`` with categorical columns replaced by their codes (as float64).

        Numerical columns stay raw (prediction compares them with the
        thresholds); unseen categories and NaN get the missing bin.
        """
        if not self.is_categorical.any():
            return X  # (a sparse X too: it has no categorical features)
        X = xp.astype(X, xp.float64, copy=False)
        cols = [
            xp.astype(reference.column_codes(xp, X[:, f], self, f), xp.float64) if self.is_categorical[f] else X[:, f]
            for f in range(X.shape[1])
        ]
        return xp.stack(cols, axis=1)

    def to_host(self) -> dict:
        """Plain NumPy copy of the edges (for export and inspection)."""
        return {
            "thresholds": to_numpy(self.thresholds),
            "category_values": [None if c is None else to_numpy(c) for c in self.category_values],
            "n_value_bins": self.n_value_bins.copy(),
            "is_categorical": self.is_categorical.copy(),
            "n_bins": self.n_bins,
        }

    def to_namespace(self, xp) -> "BinMapper":
        """The same edges, moved to namespace ``xp``."""
        return BinMapper(
            thresholds=from_numpy(xp, to_numpy(self.thresholds)),
            category_values=[
                None if c is None else from_numpy(xp, to_numpy(c)) for c in self.category_values
            ],
            n_value_bins=self.n_value_bins,
            is_categorical=self.is_categorical,
            n_bins=self.n_bins,
            bin_values=from_numpy(xp, to_numpy(self.bin_values)),
            is_exact=self.is_exact,
        )


def _midpoints(xp, u):
    """Midpoints ``u[i] / 2 + u[i + 1] / 2``, or ``u[i]`` where rounding hits ``u[i+1]``."""
    lo, hi = u[:-1], u[1:]
    mid = midpoint(lo, hi)
    return xp.where(mid == hi, lo, mid)


def _distinct(xp, s):
    """The distinct values of ``s`` (sorted, float64, no NaN, or a sparse column's
    :class:`~gputrees._sparse.SortedColumn`), in order."""
    if isinstance(s, _sparse.SortedColumn):
        return s.distinct()
    if s.shape[0] == 0:
        return s
    is_new = xp.concat([xp.ones(1, dtype=xp.bool), s[1:] != s[:-1]])
    return s[is_new]


def fit_bin_mapper(xp, X, is_categorical: np.ndarray, max_bins: int, kernels=None) -> BinMapper:
    """Compute bin edges of every feature of ``X``.

    Parameters
    ----------
    X : array of shape (n_samples, n_features), float64 or float32, in namespace ``xp``, or a CSR matrix
        NaN marks missing values. Categorical columns hold category values.
        A sparse matrix's columns are read as their stored values and
        implicit zeros (:mod:`gputrees._sparse`), giving its dense twin's edges.
    is_categorical : ndarray of shape (n_features,), bool
    max_bins : int
        Largest number of value bins per feature, 2 .. 65535.
    kernels : Kernels or None
        Its ``sorted_columns``, when set, sorts the features' values
        (:func:`gputrees.kernels.reference.sorted_columns` otherwise), and its
        ``covered_values`` checks the sampled features' values against every
        row (:func:`gputrees.kernels.reference.covered_values` otherwise).

    Returns
    -------
    BinMapper
    """
    if not 2 <= max_bins <= MAX_BINS_LIMIT:
        raise ValueError(f"max_bins must be in [2, {MAX_BINS_LIMIT}], got {max_bins}")
    covered_values = (reference if kernels is None else kernels).covered_values
    sorted_columns = (reference if kernels is None else kernels).sorted_columns
    if _sparse.is_sparse(X):
        X = _sparse.SparseColumns(X)
        covered_values, sorted_columns = _sparse.covered_values, _sparse.sorted_columns
    n_features = X.shape[1]
    n_samples = X.shape[0]
    sample = None
    if n_samples > BIN_SUBSAMPLE:
        idx = np.random.default_rng(BIN_SUBSAMPLE_SEED).choice(n_samples, BIN_SUBSAMPLE, replace=False)
        # the drawn rows in increasing order: marked and listed (one pass,
        # cheaper than sorting the draws)
        drawn = np.zeros(n_samples, dtype=np.bool_)
        drawn[idx] = True
        sample = from_numpy(xp, np.flatnonzero(drawn).astype(np.int64))
    features = []
    # features whose sample showed at most max_bins distinct values: those values, by feature
    pending = {}
    # the (sampled) rows read once a group of features (a column's values
    # gathered one by one lie a row apart), in groups of at most
    # SAMPLE_GATHER_BYTES of float64 values
    n_read = n_samples if sample is None else BIN_SUBSAMPLE
    group = max(1, SAMPLE_GATHER_BYTES // (max(1, n_read) * 8))
    for f0 in range(0, n_features, group):
        f1 = min(f0 + group, n_features)
        for f, s in zip(range(f0, f1), sorted_columns(xp, X, f0, f1, sample)):
            distinct = _distinct(xp, s)
            if sample is not None and distinct.shape[0] <= max_bins:
                # few distinct values in the sample: exact only if the sample saw
                # them all; checked against every row below, for all such features at once
                pending[f] = distinct
                features.append(None)
                continue
            features.append(_feature_bins(xp, f, s, distinct, bool(is_categorical[f]), max_bins))
    if pending:
        seen = covered_values(xp, X, list(pending), list(pending.values()))
        for (f, distinct), ok in zip(pending.items(), seen):
            # (a feature's bins with at most max_bins distinct values read only those values)
            if ok:
                s = distinct
            else:
                s = sorted_columns(xp, X, f, f + 1)[0]
                distinct = _distinct(xp, s)
            features[f] = _feature_bins(xp, f, s, distinct, bool(is_categorical[f]), max_bins)
    return _assemble(xp, features, is_categorical)


def bin_mapper_from_summaries(xp, distinct, sample, is_categorical, max_bins: int) -> BinMapper:
    """Bin edges from per-feature summaries (data spread over several machines).

    Parameters
    ----------
    distinct : list of (array of shape (k_f,), float64, sorted) or None
        Every distinct non-missing value of feature ``f`` over all the data,
        when there are at most ``max_bins`` of them (then the feature is binned
        exactly, as :func:`fit_bin_mapper` would); None when there are more.
    sample : array of shape (n_sample, n_features), float64
        Rows sampled uniformly from all the data; quantile edges of the
        features with ``distinct[f]`` None are placed on it.
    is_categorical : ndarray of shape (n_features,), bool
    max_bins : int

    Returns
    -------
    BinMapper
        The same edges as :func:`fit_bin_mapper` on the whole data for every
        exactly binned feature; quantile edges of the sample otherwise.
    """
    if not 2 <= max_bins <= MAX_BINS_LIMIT:
        raise ValueError(f"max_bins must be in [2, {MAX_BINS_LIMIT}], got {max_bins}")
    features = []
    for f, d in enumerate(distinct):
        if d is not None:
            features.append(_feature_bins(xp, f, d, d, bool(is_categorical[f]), max_bins))
            continue
        if is_categorical[f]:
            raise ValueError(f"categorical feature {f} has more than max_bins={max_bins} categories")
        s = reference.sorted_columns(xp, sample, f, f + 1)[0]
        features.append(_feature_bins(xp, f, s, None, False, max_bins))
    return _assemble(xp, features, is_categorical)


def _feature_bins(xp, f, s, distinct, is_categorical: bool, max_bins: int):
    """Edges of feature ``f``: (edges, bin values, exact, category values, n value bins).

    ``s`` holds the feature's sorted non-missing values (or a sample of them;
    a sparse column's :class:`~gputrees._sparse.SortedColumn`),
    ``distinct`` its sorted distinct values, or None to force quantile bins.
    """
    n_valid = s.shape[0]
    n_distinct = max_bins + 1 if distinct is None else int(distinct.shape[0])
    empty = xp.zeros(0, dtype=xp.float64)
    if is_categorical:
        if n_distinct > max_bins:
            raise ValueError(
                f"categorical feature {f} has {n_distinct} categories, more than "
                f"max_bins={max_bins}; raise max_bins or encode it as numerical"
            )
        return empty, empty, False, distinct, max(n_distinct, 1)
    if n_distinct <= max_bins:
        edges = _midpoints(xp, distinct) if n_distinct > 1 else empty
        return edges, distinct, True, None, int(edges.shape[0]) + 1
    if n_valid == 0:
        return empty, empty, False, None, 1
    k = np.arange(1, max_bins, dtype=np.float64)
    pos = k * (n_valid - 1) / max_bins
    lo = from_numpy(xp, np.floor(pos).astype(np.int64))
    hi = from_numpy(xp, np.ceil(pos).astype(np.int64))
    take = s.take if isinstance(s, _sparse.SortedColumn) else functools.partial(xp.take, s)
    cand = midpoint(take(lo), take(hi))
    cand = xp.sort(cand, stable=False)
    keep = xp.concat([xp.ones(1, dtype=xp.bool), cand[1:] != cand[:-1]])
    edges = cand[keep]
    # an edge at (or above) the largest value would leave an empty last bin
    edges = edges[edges < s[-1]]
    return edges, empty, False, None, int(edges.shape[0]) + 1


def _padded_rows(xp, rows, width: int, fill):
    """The 1-D arrays ``rows`` as the rows of a (len(rows), width) float64 array, each padded with ``fill``: one
    concatenation and one gather, not a pad and a concatenation a feature (a sparse X's thousands of columns)."""
    lengths = np.asarray([int(r.shape[0]) for r in rows], dtype=np.int64)
    if lengths.shape[0] == 0:
        return xp.zeros((0, width), dtype=xp.float64)
    start = np.cumsum(lengths) - lengths
    flat = xp.astype(xp.concat(list(rows) + [xp.full((1,), fill, dtype=xp.float64)]), xp.float64, copy=False)
    col = np.arange(width, dtype=np.int64)[None, :]
    # each position's value, or the fill appended last
    idx = np.where(col < lengths[:, None], start[:, None] + col, int(lengths.sum()))
    return xp.reshape(xp.take(flat, from_numpy(xp, idx.reshape(-1))), (lengths.shape[0], width))


def _assemble(xp, features, is_categorical) -> BinMapper:
    """A BinMapper from the per-feature results of :func:`_feature_bins`."""
    n_features = len(features)
    edges_per_feature = [ft[0] for ft in features]
    values_per_feature = [ft[1] for ft in features]
    is_exact = np.asarray([ft[2] for ft in features], dtype=bool)
    category_values = [ft[3] for ft in features]
    n_value_bins = np.asarray([ft[4] for ft in features], dtype=np.int64)
    n_bins = int(n_value_bins.max()) + 1 if n_features else 2
    width = n_bins - 1
    thresholds = _padded_rows(xp, edges_per_feature, width, xp.inf)
    bin_values = _padded_rows(xp, values_per_feature, width, xp.nan)
    return BinMapper(
        thresholds=thresholds,
        category_values=category_values,
        n_value_bins=n_value_bins,
        is_categorical=np.asarray(is_categorical, dtype=bool).copy(),
        n_bins=n_bins,
        bin_values=bin_values,
        is_exact=is_exact,
    )
