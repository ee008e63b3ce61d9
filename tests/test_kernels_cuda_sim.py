"""The cuda kernel set without a GPU, and the quantised mode on the CPU kernels.

numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1``) must be switched on
before ``numba.cuda`` is first imported in a process, and it stays on for
that process; the main test process must keep real CUDA for the ``gpu``
tests (``tests/test_gpu.py``). So the simulator tests live in
``tests/cuda_sim/`` (left out of runs without the simulator by
``tests/conftest.py``) and :func:`test_cuda_kernels_in_the_simulator` runs
the kernels' ones in a child pytest process with the variable set, showing
the child's output when it fails (``simulator_run.py``;
``test_device_cuda_sim.py`` runs the device step's). The rest of this module
checks the quantisation rule and that every CPU kernel set gives the same
quantised model.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from estimator_zoo import available_kernels, fitted_arrays
from simulator_run import kernel_files, run_in_simulator

import gputrees
from gputrees._backend import namespace_of
from gputrees.kernels import ActiveRows, get_kernels, quantisation_scale, quantise

NP = namespace_of(np.empty(0))


def test_numpy_too_new_for_numba_cuda_is_named():
    # numba-cuda 0.30's first compile under NumPy 2.5 (seen on an H100): the
    # AttributeError from inside numba-cuda becomes an error naming both versions
    pytest.importorskip("numba.cuda")
    from gputrees.kernels import _cuda

    def too_new(*args):
        raise AttributeError("module 'numpy' has no attribute 'row_stack'")

    with pytest.raises(RuntimeError, match=r"numba-cuda .* cannot compile gputrees' GPU kernels with NumPy 2\.") as err:
        _cuda._run(too_new, ())
    assert "row_stack" in str(err.value) and isinstance(err.value.__cause__, AttributeError)

    def other(*args):
        raise AttributeError("'NoneType' object has no attribute 'shape'")

    with pytest.raises(AttributeError, match="shape"):  # any other AttributeError goes through as it is
        _cuda._run(other, ())
    calls = []
    _cuda._run(lambda *a: calls.append(a), (1, 2))
    assert calls == [(1, 2)]


def test_cuda_kernels_in_the_simulator():
    run_in_simulator(kernel_files())


def test_cuda_set_needs_a_gpu_or_the_simulator():
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        pytest.skip("this process runs the simulator")
    with pytest.raises((ValueError, ImportError), match="CuPy|numba-cuda"):
        get_kernels(NP, "cuda")
    assert get_kernels(NP, "auto").name != "cuda"
    assert "cuda" not in available_kernels()


# -- the quantisation rule ----------------------------------------------------------
@pytest.mark.parametrize("n_rows", [1, 7, 1000, 10**7])
def test_scale_is_the_largest_power_of_two_under_the_bound(n_rows):
    rng = np.random.default_rng(0)
    chan = np.stack([np.ones(50), rng.standard_normal(50) * 1e-3, rng.random(50) * 1e5, np.zeros(50)], axis=1)
    scale = quantisation_scale(NP, chan, n_rows)
    big = np.abs(chan).max(axis=0)
    for s, m in zip(scale, big):
        assert np.frexp(s)[0] == 0.5  # a power of two
        if m == 0:
            assert s == 1.0
        else:
            assert n_rows * m * s < 2.0**52 <= 2 * n_rows * m * s
    q = quantise(NP, chan, scale)
    assert np.array_equal(np.round(q * np.asarray(scale)), q * np.asarray(scale))
    assert np.all(np.abs(q - chan) <= 0.5 / np.asarray(scale))


def test_scale_refuses_bad_values():
    with pytest.raises(ValueError, match="non-finite"):
        quantisation_scale(NP, np.array([[1.0, np.inf]]), 3)
    with pytest.raises(ValueError, match="positive"):
        quantisation_scale(NP, np.ones((2, 2)), 0)
    with pytest.raises(ValueError, match="too large"):
        quantisation_scale(NP, np.array([[1e308]]), 10**6)
    assert quantisation_scale(NP, np.zeros((0, 3)), 5) == (1.0, 1.0, 1.0)


def test_float_sums_of_quantised_values_equal_the_int64_sums():
    """The CPU kernels' float64 sums of quantised channels are the int64 fixed-point sums, in any order."""
    rng = np.random.default_rng(1)
    n = 20_000
    g = rng.standard_normal((n, 1)) * np.exp(rng.uniform(-20, 5, (n, 1)))  # magnitudes over 11 decades
    scale = quantisation_scale(NP, g, n)
    q = quantise(NP, g, scale)
    ints = np.round(q[:, 0] * scale[0]).astype(np.int64)
    codes = rng.integers(0, 16, (n, 2)).astype(np.uint8)
    node = rng.integers(0, 3, n).astype(np.int64)
    order = rng.permutation(n)
    want = np.zeros((3, 2, 16), dtype=np.int64)
    for f in range(2):
        np.add.at(want[:, f, :], (node, codes[:, f]), ints)
    for name in available_kernels():
        for perm in (np.arange(n), order):
            active = ActiveRows(row=perm, chan_index=perm, node=node[perm])
            h = get_kernels(NP, name).node_histograms(NP, codes, active, q, np.arange(3), 3, 16)
            assert np.array_equal(h[..., 0] * scale[0], want.astype(np.float64)), name
    # the same values summed in float64 without quantisation depend on the order
    plain = [np.add.reduce(g[p, 0]) for p in (np.arange(n), order, order[::-1])]
    assert len(set(plain)) > 1


@pytest.mark.parametrize("make", [
    lambda: gputrees.GradientBoostingRegressor(
        n_estimators=4, max_depth=3, min_samples_leaf=3, subsample=0.8, random_state=0, quantised_gradients=True
    ),
    lambda: gputrees.GradientBoostingClassifier(
        n_estimators=3, max_depth=3, min_samples_leaf=3, random_state=0, quantised_gradients=True
    ),
], ids=["reg", "multiclass"])
def test_quantised_models_are_identical_on_every_cpu_kernel_set(make, monkeypatch):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((300, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) + 0.3 * rng.standard_normal(300)
    if isinstance(make(), gputrees.GradientBoostingClassifier):
        y = np.digitize(y, [-0.5, 0.5])
    fits = {}
    for name in available_kernels():
        monkeypatch.setenv("GPUTREES_KERNELS", name)
        fits[name] = fitted_arrays(make().fit(X, y))
    first = next(iter(fits.values()))
    for name, arrays in fits.items():
        for key, value in arrays.items():
            if isinstance(value, np.ndarray):
                assert np.array_equal(value, first[key], equal_nan=True), (name, key)
            else:
                assert value == first[key], (name, key)


def test_quantised_model_is_close_to_the_plain_one():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((400, 3))
    y = X[:, 0] - X[:, 1] ** 2 + 0.1 * rng.standard_normal(400)
    kw = dict(n_estimators=10, max_depth=3, random_state=0)
    plain = gputrees.GradientBoostingRegressor(quantised_gradients=False, **kw).fit(X, y)
    quant = gputrees.GradientBoostingRegressor(quantised_gradients=True, **kw).fit(X, y)
    np.testing.assert_allclose(quant.predict(X), plain.predict(X), rtol=1e-6, atol=1e-6)


def test_quantised_gradients_parameter_is_validated():
    with pytest.raises(ValueError, match="quantised_gradients"):
        gputrees.GradientBoostingRegressor(quantised_gradients="yes").fit(np.ones((10, 1)), np.arange(10.0))
