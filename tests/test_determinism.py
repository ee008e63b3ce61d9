"""Determinism and thread safety, for every estimator and kernel set.

- The same ``random_state`` gives bit-identical fitted arrays run after run
  and in a fresh process; a different one gives a different model for the
  estimators that draw random numbers.
- Concurrent ``predict`` / ``predict_proba`` calls from 8 threads on one
  fitted model return what serial calls return.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from estimator_zoo import CLASSIFIERS, ESTIMATORS, RANDOMISED, available_kernels, fitted_arrays

KERNELS = available_kernels()
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def _data(seed=0, n=300, f=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f))
    X[rng.random(size=(n, f)) < 0.05] = np.nan
    y_clf = (np.nan_to_num(X[:, 0]) + rng.normal(scale=0.5, size=n) > 0).astype(int) + (X[:, 1] > 1)
    y_reg = np.nan_to_num(X[:, 0]) * 2 + rng.normal(scale=0.3, size=n)
    return X, y_clf, y_reg


def _fit(name, rs=0):
    X, yc, yr = _data()
    return ESTIMATORS[name](rs).fit(X, yc if name in CLASSIFIERS else yr)


def fingerprint(est) -> str:
    """SHA-256 over every fitted array (dtype, shape, bytes) and scalar of ``est``."""
    h = hashlib.sha256()
    for key, v in sorted(fitted_arrays(est).items()):
        h.update(key.encode())
        if isinstance(v, np.ndarray):
            if v.dtype == object:
                h.update(repr(v.tolist()).encode())
            else:
                h.update(f"{v.dtype}{v.shape}".encode())
                h.update(np.ascontiguousarray(v).tobytes())
        else:
            h.update(repr(v).encode())
    return h.hexdigest()


def _assert_same_arrays(a, b):
    fa, fb = fitted_arrays(a), fitted_arrays(b)
    assert fa.keys() == fb.keys()
    assert len(fa) > 3
    for key in fa:
        va, vb = fa[key], fb[key]
        if isinstance(va, np.ndarray):
            assert va.dtype == vb.dtype and va.shape == vb.shape, key
            if va.dtype == object:
                assert va.tolist() == vb.tolist(), key
            else:
                assert va.tobytes() == vb.tobytes(), key  # bit-identical, NaN included
        else:
            assert va == vb or (va != va and vb != vb), key


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_same_random_state_bit_identical(name, kernels, monkeypatch):
    monkeypatch.setenv("GPUTREES_KERNELS", kernels)
    _assert_same_arrays(_fit(name), _fit(name))


@pytest.mark.parametrize("name", RANDOMISED)
def test_different_random_state_different_model(name):
    a, b = fitted_arrays(_fit(name, 0)), fitted_arrays(_fit(name, 1))
    differs = [k for k in a if k in b and isinstance(a[k], np.ndarray) and (
        a[k].shape != b[k].shape or a[k].dtype == object or not np.array_equal(a[k], b[k], equal_nan=True))]
    assert differs, "random_state 0 and 1 gave the same model"
    X, _, _ = _data(seed=5)
    assert not np.array_equal(np.asarray(_fit(name, 0).predict(X)), np.asarray(_fit(name, 1).predict(X)))


_CHILD = """
import json, sys
sys.path.insert(0, {tests!r})
from test_determinism import _fit, fingerprint
from estimator_zoo import ESTIMATORS
print(json.dumps({{name: fingerprint(_fit(name)) for name in ESTIMATORS}}))
"""


@pytest.mark.parametrize("kernels", KERNELS)
def test_bit_identical_across_processes(kernels, monkeypatch):
    monkeypatch.setenv("GPUTREES_KERNELS", kernels)
    env = dict(os.environ, GPUTREES_KERNELS=kernels, PYTHONHASHSEED="123")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TESTS), env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-c", _CHILD.format(tests=str(TESTS))],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300, check=True,
    )
    theirs = json.loads(out.stdout.strip().splitlines()[-1])
    ours = {name: fingerprint(_fit(name)) for name in ESTIMATORS}
    assert theirs == ours


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_concurrent_predict_equals_serial(name):
    est = _fit(name)
    X, _, _ = _data(seed=3, n=2000)
    chunks = [X[i::8] for i in range(8)] * 3  # 24 calls over 8 threads, different inputs
    methods = ["predict"] + (["predict_proba"] if hasattr(est, "predict_proba") else [])
    for method in methods:
        serial = [np.asarray(getattr(est, method)(c)) for c in chunks]
        with ThreadPoolExecutor(max_workers=8) as pool:
            threaded = list(pool.map(lambda c: np.asarray(getattr(est, method)(c)), chunks))
        for s, t in zip(serial, threaded):
            np.testing.assert_array_equal(s, t)
