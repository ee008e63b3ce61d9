"""Evaluation metrics of gradient boosting's validation sets (the ``eval_metric`` parameter).

``GradientBoostingClassifier(eval_metric=...)`` and its regressor score every
validation set (``eval_set``, or the rows early stopping holds out) after
every round with each metric; early stopping and ``best_iteration_`` watch
the last metric of the list on the last set (XGBoost's rule), and
``evals_result_`` keeps every value, as XGBoost's::

    {"validation_0": {"logloss": [after round 1, after round 2, ...], "auc": [...]}, ...}

``eval_metric`` is a name, a callable, or a list of them:

- ``None`` (default): ``"loss"``, the fit's own loss, as ``train_score_``
  (``"rmse"`` for a regressor and ``"logloss"`` for a classifier with a
  callable ``loss``, which has no loss value).
- A name of :data:`CLASSIFICATION_METRICS` or :data:`REGRESSION_METRICS`;
  each equals scikit-learn's function of the same predictions and
  weights: ``logloss`` :func:`~sklearn.metrics.log_loss`, ``error``
  1 - :func:`~sklearn.metrics.accuracy_score` of the predicted class,
  ``auc`` :func:`~sklearn.metrics.roc_auc_score` (multi-class: one-vs-rest,
  macro average), ``rmse`` :func:`~sklearn.metrics.root_mean_squared_error`,
  ``mse`` :func:`~sklearn.metrics.mean_squared_error`, ``mae``
  :func:`~sklearn.metrics.mean_absolute_error`, ``mape``
  :func:`~sklearn.metrics.mean_absolute_percentage_error`, ``quantile``
  :func:`~sklearn.metrics.mean_pinball_loss` at the regressor's ``alpha``,
  ``poisson`` / ``gamma`` :func:`~sklearn.metrics.mean_poisson_deviance` /
  :func:`~sklearn.metrics.mean_gamma_deviance`, ``r2``
  :func:`~sklearn.metrics.r2_score`. ``auc`` and ``r2`` are greater-is-better,
  the others lower-is-better.
- A callable ``f(y_true, y_pred, sample_weight) -> float``, taken as
  lower-is-better (a loss); wrap it with :func:`make_metric` to say
  ``greater_is_better=True`` or to name it (its ``__name__`` otherwise).

The metrics see the arrays in the fit's namespace (NumPy, or CuPy on the
GPU): ``y_true`` the encoded targets (a classifier's class indices 0 ..
n_classes - 1 in ``classes_`` order, as float64), ``y_pred`` what the model
predicts after that round (a binary classifier's probability of class 1,
shape (n,); a multi-class one's probabilities (n, n_classes); a regressor's
``predict``), ``sample_weight`` the set's weights (``eval_sample_weight``,
ones without).
"""

from __future__ import annotations

import numpy as np

from . import _backend

__all__ = [
    "Metric", "make_metric", "CLASSIFICATION_METRICS", "REGRESSION_METRICS", "EvalScoring", "resolve_metrics",
    "check_eval_set", "check_eval_sample_weight", "encode_eval_labels",
]

#: Metric names for the classifiers.
CLASSIFICATION_METRICS = ("loss", "logloss", "error", "auc")
#: Metric names for the regressors.
REGRESSION_METRICS = ("loss", "rmse", "mse", "mae", "mape", "quantile", "poisson", "gamma", "r2")

_EPS = float(np.finfo(np.float64).eps)


class Metric:
    """A validation metric: ``func(y_true, y_pred, sample_weight) -> float`` and whether greater is better.

    Parameters
    ----------
    func : callable
    greater_is_better : bool, default=False
    name : str or None, default=None
        The key in ``evals_result_``; None: ``func.__name__``.
    """

    def __init__(self, func, greater_is_better=False, name=None):
        if not callable(func):
            raise TypeError(f"a metric must be callable, got {type(func).__name__}")
        self.func = func
        self.greater_is_better = bool(greater_is_better)
        self.name = str(name) if name is not None else getattr(func, "__name__", type(func).__name__)
        #: whether ``func`` takes the raw predictions (the fit's own loss) instead of the model's predictions
        self.on_raw = False

    def __call__(self, y_true, y_pred, sample_weight):
        return self.func(y_true, y_pred, sample_weight)

    def __repr__(self):
        return f"Metric({self.name!r}, greater_is_better={self.greater_is_better})"


def make_metric(func, *, greater_is_better=False, name=None) -> Metric:
    """A callable as an ``eval_metric``, saying whether greater is better.

    Parameters
    ----------
    func : callable
        ``func(y_true, y_pred, sample_weight) -> float`` (see the module's docstring for the arguments).
    greater_is_better : bool, default=False
        True for a score (accuracy, AUC), False for a loss.
    name : str or None, default=None
        The key in ``evals_result_``; None: ``func.__name__``.

    Returns
    -------
    Metric
    """
    return Metric(func, greater_is_better, name)


# -- the built-in metrics: scikit-learn's formulas in the fit's namespace -------------------------------
def _xp(*arrays):
    return _backend.namespace_of(*arrays)


def _wmean(xp, a, w):
    return xp.sum(a * w) / xp.sum(w)


def _class_proba(xp, p):
    """(n, K) probabilities of a binary classifier's (n,) probability of class 1, or the (n, K) as they are."""
    return xp.stack([1.0 - p, p], axis=1) if p.ndim == 1 else p


def _logloss(y, p, w):
    xp = _xp(y, p)
    proba = xp.clip(_class_proba(xp, p), _EPS, 1.0 - _EPS)
    k = xp.arange(int(proba.shape[1]), dtype=xp.float64)
    onehot = xp.astype(y[:, None] == k[None, :], xp.float64)
    return _wmean(xp, -xp.sum(onehot * xp.log(proba), axis=1), w)


def _error(y, p, w):
    xp = _xp(y, p)
    label = xp.astype(p > 0.5, xp.float64) if p.ndim == 1 else xp.astype(xp.argmax(p, axis=1), xp.float64)
    return _wmean(xp, xp.astype(label != y, xp.float64), w)


def _binary_auc(xp, positive, score, w):
    """Weighted ROC AUC: the weighted share of (positive, negative) pairs ordered right, ties counting half."""
    order = xp.argsort(score, stable=True)
    s, pos, wt = xp.take(score, order), xp.take(positive, order), xp.take(w, order)
    neg_w = wt * (1.0 - pos)
    cum_neg = xp.concat([xp.zeros(1, dtype=xp.float64), xp.cumulative_sum(neg_w)])
    lo = xp.astype(xp.searchsorted(s, s, side="left"), xp.int64)
    hi = xp.astype(xp.searchsorted(s, s, side="right"), xp.int64)
    below = xp.take(cum_neg, lo)
    tied = xp.take(cum_neg, hi) - below
    pos_w = wt * pos
    total_pos, total_neg = xp.sum(pos_w), xp.sum(neg_w)
    return xp.sum(pos_w * (below + 0.5 * tied)) / (total_pos * total_neg)


def _auc(y, p, w):
    xp = _xp(y, p)
    if p.ndim == 1:
        return _binary_auc(xp, xp.astype(y == 1.0, xp.float64), p, w)
    k = int(p.shape[1])
    return sum(_binary_auc(xp, xp.astype(y == float(c), xp.float64), p[:, c], w) for c in range(k)) / k


def _mse(y, p, w):
    xp = _xp(y, p)
    return _wmean(xp, (y - p) ** 2, w)


def _rmse(y, p, w):
    return _xp(y, p).sqrt(_mse(y, p, w))


def _mae(y, p, w):
    xp = _xp(y, p)
    return _wmean(xp, xp.abs(y - p), w)


def _mape(y, p, w):
    xp = _xp(y, p)
    return _wmean(xp, xp.abs(y - p) / xp.maximum(xp.abs(y), xp.asarray(_EPS, dtype=xp.float64)), w)


def _pinball(alpha):
    def quantile(y, p, w):
        xp = _xp(y, p)
        r = y - p
        return _wmean(xp, xp.where(r >= 0, alpha * r, (alpha - 1.0) * r), w)

    return quantile


def _poisson(y, p, w):
    xp = _xp(y, p)
    safe_y = xp.where(y > 0, y, xp.ones_like(y))
    return _wmean(xp, 2.0 * (xp.where(y > 0, y * xp.log(safe_y / p), xp.zeros_like(y)) - y + p), w)


def _gamma(y, p, w):
    xp = _xp(y, p)
    return _wmean(xp, 2.0 * (xp.log(p / y) + y / p - 1.0), w)


def _r2(y, p, w):
    xp = _xp(y, p)
    mean = _wmean(xp, y, w)
    return 1.0 - xp.sum(w * (y - p) ** 2) / xp.sum(w * (y - mean) ** 2)


def builtin_metric(name: str, alpha: float = 0.9) -> Metric:
    """The built-in metric called ``name`` (``alpha``: the quantile metric's level); "loss" is made by the fit."""
    table = {
        "logloss": (_logloss, False), "error": (_error, False), "auc": (_auc, True),
        "rmse": (_rmse, False), "mse": (_mse, False), "mae": (_mae, False), "mape": (_mape, False),
        "quantile": (_pinball(float(alpha)), False), "poisson": (_poisson, False), "gamma": (_gamma, False),
        "r2": (_r2, True),
    }  # fmt: skip
    func, greater = table[name]
    return Metric(func, greater, name)


def resolve_metrics(eval_metric, *, classifier: bool, loss, alpha: float = 0.9) -> list:
    """``eval_metric`` as a list of :class:`Metric` (a ValueError naming what is wrong).

    Parameters
    ----------
    eval_metric : None, str, callable, Metric or a list of them
    classifier : bool
        Which names are allowed (:data:`CLASSIFICATION_METRICS` or :data:`REGRESSION_METRICS`).
    loss : Loss
        The fit's loss: the ``"loss"`` metric is its weighted mean on the raw predictions; a loss whose
        ``mean_loss`` is not defined (``has_value`` False: a callable loss) has none, and the default is then
        ``"logloss"`` / ``"rmse"``.
    alpha : float
        Level of the ``"quantile"`` metric.
    """
    allowed = CLASSIFICATION_METRICS if classifier else REGRESSION_METRICS
    if eval_metric is None:
        eval_metric = "loss" if getattr(loss, "has_value", True) else ("logloss" if classifier else "rmse")
    items = list(eval_metric) if isinstance(eval_metric, (list, tuple)) else [eval_metric]
    if not items:
        raise ValueError("eval_metric is an empty list: give at least one metric, or None for the fit's loss")
    out = []
    for m in items:
        if isinstance(m, Metric):
            out.append(m)
        elif isinstance(m, str):
            if m not in allowed:
                raise ValueError(f"eval_metric {m!r} is not one of {list(allowed)} (or a callable)")
            if m == "loss":
                if not getattr(loss, "has_value", True):
                    raise ValueError("eval_metric='loss' needs a loss with a value; a callable loss has none")
                metric = Metric(lambda y, raw, w: loss.mean_loss(_xp(raw), raw, y, w), False, "loss")
                metric.on_raw = True
                out.append(metric)
            else:
                out.append(builtin_metric(m, alpha))
        elif callable(m):
            out.append(Metric(m))
        else:
            raise ValueError(f"eval_metric entries must be names or callables, got {type(m).__name__}")
    names = [m.name for m in out]
    if len(set(names)) != len(names):
        raise ValueError(f"eval_metric names {names} repeat a name: name callables with make_metric(name=...)")
    return out


class EvalScoring:
    """A fit's validation metrics and how they turn raw predictions into values and the early-stopping score.

    Parameters
    ----------
    metrics : list of Metric
    prediction : callable
        ``prediction(xp, raw)``: the model's prediction (what the metrics take) of raw predictions (n, K).
    """

    def __init__(self, metrics, prediction):
        self.metrics, self.prediction = list(metrics), prediction

    @property
    def names(self) -> list:
        return [m.name for m in self.metrics]

    def evaluate(self, xp, raw, y, w) -> tuple:
        """Every metric's value on raw predictions ``raw`` (floats, or 0-d arrays of ``xp`` not read yet)."""
        pred = None
        values = []
        for m in self.metrics:
            if m.on_raw:
                values.append(m(y, raw, w))
                continue
            if pred is None:
                pred = self.prediction(xp, raw)
            values.append(m(y, pred, w))
        return tuple(values)

    def score(self, values):
        """The early-stopping score of ``evaluate``'s values: the last metric's, greater is better."""
        v = values[-1]
        return v if self.metrics[-1].greater_is_better else -v


# -- validation sets ------------------------------------------------------------------
def check_eval_set(eval_set) -> list:
    """``eval_set`` as a list of (X_val, y_val) pairs (a ValueError saying what is wrong)."""
    if not isinstance(eval_set, (list, tuple)) or not eval_set:
        raise ValueError("eval_set must be a non-empty list of (X_val, y_val) pairs")
    for pair in eval_set:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError("eval_set must be a list of (X_val, y_val) pairs")
    return list(eval_set)


def check_eval_sample_weight(eval_sample_weight, n_sets: int) -> list:
    """``eval_sample_weight`` as a list of one weight vector (or None) per eval set."""
    if eval_sample_weight is None:
        return [None] * n_sets
    if not isinstance(eval_sample_weight, (list, tuple)) or len(eval_sample_weight) != n_sets:
        raise ValueError(
            f"eval_sample_weight must be a list of one weight vector (or None) per eval_set pair ({n_sets})"
        )
    return list(eval_sample_weight)


def encode_eval_labels(classes, y):
    """A validation set's labels ``y`` (host) as float64 indices into the training ``classes`` (sorted); a
    label the training rows did not have is a ValueError naming it."""
    pos = np.clip(np.searchsorted(classes, y), 0, classes.shape[0] - 1)
    known = classes[pos] == y
    if not np.all(known):
        bad = np.unique(y[~known]).tolist()[:5]
        raise ValueError(f"eval_set y has labels {bad} not in the training classes {classes.tolist()}")
    return pos.astype(np.float64)
