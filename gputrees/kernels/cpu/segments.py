"""Segmented scans (running sums, maxima and minima within runs of equal keys) of the sort-based search.
"""

from __future__ import annotations

import numba
import numpy as np

from .jit import JIT


# -- segmented scans (sort-based split search of small nodes) -----------------
@numba.njit(**JIT)
def _segmented_cumsum(values, seg):
    out = np.empty_like(values)
    n = values.shape[0]
    for i in range(n):
        fresh = i == 0 or seg[i] != seg[i - 1]
        for c in range(values.shape[1]):
            out[i, c] = values[i, c] if fresh else out[i - 1, c] + values[i, c]
    return out


@numba.njit(**JIT)
def _segment_reduce(values, seg, take_max):
    out = np.empty_like(values)
    n = values.shape[0]
    start = 0
    while start < n:
        stop = start + 1
        while stop < n and seg[stop] == seg[start]:
            stop += 1
        best = values[start]
        for i in range(start + 1, stop):
            v = values[i]
            # NaN wins, as in numpy.maximum / numpy.minimum
            if best == best and (v != v or ((v > best) if take_max else (v < best))):
                best = v
        for i in range(start, stop):
            out[i] = best
        start = stop
    return out


def segmented_cumsum(xp, values, seg, max_len: int):
    """Same contract as :func:`gputrees.kernels.reference.segmented_cumsum` (sequential sums)."""
    two_d = values.reshape(values.shape[0], -1)
    out = _segmented_cumsum(np.ascontiguousarray(two_d, dtype=np.float64), np.ascontiguousarray(seg))
    return out.reshape(values.shape)


def segment_max(xp, values, seg, max_len: int):
    """Same contract as :func:`gputrees.kernels.reference.segment_max`."""
    return _segment_reduce(np.ascontiguousarray(values), np.ascontiguousarray(seg), True)


def segment_min(xp, values, seg, max_len: int):
    """Same contract as :func:`gputrees.kernels.reference.segment_min`."""
    return _segment_reduce(np.ascontiguousarray(values), np.ascontiguousarray(seg), False)
