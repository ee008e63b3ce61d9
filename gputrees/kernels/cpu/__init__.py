"""The compiled CPU kernel set (Numba): multi-threaded kernels on NumPy arrays.

Modules by responsibility: :mod:`.jit` (compilation options, the compiled
rules, threads), :mod:`.memory` (unchecked loads and stores, prefetch,
vector adds), :mod:`.binning`, :mod:`.segments` (segmented scans),
:mod:`.pairs` (the active pairs grouped by node: weights, runs, sums),
:mod:`.histograms`, :mod:`.sparse_codes` (histograms of
mostly-default codes from their other entries), :mod:`.routing`, :mod:`.segment_rows` (a row set of node
segments, the Dask workers'), :mod:`.buffers` (reused outputs),
:mod:`.scan` (the histogram split scan), :mod:`.sorted_scan` (the
sort-based search of small nodes), :mod:`.predict`, :mod:`.treeshap` (SHAP
values), :mod:`.loss` (a boosting round's end), :mod:`.bootstrap` (forests' in-bag
counts), and the whole-tree paths: :mod:`.grow` (one
boosting tree in one call), :mod:`.subtree` (small nodes' subtrees),
:mod:`.boost` (a fit's rounds in three calls each).

Imported only when the Numba set is selected (:func:`gputrees.kernels.get_kernels`).
"""

from __future__ import annotations

import functools

from . import (
    binning, boost, bootstrap, buffers, grow, histograms, jit, loss, memory, pairs, predict, routing, scan,
    segment_rows, segments, sorted_scan, sparse_codes, subtree, treeshap,
)

__all__ = [
    "make_kernels", "binning", "boost", "bootstrap", "buffers", "grow", "histograms", "jit", "loss", "memory",
    "pairs", "predict", "routing", "scan", "segment_rows", "segments", "sorted_scan", "sparse_codes", "subtree",
    "treeshap",
]


def make_kernels(n_jobs: int | None):
    """The Numba kernel set on ``n_jobs`` threads (None or -1 every core, -2 all but one, k)."""
    from .. import _bincount
    from ..interface import FastPaths, assemble

    threads = jit.thread_count(n_jobs)

    def on(f):
        return functools.partial(f, n_threads=threads)

    return assemble(
        "numba",
        on(histograms.build_histograms),
        on(predict.apply_trees),
        segmented_cumsum=segments.segmented_cumsum,
        segment_max=segments.segment_max,
        segment_min=segments.segment_min,
        node_histograms=on(histograms.node_histograms),
        node_sums=on(pairs.node_sums),
        route_rows=on(routing.route_rows),
        route_and_sum=on(routing.route_and_sum),
        drawn_histograms=on(histograms.drawn_histograms),
        sibling_histograms=on(histograms.sibling_histograms),
        pair_weights=on(pairs.pair_weights),
        keep_pairs=on(pairs.keep_pairs),
        scatter_rows=_bincount.scatter_rows,
        codes_by_feature=on(binning.codes_by_feature),
        bin_codes=on(binning.bin_codes),
        stored_codes=on(binning.stored_codes),
        note_sparse_codes=sparse_codes.note_sparse_codes,
        covered_values=on(binning.covered_values),
        sorted_columns=on(binning.sorted_columns),
        best_splits=on(scan.best_splits),
        sorted_splits=on(sorted_scan.sorted_splits),
        round_end=on(loss.round_end),
        predict_raw=on(predict.predict_raw),
        tree_value_sums=on(predict.tree_value_sums),
        tree_shap=on(treeshap.tree_shap),
        bootstrap_counts=on(bootstrap.bootstrap_counts),
        workspace=buffers.workspace,
        csr_columns=predict.CSR_SCRATCH_COLUMNS,
        fast=FastPaths(
            grow_tree=on(grow.grow_tree),
            boost_rounds=on(boost.boost_rounds),
            segment_rows=on(segment_rows.segment_rows),
            subtrees=subtree.SubtreeKernel(threads),
        ),
    )
