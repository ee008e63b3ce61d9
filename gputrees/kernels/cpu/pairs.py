"""The (tree, row) pairs of a level grouped by node: their weights, their runs, their channel sums.

A pair's channels are its row's times its multiplicities (:func:`pair_weight`);
a node's pairs form one run of the active arrays when the routing grouped
them (:func:`node_runs`); :func:`node_sums` sums each run in pair order.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from .buffers import pair_buffer, zeros2
from .jit import JIT, Threads, serial_twin, threads_for
from .memory import as_int64, at


# -- row-level operations of the grower ---------------------------------------
def pair_multiplicities(active):
    """(mult, wmult, mode): empty arrays stand for None; mode 0 none, 1 mult, 2 both."""
    empty = np.empty(0, dtype=np.float64)
    if active.mult is None:
        return empty, empty, 0
    mult = np.ascontiguousarray(active.mult, dtype=np.float64)
    if active.wmult is None:
        return mult, empty, 1
    return mult, np.ascontiguousarray(active.wmult, dtype=np.float64), 2


@numba.njit(inline="always")
def pair_weight(chan, ci, c, i, mult, wmult, mode, first=0):
    """Channel ``c`` of pair ``i`` (column ``first + c`` of channel row ``ci``) times its multiplicity:
    ``mult`` for every channel (mode 1), or for channel 0 and ``wmult`` for the others (mode 2)."""
    w = chan[ci, first + c]
    if mode == 1 or (mode == 2 and c == 0):
        w = w * mult[i]
    elif mode == 2:
        w = w * wmult[i]
    return w


@numba.njit(inline="always")
def add_row(out, s, codes, r, f0, f1, chan, ci, i, mult, wmult, mode, first):
    """Add pair ``i`` (row ``r``, channel row ``ci``, its columns from ``first`` on) to slot ``s``'s histogram,
    features ``f0:f1``."""
    for f in range(f0, f1):
        b = at(codes, r, f)
        for c in range(out.shape[3]):
            out[s, f, b, c] += pair_weight(chan, ci, c, i, mult, wmult, mode, first)


@numba.njit(inline="always")
def add_sums(out, s, chan, ci, i, mult, wmult, mode):
    """Add pair ``i``'s channels (channel row ``ci``) to slot ``s``'s sums."""
    for c in range(chan.shape[1]):
        out[s, c] += pair_weight(chan, ci, c, i, mult, wmult, mode)


@numba.njit(**JIT)
def _node_sums(chan_index, node, mult, wmult, mode, chan, slot_of_node, n_slots):
    n_channels = chan.shape[1]
    out = np.zeros((n_slots, n_channels), dtype=np.float64)
    for i in range(node.shape[0]):
        s = slot_of_node[node[i]]
        if s >= 0:
            add_sums(out, s, chan, chan_index[i], i, mult, wmult, mode)
    return out


@numba.njit(**JIT)
def sorted_bounds(node, n_ids):
    """(bounds, ok): ``bounds[k]:bounds[k + 1]`` are node id ``k``'s positions, ok when ``node`` is sorted."""
    bounds = np.zeros(n_ids + 1, dtype=np.int64)
    for i in range(node.shape[0]):
        if (i > 0 and node[i] < node[i - 1]) or node[i] < 0 or node[i] >= n_ids:
            return bounds, False
        bounds[node[i] + 1] += 1
    for k in range(n_ids):
        bounds[k + 1] += bounds[k]
    return bounds, True


@numba.njit(**JIT)
def _runs_from_bounds(bounds, slot_of_node, n_slots):
    """:func:`slot_runs` of pairs sorted by node id, read from their ``bounds`` (no pass over the pairs)."""
    start = np.full(n_slots, -1, dtype=np.int64)
    end = np.zeros(n_slots, dtype=np.int64)
    for k in range(min(slot_of_node.shape[0], bounds.shape[0] - 1)):
        s = slot_of_node[k]
        if s >= 0 and bounds[k + 1] > bounds[k]:
            start[s] = bounds[k]
            end[s] = bounds[k + 1]
    return start, end


#: Chunks of pairs per thread in :func:`keep_pairs`: the staying pairs are
#: rarely spread evenly (a forest's finished nodes leave in runs), and more
#: chunks than threads even out the threads' shares.
KEEP_CHUNKS_PER_THREAD = 4


def keep_pairs(xp, arrays, keep, *, n_threads: int = 1):
    """``tuple(a[keep] for a in arrays)``: the staying pairs of a retirement, in order, in reused buffers.

    Parameters
    ----------
    arrays : sequence of arrays of shape (m,), int64 or float64
    keep : array of shape (m,), bool

    Returns
    -------
    tuple of arrays of shape (count of keep,), the dtypes of ``arrays``

    Parallel over chunks of pairs (each chunk's staying pairs counted, then
    written at its offset); inside :func:`workspace` the outputs are pair
    buffers reused once nobody holds them (:func:`pair_buffer`).
    """
    keep = np.ascontiguousarray(keep, dtype=np.bool_)
    m = int(keep.shape[0])
    threads = threads_for(n_threads, m * max(1, len(arrays)))
    n_chunks = threads * KEEP_CHUNKS_PER_THREAD
    with Threads(threads):
        offsets = _keep_offsets(keep, n_chunks)
        total = int(offsets[-1])
        out = []
        for a in arrays:
            a = np.ascontiguousarray(a)
            dst = pair_buffer(total).view(a.dtype)
            _compress(a, keep, offsets, dst)
            out.append(dst)
    return tuple(out)


@numba.njit(parallel=True, **JIT)
def _keep_offsets(keep, n_chunks):
    """Start of each chunk's staying pairs in the output (n_chunks + 1,), the last entry their total."""
    m = keep.shape[0]
    offsets = np.zeros(n_chunks + 1, dtype=np.int64)
    for c in prange(n_chunks):
        n = 0
        for i in range(c * m // n_chunks, (c + 1) * m // n_chunks):
            if keep[i]:
                n += 1
        offsets[c + 1] = n
    for c in range(n_chunks):
        offsets[c + 1] += offsets[c]
    return offsets


@numba.njit(parallel=True, **JIT)
def _compress(a, keep, offsets, out):
    """``out[:] = a[keep]``, chunk ``c`` of the pairs written from ``offsets[c]`` on."""
    n_chunks = offsets.shape[0] - 1
    m = keep.shape[0]
    for c in prange(n_chunks):
        p = offsets[c]
        for i in range(c * m // n_chunks, (c + 1) * m // n_chunks):
            if keep[i]:
                out[p] = a[i]
                p += 1


def pair_weights(xp, active, chan, mask=None, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels.reference.active_weights`: the pairs' channels, multiplicities applied.

    One parallel pass (each chunk of pairs counted, then written at its
    offset) instead of the reference's gather, products and concatenation,
    each a pass over every pair. The same products, so the same values.
    """
    m = int(active.row.shape[0])
    keep = np.ones(m, dtype=np.bool_) if mask is None else np.ascontiguousarray(mask, dtype=np.bool_)
    mult = active.mult is not None
    wmult = active.wmult is not None
    dummy = np.ones(1)
    chan = np.ascontiguousarray(chan, dtype=np.float64)
    threads = threads_for(n_threads, m * max(1, int(chan.shape[1])))
    n_chunks = threads * KEEP_CHUNKS_PER_THREAD
    with Threads(threads):
        offsets = _keep_offsets(keep, n_chunks)
        out = np.empty((int(offsets[-1]), int(chan.shape[1])))
        _pair_weights(
            chan, as_int64(active.chan_index),
            np.ascontiguousarray(active.mult, dtype=np.float64) if mult else dummy, mult,
            np.ascontiguousarray(active.wmult, dtype=np.float64) if wmult else dummy, wmult,
            keep, offsets, out,
        )
    return out


@numba.njit(parallel=True, **JIT)
def _pair_weights(chan, chan_index, mult, has_mult, wmult, has_wmult, keep, offsets, out):
    """``out`` (kept pairs, C): chunk ``c``'s kept pairs from ``offsets[c]`` on, ``chan[chan_index]`` times the
    multiplicities (``mult`` for channel 0 and, without ``wmult``, every channel; ``wmult`` for the others)."""
    n_chunks = offsets.shape[0] - 1
    m = keep.shape[0]
    C = chan.shape[1]
    for c in prange(n_chunks):
        p = offsets[c]
        for i in range(c * m // n_chunks, (c + 1) * m // n_chunks):
            if keep[i]:
                ci = chan_index[i]
                if not has_mult:
                    for k in range(C):
                        out[p, k] = chan[ci, k]
                else:
                    out[p, 0] = chan[ci, 0] * mult[i]
                    wm = wmult[i] if has_wmult else mult[i]
                    for k in range(1, C):
                        out[p, k] = chan[ci, k] * wm
                p += 1


def channel_table(chan):
    """``(table, first)``: a C-contiguous float64 table whose columns ``first : first + C`` are ``chan``.

    ``chan`` itself where it is one; the table it is a block of columns of
    where it is such a view (boosting's ``[G, H]`` columns of its
    ``[count, G, H]`` table, see :class:`gputrees._rows.LocalRows`): no copy
    of the channels per histogram call. Otherwise a contiguous copy.
    """
    f8 = np.float64
    if chan.dtype == f8 and chan.flags.c_contiguous:
        return chan, 0
    base = chan.base
    n, c = int(chan.shape[0]), int(chan.shape[1])
    if (chan.dtype == f8 and n > 0 and chan.strides[1] == 8 and chan.strides[0] % 8 == 0
            and isinstance(base, np.ndarray) and base.dtype == f8 and base.flags.c_contiguous):
        width = chan.strides[0] // 8
        first, rem = divmod(chan.ctypes.data - base.ctypes.data, 8)
        if base.size == n * width and rem == 0 and 0 <= first and first + c <= width:
            return base.reshape(n, width), first
    return np.ascontiguousarray(chan, dtype=f8), 0


def node_sums(xp, active, chan, slot_of_node, n_slots: int, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels.reference.node_sums` (sums in row order).

    With rows grouped by node, one task per node sums its run (at most one
    thread per node); otherwise one sequential scan.
    """
    mult, wmult, mode = pair_multiplicities(active)
    start, end, grouped = node_runs(active, as_int64(active.node), as_int64(slot_of_node), int(n_slots))
    if grouped:
        # no more threads than nodes: an idle thread would only wait (OpenMP
        # spins while it waits, slowing the busy thread on a shared machine)
        threads = min(threads_for(n_threads, int(active.node.shape[0])), max(1, int((start >= 0).sum())))
        with Threads(threads):
            return np.ascontiguousarray((run_sums if threads > 1 else run_sums_serial)(
                as_int64(active.chan_index), mult, wmult, mode, np.ascontiguousarray(chan, dtype=np.float64), start, end
            ))
    return _node_sums(
        as_int64(active.chan_index), as_int64(active.node), mult, wmult, mode,
        np.ascontiguousarray(chan, dtype=np.float64), as_int64(slot_of_node), int(n_slots),
    )


def node_runs(active, node, table, n_slots):
    """(start, end, grouped) of every slot's run: from ``active.bounds`` when known, else a pass (:func:`slot_runs`)."""
    if active.bounds is not None:
        start, end = _runs_from_bounds(as_int64(active.bounds), table, n_slots)
        return start, end, True
    return slot_runs(node, table, n_slots)


# -- rows grouped by node -------------------------------------------------------
# The grower keeps its active rows grouped by node (``route_rows`` regroups
# them after every split, stably, so each node's rows keep their order): a
# node's histogram then reads one contiguous run of rows and writes one node's
# histogram, which stays in the core's cache.
@numba.njit(**JIT)
def slot_runs(node, slot_of_node, n_slots):
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


@numba.njit(parallel=True, **JIT)
def run_sums(chan_index, mult, wmult, mode, chan, start, end):
    n_slots = start.shape[0]
    n_channels = chan.shape[1]
    # each slot's sums on cache lines of their own (8 float64 = 64 bytes of
    # padding): neighbouring slots summed by two threads, row after row,
    # would pass a shared line back and forth
    out = zeros2(n_slots, n_channels + 8)
    for s in prange(n_slots):
        if start[s] >= 0:
            _sum_run(out, s, chan, chan_index, start[s], end[s], mult, wmult, mode)
    return out[:, :n_channels]


run_sums_serial = serial_twin(run_sums)


@numba.njit(**JIT)
def _sum_run(out, s, chan, chan_index, a, b, mult, wmult, mode):
    """Add the channels of pairs ``a:b`` to ``out[s]``, in pair order (a plain function: see :func:`_mark_sides`)."""
    if mode == 0 and chan.shape[1] == 3:
        # in registers (the same additions in the same order: out[s] is 0)
        s0 = s1 = s2 = 0.0
        for i in range(a, b):
            ci = chan_index[i]
            s0 += chan[ci, 0]
            s1 += chan[ci, 1]
            s2 += chan[ci, 2]
        out[s, 0] += s0
        out[s, 1] += s1
        out[s, 2] += s2
        return
    for i in range(a, b):
        add_sums(out, s, chan, chan_index[i], i, mult, wmult, mode)
