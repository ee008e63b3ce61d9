"""Prediction time of random forests of full-depth trees: gputrees against scikit-learn, side by side.

Run:  python bench/bench_forest_predict.py [--train-rows 20000] [--rows 40000 200000] [--trees 100]
                                           [--threads 2] [--repeats 5]

Each library fits ``--trees`` full-depth trees (both libraries' defaults
otherwise) on ``--train-rows`` rows of ``make_classification(20 features,
10 informative, 3 classes)`` (the regressor on the class index as a number),
then predicts ``--rows`` other rows ``--repeats`` times after an untimed
warm-up (gputrees compiles its prediction pass on first use). Printed: median
seconds of ``predict_proba`` (classifier) and ``predict`` (regressor), and
gputrees' time over scikit-learn's (below 1: gputrees is faster).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _median_seconds(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--train-rows", type=int, default=20_000)
    p.add_argument("--rows", type=int, nargs="+", default=[40_000, 200_000])
    p.add_argument("--trees", type=int, default=100)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)

    import sklearn.ensemble as ens
    from sklearn.datasets import make_classification

    import gputrees
    from gputrees.kernels import cold_start

    X, y = make_classification(args.train_rows + max(args.rows), 20, n_informative=10, n_classes=3,
                               random_state=0)
    Xt, yt = X[: args.train_rows], y[: args.train_rows]
    kw = dict(n_estimators=args.trees, random_state=0, n_jobs=args.threads)
    pairs = {
        "classifier predict_proba": (gputrees.RandomForestClassifier, ens.RandomForestClassifier, yt,
                                     "predict_proba"),
        "regressor predict": (gputrees.RandomForestRegressor, ens.RandomForestRegressor, yt.astype(np.float64),
                              "predict"),
    }
    print(f"{args.trees} full-depth trees fitted on {args.train_rows} rows, {args.threads} threads, "
          f"medians of {args.repeats}")
    for name, (ours, theirs, target, method) in pairs.items():
        cold_start.mark_compiled(ours.__name__)  # the compiled kernels, as a fit past the cold start takes
        g = ours(**kw).fit(Xt, target)
        s = theirs(**kw).fit(Xt, target)
        for n in args.rows:
            rows = X[args.train_rows: args.train_rows + n]
            tg = _median_seconds(lambda: getattr(g, method)(rows), args.repeats)
            ts = _median_seconds(lambda: getattr(s, method)(rows), args.repeats)
            print(f"{name:<26} {n:>8} rows  gputrees {tg:8.3f} s  scikit-learn {ts:8.3f} s  ratio {tg / ts:5.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
