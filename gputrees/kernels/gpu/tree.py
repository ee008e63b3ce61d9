"""A batch of trees grown on the GPU, a fixed number of launches a level, no host read inside a tree (deep
trees: one a level).

The trees of a batch (the K trees of a boosting round, or a forest's batch)
grow depth-wise to ``max_depth`` in a perfect-tree layout: node ``i``'s
children are ``2 i + 1`` and ``2 i + 2``, level ``d`` holds nodes ``2^d - 1
.. 2^(d+1) - 2`` whether they exist or not, so every array's shape is known
before the tree starts. Each row keeps its node id (``node``, one per tree
and row); each node its statistics as int64 fixed-point sums of the
quantised channels (:mod:`gputrees.kernels._quantise`: exact, so in any
order the same numbers as the CPU's float64 sums), a row's channels times
its multiplicities (a forest's bootstrap counts) rounded as the level-wise
cuda histograms round them. A level is two launches on the device
(numba-cuda's launches cost far more host time than the kernels take at a
million rows, so a level fuses its steps into two kernels):

1. ``_build_shared`` (or ``_build``), one thread per (tree, row): the row
   moved to its child where its node split at the level above, then the
   histograms of each split node's smaller child (of the root at level
   0), int64 atomics, into that child's own slot of the level's
   histograms: into a block's shared memory where the level's
   histograms of a few features fit there, then added to the global ones
   once a block (the upper levels, whose rows all add to few addresses);
   else straight into global memory. The same launch zeroes the next
   level's histograms: the levels' histograms rotate through three
   buffers (level ``d``'s in buffer ``d % 3``: this level's, its
   parent's, and the next one's, which no launch of this level reads);
2. ``_split``, one block per (tree, node of the level): the node's
   histograms (the built child's, or for the larger child its parent's
   minus its sibling's, written beside it), its
   features drawn from its key where ``max_features`` draws some
   (:func:`gputrees.kernels.rules.draw_features`; the keys of
   :mod:`gputrees.kernels.node_draws`, each child's made from its parent's here),
   one thread a feature for the running sums over the value bins, both
   sides for missing values, every candidate's proxy
   (:func:`gputrees.kernels.rules.candidate_score`, the CPU kernels'
   rule) and the feature's best; then the tie rule (the first feature
   whose best is near the best, its first near-best candidate), the
   split's acceptance (the criterion's improvement), the threshold, the
   children's statistics and keys and whether they may split, and which
   child of the pair is the smaller.

After the last level ``_route`` moves the rows to their leaves. With per-node
feature draws of at most half the features (random forests' ``sqrt``), every
node's histograms are its ``k`` drawn features' (:func:`histogram_features`,
as the level-wise grower builds them): the parent's block draws its
children's features, the build adds each row to its own node's histograms
over them (both children, no subtraction, one level's buffer, zeroed before
the level's build: one more operation a level, :data:`EVERY_OPERATIONS_PER_LEVEL`),
and the scan reads them. A batch whose deepest level's histograms do not fit
``memory_limit`` at once is grown :func:`trees_per_pass` trees at a time,
two launches a level a pass (``_route`` zeroes level 0's histograms for
the next pass). After the last pass ``_finish`` writes the batch's arrays
from the node table and resets the table: inside a fit's workspace
(:mod:`.workspace`, a boosting fit's rounds) the next round's batch reuses
the node table, the rows' positions, the level buffers and the bin
mapper's device tables, and allocates only its own four output arrays.

Each split node's block writes its left child's id (``child``; the right
child is the next node) and its children's depth, and the rows follow
``child``: the layout is the host's choice of where a level's children go.
Trees deeper than :data:`MAX_DEPTH` (``max_depth`` None, the forests'
default, or above it; :func:`is_deep`) keep the perfect-tree layout for
their first :data:`DEEP_PERFECT_LEVELS` levels, then compact each level: a
running count over the level's nodes that may split ranks them on the
device (``xp.cumulative_sum``), and the most of any tree of the pass is the
one host read of the level (in :func:`_grow_pass`, marked there): it sizes
the level's histograms (a slot, and a ``_split`` block, a node that may
split: the block finds its node by a binary search of the running count)
and the next level's slots (a node of rank ``j``'s children are slots
``2 j`` and ``2 j + 1``), and 0 ends the trees; two more operations a level
(:data:`DEEP_OPERATIONS_PER_LEVEL`). A compact level builds every node that
may split from its rows (no subtraction, so no level's histograms are kept
for the next), a group of :func:`group_slots` nodes a tree at a time (what
``memory_limit`` holds; three launches a group, one group on small data),
so the passes are sized by the perfect levels (:func:`widest_level`) alone.
The node table grows with the levels (doubled when the next level does not
fit). The trees are laid out by
:func:`gputrees.kernels.reference.compact_batch` from the nodes that exist
(their depth written) before they are returned: one more read.

Up to :data:`MAX_DEPTH` the host loops over the levels (their count is
``max_depth``) and reads nothing: the trees come back in their perfect-tree
layout (a
:class:`~gputrees._records.TreeBatch` whose ``node_count`` is None), which
predicts as it is, and which the fit lays out in the level-wise grower's
numbering once it is done (:func:`gputrees.kernels.reference.compact_batch`,
one host read for all of a booster's rounds, or for a forest's batch). The
same candidates, proxies, tie rule, thresholds and acceptance as the
level-wise grower with the cuda set's quantised kernels: the same trees,
statistics equal in fixed point (tested in numba-cuda's simulator against
the CPU).

``GPUTREES_DEVICE_STEP=0`` turns the step off on a GPU (every batch level by
level, to compare the two); the simulator always takes it.

Covered (:func:`covered`; else the grower grows the batch level by level):
channels quantised with ``scale``; the Newton criterion over ``[count, G,
H]`` (boosting's batches of one or K trees, every row once) depth-wise to a
``max_depth`` within :data:`MAX_DEPTH`, or Gini, entropy and squared error
over up to :data:`MAX_CHANNELS` channels (trees of a forest's batch with
bootstrap multiplicities) depth-wise to any ``max_depth`` or none (deep
trees: one host read a level), one tree's widest perfect level
(:func:`widest_level`) within the memory bound; numerical features with
missing values,
``min_samples_leaf``, ``min_weight_leaf`` / ``min_child_weight``,
``min_samples_split``, ``min_impurity_decrease`` / ``min_split_gain``,
per-tree feature subsets, per-node feature draws (``max_features``),
thresholds at the next value bin of the feature or of the node
(``local_thresholds``; the level-wise grower's sort-based search of small
nodes finds the same splits there). Not covered: categorical features,
monotonic constraints, boosting's trees deeper than :data:`MAX_DEPTH`
(their rounds read nothing to the host), best-first growth
(``max_leaf_nodes``), extremely randomised splits (extra trees), the
misclassification, Friedman and Poisson criteria.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numba
import numpy as np
from numba import cuda

from .. import node_draws, reference
from ..._records import DRAWN_BUILD_SHARE, ENTROPY, GINI, NEWTON, SQUARED_ERROR, TreeBatch, criterion_code
from .. import rules
from .._cuda import fixed_point, grid_blocks, launch, launch_config, pair_weight
from .rules import compile_rules
from .workspace import kept

__all__ = [
    "grow_tree", "covered", "is_deep", "widest_level", "group_slots", "shared_group_width", "trees_per_pass",
    "histogram_features", "MAX_DEPTH", "DEEP_PERFECT_LEVELS", "DEEP_OPERATIONS_PER_LEVEL", "MAX_CHANNELS",
    "EVERY_OPERATIONS_PER_LEVEL",
    "CRITERIA", "LAUNCHES_PER_LEVEL", "SHARED_BLOCK_BYTES", "SHARED_HISTOGRAM_BYTES", "SHARED_BUILD_BLOCKS",
]

#: Deepest trees grown in the perfect-tree layout (no host read): a level's histograms hold 2^(depth - 1) nodes.
MAX_DEPTH = 12
#: Deeper trees' levels kept in the perfect-tree layout (2^d slots, no host read) before they compact.
DEEP_PERFECT_LEVELS = 6
#: Most channels a node's statistics have here (the kernels' per-thread arrays are this long): 15 classes,
#: 7 regression outputs.
MAX_CHANNELS = 16
#: Most threads a block of ``_split`` may have (its shared scan sums are sized for them).
SPLIT_THREADS = 256
#: The criteria grown here (their codes): Newton (boosting), Gini, entropy and squared error (trees, forests).
CRITERIA = (NEWTON, GINI, ENTROPY, SQUARED_ERROR)
#: Device operations a level takes (routing and build, split) for the trees of one pass: the histograms
#: that start from zero are cleared by the level above's build (a perfect level built by subtraction).
LAUNCHES_PER_LEVEL = 2
#: More a level takes where every node is built (over its drawn features, or a deep tree's compact level):
#: its histograms zeroed first (the level reads them while the next level's would be cleared).
EVERY_OPERATIONS_PER_LEVEL = 1
#: More a compact level of deep trees takes: the running count of its nodes that may split, and its maximum
#: (read to the host).
DEEP_OPERATIONS_PER_LEVEL = 2
#: Dynamic shared memory a block may use without opting in to more.
SHARED_BLOCK_BYTES = 48 * 1024
#: Shared memory a block of ``_build_shared`` may use; 0: every level's histograms built with global atomics
#: (``_build``), which ``bench/gpu_profile.py`` measured faster on an H200 (at 1M and 10M rows, in two runs).
SHARED_HISTOGRAM_BYTES = 0
#: Most blocks of a ``_build_shared`` launch: each adds its shared histograms to the global ones once.
SHARED_BUILD_BLOCKS = 1024
_NEG_INF = -math.inf
#: The names of the arrays of the trees of a pass that every level's launches take (their views made once a
#: pass).
_TREE_ARRAYS = ("codes", "chan", "mult", "wmult", "scale", "node", "split", "feature", "bin", "missing_left",
                "threshold", "stats", "can", "key", "allowed", "tw", "n_value_bins", "thresholds", "bin_values",
                "is_exact", "inv", "proxies", "fbest", "drawn", "u", "fids", "child", "depth")


# -- device functions ---------------------------------------------------------------
@cuda.jit(device=True)
def _scan_part(part, per, nb):
    """Value bins ``lo .. hi - 1``: part ``part`` of the ``per`` parts that scan a feature's ``nb - 1``."""
    size = (nb - 1 + per - 1) // per
    lo = min(part * size, nb - 1)
    return lo, min(lo + size, nb - 1)


@cuda.jit(device=True)
def _part_sums(hist, base, lo, hi, C, sums, row):
    """``sums[row, :C]``: the int64 channel sums of bins ``lo .. hi - 1`` of the histogram at ``base``
    (bin-major, C channels)."""
    for c in range(C):
        sums[row, c] = 0
    for b in range(lo, hi):
        for c in range(C):
            sums[row, c] += hist[base + b * C + c]


@cuda.jit(device=True)
def _part_scan(hist, base, nb, lo, hi, n_scan, cum, P, inv, kind, n_out, l2, msl, mwl, proxies, out):
    """Every candidate of value bins ``lo .. hi - 1`` (of the first ``n_scan``) of one (node, feature): its
    proxy written to ``proxies[out + variant * (nb - 1) + bin]`` (-inf where there is no candidate; variant 1:
    the missing values go left), and the best of them returned. ``cum``: the int64 channel sums of the bins
    below ``lo`` (exact, so that the parts of a feature find the sums one thread would); ``P``: the node's
    statistics (float64, C).
    """
    C = P.shape[0]
    left = cuda.local.array(MAX_CHANNELS, numba.float64)
    right = cuda.local.array(MAX_CHANNELS, numba.float64)
    tmp = cuda.local.array(MAX_CHANNELS, numba.float64)
    L = left[:C]
    R = right[:C]
    n = min(nb - 1, n_scan)
    m = base + (nb - 1) * C
    both = hist[m] > 0  # the missing bin holds rows: both sides tried
    best = _NEG_INF
    for b in range(lo, hi):
        p0 = _NEG_INF
        p1 = _NEG_INF
        if b < n:
            j = base + b * C
            filled = False
            for c in range(C):
                h = hist[j + c]
                cum[c] += h
                filled = filled or h != 0
            # an empty bin after the first: the same candidate as the bin before, which comes first
            if b == 0 or filled:
                for c in range(C):
                    L[c] = cum[c] * inv[c]
                p0 = rules.candidate_score(kind, L, R, P, n_out, l2, msl, mwl, False, 0.0, 0.0, 0, tmp)
                if both:
                    for c in range(C):
                        L[c] = (cum[c] + hist[m + c]) * inv[c]
                    p1 = rules.candidate_score(kind, L, R, P, n_out, l2, msl, mwl, False, 0.0, 0.0, 0, tmp)
        proxies[out + b] = p0
        proxies[out + nb - 1 + b] = p1
        if p0 > best:
            best = p0
        if p1 > best:
            best = p1
    return best


@cuda.jit(device=True)
def _level_node(codes, node, k, r, split, feature, bin_, missing_left, child, level_first, missing_bin):
    """Row ``r``'s node in tree ``k`` at the level starting at ``level_first``: moved to its child (``child``:
    each split node's left child, the right one next to it) where its node (of the level above) split, else
    where it is (a leaf of an earlier level: below ``level_first``). Level 0: the root, whatever ``node`` holds
    (a fit's workspace keeps it from its last tree)."""
    if level_first == 0:
        return 0
    nd = node[k, r]
    if nd < level_first and split[k, nd]:
        code = numba.int64(codes[r, feature[k, nd]])
        left = missing_left[k, nd] if code == missing_bin else code <= bin_[k, nd]
        nd = child[k, nd] + (0 if left else 1)
    return nd


@cuda.jit(device=True)
def _build_pair(codes, node, k, r, split, feature, bin_, missing_left, child, level_first, missing_bin, small_right,
                every, can, live, slot0, n_pairs, write):
    """Row ``r``'s node of this level (written back to ``node`` where ``write``), and the histogram slot of
    that level that takes the row: -1 where none does (a leaf of an earlier level, or the larger child of its
    pair, which comes by subtraction); where every node that may split is built (``every``: over its drawn
    features, or a deep tree's compact level, whose slots ``slot0 ..`` of ``n_pairs`` are built at a time) the
    node's slot among those (-1 for a node that may not split, or out of the group), and at level 0 (the root).
    Returns (slot, node)."""
    nd = _level_node(codes, node, k, r, split, feature, bin_, missing_left, child, level_first, missing_bin)
    if write:
        node[k, r] = nd
    s = nd - level_first
    if s < 0:
        return -1, nd
    if level_first == 0:
        return s, nd
    if every:
        q = _hist_slot(live, k, s) - slot0
        return (q if can[k, nd] and 0 <= q < n_pairs else -1), nd
    q = s // 2
    return (q if s - 2 * q == small_right[k, q] else -1), nd


@cuda.jit(device=True)
def _hist_slot(live, k, s):
    """The histogram slot of tree ``k``'s node ``s`` of the level (one that may split): ``s`` in the
    perfect-tree layout (``live`` of one column), its rank among the level's nodes that may split in the
    compact one (``live``: their running count over the level's nodes; a level of one node: the same slot)."""
    return s if live.shape[1] == 1 else live[k, s] - 1


@cuda.jit(device=True)
def _out_slot(k, q, n_pairs, every, level_first, small_right):
    """Where the histograms of tree ``k``'s built slot ``q`` go: slot ``q`` of ``n_pairs`` where every node is
    built (and at level 0); else the smaller child's own slot among the level's ``2 n_pairs`` nodes (``_split``
    makes its sibling's beside it, so that no other buffer holds the built children)."""
    if every or level_first == 0:
        return k * n_pairs + q
    return k * 2 * n_pairs + 2 * q + small_right[k, q]


@cuda.jit(device=True)
def _clear(buf, n_clear):
    """``buf[:n_clear]`` zeroed by the launch's threads (grid stride): the next level's histograms, whose
    atomics start from zero, cleared by a launch of this level that does not read them."""
    for j in range(cuda.grid(1), n_clear, cuda.gridsize(1)):
        buf[j] = 0


@cuda.jit(device=True)
def _row_weights(chan, chan_trees, n, k, r, mult, wmult, mode, scale, w):
    """Tree ``k``'s row ``r``'s channels, multiplicities applied (:func:`pair_weight`), as int64 multiples of
    ``1 / scale`` into ``w``; whether any is non-zero (a row out of the tree's sample adds nothing)."""
    ci = (k if chan_trees > 1 else 0) * n + r
    filled = False
    for c in range(scale.shape[0]):
        v = fixed_point(pair_weight(chan, ci, c, k * n + r, mult, wmult, mode), scale[c])
        w[c] = v
        filled = filled or v != 0
    return filled


@cuda.jit(device=True)
def _slot_node(live, k, j, width):
    """The level's node (its position ``s``) of tree ``k``'s histogram slot ``j``: ``j`` in the perfect-tree
    layout; in the compact one the node whose rank among those that may split is ``j`` (the first whose running
    count ``live[k, s]`` passes ``j``: a binary search), -1 where the tree has no such node."""
    if live.shape[1] == 1:
        return j
    if j >= live[k, width - 1]:
        return -1
    lo, hi = 0, width - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if live[k, mid] > j:
            hi = mid
        else:
            lo = mid + 1
    return lo


# -- kernels (compiled at first launch) -----------------------------------------------
@cuda.jit
def _build(codes, chan, chan_trees, mult, wmult, mode, scale, node, split, feature, bin_, missing_left, child,
           missing_bin, small_right, by_drawn, fids, can, live, level_first, n_pairs, nb, every, slot0, clear,
           n_clear, out):
    """Each row routed to its node of this level (the splits of the level above), then the histograms
    (K, n_pairs, F, nb, C) of each pair's smaller child (level 0: of the roots), int64 atomics; ``by_drawn``:
    of every node that may split (K, n_pairs slots: :func:`_hist_slot`, k, nb, C) over its ``k`` drawn
    features (``fids`` (K, nodes, k)); ``every``: of every node that may split, those of slots ``slot0 ..``.
    Each built slot's histograms go where :func:`_out_slot` says; ``clear[:n_clear]`` is zeroed (the next
    level's)."""
    _clear(clear, n_clear)
    n_trees, n = node.shape
    n_features = fids.shape[2] if by_drawn else codes.shape[1]
    C = scale.shape[0]
    w = cuda.local.array(MAX_CHANNELS, numba.int64)
    start = cuda.grid(1)
    step = cuda.gridsize(1)
    for idx in range(start, n_trees * n, step):
        k = idx // n
        r = idx - k * n
        q, nd = _build_pair(codes, node, k, r, split, feature, bin_, missing_left, child, level_first, missing_bin,
                            small_right, every, can, live, slot0, n_pairs, True)
        if q < 0 or not _row_weights(chan, chan_trees, n, k, r, mult, wmult, mode, scale, w):
            continue
        base = _out_slot(k, q, n_pairs, every, level_first, small_right) * n_features
        for f in range(n_features):
            col = fids[k, nd, f] if by_drawn else f
            j = ((base + f) * nb + numba.int64(codes[r, col])) * C
            for c in range(C):
                cuda.atomic.add(out, j + c, w[c])


@cuda.jit
def _build_shared(codes, chan, chan_trees, mult, wmult, mode, scale, node, split, feature, bin_, missing_left, child,
                  missing_bin, small_right, by_drawn, fids, can, live, level_first, n_pairs, nb, every, slot0,
                  clear, n_clear, group_width, out):
    """``_build``, a block's rows summed in shared memory first (int64 atomics there), then added to ``out``
    once a block: at the upper levels every row of a launch would otherwise add to the same few global
    addresses, and the atomics queue on them.

    Block ``b`` sums features ``g * group_width ..`` (``g = b % n_groups``) over the rows
    ``chunk, chunk + n_chunks, ..`` (blocks of threads); its dynamic shared memory holds the histograms of
    every (tree, pair) slot for those features: ``n_trees * n_pairs * group_width * nb * C`` int64. Every
    group's block finds a row's node (the same child whether it reads the node before or after the first
    group's block writes it: a routed node is at this level, not above it); the first group's writes it.
    """
    _clear(clear, n_clear)
    hist = cuda.shared.array(0, dtype=numba.int64)
    n_trees, n = node.shape
    n_features = fids.shape[2] if by_drawn else codes.shape[1]
    C = scale.shape[0]
    w = cuda.local.array(MAX_CHANNELS, numba.int64)
    n_groups = (n_features + group_width - 1) // group_width
    g = cuda.blockIdx.x % n_groups
    chunk = cuda.blockIdx.x // n_groups
    n_chunks = cuda.gridDim.x // n_groups
    f0 = g * group_width
    fw = min(group_width, n_features - f0)
    size = n_trees * n_pairs * fw * nb * C
    tid = cuda.threadIdx.x
    threads = cuda.blockDim.x
    for j in range(tid, size, threads):
        hist[j] = 0
    cuda.syncthreads()
    for idx in range(chunk * threads + tid, n_trees * n, n_chunks * threads):
        k = idx // n
        r = idx - k * n
        q, nd = _build_pair(codes, node, k, r, split, feature, bin_, missing_left, child, level_first, missing_bin,
                            small_right, every, can, live, slot0, n_pairs, g == 0)
        if q < 0 or not _row_weights(chan, chan_trees, n, k, r, mult, wmult, mode, scale, w):
            continue
        base = (k * n_pairs + q) * fw
        for f in range(fw):
            col = fids[k, nd, f0 + f] if by_drawn else f0 + f
            j = ((base + f) * nb + numba.int64(codes[r, col])) * C
            for c in range(C):
                cuda.atomic.add(hist, j + c, w[c])
    cuda.syncthreads()
    cell = fw * nb * C
    for j in range(tid, size, threads):
        v = hist[j]
        if v != 0:
            slot = j // cell
            x = j - slot * cell  # (feature of the group, bin, channel) within the slot
            k = slot // n_pairs
            slot = _out_slot(k, slot - k * n_pairs, n_pairs, every, level_first, small_right)
            cuda.atomic.add(out, (slot * n_features + f0) * nb * C + x, v)


@cuda.jit
def _split(prev, built, hist, proxies, fbest, drawn, u, stats, can, key, allowed, n_value_bins, thresholds,
           bin_values, is_exact, inv, tw, kind, n_out, level, level_first, width, nb, l2, msl, mwl, min_split,
           max_depth, min_decrease, tie_rtol, k_draw, has_allowed, by_drawn, fids, local_thr, split, feature, bin_,
           missing_left, threshold, small_right, small_next, live, n_slots, next_first, child, depth, every, slot0):
    """One block a (tree, node of the level): the node's histograms, its split and its children.

    0. Level 0: the root's statistics (its histogram of feature 0 summed over the bins: every row is in one),
       its tree's total weight (``tw``) and whether it may split.
    1. The node's histograms in ``hist`` (K, width, F, nb, C): the smaller child of its pair built there
       (``built`` is ``hist``), the larger one its parent's (``prev``) minus that (level 0: built in place).
    2. With per-node feature draws (``k_draw`` >= 0, ``max_features``): the first thread draws the node's
       features from its key (:func:`gputrees.kernels.rules.draw_features`, into ``drawn``; ``u``: its work
       space), as the level-wise grower and the CPU's subtree kernel draw them. ``by_drawn``: the node's
       histograms are its drawn features' (``fids``, drawn by its parent's block, or the host for a root),
       built for every node (no subtraction), as the level-wise grower builds them for ``k`` of at most half
       the features.
    3. Every candidate's proxy (:func:`_part_scan`, kept in ``proxies``: recomputing them could round
       differently, the GPU compiler contracting multiply-adds kernel by kernel) and each feature's best
       (``fbest``): a feature's bins split into parts, a thread a part, each part's scan starting from the
       exact int64 sums of the parts before it (not one thread walking a feature's 255 bins alone).
    4. The tie rule over them: the first feature whose best is near the best, its first near-best candidate
       (the block's threads search the candidates, a shared minimum), the left child's sums over the bins
       up to it (shared int64 sums: exact), then the first thread's acceptance (the criterion's
       improvement), the split, its threshold (at the next value bin of the node, ``local_thr``, or of the
       feature), the children's statistics and keys, whether they may split, and which child of the pair
       is the smaller.

    ``small_right`` (K, pairs): which child of each pair of this level was built; ``small_next``: the
    same of the next level's pairs, written here (another array: the blocks of other nodes still read
    theirs).

    The level's nodes are ``level_first + s`` (``s < width``); a block a histogram slot (``n_slots`` a tree
    from ``slot0``: every node's in the perfect-tree layout, one a node that may split in the compact one,
    :func:`_slot_node`), and the node's children, whose ``child`` (the left one's id) and ``depth`` it writes,
    are ``next_first + 2 slot`` and the next: ``2 nd + 1`` in the perfect-tree layout. ``every``: every node's
    histograms built (no subtraction: ``by_drawn``, and deep trees' compact levels, a group of slots at a time).
    """
    chosen = cuda.shared.array(1, dtype=numba.int64)  # the first near-best candidate
    part_sums = cuda.shared.array((SPLIT_THREADS, MAX_CHANNELS), dtype=numba.int64)  # a scan part's bins' sums
    part_best = cuda.shared.array(SPLIT_THREADS, dtype=numba.float64)  # a scan part's best candidate
    sums = cuda.shared.array(MAX_CHANNELS, dtype=numba.int64)
    node_stats = cuda.local.array(MAX_CHANNELS, numba.float64)
    left = cuda.local.array(MAX_CHANNELS, numba.float64)
    right = cuda.local.array(MAX_CHANNELS, numba.float64)
    tmp = cuda.local.array(MAX_CHANNELS, numba.float64)
    ks = cuda.blockIdx.x  # the node's histograms and work space
    k = ks // n_slots
    s = _slot_node(live, k, slot0 + ks - k * n_slots, width)
    if s < 0:
        return  # the whole block: a tree with fewer nodes that may split than the level's slots
    nd = level_first + s
    tid = cuda.threadIdx.x
    threads = cuda.blockDim.x
    n_features = fids.shape[2] if by_drawn else n_value_bins.shape[0]  # the histograms' features
    C = inv.shape[0]
    P = node_stats[:C]
    L = left[:C]
    R = right[:C]
    cell = n_features * nb * C
    if level == 0:
        for c in range(tid, C, threads):
            acc = numba.int64(0)
            for b in range(nb):
                acc += built[k * cell + b * C + c]
            stats[k, 0, c] = acc
        cuda.syncthreads()
        if tid == 0:
            for c in range(C):
                P[c] = stats[k, 0, c] * inv[c]
            tw[k] = rules.criterion_weight(kind, P)
            can[k, 0] = rules.can_split(kind, P, 0, n_out, msl, mwl, min_split, max_depth, tmp)
    cuda.syncthreads()
    if not can[k, nd]:
        return  # the whole block: no barrier below is left waiting
    slot = slot0 + ks - k * n_slots
    hs = ks
    if level > 0 and not every:
        q = s // 2
        if s - 2 * q != small_right[k, q]:  # the larger child: its parent's minus its sibling's, built in place
            src = (k * (width // 2) + q) * cell
            sib = (hs - s + (s ^ 1)) * cell
            for x in range(tid, cell, threads):
                hist[hs * cell + x] = prev[src + x] - built[sib + x]
    if k_draw >= 0 and not by_drawn and tid == 0:
        rules.draw_features(key[k, nd], k_draw, allowed[k], has_allowed, u[hs], drawn[hs])
    cuda.syncthreads()
    for c in range(C):
        P[c] = stats[k, nd, c] * inv[c]
    # each feature's bins scanned by ``per`` threads, each a part of them: the sums of the parts first, then
    # each part's candidates from the sums of the parts before it
    cum = cuda.local.array(MAX_CHANNELS, numba.int64)
    per = max(1, min(nb - 1, threads // n_features))
    group = threads // per  # features a round
    part = tid % per
    lo, hi = _scan_part(part, per, nb)
    for f0 in range(0, n_features, group):
        f = f0 + tid // per
        active = tid < group * per and f < n_features
        col = 0
        if active:
            col = fids[k, nd, f] if by_drawn else f
            active = by_drawn or (drawn[hs, f] if k_draw >= 0 else allowed[k, f])
        idx = hs * n_features + f
        n_scan = n_value_bins[col]
        if active:
            _part_sums(hist, idx * nb * C, lo, min(hi, n_scan), C, part_sums, tid)
        cuda.syncthreads()
        p = _NEG_INF
        if active:
            for c in range(C):
                cum[c] = 0
                for q in range(tid - part, tid):
                    cum[c] += part_sums[q, c]
            p = _part_scan(hist, idx * nb * C, nb, lo, hi, n_scan, cum, P, inv, kind, n_out, l2, msl, mwl, proxies,
                           idx * 2 * (nb - 1))
        part_best[tid] = p
        cuda.syncthreads()
        if part == 0 and tid < group * per and f < n_features:
            for q in range(tid + 1, tid + per):
                if part_best[q] > p:
                    p = part_best[q]
            fbest[idx] = p
        cuda.syncthreads()  # the next round's parts reuse the shared sums
    if tid == 0:
        chosen[0] = 2 * (nb - 1)
        for c in range(C):
            sums[c] = 0
    cuda.syncthreads()
    best = _NEG_INF
    for f in range(n_features):
        best = max(best, fbest[hs * n_features + f])
    if not best > _NEG_INF:
        return  # every thread read the same features' bests: the whole block
    target = rules.tie_target(best, tie_rtol)
    j_col = -1
    for f in range(n_features):
        fb = fbest[hs * n_features + f]
        if fb > _NEG_INF and fb >= target:
            j_col = f  # the first feature whose best is near the best (drawn ones ascending): one of its candidates
            break
    col = fids[k, nd, j_col] if by_drawn else j_col
    out = (hs * n_features + j_col) * 2 * (nb - 1)
    for j in range(tid, 2 * (nb - 1), threads):
        p = proxies[out + j]
        if p > _NEG_INF and p >= target:
            cuda.atomic.min(chosen, 0, j)
    cuda.syncthreads()
    first = chosen[0]
    variant = first // (nb - 1)
    pos = first - variant * (nb - 1)
    base = (hs * n_features + j_col) * nb * C
    for b in range(tid, pos + 1 + variant, threads):
        j = base + (b if b <= pos else nb - 1) * C  # the bins up to the candidate, and the missing bin
        for c in range(C):
            cuda.atomic.add(sums, c, hist[j + c])
    cuda.syncthreads()
    if tid != 0:
        return
    proxy = proxies[out + first]
    for c in range(C):
        L[c] = sums[c] * inv[c]
        R[c] = P[c] - L[c]
    if kind == NEWTON:
        imp = rules.newton_improvement(P[1], P[2], L[1], L[2], R[1], R[2], l2)
        if not rules.newton_accept(imp, proxy, min_decrease):
            return
    else:
        imp = rules.impurity_improvement(kind, P, L, R, n_out, tw[k], tmp)
        if not rules.impurity_accept(imp, min_decrease):
            return
    split[k, nd] = True
    feature[k, nd] = col
    bin_[k, nd] = pos
    if hist[base + (nb - 1) * C] > 0:  # the node has missing values: the side the scan chose
        missing_left[k, nd] = variant == 1
    else:  # none: NaN goes to the child with more rows
        missing_left[k, nd] = L[0] > R[0]
    if local_thr:  # the next value bin holding rows of the node
        nxt = pos + 1
        while nxt < nb - 1 and not hist[base + nxt * C] > 0:
            nxt += 1
        has_next = nxt < nb - 1
    else:  # the feature's next value bin
        has_next = pos + 1 < n_value_bins[col]
        nxt = pos + 1
    threshold[k, nd] = rules.split_threshold(col, pos, nxt if has_next else pos, has_next, thresholds, bin_values,
                                             is_exact)
    lc = next_first + 2 * slot
    child[k, nd] = lc
    depth[k, lc] = depth[k, lc + 1] = level + 1
    for c in range(C):
        stats[k, lc, c] = sums[c]
        stats[k, lc + 1, c] = stats[k, nd, c] - sums[c]
    can[k, lc] = rules.can_split(kind, L, level + 1, n_out, msl, mwl, min_split, max_depth, tmp)
    can[k, lc + 1] = rules.can_split(kind, R, level + 1, n_out, msl, mwl, min_split, max_depth, tmp)
    if k_draw >= 0:
        for side in range(2):
            key[k, lc + side] = rules.child_key(key[k, nd], side)
            if by_drawn and can[k, lc + side]:  # the child's features, which its histograms are built over
                mask = drawn[hs]
                rules.draw_features(key[k, lc + side], k_draw, allowed[k], has_allowed, u[hs], mask)
                j = 0
                for f in range(mask.shape[0]):
                    if mask[f]:
                        fids[k, lc + side, j] = f
                        j += 1
    if not every:  # the smaller child of the pair is built at the next level (the left on a tie)
        small_next[k, slot] = 1 if stats[k, lc + 1, 0] < stats[k, lc, 0] else 0


@cuda.jit
def _route(codes, node, split, feature, bin_, missing_left, child, level_first, missing_bin, clear, n_clear):
    """Each (tree, row) moved to its child where its node (above ``level_first``) split: the last level's rows
    to their leaves, ``level_first`` the first node below the last level; ``clear[:n_clear]`` zeroed (the
    next pass's level 0 histograms)."""
    _clear(clear, n_clear)
    n_trees, n = node.shape
    start = cuda.grid(1)
    step = cuda.gridsize(1)
    for idx in range(start, n_trees * n, step):
        k = idx // n
        r = idx - k * n
        node[k, r] = _level_node(codes, node, k, r, split, feature, bin_, missing_left, child, level_first,
                                 missing_bin)


@cuda.jit
def _finish(split, child, feature, bin_, missing_left, threshold, stats, can, key, depth, inv, ints, flags,
            out_threshold, out_stats):
    """The perfect-tree node table (K, cap) as a :class:`TreeBatch`'s arrays, one thread a (tree, node): ``ints``
    (5, K, cap) left, right, feature, bin and depth, ``flags`` (2, K, cap) missing_left and is_categorical
    (False), the threshold and the statistics (the fixed-point sums times ``inv``); the nodes without a split
    padded as the grower pads them. Each node's table entry is then reset as :func:`_node_table` makes it, so
    that a fit's workspace hands the next tree a fresh table with no launch of its own."""
    n_trees, cap = split.shape
    C = inv.shape[0]
    for idx in range(cuda.grid(1), n_trees * cap, cuda.gridsize(1)):
        k = idx // cap
        i = idx - k * cap
        sp = split[k, i]
        left = child[k, i] if sp else -1
        ints[0, k, i] = left
        ints[1, k, i] = left + 1 if sp else left
        ints[2, k, i] = feature[k, i] if sp else -2
        ints[3, k, i] = bin_[k, i] if sp else -1
        level = 0
        while (2 << level) - 1 <= i:  # node i's level: the last d with 2^d - 1 <= i
            level += 1
        ints[4, k, i] = level
        flags[0, k, i] = sp and missing_left[k, i]
        flags[1, k, i] = False
        out_threshold[k, i] = threshold[k, i] if sp else -2.0
        for c in range(C):
            out_stats[k, i, c] = stats[k, i, c] * inv[c]
            stats[k, i, c] = 0
        split[k, i] = False
        can[k, i] = False
        child[k, i] = -1
        feature[k, i] = -2
        bin_[k, i] = -1
        missing_left[k, i] = False
        threshold[k, i] = -2.0
        key[k, i] = 0
        depth[k, i] = 0 if i == 0 else -1


# -- the host side ---------------------------------------------------------------------
#: Bytes a (tree, node of the deepest level, feature, bin) takes, per channel and besides: the int64 histograms
#: of the deepest level, of the level above (half as many nodes) and of the built children (half), and the
#: proxies of two variants.
_BYTES_PER_BIN_CHANNEL = 16
_BYTES_PER_BIN = 16


def covered(xp, inputs, params, scale) -> bool:
    """Whether :func:`grow_tree` grows this batch (else the grower does, level by level)."""
    mapper = inputs.bin_mapper
    mono = inputs.monotonic_cst
    channels = inputs.channels
    kind = criterion_code(inputs.criterion)
    return bool(
        scale is not None
        and kind in CRITERIA
        and channels is not None
        and inputs.codes is not None
        and (int(channels.shape[-1]) == 3 if kind == NEWTON else 2 <= int(channels.shape[-1]) <= MAX_CHANNELS)
        and (channels.ndim == 2 or inputs.multiplicity is None)
        and not inputs.random_splits
        and (mono is None or not np.any(np.asarray(mono) != 0))
        and not np.any(mapper.is_categorical)
        and mapper.bin_values is not None
        # deeper than the perfect-tree layout: forests' and trees' criteria (boosting's rounds read nothing)
        and (params.max_depth is None or params.max_depth >= 1)
        and (not is_deep(params) or kind != NEWTON)
        and params.max_leaf_nodes is None
        # the sort-based search of small nodes finds the histograms' split where thresholds are local
        and (params.local_thresholds or not params.sorted_small_nodes)
        and int(inputs.codes.shape[0]) > 0
        and trees_per_pass(inputs, params) > 0
    )


def trees_per_pass(inputs, params) -> int:
    """Trees of the batch whose levels are grown together: as many as the deepest level's histograms of all of
    them fit ``memory_limit``; the batch's trees are grown that many at a time (0: not one fits)."""
    n_hist, by_drawn = histogram_features(inputs, params)
    if by_drawn:
        per_channel = _BYTES_PER_BIN_CHANNEL // 2  # one level, built in place
    else:  # deep trees: either perfect level, and the built children, may be the widest
        per_channel = 3 * _BYTES_PER_BIN_CHANNEL // 2 if is_deep(params) else _BYTES_PER_BIN_CHANNEL
    per_tree = widest_level(inputs, params) * n_hist * int(inputs.bin_mapper.n_bins) * (
        per_channel * int(inputs.channels.shape[-1]) + _BYTES_PER_BIN)
    return int(params.memory_limit // per_tree)


def histogram_features(inputs, params) -> tuple[int, bool]:
    """(features a node's histograms hold, whether they are its drawn features): with per-node draws of at
    most :data:`gputrees._records.DRAWN_BUILD_SHARE` of the features (random forests: 5 of 28), every node's
    histograms are built over its ``k`` drawn features from its rows, as the level-wise grower builds them
    (``k`` updates a row for both children against up to ``F`` for the smaller one before the subtraction,
    and ``k / F`` of the memory); else over every feature, the larger child of a pair by subtraction."""
    n_features = int(inputs.codes.shape[1])
    k = params.max_features
    if k is not None and k <= DRAWN_BUILD_SHARE * n_features and inputs.tree_features is None:
        return int(k), True
    return n_features, False


def grow_tree(xp, inputs, params, *, scale=None):
    """The batch of ``inputs`` grown on the device (see the module's docstring), or None where not covered.

    Parameters
    ----------
    xp : array namespace (CuPy, or NumPy under the simulator)
    inputs : GrowerInputs
        ``channels`` (n, C) or (K, n, C) float64, multiples of ``1 / scale``;
        ``multiplicity`` / ``weight_multiplicity`` (K, n) or None.
    params : GrowerParams
    scale : sequence of C floats (powers of two), a device array of them, or None
        The channels' quantisation scale (``Kernels.quantised``); None: not covered.

    Returns
    -------
    TreeBatch or None
        The level-wise grower's trees with the cuda set's quantised kernels:
        up to :data:`MAX_DEPTH`, in the perfect-tree layout (``node_count``
        None, rows' leaves by perfect ids), which
        :func:`gputrees.kernels.reference.compact_batch` lays out as the
        level-wise grower's batch; deeper (:func:`is_deep`), that batch itself.
    """
    if not covered(xp, inputs, params, scale):
        return None
    compile_rules()
    codes = inputs.codes
    mapper = inputs.bin_mapper
    n, n_features = int(codes.shape[0]), int(codes.shape[1])
    nb = int(mapper.n_bins)
    deep = is_deep(params)
    depth = -1 if params.max_depth is None else int(params.max_depth)  # the kernels' -1: no limit
    chan = inputs.channels
    C = int(chan.shape[-1])
    n_trees = int(chan.shape[0]) if chan.ndim == 3 else (
        1 if inputs.multiplicity is None else int(inputs.multiplicity.shape[0]))
    f8, i8 = xp.float64, xp.int64
    # a device scale as it is (with its inverse where the quantisation made it), a host one copied
    scale_dev = scale.array if hasattr(scale, "array") else xp.asarray(list(scale), dtype=f8)
    inv = getattr(scale, "inverse", None)
    if inv is None:
        inv = 1.0 / scale_dev  # powers of two: exact
    k = params.max_features
    k_draw = int(k) if k is not None and k < n_features else -1
    n_hist, by_drawn = histogram_features(inputs, params)
    per_pass = min(n_trees, trees_per_pass(inputs, params))
    fixed = kept("device_step", (id(mapper), n_trees, n, n_features, nb, C, depth, n_hist, by_drawn, k_draw >= 0,
                                 per_pass, int(params.memory_limit)),
                 lambda: _fit_arrays(xp, inputs, params, n_trees, n, C, nb, n_hist, by_drawn, k_draw, per_pass))
    buffers = fixed.buffers
    # deep trees' table starts with the perfect levels and the first compact one, and widens as they grow: a
    # fresh one a batch; the perfect-tree table is the fit's, reset by _finish
    table = _node_table(xp, n_trees, fixed.cap, C, n_hist if by_drawn else 0) if deep else fixed.table
    node = fixed.node
    allowed = fixed.allowed if inputs.tree_features is None else _on_device(xp, inputs.tree_features, xp.bool)
    # per-node feature draws keyed by the node's path (gputrees.kernels.node_draws): the trees' keys drawn from the
    # batch's generator where the level-wise grower draws them, the roots' made here, the others by the
    # parents' blocks; by_drawn: each node's drawn features (ascending), the roots' drawn here, the others by
    # their parents' blocks
    if k_draw >= 0 or inputs.tree_features is not None:
        roots = node_draws.root_keys(node_draws.tree_keys(inputs.rng, n_trees))
        table["key"][:, 0] = xp.asarray(roots, dtype=xp.uint64)
        if by_drawn:
            mask = node_draws.feature_mask(roots, n_features, k_draw)
            table["fids"][:, 0, :] = xp.asarray(np.nonzero(mask)[1].reshape(n_trees, n_hist), dtype=i8)
    # the channels as (trees with their own, or 1) x rows; multiplicities flat (tree-major), one-element
    # placeholders where there are none (mode 0: none, 1: one for every channel, 2: the count's and the others')
    chan2 = xp.reshape(chan, (-1, C))
    mult = fixed.dummy if inputs.multiplicity is None else xp.astype(inputs.multiplicity, f8)
    wmult = fixed.dummy if inputs.weight_multiplicity is None else xp.astype(inputs.weight_multiplicity, f8)
    mode = 0 if inputs.multiplicity is None else (1 if inputs.weight_multiplicity is None else 2)
    crit = SimpleNamespace(
        kind=criterion_code(inputs.criterion), n_out=int(getattr(inputs.criterion, "n_outputs", 1)),
        l2=float(getattr(inputs.criterion, "l2", 0.0)), msl=float(params.min_samples_leaf),
        mwl=float(params.min_weight_leaf), min_split=float(params.min_samples_split),
        min_dec=float(params.min_impurity_decrease), k_draw=k_draw, has_allowed=inputs.tree_features is not None,
        local_thr=bool(params.local_thresholds), by_drawn=by_drawn,
    )
    own = chan.ndim == 3  # each tree its own channels
    for a in range(0, n_trees, per_pass):
        b = min(n_trees, a + per_pass)
        rows = dict(codes=codes, chan=chan2[a * n: b * n] if own else chan2,
                    mult=mult if mode == 0 else xp.reshape(mult[a:b], (-1,)),
                    wmult=wmult if mode < 2 else xp.reshape(wmult[a:b], (-1,)), scale=scale_dev, node=node[a:b],
                    allowed=allowed[a:b], tw=fixed.tw[a:b], inv=inv, proxies=buffers.proxies, fbest=buffers.fbest,
                    drawn=buffers.drawn, u=buffers.u, **fixed.tables)

        def views(table, a=a, b=b, rows=rows):
            # the arrays of the pass's trees that every level's launches take: the node table's views made again
            # when it widens
            arrays = dict(rows, **{name: t[a:b] if name != "fids" or by_drawn else t for name, t in table.items()})
            return SimpleNamespace(**{name: arrays[name] for name in _TREE_ARRAYS})

        table = _grow_pass(xp, table, views, b - a, n, n_hist, nb, depth, deep, C, b - a if own else 1, mode,
                           int(mapper.missing_bin), crit, buffers)
    if deep:  # the existing nodes numbered in level order, as the level-wise grower's (one host read)
        batch, _ = reference.compact_batch(xp, _table_batch(xp, table, node, inv, inputs.record_leaves),
                                           exists=table["depth"] >= 0)
        return batch
    return _finished_batch(xp, table, node, inv, depth, inputs.record_leaves, fixed.cat_left)


def _fit_arrays(xp, inputs, params, n_trees, n, C, nb, n_hist, by_drawn, k_draw, per_pass):
    """What every batch of a fit's device step (the same shapes) uses, made once a fit (kept in its workspace):
    the perfect-tree node table, the rows' positions, the bin mapper's tables, the level buffers, placeholders.
    Every kernel writes what it reads before reading it, or resets it for the next batch (the histograms that
    start from zero: :func:`_clear`; the node table: :func:`_finish`)."""
    mapper = inputs.bin_mapper
    n_features = int(inputs.codes.shape[1])
    deep = is_deep(params)
    depth = -1 if params.max_depth is None else int(params.max_depth)
    f8, i8 = xp.float64, xp.int64
    cap = 2 ** ((DEEP_PERFECT_LEVELS if deep else depth) + 1) - 1
    widest = widest_level(inputs, params)
    group = group_slots(inputs, params, per_pass) if deep else widest  # a compact level's slots at a time
    wide = max(widest, group)
    cell = n_hist * nb * C
    # levels built by subtraction (the perfect ones, unless every node is built over its drawn features): level
    # d's histograms in buffer d % 3, its smaller children built in place, the buffer of level d + 1 cleared
    # while level d reads the other two; each buffer as wide as its widest level
    widths = [2 ** d for d in range(0 if by_drawn else (DEEP_PERFECT_LEVELS if deep else depth))]
    level_slots = [max([w for d, w in enumerate(widths) if d % 3 == p], default=0) for p in range(3)]
    buffers = SimpleNamespace(
        levels=tuple(xp.zeros(max(1, per_pass * level_slots[p] * cell), dtype=i8) for p in range(3)),
        n_subtracted=len(widths),
        # the levels whose every node that may split is built (by_drawn, deep trees' compact levels)
        every=xp.empty(per_pass * wide * cell if by_drawn or deep else 1, dtype=i8),
        fbest=xp.empty(per_pass * wide * n_hist, dtype=f8),
        proxies=xp.empty(per_pass * wide * n_hist * 2 * (nb - 1), dtype=f8),
        drawn=xp.zeros((per_pass * wide if k_draw >= 0 else 1, n_features), dtype=xp.bool),
        u=xp.empty((per_pass * wide if k_draw >= 0 else 1, n_features), dtype=f8),
        small=xp.zeros((2, per_pass, max(1, widest)), dtype=i8),  # level by level: read one, write one
        perfect=xp.zeros((1, 1), dtype=i8),  # the slot map of a perfect-tree level (_hist_slot)
        group=group,
        per_pass=per_pass,
    )
    return SimpleNamespace(
        cap=cap, buffers=buffers,
        table=None if deep else _node_table(xp, n_trees, cap, C, n_hist if by_drawn else 0),
        node=xp.empty((n_trees, n), dtype=i8),  # each row's node: level 0 starts every row at its root
        allowed=xp.ones((n_trees, n_features), dtype=xp.bool),
        tw=xp.empty(n_trees, dtype=f8),  # each tree's total weight, written at level 0
        # the bin mapper's tables, host or device arrays by where the fit bins: contiguous device copies
        tables=dict(n_value_bins=_on_device(xp, mapper.n_value_bins, i8),
                    thresholds=_on_device(xp, mapper.thresholds, f8),
                    bin_values=_on_device(xp, mapper.bin_values, f8),
                    is_exact=_on_device(xp, mapper.is_exact, xp.bool)),
        dummy=xp.zeros(1, dtype=f8),
        cat_left=xp.zeros((n_trees, cap, 0), dtype=xp.bool),  # no categorical splits (no elements: shared)
    )


def is_deep(params) -> bool:
    """Whether the trees grow beyond the perfect-tree layout (``max_depth`` None or above :data:`MAX_DEPTH`): the
    levels below :data:`DEEP_PERFECT_LEVELS` compact, one host read a level."""
    return params.max_depth is None or params.max_depth > MAX_DEPTH


def widest_level(inputs, params) -> int:
    """The most nodes of one tree a perfect-tree level's histograms hold: the deepest level's
    ``2^(max_depth - 1)``; for deep trees the last perfect level's (their compact levels are built a group of
    nodes at a time, :func:`group_slots`)."""
    return 2 ** ((DEEP_PERFECT_LEVELS if is_deep(params) else params.max_depth) - 1)


def group_slots(inputs, params, per_pass) -> int:
    """The nodes of one tree a deep tree's compact level builds at a time: as many as the histograms (and
    proxies) of ``per_pass`` trees fit ``memory_limit``, at most the rows over ``min_samples_split`` (the
    nodes that may split hold that many in-bag rows each, and a level's nodes hold different rows), and at
    least the last perfect level's."""
    n_hist, _ = histogram_features(inputs, params)
    most = max(2, int(math.ceil(params.min_samples_split)), int(math.ceil(2 * params.min_samples_leaf)))
    live = int(inputs.codes.shape[0]) // most
    if params.max_depth is not None:
        live = min(live, 2 ** (params.max_depth - 1))
    per_slot = per_pass * n_hist * int(inputs.bin_mapper.n_bins) * (
        _BYTES_PER_BIN_CHANNEL // 2 * int(inputs.channels.shape[-1]) + _BYTES_PER_BIN)
    return max(widest_level(inputs, params), min(live, int(params.memory_limit // max(1, per_slot))))


def _node_table(xp, n_trees, cap, C, n_drawn):
    """The trees' node arrays (n_trees, cap): statistics (int64 fixed point), whether a node may split, its
    split, draw key, drawn features (``n_drawn`` of them; a placeholder where 0), left child and depth (-1:
    no node there; 0 at the roots: the split kernels write their children's)."""
    i8, b1 = xp.int64, xp.bool
    return dict(
        stats=xp.zeros((n_trees, cap, C), dtype=i8), can=xp.zeros((n_trees, cap), dtype=b1),
        split=xp.zeros((n_trees, cap), dtype=b1), feature=xp.full((n_trees, cap), -2, dtype=i8),
        bin=xp.full((n_trees, cap), -1, dtype=i8), missing_left=xp.zeros((n_trees, cap), dtype=b1),
        threshold=xp.full((n_trees, cap), -2.0, dtype=xp.float64), key=xp.zeros((n_trees, cap), dtype=xp.uint64),
        fids=xp.zeros((n_trees, cap, n_drawn) if n_drawn else (1, 1, 1), dtype=i8),
        child=xp.full((n_trees, cap), -1, dtype=i8),
        depth=xp.concat([xp.zeros((n_trees, 1), dtype=i8), xp.full((n_trees, cap - 1), -1, dtype=i8)], axis=1),
    )


def _widen(xp, table, cap, n_drawn):
    """``table`` with room for ``cap`` nodes a tree, its nodes copied: a deep tree's levels are sized as they
    grow (capacity doubled, so a tree widens it a few times)."""
    n_trees, old, C = (int(x) for x in table["stats"].shape)
    fresh = _node_table(xp, n_trees, cap, C, n_drawn)
    for name, a in table.items():
        if name != "fids" or n_drawn:
            fresh[name][:, :old] = a
    return fresh


def _grow_pass(xp, table, views, n_trees, n, n_features, nb, depth, deep, C, chan_trees, mode, missing_bin, crit,
               buffers):
    """The levels of ``n_trees`` trees (``views(table)``: the arrays of their nodes and rows; ``n_features`` their
    histograms'), two launches a level (three where every node is built: its histograms zeroed), then the leaves'
    routing; returns the node table (widened for deep trees). Up to :data:`MAX_DEPTH` nothing is read to the
    host; deep trees read one number a level."""
    threads, cap_blocks = launch_config()
    cell = n_features * nb * C
    rtol = float(rules.TIE_RTOL)
    v = views(table)
    prev = None
    first, width, d = 0, 1, 0
    while deep or d < depth:
        compact = deep and d >= DEEP_PERFECT_LEVELS
        if compact:
            # the level's nodes that may split ranked by a running count; their children take slots 2 rank,
            # 2 rank + 1 of the next level
            live = xp.cumulative_sum(v.can[:, first:first + width], axis=1, dtype=xp.int64)
            # the level's one host read: the most nodes of a tree that may split sizes the level's histograms and
            # the next level's slots, and 0 ends the trees
            n_slots = int(xp.max(live[:, -1]))
            if n_slots == 0:
                break
        else:
            live, n_slots = buffers.perfect, width
        next_first = first + width
        cap = int(table["stats"].shape[1])
        if next_first + 2 * n_slots > cap:  # deep trees only: the perfect levels fit the first table
            table = _widen(xp, table, max(2 * cap, next_first + 2 * n_slots), n_features if crit.by_drawn else 0)
            v = views(table)
        small = buffers.small[:, :n_trees]
        small_right, small_next = small[(d + 1) % 2], small[d % 2]
        # a compact level: every node that may split built (no subtraction), a group of them at a time
        every = crit.by_drawn or compact
        step = buffers.group if compact else n_slots
        for slot0 in range(0, n_slots, step):
            n_group = min(step, n_slots - slot0)
            n_pairs = n_group if every else max(1, width // 2)  # the built histograms' slots
            clear, n_clear = buffers.levels[(d + 1) % 3], 0
            if every:
                cur = buffers.every[: n_trees * n_group * cell]
                cur[...] = 0
            else:  # zeroed by the level above's build (level 0: by the routing that ended the last pass)
                cur = buffers.levels[d % 3][: n_trees * n_group * cell]
                if d + 1 < buffers.n_subtracted:  # the next level's, which no launch of this level reads
                    n_clear = n_trees * 2 * n_group * cell
            built = cur  # the built children in their own slots (every node's, or the smaller of each pair)
            routing = (v.codes, v.chan, chan_trees, v.mult, v.wmult, mode, v.scale, v.node, v.split, v.feature,
                       v.bin, v.missing_left, v.child, missing_bin, small_right, crit.by_drawn, v.fids, v.can, live,
                       first, n_pairs, nb, every, slot0, clear, n_clear)
            group = shared_group_width(n_trees * n_pairs, nb, n_features, C)
            if group:
                n_groups = -(-n_features // group)
                chunks = min(SHARED_BUILD_BLOCKS // n_groups, grid_blocks(n_trees * n, threads, cap_blocks))
                launch(_build_shared, n_groups * max(1, chunks), threads, *routing, group, built,
                       shared_bytes=n_trees * n_pairs * group * nb * C * 8)
            else:
                launch(_build, grid_blocks(n_trees * n, threads, cap_blocks), threads, *routing, built)
            launch(_split, n_trees * n_group, threads, prev if d > 0 and not every else cur, built, cur, v.proxies,
                   v.fbest, v.drawn, v.u, v.stats, v.can, v.key, v.allowed, v.n_value_bins, v.thresholds,
                   v.bin_values, v.is_exact, v.inv, v.tw, crit.kind, crit.n_out, d, first, width, nb, crit.l2,
                   crit.msl, crit.mwl, crit.min_split, depth, crit.min_dec, rtol, crit.k_draw, crit.has_allowed,
                   crit.by_drawn, v.fids, crit.local_thr, v.split, v.feature, v.bin, v.missing_left, v.threshold,
                   small_right, small_next, live, n_group, next_first, v.child, v.depth, every, slot0)
        prev = cur
        first, width, d = next_first, 2 * n_slots, d + 1
    # the last level's rows to their leaves; level 0's histograms zeroed for the next pass (of the widest)
    launch(_route, grid_blocks(n_trees * n, threads, cap_blocks), threads, v.codes, v.node, v.split, v.feature,
           v.bin, v.missing_left, v.child, first, missing_bin, buffers.levels[0],
           buffers.per_pass * cell if buffers.n_subtracted else 0)
    return table


def shared_group_width(n_slots: int, nb: int, n_features: int, n_channels: int) -> int:
    """Features a block of ``_build_shared`` sums (the histograms of all ``n_slots`` (tree, pair) slots for
    them fit :data:`SHARED_HISTOGRAM_BYTES`), balanced over the blocks' groups; 0 where not one feature fits
    (the level's histograms are then built with global atomics, ``_build``)."""
    most = SHARED_HISTOGRAM_BYTES // (n_slots * nb * n_channels * 8)
    if most == 0:
        return 0
    n_groups = -(-n_features // most)
    return -(-n_features // n_groups)


def _on_device(xp, a, dtype):
    """A contiguous copy of ``a`` (a NumPy or a CuPy array) in ``xp``, never through the host's
    implicit conversion that CuPy refuses."""
    return xp.asarray(a, dtype=dtype, copy=True)


def _table_batch(xp, table, node, inv, record_leaves):
    """A deep batch's node table as a :class:`TreeBatch`, without a host read (``depth`` -1 where no node is),
    for :func:`gputrees.kernels.reference.compact_batch` to number its nodes as the level-wise grower does."""
    split = table["split"]
    n_trees, cap = split.shape
    i8, f8 = xp.int64, xp.float64
    left = xp.where(split, table["child"], xp.asarray(-1, dtype=i8))
    return TreeBatch(
        node_count=None,
        left=left,
        right=xp.where(split, left + 1, left),
        feature=xp.where(split, table["feature"], xp.asarray(-2, dtype=i8)),
        bin=xp.where(split, table["bin"], xp.asarray(-1, dtype=i8)),
        missing_left=split & table["missing_left"],
        is_categorical=xp.zeros((n_trees, cap), dtype=xp.bool),
        cat_left=xp.zeros((n_trees, cap, 0), dtype=xp.bool),
        threshold=xp.where(split, table["threshold"], xp.asarray(-2.0, dtype=f8)),
        stats=xp.astype(table["stats"], f8) * inv[None, None, :],
        depth=xp.maximum(table["depth"], xp.asarray(0, dtype=i8)),
        max_depth=-1,  # compact_batch finds it
        row_leaf=node if record_leaves else None,
    )


def _finished_batch(xp, table, node, inv, depth, record_leaves, cat_left):
    """The perfect-tree node table as a :class:`TreeBatch` (node ``i``'s children ``2 i + 1`` and ``2 i + 2``,
    the nodes that do not exist unreachable padding, ``node_count`` None:
    :func:`gputrees.kernels.reference.compact_batch` numbers the existing nodes as the level-wise grower does,
    once the fit is done), written by one launch (:func:`_finish`, which also resets the table) into four new
    arrays; no host read."""
    n_trees, cap = (int(x) for x in table["split"].shape)
    C = int(inv.shape[0])
    ints = xp.empty((5, n_trees, cap), dtype=xp.int64)
    flags = xp.empty((2, n_trees, cap), dtype=xp.bool)
    threshold = xp.empty((n_trees, cap), dtype=xp.float64)
    stats = xp.empty((n_trees, cap, C), dtype=xp.float64)
    threads, cap_blocks = launch_config()
    launch(_finish, grid_blocks(n_trees * cap, threads, cap_blocks), threads, table["split"], table["child"],
           table["feature"], table["bin"], table["missing_left"], table["threshold"], table["stats"], table["can"],
           table["key"], table["depth"], inv, ints, flags, threshold, stats)
    return TreeBatch(
        node_count=None, left=ints[0], right=ints[1], feature=ints[2], bin=ints[3], missing_left=flags[0],
        is_categorical=flags[1], cat_left=cat_left, threshold=threshold, stats=stats, depth=ints[4],
        max_depth=depth, row_leaf=node if record_leaves else None,
    )
