"""One boosting tree grown depth-wise in a single compiled call (Numba).

The generic grower (:mod:`gputrees._grower`) drives a level with dozens of
small array operations around its kernels: slot tables, gathers of the
frontier's records, stacks, masks. On small data they cost as much as the
kernels. :func:`grow_tree` runs the whole loop of one tree in
compiled code, for the case boosting grows most: one tree, every row once,
depth-wise to a ``max_depth``, numerical and categorical features, best
splits over every feature, the Newton criterion with ``min_child_weight > 0`` (children's
statistics from the split record), thresholds at the next value bin.

It is the generic grower's twin with the Numba kernel set, not a second
algorithm: it calls the same compiled kernels in the same order on the same
rows -- the root's sums (``_run_sums``, or the caller's
``GrowerInputs.channel_sums`` as the generic grower takes them), the
histograms of each sibling pair's smaller child (``_run_histograms``, rows
of a node in row order), the
larger one by subtraction from the parent's (:func:`_siblings`, the same
subtraction as ``_sibling_histograms``), the split scan (``_best_splits``)
-- and applies the grower's rules with the same formulas (which children
can split, the Newton improvement and its acceptance, the count-free
histograms' side of missing values), so the tree, its statistics and every
row's leaf are the generic grower's bit for bit (tested against it). Rows
are kept grouped by node in an index array and partitioned stably (each
child's rows stay in row order), in parallel over blocks of rows.

One difference in the work, none in the result: the histograms it keeps
are written only in the bins the split scan reads, each feature's
``n_value_bins`` and the missing bin (``_run_histograms``' ``used``): a
feature with few distinct values (a month, a coded category) then costs its
few bins, not 256, in the zeroing and the sibling subtraction. The
histograms gather each row's channels by its index rather than move them
with the rows through the partitions (see :func:`partition_rows`).

Codes that are mostly one code a feature (one-hot, text: a sparse X's or
its dense twin's) are grown from their other entries
(:mod:`.sparse_codes`): each node's histograms from its rows' entries,
only its features with entries subtracted and scanned, the rows routed by
their entries. The same splits; the default bins' sums are differences,
equal to rounding (exact for counts).

:func:`grow_tree` returns None where the case is not covered; the caller then
uses the generic grower.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numba
import numpy as np
from numba import prange

from ..._records import (
    NEWTON,
    NEWTON_GH,
    TreeBatch,
    criterion_code,
    given_root_sums,
    mapper_category_positions,
    unit_counts,
)
from ..rules import (
    TIE_RTOL,
    can_split,
    newton_accept,
    newton_gradient_channel,
    newton_improvement,
)
from .binning import feature_major_codes, search_range
from .buffers import in_workspace, kept
from .histograms import grouped_histograms
from .jit import JIT, MIN_WORK_PER_THREAD, Threads, serial_twin
from .memory import at1, put1, row_bytes
from .pairs import run_sums_serial
from .scan import (
    BLOCKS_PER_THREAD,
    has_values,
    mapper_arrays,
    scan_nodes_kernel,
    scan_nodes_kernel_serial,
)
from .sparse_codes import (
    code_at,
    layout_of,
    sparse_histograms,
    sparse_histograms_serial,
    sparse_siblings,
    sparse_siblings_serial,
)

#: Deepest tree grown here: node arrays are sized for a full tree
#: (2 ** (MAX_DEPTH + 1) nodes); deeper trees use the generic grower.
MAX_DEPTH = 16
#: Rows one task of the partition (and of the leaf recording) handles: large
#: enough that a task's start-up is negligible, small enough that a level of a
#: few nodes splits into several tasks per thread (the tasks go to the threads
#: in equal counts, not equal rows, so a few large tasks leave the rows unevenly spread)
PARTITION_ROWS = 1 << 12
#: Rows of a level (or of its leaves) from which its partition or leaf pass
#: runs on several threads (below, the serial twin): on fewer rows a second
#: thread costs more than it takes off
PARTITION_THREAD_ROWS = 1 << 14
#: Ranges of rows a thread takes in a leaf pass (see :func:`leaf_pass`),
#: every thread's in turn: rows of early leaves, gone from the pass, may
#: cluster by row (data sorted by a feature the tree split on)
LEAF_RANGES_PER_THREAD = 4
#: Histogram updates (``jit.MIN_WORK_PER_THREAD``) one bin and channel of
#: the split scan counts for when choosing its threads: scanning a bin and
#: channel takes about as long as a few histogram updates
SCAN_WORK_PER_BIN = 3
_JIT_GROW = dict(JIT, error_model="numpy")


@numba.njit(**_JIT_GROW)
def _tasks(seg_a, seg_b, sel):
    """Blocks (task_of, a, b) of at most PARTITION_ROWS positions covering the segments ``sel``, in order."""
    n = 0
    for j in sel:
        n += (seg_b[j] - seg_a[j] + PARTITION_ROWS - 1) // PARTITION_ROWS
    t_of = np.empty(n, dtype=np.int64)
    t_a = np.empty(n, dtype=np.int64)
    t_b = np.empty(n, dtype=np.int64)
    t = 0
    for i in range(sel.shape[0]):
        j = sel[i]
        a = seg_a[j]
        while a < seg_b[j]:
            t_of[t] = i
            t_a[t] = a
            t_b[t] = min(a + PARTITION_ROWS, seg_b[j])
            a = t_b[t]
            t += 1
    return t_of, t_a, t_b


@numba.njit(parallel=True, **_JIT_GROW)
def _start_rows(order):
    """A tree's start: ``order`` (n,) = 0 .. n - 1, in parallel over blocks of :data:`PARTITION_ROWS` rows."""
    n = order.shape[0]
    for t in prange((n + PARTITION_ROWS - 1) // PARTITION_ROWS):
        # unsigned positions, so that the loop is vectorised
        for i in range(np.uint64(t * PARTITION_ROWS), np.uint64(min(n, (t + 1) * PARTITION_ROWS))):
            order[i] = i


@numba.njit(**_JIT_GROW)
def _node_totals(t_of, per_task, n_nodes):
    """Per node (n_nodes,) the sum of its tasks' ``per_task`` (tasks of :func:`_tasks`)."""
    total = np.zeros(n_nodes, dtype=np.int64)
    for t in range(t_of.shape[0]):
        total[t_of[t]] += per_task[t]
    return total


@numba.njit(inline="always")
def goes_left_numerical(codes_t, r, feature, bin_, missing_left, missing_bin):
    """Whether row ``r`` goes left at a numerical split (``routing._goes_left``); ``codes_t``: the feature-major
    codes or the sparse entries (:func:`~.sparse_codes.code_at`)."""
    code = code_at(codes_t, r, feature)
    if code == missing_bin:
        return missing_left
    return code <= bin_


@numba.njit(inline="always")
def goes_left(codes_t, r, feature, bin_, missing_left, missing_bin, cat, cat_row):
    """Whether row ``r`` goes left at a split, categorical (``cat``: the codes sent left are ``cat_row``'s) or
    numerical (``routing._goes_left``)."""
    if cat:
        code = code_at(codes_t, r, feature)
        return missing_left if code == missing_bin else cat_row[code]
    return goes_left_numerical(codes_t, r, feature, bin_, missing_left, missing_bin)


@numba.njit(parallel=True, **_JIT_GROW)
def partition_rows(codes_t, order, out, go, seg_a, seg_b, sel, feature, bin_, missing_left, missing_bin, is_cat,
                    cat_left):
    """Stable partition of the nodes ``sel``'s rows: left child's rows first, each side in row order.

    Rows of node ``j = sel[i]`` are ``order[seg_a[j]:seg_b[j]]``; they go to
    the same positions of ``out``. ``go`` (n,) bool: work space for each
    row's side. The splits (``feature`` .. ``cat_left``) are the nodes'
    ``sel``, in order. Returns the left counts (len(sel),).

    Only the row indices move: moving the histograms' channels with them (so
    that deep nodes read them in sequence) costs this branch-free pass more
    than it saves the histograms, at every size.
    """
    t_of, t_a, t_b = _tasks(seg_a, seg_b, sel)
    n_tasks = t_of.shape[0]
    lefts = np.zeros(n_tasks, dtype=np.int64)
    # each row's side, read once (the second pass reads these bytes in
    # sequence instead of the rows' codes again, which lie far apart)
    for t in prange(n_tasks):
        i = t_of[t]
        f, b, ml, cat = feature[i], bin_[i], missing_left[i], is_cat[i]
        cat_row = cat_left[i]
        c = 0
        for p in range(t_a[t], t_b[t]):
            g = goes_left(codes_t, at1(order, p), f, b, ml, missing_bin, cat, cat_row)
            put1(go, p, g)
            c += g
        lefts[t] = c
    n_left = _node_totals(t_of, lefts, sel.shape[0])
    lo = np.empty(n_tasks, dtype=np.int64)
    ro = np.empty(n_tasks, dtype=np.int64)
    prev = -1
    for t in range(n_tasks):
        i = t_of[t]
        if i != prev:
            nxt_l = seg_a[sel[i]]
            nxt_r = nxt_l + n_left[i]
            prev = i
        lo[t] = nxt_l
        ro[t] = nxt_r
        nxt_l += lefts[t]
        nxt_r += (t_b[t] - t_a[t]) - lefts[t]
    for t in prange(n_tasks):
        pl, pr = lo[t], ro[t]
        # without branches: a row's side is as good as random, and a
        # mispredicted branch a row would cost about half the pass
        for p in range(t_a[t], t_b[t]):
            g = np.int64(at1(go, p))
            d = pr + g * (pl - pr)
            put1(out, d, at1(order, p))
            pl += g
            pr += 1 - g
    return n_left


@numba.njit(**_JIT_GROW)
def _row_range_bounds(order, seg_a, seg_b, sel, n_ranges):
    """Each node's positions cut by ranges of rows: (n_ranges + 1, len(sel)) positions.

    Range ``k`` is the rows from :func:`_range_start` ``(k)`` on, up to the
    next range's start; node ``sel[i]``'s rows in it are at positions
    ``bounds[k, i]:bounds[k + 1, i]`` (a node's rows lie in row order, so each
    range's are one run of them: found by binary search).
    """
    n = order.shape[0]
    m = sel.shape[0]
    bounds = np.empty((n_ranges + 1, m), dtype=np.int64)
    for i in range(m):
        a, b = seg_a[sel[i]], seg_b[sel[i]]
        bounds[0, i] = a
        bounds[n_ranges, i] = b
        for k in range(1, n_ranges):
            a = search_range(order, a, b, _range_start(k, n, n_ranges))
            bounds[k, i] = a
    return bounds


@numba.njit(inline="always")
def _range_start(k, n, n_ranges):
    """The first row of range ``k`` of ``n_ranges`` over ``n`` rows: ``k n / n_ranges`` rounded down to a multiple
    of 8 (an int64 cache line), so that no two ranges write into one line of a per-row array."""
    return (k * n // n_ranges) & ~np.int64(7)


@numba.njit(inline="always")
def _n_ranges(n_threads):
    """Ranges of rows of a leaf pass on ``n_threads`` threads (one on one thread)."""
    return n_threads * LEAF_RANGES_PER_THREAD if n_threads > 1 else 1


@numba.njit(parallel=True, **_JIT_GROW)
def leaf_pass(codes_t, order, seg_a, seg_b, sel, feature, bin_, missing_left, missing_bin, is_cat, cat_left,
               row_leaf, first_child, n_threads):
    """The rows of the nodes ``sel`` sent to their children as leaves: ``row_leaf`` of each row its child's id.

    Node ``sel[i]``'s children are ``first_child + 2 i`` (left) and ``+ 1``;
    each node's rows in ``order`` increasing (as the partitions keep them).
    Returns the left counts (len(sel),), as :func:`partition_rows` does, without
    moving the rows.

    The writes land at the rows, scattered: threads that each took runs of
    positions (as the partition does) would write into the same cache lines,
    every node's rows spread over all of them, and two threads could be no
    faster than one. Each thread here takes ranges of rows instead
    (:data:`LEAF_RANGES_PER_THREAD` a thread, every thread's in turn), each
    range all the nodes' runs of rows in it (:func:`_row_range_bounds`).
    """
    m = sel.shape[0]
    n_ranges = _n_ranges(n_threads)
    bounds = _row_range_bounds(order, seg_a, seg_b, sel, n_ranges)
    lefts = np.zeros((n_ranges, m), dtype=np.int64)
    for t in prange(n_threads):
        for k in range(t, n_ranges, n_threads):
            for i in range(m):
                f, b, ml, cat = feature[i], bin_[i], missing_left[i], is_cat[i]
                cat_row = cat_left[i]
                left = first_child + 2 * i
                c = 0
                for p in range(bounds[k, i], bounds[k + 1, i]):
                    r = at1(order, p)
                    g = np.int64(goes_left(codes_t, r, f, b, ml, missing_bin, cat, cat_row))
                    put1(row_leaf, r, left + 1 - g)
                    c += g
                lefts[k, i] = c
    return lefts.sum(axis=0)


@numba.njit(parallel=True, **_JIT_GROW)
def mark_leaves(order, seg_a, seg_b, sel, row_leaf, n_threads):
    """``row_leaf`` of the rows of the nodes ``sel`` (leaves): the node's id; by ranges of rows, as
    :func:`leaf_pass`."""
    m = sel.shape[0]
    n_ranges = _n_ranges(n_threads)
    bounds = _row_range_bounds(order, seg_a, seg_b, sel, n_ranges)
    for t in prange(n_threads):
        for k in range(t, n_ranges, n_threads):
            for i in range(m):
                node = sel[i]
                for p in range(bounds[k, i], bounds[k + 1, i]):
                    put1(row_leaf, at1(order, p), node)


@numba.njit(parallel=True, **_JIT_GROW)
def _siblings(parent_hist, parent_index, small, small_is_right, children, out, used):
    """``histograms._sibling_histograms`` over each feature's first ``used[f]`` bins and the missing bin only.

    ``out[j]``: child ``children[j]`` (pair ``c // 2``, right when odd), the
    built histogram or its parent's minus it. The split scan reads no other
    bin (a feature's codes are below its ``n_value_bins`` or the missing
    bin), so the others are neither copied nor subtracted: features with few
    distinct values fill a small share of their bins.

    Each feature's bins are one run of a node's flat histogram, walked by
    unsigned positions (``loss._block``'s reason: an index Numba must
    map when negative keeps the loop from being vectorised).
    """
    F, nb, C = out.shape[1], out.shape[2], out.shape[3]
    width = F * nb * C
    par = parent_hist.reshape(parent_hist.shape[0], width)
    sm = small.reshape(small.shape[0], width)
    dst = out.reshape(out.shape[0], width)
    for j in prange(children.shape[0]):
        c = children[j]
        p = c // 2
        built = (c % 2 == 1) == small_is_right[p]
        q = parent_index[p]
        for f in range(F):
            a = np.uint64(f * nb * C)
            for lo, hi in ((a, a + np.uint64(used[f] * C)), (a + np.uint64((nb - 1) * C), a + np.uint64(nb * C))):
                if built:
                    for x in range(lo, hi):
                        dst[j, x] = sm[p, x]
                else:
                    for x in range(lo, hi):
                        dst[j, x] = par[q, x] - sm[p, x]


_start_rows_serial = serial_twin(_start_rows)
partition_rows_serial = serial_twin(partition_rows)
leaf_pass_serial = serial_twin(leaf_pass)
mark_leaves_serial = serial_twin(mark_leaves)
_siblings_serial = serial_twin(_siblings)


@numba.njit(**_JIT_GROW)
def _active_bins(counts, slots, used):
    """The bins (each feature's ``used[f]`` and the missing one) of the features with entries in the histograms
    ``slots`` (``counts`` of :func:`~.sparse_codes.sparse_histograms`)."""
    total = np.int64(0)
    for q in slots:
        for f in range(counts.shape[1]):
            if counts[q, f] > 0:
                total += used[f] + 1
    return total


@numba.njit(**_JIT_GROW)
def _split_rows(codes_t, last, threaded, order, spare, go, seg_a, seg_b, front, f_feature, f_bin, f_missing_left,
                missing_bin, f_cat, f_cat_left, row_leaf, base, n_threads):
    """A level's rows sent to the children of ``front`` (split by ``f_feature`` ..): the last level's leaves
    written (:func:`leaf_pass`), else the rows partitioned from ``order`` into ``spare``
    (:func:`partition_rows`); on threads where ``threaded``. Returns the left counts."""
    if last and threaded:
        return leaf_pass(codes_t, order, seg_a, seg_b, front, f_feature, f_bin, f_missing_left, missing_bin,
                         f_cat, f_cat_left, row_leaf, base, n_threads)
    if last:
        return leaf_pass_serial(codes_t, order, seg_a, seg_b, front, f_feature, f_bin, f_missing_left,
                                missing_bin, f_cat, f_cat_left, row_leaf, base, np.int64(1))
    if threaded:
        return partition_rows(codes_t, order, spare, go, seg_a, seg_b, front, f_feature, f_bin, f_missing_left,
                              missing_bin, f_cat, f_cat_left)
    return partition_rows_serial(codes_t, order, spare, go, seg_a, seg_b, front, f_feature, f_bin,
                                 f_missing_left, missing_bin, f_cat, f_cat_left)


@numba.njit(**_JIT_GROW)
def threaded_rows(seg_a, seg_b, sel, n_threads):
    """Whether a pass over the rows of the nodes ``sel`` runs on threads (:data:`PARTITION_THREAD_ROWS` rows or
    more), else on its serial twin."""
    rows = 0
    for node in sel:
        rows += seg_b[node] - seg_a[node]
    return n_threads > 1 and rows >= PARTITION_THREAD_ROWS


@numba.njit(**_JIT_GROW)
def _scan_blocks(m, F, work, n_threads):
    """``scan.best_splits``' blocks: one per thread share of the (node, feature) tasks."""
    threads = _workers(work, n_threads)
    return min(m * F, threads * BLOCKS_PER_THREAD) if threads > 1 else 1


@numba.njit(**_JIT_GROW)
def _workers(work, n_threads):
    """``jit.threads_for`` (the thread cap is the caller's): threads with enough work each."""
    return max(1, min(n_threads, work // MIN_WORK_PER_THREAD))


@numba.njit(**_JIT_GROW)
def _scan_nodes(hist, node_stats, cand, first, crit, min_dec, mapper, tie_rtol, n_threads, filled, out, is_cat,
                n_cat_pos, fmask, has_mask):
    """Best splits of the nodes ``cand`` (histograms ``hist``, one per node in order) and whether each is kept.

    ``filled``: the bins a node's scan reads, over all features (each
    feature's value bins and the missing one): its threads are chosen by
    ``len(cand) * filled * Ch * SCAN_WORK_PER_BIN`` (a feature of few values
    is scanned over its few bins, not ``n_bins``).

    Writes the kept nodes' records to ``out`` (feature, bin, missing_left,
    threshold, left (nodes, Ch), is_categorical, cat_left (nodes, bins or 0))
    at the nodes' ids; returns the kept mask (len(cand),). ``is_cat``,
    ``n_cat_pos``: the categorical features, as ``scan.best_splits`` passes them. ``fmask`` (len(cand), F) bool,
    read where ``has_mask``: the features scanned (the others hold no split).
    """
    thresholds, bin_values, is_exact, n_value_bins = mapper
    m, F, _, Ch = hist.shape
    parent = np.empty((m, Ch))
    for i in range(m):
        for c in range(Ch):
            parent[i, c] = node_stats[cand[i], first + c]
    d1 = np.zeros((1, 1))
    n_blocks = _scan_blocks(m, F, m * filled * Ch * SCAN_WORK_PER_BIN, n_threads)
    # np.bool_ flags, not literals: the signature of :func:`scan.best_splits`' call (one compilation for both)
    no, yes = np.bool_(False), np.bool_(True)
    args = (hist, parent, crit, fmask, has_mask, d1, no, np.zeros((1, 1), dtype=np.int64),
            no, d1, d1, no, thresholds, bin_values, is_exact, n_value_bins, yes, no, tie_rtol, n_blocks,
            is_cat, n_cat_pos)
    if n_blocks > 1:
        found, proxy, feature, bin_, missing_left, left, threshold, split_cat, cat_left = scan_nodes_kernel(*args)
    else:
        found, proxy, feature, bin_, missing_left, left, threshold, split_cat, cat_left = scan_nodes_kernel_serial(
            *args)
    o_feature, o_bin, o_missing_left, o_threshold, o_left, o_cat, o_cat_left = out
    l2 = crit[2]
    gi = newton_gradient_channel(crit[0])
    ok = np.zeros(m, dtype=np.bool_)
    for i in range(m):
        if not found[i]:
            continue
        g, h = parent[i, gi], parent[i, gi + 1]
        gl, hl = left[i, gi], left[i, gi + 1]
        imp = newton_improvement(g, h, gl, hl, g - gl, h - hl, l2)
        if newton_accept(imp, proxy[i], min_dec):
            ok[i] = True
            node = cand[i]
            o_feature[node] = feature[i]
            o_bin[node] = bin_[i]
            o_missing_left[node] = missing_left[i]
            o_threshold[node] = threshold[i]
            for c in range(Ch):
                o_left[node, c] = left[i, c]
            o_cat[node] = split_cat[i]
            # a batch's columns (records.category_width): the categories' codes, then the missing bin's
            width = o_cat_left.shape[1]
            for b in range(width - 1):
                o_cat_left[node, b] = cat_left[i, b]
            if width > 0:
                o_cat_left[node, width - 1] = cat_left[i, cat_left.shape[1] - 1]
    return ok


@numba.njit(inline="always")
def _right_children(first_child, depth, n_nodes):
    """Each node's right child (``first_child + 1``; -1 at leaves), (cap,) int64, and the deepest node's depth."""
    right = np.full(first_child.shape[0], -1, dtype=np.int64)
    deepest = 0
    for i in range(n_nodes):
        if first_child[i] >= 0:
            right[i] = first_child[i] + 1
        deepest = max(deepest, depth[i])
    return right, deepest


@numba.njit(**_JIT_GROW)
def _grow(codes, codes_t, sp_ptr, sp_feat, sp_code, sp_default, chan, count_free, n_bins, missing_bin, crit, min_dec,
          max_depth, min_split, mapper, is_cat, n_cat_pos, tie_rtol, n_threads, row_bytes, work, row_leaf, root_sums):
    """The tree's node arrays and every row's leaf (see :func:`grow_tree`).

    ``is_cat`` (F,) bool, ``n_cat_pos``: the categorical features and the
    positions of their sorted categories the scan covers (0: none).

    ``work``: the row and histogram buffers (:class:`_Work`'s arrays, in its
    field order), written before they are read; ``row_leaf`` (n,) int64 out;
    ``root_sums`` (C,) float64, the root's statistics as given, or empty (the
    rows summed in row order). ``sp_ptr`` .. ``sp_default``: the codes off
    their features' defaults (:func:`~.sparse_codes.sparse_layout`), the
    histograms then built from them; empty arrays: the dense histograms.
    """
    order, spare, go, hist_a, hist_b, small_buf, cnt_a, cnt_b, cnt_small = work
    is_sparse = sp_ptr.shape[0] > 0
    n, F = codes.shape
    C = chan.shape[1]
    first = 1 if count_free else 0
    Ch = C - first
    msl, mwl = crit[3], crit[4]
    cap = 2 ** (max_depth + 1)
    parent = np.full(cap, -1, dtype=np.int64)
    depth = np.zeros(cap, dtype=np.int64)
    stats = np.zeros((cap, C))
    first_child = np.full(cap, -1, dtype=np.int64)
    feature = np.full(cap, -2, dtype=np.int64)
    bin_ = np.full(cap, -1, dtype=np.int64)
    missing_left = np.zeros(cap, dtype=np.bool_)
    threshold = np.full(cap, -2.0)
    left = np.zeros((cap, Ch))
    node_cat = np.zeros(cap, dtype=np.bool_)
    # a batch's columns (records.category_width): the categories' codes and the missing bin
    node_cat_left = np.zeros((cap, n_cat_pos + 1 if n_cat_pos > 0 else 0), dtype=np.bool_)
    seg_a = np.zeros(cap, dtype=np.int64)
    seg_b = np.zeros(cap, dtype=np.int64)
    out = (feature, bin_, missing_left, threshold, left, node_cat, node_cat_left)
    if _workers(n, n_threads) > 1:
        _start_rows(order)
    else:
        _start_rows_serial(order)
    empty = np.empty(0)
    seg_b[0] = n
    # the bins a feature's codes can fill besides the missing one: histograms
    # are written (and read by the scan) there only
    n_value_bins = mapper[3]
    used = np.empty(F, dtype=np.int64)
    # (int64 counters, not literals: Numba's typing would also compile the kernels they reach for the
    # literal first value, a signature of its own)
    filled = np.int64(0)  # the bins a node's histograms hold over all features
    for f in range(F):
        used[f] = min(n_bins - 1, n_value_bins[f])
        filled += used[f] + 1
    root = np.zeros(1, dtype=np.int64)
    if root_sums.shape[0] == C:  # the caller's (GrowerInputs.channel_sums)
        for c in range(C):
            stats[0, c] = root_sums[c]
    else:
        # (one slot: one thread sums it either way)
        rs = run_sums_serial(order, empty, empty, 0, chan, seg_a[:1], seg_b[:1])
        for c in range(C):
            stats[0, c] = rs[0, c]
    n_nodes = np.int64(1)
    if not can_split(NEWTON, stats[0], 0, 1, msl, mwl, min_split, max_depth, empty):
        row_leaf[:] = 0
        right, deepest = _right_children(first_child, depth, n_nodes)
        return (n_nodes, parent, depth, stats, first_child, feature, bin_, missing_left, threshold, right, deepest,
                node_cat, node_cat_left)
    # a level's histograms are written over the level before the last
    # (the parents' stay for the subtraction): two buffers in turn
    # (mode an int64, not the literal 0: one signature of the histogram kernels with the level-wise grower's)
    cnt = cnt_a[:1]
    if is_sparse:
        # (one slot: one thread builds it either way)
        sparse_histograms_serial(sp_ptr, sp_feat, sp_code, sp_default, order, seg_a[:1], seg_b[:1], chan, first,
                                 stats[:1, first:], used, cnt, hist_a[:1])
        hist = hist_a[:1]
    else:
        hist = grouped_histograms(codes, order, order, empty, empty, np.int64(0), chan, seg_a[:1], seg_b[:1],
                                  n_bins, _workers(n * F, n_threads), row_bytes, hist_a[:1], first, used, n_threads)
    next_in_b = True
    ok = _scan_nodes(hist, stats, root, first, crit, min_dec, mapper, tie_rtol, n_threads, filled, out, is_cat,
                     n_cat_pos, cnt > 0, np.bool_(is_sparse))
    front = root[ok]
    if front.shape[0] == 0:  # no split kept: every row in the root
        row_leaf[:] = 0
    front_slot = np.zeros(1, dtype=np.int64)[ok]
    while front.shape[0] > 0:
        k = front.shape[0]
        base = n_nodes
        # the last level's children are leaves: their rows' leaves written
        # in one pass, the rows not moved
        last = depth[front[0]] + 1 >= max_depth
        threaded = threaded_rows(seg_a, seg_b, front, n_threads)
        f_feature, f_bin, f_missing_left = feature[front], bin_[front], missing_left[front]
        f_cat, f_cat_left = node_cat[front], node_cat_left[front]
        split = (last, threaded, order, spare, go, seg_a, seg_b, front, f_feature, f_bin, f_missing_left,
                 missing_bin, f_cat, f_cat_left, row_leaf, base, n_threads)
        if is_sparse:
            n_left = _split_rows((sp_ptr, sp_feat, sp_code, sp_default), *split)
        else:
            n_left = _split_rows(codes_t, *split)
        if not last:
            order, spare = spare, order
        can = np.zeros(2 * k, dtype=np.bool_)
        for j in range(k):
            node = front[j]
            lc, rc = base + 2 * j, base + 2 * j + 1
            first_child[node] = lc
            seg_a[lc], seg_b[lc] = seg_a[node], seg_a[node] + n_left[j]
            seg_a[rc], seg_b[rc] = seg_b[lc], seg_b[node]
            for ch in (lc, rc):
                parent[ch] = node
                depth[ch] = depth[node] + 1
            # statistics from the split record: left, and right = node's - left
            # (the count-free record has none: the children's rows counted)
            for c in range(Ch):
                stats[lc, first + c] = left[node, c]
                stats[rc, first + c] = stats[node, first + c] - left[node, c]
            if count_free:
                stats[lc, 0] = seg_b[lc] - seg_a[lc]
                stats[rc, 0] = seg_b[rc] - seg_a[rc]
                # no node had missing values: NaN goes to the child with more rows
                missing_left[node] = stats[lc, 0] > stats[rc, 0]
            can[2 * j] = can_split(NEWTON, stats[lc], depth[lc], 1, msl, mwl, min_split, max_depth, empty)
            can[2 * j + 1] = can_split(NEWTON, stats[rc], depth[rc], 1, msl, mwl, min_split, max_depth, empty)
        n_nodes += 2 * k
        # pairs with a child to split: the smaller child built (the left on a
        # tie), the splittable children by subtraction from the parent's
        n_pairs = 0
        n_can = 0
        for j in range(k):
            if can[2 * j] or can[2 * j + 1]:
                n_pairs += 1
                n_can += int(can[2 * j]) + int(can[2 * j + 1])
        small = np.empty(n_pairs, dtype=np.int64)
        small_is_right = np.empty(n_pairs, dtype=np.bool_)
        parent_index = np.empty(n_pairs, dtype=np.int64)
        children = np.empty(n_can, dtype=np.int64)
        cand = np.empty(n_can, dtype=np.int64)
        p = 0
        q = 0
        built = 0
        for j in range(k):
            if not (can[2 * j] or can[2 * j + 1]):
                continue
            lc = base + 2 * j
            small_is_right[p] = stats[lc + 1, 0] < stats[lc, 0]
            small[p] = lc + 1 if small_is_right[p] else lc
            built += seg_b[small[p]] - seg_a[small[p]]
            parent_index[p] = front_slot[j]
            for side in range(2):
                if can[2 * j + side]:
                    children[q] = 2 * p + side
                    cand[q] = lc + side
                    q += 1
            p += 1
        new_front = np.empty(0, dtype=np.int64)
        new_slot = np.empty(0, dtype=np.int64)
        if n_pairs > 0:
            s_a = seg_a[small]
            for i in range(n_pairs):
                if seg_b[small[i]] == s_a[i]:
                    s_a[i] = -1  # no rows (the kernels' mark of an empty run)
            level = hist_b[:n_can] if next_in_b else hist_a[:n_can]
            if is_sparse:
                level_cnt = cnt_b[:n_can] if next_in_b else cnt_a[:n_can]
                small_hist, small_cnt = small_buf[:n_pairs], cnt_small[:n_pairs]
                totals = np.empty((n_pairs, Ch))
                for i in range(n_pairs):
                    for c in range(Ch):
                        totals[i, c] = stats[small[i], first + c]
                if _workers(built + n_pairs * F, n_threads) > 1 and n_pairs > 1:
                    sparse_histograms(sp_ptr, sp_feat, sp_code, sp_default, order, s_a, seg_b[small], chan, first,
                                      totals, used, small_cnt, small_hist)
                else:
                    sparse_histograms_serial(sp_ptr, sp_feat, sp_code, sp_default, order, s_a, seg_b[small], chan,
                                             first, totals, used, small_cnt, small_hist)
                # threads by the bins of the features with entries, not of all: a parallel region costs
                # more than the few bins of most nodes (and, on busy cores, a time slice of waiting)
                if _workers(2 * _active_bins(cnt, parent_index, used) * Ch, n_threads) > 1:
                    sparse_siblings(hist, cnt, parent_index, small_hist, small_cnt, totals, small_is_right, children,
                                    used, sp_default, level, level_cnt)
                else:
                    sparse_siblings_serial(hist, cnt, parent_index, small_hist, small_cnt, totals, small_is_right,
                                           children, used, sp_default, level, level_cnt)
                cnt = level_cnt
            else:
                small_hist = grouped_histograms(codes, order, order, empty, empty, np.int64(0), chan, s_a,
                                                seg_b[small], n_bins, _workers(built * F, n_threads), row_bytes,
                                                small_buf[:n_pairs], first, used, n_threads)
                if _workers(n_can * filled * Ch, n_threads) > 1:
                    _siblings(hist, parent_index, small_hist, small_is_right, children, level, used)
                else:
                    _siblings_serial(hist, parent_index, small_hist, small_is_right, children, level, used)
            next_in_b = not next_in_b
            hist = level
            scan_bins = filled
            if is_sparse:  # (the bins a node's scan reads on average)
                scan_bins = max(1, _active_bins(cnt, np.arange(n_can), used) // n_can)
            ok = _scan_nodes(hist, stats, cand, first, crit, min_dec, mapper, tie_rtol, n_threads, scan_bins, out,
                             is_cat, n_cat_pos, cnt > 0, np.bool_(is_sparse))
            new_front = cand[ok]
            new_slot = np.arange(n_can, dtype=np.int64)[ok]
        if not last:
            # the children not split further are leaves: their rows' leaf
            # (the last level's were written by its pass)
            is_front = np.zeros(2 * k, dtype=np.bool_)
            for node in new_front:
                is_front[node - base] = True
            leaves = np.empty(2 * k - new_front.shape[0], dtype=np.int64)
            q = 0
            for i in range(2 * k):
                if not is_front[i]:
                    leaves[q] = base + i
                    q += 1
            if threaded_rows(seg_a, seg_b, leaves, n_threads):
                mark_leaves(order, seg_a, seg_b, leaves, row_leaf, n_threads)
            else:
                mark_leaves_serial(order, seg_a, seg_b, leaves, row_leaf, 1)
        front, front_slot = new_front, new_slot
    right, deepest = _right_children(first_child, depth, n_nodes)
    return (n_nodes, parent, depth, stats, first_child, feature, bin_, missing_left, threshold, right, deepest,
            node_cat, node_cat_left)


@dataclass(frozen=True)
class _WorkShape:
    """What a tree's work buffers are sized by: rows, features, bins, histogram channels, depth, and whether the
    histograms are built from sparse entries (their per-feature counts kept)."""

    n: int
    n_features: int
    n_bins: int
    n_channels: int
    max_depth: int
    sparse: bool = False


@dataclass(frozen=True)
class _Work:
    """The buffers :func:`_grow` writes before reading: one tree's, or every tree's of a fit.

    Fresh row buffers fault their pages in for every tree, which can take
    much of a fit's time; inside a fit's workspace the next tree writes the
    same pages.

    Attributes
    ----------
    order, spare : (n,) int64
        The rows grouped by node, and the partition's output.
    go : (n,) bool
        Each row's side in a partition.
    hist_a, hist_b : (2 ** (max_depth - 1), F, n_bins, C) float64
        A level's histograms and its parents', in turn.
    small : (max(1, 2 ** (max_depth - 2)), F, n_bins, C) float64
        The built (smaller) children's histograms of a level.
    cnt_a, cnt_b, cnt_small : int64, the histograms' first two dimensions
        Each histogram's entries per feature (:mod:`.sparse_codes`), (0, 0) without sparse entries.
    """

    order: np.ndarray
    spare: np.ndarray
    go: np.ndarray
    hist_a: np.ndarray
    hist_b: np.ndarray
    small: np.ndarray
    cnt_a: np.ndarray
    cnt_b: np.ndarray
    cnt_small: np.ndarray

    @classmethod
    def new(cls, shape: _WorkShape) -> "_Work":
        n, c = shape.n, shape.n_channels
        per_node = (shape.n_features, shape.n_bins, c)
        # at most 2 ** (max_depth - 1) nodes of a level have histograms (the
        # last level's children are leaves), half of them built
        level = 2 ** (shape.max_depth - 1)
        small = max(1, level // 2)
        f = shape.n_features if shape.sparse else 0
        return cls(
            order=np.empty(n, dtype=np.int64),
            spare=np.empty(n, dtype=np.int64),
            go=np.empty(n, dtype=np.bool_),
            hist_a=np.empty((level,) + per_node),
            hist_b=np.empty((level,) + per_node),
            small=np.empty((small,) + per_node),
            cnt_a=np.empty((level if f else 0, f), dtype=np.int64),
            cnt_b=np.empty((level if f else 0, f), dtype=np.int64),
            cnt_small=np.empty((small if f else 0, f), dtype=np.int64),
        )

    def arrays(self) -> tuple:
        return tuple(getattr(self, f.name) for f in fields(self))


def covered(xp, inputs, params) -> bool:
    """Whether :func:`grow_tree` grows this batch (else the generic grower does)."""
    return _fixed_covered(inputs, params) and round_covered(xp, inputs, params)


def _fixed_covered(inputs, params) -> bool:
    """:func:`covered`'s checks of what a boosting fit keeps for every round: codes, mapper, constraints, parameters."""
    mapper = inputs.bin_mapper
    mono = inputs.monotonic_cst
    if not (
        isinstance(inputs.codes, np.ndarray)
        and (mono is None or not np.any(np.asarray(mono) != 0))
        and has_values(mapper)
        and params.max_depth is not None
        and 1 <= params.max_depth <= MAX_DEPTH
        and params.max_leaf_nodes is None
        and (params.max_features is None or params.max_features >= inputs.codes.shape[1])
        and params.min_weight_leaf > 0
        and not params.local_thresholds
        and not params.sorted_small_nodes
        and inputs.codes.shape[0] > 0
        and inputs.codes.shape[1] > 0
    ):
        return False
    # the generic grower keeps every level's histograms for the subtraction
    # while two levels' fit its memory bound; past it, it builds both children
    # (other sums): not covered
    count_free = _count_free(inputs, params)
    hist_bytes = inputs.codes.shape[1] * mapper.n_bins * (2 if count_free else 3) * 8
    return 2 ** params.max_depth * hist_bytes <= params.memory_limit


def round_covered(xp, inputs, params) -> bool:
    """:func:`covered`'s checks of what changes from round to round: the channels, the draws, the criterion."""
    chan = inputs.channels
    if not (
        isinstance(chan, np.ndarray)
        and chan.ndim in (2, 3)
        and chan.shape[-1] == 3
        and chan.dtype == np.float64
        # given root sums are one tree's (the generic grower refuses them for more)
        and (inputs.channel_sums is None or chan.ndim == 2 or chan.shape[0] == 1)
        and criterion_code(inputs.criterion) == NEWTON
        and inputs.multiplicity is None
        and inputs.weight_multiplicity is None
        and inputs.tree_features is None
        and not inputs.random_splits
        and inputs.record_leaves
    ):
        return False
    # the count-free form takes the children's counts from their rows, which
    # is their count channel's sum only where that channel is 1 on every row
    return not _count_free(inputs, params) or all(
        unit_counts(xp, table, inputs.unit_count_channel) for table in _channel_tables(inputs))


@dataclass(frozen=True)
class _Fixed:
    """What :func:`_grow` reads of a fit's codes, mapper and parameters, made once for all of its rounds.

    Inside a fit's workspace (:func:`kept`) every round's tree reuses it
    instead of checking and converting them again, Python that would
    otherwise run every round.

    Attributes
    ----------
    source : tuple
        The objects whose ids key it (:func:`fixed_inputs`), held so that the ids
        stay theirs while it is kept.
    covered : bool
        :func:`_fixed_covered`.
    codes : (n, F) uint8/uint16, C-contiguous
    codes_t : (F, n), the same dtype, C-contiguous (or ``codes.T``: :func:`~.binning.feature_major_codes`)
    sparse : tuple
        :func:`~.sparse_codes.sparse_layout`'s arrays (made once per codes matrix, :func:`~.sparse_codes.layout_of`:
        the level-wise grower's histograms share them), or four empty ones (the dense histograms).
    mapper_arrays : tuple
        ``mapper_arrays(mapper)``.
    count_free : bool
    categories : tuple
        The categorical features (F,) bool and how many positions of their
        sorted categories the scan covers (``_records.category_positions``; 0
        without categorical features).
    """

    source: tuple
    covered: bool
    codes: np.ndarray
    codes_t: np.ndarray
    sparse: tuple
    mapper_arrays: tuple
    count_free: bool
    categories: tuple

    @classmethod
    def new(cls, inputs, params) -> "_Fixed":
        source = (inputs.codes, inputs.codes_by_feature, inputs.bin_mapper, inputs.monotonic_cst, params)
        if not _fixed_covered(inputs, params):
            return cls(source, False, None, None, (), (), False, ())
        codes = np.ascontiguousarray(inputs.codes)
        codes_t = feature_major_codes(codes, inputs.codes_by_feature)
        mapper = inputs.bin_mapper
        is_cat = np.ascontiguousarray(mapper.is_categorical, dtype=np.bool_)
        n_cat_pos = mapper_category_positions(mapper)
        sparse = layout_of(codes, int(mapper.n_bins))
        if sparse is None:
            sparse = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int32), codes[:0, 0].copy(),
                      np.empty(0, dtype=np.int64))
        return cls(source, True, codes, codes_t, sparse, tuple(mapper_arrays(mapper)),
                   _count_free(inputs, params), (is_cat, n_cat_pos))


def fixed_inputs(inputs, params) -> _Fixed:
    """The fit's :class:`_Fixed`: kept in its workspace under the ids of what it was made from."""
    key = (id(inputs.codes), id(inputs.codes_by_feature), id(inputs.bin_mapper), id(inputs.monotonic_cst), id(params),
           bool(inputs.count_free_histograms))
    return kept("grow_tree_fixed", key, lambda: _Fixed.new(inputs, params))


def _channel_tables(inputs) -> list:
    """The channel table (n, C) of each tree: ``channels`` itself, or each of boosting's (K, n, C)."""
    chan = inputs.channels
    if isinstance(chan, np.ndarray) and chan.ndim == 3:
        return [chan[k] for k in range(chan.shape[0])]
    return [chan]


NO_SUMS = np.empty(0)


def _root_sums(inputs):
    """``inputs.channel_sums`` as a (C,) float64 array for :func:`_grow` (checked as the generic grower checks
    them, :func:`gputrees._rows.given_root_sums`), or an empty one where not given."""
    sums = given_root_sums(np, inputs.channels, inputs.multiplicity, inputs.channel_sums)
    return NO_SUMS if sums is None else np.ascontiguousarray(sums[0])


def _count_free(inputs, params) -> bool:
    """The generic grower's choice of two-channel histograms (``Grower.__init__``), for the covered case."""
    return bool(inputs.count_free_histograms and params.min_samples_leaf <= 1
                and not np.any(inputs.bin_mapper.is_categorical))


def grow_tree(xp, inputs, params, *, n_threads: int = 1):
    """The boosting trees of ``inputs`` grown in one compiled call each, or None where not covered.

    Parameters
    ----------
    xp : array namespace (NumPy)
    inputs : GrowerInputs
        A round's trees: ``channels`` (n, 3) or (K, n, 3) float64 ``[1, g, h]``, ``multiplicity``
        None, the :class:`~gputrees._criteria.Newton` criterion,
        ``record_leaves``. Its ``channel_sums``,
        where given, are the root's statistics (as the generic grower takes them).
    params : GrowerParams
        Depth-wise (``max_leaf_nodes`` None) to a ``max_depth`` of at most
        :data:`MAX_DEPTH`, ``min_weight_leaf > 0``, thresholds at the next
        value bin, no sort-based small-node search, every feature.
    n_threads : int

    Returns
    -------
    TreeBatch or None
        The generic grower's tree (:func:`gputrees._grower.grow`), bit for bit.
    """
    # the round's checks first: they turn away forests and single trees
    # (other criteria, multiplicities) without making a _Fixed for them
    if not round_covered(xp, inputs, params):
        return None
    fixed = fixed_inputs(inputs, params)
    if not fixed.covered:
        return None
    call = TreeCall.new(inputs, params, fixed, n_threads)
    sums = _root_sums(inputs)
    tables = _channel_tables(inputs)
    if len(tables) > 1 and call.threads > 1 and call.n_rows <= SIDE_BY_SIDE_ROWS * call.threads:
        return stack_trees(_side_by_side(inputs, params, fixed, call.threads, tables, sums))
    trees = []
    # a multi-class round's K trees one after the other: each is grown on
    # its own channels from the same rows, as the generic grower grows them
    with Threads(call.threads):
        for table in tables:
            trees.append(_one_tree(call, table, sums))
    return trees[0] if len(trees) == 1 else stack_trees(trees)


#: Cells (rows x features) below which a tree's passes all run on one thread: on
#: an idle machine a second thread gains nothing there, and on busy cores each of
#: its parallel regions (the split scans) can wait a time slice for the other
#: thread, a hundred times the fit's own time (figures: commit 36c4e01)
ONE_THREAD_CELLS = 1 << 16
#: Rows per thread below which a multi-class round grows its K trees side by
#: side, one thread each, rather than each tree on every thread: a small
#: tree's passes are too short to share (most run on their serial twins), so
#: its threads would mostly wait
SIDE_BY_SIDE_ROWS = 1 << 16


def _one_tree(call, table, sums):
    """The tree of one channel table (n, 3) through ``call``, with every row's leaf."""
    row_leaf = np.empty(call.n_rows, dtype=np.int64)
    return tree_batch(call(np.ascontiguousarray(table), row_leaf, sums), row_leaf[None, :])


def _side_by_side(inputs, params, fixed, threads, tables, sums):
    """The trees of ``tables`` grown at once on ``threads`` Python threads, each tree on one (its kernels
    release the GIL), each thread with its own work buffers: the same trees as one after the other.

    The threads are the fit's (kept in its workspace, shut down at its end;
    outside one, the call's):
    threads left running after it, each with its OpenMP pool, made every
    later parallel region of the process wake its workers the slow way (a
    10,000-row regression's 100 rounds after a 5-class fit: 0.05 -> 0.20 s).
    """
    from concurrent.futures import ThreadPoolExecutor

    workers = min(threads, len(tables))
    calls = [TreeCall.new(inputs, params, fixed, 1, slot=i) for i in range(workers)]
    pool = kept("side_by_side", workers,
                lambda: ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gputrees-tree"))

    def grow_share(i):
        return [_one_tree(calls[i], tables[k], sums) for k in range(i, len(tables), workers)]

    try:
        shares = list(pool.map(grow_share, range(workers)))
    finally:
        if not in_workspace():
            pool.shutdown(wait=True)
    return [shares[k % workers][k // workers] for k in range(len(tables))]


@dataclass(frozen=True)
class TreeCall:
    """:func:`_grow`'s arguments of one fit but the round's channels, leaves and root sums.

    :func:`grow_tree` makes one a tree; a fit whose rounds run in few
    compiled calls (:mod:`gputrees.kernels.cpu.boost`) one for all of
    its trees, in its workspace (the work buffers are the workspace's).

    Attributes
    ----------
    head : tuple
        ``codes`` (n, F), ``codes_t`` (F, n) and the sparse entries' four arrays, :class:`_Fixed`'s.
    tail : tuple
        The count-free flag, bins, missing bin, criterion record, minimum
        decrease, depth, minimum split, mapper arrays, tie tolerance,
        threads, row bytes and the :class:`_Work` buffers, in
        :func:`_grow`'s order.
    threads : int
        The threads the call is run under (``Threads``).
    n_rows : int
    """

    head: tuple
    tail: tuple
    threads: int
    n_rows: int

    @classmethod
    def new(cls, inputs, params, fixed: "_Fixed", n_threads: int, slot: int = 0) -> "TreeCall":
        """The call of ``inputs`` (covered: :func:`covered`) under ``fixed`` (``fixed_inputs(inputs, params)``);
        ``slot``: which of the workspace's work buffers (one per tree grown at the same time)."""
        codes = fixed.codes
        mapper = inputs.bin_mapper
        count_free = fixed.count_free
        crit = (
            NEWTON_GH if count_free else NEWTON,
            1,
            float(inputs.criterion.l2),
            float(params.min_samples_leaf),
            float(params.min_weight_leaf),
        )
        threads = max(1, min(int(n_threads), numba.config.NUMBA_NUM_THREADS))
        n, n_features = codes.shape
        shape = _WorkShape(n, n_features, int(mapper.n_bins), 2 if count_free else 3, int(params.max_depth),
                           fixed.sparse[0].shape[0] > 0)
        # inside a fit's workspace (Kernels.workspace) every tree reuses the buffers
        work = kept("grow_tree", (shape, slot), lambda: _Work.new(shape))
        tail = (
            count_free, int(mapper.n_bins), int(mapper.missing_bin), crit, float(params.min_impurity_decrease),
            int(params.max_depth), float(params.min_samples_split), fixed.mapper_arrays, *fixed.categories,
            TIE_RTOL, 1 if n * n_features < ONE_THREAD_CELLS else threads,
            row_bytes(codes, 3), work.arrays(),  # (each row's (n, 3) channels read with its codes)
        )
        return cls((codes, fixed.codes_t, *fixed.sparse), tail, threads, int(n))

    def __call__(self, chan, row_leaf, root_sums):
        """:func:`_grow` on ``chan`` (n, 3) float64, C-contiguous; ``row_leaf`` (n,) int64 out; ``root_sums``
        (3,) float64 or empty. Returns its results (run it under ``Threads(self.threads)``)."""
        return _grow(*self.head, chan, *self.tail, row_leaf, root_sums)


#: What a batch holds past a tree's last node, per field (the generic grower's padding).
PADDING = dict(left=-1, right=-1, feature=-2, bin=-1, missing_left=False, is_categorical=False, cat_left=False,
               threshold=-2.0, stats=0.0, depth=0)


def stack_trees(trees):
    """One :class:`~gputrees._records.TreeBatch` of several one-tree batches, each padded to the largest."""
    width = max(int(t.node_count[0]) for t in trees)

    def stacked(name):
        # one array filled with the padding, each tree's nodes copied in (a round of several trees stacks
        # ten fields: per-tree pads, concatenations and a stack cost a tenth of a small multi-class fit)
        first = getattr(trees[0], name)
        out = np.full((len(trees), width) + first.shape[2:], PADDING[name], dtype=first.dtype)
        for i, t in enumerate(trees):
            a = getattr(t, name)[0]
            out[i, : a.shape[0]] = a
        return out

    return TreeBatch(
        node_count=np.concatenate([t.node_count for t in trees]),
        **{name: stacked(name) for name in PADDING},
        max_depth=max(t.max_depth for t in trees),
        row_leaf=None if trees[0].row_leaf is None else np.concatenate([t.row_leaf for t in trees]),
    )


def tree_batch(out, row_leaf):
    """The :class:`~gputrees._records.TreeBatch` of :func:`_grow`'s results ``out`` (one tree).

    ``row_leaf``: (1, n) int64, every row's leaf, or None (not kept).
    """
    (n_nodes, parent, depth, stats, first_child, feature, bin_, missing_left, threshold, right, deepest, node_cat,
     node_cat_left) = out
    k = int(n_nodes)
    return TreeBatch(
        node_count=np.array([k], dtype=np.int64),
        left=first_child[None, :k],
        right=right[None, :k],
        feature=feature[None, :k],
        bin=bin_[None, :k],
        missing_left=missing_left[None, :k],
        is_categorical=node_cat[None, :k],
        cat_left=node_cat_left[None, :k],
        threshold=threshold[None, :k],
        stats=stats[None, :k],
        depth=depth[None, :k],
        max_depth=int(deepest),
        row_leaf=row_leaf,
    )
