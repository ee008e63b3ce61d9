"""Where a fit's time goes, by compiled function: ``perf`` samples mapped to gputrees' Numba kernels.

``perf report`` shows Numba's compiled code as bare addresses. This script
runs one fit under ``perf record`` (Linux ``perf``, sampling on the CPU
clock, so it works in a VM without hardware counters) and names those
addresses: the fit runs in a child with an empty Numba cache directory, so
that every kernel is compiled there and keeps its object code; after the
fit the child lists each compiled library's functions (``nm`` on the object
code) with their addresses, and the samples are attributed to them. The
recording covers the timed fit only (``perf record --control``): not the
imports, the data, the warm-up fit that compiles the kernels. Prints the
share of samples by function (the kernels by their Python names; other
code by library, ``[kernel]`` for the operating system's work, such as
page faults)::

    python bench/perf_kernels.py --model forest --trees 40
    python bench/perf_kernels.py --model boost --rounds 30 --rows 800000
    python bench/perf_kernels.py --model boost --data flights --rounds 100
    python bench/perf_kernels.py --model forest --trees 20 --event page-faults
    python bench/perf_kernels.py --model boost --data bank --rounds 1000 --by-thread

``--event page-faults`` records every page fault instead of the CPU clock:
the functions that first touch fresh memory (a buffer allocated anew each
call, whose pages the kernel maps on first write).
``--by-thread`` also lists the main thread's samples and the other
threads' apart: what the main thread runs while the kernel threads wait in
libgomp is the fit's serial work.
``--data flights`` or ``bank`` fits ``bench_boost.py``'s model (its
parameters, its training split) on that dataset.

Needs ``perf`` and ``nm`` on the PATH and permission to record (a
``perf_event_paranoid`` of 2 or less for one's own processes). Compiling
every kernel takes a minute or two.
"""

from __future__ import annotations

import argparse
import bisect
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["forest", "boost"], default="forest")
    p.add_argument("--rows", type=int, default=250_000, help="synthetic rows before the 80/20 split")
    p.add_argument("--trees", type=int, default=40, help="forest trees")
    p.add_argument("--rounds", type=int, default=30, help="boosting rounds")
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--data", choices=["synthetic", "flights", "bank"], default="synthetic",
                   help="boosting: bench_boost.py's dataset and model")
    p.add_argument("--first", type=int, default=None,
                   help="with --data flights or bank: fit on the first this many training rows only")
    p.add_argument("--data-dir", default=str(HERE.parent.parent / "shared" / "data"))
    p.add_argument("--top", type=int, default=25, help="functions listed")
    p.add_argument("--by-thread", action="store_true",
                   help="also the samples of the main thread and of the other (kernel) threads apart: what runs "
                        "on the main thread while the others wait in libgomp is the fit's serial work")
    p.add_argument("--event", choices=["cpu-clock", "page-faults"], default="cpu-clock",
                   help="what a sample is: 999 a second of CPU time, or every page fault (where fresh memory is "
                        "first touched)")
    p.add_argument("--child", nargs=3, metavar=("CTL", "ACK", "SYMBOLS"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _estimator(args, n_estimators):
    import gputrees

    if args.model == "forest":
        return gputrees.RandomForestClassifier(n_estimators=n_estimators, n_jobs=args.n_jobs, random_state=0)
    return gputrees.GradientBoostingClassifier(n_estimators=n_estimators, max_depth=6, learning_rate=0.1,
                                               n_jobs=args.n_jobs, random_state=0)


def child(args):
    """The fit under perf: warm up (compile), enable the recording, fit, disable, list the symbols."""
    import numpy as np
    import sklearn.base

    sys.path.insert(0, str(HERE))
    from bench_boost import make_synthetic

    ctl_path, ack_path, symbols_path = args.child
    n = args.trees if args.model == "forest" else args.rounds
    if args.data == "synthetic":
        X, y = make_synthetic(args.rows, 28, np.float32, 0)
        n_train = int(0.8 * args.rows)
        X, y = X[:n_train], y[:n_train]
        model = _estimator(args, n)
        warm = 20_000
    else:
        import bench_boost

        opts = argparse.Namespace(rounds=n, threads=args.n_jobs, device="cpu", rows=args.rows, data_dir=args.data_dir)
        task, (X, _, y, _) = bench_boost.load(args.data, opts)
        if args.first is not None:
            X, y = X[: args.first], y[: args.first]
        model = bench_boost.make_model("gputrees", task, opts)
        warm = X.shape[0]  # a part of a real dataset may miss a case (missing values) and leave a kernel to compile
    sklearn.base.clone(model).fit(X[:warm], y[:warm])  # every kernel compiled (and its code kept)
    with open(ctl_path, "w") as ctl, open(ack_path) as ack:
        ctl.write("enable\n")
        ctl.flush()
        ack.readline()
        t0 = time.perf_counter()
        model.fit(X, y)
        elapsed = time.perf_counter() - t0
        ctl.write("disable\n")
        ctl.flush()
        ack.readline()
    print(f"fit {elapsed:.2f} s ({args.model}, {X.shape[0]:,} x {X.shape[1]} rows, {n} {'trees' if args.model == 'forest' else 'rounds'})")
    _write_symbols(symbols_path)


def _write_symbols(path):
    """Every compiled function of every Numba dispatcher: 'address size name' lines."""
    import gc

    from numba.core.dispatcher import Dispatcher

    rows, seen = [], set()
    with tempfile.TemporaryDirectory() as tmp:
        obj = os.path.join(tmp, "lib.o")
        top = [(cres.library, _owner(d)) for d in gc.get_objects() if isinstance(d, Dispatcher)
               for cres in list(d.overloads.values())]
        # a prange loop's body is compiled into a library of its own, linked
        # into its function's (and from there into its callers'): named after
        # the function of fewest linked libraries that links it
        top.sort(key=lambda item: len(getattr(item[0], "_linking_libraries", ())))
        libs = list(top)
        seen.update(id(lib) for lib, _ in top)
        for lib, owner in libs:  # grows as it goes: breadth first
            for linked in getattr(lib, "_linking_libraries", ()):
                if id(linked) not in seen:
                    seen.add(id(linked))
                    libs.append((linked, owner))
        for lib, owner in libs:
            try:
                blobs = lib.serialize_using_object_code()[2]
            except Exception:  # a library loaded from a cache keeps no object code
                continue
            code = next((b for b in blobs if isinstance(b, bytes) and b[:4] == b"\x7fELF"), None)
            if code is None:
                continue
            with open(obj, "wb") as f:
                f.write(code)
            listing = subprocess.run(["nm", "-S", "--defined-only", obj], capture_output=True, text=True).stdout
            found, offset = [], None
            for line in listing.splitlines():
                parts = line.split()
                if len(parts) == 4 and parts[2] in "Tt":
                    name = f"{owner} [prange body]" if "__numba_parfor_gufunc" in parts[3] else parts[3]
                    found.append((int(parts[0], 16), int(parts[1], 16), name))
                    if offset is None:
                        try:
                            addr = lib.get_pointer_to_function(parts[3])
                        except Exception:
                            addr = 0
                        if addr:
                            offset = addr - int(parts[0], 16)
            # local functions have no pointer to ask for: placed by their
            # offset in the text from an exported one (the code is loaded whole)
            if offset is not None:
                rows.extend((value + offset, size, name) for value, size, name in found)
    with open(path, "w") as f:
        for addr, size, name in sorted(rows):
            f.write(f"{addr:x} {size} {name}\n")


def _owner(dispatcher):
    """A dispatcher's function as ``module.function`` (the module's last part), as :func:`_short` names symbols."""
    f = dispatcher.py_func
    return f"{f.__module__.rsplit('.', 1)[-1]}.{f.__qualname__}"


def _short(symbol):
    """A mangled Numba symbol's Python name (its last two parts: ``module.function``), else the symbol."""
    if not symbol.startswith("_ZN"):
        return symbol
    names, rest = [], symbol[3:]
    while rest and rest[0].isdigit():  # <length><name>, up to the ABI tags
        m = re.match(r"\d+", rest)
        k = int(m.group(0))
        names.append(rest[m.end() : m.end() + k])
        rest = rest[m.end() + k :]
    return ".".join(names[-2:]) if names else symbol


def report(data, symbols_path, top, by_thread=False):
    rows = []
    with open(symbols_path) as f:
        for line in f:
            addr, size, name = line.rstrip("\n").split(" ", 2)
            rows.append((int(addr, 16), int(size), name))
    starts = [r[0] for r in rows]
    out = subprocess.run(["perf", "script", "-i", data, "-F", "pid,tid,ip,dso"], capture_output=True,
                         text=True).stdout
    counts, total = collections.Counter(), 0
    # (main thread?, name): samples, for --by-thread
    threads = collections.Counter()
    for line in out.splitlines():
        parts = line.split(None, 1)
        if len(parts) < 2:
            continue
        main_thread = _is_main(parts[0])
        parts = parts[1].split(None, 1)
        total += 1
        dso = parts[1] if len(parts) > 1 else ""
        if "kallsyms" in dso:
            name = "[kernel]"
        elif ".so" in dso:
            name = Path(dso.strip("()")).name
        else:
            ip = int(parts[0], 16)
            i = bisect.bisect_right(starts, ip) - 1
            if i >= 0 and ip < rows[i][0] + max(rows[i][1], 1):
                name = _short(rows[i][2])
            else:
                name = "[compiled, unnamed]"
        counts[name] += 1
        threads[main_thread, name] += 1
    print(f"{total:,} samples")
    for name, k in counts.most_common(top):
        print(f"  {100 * k / max(total, 1):5.1f}%  {name}")
    if by_thread:
        for main_thread, title in ((True, "the main thread"), (False, "the other threads")):
            sub = collections.Counter({n: k for (m, n), k in threads.items() if m == main_thread})
            n_sub = sum(sub.values())
            print(f"{title}: {n_sub:,} samples ({100 * n_sub / max(total, 1):.1f}%)")
            for name, k in sub.most_common(top):
                print(f"  {100 * k / max(total, 1):5.1f}%  {name}")


def _is_main(pid_tid):
    """Whether a ``perf script`` sample's ``pid/tid`` is its process's main thread."""
    pid, _, tid = pid_tid.partition("/")
    return pid == tid


def main(argv=None):
    args = parse_args(argv)
    if args.data != "synthetic" and args.model != "boost":
        sys.exit(f"--data {args.data} is bench_boost.py's boosting model: use it with --model boost")
    if args.child:
        child(args)
        return
    for tool in ("perf", "nm"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found on the PATH")
    with tempfile.TemporaryDirectory() as tmp:
        ctl, ack = os.path.join(tmp, "ctl"), os.path.join(tmp, "ack")
        os.mkfifo(ctl)
        os.mkfifo(ack)
        data, symbols = os.path.join(tmp, "perf.data"), os.path.join(tmp, "symbols.txt")
        env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(tmp, "numba_cache"))
        sampling = ["-F", "999"] if args.event == "cpu-clock" else ["-e", "page-faults", "-c", "1"]
        cmd = ["perf", "record", "-D", "-1", "--control", f"fifo:{ctl},{ack}", *sampling, "-o", data, "--",
               sys.executable, str(Path(__file__).resolve()), "--model", args.model, "--rows", str(args.rows),
               "--trees", str(args.trees), "--rounds", str(args.rounds), "--n-jobs", str(args.n_jobs),
               "--data", args.data, "--data-dir", args.data_dir,
               *(["--first", str(args.first)] if args.first is not None else []), "--child", ctl, ack, symbols]
        subprocess.run(cmd, env=env, check=True)
        report(data, symbols, args.top, args.by_thread)


if __name__ == "__main__":
    main()
