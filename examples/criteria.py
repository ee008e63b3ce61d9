"""The course notes' three impurity criteria: Gini, entropy and classification error.

Run:  python examples/criteria.py [--fast] [--device cuda] [--out DIR]

1. For a two-class node with a fraction p of the second class: Gini index
   2p(1 - p), entropy -p log2 p - (1 - p) log2(1 - p) and classification
   error 1 - max(p, 1 - p), printed for a few p and plotted (criteria.png,
   with matplotlib). All three are 0 for pure nodes and largest at p = 0.5
   (0.5, 1 and 0.5). The root impurity of gputrees' trees on the Titanic
   data (p = 342/891) is checked against these formulas.
2. Trees grown with each criterion (max_depth=4, and fully grown) on the
   Titanic passengers: root split, size, training and test accuracy, and how
   often two criteria's trees agree on the test passengers. Gini and entropy
   give similar trees. Classification error ignores how pure the children
   become: a split that leaves both children's majority class unchanged
   gains nothing, so at depth 4 it finds fewer useful splits; grown fully
   (where a zero decrease still splits, min_impurity_decrease=0) it peels
   rows off one by one into a far deeper tree. ``--fast`` skips the fully
   grown trees.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gputrees  # noqa: E402
from _common import parser, pyplot, save  # noqa: E402
from gputrees.datasets import load_titanic  # noqa: E402

CRITERIA = ["gini", "entropy", "misclassification"]


def impurities(p):
    """Gini, entropy (bits) and classification error of a two-class node, per p (array)."""
    p = np.asarray(p, dtype=np.float64)
    q = 1.0 - p
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = 0.0 - np.where(p > 0, p * np.log2(p), 0.0) - np.where(q > 0, q * np.log2(q), 0.0) + 0.0
    return {"gini": 2 * p * q, "entropy": ent, "misclassification": 1.0 - np.maximum(p, q)}


def main(argv=None):
    args = parser(__doc__).parse_args(argv)
    print("1. Impurity of a two-class node with a fraction p of class 1")
    ps = np.asarray([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
    table = impurities(ps)
    print(f"   {'p':>5s} " + " ".join(f"{c:>17s}" for c in CRITERIA))
    for i, p in enumerate(ps):
        print(f"   {p:5.2f} " + " ".join(f"{table[c][i]:17.4f}" for c in CRITERIA))

    data = load_titanic(as_frame=True)
    X, y = data.data, data.target
    p_survived = float(np.mean(y))
    root = {}
    for c in CRITERIA:
        est = gputrees.DecisionTreeClassifier(criterion=c, max_depth=1, device=args.device).fit(X, y)
        root[c] = float(est.tree_.impurity[0])
    expected = {c: float(v) for c, v in impurities(p_survived).items()}
    print(f"   Titanic root, p = 342/891 = {p_survived:.4f}: " + ", ".join(
        f"{c} {root[c]:.4f} (formula {expected[c]:.4f})" for c in CRITERIA))  # fmt: skip

    print("\n2. Trees grown with each criterion on the Titanic passengers")
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    settings = [("max_depth=4", {"max_depth": 4})]
    if not args.fast:
        settings.append(("fully grown", {}))
    trees = {}
    print(f"   {'setting':12s} {'criterion':18s} {'root split':18s} {'depth':>5s} {'leaves':>6s} {'train acc':>9s} {'test acc':>8s}")
    for label, params in settings:
        for c in CRITERIA:
            est = gputrees.DecisionTreeClassifier(criterion=c, device=args.device, **params).fit(X_train, y_train)
            t = est.tree_
            root_split = data.feature_names[t.feature[0]] if t.node_count > 1 else "(none)"
            acc_train = float(np.mean(np.asarray(est.predict(X_train)) == y_train))
            acc_test = float(np.mean(np.asarray(est.predict(X_test)) == y_test))
            trees[(label, c)] = {
                "root_split": root_split,
                "depth": est.get_depth(),
                "leaves": est.get_n_leaves(),
                "train_accuracy": acc_train,
                "test_accuracy": acc_test,
                "test_predictions": np.asarray(est.predict(X_test)),
            }
            print(f"   {label:12s} {c:18s} {root_split:18s} {est.get_depth():5d} {est.get_n_leaves():6d} "
                  f"{acc_train:9.3f} {acc_test:8.3f}")  # fmt: skip
    agreement = {}
    for label, _ in settings:
        for i, a in enumerate(CRITERIA):
            for b in CRITERIA[i + 1 :]:
                same = float(np.mean(trees[(label, a)]["test_predictions"] == trees[(label, b)]["test_predictions"]))
                agreement[(label, a, b)] = same
                print(f"   {label}: {a} and {b} agree on {same:.1%} of the test passengers")

    plt = pyplot()
    if plt is not None:
        grid = np.linspace(0, 1, 201)
        curves = impurities(grid)
        fig, ax = plt.subplots(figsize=(5, 3.6))
        for c, label in zip(CRITERIA, ["Gini index", "Entropy (bits)", "Classification error"]):
            ax.plot(grid, curves[c], label=label)
        ax.set_xlabel("p (fraction of class 1 in the node)")
        ax.set_ylabel("impurity")
        ax.legend()
        ax.set_title("Impurity of a two-class node")
        save(fig, args.out, "criteria.png")
    for t in trees.values():
        t.pop("test_predictions")
    return {
        "p": ps.tolist(),
        "impurities": {c: v.tolist() for c, v in table.items()},
        "titanic_root": root,
        "titanic_root_formula": expected,
        "trees": trees,
        "agreement": agreement,
    }


if __name__ == "__main__":
    main()
