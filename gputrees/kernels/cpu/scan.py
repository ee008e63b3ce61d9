"""The histogram split scan (Numba): the numerical split search of a batch of nodes.

The compiled counterpart of :func:`gputrees._splitting.find_best_splits` for
numerical features, which it equals (the array-API code is the oracle): the
same candidates, the same proxies (the formulas of
:mod:`gputrees.kernels.rules`, in the oracle's operation order), the same
masks, tie rule and tolerance, the same thresholds. Instead of a dozen array
passes over every (node, feature, bin) it makes one:

1. per (node, feature) -- in parallel over blocks of them, each computed by
   one thread -- a running sum over the value bins gives every candidate's
   left statistics (missing bin right, and, where the node has missing values,
   left); each valid candidate is scored and the feature's best proxy kept.
   A bin whose channels are all zero leaves the running sum unchanged: its
   candidate repeats the previous one, which comes first in the tie order,
   so it is skipped (most bins of small nodes are empty);
2. per node: its best proxy, then the first feature holding a candidate
   within ``TIE_RTOL`` of it, whose scan is replayed to find its first such
   candidate (missing right before missing left, lowest bin first).

Results do not depend on the number of threads. Covered: every criterion
with a code (:func:`gputrees._records.criterion_code`), ``min_samples_leaf``
/ ``min_weight_leaf``, ``feature_mask``, ``random_u`` (extremely randomised
candidates), ``feature_ids`` (histograms of the drawn features only),
monotonic bounds (Newton), both threshold rules, and categorical features
(:func:`scan_categorical`: each node's categories sorted by the criterion's
keys, then scanned as a numerical feature's bins). The rare criteria whose
channel sums would need NumPy's pairwise summation beyond one block (more
than 128 classes or outputs) are left to the oracle: :func:`best_splits`
returns None for them.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from ..._records import (
    ENTROPY,
    FRIEDMAN_MSE,
    GINI,
    MISCLASSIFICATION,
    NEWTON,
    NEWTON_GH,
    POISSON,
    SQUARED_ERROR,
    SplitRecord,
    category_positions,
    criterion_code,
)
from ..rules import (
    NEG_INF,
    PAIRWISE_BLOCK,
    POISSON_EPSILON,
    TIE_RTOL,
    UNROLL_CHANNELS,
    candidate_score,
    category_key,
    category_orderings,
    entropy_term,
    friedman_proxy,
    has_rows,
    key_before,
    newton_bounded,
    newton_gradient_channel,
    newton_proxy,
    pairwise_sum,
    poisson_term,
    random_bin,
    safe,
    split_threshold,
    sum_sq_proxy,
    tie_target,
)
from .jit import JIT_LEAF, JIT_NUMPY, Threads, serial_twin, threads_for

#: Blocks of (node, feature) tasks per thread (balances uneven features).
BLOCKS_PER_THREAD = 4


@numba.njit(**JIT_LEAF)
def candidate_proxies(kind, L, out, P, n_out, l2, msl, mwl, mono, lo, up, direction, R, tmp):
    """``candidate_score`` of every candidate row of ``L`` whose ``out`` is not already ``-inf`` (skipped).

    Newton (with or without monotonic bounds), Gini, squared error, and
    entropy / misclassification / Friedman / Poisson with fewer than 8
    classes or outputs have their own loops; the rest scores row by row.
    """
    n, C = L.shape
    P0 = P[0]
    if kind == NEWTON or kind == NEWTON_GH:
        gi = newton_gradient_channel(kind)
        counted = kind == NEWTON
        P1, P2 = P[gi], P[gi + 1]
        for b in range(n):
            if out[b] == NEG_INF:
                continue
            l0, l1, h_l = L[b, 0], L[b, gi], L[b, gi + 1]
            r0, r1, h_r = P0 - l0, P1 - l1, P2 - h_l
            p = NEG_INF
            if (not counted or (l0 >= msl and r0 >= msl)) and h_l >= mwl and h_r >= mwl and h_l > 0 and h_r > 0:
                if mono:
                    vl, gl = newton_bounded(l1, h_l, l2, lo, up)
                    vr, gr = newton_bounded(r1, h_r, l2, lo, up)
                    p = gl + gr if direction * (vr - vl) >= 0 else NEG_INF
                    if p != p:
                        p = NEG_INF
                else:
                    p = _newton_proxy(l1, h_l, r1, h_r, l2)
            out[b] = p
        return
    first = 1 if kind == GINI else 2  # Gini: classes 1.., squared error: sums 2..
    n_sum = C - 1 if kind == GINI else n_out
    if kind == GINI or kind == SQUARED_ERROR:
        for b in range(n):
            if out[b] == NEG_INF:
                continue
            if n_sum <= UNROLL_CHANNELS:  # _channel_sum's chain of adds
                v = L[b, first]
                r = P[first] - v
                sl, sr = v * v, r * r
                wl, wr = v, r  # Gini: the class sums
                for c in range(first + 1, first + n_sum):
                    v = L[b, c]
                    r = P[c] - v
                    sl = sl + v * v
                    sr = sr + r * r
                    wl = wl + v
                    wr = wr + r
            else:  # NumPy's pairwise sums
                for c in range(C):
                    tmp[c] = L[b, c]
                    R[c] = P[c] - tmp[c]
                sl, sr = pairwise_sum(tmp, first, n_sum, True), pairwise_sum(R, first, n_sum, True)
                wl, wr = pairwise_sum(tmp, first, n_sum, False), pairwise_sum(R, first, n_sum, False)
            if kind == SQUARED_ERROR:
                wl, wr = L[b, 1], P[1] - L[b, 1]
            out[b] = checked_sum_sq_proxy(L[b, 0], P0 - L[b, 0], sl, sr, wl, wr, msl, mwl)
        return
    if (kind == ENTROPY or kind == MISCLASSIFICATION) and C - 1 < 8:  # entropy, misclassification: sums of fewer than 8 terms
        for b in range(n):
            if out[b] == NEG_INF:
                continue
            wl, wr = L[b, 1], P[1] - L[b, 1]
            for c in range(2, C):
                wl = wl + L[b, c]
                wr = wr + (P[c] - L[b, c])
            l0 = L[b, 0]
            r0 = P0 - l0
            p = NEG_INF
            if l0 >= msl and r0 >= msl and wl >= mwl and wr >= mwl and wl > 0 and wr > 0:
                p = -(wr * _row_impurity(kind, L, b, P, True, wr)) - wl * _row_impurity(kind, L, b, P, False, wl)
                if p != p:
                    p = NEG_INF
            out[b] = p
        return
    if (kind == FRIEDMAN_MSE or kind == POISSON) and n_out < 8:  # Friedman, Poisson: sums of fewer than 8 outputs
        for b in range(n):
            if out[b] == NEG_INF:
                continue
            wl, wr = L[b, 1], P[1] - L[b, 1]
            l0 = L[b, 0]
            r0 = P0 - l0
            p = NEG_INF
            if l0 >= msl and r0 >= msl and wl >= mwl and wr >= mwl and wl > 0 and wr > 0:
                p = _row_regression(kind, L, b, P, safe(wl), safe(wr), n_out)
                if p != p:
                    p = NEG_INF
            out[b] = p
        return
    for b in range(n):
        if out[b] != NEG_INF:
            out[b] = candidate_score(kind, L[b], R, P, n_out, l2, msl, mwl, mono, lo, up, direction, tmp)


@numba.njit(**JIT_LEAF)
def _row_regression(kind, L, b, P, a, c, n_out):
    """Friedman (kind 4) or Poisson (kind 5) proxy of row ``b`` of ``L`` (safe weights ``a``, ``c``),
    fewer than 8 outputs: :func:`gputrees.kernels.rules.split_proxy` without the row copies."""
    sl, sr = 0.0, 0.0
    for j in range(n_out):
        vl = L[b, 2 + j]
        vr = P[2 + j] - vl
        if kind == FRIEDMAN_MSE:
            sl += vl
            sr += vr
        else:
            if not (vl > POISSON_EPSILON and vr > POISSON_EPSILON):
                return NEG_INF
            sl += poisson_term(vl, math.log(vl / a))
            sr += poisson_term(vr, math.log(vr / c))
    if kind == POISSON:
        return sl + sr
    return friedman_proxy(sl, sr, a, c)


@numba.njit(**JIT_LEAF)
def _row_impurity(kind, L, b, P, right, w):
    """Entropy or misclassification of row ``b`` of ``L`` (``P - L[b]`` with ``right``), fewer than 8
    classes: :func:`gputrees.kernels.rules.impurity` without the row copy."""
    ws = safe(w)
    acc = 0.0 if kind == ENTROPY else NEG_INF
    for c in range(1, L.shape[1]):
        p = ((P[c] - L[b, c]) if right else L[b, c]) / ws
        if kind == ENTROPY:
            acc += entropy_term(p, math.log(p if p > 0 else 1.0))
        elif p > acc:
            acc = p
    return -acc if kind == ENTROPY else 1.0 - acc


@numba.njit(inline="always", **JIT_NUMPY)
def score_random_sides(L, out, has_missing, P, crit, mono, lo, up, R, tmp):
    """The proxies of an extremely randomised candidate's two missing-value variants, whose left statistics are
    ``L[0]`` (missing rows sent right) and ``L[1]`` (sent left), into ``out[0]`` and ``out[1]``; the second -inf
    (not scored) without missing rows. No monotonic direction (``mono``: the node's bounds ``lo``, ``up``)."""
    out[0] = 0.0
    out[1] = 0.0 if has_missing else NEG_INF
    candidate_proxies(crit[0], L[:2], out[:2], P, crit[1], crit[2], crit[3], crit[4], mono, lo, up, 0.0, R, tmp)


@numba.njit(**JIT_LEAF)
def first_near(out, n, target, L, res):
    """Target -inf: (-1, the best of ``out[:n]``). Otherwise the first index whose proxy is
    ``>= target`` (and above -inf) and that proxy, its row of ``L`` copied to ``res``; (-1, -inf) if none."""
    best = NEG_INF
    for j in range(n):
        p = out[j]
        if target > NEG_INF:
            if p >= target and p > NEG_INF:
                for c in range(L.shape[1]):
                    res[c] = L[j, c]
                return j, p
        elif p > best:
            best = p
    return -1, best


@numba.njit(**JIT_LEAF)
def scan_feature(h, P, crit, mono, lo, up, direction, pick, target, scratch, n_scan):
    """One (node, feature): its candidates in tie order, among value bins ``0 .. n_scan - 1``.

    Bins from ``n_scan`` on must be empty (a feature's codes above its
    ``n_value_bins``, :func:`_value_bins`): they would be skipped as the same
    candidate as the bin before them, so they are not visited.

    ``target`` -inf: returns (best proxy, -1, -1). Otherwise returns the first
    candidate whose proxy is ``>= target`` (and above -inf): (proxy, bin,
    variant), its left stats in ``scratch[3]``.
    """
    kind, n_out, l2, msl, mwl = crit
    cum, R, tmp, res, L, out = scratch
    nb, C = h.shape
    n = min(nb - 1, n_scan)
    if pick >= 0:
        return scan_pick(h, P, crit, mono, lo, up, direction, pick, target, scratch, n, 0)
    best = NEG_INF
    for variant in range(2 if has_rows(kind, h[nb - 1]) else 1):
        for c in range(C):
            cum[c] = h[0, c]
        last = n - 1 if pick < 0 else pick
        for b in range(n):
            if b > last:
                out[b] = NEG_INF
                continue
            skip = pick >= 0 and b != pick
            if b > 0:
                empty = True
                for c in range(C):
                    if h[b, c] != 0:
                        empty = False
                if empty and pick < 0:
                    skip = True  # same candidate as the previous bin, which comes first
                else:
                    for c in range(C):
                        cum[c] = cum[c] + h[b, c]
            out[b] = NEG_INF if skip else 0.0
            if not skip:
                for c in range(C):
                    L[b, c] = cum[c] + h[nb - 1, c] if variant == 1 else cum[c]
        candidate_proxies(kind, L[:n], out, P, n_out, l2, msl, mwl, mono, lo, up, direction, R, tmp)
        b, p = first_near(out, n, target, L, res)
        if b >= 0:
            return p, b, variant
        best = max(best, p)
    return best, -1, -1


@numba.njit(inline="always")
def bin_sums(h, start, stop, cum):
    """``cum`` (C,) = the bins ``h[start .. stop]`` (inclusive) added in order."""
    C = h.shape[1]
    if C == 4:
        # squared error's (or three classes') channels summed in registers: through ``cum`` each bin's adds wait
        # on the store of the bin before (``cum`` and ``h`` may alias for the compiler); the same adds, in order
        c0, c1, c2, c3 = h[start, 0], h[start, 1], h[start, 2], h[start, 3]
        for b in range(start + 1, stop + 1):
            c0, c1, c2, c3 = c0 + h[b, 0], c1 + h[b, 1], c2 + h[b, 2], c3 + h[b, 3]
        cum[0], cum[1], cum[2], cum[3] = c0, c1, c2, c3
    else:
        for c in range(C):
            cum[c] = h[start, c]
        for b in range(start + 1, stop + 1):
            for c in range(C):
                cum[c] = cum[c] + h[b, c]


@numba.njit(**JIT_LEAF)
def scan_pick(h, P, crit, mono, lo, up, direction, pick, target, scratch, n, start):
    """:func:`scan_feature` of an extremely randomised candidate ``pick``: the only one scored.

    The bins up to it are summed in order and only its proxy is computed: a
    small node of a deep tree no longer scores, and then skips, the
    feature's other 254 bins. ``start``: a bin below which ``h`` holds exact
    zeros (a node's lowest code; 0 where unknown), where the sum starts (the
    zeros before it leave the sums as they are). The same results as the
    full scan, which sets every other bin -inf.
    """
    kind, n_out, l2, msl, mwl = crit
    cum, R, tmp, res, L, out = scratch
    nb, C = h.shape
    best = NEG_INF
    if pick < 0 or pick >= n:
        return best, -1, -1
    bin_sums(h, min(start, pick), pick, cum)
    for variant in range(2 if has_rows(kind, h[nb - 1]) else 1):
        for c in range(C):
            L[pick, c] = cum[c] + h[nb - 1, c] if variant == 1 else cum[c]
        out[pick] = 0.0
        candidate_proxies(kind, L[pick:pick + 1], out[pick:pick + 1], P, n_out, l2, msl, mwl, mono, lo, up,
                          direction, R, tmp)
        p = out[pick]
        if target > NEG_INF:
            if p >= target and p > NEG_INF:
                for c in range(C):
                    res[c] = L[pick, c]
                return p, pick, variant
        elif p > best:
            best = p
    return best, -1, -1


@numba.njit(**JIT_LEAF)
def _feature_scan(hist, parent, i, f, crit, u, has_u, bounds, direction, mono, target, scratch, n_scan):
    """:func:`scan_feature` of feature ``f`` of node ``i`` (its random candidate with ``has_u``) over ``n_scan`` bins."""
    pick = -1
    if has_u:
        pick = random_bin(hist[i, f], hist.shape[2], u[i, f])
        if pick < 0:
            return NEG_INF, -1, -1
    d = direction[i, f] if mono else 0.0
    lo, up = (bounds[i, 0], bounds[i, 1]) if mono else (0.0, 0.0)
    return scan_feature(hist[i, f], parent[i], crit, mono, lo, up, d, pick, target, scratch, n_scan)


@numba.njit(**JIT_LEAF)
def category_order(h, kind, k, n_out, l2, n_pos, n_valid, keys, order, tmp):
    """The value bins ``0 .. n_pos - 1`` of one (node, categorical feature) histogram ``h`` sorted by their key
    in ordering ``k`` (empty bins last), stably: ``order[:n_pos]``, as the oracle's stable argsort.

    Bins from ``n_valid`` on (past the feature's categories) are empty and
    not read: a histogram may leave them unwritten.

    Returns how many sorted positions can hold a candidate: the present
    categories (at least 1), after which every position is an empty bin,
    skipped by the scans. The empty bins (key inf) are placed after the
    present ones in bin order, as the stable sort places them, without
    entering the sort; where a present key is inf or NaN (it would sort
    among or after them) or an empty bin has a non-zero channel (the scans
    would add it), the whole stable sort runs and every position counts.
    """
    n_present = 0
    plain = True
    for b in range(n_pos):
        if b >= n_valid or h[b, 0] == 0:
            if b < n_valid:
                for c in range(h.shape[1]):
                    plain &= h[b, c] == 0
            continue
        key = category_key(kind, h[b], k, n_out, l2, tmp)
        keys[b] = key
        plain &= key < np.inf
        j = n_present
        while j > 0 and key_before(key, keys[order[j - 1]]):
            order[j] = order[j - 1]
            j -= 1
        order[j] = b
        n_present += 1
    if plain:
        e = n_present
        for b in range(n_pos):
            if b >= n_valid or h[b, 0] == 0:
                keys[b] = np.inf
                order[e] = b
                e += 1
        return max(n_present, 1)
    for b in range(n_pos):
        keys[b] = np.inf if b >= n_valid or h[b, 0] == 0 else category_key(kind, h[b], k, n_out, l2, tmp)
        j = b
        while j > 0 and key_before(keys[b], keys[order[j - 1]]):
            order[j] = order[j - 1]
            j -= 1
        order[j] = b
    return n_pos


@numba.njit(**JIT_LEAF)
def scan_categorical(h, P, crit, mono, lo, up, u, has_u, target, scratch, keys, order, n_pos, n_valid):
    """One (node, categorical feature): its candidates in tie order -- ordering, then missing right before
    missing left, then the shortest left set of the sorted categories --, over sorted positions
    ``0 .. n_pos - 1`` (:func:`gputrees._splitting._categorical`).

    ``has_u``: the extremely randomised candidate, a cut at ``u`` among the
    node's present categories in the first ordering. Bins from ``n_valid``
    on are empty and not read (:func:`category_order`). ``target`` -inf:
    returns (best proxy, -1, -1, -1). Otherwise the first candidate whose
    proxy is ``>= target`` (and above -inf): (proxy, position, variant,
    ordering), its left stats in ``scratch[3]`` and the ordering's sort in
    ``order``.
    """
    kind, n_out, l2, msl, mwl = crit
    cum, R, tmp, res, L, out = scratch
    nb, C = h.shape
    n_var = 2 if h[nb - 1, 0] > 0 else 1
    n_orders = category_orderings(kind, C)
    if has_u:
        pick, best = score_category_pick(h, P, crit, mono, lo, up, u, scratch, keys, order, n_pos, n_valid)
        if pick < 0 or target == NEG_INF:
            return best, -1, -1, -1
        for variant in range(n_var):
            p = out[variant]
            if p >= target and p > NEG_INF:
                for c in range(C):
                    res[c] = L[variant, c]
                return p, pick, variant, 0
        return NEG_INF, -1, -1, -1
    best = NEG_INF
    for k in range(n_orders):
        # positions past the present categories are empty bins, skipped (-inf): not visited
        n_live = category_order(h, kind, k, n_out, l2, n_pos, n_valid, keys, order, tmp)
        for variant in range(n_var):
            for j in range(n_live):
                # an empty category after the first: the same candidate as the position before, which comes first
                skip = _add_category(h, order[j], j, n_valid, cum) and j > 0
                out[j] = NEG_INF if skip else 0.0
                if not skip:
                    for c in range(C):
                        L[j, c] = cum[c] + h[nb - 1, c] if variant == 1 else cum[c]
            # categorical features carry no monotonic direction, only the node's bounds
            candidate_proxies(kind, L[:n_live], out, P, n_out, l2, msl, mwl, mono, lo, up, 0.0, R, tmp)
            j, p = first_near(out, n_live, target, L, res)
            if j >= 0:
                return p, j, variant, k
            best = max(best, p)
    return best, -1, -1, -1


@numba.njit(inline="always", **JIT_NUMPY)
def _add_category(h, b, j, n_valid, cum):
    """Category ``b``, at sorted position ``j``, added to the running sums ``cum`` (set from it at position 0);
    an empty category (no value in any channel, or past ``n_valid``) adds nothing. Returns whether it was empty."""
    C = h.shape[1]
    empty = True
    if b < n_valid:
        for c in range(C):
            if h[b, c] != 0:
                empty = False
    if j == 0:
        for c in range(C):
            cum[c] = 0.0 if empty else h[b, c]
    elif not empty:
        for c in range(C):
            cum[c] = cum[c] + h[b, c]
    return empty


@numba.njit(inline="always", **JIT_NUMPY)
def score_category_pick(h, P, crit, mono, lo, up, u, scratch, keys, order, n_pos, n_valid):
    """The extremely randomised candidate of one (node, categorical feature): the cut after sorted position
    ``pick = floor(u (n_present - 1))`` of the node's present categories in the first ordering (``order``).

    Returns ``(pick, best proxy)``, ``(-1, -inf)`` below two present
    categories; the left sums with the missing rows sent right and left in
    ``scratch[4][0]`` and ``[1]``, their proxies in ``scratch[5][0]`` and
    ``[1]`` (-inf without missing rows). The categories up to the cut are
    summed in their sorted order, empty ones skipped: the adds and results
    of the scan of every position. Inlined into its callers: a call with
    these arrays costs a fair share of a small node's scan.
    """
    kind, n_out, l2 = crit[0], crit[1], crit[2]
    cum, R, tmp, res, L, out = scratch
    nb, C = h.shape
    n_present = 0
    for b in range(min(n_pos, n_valid)):
        if h[b, 0] > 0:
            n_present += 1
    if n_present <= 1:
        return -1, NEG_INF
    pick = np.int64(math.floor(u * np.float64(n_present - 1)))
    category_order(h, kind, 0, n_out, l2, n_pos, n_valid, keys, order, tmp)
    for j in range(pick + 1):
        _add_category(h, order[j], j, n_valid, cum)
    for c in range(C):
        L[0, c] = cum[c]
        L[1, c] = cum[c] + h[nb - 1, c]
    # categorical features carry no monotonic direction, only the node's bounds
    score_random_sides(L, out, h[nb - 1, 0] > 0, P, crit, mono, lo, up, R, tmp)
    best = NEG_INF
    for variant in range(2 if h[nb - 1, 0] > 0 else 1):
        if out[variant] > best:
            best = out[variant]
    return pick, best


@numba.njit(**JIT_LEAF)
def _value_bins(i, f, nb, fids, has_fids, n_value_bins, has_mapper):
    """How many value bins column ``f`` of node ``i`` can fill: its feature's ``n_value_bins``
    (all ``nb - 1`` without a mapper). A feature with few distinct values
    (a month, a category coded as a number) is scanned over those, not 255."""
    if not has_mapper:
        return nb - 1
    feat = fids[i, f] if has_fids else f
    return min(nb - 1, n_value_bins[max(feat, 0)])


@numba.njit(**JIT_NUMPY)
def _block_scratch(n_blocks, nb, C):
    """A scan's work space (cum, R, tmp, res (C,), L (nb, C), out (nb,)) for each of ``n_blocks`` blocks.

    Six arrays with a leading block axis: block ``k``'s work space is their
    ``k``-th rows.
    """
    return (np.empty((n_blocks, C)), np.empty((n_blocks, C)), np.empty((n_blocks, C)), np.empty((n_blocks, C)),
            np.empty((n_blocks, nb, C)), np.empty((n_blocks, nb)))


@numba.njit(**JIT_NUMPY)
def _block_category_scratch(n_blocks, n_pos):
    """The categorical scan's keys and sort (:func:`category_order`) for each of ``n_blocks`` blocks."""
    return np.empty((n_blocks, max(n_pos, 1))), np.empty((n_blocks, max(n_pos, 1)), dtype=np.int64)


@numba.njit(**JIT_NUMPY)
def scan_scratch(nb, C):
    """One scan's work space: :func:`_block_scratch` of a single block."""
    cum, r, tmp, res, left, out = _block_scratch(1, nb, C)
    return cum[0], r[0], tmp[0], res[0], left[0], out[0]


@numba.njit(**JIT_NUMPY)
def no_split_outputs(m, C, threshold):
    """The record's arrays (found, proxy, feature, bin, missing_left, left, threshold) as for no split."""
    return (np.zeros(m, dtype=np.bool_), np.full(m, NEG_INF), np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64),
            np.zeros(m, dtype=np.bool_), np.zeros((m, C)), np.full(m, threshold))


@numba.njit(parallel=True, **JIT_NUMPY)
def scan_nodes_kernel(hist, parent, crit, fmask, has_mask, u, has_u, fids, has_fids, bounds, direction, mono,
                 thresholds, bin_values, is_exact, n_value_bins, has_mapper, local, tie_rtol, n_blocks, is_cat,
                 n_cat_pos):
    # is_cat (F,): the categorical columns, scanned over their sorted categories' first n_cat_pos positions
    m, F, nb, C = hist.shape
    fmax = np.full(m * F, NEG_INF)
    found, proxy, feature, bin_, missing_left, left, threshold = no_split_outputs(m, C, np.nan)
    split_cat = np.zeros(m, dtype=np.bool_)
    cat_left = np.zeros((m, nb if n_cat_pos > 0 else 0), dtype=np.bool_)
    s_keys, s_order = _block_category_scratch(n_blocks, n_cat_pos)
    # Newton without random candidates or bounds (boosting's trees): phase 0
    # scans each (node, feature) in one pass (_newton_scan) and records its
    # first near-best candidate, phase 1 takes the record of a node's first
    # near-best feature where that feature holds the node's best proxy
    # (then its own target is the node's), instead of scanning it again
    fused = (crit[0] == NEWTON or crit[0] == NEWTON_GH) and not has_u and not mono
    n_rec = m * F if fused else 1
    rec_ok = np.zeros(n_rec, dtype=np.bool_)
    rec_var = np.zeros(n_rec, dtype=np.int64)
    rec_bin = np.zeros(n_rec, dtype=np.int64)
    rec_p = np.zeros(n_rec)
    rec_left = np.zeros((n_rec, C))
    # each block's work space, made once for both phases (made in each block
    # of each phase, its arrays would be most of a boosting round's allocations)
    s_cum, s_r, s_tmp, s_res, s_l, s_out = _block_scratch(n_blocks, nb, C)
    f_l = np.empty((n_blocks, 2 if fused else 0, C, nb))
    f_out = np.empty((n_blocks, 2 if fused else 0, nb))
    # phase 0: every (node, feature)'s best proxy; phase 1: every node's first
    # near-best feature, replayed for its first near-best candidate (one call
    # site of the scan for both: less machine code to compile).
    for phase in range(2):
        n_items = m * F if phase == 0 else m
        per = (n_items + n_blocks - 1) // n_blocks
        for blk in prange(n_blocks):
            scratch = (s_cum[blk], s_r[blk], s_tmp[blk], s_res[blk], s_l[blk], s_out[blk])
            fL = f_l[blk]
            fout = f_out[blk]
            for item in range(blk * per, min(n_items, (blk + 1) * per)):
                i, f0, f1, target = item // F, item % F, item % F + 1, NEG_INF
                best = NEG_INF
                if phase == 1:
                    i, f0, f1 = item, 0, F
                    for f in range(F):
                        best = max(best, fmax[i * F + f])
                    target = tie_target(best, tie_rtol)
                col, pos, variant = 0, 0, 0
                keys, order = s_keys[blk], s_order[blk]
                for f in range(f0, f1):
                    if phase == 0 and has_mask and not fmask[i, f]:
                        continue
                    if phase == 1 and not (fmax[i * F + f] > NEG_INF and fmax[i * F + f] >= target):
                        continue
                    n_scan = _value_bins(i, f, nb, fids, has_fids, n_value_bins, has_mapper)
                    if fused and phase == 0 and not is_cat[f]:
                        fmax[item], ok, v, b = _newton_scan(hist[i, f], parent[i], crit[0], crit[2], crit[3],
                                                            crit[4], n_scan, tie_rtol, fL, fout)
                        if ok:
                            rec_ok[item], rec_var[item], rec_bin[item], rec_p[item] = True, v, b, fout[v, b]
                            for c in range(C):
                                rec_left[item, c] = fL[v, c, b]
                        continue
                    k = i * F + f
                    if is_cat[f]:
                        lo, up = (bounds[i, 0], bounds[i, 1]) if mono else (0.0, 0.0)
                        p, b, var, _ = scan_categorical(hist[i, f], parent[i], crit, mono, lo, up,
                                                         u[i, f] if has_u else 0.0, has_u, target, scratch, keys,
                                                         order, n_cat_pos, n_scan)
                    elif fused and rec_ok[k] and fmax[k] == best:
                        p, b, var = rec_p[k], rec_bin[k], rec_var[k]
                        for c in range(C):
                            scratch[3][c] = rec_left[k, c]
                    else:
                        p, b, var = _feature_scan(hist, parent, i, f, crit, u, has_u, bounds, direction, mono,
                                                  target, scratch, n_scan)
                    if phase == 0:
                        fmax[item] = p
                    elif b >= 0:
                        found[i] = True
                        proxy[i] = p
                        col, pos, variant = f, b, var
                        break
                if phase == 1:
                    if not found[i] and is_cat[0]:
                        # no split: the first candidate of column 0, as the generic code reports it
                        category_order(hist[i, 0], crit[0], 0, crit[1], crit[2], n_cat_pos,
                                       _value_bins(i, 0, nb, fids, has_fids, n_value_bins, has_mapper), keys, order,
                                       scratch[2])
                    _finish(hist, parent, i, col, pos, variant, found[i], scratch[3], fids, has_fids, thresholds,
                            bin_values, is_exact, n_value_bins, has_mapper, local,
                            (feature, bin_, missing_left, left, threshold), crit[0], is_cat[col], order,
                            split_cat, cat_left)
    return found, proxy, feature, bin_, missing_left, left, threshold, split_cat, cat_left


scan_nodes_kernel_serial = serial_twin(scan_nodes_kernel)


@numba.njit(**JIT_LEAF)
def _finish(hist, parent, i, col, pos, variant, found, L, fids, has_fids, thresholds, bin_values, is_exact,
            n_value_bins, has_mapper, local, out, kind, cat, order, split_cat, cat_left):
    """The record of node ``i`` from its winning (column, bin, variant) and left stats ``L``.

    ``cat``: the column is categorical, ``pos`` a position in its sorted
    categories ``order`` (the codes sent left: those up to it that are present)."""
    feature, bin_, missing_left, left, threshold = out
    nb = hist.shape[2]
    for c in range(hist.shape[3]):
        # not found: feature 0's first candidate, as the generic code gives
        left[i, c] = L[c] if found else hist[i, 0, order[0] if cat else 0, c]
    feat = fids[i, col] if has_fids else col
    feature[i] = feat
    bin_[i] = -1 if cat else pos
    if has_rows(kind, hist[i, col, nb - 1]):
        missing_left[i] = variant == 1
    elif kind != NEWTON_GH:  # no missing values in the node: NaN goes to the child with more rows
        missing_left[i] = left[i, 0] > parent[i, 0] - left[i, 0]
    # (Newton over [G, H]: no counts; False, the grower decides from the routed rows)
    if cat:
        split_cat[i] = True
        n_valid = _value_bins(i, col, nb, fids, has_fids, n_value_bins, has_mapper)
        for j in range(pos + 1):
            b = order[j]
            cat_left[i, b] = b < n_valid and hist[i, col, b, 0] > 0
        cat_left[i, nb - 1] = missing_left[i]
    elif has_mapper:
        threshold[i] = node_threshold(hist[i, col], nb, feat, pos, thresholds, bin_values, is_exact, n_value_bins, local)


@numba.njit(**JIT_LEAF)
def node_threshold(h, nb, feat, pos, thresholds, bin_values, is_exact, n_value_bins, local):
    """:func:`gputrees._splitting._thresholds` and ``split_thresholds`` for one node."""
    f = max(feat, 0)
    if local:
        nxt = 0
        has_next = False
        for b in range(pos + 1, nb - 1):
            if h[b, 0] > 0:
                nxt = b
                has_next = True
                break
    else:
        has_next = pos + 1 < n_value_bins[f]
        nxt = pos + 1 if has_next else pos
    return split_threshold(feat, pos, nxt, has_next, thresholds, bin_values, is_exact)


@numba.njit(inline="always", **JIT_NUMPY)
def _newton_proxy(l1, h_l, r1, h_r, l2):
    """:func:`gputrees.kernels.rules.newton_proxy` of one admissible candidate, -inf where NaN."""
    p = newton_proxy(l1, h_l, r1, h_r, l2)
    return NEG_INF if p != p else p


@numba.njit(**JIT_LEAF)
def _newton_scan(h, P, kind, l2, msl, mwl, n_scan, tie_rtol, L, out):
    """:func:`scan_feature`'s first pass (target -inf, no random pick, no monotonic bounds) of one Newton histogram
    ``h`` (nb, C) -- [count, G, H] or [G, H] --, over value bins ``0 .. n_scan - 1``, both variants.

    The running sums of both variants in one pass, laid out by channel, then
    each variant's proxies in a loop of their own (:func:`_newton_proxies`,
    :func:`candidate_proxies`' formula term for term), which the compiler vectorises,
    instead of :func:`scan_feature`'s passes. ``L`` (2, C, nb) and ``out`` (2, nb)
    are work space. An empty bin after the first repeats the sums, so the
    proxy, of the bin before it, which comes first: the first near-best
    candidate is never an empty bin (as :func:`scan_feature`'s, which sets them
    -inf).

    Returns (best, recorded, variant, bin): the best proxy of the feature
    and, when ``recorded``, its first candidate (variants in order, then
    bins) within ``tie_rtol`` of it: what :func:`scan_feature` finds with the node's
    target when this feature holds the node's best proxy. Its proxy is
    ``out[variant, bin]``, its left statistics ``L[variant, :, bin]``.
    """
    nb, C = h.shape
    n = min(nb - 1, n_scan)
    gi = newton_gradient_channel(kind)
    counted = kind == NEWTON
    three = C == 3
    P0, P1, P2 = P[0], P[gi], P[gi + 1]
    m0 = h[nb - 1, 0]
    m1 = h[nb - 1, 1]
    m2 = h[nb - 1, 2] if three else 0.0
    n_var = 2 if has_rows(kind, h[nb - 1]) else 1
    c0 = h[0, 0]
    c1 = h[0, 1]
    c2 = h[0, 2] if three else 0.0
    for b in range(n):
        if b > 0:
            c0 = c0 + h[b, 0]
            c1 = c1 + h[b, 1]
            if three:
                c2 = c2 + h[b, 2]
        L[0, 0, b] = c0
        L[0, 1, b] = c1
        if three:
            L[0, 2, b] = c2
        if n_var == 2:
            L[1, 0, b] = c0 + m0
            L[1, 1, b] = c1 + m1
            if three:
                L[1, 2, b] = c2 + m2
    best = NEG_INF
    for v in range(n_var):
        if three:
            best = max(best, _newton_proxies(L[v, 0], L[v, 1], L[v, 2], n, counted, P0, P1, P2, l2, msl, mwl,
                                             out[v]))
        else:  # [G, H]: the count channel is G (read, as scan_feature reads it, only where counted)
            best = max(best, _newton_proxies(L[v, 0], L[v, 0], L[v, 1], n, counted, P0, P1, P2, l2, msl, mwl,
                                             out[v]))
    for v in range(n_var):
        b = near_best(out[v], n, best, tie_rtol)
        if b >= 0:
            return best, True, v, b
    return best, False, 0, 0


@numba.njit(inline="always", **JIT_NUMPY)
def _newton_proxies(l0s, l1s, hls, n, counted, P0, P1, P2, l2, msl, mwl, out):
    """Newton's proxies of candidates ``0 .. n - 1`` into ``out``; returns the best (-inf for none).

    ``l0s``, ``l1s``, ``hls`` (at least n,) float64: the candidates' left
    count (read only where ``counted``), G and H. :func:`_newton_proxy`'s
    value where the candidate is admissible (the count and weight rules of
    :func:`scan_feature`), else -inf; computed for every candidate and the rules
    as selects over contiguous rows, so that the loop vectorises.
    """
    for b in range(n):
        l0, l1, h_l = l0s[b], l1s[b], hls[b]
        h_r = P2 - h_l
        ok = (h_l >= mwl) & (h_r >= mwl) & (h_l > 0) & (h_r > 0)
        if counted:
            ok = ok & (l0 >= msl) & (P0 - l0 >= msl)
        p = _newton_proxy(l1, h_l, P1 - l1, h_r, l2)
        out[b] = p if ok else NEG_INF
    return _best_of(out, n)


@numba.njit(inline="always", **JIT_NUMPY)
def _best_of(out, n):
    """The largest of ``out[:n]`` (-inf for none)."""
    best = NEG_INF
    for b in range(n):
        best = max(best, out[b])
    return best


@numba.njit(**JIT_LEAF)
def fast_scan(h, P0, P1, P2, P3, mse, msl, mwl, tie_rtol, n_scan, L, out, bins, n_listed):
    """:func:`scan_feature`'s first pass (target -inf, no random pick) of one two- or three-class Gini histogram
    ``h`` (nb, 3 or 4) or (``mse``) squared-error one (nb, 4) without missing rows, over value bins
    ``0 .. n_scan - 1`` (the node's statistics ``P0 .. P3``; ``P3`` unused with three channels).

    ``n_listed`` >= 0: only the bins ``bins[:n_listed]`` (increasing, every
    non-empty value bin among them) are visited, a small node's present
    codes: the bins between them are empty, and an empty bin adds zeros to the
    running sums and repeats the candidate before it, so the sums,
    candidates and result are the dense pass's (a few rows' node then scans a
    few bins, not up to 255).

    Returns (best, recorded, bin, proxy, left statistics (4 scalars; the
    fourth 0 with three channels)): the best proxy and, when ``recorded``,
    the first candidate within ``tie_rtol`` of it (what the replay with the
    node's target finds when this feature holds the node's best). The same
    candidates as :func:`scan_feature` (an empty bin after the first repeats the
    candidate before it, which comes first).
    """
    nb, C = h.shape
    four = C == 4
    listed = n_listed >= 0
    n = n_listed if listed else min(nb - 1, n_scan)
    LT = L.reshape((L.shape[1], L.shape[0]))  # by channel, as _fast_feature's
    b0 = bins[0] if listed and n > 0 else 0
    s0, s1, s2 = h[b0, 0], h[b0, 1], h[b0, 2]
    s3 = h[b0, 3] if four else 0.0
    # the running sums, then the proxies in a loop of their own
    # (fast_proxies). An empty bin after the first repeats the sums, so the
    # proxy, of the bin before it, which comes first: the first near-best
    # candidate is never an empty bin (as scan_feature's, which sets them -inf)
    for j in range(n):
        if j > 0:
            b = bins[j] if listed else j
            s0, s1, s2 = s0 + h[b, 0], s1 + h[b, 1], s2 + h[b, 2]
            if four:
                s3 = s3 + h[b, 3]
        LT[0, j], LT[1, j], LT[2, j] = s0, s1, s2
        if four:
            LT[3, j] = s3
    best = fast_proxies(LT, n, P0, P1, P2, P3, msl, mwl, mse, four, out)
    j = near_best(out, n, best, tie_rtol)
    if j >= 0:
        b = bins[j] if listed else j
        return best, True, b, out[j], LT[0, j], LT[1, j], LT[2, j], LT[3, j] if four else 0.0
    return best, False, 0, 0.0, 0.0, 0.0, 0.0, 0.0


@numba.njit(inline="always", **JIT_NUMPY)
def fast_proxies(LT, n, P0, P1, P2, P3, msl, mwl, mse, four, out):
    """The proxies of candidates ``0 .. n - 1`` into ``out``; returns the best (-inf for none).

    :func:`candidate_proxies`' formula term for term: Gini (count and two classes,
    or with ``four`` three) or, with ``mse``, single-output squared error
    (count, w, w y, ...; ``P1`` the node's w, ``P2`` its w y). ``LT`` (C,
    at least n) float64: the candidates' left sums by channel (row ``c``
    channel ``c``). The rules as selects over contiguous rows: a loop the
    compiler vectorises (the same formula read from rows of an (n, C) array
    would keep the loop scalar, its loads strided).
    """
    # one loop per case, each with its flags as constants
    if mse:
        for b in range(n):
            l0, r0, sl, sr, wl, wr = fast_terms(LT[0, b], LT[1, b], LT[2, b], 0.0, P0, P1, P2, P3, True, False)
            out[b] = _select_proxy(l0, r0, sl, sr, wl, wr, msl, mwl)
    elif four:
        for b in range(n):
            l0, r0, sl, sr, wl, wr = fast_terms(LT[0, b], LT[1, b], LT[2, b], LT[3, b], P0, P1, P2, P3, False, True)
            out[b] = _select_proxy(l0, r0, sl, sr, wl, wr, msl, mwl)
    else:
        for b in range(n):
            l0, r0, sl, sr, wl, wr = fast_terms(LT[0, b], LT[1, b], LT[2, b], 0.0, P0, P1, P2, P3, False, False)
            out[b] = _select_proxy(l0, r0, sl, sr, wl, wr, msl, mwl)
    return _best_of(out, n)


@numba.njit(inline="always", **JIT_NUMPY)
def _select_proxy(l0, r0, sl, sr, wl, wr, msl, mwl):
    """:func:`checked_sum_sq_proxy` without branches (the same value: the conditions and NaN test as selects)."""
    ok = (l0 >= msl) & (r0 >= msl) & (wl >= mwl) & (wr >= mwl) & (wl > 0) & (wr > 0)
    p = sum_sq_proxy(sl, sr, safe(wl), safe(wr))
    return p if ok & (p == p) else NEG_INF


@numba.njit(inline="always", **JIT_NUMPY)
def fast_terms(c0, c1, c2, c3, P0, P1, P2, P3, mse, four):
    """The terms ``(l0, r0, sl, sr, wl, wr)`` of :func:`checked_sum_sq_proxy` for a candidate whose left sums are
    ``c0 .. c3`` (``c3`` unused without ``four``), :func:`candidate_proxies`' formula term for term: Gini (count and
    two classes, or with ``four`` three: the classes' chain of adds goes on) or, with ``mse``,
    single-output squared error (count, w, w y, ...; ``P1`` the node's w, ``P2`` its w y)."""
    if mse:
        r = P2 - c2
        return c0, P0 - c0, c2 * c2, r * r, c1, P1 - c1
    r, r2 = P1 - c1, P2 - c2
    sl, sr, wl, wr = c1 * c1 + c2 * c2, r * r + r2 * r2, c1 + c2, r + r2
    if four:
        r3 = P3 - c3
        sl, sr, wl, wr = sl + c3 * c3, sr + r3 * r3, wl + c3, wr + r3
    return c0, P0 - c0, sl, sr, wl, wr


@numba.njit(inline="always", **JIT_NUMPY)
def checked_sum_sq_proxy(l0, r0, sl, sr, wl, wr, msl, mwl):
    """Gini's / squared error's proxy (:func:`gputrees.kernels.rules.sum_sq_proxy`) of one candidate (counts
    ``l0``, ``r0``), -inf where a side is below ``msl`` / ``mwl`` or empty, or where it is NaN."""
    p = NEG_INF
    if l0 >= msl and r0 >= msl and wl >= mwl and wr >= mwl and wl > 0 and wr > 0:
        p = sum_sq_proxy(sl, sr, safe(wl), safe(wr))
        if p != p:
            p = NEG_INF
    return p


@numba.njit(inline="always", **JIT_NUMPY)
def first_at_least(out, n, target):
    """The first index of ``out[:n]`` whose proxy is ``>= target`` and above -inf, or -1."""
    for j in range(n):
        if out[j] >= target and out[j] > NEG_INF:
            return j
    return -1


@numba.njit(inline="always", **JIT_NUMPY)
def near_best(out, n, best, tie_rtol):
    """The first of ``out[:n]`` within ``tie_rtol`` of ``best`` (above -inf): :func:`first_near`'s index, or -1."""
    if best > NEG_INF:
        return first_at_least(out, n, tie_target(best, tie_rtol))
    return -1


def supported_criterion(criterion, n_channels):
    kind = criterion_code(criterion)
    if kind is None:
        return False
    summed = n_channels - 1 if kind <= MISCLASSIFICATION else getattr(criterion, "n_outputs", 1)
    return summed <= PAIRWISE_BLOCK


def has_values(bin_mapper):
    return bin_mapper.bin_values is not None and bin_mapper.is_exact is not None


def criterion_record(criterion, cons):
    """The criterion and constraints as the kernels' tuple (kind, n_outputs, l2, min_samples_leaf, min_weight_leaf)."""
    return (
        criterion_code(criterion),
        int(getattr(criterion, "n_outputs", 1)),
        float(getattr(criterion, "l2", 0.0)),
        float(cons.min_samples_leaf),
        float(cons.min_weight_leaf),
    )


def mapper_arrays(bin_mapper):
    """(thresholds, bin_values, is_exact, n_value_bins) as the kernels take them (placeholders without a mapper)."""
    f8 = np.float64
    if bin_mapper is None:
        dummy = np.zeros((1, 1), dtype=f8)
        return dummy, dummy, np.zeros(1, dtype=np.bool_), np.zeros(1, dtype=np.int64)
    return (
        np.ascontiguousarray(bin_mapper.thresholds, dtype=f8),
        np.ascontiguousarray(bin_mapper.bin_values, dtype=f8),
        np.ascontiguousarray(bin_mapper.is_exact, dtype=np.bool_),
        np.ascontiguousarray(bin_mapper.n_value_bins, dtype=np.int64),
    )


def split_record(found, proxy, feature, bin_, missing_left, left, threshold, parent, is_categorical=None,
                 cat_left=None):
    m = found.shape[0]
    return SplitRecord(
        found=found,
        proxy=proxy,
        feature=feature,
        bin=bin_,
        missing_left=missing_left,
        is_categorical=np.zeros(m, dtype=np.bool_) if is_categorical is None else is_categorical,
        cat_left=np.zeros((m, 0), dtype=np.bool_) if cat_left is None else cat_left,
        left=left,
        right=parent - left,
        threshold=threshold,
    )


def best_splits(xp, hist, parent, criterion, cons, is_categorical, feature_mask=None, bin_mapper=None,
                random_u=None, feature_ids=None, bounds=None, monotonic_cst=None, local_thresholds=True, *,
                n_threads: int = 1):
    """:func:`gputrees._splitting.find_best_splits` compiled, or None where it is not covered.

    Same arguments and result (NumPy arrays); None for criteria other than
    those of :mod:`gputrees._records`' criterion codes, very wide class /
    output sums, and categorical features with per-node feature ids or
    without a count channel (the caller then uses the generic code).
    """
    if not isinstance(hist, np.ndarray) or hist.ndim != 4:
        return None
    m, n_cols, nb, c = hist.shape
    if m == 0 or n_cols == 0 or nb < 2 or not supported_criterion(criterion, c):
        return None
    is_cat = np.ascontiguousarray(is_categorical, dtype=np.bool_)
    n_cat_pos = 0
    if np.any(is_cat):
        if feature_ids is not None or not criterion.has_count or is_cat.shape[0] != n_cols:
            return None
        n_cat_pos = category_positions(is_cat, nb, bin_mapper)
    if bounds is not None and criterion_code(criterion) not in (NEWTON, NEWTON_GH):
        return None
    if bin_mapper is not None and not has_values(bin_mapper):
        return None
    f8 = np.float64
    hist = np.ascontiguousarray(hist, dtype=f8)
    parent = np.ascontiguousarray(parent, dtype=f8)
    dummy_f = np.zeros((1, 1), dtype=f8)
    mono = bounds is not None
    direction = dummy_f
    if mono:
        cst = np.asarray(monotonic_cst, dtype=f8)
        direction = cst[feature_ids] if feature_ids is not None else np.broadcast_to(cst[None, :], (m, n_cols))
        # a writable copy (m x features): a broadcast view is read-only, for Numba another signature to compile
        direction = np.array(direction, dtype=f8, order="C")
    threads = threads_for(n_threads, m * n_cols * nb * c)
    n_blocks = min(m * n_cols, threads * BLOCKS_PER_THREAD) if threads > 1 else 1
    with Threads(threads):
        out = (scan_nodes_kernel if n_blocks > 1 else scan_nodes_kernel_serial)(
            hist,
            parent,
            criterion_record(criterion, cons),
            np.ones((1, 1), dtype=np.bool_) if feature_mask is None else np.ascontiguousarray(feature_mask, np.bool_),
            feature_mask is not None,
            dummy_f if random_u is None else np.ascontiguousarray(random_u, dtype=f8),
            random_u is not None,
            np.zeros((1, 1), dtype=np.int64) if feature_ids is None else np.ascontiguousarray(feature_ids, np.int64),
            feature_ids is not None,
            dummy_f if bounds is None else np.ascontiguousarray(bounds, dtype=f8),
            direction,
            mono,
            *mapper_arrays(bin_mapper),
            bin_mapper is not None,
            bool(local_thresholds),
            TIE_RTOL,
            n_blocks,
            is_cat,
            n_cat_pos,
        )
    found, proxy, feature, bin_, missing_left, left, threshold, split_cat, cat_left = out
    return split_record(found, proxy, feature, bin_, missing_left, left, threshold, parent, split_cat, cat_left)
