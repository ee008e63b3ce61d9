"""Boosting losses: baselines, gradients and hessians, loss values, link functions.

Every loss works on raw predictions ``raw`` of shape (n_samples, K) (K = 1
except for multi-class log-loss, K = n_classes), float64, in any array-API
namespace. Gradients and hessians are those of scikit-learn's half losses
(``_loss.HalfSquaredError``, ``HalfPoissonLoss``, ...), so learning rates mean
the same thing as in scikit-learn's HistGradientBoosting.

Losses whose gradient is not smooth (absolute error, quantile, Huber) use a
unit hessian to grow the tree and then re-estimate each leaf's value from the
residuals of its rows (weighted median / quantile, batched over the leaves),
as scikit-learn does.
"""

from __future__ import annotations

from ._records import LOSS_BINARY_LOG, LOSS_MULTINOMIAL, LOSS_SQUARED_ERROR
# the smallest log-loss hessian: where a probability saturates to 0 or 1 the
# hessian p (1 - p) underflows, and -G / H would blow up (XGBoost clamps the same way)
from .kernels.rules import MIN_HESSIAN, SEQUENTIAL_ROW_SUM

#: Probabilities of the baseline are clipped to [PROBA_EPS, 1 - PROBA_EPS]
#: so that a class of (near) zero weight gets a finite log-odds.
PROBA_EPS = 1e-15


def weighted_quantiles(xp, kernels, seg, values, weights, n_seg: int, alpha: float):
    """Weighted ``alpha``-quantile of ``values`` within each segment, batched.

    The quantile is the smallest value whose cumulative weight (values sorted
    ascending in their segment) reaches ``alpha`` times the segment's weight
    (the "inverted CDF"; the lower median for ``alpha = 0.5`` and equal
    weights). Rows of weight 0 are ignored.

    Parameters
    ----------
    seg : array of shape (n,), int64, in ``[0, n_seg)``
    values, weights : arrays of shape (n,), float64
    n_seg : int
    alpha : float in [0, 1]

    Returns
    -------
    quantiles : array of shape (n_seg,), float64
        0 for segments without weight.
    """
    keep = xp.astype(xp.nonzero(weights > 0)[0], xp.int64)
    seg, values, weights = xp.take(seg, keep), xp.take(values, keep), xp.take(weights, keep)
    n = int(seg.shape[0])
    if n == 0:
        return xp.zeros(n_seg, dtype=xp.float64)
    o1 = xp.argsort(values, stable=True)
    o2 = xp.argsort(xp.take(seg, o1), stable=True)
    order = xp.take(o1, o2)
    seg_s, val_s, w_s = xp.take(seg, order), xp.take(values, order), xp.take(weights, order)
    cum = kernels.segmented_cumsum(xp, w_s, seg_s, n)
    last = xp.astype(xp.searchsorted(seg_s, seg_s, side="right"), xp.int64) - 1
    total = xp.take(cum, last)
    # a relative slack so that rounding in the running sum cannot skip the exact position
    reached = cum >= alpha * total * (1.0 - 1e-12)
    pos = xp.astype(xp.arange(n, dtype=xp.int64), xp.float64)
    key = xp.where(reached, pos, xp.full_like(pos, float(n - 1)))
    first = xp.astype(kernels.segment_min(xp, key, seg_s, n), xp.int64)
    first = xp.minimum(first, last)
    start = xp.astype(xp.searchsorted(seg_s, seg_s, side="left"), xp.int64)
    is_start = start == xp.arange(n, dtype=xp.int64)
    idx = xp.astype(xp.nonzero(is_start)[0], xp.int64)
    present = xp.take(seg_s, idx)
    q = xp.take(val_s, xp.take(first, idx))
    return _scatter_sorted(xp, present, q, n_seg)


def segment_sums(xp, kernels, seg, values, n_seg: int):
    """Sum of ``values`` (n,) per segment ``seg`` (n,) int64; returns (n_seg,) float64."""
    one = xp.zeros((seg.shape[0], 1), dtype=xp.uint8)
    rows = xp.arange(seg.shape[0], dtype=xp.int64)
    h = kernels.build_histograms(xp, one, rows, seg, values[:, None], n_seg, 1)
    return xp.reshape(h, (n_seg,))


def _scatter_sorted(xp, keys, vals, n: int):
    """Dense (n,) array with ``vals`` at the sorted unique ``keys``, 0 elsewhere."""
    ids = xp.arange(n, dtype=xp.int64)
    if int(keys.shape[0]) == 0:
        return xp.zeros(n, dtype=xp.float64)
    pos = xp.clip(xp.astype(xp.searchsorted(keys, ids), xp.int64), 0, keys.shape[0] - 1)
    hit = xp.take(keys, pos) == ids
    return xp.where(hit, xp.take(vals, pos), xp.zeros(n, dtype=xp.float64))


def _wmean(xp, a, w):
    return xp.sum(a * w) / xp.sum(w)


def _row_max(xp, a):
    """``xp.max(a, axis=1)`` as a running maximum over the columns: the same values, without NumPy's reduction
    along a short row (a 10,000 x 5 array's: 0.33 ms against 0.04)."""
    m = a[:, 0]
    for k in range(1, int(a.shape[1])):
        m = xp.maximum(m, a[:, k])
    return m


def _row_sum(xp, a):
    """``xp.sum(a, axis=1)``; a row of fewer than :data:`~gputrees.kernels.rules.SEQUENTIAL_ROW_SUM` values added
    column after column, in NumPy's order (the same bits) and four times as fast."""
    if int(a.shape[1]) >= SEQUENTIAL_ROW_SUM:
        return xp.sum(a, axis=1)
    s = a[:, 0]
    for k in range(1, int(a.shape[1])):
        s = s + a[:, k]
    return s


class Loss:
    """A boosting loss for raw predictions of shape (n, K)."""

    name = ""
    #: leaves are re-estimated from residuals after growth
    needs_leaf_update = False
    #: whether ``mean_loss`` is the loss's own value (a callable loss's is the fit's metric, see CallableLoss)
    has_value = True
    #: whether a row's hessian is its weight (1 for an unweighted row), whatever the raw prediction
    hessian_is_weight = False
    n_trees_per_round = 1
    #: the code of a compiled round end (:func:`gputrees._records.loss_code`), set by the classes that have one
    code = None

    def baseline(self, xp, kernels, y, w):
        """Initial raw prediction, shape (K,), float64 (the best constant)."""
        raise NotImplementedError  # abstract

    def gradients(self, xp, raw, y, w):
        """Weighted gradients and hessians, each of shape (n, K), float64."""
        raise NotImplementedError  # abstract

    def loss(self, xp, raw, y, w) -> float:
        """Weighted mean loss (a host float)."""
        return float(self.mean_loss(xp, raw, y, w))

    def mean_loss(self, xp, raw, y, w):
        """Weighted mean loss as a 0-d array of ``xp`` (on the device: no host read)."""
        return _wmean(xp, self.pointwise(xp, raw, y), w)

    def pointwise(self, xp, raw, y):
        """Per-row loss, shape (n,)."""
        raise NotImplementedError  # abstract

    def leaf_estimates(self, xp, kernels, leaf, raw, y, w, n_nodes):
        """Re-estimated value of every node, shape (n_nodes,) (only when ``needs_leaf_update``)."""
        raise NotImplementedError  # abstract


class SquaredError(Loss):
    """Half squared error ``(y - raw)^2 / 2``; identity link."""

    name = "squared_error"
    code = LOSS_SQUARED_ERROR
    hessian_is_weight = True

    def baseline(self, xp, kernels, y, w):
        return xp.reshape(_wmean(xp, y, w), (1,))

    def gradients(self, xp, raw, y, w):
        g = (raw[:, 0] - y) * w
        return g[:, None], w[:, None]

    def pointwise(self, xp, raw, y):
        r = raw[:, 0] - y
        return 0.5 * r * r


class ResidualLoss(Loss):
    """Losses grown with a unit hessian whose leaves are re-estimated from residuals."""

    needs_leaf_update = True
    hessian_is_weight = True
    alpha = 0.5

    def baseline(self, xp, kernels, y, w):
        seg = xp.zeros(y.shape[0], dtype=xp.int64)
        return weighted_quantiles(xp, kernels, seg, y, w, 1, self.alpha)

    def leaf_estimates(self, xp, kernels, leaf, raw, y, w, n_nodes):
        return weighted_quantiles(xp, kernels, leaf, y - raw[:, 0], w, n_nodes, self.alpha)


class AbsoluteError(ResidualLoss):
    """``|y - raw|``; leaves are the weighted median of their residuals."""

    name = "absolute_error"

    def gradients(self, xp, raw, y, w):
        g = xp.sign(raw[:, 0] - y) * w
        return g[:, None], w[:, None]

    def pointwise(self, xp, raw, y):
        return xp.abs(y - raw[:, 0])


class Quantile(ResidualLoss):
    """Pinball loss of level ``alpha``; leaves are the weighted alpha-quantile of their residuals."""

    name = "quantile"

    def __init__(self, alpha: float):
        self.alpha = float(alpha)

    def gradients(self, xp, raw, y, w):
        above = y > raw[:, 0]
        g = xp.where(above, xp.full_like(y, -self.alpha), xp.full_like(y, 1.0 - self.alpha)) * w
        return g[:, None], w[:, None]

    def pointwise(self, xp, raw, y):
        r = y - raw[:, 0]
        return xp.where(r >= 0, self.alpha * r, (self.alpha - 1.0) * r)


class Huber(ResidualLoss):
    """Huber loss with ``delta`` the weighted ``alpha``-quantile of ``|y - raw|``, re-set each round.

    Friedman's (2001) M-regression, as scikit-learn's
    ``GradientBoostingRegressor(loss="huber")``: gradients are the residuals
    clipped to ``delta``; a leaf's value is the median of its residuals plus
    the mean of their deviations from that median clipped to ``delta``.
    """

    name = "huber"

    def __init__(self, alpha: float, kernels):
        self.quantile = float(alpha)
        self.kernels = kernels
        self.delta = None  # set by gradients() every round

    def baseline(self, xp, kernels, y, w):
        seg = xp.zeros(y.shape[0], dtype=xp.int64)
        return weighted_quantiles(xp, kernels, seg, y, w, 1, 0.5)

    def _set_delta(self, xp, raw, y, w):
        seg = xp.zeros(y.shape[0], dtype=xp.int64)
        self.delta = weighted_quantiles(xp, self.kernels, seg, xp.abs(y - raw[:, 0]), w, 1, self.quantile)[0]

    def gradients(self, xp, raw, y, w):
        self._set_delta(xp, raw, y, w)
        return self.clipped_gradients(xp, raw, y, w)

    def clipped_gradients(self, xp, raw, y, w):
        """The gradients and hessians with ``delta`` as it is set (gputrees.dask sets it from every worker's
        residuals)."""
        r = y - raw[:, 0]
        g = -xp.clip(r, -self.delta, self.delta) * w
        return g[:, None], w[:, None]

    def pointwise(self, xp, raw, y):
        r = xp.abs(y - raw[:, 0])
        d = self.delta if self.delta is not None else xp.asarray(xp.inf, dtype=xp.float64)
        return xp.where(r <= d, 0.5 * r * r, d * (r - 0.5 * d))

    def leaf_estimates(self, xp, kernels, leaf, raw, y, w, n_nodes):
        r = y - raw[:, 0]
        med = weighted_quantiles(xp, kernels, leaf, r, w, n_nodes, 0.5)
        num, den = self.deviation_sums(xp, kernels, leaf, r, w, med, n_nodes)
        return self.leaf_values_from(xp, med, num, den)

    def deviation_sums(self, xp, kernels, leaf, r, w, med, n_nodes):
        """Per leaf: the weighted sum of the residuals' deviations from ``med`` clipped to ``delta``, and the
        weight."""
        dev = xp.clip(r - xp.take(med, leaf), -self.delta, self.delta)
        return segment_sums(xp, kernels, leaf, dev * w, n_nodes), segment_sums(xp, kernels, leaf, w, n_nodes)

    @staticmethod
    def leaf_values_from(xp, med, num, den):
        """Friedman's leaf value: the median plus the mean clipped deviation (``med`` where a leaf has no weight)."""
        return med + xp.where(den > 0, num / xp.where(den > 0, den, xp.ones_like(den)), xp.zeros_like(den))


class Poisson(Loss):
    """Half Poisson deviance, log link: ``exp(raw) - y * raw``."""

    name = "poisson"

    def baseline(self, xp, kernels, y, w):
        return xp.reshape(xp.log(_wmean(xp, y, w)), (1,))

    def gradients(self, xp, raw, y, w):
        mu = xp.exp(raw[:, 0])
        return ((mu - y) * w)[:, None], (mu * w)[:, None]

    def pointwise(self, xp, raw, y):
        return xp.exp(raw[:, 0]) - y * raw[:, 0]


class Gamma(Loss):
    """Half gamma deviance, log link: ``raw + y * exp(-raw)``."""

    name = "gamma"

    def baseline(self, xp, kernels, y, w):
        return xp.reshape(xp.log(_wmean(xp, y, w)), (1,))

    def gradients(self, xp, raw, y, w):
        t = y * xp.exp(-raw[:, 0])
        return ((1.0 - t) * w)[:, None], (t * w)[:, None]

    def pointwise(self, xp, raw, y):
        return raw[:, 0] + y * xp.exp(-raw[:, 0])


class BinaryLogLoss(Loss):
    """Binary cross-entropy, logit link; ``y`` in {0, 1}."""

    name = "log_loss"
    code = LOSS_BINARY_LOG

    def baseline(self, xp, kernels, y, w):
        p = xp.clip(_wmean(xp, y, w), PROBA_EPS, 1.0 - PROBA_EPS)
        return xp.reshape(xp.log(p / (1.0 - p)), (1,))

    def gradients(self, xp, raw, y, w):
        p = 1.0 / (1.0 + xp.exp(-raw[:, 0]))
        h = xp.maximum(p * (1.0 - p), xp.asarray(MIN_HESSIAN, dtype=p.dtype))
        return ((p - y) * w)[:, None], (h * w)[:, None]

    def pointwise(self, xp, raw, y):
        r = raw[:, 0]
        # log(1 + e^r) as max(r, 0) + log1p(e^-|r|): the same formula as
        # logaddexp(0, r) (within a few ulps), but vectorised exp/log1p make it
        # ~2.5x faster in NumPy, and train_score_ evaluates it every round
        return xp.maximum(r, xp.zeros_like(r)) + xp.log1p(xp.exp(-xp.abs(r))) - y * r

    def proba(self, xp, raw):
        p = 1.0 / (1.0 + xp.exp(-raw[:, 0]))
        return xp.stack([1.0 - p, p], axis=1)


class MultinomialLogLoss(Loss):
    """Multi-class cross-entropy, softmax link; ``y`` the class codes 0..K-1.

    Hessians are the diagonal ``p_k (1 - p_k)``, as scikit-learn's
    HistGradientBoosting (XGBoost doubles them; LightGBM scales them by
    ``K / (K - 1)``).
    """

    name = "log_loss"
    code = LOSS_MULTINOMIAL

    def __init__(self, n_classes: int):
        self.n_trees_per_round = int(n_classes)

    def _onehot(self, xp, y):
        k = xp.arange(self.n_trees_per_round, dtype=xp.float64)
        return xp.astype(y[:, None] == k[None, :], xp.float64)

    def baseline(self, xp, kernels, y, w):
        p = xp.sum(self._onehot(xp, y) * w[:, None], axis=0) / xp.sum(w)
        p = xp.clip(p, PROBA_EPS, 1.0)
        return xp.log(p)

    def proba(self, xp, raw):
        e = xp.exp(raw - _row_max(xp, raw)[:, None])
        return e / _row_sum(xp, e)[:, None]

    def gradients(self, xp, raw, y, w):
        p = self.proba(xp, raw)
        h = xp.maximum(p * (1.0 - p), xp.asarray(MIN_HESSIAN, dtype=p.dtype))
        return (p - self._onehot(xp, y)) * w[:, None], h * w[:, None]

    def pointwise(self, xp, raw, y):
        m = _row_max(xp, raw)
        lse = xp.log(_row_sum(xp, xp.exp(raw - m[:, None]))) + m
        # each row's logit of its class (the one-hot product's row sum: that value plus zeros, the same bits)
        return lse - xp.take_along_axis(raw, xp.astype(y, xp.int64)[:, None], axis=1)[:, 0]


#: Newton steps at most, and their relative tolerance, of a callable loss's baseline
BASELINE_NEWTON_STEPS = 100
BASELINE_TOL = 1e-12


class CallableLoss(Loss):
    """A user's objective ``func(y_true, raw_prediction, sample_weight) -> (gradient, hessian)``.

    ``func`` gets the arrays of the fit's namespace (NumPy, or CuPy on the
    GPU): the encoded targets (a classifier's class indices, float64), the
    raw predictions -- shape (n,) with one output (regression, binary
    log-odds), (n, K) with K (multi-class logits) -- and the rows' weights;
    it returns the gradient and hessian of its loss at the raw predictions,
    already multiplied by ``sample_weight`` (as the built-in losses' are),
    each of the raw predictions' shape. It must not modify its arguments.
    Every call is checked: a wrong shape, a NaN or infinity, or a negative
    hessian is a ValueError naming the round.

    It has no compiled round end (no ``code``), so its fits take the generic
    round path. It has no value either: ``mean_loss`` is what the fit sets
    in ``value`` (its early-stopping metric on the rows, lower is better).

    Parameters
    ----------
    func : callable
    n_trees : int
        Outputs (trees a round): 1, or K for multi-class classification.
    first_round : int
        The round the fit's first ``gradients`` call is for (rounds already fitted with ``warm_start``).
    """

    name = "custom"
    has_value = False

    def __init__(self, func, n_trees: int = 1, first_round: int = 0):
        self.func = func
        self.n_trees_per_round = int(n_trees)
        self.next_round = int(first_round)
        #: ``value(xp, raw, y, w)``: a lower-is-better number of the rows, set by the fit
        self.value = None

    def checked_gradients(self, xp, raw, y, w, where: str):
        """``func``'s gradient and hessian at raw predictions (n, K), as (n, K) arrays, checked (a ValueError
        ending with ``where`` otherwise)."""
        arg = raw[:, 0] if self.n_trees_per_round == 1 else raw
        out = self.func(y, arg, w)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise ValueError(f"the loss callable must return (gradient, hessian); it returned {type(out).__name__} "
                             f"{where}")
        g, h = (xp.asarray(a, dtype=xp.float64) for a in out)
        for label, a in (("gradient", g), ("hessian", h)):
            if tuple(a.shape) != tuple(arg.shape):
                raise ValueError(f"the loss callable's {label} has shape {tuple(a.shape)}, expected "
                                 f"{tuple(arg.shape)} (the raw prediction's) {where}")
            if not bool(xp.all(xp.isfinite(a))):
                raise ValueError(f"the loss callable's {label} has NaN or infinite values {where}")
        if bool(xp.any(h < 0)):
            raise ValueError(f"the loss callable's hessian has negative values {where}")
        k = self.n_trees_per_round
        return xp.reshape(g, (-1, k)), xp.reshape(h, (-1, k))

    def gradients(self, xp, raw, y, w):
        it = self.next_round
        self.next_round += 1
        return self.checked_gradients(xp, raw, y, w, f"for boosting round {it} (0-based)")

    def gradient_sums(self, xp, b, y, w, where: str):
        """The summed gradient and hessian (K,) of rows ``y``, ``w`` at the constant raw prediction ``b`` (K,)."""
        raw = xp.broadcast_to(b[None, :], (int(y.shape[0]), self.n_trees_per_round))
        g, h = self.checked_gradients(xp, raw, y, w, where)
        return xp.sum(g, axis=0), xp.sum(h, axis=0)

    def baseline(self, xp, kernels, y, w):
        return self.newton_baseline(xp, lambda b, where: self.gradient_sums(xp, b, y, w, where))

    def newton_baseline(self, xp, sums):
        """The weighted minimiser of the loss over constants: Newton steps ``-sum(g) / sum(h)`` from zero, per
        output, until the next step is below ``BASELINE_TOL`` relative (at most ``BASELINE_NEWTON_STEPS``).

        ``sums(b, where)`` gives the rows' summed gradient and hessian at ``b`` (:meth:`gradient_sums`, or
        their sums over the workers' rows)."""
        b = xp.zeros(self.n_trees_per_round, dtype=xp.float64)
        for step in range(BASELINE_NEWTON_STEPS):
            gs, hs = sums(b, f"while finding the baseline (Newton step {step} from zero)")
            if not bool(xp.all(hs > 0)):
                raise ValueError("the loss callable's hessian sums to 0 at the baseline: pass baseline= to the "
                                 "estimator")
            delta = -gs / hs
            # converged at b: a step within the tolerance is rounding (kept out, so that a quadratic loss
            # ends exactly on its first step's weighted mean)
            if step > 0 and bool(xp.all(xp.abs(delta) <= BASELINE_TOL * (1.0 + xp.abs(b)))):
                return b
            b = b + delta
        raise ValueError(f"the baseline's Newton steps did not converge in {BASELINE_NEWTON_STEPS} steps: pass "
                         "baseline= to the estimator")

    def mean_loss(self, xp, raw, y, w):
        return self.value(xp, raw, y, w)


def make_regression_loss(name: str, alpha: float, kernels) -> Loss:
    """The regression loss called ``name`` (``alpha``: quantile level / Huber quantile)."""
    if name == "squared_error":
        return SquaredError()
    if name == "absolute_error":
        return AbsoluteError()
    if name == "quantile":
        return Quantile(alpha)
    if name == "huber":
        return Huber(alpha, kernels)
    if name == "poisson":
        return Poisson()
    if name == "gamma":
        return Gamma()
    raise ValueError(f"unknown loss {name!r}")


REGRESSION_LOSSES = ("squared_error", "absolute_error", "huber", "quantile", "poisson", "gamma")
