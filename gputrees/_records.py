"""The records every layer shares: what the estimators hand the grower, the grower the kernels, and back.

This module is the bottom of the package: it imports nothing of gputrees
but the backend helpers, so that the kernels (:mod:`gputrees.kernels`), the
engine (binning, grower, splitting, pruning) and the estimators all speak in
these types without importing each other.

* the grower's inputs and parameters (:class:`GrowerInputs`,
  :class:`GrowerParams`) and its output (:class:`TreeBatch`, and a boosting
  round's :class:`Round`);
* the split search's record and constraints (:class:`SplitRecord`,
  :class:`SplitConstraints`, :class:`SubtreeParams`);
* the row side's records (:class:`ActiveRows`, :class:`TreeRows`,
  :class:`LeafLayout`);
* the codes by which compiled kernels know a criterion or a loss
  (:func:`criterion_code`, :func:`loss_code`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._backend import to_numpy

__all__ = [
    "DEFAULT_MEMORY_LIMIT", "GrowerParams", "GrowerInputs", "TreeBatch", "Round", "SplitConstraints",
    "SubtreeParams", "SplitRecord", "ActiveRows", "TreeRows", "LeafLayout", "batch_trees", "category_positions",
    "category_width", "mapper_category_positions", "narrow_categories", "stack_batches",
    "stack_node_arrays", "given_root_sums",
    "unit_counts", "GINI", "ENTROPY", "MISCLASSIFICATION", "SQUARED_ERROR", "FRIEDMAN_MSE", "POISSON", "NEWTON",
    "NEWTON_GH", "LOSS_SQUARED_ERROR", "LOSS_BINARY_LOG", "LOSS_MULTINOMIAL", "criterion_code", "loss_code",
    "DRAWN_BUILD_SHARE",
]

#: Per-node feature draws of at most this share of the features build both
#: children of a pair over their drawn features (the grower's and the GPU device step's):
#: rows x k updates for the pair, which at k <= F / 2 is at most what the
#: smaller child alone costs over every feature (up to rows / 2 x F) before
#: the subtraction; random forests draw sqrt(F) (5 of 28).
DRAWN_BUILD_SHARE = 0.5
#: Default bound on the histogram memory of a round, in bytes.
DEFAULT_MEMORY_LIMIT = 1 << 30

# -- codes of the compiled rules ---------------------------------------------------
#: Criterion codes (:attr:`gputrees._criteria.Criterion.code`): how compiled
#: kernels select a criterion's formulas in :mod:`gputrees.kernels.rules`.
GINI, ENTROPY, MISCLASSIFICATION, SQUARED_ERROR, FRIEDMAN_MSE, POISSON, NEWTON, NEWTON_GH = range(8)
#: Loss codes (:attr:`gputrees._loss.Loss.code`) of the losses with compiled round ends.
LOSS_SQUARED_ERROR, LOSS_BINARY_LOG, LOSS_MULTINOMIAL = range(3)


def _own_code(obj):
    # the code set by the object's own class: a subclass may change the
    # formulas, and then has none until it names its own
    return type(obj).__dict__.get("code")


def criterion_code(criterion) -> int | None:
    """The criterion's code, or None where its exact class has none (compiled kernels then do not cover it)."""
    return _own_code(criterion)


def loss_code(loss) -> int | None:
    """The loss's code, or None where its exact class has none (no compiled round end)."""
    return _own_code(loss)


# -- the grower's inputs and output ------------------------------------------------
@dataclass(frozen=True)
class GrowerParams:
    """Stopping rules and limits (scikit-learn's meanings)."""

    max_depth: int | None = None
    min_samples_split: int = 2
    min_samples_leaf: int = 1
    min_weight_leaf: float = 0.0
    min_impurity_decrease: float = 0.0
    max_leaf_nodes: int | None = None
    max_features: int | None = None
    memory_limit: int = DEFAULT_MEMORY_LIMIT
    sorted_small_nodes: bool = True
    #: thresholds of exact features at the next value present in the node
    #: (scikit-learn) rather than the feature's next value bin (XGBoost)
    local_thresholds: bool = True


@dataclass(frozen=True)
class GrowerInputs:
    """Data of one fit.

    Attributes
    ----------
    codes : array of shape (n_samples, n_features), uint8/uint16
    channels : array of shape (n_samples, n_channels) or (n_trees, n_samples, n_channels), float64
        Per-row channels, channel 0 the row count (see :mod:`gputrees._criteria`);
        3-D when each tree of the batch has its own (multi-class boosting:
        one gradient and hessian per class), then ``multiplicity`` must be None.
    multiplicity : array of shape (n_trees, n_samples), float64, or None
        How many times each row enters each tree (bootstrap counts; 0 = out).
        None means one tree with every row once.
    bin_mapper : BinMapper
    criterion : Criterion
    kernels : Kernels
    rng : numpy.random.Generator
        Host generator of the trees' draw keys (one per tree, drawn when the
        grower draws features or extra-trees thresholds; the nodes' draws
        derive from them, :mod:`gputrees.kernels.node_draws`).
    weight_multiplicity : array of shape (n_trees, n_samples), float64, or None
        Factor of the weighted channels (all but the count) per tree and row;
        None means ``multiplicity``. Differs from it for per-tree class
        weights (``class_weight="balanced_subsample"``).
    tree_features : ndarray of shape (n_trees, n_features), bool (host), or None
        Features each tree may split on (random subspaces); None means all.
    random_splits : bool
        Extremely randomised trees: one random candidate per (node, feature).
    record_leaves : bool
        Record the leaf every row ends in, per tree (``TreeBatch.row_leaf``):
        boosting updates its raw predictions from it without a prediction
        pass. Needs every (tree, row) pair active (``multiplicity`` None).
    monotonic_cst : ndarray of shape (n_features,), int (host), or None
        -1 / 0 / +1 per feature: node values must decrease / may do anything /
        must increase with the feature. Enforced as XGBoost does: a split on a
        constrained feature is valid only if its children's values (clipped to
        the node's bounds) are ordered, and the children's bounds are cut at
        the mean of the two values. Needs a criterion with ``leaf_value``
        (the Newton criterion) and no sort-based small-node search.
    codes_by_feature : array of shape (n_features, n_samples) or None
        ``codes`` feature-major (``Kernels.codes_by_feature``), for kernel
        sets whose routing reads it; a fit growing one batch per round makes
        it once. None: made per batch when the kernel set uses one.
    count_free_histograms : bool
        The caller allows histograms without the count channel: it knows
        that no code is the missing bin (no missing value in the rows), and
        its kernels take any block of the channel table's columns (not the
        fixed-point ones of quantised channels, whose scale covers every
        channel). The grower leaves the count out where the criterion has a
        count-free form (``Criterion.without_count``, boosting's Newton) and
        the other conditions hold (see :class:`Grower`).
    unit_count_channel : bool
        The caller knows that channel 0 (the count) is 1 on every row
        (boosting's rounds without a row subsample): the grower takes it
        as given instead of checking the rows (a pass over the channel
        table every tree, and a host synchronisation on a GPU).
    channel_sums : array of shape (n_channels,), float64, or None
        The sums of ``channels`` over every row, where the caller made them
        (boosting's compiled round end, in an order of its own): the root's
        statistics of a batch of one tree with every row once
        (``multiplicity`` None), taken as given instead of summing the rows
        in row order (a serial pass). None: the grower sums the rows.
    """

    codes: object
    channels: object
    multiplicity: object
    bin_mapper: object
    criterion: object
    kernels: object
    rng: object
    weight_multiplicity: object = None
    tree_features: object = None
    random_splits: bool = False
    record_leaves: bool = False
    monotonic_cst: object = None
    codes_by_feature: object = None
    count_free_histograms: bool = False
    unit_count_channel: bool = False
    channel_sums: object = None


@dataclass(frozen=True)
class TreeBatch:
    """Fitted trees as padded arrays (trees x nodes), on the device.

    Node 0 of each tree is its root; nodes are numbered in creation order
    (breadth-first for depth-wise growth). Padding nodes are leaves.

    Attributes
    ----------
    node_count : ndarray of shape (n_trees,), int64 (host), or None
        None for a batch in the perfect-tree layout the GPU's device step
        grows (node ``i``'s children ``2 i + 1`` and ``2 i + 2``, the nodes
        that do not exist unreachable padding): it predicts as it is, and
        :func:`gputrees.kernels.reference.compact_batch` numbers its nodes as
        here before a fit keeps it.
    left, right : (n_trees, n_nodes) int64, -1 at leaves
    feature : (n_trees, n_nodes) int64, -2 at leaves
    bin : (n_trees, n_nodes) int64, numerical split bin, -1 otherwise
    missing_left : (n_trees, n_nodes) bool
    is_categorical : (n_trees, n_nodes) bool
    cat_left : (n_trees, n_nodes, width) bool
        At a categorical split, the codes it sends left: a column per code
        of a categorical feature, the missing bin's last
        (:func:`category_width`; read through
        :func:`gputrees.kernels.rules.category_column`); width 0 without
        categorical features.
    threshold : (n_trees, n_nodes) float64 (-2 at leaves, NaN for categorical)
    stats : (n_trees, n_nodes, n_channels) float64
    depth : (n_trees, n_nodes) int64
    max_depth : int
    row_leaf : (n_trees, n_samples) int64 or None
        With ``GrowerInputs.record_leaves``: the leaf of every training row.
    lower, upper : (n_trees, n_nodes) float64 or None
        With ``monotonic_cst``: bounds of each node's value.
    """

    node_count: np.ndarray
    left: object
    right: object
    feature: object
    bin: object
    missing_left: object
    is_categorical: object
    cat_left: object
    threshold: object
    stats: object
    depth: object
    max_depth: int
    row_leaf: object = None
    lower: object = None
    upper: object = None

    def tree(self, t: int) -> "TreeBatch":
        """Tree ``t`` of the batch, as a batch of one tree (arrays cut to its nodes)."""
        n = int(self.node_count[t])

        def cut(a):
            return a[t : t + 1, :n, ...]

        depth = cut(self.depth)
        return TreeBatch(
            node_count=np.asarray([n], dtype=np.int64),
            left=cut(self.left),
            right=cut(self.right),
            feature=cut(self.feature),
            bin=cut(self.bin),
            missing_left=cut(self.missing_left),
            is_categorical=cut(self.is_categorical),
            cat_left=cut(self.cat_left),
            threshold=cut(self.threshold),
            stats=cut(self.stats),
            depth=depth,
            max_depth=int(to_numpy(depth).max()) if n else 0,
            row_leaf=None if self.row_leaf is None else self.row_leaf[t : t + 1, :],
            lower=None if self.lower is None else cut(self.lower),
            upper=None if self.upper is None else cut(self.upper),
        )


def stack_node_arrays(xp, arrays, fill, width: int | None = None):
    """Per-tree node arrays (n_trees_i, n_nodes_i, ...) stacked along trees, padded with ``fill`` to one width.

    One array written in place (not a padded copy of each concatenated: a
    small copy per array, which on small data outweighs a tree). Trailing
    axes of different lengths (``cat_left`` of a batch without categorical
    splits) are padded too.
    """
    width = max(int(a.shape[1]) for a in arrays) if width is None else width
    rest = tuple(max(int(a.shape[d]) for a in arrays) for d in range(2, arrays[0].ndim))
    out = xp.full((sum(int(a.shape[0]) for a in arrays), width) + rest, fill, dtype=arrays[0].dtype)
    start = 0
    for a in arrays:
        idx = (slice(start, start + int(a.shape[0])),) + tuple(slice(0, int(d)) for d in a.shape[1:])
        out[idx] = a
        start += int(a.shape[0])
    return out


def stack_batches(xp, batches) -> "TreeBatch":
    """One padded :class:`TreeBatch` of the trees of ``batches``, in order (no ``row_leaf`` or bounds)."""
    width = max(int(b.left.shape[1]) for b in batches)

    def cat(name, fill):
        return stack_node_arrays(xp, [getattr(b, name) for b in batches], fill, width)

    return TreeBatch(
        node_count=np.concatenate([b.node_count for b in batches]),
        left=cat("left", -1),
        right=cat("right", -1),
        feature=cat("feature", -2),
        bin=cat("bin", -1),
        missing_left=cat("missing_left", False),
        is_categorical=cat("is_categorical", False),
        cat_left=cat("cat_left", False),
        threshold=cat("threshold", -2.0),
        stats=cat("stats", 0.0),
        depth=cat("depth", 0),
        max_depth=max(b.max_depth for b in batches),
    )


@dataclass(frozen=True)
class Round:
    """The K trees of one boosting round and their leaf values (device arrays).

    ``values`` (K, n_nodes) float64 are the values added to the raw
    predictions (learning rate included); 0 at internal nodes.
    """

    batch: TreeBatch
    values: object


# -- the split search -------------------------------------------------------------
@dataclass(frozen=True)
class SplitConstraints:
    """Per-split constraints (scalars)."""

    min_samples_leaf: int
    min_weight_leaf: float


@dataclass(frozen=True)
class SubtreeParams:
    """The grower's stopping rules for a kernel that grows whole subtrees (``FastPaths.subtrees``).

    ``max_depth`` -1: none; ``max_features`` the features drawn per node
    (``n_features``: all); ``local_thresholds`` as
    :attr:`GrowerParams.local_thresholds` (read where the kernel searches
    every node by histograms: a batch with categorical features).
    """

    min_samples_split: float
    max_depth: int
    min_impurity_decrease: float
    max_features: int
    local_thresholds: bool = True


@dataclass(frozen=True)
class SplitRecord:
    """Best split of each of ``m`` nodes (arrays on the device).

    Attributes
    ----------
    found : (m,) bool
        A valid split exists.
    proxy : (m,) float64
        Proxy gain of the best split (``-inf`` when none).
    feature : (m,) int64
    bin : (m,) int64
        Numerical splits: codes ``<= bin`` go left. ``-1`` for categorical ones.
    missing_left : (m,) bool
        Where the missing bin goes. For nodes without missing values, the side
        with more training rows (scikit-learn's rule); with a criterion
        without a count channel (:class:`~gputrees._criteria.NewtonGH`),
        which cannot tell, False, and the grower sets it from the children's
        row counts once the rows are routed.
    is_categorical : (m,) bool
    cat_left : (m, n_bins) bool
        Categorical splits: which codes go left (the missing bin follows
        ``missing_left``). All False for numerical splits.
    left, right : (m, n_channels) float64
        Children statistics.
    threshold : (m,) float64
        Numerical splits send ``x <= threshold`` left. For exactly binned
        features it is the midpoint of the largest value left and the smallest
        value right *in the node* (scikit-learn's threshold); for quantile
        bins, the bin edge; ``inf`` when only missing values go right; NaN for
        categorical splits.
    """

    found: object
    proxy: object
    feature: object
    bin: object
    missing_left: object
    is_categorical: object
    cat_left: object
    left: object
    right: object
    threshold: object


# -- the row side -----------------------------------------------------------------
@dataclass(frozen=True)
class ActiveRows:
    """The (tree, row) pairs still in growing nodes (device arrays of length m).

    Attributes
    ----------
    row : (m,) int64
        Row of the binned matrix.
    chan_index : (m,) int64
        Row of the channel table holding this pair's channels (the row itself,
        or ``tree * n + row`` when every tree has its own channels).
    node : (m,) int64
        Node the pair is in (global node id of the batch).
    mult : (m,) float64 or None
        Multiplicity (bootstrap count) applied to the first channel, and to
        every channel when ``wmult`` is None. None means 1.
    wmult : (m,) float64 or None
        Multiplicity applied to the other channels (class-weighted bootstrap). None
        means ``mult``.
    key : (m,) int64 or None
        Identity of the pair, ``tree * n + row`` (None: ``row``, one tree).
    bounds : (n_ids + 1,) int64 or None
        When given, the pairs are sorted by node id and node ``k``'s pairs
        are the positions ``bounds[k]:bounds[k + 1]`` (ids from ``n_ids`` on
        have none); a kernel that routes pairs may give it, and the row-level
        kernels may read it instead of scanning ``node``. None: unknown.

    A kernel set may return the pairs in another order (``route_rows`` of the
    Numba set groups them by node); the pairs of one node always keep their
    relative order, so sums over a node's rows are made in the same order.
    """

    row: object
    chan_index: object
    node: object
    mult: object = None
    wmult: object = None
    key: object = None
    bounds: object = None


@dataclass(frozen=True)
class TreeRows:
    """The rows of whole trees, as the multiplicities give them: tree ``t``'s in-bag rows are those with
    ``multiplicity[t, r] > 0``, in row order (the pairs a :class:`gputrees._rows.LocalRows` would make).

    Attributes
    ----------
    multiplicity : array of shape (n_trees, n_samples), float64
    weight_multiplicity : array of shape (n_trees, n_samples), float64, or None
        See :class:`gputrees._records.GrowerInputs`.
    channels : array of shape (n_samples, C), float64
    """

    multiplicity: object
    weight_multiplicity: object
    channels: object


@dataclass(frozen=True)
class LeafLayout:
    """How the grower renumbered its nodes at the end (for the rows' leaves).

    Attributes
    ----------
    parent : array of shape (n_created,), int64
        Parent of every created node (-1 for roots).
    keep : array of shape (n_created,), bool
        Whether the node is in the final trees (best-first growth discards
        speculative children).
    new_id : array of shape (n_created,), int64
        Global id of each kept node after dropping the others.
    local_of_new : array of shape (n_kept,), int64
        Position of each kept node inside its tree.
    n_rounds : int
        Rounds grown; bounds the walk up to a kept ancestor.
    """

    parent: object
    keep: object
    new_id: object
    local_of_new: object
    n_rounds: int


def batch_trees(channels, multiplicity) -> int:
    """Trees of a batch as its row set counts them: the multiplicities' rows, else the per-tree channels' (3-D), else 1."""
    if multiplicity is not None:
        return int(multiplicity.shape[0])
    return int(channels.shape[0]) if channels.ndim == 3 else 1


def given_root_sums(xp, channels, multiplicity, sums):
    """``GrowerInputs.channel_sums`` as the root's statistics (1, n_channels) float64, or None where not given.

    Raises ValueError where they cannot be the root's: a batch of more than
    one tree, multiplicities, or not one sum a channel.
    """
    if sums is None:
        return None
    c = int(channels.shape[-1])
    t = batch_trees(channels, multiplicity)
    if t != 1 or multiplicity is not None or tuple(sums.shape) != (c,):
        raise ValueError(
            f"channel_sums of shape {tuple(sums.shape)} needs one tree with every row once and one sum a "
            f"channel ({c}); got {t} trees, multiplicity {'given' if multiplicity is not None else None}"
        )
    return xp.reshape(xp.asarray(sums, dtype=xp.float64), (1, c))


def mapper_category_positions(bin_mapper) -> int:
    """:func:`category_positions` of a mapper's categorical features over its columns; 0 without any."""
    is_cat = np.asarray(bin_mapper.is_categorical, dtype=bool)
    return category_positions(is_cat, int(bin_mapper.n_bins), bin_mapper) if is_cat.any() else 0


def category_width(n_cat_pos: int) -> int:
    """The columns of a batch's codes sent left (``TreeBatch.cat_left``): a categorical feature's codes (below
    ``n_cat_pos``, :func:`category_positions`) and the missing bin last; none without categorical features.
    Not a column per bin: a fully grown forest has millions of nodes."""
    return n_cat_pos + 1 if n_cat_pos > 0 else 0


def narrow_categories(xp, cat_left, n_cat_pos: int):
    """Codes sent left of a column per bin (``(..., n_bins)``, the missing bin last, as a level's split records
    hold them) cut to :func:`category_width`'s columns; as they are where already that narrow."""
    width = category_width(n_cat_pos)
    if cat_left.shape[-1] <= width:
        return cat_left
    return xp.concat([cat_left[..., :n_cat_pos], cat_left[..., -1:]], axis=-1)


def category_positions(is_categorical, n_bins: int, bin_mapper) -> int:
    """How many positions of a node's sorted categories a categorical split search scans: the most categories
    of a categorical feature (a feature's codes stay below its ``n_value_bins``; past a node's present
    categories every position repeats the last), or every value bin where the mapper's counts are not the
    columns' (no mapper, features drawn per node)."""
    n_value_bins = None if bin_mapper is None else np.asarray(bin_mapper.n_value_bins)
    if n_value_bins is None or n_value_bins.shape[0] != is_categorical.shape[0]:
        return n_bins - 1
    return min(n_bins - 1, int(np.max(n_value_bins[is_categorical])))


def unit_counts(xp, chan, known: bool = False) -> bool:
    """Whether channel 0 (the count) of the channel table ``chan`` (rows, C) is 1 on every row.

    ``known``: the caller's word (``GrowerInputs.unit_count_channel``), taken
    without reading the rows; else one pass over them (a host
    synchronisation on a GPU). Count-free histograms take the children's
    counts from their rows (:meth:`LocalRows.counts`), which is their count
    channel's sum only then.
    """
    return bool(known) or bool(xp.all(chan[:, 0] == 1.0))
