#!/usr/bin/env python
"""Peak memory of fitting each estimator family vs docs/memory.md's formula, and vs XGBoost / LightGBM.

Each fit runs in its own child process (forkserver), which resets the peak-RSS
mark (``PeakRSS`` of bench_forest.py) after receiving the data, so the figure
is the extra resident memory of that fit alone. Run from the repository root::

    python bench/bench_memory.py --rows 200000 --features 20
    python bench/bench_memory.py --rows 1000000 --features 10000 --density 0.001 --families gboost,xgboost --rounds 3

``--density`` makes X a scipy.sparse CSR matrix with that share of nonzeros
(the same matrix for every library), and the table says the CSR's own size.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SCAN_FACTOR = 7  # gputrees._grower.SCAN_FACTOR: split-scan working arrays per histogram byte
MiB = 1 << 20


def formula(family: str, n: int, f: int, n_bins: int, depth: int, k: int = 2, trees: int = 1) -> int:
    """docs/memory.md's peak extra bytes of a NumPy fit (bincount kernels), classification, k classes."""
    code_bytes = 1 if n_bins <= 256 else 2
    c = 1 + k  # channels: count + one weighted count per class
    hist_level = min(1 << 30, (1 << max(depth - 2, 0)) * f * n_bins * c * 8 * (1 + SCAN_FACTOR))
    # no float64 copy of X: this benchmark's float64 X is used as it is (docs/memory.md)
    encoded = 8 * n * f  # AdaBoost's encoded X (boosting's is X itself without categorical features)
    codes = code_bytes * n * f
    if family == "tree":
        return codes + 8 * n * c + 24 * n + 24 * n * f + hist_level
    if family == "forest":
        inbag = int(0.632 * n * trees)
        return codes + 8 * n * c + trees * n * (96 + 16 * c) + 24 * inbag * f + trees * hist_level
    if family == "gboost":
        kt = 1 if k == 2 else k
        return codes + kt * n * (3 * 8 + 4 * 8) + 24 * n * kt * f + kt * hist_level
    if family == "adaboost":
        return encoded + codes + 8 * n * c + 24 * n + 24 * n * f
    raise ValueError(family)


def _make(family, depth, trees, rounds=20):
    import gputrees

    if family == "tree":
        return gputrees.DecisionTreeClassifier(max_depth=depth, random_state=0)
    if family == "forest":
        return gputrees.RandomForestClassifier(n_estimators=trees, max_depth=depth, random_state=0)
    if family == "gboost":
        return gputrees.GradientBoostingClassifier(n_estimators=rounds, max_depth=depth, early_stopping=False)
    if family == "adaboost":
        return gputrees.AdaBoostClassifier(n_estimators=rounds, random_state=0)
    if family == "xgboost":
        import xgboost

        return xgboost.XGBClassifier(n_estimators=rounds, max_depth=depth, tree_method="hist", n_jobs=2)
    if family == "lightgbm":
        import lightgbm

        return lightgbm.LGBMClassifier(n_estimators=rounds, max_depth=depth, num_leaves=2**depth, verbose=-1, n_jobs=2)
    raise ValueError(family)


def _child(family, X, y, depth, trees, rounds, queue):
    from bench_forest import PeakRSS

    # a small fit first: imports, Numba's compiled-code loading (llvmlite,
    # a one-off per process) and library start-up are not the fit's memory
    _make(family, depth, trees, rounds).fit(X[:500], y[:500])
    est = _make(family, depth, trees, rounds)
    peak = PeakRSS()
    t0 = time.perf_counter()
    est.fit(X, y)
    seconds = time.perf_counter() - t0
    queue.put((peak.delta(), seconds))


def measure(family, X, y, depth, trees, rounds=20):
    ctx = mp.get_context("forkserver")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(family, X, y, depth, trees, rounds, q))
    p.start()
    out = q.get()
    p.join()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--trees", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=20, help="boosting rounds (AdaBoost: stumps) of every library")
    ap.add_argument("--density", type=float, default=None, help="a CSR X with this share of nonzeros")
    ap.add_argument("--families", default="tree,forest,gboost,adaboost,xgboost,lightgbm")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    if a.density is None:
        X = rng.normal(size=(a.rows, a.features))
        y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=a.rows) > 0).astype(int)
        print(f"{a.rows} x {a.features} float64 (X itself {X.nbytes / MiB:.0f} MiB), depth {a.depth}, binary")
    else:
        import scipy.sparse as sp

        # (seed 0's legacy draw permutes every cell: 75 GiB at 1,000,000 x 10,000;
        # a Generator draws the nonzeros' cells from a hash set)
        cells = 0 if a.rows * a.features <= 10**9 else np.random.default_rng(0)
        X = sp.random(a.rows, a.features, density=a.density, format="csr", random_state=cells,
                      data_rvs=lambda k: rng.normal(size=k))
        score = np.asarray(X[:, : min(50, a.features)].sum(axis=1)).ravel()
        y = (score + 0.1 * rng.normal(size=a.rows) > 0).astype(int)
        size = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
        print(f"{a.rows} x {a.features} CSR, {X.nnz:,} nonzeros (the CSR itself {size / MiB:.0f} MiB, "
              f"uint8 codes {a.rows * a.features / MiB:.0f} MiB), depth {a.depth}, binary")
    print(f"{'fit':<26}{'peak RSS MiB':>14}{'formula MiB':>13}{'ratio':>8}{'fit s':>9}")
    for family in a.families.split(","):
        try:
            got, seconds = measure(family, X, y, a.depth, a.trees, a.rounds)
        except ImportError as exc:
            print(f"{family:<26}{'skipped: ' + str(exc)}")
            continue
        r = a.rounds
        label = {"forest": f"forest ({a.trees} trees)", "gboost": f"gboost ({r} rounds)",
                 "adaboost": f"adaboost ({r} stumps)", "xgboost": f"XGBoost hist ({r} rounds)",
                 "lightgbm": f"LightGBM ({r} rounds)"}.get(family, family)
        if family in ("xgboost", "lightgbm"):
            print(f"{label:<26}{got / MiB:>14.0f}{'':>13}{'':>8}{seconds:>9.1f}")
            continue
        pred = formula(family, a.rows, a.features, 256, a.depth if family != "adaboost" else 1, trees=a.trees)
        print(f"{label:<26}{got / MiB:>14.0f}{pred / MiB:>13.0f}{got / pred:>8.2f}{seconds:>9.1f}")


if __name__ == "__main__":
    main()
