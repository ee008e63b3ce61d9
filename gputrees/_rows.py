"""The grower's row side: the (tree, row) pairs still in growing nodes.

The grower (:mod:`gputrees._grower`) decides splits from node statistics and
histograms only; everything that touches rows goes through a *row set*:

* ``histograms(slots, n_slots, n_bins)``: histograms of some nodes;
* ``sums(slots, n_slots)``: channel sums of some nodes;
* ``route(slots, split, base, missing_bin)``: send the rows of split nodes to
  their children;
* ``retire(slots)``: rows of nodes that will not be split again leave the
  active set (their leaf is recorded when leaves are recorded);
* ``row_leaves(finish)``: the leaf of every row once the trees are laid out.

``slots`` is always a node table (int64, one entry per node id created so
far): the position of the node among the nodes asked about, or -1. The node
side computes it once and every row set reads it the same way.

:class:`LocalRows` keeps the pairs as arrays next to the data (this module);
:mod:`gputrees.dask` implements the same methods over the workers of a Dask
cluster, each holding a :class:`LocalRows` of its own partitions, and sums
their histograms and sums: only node-sized arrays travel.
"""

from __future__ import annotations


import numpy as np

from ._backend import to_numpy
from ._records import ActiveRows, LeafLayout, batch_trees
from .kernels.reference import children_slot_table

#: :meth:`LocalRows.retire` copies the staying and leaving pairs as slices of
#: their node runs when they form at most this many blocks (a depth-6 tree's
#: level has at most 64 nodes); beyond, one boolean mask over all the pairs
RETIRE_MAX_BLOCKS = 64


class LocalRows:
    """The active (tree, row) pairs of one fit, as device arrays beside the data.

    Parameters
    ----------
    xp : array namespace
    codes : array of shape (n_samples, n_features), uint8/uint16
    channels : array of shape (n_samples, C) or (n_trees, n_samples, C), float64
    kernels : Kernels
    multiplicity, weight_multiplicity : arrays of shape (n_trees, n_samples), float64, or None
        See :class:`gputrees._records.GrowerInputs`.
    record_leaves : bool
        Record the node every pair leaves the active set in.
    codes_by_feature : array of shape (n_features, n_samples) or None
        ``codes`` feature-major, for kernel sets whose routing reads it
        (``Kernels.codes_by_feature``); made here when such a set is not given
        one (a fit growing several batches makes it once and passes it).
    histogram_count : bool, default=True
        Whether the histograms carry channel 0 (the row count). False: they
        hold channels ``1:`` only (boosting's ``[G, H]``, see
        :class:`gputrees._grower.Grower`); sums keep every channel.
    """

    def __init__(self, xp, codes, channels, kernels, multiplicity=None, weight_multiplicity=None,
                 record_leaves=False, codes_by_feature=None, histogram_count=True):
        self.xp = xp
        self.codes = codes
        self.kernels = kernels
        if codes_by_feature is None:
            codes_by_feature = kernels.feature_major(xp, codes)
        self.codes_by_feature = codes_by_feature
        self.n = int(codes.shape[0])
        self.n_channels = int(channels.shape[-1])
        self.histogram_count = bool(histogram_count)
        self.per_tree_channels = channels.ndim == 3
        if self.per_tree_channels and multiplicity is not None:
            raise ValueError("per-tree channels (3-D) cannot be combined with a multiplicity")
        if record_leaves and multiplicity is not None:
            raise ValueError("record_leaves needs every (tree, row) pair active (multiplicity None)")
        self.record_leaves = record_leaves
        # channels looked up by key = tree * n + row (3-D) or by row (2-D)
        self.chan = xp.reshape(channels, (-1, self.n_channels)) if self.per_tree_channels else channels
        self._leaf_keys, self._leaf_nodes = [], []
        # positions of every node id's pairs when known (ActiveRows.bounds),
        # and the children's sums of the last routing: (first child, count, sums)
        self.bounds = None
        self._child_sums = None
        self.wmult = None
        self.n_trees = batch_trees(channels, multiplicity)
        if multiplicity is None and self.per_tree_channels:
            self.key = xp.arange(self.n_trees * self.n, dtype=xp.int64)
            # one tree: key == row, and one array (not two equal ones) moves
            # through the routing passes
            self.row = self.key if self.n_trees == 1 else self.key % self.n
            # one tree: all zeros (not an integer division of every key, a
            # pass over the rows every boosting round)
            self.node = xp.zeros(self.n, dtype=xp.int64) if self.n_trees == 1 else self.key // self.n
            self.mult = None
        elif multiplicity is None:
            self.row = xp.arange(self.n, dtype=xp.int64)
            self.key = self.row
            self.node = xp.zeros(self.n, dtype=xp.int64)
            self.mult = None
        else:
            flat = xp.reshape(multiplicity, (-1,))
            sel = xp.astype(xp.nonzero(flat > 0)[0], xp.int64)
            self.key = sel
            self.row = sel % self.n
            self.node = sel // self.n
            self.mult = xp.take(flat, sel)
            if weight_multiplicity is not None:
                self.wmult = xp.take(xp.reshape(weight_multiplicity, (-1,)), sel)
        # the pairs start sorted by node (= tree): their runs, without a pass
        self.bounds = xp.astype(xp.searchsorted(self.node, xp.arange(self.n_trees + 1, dtype=xp.int64)), xp.int64)

    def active(self) -> ActiveRows:
        return ActiveRows(
            row=self.row,
            chan_index=self.key if self.per_tree_channels else self.row,
            node=self.node,
            mult=self.mult,
            wmult=self.wmult,
            key=self.key,
            bounds=self.bounds,
        )

    def histograms(self, slots, n_slots: int, n_bins: int, features=None):
        """Histograms (n_slots, n_features, n_bins, C), float64, of the nodes with a slot.

        C is ``n_channels``, or ``n_channels - 1`` without ``histogram_count``
        (the channels after the count: a view of the table's columns, which
        the kernels read in place). ``features`` (n_slots, k) int64: each
        slot's histograms over these features only, (n_slots, k, n_bins, C)
        (``Kernels.drawn_histograms``, else gathered from every feature's).
        """
        xp = self.xp
        chan = self.chan if self.histogram_count else self.chan[:, 1:]
        args = (xp, self.codes, self.active(), chan, slots, n_slots, n_bins)
        if features is None:
            return self.kernels.node_histograms(*args)
        return self.kernels.drawn_histograms(*args, features)

    def sums(self, slots, n_slots: int):
        """Channel sums (n_slots, C), float64, of the nodes with a slot.

        The children of the last routing, asked for in their order (slot
        ``t`` for child ``base + t``), come from the routing pass when the
        kernels summed them there (``Kernels.route_and_sum``).
        """
        cached, self._child_sums = self._child_sums, None
        if cached is not None and self._is_children_table(slots, n_slots, *cached[:2]):
            return cached[2]
        return self.kernels.node_sums(self.xp, self.active(), self.chan, slots, n_slots)

    def _is_children_table(self, slots, n_slots, base, count):
        if n_slots != count or int(slots.shape[0]) < base + count:
            return False
        return bool(self.xp.all(slots == children_slot_table(self.xp, int(slots.shape[0]), base, count)))

    def counts(self, first: int, count: int):
        """Pairs (count,) float64 in the nodes ``first .. first + count - 1`` (with multiplicities, their total).

        From the node runs when the last routing gave them and the pairs have
        no multiplicities, else the sums of a channel of ones.
        """
        xp = self.xp
        b = self.bounds
        if b is not None and self.mult is None and int(b.shape[0]) >= first + count + 1:
            return xp.astype(b[first + 1 : first + count + 1] - b[first : first + count], xp.float64)
        ones = xp.ones((int(self.chan.shape[0]), 1), dtype=xp.float64)
        table = children_slot_table(xp, first + count, first, count)
        return self.kernels.node_sums(xp, self.active(), ones, table, count)[:, 0]

    def route(self, slots, split, base: int, missing_bin: int, sums: bool = True) -> None:
        """Send the pairs of the split nodes (those with a slot) to their children.

        The children of the node in slot ``s`` are ``base + 2 s`` (left) and
        ``base + 2 s + 1``; ``split`` is the nodes' SplitRecord, by slot.
        ``sums``: the children's sums will be asked for (:meth:`sums`), and
        kernels that make them while routing (``Kernels.route_and_sum``) do.
        """
        args = (self.xp, self.codes, self.active())
        kw = {} if self.codes_by_feature is None else {"codes_by_feature": self.codes_by_feature}
        if sums:
            routed, child_sums = self.kernels.route_and_sum(*args, self.chan, slots, split, base, missing_bin, **kw)
            self._child_sums = (base, 2 * int(split.feature.shape[0]), child_sums)
        else:
            routed = self.kernels.route_rows(*args, slots, split, base, missing_bin, **kw)
            self._child_sums = None
        # the kernels may regroup the pairs (by node): take every array back
        self.row, self.node, self.key = routed.row, routed.node, routed.key
        self.mult, self.wmult = routed.mult, routed.wmult
        self.bounds = routed.bounds

    def retire(self, slots) -> None:
        """Keep only the pairs whose node has a slot (``slots`` None: none is kept)."""
        xp = self.xp
        m = int(self.node.shape[0])
        staying = None  # the staying pairs' node runs, where the runs are known
        if m and slots is not None and self.bounds is not None:
            # counted from the node runs, without a pass over the pairs
            staying = self._staying_bounds(slots)
            kept = int(staying[-1])
            if kept == m:
                return
            if kept and self._retire_runs(slots, staying):
                return
        kept = 0
        if slots is not None:
            hit = xp.take(slots, self.node) >= 0
            kept = int(xp.sum(xp.astype(hit, xp.int64)))
        if m and kept == m:  # every pair stays (a level of a depth-limited tree): nothing to gather
            return
        if kept == 0:  # every pair leaves: the arrays themselves are recorded, not copies
            self._keep(lambda arrays: [a[0:0] for a in arrays], lambda a: a)
        else:
            self._keep(lambda arrays: self._compress(arrays, hit), lambda a: a[~hit])
        # the staying nodes' runs, in order: known without a pass
        self.bounds = staying if kept else None

    def _staying_bounds(self, slots):
        """``bounds`` of the pairs whose node has a slot once the others are gone (node runs keep their order)."""
        xp = self.xp
        n_ids = min(int(self.bounds.shape[0]) - 1, int(slots.shape[0]))
        runs = self.bounds[1 : n_ids + 1] - self.bounds[:n_ids]
        runs = xp.where(slots[:n_ids] >= 0, runs, xp.zeros_like(runs))
        return xp.concat([xp.zeros(1, dtype=xp.int64), xp.cumulative_sum(runs)])

    def _compress(self, arrays, hit):
        """``[a[hit] for a in arrays]``, in one call of the kernel set's ``keep_pairs`` where it has one."""
        return self.kernels.keep_pairs(self.xp, arrays, hit)

    def _keep(self, stay, leave) -> None:
        """Record the leaving pairs (keys and nodes) and keep the staying ones (every pair array).

        ``stay``: from a list of pair arrays to their staying pairs' arrays,
        in order; ``leave``: from a pair array to its leaving pairs, in order.
        """
        if self.record_leaves:
            self._leaf_keys.append(leave(self.key))
            self._leaf_nodes.append(leave(self.node))
        one = self.key is self.row
        names = ["row", "node"] + ([] if one else ["key"])
        names += [name for name in ("mult", "wmult") if getattr(self, name) is not None]
        for name, a in zip(names, stay([getattr(self, name) for name in names])):
            setattr(self, name, a)
        if one:
            self.key = self.row
        self._child_sums = None

    def _retire_runs(self, slots, staying) -> bool:
        """:meth:`retire` by copying the pairs' runs (they are grouped by node id), when they are few.

        The pairs of consecutive node ids that all stay (or all leave) are one
        block: at most :data:`RETIRE_MAX_BLOCKS` blocks are copied as slices,
        without a pass over every pair's node and a boolean mask; the runs
        stay known (``staying``, from :meth:`_staying_bounds`). Returns
        False, having changed nothing, when there are more blocks.
        """
        xp = self.xp
        n_ids = int(staying.shape[0]) - 1
        bounds = to_numpy(self.bounds[: n_ids + 1])
        keep = to_numpy(slots[:n_ids]) >= 0
        # the runs of pairs lie one after the other: a block is a stretch of
        # non-empty runs on the same side (found without a loop over nodes,
        # which a forest's level has thousands of)
        filled = np.flatnonzero(bounds[1:] > bounds[:-1])
        side = keep[filled]
        turns = np.flatnonzero(side[1:] != side[:-1]) + 1
        if turns.shape[0] + 1 > RETIRE_MAX_BLOCKS:
            return False
        first = np.concatenate([[0], turns])
        last = np.concatenate([turns, [filled.shape[0]]]) - 1
        blocks = {True: [], False: []}  # (start, end) of the staying and the leaving pairs
        for a, b in zip(first, last):
            blocks[bool(side[a])].append((bounds[filled[a]], bounds[filled[b] + 1]))

        def cut(a, side):
            parts = [a[int(lo) : int(hi)] for lo, hi in blocks[side]]
            return parts[0] if len(parts) == 1 else xp.concat(parts)

        self._keep(lambda arrays: [cut(a, True) for a in arrays], lambda a: cut(a, False))
        self.bounds = staying
        return True

    def rows_of(self, slots):
        """Rows, slots and weighted channels of the pairs whose node has a slot.

        For the sort-based split search of small nodes (which reads rows).

        Returns
        -------
        rows : (m,) int64
        slot : (m,) int64
        weights : (m, C) float64
        """
        xp = self.xp
        slot = xp.take(slots, self.node)
        hit = slot >= 0
        rows, slot = self._compress([self.row, slot], hit)
        return rows, slot, self.kernels.pair_weights(xp, self.active(), self.chan, hit)

    def row_leaves(self, layout: LeafLayout):
        """Leaf of every (tree, row), (n_trees, n) int64, in the final node numbering.

        Rows recorded in a node that was not kept (a speculative best-first
        child) belong to its nearest kept ancestor.
        """
        xp = self.xp
        self.retire(None)  # rows still active (best-first stop, unsplittable root)
        keys = xp.concat(self._leaf_keys) if len(self._leaf_keys) > 1 else self._leaf_keys[0]
        nodes = xp.concat(self._leaf_nodes) if len(self._leaf_nodes) > 1 else self._leaf_nodes[0]
        total = self.n_trees * self.n
        if int(keys.shape[0]) != total:
            raise RuntimeError(f"recorded {int(keys.shape[0])} row leaves, expected {total}")
        # the node of every key, in key order: keys are a permutation of 0 .. total - 1
        nodes = self.kernels.scatter_rows(xp, keys, nodes, total)
        # every node kept (depth-wise growth): no walk; the test reads the node table, not every row
        if not bool(xp.all(layout.keep)):
            for _ in range(layout.n_rounds + 1):  # at most one step per round
                kept = xp.take(layout.keep, nodes)
                if bool(xp.all(kept)):
                    break
                nodes = xp.where(kept, nodes, xp.take(layout.parent, nodes))
        # the two renumberings composed on the node table, then one gather per row;
        # a node not kept maps to an in-range entry (new_id counts the kept
        # nodes before it) that no row reads any more
        local_of_node = xp.take(layout.local_of_new, layout.new_id)
        return xp.reshape(xp.take(local_of_node, nodes), (self.n_trees, self.n))
