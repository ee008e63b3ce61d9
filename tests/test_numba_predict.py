"""Compiled prediction over complete-tree layouts against the reference walk, bit for bit.

Random trees in the grower's numbering (breadth-first creation order, padded
to a common width), with leaves at uneven depths, one-node trees, NaN entries
and whole NaN rows, blocks of rows with and without NaN, infinite values,
rows equal to thresholds, float32 and float64 rows, one and several classes;
categorical and too deep batches, and +inf thresholds where missing values go
right, take the padded walk.
"""

from __future__ import annotations

import dataclasses
import gc

import numpy as np
import pytest

from gputrees._backend import namespace_of
from gputrees._records import TreeBatch
from gputrees.kernels.reference import apply_trees as apply_trees_reference
from gputrees.kernels import reference as _reference

pytest.importorskip("numba")
from gputrees.kernels import cpu  # noqa: E402

NP = namespace_of(np.empty(0))


@pytest.fixture(autouse=True)
def _threads_even_for_small_inputs(monkeypatch):
    """The inputs here are small: split every pass over the threads asked for, as large inputs are."""
    monkeypatch.setattr(cpu.jit, "MIN_WORK_PER_THREAD", 1)


def _tree(rng, depth, n_features, p_split, cat_bins):
    """One random tree as node lists in creation order (breadth-first, children numbered when made)."""
    feature, threshold, left, right, miss, is_cat, cat_left = [], [], [], [], [], [], []
    node_depth = [0]
    queue = [0]
    n = 1
    while queue:
        nd = queue.pop(0)
        split = node_depth[nd] < depth and rng.random() < p_split
        feature.append(int(rng.integers(0, n_features)) if split else -2)
        # thresholds on a coarse grid, so that rows equal them; some not float32-representable
        threshold.append(float(rng.integers(-8, 8)) / 4 + float(rng.choice([0.0, 0.0, 1e-9, -1e-9])) if split else -2.0)
        miss.append(bool(rng.random() < 0.5) if split else False)
        cat = split and cat_bins > 0 and rng.random() < 0.4
        is_cat.append(cat)
        cat_left.append(rng.random(cat_bins) < 0.5 if cat else np.zeros(cat_bins, bool))
        if cat:
            threshold[-1] = np.nan
        if split:
            left.append(n)
            right.append(n + 1)
            node_depth += [node_depth[nd] + 1] * 2
            queue += [n, n + 1]
            n += 2
        else:
            left.append(-1)
            right.append(-1)
    return dict(feature=feature, threshold=threshold, left=left, right=right, missing_left=miss,
                is_categorical=is_cat, cat_left=cat_left, depth=max(node_depth))


def _random_batch(seed, n_trees, depth, n_features, *, p_split=0.8, cat_bins=0, one_node=()):
    """Padded batch of random trees; trees in ``one_node`` are a single leaf."""
    rng = np.random.default_rng(seed)
    trees = [_tree(rng, 0 if t in one_node else depth, n_features, p_split, cat_bins) for t in range(n_trees)]
    width = max(len(tr["feature"]) for tr in trees) + 2  # some padding nodes in every tree

    def padded(name, fill, dtype):
        out = np.full((n_trees, width) + ((cat_bins,) if name == "cat_left" else ()), fill, dtype=dtype)
        for t, tr in enumerate(trees):
            out[t, : len(tr[name])] = np.array(tr[name], dtype=dtype).reshape((len(tr[name]),) + out.shape[2:])
        return out

    return TreeBatch(
        node_count=np.array([len(tr["feature"]) for tr in trees], dtype=np.int64),
        left=padded("left", -1, np.int64),
        right=padded("right", -1, np.int64),
        feature=padded("feature", -2, np.int64),
        bin=np.full((n_trees, width), -1, dtype=np.int64),
        missing_left=padded("missing_left", False, np.bool_),
        is_categorical=padded("is_categorical", False, np.bool_),
        cat_left=padded("cat_left", False, np.bool_),
        threshold=padded("threshold", -2.0, np.float64),
        stats=np.zeros((n_trees, width, 1)),
        depth=np.zeros((n_trees, width), dtype=np.int64),
        max_depth=max(tr["depth"] for tr in trees),
    )


def _rows(seed, n, n_features, cat_bins=0):
    """Rows on the thresholds' grid and next to it; n > 2 * ROWS_PER_BLOCK."""
    rng = np.random.default_rng(seed)
    X = rng.integers(-10, 10, (n, n_features)) / 4 + rng.choice([0.0, 0.0, 1e-9, -1e-9, 0.3], (n, n_features))
    if cat_bins:
        # categorical columns hold codes (cat_bins - 1 = missing); every column may be read as one
        X = np.abs(np.round(X)) % cat_bins
    else:
        # infinite values are compared as they are, in place or in the NaN blocks' copies
        X[[3, cpu.predict.ROWS_PER_BLOCK + 7], 2] = np.inf
        X[[4, cpu.predict.ROWS_PER_BLOCK + 9], 0] = -np.inf
    # blocks of rows without NaN are read in place, the others copied: the first block has no NaN,
    # the second 10% and a whole row missing, the last one NaN
    b = cpu.predict.ROWS_PER_BLOCK
    X[b : 2 * b][rng.random((b, n_features)) < 0.1] = np.nan
    X[b + 5] = np.nan
    X[-3, 1] = np.nan
    return X


CASES = {
    "uneven": dict(n_trees=12, depth=6, p_split=0.75),
    "full": dict(n_trees=5, depth=4, p_split=1.0),
    "one-node trees": dict(n_trees=6, depth=5, p_split=0.8, one_node=(0, 3)),
    "stumps only": dict(n_trees=4, depth=0, p_split=0.0),
    "deep": dict(n_trees=3, depth=12, p_split=0.9),
    "categorical": dict(n_trees=8, depth=5, p_split=0.8, cat_bins=6),
    "inf threshold": None,  # "uneven" with a +inf threshold where missing values go right
}


def _case(name, seed):
    if name == "inf threshold":
        batch, X, missing_bin = _case("uneven", seed)
        threshold, missing_left = batch.threshold.copy(), batch.missing_left.copy()
        threshold[1, 0], missing_left[1, 0] = np.inf, False  # every row left but NaN
        return dataclasses.replace(batch, threshold=threshold, missing_left=missing_left), X, missing_bin
    kw = dict(CASES[name])
    batch = _random_batch(seed, kw.pop("n_trees"), kw.pop("depth"), 4, **kw)
    X = _rows(seed + 1, 2 * cpu.predict.ROWS_PER_BLOCK + 37, 4, kw.get("cat_bins", 0))  # two full blocks and a part
    cat_bins = kw.get("cat_bins", 0)
    return batch, X, cat_bins - 1 if cat_bins else 255


def test_layout_applies_to_depth_limited_numerical_batches():
    for name in ("uneven", "full", "one-node trees", "stumps only"):
        assert cpu.predict.complete_trees(_case(name, 1)[0]) is not None, name
    assert cpu.predict.complete_trees(_case("categorical", 1)[0]) is None
    assert cpu.predict.complete_trees(_case("deep", 1)[0]) is None  # depth 12 > MAX_DEPTH
    assert cpu.predict.complete_trees(_case("inf threshold", 1)[0]) is None
    batch = _case("uneven", 1)[0]
    assert batch.max_depth == 6 and (batch.node_count < 2**7 - 1).all()  # leaves above the bottom level


#: Blocks of rows each tree walks in turn (cpu.predict.TREES_IN_CACHE_BYTES):
#: None keeps the default (these small trees: one block, every tree); 1 and 2
#: force tree-by-tree passes of one and two blocks (X's three blocks: several
#: passes per thread, the last one short).
TREE_PASSES = [None, 1, 2]


def _tree_passes(monkeypatch, blocks):
    if blocks is not None:
        monkeypatch.setattr(cpu.predict, "TREES_IN_CACHE_BYTES", 0)
        monkeypatch.setattr(cpu.predict, "ROWS_PER_TREE_PASS", blocks * cpu.predict.ROWS_PER_BLOCK)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("blocks", TREE_PASSES)
def test_apply_trees_equals_reference(name, dtype, blocks, monkeypatch):
    _tree_passes(monkeypatch, blocks)
    batch, X, missing_bin = _case(name, 3)
    X = X.astype(dtype)
    want = apply_trees_reference(NP, batch, X.astype(np.float64), missing_bin)
    assert (np.take_along_axis(batch.feature, want.T, axis=1) < 0).all()
    for threads in (1, 2):
        got = cpu.predict.apply_trees(NP, batch, X, missing_bin, n_threads=threads)
        assert got.dtype == np.int64 and got.shape == want.shape
        assert np.array_equal(got, want)


def test_a_column_per_category_walks_as_a_column_per_bin():
    """A fitted batch holds a column per category and the missing bin's last
    (``records.category_width``), not one per bin: both walks read it as the
    batch of a column per bin (256 bins, the missing one the last)."""
    batch, X, _ = _case("categorical", 3)  # codes 0 .. 4 and a sixth column, the missing bin's
    X = np.where(X == 5, np.nan, X)
    narrow = batch.cat_left
    wide = np.zeros(narrow.shape[:2] + (256,), dtype=bool)
    wide[..., :5], wide[..., 255] = narrow[..., :5], narrow[..., 5]
    wide_batch = dataclasses.replace(batch, cat_left=wide)
    want = apply_trees_reference(NP, wide_batch, X, 255)
    assert np.array_equal(apply_trees_reference(NP, batch, X, 255), want)
    assert np.array_equal(cpu.predict.apply_trees(NP, batch, X, 255), want)
    assert np.array_equal(cpu.predict.apply_trees(NP, wide_batch, X, 255), want)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("blocks", TREE_PASSES)
def test_predict_raw_equals_reference(name, k, dtype, blocks, monkeypatch):
    _tree_passes(monkeypatch, blocks)
    batch, X, missing_bin = _case(name, 5)
    if batch.left.shape[0] % k:
        batch = TreeBatch(**{f: (getattr(batch, f)[: batch.left.shape[0] // k * k]
                                 if isinstance(getattr(batch, f), np.ndarray) else getattr(batch, f))
                             for f in batch.__dataclass_fields__})
    X = X.astype(dtype)
    rng = np.random.default_rng(6)
    n = X.shape[0]
    values = rng.standard_normal(batch.left.shape) * np.exp(rng.uniform(-30, 30, batch.left.shape))
    values = np.where(batch.left < 0, values, 0.0)
    base = np.broadcast_to(rng.standard_normal(k)[None, :], (n, k))
    want = _reference.predict_raw(NP, batch, values, X.astype(np.float64), missing_bin, base)
    for threads in (1, 2):
        got = cpu.predict.predict_raw(NP, batch, values, X, missing_bin, base, n_threads=threads)
        assert got.shape == (n, k) and got.dtype == np.float64
        assert np.array_equal(got, want)


def test_below_float32_is_the_largest_float32_not_above():
    rng = np.random.default_rng(0)
    f32 = np.finfo(np.float32)
    t = np.concatenate([
        rng.standard_normal(2000) * 10.0 ** rng.integers(-40, 40, 2000),
        rng.standard_normal(200).astype(np.float32).astype(np.float64),  # exactly representable
        [0.0, -0.0, 1e-46, -1e-46, float(f32.max), -float(f32.max), 1e39, -1e39, 3.5e38, -3.5e38,
         float(f32.smallest_subnormal), np.inf, -np.inf],
    ])
    r = cpu.predict.below_float32(t)
    assert r.dtype == np.float32
    assert (r.astype(np.float64) <= t).all()
    with np.errstate(over="ignore"):
        above = np.nextafter(r, np.float32(np.inf)).astype(np.float64)
    assert ((above > t) | (t == np.inf)).all()
    assert np.isnan(cpu.predict.below_float32(np.array([np.nan]))).all()
    # so float32 values compare the same with r as with t
    with np.errstate(over="ignore"):
        x = np.concatenate([r, np.nextafter(r, np.float32(np.inf)), np.nextafter(r, np.float32(-np.inf))])
    x = x[np.isfinite(x)]
    for ti, ri in zip(t[:: 7], r[:: 7]):
        assert np.array_equal(x <= ri, x.astype(np.float64) <= ti)


def test_layout_is_built_once_per_batch_and_dropped_with_it():
    batch = _case("uneven", 9)[0]
    layout = cpu.predict.complete_trees(batch)
    assert cpu.predict.complete_trees(batch) is layout
    key = id(batch)
    assert key in cpu.predict._CACHE
    del batch
    gc.collect()
    assert key not in cpu.predict._CACHE


def test_numba_kernel_set_predicts_with_the_layout():
    from gputrees.kernels import get_kernels

    kernels = get_kernels(NP, name="numba")
    assert kernels.predict_raw.func is cpu.predict.predict_raw
    assert kernels.apply_trees.func is cpu.predict.apply_trees


def _chain_batch(depth, n_features=2):
    """Trees that are chains of ``depth`` splits: at depth ``d`` the rows with ``x <= d / 8`` (tree ``t``'s
    feature ``t``) go left to a leaf, the others walk on (missing values right in tree 0, left in tree 1)."""
    n_nodes = 2 * depth + 1
    left = np.full((n_features, n_nodes), -1, dtype=np.int64)
    feature = np.full((n_features, n_nodes), -2, dtype=np.int64)
    threshold = np.full((n_features, n_nodes), -2.0)
    missing_left = np.zeros((n_features, n_nodes), dtype=np.bool_)
    for t in range(n_features):
        for d in range(depth):
            node = 2 * d  # breadth-first: the chain's node at depth d, its leaf 2d + 1, the next one 2d + 2
            left[t, node] = node + 1
            feature[t, node] = t
            threshold[t, node] = d / 8
            missing_left[t, node] = t == 1
    return TreeBatch(
        node_count=np.full(n_features, n_nodes, dtype=np.int64),
        left=left,
        right=np.where(left >= 0, left + 1, left),
        feature=feature,
        bin=np.full((n_features, n_nodes), -1, dtype=np.int64),
        missing_left=missing_left,
        is_categorical=np.zeros((n_features, n_nodes), dtype=np.bool_),
        cat_left=np.zeros((n_features, n_nodes, 0), dtype=np.bool_),
        threshold=threshold,
        stats=np.zeros((n_features, n_nodes, 1)),
        depth=np.zeros((n_features, n_nodes), dtype=np.int64),
        max_depth=depth,
    )


def test_rows_ending_far_apart_walk_as_the_reference():
    """Trees deeper than the levels a block of rows walks together (``BLOCK_LEVELS``), whose rows end at every
    depth (a sparse X's lopsided trees): past those levels only the rows still moving walk on, to the
    reference's leaves and sums."""
    depth = cpu.predict.BLOCK_LEVELS + 24
    batch = _chain_batch(depth)
    rng = np.random.default_rng(8)
    X = rng.uniform(-0.5, depth / 8 + 0.5, (3 * cpu.predict.ROWS_PER_BLOCK + 11, 2))
    X[rng.random(X.shape) < 0.05] = np.nan
    want = apply_trees_reference(NP, batch, X, 255)
    leaf_depth = (want + 1) // 2  # a chain's leaf 2d + 1 (d + 1 deep), its last one 2 * depth
    assert leaf_depth.min() == 1 and leaf_depth.max() == depth and (leaf_depth > cpu.predict.BLOCK_LEVELS).mean() > 0.3
    values = rng.standard_normal(batch.left.shape)[:, :, None]
    want_sums = _reference.tree_value_sums(NP, batch, values, X, 255)
    for threads in (1, 2):
        assert np.array_equal(cpu.predict.apply_trees(NP, batch, X, 255, n_threads=threads), want)
        assert np.array_equal(cpu.predict.tree_value_sums(NP, batch, values, X, 255, n_threads=threads), want_sums)


@pytest.mark.parametrize("name", list(CASES) + ["chain"])
@pytest.mark.parametrize("blocks", TREE_PASSES)
def test_csr_rows_walk_as_their_dense_twin(name, blocks, monkeypatch):
    """A CSR matrix's rows (half the entries implicit zeros, NaN stored) walk as the dense rows do: the leaves,
    boosting's raw predictions and a forest's sums (several outputs, and one: NumPy's pairwise sum over the
    trees), bit for bit, row after row through every tree and (``blocks``) tree after tree through passes of
    rows."""
    sp = pytest.importorskip("scipy.sparse")
    _tree_passes(monkeypatch, blocks)
    rng = np.random.default_rng(8)
    if name == "chain":
        batch, missing_bin = _chain_batch(cpu.predict.BLOCK_LEVELS + 24), 255
        X = rng.uniform(-0.5, batch.max_depth / 8 + 0.5, (3 * cpu.predict.ROWS_PER_BLOCK + 11, 2))
        X[rng.random(X.shape) < 0.05] = np.nan
    else:
        batch, X, missing_bin = _case(name, 7)
    X = np.where(rng.random(X.shape) < 0.5, 0.0, X)
    csr = sp.csr_matrix(X)
    assert cpu.predict.is_csr(csr) and 0 < csr.nnz < X.size and np.isnan(csr.data).any()
    n_trees, width = batch.left.shape
    raw_values = rng.standard_normal((n_trees, width))
    base = np.broadcast_to(rng.standard_normal(1)[None, :], (X.shape[0], 1))
    outputs = rng.standard_normal((n_trees, width, 3))
    want = apply_trees_reference(NP, batch, X, missing_bin)
    want_raw = _reference.predict_raw(NP, batch, raw_values, X, missing_bin, base)
    want_sums = _reference.tree_value_sums(NP, batch, outputs, X, missing_bin)
    want_one = _reference.tree_value_sums(NP, batch, outputs[:, :, :1], X, missing_bin)
    for threads in (1, 2):
        assert np.array_equal(cpu.predict.apply_trees(NP, batch, csr, missing_bin, n_threads=threads), want)
        got = cpu.predict.predict_raw(NP, batch, raw_values, csr, missing_bin, base, n_threads=threads)
        assert np.array_equal(got, want_raw)
        got = cpu.predict.tree_value_sums(NP, batch, outputs, csr, missing_bin, n_threads=threads)
        assert np.array_equal(got, want_sums)
        got = cpu.predict.tree_value_sums(NP, batch, outputs[:, :, :1], csr, missing_bin, n_threads=threads)
        assert got.shape == want_one.shape and np.array_equal(got, want_one)
