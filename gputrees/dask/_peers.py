"""The shards of a fit talking to each other directly: every shard's arrays gathered by every other.

A boosting round grown on the workers (:meth:`gputrees.dask._shard.Shard.mesh_round`)
needs, each tree level, the histograms of all shards added up; a :class:`Mesh`
sends each shard's to every other over TCP connections of its own (one per
pair of shards, made once a fit), so that a level costs one exchange between
the workers and none with the client. Every shard adds the gathered arrays in
shard order (:func:`add_up`), the sum the client made of the same answers, so
every worker finds the same splits.
"""

from __future__ import annotations

import selectors
import socket
import struct

import numpy as np

__all__ = ["Mesh", "PeerLostError", "add_up"]

#: How long (seconds) a shard waits for its peers to connect when the mesh is made.
CONNECT_TIMEOUT_S = 30.0
#: How long (seconds) a shard waits for a peer's array before it gives up on it: the peer's work of a tree level
#: (its histograms) must end within it. A peer whose process ends closes its connections, noticed at once.
EXCHANGE_TIMEOUT_S = 600.0


class PeerLostError(RuntimeError):
    """Another shard of the fit closed its connection or stopped answering during an exchange.

    Not an ``OSError``: the client takes those for its own lost connection to a worker.
    """


def add_up(parts):
    """The arrays ``parts`` added in their order (the shards' order: every shard and the client add alike)."""
    total = np.array(parts[0], copy=True)
    for p in parts[1:]:
        total += p
    return total


def _recv_exact(sock, n: int) -> bytes:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise PeerLostError("a peer shard closed its connection while the mesh was made")
        got += k
    return bytes(buf)


class Mesh:
    """One shard's connections to the other shards of a fit.

    Made in two steps, each a request to every shard: :meth:`__init__`
    listens on ``host`` (the worker's own address), then :meth:`join` connects
    to the shards after this one and accepts those before it, each connection
    opened with the fit's ``token`` (a connection without it is closed).
    """

    def __init__(self, host: str):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.server = socket.create_server((host, 0), family=family)
        self.port = int(self.server.getsockname()[1])
        self.rank = 0
        self.peers = {}  # rank -> connected socket

    def join(self, rank: int, endpoints, token: bytes) -> None:
        """Connect to the shards ``endpoints`` ((host, port) of every shard, in shard order; this one ``rank``)."""
        self.rank = int(rank)
        hello = struct.Struct("<q")
        try:
            for j in range(self.rank + 1, len(endpoints)):
                s = socket.create_connection(tuple(endpoints[j]), timeout=CONNECT_TIMEOUT_S)
                s.sendall(token + hello.pack(self.rank))
                self.peers[j] = s
            self.server.settimeout(CONNECT_TIMEOUT_S)
            while len(self.peers) < len(endpoints) - 1:
                s, _ = self.server.accept()
                s.settimeout(CONNECT_TIMEOUT_S)
                first = _recv_exact(s, len(token) + hello.size)
                j = hello.unpack(first[len(token):])[0]
                if first[: len(token)] != token or not 0 <= j < self.rank or j in self.peers:
                    s.close()  # not a shard of this fit
                    continue
                self.peers[j] = s
        finally:
            self.server.close()
        for s in self.peers.values():
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.setblocking(False)

    def allgather(self, a):
        """Every shard's ``a`` (the same shape and dtype on every shard), in shard order; this one's included.

        Sends to and receives from every peer at once (non-blocking sockets
        watched by a selector), so that no two shards wait on each other's
        full send buffers.
        """
        a = np.ascontiguousarray(a)
        n = a.nbytes
        parts = {self.rank: a}
        if not self.peers:
            return [a]
        out = {j: bytearray(n) for j in self.peers}
        sent = dict.fromkeys(self.peers, 0)
        got = dict.fromkeys(self.peers, 0)
        data = memoryview(a.reshape(-1).view(np.uint8))
        sel = selectors.DefaultSelector()
        try:
            for j, s in self.peers.items():
                sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, j)
            left = 2 * len(self.peers)  # sends and receives not finished
            while left:
                events = sel.select(EXCHANGE_TIMEOUT_S)
                if not events:
                    raise PeerLostError(f"no answer from a peer shard within {EXCHANGE_TIMEOUT_S:.0f} s")
                for key, mask in events:
                    j, s = key.data, key.fileobj
                    if mask & selectors.EVENT_WRITE and sent[j] < n:
                        sent[j] += s.send(data[sent[j]:])
                        left -= sent[j] == n
                    if mask & selectors.EVENT_READ and got[j] < n:
                        k = s.recv_into(memoryview(out[j])[got[j]:])
                        if k == 0:
                            raise PeerLostError(f"peer shard {j} closed its connection during an exchange")
                        got[j] += k
                        left -= got[j] == n
                    want = (selectors.EVENT_READ if got[j] < n else 0) | (selectors.EVENT_WRITE if sent[j] < n else 0)
                    if want == 0:
                        sel.unregister(s)
                    elif want != key.events:
                        sel.modify(s, want, j)
        except OSError as exc:
            raise PeerLostError(f"a peer shard could not be reached during an exchange: {exc}") from exc
        finally:
            sel.close()
        for j, buf in out.items():
            parts[j] = np.frombuffer(buf, dtype=a.dtype).reshape(a.shape)
        return [parts[j] for j in range(len(parts))]

    def close(self) -> None:
        """Close every connection (the peers' exchanges then fail at once rather than wait)."""
        self.server.close()
        for s in self.peers.values():
            s.close()
        self.peers = {}
