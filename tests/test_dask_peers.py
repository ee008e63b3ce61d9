"""The shards' direct exchange (gputrees.dask._peers): meshes of shards in threads of one process, over 127.0.0.1."""

import secrets
import threading

import numpy as np
import pytest

from gputrees.dask._peers import Mesh, PeerLostError, add_up


def _meshes(n):
    """``n`` joined meshes (the join of each in a thread of its own, as every worker joins at once)."""
    meshes = [Mesh("127.0.0.1") for _ in range(n)]
    endpoints = [("127.0.0.1", m.port) for m in meshes]
    token = secrets.token_bytes(16)
    threads = [threading.Thread(target=m.join, args=(i, endpoints, token)) for i, m in enumerate(meshes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert all(len(m.peers) == n - 1 for m in meshes)
    return meshes


def _run_all(meshes, fn):
    """``fn(rank, mesh)`` on every mesh at once; the results (or raised errors) in rank order."""
    out = [None] * len(meshes)

    def run(i):
        try:
            out[i] = fn(i, meshes[i])
        except Exception as exc:  # returned for the test to check
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(meshes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


@pytest.mark.parametrize("n_shards", [1, 2, 3])
def test_allgather_gives_every_shards_array_in_shard_order(n_shards):
    meshes = _meshes(n_shards)
    try:
        # large enough (8 MiB a shard) that the sends fill the sockets' buffers while the peers send too
        arrays = [np.random.default_rng(i).normal(size=(16, 8, 256, 32)) for i in range(n_shards)]
        for _ in range(2):  # the connections serve one exchange after another
            got = _run_all(meshes, lambda i, m: m.allgather(arrays[i]))
            for parts in got:
                assert not isinstance(parts, Exception), parts
                assert len(parts) == n_shards
                for p, a in zip(parts, arrays):
                    np.testing.assert_array_equal(p, a)
                # every shard's sum is the same, bit for bit: the same parts added in the same order
                np.testing.assert_array_equal(add_up(parts), add_up(got[0]))
    finally:
        for m in meshes:
            m.close()


def test_a_closed_peer_fails_the_exchange_at_once():
    meshes = _meshes(3)
    meshes[2].close()  # a shard that failed (it closes its connections) or whose process ended
    got = _run_all(meshes[:2], lambda i, m: m.allgather(np.ones(1000)))
    for err in got:
        assert isinstance(err, PeerLostError), err
    for m in meshes:
        m.close()


def test_a_connection_without_the_token_is_refused():
    a, b = Mesh("127.0.0.1"), Mesh("127.0.0.1")
    endpoints = [("127.0.0.1", a.port), ("127.0.0.1", b.port)]
    token = secrets.token_bytes(16)
    import socket

    stranger = socket.create_connection(endpoints[1])
    stranger.sendall(b"x" * 24)  # no token: closed, the real shard still accepted
    threads = [threading.Thread(target=m.join, args=(i, endpoints, token)) for i, m in enumerate((a, b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    try:
        assert set(b.peers) == {0} and set(a.peers) == {1}
        got = _run_all([a, b], lambda i, m: m.allgather(np.full(3, float(i))))
        np.testing.assert_array_equal(add_up(got[0]), np.full(3, 1.0))
    finally:
        stranger.close()
        a.close()
        b.close()


def _mesh_rounds(n_rounds, unit_hessians):
    """Two shards of a squared-error regression (no weights, no missing value) growing ``n_rounds`` depth-4
    rounds over a mesh, in threads; shard 0's (trees, values) per round."""
    from gputrees import GradientBoostingRegressor
    from gputrees._binning import bin_mapper_from_summaries
    from gputrees._boost import RoundGenerator
    from gputrees._criteria import Newton
    from gputrees._loss import SquaredError
    from gputrees.dask._shard import Shard

    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(3000, 4)) * 10) / 10
    y = X @ np.array([1.0, -0.5, 0.25, 0.0]) + rng.normal(size=3000)
    bm = bin_mapper_from_summaries(np, [np.unique(X[:, f]) for f in range(4)], X, np.zeros(4, bool), 255)
    params = GradientBoostingRegressor(max_depth=4, min_child_weight=1.0, min_samples_leaf=1)._grower_params(4)
    shards = [Shard([(a, X[a:a + 1500], y[a:a + 1500], None)], n_jobs=1) for a in (0, 1500)]
    for sh, m in zip(shards, _meshes(2)):
        sh.set_bins(bm)
        sh.target_sums()
        sh.boost_start(SquaredError(), np.array([float(np.mean(y))]))
        sh.mesh = m
        sh.mesh_setup(Newton(1.0), params, bm, None, 0.1)
        assert sh.unit_hessians  # squared error, every weight 1
        sh.unit_hessians = unit_hessians
    rounds = []
    for it in range(n_rounds):
        out = _run_all([sh.mesh for sh in shards],
                       lambda i, m: shards[i].mesh_round(7, it, 3000, 3000, RoundGenerator(7, it), None,
                                                         it + 1 == n_rounds, True))
        assert not any(isinstance(o, Exception) for o in out), out
        rounds.append(out[0][:2])
    for sh in shards:
        sh.mesh.close()
    return rounds


def test_mesh_rounds_count_rows_by_their_hessians_where_every_hessian_is_one(monkeypatch):
    from gputrees.dask._shard import MeshRows

    counted = []
    original = MeshRows.counts
    monkeypatch.setattr(MeshRows, "counts", lambda self, *a: counted.append(a) or original(self, *a))
    # unit hessians: a child's count is its hessian sum (no count exchange a level), the same trees and values
    by_hessians = _mesh_rounds(3, True)
    assert not counted
    by_rows = _mesh_rounds(3, False)
    assert counted
    for (a, va), (b, vb) in zip(by_hessians, by_rows):
        for name in ("feature", "bin", "left", "right", "missing_left", "stats"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        np.testing.assert_array_equal(va, vb)
