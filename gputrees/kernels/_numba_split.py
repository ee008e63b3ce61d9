"""Compiled split scan (Numba): the numerical split search of a batch of nodes.

The compiled twin of :func:`gputrees._splitting.find_best_splits` for
numerical features, which it equals (the generic array-API code is the
reference): same candidates, same proxies computed with the same formulas in
the same operation order, same masks, same tie rule and tolerance, same
thresholds. Instead of a dozen array passes over every (node, feature, bin)
it makes one:

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

Results do not depend on the number of threads. Covered: every criterion of
:mod:`gputrees._criteria` (matched by exact type), ``min_samples_leaf`` /
``min_weight_leaf``, ``feature_mask``, ``random_u`` (extremely randomised
candidates), ``feature_ids`` (histograms of the drawn features only),
monotonic bounds (Newton), both threshold rules. Batches with categorical
features, and the rare criteria whose channel sums would need NumPy's
pairwise summation beyond one block (more than 128 classes or outputs), are
left to the generic code: :func:`best_splits` returns None for them.

:func:`sorted_splits` is the compiled twin of
:func:`gputrees._sorted_split.find_best_splits_sorted` (small nodes, no
histograms): per node, in parallel over nodes, each drawn feature's codes are
sorted stably and the rows' channels summed in that order (the generic
search's order), its present codes are the candidates, scored by the same
proxy loops, and the same tie rule picks the split. For two- and three-class
Gini and single-output squared error, nodes of more than
``SMALL_SORT_ROWS`` rows with uint8 codes are not sorted: each code's
rows are summed in a histogram and the present codes visited in order (the
same candidates; sums equal for integer channels, to rounding otherwise).

Like the other Numba kernels, the functions are compiled on their first call
(about 13 s and 8 s for the two searches on the shared 2-core development
machine; Numba-level inlining of the criterion helpers multiplied that by
ten) and cached on disk; this module is imported only with the Numba kernel
set.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from .._criteria import (
    _LOG2,
    _UNROLL_CHANNELS,
    POISSON_EPSILON,
    Entropy,
    FriedmanMSE,
    Gini,
    Misclassification,
    Newton,
    NewtonGH,
    Poisson,
    SquaredError,
)
from .._splitting import TIE_RTOL, SplitRecord
from ._numba import _JIT, _at, _at1, _put1, _threads_for, _Threads, serial_twin

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

__all__ = ["best_splits", "sorted_splits", "CRITERION_KINDS"]

#: Criterion class -> kind code of the compiled proxies (exact types: a
#: subclass may change the formulas, and then uses the generic code).
CRITERION_KINDS = {
    Gini: 0,
    Entropy: 1,
    Misclassification: 2,
    SquaredError: 3,
    FriedmanMSE: 4,
    Poisson: 5,
    Newton: 6,
    NewtonGH: 7,
}
_NEWTON = 6
_GINI = CRITERION_KINDS[Gini]
_SQUARED_ERROR = CRITERION_KINDS[SquaredError]
#: Newton over [G, H] histograms, without the row count (no count tests)
_NEWTON_GH = 7
#: NumPy's pairwise summation adds up to this many terms in one block of
#: eight partial sums (``PW_BLOCKSIZE``); longer sums recurse, not reproduced.
_PW_BLOCK = 128
#: Blocks of (node, feature) tasks per thread (balances uneven features).
_BLOCKS_PER_THREAD = 4
_NEG_INF = -np.inf
#: NumPy's float semantics (a division by zero gives inf / NaN, as in the
#: generic code) instead of Python's ZeroDivisionError checks.
_JIT_SPLIT = dict(_JIT, error_model="numpy")
#: The functions below the kernels' parallel loops that neither allocate nor
#: return an array: compiled without the runtime's reference counts (Numba's
#: ``_nrt`` option, where this Numba has it). With them, every array argument
#: and view costs an atomic increment and a decrement per call (a counter the
#: threads share where the array is shared): a 2-row node's search of one
#: feature took 183 ns, 75 ns without. Such a function must not return an
#: array nor keep one an NRT function returns (its count would go wrong).
try:
    from numba.core.cpu import CPUTargetOptions

    _JIT_LEAF = dict(_JIT_SPLIT, _nrt=False) if hasattr(CPUTargetOptions, "_nrt") else _JIT_SPLIT
except ImportError:  # (an internal module of Numba's)
    _JIT_LEAF = _JIT_SPLIT


# -- sums in NumPy's order ---------------------------------------------------------
@numba.njit(inline="always")
def _term(a, i, square):
    v = a[i]
    return v * v if square else v


@numba.njit(**_JIT_LEAF)
def _npsum(a, start, n, square):
    """``numpy.sum`` of ``a[start:start + n]`` (of its squares): pairwise, n <= 128."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += _term(a, start + i, square)
        return res
    r0, r1 = _term(a, start, square), _term(a, start + 1, square)
    r2, r3 = _term(a, start + 2, square), _term(a, start + 3, square)
    r4, r5 = _term(a, start + 4, square), _term(a, start + 5, square)
    r6, r7 = _term(a, start + 6, square), _term(a, start + 7, square)
    i = 8
    while i < n - (n % 8):
        j = start + i
        r0 += _term(a, j, square)
        r1 += _term(a, j + 1, square)
        r2 += _term(a, j + 2, square)
        r3 += _term(a, j + 3, square)
        r4 += _term(a, j + 4, square)
        r5 += _term(a, j + 5, square)
        r6 += _term(a, j + 6, square)
        r7 += _term(a, j + 7, square)
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += _term(a, start + i, square)
        i += 1
    return 0.0 + res


@numba.njit(**_JIT_LEAF)
def _chsum(a, start, n, square):
    """:func:`gputrees._criteria._channel_sum`: a chain of adds up to 8 terms, else ``numpy.sum``."""
    if n > _UNROLL_CHANNELS:
        return _npsum(a, start, n, square)
    res = _term(a, start, square)
    for i in range(1, n):
        res = res + _term(a, start + i, square)
    return res


# -- criteria (same formulas, same order as gputrees._criteria) ---------------------
@numba.njit(inline="always")
def _newton_g(kind):
    """The channel of G in Newton statistics (H follows): 1 after the count, 0 over [G, H] (``Newton._G``)."""
    return 1 if kind == _NEWTON else 0


@numba.njit(**_JIT_LEAF)
def _weight(kind, s):
    if kind <= 2:
        return _chsum(s, 1, s.shape[0] - 1, False)
    if kind <= 5 or kind == _NEWTON_GH:
        return s[1]
    return s[2]


@numba.njit(**_JIT_LEAF)
def _safe(w):
    return w if w > 0 else 1.0


@numba.njit(**_JIT_LEAF)
def _class_impurity(kind, s, w, tmp):
    """Entropy (kind 1) or misclassification (kind 2) impurity of ``s``."""
    k = s.shape[0] - 1
    ws = _safe(w)
    if kind == 1:
        for j in range(k):
            p = s[1 + j] / ws
            tmp[j] = p * (math.log(p if p > 0 else 1.0) / _LOG2)
        return -_npsum(tmp, 0, k, False)
    best = s[1] / ws
    for j in range(1, k):
        p = s[1 + j] / ws
        if p > best:
            best = p
    return 1.0 - best


@numba.njit(**_JIT_LEAF)
def _poisson_term(s, ws, n_out, tmp):
    for j in range(n_out):
        v = s[2 + j]
        v = v if v > POISSON_EPSILON else 1.0
        tmp[j] = v * math.log(v / ws)
    return _npsum(tmp, 0, n_out, False)


@numba.njit(**_JIT_LEAF)
def _proxy(kind, L, R, wl, wr, n_out, l2, tmp):
    if kind == 0:  # Gini
        k = L.shape[0] - 1
        return _chsum(L, 1, k, True) / _safe(wl) + _chsum(R, 1, k, True) / _safe(wr)
    if kind <= 2:  # Entropy, Misclassification: -(w_r i_r) - w_l i_l
        return -(wr * _class_impurity(kind, R, wr, tmp)) - wl * _class_impurity(kind, L, wl, tmp)
    if kind == 3:  # squared error
        return _chsum(L, 2, n_out, True) / _safe(wl) + _chsum(R, 2, n_out, True) / _safe(wr)
    if kind == 4:  # Friedman
        a, b = _safe(wl), _safe(wr)
        diff = b * _npsum(L, 2, n_out, False) - a * _npsum(R, 2, n_out, False)
        return diff * diff / (a * b)
    if kind == 5:  # Poisson
        for j in range(n_out):
            if not (L[2 + j] > POISSON_EPSILON and R[2 + j] > POISSON_EPSILON):
                return _NEG_INF
        return _poisson_term(L, _safe(wl), n_out, tmp) + _poisson_term(R, _safe(wr), n_out, tmp)
    gi = _newton_g(kind)
    dl, dr = L[gi + 1] + l2, R[gi + 1] + l2
    dl = dl if dl > 0 else 1.0
    dr = dr if dr > 0 else 1.0
    return L[gi] * L[gi] / dl + R[gi] * R[gi] / dr


@numba.njit(**_JIT_LEAF)
def _bounded(g, h, l2, lo, up):
    """Newton, gradient and hessian sums ``g``, ``h``: the clipped leaf value and the score at it (``gain_at``)."""
    d = h + l2
    d = d if d > 0 else 1.0
    v = -g / d
    v = max(v, lo)
    v = min(v, up)
    return v, -(2.0 * g * v + (h + l2) * v * v)


@numba.njit(**_JIT_LEAF)
def _score(kind, L, R, P, n_out, l2, msl, mwl, mono, lo, up, direction, tmp):
    """Proxy of the candidate with left stats ``L`` (``-inf`` where invalid); fills ``R``."""
    for c in range(L.shape[0]):
        R[c] = P[c] - L[c]
    if kind != _NEWTON_GH and not (L[0] >= msl and R[0] >= msl):
        return _NEG_INF
    wl = _weight(kind, L)
    wr = _weight(kind, R)
    if not (wl >= mwl and wr >= mwl and wl > 0 and wr > 0):
        return _NEG_INF
    if mono:
        gi = _newton_g(kind)
        vl, gl = _bounded(L[gi], L[gi + 1], l2, lo, up)
        vr, gr = _bounded(R[gi], R[gi + 1], l2, lo, up)
        p = gl + gr
        if not (direction * (vr - vl) >= 0):
            return _NEG_INF
    else:
        p = _proxy(kind, L, R, wl, wr, n_out, l2, tmp)
    if p != p:
        return _NEG_INF
    return p


@numba.njit(**_JIT_LEAF)
def _has_rows(kind, s):
    """Whether a bin with statistics ``s`` holds rows: its count, or (Newton over [G, H]) any non-zero channel."""
    if kind != _NEWTON_GH:
        return s[0] > 0
    for c in range(s.shape[0]):
        if s[c] != 0:
            return True
    return False


@numba.njit(**_JIT_LEAF)
def _random_pick(h, nb, u):
    """:func:`gputrees._splitting._random_bins` for one (node, feature): the bin, or -1."""
    lo = 0
    while lo < nb - 1 and not (h[lo, 0] > 0):
        lo += 1
    if lo == nb - 1:
        lo = 0
    back = 0
    while back < nb - 1 and not (h[nb - 2 - back, 0] > 0):
        back += 1
    if back == nb - 1:
        back = 0
    hi = (nb - 2) - back
    span = hi - lo
    if span <= 0:
        return -1
    pick = lo + np.int64(math.floor(u * np.float64(span)))
    return min(pick, hi - 1)


@numba.njit(**_JIT_LEAF)
def _proxies(kind, L, out, P, n_out, l2, msl, mwl, mono, lo, up, direction, R, tmp):
    """``_score`` of every candidate row of ``L`` whose ``out`` is not already ``-inf`` (skipped).

    Newton (with or without monotonic bounds), Gini, squared error, and
    entropy / misclassification / Friedman / Poisson with fewer than 8
    classes or outputs have their own loops; the rest scores row by row.
    """
    n, C = L.shape
    P0 = P[0]
    if kind == _NEWTON or kind == _NEWTON_GH:
        gi = _newton_g(kind)
        counted = kind == _NEWTON
        P1, P2 = P[gi], P[gi + 1]
        for b in range(n):
            if out[b] == _NEG_INF:
                continue
            l0, l1, h_l = L[b, 0], L[b, gi], L[b, gi + 1]
            r0, r1, h_r = P0 - l0, P1 - l1, P2 - h_l
            p = _NEG_INF
            if (not counted or (l0 >= msl and r0 >= msl)) and h_l >= mwl and h_r >= mwl and h_l > 0 and h_r > 0:
                if mono:
                    vl, gl = _bounded(l1, h_l, l2, lo, up)
                    vr, gr = _bounded(r1, h_r, l2, lo, up)
                    p = gl + gr if direction * (vr - vl) >= 0 else _NEG_INF
                    if p != p:
                        p = _NEG_INF
                else:
                    p = _newton_proxy(l1, h_l, r1, h_r, l2)
            out[b] = p
        return
    first = 1 if kind == 0 else 2  # Gini: classes 1.., squared error: sums 2..
    n_sum = C - 1 if kind == 0 else n_out
    if kind == 0 or kind == 3:
        for b in range(n):
            if out[b] == _NEG_INF:
                continue
            if n_sum <= _UNROLL_CHANNELS:  # _channel_sum's chain of adds
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
                sl, sr = _npsum(tmp, first, n_sum, True), _npsum(R, first, n_sum, True)
                wl, wr = _npsum(tmp, first, n_sum, False), _npsum(R, first, n_sum, False)
            if kind == 3:
                wl, wr = L[b, 1], P[1] - L[b, 1]
            out[b] = _sum_sq_proxy(L[b, 0], P0 - L[b, 0], sl, sr, wl, wr, msl, mwl)
        return
    if (kind == 1 or kind == 2) and C - 1 < 8:  # entropy, misclassification: sums of fewer than 8 terms
        for b in range(n):
            if out[b] == _NEG_INF:
                continue
            wl, wr = L[b, 1], P[1] - L[b, 1]
            for c in range(2, C):
                wl = wl + L[b, c]
                wr = wr + (P[c] - L[b, c])
            l0 = L[b, 0]
            r0 = P0 - l0
            p = _NEG_INF
            if l0 >= msl and r0 >= msl and wl >= mwl and wr >= mwl and wl > 0 and wr > 0:
                p = -(wr * _row_impurity(kind, L, b, P, True, wr)) - wl * _row_impurity(kind, L, b, P, False, wl)
                if p != p:
                    p = _NEG_INF
            out[b] = p
        return
    if (kind == 4 or kind == 5) and n_out < 8:  # Friedman, Poisson: sums of fewer than 8 outputs
        for b in range(n):
            if out[b] == _NEG_INF:
                continue
            wl, wr = L[b, 1], P[1] - L[b, 1]
            l0 = L[b, 0]
            r0 = P0 - l0
            p = _NEG_INF
            if l0 >= msl and r0 >= msl and wl >= mwl and wr >= mwl and wl > 0 and wr > 0:
                p = _row_regression(kind, L, b, P, _safe(wl), _safe(wr), n_out)
                if p != p:
                    p = _NEG_INF
            out[b] = p
        return
    for b in range(n):
        if out[b] != _NEG_INF:
            out[b] = _score(kind, L[b], R, P, n_out, l2, msl, mwl, mono, lo, up, direction, tmp)


@numba.njit(**_JIT_LEAF)
def _row_regression(kind, L, b, P, a, c, n_out):
    """Friedman (kind 4) or Poisson (kind 5) proxy of row ``b`` of ``L`` (safe weights ``a``, ``c``),
    fewer than 8 outputs: :func:`_proxy` without the row copies."""
    sl, sr = 0.0, 0.0
    for j in range(n_out):
        vl = L[b, 2 + j]
        vr = P[2 + j] - vl
        if kind == 4:
            sl += vl
            sr += vr
        else:
            if not (vl > POISSON_EPSILON and vr > POISSON_EPSILON):
                return _NEG_INF
            sl += vl * math.log(vl / a)
            sr += vr * math.log(vr / c)
    if kind == 5:
        return sl + sr
    diff = c * sl - a * sr
    return diff * diff / (a * c)


@numba.njit(**_JIT_LEAF)
def _row_impurity(kind, L, b, P, right, w):
    """Entropy (kind 1) or misclassification (kind 2) of row ``b`` of ``L`` (``P - L[b]`` with ``right``),
    fewer than 8 classes: :func:`_class_impurity` without the row copy."""
    ws = _safe(w)
    acc = 0.0 if kind == 1 else _NEG_INF
    for c in range(1, L.shape[1]):
        p = ((P[c] - L[b, c]) if right else L[b, c]) / ws
        if kind == 1:
            acc += p * (math.log(p if p > 0 else 1.0) / _LOG2)
        elif p > acc:
            acc = p
    return -acc if kind == 1 else 1.0 - acc


@numba.njit(**_JIT_LEAF)
def _first_near(out, n, target, L, res):
    """Target -inf: (-1, the best of ``out[:n]``). Otherwise the first index whose proxy is
    ``>= target`` (and above -inf) and that proxy, its row of ``L`` copied to ``res``; (-1, -inf) if none."""
    best = _NEG_INF
    for j in range(n):
        p = out[j]
        if target > _NEG_INF:
            if p >= target and p > _NEG_INF:
                for c in range(L.shape[1]):
                    res[c] = L[j, c]
                return j, p
        elif p > best:
            best = p
    return -1, best


@numba.njit(**_JIT_LEAF)
def _scan(h, P, crit, mono, lo, up, direction, pick, target, scratch, n_scan):
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
    best = _NEG_INF
    for variant in range(2 if _has_rows(kind, h[nb - 1]) else 1):
        for c in range(C):
            cum[c] = h[0, c]
        last = n - 1 if pick < 0 else pick
        for b in range(n):
            if b > last:
                out[b] = _NEG_INF
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
            out[b] = _NEG_INF if skip else 0.0
            if not skip:
                for c in range(C):
                    L[b, c] = cum[c] + h[nb - 1, c] if variant == 1 else cum[c]
        _proxies(kind, L[:n], out, P, n_out, l2, msl, mwl, mono, lo, up, direction, R, tmp)
        b, p = _first_near(out, n, target, L, res)
        if b >= 0:
            return p, b, variant
        best = max(best, p)
    return best, -1, -1


@numba.njit(**_JIT_LEAF)
def _feature_scan(hist, parent, i, f, crit, u, has_u, bounds, direction, mono, target, scratch, n_scan):
    """:func:`_scan` of feature ``f`` of node ``i`` (its random candidate with ``has_u``) over ``n_scan`` bins."""
    pick = -1
    if has_u:
        pick = _random_pick(hist[i, f], hist.shape[2], u[i, f])
        if pick < 0:
            return _NEG_INF, -1, -1
    d = direction[i, f] if mono else 0.0
    lo, up = (bounds[i, 0], bounds[i, 1]) if mono else (0.0, 0.0)
    return _scan(hist[i, f], parent[i], crit, mono, lo, up, d, pick, target, scratch, n_scan)


@numba.njit(**_JIT_LEAF)
def _value_bins(i, f, nb, fids, has_fids, n_value_bins, has_mapper):
    """How many value bins column ``f`` of node ``i`` can fill: its feature's ``n_value_bins``
    (all ``nb - 1`` without a mapper). A feature with few distinct values
    (a month, a category coded as a number) is scanned over those, not 255."""
    if not has_mapper:
        return nb - 1
    feat = fids[i, f] if has_fids else f
    return min(nb - 1, n_value_bins[max(feat, 0)])


@numba.njit(**_JIT_SPLIT)
def _block_scratch(n_blocks, nb, C):
    """A scan's work space (cum, R, tmp, res (C,), L (nb, C), out (nb,)) for each of ``n_blocks`` blocks.

    Six arrays with a leading block axis: block ``k``'s work space is their
    ``k``-th rows.
    """
    return (np.empty((n_blocks, C)), np.empty((n_blocks, C)), np.empty((n_blocks, C)), np.empty((n_blocks, C)),
            np.empty((n_blocks, nb, C)), np.empty((n_blocks, nb)))


@numba.njit(**_JIT_SPLIT)
def _scratch(nb, C):
    """One scan's work space: :func:`_block_scratch` of a single block."""
    cum, r, tmp, res, left, out = _block_scratch(1, nb, C)
    return cum[0], r[0], tmp[0], res[0], left[0], out[0]


@numba.njit(**_JIT_SPLIT)
def _outputs(m, C, threshold):
    """The record's arrays (found, proxy, feature, bin, missing_left, left, threshold) as for no split."""
    return (np.zeros(m, dtype=np.bool_), np.full(m, _NEG_INF), np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64),
            np.zeros(m, dtype=np.bool_), np.zeros((m, C)), np.full(m, threshold))


@numba.njit(parallel=True, **_JIT_SPLIT)
def _best_splits(hist, parent, crit, fmask, has_mask, u, has_u, fids, has_fids, bounds, direction, mono,
                 thresholds, bin_values, is_exact, n_value_bins, has_mapper, local, tie_rtol, n_blocks):
    m, F, nb, C = hist.shape
    fmax = np.full(m * F, _NEG_INF)
    found, proxy, feature, bin_, missing_left, left, threshold = _outputs(m, C, np.nan)
    # Newton without random candidates or bounds (boosting's trees): phase 0
    # scans each (node, feature) in one pass (_newton_scan) and records its
    # first near-best candidate, phase 1 takes the record of a node's first
    # near-best feature where that feature holds the node's best proxy
    # (then its own target is the node's), instead of scanning it again
    fused = (crit[0] == _NEWTON or crit[0] == _NEWTON_GH) and not has_u and not mono
    n_rec = m * F if fused else 1
    rec_ok = np.zeros(n_rec, dtype=np.bool_)
    rec_var = np.zeros(n_rec, dtype=np.int64)
    rec_bin = np.zeros(n_rec, dtype=np.int64)
    rec_p = np.zeros(n_rec)
    rec_left = np.zeros((n_rec, C))
    # each block's work space, made once for both phases (eight arrays made
    # in each block of each phase were most of a Bank marketing boosting
    # round's allocations: 885 -> 425 a round without them)
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
                i, f0, f1, target = item // F, item % F, item % F + 1, _NEG_INF
                best = _NEG_INF
                if phase == 1:
                    i, f0, f1 = item, 0, F
                    for f in range(F):
                        best = max(best, fmax[i * F + f])
                    target = best - tie_rtol * abs(best)
                col, pos, variant = 0, 0, 0
                for f in range(f0, f1):
                    if phase == 0 and has_mask and not fmask[i, f]:
                        continue
                    if phase == 1 and not (fmax[i * F + f] > _NEG_INF and fmax[i * F + f] >= target):
                        continue
                    n_scan = _value_bins(i, f, nb, fids, has_fids, n_value_bins, has_mapper)
                    if fused and phase == 0:
                        fmax[item], ok, v, b = _newton_scan(hist[i, f], parent[i], crit[0], crit[2], crit[3],
                                                            crit[4], n_scan, tie_rtol, fL, fout)
                        if ok:
                            rec_ok[item], rec_var[item], rec_bin[item], rec_p[item] = True, v, b, fout[v, b]
                            for c in range(C):
                                rec_left[item, c] = fL[v, c, b]
                        continue
                    k = i * F + f
                    if fused and rec_ok[k] and fmax[k] == best:
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
                    _finish(hist, parent, i, col, pos, variant, found[i], scratch[3], fids, has_fids, thresholds,
                            bin_values, is_exact, n_value_bins, has_mapper, local,
                            (feature, bin_, missing_left, left, threshold), crit[0])
    return found, proxy, feature, bin_, missing_left, left, threshold


_best_splits_serial = serial_twin(_best_splits)


@numba.njit(**_JIT_LEAF)
def _finish(hist, parent, i, col, pos, variant, found, L, fids, has_fids, thresholds, bin_values, is_exact,
            n_value_bins, has_mapper, local, out, kind):
    """The record of node ``i`` from its winning (column, bin, variant) and left stats ``L``."""
    feature, bin_, missing_left, left, threshold = out
    nb = hist.shape[2]
    for c in range(hist.shape[3]):
        # not found: feature 0's first candidate, as the generic code gives
        left[i, c] = L[c] if found else hist[i, 0, 0, c]
    feat = fids[i, col] if has_fids else col
    feature[i] = feat
    bin_[i] = pos
    if _has_rows(kind, hist[i, col, nb - 1]):
        missing_left[i] = variant == 1
    elif kind != _NEWTON_GH:  # no missing values in the node: NaN goes to the child with more rows
        missing_left[i] = left[i, 0] > parent[i, 0] - left[i, 0]
    # (Newton over [G, H]: no counts; False, the grower decides from the routed rows)
    if has_mapper:
        threshold[i] = _threshold(hist[i, col], nb, feat, pos, thresholds, bin_values, is_exact, n_value_bins, local)


@numba.njit(**_JIT_LEAF)
def _threshold(h, nb, feat, pos, thresholds, bin_values, is_exact, n_value_bins, local):
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
    return _split_threshold(feat, pos, nxt, has_next, thresholds, bin_values, is_exact)


@numba.njit(**_JIT_LEAF)
def _split_threshold(feat, pos, nxt, has_next, thresholds, bin_values, is_exact):
    """:func:`gputrees._splitting.split_thresholds` for one split."""
    if not has_next:
        return np.inf
    f = max(feat, 0)
    width = thresholds.shape[1]
    p = min(max(pos, 0), width - 1)
    nxt = min(max(nxt, 0), width - 1)
    if not is_exact[feat]:
        return thresholds[f, p]
    lo = bin_values[f, p]
    hi = bin_values[f, nxt]
    mid = lo / 2.0 + hi / 2.0
    return lo if mid == hi else mid


# -- sort-based search of small nodes ----------------------------------------------
#: Up to this many rows a (node, feature) is sorted by ranking every key
#: against every other (n^2 compares, vectorised); above, by counting its
#: codes (about 2 nb + 2 n steps): the counting sort's two passes over the nb
#: codes cost more below it
SMALL_SORT_ROWS = 24
#: Most bins for which :func:`_fast_feature` marks a node's present codes in
#: four 64-bit words held in registers instead of sorting them (uint8 codes),
#: for nodes of more than SMALL_SORT_ROWS rows (below, the insertion sort
#: that the ranking replaced was as fast or faster: 3 rows, five features,
#: 379 -> 394-457 ns a node);
#: with more bins (uint16 codes) it sorts.
PRESENT_BINS = 256


@numba.njit(**_JIT_SPLIT)
def _sort_scratch(max_rows, nb, F, C):
    """Work arrays of :func:`_sorted_node` and :func:`_sorted_feature`.

    Keys, order, candidate codes (max_rows + 1), code counts (nb + 1), then
    each feature's first near-best candidate as its own pass found it
    (:func:`_sorted_feature`'s record): whether there is one (F,) bool, its
    (code, next code) (F, 2) int64, proxy (F,) float64 and left statistics
    (F, C) float64; then :func:`_fast_feature`'s code histogram (nb, C)
    float64 (zeros between its calls; (1, C) above :data:`PRESENT_BINS`
    bins) and whether each feature's first pass was that one's (F,) bool.
    """
    return (np.empty(max_rows, dtype=np.int64), np.empty(max_rows, dtype=np.int64),
            np.empty(max_rows + 1, dtype=np.int64), np.empty(nb + 1, dtype=np.int64),
            np.zeros(F, dtype=np.bool_), np.empty((F, 2), dtype=np.int64), np.empty(F), np.empty((F, C)),
            np.zeros((nb if nb <= PRESENT_BINS else 1, C)), np.zeros(F, dtype=np.bool_))


@numba.njit(**_JIT_LEAF)
def _stable_order_n(key, n, nb, order, count):
    """``order[:n]`` = the positions of ``key[:n]`` (int64 in [0, nb)) sorted stably (ties in position order).

    What ``np.argsort(key[:n], kind="stable")`` returns, without its
    allocation and comparisons: for few keys each key's rank (the keys below
    it, and the equal ones before it) counted by compares without branches,
    which the compiler vectorises (random codes, 12 and 24 keys: 104 -> 52
    and 249 -> 113 ns against an insertion sort, whose branches mispredict);
    else a counting sort over the nb codes (``count`` (at least nb,) its
    work array). Longer arrays are fine (no views made); returns nothing.
    """
    if n <= SMALL_SORT_ROWS:
        for k in range(n):
            v = key[k]
            r = 0
            for j in range(n):
                r += np.int64((key[j] < v) | ((key[j] == v) & (j < k)))
            _put1(order, r, k)  # (unchecked: _numba._unchecked)
        return
    for b in range(nb):
        count[b] = 0
    for k in range(n):
        count[key[k]] += 1
    # each code's first position: the running total in a register (summed
    # through the array, each step waited on the last one's store; 30 keys
    # of 255 codes: 286-346 -> 225-255 ns a sort, 64-255 keys within noise)
    total = 0
    for b in range(nb):
        c = count[b]
        count[b] = total
        total += c
    for k in range(n):
        v = key[k]
        _put1(order, _at1(count, v), k)
        _put1(count, v, _at1(count, v) + 1)


@numba.njit(inline="always", **_JIT_SPLIT)
def _candidates(key, order, pairs, weights, n, missing, L, cand, four):
    """Three or (``four``) four channels' candidates of a sorted (node, feature): returns their count.

    Row ``L[j]`` gets the channels summed over the rows up to the end of the
    ``j``-th run of equal non-missing codes in ``order`` (``key[order[:n]]``
    sorted), ``cand[j]`` that code. The running sums stay in registers
    (count and two classes, boosting's count, G, H, or squared error's
    count, w, w y, w y^2; through an array, which the compiler must assume
    may alias ``weights``, each addition was a load and a store: 1.9x the
    time on a forest's subtrees). Inlined: as a call, a 4-row node's search
    took 1,730-1,820 ns against 1,430-1,660.
    """
    n_cand = 0
    s0 = s1 = s2 = s3 = 0.0
    for k in range(n):
        o = order[k]
        code = _at1(key, o)
        q = _at1(pairs, o)
        if k == 0:
            s0, s1, s2 = _at(weights, q, 0), _at(weights, q, 1), _at(weights, q, 2)
            if four:
                s3 = _at(weights, q, 3)
        else:
            s0, s1, s2 = s0 + _at(weights, q, 0), s1 + _at(weights, q, 1), s2 + _at(weights, q, 2)
            if four:
                s3 = s3 + _at(weights, q, 3)
        if code != missing and (k == n - 1 or _at1(key, order[k + 1]) != code):
            L[n_cand, 0], L[n_cand, 1], L[n_cand, 2] = s0, s1, s2
            if four:
                L[n_cand, 3] = s3
            cand[n_cand] = code
            n_cand += 1
    return n_cand


@numba.njit(**_JIT_LEAF)
def _sorted_feature(codes, rows, weights, pairs, f, P, crit, u, has_u, nb, target, tie_rtol, scratch, sort_scratch):
    """One (node, feature) of the sort-based search: :func:`_scan` over the node's sorted codes.

    ``pairs``: the node's pair indices (into ``rows`` / ``weights``) in input
    order. The codes are sorted stably (ties in input order, as the generic
    search's stable sort of (node, feature, code) keys) and the rows' channels
    summed in that order; candidates are the present codes. Returns as
    :func:`_scan`, plus the next code present in the node after the found
    candidate's (``nb - 1`` where none: only missing values go right); its
    left stats in ``scratch[3]``. ``sort_scratch``: :func:`_sort_scratch`.

    With ``target`` -inf and no missing code in the node, the feature's
    first candidate within ``tie_rtol`` of its own best is recorded in
    ``sort_scratch`` (what a call with that target would return), so that
    :func:`_sorted_node` need not sort and sum the winning feature again.
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
    pick = -1
    if has_u and n_cand > 0:
        first, last = cand_code[0], cand_code[n_cand - 1]
        pick = first + np.int64(math.floor(u * np.float64(last - first)))
        pick = min(pick, last - 1) if last > first else -1
    best = _NEG_INF
    for variant in range(2 if has_missing else 1):
        for j in range(n_cand):
            if variant == 1:
                for c in range(C):
                    L[j, c] = L[j, c] + miss[c]
            # extremely randomised: only the last present code <= pick
            out[j] = _NEG_INF if has_u and not (cand_code[j] <= pick < cand_code[j + 1]) else 0.0
        _proxies(kind, L[:n_cand], out, P, n_out, l2, msl, mwl, False, 0.0, 0.0, 0.0, R, res)
        j, p = _first_near(out, n_cand, target, L, res)
        if j >= 0:
            return p, cand_code[j], variant, cand_code[j + 1]
        best = max(best, p)
    rec_ok[f] = False
    if not has_missing and best > _NEG_INF and target == _NEG_INF:
        # the call with this feature's own near-best target, answered from
        # the proxies at hand (``out``, ``L`` hold variant 0's)
        j, p = _first_near(out, n_cand, best - tie_rtol * abs(best), L, res)
        if j >= 0:
            rec_ok[f] = True
            rec_code[f, 0], rec_code[f, 1] = cand_code[j], cand_code[j + 1]
            rec_p[f] = p
            for c in range(C):
                rec_left[f, c] = res[c]
    return best, -1, -1, missing


@numba.njit(inline="always", **_JIT_SPLIT)
def _fast_pass(kind, C, has_u):
    """Whether a node's search has :func:`_fast_feature` / :func:`_fast_scan`: two- or three-class Gini
    (three or four channels) or single-output squared error (four), without random thresholds."""
    return not has_u and ((kind == _GINI and (C == 3 or C == 4)) or (kind == _SQUARED_ERROR and C == 4))


@numba.njit(**_JIT_LEAF)
def _fast_feature(codes, rows, weights, pairs, f, P0, P1, P2, P3, mse, msl, mwl, nb, tie_rtol, target, key,
                  order, cand, count, hb, L, out):
    """:func:`_sorted_feature` for two- or three-class Gini or (``mse``) single-output squared error, without
    random thresholds (:func:`_fast_pass`), where the node has no missing code in feature ``f``.

    The channels (count and two or three classes, or count, w, w y, w y^2)
    and the node's statistics ``P0 .. P3`` as scalars (``P3`` unused with
    three channels), the running sums, proxies (``_proxies``' Gini or
    squared-error formula, term for term), best and the candidate sought in
    one function, over whole work arrays (``key``, ``order``, ``cand``
    int64, ``L`` (n + 1, C), ``out`` (n + 1,), ``count`` (nb + 1,), ``hb``
    (nb, C): :func:`_sort_scratch`'s and :func:`_scratch`'s) without views:
    the general pass's fixed cost, about 1,000 cycles a feature, dominated
    a forest's small nodes (a 4-row
    node's search over five features, measured: 2.1-3.1 us with the general
    pass, 1.4-1.8 us with this one).

    Above ``SMALL_SORT_ROWS`` rows and up to :data:`PRESENT_BINS` bins,
    without sorting (a forest's nodes of 100 and 200 rows, five of 28
    features: 5.0 -> 4.6 and 10.6 -> 8.1 us a node): each row's channels
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
    best = _NEG_INF
    n_cand = 0
    if not (nb <= PRESENT_BINS and n > SMALL_SORT_ROWS):
        for k in range(n):
            key[k] = _at(codes, _at1(rows, pairs[k]), f)
            has_missing |= key[k] == missing
        if has_missing:  # (before the sort, which the general pass does again)
            return True, _NEG_INF, False, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0
        _stable_order_n(key, n, nb, order, count)
        # few candidates: the proxies one at a time over rows of ``L`` (the
        # vectorised loop of the branch below made 3-12 rows 2-10% slower)
        n_cand = _candidates(key, order, pairs, weights, n, missing, L, cand, four)
        for b in range(n_cand):
            out[b] = _fast_proxy(L, b, P0, P1, P2, P3, msl, mwl, mse, four)
            best = max(best, out[b])
        j = _fast_pick(out, cand, n_cand, best, target, tie_rtol, missing)
        if j >= 0:
            return False, best, True, cand[j], cand[j + 1], out[j], L[j, 0], L[j, 1], L[j, 2], L[j, 3] if four else 0.0
        return False, best, False, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0
    # ``L``'s memory by channel: each channel's sums one contiguous row, which
    # the proxies' loop reads as vectors (_fast_proxies)
    LT = L.reshape((L.shape[1], L.shape[0]))
    one = np.uint64(1)
    zero = np.uint64(0)
    m0 = m1 = m2 = m3 = zero
    for k in range(n):
        p = pairs[k]
        # unchecked loads, and the bin indexed by the unsigned code
        # (_numba._unchecked)
        code = _at(codes, _at1(rows, p), f)
        b = np.int64(code)
        has_missing |= b == missing
        hb[code, 0] += _at(weights, p, 0)
        hb[code, 1] += _at(weights, p, 1)
        hb[code, 2] += _at(weights, p, 2)
        if four:
            hb[code, 3] += _at(weights, p, 3)
        # the code's bit in its word, by masks (``bit if q == 0 else 0``
        # compiled to branches: 2.3x the pass on 40 rows)
        bit = one << np.uint64(b & 63)
        q = b >> 6
        m0 |= bit & (zero - np.uint64(q == 0))
        m1 |= bit & (zero - np.uint64(q == 1))
        m2 |= bit & (zero - np.uint64(q == 2))
        m3 |= bit & (zero - np.uint64(q == 3))
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
        return True, _NEG_INF, False, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0
    # the proxies in a loop of their own: their divisions no longer wait
    # on the walk's serial chain (40-200 rows: 12-22% off a node's search)
    best = _fast_proxies(LT, n_cand, P0, P1, P2, P3, msl, mwl, mse, four, out)
    j = _fast_pick(out, cand, n_cand, best, target, tie_rtol, missing)
    if j >= 0:
        return False, best, True, cand[j], cand[j + 1], out[j], LT[0, j], LT[1, j], LT[2, j], LT[3, j] if four else 0.0
    return False, best, False, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0


@numba.njit(inline="always", **_JIT_SPLIT)
def _fast_pick(out, cand, n_cand, best, target, tie_rtol, missing):
    """:func:`_fast_feature`'s candidate sought (-1 for none): with ``target`` -inf the first within
    ``tie_rtol`` of ``best``, else the first at least ``target``; ``cand[n_cand]`` set to ``missing`` (the
    code after the last candidate)."""
    cand[n_cand] = missing
    if target == _NEG_INF:
        return _near_best(out, n_cand, best, tie_rtol)
    return _first_at_least(out, n_cand, target)


@numba.njit(inline="always", **_JIT_SPLIT)
def _newton_proxy(l1, h_l, r1, h_r, l2):
    """Newton's proxy ``G_L^2 / (H_L + l2) + G_R^2 / (H_R + l2)`` of one admissible candidate, -inf where NaN."""
    dl, dr = h_l + l2, h_r + l2
    dl = dl if dl > 0 else 1.0
    dr = dr if dr > 0 else 1.0
    p = l1 * l1 / dl + r1 * r1 / dr
    return _NEG_INF if p != p else p


@numba.njit(**_JIT_LEAF)
def _newton_scan(h, P, kind, l2, msl, mwl, n_scan, tie_rtol, L, out):
    """:func:`_scan`'s first pass (target -inf, no random pick, no monotonic bounds) of one Newton histogram
    ``h`` (nb, C) -- [count, G, H] or [G, H] --, over value bins ``0 .. n_scan - 1``, both variants.

    The running sums of both variants in one pass, laid out by channel, then
    each variant's proxies in a loop of their own (:func:`_newton_proxies`,
    :func:`_proxies`' formula term for term), which the compiler vectorises,
    instead of :func:`_scan`'s passes. ``L`` (2, C, nb) and ``out`` (2, nb)
    are work space. An empty bin after the first repeats the sums, so the
    proxy, of the bin before it, which comes first: the first near-best
    candidate is never an empty bin (as :func:`_scan`'s, which sets them
    -inf).

    Returns (best, recorded, variant, bin): the best proxy of the feature
    and, when ``recorded``, its first candidate (variants in order, then
    bins) within ``tie_rtol`` of it: what :func:`_scan` finds with the node's
    target when this feature holds the node's best proxy. Its proxy is
    ``out[variant, bin]``, its left statistics ``L[variant, :, bin]``.
    """
    nb, C = h.shape
    n = min(nb - 1, n_scan)
    gi = _newton_g(kind)
    counted = kind == _NEWTON
    three = C == 3
    P0, P1, P2 = P[0], P[gi], P[gi + 1]
    m0 = h[nb - 1, 0]
    m1 = h[nb - 1, 1]
    m2 = h[nb - 1, 2] if three else 0.0
    n_var = 2 if _has_rows(kind, h[nb - 1]) else 1
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
    best = _NEG_INF
    for v in range(n_var):
        if three:
            best = max(best, _newton_proxies(L[v, 0], L[v, 1], L[v, 2], n, counted, P0, P1, P2, l2, msl, mwl,
                                             out[v]))
        else:  # [G, H]: the count channel is G (read, as _scan reads it, only where counted)
            best = max(best, _newton_proxies(L[v, 0], L[v, 0], L[v, 1], n, counted, P0, P1, P2, l2, msl, mwl,
                                             out[v]))
    for v in range(n_var):
        b = _near_best(out[v], n, best, tie_rtol)
        if b >= 0:
            return best, True, v, b
    return best, False, 0, 0


@numba.njit(inline="always", **_JIT_SPLIT)
def _newton_proxies(l0s, l1s, hls, n, counted, P0, P1, P2, l2, msl, mwl, out):
    """Newton's proxies of candidates ``0 .. n - 1`` into ``out``; returns the best (-inf for none).

    ``l0s``, ``l1s``, ``hls`` (at least n,) float64: the candidates' left
    count (read only where ``counted``), G and H. :func:`_newton_proxy`'s
    value where the candidate is admissible (the count and weight rules of
    :func:`_scan`), else -inf; computed for every candidate and the rules
    as selects over contiguous rows, so that the loop vectorises.
    """
    for b in range(n):
        l0, l1, h_l = l0s[b], l1s[b], hls[b]
        h_r = P2 - h_l
        ok = (h_l >= mwl) & (h_r >= mwl) & (h_l > 0) & (h_r > 0)
        if counted:
            ok = ok & (l0 >= msl) & (P0 - l0 >= msl)
        p = _newton_proxy(l1, h_l, P1 - l1, h_r, l2)
        out[b] = p if ok else _NEG_INF
    return _best_of(out, n)


@numba.njit(inline="always", **_JIT_SPLIT)
def _best_of(out, n):
    """The largest of ``out[:n]`` (-inf for none)."""
    best = _NEG_INF
    for b in range(n):
        best = max(best, out[b])
    return best


@numba.njit(**_JIT_LEAF)
def _fast_scan(h, P0, P1, P2, P3, mse, msl, mwl, tie_rtol, n_scan, L, out):
    """:func:`_scan`'s first pass (target -inf, no random pick) of one two- or three-class Gini histogram
    ``h`` (nb, 3 or 4) or (``mse``) squared-error one (nb, 4) without missing rows, over value bins
    ``0 .. n_scan - 1`` (the node's statistics ``P0 .. P3``; ``P3`` unused with three channels).

    Returns (best, recorded, bin, proxy, left statistics (4 scalars; the
    fourth 0 with three channels)): the best proxy and, when ``recorded``,
    the first candidate within ``tie_rtol`` of it (what the replay with the
    node's target finds when this feature holds the node's best). The same
    candidates as :func:`_scan` (an empty bin after the first repeats the
    candidate before it, which comes first).
    """
    nb, C = h.shape
    four = C == 4
    n = min(nb - 1, n_scan)
    LT = L.reshape((L.shape[1], L.shape[0]))  # by channel, as _fast_feature's
    s0, s1, s2 = h[0, 0], h[0, 1], h[0, 2]
    s3 = h[0, 3] if four else 0.0
    # the running sums, then the proxies in a loop of their own
    # (_fast_proxies). An empty bin after the first repeats the sums, so the
    # proxy, of the bin before it, which comes first: the first near-best
    # candidate is never an empty bin (as _scan's, which sets them -inf)
    for b in range(n):
        if b > 0:
            s0, s1, s2 = s0 + h[b, 0], s1 + h[b, 1], s2 + h[b, 2]
            if four:
                s3 = s3 + h[b, 3]
        LT[0, b], LT[1, b], LT[2, b] = s0, s1, s2
        if four:
            LT[3, b] = s3
    best = _fast_proxies(LT, n, P0, P1, P2, P3, msl, mwl, mse, four, out)
    j = _near_best(out, n, best, tie_rtol)
    if j >= 0:
        return best, True, j, out[j], LT[0, j], LT[1, j], LT[2, j], LT[3, j] if four else 0.0
    return best, False, 0, 0.0, 0.0, 0.0, 0.0, 0.0


@numba.njit(inline="always", **_JIT_SPLIT)
def _fast_proxies(LT, n, P0, P1, P2, P3, msl, mwl, mse, four, out):
    """The proxies of candidates ``0 .. n - 1`` into ``out``; returns the best (-inf for none).

    :func:`_proxies`' formula term for term: Gini (count and two classes,
    or with ``four`` three) or, with ``mse``, single-output squared error
    (count, w, w y, ...; ``P1`` the node's w, ``P2`` its w y). ``LT`` (C,
    at least n) float64: the candidates' left sums by channel (row ``c``
    channel ``c``). The rules as selects over contiguous rows: a loop the
    compiler vectorises (85 candidates, two classes: 2.15 -> 0.85 ns a
    candidate, against the same formula read from rows of an (n, C) array,
    whose strided loads kept the loop scalar).
    """
    # one loop per case, each with its flags as constants
    if mse:
        for b in range(n):
            l0, r0, sl, sr, wl, wr = _fast_terms(LT[0, b], LT[1, b], LT[2, b], 0.0, P0, P1, P2, P3, True, False)
            out[b] = _select_proxy(l0, r0, sl, sr, wl, wr, msl, mwl)
    elif four:
        for b in range(n):
            l0, r0, sl, sr, wl, wr = _fast_terms(LT[0, b], LT[1, b], LT[2, b], LT[3, b], P0, P1, P2, P3, False, True)
            out[b] = _select_proxy(l0, r0, sl, sr, wl, wr, msl, mwl)
    else:
        for b in range(n):
            l0, r0, sl, sr, wl, wr = _fast_terms(LT[0, b], LT[1, b], LT[2, b], 0.0, P0, P1, P2, P3, False, False)
            out[b] = _select_proxy(l0, r0, sl, sr, wl, wr, msl, mwl)
    return _best_of(out, n)


@numba.njit(inline="always", **_JIT_SPLIT)
def _select_proxy(l0, r0, sl, sr, wl, wr, msl, mwl):
    """:func:`_sum_sq_proxy` without branches (the same value: the conditions and NaN test as selects)."""
    ok = (l0 >= msl) & (r0 >= msl) & (wl >= mwl) & (wr >= mwl) & (wl > 0) & (wr > 0)
    p = sl / (wl if wl > 0 else 1.0) + sr / (wr if wr > 0 else 1.0)
    return p if ok & (p == p) else _NEG_INF


@numba.njit(inline="always", **_JIT_SPLIT)
def _fast_proxy(L, b, P0, P1, P2, P3, msl, mwl, mse, four):
    """:func:`_proxies`' proxy of row ``b`` of ``L`` (:func:`_fast_terms`), with :func:`_sum_sq_proxy`'s
    branches: the loops over rows of ``L`` stay scalar, where the branches skip the divisions."""
    l0, r0, sl, sr, wl, wr = _fast_terms(L[b, 0], L[b, 1], L[b, 2], L[b, 3] if four else 0.0, P0, P1, P2, P3,
                                         mse, four)
    return _sum_sq_proxy(l0, r0, sl, sr, wl, wr, msl, mwl)


@numba.njit(inline="always", **_JIT_SPLIT)
def _fast_terms(c0, c1, c2, c3, P0, P1, P2, P3, mse, four):
    """The terms ``(l0, r0, sl, sr, wl, wr)`` of :func:`_sum_sq_proxy` for a candidate whose left sums are
    ``c0 .. c3`` (``c3`` unused without ``four``), :func:`_proxies`' formula term for term: Gini (count and
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


@numba.njit(inline="always", **_JIT_SPLIT)
def _sum_sq_proxy(l0, r0, sl, sr, wl, wr, msl, mwl):
    """Gini's / squared error's proxy ``sl / wl + sr / wr`` of one candidate (counts ``l0``, ``r0``), -inf
    where a side is below ``msl`` / ``mwl`` or empty, or where it is NaN."""
    p = _NEG_INF
    if l0 >= msl and r0 >= msl and wl >= mwl and wr >= mwl and wl > 0 and wr > 0:
        p = sl / _safe(wl) + sr / _safe(wr)
        if p != p:
            p = _NEG_INF
    return p


@numba.njit(inline="always", **_JIT_SPLIT)
def _first_at_least(out, n, target):
    """The first index of ``out[:n]`` whose proxy is ``>= target`` and above -inf, or -1."""
    for j in range(n):
        if out[j] >= target and out[j] > _NEG_INF:
            return j
    return -1


@numba.njit(inline="always", **_JIT_SPLIT)
def _near_best(out, n, best, tie_rtol):
    """The first of ``out[:n]`` within ``tie_rtol`` of ``best`` (above -inf): :func:`_first_near`'s index, or -1."""
    if best > _NEG_INF:
        return _first_at_least(out, n, best - tie_rtol * abs(best))
    return -1


@numba.njit(**_JIT_LEAF)
def _sorted_node(codes, rows, weights, pairs, P, crit, fmask, has_mask, u, has_u, nb, thresholds, bin_values,
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
    fast = _fast_pass(crit[0], C, has_u)  # two or three classes, or squared error
    mse = crit[0] == _SQUARED_ERROR
    P3 = P[3] if C == 4 else 0.0
    best = _NEG_INF
    for f in range(F):
        fbest[f] = _NEG_INF
        rec_ok[f] = False
        fast_done[f] = False
        if not has_mask or fmask[f]:
            general = True
            if fast:
                general, fb, ok, c0, c1, pj, l0, l1, l2, l3 = _fast_feature(
                    codes, rows, weights, pairs, f, P[0], P[1], P[2], P3, mse, crit[3], crit[4], nb, tie_rtol,
                    _NEG_INF, key_all, order_all, cand_all, count, hb, scratch[4], scratch[5])
                fast_done[f] = not general
                if not general:
                    fbest[f] = fb
                    if ok:
                        rec_ok[f] = True
                        rec_code[f, 0], rec_code[f, 1] = c0, c1
                        rec_p[f] = pj
                        rec_left[f, 0], rec_left[f, 1], rec_left[f, 2] = l0, l1, l2
                        if C == 4:
                            rec_left[f, 3] = l3
            if general:
                uf = u[f] if has_u else 0.0
                fbest[f] = _sorted_feature(codes, rows, weights, pairs, f, P, crit, uf, has_u, nb,
                                           _NEG_INF, tie_rtol, scratch, sort_scratch)[0]
        best = max(best, fbest[f])
    target = best - tie_rtol * abs(best)
    for f in range(F):
        if not (fbest[f] > _NEG_INF and fbest[f] >= target):
            continue
        if rec_ok[f] and fbest[f] == best:
            # the best feature is the first near-best one: its own target is
            # the node's, and its pass recorded what the replay would find
            # (a replay cost a fifth of a forest's sort-based searches)
            p, code, variant, nxt = rec_p[f], rec_code[f, 0], 0, rec_code[f, 1]
            for c in range(C):
                left[c] = rec_left[f, c]
            missing_left = left[0] > P[0] - left[0]  # no missing code in the node (recorded only then)
            threshold = _split_threshold(f, code, nxt, nxt != missing, thresholds, bin_values, is_exact)
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
            threshold = _split_threshold(f, code, nxt, nxt != missing, thresholds, bin_values, is_exact)
            return True, p, f, code, missing_left, threshold
        p, code, variant, nxt = _sorted_feature(codes, rows, weights, pairs, f, P, crit,
                                                u[f] if has_u else 0.0, has_u, nb, target, tie_rtol, scratch,
                                                sort_scratch)
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
        threshold = _split_threshold(f, code, nxt, nxt != missing, thresholds, bin_values, is_exact)
        return True, p, f, code, missing_left, threshold
    return False, _NEG_INF, 0, 0, False, np.inf


@numba.njit(parallel=True, **_JIT_SPLIT)
def _sorted_splits(codes, rows, weights, node_pairs, node_start, parent, crit, fmask, has_mask, u, has_u, nb,
                   thresholds, bin_values, is_exact, tie_rtol, n_blocks, max_rows):
    m, C = parent.shape
    F = codes.shape[1]
    found, proxy, feature, bin_, missing_left, left, threshold = _outputs(m, C, np.inf)
    per = (m + n_blocks - 1) // n_blocks
    for blk in prange(n_blocks):
        scratch = _scratch(max_rows + 1, C)
        sort_scratch = _sort_scratch(max_rows, nb, F, C)
        fbest = np.empty(F)
        for i in range(blk * per, min(m, (blk + 1) * per)):
            pairs = node_pairs[node_start[i]:node_start[i + 1]]
            fi, p, f, code, ml, thr = _sorted_node(
                codes, rows, weights, pairs, parent[i], crit, fmask[i if has_mask else 0], has_mask,
                u[i if has_u else 0], has_u, nb, thresholds, bin_values, is_exact, tie_rtol, scratch,
                sort_scratch, fbest, left[i])
            if fi:  # (without a split the node's row of ``left`` stays zeros: _sorted_node writes it only with one)
                found[i] = True
                proxy[i] = p
                feature[i] = f
                bin_[i] = code
                missing_left[i] = ml
                threshold[i] = thr
    return found, proxy, feature, bin_, missing_left, left, threshold


def _supported_criterion(criterion, n_channels):
    kind = CRITERION_KINDS.get(type(criterion))
    if kind is None:
        return False
    summed = n_channels - 1 if kind <= 2 else getattr(criterion, "n_outputs", 1)
    return summed <= _PW_BLOCK


def _has_values(bin_mapper):
    return bin_mapper.bin_values is not None and bin_mapper.is_exact is not None


def _crit(criterion, cons):
    """The criterion and constraints as the kernels' tuple (kind, n_outputs, l2, min_samples_leaf, min_weight_leaf)."""
    return (
        CRITERION_KINDS[type(criterion)],
        int(getattr(criterion, "n_outputs", 1)),
        float(getattr(criterion, "l2", 0.0)),
        float(cons.min_samples_leaf),
        float(cons.min_weight_leaf),
    )


def _mapper_arrays(bin_mapper):
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


def _record(found, proxy, feature, bin_, missing_left, left, threshold, parent):
    m = found.shape[0]
    return SplitRecord(
        found=found,
        proxy=proxy,
        feature=feature,
        bin=bin_,
        missing_left=missing_left,
        is_categorical=np.zeros(m, dtype=np.bool_),
        cat_left=np.zeros((m, 0), dtype=np.bool_),
        left=left,
        right=parent - left,
        threshold=threshold,
    )


def best_splits(xp, hist, parent, criterion, cons, is_categorical, feature_mask=None, bin_mapper=None,
                random_u=None, feature_ids=None, bounds=None, monotonic_cst=None, local_thresholds=True, *,
                n_threads: int = 1):
    """:func:`gputrees._splitting.find_best_splits` compiled, or None where it is not covered.

    Same arguments and result (NumPy arrays); None for batches with
    categorical features, criteria other than those of
    :data:`CRITERION_KINDS`, and very wide class / output sums (the caller
    then uses the generic code).
    """
    if not isinstance(hist, np.ndarray) or hist.ndim != 4 or np.any(is_categorical):
        return None
    m, n_cols, nb, c = hist.shape
    if m == 0 or n_cols == 0 or nb < 2 or not _supported_criterion(criterion, c):
        return None
    if bounds is not None and type(criterion) not in (Newton, NewtonGH):
        return None
    if bin_mapper is not None and not _has_values(bin_mapper):
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
        direction = np.ascontiguousarray(direction, dtype=f8)
    threads = _threads_for(n_threads, m * n_cols * nb * c)
    n_blocks = min(m * n_cols, threads * _BLOCKS_PER_THREAD) if threads > 1 else 1
    with _Threads(threads):
        out = (_best_splits if n_blocks > 1 else _best_splits_serial)(
            hist,
            parent,
            _crit(criterion, cons),
            np.ones((1, 1), dtype=np.bool_) if feature_mask is None else np.ascontiguousarray(feature_mask, np.bool_),
            feature_mask is not None,
            dummy_f if random_u is None else np.ascontiguousarray(random_u, dtype=f8),
            random_u is not None,
            np.zeros((1, 1), dtype=np.int64) if feature_ids is None else np.ascontiguousarray(feature_ids, np.int64),
            feature_ids is not None,
            dummy_f if bounds is None else np.ascontiguousarray(bounds, dtype=f8),
            direction,
            mono,
            *_mapper_arrays(bin_mapper),
            bin_mapper is not None,
            bool(local_thresholds),
            TIE_RTOL,
            n_blocks,
        )
    return _record(*out, parent)


#: Elementary updates counted per (pair, feature) of a sort-based search when
#: choosing its threads (:func:`gputrees.kernels._numba._threads_for`): a
#: pair's code is read, sorted or histogrammed and scanned, several updates
#: each.
_UPDATES_PER_CODE = 16


def _node_tasks(slot, m, n_features, n_threads):
    """The pairs of each of m nodes and the tasks over nodes of a sort-based search.

    Returns (order, start, threads, n_blocks): node ``i``'s pairs are
    ``order[start[i] : start[i + 1]]`` (in input order).
    """
    slot = np.asarray(slot, dtype=np.int64)
    order = np.argsort(slot, kind="stable")
    start = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(slot, minlength=m), out=start[1:])
    threads = _threads_for(n_threads, int(slot.shape[0]) * n_features * _UPDATES_PER_CODE)
    n_blocks = min(m, threads * _BLOCKS_PER_THREAD) if threads > 1 else 1
    return order, start, threads, n_blocks


def sorted_splits(xp, codes, rows, slot, weights, parent, criterion, cons, bin_mapper, max_rows, kernels,
                  feature_mask=None, random_u=None, *, n_threads: int = 1):
    """:func:`gputrees._sorted_split.find_best_splits_sorted` compiled, or None where it is not covered.

    Same arguments and result, per node (in parallel over nodes): each drawn
    feature's codes sorted stably, the rows' channels summed in that order,
    the present codes scored as candidates, then the tie rule. The fields
    ``bin``, ``missing_left`` and ``threshold`` of nodes without a split are
    unspecified (here 0, False, inf). None for criteria other than those of
    :data:`CRITERION_KINDS` and >128-term sums.
    """
    m = int(parent.shape[0])
    if m == 0 or not _supported_criterion(criterion, int(weights.shape[1])) or not _has_values(bin_mapper):
        return None
    f8 = np.float64
    node_pairs, node_start, threads, n_blocks = _node_tasks(slot, m, int(codes.shape[1]), n_threads)
    with _Threads(threads):
        out = _sorted_splits(
            codes,
            np.asarray(rows, dtype=np.int64),
            np.ascontiguousarray(weights, dtype=f8),
            node_pairs,
            node_start,
            np.ascontiguousarray(parent, dtype=f8),
            _crit(criterion, cons),
            np.ones((1, 1), dtype=np.bool_) if feature_mask is None else np.ascontiguousarray(feature_mask, np.bool_),
            feature_mask is not None,
            np.zeros((1, 1), dtype=f8) if random_u is None else np.ascontiguousarray(random_u, dtype=f8),
            random_u is not None,
            int(bin_mapper.n_bins),
            *_mapper_arrays(bin_mapper)[:3],
            TIE_RTOL,
            n_blocks,
            max(int(np.diff(node_start).max()), 1),  # scratch rows: the largest node's (not trusting max_rows)
        )
    return _record(*out, parent)
