"""The compiled prediction kernels alone: the padded walk against the complete-tree layout, alternated.

Run:  python bench/bench_predict_kernels.py [--rows 200000] [--train-rows 200000] [--trees 100]
                                            [--threads 1] [--repeats 7] [--nan 0 0.02 0.2]

Fits the ``bench_predict.py`` model (``--trees`` depth-6 rounds on
``--train-rows`` rows of ``bench_tree.make_synthetic``, 28 float32 features),
then times, on ``--rows`` other rows (float32, a fraction ``--nan`` of the
entries set to NaN), with ``--threads`` threads:

* ``predict_raw`` of the padded walk and of the complete-tree layout
  (:mod:`gputrees.kernels.cpu.predict`);
* ``apply_trees`` of both.

The calls alternate (old, new, old, new...) so that both see the same load;
each result is checked equal to the padded walk's. Printed: median and
minimum milliseconds, and nanoseconds per row and tree.
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


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--train-rows", type=int, default=200_000)
    p.add_argument("--trees", type=int, default=100)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--nan", type=float, nargs="+", default=[0.0, 0.02, 0.2])
    args = p.parse_args(argv)
    from gputrees.kernels.cpu import predict

    X, y = make_synthetic(args.train_rows + args.rows, 28, np.float32, 0)
    model_args = argparse.Namespace(rounds=args.trees, device="cpu", threads=2)
    model = make_model("gputrees", "classification", model_args).fit(X[: args.train_rows], y[: args.train_rows])
    batch, values = model._forest()
    missing_bin = model._bin_mapper.missing_bin
    n_trees = int(batch.left.shape[0])
    print(f"{n_trees} trees (max_depth {batch.max_depth}), {args.rows:,} float32 rows, {args.threads} thread(s), "
          f"median of {args.repeats}, calls alternated", flush=True)  # fmt: skip
    rng = np.random.default_rng(1)
    base = np.zeros((args.rows, 1))
    for frac in args.nan:
        Xte = X[args.train_rows :].copy()
        Xte[rng.random(Xte.shape) < frac] = np.nan
        calls = {
            "predict_raw padded walk": lambda: predict.padded_predict_raw(np, batch, values, Xte, missing_bin, base,
                                                                  n_threads=args.threads),
            "predict_raw complete trees": lambda: predict.predict_raw(np, batch, values, Xte, missing_bin, base,
                                                                             n_threads=args.threads),
            "apply_trees padded walk": lambda: predict.padded_apply_trees(np, batch, Xte, missing_bin, n_threads=args.threads),
            "apply_trees complete trees": lambda: predict.apply_trees(np, batch, Xte, missing_bin,
                                                                             n_threads=args.threads),
        }  # fmt: skip
        names = list(calls)
        for old, new in ((names[0], names[1]), (names[2], names[3])):
            if not np.array_equal(calls[old](), calls[new]()):
                raise RuntimeError(f"{new} differs from {old}")
        times = {k: [] for k in names}
        for _ in range(args.repeats):
            for k in names:
                t0 = time.perf_counter()
                calls[k]()
                times[k].append(time.perf_counter() - t0)
        print(f"NaN fraction {frac}:")
        for k in names:
            med = statistics.median(times[k])
            print(f"  {k:28s} {med * 1e3:8.1f} ms (min {min(times[k]) * 1e3:7.1f})  "
                  f"{med / args.rows / n_trees * 1e9:6.2f} ns per row and tree", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
