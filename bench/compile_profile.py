"""A pytest plugin: what the test suite spends compiling Numba kernels, by function and signature.

Run (an empty cache, so that everything compiles):

    NUMBA_CACHE_DIR=$(mktemp -d) PYTHONPATH=bench python -m pytest -q -p compile_profile [tests ...]

also under pytest-xdist (``-n 2 --dist loadfile``, as ``make test``): each worker writes its own rows and the
summary adds them up and lists the signatures that more than one worker compiled (the machine compiling the
same code twice).

At the end it prints each compiled function's self time (its compilation less that of the functions it
compiled on the way), compilations and signatures, the slowest first, and writes every signature's row to
``COMPILE_PROFILE`` (default ``compile_profile.json``): [function signature, compilations, self seconds,
the first tests that compiled it, the workers that compiled it, seconds from the session's start to its
first compilation]. Many signatures of one function point at callers passing different types
(uint8 and uint16 codes, int64 and uint64 scalars, read-only arrays, optional arguments left out).
"""

from __future__ import annotations

import collections
import json
import os
import time

from numba.core import event

_stack = []
# "module.function signature" -> [count, self s, tests, workers, first start (s from the session's start)]
_rows = collections.defaultdict(lambda: [0, 0.0, [], [], None])
_test = [None]
_worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
_t0 = [time.time()]


class _Timer(event.Listener):
    def on_start(self, ev):
        _stack.append([time.perf_counter(), 0.0, time.time()])

    def on_end(self, ev):
        started, children, wall = _stack.pop()
        seconds = time.perf_counter() - started
        if _stack:
            _stack[-1][1] += seconds
        data = ev.data or {}
        func = getattr(data.get("dispatcher"), "py_func", None)
        name = f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', '?')}"
        row = _rows[f"{name} {data.get('args')}"]
        row[0] += 1
        row[1] += seconds - children
        if len(row[2]) < 3 and _test[0] not in row[2]:
            row[2].append(_test[0])
        if _worker not in row[3]:
            row[3].append(_worker)
        if row[4] is None:
            row[4] = round(wall - _t0[0], 1)


event.register("numba:compile", _Timer())


def _path(worker=None):
    path = os.environ.get("COMPILE_PROFILE", "compile_profile.json")
    return path if worker is None else f"{path}.{worker}"


def pytest_sessionstart(session):
    # the workers' clocks start from the controller's (passed in the environment) so their times line up
    if _worker == "main":
        os.environ["COMPILE_PROFILE_T0"] = repr(_t0[0])
    else:
        _t0[0] = float(os.environ.get("COMPILE_PROFILE_T0", _t0[0]))


def pytest_runtest_setup(item):
    _test[0] = item.nodeid


def pytest_sessionfinish(session):
    if _worker != "main":
        with open(_path(_worker), "w") as fh:
            json.dump({k: v for k, v in _rows.items()}, fh)


def _merge_workers():
    """The rows the xdist workers wrote (their files are then removed), added into this process's."""
    folder = os.path.dirname(os.path.abspath(_path()))
    prefix = os.path.basename(_path()) + ".gw"
    for name in sorted(os.listdir(folder)):
        if not name.startswith(prefix):
            continue
        with open(os.path.join(folder, name)) as fh:
            for key, (count, seconds, tests, workers, start) in json.load(fh).items():
                row = _rows[key]
                row[0] += count
                row[1] += seconds
                row[2] = (row[2] + tests)[:3]
                row[3] += workers
                row[4] = start if row[4] is None else min(row[4], start)
        os.remove(os.path.join(folder, name))


def pytest_terminal_summary(terminalreporter):
    if _worker != "main":
        return
    _merge_workers()
    rows = sorted(([k, *v] for k, v in _rows.items()), key=lambda r: -r[2])
    with open(_path(), "w") as fh:
        json.dump(rows, fh, indent=0)
    by_function = collections.defaultdict(lambda: [0, 0.0, 0])
    for key, count, seconds, *_ in rows:
        f = by_function[key.split(" ", 1)[0]]
        f[0] += count
        f[1] += seconds
        f[2] += 1
    write = terminalreporter.write_line
    write(f"Numba compilations: {sum(r[1] for r in rows)}, {sum(r[2] for r in rows):.1f} s")
    for name, (count, seconds, signatures) in sorted(by_function.items(), key=lambda kv: -kv[1][1])[:25]:
        write(f"{seconds:8.1f} s {count:4d} compilations {signatures:3d} signatures  {name}")
    twice = [r for r in rows if len(r[4]) > 1]
    if twice:
        seconds = sum(r[2] * (1 - 1 / len(r[4])) for r in twice)
        write(f"compiled by more than one worker: {len(twice)} signatures, {seconds:.1f} s of the self time")
