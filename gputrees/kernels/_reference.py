"""Reference kernels, written only against the array API standard.

They are the oracle for the fast kernels and the fallback for namespaces with
no fast kernel. The histogram is a sort-based segmented sum computed inside
each bin (by doubling), so a bin's rounding depends only on its own rows: it
is exact whenever each bin's partial sums are representable (counts, integer
weights, one-hot classes), and otherwise equal to float rounding of the bin.
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
    if skey.shape[0] == 0:
        return xp.zeros((n_nodes, n_features, n_bins, n_channels), dtype=xp.float64)
    # longest run of one key bounds the doubling passes
    bounds = xp.astype(
        xp.searchsorted(skey, xp.arange(size + 1, dtype=xp.int64), side="left"), xp.int64
    )
    lengths = bounds[1:] - bounds[:-1]
    sums = segmented_cumsum(xp, w, skey, int(xp.max(lengths)))
    last = xp.clip(bounds[1:] - 1, 0, None)
    hist = xp.where((lengths > 0)[:, None], xp.take(sums, last, axis=0), xp.zeros((1, n_channels), dtype=xp.float64))
    return xp.reshape(hist, (n_nodes, n_features, n_bins, n_channels))


def _shift(xp, a, d, fill):
    """``a`` moved down by ``d`` rows, the first ``d`` rows set to ``fill``."""
    n = a.shape[0]
    d = min(d, n)
    pad = xp.full((d,) + tuple(a.shape[1:]), fill, dtype=a.dtype)
    return xp.concat([pad, a[: n - d, ...]], axis=0)


def segmented_cumsum(xp, values, seg, max_len: int):
    """Inclusive running sum of ``values`` inside runs of equal ``seg``.

    Parameters
    ----------
    values : array of shape (n,) or (n, c), float64
    seg : array of shape (n,), int64, equal values contiguous
    max_len : int
        Upper bound on the length of a run.

    Returns
    -------
    array like ``values``

    By doubling (Hillis-Steele): ``ceil(log2(max_len))`` passes; sums stay
    local to a run, so rounding does not depend on earlier runs.
    """
    d = 1
    out = values
    while d < max_len:
        same = _shift(xp, seg, d, -1) == seg
        prev = _shift(xp, out, d, 0)
        mask = same[:, None] if out.ndim > 1 else same
        out = out + xp.where(mask, prev, xp.zeros_like(prev))
        d *= 2
    return out


def segment_max(xp, values, seg, max_len: int):
    """Maximum of ``values`` (n,) over its run of equal ``seg``, for every element."""
    return _segment_reduce(xp, values, seg, max_len, xp.maximum)


def segment_min(xp, values, seg, max_len: int):
    """Minimum of ``values`` (n,) over its run of equal ``seg``, for every element."""
    return _segment_reduce(xp, values, seg, max_len, xp.minimum)


def _segment_reduce(xp, values, seg, max_len, op):
    d = 1
    out = values
    while d < max_len:
        same = _shift(xp, seg, d, -1) == seg
        out = xp.where(same, op(out, _shift(xp, out, d, 0)), out)
        d *= 2
    last = xp.astype(xp.searchsorted(seg, seg, side="right"), xp.int64) - 1
    return xp.take(out, last)
