"""The Hitters data (ISLR): 1986-87 Major League Baseball players and their 1987 salaries."""

from __future__ import annotations

import csv
from importlib import resources

import numpy as np
from sklearn.utils import Bunch

FEATURES = [
    "AtBat", "Hits", "HmRun", "Runs", "RBI", "Walks", "Years", "CAtBat", "CHits", "CHmRun",
    "CRuns", "CRBI", "CWalks", "League", "Division", "PutOuts", "Assists", "Errors", "NewLeague",
]  # fmt: skip
CATEGORIES = {"League": ["A", "N"], "Division": ["E", "W"], "NewLeague": ["A", "N"]}


def load_hitters(*, as_frame: bool = False, return_X_y: bool = False):
    """Load the Hitters data: the 263 players with a known salary, target ``Salary``.

    ``Salary`` is the 1987 opening-day salary in thousands of dollars (the
    course notes and ISLR model its logarithm). The 59 players without a
    salary are left out, as ISLR's ``na.omit(Hitters)``.

    Parameters
    ----------
    as_frame : bool, default=False
        False: ``data`` is a float64 array of shape (263, 19) with League,
        Division and NewLeague coded 0/1 (A/N, E/W, A/N). True: a pandas
        DataFrame with those three columns of the ``category`` dtype (needs
        pandas); ``frame`` also holds the target.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    Bunch with ``data``, ``target`` (float64, shape (263,)), ``feature_names``,
    ``categorical_features`` (["League", "Division", "NewLeague"]), ``players``
    (the row names) and ``frame`` (as_frame=True only).
    """
    with resources.files(__package__).joinpath("data/hitters.csv").open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["Salary"] != ""]
    target = np.asarray([float(r["Salary"]) for r in rows], dtype=np.float64)
    X = np.asarray(
        [
            [CATEGORIES[f].index(r[f]) if f in CATEGORIES else float(r[f]) for f in FEATURES]
            for r in rows
        ],
        dtype=np.float64,
    )
    players = [r["rownames"].lstrip("-") for r in rows]
    frame = None
    data = X
    if as_frame:
        import pandas as pd

        data = pd.DataFrame(X, columns=FEATURES, index=players)
        for col, labels in CATEGORIES.items():
            data[col] = pd.Categorical.from_codes(data[col].to_numpy().astype(int), categories=labels)
        frame = data.assign(Salary=target)
    if return_X_y:
        return data, target
    return Bunch(
        data=data,
        target=target,
        frame=frame,
        feature_names=list(FEATURES),
        categorical_features=list(CATEGORIES),
        players=players,
        DESCR=load_hitters.__doc__,
    )
