"""Routing: each pair of a split node sent to its child, stably, with the children's channel sums.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ..._records import ActiveRows
from ..reference import children_slot_table
from .binning import codes_by_feature
from .buffers import pair_buffer, zeros2
from .jit import JIT, Threads, n_cuts, share_of, threads_for
from .memory import PREFETCH_AHEAD, SPARSE_GAP_BYTES, as_int64, prefetch, row_bytes
from .pairs import add_sums, node_sums, sorted_bounds

#: A pair's routing (its side, its place, its child's sums) in units of
#: MIN_WORK_PER_THREAD's updates: a pair takes several updates' time, and
#: counted as one update a small data set's levels would stay on one thread.
ROUTE_UPDATES_PER_PAIR = 8


@numba.njit(inline="always")
def _goes_left(codes, r, s, feature, bin_, missing_left, is_cat, cat_left, any_cat, missing_bin):
    """Whether row ``r`` goes to the left child of split slot ``s``."""
    code = codes[r, feature[s]]
    if code == missing_bin:
        return missing_left[s]
    if any_cat and is_cat[s]:
        return cat_left[s, code]
    return code <= bin_[s]


@numba.njit(inline="always")
def _child(codes, r, s, feature, bin_, missing_left, is_cat, cat_left, any_cat, first_child, missing_bin):
    """Node id of the child of split slot ``s`` that row ``r`` goes to."""
    left = _goes_left(codes, r, s, feature, bin_, missing_left, is_cat, cat_left, any_cat, missing_bin)
    return first_child + 2 * s + (0 if left else 1)


@numba.njit(parallel=True, **JIT)
def _route_group(
    codes, row, chan_index, node, key, mult, wmult, slot_of_node, feature, bin_, missing_left, is_cat, cat_left,
    first_child, missing_bin, n_ids, n_chunks, sparse, outs,
):
    """Route every pair and regroup the pairs by node id, stably, in one pass.

    A parallel counting sort: chunk ``c`` of the pairs counts its pairs per
    node id, an exclusive prefix over (node id, chunk) gives every chunk its
    first position in each node's run, and each chunk writes its pairs there
    in order. Empty ``chan_index`` / ``key`` / ``mult`` / ``wmult`` stand for
    "the same as ``row``" (the first two) or None (the others). ``outs``: the
    routed arrays to write (:func:`_routed_arrays`), returned.
    """
    m = row.shape[0]
    any_cat = cat_left.shape[1] > 0
    new_node = np.empty(m, dtype=np.int64)
    # each chunk's counters on cache lines of their own (8 int64 = 64 bytes of
    # padding): chunks updating one shared line slow each other down
    count = np.zeros((n_chunks, n_ids + 8), dtype=np.int64)
    for c in prange(n_chunks):
        i0 = c * m // n_chunks
        i1 = (c + 1) * m // n_chunks
        for i in range(i0, i1):
            if sparse and i + PREFETCH_AHEAD < i1:
                prefetch(codes, row[i + PREFETCH_AHEAD])
            s = slot_of_node[node[i]]
            nd = node[i]
            if s >= 0:
                nd = _child(codes, row[i], s, feature, bin_, missing_left, is_cat, cat_left, any_cat,
                            first_child, missing_bin)
            new_node[i] = nd
            count[c, nd] += 1
    total = 0
    for k in range(n_ids):
        for c in range(n_chunks):
            here = count[c, k]
            count[c, k] = total
            total += here
    row_o, ci_o, node_o, key_o, mult_o, wmult_o = outs
    for c in prange(n_chunks):
        i0 = c * m // n_chunks
        i1 = (c + 1) * m // n_chunks
        for i in range(i0, i1):
            nd = new_node[i]
            p = count[c, nd]
            count[c, nd] = p + 1
            _put(row_o, ci_o, node_o, key_o, mult_o, wmult_o, p, nd, row, chan_index, key, mult, wmult, i)
    return row_o, ci_o, node_o, key_o, mult_o, wmult_o


def _routed_arrays(m, chan_index, key, mult, wmult):
    """The routing's outputs (row, chan_index, node, key, mult, wmult): empty where the input is.

    Inside :func:`workspace`, views of buffers reused once nobody holds them
    (a forest's levels each route millions of pairs, and new arrays would
    fault their pages in at every level).
    """
    def out(size, dtype):
        return pair_buffer(size).view(dtype)

    return (
        out(m, np.int64),
        out(m if chan_index.shape[0] else 0, np.int64),
        out(m, np.int64),
        out(m if key.shape[0] else 0, np.int64),
        out(m if mult.shape[0] else 0, np.float64),
        out(m if wmult.shape[0] else 0, np.float64),
    )


@numba.njit(inline="always")
def _put(row_o, ci_o, node_o, key_o, mult_o, wmult_o, p, nd, row, chan_index, key, mult, wmult, i):
    """Pair ``i`` to place ``p`` of the routed arrays, in node ``nd`` (empty arrays are skipped)."""
    row_o[p] = row[i]
    node_o[p] = nd
    if ci_o.shape[0]:
        ci_o[p] = chan_index[i]
    if key_o.shape[0]:
        key_o[p] = key[i]
    if mult_o.shape[0]:
        mult_o[p] = mult[i]
    if wmult_o.shape[0]:
        wmult_o[p] = wmult[i]


# The sequential steps of _route_runs are functions of their own: compiled
# without parallel=True, their array allocations stay plain loops (inside a
# parallel function every np.zeros / np.full is a parallel region of its own,
# and each region waits for every thread: a time slice per region when the
# cores are shared).
@numba.njit(**JIT)
def _route_plan(bounds, slot_of_node, n_slots, m, n_workers):
    """Pieces of the node runs cut at the workers' shares (worker ``w``: positions ``w m / n_workers`` on).

    Returns (node, start, end) of every piece in position order, each
    worker's first piece (n_workers + 1), whether each split slot's run is
    one piece (``whole``), and that piece (or -1).
    """
    n_in = bounds.shape[0] - 1
    n_pieces = 0
    for k in range(n_in):
        n_pieces += n_cuts(bounds[k], bounds[k + 1], m, n_workers)
    p_node = np.empty(n_pieces, dtype=np.int64)
    p_a = np.empty(n_pieces, dtype=np.int64)
    p_b = np.empty(n_pieces, dtype=np.int64)
    whole = np.ones(n_slots, dtype=np.bool_)
    piece_of_slot = np.full(n_slots, -1, dtype=np.int64)
    first = np.zeros(n_workers + 1, dtype=np.int64)
    j = 0
    for k in range(n_in):
        s = slot_of_node[k] if k < slot_of_node.shape[0] else -1
        a = bounds[k]
        while a < bounds[k + 1]:
            w = share_of(a, m, n_workers)
            b = min((w + 1) * m // n_workers, bounds[k + 1])
            p_node[j] = k
            p_a[j] = a
            p_b[j] = b
            first[w + 1] = j + 1
            if s >= 0:
                piece_of_slot[s] = j
                if b - a < bounds[k + 1] - bounds[k]:
                    whole[s] = False
            a = b
            j += 1
    for w in range(n_workers):
        first[w + 1] = max(first[w + 1], first[w])
    return p_node, p_a, p_b, first, whole, piece_of_slot


@numba.njit(**JIT)
def _route_places(p_node, p_a, p_b, n_left, slot_of_node, first_child, n_ids):
    """Where every piece's pairs go: node ids in order, each id's pieces in position order.

    Returns the new bounds (n_ids + 1) and each piece's first place on the
    left (or, for a node not split, its only) side and on the right side.
    """
    n_pieces = p_node.shape[0]
    count = np.zeros(n_ids, dtype=np.int64)
    for j in range(n_pieces):
        k = p_node[j]
        s = slot_of_node[k] if k < slot_of_node.shape[0] else -1
        if s < 0:
            count[k] += p_b[j] - p_a[j]
        else:
            count[first_child + 2 * s] += n_left[j]
            count[first_child + 2 * s + 1] += p_b[j] - p_a[j] - n_left[j]
    out_bounds = np.zeros(n_ids + 1, dtype=np.int64)
    for k in range(n_ids):
        out_bounds[k + 1] = out_bounds[k] + count[k]
    cursor = out_bounds[:n_ids].copy()
    pos_l = np.zeros(n_pieces, dtype=np.int64)
    pos_r = np.zeros(n_pieces, dtype=np.int64)
    for j in range(n_pieces):
        k = p_node[j]
        s = slot_of_node[k] if k < slot_of_node.shape[0] else -1
        if s < 0:
            pos_l[j] = cursor[k]
            cursor[k] += p_b[j] - p_a[j]
        else:
            lft = first_child + 2 * s
            pos_l[j] = cursor[lft]
            cursor[lft] += n_left[j]
            pos_r[j] = cursor[lft + 1]
            cursor[lft + 1] += p_b[j] - p_a[j] - n_left[j]
    return out_bounds, pos_l, pos_r


# The per-piece loops of _route_runs are plain (not parallel) functions called
# from its prange bodies, with the split's fields read once per piece: Numba
# lowers the same loops written inside the prange body, through inlined
# helpers, to much slower code (bench/results/HISTORY.md, "Fourth pass: fitting").
@numba.njit(**JIT)
def _mark_sides(col, row, a, b, bin_s, missing_left_s, is_cat_s, cat_row, missing_bin, go):
    """``go[a:b]``: whether each pair goes left; returns how many do.

    ``col`` (n,) is the split feature's codes (a row of the feature-major
    matrix), ``cat_row`` the categories sent left when ``is_cat_s``.
    """
    n_left = 0
    if is_cat_s:
        for i in range(a, b):
            code = col[row[i]]
            left = missing_left_s if code == missing_bin else cat_row[code]
            go[i] = left
            n_left += np.int64(left)
        return n_left
    for i in range(a, b):
        code = col[row[i]]
        left = missing_left_s if code == missing_bin else code <= bin_s
        go[i] = left
        n_left += np.int64(left)
    return n_left


@numba.njit(**JIT)
def _note_children(child_of, cidx, go, a, b, run_start, t):
    """``child_of[cidx[i]] = t`` (left) or ``t + 1`` (right) for pairs ``a:b``; whether their rows increase.

    The channel rows of the node's run (which starts at ``run_start``) must
    increase for a sum over the channel table in order to add each child's
    pairs in their order.
    """
    ok = True
    prev = cidx[a - 1] if a > run_start else -1
    for i in range(a, b):
        ci = cidx[i]
        ok &= ci > prev
        child_of[ci] = t + 1 - np.int32(go[i])
        prev = ci
    return ok


@numba.njit(**JIT)
def _sum_in_table_order(child_of, chan, sums):
    """``sums[t] += chan[r]`` for every channel row ``r`` of child ``t = child_of[r]`` (-1: none), in row order.

    One sequential pass over the channel table (instead of gathering each
    pair's row): each child's rows are added in increasing order, which is
    its pairs' order when :func:`_note_children` allowed it. Returns how
    many rows were added (fewer than the pairs noted when two pairs share a
    channel row: the sums are then not the pairs').
    """
    n_channels = chan.shape[1]
    n = 0
    if n_channels == 3:  # boosting: unrolled, twice as fast
        for r in range(child_of.shape[0]):
            t = child_of[r]
            if t >= 0:
                n += 1
                sums[t, 0] += chan[r, 0]
                sums[t, 1] += chan[r, 1]
                sums[t, 2] += chan[r, 2]
        return n
    for r in range(child_of.shape[0]):
        t = child_of[r]
        if t >= 0:
            n += 1
            for c in range(n_channels):
                sums[t, c] += chan[r, c]
    return n


@numba.njit(**JIT)
def _sum_sides(psum, t, go, a, b, chan, cidx, mult, wmult, mode):
    """Add the channels of pairs ``a:b`` to ``psum[t]`` (left) or ``psum[t + 1]`` (right), in pair order.

    The channel rows are prefetched when they lie far apart (a deep node's
    pairs); three channels without multiplicities (boosting) unrolled.
    """
    row_bytes = chan.shape[1] * 8
    sparse = b > a and (abs(cidx[b - 1] - cidx[a]) + 1) * row_bytes > SPARSE_GAP_BYTES * (b - a)
    stop = b - PREFETCH_AHEAD
    if mode == 0 and chan.shape[1] == 3:
        for i in range(a, b):
            if sparse and i < stop:
                prefetch(chan, cidx[i + PREFETCH_AHEAD])
            u = t + 1 - np.int64(go[i])
            ci = cidx[i]
            psum[u, 0] += chan[ci, 0]
            psum[u, 1] += chan[ci, 1]
            psum[u, 2] += chan[ci, 2]
        return
    for i in range(a, b):
        if sparse and i < stop:
            prefetch(chan, cidx[i + PREFETCH_AHEAD])
        add_sums(psum, t + 1 - np.int64(go[i]), chan, cidx[i], i, mult, wmult, mode)


@numba.njit(**JIT)
def _place_pairs(go, a, b, pl, pr, left_id, row, chan_index, key, mult, wmult,
                 row_o, ci_o, node_o, key_o, mult_o, wmult_o):
    """Write pairs ``a:b`` to the left side from ``pl`` or the right side from ``pr``, each side in order.

    An empty ``go`` sends every pair to ``pl``, in node ``left_id`` (a node
    not split). Empty input arrays are not written.
    """
    unsplit = go.shape[0] == 0
    extra = ci_o.shape[0] > 0 or key_o.shape[0] > 0 or mult_o.shape[0] > 0 or wmult_o.shape[0] > 0
    for i in range(a, b):
        # selects, not branches: the side is a coin toss per pair
        g = np.int64(1) if unsplit else np.int64(go[i])
        p = pr + (pl - pr) * g
        pl += g
        pr += 1 - g
        if extra:  # _put writes the row and node too
            _put(row_o, ci_o, node_o, key_o, mult_o, wmult_o, p, left_id + 1 - g, row, chan_index, key, mult, wmult,
                 i)
        else:
            row_o[p] = row[i]
            node_o[p] = left_id + 1 - g


@numba.njit(**JIT)
def _place_share(w, places):
    """Pass 2 of :func:`_route_runs` for worker ``w``'s share of the pieces: each piece's pairs to their places."""
    (first, p_node, p_a, p_b, slot_of_node, pos_l, pos_r, first_child, go, row, chan_index, key, mult, wmult,
     row_o, ci_o, node_o, key_o, mult_o, wmult_o) = places
    for j in range(first[w], first[w + 1]):
        k = p_node[j]
        s = slot_of_node[k] if k < slot_of_node.shape[0] else -1
        a = p_a[j]
        b = p_b[j]
        if s < 0:
            _place_pairs(go[:0], a, b, pos_l[j], pos_l[j], k, row, chan_index, key, mult, wmult,
                         row_o, ci_o, node_o, key_o, mult_o, wmult_o)
        else:
            _place_pairs(go, a, b, pos_l[j], pos_r[j], first_child + 2 * s, row, chan_index, key, mult, wmult,
                         row_o, ci_o, node_o, key_o, mult_o, wmult_o)


@numba.njit(parallel=True, **JIT)
def _route_runs(
    codes_t, row, chan_index, node, key, mult, wmult, mode, chan, bounds, slot_of_node, feature, bin_, missing_left,
    is_cat, cat_left, first_child, missing_bin, n_ids, n_workers, with_sums, child_of, outs,
):
    """Route pairs sorted by node id (``bounds``) and keep them sorted, stably; optionally sum the children.

    Worker ``w`` takes the positions ``w m / n_workers`` to
    ``(w + 1) m / n_workers``, as pieces of node runs (a run crossing a
    share's end is cut there, :func:`_route_plan`). Pass 1 marks every pair
    of a split node left or right and counts each piece's left pairs; with
    ``with_sums`` it also sums each child's channels, in row order, over a
    piece that is a whole node (the sums :func:`_run_sums` makes over the
    child's run). Then :func:`_route_places` places every piece, and pass 2
    writes the pairs. The children of cut nodes (only the first levels are
    cut) are summed over their runs afterwards.

    ``codes_t`` is the binned matrix feature-major, (n_features, n): a pass
    reads one feature's codes, 1 byte a row, not a cache line a row.
    ``child_of`` (n_chan_rows,) int32 of -1, or empty: when given (pairs
    without multiplicities, most rows active), pass 1 notes each channel
    row's child and the sums are one sequential pass over the channel table
    (:func:`_sum_in_table_order`; 4x faster than gathering a deep level's
    scattered rows) if every node's channel rows increase, as the grower's
    do; otherwise the pairs' rows are gathered. With several workers that
    pass is one task of pass 2 (it reads only pass 1's notes) while the
    others place the pairs, so that the sums and the placing overlap.
    Empty ``chan_index`` / ``key`` / ``mult`` / ``wmult`` stand for "the same
    as ``row``" (the first two) or None (the others). ``outs``: the routed
    arrays to write (:func:`_routed_arrays`). Returns the routed arrays, the
    new ``bounds`` (n_ids + 1) and the sums (2 n_slots, C + 8; the first C
    columns) of the children ``first_child + t`` (zeros without
    ``with_sums``).
    """
    m = row.shape[0]
    n_slots = feature.shape[0]
    n_channels = chan.shape[1]
    any_cat = cat_left.shape[1] > 0
    cidx = chan_index if chan_index.shape[0] else row
    p_node, p_a, p_b, first, whole, piece_of_slot = _route_plan(bounds, slot_of_node, n_slots, m, n_workers)
    n_pieces = p_node.shape[0]
    # pass 1: directions and left counts (and each channel row's child)
    go = np.empty(m, dtype=np.bool_)
    n_left = np.empty(n_pieces, dtype=np.int64)
    in_order = child_of.shape[0] > 0 and with_sums and mode == 0
    ok = np.ones(n_workers, dtype=np.bool_)
    for w in prange(n_workers):
        for j in range(first[w], first[w + 1]):
            k = p_node[j]
            s = slot_of_node[k] if k < slot_of_node.shape[0] else -1
            if s < 0:
                continue
            a = p_a[j]
            b = p_b[j]
            n_left[j] = _mark_sides(codes_t[feature[s]], row, a, b, bin_[s], missing_left[s], any_cat and is_cat[s],
                                    cat_left[s], missing_bin, go)
            if in_order and not _note_children(child_of, cidx, go, a, b, bounds[k], 2 * s):
                ok[w] = False
    sums = zeros2(2 * n_slots, n_channels + 8)
    in_order = in_order and ok.all()
    n_split = 0
    if in_order:
        for j in range(n_pieces):
            k = p_node[j]
            if k < slot_of_node.shape[0] and slot_of_node[k] >= 0:
                n_split += p_b[j] - p_a[j]
    out_bounds, pos_l, pos_r = _route_places(p_node, p_a, p_b, n_left, slot_of_node, first_child, n_ids)
    # pass 2: the pairs to their places. The in-order sums read only pass 1's
    # notes: with several workers one task makes them while the others place
    # the pairs (the sums are one thread's pass in any case: overlapped, not
    # waited for)
    row_o, ci_o, node_o, key_o, mult_o, wmult_o = outs
    added = np.zeros(1, dtype=np.int64)
    places = (first, p_node, p_a, p_b, slot_of_node, pos_l, pos_r, first_child, go, row, chan_index, key, mult, wmult,
              row_o, ci_o, node_o, key_o, mult_o, wmult_o)
    # task 0 makes the sums; the shares go to the tasks after it, or to
    # every task (task 0 too, after its sums) when it is the only one or
    # there are no sums to make
    first_placer = 1 if in_order and n_workers > 1 else 0
    n_placers = n_workers - first_placer
    for task in prange(n_workers):
        if in_order and task == 0:
            added[0] = _sum_in_table_order(child_of, chan, sums)
        if task >= first_placer:
            for w in range(task - first_placer, n_workers, n_placers):
                _place_share(w, places)
    if in_order and added[0] != n_split:
        in_order = False
        sums[:] = 0.0
    # otherwise the sums of whole nodes' children by piece (rows 2 j, 2 j + 1
    # of piece j; 8 float64 of padding between pieces)
    gather = with_sums and not in_order
    psum = zeros2(n_pieces * 2 if gather else 0, n_channels + 8)
    if gather:
        for w in prange(n_workers):
            for j in range(first[w], first[w + 1]):
                k = p_node[j]
                s = slot_of_node[k] if k < slot_of_node.shape[0] else -1
                if s >= 0:
                    _sum_sides(psum, 2 * j, go, p_a[j], p_b[j], chan, cidx, mult, wmult, mode)
    if gather:
        cio = ci_o if ci_o.shape[0] else row_o
        for s in range(n_slots):
            j = piece_of_slot[s]
            if whole[s] and j >= 0:
                for c in range(n_channels):
                    sums[2 * s, c] = psum[2 * j, c]
                    sums[2 * s + 1, c] = psum[2 * j + 1, c]
        # children of cut nodes (the first levels only: no parallel region
        # otherwise): one thread each, over its run, in row order
        if not whole.all():
            for t in prange(2 * n_slots):
                if not whole[t // 2]:
                    nd = first_child + t
                    for i in range(out_bounds[nd], out_bounds[nd + 1]):
                        add_sums(sums, t, chan, cio[i], i, mult_o, wmult_o, mode)
    return row_o, ci_o, node_o, key_o, mult_o, wmult_o, out_bounds, sums


def route_rows(xp, codes, active, slot_of_node, split, first_child: int, missing_bin: int, *, n_threads: int = 1,
               codes_by_feature=None):
    """Same contract as :func:`gputrees.kernels.reference.route_rows`; the pairs come back sorted by node id.

    Pairs sorted by node id on input (the grower's, whose ``bounds`` the
    previous routing gave): one compiled pass per node run
    (:func:`_route_runs`); otherwise a stable counting sort by node id
    (:func:`_route_group`). Either way each node's pairs keep their relative
    order (and row-order sums stay the same), and arrays that are the same
    object on input (``chan_index`` or ``key`` being ``row``) are the same
    object on output. ``codes_by_feature``: the same codes feature-major,
    (n_features, n) C-contiguous (:func:`codes_by_feature`), which the pass
    over sorted pairs reads; made here when not given.
    """
    return _route(codes, codes_by_feature, active, None, slot_of_node, split, first_child, missing_bin, n_threads)[0]


def route_and_sum(xp, codes, active, chan, slot_of_node, split, first_child: int, missing_bin: int, *,
                  n_threads: int = 1, codes_by_feature=None):
    """Same contract as :func:`gputrees.kernels.reference.route_and_sum`: the children summed while routing.

    With pairs sorted by node id, the routing pass sums each child's
    channels in row order by one thread, as :func:`node_sums` does over the
    child's run (bit for bit); otherwise :func:`node_sums` after routing.
    """
    routed, sums = _route(codes, codes_by_feature, active, chan, slot_of_node, split, first_child, missing_bin,
                          n_threads)
    if sums is None:
        table, k2 = _children_table(slot_of_node, split, first_child)
        sums = node_sums(xp, routed, chan, table, k2, n_threads=n_threads)
    return routed, sums


def _children_table(slot_of_node, split, first_child):
    """Slot table of the children of a routing (child ``first_child + t`` in slot ``t``), and its size."""
    k2 = 2 * int(split.feature.shape[0])
    n_ids = max(int(slot_of_node.shape[0]), int(first_child) + k2)
    return children_slot_table(np, n_ids, first_child, k2), k2


#: The children's sums are made by one pass over the whole channel table
#: when the pairs fill at least 1 / IN_ORDER_SUMS_FILL of it: the pass reads
#: every table row, gathering reads only the pairs' (each a cache miss when
#: they lie far apart, about 4x the cost of a sequential row).
IN_ORDER_SUMS_FILL = 4


def _route(codes, codes_t, active, chan, slot_of_node, split, first_child, missing_bin, n_threads):
    """(routed ActiveRows, children's sums or None); sums asked for when ``chan`` is given."""
    row = as_int64(active.row)
    node = as_int64(active.node)
    table = as_int64(slot_of_node)
    m = int(row.shape[0])
    n_slots = int(split.feature.shape[0])
    n_ids = max(int(table.shape[0]), int(first_child) + 2 * n_slots)
    empty_i, empty_f = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)

    def own(a, empty, dtype):
        """``a`` as a contiguous array, or ``empty`` when it is None or ``row`` itself."""
        if a is None or a is active.row:
            return empty
        return np.ascontiguousarray(a, dtype=dtype)

    split_args = (
        as_int64(split.feature), as_int64(split.bin), np.ascontiguousarray(split.missing_left, dtype=np.bool_),
        np.ascontiguousarray(split.is_categorical, dtype=np.bool_),
        np.ascontiguousarray(split.cat_left, dtype=np.bool_),
    )
    ci, key = own(active.chan_index, empty_i, np.int64), own(active.key, empty_i, np.int64)
    mult, wmult = own(active.mult, empty_f, np.float64), own(active.wmult, empty_f, np.float64)
    bounds, ok = (as_int64(active.bounds), True) if active.bounds is not None else sorted_bounds(node, n_ids)
    threads = threads_for(n_threads, m * ROUTE_UPDATES_PER_PAIR)
    sums = out_bounds = None
    with Threads(threads):
        if ok:
            mode = 0 if active.mult is None else (1 if active.wmult is None else 2)
            chan_a = np.zeros((1, 1)) if chan is None else np.ascontiguousarray(chan, dtype=np.float64)
            if codes_t is None:
                codes_t = codes_by_feature(np, codes)
            # most channel rows in play, no multiplicities: the children's
            # sums by one pass over the channel table (see _route_runs)
            dense = chan is not None and mode == 0 and IN_ORDER_SUMS_FILL * m >= chan_a.shape[0]
            child_of = np.full(chan_a.shape[0] if dense else 0, -1, dtype=np.int32)
            row_o, ci_o, node_o, key_o, mult_o, wmult_o, out_bounds, padded = _route_runs(
                codes_t, row, ci, node, key, mult, wmult, mode, chan_a, bounds, table, *split_args,
                int(first_child), int(missing_bin), max(n_ids, int(bounds.shape[0]) - 1), threads,
                chan is not None, child_of, _routed_arrays(m, ci, key, mult, wmult),
            )
            if chan is not None:
                sums = np.ascontiguousarray(padded[:, : chan_a.shape[1]])
        else:
            # mean distance between consecutive rows of a node being split
            sparse = int(codes.shape[0]) * max(n_slots, 1) * row_bytes(codes) > SPARSE_GAP_BYTES * max(m, 1)
            row_o, ci_o, node_o, key_o, mult_o, wmult_o = _route_group(
                codes, row, ci, node, key, mult, wmult, table, *split_args,
                int(first_child), int(missing_bin), n_ids, threads, sparse, _routed_arrays(m, ci, key, mult, wmult),
            )

    def back(a, out):
        if a is None:
            return None
        return row_o if a is active.row else out

    routed = ActiveRows(
        row=row_o, chan_index=back(active.chan_index, ci_o), node=node_o,
        mult=back(active.mult, mult_o), wmult=back(active.wmult, wmult_o), key=back(active.key, key_o),
        bounds=out_bounds,
    )
    return routed, sums
