"""The compiled end of a boosting round (gputrees.kernels.cpu.loss) against the generic passes."""

from __future__ import annotations

import numpy as np
import pytest

from gputrees import _loss
from gputrees.kernels import reference
from gputrees._backend import namespace_of

pytest.importorskip("numba")
from gputrees.kernels import cpu  # noqa: E402

NP = namespace_of(np.empty(0))


def _inputs(n, seed, scale=1.0, binary=True):
    rng = np.random.default_rng(seed)
    raw = rng.standard_normal((n, 1)) * scale
    values = rng.standard_normal((1, 9)) * scale
    leaf = rng.integers(0, 9, (1, n)).astype(np.int64)
    y = (rng.random(n) < 0.4).astype(np.float64) if binary else rng.standard_normal(n) * 3
    w = rng.random(n) * 2
    w[rng.random(n) < 0.2] = 0.0  # rows that weigh nothing
    return raw, values, leaf, y, w


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("n", [1, 7, 16384, 40_000])
@pytest.mark.parametrize("case", ["log_loss", "log_loss_saturated", "squared_error"])
def test_round_end_equals_the_generic_passes(case, n, threads):
    """Raw predictions, gradients and hessians bit for bit; the loss to rounding; the table's count column 1."""
    loss = _loss.SquaredError() if case == "squared_error" else _loss.BinaryLogLoss()
    # saturated: |raw| up to hundreds, where p is 0 or 1 and the hessian floor applies
    raw, values, leaf, y, w = _inputs(n, n, 300.0 if case == "log_loss_saturated" else 1.0,
                                      binary=case != "squared_error")
    want_raw, want_loss, want_table, want_sums = reference.round_end(NP, loss, raw.copy(), values, leaf, y, w, None)
    got_raw, got_loss, got_table, got_sums = cpu.loss.round_end(
        NP, loss, raw.copy(), values, leaf, y, w, np.full((1, n, 3), np.nan), n_threads=threads
    )
    assert np.array_equal(got_raw, want_raw)
    np.testing.assert_allclose(got_loss, want_loss, rtol=1e-13, atol=1e-300)
    assert got_table.shape == (1, n, 3) and np.all(got_table[0, :, 0] == 1.0)
    assert np.array_equal(got_table, want_table)
    # the generic passes leave the sums to the grower; the compiled ones are the
    # table's blocks summed row by row, added in block order
    assert want_sums is None
    assert got_sums.shape == (3,) and got_sums.dtype == np.float64
    assert np.array_equal(got_sums, _block_sums(got_table[0]))
    np.testing.assert_allclose(got_sums, got_table[0].sum(axis=0), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("threads", [1, 3])
# k = 7 and 9: either side of the row length below which the compiled pass sums a row itself
@pytest.mark.parametrize("n, k, scale", [(1, 3, 1.0), (7, 5, 1.0), (40_000, 4, 1.0), (5000, 3, 400.0),
                                         (3000, 7, 3.0), (3000, 9, 3.0)])
def test_multinomial_round_end_equals_the_generic_passes(n, k, scale, threads):
    """K trees' raw predictions, gradients and hessians bit for bit (saturated rows too: p 0 or 1, the hessian
    floor); the loss to rounding; no root sums (each of the K trees sums its rows)."""
    rng = np.random.default_rng(n + k)
    loss = _loss.MultinomialLogLoss(k)
    raw = rng.standard_normal((n, k)) * scale
    values = rng.standard_normal((k, 9)) * scale
    leaf = rng.integers(0, 9, (k, n)).astype(np.int64)
    y = rng.integers(0, k, n).astype(np.float64)
    w = rng.random(n) * 2
    w[rng.random(n) < 0.2] = 0.0
    want_raw, want_loss, want_table, want_sums = reference.round_end(NP, loss, raw.copy(), values, leaf, y, w, None)
    got_raw, got_loss, got_table, got_sums = cpu.loss.round_end(
        NP, loss, raw.copy(), values, leaf, y, w, np.full((k, n, 3), np.nan), n_threads=threads)
    assert np.array_equal(got_raw, want_raw)
    assert np.array_equal(got_table, want_table)
    np.testing.assert_allclose(got_loss, want_loss, rtol=1e-12, atol=1e-300)
    assert got_sums is None and want_sums is None


def _block_sums(table):
    """Column sums of ``table`` (n, C) as the round end composes them: blocks of rows in order, then the blocks."""
    n = table.shape[0]
    n_blocks = max(1, -(-n // cpu.loss._BLOCK))
    total = np.zeros(table.shape[1])
    for b in range(n_blocks):
        block = np.zeros(table.shape[1])
        for row in table[b * n // n_blocks : (b + 1) * n // n_blocks]:
            block = block + row
        total = total + block
    return total


def test_round_end_updates_raw_in_place_and_reuses_the_table():
    loss = _loss.BinaryLogLoss()
    raw, values, leaf, y, w = _inputs(1000, 3)
    table = np.empty((1, 1000, 3))
    before = raw.copy()
    out_raw, _, out_table, _ = cpu.loss.round_end(NP, loss, raw, values, leaf, y, w, table)
    assert out_raw is raw and out_table is table
    assert np.array_equal(raw[:, 0], before[:, 0] + values[0, leaf[0]])


def test_round_end_results_do_not_depend_on_the_thread_count():
    loss = _loss.BinaryLogLoss()
    raw, values, leaf, y, w = _inputs(100_000, 4)
    outs = [cpu.loss.round_end(NP, loss, raw.copy(), values, leaf, y, w, None, n_threads=t) for t in (1, 2, 4)]
    for o in outs[1:]:
        assert o[1] == outs[0][1]
        assert np.array_equal(o[2], outs[0][2])
        assert np.array_equal(o[3], outs[0][3])


def test_round_end_leaves_other_losses_to_the_generic_passes(monkeypatch):
    raw, values, leaf, y, w = _inputs(50, 5)
    generic = object()
    monkeypatch.setattr(reference, "round_end", lambda *args: generic)
    for loss in (_loss.AbsoluteError(), _loss.Poisson(), _loss.Gamma()):
        assert cpu.loss.round_end(NP, loss, raw, values, leaf, y, w, None) is generic


def test_log1p_of_the_loss_is_within_three_ulps_of_numpys():
    """The compiled log1p(t), t in [0, 1] (the loss's log1p(exp(-|raw|))): both sides of its range reduction."""
    import numba

    @numba.njit
    def log1p_all(t, out):
        for i in range(t.shape[0]):
            out[i] = cpu.loss._log1p_unit(t[i])

    rng = np.random.default_rng(0)
    cut = np.sqrt(2.0) - 1.0
    t = np.concatenate([rng.random(200_000), np.exp(-rng.random(100_000) * 700.0),
                        [0.0, 1.0, cut, np.nextafter(cut, 0.0), np.nextafter(cut, 1.0), 1e-300, 2.0 ** -30]])
    got = np.empty_like(t)
    log1p_all(t, got)
    want = np.log1p(t)
    assert np.all(np.abs(got - want) <= 3 * np.spacing(want))
    assert got[-7] == 0.0 and got[-6] == np.log(2.0)
