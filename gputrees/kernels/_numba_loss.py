"""A boosting round's end in a few compiled passes (Numba): new raw predictions, the loss, the next gradients.

After a round's tree is grown, the generic code (:func:`gputrees._boosting.round_end`)
makes several passes over the rows: gather every row's leaf value and add it
to the raw predictions, the per-row loss and its weighted mean (the round's
``train_score_``), and, at the next round's start, the gradients, hessians
and the channel table ``[1, g, h]``. Each is a NumPy pass with temporaries
(an 800k-row binary fit spent about 13 ms a round in them, a tenth of the
round). :func:`round_end` does them in parallel passes over blocks of rows,
for the single-output losses whose formulas it carries: half squared error
(one pass) and binary log-loss (three passes around NumPy's vectorised
``exp`` and ``log``); ``None`` for any other loss, the caller then takes the
generic path.

The raw predictions, gradients and hessians equal the generic ones bit for
bit (the same operations on the same numbers: log-loss's ``exp(-raw)`` is
NumPy's, as the generic code's), so a fit grows the same trees with either.
The loss (``train_score_``) equals it to rounding: the weighted sums are
per-block sums added in block order (NumPy's are pairwise), and log-loss's
``log1p(exp(-|raw|))`` term is ``log(1 + exp(-|raw|))``, at most half an ulp
of 1 (1.1e-16) away per row, with ``exp(r) = 1 / exp(-r)`` for ``r < 0``.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from .._loss import MIN_HESSIAN, BinaryLogLoss, SquaredError
from ._numba import _JIT, _Threads, _threads_for

__all__ = ["round_end", "LOSS_KINDS"]

#: Losses (their exact classes) with a compiled round end, and their kernel code
LOSS_KINDS = {SquaredError: 0, BinaryLogLoss: 1}
#: Rows per block: a block's loss sums are one thread's, and the blocks' are
#: added in block order, so the result does not depend on the thread count
_BLOCK = 1 << 14


@numba.njit(parallel=True, **_JIT)
def _squared_error_end(raw, values, leaf, y, w, table, n_blocks):
    """Half squared error: ``raw`` (n,) updated in place, ``table`` (n, 3) = [1, g, h]; returns the blocks' sums.

    Returns (n_blocks, 2): sum of ``w * loss`` and of ``w`` per block.
    """
    n = raw.shape[0]
    part = np.zeros((n_blocks, 2))
    for b in prange(n_blocks):
        sl = 0.0
        sw = 0.0
        for i in range(b * n // n_blocks, (b + 1) * n // n_blocks):
            r = raw[i] + values[leaf[i]]
            raw[i] = r
            d = r - y[i]
            wi = w[i]
            sl += 0.5 * d * d * wi
            sw += wi
            table[i, 0] = 1.0
            table[i, 1] = d * wi
            table[i, 2] = wi
        part[b, 0] = sl
        part[b, 1] = sw
    return part


@numba.njit(parallel=True, **_JIT)
def _add_leaf_values(raw, values, leaf, neg, n_blocks):
    """``raw`` (n,) += its leaf's value, in place; ``neg`` (n,) = -raw."""
    n = raw.shape[0]
    for b in prange(n_blocks):
        for i in range(b * n // n_blocks, (b + 1) * n // n_blocks):
            r = raw[i] + values[leaf[i]]
            raw[i] = r
            neg[i] = -r


@numba.njit(parallel=True, **_JIT)
def _logistic_channels(raw, e, y, w, table, n_blocks):
    """Binary log-loss's [1, g, h] into ``table`` (n, 3) from ``e`` = exp(-raw), which becomes ``1 + exp(-|raw|)``.

    ``p = 1 / (1 + e)``, ``g = (p - y) w`` and ``h = max(p (1 - p),
    MIN_HESSIAN) w`` are the generic loss's operations on the same numbers
    (bit for bit). Returns (n_blocks, 2): the sums of ``w * (max(raw, 0) -
    y raw)`` (the loss but its ``log(1 + exp(-|raw|))`` term) and of ``w``
    per block.
    """
    n = raw.shape[0]
    part = np.zeros((n_blocks, 2))
    for b in prange(n_blocks):
        sl = 0.0
        sw = 0.0
        for i in range(b * n // n_blocks, (b + 1) * n // n_blocks):
            r = raw[i]
            ei = e[i]
            wi = w[i]
            yi = y[i]
            p = 1.0 / (1.0 + ei)
            sl += (max(r, 0.0) - yi * r) * wi
            sw += wi
            table[i, 0] = 1.0
            table[i, 1] = (p - yi) * wi
            table[i, 2] = max(p * (1.0 - p), MIN_HESSIAN) * wi
            # exp(-|r|): exp(-r), or 1 / exp(-r) (0 where exp(-r) overflows)
            e[i] = 1.0 + (ei if r >= 0.0 else 1.0 / ei)
        part[b, 0] = sl
        part[b, 1] = sw
    return part


@numba.njit(parallel=True, **_JIT)
def _weighted_block_sums(a, w, n_blocks):
    """(n_blocks,) sums of ``a * w`` per block."""
    n = a.shape[0]
    out = np.zeros(n_blocks)
    for b in prange(n_blocks):
        s = 0.0
        for i in range(b * n // n_blocks, (b + 1) * n // n_blocks):
            s += a[i] * w[i]
        out[b] = s
    return out


def round_end(xp, loss, raw, values, row_leaf, y, w, table, *, n_threads: int = 1):
    """Same contract as :func:`gputrees._boosting.round_end`, or None for a loss it does not carry.

    ``raw`` is updated in place (the caller's array, returned).
    """
    kind = LOSS_KINDS.get(type(loss))
    if kind is None or int(raw.shape[1]) != 1:
        return None
    n = int(raw.shape[0])
    if table is None or tuple(table.shape) != (1, n, 3) or not table.flags.c_contiguous:
        table = np.empty((1, n, 3), dtype=np.float64)
    if not (raw.flags.c_contiguous and raw.dtype == np.float64):
        raw = np.ascontiguousarray(raw, dtype=np.float64)
    threads = _threads_for(n_threads, n)
    n_blocks = max(1, -(-n // _BLOCK))
    r = raw[:, 0]
    v = np.ascontiguousarray(values[0], dtype=np.float64)
    leaf = np.ascontiguousarray(row_leaf[0], dtype=np.int64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    w = np.ascontiguousarray(w, dtype=np.float64)
    with _Threads(threads):
        if kind == 0:
            part = _squared_error_end(r, v, leaf, y, w, table[0], n_blocks)
            total_l = _in_order(part[:, 0])
        else:
            # the exponential and the logarithm by NumPy's vectorised loops
            # (one thread, 5x faster than two threads of scalar calls here)
            e = np.empty(n)
            _add_leaf_values(r, v, leaf, e, n_blocks)  # e = -raw
            with np.errstate(over="ignore"):  # exp(-raw) = inf past raw = -709: p = 0, as intended
                np.exp(e, out=e)
            part = _logistic_channels(r, e, y, w, table[0], n_blocks)
            np.log(e, out=e)
            total_l = _in_order(part[:, 0]) + _in_order(_weighted_block_sums(e, w, n_blocks))
    return raw, total_l / _in_order(part[:, 1]), table


def _in_order(a):
    """Sum of a short array, first to last (not NumPy's pairwise order): the blocks' sums."""
    total = 0.0
    for x in a.tolist():
        total += x
    return total
