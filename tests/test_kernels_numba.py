"""Numba kernels against their references: hand-made inputs, then random ones.

The row-level passes of the grower (node histograms, node sums, routing) and
the prediction walk must equal the reference compositions exactly: integer
outputs always, float sums bit for bit because both sum in row order (the
bincount composition) and the Numba kernels give every output to one thread
(a node of at least two blocks of pairs, see ``cpu.histograms._block_rows``: the
composition of each block, the blocks added in order).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools

import numpy as np
import pytest

from gputrees._backend import namespace_of
from gputrees._records import SplitRecord, TreeBatch
from gputrees.kernels.reference import apply_trees as apply_trees_reference
from gputrees.kernels import ActiveRows, _bincount, reference as _reference

pytest.importorskip("numba")
from gputrees.kernels import cpu  # noqa: E402

NP = namespace_of(np.empty(0))


@pytest.fixture(autouse=True)
def _threads_even_for_small_inputs(monkeypatch):
    """The inputs here are small: split every pass over the threads asked for, as large inputs are."""
    monkeypatch.setattr(cpu.jit, "MIN_WORK_PER_THREAD", 1)


def _active(seed, *, n=300, m=None, n_nodes=5, n_chan_rows=None, mult="none", empty_nodes=()):
    rng = np.random.default_rng(seed)
    m = n if m is None else m
    row = rng.integers(0, n, m).astype(np.int64)
    node = rng.integers(0, n_nodes, m).astype(np.int64)
    for e in empty_nodes:
        node[node == e] = (e + 1) % n_nodes
    n_chan_rows = n if n_chan_rows is None else n_chan_rows
    chan_index = row if n_chan_rows == n else rng.integers(0, n_chan_rows, m).astype(np.int64)
    mu = wmu = None
    if mult in ("mult", "both"):
        mu = rng.integers(1, 4, m).astype(np.float64)
    if mult == "both":
        wmu = rng.integers(0, 5, m).astype(np.float64)
    return ActiveRows(row=row, chan_index=chan_index, node=node, mult=mu, wmult=wmu), n_chan_rows


def _grouped(active):
    """``active``'s pairs sorted by node, stably (the grower's layout: each node's pairs one run)."""
    order = np.argsort(active.node, kind="stable")
    return ActiveRows(*(None if a is None else a[order] for a in
                        (active.row, active.chan_index, active.node, active.mult, active.wmult, active.key)))


def _codes(seed, n, n_features=6, n_bins=10, missing_frac=0.1):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, n_bins - 1, (n, n_features)).astype(np.uint8 if n_bins <= 256 else np.uint16)
    codes[rng.random(codes.shape) < missing_frac] = n_bins - 1
    return codes


def _chan(seed, n_rows, kind):
    rng = np.random.default_rng(seed)
    ones = np.ones((n_rows, 1))
    if kind == "int":
        return np.concatenate([ones, rng.integers(-5, 6, (n_rows, 2)).astype(np.float64)], axis=1)
    return np.concatenate([ones, rng.standard_normal((n_rows, 2))], axis=1)


MULTS = ["none", "mult", "both"]


@pytest.mark.parametrize("mult", MULTS)
@pytest.mark.parametrize("kind", ["int", "float"])
@pytest.mark.parametrize("per_tree", [False, True])
@pytest.mark.parametrize("n_bins", [2, 10, 300])
def test_node_histograms_and_sums_equal_the_composition(mult, kind, per_tree, n_bins):
    n = 400
    active, n_chan = _active(1, n=n, m=900, n_chan_rows=3 * n if per_tree else None, mult=mult)
    codes = _codes(2, n, n_bins=n_bins)
    chan = _chan(3, n_chan, kind)
    # nodes 0..4; build 1, 3 and 4 into slots 2, 0, 1 (node 0 and 2 not built)
    table = np.array([-1, 2, -1, 0, 1], dtype=np.int64)
    want = _reference.node_histograms(NP, codes, active, chan, table, 3, n_bins, build=_bincount.build_histograms)
    for threads in (1, 2):
        got = cpu.histograms.node_histograms(NP, codes, active, chan, table, 3, n_bins, n_threads=threads)
        assert got.shape == (3, codes.shape[1], n_bins, 3) and got.dtype == np.float64
        assert np.array_equal(got, want)
    sums = cpu.pairs.node_sums(NP, active, chan, table, 3)
    assert np.array_equal(sums, _reference.node_sums(NP, active, chan, table, 3, build=_bincount.build_histograms))
    # each histogram's feature 0 sums to its node's sums (integer case exactly)
    if kind == "int":
        assert np.array_equal(want.sum(axis=2)[:, 0, :], sums)


def test_node_histograms_hand_made():
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
    h = cpu.histograms.node_histograms(NP, codes, active, chan, table, 2, 3, n_threads=2)
    want = np.zeros((2, 2, 3, 2))
    want[0, 0, 0] = [1, 10]  # row 0 (x1)
    want[0, 0, 1] = [2, 40]  # row 1 (x2)
    want[0, 1, 1] = [3, 50]
    want[1, 0, 1] = [3, 60]  # row 1 (x3) in node 9
    want[1, 1, 1] = [3, 60]
    assert np.array_equal(h, want)
    assert np.array_equal(cpu.pairs.node_sums(NP, active, chan, table, 2), [[3, 50], [3, 60]])


def test_no_active_rows():
    active = ActiveRows(*(np.empty(0, dtype=np.int64),) * 3)
    codes = _codes(0, 5)
    chan = _chan(0, 5, "int")
    table = np.array([0, 1], dtype=np.int64)
    assert np.array_equal(cpu.histograms.node_histograms(NP, codes, active, chan, table, 2, 10), np.zeros((2, 6, 10, 3)))
    assert np.array_equal(cpu.pairs.node_sums(NP, active, chan, table, 2), np.zeros((2, 3)))


def _run_histograms(codes, row, chan_index, mult, wmult, mode, chan, start, end, n_bins, n_workers, row_bytes,
                    kernel=None):
    """``cpu.histograms._run_histograms`` (or ``kernel``: its Python body) with every optional argument given, as
    the estimators call it (an output, every bin ``used``): the kernel's one compiled signature rather than one of
    its own for the tests."""
    out = np.empty((start.shape[0], codes.shape[1], n_bins, chan.shape[1]))
    every_bin = np.full(codes.shape[1], n_bins - 1, dtype=np.int64)
    return (kernel or cpu.histograms._run_histograms)(codes, row, chan_index, mult, wmult, mode, chan, start, end,
                                                      n_bins, n_workers, row_bytes, out, 0, every_bin)


def _split(seed, k, n_features, n_bins, categorical):
    rng = np.random.default_rng(seed)
    is_cat = rng.random(k) < 0.5 if categorical else np.zeros(k, dtype=bool)
    cat_left = rng.random((k, n_bins)) < 0.5 if categorical else np.zeros((k, 0), dtype=bool)
    if categorical:
        cat_left &= is_cat[:, None]
    z = np.zeros((k, 3))
    return SplitRecord(
        found=np.ones(k, dtype=bool),
        proxy=np.zeros(k),
        feature=rng.integers(0, n_features, k).astype(np.int64),
        bin=np.where(is_cat, -1, rng.integers(0, n_bins - 1, k)).astype(np.int64),
        missing_left=rng.random(k) < 0.5,
        is_categorical=is_cat,
        cat_left=cat_left,
        left=z,
        right=z,
        threshold=np.zeros(k),
    )


@pytest.mark.parametrize("categorical", [False, True])
@pytest.mark.parametrize("n_bins", [2, 12, 300])
def test_route_rows_equals_reference(categorical, n_bins):
    n = 500
    active, _ = _active(4, n=n, m=1200, n_nodes=8, mult="both")
    active = dataclasses.replace(active, key=np.arange(1200, dtype=np.int64))
    codes = _codes(5, n, n_bins=n_bins)
    split = _split(6, 3, codes.shape[1], n_bins, categorical)
    table = np.array([-1, 0, -1, -1, 2, 1, -1, -1], dtype=np.int64)
    want = _reference.route_rows(NP, codes, active, table, split, 8, n_bins - 1)
    assert want.row is active.row  # the reference keeps the order
    for threads in (1, 2):
        got = cpu.routing.route_rows(NP, codes, active, table, split, 8, n_bins - 1, n_threads=threads)
        assert got.node.dtype == np.int64
        # grouped by node, each node's pairs in their former order
        assert (np.diff(got.node) >= 0).all()
        order = np.lexsort((got.key, got.node))
        assert np.array_equal(order, np.arange(1200))
        back = np.argsort(got.key)
        for name in ("row", "chan_index", "node", "mult", "wmult"):
            assert np.array_equal(getattr(got, name)[back], getattr(want, name)), name
    moved = table[active.node] >= 0
    assert np.array_equal(want.node[~moved], active.node[~moved])
    assert ((want.node[moved] >= 8) & (want.node[moved] < 14)).all()


@pytest.mark.parametrize("mult", MULTS)
@pytest.mark.parametrize("n_channels", [1, 2, 3, 4, 5])
def test_grouped_and_scattered_rows_give_the_same_histograms(mult, n_channels):
    """The run-based histogram (rows grouped by node) equals the scan over all rows and the reference.

    Three and four channels take the vector additions (a masked and a full
    four-lane vector), the others one scalar addition per channel: all bit
    for bit.
    """
    n = 400
    active, _ = _active(11, n=n, m=900, n_nodes=6, mult=mult)
    grouped = _grouped(active)
    codes = _codes(12, n, n_bins=20)
    chan = np.random.default_rng(13).standard_normal((n, n_channels))
    table = np.array([3, -1, 0, 2, -1, 1], dtype=np.int64)
    scattered = cpu.histograms.node_histograms(NP, codes, active, chan, table, 4, 20, n_threads=2)
    want = _reference.node_histograms(NP, codes, active, chan, table, 4, 20, build=_bincount.build_histograms)
    assert np.array_equal(scattered, want)
    for threads in (1, 2, 3):
        runs = cpu.histograms.node_histograms(NP, codes, grouped, chan, table, 4, 20, n_threads=threads)
        assert runs.shape == (4, codes.shape[1], 20, n_channels)
        assert np.array_equal(runs, scattered)
    start, end, ok = cpu.pairs.slot_runs(grouped.node, table, 4)
    assert ok and not cpu.pairs.slot_runs(active.node, table, 4)[2]


@pytest.mark.parametrize("mult", MULTS)
@pytest.mark.parametrize("n_channels", [1, 3, 4])
@pytest.mark.parametrize("n_bins", [2, 20, 300])
def test_drawn_histograms_equal_the_reference(mult, n_channels, n_bins):
    """Each node's histograms over its own drawn features equal those features' full histograms (bit for
    bit: the same row-order sums), with NaN bins, empty nodes, a one-row node and every thread count; pairs
    not grouped by node give None (the row set then gathers)."""
    n = 400
    active, _ = _active(31, n=n, m=900, n_nodes=7, mult=mult, empty_nodes=(5,))
    active = dataclasses.replace(active, node=np.where(np.arange(900) == 17, 6, np.where(active.node == 6, 0,
                                                                                           active.node)))
    grouped = _grouped(active)
    codes = _codes(32, n, n_features=9, n_bins=n_bins)
    chan = np.random.default_rng(33).standard_normal((n, n_channels))
    table = np.array([3, -1, 0, 2, -1, 1, 4], dtype=np.int64)  # node 5 (slot 1) empty, node 6 (slot 4) one row
    rng = np.random.default_rng(34)
    features = np.stack([np.sort(rng.choice(9, 3, replace=False)) for _ in range(5)]).astype(np.int64)
    want = _reference.drawn_histograms(NP, codes, grouped, chan, table, 5, n_bins, features,
                                       node_histograms=functools.partial(_reference.node_histograms,
                                                                         build=_bincount.build_histograms))
    assert want.shape == (5, 3, n_bins, n_channels)
    assert np.all(want[1] == 0) and np.count_nonzero(want[4][..., 0] if n_channels > 0 else want[4]) <= 3
    for threads in (1, 2, 3):
        got = cpu.histograms.drawn_histograms(NP, codes, grouped, chan, table, 5, n_bins, features, n_threads=threads)
        assert got.shape == want.shape and got.dtype == np.float64
        assert np.array_equal(got, want)
    # pairs not grouped by node: every feature's histograms, then the drawn ones' (the sums in another order)
    ungrouped = cpu.histograms.drawn_histograms(NP, codes, active, chan, table, 5, n_bins, features, n_threads=2)
    np.testing.assert_allclose(ungrouped, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mult", MULTS)
@pytest.mark.parametrize("first, width", [(1, 3), (0, 3), (2, 5), (1, 4)])
def test_histograms_of_a_block_of_columns(mult, first, width):
    """A block of the channel table's columns (boosting's [G, H] of its [count, G, H] table) is read in
    place, and its histograms equal those of the block copied: grouped and scattered rows, every thread
    count, the two-channel vector loop included."""
    n = 300
    active, _ = _active(21, n=n, m=700, n_nodes=6, mult=mult)
    grouped = _grouped(active)
    codes = _codes(22, n, n_bins=12)
    table = np.random.default_rng(23).standard_normal((1, n, width))  # a (trees, rows, C) table, as boosting's
    block = table.reshape(-1, width)[:, first:first + 2]
    got_table, got_first = cpu.pairs.channel_table(block)
    assert np.shares_memory(got_table, table) and got_first == first
    copy = np.ascontiguousarray(block)
    slots = np.array([3, -1, 0, 2, -1, 1], dtype=np.int64)
    want = _reference.node_histograms(NP, codes, active, copy, slots, 4, 12, build=_bincount.build_histograms)
    assert np.array_equal(cpu.histograms.node_histograms(NP, codes, active, block, slots, 4, 12, n_threads=2), want)
    for threads in (1, 2, 3):
        got = cpu.histograms.node_histograms(NP, codes, grouped, block, slots, 4, 12, n_threads=threads)
        assert got.shape == (4, codes.shape[1], 12, 2)
        assert np.array_equal(got, want)
    # every other row of a table is a block of a table twice as wide: read in place too
    rows2 = np.random.default_rng(24).standard_normal((2 * n, width))[::2, first:first + 2]
    t2, f2 = cpu.pairs.channel_table(rows2)
    assert np.shares_memory(t2, rows2) and t2.shape == (n, 2 * width) and f2 == first
    assert np.array_equal(t2[:, f2:f2 + 2], rows2)
    # column-major channels are no such block: copied
    fortran = np.asfortranarray(copy)
    t3, f3 = cpu.pairs.channel_table(fortran)
    assert not np.shares_memory(t3, fortran) and f3 == 0 and np.array_equal(t3, copy)
    assert np.array_equal(cpu.histograms.node_histograms(NP, codes, grouped, fortran, slots, 4, 12, n_threads=2), want)


def test_route_rows_hand_made():
    codes = np.array([[0, 5], [3, 9], [9, 1]], dtype=np.uint8)  # 9 = missing bin
    active = ActiveRows(row=np.arange(3, dtype=np.int64), chan_index=np.arange(3, dtype=np.int64),
                        node=np.array([0, 0, 0], dtype=np.int64))
    split = _split(0, 1, 2, 10, False)
    split = SplitRecord(**{**split.__dict__, "feature": np.array([0]), "bin": np.array([2]),
                           "missing_left": np.array([True])})
    got = cpu.routing.route_rows(NP, codes, active, np.array([0]), split, 1, 9)
    # 0 <= 2 left, 3 > 2 right, missing -> left; regrouped: rows 0, 2 then 1
    assert got.node.tolist() == [1, 1, 2] and got.row.tolist() == [0, 2, 1]


def _random_batch(seed, n_trees, depth, n_features, categorical, n_bins=6):
    """Random full padded trees (heap layout, node i has children 2i+1, 2i+2)."""
    rng = np.random.default_rng(seed)
    width = 2 ** (depth + 1) - 1
    inner = 2**depth - 1
    idx = np.arange(width)
    feature = np.where(idx < inner, rng.integers(0, n_features, (n_trees, width)), -1)
    # some inner nodes become leaves (their subtrees stay unreachable padding)
    feature[:, 1:inner][rng.random((n_trees, inner - 1)) < 0.2] = -1
    left = np.where(idx < inner, 2 * idx + 1, -1) * np.ones((n_trees, 1), dtype=np.int64)
    right = np.where(idx < inner, 2 * idx + 2, -1) * np.ones((n_trees, 1), dtype=np.int64)
    is_cat = (rng.random((n_trees, width)) < 0.4) & (feature >= 0) if categorical else np.zeros((n_trees, width), bool)
    cat_left = rng.random((n_trees, width, n_bins)) < 0.5 if categorical else np.zeros((n_trees, width, 0), bool)
    return TreeBatch(
        node_count=np.full(n_trees, width, dtype=np.int64),
        left=left.astype(np.int64),
        right=right.astype(np.int64),
        feature=feature.astype(np.int64),
        bin=np.full((n_trees, width), -1, dtype=np.int64),
        missing_left=rng.random((n_trees, width)) < 0.5,
        is_categorical=is_cat,
        cat_left=cat_left,
        threshold=rng.standard_normal((n_trees, width)),
        stats=np.zeros((n_trees, width, 1)),
        depth=np.zeros((n_trees, width), dtype=np.int64),
        max_depth=depth,
    )


@pytest.mark.parametrize("categorical", [False, True])
def test_apply_trees_equals_reference(categorical):
    n_features, n_bins = 4, 6
    batch = _random_batch(7, 9, 5, n_features, categorical, n_bins)
    rng = np.random.default_rng(8)
    X = rng.standard_normal((700, n_features))
    X[rng.random(X.shape) < 0.1] = np.nan
    if categorical:
        # categorical features hold codes 0..n_bins-1 (n_bins - 1 = missing)
        X = np.where(np.isnan(X), np.nan, rng.integers(0, n_bins, X.shape).astype(np.float64))
    want = apply_trees_reference(NP, batch, X, n_bins - 1)
    for threads in (1, 2):
        got = cpu.predict.padded_apply_trees(NP, batch, X, n_bins - 1, n_threads=threads)
        assert got.dtype == np.int64 and got.shape == (700, 9)
        assert np.array_equal(got, want)
    assert (np.take_along_axis(batch.feature, want.T, axis=1) < 0).all()  # every row ends in a leaf
    # float32 rows are walked as they are: the leaves of their float64 copies
    x32 = X.astype(np.float32)
    assert np.array_equal(cpu.predict.padded_apply_trees(NP, batch, x32, n_bins - 1),
                          apply_trees_reference(NP, batch, x32.astype(np.float64), n_bins - 1))


@pytest.mark.parametrize("passes", ["blocks", "passes"])
@pytest.mark.parametrize("n_trees", [1, 7, 9, 100, 300])
@pytest.mark.parametrize("rest", [(), (1, 1), (1, 3), (2, 1)], ids=["2d", "one", "classes", "outputs"])
def test_tree_value_sums_equal_numpys_sum_bit_for_bit(rest, n_trees, passes, monkeypatch):
    """A forest's sums over its trees: NumPy adds a row's trees one after the other where each gives
    several values and pairwise where each gives one (blocks of 128, halves above): the compiled pass
    matches both, for any number of trees, a block of rows through every tree at a time or (trees too
    large to stay in cache) every tree through a pass of blocks."""
    if passes == "passes":
        monkeypatch.setattr(cpu.predict, "TREES_IN_CACHE_BYTES", 0)
    n_features, n_bins = 4, 6
    batch = _random_batch(11, n_trees, 4, n_features, n_trees % 2 == 1, n_bins)
    rng = np.random.default_rng(12)
    X = rng.standard_normal((700, n_features))
    X[rng.random(X.shape) < 0.1] = np.nan
    if n_trees % 2 == 1:
        X = np.where(np.isnan(X), np.nan, rng.integers(0, n_bins, X.shape).astype(np.float64))
    values = rng.standard_normal((n_trees, int(batch.left.shape[1])) + rest) / 3.0
    want = _reference.tree_value_sums(NP, batch, values, X, n_bins - 1)
    for threads in (1, 2):
        got = cpu.predict.tree_value_sums(NP, batch, values, X, n_bins - 1, n_threads=threads)
        assert got.shape == want.shape == (700,) + rest
        assert np.array_equal(got, want)


@pytest.mark.parametrize("max_len", [1, 3, 50])
def test_segmented_scans_equal_reference(max_len):
    rng = np.random.default_rng(9)
    lengths = rng.integers(1, max_len + 1, 40)
    seg = np.repeat(np.arange(40), lengths).astype(np.int64)
    ints = rng.integers(-9, 10, (seg.shape[0], 3)).astype(np.float64)
    vals = rng.standard_normal(seg.shape[0])
    vals[rng.random(seg.shape[0]) < 0.05] = np.nan
    n = int(lengths.max())
    assert np.array_equal(cpu.segments.segmented_cumsum(NP, ints, seg, n), _reference.segmented_cumsum(NP, ints, seg, n))
    for name in ("segment_max", "segment_min"):
        got = getattr(cpu.segments, name)(NP, vals, seg, n)
        want = getattr(_reference, name)(NP, vals, seg, n)
        assert np.array_equal(got, want, equal_nan=True)


def test_small_passes_run_on_one_thread(monkeypatch):
    import numba

    monkeypatch.setattr(cpu.jit, "MIN_WORK_PER_THREAD", 1000)
    assert cpu.jit.threads_for(8, 999) == 1
    assert cpu.jit.threads_for(2, 2500) == min(2, numba.config.NUMBA_NUM_THREADS)
    assert cpu.jit.threads_for(1, 10**9) == 1


def test_thread_count():
    import numba

    assert cpu.jit.thread_count(1) == 1
    assert cpu.jit.thread_count(None) == numba.config.NUMBA_NUM_THREADS
    assert cpu.jit.thread_count(-1) == numba.config.NUMBA_NUM_THREADS
    assert cpu.jit.thread_count(10**6) == numba.config.NUMBA_NUM_THREADS
    assert cpu.jit.thread_count(-(10**6)) == 1
    with pytest.raises(ValueError, match="n_jobs=0"):
        cpu.jit.thread_count(0)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_route_rows_grouped_input_sparse_and_dense_passes(threads):
    """Rows grouped by node (as the grower keeps them): the prefetching (sparse) and plain passes agree."""
    n, n_bins = 700, 12
    # every row once, grouped by node, increasing within a node (the grower's layout)
    node = np.random.default_rng(21).integers(0, 6, n).astype(np.int64)
    row = np.argsort(node, kind="stable").astype(np.int64)
    grouped = ActiveRows(row=row, chan_index=row, node=node[row], key=row)
    codes = _codes(22, n, n_bins=n_bins)
    split = _split(23, 4, codes.shape[1], n_bins, False)
    table = np.array([0, -1, 1, 2, -1, 3], dtype=np.int64)
    want = _reference.route_rows(NP, codes, grouped, table, split, 6, n_bins - 1)
    got = cpu.routing.route_rows(NP, codes, grouped, table, split, 6, n_bins - 1, n_threads=threads)
    # arrays that were the row array stay one array
    assert got.chan_index is got.row and got.key is got.row and got.mult is None and got.wmult is None
    by_key_got, by_key_want = np.argsort(got.key), np.argsort(grouped.key)
    assert np.array_equal(got.node[by_key_got], want.node[by_key_want])
    assert (np.diff(got.node) >= 0).all()
    e_i, e_f = np.empty(0, dtype=np.int64), np.empty(0)
    args = (codes, row, e_i, grouped.node, e_i, e_f, e_f, table, split.feature, split.bin, split.missing_left,
            split.is_categorical, split.cat_left, 6, n_bins - 1, 14, threads)
    sparse = cpu.routing._route_group(*args, True, cpu.routing._routed_arrays(len(row), e_i, e_i, e_f, e_f))
    dense = cpu.routing._route_group(*args, False, cpu.routing._routed_arrays(len(row), e_i, e_i, e_f, e_f))
    for a, b in zip(sparse, dense):
        assert np.array_equal(a, b)
    assert np.array_equal(sparse[0], got.row) and np.array_equal(sparse[2], got.node)


@pytest.mark.parametrize("mult", MULTS)
def test_histogram_prefetching_pass_equals_plain_pass(mult):
    """The histogram pass over far-apart rows (prefetching) sums exactly like the plain one."""
    n, n_bins = 600, 10
    active, n_chan = _active(31, n=n, m=1500, n_nodes=5, mult=mult, n_chan_rows=2 * n)
    grouped = _grouped(active)
    codes = _codes(32, n, n_bins=n_bins)
    chan = _chan(33, n_chan, "float")
    table = np.array([1, -1, 0, 2, 3], dtype=np.int64)
    start, end, ok = cpu.pairs.slot_runs(grouped.node, table, 4)
    assert ok
    mu, wmu, mode = cpu.pairs.pair_multiplicities(grouped)
    args = (codes, grouped.row, grouped.chan_index, mu, wmu, mode, chan, start, end, n_bins, 2)
    never = _run_histograms(*args, 0)  # a row takes no bytes: never sparse
    always = _run_histograms(*args, 10**9)  # always sparse
    assert np.array_equal(never, always)
    want = _reference.node_histograms(NP, codes, active, chan, table, 4, n_bins, build=_bincount.build_histograms)
    assert np.array_equal(always, want)


@pytest.mark.parametrize("mult", MULTS)
@pytest.mark.parametrize(("n_features", "n_bins", "small"), [(3, 12, True), (20, 255, False)])
def test_large_nodes_are_summed_by_row_blocks(mult, n_features, n_bins, small):
    """A node of at least two blocks of pairs: its histogram is the sum, in block order, of its blocks (an even
    count, of equal size), each summed in pair order (the composition block by block, bit for bit), whatever
    the thread count; smaller nodes in the same call as before (in pair order). Blocks of SMALL_ROW_BLOCK pairs where the call's partial
    histograms stay within SMALL_BLOCKS_BYTES (3 features of 12 bins), else of ROW_BLOCK (20 of 255: ten
    small blocks of 20 x 255 x 3 floats would take 1.2 MB)."""
    rb = cpu.histograms.ROW_BLOCK
    n = 2 * rb + rb // 2 + 7
    active, n_chan = _active(41, n=n, m=n + 900, n_nodes=3, mult=mult)
    u = np.random.default_rng(44).random(n + 900)
    active = dataclasses.replace(active, node=np.where(u < 0.9, 0, np.where(u < 0.95, 1, 2)).astype(np.int64))
    grouped = _grouped(active)
    codes = _codes(42, n, n_features=n_features, n_bins=n_bins)
    chan = _chan(43, n_chan, "float")
    table = np.array([1, 2, 0], dtype=np.int64)
    start, end, ok = cpu.pairs.slot_runs(grouped.node, table, 3)
    block = cpu.histograms._block_rows(start, end, n_features * (n_bins | 1) * chan.shape[1])
    assert block == (cpu.histograms.SMALL_ROW_BLOCK if small else rb)
    assert ok and (end - start).max() >= 2 * block and (end - start).min() < 2 * block
    outs = [cpu.histograms.node_histograms(NP, codes, grouped, chan, table, 3, n_bins, n_threads=t) for t in (1, 2, 3)]
    assert all(np.array_equal(o, outs[0]) for o in outs[1:])

    def part(a, b):
        sub = ActiveRows(*(None if x is None else x[a:b] for x in
                           (grouped.row, grouped.chan_index, grouped.node, grouped.mult, grouped.wmult, None)))
        return _reference.node_histograms(NP, codes, sub, chan, table, 3, n_bins, build=_bincount.build_histograms)

    want = np.zeros_like(outs[0])
    for s in range(3):
        a, b = int(start[s]), int(end[s])
        rows = b - a
        nb = 1
        if rows >= 2 * block:  # an even count of blocks of equal size, at most `block` pairs each
            nb = -(-rows // block)
            nb += nb % 2
        for j in range(nb):
            want[s] += part(a + j * rows // nb, a + (j + 1) * rows // nb)[s]
    assert np.array_equal(outs[0], want)
    # and to rounding the one-pass sums
    one = _reference.node_histograms(NP, codes, grouped, chan, table, 3, n_bins, build=_bincount.build_histograms)
    np.testing.assert_allclose(outs[0], one, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("wave", [1, 3])
def test_row_blocks_summed_in_waves_equal_all_at_once(monkeypatch, wave):
    """Wide histograms sum their row blocks in waves (PARTIAL_BYTES of partials at a time), each wave merged in
    block order: bit for bit the histograms of every block summed at once. (The kernel's Python body, with the
    wave size forced; the passes it calls compiled.)"""
    rb = cpu.histograms.ROW_BLOCK
    n = 5 * rb + 11
    active, n_chan = _active(45, n=n, m=n + 300, n_nodes=2)
    u = np.random.default_rng(46).random(n + 300)
    active = dataclasses.replace(active, node=np.where(u < 0.9, 0, 1).astype(np.int64))
    grouped = _grouped(active)
    codes = _codes(47, n, n_features=6, n_bins=40)
    chan = _chan(48, n_chan, "float")
    start, end, ok = cpu.pairs.slot_runs(grouped.node, np.array([0, 1], dtype=np.int64), 2)
    assert ok and (end - start).max() >= 4 * rb  # several blocks in one slot
    mu, wmu, mode = cpu.pairs.pair_multiplicities(grouped)
    args = (codes, grouped.row, grouped.chan_index, mu, wmu, mode, chan, start, end, 40, 1, 6)
    at_once = _run_histograms(*args)
    blocks_at_once = cpu.histograms._blocks_at_once
    monkeypatch.setattr(cpu.histograms, "_blocks_at_once", lambda n_blocks, width, n_workers: min(n_blocks, wave))
    in_waves = _run_histograms(*args, kernel=cpu.histograms._run_histograms.py_func)
    assert np.array_equal(in_waves, at_once)
    assert blocks_at_once(8, 1 << 10, 2) == 8
    assert blocks_at_once(8, 1 << 20, 2) == 4  # 8 MiB a block: four in 32 MiB


@pytest.mark.parametrize("max_bins", [8, 255, 400])
def test_bin_codes_equal_reference(max_bins):
    """Numerical (exact and quantile), categorical (with unseen and no categories), NaN; uint8 and uint16."""
    from gputrees._binning import fit_bin_mapper

    rng = np.random.default_rng(41)
    n = 3000
    X = np.column_stack([
        rng.standard_normal(n),  # quantile bins
        np.round(rng.standard_normal(n) * 2),  # few distinct values: exact bins
        rng.integers(0, 7, n).astype(np.float64),  # categorical
        np.full(n, np.nan),  # categorical, no category at fit
        rng.standard_normal(n) * 1e3,
    ])
    X[rng.random(X.shape) < 0.07] = np.nan
    is_cat = np.array([False, False, True, True, False])
    mapper = fit_bin_mapper(NP, X, is_cat, max_bins)
    Xt = X + np.where(rng.random(X.shape) < 0.2, 0.5, 0.0)  # unseen categories and values between edges
    Xt[:5, 0] = [np.inf, -np.inf, 0.0, mapper.thresholds[0, 0], np.nan]
    for data in (X, Xt):
        want = _reference.bin_codes(NP, data, mapper)
        for threads in (1, 2):
            got = cpu.binning.bin_codes(NP, data, mapper, n_threads=threads)
            assert got.dtype == want.dtype == np.dtype(mapper.code_dtype_name)
            assert np.array_equal(got, want)
    assert (want[:, 3] == mapper.missing_bin).all()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (1, 5), (255, 4), (257, 28), (1000, 3)])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_codes_by_feature_is_the_transpose(shape, dtype, threads):
    """Block edges (TRANSPOSE_ROWS rows), one row, one feature, no rows; a non-contiguous input."""
    codes = np.random.default_rng(shape[0]).integers(0, np.iinfo(dtype).max, shape, endpoint=True).astype(dtype)
    for given in (codes, np.asfortranarray(codes)):
        got = cpu.binning.codes_by_feature(NP, given, n_threads=threads)
        assert got.dtype == dtype and got.flags.c_contiguous
        assert np.array_equal(got, codes.T)


def test_codes_by_feature_view_is_read_as_it_is():
    """``copy=False`` gives ``codes.T`` (no copy), which the kernels' feature_major_codes keep as it is; a copy is
    kept too; None, another shape or a strided view get a C-contiguous copy."""
    codes = np.random.default_rng(7).integers(0, 255, (50, 6)).astype(np.uint8)
    view = cpu.binning.codes_by_feature(NP, codes, copy=False)
    assert view.flags.f_contiguous and np.shares_memory(view, codes) and np.array_equal(view, codes.T)
    assert cpu.binning.feature_major_codes(codes, view) is view
    copy = cpu.binning.codes_by_feature(NP, codes)
    assert cpu.binning.feature_major_codes(codes, copy) is copy
    for given in (None, codes, np.asfortranarray(codes.T)):  # none, the wrong shape, an F-contiguous copy
        got = cpu.binning.feature_major_codes(codes, given)
        assert np.array_equal(got, codes.T)
    strided = np.empty((6, 100), dtype=np.uint8)[:, ::2]
    strided[...] = codes.T
    got = cpu.binning.feature_major_codes(codes, strided)
    assert got.flags.c_contiguous and np.array_equal(got, codes.T)
    assert cpu.binning.feature_major_codes(codes, None).flags.c_contiguous


def test_bin_codes_lookup_grid_edge_cases():
    """The lookup grid's answers equal a binary search's: values at, just below and just above every edge,
    heavy tails (many edges per cell), infinities, a range too wide for finite cells, one edge, float32 input."""
    from gputrees._binning import fit_bin_mapper

    rng = np.random.default_rng(43)
    n = 4000
    X = np.column_stack([
        rng.lognormal(0.0, 6.0, n),  # heavy tail: most edges fall in the first cells
        rng.standard_normal(n),
        np.where(rng.random(n) < 0.5, -1e308, 1e308),  # hi - lo overflows: searched without a grid
        np.where(rng.random(n) < 0.5, 0.0, 1.0),  # one edge
        rng.standard_normal(n) * 1e-300,  # subnormal-scale range
    ])
    mapper = fit_bin_mapper(NP, X, np.zeros(5, dtype=bool), 255)
    probes = [X]
    for f in range(X.shape[1]):
        edges = mapper.thresholds[f, : mapper.n_value_bins[f] - 1]
        around = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf), [np.inf, -np.inf]])
        col = np.resize(around, n)
        probe = X.copy()
        probe[:, f] = col
        probes.append(probe)
    for data in probes:
        want = _reference.bin_codes(NP, data, mapper)
        assert np.array_equal(cpu.binning.bin_codes(NP, data, mapper, n_threads=2), want)
    x32 = X.astype(np.float32)
    assert np.array_equal(cpu.binning.bin_codes(NP, x32, mapper), _reference.bin_codes(NP, x32.astype(np.float64), mapper))


def test_bin_codes_by_counting_edges_equal_the_search():
    """Features of up to BIN_COUNT_EDGES edges (binned by counting the edges below a value) and one past it
    (the lookup grid): values at, just below and just above every edge, infinities, NaN, float32 input."""
    from gputrees._binning import fit_bin_mapper

    limit = cpu.binning.BIN_COUNT_EDGES
    rng = np.random.default_rng(45)
    n = 3000
    # k distinct values give k - 1 edges (exact bins): 0, 1, 2, limit and limit + 1 edges
    X = np.column_stack([rng.integers(0, k, n).astype(np.float64) * 1.5 - 7 for k in (1, 2, 3, limit + 1, limit + 2)])
    mapper = fit_bin_mapper(NP, X, np.zeros(X.shape[1], dtype=bool), 255)
    assert list(mapper.n_value_bins - 1) == [0, 1, 2, limit, limit + 1]
    probes = [X]
    for f in range(X.shape[1]):
        edges = mapper.thresholds[f, : mapper.n_value_bins[f] - 1]
        around = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf),
                                 [np.inf, -np.inf, np.nan, 0.0]])
        probe = X.copy()
        probe[:, f] = np.resize(around, n)
        probes.append(probe)
    for data in probes:
        want = _reference.bin_codes(NP, data, mapper)
        for threads in (1, 2):
            assert np.array_equal(cpu.binning.bin_codes(NP, data, mapper, n_threads=threads), want)
    x32 = probes[-2].astype(np.float32)
    assert np.array_equal(cpu.binning.bin_codes(NP, x32, mapper), _reference.bin_codes(NP, x32.astype(np.float64), mapper))


def test_bin_codes_wrong_grid_cell_is_corrected():
    """A value the grid puts in the wrong cell (rounding at a border) is found by the full search."""
    edges = np.sort(np.random.default_rng(44).standard_normal(200))
    n = edges.shape[0]
    grid = np.zeros(1025, dtype=np.int32)
    grid[-1] = n  # every cell but the last claims "before the first edge"
    origin, scale = float(edges[0]), 1024.0 / float(edges[-1] - edges[0])
    xs = np.concatenate([edges, np.nextafter(edges, np.inf), [-np.inf, np.inf, 0.0]])
    got = [cpu.binning._grid_search(edges, n, grid, origin, scale, float(x)) for x in xs]
    assert got == np.searchsorted(edges, xs, side="left").tolist()


def _covered_cases():
    """Columns and value sets where the answer is each way: (X (n, 9), features, values)."""
    rng = np.random.default_rng(45)
    n = 7 * cpu.binning.BIN_BLOCK_ROWS + 13  # several blocks and a partial one
    few = np.array([-3.5, -0.0, 0.25, 1.0, 7.0])
    wide = np.sort(rng.standard_normal(200) * 1e3)
    X = np.column_stack([
        rng.choice(few, n),  # covered
        rng.choice(few, n),  # one value off by an ulp, in the last block only
        rng.choice(wide, n),  # covered, 200 values (a grid of many cells)
        rng.choice(wide, n),  # a value between two of them
        np.full(n, np.nan),  # no values at all: covered by the empty set
        rng.choice(few, n),  # checked against the empty set: not covered
        rng.choice([-1e308, 1e308], n),  # range too wide for a grid
        rng.choice([0.0, np.inf], n),  # infinity among the values
        np.full(n, 2.0),  # one value
    ])
    X[rng.random(X.shape) < 0.1] = np.nan
    X[n - 3, 1] = np.nextafter(1.0, 2.0)
    X[n // 2, 3] = (wide[10] + wide[11]) / 2
    X[0, 8] = 2.0
    values = [few, few, wide, wide, np.zeros(0), np.zeros(0), np.array([-1e308, 1e308]), np.array([0.0, np.inf]),
              np.array([2.0])]
    return X, list(range(9)), values


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_covered_values_equal_reference(threads):
    """Covered and not (by an ulp, between two values, the empty set), NaN, infinities, no grid; float32 input;
    a subset of the features in another order."""
    X, features, values = _covered_cases()
    want = _reference.covered_values(NP, X, features, values)
    assert want == [True, False, True, False, True, False, True, True, True]
    assert cpu.binning.covered_values(NP, X, features, values, n_threads=threads) == want
    sub = [7, 1, 2]
    assert cpu.binning.covered_values(NP, X, sub, [values[f] for f in sub], n_threads=threads) == [True, False, True]
    with np.errstate(over="ignore"):  # +-1e308 become +-inf in float32
        x32 = X.astype(np.float32)
        v32 = [v.astype(np.float32).astype(np.float64) for v in values]
    assert (cpu.binning.covered_values(NP, x32, features, v32, n_threads=threads)
            == _reference.covered_values(NP, x32.astype(np.float64), features, v32))
    assert cpu.binning.covered_values(NP, X, [], []) == []


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sorted_columns_equal_reference(threads, dtype):
    """The binning's sorted values (a radix sort of the floats' bits): negatives, zeros of both signs,
    subnormals, infinities, NaN dropped, many ties, a constant and an all-NaN column; all rows and a sample."""
    rng = np.random.default_rng(threads)
    n = 3001
    X = rng.standard_normal((n, 6)) * np.exp(rng.uniform(-20, 20, (n, 6)))
    X[:, 1] = np.round(X[:, 1] % 7.0) - 3.0  # ties, negative and positive
    X[:9, 2] = [np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, 1e-45, -1e-45, np.nan]
    X[:, 3] = -2.5  # constant
    X[:, 4] = np.nan  # no values
    X[rng.random((n, 6)) < 0.1] = np.nan
    with np.errstate(over="ignore"):
        X = X.astype(dtype)
    sample = np.sort(rng.choice(n, 1000, replace=False))
    for rows, (f0, f1) in ((None, (0, 6)), (sample, (1, 5)), (None, (2, 3)), (sample, (4, 4))):
        got = cpu.binning.sorted_columns(NP, X, f0, f1, rows, n_threads=threads)
        want = _reference.sorted_columns(NP, X, f0, f1, rows)
        assert len(got) == len(want) == f1 - f0
        for g, w in zip(got, want):
            assert g.dtype == np.float64 and g.shape == w.shape
            np.testing.assert_array_equal(g, w)  # (-0.0 == 0.0: their order may differ)
            assert np.all(g[1:] >= g[:-1])
    assert cpu.binning.sorted_columns(NP, X, 4, 5)[0].shape == (0,)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("categorical", [False, True])
def test_predict_raw_equals_reference(k, categorical):
    """Leaf values summed in one pass equal the walk + gather + round-by-round sums, bit for bit."""
    n_features, n_bins = 4, 6
    batch = _random_batch(51, 4 * k, 5, n_features, categorical, n_bins)
    rng = np.random.default_rng(52)
    n = 2 * cpu.predict.ROWS_PER_BLOCK + 37  # two full blocks and a partial one
    X = rng.standard_normal((n, n_features))
    X[rng.random(X.shape) < 0.1] = np.nan
    if categorical:
        X = np.where(np.isnan(X), np.nan, rng.integers(0, n_bins, X.shape).astype(np.float64))
    values = rng.standard_normal(batch.left.shape) * np.exp(rng.uniform(-30, 30, batch.left.shape))
    base = np.broadcast_to(rng.standard_normal(k)[None, :], (n, k))
    want = _reference.predict_raw(NP, batch, values, X, n_bins - 1, base)
    for threads in (1, 2):
        got = cpu.predict.padded_predict_raw(NP, batch, values, X, n_bins - 1, base, n_threads=threads)
        assert got.shape == (n, k) and got.dtype == np.float64
        assert np.array_equal(got, want)
    with_numba_walk = _reference.predict_raw(NP, batch, values, X, n_bins - 1, base,
                                             walk=cpu.predict.padded_apply_trees)
    assert np.array_equal(with_numba_walk, want)
    x32 = X.astype(np.float32)
    assert np.array_equal(cpu.predict.padded_predict_raw(NP, batch, values, x32, n_bins - 1, base),
                          _reference.predict_raw(NP, batch, values, x32.astype(np.float64), n_bins - 1, base))


@pytest.mark.parametrize("size", [0, 1, 7, 1000])
@pytest.mark.parametrize("dtype", [np.int64, np.float64])
def test_scatter_rows_equals_reference(size, dtype):
    """Every set's scatter equals the reference's gather by the inverse permutation (argsort)."""
    import array_api_strict as xs

    from gputrees.kernels import get_kernels

    rng = np.random.default_rng(size)
    index = rng.permutation(size).astype(np.int64)
    values = rng.integers(-50, 50, size).astype(dtype)
    want = np.empty(size, dtype=dtype)
    want[index] = values
    strict = _reference.scatter_rows(xs, xs.asarray(index), xs.asarray(values), size)
    assert np.array_equal(np.asarray(strict), want)
    for name in ("numba", "bincount"):
        scatter = get_kernels(NP, name).scatter_rows
        got = scatter(NP, index, values, size)
        assert got.dtype == want.dtype and np.array_equal(got, want), name
    with pytest.raises(ValueError, match="permutation"):
        _bincount.scatter_rows(NP, index[:-1] if size else np.zeros(1, np.int64), values[:-1], size)


def _sorted_pairs(seed, n, n_nodes, mult, empty_nodes=(), n_trees=1):
    """Pairs sorted by node id, each node's rows increasing (the grower's layout), with their bounds."""
    rng = np.random.default_rng(seed)
    key = np.arange(n_trees * n, dtype=np.int64)
    node = rng.integers(0, n_nodes, key.shape[0]).astype(np.int64)
    for e in empty_nodes:
        node[node == e] = (e + 1) % n_nodes
    order = np.argsort(node, kind="stable")
    key, node = key[order], node[order]
    mu = rng.integers(1, 4, key.shape[0]).astype(np.float64) if mult in ("mult", "both") else None
    wmu = rng.integers(0, 5, key.shape[0]).astype(np.float64) if mult == "both" else None
    bounds = np.searchsorted(node, np.arange(n_nodes + 1), side="left").astype(np.int64)
    active = ActiveRows(row=key % n, chan_index=key, node=node, mult=mu, wmult=wmu, key=key)
    return active, bounds


@pytest.mark.parametrize("mult", MULTS)
@pytest.mark.parametrize("categorical", [False, True])
@pytest.mark.parametrize("with_bounds", [False, True])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_route_and_sum_equals_reference(mult, categorical, with_bounds, threads):
    """Routing pairs sorted by node id (run by run) and summing the children equals route_rows + node_sums."""
    n, n_bins, n_nodes = 400, 12, 7
    active, bounds = _sorted_pairs(41, n, n_nodes, mult, empty_nodes=(2,), n_trees=2)
    if with_bounds:
        active = dataclasses.replace(active, bounds=bounds)
    codes = _codes(42, n, n_bins=n_bins)
    chan = _chan(43, 2 * n, "float")
    # node 2 is split with no rows; node 5 is not split
    table = np.array([1, 0, 2, 3, -1, -1, 4], dtype=np.int64)
    split = _split(44, 5, codes.shape[1], n_bins, categorical)
    want, want_sums = _reference.route_and_sum(NP, codes, active, chan, table, split, n_nodes, n_bins - 1,
                                               sums=functools.partial(_reference.node_sums,
                                                                      build=_bincount.build_histograms))
    got, sums = cpu.routing.route_and_sum(NP, codes, active, chan, table, split, n_nodes, n_bins - 1, n_threads=threads)
    plain = cpu.routing.route_rows(NP, codes, active, table, split, n_nodes, n_bins - 1, n_threads=threads)
    # the feature-major copy the grower passes gives the same routing
    by_feature = cpu.binning.codes_by_feature(NP, codes)
    assert by_feature.shape == codes.shape[::-1] and by_feature.flags.c_contiguous
    given, given_sums = cpu.routing.route_and_sum(NP, codes, active, chan, table, split, n_nodes, n_bins - 1,
                                             n_threads=threads, codes_by_feature=by_feature)
    assert np.array_equal(given_sums, sums) and np.array_equal(given.bounds, got.bounds)
    for name in ("row", "chan_index", "node", "mult", "wmult", "key"):
        a, b = getattr(got, name), getattr(given, name)
        assert (a is None and b is None) or np.array_equal(a, b), name
    assert (np.diff(got.node) >= 0).all()
    back, want_back = np.argsort(got.key), np.argsort(want.key)
    for name in ("row", "chan_index", "node", "mult", "wmult"):
        a = getattr(got, name)
        assert (a is None) == (getattr(want, name) is None), name
        if a is not None:
            assert np.array_equal(a[back], getattr(want, name)[want_back]), name
            assert np.array_equal(a, getattr(plain, name)), name
    assert np.array_equal(got.bounds, np.searchsorted(got.node, np.arange(got.bounds.shape[0]), side="left"))
    assert np.array_equal(plain.bounds, got.bounds)
    # bit for bit: the children's sums of the routing pass are node_sums over their runs
    table_c, k2 = cpu.routing._children_table(table, split, n_nodes)
    assert np.array_equal(sums, cpu.pairs.node_sums(NP, got, chan, table_c, k2, n_threads=threads))
    assert np.array_equal(sums, cpu.pairs.node_sums(NP, dataclasses.replace(got, bounds=None), chan, table_c, k2))
    assert np.array_equal(sums, want_sums)
    assert not sums[4:6].any()  # node 2, split (slot 2) with no rows


@pytest.mark.parametrize("layout", ["grower", "shuffled", "shared_rows"])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_route_and_sum_in_table_order_equals_gathering(monkeypatch, layout, threads):
    """The children's sums by one pass over the channel table equal those gathered pair by pair, bit for bit.

    ``grower``: each node's channel rows increase (the pass is used);
    ``shuffled``: a node's rows out of order, ``shared_rows``: two pairs on
    one channel row (both fall back to gathering, same sums).
    """
    # every thread asked for used (500 pairs are below a thread's minimum
    # work): the sums then overlap the placing pass, and a fallback after it
    monkeypatch.setattr(cpu.jit, "MIN_WORK_PER_THREAD", 1)
    n, n_bins, n_nodes = 500, 12, 6
    active, bounds = _sorted_pairs(81, n, n_nodes, "none", n_trees=2)
    rng = np.random.default_rng(82)
    ci = active.chan_index.copy()
    if layout == "shuffled":
        a, b = bounds[3], bounds[4]
        ci[a:b] = rng.permutation(ci[a:b])
    elif layout == "shared_rows":
        ci[bounds[4] + 1] = ci[bounds[1]]
    active = dataclasses.replace(active, chan_index=ci, bounds=bounds)
    codes = _codes(83, n, n_bins=n_bins)
    chan = rng.standard_normal((2 * n, 3))
    table = np.array([0, 1, -1, 2, 3, 4], dtype=np.int64)
    split = _split(84, 5, codes.shape[1], n_bins, False)
    got, sums = cpu.routing.route_and_sum(NP, codes, active, chan, table, split, n_nodes, n_bins - 1, n_threads=threads)
    table_c, k2 = cpu.routing._children_table(table, split, n_nodes)
    assert np.array_equal(sums, cpu.pairs.node_sums(NP, got, chan, table_c, k2))
    monkeypatch.setattr(cpu.routing, "IN_ORDER_SUMS_FILL", 0)  # never the table pass
    gathered, gathered_sums = cpu.routing.route_and_sum(NP, codes, active, chan, table, split, n_nodes, n_bins - 1,
                                                   n_threads=threads)
    assert np.array_equal(sums, gathered_sums)
    for name in ("row", "chan_index", "node", "key"):
        assert np.array_equal(getattr(got, name), getattr(gathered, name)), name


def test_sum_in_table_order_counts_rows():
    child_of = np.array([1, -1, 0, 1, -1], dtype=np.int32)
    chan = np.arange(10, dtype=np.float64).reshape(5, 2)
    sums = np.zeros((2, 2))
    assert cpu.routing._sum_in_table_order(child_of, chan, sums) == 3
    assert np.array_equal(sums, [[4.0, 5.0], [6.0 + 0.0, 8.0]])


@pytest.mark.parametrize("m", [0, 1])
def test_route_and_sum_no_rows_and_one_row(m):
    codes = _codes(51, 3, n_bins=6)
    chan = _chan(52, 3, "float")
    active = ActiveRows(row=np.arange(m, dtype=np.int64), chan_index=np.arange(m, dtype=np.int64),
                        node=np.zeros(m, dtype=np.int64))
    split = _split(53, 1, codes.shape[1], 6, False)
    got, sums = cpu.routing.route_and_sum(NP, codes, active, chan, np.array([0]), split, 1, 5, n_threads=2)
    want, want_sums = _reference.route_and_sum(NP, codes, active, chan, np.array([0]), split, 1, 5)
    assert np.array_equal(got.node, want.node) and np.array_equal(got.row, want.row)
    assert np.array_equal(sums, want_sums) and sums.shape == (2, 3)


def test_histograms_and_sums_read_bounds():
    """Given bounds (pairs sorted by node id), histograms and sums equal the ones found by scanning the nodes."""
    n, n_bins = 300, 9
    active, bounds = _sorted_pairs(61, n, 6, "both", empty_nodes=(3,))
    codes = _codes(62, n, n_bins=n_bins)
    chan = _chan(63, n, "float")
    with_b = dataclasses.replace(active, bounds=bounds)
    for table, k in ((np.array([2, -1, 0, 1, -1, 3], dtype=np.int64), 4), (np.array([0, 1, -1, -1, -1, -1], dtype=np.int64), 2),
                     (np.arange(9, dtype=np.int64), 9)):
        for threads in (1, 2):
            assert np.array_equal(cpu.histograms.node_histograms(NP, codes, with_b, chan, table, k, n_bins, n_threads=threads),
                                  cpu.histograms.node_histograms(NP, codes, active, chan, table, k, n_bins))
            assert np.array_equal(cpu.pairs.node_sums(NP, with_b, chan, table, k, n_threads=threads),
                                  cpu.pairs.node_sums(NP, active, chan, table, k))


@pytest.mark.parametrize("n_workers", [1, 2, 3, 7, 40])
def test_histogram_plan_covers_every_slot_feature_once(n_workers):
    """The workers' pieces cover every (slot with rows, feature) once, in order; histograms do not change."""
    start = np.array([0, -1, 10, 11, 400, -1], dtype=np.int64)
    end = np.array([10, 0, 11, 400, 1000, 0], dtype=np.int64)
    n_features = 5
    p_slot, p_f0, p_f1, first = cpu.histograms._histogram_plan(start, end, n_features, n_workers)
    assert first[0] == 0 and first[-1] == p_slot.shape[0] and (np.diff(first) >= 0).all()
    assert p_slot.shape[0] <= 4 + n_workers
    covered = [(s, f) for s, a, b in zip(p_slot, p_f0, p_f1) for f in range(a, b)]
    assert covered == [(s, f) for s in (0, 2, 3, 4) for f in range(n_features)]
    # shares: no worker gets more than its share plus one slot's feature
    work = np.array([(end[s] - start[s]) * (b - a) for s, a, b in zip(p_slot, p_f0, p_f1)])
    per_worker = [work[first[w]:first[w + 1]].sum() for w in range(n_workers)]
    assert max(per_worker) <= work.sum() / n_workers + (end - start).max()
    # the histograms are the same whatever the split
    codes = _codes(71, 1000, n_features=n_features, n_bins=9)
    chan = _chan(72, 1000, "float")
    row = np.arange(1000, dtype=np.int64)
    e = np.empty(0)
    one = _run_histograms(codes, row, row, e, e, 0, chan, start, end, 9, 1, 0)
    got = _run_histograms(codes, row, row, e, e, 0, chan, start, end, 9, n_workers, 0)
    assert np.array_equal(one, got)


@pytest.mark.parametrize("threads", [1, 2])
def test_sibling_histograms_equal_reference(threads):
    """Each wanted child is the built histogram or the parent's minus it, bit for bit as the reference."""
    rng = np.random.default_rng(91)
    parents = rng.standard_normal((5, 3, 7, 3))
    parent_index = np.array([4, 0, 2, 2], dtype=np.int64)
    small = rng.standard_normal((4, 3, 7, 3))
    small_is_right = np.array([True, False, False, True])
    for children in ([0, 1, 2, 3, 4, 5, 6, 7], [1, 2, 7], [], [6]):
        children = np.array(children, dtype=np.int64)
        want = _reference.sibling_histograms(NP, parents, parent_index, small, small_is_right, children)
        got = cpu.histograms.sibling_histograms(NP, parents, parent_index, small, small_is_right, children, n_threads=threads)
        assert got.shape == (children.shape[0], 3, 7, 3) and np.array_equal(got, want)
    # pair 0: small is the right child (1), the left (0) is parent 4 minus it
    got = cpu.histograms.sibling_histograms(NP, parents, parent_index, small, small_is_right, np.array([0, 1]))
    assert np.array_equal(got[0], parents[4] - small[0]) and np.array_equal(got[1], small[0])


def test_histogram_of_consecutive_rows_and_of_rows_whose_ends_only_look_consecutive():
    """The direct-read loop (a run of consecutive rows) and runs whose first and last rows merely differ by their length."""
    n, n_bins = 50, 9
    codes = _codes(95, n, n_bins=n_bins)
    chan = np.random.default_rng(96).standard_normal((n, 3))
    table = np.array([0], dtype=np.int64)
    for row in (np.arange(10, 40), np.array([5, 9, 2, 8]), np.array([3, 3, 4, 6])):
        row = row.astype(np.int64)
        active = ActiveRows(row=row, chan_index=row, node=np.zeros(row.shape[0], dtype=np.int64),
                            bounds=np.array([0, row.shape[0]], dtype=np.int64))
        want = _reference.node_histograms(NP, codes, active, chan, table, 1, n_bins, build=_bincount.build_histograms)
        got = cpu.histograms.node_histograms(NP, codes, active, chan, table, 1, n_bins)
        assert np.array_equal(got, want)
    assert cpu.histograms._consecutive(np.arange(4, 9), 0, 5) and not cpu.histograms._consecutive(np.array([5, 9, 2, 8]), 0, 4)


@pytest.mark.parametrize("threads", [1, 2])
def test_sibling_histograms_from_parent_parts(threads):
    """Parents given as a tuple of arrays (a level's chunks, rows numbered across them) equal the concatenated ones."""
    rng = np.random.default_rng(92)
    parts = (rng.standard_normal((2, 3, 5, 3)), rng.standard_normal((3, 3, 5, 3)), rng.standard_normal((1, 3, 5, 3)))
    whole = np.concatenate(parts)
    parent_index = np.array([5, 0, 3, 2, 4], dtype=np.int64)
    small = rng.standard_normal((5, 3, 5, 3))
    small_is_right = np.array([True, False, True, False, False])
    children = np.array([9, 0, 1, 4, 5, 6, 7, 3], dtype=np.int64)
    want = _reference.sibling_histograms(NP, whole, parent_index, small, small_is_right, children)
    assert np.array_equal(_reference.sibling_histograms(NP, parts, parent_index, small, small_is_right, children), want)
    got = cpu.histograms.sibling_histograms(NP, parts, parent_index, small, small_is_right, children, n_threads=threads)
    assert np.array_equal(got, want)


# ---------------------------------------------------------------------------
# reused output buffers (Kernels.workspace)
# ---------------------------------------------------------------------------


def test_workspace_reuses_a_buffer_only_once_no_view_holds_it():
    ws = cpu.buffers._Workspace()
    a = ws.take(100)
    view = a[:50].reshape(5, 10)[1:]  # a view of a view: its base is the buffer
    del a
    b = ws.take(80)
    assert not np.shares_memory(b, view)  # held through the view: a new buffer
    del view
    c = ws.take(70)  # the first buffer is free again, and at most half again as large
    assert c.shape[0] == 100
    del b, c
    e = ws.take(60)  # the smallest free one that fits (100 would waste more than half)
    assert e.shape[0] == 80
    del e
    d = ws.take(30)  # none fits (80 and 100 are too large): the free ones are let go, one new buffer is kept
    assert d.shape[0] == 30 and len(ws.buffers) == 1
    del d
    f = ws.take(500)
    assert f.shape[0] == 500 and len(ws.buffers) == 1


@pytest.mark.parametrize("threads", [1, 2])
def test_histograms_in_a_workspace_equal_new_arrays_and_are_not_overwritten(threads):
    """Outputs handed out in a workspace equal fresh ones, and a held output survives later calls."""
    n, n_bins = 600, 12
    active, bounds = _sorted_pairs(91, n, 6, "none")
    active = dataclasses.replace(active, bounds=bounds)
    codes = _codes(92, n, n_bins=n_bins)
    chan = _chan(93, n, "float")
    tables = [np.array(t, dtype=np.int64) for t in ([0, 1, 2, 3, 4, 5], [-1, 0, -1, 1, -1, 2], [2, 1, 0, -1, -1, -1])]
    sizes = [6, 3, 3]
    fresh = [cpu.histograms.node_histograms(NP, codes, active, chan, t, k, n_bins, n_threads=threads)
             for t, k in zip(tables, sizes)]
    with cpu.buffers.workspace():
        held = cpu.histograms.node_histograms(NP, codes, active, chan, tables[0], 6, n_bins, n_threads=threads)
        for _ in range(2):  # the second round reuses the buffers the first dropped
            for t, k, want in zip(tables[1:], sizes[1:], fresh[1:]):
                got = cpu.histograms.node_histograms(NP, codes, active, chan, t, k, n_bins, n_threads=threads)
                assert not np.shares_memory(got, held)
                np.testing.assert_array_equal(got, want)
                del got
        small = fresh[1][:2]
        sib = cpu.histograms.sibling_histograms(NP, held, np.array([0, 2]), small, np.array([False, True]),
                                        np.array([0, 1, 2, 3]), n_threads=threads)
        assert not np.shares_memory(sib, held)
        np.testing.assert_array_equal(held, fresh[0])
    np.testing.assert_array_equal(
        sib, _reference.sibling_histograms(NP, fresh[0], np.array([0, 2]), small, np.array([False, True]),
                                           np.array([0, 1, 2, 3])))


def test_forest_grown_with_reused_buffers_equals_one_without(monkeypatch):
    from gputrees import RandomForestClassifier

    rng = np.random.default_rng(94)
    X = rng.standard_normal((3000, 6))
    y = (X[:, 0] + X[:, 1] * X[:, 2] + 0.3 * rng.standard_normal(3000) > 0).astype(int)
    kw = dict(n_estimators=6, max_depth=8, random_state=0, n_jobs=2)
    reused = RandomForestClassifier(**kw).fit(X, y)
    monkeypatch.setattr(cpu.buffers, "workspace", contextlib.nullcontext)
    fresh = RandomForestClassifier(**kw).fit(X, y)
    np.testing.assert_array_equal(reused.predict_proba(X), fresh.predict_proba(X))


def test_routing_inside_a_workspace_reuses_free_pair_buffers():
    """Inside a workspace the routed pair arrays are views of pooled buffers: a buffer whose arrays are still
    held is not handed out again (those arrays keep their values), a dropped one is, and every routing
    equals the routing outside a workspace."""
    n, n_bins = 500, 12
    active, _ = _active(41, n=n, m=1200, n_nodes=6, mult="both")
    grouped = _grouped(active)
    codes = _codes(42, n, n_bins=n_bins)
    split = _split(43, 4, codes.shape[1], n_bins, False)
    table = np.array([0, -1, 1, 2, -1, 3], dtype=np.int64)
    fields = ("row", "chan_index", "node", "key", "mult", "wmult")

    def route():
        return cpu.routing.route_rows(NP, codes, grouped, table, split, 6, n_bins - 1, n_threads=2)

    def same(a, b):
        return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in fields if getattr(a, f) is not None)

    want = route()
    with cpu.buffers.workspace():
        first = route()
        second = route()
        assert same(second, want)
        arrays = [getattr(x, f) for x in (first, second) for f in fields if getattr(x, f) is not None]
        assert not any(np.shares_memory(a, b) for i, a in enumerate(arrays) for b in arrays[:i])

        def address(a):
            return a.__array_interface__["data"][0]

        dropped = {address(getattr(second, f)) for f in fields if getattr(second, f) is not None}
        del second, arrays
        third = route()
        assert {address(getattr(third, f)) for f in fields if getattr(third, f) is not None} == dropped
        assert same(first, want) and same(third, want)


@pytest.mark.parametrize("share", [0.0, 0.3, 1.0])
def test_keep_pairs_equals_boolean_indexing(share):
    """The retirement's compression equals ``a[keep]`` for int64 and float64 arrays, every thread count, with
    no pair, some and every pair kept."""
    rng = np.random.default_rng(51)
    m = 1001
    keep = rng.random(m) < share
    arrays = [rng.integers(0, 10**9, m).astype(np.int64), rng.standard_normal(m), np.arange(m, dtype=np.int64)]
    for threads in (1, 2, 3):
        got = cpu.pairs.keep_pairs(NP, arrays, keep, n_threads=threads)
        assert len(got) == 3
        for a, g in zip(arrays, got):
            assert g.dtype == a.dtype and np.array_equal(g, a[keep])


@pytest.mark.parametrize("multiplicities", ["none", "mult", "mult_and_wmult"])
@pytest.mark.parametrize("share", [None, 0.0, 0.4, 1.0])
def test_pair_weights_equals_the_reference(multiplicities, share):
    """The pairs' channels with multiplicities applied: exactly the reference's products, with no mask, none,
    some and every pair selected, two to five channels, on one thread and on several (50k pairs)."""
    rng = np.random.default_rng(52)
    for m, n_chan_rows, C in ((1, 3, 2), (977, 400, 3), (50_000, 60_000, 5)):
        chan = rng.standard_normal((n_chan_rows, C))
        mult = rng.integers(0, 4, m).astype(np.float64) if multiplicities != "none" else None
        wmult = mult * rng.uniform(0.5, 2.0, m) if multiplicities == "mult_and_wmult" else None
        active = ActiveRows(row=rng.integers(0, 10**6, m), chan_index=rng.integers(0, n_chan_rows, m),
                            node=np.zeros(m, dtype=np.int64), mult=mult, wmult=wmult)
        mask = None if share is None else rng.random(m) < share
        want = _reference.active_weights(NP, active, chan, mask)
        for threads in (1, 2):
            got = cpu.pairs.pair_weights(NP, active, chan, mask, n_threads=threads)
            assert got.shape == want.shape and got.dtype == np.float64
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int64, np.float64])
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_unchecked_load_equals_indexing(dtype, layout):
    """``cpu.memory.at(a, i, j)`` (no negative-index mapping) reads ``a[i, j]`` of any layout and dtype."""
    import numba

    rng = np.random.default_rng(3)
    base = (rng.random((14, 18)) * 200).astype(dtype)
    a = {"C": base, "F": np.asfortranarray(base), "strided": base[1::3, ::2]}[layout]
    rows = rng.integers(0, a.shape[0], 50)
    cols = rng.integers(0, a.shape[1], 50)

    @numba.njit
    def gather(a, rows, cols, out):
        for k in range(rows.shape[0]):
            out[k] = cpu.memory.at(a, rows[k], np.uint8(cols[k]))

    out = np.empty(50, dtype=a.dtype)
    gather(a, rows, cols, out)
    np.testing.assert_array_equal(out, a[rows, cols])


def test_unchecked_loads_of_one_and_three_dimensions_and_stores():
    """``_at1`` / ``_at3`` read and ``_put1`` writes the element plain indexing names."""
    import numba

    rng = np.random.default_rng(4)
    v = rng.random(30)
    cube = rng.random((4, 5, 6))[:, ::2, 1:]  # strided

    @numba.njit
    def run(v, cube, n, i, j, k):
        x = cpu.memory.at1(v, n) + cpu.memory.at3(cube, i, j, k)
        cpu.memory.put1(v, n, np.int64(-7))  # cast to the array's dtype
        return x

    want = v[5] + cube[3, 2, 4]
    v_want = v.copy()
    v_want[5] = -7.0
    assert run(v, cube, 5, 3, 2, 4) == want
    np.testing.assert_array_equal(v, v_want)
    with pytest.raises(ValueError, match="4-D"):
        cpu.memory._unchecked(4)


def test_prefetch_rule():
    """Prefetch far-apart rows, and any non-consecutive rows of codes too large to stay cached; never a run."""
    sparse = cpu.memory.sparse_rows.py_func
    run = np.arange(100, 200, dtype=np.int64)
    every_other = np.arange(0, 200, 2, dtype=np.int64)
    every_tenth = np.arange(0, 1000, 10, dtype=np.int64)
    big = cpu.memory.PREFETCH_SPAN_BYTES // 28 + 1  # rows of 28 one-byte codes past the limit
    assert not sparse(run, 0, 100, 28, big)
    assert not sparse(every_other, 0, 100, 28, 1000)  # 56 bytes a row apart, codes cached
    assert sparse(every_other, 0, 100, 28, big)
    assert sparse(every_tenth, 0, 100, 28, 1000)  # 280 bytes apart
