"""AdaBoost's validation sets: ``fit(..., eval_set=, eval_sample_weight=)``, ``eval_metric``, early stopping.

After every kept learner, each validation set's prediction is what the
ensemble of the learners so far predicts (the classifier's
``staged_predict_proba``, the regressor's ``staged_predict``), and every
metric of ``eval_metric`` (:mod:`gputrees.metrics`: names, callables,
weights) is taken on it; ``evals_result_`` keeps them, as gradient
boosting's and XGBoost's::

    {"validation_0": {"error": [after learner 1, after learner 2, ...]}, ...}

Early stopping (``early_stopping=True``) watches the last metric on the last
set, with scikit-learn's rule (:class:`gputrees._boost.EarlyStopping`): the
fit stops, keeping its learners, once none of the last ``n_iter_no_change``
values beat the one before them by ``tol``.
"""

from __future__ import annotations

from . import _backend
from ._boost import EarlyStopping
from ._validation import sample_weight_to_host
from .metrics import EvalScoring, check_eval_sample_weight, check_eval_set, resolve_metrics

__all__ = ["AdaBoostEvals"]


class AdaBoostEvals:
    """The validation sets of one AdaBoost fit.

    Parameters
    ----------
    model : AdaBoostClassifier or AdaBoostRegressor
        The estimator being fitted: its ``_eval_target``, ``_learner_rows``,
        ``_learner_output`` and ``_eval_stage`` turn a set into predictions.
    eval_set, eval_sample_weight
        As ``fit`` takes them (checked here).
    """

    def __init__(self, model, eval_set, eval_sample_weight):
        self.model = model
        self.pairs = check_eval_set(eval_set)
        self.weights = check_eval_sample_weight(eval_sample_weight, len(self.pairs))
        classifier = model._is_classifier
        metric = model.eval_metric
        if metric is None:
            metric = "error" if classifier else "rmse"
        names = metric if isinstance(metric, (list, tuple)) else [metric]
        if any(isinstance(m, str) and m == "loss" for m in names):
            raise ValueError("eval_metric='loss': AdaBoost has no loss to evaluate; name a metric "
                             "(e.g. 'error', 'logloss' or 'rmse') or give a callable")
        # the predictions the metrics take are made here, stage by stage: the scoring's prediction is the identity
        self.scoring = EvalScoring(resolve_metrics(metric, classifier=classifier, loss=None),
                                   lambda xp, prediction: prediction)
        self.stopping = EarlyStopping(model.n_iter_no_change, model.tol) if model.early_stopping else None
        self.sets = None  # prepared at the first learner: a gputrees learner's binning encodes their rows
        self.values = [[] for _ in self.pairs]

    def _prepare(self):
        sets = []
        for (X, y), w in zip(self.pairs, self.weights):
            xp, rows = self.model._learner_rows(X)
            n = int(rows.shape[0])
            target = self.model._eval_target(y, n)
            try:
                weight = sample_weight_to_host(w, n)  # ones for None
            except ValueError as exc:
                raise ValueError(f"eval_sample_weight: {exc}") from None
            sets.append([xp, rows, _backend.from_numpy(xp, target), _backend.from_numpy(xp, weight), None])
        return sets

    def add(self, learner, learner_weights) -> None:
        """Score every set after ``learner`` (kept, its weight the last of ``learner_weights``)."""
        if self.sets is None:
            self.sets = self._prepare()
        for entry, values in zip(self.sets, self.values):
            xp, rows, y, w, state = entry
            output = self.model._learner_output(xp, learner, rows)
            state, prediction = self.model._eval_stage(xp, state, output, learner_weights)
            entry[4] = state
            values.append(tuple(float(v) for v in self.scoring.evaluate(xp, prediction, y, w)))

    def should_stop(self) -> bool:
        """Whether early stopping ends the fit after the learners scored so far."""
        if self.stopping is None:
            return False
        return self.stopping.should_stop([self.scoring.score(v) for v in self.values[-1]])

    def result(self) -> dict:
        """``evals_result_``: every metric's values, learner after learner, of every set."""
        return {
            f"validation_{i}": {name: [v[j] for v in values] for j, name in enumerate(self.scoring.names)}
            for i, values in enumerate(self.values)
        }
