"""Data-parallel gradient boosting on a Dask cluster."""

from __future__ import annotations

import contextlib
import functools

import numpy as np

from .. import _backend
from .._boost import BoostHistory, BoostPlan, boost, leaf_values
from .._boosting import GradientBoostingClassifier, GradientBoostingRegressor
from .._criteria import Newton
from .._grower import grow
from .._records import GrowerInputs
from .._progress import Monitor
from ..kernels import get_kernels
from ._cluster import DaskRows
from ._common import DaskEstimator, dask_signature, fit_bins


class _DaskBoosting(DaskEstimator):
    """The Dask fit shared by the classifier and the regressor.

    Every worker keeps its rows, their gradients and raw predictions; per
    tree level the client receives the summed channel sums and histograms of
    the new nodes (all trees of a round in one exchange), finds the splits and
    sends them back. The fitted estimator is the same model as the
    single-machine one (:meth:`to_local` returns that plain estimator).
    """

    _fitted_attr = "_rounds"

    def _check_dask_params(self):
        name = type(self).__name__
        if self.early_stopping not in (False,):
            raise ValueError(
                f"{name} has no early stopping (early_stopping={self.early_stopping!r}): "
                "it would need a validation split of the distributed rows; use early_stopping=False"
            )
        if self.warm_start:
            raise ValueError(f"{name} does not support warm_start")
        if self.categorical_features is not None:
            raise ValueError(f"{name} does not support categorical_features yet: encode them as numbers")
        if getattr(self, "class_weight", None) is not None:
            raise ValueError(f"{name} does not support class_weight: pass sample_weight instead")
        if callable(self.loss):
            raise ValueError(f"{name} does not take a callable loss yet: use a named loss")
        if self.baseline is not None:
            raise ValueError(f"{name} does not take baseline yet: leave it None")
        if self.eval_metric is not None:
            raise ValueError(f"{name} has no validation sets to score with eval_metric: leave it None")
        if getattr(self, "quantised_gradients", "auto") is True:
            raise ValueError(f"{name} does not quantise gradients yet: use quantised_gradients='auto' or False")

    def _fit_shards(self, shards, n, n_features):
        xp = _backend.namespace_for(np.empty(0), None)
        kernels = get_kernels(xp, n_jobs=self.n_jobs)
        baseline_y, baseline_w = self._targets(shards)
        loss = self._make_loss(kernels)
        if loss.needs_leaf_update:
            raise ValueError(
                f"loss={self.loss!r} re-estimates leaves from row quantiles, which {type(self).__name__} "
                "does not do; use squared_error, poisson or gamma"
            )
        self._baseline = loss.baseline(xp, kernels, baseline_y, baseline_w)
        self._categories = None
        rng = _backend.host_rng(self.random_state)
        seed = int(rng.integers(0, 2**31 - 1))
        bin_mapper = fit_bins(shards, n, self.max_bins, n_features)
        self._bin_mapper = bin_mapper
        self.is_categorical_ = np.zeros(n_features, dtype=bool)
        shards.call("set_bins", bin_mapper)
        mono = self._monotonic(n_features, self.is_categorical_, getattr(self, "feature_names_in_", None))
        k = loss.n_trees_per_round
        sums = shards.call("boost_start", loss, _backend.to_numpy(self._baseline))
        history = BoostHistory([], [-_mean_loss(sums)], [])
        plan = BoostPlan(
            n_rounds=self.n_estimators, seed=seed, n_rows=n,
            n_sub=max(1, int(self.subsample * n)) if self.subsample < 1.0 else n,
            n_features=n_features, n_col=max(1, int(self.colsample_bytree * n_features)), n_trees=k,
        )
        rows = _ShardRounds(shards, plan, xp, kernels, loss, Newton(self.l2_regularization),
                            self._grower_params(n_features), bin_mapper, mono, self.learning_rate)
        boost(rows, loss, plan, history, monitor=Monitor(self, self.n_estimators, 0, "round"),
              snapshot=functools.partial(self._snapshot, xp, k, history))
        return self._finish(xp, k, history.rounds, history.train_scores, [])

    def predict(self, X):
        """Predictions; lazily partition by partition for dask input (a dask array, or a Series for a dataframe)."""
        dtype = self.classes_.dtype if hasattr(self, "classes_") else np.float64
        return self._dask_or_local("predict", X, None, dtype)


class _ShardRounds:
    """The training rows of a Dask fit, on the workers: a round's gradients and row sets are made there, the client
    grows the round's trees from their histograms (:class:`gputrees.dask._cluster.DaskRows`), and the workers add
    the trees' values to their raw predictions."""

    def __init__(self, shards, plan, xp, kernels, loss, criterion, params, bin_mapper, monotonic_cst,
                 learning_rate: float):
        self.shards, self.plan, self.xp, self.kernels, self.loss = shards, plan, xp, kernels, loss
        self.criterion, self.params, self.bin_mapper = criterion, params, bin_mapper
        self.monotonic_cst, self.learning_rate = monotonic_cst, float(learning_rate)

    def workspace(self):
        return contextlib.nullcontext()

    def close(self):
        """Nothing left to check when the rounds end."""

    def round(self, it: int, round_rng, inbag, tree_features):
        """:meth:`gputrees._boost.LocalRounds.round` over the workers' rows (their in-bag rows drawn there, from
        the same stream as ``inbag``)."""
        xp, plan = self.xp, self.plan
        self.shards.call("boost_round", plan.seed, it, plan.n_sub, plan.n_rows)
        inputs = GrowerInputs(
            codes=None,
            channels=None,
            multiplicity=None,
            bin_mapper=self.bin_mapper,
            criterion=self.criterion,
            kernels=self.kernels,
            rng=round_rng,
            tree_features=tree_features,
            record_leaves=True,
            monotonic_cst=self.monotonic_cst,
        )
        batch = grow(xp, inputs, self.params, rows=DaskRows(self.shards, plan.n_trees, 3))
        values = self.learning_rate * leaf_values(xp, self.kernels, self.loss, self.criterion, batch, None, None, None)
        sums = self.shards.call("boost_update", _backend.to_numpy(values))
        return batch, values, _mean_loss(sums)


def _mean_loss(sums):
    """Weighted mean loss from the shards' (sum of w * loss, sum of w)."""
    total = sum(s[0] for s in sums)
    weight = sum(s[1] for s in sums)
    return total / weight


class DaskGradientBoostingClassifier(_DaskBoosting, GradientBoostingClassifier):
    """Gradient-boosted trees for classification, trained data-parallel on a Dask cluster.

    The parameters are those of :class:`gputrees.GradientBoostingClassifier`
    (``early_stopping`` defaults to False and must stay so; ``warm_start``,
    ``class_weight`` and ``categorical_features`` are not supported). Call
    ``fit`` with dask collections while a ``distributed.Client`` is active.
    With the same bin edges (features with at most ``max_bins`` distinct
    values are binned exactly on both) and ``early_stopping=False``, the trees
    equal those of the single-machine estimator on the concatenated data
    (values to float rounding: histograms are summed across workers).

    Attributes
    ----------
    exchanges_ : list of Exchange
        Every request of the fit to the workers: bytes received, wall and
        compute time (:mod:`gputrees.dask._cluster`).

    Examples
    --------
    >>> from distributed import Client                           # doctest: +SKIP
    >>> client = Client(n_workers=2)                             # doctest: +SKIP
    >>> clf = DaskGradientBoostingClassifier().fit(X_dask, y_dask)  # doctest: +SKIP
    >>> clf.predict_proba(X_dask).compute()                      # doctest: +SKIP
    """

    _local_class = GradientBoostingClassifier
    __init__ = dask_signature(GradientBoostingClassifier, defaults={"early_stopping": False})

    def _targets(self, shards):
        """Global classes from the shards' labels; the class weights for the baseline."""
        per = shards.call("label_weights")
        classes = np.unique(np.concatenate([p[0] for p in per]))
        if classes.shape[0] < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 classes in y, got {classes.shape[0]} class")
        weights = np.zeros(classes.shape[0], dtype=np.float64)
        for labels, w in per:
            weights[np.searchsorted(classes, labels)] += w
        if not np.any(weights > 0):
            raise ValueError("every training row has sample_weight 0")
        self.classes_ = classes
        self.n_classes_ = int(classes.shape[0])
        shards.call("encode_labels", classes)
        # the weighted class frequencies give the baseline exactly as the rows would
        return np.arange(classes.shape[0], dtype=np.float64), weights

    def predict_proba(self, X):
        """Class probabilities (n, n_classes); lazily for dask input."""
        return self._dask_or_local("predict_proba", X, self.n_classes_, np.float64, list(self.classes_))

    def decision_function(self, X):
        """Raw scores; lazily for dask input."""
        k = 1 if self.n_classes_ == 2 else self.n_classes_
        return self._dask_or_local("decision_function", X, None if k == 1 else k)


class DaskGradientBoostingRegressor(_DaskBoosting, GradientBoostingRegressor):
    """Gradient-boosted trees for regression, trained data-parallel on a Dask cluster.

    The parameters are those of :class:`gputrees.GradientBoostingRegressor`
    with the restrictions of :class:`DaskGradientBoostingClassifier`; the
    losses whose leaves are row quantiles (absolute_error, quantile, huber)
    are refused.
    """

    _local_class = GradientBoostingRegressor
    __init__ = dask_signature(GradientBoostingRegressor, defaults={"early_stopping": False})

    def _targets(self, shards):
        per = shards.call("target_sums")
        if sum(p[4] for p in per):
            raise ValueError("y contains NaN or infinity")
        wy = sum(p[0] for p in per)
        w = sum(p[1] for p in per)
        if not w > 0:
            raise ValueError("every training row has sample_weight 0")
        lo, hi = min(p[2] for p in per), max(p[3] for p in per)
        if self.loss == "poisson" and (lo < 0 or not wy > 0):
            raise ValueError("loss='poisson' needs y >= 0 and a positive sum of y")
        if self.loss == "gamma" and lo <= 0:
            raise ValueError("loss='gamma' needs y > 0")
        if max(abs(lo), abs(hi)) > 1e150:
            raise ValueError("y has values too large to square in float64 (|y| > 1e150)")
        # the weighted mean as one row of weight 1
        return np.asarray([wy / w], dtype=np.float64), np.ones(1, dtype=np.float64)
