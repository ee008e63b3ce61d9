"""Compiled exact TreeSHAP (Numba): every (row, leaf path) pair, rows in parallel.

The paths are :func:`gputrees.kernels.treeshap.tree_paths`'s (the reference's
layout). For each row and path the kernel finds the one fractions with
prediction's split rule (:func:`.predict.step`, each node's decision once per
row and tree), EXTENDs the path's elements once, and takes each element's
weight by Algorithm 2's UNWOUNDPATHSUM (interaction values: UNWINDPATH of the
conditioning element, then the partner's unwound sum; the scalar recurrences
of :mod:`gputrees.kernels.rules`, which the GPU kernel shares). Elements
whose one and zero fractions are equal contribute nothing and are skipped
(so no division by a zero fraction happens).

A thread takes blocks of :data:`ROWS_PER_BLOCK` rows and runs every path
over the block before the next path, the block's rows as the inner loop of
the recurrences (:func:`_block_values`): a path's arrays are read once per
block, and the rows' independent chains of multiplications overlap and
vectorise.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ..rules import shap_extend, shap_unwind, shap_unwound_sum
from ..treeshap import expected_value, interaction_diagonal, reciprocals, tree_paths
from .jit import JIT, Threads, threads_for
from .memory import read_only
from .predict import step, tree_arrays

__all__ = ["tree_shap"]

#: Rows a task runs through every path in turn.
ROWS_PER_BLOCK = 32


@numba.njit(inline="always")
def _block_values(p, m, d, one, pw, nxt, total, off, element_zero, inv):
    """Each element's weight ``(o - z) * UNWOUNDPATHSUM`` of path ``p`` for ``m`` rows at once, into ``one``.

    Rows are the inner loops (independent chains the CPU overlaps and
    vectorises): ``one[e, :m]`` holds the rows' one fractions (0 or 1) on
    entry and their weights for element ``e`` on return; ``pw``, ``nxt``,
    ``total`` and ``off`` are scratch.
    """
    for r in range(m):
        pw[0, r] = 1.0
    for e in range(d):  # EXTEND
        ud = e + 1
        rr = inv[ud + 1]
        z = element_zero[p, e]
        for r in range(m):
            pw[ud, r] = 0.0
        for i in range(ud - 1, -1, -1):
            c1 = (i + 1) * rr
            c2 = z * (ud - i) * rr
            for r in range(m):
                pw[i + 1, r] += one[e, r] * pw[i, r] * c1
                pw[i, r] = pw[i, r] * c2
    # elements of one fraction 0 all take the same sum (divided by their z, times -z)
    for r in range(m):
        off[r] = 0.0
    for i in range(d - 1, -1, -1):
        c = (d + 1) * inv[d - i]
        for r in range(m):
            off[r] += pw[i, r] * c
    for e in range(d):
        z = element_zero[p, e]
        for r in range(m):
            nxt[r] = pw[d, r]
            total[r] = 0.0
        for i in range(d - 1, -1, -1):
            c1 = (d + 1) * inv[i + 1]
            c2 = z * (d - i) * inv[d + 1]
            for r in range(m):
                tmp = nxt[r] * c1
                total[r] += tmp
                nxt[r] = pw[i, r] - tmp * c2
        for r in range(m):
            o = one[e, r]
            w = (1.0 - z) * total[r] if o != 0.0 else -off[r]
            one[e, r] = 0.0 if o == z else w


@numba.njit(parallel=True, **JIT)
def _shap_rows(X, left, right, feature, threshold, missing_left, is_cat, cat_left, missing_bin, step_node,
               step_left, step_element, element_feature, element_zero, n_elements, value, out, inter, n_chunks, inv,
               tree_start):
    """SHAP values into ``out`` (n, F + 1, K) and, where ``inter`` is (n, F + 1, F + 1, K), the off-diagonal
    interaction terms into it (zero-initialised), of every row for every path (tree ``t``'s paths
    ``tree_start[t]:tree_start[t + 1]``)."""
    n = X.shape[0]
    depth = step_node.shape[1]
    k = value.shape[1]
    any_cat = cat_left.shape[2] > 0
    pairs = inter.shape[0] > 0
    n_blocks = (n + ROWS_PER_BLOCK - 1) // ROWS_PER_BLOCK
    n_trees, width = left.shape
    for c in prange(n_chunks):
        ones = np.empty((depth + 1, ROWS_PER_BLOCK), dtype=np.float64)
        weight = np.empty((depth + 1, ROWS_PER_BLOCK), dtype=np.float64)
        pws = np.empty((depth + 2, ROWS_PER_BLOCK), dtype=np.float64)
        nxt = np.empty(ROWS_PER_BLOCK, dtype=np.float64)
        total = np.empty(ROWS_PER_BLOCK, dtype=np.float64)
        off = np.empty(ROWS_PER_BLOCK, dtype=np.float64)
        pw = np.empty(depth + 2, dtype=np.float64)
        less = np.empty(depth + 2, dtype=np.float64)
        goes = np.empty((width, ROWS_PER_BLOCK), dtype=np.float64)
        for blk in range(c * n_blocks // n_chunks, (c + 1) * n_blocks // n_chunks):
            i0 = blk * ROWS_PER_BLOCK
            m = min(n, i0 + ROWS_PER_BLOCK) - i0
            for t in range(n_trees):
                if tree_start[t] == tree_start[t + 1]:
                    continue
                # each node's decision once per row, not once per path through it
                for nd in range(width):
                    if feature[t, nd] < 0:
                        continue
                    lo = left[t, nd]
                    for r in range(m):
                        nxt_node = step(X, i0 + r, t, nd, left, right, feature, threshold, missing_left, is_cat,
                                        cat_left, any_cat, missing_bin)
                        goes[nd, r] = 1.0 if nxt_node == lo else 0.0
                for p in range(tree_start[t], tree_start[t + 1]):
                    d = n_elements[p]
                    for e in range(d):
                        for r in range(m):
                            ones[e, r] = 1.0
                    for s in range(depth):
                        nd = step_node[p, s]
                        if nd < 0:
                            break
                        e = step_element[p, s]
                        side = 1.0 if step_left[p, s] else 0.0
                        for r in range(m):
                            ones[e, r] = ones[e, r] if goes[nd, r] == side else 0.0
                    for e in range(d):
                        for r in range(m):
                            weight[e, r] = ones[e, r]
                    _block_values(p, m, d, weight, pws, nxt, total, off, element_zero, inv)
                    for e in range(d):
                        f = element_feature[p, e]
                        for kk in range(k):
                            v = value[p, kk]
                            if v == 0.0:
                                continue
                            for r in range(m):
                                out[i0 + r, f, kk] += weight[e, r] * v
                    if not pairs:
                        continue
                    for r in range(m):
                        _row_pairs(p, d, r, i0 + r, ones, pws, pw, less, element_zero, element_feature, value,
                                   inter, inv)
    return out


@numba.njit(inline="always")
def _row_pairs(p, d, r, i, ones, pws, pw, less, element_zero, element_feature, value, inter, inv):
    """Off-diagonal interaction terms of path ``p`` for row ``i`` (block column ``r``): for each element,
    the path's weights without it (UNWINDPATH), then each partner's UNWOUNDPATHSUM."""
    k = value.shape[1]
    pw[0] = 1.0
    for e in range(d):
        shap_extend(pw, e + 1, element_zero[p, e], ones[e, r], inv)
    for e in range(d):
        z = element_zero[p, e]
        o = ones[e, r]
        if o == z:
            continue
        f = element_feature[p, e]
        shap_unwind(pw, d, z, o, inv, less)
        for j in range(d):
            zj = element_zero[p, j]
            oj = ones[j, r]
            if j == e or oj == zj:
                continue
            wj = 0.5 * (o - z) * (oj - zj) * shap_unwound_sum(less, d - 1, zj, oj, inv)
            fj = element_feature[p, j]
            for kk in range(k):
                inter[i, f, fj, kk] += wj * value[p, kk]


def tree_shap(xp, batch, values, cover, X, missing_bin: int, *, interactions: bool = False, paths=None,
              n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels.treeshap.tree_shap`, compiled, rows over ``n_threads`` threads."""
    paths = tree_paths(batch, values, cover) if paths is None else paths
    # float64 rows whatever the input's float type (float32 values compare with the float64 thresholds as their
    # float64 copies do): one compilation of the kernel, and the copy is smaller than the values it returns
    Xc = read_only(np.ascontiguousarray(X, dtype=np.float64))
    n, n_features = int(Xc.shape[0]), int(Xc.shape[1])
    k = int(paths.value.shape[1])
    f1 = n_features + 1
    out = np.zeros((n, f1, k), dtype=np.float64)
    inter = np.zeros((n, f1, f1, k) if interactions else (0, 1, 1, 1), dtype=np.float64)
    n_paths, depth = paths.step_node.shape
    if n_paths and depth:
        left, right, feature, threshold, missing_left, is_cat, cat_left, _ = tree_arrays(batch)
        n_trees = int(left.shape[0])
        work = n * n_paths * max(1, depth) ** (3 if interactions else 2)
        threads = threads_for(n_threads, work)
        n_chunks = max(1, min(threads * 4, (n + ROWS_PER_BLOCK - 1) // ROWS_PER_BLOCK))
        with Threads(threads):
            _shap_rows(
                Xc, left, right, feature, threshold, missing_left, is_cat, cat_left, int(missing_bin),
                paths.step_node, paths.step_left, paths.step_element, paths.element_feature,
                paths.element_zero, paths.n_elements, np.ascontiguousarray(paths.value), out, inter, n_chunks,
                reciprocals(depth + 2), np.searchsorted(paths.tree, np.arange(n_trees + 1)),
            )
    out[:, n_features, :] += expected_value(paths)
    if not interactions:
        return out
    return interaction_diagonal(np, inter, out)
