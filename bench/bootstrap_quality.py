"""Random forests' test score and OOB score with the counter-based bootstrap vs the generator draws it replaced.

Run:  python bench/bootstrap_quality.py [--seeds 0 1 ... 9] [--trees 100] [--rows 10000] [--data-dir ../shared/data]

Until 2026-11 a forest's tree ``t`` drew its bootstrap on the host,
``numpy.random.default_rng([seed, t]).integers(0, n, n_draw)``; it now
draws ``n_draw`` counter-based rows (:func:`gputrees.kernels.rules.sample_row`,
made by the kernel set: on the GPU, on the device). Both are uniform draws
with replacement, so the forests' quality should not move. For each seed
(the train/test split's and the forest's ``random_state``) and data set
(Titanic, California housing and an Adult subsample, from ``--data-dir``)
this fits the same forest twice, "before" with the old draws put back in
place of the fit's sampling (the script patches the forest's private
``_batch_sample``, since the old rule is gone from the library) and "after"
as it is, and prints the test accuracy (R^2 for California) and the OOB
score of each, then per data set the mean and standard deviation over the
seeds of both and of their paired difference.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

import gputrees
from gputrees import _backend
from gputrees._forest import _BaseForest

ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = ROOT.parent / "shared" / "data"


def _load_table(path, target, positive=None, drop=()):
    spec = importlib.util.spec_from_file_location("example_ensembles", ROOT / "examples" / "ensembles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    X, y, names = module.load_table(path, target, positive)
    keep = [i for i, name in enumerate(names) if name not in drop]
    return X[:, keep], y


DATASETS = {
    # identifiers (a code per passenger or ticket) left out: no signal a forest should split on
    "titanic": ("classification", lambda d: _load_table(d / "titanic.csv", "Survived", "1",
                                                        drop=("PassengerId", "Name", "Ticket"))),
    "california": ("regression", lambda d: _load_table(d / "california_housing.csv", "median_house_value")),
    "adult": ("classification", lambda d: _load_table(d / "adult.csv", "income", ">50K")),
}


def generator_sample(self, xp, kernels, first, stop, n, n_features):
    """The draws the counter-based bootstrap replaced: tree ``t``'s ``default_rng([seed, t]).integers``."""
    if not self.bootstrap or self.max_features_per_tree is not None:
        raise ValueError("the old draws are put back for plain bootstraps only")
    n_draw = self._n_draw(n)
    counts = np.stack([
        np.bincount(np.random.default_rng([self._seed, int(t)]).integers(0, n, n_draw), minlength=n)
        for t in range(first, stop)
    ]).astype(np.float64)
    return _backend.from_numpy(xp, counts), None


def fit_scores(task, split, seed, args, before):
    Xtr, Xte, ytr, yte = split
    Forest = gputrees.RandomForestClassifier if task == "classification" else gputrees.RandomForestRegressor
    model = Forest(n_estimators=args.trees, max_depth=args.max_depth, oob_score=True, random_state=seed,
                   n_jobs=args.threads)
    real = _BaseForest._batch_sample
    _BaseForest._batch_sample = generator_sample if before else real
    try:
        model.fit(Xtr, ytr)
    finally:
        _BaseForest._batch_sample = real
    return model.score(Xte, yte), model.oob_score_


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    p.add_argument("--trees", type=int, default=100)
    p.add_argument("--max-depth", type=int, default=None)
    p.add_argument("--rows", type=int, default=10_000, help="rows drawn from each larger data set (train + test)")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--data", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    args = p.parse_args(argv)
    print(f"{args.trees} trees, max_depth={args.max_depth}, at most {args.rows} rows a data set (75/25 split), "
          f"seeds {args.seeds}")
    for name in args.data:
        task, load = DATASETS[name]
        X, y = load(args.data_dir)
        metric = "accuracy" if task == "classification" else "R^2"
        print(f"\n{name}: {X.shape[0]} rows x {X.shape[1]}, test {metric} and OOB score")
        print(f"  {'seed':>4s} {'test before':>12s} {'test after':>11s} {'OOB before':>11s} {'OOB after':>10s}")
        rows = []
        t0 = time.perf_counter()
        for seed in args.seeds:
            Xs, ys = X, y
            if X.shape[0] > args.rows:
                pick = np.random.default_rng(seed).choice(X.shape[0], args.rows, replace=False)
                Xs, ys = X[pick], y[pick]
            split = train_test_split(Xs, ys, test_size=0.25, random_state=seed)
            before = fit_scores(task, split, seed, args, True)
            after = fit_scores(task, split, seed, args, False)
            rows.append(before + after)
            print(f"  {seed:4d} {before[0]:12.4f} {after[0]:11.4f} {before[1]:11.4f} {after[1]:10.4f}", flush=True)
        cols = list(zip(*rows))
        if len(rows) < 2:  # no spread to show
            continue
        for label, i, j in (("test", 0, 2), ("OOB", 1, 3)):
            diff = [a - b for a, b in zip(cols[j], cols[i])]
            print(f"  {label:>4s} before {statistics.mean(cols[i]):.4f} +- {statistics.stdev(cols[i]):.4f}, "
                  f"after {statistics.mean(cols[j]):.4f} +- {statistics.stdev(cols[j]):.4f}, "
                  f"after - before {statistics.mean(diff):+.4f} +- {statistics.stdev(diff):.4f} "
                  f"(standard error {statistics.stdev(diff) / len(diff) ** 0.5:.4f})")
        print(f"  ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
