"""A batch's created nodes and expanded nodes' split rules, written in place into arrays reserved up front.

A batch of fully grown trees has millions of nodes, recorded in parts (a
level's children, each call of the subtree kernel). Kept as lists of parts,
the parts are written once and copied again into one array per field at the
end: every node's fields written twice to memory touched for the first time
(the pages the operating system has to clear, and a virtual machine to back).
:class:`NodeColumns` reserves arrays for the most nodes the batch can hold
(a tree of ``n`` rows has at most ``2 n - 1``) without touching them; each
part is written at its place, and the end reads slices. Host (NumPy) arrays
only: the subtree kernel's fits, which run on the CPU.
"""

from __future__ import annotations

import os

import numpy as np

#: Share of the machine's memory a batch may reserve (address space only, until written)
RESERVED_SHARE = 0.5
#: Room (bytes) below which a batch keeps lists: its parts are small blocks the allocator hands out again
#: from memory already written (a 10,000-row forest's: 5% faster), where large parts are new mappings each time
MIN_RESERVED_BYTES = 1 << 28


def _machine_bytes() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # not reported: reserve nothing
        return 0


class NodeColumns:
    """Nodes (parent, depth, tree, statistics) and splits (ids, rules, first children) of one batch, in id order
    and expansion order, at the front of arrays reserved for ``node_room`` nodes and ``split_room`` splits.

    Parameters
    ----------
    node_room, split_room : int
    n_channels : int
        Columns of the statistics.
    cat_width : int
        Columns of the codes sent left (:func:`gputrees._records.category_width`), 0 without categorical
        features.
    """

    def __init__(self, node_room: int, split_room: int, n_channels: int, cat_width: int):
        i8 = np.int64
        self.parent, self.depth, self.tree = (np.empty(node_room, dtype=i8) for _ in range(3))
        self.stats = np.empty((node_room, n_channels), dtype=np.float64)
        self.split_ids, self.feature, self.bin, self.first_child = (np.empty(split_room, dtype=i8) for _ in range(4))
        self.missing_left = np.empty(split_room, dtype=np.bool_)
        self.threshold = np.empty(split_room, dtype=np.float64)
        self.is_categorical = np.empty(split_room, dtype=np.bool_)
        # zeroed (pages the system maps zeroed when first read or written): the subtree kernel writes only
        # categorical splits' rows
        self.cat_left = np.zeros((split_room, cat_width), dtype=np.bool_)
        self.n_nodes = 0
        self.n_splits = 0

    @classmethod
    def reserve(cls, n_trees: int, n_rows: int, n_channels: int, cat_width: int) -> "NodeColumns | None":
        """Columns with room for every node ``n_trees`` trees of ``n_rows`` rows can have, or None where that
        room is under :data:`MIN_RESERVED_BYTES` or over :data:`RESERVED_SHARE` of the machine's memory (the
        caller keeps lists)."""
        node_room = max(1, n_trees * (2 * n_rows - 1))
        split_room = max(1, n_trees * n_rows)
        need = node_room * 8 * (3 + n_channels) + split_room * (8 * 5 + 2 + cat_width)
        if not MIN_RESERVED_BYTES <= need <= RESERVED_SHARE * _machine_bytes():
            return None
        return cls(node_room, split_room, n_channels, cat_width)

    def _room(self, nodes: int, splits: int) -> None:
        """Grow the arrays (a copy) where ``nodes`` more nodes or ``splits`` more splits do not fit: never with
        the room :meth:`reserve` gives, kept so that a wrong bound costs time, not a wrong batch."""
        for names, used, more in ((("parent", "depth", "tree", "stats"), self.n_nodes, nodes),
                                  (("split_ids", "feature", "bin", "first_child", "missing_left", "threshold",
                                    "is_categorical", "cat_left"), self.n_splits, splits)):
            if used + more <= getattr(self, names[0]).shape[0]:
                continue
            for name in names:
                old = getattr(self, name)
                new = (np.zeros if name == "cat_left" else np.empty)(
                    (max(2 * old.shape[0], used + more),) + old.shape[1:], dtype=old.dtype)
                new[:used] = old[:used]
                setattr(self, name, new)

    def node_slices(self, k: int) -> tuple:
        """Views of the next ``k`` nodes' parent, depth, tree and statistics, to be written by the caller."""
        self._room(k, 0)
        s = slice(self.n_nodes, self.n_nodes + k)
        self.n_nodes += k
        return self.parent[s], self.depth[s], self.tree[s], self.stats[s]

    def split_slices(self, k: int) -> tuple:
        """Views of the next ``k`` splits' ids, feature, bin, missing_left, threshold, first child,
        is_categorical and cat_left (zeroed), to be written by the caller."""
        self._room(0, k)
        s = slice(self.n_splits, self.n_splits + k)
        self.n_splits += k
        return (self.split_ids[s], self.feature[s], self.bin[s], self.missing_left[s], self.threshold[s],
                self.first_child[s], self.is_categorical[s], self.cat_left[s])

    def add_nodes(self, parent, depth, tree, stats) -> None:
        """Copy ``k`` nodes' fields (host arrays) in."""
        for out, value in zip(self.node_slices(int(parent.shape[0])), (parent, depth, tree, stats)):
            out[...] = value

    def add_splits(self, ids, feature, bin_, missing_left, threshold, first_child, is_categorical, cat_left) -> None:
        """Copy ``k`` splits' fields (host arrays; ``cat_left`` in the batch's columns) in."""
        values = (ids, feature, bin_, missing_left, threshold, first_child, is_categorical, cat_left)
        for out, value in zip(self.split_slices(int(ids.shape[0])), values):
            out[...] = value

    def nodes(self) -> tuple:
        """(parent, depth, tree, stats) of every node recorded: slices, no copies."""
        n = self.n_nodes
        return self.parent[:n], self.depth[:n], self.tree[:n], self.stats[:n]

    def splits(self) -> tuple:
        """(split_ids, feature, bin, missing_left, threshold, first_child, is_categorical, cat_left) of every
        split recorded: slices, no copies."""
        k = self.n_splits
        return (self.split_ids[:k], self.feature[:k], self.bin[:k], self.missing_left[:k], self.threshold[:k],
                self.first_child[:k], self.is_categorical[:k], self.cat_left[:k])
