"""Compiled prediction (Numba) over depth-limited trees in a complete-binary-tree layout.

The padded walk of :mod:`gputrees.kernels._numba` (``_walk_trees``) follows
each node's ``left`` / ``right`` links and stops a block of rows when every
row is at a leaf. For trees of bounded depth
(boosting's depth-6 trees) this module lays every tree out once as a complete
binary tree of ``depth`` levels (a heap): node ``h``'s children are
``2h + 1`` and ``2h + 2``, so a step reads no links, and a leaf above the
bottom level is pushed down as a chain of nodes that send every row left
(feature 0, threshold +inf, missing values left), so that every row takes
exactly ``depth`` steps with no leaf test and ends at bottom position
``h - (2**depth - 1)``, whose entry holds the original leaf's node id.

A step is the padded walk's :func:`gputrees.kernels._numba._step` for a
numerical node, ``x <= threshold``, or ``missing_left`` when ``x`` is NaN,
done as one comparison: a block of 128 rows holding no NaN is read in place;
a block holding one is copied with every row twice, NaN as -inf then NaN as
+inf, and a node whose missing values go right reads the second copy
(feature + ``n_cols``): -inf goes left at every threshold, +inf right at
every finite one (a batch with a +inf threshold on such a node takes the
padded walk). Float32 rows are compared with float32 thresholds rounded
toward -inf (the largest float32 at most the float64 threshold), which give
the same decisions as the float64 comparison: for a float32 ``x``,
``x <= t`` exactly when ``x <= r`` (``r <= t``, and no float32 lies in
``(r, t]``). Leaf values are added to each row's sums in tree order, as in
the padded walk, so the results equal the reference's bit for bit.

Batches with a categorical split, or too deep for the layout
(:data:`MAX_DEPTH`, :data:`MAX_NODES`), take the padded walk. The layout of a
batch is built on its first prediction (a few NumPy passes, one per level)
and kept while the batch lives (:func:`complete_trees`).

Index arithmetic is unsigned (node positions, feature columns, flat row
offsets): Numba adds a negative-index test to every signed index, which, with
the loads of the per-tree arrays, made the first version of this loop no
faster than the padded walk. Measured effects: ``bench/README.md``, "Fourth
pass: prediction" (``bench/bench_predict_kernels.py``).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numba
import numpy as np
from numba import prange

from . import _numba
from ._numba import _JIT, ROWS_PER_BLOCK, _float_rows, _threads_for, _Threads

__all__ = ["apply_trees", "complete_trees", "predict_raw"]

#: Deepest trees laid out as complete trees: a tree takes 2**depth bottom
#: slots however few leaves it has, and every row takes ``depth`` steps.
MAX_DEPTH = 10
#: Most bottom slots (trees x 2**depth) of a batch laid out (about 25 bytes
#: each: 48 MiB at this bound).
MAX_NODES = 1 << 21


@dataclass(frozen=True)
class CompleteTrees:
    """A padded batch as complete binary trees of ``depth`` levels.

    Attributes
    ----------
    depth : int
    feature : (n_trees, 2**depth - 1) uint32
    threshold : (n_trees, 2**depth - 1) float64
    threshold32 : (n_trees, 2**depth - 1) float32
        ``threshold`` rounded toward -inf (compared with float32 rows).
    missing_left : (n_trees, 2**depth - 1) uint8
    leaf : (n_trees, 2**depth) int64
        Node id (in the padded batch) of the leaf at each bottom slot.
    """

    depth: int
    feature: np.ndarray
    threshold: np.ndarray
    threshold32: np.ndarray
    missing_left: np.ndarray
    leaf: np.ndarray


def below_float32(t):
    """The largest float32 at most each float64 in ``t`` (-inf below -max, max above it; NaN stays NaN)."""
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(over="ignore"):
        r = t.astype(np.float32)
        return np.where(r.astype(np.float64) > t, np.nextafter(r, np.float32(-np.inf)), r)


def _build(batch):
    """The :class:`CompleteTrees` of ``batch``, or None where it does not apply.

    None: a categorical split, too deep, a leaf below ``max_depth``, or a +inf
    threshold where missing values go right (NaN read as +inf would go left).
    """
    depth = int(batch.max_depth)
    feature = np.asarray(batch.feature)
    n_trees = int(feature.shape[0])
    if depth > MAX_DEPTH or n_trees << depth > MAX_NODES:
        return None
    if np.asarray(batch.cat_left).shape[-1] > 0 and bool(np.any(batch.is_categorical)):
        return None
    left, right = np.asarray(batch.left), np.asarray(batch.right)
    threshold, missing_left = np.asarray(batch.threshold), np.asarray(batch.missing_left)
    inner = (1 << depth) - 1
    h_feature = np.empty((n_trees, inner), dtype=np.uint32)
    h_threshold = np.empty((n_trees, inner), dtype=np.float64)
    h_missing = np.empty((n_trees, inner), dtype=np.uint8)
    tree = np.arange(n_trees)[:, None]
    node = np.zeros((n_trees, 1), dtype=np.int64)  # padded node at each slot of the level
    for d in range(depth):
        f = feature[tree, node]
        leaf = f < 0
        level = slice((1 << d) - 1, (2 << d) - 1)
        # a leaf above the bottom: every row goes left, down to its leftmost bottom slot
        h_feature[:, level] = np.where(leaf, 0, f)
        h_threshold[:, level] = np.where(leaf, np.inf, threshold[tree, node])
        h_missing[:, level] = np.where(leaf, True, missing_left[tree, node])
        children = np.empty((n_trees, 2 << d), dtype=np.int64)
        children[:, 0::2] = np.where(leaf, node, left[tree, node])
        children[:, 1::2] = np.where(leaf, node, right[tree, node])
        node = children
    if not bool(np.all(feature[tree, node] < 0)):
        return None
    if bool(np.any((h_missing == 0) & (h_threshold == np.inf))):
        return None
    return CompleteTrees(depth, h_feature, h_threshold, below_float32(h_threshold), h_missing,
                         np.ascontiguousarray(node))


_CACHE: dict = {}
_NONE = object()


def complete_trees(batch):
    """``batch`` as :class:`CompleteTrees` (None where it does not apply), built once per batch object.

    Kept while ``batch`` lives (a weak reference drops it with the batch): a
    fitted model's batch is laid out on its first prediction only. Batches are
    frozen records whose arrays no code writes to after the fit.
    """
    key = id(batch)
    hit = _CACHE.get(key)
    if hit is not None and hit[0]() is batch:
        return None if hit[1] is _NONE else hit[1]
    layout = _build(batch)
    try:
        ref = weakref.ref(batch, lambda _, key=key: _CACHE.pop(key, None))
    except TypeError:  # not weak-referenceable: not cached
        return layout
    _CACHE[key] = (ref, _NONE if layout is None else layout)
    return layout


@numba.njit(inline="always")
def _any_nan(Xf, start, end):
    """Whether ``Xf[start:end]`` holds a NaN (no early exit: the loop is vectorised)."""
    nan = False
    for q in range(start, end):
        nan |= Xf[q] != Xf[q]
    return nan


@numba.njit(inline="always")
def _double_rows(Xf, lo, m, n_cols, buf):
    """``m`` rows of ``n_cols`` from ``Xf[lo]`` into ``buf``, each twice: NaN as -inf, then NaN as +inf (uint64 offsets)."""
    src = lo
    dst = np.uint64(0)
    for _ in range(m):
        for f in range(n_cols):
            x = Xf[src + f]
            nan = x != x
            buf[dst + f] = -np.inf if nan else x
            buf[dst + n_cols + f] = np.inf if nan else x
        src += n_cols
        dst += np.uint64(2) * n_cols


@numba.njit(inline="always")
def _walk_block(src, r0, stride, m, feature, threshold, depth, nd):
    """Bottom slot (``2**depth - 1`` and up) of ``m`` rows in one tree, into ``nd``.

    Row ``j`` starts at ``src[r0 + j * stride]`` (uint64 offsets). Level by
    level over the block: the rows' walks are independent, so the CPU overlaps
    their loads.
    """
    two = np.uint64(2)
    for j in range(m):
        nd[j] = 0
    for _ in range(depth):
        r = r0
        for j in range(m):
            h = nd[j]
            go_left = src[r + feature[h]] <= threshold[h]
            nd[j] = two * h + two - np.uint64(go_left)
            r += stride


@numba.njit(parallel=True, **_JIT)
def _complete_walk(X, feature, feature_nan, threshold, table, depth, out, add, n_chunks):
    """Every row's bottom slot in every tree, looked up in ``table`` (n_trees, 2**depth), into ``out``.

    A block of rows holding a NaN is walked in a copy where each row stands
    twice, NaN as -inf then as +inf, through ``feature_nan`` (the feature, plus
    ``n_cols`` where missing values go right): ``x <= threshold`` then sends
    NaN where ``missing_left`` says (no threshold of such a node is +inf,
    see :func:`_build`). Other blocks are read in place through ``feature``.

    ``add``: ``out[i, t % k] += table[t, slot]`` in tree order (``out`` (n, k)
    holds the base; raw predictions); otherwise ``out[i, t] = table[t, slot]``
    (``out`` (n, n_trees); leaves, with ``table`` the padded leaf ids).
    """
    n = X.shape[0]
    n_cols = np.uint64(X.shape[1])
    n_trees = feature.shape[0]
    k = out.shape[1]
    Xf = X.reshape(-1)
    inner = np.uint64((1 << depth) - 1)
    n_blocks = (n + ROWS_PER_BLOCK - 1) // ROWS_PER_BLOCK
    for c in prange(n_chunks):
        nd = np.empty(ROWS_PER_BLOCK, dtype=np.uint64)
        buf = np.empty(2 * ROWS_PER_BLOCK * X.shape[1], dtype=X.dtype)
        for blk in range(c * n_blocks // n_chunks, (c + 1) * n_blocks // n_chunks):
            i0 = blk * ROWS_PER_BLOCK
            m = min(n, i0 + ROWS_PER_BLOCK) - i0
            lo = np.uint64(i0) * n_cols
            if _any_nan(Xf, lo, lo + np.uint64(m) * n_cols):
                _double_rows(Xf, lo, m, n_cols, buf)
                src, r0, stride, feat = buf, np.uint64(0), np.uint64(2) * n_cols, feature_nan
            else:
                src, r0, stride, feat = Xf, lo, n_cols, feature
            for t in range(n_trees):
                _walk_block(src, r0, stride, m, feat[t], threshold[t], depth, nd)
                row = table[t]
                if add:
                    col = t % k
                    for j in range(m):
                        out[i0 + j, col] += row[nd[j] - inner]
                else:
                    for j in range(m):
                        out[i0 + j, t] = row[nd[j] - inner]
    return out


def _prepared(batch, X, n_threads):
    """(layout, rows, thresholds for the rows' dtype, threads), or None when the padded walk is to be used."""
    layout = complete_trees(batch)
    if layout is None:
        return None
    Xc = _float_rows(X)
    threshold = layout.threshold32 if Xc.dtype == np.float32 else layout.threshold
    # NaN blocks: the +inf copy of the row for nodes sending missing values right
    feature_nan = layout.feature + np.where(layout.missing_left, 0, Xc.shape[1]).astype(np.uint32)
    work = int(X.shape[0]) * int(layout.feature.shape[0]) * max(1, layout.depth)
    return layout, Xc, (layout.feature, feature_nan, threshold), _threads_for(n_threads, work)


def apply_trees(xp, batch, X, missing_bin: int, *, n_threads: int = 1):
    """Same contract as :func:`gputrees._predictor.apply_trees_reference` (the padded walk where the layout does not apply)."""
    prep = _prepared(batch, X, n_threads)
    if prep is None:
        return _numba.apply_trees(xp, batch, X, missing_bin, n_threads=n_threads)
    layout, Xc, trees, threads = prep
    out = np.empty((int(Xc.shape[0]), int(layout.feature.shape[0])), dtype=np.int64)
    with _Threads(threads):
        return _complete_walk(Xc, *trees, layout.leaf, layout.depth, out, False, threads)


def predict_raw(xp, batch, values, X, missing_bin: int, base, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels._reference.predict_raw` (the padded walk where the layout does not apply)."""
    prep = _prepared(batch, X, n_threads)
    if prep is None:
        return _numba.predict_raw(xp, batch, values, X, missing_bin, base, n_threads=n_threads)
    layout, Xc, trees, threads = prep
    bottom = np.take_along_axis(np.asarray(values, dtype=np.float64), layout.leaf, axis=1)
    out = np.array(base, dtype=np.float64, order="C")  # a copy: the sums start from the base
    with _Threads(threads):
        return _complete_walk(Xc, *trees, bottom, layout.depth, out, True, threads)
