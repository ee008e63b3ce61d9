"""GPU smoke test: a small boosting fit and a small forest on the GPU against the CPU's, and the time of the first
(compiling) fits.

Run by bench/gpu_check.sh; with ``NUMBA_ENABLE_CUDASIM=1`` the cuda set runs in numba-cuda's simulator on NumPy
arrays (a dry run on a CPU). Prints whether the GPU's trees (quantised gradients) equal the CPU's, bit for bit,
grown by the device step (the default) and level by level (``GPUTREES_DEVICE_STEP=0``; the simulator always
takes the device step). The CPU's trees come from the NumPy (bincount) kernels: the Numba kernels' trees, and
nothing to compile. The forest (a classifier: integer channels) likewise.
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

import gputrees
from gputrees.kernels import cuda_simulated


def host(a):
    return np.asarray(a.get() if hasattr(a, "get") else a)


def main():
    simulated = cuda_simulated()
    if simulated:  # the simulated kernels mix the node keys (wrapping uint64, as meant) on NumPy scalars, which warn
        warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
    n = 500 if simulated else 20000
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 8)).astype(np.float32)
    X[rng.random(X.shape) < 0.02] = np.nan
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1] * X[:, 2]) > 0).astype(int)
    kw = dict(n_estimators=5, max_depth=4, early_stopping=False, quantised_gradients=True)
    os.environ["GPUTREES_KERNELS"] = "bincount"
    cpu = gputrees.GradientBoostingClassifier(**kw).fit(X, y)
    if simulated:
        os.environ["GPUTREES_KERNELS"] = "cuda"
        Xg, yg, device = X, y, None
    else:
        import cupy

        os.environ.pop("GPUTREES_KERNELS")
        Xg, yg, device = cupy.asarray(X), cupy.asarray(y), "cuda"
    for step in ("1",) if simulated else ("1", "0"):
        os.environ["GPUTREES_DEVICE_STEP"] = step
        label = "device step" if simulated or step == "1" else "level by level"
        t = time.perf_counter()
        gpu = gputrees.GradientBoostingClassifier(device=device, **kw).fit(Xg, yg)
        print(f"{label}: first GPU fit (compiles its kernels): {time.perf_counter() - t:.2f} s")
        t = time.perf_counter()
        gputrees.GradientBoostingClassifier(device=device, **kw).fit(Xg, yg)
        print(f"{label}: second GPU fit: {time.perf_counter() - t:.3f} s")
        if not simulated:
            launches(label, lambda: gputrees.GradientBoostingClassifier(device=device, **kw).fit(Xg, yg))
        same = all(np.array_equal(host(getattr(gpu.trees_, f)), host(getattr(cpu.trees_, f)))
                   for f in ("left", "feature", "bin", "missing_left", "threshold", "stats"))
        print(f"{label}: GPU trees equal the CPU's quantised trees: {same}")
        # equal trees; the probabilities may differ in the last bits (the device's exp is not the host's)
        diff = np.max(np.abs(host(gpu.predict_proba(Xg)) - cpu.predict_proba(X)))
        print(f"{label}: GPU probabilities against the CPU's: largest difference {diff:.3g}")
    forest(simulated, X, y, Xg, yg, device)


def launches(label, fit):
    """The fit's time with numba-cuda's own launch every time against the direct launches after a kernel's
    first (gputrees.kernels.cuda_launch), alternated, best of 3 each; the launches each way."""
    from gputrees.kernels.cuda_launch import launch_counts

    times = {"0": [], "1": []}
    for _ in range(3):
        for direct in times:
            os.environ["GPUTREES_DIRECT_LAUNCH"] = direct
            t = time.perf_counter()
            fit()
            times[direct].append(time.perf_counter() - t)
    os.environ.pop("GPUTREES_DIRECT_LAUNCH")
    print(f"{label}: fit with numba-cuda's launches {min(times['0']):.3f} s, direct launches "
          f"{min(times['1']):.3f} s; launches so far {launch_counts()}")


def forest(simulated, X, y, Xg, yg, device):
    """Random forests (bootstrap, max_features="sqrt") on the GPU, device step and level by level, against the
    CPU's: the same trees (unweighted classes sum exactly everywhere); depth 8, and unlimited (the default: the
    device step's compact deep levels)."""
    for depth in (4 if simulated else 8, None):
        kw = dict(n_estimators=3 if simulated else 20, max_depth=depth, random_state=0)
        forest_both_ways(simulated, X, y, Xg, yg, device, kw, "" if depth else " (max_depth=None)")


def forest_both_ways(simulated, X, y, Xg, yg, device, kw, suffix):
    os.environ["GPUTREES_KERNELS"] = "bincount"
    cpu = gputrees.RandomForestClassifier(**kw).fit(X, y)
    os.environ["GPUTREES_KERNELS"] = "cuda"
    if not simulated:
        os.environ.pop("GPUTREES_KERNELS")
    for step in ("1",) if simulated else ("1", "0"):
        os.environ["GPUTREES_DEVICE_STEP"] = step
        label = ("forest, device step" if simulated or step == "1" else "forest, level by level") + suffix
        t = time.perf_counter()
        gpu = gputrees.RandomForestClassifier(device=device, **kw).fit(Xg, yg)
        print(f"{label}: first GPU fit: {time.perf_counter() - t:.2f} s")
        t = time.perf_counter()
        gputrees.RandomForestClassifier(device=device, **kw).fit(Xg, yg)
        print(f"{label}: second GPU fit: {time.perf_counter() - t:.3f} s")
        same = all(np.array_equal(host(getattr(g, f)), host(getattr(c, f)))
                   for g, c in zip(gpu._batches, cpu._batches)
                   for f in ("left", "feature", "bin", "missing_left", "threshold", "stats"))
        print(f"{label}: GPU trees equal the CPU's: {same}")


if __name__ == "__main__":
    main()
