"""Compiled prediction (Numba): the padded walk of any batch, and complete-tree layouts of shallow ones.

The padded walk (:func:`padded_apply_trees`, ``_walk_trees``) follows each
node's ``left`` / ``right`` links and stops a block of rows when every row
is at a leaf. For trees of bounded depth
(boosting's depth-6 trees) this module lays every tree out once as a complete
binary tree of ``depth`` levels (a heap): node ``h``'s children are
``2h + 1`` and ``2h + 2``, so a step reads no links, and a leaf above the
bottom level is pushed down as a chain of nodes that send every row left
(feature 0, threshold +inf, missing values left), so that every row takes
exactly ``depth`` steps with no leaf test and ends at bottom position
``h - (2**depth - 1)``, whose entry holds the original leaf's node id.

A step is the padded walk's :func:`step` for a
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
the loads of the per-tree arrays, would make this loop no faster than the
padded walk (``bench/bench_predict_kernels.py`` measures the kernels; their
history: ``bench/results/HISTORY.md``, "Fourth pass: prediction").
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numba
import numpy as np
from numba import prange

from ..rules import PAIRWISE_BLOCK, category_column, pairwise_sum
from .jit import JIT, Threads, threads_for
from .memory import as_int64, at, at3, float_rows, read_only

# -- prediction -----------------------------------------------------------------
#: Rows one task walks through every tree in turn: 128 rows of 28 float64
#: features (28 KB) stay in the core's L1/L2 cache while each tree's few
#: kilobytes of node arrays are read once per block, not per row.
ROWS_PER_BLOCK = 128
#: Above this many bytes of node arrays (all trees' left, right, feature,
#: threshold and missing_left: 33 bytes a node) the trees do not stay in a
#: core's cache while a block of rows goes through them all: rows are then
#: taken :data:`ROWS_PER_TREE_PASS` at a time and each tree walked for all of
#: them before the next (a tree's top levels stay hot). Smaller forests keep
#: the block order, in which the rows' features stay in cache across trees.
TREES_IN_CACHE_BYTES = 1 << 20
#: Levels a block of rows walks all together (:func:`_padded_walk_block`); deeper, only its moving rows
BLOCK_LEVELS = 16
#: Rows of one pass through each tree of a large forest (see above): enough
#: that each tree's nodes come from memory once for many rows.
ROWS_PER_TREE_PASS = 1 << 15


@numba.njit(inline="always")
def goes_left(X, i, t, nd, f, threshold, missing_left, is_cat, cat_left, any_cat, missing_bin):
    """Whether row ``i`` goes left at node ``nd`` of tree ``t``, which tests feature ``f``."""
    # unchecked loads (_unchecked): the negative-index mapping of ``nd``
    # would lengthen every level's chain of dependent loads
    x = at(X, i, f)
    missing = x != x
    go_left = x <= at(threshold, t, nd)
    if any_cat and at(is_cat, t, nd):
        code = missing_bin if missing else int(x)
        go_left = at3(cat_left, t, nd, category_column(code, cat_left.shape[2]))
        missing = missing or code == missing_bin
    if missing:
        go_left = at(missing_left, t, nd)
    return go_left


@numba.njit(inline="always")
def step(X, i, t, nd, left, right, feature, threshold, missing_left, is_cat, cat_left, any_cat, missing_bin):
    """The node row ``i`` moves to from node ``nd`` of tree ``t`` (``nd`` itself at a leaf)."""
    f = at(feature, t, nd)
    at_leaf = f < 0
    go_left = goes_left(X, i, t, nd, 0 if at_leaf else f, threshold, missing_left, is_cat, cat_left, any_cat,
                        missing_bin)
    # both children read unconditionally: selects, not branches the CPU
    # mispredicts half the time
    lo = at(left, t, nd)
    hi = at(right, t, nd)
    nxt = lo if go_left else hi
    return nd if at_leaf else nxt


@numba.njit(inline="always")
def _padded_walk_block(X, i0, i1, t, nd, active, left, right, feature, threshold, missing_left, is_cat, cat_left,
                       any_cat, max_depth, missing_bin):
    """Leaves of rows ``i0:i1`` in tree ``t``, into ``nd[: i1 - i0]`` (``active``: work space of as many rows).

    Level by level over the whole block: the rows' walks are independent, so
    the CPU overlaps their loads instead of waiting on one row's chain of
    dependent loads (node -> feature -> value -> child) at a time. Stops when
    no row moved (every row at a leaf). Deeper than :data:`BLOCK_LEVELS`
    levels only the rows still moving are stepped: a fully grown tree's rows
    end at very different depths, and stepping every row until the deepest
    one ends would cost the block's rows times its deepest leaf's depth.
    """
    n = i1 - i0
    for j in range(n):
        nd[j] = 0
    for _ in range(min(max_depth, BLOCK_LEVELS)):
        moved = False
        for j in range(n):
            cur = nd[j]
            nxt = step(X, i0 + j, t, cur, left, right, feature, threshold, missing_left, is_cat, cat_left, any_cat,
                       missing_bin)
            moved |= nxt != cur
            nd[j] = nxt
        if not moved:
            return
    n_active = 0
    for j in range(n):
        active[n_active] = j
        n_active += 1
    for _ in range(BLOCK_LEVELS, max_depth):
        kept = 0
        for a in range(n_active):
            j = active[a]
            cur = nd[j]
            nxt = step(X, i0 + j, t, cur, left, right, feature, threshold, missing_left, is_cat, cat_left, any_cat,
                       missing_bin)
            nd[j] = nxt
            active[kept] = j
            kept += nxt != cur
        n_active = kept
        if n_active == 0:
            return


@numba.njit(parallel=True, **JIT)
def _walk_trees(X, left, right, feature, threshold, missing_left, is_cat, cat_left, max_depth, missing_bin, values,
                out, n_chunks, per_pass):
    """Every row through every tree: ``out`` (n, n_trees) int64 = the leaves, or with ``values`` (n_trees,
    n_nodes) ``out`` (n, k) float64 += the leaves' values (tree ``t`` into column ``t % k``), in tree order.

    Blocks of :data:`ROWS_PER_BLOCK` rows, a thread's share in passes of
    ``per_pass`` blocks: each tree in turn walks every block of a pass.
    """
    n = X.shape[0]
    n_trees = left.shape[0]
    sums = values.shape[0] > 0
    k = out.shape[1]
    any_cat = cat_left.shape[2] > 0
    n_blocks = (n + ROWS_PER_BLOCK - 1) // ROWS_PER_BLOCK
    for c in prange(n_chunks):
        nd = np.empty(ROWS_PER_BLOCK, dtype=np.int64)
        active = np.empty(ROWS_PER_BLOCK, dtype=np.int64)
        end = (c + 1) * n_blocks // n_chunks
        for p0 in range(c * n_blocks // n_chunks, end, per_pass):
            # trees in order: each row's sum grows round after round, as in the reference
            for t in range(n_trees):
                for blk in range(p0, min(end, p0 + per_pass)):
                    i0 = blk * ROWS_PER_BLOCK
                    i1 = min(n, i0 + ROWS_PER_BLOCK)
                    _padded_walk_block(X, i0, i1, t, nd, active, left, right, feature, threshold, missing_left, is_cat,
                                       cat_left, any_cat, max_depth, missing_bin)
                    for j in range(i1 - i0):
                        if sums:
                            out[i0 + j, t % k] += values[t, nd[j]]
                        else:
                            out[i0 + j, t] = nd[j]
    return out


def _blocks_per_pass(batch) -> int:
    """Blocks of rows each tree walks in turn: 1 while the trees stay in cache, else :data:`ROWS_PER_TREE_PASS` rows."""
    node_bytes = int(batch.left.shape[0]) * int(batch.left.shape[1]) * 33
    return 1 if node_bytes <= TREES_IN_CACHE_BYTES else max(1, ROWS_PER_TREE_PASS // ROWS_PER_BLOCK)


def tree_arrays(batch):
    """The padded batch's arrays as the compiled walk takes them (cat_left (n_trees, 1, 0) when unused)."""
    n_trees = int(batch.left.shape[0])
    cat_left = np.ascontiguousarray(batch.cat_left, dtype=np.bool_)
    if cat_left.ndim != 3 or cat_left.shape[-1] == 0:
        cat_left = np.zeros((n_trees, 1, 0), dtype=np.bool_)
    # read-only, whether the batch's own arrays are or not (a loaded model's may be): one compilation for both
    return (
        read_only(as_int64(batch.left)), read_only(as_int64(batch.right)), read_only(as_int64(batch.feature)),
        read_only(np.ascontiguousarray(batch.threshold, dtype=np.float64)),
        read_only(np.ascontiguousarray(batch.missing_left, dtype=np.bool_)),
        read_only(np.ascontiguousarray(batch.is_categorical, dtype=np.bool_)),
        read_only(cat_left), int(batch.max_depth),
    )


def padded_apply_trees(xp, batch, X, missing_bin: int, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels.reference.apply_trees`: rows in parallel, trees in turn."""
    work = int(X.shape[0]) * int(batch.left.shape[0]) * max(1, int(batch.max_depth))
    threads = threads_for(n_threads, work)
    with Threads(threads):
        return _walk_trees(float_rows(X), *tree_arrays(batch), int(missing_bin), np.empty((0, 0)),
                           np.empty((int(X.shape[0]), int(batch.left.shape[0])), dtype=np.int64), threads,
                           _blocks_per_pass(batch))


def padded_predict_raw(xp, batch, values, X, missing_bin: int, base, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels.reference.predict_raw`, in one compiled pass.

    Blocks of :data:`ROWS_PER_BLOCK` rows in parallel; a block walks every
    tree in turn (with large trees, a pass of blocks each tree in turn, see
    :data:`TREES_IN_CACHE_BYTES`), level by level for all its rows, and adds
    the leaf values as it goes (no (rows, trees) array of leaves), in tree
    order, so the sums equal the reference's bit for bit.
    """
    work = int(X.shape[0]) * int(batch.left.shape[0]) * max(1, int(batch.max_depth))
    threads = threads_for(n_threads, work)
    with Threads(threads):
        return _walk_trees(
            float_rows(X), *tree_arrays(batch), int(missing_bin),
            read_only(np.ascontiguousarray(values, dtype=np.float64)), np.array(base, dtype=np.float64, order="C"),
            threads, _blocks_per_pass(batch),
        )


@numba.njit(**JIT)
def _numpy_sum(a, n):
    """``numpy.sum`` of ``a[:n]``: pairwise in blocks of at most ``PAIRWISE_BLOCK``, a longer run split in
    halves (rounded down to eights) as NumPy splits it, the halves' sums added as its recursion adds them.

    The recursion walked with a stack of its own: a cached kernel calling a recursive Numba function
    crashes in the next process (the call goes through an address of the process that compiled it).
    """
    if n <= PAIRWISE_BLOCK:
        return pairwise_sum(a, 0, n, False)
    depth = 2
    while (n >> depth) > PAIRWISE_BLOCK // 4:
        depth += 1
    first = np.empty(depth + 2, dtype=np.int64)
    size = np.empty(depth + 2, dtype=np.int64)
    stage = np.empty(depth + 2, dtype=np.int64)
    sums = np.empty(depth + 2)
    top, n_sums = 0, 0
    first[0], size[0], stage[0] = 0, n, 0
    while top >= 0:
        m = size[top]
        if m <= PAIRWISE_BLOCK:
            sums[n_sums] = pairwise_sum(a, first[top], m, False)
            n_sums += 1
            top -= 1
            continue
        half = m // 2
        half -= half % 8
        if stage[top] < 2:  # its first half, then its second, each a run of its own
            offset = half if stage[top] == 1 else 0
            stage[top] += 1
            first[top + 1], size[top + 1], stage[top + 1] = first[top] + offset, half if offset == 0 else m - half, 0
            top += 1
        else:  # both halves summed: their sum replaces them
            n_sums -= 1
            sums[n_sums - 1] = sums[n_sums - 1] + sums[n_sums]
            top -= 1
    return sums[0]


@numba.njit(parallel=True, **JIT)
def _tree_value_sums(X, left, right, feature, threshold, missing_left, is_cat, cat_left, max_depth, missing_bin,
                     values, out, n_chunks, per_pass):
    """``out`` (n, m) = the sum over the trees of each row's leaf values (``values`` (n_trees, n_nodes, m)),
    as ``numpy.sum`` over the trees' axis adds them: one tree after the other for m > 1, pairwise for m = 1
    (each row's values then collected over a pass and summed at its end).

    Blocks of :data:`ROWS_PER_BLOCK` rows, a thread's share in passes of ``per_pass`` blocks, each tree in
    turn walking every block of a pass, as ``_walk_trees``.
    """
    n = X.shape[0]
    n_trees = left.shape[0]
    m = values.shape[2]
    any_cat = cat_left.shape[2] > 0
    n_blocks = (n + ROWS_PER_BLOCK - 1) // ROWS_PER_BLOCK
    for c in prange(n_chunks):
        nd = np.empty(ROWS_PER_BLOCK, dtype=np.int64)
        active = np.empty(ROWS_PER_BLOCK, dtype=np.int64)
        row_values = np.empty((per_pass * ROWS_PER_BLOCK, n_trees if m == 1 else 0))
        end = (c + 1) * n_blocks // n_chunks
        for p0 in range(c * n_blocks // n_chunks, end, per_pass):
            p1 = min(end, p0 + per_pass)
            for t in range(n_trees):
                for blk in range(p0, p1):
                    i0 = blk * ROWS_PER_BLOCK
                    i1 = min(n, i0 + ROWS_PER_BLOCK)
                    _padded_walk_block(X, i0, i1, t, nd, active, left, right, feature, threshold, missing_left, is_cat,
                                       cat_left, any_cat, max_depth, missing_bin)
                    for j in range(i1 - i0):
                        if m == 1:
                            row_values[i0 + j - p0 * ROWS_PER_BLOCK, t] = values[t, nd[j], 0]
                        else:
                            for q in range(m):
                                out[i0 + j, q] += values[t, nd[j], q]
            if m == 1:
                for i in range(p0 * ROWS_PER_BLOCK, min(n, p1 * ROWS_PER_BLOCK)):
                    out[i, 0] = _numpy_sum(row_values[i - p0 * ROWS_PER_BLOCK], n_trees)
    return out


#: Most bytes a thread's pass keeps of its rows' leaf values (one value a tree, summed pairwise at the end).
PASS_VALUE_BYTES = 1 << 23


def tree_value_sums(xp, batch, values, X, missing_bin: int, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels.reference.tree_value_sums`, in one compiled pass: blocks of
    :data:`ROWS_PER_BLOCK` rows in parallel walk every tree in turn and add their leaves' values as NumPy's
    sum over the trees would (no (rows, trees) arrays of leaves and values), bit for bit."""
    values = np.asarray(values, dtype=np.float64)
    rest = values.shape[2:]
    n = int(X.shape[0])
    n_trees = int(batch.left.shape[0])
    flat = np.ascontiguousarray(values.reshape(n_trees, values.shape[1], -1))
    if is_csr(X):
        mode = PAIRWISE if flat.shape[2] == 1 else SUMS
        return csr_walk(batch, X, missing_bin, mode, flat, n_threads=n_threads).reshape((n,) + rest)
    work = n * n_trees * max(1, int(batch.max_depth))
    threads = threads_for(n_threads, work)
    per_pass = _blocks_per_pass(batch)
    if flat.shape[2] == 1:
        per_pass = max(1, min(per_pass, PASS_VALUE_BYTES // (8 * n_trees * ROWS_PER_BLOCK)))
    with Threads(threads):
        out = _tree_value_sums(float_rows(X), *tree_arrays(batch), int(missing_bin), read_only(flat),
                               np.zeros((n, flat.shape[2])), threads, per_pass)
    return out.reshape((n,) + rest)


# -- sparse rows ------------------------------------------------------------------
#: What :func:`_csr_walk` does with the leaf of a row in a tree: store it, add its value to the tree's output
#: column (boosting's raw predictions), add its values to every output (a forest's sums), or keep it for the
#: row's pairwise sum over the trees (one output: NumPy's sum).
LEAVES, RAW, SUMS, PAIRWISE = 0, 1, 2, 3
#: Widest CSR matrix walked as it is (its scratch row, 256 KB, stays in a core's L2 cache); a wider one is cut
#: to the columns the trees test first (the set's ``csr_columns``).
CSR_SCRATCH_COLUMNS = 1 << 15


@numba.njit(inline="always")
def _scatter_row(x, indptr, indices, data, i, clear):
    """Row ``i`` of a CSR matrix into the dense scratch row ``x[0]`` (its zeros kept), or its entries zeroed."""
    for k in range(indptr[i], indptr[i + 1]):
        x[0, indices[k]] = 0.0 if clear else data[k]


@numba.njit(parallel=True, **JIT)
def _csr_walk(indptr, indices, data, n_cols, left, right, feature, threshold, missing_left, is_cat, cat_left,
              max_depth, missing_bin, values, leaves, out, mode, n_chunks, per_pass, tree_major):
    """Every row of a CSR matrix through every tree, each row written into a dense scratch row that stays in
    the core's cache (a dense block of a wide matrix's rows would not), then walked node by node
    (:func:`goes_left`).

    ``mode``: :data:`LEAVES` into ``leaves`` (n, n_trees), else ``values`` (n_trees, n_nodes, m) added into
    ``out`` (n, k) in tree order (:data:`RAW`: tree ``t`` into column ``t % k``, m = 1; :data:`SUMS`: every
    column) or, :data:`PAIRWISE`, summed as ``numpy.sum`` over the trees. Threads take contiguous rows, in
    passes of ``per_pass`` rows; ``tree_major``: each tree walks the pass's rows in turn (its nodes stay hot;
    a row is written again for every tree), else each row walks every tree (written once).
    """
    n = indptr.shape[0] - 1
    n_trees = left.shape[0]
    k = out.shape[1]
    any_cat = cat_left.shape[2] > 0
    for c in prange(n_chunks):
        x = np.zeros((1, n_cols))
        row_values = np.empty((per_pass, n_trees if mode == PAIRWISE else 0))
        i0 = c * n // n_chunks
        i1 = (c + 1) * n // n_chunks
        for p0 in range(i0, i1, per_pass):
            p1 = min(i1, p0 + per_pass)
            n_outer = n_trees if tree_major else p1 - p0
            n_inner = p1 - p0 if tree_major else n_trees
            for a in range(n_outer):
                for b in range(n_inner):
                    t = a if tree_major else b
                    i = p0 + b if tree_major else p0 + a
                    if tree_major or b == 0:
                        _scatter_row(x, indptr, indices, data, i, False)
                    nd = 0
                    for _ in range(max_depth):
                        f = at(feature, t, nd)
                        if f < 0:
                            break
                        # a branch, not step's selects: a sparse row mostly takes its zeros' side, which the
                        # CPU predicts and runs ahead on, down the lopsided trees of sparse data
                        if goes_left(x, 0, t, nd, f, threshold, missing_left, is_cat, cat_left, any_cat,
                                     missing_bin):
                            nd = at(left, t, nd)
                        else:
                            nd = at(right, t, nd)
                    if mode == LEAVES:
                        leaves[i, t] = nd
                    elif mode == RAW:
                        out[i, t % k] += values[t, nd, 0]
                    elif mode == SUMS:
                        for q in range(k):
                            out[i, q] += values[t, nd, q]
                    else:
                        row_values[i - p0, t] = values[t, nd, 0]
                    if tree_major or b == n_inner - 1:
                        _scatter_row(x, indptr, indices, data, i, True)
            if mode == PAIRWISE:
                for i in range(p0, p1):
                    out[i, 0] = _numpy_sum(row_values[i - p0], n_trees)
    return leaves, out


def is_csr(X) -> bool:
    """Whether ``X`` is a scipy.sparse CSR matrix or array (walked by :func:`csr_walk`)."""
    return getattr(X, "format", None) == "csr" and hasattr(X, "indptr")


def csr_walk(batch, X, missing_bin: int, mode: int, values=None, base=None, *, n_threads: int = 1):
    """The walk of :func:`_csr_walk` over a CSR matrix ``X``: the leaves (n, n_trees) for :data:`LEAVES`, else
    the sums (n, k) (``base``'s copy plus the leaves' values for :data:`RAW`, zeros plus them otherwise).

    Each tree walks the rows in turn when the batch's nodes would not stay in cache while a row walks them all
    (:data:`TREES_IN_CACHE_BYTES`), in passes of :data:`ROWS_PER_TREE_PASS` rows (fewer where the pass keeps
    every row's leaf values, :data:`PASS_VALUE_BYTES`).
    """
    n = int(X.shape[0])
    n_trees = int(batch.left.shape[0])
    if mode == LEAVES:
        flat = np.zeros((0, 0, 0))
        leaves, out = np.empty((n, n_trees), dtype=np.int64), np.zeros((0, 0))
    else:
        flat = np.asarray(values, dtype=np.float64)
        flat = np.ascontiguousarray(flat.reshape(n_trees, flat.shape[1], -1))
        leaves = np.empty((0, 0), dtype=np.int64)
        out = np.array(base, dtype=np.float64, order="C") if mode == RAW else np.zeros((n, flat.shape[2]))
    per_pass = ROWS_PER_TREE_PASS
    if mode == PAIRWISE:
        per_pass = max(1, min(per_pass, PASS_VALUE_BYTES // (8 * n_trees)))
    tree_major = _blocks_per_pass(batch) > 1
    depth = int(batch.max_depth)
    threads = threads_for(n_threads, n * n_trees * max(1, depth))
    indptr = read_only(np.ascontiguousarray(X.indptr, dtype=np.int64))
    indices = read_only(np.ascontiguousarray(X.indices, dtype=np.int64))
    data = read_only(np.ascontiguousarray(X.data, dtype=np.float64))
    left, right, feature, threshold, missing_left, is_cat, cat_left, _ = tree_arrays(batch)
    with Threads(threads):
        leaves, out = _csr_walk(indptr, indices, data, int(X.shape[1]), left, right, feature, threshold,
                                missing_left, is_cat, cat_left, depth + 1, int(missing_bin), read_only(flat), leaves,
                                out, mode, threads, per_pass, tree_major)
    return leaves if mode == LEAVES else out


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


@numba.njit(parallel=True, **JIT)
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
    Xc = float_rows(X)
    threshold = layout.threshold32 if Xc.dtype == np.float32 else layout.threshold
    # NaN blocks: the +inf copy of the row for nodes sending missing values right
    feature_nan = layout.feature + np.where(layout.missing_left, 0, Xc.shape[1]).astype(np.uint32)
    work = int(X.shape[0]) * int(layout.feature.shape[0]) * max(1, layout.depth)
    return layout, Xc, (layout.feature, feature_nan, threshold), threads_for(n_threads, work)


def apply_trees(xp, batch, X, missing_bin: int, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels.reference.apply_trees` (the padded walk where the layout does not apply;
    a CSR matrix's rows by :func:`csr_walk`)."""
    if is_csr(X):
        return csr_walk(batch, X, missing_bin, LEAVES, n_threads=n_threads)
    prep = _prepared(batch, X, n_threads)
    if prep is None:
        return padded_apply_trees(xp, batch, X, missing_bin, n_threads=n_threads)
    layout, Xc, trees, threads = prep
    out = np.empty((int(Xc.shape[0]), int(layout.feature.shape[0])), dtype=np.int64)
    with Threads(threads):
        return _complete_walk(Xc, *trees, layout.leaf, layout.depth, out, False, threads)


def predict_raw(xp, batch, values, X, missing_bin: int, base, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels.reference.predict_raw` (the padded walk where the layout does not apply;
    a CSR matrix's rows by :func:`csr_walk`)."""
    if is_csr(X):
        return csr_walk(batch, X, missing_bin, RAW, values, base, n_threads=n_threads)
    prep = _prepared(batch, X, n_threads)
    if prep is None:
        return padded_predict_raw(xp, batch, values, X, missing_bin, base, n_threads=n_threads)
    layout, Xc, trees, threads = prep
    bottom = np.take_along_axis(np.asarray(values, dtype=np.float64), layout.leaf, axis=1)
    out = np.array(base, dtype=np.float64, order="C")  # a copy: the sums start from the base
    with Threads(threads):
        return _complete_walk(Xc, *trees, bottom, layout.depth, out, True, threads)
