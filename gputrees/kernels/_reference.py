"""Reference kernels, written only against the array API standard.

They are the oracle for the fast kernels and the fallback for namespaces with
no fast kernel. The histogram is a sort-based segmented sum: it is exact
whenever the channel sums are exactly representable (counts, integer weights,
one-hot classes), and equal to float rounding otherwise.
"""

from __future__ import annotations


def build_histograms(xp, codes, rows, node, weights, n_nodes: int, n_bins: int):
    """Histograms of a batch of nodes.

    Parameters
    ----------
    codes : array of shape (n_samples, n_features), uint8 or uint16
        The binned training matrix.
    rows : array of shape (n_rows,), int64
        Row of ``codes`` for each contributing row (a row may appear several
        times, once per tree of a batch).
    node : array of shape (n_rows,), int64
        Histogram slot, ``0 <= node < n_nodes``, of each contributing row.
    weights : array of shape (n_rows, n_channels), float64
        The row's channels.
    n_nodes, n_bins : int

    Returns
    -------
    hist : array of shape (n_nodes, n_features, n_bins, n_channels), float64
    """
    n_features = codes.shape[1]
    n_channels = weights.shape[1]
    size = n_nodes * n_features * n_bins
    sub = xp.astype(xp.take(codes, rows, axis=0), xp.int64)
    feat = xp.arange(n_features, dtype=xp.int64)
    key = xp.reshape((node[:, None] * n_features + feat[None, :]) * n_bins + sub, (-1,))
    order = xp.argsort(key, stable=True)
    skey = xp.take(key, order)
    src_row = order // n_features
    w = xp.take(weights, src_row, axis=0)
    zero = xp.zeros((1, n_channels), dtype=xp.float64)
    csum = xp.concat([zero, xp.cumulative_sum(w, axis=0)], axis=0)
    bounds = xp.searchsorted(skey, xp.arange(size + 1, dtype=xp.int64), side="left")
    hist = xp.take(csum, bounds[1:], axis=0) - xp.take(csum, bounds[:-1], axis=0)
    # empty segments must be exactly zero (the difference of equal prefixes is)
    return xp.reshape(hist, (n_nodes, n_features, n_bins, n_channels))
