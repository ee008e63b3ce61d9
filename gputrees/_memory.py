"""Predicted peak GPU memory of a fit (the formula of docs/memory.md), checked before allocating.

Pure arithmetic on the sizes of the data: no array library is imported here.
"""

from __future__ import annotations

__all__ = ["fit_peak_bytes", "SCAN_FACTOR"]

#: The grower's split-scan working arrays per byte of histogram (``gputrees._grower.SCAN_FACTOR``).
SCAN_FACTOR = 7
#: Bytes per (tree, row) pair of the grower's bookkeeping while it routes rows:
#: row, channel row, node and key (int64, 32 bytes), the routed node and the
#: regrouping order (16), and the regrouped copies of the four arrays (32).
ROUTING_BYTES_PER_PAIR = 80


def fit_peak_bytes(n_rows: int, n_features: int, *, n_bins: int = 256, n_channels: int = 3, n_trees: int = 1,
                   memory_limit: int = 1 << 30, float64_copy: bool = True, boosting_trees_per_round: int = 0) -> int:
    """Predicted peak device memory of a fit with the cuda kernels, in bytes.

    Parameters
    ----------
    n_rows, n_features : int
        Shape of the training matrix.
    n_bins : int
        Bins per feature, the missing-value bin included (``max_bins + 1``):
        codes take 1 byte up to 256 bins, else 2.
    n_channels : int
        Channels per row: classification ``1 + n_classes``, regression
        ``2 + 2 * n_outputs``, gradient boosting 3.
    n_trees : int
        Trees grown together (a forest's batch; boosting: trees per round).
    memory_limit : int
        The estimator's ``memory_limit`` (bound on one level's histograms).
    float64_copy : bool
        Whether the fit makes a float64 copy of X (False for float64 CuPy input, used as it is).
    boosting_trees_per_round : int
        Gradient boosting's K (1 for regression and binary, the classes
        otherwise); 0 for the other estimators.

    Returns
    -------
    int
        ``8 n F [float64 copy] + b n F + 8 n C T + 80 n T + 2 min(M, 8 F B C (1 + S) 2 T)
        + [boosting] (8 n F + 56 n K)``, with ``S = SCAN_FACTOR``; the
        histogram term counts the int64 accumulators of the cuda kernels
        next to their float64 result (hence the factor 2) for the root
        level's sibling pair of each tree, bounded by ``memory_limit``.
    """
    for name, v in (("n_rows", n_rows), ("n_features", n_features), ("n_bins", n_bins),
                    ("n_channels", n_channels), ("n_trees", n_trees)):
        if int(v) < 1:
            raise ValueError(f"{name} must be positive, got {v}")
    n, f = int(n_rows), int(n_features)
    code_bytes = 1 if n_bins <= 256 else 2
    total = code_bytes * n * f
    if float64_copy:
        total += 8 * n * f
    total += 8 * n * n_channels * n_trees + ROUTING_BYTES_PER_PAIR * n * n_trees
    hist = 8 * f * n_bins * n_channels * (1 + SCAN_FACTOR) * 2 * n_trees
    total += 2 * min(int(memory_limit), hist)
    if boosting_trees_per_round:
        total += 8 * n * f + 56 * n * int(boosting_trees_per_round)
    return int(total)
