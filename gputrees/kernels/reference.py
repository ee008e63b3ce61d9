"""Reference kernels, written only against the array API standard.

They are the oracle for the fast kernels and what every kernel set runs where
it has no faster kernel of its own (:func:`gputrees.kernels.assemble`):
binning, histograms, sums, routing, the segmented scans of the sort-based
search, the prediction walk and a boosting round's end. The histogram is a
sort-based segmented sum computed inside
each bin (by doubling), so a bin's rounding depends only on its own rows: it
is exact whenever each bin's partial sums are representable (counts, integer
weights, one-hot classes), and otherwise equal to float rounding of the bin.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._backend import from_numpy, to_numpy
from . import rules


def build_histograms(xp, codes, rows, node, weights, n_nodes: int, n_bins: int):
    """Histograms of a batch of nodes.

    Parameters
    ----------
    codes : array of shape (n_samples, n_features), uint8 or uint16
        The binned training matrix.
    rows : array of shape (n_rows,), int64
        Row of ``codes`` for each contributing row (a row may appear several
        times, once per tree of a batch).
    node : array of shape (n_rows,), int64
        Histogram slot, ``0 <= node < n_nodes``, of each contributing row.
    weights : array of shape (n_rows, n_channels), float64
        The row's channels.
    n_nodes, n_bins : int

    Returns
    -------
    hist : array of shape (n_nodes, n_features, n_bins, n_channels), float64
    """
    n_features = codes.shape[1]
    n_channels = weights.shape[1]
    size = n_nodes * n_features * n_bins
    sub = xp.astype(xp.take(codes, rows, axis=0), xp.int64)
    feat = xp.arange(n_features, dtype=xp.int64)
    key = xp.reshape((node[:, None] * n_features + feat[None, :]) * n_bins + sub, (-1,))
    order = xp.argsort(key, stable=True)
    skey = xp.take(key, order)
    src_row = order // n_features
    w = xp.take(weights, src_row, axis=0)
    if skey.shape[0] == 0:
        return xp.zeros((n_nodes, n_features, n_bins, n_channels), dtype=xp.float64)
    # longest run of one key bounds the doubling passes
    bounds = xp.astype(
        xp.searchsorted(skey, xp.arange(size + 1, dtype=xp.int64), side="left"), xp.int64
    )
    lengths = bounds[1:] - bounds[:-1]
    sums = segmented_cumsum(xp, w, skey, int(xp.max(lengths)))
    last = xp.clip(bounds[1:] - 1, 0, None)
    hist = xp.where((lengths > 0)[:, None], xp.take(sums, last, axis=0), xp.zeros((1, n_channels), dtype=xp.float64))
    return xp.reshape(hist, (n_nodes, n_features, n_bins, n_channels))


def bin_codes(xp, X, mapper):
    """Bin codes of ``X`` (the binning's transform, one feature at a time).

    Parameters
    ----------
    X : array of shape (n_samples, n_features), float64
        NaN marks missing values; categorical columns hold category values.
    mapper : BinMapper
        Fitted edges (:class:`gputrees._binning.BinMapper`): a numerical value
        ``x`` gets the first ``b`` with ``x <= thresholds[f, b]`` among the
        feature's ``n_value_bins[f] - 1`` edges; a category its position in
        ``category_values[f]``; NaN and unseen categories the missing bin.

    Returns
    -------
    codes : array of shape (n_samples, n_features), uint8 or uint16
    """
    return xp.stack([column_codes(xp, X[:, f], mapper, f) for f in range(X.shape[1])], axis=1)


def stored_codes(indptr, data, mapper):
    """Bin codes of a sparse matrix's stored values, column by column (:func:`column_codes`' rule).

    Parameters
    ----------
    indptr : ndarray of shape (n_features + 1,), int
        Feature ``f``'s values are ``data[indptr[f]:indptr[f + 1]]`` (a CSC matrix's layout).
    data : ndarray of shape (n_stored,), float64
        NaN marks missing values.
    mapper : BinMapper

    Returns
    -------
    codes : ndarray of shape (n_stored,), uint8 or uint16
    """
    out = np.empty(data.shape[0], dtype=getattr(np, mapper.code_dtype_name))
    for f in range(indptr.shape[0] - 1):
        a, b = int(indptr[f]), int(indptr[f + 1])
        if b > a:
            out[a:b] = column_codes(np, data[a:b], mapper, f)
    return out


def note_sparse_codes(codes, n_codes: int, columns) -> None:
    """Nothing: the reference reads binned codes as they are. A set that lays out mostly-default codes (the
    Numba set's :func:`gputrees.kernels.cpu.sparse_codes.note_sparse_codes`) is told here which codes a sparse
    matrix's binning made, and from which columns (:func:`gputrees._sparse.sparse_codes`)."""


def column_codes(xp, x, mapper, f: int):
    """Bin codes (uint8 or uint16) of values ``x`` (m,) float64 of feature ``f`` (:func:`bin_codes`'s rule)."""
    dtype = getattr(xp, mapper.code_dtype_name)
    missing = xp.asarray(mapper.missing_bin, dtype=xp.int64)
    nan = xp.isnan(x)
    if mapper.is_categorical[f]:
        cv = mapper.category_values[f]
        if cv.shape[0] == 0:
            code = xp.full(x.shape, mapper.missing_bin, dtype=xp.int64)
        else:
            pos = xp.astype(xp.searchsorted(cv, x), xp.int64)
            pos_c = xp.minimum(pos, xp.asarray(cv.shape[0] - 1, dtype=xp.int64))  # (searchsorted: pos >= 0)
            found = xp.take(cv, pos_c) == x
            code = xp.where(found & ~nan, pos_c, missing)
    else:
        nb = int(mapper.n_value_bins[f])
        edges = mapper.thresholds[f, : nb - 1]
        code = xp.astype(xp.searchsorted(edges, x, side="left"), xp.int64)
        code = xp.where(nan, missing, code)
    return xp.astype(code, dtype)


def sorted_columns(xp, X, f0: int, f1: int, rows=None):
    """The sorted non-missing values of each column ``f0 .. f1 - 1`` of ``X`` (or of its ``rows``).

    What the binning places its edges on.

    Parameters
    ----------
    X : array of shape (n_samples, n_features), float64 or float32
        NaN marks missing values.
    f0, f1 : int
        The columns, ``0 <= f0 <= f1 <= n_features``.
    rows : array of shape (n_rows,), int64, optional
        The rows to read (a sample); all rows when None.

    Returns
    -------
    list of f1 - f0 arrays of shape (m_j,), float64
        Entry ``j``: the non-NaN values of column ``f0 + j`` (of ``rows``),
        ascending, each as many times as it occurs.
    """
    block = X[:, f0:f1] if rows is None else xp.take(X[:, f0:f1], rows, axis=0)
    out = []
    for j in range(f1 - f0):
        x = block[:, j]
        # float32 values sorted as they are (half the bytes to move), then converted (exactly)
        out.append(xp.astype(xp.sort(x[~xp.isnan(x)], stable=False), xp.float64, copy=False))
    return out


def covered_values(xp, X, features, values):
    """For each listed feature, whether every non-missing value of its column is among given values.

    The binning's check that a feature whose row sample showed few distinct
    values has no others (then its bins are exact).

    Parameters
    ----------
    X : array of shape (n_samples, n_features), float64 or float32
        NaN marks missing values.
    features : sequence of int, length k
    values : sequence of k arrays of shape (m_j,), float64, sorted ascending, no NaN

    Returns
    -------
    list of k bool
        Entry ``j``: every non-NaN ``X[i, features[j]]`` equals some ``values[j][t]``.
    """
    out = []
    for f, v in zip(features, values):
        x = X[:, f]
        if v.shape[0] == 0:
            out.append(bool(xp.all(xp.isnan(x))))
            continue
        pos = xp.clip(xp.astype(xp.searchsorted(v, x), xp.int64), 0, v.shape[0] - 1)
        out.append(bool(xp.all((xp.take(v, pos) == x) | xp.isnan(x))))
    return out


def _shift(xp, a, d, fill):
    """``a`` moved down by ``d`` rows, the first ``d`` rows set to ``fill``."""
    n = a.shape[0]
    d = min(d, n)
    pad = xp.full((d,) + tuple(a.shape[1:]), fill, dtype=a.dtype)
    return xp.concat([pad, a[: n - d, ...]], axis=0)


def segmented_cumsum(xp, values, seg, max_len: int):
    """Inclusive running sum of ``values`` inside runs of equal ``seg``.

    Parameters
    ----------
    values : array of shape (n,) or (n, c), float64
    seg : array of shape (n,), int64, equal values contiguous
    max_len : int
        Upper bound on the length of a run.

    Returns
    -------
    array like ``values``

    By doubling (Hillis-Steele): ``ceil(log2(max_len))`` passes; sums stay
    local to a run, so rounding does not depend on earlier runs.
    """
    d = 1
    out = values
    while d < max_len:
        same = _shift(xp, seg, d, -1) == seg
        prev = _shift(xp, out, d, 0)
        mask = same[:, None] if out.ndim > 1 else same
        out = out + xp.where(mask, prev, xp.zeros_like(prev))
        d *= 2
    return out


def segment_max(xp, values, seg, max_len: int):
    """Maximum of ``values`` (n,) over its run of equal ``seg``, for every element."""
    return _segment_reduce(xp, values, seg, max_len, xp.maximum)


def segment_min(xp, values, seg, max_len: int):
    """Minimum of ``values`` (n,) over its run of equal ``seg``, for every element."""
    return _segment_reduce(xp, values, seg, max_len, xp.minimum)


def _segment_reduce(xp, values, seg, max_len, op):
    d = 1
    out = values
    while d < max_len:
        same = _shift(xp, seg, d, -1) == seg
        out = xp.where(same, op(out, _shift(xp, out, d, 0)), out)
        d *= 2
    last = xp.astype(xp.searchsorted(seg, seg, side="right"), xp.int64) - 1
    return xp.take(out, last)


# -- row-level operations of the grower ---------------------------------------
def active_weights(xp, active, chan, mask=None):
    """Channels of the active pairs (optionally those where ``mask``), multiplicities applied.

    Parameters
    ----------
    active : ActiveRows
    chan : array of shape (n_chan_rows, n_channels), float64
    mask : array of shape (m,), bool, or None

    Returns
    -------
    array of shape (m_selected, n_channels), float64
    """

    def sel(a):
        return a if mask is None else a[mask]

    w = xp.take(chan, sel(active.chan_index), axis=0)
    if active.mult is None:
        return w
    m = sel(active.mult)
    if active.wmult is None:
        return w * m[:, None]
    return xp.concat([w[:, :1] * m[:, None], w[:, 1:] * sel(active.wmult)[:, None]], axis=1)


def node_histograms(xp, codes, active, chan, slot_of_node, n_slots: int, n_bins: int, *, build=None):
    """Histograms of the nodes that have a slot, from their active rows.

    Parameters
    ----------
    codes : array of shape (n_samples, n_features), uint8 or uint16
    active : ActiveRows
    chan : array of shape (n_chan_rows, n_channels), float64
    slot_of_node : array of shape (n_nodes,), int64
        Histogram slot of every node id, ``-1`` for nodes not built.
    n_slots, n_bins : int
    build : callable or None
        The ``build_histograms`` kernel to use (default: this module's).

    Returns
    -------
    hist : array of shape (n_slots, n_features, n_bins, n_channels), float64
    """
    build = build or build_histograms
    slot = xp.take(slot_of_node, active.node)
    hit = slot >= 0
    return build(xp, codes, active.row[hit], slot[hit], active_weights(xp, active, chan, hit), n_slots, n_bins)


def node_sums(xp, active, chan, slot_of_node, n_slots: int, *, build=None):
    """Channel sums of the nodes that have a slot: array of shape (n_slots, n_channels), float64."""
    build = build or build_histograms
    slot = xp.take(slot_of_node, active.node)
    hit = slot >= 0
    slot = slot[hit]
    one = xp.zeros((1, 1), dtype=xp.uint8)
    rows = xp.zeros(slot.shape, dtype=xp.int64)
    h = build(xp, one, rows, slot, active_weights(xp, active, chan, hit), n_slots, 1)
    return xp.reshape(h, (n_slots, chan.shape[1]))


def route_rows(xp, codes, active, slot_of_node, split, first_child: int, missing_bin: int):
    """Children of the active rows of split nodes.

    Parameters
    ----------
    codes : array of shape (n_samples, n_features), uint8 or uint16
    active : ActiveRows
    slot_of_node : array of shape (n_nodes,), int64
        Position in ``split`` of every node being split, ``-1`` for the others.
    split : SplitRecord
        The splits, one per slot (``feature``, ``bin``, ``missing_left``,
        ``is_categorical``, ``cat_left`` are read).
    first_child : int
        Node id of the left child of slot 0; slot ``s`` gets children
        ``first_child + 2 s`` (left) and ``first_child + 2 s + 1`` (right).
    missing_bin : int

    Returns
    -------
    ActiveRows
        The same pairs with their new node (unchanged for pairs in other
        nodes), here in the same order.
    """
    n_features = codes.shape[1]
    slot = xp.take(slot_of_node, active.node)
    hit = slot >= 0
    slot = xp.clip(slot, 0, None)
    feat = xp.take(split.feature, slot)
    code = xp.astype(xp.take(xp.reshape(codes, (-1,)), active.row * n_features + feat), xp.int64)
    go_left = code <= xp.take(split.bin, slot)
    if split.cat_left.shape[-1] > 0:  # (m, 0) when no feature is categorical
        n_bins = split.cat_left.shape[-1]
        cat_go = xp.take(xp.reshape(split.cat_left, (-1,)), slot * n_bins + code)
        go_left = xp.where(xp.take(split.is_categorical, slot), cat_go, go_left)
    go_left = xp.where(code == missing_bin, xp.take(split.missing_left, slot), go_left)
    child = first_child + 2 * slot + xp.astype(~go_left, xp.int64)
    return dataclasses.replace(active, node=xp.where(hit, child, active.node), bounds=None)


def drawn_histograms(xp, codes, active, chan, slot_of_node, n_slots: int, n_bins: int, features, *,
                     node_histograms=node_histograms):
    """Histograms of the nodes that have a slot over their drawn features only.

    The reference: every feature's histograms (``node_histograms``, the
    kernel set's), then each slot's drawn ones (:func:`take_features`).

    Parameters
    ----------
    codes, active, chan, slot_of_node, n_slots, n_bins
        As :func:`node_histograms`.
    features : array of shape (n_slots, k), int64
        The features of each slot's histograms, in order.

    Returns
    -------
    array of shape (n_slots, k, n_bins, n_channels), float64
    """
    full = node_histograms(xp, codes, active, chan, slot_of_node, n_slots, n_bins)
    return take_features(xp, full, features)


def take_features(xp, hist, features):
    """``out[s, j] = hist[s, features[s, j]]``: each node's histograms of some features.

    Parameters
    ----------
    hist : array of shape (m, n_features, n_bins, C), float64
    features : array of shape (m, k), int64

    Returns
    -------
    array of shape (m, k, n_bins, C), float64
    """
    m, n_features = int(hist.shape[0]), int(hist.shape[1])
    k = int(features.shape[1])
    flat = xp.reshape(hist, (m * n_features,) + tuple(hist.shape[2:]))
    sel = xp.reshape(xp.arange(m, dtype=xp.int64)[:, None] * n_features + features, (-1,))
    return xp.reshape(xp.take(flat, sel, axis=0), (m, k) + tuple(hist.shape[2:]))


def sibling_histograms(xp, parent_hist, parent_index, small, small_is_right, children):
    """Histograms of some children of sibling pairs: the built (smaller) child's, or its parent's minus it.

    Parameters
    ----------
    parent_hist : array of shape (n_parents, n_features, n_bins, C), float64, or a tuple of such arrays
        A tuple's rows are numbered one after the other (the grower keeps a
        level's chunks apart).
    parent_index : array of shape (m,), int64
        Row of ``parent_hist`` holding pair ``p``'s parent.
    small : array of shape (m, n_features, n_bins, C), float64
        Histogram of pair ``p``'s smaller child (the one built from its rows).
    small_is_right : array of shape (m,), bool
        Whether that child is the right one.
    children : array of shape (k,), int64
        The children wanted, in the pairs' (left, right) order: ``2 p`` is
        pair ``p``'s left child, ``2 p + 1`` its right.

    Returns
    -------
    array of shape (k, n_features, n_bins, C), float64
        The other child of a pair is ``parent - small``, subtracted as here
        by every kernel set (the same numbers).
    """
    m = int(small.shape[0])
    if isinstance(parent_hist, tuple):
        parent_hist = xp.concat(parent_hist, axis=0)
    large = xp.take(parent_hist, parent_index, axis=0) - small
    i = xp.arange(m, dtype=xp.int64)
    left_pos = xp.where(small_is_right, i + m, i)
    right_pos = xp.where(small_is_right, i, i + m)
    pos = xp.reshape(xp.stack([left_pos, right_pos], axis=1), (-1,))
    return xp.take(xp.concat([small, large], axis=0), xp.take(pos, children), axis=0)


def children_slot_table(xp, n_ids: int, first: int, count: int):
    """Slot table (n_ids,) int64 giving node ``first + t`` the slot ``t`` (``0 <= t < count``), every other id -1.

    The table of a routing's children, as :func:`node_sums` takes it.
    """
    table = xp.arange(int(n_ids), dtype=xp.int64) - int(first)
    return xp.where((table >= 0) & (table < int(count)), table, xp.asarray(-1, dtype=xp.int64))


def route_and_sum(xp, codes, active, chan, slot_of_node, split, first_child: int, missing_bin: int, *,
                  route=None, sums=None):
    """Route the pairs (:func:`route_rows`), then sum the children's channels (:func:`node_sums`).

    Parameters
    ----------
    codes, active, slot_of_node, split, first_child, missing_bin
        As :func:`route_rows` takes them.
    chan : array of shape (n_chan_rows, n_channels), float64
    route, sums : callable or None
        The ``route_rows`` and ``node_sums`` kernels to use (default: this module's).

    Returns
    -------
    routed : ActiveRows
        As :func:`route_rows` returns it.
    sums : array of shape (2 n_split, n_channels), float64
        Row ``t``: the channel sums of child ``first_child + t`` (``n_split``
        the number of split nodes, ``split.feature.shape[0]``).
    """
    routed = (route or route_rows)(xp, codes, active, slot_of_node, split, first_child, missing_bin)
    k2 = 2 * int(split.feature.shape[0])
    table = children_slot_table(xp, max(int(slot_of_node.shape[0]), int(first_child) + k2), first_child, k2)
    return routed, (sums or node_sums)(xp, routed, chan, table, k2)


def scatter_rows(xp, index, values, size: int):
    """``values`` put at positions ``index``: ``out[index[i]] = values[i]``.

    Parameters
    ----------
    index : array of shape (size,), int64
        A permutation of ``0 .. size - 1``.
    values : array of shape (size,)
    size : int

    Returns
    -------
    array of shape (size,), the dtype of ``values``

    The standard has no scatter: this is a gather by the inverse permutation
    (an argsort); the fast sets write each value once.
    """
    if int(index.shape[0]) != size:
        raise ValueError(f"scatter_rows needs a permutation of {size} positions, got {int(index.shape[0])}")
    return xp.take(values, xp.argsort(index))


def keep_pairs(xp, arrays, keep):
    """``[a[keep] for a in arrays]``: the pairs of the row set that stay (``keep`` (m,) bool)."""
    return [a[keep] for a in arrays]


# -- forests' bootstrap samples ------------------------------------------------
def sample_keys(seed: int, first: int, n_trees: int):
    """Bootstrap keys (n_trees,) uint64 of trees ``first .. first + n_trees - 1`` of a fit seeded with
    ``seed`` (:func:`gputrees.kernels.rules.sample_key`; host NumPy arrays: their uint64 arithmetic wraps
    silently, NumPy's scalars' warns)."""
    seeds = np.full(n_trees, int(seed) & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64)
    return rules.sample_key(seeds, np.arange(first, first + n_trees, dtype=np.int64))


def bootstrap_rows(xp, key, n: int, n_draw: int):
    """The rows (n_draw,) int64 that the draws of a tree with bootstrap key ``key`` pick.

    :func:`gputrees.kernels.rules.sample_row` of draws ``0 .. n_draw - 1``
    over whole arrays, in its operation order (the same bits). ``xp`` is
    NumPy or CuPy (whose uint64 arrays take NumPy's uint64 scalars);
    ``key`` a (1,) uint64 array of ``xp``.
    """
    d = xp.arange(1, n_draw + 1, dtype=xp.uint64)
    bits = rules.mix64(key + d * rules.GOLDEN) >> np.uint64(11)
    u = xp.astype(bits, xp.float64) * rules.TO_UNIT
    return xp.minimum(xp.astype(xp.floor(u * float(n)), xp.int64), n - 1)


def bootstrap_counts(xp, seed: int, first: int, n_trees: int, n: int, n_draw: int):
    """In-bag counts of a batch of a forest's trees: how many of each tree's ``n_draw`` draws picked each row.

    Parameters
    ----------
    seed : int
        The fit's seed.
    first, n_trees : int
        The batch's trees: ``first .. first + n_trees - 1`` (a tree's draws
        depend on its index, not on its batch).
    n, n_draw : int
        Rows, and draws per tree (with replacement).

    Returns
    -------
    counts : array of shape (n_trees, n), float64
        Whole numbers; each tree's sum to ``n_draw``.

    Drawn on the host with NumPy (sort and search of the drawn rows: the
    standard has no bincount), then put in ``xp``.
    """
    keys = sample_keys(seed, first, n_trees)
    counts = np.empty((n_trees, n), dtype=np.float64)
    edges = np.arange(n + 1, dtype=np.int64)
    for t in range(n_trees):
        drawn = np.sort(bootstrap_rows(np, keys[t : t + 1], n, n_draw))
        bounds = np.searchsorted(drawn, edges, side="left")
        counts[t] = np.astype(bounds[1:] - bounds[:-1], np.float64)
    return from_numpy(xp, counts)


# -- prediction --------------------------------------------------------------
def apply_trees(xp, batch, X, missing_bin: int):
    """Leaf reached by every row in every tree (array API standard only).

    Parameters
    ----------
    batch : TreeBatch
        Padded trees, arrays of shape (n_trees, n_nodes).
    X : array of shape (n_samples, n_features), float64
        Raw numerical columns (NaN = missing) and, for categorical features,
        the category codes of :meth:`BinMapper.encode_for_predict` (the missing
        bin for NaN and unseen categories).
    missing_bin : int

    Returns
    -------
    leaves : array of shape (n_samples, n_trees), int64
        Node index inside each tree.
    """
    n, n_features = X.shape
    n_trees, width = batch.left.shape
    left = xp.reshape(batch.left, (-1,))
    right = xp.reshape(batch.right, (-1,))
    feature = xp.reshape(batch.feature, (-1,))
    offset = (xp.arange(n_trees, dtype=xp.int64) * width)[None, :]
    node = xp.zeros((n, n_trees), dtype=xp.int64)
    shape = (n, n_trees)
    for _ in range(batch.max_depth):
        flat = xp.reshape(node + offset, (-1,))
        is_leaf = xp.reshape(xp.take(feature, flat), shape) < 0
        go_left = goes_left(xp, batch, X, missing_bin, node + offset)
        nxt = xp.where(
            go_left, xp.reshape(xp.take(left, flat), shape), xp.reshape(xp.take(right, flat), shape)
        )
        node = xp.where(is_leaf, node, nxt)
    return node


def goes_left(xp, batch, X, missing_bin: int, flat_node):
    """Whether each row goes to the left child of a node, prediction's rule (array API standard only).

    Numerical splits send ``x <= threshold`` left, categorical ones the codes
    of ``cat_left``; missing values (and the missing bin's code) follow
    ``missing_left``.

    Parameters
    ----------
    batch : TreeBatch
    X : array of shape (n_samples, n_features), float64
        As :func:`apply_trees` takes it.
    missing_bin : int
    flat_node : array of shape (n_samples, m), int64
        Node of each row, as ``tree * n_nodes + node`` (leaves give an
        arbitrary answer).

    Returns
    -------
    array of shape (n_samples, m), bool
    """
    n, n_features = X.shape
    shape = tuple(flat_node.shape)
    flat = xp.reshape(flat_node, (-1,))
    x_flat = xp.reshape(X, (-1,))
    f = xp.reshape(xp.take(xp.reshape(batch.feature, (-1,)), flat), shape)
    row_base = (xp.arange(n, dtype=xp.int64) * n_features)[:, None]
    x = xp.reshape(xp.take(x_flat, xp.reshape(row_base + xp.clip(f, 0, None), (-1,))), shape)
    missing = xp.isnan(x)
    go_left = x <= xp.reshape(xp.take(xp.reshape(batch.threshold, (-1,)), flat), shape)
    if batch.cat_left.shape[-1] > 0:
        width = batch.cat_left.shape[-1]
        node_cat = xp.reshape(xp.take(xp.reshape(batch.is_categorical, (-1,)), flat), shape)
        # only categorical nodes read a code; other nodes index code 0
        code = xp.where(
            missing | ~node_cat, xp.asarray(float(missing_bin), dtype=x.dtype), x
        )
        code = xp.where(node_cat, xp.astype(code, xp.int64), xp.zeros_like(flat_node))
        # the missing bin's column is the last (rules.category_column)
        column = xp.minimum(code, width - 1)
        cat = xp.reshape(xp.take(xp.reshape(batch.cat_left, (-1,)), flat * width + xp.reshape(column, (-1,))), shape)
        go_left = xp.where(node_cat, cat, go_left)
        missing = missing | (node_cat & (code == missing_bin))
    return xp.where(missing, xp.reshape(xp.take(xp.reshape(batch.missing_left, (-1,)), flat), shape), go_left)


def gather_node_values(xp, values, leaves):
    """``values[t, leaves[i, t]]`` for every row ``i`` and tree ``t``.

    Parameters
    ----------
    values : array of shape (n_trees, n_nodes, ...)
    leaves : array of shape (n_samples, n_trees), int64

    Returns
    -------
    array of shape (n_samples, n_trees, ...)
    """
    n_trees, width = values.shape[:2]
    rest = tuple(values.shape[2:])
    flat = xp.reshape(values, (n_trees * width,) + rest)
    idx = xp.reshape(leaves + (xp.arange(n_trees, dtype=xp.int64) * width)[None, :], (-1,))
    out = xp.take(flat, idx, axis=0)
    return xp.reshape(out, tuple(leaves.shape) + rest)


def tree_value_sums(xp, batch, values, X, missing_bin: int, *, walk=None):
    """The sum over a batch's trees of each row's leaf values (a forest's prediction before its mean).

    Parameters
    ----------
    batch : TreeBatch
    values : array of shape (n_trees, n_nodes, ...), float64
    X : array of shape (n_samples, n_features), float64
        As :func:`apply_trees` takes it.
    missing_bin : int
    walk : callable or None
        The leaf walk to use (a kernel set's ``apply_trees``); None: :func:`apply_trees`.

    Returns
    -------
    array of shape (n_samples, ...), float64
        ``xp.sum`` over the trees of the gathered values: NumPy adds the
        trees one after the other where a row's values are several, and
        pairwise where each is one number; kernels that sum another way
        say how they match it.
    """
    leaves = (walk or apply_trees)(xp, batch, X, missing_bin)
    return xp.sum(gather_node_values(xp, values, leaves), axis=1)


def predict_raw(xp, batch, values, X, missing_bin: int, base, *, walk=None):
    """Raw predictions: ``base`` plus the value of every row's leaf in every tree.

    Parameters
    ----------
    batch : TreeBatch
        ``n_rounds * K`` padded trees; tree ``r * K + c`` adds to column ``c``.
    values : array of shape (n_trees, n_nodes), float64
        Value each node adds (0 at internal nodes).
    X : array of shape (n_samples, n_features), float64
        As :func:`apply_trees` takes it.
    missing_bin : int
    base : array of shape (n_samples, K), float64
    walk : callable or None
        The leaf walk to use (a kernel set's ``apply_trees``); None: this
        module's :func:`apply_trees`.

    Returns
    -------
    raw : array of shape (n_samples, K), float64
        Added round after round (in tree order), so that the sums are
        bit-identical to the raw predictions accumulated during the fit.
    """
    n, k = int(base.shape[0]), int(base.shape[1])
    n_trees = int(batch.left.shape[0])
    leaves = (walk or apply_trees)(xp, batch, X, missing_bin)
    contrib = xp.reshape(gather_node_values(xp, values, leaves), (n, n_trees // k, k))
    acc = base
    for r in range(n_trees // k):
        acc = acc + contrib[:, r, :]
    return xp.asarray(acc, copy=True)


# -- a boosting round's end ----------------------------------------------------
def round_channels(xp, g, h, count, out=None):
    """Channels (K, n, 3) of a round's K trees: [in-bag count, g, h], gradients zero out of the bag.

    g, h : (n, K) float64 ; count : (n,) float64 (1 in the bag, 0 out), or None (every row in).
    out : (K, n, 3) float64 or None
        The previous round's channels, written over (a fit keeps one
        table: a fresh one every round would fault its pages in, as costly
        as the round's gradients). None: a new array.
    """
    k, n = int(g.shape[1]), int(g.shape[0])
    if out is None or tuple(out.shape) != (k, n, 3):
        out = xp.empty((k, n, 3), dtype=xp.float64)
    if count is None:
        out[:, :, 0] = 1.0
    else:
        g, h = g * count[:, None], h * count[:, None]
        out[:, :, 0] = xp.broadcast_to(count[None, :], (k, n))
    out[:, :, 1] = xp.permute_dims(g, (1, 0))
    out[:, :, 2] = xp.permute_dims(h, (1, 0))
    return out


def round_end(xp, loss, raw, values, row_leaf, y, w, table):
    """The end of a round without row subsample: new raw predictions, their loss, the next round's channels.

    Parameters
    ----------
    loss : Loss
    raw : array of shape (n, K), float64
        Raw predictions before the round's trees.
    values : array of shape (K, n_nodes), float64
        The round's node values (learning rate included).
    row_leaf : array of shape (K, n), int64
        Every row's leaf in each of the round's trees.
    y, w : arrays of shape (n,), float64
        Encoded targets and sample weights.
    table : array of shape (K, n, 3), float64, or None
        The channel table to write over (see :func:`round_channels`).

    Returns
    -------
    raw : array of shape (n, K), float64
        ``raw`` plus every row's leaf values.
    loss : 0-d array, float64
        The weighted mean loss of the new raw predictions (``Loss.mean_loss``:
        on the device, not read).
    table : array of shape (K, n, 3), float64
        ``[1, g, h]`` of the new raw predictions: the next round's channels
        when it draws no row subsample.
    sums : array of shape (3,), float64, or None
        The table's column sums where the pass made them (a compiled round
        end, one tree a round: ``GrowerInputs.channel_sums``); None here, the
        grower then sums the rows.
    """
    raw = raw + gather_node_values(xp, values, xp.permute_dims(row_leaf, (1, 0)))
    g, h = loss.gradients(xp, raw, y, w)
    return raw, loss.mean_loss(xp, raw, y, w), round_channels(xp, g, h, None, table), None



# -- the layout of a batch whose nodes were partly grown as subtrees ----------------
def layout_grouped(xp, n_trees: int, parent, depth, tree, stats, split_ids, record, split_first_child):
    """A batch's padded node arrays, every tree's nodes numbered breadth-first (the subtree kernels' layout).

    Every node is renumbered tree by tree, breadth-first (by depth, then its
    parent's order, left before right): the order in which level-wise growth
    creates a tree's nodes, for nodes of which some (grown subtrees) were
    created depth-first. Children stay consecutive, every tree's nodes are a
    run, and a node's position in its tree is its new id minus its tree's
    first.

    Parameters
    ----------
    n_trees : int
    parent, depth, tree : arrays of shape (n_nodes,), int64
        Every node by id (parent -1 at a root); a split node's children have
        consecutive ids, left first.
    stats : array of shape (n_nodes, C), float64
    split_ids : array of shape (n_split,), int64
        The split nodes' ids, in the order of ``record``'s rows.
    record : any record with the fields ``feature``, ``bin``, ``missing_left``, ``threshold``,
        ``is_categorical`` and ``cat_left``
        Their splits.
    split_first_child : array of shape (n_split,), int64
        Each split node's left child's id.

    Returns
    -------
    tuple
        ``node_count`` (n_trees,) int64 (host), then (n_trees, width)
        arrays: ``left`` (positions in the tree, -1 at leaves and padding),
        ``feature`` (-2), ``bin`` (-1), ``missing_left`` (False),
        ``threshold`` (-2.0), ``stats`` (n_trees, width, C) (0.0), ``depth``
        (0), ``is_categorical`` (False), ``cat_left`` (n_trees, width, the
        record's columns) (False); the fills of the leaves and the padding
        in brackets.
    """
    n = int(parent.shape[0])
    # breadth-first ranks within each level, then every node's new id
    by_depth = xp.argsort(depth, stable=True)  # ids in order within each level
    depth_sorted = xp.take(depth, by_depth)
    n_levels = int(to_numpy(depth_sorted[-1])) + 1
    bounds = to_numpy(xp.searchsorted(depth_sorted, xp.arange(n_levels + 1, dtype=xp.int64)))
    ranks, prev, prev_rank = [], None, None
    for d in range(n_levels):
        level = by_depth[int(bounds[d]) : int(bounds[d + 1])]
        if d == 0:
            key = xp.take(tree, level)  # roots: in tree order
        else:
            # the parent's rank in its level (parents are the previous level's
            # split nodes, looked up in its sorted ids), then the id: a left
            # child's id is its right sibling's minus 1
            parent_rank = xp.take(prev_rank, xp.searchsorted(prev, xp.take(parent, level)))
            key = parent_rank * n + level
        ranks.append(xp.argsort(xp.argsort(key)))
        prev, prev_rank = level, ranks[-1]
    rank = xp.take(xp.concat(ranks), xp.argsort(by_depth))  # by id
    old_of = xp.argsort((tree * n_levels + depth) * n + rank)
    new_of = xp.argsort(old_of)
    depth = xp.take(depth, old_of)
    tree = xp.take(tree, old_of)
    stats = xp.take(stats, old_of, axis=0)
    exp_ids = xp.take(new_of, split_ids)
    exp_first_child = xp.take(new_of, split_first_child)
    # each node's split record, by its new id
    ids = xp.arange(n, dtype=xp.int64)
    first = [int(v) for v in to_numpy(xp.searchsorted(tree, xp.arange(n_trees + 1, dtype=xp.int64)))]
    counts = [first[t + 1] - first[t] for t in range(n_trees)]
    width = max(counts)
    order = xp.argsort(exp_ids)
    sorted_ids = xp.take(exp_ids, order)
    if int(sorted_ids.shape[0]) == 0:
        pos, is_split = xp.zeros(n, dtype=xp.int64), xp.zeros(n, dtype=xp.bool)
    else:
        pos = xp.minimum(xp.astype(xp.searchsorted(sorted_ids, ids), xp.int64),
                         xp.asarray(int(sorted_ids.shape[0]) - 1, dtype=xp.int64))
        is_split = xp.take(sorted_ids, pos) == ids
    pos = xp.take(order, pos)  # each node's row of the records

    def field(a, default, dtype):
        return xp.where(is_split, xp.take(a, pos), xp.asarray(default, dtype=dtype))

    cat_left = xp.take(record.cat_left, pos, axis=0) & is_split[:, None]

    # children in the same tree: their position there is their id minus the tree's first
    tree_first = xp.take(xp.asarray(first[:-1], dtype=xp.int64), tree)
    left = field(exp_first_child - xp.take(tree_first, exp_ids), -1, xp.int64)

    def pad(a, fill):
        parts = []
        for t in range(n_trees):
            parts.append(a[first[t] : first[t + 1], ...])
            if counts[t] < width:
                parts.append(xp.full((width - counts[t],) + tuple(a.shape[1:]), fill, dtype=a.dtype))
        return xp.reshape(xp.concat(parts, axis=0), (n_trees, width) + tuple(a.shape[1:]))

    return (
        np.asarray(counts, dtype=np.int64),
        pad(left, -1),
        pad(field(record.feature, -2, xp.int64), -2),
        pad(field(record.bin, -1, xp.int64), -1),
        pad(field(record.missing_left, False, xp.bool), False),
        pad(field(record.threshold, -2.0, xp.float64), -2.0),
        pad(stats, 0.0),
        pad(depth, 0),
        pad(field(record.is_categorical, False, xp.bool), False),
        pad(cat_left, False),
    )


# -- a batch in the perfect-tree layout ------------------------------------------------
def compact_batch(xp, batch, values=None, exists=None):
    """A batch in the perfect-tree layout (``node_count`` None: node ``i``'s children are ``2 i + 1`` and
    ``2 i + 2``, as the GPU's device step grows them), or in any level-ordered node table (``exists``), with its
    existing nodes numbered in level order, as the level-wise grower numbers them, and padded as its batches are.

    Parameters
    ----------
    batch : TreeBatch
        ``node_count`` None; ``left`` (n_trees, cap), each split node's left child (the right one next to it).
    values : array of shape (n_trees, cap, ...) or None
        Per-node values to renumber alike (boosting's leaf values).
    exists : bool array of shape (n_trees, cap) or None
        Which nodes exist, in a table whose levels follow each other and whose children are in their parents'
        order (the device step's deep trees); None: the perfect-tree layout (``cap = 2^(depth + 1) - 1``), where
        a node exists when its parent split.

    Returns
    -------
    batch : TreeBatch
        ``row_leaf`` (if any) renumbered too.
    values : array of shape (n_trees, width, ...) or None

    One host read: the trees' node counts and depth (they size the arrays).
    """
    out, values, _ = _compact(xp, batch, values, exists)
    return out, values


def compact_batches(xp, batches, values):
    """:func:`compact_batch` of several batches in the perfect-tree layout, all of one depth (a fit's
    rounds), in one pass: the operations and the host read of one batch, not of each.

    Returns a list of ``(batch, values)``, one per batch, each cut to the widest of its own trees, as
    :func:`compact_batch` of that batch alone returns it.
    """
    per_tree = ("node_count", "max_depth", "row_leaf")
    node_fields = [f.name for f in dataclasses.fields(batches[0]) if f.name not in per_tree]

    def cat(name):
        parts = [getattr(b, name) for b in batches]
        return None if parts[0] is None else xp.concat(parts, axis=0)

    stacked = dataclasses.replace(batches[0], row_leaf=cat("row_leaf"), **{name: cat(name) for name in node_fields})
    out, all_values, tree_depth = _compact(xp, stacked, xp.concat(values, axis=0))
    parts, start = [], 0
    for b in batches:
        stop = start + int(b.left.shape[0])
        width = int(out.node_count[start:stop].max())

        def cut(a, start=start, stop=stop, width=width):
            return None if a is None else a[start:stop, :width, ...]

        part = dataclasses.replace(
            out, node_count=out.node_count[start:stop], max_depth=int(tree_depth[start:stop].max()),
            row_leaf=None if out.row_leaf is None else out.row_leaf[start:stop],
            **{name: cut(getattr(out, name)) for name in node_fields})
        parts.append((part, cut(all_values)))
        start = stop
    return parts


def _compact(xp, batch, values=None, exists=None):
    """:func:`compact_batch`, and the depth of each tree's deepest node (host int64)."""
    n_trees, cap = int(batch.left.shape[0]), int(batch.left.shape[1])
    i8 = xp.int64
    if exists is None:
        parent = xp.asarray(np.concatenate([[0], (np.arange(1, cap) - 1) // 2]).astype(np.int64))
        is_root = xp.asarray(np.arange(cap) == 0)
        exists = is_root[None, :] | xp.take(batch.left >= 0, parent, axis=1)
    new_id = xp.cumulative_sum(xp.astype(exists, i8), axis=1) - 1
    deepest = xp.max(xp.where(exists, batch.depth, xp.zeros_like(batch.depth)), axis=1)
    summary = np.asarray(to_numpy(xp.concat([xp.sum(xp.astype(exists, i8), axis=1), xp.astype(deepest, i8)])),
                         dtype=np.int64)
    counts, tree_depth = summary[:n_trees], summary[n_trees:]
    width = int(counts.max())
    # each tree's existing nodes in level order first
    order = xp.argsort(xp.astype(~exists, i8), axis=1, stable=True)[:, :width]
    valid = xp.asarray(np.arange(width)[None, :] < counts[:, None])

    def take(a, fill):
        if a.ndim == 2:
            out = xp.take_along_axis(a, order, axis=1)
            return xp.where(valid, out, xp.asarray(fill, dtype=a.dtype))
        shape = (n_trees, width) + tuple(a.shape[2:])
        idx = xp.broadcast_to(xp.reshape(order, (n_trees, width) + (1,) * (a.ndim - 2)), shape)
        out = xp.take_along_axis(a, idx, axis=1)
        keep = xp.reshape(valid, (n_trees, width) + (1,) * (a.ndim - 2))
        return xp.where(keep, out, xp.asarray(fill, dtype=a.dtype))

    split = take(batch.left >= 0, False)
    first_child = xp.take_along_axis(new_id, xp.maximum(take(batch.left, -1), xp.asarray(0, dtype=i8)), axis=1)
    left = xp.where(split, first_child, xp.asarray(-1, dtype=i8))
    out = dataclasses.replace(
        batch,
        node_count=counts,
        left=left,
        right=xp.where(left >= 0, left + 1, left),
        feature=take(batch.feature, -2),
        bin=take(batch.bin, -1),
        missing_left=take(batch.missing_left, False),
        is_categorical=take(batch.is_categorical, False),
        cat_left=take(batch.cat_left, False),
        threshold=take(batch.threshold, -2.0),
        stats=take(batch.stats, 0.0),
        depth=take(batch.depth, 0),
        max_depth=int(tree_depth.max()),
        row_leaf=None if batch.row_leaf is None else xp.take_along_axis(new_id, batch.row_leaf, axis=1),
        lower=None if batch.lower is None else take(batch.lower, 0.0),
        upper=None if batch.upper is None else take(batch.upper, 0.0),
    )
    return out, None if values is None else take(values, 0.0), tree_depth
