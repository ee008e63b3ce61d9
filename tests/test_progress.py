"""Progress display (tqdm or plain lines) and callbacks of every ensemble."""

from __future__ import annotations

import dataclasses
import importlib.util
import io

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes

import gputrees
import gputrees._progress as progress
from gputrees import (
    AdaBoostClassifier,
    AdaBoostRegressor,
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    RandomForestClassifier,
)
from gputrees.callbacks import Checkpoint, EarlyStopping, IterationEnv, Logger


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return X[:300], y[:300]


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return X[:300], y[:300]


class StopAt:
    """Stops after step ``last`` (0-based) and records the steps seen."""

    def __init__(self, last):
        self.last = last
        self.seen = []

    def on_iteration(self, env):
        self.seen.append(env)
        return env.iteration >= self.last


def _make(kind, **kw):
    """An ensemble of each family, small, with its number-of-steps parameter."""
    if kind == "gbdt":
        return GradientBoostingClassifier(max_depth=2, early_stopping=False, random_state=0, **kw)
    if kind == "forest":
        return RandomForestClassifier(max_depth=3, batch_size=3, random_state=0, **kw)
    if kind == "extra":
        return ExtraTreesRegressor(max_depth=3, batch_size=2, random_state=0, **kw)
    if kind == "ada":
        return AdaBoostClassifier(random_state=0, **kw)
    return AdaBoostRegressor(random_state=0, **kw)


def _data(kind, cancer, diabetes):
    return diabetes if kind in ("extra", "ada_reg") else cancer


def _predict(est, X):
    return est.predict_proba(X) if hasattr(est, "predict_proba") else est.predict(X)


# steps run, the last 0-based step the callback lets run, and the trees/rounds that leaves
STOPS = [("gbdt", 12, 4, 5), ("forest", 12, 1, 6), ("extra", 10, 2, 6), ("ada", 12, 3, 4), ("ada_reg", 12, 3, 4)]


@pytest.mark.parametrize("kind,n,last,kept", STOPS)
def test_callback_stop_leaves_model_of_that_many_rounds(kind, n, last, kept, cancer, diabetes):
    X, y = _data(kind, cancer, diabetes)
    cb = StopAt(last)
    stopped = _make(kind, n_estimators=n, callbacks=[cb]).fit(X, y)
    ref = _make(kind, n_estimators=kept).fit(X, y)
    assert [e.iteration for e in cb.seen] == list(range(last + 1))
    assert cb.seen[-1].n_estimators_fitted == kept
    if kind == "gbdt":
        assert stopped.n_iter_ == kept == ref.n_iter_
        assert stopped.train_score_.shape == (kept + 1,)
        np.testing.assert_allclose(stopped.train_score_, ref.train_score_, rtol=1e-12)
    else:
        assert len(stopped.estimators_) == kept == len(ref.estimators_)
    if kind.startswith("ada"):
        assert stopped.estimator_weights_.shape == (kept,)
        np.testing.assert_allclose(stopped.estimator_weights_, ref.estimator_weights_, rtol=1e-12)
    np.testing.assert_allclose(_predict(stopped, X), _predict(ref, X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["gbdt", "ada", "ada_reg"])
def test_env_model_is_the_model_so_far(kind, cancer, diabetes):
    X, y = _data(kind, cancer, diabetes)
    log = Logger(every=100, stream=io.StringIO())
    full = _make(kind, n_estimators=6, callbacks=[log]).fit(X, y)
    snap = log.history[2].model()  # after round 2, taken after the fit ended
    ref = _make(kind, n_estimators=3).fit(X, y)
    assert snap is not full and type(snap) is type(full)
    np.testing.assert_allclose(_predict(snap, X), _predict(ref, X), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_predict(log.history[-1].model(), X), _predict(full, X), rtol=1e-12, atol=1e-12)


def test_env_is_frozen_and_scores_follow_the_fit(cancer):
    X, y = cancer
    log = Logger(every=100, stream=io.StringIO())
    m = GradientBoostingClassifier(n_estimators=5, early_stopping=False, callbacks=[log], random_state=0)
    m.fit(X, y, eval_set=[(X[:50], y[:50])])
    env = log.history[-1]
    assert isinstance(env, IterationEnv) and env.estimator is m
    with pytest.raises(dataclasses.FrozenInstanceError):
        env.iteration = 0
    np.testing.assert_allclose([e.train_score for e in log.history], m.train_score_[1:])
    np.testing.assert_allclose([e.validation_score for e in log.history], m.validation_score_[1:])
    assert [e.n_iterations for e in log.history] == [5] * 5
    assert all(b.elapsed >= a.elapsed >= 0 for a, b in zip(log.history, log.history[1:]))


def test_early_stopping_callback(cancer):
    X, y = cancer
    es = EarlyStopping(patience=3)
    m = GradientBoostingClassifier(n_estimators=300, learning_rate=0.5, early_stopping=False, callbacks=[es])
    m.fit(X[:200], y[:200], eval_set=[(X[200:], y[200:])])
    assert m.n_iter_ < 300
    assert es.best_iteration == int(np.argmax(m.validation_score_[1:]))
    assert m.n_iter_ == es.best_iteration + 3 + 1
    # a second fit starts the count afresh
    m.fit(X[:200], y[:200], eval_set=[(X[200:], y[200:])])
    assert m.n_iter_ == es.best_iteration + 3 + 1


def test_early_stopping_needs_validation_scores(cancer):
    X, y = cancer
    with pytest.raises(ValueError, match="needs a validation score"):
        RandomForestClassifier(n_estimators=4, batch_size=2, callbacks=[EarlyStopping()]).fit(X, y)
    with pytest.raises(ValueError, match="patience"):
        EarlyStopping(patience=0)


def test_bad_callbacks_are_refused(cancer):
    X, y = cancer

    class NoAnswer:
        def on_iteration(self, env):
            pass

    with pytest.raises(TypeError, match="must return True"):
        AdaBoostClassifier(n_estimators=3, callbacks=[NoAnswer()]).fit(X, y)
    with pytest.raises(TypeError, match="no on_iteration"):
        GradientBoostingClassifier(n_estimators=3, callbacks=[print]).fit(X, y)
    with pytest.raises(ValueError, match="callbacks"):
        GradientBoostingClassifier(n_estimators=3, callbacks=Logger()).fit(X, y)


def test_logger_prints_every_n(cancer):
    X, y = cancer
    out = io.StringIO()
    RandomForestClassifier(n_estimators=10, batch_size=2, callbacks=[Logger(every=2, stream=out)]).fit(X, y)
    lines = out.getvalue().splitlines()
    assert len(lines) == 3  # batches 2, 4 and the last (5)
    assert lines[0].startswith("RandomForestClassifier step 2/5: 4 fitted")


@pytest.mark.parametrize("kind", ["gbdt", "forest", "ada"])
def test_verbose_plain_lines_without_tqdm(kind, cancer, diabetes, monkeypatch, capsys):
    monkeypatch.setattr(progress, "_tqdm_class", lambda: None)
    X, y = _data(kind, cancer, diabetes)
    _make(kind, n_estimators=6, verbose=2).fit(X, y)
    lines = capsys.readouterr().out.strip().splitlines()
    total = 2 if kind == "forest" else 6  # forests: batches of 3 trees
    assert len(lines) == (1 if kind == "forest" else 3)
    assert lines[-1].startswith(f"[{total}/{total}]") and "s left)" in lines[-1]
    if kind != "forest":
        assert "train loss" in lines[0]


@pytest.mark.skipif(importlib.util.find_spec("tqdm") is None, reason="tqdm is not installed (optional)")
def test_verbose_tqdm_bar(cancer, capsys):
    X, y = cancer
    m = GradientBoostingClassifier(n_estimators=5, early_stopping=False, verbose=1)
    m.fit(X, y, eval_set=[(X, y)])
    err = capsys.readouterr().err
    assert "GradientBoostingClassifier" in err and "5/5" in err and "valid loss" in err


@pytest.mark.skipif(
    not hasattr(GradientBoostingRegressor, "save_model"),
    reason="save_model (model files, issue 9 part A) is not on this branch yet",
)
def test_checkpoint_saves_the_rounds_so_far(diabetes, tmp_path):
    X, y = diabetes
    path = tmp_path / "ckpt.model"
    cb = Checkpoint(path, every=4)
    stop = StopAt(5)
    GradientBoostingRegressor(n_estimators=10, early_stopping=False, callbacks=[cb, stop]).fit(X, y)
    assert cb.n_saved == 1  # after round 4 (index 3); the fit stopped after index 5
    loaded = gputrees.load_model(path)
    ref = GradientBoostingRegressor(n_estimators=4, early_stopping=False).fit(X, y)
    np.testing.assert_allclose(loaded.predict(X), ref.predict(X), rtol=1e-12)


def test_checkpoint_refuses_forests(cancer, tmp_path):
    X, y = cancer
    with pytest.raises(ValueError, match="Checkpoint cannot save RandomForestClassifier"):
        RandomForestClassifier(n_estimators=4, batch_size=2, callbacks=[Checkpoint(tmp_path / "m", every=1)]).fit(X, y)
