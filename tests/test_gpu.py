"""GPU-side checks: the memory formula and check, GPU inputs, and (on a GPU) the cuda kernels and models.

The tests marked ``gpu`` need CuPy, numba-cuda and an NVIDIA GPU and are
reported as skipped elsewhere; the others run everywhere (the free-memory
check with a monkeypatched free-memory function, the formula's arithmetic,
the detection of GPU arrays with stand-in objects).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, r2_score

from estimator_zoo import fitted_arrays

import gputrees
from gputrees import _backend, _validation
from gputrees._memory import fit_peak_bytes

try:
    import cupy

    HAS_GPU = cupy.cuda.runtime.getDeviceCount() > 0
except Exception:  # ImportError, or CUDA runtime errors without a driver
    HAS_GPU = False


# -- memory ------------------------------------------------------------------------
def test_fit_peak_formula():
    n, f = 1000, 10
    # 8nF float copy + nF codes + 8nCT + 80nT + 2 min(M, 8 F B C (1 + 7) 2 T)
    hist = 8 * f * 256 * 3 * 8 * 2
    assert fit_peak_bytes(n, f) == 8 * n * f + n * f + 24 * n + 80 * n + 2 * hist
    assert fit_peak_bytes(n, f, float64_copy=False) == fit_peak_bytes(n, f) - 8 * n * f
    assert fit_peak_bytes(n, f, n_bins=1024) - fit_peak_bytes(n, f, n_bins=1024, float64_copy=False) == 8 * n * f
    assert fit_peak_bytes(n, f, memory_limit=1 << 19) == 9 * n * f + 104 * n + 2 * (1 << 19)
    assert fit_peak_bytes(n, f, boosting_trees_per_round=3) == fit_peak_bytes(n, f) + 8 * n * f + 168 * n
    with pytest.raises(ValueError, match="n_rows"):
        fit_peak_bytes(0, 3)


def test_input_larger_than_free_gpu_memory_is_refused_before_allocating(monkeypatch):
    allocated = []
    monkeypatch.setattr(_backend, "is_cupy_namespace", lambda xp: True)
    monkeypatch.setattr(_backend, "free_device_memory", lambda: 5 << 20)
    monkeypatch.setattr(_backend, "from_numpy", lambda *a, **k: allocated.append(a) or a[1])
    X = np.zeros((100_000, 20))
    needed = fit_peak_bytes(100_000, 20)
    with pytest.raises(MemoryError, match=f"{needed} bytes") as err:
        gputrees.DecisionTreeClassifier().fit(X, np.arange(100_000) % 2)
    assert isinstance(err.value, _backend.DeviceMemoryError)
    assert "0.00 GiB are free" in str(err.value) or "GiB are free" in str(err.value)
    assert allocated == []  # nothing was moved to the device
    with pytest.raises(MemoryError, match="GPU memory"):
        gputrees.GradientBoostingRegressor().fit(X, np.zeros(100_000))


def test_memory_check_passes_when_it_fits(monkeypatch):
    monkeypatch.setattr(_backend, "free_device_memory", lambda: 1 << 40)
    monkeypatch.setattr(_backend, "is_cupy_namespace", lambda xp: True)
    _validation._check_fit_memory(np.zeros((10, 2)), None)  # no error


# -- GPU inputs -----------------------------------------------------------------------
class _FakeCAI:
    __cuda_array_interface__ = {"shape": (2, 2), "typestr": "<f8", "data": (0, False), "version": 3}


class _FakeDLPack:
    def __init__(self, kind):
        self.kind = kind

    def __dlpack_device__(self):
        return (self.kind, 0)


def test_gpu_arrays_of_other_libraries_are_recognised():
    assert _backend.is_foreign_gpu_array(_FakeCAI())
    assert _backend.is_foreign_gpu_array(_FakeDLPack(2))  # kDLCUDA
    assert _backend.is_foreign_gpu_array(_FakeDLPack(13))  # kDLCUDAManaged
    assert not _backend.is_foreign_gpu_array(_FakeDLPack(1))  # kDLCPU
    assert not _backend.is_foreign_gpu_array(np.zeros(3))
    assert not _backend.is_foreign_gpu_array([1, 2])


# -- on a GPU ----------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="CuPy with a CUDA GPU is not available")
@pytest.mark.parametrize("name", ["histograms", "sums", "route", "apply"])
def test_cuda_kernels_equal_the_reference_on_the_gpu(name):
    import dataclasses

    from test_kernels_numba import _active, _chan, _codes, _random_batch, _split

    from gputrees.kernels.reference import apply_trees as apply_trees_reference
    from gputrees.kernels import _cuda, reference as _reference, quantisation_scale, quantise

    np_ns = _backend.namespace_of(np.empty(0))
    cp_ns = _backend.namespace_for(None, "cuda")
    dev = lambda a: None if a is None else cupy.asarray(a)  # noqa: E731
    n = 5000
    active, n_chan = _active(1, n=n, m=20000, n_nodes=30, mult="mult")
    active = dataclasses.replace(active, key=np.arange(20000))
    d_active = type(active)(*(dev(getattr(active, f)) for f in ("row", "chan_index", "node", "mult", "wmult", "key")))
    table = np.where(np.arange(30) % 3 == 0, -1, np.arange(30) // 2).astype(np.int64)
    for n_bins in (16, 256, 1000):
        codes = _codes(2, n, n_features=7, n_bins=n_bins)
        if name in ("histograms", "sums"):
            for kind in ("int", "float", "quantised"):
                chan = _chan(3, n_chan, "int" if kind == "int" else "float")
                scale = None
                if kind == "quantised":
                    scale = quantisation_scale(np_ns, chan, 4 * 20000)
                    chan = quantise(np_ns, chan, scale)
                if name == "histograms":
                    want = _reference.node_histograms(np_ns, codes, active, chan, table, 15, n_bins)
                    got = _cuda.node_histograms(cp_ns, dev(codes), d_active, dev(chan), dev(table), 15, n_bins,
                                                scale=scale)
                else:
                    want = _reference.node_sums(np_ns, active, chan, table, 15)
                    got = _cuda.node_sums(cp_ns, d_active, dev(chan), dev(table), 15, scale=scale)
                if kind == "float":
                    np.testing.assert_allclose(cupy.asnumpy(got), want, rtol=1e-10, atol=1e-9)
                else:
                    assert np.array_equal(cupy.asnumpy(got), want), (n_bins, kind)
        elif name == "route":
            for categorical in (False, True):
                split = _split(6, 15, 7, n_bins, categorical)
                d_split = type(split)(**{k: dev(v) for k, v in split.__dict__.items()})
                want = _reference.route_rows(np_ns, codes, active, table, split, 30, n_bins - 1)
                got = _cuda.route_rows(cp_ns, dev(codes), d_active, dev(table), d_split, 30, n_bins - 1)
                back = np.argsort(cupy.asnumpy(got.key))
                for f in ("row", "chan_index", "node", "mult"):
                    assert np.array_equal(cupy.asnumpy(getattr(got, f))[back], getattr(want, f)), f
        else:
            for categorical in (False, True):
                rng = np.random.default_rng(3)
                X = rng.standard_normal((3000, 7))
                X[rng.random(X.shape) < 0.1] = np.nan
                if categorical:
                    X = np.where(np.isnan(X), np.nan, rng.integers(0, 6, X.shape).astype(np.float64))
                batch = _random_batch(4, 20, 6, 7, categorical)
                d_batch = dataclasses.replace(batch, **{k: dev(getattr(batch, k)) for k in (
                    "left", "right", "feature", "threshold", "missing_left", "is_categorical", "cat_left")})
                want = apply_trees_reference(np_ns, batch, X, 5)
                assert np.array_equal(cupy.asnumpy(_cuda.apply_trees(cp_ns, d_batch, cupy.asarray(X), 5)), want)


def _gpu_models():
    return {
        "tree_clf": lambda: gputrees.DecisionTreeClassifier(max_depth=6, random_state=0),
        "tree_reg": lambda: gputrees.DecisionTreeRegressor(max_depth=6, random_state=0),
        "forest_clf": lambda: gputrees.RandomForestClassifier(n_estimators=10, max_depth=6, random_state=0),
        "extra_clf": lambda: gputrees.ExtraTreesClassifier(n_estimators=10, max_depth=6, random_state=0),
        "gboost_reg": lambda: gputrees.GradientBoostingRegressor(
            n_estimators=20, random_state=0, quantised_gradients=True, subsample=0.8),
        "gboost_clf": lambda: gputrees.GradientBoostingClassifier(
            n_estimators=10, random_state=0, quantised_gradients=True),
        "adaboost_clf": lambda: gputrees.AdaBoostClassifier(n_estimators=10, random_state=0),
        "pruned_tree": lambda: gputrees.DecisionTreeClassifier(ccp_alpha=0.002, random_state=0),
    }


def _gpu_data(name, n=5000):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 8))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) ** 2 + 0.5 * rng.standard_normal(n)
    if name.endswith("_clf") or name == "pruned_tree":
        y = np.digitize(y, [-1.0, 0.0])
    return X, y


def _compare(a, b, exact):
    assert a.keys() == b.keys()
    for key, value in a.items():
        if isinstance(value, np.ndarray) and value.dtype.kind == "f" and not exact:
            np.testing.assert_allclose(value, b[key], rtol=1e-9, atol=1e-9, err_msg=key)
        elif isinstance(value, np.ndarray):
            assert np.array_equal(value, b[key], equal_nan=True), key
        else:
            assert value == b[key], key


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="CuPy with a CUDA GPU is not available")
@pytest.mark.parametrize("name", list(_gpu_models()))
def test_cupy_models_equal_numpy_models(name):
    make = _gpu_models()[name]
    X, y = _gpu_data(name)
    cpu = fitted_arrays(make().fit(X, y))
    gpu_fit = fitted_arrays(make().fit(cupy.asarray(X), cupy.asarray(y)))
    # same splits; float values to rounding (exact where the sums are integers or quantised)
    structure = {k: v for k, v in cpu.items() if not (isinstance(v, np.ndarray) and v.dtype.kind == "f")}
    _compare(structure, {k: gpu_fit[k] for k in structure}, True)
    # exact: integer channels (classifier trees and forests). Boosting's values
    # to rounding: the squared-error baseline is y's mean, which a CuPy
    # reduction adds in another order than NumPy's pairwise sum (on an H100 its
    # last bit differed, and so did the float statistics that follow from it);
    # log-loss gradients go through exp, whose last bit CUDA and NumPy may
    # round differently, so a gradient can land on the other side of a
    # quantisation step
    exact = name in ("tree_clf", "forest_clf", "extra_clf")
    _compare(cpu, gpu_fit, exact)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="CuPy with a CUDA GPU is not available")
@pytest.mark.parametrize("name", list(_gpu_models()))
def test_score_takes_cupy_arrays(name):
    # scikit-learn's mixins call numpy.asarray on y, which CuPy refuses
    make = _gpu_models()[name]
    X, y = _gpu_data(name)
    w = np.random.default_rng(1).random(len(y))
    gpu_model = make().fit(cupy.asarray(X), cupy.asarray(y))
    score = gpu_model.score(cupy.asarray(X), cupy.asarray(y), sample_weight=cupy.asarray(w))
    assert isinstance(score, float)
    metric = r2_score if name.endswith("_reg") else accuracy_score
    y_pred = cupy.asnumpy(gpu_model.predict(cupy.asarray(X)))
    assert score == pytest.approx(metric(y, y_pred, sample_weight=w), rel=1e-12)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="CuPy with a CUDA GPU is not available")
@pytest.mark.parametrize("name", ["gboost_clf", "forest_clf"])
def test_shap_values_on_the_gpu_equal_the_cpus(name):
    """The GPU TreeSHAP kernel, CuPy in and out: a row's values and bias add up to what the model predicts."""
    make = _gpu_models()[name]
    X, y = _gpu_data(name, n=2000)
    model = make().fit(cupy.asarray(X), cupy.asarray(y))
    Xd = cupy.asarray(X[:200])
    values = model.shap_values(Xd)
    assert isinstance(values, cupy.ndarray)
    want = model.decision_function(Xd) if name.startswith("gboost") else model.predict_proba(Xd)
    np.testing.assert_allclose(cupy.asnumpy(values.sum(axis=1)), cupy.asnumpy(want), rtol=1e-9, atol=1e-9)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="CuPy with a CUDA GPU is not available")
@pytest.mark.parametrize("name", ["gboost_reg", "gboost_clf", "forest_clf", "tree_clf"])
def test_two_gpu_fits_are_bit_identical(name):
    make = _gpu_models()[name]
    X, y = _gpu_data(name)
    Xd, yd = cupy.asarray(X), cupy.asarray(y)
    _compare(fitted_arrays(make().fit(Xd, yd)), fitted_arrays(make().fit(Xd, yd)), True)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="CuPy with a CUDA GPU is not available")
@pytest.mark.parametrize("depth", [3, 6])
def test_device_step_grows_the_cpus_quantised_trees(monkeypatch, depth):
    """A boosting round's trees grown by gputrees.kernels.gpu.tree on the GPU equal the
    CPU's quantised trees (the same check as tests/cuda_sim/test_device_tree.py, on the hardware)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 8))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1] * X[:, 2]) > 0).astype(int)
    kw = dict(n_estimators=3, max_depth=depth, early_stopping=False, quantised_gradients=True)
    monkeypatch.delenv("GPUTREES_DEVICE_STEP", raising=False)
    gpu = gputrees.GradientBoostingClassifier(**kw).fit(cupy.asarray(X), cupy.asarray(y))
    cpu = gputrees.GradientBoostingClassifier(**kw).fit(X, y)
    for name in ("left", "feature", "bin", "missing_left", "threshold", "stats"):
        np.testing.assert_array_equal(_backend.to_numpy(getattr(gpu.trees_, name)),
                                      np.asarray(getattr(cpu.trees_, name)), err_msg=name)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="CuPy with a CUDA GPU is not available")
@pytest.mark.parametrize("name", ["forest_clf", "forest_reg"])
@pytest.mark.parametrize("max_depth", [6, None])
def test_device_step_grows_the_level_wise_forests(monkeypatch, name, max_depth):
    """A forest's batches grown by gputrees.kernels.gpu.tree on the GPU equal the same fit grown level by level
    (``GPUTREES_DEVICE_STEP=0``), and two such fits are bit-identical (the checks of
    tests/cuda_sim/test_device_forest.py, on the hardware); max_depth=None: deep trees, compact levels."""
    from gputrees.kernels.gpu import tree

    X, y = _gpu_data(name)
    cls = gputrees.RandomForestClassifier if name == "forest_clf" else gputrees.RandomForestRegressor
    kw = dict(n_estimators=6, max_depth=max_depth, random_state=0)
    Xd, yd = cupy.asarray(X), cupy.asarray(y)
    grown = []
    real = tree.grow_tree
    monkeypatch.setattr(tree, "grow_tree", lambda *a, **k: grown.append(1) or real(*a, **k))
    monkeypatch.delenv("GPUTREES_DEVICE_STEP", raising=False)
    device = fitted_arrays(cls(**kw).fit(Xd, yd))
    assert grown
    again = fitted_arrays(cls(**kw).fit(Xd, yd))
    monkeypatch.setenv("GPUTREES_DEVICE_STEP", "0")
    level_wise = fitted_arrays(cls(**kw).fit(Xd, yd))
    _compare(device, again, True)
    _compare(device, level_wise, True)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="CuPy with a CUDA GPU is not available")
def test_bootstrap_counts_on_the_gpu_equal_the_cpus():
    """The cuda set's counter-based bootstrap counts (made on the device, CuPy out) are the CPU sets' exactly, at
    a size whose draws span more than one grid of the launch."""
    from gputrees.kernels import get_kernels

    cp_ns = _backend.namespace_for(None, "cuda")
    np_ns = _backend.namespace_of(np.empty(0))
    for case in ((2**64 - 1, 3, 2, 257, 700), (12345, 0, 3, 1_000_000, 1_000_000)):
        got = get_kernels(cp_ns, "cuda").bootstrap_counts(cp_ns, *case)
        assert isinstance(got, cupy.ndarray) and got.dtype == cupy.float64
        np.testing.assert_array_equal(cupy.asnumpy(got), get_kernels(np_ns, "bincount").bootstrap_counts(np_ns, *case))


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="CuPy with a CUDA GPU is not available")
def test_cupy_input_is_not_copied_and_auto_picks_the_cuda_kernels():
    from gputrees.kernels import get_kernels

    X = cupy.asarray(np.random.default_rng(0).standard_normal((100, 3)))
    xp = _backend.namespace_for(X, None)
    Xd, _, _ = _validation.to_numeric_2d(X, xp, None)
    assert Xd.data.ptr == X.data.ptr
    assert get_kernels(xp).name == "cuda"


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="CuPy with a CUDA GPU is not available")
def test_torch_cuda_tensors_are_accepted():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    X, y = _gpu_data("gboost_reg", 500)
    Xt = torch.as_tensor(X, device="cuda")
    xp = _backend.namespace_for(Xt, None)
    Xd, _, _ = _validation.to_numeric_2d(Xt, xp, None)
    assert Xd.data.ptr == Xt.data_ptr()  # a view, not a copy
    model = gputrees.GradientBoostingRegressor(n_estimators=5, quantised_gradients=True).fit(Xt, torch.as_tensor(y))
    ref = gputrees.GradientBoostingRegressor(n_estimators=5, quantised_gradients=True).fit(X, y)
    np.testing.assert_allclose(_backend.to_numpy(model.predict(Xt)), ref.predict(X), rtol=1e-9)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="CuPy with a CUDA GPU is not available")
def test_memory_check_uses_the_device_free_memory(monkeypatch):
    real = cupy.cuda.Device

    class Device:
        """The real device (array-api-compat enters it as a context), reporting 1 MiB free."""

        mem_info = (1 << 20, 1 << 34)

        def __init__(self, *args):
            self._real = real(*args)

        def __getattr__(self, name):
            return getattr(self._real, name)

        def __enter__(self):
            return self._real.__enter__()

        def __exit__(self, *exc):
            return self._real.__exit__(*exc)

    monkeypatch.setattr(cupy.cuda, "Device", Device)
    # the pool's free blocks count as free memory: drop what earlier tests left there
    cupy.get_default_memory_pool().free_all_blocks()
    with pytest.raises(MemoryError, match="GiB of GPU memory"):
        gputrees.DecisionTreeRegressor().fit(cupy.zeros((200_000, 10)), cupy.zeros(200_000))
