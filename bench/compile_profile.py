"""A pytest plugin: what the test suite spends compiling Numba kernels, by function and signature.

Run (an empty cache, so that everything compiles):

    NUMBA_CACHE_DIR=$(mktemp -d) PYTHONPATH=bench python -m pytest -q -p compile_profile [tests ...]

At the end it prints each compiled function's self time (its compilation less that of the functions it
compiled on the way), compilations and signatures, the slowest first, and writes every signature's row to
``COMPILE_PROFILE`` (default ``compile_profile.json``): [function signature, compilations, self seconds,
the first tests that compiled it]. Many signatures of one function point at callers passing different types
(uint8 and uint16 codes, int64 and uint64 scalars, read-only arrays, optional arguments left out).
"""

from __future__ import annotations

import collections
import json
import os
import time

from numba.core import event

_stack = []
_rows = collections.defaultdict(lambda: [0, 0.0, []])  # "module.function signature" -> [count, self s, tests]
_test = [None]


class _Timer(event.Listener):
    def on_start(self, ev):
        _stack.append([time.perf_counter(), 0.0])

    def on_end(self, ev):
        started, children = _stack.pop()
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


event.register("numba:compile", _Timer())


def pytest_runtest_setup(item):
    _test[0] = item.nodeid


def pytest_terminal_summary(terminalreporter):
    rows = sorted(([k, *v] for k, v in _rows.items()), key=lambda r: -r[2])
    with open(os.environ.get("COMPILE_PROFILE", "compile_profile.json"), "w") as fh:
        json.dump(rows, fh, indent=0)
    by_function = collections.defaultdict(lambda: [0, 0.0, 0])
    for key, count, seconds, _ in rows:
        f = by_function[key.split(" ", 1)[0]]
        f[0] += count
        f[1] += seconds
        f[2] += 1
    write = terminalreporter.write_line
    write(f"Numba compilations: {sum(r[1] for r in rows)}, {sum(r[2] for r in rows):.1f} s")
    for name, (count, seconds, signatures) in sorted(by_function.items(), key=lambda kv: -kv[1][1])[:25]:
        write(f"{seconds:8.1f} s {count:4d} compilations {signatures:3d} signatures  {name}")
