"""Overfitting as in the course notes: training error goes to 0 with depth while test error rises.

Run:  python examples/overfitting_depth.py [--fast] [--device cuda] [--out DIR]

On noisy two-moons data (noise 0.35, half of the points held out for test):

1. trees of depth 1, 2, 3, 5 and 10 (the notes' table): training error falls
   to about 0, test error falls then rises again;
2. the same with min_samples_leaf (1, 5, 10, 20, 50), depth unlimited: larger
   leaves regularise;
3. reduced-error pruning: a fully grown tree on two thirds of the training
   points, pruned with the last third (``tree.prune``), and the
   ``pruning="reduced_error"`` option that holds the third out itself.

Saves the error curves and the decision regions before and after pruning
(overfitting.png) when matplotlib is installed. ``--fast`` uses 400 points
instead of 1000.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from sklearn.datasets import make_moons
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gputrees  # noqa: E402
from _common import parser, pyplot, save  # noqa: E402
from gputrees.plot import plot_decision_boundary  # noqa: E402

DEPTHS = [1, 2, 3, 5, 10]
LEAF_SIZES = [1, 5, 10, 20, 50]


def _error(est, X, y):
    return float(np.mean(np.asarray(est.predict(X)) != y))


def _sweep(param, values, X_train, y_train, X_test, y_test, dev):
    """Training and test error of a tree for each value of one parameter: {value: (train, test)}."""
    print(f"{param:>16s} {'leaves':>7s} {'train error':>12s} {'test error':>11s}")
    table = {}
    for v in values:
        est = gputrees.DecisionTreeClassifier(**{param: v}, **dev).fit(X_train, y_train)
        table[v] = (_error(est, X_train, y_train), _error(est, X_test, y_test))
        print(f"{v:16d} {est.get_n_leaves():7d} {table[v][0]:12.3f} {table[v][1]:11.3f}")
    return table


def main(argv=None):
    args = parser(__doc__).parse_args(argv)
    n = 400 if args.fast else 1000
    X, y = make_moons(n_samples=n, noise=0.35, random_state=0)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, random_state=0)
    Tree = gputrees.DecisionTreeClassifier
    dev = {"device": args.device}

    print(f"two moons, {n} points, noise 0.35: {len(y_train)} to train, {len(y_test)} to test\n")
    by_depth = _sweep("max_depth", DEPTHS, X_train, y_train, X_test, y_test, dev)
    print()
    by_leaf = _sweep("min_samples_leaf", LEAF_SIZES, X_train, y_train, X_test, y_test, dev)

    print("\nreduced-error pruning (validation set: a third of the training points)")
    X_grow, X_val, y_grow, y_val = train_test_split(X_train, y_train, test_size=1 / 3, random_state=0)
    grown = Tree(**dev).fit(X_grow, y_grow)
    before = (grown.get_n_leaves(), _error(grown, X_val, y_val), _error(grown, X_test, y_test))
    pruned = Tree(**dev).fit(X_grow, y_grow).prune(X_val, y_val)
    after = (pruned.get_n_leaves(), _error(pruned, X_val, y_val), _error(pruned, X_test, y_test))
    print(f"   grown:  {before[0]:3d} leaves, validation error {before[1]:.3f}, test error {before[2]:.3f}")
    print(f"   pruned: {after[0]:3d} leaves, validation error {after[1]:.3f}, test error {after[2]:.3f} "
          f"({len(pruned.pruned_nodes_)} node(s) made leaves)")  # fmt: skip
    option = Tree(pruning="reduced_error", validation_fraction=1 / 3, random_state=0, **dev).fit(X_train, y_train)
    print(f"   pruning='reduced_error': {option.get_n_leaves()} leaves, test error {_error(option, X_test, y_test):.3f}")

    plt = pyplot()
    if plt is not None:
        fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
        for ax, table, xs, label in ((axes[0], by_depth, DEPTHS, "max_depth"), (axes[1], by_leaf, LEAF_SIZES, "min_samples_leaf")):
            ax.plot(xs, [table[k][0] for k in xs], "o-", label="training error")
            ax.plot(xs, [table[k][1] for k in xs], "o-", label="test error")
            ax.set_xlabel(label)
            ax.set_ylabel("error")
            ax.legend()
        for ax, est, title in ((axes[2], grown, f"grown: {before[0]} leaves"), (axes[3], pruned, f"pruned: {after[0]} leaves")):
            plot_decision_boundary(est, X_grow, y_grow, sizes=np.full(len(y_grow), 6.0), alpha=0.3, ax=ax)
            ax.set_title(title)
        save(fig, args.out, "overfitting.png")
    return {
        "depth": by_depth,
        "min_samples_leaf": by_leaf,
        "reduced_error": {
            "leaves_before": before[0],
            "leaves_after": after[0],
            "validation_error_before": before[1],
            "validation_error_after": after[1],
            "test_error_before": before[2],
            "test_error_after": after[2],
            "validation_errors": pruned.validation_errors_.tolist(),
        },
    }


if __name__ == "__main__":
    main()
