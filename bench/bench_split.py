"""Split search of one tree level: the generic array-API code against the compiled scan.

Histograms of ``--nodes`` nodes x ``--features`` features x ``--bins`` bins
are built from random rows (``--rows`` of them, spread over the nodes, 5% of
the values missing), then every node's best split is searched with
:func:`gputrees._splitting.find_best_splits` alone ("generic") and with the
Numba kernel set's ``best_splits`` ("kernel"), alternated, ``--repeat`` times;
medians are printed. The two records are checked equal first.

    python bench/bench_split.py --criterion newton --nodes 32 --features 28 --bins 256
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gputrees._backend import namespace_of
from gputrees._binning import fit_bin_mapper
from gputrees._criteria import Entropy, FriedmanMSE, Gini, Newton, Poisson, SquaredError
from gputrees._splitting import SplitConstraints, find_best_splits
from gputrees.kernels import get_kernels

CRITERIA = {
    "newton": lambda: Newton(1.0),
    "gini": lambda: Gini(n_classes=2),
    "gini10": lambda: Gini(n_classes=10),
    "entropy": lambda: Entropy(n_classes=2),
    "squared_error": lambda: SquaredError(n_outputs=1),
    "friedman_mse": lambda: FriedmanMSE(n_outputs=1),
    "poisson": lambda: Poisson(n_outputs=1),
}


def _channels(criterion, rng, n):
    xp = namespace_of(np.empty(0))
    if isinstance(criterion, Newton):
        return criterion.row_channels(xp, rng.standard_normal(n), rng.random(n) + 0.1)
    if criterion.is_classification:
        return criterion.row_channels(xp, rng.integers(0, criterion.n_classes, n), np.ones(n))
    return criterion.row_channels(xp, rng.random((n, 1)) * 3, np.ones(n))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--criterion", choices=sorted(CRITERIA), default="newton")
    ap.add_argument("--nodes", type=int, default=32)
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--bins", type=int, default=256, help="max_bins (value bins; one more for missing)")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--max-features", type=int, default=0, help="draw this many features per node (0: all)")
    ap.add_argument("--repeat", type=int, default=21)
    ap.add_argument("--threads", type=int, default=None, help="threads of the kernel (default: every core)")
    args = ap.parse_args(argv)

    rng = np.random.default_rng(0)
    xp = namespace_of(np.empty(0))
    X = rng.standard_normal((args.rows, args.features))
    X[rng.random(X.shape) < 0.05] = np.nan
    is_cat = np.zeros(args.features, dtype=bool)
    mapper = fit_bin_mapper(xp, X, is_cat, max_bins=args.bins)
    kernels = get_kernels(xp, "numba", n_jobs=args.threads)
    codes = mapper.transform(xp, X, kernels)
    criterion = CRITERIA[args.criterion]()
    w = _channels(criterion, rng, args.rows)
    node = rng.integers(0, args.nodes, args.rows)
    rows = np.arange(args.rows, dtype=np.int64)
    hist = kernels.build_histograms(xp, codes, rows, node, w, args.nodes, mapper.n_bins)
    parent = hist[:, 0].sum(axis=1)
    cons = SplitConstraints(min_samples_leaf=1, min_weight_leaf=1e-3)
    is_cat = np.zeros(args.features, dtype=bool)
    mask = None
    if args.max_features:
        mask = np.zeros((args.nodes, args.features), dtype=bool)
        for i in range(args.nodes):
            mask[i, rng.choice(args.features, args.max_features, replace=False)] = True

    def generic():
        return find_best_splits(xp, hist, parent, criterion, cons, is_cat, mask, mapper)

    def kernel():
        return find_best_splits(xp, hist, parent, criterion, cons, is_cat, mask, mapper, kernel=kernels.best_splits)

    a, b = generic(), kernel()
    for k in a.__dataclass_fields__:
        assert np.array_equal(getattr(a, k), getattr(b, k), equal_nan=True), k
    times = {"generic": [], "kernel": []}
    for _ in range(args.repeat):
        for name, fn in (("generic", generic), ("kernel", kernel)):
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    g, k = np.median(times["generic"]), np.median(times["kernel"])
    shape = f"{args.nodes} nodes x {args.features} features x {mapper.n_bins} bins x {hist.shape[3]} channels"
    drawn = f", {args.max_features} features drawn" if args.max_features else ""
    threads = f"{args.threads or 'all'} threads"
    times = f"generic {g * 1e3:.3f} ms, kernel {k * 1e3:.3f} ms, x{g / k:.1f}"
    print(f"{args.criterion}: {shape}{drawn}, {threads}: {times}")


if __name__ == "__main__":
    main()
