"""Kernels built on NumPy primitives (``bincount``, ``cumsum``, ``reduceat``).

The histogram kernel runs unchanged on CuPy; the segmented scans are NumPy only.

One weighted ``bincount`` per channel over the flat (node, feature, bin) key:
portable, but several times slower than the compiled kernels, which sit
behind the same signature.
"""

from __future__ import annotations

from .._backend import is_cupy_namespace


def _module(xp):
    if is_cupy_namespace(xp):
        import cupy

        return cupy
    import numpy

    return numpy


def build_histograms(xp, codes, rows, node, weights, n_nodes: int, n_bins: int):
    """Same contract as :func:`gputrees.kernels.reference.build_histograms`."""
    m = _module(xp)
    n_features = codes.shape[1]
    n_channels = weights.shape[1]
    size = n_nodes * n_features * n_bins
    sub = codes[rows]
    key = node[:, None] * (n_features * n_bins) + (
        m.arange(n_features, dtype=m.int64) * n_bins
    )[None, :]
    key = (key + sub).ravel()
    out = m.empty((size, n_channels), dtype=m.float64)
    for c in range(n_channels):
        out[:, c] = m.bincount(key, weights=m.repeat(weights[:, c], n_features), minlength=size)
    return out.reshape(n_nodes, n_features, n_bins, n_channels)


def _starts(np_, seg):
    change = np_.empty(seg.shape[0], dtype=bool)
    change[:1] = True
    np_.not_equal(seg[1:], seg[:-1], out=change[1:])
    return np_.flatnonzero(change)


def segmented_cumsum(xp, values, seg, max_len: int):
    """Same contract as the reference: one cumsum, minus the sum before each run.

    The running total is kept in ``numpy.longdouble`` (80-bit on x86-64 Linux),
    so subtracting it back out leaves an error of about 1e-19 of the batch's
    total: the result does not depend on how the rows were batched, and equals
    the reference to a few float64 ulps (exactly for integer-valued sums). On
    platforms where longdouble is float64 the error grows to 1e-16 of the
    batch total.
    """
    import numpy as np_

    if values.shape[0] == 0:
        return values
    csum = np_.cumsum(values, axis=0, dtype=np_.longdouble)
    starts = _starts(np_, seg)
    before = np_.zeros((starts.shape[0],) + values.shape[1:], dtype=np_.longdouble)
    before[1:] = csum[starts[1:] - 1]
    lengths = np_.diff(np_.append(starts, seg.shape[0]))
    csum -= np_.repeat(before, lengths, axis=0)
    return csum.astype(np_.float64)


def segment_max(xp, values, seg, max_len: int):
    import numpy as np_

    return _reduce(np_, np_.maximum, values, seg)


def segment_min(xp, values, seg, max_len: int):
    import numpy as np_

    return _reduce(np_, np_.minimum, values, seg)


def _reduce(np_, ufunc, values, seg):
    if values.shape[0] == 0:
        return values
    starts = _starts(np_, seg)
    lengths = np_.diff(np_.append(starts, seg.shape[0]))
    return np_.repeat(ufunc.reduceat(values, starts), lengths)


def scatter_rows(xp, index, values, size: int):
    """Same contract as :func:`gputrees.kernels.reference.scatter_rows`: one fancy-index assignment."""
    if int(index.shape[0]) != size:
        raise ValueError(f"scatter_rows needs a permutation of {size} positions, got {int(index.shape[0])}")
    m = _module(xp)
    out = m.empty(size, dtype=values.dtype)
    out[index] = values
    return out


def bootstrap_counts(xp, seed: int, first: int, n_trees: int, n: int, n_draw: int):
    """Same contract as :func:`gputrees.kernels.reference.bootstrap_counts`: each tree's drawn rows counted by
    one ``bincount`` (on NumPy or CuPy, where ``xp``'s arrays are)."""
    from . import reference

    m = _module(xp)
    keys = m.asarray(reference.sample_keys(seed, first, n_trees))
    out = m.empty((n_trees, n), dtype=m.float64)
    for t in range(n_trees):  # a tree at a time: its draws' temporaries, not the batch's
        out[t] = m.bincount(reference.bootstrap_rows(xp, keys[t : t + 1], n, n_draw), minlength=n)
    return out
