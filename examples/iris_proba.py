"""The course notes' iris tree: class probabilities from a depth-2 tree on the petals.

Run:  python examples/iris_proba.py [--device cuda] [--out DIR]

A tree of depth 2 on petal length and width (Hands-on ML, ch. 6). The flower
with petals of 5 cm by 1.5 cm lands in the leaf holding 0 setosa, 49
versicolor and 5 virginica, so predict_proba gives [0, 49/54, 5/54] =
[0, 0.907, 0.093] and predict gives class 1 (versicolor). Also prints the
leaf's Gini impurity and entropy (0.445 in the notes) and, with matplotlib,
saves the decision regions (iris_regions.png) and the tree (iris_tree.png).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from sklearn.datasets import load_iris

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gputrees  # noqa: E402
from _common import parser, plot_tree, pyplot, save  # noqa: E402

FEATURES = ["petal length (cm)", "petal width (cm)"]


def main(argv=None):
    args = parser(__doc__).parse_args(argv)
    iris = load_iris()
    X = iris.data[:, 2:4]
    y = iris.target
    names = list(iris.target_names)

    tree = gputrees.DecisionTreeClassifier(max_depth=2, device=args.device).fit(X, y)
    print(gputrees.export_text(tree, feature_names=FEATURES, class_names=names, show_details=True))

    flower = np.asarray([[5.0, 1.5]])
    proba = np.asarray(tree.predict_proba(flower))[0]
    pred = int(np.asarray(tree.predict(flower))[0])
    leaf = int(np.asarray(tree.apply(flower))[0])
    t = tree.tree_
    counts = np.rint(t.value[leaf, 0] * t.weighted_n_node_samples[leaf]).astype(int)
    p = counts / counts.sum()
    entropy = -sum(q * math.log2(q) for q in p if q > 0)
    gini = 1.0 - float(np.sum(p**2))
    print(f"predict_proba([[5, 1.5]]) = [{', '.join(f'{v:.3f}' for v in proba)}]")
    print(f"predict([[5, 1.5]]) = [{pred}]  ({names[pred]})")
    print(f"its leaf holds {counts.tolist()} flowers: gini {gini:.3f}, entropy {entropy:.3f} bits")

    plt = pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(6, 4))
        gx, gy = np.meshgrid(np.linspace(0, 7.5, 300), np.linspace(0, 3, 200))
        grid = np.c_[gx.ravel(), gy.ravel()]
        regions = np.asarray(tree.predict(grid)).reshape(gx.shape)
        ax.contourf(gx, gy, regions, alpha=0.25, levels=[-0.5, 0.5, 1.5, 2.5], colors=["C0", "C1", "C2"])
        for k, name in enumerate(names):
            ax.scatter(X[y == k, 0], X[y == k, 1], s=12, color=f"C{k}", label=name)
        ax.scatter([5.0], [1.5], marker="*", s=150, color="k", label="(5, 1.5)")
        ax.set_xlabel(FEATURES[0])
        ax.set_ylabel(FEATURES[1])
        ax.legend(fontsize=8)
        ax.set_title("Decision regions of the depth-2 tree")
        save(fig, args.out, "iris_regions.png")
        save(plot_tree(tree, FEATURES, names, title="Iris, max_depth=2"), args.out, "iris_tree.png")
    return {
        "proba": proba.tolist(),
        "predict": pred,
        "leaf_counts": counts.tolist(),
        "gini": gini,
        "entropy": entropy,
    }


if __name__ == "__main__":
    main()
