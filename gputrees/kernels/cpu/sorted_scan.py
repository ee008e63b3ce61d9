"""The sort-based split search of small nodes (Numba): no histograms.

The compiled counterpart of :func:`gputrees._sorted_split.find_best_splits_sorted`:
per node, in parallel over nodes, each drawn feature's codes are sorted
stably and the rows' channels summed in that order (the oracle's order), its
present codes are the candidates, scored by the histogram scan's proxy loops
(:mod:`gputrees.kernels.cpu.scan`), and the same tie rule picks the split.
For two- and three-class Gini and single-output squared error, nodes of more
than :data:`SMALL_SORT_ROWS` rows with uint8 codes are not sorted: each code's
rows are summed in a histogram and the present codes visited in order (the
same candidates; sums equal for integer channels, to rounding otherwise).
Extremely randomised splits sort nothing: their one candidate per feature
needs the node's lowest and highest codes, then the sum of the rows at or
below the drawn code (:func:`_random_feature`, in input order, as the oracle
sums them).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ..._records import (
    GINI,
    SQUARED_ERROR,
)
from ..rules import (
    NEG_INF,
    TIE_RTOL,
    random_pick,
    split_threshold,
    tie_target,
)
from .jit import JIT_LEAF, JIT_NUMPY, Threads, threads_for
from .memory import at, at1, put1
from .scan import (
    BLOCKS_PER_THREAD,
    candidate_proxies,
    checked_sum_sq_proxy,
    criterion_record,
    fast_proxies,
    fast_terms,
    first_at_least,
    first_near,
    has_values,
    mapper_arrays,
    near_best,
    no_split_outputs,
    scan_scratch,
    score_random_sides,
    split_record,
    supported_criterion,
)

try:  # LLVM's cttz, as Numba exposes it (an internal module: a plain loop where it is missing)
    from numba.cpython.unsafe.numbers import trailing_zeros
except ImportError:  # pragma: no cover

    @numba.njit(inline="always")
    def trailing_zeros(w):
        t = 0
        while (w & np.uint64(1)) == np.uint64(0):
            w >>= np.uint64(1)
            t += 1
        return t


# -- sort-based search of small nodes ----------------------------------------------
#: Up to this many rows a (node, feature) is sorted by ranking every key
#: against every other (n^2 compares, vectorised); above, by counting its
#: codes (about 2 nb + 2 n steps): the counting sort's two passes over the nb
#: codes cost more below it
SMALL_SORT_ROWS = 24
#: Most bins for which :func:`_fast_feature` marks a node's present codes in
#: four 64-bit words held in registers instead of sorting them (uint8 codes),
#: for nodes of more than SMALL_SORT_ROWS rows (below, sorting by ranking
#: costs no more); with more bins (uint16 codes) it sorts.
PRESENT_BINS = 256


@numba.njit(**JIT_NUMPY)
def sorted_scratch(max_rows, nb, F, C):
    """Work arrays of :func:`sorted_node` and :func:`_sorted_feature`.

    Keys, order, candidate codes (max_rows + 1), code counts (nb + 1), then
    each feature's first near-best candidate as its own pass found it
    (:func:`_sorted_feature`'s record): whether there is one (F,) bool, its
    (code, next code, whether the node has missing rows) (F, 3) int64, proxy
    (F, 2) float64 and left statistics (F, 2, C) float64 (the second of each
    pair: an extremely randomised candidate's with the missing rows sent
    left); then :func:`_fast_feature`'s code histogram (nb, C) float64
    (zeros between its calls; (1, C) above :data:`PRESENT_BINS` bins) and
    whether each feature's first pass was that one's (F,) bool.
    """
    return (np.empty(max_rows, dtype=np.int64), np.empty(max_rows, dtype=np.int64),
            np.empty(max_rows + 1, dtype=np.int64), np.empty(nb + 1, dtype=np.int64),
            np.zeros(F, dtype=np.bool_), np.empty((F, 3), dtype=np.int64), np.empty((F, 2)), np.empty((F, 2, C)),
            np.zeros((nb if nb <= PRESENT_BINS else 1, C)), np.zeros(F, dtype=np.bool_))


@numba.njit(**JIT_LEAF)
def _stable_order_n(key, n, nb, order, count):
    """``order[:n]`` = the positions of ``key[:n]`` (int64 in [0, nb)) sorted stably (ties in position order).

    What ``np.argsort(key[:n], kind="stable")`` returns, without its
    allocation and comparisons: for few keys each key's rank (the keys below
    it, and the equal ones before it) counted by compares without branches,
    which the compiler vectorises (an insertion sort's branches mispredict);
    else a counting sort over the nb codes (``count`` (at least nb,) its
    work array). Longer arrays are fine (no views made); returns nothing.
    """
    if n <= SMALL_SORT_ROWS:
        for k in range(n):
            v = key[k]
            r = 0
            for j in range(n):
                r += np.int64((key[j] < v) | ((key[j] == v) & (j < k)))
            put1(order, r, k)  # (unchecked: memory._unchecked)
        return
    for b in range(nb):
        count[b] = 0
    for k in range(n):
        count[key[k]] += 1
    # each code's first position: the running total in a register (summed
    # through the array, each step would wait on the last one's store)
    total = 0
    for b in range(nb):
        c = count[b]
        count[b] = total
        total += c
    for k in range(n):
        v = key[k]
        put1(order, at1(count, v), k)
        put1(count, v, at1(count, v) + 1)


@numba.njit(**JIT_LEAF)
def present_codes(codes, pairs, f, nb, key, order, count, out):
    """The distinct codes of feature ``f`` among a node's rows ``pairs`` (of ``codes``), increasing, in ``out``;
    returns how many. ``key``, ``order`` (at least the rows) and ``count`` (nb) are work space of
    :func:`_stable_order_n`, which sorts them."""
    n = pairs.shape[0]
    for k in range(n):
        key[k] = at(codes, at1(pairs, k), f)
    _stable_order_n(key, n, nb, order, count)
    m = 0
    for k in range(n):
        code = key[order[k]]
        if m == 0 or out[m - 1] != code:
            out[m] = code
            m += 1
    return m


@numba.njit(inline="always", **JIT_NUMPY)
def _candidates(key, order, pairs, weights, n, missing, L, cand, four):
    """Three or (``four``) four channels' candidates of a sorted (node, feature): returns their count.

    Row ``L[j]`` gets the channels summed over the rows up to the end of the
    ``j``-th run of equal non-missing codes in ``order`` (``key[order[:n]]``
    sorted), ``cand[j]`` that code. The running sums stay in registers
    (count and two classes, boosting's count, G, H, or squared error's
    count, w, w y, w y^2; through an array, which the compiler must assume
    may alias ``weights``, each addition would be a load and a store).
    Inlined: a call's overhead is a large share of a small node's search.
    """
    n_cand = 0
    s0 = s1 = s2 = s3 = 0.0
    for k in range(n):
        o = order[k]
        code = at1(key, o)
        q = at1(pairs, o)
        if k == 0:
            s0, s1, s2 = at(weights, q, 0), at(weights, q, 1), at(weights, q, 2)
            if four:
                s3 = at(weights, q, 3)
        else:
            s0, s1, s2 = s0 + at(weights, q, 0), s1 + at(weights, q, 1), s2 + at(weights, q, 2)
            if four:
                s3 = s3 + at(weights, q, 3)
        if code != missing and (k == n - 1 or at1(key, order[k + 1]) != code):
            L[n_cand, 0], L[n_cand, 1], L[n_cand, 2] = s0, s1, s2
            if four:
                L[n_cand, 3] = s3
            cand[n_cand] = code
            n_cand += 1
    return n_cand


@numba.njit(**JIT_LEAF)
def _sorted_feature(codes, rows, weights, pairs, f, P, crit, nb, target, tie_rtol, scratch, sort_scratch):
    """One (node, feature) of the sort-based search: :func:`scan_feature` over the node's sorted codes.

    ``pairs``: the node's pair indices (into ``rows`` / ``weights``) in input
    order. The codes are sorted stably (ties in input order, as the generic
    search's stable sort of (node, feature, code) keys) and the rows' channels
    summed in that order; candidates are the present codes. Returns as
    :func:`scan_feature`, plus the next code present in the node after the found
    candidate's (``nb - 1`` where none: only missing values go right); its
    left stats in ``scratch[3]``. ``sort_scratch``: :func:`sorted_scratch`.

    With ``target`` -inf and no missing code in the node, the feature's
    first candidate within ``tie_rtol`` of its own best is recorded in
    ``sort_scratch`` (what a call with that target would return), so that
    :func:`sorted_node` need not sort and sum the winning feature again.
    """
    kind, n_out, l2, msl, mwl = crit
    cum, R, miss, res, L, out = scratch
    key_all, order_all, cand_all, count, rec_ok, rec_code, rec_p, rec_left, _, _ = sort_scratch
    C = weights.shape[1]
    missing = nb - 1
    n = pairs.shape[0]
    key = key_all[:n]
    for k in range(n):
        key[k] = codes[rows[pairs[k]], f]
    order = order_all[:n]
    _stable_order_n(key, n, nb, order, count)
    cand_code = cand_all[: n + 1]
    # variant 0 candidates: the stats of the codes <= each present code (run ends)
    n_cand = 0
    if C == 3 or C == 4:
        n_cand = _candidates(key, order, pairs, weights, n, missing, L, cand_code, C == 4)
    else:
        for k in range(n):
            code = key[order[k]]
            w = weights[pairs[order[k]]]
            for c in range(C):
                cum[c] = w[c] if k == 0 else cum[c] + w[c]
            if code != missing and (k == n - 1 or key[order[k + 1]] != code):
                for c in range(C):
                    L[n_cand, c] = cum[c]
                cand_code[n_cand] = code
                n_cand += 1
    cand_code[n_cand] = missing  # the code after the last candidate
    has_missing = n > 0 and key[order[n - 1]] == missing
    # the missing values' stats: the node's minus the non-missing ones' (the last candidate's)
    for c in range(C):
        miss[c] = P[c] - (L[n_cand - 1, c] if n_cand > 0 else 0.0)
    best = NEG_INF
    for variant in range(2 if has_missing else 1):
        for j in range(n_cand):
            if variant == 1:
                for c in range(C):
                    L[j, c] = L[j, c] + miss[c]
            out[j] = 0.0
        candidate_proxies(kind, L[:n_cand], out, P, n_out, l2, msl, mwl, False, 0.0, 0.0, 0.0, R, res)
        j, p = first_near(out, n_cand, target, L, res)
        if j >= 0:
            return p, cand_code[j], variant, cand_code[j + 1]
        best = max(best, p)
    rec_ok[f] = False
    if not has_missing and best > NEG_INF and target == NEG_INF:
        # the call with this feature's own near-best target, answered from
        # the proxies at hand (``out``, ``L`` hold variant 0's)
        j, p = first_near(out, n_cand, tie_target(best, tie_rtol), L, res)
        if j >= 0:
            rec_ok[f] = True
            rec_code[f, 0], rec_code[f, 1] = cand_code[j], cand_code[j + 1]
            rec_p[f, 0] = p
            for c in range(C):
                rec_left[f, 0, c] = res[c]
    return best, -1, -1, missing


@numba.njit(inline="always", **JIT_NUMPY)
def _random_feature(codes, rows, weights, pairs, f, P, crit, u, nb, scratch):
    """One (node, feature) of the extremely randomised search, from the node's rows without sorting them.

    The candidate of the sort-based search: codes up to the last present code
    at or below ``random_pick`` of the node's lowest and highest present codes
    go left. Two passes over the rows (their lowest and highest codes; the
    channels of those at or below the pick, and of the missing ones, summed in
    input order, as the oracle sums them) where a sort would order and sum all
    of them. Returns (variants, code, next code, proxy with the missing rows
    right, proxy with them left): variants 0 (no candidate), 1 (no missing
    rows; the second proxy -inf) or 2; the two left statistics in
    ``scratch[4][:2]``. Inlined: a call costs as much as a small node's passes.
    """
    _, R, _, res, L, out = scratch
    C = weights.shape[1]
    missing = np.int64(nb - 1)
    n = pairs.shape[0]
    # without branches (a row's code is as good as random): selects the compiler vectorises
    first = missing  # the missing code is the highest: min over every code
    last = np.int64(-1)
    n_missing = 0
    for k in range(n):
        code = np.int64(at(codes, at1(rows, at1(pairs, k)), f))
        first = min(first, code)
        last = max(last, code if code != missing else np.int64(-1))
        n_missing += code == missing
    has_missing = n_missing > 0
    if last <= first:
        return 0, missing, missing, NEG_INF, NEG_INF
    pick = random_pick(first, last, u)
    below = first  # the last present code <= pick, and the next one above it
    above = last
    for k in range(n):
        code = np.int64(at(codes, at1(rows, at1(pairs, k)), f))
        below = max(below, code if code <= pick else first)
        above = min(above, code if pick < code < missing else last)
    # the sides' sums in input order; a row not on a side adds 0.0 (the same sum as skipping it)
    if 3 <= C <= 6:
        # one pass, every channel's two sums in registers (count and up to five classes, or squared error's four)
        s0 = s1 = s2 = s3 = s4 = s5 = 0.0
        m0 = m1 = m2 = m3 = m4 = m5 = 0.0
        for k in range(n):
            q = at1(pairs, k)
            code = np.int64(at(codes, at1(rows, q), f))
            a = code <= pick
            b = code == missing
            w0, w1, w2 = at(weights, q, 0), at(weights, q, 1), at(weights, q, 2)
            s0, s1, s2 = s0 + (w0 if a else 0.0), s1 + (w1 if a else 0.0), s2 + (w2 if a else 0.0)
            m0, m1, m2 = m0 + (w0 if b else 0.0), m1 + (w1 if b else 0.0), m2 + (w2 if b else 0.0)
            if C > 3:
                w3 = at(weights, q, 3)
                s3, m3 = s3 + (w3 if a else 0.0), m3 + (w3 if b else 0.0)
            if C > 4:
                w4 = at(weights, q, 4)
                s4, m4 = s4 + (w4 if a else 0.0), m4 + (w4 if b else 0.0)
            if C > 5:
                w5 = at(weights, q, 5)
                s5, m5 = s5 + (w5 if a else 0.0), m5 + (w5 if b else 0.0)
        L[0, 0], L[0, 1], L[0, 2] = s0, s1, s2
        L[1, 0], L[1, 1], L[1, 2] = s0 + m0, s1 + m1, s2 + m2
        if C > 3:
            L[0, 3], L[1, 3] = s3, s3 + m3
        if C > 4:
            L[0, 4], L[1, 4] = s4, s4 + m4
        if C > 5:
            L[0, 5], L[1, 5] = s5, s5 + m5
    else:
        # a channel at a time, its sums in registers (through ``cum`` each add would wait on a store)
        for c in range(C):
            s = 0.0
            m = 0.0
            for k in range(n):
                q = at1(pairs, k)
                code = np.int64(at(codes, at1(rows, q), f))
                w = at(weights, q, c)
                s += w if code <= pick else 0.0
                m += w if code == missing else 0.0
            L[0, c] = s
            L[1, c] = s + m
    score_random_sides(L, out, has_missing, P, crit, False, 0.0, 0.0, R, res)
    return 2 if has_missing else 1, below, above, out[0], out[1]


@numba.njit(inline="always")
def record_random(rec_p, rec_left, f, L, p0, p1):
    """Record feature ``f``'s extremely randomised candidate: its proxies with the missing rows sent right and
    left (``p0``, ``p1``) and the left statistics of each (``L[0]``, ``L[1]``)."""
    rec_p[f, 0], rec_p[f, 1] = p0, p1
    for v in range(2):
        for c in range(rec_left.shape[2]):
            rec_left[f, v, c] = L[v, c]


@numba.njit(inline="always")
def recorded_random(rec_p, rec_left, f, target, left):
    """Of feature ``f``'s recorded random candidate (:func:`record_random`), the variant a scan with ``target``
    returns, the first whose proxy reaches it: (variant, proxy), its left statistics in ``left``."""
    variant = 0 if rec_p[f, 0] >= target and rec_p[f, 0] > NEG_INF else 1
    for c in range(left.shape[0]):
        left[c] = rec_left[f, variant, c]
    return variant, rec_p[f, variant]


@numba.njit(inline="always")
def mark_code(words, b):
    """The four 64-bit words ``words`` of present codes (codes 0 .. 255) with code ``b``'s bit set, by masks
    (``bit if q == 0 else 0`` compiles to branches, which mispredict on random codes)."""
    one = np.uint64(1)
    zero = np.uint64(0)
    m0, m1, m2, m3 = words
    bit = one << np.uint64(b & 63)
    q = b >> 6
    return (m0 | (bit & (zero - np.uint64(q == 0))), m1 | (bit & (zero - np.uint64(q == 1))),
            m2 | (bit & (zero - np.uint64(q == 2))), m3 | (bit & (zero - np.uint64(q == 3))))


@numba.njit(inline="always", **JIT_NUMPY)
def fast_pass(kind, C, has_u):
    """Whether a node's search has :func:`_fast_feature` / :func:`fast_scan`: two- or three-class Gini
    (three or four channels) or single-output squared error (four), without random thresholds."""
    return not has_u and ((kind == GINI and (C == 3 or C == 4)) or (kind == SQUARED_ERROR and C == 4))


@numba.njit(**JIT_LEAF)
def _fast_feature(codes, rows, weights, pairs, f, P0, P1, P2, P3, mse, msl, mwl, nb, tie_rtol, target, key,
                  order, cand, count, hb, L, out):
    """:func:`_sorted_feature` for two- or three-class Gini or (``mse``) single-output squared error, without
    random thresholds (:func:`fast_pass`), where the node has no missing code in feature ``f``.

    The channels (count and two or three classes, or count, w, w y, w y^2)
    and the node's statistics ``P0 .. P3`` as scalars (``P3`` unused with
    three channels), the running sums, proxies (``candidate_proxies``' Gini or
    squared-error formula, term for term), best and the candidate sought in
    one function, over whole work arrays (``key``, ``order``, ``cand``
    int64, ``L`` (n + 1, C), ``out`` (n + 1,), ``count`` (nb + 1,), ``hb``
    (nb, C): :func:`sorted_scratch`'s and :func:`scan_scratch`'s) without views:
    the general pass's fixed cost, about 1,000 cycles a feature, dominates
    a forest's small nodes.

    Above ``SMALL_SORT_ROWS`` rows and up to :data:`PRESENT_BINS` bins,
    without sorting: each row's channels
    are added to its code's bin of a histogram (``hb``, zeros on entry and
    again on return) and the codes present are marked in four
    64-bit words held in registers; the present codes are then visited in
    increasing order (the words' set bits), each bin added to the running
    sums and zeroed. The candidates are the sorted pass's (the present
    codes); their sums the histogram search's (each code's rows in row
    order, then the codes in order), which equal the sorted pass's exactly
    for integer channels (counts, unweighted classes) and to rounding
    otherwise. Otherwise the codes are sorted (:func:`_stable_order_n`) and
    the rows summed in sorted order.

    ``target`` -inf: the feature's first candidate within ``tie_rtol`` of
    its best proxy (:func:`_sorted_feature`'s record); otherwise its first
    candidate whose proxy is at least ``target`` (the replay). Returns
    (has_missing, best, found, code, next code, proxy, left statistics (4
    scalars; the fourth 0 with three channels)): with ``has_missing`` the
    node has a missing code in this feature and nothing else is computed
    (the caller runs the general pass).
    """
    missing = nb - 1
    n = pairs.shape[0]
    four = weights.shape[1] == 4
    has_missing = False
    best = NEG_INF
    n_cand = 0
    if not (nb <= PRESENT_BINS and n > SMALL_SORT_ROWS):
        for k in range(n):
            key[k] = at(codes, at1(rows, pairs[k]), f)
            has_missing |= key[k] == missing
        if has_missing:  # (before the sort, which the general pass does again)
            return True, NEG_INF, False, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0
        _stable_order_n(key, n, nb, order, count)
        # few candidates: the proxies one at a time over rows of ``L`` (the
        # vectorised loop of the branch below costs more on so few rows)
        n_cand = _candidates(key, order, pairs, weights, n, missing, L, cand, four)
        for b in range(n_cand):
            out[b] = _fast_proxy(L, b, P0, P1, P2, P3, msl, mwl, mse, four)
            best = max(best, out[b])
        j = _fast_pick(out, cand, n_cand, best, target, tie_rtol, missing)
        if j >= 0:
            return False, best, True, cand[j], cand[j + 1], out[j], L[j, 0], L[j, 1], L[j, 2], L[j, 3] if four else 0.0
        return False, best, False, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0
    # ``L``'s memory by channel: each channel's sums one contiguous row, which
    # the proxies' loop reads as vectors (fast_proxies)
    LT = L.reshape((L.shape[1], L.shape[0]))
    one = np.uint64(1)
    zero = np.uint64(0)
    m0 = m1 = m2 = m3 = zero
    for k in range(n):
        p = pairs[k]
        # unchecked loads, and the bin indexed by the unsigned code
        # (memory._unchecked)
        code = at(codes, at1(rows, p), f)
        b = np.int64(code)
        has_missing |= b == missing
        hb[code, 0] += at(weights, p, 0)
        hb[code, 1] += at(weights, p, 1)
        hb[code, 2] += at(weights, p, 2)
        if four:
            hb[code, 3] += at(weights, p, 3)
        m0, m1, m2, m3 = mark_code((m0, m1, m2, m3), b)
    s0 = s1 = s2 = s3 = 0.0
    for q in range(4):
        w = m0 if q == 0 else (m1 if q == 1 else (m2 if q == 2 else m3))
        while w != zero:
            b = q * 64 + np.int64(trailing_zeros(w))
            w &= w - one
            s0, s1, s2 = s0 + hb[b, 0], s1 + hb[b, 1], s2 + hb[b, 2]
            hb[b, 0] = 0.0
            hb[b, 1] = 0.0
            hb[b, 2] = 0.0
            if four:
                s3 = s3 + hb[b, 3]
                hb[b, 3] = 0.0
            if has_missing:
                continue  # (the bins zeroed all the same)
            LT[0, n_cand], LT[1, n_cand], LT[2, n_cand] = s0, s1, s2
            if four:
                LT[3, n_cand] = s3
            cand[n_cand] = b
            n_cand += 1
    if has_missing:
        return True, NEG_INF, False, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0
    # the proxies in a loop of their own: their divisions do not wait
    # on the walk's serial chain
    best = fast_proxies(LT, n_cand, P0, P1, P2, P3, msl, mwl, mse, four, out)
    j = _fast_pick(out, cand, n_cand, best, target, tie_rtol, missing)
    if j >= 0:
        return False, best, True, cand[j], cand[j + 1], out[j], LT[0, j], LT[1, j], LT[2, j], LT[3, j] if four else 0.0
    return False, best, False, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0


@numba.njit(inline="always", **JIT_NUMPY)
def _fast_pick(out, cand, n_cand, best, target, tie_rtol, missing):
    """:func:`_fast_feature`'s candidate sought (-1 for none): with ``target`` -inf the first within
    ``tie_rtol`` of ``best``, else the first at least ``target``; ``cand[n_cand]`` set to ``missing`` (the
    code after the last candidate)."""
    cand[n_cand] = missing
    if target == NEG_INF:
        return near_best(out, n_cand, best, tie_rtol)
    return first_at_least(out, n_cand, target)


@numba.njit(inline="always", **JIT_NUMPY)
def _fast_proxy(L, b, P0, P1, P2, P3, msl, mwl, mse, four):
    """:func:`candidate_proxies`' proxy of row ``b`` of ``L`` (:func:`fast_terms`), with :func:`checked_sum_sq_proxy`'s
    branches: the loops over rows of ``L`` stay scalar, where the branches skip the divisions."""
    l0, r0, sl, sr, wl, wr = fast_terms(L[b, 0], L[b, 1], L[b, 2], L[b, 3] if four else 0.0, P0, P1, P2, P3,
                                         mse, four)
    return checked_sum_sq_proxy(l0, r0, sl, sr, wl, wr, msl, mwl)


@numba.njit(**JIT_LEAF)
def sorted_node(codes, rows, weights, pairs, P, crit, fmask, has_mask, u, has_u, nb, thresholds, bin_values,
                 is_exact, tie_rtol, scratch, sort_scratch, fbest, left):
    """The sort-based search of one node whose pairs (into ``rows`` / ``weights``) are ``pairs``.

    ``fmask`` (F,) bool / ``u`` (F,) float64: the node's drawn features and
    uniforms (read where ``has_mask`` / ``has_u``). Returns (found, proxy,
    feature, bin, missing_left, threshold) of the node's best split, its
    left statistics in ``left`` (C,); ``fbest`` (F,) is work space.
    """
    F = codes.shape[1]
    C = weights.shape[1]
    missing = nb - 1
    key_all, order_all, cand_all, count, rec_ok, rec_code, rec_p, rec_left, hb, fast_done = sort_scratch
    fast = fast_pass(crit[0], C, has_u)  # two or three classes, or squared error
    mse = crit[0] == SQUARED_ERROR
    P3 = P[3] if C == 4 else 0.0
    best = NEG_INF
    for f in range(F):
        fbest[f] = NEG_INF
        rec_ok[f] = False
        fast_done[f] = False
        if not has_mask or fmask[f]:
            general = True
            if fast:
                general, fb, ok, c0, c1, pj, l0, l1, l2, l3 = _fast_feature(
                    codes, rows, weights, pairs, f, P[0], P[1], P[2], P3, mse, crit[3], crit[4], nb, tie_rtol,
                    NEG_INF, key_all, order_all, cand_all, count, hb, scratch[4], scratch[5])
                fast_done[f] = not general
                if not general:
                    fbest[f] = fb
                    if ok:
                        rec_ok[f] = True
                        rec_code[f, 0], rec_code[f, 1] = c0, c1
                        rec_p[f, 0] = pj
                        rec_left[f, 0, 0], rec_left[f, 0, 1], rec_left[f, 0, 2] = l0, l1, l2
                        if C == 4:
                            rec_left[f, 0, 3] = l3
            if has_u:
                # both variants recorded: the second loop below reads them
                variants, c0, c1, p0, p1 = _random_feature(codes, rows, weights, pairs, f, P, crit, u[f], nb,
                                                           scratch)
                fbest[f] = max(p0, p1)
                rec_code[f, 0], rec_code[f, 1], rec_code[f, 2] = c0, c1, variants == 2
                record_random(rec_p, rec_left, f, scratch[4], p0, p1)
            elif general:
                fbest[f] = _sorted_feature(codes, rows, weights, pairs, f, P, crit, nb, NEG_INF, tie_rtol, scratch,
                                           sort_scratch)[0]
        best = max(best, fbest[f])
    target = tie_target(best, tie_rtol)
    for f in range(F):
        if not (fbest[f] > NEG_INF and fbest[f] >= target):
            continue
        if has_u:
            variant, p = recorded_random(rec_p, rec_left, f, target, left)
            code, nxt = rec_code[f, 0], rec_code[f, 1]
            # no missing values in the node: NaN goes to the child with more rows
            missing_left = variant == 1 if rec_code[f, 2] else left[0] > P[0] - left[0]
            threshold = split_threshold(f, code, nxt, True, thresholds, bin_values, is_exact)
            return True, p, f, code, missing_left, threshold
        if rec_ok[f] and fbest[f] == best:
            # the best feature is the first near-best one: its own target is
            # the node's, and its pass recorded what the replay would find
            # (so no second pass over the feature)
            p, code, variant, nxt = rec_p[f, 0], rec_code[f, 0], 0, rec_code[f, 1]
            for c in range(C):
                left[c] = rec_left[f, 0, c]
            missing_left = left[0] > P[0] - left[0]  # no missing code in the node (recorded only then)
            threshold = split_threshold(f, code, nxt, nxt != missing, thresholds, bin_values, is_exact)
            return True, p, f, code, missing_left, threshold
        if fast_done[f]:
            # the fast pass again with the node's target (the same sums as
            # its first pass; no missing code in the node)
            _, _, ok, code, nxt, p, l0, l1, l2, l3 = _fast_feature(
                codes, rows, weights, pairs, f, P[0], P[1], P[2], P3, mse, crit[3], crit[4], nb, tie_rtol,
                target, key_all, order_all, cand_all, count, hb, scratch[4], scratch[5])
            if not ok:
                continue
            left[0], left[1], left[2] = l0, l1, l2
            if C == 4:
                left[3] = l3
            missing_left = left[0] > P[0] - left[0]
            threshold = split_threshold(f, code, nxt, nxt != missing, thresholds, bin_values, is_exact)
            return True, p, f, code, missing_left, threshold
        p, code, variant, nxt = _sorted_feature(codes, rows, weights, pairs, f, P, crit, nb, target, tie_rtol,
                                                scratch, sort_scratch)
        if code < 0:
            continue
        for c in range(C):
            left[c] = scratch[3][c]
        node_has_missing = False
        for k in range(pairs.shape[0]):
            if codes[rows[pairs[k]], f] == missing:
                node_has_missing = True
        if node_has_missing:
            missing_left = variant == 1
        else:  # no missing values in the node: NaN goes to the child with more rows
            missing_left = left[0] > P[0] - left[0]
        threshold = split_threshold(f, code, nxt, nxt != missing, thresholds, bin_values, is_exact)
        return True, p, f, code, missing_left, threshold
    return False, NEG_INF, 0, 0, False, np.inf


@numba.njit(parallel=True, **JIT_NUMPY)
def _sorted_splits(codes, rows, weights, node_pairs, node_start, parent, crit, fmask, has_mask, u, has_u, nb,
                   thresholds, bin_values, is_exact, tie_rtol, n_blocks, max_rows):
    m, C = parent.shape
    F = codes.shape[1]
    found, proxy, feature, bin_, missing_left, left, threshold = no_split_outputs(m, C, np.inf)
    per = (m + n_blocks - 1) // n_blocks
    for blk in prange(n_blocks):
        scratch = scan_scratch(max_rows + 1, C)
        sort_scratch = sorted_scratch(max_rows, nb, F, C)
        fbest = np.empty(F)
        for i in range(blk * per, min(m, (blk + 1) * per)):
            pairs = node_pairs[node_start[i]:node_start[i + 1]]
            fi, p, f, code, ml, thr = sorted_node(
                codes, rows, weights, pairs, parent[i], crit, fmask[i if has_mask else 0], has_mask,
                u[i if has_u else 0], has_u, nb, thresholds, bin_values, is_exact, tie_rtol, scratch,
                sort_scratch, fbest, left[i])
            if fi:  # (without a split the node's row of ``left`` stays zeros: sorted_node writes it only with one)
                found[i] = True
                proxy[i] = p
                feature[i] = f
                bin_[i] = code
                missing_left[i] = ml
                threshold[i] = thr
    return found, proxy, feature, bin_, missing_left, left, threshold


#: Elementary updates counted per (pair, feature) of a sort-based search when
#: choosing its threads (:func:`gputrees.kernels.cpu.jit.threads_for`): a
#: pair's code is read, sorted or histogrammed and scanned, several updates
#: each.
UPDATES_PER_CODE = 16


def node_tasks(slot, m, n_features, n_threads):
    """The pairs of each of m nodes and the tasks over nodes of a sort-based search.

    Returns (order, start, threads, n_blocks): node ``i``'s pairs are
    ``order[start[i] : start[i + 1]]`` (in input order).
    """
    slot = np.asarray(slot, dtype=np.int64)
    order = np.argsort(slot, kind="stable")
    start = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(slot, minlength=m), out=start[1:])
    threads = threads_for(n_threads, int(slot.shape[0]) * n_features * UPDATES_PER_CODE)
    n_blocks = min(m, threads * BLOCKS_PER_THREAD) if threads > 1 else 1
    return order, start, threads, n_blocks


def sorted_splits(xp, codes, rows, slot, weights, parent, criterion, cons, bin_mapper, max_rows, kernels,
                  feature_mask=None, random_u=None, *, n_threads: int = 1):
    """:func:`gputrees._sorted_split.find_best_splits_sorted` compiled, or None where it is not covered.

    Same arguments and result, per node (in parallel over nodes): each drawn
    feature's codes sorted stably, the rows' channels summed in that order,
    the present codes scored as candidates, then the tie rule. The fields
    ``bin``, ``missing_left`` and ``threshold`` of nodes without a split are
    unspecified (here 0, False, inf). None for criteria other than those of
    :mod:`gputrees._records`' criterion codes and >128-term sums.
    """
    m = int(parent.shape[0])
    if m == 0 or not supported_criterion(criterion, int(weights.shape[1])) or not has_values(bin_mapper):
        return None
    f8 = np.float64
    node_pairs, node_start, threads, n_blocks = node_tasks(slot, m, int(codes.shape[1]), n_threads)
    with Threads(threads):
        out = _sorted_splits(
            codes,
            np.asarray(rows, dtype=np.int64),
            np.ascontiguousarray(weights, dtype=f8),
            node_pairs,
            node_start,
            np.ascontiguousarray(parent, dtype=f8),
            criterion_record(criterion, cons),
            np.ones((1, 1), dtype=np.bool_) if feature_mask is None else np.ascontiguousarray(feature_mask, np.bool_),
            feature_mask is not None,
            np.zeros((1, 1), dtype=f8) if random_u is None else np.ascontiguousarray(random_u, dtype=f8),
            random_u is not None,
            int(bin_mapper.n_bins),
            *mapper_arrays(bin_mapper)[:3],
            TIE_RTOL,
            n_blocks,
            max(int(np.diff(node_start).max()), 1),  # scratch rows: the largest node's (not trusting max_rows)
        )
    return split_record(*out, parent)
