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
