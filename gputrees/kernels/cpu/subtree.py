"""Small nodes' whole subtrees grown depth-first in one compiled call (Numba).

A deep tree (a random forest's, ``max_depth=None``) ends with tens of
thousands of nodes of a few rows each. Level by level, each of those levels
routes the nodes' rows with every other active row, builds or sorts, gathers
and retires them, around a few dozen array operations of Python; on a
forest's deep levels those passes cost more than the searches.

:func:`grow_subtrees` takes such nodes once, with their rows, and grows
each one's whole subtree in compiled code, one node per task, from a copy
of its rows' codes and channels gathered once (a subtree's reads then stay
in one block instead of ranging over the whole tables; a
node's rows are copied again, in order, to smaller blocks as its subtree
narrows, :data:`COMPACT_ROWS`): the
level-wise grower's searches -- histograms over the drawn features for
nodes with as many rows as bins (:func:`_hist_node`, the compiled scan's
per-node body), else the sort-based search of :mod:`gputrees._sorted_split`
(its compiled per-node body
:func:`gputrees.kernels.cpu.sorted_scan.sorted_node`, which finds the
histogram search's split where thresholds are local to the node) --, the
grower's rules with the same formulas (which nodes can split,
scikit-learn's impurity improvement and its acceptance), the same per-node
random draws (keyed by the node's path from its root,
:mod:`gputrees.kernels.node_draws`), the children's statistics summed from their
rows, which are partitioned stably. So the subtree is the one the
level-wise grower grows, split for split (tested against it and against the
NumPy kernel set); the grower numbers its nodes breadth-first at the end, as
it numbers its own (:meth:`gputrees._grower.Grower._breadth_first`), and
hands it nodes below :data:`gputrees._grower.SUBTREE_BELOW_BINS` times the
bins, and, for forests drawing features per node or extra trees, every node of a round
with :data:`gputrees._grower.SUBTREE_PAIRS_PER_THREAD` sibling pairs per
thread; a batch with that many trees per thread comes whole, from its roots,
each task gathering its tree's in-bag rows from the multiplicities
(:class:`~gputrees.kernels.TreeRows`; the roots' statistics from
:func:`tree_sums`), so that no array of every (tree, row) pair is made.

Covered (:func:`covers`; else the grower goes on level by level): the
criteria Gini, entropy, misclassification and squared error; numerical
features with their bin values (every fit's bin mapper), and categorical
ones (then every node is searched by histograms, as the level-wise grower
searches a batch with categories); any ``max_features``, per-tree feature
subsets, extremely randomised thresholds; depth-wise growth of a local row
set without recorded leaves (the grower checks these).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields

import numba
import numpy as np
from numba import prange

from ..._records import (
    ENTROPY,
    GINI,
    MISCLASSIFICATION,
    SQUARED_ERROR,
    SubtreeParams,
    TreeRows,
    category_width,
    criterion_code,
    mapper_category_positions,
)
from ..rules import (
    NEG_INF,
    TIE_RTOL,
    can_split,
    child_key,
    draw_features,
    has_rows,
    impurity_accept,
    impurity_improvement,
    random_bin_within,
    split_threshold,
    tie_target,
    uniform,
)
from .grow import goes_left
from .jit import JIT_LEAF, JIT_NUMPY, Threads, threads_for
from .memory import at, at1, put1, take_next
from .pairs import add_sums, pair_weight
from .sparse_codes import layout_of
from .scan import (
    bin_sums,
    criterion_record,
    fast_scan,
    has_values,
    mapper_arrays,
    node_threshold,
    scan_categorical,
    scan_feature,
    scan_scratch,
    score_category_pick,
    score_random_sides,
    supported_criterion,
)
from .sorted_scan import (
    UPDATES_PER_CODE,
    SMALL_SORT_ROWS,
    PRESENT_BINS,
    fast_pass,
    node_tasks,
    present_codes,
    mark_code,
    record_random,
    recorded_random,
    sorted_node,
    sorted_scratch,
    trailing_zeros,
)

#: Criteria the subtree kernel grows with (codes of :mod:`gputrees._records`).
SUBTREE_CRITERIA = (GINI, ENTROPY, MISCLASSIFICATION, SQUARED_ERROR)


@dataclass(frozen=True)
class Subtrees:
    """Every node of the grown subtrees, where the kernel wrote them: subtree ``i`` in its own region of slots.

    Subtree ``i``'s nodes are the slots ``region[i] .. region[i] + count[i] - 1``:
    its root first (the small node it was given, already a node of the
    grower), then its descendants in creation order; children of a split are
    consecutive (left, right). The slots after a subtree's ``count`` are
    unspecified. Arrays of length ``region[-1]`` (slots) unless said
    otherwise. The grower reads them through :meth:`records` (one compiled
    pass, no compacted copy of every node); :meth:`nodes` gives them without
    gaps (NumPy gathers, for the tests).

    Attributes
    ----------
    region : (m + 1,) int64
        The regions' starts (room for every node a subtree can have).
    count : (m,) int64
        Each subtree's number of nodes.
    tree : (m,) int64
        Each subtree's tree.
    parent : int64
        Index of the node's parent within its subtree (0 is the subtree's
        root), -1 for the roots.
    depth : int64
    key : uint64
        The node's draw key (:mod:`gputrees.kernels.node_draws`).
    stats : (n_slots, C) float64
        The roots' as given; the others summed from their rows.
    split : bool
        Whether the node was split; then ``feature``, ``bin`` (int64),
        ``missing_left`` (bool), ``threshold`` (float64), ``first_child``
        (int64, the left child's index within the subtree) and
        ``is_categorical`` (bool) hold the split, else unspecified.
    cat_left : (n_slots, n_cat_pos) bool
        At a categorical split, the codes sent left (a feature's categories
        are its codes below ``n_cat_pos``), else unspecified; no columns
        without categorical features.
    """

    region: np.ndarray
    count: np.ndarray
    tree: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    key: np.ndarray
    stats: np.ndarray
    split: np.ndarray
    feature: np.ndarray
    bin: np.ndarray
    missing_left: np.ndarray
    threshold: np.ndarray
    first_child: np.ndarray
    is_categorical: np.ndarray
    cat_left: np.ndarray

    def nodes(self) -> "Subtrees":
        """The same subtrees without gaps between the regions (``region`` the subtrees' first positions), by
        NumPy's gathers: what the tests compare (the slots past a subtree's ``count`` are unspecified)."""
        m = int(self.count.shape[0])
        start = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(self.count, out=start[1:])
        of = np.repeat(np.arange(m, dtype=np.int64), self.count)  # each node's subtree
        slots = self.region[:-1][of] + np.arange(int(start[m]), dtype=np.int64) - start[:-1][of]
        per_slot = (getattr(self, f.name)[slots] for f in fields(self) if f.name not in _PER_SUBTREE)
        return Subtrees(start, self.count, self.tree, *per_slot)

    @functools.cached_property
    def split_starts(self) -> np.ndarray:
        """(m + 1,) int64: where each subtree's splits start among :meth:`records`' splits."""
        return _split_starts(self.region, self.count, self.split)

    def record_sizes(self) -> tuple:
        """(new nodes, splits) that :meth:`records` writes."""
        return int(self.count.sum()) - int(self.count.shape[0]), int(self.split_starts[-1])

    def records(self, root_ids, first_new: int, *, n_threads: int = 1, out=None) -> "SubtreeRecords":
        """The grower's records of these nodes (:class:`SubtreeRecords`), in one compiled pass.

        ``root_ids`` (m,) int64: the grower's ids of the subtrees' roots; the
        other nodes take the ids ``first_new ..`` in subtree order, each
        subtree's in its order. On at most
        ``n_threads``, as many as the nodes give work (a small tree's few
        thousand nodes: one; a parallel region's launch costs more, and on a
        busy machine milliseconds). ``out``: the arrays of a
        :class:`SubtreeRecords`, in its fields' order, of
        :meth:`record_sizes`' lengths (views of the caller's columns, say),
        ``cat_left`` zeroed, written; None: new arrays.
        """
        if out is None:
            n_new, k = self.record_sizes()
            c, width = int(self.stats.shape[1]), _cat_width(self.cat_left)
            out = (*(np.empty(n_new, dtype=np.int64) for _ in range(3)),
                   np.empty((n_new, c), dtype=np.float64), np.empty(n_new, dtype=np.uint64),
                   *(np.empty(k, dtype=np.int64) for _ in range(3)), np.empty(k, dtype=np.bool_),
                   np.empty(k, dtype=np.float64), np.empty(k, dtype=np.int64),
                   np.empty(k, dtype=np.bool_), np.zeros((k, width), dtype=np.bool_))
        work = int(self.count.sum()) * (RECORD_FIELDS + int(self.stats.shape[1]))
        with Threads(threads_for(n_threads, work)):
            _records(
                self.region, self.count, self.tree, self.parent, self.depth, self.key, self.stats, self.split,
                self.feature, self.bin, self.missing_left, self.threshold, self.first_child, self.is_categorical,
                self.cat_left, np.asarray(root_ids, dtype=np.int64), int(first_new), self.split_starts,
                *out,
            )
        return SubtreeRecords(*out)

    def records_reference(self, root_ids, first_new: int) -> "SubtreeRecords":
        """:meth:`records` by NumPy's gathers over :meth:`nodes` (its twin, for the tests)."""
        nodes = self.nodes()
        start = nodes.region
        n_all = int(start[-1])
        shift = np.repeat(start[:-1], nodes.count)  # each node's subtree's first position
        is_root = np.zeros(n_all, dtype=bool)
        is_root[start[:-1]] = True
        new = np.flatnonzero(~is_root)
        node_id = np.empty(n_all, dtype=np.int64)
        node_id[start[:-1]] = root_ids
        node_id[new] = first_new + np.arange(new.shape[0], dtype=np.int64)
        done = np.flatnonzero(nodes.split)
        is_cat = nodes.is_categorical[done]
        width = _cat_width(nodes.cat_left)
        cat_left = np.zeros((done.shape[0], width), dtype=np.bool_)
        if width:
            n_pos = nodes.cat_left.shape[1]
            cat_left[:, :n_pos] = nodes.cat_left[done] & is_cat[:, None]
            cat_left[:, -1] = nodes.missing_left[done] & is_cat
        return SubtreeRecords(
            node_id[nodes.parent[new] + shift[new]], nodes.depth[new],
            np.repeat(nodes.tree, nodes.count)[new], nodes.stats[new], nodes.key[new],
            node_id[done], nodes.feature[done], nodes.bin[done], nodes.missing_left[done], nodes.threshold[done],
            node_id[nodes.first_child[done] + shift[done]], is_cat, cat_left,
        )


#: :class:`Subtrees`' fields with one value per subtree (the others: one per slot)
_PER_SUBTREE = ("region", "count", "tree")
#: Fields besides the statistics that :meth:`Subtrees.records` reads or writes per node (its work per node).
RECORD_FIELDS = 12


def _cat_width(cat_left) -> int:
    """Columns of the records' codes sent left: the sorted categories' positions (``cat_left``'s) and the
    missing bin, a batch's columns (:func:`gputrees._records.category_width`); none without categorical
    features."""
    return category_width(int(cat_left.shape[1]))


@dataclass(frozen=True)
class SubtreeRecords:
    """What the grower records of grown subtrees: their new nodes (every node but the roots) and their splits' rules.

    The splits' statistics and proxies are not recorded: the grower's
    layout of the batch reads the rules only (a fully grown regression
    forest's batch has millions of splits).

    Attributes
    ----------
    parent, depth, tree : (n_new,) int64
        The new nodes' parents (grower ids), depths and trees, in id order.
    stats : (n_new, C) float64
    key : (n_new,) uint64
    split_ids : (k,) int64
        The split nodes' grower ids (roots included), in the subtrees' order.
    feature, bin : (k,) int64
    missing_left : (k,) bool
    threshold : (k,) float64
    first_child : (k,) int64
        The left child's grower id.
    is_categorical : (k,) bool
    cat_left : (k, width) bool, or (k, 0) without categorical features
        At a categorical split, the codes sent left and the missing bin last
        (``missing_left``), a batch's columns
        (:func:`gputrees._records.category_width`); else False.
    """

    parent: np.ndarray
    depth: np.ndarray
    tree: np.ndarray
    stats: np.ndarray
    key: np.ndarray
    split_ids: np.ndarray
    feature: np.ndarray
    bin: np.ndarray
    missing_left: np.ndarray
    threshold: np.ndarray
    first_child: np.ndarray
    is_categorical: np.ndarray
    cat_left: np.ndarray


@numba.njit(inline="always")
def _grower_id(i, j, root, root_ids, first_new):
    """The grower's id of node ``j`` (within its subtree) of subtree ``i``: the root's ``root_ids[i]``, the
    others numbered on from ``first_new`` (``root`` (m + 1,): the subtrees' first positions side by side)."""
    return root_ids[i] if j == 0 else first_new + root[i] + j - (i + 1)


@numba.njit(parallel=True, **JIT_NUMPY)
def _split_starts(region, count, split):
    """(m + 1,) int64: where each subtree's splits start among the records' (in parallel over subtrees)."""
    m = count.shape[0]
    starts = np.zeros(m + 1, dtype=np.int64)
    for i in prange(m):
        c = 0
        for s in range(region[i], region[i] + count[i]):
            c += split[s]
        starts[i + 1] = c
    for i in range(m):
        starts[i + 1] += starts[i]
    return starts


@numba.njit(parallel=True, **JIT_NUMPY)
def _records(region, count, tree, parent, depth, key, stats, split, feature, bin_, ml, thr, first_child, is_cat,
             cat_left, root_ids, first_new, split_start, o_parent, o_depth, o_tree, o_stats, o_key, s_ids, s_feature,
             s_bin, s_ml, s_thr, s_first, s_cat, s_cat_left):
    """:meth:`Subtrees.records`: the records written into the ``o_`` (new nodes) and ``s_`` (splits) arrays, in
    parallel over subtrees (``split_start``: :func:`_split_starts`)."""
    m = count.shape[0]
    C = stats.shape[1]
    root = np.zeros(m + 1, dtype=np.int64)
    for i in range(m):
        root[i + 1] = root[i] + count[i]
    n_pos = cat_left.shape[1]
    cat_width = s_cat_left.shape[1]
    # (s_cat_left comes zeroed: only categorical splits' rows are written, the others' pages never touched)
    for i in prange(m):
        q = split_start[i]
        for j in range(count[i]):
            s = region[i] + j
            if j > 0:
                d = root[i] + j - (i + 1)
                # a parent lies in the same subtree (the root's is not written)
                o_parent[d] = _grower_id(i, parent[s], root, root_ids, first_new)
                o_depth[d] = depth[s]
                o_tree[d] = tree[i]
                o_key[d] = key[s]
                for c in range(C):
                    o_stats[d, c] = stats[s, c]
            if split[s]:
                s_ids[q] = _grower_id(i, j, root, root_ids, first_new)
                s_feature[q] = feature[s]
                s_bin[q] = bin_[s]
                s_ml[q] = ml[s]
                s_thr[q] = thr[s]
                s_first[q] = _grower_id(i, first_child[s], root, root_ids, first_new)
                s_cat[q] = is_cat[s]
                if is_cat[s]:
                    for b in range(n_pos):
                        s_cat_left[q, b] = cat_left[s, b]
                    s_cat_left[q, cat_width - 1] = ml[s]
                q += 1


# -- the kernel ---------------------------------------------------------------------------
@numba.njit(**JIT_LEAF)
def _hist_node(codes, weights, pairs, P, crit, fmask, u, has_u, nb, thresholds, bin_values, is_exact, n_value_bins,
               tie_rtol, scratch, h, fbest, left, drawn, record, is_cat, cat, local, span, listing):
    """The histogram search of one node (best splits): ``_best_splits``' for one node.

    With ``has_u``, each drawn feature's one extremely randomised candidate
    (``rules.random_bin`` of its histogram and ``u[f]``), as that search draws it.
    Categorical features (``is_cat``) are scanned over their sorted
    categories (:func:`gputrees.kernels.cpu.scan.scan_categorical`); ``cat``:
    the scan's keys and order and the node's row of codes sent left, written
    at a categorical split, and the number of sorted positions scanned.
    ``local``: thresholds at the midpoint to the next value present in the
    node (else the next value bin), as the level-wise search places them.

    Builds the node's histograms of its drawn features (``fmask``) from its
    rows ``pairs`` of ``codes`` / ``weights`` (the subtree's gathered block)
    into ``h`` (F, nb, C), scans them, and returns what
    :func:`gputrees.kernels.cpu.sorted_scan.sorted_node` returns (the same
    split: both searches find the best candidate among the node's values)
    and whether the split is categorical (then its bin -1 and threshold NaN,
    as the level-wise records hold it).
    ``h`` is zeros on entry and left so: the bins the rows filled are
    cleared again (a small node's rows fill few of a feature's bins), and a
    numerical feature is scanned up to its highest value code in the node
    (``span`` (F, 2) int64, work space: the lowest and highest): the bins
    past it are empty, skipped by the scan as repeats of the candidate
    before them, and a random candidate's range is found from them.
    ``drawn`` (F,) int64: work space for the drawn features' indices;
    ``record``: the near-best records of :func:`sorted_scratch` (its fifth
    to eighth arrays), work space here; ``listing``: its key, order, candidate
    and count arrays, where a node of few rows lists a numerical feature's
    present codes for :func:`gputrees.kernels.cpu.scan.fast_scan`.
    """
    n_drawn = _build_node(codes, weights, pairs, fmask, nb, h, drawn, span)
    out = _search_node(n_drawn, weights.shape[1], P, crit, fmask, u, has_u, nb, thresholds, bin_values, is_exact,
                       n_value_bins, tie_rtol, scratch, h, fbest, left, record, is_cat, cat, local, span,
                       (codes, pairs, listing, True))
    # the filled bins cleared: the next node's histograms start from zeros
    # (by the rows' codes where there are fewer rows than bins)
    C = weights.shape[1]
    for j in range(n_drawn):
        f = np.uint64(drawn[j])
        if pairs.shape[0] < nb:
            for k in range(pairs.shape[0]):
                b = at(codes, pairs[k], f)
                for c in range(C):
                    h[f, b, c] = 0.0
        else:
            for b in range(nb):
                for c in range(C):
                    h[f, b, c] = 0.0
    return out


@numba.njit(**JIT_LEAF)
def _build_node(codes, weights, pairs, fmask, nb, h, drawn, span):
    """:func:`_hist_node`'s histograms (added to ``h``, zeros) of the drawn features, listed in ``drawn``
    (returns how many), and each one's lowest and highest value codes in ``span`` (nb - 1 and 0 without
    values)."""
    C = weights.shape[1]
    missing = nb - 1
    n_drawn = _list_drawn(fmask, drawn, span, missing)
    if 3 <= C <= 6:
        # count and two to five classes, or squared error's count, w, w y,
        # w y^2: a row's channels read once into registers and added to each
        # drawn feature's bin (the general loop below reloads them per
        # feature, ``h`` and ``weights`` possibly aliased for the compiler)
        for k in range(pairs.shape[0]):
            p = pairs[k]
            w0, w1, w2 = at(weights, p, 0), at(weights, p, 1), at(weights, p, 2)
            w3 = at(weights, p, 3) if C > 3 else 0.0
            w4 = at(weights, p, 4) if C > 4 else 0.0
            w5 = at(weights, p, 5) if C > 5 else 0.0
            for j in range(n_drawn):
                # unsigned indices: no negative-index mapping (memory._unchecked)
                f = np.uint64(drawn[j])
                b = at(codes, p, f)
                h[f, b, 0] += w0
                h[f, b, 1] += w1
                h[f, b, 2] += w2
                if C > 3:
                    h[f, b, 3] += w3
                if C > 4:
                    h[f, b, 4] += w4
                if C > 5:
                    h[f, b, 5] += w5
                _widen(span, f, b, missing)
    else:
        for k in range(pairs.shape[0]):
            p = pairs[k]
            for j in range(n_drawn):
                f = drawn[j]
                b = codes[p, f]
                for c in range(C):
                    h[f, b, c] += weights[p, c]
                _widen(span, f, b, missing)
    return n_drawn


@numba.njit(inline="always")
def _list_drawn(fmask, drawn, span, missing):
    """The features of ``fmask`` listed in ``drawn`` (returns how many), each one's ``span`` emptied (lowest
    ``missing``, highest 0) for :func:`_widen`."""
    n_drawn = 0
    for f in range(fmask.shape[0]):
        if fmask[f]:
            drawn[n_drawn] = f
            n_drawn += 1
            span[f, 0] = missing
            span[f, 1] = 0
    return n_drawn


@numba.njit(inline="always")
def _widen(span, f, b, missing):
    """Value code ``b`` (the missing code aside) into feature ``f``'s lowest and highest (``span[f]``)."""
    code = np.int64(b)
    if code != missing:
        span[f, 0] = min(span[f, 0], code)
        span[f, 1] = max(span[f, 1], code)


@numba.njit(**JIT_LEAF)
def _entry_hist_node(ent, cols, a, b, codes, weights, pairs, P, crit, fmask, u, has_u, nb, thresholds, bin_values,
                     is_exact, n_value_bins, tie_rtol, scratch, h, fbest, left, drawn, record, is_cat, cat, local, span,
                     listing, esum):
    """:func:`_hist_node` of a block of mostly-default codes held as its rows' entries: ``ent`` (ptr, feat,
    code, default), row ``p``'s codes off their feature's default at ``ptr[p]:ptr[p + 1]``
    (:func:`gputrees.kernels.cpu.sparse_codes.sparse_layout`'s form, rows numbered as ``pairs`` number them).

    The drawn features' histograms are built from the node's entries, each
    feature's default bin its total ``P`` minus its other bins, as
    :func:`gputrees.kernels.cpu.sparse_codes.pair_histograms` builds a
    level's: a node's work is its rows' entries and its drawn features' bins,
    not its rows times its drawn features (a sparse X's lopsided splits leave
    thousands of nodes of most of the rows). ``esum`` (F, C + 1): zeros, work
    space (each feature's entry sums and count), left zeros; ``codes`` is not
    read (the search's shortcuts over the rows' codes are not taken).

    ``cols``: the same entries by feature (:func:`_columns`), and ``pairs``
    positions ``a:b`` of the block's order: where the drawn features hold
    fewer entries than the node has rows (a deep node of a sparse X), the
    histograms are built from their entries whose rows lie in the node,
    in the same order (both increase by row).
    """
    by_cols = _column_entries(cols, fmask) < b - a
    n_drawn = _build_entries(ent, cols, a, b, by_cols, weights, pairs, fmask, nb, h, drawn, span, P, esum)
    out = _search_node(n_drawn, weights.shape[1], P, crit, fmask, u, has_u, nb, thresholds, bin_values, is_exact,
                       n_value_bins, tie_rtol, scratch, h, fbest, left, record, is_cat, cat, local, span,
                       (codes, pairs, listing, False))
    # the filled bins cleared, as _hist_node clears them
    ptr, feat, code, default = ent
    cptr, crow, ccode, pos = cols
    C = weights.shape[1]
    if by_cols:
        for j in range(n_drawn):
            f = drawn[j]
            for e in range(cptr[f], cptr[f + 1]):
                for c in range(C):
                    h[f, ccode[e], c] = 0.0
    else:
        for k in range(pairs.shape[0]):
            p = pairs[k]
            for e in range(ptr[p], ptr[p + 1]):
                f = np.int64(feat[e])
                if fmask[f]:
                    for c in range(C):
                        h[f, code[e], c] = 0.0
    for j in range(n_drawn):
        f = drawn[j]
        for c in range(C + 1):
            esum[f, c] = 0.0
        for c in range(C):
            h[f, default[f], c] = 0.0
    return out


@numba.njit(**JIT_LEAF)
def _column_entries(cols, fmask):
    """The entries of the features of ``fmask`` (:func:`_columns`' ``cols``)."""
    cptr = cols[0]
    n = 0
    for f in range(fmask.shape[0]):
        if fmask[f]:
            n += cptr[f + 1] - cptr[f]
    return n


@numba.njit(**JIT_LEAF)
def _columns(lptr, lfeat, lcode, n_rows, cols, cursor):
    """The gathered block's entries (rows ``0 .. n_rows - 1`` of ``lptr`` / ``lfeat`` / ``lcode``) by feature:
    ``cols`` (cptr (F + 1,), crow, ccode, pos), feature ``f``'s rows (increasing) and codes at
    ``cptr[f]:cptr[f + 1]``; each row's position in the block's order ``pos`` (k: the identity).
    ``cursor`` (F,): work space."""
    cptr, crow, ccode, pos = cols
    F = cptr.shape[0] - 1
    for f in range(F + 1):
        cptr[f] = 0
    for e in range(lptr[n_rows]):
        cptr[np.int64(lfeat[e]) + 1] += 1
    for f in range(F):
        cptr[f + 1] += cptr[f]
        cursor[f] = cptr[f]
    for k in range(n_rows):
        for e in range(lptr[k], lptr[k + 1]):
            f = np.int64(lfeat[e])
            q = cursor[f]
            crow[q] = k
            ccode[q] = lcode[e]
            cursor[f] = q + 1
        pos[k] = k


@numba.njit(**JIT_LEAF)
def _build_entries(ent, cols, a, b, by_cols, weights, pairs, fmask, nb, h, drawn, span, P, esum):
    """:func:`_build_node` from the rows' entries (:func:`_entry_hist_node`; ``by_cols``: from the drawn
    features' columns, the rows at positions ``a:b``): the drawn features' histograms, their lowest and
    highest value codes in ``span``; returns how many features are drawn."""
    ptr, feat, code, default = ent
    cptr, crow, ccode, pos = cols
    C = weights.shape[1]
    missing = nb - 1
    n_drawn = _list_drawn(fmask, drawn, span, missing)
    if by_cols:
        for j in range(n_drawn):
            f = drawn[j]
            for e in range(cptr[f], cptr[f + 1]):
                p = crow[e]
                if a <= pos[p] < b:
                    _add_entry(h, esum, span, weights, f, ccode[e], p, C, missing)
    else:
        for k in range(pairs.shape[0]):
            p = pairs[k]
            for e in range(ptr[p], ptr[p + 1]):
                f = np.int64(feat[e])
                if fmask[f]:
                    _add_entry(h, esum, span, weights, f, code[e], p, C, missing)
    n = np.float64(pairs.shape[0])
    for j in range(n_drawn):
        f = drawn[j]
        if esum[f, C] < n:  # rows at the default: its bin the node's total minus the others
            d = default[f]
            for c in range(C):
                h[f, d, c] = P[c] - esum[f, c]
            _widen(span, f, d, missing)
    return n_drawn


@numba.njit(inline="always")
def _add_entry(h, esum, span, weights, f, b, p, C, missing):
    """Row ``p``'s channels to feature ``f``'s bin ``b`` and entry sums (:func:`_build_entries`)."""
    for c in range(C):
        w = weights[p, c]
        h[f, b, c] += w
        esum[f, c] += w
    esum[f, C] += 1.0
    _widen(span, f, b, missing)


@numba.njit(**JIT_LEAF)
def _entries_of(entries, rows, perm, a, b, trees, t):
    """How many entries :func:`_gather_entries` gathers."""
    ptr = entries[0]
    whole = trees[0]
    mult = _tree_mults(trees, t if whole else 0)[0]
    need = 0
    for q in range(mult.shape[0] if whole else b - a):
        if whole and not mult[q] > 0:
            continue
        r = q if whole else rows[perm[a + q]]
        need += ptr[r + 1] - ptr[r]
    return need


@numba.njit(**JIT_LEAF)
def _gather_entries(entries, rows, perm, a, b, trees, t, lptr, lfeat, lcode, lweights, weights, local):
    """:func:`_gather_tree` (``trees`` flagged: tree ``t``'s in-bag rows) or the pairs ``perm[a:b]`` (of ``rows``
    / ``weights``) gathered as entries: each row's ``entries`` (ptr, feat, code) to ``lptr`` / ``lfeat`` /
    ``lcode`` (room for :func:`_entries_of`), its channels to ``lweights``, numbered in ``local``. Returns how
    many rows."""
    ptr, feat, code, _ = entries
    whole = trees[0]
    mult, wmult, mode = _tree_mults(trees, t if whole else 0)
    chan = trees[4]
    C = lweights.shape[1]
    n_src = mult.shape[0] if whole else b - a
    k = 0
    e = 0
    for q in range(n_src):
        if whole and not mult[q] > 0:
            continue
        r = q if whole else rows[perm[a + q]]
        lptr[k] = e
        for j in range(ptr[r], ptr[r + 1]):
            lfeat[e] = feat[j]
            lcode[e] = code[j]
            e += 1
        for c in range(C):
            lweights[k, c] = pair_weight(chan, r, c, r, mult, wmult, mode) if whole else weights[perm[a + q], c]
        local[k] = k
        k += 1
    lptr[k] = e
    return k


@numba.njit(**JIT_LEAF)
def _search_node(n_drawn, C, P, crit, fmask, u, has_u, nb, thresholds, bin_values, is_exact, n_value_bins, tie_rtol,
                 scratch, h, fbest, left, record, is_cat, cat, local, span, rows):
    """:func:`_hist_node`'s scan of the node's built histograms ``h``; ``rows``: its ``codes``, ``pairs``,
    ``listing`` and whether ``codes`` holds the rows' codes (else shortcuts that read them are not taken:
    :func:`_entry_hist_node`)."""
    cat_keys, cat_order, cat_row, n_cat_pos = cat
    codes, pairs, (key, order, bins, count), by_rows = rows
    # few rows: a numerical feature's fast pass visits their codes only, not every bin up to the highest
    n_rows = pairs.shape[0]
    few = n_rows <= SMALL_SORT_ROWS
    F = h.shape[0]
    kind = crit[0]
    rec_ok, rec_bin, rec_p, rec_left = record
    # two or three classes, or squared error: fast_scan where no rows are missing
    fast = fast_pass(kind, C, has_u)
    mse = kind == SQUARED_ERROR
    P3 = P[3] if C == 4 else 0.0
    best = NEG_INF
    for f in range(F):
        fbest[f] = NEG_INF
        rec_ok[f] = False
        # one value code and no missing rows (or none but missing): no split on f, its bins not scanned
        if fmask[f] and (span[f, 1] > span[f, 0] or (span[f, 1] == span[f, 0] and has_rows(kind, h[f, nb - 1]))):
            n_scan = min(nb - 1, n_value_bins[f])
            if not is_cat[f]:
                n_scan = min(n_scan, span[f, 1] + 1)
            if is_cat[f] and has_u:
                # the candidate recorded (its codes sent left as bits where they fit): the search below reads it
                pick, fbest[f] = score_category_pick(h[f], P, crit, False, 0.0, 0.0, u[f], scratch, cat_keys,
                                                     cat_order, n_cat_pos, n_scan)
                rec_bin[f, 0] = pick
                rec_bin[f, 1] = _left_bits(h[f], cat_order, pick, n_scan) if n_cat_pos < 63 else -1
                if pick >= 0:
                    record_random(rec_p, rec_left, f, scratch[4], scratch[5][0], scratch[5][1])
            elif is_cat[f]:
                fbest[f] = scan_categorical(h[f], P, crit, False, 0.0, 0.0, u[f], has_u, NEG_INF, scratch, cat_keys,
                                            cat_order, n_cat_pos, n_scan)[0]
            elif has_u:
                # both variants recorded: the search below reads them
                pick = random_bin_within(h[f], span[f, 0], span[f, 1], nb, u[f])
                rec_bin[f, 0] = pick
                if 0 <= pick < n_scan:  # (no value rows: a pick past them, no candidate)
                    L, out = scratch[4], scratch[5]
                    rec_bin[f, 1] = _pick_sums(h[f], pick, span[f, 0], span[f, 1], codes, pairs, f, L, by_rows)
                    score_random_sides(L, out, has_rows(kind, h[f, nb - 1]), P, crit, False, 0.0, 0.0, scratch[1],
                                       scratch[3])
                    fbest[f] = max(out[0], out[1])
                    record_random(rec_p, rec_left, f, L, out[0], out[1])
            elif fast and not has_rows(kind, h[f, nb - 1]):
                n_listed = -1
                if by_rows and few and 4 * n_rows < n_scan:
                    n_listed = present_codes(codes, pairs, f, nb, key, order, count, bins)
                fb, ok, b, pj, l0, l1, l2, l3 = fast_scan(
                    h[f], P[0], P[1], P[2], P3, mse, crit[3], crit[4], tie_rtol, n_scan, scratch[4], scratch[5],
                    bins, n_listed)
                fbest[f], rec_ok[f], rec_bin[f, 0], rec_p[f, 0] = fb, ok, b, pj
                rec_left[f, 0, 0], rec_left[f, 0, 1], rec_left[f, 0, 2] = l0, l1, l2
                if C == 4:
                    rec_left[f, 0, 3] = l3
            else:
                fbest[f] = scan_feature(h[f], P, crit, False, 0.0, 0.0, 0.0, -1, NEG_INF, scratch, n_scan)[0]
            best = max(best, fbest[f])
    target = tie_target(best, tie_rtol)
    for f in range(F):
        if not (fbest[f] > NEG_INF and fbest[f] >= target):
            continue
        if rec_ok[f] and fbest[f] == best:
            # the first near-best feature holds the best: its record is what
            # the replay would find (no missing rows: recorded only then)
            b = rec_bin[f, 0]
            for c in range(C):
                left[c] = rec_left[f, 0, c]
            missing_left = left[0] > P[0] - left[0]
            threshold = node_threshold(h[f], nb, f, b, thresholds, bin_values, is_exact, n_value_bins, local)
            return True, rec_p[f, 0], f, b, missing_left, threshold, False
        if has_u and is_cat[f] and rec_bin[f, 1] >= 0:
            variant, p = recorded_random(rec_p, rec_left, f, target, left)
            missing_left = variant == 1 if has_rows(kind, h[f, nb - 1]) else left[0] > P[0] - left[0]
            for j in range(n_cat_pos):
                cat_row[j] = (rec_bin[f, 1] >> j) & 1 == 1
            return True, p, f, -1, missing_left, np.nan, True
        if has_u and not is_cat[f]:
            variant, p = recorded_random(rec_p, rec_left, f, target, left)
            b = rec_bin[f, 0]
            missing_left = variant == 1 if has_rows(kind, h[f, nb - 1]) else left[0] > P[0] - left[0]
            if local:  # the next value present in the node, found with the sums
                threshold = split_threshold(f, b, rec_bin[f, 1], True, thresholds, bin_values, is_exact)
            else:
                threshold = node_threshold(h[f], nb, f, b, thresholds, bin_values, is_exact, n_value_bins, local)
            return True, p, f, b, missing_left, threshold, False
        n_scan = min(nb - 1, n_value_bins[f])
        if is_cat[f]:
            p, b, variant, _ = scan_categorical(h[f], P, crit, False, 0.0, 0.0, u[f], has_u, target, scratch,
                                                cat_keys, cat_order, n_cat_pos, n_scan)
        else:
            p, b, variant = scan_feature(h[f], P, crit, False, 0.0, 0.0, 0.0, -1, target, scratch,
                                         min(n_scan, span[f, 1] + 1))
        if b < 0:
            continue
        for c in range(C):
            left[c] = scratch[3][c]
        if has_rows(kind, h[f, nb - 1]):
            missing_left = variant == 1
        else:  # no missing values in the node: NaN goes to the child with more rows
            missing_left = left[0] > P[0] - left[0]
        if is_cat[f]:
            # the codes sent left: the present categories up to the cut in the scan's order
            for j in range(n_cat_pos):
                cat_row[j] = False
            for j in range(b + 1):
                code = cat_order[j]
                cat_row[code] = code < n_scan and h[f, code, 0] > 0
            return True, p, f, -1, missing_left, np.nan, True
        threshold = node_threshold(h[f], nb, f, b, thresholds, bin_values, is_exact, n_value_bins, local)
        return True, p, f, b, missing_left, threshold, False
    return False, NEG_INF, 0, 0, False, np.inf, False


@numba.njit(inline="always")
def _left_bits(h, order, pick, n_valid):
    """The codes a categorical cut after sorted position ``pick`` sends left, as bits (code ``j``: bit ``j``): the
    present categories among ``order[:pick + 1]``, as the search writes them at the split. 0 without a cut."""
    bits = np.int64(0)
    for j in range(pick + 1):
        code = order[j]
        if code < n_valid and h[code, 0] > 0:
            bits |= np.int64(1) << code
    return bits


@numba.njit(inline="always")
def _pick_sums(h, pick, lo, hi, codes, pairs, f, L, by_rows):
    """An extremely randomised candidate's left statistics from a node's histogram ``h`` (nb, C) of feature
    ``f``: ``L[0]`` the bins ``lo .. pick`` (``lo``, ``hi``: the node's lowest and highest value codes), ``L[1]``
    those and the missing bin; returns the first bin after ``pick`` with rows (:func:`node_threshold`'s next).

    With fewer rows (``pairs`` of ``codes``, where ``by_rows``) than bins to add and uint8 codes, only the bins
    the rows fill are visited, in increasing order (their codes marked in four 64-bit words): the same adds,
    the empty bins' zeros left out, where a deep tree's small node would add a hundred empty bins a feature.
    """
    nb, C = h.shape
    n = pairs.shape[0]
    lo = min(lo, pick)  # (a node without value rows: lo the missing code)
    nxt = hi
    if by_rows and nb <= PRESENT_BINS and n < pick - lo:
        one = np.uint64(1)
        zero = np.uint64(0)
        words = (zero, zero, zero, zero)
        for k in range(n):
            b = np.int64(at(codes, at1(pairs, k), f))
            marked = mark_code(words, b)
            words = marked if b < nb - 1 else words  # not the missing code
        m0, m1, m2, m3 = words
        for c in range(C):
            L[0, c] = 0.0
        first = True
        for q in range(4):
            w = m0 if q == 0 else (m1 if q == 1 else (m2 if q == 2 else m3))
            while w != zero:
                b = q * 64 + np.int64(trailing_zeros(w))
                w &= w - one
                if b > pick:
                    if h[b, 0] > 0:
                        nxt = min(nxt, b)
                    continue
                for c in range(C):
                    L[0, c] = h[b, c] if first else L[0, c] + h[b, c]
                first = False
    else:
        bin_sums(h, lo, pick, L[0])
        for b in range(hi, pick, -1):
            if h[b, 0] > 0:
                nxt = b
    for c in range(C):
        L[1, c] = L[0, c] + h[nb - 1, c]
    return nxt


@numba.njit(**JIT_LEAF)
def _partition(codes, perm, a, b, f, bin_, missing_left, missing, cat, cat_row, tmp):
    """Stable partition of ``perm[a:b]`` (rows of ``codes``), left-going rows first; returns the right ones' start.

    ``cat``: a categorical split, the codes sent left ``cat_row``'s."""
    codes_t = codes.T  # the compiled tree's side rule reads codes feature-major
    n_left = 0
    n_right = 0
    for k in range(a, b):
        p = at1(perm, k)
        g = np.int64(goes_left(codes_t, p, f, bin_, missing_left, missing, cat, cat_row))
        n_left, n_right = _place(perm, tmp, a, n_left, n_right, p, g)
    return _join(perm, tmp, a, n_left, n_right)


@numba.njit(inline="always")
def _place(perm, tmp, a, n_left, n_right, p, g):
    """Row ``p`` of a stable partition of ``perm[a:]`` to the left rows (``g`` 1) or the right ones (``tmp``);
    returns both counts. Without branches (a row's side is as good as random): both destinations written,
    one kept (perm's lies at or before the row's own position)."""
    put1(perm, a + n_left, p)
    put1(tmp, n_right, p)
    return n_left + g, n_right + 1 - g


@numba.njit(inline="always")
def _join(perm, tmp, a, n_left, n_right):
    """The right rows (``tmp``) after the left ones; returns their start."""
    for k in range(n_right):
        perm[a + n_left + k] = tmp[k]
    return a + n_left


@numba.njit(inline="always")
def _code_goes_left(code, bin_, missing_left, missing, cat, cat_row):
    """:func:`gputrees.kernels.cpu.grow.goes_left`'s side of a code."""
    if code == missing:
        return missing_left
    if cat:
        return cat_row[code]
    return code <= bin_


@numba.njit(**JIT_LEAF)
def _partition_entries(ent, cols, mark, perm, a, b, f, bin_, missing_left, missing, cat, cat_row, tmp):
    """:func:`_partition` of a block held as entries (:func:`_entry_hist_node`), its rows' positions ``pos``
    (of ``cols``) kept. Where feature ``f`` has fewer entries than the node has rows, its rows with an entry
    are marked by their side (``mark``: zeros, left so) and the others take the default code's."""
    cptr, crow, ccode, pos = cols
    c0, c1 = cptr[f], cptr[f + 1]
    by_col = c1 - c0 < b - a
    if by_col:
        for e in range(c0, c1):
            p = crow[e]
            if a <= pos[p] < b:
                mark[p] = 1 if _code_goes_left(ccode[e], bin_, missing_left, missing, cat, cat_row) else 2
    d_left = _code_goes_left(ent[3][f], bin_, missing_left, missing, cat, cat_row)
    n_left = 0
    n_right = 0
    for k in range(a, b):
        p = at1(perm, k)
        if by_col:
            m = mark[p]
            g = np.int64(d_left if m == 0 else m == 1)
        else:
            g = np.int64(goes_left(ent, p, f, bin_, missing_left, missing, cat, cat_row))
        n_left, n_right = _place(perm, tmp, a, n_left, n_right, p, g)
    mid = _join(perm, tmp, a, n_left, n_right)
    for k in range(a, b):
        pos[perm[k]] = k
    if by_col:
        for e in range(c0, c1):
            mark[crow[e]] = 0
    return mid


@numba.njit(**JIT_LEAF)
def _sum_rows(weights, local, a, b, out):
    """``out`` (C,) = the sum of ``weights[local[a:b]]`` (rows in that order)."""
    C = weights.shape[1]
    if 3 <= C <= 6:  # in registers (see _hist_node)
        s0 = s1 = s2 = s3 = s4 = s5 = 0.0
        for k in range(a, b):
            r = at1(local, k)
            s0, s1, s2 = s0 + at(weights, r, 0), s1 + at(weights, r, 1), s2 + at(weights, r, 2)
            if C > 3:
                s3 = s3 + at(weights, r, 3)
            if C > 4:
                s4 = s4 + at(weights, r, 4)
            if C > 5:
                s5 = s5 + at(weights, r, 5)
        out[0], out[1], out[2] = s0, s1, s2
        if C > 3:
            out[3] = s3
        if C > 4:
            out[4] = s4
        if C > 5:
            out[5] = s5
        return
    for c in range(C):  # a channel at a time, its sum in a register
        s = 0.0
        for k in range(a, b):
            s += at(weights, at1(local, k), c)
        out[c] = s


@numba.njit(inline="always")
def _tree_mults(trees, t):
    """Tree ``t``'s multiplicities and weight multiplicities (rows of :func:`_tree_source`'s tuple) and the
    mode in which :func:`gputrees.kernels.cpu.pairs.pair_weight` (``pair_weight`` here) applies them (2: the
    weight multiplicity to the channels after the count; 1: the multiplicity to every channel), as the row
    set's pairs are weighted."""
    _, mult, wmult, has_wmult, _ = trees
    return mult[t], wmult[t], 2 if has_wmult else 1


@numba.njit(**JIT_LEAF)
def _gather_tree(codes, trees, t, lcodes, lweights, local):
    """Copy the in-bag rows of tree ``t`` (multiplicity above 0), in row order, to ``lcodes`` / ``lweights``
    (their codes and channels, multiplicities applied) and number them in ``local``; returns how many."""
    mult, wmult, mode = _tree_mults(trees, t)
    chan = trees[4]
    F = codes.shape[1]
    C = lweights.shape[1]
    k = 0
    for r in range(mult.shape[0]):
        if mult[r] > 0:
            for f in range(F):
                lcodes[k, f] = codes[r, f]
            for c in range(C):
                lweights[k, c] = pair_weight(chan, r, c, r, mult, wmult, mode)
            local[k] = k
            k += 1
    return k


@numba.njit(parallel=True, **JIT_NUMPY)
def _tree_sums(trees):
    """Each tree's channel sums (n_trees, C) over its in-bag rows, in row order: :func:`_gather_tree`'s
    channels summed as the row set's node sums add a node's pairs (one after the other, from 0)."""
    chan = trees[4]
    n_trees = trees[1].shape[0]
    C = chan.shape[1]
    out = np.zeros((n_trees, C + 8))  # a cache line of padding between trees (summed by two threads)
    for t in prange(n_trees):
        mult, wmult, mode = _tree_mults(trees, t)
        for r in range(mult.shape[0]):
            if mult[r] > 0:
                add_sums(out, t, chan, r, r, mult, wmult, mode)
    return out[:, :C]


def _tree_source(tree_rows=None):
    """The compiled kernels' tuple for :class:`TreeRows` (flag, mult, wmult, has_wmult, channels), or a flag-off
    tuple of dummies."""
    if tree_rows is None:
        one = np.ones((1, 1))
        return (False, one, one, False, one)
    f8 = np.float64
    mult = np.ascontiguousarray(tree_rows.multiplicity, dtype=f8)
    wm = tree_rows.weight_multiplicity
    return (True, mult, mult if wm is None else np.ascontiguousarray(wm, dtype=f8), wm is not None,
            np.ascontiguousarray(tree_rows.channels, dtype=f8))


@numba.njit(parallel=True, **JIT_NUMPY)
def _grow_subtrees(codes, rows, weights, perm, start, region, root_stats, root_depth, root_tree, root_key, total_weight,
                   crit, rules, k_features, allowed, has_allowed, has_u, root_hist, nb, thresholds, bin_values,
                   is_exact, n_value_bins, tie_rtol, task_order, n_workers, max_rows, trees, is_cat, n_cat_pos,
                   all_hist, local_thr, entries):
    """Grow every small node's subtree (see :func:`grow_subtrees`); node ``i``'s nodes go to ``region[i] ..``.

    Node ``i``'s pairs are ``perm[start[i] : start[i + 1]]`` (into ``rows``
    and ``weights``), or with ``trees`` (:func:`_tree_source`'s tuple, its
    flag set) the in-bag rows of tree ``root_tree[i]``, whose root it is
    (``rows``, ``weights``, ``perm`` and ``start`` then unused).

    ``n_workers`` workers take the nodes in ``task_order`` (the largest
    first) one at a time from a shared counter, so that a few large subtrees
    do not leave one thread with most of the work (as a fixed share of
    blocks can).

    A node is searched by histograms when it has as many rows as bins; with
    extremely randomised splits (``has_u``; the two searches place a random
    threshold differently) as the level-wise grower searches it: a root by
    histograms where ``root_hist[i]``, a pair of children when either has as
    many rows (count) as bins and may split, else by sorting. With
    ``all_hist`` (categorical features, ``is_cat``, scanned over their first
    ``n_cat_pos`` sorted categories) every node by histograms, thresholds
    local to the node where ``local_thr``, as the level-wise grower searches a
    batch with categories.
    ``entries``: the codes' :func:`gputrees.kernels.cpu.sparse_codes.layout_of`
    (mostly-default codes, a sparse X's), or empty arrays: with them, every
    node by histograms built from its rows' entries (:func:`_entry_hist_node`),
    the rows gathered as entries rather than as every feature's code.
    Each node's subtree is written to its own slots,
    so the result does not depend on which worker grew it.
    """
    m = root_stats.shape[0]
    C = weights.shape[1]
    F = codes.shape[1]
    kind, n_out = crit[0], crit[1]
    msl, mwl = crit[3], crit[4]
    min_samples_split, max_depth, min_decrease = rules
    missing = nb - 1
    n_slots = region[m]
    count = np.zeros(m, dtype=np.int64)
    parent = np.empty(n_slots, dtype=np.int64)
    depth = np.empty(n_slots, dtype=np.int64)
    key = np.empty(n_slots, dtype=np.uint64)
    stats = np.empty((n_slots, C))
    # uninitialised: every region has room for the most nodes its subtree can
    # have (a forest's batch: hundreds of MB), of which a few tenths are made;
    # each node's fields are set when it is made (_new_slot), so only those
    # pages are written
    split = np.empty(n_slots, dtype=np.bool_)
    feature = np.empty(n_slots, dtype=np.int64)
    bin_ = np.empty(n_slots, dtype=np.int64)
    missing_left = np.empty(n_slots, dtype=np.bool_)
    threshold = np.empty(n_slots)
    first_child = np.empty(n_slots, dtype=np.int64)
    use_hist = np.empty(n_slots, dtype=np.bool_)
    # categorical splits: the codes sent left (a category's code is below n_cat_pos), written at those splits only
    split_cat = np.empty(n_slots, dtype=np.bool_)
    cat_left = np.empty((n_slots, n_cat_pos), dtype=np.bool_)
    draw_mask = k_features < F or has_allowed
    sparse = entries[0].shape[0] > 0
    dense_rows = 1 if sparse else max_rows  # (rows gathered as entries: no block of every feature's code)
    next_task = np.zeros(1, dtype=np.int64)
    for _ in prange(n_workers):
        scratch = scan_scratch(nb + 1, C)  # candidates: at most one per code
        hbuf = np.zeros((F, nb, C))  # zeros between nodes (_hist_node clears what it fills)
        code_span = np.empty((F, 2), dtype=np.int64)
        left = np.empty(C)  # the searched node's left child's statistics
        sort_scratch = sorted_scratch(max_rows, nb, F, C)
        fbest = np.empty(F)
        drawn = np.empty(F, dtype=np.int64)
        fmask = np.ones(F, dtype=np.bool_)
        cat_keys = np.empty(max(n_cat_pos, 1))
        cat_order = np.empty(max(n_cat_pos, 1), dtype=np.int64)
        u = np.zeros(F)
        tmp = np.empty(max_rows, dtype=np.int64)
        stack = np.empty(2 * max_rows, dtype=np.int64)
        lo = np.empty(2 * max_rows, dtype=np.int64)  # each node's pairs: perm[lo : hi]
        hi = np.empty(2 * max_rows, dtype=np.int64)
        right = np.empty(C)
        rule_tmp = np.empty(C)  # the rules' work space (impurities)
        # the searched node's statistics and its children's, and its categorical split's codes sent left, in
        # this worker's arrays: a row of the shared tables taken as a view would count references on the
        # table's one counter from both threads, a contended atomic at every node
        node_stats = np.empty(C)
        child_stats = np.empty((2, C))
        cat_row = np.zeros(max(n_cat_pos, 1), dtype=np.bool_)
        # (and the read-only tables every node's search is passed, each call counting references on them)
        own_thresholds = thresholds.copy()
        own_bin_values = bin_values.copy()
        own_is_exact = is_exact.copy()
        own_n_value_bins = n_value_bins.copy()
        own_is_cat = is_cat.copy()
        # the searches' tuples of arrays built once: a tuple built at a call counts a reference on each array
        cat_args = (cat_keys, cat_order, cat_row, n_cat_pos)
        near_best = sort_scratch[4:8]
        listing = (sort_scratch[0], sort_scratch[1], sort_scratch[2], sort_scratch[3])
        # the node's pairs gathered once (codes of every feature, channels):
        # its whole subtree then reads them from one block, not from rows
        # scattered over the tables; ``local`` numbers them 0 .. n - 1
        lcodes = np.empty((dense_rows, F), dtype=codes.dtype)
        lweights = np.empty((max_rows, C))
        lptr = np.zeros(max_rows + 1 if sparse else 1, dtype=np.int64)
        lfeat = np.empty(0, dtype=entries[1].dtype)
        lcode = np.empty(0, dtype=entries[2].dtype)
        esum = np.zeros((F if sparse else 0, C + 1))
        # the block's entries by feature, each row's position, and the partition's marks (_partition_entries)
        cptr = np.zeros(F + 1 if sparse else 1, dtype=np.int64)
        cursor = np.empty(F if sparse else 0, dtype=np.int64)
        crow = np.empty(0, dtype=np.int64)
        ccode = np.empty(0, dtype=entries[2].dtype)
        pos = np.empty(max_rows if sparse else 0, dtype=np.int64)
        mark = np.zeros(max_rows if sparse else 0, dtype=np.int8)
        ident = np.arange(max_rows)
        local = np.empty(max_rows, dtype=np.int64)
        # the compact blocks (COMPACT_ROWS), one after the other in one array
        n_levels = len(COMPACT_ROWS)
        b_off = np.zeros(n_levels + 1, dtype=np.int64)
        for v in range(n_levels):
            b_off[v + 1] = b_off[v] + min(dense_rows, COMPACT_ROWS[v])
        bcodes = np.empty((b_off[n_levels], F), dtype=codes.dtype)
        bweights = np.empty((b_off[n_levels], C))
        b_lo = np.zeros(n_levels, dtype=np.int64)  # the positions (of ``local``) each block holds
        b_hi = np.zeros(n_levels, dtype=np.int64)
        held = 0  # blocks in use (the outer ones first)
        while True:
            q = take_next(next_task)
            if q >= m:
                break
            i = task_order[q]
            base = region[i]
            t = root_tree[i]
            tree_allowed = allowed[t if has_allowed else 0]  # (a view a subtree, not a node)
            if sparse:
                need = _entries_of(entries, rows, perm, start[i], start[i + 1], trees, t)
                if need > lfeat.shape[0]:
                    lfeat = np.empty(need + need // 4, dtype=lfeat.dtype)
                    lcode = np.empty(need + need // 4, dtype=lcode.dtype)
                    crow = np.empty(need + need // 4, dtype=np.int64)
                    ccode = np.empty(need + need // 4, dtype=lcode.dtype)
                n_rows = _gather_entries(entries, rows, perm, start[i], start[i + 1], trees, t, lptr, lfeat, lcode,
                                         lweights, weights, local)
                _columns(lptr, lfeat, lcode, n_rows, (cptr, crow, ccode, pos), cursor)
            elif trees[0]:
                n_rows = _gather_tree(codes, trees, t, lcodes, lweights, local)
            else:
                n_rows = start[i + 1] - start[i]
                for k in range(n_rows):
                    p = perm[start[i] + k]
                    r = rows[p]
                    for f in range(F):
                        lcodes[k, f] = codes[r, f]
                    for c in range(C):
                        lweights[k, c] = weights[p, c]
                    local[k] = k
            # (a task's: its block's arrays may have been widened)
            block_entries = (lptr, lfeat, lcode, entries[3])
            block_columns = (cptr, crow, ccode, pos)
            _new_slot(base, split, feature, bin_, missing_left, threshold, first_child, split_cat)
            parent[base] = -1
            depth[base] = root_depth[i]
            key[base] = root_key[i]
            use_hist[base] = root_hist[i]
            for c in range(C):
                stats[base, c] = root_stats[i, c]
            lo[0] = 0
            hi[0] = n_rows
            held = 0
            n = 1
            stack[0] = 0
            top = 1
            while top > 0:
                top -= 1
                j = stack[top]
                g = base + j
                for c in range(C):
                    node_stats[c] = stats[g, c]
                P = node_stats
                if not can_split(kind, P, depth[g], n_out, msl, mwl, min_samples_split, max_depth, rule_tmp):
                    continue
                if draw_mask:
                    draw_features(key[g], k_features, tree_allowed, has_allowed, u, fmask)
                if has_u:
                    for f in range(F):
                        if fmask[f]:  # (the drawn features' only: hundreds of features, a few drawn)
                            u[f] = uniform(key[g], F + f)
                # the node's rows read from the innermost compact block that
                # holds them (a block's subtree is grown before any node
                # outside it: the stack is depth-first); copied into the next
                # blocks once they fit
                while held > 0 and not (b_lo[held - 1] <= lo[j] and hi[j] <= b_hi[held - 1]):
                    held -= 1
                cod, wts = lcodes, lweights
                if held > 0:
                    cod = bcodes[b_off[held - 1]:b_off[held]]
                    wts = bweights[b_off[held - 1]:b_off[held]]
                while not sparse and held < n_levels and hi[j] - lo[j] <= COMPACT_ROWS[held]:
                    dst_c = bcodes[b_off[held]:b_off[held + 1]]
                    dst_w = bweights[b_off[held]:b_off[held + 1]]
                    _compact(cod, wts, local, lo[j], hi[j], dst_c, dst_w)
                    cod, wts = dst_c, dst_w
                    b_lo[held], b_hi[held] = lo[j], hi[j]
                    held += 1
                pairs = local[lo[j]:hi[j]]
                if sparse:
                    found, p, f, code, ml, thr, is_c = _entry_hist_node(
                        block_entries, block_columns, lo[j], hi[j], cod, wts, pairs, P,
                        crit, fmask, u, has_u, nb, own_thresholds, own_bin_values, own_is_exact, own_n_value_bins,
                        tie_rtol, scratch,
                        hbuf, fbest, left, drawn,
                        near_best, own_is_cat, cat_args, local_thr, code_span, listing, esum)
                elif all_hist or (use_hist[g] if has_u else hi[j] - lo[j] >= nb):
                    # as many rows as bins: histograms, as the level-wise grower searches such nodes
                    found, p, f, code, ml, thr, is_c = _hist_node(
                        cod, wts, pairs, P, crit, fmask, u, has_u, nb, own_thresholds, own_bin_values, own_is_exact,
                        own_n_value_bins, tie_rtol, scratch, hbuf, fbest, left, drawn, near_best, own_is_cat,
                        cat_args, local_thr, code_span, listing)
                else:
                    found, p, f, code, ml, thr = sorted_node(
                        cod, ident, wts, pairs, P, crit, fmask, draw_mask, u, has_u, nb, own_thresholds,
                        own_bin_values, own_is_exact, tie_rtol, scratch, sort_scratch, fbest, left)
                    is_c = False
                if not found:
                    continue
                for c in range(C):
                    right[c] = P[c] - left[c]
                imp = impurity_improvement(kind, P, left, right, n_out, total_weight[t], rule_tmp)
                if not impurity_accept(imp, min_decrease):
                    continue
                split[g] = True
                feature[g] = f
                bin_[g] = code
                missing_left[g] = ml
                threshold[g] = thr
                split_cat[g] = is_c
                first_child[g] = n
                if sparse:
                    mid = _partition_entries(block_entries, block_columns, mark, local,
                                             lo[j], hi[j], f, code, ml, missing, is_c, cat_row, tmp)
                else:
                    mid = _partition(cod, local, lo[j], hi[j], f, code, ml, missing, is_c, cat_row, tmp)
                if is_c:
                    for q in range(n_cat_pos):
                        cat_left[g, q] = cat_row[q]
                for side in range(2):
                    h = base + n + side
                    _new_slot(h, split, feature, bin_, missing_left, threshold, first_child, split_cat)
                    parent[h] = j
                    depth[h] = depth[g] + 1
                    key[h] = child_key(key[g], side)
                    lo[n + side] = lo[j] if side == 0 else mid
                    hi[n + side] = mid if side == 0 else hi[j]
                    _sum_rows(wts, local, lo[n + side], hi[n + side], child_stats[side])
                    for c in range(C):
                        stats[h, c] = child_stats[side, c]
                if has_u:
                    pair_hist = False
                    for side in range(2):
                        h = base + n + side
                        pair_hist = pair_hist or (stats[h, 0] >= nb and can_split(
                            kind, child_stats[side], depth[h], n_out, msl, mwl, min_samples_split, max_depth,
                            rule_tmp))
                    use_hist[base + n] = pair_hist
                    use_hist[base + n + 1] = pair_hist
                stack[top] = n + 1
                stack[top + 1] = n
                top += 2
                n += 2
            count[i] = n
    return (count, parent, depth, key, stats, split, feature, bin_, missing_left, threshold, first_child, split_cat,
            cat_left)


@numba.njit(inline="always")
def _new_slot(g, split, feature, bin_, missing_left, threshold, first_child, split_cat):
    """A new node's split fields in slot ``g``: not split, the rule's fields 0."""
    split[g] = False
    split_cat[g] = False
    feature[g] = 0
    bin_[g] = 0
    missing_left[g] = False
    threshold[g] = 0.0
    first_child[g] = 0


#: Rows up to which a node's rows are copied, in order, from the subtree's
#: gathered block (a whole tree's rows) to a compact block that the node's
#: whole subtree reads, and from there to the next (decreasing sizes):
#: 4096 rows of 28 codes and 3 channels are 213 KB, within the L2 cache, 256
#: rows 13 KB, within the L1 cache, where a deep node's rows scattered over
#: the gathered block (a whole tree's rows, megabytes) would be reads from the L3 cache.
COMPACT_ROWS = (32768, 4096, 256)


@numba.njit(**JIT_LEAF)
def _compact(codes, weights, local, a, b, ccodes, cweights):
    """Copy the rows ``local[a:b]`` of ``codes`` / ``weights`` to rows ``0 .. b - a - 1`` of ``ccodes`` /
    ``cweights``, in that order, and number them so in ``local[a:b]``."""
    F = codes.shape[1]
    C = weights.shape[1]
    for k in range(a, b):
        p = at1(local, k)
        for f in range(F):
            ccodes[k - a, f] = at(codes, p, f)
        for c in range(C):
            cweights[k - a, c] = at(weights, p, c)
        local[k] = k - a


def _regions(n_rows, depth, max_depth: int):
    """Start (m + 1,) int64 of each subtree's node slots: room for every node it can have.

    A subtree of n rows has at most 2 n - 1 nodes (every leaf holds a row),
    and under ``max_depth`` (-1: none) at most ``2 ** (max_depth - depth + 1) - 1``.
    """
    room = 2 * n_rows
    if max_depth >= 0:
        levels = np.clip(max_depth - depth + 1, 0, 62)
        room = np.minimum(room, np.left_shift(np.int64(1), levels))
    region = np.zeros(n_rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(room, out=region[1:])
    return region


def covers(criterion, n_channels: int, bin_mapper) -> bool:
    """Whether :func:`grow_subtrees` grows subtrees with this criterion and bin mapper."""
    return criterion_code(criterion) in SUBTREE_CRITERIA and supported_criterion(criterion, n_channels) and has_values(
        bin_mapper
    )


def tree_sums(tree_rows: TreeRows, *, n_threads: int = 1):
    """Each tree's channel sums (n_trees, C), float64, over its in-bag rows (multiplicities applied).

    The sums the row set's node sums give the roots (pairs added in row
    order, one after the other), without making the pairs.
    """
    source = _tree_source(tree_rows)
    n_trees, n = source[1].shape
    with Threads(max(1, min(threads_for(n_threads, n_trees * n), n_trees))):
        return _tree_sums(source)


@dataclass(frozen=True)
class SubtreeKernel:
    """The set's subtree kernel (``FastPaths.subtrees``): :func:`grow_subtrees` on ``n_threads``, what it covers,
    and :meth:`layout` of the batches it grew.

    Also, for a batch whose trees all grow here from their roots,
    :meth:`tree_sums` (their roots' statistics) and :func:`grow_subtrees`'s
    ``tree_rows``: the trees' rows read from the multiplicities, without
    the row set's arrays of pairs.
    """

    n_threads: int = 1

    def covers(self, criterion, n_channels: int, bin_mapper) -> bool:
        return covers(criterion, n_channels, bin_mapper)

    def tree_sums(self, tree_rows: TreeRows):
        return tree_sums(tree_rows, n_threads=self.n_threads)

    def from_entries(self, codes, n_bins: int) -> bool:
        """Whether the kernel grows these codes' nodes from their rows' entries (mostly-default codes, a sparse
        X's): a node then costs its entries, not its rows times its features, and the deep lopsided trees of
        such data are best grown whole here rather than level by level."""
        return layout_of(codes, int(n_bins)) is not None

    def __call__(self, *args, **kwargs):
        return grow_subtrees(*args, **kwargs, n_threads=self.n_threads)

    def layout(self, *args):
        """:func:`layout_grouped` on ``n_threads``."""
        return layout_grouped(*args, n_threads=self.n_threads)


def grow_subtrees(xp, codes, rows, slot, weights, stats, depth, tree, keys, total_weight, criterion, cons,
                  params: SubtreeParams, bin_mapper, tree_features=None, random_splits=False, *,
                  n_threads: int = 1, tree_rows: "TreeRows | None" = None, root_histograms=None):
    """Grow the whole subtree of each of m small nodes, or (``tree_rows``) of m trees from their roots.

    Parameters
    ----------
    codes : ndarray of shape (n_samples, n_features), uint8/uint16
    rows : ndarray of shape (n_pairs,), int64
        Rows of the nodes' (tree, row) pairs.
    slot : ndarray of shape (n_pairs,), int64
        Node (0 <= slot < m) of each pair.
    weights : ndarray of shape (n_pairs, C), float64
        The pairs' channels, multiplicities applied.
    stats : ndarray of shape (m, C), float64
    depth, tree : ndarray of shape (m,), int64
    keys : ndarray of shape (m,), uint64
        The nodes' draw keys.
    total_weight : ndarray of shape (n_trees,), float64
        Each tree's root weight (the improvement's ``W``).
    criterion, cons
        As for :func:`gputrees._sorted_split.find_best_splits_sorted`.
    params : SubtreeParams
    bin_mapper : BinMapper
    tree_features : ndarray of shape (n_trees, n_features), bool, or None
    random_splits : bool
        Extremely randomised thresholds.
    root_histograms : ndarray of shape (m,), bool, or None
        With ``random_splits``: the nodes the level-wise grower would search
        by histograms (roots; a pair of which a child has as many rows as
        bins and may split); None: none.
    tree_rows : TreeRows or None
        Instead of ``rows``, ``slot`` and ``weights`` (then None): node ``i``
        is the root of tree ``tree[i]`` (with ``depth[i]`` 0), its pairs that
        tree's in-bag rows, gathered by each task from the multiplicities
        (no array of every pair is made).

    Returns
    -------
    Subtrees, or None where the criterion or mapper is not covered (:func:`covers`).
    """
    m = int(stats.shape[0])
    n_channels = int((weights if tree_rows is None else tree_rows.channels).shape[1])
    if m == 0 or not covers(criterion, n_channels, bin_mapper):
        return None
    f8 = np.float64
    source = _tree_source(tree_rows)
    if tree_rows is None:
        perm, start, threads, _ = node_tasks(slot, m, int(codes.shape[1]), n_threads)
        n_rows = np.diff(start)
    else:
        tree = np.asarray(tree, dtype=np.int64)
        n_rows = np.count_nonzero(source[1] > 0, axis=1).astype(np.int64)[tree]
        perm, start = np.zeros(1, dtype=np.int64), np.zeros(m + 1, dtype=np.int64)
        threads = threads_for(n_threads, int(n_rows.sum()) * int(codes.shape[1]) * UPDATES_PER_CODE)
        rows, weights = perm, np.zeros((1, n_channels))
    region = _regions(n_rows, np.asarray(depth, dtype=np.int64), params.max_depth)
    has_allowed = tree_features is not None
    is_cat = np.ascontiguousarray(bin_mapper.is_categorical, dtype=np.bool_)
    any_cat = bool(is_cat.any())
    n_cat_pos = mapper_category_positions(bin_mapper)
    entries = layout_of(codes, int(bin_mapper.n_bins))
    if entries is None:
        entries = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int32), np.empty(0, dtype=codes.dtype),
                   np.empty(0, dtype=np.int64))
    with Threads(threads):
        out = _grow_subtrees(
            codes,
            np.asarray(rows, dtype=np.int64),
            np.ascontiguousarray(weights, dtype=f8),
            perm,
            start,
            region,
            np.ascontiguousarray(stats, dtype=f8),
            np.asarray(depth, dtype=np.int64),
            np.asarray(tree, dtype=np.int64),
            np.asarray(keys, dtype=np.uint64),
            np.ascontiguousarray(total_weight, dtype=f8),
            criterion_record(criterion, cons),
            (float(params.min_samples_split), int(params.max_depth), float(params.min_impurity_decrease)),
            int(params.max_features),
            np.ascontiguousarray(tree_features, dtype=np.bool_) if has_allowed else np.ones((1, 1), dtype=np.bool_),
            has_allowed,
            bool(random_splits),
            np.zeros(m, dtype=np.bool_) if root_histograms is None else np.asarray(root_histograms, dtype=np.bool_),
            int(bin_mapper.n_bins),
            *mapper_arrays(bin_mapper),
            TIE_RTOL,
            np.argsort(-n_rows, kind="stable"),
            min(m, threads),
            max(int(n_rows.max()), 1),
            source,
            is_cat,
            n_cat_pos,
            any_cat,
            bool(params.local_thresholds) or not any_cat,
            entries,
        )
    return Subtrees(region, out[0], np.asarray(tree, dtype=np.int64), *out[1:])


# -- the padded layout of a batch whose nodes were partly grown here ---------------
@numba.njit(parallel=True, **JIT_NUMPY)
def _layout_grouped(parent, depth, tree, stats, split_ids, rec_feature, rec_bin, rec_missing_left, rec_threshold,
                    split_first_child, n_trees, rec_cat, rec_cat_left):
    """Every tree's nodes numbered breadth-first and laid out padded (see :func:`layout_grouped`)."""
    n = parent.shape[0]
    C = stats.shape[1]
    rec = np.full(n, -1, dtype=np.int64)
    for k in range(split_ids.shape[0]):
        rec[split_ids[k]] = k
    count = np.zeros(n_trees, dtype=np.int64)
    root = np.full(n_trees, -1, dtype=np.int64)
    for i in range(n):
        count[tree[i]] += 1
        if parent[i] < 0:
            root[tree[i]] = i
    first = np.zeros(n_trees + 1, dtype=np.int64)
    width = 1
    for t in range(n_trees):
        first[t + 1] = first[t] + count[t]
        width = max(width, count[t])
    order = np.empty(n, dtype=np.int64)  # each tree's old ids, breadth-first, at first[t]:
    left = np.empty((n_trees, width), dtype=np.int64)
    feature = np.empty((n_trees, width), dtype=np.int64)
    bin_ = np.empty((n_trees, width), dtype=np.int64)
    missing_left = np.empty((n_trees, width), dtype=np.bool_)
    threshold = np.empty((n_trees, width), dtype=np.float64)
    st = np.empty((n_trees, width, C), dtype=np.float64)
    dep = np.empty((n_trees, width), dtype=np.int64)
    is_cat = np.zeros((n_trees, width), dtype=np.bool_)
    n_cat = rec_cat_left.shape[1]
    cat_left = np.zeros((n_trees, width, n_cat), dtype=np.bool_)
    for t in prange(n_trees):
        base = first[t]
        # a queue over the tree: a split node's children (consecutive ids,
        # left first) join it as it is reached, and each position is written
        # as it is reached (its left child's position is the queue's end then)
        order[base] = root[t]
        end = 1
        for p in range(width):
            node = order[base + p] if p < count[t] else -1  # -1: padding
            k = rec[node] if node >= 0 else -1
            if k >= 0:
                order[base + end] = split_first_child[k]
                order[base + end + 1] = split_first_child[k] + 1
                left[t, p] = end
                end += 2
                feature[t, p] = rec_feature[k]
                bin_[t, p] = rec_bin[k]
                missing_left[t, p] = rec_missing_left[k]
                threshold[t, p] = rec_threshold[k]
                is_cat[t, p] = rec_cat[k]
                for b in range(n_cat):
                    cat_left[t, p, b] = rec_cat_left[k, b]
            else:  # a leaf or padding
                left[t, p] = -1
                feature[t, p] = -2
                bin_[t, p] = -1
                missing_left[t, p] = False
                threshold[t, p] = -2.0
            for c in range(C):
                st[t, p, c] = stats[node, c] if node >= 0 else 0.0
            dep[t, p] = depth[node] if node >= 0 else 0
    return count, left, feature, bin_, missing_left, threshold, st, dep, is_cat, cat_left


def layout_grouped(xp, n_trees, parent, depth, tree, stats, split_ids, record, split_first_child, *,
                   n_threads: int = 1):
    """A batch's padded node arrays, every tree's nodes numbered breadth-first, in one compiled pass.

    The grower's twin: :meth:`gputrees._grower.Grower._breadth_first` then
    ``_finalize_grouped`` (sorts and gathers over every node of the batch,
    a sizeable share of a forest's fit). Each tree is walked from its root
    with a queue, in parallel over trees.

    Parameters
    ----------
    xp : array namespace (NumPy)
    n_trees : int
    parent, depth, tree : ndarray of shape (n_nodes,), int64
        Every node by id (parent -1 at a root); a split node's children have
        consecutive ids, left first.
    stats : ndarray of shape (n_nodes, C), float64
    split_ids : ndarray of shape (n_split,), int64
        The split nodes' ids, in the order of ``record``'s rows.
    record : SplitRecord or any record with its fields ``feature``, ``bin``, ``missing_left``, ``threshold``,
        ``is_categorical`` and ``cat_left``
        Their splits (those fields read; the grower passes only them).
    split_first_child : ndarray of shape (n_split,), int64
        Each split node's left child's id.

    Returns
    -------
    tuple
        ``node_count`` (n_trees,) int64, then (n_trees, width) arrays:
        ``left`` (positions in the tree, -1 at leaves and padding), ``feature``
        (-2), ``bin`` (-1), ``missing_left`` (False), ``threshold`` (-2.0),
        ``stats`` (n_trees, width, C) (0.0), ``depth`` (0), ``is_categorical``
        (False), ``cat_left`` (n_trees, width, the record's columns) (False);
        the fills of the leaves and the padding in brackets.
    """
    i8, f8 = np.int64, np.float64
    threads = max(1, min(int(n_threads), int(n_trees)))
    with Threads(threads):
        return _layout_grouped(
            np.asarray(parent, dtype=i8), np.asarray(depth, dtype=i8), np.asarray(tree, dtype=i8),
            np.ascontiguousarray(stats, dtype=f8), np.asarray(split_ids, dtype=i8),
            np.asarray(record.feature, dtype=i8), np.asarray(record.bin, dtype=i8),
            np.asarray(record.missing_left, dtype=np.bool_), np.asarray(record.threshold, dtype=f8),
            np.asarray(split_first_child, dtype=i8), int(n_trees),
            np.asarray(record.is_categorical, dtype=np.bool_), np.ascontiguousarray(record.cat_left, dtype=np.bool_),
        )
