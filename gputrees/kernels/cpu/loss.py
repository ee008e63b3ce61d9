"""A boosting round's end in a few compiled passes (Numba): new raw predictions, the loss, the next gradients.

After a round's tree is grown, the generic code (:func:`gputrees.kernels.reference.round_end`)
makes several passes over the rows: gather every row's leaf value and add it
to the raw predictions, the per-row loss and its weighted mean (the round's
``train_score_``), and, at the next round's start, the gradients, hessians
and the channel table ``[1, g, h]``. Each is a NumPy pass with temporaries,
together about a tenth of a large fit's round. :func:`round_end` does them
in parallel passes over blocks of rows,
for the losses whose formulas it carries: half squared error (one pass),
binary log-loss (three passes around NumPy's vectorised ``exp``) and the
multinomial log-loss (two passes around NumPy's ``exp`` and row sums, whose
table of K trees' channels has no column sums); any other loss takes the
generic path.

The raw predictions, gradients and hessians equal the generic ones bit for
bit (the same operations on the same numbers: log-loss's ``exp(-raw)`` is
NumPy's, as the generic code's), so a fit grows the same trees with either.
The loss (``train_score_``) equals it to rounding: the weighted sums are
per-block sums added in block order (NumPy's are pairwise), and log-loss's
``log1p(exp(-|raw|))`` term is a compiled series within 3 ulps of NumPy's
``log1p`` (:func:`_log1p_unit`), with ``exp(r) = 1 / exp(-r)`` for ``r < 0``.

The same passes sum the new channels by blocks, in block order: the next
tree's root statistics (``GrowerInputs.channel_sums``), which the tree then
takes instead of summing every row in row order, a serial chain of
additions while the other threads wait. They equal the row-order sums to
rounding, so a tree's statistics equal the generic path's to rounding and
its splits are the same wherever no two candidates' gains lie within
rounding of each other.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from ..._records import LOSS_BINARY_LOG, LOSS_MULTINOMIAL, LOSS_SQUARED_ERROR, loss_code
from ..rules import MIN_HESSIAN, SEQUENTIAL_ROW_SUM
from .. import reference
from .jit import JIT, Threads, serial_twin, threads_for

#: Elementary updates (see ``jit.MIN_WORK_PER_THREAD``) a row of one of
#: these passes counts for when choosing their threads: a row takes about as
#: long as one or two histogram updates (log-loss's channel pass the most)
ROW_WORK = 2
#: Rows x classes below which a multi-class round's end runs on one thread: the round's trees, grown next side
#: by side on the fit's threads, would share the cores with the end's OpenMP workers spinning idle after it
MULTINOMIAL_THREADED_CELLS = 1 << 17
#: Rows per block: a block's loss sums are one thread's, and the blocks' are
#: added in block order, so the result does not depend on the thread count
_BLOCK = 1 << 14


@numba.njit(inline="always")
def _block(b, n, n_blocks):
    """Bounds of block ``b``'s rows as unsigned integers.

    An index of an unsigned type skips Numba's negative-index mapping
    (``memory._unchecked``), which would keep these passes from being vectorised.
    """
    return np.uint64(b * n // n_blocks), np.uint64((b + 1) * n // n_blocks)


@numba.njit(parallel=True, **JIT)
def _squared_error_end(raw, values, leaf, y, w, table, n_blocks):
    """Half squared error: ``raw`` (n,) updated in place, ``table`` (n, 3) = [1, g, h]; returns the blocks' sums.

    Returns (n_blocks, 4): sums of ``w * loss``, of ``w`` and of the new ``g`` and ``h`` per block (``h`` is
    ``w``: its sum is the same sum).
    """
    n = raw.shape[0]
    part = np.zeros((n_blocks, 4))
    for b in prange(n_blocks):
        sl = 0.0
        sw = 0.0
        sg = 0.0
        for i in range(*_block(b, n, n_blocks)):
            r = raw[i] + values[leaf[i]]
            raw[i] = r
            d = r - y[i]
            wi = w[i]
            g = d * wi
            sl += 0.5 * d * d * wi
            sw += wi
            sg += g
            table[i, 0] = 1.0
            table[i, 1] = g
            table[i, 2] = wi
        part[b, 0] = sl
        part[b, 1] = sw
        part[b, 2] = sg
        part[b, 3] = sw
    return part


@numba.njit(parallel=True, **JIT)
def _add_leaf_values(raw, values, leaf, neg, n_blocks):
    """``raw`` (n,) += its leaf's value, in place; ``neg`` (n,) = -raw."""
    n = raw.shape[0]
    for b in prange(n_blocks):
        for i in range(*_block(b, n, n_blocks)):
            r = raw[i] + values[leaf[i]]
            raw[i] = r
            neg[i] = -r


#: ``log(2)`` and ``sqrt(2) - 1``, the range reduction of :func:`_log1p_unit`
_LN2 = math.log(2.0)
_SQRT2_M1 = math.sqrt(2.0) - 1.0
#: ``2 / (2 k + 1)``, k = 0 .. 11: ``log1p(t) = 2 atanh(s)`` as a series in
#: ``s``, whose twelfth term is below 2^-53 of the first for ``|s| <= 0.172``
_ATANH2 = tuple(2.0 / (2 * k + 1) for k in range(12))
#: Fast-math flags of the loss's log term (:func:`_log1p_sums`): reassociation
#: lets the compiler reorder (and so vectorise) the block's sum, contraction
#: fuses multiply-adds; none that assumes finite values (``exp(-raw)`` may be inf)
_LOSS_FASTMATH = {"reassoc", "contract"}


@numba.njit(inline="always", fastmath=_LOSS_FASTMATH)
def _log1p_unit(t):
    """``log1p(t)`` for ``t`` in [0, 1], within 3 ulps (NumPy's ``log1p``: 0.8; checked on 3M values).

    ``log1p(t) = 2 atanh(t / (2 + t))``; past ``sqrt(2) - 1``,
    ``log(2) + 2 atanh((t - 1) / (t + 3))``; either way ``|s| <= 0.172`` and
    twelve terms of the series: a polynomial and a division, no call.
    """
    big = t > _SQRT2_M1
    s = (t - 1.0 if big else t) / (t + 3.0 if big else t + 2.0)
    z = s * s
    c = _ATANH2
    # Horner's rule written out: a loop over the tuple indexed it at run time
    p = c[10] + z * c[11]
    p = c[9] + z * p
    p = c[8] + z * p
    p = c[7] + z * p
    p = c[6] + z * p
    p = c[5] + z * p
    p = c[4] + z * p
    p = c[3] + z * p
    p = c[2] + z * p
    p = c[1] + z * p
    p = c[0] + z * p
    return s * p + (_LN2 if big else 0.0)


@numba.njit(parallel=True, fastmath=_LOSS_FASTMATH, **JIT)
def _log1p_sums(raw, e, w, n_blocks):
    """(n_blocks,) sums of ``w * log1p(exp(-|raw|))`` per block, from ``e`` = exp(-raw) (n,).

    ``exp(-|raw|)`` is ``e`` or ``1 / e`` (0 where ``e`` overflowed). In place
    of NumPy's ``log`` of ``1 + exp(-|raw|)`` and a weighted sum, passes with
    temporaries on one thread.
    """
    n = raw.shape[0]
    out = np.zeros(n_blocks)
    for b in prange(n_blocks):
        s = 0.0
        for i in range(*_block(b, n, n_blocks)):
            ei = e[i]
            s += _log1p_unit(ei if raw[i] >= 0.0 else 1.0 / ei) * w[i]
        out[b] = s
    return out


@numba.njit(parallel=True, **JIT)
def _logistic_channels(raw, e, y, w, table, n_blocks):
    """Binary log-loss's [1, g, h] into ``table`` (n, 3) from ``e`` = exp(-raw).

    ``p = 1 / (1 + e)``, ``g = (p - y) w`` and ``h = max(p (1 - p),
    MIN_HESSIAN) w`` are the generic loss's operations on the same numbers
    (bit for bit). Returns (n_blocks, 2): the sums of ``w * (max(raw, 0) -
    y raw)`` (the loss but its ``log1p(exp(-|raw|))`` term,
    :func:`_log1p_sums`), of ``w``, of ``g`` and of ``h`` per block (n_blocks, 4).
    """
    n = raw.shape[0]
    part = np.zeros((n_blocks, 4))
    for b in prange(n_blocks):
        sl = 0.0
        sw = 0.0
        sg = 0.0
        sh = 0.0
        for i in range(*_block(b, n, n_blocks)):
            r = raw[i]
            ei = e[i]
            wi = w[i]
            yi = y[i]
            p = 1.0 / (1.0 + ei)
            g = (p - yi) * wi
            hi = max(p * (1.0 - p), MIN_HESSIAN) * wi
            sl += (max(r, 0.0) - yi * r) * wi
            sw += wi
            sg += g
            sh += hi
            table[i, 0] = 1.0
            table[i, 1] = g
            table[i, 2] = hi
        part[b, 0] = sl
        part[b, 1] = sw
        part[b, 2] = sg
        part[b, 3] = sh
    return part


@numba.njit(parallel=True, **JIT)
def _softmax_shift(raw, values, leaf, e, top, n_blocks):
    """``raw`` (n, K) += each tree's leaf value, in place; ``top`` (n,) = each row's largest; ``e`` = raw - top."""
    n, k_trees = raw.shape
    for b in prange(n_blocks):
        for i in range(*_block(b, n, n_blocks)):
            m = -np.inf
            for k in range(k_trees):
                r = raw[i, k] + values[k, leaf[k, i]]
                raw[i, k] = r
                m = max(m, r)
            top[i] = m
            for k in range(k_trees):
                e[i, k] = raw[i, k] - m


@numba.njit(parallel=True, **JIT)
def _softmax_channels(raw, e, s, top, y, w, table, n_blocks):
    """``table`` (K, n, 3) = ``[1, g, h]`` of the probabilities ``e / s`` (``e`` the shifted ``exp``, ``s`` its
    row sums, or empty: summed here in column order, as NumPy sums fewer than :data:`SEQUENTIAL_ROW_SUM`
    columns), as ``MultinomialLogLoss.gradients``; returns each block's sums of ``w * loss`` and ``w``
    (n_blocks, 2), the loss ``log(s) + top - raw[y]``."""
    n, k_trees = raw.shape
    own_sums = s.shape[0] == 0
    part = np.zeros((n_blocks, 2))
    for b in prange(n_blocks):
        sl = 0.0
        sw = 0.0
        for i in range(*_block(b, n, n_blocks)):
            wi = w[i]
            yi = np.int64(y[i])
            if own_sums:
                si = e[i, 0]
                for k in range(1, k_trees):
                    si += e[i, k]
            else:
                si = s[i]
            for k in range(k_trees):
                p = e[i, k] / si
                table[k, i, 0] = 1.0
                table[k, i, 1] = (p - (1.0 if k == yi else 0.0)) * wi
                table[k, i, 2] = max(p * (1.0 - p), MIN_HESSIAN) * wi
            sl += (math.log(si) + top[i] - raw[i, yi]) * wi
            sw += wi
        part[b, 0] = sl
        part[b, 1] = sw
    return part


def _multinomial_end(raw, values, row_leaf, y, w, table, n_threads):
    """:func:`round_end` of the multinomial log-loss: ``raw`` (n, K) updated in place, ``table`` (K, n, 3)
    written; returns the loss. The exponential and its row sums are NumPy's, as the generic gradients take
    them (so the gradients are theirs bit for bit)."""
    n = int(raw.shape[0])
    n_blocks = max(1, -(-n // _BLOCK))
    cells = n * int(raw.shape[1])
    threads = threads_for(n_threads, ROW_WORK * cells) if cells >= MULTINOMIAL_THREADED_CELLS else 1
    shift, channels = (_softmax_shift, _softmax_channels) if threads > 1 else (
        _SERIAL[_softmax_shift], _SERIAL[_softmax_channels])
    e = np.empty_like(raw)
    top = np.empty(n)
    with Threads(threads):
        shift(raw, np.ascontiguousarray(values, dtype=np.float64), np.ascontiguousarray(row_leaf, dtype=np.int64),
              e, top, n_blocks)
        np.exp(e, out=e)
        # NumPy sums a row of fewer columns in order (the kernel's loop: the same bits), more pairwise
        s = np.empty(0) if int(raw.shape[1]) < SEQUENTIAL_ROW_SUM else np.sum(e, axis=1)
        part = channels(raw, e, s, top, np.ascontiguousarray(y, dtype=np.float64),
                        np.ascontiguousarray(w, dtype=np.float64), table, n_blocks)
    return _in_order(part[:, 0]) / _in_order(part[:, 1])


#: Each pass's serial twin, for data too small for a second thread (see serial_twin)
_SERIAL = {k: serial_twin(k) for k in (_squared_error_end, _add_leaf_values, _log1p_sums, _logistic_channels,
                                       _softmax_shift, _softmax_channels)}


def round_end(xp, loss, raw, values, row_leaf, y, w, table, *, n_threads: int = 1):
    """:func:`gputrees.kernels.reference.round_end` in compiled passes (the reference's for a loss it does not
    carry: one without a code).

    ``raw`` is updated in place (the caller's array, returned). The fourth
    result, the channel table's column sums (3,) float64 ``[n, sum g, sum
    h]``, is each block's rows summed in order and the blocks in block order
    (the generic path returns None there: the grower then sums the rows).
    """
    kind = loss_code(loss)
    n, k_trees = int(raw.shape[0]), int(raw.shape[1])
    if kind is None or (k_trees != 1 and kind != LOSS_MULTINOMIAL):
        return reference.round_end(xp, loss, raw, values, row_leaf, y, w, table)
    if table is None or tuple(table.shape) != (k_trees, n, 3) or not table.flags.c_contiguous:
        table = np.empty((k_trees, n, 3), dtype=np.float64)
    if not (raw.flags.c_contiguous and raw.dtype == np.float64):
        raw = np.ascontiguousarray(raw, dtype=np.float64)
    if kind == LOSS_MULTINOMIAL:
        loss_value = _multinomial_end(raw, values, row_leaf, y, w, table, n_threads)
        # K trees' tables: no root sums (those are one tree's), the grower sums each tree's rows
        return raw, np.asarray(loss_value), table, None
    passes = EndPasses.new(kind, n, n_threads)
    loss_value, sums = passes(
        raw[:, 0], np.ascontiguousarray(values[0], dtype=np.float64), np.ascontiguousarray(row_leaf[0], dtype=np.int64),
        np.ascontiguousarray(y, dtype=np.float64), np.ascontiguousarray(w, dtype=np.float64), table[0],
    )
    return raw, loss_value, table, sums


class EndPasses:
    """:func:`round_end`'s compiled passes over arrays already checked, for one loss and row count.

    A boosting fit whose rounds run in few compiled calls
    (:mod:`gputrees.kernels.cpu.boost`) makes one for all of its rounds;
    :func:`round_end` makes one a call.

    Attributes
    ----------
    kind : int
        The loss' code (:func:`gputrees._records.loss_code`).
    threads : int
        Threads of the passes (the serial twins where 1).
    n_blocks : int
        Blocks of :data:`_BLOCK` rows (the loss sums' order).
    neg : (n,) float64
        Work space: ``-raw``, then ``exp(-raw)`` (log-loss).
    """

    __slots__ = ("kind", "threads", "n_blocks", "neg", "_passes")

    def __init__(self, kind: int, threads: int, n_blocks: int, neg: np.ndarray):
        self.kind, self.threads, self.n_blocks, self.neg = kind, threads, n_blocks, neg
        keys = (_squared_error_end,) if kind == LOSS_SQUARED_ERROR else (_add_leaf_values, _logistic_channels, _log1p_sums)
        self._passes = tuple(k if threads > 1 else _SERIAL[k] for k in keys)

    @classmethod
    def new(cls, kind: int, n: int, n_threads: int) -> "EndPasses":
        threads = threads_for(n_threads, ROW_WORK * n)
        return cls(kind, threads, max(1, -(-n // _BLOCK)), np.empty(n) if kind == LOSS_BINARY_LOG else np.empty(0))

    def __call__(self, r, v, leaf, y, w, table):
        """``r`` (n,) += ``v[leaf]`` in place; ``table`` (n, 3) = the next ``[1, g, h]``.

        Parameters
        ----------
        r : (n,) float64, C-contiguous (updated in place)
        v : (n_nodes,) float64 ; leaf : (n,) int64 ; y, w : (n,) float64, C-contiguous
        table : (n, 3) float64, C-contiguous (written over)

        Returns
        -------
        loss : float
            The weighted mean loss of the new ``r``.
        sums : (3,) float64
            ``[n, sum g, sum h]`` of the new table, by blocks in block order.
        """
        n_blocks = self.n_blocks
        with Threads(self.threads):
            if self.kind == LOSS_SQUARED_ERROR:
                part = self._passes[0](r, v, leaf, y, w, table, n_blocks)
                total_l = _in_order(part[:, 0])
            else:
                add, channels, log1p = self._passes
                e = self.neg
                add(r, v, leaf, e, n_blocks)  # e = -raw
                # the exponential by NumPy's vectorised loop, as the generic
                # gradients take it (on one thread faster than scalar calls
                # here on several)
                with np.errstate(over="ignore"):  # exp(-raw) = inf past raw = -709: p = 0, as intended
                    np.exp(e, out=e)
                part = channels(r, e, y, w, table, n_blocks)
                total_l = _in_order(part[:, 0]) + _in_order(log1p(r, e, w, n_blocks))
        # the table's column sums (the next tree's root statistics): each
        # block's rows in order, the blocks in block order (the count column is
        # 1 on every row: its sum is n, exactly)
        sums = np.array([float(r.shape[0]), _in_order(part[:, 2]), _in_order(part[:, 3])])
        return total_l / _in_order(part[:, 1]), sums


def _in_order(a):
    """Sum of a short array, first to last (not NumPy's pairwise order): the blocks' sums."""
    total = 0.0
    for x in a.tolist():
        total += x
    return total
