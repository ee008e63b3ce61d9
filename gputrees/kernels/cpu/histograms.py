"""Histograms of nodes: every (node, feature, bin) sum of the pairs' channels, and siblings by subtraction.

Rows are grouped by node (:mod:`gputrees.kernels.cpu.pairs`); a node's
histogram is built from its run of pairs in pair order (so sums do not
depend on the threads), split over threads by features or by blocks of
rows merged in order (:func:`grouped_histograms`); the larger child of a
pair is its parent's histogram minus the smaller's
(:func:`sibling_histograms`).
"""

from __future__ import annotations

import functools

import numba
import numpy as np
from numba import prange

from ..._records import ActiveRows
from .buffers import output_buffer
from .. import reference
from .jit import JIT, Threads, serial_twin, share_of, threads_for
from .memory import (
    PREFETCH_AHEAD,
    add2,
    add3,
    add4,
    as_int64,
    at,
    at1,
    prefetch,
    row_bytes,
    sparse_rows,
)
from .pairs import add_row, channel_table, node_runs, pair_multiplicities, pair_weight
from .sparse_codes import layout_of, pair_histograms

#: ``pair_histograms``' features argument for every feature
EVERY_FEATURE = np.empty((1, 0), dtype=np.int64)


# -- histograms ---------------------------------------------------------------
def build_histograms(xp, codes, rows, node, weights, n_nodes: int, n_bins: int, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels.reference.build_histograms`.

    Sums run in row order inside each (node, feature, bin): equal to the
    reference exactly for integer-valued channels, to float rounding otherwise,
    and to the bincount kernel bit for bit. Runs :func:`node_histograms` with
    one channel row per input row and the identity slot table.
    """
    m = int(rows.shape[0])
    active = ActiveRows(row=rows, chan_index=np.arange(m, dtype=np.int64), node=node)
    table = np.arange(int(n_nodes), dtype=np.int64)
    return node_histograms(xp, codes, active, weights, table, n_nodes, n_bins, n_threads=n_threads)


@numba.njit(**JIT)
def _consecutive(a, i0, i1):
    """Whether ``a[i0:i1]`` is ``a[i0], a[i0] + 1, ...`` (a non-empty run; the ends are tested first)."""
    if i1 <= i0 or a[i1 - 1] - a[i0] != i1 - 1 - i0:
        return False
    for i in range(i0 + 1, i1):
        if a[i] != a[i - 1] + 1:
            return False
    return True


@numba.njit(inline="always")
def _prefetch_pair(codes, chan, r, ci):
    """Prefetch row ``r`` of the codes and row ``ci`` of the channels."""
    prefetch(codes, r)
    prefetch(chan, ci)


# Two channels and three, without multiplicities: a row's channels are read
# once and added to each feature's bin as one vector. Consecutive rows and
# channel rows (a root: every row, in order) are read without the two index
# loads a pair; scattered ones are prefetched (``prefetch``) when far apart.
# Two functions, not one: a tuple's length (the vector's width) is its type.
@numba.njit(**JIT)
def _vector_rows2(out, s, codes, row, chan_index, i0, i1, f0, f1, chan, prefetch, first):
    """Pairs ``i0:i1``, channels ``first, first + 1``, into slot ``s``'s histogram, features ``f0:f1``."""
    if _consecutive(row, i0, i1) and _consecutive(chan_index, i0, i1):
        r0, c0 = row[i0] - i0, chan_index[i0] - i0
        for i in range(i0, i1):
            r = r0 + i
            ci = c0 + i
            w = (at(chan, ci, first), at(chan, ci, first + 1))
            for f in range(f0, f1):
                add2(out, s, f, at(codes, r, f), w)
        return
    stop = i1 - PREFETCH_AHEAD
    for i in range(i0, i1):
        if prefetch and i < stop:
            _prefetch_pair(codes, chan, at1(row, i + PREFETCH_AHEAD), at1(chan_index, i + PREFETCH_AHEAD))
        r = at1(row, i)
        ci = at1(chan_index, i)
        w = (at(chan, ci, first), at(chan, ci, first + 1))
        for f in range(f0, f1):
            add2(out, s, f, at(codes, r, f), w)


@numba.njit(**JIT)
def _vector_rows3(out, s, codes, row, chan_index, i0, i1, f0, f1, chan, prefetch, first):
    """Pairs ``i0:i1``, channels ``first .. first + 2``, into slot ``s``'s histogram, features ``f0:f1``."""
    if _consecutive(row, i0, i1) and _consecutive(chan_index, i0, i1):
        r0, c0 = row[i0] - i0, chan_index[i0] - i0
        for i in range(i0, i1):
            r = r0 + i
            ci = c0 + i
            w = (at(chan, ci, first), at(chan, ci, first + 1), at(chan, ci, first + 2))
            for f in range(f0, f1):
                add3(out, s, f, at(codes, r, f), w)
        return
    stop = i1 - PREFETCH_AHEAD
    for i in range(i0, i1):
        if prefetch and i < stop:
            _prefetch_pair(codes, chan, at1(row, i + PREFETCH_AHEAD), at1(chan_index, i + PREFETCH_AHEAD))
        r = at1(row, i)
        ci = at1(chan_index, i)
        w = (at(chan, ci, first), at(chan, ci, first + 1), at(chan, ci, first + 2))
        for f in range(f0, f1):
            add3(out, s, f, at(codes, r, f), w)


#: The histogram kernels' ``mode`` where the second of two channels is 1 on
#: every row (a round's hessians under squared error without weights): ``chan``
#: holds the first channel only, each row's 8 bytes instead of a whole
#: channel row (a node's rows lie far apart: fewer bytes fetched a row). The
#: ones are added as the 1.0s of the channel would be: the same sums. Only for
#: two-channel histograms without multiplicities (:func:`grouped_histograms`).
UNIT_SECOND = 3


@numba.njit(**JIT)
def _unit_rows2(out, s, codes, row, chan_index, i0, i1, f0, f1, chan, prefetch, first):
    """:func:`_vector_rows2` where the second channel is 1 on every row (:data:`UNIT_SECOND`): column ``first`` of
    ``chan`` and 1.0."""
    if _consecutive(row, i0, i1) and _consecutive(chan_index, i0, i1):
        r0, c0 = row[i0] - i0, chan_index[i0] - i0
        for i in range(i0, i1):
            r = r0 + i
            w = (at(chan, c0 + i, first), 1.0)
            for f in range(f0, f1):
                add2(out, s, f, at(codes, r, f), w)
        return
    stop = i1 - PREFETCH_AHEAD
    for i in range(i0, i1):
        if prefetch and i < stop:
            _prefetch_pair(codes, chan, at1(row, i + PREFETCH_AHEAD), at1(chan_index, i + PREFETCH_AHEAD))
        r = at1(row, i)
        w = (at(chan, at1(chan_index, i), first), 1.0)
        for f in range(f0, f1):
            add2(out, s, f, at(codes, r, f), w)


# The row loop of the histogram is a plain (not parallel) function called
# from _run_histograms' parallel loop (see _mark_sides).
@numba.njit(**JIT)
def _add_rows(out, s, codes, row, chan_index, i0, i1, f0, f1, chan, mult, wmult, mode, prefetch, first):
    """Pairs ``i0:i1`` into slot ``s``'s histogram, features ``f0:f1``; channels ``first:`` of ``chan``.

    Two, three and four channels (boosting's (g, h) or (count, g, h) and
    binary classification; regression and three classes): the row's weights are
    computed once (not per feature) and added as one vector
    (:func:`_vector_add`); other counts one scalar addition per channel
    (:func:`add_row`). Either way each output gets the same additions, in
    the same order. ``prefetch``: fetch the data of the pair
    :data:`PREFETCH_AHEAD` positions ahead.
    """
    n_channels = out.shape[3]
    stop = i1 - PREFETCH_AHEAD
    if n_channels == 2 and mode == UNIT_SECOND:
        _unit_rows2(out, s, codes, row, chan_index, i0, i1, f0, f1, chan, prefetch, first)
        return
    if (n_channels == 2 or n_channels == 3) and mode == 0:
        # boosting's [G, H] or [count, G, H]: loops of their own, without the
        # general loop's multiplicity tests
        # (each its own compiled function: inside this one the three-channel
        # loop compiles to slower code)
        if n_channels == 2:
            _vector_rows2(out, s, codes, row, chan_index, i0, i1, f0, f1, chan, prefetch, first)
        else:
            _vector_rows3(out, s, codes, row, chan_index, i0, i1, f0, f1, chan, prefetch, first)
        return
    for i in range(i0, i1):
        if prefetch and i < stop:
            _prefetch_pair(codes, chan, row[i + PREFETCH_AHEAD], chan_index[i + PREFETCH_AHEAD])
        r = row[i]
        ci = chan_index[i]
        if n_channels == 3:
            w3 = (pair_weight(chan, ci, 0, i, mult, wmult, mode, first), pair_weight(chan, ci, 1, i, mult, wmult, mode, first),
                  pair_weight(chan, ci, 2, i, mult, wmult, mode, first))
            for f in range(f0, f1):
                add3(out, s, f, at(codes, r, f), w3)
        elif n_channels == 4:
            w4 = (pair_weight(chan, ci, 0, i, mult, wmult, mode, first), pair_weight(chan, ci, 1, i, mult, wmult, mode, first),
                  pair_weight(chan, ci, 2, i, mult, wmult, mode, first), pair_weight(chan, ci, 3, i, mult, wmult, mode, first))
            for f in range(f0, f1):
                add4(out, s, f, at(codes, r, f), w4)
        else:
            add_row(out, s, codes, r, f0, f1, chan, ci, i, mult, wmult, mode, first)


@numba.njit(parallel=True, **JIT)
def _node_histograms(codes, row, chan_index, node, mult, wmult, mode, chan, first, n_channels, slot_of_node, n_slots,
                     n_bins, n_blocks):
    m = row.shape[0]
    n_features = codes.shape[1]
    out = np.zeros((n_slots, n_features, n_bins, n_channels), dtype=np.float64)
    # one block of features per thread: each (slot, feature, bin) is summed by
    # one thread, in row order
    for blk in prange(n_blocks):
        f0 = blk * n_features // n_blocks
        f1 = (blk + 1) * n_features // n_blocks
        for i in range(m):
            s = slot_of_node[node[i]]
            if s >= 0:
                add_row(out, s, codes, row[i], f0, f1, chan, chan_index[i], i, mult, wmult, mode, first)
    return out


def node_histograms(xp, codes, active, chan, slot_of_node, n_slots: int, n_bins: int, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels.reference.node_histograms`.

    When every built node's rows are contiguous (the grower's rows are grouped
    by node, see :func:`route_rows`), one task per (node, block of features)
    reads that node's run of rows; otherwise one task per block of features
    scans all rows. Either way each output is one thread's row-order sum.
    Grouped pairs of mostly-default codes (a sparse X's) are summed from
    each row's other codes, a node a task
    (:func:`gputrees.kernels.cpu.sparse_codes.pair_histograms`).
    """
    mult, wmult, mode = pair_multiplicities(active)
    node = as_int64(active.node)
    table = as_int64(slot_of_node)
    threads = threads_for(n_threads, int(node.shape[0]) * int(codes.shape[1]))
    start, end, grouped = node_runs(active, node, table, int(n_slots))
    n_channels = int(chan.shape[1])
    chan_table, first = channel_table(chan)
    if grouped:
        entries = layout_of(codes, int(n_bins))
        with Threads(threads):
            out = output_buffer((int(n_slots), int(codes.shape[1]), int(n_bins), n_channels))
            if entries is not None:  # mostly-default codes (a sparse X's): from each row's other codes
                pair_histograms(*entries, as_int64(active.row), as_int64(active.chan_index), mult, wmult, mode,
                                chan_table, first, start, end, EVERY_FEATURE, out)
                return out
            # every bin written (``used`` each feature's value bins): the compiled grower's signature
            every_bin = np.full(int(codes.shape[1]), int(n_bins) - 1, dtype=np.int64)
            return grouped_histograms(
                codes, as_int64(active.row), as_int64(active.chan_index), mult, wmult, mode, chan_table, start, end,
                int(n_bins), threads, row_bytes(codes), out, first, every_bin, threads,
            )
    blocks = max(1, min(threads, codes.shape[1]))
    with Threads(threads):
        return _node_histograms(
            codes, as_int64(active.row), as_int64(active.chan_index), as_int64(active.node), mult, wmult, mode,
            chan_table, first, n_channels, table, int(n_slots), int(n_bins), blocks,
        )


def drawn_histograms(xp, codes, active, chan, slot_of_node, n_slots: int, n_bins: int, features, *,
                     n_threads: int = 1):
    """Histograms of each slot's drawn features only: :func:`gputrees.kernels.reference.drawn_histograms`.

    One task per node (each output one thread's row-order sum), reading the
    node's run of pairs; where the pairs are not grouped by node, the drawn
    features gathered from every feature's histograms (the reference's way).
    """
    mult, wmult, mode = pair_multiplicities(active)
    node = as_int64(active.node)
    table = as_int64(slot_of_node)
    feats = as_int64(features)
    k = int(feats.shape[1])
    threads = threads_for(n_threads, int(node.shape[0]) * max(1, k))
    start, end, grouped = node_runs(active, node, table, int(n_slots))
    if not grouped:  # every feature's histograms, then the drawn ones'
        return reference.drawn_histograms(xp, codes, active, chan, slot_of_node, n_slots, n_bins, features,
                                          node_histograms=functools.partial(node_histograms, n_threads=n_threads))
    chan_table, first = channel_table(chan)
    return run_drawn_histograms(codes, as_int64(active.row), as_int64(active.chan_index), mult, wmult, mode, chan_table,
                                first, int(chan.shape[1]), start, end, feats, int(n_bins), threads)


def run_drawn_histograms(codes, row, chan_index, mult, wmult, mode, chan, first, n_channels, start, end, features,
                         n_bins, threads):
    """Histograms (n_slots, k, n_bins, n_channels) of slot ``s``'s run of pairs ``start[s]:end[s]`` over its
    features ``features[s]`` only (:func:`drawn_histograms` once the runs are known; ``start`` -1: zeros).

    ``chan``'s columns ``first : first + n_channels`` are the channels
    (:func:`~gputrees.kernels.cpu.pairs.channel_table`); ``mult``, ``wmult``,
    ``mode`` as :func:`~gputrees.kernels.cpu.pairs.pair_multiplicities` gives them. Mostly-default
    codes from each row's other codes (:func:`gputrees.kernels.cpu.sparse_codes.pair_histograms`).
    """
    entries = layout_of(codes, int(n_bins))
    with Threads(threads):
        out = output_buffer((int(start.shape[0]), int(features.shape[1]), int(n_bins), int(n_channels)))
        if entries is not None:  # mostly-default codes (a sparse X's): from each row's other codes
            pair_histograms(*entries, row, chan_index, mult, wmult, mode, chan, first, start, end, features, out)
        else:
            _drawn_histograms(codes, row, chan_index, mult, wmult, mode, chan, first, start, end, features, out,
                              PREFETCH_AHEAD)
    return out


@numba.njit(parallel=True, **JIT)
def _drawn_histograms(codes, row, chan_index, mult, wmult, mode, chan, first, start, end, features, out, ahead):
    """``out[s, j]``: the histogram of slot ``s``'s run ``start[s]:end[s]`` over feature ``features[s, j]``.

    One node per task, its pairs in order: each row's channels weighed once,
    then added to each drawn feature's bin; the pair ``ahead`` positions on
    prefetched (a node's rows lie far apart below the first levels, each
    row's data a fetch from memory).
    """
    n_slots, k = features.shape
    n_bins, n_channels = out.shape[2], out.shape[3]
    for s in prange(n_slots):
        for j in range(k):
            for b in range(n_bins):
                for c in range(n_channels):
                    out[s, j, b, c] = 0.0
        if start[s] < 0:
            continue
        w = np.empty(n_channels)
        stop = end[s] - ahead
        for i in range(start[s], end[s]):
            if i < stop:
                _prefetch_pair(codes, chan, row[i + ahead], chan_index[i + ahead])
            r = row[i]
            ci = chan_index[i]
            for c in range(n_channels):
                w[c] = pair_weight(chan, ci, c, i, mult, wmult, mode, first)
            for j in range(k):
                b = codes[r, features[s, j]]
                for c in range(n_channels):
                    out[s, j, b, c] += w[c]


@numba.njit(parallel=True, **JIT)
def _sibling_histograms(parent_hist, parent_index, small, small_is_right, children, at, out):
    """``out[at[j]]``: child ``children[j]``, the built histogram or its parent's (``parent_hist`` row) minus it."""
    for j in prange(children.shape[0]):
        c = children[j]
        p = c // 2
        o = at[j]
        if (c % 2 == 1) == small_is_right[p]:
            out[o] = small[p]
        else:
            q = parent_index[p]
            for x in range(out.shape[1]):
                out[o, x] = parent_hist[q, x] - small[p, x]


def sibling_histograms(xp, parent_hist, parent_index, small, small_is_right, children, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels.reference.sibling_histograms`, in one pass.

    Each wanted child is written once (a copy of the built histogram or the
    parent's minus it), instead of gathering the parents, subtracting,
    concatenating and gathering again: four full passes over the level's
    histograms (a forest's levels hold hundreds of megabytes of them). A
    tuple of parent arrays is read part by part, not concatenated.
    """
    k = int(children.shape[0])
    shape = tuple(int(d) for d in small.shape[1:])
    width = int(np.prod(shape))
    out = output_buffer((k, width))
    parts = parent_hist if isinstance(parent_hist, tuple) else (parent_hist,)
    parent_index, children = as_int64(parent_index), as_int64(children)
    args = (np.ascontiguousarray(small, dtype=np.float64).reshape(-1, width),
            np.ascontiguousarray(small_is_right, dtype=np.bool_))
    with Threads(threads_for(n_threads, k * width)):
        if len(parts) == 1:
            _sibling_histograms(np.ascontiguousarray(parts[0], dtype=np.float64).reshape(-1, width), parent_index,
                                *args, children, np.arange(k, dtype=np.int64), out)
        else:
            sizes = np.array([int(a.shape[0]) for a in parts], dtype=np.int64)
            ends = np.cumsum(sizes)
            part = np.searchsorted(ends, parent_index, side="right")  # the part of each pair's parent
            local = parent_index - (ends - sizes)[part]
            part_of_child = part[children // 2]
            for i, a in enumerate(parts):
                at = np.flatnonzero(part_of_child == i).astype(np.int64)
                if at.shape[0]:
                    _sibling_histograms(np.ascontiguousarray(a, dtype=np.float64).reshape(-1, width), local, *args,
                                        children[at], at, out)
    return out.reshape((k,) + shape)


@numba.njit(**JIT)
def _histogram_plan(start, end, n_features, n_workers):
    """Pieces (slot, features f0:f1) of the histogram updates, each worker an equal share.

    The (row, feature) updates of the slots with rows, slot by slot and
    feature by feature, are split into ``n_workers`` equal shares; a slot
    crossing the end of a share is cut between features. Few slots (the
    first levels): each slot's rows are read by as few workers as balance
    allows (not once per fixed block of features); many slots: whole slots.

    Returns (slot, f0, f1) of every piece in order and each worker's first
    piece (n_workers + 1).
    """
    total = 0
    n_pieces = 0
    for s in range(start.shape[0]):
        if start[s] >= 0:
            total += (end[s] - start[s]) * n_features
            n_pieces += 1
    n_pieces += n_workers  # at most one cut per share's end
    p_slot = np.empty(n_pieces, dtype=np.int64)
    p_f0 = np.empty(n_pieces, dtype=np.int64)
    p_f1 = np.empty(n_pieces, dtype=np.int64)
    first = np.zeros(n_workers + 1, dtype=np.int64)
    j = 0
    pos = 0
    for s in range(start.shape[0]):
        if start[s] < 0:
            continue
        rows = end[s] - start[s]
        f = 0
        while f < n_features:
            w = share_of(pos, total, n_workers)
            room = (w + 1) * total // n_workers - pos
            # rounded up: the next piece starts in a later share (at most
            # one cut per share's end)
            nf = max(1, min(n_features - f, -(-room // rows)))
            p_slot[j] = s
            p_f0[j] = f
            p_f1[j] = f + nf
            first[w + 1] = j + 1
            pos += nf * rows
            f += nf
            j += 1
    for w in range(n_workers):
        first[w + 1] = max(first[w + 1], first[w])
    return p_slot[:j], p_f0[:j], p_f1[:j], first


@numba.njit(parallel=True, **JIT)
def _run_histograms(codes, row, chan_index, mult, wmult, mode, chan, start, end, n_bins, n_workers, row_bytes,
                    out=None, c_first=0, used=None):
    """Histograms (n_slots, n_features, n_bins, C) of the slots' runs ``start:end``; into ``out`` when given.

    The channels are ``chan``'s columns ``c_first:``, C of them: ``out``'s last
    axis when ``out`` is given, else all the columns from ``c_first`` on.
    ``used`` (n_features,) int64: only each feature's first ``used[f]`` bins
    and the last (missing) bin are written, the others left as they are (a
    caller that reads no other bin: :mod:`gputrees.kernels.cpu.grow`).

    Large pieces are summed in a worker's scratch histogram whose features lie
    :func:`_scratch_bins` bins apart (see there), then copied out; each output
    gets the same additions in the same order either way.
    """
    n_slots = start.shape[0]
    n_features = codes.shape[1]
    if out is None:
        out = np.empty((n_slots, n_features, n_bins, chan.shape[1] - c_first), dtype=np.float64)
    n_channels = out.shape[3]
    flat = out.reshape(-1)
    nb_s = _scratch_bins(n_bins)
    # slots without rows: zeros here; the others are zeroed by the worker
    # that fills them (np.zeros would be one more parallel region, which
    # waits for every thread: a time slice when the cores are shared)
    for s in range(n_slots):
        if start[s] < 0:
            _zero_features(flat, s, 0, n_features, n_features, n_bins, n_channels, used)
    # slots of at least two blocks of rows: summed by fixed blocks of rows
    # (see _block_rows), the others by pieces of features below
    block = _block_rows(start, end, n_features * nb_s * n_channels)
    b_slot, b_i0, b_i1, plan_start = _row_blocks(start, end, block)
    n_blk = b_slot.shape[0]
    if n_blk > 0:
        # the blocks in waves whose partials fit PARTIAL_BYTES, each merged
        # into the slots in block order as the whole set would be
        wave = _blocks_at_once(n_blk, n_features * nb_s * n_channels, n_workers)
        partial = np.empty((wave, n_features, nb_s, n_channels))
        for w0 in range(0, n_blk, wave):
            w1 = min(n_blk, w0 + wave)
            for k in prange(w1 - w0):
                i0 = b_i0[w0 + k]
                i1 = b_i1[w0 + k]
                sparse = sparse_rows(row, i0, i1, row_bytes, codes.shape[0])
                _zero_bins(partial, k, 0, n_features, n_bins, used)
                # int64 slot and feature bounds in every call (a prange index is unsigned, a constant a literal):
                # one signature of _add_rows to compile, not three
                _add_rows(partial, np.int64(k), codes, row, chan_index, i0, i1, np.int64(0), n_features, chan, mult,
                          wmult, mode, sparse, c_first)
            _merge_blocks(out, partial, b_slot, w0, w1, n_bins, used)
    # each worker a share of the (row, feature) updates, as pieces (slot,
    # features f0:f1) (see _histogram_plan): each output is summed by one
    # thread, in row order
    p_slot, p_f0, p_f1, first = _histogram_plan(plan_start, end, n_features, n_workers)
    own = np.empty(p_slot.shape[0], dtype=np.bool_)
    any_own = False
    for j in range(p_slot.shape[0]):
        s = p_slot[j]
        own[j] = _worth_scratch(end[s] - start[s], p_f0[j], p_f1[j], n_bins, used)
        any_own = any_own or own[j]
    scratch = np.empty((n_workers if any_own else 0, n_features, nb_s, n_channels))
    for w in prange(n_workers):
        for j in range(first[w], first[w + 1]):
            s = p_slot[j]
            f0 = p_f0[j]
            f1 = p_f1[j]
            e = end[s]
            sparse = sparse_rows(row, start[s], e, row_bytes, codes.shape[0])
            if own[j]:
                _zero_bins(scratch, w, f0, f1, n_bins, used)
                _add_rows(scratch, np.int64(w), codes, row, chan_index, start[s], e, f0, f1, chan, mult, wmult, mode,
                          sparse, c_first)
                _copy_bins(out, s, scratch, w, f0, f1, n_bins, used)
            else:
                _zero_features(flat, s, f0, f1, n_features, n_bins, n_channels, used)
                _add_rows(out, s, codes, row, chan_index, start[s], e, f0, f1, chan, mult, wmult, mode, sparse,
                          c_first)
    return out


_run_histograms_serial = serial_twin(_run_histograms)


@numba.njit(**JIT)
def _threaded_histograms(start, end, n_workers, n_threads, width):
    """Whether :func:`_run_histograms` needs threads: more than one worker, or a slot it sums by blocks of rows
    (:func:`_block_rows`; ``width``: a histogram's floats, features x scratch bins x channels) on more than one
    thread (``n_threads``: Numba's count for the call); else its serial twin does the same work."""
    if n_workers > 1:
        return True
    if n_threads <= 1:
        return False
    block = _block_rows(start, end, width)
    for s in range(start.shape[0]):
        if _by_blocks(start, end, s, block):
            return True
    return False


@numba.njit(**JIT)
def grouped_histograms(codes, row, chan_index, mult, wmult, mode, chan, start, end, n_bins, n_workers, row_bytes, out,
                c_first, used, n_threads):
    """:func:`_run_histograms`, or its serial twin where it needs no threads (:func:`_threaded_histograms`)."""
    width = codes.shape[1] * _scratch_bins(n_bins) * out.shape[3]
    if _threaded_histograms(start, end, n_workers, n_threads, width):
        return _run_histograms(codes, row, chan_index, mult, wmult, mode, chan, start, end, n_bins, n_workers,
                               row_bytes, out, c_first, used)
    return _run_histograms_serial(codes, row, chan_index, mult, wmult, mode, chan, start, end, n_bins, n_workers,
                                  row_bytes, out, c_first, used)


#: Rows of a block of a large slot's histogram (see :func:`_row_blocks`): large
#: enough that a block's partial histogram (features x bins x channels, up to
#: 115 KB for 28 features) is a small share of its updates to merge.
ROW_BLOCK = 1 << 15
#: Rows of a block where a call's partial histograms stay small (see
#: :func:`_block_rows`): Bank marketing's root (31k rows, 20 features) is then
#: four blocks, shared by rows between two threads, not by features.
SMALL_ROW_BLOCK = 1 << 13
#: Bytes that a call's partial histograms may take in blocks of
#: SMALL_ROW_BLOCK rows: a core's L2 cache (1 MiB on a Zen 4 core).
#: Larger calls keep ROW_BLOCK's blocks, whose partials
#: are a quarter as many: a million rows of 28 features take 3.6 MB of them
#: instead of 14 MB (4 million rows: 14 MB instead of 56 MB).
SMALL_BLOCKS_BYTES = 1 << 20


@numba.njit(**JIT)
def _block_rows(start, end, width):
    """Rows of a block for :func:`_row_blocks`: SMALL_ROW_BLOCK when the call's blocks of that many rows would
    take at most SMALL_BLOCKS_BYTES of partial histograms (``width`` floats each), else ROW_BLOCK.

    A function of the slots' row counts and the histogram's shape only, not of
    the thread count, so that a histogram's summation order is the same on
    any number of threads, and the same for the compiled tree and the generic
    grower.
    """
    n = 0
    for s in range(start.shape[0]):
        if _by_blocks(start, end, s, SMALL_ROW_BLOCK):
            n += _n_row_blocks(end[s] - start[s], SMALL_ROW_BLOCK)
    if n * width * 8 <= SMALL_BLOCKS_BYTES:
        return SMALL_ROW_BLOCK
    return ROW_BLOCK


#: A piece (slot, features) is summed in a scratch histogram (see
#: :func:`_scratch_bins`) when it has at least this many (row, feature)
#: updates for each bin it zeroes and copies: the copy costs about as much as
#: two updates a bin, and below about 8 a bin the piece's updates spread over
#: so many bins that few of them alias.
SCRATCH_UPDATES_PER_BIN = 8


@numba.njit(inline="always")
def _scratch_bins(n_bins):
    """Bins a feature takes in a scratch histogram: ``n_bins`` made odd.

    Features ``n_bins * C * 8`` bytes apart (4,096 for 256 bins and two
    channels, 8,192 for four) put every feature's bin ``b`` at the same
    address modulo 4 KiB; the processor then takes a load of one feature's
    bin for one of the stores to another's still in flight (4K aliasing) and
    waits for that store. Updates that often hit the same bins in several
    features (few values a feature, or rows of one node alike in several)
    then cost several times their usual few cycles each. An odd count of
    bins puts two features' same bin at the same address modulo 4 KiB only
    512 / C features apart.
    """
    return n_bins | 1


@numba.njit(inline="always")
def _worth_scratch(rows, f0, f1, n_bins, used):
    """Whether a piece of ``rows`` rows over features ``f0:f1`` is summed in a scratch histogram."""
    bins = 0
    for f in range(f0, f1):
        bins += (n_bins if used is None else used[f] + 1)
    return rows * (f1 - f0) >= SCRATCH_UPDATES_PER_BIN * bins


@numba.njit(inline="always")
def _by_blocks(start, end, s, block):
    """Whether slot ``s`` is summed by blocks of rows: it has rows, at least ``2 * block`` of them."""
    return start[s] >= 0 and end[s] - start[s] >= 2 * block


@numba.njit(inline="always")
def _n_row_blocks(rows, block):
    """Blocks of a slot of ``rows`` rows (at least ``2 * block``): ``rows / block`` rounded up to an even count,
    so that two threads get as many each (the blocks are of equal size, see :func:`_row_blocks`)."""
    n = (rows + block - 1) // block
    return n + (n & 1)


@numba.njit(**JIT)
def _row_blocks(start, end, block):
    """Blocks of the slots with at least ``2 * block`` rows: (slot, i0, i1, plan_start).

    Such a slot's histogram is summed by :func:`_n_row_blocks` blocks of
    consecutive pairs, of equal size (up to one pair) and at most ``block``
    (:func:`_block_rows`), each in pair order by one thread, over every feature, into a
    partial histogram of its own (block ``k``'s is partial ``k``); the
    slot's histogram is its first block's partial plus the others in block
    order (:func:`_merge_blocks`). The
    summation order depends on the rows only, not on the thread count. Each
    thread then reads every feature of a row once: with the features split
    between threads instead, as for smaller slots, both threads read every
    row.
    ``plan_start``: ``start`` with these slots marked empty (-2), for
    :func:`_histogram_plan`. The partial histograms take one histogram's
    memory per block: 115 KB each for 28 features, 256 bins and two
    channels, about 3.6 MB for a slot of a million rows (wider ones are
    summed in waves of blocks, :data:`PARTIAL_BYTES`).
    """
    plan_start = start.copy()
    n = 0
    for s in range(start.shape[0]):
        if _by_blocks(start, end, s, block):
            n += _n_row_blocks(end[s] - start[s], block)
    b_slot = np.empty(n, dtype=np.int64)
    b_i0 = np.empty(n, dtype=np.int64)
    b_i1 = np.empty(n, dtype=np.int64)
    k = 0
    for s in range(start.shape[0]):
        if _by_blocks(start, end, s, block):
            plan_start[s] = -2
            rows = end[s] - start[s]
            nb = _n_row_blocks(rows, block)
            for j in range(nb):
                b_slot[k] = s
                b_i0[k] = start[s] + j * rows // nb
                b_i1[k] = start[s] + (j + 1) * rows // nb
                k += 1
    return b_slot, b_i0, b_i1, plan_start


#: Most bytes of partial histograms of :func:`_row_blocks`' blocks summed at
#: once: a wide matrix's root (a sparse X's 10,000 features, 256 bins, two
#: channels: 41 MB a block, 32 blocks for a million rows) is summed in waves
#: of blocks instead of holding every block's partial.
PARTIAL_BYTES = 32 << 20


@numba.njit(**JIT)
def _blocks_at_once(n_blocks, width, n_workers):
    """Blocks whose partial histograms (``width`` floats each) are summed at once: all of them within
    :data:`PARTIAL_BYTES`, else as many as fit it, and at least one per worker (two: the blocks' even count)."""
    if n_blocks * width * 8 <= PARTIAL_BYTES:
        return n_blocks
    return min(n_blocks, max(n_workers, 2, PARTIAL_BYTES // (width * 8)))


@numba.njit(parallel=True, **JIT)
def _merge_blocks(out, partial, b_slot, w0, w1, n_bins, used):
    """Blocks ``w0:w1`` (partials ``0 : w1 - w0``) into their slots' histograms, in block order: a slot's first
    block's partial copied, the others added (features in parallel). Merged wave by wave in block order, a
    slot's histogram gets the same additions as all its blocks merged at once."""
    n_features = out.shape[1]
    for f in prange(n_features):
        for k in range(w0, w1):
            s = b_slot[k]
            if k > 0 and b_slot[k - 1] == s:
                _add_bins(out, s, partial, k - w0, f, n_bins, used)
            else:
                _copy_bins(out, s, partial, k - w0, f, f + 1, n_bins, used)


@numba.njit(inline="always")
def _bin_runs(h, t, f, n_bins, used):
    """The flat positions of ``h[t, f]``'s bins that :func:`_zero_bins` zeroes, as two runs ``[a, b)``, ``[c, d)``.

    ``h`` (T, F, nb, C), C-contiguous, with ``nb >= n_bins`` (a scratch
    histogram's odd count): the feature's first ``used[f]`` bins (all
    ``n_bins`` without ``used``), then bin ``n_bins - 1`` unless the first
    run holds it. Unsigned, so that loops over them are vectorised: a
    position Numba must map when negative keeps these copies from it.
    """
    F, nb, C = h.shape[1], h.shape[2], h.shape[3]
    base = np.uint64(((t * F + f) * nb) * C)
    top = n_bins if used is None else used[f]
    a = base + np.uint64(top * C)
    if top < n_bins:
        return base, a, base + np.uint64((n_bins - 1) * C), base + np.uint64(n_bins * C)
    return base, a, a, a


@numba.njit(inline="always")
def _zero_bins(h, t, f0, f1, n_bins, used):
    """Zero ``h[t, f0:f1]``'s bins ``0 .. n_bins - 1`` (with ``used``: each feature's first ``used[f]`` and bin ``n_bins - 1``)."""
    flat = h.reshape(-1)
    for f in range(f0, f1):
        a, b, c, d = _bin_runs(h, t, f, n_bins, used)
        for x in range(a, b):
            flat[x] = 0.0
        for x in range(c, d):
            flat[x] = 0.0


@numba.njit(inline="always")
def _copy_bins(out, s, h, t, f0, f1, n_bins, used):
    """``out[s, f0:f1] = h[t, f0:f1]`` over the bins :func:`_zero_bins` zeroes.

    Over flat runs (:func:`_bin_runs`), which the compiler vectorises.
    """
    dst = out.reshape(-1)
    src = h.reshape(-1)
    for f in range(f0, f1):
        a, b, c, d = _bin_runs(out, s, f, n_bins, used)
        a2, _, c2, _ = _bin_runs(h, t, f, n_bins, used)
        for x in range(b - a):
            dst[a + x] = src[a2 + x]
        for x in range(d - c):
            dst[c + x] = src[c2 + x]


@numba.njit(inline="always")
def _add_bins(out, s, h, t, f, n_bins, used):
    """``out[s, f] += h[t, f]`` over the bins :func:`_zero_bins` zeroes (flat runs, as :func:`_copy_bins`)."""
    dst = out.reshape(-1)
    src = h.reshape(-1)
    a, b, c, d = _bin_runs(out, s, f, n_bins, used)
    a2, _, c2, _ = _bin_runs(h, t, f, n_bins, used)
    for x in range(b - a):
        dst[a + x] += src[a2 + x]
    for x in range(d - c):
        dst[c + x] += src[c2 + x]


@numba.njit(inline="always")
def _zero_features(flat, s, f0, f1, n_features, n_bins, n_channels, used):
    """Zero slot ``s``'s histograms of features ``f0:f1`` (with ``used``: their first ``used[f]`` bins and the last).

    ``flat``: the histograms (slots, n_features, n_bins, n_channels) as one
    array; positions unsigned (:func:`_bin_runs`).
    """
    per_feature = n_bins * n_channels
    if used is None:
        for x in range(np.uint64((s * n_features + f0) * per_feature), np.uint64((s * n_features + f1) * per_feature)):
            flat[x] = 0.0
        return
    for f in range(f0, f1):
        x0 = np.uint64((s * n_features + f) * per_feature)
        for x in range(x0, x0 + np.uint64(used[f] * n_channels)):
            flat[x] = 0.0
        for x in range(x0 + np.uint64(per_feature - n_channels), x0 + np.uint64(per_feature)):
            flat[x] = 0.0
