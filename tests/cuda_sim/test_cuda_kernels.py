"""The cuda kernel set in numba-cuda's simulator, against the reference kernels and the CPU models.

Run in a process of its own with ``NUMBA_ENABLE_CUDASIM=1`` (set before
numba.cuda is first imported): ``tests/test_kernels_cuda_sim.py`` does that
from the main test run; ``tests/conftest.py`` leaves this folder out of any
run without the simulator. The simulator runs every CUDA thread as a Python
thread, so the inputs are tiny (tens of rows, a few features, 8 to 16 bins
and a 300-bin uint16 case) and the launches use blocks of 32 threads.

Exact equality is asserted for integer outputs (routing, leaves), for
integer-valued channels and in the quantised mode; float sums otherwise
equal the reference to float rounding (atomics add in any order).
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from estimator_zoo import fitted_arrays
from test_kernels_numba import _active, _chan, _codes, _random_batch, _split

import gputrees
from gputrees._backend import namespace_of
from gputrees.kernels.reference import apply_trees as apply_trees_reference
from gputrees._splitting import SplitRecord
from gputrees.kernels import ActiveRows, reference as _reference, get_kernels, quantisation_scale, quantise

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":  # pragma: no cover - guarded by tests/conftest.py
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 (run by tests/test_kernels_cuda_sim.py)", allow_module_level=True)

from gputrees.kernels import _cuda  # noqa: E402

NP = namespace_of(np.empty(0))


def _both(codes, active, chan, table, n_slots, n_bins, **kw):
    """(cuda histograms, cuda sums), after checking their shapes and dtypes."""
    h = _cuda.node_histograms(NP, codes, active, chan, table, n_slots, n_bins, **kw)
    s = _cuda.node_sums(NP, active, chan, table, n_slots, **kw)
    assert h.shape == (n_slots, codes.shape[1], n_bins, chan.shape[1]) and h.dtype == np.float64
    assert s.shape == (n_slots, chan.shape[1]) and s.dtype == np.float64
    return h, s


def _want(codes, active, chan, table, n_slots, n_bins):
    return (
        _reference.node_histograms(NP, codes, active, chan, table, n_slots, n_bins),
        _reference.node_sums(NP, active, chan, table, n_slots),
    )


def test_histograms_hand_made():
    codes = np.array([[0, 1], [1, 1], [2, 0]], dtype=np.uint8)
    active = ActiveRows(
        row=np.array([0, 1, 2, 1], dtype=np.int64),
        chan_index=np.array([0, 1, 2, 1], dtype=np.int64),
        node=np.array([7, 7, 8, 9], dtype=np.int64),
        mult=np.array([1.0, 2.0, 1.0, 3.0]),
    )
    chan = np.array([[1.0, 10.0], [1.0, 20.0], [1.0, 30.0]])
    table = np.full(10, -1, dtype=np.int64)
    table[7], table[9] = 0, 1  # node 8 is not built
    want = np.zeros((2, 2, 3, 2))
    want[0, 0, 0] = [1, 10]
    want[0, 0, 1] = [2, 40]
    want[0, 1, 1] = [3, 50]
    want[1, 0, 1] = [3, 60]
    want[1, 1, 1] = [3, 60]
    h, s = _both(codes, active, chan, table, 2, 3)
    assert np.array_equal(h, want)
    assert np.array_equal(s, [[3, 50], [3, 60]])
    rows, node, weights = np.array([0, 1, 2]), np.array([1, 0, 1]), chan * 2
    assert np.array_equal(
        _cuda.build_histograms(NP, codes, rows, node, weights, 2, 3),
        _reference.build_histograms(NP, codes, rows, node, weights, 2, 3),
    )


# (rows per task, shared words): the default path, several chunks per slot,
# one feature per group, and the global-memory fallback (bins x channels
# larger than the shared words)
PATHS = [(None, None), (4, None), (None, 40), (None, 5)]


@pytest.mark.parametrize("path", PATHS, ids=["shared", "chunks", "group1", "global"])
@pytest.mark.parametrize("mult", ["none", "mult", "both"])
def test_histograms_random_integer_channels_exact(path, mult):
    rows_per_task, words = path
    n = 30
    active, _ = _active(1, n=n, m=40, n_nodes=5, mult=mult, empty_nodes=(4,))
    codes = _codes(2, n, n_features=3, n_bins=12)  # the missing bin (11) included
    chan = _chan(3, n, "int")
    table = np.array([-1, 2, -1, 0, 1], dtype=np.int64)  # slot 1 (node 4) has no rows
    h, s = _both(codes, active, chan, table, 3, 12, rows_per_task=rows_per_task, shared_words=words)
    want_h, want_s = _want(codes, active, chan, table, 3, 12)
    assert np.array_equal(h, want_h) and np.array_equal(s, want_s)
    assert not h[1].any()


@pytest.mark.parametrize("path", [PATHS[0], PATHS[3]], ids=["shared", "global"])
def test_histograms_of_uint8_codes_whose_offsets_pass_255(path):
    """A code times the channel count, plus a feature's offset, past 255: computed in int64, not in the code's
    uint8 (NumPy 2 keeps uint8 for a uint8 times a Python int in the simulator)."""
    rows_per_task, words = path
    n = 40
    active, _ = _active(3, n=n, m=50, n_nodes=3, mult="none")
    codes = _codes(4, n, n_features=8, n_bins=200)
    assert codes.dtype == np.uint8 and int(codes.max()) * 3 > 255
    chan = _chan(5, n, "int")
    table = np.array([0, 1, 2], dtype=np.int64)
    h, s = _both(codes, active, chan, table, 3, 200, rows_per_task=rows_per_task, shared_words=words)
    want_h, want_s = _want(codes, active, chan, table, 3, 200)
    assert np.array_equal(h, want_h) and np.array_equal(s, want_s)


@pytest.mark.parametrize("path", [PATHS[0], PATHS[3]], ids=["shared", "global"])
def test_histograms_float_channels_to_rounding_and_quantised_exactly(path):
    rows_per_task, words = path
    n = 30
    active, n_chan = _active(4, n=n, m=45, n_nodes=4, n_chan_rows=2 * n, mult="mult")
    codes = _codes(5, n, n_features=3, n_bins=8)
    chan = _chan(6, n_chan, "float")
    table = np.array([0, -1, 1, 2], dtype=np.int64)
    h, s = _both(codes, active, chan, table, 3, 8, rows_per_task=rows_per_task, shared_words=words)
    want_h, want_s = _want(codes, active, chan, table, 3, 8)
    np.testing.assert_allclose(h, want_h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s, want_s, rtol=1e-12, atol=1e-12)
    # quantised: int64 sums on the GPU kernels, float64 on the reference, equal bit for bit
    scale = quantisation_scale(NP, chan, 3 * int(active.row.shape[0]))
    q = quantise(NP, chan, scale)
    h, s = _both(codes, active, q, table, 3, 8, rows_per_task=rows_per_task, shared_words=words, scale=scale)
    want_h, want_s = _want(codes, active, q, table, 3, 8)
    assert np.array_equal(h, want_h) and np.array_equal(s, want_s)


@pytest.mark.parametrize("path", [PATHS[0], PATHS[3]], ids=["shared", "global"])
def test_histograms_of_a_block_of_columns(path):
    """Boosting's [G, H] histograms read a column block of its [count, G, H] table (a strided view)."""
    rows_per_task, words = path
    n = 30
    active, _ = _active(7, n=n, m=40, n_nodes=4)
    codes = _codes(8, n, n_features=3, n_bins=8)
    block = _chan(9, n, "int")[:, 1:]
    table = np.array([0, -1, 1, 2], dtype=np.int64)
    h, s = _both(codes, active, block, table, 3, 8, rows_per_task=rows_per_task, shared_words=words)
    want_h, want_s = _want(codes, active, np.ascontiguousarray(block), table, 3, 8)
    assert np.array_equal(h, want_h) and np.array_equal(s, want_s)


def test_histograms_uint16_codes_and_one_row():
    n = 20
    active, _ = _active(7, n=n, m=25, n_nodes=3)
    codes = _codes(8, n, n_features=2, n_bins=300)
    assert codes.dtype == np.uint16
    chan = _chan(9, n, "int")
    table = np.array([1, 0, -1], dtype=np.int64)
    h, s = _both(codes, active, chan, table, 2, 300)
    want_h, want_s = _want(codes, active, chan, table, 2, 300)
    assert np.array_equal(h, want_h) and np.array_equal(s, want_s)
    one = ActiveRows(row=np.array([3]), chan_index=np.array([3]), node=np.array([0]))
    h, s = _both(codes, one, chan, np.array([0]), 1, 300)
    assert np.array_equal(h, _reference.node_histograms(NP, codes, one, chan, np.array([0]), 1, 300))
    assert np.array_equal(s, chan[3:4])


def test_histograms_many_nodes_and_no_rows():
    n = 24
    active, _ = _active(10, n=n, m=30, n_nodes=40)
    codes = _codes(11, n, n_features=2, n_bins=8)
    chan = _chan(12, n, "int")
    table = np.arange(40, dtype=np.int64)[::-1].copy()
    h, s = _both(codes, active, chan, table, 40, 8)
    want_h, want_s = _want(codes, active, chan, table, 40, 8)
    assert np.array_equal(h, want_h) and np.array_equal(s, want_s)
    empty = ActiveRows(*(np.empty(0, dtype=np.int64),) * 3)
    h, s = _both(codes, empty, chan, np.array([0, 1]), 2, 8)
    assert not h.any() and not s.any()


def test_scale_must_be_powers_of_two():
    active, _ = _active(0, n=5, m=5, n_nodes=1)
    with pytest.raises(ValueError, match="powers of two"):
        _cuda.node_sums(NP, active, _chan(0, 5, "int"), np.array([0]), 1, scale=[1.0, 3.0, 1.0])
    with pytest.raises(ValueError, match="entries"):
        _cuda.node_sums(NP, active, _chan(0, 5, "int"), np.array([0]), 1, scale=[1.0])


@pytest.mark.parametrize("categorical", [False, True])
@pytest.mark.parametrize("n_bins", [8, 300])
def test_route_rows_equals_reference(categorical, n_bins):
    n = 30
    active, _ = _active(4, n=n, m=40, n_nodes=8, mult="both")
    active = dataclasses.replace(active, key=np.arange(40, dtype=np.int64))
    codes = _codes(5, n, n_features=3, n_bins=n_bins)
    split = _split(6, 3, codes.shape[1], n_bins, categorical)
    table = np.array([-1, 0, -1, -1, 2, 1, -1, -1], dtype=np.int64)
    want = _reference.route_rows(NP, codes, active, table, split, 8, n_bins - 1)
    got = _cuda.route_rows(NP, codes, active, table, split, 8, n_bins - 1)
    assert got.node.dtype == np.int64
    assert (np.diff(got.node) >= 0).all()  # grouped by node, each node's pairs in their former order
    assert np.array_equal(np.lexsort((got.key, got.node)), np.arange(40))
    back = np.argsort(got.key)
    for name in ("row", "chan_index", "node", "mult", "wmult"):
        assert np.array_equal(getattr(got, name)[back], getattr(want, name)), name


def test_route_rows_hand_made_missing_goes_its_way():
    codes = np.array([[0, 5], [3, 9], [9, 1]], dtype=np.uint8)  # 9 = missing bin
    active = ActiveRows(row=np.arange(3, dtype=np.int64), chan_index=np.arange(3, dtype=np.int64),
                        node=np.zeros(3, dtype=np.int64))
    split = _split(0, 1, 2, 10, False)
    split = SplitRecord(**{**split.__dict__, "feature": np.array([0]), "bin": np.array([2]),
                           "missing_left": np.array([True])})
    got = _cuda.route_rows(NP, codes, active, np.array([0]), split, 1, 9)
    assert got.node.tolist() == [1, 1, 2] and got.row.tolist() == [0, 2, 1]


@pytest.mark.parametrize("categorical", [False, True])
def test_apply_trees_equals_reference(categorical):
    rng = np.random.default_rng(3)
    n_features = 3
    X = rng.standard_normal((12, n_features))
    X[rng.random(X.shape) < 0.2] = np.nan
    batch = _random_batch(4, 3, 3, n_features, categorical)
    if categorical:
        codes = rng.integers(0, 6, X.shape).astype(np.float64)
        X = np.where(np.isnan(X), np.nan, codes)
    want = apply_trees_reference(NP, batch, X, 5)
    got = _cuda.apply_trees(NP, batch, X, 5)
    assert got.dtype == np.int64 and np.array_equal(got, want)


@pytest.mark.parametrize("staged", [True, False], ids=["staged", "global"])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("categorical", [False, True])
def test_predict_raw_equals_reference_bit_for_bit(categorical, k, staged, monkeypatch):
    """Leaf values added in round order by one thread per (row, output): the reference's sums exactly, whether
    a block's rows are first copied to shared memory (chunks of rows, more chunks than blocks) or not."""
    if not staged:
        monkeypatch.setattr(_cuda, "STAGED_MIN_ROWS", 10**9)
    launched = []
    launch = _cuda._launch
    monkeypatch.setattr(_cuda, "_launch", lambda kernel, *a, **kw: launched.append(kernel) or launch(kernel, *a, **kw))
    rng = np.random.default_rng(5)
    n, n_features = 75, 3
    X = rng.standard_normal((n, n_features))
    X[rng.random(X.shape) < 0.2] = np.nan
    batch = _random_batch(6, 2 * k, 3, n_features, categorical)
    if categorical:
        X = np.where(np.isnan(X), np.nan, rng.integers(0, 6, X.shape).astype(np.float64))
    values = rng.standard_normal((2 * k, int(batch.left.shape[1]))) / 3.0
    base = np.broadcast_to(rng.standard_normal(k)[None, :], (n, k))
    want = _reference.predict_raw(NP, batch, values, X, 5, base)
    got = _cuda.predict_raw(NP, batch, values, X, 5, base)
    assert got.dtype == np.float64 and got.shape == (n, k)
    assert np.array_equal(got, want)
    assert launched == [_cuda._predict_raw_staged_kernel() if staged else _cuda._predict_raw_kernel()]
    assert np.array_equal(_cuda.predict_raw(NP, batch, values, X[:0], 5, base[:0]), np.zeros((0, k)))


def test_kernel_set_and_quantised_set():
    k = get_kernels(NP, "cuda")
    assert k.name == "cuda" and k.fixed_point
    assert get_kernels(NP, "auto").name != "cuda"  # NumPy arrays: the CPU sets
    q = k.quantised((1.0, 2.0, 4.0))
    assert not q.fixed_point and q.node_histograms.keywords["scale"] == (1.0, 2.0, 4.0)
    assert get_kernels(NP, "numba").quantised((1.0, 2.0, 4.0)).name == "numba"


# -- whole models: cuda kernels in the simulator against the CPU ones ------------------
# (the CPU's NumPy set, which the CPU tests hold equal to its Numba one: this simulator process compiles no
# Numba kernel that the suite's workers compile for their own tests at the same time)
CPU = "bincount"

def _fit(make, X, y, kernels, monkeypatch):
    monkeypatch.setenv("GPUTREES_KERNELS", kernels)
    return fitted_arrays(make().fit(X, y))


def _compare(a, b, exact):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], np.ndarray) and a[key].dtype.kind == "f" and not exact:
            np.testing.assert_allclose(a[key], b[key], rtol=1e-10, atol=1e-12, err_msg=key)
        elif isinstance(a[key], np.ndarray):
            assert np.array_equal(a[key], b[key], equal_nan=True), key
        else:
            assert a[key] == b[key], key


def _data(seed, n=48, classes=None):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    X[rng.random(X.shape) < 0.1] = np.nan
    if classes:
        return X, (np.nan_to_num(X[:, 0]) + rng.standard_normal(n) > 0).astype(int) + (classes > 2) * (X[:, 1] > 1)
    return X, np.nan_to_num(X[:, 0]) * 2 + rng.standard_normal(n)


MODELS = {
    "tree_clf": (lambda: gputrees.DecisionTreeClassifier(max_depth=3, max_bins=15, random_state=0), 3, True),
    "tree_reg": (lambda: gputrees.DecisionTreeRegressor(max_depth=3, max_bins=15, random_state=0), None, False),
    "forest_clf": (
        lambda: gputrees.RandomForestClassifier(n_estimators=3, max_depth=3, max_bins=15, random_state=0), 2, True
    ),
    "gboost_reg_quantised": (
        lambda: gputrees.GradientBoostingRegressor(
            n_estimators=3, max_depth=2, max_bins=15, min_samples_leaf=4, random_state=0, quantised_gradients=True
        ),
        None,
        True,
    ),
    "gboost_clf_quantised": (
        lambda: gputrees.GradientBoostingClassifier(
            n_estimators=2, max_depth=2, max_bins=15, min_samples_leaf=4, subsample=0.8, random_state=0,
            quantised_gradients=True,
        ),
        3,
        True,
    ),
}


def test_two_channel_boosting_with_cuda_kernels_equals_the_cpu_one(monkeypatch):
    """No missing values, min_samples_leaf=1, plain (not quantised) gradients: [G, H] histograms."""
    X, y = _data(3)
    X = np.nan_to_num(X)

    def make():
        return gputrees.GradientBoostingRegressor(
            n_estimators=2, max_depth=2, max_bins=15, min_samples_leaf=1, min_child_weight=0.5, random_state=0,
            quantised_gradients=False,
        )

    _compare(_fit(make, X, y, "cuda", monkeypatch), _fit(make, X, y, CPU, monkeypatch), False)


@pytest.mark.parametrize("name", list(MODELS))
def test_models_grown_with_cuda_kernels_equal_the_cpu_ones(name, monkeypatch):
    make, classes, exact = MODELS[name]
    X, y = _data(1, classes=classes)
    _compare(_fit(make, X, y, "cuda", monkeypatch), _fit(make, X, y, CPU, monkeypatch), exact)


def test_quantised_auto_is_on_with_the_cuda_kernels(monkeypatch):
    X, y = _data(2)

    def make(q):
        return lambda: gputrees.GradientBoostingRegressor(
            n_estimators=2, max_depth=2, max_bins=15, min_samples_leaf=4, random_state=0, quantised_gradients=q
        )

    auto_cuda = _fit(make("auto"), X, y, "cuda", monkeypatch)
    _compare(auto_cuda, _fit(make(True), X, y, CPU, monkeypatch), True)


@pytest.mark.parametrize("n_rows", [1, 1000, 10**7])
def test_device_quantiser_is_the_hosts(n_rows):
    """The device's quantisation (two launches, in place) gives the host's scales and values bit for bit,
    signs of zeros included, round after round of one fit; a channel without a scale (a non-finite value) is
    reported by ``failure()``, not raised."""
    from gputrees.kernels.gpu.quantise import DeviceQuantiser

    rng = np.random.default_rng(n_rows)
    quantiser = DeviceQuantiser(NP, 4)
    for round_ in range(3):
        table = np.stack([np.ones((2, 40)), rng.normal(size=(2, 40)) * 10.0 ** (round_ - 1),
                          np.zeros((2, 40)), rng.normal(size=(2, 40)) * 1e-18], axis=2)
        table[0, :5, 1] = [0.5, -0.5, 1.5, -1e-30, -0.0]  # ties and tiny negatives (to -0.0)
        want_scale = quantisation_scale(NP, table, n_rows)
        want = quantise(NP, table, want_scale)
        got = table.copy()
        scale = quantiser(got, n_rows)
        assert tuple(np.asarray(scale.array).tolist()) == want_scale
        np.testing.assert_array_equal(scale.inverse, 1.0 / np.asarray(want_scale))
        assert got.tobytes() == want.tobytes()  # bit for bit: -0.0 where numpy.round gives it
        assert quantiser.failure() is None
    bad = table.copy()
    bad[1, 3, 1] = np.inf
    quantiser(bad, n_rows)
    assert "non-finite" in quantiser.failure()
