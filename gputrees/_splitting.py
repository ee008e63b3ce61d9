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

Tie rule: among candidates with exactly equal proxies the lowest feature
index wins, then the lowest bin (categorical: the first ordering, then the
shortest left set), then "missing right" before "missing left".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SplitConstraints:
    """Per-split constraints (scalars)."""

    min_samples_leaf: int
    min_weight_leaf: float


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
        with more training rows (scikit-learn's rule).
    is_categorical : (m,) bool
    cat_left : (m, n_bins) bool
        Categorical splits: which codes go left (the missing bin follows
        ``missing_left``). All False for numerical splits.
    left, right : (m, n_channels) float64
        Children statistics.
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


def _gather_rows(xp, a, idx):
    """``a[i, idx[i]]`` for a 2-D or 3-D ``a`` (leading axis = nodes)."""
    m = a.shape[0]
    width = a.shape[1]
    flat = xp.reshape(a, (m * width,) + tuple(a.shape[2:]))
    return xp.take(flat, xp.arange(m, dtype=xp.int64) * width + idx, axis=0)


def _valid(xp, criterion, left, right, cons: SplitConstraints):
    wl = criterion.weight(xp, left)
    wr = criterion.weight(xp, right)
    return (
        (left[..., 0] >= cons.min_samples_leaf)
        & (right[..., 0] >= cons.min_samples_leaf)
        & (wl >= cons.min_weight_leaf)
        & (wr >= cons.min_weight_leaf)
        & (wl > 0)
        & (wr > 0)
    )


def _score(xp, criterion, left, parent_b, cons, allow):
    right = parent_b - left
    ok = _valid(xp, criterion, left, right, cons) & allow
    proxy = criterion.proxy(xp, left, right)
    ok = ok & ~xp.isnan(proxy)
    return xp.where(ok, proxy, xp.full_like(proxy, -xp.inf))


def _numerical(xp, hist, parent, criterion, cons):
    """Best candidate per (node, numerical feature).

    Returns best proxy (m, f), flat index into (bins - 1, 2), and left stats (m, f, c).
    """
    m, f, nb, c = hist.shape
    vals = hist[:, :, : nb - 1, :]
    miss = hist[:, :, nb - 1, :]
    cum = xp.cumulative_sum(vals, axis=2)
    left = xp.stack([cum, cum + miss[:, :, None, :]], axis=3)  # (m, f, nb-1, 2, c)
    has_missing = miss[:, :, 0] > 0  # (m, f)
    allow = xp.stack(
        [xp.ones_like(has_missing), has_missing], axis=2
    )[:, :, None, :]  # (m, f, 1, 2)
    proxy = _score(xp, criterion, left, parent[:, None, None, None, :], cons, allow)
    flat = xp.reshape(proxy, (m, f, (nb - 1) * 2))
    arg = xp.argmax(flat, axis=2)
    best = xp.max(flat, axis=2)
    left_flat = xp.reshape(left, (m * f, (nb - 1) * 2, c))
    idx = xp.reshape(arg, (m * f,))
    best_left = xp.take(
        xp.reshape(left_flat, (m * f * (nb - 1) * 2, c)),
        xp.arange(m * f, dtype=xp.int64) * ((nb - 1) * 2) + idx,
        axis=0,
    )
    return best, arg, xp.reshape(best_left, (m, f, c))


def _categorical(xp, hist, parent, criterion, cons):
    """Best candidate per (node, categorical feature) over sorted category orders.

    Returns best proxy (m, f), flat index into (K, bins - 1, 2), left stats
    (m, f, c), and the rank of every code in every ordering (m, f, K, bins - 1).
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
    left = xp.stack([cum, cum + miss[:, :, None, None, :]], axis=4)  # (m,f,K,nb-1,2,c)
    has_missing = miss[:, :, 0] > 0
    allow = xp.stack([xp.ones_like(has_missing), has_missing], axis=2)[:, :, None, None, :]
    proxy = _score(xp, criterion, left, parent[:, None, None, None, None, :], cons, allow)
    width = n_orders * (nb - 1) * 2
    flat = xp.reshape(proxy, (m, f, width))
    arg = xp.argmax(flat, axis=2)
    best = xp.max(flat, axis=2)
    best_left = xp.take(
        xp.reshape(left, (m * f * width, c)),
        xp.arange(m * f, dtype=xp.int64) * width + xp.reshape(arg, (m * f,)),
        axis=0,
    )
    return best, arg, xp.reshape(best_left, (m, f, c)), rank


def find_best_splits(
    xp,
    hist,
    parent,
    criterion,
    cons: SplitConstraints,
    is_categorical: np.ndarray,
    feature_mask=None,
) -> SplitRecord:
    """Best split of every node.

    Parameters
    ----------
    hist : array of shape (m, n_features, n_bins, n_channels), float64
    parent : array of shape (m, n_channels), float64
        The nodes' statistics (the sum of any feature's histogram).
    criterion : Criterion
    cons : SplitConstraints
    is_categorical : ndarray of shape (n_features,), bool (host)
    feature_mask : array of shape (m, n_features), bool, optional
        Features drawn for each node (``max_features``); all when None.

    Returns
    -------
    SplitRecord
    """
    m, n_features, nb, c = hist.shape
    num_idx = np.flatnonzero(~is_categorical)
    cat_idx = np.flatnonzero(is_categorical)
    per_feature_best = []
    per_feature_left = []
    per_feature_arg = []
    rank = None
    if num_idx.size:
        h = hist if num_idx.size == n_features else xp.take(hist, _ix(xp, num_idx), axis=1)
        best, arg, left = _numerical(xp, h, parent, criterion, cons)
        per_feature_best.append(best)
        per_feature_left.append(left)
        per_feature_arg.append(arg)
    if cat_idx.size:
        h = hist if cat_idx.size == n_features else xp.take(hist, _ix(xp, cat_idx), axis=1)
        best, arg, left, rank = _categorical(xp, h, parent, criterion, cons)
        per_feature_best.append(best)
        per_feature_left.append(left)
        per_feature_arg.append(arg)
    # back to the original feature order
    order = np.concatenate([num_idx, cat_idx])
    inverse = np.argsort(order)
    best = xp.take(xp.concat(per_feature_best, axis=1), _ix(xp, inverse), axis=1)
    left_all = xp.take(xp.concat(per_feature_left, axis=1), _ix(xp, inverse), axis=1)
    arg_all = xp.take(xp.concat(per_feature_arg, axis=1), _ix(xp, inverse), axis=1)
    if feature_mask is not None:
        best = xp.where(feature_mask, best, xp.full_like(best, -xp.inf))
    feature = xp.argmax(best, axis=1)
    proxy = xp.max(best, axis=1)
    found = proxy > -xp.inf
    left = _gather_rows(xp, left_all, feature)
    right = parent - left
    arg = _gather_rows(xp, arg_all, feature)
    is_cat_dev = xp.asarray(is_categorical) if False else _bool_table(xp, is_categorical)
    split_is_cat = xp.take(is_cat_dev, feature)
    variant = arg % 2
    position = (arg // 2) % (nb - 1)
    missing_left = variant == 1
    # nodes without missing values send NaN to the child with more rows
    node_has_missing = _gather_rows(xp, hist[:, :, nb - 1, 0], feature) > 0
    more_left = left[:, 0] > right[:, 0]
    missing_left = xp.where(node_has_missing, missing_left, more_left)
    bin_ = xp.where(split_is_cat, xp.full_like(position, -1), position)
    if rank is not None:
        cat_slot = xp.asarray(_cat_slot(is_categorical), dtype=xp.int64)
        slot = xp.take(cat_slot, feature)  # position among categorical features
        ordering = arg // (2 * (nb - 1))
        n_cat = int(cat_idx.size)
        n_orders = rank.shape[2]
        rank_flat = xp.reshape(rank, (m * n_cat * n_orders, nb - 1))
        sel = (xp.arange(m, dtype=xp.int64) * n_cat + xp.clip(slot, 0, None)) * n_orders + ordering
        node_rank = xp.take(rank_flat, sel, axis=0)  # (m, nb-1)
        present = _gather_rows(xp, hist[:, :, : nb - 1, 0], feature) > 0
        cat_left = (node_rank <= position[:, None]) & present & split_is_cat[:, None]
        cat_left = xp.concat([cat_left, (missing_left & split_is_cat)[:, None]], axis=1)
    else:
        cat_left = xp.zeros((m, 0), dtype=xp.bool)
    return SplitRecord(
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


def _ix(xp, idx: np.ndarray):
    return xp.asarray(idx.tolist(), dtype=xp.int64)


def _bool_table(xp, a: np.ndarray):
    return xp.asarray([bool(v) for v in a.tolist()], dtype=xp.bool)


def _cat_slot(is_categorical: np.ndarray) -> list:
    slot = np.cumsum(is_categorical) - 1
    return np.where(is_categorical, slot, -1).tolist()
