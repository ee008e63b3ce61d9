"""``tree_``: a fitted tree as NumPy arrays, named like scikit-learn's ``Tree``."""

from __future__ import annotations

import numpy as np

from ._backend import to_numpy

TREE_LEAF = -1
TREE_UNDEFINED = -2


class Tree:
    """Host (NumPy) view of one fitted tree.

    Nodes are numbered breadth-first (scikit-learn numbers them depth-first;
    the trees are the same, only the numbering differs). Node 0 is the root.

    Attributes
    ----------
    node_count : int
    children_left, children_right : ndarray of shape (node_count,), int64
        ``-1`` at leaves.
    feature : ndarray of shape (node_count,), int64
        ``-2`` at leaves.
    threshold : ndarray of shape (node_count,), float64
        Numerical splits send ``x <= threshold`` left; ``-2`` at leaves; NaN
        for categorical splits (see ``categories_left``).
    missing_go_to_left : ndarray of shape (node_count,), uint8
    is_categorical : ndarray of shape (node_count,), bool
    categories_left : list of (ndarray or None)
        For categorical splits, the category labels (or values) sent left.
    value : ndarray of shape (node_count, n_outputs, n_classes_or_1), float64
        Class fractions (classifier) or means (regressor), as scikit-learn >= 1.4.
    impurity : ndarray of shape (node_count,), float64
    n_node_samples : ndarray of shape (node_count,), int64
    weighted_n_node_samples : ndarray of shape (node_count,), float64
    max_depth : int
    n_leaves : int
    """

    def __init__(self, batch, criterion, xp, bin_mapper, categories, tree_index=0):
        n = int(batch.node_count[tree_index])
        t = tree_index

        def host(a):
            return to_numpy(a)[t, :n].copy()

        stats = to_numpy(batch.stats)[t, :n]
        self.node_count = n
        self.children_left = host(batch.left).astype(np.int64)
        self.children_right = host(batch.right).astype(np.int64)
        self.feature = host(batch.feature).astype(np.int64)
        self.threshold = host(batch.threshold).astype(np.float64)
        self.missing_go_to_left = host(batch.missing_left).astype(np.uint8)
        self.is_categorical = host(batch.is_categorical).astype(bool)
        self.n_node_samples = np.rint(stats[:, 0]).astype(np.int64)
        s = _as_xp(xp, stats)
        self.weighted_n_node_samples = to_numpy(criterion.weight(xp, s)).astype(np.float64)
        self.impurity = to_numpy(criterion.impurity(xp, s)).astype(np.float64)
        self.value = to_numpy(criterion.value(xp, s)).astype(np.float64)
        self.n_outputs = self.value.shape[1]
        self.n_classes = np.full(self.n_outputs, self.value.shape[2], dtype=np.int64)
        self.max_depth = int(to_numpy(batch.depth)[t, :n].max()) if n else 0
        self.n_leaves = int(np.sum(self.children_left == TREE_LEAF))
        # the labels of every categorical split: a list of arrays, built on first read (a deep tree's hundreds
        # of splits cost a small fit a tenth of its time; the estimator keeps the batch they come from anyway)
        self._categories_from = (batch, t, bin_mapper, categories)
        self._categories_left = None

    @property
    def categories_left(self):
        if self._categories_left is None:
            batch, t, bin_mapper, categories = self._categories_from
            self._categories_left = categories_left(
                batch, t, self.feature, self.is_categorical, bin_mapper, categories
            )
        return self._categories_left

    def compute_feature_importances(self, n_features: int, normalize: bool = True) -> np.ndarray:
        """Total weighted impurity decrease brought by each feature (scikit-learn's definition)."""
        imp = np.zeros(n_features, dtype=np.float64)
        internal = np.flatnonzero(self.children_left != TREE_LEAF)
        if internal.size:
            w = self.weighted_n_node_samples
            left, right = self.children_left[internal], self.children_right[internal]
            dec = (
                w[internal] * self.impurity[internal]
                - w[left] * self.impurity[left]
                - w[right] * self.impurity[right]
            )
            np.add.at(imp, self.feature[internal], dec)
            imp /= w[0]
        if normalize:
            total = imp.sum()
            if total > 0:
                imp /= total
        return imp


def categories_left(batch, t, feature, is_categorical, bin_mapper, categories):
    """Category labels (or values) each categorical split of tree ``t`` sends left.

    Parameters
    ----------
    batch : TreeBatch
    t : int
        Tree index in the batch.
    feature : ndarray of shape (n_nodes,), int64
        The tree's split features (host).
    is_categorical : ndarray of shape (n_nodes,), bool
    bin_mapper : BinMapper
    categories : list or None
        Per-feature category labels of the fit (None: the values themselves).

    Returns
    -------
    list of length n_nodes of (ndarray or None)
    """
    n = int(feature.shape[0])
    out = [None] * n
    nodes = np.flatnonzero(is_categorical)
    if nodes.size == 0:
        return out
    # one nonzero over all the categorical splits, then a slice per node: a
    # deep tree has hundreds of them, and a call per node cost a third of a small fit
    # every column but the last (the missing bin's) is a category's code
    sent = to_numpy(batch.cat_left)[t, nodes, :-1]
    node_of, codes = np.nonzero(sent)
    host_values = bin_mapper.to_host()["category_values"]
    node_feature = feature[nodes]
    row_feature = node_feature[node_of]
    for f in np.unique(node_feature).tolist():
        mine = np.flatnonzero(node_feature == f)
        rows = row_feature == f
        values = host_values[f][codes[rows]]
        if categories is not None and categories[f] is not None:
            values = np.asarray(categories[f])[values.astype(np.int64)]
        ends = np.cumsum(np.bincount(node_of[rows], minlength=nodes.size)[mine])
        starts = np.concatenate([[0], ends[:-1]])
        for node, a, b in zip(nodes[mine].tolist(), starts.tolist(), ends.tolist()):
            out[node] = values[a:b]
    return out


def _as_xp(xp, a):
    from ._backend import from_numpy

    return from_numpy(xp, np.ascontiguousarray(a))
