"""Histograms of mostly-default codes: each node's built from the codes that differ from their feature's default.

A one-hot or text matrix (scipy.sparse or dense) bins to codes that are,
in most cells, one code a feature: the zero's. The dense histograms add
every (row, feature) of a node; here a feature's *default* code (its most
common one in a sample of rows) is left out: :func:`sparse_layout` lists
each row's other codes (``(feature, code)`` entries, rows in order, as a
CSR matrix), :func:`sparse_histograms` adds a node's entries in row order
and sets each feature's default bin to the node's total minus its other
bins, and :func:`sparse_siblings` subtracts the larger children from their
parents as the dense :func:`~gputrees.kernels.cpu.grow._siblings` does.

Each node also counts its entries per feature: a feature without one in a
node has all of its rows in one bin, so no split there; its histogram is
neither written nor scanned (the split scan's feature mask). A node's work
is then its entries plus its features that have any, not its rows times
every feature.

The level-wise grower's node histograms (trees, AdaBoost's learners) are
built the same way (:func:`pair_histograms`, the layout made once per codes
matrix: :func:`layout_of`), every feature's bins written.

Which codes are the default changes only the rounding of the default bins
(a difference of sums instead of a sum): exact for integer-valued channels
(counts), to a few ulps of the node's sums for float ones. The choice is
made on the codes (:func:`sparse_layout`), so a CSR matrix and its dense
twin, which bin to the same codes, grow the same trees.
"""

from __future__ import annotations

import weakref

import numba
import numpy as np
import scipy.sparse
from numba import prange

from numba import types
from numba.extending import overload

from .jit import JIT, serial_twin
from .memory import at, prefetch
from .pairs import pair_weight

__all__ = ["ENTRY_ROWS_AHEAD", "FILL_BLOCK", "LINEAR_ENTRIES", "SPARSE_MAX_SHARE", "SPARSE_MIN_CELLS",
           "SPARSE_SAMPLE_ROWS", "code_at", "layout_of", "note_sparse_codes", "pair_histograms", "sparse_histograms",
           "sparse_layout", "sparse_siblings"]

#: Largest share of (row, feature) cells off their feature's default code for
#: which the histograms are built from the entries: an entry costs about
#: twice a dense update (its feature's index is read too), and every node
#: also zeroes, fixes up and scans its features' bins, so well below a half
SPARSE_MAX_SHARE = 1.0 / 8
#: Fewest cells (rows x features) for which the layout is made: below, the
#: dense histograms take little time either way
SPARSE_MIN_CELLS = 1 << 22
#: Rows (evenly spaced) whose codes choose each feature's default and give
#: a first estimate of the share (a denser matrix is turned away before
#: its every cell is read)
SPARSE_SAMPLE_ROWS = 4096
_JIT = dict(JIT, error_model="numpy")


@numba.njit(**_JIT)
def _sample_defaults(codes, n_codes, step):
    """Each feature's most common code (the lowest on a tie) among rows ``0, step, 2 step, ...``, (F,) of the
    codes' dtype, and the sampled cells off it."""
    n, F = codes.shape
    counts = np.zeros((F, n_codes), dtype=np.int64)
    for r in range(0, n, step):
        for f in range(F):
            counts[f, codes[r, f]] += 1
    default = np.empty(F, dtype=codes.dtype)
    off = 0
    for f in range(F):
        best = 0
        for b in range(1, n_codes):
            if counts[f, b] > counts[f, best]:
                best = b
        default[f] = best
        off += ((n + step - 1) // step) - counts[f, best]
    return default, off


@numba.njit(parallel=True, **_JIT)
def _row_entries(codes, default):
    """Each row's cells off their feature's default, (n,) int64."""
    n, F = codes.shape
    out = np.empty(n, dtype=np.int64)
    for r in prange(n):
        c = 0
        for f in range(F):
            c += codes[r, f] != default[f]
        out[r] = c
    return out


#: Features a row's codes are compared in at once by :func:`_fill_entries` (a block without entries, most of
#: them, costs one test; 200,000 x 2,000 at 0.1%: 171 -> 120 ms)
FILL_BLOCK = 32


@numba.njit(inline="always")
def _fill_range(codes, default, r, f0, f1, feat, code, e):
    """Row ``r``'s entries among features ``f0:f1`` written from ``e`` on; returns the next entry's position."""
    for f in range(f0, f1):
        c = codes[r, f]
        if c != default[f]:
            feat[e] = f
            code[e] = c
            e += 1
    return e


@numba.njit(parallel=True, **_JIT)
def _fill_entries(codes, default, ptr, feat, code):
    """Each row's entries, features ascending: ``feat``, ``code`` at ``ptr[r]:ptr[r + 1]``."""
    n, F = codes.shape
    full = F - F % FILL_BLOCK
    for r in prange(n):
        e = ptr[r]
        for f0 in range(0, full, FILL_BLOCK):
            d = 0
            for k in range(FILL_BLOCK):
                d |= codes[r, f0 + k] ^ default[f0 + k]
            if d != 0:
                e = _fill_range(codes, default, r, f0, f0 + FILL_BLOCK, feat, code, e)
        _fill_range(codes, default, r, full, F, feat, code, e)


def code_at(codes_t, r, f):
    """Row ``r``'s code of feature ``f``: ``codes_t`` the feature-major codes (F, n), or :func:`sparse_layout`'s
    tuple (the routing of a fit grown from entries reads a row's few entries in sequence rather than a byte of
    its row of the codes, one cache line a row). Compiled code calls the overload below; this is the same rule
    for a kernel's Python body."""
    if isinstance(codes_t, tuple):
        ptr, feat, code, default = codes_t
        a, b = int(ptr[r]), int(ptr[r + 1])
        j = a + int(np.searchsorted(feat[a:b], f))  # the first entry of a feature >= f
        return int(code[j]) if j < b and feat[j] == f else int(default[f])
    return int(codes_t[f, r])


#: Entries of a row searched one by one; more are bisected
LINEAR_ENTRIES = 8


@overload(code_at, jit_options=dict(error_model="numpy"))
def _code_at(codes_t, r, f):
    if isinstance(codes_t, types.Array):
        return lambda codes_t, r, f: at(codes_t, f, r)
    if isinstance(codes_t, types.BaseTuple):
        def entry_code(codes_t, r, f):
            ptr, feat, code, default = codes_t
            a, b = ptr[r], ptr[r + 1]
            if b - a > LINEAR_ENTRIES:
                while a < b:  # the first entry of a feature >= f
                    mid = (a + b) >> 1
                    if feat[mid] < f:
                        a = mid + 1
                    else:
                        b = mid
            else:
                while a < b and feat[a] < f:
                    a += 1
            out = default[f]
            if a < ptr[r + 1] and feat[a] == f:
                out = np.int64(code[a])
            return out
        return entry_code
    return None


def sparse_layout(codes, n_codes: int, columns=None):
    """The entries of the codes (n, F) off each feature's default, or None where they are not sparse enough.

    Parameters
    ----------
    codes : (n, F) uint8/uint16, C-contiguous
    n_codes : int
        Codes a feature can take (the mapper's bins, the missing one included).
    columns : tuple or None
        The codes' stored cells by column where they were binned from a sparse
        matrix (:func:`gputrees._sparse.sparse_codes`' second result): where
        every feature's default is its zero code, the entries are those cells
        off it, read from there rather than from every cell (the same layout).

    Returns
    -------
    (ptr, feat, code, default) or None
        ``ptr`` (n + 1,) int64: row ``r``'s entries are ``ptr[r]:ptr[r + 1]``
        of ``feat`` (int32) and ``code`` (the codes' dtype); ``default`` (F,)
        int64. None below :data:`SPARSE_MIN_CELLS` cells or above
        :data:`SPARSE_MAX_SHARE` of them off the defaults.
    """
    n, F = codes.shape
    cells = n * F
    if cells < SPARSE_MIN_CELLS or cells == 0:
        return None
    step = max(1, n // SPARSE_SAMPLE_ROWS)
    default, off = _sample_defaults(codes, int(n_codes), step)
    # twice the bound in the sample: a matrix that close is counted in full
    if off > 2 * SPARSE_MAX_SHARE * ((n + step - 1) // step) * F:
        return None
    if columns is not None and np.array_equal(default, columns[3]):
        return _layout_from_columns(n, default, columns)
    per_row = _row_entries(codes, default)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(per_row, out=ptr[1:])
    nnz = int(ptr[-1])
    if nnz > SPARSE_MAX_SHARE * cells:
        return None
    feat = np.empty(nnz, dtype=np.int32)
    code = np.empty(nnz, dtype=codes.dtype)
    _fill_entries(codes, default, ptr, feat, code)
    return ptr, feat, code, default.astype(np.int64)


def _layout_from_columns(n: int, default, columns):
    """:func:`sparse_layout` from the stored cells by column (each column's other cells at its default)."""
    indptr, indices, stored, _ = columns
    F = default.shape[0]
    feature = np.repeat(np.arange(F, dtype=np.int32), np.diff(indptr))
    keep = stored != default.astype(stored.dtype)[feature]
    rows = indices[keep]
    if rows.shape[0] > SPARSE_MAX_SHARE * n * F:
        return None
    # by row, each row's features increasing: SciPy's CSC to CSR transpose (a counting sort, the cells'
    # order kept within a row), not a sort of the rows
    kept_ptr = np.zeros(F + 1, dtype=np.int64)
    np.cumsum(np.bincount(feature[keep], minlength=F), out=kept_ptr[1:])
    by_row = scipy.sparse.csc_matrix((stored[keep], rows, kept_ptr), shape=(n, F)).tocsr()
    return (by_row.indptr.astype(np.int64), by_row.indices.astype(np.int32, copy=False), by_row.data,
            default.astype(np.int64))


#: Rows ahead whose entries' bins (and channels) the histograms prefetch: the
#: bins of a node's entries are scattered over its whole histogram (MBs for
#: thousands of features), each a cache miss; fetched a few rows ahead, the
#: misses overlap (the root of 200,000 x 2,000 at 0.1%: 45 ms -> 15 ms)
ENTRY_ROWS_AHEAD = 8


@numba.njit(**_JIT)
def _add_entries(ptr, feat, code, order, a, b, chan, first, flat, base, nb, counts_row):
    """Entries of the rows ``order[a:b]``, in row order, into the flat histogram rows ``base + f nb + code``
    (``flat``: (slots x F x nb, Ch)); ``counts_row`` (F,): each feature's entries."""
    Ch = flat.shape[1]
    for p in range(a, b):
        if p + ENTRY_ROWS_AHEAD < b:
            q = order[p + ENTRY_ROWS_AHEAD]
            prefetch(chan, q)
            for e in range(ptr[q], ptr[q + 1]):
                prefetch(flat, base + feat[e] * nb + code[e])
        r = order[p]
        for e in range(ptr[r], ptr[r + 1]):
            k = base + feat[e] * nb + code[e]
            for c in range(Ch):
                flat[k, c] += chan[r, first + c]
            counts_row[feat[e]] += 1


@numba.njit(parallel=True, **_JIT)
def sparse_histograms(ptr, feat, code, default, order, start, end, chan, first, totals, used, counts, out):
    """Histograms of the slots' rows from their entries; each feature's default bin their total minus the rest.

    Slot ``s``: rows ``order[start[s]:end[s]]`` (``start[s]`` -1: none),
    channels ``chan[:, first:]`` summed into ``out[s]`` (S, F, n_bins, Ch)
    over each feature's first ``used[f]`` bins and the missing (last) one;
    ``totals`` (S, Ch): the slots' channel sums. ``counts`` (S, F) int64
    out: each feature's entries among the slot's rows. Only the features
    with entries are written: any other has every row of the slot in its
    default bin, whose sums are then the slot's totals. The entries are added
    in row order, a slot on one thread (the sums do not depend on the threads).
    """
    S = start.shape[0]
    F, nb, Ch = out.shape[1], out.shape[2], out.shape[3]
    flat = out.reshape(S * F * nb, Ch)
    for s in prange(S):
        for f in range(F):
            counts[s, f] = 0
        if start[s] < 0:
            continue
        # the features with entries first (zeroed before the adds), counted again by the adds
        for p in range(start[s], end[s]):
            r = order[p]
            for e in range(ptr[r], ptr[r + 1]):
                counts[s, feat[e]] += 1
        for f in range(F):
            if counts[s, f] > 0:
                counts[s, f] = 0
                for b in range(used[f]):
                    for c in range(Ch):
                        out[s, f, b, c] = 0.0
                for c in range(Ch):
                    out[s, f, nb - 1, c] = 0.0
        _add_entries(ptr, feat, code, order, start[s], end[s], chan, first, flat, s * F * nb, nb, counts[s])
        for f in range(F):
            if counts[s, f] == 0:
                continue
            d = default[f]
            for c in range(Ch):
                rest = totals[s, c]
                for b in range(used[f]):
                    if b != d:
                        rest -= out[s, f, b, c]
                if nb - 1 != d:
                    rest -= out[s, f, nb - 1, c]
                out[s, f, d, c] = rest


@numba.njit(parallel=True, **_JIT)
def sparse_siblings(parent_hist, parent_counts, parent_index, small, small_counts, small_totals, small_is_right,
                    children, used, default, out, out_counts):
    """:func:`~gputrees.kernels.cpu.grow._siblings` over the features with entries in each child.

    ``out[j]``, ``out_counts[j]``: child ``children[j]`` (pair ``c // 2``,
    right when odd), the built histogram and its counts, or its parent's
    minus them; a feature without entries in the child is not written. A
    built histogram's feature without entries (not written,
    :func:`sparse_histograms`) holds the pair's ``small_totals`` (pairs, Ch)
    in its default bin and nothing elsewhere.
    """
    F, nb, Ch = out.shape[1], out.shape[2], out.shape[3]
    for j in prange(children.shape[0]):
        ch = children[j]
        p = ch // 2
        built = (ch % 2 == 1) == small_is_right[p]
        q = parent_index[p]
        for f in range(F):
            k = small_counts[p, f] if built else parent_counts[q, f] - small_counts[p, f]
            out_counts[j, f] = k
            if k == 0:
                continue
            if built:
                for b in range(used[f]):
                    for c in range(Ch):
                        out[j, f, b, c] = small[p, f, b, c]
                for c in range(Ch):
                    out[j, f, nb - 1, c] = small[p, f, nb - 1, c]
            elif small_counts[p, f] == 0:
                for b in range(used[f]):
                    for c in range(Ch):
                        out[j, f, b, c] = parent_hist[q, f, b, c]
                for c in range(Ch):
                    out[j, f, nb - 1, c] = parent_hist[q, f, nb - 1, c]
                d = default[f]
                for c in range(Ch):
                    out[j, f, d, c] = parent_hist[q, f, d, c] - small_totals[p, c]
            else:
                for b in range(used[f]):
                    for c in range(Ch):
                        out[j, f, b, c] = parent_hist[q, f, b, c] - small[p, f, b, c]
                for c in range(Ch):
                    out[j, f, nb - 1, c] = parent_hist[q, f, nb - 1, c] - small[p, f, nb - 1, c]


sparse_histograms_serial = serial_twin(sparse_histograms)
sparse_siblings_serial = serial_twin(sparse_siblings)


#: per codes matrix (key: its id and code count), while it lives: its layout (layout_of), and the stored cells
#: by column it was binned from until the layout is made (note_sparse_codes)
_LAYOUTS: dict = {}
_COLUMNS: dict = {}


def _keep(store: dict, codes, n_codes: int, value) -> None:
    """``value`` kept in ``store`` for ``codes`` while they live (not kept where they are not weak-referenceable)."""
    key = (id(codes), int(n_codes))
    try:
        ref = weakref.ref(codes, lambda _, key=key: store.pop(key, None))
    except TypeError:
        return
    store[key] = (ref, value)


def _kept(store: dict, codes, n_codes: int, pop: bool = False):
    """:func:`_keep`'s entry ``(value,)`` for ``codes``, taken out where ``pop``, or None."""
    key = (id(codes), int(n_codes))
    hit = store.pop(key, None) if pop else store.get(key)
    return (hit[1],) if hit is not None and hit[0]() is codes else None


def note_sparse_codes(codes, n_codes: int, columns) -> None:
    """Keep, while ``codes`` live, the stored cells by column they were binned from (``columns``, as
    :func:`gputrees._sparse.sparse_codes` returns them): :func:`layout_of` then lays them out from those."""
    _keep(_COLUMNS, codes, n_codes, columns)


def layout_of(codes, n_codes: int):
    """:func:`sparse_layout` of ``codes``, made once per codes matrix (kept while it lives): a fit's grower asks
    at every level, AdaBoost's learners at every round, the compiled boosting tree once a fit, of the same
    matrix. None for codes that are not a C-contiguous matrix (the layout reads them so)."""
    if codes.ndim != 2 or not codes.flags.c_contiguous:
        return None
    hit = _kept(_LAYOUTS, codes, n_codes)
    if hit is not None:
        return hit[0]
    noted = _kept(_COLUMNS, codes, n_codes, pop=True)  # (not needed once laid out)
    layout = sparse_layout(codes, n_codes, None if noted is None else noted[0])
    _keep(_LAYOUTS, codes, n_codes, layout)
    return layout


@numba.njit(parallel=True, **_JIT)
def pair_histograms(ptr, feat, code, default, row, chan_index, mult, wmult, mode, chan, first, start, end, features,
                    out):
    """The level-wise grower's node histograms from its pairs' entries: ``out`` (S, k, n_bins, Ch), every bin.

    Slot ``s``: pairs ``start[s]:end[s]`` (``start[s]`` -1: none, zeros) of
    rows ``row``, channel rows ``chan_index``, weighed as
    :func:`~gputrees.kernels.cpu.pairs.pair_weight` weighs them (columns
    ``first:`` of ``chan``), over features ``features[s]`` ((S, k) int64,
    distinct), or every feature where ``features`` has no columns (k = F);
    each row's entries added in pair order, each feature's default bin the
    slot's total minus its other bins (the total where the feature has no
    entry there). A slot on one thread.
    """
    S, K, nb, Ch = out.shape
    F = default.shape[0]
    drawn = features.shape[1] > 0
    for s in prange(S):
        for j in range(K):
            for b in range(nb):
                for c in range(Ch):
                    out[s, j, b, c] = 0.0
        if start[s] < 0:
            continue
        column = np.full(F, -1, dtype=np.int64)  # each feature's place in out[s], -1: not drawn
        for j in range(K):
            column[features[s, j] if drawn else j] = j
        total = np.zeros(Ch)
        w = np.empty(Ch)
        touched = np.zeros(K, dtype=np.bool_)
        for i in range(start[s], end[s]):
            r = row[i]
            ci = chan_index[i]
            for c in range(Ch):
                w[c] = pair_weight(chan, ci, c, i, mult, wmult, mode, first)
                total[c] += w[c]
            for e in range(ptr[r], ptr[r + 1]):
                j = column[feat[e]]
                if j < 0:
                    continue
                touched[j] = True
                for c in range(Ch):
                    out[s, j, code[e], c] += w[c]
        for j in range(K):
            d = default[features[s, j] if drawn else j]
            for c in range(Ch):
                rest = total[c]
                if touched[j]:
                    for b in range(nb):
                        if b != d:
                            rest -= out[s, j, b, c]
                out[s, j, d, c] = rest
