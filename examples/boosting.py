"""Gradient boosting with early stopping on Adult, and its learning curve.

Run:  python examples/boosting.py [--fast] [--device cuda] [--data-dir DIR] [--out DIR]

Predicts income > 50K from the 14 census columns of UCI Adult (32,561 rows;
../shared/data/adult.csv relative to the repository root, or --data-dir).
The text columns are passed as pandas ``category`` columns and split
natively; missing values stay missing. A quarter of the rows is the test
set; of the rest, 10% is held out as the validation set that early stopping
watches (``eval_set``). The model boosts up to 1,000 depth-6 trees at
learning rate 0.1 and stops once the validation log-loss has not improved
for 20 rounds; it keeps the rounds up to the best one.

Prints the round it stopped at, the best round, the test accuracy and ROC
AUC (scikit-learn's metrics), and the most important features by gain, and
saves ``boosting_learning_curve.png``: training and validation log-loss per
round, with the best round marked. ``--fast`` uses 4,000 rows and at most
200 rounds (the tests run this).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gputrees  # noqa: E402
from _common import parser, pyplot, save  # noqa: E402

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def load_adult(data_dir):
    """Adult as a DataFrame (text columns as ``category``) and y = 1 for income >50K."""
    path = Path(data_dir) / "adult.csv"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: pass --data-dir, the folder holding adult.csv")
    df = pd.read_csv(path, skipinitialspace=True, na_values=["?"])
    y = (df.pop("income").astype(str).str.strip().str.rstrip(".") == ">50K").to_numpy(np.int64)
    for name in df.columns:
        if not pd.api.types.is_numeric_dtype(df[name]):
            df[name] = df[name].astype("category")
    return df, y


def main(argv=None):
    p = parser(__doc__)
    p.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR), help="folder holding adult.csv")
    args = p.parse_args(argv)
    X, y = load_adult(args.data_dir)
    max_rounds = 1000
    if args.fast:
        keep = np.random.default_rng(0).choice(len(y), 4000, replace=False)
        X, y = X.iloc[keep].reset_index(drop=True), y[keep]
        max_rounds = 200
    X_trval, X_test, y_trval, y_test = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    X_tr, X_val, y_tr, y_val = train_test_split(
        X_trval, y_trval, test_size=0.1, random_state=0, stratify=y_trval
    )
    model = gputrees.GradientBoostingClassifier(
        n_estimators=max_rounds,
        learning_rate=0.1,
        max_depth=6,
        early_stopping=True,
        n_iter_no_change=20,
        random_state=0,
        device=args.device,
        verbose=50,
    )
    t0 = time.perf_counter()
    model.fit(X_tr, y_tr, eval_set=[(X_val, y_val)])
    fit_s = time.perf_counter() - t0
    n_fitted = len(model.train_score_) - 1
    proba = model.predict_proba(X_test)[:, 1]
    acc = accuracy_score(y_test, model.predict(X_test))
    auc = roc_auc_score(y_test, proba)
    print(f"\n{len(y_tr):,} training rows, {len(y_val):,} validation rows, {len(y_test):,} test rows")
    print(f"stopped after {n_fitted} rounds; best round {model.best_iteration_ + 1} "
          f"(kept {model.n_iter_} rounds), fit {fit_s:.1f} s")  # fmt: skip
    print(f"test accuracy {acc:.4f}, ROC AUC {auc:.4f}")
    imp = model.feature_importances_
    print("most important features (share of the total gain):")
    for j in np.argsort(imp)[::-1][:5]:
        print(f"  {X.columns[j]:16s} {imp[j]:.3f}")
    plt = pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(6.5, 4))
        rounds = np.arange(n_fitted + 1)
        ax.plot(rounds, -model.train_score_, label="training log-loss")
        ax.plot(rounds, -model.validation_score_, label="validation log-loss")
        ax.axvline(model.best_iteration_ + 1, color="grey", ls="--", label=f"best round ({model.best_iteration_ + 1})")
        ax.set_xlabel("boosting round")
        ax.set_ylabel("log-loss")
        ax.set_title("Gradient boosting on Adult: learning curve")
        ax.legend()
        save(fig, args.out, "boosting_learning_curve.png")
    else:
        print("matplotlib is not installed: no learning-curve picture")
    return {
        "n_fitted": n_fitted,
        "best_iteration": model.best_iteration_,
        "n_iter": model.n_iter_,
        "accuracy": acc,
        "auc": auc,
        "train_loss": -model.train_score_,
        "validation_loss": -model.validation_score_,
    }


if __name__ == "__main__":
    main()
