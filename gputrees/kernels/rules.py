"""The rules of tree growing, written once for every compiled kernel: criteria, split rules, leaf values, draws.

Each function is plain Python over scalars (and, where a rule reads a
node's statistics, a 1-D array of its channels). The compiled kernel sets
register them for their target (:func:`gputrees.kernels.numba.jit.compile_rules`
for Numba's CPU target), so that every compiled grower calls the same
formula: the level-wise scan, the whole-tree boosting grower, the subtree
kernel and the compiled boosting rounds. A rule changes here, in one place.

The array-API engine (:mod:`gputrees._criteria`, :mod:`gputrees._splitting`,
:mod:`gputrees.kernels.node_draws`) is the oracle the compiled kernels are tested
against; it uses the functions of this module that are written with
operators only (the draws' mixing, Newton's value and score), and computes
the rest over whole arrays in the same operation order, so both give the
same bits.

Criteria are selected by their code (:mod:`gputrees._records`: ``GINI`` ..
``NEWTON_GH``); a node's statistics ``s`` are its channels: the row count,
then the class weights (classification), ``w, w y_j, w y_j^2`` (regression)
or ``G, H`` (Newton; ``NEWTON_GH`` without the count). Sums over channels
follow NumPy's order (:func:`channel_sum`), as the oracle's do.
"""

from __future__ import annotations

import math

import numpy as np

from .._records import ENTROPY, FRIEDMAN_MSE, GINI, MISCLASSIFICATION, NEWTON, NEWTON_GH, POISSON, SQUARED_ERROR

# -- constants the rules share with the oracle ------------------------------------
#: float64 machine epsilon, scikit-learn's EPSILON for "pure node" and min_impurity_decrease.
EPSILON = 2.220446049250313e-16
#: scikit-learn's Poisson guard: a child whose target sum is below this cannot be split off.
POISSON_EPSILON = 10 * EPSILON
LOG2 = math.log(2.0)
#: Splits whose Newton gain is below this fraction of the children's score
#: are rounding noise (a node whose gradients already sum to ~0 both sides),
#: not improvements; XGBoost uses an absolute 1e-6 for the same purpose.
NEWTON_GAIN_RTOL = 1e-12
#: Candidates whose proxies are within this relative distance of the node's
#: best are ties, decided by the tie rule (lowest feature, missing right
#: first, lowest bin). Sums taken in different orders (a histogram built or
#: obtained by subtraction, chunked or not, statistics carried from a
#: parent's split) differ by a few hundred ulps at most; without a tolerance
#: those ulps, not the rule, would decide exact ties. The largest gap
#: observed between two candidates that cut a node into the same row sets
#: was 1.04e-13, relative: the tolerance keeps a 100x margin.
TIE_RTOL = 1e-11
#: Up to this many channels a sum over channels is a chain of additions
#: (the oracle's unrolled sum); above, NumPy's pairwise summation.
UNROLL_CHANNELS = 8
#: Row lengths below which NumPy's ``sum(axis=1)`` adds a row's values in order (from 8 on, pairwise): shorter
#: rows summed column after column give NumPy's bits (the multinomial loss' softmax sums)
SEQUENTIAL_ROW_SUM = 8
#: NumPy's pairwise summation adds up to this many terms in one block of
#: eight partial sums; longer sums are not reproduced (the kernels leave
#: such criteria to the oracle).
PAIRWISE_BLOCK = 128
#: Smallest hessian of a log-loss row (keeps Newton steps finite).
MIN_HESSIAN = 1e-16

#: SplitMix64's constants: its increment (2^64 / golden ratio, odd) and the
#: finaliser's multipliers.
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
MIX_2 = np.uint64(0x94D049BB133111EB)
#: Mixed into a parent's key for its left and right child (two odd constants
#: unlike GOLDEN: the fractional parts of sqrt(2) and sqrt(3), as in SHA-2).
LEFT = np.uint64(0x6A09E667F3BCC909)
RIGHT = np.uint64(0xBB67AE8584CAA73B)
#: Mixed into a fit's seed for its trees' bootstrap keys (the fractional part of sqrt(5), SHA-512's third
#: word): a stream of its own, apart from the generator's node keys.
SAMPLE = np.uint64(0x3C6EF372FE94F82B)
#: Scale of the top 53 bits of a key to a uniform in [0, 1).
TO_UNIT = 2.0 ** -53
#: Most features for which :func:`draw_features` ranks integer keys: a
#: uniform's 53 bits shifted past 11 bits that hold the feature (2^11)
RANK_DRAW_FEATURES = 2048
_U11 = np.uint64(11)
_U27 = np.uint64(27)
_U30 = np.uint64(30)
_U31 = np.uint64(31)
_LAST_KEY = np.uint64(0xFFFFFFFFFFFFFFFF)
#: The feature's bits of a :func:`draw_features` key (below the uniform's 53)
_FEATURE_BITS = np.uint64(0x7FF)
NEG_INF = -np.inf

__all__ = [
    "EPSILON", "POISSON_EPSILON", "LOG2", "NEWTON_GAIN_RTOL", "TIE_RTOL", "UNROLL_CHANNELS", "SEQUENTIAL_ROW_SUM",
    "PAIRWISE_BLOCK",
    "MIN_HESSIAN", "GOLDEN", "MIX_1", "MIX_2", "LEFT", "RIGHT", "SAMPLE", "TO_UNIT", "RANK_DRAW_FEATURES", "NEG_INF",
    "SCALE_BITS", "MAX_EXPONENT", "quantisation_scale_of",
    "pairwise_sum", "channel_sum", "safe", "newton_gradient_channel", "criterion_weight", "entropy_term", "impurity",
    "gini_impurity", "variance", "weighted_decrease", "midpoint", "poisson_term", "sum_sq_proxy", "friedman_proxy", "newton_denominator", "newton_score", "newton_value",
    "newton_gain_at", "newton_bounded", "newton_proxy", "newton_improvement", "newton_accept",
    "impurity_improvement", "impurity_accept", "poisson_sum", "split_proxy", "candidate_score", "can_split",
    "has_rows", "tie_target", "random_bin", "random_bin_within",
    "random_pick",
    "split_threshold", "category_orderings", "category_key", "key_before", "category_column", "mix64", "draw_bits",
    "uniform",
    "child_key", "draw_features", "sample_key", "sample_row", "shap_extend", "shap_unwound_sum", "shap_unwind",
]


# -- sums over channels, in NumPy's order ----------------------------------------
def _term(a, i, square):
    v = a[i]
    return v * v if square else v


def pairwise_sum(a, start, n, square):
    """``numpy.sum`` of ``a[start:start + n]`` (of its squares): pairwise, ``n <= PAIRWISE_BLOCK``."""
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


def channel_sum(a, start, n, square):
    """The oracle's sum over ``n`` channels from ``start``: a chain of adds up to :data:`UNROLL_CHANNELS`, else
    :func:`pairwise_sum`."""
    if n > UNROLL_CHANNELS:
        return pairwise_sum(a, start, n, square)
    res = _term(a, start, square)
    for i in range(1, n):
        res = res + _term(a, start + i, square)
    return res


# -- criteria -------------------------------------------------------------------
def safe(w):
    """A weight or denominator as divisor: itself where positive, else 1."""
    return w if w > 0 else 1.0


def newton_gradient_channel(kind):
    """The channel of G in Newton statistics (H follows): 1 after the count, 0 over [G, H]."""
    return 1 if kind == NEWTON else 0


def criterion_weight(kind, s):
    """A node's weight: the class weights' sum, the regression weight ``w``, or Newton's hessian sum."""
    if kind <= MISCLASSIFICATION:
        return channel_sum(s, 1, s.shape[0] - 1, False)
    if kind != NEWTON:
        return s[1]
    return s[2]


def entropy_term(p, log_p):
    """A class fraction's ``p log2 p`` term of the entropy, given ``log(p)`` (0 at ``p == 0``: ``log_p`` 0)."""
    return p * (log_p / LOG2)


def gini_impurity(sum_sq, w):
    """Gini impurity ``1 - sum p_k^2`` from the sum of squared class weights and the weight as divisor."""
    return 1.0 - sum_sq / (w * w)


def variance(sum_sq, total, w):
    """One output's ``E[y^2] - E[y]^2`` from its sums of ``w y^2`` and ``w y`` and the weight as divisor."""
    mean = total / w
    return sum_sq / w - mean * mean


def impurity(kind, s, n_out, tmp):
    """The impurity of a node with statistics ``s`` (``tmp``: work space of a channel per class or output).

    Gini ``1 - sum p_k^2``, entropy ``-sum p_k log2 p_k``, misclassification
    ``1 - max p_k``, squared error (the mean over outputs of ``E[y^2] -
    E[y]^2``); Newton ``-G^2 / (2 (H + l2))`` is not asked here (its
    splittability is ``H > 0``).
    """
    ws = safe(criterion_weight(kind, s))
    k = s.shape[0] - 1
    if kind == GINI:
        return gini_impurity(channel_sum(s, 1, k, True), ws)
    if kind == ENTROPY:
        for j in range(k):
            p = s[1 + j] / ws
            tmp[j] = entropy_term(p, math.log(p if p > 0 else 1.0))
        return -pairwise_sum(tmp, 0, k, False)
    if kind == MISCLASSIFICATION:
        best = s[1] / ws
        for j in range(1, k):
            p = s[1 + j] / ws
            if p > best:
                best = p
        return 1.0 - best
    for j in range(n_out):  # squared error
        tmp[j] = variance(s[2 + n_out + j], s[2 + j], ws)
    return pairwise_sum(tmp, 0, n_out, False) / n_out


def poisson_term(v, log_ratio):
    """One output's ``S log(S / w)`` of the Poisson proxy, given the target sum and ``log(S / w)``."""
    return v * log_ratio


def sum_sq_proxy(sl, sr, wl, wr):
    """Gini's and squared error's proxy ``S_l / w_l + S_r / w_r`` (``S``: sums of squared class weights or of
    target sums; ``w``: the children's weights as divisors, 1 where not positive)."""
    return sl / wl + sr / wr


def friedman_proxy(sl, sr, wl, wr):
    """Friedman's ``(w_r S_l - w_l S_r)^2 / (w_l w_r)`` from the target sums and the children's weights as
    divisors."""
    diff = wr * sl - wl * sr
    return diff * diff / (wl * wr)


def newton_denominator(h, l2):
    """``H + l2`` as a divisor (1 where not positive)."""
    return safe(h + l2)


def newton_score(g, d):
    """``G^2 / (H + l2)`` from ``G`` and the divisor ``d`` (:func:`newton_denominator`): twice the loss
    decrease of a node at its optimal value."""
    return g * g / d


def newton_value(g, d):
    """The Newton leaf value ``-G / (H + l2)`` from ``G`` and the divisor ``d`` (:func:`newton_denominator`)."""
    return -g / d


def newton_gain_at(g, h, l2, v):
    """The score of a node whose value is forced to ``v``: ``-(2 G v + (H + l2) v^2)``."""
    return -(2.0 * g * v + (h + l2) * v * v)


def newton_bounded(g, h, l2, lo, up):
    """The leaf value clipped to ``[lo, up]`` (monotonic bounds) and the score at it."""
    v = newton_value(g, newton_denominator(h, l2))
    v = max(v, lo)
    v = min(v, up)
    return v, newton_gain_at(g, h, l2, v)


def newton_proxy(gl, hl, gr, hr, l2):
    """Newton's proxy ``G_l^2 / (H_l + l2) + G_r^2 / (H_r + l2)`` of a candidate."""
    return newton_score(gl, newton_denominator(hl, l2)) + newton_score(gr, newton_denominator(hr, l2))


def newton_improvement(gp, hp, gl, hl, gr, hr, l2):
    """A split's Newton gain: the children's scores minus the node's (XGBoost's ``loss_chg`` times 2)."""
    return newton_proxy(gl, hl, gr, hr, l2) - newton_score(gp, newton_denominator(hp, l2))


def newton_accept(improvement, proxy, min_decrease):
    """Whether a Newton split is kept: its gain above ``min_split_gain`` and above rounding noise."""
    return improvement > max(min_decrease, NEWTON_GAIN_RTOL * abs(proxy))


def weighted_decrease(w, total_weight, ws, i, wl, il, wr, ir):
    """scikit-learn's weighted impurity decrease ``w / W * (i - w_r / w * i_r - w_l / w * i_l)`` of a split
    (``ws``: the node's weight as divisor)."""
    return (w / total_weight) * (i - (wr / ws) * ir - (wl / ws) * il)


def impurity_improvement(kind, P, L, R, n_out, total_weight, tmp):
    """:func:`weighted_decrease` of a split from the statistics of the node and its children."""
    w = criterion_weight(kind, P)
    wl, wr = criterion_weight(kind, L), criterion_weight(kind, R)
    return weighted_decrease(w, total_weight, safe(w), impurity(kind, P, n_out, tmp), wl,
                             impurity(kind, L, n_out, tmp), wr, impurity(kind, R, n_out, tmp))


def impurity_accept(improvement, min_decrease):
    """Whether an impurity split is kept: scikit-learn's ``improvement + EPSILON >= min_impurity_decrease``."""
    return improvement + EPSILON >= min_decrease


def poisson_sum(s, ws, n_out, tmp):
    """A child's Poisson term summed over outputs in NumPy's order (``tmp``: work space)."""
    for j in range(n_out):
        v = s[2 + j]
        v = v if v > POISSON_EPSILON else 1.0
        tmp[j] = poisson_term(v, math.log(v / ws))
    return pairwise_sum(tmp, 0, n_out, False)


def split_proxy(kind, L, R, wl, wr, n_out, l2, tmp):
    """The criterion's proxy of a candidate with children's statistics ``L``, ``R`` and weights ``wl``, ``wr``
    (larger is better; ``tmp``: work space of a channel per class or output)."""
    if kind == GINI:
        k = L.shape[0] - 1
        return sum_sq_proxy(channel_sum(L, 1, k, True), channel_sum(R, 1, k, True), safe(wl), safe(wr))
    if kind <= MISCLASSIFICATION:  # -(w_r i_r) - w_l i_l
        return -(wr * impurity(kind, R, n_out, tmp)) - wl * impurity(kind, L, n_out, tmp)
    if kind == SQUARED_ERROR:
        return sum_sq_proxy(channel_sum(L, 2, n_out, True), channel_sum(R, 2, n_out, True), safe(wl), safe(wr))
    if kind == FRIEDMAN_MSE:
        return friedman_proxy(pairwise_sum(L, 2, n_out, False), pairwise_sum(R, 2, n_out, False), safe(wl), safe(wr))
    if kind == POISSON:
        for j in range(n_out):
            if not (L[2 + j] > POISSON_EPSILON and R[2 + j] > POISSON_EPSILON):
                return NEG_INF
        return poisson_sum(L, safe(wl), n_out, tmp) + poisson_sum(R, safe(wr), n_out, tmp)
    gi = newton_gradient_channel(kind)
    return newton_proxy(L[gi], L[gi + 1], R[gi], R[gi + 1], l2)


def candidate_score(kind, L, R, P, n_out, l2, msl, mwl, mono, lo, up, direction, tmp):
    """Proxy of the candidate with left stats ``L`` of a node with stats ``P`` (``-inf`` where invalid: too few
    rows or too little weight a side, NaN); fills ``R`` with the right child's. With ``mono`` (Newton), the
    children's values clipped to ``[lo, up]`` and ordered by ``direction``."""
    for c in range(L.shape[0]):
        R[c] = P[c] - L[c]
    if kind != NEWTON_GH and not (L[0] >= msl and R[0] >= msl):
        return NEG_INF
    wl = criterion_weight(kind, L)
    wr = criterion_weight(kind, R)
    if not (wl >= mwl and wr >= mwl and wl > 0 and wr > 0):
        return NEG_INF
    if mono:
        gi = newton_gradient_channel(kind)
        vl, gl = newton_bounded(L[gi], L[gi + 1], l2, lo, up)
        vr, gr = newton_bounded(R[gi], R[gi + 1], l2, lo, up)
        p = gl + gr
        if not (direction * (vr - vl) >= 0):
            return NEG_INF
    else:
        p = split_proxy(kind, L, R, wl, wr, n_out, l2, tmp)
    if p != p:
        return NEG_INF
    return p


def can_split(kind, s, depth, n_out, msl, mwl, min_samples_split, max_depth, tmp):
    """Whether a node may be split: rows, weight, depth (``max_depth`` < 0: none) and an impure node (Newton:
    a positive hessian sum)."""
    count = s[0]
    w = criterion_weight(kind, s)
    if not (count >= min_samples_split and count >= 2 * msl and w >= 2 * mwl and (max_depth < 0 or depth < max_depth)):
        return False
    if kind == NEWTON:
        return w > 0
    return impurity(kind, s, n_out, tmp) > EPSILON


# -- split rules ------------------------------------------------------------------
def has_rows(kind, s):
    """Whether a bin with statistics ``s`` holds rows: its count, or (Newton over [G, H]) any non-zero channel."""
    if kind != NEWTON_GH:
        return s[0] > 0
    for c in range(s.shape[0]):
        if s[c] != 0:
            return True
    return False


#: Bits of the quantised channels' fixed-point sums and the bound on ``|log2(scale)|``
#: (:mod:`gputrees.kernels._quantise`).
SCALE_BITS = 52
MAX_EXPONENT = 1000


def quantisation_scale_of(big, n_rows):
    """The power-of-two scale of a channel whose largest absolute value is ``big`` (``n_rows`` rows summed):
    the largest power of two with ``n_rows * big * scale < 2 ** SCALE_BITS``, at most ``2 ** MAX_EXPONENT``;
    1 for an all-zero channel; NaN where there is none (``big`` not finite, or values too large)."""
    total = float(n_rows) * big
    if not math.isfinite(total):
        return math.nan
    if total == 0.0:
        return 1.0
    _, e = math.frexp(total)
    exponent = SCALE_BITS - e
    if exponent < -MAX_EXPONENT:
        return math.nan
    return math.ldexp(1.0, min(exponent, MAX_EXPONENT))


def tie_target(best, tie_rtol):
    """The smallest proxy that ties with ``best``: the tie rule then picks among those."""
    return best - tie_rtol * abs(best)


def random_bin(h, nb, u):
    """An extremely randomised candidate of one (node, feature) histogram ``h`` (nb, C): the bin, or -1.

    Uniform ``u`` over the bins between the node's first and last non-empty
    value bins (the missing bin, last, excluded).
    """
    return random_bin_within(h, 0, nb - 2, nb, u)


def random_bin_within(h, first, last, nb, u):
    """:func:`random_bin` of a histogram whose value bins outside ``first .. last`` are empty (a node's
    lowest and highest codes): its non-empty ends looked for from there."""
    while first <= last and not (h[first, 0] > 0):
        first += 1
    while last >= first and not (h[last, 0] > 0):
        last -= 1
    lo, hi = (first, last) if first <= last else (0, nb - 2)  # no rows: the value bins' ends
    if hi - lo <= 0:
        return -1
    return random_pick(lo, hi, u)


def random_pick(lo, hi, u):
    """The extremely randomised split between the codes ``lo`` < ``hi`` of a node: codes up to the one
    returned go left, drawn uniformly (``u``) among ``lo .. hi - 1``."""
    pick = lo + np.int64(math.floor(u * np.float64(hi - lo)))
    return min(pick, hi - 1)


def category_orderings(kind, n_channels):
    """How many orderings of a node's categories a categorical split search scans: one per class for
    more than two classes (a heuristic), else one (optimal for binary Gini, squared error and Newton)."""
    if kind <= MISCLASSIFICATION and n_channels - 1 > 2:
        return n_channels - 1
    return 1


def category_key(kind, s, k, n_out, l2, tmp):
    """The key of a category with statistics ``s`` in ordering ``k``: the rate of class ``k`` (of the last
    class with one ordering), the mean target over outputs, or Newton's value ``-G / (H + l2)``
    (:meth:`gputrees._criteria.Criterion.order_keys`, in its operation order; ``tmp``: work space of a
    channel per output)."""
    if kind <= MISCLASSIFICATION:
        ws = safe(criterion_weight(kind, s))
        n_classes = s.shape[0] - 1
        return s[n_classes if n_classes <= 2 else 1 + k] / ws
    if kind >= NEWTON:
        gi = newton_gradient_channel(kind)
        return newton_value(s[gi], newton_denominator(s[gi + 1], l2))
    ws = safe(s[1])
    if n_out == 1:  # the mean of one output (the sum's 0.0 + x aside, which only turns -0.0 into 0.0)
        return s[2] / ws
    for j in range(n_out):
        tmp[j] = s[2 + j] / ws
    return pairwise_sum(tmp, 0, n_out, False) / n_out


def key_before(a, b):
    """Whether key ``a`` sorts strictly before ``b`` in NumPy's order (NaN last)."""
    return a < b or (b != b and a == a)


def category_column(code, width):
    """The column of a tree's codes sent left (``cat_left``, ``width`` columns: a categorical feature's codes,
    then the missing bin) that holds bin ``code``: the code itself, the last column for the missing bin
    (whatever the number of bins)."""
    return code if code < width - 1 else width - 1


def split_threshold(feat, pos, nxt, has_next, thresholds, bin_values, is_exact):
    """The threshold of a numerical split at bin ``pos`` whose next value bin in the node is ``nxt``.

    Quantile bins: the bin's edge. Exactly binned features: the midpoint of
    the two values (scikit-learn's), or the lower one where the midpoint
    rounds up to the upper. ``inf`` where no value bin follows (only missing
    values go right).
    """
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
    mid = midpoint(lo, hi)
    return lo if mid == hi else mid


def midpoint(lo, hi):
    """The threshold between two values (scikit-learn's): their halves added, which does not overflow."""
    return lo / 2.0 + hi / 2.0


# -- draws keyed by a node's path (gputrees.kernels.node_draws) ------------------------------
def mix64(z):
    """SplitMix64's finaliser (wrapping uint64 arithmetic; a uint64 or an array of them)."""
    z = (z ^ (z >> _U30)) * MIX_1
    z = (z ^ (z >> _U27)) * MIX_2
    return z ^ (z >> _U31)


def draw_bits(key, d):
    """The 53 random bits (uint64) of draw ``d`` of the node with key ``key``."""
    return mix64(key + np.uint64(d + 1) * GOLDEN) >> _U11


def uniform(key, d):
    """Draw ``d`` of the node with key ``key``: a uniform in [0, 1)."""
    return np.float64(draw_bits(key, d)) * TO_UNIT


def child_key(key, side):
    """The key of a node's left (``side`` 0) or right child."""
    return mix64(key ^ (LEFT if side == 0 else RIGHT))


def draw_features(key, k, allowed, has_allowed, u, mask):
    """``mask`` (F,) = the ``k`` features drawn for the node with key ``key`` (``u`` (F,) float64: work space).

    The k smallest uniforms, ties to the lower feature, among the allowed
    features (all of them when fewer than k). Up to
    :data:`RANK_DRAW_FEATURES` features each uniform's 53 bits and its
    feature make one integer key (distinct, ordered as the uniforms and then
    the features), and a feature is drawn when fewer than k keys are below
    its own: a loop of compares that vectorises. Above, k passes of a
    running minimum.
    """
    F = mask.shape[0]
    if F <= RANK_DRAW_FEATURES:
        z = u.view(np.uint64)
        for f in range(F):
            z[f] = (draw_bits(key, f) << _U11) | np.uint64(f)
        if has_allowed:
            for f in range(F):
                if not allowed[f]:
                    z[f] = _LAST_KEY  # below no allowed feature's key
        if _rank_below_bound(z, k, mask):
            return
        for f in range(F):
            zf = z[f]
            r = 0
            for g in range(F):
                r += np.int64(z[g] < zf)
            mask[f] = (r < k) & (not has_allowed or allowed[f])
        return
    for f in range(F):
        u[f] = np.inf if has_allowed and not allowed[f] else uniform(key, f)
        mask[f] = False
    for _ in range(min(k, F)):
        best = 0
        for g in range(1, F):
            best = g if u[g] < u[best] else best
        if u[best] == np.inf:  # only features not allowed remain
            break
        mask[best] = True
        u[best] = np.inf


def _rank_below_bound(z, k, mask):
    """:func:`draw_features`' mask from the keys ``z`` (F,) ranked among those below a bound only, where at least
    ``k`` fall below it (then True; ``z`` is overwritten); else False, ``z`` and ``mask`` untouched.

    The keys are uniform: about ``k + 4 sqrt(k) + 4`` of F lie below the
    bound, and the k smallest among them are the k smallest of all. Ranking
    those few instead of every key against every other (F^2 compares, a
    forest node's largest cost at hundreds of features) draws the same mask.
    """
    F = z.shape[0]
    share = (k + 4.0 * math.sqrt(k) + 4.0) / F
    if share >= 0.5:
        return False
    bound = np.uint64(share * 18446744073709551616.0)  # below _LAST_KEY: no feature left out is a candidate
    m = 0
    for f in range(F):
        m += np.int64(z[f] < bound)
    if m < k:
        return False
    m = 0
    for f in range(F):
        if z[f] < bound:
            z[m] = z[f]  # m <= f: compacted in place
            m += 1
        mask[f] = False
    for i in range(m):
        zi = z[i]
        r = 0
        for j in range(m):
            r += np.int64(z[j] < zi)
        if r < k:
            mask[np.int64(zi & _FEATURE_BITS)] = True
    return True


# -- forests' bootstrap draws (gputrees._bootstrap) ------------------------------------
def sample_key(seed, t):
    """The key of tree ``t``'s bootstrap draws in a fit seeded with ``seed`` (uint64; arrays of them too)."""
    return mix64(mix64(seed ^ SAMPLE) + np.uint64(t + 1) * GOLDEN)


def sample_row(key, j, n):
    """The row (``0 .. n - 1``) that draw ``j`` of the tree with bootstrap key ``key`` picks: ``floor(u n)``
    of the draw's uniform ``u``; the bound keeps the row below ``n`` whatever the product's rounding."""
    return min(np.int64(math.floor(uniform(key, j) * np.float64(n))), n - 1)


# -- TreeSHAP's path weights (Lundberg et al. 2018, Algorithm 2) ----------------------
def shap_extend(pw, ud, z, o, inv):
    """EXTEND: element ``ud`` (zero fraction ``z``, one fraction ``o`` in {0, 1}) joins the weights ``pw[:ud]``.

    ``inv[m]`` is ``1 / m`` (multiplications, not divisions, in the loops).
    """
    pw[ud] = 0.0
    r = inv[ud + 1]
    for i in range(ud - 1, -1, -1):
        pw[i + 1] += o * pw[i] * (i + 1) * r
        pw[i] = z * pw[i] * (ud - i) * r


def shap_unwound_sum(pw, ud, z, o, inv):
    """UNWOUNDPATHSUM: the sum of the weights ``pw[:ud + 1]`` with an element (``z``, ``o``) taken out.

    ``o`` is 0 or 1; with ``o`` 0, ``z`` must not be 0 (such an element contributes nothing: skip it).
    """
    total = 0.0
    r = inv[ud + 1]
    if o != 0.0:
        nxt = pw[ud]
        for i in range(ud - 1, -1, -1):
            tmp = nxt * (ud + 1) * inv[i + 1]
            total += tmp
            nxt = pw[i] - tmp * z * (ud - i) * r
        return total
    for i in range(ud - 1, -1, -1):
        total += pw[i] * (ud + 1) * inv[ud - i]
    return total / z


def shap_unwind(pw, ud, z, o, inv, out):
    """UNWINDPATH into ``out[:ud]``: the weights with an element (``z``, ``o``; as :func:`shap_unwound_sum`)
    taken out."""
    r = inv[ud + 1]
    if o != 0.0:
        nxt = pw[ud]
        for i in range(ud - 1, -1, -1):
            out[i] = nxt * (ud + 1) * inv[i + 1]
            nxt = pw[i] - out[i] * z * (ud - i) * r
        return
    for i in range(ud - 1, -1, -1):
        out[i] = pw[i] * (ud + 1) * inv[ud - i] / z
