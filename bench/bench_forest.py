#!/usr/bin/env python
"""Benchmark gputrees.RandomForestClassifier (or Regressor) against scikit-learn and XGBoost.

Three random forests of ``--trees`` trees (default 100; full depth unless
``--max-depth`` is given) are fitted side by side in one run on:

* ``synthetic``: the seeded 1,000,000 x 28 binary problem of
  ``bench_tree.py`` (same generator, imported from it);
* ``adult``: UCI Adult, loaded exactly as ``bench_tree.py`` loads it.
  scikit-learn and XGBoost get the ordinal-encoded matrix (missing as NaN);
  gputrees is run on the pandas ``category`` frame (native categorical splits)
  and on the same ordinal-encoded matrix.

The libraries:

* ``gputrees.RandomForestClassifier`` (its defaults: bootstrap, ``max_features=
  "sqrt"``, gini, ``max_bins=255``);
* ``sklearn.ensemble.RandomForestClassifier(n_jobs=-1)`` (same defaults);
* ``xgboost.XGBRFClassifier`` (random-forest mode: one boosting round of
  ``--trees`` parallel trees) with ``tree_method="hist"``, ``subsample=0.632``
  (the expected fraction of distinct rows in a bootstrap sample, drawn
  without replacement), ``colsample_bynode=(floor(sqrt(F)) + 0.5) / F`` (XGBoost
  keeps ``int(colsample * F)`` features, so exactly scikit-learn's
  ``floor(sqrt(F))``), ``learning_rate=1``, ``reg_lambda=1e-5`` and ``max_depth=0``
  (no limit) for full depth.  XGBoost is optional: without it its rows are
  skipped with a note.

Every fit runs in its own child process (``multiprocessing``, forkserver
start method where available): the child receives the data, resets the
kernel's peak-RSS mark (``/proc/self/clear_refs``), reads its RSS, fits,
and reads the peak again, so the reported peak memory is the extra resident
memory of that one fit alone, never polluted by another library or an earlier
fit.  Fit time is the median over ``--repeats`` such children; predict time,
accuracy and peak memory come from the same children.

``--task regression`` fits the three libraries' random-forest regressors
instead (``RandomForestRegressor``, ``XGBRFRegressor``, the same settings) on
the synthetic features with a continuous target, the sum of the first four
features plus standard Gaussian noise, and reports the test R^2 in place of
the accuracy (synthetic data only).

Run from the repository root, e.g.::

    python bench/bench_forest.py --quick
    python bench/bench_forest.py --rows 200000 --max-depth 10 --repeats 1
    python bench/bench_forest.py --task regression --rows 250000 --trees 100 --repeats 1
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import multiprocessing as mp
import statistics
import sys
import time
import traceback
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

_BENCH_DIR = Path(__file__).resolve().parent
if str(_BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(_BENCH_DIR))

from bench_tree import (  # noqa: E402  (shared data, machine info and helpers)
    ADULT_CATEGORICAL,
    DEFAULT_DATA_DIR,
    _depth,
    _import_gputrees,
    _sync,
    _to_numpy,
    load_adult,
    machine_info,
    make_synthetic,
    print_aligned,
)

QUICK_ROWS = 100_000
QUICK_TREES = 20
LIBRARIES = ("gputrees", "sklearn", "xgboost")
#: gputrees' untimed warm-up fit in every child: this many rows, WARMUP_TREES trees.
WARMUP_ROWS = 2_000
#: Trees of the warm-up fit: enough for gputrees to grow a batch whole from
#: its roots on up to 4 threads (gputrees._grower.SUBTREE_PAIRS_PER_THREAD = 8
#: a thread), so that the timed fit loads every kernel it runs from Numba's
#: cache (or compiles it) in the warm-up, not in its timing.
WARMUP_TREES = 32
MIB = 2**20


# --------------------------------------------------------------------------
# argument parsing
# --------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Fit gputrees, scikit-learn and XGBoost random forests side by side "
        "and compare fit time, predict time, test accuracy and peak memory."
    )
    p.add_argument("--rows", type=int, default=None,
                   help="rows of the synthetic data set, before the train/test split "
                        "(default 1,000,000; 100,000 with --quick)")
    p.add_argument("--features", type=int, default=28,
                   help="columns of the synthetic data set (default 28)")
    p.add_argument("--trees", type=int, default=None,
                   help="trees per forest (default 100; 20 with --quick)")
    p.add_argument("--max-depth", type=_depth, default=None,
                   help="max_depth of every tree: an integer, or 'none' for full depth "
                        "(scikit-learn's default; XGBoost max_depth=0). Default none")
    p.add_argument("--repeats", type=int, default=None,
                   help="fits (child processes) per library and data set; medians are "
                        "reported (default 3; 1 with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 100k synthetic rows, 20 trees, 1 repeat unless "
                        "--rows/--trees/--repeats are given explicitly")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="device for gputrees and XGBoost (cuda: CuPy inputs, "
                        "device='cuda'); scikit-learn always runs on the CPU (default cpu)")
    p.add_argument("--only", choices=["synthetic", "adult"], default=None,
                   help="run just one of the two data sets")
    p.add_argument("--task", choices=["classification", "regression"], default="classification",
                   help="classifiers (default) or regressors; regression runs on the synthetic "
                        "features only, target the sum of the first four plus Gaussian noise")
    p.add_argument("--libraries", default=",".join(LIBRARIES),
                   help="comma-separated subset of gputrees,sklearn,xgboost "
                        "(default all three)")
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                   help="directory holding adult.csv (default ../shared/data relative "
                        "to the repository root)")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32",
                   help="dtype of the synthetic features (default float32)")
    p.add_argument("--test-size", type=float, default=0.2,
                   help="fraction held out for test accuracy (default 0.2)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed for data generation, the train/test split and every "
                        "estimator's random_state (default 0)")
    p.add_argument("--n-jobs", type=int, default=-1,
                   help="n_jobs of every library (default -1: all cores)")
    p.add_argument("--xgb-min-child-weight", type=float, default=1.0,
                   help="XGBoost min_child_weight (default 1.0, XGBoost's own default)")
    p.add_argument("--batch-size", type=int, default=None,
                   help="gputrees batch_size (trees grown together; default: sized "
                        "from memory_limit)")
    p.add_argument("--memory-limit", type=int, default=None,
                   help="gputrees memory_limit in bytes (default: gputrees' 1 GiB)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds one child (warm-up + fit + predict) may run before it "
                        "is killed and the row marked TIMEOUT (default: no limit)")
    p.add_argument("--json", type=Path, default=None,
                   help="also write machine info, settings and all results to this JSON file")
    args = p.parse_args(argv)
    if args.rows is None:
        args.rows = QUICK_ROWS if args.quick else 1_000_000
    if args.trees is None:
        args.trees = QUICK_TREES if args.quick else 100
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    if args.repeats < 1 or args.trees < 1:
        p.error("--repeats and --trees must be >= 1")
    if args.rows < 10 or args.features < 1:
        p.error("--rows must be >= 10 and --features >= 1")
    libs = [s.strip() for s in args.libraries.split(",") if s.strip()]
    bad = [s for s in libs if s not in LIBRARIES]
    if bad or not libs:
        p.error(f"--libraries: unknown {bad}; choose from {','.join(LIBRARIES)}")
    args.libraries = [lib for lib in LIBRARIES if lib in libs]
    if args.task == "regression":
        if args.only == "adult":
            p.error("--task regression runs on the synthetic data only")
        args.only = "synthetic"
    return args


# --------------------------------------------------------------------------
# estimators
# --------------------------------------------------------------------------
def xgb_colsample_bynode(n_features):
    """XGBoost keeps ``int(colsample * F)`` features per node; this gives exactly
    scikit-learn's ``max_features="sqrt"`` count, ``max(1, floor(sqrt(F)))``."""
    k = max(1, math.isqrt(n_features))
    return min(1.0, (k + 0.5) / n_features)


def estimator_params(library, args, n_features, n_estimators=None):
    """Constructor arguments of one library's forest (also printed and saved)."""
    n_estimators = args.trees if n_estimators is None else n_estimators
    if library == "gputrees":
        params = {"n_estimators": n_estimators, "max_depth": args.max_depth,
                  "random_state": args.seed, "device": args.device, "n_jobs": args.n_jobs}
        if args.batch_size is not None:
            params["batch_size"] = args.batch_size
        if args.memory_limit is not None:
            params["memory_limit"] = args.memory_limit
        return params
    if library == "sklearn":
        return {"n_estimators": n_estimators, "max_depth": args.max_depth,
                "n_jobs": args.n_jobs, "random_state": args.seed}
    if library == "xgboost":
        return {"n_estimators": n_estimators, "tree_method": "hist",
                "max_depth": 0 if args.max_depth is None else args.max_depth,
                "grow_policy": "depthwise", "subsample": 0.632,
                "colsample_bynode": xgb_colsample_bynode(n_features),
                "learning_rate": 1.0, "reg_lambda": 1e-5,
                "min_child_weight": args.xgb_min_child_weight,
                "n_jobs": args.n_jobs, "random_state": args.seed, "device": args.device}
    raise ValueError(library)


def make_estimator(library, params, regression=False):
    kind = "Regressor" if regression else "Classifier"
    if library == "gputrees":
        return getattr(_import_gputrees(), "RandomForest" + kind)(**params)
    if library == "sklearn":
        from sklearn import ensemble

        return getattr(ensemble, "RandomForest" + kind)(**params)
    if library == "xgboost":
        import xgboost

        return getattr(xgboost, "XGBRF" + kind)(**params)
    raise ValueError(library)


def make_synthetic_regression(n_rows, n_features, dtype, seed):
    """The synthetic features and a continuous target: the sum of the first four
    (missing values as 0) plus standard Gaussian noise."""
    X, _ = make_synthetic(n_rows, n_features, dtype, seed)
    noise = np.random.default_rng(seed + 1).standard_normal(n_rows)
    y = np.nan_to_num(np.asarray(X[:, :4], dtype=np.float64)).sum(axis=1) + noise
    return X, y


def test_score(pred, y_true, regression):
    """Accuracy, or R^2 for regression, of predictions ``pred`` (both 1-D)."""
    if not regression:
        return float(np.mean(pred.astype(np.int64) == y_true.astype(np.int64)))
    y_true = y_true.astype(np.float64)
    resid = np.sum((y_true - pred.astype(np.float64)) ** 2)
    return float(1.0 - resid / np.sum((y_true - y_true.mean()) ** 2))


def forest_shape(library, est):
    """(deepest tree, mean leaves per tree), None where unavailable."""
    try:
        if library == "xgboost":
            dumps = est.get_booster().get_dump()
            depths = [max(len(ln) - len(ln.lstrip("\t")) for ln in d.splitlines() if ln)
                      for d in dumps]
            leaves = [d.count("leaf=") for d in dumps]
        else:
            trees = est.estimators_
            depths = [int(t.get_depth()) for t in trees]
            leaves = [int(t.get_n_leaves()) for t in trees]
        return max(depths), float(np.mean(leaves))
    except Exception:
        return None, None


# --------------------------------------------------------------------------
# peak memory of one fit, in the child process
# --------------------------------------------------------------------------
def _status_kib(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


class PeakRSS:
    """Extra peak resident memory of the code run between construction and
    :meth:`delta`.

    Linux: writing ``5`` to ``/proc/self/clear_refs`` resets the process' peak
    RSS (``VmHWM``, also what ``getrusage().ru_maxrss`` reads) to its current
    RSS; the delta is ``VmHWM`` afterwards minus ``VmRSS`` before.  Elsewhere
    the delta is the growth of ``ru_maxrss``, a lower bound (0 when the code
    stayed below an earlier peak of the process).
    """

    def __init__(self):
        gc.collect()
        self.method = "VmHWM after clear_refs"
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")
            self.base = _status_kib("VmRSS") * 1024
        except OSError:
            self.method = "ru_maxrss growth (lower bound)"
            self.base = self._maxrss()

    @staticmethod
    def _maxrss():
        import resource

        r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return r if sys.platform == "darwin" else r * 1024

    def delta(self):
        if self.method.startswith("VmHWM"):
            peak = _status_kib("VmHWM") * 1024
        else:
            peak = self._maxrss()
        return max(0, peak - self.base)


class PeakGPU:
    """Extra CuPy memory-pool bytes of a fit (CuPy keeps freed blocks cached,
    so the pool's total after the fit is its peak); None for XGBoost, which
    allocates outside CuPy's pool."""

    def __init__(self, cp, library):
        self.pool = None
        if cp is not None and library == "gputrees":
            self.pool = cp.get_default_memory_pool()
            self.pool.free_all_blocks()
            self.base = self.pool.used_bytes()

    def delta(self):
        return None if self.pool is None else max(0, self.pool.total_bytes() - self.base)


# --------------------------------------------------------------------------
# one fit in a child process
# --------------------------------------------------------------------------
def _head(a, k):
    return a.iloc[:k] if hasattr(a, "iloc") else a[:k]


def _fit_once(task):
    library, params = task["library"], task["params"]
    X_tr, y_tr, X_te, y_te = task["data"]
    cp = None
    if task["device"] == "cuda" and library in ("gputrees", "xgboost"):
        import cupy as cp

        conv = lambda a: cp.asarray(a) if isinstance(a, np.ndarray) else a  # noqa: E731
        X_tr, y_tr, X_te = conv(X_tr), conv(y_tr), conv(X_te)
        _sync(cp)
    out = {"warmup_s": None}
    if task["warmup"]:
        k = min(WARMUP_ROWS, len(y_tr))
        est = make_estimator(library, {**params, "n_estimators": WARMUP_TREES}, task["regression"])
        _sync(cp)
        t0 = time.perf_counter()
        est.fit(_head(X_tr, k), _head(y_tr, k))
        est.predict(_head(X_te, k))
        _sync(cp)
        out["warmup_s"] = time.perf_counter() - t0
        del est
    est = make_estimator(library, params, task["regression"])
    gpu = PeakGPU(cp, library)
    mem = PeakRSS()
    _sync(cp)
    t0 = time.perf_counter()
    est.fit(X_tr, y_tr)
    _sync(cp)
    out["fit_s"] = time.perf_counter() - t0
    out["fit_peak_bytes"] = mem.delta()
    out["gpu_peak_bytes"] = gpu.delta()
    out["memory_method"] = mem.method
    try:
        mem = PeakRSS()
        _sync(cp)
        t0 = time.perf_counter()
        pred = est.predict(X_te)
        _sync(cp)
        out["predict_s"] = time.perf_counter() - t0
        out["predict_peak_bytes"] = mem.delta()
        # the test accuracy, or R^2 with --task regression
        out["acc"] = test_score(_to_numpy(pred).ravel(), _to_numpy(y_te).ravel(), task["regression"])
    except Exception as exc:
        out["predict_error"] = f"{type(exc).__name__}: {exc}"
        out["traceback"] = traceback.format_exc()
    if task["shape"]:
        out["depth"], out["leaves"] = forest_shape(library, est)
    return out


def _child_main(conn, task):
    try:
        res = _fit_once(task)
    except BaseException as exc:  # reported by the parent
        res = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    conn.send(res)
    conn.close()


_CTX = None


def _mp_context():
    global _CTX
    if _CTX is None:
        if "forkserver" in mp.get_all_start_methods():
            _CTX = mp.get_context("forkserver")
            # the server imports this script (numpy, pandas, scikit-learn) once;
            # each child is forked from it, so no child pays those imports again
            main_file = getattr(sys.modules.get("__main__"), "__file__", None)
            ours = main_file is not None and Path(main_file).resolve() == Path(__file__).resolve()
            _CTX.set_forkserver_preload(["__main__" if ours else __name__])
        else:
            _CTX = mp.get_context("spawn")
    return _CTX


def run_in_child(task, timeout):
    """Run one fit in a fresh child process; a dict with the results or 'error'."""
    ctx = _mp_context()
    recv, send = ctx.Pipe(duplex=False)
    # not a daemon: joblib runs scikit-learn's n_jobs=-1 on one core in daemon processes
    proc = ctx.Process(target=_child_main, args=(send, task), daemon=False)
    proc.start()
    send.close()
    t0 = time.monotonic()
    res = None
    try:
        while True:
            if recv.poll(0.2):
                try:
                    res = recv.recv()
                except EOFError:
                    res = None
                break
            if not proc.is_alive():
                if recv.poll(0):
                    res = recv.recv()
                break
            if timeout is not None and time.monotonic() - t0 > timeout:
                proc.kill()
                res = {"error": f"TIMEOUT after {timeout:.0f}s", "timeout": True}
                break
    finally:
        if proc.is_alive() and res is None:  # interrupted: do not leave the child running
            proc.kill()
        proc.join()
        recv.close()
    if res is None:
        code = proc.exitcode
        why = ""
        if code is not None and code < 0:
            why = f" (killed by signal {-code}; out of memory?)"
        res = {"error": f"child process exited with code {code} without a result{why}"}
    return res


def time_forest(library, params, data, args, label):
    """`--repeats` fits, each in its own child; medians and the per-fit lists."""
    fits = []
    for i in range(args.repeats):
        task = {"library": library, "params": params, "data": data, "device": args.device,
                "warmup": library == "gputrees", "shape": i == args.repeats - 1,
                "regression": args.task == "regression"}
        res = run_in_child(task, args.timeout)
        if res.get("error"):
            print(f"  {label} fit {i + 1}/{args.repeats} FAILED: {res['error']}", file=sys.stderr)
            if res.get("traceback"):
                print(res["traceback"], file=sys.stderr)
            return {"error": res["error"]}
        if res.get("predict_error"):
            print(f"  {label} predict FAILED: {res['predict_error']}", file=sys.stderr)
            print(res.get("traceback", ""), file=sys.stderr)
        fits.append(res)
        print(f"  {label} fit {i + 1}/{args.repeats}: fit {res['fit_s']:.2f}s"
              + (f", predict {res['predict_s']:.2f}s" if "predict_s" in res else "")
              + f", fit peak +{res['fit_peak_bytes'] / MIB:.0f} MiB"
              + (f", {'r2' if args.task == 'regression' else 'acc'} {res['acc']:.4f}" if "acc" in res else ""),
              flush=True)

    def med(key):
        vals = [f[key] for f in fits if f.get(key) is not None]
        return statistics.median(vals) if vals else None

    last = fits[-1]
    out = {key: med(key) for key in ("fit_s", "warmup_s", "predict_s", "fit_peak_bytes",
                                      "predict_peak_bytes", "gpu_peak_bytes")}
    out.update({
        "fit_times_s": [f["fit_s"] for f in fits],
        "predict_times_s": [f.get("predict_s") for f in fits],
        "fit_peak_bytes_all": [f["fit_peak_bytes"] for f in fits],
        "acc": last.get("acc"),
        "depth": last.get("depth"),
        "leaves": last.get("leaves"),
        "memory_method": last.get("memory_method"),
    })
    if any(f.get("predict_error") for f in fits):
        out["predict_error"] = next(f["predict_error"] for f in fits if f.get("predict_error"))
    return out


# --------------------------------------------------------------------------
# reporting
# --------------------------------------------------------------------------
def print_table(rows, gpu, score="test_acc"):
    headers = ["dataset", "library", "input", "device", "n_train", "n_test", "fit_s(med)",
               "warmup_s", "pred_s(med)", score, "fit_peak_MiB", "depth", "leaves/tree"]
    if gpu:
        headers.append("gpu_peak_MiB")

    def num(v, spec, scale=1):
        if v is None:
            return "-"
        return format(v / scale if scale != 1 else v, spec)

    def fmt(r):
        head = [r["dataset"], r["library"], r["input"], r["device"],
                str(r.get("n_train", "-")), str(r.get("n_test", "-"))]
        if r.get("skipped"):
            return head + ["SKIPPED"] + ["-"] * (len(headers) - 7)
        if r.get("error"):
            cell = "TIMEOUT" if r["error"].startswith("TIMEOUT") else "ERROR"
            return head + [cell] + ["-"] * (len(headers) - 7)
        cells = head + [num(r["fit_s"], ".2f"), num(r["warmup_s"], ".2f"),
                        num(r["predict_s"], ".3f"),
                        "ERROR" if r.get("predict_error") else num(r["acc"], ".4f"),
                        num(r["fit_peak_bytes"], ".0f", MIB), num(r["depth"], "d"),
                        num(r["leaves"], ".0f")]
        if gpu:
            cells.append(num(r.get("gpu_peak_bytes"), ".0f", MIB))
        return cells

    body = [fmt(r) for r in rows]
    print_aligned(headers, body)


def _x(ratio):
    if ratio is None:
        return "-"
    return f"{ratio:.1f}x" if ratio >= 1 else f"{ratio:.2f}x" if ratio >= 0.1 else f"{ratio:.3f}x"


def compare(other, gt):
    """Ratios other/gputrees (> 1: gputrees faster / smaller) and accuracy gap."""

    def ratio(key):
        a, b = other.get(key), gt.get(key)
        return a / b if a is not None and b else None

    acc_gap = None
    if gt.get("acc") is not None and other.get("acc") is not None:
        acc_gap = gt["acc"] - other["acc"]
    return {"dataset": gt["dataset"], "gputrees_input": gt["input"], "other": other["library"],
            "fit": ratio("fit_s"), "predict": ratio("predict_s"),
            "fit_peak_memory": ratio("fit_peak_bytes"), "acc_gputrees": gt.get("acc"),
            "acc_other": other.get("acc"), "acc_gap": acc_gap}


def _xgboost_version():
    try:
        import xgboost

        return xgboost.__version__, None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------
def main(argv=None):
    args = parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)

    gputrees = None
    if "gputrees" in args.libraries:
        try:
            gputrees = _import_gputrees()
            gputrees.RandomForestClassifier  # noqa: B018
        except Exception as exc:
            print("ERROR: could not import gputrees.RandomForestClassifier:\n"
                  f"  {type(exc).__name__}: {exc}\n"
                  "Install the package (`pip install -e .`) or run from the repository "
                  "root; `--libraries sklearn,xgboost` times the baselines alone.",
                  file=sys.stderr)
            return 2
    cp = None
    if args.device == "cuda":
        try:
            import cupy as cp  # noqa: F811
            cp.cuda.runtime.getDeviceCount()
        except Exception as exc:
            print(f"ERROR: --device cuda needs a working CuPy/CUDA install: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr)
            return 2

    notes = []
    libraries = list(args.libraries)
    xgb_version, xgb_error = _xgboost_version() if "xgboost" in libraries else (None, None)
    if "xgboost" in libraries and xgb_version is None:
        notes.append(f"xgboost rows skipped: xgboost is not importable ({xgb_error}); "
                     "`pip install xgboost` to include them")

    info = machine_info(gputrees, cp)
    if xgb_version is not None:
        info["xgboost"] = xgb_version
    info["mp_start"] = _mp_context().get_start_method()
    print(f"== random forests ({args.task}): gputrees vs scikit-learn vs XGBoost (random-forest mode) ==")
    for k, v in info.items():
        print(f"{k:>13}: {v}")
    depth = "None (full depth)" if args.max_depth is None else args.max_depth
    print(f"{'settings':>13}: trees={args.trees} max_depth={depth} repeats={args.repeats} "
          f"device={args.device} seed={args.seed} test_size={args.test_size} "
          f"n_jobs={args.n_jobs}{' (quick)' if args.quick else ''}")
    print(flush=True)

    datasets = ["synthetic", "adult"] if args.only is None else [args.only]
    rows, comparisons, settings = [], [], {}

    def run_row(dataset, library, input_kind, data, n_features):
        n_train, n_test = len(data[1]), len(data[3])
        dev = args.device if library in ("gputrees", "xgboost") else "cpu"
        r = {"dataset": dataset, "library": library, "input": input_kind, "device": dev,
             "n_train": n_train, "n_test": n_test}
        if library == "xgboost" and xgb_version is None:
            r["skipped"] = "xgboost not importable"
            rows.append(r)
            return r
        params = estimator_params(library, args, n_features)
        r["params"] = params
        settings.setdefault(dataset, {})[f"{library} ({input_kind})"] = params
        print(f"[{dataset}] {library} ({input_kind}): {params}", flush=True)
        r.update(time_forest(library, params, data, args, f"[{dataset}] {library}"))
        rows.append(r)
        return r

    for ds in datasets:
        if ds == "synthetic":
            t0 = time.perf_counter()
            make = make_synthetic_regression if args.task == "regression" else make_synthetic
            X, y = make(args.rows, args.features, np.dtype(args.dtype), args.seed)
            X_tr, X_te, y_tr, y_te = train_test_split(
                X, y, test_size=args.test_size, random_state=args.seed)
            del X, y
            data = (np.ascontiguousarray(X_tr), y_tr, np.ascontiguousarray(X_te), y_te)
            target = (f"target mean {y_tr.mean():.3f}, sd {y_tr.std():.3f}" if args.task == "regression"
                      else f"positive rate {y_tr.mean():.3f}")
            print(f"[synthetic] {args.rows:,} x {args.features} {args.dtype}, {target}, generated in "
                  f"{time.perf_counter() - t0:.1f}s", flush=True)
            res = {lib: run_row(ds, lib, "numpy", data, args.features) for lib in libraries}
            pairs = [("numpy", res.get("gputrees"))]
            baselines = [res.get("sklearn"), res.get("xgboost")]
            del data, X_tr, X_te, y_tr, y_te
        else:
            t0 = time.perf_counter()
            try:
                ad = load_adult(args.data_dir, args.test_size, args.seed)
            except Exception as exc:
                print(f"ERROR: loading Adult failed: {type(exc).__name__}: {exc}",
                      file=sys.stderr)
                rows.append({"dataset": "adult", "library": "-", "input": "-", "device": "-",
                             "error": str(exc)})
                continue
            (cat_tr, cat_te), (ord_tr, ord_te), (y_tr, y_te) = ad["cat"], ad["ord"], ad["y"]
            n_features = ord_tr.shape[1]
            print(f"[adult] {len(y_tr) + len(y_te):,} rows x {n_features} features "
                  f"({len(ADULT_CATEGORICAL)} categorical, {ad['n_missing_cells']:,} missing "
                  f"categorical cells), positive rate {y_tr.mean():.3f}, loaded in "
                  f"{time.perf_counter() - t0:.1f}s", flush=True)
            ordinal = (ord_tr, y_tr, ord_te, y_te)
            pairs, baselines = [], []
            if "gputrees" in libraries:
                pairs.append(("pandas-category", run_row(
                    ds, "gputrees", "pandas-category", (cat_tr, y_tr, cat_te, y_te), n_features)))
                pairs.append(("ordinal+NaN", run_row(ds, "gputrees", "ordinal+NaN", ordinal,
                                                     n_features)))
            for lib in ("sklearn", "xgboost"):
                if lib in libraries:
                    baselines.append(run_row(ds, lib, "ordinal+NaN", ordinal, n_features))
            del ad, ordinal
        for _, gt in pairs:
            if gt is None or gt.get("error") or gt.get("skipped"):
                continue
            for other in baselines:
                if other is None or other.get("error") or other.get("skipped"):
                    continue
                comparisons.append(compare(other, gt))
        gc.collect()

    print()
    regression = args.task == "regression"
    print_table(rows, gpu=cp is not None, score="test_r2" if regression else "test_acc")
    print()
    print("fit_s / pred_s: median wall time of fit() / predict(X_test) over the repeats, "
          f"each fit in its own child process; warmup_s: gputrees' untimed {WARMUP_TREES}-tree fit on "
          f"{WARMUP_ROWS:,} rows in the same child, before the timed one.")
    method = next((r.get("memory_method") for r in rows if r.get("memory_method")), None)
    print(f"fit_peak_MiB: median peak extra resident memory of fit() in its child "
          f"({method or 'n/a'}); leaves/tree: mean over the trees of the last fit.")
    print("ratio = other library / gputrees for fit, predict and peak memory "
          "(>1: gputrees faster or smaller); "
          + ("r2 gap = gputrees - other." if regression else "acc gap = gputrees - other, in points."))
    for r in rows:
        for key in ("error", "predict_error"):
            if r.get(key):
                print(f"{key.replace('_', ' ')} ({r['dataset']}, {r['library']}, "
                      f"{r['input']}): {r[key]}")
    for note in notes:
        print(f"note: {note}")
    for c in comparisons:
        gap = ("-" if c["acc_gap"] is None else f"{c['acc_gap']:+.4f}" if regression
               else f"{100 * c['acc_gap']:+.2f}")
        print(f"ratio {c['other']}/gputrees ({c['dataset']}, gputrees on {c['gputrees_input']}): "
              f"fit {_x(c['fit'])}, predict {_x(c['predict'])}, peak memory "
              f"{_x(c['fit_peak_memory'])}; {'r2' if regression else 'acc'} gap {gap}")

    if args.json is not None:
        payload = {"machine": info,
                   "args": {k: (str(v) if isinstance(v, Path) else v)
                            for k, v in vars(args).items()},
                   "settings": settings, "results": rows, "ratios": comparisons,
                   "notes": notes}
        args.json.write_text(json.dumps(payload, indent=2, default=str))
        print(f"results written to {args.json}")

    failed = any(r.get("error") or r.get("predict_error") for r in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
