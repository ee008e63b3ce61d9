"""Dask data-parallel boosting against xgboost.dask, on the same LocalCluster and data, in one run.

Run::

    python bench/bench_dask.py --rows 1000000 4000000 --rounds 30 --repeats 3

One LocalCluster of ``--workers`` worker processes (one thread each:
``OMP_NUM_THREADS`` and ``NUMBA_NUM_THREADS`` are set to 1 before it
starts, and the estimators get ``n_jobs=1`` / ``nthread=1``) holds a
seeded regression generated on the workers (``--features`` normal
columns, a linear target with an interaction and noise; nothing ships from
the client). On it, ``DaskGradientBoostingRegressor`` and
``xgboost.dask.DaskXGBRegressor`` fit ``--rounds`` depth-``--depth``
rounds with the same settings (256 bins: 255 value bins + missing for
gputrees, ``max_bin=256`` for XGBoost; learning rate 0.1, L2 1, minimum
hessian 1 per leaf, no minimum row count), their repeats interleaved, after
an untimed warm-up fit of each (gputrees' Numba kernels compile on first
use, or load from the disk cache, in every worker).

For every size it prints each library's median fit time and gputrees /
xgboost.dask (``gt/xgb``), the CPU seconds of the fit in every process (the
client's, which holds the LocalCluster's scheduler, and the workers': on a
shared machine the wall time also measures the other work), the training
RMSE, and for gputrees where a
level's time goes: the requests to the workers a level (``requests/level``),
the median wall time of a level's requests, the slowest worker's compute in
them, and the rest of the fit (client work, binning, round set-up) per level;
and ``trees``, a digest of the fitted trees' structure (features, bins,
children), which a change of speed must leave as it was.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import time
from pathlib import Path

# one thread a worker, for every library (the workers inherit the environment)
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["NUMBA_NUM_THREADS"] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tree import print_aligned  # noqa: E402

LIBRARIES = ("gputrees", "xgboost")
#: rows of the untimed warm-up fits
WARMUP_ROWS = 20_000


def make_data(n_rows, n_features, chunk, seed=0):
    """A seeded regression (X, y) as dask arrays generated on the workers.

    The features are normal values rounded to 0.05 (about 220 distinct
    values each): both libraries bin them exactly, so gputrees' bins, and its
    trees, do not depend on which worker holds which rows.
    """
    import dask.array as da

    rs = da.random.RandomState(seed)
    X = da.round(rs.normal(size=(n_rows, n_features), chunks=(chunk, n_features)) * 20) / 20
    w = np.linspace(1.0, -1.0, n_features)
    y = X @ w + 0.5 * X[:, 0] * X[:, 1] + rs.normal(size=n_rows, chunks=chunk)
    return X, y


def make_model(library, args):
    if library == "gputrees":
        from gputrees.dask import DaskGradientBoostingRegressor

        return DaskGradientBoostingRegressor(
            n_estimators=args.rounds, max_depth=args.depth, learning_rate=0.1, max_bins=255, l2_regularization=1.0,
            min_child_weight=1.0, min_samples_leaf=1, random_state=0, n_jobs=1,
        )
    import xgboost.dask as dxgb

    return dxgb.DaskXGBRegressor(
        n_estimators=args.rounds, max_depth=args.depth, learning_rate=0.1, max_bin=256, reg_lambda=1.0,
        min_child_weight=1.0, tree_method="hist", nthread=1,
    )


def trees_digest(est) -> str:
    """A short digest of gputrees' fitted trees' structure and split bins (equal trees, equal digests)."""
    batch = est._forest()[0]
    h = hashlib.sha256()
    for name in ("feature", "bin", "left", "right", "missing_left"):
        h.update(np.ascontiguousarray(getattr(batch, name)).tobytes())
    return h.hexdigest()[:12]


def level_profile(est, fit_s):
    """Per tree level of a gputrees fit (the levels of splits of every tree): requests, their wall and compute
    time, and the rest of the fit."""
    log = est.exchanges_
    batch = est._forest()[0]
    levels = int(np.sum(np.max(np.where(batch.feature >= 0, batch.depth + 1, 0), axis=1))) or 1
    wall = sum(e.wall_s for e in log)
    compute = sum(e.compute_s for e in log)
    return {
        "levels": levels,
        "requests/level": f"{len(log) / levels:.2f}",
        "requests ms/level": f"{1e3 * wall / levels:.1f}",
        "worker compute ms/level": f"{1e3 * compute / levels:.1f}",
        "client ms/level": f"{1e3 * (fit_s - wall) / levels:.1f}",
    }


def cpu_seconds() -> float:
    """CPU seconds of this process so far (user + system, every thread)."""
    import psutil

    t = psutil.Process().cpu_times()
    return t.user + t.system


def rmse(client, est, X, y):
    import dask.array as da

    pred = est.predict(X)
    return float(da.sqrt(da.mean((pred - y) ** 2)).compute())


def run_size(client, n_rows, args):
    from distributed import wait

    chunk = -(-n_rows // (args.chunks_per_worker * args.workers))
    X, y = make_data(n_rows, args.features, chunk)
    X, y = client.persist([X, y])
    wait([X, y])
    times = {lib: [] for lib in args.libraries}
    cpu = {lib: [] for lib in args.libraries}
    last = {}
    for r in range(args.repeats):
        for lib in args.libraries:
            est = make_model(lib, args)
            w0, c0 = client.run(cpu_seconds), cpu_seconds()
            t0 = time.perf_counter()
            est.fit(X, y)
            times[lib].append(time.perf_counter() - t0)
            w1, c1 = client.run(cpu_seconds), cpu_seconds()
            cpu[lib].append(c1 - c0 + sum(w1[k] - w0[k] for k in w0))
            last[lib] = est
            print(f"  {n_rows} rows, repeat {r + 1}, {lib}: {times[lib][-1]:.2f} s, {cpu[lib][-1]:.2f} CPU s",
                  flush=True)
    rows = []
    for lib in args.libraries:
        fit_s = statistics.median(times[lib])
        row = {
            "rows": str(n_rows),
            "library": lib,
            "fit s (median)": f"{fit_s:.2f}",
            "gt/xgb": "",
            "CPU s (median)": f"{statistics.median(cpu[lib]):.2f}",
            "CPU gt/xgb": "",
            "train RMSE": f"{rmse(client, last[lib], X, y):.5f}",
        }
        if lib == "gputrees":
            if "xgboost" in times:
                row["gt/xgb"] = f"{fit_s / statistics.median(times['xgboost']):.2f}"
                row["CPU gt/xgb"] = f"{statistics.median(cpu[lib]) / statistics.median(cpu['xgboost']):.2f}"
            prof = level_profile(last[lib], times[lib][-1])
            row.update({k: str(v) for k, v in prof.items()})
            row["trees"] = trees_digest(last[lib])
        rows.append(row)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 4_000_000])
    p.add_argument("--features", type=int, default=6)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--depth", type=int, default=6)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--chunks-per-worker", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--libraries", nargs="+", choices=LIBRARIES, default=list(LIBRARIES))
    args = p.parse_args(argv)
    from distributed import Client, LocalCluster, wait

    print(f"{args.features} features, {args.rounds} rounds of depth {args.depth}, LocalCluster of {args.workers} "
          f"worker processes x 1 thread, {args.chunks_per_worker} chunks a worker, median of {args.repeats}")
    with LocalCluster(
        n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    ) as cluster, Client(cluster) as client:
        Xw, yw = client.persist(list(make_data(WARMUP_ROWS, args.features, WARMUP_ROWS // args.workers)))
        wait([Xw, yw])
        for lib in args.libraries:  # untimed: compilation, imports on the workers
            make_model(lib, args).fit(Xw, yw)
        del Xw, yw
        table = []
        for n_rows in args.rows:
            table += run_size(client, n_rows, args)
    headers = list(dict.fromkeys(k for row in table for k in row))
    print_aligned(headers, [[row.get(h, "") for h in headers] for row in table], left=(1,))


if __name__ == "__main__":
    main()
