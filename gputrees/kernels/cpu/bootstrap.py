"""Forests' bootstrap counts: each tree's counter-based draws (:func:`gputrees.kernels.rules.sample_row`)
counted, a tree per thread."""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from .. import rules
from .jit import JIT_NUMPY, Threads, threads_for


@numba.njit(parallel=True, **JIT_NUMPY)
def _count(seed, first, n, n_draw, out):
    # a tree's counts are its own thread's: no two threads add to one row, and each sum is of whole numbers
    for t in prange(out.shape[0]):
        key = rules.sample_key(seed, first + t)
        for j in range(n_draw):
            out[t, rules.sample_row(key, j, n)] += 1.0


def bootstrap_counts(xp, seed: int, first: int, n_trees: int, n: int, n_draw: int, *, n_threads: int = 1):
    """Same contract as :func:`gputrees.kernels.reference.bootstrap_counts`, on ``n_threads`` threads (at most
    one a tree)."""
    out = np.zeros((n_trees, n), dtype=np.float64)
    with Threads(min(threads_for(n_threads, n_trees * n_draw), max(1, n_trees))):
        _count(np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF), np.int64(first), np.int64(n), np.int64(n_draw), out)
    return out
