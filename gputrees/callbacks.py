"""Callbacks for the ensembles' ``callbacks`` parameter.

Every ensemble (random forests, extra trees, AdaBoost, gradient boosting)
calls ``callback.on_iteration(env)`` after each boosting round, or after
each batch of trees for forests, with an :class:`IterationEnv`. Returning
True stops the fit there: the model keeps the rounds (or trees) done, and
predicts as a model fitted with that many rounds would (``n_iter_``,
``len(estimators_)`` and ``estimator_weights_`` say how many). Any object
with an ``on_iteration`` method returning a bool is a callback::

    class StopAfter:
        def __init__(self, seconds):
            self.seconds = seconds

        def on_iteration(self, env):
            return env.elapsed > self.seconds

    GradientBoostingRegressor(n_estimators=10_000, callbacks=[StopAfter(60)]).fit(X, y)

scikit-learn's ``clone`` (used by ``GridSearchCV``, ``cross_val_score``)
deep-copies the callbacks, so the copies, not your objects, see those fits.
"""

from __future__ import annotations

import math
import numbers
import sys

from ._progress import IterationEnv

__all__ = ["IterationEnv", "EarlyStopping", "Logger", "Checkpoint"]


def _check_positive_int(name: str, value) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


class EarlyStopping:
    """Stop when the validation score has not improved for ``patience`` steps.

    Parameters
    ----------
    patience : int, default=10
        Steps without an improvement (of more than ``min_delta``) on the best
        validation score before stopping.
    min_delta : float, default=0.0
        Smallest rise of ``env.validation_score`` that counts as an
        improvement.

    Attributes
    ----------
    best_score : float
        Best validation score seen in the current fit.
    best_iteration : int
        0-based step (``env.iteration``) of ``best_score``.

    Notes
    -----
    Needs validation scores: gradient boosting with ``eval_set`` or early
    stopping on a held-out fraction (AdaBoost and forests have none; this
    callback raises a ValueError there). Unlike gradient boosting's own
    ``early_stopping``, the model keeps every round done, including the
    ``patience`` rounds after the best; ``best_iteration`` says which was
    best. A new fit (``env.iteration`` not after the last one seen) starts
    the count afresh.
    """

    def __init__(self, patience=10, min_delta=0.0):
        self.patience = _check_positive_int("patience", patience)
        if not isinstance(min_delta, numbers.Real) or not min_delta >= 0.0 or not math.isfinite(min_delta):
            raise ValueError(f"min_delta must be a finite number >= 0, got {min_delta!r}")
        self.min_delta = float(min_delta)
        self.best_score = -math.inf
        self.best_iteration = -1
        self._last = None

    def on_iteration(self, env: IterationEnv) -> bool:
        """Record ``env.validation_score``; True after ``patience`` steps without improvement.

        Parameters
        ----------
        env : IterationEnv
            The step just done.
        """
        if env.validation_score is None:
            raise ValueError(
                f"EarlyStopping needs a validation score, and {type(env.estimator).__name__} has none: "
                "pass eval_set=[(X_val, y_val)] to a gradient boosting fit"
            )
        if self._last is None or env.iteration <= self._last:
            self.best_score, self.best_iteration = -math.inf, -1
        self._last = env.iteration
        if env.validation_score > self.best_score + self.min_delta:
            self.best_score, self.best_iteration = env.validation_score, env.iteration
        return env.iteration - self.best_iteration >= self.patience


class Logger:
    """Print one line per ``every`` steps, and keep every step's numbers.

    Parameters
    ----------
    every : int, default=1
        Print after steps ``every - 1``, ``2 * every - 1``, ... and the last.
    stream : file-like or None, default=None
        Where to print; None: ``sys.stdout`` at the time of printing.

    Attributes
    ----------
    history : list of IterationEnv
        Every step seen, in order (all fits of this object).
    """

    def __init__(self, every=1, stream=None):
        self.every = _check_positive_int("every", every)
        self.stream = stream
        self.history = []

    def on_iteration(self, env: IterationEnv) -> bool:
        """Record ``env`` and print it when due; never stops the fit.

        Parameters
        ----------
        env : IterationEnv
            The step just done.
        """
        self.history.append(env)
        done = env.iteration + 1
        if done % self.every == 0 or done == env.n_iterations:
            line = f"{type(env.estimator).__name__} step {done}/{env.n_iterations}: {env.n_estimators_fitted} fitted"
            if env.train_score is not None:
                line += f", train score {env.train_score:.6g}"
            if env.validation_score is not None:
                line += f", validation score {env.validation_score:.6g}"
            line += f", {env.elapsed:.2f} s"
            print(line, file=self.stream if self.stream is not None else sys.stdout, flush=True)
        return False


class Checkpoint:
    """Save the model of the steps done so far every ``every`` steps.

    Parameters
    ----------
    path : str or os.PathLike
        Model file, overwritten at each save with
        ``env.model().save_model(path)``.
    every : int, default=10
        Save after steps ``every - 1``, ``2 * every - 1``, ... and the last.

    Attributes
    ----------
    n_saved : int
        Saves done.

    Notes
    -----
    Works for the boosting estimators (``env.model`` builds the model of the
    rounds so far); forests have no such model (``env.model`` is None) and
    raise a ValueError here. The file is what ``save_model`` writes.
    """

    def __init__(self, path, every=10):
        self.path = path
        self.every = _check_positive_int("every", every)
        self.n_saved = 0

    def on_iteration(self, env: IterationEnv) -> bool:
        """Save when due; never stops the fit.

        Parameters
        ----------
        env : IterationEnv
            The step just done.
        """
        done = env.iteration + 1
        if done % self.every and done != env.n_iterations:
            return False
        if env.model is None:
            raise ValueError(
                f"Checkpoint cannot save {type(env.estimator).__name__} during its fit "
                "(no model of the steps so far); save it after fit instead"
            )
        model = env.model()
        if not hasattr(model, "save_model"):
            raise AttributeError(f"{type(model).__name__} has no save_model method to write a checkpoint with")
        model.save_model(self.path)
        self.n_saved += 1
        return False
