"""Compiled CPU kernels (Numba), behind the same contracts as the reference ones.

This module is imported only when the Numba kernels are selected
(:func:`gputrees.kernels.get_kernels`); every function is compiled on its
first call for the argument types it meets, and cached on disk
(``cache=True``, in ``__pycache__`` or ``NUMBA_CACHE_DIR``), so a later
process loads the machine code instead of compiling again.

Threads: the parallel kernels split their work into ``n_threads`` blocks
(``numba.prange``) and set Numba's thread count for the call
(:func:`numba.set_num_threads`, which is local to the calling thread). The
work is split so that every output element is summed by one thread in one
fixed order (the order of the input rows): results do not depend on the
number of threads.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ._records import ActiveRows

__all__ = [
    "build_histograms",
    "segmented_cumsum",
    "segment_max",
    "segment_min",
    "thread_count",
]

_JIT = dict(cache=True, nogil=True)


def thread_count(n_jobs: int | None) -> int:
    """Threads for ``n_jobs``: None or -1 = every core Numba sees, -2 = all but one, k > 0 = k (capped)."""
    available = numba.config.NUMBA_NUM_THREADS
    if n_jobs == 0:
        raise ValueError("n_jobs=0 means no thread at all; use None or -1 (every core) or a positive count")
    if n_jobs is None:
        return available
    if n_jobs < 0:
        return max(1, available + 1 + n_jobs)
    return max(1, min(int(n_jobs), available))


class _Threads:
    """Context manager setting Numba's thread count for this thread (capped at the cores Numba sees)."""

    def __init__(self, n: int):
        self.n = max(1, min(int(n), numba.config.NUMBA_NUM_THREADS))

    def __enter__(self):
        self.before = numba.get_num_threads()
        numba.set_num_threads(self.n)

    def __exit__(self, *exc):
        numba.set_num_threads(self.before)


# -- histograms ---------------------------------------------------------------
def build_histograms(xp, codes, rows, node, weights, n_nodes: int, n_bins: int, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels._reference.build_histograms`.

    Sums run in row order inside each (node, feature, bin): equal to the
    reference exactly for integer-valued channels, to float rounding otherwise,
    and to the bincount kernel bit for bit. Runs :func:`node_histograms` with
    one channel row per input row and the identity slot table.
    """
    m = int(rows.shape[0])
    active = ActiveRows(row=rows, chan_index=np.arange(m, dtype=np.int64), node=node)
    table = np.arange(int(n_nodes), dtype=np.int64)
    return node_histograms(xp, codes, active, weights, table, n_nodes, n_bins, n_threads=n_threads)


# -- segmented scans (sort-based split search of small nodes) -----------------
@numba.njit(**_JIT)
def _segmented_cumsum(values, seg):
    out = np.empty_like(values)
    n = values.shape[0]
    for i in range(n):
        fresh = i == 0 or seg[i] != seg[i - 1]
        for c in range(values.shape[1]):
            out[i, c] = values[i, c] if fresh else out[i - 1, c] + values[i, c]
    return out


@numba.njit(**_JIT)
def _segment_reduce(values, seg, take_max):
    out = np.empty_like(values)
    n = values.shape[0]
    start = 0
    while start < n:
        stop = start + 1
        while stop < n and seg[stop] == seg[start]:
            stop += 1
        best = values[start]
        for i in range(start + 1, stop):
            v = values[i]
            # NaN wins, as in numpy.maximum / numpy.minimum
            if best == best and (v != v or ((v > best) if take_max else (v < best))):
                best = v
        for i in range(start, stop):
            out[i] = best
        start = stop
    return out


def segmented_cumsum(xp, values, seg, max_len: int):
    """Same contract as :func:`gputrees.kernels._reference.segmented_cumsum` (sequential sums)."""
    two_d = values.reshape(values.shape[0], -1)
    out = _segmented_cumsum(np.ascontiguousarray(two_d, dtype=np.float64), np.ascontiguousarray(seg))
    return out.reshape(values.shape)


def segment_max(xp, values, seg, max_len: int):
    """Same contract as :func:`gputrees.kernels._reference.segment_max`."""
    return _segment_reduce(np.ascontiguousarray(values), np.ascontiguousarray(seg), True)


def segment_min(xp, values, seg, max_len: int):
    """Same contract as :func:`gputrees.kernels._reference.segment_min`."""
    return _segment_reduce(np.ascontiguousarray(values), np.ascontiguousarray(seg), False)


# -- row-level operations of the grower ---------------------------------------
def _mults(active):
    """(mult, wmult, mode): empty arrays stand for None; mode 0 none, 1 mult, 2 both."""
    empty = np.empty(0, dtype=np.float64)
    if active.mult is None:
        return empty, empty, 0
    mult = np.ascontiguousarray(active.mult, dtype=np.float64)
    if active.wmult is None:
        return mult, empty, 1
    return mult, np.ascontiguousarray(active.wmult, dtype=np.float64), 2


@numba.njit(inline="always")
def _weight(chan, ci, c, i, mult, wmult, mode):
    w = chan[ci, c]
    if mode == 1 or (mode == 2 and c == 0):
        w = w * mult[i]
    elif mode == 2:
        w = w * wmult[i]
    return w


@numba.njit(inline="always")
def _add_row(out, s, codes, r, f0, f1, chan, ci, i, mult, wmult, mode):
    """Add pair ``i`` (row ``r``, channel row ``ci``) to slot ``s``'s histogram, features ``f0:f1``."""
    for f in range(f0, f1):
        b = codes[r, f]
        for c in range(chan.shape[1]):
            out[s, f, b, c] += _weight(chan, ci, c, i, mult, wmult, mode)


@numba.njit(inline="always")
def _add_sums(out, s, chan, ci, i, mult, wmult, mode):
    """Add pair ``i``'s channels (channel row ``ci``) to slot ``s``'s sums."""
    for c in range(chan.shape[1]):
        out[s, c] += _weight(chan, ci, c, i, mult, wmult, mode)


@numba.njit(parallel=True, **_JIT)
def _node_histograms(codes, row, chan_index, node, mult, wmult, mode, chan, slot_of_node, n_slots, n_bins, n_blocks):
    m = row.shape[0]
    n_features = codes.shape[1]
    n_channels = chan.shape[1]
    out = np.zeros((n_slots, n_features, n_bins, n_channels), dtype=np.float64)
    # one block of features per thread: each (slot, feature, bin) is summed by
    # one thread, in row order
    for blk in prange(n_blocks):
        f0 = blk * n_features // n_blocks
        f1 = (blk + 1) * n_features // n_blocks
        for i in range(m):
            s = slot_of_node[node[i]]
            if s >= 0:
                _add_row(out, s, codes, row[i], f0, f1, chan, chan_index[i], i, mult, wmult, mode)
    return out


@numba.njit(**_JIT)
def _node_sums(chan_index, node, mult, wmult, mode, chan, slot_of_node, n_slots):
    n_channels = chan.shape[1]
    out = np.zeros((n_slots, n_channels), dtype=np.float64)
    for i in range(node.shape[0]):
        s = slot_of_node[node[i]]
        if s >= 0:
            _add_sums(out, s, chan, chan_index[i], i, mult, wmult, mode)
    return out


@numba.njit(parallel=True, **_JIT)
def _route(codes, row, node, slot_of_node, feature, bin_, missing_left, is_cat, cat_left, first_child, missing_bin):
    m = row.shape[0]
    out = np.empty_like(node)
    any_cat = cat_left.shape[1] > 0
    for i in prange(m):
        s = slot_of_node[node[i]]
        if s < 0:
            out[i] = node[i]
            continue
        code = codes[row[i], feature[s]]
        if code == missing_bin:
            left = missing_left[s]
        elif any_cat and is_cat[s]:
            left = cat_left[s, code]
        else:
            left = code <= bin_[s]
        out[i] = first_child + 2 * s + (0 if left else 1)
    return out


def _i64(a):
    return np.ascontiguousarray(a, dtype=np.int64)


def node_histograms(xp, codes, active, chan, slot_of_node, n_slots: int, n_bins: int, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels._reference.node_histograms`.

    When every built node's rows are contiguous (the grower's rows are grouped
    by node, see :func:`route_rows`), one task per (node, block of features)
    reads that node's run of rows; otherwise one task per block of features
    scans all rows. Either way each output is one thread's row-order sum.
    """
    mult, wmult, mode = _mults(active)
    node = _i64(active.node)
    table = _i64(slot_of_node)
    threads = min(n_threads, numba.config.NUMBA_NUM_THREADS)
    start, end, grouped = _runs(node, table, int(n_slots))
    if grouped:
        present = max(1, int((start >= 0).sum()))
        # enough tasks for every thread; one block (each row read once) when
        # the nodes alone give each thread two or more tasks
        blocks = 1 if present >= 2 * threads else max(1, min(codes.shape[1], -(-2 * threads // present)))
        with _Threads(threads):
            return _run_histograms(
                codes, _i64(active.row), _i64(active.chan_index), mult, wmult, mode,
                np.ascontiguousarray(chan, dtype=np.float64), start, end, int(n_bins), blocks,
            )
    blocks = max(1, min(n_threads, codes.shape[1]))
    with _Threads(threads):
        return _node_histograms(
            codes, _i64(active.row), _i64(active.chan_index), _i64(active.node), mult, wmult, mode,
            np.ascontiguousarray(chan, dtype=np.float64), _i64(slot_of_node), int(n_slots), int(n_bins), blocks,
        )


def node_sums(xp, active, chan, slot_of_node, n_slots: int, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels._reference.node_sums` (sums in row order).

    With rows grouped by node, one task per node sums its run; otherwise one
    sequential scan.
    """
    mult, wmult, mode = _mults(active)
    start, end, grouped = _runs(_i64(active.node), _i64(slot_of_node), int(n_slots))
    if grouped:
        with _Threads(n_threads):
            return _run_sums(
                _i64(active.chan_index), mult, wmult, mode, np.ascontiguousarray(chan, dtype=np.float64), start, end
            )
    return _node_sums(
        _i64(active.chan_index), _i64(active.node), mult, wmult, mode,
        np.ascontiguousarray(chan, dtype=np.float64), _i64(slot_of_node), int(n_slots),
    )


def route_rows(xp, codes, active, slot_of_node, split, first_child: int, missing_bin: int, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels._reference.route_rows`; the pairs come back grouped by node.

    The regrouping is a stable counting sort by node id, so each node's pairs
    keep their relative order (and row-order sums stay the same).
    """
    with _Threads(n_threads):
        node = _route(
            codes, _i64(active.row), _i64(active.node), _i64(slot_of_node),
            _i64(split.feature), _i64(split.bin),
            np.ascontiguousarray(split.missing_left, dtype=np.bool_),
            np.ascontiguousarray(split.is_categorical, dtype=np.bool_),
            np.ascontiguousarray(split.cat_left, dtype=np.bool_),
            int(first_child), int(missing_bin),
        )
    order = _group(node, int(first_child) + 2 * int(split.feature.shape[0]))

    def take(a):
        return None if a is None else np.asarray(a)[order]

    return ActiveRows(
        row=take(active.row), chan_index=take(active.chan_index), node=node[order],
        mult=take(active.mult), wmult=take(active.wmult), key=take(active.key),
    )


# -- prediction -----------------------------------------------------------------
@numba.njit(parallel=True, **_JIT)
def _apply_trees(X, left, right, feature, threshold, missing_left, is_cat, cat_left, max_depth, missing_bin):
    n = X.shape[0]
    n_trees = left.shape[0]
    any_cat = cat_left.shape[2] > 0
    out = np.empty((n, n_trees), dtype=np.int64)
    for i in prange(n):
        for t in range(n_trees):
            nd = 0
            for _ in range(max_depth):
                f = feature[t, nd]
                if f < 0:
                    break
                x = X[i, f]
                missing = np.isnan(x)
                go_left = x <= threshold[t, nd]
                if any_cat and is_cat[t, nd]:
                    code = missing_bin if missing else int(x)
                    go_left = cat_left[t, nd, code]
                    missing = missing or code == missing_bin
                if missing:
                    go_left = missing_left[t, nd]
                nd = left[t, nd] if go_left else right[t, nd]
            out[i, t] = nd
    return out


def apply_trees(xp, batch, X, missing_bin: int, *, n_threads: int = 1):
    """Same contract as :func:`gputrees._predictor.apply_trees_reference`: rows in parallel, trees in turn."""
    n_trees = int(batch.left.shape[0])
    cat_left = np.ascontiguousarray(batch.cat_left, dtype=np.bool_)
    if cat_left.ndim != 3 or cat_left.shape[-1] == 0:
        cat_left = np.zeros((n_trees, 1, 0), dtype=np.bool_)
    with _Threads(n_threads):
        return _apply_trees(
            np.ascontiguousarray(X, dtype=np.float64),
            _i64(batch.left), _i64(batch.right), _i64(batch.feature),
            np.ascontiguousarray(batch.threshold, dtype=np.float64),
            np.ascontiguousarray(batch.missing_left, dtype=np.bool_),
            np.ascontiguousarray(batch.is_categorical, dtype=np.bool_),
            cat_left, int(batch.max_depth), int(missing_bin),
        )


# -- rows grouped by node -------------------------------------------------------
# The grower keeps its active rows grouped by node (``route_rows`` regroups
# them after every split, stably, so each node's rows keep their order): a
# node's histogram then reads one contiguous run of rows and writes one node's
# histogram, which stays in the core's cache.
@numba.njit(**_JIT)
def _runs(node, slot_of_node, n_slots):
    """First and end position of every slot's run, or ok=False if a slot's rows are not contiguous."""
    start = np.full(n_slots, -1, dtype=np.int64)
    end = np.zeros(n_slots, dtype=np.int64)
    count = np.zeros(n_slots, dtype=np.int64)
    for i in range(node.shape[0]):
        s = slot_of_node[node[i]]
        if s < 0:
            continue
        if start[s] < 0:
            start[s] = i
        end[s] = i + 1
        count[s] += 1
    ok = True
    for s in range(n_slots):
        if start[s] >= 0 and end[s] - start[s] != count[s]:
            ok = False
    return start, end, ok


@numba.njit(parallel=True, **_JIT)
def _run_histograms(codes, row, chan_index, mult, wmult, mode, chan, start, end, n_bins, n_blocks):
    n_slots = start.shape[0]
    n_features = codes.shape[1]
    n_channels = chan.shape[1]
    out = np.zeros((n_slots, n_features, n_bins, n_channels), dtype=np.float64)
    # one task per (slot, block of features): each output is summed by one
    # thread, in row order
    for task in prange(n_slots * n_blocks):
        s = task // n_blocks
        blk = task % n_blocks
        if start[s] < 0:
            continue
        f0 = blk * n_features // n_blocks
        f1 = (blk + 1) * n_features // n_blocks
        for i in range(start[s], end[s]):
            _add_row(out, s, codes, row[i], f0, f1, chan, chan_index[i], i, mult, wmult, mode)
    return out


@numba.njit(**_JIT)
def _group(node, n_ids):
    """Stable order of the pairs by node id (a counting sort)."""
    count = np.zeros(n_ids + 1, dtype=np.int64)
    for i in range(node.shape[0]):
        count[node[i] + 1] += 1
    for k in range(n_ids):
        count[k + 1] += count[k]
    order = np.empty(node.shape[0], dtype=np.int64)
    for i in range(node.shape[0]):
        order[count[node[i]]] = i
        count[node[i]] += 1
    return order


@numba.njit(parallel=True, **_JIT)
def _run_sums(chan_index, mult, wmult, mode, chan, start, end):
    n_slots = start.shape[0]
    n_channels = chan.shape[1]
    out = np.zeros((n_slots, n_channels), dtype=np.float64)
    for s in prange(n_slots):
        if start[s] < 0:
            continue
        for i in range(start[s], end[s]):
            _add_sums(out, s, chan, chan_index[i], i, mult, wmult, mode)
    return out
