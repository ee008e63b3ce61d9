"""Forests' bootstrap counts drawn on the GPU (numba-cuda): one thread per (tree, draw), nothing on the host.

Draw ``j`` of tree ``t`` picks the row of
:func:`gputrees.kernels.rules.sample_row` (its key
:func:`gputrees.kernels.rules.sample_key` of the fit's seed and ``t``, the
CPU kernels' rule) and adds 1 to the tree's count of that row with a
float64 atomic: the counts are whole numbers, so the sums are exact in any
order, equal to the CPU sets' counts. The (n_trees, n) counts are made and
stay on the device; the host passes only the seed and the batch's first
tree.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from .. import rules
from .._cuda import grid_blocks, launch, launch_config
from .rules import compile_rules

__all__ = ["bootstrap_counts"]


@cuda.jit
def _count(seed, first, n, n_draw, out):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, out.shape[0] * n_draw, stride):
        t = i // n_draw
        j = i - t * n_draw
        # the key's two mixes again per draw: cheaper than a launch that stores the keys
        cuda.atomic.add(out, (t, rules.sample_row(rules.sample_key(seed, first + t), j, n)), 1.0)


def bootstrap_counts(xp, seed: int, first: int, n_trees: int, n: int, n_draw: int):
    """Same contract as :func:`gputrees.kernels.reference.bootstrap_counts`: zeros, then one launch of a
    thread per draw."""
    compile_rules()
    out = xp.zeros((n_trees, n), dtype=xp.float64)
    work = n_trees * n_draw
    if work:
        threads, cap = launch_config()
        launch(_count, grid_blocks(work, threads, cap), threads, np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF),
               np.int64(first), np.int64(n), np.int64(n_draw), out)
    return out
