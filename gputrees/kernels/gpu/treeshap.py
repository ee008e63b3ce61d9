"""Exact TreeSHAP on the GPU (numba-cuda): one thread per (row, leaf path), as GPUTreeShap does.

The paths are :func:`gputrees.kernels.treeshap.tree_paths`'s (laid out on
the host once per call from the model's structure, then copied to the
device). A thread finds its row's one fractions along its path with
prediction's split rule (:func:`gputrees.kernels._cuda.goes_left`), EXTENDs
the path's elements in a local array and adds each element's
``(o - z) * UNWOUNDPATHSUM * value`` to the row's output with a float64
atomic (the recurrences of :mod:`gputrees.kernels.rules`, shared with the
CPU kernel); interaction values take each conditioning element's UNWINDPATH,
then its partners' unwound sums. Atomics add in any order: the results equal
the reference's to float rounding.

Paths of more than :data:`MAX_PATH` splits (trees deeper than that) do not
fit the local arrays: such batches run the reference kernel, on the same
device arrays.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from .._cuda import goes_left, grid_blocks, launch, launch_config
from ..rules import shap_extend, shap_unwind, shap_unwound_sum
from ..treeshap import expected_value, interaction_diagonal, reciprocals, tree_paths
from ..treeshap import tree_shap as reference_tree_shap
from .rules import compile_rules

__all__ = ["MAX_PATH", "tree_shap"]

#: Longest path (splits from the root to a leaf) a thread's local arrays hold.
MAX_PATH = 32
# local arrays' sizes: names of their own, as numba-cuda takes only a constant (not an expression) as a size
_ONE_SIZE = MAX_PATH + 1
_WEIGHTS_SIZE = MAX_PATH + 2


@cuda.jit
def _shap_paths(X, feature, threshold, missing_left, is_cat, cat_left, any_cat, missing_bin, p_tree, step_node,
                step_left, step_element, element_feature, element_zero, n_elements, value, inv, out, inter, pairs):
    n_paths, depth = step_node.shape
    k = value.shape[1]
    total = X.shape[0] * n_paths
    one = cuda.local.array(_ONE_SIZE, dtype=np.float64)
    pw = cuda.local.array(_WEIGHTS_SIZE, dtype=np.float64)
    less = cuda.local.array(_WEIGHTS_SIZE, dtype=np.float64)
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for idx in range(start, total, stride):
        i = idx // n_paths
        p = idx % n_paths
        t = p_tree[p]
        d = n_elements[p]
        for e in range(d):
            one[e] = 1.0
        for s in range(depth):
            nd = step_node[p, s]
            if nd < 0:
                break
            if goes_left(X[i], t, nd, feature, threshold, missing_left, is_cat, cat_left, any_cat,
                         missing_bin) != step_left[p, s]:
                one[step_element[p, s]] = 0.0
        pw[0] = 1.0
        for e in range(d):
            shap_extend(pw, e + 1, element_zero[p, e], one[e], inv)
        for e in range(d):
            z = element_zero[p, e]
            o = one[e]
            if o == z:
                continue
            w = (o - z) * shap_unwound_sum(pw, d, z, o, inv)
            f = element_feature[p, e]
            for kk in range(k):
                v = value[p, kk]
                if v != 0.0:
                    cuda.atomic.add(out, (i, f, kk), w * v)
            if not pairs:
                continue
            shap_unwind(pw, d, z, o, inv, less)
            for j in range(d):
                zj = element_zero[p, j]
                oj = one[j]
                if j == e or oj == zj:
                    continue
                wj = 0.5 * (o - z) * (oj - zj) * shap_unwound_sum(less, d - 1, zj, oj, inv)
                fj = element_feature[p, j]
                for kk in range(k):
                    v = value[p, kk]
                    if v != 0.0:
                        cuda.atomic.add(inter, (i, f, fj, kk), wj * v)


def tree_shap(xp, batch, values, cover, X, missing_bin: int, *, interactions: bool = False, paths=None):
    """Same contract as :func:`gputrees.kernels.treeshap.tree_shap`: one thread per (row, path)."""
    paths = tree_paths(batch, values, cover) if paths is None else paths
    n_paths, depth = paths.step_node.shape
    if depth > MAX_PATH:
        return reference_tree_shap(xp, batch, values, cover, X, missing_bin, interactions=interactions, paths=paths)
    compile_rules()
    n, n_features = int(X.shape[0]), int(X.shape[1])
    k = int(paths.value.shape[1])
    f1 = n_features + 1
    out = xp.zeros((n, f1, k), dtype=xp.float64)
    inter = xp.zeros((n, f1, f1, k) if interactions else (1, 1, 1, 1), dtype=xp.float64)
    if n and n_paths and depth:
        dev = _device_arrays(xp, paths, depth)
        cat_left = batch.cat_left
        any_cat = cat_left.ndim == 3 and int(cat_left.shape[-1]) > 0
        if not any_cat:
            cat_left = xp.zeros((1, 1, 1), dtype=xp.bool)
        threads, cap = launch_config()
        launch(
            _shap_paths, grid_blocks(n * n_paths, threads, cap), threads, xp.astype(X, xp.float64, copy=False),
            xp.astype(batch.feature, xp.int64, copy=False), xp.astype(batch.threshold, xp.float64, copy=False),
            batch.missing_left, batch.is_categorical, cat_left, any_cat, int(missing_bin), *dev, out, inter,
            interactions,
        )
    bias = xp.asarray(expected_value(paths), dtype=xp.float64)
    e = xp.astype(xp.arange(f1) == n_features, xp.float64)
    out = out + e[None, :, None] * bias[None, None, :]
    if not interactions:
        return out
    return interaction_diagonal(xp, inter, out)


def _device_arrays(xp, paths, depth):
    """The path layout's arrays in ``xp`` (on the device), then ``1 / m`` for ``m`` in ``0 .. depth + 2``."""
    host = (paths.tree, paths.step_node, paths.step_left, paths.step_element, paths.element_feature,
            paths.element_zero, paths.n_elements, np.ascontiguousarray(paths.value), reciprocals(depth + 2))
    return tuple(xp.asarray(np.ascontiguousarray(a)) for a in host)
