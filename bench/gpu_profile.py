"""Where a GPU boosting fit's time goes, and the device step's histogram build in shared memory or not.

Run on a machine with an NVIDIA GPU, CuPy and numba-cuda:

    python bench/gpu_profile.py [--rows 1000000 10000000] [--rounds 100] [--depth 6] [--repeats 2]
                                [--profile-rows 1000000]

1. For each ``--rows``: ``bench_tree.make_synthetic`` (binary, 28 float32
   features) as CuPy arrays, bench_gpu's GBDT settings (256 bins, quantised
   gradients, no minimum row count), one fit with the device step's
   histograms summed in blocks' shared memory (``SHARED_BLOCK_BYTES``) and
   one with global atomics only (the default, ``SHARED_HISTOGRAM_BYTES = 0``), alternated
   ``--repeats`` times after a compiling warm-up; median fit seconds, their
   ratio, and whether the two fits' trees are equal (they must be: int64 sums).
2. A child process with ``CUDA_LAUNCH_BLOCKING=1`` (every launch waits for
   its kernel, so each call's time is its own) fits ``--profile-rows`` rows
   under cProfile: seconds per device-step kernel (launch and run), and the
   functions with the most own time.

``--dry-run`` runs the same steps at tiny sizes in numba-cuda's simulator (NumPy arrays, no GPU).
"""

from __future__ import annotations

import argparse
import cProfile
import collections
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))


def _simulated():
    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def _model(rounds, depth):
    import gputrees

    return gputrees.GradientBoostingClassifier(
        n_estimators=rounds, max_depth=depth, learning_rate=0.1, max_bins=255, l2_regularization=1.0,
        min_child_weight=1.0, min_samples_leaf=1, early_stopping=False, random_state=0,
        device=None if _simulated() else "cuda", quantised_gradients=True,
    )


def _data(n_rows):
    from bench_tree import make_synthetic

    X, y = make_synthetic(n_rows, 28, np.float32, seed=0)
    if _simulated():
        return X, y
    import cupy

    return cupy.asarray(X), cupy.asarray(y)


def _synchronize():
    if not _simulated():
        import cupy

        cupy.cuda.Device().synchronize()


def _fit(model, X, y):
    _synchronize()
    t = time.perf_counter()
    model.fit(X, y)
    _synchronize()
    return time.perf_counter() - t


def _trees(model):
    return {f: np.asarray(a.get() if hasattr(a, "get") else a)
            for f, a in ((f, getattr(model.trees_, f)) for f in ("left", "feature", "bin", "threshold", "stats"))}


def compare_builds(args):
    from gputrees.kernels.gpu import tree

    default_budget, shared_budget = tree.SHARED_HISTOGRAM_BYTES, tree.SHARED_BLOCK_BYTES
    Xw, yw = _data(args.warmup_rows)
    for budget in (shared_budget, 0):
        tree.SHARED_HISTOGRAM_BYTES = budget
        _model(5, args.depth).fit(Xw, yw)  # compiles both build kernels
    for n_rows in args.rows:
        X, y = _data(n_rows)
        times = {"shared": [], "global": []}
        trees = {}
        for _ in range(args.repeats):
            for name, budget in (("shared", shared_budget), ("global", 0)):
                tree.SHARED_HISTOGRAM_BYTES = budget
                model = _model(args.rounds, args.depth)
                times[name].append(_fit(model, X, y))
                trees[name] = _trees(model)
        tree.SHARED_HISTOGRAM_BYTES = default_budget
        same = all(np.array_equal(trees["shared"][f], trees["global"][f]) for f in trees["shared"])
        s, g = statistics.median(times["shared"]), statistics.median(times["global"])
        print(f"{n_rows:>9} rows, {args.rounds} rounds depth {args.depth}: shared-memory build {s:.3f} s, "
              f"global atomics {g:.3f} s, ratio {s / g:.2f}; same trees: {same}; "
              f"runs {[round(t, 3) for t in times['shared']]} / {[round(t, 3) for t in times['global']]}",
              flush=True)
        del X, y


def profile(args):
    from gputrees.kernels.gpu import tree

    per_kernel = collections.defaultdict(lambda: [0, 0.0])
    real = tree.launch

    def timed(kernel, *a, **kw):
        t = time.perf_counter()
        real(kernel, *a, **kw)
        entry = per_kernel[getattr(kernel, "__name__", None) or kernel.py_func.__name__]
        entry[0] += 1
        entry[1] += time.perf_counter() - t

    tree.launch = timed
    Xw, yw = _data(args.warmup_rows)
    _model(5, args.depth).fit(Xw, yw)
    per_kernel.clear()
    X, y = _data(args.profile_rows)
    prof = cProfile.Profile()
    prof.enable()
    total = _fit(_model(args.rounds, args.depth), X, y)
    prof.disable()
    print(f"profile: {args.profile_rows} rows, {args.rounds} rounds depth {args.depth}, CUDA_LAUNCH_BLOCKING=1: "
          f"fit {total:.3f} s")
    kernel_total = sum(v[1] for v in per_kernel.values())
    print(f"device step kernels (launch + run, blocking): {kernel_total:.3f} s")
    for name, (calls, sec) in sorted(per_kernel.items(), key=lambda kv: -kv[1][1]):
        print(f"  {name:<16} {calls:>6} launches {sec:8.3f} s  {sec / calls * 1e6:9.1f} us each")
    pstats.Stats(prof).sort_stats("tottime").print_stats(30)
    pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, nargs="*", default=[1_000_000, 10_000_000])
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--depth", type=int, default=6)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--profile-rows", type=int, default=1_000_000, help="0: no profile")
    p.add_argument("--dry-run", action="store_true", help="tiny sizes in numba-cuda's simulator")
    p.add_argument("--profile-child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    args.warmup_rows = 10_000
    if args.dry_run:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        os.environ["GPUTREES_KERNELS"] = "cuda"
        args.rows, args.rounds, args.depth, args.repeats, args.warmup_rows = [300], 2, 3, 1, 100
        args.profile_rows = 300 if args.profile_rows else 0
    if args.profile_child:
        profile(args)
        return
    if args.rows:
        compare_builds(args)
    if args.profile_rows:
        env = dict(os.environ, CUDA_LAUNCH_BLOCKING="1")
        cmd = [sys.executable, __file__, "--profile-child", "--rows", "--rounds", str(args.rounds), "--depth",
               str(args.depth), "--profile-rows", str(args.profile_rows)]
        subprocess.run(cmd + (["--dry-run"] if args.dry_run else []), env=env, check=False)


if __name__ == "__main__":
    main()
