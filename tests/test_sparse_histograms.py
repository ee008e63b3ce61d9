"""Histograms of mostly-default codes (gputrees.kernels.cpu.sparse_codes) and the compiled tree grown from them."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import gputrees
from gputrees._grower import grow

numba = pytest.importorskip("numba")
from gputrees.kernels import cpu  # noqa: E402
from test_numba_grow import BATCH_FIELDS, CASES, NP, _generic, _inputs, _params  # noqa: E402

codes_mod = cpu.sparse_codes


@pytest.fixture
def always_sparse(monkeypatch):
    """Every codes matrix laid out as entries, however small or dense."""
    monkeypatch.setattr(codes_mod, "SPARSE_MIN_CELLS", 0)
    monkeypatch.setattr(codes_mod, "SPARSE_MAX_SHARE", 1.0)


def _mostly_default(rng, n, F, n_bins, share, dtype=np.uint8):
    """Codes with each feature's own default (not always 0) and ``share`` of the cells on other codes."""
    default = rng.integers(0, n_bins, F)
    codes = np.broadcast_to(default, (n, F)).astype(dtype)
    off = rng.random((n, F)) < share
    codes[off] = rng.integers(0, n_bins, int(off.sum()))
    return np.ascontiguousarray(codes)


def test_layout_lists_each_rows_cells_off_the_defaults(always_sparse):
    rng = np.random.default_rng(0)
    for dtype, n_bins in ((np.uint8, 7), (np.uint16, 300)):
        codes = _mostly_default(rng, 500, 9, n_bins, 0.1, dtype)
        ptr, feat, code, default = codes_mod.sparse_layout(codes, n_bins)
        assert code.dtype == codes.dtype and feat.dtype == np.int32 and default.dtype == np.int64
        back = np.broadcast_to(default, codes.shape).astype(dtype)
        rows = np.repeat(np.arange(codes.shape[0]), np.diff(ptr))
        back[rows, feat] = code
        np.testing.assert_array_equal(back, codes)
        assert np.all(code != default[feat])
        for r in range(codes.shape[0]):  # features ascending within a row
            assert np.all(np.diff(feat[ptr[r]:ptr[r + 1]]) > 0)


def test_layout_from_a_sparse_matrixs_columns_equals_the_scan(always_sparse, monkeypatch):
    """Codes binned from a CSR matrix are laid out from its stored cells (explicit zeros and NaNs among them):
    the layout the scan of every cell gives; a matrix with duplicate cells is scanned."""
    from gputrees import _sparse
    from gputrees._binning import fit_bin_mapper
    from gputrees.kernels import reference

    rng = np.random.default_rng(3)
    X = sp.random(3000, 40, density=0.03, format="csr", random_state=3, data_rvs=lambda k: rng.normal(size=k))
    X.data[::7] = 0.0
    X.data[::11] = np.nan
    mapper = fit_bin_mapper(np, X, np.zeros(X.shape[1], bool), 32)
    codes, columns = _sparse.sparse_codes(X, mapper, reference.stored_codes)
    assert columns is not None
    scanned = codes_mod.sparse_layout(codes, mapper.n_bins)
    from_columns = codes_mod.sparse_layout(codes, mapper.n_bins, columns)
    for a, b in zip(scanned, from_columns, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    calls = []
    monkeypatch.setattr(codes_mod, "_layout_from_columns", lambda *a: calls.append(a) or None)
    codes_mod.note_sparse_codes(codes, mapper.n_bins, columns)
    codes_mod.layout_of(codes, mapper.n_bins)
    assert len(calls) == 1
    dup = sp.csr_matrix((np.ones(3), np.array([2, 2, 3]), np.array([0, 2, 3, 3, 3])), shape=(4, 5))  # (0, 2) twice
    dup_mapper = fit_bin_mapper(np, dup, np.zeros(5, bool), 8)
    assert _sparse.sparse_codes(dup, dup_mapper, reference.stored_codes)[1] is None


@pytest.mark.parametrize("max_bins", [32, 1000])
def test_compiled_stored_codes_equal_the_dense_binning(max_bins):
    """The Numba set's codes of a CSR matrix's stored values (NaN, explicit zeros, infinities and values on the
    edges among them), uint8 and uint16: the reference's, and the dense twin's binned matrix."""
    from gputrees import _sparse
    from gputrees._binning import fit_bin_mapper
    from gputrees.kernels import cpu, reference

    rng = np.random.default_rng(5)
    X = sp.random(4000, 30, density=0.05, format="csr", random_state=5, data_rvs=lambda k: rng.normal(size=k))
    X.data[::7] = 0.0
    X.data[::11] = np.nan
    X.data[::13] = np.inf
    X.data[::17] = -np.inf
    mapper = fit_bin_mapper(np, X, np.zeros(X.shape[1], bool), max_bins)
    csc = X.tocsc()
    edge_values = mapper.thresholds[3, :2]  # values exactly on a column's edges
    csc.data[csc.indptr[3]:csc.indptr[3] + 2] = edge_values
    numba_set = cpu.make_kernels(n_jobs=2)
    want = reference.stored_codes(csc.indptr, csc.data, mapper)
    got = numba_set.stored_codes(csc.indptr, csc.data, mapper)
    assert got.dtype == want.dtype == np.dtype(mapper.code_dtype_name)
    np.testing.assert_array_equal(got, want)
    dense = X.toarray()
    codes, _ = _sparse.sparse_codes(X, mapper, numba_set.stored_codes)
    np.testing.assert_array_equal(codes, reference.bin_codes(np, dense, mapper))


@numba.njit
def _code_at(codes_t, r, f):
    return codes_mod.code_at(codes_t, r, f)


def test_code_at_reads_the_entries_as_the_codes(always_sparse):
    """A row's code from its entries (searched one by one, or bisected past LINEAR_ENTRIES) or the default."""
    rng = np.random.default_rng(4)
    codes = _mostly_default(rng, 300, 70, 9, 0.0)
    codes[:100] = _mostly_default(rng, 100, 70, 9, 0.5)  # rows of ~35 entries: bisected
    codes[100:200] = _mostly_default(rng, 100, 70, 9, 0.05)  # ~3: searched
    entries = codes_mod.sparse_layout(codes, 9)
    assert np.diff(entries[0]).max() > codes_mod.LINEAR_ENTRIES
    codes_t = np.ascontiguousarray(codes.T)
    for r in range(codes.shape[0]):
        for f in range(codes.shape[1]):
            assert _code_at(entries, r, f) == codes[r, f]
            assert _code_at(codes_t, r, f) == codes[r, f]
            # the Python body (a kernel's py_func) reads the same codes
            assert codes_mod.code_at(entries, r, f) == codes[r, f]
            assert codes_mod.code_at(codes_t, r, f) == codes[r, f]


def test_layout_is_made_only_for_large_sparse_codes(monkeypatch):
    rng = np.random.default_rng(1)
    codes = _mostly_default(rng, 2000, 20, 16, 0.05)
    assert codes_mod.sparse_layout(codes, 16) is None  # below SPARSE_MIN_CELLS
    monkeypatch.setattr(codes_mod, "SPARSE_MIN_CELLS", 0)
    assert codes_mod.sparse_layout(codes, 16) is not None
    dense = _mostly_default(rng, 2000, 20, 16, 0.5)
    assert codes_mod.sparse_layout(dense, 16) is None  # over SPARSE_MAX_SHARE (turned away by the sample)
    near = _mostly_default(rng, 2000, 20, 16, 0.14)
    assert codes_mod.sparse_layout(near, 16) is None  # close: counted in full, then turned away


@pytest.mark.parametrize("kernel", ["sparse_histograms", "sparse_histograms_serial"])
def test_sparse_histograms_equal_the_summed_rows(always_sparse, kernel):
    """Each slot's bins as the rows' sums: the integer channels bit for bit (default bins included), the float
    one to rounding in the default bins only; features without entries in a slot untouched; entries counted
    per feature."""
    rng = np.random.default_rng(2)
    n, F, nb = 3000, 6, 12  # bin 11: the missing one
    codes = _mostly_default(rng, n, F, nb - 1, 0.15)
    codes[rng.random((n, F)) < 0.02] = nb - 1
    codes[:, 4] = codes[0, 4]  # a feature without entries
    ptr, feat, code, default = codes_mod.sparse_layout(codes, nb)
    chan = np.stack([np.ones(n), rng.integers(0, 5, n).astype(float), rng.normal(size=n)], axis=1)
    order = rng.permutation(n).astype(np.int64)
    order[:1000].sort()
    order[1000:2800].sort()
    start = np.array([0, 1000, -1], dtype=np.int64)
    end = np.array([1000, 2800, 2800], dtype=np.int64)
    used = np.full(F, nb - 1, dtype=np.int64)
    totals = np.zeros((3, 3))
    for s in range(2):
        totals[s] = chan[order[start[s]:end[s]]].sum(axis=0)
    out = np.full((3, F, nb, 3), 7.0)
    counts = np.full((3, F), -1, dtype=np.int64)
    getattr(codes_mod, kernel)(ptr, feat, code, default, order, start, end, chan, 0, totals, used, counts, out)
    for s in range(2):
        rows = order[start[s]:end[s]]
        for f in range(F):
            want = np.zeros((nb, 3))
            np.add.at(want, codes[rows, f], chan[rows])
            assert counts[s, f] == np.count_nonzero(codes[rows, f] != default[f])
            if counts[s, f] == 0:
                assert f == 4 and np.all(out[s, f] == 7.0)
                continue
            np.testing.assert_array_equal(out[s, f, :, :2], want[:, :2])  # integer-valued: exact
            off = np.arange(nb) != default[f]
            np.testing.assert_array_equal(out[s, f, off, 2], want[off, 2])  # summed in row order as they are
            np.testing.assert_allclose(out[s, f, default[f], 2], want[default[f], 2], rtol=1e-12, atol=1e-12)
    assert np.all(out[2] == 7.0)  # no rows: nothing written
    np.testing.assert_array_equal(counts[2], np.zeros(F))


def test_sparse_siblings_subtract_the_features_with_entries():
    """Built children copied, the others their parent's minus them; a built child's feature without entries
    stands for its totals in the default bin."""
    rng = np.random.default_rng(3)
    F, nb, C = 5, 8, 2
    parent = rng.normal(size=(2, F, nb, C))
    small = rng.normal(size=(2, F, nb, C))
    parent_counts = rng.integers(0, 4, (2, F)) + 3
    parent_counts[1, 2] = 0
    small_counts = np.minimum(parent_counts, rng.integers(1, 4, (2, F)))
    small_counts[0, 3] = parent_counts[0, 3]  # the larger child has no entry of feature 3
    small_counts[1, 1] = 0  # the smaller child none of feature 1: stands for its totals
    small_counts[1, 2] = 0
    small_totals = rng.normal(size=(2, C))
    default = np.array([0, 2, 1, 0, 7], dtype=np.int64)
    small_is_right = np.array([False, True])
    parent_index = np.array([1, 0], dtype=np.int64)
    children = np.array([0, 1, 2, 3], dtype=np.int64)  # pair 0: left built; pair 1: right built
    used = np.array([8, 3, 8, 1, 8], dtype=np.int64) - 1
    for kernel in (codes_mod.sparse_siblings, codes_mod.sparse_siblings_serial):
        out = np.full((4, F, nb, C), np.nan)
        out_counts = np.full((4, F), -1, dtype=np.int64)
        kernel(parent, parent_counts, parent_index, small, small_counts, small_totals, small_is_right, children,
               used, default, out, out_counts)
        for j, (p, built) in enumerate([(0, True), (0, False), (1, False), (1, True)]):
            q = parent_index[p]
            k = small_counts[p] if built else parent_counts[q] - small_counts[p]
            np.testing.assert_array_equal(out_counts[j], k)
            implicit = np.zeros((F, nb, C))
            implicit[np.arange(F), default] = small_totals[p]
            sm = np.where((small_counts[p] > 0)[:, None, None], small[p], implicit)
            want = sm if built else parent[q] - sm
            for f in range(F):
                bins = list(range(used[f])) + [nb - 1]
                if k[f] == 0:
                    assert np.all(np.isnan(out[j, f]))
                else:
                    np.testing.assert_array_equal(out[j, f, bins], want[f, bins])
        assert out_counts[2, 1] > 0  # (the implicit case met)


SPARSE_CASES = ["two_channels", "missing_values", "min_samples_leaf", "regression", "uint16_codes", "few_bins",
                "depth_one", "deep", "one_thread", "one_feature", "categorical_missing"]


@pytest.mark.parametrize("case", SPARSE_CASES)
def test_compiled_tree_from_entries_equals_the_generic_grower(always_sparse, case):
    """Grown from the entries, the generic grower's tree: the same splits and rows' leaves, the count channel
    exact, the float statistics to rounding (the default bins are differences of sums)."""
    data, params = CASES[case]
    inputs = _inputs(3, **data)
    p = _params(**params)
    fixed = cpu.grow.fixed_inputs(inputs, p)
    assert fixed.covered and fixed.sparse[0].shape[0] == inputs.codes.shape[0] + 1
    got = grow(NP, inputs, p)
    want = grow(NP, _generic(inputs), p)
    for name in BATCH_FIELDS:
        u, v = getattr(got, name), getattr(want, name)
        if name == "stats":
            u, v = np.asarray(u), np.asarray(v)
            np.testing.assert_array_equal(u[..., 0], v[..., 0])  # counts
            np.testing.assert_allclose(u, v, rtol=1e-9, atol=1e-9)
        elif u is None or v is None:
            assert u is None and v is None, name
        else:
            np.testing.assert_array_equal(np.asarray(u), np.asarray(v), err_msg=name)
    if case not in ("depth_one",):
        assert int(got.node_count[0]) > 4


def _text_like(n=20_000, p=400, seed=0):
    """A one-hot / bag-of-words like CSR matrix: counts in a few columns a row, and a target of some of them."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=0.01, format="csr", random_state=seed,
                  data_rvs=lambda k: rng.integers(1, 4, k).astype(float))
    score = np.asarray(X[:, :20].sum(axis=1)).ravel() - np.asarray(X[:, 20:40].sum(axis=1)).ravel()
    y = (score + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def test_boosting_on_sparse_codes_grows_the_dense_twins_trees(monkeypatch):
    """A CSR matrix and its dense twin bin to the same codes, so both are grown from the entries (8 million
    cells, 1% of them nonzero): the same trees bit for bit; the dense histograms (layout turned off) give the
    same splits, values to rounding."""
    monkeypatch.setenv("GPUTREES_KERNELS", "numba")
    X, y = _text_like()
    kw = dict(n_estimators=6, max_depth=5, early_stopping=False, n_jobs=2)
    made = []
    real = codes_mod.sparse_layout
    monkeypatch.setattr(codes_mod, "sparse_layout", lambda *a: made.append(real(*a)) or made[-1])
    assert X.shape[0] * X.shape[1] >= codes_mod.SPARSE_MIN_CELLS
    sparse = gputrees.GradientBoostingClassifier(**kw).fit(X, y)
    dense = gputrees.GradientBoostingClassifier(**kw).fit(X.toarray(), y)
    assert len(made) == 2 and all(m is not None for m in made)
    monkeypatch.setattr(codes_mod, "SPARSE_MAX_SHARE", 0.0)
    monkeypatch.setattr(codes_mod, "sparse_layout", real)
    plain = gputrees.GradientBoostingClassifier(**kw).fit(X, y)
    for a, b, c in zip(sparse._rounds, dense._rounds, plain._rounds, strict=True):
        for name in ("node_count", "left", "right", "feature", "bin", "threshold", "stats"):
            np.testing.assert_array_equal(np.asarray(getattr(a.batch, name)), np.asarray(getattr(b.batch, name)))
        for name in ("node_count", "left", "right", "feature", "bin", "threshold"):
            np.testing.assert_array_equal(np.asarray(getattr(a.batch, name)), np.asarray(getattr(c.batch, name)))
        np.testing.assert_allclose(np.asarray(a.values), np.asarray(c.values), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(sparse.predict_proba(X), dense.predict_proba(X.toarray()))


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_pair_histograms_equal_the_summed_pairs(always_sparse, mode):
    """The level-wise grower's histograms from the entries: every bin as the pairs' weighed sums (multiplicities
    of either kind), the integer channels bit for bit, the float one to rounding in the default bins only;
    a slot without pairs all zeros."""
    rng = np.random.default_rng(5)
    n, F, nb = 2000, 5, 10
    codes = _mostly_default(rng, n, F, nb - 1, 0.1)
    codes[rng.random((n, F)) < 0.02] = nb - 1
    codes[:, 2] = codes[0, 2]  # no entries
    entries = codes_mod.sparse_layout(codes, nb)
    chan = np.stack([np.ones(n), rng.integers(0, 3, n).astype(float), rng.normal(size=n)], axis=1)
    row = np.concatenate([rng.permutation(n)[:700], rng.permutation(n)[:900]]).astype(np.int64)
    mult = rng.integers(1, 4, row.shape[0]).astype(float) if mode else np.empty(0)
    wmult = mult * rng.uniform(0.5, 2.0, row.shape[0]) if mode == 2 else np.empty(0)
    start, end = np.array([0, 700, -1]), np.array([700, 1600, 1600])
    out = np.full((3, F, nb, 2), 7.0)
    codes_mod.pair_histograms(*entries, row, row, mult, wmult, mode, chan, 1, start, end, np.empty((1, 0), np.int64),
                              out)
    drawn = np.array([[3, 0], [2, 4], [1, 0]])
    out_drawn = np.full((3, 2, nb, 2), 7.0)
    codes_mod.pair_histograms(*entries, row, row, mult, wmult, mode, chan, 1, start, end, drawn, out_drawn)
    for s in range(2):
        np.testing.assert_array_equal(out_drawn[s], out[s, drawn[s]])  # a drawn feature's: the same sums
        pairs = np.arange(start[s], end[s])
        w = chan[row[pairs], 1:].copy()
        if mode == 1:
            w *= mult[pairs, None]
        elif mode == 2:  # the first channel by the multiplicity, the others by the weighted one
            w[:, 0] *= mult[pairs]
            w[:, 1] *= wmult[pairs]
        for f in range(F):
            want = np.zeros((nb, 2))
            np.add.at(want, codes[row[pairs], f], w)
            off = np.arange(nb) != entries[3][f]
            np.testing.assert_array_equal(out[s, f, off], want[off])
            np.testing.assert_allclose(out[s, f, ~off], want[~off], rtol=1e-12, atol=1e-12)
            np.testing.assert_array_equal(out[s, f, ~off, 0], want[~off, 0])  # integer-valued: exact
    assert np.all(out[2] == 0.0) and np.all(out_drawn[2] == 0.0)


@pytest.mark.parametrize("name, params", [
    ("DecisionTreeClassifier", dict(max_depth=6, random_state=0)),
    ("DecisionTreeRegressor", dict(max_depth=5, min_samples_leaf=3, random_state=0)),
    ("AdaBoostClassifier", dict(n_estimators=4, random_state=0)),
    ("RandomForestClassifier", dict(n_estimators=3, max_depth=4, random_state=0)),
    # grown to the end (their lopsided splits leave thousands of nodes of most rows)
    ("DecisionTreeClassifier", dict(random_state=0)),
    ("RandomForestClassifier", dict(n_estimators=3, random_state=0)),
    ("RandomForestRegressor", dict(n_estimators=2, min_samples_leaf=5, random_state=0)),
    # its small nodes by histograms, not sorted as the dense codes' are: a random cut placed otherwise
    ("ExtraTreesClassifier", dict(n_estimators=3, random_state=0)),
])
def test_trees_on_sparse_codes_grow_the_dense_twins_trees(monkeypatch, name, params):
    """Trees, AdaBoost's learners and forests grown from the entries (8 million cells, 1% nonzero): a CSR
    matrix and its dense twin the same trees bit for bit; the dense histograms and sorts (layout turned off)
    the same splits, statistics to rounding (extra trees aside)."""
    monkeypatch.setenv("GPUTREES_KERNELS", "numba")
    X, y = _text_like()
    if "Regressor" in name:
        y = y + np.asarray(X[:, :5].sum(axis=1)).ravel()
    made = []
    real = codes_mod.sparse_layout
    monkeypatch.setattr(codes_mod, "sparse_layout", lambda *a: made.append(real(*a)) or made[-1])

    def trees(model):
        ests = getattr(model, "estimators_", [model])
        return [{k: np.asarray(getattr(e._batch, k)) for k in ("left", "feature", "bin", "threshold", "stats")}
                for e in ests]

    handed = []  # the subtree kernel's layouts: entries where it grows from them
    real_sub = cpu.subtree.layout_of
    monkeypatch.setattr(cpu.subtree, "layout_of", lambda *a: handed.append(real_sub(*a)) or handed[-1])
    sparse = getattr(gputrees, name)(**params).fit(X, y)
    dense = getattr(gputrees, name)(**params).fit(X.toarray(), y)
    assert made and all(m is not None for m in made)
    if name != "AdaBoostClassifier":  # (stumps: no node below the root's level to hand over)
        assert handed and all(h is not None for h in handed)
    monkeypatch.setattr(codes_mod, "SPARSE_MAX_SHARE", 0.0)
    plain = getattr(gputrees, name)(**params).fit(X, y)
    for a, b, c in zip(trees(sparse), trees(dense), trees(plain), strict=True):
        for k in a:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
        if name.startswith("ExtraTrees"):
            continue
        for k in ("left", "feature", "bin", "threshold"):
            np.testing.assert_array_equal(a[k], c[k], err_msg=k)
        np.testing.assert_allclose(a["stats"], c["stats"], rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(sparse.predict(X), dense.predict(X.toarray()))
