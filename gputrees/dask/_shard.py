"""The rows one Dask worker holds: a long-lived actor pinned to that worker.

A :class:`Shard` is created on the worker that already holds its partitions
(nothing moves), keeps them for the whole fit, and answers the driver's
per-level requests with node-sized arrays: histograms, channel sums, loss
sums. Rows, gradients and raw predictions never leave it.

Row-set requests carry the driver's deferred operations (routing, retiring,
the rows' leaves), so that a tree level costs one round trip: the routing of
the level's split nodes and the histograms of the children the driver
builds (:class:`gputrees.dask._cluster.DaskRows`). The row set is the kernel
set's compiled one where it has one (``FastPaths.segment_rows``), else
:class:`gputrees._rows.LocalRows`; a round's update begins the next round.

Where the shards reach each other (:mod:`gputrees.dask._peers`), a boosting
round is one request instead: every shard grows the round's trees itself
(:meth:`Shard.mesh_round`) over :class:`MeshRows`, the same operations on
its rows with every shard's histograms gathered and added up.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import _backend
from .._boost import round_inbag
from ..kernels.reference import gather_node_values, round_channels
from .._rows import LocalRows
from ..kernels import get_kernels
from ._peers import Mesh, PeerLostError, add_up


def _to_ns(xp, a):
    """A driver (NumPy) array, or a dataclass of them, in the shard's namespace."""
    if a is None or isinstance(a, (int, float, bool)):
        return a
    if dataclasses.is_dataclass(a):
        return dataclasses.replace(a, **{f.name: _to_ns(xp, getattr(a, f.name)) for f in dataclasses.fields(a)})
    if isinstance(a, np.ndarray):
        return _backend.from_numpy(xp, a)
    return a


class Shard:
    """Partitions of one worker, in the order of the global row index.

    Parameters
    ----------
    parts : list of tuples (start, X, y, w)
        ``start`` is the global index of the partition's first row; ``X`` an
        array (n_i, n_features) (NumPy or CuPy), ``y`` (n_i,) or None, ``w``
        (n_i,) or None.
    n_jobs : int or None
        Threads of the CPU kernels on this worker.
    """

    def __init__(self, parts, n_jobs=None):
        parts = sorted(parts, key=lambda p: p[0])
        xs = [p[1] for p in parts]
        self.xp = _backend.namespace_for(xs[0], None) if xs else _backend.namespace_for(np.empty(0), None)
        xp = self.xp
        self.X = xp.concat([xp.astype(xp.asarray(x), xp.float64) for x in xs], axis=0) if xs else None
        self.n = int(self.X.shape[0]) if xs else 0
        self.index = np.concatenate([np.arange(p[0], p[0] + p[1].shape[0], dtype=np.int64) for p in parts])
        # targets and weights are small (one column): kept on the host, NumPy
        self.y = None if parts[0][2] is None else np.concatenate([_backend.to_numpy(p[2]) for p in parts])
        if parts[0][3] is None:
            self.w = np.ones(self.n, dtype=np.float64)
        else:
            self.w = np.concatenate([_backend.to_numpy(p[3]).astype(np.float64) for p in parts])
        self.n_jobs = n_jobs
        self.kernels = get_kernels(xp, n_jobs=n_jobs)
        self.rows = None
        self._last_rows = None  # the last round's row set (its buffers are the next one's)
        self.ops_applied = 0
        self.mesh = None  # the connections to the other shards (mesh_listen, mesh_join)

    # -- data summaries -------------------------------------------------------
    def describe(self):
        """(rows, non-finite-value count of X, rows with a non-positive weight, bad weights)."""
        xp = self.xp
        inf = int(xp.sum(xp.astype(xp.isinf(self.X), xp.int64))) if self.n else 0
        bad_w = int(np.sum(~np.isfinite(self.w) | (self.w < 0)))
        return self.n, inf, bad_w

    def label_weights(self):
        """Distinct labels of y (sorted), their summed weights and their row counts."""
        labels, inv = np.unique(self.y, return_inverse=True)
        return (labels, np.bincount(inv, weights=self.w, minlength=labels.shape[0]),
                np.bincount(inv, minlength=labels.shape[0]))

    def scale_class_weights(self, factor):
        """Multiply every row's weight by its class's ``factor`` (``class_weight``; after :meth:`encode_labels`)."""
        self.w = self.w * factor[self.y_enc.astype(np.int64)]

    def encode_labels(self, classes):
        """Class index of every row (float64), from the global sorted ``classes``."""
        self.y_enc = np.searchsorted(classes, self.y).astype(np.float64)

    def target_sums(self):
        """(sum w*y, sum w, min y, max y, count of non-finite y) for regression targets."""
        y = np.asarray(self.y, dtype=np.float64)
        self.y_enc = y
        finite = np.isfinite(y)
        return (
            float(np.sum(self.w[finite] * y[finite])),
            float(np.sum(self.w)),
            float(y[finite].min()) if finite.any() else np.inf,
            float(y[finite].max()) if finite.any() else -np.inf,
            int(np.sum(~finite)),
        )

    def bin_summary(self, max_bins: int, sample_rows: int, seed: int):
        """Per-feature distinct values (None when more than ``max_bins``) and a row sample.

        Returns
        -------
        distinct : list of (ndarray of shape (k_f,), float64) or None
        sample : ndarray of shape (min(sample_rows, n), n_features), float64
        """
        X = _backend.to_numpy(self.X)
        distinct = []
        for f in range(X.shape[1]):
            x = X[:, f]
            u = np.unique(x[~np.isnan(x)])
            distinct.append(u if u.shape[0] <= max_bins else None)
        m = min(sample_rows, self.n)
        pick = np.sort(np.random.default_rng(seed).choice(self.n, m, replace=False))
        return distinct, X[pick]

    def set_bins(self, bin_mapper):
        """Bin the rows once with the global edges."""
        bm = bin_mapper.to_namespace(self.xp)
        self.codes = bm.transform(self.xp, self.X, self.kernels)
        # the routing's feature-major copy when the kernels read one, once
        self.codes_by_feature = self.kernels.feature_major(self.xp, self.codes)
        return True

    # -- the row set of the tree being grown -----------------------------------
    def _apply(self, ops):
        for name, args in ops:
            args = [_to_ns(self.xp, a) for a in args]
            if name == "row_leaves":  # the tree's end: its rows' leaves kept here, the row set done
                self.row_leaf = self.rows.row_leaves(*args)
                self.rows = None
            else:
                getattr(self.rows, name)(*args)

    def apply(self, ops):
        """The driver's deferred operations (routing, retiring, the rows' leaves), nothing else."""
        self._apply(ops)
        return True

    def histograms(self, ops, slots, n_slots: int, n_bins: int, features=None):
        self._apply(ops)
        drawn = None if features is None else _to_ns(self.xp, features)
        return _backend.to_numpy(self.rows.histograms(_to_ns(self.xp, slots), n_slots, n_bins, drawn))

    def sums(self, ops, slots, n_slots: int):
        self._apply(ops)
        return _backend.to_numpy(self.rows.sums(_to_ns(self.xp, slots), n_slots))


    # -- boosting ----------------------------------------------------------------
    def boost_start(self, loss, baseline):
        """Raw predictions at the baseline (n, K) for ``loss``."""
        xp = self.xp
        self.loss = loss
        self.y_dev = _backend.from_numpy(xp, self.y_enc)
        self.w_dev = _backend.from_numpy(xp, self.w)
        self.w_sum = float(xp.sum(self.w_dev))
        self.unit_weights = bool(np.all(self.w == 1.0))
        base = _backend.from_numpy(xp, baseline)
        self.raw = xp.asarray(xp.broadcast_to(base[None, :], (self.n, int(base.shape[0]))), copy=True)
        self.table = None  # the channel table, written over every round
        self.ahead = False  # whether ``table`` holds the channels of ``raw`` (the last update made them)
        return self._loss_sums()

    def gradient_sums(self, loss, b, where: str):
        """A callable loss's summed gradient and hessian (K,) of the local rows at the constant raw prediction
        ``b`` (its baseline's Newton steps, :meth:`gputrees._loss.CallableLoss.gradient_sums`)."""
        xp = self.xp
        g, h = loss.gradient_sums(xp, _backend.from_numpy(xp, b), _backend.from_numpy(xp, self.y_enc),
                                  _backend.from_numpy(xp, self.w), where)
        return _backend.to_numpy(g), _backend.to_numpy(h)

    def _loss_sums(self):
        xp = self.xp
        if not self.loss.has_value:  # a callable loss: no value to sum (train_score_ NaN)
            return float("nan"), float(xp.sum(self.w_dev))
        pw = self.loss.pointwise(xp, self.raw, self.y_dev)
        return float(xp.sum(pw * self.w_dev)), float(xp.sum(self.w_dev))

    def boost_round(self, seed: int, it: int, n_sub: int, n_total: int, delta=None, n_bins=None):
        """Gradients of this round and a fresh row set of K trees over the local rows.

        With row subsampling, the in-bag rows are those the single-machine fit
        draws (the same generator over the global row index), so the Dask fit
        grows the same trees. With ``n_bins``, the roots' channel sums (K, C)
        and histograms (K, n_features, n_bins, C) are made at once (the
        grower's first requests, :class:`gputrees.dask._cluster.DaskRows`),
        else True.
        """
        xp = self.xp
        inbag = round_inbag(np.random.default_rng([seed, it]), n_total, n_sub)
        self.inbag = None if inbag is None else inbag[self.index]
        if self.ahead and inbag is None and delta is None:
            channels = self.table  # made by the last round's end (boost_update)
        else:
            if delta is None:
                g, h = self.loss.gradients(xp, self.raw, self.y_dev, self.w_dev)
            else:  # Huber: delta, a quantile of every worker's residuals, from the driver
                self.loss.delta = delta
                g, h = self.loss.clipped_gradients(xp, self.raw, self.y_dev, self.w_dev)
            count = None if inbag is None else _backend.from_numpy(xp, self.inbag)
            channels = self.table = round_channels(xp, g, h, count, self.table)
        self.ahead = False
        # the kernel set's compiled row set where it has one (reusing the last round's buffers), else LocalRows
        # every row's hessian 1 where the loss's is the weight, no row weighted and every row in the bag
        unit_hessian = inbag is None and self.loss.hessian_is_weight and self.unit_weights
        self.rows = self.kernels.fast.segment_rows(xp, self.codes, channels, self.codes_by_feature,
                                                   previous=self._last_rows, unit_count=inbag is None,
                                                   unit_hessian=unit_hessian)
        if self.rows is None:
            self.rows = LocalRows(xp, self.codes, channels, self.kernels, record_leaves=True,
                                  codes_by_feature=self.codes_by_feature)
        self._last_rows = self.rows
        if n_bins is None:
            return True
        k = int(channels.shape[0])
        roots = xp.arange(k, dtype=xp.int64)
        return (_backend.to_numpy(self.rows.sums(roots, k)),
                _backend.to_numpy(self.rows.histograms(roots, k, int(n_bins))))

    # -- weighted quantiles searched by the driver (gputrees.dask._quantiles) ------------------------------
    def quantile_start(self, source: str, n_seg: int):
        """Sort the values whose weighted quantiles the driver searches, by segment; their weights per segment.

        ``source``: ``"y"`` (the targets, one segment: a baseline) or
        ``"leaf_residuals"`` (``y - raw`` by the leaf of the round's tree,
        weighted by the round's in-bag rows, before its values are added).
        Rows of weight 0 are left out, as :func:`gputrees._loss.weighted_quantiles` leaves them.
        """
        y = np.asarray(self.y_enc, dtype=np.float64)
        w = np.asarray(self.w, dtype=np.float64)
        if source == "y":
            seg, val = np.zeros(self.n, dtype=np.int64), y
        elif source == "abs_residuals":
            seg, val = np.zeros(self.n, dtype=np.int64), np.abs(y - _backend.to_numpy(self.raw)[:, 0])
        else:
            seg = _backend.to_numpy(self.row_leaf)[0].astype(np.int64)
            val = y - _backend.to_numpy(self.raw)[:, 0]
            if self.inbag is not None:
                w = w * self.inbag
        keep = w > 0
        seg, val, w = seg[keep], val[keep], w[keep]
        order = np.lexsort((val, seg))
        seg, val, w = seg[order], val[order], w[order]
        bounds = np.searchsorted(seg, np.arange(n_seg + 1))
        self.q_values = [val[bounds[s]:bounds[s + 1]] for s in range(n_seg)]
        self.q_cumw = [np.cumsum(w[bounds[s]:bounds[s + 1]]) for s in range(n_seg)]
        return np.asarray([c[-1] if c.shape[0] else 0.0 for c in self.q_cumw])

    def quantile_range(self, lo, hi):
        """Per segment, of the values in ``(lo, hi]``: their count, smallest, largest and middle one."""
        n_seg = len(self.q_values)
        out = np.empty((4, n_seg), dtype=np.float64)
        for s, v in enumerate(self.q_values):
            a, b = np.searchsorted(v, lo[s], side="right"), np.searchsorted(v, hi[s], side="right")
            out[:, s] = (b - a, v[a], v[b - 1], v[(a + b - 1) // 2]) if b > a else (0, np.inf, -np.inf, np.nan)
        return out

    def huber_deviation_sums(self, med):
        """Per leaf of the round's tree: the Huber loss's clipped deviation sum and weight of the in-bag rows
        (:meth:`gputrees._loss.Huber.deviation_sums`)."""
        xp = self.xp
        w = self.w if self.inbag is None else self.w * self.inbag
        leaf = self.row_leaf[0]
        r = self.y_dev - self.raw[:, 0]
        num, den = self.loss.deviation_sums(xp, self.kernels, leaf, r, _backend.from_numpy(xp, w),
                                            _backend.from_numpy(xp, med), int(med.shape[0]))
        return _backend.to_numpy(num), _backend.to_numpy(den)

    def set_delta(self, delta):
        """Set the Huber loss's delta (the next round's, from the driver); the loss sums it gives."""
        self.loss.delta = delta
        return self._loss_sums()

    def quantile_weight_below(self, pivot):
        """Per segment, the weight of the values ``<= pivot``."""
        out = np.zeros(len(self.q_values), dtype=np.float64)
        for s, (v, c) in enumerate(zip(self.q_values, self.q_cumw)):
            i = np.searchsorted(v, pivot[s], side="right")
            out[s] = c[i - 1] if i else 0.0
        return out

    def boost_update(self, values, ops=(), next_round=None):
        """Add the round's leaf values (K, n_nodes) to the raw predictions (after the driver's deferred
        ``ops``, which end the tree); the new loss sums.

        ``next_round``: :meth:`boost_round`'s arguments, the next round begun
        at once (the channels of a round without subsample made by the same
        pass as the update, the kernel set's ``round_end``); then returns
        (loss sums, :meth:`boost_round`'s answer).
        """
        self._apply(ops)
        seed, it, n_sub, n_total, delta = (None,) * 5 if next_round is None else next_round[:5]
        sums = self._add_values(values, next_round is not None and n_sub >= n_total and delta is None)
        if next_round is None:
            return sums
        return sums, self.boost_round(*next_round)

    def _add_values(self, values, ahead: bool):
        """Add the round's leaf values to the raw predictions; the new loss sums. ``ahead``: the next round
        has every row and no new Huber delta, its channels made by the same pass (the kernel set's ``round_end``)."""
        xp = self.xp
        values = _backend.from_numpy(xp, values)
        if ahead and self.loss.has_value:
            self.raw, mean, self.table, _ = self.kernels.round_end(xp, self.loss, self.raw, values, self.row_leaf,
                                                                   self.y_dev, self.w_dev, self.table)
            self.ahead = True
            # the mean back to the sums the driver adds up (a shard of weight 0 has a NaN mean, no loss)
            sums = (float(mean) * self.w_sum if self.w_sum > 0 else 0.0), self.w_sum
        else:
            leaves = xp.permute_dims(self.row_leaf, (1, 0))
            self.raw = self.raw + gather_node_values(xp, values, leaves)
            sums = self._loss_sums()
        self.row_leaf = None
        return sums

    # -- rounds grown here, the histograms exchanged with the other shards (gputrees.dask._peers) --------------
    def mesh_listen(self, host: str):
        """Listen for the other shards on ``host`` (this worker's address); the port."""
        self.mesh = Mesh(host)
        return self.mesh.port

    def mesh_join(self, rank: int, endpoints, token: bytes):
        """Connect to the other shards (:meth:`gputrees.dask._peers.Mesh.join`); whether every one was reached
        (False: the driver grows the trees itself, through the shards' answers)."""
        try:
            self.mesh.join(rank, endpoints, token)
        except (OSError, PeerLostError):
            self.mesh.close()
            return False
        return True

    def mesh_setup(self, criterion, params, bin_mapper, monotonic_cst, learning_rate: float):
        """What :meth:`mesh_round` grows the trees with: the driver's grower settings, on the host (NumPy, as
        the driver grows them: the same splits from the same summed histograms). Whether these rows have a
        missing value."""
        host = _backend.namespace_for(np.empty(0), None)
        self.grow_with = (host, get_kernels(host, n_jobs=self.n_jobs), criterion, params,
                          bin_mapper, monotonic_cst, float(learning_rate))
        # every row's hessian is 1 where the loss's is the weight and no row is weighted (MeshRows' counts)
        self.unit_hessians = bool(self.loss.hessian_is_weight and self.unit_weights)
        # whether a value of these rows is missing (its bin), for the driver's ``count_free``
        xp, missing = self.xp, int(bin_mapper.missing_bin)
        return any(bool(xp.any(self.codes[i:i + (1 << 20)] == missing)) for i in range(0, self.n, 1 << 20))

    def mesh_round(self, seed: int, it: int, n_sub: int, n_total: int, round_rng, tree_features, last: bool,
                   count_free: bool = False):
        """A whole boosting round on this worker: its gradients, the round's trees grown by
        :func:`gputrees._grower.grow` over this worker's rows with every shard's histograms added up
        (:class:`MeshRows`; every shard grows the same trees), their leaf values added to the raw predictions.

        ``round_rng`` and ``tree_features`` are the driver's (the same draws
        on every shard); ``count_free``: no shard's rows have a missing value
        (:meth:`mesh_setup`'s answers), so that the grower may leave the
        count out of the histograms. Returns (the round's trees on the host, their values
        (K, n_nodes), the loss sums); shard 0 alone sends the trees and values
        (every shard has the same), the others None. On any error the mesh
        is closed, so that no other shard waits on this one.
        """
        from .._boost import leaf_values
        from .._grower import grow
        from .._records import GrowerInputs

        host, kernels, criterion, params, bin_mapper, mono, learning_rate = self.grow_with
        try:
            self.boost_round(seed, it, n_sub, n_total)
            every_row = n_sub >= n_total
            inputs = GrowerInputs(codes=None, channels=None, multiplicity=None, bin_mapper=bin_mapper,
                                  criterion=criterion, kernels=kernels, rng=round_rng, tree_features=tree_features,
                                  record_leaves=True, monotonic_cst=mono, unit_count_channel=every_row,
                                  count_free_histograms=count_free)
            # the roots' histograms gathered with their sums unless a node draws its features (the grower may then
            # build the roots' over the drawn ones only)
            n_features = int(self.codes.shape[1])
            every_feature = params.max_features is None or params.max_features >= n_features
            rows = MeshRows(self, self.mesh, int(self.table.shape[0]), int(self.table.shape[-1]),
                            int(bin_mapper.n_bins) if every_feature else None,
                            drops_count=every_row and hasattr(self.rows, "histogram_count"))
            batch = grow(host, inputs, params, rows=rows)
            values = learning_rate * leaf_values(host, kernels, self.loss, criterion, batch, None, None, None)
            sums = self._add_values(values, not last and n_sub >= n_total)
        except BaseException:
            self.mesh.close()
            raise
        return (batch, values, sums) if self.mesh.rank == 0 else (None, None, sums)

    def mesh_rounds(self, plan, first: int, stop: int, count_free: bool = False):
        """Rounds ``first .. stop - 1`` of the fit ``plan`` (:class:`gputrees._boost.BoostPlan`), each a
        :meth:`mesh_round` with the round's draws made here as the driver makes them
        (:func:`gputrees._boost.round_draws`): one request for rounds that need nothing of the driver between
        them (no validation set, early stopping, display or callback). Their answers, in round order."""
        from .._boost import round_draws

        answers = []
        for it in range(first, stop):
            round_rng, _, tree_features = round_draws(plan, it)
            answers.append(self.mesh_round(plan.seed, it, plan.n_sub, plan.n_rows, round_rng, tree_features,
                                           it + 1 >= plan.n_rounds, count_free))
        return answers

    # -- forests -----------------------------------------------------------------
    def forest_channels(self, criterion, classification: bool):
        """Per-row channels of a forest's criterion (from the encoded targets); their number."""
        xp = self.xp
        y = self.y_enc.astype(np.int64) if classification else self.y_enc[:, None]
        self.channels = criterion.row_channels(xp, _backend.from_numpy(xp, y), _backend.from_numpy(xp, self.w))
        return int(self.channels.shape[1])

    def forest_batch(self, forest, first: int, stop: int, n_total: int):
        """A row set for trees ``first .. stop - 1`` with the single-machine bootstrap draws.

        ``forest`` is the (unfitted) estimator carrying the sampling parameters
        and ``_seed``; every shard draws the trees' samples over the global row
        index and keeps its rows' counts, so the trees equal those grown on the
        concatenated data.
        """
        xp = self.xp
        n_features = int(self.codes.shape[1])
        draws = np.stack([forest._tree_sample(t, n_total, n_features)[0][self.index] for t in range(first, stop)])
        mult = (draws > 0).astype(np.float64)
        self.rows = LocalRows(
            xp,
            self.codes,
            self.channels,
            self.kernels,
            multiplicity=_backend.from_numpy(xp, mult),
            weight_multiplicity=_backend.from_numpy(xp, draws),
            codes_by_feature=self.codes_by_feature,
        )
        return True

    def forest_local(self, forest, first: int, stop: int, criterion, bin_mapper, params):
        """Grow trees ``first .. stop - 1`` on this worker's rows alone (local bootstraps).

        Returns the TreeBatch on the host (NumPy arrays).
        """
        from .._grower import grow
        from .._records import GrowerInputs

        if stop <= first:
            return None
        xp = self.xp
        n_features = int(self.codes.shape[1])
        samples = [forest._tree_sample(t, self.n, n_features) for t in range(first, stop)]
        draws = np.stack([s[0] for s in samples])
        feats = None if samples[0][1] is None else np.stack([s[1] for s in samples])
        inputs = GrowerInputs(
            codes=self.codes,
            channels=self.channels,
            multiplicity=_backend.from_numpy(xp, (draws > 0).astype(np.float64)),
            bin_mapper=bin_mapper.to_namespace(xp),
            criterion=criterion,
            kernels=self.kernels,
            rng=np.random.default_rng([forest._seed, first, 1]),
            weight_multiplicity=_backend.from_numpy(xp, draws),
            tree_features=feats,
            random_splits=forest._random_splits,
            codes_by_feature=self.codes_by_feature,
        )
        batch = grow(xp, inputs, params)
        host = {
            f.name: _backend.to_numpy(getattr(batch, f.name)) if hasattr(getattr(batch, f.name), "shape") else getattr(batch, f.name)
            for f in dataclasses.fields(batch)
        }
        return dataclasses.replace(batch, **host)


def requested_roots(slots, n_slots: int, n_trees: int):
    """Which roots a row set's request ``slots`` (node -> slot, -1: none) asks for, in slot order, where it asks
    for roots only (all the slots), else None: the requests that a round's start answered ahead
    (:class:`gputrees.dask._cluster.DaskRows`, :class:`MeshRows`)."""
    slots = np.asarray(slots)
    if slots.shape[0] > n_trees and np.any(slots[n_trees:] >= 0):
        return None
    head = slots[:n_trees]
    roots = np.flatnonzero(head >= 0)
    if roots.shape[0] != n_slots:
        return None
    return roots[np.argsort(head[roots])]


class MeshRows:
    """The grower's row set of :meth:`Shard.mesh_round`: this shard's rows, their histograms and sums added up
    with every other shard's (:meth:`gputrees.dask._peers.Mesh.allgather`, in shard order, as
    :class:`gputrees.dask._cluster.DaskRows` adds the shards' answers); routing, retiring and the rows' leaves
    are the shard's own operations, made as it makes the driver's (:meth:`Shard.apply`).

    The tree's first request (the roots' sums) gathers the roots' sums and
    histograms (over ``n_bins`` bins; None: the sums only) at once
    (:meth:`_start`), one exchange instead of two.

    ``drops_count``: every row counts 1 (no row subsample), so that the
    grower may take count-free histograms ``[G, H]`` (see
    :class:`gputrees._grower.Grower`), a node's count then being its rows
    counted on every shard (:meth:`counts`), or, where every row of every
    shard has a hessian of 1 (``counts_from_weights``, found by the first
    exchange), its hessian sum: no exchange of counts a level.
    """

    def __init__(self, shard: Shard, mesh, n_trees: int, n_channels: int, n_bins, drops_count: bool = False):
        self.shard, self.mesh = shard, mesh
        self.n_trees, self.n_channels, self.n_bins = n_trees, n_channels, n_bins
        self.drops_count = bool(drops_count)
        self.counts_from_weights = False
        self.roots = None  # (sums, histograms) of the roots on every shard, added up, until the first routing
        self.started = False

    def _start(self):
        """Every shard's roots' sums (K, C) and histograms (K, F, B, C'), and whether all its rows have a unit
        hessian, in one exchange (packed in one float64 array, added up element by element as apart)."""
        k = self.n_trees
        slots = np.arange(k, dtype=np.int64)
        sums = self.shard.sums((), slots, k)
        hist = np.zeros(0) if self.n_bins is None else self.shard.histograms((), slots, k, self.n_bins)
        unit = self.drops_count and self.shard.unit_hessians
        parts = self.mesh.allgather(np.concatenate([[1.0 if unit else 0.0], sums.reshape(-1), hist.reshape(-1)]))
        self.counts_from_weights = all(p[0] == 1.0 for p in parts)
        total = add_up([p[1:] for p in parts])
        self.roots = (total[:sums.size].reshape(sums.shape), total[sums.size:].reshape(hist.shape))
        self.started = True

    def _roots(self, slots, n_slots: int):
        """The roots a request asks for (:func:`requested_roots`) where the first exchange answered it, else None."""
        if not self.started:
            self._start()
        return None if self.roots is None else requested_roots(slots, n_slots, self.n_trees)

    @property
    def histogram_count(self) -> bool:
        return self.shard.rows.histogram_count

    @histogram_count.setter
    def histogram_count(self, value: bool) -> None:
        self.shard.rows.histogram_count = bool(value)

    def counts(self, first: int, count: int):
        """Rows (count,) float64 of the nodes ``first .. first + count - 1`` on every shard."""
        return add_up(self.mesh.allgather(_backend.to_numpy(self.shard.rows.counts(int(first), int(count)))))

    def histograms(self, slots, n_slots: int, n_bins: int, features=None):
        roots = self._roots(slots, n_slots) if features is None and n_bins == self.n_bins else None
        if roots is not None:
            return self.roots[1][roots]
        return add_up(self.mesh.allgather(self.shard.histograms((), slots, n_slots, n_bins, features)))

    def sums(self, slots, n_slots: int):
        roots = self._roots(slots, n_slots)
        if roots is not None:
            return self.roots[0][roots]
        return add_up(self.mesh.allgather(self.shard.sums((), slots, n_slots)))

    def route(self, slots, split, base: int, missing_bin: int, sums: bool = True) -> None:
        self.roots = None  # the rows have moved: the roots' answers are gone
        self.shard.apply([("route", (np.asarray(slots), split, int(base), int(missing_bin)))])

    def retire(self, slots) -> None:
        self.roots = None
        self.shard.apply([("retire", (None if slots is None else np.asarray(slots),))])

    def row_leaves(self, layout):
        """The rows' leaves kept by the shard (for the update); none for the batch (as DaskRows')."""
        self.shard.apply([("row_leaves", (layout,))])
        return None
