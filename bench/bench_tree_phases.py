"""Where a compiled boosting tree's time goes: each phase of ``gputrees.kernels.cpu.grow._grow``, ms a tree, and by depth.

Compiles a copy of ``gputrees.kernels.cpu.grow._grow`` with a clock read
(``numba.objmode``) at the start of each phase, puts it in the module's
place, and fits the boosting model of ``bench_versions.py`` (depth 6, 255
bins, two threads) twice::

    python bench/bench_tree_phases.py --data synthetic --rounds 30
    python bench/bench_tree_phases.py --data flights --rounds 100

prints each fit's seconds, the time inside the trees, every phase's ms a
tree, and by depth the partition's ms and the smaller children's
histograms' ms, rows built and ns a (row, feature) update (wall time, all
threads). The clock reads cost a few microseconds each (about 30 a tree):
the phases add up to a little more than the uninstrumented tree takes.
The copy is made from the installed source by inserting lines before
marked statements; a statement renamed there raises an error here.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: (the statement a phase starts at, the phase's name); each phase runs to the next mark
PHASES = [
    ("    if root_sums.shape[0] == C:", "root sums"),
    ("    hist = grouped_histograms(", "root histogram"),
    ("    ok = _scan_nodes(hist, stats, root", "root scan"),
    ("        last = depth[front[0]] + 1 >= max_depth", "partition / leaf pass"),
    ("        can = np.zeros(2 * k", "children's statistics, plan"),
    ("            small_hist = grouped_histograms(", "smaller children's histograms"),
    ("            level = hist_b[:n_can]", "siblings by subtraction"),
    ("            ok = _scan_nodes(hist, stats, cand", "split scans"),
    ("        if not last:", "leaves marked"),
    ("        front, front_slot = new_front, new_slot", "next level"),
]
_END = "    return n_nodes, parent, depth, stats, first_child"
_PHASE = {name: k for k, (_, name) in enumerate(PHASES)}
#: phases inside the level loop: their marks read the level's depth
_IN_LEVEL = {_PHASE[name] for name in ("partition / leaf pass", "children's statistics, plan",
                                        "smaller children's histograms", "siblings by subtraction")}
#: the phase whose mark follows the smaller children's histograms: it reads how many rows they had
_AFTER_HISTOGRAMS = _PHASE["siblings by subtraction"]


class Clock:
    """Accumulates the time from each mark to the next, by phase and by the level's depth."""

    def __init__(self, max_depth: int = 32):
        self.total = np.zeros(len(PHASES))
        self.by_depth = np.zeros((len(PHASES), max_depth))
        self.rows = np.zeros(max_depth)
        self.last = None

    def reset(self):
        self.total[:] = 0
        self.by_depth[:] = 0
        self.rows[:] = 0
        self.last = None

    def tick(self, phase, depth, built):
        t = time.perf_counter()
        if self.last is not None:
            t0, p, d = self.last
            self.total[p] += t - t0
            self.by_depth[p, d] += t - t0
        if phase == _AFTER_HISTOGRAMS:
            self.rows[depth] += built
        self.last = None if phase < 0 else (t, phase, depth)


def instrument(clock: Clock):
    """Replace ``gputrees.kernels.cpu.grow._grow`` by a copy that calls ``clock.tick`` at every phase's start."""
    import numba

    import gputrees.kernels.cpu.grow as G

    lines = inspect.getsource(G._grow.py_func).splitlines(keepends=True)
    found = set()
    out = []
    for line in lines:
        for k, (start, _) in enumerate(PHASES):
            if line.startswith(start):
                pad = start[: len(start) - len(start.lstrip())]
                depth = "depth[front[0]]" if k in _IN_LEVEL else "0"
                built = "built" if k == _AFTER_HISTOGRAMS else "0"
                out.append(f"{pad}_d = {depth}\n{pad}with numba.objmode():\n{pad}    _tick({k}, _d, {built})\n")
                found.add(k)
        if line.startswith(_END):
            out.append("    with numba.objmode():\n        _tick(-1, 0, 0)\n")
            found.add(-1)
        out.append(line)
    missing = [PHASES[k][0].strip() for k in range(len(PHASES)) if k not in found] + (["return"] if -1 not in found else [])
    if missing:
        raise RuntimeError(f"_grow no longer has the statements {missing}: update PHASES")
    src = "".join(out).replace("def _grow(", "def _grow_timed(")
    src = "\n".join(line for line in src.splitlines() if not line.startswith("@"))
    G._tick = clock.tick  # object-mode blocks look names up in the module
    ns = dict(vars(G))
    exec(src, ns)
    G._grow = numba.njit(**dict(G._JIT_GROW, cache=False))(ns["_grow_timed"])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", choices=["synthetic", "flights", "bank"], default="synthetic")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--rows", type=int, default=1_000_000, help="synthetic rows before the 75%% training split")
    p.add_argument("--first", type=int, default=None,
                   help="fit on the first this many training rows only (a tree's fixed costs on small data)")
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--data-dir", default=str(HERE.parent.parent / "shared" / "data"))
    args = p.parse_args(argv)

    from bench_versions import BOOST_PARAMS, load_data

    import gputrees

    clock = Clock()
    instrument(clock)
    X, y, name = load_data(args.data, args.data_dir, args.rows)
    if args.first is not None:
        X, y = X[: args.first], y[: args.first]
    est = getattr(gputrees, name)(n_estimators=args.rounds, n_jobs=args.n_jobs, **BOOST_PARAMS)
    est.fit(X[:2000], y[:2000])  # compiles
    n_features = X.shape[1]
    per_tree = 1e3 / args.rounds
    for _ in range(2):
        clock.reset()
        t = time.perf_counter()
        est.fit(X, y)
        total = time.perf_counter() - t
        print(f"[{args.data}] {X.shape[0]:,} rows x {n_features}, {args.rounds} rounds: fit {total:.3f} s, "
              f"inside the trees {clock.total.sum():.3f} s")
        for k, (_, phase) in enumerate(PHASES):
            print(f"  {phase:30s} {clock.total[k] * per_tree:7.2f} ms a tree")
        for d in range(clock.rows.shape[0]):
            part = clock.by_depth[_PHASE["partition / leaf pass"], d]
            hist = clock.by_depth[_PHASE["smaller children's histograms"], d]
            if part == 0 and hist == 0:
                continue
            rows = clock.rows[d] / args.rounds
            ns = hist * 1e9 / max(1.0, clock.rows[d] * n_features)
            print(f"  depth {d}: partition {part * per_tree:5.2f} ms, smaller children {hist * per_tree:5.2f} ms "
                  f"({rows:,.0f} rows a tree, {ns:.3f} ns an update)")


if __name__ == "__main__":
    main()
