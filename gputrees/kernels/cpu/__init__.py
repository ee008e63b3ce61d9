"""The compiled CPU kernel set (Numba): multi-threaded kernels on NumPy arrays.

Modules by responsibility: :mod:`.jit` (compilation options, the compiled
rules, threads), :mod:`.memory` (unchecked loads and stores, prefetch,
vector adds), :mod:`.binning`, :mod:`.segments` (segmented scans),
:mod:`.pairs` (the active pairs grouped by node: weights, runs, sums),
:mod:`.histograms`, :mod:`.routing`, :mod:`.buffers` (reused outputs),
:mod:`.scan` (the histogram split scan), :mod:`.sorted_scan` (the
sort-based search of small nodes), :mod:`.predict`, and the whole-tree
paths: :mod:`.grow` (one boosting tree in one call), :mod:`.subtree` (small
nodes' subtrees), :mod:`.loss` (a boosting round's end), :mod:`.boost` (a
fit's rounds in three calls each).

Imported only when the Numba set is selected (:func:`gputrees.kernels.get_kernels`).
"""

from __future__ import annotations

import functools

from . import (
    binning,
    boost,
    buffers,
    grow,
    histograms,
    jit,
    loss,
    memory,
    pairs,
    predict,
    routing,
    scan,
    segments,
    sorted_scan,
    subtree,
)

__all__ = [
    "make_kernels", "binning", "boost", "buffers", "grow", "histograms", "jit", "loss", "memory", "pairs", "predict",
    "routing", "scan", "segments", "sorted_scan", "subtree",
]


def make_kernels(n_jobs: int | None):
    """The Numba kernel set on ``n_jobs`` threads (None or -1 every core, -2 all but one, k)."""
    from .. import Kernels, _bincount

    threads = jit.thread_count(n_jobs)

    def on(f):
        return functools.partial(f, n_threads=threads)

    return Kernels(
        "numba",
        on(histograms.build_histograms),
        segments.segmented_cumsum,
        segments.segment_max,
        segments.segment_min,
        on(histograms.node_histograms),
        on(pairs.node_sums),
        on(routing.route_rows),
        on(predict.apply_trees),
        on(binning.bin_codes),
        on(predict.predict_raw),
        scatter_rows=_bincount.scatter_rows,
        route_and_sum=on(routing.route_and_sum),
        best_splits=on(scan.best_splits),
        sorted_splits=on(sorted_scan.sorted_splits),
        codes_by_feature=on(binning.codes_by_feature),
        sibling_histograms=on(histograms.sibling_histograms),
        drawn_histograms=on(histograms.drawn_histograms),
        keep_pairs=on(pairs.keep_pairs),
        pair_weights=on(pairs.pair_weights),
        workspace=buffers.workspace,
        round_end=on(loss.round_end),
        boost_rounds=on(boost.boost_rounds),
        covered_values=on(binning.covered_values),
        sorted_columns=on(binning.sorted_columns),
        grow_tree=on(grow.grow_tree),
        grow_subtrees=subtree.SubtreeKernel(threads),
        layout_subtrees=on(subtree.layout_grouped),
    )
