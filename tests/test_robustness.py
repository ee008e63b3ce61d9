"""Bad input and edge cases, on every estimator.

Two parts:

- ``CASES``: every bad input and edge case we document, with what it gets (an
  exception type and message excerpt, or a checked behaviour). The table in
  ``docs/bad_input.md`` is rendered from this list (``python
  tests/test_robustness.py`` prints it) and a test checks the two agree, so
  they cannot drift.
- Property-based tests (hypothesis; profile "ci" bounded, "long" by hand, see
  conftest.py): random shapes, dtypes, NaN patterns, constant and duplicated
  rows, extreme values and weights. Each example either fits and predicts with
  the documented meaning (finite outputs of the right shape and dtype,
  probabilities summing to 1) or raises the ValueError/TypeError that
  ``expected_error`` derives from the documented rules. RuntimeWarnings are
  errors throughout (an overflow or 0/0 is a bug even when masked later).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from sklearn.exceptions import NotFittedError

from estimator_zoo import CLASSIFIERS, ESTIMATORS, REGRESSORS

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

DOC = Path(__file__).resolve().parents[1] / "docs" / "bad_input.md"
ALL = list(ESTIMATORS)


# ---------------------------------------------------------------------------
# the documented table
# ---------------------------------------------------------------------------
def _data(n=12, f=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f))
    return X, np.arange(n) % 2, rng.normal(size=n)


def _y(name, yc, yr):
    return yc if name in CLASSIFIERS else yr


@dataclass(frozen=True)
class Case:
    """One documented bad input or edge case.

    Attributes
    ----------
    what : str
        The input, as the table states it.
    estimators : tuple of str
        ``ESTIMATORS`` keys it applies to.
    outcome : str
        What it gets, as the table states it: ``ValueError: <message excerpt>``
        (found verbatim in the exception's message) or a behaviour.
    run : callable
        ``run(name)``: performs the input on estimator ``name``; for an error
        row the call must raise, for a behaviour row it asserts the behaviour.
    error : type or None
        The exception class of an error row.
    """

    what: str
    estimators: tuple
    outcome: str
    run: Callable
    error: type | None = None

    @property
    def message(self) -> str:
        return self.outcome.split(": ", 1)[1]


def _fit(name, X, y, sample_weight=None, rs=0):
    return ESTIMATORS[name](rs).fit(X, y, sample_weight=sample_weight)


def _fit_default(name, **kw):
    X, yc, yr = _data()
    return _fit(name, kw.pop("X", X), kw.pop("y", _y(name, yc, yr)), **kw)


def _predict_outputs(est, X):
    """predict (and predict_proba) with the documented meaning checked; returns predict."""
    p = np.asarray(est.predict(X))
    n = X.shape[0]
    assert p.shape == (n,)
    if hasattr(est, "classes_"):
        assert np.isin(p, est.classes_).all()
        assert p.dtype == est.classes_.dtype
        proba = np.asarray(est.predict_proba(X))
        assert proba.shape == (n, len(est.classes_))
        assert np.isfinite(proba).all() and (proba >= 0).all() and (proba <= 1 + 1e-12).all()
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-9)
    else:
        assert p.dtype == np.float64 and np.isfinite(p).all()
    return p


def _same_predictions(name, X_a, X_b, y, sw_a=None, sw_b=None, X_pred_a=None, X_pred_b=None):
    a = _fit(name, X_a, y, sw_a)
    b = _fit(name, X_b, y if sw_b is None or len(y) == len(X_b) else y, sw_b)
    pa = _predict_outputs(a, X_a if X_pred_a is None else X_pred_a)
    pb = _predict_outputs(b, X_b if X_pred_b is None else X_pred_b)
    np.testing.assert_array_equal(pa, pb)


def _b_nan(name):
    X, yc, yr = _data(30)
    X[::3, 0] = np.nan
    est = _fit(name, X, _y(name, yc[:30], yr))
    _predict_outputs(est, X)


def _b_nan_column(name):
    X, yc, yr = _data(30)
    X[:, 1] = np.nan
    est = _fit(name, X, _y(name, yc, yr))
    _predict_outputs(est, X)
    assert np.asarray(est.feature_importances_)[1] == 0.0


def _b_nan_row(name):
    X, yc, yr = _data(30)
    X[4] = np.nan
    est = _fit(name, X, _y(name, yc, yr))
    _predict_outputs(est, np.vstack([X, np.full((1, 3), np.nan)]))


def _b_constant(name):
    X, yc, yr = _data(20)
    X[:] = 7.0
    yc[:3] = 0  # a majority class: a constant AdaBoost learner is then better than chance
    est = _fit(name, X, _y(name, yc, yr))
    p = _predict_outputs(est, X)
    assert np.unique(p).shape[0] == 1


def _b_one_row(name):
    X, yc, yr = _data(1)
    est = _fit(name, X, _y(name, yc, yr))
    p = _predict_outputs(est, np.vstack([X, X + 1.0]))
    if name in REGRESSORS:
        np.testing.assert_allclose(p, yr[0], rtol=1e-12)
    else:
        assert (p == yc[0]).all()


def _b_one_feature(name):
    X, yc, yr = _data(20, 1)
    _predict_outputs(_fit(name, X, _y(name, yc, yr)), X)


def _b_many_features(name):
    X, yc, yr = _data(6, 500)
    _predict_outputs(_fit(name, X, _y(name, yc, yr)), X)


def _b_duplicated(name):
    X, yc, yr = _data(4)
    X, y = np.repeat(X, 8, axis=0), np.repeat(_y(name, yc, yr), 8)
    _predict_outputs(_fit(name, X, y), X)


def _b_scale(factor):
    def run(name):
        X, yc, yr = _data(40)
        _same_predictions(name, X, X * factor, _y(name, yc, yr))

    return run


def _b_dtypes(name):
    X, yc, yr = _data(40)
    Xi = np.round(X * 4)
    y = _y(name, yc, yr)
    for dtype in (np.float16, np.float32, np.int8, np.int64, np.uint8):
        Xd = (np.abs(Xi) if dtype == np.uint8 else Xi).astype(dtype)
        _same_predictions(name, Xd.astype(np.float64), Xd, y)
    Xb = X > 0
    _same_predictions(name, Xb.astype(np.float64), Xb, y)


def _b_nullable(name):
    X, yc, yr = _data(40)
    Xi = np.round(X * 4)
    mask = np.zeros_like(X, dtype=bool)
    mask[::5, 0] = mask[1::7, 1] = mask[2::6, 2] = True
    as_float = np.where(mask, np.nan, Xi)
    as_float[:, 2] = np.where(mask[:, 2], np.nan, (Xi[:, 2] > 0).astype(float))
    df = pd.DataFrame(
        {
            "a": pd.array([None if m else int(v) for v, m in zip(Xi[:, 0], mask[:, 0])], dtype="Int64"),
            "b": pd.array([None if m else float(v) for v, m in zip(Xi[:, 1], mask[:, 1])], dtype="Float64"),
            "c": pd.array([None if m else bool(v > 0) for v, m in zip(Xi[:, 2], mask[:, 2])], dtype="boolean"),
        }
    )
    _same_predictions(name, as_float, df, _y(name, yc, yr))


def _b_unseen_category(name):
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"a": rng.normal(size=30), "c": pd.Categorical(rng.choice(["x", "y", "z"], 30))})
    X, yc, yr = _data(30)
    est = _fit(name, df, _y(name, yc, yr))
    new = pd.DataFrame({"a": df["a"][:3], "c": pd.Categorical(["w", "w", "w"])})
    missing = pd.DataFrame({"a": df["a"][:3], "c": pd.Categorical([None, None, None], categories=["x"])})
    np.testing.assert_array_equal(_predict_outputs(est, new), _predict_outputs(est, missing))


def _b_one_class(name):
    X, _, _ = _data(10)
    est = _fit(name, X, np.full(10, "only"))
    p = _predict_outputs(est, X)
    assert (p == "only").all()


def _b_string_labels(name):
    X, yc, _ = _data(30)
    labels = np.array(["cat", "dog", "emu"])[np.arange(30) % 3]
    est = _fit(name, X, labels)
    assert list(est.classes_) == ["cat", "dog", "emu"]
    _predict_outputs(est, X)


def _b_unseen_label_score(name):
    X, yc, _ = _data(30)
    est = _fit(name, X, yc)
    y_new = np.where(np.arange(30) < 3, 5, yc)  # label 5 never seen at fit
    expected = np.mean(np.asarray(est.predict(X)) == y_new)
    assert est.score(X, y_new) == pytest.approx(expected)
    assert expected <= 27 / 30


def _b_zero_weights(name):
    X, yc, yr = _data(40)
    y = _y(name, yc, yr)
    sw = np.ones(40)
    sw[::4] = 0.0
    keep = sw > 0
    a = _fit(name, X, y, sw)
    b = _fit(name, X[keep], y[keep])
    np.testing.assert_array_equal(_predict_outputs(a, X), _predict_outputs(b, X))


def _b_weight_ratio(name):
    X, yc, yr = _data(40)
    sw = np.where(np.arange(40) % 2 == 0, 1e-30, 1e30)
    _predict_outputs(_fit(name, X, _y(name, yc, yr), sw), X)


def _b_fit_error_keeps_model(name):
    X, yc, yr = _data(30)
    est = _fit(name, X, _y(name, yc, yr))
    before = np.asarray(est.predict(X))
    with pytest.raises(ValueError):
        est.fit(np.where(X > 1, np.inf, X), _y(name, yc, yr))
    np.testing.assert_array_equal(np.asarray(est.predict(X)), before)


def _with_x(make):
    def run(name):
        X, yc, yr = _data()
        _fit(name, make(X), _y(name, yc, yr))

    return run


def _with_y(make):
    def run(name):
        X, yc, yr = _data()
        _fit(name, X, make(_y(name, yc, yr)))

    return run


def _with_w(make):
    def run(name):
        X, yc, yr = _data()
        _fit(name, X, _y(name, yc, yr), make(X.shape[0]))

    return run


def _at_predict(make):
    def run(name):
        X, yc, yr = _data()
        est = _fit(name, X, _y(name, yc, yr))
        est.predict(make(X))

    return run


def _float16_overflow(X):
    with np.errstate(over="ignore"):
        return (X * 1e5).astype(np.float16)


def _rows(n, change=lambda X: X):
    """Fit on the first ``n`` rows of ``change(X)`` and y (None: X given a leading axis, 3-D)."""

    def run(name):
        X, yc, yr = _data()
        X, y = change(X), _y(name, yc, yr)
        if n is None:
            _fit(name, X[None], y[:1])
        else:
            _fit(name, X[:n], y[:n])

    return run


def _unfitted(name):
    X, _, _ = _data()
    ESTIMATORS[name](0).predict(X)


def _categorical_out_of_range(name):
    X, yc, yr = _data()
    ESTIMATORS[name](0).set_params(categorical_features=[7]).fit(X, _y(name, yc, yr))


def _sparse_categorical(name):
    X, yc, yr = _data()
    ESTIMATORS[name](0).set_params(categorical_features=[0]).fit(sp.csr_matrix(X), _y(name, yc, yr))


def _str(n):
    return np.array(["a", "b"] * n)[:n]


CASES = [
    # -- errors: X ---------------------------------------------------------
    Case("X contains +inf or -inf (fit)", tuple(ALL), "ValueError: Input X contains infinity",
         _with_x(lambda X: np.where(X > 1, np.inf, -X)), ValueError),
    Case("X contains +inf or -inf (predict)", tuple(ALL), "ValueError: Input X contains infinity",
         _at_predict(lambda X: np.where(X > 1, -np.inf, X)), ValueError),
    Case("float16 X whose values overflowed to inf", tuple(ALL), "ValueError: Input X contains infinity",
         _with_x(_float16_overflow), ValueError),
    Case("X and y with 0 rows", tuple(ALL), "ValueError: Found array with 0 sample(s)", _rows(0), ValueError),
    Case("X with 0 columns", tuple(ALL), "ValueError: Found array with 0 feature(s)",
         _with_x(lambda X: X[:, :0]), ValueError),
    Case("X 1-D or 3-D", tuple(ALL), "ValueError: Expected a 2D array", _rows(None), ValueError),
    Case("X complex", tuple(ALL), "ValueError: Complex data not supported", _with_x(lambda X: X + 1j), ValueError),
    Case("NumPy X of strings, not declared categorical", tuple(ALL),
         "ValueError: holds strings; declare it in categorical_features", _with_x(lambda X: X.astype(str)),
         ValueError),
    Case("DataFrame column of strings/objects, not declared categorical", tuple(ALL),
         "ValueError: holds strings/objects",
         _with_x(lambda X: pd.DataFrame({"s": _str(X.shape[0]), "x": X[:, 0]})), ValueError),
    Case("sparse X (SciPy) containing +inf or -inf", tuple(ALL), "ValueError: Input X contains infinity",
         _with_x(lambda X: sp.csr_matrix(np.where(X > 1, np.inf, -X))), ValueError),
    Case("sparse X (SciPy) with categorical_features", tuple(n for n in ALL if not n.startswith("adaboost")),
         "ValueError: categorical_features are not taken from a sparse X", _sparse_categorical, ValueError),
    Case("categorical_features index out of range", tuple(n for n in ALL if not n.startswith("adaboost")),
         "ValueError: out of range", _categorical_out_of_range, ValueError),
    Case("predict with another number of features", tuple(ALL), "ValueError: X has 2 features",
         _at_predict(lambda X: X[:, :2]), ValueError),
    Case("predict before fit", tuple(ALL), "NotFittedError: is not fitted yet", _unfitted, NotFittedError),
    # -- errors: y ---------------------------------------------------------
    Case("y of another length than X", tuple(ALL), "ValueError: inconsistent numbers of samples",
         _with_y(lambda y: y[:-1]), ValueError),
    Case("y is None", tuple(ALL), "ValueError: requires y to be passed", _with_y(lambda y: None), ValueError),
    Case("y contains NaN", tuple(ALL), "ValueError: Input y contains NaN",
         _with_y(lambda y: np.r_[np.nan, y[1:].astype(float)]), ValueError),
    Case("regression y contains inf", tuple(REGRESSORS), "ValueError: Input y contains infinity",
         _with_y(lambda y: np.r_[np.inf, y[1:]]), ValueError),
    Case("regression y of strings", tuple(REGRESSORS), "ValueError: y must be numeric for regression",
         _with_y(lambda y: _str(y.shape[0])), ValueError),
    Case("regression y so large that weighted squared sums overflow (max|y| * max(1, W)**2 > 2**400)",
         tuple(REGRESSORS), "ValueError: y has values up to", _with_y(lambda y: y * 1e300), ValueError),
    Case("classifier y continuous", tuple(CLASSIFIERS), "ValueError: Unknown label type: continuous",
         _with_y(lambda y: y + 0.5), ValueError),
    Case("gradient boosting classifier y with one class", ("gboost_clf",),
         "ValueError: needs at least 2 classes", _with_y(lambda y: np.zeros_like(y)), ValueError),
    Case("AdaBoost classifier whose first learner is no better than chance (weighted error >= 1 - 1/K)",
         ("adaboost_clf",), "ValueError: ensemble is worse than random",
         _rows(2, lambda X: np.full_like(X, np.nan)), ValueError),
    # -- errors: sample_weight ---------------------------------------------
    Case("sample_weight negative", tuple(ALL), "ValueError: sample_weight contains negative values",
         _with_w(lambda n: np.r_[-1.0, np.ones(n - 1)]), ValueError),
    Case("sample_weight NaN or inf", tuple(ALL), "ValueError: sample_weight contains NaN or infinity",
         _with_w(lambda n: np.r_[np.inf, np.ones(n - 1)]), ValueError),
    Case("sample_weight all zero", tuple(ALL), "ValueError: sample_weight is zero for every sample",
         _with_w(np.zeros), ValueError),
    Case("sample_weight of another length than X", tuple(ALL), "ValueError: sample_weight and X have different lengths",
         _with_w(lambda n: np.ones(n + 1)), ValueError),
    Case("sample_weight summing to more than 2**200 (e.g. 1e300)", tuple(ALL),
         "ValueError: more than 2**200", _with_w(lambda n: np.full(n, 1e300)), ValueError),
    Case("positive sample_weight below 2**-200 (e.g. subnormals)", tuple(ALL), "ValueError: below 2**-200",
         _with_w(lambda n: np.full(n, 5e-324)), ValueError),
    # -- behaviours --------------------------------------------------------
    Case("NaN in X (fit and predict)", tuple(ALL), "missing value: learned direction per split", _b_nan),
    Case("all-NaN column", tuple(ALL), "fits; the column is never split on (importance 0)", _b_nan_column),
    Case("all-NaN row (fit and predict)", tuple(ALL), "fits; the row follows the missing-value branches",
         _b_nan_row),
    Case("every feature constant", tuple(ALL), "fits one leaf per tree: one prediction for every row",
         _b_constant),
    Case("one row", tuple(n for n in ALL if n != "gboost_clf"), "fits; predicts that row's target everywhere",
         _b_one_row),
    Case("one feature", tuple(ALL), "fits and predicts", _b_one_feature),
    Case("many more features than rows (6 x 500)", tuple(ALL), "fits and predicts", _b_many_features),
    Case("duplicated rows", tuple(ALL), "fits; duplicates count as separate rows", _b_duplicated),
    Case("X scaled by 1e300", tuple(ALL), "same predictions as unscaled X (thresholds are order-based)",
         _b_scale(1e300)),
    Case("X scaled by 1e-300 or into subnormals (5e-320)", tuple(ALL), "same predictions as unscaled X",
         lambda name: (_b_scale(1e-300)(name), _b_scale(5e-320 / 4)(name))),
    Case("X of float16/float32/int8/int64/uint8/bool", tuple(ALL), "read as the same float64 values", _b_dtypes),
    Case("pandas Int64/Float64/boolean columns with pd.NA", tuple(ALL),
         "pd.NA is a missing value; same model as float64 with NaN", _b_nullable),
    Case("pandas category unseen at fit (predict)", tuple(ALL), "treated as a missing value", _b_unseen_category),
    Case("classifier y with one class", tuple(n for n in CLASSIFIERS if n != "gboost_clf"),
         "fits; predicts that class with probability 1", _b_one_class),
    Case("string class labels", tuple(CLASSIFIERS), "classes_ sorted; predict returns the labels",
         _b_string_labels),
    Case("score with a label unseen at fit", tuple(CLASSIFIERS), "the label's rows count as errors",
         _b_unseen_label_score),
    Case("sample_weight 0 on some rows", tuple(n for n in ALL if not n.startswith("gboost") and n != "adaboost_reg"),
         "the rows are dropped: same model as fitting without them", _b_zero_weights),
    Case("sample_weight ratios of 1e60 (1e-30 vs 1e30)", tuple(ALL), "fits; finite predictions", _b_weight_ratio),
    Case("a fit that raises, on a fitted estimator", tuple(ALL), "the previous model is kept",
         _b_fit_error_keeps_model),
]


def render_table() -> str:
    """The markdown table of ``CASES`` (``docs/bad_input.md`` holds it verbatim)."""
    rows = ["| Input | Estimators | What it gets |", "| --- | --- | --- |"]
    for c in CASES:
        ests = "all" if set(c.estimators) == set(ALL) else ", ".join(c.estimators)
        ests = {",".join(CLASSIFIERS): "classifiers", ",".join(REGRESSORS): "regressors"}.get(
            ",".join(c.estimators), ests
        )
        outcome = f"`{c.outcome}`" if c.error is not None else c.outcome
        rows.append(f"| {c.what} | {ests} | {outcome} |")
    return "\n".join(rows) + "\n"


def test_doc_table_matches_cases():
    assert render_table() in DOC.read_text(), (
        "docs/bad_input.md is out of date: paste the output of `python tests/test_robustness.py`"
    )


@pytest.mark.parametrize(
    "case, name",
    [pytest.param(c, n, id=f"{i:02d}-{n}") for i, c in enumerate(CASES) for n in c.estimators],
)
def test_documented_case(case, name):
    if case.error is None:
        case.run(name)
        return
    with pytest.raises(case.error, match=re.escape(case.message)):
        case.run(name)


# ---------------------------------------------------------------------------
# regressions found by the property-based tests
# ---------------------------------------------------------------------------
def test_sorted_search_node_ending_in_missing_values():
    """A small node (sort-based search) whose best candidate sits on the missing-value
    bin used to index the bin-value table past its end (IndexError)."""
    from sklearn.tree import DecisionTreeClassifier as SkTree

    nan = np.nan
    col = [nan, nan, 0.64042265, 0.10490012, -0.53566937, nan, 1.30400005, 0.94708096, -0.70373524,
           -1.26542147, -0.62327446, nan, nan, -0.21879166, -1.24591095, nan, nan, -0.31630016, 0.41163054, nan]
    X = np.asarray(col)[:, None]
    y = np.array([5, 5, 0, 0, 5, 5, 5, 0, 5, 0, 0, 5, 0, 0, 5, 5, 0, 0, 0, 5])
    ours = ESTIMATORS["tree_clf"](0).fit(X, y)
    _predict_outputs(ours, X)
    np.testing.assert_array_equal(ours.predict_proba(X), SkTree(random_state=0).fit(X, y).predict_proba(X))


# ---------------------------------------------------------------------------
# property-based tests
# ---------------------------------------------------------------------------
_FLOAT_DTYPES = [np.float64, np.float32, np.float16]


@st.composite
def datasets(draw, classifier: bool):
    """A random (X, y, sample_weight)."""
    n = draw(st.sampled_from([1, 2, 3, 7, 20, 33]))
    f = draw(st.sampled_from([1, 2, 5, 40]))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f))
    # NaN patterns, constants, duplicates
    if draw(st.booleans()):
        X[rng.random(size=(n, f)) < draw(st.sampled_from([0.1, 0.5, 1.0]))] = np.nan
    if f > 1 and draw(st.booleans()):
        X[:, rng.integers(f)] = np.nan  # an all-NaN column
    if draw(st.booleans()):
        X[rng.integers(n)] = np.nan  # an all-NaN row
    if draw(st.booleans()):
        X[:, rng.integers(f)] = 3.0  # a constant column
    if n > 1 and draw(st.booleans()):
        X[n // 2 :] = X[: n - n // 2]  # duplicated rows
    scale = draw(st.sampled_from([1.0, 1e300, 1e-300, 5e-321, 1e5]))
    with np.errstate(over="ignore", under="ignore"):
        X = X * scale
    if draw(st.booleans()):
        X[rng.integers(n), rng.integers(f)] = draw(st.sampled_from([np.inf, -np.inf]))
    layout = draw(st.sampled_from(["float", "int", "bool", "pandas"]))
    if layout == "float":
        with np.errstate(over="ignore"):
            X = X.astype(draw(st.sampled_from(_FLOAT_DTYPES)))
    elif layout == "int":
        dtype = draw(st.sampled_from([np.int8, np.int64, np.uint8]))
        if not np.isinf(X).any():
            X = np.abs(np.nan_to_num(np.round(X / scale * 3), nan=0.0)).astype(dtype)
    elif layout == "bool":
        X = np.nan_to_num(X, nan=0.0) > 0
    else:
        cols = {}
        for j in range(f):
            kind = draw(st.sampled_from(["Float64", "Int64", "boolean", "category", "float64"]))
            v = X[:, j]
            miss = np.isnan(v)
            if kind == "Float64":
                cols[f"c{j}"] = pd.array([None if m else float(x) for x, m in zip(v, miss)], dtype="Float64")
            elif kind == "Int64":
                r = np.nan_to_num(np.round(v / scale * 3), posinf=9, neginf=-9)
                cols[f"c{j}"] = pd.array([None if m else int(x) for x, m in zip(r, miss)], dtype="Int64")
            elif kind == "boolean":
                cols[f"c{j}"] = pd.array([None if m else bool(x > 0) for x, m in zip(v, miss)], dtype="boolean")
            elif kind == "category":
                cols[f"c{j}"] = pd.Categorical([None if m else ("p" if x > 0 else "q") for x, m in zip(v, miss)])
            else:
                cols[f"c{j}"] = v
        X = pd.DataFrame(cols)
    # labels / targets
    if classifier:
        k = draw(st.sampled_from([1, 2, 3]))
        labels = draw(st.sampled_from([np.arange(k) * 5, np.array(["x", "y", "zz"])[:k]]))
        y = labels[rng.integers(k, size=n)]
    else:
        y = rng.normal(size=n) * draw(st.sampled_from([1.0, 1e-300, 1e100]))
    # weights
    wkind = draw(st.sampled_from(["none", "zeros", "ratio", "ints"]))
    sw = None
    if wkind == "zeros":
        sw = (rng.random(n) < 0.6).astype(float)
    elif wkind == "ratio":
        sw = np.where(rng.random(n) < 0.5, 1e-12, 1e12)
    elif wkind == "ints":
        sw = rng.integers(0, 4, size=n)
    return X, y, sw


def expected_error(X, y, sw, classifier, adaboost=False):
    """The documented error (a message regex) for this input, or None when it must fit.

    Mirrors the rules of the table, in the order the estimators check them.
    """
    if isinstance(X, pd.DataFrame):
        has_inf = any(
            np.isinf(X[c].to_numpy(dtype=np.float64, na_value=np.nan)).any()
            for c in X.columns
            if str(X[c].dtype) != "category"
        )
    else:
        has_inf = np.isinf(np.asarray(X, dtype=np.float64)).any()
    if has_inf:
        return "Input X contains infinity"
    w = np.ones(len(y)) if sw is None else np.asarray(sw, dtype=np.float64)
    if not (w > 0).any():
        return "sample_weight is zero for every sample"
    if not classifier:
        # AdaBoost checks y once for all rounds, with unit weights (its round weights sum to 1)
        total = max(1.0, float(len(y)) if adaboost else float(w.sum()))
        if np.max(np.abs(y)) * total * total > 2.0**400:
            return "y has values up to"
    return None


def _check_fit_predict(name, X, y, sw):
    est = ESTIMATORS[name](0)
    error = expected_error(X, y, sw, name in CLASSIFIERS, adaboost=name.startswith("adaboost"))
    if error is None and name == "gboost_clf" and np.unique(y).shape[0] < 2:
        error = "needs at least 2 classes"
    if error is None and name == "adaboost_clf":
        try:  # the first learner may be no better than chance: the table's documented error
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)
                est.fit(X, y, sample_weight=sw)
        except ValueError as exc:
            assert "ensemble is worse than random" in str(exc)
            return
    if error is not None:
        with pytest.raises((ValueError, TypeError), match=error):
            est.fit(X, y, sample_weight=sw)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        est.fit(X, y, sample_weight=sw)
        _predict_outputs(est, X)
        if hasattr(X, "iloc"):
            return
        nan_row = np.full((1, X.shape[1]), np.nan)
        _predict_outputs(est, nan_row)


@pytest.mark.parametrize("name", CLASSIFIERS)
@given(data=datasets(classifier=True))
def test_property_classifiers(name, data):
    _check_fit_predict(name, *data)


@pytest.mark.parametrize("name", REGRESSORS)
@given(data=datasets(classifier=False))
def test_property_regressors(name, data):
    _check_fit_predict(name, *data)


if __name__ == "__main__":
    print(render_table(), end="")
