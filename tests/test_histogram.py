"""Tests of the histogram kernels (gputrees.kernels).

``_reference.build_histograms`` (array-API standard only) is the oracle;
``_bincount.build_histograms`` (NumPy / CuPy) must equal it EXACTLY when the
channel sums are exactly representable (counts, integer weights, one-hot
classes) and to float rounding for arbitrary float weights. The reference
kernel must give the same histograms on every backend.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gputrees._backend import namespace_of, to_numpy
from gputrees.kernels import _bincount, reference as _reference, get_kernels

NP = namespace_of(np.empty(0))  # array-api-compat's NumPy namespace


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _make_case(
    seed,
    *,
    n_samples=200,
    n_features=4,
    n_bins=12,
    n_rows=None,
    n_nodes=3,
    channels="onehot",
    missing_frac=0.1,
    repeat_rows=False,
):
    """Random (codes, rows, node, weights) on the host.

    channels: "count" (only the row count), "int" (count + integer weights and
    integer weighted targets), "onehot" (count + one-hot of 3 classes, times
    integer weights), "float" (count + random float weights).
    """
    rng = np.random.default_rng(seed)
    dtype = np.uint8 if n_bins <= 256 else np.uint16
    codes = rng.integers(0, n_bins - 1, size=(n_samples, n_features)).astype(dtype)
    codes[rng.random(codes.shape) < missing_frac] = n_bins - 1  # the missing bin
    if n_rows is None:
        n_rows = n_samples
    if repeat_rows:
        rows = rng.integers(0, n_samples, size=n_rows)
    else:
        rows = rng.permutation(n_samples)[:n_rows]
    rows = rows.astype(np.int64)
    node = rng.integers(0, n_nodes, size=rows.shape[0]).astype(np.int64)
    ones = np.ones((rows.shape[0], 1))
    if channels == "count":
        w = ones
    elif channels == "int":
        sw = rng.integers(1, 5, size=(rows.shape[0], 1)).astype(np.float64)
        y = rng.integers(-20, 20, size=(rows.shape[0], 1)).astype(np.float64)
        w = np.concatenate([ones, sw, sw * y, sw * y * y], axis=1)
    elif channels == "onehot":
        sw = rng.integers(1, 4, size=(rows.shape[0], 1)).astype(np.float64)
        y = rng.integers(0, 3, size=rows.shape[0])
        w = np.concatenate([ones, (y[:, None] == np.arange(3)[None, :]) * sw], axis=1)
    elif channels == "float":
        sw = rng.random((rows.shape[0], 1)) * 3.0
        y = rng.standard_normal((rows.shape[0], 1))
        w = np.concatenate([ones, sw, sw * y, sw * y * y], axis=1)
    else:  # pragma: no cover
        raise ValueError(channels)
    return codes, rows, node, np.ascontiguousarray(w, dtype=np.float64), n_nodes, n_bins


def _ref(codes, rows, node, w, n_nodes, n_bins):
    return np.asarray(_reference.build_histograms(NP, codes, rows, node, w, n_nodes, n_bins))


def _bc(codes, rows, node, w, n_nodes, n_bins):
    return np.asarray(_bincount.build_histograms(NP, codes, rows, node, w, n_nodes, n_bins))


def _nb(codes, rows, node, w, n_nodes, n_bins):
    pytest.importorskip("numba")
    from gputrees.kernels import cpu

    return cpu.histograms.build_histograms(NP, codes, rows, node, w, n_nodes, n_bins, n_threads=2)


def _naive(codes, rows, node, w, n_nodes, n_bins):
    """Loop oracle: add each row's channels into (node, feature, code)."""
    n_features = codes.shape[1]
    out = np.zeros((n_nodes, n_features, n_bins, w.shape[1]))
    for i, r in enumerate(rows):
        for f in range(n_features):
            out[node[i], f, codes[r, f]] += w[i]
    return out


def _on_backend(conv, codes, rows, node, w, n_nodes, n_bins, kernel):
    c, r, nd, ww = conv(codes), conv(rows), conv(node), conv(w)
    xp = namespace_of(c)
    fn = _reference.build_histograms if kernel == "reference" else get_kernels(xp).build_histograms
    out = fn(xp, c, r, nd, ww, n_nodes, n_bins)
    return to_numpy(out)


INT_CHANNELS = ["count", "int", "onehot"]

CASES = {
    "default": {},
    "no_missing": {"missing_frac": 0.0},
    "all_missing": {"missing_frac": 1.0},
    "single_row": {"n_samples": 7, "n_rows": 1},
    "many_nodes": {"n_samples": 2000, "n_nodes": 300, "n_bins": 20},
    "repeated_rows": {"n_samples": 30, "n_rows": 400, "repeat_rows": True},
    "two_bins": {"n_bins": 2},
    "uint16_codes": {"n_bins": 300, "n_samples": 1500},
    "one_feature": {"n_features": 1},
    "more_nodes_than_rows": {"n_samples": 10, "n_nodes": 40},
}


# ---------------------------------------------------------------------------
# kernel vs kernel
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("fast", [_bc, _nb], ids=["bincount", "numba"])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("channels", INT_CHANNELS)
def test_fast_equals_reference_exactly_integer_channels(case, channels, fast):
    args = _make_case(0, channels=channels, **CASES[case])
    ref = _ref(*args)
    bc = fast(*args)
    assert ref.shape == bc.shape == (args[4], args[0].shape[1], args[5], args[3].shape[1])
    assert ref.dtype == bc.dtype == np.float64
    assert np.array_equal(ref, bc)


@pytest.mark.parametrize("case", list(CASES))
def test_bincount_close_to_reference_float_channels(case):
    args = _make_case(1, channels="float", **CASES[case])
    np.testing.assert_allclose(_bc(*args), _ref(*args), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", list(CASES))
def test_numba_equals_bincount_bit_for_bit_float_channels(case):
    """Both sum each bin in row order: the same float64 result, whatever the thread count."""
    args = _make_case(1, channels="float", **CASES[case])
    assert np.array_equal(_nb(*args), _bc(*args))


@pytest.mark.parametrize("case", ["default", "single_row", "repeated_rows", "more_nodes_than_rows"])
@pytest.mark.parametrize("channels", INT_CHANNELS)
def test_reference_equals_naive_loop(case, channels):
    args = _make_case(2, channels=channels, **CASES[case])
    assert np.array_equal(_ref(*args), _naive(*args))


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("channels", INT_CHANNELS)
@pytest.mark.parametrize("kernel", ["reference", "auto"])
def test_backend_equals_numpy_exactly_integer_channels(backend, case, channels, kernel):
    """The reference kernel (and the backend's own kernel) on any backend == NumPy reference."""
    _, _, conv = backend
    args = _make_case(3, channels=channels, **CASES[case])
    out = _on_backend(conv, *args, kernel=kernel)
    assert out.dtype == np.float64
    assert np.array_equal(out, _ref(*args))


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("kernel", ["reference", "auto"])
def test_backend_close_to_numpy_float_channels(backend, case, kernel):
    _, _, conv = backend
    args = _make_case(4, channels="float", **CASES[case])
    np.testing.assert_allclose(_on_backend(conv, *args, kernel=kernel), _ref(*args), rtol=1e-12, atol=1e-12)


def test_get_kernels_choice():
    import array_api_strict as xs

    from gputrees.kernels import numba_available

    assert get_kernels(NP).name == ("numba" if numba_available() else "bincount")
    assert get_kernels(NP, "bincount").name == "bincount"
    assert get_kernels(xs).name == "reference"
    assert get_kernels(NP, "reference").name == "reference"
    with pytest.raises(ValueError, match="bincount"):
        get_kernels(xs, "bincount")
    with pytest.raises(ValueError, match="kernels must be one of"):
        get_kernels(NP, "fast")


# ---------------------------------------------------------------------------
# structural properties
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("build", [_ref, _bc, _nb], ids=["reference", "bincount", "numba"])
def test_empty_nodes_are_zero(build):
    codes, rows, node, w, _, n_bins = _make_case(5, channels="onehot")
    n_nodes = 6
    node = np.array([0, 2, 5], dtype=np.int64)[node % 3]  # slots 1, 3, 4 stay empty
    hist = build(codes, rows, node, w, n_nodes, n_bins)
    for slot in (1, 3, 4):
        assert np.array_equal(hist[slot], np.zeros_like(hist[slot]))
        # exact zeros, not -0.0 or tiny differences of prefix sums
        assert not np.signbit(hist[slot]).any()
    for slot in (0, 2, 5):
        assert hist[slot, 0, :, 0].sum() > 0


@pytest.mark.parametrize("build", [_ref, _bc, _nb], ids=["reference", "bincount", "numba"])
def test_no_rows_at_all(build):
    codes = np.zeros((5, 3), dtype=np.uint8)
    rows = np.zeros(0, dtype=np.int64)
    node = np.zeros(0, dtype=np.int64)
    w = np.zeros((0, 2))
    hist = build(codes, rows, node, w, 4, 6)
    assert hist.shape == (4, 3, 6, 2)
    assert np.array_equal(hist, np.zeros((4, 3, 6, 2)))


@pytest.mark.parametrize("build", [_ref, _bc, _nb], ids=["reference", "bincount", "numba"])
def test_single_row_hand_made(build):
    codes = np.array([[0, 3, 4], [2, 1, 0]], dtype=np.uint8)  # 4 is the missing bin
    rows = np.array([1], dtype=np.int64)
    node = np.array([1], dtype=np.int64)
    w = np.array([[1.0, 2.0, -3.0]])
    hist = build(codes, rows, node, w, 2, 5)
    expected = np.zeros((2, 3, 5, 3))
    expected[1, 0, 2] = w[0]
    expected[1, 1, 1] = w[0]
    expected[1, 2, 0] = w[0]
    assert np.array_equal(hist, expected)


@pytest.mark.parametrize("build", [_ref, _bc, _nb], ids=["reference", "bincount", "numba"])
def test_hand_made_small(build):
    # 4 samples, 2 features, bins 0..2 plus missing bin 3
    codes = np.array([[0, 3], [1, 1], [1, 0], [2, 3]], dtype=np.uint8)
    rows = np.array([0, 1, 2, 3, 1], dtype=np.int64)  # sample 1 twice
    node = np.array([0, 0, 1, 1, 1], dtype=np.int64)
    w = np.array([[1, 1, 0], [1, 0, 1], [1, 1, 0], [1, 0, 1], [1, 0, 1]], dtype=np.float64)
    hist = build(codes, rows, node, w, 2, 4)
    exp = np.zeros((2, 2, 4, 3))
    # node 0: samples 0 and 1
    exp[0, 0, 0] = [1, 1, 0]
    exp[0, 0, 1] = [1, 0, 1]
    exp[0, 1, 3] = [1, 1, 0]
    exp[0, 1, 1] = [1, 0, 1]
    # node 1: samples 2, 3, 1
    exp[1, 0, 1] = [2, 1, 1]
    exp[1, 0, 2] = [1, 0, 1]
    exp[1, 1, 0] = [1, 1, 0]
    exp[1, 1, 3] = [1, 0, 1]
    exp[1, 1, 1] = [1, 0, 1]
    assert np.array_equal(hist, exp)


@pytest.mark.parametrize("build", [_ref, _bc, _nb], ids=["reference", "bincount", "numba"])
def test_repeated_row_in_several_slots(build):
    """The same row in several slots (a batch of trees) counts once in each slot."""
    codes, _, _, _, _, n_bins = _make_case(6, n_samples=20)
    rows = np.repeat(np.arange(20, dtype=np.int64), 3)
    node = np.tile(np.arange(3, dtype=np.int64), 20)
    w = np.ones((rows.shape[0], 1))
    hist = build(codes, rows, node, w, 3, n_bins)
    assert np.array_equal(hist[0], hist[1])
    assert np.array_equal(hist[0], hist[2])
    single = build(codes, np.arange(20, dtype=np.int64), np.zeros(20, dtype=np.int64), np.ones((20, 1)), 1, n_bins)
    assert np.array_equal(hist[0], single[0])
    # the same row several times in one slot: multiplicity
    rows2 = np.r_[np.arange(20), np.arange(20)].astype(np.int64)
    doubled = build(codes, rows2, np.zeros(40, dtype=np.int64), np.ones((40, 1)), 1, n_bins)
    assert np.array_equal(doubled, 2 * single)


@pytest.mark.parametrize("build", [_ref, _bc, _nb], ids=["reference", "bincount", "numba"])
@pytest.mark.parametrize("channels", ["count", "int", "onehot", "float"])
def test_sum_over_bins_equals_node_stats(build, channels):
    codes, rows, node, w, n_nodes, n_bins = _make_case(7, channels=channels, n_nodes=5)
    hist = build(codes, rows, node, w, n_nodes, n_bins)
    for k in range(n_nodes):
        stats = w[node == k].sum(axis=0)
        per_feature = hist[k].sum(axis=1)  # (n_features, n_channels)
        for f in range(codes.shape[1]):
            if channels == "float":
                np.testing.assert_allclose(per_feature[f], stats, rtol=1e-12, atol=1e-12)
            else:
                assert np.array_equal(per_feature[f], stats)
        # the count channel per bin is the number of the node's rows with that code
        for f in range(codes.shape[1]):
            counts = np.bincount(codes[rows[node == k], f].astype(np.int64), minlength=n_bins)
            assert np.array_equal(hist[k, f, :, 0], counts.astype(np.float64))


@pytest.mark.parametrize("build", [_ref, _bc, _nb], ids=["reference", "bincount", "numba"])
@pytest.mark.parametrize("channels", INT_CHANNELS)
def test_subtraction_trick_exact(build, channels):
    """hist(parent) - hist(left child) == hist(right child), exactly, for integer channels."""
    codes, rows, _, w, _, n_bins = _make_case(8, channels=channels, n_samples=500)
    rng = np.random.default_rng(9)
    go_left = rng.random(rows.shape[0]) < 0.3
    parent = build(codes, rows, np.zeros_like(rows), w, 1, n_bins)[0]
    left = build(codes, rows[go_left], np.zeros(go_left.sum(), dtype=np.int64), w[go_left], 1, n_bins)[0]
    right = build(codes, rows[~go_left], np.zeros((~go_left).sum(), dtype=np.int64), w[~go_left], 1, n_bins)[0]
    assert np.array_equal(parent - left, right)
    # and both children in one call, as slots 0 and 1
    both = build(codes, rows, (~go_left).astype(np.int64), w, 2, n_bins)
    assert np.array_equal(both[0], left)
    assert np.array_equal(both[1], right)


def test_subtraction_trick_exact_on_backend(backend):
    _, _, conv = backend
    codes, rows, _, w, _, n_bins = _make_case(10, channels="onehot", n_samples=300)
    side = (np.random.default_rng(11).random(rows.shape[0]) < 0.5).astype(np.int64)
    zeros = np.zeros_like(rows)
    parent = _on_backend(conv, codes, rows, zeros, w, 1, n_bins, kernel="reference")[0]
    both = _on_backend(conv, codes, rows, side, w, 2, n_bins, kernel="reference")
    assert np.array_equal(parent - both[0], both[1])
    assert np.array_equal(parent - both[1], both[0])


# ---------------------------------------------------------------------------
# randomized property test
# ---------------------------------------------------------------------------


@st.composite
def _hist_inputs(draw):
    n_samples = draw(st.integers(1, 12))
    n_features = draw(st.integers(1, 4))
    n_bins = draw(st.integers(2, 6))
    n_rows = draw(st.integers(0, 20))
    n_nodes = draw(st.integers(1, 5))
    n_channels = draw(st.integers(1, 3))
    codes = draw(
        hnp.arrays(np.uint8, (n_samples, n_features), elements=st.integers(0, n_bins - 1))
    )
    rows = draw(hnp.arrays(np.int64, (n_rows,), elements=st.integers(0, n_samples - 1)))
    node = draw(hnp.arrays(np.int64, (n_rows,), elements=st.integers(0, n_nodes - 1)))
    # integer-valued channels (counts, integer weights, signed integer targets)
    w = draw(hnp.arrays(np.float64, (n_rows, n_channels), elements=st.integers(-1000, 1000).map(float)))
    return codes, rows, node, w, n_nodes, n_bins


@settings(max_examples=50, deadline=None)
@given(_hist_inputs())
def test_property_kernels_agree_exactly(args):
    ref = _ref(*args)
    assert np.array_equal(ref, _bc(*args))
    assert np.array_equal(ref, _naive(*args))
    import array_api_strict as xs

    conv = lambda a: xs.asarray(np.asarray(a))  # noqa: E731
    assert np.array_equal(_on_backend(conv, *args, kernel="reference"), ref)


# ---------------------------------------------------------------------------
# float accuracy against an exactly rounded sum
# ---------------------------------------------------------------------------


def _fsum_oracle(codes, rows, node, w, n_nodes, n_bins):
    """Correctly rounded per-bin sums (math.fsum)."""
    import math

    n_features = codes.shape[1]
    out = np.zeros((n_nodes, n_features, n_bins, w.shape[1]))
    buckets = {}
    for i, r in enumerate(rows):
        for f in range(n_features):
            buckets.setdefault((int(node[i]), f, int(codes[r, f])), []).append(i)
    for key, idx in buckets.items():
        out[key] = [math.fsum(w[idx, c]) for c in range(w.shape[1])]
    return out


@pytest.mark.parametrize("case", ["default", "many_nodes", "uint16_codes", "repeated_rows"])
@pytest.mark.parametrize("build", [_ref, _bc, _nb], ids=["reference", "bincount", "numba"])
def test_float_channels_close_to_exact_sums(build, case):
    """Every bin equals the correctly rounded sum of its rows to rtol=1e-12."""
    args = _make_case(12, channels="float", **CASES[case])
    np.testing.assert_allclose(build(*args), _fsum_oracle(*args), rtol=1e-12, atol=0)


@pytest.mark.parametrize("build", [_ref, _bc, _nb], ids=["reference", "bincount", "numba"])
def test_small_bin_next_to_large_bin(build):
    """A bin's sum must not depend on the magnitude of the other bins."""
    codes = np.array([[0], [1], [1]], dtype=np.uint8)
    rows = np.array([0, 1, 2], dtype=np.int64)
    node = np.zeros(3, dtype=np.int64)
    w = np.array([[1.0, 1e8], [1.0, 1e-8], [1.0, 2e-8]])
    hist = build(codes, rows, node, w, 1, 3)
    assert np.array_equal(hist[0, 0, :, 0], [1.0, 2.0, 0.0])
    np.testing.assert_allclose(hist[0, 0, :, 1], [1e8, 3e-8, 0.0], rtol=1e-12, atol=0)


@pytest.mark.parametrize("build", [_ref, _bc, _nb], ids=["reference", "bincount", "numba"])
def test_integer_bins_exact_whatever_the_other_bins(build):
    """Integer channel sums are exact per bin even when the total is not representable."""
    codes = np.array([[0], [1]], dtype=np.uint8)
    rows = np.array([0, 1], dtype=np.int64)
    node = np.zeros(2, dtype=np.int64)
    w = np.array([[2.0**53], [1.0]])
    hist = build(codes, rows, node, w, 1, 3)
    assert np.array_equal(hist[0, 0, :, 0], [2.0**53, 1.0, 0.0])
