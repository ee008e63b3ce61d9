"""AdaBoost: discrete AdaBoost / SAMME for classification, AdaBoost.R2 for regression.

Classification follows the course notes: every row starts with weight
``1/m``; each round fits a weak learner ``h_t`` on the weighted rows, takes
its weighted error ``err_t``, gives it the coefficient

    w_t = 1/2 ln((1 - err_t) / err_t)                   (two classes)
    w_t = 1/2 (ln((1 - err_t) / err_t) + ln(K - 1))     (K classes, SAMME)

(times ``learning_rate``), multiplies the weights of the rows it
misclassifies by ``e^{w_t}`` and of the others by ``e^{-w_t}``, and
normalises. The ensemble predicts ``sign(sum_t w_t h_t(x))`` with
``h_t(x) = +-1`` (two classes) or the class of largest ``sum_t w_t [h_t(x) =
k]`` (K classes).

Relation to scikit-learn: its ``AdaBoostClassifier`` (SAMME) gives learner
``t`` the weight ``alpha_t = ln((1 - err_t) / err_t) + ln(K - 1)``, twice the
course's ``w_t``, and multiplies only the misclassified rows by
``e^{alpha_t}``. After normalisation both updates give the same row weights
(they differ by the common factor ``e^{-w_t}``), and doubling every learner
weight changes neither the sign nor the argmax of the vote, nor the
decision function (it is divided by the sum of the weights). So the learners,
row weights, predictions, ``decision_function`` and ``predict_proba`` are
scikit-learn's, and ``estimator_weights_`` is scikit-learn's divided by 2.
The row-weight update is computed as scikit-learn's (misclassified rows times
``e^{2 w_t}``, then normalised), which is the course's after normalisation.

Regression is AdaBoost.R2 (Drucker, 1997) as in scikit-learn: each round
draws a weighted bootstrap sample (NumPy's ``RandomState``, the same draws as
scikit-learn's for the same ``random_state``), fits the learner on it, scores
every row's loss ``|y - h_t(x)| / max`` (linear, square or exponential), and
predicts the weighted median of the learners.

Data on the device: with a gputrees tree as weak learner (the default), X is
binned once per fit and every round grows one tree on the binned codes with
the row weights held on the device (``_BaseTree._bin_once`` and
``_BaseTree._fit_binned``); errors, weight updates and the regressor's
bootstrap (host-drawn uniforms, searched in the device-side cumulative
weights) are array operations in the data's namespace. Only a few scalars per
round (the weighted error, the weight sum) come back to the host. Any other
estimator (scikit-learn's, say) is cloned and fitted each round on host NumPy
data with ``sample_weight``, exactly as scikit-learn's AdaBoost does.
"""

from __future__ import annotations

import collections
import copy
import functools
import math
import numbers
import warnings
from types import SimpleNamespace

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils import _safe_indexing, check_random_state, get_tags
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import _num_samples, check_is_fitted, has_fit_parameter, validate_data

from . import _backend
from ._model_io import ModelFileMixin
from .explain import ShapMixin, ShapModel
from ._records import stack_batches, stack_node_arrays
from ._classes import DecisionTreeClassifier, DecisionTreeRegressor, _BaseTree
from ._kernel_choice import chooses_kernels
from ._predictor import apply_trees
from .kernels.reference import gather_node_values
from ._progress import Monitor, Step
from ._scoring import ClassifierMixin, RegressorMixin, to_host
from ._state import transactional_fit
from ._validation import check_class_labels, encode_classes, regression_target, sample_weight_to_host, y_to_host
from ._weight_boosting_eval import AdaBoostEvals
from .metrics import encode_eval_labels

__all__ = ["AdaBoostClassifier", "AdaBoostRegressor"]

_EPS = float(np.finfo(np.float64).eps)


def _seeded_clone(template, rs):
    """A clone of ``template`` with every ``random_state`` parameter drawn from ``rs``.

    scikit-learn's ``_set_random_states``: one ``rs.randint(2**31 - 1)`` per
    parameter named ``random_state`` or ``*__random_state``, in sorted order,
    so the draws (and the regressor's bootstrap samples after them) are
    scikit-learn's for the same ``random_state``.
    """
    est = clone(template)
    to_set = {}
    for key in sorted(est.get_params(deep=True)):
        if key == "random_state" or key.endswith("__random_state"):
            to_set[key] = rs.randint(np.iinfo(np.int32).max)
    if to_set:
        est.set_params(**to_set)
    return est


def _n_rows(X) -> int:
    """Number of rows of ``X`` without copying it (array-API arrays stay where they are)."""
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    return _num_samples(X)


def _clip_weights(xp, w, zero):
    """scikit-learn's guard: weights at least machine epsilon, except rows given weight 0."""
    w = xp.clip(w, _EPS, None)
    return w if zero is None else xp.where(zero, xp.zeros_like(w), w)


def _normalised(xp, w, t: int):
    """Row weights ``w`` divided by their sum, or None when boosting must stop.

    None when the sum overflowed (with scikit-learn's warning, ``t`` the
    round) or is not positive.
    """
    total = float(xp.sum(w))
    if not math.isfinite(total):
        warnings.warn(
            f"Sample weights have reached infinite values, at iteration {t}, causing "
            "overflow. Iterations stopped. Try lowering the learning rate.",
            stacklevel=3,
        )
        return None
    if total <= 0:
        return None
    return w / total


class _BaseWeightBoosting(ShapMixin, ModelFileMixin, BaseEstimator):
    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"]), None],
        "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
        "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
        "device": [StrOptions({"cpu", "cuda"}), None],
        "verbose": ["verbose"],
        "callbacks": [list, None],
        "eval_metric": [str, callable, list, tuple, None],
        "early_stopping": ["boolean"],
        "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
    }

    def _template(self):
        """The weak learner to clone each round (``device`` set on gputrees trees)."""
        est = self._default_estimator() if self.estimator is None else clone(self.estimator)
        if self.device is not None and isinstance(est, _BaseTree):
            est.set_params(device=self.device)
        return est

    @staticmethod
    def _binned_path(est) -> bool:
        """Whether rounds grow gputrees trees on data binned once (see the module doc)."""
        return isinstance(est, _BaseTree) and est.pruning is None

    def _start(self, X, y, sample_weight):
        """Common set-up of ``fit``: the learner template, the RNG and the data.

        Returns ``(rs, data)``: ``data.xp`` the namespace of the rounds,
        ``data.y`` the targets there (class codes or floats, (n,)),
        ``data.w`` the initial normalised weights (n,), ``data.zero`` the
        rows given weight 0 (generic path) or None, and what the round
        functions need.
        """
        self._validate_params()
        template = self._template()
        self._check_template(template)
        self.estimator_ = template
        rs = check_random_state(self.random_state)
        if self._binned_path(template):
            y_host = y_to_host(to_host(y), _n_rows(X), multi_output=False)
            first = _seeded_clone(template, rs)
            binned = first._bin_once(X, y_host, sample_weight)
            for name in ("n_features_in_", "feature_names_in_"):
                if name in binned.attrs:
                    setattr(self, name, binned.attrs[name])
                elif hasattr(self, name):
                    delattr(self, name)
            xp = binned.xp
            y_dev = binned.y_dev if self._is_classifier else binned.y_dev[:, 0]
            sw = binned.sample_weight
            w = _backend.from_numpy(xp, sw / sw.sum())
            data = SimpleNamespace(
                xp=xp, y=y_dev, w=w, zero=None, binned=binned, first=first, n_draw=binned.n_input, X=None, y_host=None
            )
            return rs, data
        X_host = self._check_host_X(X, template, reset=True)
        n = int(X_host.shape[0])
        y_host = y_to_host(to_host(y), n, multi_output=False)
        sw = sample_weight_to_host(to_host(sample_weight), n)
        xp = _backend.namespace_for(np.empty(0), "cpu")
        data = SimpleNamespace(
            xp=xp, y=None, w=sw / sw.sum(), zero=sw == 0, binned=None, first=None, n_draw=n, X=X_host, y_host=y_host
        )
        return rs, data

    def _check_host_X(self, X, template, reset):
        """X for learners other than gputrees trees: checked as scikit-learn's AdaBoost does, on the host.

        NaN is let through when the learner allows it; sparse CSR/CSC stays sparse.
        """
        allow_nan = get_tags(template).input_tags.allow_nan
        return validate_data(
            self,
            to_host(X),
            reset=reset,
            accept_sparse=["csr", "csc"],
            ensure_2d=True,
            allow_nd=True,
            dtype=None,
            ensure_all_finite="allow-nan" if allow_nan else True,
        )

    def _round_done(self, monitor, t, weights, errors) -> bool:
        """Show round ``t`` (its learner, weight and error stored) and run the callbacks; True: stop."""
        model = functools.partial(self._snapshot, weights, errors, len(weights))
        return monitor.step(Step(t, len(weights), -errors[-1], model=model))

    def _snapshot(self, weights, errors, n):
        """A fitted shallow copy holding the first ``n`` learners (``IterationEnv.model``)."""
        est = copy.copy(self)
        est.estimators_ = self.estimators_[:n]
        est.estimator_weights_ = np.asarray(weights[:n], dtype=np.float64)
        est.estimator_errors_ = np.asarray(errors[:n], dtype=np.float64)
        return est

    def _next_estimator(self, data, rs):
        """A fresh weak learner for the next round (the first one was made by ``_start``)."""
        if data.first is not None:
            est, data.first = data.first, None
            return est
        return _seeded_clone(self.estimator_, rs)

    # -- prediction helpers ------------------------------------------------------
    def _learner_outputs(self, X):
        """Each learner's output on ``X``, in one namespace.

        Returns ``(xp, outputs)``: ``outputs`` a list of arrays of shape
        (n_samples,) in ``xp`` -- class codes (int64, -1 for a label not in
        ``classes_``) for classifiers, predictions (float64) for regressors.
        gputrees learners share the fit's binning: X is checked and encoded
        once, on the fit's device.
        """
        check_is_fitted(self, "estimators_")
        xp, rows = self._learner_rows(X)
        return xp, [self._learner_output(xp, est, rows) for est in self.estimators_]

    def _learner_rows(self, X):
        """``(xp, rows)``: ``X`` as the learners take it (gputrees learners: checked and encoded once, on the
        fit's device; others: checked host rows), once a learner is fitted."""
        if self._binned_path(self.estimators_[0]):
            return self._encoded_X(X)
        return _backend.namespace_for(np.empty(0), "cpu"), self._check_host_X(X, self.estimator_, reset=False)

    def _learner_output(self, xp, est, rows):
        """One learner's output on ``rows`` (:meth:`_learner_rows`): class codes or predictions, (n,)."""
        if self._binned_path(est):
            return self._tree_output(xp, est, rows)
        return xp.asarray(self._host_output(est.predict(rows)))

    def _evals(self, eval_set, eval_sample_weight):
        """The fit's validation sets (None without), or a ValueError for early stopping or weights without."""
        if eval_set is not None:
            return AdaBoostEvals(self, eval_set, eval_sample_weight)
        if eval_sample_weight is not None:
            raise ValueError("eval_sample_weight is given without an eval_set")
        if self.early_stopping:
            raise ValueError("early_stopping=True watches an eval_set: pass fit(..., eval_set=[(X_val, y_val)])")
        return None

    def _kept(self, evals, weights) -> bool:
        """Score the validation sets after the learner just kept (the last of ``estimators_``); True: stop."""
        if evals is None:
            return False
        evals.add(self.estimators_[-1], weights)
        return evals.should_stop()

    def _finish(self, evals, weights, errors, monitor):
        self.estimator_weights_ = np.asarray(weights, dtype=np.float64)
        self.estimator_errors_ = np.asarray(errors, dtype=np.float64)
        if evals is not None:
            self.evals_result_ = evals.result()
        elif hasattr(self, "evals_result_"):
            del self.evals_result_
        monitor.close()

    def _encoded_X(self, X):
        """``(xp, Xp)``: ``X`` checked and encoded once, on the fit's device, for gputrees learners."""
        first = self.estimators_[0]
        xp, Xd, _, _ = first._prepare_X(X, fit=False)
        return xp, first._bin_mapper.encode_for_predict(xp, Xd)

    def _shap_model(self, X):
        """``(xp, rows encoded for prediction, ShapModel)`` of the decision function (classifier only)."""
        check_is_fitted(self, "estimators_")
        if not self._is_classifier:
            raise TypeError(
                "AdaBoostRegressor predicts the weighted median of its trees, which is not a sum of trees: it has "
                "no exact TreeSHAP values; explain one learner instead (estimators_[i].shap_values(X))"
            )
        if not self._binned_path(self.estimators_[0]):
            raise TypeError(
                f"shap_values needs gputrees trees as learners (without pruning); this model's are "
                f"{type(self.estimators_[0]).__name__} (explain them with their own library)"
            )
        xp, Xp = self._encoded_X(X)
        ests = self.estimators_
        k = int(self.n_classes_)
        weights = np.asarray(self.estimator_weights_[: len(ests)], dtype=np.float64)
        weights = weights / weights.sum()
        values = []
        for est, w in zip(ests, weights):
            leaf_class = xp.argmax(est._values[0, :, 0, :], axis=1)  # the class each node votes for
            hit = xp.astype(leaf_class[:, None] == xp.arange(k)[None, :], xp.float64)  # (nodes, K)
            if k == 2:  # the decision is the vote of classes_[1] minus that of classes_[0]
                vote = 2.0 * float(w) * (hit[:, 1:] - hit[:, :1])
            elif k > 2:
                vote = float(w) * (hit - (1.0 - hit) / (k - 1))
            else:
                vote = xp.zeros_like(hit)
            values.append(vote[None, ...])
        batch = stack_batches(xp, [est._batch for est in ests])
        width = int(batch.left.shape[1])
        cover = stack_node_arrays(xp, [est._criterion.weight(xp, est._batch.stats) for est in ests], 0.0, width)
        model = ShapModel(
            batch=batch, values=stack_node_arrays(xp, values, 0.0, width), cover=cover, base=None,
            missing_bin=ests[0]._bin_mapper.missing_bin, one_output=k == 2,
        )
        return xp, Xp, model

    def _tree_output(self, xp, est, Xp):
        """Output of a gputrees tree on encoded rows ``Xp`` (device)."""
        leaves = apply_trees(xp, est._batch, Xp, est._bin_mapper.missing_bin, n_jobs=getattr(est, "n_jobs", None))
        v = gather_node_values(xp, est._values, leaves)[:, 0, 0, :]  # (n, k)
        if self._is_classifier:
            return xp.argmax(v, axis=1)
        return v[:, 0]

    @property
    def feature_importances_(self):
        """Learner-weighted mean of the learners' feature importances, shape (n_features,), float64.

        ``sum_t w_t * importances_t / sum_t w_t``, as scikit-learn (the factor
        between the two weight conventions cancels).
        """
        check_is_fitted(self, "estimators_")
        try:
            fis = [np.asarray(to_host(est.feature_importances_), dtype=np.float64) for est in self.estimators_]
        except AttributeError as exc:
            raise AttributeError(
                "Unable to compute feature importances since estimator does not have a "
                "feature_importances_ attribute"
            ) from exc
        w = self.estimator_weights_
        return sum(wt * fi for wt, fi in zip(w, fis)) / w.sum()

    def staged_score(self, X, y, sample_weight=None):
        """Accuracy (classifier) or R^2 (regressor) after each round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        y : array-like of shape (n_samples,)
            True labels (classifier) or targets (regressor).
        sample_weight : array-like of shape (n_samples,), default=None

        Yields
        ------
        score : float
        """
        yield from _staged_host_scores(self._metric, y, self.staged_predict(X), sample_weight)

    def __len__(self):
        return len(getattr(self, "estimators_", []))

    def __getitem__(self, index):
        return self.estimators_[index]

    def __iter__(self):
        return iter(self.estimators_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        est = self._default_estimator() if self.estimator is None else self.estimator
        if hasattr(est, "__sklearn_tags__"):
            learner_tags = get_tags(est).input_tags
            tags.input_tags.allow_nan = learner_tags.allow_nan
            tags.input_tags.sparse = learner_tags.sparse
        return tags


def _staged_host_scores(metric, y, preds, sample_weight):
    y = np.asarray(to_host(y))
    sw = None if sample_weight is None else np.asarray(to_host(sample_weight))
    for pred in preds:
        yield metric(y, _backend.to_numpy(pred), sample_weight=sw)


# =============================================================================
# Classification
# =============================================================================


class AdaBoostClassifier(ClassifierMixin, _BaseWeightBoosting):
    """Discrete AdaBoost (two classes) and SAMME (K classes), with the course's learner weights.

    Start with row weights ``1/m`` (or the normalised ``sample_weight``); each
    round fits a weak learner on the weighted rows, computes its weighted
    error ``err_t`` and its coefficient ``w_t = learning_rate * 1/2 (ln((1 -
    err_t) / err_t) + ln(K - 1))`` (``1/2 ln((1 - err_t) / err_t)`` for two
    classes), multiplies the weights of the misclassified rows by ``e^{w_t}``
    and of the others by ``e^{-w_t}``, and normalises. The prediction is
    ``sign(sum_t w_t h_t(x))`` (two classes, ``h_t = +-1``) or the class of
    largest weighted vote.

    ``estimator_weights_`` is scikit-learn's divided by 2 (scikit-learn uses
    ``ln((1 - err) / err) + ln(K - 1)``); everything else (learners, row
    weights, predictions, decision function, probabilities) is the same as
    scikit-learn's ``AdaBoostClassifier`` for the same learners. Boosting
    stops early, as scikit-learn: at a perfect learner (``err_t = 0``; it is
    kept with weight 1/2, scikit-learn's 1) and at a learner no better than
    chance (``err_t >= 1 - 1/K``; it is dropped, and if it is the first one
    fitting fails with a ValueError).

    Parameters
    ----------
    estimator : object or None, default=None
        The weak learner, cloned each round; it must accept ``sample_weight``
        in ``fit``. None: a gputrees stump, ``DecisionTreeClassifier(max_depth=1)``.
        gputrees trees grow on data binned once, with device-resident row
        weights; other estimators (e.g. scikit-learn's) get host NumPy data.
    n_estimators : int, default=50
        Largest number of rounds (fewer when boosting stops early).
    learning_rate : float, default=1.0
        Factor of every learner weight ``w_t`` (> 0).
    random_state : int, RandomState instance or None, default=None
        Draws a seed for each learner's ``random_state`` parameters, as
        scikit-learn (matters for learners with ``max_features``, for example).
    device : {None, "cpu", "cuda"}, default=None
        Set as the ``device`` of gputrees learners: None follows the input
        (CuPy arrays train on the GPU) or the learner's own ``device``.
        Ignored for other learners.
    verbose : int, default=0
        Above 0, show the rounds done, the round's weighted error (as "train
        loss") and the time left: a tqdm progress bar when tqdm is
        installed, else a line every ``verbose`` rounds.
    callbacks : list or None, default=None
        Objects with ``on_iteration(env) -> bool`` called after every round
        with a :class:`gputrees.callbacks.IterationEnv` (``train_score`` is
        minus the round's weighted error); True stops the fit, keeping the
        learners fitted (see :mod:`gputrees.callbacks`).
    eval_metric : str, callable or list of them, default=None
        What ``fit(..., eval_set=...)`` scores its validation sets with after
        every learner (:mod:`gputrees.metrics`: "error", "logloss", "auc" or a
        callable ``f(y_true, proba, sample_weight)``); None: "error". The
        metrics see the ensemble's probabilities so far (two classes: of
        ``classes_[1]``), as ``staged_predict_proba``.
    early_stopping : bool, default=False
        Stop once the last ``eval_metric`` on the last ``eval_set`` has not
        improved by ``tol`` in ``n_iter_no_change`` learners (scikit-learn's
        rule), keeping the learners fitted; needs an ``eval_set``.
    n_iter_no_change : int, default=10
    tol : float, default=1e-7

    Attributes
    ----------
    estimator_ : estimator
        The template the learners are cloned from.
    estimators_ : list of estimators
        The fitted learners, one per completed round.
    estimator_weights_ : ndarray of shape (n_rounds,), float64
        The course's learner weights ``w_t`` (scikit-learn's / 2).
    estimator_errors_ : ndarray of shape (n_rounds,), float64
        Weighted training error ``err_t`` of each learner (weights summing to 1).
    classes_ : ndarray of shape (n_classes,)
    n_classes_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when X was a DataFrame with string column names.
    feature_importances_ : ndarray of shape (n_features_in_,), float64
    evals_result_ : dict
        With an ``eval_set``: ``{"validation_i": {metric: [value after each
        learner]}}``, as gradient boosting's and XGBoost's.

    Notes
    -----
    ``estimator_weights_`` and ``estimator_errors_`` have one entry per kept
    learner (scikit-learn pads them to ``n_estimators`` with 0 and 1).
    """

    _parameter_constraints = {**_BaseWeightBoosting._parameter_constraints}
    _metric = staticmethod(accuracy_score)
    _is_classifier = True

    def __init__(
        self,
        estimator=None,
        *,
        n_estimators=50,
        learning_rate=1.0,
        random_state=None,
        device=None,
        verbose=0,
        callbacks=None,
        eval_metric=None,
        early_stopping=False,
        n_iter_no_change=10,
        tol=1e-7,
    ):
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.callbacks = callbacks
        self.eval_metric = eval_metric
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol

    def _default_estimator(self):
        return DecisionTreeClassifier(max_depth=1)

    def _check_template(self, est):
        if not has_fit_parameter(est, "sample_weight"):
            raise ValueError(f"{type(est).__name__} doesn't support sample_weight.")

    def _host_output(self, pred):
        """Class codes of host label predictions (-1 for a label not in ``classes_``)."""
        pred = np.asarray(pred)
        pos = np.clip(np.searchsorted(self.classes_, pred), 0, self.n_classes_ - 1)
        return np.where(self.classes_[pos] == pred, pos, -1).astype(np.int64)

    @transactional_fit
    @chooses_kernels
    def fit(self, X, y, sample_weight=None, eval_set=None, eval_sample_weight=None):
        """Boost weak learners on (X, y).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array; NaN marks missing
            values (gputrees learners).
        y : array-like of shape (n_samples,)
            Class labels (any type np.unique can sort).
        sample_weight : array-like of shape (n_samples,), optional
            Initial row weights (normalised to sum 1); None: ``1/m`` each.
            Rows of weight 0 take no part.
        eval_set : list of (X_val, y_val) pairs, optional
            Validation sets scored with ``eval_metric`` after every learner
            (``evals_result_``); early stopping watches the last one.
        eval_sample_weight : list of array-like or None, optional
            One weight vector (or None: every row 1) per ``eval_set`` pair,
            weighting its rows in the metrics: a row of weight 2 counts as
            that row twice.

        Returns
        -------
        self
        """
        rs, data = self._start(X, y, sample_weight)
        evals = self._evals(eval_set, eval_sample_weight)
        xp = data.xp
        if data.binned is not None:
            self.classes_ = data.binned.attrs["classes_"]
            y_codes = data.y
        else:
            check_class_labels(data.y_host)
            self.classes_, codes = encode_classes(data.y_host)
            y_codes = xp.asarray(codes)
        self.n_classes_ = k = int(self.classes_.shape[0])
        self.estimators_ = []
        weights, errors = [], []
        w = data.w
        monitor = Monitor(self, self.n_estimators, 0, "round")
        for t in range(self.n_estimators):
            w = _clip_weights(xp, w, data.zero)
            est = self._next_estimator(data, rs)
            if data.binned is not None:
                est._fit_binned(data.binned, w)
                codes = self._tree_output(xp, est, data.binned.X_predict)
            else:
                est.fit(data.X, data.y_host, sample_weight=_backend.to_numpy(w))
                codes = xp.asarray(self._host_output(est.predict(data.X)))
            self.estimators_.append(est)
            incorrect = xp.astype(codes != y_codes, xp.float64)
            err = float(xp.sum(w * incorrect) / xp.sum(w))
            if err <= 0.0:  # perfect learner: scikit-learn's weight 1 (1/2 here), stop
                weights.append(0.5)
                errors.append(0.0)
                self._kept(evals, weights)
                self._round_done(monitor, t, weights, errors)
                break
            if err >= 1.0 - 1.0 / k:  # no better than chance: drop it and stop
                self.estimators_.pop()
                if not self.estimators_:
                    raise ValueError(
                        "BaseClassifier in AdaBoostClassifier ensemble is worse than random, "
                        f"ensemble can not be fit (weighted error {err:.4g} >= 1 - 1/{k})."
                    )
                break
            w_t = self.learning_rate * 0.5 * (math.log((1.0 - err) / err) + math.log(k - 1.0))
            weights.append(w_t)
            errors.append(err)
            stop = self._kept(evals, weights)
            if self._round_done(monitor, t, weights, errors) or stop or t == self.n_estimators - 1:
                break
            # course: misclassified * e^{w_t}, correct * e^{-w_t}, normalise;
            # computed as misclassified * e^{2 w_t}, normalise (the same weights)
            w = _normalised(xp, w * xp.exp((2.0 * w_t) * incorrect), t)
            if w is None:
                break
        self._finish(evals, weights, errors, monitor)
        return self

    # -- prediction ---------------------------------------------------------------
    def _votes(self, xp, codes, w_t):
        """SAMME vote of one learner: ``w_t`` for its class, ``-w_t / (K - 1)`` for the others, (n, K)."""
        k = self.n_classes_
        hit = codes[:, None] == xp.arange(k, dtype=xp.int64)[None, :]
        other = -w_t / (k - 1) if k > 1 else 0.0
        return xp.where(hit, xp.asarray(w_t, dtype=xp.float64), xp.asarray(other, dtype=xp.float64))

    def _vote_step(self, xp, votes_so_far, codes, w_t):
        """``(votes, norm, decision)`` after one more learner (``votes_so_far``: (votes, norm), or None)."""
        w_t = float(w_t)
        votes = self._votes(xp, codes, w_t)
        acc, norm = (votes, w_t) if votes_so_far is None else (votes_so_far[0] + votes, votes_so_far[1] + w_t)
        k = self.n_classes_
        if k == 1:
            return acc, norm, xp.zeros((codes.shape[0], 1), dtype=xp.float64)
        if k == 2:
            return acc, norm, (acc[:, 1] - acc[:, 0]) / norm
        return acc, norm, acc / norm

    def _staged_decision(self, X):
        """Yields ``(xp, decision)`` after each learner, in the fit's namespace."""
        xp, outputs = self._learner_outputs(X)
        so_far = None
        for codes, w_t in zip(outputs, self.estimator_weights_):
            acc, norm, dec = self._vote_step(xp, so_far, codes, w_t)
            so_far = (acc, norm)
            yield xp, dec

    def _eval_target(self, y, n):
        """A validation set's labels as float64 class indices (host)."""
        return encode_eval_labels(self.classes_, y_to_host(to_host(y), n, multi_output=False))

    def _eval_stage(self, xp, so_far, codes, learner_weights):
        """``(so_far, probabilities)`` after one more learner, as :meth:`staged_predict_proba` (two classes:
        of ``classes_[1]``, shape (n,)); ``so_far`` the votes before it (None at the first)."""
        acc, norm, dec = self._vote_step(xp, so_far, codes, learner_weights[-1])
        proba = self._proba(xp, dec)
        return (acc, norm), (proba[:, 1] if self.n_classes_ == 2 else proba)

    def _final_decision(self, X):
        """The last stage of :meth:`_staged_decision`: ``(xp, decision)``."""
        return collections.deque(self._staged_decision(X), maxlen=1)[0]

    def staged_decision_function(self, X):
        """Decision function after each round (see :meth:`decision_function`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.

        Yields
        ------
        score : array of shape (n_samples,) or (n_samples, n_classes), float64
            In the namespace of ``X`` (NumPy for NumPy/pandas input).
        """
        for _, dec in self._staged_decision(X):
            yield _backend.output_like(X, dec)

    def decision_function(self, X):
        """Normalised weighted vote, as scikit-learn's SAMME decision function.

        Two classes: ``2 * sum_t w_t h_t(x) / sum_t w_t`` with ``h_t = -1``
        for ``classes_[0]`` and ``+1`` for ``classes_[1]`` (the course's
        ``sum_t w_t h_t(x)``, scaled to [-2, 2]); positive means
        ``classes_[1]``. K classes: column k is ``sum_t w_t ([h_t(x) = k] -
        [h_t(x) != k] / (K - 1)) / sum_t w_t``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        score : array of shape (n_samples,) (two classes) or (n_samples, n_classes), float64
            In the namespace of ``X`` (NumPy for NumPy/pandas input).
        """
        return _backend.output_like(X, self._final_decision(X)[1])

    def _labels(self, X, xp, dec):
        if self.n_classes_ == 2:
            idx = xp.astype(dec > 0, xp.int64)
        else:
            idx = xp.argmax(dec, axis=1)
        return _backend.labels_like(X, self.classes_, idx)

    def predict(self, X):
        """Class of largest weighted vote (two classes: the sign of :meth:`decision_function`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y : array of shape (n_samples,)
            Labels from ``classes_``; in the namespace of an array-API ``X``
            when the labels are numeric, else NumPy.
        """
        xp, dec = self._final_decision(X)
        return self._labels(X, xp, dec)

    def staged_predict(self, X):
        """Predictions after each round (see :meth:`predict`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.

        Yields
        ------
        y : array of shape (n_samples,)
        """
        for xp, dec in self._staged_decision(X):
            yield self._labels(X, xp, dec)

    def _proba(self, xp, dec):
        k = self.n_classes_
        if k == 1:
            return xp.ones((dec.shape[0], 1), dtype=xp.float64)
        if k == 2:
            z = xp.stack([-dec, dec], axis=1) / 2.0
        else:
            z = dec / (k - 1)
        z = xp.exp(z - xp.max(z, axis=1, keepdims=True))
        return z / xp.sum(z, axis=1, keepdims=True)

    def predict_proba(self, X):
        """Class probabilities from the decision function, as scikit-learn's SAMME.

        ``softmax(decision / (K - 1))`` (two classes: the logistic function of
        the decision, ``1 / (1 + exp(-decision))`` for ``classes_[1]``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : array of shape (n_samples, n_classes), float64
            In the namespace of ``X`` (NumPy for NumPy/pandas input).
        """
        xp, dec = self._final_decision(X)
        return _backend.output_like(X, self._proba(xp, dec))

    def staged_predict_proba(self, X):
        """Class probabilities after each round (see :meth:`predict_proba`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.

        Yields
        ------
        proba : array of shape (n_samples, n_classes), float64
        """
        for xp, dec in self._staged_decision(X):
            yield _backend.output_like(X, self._proba(xp, dec))

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`, shape (n_samples, n_classes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        return _backend.log_like(self.predict_proba(X))

    def staged_sample_weight(self, X, y, sample_weight=None):
        """Row weights each learner was fitted with, recomputed from the fitted learners.

        Round 1 uses ``sample_weight`` normalised (``1/m`` without); after
        round t the weights of the rows learner t misclassifies are multiplied
        by ``e^{w_t}``, the others by ``e^{-w_t}``, and normalised -- the
        update of :meth:`fit`, replayed from the learners' predictions on
        ``(X, y)``. On the training data these are the weights of the fit
        (up to the machine-epsilon floor scikit-learn puts under the weights).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional

        Yields
        ------
        weights : ndarray of shape (n_samples,), float64
            One per learner, summing to 1.
        """
        xp, outputs = self._learner_outputs(X)
        y_host = np.asarray(to_host(y))
        n = int(outputs[0].shape[0])
        y_codes = self._host_output(y_host)
        sw = sample_weight_to_host(to_host(sample_weight), n)
        w = sw / sw.sum()
        for codes, w_t in zip(outputs, self.estimator_weights_):
            yield w.copy()
            incorrect = _backend.to_numpy(codes) != y_codes
            w = w * np.where(incorrect, math.exp(w_t), math.exp(-w_t))
            w = w / w.sum()


# =============================================================================
# Regression
# =============================================================================


def _weighted_bootstrap(xp, rs, w, n_draw: int):
    """scikit-learn's ``rs.choice(n, n_draw, p=w)`` with the weights on the device.

    NumPy's ``RandomState.choice`` with ``p`` draws ``n_draw`` uniforms and
    searches them in the normalised cumulative weights; the uniforms come
    from ``rs`` on the host (the same stream), the search runs in ``xp``.

    Returns
    -------
    idx : array of shape (n_draw,), int64, in ``xp``
        The drawn rows.
    counts : array of shape (n,), float64, in ``xp``
        How many times each row was drawn.
    """
    u = _backend.from_numpy(xp, rs.random_sample(n_draw))
    cdf = xp.cumulative_sum(w)
    cdf = cdf / cdf[-1]
    idx = xp.astype(xp.searchsorted(cdf, u, side="right"), xp.int64)
    idx = xp.clip(idx, 0, w.shape[0] - 1)
    s = xp.sort(idx, stable=False)
    rows = xp.arange(w.shape[0], dtype=xp.int64)
    counts = xp.searchsorted(s, rows, side="right") - xp.searchsorted(s, rows, side="left")
    return idx, xp.astype(counts, xp.float64)


class AdaBoostRegressor(RegressorMixin, _BaseWeightBoosting):
    """AdaBoost.R2 (Drucker, 1997), as scikit-learn's ``AdaBoostRegressor``.

    Each round draws a bootstrap sample of the rows with probabilities equal
    to their weights (normalised; ``1/m`` at first), fits the learner on it,
    and scores every row's loss ``L_i = |y_i - h_t(x_i)| / max_j |y_j -
    h_t(x_j)|`` (``loss="linear"``; squared for ``"square"``, ``1 -
    exp(-L_i)`` for ``"exponential"``). With the average loss ``err_t =
    sum_i w_i L_i`` and ``beta_t = err_t / (1 - err_t)``, the learner gets
    weight ``learning_rate * ln(1 / beta_t)`` and the row weights are
    multiplied by ``beta_t ** ((1 - L_i) * learning_rate)`` (rows it predicts
    well lose weight) and normalised. Boosting stops at a perfect learner
    (``err_t = 0``, kept with weight 1) or at ``err_t >= 0.5`` (that learner
    is dropped unless it is the first). The prediction is the weighted median
    of the learners' predictions.

    The bootstrap draws are scikit-learn's for the same ``random_state``
    (``RandomState.choice`` with the weights as probabilities, after one seed
    draw per ``random_state`` parameter of the learner). A gputrees learner
    grows on the rows binned once per fit, with the draw counts as row
    multiplicities (a row drawn k times counts k times in
    ``n_node_samples``, as the repeated rows scikit-learn fits on): with
    exact bins (``max_bins`` at least the number of distinct values of every
    feature) each tree is the one a fit on the sample grows; a feature with
    more distinct values is split at quantile edges of all the training rows
    rather than of each sample.

    Parameters
    ----------
    estimator : object or None, default=None
        The learner, cloned each round (it needs no ``sample_weight``). None:
        ``gputrees.DecisionTreeRegressor(max_depth=3)``.
    n_estimators : int, default=50
    learning_rate : float, default=1.0
        Shrinks the learner weights and the row-weight updates (> 0).
    loss : {"linear", "square", "exponential"}, default="linear"
    random_state : int, RandomState instance or None, default=None
        Seeds the bootstrap draws and the learners' ``random_state``.
    device, verbose, callbacks
        As for :class:`AdaBoostClassifier` (the error shown is ``err_t``).
    eval_metric : str, callable or list of them, default=None
        As for :class:`AdaBoostClassifier`, over the ensemble's predictions
        so far (``staged_predict``): "rmse", "mse", "mae", "mape", "r2"...;
        None: "rmse".
    early_stopping : bool, default=False
    n_iter_no_change : int, default=10
    tol : float, default=1e-7
        As for :class:`AdaBoostClassifier`.

    Attributes
    ----------
    estimator_ : estimator
    estimators_ : list of estimators
    estimator_weights_ : ndarray of shape (n_rounds,), float64
        ``learning_rate * ln(1 / beta_t)`` (scikit-learn's; 0 for a first
        learner with ``err_t >= 0.5``, kept alone).
    estimator_errors_ : ndarray of shape (n_rounds,), float64
        Average loss ``err_t`` of each learner.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
    feature_importances_ : ndarray of shape (n_features_in_,), float64
    evals_result_ : dict
        With an ``eval_set`` (see :class:`AdaBoostClassifier`).
    """

    _metric = staticmethod(r2_score)
    _parameter_constraints = {
        **_BaseWeightBoosting._parameter_constraints,
        "loss": [StrOptions({"linear", "square", "exponential"})],
    }
    _is_classifier = False

    def __init__(
        self,
        estimator=None,
        *,
        n_estimators=50,
        learning_rate=1.0,
        loss="linear",
        random_state=None,
        device=None,
        verbose=0,
        callbacks=None,
        eval_metric=None,
        early_stopping=False,
        n_iter_no_change=10,
        tol=1e-7,
    ):
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.loss = loss
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.callbacks = callbacks
        self.eval_metric = eval_metric
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol

    def _default_estimator(self):
        return DecisionTreeRegressor(max_depth=3)

    def _check_template(self, est):
        pass  # learners are fitted on bootstrap samples, without sample_weight

    def _host_output(self, pred):
        return np.asarray(pred, dtype=np.float64).reshape(-1)

    @transactional_fit
    @chooses_kernels
    def fit(self, X, y, sample_weight=None, eval_set=None, eval_sample_weight=None):
        """Boost regressors on (X, y).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Numeric targets.
        sample_weight : array-like of shape (n_samples,), optional
            Initial row weights (normalised); None: ``1/m`` each. Rows of
            weight 0 are never drawn.
        eval_set, eval_sample_weight
            As for :meth:`AdaBoostClassifier.fit`.

        Returns
        -------
        self
        """
        rs, data = self._start(X, y, sample_weight)
        evals = self._evals(eval_set, eval_sample_weight)
        xp = data.xp
        if data.binned is not None:
            y_t = data.y
        else:
            y_host = data.y_host
            if y_host.dtype.kind not in "biuf":
                try:
                    y_host = y_host.astype(np.float64)
                except (TypeError, ValueError) as exc:
                    raise ValueError(f"y must be numeric for regression, got dtype {y_host.dtype}") from exc
            y_t = xp.asarray(y_host.astype(np.float64))
        self.estimators_ = []
        weights, errors = [], []
        w = data.w
        ones = xp.ones(w.shape, dtype=xp.float64)
        monitor = Monitor(self, self.n_estimators, 0, "round")
        for t in range(self.n_estimators):
            w = _clip_weights(xp, w, data.zero)
            est = self._next_estimator(data, rs)
            idx, counts = _weighted_bootstrap(xp, rs, w, data.n_draw)
            if data.binned is not None:
                est._fit_binned(data.binned, ones, multiplicity=counts)
                pred = self._tree_output(xp, est, data.binned.X_predict)
            else:
                idx_host = _backend.to_numpy(idx)
                est.fit(_safe_indexing(data.X, idx_host), _safe_indexing(y_host, idx_host))
                pred = xp.asarray(self._host_output(est.predict(data.X)))
            self.estimators_.append(est)
            live = w > 0
            loss = xp.where(live, xp.abs(pred - y_t), xp.zeros_like(w))
            loss_max = float(xp.max(loss))
            if loss_max != 0.0:
                loss = loss / loss_max
            if self.loss == "square":
                loss = loss * loss
            elif self.loss == "exponential":
                loss = 1.0 - xp.exp(-loss)
            err = float(xp.sum(w * loss))
            if err <= 0.0:  # perfect fit: scikit-learn's weight 1, stop
                weights.append(1.0)
                errors.append(0.0)
                self._kept(evals, weights)
                self._round_done(monitor, t, weights, errors)
                break
            if err >= 0.5:  # drop it, unless it is the only one (then weight 0)
                if len(self.estimators_) > 1:
                    self.estimators_.pop()
                else:
                    weights.append(0.0)
                    errors.append(err)
                    self._kept(evals, weights)
                    self._round_done(monitor, t, weights, errors)
                break
            beta = err / (1.0 - err)
            weights.append(self.learning_rate * math.log(1.0 / beta))
            errors.append(err)
            stop = self._kept(evals, weights)
            if self._round_done(monitor, t, weights, errors) or stop or t == self.n_estimators - 1:
                break
            w = _normalised(xp, xp.where(live, w * beta ** ((1.0 - loss) * self.learning_rate), w), t)
            if w is None:
                break
        self._finish(evals, weights, errors, monitor)
        return self

    def _eval_target(self, y, n):
        """A validation set's targets as float64 (host)."""
        return regression_target(y_to_host(to_host(y), n, multi_output=False))

    def _eval_stage(self, xp, so_far, pred, learner_weights):
        """``(outputs, prediction)`` after one more learner, as :meth:`staged_predict`; ``so_far`` the
        learners' outputs before it (None at the first)."""
        outputs = [pred] if so_far is None else so_far + [pred]
        return outputs, self._weighted_median(xp, outputs, np.asarray(learner_weights, dtype=np.float64))

    @staticmethod
    def _weighted_median(xp, outputs, learner_weights):
        """Weighted median over the learners of each row (scikit-learn's rule), (n,); ``learner_weights`` (host)
        the learners' weights, the first ``len(outputs)`` used."""
        preds = xp.stack(outputs, axis=1)  # (n, T)
        n, n_learners = preds.shape
        order = xp.argsort(preds, axis=1, stable=True)
        flat = xp.reshape(order, (-1,))
        weights = _backend.from_numpy(xp, learner_weights[:n_learners])
        sorted_w = xp.reshape(xp.take(weights, flat), (n, n_learners))
        rows = xp.arange(n, dtype=xp.int64)[:, None] * n_learners
        sorted_p = xp.reshape(xp.take(xp.reshape(preds, (-1,)), xp.reshape(order + rows, (-1,))), (n, n_learners))
        cdf = xp.cumulative_sum(sorted_w, axis=1)
        at_median = xp.astype(cdf >= 0.5 * cdf[:, -1:], xp.int8)
        pick = xp.argmax(at_median, axis=1)
        return xp.take(xp.reshape(sorted_p, (-1,)), pick + rows[:, 0])

    def predict(self, X):
        """Weighted median of the learners' predictions.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y : array of shape (n_samples,), float64
            In the namespace of ``X`` (NumPy for NumPy/pandas input).
        """
        xp, outputs = self._learner_outputs(X)
        return _backend.output_like(X, self._weighted_median(xp, outputs, self.estimator_weights_))

    def staged_predict(self, X):
        """Weighted median of the first t learners, for t = 1, 2, ...

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.

        Yields
        ------
        y : array of shape (n_samples,), float64
        """
        xp, outputs = self._learner_outputs(X)
        for t in range(1, len(outputs) + 1):
            yield _backend.output_like(X, self._weighted_median(xp, outputs[:t], self.estimator_weights_))

