"""Every GPU kernel compiles for a real GPU, on a machine without one.

numba-cuda's simulator runs the kernels as Python: it never types them, so a
kernel that cannot compile (a device function numba-cuda cannot type, an
operation it does not support) passes every simulator test and fails on the
first GPU (it happened: a decorator left on a device function failed every
GPU prediction). Here the cuda code paths run on NumPy arrays with their
launches replaced by a compilation to PTX (``numba.cuda.compile_ptx``, for
an H100's compute capability) with the argument types of the launch: the
types a GPU launch gets from CuPy arrays of the same dtypes and layout.

Needs numba-cuda and NVVM (``cuda-toolkit[nvvm]``, in the test extras); the
kernels' results are not computed, only their compilation checked.
"""

from __future__ import annotations

import dataclasses
import os
import types

import numpy as np
import pytest

from device_inputs import boosting_round, device_params, forest_batch
from test_kernels_numba import _active, _chan, _codes, _random_batch, _split

if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":  # pragma: no cover - the simulator's numba.cuda cannot compile
    pytest.skip("compiles real kernels: not under the simulator", allow_module_level=True)
cuda = pytest.importorskip("numba.cuda")

import numba  # noqa: E402
import numba.cuda.dispatcher  # noqa: E402

import gputrees  # noqa: E402
from gputrees._backend import namespace_of  # noqa: E402
from gputrees.kernels import _cuda, quantisation_scale, quantise  # noqa: E402
from gputrees.kernels.gpu import bootstrap, tree, treeshap  # noqa: E402

NP = namespace_of(np.empty(0))
#: An H100's compute capability: the kernels compile for it without the device.
CC = (9, 0)


def _nvvm_missing():
    def empty(a):
        a[0] = 1

    try:
        cuda.compile_ptx(empty, (numba.int64[:],), cc=CC)
    except Exception as exc:  # NVVM not found: numba-cuda says so in several exception types
        return f"{type(exc).__name__}: {exc}"
    return None


@pytest.fixture(scope="module")
def nvvm():
    """Skips the module's tests, saying why, where numba-cuda cannot compile PTX (checked once, when run:
    not at collection, which every test worker does)."""
    missing = _nvvm_missing()
    if missing is not None:
        pytest.skip(f"numba-cuda cannot compile PTX here: {missing}")


#: PTX by (kernel function, argument types), across the module's tests: the device step's largest kernel,
#: launched with the same types by several tests, compiles once
_PTX = {}


@pytest.fixture()
def compiled(monkeypatch, nvvm):
    """Launches compile their kernel to PTX instead of running it; returns the test's
    {(kernel name, types): PTX}."""
    # a device function compiles for the current device's capability, which needs a GPU: give it one
    monkeypatch.setattr(numba.cuda.dispatcher, "get_current_device",
                        lambda: types.SimpleNamespace(compute_capability=CC))
    ptx = {}

    def launch(kernel, blocks, threads, *args, shared_bytes=0):
        sig = tuple(numba.typeof(a) for a in args)
        if (kernel.py_func, sig) not in _PTX:
            _PTX[kernel.py_func, sig] = cuda.compile_ptx(kernel.py_func, sig, cc=CC)[0]
        ptx[kernel.py_func.__qualname__, sig] = _PTX[kernel.py_func, sig]

    monkeypatch.setattr(_cuda, "_launch", launch)
    return ptx


def _names(ptx):
    return {name for name, _ in ptx}


@pytest.mark.parametrize("shared_bytes", [tree.SHARED_BLOCK_BYTES, 0], ids=["shared", "global"])
def test_device_step_kernels_compile(compiled, monkeypatch, shared_bytes):
    monkeypatch.setattr(tree, "SHARED_HISTOGRAM_BYTES", shared_bytes)
    inputs, scale = boosting_round(3, k=2, kernels="bincount")
    tree.grow_tree(NP, inputs, device_params(max_depth=3), scale=scale)
    build = "_build_shared" if shared_bytes else "_build"
    assert _names(compiled) == {build, "_split", "_route", "_finish"}


def test_device_quantisation_kernels_compile(compiled):
    from gputrees.kernels.gpu.quantise import DeviceQuantiser

    DeviceQuantiser(NP, 3)(np.random.default_rng(0).normal(size=(2, 50, 3)), 50)
    assert _names(compiled) == {"_channel_max", "_quantise"}


@pytest.mark.parametrize("shared_bytes", [tree.SHARED_BLOCK_BYTES, 0], ids=["shared", "global"])
def test_device_step_forest_kernels_compile(compiled, shared_bytes, monkeypatch):
    """A forest's batch: multiplicities, impurity criteria, per-node feature draws and local thresholds (every
    criterion is compiled into the kernels: its code is an argument)."""
    monkeypatch.setattr(tree, "SHARED_HISTOGRAM_BYTES", shared_bytes)
    inputs, scale = forest_batch(3, criterion="squared_error", kernels="bincount")
    params = device_params(max_depth=3, max_features=2, local_thresholds=True, sorted_small_nodes=True)
    tree.grow_tree(NP, inputs, params, scale=scale)
    assert _names(compiled) == {"_build_shared" if shared_bytes else "_build", "_split", "_route", "_finish"}


def test_bootstrap_kernel_compiles(compiled):
    bootstrap.bootstrap_counts(NP, 2**64 - 1, 3, 2, 100, 80)
    assert _names(compiled) == {"_count"}


def test_walks_compile(compiled, monkeypatch):
    for categorical in (False, True):
        batch = _random_batch(4, 6, 3, 5, categorical)
        X = np.random.default_rng(1).standard_normal((20, 5))
        _cuda.apply_trees(NP, batch, X, 5)
        values = np.zeros((6, int(batch.left.shape[1])))
        _cuda.predict_raw(NP, batch, values, X, 5, np.zeros((20, 3)))
        # rows staged in shared memory (above), and read from global memory where too few fit
        with monkeypatch.context() as m:
            m.setattr(_cuda, "STAGED_MIN_ROWS", 10**9)
            _cuda.predict_raw(NP, batch, values, X, 5, np.zeros((20, 3)))
    assert _names(compiled) == {"_apply_kernel.<locals>.apply", "_predict_raw_kernel.<locals>.predict",
                                "_predict_raw_staged_kernel.<locals>.predict"}


def test_histogram_and_routing_kernels_compile(compiled):
    n_bins = 16
    codes = _codes(2, 50, n_features=4, n_bins=n_bins)
    active, n_chan = _active(1, n=50, m=80, n_nodes=6, mult="mult")
    active = dataclasses.replace(active, key=np.arange(80))
    table = np.where(np.arange(6) % 3 == 0, -1, np.arange(6) // 2).astype(np.int64)
    for kind in ("float", "quantised"):
        chan = _chan(3, n_chan, "float")
        scale = None
        if kind == "quantised":
            scale = quantisation_scale(NP, chan, 4 * 80)
            chan = quantise(NP, chan, scale)
        for shared_words in (None, 1):  # the shared-memory kernel, and global atomics (one word: nothing fits)
            _cuda.node_histograms(NP, codes, active, chan, table, 3, n_bins, scale=scale, shared_words=shared_words)
        _cuda.node_sums(NP, active, chan, table, 3, scale=scale)
    for categorical in (False, True):
        _cuda.route_rows(NP, codes, active, table, _split(6, 3, 4, n_bins, categorical), 6, n_bins - 1)
    names = _names(compiled)
    assert {"_route_kernel.<locals>.route", "_runs_kernel.<locals>.runs"} <= names, names
    assert any("shared" in name for name in names) and any("global" in name for name in names), names


def test_tree_shap_kernel_compiles(compiled):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) > 0).astype(np.int64)
    est = gputrees.GradientBoostingClassifier(n_estimators=2, max_depth=3, random_state=0).fit(X, y)
    xp, Xp, model = est._shap_model(X[:5])
    for interactions in (False, True):
        treeshap.tree_shap(xp, model.batch, model.values, model.cover, Xp, model.missing_bin,
                           interactions=interactions)
    assert len(compiled) >= 1
