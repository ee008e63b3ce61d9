"""Small typed records the grower hands to the row-level kernels."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ActiveRows:
    """The (tree, row) pairs still in growing nodes (device arrays of length m).

    Attributes
    ----------
    row : (m,) int64
        Row of the binned matrix.
    chan_index : (m,) int64
        Row of the channel table holding this pair's channels (the row itself,
        or ``tree * n + row`` when every tree has its own channels).
    node : (m,) int64
        Node the pair is in (global node id of the batch).
    mult : (m,) float64 or None
        Multiplicity (bootstrap count) applied to the first channel, and to
        every channel when ``wmult`` is None. None means 1.
    wmult : (m,) float64 or None
        Multiplicity applied to the other channels (class-weighted bootstrap). None
        means ``mult``.
    key : (m,) int64 or None
        Identity of the pair, ``tree * n + row`` (None: ``row``, one tree).
    bounds : (n_ids + 1,) int64 or None
        When given, the pairs are sorted by node id and node ``k``'s pairs
        are the positions ``bounds[k]:bounds[k + 1]`` (ids from ``n_ids`` on
        have none); a kernel that routes pairs may give it, and the row-level
        kernels may read it instead of scanning ``node``. None: unknown.

    A kernel set may return the pairs in another order (``route_rows`` of the
    Numba set groups them by node); the pairs of one node always keep their
    relative order, so sums over a node's rows are made in the same order.
    """

    row: object
    chan_index: object
    node: object
    mult: object = None
    wmult: object = None
    key: object = None
    bounds: object = None


@dataclass(frozen=True)
class TreeRows:
    """The rows of whole trees, as the multiplicities give them: tree ``t``'s in-bag rows are those with
    ``multiplicity[t, r] > 0``, in row order (the pairs a :class:`gputrees._rows.LocalRows` would make).

    Attributes
    ----------
    multiplicity : array of shape (n_trees, n_samples), float64
    weight_multiplicity : array of shape (n_trees, n_samples), float64, or None
        See :class:`gputrees._grower.GrowerInputs`.
    channels : array of shape (n_samples, C), float64
    """

    multiplicity: object
    weight_multiplicity: object
    channels: object
