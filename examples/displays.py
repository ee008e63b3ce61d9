"""scikit-learn's displays with gputrees estimators: ROC curves and a confusion matrix.

Run:  python examples/displays.py [--fast] [--device cuda] [--out DIR]

gputrees estimators are scikit-learn estimators, so ``RocCurveDisplay`` and
``ConfusionMatrixDisplay`` take them as they are (nothing in gputrees
rewrites them). On breast cancer (a quarter held out for test) it fits a
tree, a random forest and gradient boosting, prints each test ROC AUC and the
forest's confusion matrix (scikit-learn's metrics), and, with matplotlib,
saves displays.png: the three ROC curves on one Axes, the confusion matrix,
and the booster's feature importances and learning curve (``gputrees.plot``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from sklearn.datasets import load_breast_cancer
from sklearn.metrics import confusion_matrix, roc_auc_score
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gputrees  # noqa: E402
from _common import parser, pyplot, save  # noqa: E402


def main(argv=None):
    args = parser(__doc__).parse_args(argv)
    data = load_breast_cancer()
    X_train, X_test, y_train, y_test = train_test_split(
        data.data, data.target, test_size=0.25, stratify=data.target, random_state=0
    )
    n_trees = 20 if args.fast else 200
    dev = {"device": args.device}
    models = {
        "tree (depth 4)": gputrees.DecisionTreeClassifier(max_depth=4, random_state=0, **dev),
        "random forest": gputrees.RandomForestClassifier(n_estimators=n_trees, random_state=0, **dev),
        "gradient boosting": gputrees.GradientBoostingClassifier(n_estimators=n_trees, early_stopping=False, **dev),
    }
    models["gradient boosting"].set_params(random_state=0)
    auc = {}
    for name, model in models.items():
        if name == "gradient boosting":
            model.fit(X_train, y_train, eval_set=[(X_test, y_test)])
        else:
            model.fit(X_train, y_train)
        proba = model.predict_proba(X_test)[:, 1]  # NumPy in, NumPy out (also with device='cuda')
        auc[name] = float(roc_auc_score(y_test, proba))
        print(f"{name:>18s}: test ROC AUC {auc[name]:.4f}")
    forest = models["random forest"]
    cm = confusion_matrix(y_test, forest.predict(X_test))
    print(f"random forest confusion matrix (rows: true {', '.join(map(str, data.target_names))}):\n{cm}")
    picture = None
    plt = pyplot()
    if plt is not None:
        from sklearn.metrics import ConfusionMatrixDisplay, RocCurveDisplay

        from gputrees.plot import plot_importance, plot_learning_curve

        fig, axes = plt.subplots(1, 4, figsize=(22, 5))
        for name, model in models.items():
            RocCurveDisplay.from_estimator(model, X_test, y_test, name=name, ax=axes[0])
        ConfusionMatrixDisplay.from_estimator(forest, X_test, y_test, display_labels=data.target_names, ax=axes[1])
        axes[1].set_title("random forest, test set")
        booster = models["gradient boosting"]
        plot_importance(booster, top_k=10, feature_names=list(data.feature_names), ax=axes[2])
        plot_learning_curve(booster, ax=axes[3])
        fig.tight_layout()
        picture = save(fig, args.out, "displays.png")
    return {"auc": auc, "confusion_matrix": cm, "picture": picture}


if __name__ == "__main__":
    main()
