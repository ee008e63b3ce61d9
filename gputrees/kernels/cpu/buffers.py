"""Output buffers reused within a fit (:func:`workspace`) instead of fresh pages for every level's arrays.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading

import numba
import numpy as np

from .jit import JIT

# -- reused output buffers ----------------------------------------------------------
#: A workspace hands a free buffer to a request at most this many times
#: smaller (a larger one stays free for a larger request): were any free
#: buffer that fits handed out, small requests would hold large buffers and
#: the fit would allocate more of them, with more memory and page faults.
MAX_WASTE = 1.5


class _Workspace:
    """Float64 buffers handed out again once nobody holds them (see :func:`workspace`).

    A buffer is free when the only references to it are this list's: every
    array the kernels hand out is a view of it, and NumPy views (and views of
    views) hold their base, so the grower dropping its last histogram view
    frees the buffer.
    """

    def __init__(self):
        self.buffers = []
        self.buffers.append(np.empty(1))
        self._free_refs = self._refs(0)  # the count of a buffer nobody else holds
        self.buffers.clear()
        #: work buffers kept by name for the workspace's life (:func:`kept`)
        self.kept = {}
        #: the routing's pair arrays, a pool of their own (:func:`pair_buffer`)
        self.pairs = None

    def _refs(self, i):
        return sys.getrefcount(self.buffers[i])

    def close(self):
        """Shut down the kept objects that run threads (executors, :func:`kept`), waiting for their threads."""
        for _, obj in self.kept.values():
            shutdown = getattr(obj, "shutdown", None)
            if shutdown is not None:
                shutdown(wait=True)
        self.kept.clear()

    def keep(self, name: str, key, make):
        """The object kept under ``name`` for ``key``, made by ``make()`` the first time (or when ``key`` changed).

        One object per name: a new key replaces the old one.
        """
        held = self.kept.get(name)
        if held is None or held[0] != key:
            held = (key, make())
            self.kept[name] = held
        return held[1]

    def take(self, size: int):
        """A free buffer of ``size`` to ``MAX_WASTE * size`` float64 (the smallest such), else a new one.

        When none fits, the free ones are let go first: what the workspace
        holds stays what is in use plus one buffer.
        """
        best = -1
        for i in range(len(self.buffers)):
            if self._refs(i) == self._free_refs and size <= self.buffers[i].shape[0] <= MAX_WASTE * size:
                if best < 0 or self.buffers[i].shape[0] < self.buffers[best].shape[0]:
                    best = i
        if best >= 0:
            return self.buffers[best]
        in_use = [self._refs(i) > self._free_refs for i in range(len(self.buffers))]
        self.buffers = [b for b, used in zip(self.buffers, in_use) if used]
        self.buffers.append(np.empty(size))
        return self.buffers[-1]


_ACTIVE = threading.local()


@contextlib.contextmanager
def workspace():
    """Inside: this thread's histogram outputs come from buffers reused across calls.

    A forest's level writes hundreds of megabytes of histograms; fresh
    arrays fault their pages in every time, which can take as long as the
    kernels' own work (large NumPy arrays get huge pages, each fault of
    which may compact memory first under ``transparent_hugepage/defrag = madvise``).
    Reused, they are written in place. Kernels' outputs are then views of buffers
    that a later call overwrites once the caller holds no view of them any
    more; the buffers are released when the block ends.
    """
    before = getattr(_ACTIVE, "workspace", None)
    ws = _ACTIVE.workspace = _Workspace()
    try:
        yield
    finally:
        _ACTIVE.workspace = before
        ws.close()


def in_workspace() -> bool:
    """Whether this thread is inside a :func:`workspace` (what :func:`kept` makes is then kept, and ended, there)."""
    return getattr(_ACTIVE, "workspace", None) is not None


def kept(name: str, key, make):
    """``make()``, or inside :func:`workspace` the object it made last for the same ``name`` and ``key``.

    For work buffers a kernel writes before it reads (the compiled tree's
    rows and histograms): every tree of a fit then writes the same pages
    instead of faulting in fresh ones. An object with a ``shutdown`` method
    (an executor) is shut down when the workspace ends.
    """
    ws = getattr(_ACTIVE, "workspace", None)
    return make() if ws is None else ws.keep(name, key, make)


def pair_buffer(size: int):
    """An uninitialised 8-byte-item buffer of ``size`` (float64): inside :func:`workspace`, reused, else new.

    The workspace keeps the routing's pair arrays apart from the histograms
    (:attr:`_Workspace.pairs`), so that requests of one kind do not let the
    other's free buffers go.
    """
    ws = getattr(_ACTIVE, "workspace", None)
    if ws is None or size == 0:
        return np.empty(size)
    if ws.pairs is None:
        ws.pairs = _Workspace()
    return ws.pairs.take(size)[:size]


def output_buffer(shape):
    """An uninitialised float64 array of ``shape``: a view of a reused buffer inside :func:`workspace`, else new.

    Buffers are NumPy's: NumPy asks the kernel for huge pages from 4 MB on,
    which the split scan and the sibling subtraction, rereading every
    histogram, gain from (Numba's own allocations get 4 KiB pages); reused,
    their faults are paid once.
    """
    size = math.prod(int(d) for d in shape)
    ws = getattr(_ACTIVE, "workspace", None)
    buf = np.empty(size) if ws is None else ws.take(size)
    return buf[:size].reshape(shape)


@numba.njit(**JIT)
def zeros2(rows, cols):
    """np.zeros((rows, cols)), float64, outside any parallel region (see :func:`_route_plan`)."""
    return np.zeros((rows, cols), dtype=np.float64)
