"""GradientBoostingClassifier and GradientBoostingRegressor: Newton boosting of histogram trees.

``fit`` validates the data, bins it, makes the loss, the baseline and the
validation sets, and runs the rounds with :func:`gputrees._boost.boost` over
the local rows (:class:`gputrees._boost.LocalRounds`): each round grows one
tree (K trees for K-class log-loss, as one batch of trees) with the Newton
criterion of :mod:`gputrees._criteria` (leaf value ``-G / (H + l2)``,
XGBoost's split gain) and adds ``learning_rate`` times the leaf values to the
raw predictions. The fitted rounds are kept as one padded batch for
prediction.
"""

from __future__ import annotations

import copy
import functools
import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _backend
from ._model_io import ModelFileMixin
from .explain import ShapMixin, ShapModel
from ._scoring import ClassifierMixin, RegressorMixin
from ._xgboost import XGBoostExportMixin
from ._binning import MAX_BINS_LIMIT, fit_bin_mapper
from ._boost import BoostHistory, BoostPlan, EarlyStopping, EvalSet, LocalRounds, boost
from ._criteria import Newton
from ._records import DEFAULT_MEMORY_LIMIT, GrowerParams, Round, stack_batches, stack_node_arrays
from ._loss import REGRESSION_LOSSES, BinaryLogLoss, CallableLoss, MultinomialLogLoss, make_regression_loss
from ._predictor import apply_trees, predict_raw
from ._progress import Monitor
from ._state import transactional_fit
from ._validation import (
    encode_classes,
    check_class_labels,
    check_finite_x,
    check_predict_columns,
    holdout_split,
    check_target_scale,
    regression_target,
    resolve_max_features,
    sample_weight_to_host,
    take_rows,
    to_numeric_2d,
    y_to_host,
)
from ._kernel_choice import chooses_kernels
from ._sparse import is_sparse
from .metrics import EvalScoring, check_eval_sample_weight, check_eval_set, encode_eval_labels, resolve_metrics
from .kernels import reference
from .kernels.reference import gather_node_values
from .kernels import get_kernels

__all__ = ["GradientBoostingClassifier", "GradientBoostingRegressor"]

#: Prediction pushes at most this many (row, tree) pairs through the trees
#: at once (a few int64/float64 arrays of that size: ~100 MB).
PREDICT_CHUNK = 1 << 22
#: early_stopping="auto" turns early stopping on above this many rows (scikit-learn's rule).
AUTO_EARLY_STOPPING_ROWS = 10_000


def _stack_rounds(xp, rounds):
    """One padded TreeBatch (n_rounds * K trees) and values (n_trees, width) of all rounds."""
    batch = stack_batches(xp, [r.batch for r in rounds])
    return batch, stack_node_arrays(xp, [r.values for r in rounds], 0.0, int(batch.left.shape[1]))


def _laid_out(xp, rounds):
    """A fit's rounds, those the GPU grew in their perfect-tree layout (``node_count`` None) with their nodes
    numbered as the level-wise grower's, all in one pass; other rounds as they are."""
    groups = {}  # rounds of one node-table shape compact together
    for i, r in enumerate(rounds):
        if r.batch.node_count is None:
            groups.setdefault((tuple(r.batch.left.shape[1:]), tuple(r.batch.cat_left.shape[2:])), []).append(i)
    out = list(rounds)
    for members in groups.values():
        parts = reference.compact_batches(xp, [rounds[i].batch for i in members], [rounds[i].values for i in members])
        for i, (batch, values) in zip(members, parts):
            out[i] = Round(batch=batch, values=values)
    return out


def _host_scores(scores):
    """A fit's scores, host floats or device scalars, as a float64 array."""
    return np.asarray([float(s) for s in scores], dtype=np.float64)


def _set_params(est, params):
    """Store the constructor's arguments (``locals()`` of ``__init__``) as attributes, unchanged."""
    for name, value in params.items():
        if name not in ("self", "__class__"):
            setattr(est, name, value)


class _BaseGradientBoosting(ShapMixin, ModelFileMixin, XGBoostExportMixin, BaseEstimator):
    _parameter_constraints: dict = {
        "learning_rate": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_depth": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "max_leaf_nodes": [Interval(numbers.Integral, 2, None, closed="left"), None],
        "min_samples_leaf": [Interval(numbers.Integral, 1, None, closed="left")],
        "min_child_weight": [Interval(numbers.Real, 0.0, None, closed="left")],
        "min_split_gain": [Interval(numbers.Real, 0.0, None, closed="left")],
        "l2_regularization": [Interval(numbers.Real, 0.0, None, closed="left")],
        "subsample": [Interval(numbers.Real, 0.0, 1.0, closed="right")],
        "max_features": [
            Interval(numbers.Integral, 1, None, closed="left"),
            Interval(numbers.Real, 0.0, 1.0, closed="right"),
            None,
        ],
        "colsample_bytree": [Interval(numbers.Real, 0.0, 1.0, closed="right")],
        "max_bins": [Interval(numbers.Integral, 2, MAX_BINS_LIMIT, closed="both")],
        "categorical_features": ["array-like", None],
        "monotonic_cst": ["array-like", dict, None],
        "early_stopping": [StrOptions({"auto"}), "boolean"],
        "validation_fraction": [Interval(numbers.Real, 0.0, 1.0, closed="neither")],
        "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0.0, None, closed="left")],
        "random_state": ["random_state"],
        "device": [StrOptions({"cpu", "cuda"}), None],
        "verbose": ["verbose"],
        "callbacks": [list, None],
        "warm_start": ["boolean"],
        "memory_limit": [Interval(numbers.Integral, 1 << 20, None, closed="left")],
        "n_jobs": [numbers.Integral, None],
        "quantised_gradients": [StrOptions({"auto"}), "boolean"],
        "eval_metric": [str, callable, list, tuple, None],
        "baseline": ["array-like", numbers.Real, None],
    }
    _is_classifier = False

    # -- configuration ------------------------------------------------------
    def _grower_params(self, n_features: int) -> GrowerParams:
        k = resolve_max_features(self.max_features, n_features)
        return GrowerParams(
            max_depth=self.max_depth,
            min_samples_split=2 * self.min_samples_leaf,
            min_samples_leaf=self.min_samples_leaf,
            min_weight_leaf=float(self.min_child_weight),
            min_impurity_decrease=float(self.min_split_gain),
            max_leaf_nodes=self.max_leaf_nodes,
            max_features=k,
            memory_limit=self.memory_limit,
            sorted_small_nodes=False,
            # row subsampling leaves rows out of the counts: cut at the
            # feature's next bin so that every row is routed like its code
            local_thresholds=False,
        )

    def _monotonic(self, n_features: int, is_cat, feature_names):
        """``monotonic_cst`` as an int8 array (n_features,) or None."""
        cst = self.monotonic_cst
        if cst is None:
            return None
        if isinstance(cst, dict):
            out = np.zeros(n_features, dtype=np.int8)
            names = list(feature_names) if feature_names is not None else None
            for key, v in cst.items():
                if isinstance(key, str):
                    if names is None or key not in names:
                        raise ValueError(f"monotonic_cst names feature {key!r}, which is not a column of X")
                    j = names.index(key)
                elif isinstance(key, numbers.Integral) and 0 <= key < n_features:
                    j = int(key)
                else:
                    raise ValueError(f"monotonic_cst key {key!r} is not a feature index or name")
                out[j] = v if v in (-1, 0, 1) else 2
        else:
            arr = np.asarray(cst)
            if arr.shape != (n_features,):
                raise ValueError(f"monotonic_cst has shape {arr.shape}, expected ({n_features},)")
            out = arr
        if not np.all(np.isin(out, (-1, 0, 1))):
            raise ValueError("monotonic_cst values must be -1, 0 or 1")
        out = np.asarray(out, dtype=np.int8)
        bad = np.flatnonzero((out != 0) & np.asarray(is_cat))
        if bad.size:
            raise ValueError(f"monotonic constraints are not supported on categorical features {bad.tolist()}")
        if np.any(out != 0) and self._is_classifier and getattr(self, "n_classes_", 2) > 2:
            raise ValueError("monotonic_cst is not supported for multi-class classification")
        return out if np.any(out != 0) else None

    def _early_stopping_on(self, n: int) -> bool:
        if self.early_stopping == "auto":
            return n > AUTO_EARLY_STOPPING_ROWS
        return bool(self.early_stopping)

    # -- fit ----------------------------------------------------------------
    @transactional_fit
    @chooses_kernels
    def fit(self, X, y, sample_weight=None, eval_set=None, eval_sample_weight=None):
        """Boost trees.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array; NaN marks missing values.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
        eval_set : list of (X_val, y_val) pairs, optional
            Validation sets scored after every round. Early stopping (when on)
            watches the last one instead of holding out ``validation_fraction``
            of the training rows.
        eval_sample_weight : list of array-like of shape (n_val_samples,) or None, optional
            One weight vector (or None: every row 1) per ``eval_set`` pair,
            weighting its rows in the validation loss and metrics as
            ``sample_weight`` weights the training rows (``class_weight`` is
            not applied to them). A row of weight 2 counts as that row twice.

        Returns
        -------
        self
        """
        self._validate_params()
        warm = self.warm_start and hasattr(self, "_rounds")
        if warm and self.n_estimators < len(self._rounds):
            raise ValueError(
                f"n_estimators={self.n_estimators} must be at least the {len(self._rounds)} rounds "
                "already fitted when warm_start=True"
            )
        if warm and self.n_estimators == len(self._rounds):
            return self
        xp = _backend.namespace_of(self._baseline) if warm else _backend.namespace_for(X, self.device)
        # float32 rows stay float32 on NumPy: binned (and walked for the raw
        # predictions) as their float64 copies would be, without that copy
        Xd, is_cat, categories = to_numeric_2d(
            X, xp, None if warm else self.categorical_features, self._categories if warm else None,
            keep_float32=_backend.is_numpy_namespace(xp),
        )
        validate_data(self, X, reset=not warm, skip_check_array=True)
        check_finite_x(xp, Xd)
        n, n_features = Xd.shape
        y_host = y_to_host(y, n, multi_output=False)
        sw = sample_weight_to_host(sample_weight, n)
        y_enc, sw = self._encode_y(y_host, sw, fit=not warm)
        kernels = get_kernels(xp, n_jobs=self.n_jobs)
        loss = self._make_loss(kernels, len(self._rounds) if warm else 0)
        mono = self._monotonic(n_features, is_cat, getattr(self, "feature_names_in_", None))
        rng = _backend.host_rng(self.random_state)
        seed = int(rng.integers(0, 2**31 - 1))
        if not warm:
            self._categories = categories
        scoring = EvalScoring(
            resolve_metrics(self.eval_metric, classifier=self._is_classifier, loss=loss,
                            alpha=getattr(self, "alpha", 0.9)),
            self._metric_prediction,
        )
        if not loss.has_value:
            # a callable loss has no value: its training score is the stopping metric's on the training rows
            train_scoring = EvalScoring(scoring.metrics[-1:], self._metric_prediction)
            loss.value = lambda xp_, raw_, y_, w_: -train_scoring.score(train_scoring.evaluate(xp_, raw_, y_, w_))
        if warm and scoring.names != self._eval_metric_names:
            raise ValueError(
                f"eval_metric {scoring.names} differs from the first fit's {self._eval_metric_names} (warm_start)"
            )

        # validation rows
        val_sets = []
        if eval_set is not None:
            pairs = check_eval_set(eval_set)
            weights = check_eval_sample_weight(eval_sample_weight, len(pairs))
            val_sets = [self._validation_pair(xp, Xv, yv, wv) for (Xv, yv), wv in zip(pairs, weights)]
        elif eval_sample_weight is not None:
            raise ValueError("eval_sample_weight is given without an eval_set")
        es = self._early_stopping_on(n)
        if es and not val_sets:
            train, held = holdout_split(n, self.validation_fraction, y_enc if self._is_classifier else None, seed)
            val_sets = [
                (
                    take_rows(xp, Xd, held),
                    _backend.from_numpy(xp, y_enc[held]),
                    _backend.from_numpy(xp, sw[held]),
                )
            ]
            Xd = take_rows(xp, Xd, train)
            y_enc, sw = y_enc[train], sw[train]
        if not np.any(sw > 0):
            raise ValueError("every training row has sample_weight 0")
        n = int(Xd.shape[0])
        y_dev = _backend.from_numpy(xp, y_enc)
        w_dev = _backend.from_numpy(xp, sw)

        if warm:
            bin_mapper = self._bin_mapper
        else:
            bin_mapper = fit_bin_mapper(xp, Xd, is_cat, self.max_bins, kernels)
            self._bin_mapper = bin_mapper
            self.is_categorical_ = np.asarray(is_cat, dtype=bool)
            self._baseline = self._initial_raw(xp, kernels, loss, y_dev, w_dev)
            self._rounds = []
            self.train_score_ = []
            self.validation_score_ = []
            self._eval_scores = []
            self._eval_metrics = []
        self._eval_metric_names = scoring.names
        codes = bin_mapper.transform(xp, Xd, kernels)
        k = loss.n_trees_per_round
        raw = self._raw_binned(xp, bin_mapper.encode_for_predict(xp, Xd), n)
        evals = [
            EvalSet(xp, Xvp, yv, wv, self._raw_binned(xp, Xvp, int(Xv.shape[0])), bin_mapper.missing_bin, self.n_jobs)
            for Xv, yv, wv in val_sets
            for Xvp in (bin_mapper.encode_for_predict(xp, Xv),)
        ]
        history = BoostHistory(list(self._rounds), list(self.train_score_) if warm else [],
                               [list(v) for v in self._eval_scores] if warm else [[] for _ in evals],
                               [[tuple(r) for r in v] for v in self._eval_metrics] if warm else [[] for _ in evals])
        if not warm:
            history.train_scores.append(-loss.mean_loss(xp, raw, y_dev, w_dev))
            for ev, scores, metrics in zip(evals, history.val_scores, history.val_metrics):
                metrics.append(ev.evaluate(scoring))
                scores.append(scoring.score(metrics[-1]))
        plan = BoostPlan(
            n_rounds=self.n_estimators, seed=seed, n_rows=n,
            n_sub=max(1, int(self.subsample * n)) if self.subsample < 1.0 else n,
            n_features=n_features, n_col=max(1, int(self.colsample_bytree * n_features)), n_trees=k,
        )
        quantised = kernels.fixed_point if self.quantised_gradients == "auto" else bool(self.quantised_gradients)
        rows = LocalRounds(
            xp, kernels, loss, Newton(self.l2_regularization), self._grower_params(n_features), codes, bin_mapper,
            y_dev, w_dev, raw, self.learning_rate, monotonic_cst=mono, quantised=quantised,
            compiled_rounds=plan.n_sub >= n and plan.n_col >= n_features and not quantised and k == 1,
            # (no copy for a sparse X: its fit's memory is the CSR's and the codes')
            codes_by_feature=kernels.feature_major(xp, codes, copy=not is_sparse(Xd)),
        )
        stopped_at = boost(
            rows, loss, plan, history, evals,
            monitor=Monitor(self, self.n_estimators, len(self._rounds), "round"),
            snapshot=functools.partial(self._snapshot, xp, k, history),
            early_stopping=EarlyStopping(self.n_iter_no_change, self.tol, int(self.verbose)) if es else None,
            scoring=scoring,
        )
        return self._finish(xp, k, history.rounds, history.train_scores, history.val_scores, stopped_at,
                            history.val_metrics)

    def _initial_raw(self, xp, kernels, loss, y, w):
        """The raw prediction (K,) before the first round: ``baseline``, else the loss's best constant."""
        k = loss.n_trees_per_round
        if self.baseline is None:
            return loss.baseline(xp, kernels, y, w)
        b = np.asarray(_backend.to_numpy(self.baseline) if _backend.is_array_api_array(self.baseline)
                       else self.baseline, dtype=np.float64)
        if b.ndim == 0:
            b = np.full(k, float(b))
        if b.shape != (k,) or not np.all(np.isfinite(b)):
            raise ValueError(f"baseline must be a finite number or {k} finite numbers (one per output), "
                             f"got shape {b.shape}")
        return _backend.from_numpy(xp, b)

    def _metric_prediction(self, xp, raw):
        """What the eval metrics take of raw predictions (n, K): see :mod:`gputrees.metrics`."""
        if self._is_classifier:
            proba = self._proba(xp, raw)
            return proba[:, 1] if self.n_classes_ == 2 else proba
        return self._link(xp, raw)

    def _finish(self, xp, k, rounds, train_scores, val_scores, stopped_at=None, val_metrics=()):
        """Set the fitted attributes from the rounds of a fit (K trees each) and their scores; returns self.

        The first host reads of a fit whose rounds read nothing (the GPU's): the
        scores, and the trees grown in the perfect-tree layout, numbered here as
        the level-wise grower numbers its nodes.
        """
        self._rounds = _laid_out(xp, rounds)
        self.train_score_ = _host_scores(train_scores)
        self._eval_scores = [_host_scores(s) for s in val_scores]
        self.validation_score_ = self._eval_scores[-1] if val_scores else np.zeros(0, dtype=np.float64)
        self._eval_metrics = [
            np.asarray([[float(v) for v in step] for step in steps], dtype=np.float64) for steps in val_metrics
        ]
        # XGBoost's layout: each set's metrics after every round (the baseline's values left out)
        self.evals_result_ = {
            f"validation_{i}": {name: values[1:, j].tolist() for j, name in enumerate(self._eval_metric_names)}
            for i, values in enumerate(self._eval_metrics)
        }
        self.best_iteration_ = None
        if val_scores:
            # best round (0-based) by the last validation set, ignoring the baseline
            self.best_iteration_ = int(np.argmax(self.validation_score_[1:]))
            if stopped_at is not None:
                self._rounds = self._rounds[: self.best_iteration_ + 1]
        self.n_iter_ = len(self._rounds)
        self.n_trees_per_iteration_ = k
        self._forest_cache = _stack_rounds(xp, self._rounds) if self._rounds else None
        return self

    def _snapshot(self, xp, k, history, n_rounds):
        """A fitted shallow copy holding the first ``n_rounds`` of a fit's growing history (``IterationEnv.model``)."""
        later = len(history.rounds) - n_rounds  # rounds (and scores) appended after this snapshot was taken
        scores = [v[: len(v) - later] for v in history.val_scores]
        metrics = [v[: len(v) - later] for v in history.val_metrics]
        return copy.copy(self)._finish(xp, k, history.rounds[:n_rounds],
                                       history.train_scores[: len(history.train_scores) - later], scores,
                                       val_metrics=metrics)

    def _validation_pair(self, xp, Xv, yv, wv=None):
        Xvd, _, _ = to_numeric_2d(Xv, xp, None, self._categories)
        if Xvd.shape[1] != self.n_features_in_:
            raise ValueError(f"eval_set X has {Xvd.shape[1]} features, X has {self.n_features_in_}")
        check_finite_x(xp, Xvd)
        n = int(Xvd.shape[0])
        yv_host = y_to_host(yv, n, multi_output=False)
        yv_enc = self._encode_eval_y(yv_host)
        try:
            wv_host = sample_weight_to_host(wv, n)
        except ValueError as exc:
            raise ValueError(f"eval_sample_weight: {exc}") from None
        return Xvd, _backend.from_numpy(xp, yv_enc), _backend.from_numpy(xp, wv_host)

    def _forest(self):
        """All rounds as one padded batch and its values (built at the end of fit)."""
        return self._forest_cache

    def _raw_binned(self, xp, Xp, n):
        """Raw predictions (n, K) of the fitted rounds for prediction-encoded rows ``Xp``."""
        base = xp.broadcast_to(self._baseline[None, :], (n, int(self._baseline.shape[0])))
        if not getattr(self, "_rounds", None):
            return xp.asarray(base, copy=True)
        batch, values = self._forest()
        n_trees = int(batch.left.shape[0])
        # rounds added in training's order, so that the sums are bit-identical
        # to the raw predictions of the fit (warm_start)
        missing = self._bin_mapper.missing_bin
        if is_sparse(Xp):
            return predict_raw(xp, batch, values, Xp, missing, base, self.n_jobs)
        step = max(1, PREDICT_CHUNK // n_trees)
        parts = [
            predict_raw(xp, batch, values, Xp[s : min(n, s + step), :], missing, base[s : min(n, s + step), :],
                        self.n_jobs)
            for s in range(0, n, step)
        ]  # fmt: skip
        if not parts:
            return xp.asarray(base, copy=True)
        return xp.concat(parts, axis=0)

    def _prepared(self, X):
        check_is_fitted(self, "_rounds")
        xp = _backend.namespace_of(self._baseline)
        # float32 rows stay float32 on NumPy (no float64 copy of X), see fit
        Xd, _, _ = to_numeric_2d(X, xp, None, self._categories, keep_float32=_backend.is_numpy_namespace(xp))
        check_predict_columns(self, X)
        check_finite_x(xp, Xd)
        return xp, self._bin_mapper.encode_for_predict(xp, Xd)

    def _shap_model(self, X):
        """``(xp, rows encoded for prediction, ShapModel)``: the raw score, tree ``t`` adding to output ``t % K``,
        covers the hessian sums (XGBoost's)."""
        xp, Xp = self._prepared(X)
        k = int(self._baseline.shape[0])
        base = xp.asarray(self._baseline, dtype=xp.float64)
        if not self._rounds:
            return xp, Xp, ShapModel(None, None, None, base, self._bin_mapper.missing_bin, k == 1)
        batch, values = self._forest()
        n_trees = int(values.shape[0])
        column = xp.astype(xp.arange(n_trees)[:, None] % k == xp.arange(k)[None, :], xp.float64)  # (trees, K)
        model = ShapModel(
            batch=batch, values=values[:, :, None] * column[:, None, :],
            cover=Newton().weight(xp, batch.stats), base=base, missing_bin=self._bin_mapper.missing_bin,
            one_output=k == 1,
        )
        return xp, Xp, model

    def _raw_predict(self, X):
        xp, Xp = self._prepared(X)
        return xp, self._raw_binned(xp, Xp, int(Xp.shape[0]))

    def _staged_raw(self, X):
        xp, Xp = self._prepared(X)
        n = int(Xp.shape[0])
        raw = xp.broadcast_to(self._baseline[None, :], (n, int(self._baseline.shape[0])))
        for r in self._rounds:
            leaves = apply_trees(xp, r.batch, Xp, self._bin_mapper.missing_bin, n_jobs=self.n_jobs)
            raw = raw + gather_node_values(xp, r.values, leaves)
            yield xp, raw

    # -- trees and importances -------------------------------------------------
    @property
    def trees_(self):
        """All trees as one padded :class:`~gputrees._records.TreeBatch` (n_iter_ * K trees x nodes).

        Tree ``r * K + k`` is round ``r``'s tree of class ``k``.
        """
        check_is_fitted(self, "_rounds")
        return self._forest()[0]

    @property
    def tree_values_(self):
        """Value each node adds to the raw prediction (learning rate included), (n_trees, n_nodes) float64."""
        check_is_fitted(self, "_rounds")
        return self._forest()[1]

    def get_feature_importance(self, importance_type="gain"):
        """Per-feature importance, shape (n_features_in_,), float64, summing to 1 (0 if no split).

        Parameters
        ----------
        importance_type : {"gain", "split"}
            ``"gain"``: total split gain ``G_l^2/(H_l+l2) + G_r^2/(H_r+l2) -
            G^2/(H+l2)`` of the feature's splits; ``"split"``: how many splits
            use it.
        """
        check_is_fitted(self, "_rounds")
        if importance_type not in ("gain", "split"):
            raise ValueError(f"importance_type must be 'gain' or 'split', got {importance_type!r}")
        out = np.zeros(self.n_features_in_, dtype=np.float64)
        crit = Newton(self.l2_regularization)
        for r in self._rounds:
            b = r.batch
            left = _backend.to_numpy(b.left)
            right = _backend.to_numpy(b.right)
            feat = _backend.to_numpy(b.feature)
            stats = _backend.to_numpy(b.stats)
            t, i = np.nonzero(left >= 0)
            if importance_type == "split":
                np.add.at(out, feat[t, i], 1.0)
                continue
            gain = (
                crit.score(np, stats[t, left[t, i]])
                + crit.score(np, stats[t, right[t, i]])
                - crit.score(np, stats[t, i])
            )
            np.add.at(out, feat[t, i], np.maximum(gain, 0.0))
        total = out.sum()
        return out / total if total > 0 else out

    @property
    def feature_importances_(self):
        """Normalised total split gain of each feature, shape (n_features_in_,)."""
        return self.get_feature_importance("gain")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True  # scipy.sparse X, see gputrees._sparse
        return tags


_PARAMS_DOC = """
    learning_rate : float, default=0.1
        Shrinkage of every tree's values.
    n_estimators : int, default=100
        Number of boosting rounds (most, with early stopping).
    max_depth : int or None, default=6
        Maximum depth of each tree (depth-wise growth, as XGBoost's default).
    max_leaf_nodes : int or None, default=None
        Grow best-first (the leaf of largest gain next) up to this many leaves.
    min_samples_leaf : int, default=20
        Minimum number of (sampled) rows in a leaf.
    min_child_weight : float, default=1e-3
        Minimum hessian sum in a leaf (XGBoost's ``min_child_weight``).
    min_split_gain : float, default=0.0
        A split is made only if its gain is larger than this (LightGBM's
        ``min_gain_to_split``; XGBoost's ``gamma`` on the same gain scale,
        applied while growing rather than by post-pruning).
    l2_regularization : float, default=0.0
        L2 penalty on leaf values: leaf value ``-G / (H + l2_regularization)``.
    subsample : float, default=1.0
        Fraction of the rows drawn (without replacement) each round; the
        others get zero gradient and hessian, as XGBoost's uniform sampling.
    max_features : int, float or None, default=None
        Features searched per split (a float is a fraction of them).
    colsample_bytree : float, default=1.0
        Fraction of the features each tree may use.
    max_bins : int, default=255
        Value bins per feature (2 .. 65535); missing values get one more.
        Codes are uint8 up to 255 and uint16 above (256 included: with the
        missing bin that makes 257 codes), which doubles the binned matrix
        and slows the histograms.
    categorical_features : array-like or None, default=None
        Columns split as categories (indices, names or mask); pandas
        ``category`` columns always are.
    monotonic_cst : array-like of int of shape (n_features,), dict or None, default=None
        -1 / 0 / +1 per feature (or {index or name: constraint}): the
        prediction must decrease / may do anything / must increase with the
        feature, enforced as XGBoost does (ordered children, bounds passed
        down). Not for categorical features or multi-class classification.
    early_stopping : "auto" or bool, default="auto"
        Stop when the validation loss has not improved by more than ``tol``
        for ``n_iter_no_change`` rounds; "auto" turns it on above 10,000
        rows. The model keeps the rounds up to the best one
        (``best_iteration_``).
    validation_fraction : float, default=0.1
        Rows held out for early stopping when no ``eval_set`` is given
        (stratified for classifiers).
    n_iter_no_change : int, default=10
    tol : float, default=1e-7
    random_state : int, RandomState instance or None, default=None
        Seed of the subsampling, the feature draws and the validation split.
    device : {None, "cpu", "cuda"}, default=None
        None follows the input (CuPy arrays train on the GPU).
    verbose : int, default=0
        Above 0, show the rounds done, the training and validation loss and
        the time left: a tqdm progress bar when tqdm is installed, else a
        line every ``verbose`` rounds.
    callbacks : list or None, default=None
        Objects with ``on_iteration(env) -> bool`` called after every round
        with a :class:`gputrees.callbacks.IterationEnv`; True stops the fit,
        keeping the rounds done (see :mod:`gputrees.callbacks`).
    warm_start : bool, default=False
        Fit more rounds on a fitted model (raise ``n_estimators`` and fit
        again on the same data).
    memory_limit : int, default=1 GiB
        Bound on the histogram memory of one level (see ``gputrees._grower``).
    n_jobs : int or None, default=None
        Threads of the compiled CPU kernels (Numba): None or -1 = every core
        (as XGBoost, LightGBM and HistGradientBoosting), -2 = all but one,
        k > 0 = k. The fitted model does not depend on it. Ignored on the GPU
        and by the NumPy fallback kernels (``GPUTREES_KERNELS``).
    baseline : float, array-like of shape (n_trees_per_iteration_,) or None, default=None
        The raw prediction before the first round (XGBoost's ``base_score``
        on the raw scale: log-odds for a classifier, the log of the mean for
        Poisson and gamma). None: the loss's best constant (for a callable
        ``loss``, its weighted minimiser found by Newton steps from zero).
    eval_metric : str, callable or list of them, default=None
        The validation sets' metrics, recorded every round in
        ``evals_result_``; early stopping watches the last one on the last
        set (``validation_score_`` is its score, greater is better). None:
        the fit's loss ("loss"). Names, callables and how a callable says
        greater-is-better (:func:`gputrees.metrics.make_metric`): see
        :mod:`gputrees.metrics`.
    quantised_gradients : "auto" or bool, default="auto"
        Round each round's gradients and hessians (and the row counts) to
        fixed point, one power-of-two scale per channel chosen from the
        largest absolute value (``n_rows * max|g| * scale < 2**52``, see
        :mod:`gputrees.kernels._quantise`). Every histogram sum is then exact:
        the GPU kernels add int64 integers (bit-identical fits run after
        run) and the CPU kernels' float64 sums give the same numbers, so the
        same data gives the same model on the CPU and on the GPU (where the
        loss's gradients are computed alike, see docs/gpu.md). A value
        moves by at most ``n_rows * 2**-52`` of the largest one. "auto": on
        with the GPU (cuda) kernels, off on the CPU.

    Attributes
    ----------
    n_iter_ : int
        Rounds kept.
    n_trees_per_iteration_ : int
    train_score_ : ndarray of shape (n_rounds_fitted + 1,)
        Minus the training loss before the first round and after each round
        (scikit-learn's convention: higher is better).
    validation_score_ : ndarray of shape (n_rounds_fitted + 1,)
        The early-stopping score on the last validation set (empty without
        one): minus the loss, or the last ``eval_metric``'s value (negated
        where lower is better).
    evals_result_ : dict
        ``{"validation_0": {metric name: [value after round 1, ...]}, ...}``:
        every ``eval_metric`` on every validation set (``eval_set`` in
        order, or the rows held out for early stopping), as XGBoost's
        ``evals_result()``; empty without validation rows.
    best_iteration_ : int or None
        0-based round of the best validation score.
    feature_importances_ : ndarray of shape (n_features_in_,)
        Normalised total gain (see :meth:`get_feature_importance`).
    trees_, tree_values_
        The trees as padded arrays and each node's value.
    n_features_in_, feature_names_in_
"""


class GradientBoostingClassifier(ClassifierMixin, _BaseGradientBoosting):
    __doc__ = (
        """Gradient boosting of histogram trees for classification (log-loss).

    Binary: one tree per round on the log-odds (sigmoid link). K > 2 classes:
    K trees per round, grown together as one batch of trees (softmax link).

    Parameters
    ----------
    loss : "log_loss" or callable, default="log_loss"
        A callable is a custom objective ``loss(y_true, raw_prediction,
        sample_weight) -> (gradient, hessian)`` on the raw scores (log-odds
        of class 1 with two classes, shape (n,); K logits otherwise, shape
        (n, K)), ``y_true`` the class indices 0 .. K-1 as float64; the
        returned arrays are weighted by ``sample_weight`` and have the raw
        scores' shape (see :class:`gputrees._loss.CallableLoss`). The
        probabilities stay the sigmoid / softmax of the raw scores.
    """
        + _PARAMS_DOC.replace(
            "    Attributes\n",
            "    class_weight : dict, \"balanced\" or None, default=None\n"
            "        Multiplied into the sample weights.\n\n    Attributes\n",
        )
        + """    classes_ : ndarray of shape (n_classes,)
    n_classes_ : int
    """
    )
    _parameter_constraints = {
        **_BaseGradientBoosting._parameter_constraints,
        "loss": [StrOptions({"log_loss"}), callable],
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }
    _is_classifier = True

    def __init__(
        self,
        *,
        loss="log_loss",
        learning_rate=0.1,
        n_estimators=100,
        max_depth=6,
        max_leaf_nodes=None,
        min_samples_leaf=20,
        min_child_weight=1e-3,
        min_split_gain=0.0,
        l2_regularization=0.0,
        subsample=1.0,
        max_features=None,
        colsample_bytree=1.0,
        max_bins=255,
        categorical_features=None,
        monotonic_cst=None,
        class_weight=None,
        early_stopping="auto",
        validation_fraction=0.1,
        n_iter_no_change=10,
        tol=1e-7,
        random_state=None,
        device=None,
        verbose=0,
        warm_start=False,
        memory_limit=DEFAULT_MEMORY_LIMIT,
        n_jobs=None,
        callbacks=None,
        quantised_gradients="auto",
        eval_metric=None,
        baseline=None,
    ):
        _set_params(self, locals())

    def _encode_y(self, y, sw, fit):
        check_class_labels(y)
        if fit:
            classes, y_enc = encode_classes(y)
            if classes.shape[0] < 2:
                raise ValueError(
                    f"GradientBoostingClassifier needs at least 2 classes in y, got {classes.shape[0]} class"
                )
            self.classes_ = classes
            self.n_classes_ = int(classes.shape[0])
        else:
            y_enc = self._encode_eval_y(y)
            if np.any(y_enc < 0):
                raise ValueError("y has labels not seen in the first fit (warm_start)")
        if self.class_weight is not None:
            sw = sw * compute_sample_weight(self.class_weight, y)
        return y_enc.astype(np.float64), sw

    def _encode_eval_y(self, y):
        return encode_eval_labels(self.classes_, y)

    def _make_loss(self, kernels, first_round=0):
        if callable(self.loss):
            return CallableLoss(self.loss, 1 if self.n_classes_ == 2 else self.n_classes_, first_round)
        if self.n_classes_ == 2:
            return BinaryLogLoss()
        return MultinomialLogLoss(self.n_classes_)

    def decision_function(self, X):
        """Raw scores: log-odds (n_samples,) for two classes, (n_samples, n_classes) otherwise.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        xp, raw = self._raw_predict(X)
        return _backend.output_like(X, raw[:, 0] if self.n_classes_ == 2 else raw)

    def staged_decision_function(self, X):
        """Yield :meth:`decision_function` after each round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        for _, raw in self._staged_raw(X):
            yield _backend.output_like(X, raw[:, 0] if self.n_classes_ == 2 else raw)

    def _proba(self, xp, raw):
        return (BinaryLogLoss() if self.n_classes_ == 2 else MultinomialLogLoss(self.n_classes_)).proba(xp, raw)

    def predict_proba(self, X):
        """Class probabilities, shape (n_samples, n_classes), float64.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        xp, raw = self._raw_predict(X)
        return _backend.output_like(X, self._proba(xp, raw))

    def staged_predict_proba(self, X):
        """Yield :meth:`predict_proba` after each round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        for xp, raw in self._staged_raw(X):
            yield _backend.output_like(X, self._proba(xp, raw))

    def _labels(self, X, xp, raw):
        idx = xp.argmax(raw, axis=1) if self.n_classes_ > 2 else xp.astype(raw[:, 0] > 0, xp.int64)
        return _backend.labels_like(X, self.classes_, idx)

    def predict(self, X):
        """Most probable class of each sample, shape (n_samples,).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        xp, raw = self._raw_predict(X)
        return self._labels(X, xp, raw)

    def staged_predict(self, X):
        """Yield :meth:`predict` after each round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        for xp, raw in self._staged_raw(X):
            yield self._labels(X, xp, raw)


class GradientBoostingRegressor(RegressorMixin, _BaseGradientBoosting):
    __doc__ = (
        """Gradient boosting of histogram trees for regression.

    Parameters
    ----------
    loss : {"squared_error", "absolute_error", "huber", "quantile", "poisson", "gamma"} or callable, \
default="squared_error"
        Half squared error; absolute error and quantile (leaves re-estimated as
        the median / ``alpha``-quantile of their residuals); Huber (``delta``
        the ``alpha``-quantile of the absolute residuals each round); Poisson
        and gamma deviances with a log link (y >= 0 with a positive sum, y > 0).
        A callable is a custom objective ``loss(y_true, raw_prediction,
        sample_weight) -> (gradient, hessian)``, arrays of shape (n,) in the
        fit's namespace (CuPy on the GPU), the returned ones multiplied by
        ``sample_weight``; ``predict`` returns the raw prediction (identity
        link). Leaves are Newton's ``-G / (H + l2)``. See
        :class:`gputrees._loss.CallableLoss` for the checks.
    alpha : float, default=0.9
        Quantile level of ``"quantile"``, and of ``delta`` for ``"huber"``.
    """
        + _PARAMS_DOC
    )
    _parameter_constraints = {
        **_BaseGradientBoosting._parameter_constraints,
        "loss": [StrOptions(set(REGRESSION_LOSSES)), callable],
        "alpha": [Interval(numbers.Real, 0.0, 1.0, closed="neither")],
    }

    def __init__(
        self,
        *,
        loss="squared_error",
        alpha=0.9,
        learning_rate=0.1,
        n_estimators=100,
        max_depth=6,
        max_leaf_nodes=None,
        min_samples_leaf=20,
        min_child_weight=1e-3,
        min_split_gain=0.0,
        l2_regularization=0.0,
        subsample=1.0,
        max_features=None,
        colsample_bytree=1.0,
        max_bins=255,
        categorical_features=None,
        monotonic_cst=None,
        early_stopping="auto",
        validation_fraction=0.1,
        n_iter_no_change=10,
        tol=1e-7,
        random_state=None,
        device=None,
        verbose=0,
        warm_start=False,
        memory_limit=DEFAULT_MEMORY_LIMIT,
        n_jobs=None,
        callbacks=None,
        quantised_gradients="auto",
        eval_metric=None,
        baseline=None,
    ):
        _set_params(self, locals())

    def _encode_y(self, y, sw, fit):
        y = self._encode_eval_y(y)
        if self.loss == "poisson" and (np.any(y < 0) or not np.sum(y * (sw > 0)) > 0):
            raise ValueError("loss='poisson' needs y >= 0 and a positive sum of y")
        if self.loss == "gamma" and np.any(y <= 0):
            raise ValueError("loss='gamma' needs y > 0")
        check_target_scale(y, sw)
        return y, sw

    def _encode_eval_y(self, y):
        return regression_target(y)

    def _make_loss(self, kernels, first_round=0):
        if callable(self.loss):
            return CallableLoss(self.loss, 1, first_round)
        return make_regression_loss(self.loss, self.alpha, kernels)

    def _link(self, xp, raw):
        if self.loss in ("poisson", "gamma"):
            return xp.exp(raw[:, 0])
        return raw[:, 0]

    def predict(self, X):
        """Predicted target, shape (n_samples,), float64.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        xp, raw = self._raw_predict(X)
        return _backend.output_like(X, self._link(xp, raw))

    def staged_predict(self, X):
        """Yield :meth:`predict` after each round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        for xp, raw in self._staged_raw(X):
            yield _backend.output_like(X, self._link(xp, raw))
