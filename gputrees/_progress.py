"""Progress display and callbacks of the ensembles' fit loops (host-side only).

Every ensemble's ``fit`` makes one :class:`Monitor` and calls
:meth:`Monitor.step` once per boosting round (gradient boosting, AdaBoost)
or per batch of trees (forests). The monitor shows a progress bar (tqdm,
when installed and ``verbose > 0``; plain lines every ``verbose`` steps
otherwise) and hands an :class:`IterationEnv` to every callback; a callback
returning True ends the fit after that step, with the model holding the
rounds (or trees) fitted so far.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any, Callable, Optional

import numpy as np


@dataclasses.dataclass(frozen=True)
class IterationEnv:
    """What a callback sees after each boosting round or batch of trees.

    Scores follow scikit-learn's "greater is better" convention.

    Attributes
    ----------
    estimator : estimator
        The estimator being fitted. Its fitted attributes are those of the
        previous fit (or absent) until ``fit`` returns; use ``model()`` for a
        fitted model of the steps done so far.
    iteration : int
        0-based index of the step just done: the boosting round (gradient
        boosting counts the rounds of earlier ``warm_start`` fits too), the
        AdaBoost round, or the forest's batch of trees.
    n_iterations : int
        The number of steps the fit reaches if nothing stops it, so
        ``iteration + 1 == n_iterations`` on the last one.
    n_estimators_fitted : int
        Rounds (boosting) or trees (forests) in the model after this step.
    train_score : float or None
        Gradient boosting: minus the training loss of the model so far (with
        a callable loss: the early-stopping metric's score of the training rows);
        AdaBoost: minus the weighted training error ``err_t`` of this round's
        learner; forests: None.
    validation_score : float or None
        Gradient boosting: the early-stopping score (minus the loss, or the
        last ``eval_metric``'s score; greater is better) on the last
        ``eval_set`` (or on the held-out rows of early stopping); None when
        there are no validation rows, and for AdaBoost and forests.
    elapsed : float
        Seconds since the first step of this fit began.
    model : callable or None
        ``model()`` returns a fitted shallow copy of the estimator holding
        the steps done so far (what ``fit`` would leave if stopped here), for
        checkpoints; None where the estimator cannot build one cheaply
        (forests).
    """

    estimator: Any
    iteration: int
    n_iterations: int
    n_estimators_fitted: int
    train_score: Optional[float]
    validation_score: Optional[float]
    elapsed: float
    model: Optional[Callable[[], Any]] = None


def check_callbacks(callbacks) -> list:
    """The ``callbacks`` parameter as a list, or a TypeError naming what is wrong."""
    if callbacks is None:
        return []
    if not isinstance(callbacks, (list, tuple)):
        raise TypeError(f"callbacks must be a list of objects with an on_iteration method, got {type(callbacks).__name__}")
    for cb in callbacks:
        if not callable(getattr(cb, "on_iteration", None)):
            raise TypeError(f"callback {cb!r} has no on_iteration(env) method")
    return list(callbacks)


def _tqdm_class():
    """tqdm's progress bar class, or None when tqdm is not installed (an optional dependency)."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


@dataclasses.dataclass(frozen=True)
class Step:
    """The numbers of one step, as the fit loop knows them."""

    iteration: int
    n_fitted: int
    train_score: Optional[float] = None
    validation_score: Optional[float] = None
    model: Optional[Callable[[], Any]] = None


class Monitor:
    """Progress bar or lines, and callbacks, for one ``fit`` of an ensemble.

    Parameters
    ----------
    estimator : estimator
        Reads its ``verbose`` (int) and ``callbacks`` parameters.
    n_iterations : int
        Steps the fit reaches if nothing stops it.
    first : int
        Index of the first step of this fit (non-zero after warm starts).
    unit : str
        What one step is, for the display ("round" or "batch").
    """

    def __init__(self, estimator, n_iterations: int, first: int, unit: str):
        self.estimator = estimator
        self.callbacks = check_callbacks(getattr(estimator, "callbacks", None))
        self.verbose = int(getattr(estimator, "verbose", 0) or 0)
        self.n_iterations = int(n_iterations)
        self.first = int(first)
        self.unit = unit
        self.t0 = time.perf_counter()
        self.bar = None
        if self.verbose > 0:
            tqdm = _tqdm_class()
            if tqdm is not None:
                self.bar = tqdm(
                    total=self.n_iterations,
                    initial=self.first,
                    unit=unit,
                    desc=type(estimator).__name__,
                    file=sys.stderr,
                    leave=True,
                )

    @property
    def reads_steps(self) -> bool:
        """Whether each step's scores are read (shown, or passed to callbacks)."""
        return self.verbose > 0 or bool(self.callbacks)

    def step(self, s: Step) -> bool:
        """Show step ``s`` and run the callbacks; True when one of them asks to stop.

        Without a display or a callback nothing is read of the step (its
        scores may be device scalars: no host read).
        """
        if not self.reads_steps:
            return False
        elapsed = time.perf_counter() - self.t0
        env = IterationEnv(
            estimator=self.estimator,
            iteration=int(s.iteration),
            n_iterations=self.n_iterations,
            n_estimators_fitted=int(s.n_fitted),
            train_score=None if s.train_score is None else float(s.train_score),
            validation_score=None if s.validation_score is None else float(s.validation_score),
            elapsed=elapsed,
            model=s.model,
        )
        self._show(env)
        stop = False
        for cb in self.callbacks:
            answer = cb.on_iteration(env)
            if not isinstance(answer, (bool, np.bool_)):
                raise TypeError(
                    f"{type(cb).__name__}.on_iteration must return True (stop) or False (go on), "
                    f"got {answer!r}"
                )
            stop = stop or bool(answer)
        if stop or env.iteration + 1 >= self.n_iterations:
            self.close()
        return stop

    def _show(self, env: IterationEnv) -> None:
        if self.verbose <= 0:
            return
        losses = _losses(env)
        if self.bar is not None:
            self.bar.update(env.iteration + 1 - self.bar.n)
            if losses:
                self.bar.set_postfix_str(losses, refresh=False)
            return
        done = env.iteration + 1
        if done % self.verbose and done != self.n_iterations:
            return
        left = env.elapsed / (done - self.first) * (self.n_iterations - done)
        msg = f"[{done}/{self.n_iterations}]"
        if env.n_estimators_fitted != done:
            msg += f" {env.n_estimators_fitted} trees"
        if losses:
            msg += " " + losses
        msg += f" ({env.elapsed:.1f} s, ~{left:.1f} s left)"
        print(msg, file=sys.stdout, flush=True)

    def close(self) -> None:
        """Close the progress bar (once; later calls do nothing)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _losses(env: IterationEnv) -> str:
    # scores other than minus the fit's loss (an eval_metric, a callable loss's training score) are shown as
    # the greater-is-better scores they are
    est = env.estimator
    parts = []
    if env.train_score is not None:
        if callable(getattr(est, "loss", None)):
            parts.append(f"train score {env.train_score:.6g}")
        else:
            parts.append(f"train loss {-env.train_score:.6g}")
    if env.validation_score is not None:
        if getattr(est, "_eval_metric_names", ["loss"])[-1] != "loss":
            parts.append(f"valid score {env.validation_score:.6g}")
        else:
            parts.append(f"valid loss {-env.validation_score:.6g}")
    return ", ".join(parts)
