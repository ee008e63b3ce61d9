"""scipy.sparse input: CSR/CSC matrices fitted and predicted without a dense copy of X.

A sparse ``X`` stays a float64 CSR matrix through the fit. The binning
reads each column's stored values and counts its implicit zeros
(:class:`SparseColumns`, one CSC copy): an implicit zero is the value 0, not
a missing value (as XGBoost's and scikit-learn's trees read it); a stored
NaN is missing. The binned matrix is dense uint8/uint16, as for dense input,
and everything after the binning is the dense fit's, so a fit on a CSR
matrix grows the trees of the fit on its dense twin. The binning gives each
column as a :class:`SortedColumn` (its stored values sorted and its zeros'
count, the zeros not written out), and the fit keeps no feature-major copy
of the codes (``Kernels.feature_major(..., copy=False)``: the CPU kernels
read ``codes.T``), so its memory is the CSR's and the codes' and the
histograms'. Prediction: the compiled CPU kernels walk the CSR rows as they
are (a matrix wider than their ``Kernels.csr_columns`` first cut to the
columns the trees test, :func:`tested_columns`); the other kernel sets walk
dense blocks of at most :data:`DENSE_BLOCK_BYTES` of the tested columns' rows
(:func:`dense_blocks`).

The compiled boosting trees and the level-wise grower (trees, AdaBoost's
learners) then build their histograms from the codes that differ from
each feature's default (the zero's, mostly), not from every cell
(:mod:`gputrees.kernels.cpu.sparse_codes`), decided on the codes, so the
dense twin's fit does the same.

Sparse input trains on the CPU (NumPy); categorical features are not
taken from sparse matrices.
"""

from __future__ import annotations

import numpy as np

from . import _backend

__all__ = [
    "DENSE_BLOCK_BYTES", "SortedColumn", "SparseColumns", "as_csr", "check_finite_sparse", "covered_values",
    "dense_blocks", "is_sparse", "sorted_columns", "sparse_codes", "take_rows", "tested_columns",
]

#: Largest dense float64 block of rows made from a sparse matrix at prediction
DENSE_BLOCK_BYTES = 1 << 25


def is_sparse(X) -> bool:
    """Whether ``X`` is a scipy.sparse matrix or array."""
    try:
        import scipy.sparse as sp
    except ImportError:  # pragma: no cover - scipy comes with scikit-learn
        return False
    return sp.issparse(X)


def as_csr(X, xp, categorical_features=None):
    """``X`` as a canonical float64 CSR matrix (sorted indices, no duplicates), or a clear error.

    Parameters
    ----------
    X : scipy.sparse matrix or array of any format
    xp : the fit's namespace (NumPy only)
    categorical_features : parameter value at fit, or None
    """
    if not _backend.is_numpy_namespace(xp):
        raise TypeError("sparse X trains on the CPU (NumPy); for device='cuda' pass a dense CuPy array")
    if categorical_features is not None:
        raise ValueError("categorical_features are not taken from a sparse X: pass a dense X or encode them")
    if len(X.shape) != 2:
        raise ValueError(f"Expected a 2D sparse matrix, got shape {X.shape}")
    if X.dtype.kind == "c":
        raise ValueError("Complex data not supported")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"sparse X has an unsupported dtype {X.dtype}")
    csr = X.tocsr().astype(np.float64, copy=True)
    csr.sum_duplicates()  # also sorts the indices
    return csr


def check_finite_sparse(X) -> None:
    """Reject stored infinities (NaN is a missing value)."""
    if bool(np.any(np.isinf(X.data))):
        raise ValueError("Input X contains infinity; only NaN (missing) is allowed among non-finite values")


def take_rows(X, rows):
    """Rows ``rows`` (host int array) of a CSR matrix, as a CSR matrix."""
    return X[np.asarray(rows, dtype=np.int64)]


def dense_blocks(X):
    """Yield ``(start, stop, block)``: consecutive rows of a CSR matrix as dense float64 blocks."""
    n, n_features = X.shape
    step = max(1, DENSE_BLOCK_BYTES // (8 * max(1, n_features)))
    for start in range(0, n, step):
        stop = min(n, start + step)
        yield start, stop, X[start:stop].toarray()


def tested_columns(X, feature):
    """A CSR matrix cut to the columns that trees test, and the trees' features numbered in the cut.

    ``feature``: a batch's split features (negative at leaves and padding,
    kept). A walk reads only those columns, so its dense blocks of rows need
    no others: a few trees of a wide matrix test a few of its columns, and
    the blocks then hold many more rows (one column at least, so that a
    batch of leaves still walks a matrix).

    Returns
    -------
    X_cut : CSR matrix (n_samples, n_tested)
    feature_cut : ndarray, ``feature``'s shape, int64
    """
    feature = np.asarray(feature, dtype=np.int64)
    tested = np.unique(feature[feature >= 0])
    if tested.shape[0] == 0:
        tested = np.zeros(1, dtype=np.int64)
    position = np.zeros(X.shape[1], dtype=np.int64)
    position[tested] = np.arange(tested.shape[0], dtype=np.int64)
    return X.tocsr()[:, tested], np.where(feature >= 0, position[np.maximum(feature, 0)], feature)


class SparseColumns:
    """The columns of a sparse matrix for the binning: its CSC copy (made once) and the row count.

    Attributes
    ----------
    shape : tuple of int
    """

    def __init__(self, X):
        csc = X.tocsc()
        csc.sort_indices()
        self.shape = X.shape
        self._indptr, self._indices, self._data = csc.indptr, csc.indices, csc.data
        #: sorted and without duplicate cells: each stored value is its cell's
        self.canonical = bool(csc.has_canonical_format)

    def column(self, j: int, row_mask=None):
        """Stored values of column ``j`` (of the rows in ``row_mask``) and its implicit zeros' count."""
        a, b = int(self._indptr[j]), int(self._indptr[j + 1])
        values = self._data[a:b]
        if row_mask is None:
            return values, int(self.shape[0]) - values.shape[0]
        values = values[row_mask[self._indices[a:b]]]
        return values, int(np.count_nonzero(row_mask)) - values.shape[0]


class SortedColumn:
    """A sparse column's sorted non-missing values, implicit zeros included, without writing the zeros out.

    What :func:`sorted_columns` gives the binning for a column of a sparse
    matrix: ``values`` (its stored non-NaN values, ascending) and ``zeros``
    (its implicit zeros' count) stand for the ascending array with the
    zeros placed among the stored values, the zeros' run starting with an
    implicit (positive) zero. The binning reads it through ``shape``,
    :meth:`distinct`, :meth:`take` and an integer index: a column of a
    million rows with a thousand stored values costs its thousand values,
    not a million.
    """

    def __init__(self, values, zeros: int):
        self.values, self.zeros = values, int(zeros)
        # values below zero: those before the zeros' run
        self._at = int(np.searchsorted(values, 0.0, side="left"))
        self.shape = (values.shape[0] + self.zeros,)

    def distinct(self):
        """The distinct values, ascending (float64; the zeros' first: +0.0)."""
        v = self.values
        d = v[np.concatenate([np.ones(min(1, v.shape[0]), dtype=bool), v[1:] != v[:-1]])]
        if self.zeros:
            at = int(np.searchsorted(d, 0.0, side="left"))
            if at < d.shape[0] and d[at] == 0.0:
                d[at] = 0.0  # (a stored -0.0 follows an implicit +0.0)
            else:
                d = np.concatenate([d[:at], np.zeros(1), d[at:]])
        return d

    def take(self, idx):
        """The values at positions ``idx`` (int array) of the array it stands for."""
        idx = np.asarray(idx, dtype=np.int64)
        out = np.zeros(idx.shape, dtype=np.float64)
        below = idx < self._at
        out[below] = self.values[idx[below]]
        above = idx >= self._at + self.zeros
        out[above] = self.values[idx[above] - self.zeros]
        return out

    def __getitem__(self, i: int):
        i = int(i)
        return float(self.take(np.array([i if i >= 0 else self.shape[0] + i]))[0])


def sorted_columns(xp, cols: SparseColumns, f0: int, f1: int, rows=None):
    """:func:`gputrees.kernels.reference.sorted_columns` of a sparse matrix: each column's non-NaN values of
    ``rows`` (all when None), implicit zeros included, ascending, as a :class:`SortedColumn` each."""
    mask = None
    if rows is not None:
        mask = np.zeros(cols.shape[0], dtype=bool)
        mask[_backend.to_numpy(rows)] = True
    out = []
    for j in range(f0, f1):
        values, zeros = cols.column(j, mask)
        out.append(SortedColumn(np.sort(values[~np.isnan(values)]), zeros))
    return out


def covered_values(xp, cols: SparseColumns, features, values):
    """:func:`gputrees.kernels.reference.covered_values` of a sparse matrix: whether every non-missing value of
    each listed column (an implicit zero is the value 0) is among its given values."""
    out = []
    for f, allowed in zip(features, values):
        stored, zeros = cols.column(f)
        stored = stored[~np.isnan(stored)]
        allowed = _backend.to_numpy(allowed)
        ok = bool(np.all(np.isin(stored, allowed))) and (zeros == 0 or bool(np.any(allowed == 0.0)))
        out.append(ok)
    return out


def sparse_codes(X, mapper, stored_codes):
    """Bin codes (n, n_features) of a CSR matrix: each column's zero code, then its stored values' codes.

    ``stored_codes(indptr, data, mapper)`` codes the stored values column by
    column (a kernel set's, :func:`gputrees.kernels.reference.stored_codes`:
    the dense binning's rule); a column's zero code is its code of 0.0.
    Also returns the codes by column where each stored value is its cell's
    (no duplicate cells), else None: ``(indptr, indices, stored, zero_codes)``,
    column ``f``'s rows (increasing) and codes at ``indptr[f]:indptr[f + 1]``
    of ``indices`` / ``stored`` (int64, int64, the codes' dtype), every other
    cell of the column ``zero_codes[f]`` (a kernel set lays the codes out
    from them: ``Kernels.note_sparse_codes``).
    """
    n, n_features = X.shape
    cols = SparseColumns(X)
    zero_codes = stored_codes(np.arange(n_features + 1, dtype=np.int64), np.zeros(n_features), mapper)
    codes = np.empty((n, n_features), dtype=zero_codes.dtype)
    codes[...] = zero_codes[None, :]
    indptr = cols._indptr.astype(np.int64)
    stored = stored_codes(indptr, cols._data, mapper)
    codes[cols._indices, np.repeat(np.arange(n_features), np.diff(indptr))] = stored
    if not cols.canonical:
        return codes, None
    return codes, (indptr, cols._indices.astype(np.int64), stored, zero_codes)
