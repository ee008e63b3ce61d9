#!/usr/bin/env python
"""What a custom objective and validation metrics cost: fits side by side in one process, as ratios.

A ``GradientBoostingRegressor`` / ``Classifier`` fit with the built-in loss,
the same fit with a Python callable computing that loss's gradients
(``loss=callable``: the generic round path, no compiled round end), and the
built-in fit scoring an eval set with ``eval_metric`` each round (rmse and
mae; logloss and auc), against the built-in fit scoring it with its loss.
Each fit runs ``--repeats`` times after a warm-up fit; the best time is
kept. Run from the repository root::

    python bench/bench_custom.py --rows 200000 --rounds 100
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gputrees  # noqa: E402


def squared_error(y, raw, w):
    return (raw - y) * w, w


def logistic(y, raw, w):
    p = 1.0 / (1.0 + np.exp(-raw))
    return (p - y) * w, np.maximum(p * (1.0 - p), 1e-16) * w


def best_time(make, X, y, fit_kw, repeats):
    make().fit(X[:2000], y[:2000], **({} if "eval_set" not in fit_kw else
                                       {"eval_set": [(X[:500], y[:500])]}))  # compile / warm up
    times = []
    for _ in range(repeats):
        est = make()
        t0 = time.perf_counter()
        est.fit(X, y, **fit_kw)
        times.append(time.perf_counter() - t0)
    return min(times), est


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(a.rows, a.features))
    z = X[:, 0] + X[:, 1] * X[:, 2] + np.sin(X[:, 3])
    Xv = rng.normal(size=(a.rows // 5, a.features))
    zv = Xv[:, 0] + Xv[:, 1] * Xv[:, 2] + np.sin(Xv[:, 3])
    tasks = {
        "regression": (gputrees.GradientBoostingRegressor, z + rng.normal(size=a.rows), squared_error,
                       zv + rng.normal(size=len(zv)), ["rmse", "mae"]),
        "binary": (gputrees.GradientBoostingClassifier, (z + rng.normal(size=a.rows) > 0).astype(int), logistic,
                   (zv + rng.normal(size=len(zv)) > 0).astype(int), ["logloss", "auc"]),
    }
    print(f"{a.rows} x {a.features} float64, {a.rounds} depth-6 rounds, best of {a.repeats}; "
          f"eval set {len(zv)} rows")
    print(f"{'task':<12}{'fit':<44}{'seconds':>9}{'ratio':>8}")
    for task, (cls, y, custom, yv, metrics) in tasks.items():
        kw = dict(n_estimators=a.rounds, max_depth=6, early_stopping=False)
        rows = [
            ("built-in loss", lambda: cls(**kw), {}),
            ("loss=callable (same loss)", lambda: cls(loss=custom, **kw), {}),
            ("eval_set, its loss", lambda: cls(**kw), {"eval_set": [(Xv, yv)]}),
            (f"eval_set, eval_metric={metrics}", lambda: cls(eval_metric=metrics, **kw), {"eval_set": [(Xv, yv)]}),
        ]
        base = base_eval = None
        for label, make, fit_kw in rows:
            seconds, _ = best_time(make, X, y, fit_kw, a.repeats)
            if base is None:
                base = seconds
            if label == "eval_set, its loss":
                base_eval = seconds
            ref = base_eval if label.startswith("eval_set, eval_metric") else base
            print(f"{task:<12}{label:<44}{seconds:>9.2f}{seconds / ref:>8.2f}")


if __name__ == "__main__":
    main()
