"""No memory growth when fitting 50 small models in a row in one process."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

from estimator_zoo import CLASSIFIERS, ESTIMATORS

#: Python-heap growth allowed between fit 10 and fit 50: allocator caches and
#: interned objects, not a per-fit leak (a 40-fit leak of even 10 kB per fit fails).
PY_TOLERANCE = 256 * 1024
#: Resident-set growth allowed over the same 40 fits (malloc arenas settle).
RSS_TOLERANCE = 8 * 1024 * 1024


def _rss() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * 4096
    except OSError:
        pytest.skip("needs /proc/self/statm (Linux) for RSS")


@pytest.mark.parametrize("name", ["tree_clf", "forest_reg", "gboost_clf", "adaboost_reg"])
def test_fifty_fits_do_not_grow_memory(name):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    y = (X[:, 0] > 0).astype(int) if name in CLASSIFIERS else X[:, 0]
    tracemalloc.start()
    try:
        for i in range(50):
            ESTIMATORS[name](i).fit(X, y).predict(X)
            if i == 9:  # warm: caches, imports and arenas are in place
                gc.collect()
                py0, rss0 = tracemalloc.get_traced_memory()[0], _rss()
        gc.collect()
        py1, rss1 = tracemalloc.get_traced_memory()[0], _rss()
    finally:
        tracemalloc.stop()
    assert py1 - py0 < PY_TOLERANCE, f"Python heap grew by {py1 - py0} bytes over 40 fits"
    assert rss1 - rss0 < RSS_TOLERANCE, f"RSS grew by {rss1 - rss0} bytes over 40 fits"
