"""Data-parallel gradient boosting on a Dask cluster."""

from __future__ import annotations

import contextlib
import functools

import numpy as np

from .. import _backend
from .._boost import BoostHistory, BoostPlan, EarlyStopping, EvalSet, boost, leaf_values
from .._boosting import GradientBoostingClassifier, GradientBoostingRegressor
from .._criteria import Newton
from .._grower import grow
from .._loss import Huber
from .._records import GrowerInputs
from .._progress import Monitor
from .._state import transactional_fit
from ..kernels import get_kernels
from ..metrics import EvalScoring, check_eval_sample_weight, check_eval_set, resolve_metrics
from ._cluster import DaskRows
from ._common import DaskEstimator, dask_signature, fit_bins, scale_by_class, to_local
from ._quantiles import dask_weighted_quantiles


class _DaskBoosting(DaskEstimator):
    """The Dask fit shared by the classifier and the regressor.

    Every worker keeps its rows, their gradients and raw predictions. Where
    the workers reach each other over TCP, each grows every round's trees
    itself, the levels' histograms exchanged directly between the workers
    and added up in the same order on each (one request a round:
    :meth:`gputrees.dask._shard.Shard.mesh_round`); otherwise, and for the
    losses whose leaves come from distributed quantiles, per tree level the
    client receives the summed channel sums and histograms of the new nodes
    (all trees of a round in one exchange), finds the splits and sends them
    back. The fitted estimator is the same model as the single-machine one
    (:meth:`to_local` returns that plain estimator).
    """

    _fitted_attr = "_rounds"

    @transactional_fit
    def fit(self, X, y, sample_weight=None, eval_set=None, eval_sample_weight=None):
        """Boost on the workers holding ``X``.

        Parameters
        ----------
        X : dask array of shape (n_samples, n_features), or dask dataframe
            Numeric; NaN marks missing values. NumPy or CuPy chunks. The rows
            stay on the workers that hold them.
        y : dask array of shape (n_samples,) or dask Series
        sample_weight : dask array of shape (n_samples,) or dask Series, optional
        eval_set : list of (X_val, y_val) pairs, optional
            Validation sets (in-memory arrays, or dask collections computed
            into the client's memory), scored on the client after every
            round with ``eval_metric``; early stopping watches the last one,
            as the single-machine fit's.
        eval_sample_weight : list of array-like or None, optional
            One weight vector (or None) per ``eval_set`` pair.

        Returns
        -------
        self
        """
        return self._fit_dask(X, y, sample_weight, eval_set=eval_set, eval_sample_weight=eval_sample_weight)

    def _check_dask_params(self, eval_set=None, eval_sample_weight=None):
        name = type(self).__name__
        if self.early_stopping not in (False,) and eval_set is None:
            raise ValueError(
                f"{name} stops early only on an eval_set (early_stopping={self.early_stopping!r}): holding out "
                "a share of the distributed rows is not done; pass eval_set=[(X_val, y_val)] or early_stopping=False"
            )
        if self.warm_start:
            raise ValueError(f"{name} does not support warm_start")
        if getattr(self, "quantised_gradients", "auto") is True:
            raise ValueError(f"{name} does not quantise gradients yet: use quantised_gradients='auto' or False")

    def _fit_shards(self, shards, n, n_features, eval_set=None, eval_sample_weight=None):
        xp = _backend.namespace_for(np.empty(0), None)
        kernels = get_kernels(xp, n_jobs=self.n_jobs)
        baseline_y, baseline_w = self._targets(shards)
        loss = self._make_loss(kernels)
        if self.baseline is None and loss.needs_leaf_update:
            # the weighted alpha-quantile of y over the workers' rows (gputrees.dask._quantiles; Huber's alpha 0.5)
            self._baseline = xp.asarray(dask_weighted_quantiles(shards, "y", 1, loss.alpha))
        elif self.baseline is None and not loss.has_value:
            # a callable loss's Newton steps from zero, its gradients summed over the workers' rows
            def sums(b, where):
                parts = shards.call("gradient_sums", loss, _backend.to_numpy(b), where)
                return sum(p[0] for p in parts), sum(p[1] for p in parts)

            self._baseline = loss.newton_baseline(xp, sums)
        else:
            self._baseline = self._initial_raw(xp, kernels, loss, baseline_y, baseline_w)
        rng = _backend.host_rng(self.random_state)
        seed = int(rng.integers(0, 2**31 - 1))
        bin_mapper = fit_bins(shards, n, self.max_bins, n_features, self.is_categorical_)
        self._bin_mapper = bin_mapper
        shards.call("set_bins", bin_mapper)
        mono = self._monotonic(n_features, self.is_categorical_, getattr(self, "feature_names_in_", None))
        k = loss.n_trees_per_round
        sums = shards.call("boost_start", loss, _backend.to_numpy(self._baseline))
        scoring = EvalScoring(
            resolve_metrics(self.eval_metric, classifier=self._is_classifier, loss=loss,
                            alpha=getattr(self, "alpha", 0.9)),
            self._metric_prediction,
        )
        self._eval_metric_names = scoring.names
        evals = self._eval_sets(xp, bin_mapper, eval_set, eval_sample_weight)
        history = BoostHistory([], [-_mean_loss(sums)], [[] for _ in evals], [[] for _ in evals])
        for ev, scores, metrics in zip(evals, history.val_scores, history.val_metrics):
            metrics.append(ev.evaluate(scoring))
            scores.append(scoring.score(metrics[-1]))
        es = bool(evals) and self._early_stopping_on(n)
        plan = BoostPlan(
            n_rounds=self.n_estimators, seed=seed, n_rows=n,
            n_sub=max(1, int(self.subsample * n)) if self.subsample < 1.0 else n,
            n_features=n_features, n_col=max(1, int(self.colsample_bytree * n_features)), n_trees=k,
        )
        criterion, params = Newton(self.l2_regularization), self._grower_params(n_features)
        # the workers grow the rounds themselves, exchanging their histograms, unless the leaves need the driver
        # (their quantiles searched over every worker's rows) or the workers cannot reach each other
        mesh = not loss.needs_leaf_update and shards.open_mesh()
        count_free = False
        if mesh:
            # the histograms may leave the count out where no row of any shard has a missing value
            count_free = not any(shards.call("mesh_setup", criterion, params, bin_mapper, mono, self.learning_rate))
        monitor = Monitor(self, self.n_estimators, 0, "round")
        # with nothing to read between rounds (no validation set, display or callback), the workers grow them all
        # in one request
        batched = mesh and not evals and not monitor.verbose and not monitor.callbacks
        rows = _ShardRounds(shards, plan, xp, kernels, loss, criterion, params, bin_mapper, mono, self.learning_rate,
                            mesh, count_free, rounds_at_once=plan.n_rounds if batched else 1)
        stopped_at = boost(
            rows, loss, plan, history, evals, monitor=monitor,
            snapshot=functools.partial(self._snapshot, xp, k, history),
            early_stopping=EarlyStopping(self.n_iter_no_change, self.tol, int(self.verbose)) if es else None,
            scoring=scoring,
        )
        return self._finish(xp, k, history.rounds, history.train_scores, history.val_scores, stopped_at,
                            history.val_metrics)

    def _eval_sets(self, xp, bin_mapper, eval_set, eval_sample_weight):
        """The validation sets on the client (:class:`gputrees._boost.EvalSet`), checked as the single-machine
        fit checks them; their raw predictions start at the baseline."""
        if eval_set is None:
            if eval_sample_weight is not None:
                raise ValueError("eval_sample_weight is given without an eval_set")
            return []
        pairs = check_eval_set(eval_set)
        weights = check_eval_sample_weight(eval_sample_weight, len(pairs))
        evals = []
        for (Xv, yv), wv in zip(pairs, weights):
            Xvd, yv_dev, wv_dev = self._validation_pair(xp, to_local(Xv), to_local(yv), to_local(wv))
            n_val = int(Xvd.shape[0])
            raw = xp.asarray(xp.broadcast_to(self._baseline[None, :], (n_val, int(self._baseline.shape[0]))),
                             copy=True)
            evals.append(EvalSet(xp, bin_mapper.encode_for_predict(xp, Xvd), yv_dev, wv_dev, raw,
                                 bin_mapper.missing_bin, self.n_jobs))
        return evals

    def predict(self, X):
        """Predictions; lazily partition by partition for dask input (a dask array, or a Series for a dataframe)."""
        dtype = self.classes_.dtype if hasattr(self, "classes_") else np.float64
        return self._dask_or_local("predict", X, None, dtype)


class _ShardRounds:
    """The training rows of a Dask fit, on the workers: a round's gradients and row sets are made there, the client
    grows the round's trees from their histograms (:class:`gputrees.dask._cluster.DaskRows`), and the workers add
    the trees' values to their raw predictions."""

    def __init__(self, shards, plan, xp, kernels, loss, criterion, params, bin_mapper, monotonic_cst,
                 learning_rate: float, mesh: bool = False, count_free: bool = False, rounds_at_once: int = 1):
        self.shards, self.plan, self.xp, self.kernels, self.loss = shards, plan, xp, kernels, loss
        self.mesh = mesh  # the rounds grown on the workers (gputrees.dask._shard.Shard.mesh_round)
        self.rounds_at_once = int(rounds_at_once)  # rounds a request of ``mesh`` rounds grows (Shard.mesh_rounds)
        self.ahead = {}  # round -> the shards' answers, of rounds grown ahead by such a request
        self.count_free = count_free  # no missing value in any shard's rows (their count-free histograms)
        self.criterion, self.params, self.bin_mapper = criterion, params, bin_mapper
        self.monotonic_cst, self.learning_rate = monotonic_cst, float(learning_rate)
        self.huber = isinstance(loss, Huber)
        self.delta = None  # Huber: the next round's delta, where the last round end found it
        self.next_start = None  # the shards' answers to the next round's start, where the last update began it

    def _huber_delta(self):
        """Huber's delta at the workers' raw predictions: the weighted quantile of every row's |residual|."""
        return float(dask_weighted_quantiles(self.shards, "abs_residuals", 1, self.loss.quantile)[0])

    def workspace(self):
        return contextlib.nullcontext()

    def close(self):
        """Nothing left to check when the rounds end."""

    def round(self, it: int, round_rng, inbag, tree_features):
        """:meth:`gputrees._boost.LocalRounds.round` over the workers' rows (their in-bag rows drawn there, from
        the same stream as ``inbag``).

        Where the workers reach each other (``mesh``), one request: each
        grows the round's trees on its rows with every worker's histograms
        (:meth:`gputrees.dask._shard.Shard.mesh_round`). Else one exchange a
        tree level with the driver: the round's start (gradients, the roots'
        sums and histograms) comes with the last round's update where that
        round could begin it (no Huber delta to find first), every level's
        routing with the next level's histograms, and the last routing and
        the rows' leaves with the update.
        """
        xp, plan = self.xp, self.plan
        if self.mesh and self.rounds_at_once > 1:  # the rounds grown ahead, several a request
            if it not in self.ahead:
                stop = min(plan.n_rounds, it + self.rounds_at_once)
                per_shard = self.shards.call("mesh_rounds", plan, it, stop, self.count_free)
                self.ahead = {r: [a[r - it] for a in per_shard] for r in range(it, stop)}
            answers = self.ahead.pop(it)
            batch, values = answers[0][0], answers[0][1]
            return batch, xp.asarray(values), _mean_loss([a[2] for a in answers])
        if self.mesh:  # one request a round: the workers exchange the levels' histograms among themselves
            last = it + 1 >= plan.n_rounds
            answers = self.shards.call("mesh_round", plan.seed, it, plan.n_sub, plan.n_rows, round_rng,
                                       tree_features, last, self.count_free)
            batch, values = answers[0][0], answers[0][1]
            return batch, xp.asarray(values), _mean_loss([a[2] for a in answers])
        n_bins = int(self.bin_mapper.n_bins)
        prefetched, self.next_start = self.next_start, None
        if prefetched is None:
            delta = None
            if self.huber:
                delta = self.delta if self.delta is not None else self._huber_delta()
                self.loss.delta = delta  # (the client's copy: the leaves' clipping)
            prefetched = self.shards.call("boost_round", plan.seed, it, plan.n_sub, plan.n_rows, delta, n_bins)
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
        rows = DaskRows(self.shards, plan.n_trees, 3, prefetched)
        batch = grow(xp, inputs, self.params, rows=rows)
        if self.loss.needs_leaf_update:
            rows.flush()  # the leaves' residuals are read on the workers (_WorkerLeafQuantiles)
            loss = _WorkerLeafQuantiles(self.loss, self.shards)
        else:
            loss = self.loss
        values = self.learning_rate * leaf_values(xp, self.kernels, loss, self.criterion, batch, None, None, None)
        # the next round begun with the update, unless its Huber delta must be found first
        begin = it + 1 < plan.n_rounds and not self.huber
        next_round = (plan.seed, it + 1, plan.n_sub, plan.n_rows, None, n_bins) if begin else None
        answers = self.shards.call("boost_update", _backend.to_numpy(values), rows.take_pending(), next_round)
        if begin:
            sums, self.next_start = [a[0] for a in answers], [a[1] for a in answers]
        else:
            sums = answers
        self.delta = None
        if self.huber and plan.n_sub >= plan.n_rows:
            # as the single-machine round end: the next round's delta, with which the new loss is taken
            self.delta = self._huber_delta()
            sums = self.shards.call("set_delta", self.delta)
        return batch, values, _mean_loss(sums)


class _WorkerLeafQuantiles:
    """A loss whose leaves are re-estimated from their residuals (absolute error, quantile: their weighted
    ``alpha``-quantile; Huber: their median plus the mean clipped deviation), the residuals staying on the
    workers: :func:`gputrees._boost.leaf_values` asks it for the leaves' estimates."""

    needs_leaf_update = True

    def __init__(self, loss, shards):
        self.loss, self.shards = loss, shards

    def leaf_estimates(self, xp, kernels, leaf, raw, y, w, n_nodes):
        q = dask_weighted_quantiles(self.shards, "leaf_residuals", n_nodes, self.loss.alpha)  # Huber's: 0.5
        if not isinstance(self.loss, Huber):
            return xp.asarray(q)
        parts = self.shards.call("huber_deviation_sums", q)
        num, den = sum(p[0] for p in parts), sum(p[1] for p in parts)
        return xp.asarray(self.loss.leaf_values_from(np, q, num, den))


def _mean_loss(sums):
    """Weighted mean loss from the shards' (sum of w * loss, sum of w)."""
    total = sum(s[0] for s in sums)
    weight = sum(s[1] for s in sums)
    return total / weight


class DaskGradientBoostingClassifier(_DaskBoosting, GradientBoostingClassifier):
    """Gradient-boosted trees for classification, trained data-parallel on a Dask cluster.

    The parameters are those of :class:`gputrees.GradientBoostingClassifier`
    (``early_stopping`` defaults to False, and stops only on an ``eval_set``:
    no share of the distributed rows is held out; ``warm_start`` is not
    supported). A callable ``loss`` runs on every worker's rows (its
    baseline's Newton steps sum the workers' gradients); it has no loss
    value, and the workers do not score their rows with a metric, so
    ``train_score_`` is NaN there. Categorical features are a
    dataframe's ``category`` columns (categories known to dask, e.g. after
    ``X.categorize()``: every partition codes them alike) and those named in
    ``categorical_features``. ``class_weight`` scales every worker's rows by the factors of
    the global class counts. Call ``fit`` with dask collections while a
    ``distributed.Client`` is active; ``eval_set`` is scored on the client.
    With the same bin edges (features with at most ``max_bins`` distinct
    values are binned exactly on both), the trees equal those of the
    single-machine estimator on the concatenated data with the same eval sets
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
        self.classes_ = classes
        self.n_classes_ = int(classes.shape[0])
        shards.call("encode_labels", classes)
        if self.class_weight is not None:
            per = scale_by_class(shards, per, self.class_weight, classes)
        weights = np.zeros(classes.shape[0], dtype=np.float64)
        for labels, w, _ in per:
            weights[np.searchsorted(classes, labels)] += w
        if not np.any(weights > 0):
            raise ValueError("every training row has sample_weight 0")
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
    with the restrictions of :class:`DaskGradientBoostingClassifier`. The
    absolute_error, quantile and huber losses take their baseline, leaves
    (and Huber's delta) from weighted quantiles searched over the workers'
    rows (:mod:`gputrees.dask._quantiles`).
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
