#!/usr/bin/env python
"""Fit and predict times on a scipy.sparse CSR matrix: gputrees against scikit-learn (and XGBoost for boosting).

Every library gets the same CSR matrix (scikit-learn's trees convert it to
CSC themselves) in one process, after an untimed warm-up fit of each
gputrees estimator on the first rows (its kernels compile on first use;
enough rows for the sparse paths). Fully grown forests get the first
``--deep-rows`` rows: a sparse X's splits are lopsided (the few rows with a
nonzero against the rest), so its trees are thousands of levels deep and
their fit grows about as rows^1.5 for every library.
Prints each family's median fit and predict seconds and gputrees / peer::

    python bench/bench_sparse.py --rows 200000 --features 2000 --density 0.001 --deep-rows 20000
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def make_csr(rows: int, features: int, density: float, seed: int = 0):
    """A CSR matrix of normal nonzeros and a binary target read from its first 50 columns."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    X = sp.random(rows, features, density=density, format="csr", random_state=seed,
                  data_rvs=lambda k: rng.normal(size=k))
    score = np.asarray(X[:, : min(50, features)].sum(axis=1)).ravel()
    return X, (score + 0.1 * rng.normal(size=rows) > 0).astype(int)


def families(threads: int):
    """``{family: (gputrees factory, [(peer name, peer factory), ...], deep)}``, classification, each at matched
    depth; ``deep``: fully grown trees (fitted on ``--deep-rows`` rows)."""
    import sklearn.ensemble as ske
    import sklearn.tree as skt

    import gputrees

    out = {
        "tree (depth 6)": (lambda: gputrees.DecisionTreeClassifier(max_depth=6, random_state=0),
                           [("sklearn", lambda: skt.DecisionTreeClassifier(max_depth=6, random_state=0))], False),
        "forest (10 trees, depth 6)": (
            lambda: gputrees.RandomForestClassifier(n_estimators=10, max_depth=6, random_state=0, n_jobs=threads),
            [("sklearn", lambda: ske.RandomForestClassifier(n_estimators=10, max_depth=6, random_state=0,
                                                            n_jobs=threads))], False),
        "forest (10 trees, full depth)": (
            lambda: gputrees.RandomForestClassifier(n_estimators=10, random_state=0, n_jobs=threads),
            [("sklearn", lambda: ske.RandomForestClassifier(n_estimators=10, random_state=0, n_jobs=threads))],
            True),
        "extra trees (10, full depth)": (
            lambda: gputrees.ExtraTreesClassifier(n_estimators=10, random_state=0, n_jobs=threads),
            [("sklearn", lambda: ske.ExtraTreesClassifier(n_estimators=10, random_state=0, n_jobs=threads))],
            True),
        "adaboost (20 stumps)": (
            lambda: gputrees.AdaBoostClassifier(n_estimators=20, random_state=0),
            [("sklearn", lambda: ske.AdaBoostClassifier(n_estimators=20, random_state=0))], False),
        "boosting (20 rounds, depth 6)": (
            lambda: gputrees.GradientBoostingClassifier(n_estimators=20, max_depth=6, early_stopping=False,
                                                        n_jobs=threads),
            [], False),
    }
    try:
        import xgboost

        out["boosting (20 rounds, depth 6)"][1].append(
            ("xgboost", lambda: xgboost.XGBClassifier(n_estimators=20, max_depth=6, tree_method="hist",
                                                      n_jobs=threads)))
    except ImportError:
        pass
    return out


def timed(make, X, y, repeats: int):
    """Median fit and predict seconds of ``repeats`` fits (each predicting the training rows)."""
    fits, predicts = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        model = make().fit(X, y)
        fits.append(time.perf_counter() - t)
        t = time.perf_counter()
        model.predict(X)
        predicts.append(time.perf_counter() - t)
    return statistics.median(fits), statistics.median(predicts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=2_000)
    ap.add_argument("--density", type=float, default=0.001)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--deep-rows", type=int, default=20_000)
    a = ap.parse_args()
    from gputrees.kernels.cpu.sparse_codes import SPARSE_MIN_CELLS

    X, y = make_csr(a.rows, a.features, a.density)
    print(f"{a.rows} x {a.features} CSR, {X.nnz:,} nonzeros, binary, {a.threads} threads, medians of {a.repeats}; "
          f"full depth: the first {min(a.deep_rows, a.rows):,} rows")
    print(f"{'family':<32}{'library':<10}{'fit s':>9}{'predict s':>11}{'fit gt/peer':>13}{'predict gt/peer':>17}")
    # warm-up fits of the rows that lay codes out as entries (gputrees' sparse paths compile then)
    warm = min(a.rows, max(1000, SPARSE_MIN_CELLS // a.features + 1))
    for name, (ours, peers, deep) in families(a.threads).items():
        Xf, yf = (X[: a.deep_rows], y[: a.deep_rows]) if deep else (X, y)
        ours().fit(X[:warm], y[:warm])  # warm-up: compilation and imports
        fit, pred = timed(ours, Xf, yf, a.repeats)
        print(f"{name:<32}{'gputrees':<10}{fit:>9.3f}{pred:>11.3f}", flush=True)
        for peer, make in peers:
            pfit, ppred = timed(make, Xf, yf, a.repeats)
            print(f"{'':<32}{peer:<10}{pfit:>9.3f}{ppred:>11.3f}{fit / pfit:>12.2f}x{pred / ppred:>16.2f}x",
                  flush=True)


if __name__ == "__main__":
    main()
