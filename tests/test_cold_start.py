"""A family whose Numba kernels are not compiled yet fits small data on the NumPy kernels, the same models."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import numpy as np
import pytest

import gputrees
from estimator_zoo import assert_same_model
from gputrees.datasets import load_titanic
from gputrees.kernels import cold_start, cpu, get_kernels

pytest.importorskip("numba")


class ColdTree(gputrees.DecisionTreeClassifier):
    """A family of its own, whose kernels no earlier test has compiled."""


class ColdBooster(gputrees.GradientBoostingClassifier):
    """The same, for boosting (predictions through the rounds' raw sums)."""


@pytest.fixture
def cold(monkeypatch):
    """This process forgets its decisions; the families used here have no stamp, before or after."""
    monkeypatch.delenv("GPUTREES_KERNELS", raising=False)
    families = ["ColdTree", "ColdBooster", f"family-{uuid.uuid4().hex}"]
    for f in families:
        cold_start.stamp_path(f).unlink(missing_ok=True)
    cold_start.forget()
    yield families[-1]
    for f in families:
        cold_start.stamp_path(f).unlink(missing_ok=True)
    cold_start.forget()


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1] * X[:, 2]) > 0).astype(int)


def test_small_fits_stay_cold_then_the_family_compiles_and_is_stamped(cold):
    family = cold
    assert [cold_start.use_compiled(family, 1000) for _ in range(cold_start.COLD_FITS)] == [False] * 10
    assert not cold_start.use_compiled(family)  # a prediction follows the family
    assert not cold_start.stamp_path(family).exists()
    assert cold_start.use_compiled(family, 1000)
    assert cold_start.stamp_path(family).exists()
    cold_start.forget()
    assert cold_start.use_compiled(family)  # a later process: the stamp


def test_a_large_fit_compiles_at_once(cold):
    assert cold_start.use_compiled(cold, cold_start.LARGE_WORK + 1)
    assert cold_start.stamp_path(cold).exists()


def test_a_cold_fit_and_its_predictions_compile_nothing_and_equal_the_numba_models(cold, monkeypatch):
    X, y = _data()
    monkeypatch.setenv("GPUTREES_KERNELS", "numba")
    want_tree = gputrees.DecisionTreeClassifier(max_depth=5).fit(X, y)
    want_boost = gputrees.GradientBoostingClassifier(n_estimators=5, max_depth=3).fit(X, y)
    monkeypatch.delenv("GPUTREES_KERNELS")

    def no_numba(*args, **kwargs):
        raise AssertionError("a cold family's fit asked for the Numba kernels")

    monkeypatch.setattr(cpu, "make_kernels", no_numba)
    monkeypatch.setattr(cold_start, "any_compiled", lambda: False)
    tree = ColdTree(max_depth=5).fit(X, y)
    boost = ColdBooster(n_estimators=5, max_depth=3).fit(X, y)
    np.testing.assert_array_equal(tree.predict_proba(X), want_tree.predict_proba(X))
    np.testing.assert_array_equal(boost.predict_proba(X), want_boost.predict_proba(X))
    assert_same_model(tree, want_tree)
    assert_same_model(boost, want_boost)


def test_outside_a_fit_only_predictions_wait_for_a_compiled_family(cold, monkeypatch):
    monkeypatch.setattr(cold_start, "any_compiled", lambda: False)
    assert get_kernels(np).name == "numba"  # Dask workers and the engine: as before
    assert get_kernels(np, prediction=True).name == "bincount"
    monkeypatch.setattr(cold_start, "any_compiled", lambda: True)
    assert get_kernels(np, prediction=True).name == "numba"
    monkeypatch.setenv("GPUTREES_KERNELS", "numba")
    with cold_start.fitting(cold, 10):
        assert get_kernels(np).name == "numba"  # the environment still decides


def test_an_ensembles_trees_follow_the_ensemble(cold):
    with cold_start.fitting(cold, 10):
        assert cold_start.fit_choice() is False
        with cold_start.fitting("DecisionTreeClassifier", cold_start.LARGE_WORK * 2):
            assert cold_start.fit_choice() is False
            assert get_kernels(np).name == "bincount"
    assert cold_start.fit_choice() is None


CHILD = """
import json, sys
from numba.core import event
compiled = []
class Count(event.Listener):
    def on_start(self, ev): compiled.append(1)
    def on_end(self, ev): pass
event.register("numba:compile", Count())
import gputrees
from gputrees.datasets import load_titanic
X, y = load_titanic(return_X_y=True, as_frame=True)
m = gputrees.DecisionTreeClassifier().fit(X, y)
m.predict(X)
print(json.dumps(dict(compiled=len(compiled), score=float(m.score(X, y)))))
"""


def test_a_fresh_install_fits_titanic_without_compiling(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "GPUTREES_KERNELS"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True,
                         timeout=600)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["compiled"] == 0
    X, y = load_titanic(return_X_y=True, as_frame=True)
    assert result["score"] == gputrees.DecisionTreeClassifier().fit(X, y).score(X, y)
