"""Dask: boost trees on data read with dask.dataframe, on a local cluster of worker processes.

The whole flow: start a cluster (here two worker processes on this machine;
in production, connect a Client to your scheduler or use dask-cuda's
LocalCUDACluster for one worker per GPU), read a CSV lazily with
dask.dataframe, encode its text columns, split train/test, fit
``DaskGradientBoostingClassifier`` (the rows stay on the workers; only
histograms travel), predict lazily on the workers, then save the model, which
loads as a plain ``gputrees.GradientBoostingClassifier`` anywhere.

Run::

    python examples/dask_boosting.py                     # bundled Titanic CSV
    python examples/dask_boosting.py --csv ../shared/data/adult.csv --target income
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import parser  # noqa: E402

TITANIC = Path(__file__).resolve().parent.parent / "gputrees" / "datasets" / "data" / "titanic.csv"


def main(argv=None):
    p = parser(__doc__)
    p.add_argument("--csv", default=str(TITANIC), help="CSV file to train on")
    p.add_argument("--target", default="Survived", help="label column")
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args(argv)

    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster
    from pandas.api.types import is_numeric_dtype
    from sklearn.metrics import roc_auc_score

    import gputrees
    from gputrees.dask import DaskGradientBoostingClassifier

    with LocalCluster(
        n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    ) as cluster, Client(cluster):
        df = dd.read_csv(args.csv, blocksize="16MB", assume_missing=True)
        y_raw = df[args.target]
        X = df.drop(columns=[args.target])
        # text columns with few distinct values become category codes (missing stays NaN); others are dropped
        for c in [c for c, t in X.dtypes.items() if not is_numeric_dtype(t)]:
            values = sorted(X[c].dropna().unique().compute())
            if len(values) <= 64:
                X[c] = X[c].map({v: float(i) for i, v in enumerate(values)}, meta=(c, "f8"))
            else:
                X = X.drop(columns=[c])
        positive = sorted(y_raw.dropna().unique().compute())[-1]
        y = (y_raw == positive).astype("i8")
        X = X.astype("f8")
        # every fifth row of each partition is a test row
        is_test = df.map_partitions(lambda d: pd.Series(np.arange(len(d)) % 5 == 0, index=d.index), meta=(None, bool))
        X_train, X_test = X[~is_test], X[is_test]
        y_train, y_test = y[~is_test], y[is_test]
        X_train, y_train = X_train.persist(), y_train.persist()

        model = DaskGradientBoostingClassifier(n_estimators=10 if args.fast else 200, max_depth=4, learning_rate=0.1)
        t0 = time.perf_counter()
        model.fit(X_train, y_train)
        fit_s = time.perf_counter() - t0
        proba = model.predict_proba(X_test)  # lazy: runs on the workers
        p_test = proba.compute().to_numpy()[:, 1]
        auc = roc_auc_score(y_test.compute().to_numpy(), p_test)
        hist = [e for e in model.exchanges_ if e.kind == "histograms"]
        print(f"columns: {list(model.feature_names_in_)}")
        print(f"fit {model.n_iter_} rounds on {args.workers} workers in {fit_s:.1f} s, {len(hist)} tree levels")
        print(f"test AUC {auc:.4f}; median histogram bytes per level {np.median([e.bytes_received for e in hist]):.0f}")
        path = Path(args.out) / "dask_boosting.gpt"
        path.parent.mkdir(parents=True, exist_ok=True)
        model.save_model(path)
        loaded = gputrees.load_model(path)
        print(f"saved to {path}; loads as {type(loaded).__name__}")
        return {"auc": auc, "loaded": loaded, "model": model, "X_test": X_test.compute()}


if __name__ == "__main__":
    main()
