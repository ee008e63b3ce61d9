"""A row set (:mod:`gputrees._rows`) whose passes are the compiled tree's: rows grouped by node in one index array.

:class:`~gputrees._rows.LocalRows` keeps the active (tree, row) pairs as
arrays of rows, nodes and keys that every routing rewrites, in fresh
arrays. :class:`SegmentRows` keeps them as :func:`gputrees.kernels.cpu.grow`'s
compiled tree does: one array of row indices, each node's rows one segment
of it in row order, a split partitioning its parent's segment stably in
place (:func:`~gputrees.kernels.cpu.grow.partition_rows`), a node leaving
the active set writing its rows' leaf (:func:`~gputrees.kernels.cpu.grow.mark_leaves`);
the histograms and sums read the segments (``grouped_histograms``,
``run_sums``) with the same rows in the same order as
:class:`~gputrees._rows.LocalRows`, so the trees grown over it are the same
(bit for bit, but for the histograms' blocks of rows: see
:class:`SegmentRows`). Its buffers are reused from one batch to the next.

It covers what a boosting round grows level by level over rows the grower
does not hold (a Dask worker's, :mod:`gputrees.dask`): every row once in
each of the round's trees, no multiplicities; :func:`segment_rows` declines
anything else.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .binning import feature_major_codes
from .grow import (
    leaf_pass, leaf_pass_serial, mark_leaves, mark_leaves_serial, partition_rows, partition_rows_serial,
    threaded_rows,
)
from .histograms import UNIT_SECOND, grouped_histograms, run_drawn_histograms
from .jit import JIT, Threads, threads_for
from .memory import PREFETCH_AHEAD, as_int64, at, prefetch, row_bytes
from .pairs import run_sums, run_sums_serial

__all__ = ["SegmentRows", "segment_rows"]

_EMPTY_F = np.empty(0, dtype=np.float64)


def segment_rows(xp, codes, channels, codes_by_feature=None, previous=None, unit_count=False, unit_hessian=False, *,
                 n_threads: int = 1):
    """A :class:`SegmentRows` over every row of ``channels``' trees, or None where it does not cover them.

    Parameters
    ----------
    xp : array namespace (NumPy)
    codes : ndarray of shape (n, n_features), uint8/uint16
    channels : ndarray of shape (n, C) or (K, n, C), float64
        The rows' channels (one table per tree, or one for a single tree).
    codes_by_feature : ndarray of shape (n_features, n) or None
        ``codes`` feature-major (made here when not given).
    previous : SegmentRows or None
        The row set of the batch before over the same ``codes``, whose
        buffers this one takes over.
    unit_count : bool
        Channel 0 is 1 on every row (a round without row subsample): a
        root's count histogram is then every row's codes counted, kept in
        the buffers for the next batches.
    unit_hessian : bool
        Channel 2 (the hessian) is 1 on every row (squared error, no
        weights): the count-free histograms read the gradients alone.
    n_threads : int
    """
    if not (isinstance(codes, np.ndarray) and isinstance(channels, np.ndarray) and channels.dtype == np.float64
            and channels.ndim in (2, 3) and codes.ndim == 2 and channels.shape[-2] == codes.shape[0]):
        return None
    return SegmentRows(codes, codes_by_feature, channels, n_threads, previous, unit_count, unit_hessian)


@numba.njit(**JIT)
def _count_histograms(codes, order, chan, start, end, out, ahead, unit):
    """``out[s, f, b]``: the sum of channel 0 over slot ``s``'s rows ``order[start[s]:end[s]]`` whose feature
    ``f`` has code ``b``, in row order (zeros where ``start[s]`` is -1); rows ``ahead`` positions on prefetched.
    ``unit``: channel 0 is 1 on every row, not read (a node's rows lie far apart: each read is a cache miss).

    Summed in a scratch histogram whose features lie an odd number of bins
    apart (``histograms._scratch_bins``' reason: no 4K aliasing between
    features' bins), then copied out.
    """
    n_features, n_bins = codes.shape[1], out.shape[2]
    h = np.empty((n_features, n_bins | 1))
    for s in range(start.shape[0]):
        h[:] = 0.0
        if start[s] >= 0:
            stop = end[s] - ahead
            for i in range(start[s], end[s]):
                if i < stop:
                    prefetch(codes, order[i + ahead])
                    if not unit:
                        prefetch(chan, order[i + ahead])
                r = order[i]
                c = 1.0 if unit else chan[r, 0]
                for f in range(n_features):
                    h[f, at(codes, r, f)] += c
        for f in range(n_features):
            for b in range(n_bins):
                out[s, f, b] = h[f, b]


@dataclass
class _Buffers:
    """The work arrays of a row set, handed from one batch's to the next (written before they are read)."""

    order: np.ndarray  # (K n,) rows grouped by node
    spare: np.ndarray  # (K n,) the partitions' output
    go: np.ndarray  # (K n,) bool, each row's side
    leaf: np.ndarray  # (K n,) the node each (tree, row) pair left the active set in
    iota: np.ndarray  # (n,) 0 .. n - 1
    #: (codes, n_bins, counts (F, n_bins)): every row's codes counted, a root's count histogram where each row
    #: counts 1 (the same every round of a fit)
    all_counts: tuple = ()

    @classmethod
    def new(cls, n_trees: int, n: int) -> "_Buffers":
        m = n_trees * n
        return cls(np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64), np.empty(m, dtype=np.bool_),
                   np.empty(m, dtype=np.int64), np.arange(n, dtype=np.int64))


class SegmentRows:
    """The active (tree, row) pairs of a batch as node segments of one array of rows.

    Position ``t n + i`` of ``order`` holds a row of tree ``t`` (rows
    ``0 .. n - 1``), so the pairs of every tree lie in ``order``'s block
    ``t n : (t + 1) n``; node ``k``'s pairs are the segment ``seg_a[k] :
    seg_b[k]``, in row order. See :class:`gputrees._rows.LocalRows` for the
    methods' contract. Use :func:`segment_rows`.

    The histograms' channel 0 (boosting's in-bag count of a row, 0 or 1) is
    summed in a pass of its own, the other channels by ``grouped_histograms``:
    with few features the histograms of ``[g, h]`` fit a core's L1 cache
    where those of ``[count, g, h]`` do not (twice as fast on 6 features).
    Its sums are integers, exact in any order; the others' are as
    ``grouped_histograms`` adds them for two channels: a node of a few
    hundred thousand rows is summed in blocks of rows whose size depends on
    the channels (``histograms._block_rows``), so its ``[g, h]`` sums may
    differ from three-channel histograms' in the last bits (they are then
    the compiled tree's, whose histograms have those two channels).
    """

    def __init__(self, codes, codes_by_feature, channels, n_threads: int = 1, previous=None, unit_count=False,
                 unit_hessian=False):
        chan = channels if channels.ndim == 3 else channels[None]
        self.n_trees, self.n, self.n_channels = (int(d) for d in chan.shape)
        self.codes = np.ascontiguousarray(codes)
        self.codes_t = feature_major_codes(self.codes, codes_by_feature)
        self.chan = [np.ascontiguousarray(chan[t]) for t in range(self.n_trees)]
        self.n_threads = int(n_threads)
        self.unit_count = bool(unit_count)
        #: channel 2 is 1 on every row: the count-free histograms read each tree's gradients (:meth:`_gradients`)
        #: and add 1.0 for the hessian (``histograms.UNIT_SECOND``), 8 bytes a row read instead of 24
        self.unit_hessian = bool(unit_hessian) and self.n_channels == 3
        self._g = [None] * self.n_trees
        #: whether the histograms carry the count channel (the grower's count-free histograms: channels 1.. only)
        self.histogram_count = True
        self.row_bytes = row_bytes(self.codes, self.n_channels)  # each row's channels read with its codes
        self._route = None  # the last routing, not made yet (see :meth:`route`)
        buffers = None if previous is None else previous._buffers
        if buffers is None or buffers.order.shape[0] != self.n_trees * self.n or buffers.iota.shape[0] != self.n:
            buffers = _Buffers.new(self.n_trees, self.n)
        self._buffers = buffers
        n = self.n
        for t in range(self.n_trees):
            np.copyto(buffers.order[t * n:(t + 1) * n], buffers.iota)
        # per node id (grown by doubling): its segment and tree
        cap = max(64, 4 * self.n_trees)
        self.seg_a = np.zeros(cap, dtype=np.int64)
        self.seg_b = np.zeros(cap, dtype=np.int64)
        self.tree = np.zeros(cap, dtype=np.int64)
        roots = np.arange(self.n_trees, dtype=np.int64)
        self.seg_a[: self.n_trees] = roots * n
        self.seg_b[: self.n_trees] = (roots + 1) * n
        self.tree[: self.n_trees] = roots
        self.n_ids = self.n_trees
        self.active = roots  # active node ids, sorted

    # -- node segments -------------------------------------------------------
    def _grow_ids(self, n_ids: int) -> None:
        cap = self.seg_a.shape[0]
        if n_ids <= cap:
            return
        cap = max(n_ids, 2 * cap)
        for name in ("seg_a", "seg_b", "tree"):
            old = getattr(self, name)
            new = np.zeros(cap, dtype=np.int64)
            new[: old.shape[0]] = old
            setattr(self, name, new)

    def _slots_of(self, slots, nodes):
        """Each of ``nodes``' slot in the table ``slots`` (-1 where it has none or the table is shorter)."""
        slots = as_int64(slots)
        out = np.full(nodes.shape[0], -1, dtype=np.int64)
        inside = nodes < slots.shape[0]
        out[inside] = slots[nodes[inside]]
        return out

    def _runs(self, slots, n_slots: int):
        """(node, start, end) of every slot: its active node's segment; start -1 where it has no rows here (the
        kernels' mark of an empty run), node -1 too where no active node has the slot."""
        slot = self._slots_of(slots, self.active)
        hit = slot >= 0
        node = np.full(n_slots, -1, dtype=np.int64)
        node[slot[hit]] = self.active[hit]
        start = np.full(n_slots, -1, dtype=np.int64)
        end = np.zeros(n_slots, dtype=np.int64)
        has = node >= 0
        a, b = self.seg_a[node[has]], self.seg_b[node[has]]
        start[has] = np.where(b > a, a, -1)
        end[has] = np.where(b > a, b, 0)
        return node, start, end

    def _by_tree(self, node):
        """Per tree with slots: (tree, its slots), the slots in order (one tree: every slot, as one array)."""
        if self.n_trees == 1:
            return [(0, None)]
        tree = np.where(node >= 0, self.tree[np.maximum(node, 0)], -1)
        return [(t, np.flatnonzero(tree == t)) for t in range(self.n_trees) if np.any(tree == t)]

    # -- the row-set methods -------------------------------------------------
    def histograms(self, slots, n_slots: int, n_bins: int, features=None):
        """Histograms (n_slots, n_features, n_bins, C) of the nodes with a slot (over ``features`` (n_slots, k)
        only where given: (n_slots, k, n_bins, C)); every bin written. Without :attr:`histogram_count`, C - 1
        channels (1 ..)."""
        self._settle()
        node, start, end = self._runs(slots, int(n_slots))
        width = int(self.codes.shape[1]) if features is None else int(features.shape[1])
        feats = None if features is None else as_int64(features)

        def tree_histograms(t, sel):
            s, e = (start, end) if sel is None else (start[sel], end[sel])
            threads = threads_for(self.n_threads, int(np.sum(e - np.maximum(s, 0))) * width)
            order = self._buffers.order
            if feats is not None:
                drawn = run_drawn_histograms(self.codes, order, order, _EMPTY_F, _EMPTY_F, 0, self.chan[t], 0,
                                             self.n_channels, s, e, feats if sel is None else feats[sel], int(n_bins),
                                             threads)
                return drawn if self.histogram_count else drawn[..., 1:]
            # the count channel apart (see the class docstring): the others' histograms then fit a core's L1 cache
            m, c = s.shape[0], self.n_channels
            rest = np.empty((m, width, int(n_bins), c - 1))
            every_bin = np.full(width, int(n_bins) - 1, dtype=np.int64)
            if self.unit_hessian and not self.histogram_count:  # [G, H] of the gradients and ones
                chan, mode, first, nbytes = self._gradients(t), UNIT_SECOND, 0, row_bytes(self.codes, 1)
            else:
                chan, mode, first, nbytes = self.chan[t], 0, 1, self.row_bytes
            with Threads(threads):
                grouped_histograms(self.codes, order, order, _EMPTY_F, _EMPTY_F, np.int64(mode), chan, s, e,
                                   int(n_bins), threads, nbytes, rest, first, every_bin, threads)
            if not self.histogram_count:
                return rest
            counts = np.empty((m, width, int(n_bins)))
            whole = (s == t * self.n) & (e == (t + 1) * self.n) if self.unit_count else np.zeros(m, dtype=bool)
            _count_histograms(self.codes, order, self.chan[t], np.where(whole, -1, s), e, counts, PREFETCH_AHEAD,
                              self.unit_count)
            if whole.any():
                counts[whole] = self._all_counts(int(n_bins))
            out = np.empty((m, width, int(n_bins), c))
            out[..., 0] = counts
            out[..., 1:] = rest
            return out

        c_out = self.n_channels - (0 if self.histogram_count else 1)
        return self._gather(node, tree_histograms, (width, int(n_bins), c_out))

    def _gradients(self, t: int):
        """Tree ``t``'s gradients (channel 1), (n, 1) C-contiguous: copied once a batch, on first use."""
        if self._g[t] is None:
            self._g[t] = np.ascontiguousarray(self.chan[t][:, 1:2])
        return self._g[t]

    def _all_counts(self, n_bins: int):
        """Every row's codes counted (n_features, n_bins), float64: made once for the buffers' codes."""
        b = self._buffers
        if not (b.all_counts and b.all_counts[0] is self.codes and b.all_counts[1] == n_bins):
            ones = np.ones((1, 1))  # (not read: every row counts 1)
            counts = np.empty((1, int(self.codes.shape[1]), n_bins))
            _count_histograms(self.codes, b.iota, ones, np.zeros(1, dtype=np.int64), np.full(1, self.n), counts,
                              PREFETCH_AHEAD, True)
            b.all_counts = (self.codes, n_bins, counts[0])
        return b.all_counts[2]

    def sums(self, slots, n_slots: int):
        """Channel sums (n_slots, C) of the nodes with a slot, each its segment's rows in row order."""
        self._settle()
        node, start, end = self._runs(slots, int(n_slots))

        def tree_sums(t, sel):
            s, e = (start, end) if sel is None else (start[sel], end[sel])
            # no more threads than nodes (as pairs.node_sums)
            threads = min(threads_for(self.n_threads, int(np.sum(e - np.maximum(s, 0)))), max(1, int(np.sum(s >= 0))))
            with Threads(threads):
                kernel = run_sums if threads > 1 else run_sums_serial
                return np.ascontiguousarray(kernel(self._buffers.order, _EMPTY_F, _EMPTY_F, 0, self.chan[t], s, e))

        return self._gather(node, tree_sums, (self.n_channels,))

    def _gather(self, node, per_tree, shape):
        """``per_tree(t, sel)``'s results for each tree's slots (:meth:`_by_tree`) as one array of every slot."""
        parts = [(sel, per_tree(t, sel)) for t, sel in self._by_tree(node)]
        if len(parts) == 1 and parts[0][0] is None:
            return parts[0][1]
        out = np.zeros((node.shape[0],) + shape, dtype=np.float64)  # slots of no active node: zeros
        for sel, part in parts:
            out[sel] = part
        return out

    def counts(self, first: int, count: int):
        """Pairs (count,) float64 in the nodes ``first .. first + count - 1``."""
        self._settle()
        ids = np.arange(first, first + count, dtype=np.int64)
        return (self.seg_b[ids] - self.seg_a[ids]).astype(np.float64)

    def route(self, slots, split, base: int, missing_bin: int, sums: bool = True) -> None:
        """Send the rows of the split nodes (those with a slot) to their children ``base + 2 s`` (left) and
        ``base + 2 s + 1``, each child's rows a segment of its parent's in row order. ``sums``: unused (the
        children are summed when asked, :meth:`sums`).

        Made when the segments are next read: a routing whose children all
        leave at once (the last level of a depth-limited tree) writes the
        rows' leaves in one pass instead, the rows not moved (:meth:`retire`).
        """
        self._settle()
        slot = self._slots_of(slots, self.active)
        hit = slot >= 0
        s = slot[hit]
        rules = (as_int64(split.feature)[s], as_int64(split.bin)[s],
                 np.ascontiguousarray(split.missing_left, dtype=np.bool_)[s], int(missing_bin),
                 np.ascontiguousarray(split.is_categorical, dtype=np.bool_)[s],
                 np.ascontiguousarray(np.asarray(split.cat_left, dtype=np.bool_)[s]))
        self._route = (hit, self.active[hit], s, rules, int(base), int(base) + 2 * int(split.feature.shape[0]))

    def _settle(self) -> None:
        """Make the deferred routing (:meth:`route`): partition the split nodes' segments, the children active."""
        if self._route is None:
            return
        (hit, sel, s, rules, base, top), self._route = self._route, None
        b = self._buffers
        if sel.shape[0]:
            args = (self.codes_t, b.order, b.spare, b.go, self.seg_a, self.seg_b, sel, *rules)
            if threaded_rows(self.seg_a, self.seg_b, sel, self.n_threads):
                with Threads(self.n_threads):
                    n_left = partition_rows(*args)
            else:
                n_left = partition_rows_serial(*args)
            # the nodes staying unsplit keep their rows (the partition wrote only the split nodes' segments)
            for k in self.active[~hit]:
                b.spare[self.seg_a[k]:self.seg_b[k]] = b.order[self.seg_a[k]:self.seg_b[k]]
            b.order, b.spare = b.spare, b.order
        else:
            n_left = np.zeros(0, dtype=np.int64)
        left = base + 2 * s
        self._grow_ids(top)
        self.seg_a[left], self.seg_b[left] = self.seg_a[sel], self.seg_a[sel] + n_left
        self.seg_a[left + 1], self.seg_b[left + 1] = self.seg_a[sel] + n_left, self.seg_b[sel]
        self.tree[left] = self.tree[left + 1] = self.tree[sel]
        self.n_ids = max(self.n_ids, top)
        self.active = np.sort(np.concatenate([self.active[~hit], left, left + 1]))

    def _leaves_of_route(self, slots) -> bool:
        """Where the deferred routing's children all leave at once (none has a slot in ``slots``; one tree, the
        split nodes in slot order): every split node's rows get their child as their leaf in one pass
        (``grow.leaf_pass``), the rows not moved, and the split nodes leave. Whether it did."""
        hit, sel, s, rules, base, top = self._route
        left = base + 2 * s
        if self.n_trees != 1 or not np.array_equal(s, np.arange(s.shape[0])):
            return False
        if slots is not None and (np.any(self._slots_of(slots, left) >= 0)
                                  or np.any(self._slots_of(slots, left + 1) >= 0)):
            return False
        self._route = None
        b = self._buffers
        if sel.shape[0]:
            args = (self.codes_t, b.order, self.seg_a, self.seg_b, sel, *rules[:3], rules[3], *rules[4:],
                    b.leaf[: self.n], base)
            if threaded_rows(self.seg_a, self.seg_b, sel, self.n_threads):
                with Threads(self.n_threads):
                    leaf_pass(*args, self.n_threads)
            else:
                leaf_pass_serial(*args, 1)
        self._grow_ids(top)
        self.n_ids = max(self.n_ids, top)
        self.active = self.active[~hit]
        return True

    def retire(self, slots) -> None:
        """Keep only the nodes with a slot (``slots`` None: none); the others' rows note them as their leaf."""
        if self._route is None or not self._leaves_of_route(slots):
            self._settle()
        leaving = self.active if slots is None else self.active[self._slots_of(slots, self.active) < 0]
        if leaving.shape[0] == 0:
            return
        b, n = self._buffers, self.n
        for t, sel in self._by_tree(leaving):
            nodes = leaving if sel is None else leaving[sel]
            leaf = b.leaf[t * n:(t + 1) * n]
            if threaded_rows(self.seg_a, self.seg_b, nodes, self.n_threads):
                with Threads(self.n_threads):
                    mark_leaves(b.order, self.seg_a, self.seg_b, nodes, leaf, self.n_threads)
            else:
                mark_leaves_serial(b.order, self.seg_a, self.seg_b, nodes, leaf, 1)
        self.active = self.active[np.isin(self.active, leaving, assume_unique=True, invert=True)]

    def row_leaves(self, layout):
        """Leaf of every (tree, row), (n_trees, n) int64, in the final node numbering (see
        :meth:`gputrees._rows.LocalRows.row_leaves`): the nodes renumbered once, then one gather a pair."""
        self.retire(None)
        keep, parent = np.asarray(layout.keep), np.asarray(layout.parent)
        node = np.arange(keep.shape[0], dtype=np.int64)
        for _ in range(int(layout.n_rounds) + 1):  # a node not kept belongs to its nearest kept ancestor
            kept = keep[node]
            if kept.all():
                break
            node = np.where(kept, node, parent[node])
        final = np.asarray(layout.local_of_new)[np.asarray(layout.new_id)[node]]
        return final[self._buffers.leaf].reshape(self.n_trees, self.n)
