"""Latency of small fits: a new process's first fit (cold and warm Numba cache), and small fits against peers.

Run:  python bench/bench_latency.py [--src PATH [PATH ...]] [--families tree forest ...]
                                   [--repeats 15] [--cold-repeats 1] [--warm-repeats 3]
                                   [--skip-cold] [--skip-warm] [--skip-peers] [--out FILE]

    python bench/bench_latency.py --src /work/base --out bench/results/latency_base_c1eceee.txt
    python bench/bench_latency.py --src /work/base . --families tree gbdt        # two checkouts, alternated
    python bench/bench_latency.py --src . --families tree --cold-repeats 1 --warm-repeats 1 --repeats 3  # smoke

gputrees compiles its Numba kernels on first use and caches the machine code
on disk (``cache=True``, in ``NUMBA_CACHE_DIR``), so what a user waits for in
a new Python process is mostly compilation (first process) or loading the
cache (later ones), not the fit itself. Three parts, timed in NEW Python
processes (``subprocess``), so that nothing is warm but the OS file cache
(one untimed process per source imports the libraries first, so that the
first measured process does not read them from disk alone):

1. ``[cold]`` a family's first fit in a new process whose ``NUMBA_CACHE_DIR``
   is a fresh, empty directory (one per family, source and repeat, so each
   number is that family's own compile cost): ``import gputrees``, load and
   split the data, ``fit``, ``predict`` on the test rows. Columns: ``import``
   (``import gputrees``), ``data`` (loading + ``train_test_split``), ``fit``
   (includes importing Numba and the kernel modules, which ``import
   gputrees`` does not), ``predict``, ``start>fit`` (from just before the
   process is started to the end of the fit: interpreter start, imports,
   data, fit), ``wall`` (the whole process, until it has exited), the
   cache the process left (MiB, files) and ``load``, the machine's 1-minute
   load average when the process ended (the highest of the repeats).
2. ``[warm]`` the same, in a new process whose ``NUMBA_CACHE_DIR`` an
   untimed process has just filled, fitting on the Numba kernels (a cold
   process fits small data on the NumPy kernels and compiles nothing).
   ``start>fit`` is the time to a first fitted model of a user whose cache is
   filled. ``grew`` flags a warm process that still wrote to the cache
   (a kernel compiled again: a cache miss).
3. ``[peers]`` small fits in one new process, warm (each model fitted and
   used once untimed first: ``1st total``, where gputrees compiles its
   kernels into an empty cache), medians of ``--repeats``, every library once per repeat in
   turn (in the reverse order every other repeat): one ``DecisionTreeClassifier``
   (default parameters, ``n_jobs=2``) on Titanic against scikit-learn's
   (ordinal codes for the two categorical columns, missing ones NaN), fit +
   predict; a 100-round depth-6 booster (learning rate 0.1, 255 bins, L2 1,
   minimum hessian 1 per leaf, no minimum row count, no early stopping: the
   settings of ``bench_boost.py``) fitted on all 569 rows of scikit-learn's
   breast cancer data, ``predict_proba`` on the same rows, against XGBoost
   (``tree_method="hist"``, ``max_bin=256``), LightGBM (``num_leaves=64,
   max_depth=6``) and scikit-learn's HistGradientBoostingClassifier
   (``max_leaf_nodes=64``). Two threads for every library (``n_jobs=2``,
   threadpoolctl for scikit-learn's OpenMP). Ratios gputrees / peer: of the
   median times, and the median of the repeats' ratios (``pairs``).

Families (parts 1 and 2; default parameters, ``n_jobs=2`` where the estimator
has it): ``tree``, ``forest``, ``extra-trees``, ``adaboost``, ``gbdt`` (the
classifiers, on Titanic exactly as ``gputrees demo`` prepares it:
``load_titanic(as_frame=True)``, Sex and Embarked as pandas categories,
missing Age kept, ``train_test_split(test_size=0.25, random_state=0,
stratify=y)``) and ``gbdt-regressor`` (``GradientBoostingRegressor`` on
``load_hitters(as_frame=True)``, Salary, the same split unstratified).

Sources: each ``--src`` checkout's ``gputrees`` package is copied into a
temporary directory and compiled to bytecode there (``compileall``), so that
``import gputrees`` costs what it costs an installed package (this
environment sets ``PYTHONDONTWRITEBYTECODE``, which would otherwise make
every process compile gputrees' sources) and the checkout is left untouched;
the child processes run in the copy's directory (``python -c`` puts the
working directory first on ``sys.path``) with it on ``PYTHONPATH``, and
check that every ``gputrees`` module they load comes from it. Part 3 imports every
source's copy in one process under a name of its own (``gputrees_s0``, ...,
as ``bench_versions.py`` does). Each source is labelled by its git short hash
(``+dirty`` when its ``gputrees/`` has uncommitted changes) or its path.
Every measured item meets the sources in turn, the order reversed every other
time, so that they meet the same phases of a shared machine.

A full run of all six families with one source takes several minutes, almost
all of it the cold processes' compilation (see the ``total`` line).
"""

from __future__ import annotations

import argparse
import compileall
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: family -> (estimator class name, data set)
FAMILIES = {
    "tree": ("DecisionTreeClassifier", "titanic"),
    "forest": ("RandomForestClassifier", "titanic"),
    "extra-trees": ("ExtraTreesClassifier", "titanic"),
    "adaboost": ("AdaBoostClassifier", "titanic"),
    "gbdt": ("GradientBoostingClassifier", "titanic"),
    "gbdt-regressor": ("GradientBoostingRegressor", "hitters"),
}
THREADS = 2

#: Run by ``python -c`` in a new process (parts 1 and 2): argv = family, launch time (time.time()), package dir,
#: [class name, data set], n_jobs.
#: Prints one line ``RESULT {json}``.
CHILD_FIT = r"""
import time
t_start = time.perf_counter()
import json, sys
family, launch, pkg_dir = sys.argv[1], float(sys.argv[2]), sys.argv[3]
cls_name, data_name = json.loads(sys.argv[4])
import gputrees
t_import = time.perf_counter()
from sklearn.model_selection import train_test_split
if data_name == "titanic":
    from gputrees.datasets import load_titanic
    d = load_titanic(as_frame=True)
    X_tr, X_te, y_tr, y_te = train_test_split(d.data, d.target, test_size=0.25, random_state=0, stratify=d.target)
else:
    from gputrees.datasets import load_hitters
    d = load_hitters(as_frame=True)
    X_tr, X_te, y_tr, y_te = train_test_split(d.data, d.target, test_size=0.25, random_state=0)
cls = getattr(gputrees, cls_name)
params = {"n_jobs": int(sys.argv[5])} if "n_jobs" in cls().get_params() else {}
if sys.argv[6:] == ["compile"]:  # fill the cache: the Numba kernels even where a cold fit would not compile
    try:
        from gputrees.kernels import cold_start
        cold_start.mark_compiled(cls_name)
    except ImportError:  # a source from before the cold start: it compiles anyway
        pass
t_data = time.perf_counter()
est = cls(**params).fit(X_tr, y_tr)
t_fit = time.perf_counter()
fit_end = time.time()
est.predict(X_te)
t_pred = time.perf_counter()
foreign = sorted({m.__file__ for n, m in list(sys.modules.items())
                  if (n == "gputrees" or n.startswith("gputrees.")) and getattr(m, "__file__", None)
                  and not m.__file__.startswith(pkg_dir)})
import numba
print("RESULT " + json.dumps({
    "import": t_import - t_start, "data": t_data - t_import, "fit": t_fit - t_data, "predict": t_pred - t_fit,
    "start_fit": fit_end - launch, "params": params, "file": gputrees.__file__, "foreign": foreign,
    "rows": [int(X_tr.shape[0]), int(X_tr.shape[1])], "numba_threads": numba.config.NUMBA_NUM_THREADS,
    "cache_dir": numba.config.CACHE_DIR,
}))
"""

#: Part 3, run by ``python -c`` in a new process: argv = json config. Prints one line ``RESULT {json}``.
CHILD_PEERS = r"""
import importlib, json, sys, time
import numpy as np
cfg = json.loads(sys.argv[1])
sys.path.insert(0, cfg["pkg_dir"])
pkgs = {label: importlib.import_module(name) for label, name in zip(cfg["labels"], cfg["names"])}
for p in pkgs.values():  # a loop of fits compiles after a few; measure that steady state from the first
    cold_start = getattr(p.kernels, "cold_start", None)
    for family in ("DecisionTreeClassifier", "GradientBoostingClassifier") if cold_start else ():
        cold_start.mark_compiled(family)
datasets = importlib.import_module(cfg["names"][0] + ".datasets")
from threadpoolctl import threadpool_limits
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier
import lightgbm as lgb
import xgboost as xgb

T = cfg["threads"]
d = datasets.load_titanic(as_frame=True)
X, y = d.data, np.asarray(d.target)
codes = X.copy()
for col in X.columns:
    if str(X[col].dtype) == "category":
        c = X[col].cat.codes.to_numpy().astype(np.float64)
        c[c < 0] = np.nan
        codes[col] = c
codes = codes.to_numpy(dtype=np.float64)
idx_tr, idx_te = train_test_split(np.arange(len(y)), test_size=0.25, random_state=0, stratify=y)
titanic = {"gt": (X.iloc[idx_tr], y[idx_tr], X.iloc[idx_te]), "peer": (codes[idx_tr], y[idx_tr], codes[idx_te])}
Xb, yb = load_breast_cancer(return_X_y=True)
cancer = (Xb, yb, Xb)

def tree_models():
    out = {label: (lambda p=p: p.DecisionTreeClassifier(n_jobs=T), "gt", "predict") for label, p in pkgs.items()}
    out["sklearn"] = (lambda: DecisionTreeClassifier(random_state=0), "peer", "predict")
    return out

def boost_models():
    out = {label: (lambda p=p: p.GradientBoostingClassifier(
        n_estimators=100, max_depth=6, learning_rate=0.1, max_bins=255, l2_regularization=1.0,
        min_child_weight=1.0, min_samples_leaf=1, early_stopping=False, random_state=0, n_jobs=T),
        None, "predict_proba") for label, p in pkgs.items()}
    out["xgboost"] = (lambda: xgb.XGBClassifier(
        n_estimators=100, max_depth=6, learning_rate=0.1, tree_method="hist", max_bin=256, reg_lambda=1.0,
        min_child_weight=1.0, grow_policy="depthwise", n_jobs=T, random_state=0), None, "predict_proba")
    out["lightgbm"] = (lambda: lgb.LGBMClassifier(
        n_estimators=100, max_depth=6, num_leaves=64, learning_rate=0.1, max_bin=255, reg_lambda=1.0,
        min_child_weight=1.0, min_child_samples=1, n_jobs=T, random_state=0, verbose=-1), None, "predict_proba")
    out["sklearn-hgb"] = (lambda: HistGradientBoostingClassifier(
        max_iter=100, max_depth=6, max_leaf_nodes=64, learning_rate=0.1, max_bins=255, l2_regularization=1.0,
        min_samples_leaf=1, early_stopping=False, random_state=0), None, "predict_proba")
    return out

items = {"titanic-tree": (tree_models(), titanic), "cancer-boost": (boost_models(), cancer)}
result = {}
with threadpool_limits(T):
    for item, (models, data) in items.items():
        def once(name):
            make, key, method = models[name]
            Xtr, ytr, Xte = data[key] if isinstance(data, dict) else data
            t0 = time.perf_counter()
            m = make().fit(Xtr, ytr)
            t1 = time.perf_counter()
            getattr(m, method)(Xte)
            t2 = time.perf_counter()
            return t1 - t0, t2 - t1
        warm = {name: once(name) for name in models}  # compiles / loads the caches, first-call overheads
        runs = {name: [] for name in models}
        order = list(models)
        for r in range(cfg["repeats"]):
            for name in (order if r % 2 == 0 else order[::-1]):
                runs[name].append(once(name))
        result[item] = {"warmup": warm, "runs": runs}
foreign = sorted(n for n in sys.modules if n == "gputrees" or n.startswith("gputrees."))
print("RESULT " + json.dumps({"items": result, "foreign": foreign,
                              "files": {l: p.__file__ for l, p in pkgs.items()}}))
"""


def label_of(src: Path) -> str:
    """The checkout's git short hash (``+dirty`` with uncommitted changes under gputrees/), else its path."""
    try:
        short = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"], check=True,
                               capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--", "gputrees"], check=True,
                               capture_output=True, text=True).stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return str(src)
    return short + ("+dirty" if dirty else "")


def copy_package(src: Path, dest: Path) -> None:
    """``src/gputrees`` copied to ``dest`` (a package directory) and compiled to bytecode there."""
    shutil.copytree(src / "gputrees", dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"))
    if not compileall.compile_dir(str(dest), quiet=1, workers=1):
        raise SystemExit(f"compileall failed for {dest}")


def child_env(pkg_dir: Path | None, cache_dir: Path) -> dict:
    env = dict(os.environ)
    if pkg_dir is not None:
        env["PYTHONPATH"] = str(pkg_dir)
    else:
        env.pop("PYTHONPATH", None)
    env["NUMBA_CACHE_DIR"] = str(cache_dir)
    env.pop("GPUTREES_KERNELS", None)
    return env


def run_child(code: str, args: list[str], env: dict, cwd: Path, timeout: float = 1800):
    """(result dict or None, wall seconds, stderr tail) of ``python -c code args`` in a new process.

    ``cwd``: a directory without a ``gputrees`` package (``python -c`` puts the working directory first on
    ``sys.path``, ahead of ``PYTHONPATH``)."""
    launch = time.time()
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *[a.replace("LAUNCH", repr(launch)) for a in args]],
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        return None, wall, (proc.stderr or proc.stdout)[-2000:]
    return json.loads(lines[-1][len("RESULT "):]), wall, ""


def cache_stats(cache_dir: Path) -> tuple[float, int, int]:
    """(MiB, files, .nbc files) under a Numba cache directory."""
    size = files = nbc = 0
    for p in cache_dir.rglob("*"):
        if p.is_file():
            size += p.stat().st_size
            files += 1
            nbc += p.suffix == ".nbc"
    return size / 2**20, files, nbc


def fit_process(family: str, pkg_dir: Path, cache_dir: Path, compile_kernels: bool = False):
    """One new process's first fit (``compile_kernels``: on the Numba kernels, whatever the cold start would
    choose); the result dict gets ``wall``, the cache's size after it and ``error``."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    before = cache_stats(cache_dir)
    args = [family, "LAUNCH", str(pkg_dir), json.dumps(FAMILIES[family]), str(THREADS)]
    args += ["compile"] if compile_kernels else []
    res, wall, err = run_child(CHILD_FIT, args, child_env(pkg_dir, cache_dir), cwd=pkg_dir)
    after = cache_stats(cache_dir)
    if res is None:
        return {"error": err, "wall": wall}
    res.update(wall=wall, cache_mib=after[0], cache_files=after[1], grew=after[2] - before[2], error="",
               load=os.getloadavg()[0])
    if res["foreign"] or not res["file"].startswith(str(pkg_dir)):
        res["error"] = f"gputrees modules from outside {pkg_dir}: {(res['foreign'] or [res['file']])[:3]}"
    if res["cache_dir"] != str(cache_dir):
        res["error"] = f"the process's NUMBA_CACHE_DIR is {res['cache_dir']!r}, not {cache_dir}"
    return res


def med(values):
    return statistics.median(values) if values else float("nan")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--src", nargs="+", default=[str(ROOT)],
                   help="checkouts to measure (default: the one this script lives in)")
    p.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    p.add_argument("--repeats", type=int, default=15, help="timed repeats of each in-process peer fit (part 3)")
    p.add_argument("--cold-repeats", type=int, default=1, help="cold processes per family and source")
    p.add_argument("--warm-repeats", type=int, default=3, help="warm-cache processes per family and source")
    p.add_argument("--skip-cold", action="store_true", help="no cold timings (an untimed process fills the cache)")
    p.add_argument("--skip-warm", action="store_true")
    p.add_argument("--skip-peers", action="store_true")
    p.add_argument("--out", help="also write the printout to this file")
    args = p.parse_args(argv)

    lines: list[str] = []

    def out(text=""):
        print(text, flush=True)
        lines.append(text)

    srcs = [Path(s).resolve() for s in args.src]
    for s in srcs:
        if not (s / "gputrees" / "__init__.py").is_file():
            p.error(f"{s} holds no gputrees package")
    labels = [label_of(s) for s in srcs]
    if len(set(labels)) < len(labels):
        labels = [str(s) for s in srcs]
    width = max(11, *(len(lb) for lb in labels))
    started = time.perf_counter()
    import lightgbm
    import numba
    import sklearn
    import xgboost

    out(f"bench_latency.py  {datetime.datetime.now().isoformat(timespec='seconds')}  "
        f"python {platform.python_version()}, numba {numba.__version__}, scikit-learn {sklearn.__version__}, "
        f"xgboost {xgboost.__version__}, lightgbm {lightgbm.__version__}; {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.2f} at the start")
    out("  command: " + " ".join(["bench_latency.py", *(argv if argv is not None else sys.argv[1:])]))
    for i, (lb, s) in enumerate(zip(labels, srcs)):
        out(f"  source #{i} {lb}: {s}")
    # the peers' ratio columns: gputrees/x of each source, headed by its label (or #i where that is long)
    heads = [lb if len(lb) <= 9 else f"#{i}" for i, lb in enumerate(labels)]

    with tempfile.TemporaryDirectory(prefix="bench_latency_") as tmp:
        tmp = Path(tmp)
        pkg_dirs = []
        for i, s in enumerate(srcs):
            copy_package(s, tmp / f"pkg{i}" / "gputrees")
            copy_package(s, tmp / "multi" / f"gputrees_s{i}")
            pkg_dirs.append(tmp / f"pkg{i}")
        # an untimed process per source first: the libraries' files into the OS cache, as for every later process
        for i in range(len(srcs)):
            run_child("import gputrees, numba, sklearn.model_selection, pandas, gputrees.datasets; "
                      "gputrees.datasets.load_titanic(as_frame=True)", [],
                      child_env(pkg_dirs[i], tmp / "cache" / f"prime{i}"), cwd=pkg_dirs[i])
        turn = 0  # every measured item takes the sources in turn, reversed every other time

        def in_turn():
            nonlocal turn
            order = list(range(len(srcs)))
            turn += 1
            return order if turn % 2 else order[::-1]

        cold = {f: {i: [] for i in range(len(srcs))} for f in args.families}
        warm = {f: {i: [] for i in range(len(srcs))} for f in args.families}
        errors = []
        if not (args.skip_cold and args.skip_warm):
            for fam in args.families:
                filled = {}
                reps = 1 if args.skip_cold else args.cold_repeats
                for r in range(reps):
                    for i in in_turn():
                        cache = tmp / "cache" / f"{fam}-{i}-cold{r}"
                        res = fit_process(fam, pkg_dirs[i], cache)
                        if res["error"]:
                            errors.append(f"cold {fam} {labels[i]}: {res['error']}")
                        elif not args.skip_cold:
                            cold[fam][i].append(res)
                        filled[i] = cache
                if not args.skip_warm:
                    for i in in_turn():  # untimed: a cold fit of small data compiles nothing
                        res = fit_process(fam, pkg_dirs[i], filled[i], compile_kernels=True)
                        if res["error"]:
                            errors.append(f"fill {fam} {labels[i]}: {res['error']}")
                    for _ in range(args.warm_repeats):
                        for i in in_turn():
                            res = fit_process(fam, pkg_dirs[i], filled[i])
                            if res["error"]:
                                errors.append(f"warm {fam} {labels[i]}: {res['error']}")
                            else:
                                warm[fam][i].append(res)
                for c in filled.values():
                    shutil.rmtree(c, ignore_errors=True)
                print(f"  ... {fam} done ({time.perf_counter() - started:.0f} s)", flush=True)

        cols = ["import", "data", "fit", "predict", "start_fit", "wall"]
        for part, table in (("cold", cold), ("warm", warm)):
            if (part == "cold" and args.skip_cold) or (part == "warm" and args.skip_warm):
                continue
            n = args.cold_repeats if part == "cold" else args.warm_repeats
            out()
            what = ("an empty NUMBA_CACHE_DIR of its own" if part == "cold"
                    else "the NUMBA_CACHE_DIR a first process filled")
            out(f"[{part}] first fit in a new process, {what}; seconds, median of {n} process(es); "
                f"n_jobs={THREADS} where the estimator has it")
            out(f"  {'family':15s} {'source':>{width}s} {'import':>7s} {'data':>6s} {'fit':>7s} {'predict':>8s} "
                f"{'start>fit':>10s} {'wall':>7s} {'cache MiB':>10s} {'files':>6s} {'load':>5s}"
                + (f" {'grew':>5s}" if part == "warm" else ""))
            for fam in args.families:
                for i in range(len(srcs)):
                    rs = table[fam][i]
                    if not rs:
                        out(f"  {fam:15s} {labels[i]:>{width}s}  ERROR (see below)")
                        continue
                    m = {c: med([x[c] for x in rs]) for c in cols}
                    line = (f"  {fam:15s} {labels[i]:>{width}s} {m['import']:7.2f} {m['data']:6.2f} {m['fit']:7.2f} "
                            f"{m['predict']:8.2f} {m['start_fit']:10.2f} {m['wall']:7.2f} "
                            f"{rs[-1]['cache_mib']:10.1f} {rs[-1]['cache_files']:6d} {max(x['load'] for x in rs):5.2f}")
                    if part == "warm":
                        line += f" {max(x['grew'] for x in rs):5d}"
                    out(line)
            if len(srcs) > 1:
                for i in range(1, len(srcs)):
                    for fam in args.families:
                        a, b = table[fam][0], table[fam][i]
                        if a and b:
                            out(f"  {fam:15s} {labels[i]} / {labels[0]}: fit "
                                f"{med([x['fit'] for x in b]) / med([x['fit'] for x in a]):.3f}, start>fit "
                                f"{med([x['start_fit'] for x in b]) / med([x['start_fit'] for x in a]):.3f}, wall "
                                f"{med([x['wall'] for x in b]) / med([x['wall'] for x in a]):.3f}")
        if not args.skip_cold and not args.skip_warm:
            out()
            out("[cold vs warm] start>fit seconds (process start to the end of the first fit), and the first fit "
                "alone")
            out(f"  {'family':15s} {'source':>{width}s} {'cold':>7s} {'warm':>7s} {'cold/warm':>10s} "
                f"{'fit cold':>9s} {'fit warm':>9s} {'cold-warm':>10s}")
            for fam in args.families:
                for i in range(len(srcs)):
                    c, w = cold[fam][i], warm[fam][i]
                    if c and w:
                        sc, sw = med([x["start_fit"] for x in c]), med([x["start_fit"] for x in w])
                        fc, fw = med([x["fit"] for x in c]), med([x["fit"] for x in w])
                        out(f"  {fam:15s} {labels[i]:>{width}s} {sc:7.2f} {sw:7.2f} {sc / sw:10.1f} "
                            f"{fc:9.2f} {fw:9.2f} {fc - fw:10.2f}")

        if not args.skip_peers:
            cfg = {"pkg_dir": str(tmp / "multi"), "names": [f"gputrees_s{i}" for i in range(len(srcs))],
                   "labels": labels, "repeats": args.repeats, "threads": THREADS}
            res, wall, err = run_child(CHILD_PEERS, [json.dumps(cfg)], child_env(None, tmp / "cache" / "peers"),
                                 cwd=tmp / "multi")
            if res is None:
                errors.append(f"peers: {err}")
            elif res["foreign"]:
                errors.append(f"peers: modules named gputrees loaded (the editable install?): {res['foreign'][:5]}")
            else:
                describe = {
                    "titanic-tree": "Titanic, one DecisionTreeClassifier (defaults), fit on 668 rows + predict 223",
                    "cancer-boost": "breast cancer, 100 rounds depth 6 lr 0.1, fit on 569 rows + predict_proba 569",
                }
                for item, r in res["items"].items():
                    runs = r["runs"]
                    out()
                    out(f"[peers: {item}] {describe[item]}; milliseconds, median of {args.repeats} in one warm "
                        f"process, {THREADS} threads")
                    ratio_cols = "".join(f" {h + '/x':>11s} {'pairs':>6s}" for h in heads)
                    out(f"  {'library':>{width}s} {'fit':>8s} {'predict':>8s} {'total':>8s} {'1st total':>10s}"
                        + ratio_cols)
                    tot = {name: [f + q for f, q in rr] for name, rr in runs.items()}
                    for name, rr in runs.items():
                        fit_ms = med([f for f, _ in rr]) * 1e3
                        pred_ms = med([q for _, q in rr]) * 1e3
                        first = sum(r["warmup"][name]) * 1e3
                        line = (f"  {name:>{width}s} {fit_ms:8.2f} {pred_ms:8.2f} {med(tot[name]) * 1e3:8.2f} "
                                f"{first:10.1f}")
                        for lb in labels:
                            ratio = med(tot[lb]) / med(tot[name])
                            pairs = med([a / b for a, b in zip(tot[lb], tot[name])])
                            line += f" {ratio:11.2f} {pairs:6.2f}"
                        out(line)
                out("  (total = fit + predict; '1st total' = the process's untimed first fit + predict, "
                    "where gputrees compiles its kernels (empty cache); gputrees/x of the totals: "
                    "ratio of the medians, and 'pairs' = median of the repeats' ratios)")
        out()
        for e in errors:
            out("ERROR " + e)
        out(f"total {time.perf_counter() - started:.0f} s; load average {os.getloadavg()[0]:.2f} at the end")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
