"""The kernel-set interface: :class:`Kernels` (every slot a callable) and :class:`FastPaths`, and
:func:`assemble`, which completes a set with the reference kernels."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from dataclasses import dataclass
from typing import Callable

from . import reference, treeshap
from ._quantise import HostScale

__all__ = ["Kernels", "FastPaths", "NO_FAST_PATHS", "NoSubtrees", "assemble", "declines"]


def declines(*args, **kwargs):
    """A fast path that covers nothing: the caller takes the general path."""
    return None


class NoSubtrees:
    """The subtree kernel of a set that has none: it covers no fit (:attr:`FastPaths.subtrees`)."""

    def covers(self, criterion, n_channels: int, bin_mapper) -> bool:
        return False


@dataclass(frozen=True)
class FastPaths:
    """A kernel set's whole-tree paths: each grows what the general path would, bit for bit, or declines.

    Attributes
    ----------
    grow_tree : callable
        ``grow_tree(xp, inputs, params)``: a batch of one boosting tree grown
        depth-wise in one compiled call, or None for the inputs it does not
        cover (:func:`gputrees._grower.grow` then grows it level by level);
        see :func:`gputrees.kernels.cpu.grow.grow_tree`.
    quantiser : callable
        ``quantiser(xp, n_channels)``: a fit's quantisation of its rounds'
        channel tables (K, n, C) on the device, in place, returning their
        scales without a host read (its ``failure()`` read once, at the
        fit's end), for a set whose ``grow_tree`` takes such scales; see
        :class:`gputrees.kernels.gpu.quantise.DeviceQuantiser`.
    boost_rounds : callable
        ``boost_rounds(xp, inputs, params, loss, learning_rate, y, w)``: a
        runner of a boosting fit's rounds, made once at its first round
        (``runner(raw, table, sums)`` grows a round's tree and ends the
        round, returning ``(batch, values, raw, loss, table, sums)``), or
        None for the fits it does not cover; see
        :func:`gputrees.kernels.cpu.boost.boost_rounds`.
    segment_rows : callable
        ``segment_rows(xp, codes, channels, codes_by_feature=None,
        previous=None)``: a row set (:mod:`gputrees._rows`) over every row of
        a boosting round's trees whose passes are compiled, growing the
        trees :class:`~gputrees._rows.LocalRows` grows (the Dask workers'
        rows, :mod:`gputrees.dask`), or None where it does not cover them;
        see :func:`gputrees.kernels.cpu.segment_rows.segment_rows`.
    subtrees : object
        The kernel that grows small nodes' whole subtrees depth-first in one
        compiled call, split for split the level-wise grower's: its
        ``covers(criterion, n_channels, bin_mapper)`` says for which fits
        (the grower asks once per batch), ``__call__`` grows them,
        ``tree_sums(tree_rows)`` gives whole trees' root statistics and
        ``layout(...)`` lays a batch out; see
        :class:`gputrees.kernels.cpu.subtree.SubtreeKernel`. A set without
        one has :class:`NoSubtrees`.
    """

    grow_tree: Callable = declines
    quantiser: Callable = declines
    boost_rounds: Callable = declines
    segment_rows: Callable = declines
    subtrees: object = NoSubtrees()

    @property
    def grows_trees(self) -> bool:
        """Whether the set has a ``grow_tree`` (which may still decline a batch)."""
        return self.grow_tree is not declines


#: The fast paths of a set that has none.
NO_FAST_PATHS = FastPaths()


@dataclass(frozen=True)
class Kernels:
    """The kernel set used by a fit: every slot a callable (the reference's where the set has no faster one).

    Attributes
    ----------
    name : str
    fixed_point : bool
        Whether ``node_histograms`` and ``node_sums`` take a ``scale``
        keyword (int64 fixed-point sums); see :meth:`quantised`.
    build_histograms : callable
        ``build_histograms(xp, codes, rows, node, weights, n_nodes, n_bins)``
        returning an array of shape (n_nodes, n_features, n_bins, n_channels),
        float64; see :func:`gputrees.kernels.reference.build_histograms`.
    segmented_cumsum, segment_max, segment_min : callable
        ``f(xp, values, seg, max_len)``: running sum inside runs of equal
        ``seg``, and the max / min of each run broadcast to its elements (the
        sort-based split search of small nodes).
    node_histograms, node_sums, route_rows : callable
        The grower's passes over its active rows (:class:`ActiveRows`):
        histograms and channel sums of the nodes given a slot, and the routing
        of rows to the children of split nodes; see
        :func:`gputrees.kernels.reference.node_histograms` and its neighbours.
    route_and_sum : callable
        ``route_and_sum(xp, codes, active, chan, slot_of_node, split,
        first_child, missing_bin)``: ``route_rows`` and the children's
        channel sums in one call; see :func:`gputrees.kernels.reference.route_and_sum`.
    drawn_histograms : callable
        ``drawn_histograms(xp, codes, active, chan, slot_of_node, n_slots,
        n_bins, features)``: the nodes' histograms over their drawn features
        only (``features`` (n_slots, k) int64; out (n_slots, k, n_bins, C));
        see :func:`gputrees.kernels.reference.drawn_histograms`.
    sibling_histograms : callable
        ``sibling_histograms(xp, parent_hist, parent_index, small,
        small_is_right, children)``: the histograms of sibling pairs'
        children from the built ones and their parents'; see
        :func:`gputrees.kernels.reference.sibling_histograms`.
    pair_weights : callable
        ``pair_weights(xp, active, chan, mask)``: the channels of the active
        pairs (those where ``mask``), multiplicities applied; see
        :func:`gputrees.kernels.reference.active_weights`.
    keep_pairs : callable
        ``keep_pairs(xp, arrays, keep)``: ``[a[keep] for a in arrays]`` (the
        row set's retirement of finished nodes' pairs), into buffers the set
        may reuse; see :func:`gputrees.kernels.reference.keep_pairs`.
    scatter_rows : callable
        ``scatter_rows(xp, index, values, size)``: ``values`` put at the
        positions ``index`` (a permutation); see
        :func:`gputrees.kernels.reference.scatter_rows`.
    codes_by_feature : callable
        ``codes_by_feature(xp, codes, copy=True)``: the binned matrix
        feature-major, (n_features, n_samples), which this set's
        ``route_rows`` and ``route_and_sum`` then take as their
        ``codes_by_feature`` keyword (``copy=False``: ``codes.T``, a view);
        None (the reference's) for sets whose routing reads no such copy.
    bin_codes : callable
        ``bin_codes(xp, X, mapper)``: the binned matrix of ``X``; see
        :func:`gputrees.kernels.reference.bin_codes`.
    stored_codes : callable
        ``stored_codes(indptr, data, mapper)``: the bin codes of a sparse
        matrix's stored values, by column; see
        :func:`gputrees.kernels.reference.stored_codes`.
    note_sparse_codes : callable
        ``note_sparse_codes(codes, n_codes, columns)``: the binned matrix of
        a sparse X and its stored cells' codes by column; see
        :func:`gputrees.kernels.reference.note_sparse_codes`.
    covered_values : callable
        ``covered_values(xp, X, features, values)``: whether every
        non-missing value of each listed column is among the given values;
        see :func:`gputrees.kernels.reference.covered_values`.
    sorted_columns : callable
        ``sorted_columns(xp, X, f0, f1, rows)``: the sorted non-missing
        values of columns ``f0 .. f1 - 1``; see
        :func:`gputrees.kernels.reference.sorted_columns`.
    best_splits, sorted_splits : callable
        A compiled :func:`gputrees._splitting.find_best_splits` /
        :func:`gputrees._sorted_split.find_best_splits_sorted` (same
        arguments and record) that declines (returns None) the cases it does
        not cover, which the engine's array-API search then takes; the
        reference sets' decline everything (:func:`declines`).
    round_end : callable
        ``round_end(xp, loss, raw, values, row_leaf, y, w, table)``: a
        boosting round's end (new raw predictions, their loss, the next
        round's channels); see :func:`gputrees.kernels.reference.round_end`.
        It may update ``raw`` in place.
    apply_trees : callable
        ``apply_trees(xp, batch, X, missing_bin)``: the leaf of every row in
        every tree of a padded batch; see
        :func:`gputrees.kernels.reference.apply_trees`.
    predict_raw : callable
        ``predict_raw(xp, batch, values, X, missing_bin, base)``: boosting's
        raw predictions; see :func:`gputrees.kernels.reference.predict_raw`.
    tree_value_sums : callable
        ``tree_value_sums(xp, batch, values, X, missing_bin)``: the sum over
        the trees of each row's leaf values (a forest's prediction); see
        :func:`gputrees.kernels.reference.tree_value_sums`.
    tree_shap : callable
        ``tree_shap(xp, batch, values, cover, X, missing_bin, *,
        interactions=False)``: exact path-dependent SHAP values (or
        interaction values) of every row for the sum of the batch's trees;
        see :func:`gputrees.kernels.treeshap.tree_shap`.
    bootstrap_counts : callable
        ``bootstrap_counts(xp, seed, first, n_trees, n, n_draw)``: the
        in-bag counts (n_trees, n) of a forest's trees ``first ..`` drawn
        with replacement by counter-based draws, the same on every set; see
        :func:`gputrees.kernels.reference.bootstrap_counts`.
    workspace : callable
        ``workspace()``: a context manager inside which this set's kernels may
        hand out their large outputs in buffers they reuse once the caller
        has dropped every reference to them (the grower enters one per batch
        of trees); a set without buffers returns a null context.
    fast : FastPaths
        The set's whole-tree paths (:data:`NO_FAST_PATHS` where it has none).
    csr_columns : int
        The widest scipy.sparse CSR matrix whose rows ``apply_trees``,
        ``predict_raw`` and ``tree_value_sums`` take as they are (a wider one
        is first cut to the columns the trees test); 0: the set takes dense
        rows only, and the caller walks dense blocks of a sparse matrix's.
    """

    name: str
    fixed_point: bool
    build_histograms: Callable
    segmented_cumsum: Callable
    segment_max: Callable
    segment_min: Callable
    node_histograms: Callable
    node_sums: Callable
    route_rows: Callable
    route_and_sum: Callable
    drawn_histograms: Callable
    sibling_histograms: Callable
    pair_weights: Callable
    keep_pairs: Callable
    scatter_rows: Callable
    codes_by_feature: Callable
    bin_codes: Callable
    stored_codes: Callable
    note_sparse_codes: Callable
    covered_values: Callable
    sorted_columns: Callable
    best_splits: Callable
    sorted_splits: Callable
    round_end: Callable
    apply_trees: Callable
    predict_raw: Callable
    tree_value_sums: Callable
    tree_shap: Callable
    bootstrap_counts: Callable
    workspace: Callable
    fast: FastPaths
    csr_columns: int = 0

    def feature_major(self, xp, codes, copy: bool = True):
        """``codes`` feature-major for this set's routing (``codes_by_feature``), or None when it reads none.

        Parameters
        ----------
        codes : array of shape (n_samples, n_features), uint8/uint16
        copy : bool, default=True
            False: the transposed view of ``codes`` instead of a copy, where
            the fit's memory matters more than the routing's reads (a
            scipy.sparse X: its fit keeps the CSR and the codes, no copy of
            the codes).

        Returns
        -------
        array of shape (n_features, n_samples), the dtype of ``codes``, or None
        """
        return self.codes_by_feature(xp, codes, copy=copy)

    def quantised(self, scale) -> "Kernels":
        """The set to use on channels quantised with ``scale`` (see :mod:`gputrees.kernels._quantise`).

        Parameters
        ----------
        scale : sequence of n_channels floats (powers of two)

        Returns
        -------
        Kernels
            For a fixed-point set (cuda), node histograms and sums
            accumulated as int64 multiples of ``1 / scale`` (and the routing's
            children's sums made by them); for the others this set itself,
            whose float64 sums of quantised channels are exact (hence equal).
        """
        if not self.fixed_point:
            return self
        # a device array of scales stays on the device for the tree path; the
        # level-wise kernels read it (once) if they grow the round
        if not isinstance(scale, HostScale):
            scale = HostScale(scale) if hasattr(scale, "shape") else tuple(float(s) for s in scale)
        node_sums = functools.partial(self.node_sums, scale=scale)
        return dataclasses.replace(
            self,
            node_histograms=functools.partial(self.node_histograms, scale=scale),
            node_sums=node_sums,
            fixed_point=False,
            route_and_sum=functools.partial(reference.route_and_sum, route=self.route_rows, sums=node_sums),
            # a fixed-point set's tree path grows trees of quantised channels only: it takes their scale
            fast=dataclasses.replace(self.fast, grow_tree=functools.partial(self.fast.grow_tree, scale=scale)),
        )


def assemble(name: str, build_histograms, apply_trees, *, fixed_point: bool = False, **kernels) -> Kernels:
    """A complete set: the given kernels, and the reference's (composed with them) for every other slot.

    ``build_histograms`` and ``apply_trees`` are the set's own; the node
    passes default to the reference compositions around ``build_histograms``,
    ``route_and_sum`` and ``drawn_histograms`` to the reference compositions
    of the set's routing, sums and histograms, ``predict_raw`` and
    ``tree_value_sums`` to the reference's around ``apply_trees``.
    """
    slots = dict(
        segmented_cumsum=reference.segmented_cumsum,
        segment_max=reference.segment_max,
        segment_min=reference.segment_min,
        node_histograms=functools.partial(reference.node_histograms, build=build_histograms),
        node_sums=functools.partial(reference.node_sums, build=build_histograms),
        route_rows=reference.route_rows,
        sibling_histograms=reference.sibling_histograms,
        pair_weights=reference.active_weights,
        keep_pairs=reference.keep_pairs,
        scatter_rows=reference.scatter_rows,
        codes_by_feature=declines,
        bin_codes=reference.bin_codes,
        stored_codes=reference.stored_codes,
        note_sparse_codes=reference.note_sparse_codes,
        covered_values=reference.covered_values,
        sorted_columns=reference.sorted_columns,
        best_splits=declines,
        sorted_splits=declines,
        round_end=reference.round_end,
        tree_shap=treeshap.tree_shap,
        bootstrap_counts=reference.bootstrap_counts,
        workspace=contextlib.nullcontext,
        fast=NO_FAST_PATHS,
    )
    slots.update(kernels)
    slots.setdefault("route_and_sum", functools.partial(reference.route_and_sum, route=slots["route_rows"],
                                                        sums=slots["node_sums"]))
    slots.setdefault("drawn_histograms", functools.partial(reference.drawn_histograms,
                                                           node_histograms=slots["node_histograms"]))
    slots.setdefault("predict_raw", functools.partial(reference.predict_raw, walk=apply_trees))
    slots.setdefault("tree_value_sums", functools.partial(reference.tree_value_sums, walk=apply_trees))
    return Kernels(name=name, fixed_point=fixed_point, build_histograms=build_histograms, apply_trees=apply_trees,
                   **slots)
