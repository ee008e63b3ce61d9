"""The batched grower: grows a batch of trees, all nodes of a round at once.

A *round* expands a set of frontier nodes of every tree of the batch:

1. route the rows of the expanded nodes to their children (array ops over
   the active rows; no loop over rows, nodes, features or trees) and sum the
   children's channels from their rows, or, for boosting's criterion, take
   them from the split (``Criterion.stats_from_split``);
2. build the histogram of the smaller child of each sibling pair with one
   kernel call, and get the larger one by subtracting it from the parent's
   histogram (kept from the previous round when it fits the memory bound);
   with per-node feature draws of at most half the features (random
   forests), both children are built over their own drawn features instead
   (``DRAWN_BUILD_SHARE``); pairs whose children both have fewer rows than bins skip histograms and
   use the sort-based search of :mod:`gputrees._sorted_split` (numerical
   data), or, with a kernel set that grows whole subtrees
   (``FastPaths.subtrees``, the Numba set), hand those children (and
   those of pairs below ``SUBTREE_BELOW_BINS`` times the bins, at least
   ``SUBTREE_MIN_BINS`` counted, and with
   drawn features or extremely randomised thresholds every pair of a round
   that has ``SUBTREE_PAIRS_PER_THREAD`` pairs per thread) to it:
   their subtrees are grown depth-first in one compiled call, split for split
   what the following rounds would grow, and their rows leave the active set
   at once (nodes are numbered breadth-first at the end, as the rounds number
   theirs). A forest's batch with that many trees per thread goes there
   whole from its roots, its rows read from the multiplicities
   (``Grower._whole_trees``): no row set is made;
3. find the best split of every new node (:mod:`gputrees._splitting`);
4. keep the splittable new nodes as the next frontier; rows of nodes that
   became leaves leave the active set.

The grower is the *node side*: it sees node statistics and histograms only.
Every pass over rows (steps 1, 2 and the leaf of every row) goes through a
row set (:mod:`gputrees._rows`): :class:`~gputrees._rows.LocalRows` beside
the data, or the workers of a Dask cluster (:mod:`gputrees.dask`).

Depth-wise growth (the default) expands the whole frontier each round, so a
round is a tree level. Best-first growth (``max_leaf_nodes``, as in
scikit-learn) expands, each round, the frontier nodes that can still be among
the ``max_leaf_nodes - 1`` splits chosen by scikit-learn's greedy rule
("split the leaf of largest impurity improvement next"); a small host-side
simulation over the nodes' improvements then picks exactly the splits that
sequential greedy growth would make, and speculative children of nodes it did
not pick are discarded. Ties of improvement go to the older node.

Memory bound
------------
The histograms of one round are processed in chunks of sibling pairs so
that a chunk's histograms and split scan use at most ``memory_limit`` bytes
(about ``SCAN_FACTOR`` times the histogram itself). Parent histograms are kept
for the subtraction trick only while the whole frontier's histograms fit in
``memory_limit``; past that (very deep trees, thousands of nodes per level),
children are built directly from their rows, chunk by chunk. The sort-based
search of small nodes is batched the same way (about ``(6 * n_channels + 8)
* 8`` bytes per row and feature). Peak extra memory is therefore about
``memory_limit`` plus O(n_rows) for the row routing.

Random draws (``max_features``, extremely randomised thresholds) are keyed by
each node's path from its root (:mod:`gputrees.kernels.node_draws`), so a node draws
the same whether a round or a compiled subtree grows it.

Host synchronisations: a few per round, each reading a few numbers or a
node-sized array: the number of active rows and of frontier nodes (sizes of
the next arrays), the first id of the nodes a slot table covers, the node
runs when finished nodes' rows retire (:class:`~gputrees._rows.LocalRows`);
and one per chunk.
"""

from __future__ import annotations

import dataclasses
import heapq
from dataclasses import dataclass

import numpy as np

from .kernels import node_draws
from ._backend import from_numpy, to_numpy
from ._node_columns import NodeColumns
from ._sorted_split import BYTES_PER_PAIR, BYTES_PER_PAIR_CHANNEL, find_best_splits_sorted
from ._records import (
    DRAWN_BUILD_SHARE, GrowerInputs, GrowerParams, LeafLayout, SplitConstraints, SplitRecord, SubtreeParams,
    TreeBatch, TreeRows, batch_trees, category_width, given_root_sums, mapper_category_positions,
    narrow_categories, unit_counts,
)
from ._splitting import _clamp, find_best_splits
from ._rows import LocalRows
from .kernels.reference import children_slot_table, take_features

#: Working arrays of the split scan per byte of histogram (cumulative sums,
#: left/right statistics for both missing-value directions, proxies, masks).
SCAN_FACTOR = 7
#: With a kernel set that grows whole subtrees (``FastPaths.subtrees``),
#: children of pairs both below this many times the bins are grown to the
#: end in it, from their rows, instead of level by level with histograms
#: (below 1x the bins the level-wise search is sort-based too): larger nodes'
#: sorts cost more than their histograms, and a lower bound leaves more levels
#: to the level-wise growth's per-level work.
SUBTREE_BELOW_BINS = 8
#: The bins counted as at least this many there: features of a few distinct
#: values have a few bins (15 on values rounded to -6 .. 6), and eight times
#: that leaves nodes of hundreds of rows to rounds whose per-level work (a few
#: array passes and dozens of NumPy calls) is most of a small tree's fit (the
#: kernel searches nodes of as many rows as bins by histograms, as the rounds
#: do). 1,000 x 10 such rows, one tree: 4-5x scikit-learn's time handed over
#: at 120 rows, 1.3-1.7x at 4,096; a 10,000-row forest regressor 0.87x -> 0.59x.
SUBTREE_MIN_BINS = 512
#: With per-node feature draws built over the drawn features (random
#: forests), or with extremely randomised thresholds (extra trees, any
#: ``max_features``), a round with at least this many sibling pairs per thread of the
#: subtree kernel hands all of them to it: their subtrees are grown to the end,
#: their large nodes by histograms over the drawn features as the rounds
#: would build them, without the rounds' passes over every active row. Extra
#: trees' random cuts are lopsided: the rounds' levels, each a pass over every
#: active row, outnumber a forest's (depth 44 on 8,000 rows of a few distinct
#: values), and cost more than the kernel's histograms of both children
#: (extra-trees regression, 10,000 x 10: 2.6x scikit-learn's time by rounds, 1.9x whole).
SUBTREE_PAIRS_PER_THREAD = 8
#: Cells (rows x features) up to which a single tree the subtree kernel covers grows whole there from its
#: root: below, the root level's array operations cost more than the kernel's slower search of the top nodes
#: (500 x 10: 0.15-0.3 ms of 2-3 ms saved; at 1,000 x 10 even, beyond slower: the level-wise top nodes use
#: both threads)
WHOLE_TREE_CELLS = 6000
#: Bytes per (tree, row) pair of a subtree kernel's call, plus this many per
#: channel: its two node slots per pair (eight 8-byte fields, two flags, the
#: statistics and left sums), the grower's records of them, and the pairs' rows,
#: slots, order and channels. Calls are batched under ``memory_limit``.
SUBTREE_PAIR_BYTES = 400
SUBTREE_PAIR_CHANNEL_BYTES = 80


@dataclass(frozen=True)
class _Frontier:
    """Splittable nodes not yet expanded, sorted by id (device arrays, length p).

    ``hist`` holds the histograms kept for the subtraction trick (h of them):
    one array, or a tuple of arrays whose rows are numbered one after the
    other (the chunks of a level, not concatenated: a copy of every kept
    histogram, which on a forest's levels is hundreds of megabytes); and
    ``hist_index`` (p,) the position of each node's histogram there, or -1.
    """

    ids: object
    depth: object
    tree: object
    stats: object
    improvement: object
    split: object  # SplitRecord restricted to these nodes
    hist: object  # (h, F, B, C), a tuple of (h_i, F, B, C) (h = sum h_i), or None
    hist_index: object  # (p,) int64
    bounds: object = None  # (p, 2) float64 value bounds (monotonic constraints) or None


@dataclass(frozen=True)
class _Draws:
    """Host random draws of a set of nodes (rows in node order).

    mask : ndarray of shape (m, F), bool, or None
        Features each node may split on (``max_features``); None: all.
    u : ndarray of shape (m, F), float64, or None
        Uniforms of the extremely randomised thresholds; None: best splits.
    """

    mask: object
    u: object

    def take(self, idx) -> "_Draws":
        """The draws of the nodes at positions ``idx`` (host ints or a device array)."""
        idx = to_numpy(idx)
        return _Draws(
            None if self.mask is None else self.mask[idx],
            None if self.u is None else self.u[idx],
        )


def _lookup(xp, sorted_ids, query):
    """Position of each ``query`` in ``sorted_ids`` and whether it is there."""
    if sorted_ids.shape[0] == 0:
        return xp.zeros(query.shape, dtype=xp.int64), xp.zeros(query.shape, dtype=xp.bool)
    pos = xp.astype(xp.searchsorted(sorted_ids, query), xp.int64)
    # searchsorted gives 0 .. n: only the top needs clamping (xp.minimum, not
    # array-api-compat's clip, many times dearer a call, with thousands of calls a fit)
    pos = xp.minimum(pos, xp.asarray(sorted_ids.shape[0] - 1, dtype=xp.int64))
    return pos, xp.take(sorted_ids, pos) == query


def _slot_table(xp, sorted_ids, n_ids: int):
    """Position of every node id ``0 .. n_ids - 1`` in ``sorted_ids``, or -1 (int64, length ``n_ids``).

    Only the ids from the smallest of ``sorted_ids`` on are looked up (one
    host read of it): the nodes asked about are recent ones (a frontier),
    while a deep forest has created hundreds of thousands before them, whose
    lookups would be paid again every level.
    """
    if int(sorted_ids.shape[0]) == 0:
        return xp.full((n_ids,), -1, dtype=xp.int64)
    lo = min(int(sorted_ids[0]), n_ids)
    pos, hit = _lookup(xp, sorted_ids, xp.arange(lo, n_ids, dtype=xp.int64))
    found = xp.where(hit, pos, xp.asarray(-1, dtype=xp.int64))
    return xp.concat([xp.full((lo,), -1, dtype=xp.int64), found]) if lo else found


def _rows_at(xp, a, idx):
    """Rows ``idx`` of ``a`` (along axis 0), or ``a`` itself when ``idx`` is None (every row, no gather)."""
    return a if idx is None else xp.take(a, idx, axis=0)


def _take_record(xp, rec, idx):
    """Rows ``idx`` of every array of a SplitRecord (``rec`` itself when ``idx`` is None)."""
    if idx is None:
        return rec
    return SplitRecord(
        **{k: xp.take(getattr(rec, k), idx, axis=0) for k in rec.__dataclass_fields__}
    )


def _concat_records(xp, recs):
    return SplitRecord(
        **{k: xp.concat([getattr(r, k) for r in recs], axis=0) for k in recs[0].__dataclass_fields__}
    )


@dataclass(frozen=True)
class _SplitRules:
    """The fields of the expanded nodes' split records that a batch's grouped layout reads.

    Attributes
    ----------
    feature, bin : (k,) int64
    missing_left : (k,) bool
    threshold : (k,) float64
    is_categorical : (k,) bool
    cat_left : (k, width) bool: the batch's columns (:func:`~gputrees._records.category_width`), or a column
        per bin (a level's records, cut by :func:`_concat_rules`); (k, 0) without categorical features
    """

    feature: object
    bin: object
    missing_left: object
    threshold: object
    is_categorical: object
    cat_left: object


def _concat_rules(xp, recs, n_cat_pos: int) -> _SplitRules:
    """The records' :class:`_SplitRules` fields concatenated, the others (statistics, proxies) left out; their
    codes sent left in the batch's columns (:func:`~gputrees._records.narrow_categories`)."""

    def field(rec, name):
        value = getattr(rec, name)
        return narrow_categories(xp, value, n_cat_pos) if name == "cat_left" else value

    names = [f.name for f in dataclasses.fields(_SplitRules)]
    if not recs:  # (a tree the subtree kernel grew from its root and could not split)
        i8, b = xp.int64, xp.bool
        return _SplitRules(feature=xp.zeros(0, dtype=i8), bin=xp.zeros(0, dtype=i8),
                           missing_left=xp.zeros(0, dtype=b), threshold=xp.zeros(0, dtype=xp.float64),
                           is_categorical=xp.zeros(0, dtype=b),
                           cat_left=xp.zeros((0, category_width(n_cat_pos)), dtype=b))
    if len(recs) == 1:
        # one record (a forest grown whole by the subtree kernel): its arrays as they are, not copied
        return _SplitRules(*(field(recs[0], name) for name in names))
    return _SplitRules(*(xp.concat([field(r, name) for r in recs], axis=0) for name in names))


class Grower:
    """Grow a batch of trees. Use :func:`grow`.

    Histograms without the count
    ----------------------------
    Boosting's histograms need no row count per bin when no split test reads
    one: ``min_samples_leaf <= 1`` (a child needs a row, and with
    ``min_weight_leaf > 0`` a child without rows is refused by its hessian
    sum, 0 up to the rounding of the sibling subtraction: far below any
    ``min_child_weight`` in use), numerical features without missing values
    (``GrowerInputs.count_free_histograms``: the missing bins are exactly 0),
    thresholds at the next value bin, best splits, no monotonic constraints
    and no sort-based search. The histograms then carry ``[G, H]``, two
    channels instead of three (as XGBoost's and LightGBM's), searched with
    the criterion's count-free form (:class:`~gputrees._criteria.NewtonGH`);
    the nodes keep their counts (their rows'), and the side NaN
    takes at a split (the child with more rows, the histograms cannot tell)
    is set once the rows are routed. The trees are the same as with three
    channels (tested).

    Children's statistics from the split
    ------------------------------------
    Where the criterion allows it (``Criterion.stats_from_split``: boosting's
    Newton) and ``min_weight_leaf > 0``, a split's children take their
    statistics from its record, ``left`` and ``right`` = the node's minus
    ``left`` (as XGBoost and LightGBM do), instead of a sum over their rows
    after routing: the routing then only moves the rows. Both children passed
    the split's ``min_weight_leaf`` test with exactly these sums, so no child
    gets a hessian sum near 0 from the rounding of a subtraction; values and
    gains move by a few ulps against row sums (tested against them).
    Without the count in the histograms the children's counts are their
    numbers of rows (``LocalRows.counts``), used only where the count channel
    is 1 on every row; otherwise the children are summed from their rows.
    """

    def __init__(self, xp, inputs: GrowerInputs, params: GrowerParams, rows=None):
        self.xp = xp
        self.inp = inputs
        self.params = params
        mono = inputs.monotonic_cst
        self.mono = None
        if mono is not None and np.any(np.asarray(mono) != 0):
            self.mono = from_numpy(xp, np.asarray(mono, dtype=np.float64))
        self.is_cat = inputs.bin_mapper.is_categorical
        self.any_cat = bool(self.is_cat.any())
        #: a categorical feature's most codes: the batch's codes sent left hold those and the missing bin
        self.n_cat_pos = mapper_category_positions(inputs.bin_mapper)
        # nodes with fewer rows than bins use the sort-based search (numerical data only)
        self.sorted_below = (
            0
            if (self.any_cat or not params.sorted_small_nodes or self.mono is not None)
            else inputs.bin_mapper.n_bins
        )
        count_free = inputs.criterion.without_count()
        if not (
            # a row set given may offer to count its nodes' rows and leave the count out of its histograms
            (rows is None or getattr(rows, "drops_count", False))
            and count_free is not None
            and inputs.count_free_histograms
            and params.min_samples_leaf <= 1
            and params.min_weight_leaf > 0
            and not params.local_thresholds
            and not self.any_cat
            and not inputs.random_splits
            and self.mono is None
            and self.sorted_below == 0
        ):
            count_free = None
        #: the criterion of the histograms' channels (the split search)
        self.split_criterion = inputs.criterion if count_free is None else count_free
        #: the children's statistics come from their parent's split record
        #: (see the class docstring) rather than from a sum over their rows
        self.stats_from_split = bool(inputs.criterion.stats_from_split and params.min_weight_leaf > 0)
        # the row set: given, or LocalRows made on first use (:attr:`rows`; a
        # batch whose trees grow whole in the subtree kernel needs none)
        self._rows = rows
        self._histogram_count = count_free is None
        if rows is not None and count_free is not None:
            rows.histogram_count = False
        if self.stats_from_split and count_free is not None:
            # the record has no count: the children's counts are their rows'
            # (LocalRows.counts), which is their count channel's sum only where
            # that channel is 1 on every row (no row subsample)
            self.stats_from_split = inputs.multiplicity is None and (
                bool(inputs.unit_count_channel) or unit_counts(xp, self.rows.chan)
            )
        self.n_features = int(inputs.bin_mapper.is_categorical.shape[0])
        if rows is not None:
            self.n_trees, self.n_channels = rows.n_trees, rows.n_channels
        else:  # as LocalRows counts them
            self.n_trees = batch_trees(inputs.channels, inputs.multiplicity)
            self.n_channels = int(inputs.channels.shape[-1])
        self.n_bins = inputs.bin_mapper.n_bins
        self.missing = self.n_bins - 1
        self.record_leaves = inputs.record_leaves
        self.cons = SplitConstraints(params.min_samples_leaf, params.min_weight_leaf)
        hist_channels = self.n_channels - (0 if self.split_criterion.has_count else 1)
        self.hist_bytes = self.n_features * self.n_bins * hist_channels * 8
        # per created node (lists of per-round arrays, concatenated at the end)
        self._parent, self._depth, self._tree, self._stats = [], [], [], []
        # random draws keyed by each node's path from its root (gputrees.kernels.node_draws):
        # the trees' keys, and every created node's key by id (host, grown by doubling)
        k = params.max_features
        self._keyed = inputs.random_splits or inputs.tree_features is not None or (
            k is not None and k < self.n_features
        )
        self._tree_keys = node_draws.tree_keys(inputs.rng, self.n_trees) if self._keyed else None
        self._keys = np.empty(0, dtype=np.uint64)
        self._bounds = []  # per created node (k, 2), with monotonic constraints
        self._n_created = 0
        # per expanded node (records: SplitRecord from levels, _SplitRules from
        # grown subtrees, which only the grouped layouts read)
        self._exp_ids, self._exp_rec, self._exp_first_child = [], [], []
        # the lists' contents once the subtree kernel grows nodes: their fields written in place into arrays
        # reserved for the batch (NodeColumns), not joined at the end (None: the lists)
        self._columns = None
        # small nodes' whole subtrees in one compiled call where the kernel set
        # has a subtree kernel (FastPaths.subtrees) that covers the fit:
        # depth-wise growth of local rows whose leaves are not recorded; the
        # kernel numbers their nodes breadth-first at the end (its layout).
        # With categorical features it searches every node by histograms, as
        # the levels do (no sort-based search)
        sub = inputs.kernels.fast.subtrees
        small_nodes = self.sorted_below > 0 or (self.any_cat and params.sorted_small_nodes and self.mono is None)
        self._grow_subtrees = (
            sub
            if (
                (rows is None or isinstance(rows, LocalRows))
                and small_nodes
                and params.max_leaf_nodes is None
                and not inputs.record_leaves
                and sub.covers(inputs.criterion, self.n_channels, inputs.bin_mapper)
            )
            else None
        )
        self._subtrees_grown = False
        #: every pair of a round handed to the subtree kernel (see SubtreeKernel.from_entries)
        self._from_entries = self._grow_subtrees is not None and self._grow_subtrees.from_entries(
            inputs.codes, self.n_bins)
        #: pairs whose children both have fewer rows than this skip histograms:
        #: subtrees from SUBTREE_BELOW_BINS x bins rows, the bins counted as
        #: at least SUBTREE_MIN_BINS (their sort-based search
        #: finds the histogram search's split where thresholds are local, and
        #: saves the rounds' passes), else the sort-based search below the bins.
        #: With extremely randomised splits the two searches put a random
        #: split's threshold at different points between the same two values
        #: (the histogram's at its drawn bin, the sort's at the next value):
        #: the kernel is told which pairs this growth would search by histograms.
        #: With categorical features the kernel's search is the levels' at every size.
        self.small_below = self.sorted_below
        if self._grow_subtrees is not None and (params.local_thresholds or self.any_cat):
            self.small_below = SUBTREE_BELOW_BINS * max(self.n_bins, SUBTREE_MIN_BINS)
        # best-first host bookkeeping: improvement of splittable nodes, children of expanded
        self._improvement = {}
        self._children = {}

    # -- rows (through the row set) ----------------------------------------
    @property
    def rows(self):
        """The row set: the one given, or a :class:`~gputrees._rows.LocalRows` of the inputs, made on first use."""
        if self._rows is None:
            inp = self.inp
            self._rows = LocalRows(
                self.xp,
                inp.codes,
                inp.channels,
                inp.kernels,
                inp.multiplicity,
                inp.weight_multiplicity,
                inp.record_leaves,
                inp.codes_by_feature,
                histogram_count=self._histogram_count,
            )
        return self._rows

    def _slot_table(self, sorted_ids):
        """Slot of every node created so far in ``sorted_ids`` (int64, -1 if absent)."""
        return _slot_table(self.xp, sorted_ids, max(self._n_created, self.n_trees))

    def _build(self, build_ids, drawn=None):
        """Histograms of the nodes ``build_ids`` (sorted, device int64) from their rows.

        ``drawn`` (len(build_ids), k) int64 (host): over each node's drawn
        features only, (m, k, n_bins, C).
        """
        table, m = self._slot_table(build_ids), int(build_ids.shape[0])
        if drawn is None:
            return self.rows.histograms(table, m, self.n_bins)
        return self.rows.histograms(table, m, self.n_bins, from_numpy(self.xp, drawn))

    def _node_sums(self, first: int, count: int):
        """Channel sums of the nodes ``first .. first + count - 1`` from their active rows.

        Returns an array of shape (count, n_channels), float64.
        """
        table = children_slot_table(self.xp, max(self._n_created, self.n_trees, first + count), first, count)
        return self.rows.sums(table, count)

    def _root_sums(self, t: int):
        """The roots' channel sums (t, n_channels): ``GrowerInputs.channel_sums`` where given, else from the rows."""
        inp = self.inp
        sums = given_root_sums(self.xp, inp.channels, inp.multiplicity, inp.channel_sums)
        return self._node_sums(0, t) if sums is None else sums

    def _split_stats(self, rec, first: int):
        """Statistics (2k, n_channels) of the children ``first ..`` of k split nodes, from their records.

        Left child ``left``, right child ``right`` (the node's minus ``left``);
        without the count in the records, the children's rows counted, or,
        where the row set says every row's hessian is 1
        (``counts_from_weights``), their hessian sums: the same integers,
        without a pass over the rows (on Dask, an exchange between the workers).
        """
        xp = self.xp
        k = int(rec.left.shape[0])
        stats = xp.reshape(xp.stack([rec.left, rec.right], axis=1), (2 * k, int(rec.left.shape[1])))
        if not self.split_criterion.has_count:
            if getattr(self.rows, "counts_from_weights", False):
                counts = self.split_criterion.weight(xp, stats)
            else:
                counts = self.rows.counts(first, 2 * k)
            stats = xp.concat([counts[:, None], stats], axis=1)
        return stats

    # -- nodes --------------------------------------------------------------
    def _new_nodes(self, parent, depth, tree, stats, bounds=None, keys=None):
        """Record k new nodes (ids ``_n_created ..``); ``keys`` (k,) uint64 (host) with keyed draws."""
        xp = self.xp
        k = int(stats.shape[0])
        if self._keyed:
            self._next_keys(k)[...] = keys
        ids = xp.arange(self._n_created, self._n_created + k, dtype=xp.int64)
        self._n_created += k
        if self._columns is not None:
            self._columns.add_nodes(*(to_numpy(a) for a in (parent, depth, tree, stats)))
        else:
            self._parent.append(parent)
            self._depth.append(depth)
            self._tree.append(tree)
            self._stats.append(stats)
        if bounds is not None:
            self._bounds.append(bounds)
        return ids

    def _next_keys(self, k: int):
        """The keys of the next ``k`` nodes (ids ``_n_created ..``): a view of the key buffer (grown by
        doubling), to be written."""
        need = self._n_created + k
        if need > self._keys.shape[0]:
            grown = np.empty(max(need, 2 * self._keys.shape[0]), dtype=np.uint64)
            grown[: self._n_created] = self._keys[: self._n_created]
            self._keys = grown
        return self._keys[self._n_created : need]

    def _move_lists_to_columns(self) -> None:
        """The nodes and splits recorded in lists so far copied into :attr:`_columns`, the lists emptied."""
        xp, cols = self.xp, self._columns
        for parts in zip(self._parent, self._depth, self._tree, self._stats):
            cols.add_nodes(*(to_numpy(a) for a in parts))
        for ids, rec, first_child in zip(self._exp_ids, self._exp_rec, self._exp_first_child):
            self._add_split_columns(ids, _concat_rules(xp, [rec], self.n_cat_pos), first_child)
        self._parent, self._depth, self._tree, self._stats = [], [], [], []
        self._exp_ids, self._exp_rec, self._exp_first_child = [], [], []

    def _add_split_columns(self, ids, rules, first_child) -> None:
        """Splits (their ids, :class:`_SplitRules` and first children) copied into :attr:`_columns`."""
        self._columns.add_splits(*(to_numpy(a) for a in (
            ids, rules.feature, rules.bin, rules.missing_left, rules.threshold, first_child, rules.is_categorical,
            rules.cat_left)))

    def _child_bounds(self, rec, bounds):
        """Value bounds (2k, 2) of the children of k split nodes (monotonic constraints).

        A split on an increasing (+1) feature caps the left child's values and
        floors the right child's at the mean of the two children's (clipped)
        values; a decreasing (-1) feature the other way round; other features
        pass the node's bounds on.
        """
        xp = self.xp
        crit = self.split_criterion  # the record's statistics are the histograms'
        lo, up = bounds[:, 0], bounds[:, 1]
        vl = xp.clip(crit.leaf_value(xp, rec.left), lo, up)
        vr = xp.clip(crit.leaf_value(xp, rec.right), lo, up)
        mid = (vl + vr) / 2.0
        c = xp.take(self.mono, _clamp(xp, rec.feature, 0))
        left = xp.stack([xp.where(c < 0, mid, lo), xp.where(c > 0, mid, up)], axis=1)
        right = xp.stack([xp.where(c > 0, mid, lo), xp.where(c < 0, mid, up)], axis=1)
        return xp.reshape(xp.stack([left, right], axis=1), (-1, 2))

    def _can_split(self, depth, stats):
        xp, p, crit = self.xp, self.params, self.inp.criterion
        count = stats[:, 0]
        w = crit.weight(xp, stats)
        ok = (
            (count >= p.min_samples_split)
            & (count >= 2 * p.min_samples_leaf)
            & (w >= 2 * p.min_weight_leaf)
            & crit.splittable(xp, stats)
        )
        if p.max_depth is not None:
            ok = ok & (depth < p.max_depth)
        return ok

    def _draw(self, ids, tree) -> "_Draws":
        """Random draws of the nodes ``ids`` (host), from their keys (:mod:`gputrees.kernels.node_draws`).

        A node's draws depend only on its tree's key and its path from the
        root: not on how its split is searched (histogram or sort-based, which
        depends on its row count), on the other nodes of its round, or on
        where its rows live (one machine or a Dask cluster).

        ids, tree : (m,) node id and tree index of each node.
        """
        if not self._keyed or int(ids.shape[0]) == 0:
            return _Draws(None, None)
        keys = self._keys[to_numpy(ids)]
        return _Draws(self._feature_mask(tree, keys), self._random_u(keys))

    def _feature_mask(self, tree, keys):
        """Features drawn for each node (ndarray (m, F) bool, host; None: all).

        ``max_features`` of the features the node's tree may use (all, or its
        ``tree_features`` subset), drawn without replacement
        (:func:`gputrees.kernels.node_draws.feature_mask`).
        """
        k = self.params.max_features
        tf = self.inp.tree_features
        if (k is None or k >= self.n_features) and tf is None:
            return None
        allowed = None if tf is None else tf[to_numpy(tree)]
        return node_draws.feature_mask(keys, self.n_features, self.n_features if k is None else k, allowed)

    def _drawn_features(self, draws):
        """Each node's drawn features (m, k) int64 (host) when its histograms are built over those only, else None.

        With per-node feature draws of at most :data:`DRAWN_BUILD_SHARE` of
        the features (numerical data, the same count in every node), both
        children of a pair are built from their rows over their k drawn
        features, instead of the smaller over all F and the larger by
        subtraction from its parent's (which needs every feature of the
        parent): rows x k updates against up to rows / 2 x F and a subtraction
        over every feature, and no level's histograms kept.
        """
        mask = draws.mask
        if mask is None or self.any_cat or int(mask.shape[0]) == 0:
            return None
        per_node = mask.sum(axis=1)
        k = int(per_node[0])
        if per_node.min() != per_node.max() or k > DRAWN_BUILD_SHARE * self.n_features:
            return None
        return np.nonzero(mask)[1].reshape(-1, k).astype(np.int64)

    def _random_u(self, keys):
        """Uniform draws (m, F) (host) for extremely randomised splits, or None.

        The node's draws ``F .. 2F - 1`` (its first F choose its features).
        """
        if not self.inp.random_splits:
            return None
        return node_draws.uniforms(keys, self.n_features, first=self.n_features)

    def _hist_stats(self, stats):
        """Node statistics (m, C) in the histograms' channels: without the count where they have none."""
        return stats if self.split_criterion.has_count else stats[:, 1:]

    def _split(self, hist, stats, depth, tree, draws, bounds=None, drawn=None):
        """Split records, improvements and the 'ok' mask for nodes with histograms.

        With ``max_features``, numerical data and the same number of drawn
        features in every node, only the drawn features' histograms are
        scanned (gathered per node), not all of them masked. ``drawn`` (m, k)
        int64 (host): ``hist`` holds only those features' histograms already
        (:meth:`_drawn_features`).
        """
        xp = self.xp
        m = int(stats.shape[0])
        mask = draws.mask
        feature_ids = None
        is_cat = self.is_cat
        if drawn is None and mask is not None and not self.any_cat:
            per_node = mask.sum(axis=1)
            if m and per_node.min() == per_node.max():
                drawn = np.nonzero(mask)[1].reshape(m, int(per_node[0])).astype(np.int64)
                hist = take_features(xp, hist, from_numpy(xp, drawn))
        if drawn is not None:
            feature_ids = from_numpy(xp, drawn)
            is_cat = np.zeros(int(drawn.shape[1]), dtype=bool)
            mask = None
        u = draws.u
        if u is not None and drawn is not None:
            # each drawn feature's uniform: the node's draw for that feature,
            # as the sort-based search and a subtree read it
            u = np.take_along_axis(u, drawn, axis=1)
        u = None if u is None else from_numpy(xp, u)
        if mask is not None:
            mask = from_numpy(xp, mask)
        rec = find_best_splits(
            xp,
            hist,
            self._hist_stats(stats),
            self.split_criterion,
            self.cons,
            is_cat,
            mask,
            self.inp.bin_mapper,
            random_u=u,
            feature_ids=feature_ids,
            bounds=bounds,
            monotonic_cst=self.mono,
            local_thresholds=self.params.local_thresholds,
            kernel=self.inp.kernels.best_splits,
        )
        imp, ok = self._improvement_ok(rec, stats, tree, bounds)
        return rec, imp, ok

    def _pairs_per_chunk(self, share=1.0):
        """Sibling pairs whose histograms fit the memory bound (``share``: of the features built)."""
        return self._memory_fits(2 * self.hist_bytes * share * SCAN_FACTOR)

    # -- rounds -------------------------------------------------------------
    def _part(self, ids, st, dp, tr, rec, imp, ok, hist, bounds=None):
        """Frontier part of the nodes whose split is 'ok' (hist and bounds may be None)."""
        xp = self.xp
        good = xp.astype(xp.nonzero(ok)[0], xp.int64)
        g = int(good.shape[0])
        if g == 0:
            return None
        sel = None if g == int(ok.shape[0]) else good  # every node: the arrays as they are
        return _Frontier(
            ids=_rows_at(xp, ids, sel),
            depth=_rows_at(xp, dp, sel),
            tree=_rows_at(xp, tr, sel),
            stats=_rows_at(xp, st, sel),
            improvement=_rows_at(xp, imp, sel),
            split=_take_record(xp, rec, sel),
            # the histograms stay as they are, indexed (a copy of the kept nodes'
            # cost as much as building them on small data; the memory bound
            # that let the level keep them counted them all)
            hist=hist,
            hist_index=good if hist is not None else xp.full((g,), -1, dtype=xp.int64),
            bounds=None if bounds is None else _rows_at(xp, bounds, sel),
        )

    def _memory_fits(self, bytes_each) -> int:
        """How many items of ``bytes_each`` fit ``memory_limit`` (at least one)."""
        return max(1, int(self.params.memory_limit // bytes_each))

    def _row_batches(self, counts, bytes_per_row):
        """Consecutive (start, stop) batches of nodes whose rows (``counts``, host) take at most ``memory_limit``.

        A batch holds at least one node, however large.
        """
        budget_rows = self._memory_fits(bytes_per_row)
        start, n = 0, counts.shape[0]
        while start < n:
            csum = np.cumsum(counts[start:])
            stop = start + max(1, int(np.searchsorted(csum, budget_rows, side="right")))
            yield start, stop
            start = stop

    def _tree_batches(self, counts, bytes_per_row, n_workers: int):
        """:meth:`_row_batches` of whole trees (``counts``: each tree's rows, host), their sizes multiples of
        ``n_workers`` where the memory bound allows.

        The subtree kernel's workers take a call's trees one at a time; a
        call of 13 similar trees on two workers leaves one of them idle
        while the other grows the thirteenth (a 37-tree batch in calls of
        13, 13 and 11 trees: three such tails). The same number of calls as
        the greedy batches (or one more), their trees spread evenly in
        multiples of ``n_workers`` (the remainder in the last call), each
        call within the bound; else the greedy batches. The trees do not
        depend on the batches.
        """
        greedy = list(self._row_batches(counts, bytes_per_row))
        n, k = int(counts.shape[0]), len(greedy)
        if k <= 1 or n_workers <= 1:
            return greedy
        budget = self._memory_fits(bytes_per_row)
        units, rest = divmod(n, n_workers)
        for parts in (k, k + 1):
            base, extra = divmod(units, parts)
            sizes = [(base + (i < extra)) * n_workers for i in range(parts)]
            sizes[-1] += rest
            if min(sizes) == 0:
                continue
            bounds = np.concatenate([[0], np.cumsum(sizes)])
            if all(counts[a:b].sum() <= budget for a, b in zip(bounds[:-1], bounds[1:])):
                return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
        return greedy

    def _sorted_parts(self, ids, st, dp, tr, draws):
        """Splits of small nodes by the sort-based search, batched under the memory bound."""
        xp = self.xp
        counts = to_numpy(st[:, 0])
        per_row = self.n_features * (self.n_channels * BYTES_PER_PAIR_CHANNEL + BYTES_PER_PAIR)
        parts = []
        for start, stop in self._row_batches(counts, per_row):
            sel = xp.arange(start, stop, dtype=xp.int64)
            cid = xp.take(ids, sel)
            cst = xp.take(st, sel, axis=0)
            dr = draws.take(np.arange(start, stop))
            rows, slot, w = self.rows.rows_of(self._slot_table(cid))
            rec = find_best_splits_sorted(
                xp,
                self.rows.codes,
                rows,
                slot,
                w,
                cst,
                self.inp.criterion,
                self.cons,
                self.inp.bin_mapper,
                max_rows=int(counts[start:stop].max()),
                kernels=self.inp.kernels,
                feature_mask=None if dr.mask is None else from_numpy(xp, dr.mask),
                random_u=None if dr.u is None else from_numpy(xp, dr.u),
            )
            cdp, ctr = xp.take(dp, sel), xp.take(tr, sel)
            imp, ok = self._improvement_ok(rec, cst, ctr)
            parts.append(self._part(cid, cst, cdp, ctr, rec, imp, ok, None))
        return parts

    def _whole_subtrees(self, draws, pair_any) -> bool:
        """Whether every pair of this round goes to the subtree kernel (:data:`SUBTREE_PAIRS_PER_THREAD`)."""
        sub = self._grow_subtrees
        if sub is None or not self.params.local_thresholds:
            return False
        if self._from_entries:
            return True
        n_pairs = int(self.xp.sum(self.xp.astype(pair_any, self.xp.int64)))
        if n_pairs < SUBTREE_PAIRS_PER_THREAD * sub.n_threads:
            return False
        return self.inp.random_splits or self._drawn_features(draws) is not None

    def _whole_trees(self):
        """The batch's trees' rows (:class:`~gputrees.kernels.TreeRows`) when every tree grows whole in the
        subtree kernel from its root, else None.

        When the level-wise growth would hand every node of its first round
        to the kernel (:meth:`_whole_subtrees`: per-node feature draws over
        which histograms are built or extremely randomised thresholds, and
        enough trees for every thread), the
        roots go there instead, with their rows read from the multiplicities:
        no row set's arrays of pairs, no root level of histograms and routing,
        the same trees. Checked before any row set is made.
        """
        inp = self.inp
        if self._rows is not None or inp.channels.ndim != 2:
            return None
        if inp.multiplicity is None and self._small_tree():
            return TreeRows(self.xp.ones((1, int(inp.channels.shape[0])), dtype=self.xp.float64), None,
                            inp.channels)
        if inp.multiplicity is None or not self._keyed:
            return None
        roots = np.arange(self.n_trees, dtype=np.int64)
        draws = _Draws(self._feature_mask(roots, node_draws.root_keys(self._tree_keys)), None)
        # every root counted as a pair: the rule of a round's handover
        if not self._whole_subtrees(draws, self.xp.ones(self.n_trees, dtype=self.xp.bool)):
            return None
        return TreeRows(inp.multiplicity, inp.weight_multiplicity, inp.channels)

    def _small_tree(self) -> bool:
        """Whether the batch is one tree of at most :data:`WHOLE_TREE_CELLS` that the subtree kernel grows: it
        then grows from the root (its root level's histograms, split scan and routing in the generic grower's
        array operations cost more than the kernel's whole tree).

        Not with categorical features beyond binary classification: the
        kernel's categorical search of a node with more classes or a
        regression target costs more than those array operations (500 rows:
        5-class 3.4 -> 3.9 ms, regression 2.8 -> 3.1 ms; binary 2.2 -> 2.0 ms).
        """
        binary = getattr(self.inp.criterion, "n_classes", 0) == 2
        return (self.n_trees == 1 and self._grow_subtrees is not None and bool(self.params.local_thresholds)
                and self.params.max_leaf_nodes is None and self.mono is None and (binary or not self.any_cat)
                and int(self.inp.codes.shape[0]) * self.n_features <= WHOLE_TREE_CELLS)

    def _finish_subtrees(self, ids, st, dp, tr, tree_rows=None, histograms=None) -> None:
        """Grow the whole subtrees of the nodes ``ids`` (``FastPaths.subtrees``), under the memory bound.

        Their nodes are recorded as the level-wise growth would record them,
        their splits by their rules (:class:`_SplitRules`: the layout reads no
        more), and numbered breadth-first at the end; the nodes leave the
        frontier, so their rows retire. The grower uses the kernel only for
        fits it covers (``covers``, checked once). ``tree_rows``
        (:meth:`_whole_trees`): the nodes are roots, their rows read from it.
        ``histograms`` (device bool, one per node, or None): with extremely
        randomised splits, the nodes the level-wise growth would search by
        histograms (roots; pairs as :meth:`_evaluate_children` marks them).
        """
        xp = self.xp
        p = self.params
        sub_params = SubtreeParams(
            min_samples_split=float(p.min_samples_split),
            max_depth=-1 if p.max_depth is None else int(p.max_depth),
            min_impurity_decrease=float(p.min_impurity_decrease),
            max_features=self.n_features if p.max_features is None else min(int(p.max_features), self.n_features),
            local_thresholds=bool(p.local_thresholds),
        )
        total_weight = to_numpy(self.total_weight)
        per_row = SUBTREE_PAIR_BYTES + SUBTREE_PAIR_CHANNEL_BYTES * self.n_channels
        if self.any_cat:
            # the codes sent left: a byte per bin in each of a pair's two slots and in its split's record
            per_row += 3 * self.n_bins
        counts = to_numpy(st[:, 0])
        if tree_rows is None:
            batches = self._row_batches(counts, per_row)
        else:
            batches = self._tree_batches(counts, per_row, int(getattr(self._grow_subtrees, "n_threads", 1)))
        for start, stop in batches:
            sel = xp.arange(start, stop, dtype=xp.int64)
            cid = xp.take(ids, sel)
            if tree_rows is None:
                rows, slot, w = self.rows.rows_of(self._slot_table(cid))
            else:
                rows = slot = w = None
            cid_host = to_numpy(cid)
            keys = self._keys[cid_host] if self._keyed else np.zeros(cid_host.shape[0], dtype=np.uint64)
            sub = self._grow_subtrees(
                xp, self.inp.codes, rows, slot, w,
                xp.take(st, sel, axis=0), xp.take(dp, sel), xp.take(tr, sel), keys, total_weight,
                self.inp.criterion, self.cons, sub_params, self.inp.bin_mapper,
                self.inp.tree_features, self.inp.random_splits, tree_rows=tree_rows,
                root_histograms=None if histograms is None else to_numpy(xp.take(histograms, sel)),
            )
            if sub is None:
                raise RuntimeError("the subtree kernel refused a fit it said it covers")
            self._add_subtrees(cid_host, sub)
            # freed before the next chunk's call (its regions are as large as that one's)
            del sub, rows, slot, w

    def _add_subtrees(self, root_ids, sub):
        """Record the nodes and splits of grown subtrees (:class:`~gputrees.kernels.cpu.subtree.Subtrees`).

        ``root_ids`` (m,) int64 (host): the grower's ids of the subtrees' roots.
        Their other nodes take the next ids (``sub.records``, one compiled pass),
        written into the batch's :class:`~gputrees._node_columns.NodeColumns`
        (reserved at the first call, the nodes recorded before moved in) where
        it could reserve them.
        """
        xp = self.xp
        if self._columns is None and not self._subtrees_grown:
            self._columns = NodeColumns.reserve(self.n_trees, int(self.inp.codes.shape[0]), self.n_channels,
                                                category_width(self.n_cat_pos))
            if self._columns is not None:
                self._move_lists_to_columns()
        out = None
        if self._columns is not None:
            # written in place: the nodes' fields, their keys (a scratch array without keyed draws), the splits'
            n_new, n_split = sub.record_sizes()
            key = self._next_keys(n_new) if self._keyed else np.empty(n_new, dtype=np.uint64)
            parent, depth, tree, stats = self._columns.node_slices(n_new)
            ids, feature, bin_, missing_left, threshold, first_child, is_cat, cat_left = (
                self._columns.split_slices(n_split))
            out = (parent, depth, tree, stats, key, ids, feature, bin_, missing_left, threshold, first_child, is_cat,
                   cat_left)
        r = sub.records(root_ids, self._n_created, n_threads=int(getattr(self._grow_subtrees, "n_threads", 1)),
                        out=out)
        if self._columns is not None:
            self._n_created += n_new
        else:
            if r.parent.shape[0]:
                self._new_nodes(
                    from_numpy(xp, r.parent), from_numpy(xp, r.depth), from_numpy(xp, r.tree),
                    from_numpy(xp, r.stats), keys=r.key,
                )
            if r.split_ids.shape[0]:
                self._exp_ids.append(from_numpy(xp, r.split_ids))
                # the rules only (the layout's fields): once subtrees are grown the
                # batch is laid out by the subtree kernel (_finalize_subtrees)
                self._exp_rec.append(_SplitRules(
                    feature=from_numpy(xp, r.feature),
                    bin=from_numpy(xp, r.bin),
                    missing_left=from_numpy(xp, r.missing_left),
                    threshold=from_numpy(xp, r.threshold),
                    is_categorical=from_numpy(xp, r.is_categorical),
                    cat_left=from_numpy(xp, r.cat_left),
                ))
                self._exp_first_child.append(from_numpy(xp, r.first_child))
        self._subtrees_grown = True

    def _hist_parts(self, child_ids, depth, tree, stats, can, pairs, keep_hist, draws, bounds=None, parents=None,
                    drawn=None):
        """Splits of sibling pairs by histograms, in chunks under the memory bound.

        ``parents`` is None (then the splittable children are built from
        their rows) or (parent histograms, (len(pairs),) row of each pair's
        parent among them): then the smaller child is built and the other is
        the parent's minus it (``Kernels.sibling_histograms``). ``drawn``
        (2k, k') int64 (host), with ``parents`` None: each child's
        histograms are built over its drawn features only.
        """
        xp = self.xp
        n_pairs = int(pairs.shape[0])
        step = self._pairs_per_chunk(1.0 if drawn is None else int(drawn.shape[1]) / self.n_features)
        siblings = self.inp.kernels.sibling_histograms
        parts = []
        for start in range(0, n_pairs, step):
            stop = min(start + step, n_pairs)
            pr = pairs[start:stop]
            m = stop - start
            both = xp.reshape(xp.stack([2 * pr, 2 * pr + 1], axis=1), (-1,))
            ids = xp.take(child_ids, both)
            st = xp.take(stats, both, axis=0)
            # the splittable children, in the pairs' (left, right) order
            idx = xp.astype(xp.nonzero(xp.take(can, both))[0], xp.int64)
            if parents is not None:
                cnt = xp.reshape(st[:, 0], (m, 2))
                small_is_right = cnt[:, 1] < cnt[:, 0]
                small_pos = xp.astype(small_is_right, xp.int64)
                small_ids = xp.take(ids, 2 * xp.arange(m, dtype=xp.int64) + small_pos)
                hist = siblings(xp, parents[0], parents[1][start:stop], self._build(small_ids), small_is_right, idx)
            where = xp.take(both, idx)
            feats = None if drawn is None else drawn[to_numpy(where)]
            if parents is None:
                hist = self._build(xp.take(ids, idx), feats)
            ids = xp.take(ids, idx)
            st = xp.take(st, idx, axis=0)
            dp = xp.take(depth, where)
            tr = xp.take(tree, where)
            bd = None if bounds is None else xp.take(bounds, where, axis=0)
            rec, imp, ok = self._split(hist, st, dp, tr, draws.take(where), bd, feats)
            parts.append(self._part(ids, st, dp, tr, rec, imp, ok, hist if keep_hist else None, bd))
        return parts

    def _evaluate_children(self, child_ids, depth, tree, stats, parent_hist, parent_hist_index, bounds=None):
        """Splits of new sibling pairs; returns the next frontier part.

        child_ids, depth, tree : (2k,) ; stats (2k, C) ; parent_hist_index (k,)
        position of each pair's parent histogram in ``parent_hist``, or -1.
        """
        xp = self.xp
        k = int(child_ids.shape[0]) // 2
        can = self._can_split(depth, stats)
        can2 = xp.reshape(can, (k, 2))
        pair_any = xp.any(can2, axis=1)
        draws = self._draw(child_ids, tree)
        parts = []
        if self.small_below > 0:
            histograms = None
            if self.inp.random_splits and self._grow_subtrees is not None and self.sorted_below > 0:
                # the kernel searches the pairs it is handed as the level-wise growth would: by histograms
                # where a child could split with as many rows as bins (a random threshold differs by search)
                big2 = xp.reshape((stats[:, 0] >= self.sorted_below) & can, (k, 2))
                histograms = xp.reshape(xp.stack([xp.any(big2, axis=1)] * 2, axis=1), (-1,))
            if self._whole_subtrees(draws, pair_any):
                small = xp.ones_like(can)
            else:
                small = (stats[:, 0] < self.small_below) | ~can
            small2 = xp.reshape(small, (k, 2))
            pair_sorted = pair_any & xp.all(small2, axis=1)
            pair_any = pair_any & ~pair_sorted
            pos = xp.astype(xp.nonzero(xp.reshape(pair_sorted[:, None] & can2, (-1,)))[0], xp.int64)
            if int(pos.shape[0]):
                nodes = (xp.take(child_ids, pos), xp.take(stats, pos, axis=0), xp.take(depth, pos), xp.take(tree, pos))
                if self._grow_subtrees is not None:
                    self._finish_subtrees(*nodes, histograms=None if histograms is None else xp.take(histograms, pos))
                else:
                    parts += self._sorted_parts(*nodes, draws.take(pos))
        pairs = xp.astype(xp.nonzero(pair_any)[0], xp.int64)
        n_pairs = int(pairs.shape[0])
        drawn = self._drawn_features(draws) if n_pairs else None
        if drawn is not None:
            # both children over their drawn features, from their rows; no
            # histogram kept (the next level's are built the same way)
            parts += self._hist_parts(child_ids, depth, tree, stats, can, pairs, False, draws, bounds, drawn=drawn)
        elif n_pairs:
            keep_hist = 2 * n_pairs * self.hist_bytes <= self.params.memory_limit
            if parent_hist is not None:
                pidx = xp.take(parent_hist_index, pairs)
                has = pidx >= 0
                with_p = xp.astype(xp.nonzero(has)[0], xp.int64)
                without = xp.astype(xp.nonzero(~has)[0], xp.int64)
                if int(with_p.shape[0]):
                    parts += self._hist_parts(
                        child_ids, depth, tree, stats, can, xp.take(pairs, with_p), keep_hist, draws, bounds,
                        parents=(parent_hist, xp.take(pidx, with_p)),
                    )
                pairs = xp.take(pairs, without)
            if int(pairs.shape[0]):
                parts += self._hist_parts(child_ids, depth, tree, stats, can, pairs, keep_hist, draws, bounds)
        return self._merge(parts)

    def _improvement_ok(self, rec, stats, tree, bounds=None):
        xp = self.xp
        crit = self.split_criterion  # the record's statistics are the histograms'
        stats = self._hist_stats(stats)
        if bounds is not None:
            # the split's gain with the children's values clipped to the bounds
            imp = rec.proxy - crit.bounded_gain(xp, stats, bounds[:, 0], bounds[:, 1])
        else:
            total_w = xp.take(self.total_weight, tree)
            imp = crit.improvement(xp, stats, rec.left, rec.right, total_w)
        return imp, rec.found & crit.accept(xp, imp, rec.proxy, self.params.min_impurity_decrease)

    def _merge(self, parts):
        """One frontier from parts (node ids re-sorted)."""
        xp = self.xp
        parts = [p for p in parts if p is not None and int(p.ids.shape[0]) > 0]
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        hists, index, offset = [], [], 0
        with_bounds = parts[0].bounds is not None
        for p in parts:
            if p.hist is not None:
                arrays = p.hist if isinstance(p.hist, tuple) else (p.hist,)
                hists.extend(arrays)
                index.append(xp.where(p.hist_index >= 0, p.hist_index + offset, p.hist_index))
                offset += sum(int(a.shape[0]) for a in arrays)
            else:
                index.append(p.hist_index)
        ids = xp.concat([p.ids for p in parts])
        order = xp.argsort(ids)
        return _Frontier(
            ids=xp.take(ids, order),
            depth=xp.take(xp.concat([p.depth for p in parts]), order),
            tree=xp.take(xp.concat([p.tree for p in parts]), order),
            stats=xp.take(xp.concat([p.stats for p in parts], axis=0), order, axis=0),
            improvement=xp.take(xp.concat([p.improvement for p in parts]), order),
            split=_take_record(xp, _concat_records(xp, [p.split for p in parts]), order),
            hist=(tuple(hists) if len(hists) > 1 else hists[0]) if hists else None,
            hist_index=xp.take(xp.concat(index), order),
            bounds=(
                xp.take(xp.concat([p.bounds for p in parts], axis=0), order, axis=0) if with_bounds else None
            ),
        )

    def _expand(self, front: _Frontier, chosen):
        """Split the frontier nodes at positions ``chosen`` (sorted, int64; None: all of them)."""
        xp = self.xp

        def pick(a):
            return _rows_at(xp, a, chosen)

        ids = pick(front.ids)
        rec = _take_record(xp, front.split, chosen)
        k = int(ids.shape[0])
        base = self._n_created
        # 1. route rows of the chosen nodes
        # 2. record the children, their statistics from the split where the
        # criterion allows it, else summed from their rows (not parent -
        # sibling: rounding would leave absent classes a -1e-14 weight and
        # pure nodes a non-zero impurity)
        if self.stats_from_split:
            self.rows.route(self._slot_table(ids), rec, base, self.missing, sums=False)
            stats = self._split_stats(rec, base)
        else:
            self.rows.route(self._slot_table(ids), rec, base, self.missing)
            stats = self._node_sums(base, 2 * k)
        if not self.split_criterion.has_count:
            # no node had missing values: NaN goes to the child with more rows
            rec = dataclasses.replace(rec, missing_left=stats[0::2, 0] > stats[1::2, 0])
        parent = xp.reshape(xp.stack([ids, ids], axis=1), (-1,))
        depth = xp.reshape(xp.stack([pick(front.depth)] * 2, axis=1), (-1,)) + 1
        tree = xp.reshape(xp.stack([pick(front.tree)] * 2, axis=1), (-1,))
        bounds = None
        if front.bounds is not None:
            bounds = self._child_bounds(rec, pick(front.bounds))
        keys = node_draws.child_keys(self._keys[to_numpy(ids)]) if self._keyed else None
        child_ids = self._new_nodes(parent, depth, tree, stats, bounds, keys)
        if self._columns is not None:
            self._add_split_columns(ids, _concat_rules(xp, [rec], self.n_cat_pos), child_ids[0::2])
        else:
            self._exp_ids.append(ids)
            self._exp_rec.append(rec)
            self._exp_first_child.append(child_ids[0::2])
        # 3. histograms and splits of the children
        new = self._evaluate_children(
            child_ids, depth, tree, stats, front.hist, pick(front.hist_index), bounds
        )
        return ids, child_ids, new

    def _drop_finished_rows(self, front):
        self.rows.retire(None if front is None else self._slot_table(front.ids))

    def _remaining(self, front, chosen):
        """Frontier without the positions ``chosen`` (None: all of them, so None is left)."""
        xp = self.xp
        if chosen is None:
            return None
        p = int(front.ids.shape[0])
        _, hit = _lookup(xp, chosen, xp.arange(p, dtype=xp.int64))
        idx = xp.astype(xp.nonzero(~hit)[0], xp.int64)
        if int(idx.shape[0]) == 0:
            return None
        return _Frontier(
            ids=xp.take(front.ids, idx),
            depth=xp.take(front.depth, idx),
            tree=xp.take(front.tree, idx),
            stats=xp.take(front.stats, idx, axis=0),
            improvement=xp.take(front.improvement, idx),
            split=_take_record(xp, front.split, idx),
            hist=front.hist,
            hist_index=xp.take(front.hist_index, idx),
            bounds=None if front.bounds is None else xp.take(front.bounds, idx, axis=0),
        )

    # -- best-first selection (host scalars) ---------------------------------
    def _simulate(self, roots):
        """scikit-learn's greedy best-first order over the known nodes.

        Returns (selected node ids, node ids that must be expanded to go on).
        """
        budget = self.params.max_leaf_nodes - 1
        selected, need = [], []
        for root in roots:
            heap = []
            if root in self._improvement:
                heap.append((-self._improvement[root], root))
            done = 0
            while heap and done < budget:
                _, node = heapq.heappop(heap)
                if node in self._children:
                    selected.append(node)
                    done += 1
                    for c in self._children[node]:
                        if c in self._improvement:
                            heapq.heappush(heap, (-self._improvement[c], c))
                else:
                    rest = heapq.nsmallest(budget - done - 1, heap)
                    need.append(node)
                    need.extend(n for _, n in rest if n not in self._children)
                    break
        return selected, need

    def _record_improvements(self, front):
        if front is None:
            return
        ids = to_numpy(front.ids).tolist()
        imp = to_numpy(front.improvement).tolist()
        self._improvement.update(zip(ids, imp))

    # -- main loop ----------------------------------------------------------
    def grow(self) -> TreeBatch:
        xp = self.xp
        t = self.n_trees
        roots = xp.arange(t, dtype=xp.int64)
        tree_rows = self._whole_trees()
        if tree_rows is None:
            stats = self._root_sums(t)
        else:
            stats = self._grow_subtrees.tree_sums(tree_rows)
        self.total_weight = self.inp.criterion.weight(xp, stats)
        depth = xp.zeros(t, dtype=xp.int64)
        bounds = None
        if self.mono is not None:
            inf = xp.full((t,), xp.inf, dtype=xp.float64)
            bounds = xp.stack([-inf, inf], axis=1)
        self._new_nodes(
            xp.full(t, -1, dtype=xp.int64), depth, roots, stats, bounds,
            None if self._tree_keys is None else node_draws.root_keys(self._tree_keys),
        )
        front = None
        can = self._can_split(depth, stats)
        idx = xp.astype(xp.nonzero(can)[0], xp.int64)
        if int(idx.shape[0]):
            st = xp.take(stats, idx, axis=0)
            ids = xp.take(roots, idx)
            dp = xp.take(depth, idx)
            if tree_rows is not None:
                # every splittable root's tree grown whole in the subtree kernel (with random splits the
                # kernel is told that roots are searched by histograms, as the level-wise growth does)
                roots_hist = xp.ones(ids.shape[0], dtype=xp.bool) if self.inp.random_splits else None
                self._finish_subtrees(ids, st, dp, ids, tree_rows, histograms=roots_hist)
            else:
                bd = None if bounds is None else xp.take(bounds, idx, axis=0)
                draws = self._draw(ids, ids)
                drawn = self._drawn_features(draws)
                if drawn is not None:
                    # over the roots' drawn features only, as the next levels build
                    # theirs (both children from their rows): no histogram kept
                    h = self._build(ids, drawn)
                    kept = None
                else:
                    h = kept = self._build(ids)
                rec, imp, ok = self._split(h, st, dp, ids, draws, bd, drawn)
                front = self._part(ids, st, dp, ids, rec, imp, ok, kept, bd)
                del h, kept
        best_first = self.params.max_leaf_nodes is not None
        root_list = list(range(t))
        if best_first:
            self._record_improvements(front)
        while front is not None:
            if best_first:
                _, need = self._simulate(root_list)
                if not need:
                    break
                pos, hit = _lookup(xp, front.ids, from_numpy(xp, np.asarray(sorted(need), dtype=np.int64)))
                chosen = xp.sort(pos[hit])
            else:
                chosen = None  # the whole frontier
            ids, child_ids, new = self._expand(front, chosen)
            if best_first:
                id_l = to_numpy(ids).tolist()
                ch = to_numpy(child_ids).tolist()
                for i, node in enumerate(id_l):
                    self._children[node] = (ch[2 * i], ch[2 * i + 1])
                self._record_improvements(new)
            rest = self._remaining(front, chosen)
            front = self._merge([rest, new])
            self._drop_finished_rows(front)
        selected = self._simulate(root_list)[0] if best_first else None
        if self._subtrees_grown:
            return self._finalize_subtrees()
        return self._finalize(selected)

    def _release_lists(self):
        """The per-round lists concatenated, each list emptied once joined, or the slices of the batch's
        :class:`~gputrees._node_columns.NodeColumns` where it has them: the grower's last use of them.

        Returns ``(parent, depth, tree, stats)``, the expanded nodes' rules
        (:class:`_SplitRules`; their records' statistics are not joined: the
        layout does not read them), ids and first children. Each list's
        arrays are freed as soon as it is joined (a batch of fully grown
        trees holds millions of nodes: every copy of them alive at once at
        the end of the fit would set the fit's peak memory).
        """
        xp = self.xp
        if self._columns is not None:
            parent, depth, tree, stats = self._columns.nodes()
            split_ids, feature, bin_, missing_left, threshold, first_child, is_cat, cat_left = self._columns.splits()
            self._columns = None
            rules = _SplitRules(feature=feature, bin=bin_, missing_left=missing_left, threshold=threshold,
                                is_categorical=is_cat, cat_left=cat_left)
            return (parent, depth, tree, stats), rules, split_ids, first_child
        parent = xp.concat(self._parent)
        self._parent = []
        depth = xp.concat(self._depth)
        self._depth = []
        tree = xp.concat(self._tree)
        self._tree = []
        stats = xp.concat(self._stats, axis=0)
        self._stats = []
        rules = _concat_rules(xp, self._exp_rec, self.n_cat_pos)
        self._exp_rec = []
        split_ids = xp.concat(self._exp_ids) if self._exp_ids else xp.zeros(0, dtype=xp.int64)
        self._exp_ids = []
        first_child = xp.concat(self._exp_first_child) if self._exp_first_child else xp.zeros(0, dtype=xp.int64)
        self._exp_first_child = []
        return (parent, depth, tree, stats), rules, split_ids, first_child

    def _finalize_subtrees(self) -> TreeBatch:
        """The batch of a growth part of whose nodes the subtree kernel grew, laid out by it (its ``layout``):
        every tree's nodes numbered breadth-first, as level-wise growth numbers them."""
        xp = self.xp
        nodes, rules, split_ids, first_child = self._release_lists()
        count, left, feature, bin_, missing_left, threshold, stats, depth, is_cat, cat_left = (
            self._grow_subtrees.layout(xp, self.n_trees, *nodes, split_ids, rules, first_child)
        )
        del nodes, rules, split_ids, first_child
        return TreeBatch(
            node_count=count,
            left=left,
            right=xp.where(left >= 0, left + 1, left),
            feature=feature,
            bin=bin_,
            missing_left=missing_left,
            is_categorical=is_cat,
            cat_left=cat_left,
            threshold=threshold,
            stats=stats,
            depth=depth,
            max_depth=int(to_numpy(xp.max(depth))),
        )

    def _finalize(self, selected) -> TreeBatch:
        xp = self.xp
        parent = xp.concat(self._parent)
        depth = xp.concat(self._depth)
        tree = xp.concat(self._tree)
        stats = xp.concat(self._stats, axis=0)
        n_nodes = self._n_created
        ids = xp.arange(n_nodes, dtype=xp.int64)
        if self._exp_ids:
            exp_ids = xp.concat(self._exp_ids)
            rec = _concat_records(xp, self._exp_rec)
            first_child = xp.concat(self._exp_first_child)
            if selected is not None:
                sel = from_numpy(xp, np.asarray(sorted(selected), dtype=np.int64))
                _, is_sel = _lookup(xp, sel, exp_ids)
                keep_e = xp.astype(xp.nonzero(is_sel)[0], xp.int64)
                exp_ids = xp.take(exp_ids, keep_e)
                rec = _take_record(xp, rec, keep_e)
                first_child = xp.take(first_child, keep_e)
            order = xp.argsort(exp_ids)
            exp_ids = xp.take(exp_ids, order)
        else:
            exp_ids = xp.zeros(0, dtype=xp.int64)
            rec = None
        pos, is_split = _lookup(xp, exp_ids, ids)
        if rec is not None:
            # each node's row of the records as they are (not a sorted copy of every field)
            pos = xp.take(order, pos)
        # nodes kept: roots and children of kept splits
        _, parent_split = _lookup(xp, exp_ids, parent)
        keep = (parent < 0) | parent_split
        new_id = xp.cumulative_sum(xp.astype(keep, xp.int64)) - 1

        def field(name, default, dtype):
            if rec is None:
                return xp.full((n_nodes,), default, dtype=dtype)
            val = xp.take(getattr(rec, name), pos)
            return xp.where(is_split, val, xp.asarray(default, dtype=dtype))

        feature = field("feature", -2, xp.int64)
        bin_ = field("bin", -1, xp.int64)
        miss_left = field("missing_left", False, xp.bool)
        is_cat = field("is_categorical", False, xp.bool)
        if rec is not None and self.any_cat:
            cat_left = xp.take(narrow_categories(xp, rec.cat_left, self.n_cat_pos), pos, axis=0) & is_split[:, None]
        else:
            cat_left = xp.zeros((n_nodes, category_width(self.n_cat_pos)), dtype=xp.bool)
        if rec is not None:
            fc = xp.take(first_child, pos)
            left_old = xp.where(is_split, fc, xp.asarray(-1, dtype=xp.int64))
        else:
            left_old = xp.full((n_nodes,), -1, dtype=xp.int64)
        left_new = xp.where(left_old >= 0, xp.take(new_id, _clamp(xp, left_old, 0)), left_old)
        right_new = xp.where(left_old >= 0, left_new + 1, left_old)
        threshold = field("threshold", -2.0, xp.float64)
        # keep, then lay out per tree (creation order within a tree), padded
        kidx = xp.astype(xp.nonzero(keep)[0], xp.int64)
        tree_k = xp.take(tree, kidx)
        order = xp.argsort(tree_k, stable=True)
        kidx = xp.take(kidx, order)
        tree_k = xp.take(tree_k, order)
        # nodes per tree, from the sorted trees' runs (not a trees x nodes comparison)
        counts = np.diff(to_numpy(xp.searchsorted(tree_k, xp.arange(self.n_trees + 1, dtype=xp.int64)))).astype(
            np.int64
        )
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
        width = int(counts.max())
        # new ids (global order of kept nodes) -> position in the tree-sorted order
        kept_sorted_new = xp.take(new_id, kidx)
        inv = xp.argsort(kept_sorted_new)  # new id -> index in kidx order
        local = xp.arange(kidx.shape[0], dtype=xp.int64) - xp.take(
            from_numpy(xp, offsets), tree_k
        )
        local_of_new = xp.take(local, inv)

        def remap(child):
            return xp.where(child >= 0, xp.take(local_of_new, _clamp(xp, child, 0)), child)

        slot = xp.reshape(
            from_numpy(xp, offsets)[:, None] + xp.arange(width, dtype=xp.int64)[None, :], (-1,)
        )
        valid = xp.reshape(
            xp.arange(width, dtype=xp.int64)[None, :] < from_numpy(xp, counts)[:, None], (-1,)
        )
        src = xp.take(kidx, _clamp(xp, slot, 0, kidx.shape[0] - 1))

        def pad(a, fill, dtype):
            v = xp.take(a, src, axis=0)
            mask = valid if v.ndim == 1 else xp.reshape(valid, (-1,) + (1,) * (v.ndim - 1))
            v = xp.where(mask, v, xp.asarray(fill, dtype=dtype))
            return xp.reshape(v, (self.n_trees, width) + tuple(v.shape[1:]))

        left_l = remap(left_new)
        right_l = remap(right_new)
        max_depth = int(to_numpy(xp.max(depth[kidx]))) if kidx.shape[0] else 0
        row_leaf = None
        if self.record_leaves:
            row_leaf = self.rows.row_leaves(LeafLayout(parent, keep, new_id, local_of_new, len(self._depth)))
        lower = upper = None
        if self._bounds:
            bnd = xp.concat(self._bounds, axis=0)
            lower = pad(bnd[:, 0], -xp.inf, xp.float64)
            upper = pad(bnd[:, 1], xp.inf, xp.float64)
        return TreeBatch(
            node_count=counts,
            left=pad(left_l, -1, xp.int64),
            right=pad(right_l, -1, xp.int64),
            feature=pad(feature, -2, xp.int64),
            bin=pad(bin_, -1, xp.int64),
            missing_left=pad(miss_left, False, xp.bool),
            is_categorical=pad(is_cat, False, xp.bool),
            cat_left=pad(cat_left, False, xp.bool),
            threshold=pad(threshold, -2.0, xp.float64),
            stats=pad(stats, 0.0, xp.float64),
            depth=pad(depth, 0, xp.int64),
            max_depth=max_depth,
            row_leaf=row_leaf,
            lower=lower,
            upper=upper,
        )


def grow(xp, inputs: GrowerInputs, params: GrowerParams, rows=None) -> TreeBatch:
    """Grow the trees of a batch.

    Parameters
    ----------
    xp : array namespace
    inputs : GrowerInputs
    params : GrowerParams
    rows : row set or None
        Where the rows live (see :mod:`gputrees._rows`); None builds a
        :class:`~gputrees._rows.LocalRows` from ``inputs`` (codes, channels,
        multiplicities). A distributed row set lets ``inputs`` leave those None.

    With a kernel set that grows a tree in one compiled call
    (``FastPaths.grow_tree``, the Numba set's boosting trees of the common
    case), local rows are grown there when it covers the inputs: the same
    tree as the :class:`Grower`'s, bit for bit.

    Returns
    -------
    TreeBatch
    """
    # one boosting tree in one compiled call where the kernel set has one that covers the case
    if rows is None:
        batch = inputs.kernels.fast.grow_tree(xp, inputs, params)
        if batch is not None:
            return batch
    # the kernels may reuse their histogram buffers while the batch grows (Kernels.workspace)
    with inputs.kernels.workspace():
        return Grower(xp, inputs, params, rows).grow()
