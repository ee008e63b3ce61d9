"""Ensembles of trees on Adult: bagging, pasting, random subspaces and patches, forests, voting, stacking.

Run:  python examples/ensembles.py [--fast] [--device cuda] [--data-dir DIR] [--n-estimators N]

Predicts income > 50K from the 14 census columns of UCI Adult (32,561 rows;
../shared/data/adult.csv relative to the repository root, or --data-dir),
three quarters for training and a quarter for test. The categorical columns
are ordinal-encoded (missing values stay NaN, split natively) so that
scikit-learn's BaggingClassifier can pick columns for the subspace methods.

Compares, by test accuracy and fit time:

- a single gputrees tree (max_depth=10);
- scikit-learn's ``BaggingClassifier`` around fully grown gputrees trees:
  bagging (bootstrap rows), pasting (half the rows, without replacement),
  random subspaces (all rows, half the columns per tree) and random patches
  (half the rows and half the columns);
- the same four with a gputrees forest's own options, every tree of a batch
  grown at once: ``max_features=None`` with ``bootstrap``, ``max_samples`` and
  ``max_features_per_tree``;
- a random forest and extremely randomised trees (gputrees, default
  ``max_features="sqrt"``);
- a soft ``VotingClassifier`` and a ``StackingClassifier`` (logistic
  regression on cross-validated probabilities) of the tree, the random forest
  and the extra trees.

``--fast`` trains on 3,000 rows with 10 trees per ensemble (the tests run
this); the default is all 24,420 training rows and 50 trees, several minutes
on two CPU cores.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import BaggingClassifier, StackingClassifier, VotingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gputrees  # noqa: E402
from _common import parser  # noqa: E402

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"
TARGET = "income"


def load_table(path, target, positive=None):
    """A CSV as a float matrix (categories as codes, missing values NaN), the target, the column names.

    ``positive``: the target's positive label (classification, y is 0/1); None: y as floats.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: pass --data-dir, the folder holding {path.name}")
    df = pd.read_csv(path, skipinitialspace=True)
    target_values = df.pop(target)
    if positive is None:
        y = target_values.to_numpy(np.float64)
    else:
        y = (target_values.astype(str).str.strip().str.rstrip(".") == positive).to_numpy(np.int64)
    columns = []
    for name in df.columns:
        if pd.api.types.is_numeric_dtype(df[name]):
            columns.append(df[name].to_numpy(np.float64))
        else:
            codes = df[name].astype("category").cat.codes.to_numpy().astype(np.float64)
            codes[codes < 0] = np.nan  # missing stays missing
            columns.append(codes)
    return np.column_stack(columns), y, list(df.columns)


def load_adult(data_dir):
    """Adult: features as codes and numbers, y = 1 for income >50K."""
    return load_table(Path(data_dir) / "adult.csv", TARGET, positive=">50K")


def models(n_estimators, device, cv):
    """{name: unfitted estimator}, in the order of the table."""
    dev = {"device": device}

    def tree(**kw):
        return gputrees.DecisionTreeClassifier(random_state=0, **dev, **kw)

    def bagging(**kw):
        return BaggingClassifier(estimator=tree(), n_estimators=n_estimators, random_state=0, **kw)

    def forest(Forest=gputrees.RandomForestClassifier, **kw):
        return Forest(n_estimators=n_estimators, random_state=0, **dev, **kw)

    def members():
        return [
            ("tree", tree(max_depth=10)),
            ("random_forest", forest()),
            ("extra_trees", forest(gputrees.ExtraTreesClassifier)),
        ]

    return {
        "single tree (max_depth=10)": tree(max_depth=10),
        "bagging (BaggingClassifier)": bagging(bootstrap=True),
        "pasting (BaggingClassifier)": bagging(bootstrap=False, max_samples=0.5),
        "random subspaces (BaggingClassifier)": bagging(bootstrap=False, max_features=0.5),
        "random patches (BaggingClassifier)": bagging(bootstrap=False, max_samples=0.5, max_features=0.5),
        "bagging (gputrees forest)": forest(max_features=None, bootstrap=True),
        "pasting (gputrees forest)": forest(max_features=None, bootstrap=False, max_samples=0.5),
        "random subspaces (gputrees forest)": forest(max_features=None, bootstrap=False, max_features_per_tree=0.5),
        "random patches (gputrees forest)": forest(
            max_features=None, bootstrap=False, max_samples=0.5, max_features_per_tree=0.5
        ),
        "random forest": forest(),
        "extra trees": forest(gputrees.ExtraTreesClassifier),
        "voting (soft)": VotingClassifier(members(), voting="soft"),
        "stacking (logistic regression)": StackingClassifier(
            members(), final_estimator=LogisticRegression(max_iter=1000), cv=cv
        ),
    }


def main(argv=None):
    p = parser(__doc__)
    p.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR), help="folder holding adult.csv")
    p.add_argument("--n-estimators", type=int, default=None, help="trees per ensemble (default 50, 10 with --fast)")
    args = p.parse_args(argv)
    n_estimators = args.n_estimators or (10 if args.fast else 50)

    X, y, names = load_adult(args.data_dir)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    if args.fast:
        X_train, _, y_train, _ = train_test_split(X_train, y_train, train_size=3000, random_state=0, stratify=y_train)
    print(f"Adult: {len(y_train):,} training rows, {len(y_test):,} test rows, {len(names)} features; "
          f"{y_test.mean():.1%} of the test rows earn >50K; {n_estimators} trees per ensemble\n")  # fmt: skip

    results = {}
    width = max(len(name) for name in models(1, None, 2))
    print(f"{'model':<{width}s}  {'test accuracy':>13s}  {'fit time (s)':>12s}")
    for name, est in models(n_estimators, args.device, 3 if args.fast else 5).items():
        start = time.perf_counter()
        est.fit(X_train, y_train)
        fit_s = time.perf_counter() - start
        accuracy = float(accuracy_score(y_test, np.asarray(est.predict(X_test))))
        results[name] = {"accuracy": accuracy, "fit_s": fit_s}
        print(f"{name:<{width}s}  {accuracy:13.4f}  {fit_s:12.2f}", flush=True)
    return results


if __name__ == "__main__":
    main()
