"""The README's main job: a classification tree on the bundled Titanic data.

Run:  make demo            (or: python examples/demo_titanic.py [--device cuda])

Fits a depth-3 tree on Pclass, Sex, Age, SibSp, Parch, Fare and Embarked (Sex
and Embarked split as categories, missing Age and Embarked handled natively),
prints the rules it learned, the feature importances and the accuracy on a
held-out quarter of the passengers, next to scikit-learn's tree when it is
installed.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.model_selection import train_test_split

import gputrees
from gputrees.datasets import load_titanic


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--max-depth", type=int, default=3)
    args = parser.parse_args(argv)

    data = load_titanic(as_frame=True)  # Sex and Embarked as pandas categories
    X, y = data.data, data.target
    print(f"Titanic: {X.shape[0]} passengers, {int((y == 0).sum())} died / {int((y == 1).sum())} survived")
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)

    tree = gputrees.DecisionTreeClassifier(
        max_depth=args.max_depth,
        min_samples_split=20,
        min_samples_leaf=5,
        device=args.device,
    )
    start = time.perf_counter()
    if args.device == "cuda":
        import cupy as cp

        tree.fit(X_train, cp.asarray(y_train))  # device="cuda" moves X to the GPU
        acc = float((cp.asarray(tree.predict(X_test)) == cp.asarray(y_test)).mean())
    else:
        tree.fit(X_train, y_train)
        acc = tree.score(X_test, y_test)
    elapsed = time.perf_counter() - start

    names = data.feature_names
    print(f"\nWhat the tree learned (max_depth={args.max_depth}, device={args.device}):")
    print(gputrees.export_text(tree, class_names=data.target_names, show_details=True))
    print("Feature importances:")
    for name, imp in sorted(zip(names, tree.feature_importances_), key=lambda t: -t[1]):
        print(f"  {name:9s} {imp:.3f}")
    print(f"\ngputrees test accuracy: {acc:.3f}  (fit + predict {elapsed * 1000:.1f} ms)")
    try:
        from sklearn.tree import DecisionTreeClassifier

        sk = DecisionTreeClassifier(max_depth=args.max_depth, min_samples_split=20, min_samples_leaf=5, random_state=0)
        codes = X.assign(Sex=X.Sex.cat.codes, Embarked=X.Embarked.cat.codes.replace(-1, np.nan))
        sk.fit(codes.loc[X_train.index], y_train)
        acc_sk = sk.score(codes.loc[X_test.index], y_test)
        print(f"scikit-learn test accuracy (Sex/Embarked as codes): {acc_sk:.3f}")
    except ImportError:  # pragma: no cover
        pass
    return acc


if __name__ == "__main__":
    main()
