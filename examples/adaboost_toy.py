"""The course notes' AdaBoost toy example: ten points, axis-parallel stumps, three rounds.

Run:  python examples/adaboost_toy.py [--device cuda] [--out adaboost_toy.png]

The notes' slides ("AdaBoost Example", weak classifiers "only allowed to be
lines that are either horizontal or vertical") show the figure of Freund and
Schapire's tutorial without its coordinates, and print the coefficients
w_1 = 0.41, w_2 = 0.66, w_3 = 0.93. Ten equally weighted points give errors
that are multiples of the row weights; the tutorial's run has errors 3/10,
3/14 and 3/22, hence

    w_1 = 1/2 ln(7/3)  = 0.4236
    w_2 = 1/2 ln(11/3) = 0.6496
    w_3 = 1/2 ln(19/3) = 0.9229

(the tutorial's 0.42, 0.65, 0.92; the slides' figures are off by 0.01). The
points below (6 positive, 4 negative, on a 10 x 10 grid) are ours: with them
the default weak learner, a gputrees Gini stump (DecisionTreeClassifier(
max_depth=1)), picks in each round a stump that misclassifies three points
(x <= 3.5, then y <= 5.5, then y > 1.5 for the positive class), with a clear
margin over every other stump, and the vote sign(w_1 h_1 + w_2 h_2 + w_3 h_3)
classifies all ten points correctly. (The figure's own layout -- vertical,
vertical, horizontal -- makes the first round a tie between the two
vertical stumps, so a Gini stump cannot reproduce it; only the numbers are
the tutorial's.)

Prints every round's stump, misclassified points, weighted error, learner
weight and row weights, and, with matplotlib (optional), saves a picture of
the three stumps (point sizes: the row weights of that round) and of the
combined classifier to --out (a .png path, or a folder for adaboost_toy.png;
default ./adaboost_toy.png).
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gputrees  # noqa: E402
from _common import pyplot, save  # noqa: E402
from gputrees.plot import plot_decision_boundary  # noqa: E402

#: The ten points (x, y) and their labels (+1 / -1).
X = np.array(
    [[7, 2], [5, 4], [10, 5], [2, 8], [1, 3], [3, 9], [4, 1], [6, 7], [9, 6], [8, 10]],
    dtype=np.float64,
)
Y = np.array([1, 1, 1, 1, 1, 1, -1, -1, -1, -1])
NAMES = ["x", "y"]


def _parser():
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="train on the CPU (NumPy) or the GPU (CuPy)")
    p.add_argument("--fast", action="store_true", help="accepted for uniformity with the other examples (this one is tiny)")
    p.add_argument(
        "--out",
        default="adaboost_toy.png",
        help="where to save the picture: a .png path, or a folder (adaboost_toy.png in it)",
    )
    return p


def _picture_path(out: str):
    path = Path(out)
    if path.suffix.lower() == ".png":
        return str(path.parent), path.name
    return str(path), "adaboost_toy.png"


def _stump_rule(stump):
    """(feature, threshold, class left, class right) of a fitted gputrees stump."""
    t = stump.tree_
    left, right = t.children_left[0], t.children_right[0]
    classes = stump.classes_
    return (
        int(t.feature[0]),
        float(t.threshold[0]),
        int(classes[int(np.argmax(t.value[left, 0]))]),
        int(classes[int(np.argmax(t.value[right, 0]))]),
    )


def _fraction(v: float) -> str:
    f = Fraction(v).limit_denominator(1000)
    return f"{f.numerator}/{f.denominator}"


def main(argv=None):
    args = _parser().parse_args(argv)
    model = gputrees.AdaBoostClassifier(n_estimators=3, device=args.device).fit(X, Y)
    row_weights = [np.asarray(w) for w in model.staged_sample_weight(X, Y)]
    rules, missed = [], []
    print(f"{len(Y)} points, {int((Y == 1).sum())} positive and {int((Y == -1).sum())} negative; all weights 1/10")
    for t, (stump, err, w_t, rw) in enumerate(
        zip(model.estimators_, model.estimator_errors_, model.estimator_weights_, row_weights), start=1
    ):
        f, thr, left, right = _stump_rule(stump)
        rules.append((f, thr, left, right))
        wrong = np.flatnonzero(np.asarray(stump.predict(X)) != Y)
        missed.append(wrong.tolist())
        print(f"\nround {t}: weights {' '.join(_fraction(v) for v in rw)}")
        print(f"  stump: {NAMES[f]} <= {thr:g} -> {left:+d}, else {right:+d}")
        print(f"  misclassified points {wrong.tolist()}: weighted error err_{t} = {err:.4f} = {_fraction(err)}")
        print(f"  w_{t} = 1/2 ln((1 - err_{t}) / err_{t}) = 1/2 ln({_fraction((1 - err) / err)}) = {w_t:.4f}")
    terms = " + ".join(f"{w:.2f} * h_{t}(x)" for t, w in enumerate(model.estimator_weights_, start=1))
    accuracy = float(np.mean(np.asarray(model.predict(X)) == Y))
    print(f"\ncombined classifier: sign({terms}); training accuracy {accuracy:.0%}")
    print("(the course slides print w = 0.41, 0.66, 0.93; Freund and Schapire's tutorial 0.42, 0.65, 0.92)")

    picture = None
    plt = pyplot()
    if plt is not None:
        folder, name = _picture_path(args.out)
        fig, axes = plt.subplots(1, 4, figsize=(16, 4.2))
        weights = model.estimator_weights_
        panels = [
            (stump, rw, missed[t], f"round {t + 1}: w_{t + 1} = {weights[t]:.2f}")
            for t, (stump, rw) in enumerate(zip(model.estimators_, row_weights))
        ]
        vote = " + ".join(f"{w:.2f} h_{t}" for t, w in enumerate(weights, start=1))
        panels.append((model, np.full(len(Y), 0.1), [], f"combined: sign({vote})"))
        for ax, (est, rw, wrong, title) in zip(axes, panels):
            # regions over [0, 11]^2: the points span [1, 10], and the plot adds a margin of 1
            plot_decision_boundary(est, X, ax=ax, alpha=0.8, levels=[-2, 0, 2], colors=["#c8e6c9", "#bbdefb"])
            sizes = 1500 * rw
            for label, marker, color in ((1, "P", "C0"), (-1, "_", "C2")):
                m = Y == label
                ax.scatter(X[m, 0], X[m, 1], s=sizes[m], marker=marker, color=color, linewidths=3)
            if wrong:
                ax.scatter(X[wrong, 0], X[wrong, 1], s=sizes[wrong] * 2.2, facecolors="none", edgecolors="r")
            ax.set_xlim(0, 11)
            ax.set_ylim(0, 11)
            ax.set_aspect("equal")
            ax.set_title(title, fontsize=9)
        fig.suptitle("AdaBoost toy example: blue +1, green -1; marker size = row weight of the round; red rings: misclassified")
        picture = save(fig, folder, name)
    else:
        print("matplotlib is not installed: no picture")
    return {
        "errors": model.estimator_errors_.tolist(),
        "weights": model.estimator_weights_.tolist(),
        "row_weights": [rw.tolist() for rw in row_weights],
        "stumps": rules,
        "misclassified": missed,
        "train_accuracy": accuracy,
        "picture": picture,
    }


if __name__ == "__main__":
    main()
