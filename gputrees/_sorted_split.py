"""Sort-based split search for small nodes (segmented scans, no histograms).

Deep trees end with thousands of nodes holding a handful of rows each. A
histogram for such a node costs ``n_features * n_bins * n_channels`` cells
whatever its number of rows, so for nodes with fewer rows than bins the
grower uses this search instead (as XGBoost's first GPU algorithm did for deep
levels):

1. every (row, feature) pair of the batch gets the key
   ``(node, feature, code)`` and the pairs are sorted by it, once;
2. a *segmented* inclusive scan (a kernel: by doubling in the reference, a
   cumulative sum minus the run's offset in the NumPy one) gives, at the last pair of each run of equal codes, the statistics
   of the node's rows with that feature's code ``<= code``: the left child of
   the split at that code with the missing bin sent right; adding the node's
   missing statistics gives the split with the missing bin sent left;
3. candidates are scored with the criterion's proxy, masked as in
   :mod:`gputrees._splitting`, and the best per node is found with segmented
   max / min reductions (kernels again), applying the same tie rule and
   tolerance (lowest feature, then missing right before left, then lowest code).
   An extremely randomised candidate (``random_u``) has its sides summed in the
   rows' input order instead (:func:`_random_sides`), as the compiled search,
   which sorts nothing for it, sums them.

Its result equals the histogram search's (integer channels exactly, float
channels to rounding). It handles numerical features only; batches with
categorical features use histograms.

Memory: about ``(n_channels * 6 + 8) * 8`` bytes per (row, feature) pair of
the batch; the grower sizes batches to fit its ``memory_limit``.
"""

from __future__ import annotations

from ._records import SplitRecord
from ._splitting import _valid, near_best, split_thresholds

#: Bytes of working memory per (row, feature) pair and channel, plus fixed keys.
BYTES_PER_PAIR_CHANNEL = 6 * 8
BYTES_PER_PAIR = 8 * 8


def find_best_splits_sorted(
    xp,
    codes,
    rows,
    slot,
    weights,
    parent,
    criterion,
    cons,
    bin_mapper,
    max_rows: int,
    kernels,
    feature_mask=None,
    random_u=None,
) -> SplitRecord:
    """Best split of every node of a batch of small nodes.

    Parameters
    ----------
    codes : array of shape (n_samples, n_features), uint8/uint16
    rows : array of shape (n_rows,), int64
        Rows of the nodes (a row may appear once per node it is in).
    slot : array of shape (n_rows,), int64
        Node (``0 <= slot < m``) of each row.
    weights : array of shape (n_rows, n_channels), float64
    parent : array of shape (m, n_channels), float64
        Statistics of the nodes.
    criterion, cons
        As for :func:`gputrees._splitting.find_best_splits`.
    bin_mapper : BinMapper
        Numerical features only.
    max_rows : int
        Upper bound on the rows of one node (sizes the doubling scans).
    kernels : Kernels
        Provides the segmented scans and reductions, and its compiled search
        (``sorted_splits``), tried first: where it declines (returns None),
        the search below runs.
    feature_mask : array of shape (m, n_features), bool, optional
    random_u : array of shape (m, n_features), float64, optional
        Extremely randomised splits: per (node, feature) a code drawn
        uniformly from the node's smallest present code to the one before its
        largest; the candidate is "codes <= that code" (as the histogram
        search does).

    Returns
    -------
    SplitRecord (``cat_left`` of width 0)
    """
    rec = kernels.sorted_splits(
        xp, codes, rows, slot, weights, parent, criterion, cons, bin_mapper, max_rows, kernels, feature_mask, random_u,
    )
    if rec is not None:
        return rec
    m = parent.shape[0]
    n_features = codes.shape[1]
    nb = bin_mapper.n_bins
    missing = nb - 1
    c = weights.shape[1]
    i64 = xp.int64
    feat = xp.arange(n_features, dtype=i64)
    sub = xp.astype(xp.take(codes, rows, axis=0), i64)
    key = xp.reshape((slot[:, None] * n_features + feat[None, :]) * nb + sub, (-1,))
    if feature_mask is not None:
        # only the (row, feature) pairs of features drawn for the row's node
        drawn = xp.reshape(xp.take(feature_mask, slot, axis=0), (-1,))
        key = key[drawn]
    order = xp.argsort(key, stable=True)
    skey = xp.take(key, order)
    seg = skey // nb  # node * n_features + feature
    code = skey % nb
    n = int(skey.shape[0])
    # each key's row of ``weights`` (keys in input order)
    key_pair = (xp.arange(key.shape[0], dtype=i64) if feature_mask is None else xp.astype(
        xp.nonzero(drawn)[0], i64)) // n_features
    pair_row = xp.take(key_pair, order)
    w = xp.take(weights, pair_row, axis=0)
    left = kernels.segmented_cumsum(xp, w, seg, max_rows)  # stats of codes <= this pair's
    nxt_seg = xp.concat([seg[1:], xp.full((1,), -1, dtype=i64)])
    nxt_code = xp.concat([code[1:], xp.full((1,), -1, dtype=i64)])
    run_end = (nxt_seg != seg) | (nxt_code != code)
    seg_end = nxt_seg != seg
    # per segment: total and the missing part (missing pairs sort last in a segment)
    end_idx = xp.astype(xp.searchsorted(seg, seg, side="right"), i64) - 1
    node = seg // n_features
    f = seg % n_features
    total = xp.take(parent, node, axis=0)
    last_nonmiss = xp.astype(xp.searchsorted(skey, seg * nb + missing, side="left"), i64) - 1
    start_idx = xp.astype(xp.searchsorted(seg, seg, side="left"), i64)
    has_nonmiss = last_nonmiss >= start_idx
    nonmiss = xp.where(
        has_nonmiss[:, None],
        xp.take(left, xp.clip(last_nonmiss, 0, None), axis=0),
        xp.zeros_like(left),
    )
    miss_stats = total - nonmiss
    seg_has_missing = xp.take(code, end_idx) == missing
    cand = run_end & (code != missing)
    if random_u is not None:
        first_code = xp.take(code, start_idx)
        last_code = xp.take(code, xp.clip(last_nonmiss, 0, None))
        span = last_code - first_code
        u = xp.take(xp.reshape(random_u, (-1,)), seg)
        pick = first_code + xp.astype(xp.floor(u * xp.astype(span, xp.float64)), i64)
        pick = xp.minimum(pick, last_code - 1)
        next_above = (nxt_seg != seg) | (nxt_code > pick)
        cand = cand & has_nonmiss & (span > 0) & (code <= pick) & next_above
        # the one candidate's sides summed in the rows' order, not sorted:
        # what the compiled search sums without sorting
        left, miss_stats = _random_sides(xp, key, key_pair, weights, pick, nb, end_idx, kernels, max_rows)
    left2 = xp.stack([left, left + miss_stats], axis=1)  # (n, 2, c)
    right2 = total[:, None, :] - left2
    ok = _valid(xp, criterion, left2, right2, cons) & cand[:, None]
    ok = ok & xp.stack([xp.ones_like(seg_has_missing), seg_has_missing], axis=1)
    proxy = criterion.proxy(xp, left2, right2)
    ok = ok & ~xp.isnan(proxy)
    proxy = xp.where(ok, proxy, xp.full_like(proxy, -xp.inf))
    # per node: max proxy, then the smallest tie key among the maxima
    node2 = xp.reshape(xp.stack([node, node], axis=1), (-1,))
    p2 = xp.reshape(proxy, (-1,))
    span = 2 * max_rows * n_features
    best = kernels.segment_max(xp, p2, node2, span)
    variant = xp.reshape(xp.stack([xp.zeros_like(code), xp.ones_like(code)], axis=1), (-1,))
    code2 = xp.reshape(xp.stack([code, code], axis=1), (-1,))
    f2 = xp.reshape(xp.stack([f, f], axis=1), (-1,))
    tie = (f2 * 2 + variant) * nb + code2
    big = xp.asarray(n_features * 2 * nb, dtype=i64)
    tie = xp.where(near_best(xp, p2, best), tie, big)
    win_tie = kernels.segment_min(xp, tie, node2, span)
    winner = (tie == win_tie) & (tie < big)
    # every node of the batch appears (it has rows); gather its winner
    nodes = xp.arange(m, dtype=i64)
    first_of_node = xp.astype(xp.searchsorted(node2, nodes, side="left"), i64)
    last_of_node = xp.astype(xp.searchsorted(node2, nodes, side="right"), i64) - 1
    node_tie = xp.take(win_tie, xp.clip(last_of_node, 0, None))
    found = (node_tie < big) & (last_of_node >= first_of_node)
    # position of the winning candidate: the unique index with winner True in the node
    widx = xp.astype(xp.nonzero(winner)[0], i64)
    wnode = xp.take(node2, widx)
    pos = xp.astype(xp.searchsorted(wnode, nodes, side="left"), i64)
    pos = xp.clip(pos, 0, max(int(widx.shape[0]) - 1, 0))
    if int(widx.shape[0]) == 0:
        widx = xp.zeros(1, dtype=i64)
        pos = xp.zeros(m, dtype=i64)
    cand_idx = xp.take(widx, pos)  # index into the (n * 2) candidates
    pair = cand_idx // 2
    var = cand_idx % 2
    feature = xp.where(found, xp.take(f, pair), xp.zeros_like(nodes))
    position = xp.take(code, pair)
    left_best = xp.take(xp.reshape(left2, (n * 2, c)), cand_idx, axis=0)
    left_best = xp.where(found[:, None], left_best, xp.zeros_like(left_best))
    right_best = parent - left_best
    proxy_best = xp.where(found, xp.take(p2, cand_idx), xp.full((m,), -xp.inf, dtype=xp.float64))
    node_has_missing = xp.take(seg_has_missing, pair)
    missing_left = xp.where(node_has_missing, var == 1, left_best[:, 0] > right_best[:, 0])
    # threshold: midpoint with the next present code of the node (exact bins), or the edge
    nxt_in_seg = ~xp.take(seg_end, pair) & (xp.take(nxt_code, pair) != missing)
    next_code = xp.where(nxt_in_seg, xp.take(nxt_code, pair), position)
    thr = split_thresholds(xp, bin_mapper, feature, position, next_code, nxt_in_seg)
    return SplitRecord(
        found=found,
        proxy=proxy_best,
        feature=feature,
        bin=position,
        missing_left=missing_left,
        is_categorical=xp.zeros((m,), dtype=xp.bool),
        cat_left=xp.zeros((m, 0), dtype=xp.bool),
        left=left_best,
        right=right_best,
        threshold=thr,
    )


def _random_sides(xp, key, key_pair, weights, pick, nb, end_idx, kernels, max_rows: int):
    """The extremely randomised candidate's left statistics and the missing rows' statistics, per sorted pair.

    ``key`` ((node, feature) * nb + code, input order) and ``key_pair`` (its rows of ``weights``); ``pick``
    and ``end_idx`` (each segment's last position) by sorted position. Each (node, feature)'s rows of codes
    ``<= pick``, and its missing ones, summed in input order: grouped by (node, feature) only, stably, the
    segments take the positions they take sorted by code.
    """
    order = xp.argsort(key // nb, stable=True)
    seg = xp.take(key, order) // nb
    code = xp.take(key, order) % nb
    w = xp.take(weights, xp.take(key_pair, order), axis=0)
    zero = xp.zeros_like(w)
    sides = []
    for mask in (code <= pick, code == nb - 1):
        sums = kernels.segmented_cumsum(xp, xp.where(mask[:, None], w, zero), seg, max_rows)
        sides.append(xp.take(sums, end_idx, axis=0))
    return sides[0], sides[1]
