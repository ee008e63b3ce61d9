"""Batched split finding: the best split of every node of a batch at once.

From histograms of shape (nodes, features, bins, channels):

* numerical features: cumulative sums over the value bins give, for every
  candidate ``b`` ("codes <= b go left"), the left statistics with the missing
  bin sent right, and (where the node has missing values) sent left;
* categorical features: the node's categories are sorted by the criterion's
  order keys (one ordering for binary classification and regression, which
  is optimal for gini on two classes and for squared error; one ordering per
  class for multi-class, a heuristic), and the sorted order is scanned the
  same way; categories absent from the node go right;
* every candidate is scored with the criterion's proxy; candidates that leave
  a child with fewer than ``min_samples_leaf`` rows, less than
  ``min_weight_leaf`` weight, or no weight at all are masked; features not
  drawn for the node (``max_features``) are masked; the argmax per node wins.

Tie rule: among candidates whose proxies are equal (within ``TIE_RTOL``,
relative, of the node's best) the lowest feature index wins; within a feature, every "missing right" candidate comes before
every "missing left" one, and then the lowest threshold (categorical: the
first ordering, then the shortest left set) -- scikit-learn's scan order
within a feature.
"""

from __future__ import annotations


import numpy as np

from ._records import SplitConstraints, SplitRecord, category_positions
from .kernels.rules import TIE_RTOL, midpoint, tie_target




def _clamp(xp, i, low, high=None):
    """``i`` (an integer array) limited to ``[low, high]`` (``high`` None: no top).

    ``xp.maximum`` / ``xp.minimum`` with Python scalars (the standard's
    2024.12 revision allows them), not ``xp.clip``: array-api-compat's
    ``clip`` for CuPy broadcasts its bounds, copies and reads a flag back to
    the host on every call (four calls a level of every tree), and a 0-d
    bound made by ``xp.asarray`` is a copy to the device.
    """
    out = xp.maximum(i, int(low))
    return out if high is None else xp.minimum(out, int(high))


def _gather_rows(xp, a, idx):
    """``a[i, idx[i]]`` for a 2-D or 3-D ``a`` (leading axis = nodes)."""
    m = a.shape[0]
    width = a.shape[1]
    flat = xp.reshape(a, (m * width,) + tuple(a.shape[2:]))
    return xp.take(flat, xp.arange(m, dtype=xp.int64) * width + idx, axis=0)


def _valid(xp, criterion, left, right, cons: SplitConstraints):
    wl = criterion.weight(xp, left)
    wr = criterion.weight(xp, right)
    ok = (wl >= cons.min_weight_leaf) & (wr >= cons.min_weight_leaf) & (wl > 0) & (wr > 0)
    if not criterion.has_count:  # no row counts: the weights decide alone (min_samples_leaf <= 1)
        return ok
    return (left[..., 0] >= cons.min_samples_leaf) & (right[..., 0] >= cons.min_samples_leaf) & ok


def _present(xp, criterion, h):
    """Whether bins hold rows: a positive count, or (statistics without a count) any non-zero channel."""
    if criterion.has_count:
        return h[..., 0] > 0
    return xp.any(h != 0, axis=-1)


def _score(xp, criterion, left, parent_b, cons, allow, mono=None):
    """Proxy of every candidate (``-inf`` where invalid).

    ``mono``: None, or ``(lower, upper, direction)`` broadcastable to the
    candidates: the children's values are clipped to the node's bounds and
    scored at the clipped values, and with a direction (+1 / -1 / 0 per
    feature, or None) the values must be ordered that way (monotonic
    constraints, Newton criterion only).
    """
    right = parent_b - left
    ok = _valid(xp, criterion, left, right, cons) & allow
    if mono is None:
        proxy = criterion.proxy(xp, left, right)
    else:
        lo, up, direction = mono
        vl = xp.clip(criterion.leaf_value(xp, left), lo, up)
        vr = xp.clip(criterion.leaf_value(xp, right), lo, up)
        proxy = criterion.gain_at(xp, left, vl) + criterion.gain_at(xp, right, vr)
        if direction is not None:
            ok = ok & (direction * (vr - vl) >= 0)
    ok = ok & ~xp.isnan(proxy)
    return xp.where(ok, proxy, xp.full_like(proxy, -xp.inf))


def near_best(xp, proxy, best):
    """Candidates within the tie tolerance of ``best`` (broadcastable)."""
    return (proxy >= tie_target(best, TIE_RTOL)) & (proxy > -xp.inf)


def _random_bins(xp, hist, u):
    """Extremely randomised candidates: one bin per (node, feature).

    Uniform among the value bins from the node's smallest present bin to the
    one before its largest (so both sides get rows); -1 where the node has a
    single value bin for the feature.

    hist : (m, f, nb, c); u : (m, f) uniforms. Returns (m, f) int64.
    """
    nb = hist.shape[2]
    present = hist[:, :, : nb - 1, 0] > 0
    lo = xp.argmax(xp.astype(present, xp.int32), axis=2)
    hi = (nb - 2) - xp.argmax(xp.astype(xp.flip(present, axis=2), xp.int32), axis=2)
    span = hi - lo
    pick = lo + xp.astype(xp.floor(u * xp.astype(span, xp.float64)), xp.int64)
    pick = xp.minimum(pick, hi - 1)
    return xp.where(span > 0, pick, xp.full_like(pick, -1))


def _numerical(xp, hist, parent, criterion, cons, u=None, mono=None):
    """Proxies of every (node, numerical feature, candidate).

    Returns the proxies (m, f, w) in tie order (missing right, then missing
    left; lowest bin first), the left stats (m * f * w, c) and the number of
    missing-value variants (1 when no node of the batch has missing values:
    the "missing left" candidates are then not scored).
    """
    m, f, nb, c = hist.shape
    vals = hist[:, :, : nb - 1, :]
    miss = hist[:, :, nb - 1, :]
    cum = xp.cumulative_sum(vals, axis=2)
    has_missing = _present(xp, criterion, miss)  # (m, f)
    if bool(xp.any(has_missing)):
        left = xp.stack([cum, cum + miss[:, :, None, :]], axis=2)  # (m, f, 2, nb-1, c)
        allow = xp.stack([xp.ones_like(has_missing), has_missing], axis=2)[:, :, :, None]
    else:
        left = cum[:, :, None, :, :]
        allow = xp.ones((1, 1, 1, 1), dtype=xp.bool)
    if u is not None:
        pick = _random_bins(xp, hist, u)
        bins = xp.arange(nb - 1, dtype=xp.int64)[None, None, None, :]
        allow = allow & (bins == pick[:, :, None, None])
    n_var = left.shape[2]
    if mono is not None:
        lo, up, direction = mono
        mono = (lo[:, None, None, None], up[:, None, None, None], direction[:, :, None, None])
    proxy = _score(xp, criterion, left, parent[:, None, None, None, :], cons, allow, mono)
    width = n_var * (nb - 1)
    return xp.reshape(proxy, (m, f, width)), xp.reshape(left, (m * f * width, c))


def _categorical(xp, hist, parent, criterion, cons, u=None, mono=None):
    """Proxies of every (node, categorical feature, ordering, candidate).

    Returns the proxies (m, f, w) in tie order (ordering, then missing right
    before left, then the shortest left set), the left stats (m * f * w, c) and
    the rank of every code in every ordering (m, f, K, bins - 1).
    """
    m, f, nb, c = hist.shape
    vals = hist[:, :, : nb - 1, :]
    miss = hist[:, :, nb - 1, :]
    keys = criterion.order_keys(xp, vals)  # (m, f, nb-1, K)
    n_orders = keys.shape[-1]
    empty = vals[..., 0] == 0
    keys = xp.where(empty[..., None], xp.full_like(keys, xp.inf), keys)
    keys = xp.permute_dims(keys, (0, 1, 3, 2))  # (m, f, K, nb-1)
    order = xp.argsort(keys, axis=3, stable=True)
    rank = xp.argsort(order, axis=3, stable=True)
    vb = xp.broadcast_to(vals[:, :, None, :, :], (m, f, n_orders, nb - 1, c))
    sorted_vals = xp.take_along_axis(vb, xp.broadcast_to(order[..., None], vb.shape), axis=3)
    cum = xp.cumulative_sum(sorted_vals, axis=3)
    left = xp.stack([cum, cum + miss[:, :, None, None, :]], axis=3)  # (m,f,K,2,nb-1,c)
    has_missing = miss[:, :, 0] > 0
    allow = xp.stack([xp.ones_like(has_missing), has_missing], axis=2)[:, :, None, :, None]
    if u is not None:
        # extremely randomised: a random cut in the first ordering of the present categories
        n_present = xp.sum(xp.astype(~empty, xp.int64), axis=2)
        pick = xp.astype(xp.floor(u * xp.astype(n_present - 1, xp.float64)), xp.int64)
        pick = xp.where(n_present > 1, pick, xp.full_like(pick, -1))
        pos = xp.arange(nb - 1, dtype=xp.int64)[None, None, None, None, :]
        first = xp.arange(n_orders, dtype=xp.int64)[None, None, :, None, None] == 0
        allow = allow & first & (pos == pick[:, :, None, None, None])
    if mono is not None:  # categorical features carry no direction, only the node's bounds
        mono = (mono[0][:, None, None, None, None], mono[1][:, None, None, None, None], None)
    proxy = _score(xp, criterion, left, parent[:, None, None, None, None, :], cons, allow, mono)
    width = n_orders * 2 * (nb - 1)
    return xp.reshape(proxy, (m, f, width)), xp.reshape(left, (m * f * width, c)), rank


def _pick(xp, flat, left_flat, threshold):
    """First near-best candidate of every (node, feature) of a group.

    Returns: whether the feature has one (m, f), its index (m, f), its proxy
    (m, f) and its left stats (m, f, c).
    """
    m, f, w = flat.shape
    near = near_best(xp, flat, threshold[:, None, None])
    has = xp.any(near, axis=2)
    idx = xp.argmax(xp.astype(near, xp.int32), axis=2)
    sel = (xp.arange(m * f, dtype=xp.int64) * w) + xp.reshape(idx, (-1,))
    proxy = xp.reshape(xp.take(xp.reshape(flat, (-1,)), sel), (m, f))
    left = xp.reshape(xp.take(left_flat, sel, axis=0), (m, f, left_flat.shape[1]))
    return has, idx, proxy, left


def find_best_splits(
    xp,
    hist,
    parent,
    criterion,
    cons: SplitConstraints,
    is_categorical: np.ndarray,
    feature_mask=None,
    bin_mapper=None,
    random_u=None,
    feature_ids=None,
    bounds=None,
    monotonic_cst=None,
    local_thresholds=True,
    kernel=None,
) -> SplitRecord:
    """Best split of every node.

    Parameters
    ----------
    hist : array of shape (m, n_features, n_bins, n_channels), float64
    parent : array of shape (m, n_channels), float64
        The nodes' statistics (the sum of any feature's histogram).
    criterion : Criterion
        One without a count channel (``has_count`` False) takes numerical
        features, best splits and ``local_thresholds=False`` only, and needs
        ``cons.min_samples_leaf <= 1`` (no count to test).
    cons : SplitConstraints
    is_categorical : ndarray of shape (n_features,), bool (host)
    feature_mask : array of shape (m, n_features), bool, optional
        Features drawn for each node (``max_features``); all when None.
    bin_mapper : BinMapper, optional
        Gives the split thresholds; without it ``threshold`` is NaN.
    random_u : array of shape (m, n_features), float64, optional
        Extremely randomised trees: uniforms that pick one candidate per
        (node, feature) (a bin in the node's range, or a cut in the category
        order); the best of those candidates wins.
    feature_ids : array of shape (m, n_columns), int64, optional
        When ``hist`` holds only some features of each node (the ones drawn
        for it), the feature of each column; the record then names features,
        not columns. Numerical features only.
    bounds : array of shape (m, 2), float64, optional
        Lower and upper bound of each node's value (monotonic constraints):
        candidates are scored with their children's values clipped to them.
    monotonic_cst : array of shape (n_features,), float64, optional
        -1 / 0 / +1 per feature (with ``bounds``): candidates whose children's
        values are not ordered that way are invalid. Categorical features
        must have 0.
    local_thresholds : bool, default=True
        Exactly binned features: the threshold is the midpoint to the next
        value *present in the node* (scikit-learn's threshold; needs every
        routed row counted in channel 0). False: the midpoint to the next
        value bin of the feature (XGBoost's cut), which routes any row like
        its bin code even when channel 0 leaves some rows out (boosting's
        row subsampling).
    kernel : callable, optional
        A kernel set's compiled search (:attr:`gputrees.kernels.Kernels.best_splits`,
        same arguments and result), tried first; where it declines (returns
        None) the search below runs.

    Returns
    -------
    SplitRecord
    """
    if not criterion.has_count and (
        np.any(is_categorical) or random_u is not None or local_thresholds or cons.min_samples_leaf > 1
    ):
        raise ValueError(
            "a criterion without a count channel supports numerical features, best splits, "
            "local_thresholds=False and min_samples_leaf <= 1 only (categories, random splits, local "
            "thresholds and min_samples_leaf read row counts)"
        )
    if kernel is not None:
        rec = kernel(
            xp, hist, parent, criterion, cons, is_categorical, feature_mask, bin_mapper, random_u, feature_ids,
            bounds, monotonic_cst, local_thresholds,
        )
        if rec is not None:
            return rec
    m, n_features, nb, c = hist.shape
    num_idx = np.flatnonzero(~is_categorical)
    cat_idx = np.flatnonzero(is_categorical)
    n_num, n_cat = int(num_idx.size), int(cat_idx.size)
    groups = []  # (flat proxies, left stats, decode) per feature group
    rank = None

    def masked(flat, idx):
        if feature_mask is None:
            return flat
        fm = feature_mask if idx.size == n_features else xp.take(feature_mask, _ix(xp, idx), axis=1)
        return xp.where(fm[:, :, None], flat, xp.full_like(flat, -xp.inf))

    mono_num = mono_cat = None
    if bounds is not None:
        lo, up = bounds[:, 0], bounds[:, 1]
        mono_cat = (lo, up, None)
        if feature_ids is not None:
            direction = xp.reshape(
                xp.take(monotonic_cst, xp.reshape(feature_ids, (-1,))), tuple(feature_ids.shape)
            )
        else:
            direction = xp.take(monotonic_cst, _ix(xp, num_idx))[None, :]
        mono_num = (lo, up, direction)
    if n_num:
        h = hist if n_num == n_features else xp.take(hist, _ix(xp, num_idx), axis=1)
        uu = None if random_u is None else _cols(xp, random_u, num_idx, n_features)
        flat, left = _numerical(xp, h, parent, criterion, cons, uu, mono_num)
        groups.append(("num", masked(flat, num_idx), left))
    if n_cat:
        h = hist if n_cat == n_features else xp.take(hist, _ix(xp, cat_idx), axis=1)
        # the categorical columns' value bins and the missing bin only: a feature's codes stay below its
        # n_value_bins, and a candidate past the node's present categories has an empty side (the columns
        # are the mapper's features unless drawn per node)
        kc = category_positions(is_categorical, nb, bin_mapper if feature_ids is None else None)
        if kc < nb - 1:
            h = xp.concat([h[:, :, :kc, :], h[:, :, nb - 1:, :]], axis=2)
        uu = None if random_u is None else _cols(xp, random_u, cat_idx, n_features)
        flat, left, rank = _categorical(xp, h, parent, criterion, cons, uu, mono_cat)
        groups.append(("cat", masked(flat, cat_idx), left))
    # the node's best proxy; every candidate within the tie tolerance of it is
    # a tie, and the tie rule (feature order, then the group's order) decides
    best = None
    for _, flat, _ in groups:
        gbest = xp.max(xp.reshape(flat, (m, -1)), axis=1)
        best = gbest if best is None else xp.maximum(best, gbest)
    picks = {}
    for name, flat, left in groups:
        picks[name] = _pick(xp, flat, left, best)
    if n_cat and kc < nb - 1:
        # the categorical candidates' indices in the common layout ((ordering * 2 + variant) * (nb - 1) + position)
        has_c, idx_c, proxy_c, left_c = picks["cat"]
        picks["cat"] = (has_c, (idx_c // kc) * (nb - 1) + idx_c % kc, proxy_c, left_c)
        rank = xp.concat([rank, xp.broadcast_to(xp.arange(kc, nb - 1, dtype=rank.dtype),
                                                tuple(rank.shape[:3]) + (nb - 1 - kc,))], axis=3)
    inverse = _ix(xp, np.argsort(np.concatenate([num_idx, cat_idx])))
    order = [name for name, _, _ in groups]

    def merged(i):
        return xp.take(xp.concat([picks[g][i] for g in order], axis=1), inverse, axis=1)

    has = merged(0)
    feature = xp.argmax(xp.astype(has, xp.int32), axis=1)
    found = xp.any(has, axis=1)
    idx = _gather_rows(xp, merged(1), feature)
    proxy = xp.where(found, _gather_rows(xp, merged(2), feature), xp.full((m,), -xp.inf, dtype=xp.float64))
    left = _gather_rows(xp, merged(3), feature)
    column = feature
    if feature_ids is not None:
        feature = _gather_rows(xp, feature_ids, column)
    split_is_cat = xp.take(_bool_table(xp, is_categorical), column)
    position = idx % (nb - 1)
    # candidate index = (ordering * 2 + variant) * (nb - 1) + position in both groups
    # (numerical: one ordering; one variant when no node has missing values)
    missing_left = ((idx // (nb - 1)) % 2) == 1
    ordering = idx // (2 * (nb - 1))
    right = parent - left
    # nodes without missing values send NaN to the child with more rows
    # (unknown here without counts: False, and the caller decides, see SplitRecord)
    node_has_missing = _gather_rows(xp, _present(xp, criterion, hist[:, :, nb - 1, :]), column)
    more_left = left[:, 0] > right[:, 0] if criterion.has_count else xp.zeros_like(node_has_missing)
    missing_left = xp.where(node_has_missing, missing_left, more_left)
    bin_ = xp.where(split_is_cat, xp.full_like(position, -1), position)
    if rank is not None:
        slot = xp.take(xp.asarray(_cat_slot(is_categorical), dtype=xp.int64), column)
        n_orders = rank.shape[2]
        rank_flat = xp.reshape(rank, (m * n_cat * n_orders, nb - 1))
        cat_row = xp.arange(m, dtype=xp.int64) * n_cat + _clamp(xp, slot, 0)
        sel = cat_row * n_orders + _clamp(xp, ordering, 0, n_orders - 1)
        node_rank = xp.take(rank_flat, sel, axis=0)  # (m, nb-1)
        present = _gather_rows(xp, hist[:, :, : nb - 1, 0], column) > 0
        cat_left = (node_rank <= position[:, None]) & present & split_is_cat[:, None]
        cat_left = xp.concat([cat_left, (missing_left & split_is_cat)[:, None]], axis=1)
    else:
        cat_left = xp.zeros((m, 0), dtype=xp.bool)
    threshold = _thresholds(xp, hist, column, feature, position, split_is_cat, bin_mapper, local_thresholds)
    return SplitRecord(
        threshold=threshold,
        found=found,
        proxy=proxy,
        feature=xp.astype(feature, xp.int64),
        bin=xp.astype(bin_, xp.int64),
        missing_left=missing_left,
        is_categorical=split_is_cat,
        cat_left=cat_left,
        left=left,
        right=right,
    )


def split_thresholds(xp, bin_mapper, feature, position, next_bin, has_next):
    """Thresholds of numerical splits "codes <= position go left".

    Exact features: the midpoint of the bin's value and the value of
    ``next_bin``, the next bin present in the node (``a / 2 + b / 2``, or ``a``
    where that rounds to ``b``: scikit-learn's rule). Quantile features: the
    bin edge. ``inf`` where no value bin follows in the node (only missing
    values go right).

    All arguments but ``bin_mapper`` are (m,) arrays; returns (m,) float64.
    """
    width = bin_mapper.thresholds.shape[1]
    base = _clamp(xp, feature, 0) * width
    # ``position`` / ``next_bin`` may be the missing-value bin (== width) where
    # no value bin follows (``has_next`` False, threshold inf): clip the lookups
    position = _clamp(xp, position, 0, width - 1)
    next_bin = _clamp(xp, next_bin, 0, width - 1)
    edge = xp.take(xp.reshape(bin_mapper.thresholds, (-1,)), base + position)
    values = xp.reshape(bin_mapper.bin_values, (-1,))
    lo = xp.take(values, base + position)
    hi = xp.take(values, base + next_bin)
    mid = midpoint(lo, hi)
    mid = xp.where(mid == hi, lo, mid)
    exact = xp.take(_bool_table(xp, bin_mapper.is_exact), feature)
    thr = xp.where(exact, mid, edge)
    return xp.where(has_next, thr, xp.full_like(thr, xp.inf))


def _thresholds(xp, hist, column, feature, position, split_is_cat, bin_mapper, local=True):
    m, _, nb, _ = hist.shape
    nan = xp.full((m,), xp.nan, dtype=xp.float64)
    if bin_mapper is None:
        return nan
    if not local:
        n_value = xp.take(_ix(xp, bin_mapper.n_value_bins), _clamp(xp, feature, 0))
        has_next = position + 1 < n_value
        next_bin = xp.where(has_next, position + 1, position)
        thr = split_thresholds(xp, bin_mapper, feature, position, next_bin, has_next)
        return xp.where(split_is_cat, nan, thr)
    counts = _gather_rows(xp, hist[:, :, : nb - 1, 0], column)  # (m, nb-1)
    bins = xp.arange(nb - 1, dtype=xp.int64)[None, :]
    after = (bins > position[:, None]) & (counts > 0)
    has_next = xp.any(after, axis=1)
    next_bin = xp.argmax(xp.astype(after, xp.int32), axis=1)
    thr = split_thresholds(xp, bin_mapper, feature, position, next_bin, has_next)
    return xp.where(split_is_cat, nan, thr)


def _cols(xp, a, idx: np.ndarray, n_features: int):
    return a if idx.size == n_features else xp.take(a, _ix(xp, idx), axis=1)


def _ix(xp, idx: np.ndarray):
    return xp.asarray(idx.tolist(), dtype=xp.int64)


def _bool_table(xp, a: np.ndarray):
    return xp.asarray([bool(v) for v in a.tolist()], dtype=xp.bool)


def _cat_slot(is_categorical: np.ndarray) -> list:
    slot = np.cumsum(is_categorical) - 1
    return np.where(is_categorical, slot, -1).tolist()
