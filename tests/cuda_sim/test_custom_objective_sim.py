"""Custom objectives (``loss=callable``) on the cuda kernel set in numba-cuda's simulator: the built-in losses'
models (same splits, values to 1e-10).

Run by tests/test_kernels_cuda_sim.py in a process with ``NUMBA_ENABLE_CUDASIM=1``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from gputrees import GradientBoostingClassifier, GradientBoostingRegressor

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":  # pragma: no cover - guarded by tests/conftest.py
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 (run by tests/test_kernels_cuda_sim.py)", allow_module_level=True)


def squared_error(y, raw, w):
    return (raw - y) * w, w


def logistic(y, raw, w):
    p = 1.0 / (1.0 + np.exp(-raw))
    return (p - y) * w, np.maximum(p * (1.0 - p), 1e-16) * w


@pytest.mark.parametrize("kind", ["regressor", "classifier"])
def test_custom_objective_on_the_cuda_set_is_the_built_in_model(kind, monkeypatch):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(150, 3))
    X[rng.random(X.shape) < 0.05] = np.nan
    if kind == "regressor":
        y = np.nan_to_num(X[:, 0] * 2) + rng.normal(size=150) * 0.3
        cls, custom = GradientBoostingRegressor, squared_error
    else:
        y, cls, custom = rng.integers(0, 2, 150), GradientBoostingClassifier, logistic
    kw = dict(n_estimators=3, max_depth=3, max_bins=12, learning_rate=0.3, min_samples_leaf=1, early_stopping=False)
    monkeypatch.setenv("GPUTREES_KERNELS", "cuda")
    built_in = cls(**kw).fit(X, y)
    mine = cls(loss=custom, **kw).fit(X, y)
    for name in ("left", "right", "feature", "bin", "missing_left", "threshold"):
        np.testing.assert_array_equal(getattr(mine.trees_, name), getattr(built_in.trees_, name), err_msg=name)
    np.testing.assert_allclose(mine.tree_values_, built_in.tree_values_, rtol=0, atol=1e-10)
