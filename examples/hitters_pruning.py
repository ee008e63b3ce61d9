"""The course notes' Hitters example: a regression tree of log(Salary), pruned by cost complexity.

Run:  python examples/hitters_pruning.py [--fast] [--device cuda] [--out DIR]

1. On Years and Hits of the 263 players with a salary, the three-region tree
   of the course (max_leaf_nodes=3): Years <= 4.5 (mean log salary 5.107,
   about $165,000), Years > 4.5 and Hits <= 117.5 (5.999), Years > 4.5 and
   Hits > 117.5 (6.740).
2. On all 19 features, half of the players for training: grow a large tree,
   take its cost-complexity pruning path, score every alpha of the path by
   6-fold cross-validation (scikit-learn's GridSearchCV), keep the best, and
   plot training, cross-validation and test MSE against the number of leaves
   with standard-error bands, as in the course figure (hitters_pruning.png,
   with matplotlib). ``--fast`` scores only the 12 largest alphas (the
   smallest trees).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from sklearn.model_selection import GridSearchCV, KFold, train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gputrees  # noqa: E402
from _common import parser, pyplot, save  # noqa: E402
from gputrees.datasets import load_hitters  # noqa: E402


def _mse(est, X, y):
    return float(np.mean((np.asarray(est.predict(X)) - y) ** 2))


def three_regions(data, y, device):
    """The Years / Hits tree of the course; returns its leaves left to right."""
    X = data.data[["Years", "Hits"]]
    tree = gputrees.DecisionTreeRegressor(max_leaf_nodes=3, device=device).fit(X, y)
    print(gputrees.export_text(tree, show_details=True))
    t = tree.tree_
    leaves = []

    def walk(node, text):
        if t.children_left[node] < 0:
            leaves.append((" and ".join(text), float(t.value[node, 0, 0]), int(t.n_node_samples[node])))
            return
        name, thr = ("Years", "Hits")[t.feature[node]], t.threshold[node]
        walk(t.children_left[node], text + [f"{name} <= {thr:g}"])
        walk(t.children_right[node], text + [f"{name} > {thr:g}"])

    walk(0, [])
    for text, mean, n in leaves:
        print(f"  {text:32s} {n:3d} players, mean log salary {mean:.3f}: ${np.exp(mean) * 1000:,.0f}")
    return leaves


def main(argv=None):
    args = parser(__doc__).parse_args(argv)
    data = load_hitters(as_frame=True)
    y = np.log(data.target)
    print(f"Hitters: {len(y)} players with a salary; target log(Salary in $1000)\n")
    print("1. Years and Hits, three regions:")
    leaves = three_regions(data, y, args.device)

    print("\n2. All features, cost-complexity pruning chosen by 6-fold cross-validation:")
    X_train, X_test, y_train, y_test = train_test_split(data.data, y, test_size=0.5, random_state=1)
    big = gputrees.DecisionTreeRegressor(random_state=0, device=args.device)
    path = big.cost_complexity_pruning_path(X_train, y_train)
    alphas = path.ccp_alphas[:-1]  # the last alpha leaves the root alone
    if args.fast:
        alphas = alphas[-12:]
    full = big.fit(X_train, y_train)
    print(f"   large tree: {full.get_n_leaves()} leaves, test MSE {_mse(full, X_test, y_test):.3f}; "
          f"{len(path.ccp_alphas)} alphas on its path, {len(alphas)} scored")  # fmt: skip

    search = GridSearchCV(
        gputrees.DecisionTreeRegressor(random_state=0, device=args.device),
        {"ccp_alpha": list(alphas)},
        cv=KFold(6, shuffle=True, random_state=0),
        scoring="neg_mean_squared_error",
    ).fit(X_train, y_train)
    cv_mse = -search.cv_results_["mean_test_score"]
    cv_se = search.cv_results_["std_test_score"] / np.sqrt(6)
    n_leaves, train_mse, test_mse = [], [], []
    for a in alphas:
        est = gputrees.DecisionTreeRegressor(random_state=0, ccp_alpha=a, device=args.device).fit(X_train, y_train)
        n_leaves.append(est.get_n_leaves())
        train_mse.append(_mse(est, X_train, y_train))
        test_mse.append(_mse(est, X_test, y_test))
    best = int(np.argmin(cv_mse))
    print(f"   {'leaves':>6s} {'alpha':>8s} {'train':>7s} {'CV':>7s} {'(se)':>6s} {'test':>7s}")
    for i in np.argsort(n_leaves)[:15]:
        mark = "  <- lowest CV MSE" if i == best else ""
        print(f"   {n_leaves[i]:6d} {alphas[i]:8.4f} {train_mse[i]:7.3f} {cv_mse[i]:7.3f} {cv_se[i]:6.3f} {test_mse[i]:7.3f}{mark}")
    print(f"   chosen: ccp_alpha={alphas[best]:.4f}, {n_leaves[best]} leaves, CV MSE {cv_mse[best]:.3f}, "
          f"test MSE {test_mse[best]:.3f}")  # fmt: skip

    plt = pyplot()
    if plt is not None:
        order = np.argsort(n_leaves)
        leaves_sorted = np.asarray(n_leaves)[order]
        fig, ax = plt.subplots(figsize=(6, 4))
        for values, se, label, color in (
            (train_mse, None, "Training", "k"),
            (cv_mse, cv_se, "Cross-validation", "C1"),
            (test_mse, None, "Test", "C2"),
        ):
            v = np.asarray(values)[order]
            ax.plot(leaves_sorted, v, "o-", ms=3, color=color, label=label)
            if se is not None:
                s = np.asarray(se)[order]
                ax.fill_between(leaves_sorted, v - s, v + s, color=color, alpha=0.2)
        ax.axvline(n_leaves[best], color="0.5", ls=":")
        ax.set_xscale("log")
        ax.set_xlabel("Tree size (number of leaves)")
        ax.set_ylabel("Mean squared error")
        ax.set_title("Hitters: cost-complexity pruning")
        ax.legend()
        save(fig, args.out, "hitters_pruning.png")
    return {
        "three_region_means": [m for _, m, _ in leaves],
        "three_region_sizes": [n for _, _, n in leaves],
        "n_path_alphas": len(path.ccp_alphas),
        "path_impurities": path.impurities.tolist(),
        "alphas": list(map(float, alphas)),
        "n_leaves": n_leaves,
        "cv_mse": cv_mse.tolist(),
        "best_alpha": float(alphas[best]),
        "best_leaves": n_leaves[best],
        "best_test_mse": test_mse[best],
        "full_tree_leaves": full.get_n_leaves(),
        "full_tree_test_mse": _mse(full, X_test, y_test),
    }


if __name__ == "__main__":
    main()
