"""The compiled boosting tree (gputrees.kernels.cpu.grow) against the generic grower with the same kernels."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest

from gputrees import GradientBoostingClassifier, GradientBoostingRegressor
from gputrees._backend import namespace_of
from gputrees._binning import fit_bin_mapper
from gputrees._criteria import Newton
from gputrees._grower import grow
from gputrees._records import NEWTON_GH, GrowerInputs, GrowerParams

numba = pytest.importorskip("numba")
from gputrees.kernels import cpu, get_kernels  # noqa: E402
from gputrees.kernels.interface import declines  # noqa: E402

NP = namespace_of(np.empty(0))
BATCH_FIELDS = ("node_count", "left", "right", "feature", "bin", "missing_left", "is_categorical", "cat_left",
                "threshold", "stats", "depth", "max_depth", "row_leaf", "lower", "upper")


def _inputs(seed, n=3000, p=5, *, missing=0.0, max_bins=255, regression=False, few_values=True, count_free=True,
            threads=2, categorical=False, **extra):
    """GrowerInputs of one boosting round, built the way the boosting fit builds them (``categorical``: features
    1 and 3 categories of 4 and 15 levels, whose effect on the target is not ordered by their values)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    if few_values and p > 1:
        X[:, 1] = rng.integers(0, 4, n)  # four value bins of 256: the others are never written
    is_cat = np.zeros(p, dtype=bool)
    effect = np.zeros(n)
    if categorical:
        is_cat[1:4:2] = True
        X[:, 3 % p] = rng.integers(0, 15, n)
        effect = np.sin(3.0 * X[:, 1]) + np.cos(2.0 * X[:, 3 % p])
    if missing:
        X[rng.random((n, p)) < missing] = np.nan
    mapper = fit_bin_mapper(NP, X, is_cat, max_bins)
    codes = mapper.transform(NP, X)
    signal = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, -1]) + np.nan_to_num(effect)
    signal = signal + rng.standard_normal(n) * 0.5
    if regression:
        g, h = -signal, np.ones(n)  # squared error at raw 0
    else:
        q = rng.uniform(0.05, 0.95, n)
        g, h = q - (signal > 0), q * (1 - q)
    table = np.stack([np.ones(n), g, h], axis=1)[None]
    kernels = get_kernels(NP, "numba", n_jobs=threads)
    fields = dict(codes=codes, channels=table, multiplicity=None, bin_mapper=mapper, criterion=Newton(1.0),
                  kernels=kernels, rng=np.random.default_rng(0), record_leaves=True,
                  codes_by_feature=kernels.feature_major(NP, codes),
                  count_free_histograms=count_free and not missing)
    fields.update(extra)
    return GrowerInputs(**fields)


def _params(**kw):
    base = dict(max_depth=6, min_samples_split=2, min_samples_leaf=1, min_weight_leaf=1.0, sorted_small_nodes=False,
                local_thresholds=False)
    base.update(kw)
    return GrowerParams(**base)


def _generic(inputs):
    fast = dataclasses.replace(inputs.kernels.fast, grow_tree=declines)
    return dataclasses.replace(inputs, kernels=dataclasses.replace(inputs.kernels, fast=fast))


def _assert_same_batch(a, b):
    for name in BATCH_FIELDS:
        u, v = getattr(a, name), getattr(b, name)
        if u is None or v is None:
            assert u is None and v is None, name
            continue
        u, v = np.asarray(u), np.asarray(v)
        assert u.shape == v.shape and u.dtype == v.dtype, name
        np.testing.assert_array_equal(u, v, err_msg=name)  # bit for bit (NaN == NaN)


CASES = {
    "two_channels": ({}, {}),
    "missing_values": ({"missing": 0.1}, {}),
    "min_samples_leaf": ({}, {"min_samples_leaf": 7, "min_samples_split": 14}),
    "regression": ({"regression": True}, {"min_weight_leaf": 3.0}),
    "min_split_gain": ({}, {"min_impurity_decrease": 2.0}),
    "uint16_codes": ({"max_bins": 600, "n": 5000}, {}),
    "few_bins": ({"max_bins": 4, "missing": 0.05}, {}),
    "depth_one": ({}, {"max_depth": 1}),
    "deep": ({"n": 40_000, "p": 3}, {"max_depth": 11, "min_weight_leaf": 0.01}),
    # nodes summed by blocks of rows (cpu.histograms._block_rows): SMALL_ROW_BLOCK rows (3 features), ROW_BLOCK at
    # the root of 30 features (ten small blocks' partial histograms would take 1.2 MB), small below
    "row_blocks": ({"n": 80_000, "p": 3}, {"max_depth": 3}),
    "wide_row_blocks": ({"n": 80_000, "p": 30}, {"max_depth": 3}),
    "many_rows": ({"n": 136_000, "p": 3, "missing": 0.02}, {"max_depth": 5}),
    "many_rows_uint16_codes": ({"n": 134_000, "p": 2, "max_bins": 600, "missing": 0.01}, {"max_depth": 4}),
    "one_thread": ({"threads": 1, "missing": 0.02}, {}),
    "one_feature": ({"p": 1}, {}),
    "all_missing_feature": ({"missing": 0.02}, {}),
    "unsplittable_root": ({"n": 40}, {"min_weight_leaf": 1000.0}),
    "categorical": ({"categorical": True}, {}),
    "categorical_missing": ({"categorical": True, "missing": 0.1}, {"min_samples_leaf": 5}),
    "categorical_deep": ({"categorical": True, "n": 40_000, "p": 4, "missing": 0.02}, {"max_depth": 9}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_compiled_tree_equals_the_generic_grower(case):
    """The same tree, node statistics and rows' leaves bit for bit; every partition block and level size met
    (40k rows: several partition blocks per node)."""
    data, params = CASES[case]
    inputs = _inputs(3, **data)
    if case == "all_missing_feature":
        codes = np.array(inputs.codes)
        codes[:, 2] = inputs.bin_mapper.missing_bin
        inputs = dataclasses.replace(inputs, codes=codes, codes_by_feature=np.ascontiguousarray(codes.T))
    p = _params(**params)
    assert cpu.grow.covered(NP, inputs, p)
    got = grow(NP, inputs, p)
    want = grow(NP, _generic(inputs), p)
    _assert_same_batch(got, want)
    if case != "unsplittable_root":
        assert int(got.node_count[0]) > 2
    if case.startswith("categorical"):
        assert np.asarray(got.is_categorical).any()


@pytest.mark.parametrize("case", ["two_channels", "missing_values", "regression", "many_rows", "unsplittable_root"])
def test_given_channel_sums_are_the_root_statistics_of_both_growers(case):
    """``channel_sums`` (boosting's compiled round end makes them) are the root's statistics as given: the
    compiled tree and the generic grower take them alike, bit for bit; the tree's splits are the row-order
    sums' tree's when the sums differ from them by rounding only."""
    data, params = CASES[case]
    inputs = _inputs(3, **data)
    p = _params(**params)
    table = inputs.channels[0]
    # the column sums in another order than the rows' (pairwise), then nudged by an ulp: the root takes them
    sums = np.nextafter(table.sum(axis=0), np.inf)
    given = dataclasses.replace(inputs, channel_sums=sums)
    assert cpu.grow.covered(NP, given, p)
    got = grow(NP, given, p)
    _assert_same_batch(got, grow(NP, _generic(given), p))
    assert np.array_equal(np.asarray(got.stats)[0, 0], sums)
    plain = grow(NP, inputs, p)
    for name in ("node_count", "left", "feature", "bin", "missing_left", "row_leaf"):
        np.testing.assert_array_equal(getattr(got, name), getattr(plain, name), err_msg=name)
    np.testing.assert_allclose(got.stats, plain.stats, rtol=1e-9, atol=1e-9)


def test_channel_sums_of_the_wrong_shape_are_refused():
    inputs = _inputs(3)
    bad = dataclasses.replace(inputs, channel_sums=np.zeros(2))
    with pytest.raises(ValueError, match="channel_sums"):
        grow(NP, bad, _params())
    with pytest.raises(ValueError, match="channel_sums"):
        grow(NP, _generic(bad), _params())


def _grouped_rows(rng, n, k, clustered):
    """``order`` (n,) of k nodes' runs, each node's rows increasing (as the partitions keep them), and the runs."""
    if clustered:  # each node a block of consecutive rows (data sorted by the split feature)
        node_of = np.sort(rng.integers(0, k, n))
    else:
        node_of = rng.integers(0, k, n)
    order = np.argsort(node_of, kind="stable").astype(np.int64)
    counts = np.bincount(node_of, minlength=k)
    seg_b = np.cumsum(counts).astype(np.int64)
    return order, seg_b - counts, seg_b


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
@pytest.mark.parametrize("n, clustered", [(1, False), (13, False), (5_000, False), (40_003, True)])
def test_leaf_passes_by_ranges_of_rows_equal_a_plain_pass(n, clustered, threads):
    """The leaf pass and the leaf marking (threads by ranges of rows) write every row's leaf and count the left
    rows as a pass over each node's rows does; every range starts on an 8-row boundary (a cache line)."""
    rng = np.random.default_rng(n)
    k, F = 7, 3
    order, seg_a, seg_b = _grouped_rows(rng, n, k, clustered)
    sel = np.arange(k, dtype=np.int64)
    codes_t = rng.integers(0, 6, (F, n)).astype(np.uint8)
    codes_t[rng.random((F, n)) < 0.1] = 9  # the missing bin
    feature = rng.integers(0, F, k).astype(np.int64)
    bin_ = rng.integers(0, 6, k).astype(np.int64)
    missing_left = rng.random(k) < 0.5
    is_cat = rng.random(k) < 0.5  # categorical splits send the codes of their row of cat_left
    cat_left = rng.random((k, 10)) < 0.5
    want_leaf = np.full(n, -1, dtype=np.int64)
    want_left = np.zeros(k, dtype=np.int64)
    for i in range(k):
        for r in order[seg_a[i]:seg_b[i]]:
            code = codes_t[feature[i], r]
            goes_left = missing_left[i] if code == 9 else cat_left[i, code] if is_cat[i] else code <= bin_[i]
            want_leaf[r] = 100 + 2 * i + (0 if goes_left else 1)
            want_left[i] += goes_left
    kernels = (cpu.grow.leaf_pass, cpu.grow.leaf_pass_serial)
    for kernel in kernels:
        got = np.full(n, -1, dtype=np.int64)
        n_left = kernel(codes_t, order, seg_a, seg_b, sel, feature, bin_, missing_left, 9, is_cat, cat_left, got, 100,
                        threads)
        np.testing.assert_array_equal(got, want_leaf)
        np.testing.assert_array_equal(n_left, want_left)
    marked = np.full(n, -1, dtype=np.int64)
    leaves = sel[::2]
    cpu.grow.mark_leaves(order, seg_a, seg_b, leaves, marked, threads)
    want_marked = np.full(n, -1, dtype=np.int64)
    for node in leaves:
        want_marked[order[seg_a[node]:seg_b[node]]] = node
    np.testing.assert_array_equal(marked, want_marked)
    n_ranges = cpu.grow._n_ranges(threads)
    bounds = cpu.grow._row_range_bounds(order, seg_a, seg_b, sel, n_ranges)
    for r in range(1, n_ranges):
        start = r * n // n_ranges // 8 * 8
        for i in range(k):
            rows = order[bounds[r - 1, i]:bounds[r, i]]
            assert np.all(rows < start) and (rows.size == 0 or rows.min() >= (r - 1) * n // n_ranges // 8 * 8)


_NEW_WORK = cpu.grow._Work.new


def _poisoned(shape):
    """Work buffers full of values no tree could use: NaN histograms, out-of-range rows, True sides."""
    work = _NEW_WORK(shape)
    for a in work.arrays():
        if a.dtype == np.bool_:
            a.fill(True)
        elif a.dtype.kind in "iu":
            a.fill(-7 if a.dtype.kind == "i" else np.iinfo(a.dtype).max // 2 + 3)
        else:
            a.fill(np.nan)
    return work


@pytest.mark.parametrize("case", ["missing_values", "many_rows", "deep", "unsplittable_root"])
def test_compiled_tree_writes_its_work_buffers_before_reading_them(case, monkeypatch):
    """Buffers handed over full of garbage (as a fit's earlier trees leave them) give the same tree."""
    data, params = CASES[case]
    inputs = _inputs(3, **data)
    p = _params(**params)
    want = grow(NP, _generic(inputs), p)
    monkeypatch.setattr(cpu.grow._Work, "new", staticmethod(_poisoned))
    _assert_same_batch(grow(NP, inputs, p), want)


def _counted_new(monkeypatch, cls):
    """``cls.new`` replaced by a wrapper that records each call's arguments in the returned list."""
    made, new = [], cls.new

    def counting(*args):
        made.append(args)
        return new(*args)

    monkeypatch.setattr(cls, "new", staticmethod(counting))
    return made


def test_trees_of_a_workspace_share_their_work_buffers(monkeypatch):
    """Inside a workspace every tree of the same shape gets the same buffers (a new shape new ones), and
    trees grown one after the other on them equal the generic grower's."""
    first, second = _inputs(3, missing=0.02), _inputs(4, missing=0.02)
    p = _params()
    want = [grow(NP, _generic(x), p) for x in (first, second, first)]
    made = _counted_new(monkeypatch, cpu.grow._Work)
    with cpu.buffers.workspace():
        got = [grow(NP, x, p) for x in (first, second, first)]
        assert len(made) == 1
        grow(NP, first, _params(max_depth=4))
        assert len(made) == 2
    for a, b in zip(got, want, strict=True):
        _assert_same_batch(a, b)
    # outside a workspace every tree makes its own
    grow(NP, first, p)
    grow(NP, first, p)
    assert len(made) == 4


def test_a_fits_fixed_inputs_are_checked_and_converted_once_in_its_workspace(monkeypatch):
    """The codes, mapper and parameters' checks and arrays (``_Fixed``) are made once for every round of a
    workspace, anew for other codes or another mapper (an uncovered one then goes to the generic grower), and
    for every tree outside a workspace."""
    inputs = _inputs(3, missing=0.02)
    p = _params()
    made = _counted_new(monkeypatch, cpu.grow._Fixed)
    round_two = dataclasses.replace(inputs, channels=inputs.channels * 0.5)
    want = [grow(NP, _generic(x), p) for x in (inputs, round_two)]
    with cpu.buffers.workspace():
        got = [grow(NP, x, p) for x in (inputs, round_two)]
        assert len(made) == 1
        other = _inputs(4, missing=0.02)
        _assert_same_batch(grow(NP, other, p), grow(NP, _generic(other), p))
        assert len(made) == 2
        mapper = dataclasses.replace(other.bin_mapper, is_categorical=np.array([False, True, False, False, False]))
        categorical = dataclasses.replace(other, bin_mapper=mapper)
        _assert_same_batch(grow(NP, categorical, p), grow(NP, _generic(categorical), p))
        assert len(made) == 3
    for a, b in zip(got, want, strict=True):
        _assert_same_batch(a, b)
    grow(NP, inputs, p)
    grow(NP, inputs, p)
    assert len(made) == 5


@pytest.mark.parametrize("count_free", [True, False])
def test_a_rounds_trees_equal_the_generic_growers_batch(count_free):
    """A multi-class round's K trees (their own gradients, the same rows), grown one after the other by the
    compiled grower, make the generic grower's batch of K trees bit for bit, padding included."""
    inputs = _inputs(5, n=2000, missing=0.05, count_free=count_free)
    rng = np.random.default_rng(1)
    tables = []
    for depth_bias in (0.0, 1.0, -2.0):
        t = inputs.channels[0].copy()
        t[:, 1] = t[:, 1] * rng.uniform(0.2, 2.0) + depth_bias * (t[:, 1] > 0)
        tables.append(t)
    inputs = dataclasses.replace(inputs, channels=np.stack(tables))
    p = _params(max_depth=5, min_samples_leaf=20, min_samples_split=40)
    assert cpu.grow.covered(NP, inputs, p)
    got = grow(NP, inputs, p)
    want = grow(NP, _generic(inputs), p)
    _assert_same_batch(got, want)
    assert len(set(np.asarray(got.node_count).tolist())) > 1  # trees of different sizes: the padding shows


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="side by side needs two Numba threads")
@pytest.mark.parametrize("threads", [2, 3])
def test_a_rounds_trees_side_by_side_equal_one_after_the_other(threads, monkeypatch):
    """A small multi-class round's K trees grown at once, one per thread, are the trees grown one after the
    other on every thread, bit for bit and in the round's order."""
    inputs = _inputs(6, n=1500, missing=0.05, threads=threads)
    rng = np.random.default_rng(2)
    tables = [inputs.channels[0].copy() for _ in range(5)]
    for t in tables:
        t[:, 1] = t[:, 1] * rng.uniform(0.2, 2.0) + rng.normal() * (t[:, 1] > 0)
    inputs = dataclasses.replace(inputs, channels=np.stack(tables))
    p = _params(max_depth=5, min_samples_leaf=10, min_samples_split=20)
    calls = []
    side_by_side = cpu.grow._side_by_side
    monkeypatch.setattr(cpu.grow, "_side_by_side", lambda *a: calls.append(a) or side_by_side(*a))
    got = grow(NP, inputs, p)
    assert len(calls) == 1
    # its threads end with the fit (left running, their OpenMP pools slowed every later parallel region)
    assert not [t for t in threading.enumerate() if t.name.startswith("gputrees-tree")]
    monkeypatch.setattr(cpu.grow, "SIDE_BY_SIDE_ROWS", 0)
    want = grow(NP, inputs, p)
    assert len(calls) == 1
    _assert_same_batch(got, want)
    assert len(set(np.asarray(got.node_count).tolist())) > 1


@pytest.mark.parametrize(
    "change",
    ["two_trees_root_sums", "multiplicity", "best_first", "max_features", "local_thresholds", "no_depth",
     "no_min_child_weight", "monotonic", "random_splits", "memory", "ones", "gini"],
)
def test_uncovered_inputs_go_to_the_generic_grower(change):
    inputs = _inputs(4, n=800)
    p = _params()
    assert cpu.grow.covered(NP, inputs, p)
    if change == "two_trees_root_sums":  # given root sums are one tree's
        inputs = dataclasses.replace(inputs, channels=np.concatenate([inputs.channels] * 2),
                                     channel_sums=inputs.channels[0].sum(axis=0))
    elif change == "multiplicity":
        inputs = dataclasses.replace(inputs, channels=inputs.channels[0], multiplicity=np.ones((1, 800)))
    elif change == "best_first":
        p = _params(max_depth=None, max_leaf_nodes=8)
    elif change == "max_features":
        p = _params(max_features=3)
    elif change == "local_thresholds":
        p = _params(local_thresholds=True)
    elif change == "no_depth":
        p = _params(max_depth=None)
    elif change == "no_min_child_weight":
        p = _params(min_weight_leaf=0.0)
    elif change == "monotonic":
        inputs = dataclasses.replace(inputs, monotonic_cst=np.array([1, 0, 0, 0, 0]))
    elif change == "random_splits":
        inputs = dataclasses.replace(inputs, random_splits=True)
    elif change == "memory":  # the generic grower would not keep every level's histograms
        p = _params(memory_limit=1 << 20)
    elif change == "ones":  # a count channel other than 1: the children's counts are not their rows'
        table = inputs.channels.copy()
        table[0, 0, 0] = 2.0
        inputs = dataclasses.replace(inputs, channels=table)
    else:
        from gputrees._criteria import Gini

        inputs = dataclasses.replace(inputs, criterion=Gini(n_outputs=1, n_classes=2))
    assert not cpu.grow.covered(NP, inputs, p)
    assert cpu.grow.grow_tree(NP, inputs, p) is None


def test_a_count_channel_known_to_be_one_is_not_checked():
    """``unit_count_channel``: the caller's word that every count is 1 replaces the check of the rows, in the
    compiled tree's cover test and in the generic grower (the same tree either way)."""
    inputs = _inputs(4, n=800)
    p = _params()
    told = dataclasses.replace(inputs, unit_count_channel=True)
    _assert_same_batch(grow(NP, told, p), grow(NP, inputs, p))
    _assert_same_batch(grow(NP, _generic(told), p), grow(NP, _generic(inputs), p))
    table = inputs.channels.copy()
    table[0, 0, 0] = 2.0  # a count of 2, hidden by the caller's word: the check is skipped
    assert not cpu.grow.covered(NP, dataclasses.replace(inputs, channels=table), p)
    assert cpu.grow.covered(NP, dataclasses.replace(told, channels=table), p)


def test_used_bins_histograms_equal_the_full_ones():
    """``_run_histograms`` with ``used`` writes each feature's first used bins and the missing bin as the
    full kernel does, and leaves the others as they were."""
    rng = np.random.default_rng(5)
    n, p, nb = 500, 3, 16
    used = np.array([3, 15, 1], dtype=np.int64)
    codes = np.stack([rng.integers(0, u, n) for u in used], axis=1).astype(np.uint8)
    codes[rng.random((n, p)) < 0.1] = nb - 1
    chan = rng.standard_normal((n, 3))
    row = np.sort(rng.choice(n, 300, replace=False)).astype(np.int64)
    start, end = np.array([0, 120, -1]), np.array([120, 300, 0])
    empty = np.empty(0)
    # the full histograms: every bin used (the signature the estimators compile, not one for the test)
    full = cpu.histograms._run_histograms(codes, row, row, empty, empty, 0, chan, start, end, nb, 2, p, np.empty((3, p, nb, 2)),
                                  1, np.full(p, nb - 1, dtype=np.int64))
    out = np.full((3, p, nb, 2), np.nan)
    got = cpu.histograms._run_histograms(codes, row, row, empty, empty, 0, chan, start, end, nb, 2, p, out, 1, used)
    for f in range(p):
        written = list(range(used[f])) + [nb - 1]
        np.testing.assert_array_equal(got[:, f, written], full[:, f, written])
        assert np.all(np.isnan(np.delete(got[:, f], written, axis=1)))


def test_scratch_histograms_equal_row_order_sums():
    """Pieces summed in a worker's scratch histogram (features ``_scratch_bins`` bins apart, copied out) and
    pieces summed in place give, bit for bit, each slot's sums in row order over its used bins and the missing
    bin; a scratch reused by a worker's next piece starts from zero."""
    rng = np.random.default_rng(6)
    n, p, nb = 4000, 4, 16
    used = np.array([3, 15, 1, 8], dtype=np.int64)
    codes = np.stack([rng.integers(0, u, n) for u in used], axis=1).astype(np.uint8)
    codes[rng.random((n, p)) < 0.1] = nb - 1
    chan = rng.standard_normal((n, 3))
    row = np.sort(rng.choice(n, 3200, replace=False)).astype(np.int64)
    # two large slots (scratch), a small one (in place) and an empty one, two workers
    start, end = np.array([0, 1500, 3000, -1, 3180]), np.array([1500, 3000, 3180, 0, 3200])
    rows = end - start
    assert [bool(cpu.histograms._worth_scratch(int(r), 0, p, nb, used)) for r in rows] == [True, True, True, False, False]
    assert cpu.histograms._scratch_bins(nb) == nb + 1
    out = np.full((5, p, nb, 2), np.nan)
    empty = np.empty(0)
    got = cpu.histograms._run_histograms(codes, row, row, empty, empty, 0, chan, start, end, nb, 2, p, out, 1, used)
    for s in range(5):
        want = np.zeros((p, nb, 2))
        if start[s] >= 0:
            r = row[start[s]:end[s]]
            for f in range(p):
                np.add.at(want[f], codes[r, f], chan[r, 1:])
        for f in range(p):
            written = list(range(used[f])) + [nb - 1]
            np.testing.assert_array_equal(got[s, f, written], want[f, written])
            assert np.all(np.isnan(np.delete(got[s, f], written, axis=0)))


def test_serial_twins_equal_their_parallel_kernels():
    """Each kernel the compiled tree runs without threads on small work (``cpu.jit.serial_twin``) gives what its
    parallel kernel gives on two threads, bit for bit: nodes of many rows, of one row and of none; the twins
    are cached under names of their own."""
    rng = np.random.default_rng(8)
    n, p, nb = 40_000, 4, 16
    missing_bin = nb - 1
    codes = rng.integers(0, nb, (n, p)).astype(np.uint8)
    codes_t = np.ascontiguousarray(codes.T)
    chan = rng.standard_normal((n, 3))
    chan[:, 2] = rng.random(n) + 0.1  # hessians
    order = rng.permutation(n).astype(np.int64)
    # nodes: 20,000 rows (several partition blocks), 19,999, one row, none
    seg_a = np.array([0, 20_000, 39_999, 40_000], dtype=np.int64)
    seg_b = np.array([20_000, 39_999, 40_000, 40_000], dtype=np.int64)
    sel = np.arange(4, dtype=np.int64)
    feature = np.array([0, 3, 1, 2], dtype=np.int64)
    bin_ = np.array([5, 0, 9, 3], dtype=np.int64)
    missing_left = np.array([True, False, True, False])
    used = np.array([nb - 1, 3, 7, nb - 1], dtype=np.int64)
    empty = np.empty(0)
    hist_start = np.where(seg_b > seg_a, seg_a, -1)

    def both(name, *args):
        module, name = name.split(".")
        par = getattr(getattr(cpu, module), name)
        ser = getattr(getattr(cpu, module), name + "_serial")
        assert ser.py_func.__qualname__ == par.py_func.__qualname__ + "_serial"
        outs = []
        for kernel, threads in ((par, 2), (ser, 1)):
            copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            with cpu.jit.Threads(threads):
                ret = kernel(*copies)
            outs.append((ret, [c for c in copies if isinstance(c, np.ndarray)]))
        (r1, a1), (r2, a2) = outs
        for u, v in zip(r1 if isinstance(r1, tuple) else (r1,), r2 if isinstance(r2, tuple) else (r2,)):
            np.testing.assert_array_equal(np.asarray(u), np.asarray(v), err_msg=name)
        for u, v in zip(a1, a2):  # outputs written in place
            np.testing.assert_array_equal(u, v, err_msg=name)

    both("grow._start_rows", np.full(n, -1, dtype=np.int64))
    no_cat = (np.zeros(sel.shape[0], dtype=np.bool_), np.zeros((sel.shape[0], 0), dtype=np.bool_))
    both("grow.partition_rows", codes_t, order, np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=np.bool_), seg_a, seg_b,
         sel, feature, bin_, missing_left, missing_bin, *no_cat)
    # the leaf passes take each node's rows in row order (as the partitions keep them), by ranges of rows
    in_order = np.concatenate([np.sort(order[a:b]) for a, b in zip(seg_a, seg_b)])
    both("grow.leaf_pass", codes_t, in_order, seg_a, seg_b, sel, feature, bin_, missing_left, missing_bin, *no_cat,
         np.full(n, -1, dtype=np.int64), 10, 2)
    both("grow.mark_leaves", in_order, seg_a, seg_b, sel, np.full(n, -1, dtype=np.int64), 2)
    both("pairs.run_sums", order, empty, empty, 0, chan, hist_start, seg_b)
    both("histograms._run_histograms", codes, order, order, empty, empty, 0, chan, hist_start, seg_b, nb, 2, p,
         np.full((4, p, nb, 2), np.nan), 1, used)
    small = cpu.histograms._run_histograms(codes, order, order, empty, empty, 0, chan, hist_start[:2], seg_b[:2], nb, 2, p,
                                   np.zeros((2, p, nb, 2)), 1, np.full(p, nb - 1, dtype=np.int64))
    parent = small[:1] + small[1:]
    both("grow._siblings", parent, np.zeros(1, dtype=np.int64), small[:1], np.array([False]),
         np.array([0, 1], dtype=np.int64), np.full((2, p, nb, 2), np.nan), used)
    # the split scan: eight blocks on two threads against one block without threads
    hist = np.concatenate([small, parent])
    stats = hist[:, 0].sum(axis=1)
    d1 = np.zeros((1, 1))
    mapper = cpu.scan.mapper_arrays(None)
    args = (hist, stats, (NEWTON_GH, 1, 1.0, 1.0, 1.0), np.ones((1, 1), dtype=np.bool_),
            False, d1, False, np.zeros((1, 1), dtype=np.int64), False, d1, d1, False, *mapper, False, False, 1e-9)
    no_cat_cols = (np.zeros(p, dtype=np.bool_), 0)
    with cpu.jit.Threads(2):
        want = cpu.scan.scan_nodes_kernel(*args, 8, *no_cat_cols)
    got = cpu.scan.scan_nodes_kernel_serial(*args, 1, *no_cat_cols)
    for u, v in zip(want, got):
        np.testing.assert_array_equal(u, v)
    assert want[0].all()  # every node found a split


@pytest.mark.parametrize("case", ["binary", "regression", "missing", "multiclass", "categorical"])
def test_boosting_with_the_compiled_grower_equals_the_generic_one(case, monkeypatch):
    """Whole models: every round's tree and leaf values, and the predictions, with and without the compiled
    grower (the Numba set either way; its rounds one step at a time, without the runner of
    gputrees.kernels.cpu.boost, which tests/test_numba_boost.py compares with these steps)."""
    monkeypatch.setenv("GPUTREES_KERNELS", "numba")
    monkeypatch.setattr(cpu.boost, "boost_rounds", lambda *a, **k: None)
    rng = np.random.default_rng(12)
    n = 2500
    X = rng.standard_normal((n, 6))
    X[:, 2] = rng.integers(0, 5, n)
    y = X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=n) * 0.5
    if case == "missing":
        X[rng.random(X.shape) < 0.1] = np.nan
    cls = GradientBoostingRegressor if case == "regression" else GradientBoostingClassifier
    if case == "multiclass":
        y = np.digitize(y, np.quantile(y, [0.3, 0.7]))
    elif case != "regression":
        y = (y > 0).astype(int)
    kw = dict(n_estimators=12, max_depth=5, min_samples_leaf=1, min_child_weight=0.5, early_stopping=False,
              random_state=0, n_jobs=2)
    if case == "categorical":
        X[rng.random(n) < 0.1, 2] = np.nan
        kw["categorical_features"] = [2]
    calls = []
    grow_tree = cpu.grow.grow_tree

    def counting(*a, **k):
        out = grow_tree(*a, **k)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(cpu.grow, "grow_tree", counting)
    compiled = cls(**kw).fit(X, y)
    assert calls == [True] * 12
    calls.clear()
    monkeypatch.setattr(cpu.grow, "grow_tree", lambda *a, **k: calls.append(False))
    generic = cls(**kw).fit(X, y)
    assert calls == [False] * 12
    for ra, rb in zip(compiled._rounds, generic._rounds, strict=True):
        _assert_same_batch(ra.batch, rb.batch)
        np.testing.assert_array_equal(np.asarray(ra.values), np.asarray(rb.values))
    np.testing.assert_array_equal(compiled.train_score_, generic.train_score_)
    np.testing.assert_array_equal(compiled.predict(X), generic.predict(X))
