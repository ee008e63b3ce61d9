"""gputrees' gradient-boosting fit time against the number of rows (cost per row), with a plot.

Run:  python bench/bench_scaling.py [--rows 10000 100000 1000000 4000000] [--rounds 100]
                                    [--threads 2] [--repeats 1] [--plot bench/results/scaling.png]

For each row count, ``bench_tree.make_synthetic`` rows (28 float32 features,
binary) are fitted by ``GradientBoostingClassifier`` with ``bench_boost.py``'s
settings (``--rounds`` depth-6 rounds, 255 value bins, lr 0.1, L2 1, min
hessian 1, no early stopping, ``n_jobs=--threads``). An untimed fit on 10,000
rows first compiles the kernels. Printed per row count: the median fit time
and the time per row and round (nanoseconds); the plot (matplotlib, PNG) shows
both on log axes. ``--libraries gputrees xgboost`` adds XGBoost's hist method
to the same table and plot.
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
    p.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000, 4_000_000])
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--libraries", nargs="+", default=["gputrees"], choices=["gputrees", "xgboost", "lightgbm"])
    p.add_argument("--plot", default=str(HERE / "results" / "scaling.png"), help="PNG path ('' for none)")
    args = p.parse_args(argv)
    from threadpoolctl import threadpool_limits

    model_args = argparse.Namespace(rounds=args.rounds, device="cpu", threads=args.threads)
    X, y = make_synthetic(max(args.rows), 28, np.float32, 0)
    results = {lib: [] for lib in args.libraries}
    print(f"{args.rounds} rounds of depth 6, 28 features, {args.threads} threads, median of {args.repeats}")
    print(f"  {'library':10s} {'rows':>10s} {'fit s':>9s} {'ns/row/round':>13s}", flush=True)
    with threadpool_limits(args.threads):
        for lib in args.libraries:
            make_model(lib, "classification", model_args).fit(X[:10_000], y[:10_000])  # warm-up
            for n in args.rows:
                times = []
                for _ in range(args.repeats):
                    model = make_model(lib, "classification", model_args)
                    t0 = time.perf_counter()
                    model.fit(X[:n], y[:n])
                    times.append(time.perf_counter() - t0)
                fit = statistics.median(times)
                results[lib].append(fit)
                print(f"  {lib:10s} {n:10,d} {fit:9.2f} {fit / n / args.rounds * 1e9:13.1f}", flush=True)
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
        for lib, fits in results.items():
            a.loglog(args.rows, fits, "o-", label=lib)
            b.semilogx(args.rows, [f / n / args.rounds * 1e9 for f, n in zip(fits, args.rows)], "o-", label=lib)
        a.set(xlabel="training rows", ylabel="fit time (s)", title=f"{args.rounds} rounds, depth 6, 28 features")
        b.set(xlabel="training rows", ylabel="ns per row and round", title=f"{args.threads} threads")
        for ax in (a, b):
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
        fig.tight_layout()
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.plot, dpi=100)
        print(f"plot: {args.plot}")
    return results


if __name__ == "__main__":
    main()
