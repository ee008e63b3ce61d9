"""Gradient boosting side by side: gputrees, XGBoost (hist), LightGBM, scikit-learn's HistGradientBoosting.

Run:  python bench/bench_boost.py [--rows 1000000] [--rounds 100] [--repeats 1] [--threads 2]
                                 [--data synthetic flights bank] [--device cpu|cuda] [--quick]

Every library fits, in this one process, the same training rows with the
same settings: ``--rounds`` rounds of depth-6 trees, 256 bins (255 value
bins + missing for gputrees and scikit-learn, ``max_bin=256`` for XGBoost,
255 for LightGBM), learning rate 0.1, L2 1.0, minimum hessian 1.0 per leaf,
no minimum row count, no early stopping, ``--threads`` threads
(``n_jobs`` for XGBoost and LightGBM, threadpoolctl for scikit-learn's
OpenMP; ``n_jobs`` for gputrees' Numba kernels, whose set
``GPUTREES_KERNELS`` picks). LightGBM grows best-first
with ``num_leaves=64, max_depth=6``; scikit-learn with ``max_depth=6,
max_leaf_nodes=64``.

Data sets:

* ``synthetic``: ``bench_tree.make_synthetic`` (seeded, 28 float32 features,
  binary with interactions and 10% flipped labels), 80/20 split;
* ``flights``: NYC flights 2013, ``arr_delay`` regression on 13 columns
  (``bench/boost_accuracy.py``'s loader), 75/25 split;
* ``bank``: UCI Bank marketing (41,188 x 20, binary ``y``, categories as
  ordinal codes; ``boost_accuracy.py``'s loader), 75/25 split.

gputrees first fits ``WARMUP_ROWS`` rows untimed (its Numba kernels compile
on first use, or load from the disk cache). The repeats are interleaved:
each fits every library once, in turn, so that a slow phase of a shared
machine (its speed moves by up to 2x) slows every library alike. For each
library: fit time (median of ``--repeats``), predict time on the test rows
(of the last fit), test metric (ROC AUC or RMSE), extra peak RSS of the
last fit (``VmHWM`` after ``clear_refs``, see ``bench_forest.PeakRSS``),
and the ratios gputrees / peer: of the median fit times (``fit gt/x``), the
median of the repeats' ratios (``pairs gt/x``: each repeat's fits ran side
by side) and of the predict times.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import mean_squared_error, roc_auc_score
from sklearn.model_selection import train_test_split

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_forest import PeakRSS  # noqa: E402
from bench_tree import make_synthetic  # noqa: E402
from boost_accuracy import DATASETS, load_flights  # noqa: E402

LIBRARIES = ("gputrees", "xgboost", "lightgbm", "sklearn")
#: rows of gputrees' untimed warm-up fit (kernel compilation happens there)
WARMUP_ROWS = 2_000


def make_model(library, task, args):
    kw_depth, lr, l2, mch = 6, 0.1, 1.0, 1.0
    clf = task == "classification"
    if library == "gputrees":
        import gputrees

        cls = gputrees.GradientBoostingClassifier if clf else gputrees.GradientBoostingRegressor
        return cls(
            n_estimators=args.rounds, max_depth=kw_depth, learning_rate=lr, max_bins=255,
            l2_regularization=l2, min_child_weight=mch, min_samples_leaf=1, early_stopping=False,
            random_state=0, device=args.device, n_jobs=args.threads,
        )  # fmt: skip
    if library == "xgboost":
        import xgboost as xgb

        cls = xgb.XGBClassifier if clf else xgb.XGBRegressor
        return cls(
            n_estimators=args.rounds, max_depth=kw_depth, learning_rate=lr, max_bin=256, reg_lambda=l2,
            min_child_weight=mch, tree_method="hist", grow_policy="depthwise", n_jobs=args.threads,
            random_state=0, device="cuda" if args.device == "cuda" else "cpu",
        )  # fmt: skip
    if library == "lightgbm":
        import lightgbm as lgb

        cls = lgb.LGBMClassifier if clf else lgb.LGBMRegressor
        return cls(
            n_estimators=args.rounds, max_depth=kw_depth, num_leaves=64, learning_rate=lr, max_bin=255,
            reg_lambda=l2, min_child_weight=mch, min_child_samples=1, n_jobs=args.threads, random_state=0,
            verbose=-1,
        )  # fmt: skip
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    cls = HistGradientBoostingClassifier if clf else HistGradientBoostingRegressor
    return cls(
        max_iter=args.rounds, max_depth=kw_depth, max_leaf_nodes=64, learning_rate=lr, max_bins=255,
        l2_regularization=l2, min_samples_leaf=1, early_stopping=False, random_state=0,
    )  # fmt: skip


def load(data, args):
    if data == "synthetic":
        X, y = make_synthetic(args.rows, 28, np.float32, 0)
        return "classification", train_test_split(X, y, test_size=0.2, random_state=0)
    if data == "bank":
        X, y = DATASETS["bank_marketing"][1](args.data_dir)
        return "classification", train_test_split(np.asarray(X, dtype=np.float64), y, test_size=0.25, random_state=0)
    X, y = load_flights(args.data_dir)
    return "regression", train_test_split(X, y, test_size=0.25, random_state=0)


def prepare(library, task, split, args):
    """The training and test rows as ``library`` takes them (CuPy for gputrees on ``--device cuda``); gputrees'
    kernels compiled (or loaded from the disk cache) by an untimed fit of ``WARMUP_ROWS`` rows."""
    if library in ("xgboost", "lightgbm"):
        importlib.import_module(library)  # not installed: ImportError here, before any fit
    Xtr, Xte, ytr, yte = split
    if args.device == "cuda" and library == "gputrees":
        import cupy as cp

        Xtr, ytr, Xte = cp.asarray(Xtr), cp.asarray(ytr), cp.asarray(Xte)
    if library == "gputrees":
        from threadpoolctl import threadpool_limits

        with threadpool_limits(args.threads):
            warm = make_model(library, task, args).fit(Xtr[:WARMUP_ROWS], ytr[:WARMUP_ROWS])
            warm.predict(Xte[:WARMUP_ROWS])
    return Xtr, ytr, Xte, yte


def fit_once(library, task, data, args):
    """(fitted model, fit seconds, extra peak RSS bytes) of one fit."""
    from threadpoolctl import threadpool_limits

    Xtr, ytr = data[0], data[1]
    with threadpool_limits(args.threads):
        model = make_model(library, task, args)
        peak = PeakRSS()
        t0 = time.perf_counter()
        model.fit(Xtr, ytr)
        seconds = time.perf_counter() - t0
        mem = peak.delta()
    return model, seconds, mem


def evaluate(library, task, model, data, args):
    """(predict seconds, test metric) of a fitted model."""
    from threadpoolctl import threadpool_limits

    Xte, yte = data[2], data[3]
    with threadpool_limits(args.threads):
        t0 = time.perf_counter()
        pred = model.predict_proba(Xte)[:, 1] if task == "classification" else model.predict(Xte)
        predict_s = time.perf_counter() - t0
    pred = pred.get() if hasattr(pred, "get") else np.asarray(pred)
    if task == "classification":
        return predict_s, roc_auc_score(yte, pred)
    return predict_s, float(np.sqrt(mean_squared_error(yte, pred)))


def run_all(libraries, task, split, args):
    """Every library's results, their repeats interleaved: each repeat fits every library once, in turn."""
    data, fits, mems, models = {}, {}, {}, {}
    for lib in libraries:
        try:
            data[lib] = prepare(lib, task, split, args)
        except ImportError as exc:
            print(f"  {lib:10s} not installed ({exc})")
            continue
        fits[lib] = []
    for _ in range(args.repeats):
        for lib in fits:
            models[lib], seconds, mems[lib] = fit_once(lib, task, data[lib], args)
            fits[lib].append(seconds)
    rows = {}
    for lib in fits:
        predict_s, metric = evaluate(lib, task, models[lib], data[lib], args)
        rows[lib] = {"fit": statistics.median(fits[lib]), "fits": fits[lib], "predict": predict_s,
                     "metric": metric, "mem": mems[lib]}
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="synthetic rows before the split")
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--data", nargs="+", default=["synthetic", "flights"], choices=["synthetic", "flights", "bank"])
    p.add_argument("--libraries", nargs="+", default=list(LIBRARIES), choices=list(LIBRARIES))
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--data-dir", default=str(HERE.parents[1] / "shared" / "data"))
    p.add_argument("--quick", action="store_true", help="100,000 synthetic rows, 20 rounds")
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.rounds = min(args.rows, 100_000), min(args.rounds, 20)
    results = {}
    for data in args.data:
        task, split = load(data, args)
        n_tr, n_f = split[0].shape
        print(f"[{data}] {n_tr:,} training rows x {n_f} features, {args.rounds} rounds, depth 6, "
              f"{args.threads} threads, device {args.device}", flush=True)  # fmt: skip
        metric = "AUC" if task == "classification" else "RMSE"
        print(f"  {'library':10s} {'fit s':>8s} {'predict s':>10s} {metric:>9s} {'peak MiB':>9s}"
              f" {'fit gt/x':>9s} {'pairs gt/x':>11s} {'pred gt/x':>10s}")  # fmt: skip
        rows = run_all(args.libraries, task, split, args)
        gt = rows.get("gputrees")
        for lib, r in rows.items():
            fr = f"{gt['fit'] / r['fit']:9.2f}" if gt else ""
            pairs = f"{statistics.median(a / b for a, b in zip(gt['fits'], r['fits'])):11.2f}" if gt else ""
            pr = f"{gt['predict'] / r['predict']:10.2f}" if gt else ""
            mem = f"{r['mem'] / 2**20:9.0f}" if r["mem"] is not None else f"{'-':>9s}"
            print(f"  {lib:10s} {r['fit']:8.2f} {r['predict']:10.3f} {r['metric']:9.5f} {mem} {fr} {pairs} {pr}",
                  flush=True)  # fmt: skip
        results[data] = rows
    return results


if __name__ == "__main__":
    main()
