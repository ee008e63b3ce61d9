"""Refactors change no model: the zoo refitted equals the saved snapshot bit for bit, for every kernel set.

``tests/zoo_snapshot.py`` fits a fixed zoo of estimators (every estimator, and
the engine's distinct paths) and reduces it to what the public API shows:
predictions, probabilities, decision functions, leaves, staged predictions,
importances, scores and every tree's public arrays. ``tests/data/`` holds the
result per kernel set (``tests/data/make_zoo_snapshot.py`` writes it), and each
test here refits the zoo with one set and asserts that every array has the same
dtype, shape and bits as the saved one, the key sets equal, naming the first
array that differs.

* reference, bincount, numba: refitted in this process (``GPUTREES_KERNELS``
  is read at every fit and prediction), about 10 to 15 s each on 2 cores;
* cuda: numba-cuda's simulator must be on before numba.cuda is imported, so a
  child process fits the reduced ``SIM_ZOO`` (tens of rows, exact sums only:
  the simulator runs every CUDA thread as a Python thread), about 20 s.

A failure means a model changed. If the change is intended, regenerate the
files (``python tests/data/make_zoo_snapshot.py``) in the same commit and say
why. The snapshot holds float64 results as this machine's NumPy / Numba /
libm produced them (the file's ``__meta__`` records the versions): a
different stack can round a logarithm differently; the failure message shows
both environments.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import zoo_snapshot
from estimator_zoo import available_kernels
from zoo_snapshot import META, differences, environment, snapshot_models

TESTS = Path(__file__).resolve().parent
DATA = TESTS / "data"
_spec = importlib.util.spec_from_file_location("make_zoo_snapshot", DATA / "make_zoo_snapshot.py")
make_zoo_snapshot = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_zoo_snapshot)

CPU_SETS = ["reference", "bincount", "numba"]


def _saved(kernels: str) -> dict:
    path = DATA / f"zoo_snapshot_{kernels}.npz"
    with np.load(path, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def _env(snapshot: dict) -> dict:
    env = json.loads(str(snapshot[META])) if META in snapshot else {}
    env.pop("entry_seconds", None)
    return env


def _assert_same(got: dict, kernels: str) -> None:
    want = _saved(kernels)
    now = _env(got) if META in got else environment()
    # bit for bit on the stack that saved the snapshot; elsewhere float results within OTHER_STACK_RTOL
    same_stack = all(_env(want).get(k) == v for k, v in now.items())
    problems = differences(got, want, same_stack=same_stack)
    if problems:
        pytest.fail(
            f"the {kernels} zoo differs from tests/data/zoo_snapshot_{kernels}.npz: a model changed "
            f"({'bit for bit' if same_stack else 'beyond the other stack tolerance'}).\n  "
            + "\n  ".join(problems)
            + f"\nsaved with: {_env(want)}\nnow:        {now}"
            + "\n(an intended change: regenerate with python tests/data/make_zoo_snapshot.py, and say why)",
            pytrace=False,
        )


@pytest.mark.parametrize("kernels", CPU_SETS)
def test_zoo_equals_snapshot(kernels, monkeypatch):
    if kernels not in available_kernels():
        pytest.skip(f"the {kernels} kernels do not load here")
    monkeypatch.setenv("GPUTREES_KERNELS", kernels)
    _assert_same(snapshot_models("full"), kernels)


def test_zoo_equals_snapshot_cuda_simulator(tmp_path):
    pytest.importorskip("numba.cuda")
    out = tmp_path / "cuda.npz"
    make_zoo_snapshot.fit_in_child("cuda", out, timeout=900)
    with np.load(out, allow_pickle=False) as f:
        got = {k: f[k] for k in f.files}
    assert _env(got)["cudasim"] == "1" and _env(got)["kernels"] == "cuda"
    _assert_same(got, "cuda")


def test_snapshot_files_cover_the_zoo():
    """Every entry of the zoos is in its files, which hold the same keys across the CPU sets."""
    keys = {k: set(_saved(k)) - {META} for k in CPU_SETS + ["cuda"]}
    assert keys["reference"] == keys["bincount"] == keys["numba"]
    for zoo, kernels in ((zoo_snapshot.ZOO, "reference"), (zoo_snapshot.SIM_ZOO, "cuda")):
        assert {k.split(".", 1)[0] for k in keys[kernels]} == set(zoo)
        assert all(f"{name}.predict" in keys[kernels] for name in zoo)


def test_a_changed_bit_is_reported_with_its_key():
    """The comparison misses nothing: one ulp, the sign of a zero, a dtype, a shape, a label, a key."""
    want = _saved("cuda")
    assert differences(dict(want), want) == []
    key = next(k for k in want if k.endswith(".tree_.threshold"))
    a = want[key]
    i = int(np.flatnonzero(np.isfinite(a) & (a != 0))[0])
    ulp = a.copy()
    ulp[i] = np.nextafter(a[i], np.inf)
    zero = a.copy()
    zero[i] = 0.0
    minus_zero = zero.copy()
    minus_zero[i] = -0.0
    label = next(k for k in want if k.endswith(".categories_left"))
    renamed = want[label].copy()
    renamed[0] = "?"  # (the array's dtype may hold one character)
    cases = [
        (want, {key: ulp}, f"{key}: 1 of {a.size} elements differ; first at ({i},)"),
        ({**want, key: zero}, {key: minus_zero}, f"{key}: 1 of {a.size} elements differ; first at ({i},)"),
        (want, {key: a.astype(np.float32)}, f"{key}: dtype/shape float32"),
        (want, {key: a[:-1]}, f"{key}: dtype/shape float64({a.size - 1},)"),
        (want, {label: renamed}, f"{label}: 1 of"),
    ]
    for base, change, message in cases:
        problems = differences({**base, **change}, base)
        assert len(problems) == 1 and problems[0].startswith(message), (message, problems)
    got = dict(want)
    got.pop(key)
    got["new.key"] = np.zeros(1)
    assert differences(got, want)[0].startswith(f"key sets differ: 1 missing ['{key}'], 1 new ['new.key']")


def test_another_stack_allows_a_few_ulps_and_no_more():
    """On another machine's stack two ulps of a float pass; a value moved by 1e-6 of the array's largest, or an
    integer, does not."""
    want = _saved("cuda")
    key = next(k for k in want if k.endswith(".tree_.threshold"))
    a = want[key]
    i = int(np.flatnonzero(np.isfinite(a) & (a != 0))[0])
    ulp, moved = a.copy(), a.copy()
    ulp[i] = np.nextafter(np.nextafter(a[i], np.inf), np.inf)
    moved[i] = a[i] + 1e-6 * max(1.0, float(np.abs(a[np.isfinite(a)]).max()))
    count = next(k for k in want if k.endswith(".tree_.node_count"))
    more = want[count] + 1
    assert differences({**want, key: ulp}, want, same_stack=False) == []
    assert differences({**want, key: ulp}, want) != []
    assert differences({**want, key: moved}, want, same_stack=False)[0].startswith(f"{key}: 1 of")
    assert differences({**want, count: more}, want, same_stack=False)[0].startswith(f"{count}: ")
