"""Two or more versions of gputrees, fitted alternately in one process: a change's own effect.

The machines these benchmarks run on change speed by up to 2x between
phases, and a fit in a fresh process moves by about 10% from run to run, so
a before/after comparison of separate runs measures the machine as much as
the change. This script imports each version's package under a name of its
own (``gputrees`` at a git commit, extracted with ``git archive``, or the
working tree) and fits the same model with each in turn, round after
round, in one process, so that every version meets the same phases (every
other round in the reverse order, since the one fitted second is a little
slower):

    python bench/bench_versions.py --refs ad47cde WORKTREE --data flights --rounds 100 --repeats 6
    python bench/bench_versions.py --refs 27bbd77 WORKTREE --model forest --rows 266667 --rounds 20 --repeats 2

prints each version's fit seconds (median and every run); ``--time predict``
times the prediction of every row by a model each version fitted once. ``--model forest``
fits ``RandomForestClassifier(n_estimators=--rounds)`` (fully grown trees,
``max_features="sqrt"``), ``--model tree`` one fully grown
``DecisionTreeClassifier``, both on the synthetic data (``--rows`` rows
before the 75% training split); ``--model forest-regression`` a
``RandomForestRegressor(max_features="sqrt")`` on the same features, the
target the sum of the first four plus Gaussian noise; ``--model
forest-3class`` a ``RandomForestClassifier`` with that sum's terciles as
three classes. ``--missing 0.05`` sets 5% of the training values to NaN.
The package's fitting code imports its own modules relatively, which is
what lets two copies live side by side.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from boost_accuracy import DATASETS, load_flights  # noqa: E402


#: The boosting model every version fits (``--model boost``), besides ``n_estimators``, threads and device
BOOST_PARAMS = dict(max_depth=6, learning_rate=0.1, max_bins=255, l2_regularization=1.0, min_child_weight=1.0,
                    min_samples_leaf=1, early_stopping=False, random_state=0)


def extract(ref: str, where: Path, name: str) -> None:
    """The ``gputrees`` package at git ``ref`` (or the working tree: ``WORKTREE``) as package ``name``."""
    target = where / name
    if ref == "WORKTREE":
        shutil.copytree(ROOT / "gputrees", target, ignore=shutil.ignore_patterns("__pycache__"))
        return
    blob = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "gputrees"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(blob)) as tar:
        tar.extractall(where / "_x", filter="data")
    (where / "_x" / "gputrees").rename(target)


def load_data(data: str, data_dir: str, rows: int = 1_000_000):
    """(X_train, y_train, estimator class name) of a benchmark data set (75% of the rows)."""
    from sklearn.model_selection import train_test_split

    if data == "bank":
        X, y = DATASETS["bank_marketing"][1](data_dir)
        name = "GradientBoostingClassifier"
    elif data == "flights":
        X, y = load_flights(data_dir)
        name = "GradientBoostingRegressor"
    else:
        from bench_tree import make_synthetic

        X, y = make_synthetic(rows, 28, np.float32, 0)
        name = "GradientBoostingClassifier"
    X_train, _, y_train, _ = train_test_split(X, y, test_size=0.25, random_state=0)
    return X_train, y_train, name


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--refs", nargs="+", default=["HEAD", "WORKTREE"],
                   help="git commits, or WORKTREE for the working tree (default: HEAD WORKTREE)")
    p.add_argument("--data", choices=["synthetic", "flights", "bank"], default="synthetic")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--repeats", type=int, default=4)
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    p.add_argument("--quick", action="store_true", help="Bank marketing, 5 rounds, one repeat (a smoke test)")
    p.add_argument("--model", choices=["boost", "forest", "forest-3class", "forest-regression", "tree"],
                   default="boost",
                   help="boosting (default), a random forest of --rounds trees or one tree, fully grown "
                        "(forest and tree: synthetic data; forest-regression: a RandomForestRegressor on the "
                        "synthetic features, target the sum of the first four plus Gaussian noise; "
                        "forest-3class: a RandomForestClassifier, that sum's terciles as classes)")
    p.add_argument("--rows", type=int, default=1_000_000, help="synthetic rows before the 75%% training split")
    p.add_argument("--missing", type=float, default=0.0,
                   help="this fraction of the training values set to NaN (seeded), to time the missing-value paths")
    p.add_argument("--time", choices=["fit", "predict"], default="fit",
                   help="what is timed: the fit (default), or the prediction of every row by a model each "
                        "version fitted once, untimed (predict_proba for classifiers, predict otherwise)")
    args = p.parse_args(argv)
    if args.quick:
        args.data, args.rounds, args.repeats = "bank", 5, 1
    if args.model != "boost" and args.data != "synthetic":
        p.error("--model forest and tree run on --data synthetic")
    X, y, name = load_data(args.data, args.data_dir, args.rows)
    if args.missing > 0:
        X = np.array(X, dtype=np.float32 if np.asarray(X).dtype == np.float32 else np.float64)
        X[np.random.default_rng(1).random(X.shape) < args.missing] = np.nan
    if args.model == "boost":
        params = dict(BOOST_PARAMS, n_jobs=args.n_jobs, device=args.device)
    else:
        name = {"forest": "RandomForestClassifier", "forest-3class": "RandomForestClassifier",
                "forest-regression": "RandomForestRegressor"}.get(args.model, "DecisionTreeClassifier")
        params = dict(random_state=0, n_jobs=args.n_jobs, device=args.device)
        first_four = np.nan_to_num(np.asarray(X[:, :4], dtype=np.float64)).sum(axis=1)
        if args.model == "forest-regression":
            params["max_features"] = "sqrt"
            y = first_four + np.random.default_rng(0).standard_normal(X.shape[0])
        elif args.model == "forest-3class":  # the same sum's terciles as three classes
            y = np.digitize(first_four, np.quantile(first_four, [1 / 3, 2 / 3]))

    def make(cls, n):
        return cls(n_estimators=n, **params) if args.model != "tree" else cls(**params)
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        sys.path.insert(0, str(where))
        models = {}
        for i, ref in enumerate(args.refs):
            pkg = f"gputrees_v{i}"
            extract(ref, where, pkg)
            models[ref] = getattr(importlib.import_module(pkg), name)
        for cls in models.values():  # compile (or load the cache) outside the timing
            make(cls, 3).fit(X[:2000], y[:2000])
        fitted = {}
        if args.time == "predict":  # each version's model fitted once, untimed
            fitted = {ref: make(cls, args.rounds).fit(X, y) for ref, cls in models.items()}
        times = {ref: [] for ref in models}
        in_order = list(models.items())
        for r in range(args.repeats):
            # every other repeat in the reverse order: the version timed second
            # ran a few percent slower on these machines
            for ref, cls in (in_order if r % 2 == 0 else in_order[::-1]):
                start = time.perf_counter()
                if args.time == "predict":
                    model = fitted[ref]
                    (model.predict_proba if hasattr(model, "predict_proba") else model.predict)(X)
                else:
                    make(cls, args.rounds).fit(X, y)
                times[ref].append(time.perf_counter() - start)
    what = {"boost": f"{args.rounds} rounds", "tree": "one tree"}.get(args.model, f"{args.rounds} trees")
    missing = f", {args.missing:.0%} of the values missing" if args.missing > 0 else ""
    print(f"[{args.data}, {args.model}, {args.time}] {X.shape[0]:,} rows x {X.shape[1]}{missing}, {what}, "
          f"{args.n_jobs} threads, device {args.device}, versions alternated in one process")
    for ref, t in times.items():
        print(f"  {ref:>12}  median {np.median(t):.3f} s  runs " + " ".join(f"{x:.3f}" for x in t))
    refs = list(times)
    if args.repeats > 1:  # the first repeat compiles or loads the caches
        base = np.array(times[refs[0]][1:])
        for ref in refs[1:]:
            ratio = np.array(times[ref][1:]) / base
            print(f"  {ref:>12} / {refs[0]}: median of the repeats' ratios {np.median(ratio):.3f}, "
                  f"faster in {int((ratio < 1).sum())} of {ratio.size}")


if __name__ == "__main__":
    main()
