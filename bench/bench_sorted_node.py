"""One node's sort-based split search (the forests' small nodes), ns a node by the node's rows.

Times ``gputrees.kernels.cpu.sorted_scan.sorted_node`` -- the search the subtree
kernel runs on nodes with fewer rows than bins -- on ``--nodes`` random nodes
of each size in ``--sizes``, two-class Gini (a bootstrap count and two class
channels), ``--drawn`` of ``--features`` features drawn per node, 256 bins,
one thread, in one compiled loop (median of five passes). ``--src DIR``
times the ``gputrees`` package found in ``DIR`` instead of the installed one,
for a before/after comparison in separate runs (alternate them: the machine's
speed drifts)::

    git archive HEAD~1 gputrees | tar -x -C /tmp/before
    python bench/bench_sorted_node.py --src /tmp/before
    python bench/bench_sorted_node.py

The printed ``check`` sums the found proxies, features and bins: equal
between two versions that find the same splits.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time

import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=None, help="directory holding the gputrees package to time")
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--drawn", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="+", default=[3, 6, 16, 40, 100, 200])
    ap.add_argument("--nodes", type=int, default=200)
    args = ap.parse_args(argv)
    if args.src:
        sys.path.insert(0, args.src)
    import numba

    try:
        sp = importlib.import_module("gputrees.kernels.cpu.sorted_scan")
        scan_scratch, sorted_scratch, sorted_node = sp.scan_scratch, sp.sorted_scratch, sp.sorted_node
    except ImportError:  # the layout before gputrees.kernels.cpu (a --src of an older version)
        sp = importlib.import_module("gputrees.kernels._numba_split")
        scan_scratch, sorted_scratch, sorted_node = sp._scratch, sp._sort_scratch, sp._sorted_node
    print(f"gputrees from {sp.__file__}")
    F, nb, C, max_rows = args.features, 256, 3, 4096
    rng = np.random.default_rng(0)
    codes = rng.integers(0, nb - 1, (max_rows, F)).astype(np.uint8)  # no missing code
    y = rng.integers(0, 2, max_rows)
    mult = rng.integers(1, 3, max_rows).astype(np.float64)
    weights = np.stack([mult, mult * (y == 0), mult * (y == 1)], axis=1)
    ident = np.arange(max_rows)
    thresholds = np.cumsum(np.ones((F, nb)), axis=1)
    is_exact = np.zeros(F, dtype=np.bool_)
    crit = (0, 1, 0.0, 1.0, 0.0)  # (Gini, one output, l2, min_samples_leaf, min_weight_leaf)

    @numba.njit
    def run(codes, ident, weights, starts, n, crit, fmasks, thresholds, is_exact, reps):
        scratch = scan_scratch(nb + 1, C)
        sort_scratch = sorted_scratch(max_rows, nb, F, C)
        fbest, left, u, P = np.empty(F), np.empty(C), np.zeros(F), np.empty(C)
        check = 0.0
        for _ in range(reps):
            for i in range(starts.shape[0]):
                pairs = ident[starts[i]:starts[i] + n]
                for c in range(C):
                    P[c] = 0.0
                for k in range(n):
                    for c in range(C):
                        P[c] += weights[pairs[k], c]
                found, p, f, code, ml, thr = sorted_node(
                    codes, ident, weights, pairs, P, crit, fmasks[i], True, u, False, nb, thresholds, thresholds,
                    is_exact, 1e-11, scratch, sort_scratch, fbest, left)
                check += p + f + code
        return check

    for n in args.sizes:
        starts = rng.integers(0, max_rows - n, args.nodes)
        fmask = np.zeros((args.nodes, F), dtype=np.bool_)
        for i in range(args.nodes):
            fmask[i, rng.choice(F, args.drawn, replace=False)] = True
        reps = max(1, 20_000 // n)
        run(codes, ident, weights, starts, n, crit, fmask, thresholds, is_exact, 1)  # compile / warm
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            check = run(codes, ident, weights, starts, n, crit, fmask, thresholds, is_exact, reps)
            times.append(time.perf_counter() - t0)
        print(f"{n:5d} rows  {np.median(times) / (reps * args.nodes) * 1e9:9.0f} ns a node  check {check:.6g}")


if __name__ == "__main__":
    main()
