"""Binning kernels: the binned matrix of raw values, the check of a sample's distinct values, the sorted columns
the bin edges are placed on, and the binned matrix laid out feature-major.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from .. import reference
from .jit import JIT, Threads, threads_for
from .memory import float_rows

# -- binning ------------------------------------------------------------------
#: Cells of the per-feature lookup grid of the binning transform: a value's
#: cell (one multiply) gives the few edges its bin lies between, so most values
#: need one or two comparisons instead of the 8 dependent, mispredicted steps of
#: a binary search over 255 edges. 4096 cells x 4 bytes (16 KB) keep a
#: feature's grid in L1; with fewer cells, more of them hold an edge, whose
#: comparison is a mispredicted branch for about half its values.
BIN_GRID_CELLS = 4096
#: Edges up to which a numerical feature's values are binned by counting the
#: edges below them (every edge compared: no branch on the data) instead of
#: through the lookup grid, whose search and check mispredict on values
#: spread over a few bins. Counting costs a comparison an edge, so past about
#: this many edges the grid is cheaper.
BIN_COUNT_EDGES = 64
#: Rows a binning task transforms feature by feature, so that one feature's
#: edges and grid stay in the L1 cache while the block's values are searched.
BIN_BLOCK_ROWS = 256


@numba.njit(inline="always")
def search_range(edges, lo, hi, x):
    """First ``b`` in ``[lo, hi)`` with ``x <= edges[b]``, or ``hi`` (a binary search in a range)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if edges[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(inline="always")
def _grid_search(edges, n, grid, origin, scale, x):
    """``numpy.searchsorted(edges[:n], x)`` for a non-NaN ``x``, through the feature's lookup grid.

    ``grid[c]`` is the number of edges below the left end of cell ``c``
    (``grid[0] = 0``, ``grid[cells] = n``), so the answer for a value in cell
    ``c`` lies in ``[grid[c], grid[c + 1]]``. Rounding may put a value next
    to its cell's border in the neighbouring cell: the result is checked
    against its neighbouring edges, and a full search decides then.
    """
    cells = grid.shape[0] - 1
    c = (x - origin) * scale
    c = min(max(c, 0.0), cells - 1.0)  # -inf/+inf and values outside the edges: the end cells
    k = int(c)
    pos = search_range(edges, grid[k], grid[k + 1], x)
    if (pos > 0 and not edges[pos - 1] < x) or (pos < n and edges[pos] < x):
        pos = search_range(edges, 0, n, x)
    return pos


@numba.njit(inline="always")
def _bin_block(blk, n):
    """Rows ``i0:i1`` of block ``blk`` of :data:`BIN_BLOCK_ROWS` rows (the last one partial) of ``n``."""
    i0 = blk * BIN_BLOCK_ROWS
    return i0, min(n, i0 + BIN_BLOCK_ROWS)


@numba.njit(parallel=True, **JIT)
def _bin_codes(X, thresholds, n_edges, grid, origin, scale, is_cat, cat_values, n_cats, missing_bin, out,
               n_chunks):
    n, n_features = X.shape
    n_blocks = (n + BIN_BLOCK_ROWS - 1) // BIN_BLOCK_ROWS
    for c in prange(n_chunks):
        for blk in range(c * n_blocks // n_chunks, (c + 1) * n_blocks // n_chunks):
            i0, i1 = _bin_block(blk, n)
            for f in range(n_features):
                if is_cat[f]:
                    cv = cat_values[f]
                    nc = n_cats[f]
                    for i in range(i0, i1):
                        x = X[i, f]
                        pos = search_range(cv, 0, nc, x)
                        out[i, f] = pos if x == x and pos < nc and cv[pos] == x else missing_bin
                    continue
                edges = thresholds[f]
                ne = n_edges[f]
                if ne <= BIN_COUNT_EDGES:
                    for i in range(i0, i1):
                        x = X[i, f]
                        pos = 0
                        for j in range(ne):
                            pos += edges[j] < x
                        out[i, f] = pos if x == x else missing_bin
                elif scale[f] > 0:
                    g = grid[f]
                    o = origin[f]
                    sc = scale[f]
                    for i in range(i0, i1):
                        x = X[i, f]
                        out[i, f] = _grid_search(edges, ne, g, o, sc, x) if x == x else missing_bin
                else:
                    for i in range(i0, i1):
                        x = X[i, f]
                        out[i, f] = search_range(edges, 0, ne, x) if x == x else missing_bin


def _bin_grid(thresholds, n_edges):
    """Lookup grids of the numerical features (see :func:`_grid_search`).

    Returns grid (n_features, BIN_GRID_CELLS + 1) int32, origin and scale
    (n_features,) float64; ``scale`` 0 for features searched without a grid
    (fewer than two distinct edges, or a range whose cells would not be finite).
    """
    n_features = thresholds.shape[0]
    grid = np.zeros((n_features, BIN_GRID_CELLS + 1), dtype=np.int32)
    origin = np.zeros(n_features, dtype=np.float64)
    scale = np.zeros(n_features, dtype=np.float64)
    for f in range(n_features):
        ne = int(n_edges[f])
        if ne < 2:
            continue
        edges = thresholds[f, :ne]
        lo, hi = float(edges[0]), float(edges[-1])
        with np.errstate(over="ignore"):
            s = BIN_GRID_CELLS / (hi - lo) if hi > lo else 0.0
        if not (np.isfinite(s) and s > 0 and np.isfinite(hi - lo)):
            continue
        left = lo + np.arange(BIN_GRID_CELLS + 1, dtype=np.float64) / s
        grid[f] = np.searchsorted(edges, left, side="left")
        grid[f, 0], grid[f, BIN_GRID_CELLS] = 0, ne
        origin[f], scale[f] = lo, s
    return grid, origin, scale


def bin_codes(xp, X, mapper, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels.reference.bin_codes`.

    Blocks of rows in parallel, feature by feature inside a block; numerical
    values of a feature of at most :data:`BIN_COUNT_EDGES` edges by counting
    the edges below them, of other features through a per-feature lookup grid
    (one multiply, then a search among the few edges of the value's cell),
    categories by a binary search. float32 input is read as it is (its values compare with the
    float64 edges exactly as their float64 copies would).
    """
    X = float_rows(X)
    n_features = int(X.shape[1])
    is_cat = np.ascontiguousarray(mapper.is_categorical, dtype=np.bool_)
    n_cats = np.zeros(n_features, dtype=np.int64)
    for f in np.flatnonzero(is_cat):
        n_cats[f] = mapper.category_values[f].shape[0]
    cat_values = np.zeros((n_features, max(1, int(n_cats.max(initial=0)))), dtype=np.float64)
    for f in np.flatnonzero(is_cat):
        cat_values[f, : n_cats[f]] = np.asarray(mapper.category_values[f], dtype=np.float64)
    n_edges = np.where(is_cat, 0, np.asarray(mapper.n_value_bins, dtype=np.int64) - 1)
    thresholds = np.ascontiguousarray(mapper.thresholds, dtype=np.float64)
    # grids only where the edges are not counted (the others' would go unread)
    grid, origin, scale = _bin_grid(thresholds, np.where(n_edges > BIN_COUNT_EDGES, n_edges, 0))
    out = np.empty(X.shape, dtype=np.dtype(mapper.code_dtype_name))
    threads = threads_for(n_threads, int(X.shape[0]) * n_features)
    with Threads(threads):
        _bin_codes(
            X, thresholds, n_edges, grid, origin, scale, is_cat, cat_values, n_cats, int(mapper.missing_bin), out,
            threads,
        )
    return out


@numba.njit(parallel=True, **JIT)
def _stored_codes(indptr, data, thresholds, n_edges, missing_bin, out):
    for f in prange(indptr.shape[0] - 1):
        edges = thresholds[f]
        ne = n_edges[f]
        for e in range(indptr[f], indptr[f + 1]):
            x = data[e]
            out[e] = search_range(edges, 0, ne, x) if x == x else missing_bin


def stored_codes(indptr, data, mapper, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels.reference.stored_codes`, in one compiled pass over the columns
    (a binary search among a numerical feature's edges); the reference's for categorical features."""
    if np.any(mapper.is_categorical):
        return reference.stored_codes(indptr, data, mapper)
    n_edges = np.asarray(mapper.n_value_bins, dtype=np.int64) - 1
    out = np.empty(data.shape[0], dtype=np.dtype(mapper.code_dtype_name))
    with Threads(threads_for(n_threads, int(data.shape[0]))):
        _stored_codes(np.asarray(indptr, dtype=np.int64), np.ascontiguousarray(data, dtype=np.float64),
                      np.ascontiguousarray(mapper.thresholds, dtype=np.float64), n_edges, int(mapper.missing_bin),
                      out)
    return out


@numba.njit(parallel=True, **JIT)
def _uncovered(X, features, table, n_values, grid, origin, scale, n_chunks, found):
    """``found[c, j]``: chunk ``c``'s rows hold a non-NaN value of feature ``features[j]`` outside ``table[j]``.

    Blocks of rows in parallel, feature by feature inside a block (as
    :func:`_bin_codes`); a feature a chunk already found is skipped.
    """
    n = X.shape[0]
    n_blocks = (n + BIN_BLOCK_ROWS - 1) // BIN_BLOCK_ROWS
    for c in prange(n_chunks):
        for blk in range(c * n_blocks // n_chunks, (c + 1) * n_blocks // n_chunks):
            i0, i1 = _bin_block(blk, n)
            for j in range(features.shape[0]):
                if found[c, j]:
                    continue
                f = features[j]
                vals = table[j]
                nv = n_values[j]
                g = grid[j]
                o = origin[j]
                sc = scale[j]
                miss = False
                for i in range(i0, i1):
                    x = X[i, f]
                    if x == x:
                        # (the values as edges: the first not below x)
                        pos = _grid_search(vals, nv, g, o, sc, x) if sc > 0 else search_range(vals, 0, nv, x)
                        miss = miss or pos >= nv or vals[pos] != x
                found[c, j] = miss


def covered_values(xp, X, features, values, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels.reference.covered_values`.

    One parallel pass over the rows for all the listed features (the
    reference's ``searchsorted`` reads a column with the row's stride and
    takes 8 mispredicted steps a value); each value is located through the
    lookup grid of its feature's values (:func:`_grid_search`, the values as
    edges) and compared with the value found there.
    """
    k = len(features)
    if k == 0:
        return []
    X = float_rows(X)
    n_values = np.asarray([v.shape[0] for v in values], dtype=np.int64)
    table = np.full((k, max(1, int(n_values.max()))), np.inf)
    for j, v in enumerate(values):
        table[j, : n_values[j]] = np.asarray(v, dtype=np.float64)
    grid, origin, scale = _bin_grid(table, n_values)
    threads = threads_for(n_threads, int(X.shape[0]) * k)
    found = np.zeros((threads, k), dtype=np.bool_)
    with Threads(threads):
        _uncovered(X, np.asarray(features, dtype=np.int64), table, n_values, grid, origin, scale, threads, found)
    return [not bool(a) for a in found.any(axis=0)]


# -- the binning's sorted columns ------------------------------------------------
#: Bits of a digit of :func:`_radix_sort`: 2,048 counts a digit (16 KB, in
#: the first-level cache), six passes for 64-bit keys.
RADIX_BITS = 11
_RADIX_PASSES = (64 + RADIX_BITS - 1) // RADIX_BITS
_SIGN = np.uint64(1) << np.uint64(63)


@numba.njit(inline="always")
def _sortable(b):
    """The float64 bits ``b`` as an unsigned key in the floats' order (negatives reversed below the positives)."""
    return ~b if (b & _SIGN) != np.uint64(0) else b | _SIGN


@numba.njit(inline="always")
def _unsortable(k):
    """:func:`_sortable`'s inverse."""
    return k & ~_SIGN if (k & _SIGN) != np.uint64(0) else ~k


@numba.njit(**JIT)
def _radix_sort(keys, tmp, m):
    """``keys[:m]`` (uint64) sorted ascending, least significant :data:`RADIX_BITS` first; returns the array
    (``keys`` or ``tmp``) that holds them. Every digit's counts come from one pass; a digit all keys share
    (float32 values' low mantissa bits, a narrow range's exponent) is skipped."""
    mask = np.uint64((1 << RADIX_BITS) - 1)
    nd = 1 << RADIX_BITS
    count = np.zeros((_RADIX_PASSES, nd), dtype=np.int64)
    for i in range(m):
        k = keys[i]
        for d in range(_RADIX_PASSES):
            count[d, (k >> np.uint64(d * RADIX_BITS)) & mask] += 1
    src, dst = keys, tmp
    for d in range(_RADIX_PASSES):
        skip = False
        total = 0
        for b in range(nd):
            c = count[d, b]
            skip |= c == m
            count[d, b] = total
            total += c
        if skip:
            continue
        shift = np.uint64(d * RADIX_BITS)
        for i in range(m):
            k = src[i]
            b = (k >> shift) & mask
            dst[count[d, b]] = k
            count[d, b] += 1
        src, dst = dst, src
    return src


@numba.njit(parallel=True, **JIT)
def _sort_columns(cols):
    """Each row of ``cols`` (k, n) float64: its non-NaN values sorted ascending into its first ``m[j]``
    places (in place); returns ``m`` (k,)."""
    k, n = cols.shape
    m = np.zeros(k, dtype=np.int64)
    for j in prange(k):
        keys = np.empty(n, dtype=np.uint64)
        bits = cols[j].view(np.uint64)
        c = 0
        for i in range(n):
            v = cols[j, i]
            if v == v:
                keys[c] = _sortable(bits[i])
                c += 1
        out = _radix_sort(keys, np.empty(n, dtype=np.uint64), c)
        for i in range(c):
            bits[i] = _unsortable(out[i])
        m[j] = c
    return m


def sorted_columns(xp, X, f0: int, f1: int, rows=None, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels.reference.sorted_columns`.

    The rows gathered once, feature-major (:func:`_transpose`, in parallel
    over blocks of rows), then each column's non-NaN values
    sorted by a radix sort of their bits, in parallel over columns (NumPy
    sorts one column at a time, on one thread). Sorted values are unique,
    so this equals NumPy's sort (the order of -0.0 and 0.0, which compare
    equal, aside: here -0.0 first).
    """
    X = float_rows(X)
    has_rows = rows is not None
    r = np.ascontiguousarray(rows, dtype=np.int64) if has_rows else _NO_ROWS
    n = int(r.shape[0]) if has_rows else int(X.shape[0])
    cols = np.empty((f1 - f0, n))
    with Threads(threads_for(n_threads, n * max(1, f1 - f0))):
        _transpose(X, r, has_rows, int(f0), cols)
        m = _sort_columns(cols)
    return [cols[j, : m[j]] for j in range(f1 - f0)]


#: ``_transpose``'s row list where it reads every row
_NO_ROWS = np.zeros(1, dtype=np.int64)
#: Rows a task of :func:`_transpose` turns feature-major: its rows' codes
#: (up to 256 x 28 x 2 bytes) stay in the L1 cache while each feature's
#: run of them is written.
TRANSPOSE_ROWS = 256


@numba.njit(parallel=True, **JIT)
def _transpose(src, rows, has_rows, f0, out):
    """``out`` (k, n) = ``src[rows, f0 : f0 + k].T`` (``src[:, f0 : f0 + k].T`` without ``has_rows``), in
    ``out``'s dtype, by blocks of :data:`TRANSPOSE_ROWS` rows in parallel."""
    k, n = out.shape
    for blk in prange((n + TRANSPOSE_ROWS - 1) // TRANSPOSE_ROWS):
        i0 = blk * TRANSPOSE_ROWS
        i1 = min(n, i0 + TRANSPOSE_ROWS)
        for f in range(k):
            for i in range(i0, i1):
                out[f, i] = src[rows[i] if has_rows else i, f0 + f]


def codes_by_feature(xp, codes, *, copy: bool = True, n_threads: int = 1):
    """The binned matrix feature-major: (n_features, n_samples), the dtype of ``codes``.

    ``copy``: a C-contiguous copy, made by a blocked transpose in parallel
    (NumPy's copy of ``codes.T`` walks the strided side a value at a time);
    else ``codes.T``, a view (F-contiguous) that the kernels read as it is:
    no second matrix as large as the codes, each routed row's code a read
    of its own cache line (a sparse X's fit, whose memory is the CSR's and
    the codes').
    """
    codes = np.ascontiguousarray(codes)
    if not copy:
        return codes.T
    out = np.empty(codes.shape[::-1], dtype=codes.dtype)
    with Threads(threads_for(n_threads, int(codes.size))):
        _transpose(codes, _NO_ROWS, False, 0, out)
    return out



def feature_major_codes(codes, codes_by_feature):
    """The feature-major codes (F, n) the kernels read, from the fit's ``codes_by_feature``.

    Given as a C-contiguous copy, or as ``codes.T`` (F-contiguous: :func:`codes_by_feature` without a copy), it
    is read as it is; any other array of that shape is copied C-contiguous; None (or a device array): a
    C-contiguous copy of ``codes.T``. ``codes``: (n, F), C-contiguous.
    """
    codes_t = codes_by_feature
    if not isinstance(codes_t, np.ndarray) or codes_t.shape != codes.shape[::-1]:
        return np.ascontiguousarray(codes.T)
    if codes_t.flags.f_contiguous and not codes_t.flags.c_contiguous:
        return codes_t
    return np.ascontiguousarray(codes_t)
