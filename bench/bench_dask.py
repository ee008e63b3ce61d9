"""Dask data-parallel boosting: fit time, communication per level, bytes per level.

Run on one machine with 1 and 2 worker processes (one thread each), the data
generated on the workers (nothing ships from the client)::

    python bench/bench_dask.py --rows 4000000 --rounds 10

For every configuration it prints the fit time, the mean wall time of a tree
level's exchanges (children's sums + histograms) and the part of it spent in
communication and scheduling (wall minus the slowest worker's compute), and
the bytes the workers sent per histogram exchange against the formula
``workers x nodes x features x bins x channels x 8``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tree import print_aligned  # noqa: E402


def make_data(n_rows, n_features, chunk):
    import dask.array as da

    rs = da.random.RandomState(0)
    X = rs.normal(size=(n_rows, n_features), chunks=(chunk, n_features))
    w = np.linspace(1.0, -1.0, n_features)
    y = ((X @ w + 0.5 * X[:, 0] * X[:, 1] + rs.normal(size=n_rows, chunks=chunk)) > 0).astype(np.int64)
    return X, y


def run(n_workers, args):
    from distributed import Client, LocalCluster, wait

    from gputrees.dask import DaskGradientBoostingClassifier

    with LocalCluster(
        n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    ) as cluster, Client(cluster) as client:
        X, y = make_data(args.rows, args.features, -(-args.rows // (4 * n_workers)))
        X, y = client.persist([X, y])
        wait([X, y])
        est = DaskGradientBoostingClassifier(
            n_estimators=args.rounds, max_depth=args.depth, learning_rate=0.1, max_bins=255, n_jobs=1
        )
        t0 = time.perf_counter()
        est.fit(X, y)
        fit_s = time.perf_counter() - t0
        log = est.exchanges_
        hist = [e for e in log if e.kind == "histograms"]
        sums = [e for e in log if e.kind == "sums"]
        level = [h.wall_s + s.wall_s for h, s in zip(hist, sums)]
        comm = [(h.wall_s - h.compute_s) + (s.wall_s - s.compute_s) for h, s in zip(hist, sums)]
        bins = est._bin_mapper.n_bins
        formula = [n_workers * h.n_nodes * args.features * bins * 3 * 8 for h in hist]
        sent = [h.bytes_received for h in hist]
        return {
            "workers": n_workers,
            "fit s": f"{fit_s:.2f}",
            "levels": len(hist),
            "level ms (median)": f"{1e3 * np.median(level):.1f}",
            "comm ms/level (median)": f"{1e3 * np.median(comm):.1f}",
            "hist MB/level (median)": f"{np.median(sent) / 1e6:.2f}",
            "sent / formula": f"{sum(sent) / sum(formula):.3f}",
            "exchanges": len(log),
        }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=4_000_000)
    p.add_argument("--features", type=int, default=28)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--depth", type=int, default=6)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = p.parse_args(argv)
    print(f"{args.rows} x {args.features}, {args.rounds} rounds, depth {args.depth}, one thread per worker")
    rows = [run(w, args) for w in args.workers]
    print_aligned(list(rows[0]), [[str(v) for v in r.values()] for r in rows], left=(0,))


if __name__ == "__main__":
    main()
