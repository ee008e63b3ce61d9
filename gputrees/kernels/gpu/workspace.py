"""A fit's device arrays kept across its batches of trees: the cuda set's ``Kernels.workspace``.

Inside :func:`workspace` (a boosting fit's rounds), :func:`kept` hands a
kernel the arrays it made for the fit's last batch of the same shapes, so
that a round allocates (and zeroes) nothing it reused; outside, a new set
each call. The kernels that take them keep them ready for the next batch
(see :func:`gputrees.kernels.gpu.tree.grow_tree`).
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["workspace", "kept"]

_ACTIVE = threading.local()


@contextlib.contextmanager
def workspace():
    """Inside: :func:`kept` keeps what it makes, until the block ends (this thread's)."""
    before = getattr(_ACTIVE, "kept", None)
    _ACTIVE.kept = {}
    try:
        yield
    finally:
        _ACTIVE.kept = before


def kept(name: str, key, make):
    """``make()``, or inside :func:`workspace` what it made last under ``name`` for the same ``key`` (one object
    a name: a new key replaces the old one)."""
    held = getattr(_ACTIVE, "kept", None)
    if held is None:
        return make()
    entry = held.get(name)
    if entry is None or entry[0] != key:
        entry = (key, make())
        held[name] = entry
    return entry[1]
