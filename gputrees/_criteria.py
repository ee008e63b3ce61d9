"""Split criteria: they turn summed per-row channels into impurities, gains and leaf values.

Every model grows trees from per-row *channels*; a node's (or a histogram
bin's) statistics are the sums of its rows' channels. Channel 0 is always the
row count (a bootstrap multiplicity, for forests), so ``min_samples_leaf`` and
``n_node_samples`` come from the same histogram as everything else.

======================  ===================================================
criterion               channels after the count
======================  ===================================================
classification          ``w * [y == k]`` for each class ``k``
squared_error,          ``w``, ``w * y_j`` for each output ``j``,
friedman_mse            ``w * y_j ** 2`` for each output ``j``
poisson                 ``w``, ``w * y_j``, ``w * y_j * log(y_j)`` (0 at 0)
newton (boosting)       ``w * g`` (gradient), ``w * h`` (hessian)
======================  ===================================================

Boosting's histograms may leave the count out where no split test reads it
(see :class:`gputrees._grower.Grower`): :class:`NewtonGH` is the Newton
criterion over ``[G, H]`` (``has_count`` False).

All methods take statistics of shape ``(..., n_channels)`` and broadcast over
the leading axes; they use only array-API functions. The formulas follow
scikit-learn's ``_criterion.pyx`` so that the same splits are chosen.
"""

from __future__ import annotations

from . import _records as codes
from .kernels import rules
from .kernels.rules import EPSILON, NEWTON_GAIN_RTOL, POISSON_EPSILON, UNROLL_CHANNELS


def _safe(xp, w):
    return xp.where(w > 0, w, xp.asarray(1.0, dtype=w.dtype))


def _channel_sum(xp, a, square=False):
    """Sum over the last axis of ``a`` (of its squares with ``square``)."""
    k = a.shape[-1]
    # a chain of elementwise adds up to UNROLL_CHANNELS: a reduction over a short trailing axis is several
    # times slower in NumPy than the adds
    if k > UNROLL_CHANNELS:
        return xp.sum(a * a if square else a, axis=-1)
    # (the first addition makes a new array, the others add to it in place: one array the size of the sum, not one
    # an addition; a forest's node values sum millions of rows)
    out = None
    for j in range(k):
        v = a[..., j]
        v = v * v if square else v
        if out is None:
            out = v
        elif j == 1:
            out = out + v
        else:
            out += v
    return out


class Criterion:
    """Base class. ``n_outputs`` outputs (regression) or ``n_classes`` classes."""

    name = ""
    #: the compiled rules' code of the criterion (:func:`gputrees._records.criterion_code`); None: not compiled
    code = None
    is_classification = False
    #: channel 0 is the row count (every criterion but :class:`NewtonGH`)
    has_count = True
    #: a split's children may take their statistics from the split's search
    #: (the left sum of its histogram and the node's minus it, as XGBoost and
    #: LightGBM do) instead of summing their rows: rounding moves them by a
    #: few ulps, which only moves values and gains smoothly. Not for the
    #: impurity criteria: a subtraction leaves an absent class a -1e-14 weight
    #: and a pure node a non-zero impurity.
    stats_from_split = False

    def __init__(self, n_outputs: int = 1, n_classes: int = 1):
        self.n_outputs = n_outputs
        self.n_classes = n_classes

    # -- layout -----------------------------------------------------------
    @property
    def n_channels(self) -> int:
        raise NotImplementedError  # abstract

    def row_channels(self, xp, y, w):
        """Per-row channels.

        Parameters
        ----------
        y : array of shape (n_samples,), int64 class codes (classification),
            or (n_samples, n_outputs), float64 (regression)
        w : array of shape (n_samples,), float64 sample weights

        Returns
        -------
        array of shape (n_samples, n_channels), float64
        """
        raise NotImplementedError  # abstract

    def weight(self, xp, s):
        """Weighted number of samples, shape ``s.shape[:-1]``."""
        raise NotImplementedError  # abstract

    def without_count(self):
        """The criterion over the channels after the count, or None where it needs the count."""
        return None

    def impurity(self, xp, s):
        raise NotImplementedError  # abstract

    def value(self, xp, s):
        """Node value, shape ``s.shape[:-1] + (n_outputs, n_classes_or_1)``."""
        raise NotImplementedError  # abstract

    def order_keys(self, xp, s):
        """Keys that order categories for categorical splits, shape ``s.shape[:-1] + (K,)``."""
        raise NotImplementedError  # abstract

    def splittable(self, xp, s):
        """Nodes worth searching a split for: impure ones (scikit-learn's ``impurity > EPSILON``)."""
        return self.impurity(xp, s) > EPSILON

    def accept(self, xp, improvement, proxy, min_decrease):
        """Whether a found split is kept: scikit-learn's ``improvement + EPSILON >= min_impurity_decrease``."""
        return rules.impurity_accept(improvement, min_decrease)

    # -- gains ------------------------------------------------------------
    def proxy(self, xp, left, right):
        """A quantity whose argmax over candidate splits is the best split.

        scikit-learn's ``proxy_impurity_improvement``: ``-(w_l * i_l + w_r * i_r)``.
        """
        wl, wr = self.weight(xp, left), self.weight(xp, right)
        return -(wr * self.impurity(xp, right)) - wl * self.impurity(xp, left)

    def improvement(self, xp, parent, left, right, total_weight):
        """scikit-learn's ``impurity_improvement``: the weighted impurity decrease.

        ``w / W * (i - w_r / w * i_r - w_l / w * i_l)`` with ``W`` the total weight.
        """
        w = self.weight(xp, parent)
        wl, wr = self.weight(xp, left), self.weight(xp, right)
        return rules.weighted_decrease(w, total_weight, _safe(xp, w), self.impurity(xp, parent), wl,
                                       self.impurity(xp, left), wr, self.impurity(xp, right))


class _ClassificationCriterion(Criterion):
    is_classification = True

    @property
    def n_channels(self) -> int:
        return 1 + self.n_classes

    def row_channels(self, xp, y, w):
        k = xp.arange(self.n_classes, dtype=xp.int64)
        onehot = xp.astype(y[:, None] == k[None, :], xp.float64)
        ones = xp.ones((y.shape[0], 1), dtype=xp.float64)
        return xp.concat([ones, onehot * w[:, None]], axis=1)

    def weight(self, xp, s):
        return _channel_sum(xp, s[..., 1:])

    def _fractions(self, xp, s):
        w = self.weight(xp, s)
        return s[..., 1:] / _safe(xp, w)[..., None]

    def value(self, xp, s):
        return self._fractions(xp, s)[..., None, :]

    def order_keys(self, xp, s):
        p = self._fractions(xp, s)
        if self.n_classes <= 2:
            # binary: one ordering by the rate of the second class (optimal for gini)
            return p[..., -1:]
        # multi-class heuristic: one ordering per class (by that class's rate),
        # the best split over all of them is kept
        return p


class Gini(_ClassificationCriterion):
    name = "gini"
    code = codes.GINI

    def impurity(self, xp, s):
        w = _safe(xp, self.weight(xp, s))
        return rules.gini_impurity(_channel_sum(xp, s[..., 1:], square=True), w)

    def proxy(self, xp, left, right):
        # -(w_l * gini_l + w_r * gini_r) = sum_k L_k^2 / w_l + sum_k R_k^2 / w_r - w:
        # the node's constant ``w`` is dropped (it does not change the argmax).
        wl = _safe(xp, self.weight(xp, left))
        wr = _safe(xp, self.weight(xp, right))
        sl = _channel_sum(xp, left[..., 1:], square=True)
        sr = _channel_sum(xp, right[..., 1:], square=True)
        return rules.sum_sq_proxy(sl, sr, wl, wr)


class Entropy(_ClassificationCriterion):
    """Shannon entropy in bits (scikit-learn's ``entropy`` / ``log_loss``)."""

    name = "entropy"
    code = codes.ENTROPY

    def impurity(self, xp, s):
        p = self._fractions(xp, s)
        safe_p = xp.where(p > 0, p, xp.ones_like(p))
        return -xp.sum(rules.entropy_term(p, xp.log(safe_p)), axis=-1)


class Misclassification(_ClassificationCriterion):
    """Classification error ``1 - max_k p_k`` (the course notes' third criterion)."""

    name = "misclassification"
    code = codes.MISCLASSIFICATION

    def impurity(self, xp, s):
        return 1.0 - xp.max(self._fractions(xp, s), axis=-1)


class _RegressionCriterion(Criterion):
    @property
    def n_channels(self) -> int:
        return 2 + 2 * self.n_outputs

    def _third(self, xp, y):
        return y * y

    def row_channels(self, xp, y, w):
        ones = xp.ones((y.shape[0], 1), dtype=xp.float64)
        wy = y * w[:, None]
        return xp.concat([ones, w[:, None], wy, self._third(xp, y) * w[:, None]], axis=1)

    def weight(self, xp, s):
        return s[..., 1]

    def _sums(self, s):
        return s[..., 2 : 2 + self.n_outputs]

    def value(self, xp, s):
        return (self._sums(s) / _safe(xp, self.weight(xp, s))[..., None])[..., None]

    def order_keys(self, xp, s):
        mean = self._sums(s) / _safe(xp, self.weight(xp, s))[..., None]
        return xp.mean(mean, axis=-1, keepdims=True)


class SquaredError(_RegressionCriterion):
    name = "squared_error"
    code = codes.SQUARED_ERROR

    def impurity(self, xp, s):
        w = _safe(xp, self.weight(xp, s))
        sums = self._sums(s)
        sq = s[..., 2 + self.n_outputs :]
        per_output = rules.variance(sq, sums, w[..., None])
        return xp.sum(per_output, axis=-1) / self.n_outputs

    def proxy(self, xp, left, right):
        # scikit-learn's MSE proxy: sum_k S_l,k^2 / w_l + S_r,k^2 / w_r
        wl = _safe(xp, self.weight(xp, left))
        wr = _safe(xp, self.weight(xp, right))
        sl, sr = self._sums(left), self._sums(right)
        return rules.sum_sq_proxy(_channel_sum(xp, sl, square=True), _channel_sum(xp, sr, square=True), wl, wr)


class FriedmanMSE(SquaredError):
    """Friedman's improvement score: ``(w_r S_l - w_l S_r)^2 / (w_l w_r)``.

    For one output it orders splits like ``squared_error`` (scikit-learn 1.9
    made the two names synonyms for that reason); with several outputs the
    target sums are added over outputs first, as in Friedman (2001).
    """

    name = "friedman_mse"
    code = codes.FRIEDMAN_MSE

    def proxy(self, xp, left, right):
        wl = _safe(xp, self.weight(xp, left))
        wr = _safe(xp, self.weight(xp, right))
        return rules.friedman_proxy(xp.sum(self._sums(left), axis=-1), xp.sum(self._sums(right), axis=-1), wl, wr)

    def improvement(self, xp, parent, left, right, total_weight):
        wl = _safe(xp, self.weight(xp, left))
        wr = _safe(xp, self.weight(xp, right))
        w = _safe(xp, self.weight(xp, parent))
        diff = (
            wr * xp.sum(self._sums(left), axis=-1) - wl * xp.sum(self._sums(right), axis=-1)
        ) / self.n_outputs
        return diff * diff / (wl * wr * w)


class Poisson(_RegressionCriterion):
    """Half Poisson deviance; children whose target sum is ~0 are not allowed."""

    name = "poisson"
    code = codes.POISSON

    def _third(self, xp, y):
        safe_y = xp.where(y > 0, y, xp.ones_like(y))
        return xp.where(y > 0, y * xp.log(safe_y), xp.zeros_like(y))

    def impurity(self, xp, s):
        w = _safe(xp, self.weight(xp, s))
        sums = self._sums(s)
        ylogy = s[..., 2 + self.n_outputs :]
        ok = sums > POISSON_EPSILON
        safe_sums = xp.where(ok, sums, xp.ones_like(sums))
        loss = ylogy - rules.poisson_term(sums, xp.log(safe_sums / w[..., None]))
        total = xp.sum(loss, axis=-1) / (w * self.n_outputs)
        return xp.where(xp.all(ok, axis=-1), total, xp.full_like(total, xp.inf))

    def proxy(self, xp, left, right):
        wl = _safe(xp, self.weight(xp, left))
        wr = _safe(xp, self.weight(xp, right))
        sl, sr = self._sums(left), self._sums(right)
        ok = xp.all((sl > POISSON_EPSILON) & (sr > POISSON_EPSILON), axis=-1)
        sl_s = xp.where(sl > POISSON_EPSILON, sl, xp.ones_like(sl))
        sr_s = xp.where(sr > POISSON_EPSILON, sr, xp.ones_like(sr))
        val = xp.sum(rules.poisson_term(sl_s, xp.log(sl_s / wl[..., None])), axis=-1) + xp.sum(
            rules.poisson_term(sr_s, xp.log(sr_s / wr[..., None])), axis=-1
        )
        return xp.where(ok, val, xp.full_like(val, -xp.inf))


CLASSIFICATION_CRITERIA = {
    "gini": Gini,
    "entropy": Entropy,
    "log_loss": Entropy,
    "misclassification": Misclassification,
}
REGRESSION_CRITERIA = {
    "squared_error": SquaredError,
    "friedman_mse": FriedmanMSE,
    "poisson": Poisson,
}


class Newton(Criterion):
    """Second-order (Newton) boosting statistics, as XGBoost and LightGBM.

    Channels: row count, ``G = sum w * g`` and ``H = sum w * h``. A node's
    value is ``-G / (H + l2)``, its score ``G^2 / (H + l2)``; the gain of a
    split is ``score(left) + score(right) - score(node)`` (XGBoost's
    ``loss_chg``, without the factor 1/2). ``weight`` is the hessian sum, so
    ``min_weight_leaf`` is XGBoost's ``min_child_weight``. A split is kept
    when its gain is strictly above ``min_decrease`` (``min_split_gain``).
    """

    name = "newton"
    code = codes.NEWTON
    #: positions of G and H among the channels
    _G, _H = 1, 2
    #: values -G / (H + l2) and scores are smooth in the sums; the grower
    #: takes them from the split only where ``min_weight_leaf > 0`` bounds
    #: every child's H away from 0 (see :class:`gputrees._grower.Grower`)
    stats_from_split = True

    def __init__(self, l2_regularization: float = 0.0):
        super().__init__(n_outputs=1, n_classes=1)
        self.l2 = float(l2_regularization)

    @property
    def n_channels(self) -> int:
        return 3

    def row_channels(self, xp, g, h):
        """Channels (n, 3) from weighted gradients ``g`` and hessians ``h`` (n,)."""
        return xp.stack([xp.ones_like(g), g, h], axis=1)

    def without_count(self) -> "NewtonGH":
        """The same criterion over histograms of ``[G, H]`` only (channels 1 and 2)."""
        return NewtonGH(self.l2)

    def weight(self, xp, s):
        return s[..., self._H]

    def _den(self, xp, s):
        d = s[..., self._H] + self.l2
        return xp.where(d > 0, d, xp.ones_like(d))

    def leaf_value(self, xp, s):
        """``-G / (H + l2)``, shape ``s.shape[:-1]``."""
        return rules.newton_value(s[..., self._G], self._den(xp, s))

    def value(self, xp, s):
        return self.leaf_value(xp, s)[..., None, None]

    def score(self, xp, s):
        """``G^2 / (H + l2)`` (twice the loss decrease of the optimal leaf value)."""
        return rules.newton_score(s[..., self._G], self._den(xp, s))

    def impurity(self, xp, s):
        """``-G^2 / (2 (H + l2))``: the second-order loss of the node at its optimal value."""
        return -0.5 * self.score(xp, s)

    def splittable(self, xp, s):
        return s[..., self._H] > 0

    def accept(self, xp, improvement, proxy, min_decrease):
        return improvement > xp.maximum(
            xp.asarray(float(min_decrease), dtype=improvement.dtype), NEWTON_GAIN_RTOL * xp.abs(proxy)
        )

    def order_keys(self, xp, s):
        # categories ordered by their optimal value (LightGBM's G / H order)
        return self.leaf_value(xp, s)[..., None]

    def proxy(self, xp, left, right):
        return self.score(xp, left) + self.score(xp, right)

    def improvement(self, xp, parent, left, right, total_weight):
        return self.score(xp, left) + self.score(xp, right) - self.score(xp, parent)

    def gain_at(self, xp, s, v):
        """Score of a node whose value is forced to ``v``: ``-(2 G v + (H + l2) v^2)``."""
        return rules.newton_gain_at(s[..., self._G], s[..., self._H], self.l2, v)

    def bounded_gain(self, xp, s, lower, upper):
        """Score of nodes whose value is clipped to ``[lower, upper]`` (shape ``s.shape[:-1]``)."""
        return self.gain_at(xp, s, xp.clip(self.leaf_value(xp, s), lower, upper))


class NewtonGH(Newton):
    """:class:`Newton` over statistics ``[G, H]``, without the row count.

    The histograms of boosting's trees carry two channels, as XGBoost's and
    LightGBM's do, where no split test needs a row count per bin (see
    :class:`gputrees._grower.Grower`): a child is valid when its hessian sum
    reaches ``min_weight_leaf`` (XGBoost's ``min_child_weight`` rule). The
    nodes' statistics keep the count (they are summed from the rows).
    """

    name = "newton_gh"
    code = codes.NEWTON_GH
    has_count = False
    _G, _H = 0, 1

    @property
    def n_channels(self) -> int:
        return 2

    def row_channels(self, xp, g, h):
        """Channels (n, 2) from weighted gradients ``g`` and hessians ``h`` (n,)."""
        return xp.stack([g, h], axis=1)
