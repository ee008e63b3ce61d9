"""The Titanic passenger list (Kaggle train.csv, 891 rows), as used in the course notes."""

from __future__ import annotations

import csv
from importlib import resources

import numpy as np
from sklearn.utils import Bunch

FEATURES = ["Pclass", "Sex", "Age", "SibSp", "Parch", "Fare", "Embarked"]
_SEX = ["male", "female"]
_EMBARKED = ["C", "Q", "S"]


def _rows():
    with resources.files(__package__).joinpath("data/titanic.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def _number(s: str) -> float:
    return float(s) if s != "" else np.nan


def load_titanic(*, as_frame: bool = False, return_X_y: bool = False):
    """Load the Titanic data: 891 passengers, target ``Survived`` (0 died, 1 survived).

    Features: Pclass, Sex, Age (177 missing), SibSp, Parch, Fare, Embarked (2 missing).

    Parameters
    ----------
    as_frame : bool, default=False
        False: ``data`` is a float64 array of shape (891, 7), Sex coded
        0=male/1=female, Embarked coded 0=C/1=Q/2=S, missing values NaN.
        True: ``data`` is a pandas DataFrame with Sex and Embarked of the
        ``category`` dtype (needs pandas); ``frame`` also holds the target.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    Bunch with ``data``, ``target`` (int64, shape (891,)), ``feature_names``,
    ``target_names`` (["died", "survived"]), ``categorical_features``
    (["Sex", "Embarked"]) and ``frame`` (as_frame=True only).
    """
    rows = _rows()
    target = np.asarray([int(r["Survived"]) for r in rows], dtype=np.int64)
    X = np.empty((len(rows), len(FEATURES)), dtype=np.float64)
    for i, r in enumerate(rows):
        X[i] = [
            _number(r["Pclass"]),
            _SEX.index(r["Sex"]),
            _number(r["Age"]),
            _number(r["SibSp"]),
            _number(r["Parch"]),
            _number(r["Fare"]),
            _EMBARKED.index(r["Embarked"]) if r["Embarked"] else np.nan,
        ]
    frame = None
    data = X
    if as_frame:
        import pandas as pd

        data = pd.DataFrame(X, columns=FEATURES)
        for col, labels in (("Sex", _SEX), ("Embarked", _EMBARKED)):
            codes = data[col].to_numpy()
            data[col] = pd.Categorical.from_codes(
                np.where(np.isnan(codes), -1, codes).astype(int), categories=labels
            )
        for col in ("Pclass", "SibSp", "Parch"):
            data[col] = data[col].astype("int64")
        frame = data.assign(Survived=target)
    if return_X_y:
        return data, target
    return Bunch(
        data=data,
        target=target,
        frame=frame,
        feature_names=list(FEATURES),
        target_names=["died", "survived"],
        categorical_features=["Sex", "Embarked"],
        DESCR=load_titanic.__doc__,
    )
