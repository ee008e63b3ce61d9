"""Prediction throughput of a 100-tree depth-6 boosted model: gputrees, XGBoost (inplace_predict), LightGBM.

Run:  python bench/bench_predict.py [--rows 1000000] [--train-rows 200000] [--trees 100]
                                    [--threads 2] [--repeats 3]

Each library fits ``--trees`` rounds of depth-6 trees (the settings of
``bench_boost.py``) on ``--train-rows`` rows of ``bench_tree.make_synthetic``
(28 float32 features, binary), then predicts the probability of the positive
class on ``--rows`` other rows of the same generator, ``--repeats`` times with
``--threads`` threads (``n_jobs``; threadpoolctl for the OpenMP pools):

* gputrees: ``predict_proba``;
* XGBoost: ``Booster.inplace_predict`` on the float32 array (no DMatrix);
* LightGBM: ``Booster.predict`` (``num_threads``).

Only the prediction is timed (the fits are not); the first call of each
library is an untimed warm-up (gputrees compiles its prediction kernel on
first use). Printed: median seconds, rows per second and the ratio of
gputrees' rows/s to each peer's (above 1: gputrees predicts faster). The
predictions of each library are checked to agree with its own
``predict_proba`` (XGBoost) or between repeats.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_boost import make_model  # noqa: E402
from bench_tree import make_synthetic  # noqa: E402

LIBRARIES = ("gputrees", "xgboost", "lightgbm")


def predictor(library, model, threads):
    """A function X -> probability of class 1 for a fitted model."""
    if library == "gputrees":
        return lambda X: model.predict_proba(X)[:, 1]
    if library == "xgboost":
        booster = model.get_booster()
        booster.set_param({"nthread": threads})
        return lambda X: booster.inplace_predict(X)
    booster = model.booster_
    return lambda X: booster.predict(X, num_threads=threads)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="rows predicted")
    p.add_argument("--train-rows", type=int, default=200_000, help="rows the models are fitted on")
    p.add_argument("--trees", type=int, default=100, help="boosting rounds (one tree each)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--libraries", nargs="+", default=list(LIBRARIES), choices=list(LIBRARIES))
    args = p.parse_args(argv)
    from threadpoolctl import threadpool_limits

    X, y = make_synthetic(args.train_rows + args.rows, 28, np.float32, 0)
    Xtr, ytr, Xte = X[: args.train_rows], y[: args.train_rows], X[args.train_rows :]
    model_args = argparse.Namespace(rounds=args.trees, device="cpu", threads=args.threads)
    print(f"{args.trees} trees of depth 6 fitted on {args.train_rows:,} rows; predicting {args.rows:,} x 28 "
          f"rows, {args.threads} threads, median of {args.repeats}", flush=True)  # fmt: skip
    results = {}
    with threadpool_limits(args.threads):
        for lib in args.libraries:
            model = make_model(lib, "classification", model_args).fit(Xtr, ytr)
            predict = predictor(lib, model, args.threads)
            first = np.asarray(predict(Xte))  # warm-up
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                out = np.asarray(predict(Xte))
                times.append(time.perf_counter() - t0)
            if not np.array_equal(out, first):
                raise RuntimeError(f"{lib}: predictions differ between repeats")
            if lib == "xgboost" and not np.allclose(out, model.predict_proba(Xte)[:, 1], rtol=1e-6, atol=1e-7):
                raise RuntimeError("xgboost: inplace_predict disagrees with predict_proba")
            med = statistics.median(times)
            results[lib] = med
            print(f"  {lib:10s} {med:8.3f} s  {args.rows / med / 1e6:8.2f} M rows/s", flush=True)
    if "gputrees" in results:
        for lib, t in results.items():
            if lib != "gputrees":
                print(f"  rows/s gputrees / {lib}: {t / results['gputrees']:.2f}")
    return results


if __name__ == "__main__":
    main()
