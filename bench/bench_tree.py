#!/usr/bin/env python
"""Benchmark gputrees.DecisionTreeClassifier against scikit-learn's.

Both libraries fit a depth-limited decision tree (default ``max_depth=10``)
side by side in one process on:

* ``synthetic``: a seeded 1,000,000 x 28 continuous binary-classification
  problem (non-linear target with label noise) built with numpy;
* ``adult``: the UCI Adult census data (``income`` target, 8 categorical
  columns with missing values).  scikit-learn gets the categoricals
  ordinal-encoded with missing as NaN; gputrees is run twice, once on a
  pandas DataFrame with ``category`` columns (native categorical splits) and
  once on exactly the ordinal-encoded matrix scikit-learn gets.

For every run the script reports the median fit time over ``--repeats`` fits,
the first gputrees fit separately (warm-up: imports, kernel compilation,
allocator start-up), test accuracy, and the ratio
``sklearn_time / gputrees_time`` (> 1 means gputrees is faster).

Run from the repository root, e.g.::

    python bench/bench_tree.py --quick
    python bench/bench_tree.py --device cuda
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import pandas as pd
import sklearn
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import OrdinalEncoder
from sklearn.tree import DecisionTreeClassifier as SkTree

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"

ADULT_TARGET = "income"
ADULT_CATEGORICAL = [
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native-country",
]

QUICK_ROWS = 100_000


# --------------------------------------------------------------------------
# argument parsing
# --------------------------------------------------------------------------
def _depth(text):
    """``--max-depth`` value: a positive integer, or None for ``none`` / ``full`` / ``0`` (no limit)."""
    if text.lower() in ("none", "full", "0"):
        return None
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("--max-depth must be >= 1 or 'none'")
    return value


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Fit gputrees and scikit-learn DecisionTreeClassifier side by side "
        "and compare fit time and test accuracy."
    )
    p.add_argument("--rows", type=int, default=None,
                   help="rows of the synthetic data set, before the train/test split "
                        "(default 1,000,000; 100,000 with --quick)")
    p.add_argument("--features", type=int, default=28,
                   help="columns of the synthetic data set (default 28)")
    p.add_argument("--max-depth", type=_depth, default=10,
                   help="tree max_depth (default 10; 'none' grows full trees)")
    p.add_argument("--repeats", type=int, default=None,
                   help="timed fits per library and data set; the median is reported "
                        "(default 3; 1 with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="CI smoke run: 100k synthetic rows and 1 repeat unless "
                        "--rows/--repeats are given explicitly")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="device for gputrees (cuda: CuPy inputs and device='cuda'); "
                        "scikit-learn always runs on the CPU (default cpu)")
    p.add_argument("--only", choices=["synthetic", "adult"], default=None,
                   help="run just one of the two data sets")
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                   help="directory holding adult.csv (default ../shared/data relative "
                        "to the repository root)")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32",
                   help="dtype of the synthetic features (default float32)")
    p.add_argument("--test-size", type=float, default=0.2,
                   help="fraction held out for test accuracy (default 0.2)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed for data generation, the train/test split and both "
                        "estimators' random_state (default 0)")
    p.add_argument("--sklearn-only", action="store_true",
                   help="time only scikit-learn (baseline / data-loading check when "
                        "gputrees is not importable)")
    p.add_argument("--json", type=Path, default=None,
                   help="also write machine info and all results to this JSON file")
    args = p.parse_args(argv)
    if args.rows is None:
        args.rows = QUICK_ROWS if args.quick else 1_000_000
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    if args.repeats < 1:
        p.error("--repeats must be >= 1")
    if args.rows < 10 or args.features < 1:
        p.error("--rows must be >= 10 and --features >= 1")
    return args


# --------------------------------------------------------------------------
# machine information
# --------------------------------------------------------------------------
def _cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info(gputrees_mod, cp):
    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": _cpu_model(),
        "nproc": os.cpu_count(),
    }
    if hasattr(os, "sched_getaffinity"):
        info["nproc_usable"] = len(os.sched_getaffinity(0))
    info["numpy"] = np.__version__
    info["pandas"] = pd.__version__
    info["sklearn"] = sklearn.__version__
    if gputrees_mod is not None:
        info["gputrees"] = getattr(gputrees_mod, "__version__", "unknown")
    if cp is not None:
        info["cupy"] = cp.__version__
        try:
            dev = cp.cuda.Device()
            props = cp.cuda.runtime.getDeviceProperties(dev.id)
            name = props["name"]
            info["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
            info["gpu_mem_gib"] = round(props["totalGlobalMem"] / 2**30, 1)
            info["cuda_runtime"] = cp.cuda.runtime.runtimeGetVersion()
        except Exception as exc:  # pragma: no cover - informational only
            info["gpu"] = f"unavailable ({exc})"
    return info


# --------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------
def make_synthetic(n_rows, n_features, dtype, seed):
    """Seeded binary problem: a linear part plus interactions/non-linear terms
    and 10% flipped labels, so a depth-10 tree can neither be perfect nor trivial."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_rows, n_features), dtype=np.float32).astype(dtype, copy=False)
    w = rng.standard_normal(n_features)
    # compute the score in float64 regardless of the feature dtype
    score = X @ w.astype(X.dtype)
    score = score.astype(np.float64) / np.sqrt(n_features)
    j = lambda k: X[:, k % n_features].astype(np.float64)  # noqa: E731
    score += 1.5 * j(0) * j(1)
    score += 2.0 * np.sin(2.0 * j(2))
    score += 0.5 * (j(3) ** 2 - 1.0)
    score += 1.0 * (np.abs(j(4)) > 1.0)
    y = (score > np.median(score)).astype(np.int64)
    flip = rng.random(n_rows) < 0.10
    y[flip] = 1 - y[flip]
    return X, y


def load_adult(data_dir, test_size, seed):
    path = Path(data_dir) / "adult.csv"
    if not path.is_file():
        raise FileNotFoundError(
            f"Adult data not found at {path}; pass --data-dir pointing at the folder "
            "holding adult.csv"
        )
    df = pd.read_csv(path, skipinitialspace=True, na_values=["", "?"], keep_default_na=True)
    if ADULT_TARGET not in df.columns:
        raise ValueError(f"{path} has no '{ADULT_TARGET}' column")
    missing = [c for c in ADULT_CATEGORICAL if c not in df.columns]
    if missing:
        raise ValueError(f"{path} lacks expected categorical columns {missing}")

    y = (df[ADULT_TARGET].astype(str).str.strip().str.rstrip(".") == ">50K").to_numpy(np.int64)
    X = df.drop(columns=[ADULT_TARGET])
    numeric = [c for c in X.columns if c not in ADULT_CATEGORICAL]
    for c in numeric:
        X[c] = pd.to_numeric(X[c], errors="raise").astype(np.float64)
    for c in ADULT_CATEGORICAL:
        X[c] = X[c].astype(object).where(X[c].notna(), None)
        X[c] = X[c].map(lambda v: v.strip() if isinstance(v, str) else v)
        X[c] = X[c].where(X[c] != "", None)

    X_tr, X_te, y_tr, y_te = train_test_split(
        X, y, test_size=test_size, random_state=seed, stratify=y
    )
    X_tr = X_tr.reset_index(drop=True)
    X_te = X_te.reset_index(drop=True)

    # (1) pandas frame with category dtype, levels taken from the training part;
    #     missing stays missing (NaN), unseen test levels become missing.
    cat_tr, cat_te = X_tr.copy(), X_te.copy()
    for c in ADULT_CATEGORICAL:
        levels = sorted(X_tr[c].dropna().unique())
        dtype = pd.CategoricalDtype(categories=levels, ordered=False)
        cat_tr[c] = X_tr[c].astype(dtype)
        cat_te[c] = X_te[c].astype(dtype)

    # (2) ordinal-encoded float64 matrix with missing (and unseen) as NaN:
    #     what scikit-learn gets (its trees accept NaN since 1.3).
    enc = OrdinalEncoder(
        handle_unknown="use_encoded_value",
        unknown_value=np.nan,
        encoded_missing_value=np.nan,
        dtype=np.float64,
    )
    cols = list(X.columns)
    cat_idx = [cols.index(c) for c in ADULT_CATEGORICAL]

    def to_matrix(frame, fit):
        out = np.empty((len(frame), len(cols)), dtype=np.float64)
        for i, c in enumerate(cols):
            if c not in ADULT_CATEGORICAL:
                out[:, i] = frame[c].to_numpy(np.float64)
        cats = frame[ADULT_CATEGORICAL].astype(object)
        cats = cats.where(cats.notna(), np.nan)
        codes = enc.fit_transform(cats) if fit else enc.transform(cats)
        out[:, cat_idx] = codes
        return out

    ord_tr = to_matrix(X_tr, fit=True)
    ord_te = to_matrix(X_te, fit=False)
    return {
        "cat": (cat_tr, cat_te),
        "ord": (ord_tr, ord_te),
        "y": (y_tr, y_te),
        "n_missing_cells": int(X[ADULT_CATEGORICAL].isna().sum().sum()),
        "cat_idx": cat_idx,
        "columns": cols,
    }


# --------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------
def _to_numpy(a):
    if hasattr(a, "get") and not isinstance(a, (np.ndarray, pd.Series, pd.DataFrame)):
        a = a.get()  # CuPy -> host
    elif hasattr(a, "to_numpy"):
        a = a.to_numpy()
    return np.asarray(a)


def _sync(cp):
    if cp is not None:
        cp.cuda.get_current_stream().synchronize()
        cp.cuda.Device().synchronize()


def _tree_shape(est):
    """(depth, n_leaves) when the estimator exposes them, else (None, None)."""
    depth = leaves = None
    for name in ("get_depth",):
        try:
            depth = int(getattr(est, name)())
        except Exception:
            pass
    for name in ("get_n_leaves",):
        try:
            leaves = int(getattr(est, name)())
        except Exception:
            pass
    return depth, leaves


def time_fits(make_est, X_tr, y_tr, X_te, y_te, repeats, warmup, cp=None):
    """Fit `repeats` fresh estimators (plus one extra, untimed-in-median warm-up
    fit when `warmup`), return timing, accuracy and tree shape."""
    warm = None
    if warmup:
        est = make_est()
        _sync(cp)
        t0 = time.perf_counter()
        est.fit(X_tr, y_tr)
        _sync(cp)
        warm = time.perf_counter() - t0
        del est
        gc.collect()
    times = []
    est = None
    for _ in range(repeats):
        est = None
        gc.collect()
        est = make_est()
        _sync(cp)
        t0 = time.perf_counter()
        est.fit(X_tr, y_tr)
        _sync(cp)
        times.append(time.perf_counter() - t0)
    out = {
        "fit_s": statistics.median(times),
        "fit_times_s": times,
        "warmup_s": warm,
        "acc": None,
    }
    out["depth"], out["leaves"] = _tree_shape(est)
    # a failing predict must not hide the fit timings: record it separately
    try:
        pred = _to_numpy(est.predict(X_te)).ravel()
        out["acc"] = float(np.mean(pred.astype(np.int64) == _to_numpy(y_te).astype(np.int64)))
    except Exception as exc:
        out["predict_error"] = f"{type(exc).__name__}: {exc}"
        sys.stdout.flush()
        print(f"  predict FAILED: {out['predict_error']}", file=sys.stderr)
        traceback.print_exc()
        sys.stderr.flush()
    return out


# --------------------------------------------------------------------------
# reporting
# --------------------------------------------------------------------------
def print_table(rows):
    headers = ["dataset", "library", "input", "device", "n_train", "n_test",
               "fit_s(med)", "warmup_s", "test_acc", "depth", "leaves"]

    def fmt(r):
        def num(v, spec):
            return "-" if v is None else format(v, spec)
        if r.get("error"):
            return [r["dataset"], r["library"], r["input"], r["device"],
                    str(r["n_train"]), str(r["n_test"]), "ERROR", "-", "-", "-", "-"]
        return [r["dataset"], r["library"], r["input"], r["device"],
                str(r["n_train"]), str(r["n_test"]),
                num(r["fit_s"], ".3f"), num(r["warmup_s"], ".3f"),
                "ERROR" if r.get("predict_error") else num(r["acc"], ".4f"), num(r["depth"], "d"), num(r["leaves"], "d")]

    body = [fmt(r) for r in rows]
    print_aligned(headers, body)


def print_aligned(headers, body, left=(0, 1, 2, 3)):
    """Print ``body`` (rows of strings) under ``headers``; columns ``left`` left-aligned, others right."""
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h)
              for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths)))

    print(line(headers))
    print("  ".join("-" * w for w in widths))
    for b in body:
        print(line(b))


def _import_gputrees():
    """Import gputrees, falling back to the repository checkout this script
    lives in (running ``python bench/bench_tree.py`` puts bench/, not the
    repository root, on sys.path)."""
    import importlib

    try:
        mod = importlib.import_module("gputrees")
        mod.DecisionTreeClassifier  # noqa: B018
        return mod
    except (ImportError, AttributeError):
        if str(REPO_ROOT) in sys.path:
            raise
    sys.path.insert(0, str(REPO_ROOT))
    for name in [m for m in sys.modules if m == "gputrees" or m.startswith("gputrees.")]:
        del sys.modules[name]
    mod = importlib.import_module("gputrees")
    mod.DecisionTreeClassifier  # noqa: B018
    return mod


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------
def main(argv=None):
    args = parse_args(argv)
    # keep progress lines and error messages (stderr) in order when piped
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)

    gputrees = None
    if not args.sklearn_only:
        try:
            gputrees = _import_gputrees()
        except Exception as exc:
            sys.stdout.flush()
            print("ERROR: could not import gputrees.DecisionTreeClassifier:\n"
                  f"  {type(exc).__name__}: {exc}\n"
                  "Install the package (e.g. `pip install -e .` from the repository root) "
                  "or run from the repository root; use --sklearn-only to time just the "
                  "scikit-learn baseline.", file=sys.stderr)
            return 2

    cp = None
    if args.device == "cuda" and not args.sklearn_only:
        try:
            import cupy as cp  # noqa: F811
            cp.cuda.runtime.getDeviceCount()
        except Exception as exc:
            print(f"ERROR: --device cuda needs a working CuPy/CUDA install: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr)
            return 2

    info = machine_info(gputrees, cp)
    print("== gputrees vs scikit-learn DecisionTreeClassifier ==")
    for k, v in info.items():
        print(f"{k:>13}: {v}")
    print(f"{'settings':>13}: max_depth={args.max_depth} repeats={args.repeats} "
          f"device={args.device} seed={args.seed} test_size={args.test_size}"
          f"{' (quick)' if args.quick else ''}")
    print(flush=True)

    datasets = ["synthetic", "adult"] if args.only is None else [args.only]
    rows = []
    ratios = []  # (label, ratio)

    def sk_factory():
        return SkTree(max_depth=args.max_depth, random_state=args.seed)

    def gt_factory():
        return gputrees.DecisionTreeClassifier(
            max_depth=args.max_depth, random_state=args.seed, device=args.device
        )

    def to_dev(a):
        return cp.asarray(a) if cp is not None else a

    def run_one(dataset, library, input_kind, factory, Xtr, ytr, Xte, yte, warmup, use_cp):
        r = {"dataset": dataset, "library": library, "input": input_kind,
             "device": args.device if library == "gputrees" else "cpu",
             "n_train": len(ytr), "n_test": len(yte)}
        print(f"[{dataset}] fitting {library} ({input_kind}) ...", flush=True)
        try:
            r.update(time_fits(factory, Xtr, ytr, Xte, yte, args.repeats, warmup,
                               cp=cp if use_cp else None))
        except Exception as exc:
            r["error"] = f"{type(exc).__name__}: {exc}"
            sys.stdout.flush()
            print(f"  FAILED: {r['error']}", file=sys.stderr)
            traceback.print_exc()
            sys.stderr.flush()
        rows.append(r)
        return r

    for ds in datasets:
        if ds == "synthetic":
            t0 = time.perf_counter()
            X, y = make_synthetic(args.rows, args.features, np.dtype(args.dtype), args.seed)
            X_tr, X_te, y_tr, y_te = train_test_split(
                X, y, test_size=args.test_size, random_state=args.seed
            )
            X_tr = np.ascontiguousarray(X_tr)
            X_te = np.ascontiguousarray(X_te)
            del X, y
            print(f"[synthetic] {args.rows:,} x {args.features} {args.dtype}, "
                  f"positive rate {y_tr.mean():.3f}, generated in "
                  f"{time.perf_counter() - t0:.1f}s", flush=True)
            sk = run_one(ds, "sklearn", "numpy", sk_factory, X_tr, y_tr, X_te, y_te,
                         warmup=False, use_cp=False)
            if gputrees is not None:
                if cp is not None:
                    gX_tr, gy_tr, gX_te = to_dev(X_tr), to_dev(y_tr), to_dev(X_te)
                    kind = "cupy"
                else:
                    gX_tr, gy_tr, gX_te = X_tr, y_tr, X_te
                    kind = "numpy"
                gt = run_one(ds, "gputrees", kind, gt_factory, gX_tr, gy_tr, gX_te, y_te,
                             warmup=True, use_cp=True)
                if not gt.get("error") and not sk.get("error"):
                    ratios.append(("synthetic", sk["fit_s"] / gt["fit_s"]))
                del gX_tr, gy_tr, gX_te
            del X_tr, X_te, y_tr, y_te
            gc.collect()

        elif ds == "adult":
            t0 = time.perf_counter()
            try:
                ad = load_adult(args.data_dir, args.test_size, args.seed)
            except Exception as exc:
                print(f"ERROR: loading Adult failed: {type(exc).__name__}: {exc}",
                      file=sys.stderr)
                rows.append({"dataset": "adult", "library": "-", "input": "-",
                             "device": "-", "n_train": 0, "n_test": 0,
                             "error": str(exc)})
                continue
            (cat_tr, cat_te), (ord_tr, ord_te), (y_tr, y_te) = ad["cat"], ad["ord"], ad["y"]
            print(f"[adult] {len(y_tr) + len(y_te):,} rows x {ord_tr.shape[1]} features "
                  f"({len(ADULT_CATEGORICAL)} categorical, {ad['n_missing_cells']:,} "
                  f"missing categorical cells), positive rate {y_tr.mean():.3f}, "
                  f"loaded in {time.perf_counter() - t0:.1f}s", flush=True)
            sk = run_one(ds, "sklearn", "ordinal+NaN", sk_factory, ord_tr, y_tr, ord_te,
                         y_te, warmup=False, use_cp=False)
            if gputrees is not None:
                gy_tr = to_dev(y_tr)
                # native categoricals: pandas DataFrame with category dtype
                gt_cat = run_one(ds, "gputrees", "pandas-category", gt_factory, cat_tr,
                                 gy_tr, cat_te, y_te, warmup=True, use_cp=True)
                # the very same ordinal-encoded matrix sklearn gets
                kind = "ordinal+NaN" + ("/cupy" if cp is not None else "")
                gt_ord = run_one(ds, "gputrees", kind, gt_factory, to_dev(ord_tr), gy_tr,
                                 to_dev(ord_te), y_te, warmup=True, use_cp=True)
                if not sk.get("error"):
                    if not gt_cat.get("error"):
                        ratios.append(("adult, categorical", sk["fit_s"] / gt_cat["fit_s"]))
                    if not gt_ord.get("error"):
                        ratios.append(("adult, ordinal", sk["fit_s"] / gt_ord["fit_s"]))
            del ad
            gc.collect()

    print()
    print_table(rows)
    print()
    print("fit_s(med): median wall time of fit() over the timed repeats; warmup_s: the "
          "first gputrees fit, excluded from the median.")
    print("ratio = sklearn fit_s / gputrees fit_s (>1: gputrees faster).")
    for r in rows:
        for key in ("error", "predict_error"):
            if r.get(key):
                print(f"{key.replace('_', ' ')} ({r['dataset']}, {r['library']}, "
                      f"{r['input']}): {r[key]}")
    for label, ratio in ratios:
        print(f"ratio sklearn/gputrees ({label}): {ratio:.1f}x" if ratio >= 1
              else f"ratio sklearn/gputrees ({label}): {ratio:.2f}x")

    if args.json is not None:
        payload = {"machine": info, "args": {k: (str(v) if isinstance(v, Path) else v)
                                             for k, v in vars(args).items()},
                   "results": rows, "ratios": dict(ratios)}
        args.json.write_text(json.dumps(payload, indent=2, default=str))
        print(f"results written to {args.json}")

    failed = any(r.get("error") or r.get("predict_error") for r in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
