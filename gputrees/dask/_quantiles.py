"""Weighted quantiles of values spread over the workers, searched by the driver without moving the rows.

:func:`gputrees._loss.weighted_quantiles` on one machine sorts a segment's
values and takes the first whose cumulative weight reaches ``alpha`` times
the segment's weight (less a 1e-12 relative slack). Here every worker sorts
its own values by segment (:meth:`gputrees.dask._shard.Shard.quantile_start`)
and the driver narrows, for all segments at once, an interval ``(lo, hi]``
known to hold the answer: the workers report the values left in it (count,
smallest, largest, middle one), the driver takes a pivot among them and asks
for the weight at or below it; the answer is the value left when the
interval holds one distinct value. Each step removes at least one distinct
value and, with the middle values as pivots, about half of them: some
tens of exchanges for a million rows.
"""

from __future__ import annotations

import numpy as np

#: The relative slack of the target weight (gputrees._loss.weighted_quantiles' rule)
SLACK = 1e-12


def dask_weighted_quantiles(shards, source: str, n_seg: int, alpha: float):
    """The weighted ``alpha``-quantile of each segment's values over the shards ((n_seg,) float64; 0 for a
    segment without weight). ``source``: see :meth:`gputrees.dask._shard.Shard.quantile_start`."""
    totals = np.sum(shards.call("quantile_start", source, n_seg), axis=0)
    target = alpha * totals * (1.0 - SLACK)
    lo = np.full(n_seg, -np.inf)
    hi = np.full(n_seg, np.inf)
    out = np.zeros(n_seg, dtype=np.float64)
    todo = totals > 0
    while np.any(todo):
        ranges = np.stack(shards.call("quantile_range", lo, hi))  # (shards, 4, n_seg)
        count, smallest, largest = ranges[:, 0, :], ranges[:, 1, :].min(axis=0), ranges[:, 2, :].max(axis=0)
        one_value = todo & (smallest == largest)
        out[one_value] = smallest[one_value]
        todo &= ~one_value
        if not np.any(todo):
            break
        # the middle value of the shard holding most of the interval; below its largest value, so that a
        # step always removes some
        pivot = ranges[np.argmax(count, axis=0), 3, np.arange(n_seg)]
        pivot = np.where(todo & (pivot < largest), pivot, smallest)
        below = np.sum(shards.call("quantile_weight_below", pivot), axis=0)
        reached = below >= target
        hi = np.where(todo & reached, pivot, hi)
        lo = np.where(todo & ~reached, pivot, lo)
    return out
