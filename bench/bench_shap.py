"""SHAP values: gputrees' ``shap_values`` against XGBoost's ``pred_contribs`` and shap's TreeExplainer.

Two models on ``bench_tree.make_synthetic`` (28 float32 features):

* a booster, ``GradientBoostingClassifier`` with ``--trees`` depth-6 rounds,
  exported with ``export_xgboost_json`` and loaded in ``xgboost.Booster``:
  ``shap_values`` and XGBoost's CPU ``pred_contribs`` on the same
  ``--rows`` rows, the same trees (XGBoost's float32 copy); then interaction
  values against ``pred_interactions`` on ``--interaction-rows`` rows;
* a forest, ``RandomForestClassifier`` with ``--trees`` depth-10 trees: ``shap_values`` against
  shap's ``TreeExplainer`` given the same trees in its dictionary form
  (``--forest-rows`` rows: shap's exact algorithm on a depth-10 forest
  runs at a few hundred rows a second).

Both libraries get ``--threads`` threads (gputrees' ``n_jobs``, XGBoost's
``nthread``; shap's TreeExplainer is single-threaded for this model form). One
untimed warm-up call each (gputrees' kernel compiles on first use), then the
median of ``--repeats`` timed calls; the ratio is gputrees / peer (below 1:
gputrees faster), and the largest difference between the two results.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_tree import make_synthetic  # noqa: E402


def _median_time(fn, repeats):
    out = fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def _shap_dict(forest):
    """shap's dictionary form of a gputrees forest: each tree's probabilities over the tree count."""
    trees = []
    for est in forest.estimators_:
        t = est.tree_
        trees.append(dict(
            children_left=t.children_left, children_right=t.children_right,
            children_default=np.where(t.missing_go_to_left.astype(bool), t.children_left, t.children_right),
            features=np.where(t.feature < 0, -2, t.feature), thresholds=np.where(t.feature < 0, 0.0, t.threshold),
            values=t.value.reshape(t.node_count, -1) / len(forest.estimators_),
            node_sample_weight=t.weighted_n_node_samples,
        ))
    return {"trees": trees}


def bench_booster(args, X, y):
    import gputrees

    est = gputrees.GradientBoostingClassifier(n_estimators=args.trees, max_depth=6, learning_rate=0.1,
                                              l2_regularization=1.0, n_jobs=args.threads, random_state=0)
    est.fit(X, y)
    rows = X[: args.rows]
    t_gt, ours = _median_time(lambda: est.shap_values(rows), args.repeats)
    line = f"booster  {args.trees} trees depth 6, {rows.shape[0]:,} rows: gputrees {t_gt:.3f} s"
    try:
        import xgboost as xgb
    except ImportError:
        print(line + "  (xgboost not installed)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.json")
        est.export_xgboost_json(path)
        booster = xgb.Booster(model_file=path)
    booster.set_param({"nthread": args.threads})
    dm = xgb.DMatrix(rows, missing=np.nan, nthread=args.threads)
    t_x, theirs = _median_time(lambda: booster.predict(dm, pred_contribs=True), args.repeats)
    diff = float(np.abs(ours - theirs).max())
    print(line + f", xgboost pred_contribs {t_x:.3f} s, gt/xgb {t_gt / t_x:.2f}, max |diff| {diff:.2e}")
    if args.interaction_rows:
        few = rows[: args.interaction_rows]
        t_gt, ours = _median_time(lambda: est.shap_values(few, interactions=True), args.repeats)
        dm = xgb.DMatrix(few, missing=np.nan, nthread=args.threads)
        t_x, theirs = _median_time(lambda: booster.predict(dm, pred_interactions=True), args.repeats)
        diff = float(np.abs(ours - theirs).max())
        print(f"booster  interaction values, {few.shape[0]:,} rows: gputrees {t_gt:.3f} s, xgboost "
              f"pred_interactions {t_x:.3f} s, gt/xgb {t_gt / t_x:.3f}, max |diff| {diff:.2e}")


def bench_forest(args, X, y):
    import gputrees

    est = gputrees.RandomForestClassifier(n_estimators=args.trees, max_depth=10, n_jobs=args.threads, random_state=0)
    est.fit(X[: args.forest_train_rows], y[: args.forest_train_rows])
    rows = X[: args.forest_rows].astype(np.float64)
    t_gt, ours = _median_time(lambda: est.shap_values(rows), args.repeats)
    line = f"forest   {args.trees} trees depth 10, {rows.shape[0]:,} rows: gputrees {t_gt:.3f} s"
    try:
        import shap
    except ImportError:
        print(line + "  (shap not installed)")
        return
    explainer = shap.TreeExplainer(_shap_dict(est))
    t_s, theirs = _median_time(lambda: explainer.shap_values(rows), args.repeats)
    diff = float(np.abs(ours[:, :-1, :] - np.asarray(theirs)).max())
    print(line + f", shap TreeExplainer {t_s:.3f} s, gt/shap {t_gt / t_s:.3f}, max |diff| {diff:.2e}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=100_000, help="rows explained by the booster")
    p.add_argument("--interaction-rows", type=int, default=500, help="rows of the booster's interaction values")
    p.add_argument("--forest-rows", type=int, default=2_000, help="rows explained by the forest")
    p.add_argument("--forest-train-rows", type=int, default=20_000, help="rows the forest is fitted on")
    p.add_argument("--trees", type=int, default=100)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--only", choices=["booster", "forest"], default=None)
    args = p.parse_args(argv)
    X, y = make_synthetic(max(args.rows, args.forest_train_rows, args.forest_rows), 28, np.float32, 0)
    if args.only != "forest":
        bench_booster(args, X, y)
    if args.only != "booster":
        bench_forest(args, X, y)


if __name__ == "__main__":
    main()
