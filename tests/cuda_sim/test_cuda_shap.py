"""The GPU TreeSHAP kernel in numba-cuda's simulator, against the reference (run by tests/test_kernels_cuda_sim.py).

Tiny models (the simulator runs each CUDA thread as a Python thread): a few
shallow trees on a dozen rows with missing values and a categorical column.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

import gputrees
from gputrees.kernels import get_kernels
from gputrees.kernels import treeshap

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":  # pragma: no cover - guarded by tests/conftest.py
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 (run by tests/test_kernels_cuda_sim.py)", allow_module_level=True)


def _data():
    rng = np.random.default_rng(0)
    n = 80
    X = pd.DataFrame({
        "a": rng.standard_normal(n),
        "b": np.where(rng.random(n) < 0.2, np.nan, rng.standard_normal(n)),
        "c": pd.Categorical(rng.choice(["x", "y", "z"], n)),
    })
    y = ((X["a"] + np.nan_to_num(X["b"]) > 0) ^ (X["c"] == "y")).to_numpy().astype(np.int64)
    return X, y


@pytest.mark.parametrize("make", [
    lambda: gputrees.RandomForestClassifier(n_estimators=2, max_depth=3, random_state=0, device="cpu"),
    lambda: gputrees.GradientBoostingClassifier(n_estimators=2, max_depth=3, random_state=0, device="cpu"),
])
@pytest.mark.parametrize("interactions", [False, True])
def test_gpu_tree_shap_equals_reference(make, interactions):
    X, y = _data()
    est = make().fit(X, y)
    xp, Xp, model = est._shap_model(X.iloc[:10])
    want = treeshap.tree_shap(xp, model.batch, model.values, model.cover, Xp, model.missing_bin,
                              interactions=interactions)
    cuda_set = get_kernels(np, "cuda")
    got = cuda_set.tree_shap(xp, model.batch, model.values, model.cover, Xp, model.missing_bin,
                             interactions=interactions)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_paths_longer_than_the_local_arrays_take_the_reference(monkeypatch):
    from gputrees.kernels.gpu import treeshap as gpu_treeshap

    X, y = _data()
    est = gputrees.DecisionTreeClassifier(max_depth=4, random_state=0, device="cpu").fit(X, y)
    xp, Xp, model = est._shap_model(X.iloc[:6])
    monkeypatch.setattr(gpu_treeshap, "MAX_PATH", 2)
    called = []
    monkeypatch.setattr(gpu_treeshap, "launch", lambda *a: called.append(a))
    got = gpu_treeshap.tree_shap(xp, model.batch, model.values, model.cover, Xp, model.missing_bin)
    want = treeshap.tree_shap(xp, model.batch, model.values, model.cover, Xp, model.missing_bin)
    assert not called and model.batch.max_depth > 2
    np.testing.assert_array_equal(got, want)
