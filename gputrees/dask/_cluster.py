"""Placing the data on the workers and talking to them.

:func:`make_shards` turns a dask array or dataframe (and its targets and
weights) into one :class:`~gputrees.dask._shard.Shard` actor per worker that
holds partitions, created on that worker so that no row moves.
:class:`Shards` sends a request to every shard and gathers the answers,
watching the workers: a worker lost in the middle of a fit raises
:class:`WorkerLostError` within :data:`LIVENESS_POLL_S` seconds instead of
hanging the client. :class:`DaskRows` is the grower's row set over the shards
(see :mod:`gputrees._rows`); :meth:`Shards.open_mesh` connects the shards to
each other for rounds grown on the workers (:mod:`gputrees.dask._peers`).
"""

from __future__ import annotations

import concurrent.futures
import secrets
import time
from dataclasses import dataclass, field

import numpy as np

from ._peers import PeerLostError, add_up
from ._shard import Shard, requested_roots

#: How often (seconds) a client waiting for a shard checks that its worker is
#: still alive; also the longest a lost worker goes unnoticed.
LIVENESS_POLL_S = 1.0
#: The shard requests of every tree level and round, run by the worker's event loop itself (Dask's
#: ``separate_thread=False``) rather than handed to its actor thread and back: a few milliseconds of
#: work each, for which the two hand-overs (each a wake-up of another thread, on a busy machine a wait
#: for a time slice) cost about as much. The others (binning, summaries: seconds on large shards) keep
#: the worker's loop free.
INLINE_REQUESTS = frozenset({"histograms", "sums", "apply", "boost_round", "boost_update"})
#: The requests that pass over a shard's rows once (summaries, binning, a boosting round grown there), run by the
#: workers' event loops too where every shard holds at most :data:`INLINE_SHARD_CELLS` cells.
SHARD_PASSES = frozenset({"describe", "label_weights", "encode_labels", "target_sums", "bin_summary", "set_bins",
                          "boost_start", "mesh_setup", "mesh_round"})
#: The most cells (rows x features) a shard may hold for :data:`SHARD_PASSES` to run on its worker's event loop:
#: measured on a loaded 2-core machine (1M x 6 on 2 workers, 30 depth-6 rounds), a boosting round in the actor's
#: thread cost a sixth more CPU in all than on the loop (7.2 against 6.1 CPU s), the fit's summaries and binning
#: there another 0.5 CPU s (5.7 against 5.2); above it a pass (about a second at this size) would keep the
#: worker's loop, and its heartbeats, waiting too long.
INLINE_SHARD_CELLS = 1 << 24
#: How long (seconds) the client waits for a worker to answer on a connection
#: of its own before it talks to the shards through the scheduler instead.
DIRECT_PROBE_S = 5.0


class WorkerLostError(RuntimeError):
    """A worker holding training rows left the cluster during a fit.

    The fit is abandoned (no partial model is kept: the estimator stays as it
    was before ``fit``); persist the data again and refit.
    """


@dataclass
class Exchange:
    """One request to every shard and its answers.

    Attributes
    ----------
    kind : str
        The shard method (``"histograms"``, ``"sums"``, ...).
    bytes_received : int
        Bytes of the arrays the shards sent back (all shards).
    wall_s : float
        Time from sending the request to having every answer.
    compute_s : float
        Longest time a shard spent computing its answer; ``wall_s - compute_s``
        is the time spent in communication and scheduling.
    n_nodes : int
        Nodes whose histograms or sums were asked for (0 for other requests).
    """

    kind: str
    bytes_received: int
    wall_s: float
    compute_s: float
    n_nodes: int = 0


def _nbytes(value) -> int:
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    return 0


@dataclass
class Shards:
    """The shard actors of one fit, in a fixed order (sums are made in that order).

    Requests go straight to the shards' workers (``direct``): the client's
    own connections to them, as ``Client.gather(direct=True)`` takes, one
    round trip a request. Dask's actors would send them through the
    scheduler (two round trips, and the scheduler's time) unless the client
    was made with ``direct_to_workers=True``; :func:`make_shards` takes that
    path only where the client cannot reach the workers.
    """

    client: object
    futures: list
    actors: list
    addresses: list
    n_rows: list
    #: per address, the worker's scratch directory when the shard was made: a
    #: worker restarted by its nanny (same address, maybe) has a new one
    identity: dict = field(default_factory=dict)
    log: list = field(default_factory=list)
    direct: bool = False
    #: the requests run by the workers' event loops (:data:`INLINE_REQUESTS`, and :data:`SHARD_PASSES` on small
    #: shards)
    inline: frozenset = INLINE_REQUESTS

    def call(self, method: str, *args):
        """``method(*args)`` on every shard; their answers in shard order."""
        return self.call_each(method, [args] * len(self.actors))

    def call_each(self, method: str, args_per_shard):
        """``method(*args_per_shard[i])`` on shard ``i``; their answers in shard order."""
        t0 = time.perf_counter()
        if self.direct:
            answers = self._direct(method, args_per_shard)
        else:
            pending = [a.timed(method, *args) for a, args in zip(self.actors, args_per_shard)]
            answers, errors = [], []
            for addr, fut in zip(self.addresses, pending):
                try:
                    answers.append(self._wait(addr, fut, method))
                except WorkerLostError:
                    raise
                except Exception as exc:  # a shard's own error: every shard's awaited, the first cause raised
                    errors.append(exc)
            if errors:
                raise _first_cause(errors)
        out = [value for value, _ in answers]
        compute = max((seconds for _, seconds in answers), default=0.0)
        self.log.append(Exchange(method, _nbytes(out), time.perf_counter() - t0, compute))
        return out

    def _direct(self, method, args_per_shard):
        """The answers of every shard to ``method``, sent over the client's connections to their workers; waited
        for together, the workers watched as :meth:`_wait` watches them."""
        pending = [self._send(addr, actor.key, method, args)
                   for addr, actor, args in zip(self.addresses, self.actors, args_per_shard)]
        while True:
            done, waiting = concurrent.futures.wait(pending, timeout=LIVENESS_POLL_S)
            for addr, fut in zip(self.addresses, pending):
                if fut in done and isinstance(fut.exception(), _Unreachable):
                    raise WorkerLostError(self._lost(addr, method)) from fut.exception().__cause__
            if not waiting:
                errors = [fut.exception() for fut in pending if fut.exception() is not None]
                if errors:
                    raise _first_cause(errors)
                return [fut.result() for fut in pending]
            for addr, fut in zip(self.addresses, pending):
                if fut in waiting:
                    self._check_alive(addr, method)

    def _send(self, addr, key, method, args):
        """``timed(method, *args)`` on the actor ``key`` at ``addr`` (one request object): a future of its answer
        (the shard's own error raised by it; :class:`_Unreachable` where the worker or its actor cannot be
        reached)."""
        from distributed.protocol import to_serialize

        fut = concurrent.futures.Future()

        async def run():
            try:
                # the request as one object: each argument serialised apart costs its own pickling and frames
                answer = await self.client.rpc(addr).actor_execute(
                    actor=key, function="request", args=[to_serialize((method, tuple(args)))],
                    kwargs={"separate_thread": method not in self.inline},
                )
            except Exception as exc:  # the worker is gone, or has no such actor any more (a restart)
                unreachable = _Unreachable(addr)
                unreachable.__cause__ = exc
                fut.set_exception(unreachable)
                return
            if answer["status"] == "OK":
                fut.set_result(answer["result"])
            else:
                fut.set_exception(answer["exception"])

        self.client.loop.add_callback(run)
        return fut

    def _check_alive(self, addr, method):
        now = self.client.scheduler_info(n_workers=-1)["workers"].get(addr)
        if now is None or now.get("local_directory") != self.identity.get(addr):
            raise WorkerLostError(self._lost(addr, method)) from None

    def _wait(self, addr, fut, method):
        while True:
            try:
                return fut.result(timeout=LIVENESS_POLL_S)
            except TimeoutError:
                self._check_alive(addr, method)
            except OSError as exc:  # the actor's worker cannot be reached
                raise WorkerLostError(self._lost(addr, method)) from exc

    def _lost(self, addr, method):
        i = self.addresses.index(addr)
        return (
            f"worker {addr} holding {self.n_rows[i]} training rows was lost during the fit "
            f"(while answering {method!r}); the fit was abandoned and no model was kept. "
            "Persist the data again and refit."
        )

    def open_mesh(self) -> bool:
        """Connect every shard to the others (:class:`gputrees.dask._peers.Mesh`) for rounds grown on the workers;
        whether they all are. Only over plain TCP (the workers' own addresses): not through TLS, in-process or
        other comms, where the driver keeps growing the trees from the shards' answers."""
        from distributed.comm import parse_address, parse_host_port

        if any(parse_address(a)[0] != "tcp" for a in self.addresses):
            return False
        hosts = [parse_host_port(parse_address(a)[1])[0] for a in self.addresses]
        ports = self.call_each("mesh_listen", [(h,) for h in hosts])
        endpoints = [(h, int(p)) for h, p in zip(hosts, ports)]
        token = secrets.token_bytes(16)
        joined = self.call_each("mesh_join", [(i, endpoints, token) for i in range(len(self.actors))])
        return all(joined)

    def close(self):
        """Release the actors (their rows stay in the user's persisted collection)."""
        self.client.cancel(self.futures, force=True)
        self.actors, self.futures = [], []


def _first_cause(errors):
    """Of the shards' errors (in shard order), a shard's own before the peers' that lost it (their exchange with
    the failing shard broke off: :class:`gputrees.dask._peers.PeerLostError`)."""
    return next((e for e in errors if not isinstance(e, PeerLostError)), errors[0])


class _Unreachable(Exception):
    """A direct request found no worker, or no shard, at its address (:meth:`Shards._send`)."""


def _reaches_workers(client, addresses) -> bool:
    """Whether the client talks to the shards' workers directly: its ``direct_to_workers`` where set, else
    whether each worker answers on a connection of the client's within :data:`DIRECT_PROBE_S` seconds."""
    if client.direct_to_workers is not None:
        return bool(client.direct_to_workers)

    async def probe():
        import asyncio

        for addr in addresses:
            await asyncio.wait_for(client.rpc(addr).identity(), DIRECT_PROBE_S)

    try:
        client.sync(probe)
    except Exception:  # unreachable (a firewall, another network): through the scheduler
        return False
    return True


class _TimedShard(Shard):
    """A shard whose methods are called through :meth:`timed` (answer, compute seconds)."""

    def timed(self, method, *args):
        t0 = time.perf_counter()
        value = getattr(self, method)(*args)
        return value, time.perf_counter() - t0

    def request(self, call):
        """:meth:`timed` of ``call``, a (method, arguments) pair sent as one object (:meth:`Shards._send`)."""
        method, args = call
        return self.timed(method, *args)


def _pack(start, x, y, w):
    return (start, x, y, w)


def _as_dask_array(obj, what: str, ndim: int):
    import dask.array as da
    import dask.dataframe as dd

    names = categories = None
    if isinstance(obj, dd.DataFrame):
        import pandas as pd
        from pandas.api.types import is_bool_dtype, is_numeric_dtype

        cat_cols = [c for c, t in obj.dtypes.items() if isinstance(t, pd.CategoricalDtype)]
        bad = [str(c) for c, t in obj.dtypes.items()
               if not (is_numeric_dtype(t) or is_bool_dtype(t) or isinstance(t, pd.CategoricalDtype))]
        if bad:
            raise ValueError(
                f"{what} has non-numeric columns {bad}; gputrees.dask trains on numeric and 'category' "
                "columns (encode the others as numbers, or give them the category dtype)"
            )
        unknown = [str(c) for c in cat_cols if not obj[c].cat.known]
        if unknown:
            raise ValueError(
                f"{what} has category columns {unknown} whose categories dask does not know: call "
                "X.categorize() (or astype a pandas CategoricalDtype) so that every partition codes them alike"
            )
        names = np.asarray([str(c) for c in obj.columns], dtype=object)
        if cat_cols:
            # the categories every partition shares; each partition's column becomes their codes (NaN: missing)
            categories = [np.asarray(obj[c].cat.categories, dtype=object) if c in cat_cols else None
                          for c in obj.columns]
            obj = obj.map_partitions(_category_codes, cat_cols, meta=_category_codes(obj._meta, cat_cols))
        obj = obj.to_dask_array(lengths=True)
    elif isinstance(obj, dd.Series):
        obj = obj.to_dask_array(lengths=True)
    elif not isinstance(obj, da.Array):
        raise TypeError(
            f"{what} must be a dask array or dask dataframe, got {type(obj).__name__}; "
            "for in-memory data use the gputrees estimators directly"
        )
    if obj.ndim != ndim:
        raise ValueError(f"{what} must be {ndim}-D, got {obj.ndim}-D")
    if any(np.isnan(c) for c in obj.chunks[0]):
        obj = obj.compute_chunk_sizes()
    return obj, names, categories


def _category_codes(df, columns):
    """A partition with its category ``columns`` replaced by their codes as float64 (NaN for missing), the codes
    :func:`gputrees._validation.to_numeric_2d` gives a pandas category column."""
    df = df.copy()
    for c in columns:
        codes = df[c].cat.codes.to_numpy().astype(np.float64)
        codes[codes < 0] = np.nan
        df[c] = codes
    return df


def make_shards(client, X, y, sample_weight, n_jobs):
    """One shard per worker holding partitions of ``X`` (and ``y``, ``sample_weight``).

    Returns
    -------
    shards : Shards
    n_samples, n_features : int
    feature_names : ndarray of str or None
    categories : list of (ndarray or None) or None
        A dataframe's category columns' categories (their codes are what the shards hold), None elsewhere.
    """
    import dask

    X, names, categories = _as_dask_array(X, "X", 2)
    if X.numblocks[1] > 1:
        X = X.rechunk({1: -1})
    n, n_features = int(X.shape[0]), int(X.shape[1])
    if n == 0:
        raise ValueError("X has 0 rows")
    blocks = [None] * X.numblocks[0]
    ys, ws = list(blocks), list(blocks)
    if y is not None:
        y, _, _ = _as_dask_array(y, "y", 1)
        if int(y.shape[0]) != n:
            raise ValueError(f"y has {int(y.shape[0])} rows, X has {n}")
        ys = list(y.rechunk((X.chunks[0],)).to_delayed().ravel())
    if sample_weight is not None:
        sample_weight, _, _ = _as_dask_array(sample_weight, "sample_weight", 1)
        if int(sample_weight.shape[0]) != n:
            raise ValueError(f"sample_weight has {int(sample_weight.shape[0])} rows, X has {n}")
        ws = list(sample_weight.rechunk((X.chunks[0],)).to_delayed().ravel())
    starts = np.concatenate([[0], np.cumsum(X.chunks[0])[:-1]]).astype(np.int64)
    xs = list(X.to_delayed().ravel())
    parts = [dask.delayed(_pack)(int(s), xb, yb, wb) for s, xb, yb, wb in zip(starts, xs, ys, ws)]
    from distributed import wait

    futures = client.compute(parts)
    wait(futures)
    for fut in futures:
        if fut.status == "error":
            fut.result()  # raises the error of the user's graph here
    who = client.who_has(futures)
    by_worker = {}
    for fut, size in zip(futures, X.chunks[0]):
        holders = who.get(fut.key) or ()
        if not holders:
            raise WorkerLostError(f"partition {fut.key} has no worker holding it")
        by_worker.setdefault(sorted(holders)[0], []).append((fut, int(size)))
    addresses = sorted(by_worker)
    actor_futures = [
        client.submit(
            _TimedShard, [f for f, _ in by_worker[a]], n_jobs, workers=[a], actor=True, pure=False
        )
        for a in addresses
    ]
    actors = [f.result() for f in actor_futures]
    n_rows = [sum(s for _, s in by_worker[a]) for a in addresses]
    # the partition futures die with this frame: the shards hold the rows now
    # (cancelling them would cancel the actors, which depend on them)
    info = client.scheduler_info(n_workers=-1)["workers"]
    identity = {a: info.get(a, {}).get("local_directory") for a in addresses}
    shards = Shards(client, actor_futures, actors, addresses, n_rows, identity,
                    direct=_reaches_workers(client, addresses))
    if max(n_rows) * n_features <= INLINE_SHARD_CELLS:
        shards.inline = INLINE_REQUESTS | SHARD_PASSES
    return shards, n, n_features, names, categories


class DaskRows:
    """The grower's row set over the shards (see :mod:`gputrees._rows`).

    Routing, retiring and the rows' leaves are deferred and sent with the
    next request, so that a tree level costs one exchange: the routing of
    its split nodes' rows and the histograms of the children the grower
    builds. The roots' sums and histograms come with the round's start
    (``prefetched``, :meth:`gputrees.dask._shard.Shard.boost_round`), and
    the tree's last routing and leaves go with the round's update
    (:meth:`take_pending`). Histograms and sums are added up on the client in
    shard order.

    Parameters
    ----------
    shards : Shards
    n_trees, n_channels : int
    prefetched : tuple or None
        Every shard's (roots' sums (K, C), roots' histograms (K, F, B, C)).
    """

    def __init__(self, shards: Shards, n_trees: int, n_channels: int, prefetched=None):
        self.shards = shards
        self.n_trees = n_trees
        self.n_channels = n_channels
        self.pending = []
        self.prefetched = None
        if prefetched is not None:
            self.prefetched = (add_up([p[0] for p in prefetched]), add_up([p[1] for p in prefetched]))

    def _flush(self):
        ops, self.pending = self.pending, []
        return ops

    def take_pending(self):
        """The deferred operations not sent yet (for a request of the caller's), which this row set forgets."""
        return self._flush()

    def flush(self) -> None:
        """Send the deferred operations now (the shards' rows then have their leaves)."""
        if self.pending:
            self.shards.call("apply", self._flush())

    def _roots(self, slots, n_slots: int):
        """Which roots the request ``slots`` asks for, in slot order, where the prefetched answers can serve it
        (nothing deferred, nodes that are roots only), else None."""
        if self.prefetched is None or self.pending:
            return None
        return requested_roots(slots, n_slots, self.n_trees)

    def histograms(self, slots, n_slots: int, n_bins: int, features=None):
        roots = self._roots(slots, n_slots) if features is None else None
        if roots is not None and self.prefetched[1].shape[2] == n_bins:
            return self.prefetched[1][roots]
        drawn = None if features is None else np.asarray(features)
        parts = self.shards.call("histograms", self._flush(), np.asarray(slots), n_slots, n_bins, drawn)
        self.shards.log[-1].n_nodes = n_slots
        return add_up(parts)

    def sums(self, slots, n_slots: int):
        roots = self._roots(slots, n_slots)
        if roots is not None:
            return self.prefetched[0][roots]
        parts = self.shards.call("sums", self._flush(), np.asarray(slots), n_slots)
        self.shards.log[-1].n_nodes = n_slots
        return add_up(parts)

    def route(self, slots, split, base: int, missing_bin: int, sums: bool = True) -> None:
        """Deferred to the next request; ``sums`` is not needed (the shards sum only when asked, :meth:`sums`)."""
        self.pending.append(("route", (np.asarray(slots), split, int(base), int(missing_bin))))

    def retire(self, slots) -> None:
        self.pending.append(("retire", (None if slots is None else np.asarray(slots),)))

    def row_leaves(self, layout):
        """Deferred: every shard keeps its rows' leaves when the operations are sent; nothing comes back (None)."""
        self.pending.append(("row_leaves", (layout,)))
        return None
