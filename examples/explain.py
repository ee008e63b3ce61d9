"""SHAP values: a booster's explanations on Adult, and one Titanic passenger's prediction taken apart.

Run:  python examples/explain.py [--fast] [--data-dir DIR] [--out DIR]

Adult (../shared/data/adult.csv, or --data-dir): a 200-round depth-6
``GradientBoostingClassifier`` on the 14 census columns (text columns as
pandas categories, split natively; missing values stay missing). Its exact
SHAP values (``model.shap_values``: log-odds of income > 50K, one value per
feature and the bias, summing to ``decision_function``) on 2,000 test rows
give the mean |SHAP| of each feature, and ``shap_beeswarm.png``: shap's
beeswarm where the shap package is installed (``gputrees.explain.TreeExplainer``
gives it a ``shap.Explanation``), else ``gputrees.plot.plot_shap_summary``.

Titanic (bundled): a depth-4 ``RandomForestClassifier`` of 100 trees; one
passenger's survival probability as the forest's mean probability plus one
contribution per column (``shap_waterfall.png``: shap's waterfall, or a bar
chart without shap). Pictures need matplotlib. ``--fast``: 4,000 Adult rows,
50 rounds, 500 rows explained (the tests run this).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gputrees  # noqa: E402
from _common import parser, pyplot, save  # noqa: E402
from boosting import DEFAULT_DATA_DIR, load_adult  # noqa: E402
from gputrees.datasets import load_titanic  # noqa: E402
from gputrees.explain import TreeExplainer  # noqa: E402


def _has_shap() -> bool:
    try:
        import shap  # noqa: F401
    except ImportError:
        return False
    return True


def adult_beeswarm(args, plt):
    """Fit the booster on Adult, print each feature's mean |SHAP|, draw the beeswarm; returns the figures."""
    X, y = load_adult(args.data_dir)
    rounds, n_explained = (50, 500) if args.fast else (200, 2000)
    if args.fast:
        keep = np.random.default_rng(0).choice(len(y), 4000, replace=False)
        X, y = X.iloc[keep].reset_index(drop=True), y[keep]
    X_tr, X_te, y_tr, _ = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    model = gputrees.GradientBoostingClassifier(n_estimators=rounds, max_depth=6, learning_rate=0.1,
                                                random_state=0, device=args.device).fit(X_tr, y_tr)
    rows = X_te.iloc[:n_explained]
    phi = model.shap_values(rows)  # (rows, features + 1): log-odds, the bias last
    gap = float(np.abs(phi.sum(axis=1) - model.decision_function(rows)).max())
    print(f"Adult: {rounds} rounds, {len(rows):,} rows explained; bias (mean log-odds) {phi[0, -1]:.3f}; "
          f"largest |sum of SHAP values - decision_function| {gap:.1e}")
    mean_abs = np.abs(phi[:, :-1]).mean(axis=0)
    print("mean |SHAP value| (log-odds):")
    for j in np.argsort(-mean_abs)[:6]:
        print(f"  {X.columns[j]:16s} {mean_abs[j]:.3f}")
    if plt is None:
        return {"adult_mean_abs": mean_abs, "adult_gap": gap}
    if _has_shap():
        import shap

        explanation = TreeExplainer(model)(rows)
        shap.plots.beeswarm(explanation, max_display=12, show=False)
        fig = plt.gcf()
    else:
        from gputrees.plot import plot_shap_summary

        fig = plot_shap_summary(model, rows, top_k=12).figure
    fig.suptitle("Gradient boosting on Adult: SHAP values (log-odds of income > 50K)")
    save(fig, args.out, "shap_beeswarm.png")
    return {"adult_mean_abs": mean_abs, "adult_gap": gap}


def titanic_waterfall(args, plt, passenger=1):
    """Fit the forest on Titanic, print one passenger's contributions, draw the waterfall."""
    data = load_titanic(as_frame=True)
    X, y = data.data, np.asarray(data.target)
    forest = gputrees.RandomForestClassifier(n_estimators=100, max_depth=4, random_state=0,
                                             device=args.device).fit(X, y)
    row = X.iloc[[passenger]]
    phi = forest.shap_values(row)[0, :, 1]  # probability of survival: features, then the bias
    proba = float(forest.predict_proba(row)[0, 1])
    print(f"\nTitanic passenger {passenger}: survival probability {proba:.3f} = mean {phi[-1]:.3f}")
    for name, value, c in zip(X.columns, row.iloc[0], phi[:-1]):
        print(f"  {name:10s} = {str(value):10s} {c:+.3f}")
    if plt is not None:
        if _has_shap():
            import shap

            explanation = TreeExplainer(forest)(row)
            shap.plots.waterfall(explanation[0, :, 1], show=False)
            fig = plt.gcf()
        else:
            fig, ax = plt.subplots(figsize=(6, 3.5))
            order = np.argsort(np.abs(phi[:-1]))
            ax.barh(np.arange(len(order)), phi[:-1][order], color=np.where(phi[:-1][order] > 0, "C3", "C0"))
            ax.set_yticks(np.arange(len(order)), [f"{X.columns[j]} = {row.iloc[0, j]}" for j in order])
            ax.set_xlabel(f"contribution to P(survived) (mean {phi[-1]:.3f}, this passenger {proba:.3f})")
        fig.suptitle(f"Random forest on Titanic: passenger {passenger}")
        save(fig, args.out, "shap_waterfall.png")
    return {"titanic_phi": phi, "titanic_proba": proba}


def main(argv=None):
    p = parser(__doc__)
    p.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR), help="folder holding adult.csv")
    args = p.parse_args(argv)
    plt = pyplot()
    if plt is None:
        print("matplotlib is not installed: no pictures")
    out = adult_beeswarm(args, plt)
    out.update(titanic_waterfall(args, plt))
    return out


if __name__ == "__main__":
    main()
