"""Per-node random draws keyed by the node's path from its root.

A node's random draws (the features it may split on, ``max_features``; the
uniforms of extremely randomised thresholds) are a function of a 64-bit *key*
that depends only on its tree and on its path from the root: the root's key
is mixed from a per-tree key drawn once per batch from the fit's generator,
and each child's is mixed from its parent's and its side. So a node's draws
do not depend on the order in which nodes are grown, on how many other nodes
a round has, or on which search finds its split: the level-wise grower and a
compiled kernel that finishes a small node's whole subtree depth-first
(:mod:`gputrees.kernels.cpu.subtree`) draw the same features for the same
node, and their trees are equal.

The mixing function is SplitMix64's finaliser (Steele, Lea and Flood, "Fast
splittable pseudorandom number generators", OOPSLA 2014), a bijection of
64-bit integers whose outputs pass BigCrush when fed a counter. Uniforms are
its top 53 bits scaled to [0, 1), as ``numpy.random.Generator.random`` makes
them.

This module works on host NumPy arrays (the grower's draws are host-side);
the mixing and its constants are :mod:`gputrees.kernels.rules`', which the
compiled kernels call for their own draws.
"""

from __future__ import annotations

import numpy as np

from . import rules
from .rules import GOLDEN, LEFT, RIGHT, TO_UNIT

__all__ = ["mix64", "tree_keys", "root_keys", "child_keys", "uniforms", "feature_mask", "LEFT", "RIGHT", "GOLDEN"]


def mix64(z):
    """SplitMix64's finaliser of a uint64 array (wrapping arithmetic), same shape."""
    return rules.mix64(np.asarray(z, dtype=np.uint64))


def tree_keys(rng, n_trees: int):
    """Keys (n_trees,) uint64 of the trees of a batch, drawn from the fit's generator."""
    return rng.integers(0, np.iinfo(np.int64).max, size=n_trees, dtype=np.int64, endpoint=True).astype(np.uint64)


def root_keys(keys):
    """Keys of the roots of trees whose keys are ``keys`` (m,) uint64."""
    return mix64(keys)


def child_keys(parent):
    """Keys (2m,) uint64 of the children of nodes with keys ``parent`` (m,): left, right, left, ..."""
    parent = np.asarray(parent, dtype=np.uint64)
    out = np.empty(2 * parent.shape[0], dtype=np.uint64)
    out[0::2] = mix64(parent ^ LEFT)
    out[1::2] = mix64(parent ^ RIGHT)
    return out


def uniforms(keys, n: int, first: int = 0):
    """Uniforms (m, n) float64 in [0, 1): draw ``first + j`` of each node, j < n.

    Draw ``d`` of a node with key ``K`` is ``mix64(K + (d + 1) * GOLDEN)``'s
    top 53 bits (SplitMix64's counter stream started at the node's key).
    """
    keys = np.asarray(keys, dtype=np.uint64)
    d = np.arange(first + 1, first + n + 1, dtype=np.uint64)
    z = mix64(keys[:, None] + d[None, :] * GOLDEN)
    return (z >> np.uint64(11)).astype(np.float64) * TO_UNIT


def feature_mask(keys, n_features: int, k: int, allowed=None):
    """Features drawn for each node (m, n_features) bool: ``k`` of them without replacement.

    The features of the ``k`` smallest of the node's first ``n_features``
    uniforms (ties to the lower feature); with ``allowed`` (m, n_features)
    bool, among the allowed ones only (all of them when fewer than ``k``).
    """
    u = uniforms(keys, n_features)
    if allowed is not None:
        u = np.where(allowed, u, np.inf)
    rank = np.argsort(np.argsort(u, axis=1, kind="stable"), axis=1, kind="stable")
    keep = rank < k
    if allowed is not None:
        keep &= allowed
    return keep
