"""Exact path-dependent TreeSHAP: the trees' leaf paths, and the reference kernel (array API standard only).

The algorithm is Lundberg et al.'s (2018, Algorithm 2; shap's
``tree_path_dependent`` TreeExplainer, XGBoost's ``pred_contribs``) in the
form GPUTreeShap computes it: a tree's SHAP values are a sum over its
root-to-leaf paths, each path taken on its own. Along a path, the splits on
one feature merge into one *element* of that feature with

* a zero fraction ``z``: the product of the splits' cover ratios
  (``cover[child] / cover[node]``), the share of the training weight that
  takes the path's side when the feature is unknown;
* a one fraction ``o``: 1 when the row takes the path's side at every split
  on the feature, else 0.

The leaf's value ``v`` then adds ``(o_j - z_j) * W_j * v`` to feature ``j``,
where ``W_j`` is the sum of the path's permutation weights without ``j``
(Algorithm 2's EXTEND over the other elements and a dummy root element,
summed: its ``UNWOUNDPATHSUM``), and ``prod_j z_j * v`` to the expected value
(the bias). SHAP interaction values (XGBoost's ``pred_interactions``) condition
on a second feature ``i``: ``(o_i - z_i) * (o_j - z_j) * W_ij * v / 2`` off the
diagonal (``W_ij`` the weights without ``i`` and ``j``), the diagonal holding
each feature's value minus its row's off-diagonal sum.

:func:`tree_paths` lays every path of a batch out once (host NumPy: the
model's structure, shared by every kernel set). :func:`tree_shap` is the
oracle: it recomputes the weights by EXTEND for every element left out (no
division), vectorised over rows and paths.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._backend import from_numpy, to_numpy
from .reference import goes_left

__all__ = ["PATHS_PER_CHUNK", "TreePaths", "tree_paths", "tree_shap", "interaction_diagonal", "expected_value",
           "reciprocals"]

#: Fewest paths a chunk of the reference's work holds (with fewer, its Python loop over chunks dominates).
PATHS_PER_CHUNK = 64


@dataclass(frozen=True)
class TreePaths:
    """Every root-to-leaf path of a padded batch (host NumPy arrays; ``P`` paths of at most ``D`` splits).

    Attributes
    ----------
    tree : (P,) int64
        The path's tree (paths ordered by tree, then leaf).
    step_node : (P, D) int64
        Nodes split along the path, root first (-1 past its end).
    step_left : (P, D) bool
        Whether the path takes the node's left child.
    step_element : (P, D) int64
        Element (unique feature of the path) each split belongs to (-1 past the end).
    element_feature : (P, D) int64
        Feature of each element, in order of first split (-1 for none).
    element_zero : (P, D) float64
        Zero fraction of each element (1 for none).
    value : (P, K) float64
        The leaf's values.
    n_elements : (P,) int64
    """

    tree: np.ndarray
    step_node: np.ndarray
    step_left: np.ndarray
    step_element: np.ndarray
    element_feature: np.ndarray
    element_zero: np.ndarray
    value: np.ndarray
    n_elements: np.ndarray

    @property
    def depth(self) -> int:
        return int(self.step_node.shape[1])


def tree_paths(batch, values, cover) -> TreePaths:
    """The root-to-leaf paths of ``batch`` with their elements (host NumPy).

    Parameters
    ----------
    batch : TreeBatch
    values : array of shape (n_trees, n_nodes, K), float64
        Each node's contribution to the K outputs (leaves' are read).
    cover : array of shape (n_trees, n_nodes), float64
        Training weight of each node (a zero-weight node's children get zero fraction 0).

    Returns
    -------
    TreePaths
    """
    left, right = to_numpy(batch.left).astype(np.int64), to_numpy(batch.right).astype(np.int64)
    feature = to_numpy(batch.feature).astype(np.int64)
    cover = to_numpy(cover).astype(np.float64)
    values = to_numpy(values).astype(np.float64)
    n_trees = int(left.shape[0])
    # level by level: paths still growing, their nodes and the steps taken so far
    tree = np.arange(n_trees, dtype=np.int64)
    node = np.zeros(n_trees, dtype=np.int64)
    steps = np.zeros((n_trees, 0), dtype=np.int64)
    sides = np.zeros((n_trees, 0), dtype=bool)
    done = []
    depth = 0
    while tree.size:
        leaf = feature[tree, node] < 0
        done.append((tree[leaf], node[leaf], steps[leaf], sides[leaf]))
        tree, node, steps, sides = tree[~leaf], node[~leaf], steps[~leaf], sides[~leaf]
        if not tree.size:
            break
        depth += 1
        tree = np.repeat(tree, 2)
        parent = np.repeat(node, 2)
        go_left = np.tile(np.array([True, False]), parent.size // 2)
        node = np.where(go_left, left[tree, parent], right[tree, parent])
        steps = np.concatenate([np.repeat(steps, 2, axis=0), parent[:, None]], axis=1)
        sides = np.concatenate([np.repeat(sides, 2, axis=0), go_left[:, None]], axis=1)

    def padded(a, fill):
        return np.concatenate([a, np.full((a.shape[0], depth - a.shape[1]), fill, dtype=a.dtype)], axis=1)

    p_tree = np.concatenate([d[0] for d in done])
    p_leaf = np.concatenate([d[1] for d in done])
    order = np.lexsort((p_leaf, p_tree))  # by tree, then leaf
    p_tree, p_leaf = p_tree[order], p_leaf[order]
    step_node = np.concatenate([padded(d[2], -1) for d in done])[order]
    step_left = np.concatenate([padded(d[3], False) for d in done])[order]
    n_paths = p_tree.size
    valid = step_node >= 0
    safe = np.where(valid, step_node, 0)
    f = np.where(valid, feature[p_tree[:, None], safe], -1)
    child = np.concatenate([step_node[:, 1:], np.full((n_paths, 1), -1, dtype=np.int64)], axis=1)
    child = np.where(child >= 0, child, p_leaf[:, None])
    parent_cover = cover[p_tree[:, None], safe]
    child_cover = cover[p_tree[:, None], child]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(parent_cover > 0, child_cover / parent_cover, 0.0)
    # elements: the path's features in order of first split, their splits' ratios multiplied
    step_element = np.full((n_paths, depth), -1, dtype=np.int64)
    element_feature = np.full((n_paths, depth), -1, dtype=np.int64)
    element_zero = np.ones((n_paths, depth), dtype=np.float64)
    count = np.zeros(n_paths, dtype=np.int64)
    rows = np.arange(n_paths)
    for s in range(depth):
        seen = np.full(n_paths, -1, dtype=np.int64)
        for s0 in range(s):
            seen = np.where((seen < 0) & (f[:, s0] == f[:, s]), step_element[:, s0], seen)
        fresh = valid[:, s] & (seen < 0)
        e = np.where(fresh, count, seen)
        step_element[:, s] = np.where(valid[:, s], e, -1)
        element_feature[rows[fresh], count[fresh]] = f[fresh, s]
        count = count + fresh
        hit = valid[:, s]
        element_zero[rows[hit], e[hit]] *= ratio[hit, s]
    return TreePaths(
        tree=p_tree, step_node=step_node, step_left=step_left, step_element=step_element,
        element_feature=element_feature, element_zero=element_zero, value=values[p_tree, p_leaf, :],
        n_elements=count,
    )


def expected_value(paths: TreePaths) -> np.ndarray:
    """The trees' expected outputs (K,) under their covers: each leaf's value times its path's zero fractions."""
    return np.sum(paths.value * np.prod(paths.element_zero, axis=1)[:, None], axis=0)


def reciprocals(m: int) -> np.ndarray:
    """``1 / i`` for ``i`` in ``0 .. m`` (0 at 0): the compiled kernels' recurrences multiply by them."""
    inv = np.zeros(m + 1, dtype=np.float64)
    inv[1:] = 1.0 / np.arange(1, m + 1, dtype=np.float64)
    return inv


def _extend_sum(xp, zero, one, keep):
    """Sum of the permutation weights of a dummy element and the kept elements (Algorithm 2's EXTEND).

    zero, one : (..., D) arrays; keep : (..., D) bool. Returns (...).
    """
    d = zero.shape[-1]
    lead = tuple(one.shape[:-1])
    w = [xp.ones(lead, dtype=xp.float64)] + [xp.zeros(lead, dtype=xp.float64) for _ in range(d)]
    u = xp.zeros(lead, dtype=xp.float64)  # elements extended so far, the dummy not counted
    for e in range(d):
        k = keep[..., e]
        z, o = zero[..., e], one[..., e]
        ud = u + 1.0  # the new element's index (the dummy is element 0)
        for i in range(d - 1, -1, -1):
            # slots above the path's length hold 0 and stay 0
            up = w[i + 1] + o * w[i] * (i + 1) / (ud + 1.0)
            w[i + 1] = xp.where(k, up, w[i + 1])
            w[i] = xp.where(k, z * w[i] * (ud - i) / (ud + 1.0), w[i])
        u = xp.where(k, ud, u)
    total = w[0]
    for i in range(1, d + 1):
        total = total + w[i]
    return total


def _path_fractions(xp, paths, sel, X, missing_bin, batch, width):
    """Zero and one fractions (rows, paths, D) of the paths ``sel`` (host index array) for rows ``X``."""
    step_node = from_numpy(xp, paths.step_node[sel])
    step_left = from_numpy(xp, paths.step_left[sel])
    step_element = from_numpy(xp, paths.step_element[sel])
    tree = from_numpy(xp, paths.tree[sel])
    n = int(X.shape[0])
    m, depth = int(step_node.shape[0]), paths.depth
    flat = tree[:, None] * width + xp.clip(step_node, 0, None)  # (m, D)
    go = goes_left(xp, batch, X, missing_bin, xp.broadcast_to(xp.reshape(flat, (1, m * depth)), (n, m * depth)))
    taken = xp.reshape(go, (n, m, depth)) == step_left[None, :, :]
    one = []
    for e in range(depth):
        o = xp.ones((n, m), dtype=xp.float64)
        for s in range(depth):
            o = xp.where((step_element[None, :, s] == e) & ~taken[:, :, s], xp.zeros_like(o), o)
        one.append(o)
    zero = xp.broadcast_to(from_numpy(xp, paths.element_zero[sel])[None, :, :], (n, m, depth))
    return zero, xp.stack(one, axis=2)


def _one_hot(xp, feature, n_features):
    """(P, D, F) float64: 1 where an element's feature is f (elements of no feature: all 0)."""
    return xp.astype(feature[:, :, None] == xp.arange(n_features, dtype=xp.int64)[None, None, :], xp.float64)


def interaction_diagonal(xp, inter, phi):
    """Put each feature's main effect on the diagonal: its SHAP value minus its row's off-diagonal sum.

    inter : (n, F + 1, F + 1, K) with a zero diagonal; phi : (n, F + 1, K), bias last.
    """
    f1 = int(inter.shape[1])
    eye = xp.astype(xp.eye(f1, dtype=xp.int64), xp.bool)[None, :, :, None]
    diag = phi - xp.sum(inter, axis=2)
    return xp.where(eye, diag[:, :, None, :], inter)


def tree_shap(xp, batch, values, cover, X, missing_bin: int, *, interactions: bool = False, paths=None,
              chunk: int = 1 << 20):
    """Exact path-dependent SHAP values of every row for the sum of the batch's trees (array API standard only).

    Parameters
    ----------
    batch : TreeBatch
    values : array of shape (n_trees, n_nodes, K), float64
        What each leaf adds to each of the K outputs.
    cover : array of shape (n_trees, n_nodes), float64
        Each node's training weight.
    X : array of shape (n_samples, n_features), float64
        As :func:`gputrees.kernels.reference.apply_trees` takes it.
    missing_bin : int
    interactions : bool
        SHAP interaction values instead (XGBoost's ``pred_interactions``).
    paths : TreePaths or None
        ``tree_paths(batch, values, cover)``, where the caller has it.
    chunk : int
        Bound on rows x paths x depth handled at once (memory).

    Returns
    -------
    phi : array of shape (n_samples, n_features + 1, K), float64
        Column ``j < n_features`` the contribution of feature ``j``, the last
        the expected value (bias) of the trees' sum; each row sums to the
        sum of its leaves' values. With ``interactions``: shape
        (n_samples, n_features + 1, n_features + 1, K), each row's
        ``[:, :, k]`` summing over its last axis to ``phi``.
    """
    paths = tree_paths(batch, values, cover) if paths is None else paths
    n, n_features = int(X.shape[0]), int(X.shape[1])
    k = int(paths.value.shape[1])
    width = int(batch.left.shape[1])
    depth = paths.depth
    f1 = n_features + 1
    # rows in blocks too, so that a chunk holds at least PATHS_PER_CHUNK paths
    rows = max(1, chunk // (PATHS_PER_CHUNK * max(1, depth) * (depth if interactions else 1)))
    if n > rows:
        parts = [tree_shap(xp, batch, values, cover, X[r : min(n, r + rows), ...], missing_bin,
                           interactions=interactions, paths=paths, chunk=chunk) for r in range(0, n, rows)]
        return xp.concat(parts, axis=0)
    phi = xp.zeros((n, f1, k), dtype=xp.float64)
    inter = xp.zeros((n, f1, f1, k), dtype=xp.float64) if interactions else None
    value_all = from_numpy(xp, paths.value)
    bias = from_numpy(xp, expected_value(paths))
    n_paths = int(paths.tree.size)
    if depth > 0 and n_paths:
        step = max(1, chunk // max(1, n * depth * (depth if interactions else 1)))
        for p0 in range(0, n_paths, step):
            sel = np.arange(p0, min(n_paths, p0 + step))
            zero, one = _path_fractions(xp, paths, sel, X, missing_bin, batch, width)
            feature = from_numpy(xp, paths.element_feature[sel])
            present = xp.broadcast_to((feature >= 0)[None, :, :], tuple(one.shape))
            hot = _one_hot(xp, feature, n_features)  # (m, D, F)
            v = value_all[int(sel[0]) : int(sel[-1]) + 1, :]  # (m, K)
            gain = one - zero
            coef = []
            for j in range(depth):
                others = present & (xp.arange(depth)[None, None, :] != j)
                coef.append(gain[:, :, j] * _extend_sum(xp, zero, one, others))
            c = xp.stack(coef, axis=2)  # (n, m, D)
            g = xp.matmul(c[:, :, None, :], hot[None, :, :, :])[:, :, 0, :]  # (n, m, F)
            phi_f = xp.matmul(xp.permute_dims(g, (0, 2, 1)), v)  # (n, F, K)
            phi = phi + xp.concat([phi_f, xp.zeros((n, 1, k), dtype=xp.float64)], axis=1)
            if interactions:
                inter = inter + _pair_terms(xp, zero, one, present, hot, v, n_features)
    phi = phi + xp.concat([xp.zeros((n, n_features, k), dtype=xp.float64),
                           xp.broadcast_to(bias[None, None, :], (n, 1, k))], axis=1)
    if not interactions:
        return phi
    return interaction_diagonal(xp, inter, phi)


def _pair_terms(xp, zero, one, present, hot, v, n_features):
    """Off-diagonal interaction terms (n, F + 1, F + 1, K) of a chunk of paths (zero diagonal)."""
    n, m, depth = tuple(one.shape)
    k = int(v.shape[1])
    gain = one - zero
    idx = xp.arange(depth)[None, None, :]
    out = xp.zeros((n, n_features, n_features, k), dtype=xp.float64)
    for i in range(depth):
        coef = []
        for j in range(depth):
            if j == i:
                coef.append(xp.zeros((n, m), dtype=xp.float64))
                continue
            others = present & (idx != i) & (idx != j)
            w = _extend_sum(xp, zero, one, others)
            coef.append(xp.where(present[:, :, j], 0.5 * gain[:, :, i] * gain[:, :, j] * w, 0.0))
        c = xp.stack(coef, axis=2)  # (n, m, D): partner j of element i
        g = xp.matmul(c[:, :, None, :], hot[None, :, :, :])[:, :, 0, :]  # (n, m, F): by partner's feature
        for kk in range(k):
            # (n, F_i, F_j): the element's feature one-hot, weighted by the leaf value
            a = xp.permute_dims(hot[:, i, :] * v[:, kk : kk + 1], (1, 0))  # (F, m)
            out_k = xp.matmul(a[None, :, :], g)  # (n, F, F)
            sel = xp.astype(xp.arange(k) == kk, xp.float64)
            out = out + out_k[:, :, :, None] * sel[None, None, None, :]
    pad_f = xp.zeros((n, n_features, 1, k), dtype=xp.float64)
    out = xp.concat([out, pad_f], axis=2)
    return xp.concat([out, xp.zeros((n, 1, n_features + 1, k), dtype=xp.float64)], axis=1)
