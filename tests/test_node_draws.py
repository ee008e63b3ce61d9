"""Per-node random draws keyed by the node's path (gputrees.kernels.node_draws), and their compiled twins."""

from __future__ import annotations

import numpy as np
import pytest

from gputrees.kernels import node_draws as nd


def test_mix64_is_splitmix64():
    """SplitMix64 seeded with 0 outputs mix64(GOLDEN), mix64(2 GOLDEN), ... (published first outputs)."""
    state = np.arange(1, 4, dtype=np.uint64) * nd.GOLDEN
    got = nd.mix64(state)
    assert [hex(int(v)) for v in got] == ["0xe220a8397b1dcdaf", "0x6e789e6aa1b965f4", "0x6c45d188009454f"]


def test_uniforms_are_in_unit_interval_and_depend_on_key_and_draw():
    keys = nd.child_keys(nd.root_keys(np.arange(50, dtype=np.uint64)))
    u = nd.uniforms(keys, 40)
    assert u.shape == (100, 40) and u.dtype == np.float64
    assert np.all((u >= 0) & (u < 1))
    assert abs(u.mean() - 0.5) < 0.02  # 4000 draws: standard error 0.0046
    assert len(np.unique(u)) == u.size
    # draws first .. first + n - 1 are the same numbers, wherever they are asked from
    np.testing.assert_array_equal(nd.uniforms(keys, 10, first=30), u[:, 30:])


def test_children_keys_differ_from_each_other_and_from_the_parent():
    parent = nd.root_keys(np.arange(1000, dtype=np.uint64))
    kids = nd.child_keys(parent)
    assert kids.shape == (2000,) and kids.dtype == np.uint64
    assert len(np.unique(np.concatenate([parent, kids]))) == 3000
    # a child's key depends only on its parent's and its side
    np.testing.assert_array_equal(nd.child_keys(parent[7:8]), kids[14:16])


@pytest.mark.parametrize("k", [1, 3, 10])
def test_feature_mask_draws_k_features_without_replacement(k):
    keys = nd.root_keys(np.arange(200, dtype=np.uint64))
    mask = nd.feature_mask(keys, 10, k)
    assert mask.shape == (200, 10) and mask.dtype == bool
    np.testing.assert_array_equal(mask.sum(axis=1), k)
    # the k smallest uniforms of each node
    u = nd.uniforms(keys, 10)
    kth = np.sort(u, axis=1)[:, k - 1 : k]
    np.testing.assert_array_equal(mask, u <= kth)
    if k < 10:  # every feature is drawn by some node
        assert mask.any(axis=0).all()


def test_feature_mask_keeps_to_the_allowed_features():
    keys = nd.root_keys(np.arange(300, dtype=np.uint64))
    allowed = np.zeros((300, 8), dtype=bool)
    allowed[:, [1, 4, 6]] = True
    allowed[:100, 6] = False  # only two allowed: both drawn, even with k = 3
    mask = nd.feature_mask(keys, 8, 3, allowed)
    assert not (mask & ~allowed).any()
    np.testing.assert_array_equal(mask[:100].sum(axis=1), 2)
    np.testing.assert_array_equal(mask[100:].sum(axis=1), 3)
    two = nd.feature_mask(keys, 8, 2, allowed)
    np.testing.assert_array_equal(two.sum(axis=1), 2)
    assert not (two & ~allowed).any()


def test_tree_keys_come_from_the_generator():
    a = nd.tree_keys(np.random.default_rng(5), 4)
    b = nd.tree_keys(np.random.default_rng(5), 4)
    c = nd.tree_keys(np.random.default_rng(6), 4)
    assert a.dtype == np.uint64 and a.shape == (4,)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def _compiled_draws(compiled_rule):
    """The compiled draws (gputrees.kernels.rules, as the kernels call them) under the names the tests use."""
    from types import SimpleNamespace

    from gputrees.kernels import rules

    return SimpleNamespace(_mix64=compiled_rule("mix64"), _uniform=compiled_rule("uniform"),
                           _draw_features=compiled_rule("draw_features"), RANK_DRAW_FEATURES=rules.RANK_DRAW_FEATURES)


def _assert_compiled_masks(st, keys, n_features, ks, allowed):
    """The compiled feature draws of every key equal the host's, for each k, with and without ``allowed``."""
    for k in ks:
        for has_allowed in (False, True):
            want = nd.feature_mask(keys, n_features, k, allowed if has_allowed else None)
            got = np.ones_like(want)  # every entry must be written
            for i, key in enumerate(keys):
                st._draw_features(key, k, allowed[i], has_allowed, np.empty(n_features), got[i])
            np.testing.assert_array_equal(got, want)


def test_compiled_twins_equal_the_host_draws():
    pytest.importorskip("numba")
    from gputrees.kernels.cpu.jit import compiled_rule

    st = _compiled_draws(compiled_rule)
    rng = np.random.default_rng(0)
    keys = rng.integers(0, np.iinfo(np.int64).max, 64, dtype=np.int64).astype(np.uint64)
    keys[:3] = [0, 1, np.iinfo(np.uint64).max]
    for key in keys:
        assert st._mix64(key) == nd.mix64(np.array([key]))[0]
        left, right = nd.child_keys(np.array([key]))
        assert st._mix64(key ^ nd.LEFT) == left and st._mix64(key ^ nd.RIGHT) == right
    want_u = nd.uniforms(keys, 12)
    got_u = np.array([[st._uniform(key, d) for d in range(12)] for key in keys])
    np.testing.assert_array_equal(got_u, want_u)
    allowed = rng.random((64, 12)) < 0.6
    allowed[0] = False  # a node with no allowed feature
    allowed[1] = np.arange(12) < 2  # fewer allowed than drawn
    _assert_compiled_masks(st, keys, 12, (1, 4, 11, 12, 20), allowed)


@pytest.mark.parametrize("n_features", [2047, 2048, 2049, 2100])
def test_compiled_feature_draws_on_either_side_of_the_integer_keys_bound(n_features):
    # up to RANK_DRAW_FEATURES features the compiled draw ranks integer keys
    # (the feature in 11 bits); above it, k passes of a running minimum
    pytest.importorskip("numba")
    from gputrees.kernels.cpu.jit import compiled_rule

    st = _compiled_draws(compiled_rule)
    assert st.RANK_DRAW_FEATURES == 2048
    rng = np.random.default_rng(n_features)
    keys = rng.integers(0, np.iinfo(np.int64).max, 6, dtype=np.int64).astype(np.uint64)
    allowed = rng.random((6, n_features)) < 0.3
    allowed[0] = np.arange(n_features) == n_features - 1  # only the last feature (its index in the low bits)
    _assert_compiled_masks(st, keys, n_features, (1, 45, 2048), allowed)


@pytest.mark.parametrize("n_features", [40, 300, 1000])
def test_compiled_feature_draws_ranked_below_a_bound(n_features):
    # with k well below F the compiled draw ranks only the keys below a bound
    # (about k + 4 sqrt(k) + 4 of them): the same mask as ranking every key,
    # including nodes where fewer than k allowed keys fall below it
    pytest.importorskip("numba")
    from gputrees.kernels.cpu.jit import compiled_rule

    st = _compiled_draws(compiled_rule)
    rng = np.random.default_rng(n_features)
    keys = rng.integers(0, np.iinfo(np.int64).max, 400, dtype=np.int64).astype(np.uint64)
    allowed = rng.random((400, n_features)) < 0.5
    allowed[:40] = rng.random((40, n_features)) < 0.05  # few allowed: below k under the bound, often
    _assert_compiled_masks(st, keys, n_features, (1, 2, 5, 17, n_features // 3), allowed)
