"""GPU benchmark of issue 7: gputrees' cuda kernels against the same run's CPU peers.

Run (on a machine with an NVIDIA GPU, CuPy, numba-cuda, xgboost and lightgbm):

    python bench/bench_gpu.py [--rows 1000000 10000000] [--rounds 100] [--threads 16]
                              [--forest-rows 1000000] [--level-wise] [--skip-peers | --peers xgboost ...]
                              [--out bench/results]
    python bench/bench_gpu.py --dry-run     # tiny sizes, numba-cuda's simulator, no GPU needed

What it measures, in one process (``--dry-run`` re-runs itself with
``NUMBA_ENABLE_CUDASIM=1`` and tiny sizes to check the script's logic on a CPU):

* GBDT: ``bench_tree.make_synthetic`` (binary, 28 float32 features) for each
  ``--rows``, ``--rounds`` rounds of depth ``--depth``, 256 bins (255 value
  bins + missing; XGBoost ``max_bin=256``, LightGBM 255), learning rate 0.1,
  L2 1, minimum hessian 1, no minimum row count, no early stopping. gputrees
  on the GPU (CuPy input, the cuda kernels, quantised gradients; with
  ``--level-wise`` also with ``GPUTREES_DEVICE_STEP=0``), gputrees on
  the CPU (NumPy input, the Numba kernels, ``--threads`` threads), XGBoost
  and LightGBM CPU builds with ``n_jobs=--threads``. Fit time of one fit after
  a warm-up fit and prediction on 10,000 rows (which compile the kernels; their
  time is reported as ``compile_s``), test ROC AUC on 20% held-out rows.
* Prediction throughput: rows per second of ``predict_proba`` of each GBDT
  model on the held-out rows.
* Random forest: ``--forest-trees`` trees of depth ``--forest-depth`` (0: no
  limit, the forests' default) on ``--forest-rows`` rows (0: none), gputrees
  GPU and CPU, scikit-learn's RandomForestClassifier with ``n_jobs=--threads``.
* Histogram kernel: the root histogram of all rows (one slot, 3 channels,
  int64 quantised sums), median of 10 launches; bytes read = ``n F`` (uint8
  codes) + ``24 n`` (row, channel row and node, int64) + ``24 n`` (three
  float64 channels); achieved GB/s against the device's peak bandwidth
  (memory clock x bus width from the device properties, else the data-sheet
  figure of :data:`PEAK_GBPS`).

Targets (issue 7): 10M x 28 GBDT in <= 2 s on an H100; the histogram kernel
at >= 50% of the peak bandwidth; >= 20x the best 16-core CPU peer on 10M
rows. The results go to ``--out`` as ``gpu-<device>-<date>.json`` and
``.md`` (a markdown table), with the device name and date.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

#: Data-sheet peak memory bandwidth (GB/s) of the GPUs the issue names, used
#: when the device properties do not give the memory clock (CUDA 13 dropped it).
PEAK_GBPS = {"H100 SXM": 3350.0, "H100 PCIe": 2000.0, "H100 NVL": 3900.0, "H200": 4800.0}
#: Rows of the warm-up fit that compiles the cuda kernels before timing.
WARMUP_ROWS = 10_000
PEERS = ("numba", "xgboost", "lightgbm", "sklearn", "xgboost-gpu")
DRY = dict(rows=[300, 600], features=4, rounds=3, depth=3, max_bins=15, forest_trees=3, forest_depth=4,
           forest_rows=300, warmup_rows=100, hist_repeats=2)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    p.add_argument("--features", type=int, default=28)
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--depth", type=int, default=6)
    p.add_argument("--max-bins", type=int, default=255)
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--forest-rows", type=int, default=1_000_000)
    p.add_argument("--forest-trees", type=int, default=100)
    p.add_argument("--forest-depth", type=int, default=10, help="0: max_depth=None (the forests' default)")
    p.add_argument("--skip-peers", action="store_true", help="GPU only (no XGBoost, LightGBM, scikit-learn, Numba)")
    p.add_argument("--level-wise", action="store_true",
                   help="also time the GPU fit with GPUTREES_DEVICE_STEP=0 (every tree level by level)")
    p.add_argument("--peers", nargs="*", choices=PEERS, default=[p for p in PEERS if p != "xgboost-gpu"],
                   help="the runs beside gputrees' GPU fit (numba: gputrees' own CPU kernels; xgboost-gpu: "
                        "XGBoost's CUDA build on the same GPU, where installed)")
    p.add_argument("--defaults", action="store_true",
                   help="also gputrees at its own defaults (min_samples_leaf=20, early stopping on above 10k rows)")
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--dry-run", action="store_true", help="tiny sizes in numba-cuda's simulator (no GPU)")
    args = p.parse_args(argv)
    args.warmup_rows, args.hist_repeats = WARMUP_ROWS, 10
    if args.skip_peers:
        args.peers = []
    if args.dry_run:
        for k, v in DRY.items():
            setattr(args, k, v)
    return args


# -- device ------------------------------------------------------------------------
class Device:
    """The GPU (CuPy) or, in a dry run, the simulator on NumPy arrays."""

    def __init__(self, dry):
        self.dry = dry
        if dry:
            self.cp, self.name, self.peak_gbps = None, "numba-cuda simulator (CPU)", None
            return
        import cupy

        self.cp = cupy
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props["name"]
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        clock_khz, bus_bits = props.get("memoryClockRate", 0), props.get("memoryBusWidth", 0)
        if clock_khz and bus_bits:
            self.peak_gbps = 2.0 * clock_khz * 1e3 * bus_bits / 8 / 1e9  # double data rate
        else:
            self.peak_gbps = next((v for k, v in PEAK_GBPS.items() if all(w in self.name for w in k.split())), None)

    def put(self, a):
        return a if self.dry else self.cp.asarray(a)

    def sync(self):
        if not self.dry:
            self.cp.cuda.Device().synchronize()


def timed(fn, dev=None):
    if dev is not None:
        dev.sync()
    t = time.perf_counter()
    out = fn()
    if dev is not None:
        dev.sync()
    return time.perf_counter() - t, out


def host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


# -- models --------------------------------------------------------------------------
def gbdt(library, args, threads=None, gpu=False):
    lr, l2, mch = 0.1, 1.0, 1.0
    if library == "gputrees":
        import gputrees

        return gputrees.GradientBoostingClassifier(
            n_estimators=args.rounds, max_depth=args.depth, learning_rate=lr, max_bins=args.max_bins,
            l2_regularization=l2, min_child_weight=mch, min_samples_leaf=1, early_stopping=False,
            random_state=0, n_jobs=threads, quantised_gradients=True if gpu else "auto",
        )
    if library == "gputrees-defaults":  # what a user who sets only the rounds and depth runs
        import gputrees

        return gputrees.GradientBoostingClassifier(n_estimators=args.rounds, max_depth=args.depth, random_state=0,
                                                   n_jobs=threads)
    if library == "xgboost":
        import xgboost

        return xgboost.XGBClassifier(
            n_estimators=args.rounds, max_depth=args.depth, learning_rate=lr, max_bin=args.max_bins + 1,
            reg_lambda=l2, min_child_weight=mch, tree_method="hist", n_jobs=threads, random_state=0,
            device="cuda" if gpu else "cpu",
        )
    if library == "lightgbm":
        import lightgbm

        return lightgbm.LGBMClassifier(
            n_estimators=args.rounds, max_depth=args.depth, num_leaves=2**args.depth, learning_rate=lr,
            max_bin=args.max_bins, reg_lambda=l2, min_child_weight=mch, min_child_samples=1, n_jobs=threads,
            random_state=0, verbose=-1,
        )
    raise ValueError(library)


def xgboost_has_cuda() -> bool:
    """Whether the installed XGBoost is a CUDA build (the xgboost-cpu wheel is not); says so when not."""
    try:
        import xgboost

        ok = bool(xgboost.build_info().get("USE_CUDA"))
    except Exception as exc:  # not installed, or an older build_info
        print(f"XGBoost GPU: not available ({type(exc).__name__}: {exc})", flush=True)
        return False
    if not ok:
        print(f"XGBoost GPU: the installed XGBoost {xgboost.__version__} is not a CUDA build", flush=True)
    return ok


def run_gbdt(args, dev, n_rows, results):
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split

    from bench_tree import make_synthetic

    X, y = make_synthetic(int(n_rows / 0.8), args.features, np.float32, seed=0)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0)
    Xw, yw = Xtr[: args.warmup_rows], ytr[: args.warmup_rows]
    peers = {"numba": ("gputrees CPU (Numba)", "gputrees", False), "xgboost": ("XGBoost CPU", "xgboost", False),
             "xgboost-gpu": ("XGBoost GPU", "xgboost", True),
             "lightgbm": ("LightGBM CPU", "lightgbm", False)}
    gpu = [("gputrees GPU", "gputrees", True)]
    if args.level_wise and not args.dry_run:  # the simulator always takes the device step
        gpu.append(("gputrees GPU, level by level", "gputrees", True))
    if args.defaults:
        gpu.append(("gputrees GPU, defaults", "gputrees-defaults", True))
    entries = gpu + [peers[p] for p in PEERS if p in args.peers and p in peers
                     and not (p == "xgboost-gpu" and (args.dry_run or not xgboost_has_cuda()))]
    for label, library, on_gpu in entries:
        env_kernels = os.environ.pop("GPUTREES_KERNELS", None)
        os.environ["GPUTREES_DEVICE_STEP"] = "0" if label.endswith("level by level") else "1"
        if on_gpu and args.dry_run:
            os.environ["GPUTREES_KERNELS"] = "cuda"  # NumPy arrays through the simulated cuda kernels
        try:
            put = dev.put if on_gpu else (lambda a: a)
            threads = None if on_gpu else args.threads
            # the warm-up fits and predicts, so that both compile before the timed calls
            compile_s, _ = timed(lambda: gbdt(library, args, threads, on_gpu).fit(put(Xw), put(yw))
                                 .predict_proba(put(Xw)), dev if on_gpu else None)
            Xtr_d, ytr_d, Xte_d = put(Xtr), put(ytr), put(Xte)
            model = gbdt(library, args, threads, on_gpu)
            fit_s, _ = timed(lambda: model.fit(Xtr_d, ytr_d), dev if on_gpu else None)
            pred_s, proba = timed(lambda: model.predict_proba(Xte_d), dev if on_gpu else None)
            auc = float(roc_auc_score(yte, host(proba)[:, 1]))
        finally:
            os.environ.pop("GPUTREES_KERNELS", None)
            if env_kernels is not None:
                os.environ["GPUTREES_KERNELS"] = env_kernels
        results.append(dict(task="gbdt", rows=int(n_rows), model=label, fit_s=fit_s, compile_s=compile_s,
                            predict_rows_per_s=len(Xte) / pred_s, auc=auc))
        rounds = getattr(model, "n_iter_", None)
        print(f"gbdt {n_rows:>10} {label:<26} fit {fit_s:8.3f} s  predict {len(Xte) / pred_s:12.0f} rows/s  "
              f"AUC {auc:.4f}" + (f"  rounds {rounds}" if rounds is not None else ""), flush=True)


def run_forest(args, dev, results):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.metrics import roc_auc_score

    import gputrees
    from bench_tree import make_synthetic

    X, y = make_synthetic(args.forest_rows, args.features, np.float32, seed=1)
    Xte, yte = X[: len(X) // 5], y[: len(X) // 5]
    kw = dict(n_estimators=args.forest_trees, max_depth=args.forest_depth or None, random_state=0)
    entries = [("gputrees GPU", True)] + [(label, False) for p, label in
                                          (("numba", "gputrees CPU (Numba)"), ("sklearn", "scikit-learn CPU"))
                                          if p in args.peers]
    for label, on_gpu in entries:
        if label.startswith("scikit"):
            model = RandomForestClassifier(n_jobs=args.threads, **kw)
        else:
            model = gputrees.RandomForestClassifier(max_bins=args.max_bins, n_jobs=None if on_gpu else args.threads,
                                                    **kw)
        put = dev.put if on_gpu else (lambda a: a)
        if on_gpu and args.dry_run:
            os.environ["GPUTREES_KERNELS"] = "cuda"
        try:
            Xd, yd = put(X), put(y)
            fit_s, _ = timed(lambda: model.fit(Xd, yd), dev if on_gpu else None)
            auc = float(roc_auc_score(yte, host(model.predict_proba(put(Xte)))[:, 1]))
        finally:
            os.environ.pop("GPUTREES_KERNELS", None)
        results.append(dict(task="forest", rows=args.forest_rows, depth=kw["max_depth"], model=label, fit_s=fit_s,
                            auc=auc))
        print(f"forest {args.forest_rows:>8} depth {kw['max_depth']} {label:<22} fit {fit_s:8.3f} s  AUC {auc:.4f}",
              flush=True)


def run_histogram(args, dev, n_rows, results):
    """Achieved bandwidth of the root histogram (one slot, all rows, int64 quantised sums)."""
    from gputrees._backend import namespace_for, namespace_of
    from gputrees.kernels import ActiveRows, _cuda, quantisation_scale, quantise

    xp = namespace_of(np.empty(0)) if args.dry_run else namespace_for(None, "cuda")
    rng = np.random.default_rng(2)
    n_bins = args.max_bins + 1
    codes = dev.put(rng.integers(0, n_bins, (n_rows, args.features), dtype=np.uint8))
    chan = np.stack([np.ones(n_rows), rng.standard_normal(n_rows), rng.random(n_rows)], axis=1)
    scale = quantisation_scale(namespace_of(chan), chan, n_rows)
    chan = dev.put(quantise(namespace_of(chan), chan, scale))
    idx = xp.arange(n_rows, dtype=xp.int64)
    active = ActiveRows(row=idx, chan_index=idx, node=xp.zeros(n_rows, dtype=xp.int64))
    table = xp.zeros(1, dtype=xp.int64)

    def launch():
        return _cuda.node_histograms(xp, codes, active, chan, table, 1, n_bins, scale=scale)

    launch()  # compile
    times = [timed(launch, dev)[0] for _ in range(args.hist_repeats)]
    sec = statistics.median(times)
    bytes_read = n_rows * args.features + 24 * n_rows + 24 * n_rows
    gbps = bytes_read / sec / 1e9
    share = None if dev.peak_gbps is None else gbps / dev.peak_gbps
    results.append(dict(task="histogram", rows=int(n_rows), model="cuda node_histograms", time_s=sec,
                        achieved_gbps=gbps, peak_gbps=dev.peak_gbps, share_of_peak=share))
    print(f"histogram {n_rows:>8} {sec * 1e3:9.3f} ms  {gbps:8.2f} GB/s"
          + ("" if share is None else f"  {100 * share:.1f}% of {dev.peak_gbps:.0f} GB/s"), flush=True)


def markdown(meta, results):
    lines = [f"# GPU benchmark: {meta['device']}, {meta['date']}", "",
             f"Command: `{meta['command']}`" + (" (dry run: simulator, tiny sizes)" if meta["dry_run"] else ""), "",
             "| task | rows | model | fit s | predict rows/s | AUC | GB/s (share of peak) |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: |"]

    def num(v, spec):
        return "" if v is None else format(v, spec)

    for r in results:
        bw = ""
        if r["task"] == "histogram":
            bw = num(r["achieved_gbps"], ".1f") + ("" if r["share_of_peak"] is None else
                                                   f" ({100 * r['share_of_peak']:.0f}%)")
        lines.append(f"| {r['task']} | {r['rows']} | {r['model']} | {num(r.get('fit_s', r.get('time_s')), '.3f')} | "
                     f"{num(r.get('predict_rows_per_s'), '.0f')} | {num(r.get('auc'), '.4f')} | {bw} |")
    lines += ["", "Speed-ups of gputrees GPU over the best CPU peer (fit; over XGBoost GPU where it ran):", ""]
    for rows in sorted({r["rows"] for r in results if r["task"] == "gbdt"}):
        fits = {r["model"]: r["fit_s"] for r in results if r["task"] == "gbdt" and r["rows"] == rows}
        peers = [v for k, v in fits.items() if "CPU" in k]
        if peers and "gputrees GPU" in fits:
            line = f"- GBDT {rows} rows: {min(peers) / fits['gputrees GPU']:.1f}x"
            if "XGBoost GPU" in fits:
                line += f"; XGBoost GPU {fits['XGBoost GPU'] / fits['gputrees GPU']:.2f}x"
            lines.append(line)
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = parse_args(argv)
    if args.dry_run and os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        # the simulator must be on before numba.cuda is first imported: run again in a fresh process
        env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
        return subprocess.call([sys.executable, __file__] + (sys.argv[1:] if argv is None else list(argv)), env=env)
    dev = Device(args.dry_run)
    results = []
    for n_rows in args.rows:
        run_histogram(args, dev, n_rows, results)
        run_gbdt(args, dev, n_rows, results)
    if args.forest_rows:
        run_forest(args, dev, results)
    now = dt.datetime.now(dt.timezone.utc)
    meta = dict(device=dev.name, date=now.strftime("%Y-%m-%d %H:%M UTC"), dry_run=args.dry_run,
                command="python bench/bench_gpu.py " + " ".join(sys.argv[1:] if argv is None else argv),
                threads=args.threads, cpu_count=os.cpu_count())
    args.out.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", dev.name).strip("-").lower()
    stem = args.out / f"gpu-{'dry-run-' if args.dry_run else ''}{slug}-{now.strftime('%Y%m%d-%H%M')}"
    stem.with_suffix(".json").write_text(json.dumps(dict(meta=meta, results=results), indent=2) + "\n")
    stem.with_suffix(".md").write_text(markdown(meta, results))
    print(f"wrote {stem}.json and {stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
