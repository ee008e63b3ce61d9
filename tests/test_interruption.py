"""KeyboardInterrupt during fit leaves the estimator in its previous state.

The hook: every module's ``grow`` (the grower entry point each fit calls once
per tree batch or boosting round), and the Numba set's runner of boosting
rounds (``BoostRounds.__call__``, which a covered fit calls once a round in
place of ``grow``), are wrapped to raise ``KeyboardInterrupt`` on their k-th
call, counted together. After the interrupted fit an unfitted estimator is still
unfitted, a fitted one (also with ``warm_start``) predicts as before, no thread
was left behind, and the estimator fits normally afterwards.
"""

from __future__ import annotations

import importlib.util
import threading

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from gputrees import _boost, _classes, _forest

from estimator_zoo import CLASSIFIERS, ESTIMATORS

GROW_SITES = (_classes, _forest, _boost)


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return X, (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5), X[:, 0] + 0.1 * rng.normal(size=n)


def _y(name, yc, yr):
    return yc if name in CLASSIFIERS else yr


class _Interrupt:
    """Wraps the modules' ``grow``; raises KeyboardInterrupt on call ``at`` (None: never), counts calls."""

    def __init__(self, monkeypatch, at):
        self.calls, self.at = 0, at
        for mod in GROW_SITES:
            monkeypatch.setattr(mod, "grow", self._wrap(mod.grow))
        if importlib.util.find_spec("numba") is not None:
            from gputrees.kernels.cpu.boost import BoostRounds

            monkeypatch.setattr(BoostRounds, "__call__", self._wrap(BoostRounds.__call__))

    def _wrap(self, grow):
        def hooked(*args, **kwargs):
            self.calls += 1
            if self.at is not None and self.calls == self.at:
                raise KeyboardInterrupt
            return grow(*args, **kwargs)

        return hooked


def _n_grow_calls(name, monkeypatch, est=None, X=None, y=None):
    with monkeypatch.context() as m:
        counter = _Interrupt(m, None)
        (est or ESTIMATORS[name](0)).fit(X, y)
    return counter.calls


@pytest.mark.parametrize("where", ["first", "last"])
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_interrupted_fit_leaves_unfitted(name, where, monkeypatch):
    X, yc, yr = _data()
    y = _y(name, yc, yr)
    calls = _n_grow_calls(name, monkeypatch, X=X, y=y)
    assert calls >= 1
    threads = threading.active_count()
    est = ESTIMATORS[name](0)
    with monkeypatch.context() as m:
        _Interrupt(m, 1 if where == "first" else calls)
        with pytest.raises(KeyboardInterrupt):
            est.fit(X, y)
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    with pytest.raises(NotFittedError):
        est.predict(X)
    assert threading.active_count() <= threads
    np.testing.assert_array_equal(
        np.asarray(est.fit(X, y).predict(X)), np.asarray(ESTIMATORS[name](0).fit(X, y).predict(X))
    )


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_interrupted_refit_keeps_previous_model(name, monkeypatch):
    X, yc, yr = _data()
    X2, yc2, yr2 = _data(seed=1)
    est = ESTIMATORS[name](0).fit(X, _y(name, yc, yr))
    before = np.asarray(est.predict(X))
    with monkeypatch.context() as m:
        _Interrupt(m, 1)
        with pytest.raises(KeyboardInterrupt):
            est.fit(X2, _y(name, yc2, yr2))
    np.testing.assert_array_equal(np.asarray(est.predict(X)), before)


WARM = ["forest_clf", "forest_reg", "extra_forest_clf", "extra_forest_reg", "gboost_clf", "gboost_reg"]


@pytest.mark.parametrize("name", WARM)
def test_interrupted_warm_start_keeps_previous_model(name, monkeypatch):
    X, yc, yr = _data()
    y = _y(name, yc, yr)
    est = ESTIMATORS[name](0).set_params(warm_start=True, n_estimators=3)
    est.fit(X, y)
    before = np.asarray(est.predict(X))
    n_before = len(est.estimators_) if hasattr(est, "estimators_") else est.n_iter_
    est.set_params(n_estimators=6)
    if name.startswith("forest") or name.startswith("extra"):
        est.set_params(batch_size=1)  # one grow call per new tree: interrupt in the middle
    with monkeypatch.context() as m:
        _Interrupt(m, 2)
        with pytest.raises(KeyboardInterrupt):
            est.fit(X, y)
    np.testing.assert_array_equal(np.asarray(est.predict(X)), before)
    assert (len(est.estimators_) if hasattr(est, "estimators_") else est.n_iter_) == n_before
    # continuing after the interruption equals an uninterrupted warm start
    ref = ESTIMATORS[name](0).set_params(warm_start=True, n_estimators=3).fit(X, y)
    ref.set_params(**{k: v for k, v in est.get_params().items() if k in ("n_estimators", "batch_size")}).fit(X, y)
    np.testing.assert_array_equal(np.asarray(est.fit(X, y).predict(X)), np.asarray(ref.predict(X)))
