"""Hot-path kernels behind one interface, chosen by array namespace.

Every kernel has a twin written only against the array API standard
(:mod:`gputrees.kernels._reference`), which is the oracle the tests compare
the fast ones against and the path used for namespaces with no fast kernel
(array-api-strict, for instance).

Kernel sets:

* ``"cuda"``: GPU kernels written with numba-cuda (:mod:`gputrees.kernels._cuda`),
  launched on CuPy arrays; node histograms in shared memory (global-memory
  atomics when a feature's bins x channels do not fit), node sums, row
  routing and the prediction walk. Under numba-cuda's simulator
  (``NUMBA_ENABLE_CUDASIM=1``) the same kernels run on NumPy arrays, on the
  CPU: that is how CI tests them;
* ``"numba"``: compiled, multi-threaded CPU kernels (NumPy arrays; needs Numba);
* ``"bincount"``: NumPy (or CuPy) primitives, one thread;
* ``"reference"``: the array-API standard only (any namespace).

``"auto"`` (the default) picks ``"cuda"`` for CuPy arrays when numba-cuda
imports and sees a GPU, ``"numba"`` for NumPy arrays when Numba can be
imported, else ``"bincount"`` for NumPy and CuPy, else ``"reference"``. The
environment variable ``GPUTREES_KERNELS`` (one of :data:`KERNEL_NAMES`)
forces a set on every fit, for tests and benchmarks; asking for ``"numba"``
where Numba is missing, or ``"cuda"`` where numba-cuda has no GPU (and no
simulator), raises ImportError rather than silently falling back.

Quantised sums (:mod:`gputrees.kernels._quantise`): channels rounded to
multiples of a power-of-two ``1 / scale`` sum to the same numbers on every
set. :meth:`Kernels.quantised` gives the set to use for such channels: the
cuda set then accumulates int64 fixed-point sums (order-independent
atomics); the CPU sets' float64 sums of such values are exact already.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os
from dataclasses import dataclass
from typing import Callable

from .._backend import is_cupy_namespace, is_numpy_namespace
from ._quantise import quantisation_scale, quantise
from .._records import ActiveRows, TreeRows

__all__ = ["ActiveRows", "TreeRows", "Kernels", "get_kernels", "KERNEL_NAMES", "numba_available", "cuda_available",
           "quantisation_scale", "quantise"]

KERNEL_NAMES = ("auto", "reference", "bincount", "numba", "cuda")


@dataclass(frozen=True)
class Kernels:
    """The kernel set used by a fit.

    Attributes
    ----------
    name : str
    build_histograms : callable
        ``build_histograms(xp, codes, rows, node, weights, n_nodes, n_bins)``
        returning an array of shape (n_nodes, n_features, n_bins, n_channels),
        float64; see :func:`gputrees.kernels._reference.build_histograms`.
    segmented_cumsum, segment_max, segment_min : callable
        ``f(xp, values, seg, max_len)``: running sum inside runs of equal
        ``seg``, and the max / min of each run broadcast to its elements (the
        sort-based split search of small nodes).
    node_histograms, node_sums, route_rows : callable
        The grower's passes over its active rows (:class:`ActiveRows`):
        histograms and channel sums of the nodes given a slot, and the routing
        of rows to the children of split nodes; see
        :func:`gputrees.kernels._reference.node_histograms` and its neighbours.
    apply_trees : callable
        ``apply_trees(xp, batch, X, missing_bin)``: the leaf of every row in
        every tree of a padded batch; see
        :func:`gputrees._predictor.apply_trees_reference`.
    bin_codes : callable or None
        ``bin_codes(xp, X, mapper)``: the binned matrix of ``X``; see
        :func:`gputrees.kernels._reference.bin_codes`, which ``None`` means.
    predict_raw : callable or None
        ``predict_raw(xp, batch, values, X, missing_bin, base)``: boosting's raw
        predictions; see :func:`gputrees.kernels._reference.predict_raw`,
        which ``None`` means (with this set's ``apply_trees``).
    fixed_point : bool
        Whether ``node_histograms`` and ``node_sums`` take a ``scale``
        keyword (int64 fixed-point sums); see :meth:`quantised`.
    scatter_rows : callable or None
        ``scatter_rows(xp, index, values, size)``: ``values`` put at the
        positions ``index`` (a permutation); see
        :func:`gputrees.kernels._reference.scatter_rows`, which ``None``
        means (an argsort).
    route_and_sum : callable or None
        ``route_and_sum(xp, codes, active, chan, slot_of_node, split,
        first_child, missing_bin)``: ``route_rows`` and the children's
        channel sums in one call; see
        :func:`gputrees.kernels._reference.route_and_sum`, which ``None``
        means (``route_rows`` then ``node_sums``).
    best_splits : callable or None
        A compiled :func:`gputrees._splitting.find_best_splits` (same
        arguments and record) that returns None for the cases it does not
        cover; see :func:`gputrees.kernels.cpu.scan.best_splits`. None:
        the generic search only.
    sorted_splits : callable or None
        The same for :func:`gputrees._sorted_split.find_best_splits_sorted`;
        see :func:`gputrees.kernels.cpu.sorted_scan.sorted_splits`.
    sibling_histograms : callable or None
        ``sibling_histograms(xp, parent_hist, parent_index, small,
        small_is_right, children)``: the histograms of sibling pairs'
        children from the built ones and their parents'; see
        :func:`gputrees.kernels._reference.sibling_histograms`, which
        ``None`` means.
    drawn_histograms : callable or None
        ``drawn_histograms(xp, codes, active, chan, slot_of_node, n_slots,
        n_bins, features)``: the nodes' histograms over their drawn features
        only (``features`` (n_slots, k) int64; out (n_slots, k, n_bins, C)),
        or None where the set does not build them so (the row set then
        gathers them from every feature's); see
        :func:`gputrees.kernels._reference.drawn_histograms`, which ``None``
        means.
    keep_pairs : callable or None
        ``keep_pairs(xp, arrays, keep)``: ``tuple(a[keep] for a in
        arrays)`` for the row set's retirement of finished nodes' pairs,
        into buffers the set may reuse; see
        :func:`gputrees.kernels.cpu.pairs.keep_pairs`. None: boolean indexing.
    pair_weights : callable or None
        ``pair_weights(xp, active, chan, mask)``: the channels of the active
        pairs (those where ``mask``), multiplicities applied, for the
        sort-based search and the subtree kernel; see
        :func:`gputrees.kernels._reference.active_weights`, which ``None``
        means, and :func:`gputrees.kernels.cpu.pairs.pair_weights`.
    codes_by_feature : callable or None
        ``codes_by_feature(xp, codes)``: the binned matrix feature-major,
        (n_features, n_samples), which this set's ``route_rows`` and
        ``route_and_sum`` read faster when given it as their
        ``codes_by_feature`` keyword (the grower makes it once per fit); see
        :func:`gputrees.kernels.cpu.binning.codes_by_feature`. None: the set's
        routing takes no such keyword.
    round_end : callable or None
        ``round_end(xp, loss, raw, values, row_leaf, y, w, table)``: a
        boosting round's end in a few compiled passes, or None for a loss it
        does not carry; see :func:`gputrees._boosting.round_end` (the generic passes,
        which ``None`` means) and :func:`gputrees.kernels.cpu.loss.round_end`.
        It may update ``raw`` in place.
    boost_rounds : callable or None
        ``boost_rounds(xp, inputs, params, loss, learning_rate, y, w)``: a
        runner of a boosting fit's rounds (made at its first round, inside
        its workspace; ``runner(raw, table, sums)`` grows a round's tree
        and ends the round, returning ``(batch, values, raw, loss, table,
        sums)``), the round-by-round path's results bit for bit, or None
        for the fits it does not cover; see
        :func:`gputrees.kernels.cpu.boost.boost_rounds`. None: every
        round runs its steps one by one.
    covered_values : callable or None
        ``covered_values(xp, X, features, values)``: whether every
        non-missing value of each listed column is among the given values
        (the binning's check of a sample's distinct values); see
        :func:`gputrees.kernels._reference.covered_values`, which ``None``
        means.
    sorted_columns : callable or None
        ``sorted_columns(xp, X, f0, f1, rows)``: the sorted non-missing
        values of columns ``f0 .. f1 - 1`` (of the given rows, or all), as
        float64 arrays (what the binning places its edges on); see
        :func:`gputrees.kernels._reference.sorted_columns`, which ``None``
        means.
    grow_tree : callable or None
        ``grow_tree(xp, inputs, params)``: a batch of one boosting tree grown
        depth-wise in one compiled call, equal to the generic grower's with
        this set (:func:`gputrees._grower.grow` tries it first), or None for
        the inputs it does not cover; see
        :func:`gputrees.kernels.cpu.grow.grow_tree`. None: the generic
        grower only.
    grow_subtrees : callable or None
        ``grow_subtrees(xp, codes, rows, slot, weights, stats, depth, tree,
        keys, total_weight, criterion, cons, params, bin_mapper,
        tree_features, random_splits)``: the whole subtrees of small nodes,
        each grown depth-first in one compiled call, split for split the
        generic grower's; its ``covers(criterion, n_channels, bin_mapper)``
        says for which fits (else it returns None). With
        ``tree_rows=TreeRows(...)`` instead of ``rows``, ``slot`` and
        ``weights``, the nodes are roots whose rows it reads from the
        multiplicities; ``tree_sums(tree_rows)`` gives their statistics. See
        :class:`gputrees.kernels.cpu.subtree.SubtreeKernel`. None: the
        generic grower grows small nodes level by level.
    layout_subtrees : callable or None
        ``layout_subtrees(xp, n_trees, parent, depth, tree, stats, split_ids,
        record, split_first_child)``: the padded node arrays of a batch part
        of whose nodes ``grow_subtrees`` grew, each tree numbered
        breadth-first, in one compiled pass; see
        :func:`gputrees.kernels.cpu.subtree.layout_grouped`. None: the
        grower's array-API twin (``Grower._breadth_first`` and
        ``_finalize_grouped``).
    workspace : callable or None
        ``workspace()``: a context manager inside which this set's kernels may
        hand out their large outputs (histograms) in buffers they reuse once
        the caller has dropped every reference to them; the grower enters one
        per batch of trees, and the buffers go with it. See
        :func:`gputrees.kernels.cpu.buffers.workspace`. None: every output is new.
    """

    name: str
    build_histograms: Callable
    segmented_cumsum: Callable
    segment_max: Callable
    segment_min: Callable
    node_histograms: Callable
    node_sums: Callable
    route_rows: Callable
    apply_trees: Callable
    bin_codes: Callable | None = None
    predict_raw: Callable | None = None
    fixed_point: bool = False
    scatter_rows: Callable | None = None
    route_and_sum: Callable | None = None
    best_splits: Callable | None = None
    sorted_splits: Callable | None = None
    codes_by_feature: Callable | None = None
    sibling_histograms: Callable | None = None
    drawn_histograms: Callable | None = None
    keep_pairs: Callable | None = None
    pair_weights: Callable | None = None
    workspace: Callable | None = None
    round_end: Callable | None = None
    boost_rounds: Callable | None = None
    covered_values: Callable | None = None
    sorted_columns: Callable | None = None
    grow_tree: Callable | None = None
    grow_subtrees: Callable | None = None
    layout_subtrees: Callable | None = None

    def feature_major(self, xp, codes):
        """``codes`` feature-major for this set's routing (``codes_by_feature``), or None when it reads none.

        Parameters
        ----------
        codes : array of shape (n_samples, n_features), uint8/uint16

        Returns
        -------
        array of shape (n_features, n_samples), the dtype of ``codes``, or None
        """
        return None if self.codes_by_feature is None else self.codes_by_feature(xp, codes)

    def quantised(self, scale) -> "Kernels":
        """The set to use on channels quantised with ``scale`` (see :mod:`gputrees.kernels._quantise`).

        Parameters
        ----------
        scale : sequence of n_channels floats (powers of two)

        Returns
        -------
        Kernels
            For a fixed-point set (cuda), node histograms and sums
            accumulated as int64 multiples of ``1 / scale``; for the others
            this set itself, whose float64 sums of quantised channels are
            exact (hence equal).
        """
        if not self.fixed_point:
            return self
        scale = tuple(float(s) for s in scale)
        return dataclasses.replace(
            self,
            node_histograms=functools.partial(self.node_histograms, scale=scale),
            node_sums=functools.partial(self.node_sums, scale=scale),
            fixed_point=False,
            route_and_sum=None,  # its sums would not be the fixed-point ones
        )


@functools.lru_cache(maxsize=1)
def cuda_available() -> bool:
    """Whether numba-cuda imports and can launch kernels: a GPU, or its simulator (checked once, on first use)."""
    try:
        cuda = importlib.import_module("numba.cuda")
        return bool(cuda.is_available())
    except Exception:  # ImportError, or CUDA driver errors on a machine without a GPU
        return False


def cuda_simulated() -> bool:
    """Whether numba-cuda's simulator is on (``NUMBA_ENABLE_CUDASIM=1``): cuda kernels then run on NumPy arrays."""
    if not numba_available():
        return False
    import numba

    return bool(numba.config.ENABLE_CUDASIM)


@functools.lru_cache(maxsize=1)
def numba_available() -> bool:
    """Whether Numba can be imported (checked once, on first use; never at import)."""
    try:
        importlib.import_module("numba")
    except ImportError:
        return False
    return True


def get_kernels(xp, name: str | None = None, n_jobs: int | None = None) -> Kernels:
    """Kernels for namespace ``xp``.

    Parameters
    ----------
    xp : array namespace
    name : str or None
        One of :data:`KERNEL_NAMES`; None reads ``GPUTREES_KERNELS`` (default ``"auto"``).
    n_jobs : int or None
        Threads of the Numba kernels: None or -1 = every core (as XGBoost,
        LightGBM and scikit-learn's HistGradientBoosting do by default), -2 =
        all but one, k > 0 = k; the other kernel sets use one thread.
    """
    name = name or os.environ.get("GPUTREES_KERNELS", "auto")
    if name not in KERNEL_NAMES:
        raise ValueError(f"kernels must be one of {KERNEL_NAMES}, got {name!r}")
    if name == "auto":
        if is_cupy_namespace(xp) and cuda_available() and not cuda_simulated():
            name = "cuda"
        elif is_numpy_namespace(xp) and numba_available():
            name = "numba"
        elif is_numpy_namespace(xp) or is_cupy_namespace(xp):
            name = "bincount"
        else:
            name = "reference"
    if name == "numba":
        if not is_numpy_namespace(xp):
            raise ValueError("the numba kernels need NumPy arrays")
        if not numba_available():
            raise ImportError("GPUTREES_KERNELS=numba needs Numba: pip install numba")
        from .cpu import make_kernels

        return make_kernels(n_jobs)
    if name == "cuda":
        return _cuda_set(xp)
    from . import _reference

    if name == "bincount":
        if not (is_numpy_namespace(xp) or is_cupy_namespace(xp)):
            raise ValueError("the bincount kernels need NumPy or CuPy arrays")
        from . import _bincount

        numpy_only = is_numpy_namespace(xp)
        composed = _composed(
            "bincount",
            _bincount.build_histograms,
            _bincount if numpy_only else _reference,
        )
        return dataclasses.replace(composed, scatter_rows=_bincount.scatter_rows)
    return _composed("reference", _reference.build_histograms, _reference)


def _cuda_set(xp) -> Kernels:
    """The numba-cuda kernels: CuPy arrays on a GPU, NumPy arrays in the simulator."""
    simulated = cuda_simulated()
    if simulated and not is_numpy_namespace(xp):
        raise ValueError("under numba-cuda's simulator (NUMBA_ENABLE_CUDASIM=1) the cuda kernels need NumPy arrays")
    if not simulated and not is_cupy_namespace(xp):
        raise ValueError(
            "the cuda kernels need CuPy arrays (pass CuPy input or device='cuda'; "
            "NUMBA_ENABLE_CUDASIM=1 runs them on NumPy arrays in numba-cuda's simulator)"
        )
    if not cuda_available():
        raise ImportError("GPUTREES_KERNELS=cuda needs numba-cuda and a CUDA GPU: pip install gputrees[cuda12]")
    from . import _cuda, _reference

    scans = _reference
    if simulated:  # NumPy arrays: the CPU set's scans (Numba is a dependency of gputrees)
        from .cpu import segments as scans
    return Kernels(
        "cuda",
        _cuda.build_histograms,
        scans.segmented_cumsum,
        scans.segment_max,
        scans.segment_min,
        _cuda.node_histograms,
        _cuda.node_sums,
        _cuda.route_rows,
        _cuda.apply_trees,
        fixed_point=True,
    )


def _composed(name, build, scans) -> Kernels:
    """A kernel set whose row-level passes are the reference compositions around ``build``."""
    from .._predictor import apply_trees_reference
    from . import _reference

    return Kernels(
        name,
        build,
        scans.segmented_cumsum,
        scans.segment_max,
        scans.segment_min,
        functools.partial(_reference.node_histograms, build=build),
        functools.partial(_reference.node_sums, build=build),
        _reference.route_rows,
        apply_trees_reference,
    )
