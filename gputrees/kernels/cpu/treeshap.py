"""Compiled exact TreeSHAP (Numba): every (row, leaf path) pair, rows in parallel.

The paths are :func:`gputrees.kernels.treeshap.tree_paths`'s (the reference's
layout). For each row and path the kernel finds the one fractions with
prediction's split rule (:func:`.predict.step`), EXTENDs the path's elements
once, and takes each element's weight by Algorithm 2's UNWOUNDPATHSUM
(interaction values: UNWINDPATH of the conditioning element, then the
partner's unwound sum), as shap's and XGBoost's CPU code do. Elements whose
one and zero fractions are equal contribute nothing and are skipped (so no
division by a zero fraction happens).

A thread takes blocks of :data:`ROWS_PER_BLOCK` rows and runs every path
over the block before the next path: a path's arrays are read once per
block, the block's rows stay in cache.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ..treeshap import expected_value, interaction_diagonal, tree_paths
from .jit import JIT, Threads, threads_for
from .memory import float_rows
from .predict import step, tree_arrays

__all__ = ["tree_shap"]

#: Rows a task runs through every path in turn.
ROWS_PER_BLOCK = 32


@numba.njit(inline="always")
def _extend(pw, ud, z, o):
    """Algorithm 2's EXTEND: element ``ud`` (fractions ``z``, ``o``) joins the weights ``pw[:ud]``."""
    pw[ud] = 0.0
    denom = ud + 1.0
    for i in range(ud - 1, -1, -1):
        pw[i + 1] += o * pw[i] * (i + 1) / denom
        pw[i] = z * pw[i] * (ud - i) / denom


@numba.njit(inline="always")
def _unwound_sum(pw, ud, z, o):
    """Algorithm 2's UNWOUNDPATHSUM: the sum of the weights ``pw[:ud + 1]`` without an element (``z``, ``o``)."""
    total = 0.0
    denom = ud + 1.0
    if o != 0.0:
        nxt = pw[ud]
        for i in range(ud - 1, -1, -1):
            tmp = nxt * denom / ((i + 1) * o)
            total += tmp
            nxt = pw[i] - tmp * z * (ud - i) / denom
    else:
        for i in range(ud - 1, -1, -1):
            total += pw[i] * denom / (z * (ud - i))
    return total


@numba.njit(inline="always")
def _unwind(pw, ud, z, o, out):
    """Algorithm 2's UNWINDPATH into ``out[:ud]``: the weights without an element (``z``, ``o``)."""
    denom = ud + 1.0
    if o != 0.0:
        nxt = pw[ud]
        for i in range(ud - 1, -1, -1):
            out[i] = nxt * denom / ((i + 1) * o)
            nxt = pw[i] - out[i] * z * (ud - i) / denom
    else:
        for i in range(ud - 1, -1, -1):
            out[i] = pw[i] * denom / (z * (ud - i))


@numba.njit(parallel=True, **JIT)
def _shap_rows(X, left, right, feature, threshold, missing_left, is_cat, cat_left, missing_bin, p_tree, step_node,
               step_left, step_element, element_feature, element_zero, n_elements, value, out, inter, n_chunks):
    """SHAP values into ``out`` (n, F + 1, K) and, where ``inter`` is (n, F + 1, F + 1, K), the off-diagonal
    interaction terms into it (zero-initialised), of every row for every path."""
    n = X.shape[0]
    n_paths, depth = step_node.shape
    k = value.shape[1]
    any_cat = cat_left.shape[2] > 0
    pairs = inter.shape[0] > 0
    n_blocks = (n + ROWS_PER_BLOCK - 1) // ROWS_PER_BLOCK
    for c in prange(n_chunks):
        one = np.empty(depth + 1, dtype=np.float64)
        pw = np.empty(depth + 2, dtype=np.float64)
        less = np.empty(depth + 2, dtype=np.float64)
        for blk in range(c * n_blocks // n_chunks, (c + 1) * n_blocks // n_chunks):
            i0 = blk * ROWS_PER_BLOCK
            i1 = min(n, i0 + ROWS_PER_BLOCK)
            for p in range(n_paths):
                t = p_tree[p]
                d = n_elements[p]
                for i in range(i0, i1):
                    for e in range(d):
                        one[e] = 1.0
                    for s in range(depth):
                        nd = step_node[p, s]
                        if nd < 0:
                            break
                        nxt = step(X, i, t, nd, left, right, feature, threshold, missing_left, is_cat, cat_left,
                                   any_cat, missing_bin)
                        if (nxt == left[t, nd]) != step_left[p, s]:
                            one[step_element[p, s]] = 0.0
                    pw[0] = 1.0
                    for e in range(d):
                        _extend(pw, e + 1, element_zero[p, e], one[e])
                    for e in range(d):
                        z = element_zero[p, e]
                        o = one[e]
                        if o == z:
                            continue
                        w = (o - z) * _unwound_sum(pw, d, z, o)
                        f = element_feature[p, e]
                        for kk in range(k):
                            out[i, f, kk] += w * value[p, kk]
                        if not pairs:
                            continue
                        # condition on element e: the path's weights without it, then each partner's sum
                        _unwind(pw, d, z, o, less)
                        for j in range(d):
                            zj = element_zero[p, j]
                            oj = one[j]
                            if j == e or oj == zj:
                                continue
                            wj = 0.5 * (o - z) * (oj - zj) * _unwound_sum(less, d - 1, zj, oj)
                            fj = element_feature[p, j]
                            for kk in range(k):
                                inter[i, f, fj, kk] += wj * value[p, kk]
    return out


def tree_shap(xp, batch, values, cover, X, missing_bin: int, *, interactions: bool = False, paths=None,
              n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels.treeshap.tree_shap`, compiled, rows over ``n_threads`` threads."""
    paths = tree_paths(batch, values, cover) if paths is None else paths
    Xc = float_rows(X)
    n, n_features = int(Xc.shape[0]), int(Xc.shape[1])
    k = int(paths.value.shape[1])
    f1 = n_features + 1
    out = np.zeros((n, f1, k), dtype=np.float64)
    inter = np.zeros((n, f1, f1, k) if interactions else (0, 1, 1, 1), dtype=np.float64)
    n_paths, depth = paths.step_node.shape
    if n_paths and depth:
        left, right, feature, threshold, missing_left, is_cat, cat_left, _ = tree_arrays(batch)
        work = n * n_paths * max(1, depth) ** (3 if interactions else 2)
        threads = threads_for(n_threads, work)
        n_chunks = max(1, min(threads * 4, (n + ROWS_PER_BLOCK - 1) // ROWS_PER_BLOCK))
        with Threads(threads):
            _shap_rows(
                Xc, left, right, feature, threshold, missing_left, is_cat, cat_left, int(missing_bin),
                paths.tree, paths.step_node, paths.step_left, paths.step_element, paths.element_feature,
                paths.element_zero, paths.n_elements, np.ascontiguousarray(paths.value), out, inter, n_chunks,
            )
    out[:, n_features, :] += expected_value(paths)
    if not interactions:
        return out
    return interaction_diagonal(np, inter, out)
