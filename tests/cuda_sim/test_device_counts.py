"""What a boosting fit and a forest's batch on the device cost in operations and host reads (simulated).

The training arrays are a NumPy subclass standing for device arrays
(:class:`DeviceArray`): every NumPy function or ufunc applied to one, and
every element written into one, counts as a device operation, and every
conversion of one to a host value (``bool``, ``int``, ``float``,
``index``, ``item``, ``tolist``, and :func:`gputrees._backend.to_numpy`)
as a host read; a kernel launch is a device operation. The simulated
kernels' own element reads inside a launch are not counted (they run on
the device). The counts are printed.

Run by tests/test_kernels_cuda_sim.py in a process with ``NUMBA_ENABLE_CUDASIM=1``.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np
import pytest

from gputrees import GradientBoostingRegressor, RandomForestClassifier, _backend
from gputrees import _boost
from gputrees._records import GrowerParams

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":  # pragma: no cover - guarded by tests/conftest.py
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 (run by tests/test_kernels_cuda_sim.py)", allow_module_level=True)

from gputrees.kernels import _cuda  # noqa: E402
from gputrees.kernels.gpu import tree  # noqa: E402


#: Most device operations of a depth-6 boosting tree (of one tree a round), and of its round after the first.
TREE_OPERATIONS = 19
ROUND_OPERATIONS = 52


class Counts:
    def __init__(self):
        self.ops = 0
        self.reads = 0


COUNTS = Counts()
#: The namespace's functions that make arrays from host values or shapes.
CONSTRUCTORS = ("zeros", "empty", "full", "ones", "arange", "asarray", "zeros_like", "empty_like", "full_like",
                "ones_like", "eye", "linspace")


def _base(x):
    if isinstance(x, DeviceArray):
        return x.view(np.ndarray)
    if isinstance(x, (list, tuple)):
        return type(x)(_base(v) for v in x)
    if isinstance(x, dict):
        return {k: _base(v) for k, v in x.items()}
    return x


def _wrap(x):
    if isinstance(x, np.ndarray) and not isinstance(x, DeviceArray):
        return x.view(DeviceArray)
    if isinstance(x, np.generic):
        return np.asarray(x).view(DeviceArray)
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    if isinstance(x, list):
        return [_wrap(v) for v in x]
    return x


class DeviceArray(np.ndarray):
    """A NumPy array standing for a device array: its operations and host reads are counted."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        COUNTS.ops += 1
        if "out" in kwargs:
            kwargs["out"] = _base(kwargs["out"])
        return _wrap(getattr(ufunc, method)(*_base(inputs), **kwargs))

    def __array_function__(self, func, types, args, kwargs):
        COUNTS.ops += 1
        return _wrap(func(*_base(args), **_base(kwargs)))

    def __setitem__(self, key, value):
        COUNTS.ops += 1
        np.ndarray.__setitem__(self.view(np.ndarray), _base(key), _base(value))

    def __getitem__(self, key):
        out = np.ndarray.__getitem__(self.view(np.ndarray), _base(key))
        return out if isinstance(out, np.generic) else out.view(DeviceArray)  # a kernel's element read, or a view

    def _read(self):
        COUNTS.reads += 1
        return self.view(np.ndarray)

    def __bool__(self):
        return bool(self._read())

    def __int__(self):
        return int(self._read())

    def __float__(self):
        return float(self._read())

    def __index__(self):
        return self._read().__index__()

    def item(self, *args):
        return self._read().item(*args)

    def tolist(self):
        return self._read().tolist()


@pytest.fixture()
def counted(monkeypatch):
    """Launches and ``to_numpy`` counted; returns the counts (reset)."""
    COUNTS.ops = COUNTS.reads = 0
    real_launch = _cuda._launch

    def launch(kernel, blocks, threads, *args, **kw):
        COUNTS.ops += 1
        return real_launch(kernel, blocks, threads, *_base(args), **kw)

    # (the kernel modules' public ``launch`` calls this one)
    monkeypatch.setattr(_cuda, "_launch", launch)
    real_to_numpy = _backend.to_numpy

    def to_numpy(a):
        if isinstance(a, DeviceArray):
            COUNTS.reads += 1
        return real_to_numpy(_base(a))

    for module in ("gputrees._backend", "gputrees.kernels.reference", "gputrees._boosting", "gputrees._binning"):
        monkeypatch.setattr(f"{module}.to_numpy", to_numpy, raising=False)
    # arrays the namespace makes (no array argument to dispatch on) are device arrays too
    import array_api_compat.numpy as compat

    for name in CONSTRUCTORS:
        real = getattr(compat, name)

        def make(*args, _real=real, **kwargs):
            COUNTS.ops += 1
            return _wrap(_real(*_base(args), **_base(kwargs)))

        monkeypatch.setattr(compat, name, make)
    return COUNTS


def test_boosting_rounds_read_nothing_and_levels_are_a_few_operations(counted, monkeypatch):
    """A depth-6 booster on the device: a fixed number of operations a level, none read to the host until the fit
    ends (no callback, no early stopping, no verbose)."""
    monkeypatch.setenv("GPUTREES_KERNELS", "cuda")
    rng = np.random.default_rng(0)
    n = 300
    X = rng.normal(size=(n, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2 + rng.normal(size=n) * 0.2
    per_round = []
    real_round = _boost.LocalRounds.round

    def counted_round(self, *args):
        ops, reads = COUNTS.ops, COUNTS.reads
        out = real_round(self, *args)
        per_round.append((COUNTS.ops - ops, COUNTS.reads - reads))
        return out

    monkeypatch.setattr(_boost.LocalRounds, "round", counted_round)
    levels = []
    real_grow = tree.grow_tree

    def counted_grow(xp, inputs, params, **kw):
        ops = COUNTS.ops
        out = real_grow(xp, inputs, params, **kw)
        levels.append((params.max_depth, COUNTS.ops - ops))
        return out

    monkeypatch.setattr(tree, "grow_tree", counted_grow)
    results = {}
    for depth in (4, 6):
        per_round.clear()
        levels.clear()
        kw = dict(n_estimators=3, max_depth=depth, max_bins=16, learning_rate=0.3, early_stopping=False)
        model = GradientBoostingRegressor(**kw)
        model.fit(X.view(DeviceArray), y.view(DeviceArray))
        assert model.n_iter_ == 3
        results[depth] = (list(per_round), list(levels))
    (rounds4, trees4), (rounds6, trees6) = results[4], results[6]
    assert len(trees6) == 3  # every round's trees grown on the device
    reads = [r for _, r in rounds4 + rounds6]
    assert reads == [0] * len(reads), f"host reads inside rounds: {reads}"
    # two more levels: the same operations a tree but for two levels' worth
    per_level = (trees6[-1][1] - trees4[-1][1]) / 2
    assert per_level == tree.LAUNCHES_PER_LEVEL, per_level
    # upper bounds, as tight as reached (a regression fails): a depth-6 tree's operations (its levels, the
    # routing, the batch's launch and its four arrays), and its round's (quantisation: two launches; the leaf
    # values and the round's end: the generic array operations)
    assert trees6[-1][1] <= TREE_OPERATIONS, trees6
    assert max(ops for ops, _ in rounds6[1:]) <= ROUND_OPERATIONS, rounds6
    print(f"device booster: {per_level:.0f} device operations a level, "
          f"{trees6[-1][1]} a depth-6 tree ({trees6[-1][1] - 6 * per_level:.0f} outside the levels), "
          f"{rounds6[-1][0]} a round, 0 host reads in {len(reads)} rounds")


def test_early_stopping_reads_the_device_scores_a_few_rounds_at_a_time(counted, monkeypatch):
    """Early stopping on the device reads the validation scores once every ``STOP_CHECK_ROUNDS`` rounds, not
    every round (each read waits for the device), and stops at the round a read every round stops at: the same
    rounds and scores."""
    monkeypatch.setenv("GPUTREES_KERNELS", "cuda")
    rng = np.random.default_rng(3)
    n = 300
    X = rng.normal(size=(n, 4))
    y = X[:, 0] + rng.normal(size=n) * 2.0  # noisy: the validation loss turns up after a few rounds
    boost_reads = []
    from gputrees import _boosting

    real_boost = _boosting.boost

    def counted_boost(*args, **kw):
        reads = COUNTS.reads
        out = real_boost(*args, **kw)
        boost_reads.append(COUNTS.reads - reads)
        return out

    monkeypatch.setattr(_boosting, "boost", counted_boost)
    # the stand-in device arrays are NumPy arrays: early stopping told they are not
    real_on_host = _boost._on_host
    monkeypatch.setattr(_boost, "_on_host", lambda s: not isinstance(s, DeviceArray) and real_on_host(s))
    kw = dict(n_estimators=60, max_depth=3, max_bins=16, learning_rate=0.3, early_stopping=True,
              n_iter_no_change=4, validation_fraction=0.3, random_state=0)
    fits = {}
    for every in (1, _boost.STOP_CHECK_ROUNDS):
        monkeypatch.setattr(_boost, "STOP_CHECK_ROUNDS", every)
        fits[every] = GradientBoostingRegressor(**kw).fit(X.view(DeviceArray), y.view(DeviceArray))
    eager, batched = fits[1], fits[_boost.STOP_CHECK_ROUNDS]
    assert eager.n_iter_ < kw["n_estimators"]  # it stopped
    assert batched.n_iter_ == eager.n_iter_
    np.testing.assert_array_equal(batched.validation_score_, eager.validation_score_)
    np.testing.assert_array_equal(batched.train_score_, eager.train_score_)
    np.testing.assert_array_equal(np.asarray(batched.predict(X)), np.asarray(eager.predict(X)))
    rounds_grown = eager.n_iter_ + kw["n_iter_no_change"]  # the best round, then the rounds without improvement
    assert boost_reads[1] <= -(-rounds_grown // _boost.STOP_CHECK_ROUNDS) < boost_reads[0], boost_reads
    print(f"early stopping on the device: {boost_reads[1]} host reads in {rounds_grown} rounds "
          f"({boost_reads[0]} reading every round)")


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the keys' uint64 mixing, simulated
def test_forest_batches_are_a_few_operations_a_level_and_read_nothing(counted, monkeypatch):
    """A random forest's batch on the device (bootstrap, per-node feature draws): a fixed number of operations a
    level for all of its trees, nothing read to the host while they grow (the batch's layout reads once)."""
    monkeypatch.setenv("GPUTREES_KERNELS", "cuda")
    rng = np.random.default_rng(1)
    n = 200
    X = rng.normal(size=(n, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + rng.normal(size=n) * 0.5 > 0).astype(np.int64)
    grown = []
    real_grow = tree.grow_tree

    def counted_grow(xp, inputs, params, **kw):
        # the bootstrap counts and multiplicities were made on the device
        assert isinstance(inputs.multiplicity, DeviceArray) and isinstance(inputs.weight_multiplicity, DeviceArray)
        ops, reads = COUNTS.ops, COUNTS.reads
        out = real_grow(xp, inputs, params, **kw)
        grown.append((out is not None, COUNTS.ops - ops, COUNTS.reads - reads))
        return out

    monkeypatch.setattr(tree, "grow_tree", counted_grow)
    written = []  # the shapes of the host arrays the fit puts on the device
    real_from_numpy = _backend.from_numpy

    def from_numpy(xp, a, dtype=None):
        written.append(np.shape(a))
        return real_from_numpy(xp, a, dtype)

    monkeypatch.setattr(_backend, "from_numpy", from_numpy)
    results = {}
    for depth in (3, 5):
        grown.clear()
        model = RandomForestClassifier(n_estimators=4, batch_size=4, max_depth=depth, max_bins=16, max_features=2,
                                       random_state=0)
        model.fit(X.view(DeviceArray), y)
        assert [g[0] for g in grown] == [True]  # the one batch of 4 trees grown on the device
        results[depth] = grown[0]
    assert written and (4, n) not in written, written  # no (trees, rows) array from the host
    (_, ops3, reads3), (_, ops5, reads5) = results[3], results[5]
    assert reads3 == reads5 == 0, (reads3, reads5)
    per_level = (ops5 - ops3) / 2
    # every node built over its drawn features: the level's histograms zeroed too
    assert per_level == tree.LAUNCHES_PER_LEVEL + tree.EVERY_OPERATIONS_PER_LEVEL, per_level
    # the benchmark's forest (bench/bench_gpu.py: 1,000,000 rows, 28 features, 255 bins, binary, depth 10,
    # max_features="sqrt": 5) in batches of 7 trees (memory_limit), grown trees_per_pass at a time
    bench = tree.trees_per_pass(SimpleNamespace(codes=np.empty((0, 28)), bin_mapper=SimpleNamespace(n_bins=256),
                                                channels=np.empty((0, 3)), tree_features=None),
                                GrowerParams(max_depth=10, max_features=5))
    print(f"device forest: {per_level:.0f} device operations a level for a batch of 4 trees, {ops5} a depth-5 "
          f"batch ({ops5 - 5 * per_level:.0f} outside the levels), 0 host reads while it grows; the benchmark's "
          f"depth-10 trees: {bench} a pass")


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the keys' uint64 mixing, simulated
def test_deep_forest_levels_read_one_number_each(counted, monkeypatch):
    """A random forest's batch of deep trees (max_depth None): a fixed number of operations a level and, below the
    perfect levels, one host read a level (the most nodes of a tree that may split); the node table's widening
    counted apart."""
    monkeypatch.setenv("GPUTREES_KERNELS", "cuda")
    monkeypatch.setattr(tree, "DEEP_PERFECT_LEVELS", 3)
    rng = np.random.default_rng(2)
    n = 120
    X = rng.normal(size=(n, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + rng.normal(size=n) > 0).astype(np.int64)
    marks = []  # (operations, reads) at each split launch, and the widenings' operations
    widen_ops = []
    real_launch, real_widen = tree.launch, tree._widen

    def launch(kernel, *args, **kw):
        if kernel is tree._split:
            marks.append((COUNTS.ops, COUNTS.reads, sum(widen_ops)))
        return real_launch(kernel, *args, **kw)

    def widen(*args):
        ops = COUNTS.ops
        out = real_widen(*args)
        widen_ops.append(COUNTS.ops - ops)
        return out

    monkeypatch.setattr(tree, "launch", launch)
    monkeypatch.setattr(tree, "_widen", widen)
    grown = []
    real_grow = tree.grow_tree

    def counted_grow(xp, inputs, params, **kw):
        reads = COUNTS.reads
        out = real_grow(xp, inputs, params, **kw)
        grown.append((out, COUNTS.reads - reads))
        return out

    monkeypatch.setattr(tree, "grow_tree", counted_grow)
    model = RandomForestClassifier(n_estimators=2, batch_size=2, max_depth=None, max_bins=16, max_features=2,
                                   random_state=0)
    model.fit(X.view(DeviceArray), y)
    [(batch, reads)] = grown
    assert batch is not None and batch.node_count is not None  # grown on the device, laid out
    levels = len(marks)
    depth = int(batch.max_depth)
    assert levels == depth > tree.DEEP_PERFECT_LEVELS + 2, (levels, depth)  # a split launch a level
    steps = [(o1 - o0 - (w1 - w0), r1 - r0) for (o0, r0, w0), (o1, r1, w1) in zip(marks, marks[1:])]
    perfect, compact = steps[: tree.DEEP_PERFECT_LEVELS - 1], steps[tree.DEEP_PERFECT_LEVELS:]
    every = tree.LAUNCHES_PER_LEVEL + tree.EVERY_OPERATIONS_PER_LEVEL  # drawn features: every node built
    assert perfect == [(every, 0)] * len(perfect), perfect
    per_level = every + tree.DEEP_OPERATIONS_PER_LEVEL
    assert compact and compact == [(per_level, 1)] * len(compact), compact
    # a read a compact level (the one below the deepest reads 0 and stops), and the layout's one
    assert reads == levels - tree.DEEP_PERFECT_LEVELS + 2, (reads, levels)
    print(f"deep device forest (max_depth=None): depth {depth}, {per_level} device operations and 1 host "
          f"read a compact level, {every} and 0 a perfect one; {reads} reads in the batch, "
          f"{len(widen_ops)} widenings of the node table ({sum(widen_ops)} operations)")
