"""Pruning of fitted trees, batched over the nodes and the trees of a TreeBatch.

Two post-growth prunings, both computed with array operations on the padded
``(n_trees, n_nodes)`` arrays of a :class:`~gputrees._records.TreeBatch` (so
they run on NumPy, CuPy and any array-API library):

Cost-complexity (weakest-link) pruning, scikit-learn's semantics
    Each node ``t`` has the cost ``R(t) = w_t * impurity_t / W`` (``W`` the
    tree's total weight); a subtree costs the sum of ``R`` over its leaves. For
    ``ccp_alpha`` the pruned tree is the smallest subtree minimising
    ``sum_leaves R + ccp_alpha * n_leaves``: the tree scikit-learn's
    weakest-link loop stops at (it prunes while the smallest effective alpha
    ``(R(t) - R(T_t)) / (|T_t| - 1)`` is ``<= ccp_alpha``). :func:`prune_ccp`
    finds it in one pass from the deepest level up (each level one set of array
    operations over all nodes of all trees): a node becomes a leaf when its
    effective alpha, computed against its children's already pruned subtrees,
    is at most ``ccp_alpha``. :func:`ccp_path` runs the weakest-link loop
    itself (one host iteration per pruned node, each an array operation over
    all nodes of all trees) and records scikit-learn's ``ccp_alphas`` and
    ``impurities``.

Reduced-error pruning (the course notes' method)
    With a validation set: every validation row adds, to every node on its
    path, its error if that node were a leaf (predicting its training majority
    class, or its training mean) and its error at its current leaf. A node's
    error reduction is ``subtree error - leaf error``. Each step prunes, in
    every tree at once, the node of largest reduction, and stops when no
    reduction is positive (see :func:`prune_reduced_error`).

Rounding: effective alphas that differ by less than ``TIE_RTOL`` times the
tree's root cost ``R(root)`` (error reductions that differ by less than
``TIE_RTOL`` times the tree's largest node validation error) are treated as
equal. This makes ``ccp_alpha`` set to a value read off the path prune the
node that produced it whatever the summation order, and lets near-ties resolve
by the tie rules of each function instead of by rounding.

Node bookkeeping uses per-depth ancestors: ``anc[node, d]`` is the ancestor of
``node`` at depth ``d`` (``-1`` below the node's depth), built with one gather
per level. The loops of :func:`ccp_path` and :func:`prune_reduced_error` use
it to find, in one operation, a pruned node's descendants and ancestors; it
takes ``n_trees * n_nodes * (max_depth + 1)`` int64 entries. Reduced-error
pruning also holds ``n_val * n_trees * (max_depth + 1)`` entries (each
validation row's path); :func:`prune_ccp` needs neither.

Cost: :func:`prune_ccp` is ``max_depth`` rounds of elementwise work over all
nodes. The loops cost one round over all nodes per pruning step, so
``O(n_nodes ** 2)`` for a whole path of a deep tree (a 25,000-node tree's
path takes seconds with NumPy).
"""

from __future__ import annotations

import numbers

import numpy as np

from ._backend import convert_to_namespace, from_numpy, to_numpy
from ._records import TreeBatch

__all__ = ["TIE_RTOL", "prune_ccp", "ccp_path", "prune_reduced_error"]

#: Alphas (errors) closer than this times the tree's root cost (root error) are equal.
TIE_RTOL = 1e-12


class _Topology:
    """Flat (``n_trees * n_nodes``) view of a batch's structure.

    Node ``j`` of tree ``t`` has the flat id ``t * n_nodes + j``.

    Attributes
    ----------
    n_trees, n_nodes, max_depth : int
    valid : (T*N,) bool, real (non-padding) nodes
    internal : (T*N,) bool
    left, right : (T*N,) int64, flat ids of the children, 0 at leaves
    depth : (T*N,) int64
    tree : (T*N,) int64, tree of each node
    ids : (T*N,) int64, flat id of each node
    """

    def __init__(self, xp, batch: TreeBatch):
        self.xp = xp
        self.n_trees, self.n_nodes = (int(s) for s in batch.left.shape)
        t, n = self.n_trees, self.n_nodes
        self.max_depth = int(batch.max_depth)
        self.ids = xp.arange(t * n, dtype=xp.int64)
        self.tree = self.ids // n
        local = self.ids % n
        counts = from_numpy(xp, np.asarray(batch.node_count, dtype=np.int64))
        self.valid = local < xp.take(counts, self.tree)
        left = xp.reshape(batch.left, (-1,))
        right = xp.reshape(batch.right, (-1,))
        self.internal = (left >= 0) & self.valid
        base = self.tree * n
        zero = xp.zeros_like(left)
        self.left = xp.where(self.internal, left + base, zero)
        self.right = xp.where(self.internal, right + base, zero)
        self.depth = xp.reshape(batch.depth, (-1,))
        self._parent = None
        self._anc = None

    # -- derived structure ----------------------------------------------------
    def level(self, d: int):
        """Internal nodes at depth ``d``, (T*N,) bool."""
        return self.internal & (self.depth == d)

    @property
    def parent(self):
        """Flat id of each node's parent, -1 at roots and padding, (T*N,) int64."""
        if self._parent is None:
            xp = self.xp
            child = xp.concat([self.left, self.right])
            par = xp.concat([self.ids, self.ids])
            internal2 = xp.concat([self.internal, self.internal])
            # leaves' placeholder children sort past every real id
            key = xp.where(internal2, child, xp.full_like(child, self.n_trees * self.n_nodes))
            order = xp.argsort(key)
            skey = xp.take(key, order)
            spar = xp.take(par, order)
            pos = xp.clip(xp.astype(xp.searchsorted(skey, self.ids), xp.int64), 0, skey.shape[0] - 1)
            found = xp.take(skey, pos) == self.ids
            self._parent = xp.where(found, xp.take(spar, pos), xp.full_like(self.ids, -1))
        return self._parent

    @property
    def anc(self):
        """Flat ``(T*N) * (max_depth + 1)`` table: ``anc[i * (D + 1) + d]``,
        the ancestor of node ``i`` at depth ``d`` (the node itself at its own
        depth, -1 below it and for padding)."""
        if self._anc is None:
            xp = self.xp
            parent = self.parent
            cur = self.ids
            cols = []
            minus = xp.full_like(self.ids, -1)
            for d in range(self.max_depth, -1, -1):
                up = (xp.take(self.depth, cur) > d) & (xp.take(parent, cur) >= 0)
                cur = xp.where(up, xp.take(parent, cur), cur)
                cols.append(xp.where(self.valid & (self.depth >= d), cur, minus))
            self._anc = xp.reshape(xp.stack(cols[::-1], axis=1), (-1,))
        return self._anc

    def ancestor_at(self, nodes, d):
        """Ancestor at depth ``d`` (array broadcast with ``nodes``) of flat ``nodes``."""
        xp = self.xp
        idx = nodes * (self.max_depth + 1) + d
        return xp.reshape(xp.take(self.anc, xp.reshape(idx, (-1,))), idx.shape)

    def preorder(self):
        """Depth-first (node, left subtree, right subtree) rank of each node in its tree.

        scikit-learn numbers depth-first-grown trees in this order; it breaks
        ties of the weakest-link loop by it. Returns (T*N,) int64.
        """
        xp = self.xp
        size = xp.ones_like(self.ids)
        for d in range(self.max_depth - 1, -1, -1):
            at = self.level(d)
            size = xp.where(at, 1 + xp.take(size, self.left) + xp.take(size, self.right), size)
        parent = self.parent
        has_parent = parent >= 0
        par = xp.where(has_parent, parent, xp.zeros_like(parent))
        is_left = xp.take(self.left, par) == self.ids
        offset = 1 + xp.where(is_left, xp.zeros_like(size), xp.take(size, xp.take(self.left, par)))
        rank = xp.zeros_like(self.ids)
        for d in range(1, self.max_depth + 1):
            at = has_parent & (self.depth == d)
            rank = xp.where(at, xp.take(rank, par) + offset, rank)
        return rank

    def per_tree(self, a):
        """Broadcast a per-tree array (T,) to the nodes, (T*N,)."""
        return self.xp.take(a, self.tree)

    def roots(self):
        return self.xp.arange(self.n_trees, dtype=self.xp.int64) * self.n_nodes

    def subtree_leaf_sums(self, leaf_value):
        """Sum of ``leaf_value`` over the leaves of each node's subtree, and the leaf counts.

        Level by level from the deepest up. Returns two (T*N,) float64 arrays.
        """
        xp = self.xp
        s = leaf_value
        n_leaves = xp.ones_like(leaf_value)
        for d in range(self.max_depth - 1, -1, -1):
            at = self.level(d)
            s = xp.where(at, xp.take(s, self.left) + xp.take(s, self.right), s)
            n_leaves = xp.where(at, xp.take(n_leaves, self.left) + xp.take(n_leaves, self.right), n_leaves)
        return s, n_leaves


# -- compaction -----------------------------------------------------------------
def _compact(xp, batch: TreeBatch, topo: _Topology, make_leaf) -> TreeBatch:
    """The batch with the nodes ``make_leaf`` turned into leaves and their descendants removed.

    Kept nodes keep their relative order (creation order) and are renumbered
    from 0 in each tree; trees are padded to the largest node count.

    make_leaf : (T*N,) bool
    """
    t, n = topo.n_trees, topo.n_nodes
    parent = topo.parent
    par = xp.where(parent >= 0, parent, xp.zeros_like(parent))
    dead = xp.zeros_like(make_leaf)
    for d in range(1, topo.max_depth + 1):
        at = (parent >= 0) & (topo.depth == d)
        dead = xp.where(at, xp.take(dead | make_leaf, par), dead)
    keep = topo.valid & ~dead
    leafify = make_leaf & keep
    split = topo.internal & keep & ~leafify

    keep2 = xp.reshape(keep, (t, n))
    new_local = xp.reshape(xp.cumulative_sum(xp.astype(keep2, xp.int64), axis=1) - 1, (-1,))
    counts = np.asarray(to_numpy(xp.sum(xp.astype(keep2, xp.int64), axis=1)), dtype=np.int64)
    width = max(int(counts.max()), 1) if counts.size else 1
    # kept nodes first, in their order (stable), then the rest
    order = xp.argsort(xp.astype(~keep2, xp.int8), axis=1, stable=True)[:, :width]
    src = xp.reshape(order + (xp.arange(t, dtype=xp.int64) * n)[:, None], (-1,))
    valid = xp.reshape(
        xp.arange(width, dtype=xp.int64)[None, :] < from_numpy(xp, counts)[:, None], (-1,)
    )

    def gather(flat, fill):
        v = xp.take(flat, src, axis=0)
        mask = valid if v.ndim == 1 else xp.reshape(valid, (-1,) + (1,) * (v.ndim - 1))
        v = xp.where(mask, v, xp.asarray(fill, dtype=v.dtype))
        return xp.reshape(v, (t, width) + tuple(v.shape[1:]))

    def flat(a):
        return xp.reshape(a, (t * n,) + tuple(a.shape[2:]))

    minus = xp.full_like(topo.ids, -1)
    left = xp.where(split, xp.take(new_local, topo.left), minus)
    right = xp.where(split, xp.take(new_local, topo.right), minus)
    feature = xp.where(split, flat(batch.feature), xp.full_like(topo.ids, -2))
    bin_ = xp.where(split, flat(batch.bin), minus)
    false = xp.zeros_like(split)
    missing_left = xp.where(split, flat(batch.missing_left), false)
    is_cat = xp.where(split, flat(batch.is_categorical), false)
    cat_left = flat(batch.cat_left) & split[:, None]
    threshold = xp.where(split, flat(batch.threshold), xp.full_like(flat(batch.threshold), -2.0))
    depth_kept = xp.where(keep, topo.depth, xp.zeros_like(topo.depth))
    max_depth = int(to_numpy(xp.max(depth_kept))) if t * n else 0
    return TreeBatch(
        node_count=counts,
        left=gather(left, -1),
        right=gather(right, -1),
        feature=gather(feature, -2),
        bin=gather(bin_, -1),
        missing_left=gather(missing_left, False),
        is_categorical=gather(is_cat, False),
        cat_left=gather(cat_left, False),
        threshold=gather(threshold, -2.0),
        stats=gather(flat(batch.stats), 0.0),
        depth=gather(flat(batch.depth), 0),
        max_depth=max_depth,
    )


def _step_prune(xp, topo: _Topology, p, go):
    """Masks of one pruning step: node ``p[t]`` of every tree with ``go[t]``.

    Parameters
    ----------
    p : (T,) int64, local node index chosen in each tree
    go : (T,) bool, trees that prune this step

    Returns
    -------
    chosen : (T*N,) bool, the pruned node of each tree that prunes
    desc : (T*N,) bool, its subtree (itself included)
    anc : (T*N,) bool, its strict ancestors
    pg : (T,) int64, flat id of the chosen node
    """
    pg = p + xp.arange(topo.n_trees, dtype=xp.int64) * topo.n_nodes
    dp = xp.take(topo.depth, pg)
    pg_n = topo.per_tree(pg)
    dp_n = topo.per_tree(dp)
    go_n = topo.per_tree(go)
    chosen = go_n & (topo.ids == pg_n)
    d_clip = xp.clip(topo.depth, 0, topo.max_depth)
    # ancestor of every node at the chosen node's depth is the chosen node: descendant
    desc = go_n & (topo.depth >= dp_n) & (topo.ancestor_at(topo.ids, xp.clip(dp_n, 0, topo.max_depth)) == pg_n)
    # the chosen node's ancestor at a node's depth is that node: ancestor
    anc = go_n & topo.valid & (topo.depth < dp_n) & (topo.ancestor_at(pg_n, d_clip) == topo.ids)
    return chosen, desc, anc, pg


# -- cost-complexity pruning ------------------------------------------------------
def _node_costs(xp, batch: TreeBatch, criterion, topo: _Topology, total_weight):
    """``R(t) = w_t * impurity_t / W`` per node, 0 on padding, (T*N,) float64; and ``W`` (T,)."""
    stats = xp.reshape(batch.stats, (topo.n_trees * topo.n_nodes, -1))
    w = criterion.weight(xp, stats)
    if total_weight is None:
        total = xp.take(w, topo.roots())
    else:
        total = _per_tree_values(xp, total_weight, topo.n_trees)
    safe_total = xp.where(total > 0, total, xp.ones_like(total))
    real = topo.valid & (w > 0)
    # padding nodes have no rows (a Poisson impurity of inf): 0 before multiplying
    imp = xp.where(real, criterion.impurity(xp, stats), xp.zeros_like(w))
    r = xp.where(real, w * imp, xp.zeros_like(w)) / topo.per_tree(safe_total)
    return r, total


def _per_tree_values(xp, v, n_trees):
    """A scalar or an array of shape (n_trees,) (any namespace) as an (n_trees,) float64 array of ``xp``."""
    if isinstance(v, numbers.Real):
        return xp.full((n_trees,), float(v), dtype=xp.float64)
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return xp.full((n_trees,), float(v), dtype=xp.float64)
    a = xp.astype(convert_to_namespace(xp, v), xp.float64)
    if a.ndim == 0:
        a = xp.reshape(a, (1,))
    return xp.reshape(xp.broadcast_to(a, (n_trees,)), (n_trees,))


def prune_ccp(xp, batch: TreeBatch, criterion, ccp_alpha, total_weight=None) -> TreeBatch:
    """Minimal cost-complexity pruning of every tree of a batch (scikit-learn's ``ccp_alpha``).

    Parameters
    ----------
    xp : array namespace
    batch : TreeBatch
        Fitted trees, arrays of shape (n_trees, n_nodes).
    criterion : Criterion
        The criterion the trees were grown with (impurity and weight of the
        node statistics).
    ccp_alpha : float or array of shape (n_trees,), float64
        Complexity parameter, ``>= 0``. A tree whose alpha is 0 is returned
        unchanged, as in scikit-learn (which skips pruning at 0).
    total_weight : float, array of shape (n_trees,), float64, or None
        ``W`` in ``R(t) = w_t * impurity_t / W``; None takes each tree's root
        weight (scikit-learn's choice, also for bootstrap trees).

    Returns
    -------
    TreeBatch
        The pruned trees: pruned nodes are leaves (keeping their statistics),
        their descendants are removed, nodes are renumbered in their previous
        order, and trees are padded to the largest node count.

    Notes
    -----
    One pass from the deepest level to the root; at each level, every
    internal node of every tree compares its effective alpha against its
    children's already pruned subtrees::

        g(t) = (R(t) - R(T_t')) / (|T_t'| - 1) <= ccp_alpha   ->  t becomes a leaf

    which is the smallest subtree minimising ``R + alpha * n_leaves``, the
    tree scikit-learn's weakest-link loop stops at. ``g`` within
    ``TIE_RTOL * R(root)`` of ``ccp_alpha`` counts as equal (pruned).
    """
    topo = _Topology(xp, batch)
    alpha = _per_tree_values(xp, ccp_alpha, topo.n_trees)
    if not bool(to_numpy(xp.any(alpha > 0))) or topo.max_depth == 0:
        return batch
    r, _ = _node_costs(xp, batch, criterion, topo, total_weight)
    tol = TIE_RTOL * xp.abs(xp.take(r, topo.roots()))
    limit = topo.per_tree(alpha + tol)
    on = topo.per_tree(alpha > 0)
    cost = r
    n_leaves = xp.ones_like(r)
    make_leaf = xp.zeros_like(topo.valid)
    for d in range(topo.max_depth - 1, -1, -1):
        at = topo.level(d)
        sub = xp.take(cost, topo.left) + xp.take(cost, topo.right)
        nl = xp.take(n_leaves, topo.left) + xp.take(n_leaves, topo.right)
        g = (r - sub) / xp.where(at, nl - 1.0, xp.ones_like(nl))
        prune = at & on & (g <= limit)
        cost = xp.where(at, xp.where(prune, r, sub), cost)
        n_leaves = xp.where(at, xp.where(prune, xp.ones_like(nl), nl), n_leaves)
        make_leaf = make_leaf | prune
    if not bool(to_numpy(xp.any(make_leaf))):
        return batch
    return _compact(xp, batch, topo, make_leaf)


def ccp_path(xp, batch: TreeBatch, criterion, total_weight=None):
    """scikit-learn's cost-complexity pruning path of every tree of a batch.

    Parameters
    ----------
    xp : array namespace
    batch : TreeBatch
    criterion : Criterion
    total_weight : float, array of shape (n_trees,), or None
        As in :func:`prune_ccp`.

    Returns
    -------
    list of (ccp_alphas, impurities), one per tree
        NumPy float64 arrays of equal length: the effective alpha of each
        weakest-link step (0 first, for the full tree) and the sum of
        ``w_t * impurity_t / W`` over the leaves of the tree after that step.

    Notes
    -----
    The weakest-link loop of scikit-learn: while the root is internal, prune
    the internal node of smallest effective alpha ``(R(t) - R(T_t)) / (|T_t|
    - 1)``. One host iteration per step, each an array operation over all
    nodes of all trees (trees with fewer steps stop recording). Ties (within
    ``TIE_RTOL * R(root)``) go to the node first in depth-first order, which
    is scikit-learn's node order for depth-first-grown trees.
    """
    topo = _Topology(xp, batch)
    t, n = topo.n_trees, topo.n_nodes
    r, _ = _node_costs(xp, batch, criterion, topo, total_weight)
    roots = topo.roots()
    leaf_r = xp.where(topo.internal, xp.zeros_like(r), r)
    branch, n_leaves = topo.subtree_leaf_sums(leaf_r)
    cand = topo.internal
    rank = xp.reshape(topo.preorder(), (t, n))
    tol = xp.reshape(TIE_RTOL * xp.abs(xp.take(r, roots)), (t, 1))
    big = xp.full_like(rank, n + 1)
    inf = xp.full((t, n), xp.inf, dtype=xp.float64)
    alphas = [xp.zeros((t,), dtype=xp.float64)]
    impurities = [xp.take(branch, roots)]
    active_log = [xp.ones((t,), dtype=xp.bool)]
    active = xp.take(cand, roots)
    while bool(to_numpy(xp.any(active))):
        denom = xp.where(cand, n_leaves - 1.0, xp.ones_like(n_leaves))
        g = xp.reshape(xp.where(cand, (r - branch) / denom, xp.reshape(inf, (-1,))), (t, n))
        gmin = xp.min(g, axis=1, keepdims=True)
        tie = xp.isfinite(g) & (g <= gmin + tol)
        p = xp.argmin(xp.where(tie, rank, big), axis=1)
        p = xp.astype(p, xp.int64)
        chosen, desc, anc, pg = _step_prune(xp, topo, p, active)
        r_p = xp.take(r, pg)
        diff = topo.per_tree(r_p - xp.take(branch, pg))
        removed = topo.per_tree(xp.take(n_leaves, pg) - 1.0)
        branch = xp.where(anc, branch + diff, xp.where(chosen, r, branch))
        n_leaves = xp.where(anc, n_leaves - removed, xp.where(chosen, xp.ones_like(n_leaves), n_leaves))
        cand = cand & ~desc
        alphas.append(xp.take(xp.reshape(g, (-1,)), pg))
        impurities.append(xp.take(branch, roots))
        active_log.append(active)
        active = xp.take(cand, roots)
    a = to_numpy(xp.stack(alphas, axis=1))
    imp = to_numpy(xp.stack(impurities, axis=1))
    on = to_numpy(xp.stack(active_log, axis=1))
    return [(a[i][on[i]].astype(np.float64), imp[i][on[i]].astype(np.float64)) for i in range(t)]


# -- reduced-error pruning ------------------------------------------------------------
def _node_sums(xp, kernels, node, weights, n_nodes: int):
    """Sums of the rows of ``weights`` (m, c) per ``node`` (m,) in ``[0, n_nodes)``: (n_nodes, c)."""
    codes = xp.zeros((1, 1), dtype=xp.uint8)
    rows = xp.zeros(node.shape, dtype=xp.int64)
    h = kernels.build_histograms(xp, codes, rows, node, weights, n_nodes, 1)
    return xp.reshape(h, (n_nodes, weights.shape[1]))


def prune_reduced_error(xp, batch: TreeBatch, values, leaves, y, sample_weight, classification: bool, kernels):
    """Reduced-error pruning of every tree of a batch with a validation set.

    Parameters
    ----------
    xp : array namespace
    batch : TreeBatch
        Fitted trees, arrays of shape (n_trees, n_nodes).
    values : array of shape (n_trees, n_nodes, n_outputs, n_classes_or_1), float64
        Node values (``criterion.value(xp, batch.stats)``): class fractions of
        the training rows, or their means.
    leaves : array of shape (n_val, n_trees), int64
        Leaf reached by each validation row in each tree (:func:`apply_trees`).
    y : array of shape (n_val,), int64, or (n_val, n_outputs), float64
        Class codes (an index into the classes; -1 for a label the trees never
        saw, always an error), or regression targets.
    sample_weight : array of shape (n_val,) or (n_val, n_trees), float64
        Weight of each validation row (per tree, e.g. out-of-bag masks).
    classification : bool
        Error of a row at a node: its weight if the node's majority class (the
        first of equal ones, as ``predict``) is not its class; otherwise its
        weight times the squared error averaged over outputs.
    kernels : Kernels
        For the per-node sums (``build_histograms``).

    Returns
    -------
    batch : TreeBatch
        The pruned trees (compacted as in :func:`prune_ccp`).
    pruned : list of ndarray of int64, one per tree
        The nodes made leaves, in pruning order, numbered as in the input
        batch.
    errors : list of ndarray of float64, one per tree
        Validation error of the tree before pruning and after each step
        (strictly decreasing).

    Notes
    -----
    Each validation row contributes to every node on its path (per-depth
    ancestors of its leaf): its error if the node were a leaf, and its error at
    its current leaf. Then, in a host loop with one iteration per step (each
    an array operation over all nodes of all trees), every tree prunes the
    node of largest reduction ``subtree error - leaf error`` if it is
    positive (more than ``TIE_RTOL`` times the largest node error), and the
    ancestors' subtree errors are updated. Tie rule: of nodes with equal
    largest reductions, the lowest node index goes (ancestors have lower
    indices than their descendants, so of two nested candidates the larger
    subtree is pruned).
    """
    topo = _Topology(xp, batch)
    t, n = topo.n_trees, topo.n_nodes
    dd = topo.max_depth + 1
    m = int(leaves.shape[0])
    if sample_weight.ndim == 1:
        sample_weight = xp.broadcast_to(sample_weight[:, None], (m, t))
    leaf_g = leaves + (xp.arange(t, dtype=xp.int64) * n)[None, :]  # (m, T)
    depths = xp.arange(dd, dtype=xp.int64)
    path = topo.ancestor_at(leaf_g[:, :, None], depths[None, None, :])  # (m, T, D+1)
    on_path = path >= 0
    node = xp.where(on_path, path, xp.zeros_like(path))
    vflat = xp.reshape(values, (t * n, values.shape[2], values.shape[3]))
    w = sample_weight[:, :, None]
    if classification:
        pred = xp.astype(xp.argmax(vflat[:, 0, :], axis=1), xp.int64)  # (T*N,)
        wrong = xp.take(pred, xp.reshape(node, (-1,))) != xp.reshape(
            xp.broadcast_to(y[:, None, None], path.shape), (-1,)
        )
        err = w * xp.reshape(xp.astype(wrong, xp.float64), path.shape)
    else:
        v = xp.reshape(xp.take(vflat[:, :, 0], xp.reshape(node, (-1,)), axis=0), path.shape + (vflat.shape[1],))
        diff = v - y[:, None, None, :]
        err = w * xp.mean(diff * diff, axis=-1)
    err = xp.where(on_path, err, xp.zeros_like(err))
    leaf_depth = xp.take(topo.depth, xp.reshape(leaf_g, (-1,)))
    leaf_err = xp.take(xp.reshape(err, (-1,)), xp.arange(m * t, dtype=xp.int64) * dd + leaf_depth)
    leaf_err = xp.reshape(leaf_err, (m, t, 1))
    chans = xp.stack([err, xp.where(on_path, xp.broadcast_to(leaf_err, err.shape), xp.zeros_like(err))], axis=-1)
    sums = _node_sums(xp, kernels, xp.reshape(node, (-1,)), xp.reshape(chans, (-1, 2)), t * n)
    e_leaf = sums[:, 0]
    e_sub = sums[:, 1]
    roots = topo.roots()
    scale = xp.max(xp.reshape(xp.where(topo.valid, e_leaf, xp.zeros_like(e_leaf)), (t, n)), axis=1)
    scale = xp.maximum(scale, xp.take(e_sub, roots))
    tol = xp.reshape(TIE_RTOL * scale, (t, 1))
    cand = topo.internal
    idx = xp.broadcast_to(xp.arange(n, dtype=xp.int64)[None, :], (t, n))
    big = xp.full((t, n), n, dtype=xp.int64)
    ninf = xp.full((t * n,), -xp.inf, dtype=xp.float64)
    errors = [xp.take(e_sub, roots)]
    pruned = []
    log = []
    while True:
        red = xp.reshape(xp.where(cand, e_sub - e_leaf, ninf), (t, n))
        rmax = xp.max(red, axis=1, keepdims=True)
        go = xp.reshape(rmax > tol, (t,))
        if not bool(to_numpy(xp.any(go))):
            break
        tie = red >= rmax - tol
        p = xp.astype(xp.argmin(xp.where(tie, idx, big), axis=1), xp.int64)
        chosen, desc, anc, pg = _step_prune(xp, topo, p, go)
        gain = topo.per_tree(xp.take(e_sub, pg) - xp.take(e_leaf, pg))
        e_sub = xp.where(anc, e_sub - gain, xp.where(chosen, e_leaf, e_sub))
        cand = cand & ~desc
        pruned.append(p)
        log.append(go)
        errors.append(xp.take(e_sub, roots))
    if pruned:
        p_host = to_numpy(xp.stack(pruned, axis=1))
        go_host = to_numpy(xp.stack(log, axis=1))
        e_host = to_numpy(xp.stack(errors, axis=1))
        flat_ids = p_host + (np.arange(t) * n)[:, None]
        sel = flat_ids[go_host]
        marks = np.zeros(t * n, dtype=bool)
        marks[sel] = True
        made = from_numpy(xp, marks)
        out = _compact(xp, batch, topo, made)
        pruned_list = [p_host[i][go_host[i]].astype(np.int64) for i in range(t)]
        errors_list = [
            np.concatenate([e_host[i, :1], e_host[i, 1:][go_host[i]]]).astype(np.float64) for i in range(t)
        ]
        return out, pruned_list, errors_list
    e0 = to_numpy(errors[0])
    return batch, [np.zeros(0, dtype=np.int64) for _ in range(t)], [np.asarray([e0[i]], dtype=np.float64) for i in range(t)]
