"""Overfitting in one picture: tree depth against training and test error, and the regions each depth draws.

Run:  python examples/overfitting.py [--fast] [--device cuda] [--out DIR]

Noisy two moons (noise 0.35, half held out for test). As the depth grows the
training error falls to about 0 while the test error falls, then rises: the
deep trees carve small regions around single noisy points. Prints the error
table and, when matplotlib is installed, saves overfitting_regions.png: the
error curves and the decision regions of depths 1, 3 and 10
(``gputrees.plot.plot_decision_boundary``). ``examples/overfitting_depth.py``
goes on with min_samples_leaf and pruning.
"""

from __future__ import annotations

import sys
from pathlib import Path

from sklearn.datasets import make_moons
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gputrees  # noqa: E402
from _common import parser, pyplot, save  # noqa: E402
from overfitting_depth import DEPTHS, _sweep  # noqa: E402

SHOWN = [1, 3, 10]


def main(argv=None):
    args = parser(__doc__).parse_args(argv)
    n = 400 if args.fast else 1000
    X, y = make_moons(n_samples=n, noise=0.35, random_state=0)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, random_state=0)
    dev = {"device": args.device}
    print(f"two moons, {n} points, noise 0.35: {len(y_train)} to train, {len(y_test)} to test\n")
    table = _sweep("max_depth", DEPTHS, X_train, y_train, X_test, y_test, dev)
    best = min(DEPTHS, key=lambda d: table[d][1])
    print(f"\nlowest test error at depth {best}; depth {DEPTHS[-1]} fits the training set to {table[DEPTHS[-1]][0]:.3f}")
    picture = None
    plt = pyplot()
    if plt is not None:
        from gputrees.plot import plot_decision_boundary

        fig, axes = plt.subplots(1, 1 + len(SHOWN), figsize=(5 * (1 + len(SHOWN)), 4))
        axes[0].plot(DEPTHS, [table[d][0] for d in DEPTHS], "o-", label="training error")
        axes[0].plot(DEPTHS, [table[d][1] for d in DEPTHS], "o-", label="test error")
        axes[0].set_xlabel("max_depth")
        axes[0].set_ylabel("error")
        axes[0].legend()
        for ax, depth in zip(axes[1:], SHOWN):
            tree = gputrees.DecisionTreeClassifier(max_depth=depth, **dev).fit(X_train, y_train)
            plot_decision_boundary(tree, X_train, y_train, sizes=[8.0] * len(y_train), ax=ax)
            ax.set_title(f"max_depth={depth}: {tree.get_n_leaves()} leaves, test error {table[depth][1]:.3f}")
        picture = save(fig, args.out, "overfitting_regions.png")
    return {"depth": table, "best_depth": best, "picture": picture}


if __name__ == "__main__":
    main()
