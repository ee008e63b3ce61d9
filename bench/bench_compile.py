"""What a first fit compiles: every Numba function and signature, and the seconds each took (issue 13).

Run:  python bench/bench_compile.py [--families tree forest extra-trees adaboost gbdt gbdt-regressor]
                                    [--top 25] [--out FILE]

Each family's first fit (and predict) runs in a NEW process whose ``NUMBA_CACHE_DIR``
is an empty directory, on the data of ``bench/bench_latency.py`` (Titanic as ``gputrees demo`` prepares it;
Hitters for the regressor), with Numba's compile events recorded. A function compiled inside another's
compilation (a callee typed and compiled for its caller) counts in its own line; ``self s`` is a line's
time less its callees', so that the self times add up to the whole compile time. Printed per family: the
fit's wall time, the compile time, the number of compilations (function and signature), and the
``--top`` lines by self time; then, over all families, the functions by total self time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAMILIES = ("tree", "forest", "extra-trees", "adaboost", "gbdt", "gbdt-regressor")

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from numba.core import event
events = []

class Listener(event.Listener):
    def on_start(self, ev):
        events.append(("start", time.perf_counter(), self.name(ev)))
    def on_end(self, ev):
        events.append(("end", time.perf_counter(), self.name(ev)))
    @staticmethod
    def name(ev):
        d = ev.data.get("dispatcher")
        py = getattr(d, "py_func", None)
        fn = f"{py.__module__}.{py.__qualname__}" if py is not None else repr(d)
        return f"{fn}{tuple(str(a) for a in ev.data.get('args', ()))}"

event.register("numba:compile", Listener())
sys.path.insert(0, sys.argv[2])
from bench_latency import FAMILIES, THREADS
import gputrees
from gputrees import datasets
from sklearn.model_selection import train_test_split
cls_name, data_name = FAMILIES[sys.argv[1]]
if data_name == "titanic":
    d = datasets.load_titanic(as_frame=True)
    X_tr, X_te, y_tr, y_te = train_test_split(d.data, d.target, test_size=0.25, random_state=0, stratify=d.target)
else:
    d = datasets.load_hitters(as_frame=True)
    X_tr, X_te, y_tr, y_te = train_test_split(d.data, d.target, test_size=0.25, random_state=0)
cls = getattr(gputrees, cls_name)
params = {"n_jobs": THREADS} if "n_jobs" in cls().get_params() else {}
t1 = time.perf_counter()
cls(**params).fit(X_tr, y_tr).predict(X_te)
t2 = time.perf_counter()
print(json.dumps(dict(setup=t1 - t0, fit=t2 - t1, events=events)))
"""


def self_times(events):
    """(name, inclusive s, self s) per compilation, from nested start/end events."""
    stack, out = [], []
    for kind, t, name in events:
        if kind == "start":
            stack.append([name, t, 0.0])
        else:
            name0, t0, child = stack.pop()
            total = t - t0
            out.append((name0, total, total - child))
            if stack:
                stack[-1][2] += total
    return out


def short(name: str, width: int = 110) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    lines, overall = [], defaultdict(float)

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    for family in args.families:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            t = time.perf_counter()
            res = subprocess.run([sys.executable, "-c", CHILD, family, str(HERE)], env=env, capture_output=True,
                                 text=True)
            wall = time.perf_counter() - t
        if res.returncode:
            say(f"{family}: failed\n{res.stderr[-2000:]}")
            continue
        data = json.loads(res.stdout.strip().splitlines()[-1])
        comp = self_times(data["events"])
        total = sum(s for _, _, s in comp)
        by_fn = defaultdict(lambda: [0, 0.0])
        for name, _, s in comp:
            fn = name.split("(")[0]
            by_fn[fn][0] += 1
            by_fn[fn][1] += s
            overall[fn] += s
        say(f"== {family}: process {wall:.1f} s, fit + predict {data['fit']:.1f} s, compiling {total:.1f} s, "
            f"{len(comp)} compilations of {len(by_fn)} functions")
        say(f"   {'self s':>7} {'sigs':>4}  function")
        for fn, (n, s) in sorted(by_fn.items(), key=lambda kv: -kv[1][1])[: args.top]:
            say(f"   {s:7.2f} {n:4d}  {short(fn)}")
    say("== all families: functions by total self time (s)")
    for fn, s in sorted(overall.items(), key=lambda kv: -kv[1])[: args.top]:
        say(f"   {s:7.2f}  {short(fn)}")
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
