"""The benchmark matrix of issue 13: gputrees against its peers over the shapes and kinds of data users bring.

Run:  python bench/bench_matrix.py [--rows 1000 10000 100000] [--features 10] [--kinds continuous discrete
                                   categorical missing] [--tasks binary multiclass regression]
                                   [--models tree forest extra-trees boosting] [--repeats 3] [--threads 2]
                                   [--device cpu|cuda] [--out FILE]
      python bench/bench_matrix.py --quick       # one small cell of each model, a minute
      python bench/bench_matrix.py --datasets adult california_housing [--models ...]   # real data instead

Every cell is one (rows, features, kind of data, task, model family) and fits, in this one process, each
library at its defaults with 100 trees or rounds (``n_estimators=100``; boosting also ``max_depth=6`` for
XGBoost, whose default it is, and for nobody else), ``--threads`` threads each (``n_jobs``; threadpoolctl
for scikit-learn's OpenMP):

* ``tree``: gputrees' and scikit-learn's DecisionTree;
* ``forest``: gputrees' and scikit-learn's RandomForest;
* ``extra-trees``: gputrees' and scikit-learn's ExtraTrees;
* ``boosting``: gputrees' GradientBoosting, XGBoost (``tree_method="hist"``), LightGBM and scikit-learn's
  HistGradientBoosting, each at its own defaults (gputrees: ``min_samples_leaf=20``, early stopping
  "auto" as scikit-learn's; the peers with early stopping off where it is their default).

Data (seeded; 80/20 split): ``continuous`` (normal features), ``discrete`` (each feature rounded to a few
distinct values), ``categorical`` (half the columns pandas categories of 12 levels, given natively to
gputrees, LightGBM and scikit-learn's HGB, as ordinal codes to the others), ``missing`` (30% of the values
NaN; scikit-learn's trees and forests take NaN since 1.4). The target mixes an interaction and a threshold
of the first features with noise: ``binary``, ``multiclass`` (5 classes by quantile) or ``regression``.
``--datasets``: the real data sets of ``../shared/data`` instead, loaded as ``boost_accuracy.py`` loads them
(categories as ordinal codes for every library, missing values NaN), each with its own task.

gputrees' kernels are compiled before the timings (a first fit of each family on a small copy of the cell's
data, untimed, with ``gputrees.kernels.cold_start.mark_compiled``: the steady state of a user's loop; the
first fit of a fresh install is ``bench_latency.py``'s). The repeats are interleaved, libraries in turn.
Printed per cell: each library's median fit time and test score (accuracy or R^2), and gputrees' time over
the fastest peer's (``vs best``; below 1: gputrees is faster); then the median and the worst cells.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time

import numpy as np

FAMILIES = ("tree", "forest", "extra-trees", "boosting")
#: ``--datasets``: boost_accuracy.py's loaders of the real data sets
REAL_DATASETS = ("adult", "bank_marketing", "california_housing", "flights")
KINDS = ("continuous", "discrete", "categorical", "missing")
TASKS = ("binary", "multiclass", "regression")
CLASS_NAMES = {"tree": "DecisionTree{}", "forest": "RandomForest{}", "extra-trees": "ExtraTrees{}",
               "boosting": "GradientBoosting{}"}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, nargs="+", default=[1000, 10000, 100000])
    p.add_argument("--features", type=int, nargs="+", default=[10])
    p.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    p.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS))
    p.add_argument("--models", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--trees", type=int, default=100, help="n_estimators of every ensemble")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="2,000 rows, 8 features, one kind and task per model")
    p.add_argument("--device", choices=["cpu", "cuda"], default=None,
                   help="gputrees' device= (NumPy inputs; cuda copies them to the GPU); the peers run on the CPU")
    p.add_argument("--datasets", nargs="+", choices=REAL_DATASETS, default=None,
                   help="instead of the synthetic grid, these real data sets (../shared/data) as they are: "
                        "categories as codes, missing values NaN, their own task")
    p.add_argument("--out", help="also write the printout to this file")
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.features, args.kinds, args.tasks, args.repeats = [2000], [8], ["missing"], ["binary"], 1
    return args


# -- data ------------------------------------------------------------------------------
def make_data(n_rows, n_features, kind, task, seed):
    """(X as a DataFrame, y, indices of the categorical columns); see the module's docstring."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_rows, n_features))
    signal = X[:, 0] + X[:, 1] * X[:, 2] + (X[:, 3 % n_features] > 0.5) + 0.5 * rng.standard_normal(n_rows)
    cat_cols = []
    if kind == "discrete":
        X = np.round(X * 1.5)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(n_features)])
    if kind == "categorical":
        cat_cols = list(range(0, n_features, 2))
        for j in cat_cols:
            levels = np.digitize(X[:, j], np.quantile(X[:, j], np.linspace(0, 1, 13)[1:-1]))
            # categories in an order unrelated to the signal: a native split must find the grouping
            perm = np.random.default_rng(seed + j).permutation(12)
            frame[f"x{j}"] = pd.Categorical.from_codes(perm[levels], categories=[f"c{i}" for i in range(12)])
    if kind == "missing":
        frame = frame.mask(rng.random(frame.shape) < 0.3)
    if task == "binary":
        y = (signal > np.median(signal)).astype(np.int64)
    elif task == "multiclass":
        y = np.digitize(signal, np.quantile(signal, [0.2, 0.4, 0.6, 0.8])).astype(np.int64)
    else:
        y = signal
    return frame, y, cat_cols


def ordinal(frame):
    """The frame as float64 with categories as their codes (NaN for missing)."""
    out = frame.copy()
    for c in out.columns:
        if str(out[c].dtype) == "category":
            codes = out[c].cat.codes.to_numpy().astype(np.float64)
            codes[codes < 0] = np.nan
            out[c] = codes
    return out.to_numpy(dtype=np.float64)


# -- models ------------------------------------------------------------------------------
def models(family, task, args):
    """{library: (factory, input kind)}; input kind "frame" (categories native) or "ordinal"."""
    import gputrees

    clf = task != "regression"
    suffix = "Classifier" if clf else "Regressor"
    T, n = args.threads, args.trees
    out = {}
    gt_cls = getattr(gputrees, CLASS_NAMES[family].format(suffix))
    gt_kw = {"n_jobs": T} if family == "tree" else {"n_estimators": n, "n_jobs": T}
    if args.device is not None:
        gt_kw["device"] = args.device
    out["gputrees"] = (lambda: gt_cls(random_state=0, **gt_kw), "frame")
    if family in ("tree", "forest", "extra-trees"):
        import sklearn.ensemble as ens
        import sklearn.tree as tr

        sk = {"tree": tr, "forest": ens, "extra-trees": ens}[family]
        name = {"tree": "DecisionTree", "forest": "RandomForest", "extra-trees": "ExtraTrees"}[family] + suffix
        sk_kw = {} if family == "tree" else {"n_estimators": n, "n_jobs": T}
        out["sklearn"] = (lambda: getattr(sk, name)(random_state=0, **sk_kw), "ordinal")
        return out
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    xgb_cls = xgb.XGBClassifier if clf else xgb.XGBRegressor
    lgb_cls = lgb.LGBMClassifier if clf else lgb.LGBMRegressor
    hgb_cls = HistGradientBoostingClassifier if clf else HistGradientBoostingRegressor
    out["xgboost"] = (lambda: xgb_cls(n_estimators=n, tree_method="hist", n_jobs=T, random_state=0), "ordinal")
    out["lightgbm"] = (lambda: lgb_cls(n_estimators=n, n_jobs=T, random_state=0, verbose=-1), "frame")
    out["sklearn-hgb"] = (lambda: hgb_cls(max_iter=n, random_state=0, categorical_features="from_dtype"), "frame")
    return out


def score(task, y_true, pred):
    if task == "regression":
        return 1.0 - float(np.mean((y_true - pred) ** 2) / np.var(y_true))
    return float(np.mean(y_true == pred))


def warm_up(family, task, args):
    """Compile gputrees' kernels of this family (untimed) and keep them: the steady state of a loop of fits."""
    from gputrees.kernels import cold_start

    make, _ = models(family, task, args)["gputrees"]
    cold_start.mark_compiled(type(make()).__name__)
    for kind in args.kinds:
        X, y, _ = make_data(300, max(args.features), kind, task, args.seed + 99)
        make().fit(X, y).predict(X)


def run_cell(family, task, n_rows, n_features, kind, args):
    frame, y, _ = make_data(int(n_rows / 0.8), n_features, kind, task, args.seed)
    return time_cell(family, task, frame, ordinal(frame), y, args)


def load_real(name):
    """A real data set as boost_accuracy.py loads it: (X float64, categories as codes; y; task)."""
    from boost_accuracy import DATA_DIR, DATASETS

    kind, load = DATASETS[name]
    X, y = load(DATA_DIR)
    return X, y, "binary" if kind == "classification" else "regression"


def time_cell(family, task, frame, Xo, y, args):
    """Each library's median fit time and test score on one cell's data (80/20 split); gputrees' ratio."""
    from sklearn.model_selection import train_test_split
    from threadpoolctl import threadpool_limits

    idx_tr, idx_te = train_test_split(np.arange(len(y)), test_size=0.2, random_state=0)
    inputs = {"frame": (frame.iloc[idx_tr], frame.iloc[idx_te]), "ordinal": (Xo[idx_tr], Xo[idx_te])}
    libs = models(family, task, args)
    times = {lib: [] for lib in libs}
    scores = {}
    order = list(libs)
    with threadpool_limits(args.threads):
        for r in range(args.repeats):
            for lib in order if r % 2 == 0 else order[::-1]:
                make, kind_in = libs[lib]
                Xtr, Xte = inputs[kind_in]
                model = make()
                t = time.perf_counter()
                model.fit(Xtr, y[idx_tr])
                times[lib].append(time.perf_counter() - t)
                scores[lib] = score(task, y[idx_te], np.asarray(model.predict(Xte)).ravel())
    fits = {lib: statistics.median(v) for lib, v in times.items()}
    best_peer = min(v for k, v in fits.items() if k != "gputrees")
    return fits, scores, fits["gputrees"] / best_peer


def main(argv=None):
    args = parse_args(argv)
    lines = []

    def emit(text=""):
        print(text, flush=True)
        lines.append(text)

    import gputrees
    import sklearn

    emit(f"bench_matrix: gputrees {gputrees.__version__}, scikit-learn {sklearn.__version__}, {args.threads} "
         f"threads, {args.trees} trees, {args.repeats} repeats; {time.strftime('%Y-%m-%d %H:%M')}")
    emit(f"command: python bench/bench_matrix.py {' '.join(sys.argv[1:] if argv is None else argv)}")
    results = []
    start = time.perf_counter()

    def report(cell, fits, scores, ratio):
        libs = "  ".join(f"{lib} {fits[lib]:.3f}s ({scores[lib]:.3f})" for lib in fits)
        emit(f"{cell} vs best {ratio:5.2f}x | {libs}")
        results.append((ratio, cell))

    if args.datasets:
        import pandas as pd

        for name in args.datasets:
            X, y, task = load_real(name)
            frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
            for family in args.models:
                warm_up(family, task, args)
                cell = f"{family:<11} {task:<10} {name:<18} {X.shape[0]:>7} x {X.shape[1]:<3}"
                report(cell, *time_cell(family, task, frame, X, y, args))
    else:
        for family in args.models:
            for task in args.tasks:
                warm_up(family, task, args)
                for n_rows, n_features, kind in itertools.product(args.rows, args.features, args.kinds):
                    cell = f"{family:<11} {task:<10} {n_rows:>7} x {n_features:<3} {kind:<11}"
                    report(cell, *run_cell(family, task, n_rows, n_features, kind, args))
    ratios = sorted(r for r, _ in results)
    emit()
    emit(f"{len(results)} cells in {time.perf_counter() - start:.0f} s; gputrees' fit over the fastest peer's: "
         f"median {statistics.median(ratios):.2f}x, best {ratios[0]:.2f}x, worst {ratios[-1]:.2f}x; "
         f"slower than the fastest peer in {sum(r > 1 for r in ratios)} cells")
    emit("worst cells:")
    for ratio, cell in sorted(results, reverse=True)[:10]:
        emit(f"  {ratio:5.2f}x  {cell}")
    if args.out:
        with open(args.out, "w") as fh:
            fh.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
