"""Forests' bootstrap counts by counter-based draws (``Kernels.bootstrap_counts``): every CPU set makes the same
counts, each tree's sum to its draws, the draws are the scalar rule's and uniform over the rows, and a forest's
samples are those counts.

The cuda set's kernel is compared with these in numba-cuda's simulator
(tests/cuda_sim/test_cuda_bootstrap.py) and compiled for a GPU by
tests/test_cuda_compiles.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from estimator_zoo import available_kernels
from gputrees import RandomForestClassifier, RandomForestRegressor
from gputrees._backend import namespace_of
from gputrees.kernels import get_kernels, reference, rules

NP = namespace_of(np.empty(0))
CPU_SETS = [name for name in available_kernels() if name != "cuda"]
# (seed, first tree, trees, rows, draws): one row, one draw, fewer and as many draws as rows, a seed past 2^63
CASES = [(0, 0, 3, 1, 1), (7, 5, 4, 50, 50), (123456789, 0, 2, 1000, 300), (2**64 - 1, 97, 3, 257, 700),
         (2**31 - 2, 3, 2, 20_000, 20_000)]


def _counts(name, case):
    return get_kernels(NP, name).bootstrap_counts(NP, *case)


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c[3:])))
def test_every_cpu_set_makes_the_same_counts(case):
    seed, first, n_trees, n, n_draw = case
    want = _counts("reference", case)
    assert want.shape == (n_trees, n) and want.dtype == np.float64
    np.testing.assert_array_equal(want.sum(axis=1), np.full(n_trees, float(n_draw)))
    assert np.all(want == np.round(want)) and np.all(want >= 0)
    for name in CPU_SETS:
        np.testing.assert_array_equal(_counts(name, case), want, err_msg=name)


def test_counts_are_the_scalar_rule_of_each_draw():
    """The array draws are :func:`rules.sample_row` of :func:`rules.sample_key`, run as Python and compiled."""
    seed, first, n = 2024, 11, 37
    keys = reference.sample_keys(seed, first, 3)
    rows = np.stack([reference.bootstrap_rows(np, keys[t : t + 1], n, 25) for t in range(3)])
    with np.errstate(over="ignore"):  # NumPy's uint64 scalars warn where the mixing wraps, as it should
        for t in range(3):
            key = rules.sample_key(np.uint64(seed), first + t)
            assert key == keys[t]
            assert [rules.sample_row(key, j, n) for j in range(25)] == rows[t].tolist()
    if "numba" in CPU_SETS:
        from gputrees.kernels.cpu.jit import compiled_rule

        key_of, row_of = compiled_rule("sample_key"), compiled_rule("sample_row")
        for t in range(3):
            key = np.uint64(key_of(np.uint64(seed), np.int64(first + t)))  # (returned as a Python int)
            assert key == keys[t]
            assert [row_of(key, np.int64(j), np.int64(n)) for j in range(25)] == rows[t].tolist()
    counts = reference.bootstrap_counts(NP, seed, first, 3, n, 25)
    for t in range(3):
        np.testing.assert_array_equal(counts[t], np.bincount(rows[t], minlength=n))


def test_a_tree_draws_the_same_whatever_its_batch():
    whole = reference.bootstrap_counts(NP, 5, 0, 6, 300, 300)
    for first in range(6):
        np.testing.assert_array_equal(reference.bootstrap_counts(NP, 5, first, 1, 300, 300)[0], whole[first])
    assert len({tuple(c) for c in whole}) == 6  # and the trees' samples differ
    assert not np.array_equal(reference.bootstrap_counts(NP, 6, 0, 6, 300, 300), whole)  # as the seeds' do


def test_draws_are_uniform_over_the_rows():
    """Chi-square of the rows' total counts (fixed seed: not flaky), and the in-bag share of a bootstrap."""
    n = 64
    counts = _counts(CPU_SETS[-1], (31337, 0, 400, n, 1000))  # 400,000 draws, 6,250 a row expected
    total = counts.sum(axis=0)
    chi2 = float(np.sum((total - total.mean()) ** 2 / total.mean()))
    assert chi2 < stats.chi2.ppf(0.999, n - 1), chi2
    # every row's count in a tree is Binomial(1000, 1/64): the trees' counts of row 0 have its mean and variance
    assert abs(counts[:, 0].mean() - 1000 / n) < 4 * np.sqrt(1000 / n / 400)
    # n draws of n rows leave 1 - (1 - 1/n)^n ~ 63.2% of the rows in the bag
    inbag = (_counts(CPU_SETS[-1], (1, 0, 4, 20_000, 20_000)) > 0).mean(axis=1)
    assert np.all(np.abs(inbag - (1 - (1 - 1 / 20_000) ** 20_000)) < 0.01), inbag


@pytest.mark.filterwarnings("ignore:Some inputs do not have OOB scores:UserWarning")  # 5 trees
@pytest.mark.parametrize("Forest", [RandomForestClassifier, RandomForestRegressor])
def test_forests_grow_on_the_kernel_sets_counts(Forest, monkeypatch):
    """A fit's multiplicities are its kernel set's counts (any set: the same forest), OOB included."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 4))
    y = (X[:, 0] > 0).astype(np.int64) if Forest is RandomForestClassifier else X[:, 0] + rng.normal(size=150)
    kw = dict(n_estimators=5, max_depth=4, max_samples=0.7, oob_score=True, random_state=3, batch_size=2)
    fits = {}
    for name in CPU_SETS:
        monkeypatch.setenv("GPUTREES_KERNELS", name)
        fits[name] = Forest(**kw).fit(X, y)
    ref = fits[CPU_SETS[0]]
    want = get_kernels(NP, "reference").bootstrap_counts(NP, ref._seed, 0, 5, 150, 105)
    for t in range(5):
        np.testing.assert_array_equal(ref._tree_sample(t, 150, 4)[0], want[t])
        # a tree's root holds its distinct in-bag rows
        assert ref.estimators_[t].tree_.n_node_samples[0] == np.count_nonzero(want[t])
        assert ref.estimators_[t].tree_.weighted_n_node_samples[0] == 105
    for name, fit in fits.items():
        np.testing.assert_array_equal(fit.apply(X), ref.apply(X), err_msg=name)
        assert fit.oob_score_ == ref.oob_score_, name


def test_balanced_subsample_weights_come_from_the_counts():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + rng.normal(size=200) > 1.0).astype(np.int64)  # about 1 in 6 positive
    forest = RandomForestClassifier(n_estimators=3, max_depth=2, class_weight="balanced_subsample",
                                    random_state=1).fit(X, y)
    for t in range(3):
        counts = forest._tree_sample(t, 200, 3)[0]
        assert len({counts[y == c].sum() for c in (0, 1)}) == 2  # the classes' shares of the bag differ
        # "balanced" on the bag: each class weighs half of its 200 draws at the root
        root = forest.estimators_[t].tree_
        np.testing.assert_allclose(root.value[0, 0], [0.5, 0.5], rtol=1e-12)
        assert root.weighted_n_node_samples[0] == pytest.approx(200.0, rel=1e-12)
