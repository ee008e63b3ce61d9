"""The ``gputrees`` command line (also ``python -m gputrees``).

Commands
--------
``train DATA --target COL [--model M] [--task T] [--device D] [--param k=v ...] [--test-size F] [--seed S] --out MODEL``
    Read a CSV or Parquet file, hold out a test fraction, train, print the
    test metrics (scikit-learn's) and save the model file.
``predict MODEL DATA --out PRED.csv``
    Predictions (and class probabilities) of a saved model for every row.
``evaluate MODEL DATA --target COL``
    The metrics of a saved model on a labelled file.
``inspect MODEL``
    Estimator, parameters, features, importances; the rules of a single tree.
``bench``
    The quick mode of the bench scripts that have one (``bench/*.py --quick``; source checkout only).
``compile [--families F ...] [--jobs N]``
    Compile the CPU kernels ahead of a first fit (Numba caches them on disk).
``demo``
    A tree, a forest and a booster on the bundled Titanic data.

User mistakes (missing file, unknown column, wrong task, bad parameter, bad
model file) print one line ``gputrees: error: ...`` on stderr and exit with
status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from ._warmup import FAMILIES as WARMUP_FAMILIES
from .kernels import KERNEL_NAMES

EXIT_USAGE = 2
#: ``--task auto`` treats an integer-valued numeric target with at most this
#: many distinct values as class labels (0/1 flags, ratings, counts of kinds),
#: and anything else numeric as a regression target.
AUTO_MAX_CLASSES = 20
MODELS = {
    "tree": ("DecisionTreeClassifier", "DecisionTreeRegressor"),
    "forest": ("RandomForestClassifier", "RandomForestRegressor"),
    "extra-trees": ("ExtraTreesClassifier", "ExtraTreesRegressor"),
    "gbdt": ("GradientBoostingClassifier", "GradientBoostingRegressor"),
    "adaboost": ("AdaBoostClassifier", "AdaBoostRegressor"),
}


class UserError(Exception):
    """A mistake of the user's: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UserError(message)


# -- data -----------------------------------------------------------------------
def read_table(path):
    """A pandas DataFrame from a CSV (optionally compressed) or Parquet file.

    Object and string columns become pandas ``category`` columns (gputrees
    splits them as categories); boolean columns become 0/1.
    """
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise UserError(f"data file not found: {path}")
    name = path.name.lower()
    if name.endswith((".parquet", ".pq")):
        try:
            df = pd.read_parquet(path)
        except ImportError as exc:
            raise UserError(f"reading Parquet needs pyarrow (pip install pyarrow): {exc}") from None
    else:
        try:
            df = pd.read_csv(path)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise UserError(f"cannot read {path} as CSV: {exc}") from None
    if df.shape[1] == 0 or df.shape[0] == 0:
        raise UserError(f"{path} has no rows or no columns")
    df.columns = [str(c) for c in df.columns]
    for col in df.columns:
        s = df[col]
        if s.dtype == bool:
            df[col] = s.astype(np.int64)
        elif s.dtype == object or str(s.dtype) in ("string", "str"):
            df[col] = s.astype("category")
    return df


def _split_target(df, target):
    if target not in df.columns:
        raise UserError(f"column {target!r} not in the data (columns: {', '.join(df.columns)})")
    y = df[target]
    n_missing = int(y.isna().sum())
    if n_missing:
        raise UserError(f"target {target!r} has {n_missing} missing values; drop those rows first")
    X = df.drop(columns=target)
    if X.shape[1] == 0:
        raise UserError("no feature columns besides the target")
    return X, y


def _features(df, est):
    """The model's feature columns of ``df``, in the order it was trained with."""
    names = getattr(est, "feature_names_in_", None)
    if names is None:
        if df.shape[1] != est.n_features_in_:
            raise UserError(f"the model expects {est.n_features_in_} columns, the data has {df.shape[1]}")
        return df
    missing = [n for n in names if n not in df.columns]
    if missing:
        raise UserError(f"columns missing from the data: {', '.join(missing)}")
    return df[list(names)]


def infer_task(y, task):
    """``"classification"`` or ``"regression"`` for target ``y`` (a pandas Series)."""
    numeric = y.dtype.kind in "iuf"
    if task == "auto":
        if not numeric:
            return "classification"
        values = y.to_numpy(dtype=np.float64)
        integral = bool(np.all(values == np.round(values)))
        return "classification" if integral and np.unique(values).shape[0] <= AUTO_MAX_CLASSES else "regression"
    if task == "regression" and not numeric:
        raise UserError(f"target {y.name!r} is not numeric (dtype {y.dtype}); use --task classification")
    if task == "classification" and y.dtype.kind == "f" and not np.all(y == np.round(y)):
        raise UserError(f"target {y.name!r} has non-integer numbers; use --task regression")
    return task


def parse_params(items):
    """``key=value`` strings -> dict; values read as JSON (numbers, bools, null) when they parse, else strings."""
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"--param expects key=value, got {item!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def make_estimator(model, task, params, device):
    import gputrees

    cls = getattr(gputrees, MODELS[model][0 if task == "classification" else 1])
    valid = cls().get_params()
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise UserError(f"unknown parameter(s) {', '.join(unknown)} for {cls.__name__}; valid: {', '.join(sorted(valid))}")
    est = cls(**params)
    if device is not None:
        est.set_params(device=device)
    if "verbose" in valid and "verbose" not in params:
        est.set_params(verbose=1)
    return est


# -- metrics --------------------------------------------------------------------
def metrics(est, X, y):
    """Test metrics computed with scikit-learn: a list of (name, value or message)."""
    from sklearn import metrics as m

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pred = est.predict(X)
        if not hasattr(est, "classes_"):
            y = y.to_numpy(dtype=np.float64)
            return [
                ("RMSE", m.root_mean_squared_error(y, pred)),
                ("MAE", m.mean_absolute_error(y, pred)),
                ("R2", m.r2_score(y, pred)),
            ]
        classes = est.classes_
        y = y.to_numpy()
        binary = classes.shape[0] == 2
        avg = dict(average="binary", pos_label=classes[1]) if binary else dict(average="macro")
        out = [
            ("accuracy", m.accuracy_score(y, pred)),
            ("precision" + ("" if binary else " (macro)"), m.precision_score(y, pred, zero_division=0, **avg)),
            ("recall" + ("" if binary else " (macro)"), m.recall_score(y, pred, zero_division=0, **avg)),
            ("F1" + ("" if binary else " (macro)"), m.f1_score(y, pred, zero_division=0, **avg)),
        ]
        proba = est.predict_proba(X)
        try:
            if binary:
                auc = m.roc_auc_score(y == classes[1], proba[:, 1])
            else:
                auc = m.roc_auc_score(y, proba, multi_class="ovr", average="macro", labels=classes)
        except ValueError as exc:
            auc = f"n/a ({exc})"
        out.append(("ROC AUC" + ("" if binary else " (macro OvR)"), auc))
        return out


def _print_metrics(rows, title):
    print(title)
    for name, value in rows:
        print(f"  {name:24s} {value:.4f}" if isinstance(value, float) else f"  {name:24s} {value}")


# -- commands -------------------------------------------------------------------
def cmd_train(args):
    from sklearn.model_selection import train_test_split

    df = read_table(args.data)
    X, y = _split_target(df, args.target)
    task = infer_task(y, args.task)
    params = parse_params(args.param)
    est = make_estimator(args.model, task, params, args.device)
    if not 0.0 < args.test_size < 1.0:
        raise UserError(f"--test-size must be in (0, 1), got {args.test_size}")
    stratify = None
    if task == "classification" and y.value_counts().min() >= 2:
        stratify = y
    try:
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=args.test_size, random_state=args.seed, stratify=stratify)
    except ValueError as exc:
        raise UserError(f"cannot hold out a test set: {exc}") from None
    cats = [c for c in X.columns if str(X[c].dtype) == "category"]
    print(f"{Path(args.data).name}: {X.shape[0]} rows, {X.shape[1]} features ({len(cats)} categorical), "
          f"target {args.target!r}, task {task}")
    print(f"training {type(est).__name__} on {X_tr.shape[0]} rows, testing on {X_te.shape[0]}")
    start = time.perf_counter()
    try:
        est.fit(X_tr, y_tr)
    except (ValueError, TypeError) as exc:
        raise UserError(f"training failed: {exc}") from None
    print(f"fitted in {time.perf_counter() - start:.2f} s")
    _print_metrics(metrics(est, X_te, y_te), "test metrics:")
    est.save_model(args.out)
    print(f"model saved to {args.out}")


def _load(path):
    from ._model_io import ModelFormatError, load_model

    if not Path(path).is_file():
        raise UserError(f"model file not found: {path}")
    try:
        return load_model(path)
    except ModelFormatError as exc:
        raise UserError(f"bad model file {path}: {exc}") from None


def cmd_predict(args):
    import pandas as pd

    est = _load(args.model)
    X = _features(read_table(args.data), est)
    out = pd.DataFrame({"prediction": est.predict(X)})
    if hasattr(est, "predict_proba") and hasattr(est, "classes_"):
        proba = est.predict_proba(X)
        for j, c in enumerate(est.classes_):
            out[f"proba_{c}"] = proba[:, j]
    out.to_csv(args.out, index=False)
    print(f"{out.shape[0]} predictions written to {args.out}")


def shap_columns(est, features, n_outputs):
    """Column names of ``gputrees explain``'s CSV: one per feature and the bias, per output where several."""
    base = [str(f) for f in features] + ["bias"]
    if n_outputs is None:
        return base
    classes = getattr(est, "classes_", None)
    labels = [str(c) for c in classes] if classes is not None and len(classes) == n_outputs else \
        [str(k) for k in range(n_outputs)]
    return [f"{name}[{label}]" for label in labels for name in base]


def cmd_explain(args):
    import numpy as np
    import pandas as pd

    est = _load(args.model)
    X = _features(read_table(args.data), est)
    try:
        phi = est.shap_values(X)
    except TypeError as exc:  # a model with no exact TreeSHAP values (AdaBoostRegressor)
        raise UserError(str(exc)) from None
    if phi.ndim == 3:  # (n, F + 1, K): output after output
        table = np.moveaxis(phi, 2, 1).reshape(phi.shape[0], -1)
        names = shap_columns(est, X.columns, phi.shape[2])
    else:
        table, names = phi, shap_columns(est, X.columns, None)
    pd.DataFrame(table, columns=names).to_csv(args.out, index=False)
    print(f"SHAP values of {phi.shape[0]} rows ({X.shape[1]} features and the bias) written to {args.out}")


def cmd_evaluate(args):
    est = _load(args.model)
    X, y = _split_target(read_table(args.data), args.target)
    X = _features(X, est)
    if hasattr(est, "classes_"):
        unseen = sorted(set(y.astype(str)) - {str(c) for c in est.classes_})
        if unseen:
            raise UserError(f"target {args.target!r} has classes the model never saw: {', '.join(unseen[:5])}")
    else:
        infer_task(y, "regression")
    _print_metrics(metrics(est, X, y), f"{type(est).__name__} on {Path(args.data).name} ({X.shape[0]} rows):")


def cmd_inspect(args):
    import gputrees

    est = _load(args.model)
    print(f"estimator: {type(est).__name__}")
    print("parameters:")
    for k, v in sorted(est.get_params(deep=False).items()):
        print(f"  {k} = {v!r}")
    names = [str(n) for n in getattr(est, "feature_names_in_", [f"x{j}" for j in range(est.n_features_in_)])]
    print(f"features ({len(names)}): {', '.join(names)}")
    if hasattr(est, "classes_"):
        print(f"classes: {', '.join(str(c) for c in est.classes_)}")
    for attr, label in (("n_estimators", "trees"), ("n_iter_", "boosting rounds")):
        if hasattr(est, attr) and attr.endswith("_"):
            print(f"{label}: {getattr(est, attr)}")
    try:
        imp = np.asarray(est.feature_importances_)
    except (AttributeError, ValueError) as exc:
        print(f"importances: n/a ({exc})")
    else:
        print("feature importances:")
        for j in np.argsort(-imp, kind="stable"):
            print(f"  {names[j]:24s} {imp[j]:.4f}")
    if hasattr(est, "tree_"):
        print("rules:")
        print(gputrees.export_text(est, feature_names=names, show_details=True))


def _bench_dir():
    env = os.environ.get("GPUTREES_BENCH_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[1] / "bench"


def _script_options(script: Path) -> set:
    """Which of ``--quick`` and ``--device`` a bench script declares (read from its source, not run)."""
    text = script.read_text()
    return {opt for opt in ("--quick", "--device") if f'"{opt}"' in text}


def cmd_bench(args):
    bench = _bench_dir()
    scripts = sorted(p for p in bench.glob("bench_*.py")) if bench.is_dir() else []
    if not scripts:
        raise UserError(f"no bench scripts in {bench} (they ship with the source checkout, not the package)")
    if args.only:
        scripts = [p for p in scripts if p.stem in args.only or p.stem.removeprefix("bench_") in args.only]
        if not scripts:
            raise UserError(f"no bench script named {', '.join(args.only)} in {bench}")
    options = {p: _script_options(p) for p in scripts}
    quick = [p for p in scripts if "--quick" in options[p]]
    no_quick = [p for p in scripts if p not in quick]
    if args.only and no_quick:
        names = ", ".join(p.name for p in no_quick)
        raise UserError(f"{names} has no quick mode: run it directly (python {no_quick[0]} --help)")
    if args.device and not all("--device" in options[p] for p in quick):
        names = ", ".join(p.name for p in quick if "--device" not in options[p])
        raise UserError(f"--device: {names} has no --device option")
    status = 0
    for script in quick:
        print(f"== {script.name} --quick", flush=True)
        cmd = [sys.executable, str(script), "--quick"] + (["--device", args.device] if args.device else [])
        rc = subprocess.call(cmd)
        if rc != 0:
            print(f"gputrees: error: {script.name} exited with status {rc}", file=sys.stderr)
            status = 1
    if no_quick:
        print(f"not run (no quick mode; run them directly): {', '.join(p.name for p in no_quick)}")
    return status


def cmd_compile(args):
    import numba

    from ._warmup import compile_kernels

    where = numba.config.CACHE_DIR or "__pycache__ beside the package's sources (or the user cache if read-only)"
    print(f"compiling the CPU kernels of {', '.join(args.families)} ({args.jobs or os.cpu_count()} at a time) "
          f"into {where}", flush=True)
    start = time.perf_counter()
    compile_kernels(args.families, args.jobs,
                    report=lambda family, seconds: print(f"  {family}: {seconds:.1f} s", flush=True))
    print(f"done in {time.perf_counter() - start:.1f} s: later processes load these kernels from the cache")


def cmd_demo(args):
    from sklearn.model_selection import train_test_split

    import gputrees
    from gputrees.datasets import load_titanic

    if args.kernels:
        os.environ["GPUTREES_KERNELS"] = args.kernels  # read by every fit of this process
    if os.environ.get("GPUTREES_KERNELS") in ("bincount", "reference"):
        print(f"kernels: {os.environ['GPUTREES_KERNELS']} (nothing to compile); the compiled CPU kernels: "
              "`gputrees compile` once, then `gputrees demo`")
    data = load_titanic(as_frame=True)
    X, y = data.data, data.target
    print(f"Titanic: {X.shape[0]} passengers, {int((y == 0).sum())} died / {int((y == 1).sum())} survived; "
          "Sex and Embarked split as categories, missing Age handled natively")
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    device = {} if args.device is None else {"device": args.device}
    models = [
        ("decision tree", gputrees.DecisionTreeClassifier(max_depth=3, min_samples_split=20, min_samples_leaf=5, **device)),
        ("random forest", gputrees.RandomForestClassifier(n_estimators=50, max_depth=6, random_state=0, **device)),
        ("gradient boosting", gputrees.GradientBoostingClassifier(n_estimators=50, max_depth=3, learning_rate=0.1, **device)),
    ]
    for label, est in models:
        start = time.perf_counter()
        est.fit(X_tr, y_tr)
        elapsed = time.perf_counter() - start
        print(f"\n== {label} ({type(est).__name__}, fit {elapsed:.2f} s)")
        if hasattr(est, "tree_"):
            print(gputrees.export_text(est, class_names=data.target_names, show_details=True))
        else:
            n = getattr(est, "n_iter_", getattr(est, "n_estimators", None))
            print(f"{n} trees; what it relies on (feature importances):")
            for name, imp in sorted(zip(X.columns, est.feature_importances_), key=lambda t: -t[1]):
                print(f"  {name:9s} {imp:.3f} {'#' * int(round(40 * imp))}")
        print(f"test accuracy: {est.score(X_te, y_te):.3f}")


def build_parser():
    p = _Parser(prog="gputrees", description="Decision trees, forests and boosting on GPUs and CPUs.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    t = sub.add_parser("train", help="train a model on a CSV/Parquet file and save it")
    t.add_argument("data")
    t.add_argument("--target", required=True)
    t.add_argument("--model", choices=sorted(MODELS), default="gbdt")
    t.add_argument("--task", choices=["auto", "classification", "regression"], default="auto")
    t.add_argument("--device", choices=["cpu", "cuda"], default=None)
    t.add_argument("--param", action="append", metavar="KEY=VALUE", help="estimator parameter (repeatable)")
    t.add_argument("--test-size", type=float, default=0.2)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--out", required=True)
    t.set_defaults(func=cmd_train)

    pr = sub.add_parser("predict", help="write a saved model's predictions to a CSV")
    pr.add_argument("model")
    pr.add_argument("data")
    pr.add_argument("--out", required=True)
    pr.set_defaults(func=cmd_predict)

    x = sub.add_parser("explain", help="write a saved model's exact SHAP values (TreeSHAP) to a CSV")
    x.add_argument("model")
    x.add_argument("data")
    x.add_argument("--out", required=True)
    x.set_defaults(func=cmd_explain)

    e = sub.add_parser("evaluate", help="metrics of a saved model on a labelled file")
    e.add_argument("model")
    e.add_argument("data")
    e.add_argument("--target", required=True)
    e.set_defaults(func=cmd_evaluate)

    i = sub.add_parser("inspect", help="summary of a saved model")
    i.add_argument("model")
    i.set_defaults(func=cmd_inspect)

    b = sub.add_parser("bench", help="run the bench scripts' quick mode")
    b.add_argument("--only", action="append", help="a script (bench_tree or tree, ...); repeatable")
    b.add_argument("--device", choices=["cpu", "cuda"], default=None)
    b.set_defaults(func=cmd_bench)

    c = sub.add_parser("compile", help="compile the CPU kernels ahead of a first fit (cached on disk)")
    c.add_argument("--families", nargs="+", choices=list(WARMUP_FAMILIES), default=list(WARMUP_FAMILIES))
    c.add_argument("--jobs", type=int, default=None, help="processes at a time (default: the cores)")
    c.set_defaults(func=cmd_compile)

    d = sub.add_parser("demo", help="a tree, a forest and a booster on the bundled Titanic data")
    d.add_argument("--device", choices=["cpu", "cuda"], default=None)
    d.add_argument("--kernels", choices=KERNEL_NAMES, default=None,
                   help="kernel set (default: GPUTREES_KERNELS, else auto); bincount compiles nothing")
    d.set_defaults(func=cmd_demo)
    return p


def main(argv=None) -> int:
    """Run the command line; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args) or 0)
    except (UserError, OSError) as exc:  # OSError: unwritable --out, unreadable file, ...
        print("gputrees: error: " + " ".join(str(exc).split()), file=sys.stderr)  # one line
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
