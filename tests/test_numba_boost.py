"""A boosting fit's rounds in few compiled calls (gputrees.kernels.cpu.boost) against the same rounds run
one step at a time (the Numba set either way)."""

from __future__ import annotations

import numpy as np
import pytest

from gputrees import GradientBoostingClassifier, GradientBoostingRegressor
from gputrees._criteria import Newton

pytest.importorskip("numba")
from gputrees.kernels import cpu  # noqa: E402

from test_numba_grow import BATCH_FIELDS, NP  # noqa: E402

BASE = dict(n_estimators=10, max_depth=5, min_samples_leaf=1, min_child_weight=0.5, early_stopping=False,
            random_state=0, n_jobs=2)


def _data(case, n=2500, seed=12):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 6))
    X[:, 2] = rng.integers(0, 5, n)
    y = X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=n) * 0.5
    if case == "missing":
        X[rng.random(X.shape) < 0.1] = np.nan
    if case in ("regression", "regression-weights"):
        return X, y
    return X, (y > 0).astype(int)


def _spy(monkeypatch, runner_on: bool):
    """Record whether each fit's ``boost_rounds`` made a runner; with ``runner_on`` False it makes none."""
    made = []
    real = cpu.boost.boost_rounds

    def spy(*a, **k):
        out = real(*a, **k) if runner_on else None
        made.append(out is not None)
        return out

    monkeypatch.setattr(cpu.boost, "boost_rounds", spy)
    return made


def _assert_same_model(a, b, X):
    assert len(a._rounds) == len(b._rounds)
    for ra, rb in zip(a._rounds, b._rounds, strict=True):
        for name in BATCH_FIELDS:
            u, v = getattr(ra.batch, name), getattr(rb.batch, name)
            if u is None or v is None:
                assert u is None and v is None, name
                continue
            u, v = np.asarray(u), np.asarray(v)
            assert u.shape == v.shape and u.dtype == v.dtype, name
            np.testing.assert_array_equal(u, v, err_msg=name)
        u, v = np.asarray(ra.values), np.asarray(rb.values)
        assert u.shape == v.shape
        # bit for bit, signed zeros included
        np.testing.assert_array_equal(u.view(np.int64), v.view(np.int64))
    np.testing.assert_array_equal(a.train_score_, b.train_score_)
    np.testing.assert_array_equal(a.validation_score_, b.validation_score_)
    out = "predict_proba" if hasattr(a, "predict_proba") else "predict"
    np.testing.assert_array_equal(getattr(a, out)(X), getattr(b, out)(X))


CASES = {
    "binary": dict(),
    "regression": dict(),
    "missing": dict(),
    "regression-weights": dict(),
    "one-thread": dict(n_jobs=1),
    "tiny": dict(n_estimators=6),  # 60 rows: every pass on one thread (the serial twins)
    "unsplittable": dict(min_child_weight=1e9),  # one-node trees
    # over one block of the round end's sums (cpu.loss._BLOCK rows): the root statistics it hands the next tree
    # are then not the rows' sums in row order, which a tree summing its rows itself would take
    "two-blocks": dict(n_estimators=4, max_depth=3),
    "early-stopping": dict(n_estimators=40, early_stopping=True, n_iter_no_change=3, validation_fraction=0.2),
}


@pytest.mark.parametrize("case", list(CASES))
def test_runner_rounds_equal_the_rounds_step_by_step(case, monkeypatch):
    monkeypatch.setenv("GPUTREES_KERNELS", "numba")
    X, y = _data(case, n={"tiny": 60, "two-blocks": 40_000}.get(case, 2500))
    cls = GradientBoostingRegressor if case.startswith("regression") else GradientBoostingClassifier
    kw = {**BASE, **CASES[case]}
    fit_kw = {}
    if case == "regression-weights":
        fit_kw["sample_weight"] = np.random.default_rng(3).uniform(0.0, 2.0, X.shape[0])
    made = _spy(monkeypatch, True)
    fast = cls(**kw).fit(X, y, **fit_kw)
    assert made == [True]
    made = _spy(monkeypatch, False)
    steps = cls(**kw).fit(X, y, **fit_kw)
    assert made == [False]
    _assert_same_model(fast, steps, X)


def test_runner_with_a_validation_set_and_warm_start(monkeypatch):
    """The runner's batches serve the validation scores, and a warm start's new runner goes on from the kept raw
    predictions (its first round sums the rows: no channel sums carried over)."""
    monkeypatch.setenv("GPUTREES_KERNELS", "numba")
    X, y = _data("binary")
    Xv, yv = _data("binary", n=500, seed=5)
    models = []
    for runner_on in (True, False):
        made = _spy(monkeypatch, runner_on)
        m = GradientBoostingClassifier(**{**BASE, "n_estimators": 6, "warm_start": True})
        m.fit(X, y, eval_set=[(Xv, yv)])
        m.set_params(n_estimators=11)
        m.fit(X, y, eval_set=[(Xv, yv)])
        assert made == [runner_on] * 2
        models.append(m)
    _assert_same_model(*models, X)
    assert len(models[0]._rounds) == 11


UNCOVERED = {
    "subsample": dict(subsample=0.7),
    "colsample": dict(colsample_bytree=0.5),
    "quantised": dict(quantised_gradients=True),
    "huber": dict(loss="huber"),
    "monotonic": dict(monotonic_cst=[1, 0, 0, 0, 0, 0]),
    "multiclass": dict(),
}


@pytest.mark.parametrize("case", list(UNCOVERED))
def test_fits_the_runner_does_not_cover_run_their_rounds_step_by_step(case, monkeypatch):
    monkeypatch.setenv("GPUTREES_KERNELS", "numba")
    X, y = _data("regression" if case == "huber" else "binary")
    if case == "multiclass":
        y = np.digitize(X[:, 0], [-0.5, 0.5])
    cls = GradientBoostingRegressor if case == "huber" else GradientBoostingClassifier
    made = _spy(monkeypatch, True)
    model = cls(**{**BASE, "n_estimators": 3, **UNCOVERED[case]}).fit(X, y)
    # asked only where the loop may use one (every row, every feature, one tree, unquantised), and declined
    assert not any(made)
    assert len(model._rounds) == 3


def test_newton_leaf_values_equal_the_criterions():
    """The compiled leaf values are the generic path's operations: ``Newton.leaf_value``, 0 at internal nodes, the
    learning rate; bit for bit, including H + l2 <= 0 or NaN (denominator 1) and signed zeros."""
    rng = np.random.default_rng(0)
    k = 400
    stats = np.stack([rng.uniform(1, 9, k), rng.normal(size=k), rng.uniform(-2, 3, k)], axis=1)
    stats[::7, 1] = 0.0
    stats[::11, 1] = -0.0
    stats[::13, 2] = np.nan
    stats[::17, 2] = -1.0  # H + l2 == 0
    first_child = np.where(rng.random(k) < 0.4, rng.integers(1, k, k), -1)
    for l2, lr in [(1.0, 0.1), (0.0, 1.0), (2.5, 0.37)]:
        crit = Newton(l2)
        want = crit.leaf_value(NP, stats[None])
        want = np.where(first_child[None] < 0, want, np.zeros_like(want))
        want = lr * want
        got = cpu.boost._newton_leaf_values(np.ascontiguousarray(stats), first_child, k, l2, lr)
        assert got.shape == (1, k)
        np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))
