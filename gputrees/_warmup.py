"""Compiling the CPU kernels ahead of a first fit (``gputrees compile``).

Numba compiles each CPU kernel on its first call and caches the machine code
on disk (``__pycache__`` beside the sources, or ``NUMBA_CACHE_DIR``, or the
user's cache directory where the package is read-only), so the first fit of a
family in a fresh install spends a minute or more compiling and later
processes load the cache. :func:`compile_kernels` does that compiling ahead:
each family's fits on data shaped like a user's first ones (the bundled
Titanic, with categories and missing ages, or Hitters for regression, and a
larger synthetic float32 set with missing values that takes the threaded
kernels), one process per family (the first alone, then several at a time),
all filling the same cache.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor

__all__ = ["FAMILIES", "compile_kernels", "warm_family"]

#: family -> estimator class name
FAMILIES = {
    "tree": "DecisionTreeClassifier",
    "forest": "RandomForestClassifier",
    "extra-trees": "ExtraTreesClassifier",
    "adaboost": "AdaBoostClassifier",
    "gbdt": "GradientBoostingClassifier",
    "gbdt-regressor": "GradientBoostingRegressor",
}
#: Rows of the synthetic set: enough for the threaded kernels.
SYNTHETIC_ROWS = 30_000
#: Rows of the small set's first rows fitted too: a single tree that small grows whole in the subtree kernel
#: (gputrees._grower.WHOLE_TREE_CELLS), through passes the whole set's fit does not take.
SMALL_ROWS = 400


def warm_family(family: str) -> float:
    """Fit and predict with ``family``'s estimator on its data sets (compiling what they need); the seconds."""
    import numpy as np

    import gputrees
    from gputrees.datasets import load_hitters, load_titanic
    from gputrees.kernels import cold_start

    start = time.perf_counter()
    cls = getattr(gputrees, FAMILIES[family])
    cold_start.mark_compiled(cls.__name__)  # the fits below take the Numba kernels, and later processes too
    regression = family.endswith("regressor")
    small = (load_hitters if regression else load_titanic)(as_frame=True)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(SYNTHETIC_ROWS, 10)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    signal = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1] * X[:, 2])
    y = signal if regression else (signal > 0).astype(int)
    head = (small.data.iloc[:SMALL_ROWS], small.target[:SMALL_ROWS])
    for data, target in ((small.data, small.target), head, (X, y)):
        cls().fit(data, target).predict(data)
    return time.perf_counter() - start


def compile_kernels(families=None, jobs=None, report=None) -> dict:
    """Compile (or load from the cache) the CPU kernels of ``families`` (default all), ``jobs`` processes at a
    time (default: the cores); ``report(family, seconds)`` after each. Returns ``{family: seconds}``."""
    families = list(FAMILIES) if families is None else list(families)
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown families {unknown}; choose from {sorted(FAMILIES)}")
    jobs = max(1, min(len(families), jobs or os.cpu_count() or 1))
    out = {}
    # a new interpreter per family (not a fork of this one, whose threads and
    # Numba state a fork would copy); the first family alone, since the
    # families share most kernels (binning, histograms, routing, prediction)
    # and processes started together would each compile them
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for group in (families[:1], families[1:]):
            for family, seconds in zip(group, pool.map(warm_family, group)):
                out[family] = seconds
                if report is not None:
                    report(family, seconds)
    return out
