"""Held-out accuracy of gputrees' gradient boosting next to XGBoost and LightGBM, same settings.

Run:  python bench/boost_accuracy.py [--data adult bank_marketing california_housing flights]
                                      [--rounds 100] [--max-rows N] [--seeds 1]

Every library gets the same ordinal-encoded matrix (categories as codes,
missing values NaN), the same 75/25 split (random_state = seed) and the same
settings: depth-wise trees of depth 6, learning rate 0.1, ``--rounds``
rounds, 255 value bins, L2 1.0 on leaf values, minimum hessian 1.0 per leaf,
no minimum row count, no early stopping, no subsampling. LightGBM gets
``num_leaves=64`` with ``max_depth=6`` (its best-first growth then reaches
the same leaves as depth-wise growth only when every level is full, so
LightGBM is the looser comparison). Metrics: ROC AUC (Adult, Bank
marketing), RMSE (California housing, NYC flights ``arr_delay``).

The slow test ``tests/test_boosting.py::test_accuracy_against_peers`` calls
:func:`compare` and checks gputrees is within 0.5% of both peers.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import mean_squared_error, roc_auc_score
from sklearn.model_selection import train_test_split

ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = ROOT.parent / "shared" / "data"
DEPTH, LR, BINS, L2, MIN_HESS = 6, 0.1, 255, 1.0, 1.0

#: flights: the columns known at departure (and dep_delay), arr_delay the target
FLIGHT_COLUMNS = [
    "month", "day", "dep_time", "sched_dep_time", "dep_delay", "sched_arr_time",
    "carrier", "origin", "dest", "air_time", "distance", "hour", "minute",
]  # fmt: skip


def _load_table(path, target, positive=None):
    spec = importlib.util.spec_from_file_location("example_ensembles", ROOT / "examples" / "ensembles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    X, y, _ = module.load_table(path, target, positive)
    return X, y


def load_flights(data_dir=DATA_DIR):
    """NYC flights 2013 with a known arrival delay: (X float64 with category codes, y float64)."""
    df = pd.read_csv(Path(data_dir) / "nycflights13_flights.csv.gz", usecols=FLIGHT_COLUMNS + ["arr_delay"])
    df = df[df["arr_delay"].notna()]
    cols = []
    for name in FLIGHT_COLUMNS:
        if pd.api.types.is_numeric_dtype(df[name]):
            cols.append(df[name].to_numpy(np.float64))
        else:
            codes = df[name].astype("category").cat.codes.to_numpy().astype(np.float64)
            codes[codes < 0] = np.nan
            cols.append(codes)
    return np.column_stack(cols), df["arr_delay"].to_numpy(np.float64)


DATASETS = {
    "adult": ("classification", lambda d: _load_table(Path(d) / "adult.csv", "income", ">50K")),
    "bank_marketing": ("classification", lambda d: _load_table(Path(d) / "bank_marketing.csv", "y", "yes")),
    "california_housing": (
        "regression",
        lambda d: _load_table(Path(d) / "california_housing.csv", "median_house_value"),
    ),
    "flights": ("regression", load_flights),
}


def models(task, rounds, seed, n_jobs=2):
    """{library: unfitted model} with the shared settings."""
    import lightgbm as lgb
    import xgboost as xgb

    import gputrees

    common_xgb = dict(
        n_estimators=rounds, max_depth=DEPTH, learning_rate=LR, max_bin=BINS + 1, reg_lambda=L2,
        min_child_weight=MIN_HESS, tree_method="hist", grow_policy="depthwise", n_jobs=n_jobs, random_state=seed,
    )  # fmt: skip
    common_lgb = dict(
        n_estimators=rounds, max_depth=DEPTH, num_leaves=2**DEPTH, learning_rate=LR, max_bin=BINS,
        reg_lambda=L2, min_child_weight=MIN_HESS, min_child_samples=1, n_jobs=n_jobs, random_state=seed,
        verbose=-1,
    )  # fmt: skip
    common_gt = dict(
        n_estimators=rounds, max_depth=DEPTH, learning_rate=LR, max_bins=BINS, l2_regularization=L2,
        min_child_weight=MIN_HESS, min_samples_leaf=1, early_stopping=False, random_state=seed,
    )  # fmt: skip
    if task == "classification":
        return {
            "gputrees": gputrees.GradientBoostingClassifier(**common_gt),
            "xgboost": xgb.XGBClassifier(**common_xgb),
            "lightgbm": lgb.LGBMClassifier(**common_lgb),
        }
    return {
        "gputrees": gputrees.GradientBoostingRegressor(**common_gt),
        "xgboost": xgb.XGBRegressor(**common_xgb),
        "lightgbm": lgb.LGBMRegressor(**common_lgb),
    }


def compare(data, rounds=100, seed=0, max_rows=None, data_dir=DATA_DIR, n_jobs=2):
    """{library: (metric, fit seconds)} on one dataset; metric is AUC or RMSE."""
    task, loader = DATASETS[data]
    X, y = loader(data_dir)
    if max_rows is not None and len(y) > max_rows:
        keep = np.random.default_rng(seed).choice(len(y), max_rows, replace=False)
        X, y = X[keep], y[keep]
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=seed)
    out = {}
    for name, model in models(task, rounds, seed, n_jobs).items():
        t0 = time.perf_counter()
        model.fit(Xtr, ytr)
        fit_s = time.perf_counter() - t0
        if task == "classification":
            metric = roc_auc_score(yte, model.predict_proba(Xte)[:, 1])
        else:
            metric = float(np.sqrt(mean_squared_error(yte, model.predict(Xte))))
        out[name] = (float(metric), fit_s)
    return task, out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--max-rows", type=int, default=None)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--data-dir", default=str(DATA_DIR))
    args = p.parse_args(argv)
    print(f"{'dataset':20s} {'seed':>4s} {'metric':6s} {'gputrees':>10s} {'xgboost':>10s} {'lightgbm':>10s}"
          f" {'gt/xgb':>7s} {'gt/lgb':>7s}   fit s (gt / xgb / lgb)")  # fmt: skip
    for data in args.data:
        for seed in range(args.seeds):
            task, res = compare(data, args.rounds, seed, args.max_rows, args.data_dir)
            metric = "AUC" if task == "classification" else "RMSE"
            g, x, lg = res["gputrees"][0], res["xgboost"][0], res["lightgbm"][0]
            print(f"{data:20s} {seed:4d} {metric:6s} {g:10.5f} {x:10.5f} {lg:10.5f} {g / x:7.4f} {g / lg:7.4f}"
                  f"   {res['gputrees'][1]:.1f} / {res['xgboost'][1]:.1f} / {res['lightgbm'][1]:.1f}",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
