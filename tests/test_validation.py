"""Input and parameter validation for gputrees estimators.

Every bad input must raise the documented error (at ``fit`` or at
``predict``).  Message checks are deliberately loose: a case-insensitive
keyword that any sensible message would contain.
"""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from gputrees import DecisionTreeClassifier, DecisionTreeRegressor

ESTIMATORS = [DecisionTreeClassifier, DecisionTreeRegressor]
EST_IDS = ["classifier", "regressor"]

N_SAMPLES = 40
N_FEATURES = 3


def make_data(Est, n_samples=N_SAMPLES, n_features=N_FEATURES, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n_samples, n_features))
    if Est is DecisionTreeClassifier:
        y = (X[:, 0] > 0).astype(np.int64)
        # make sure both classes are present whatever the seed
        y[0], y[1] = 0, 1
    else:
        y = X[:, 0] + 0.1 * rng.normal(size=n_samples)
    return X, y


def fitted(Est, **params):
    X, y = make_data(Est)
    return Est(**params).fit(X, y), X, y


# --------------------------------------------------------------------------
# Shapes
# --------------------------------------------------------------------------

NOT_2D = "(?i)2d|2-d|two-dimensional|two dimensional|dim"


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_fit_X_1d_raises(Est):
    X, y = make_data(Est)
    with pytest.raises(ValueError, match=NOT_2D):
        Est().fit(X[:, 0], y)


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_fit_X_3d_raises(Est):
    X, y = make_data(Est)
    X3 = np.repeat(X[:, :, None], 2, axis=2)
    with pytest.raises(ValueError, match=NOT_2D):
        Est().fit(X3, y)


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_fit_X_scalar_raises(Est):
    with pytest.raises(ValueError, match=NOT_2D):
        Est().fit(np.float64(1.0), [1.0])


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_predict_X_1d_raises(Est):
    est, X, _ = fitted(Est)
    with pytest.raises(ValueError, match=NOT_2D):
        est.predict(X[0])


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_fit_X_y_length_mismatch_raises(Est):
    X, y = make_data(Est)
    with pytest.raises(
        ValueError,
        match="(?i)inconsistent|length|match|number of (samples|labels|rows)|samples|rows",
    ):
        Est().fit(X, y[:-1])


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("delta", [-1, 1], ids=["shorter", "longer"])
def test_fit_sample_weight_wrong_length_raises(Est, delta):
    X, y = make_data(Est)
    sw = np.ones(len(y) + delta)
    with pytest.raises(
        ValueError, match="(?i)sample_weight|sample weight|shape|length"
    ):
        Est().fit(X, y, sample_weight=sw)


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_fit_zero_rows_raises(Est):
    X = np.empty((0, N_FEATURES))
    y = np.empty((0,))
    with pytest.raises(
        ValueError,
        match="(?i)0 sample|zero|empty|at least|minimum|no sample|n_samples",
    ):
        Est().fit(X, y)


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_fit_zero_features_raises(Est):
    _, y = make_data(Est)
    X = np.empty((len(y), 0))
    with pytest.raises(
        ValueError,
        match="(?i)0 feature|zero|empty|at least|minimum|no feature|n_features",
    ):
        Est().fit(X, y)


# --------------------------------------------------------------------------
# Non-finite values
# --------------------------------------------------------------------------


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("value", [np.inf, -np.inf], ids=["+inf", "-inf"])
def test_fit_inf_in_X_raises(Est, value):
    X, y = make_data(Est)
    X[3, 1] = value
    with pytest.raises(ValueError, match="(?i)inf"):
        Est().fit(X, y)


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("value", [np.inf, -np.inf], ids=["+inf", "-inf"])
def test_predict_inf_in_X_raises(Est, value):
    est, X, _ = fitted(Est)
    X_test = X[:5].copy()
    X_test[2, 0] = value
    with pytest.raises(ValueError, match="(?i)inf"):
        est.predict(X_test)


@pytest.mark.parametrize("value", [np.inf, -np.inf], ids=["+inf", "-inf"])
def test_predict_proba_inf_in_X_raises(value):
    est, X, _ = fitted(DecisionTreeClassifier)
    X_test = X[:5].copy()
    X_test[2, 0] = value
    with pytest.raises(ValueError, match="(?i)inf"):
        est.predict_proba(X_test)


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_nan_in_X_is_allowed(Est):
    # Positive control: NaN (missing values) in X is supported.
    X, y = make_data(Est)
    X[::5, 1] = np.nan
    X[1::7, 0] = np.nan
    est = Est(random_state=0).fit(X, y)
    pred = est.predict(X)
    assert pred.shape == (len(y),)
    X_test = np.full((3, N_FEATURES), np.nan)
    assert est.predict(X_test).shape == (3,)


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_fit_nan_in_y_raises(Est):
    X, y = make_data(Est)
    y = y.astype(np.float64)
    y[4] = np.nan
    with pytest.raises(ValueError, match="(?i)nan|missing|finite"):
        Est().fit(X, y)


# --------------------------------------------------------------------------
# sample_weight values
# --------------------------------------------------------------------------


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_fit_negative_sample_weight_raises(Est):
    X, y = make_data(Est)
    sw = np.ones(len(y))
    sw[5] = -1.0
    with pytest.raises(
        ValueError, match="(?i)negative|non-negative|nonnegative|positive|>= ?0"
    ):
        Est().fit(X, y, sample_weight=sw)


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_fit_nan_sample_weight_raises(Est):
    X, y = make_data(Est)
    sw = np.ones(len(y))
    sw[5] = np.nan
    with pytest.raises(ValueError, match="(?i)nan|finite|missing"):
        Est().fit(X, y, sample_weight=sw)


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_fit_all_zero_sample_weight_raises(Est):
    X, y = make_data(Est)
    sw = np.zeros(len(y))
    with pytest.raises(ValueError, match="(?i)zero|positive|sum"):
        Est().fit(X, y, sample_weight=sw)


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_fit_some_zero_sample_weight_is_allowed(Est):
    # Positive control: zero weights on some rows are fine.
    X, y = make_data(Est)
    sw = np.ones(len(y))
    sw[::3] = 0.0
    est = Est(random_state=0).fit(X, y, sample_weight=sw)
    assert est.predict(X).shape == (len(y),)


# --------------------------------------------------------------------------
# String / object columns
# --------------------------------------------------------------------------

STRING_ERR = "(?i)categorical|string"


def _string_numpy_object_X(n=N_SAMPLES):
    rng = np.random.RandomState(0)
    X = np.empty((n, 2), dtype=object)
    X[:, 0] = rng.normal(size=n)
    X[:, 1] = rng.choice(["red", "green", "blue"], size=n)
    return X


def _string_frame(dtype, n=N_SAMPLES):
    rng = np.random.RandomState(0)
    return pd.DataFrame(
        {
            "num": rng.normal(size=n),
            "color": pd.Series(rng.choice(["red", "green", "blue"], size=n), dtype=dtype),
        }
    )


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_fit_numpy_object_string_column_not_categorical_raises(Est):
    X = _string_numpy_object_X()
    _, y = make_data(Est)
    with pytest.raises((ValueError, TypeError), match=STRING_ERR):
        Est().fit(X, y)


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_fit_numpy_unicode_array_raises(Est):
    X = np.array([["a", "b"], ["c", "d"], ["a", "d"], ["c", "b"]])
    y = [0, 1, 0, 1] if Est is DecisionTreeClassifier else [0.0, 1.0, 0.0, 1.0]
    with pytest.raises((ValueError, TypeError), match=STRING_ERR):
        Est().fit(X, y)


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("dtype", [object, "str"], ids=["object", "str"])
def test_fit_pandas_string_column_not_categorical_raises(Est, dtype):
    X = _string_frame(dtype)
    _, y = make_data(Est)
    with pytest.raises((ValueError, TypeError), match=STRING_ERR):
        Est().fit(X, y)


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_predict_pandas_string_column_not_categorical_raises(Est):
    # Fit on numeric data with the same column names, then predict with a
    # string column: must not silently coerce.
    Xs = _string_frame(object)
    _, y = make_data(Est)
    X_num = Xs.assign(color=np.arange(len(Xs), dtype=np.float64))
    est = Est().fit(X_num, y)
    with pytest.raises((ValueError, TypeError), match=STRING_ERR):
        est.predict(Xs)


# Positive controls: the same data is accepted once declared categorical.


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_pandas_category_dtype_column_is_accepted(Est):
    X = _string_frame("category")
    _, y = make_data(Est)
    est = Est(random_state=0).fit(X, y)
    assert est.predict(X).shape == (len(X),)


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_pandas_object_column_declared_categorical_by_name_is_accepted(Est):
    X = _string_frame(object)
    _, y = make_data(Est)
    est = Est(categorical_features=["color"], random_state=0).fit(X, y)
    assert est.predict(X).shape == (len(X),)


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_numpy_object_column_declared_categorical_by_index_is_accepted(Est):
    X = _string_numpy_object_X()
    _, y = make_data(Est)
    est = Est(categorical_features=[1], random_state=0).fit(X, y)
    assert est.predict(X).shape == (len(X),)


# --------------------------------------------------------------------------
# Hyper-parameter values
# --------------------------------------------------------------------------

# A message that "lists allowed values" for a numeric parameter: states a
# range / bound / allowed set somehow.
ALLOWED_HINT = re.compile(
    r"(?i)range|must be|between|>=|<=|at least|at most|greater|less|allowed|"
    r"one of|expected|valid|\[|\("
)


def _fit_expect_param_error(est, Est, name):
    X, y = make_data(Est)
    with pytest.raises(ValueError, match=f"(?i){name}") as excinfo:
        est.fit(X, y)
    return str(excinfo.value)


def test_classifier_unknown_criterion_lists_allowed():
    msg = _fit_expect_param_error(
        DecisionTreeClassifier(criterion="foo"), DecisionTreeClassifier, "criterion"
    )
    assert "gini" in msg, msg


def test_regressor_unknown_criterion_lists_allowed():
    msg = _fit_expect_param_error(
        DecisionTreeRegressor(criterion="foo"), DecisionTreeRegressor, "criterion"
    )
    assert "squared_error" in msg, msg


def test_regressor_rejects_classifier_criterion():
    msg = _fit_expect_param_error(
        DecisionTreeRegressor(criterion="gini"), DecisionTreeRegressor, "criterion"
    )
    assert "squared_error" in msg, msg


def test_classifier_rejects_regressor_criterion():
    msg = _fit_expect_param_error(
        DecisionTreeClassifier(criterion="squared_error"),
        DecisionTreeClassifier,
        "criterion",
    )
    assert "gini" in msg, msg


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("value", [0, -1])
def test_invalid_max_depth_raises(Est, value):
    msg = _fit_expect_param_error(Est(max_depth=value), Est, "max_depth")
    assert ALLOWED_HINT.search(msg), msg


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_invalid_min_samples_leaf_raises(Est):
    msg = _fit_expect_param_error(Est(min_samples_leaf=0), Est, "min_samples_leaf")
    assert ALLOWED_HINT.search(msg), msg


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_invalid_max_features_raises(Est):
    msg = _fit_expect_param_error(Est(max_features="foo"), Est, "max_features")
    assert "sqrt" in msg or "log2" in msg, msg


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("value", [1, 70000])
def test_invalid_max_bins_raises(Est, value):
    msg = _fit_expect_param_error(Est(max_bins=value), Est, "max_bins")
    assert ALLOWED_HINT.search(msg), msg


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_invalid_device_raises(Est):
    msg = _fit_expect_param_error(Est(device="tpu"), Est, "device")
    assert "cpu" in msg.lower(), msg


# --------------------------------------------------------------------------
# Predict-time consistency with fit
# --------------------------------------------------------------------------


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
@pytest.mark.parametrize("delta", [-1, 1], ids=["fewer", "more"])
def test_predict_wrong_number_of_features_raises(Est, delta):
    est, X, _ = fitted(Est)
    rng = np.random.RandomState(1)
    X_bad = rng.normal(size=(5, N_FEATURES + delta))
    with pytest.raises(ValueError, match="(?i)feature"):
        est.predict(X_bad)


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_apply_wrong_number_of_features_raises(Est):
    est, X, _ = fitted(Est)
    with pytest.raises(ValueError, match="(?i)feature"):
        est.apply(np.zeros((5, N_FEATURES + 1)))


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_predict_dataframe_different_column_names_raises(Est):
    X, y = make_data(Est)
    df_fit = pd.DataFrame(X, columns=["a", "b", "c"])
    est = Est().fit(df_fit, y)
    np.testing.assert_array_equal(est.feature_names_in_, ["a", "b", "c"])
    df_bad = pd.DataFrame(X, columns=["a", "b", "zzz"])
    with pytest.raises(ValueError, match="(?i)feature name|column|names"):
        est.predict(df_bad)


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_predict_dataframe_same_column_names(Est):
    """The fit's column names, in order: no warning, the predictions of the same values as an array (which
    scikit-learn's check warns about)."""
    X, y = make_data(Est)
    est = Est().fit(pd.DataFrame(X, columns=["a", "b", "c"]), y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        on_frame = est.predict(pd.DataFrame(X, columns=["a", "b", "c"]))
    with pytest.warns(UserWarning, match="feature names"):
        on_array = est.predict(X)
    np.testing.assert_array_equal(on_frame, on_array)


@pytest.mark.parametrize("Est", ESTIMATORS, ids=EST_IDS)
def test_predict_dataframe_reordered_column_names_raises(Est):
    X, y = make_data(Est)
    est = Est().fit(pd.DataFrame(X, columns=["a", "b", "c"]), y)
    df_bad = pd.DataFrame(X[:, [2, 0, 1]], columns=["c", "a", "b"])
    with pytest.raises(ValueError, match="(?i)feature name|column|names|order"):
        est.predict(df_bad)


# --------------------------------------------------------------------------
# Not fitted
# --------------------------------------------------------------------------

CLF_METHODS = ["predict", "predict_proba", "predict_log_proba", "apply", "decision_path"]
REG_METHODS = ["predict", "apply", "decision_path"]


@pytest.mark.parametrize(
    "Est, method",
    [(DecisionTreeClassifier, m) for m in CLF_METHODS]
    + [(DecisionTreeRegressor, m) for m in REG_METHODS],
    ids=[f"classifier-{m}" for m in CLF_METHODS] + [f"regressor-{m}" for m in REG_METHODS],
)
def test_predict_before_fit_raises_not_fitted(Est, method):
    X, _ = make_data(Est)
    with pytest.raises(NotFittedError):
        getattr(Est(), method)(X)


# --------------------------------------------------------------------------
# Unusual-but-valid targets
# --------------------------------------------------------------------------


@pytest.mark.parametrize("label", [3, "only"], ids=["int", "str"])
def test_classifier_single_class_fits_and_predicts_it(label):
    X, _ = make_data(DecisionTreeClassifier)
    y = np.array([label] * len(X))
    est = DecisionTreeClassifier().fit(X, y)
    assert list(est.classes_) == [label]
    assert est.n_classes_ == 1
    pred = est.predict(X)
    assert pred.shape == (len(X),)
    assert np.all(pred == label)
    proba = est.predict_proba(X)
    assert proba.shape == (len(X), 1)
    np.testing.assert_allclose(proba, 1.0)


def test_classifier_string_labels():
    X, yint = make_data(DecisionTreeClassifier)
    names = np.array(["dog", "cat"])
    y = names[yint]
    est = DecisionTreeClassifier(random_state=0).fit(X, y)
    assert list(est.classes_) == ["cat", "dog"]
    pred = est.predict(X)
    assert pred.shape == (len(X),)
    assert set(pred) <= {"cat", "dog"}
    # The classes are separable on feature 0: an unconstrained tree fits them.
    np.testing.assert_array_equal(pred, y)
    proba = est.predict_proba(X)
    assert proba.shape == (len(X), 2)
    np.testing.assert_array_equal(est.classes_[proba.argmax(axis=1)], pred)


def test_classifier_string_labels_three_classes_list_input():
    X, _ = make_data(DecisionTreeClassifier)
    y = ["b" if v < -0.5 else ("a" if v < 0.5 else "c") for v in X[:, 0]]
    est = DecisionTreeClassifier(random_state=0).fit(X.tolist(), y)
    assert list(est.classes_) == ["a", "b", "c"]
    np.testing.assert_array_equal(est.predict(X), np.asarray(y))


@pytest.mark.parametrize("n_outputs", [2, 3])
def test_regressor_multi_output(n_outputs):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(60, 4))
    Y = np.column_stack([X[:, k % 4] * (k + 1) for k in range(n_outputs)])
    est = DecisionTreeRegressor(random_state=0).fit(X, Y)
    pred = est.predict(X)
    assert pred.shape == (60, n_outputs)
    # Distinct rows, unconstrained tree: training data is fitted exactly.
    np.testing.assert_allclose(pred, Y, rtol=1e-5, atol=1e-5)
    X_test = rng.normal(size=(7, 4))
    assert est.predict(X_test).shape == (7, n_outputs)


@pytest.mark.parametrize(
    "y",
    [
        np.array([3, 1, 3, 2, 1, 1, 7]),
        np.array([0.5, -1.0, 0.5, 2.25]),
        np.array(["b", "a", "c", "a", "b"]),
        np.array(["yes", "no", "no"], dtype=object),
        np.array([True, False, True]),
        np.array([4, 4, 4]),
    ],
    ids=["int", "float", "str", "object", "bool", "one-class"],
)
def test_encode_classes_is_numpys_unique_with_inverse(y):
    from gputrees._validation import encode_classes

    classes, codes = encode_classes(y)
    want_classes, want_codes = np.unique(y, return_inverse=True)
    assert classes.dtype == want_classes.dtype and np.array_equal(classes, want_classes)
    assert codes.dtype == np.int64 and np.array_equal(codes, want_codes.reshape(-1))
    assert np.array_equal(classes[codes], y)
