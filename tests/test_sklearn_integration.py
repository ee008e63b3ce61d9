"""gputrees estimators inside scikit-learn's machinery."""

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from sklearn.ensemble import (
    BaggingClassifier,
    BaggingRegressor,
    StackingClassifier,
    StackingRegressor,
    VotingClassifier,
)
from sklearn.exceptions import NotFittedError
from sklearn.inspection import permutation_importance
from sklearn.linear_model import LogisticRegression, RidgeCV
from sklearn.model_selection import (
    GridSearchCV,
    StratifiedKFold,
    cross_val_score,
    cross_validate,
    train_test_split,
)
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks
from sklearn.utils.validation import check_is_fitted

from gputrees import DecisionTreeClassifier, DecisionTreeRegressor

EXPECTED_CLF_PARAMS = {
    "criterion",
    "max_depth",
    "min_samples_split",
    "min_samples_leaf",
    "min_weight_fraction_leaf",
    "max_features",
    "random_state",
    "max_leaf_nodes",
    "min_impurity_decrease",
    "class_weight",
    "max_bins",
    "categorical_features",
    "device",
}
EXPECTED_REG_PARAMS = EXPECTED_CLF_PARAMS - {"class_weight"}


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


@pytest.fixture(scope="module")
def breast_cancer():
    return load_breast_cancer(return_X_y=True)


@pytest.fixture(scope="module")
def diabetes():
    return load_diabetes(return_X_y=True)


def _scaled_lr():
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))


# --------------------------------------------------------------------------
# Pipeline
# --------------------------------------------------------------------------


def test_pipeline_classifier_iris(iris):
    X, y = iris
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    pipe = Pipeline(
        [("scaler", StandardScaler()), ("tree", DecisionTreeClassifier(random_state=0))]
    )
    pipe.fit(Xtr, ytr)
    assert pipe.score(Xte, yte) > 0.85
    proba = pipe.predict_proba(Xte)
    assert proba.shape == (len(Xte), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
    tree = pipe.named_steps["tree"]
    assert tree.n_features_in_ == 4
    np.testing.assert_array_equal(tree.classes_, [0, 1, 2])
    np.testing.assert_array_equal(pipe.classes_, [0, 1, 2])


def test_pipeline_regressor_diabetes(diabetes):
    X, y = diabetes
    pipe = make_pipeline(StandardScaler(), DecisionTreeRegressor(max_depth=3, random_state=0))
    scores = cross_val_score(pipe, X, y, cv=5)
    assert scores.mean() > 0.15


def test_pipeline_set_params_reaches_tree(iris):
    X, y = iris
    pipe = make_pipeline(StandardScaler(), DecisionTreeClassifier(random_state=0))
    pipe.set_params(decisiontreeclassifier__max_depth=1)
    pipe.fit(X, y)
    tree = pipe[-1]
    assert tree.max_depth == 1
    assert tree.get_depth() == 1
    assert tree.get_n_leaves() == 2


def test_pipeline_with_dataframe_keeps_feature_names(iris):
    X, y = load_iris(return_X_y=True, as_frame=True)
    tree = DecisionTreeClassifier(max_depth=3, random_state=0)
    pipe = Pipeline([("tree", tree)]).fit(X, y)
    np.testing.assert_array_equal(pipe.feature_names_in_, X.columns)
    np.testing.assert_array_equal(tree.feature_names_in_, X.columns)
    assert pipe.score(X, y) > 0.9


# --------------------------------------------------------------------------
# Model selection
# --------------------------------------------------------------------------


def test_grid_search_over_max_depth(iris):
    X, y = iris
    depths = [1, 2, 3, 4, None]
    gs = GridSearchCV(
        DecisionTreeClassifier(random_state=0),
        param_grid={"max_depth": depths},
        cv=StratifiedKFold(5, shuffle=True, random_state=0),
        error_score="raise",
    )
    gs.fit(X, y)
    assert len(gs.cv_results_["params"]) == len(depths)
    assert gs.best_params_["max_depth"] in depths
    assert gs.best_score_ > 0.9
    assert isinstance(gs.best_estimator_, DecisionTreeClassifier)
    means = dict(zip([p["max_depth"] for p in gs.cv_results_["params"]],
                     gs.cv_results_["mean_test_score"]))
    # A stump can separate at most 2 of the 3 iris classes: max_depth is honoured.
    assert means[1] < 0.75
    assert means[1] < gs.best_score_
    best_depth = gs.best_params_["max_depth"]
    if best_depth is not None:
        assert gs.best_estimator_.get_depth() <= best_depth
    assert gs.score(X, y) > 0.9


def test_grid_search_regressor_criterion(diabetes):
    X, y = diabetes
    gs = GridSearchCV(
        DecisionTreeRegressor(max_depth=3, random_state=0),
        param_grid={"criterion": ["squared_error", "friedman_mse"], "min_samples_leaf": [1, 10]},
        cv=3,
        scoring="r2",
        error_score="raise",
    )
    gs.fit(X, y)
    assert len(gs.cv_results_["params"]) == 4
    assert gs.best_score_ > 0.15


def test_cross_val_score_iris(iris):
    X, y = iris
    scores = cross_val_score(DecisionTreeClassifier(random_state=0), X, y, cv=5)
    assert scores.shape == (5,)
    assert scores.mean() > 0.85


def test_cross_val_score_breast_cancer_parallel(breast_cancer):
    # n_jobs=2 pickles the estimator into worker processes.
    X, y = breast_cancer
    scores = cross_val_score(
        DecisionTreeClassifier(max_depth=4, min_samples_leaf=5, random_state=0),
        X, y, cv=5, n_jobs=2,
    )
    assert scores.mean() > 0.88


def test_cross_val_score_regressor_diabetes(diabetes):
    X, y = diabetes
    scores = cross_val_score(DecisionTreeRegressor(max_depth=3, random_state=0), X, y, cv=5)
    assert scores.mean() > 0.15


def test_cross_validate_probability_scorers(breast_cancer):
    X, y = breast_cancer
    res = cross_validate(
        DecisionTreeClassifier(max_depth=4, min_samples_leaf=5, random_state=0),
        X, y, cv=5, scoring=["roc_auc", "neg_log_loss", "accuracy"],
    )
    assert res["test_roc_auc"].mean() > 0.85
    assert res["test_accuracy"].mean() > 0.88
    assert np.all(np.isfinite(res["test_neg_log_loss"]))


# --------------------------------------------------------------------------
# clone / params
# --------------------------------------------------------------------------


@pytest.mark.parametrize("Est", [DecisionTreeClassifier, DecisionTreeRegressor])
def test_clone_unfitted_and_fitted(Est, iris):
    X, y = iris
    est = Est(max_depth=3, min_samples_leaf=2, max_bins=64, random_state=0)
    c = clone(est)
    assert c is not est
    assert c.get_params() == est.get_params()

    est.fit(X, y)
    c2 = clone(est)
    assert c2.get_params() == est.get_params()
    with pytest.raises(NotFittedError):
        check_is_fitted(c2)
    with pytest.raises(NotFittedError):
        c2.predict(X)
    # Refitting the clone reproduces the original (fixed random_state).
    c2.fit(X, y)
    np.testing.assert_array_equal(c2.predict(X), est.predict(X))


@pytest.mark.parametrize(
    "Est, expected",
    [(DecisionTreeClassifier, EXPECTED_CLF_PARAMS), (DecisionTreeRegressor, EXPECTED_REG_PARAMS)],
    ids=["classifier", "regressor"],
)
def test_get_params_set_params_round_trip(Est, expected):
    est = Est()
    params = est.get_params()
    # Every documented parameter is exposed (the implementation may add
    # further documented ones, e.g. memory_limit).
    missing = expected - set(params)
    assert not missing, f"parameters missing from get_params(): {missing}"
    # defaults from the documented signature
    assert params["max_depth"] is None
    assert params["min_samples_split"] == 2
    assert params["min_samples_leaf"] == 1
    assert params["max_bins"] == 255
    assert params["device"] is None
    assert params["categorical_features"] is None
    assert params["criterion"] == (
        "gini" if Est is DecisionTreeClassifier else "squared_error"
    )

    new = {
        "max_depth": 4,
        "min_samples_leaf": 3,
        "max_bins": 32,
        "random_state": 7,
        "criterion": "entropy" if Est is DecisionTreeClassifier else "friedman_mse",
    }
    ret = est.set_params(**new)
    assert ret is est
    got = est.get_params()
    for k, v in new.items():
        assert got[k] == v
        assert getattr(est, k) == v
    # Rebuilding from get_params gives an identical configuration.
    est2 = Est(**got)
    assert est2.get_params() == got
    # Unknown parameter names are rejected.
    with pytest.raises(ValueError):
        est.set_params(not_a_param=1)


def test_is_classifier_is_regressor():
    clf = DecisionTreeClassifier()
    reg = DecisionTreeRegressor()
    assert is_classifier(clf)
    assert not is_regressor(clf)
    assert is_regressor(reg)
    assert not is_classifier(reg)
    assert is_classifier(make_pipeline(StandardScaler(), clf))
    assert is_regressor(make_pipeline(StandardScaler(), reg))


# --------------------------------------------------------------------------
# Ensembles
# --------------------------------------------------------------------------


def test_voting_classifier_soft(breast_cancer):
    X, y = breast_cancer
    vote = VotingClassifier(
        [
            ("tree", DecisionTreeClassifier(max_depth=4, min_samples_leaf=5, random_state=0)),
            ("lr", _scaled_lr()),
        ],
        voting="soft",
    )
    scores = cross_val_score(vote, X, y, cv=5)
    assert scores.mean() > 0.9
    vote.fit(X, y)
    proba = vote.predict_proba(X[:20])
    assert proba.shape == (20, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
    tree_proba = vote.named_estimators_["tree"].predict_proba(X[:20])
    lr_proba = vote.named_estimators_["lr"].predict_proba(X[:20])
    np.testing.assert_allclose(proba, (tree_proba + lr_proba) / 2, rtol=1e-6, atol=1e-9)


def test_stacking_classifier(breast_cancer):
    X, y = breast_cancer
    stack = StackingClassifier(
        [
            ("tree", DecisionTreeClassifier(max_depth=4, min_samples_leaf=5, random_state=0)),
            ("lr", _scaled_lr()),
        ],
        final_estimator=LogisticRegression(max_iter=2000),
        cv=5,
    )
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    stack.fit(Xtr, ytr)
    assert stack.score(Xte, yte) > 0.9
    assert stack.predict_proba(Xte).shape == (len(Xte), 2)


def test_stacking_regressor(diabetes):
    X, y = diabetes
    stack = StackingRegressor(
        [("tree", DecisionTreeRegressor(max_depth=3, random_state=0)), ("ridge", RidgeCV())],
        final_estimator=RidgeCV(),
    )
    scores = cross_val_score(stack, X, y, cv=5)
    assert scores.mean() > 0.35


def test_bagging_classifier(breast_cancer):
    X, y = breast_cancer
    bag = BaggingClassifier(
        estimator=DecisionTreeClassifier(random_state=0), n_estimators=20, random_state=0
    )
    scores = cross_val_score(bag, X, y, cv=5)
    assert scores.mean() > 0.9
    bag.fit(X, y)
    assert len(bag.estimators_) == 20
    assert all(isinstance(e, DecisionTreeClassifier) for e in bag.estimators_)
    proba = bag.predict_proba(X[:10])
    assert proba.shape == (10, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)


def test_bagging_classifier_iris_oob(iris):
    X, y = iris
    bag = BaggingClassifier(
        estimator=DecisionTreeClassifier(), n_estimators=30, oob_score=True, random_state=0
    ).fit(X, y)
    assert bag.oob_score_ > 0.85


def test_bagging_regressor(diabetes):
    X, y = diabetes
    bag = BaggingRegressor(
        estimator=DecisionTreeRegressor(min_samples_leaf=10, random_state=0),
        n_estimators=30,
        random_state=0,
    )
    scores = cross_val_score(bag, X, y, cv=5)
    assert scores.mean() > 0.3


# --------------------------------------------------------------------------
# Inspection
# --------------------------------------------------------------------------


def test_permutation_importance_finds_informative_feature():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(400, 5))
    y = (X[:, 2] > 0).astype(int)
    est = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    assert np.argmax(est.feature_importances_) == 2
    res = permutation_importance(est, X, y, n_repeats=5, random_state=0)
    assert np.argmax(res.importances_mean) == 2
    assert res.importances_mean[2] > 0.3


# --------------------------------------------------------------------------
# Pickle
# --------------------------------------------------------------------------


def test_pickle_classifier_identical_predictions(breast_cancer):
    X, y = breast_cancer
    est = DecisionTreeClassifier(max_depth=6, random_state=0).fit(X, y)
    est2 = pickle.loads(pickle.dumps(est))
    assert type(est2) is DecisionTreeClassifier
    assert est2.get_params() == est.get_params()
    np.testing.assert_array_equal(est2.predict(X), est.predict(X))
    np.testing.assert_array_equal(est2.predict_proba(X), est.predict_proba(X))
    np.testing.assert_array_equal(est2.apply(X), est.apply(X))
    np.testing.assert_array_equal(est2.classes_, est.classes_)
    np.testing.assert_array_equal(est2.feature_importances_, est.feature_importances_)
    assert est2.get_depth() == est.get_depth()
    assert est2.get_n_leaves() == est.get_n_leaves()
    assert est2.n_features_in_ == est.n_features_in_ == X.shape[1]


def test_pickle_regressor_identical_predictions(diabetes):
    X, y = diabetes
    est = DecisionTreeRegressor(max_depth=6, random_state=0).fit(X, y)
    est2 = pickle.loads(pickle.dumps(est, protocol=pickle.HIGHEST_PROTOCOL))
    np.testing.assert_array_equal(est2.predict(X), est.predict(X))
    np.testing.assert_array_equal(est2.apply(X), est.apply(X))
    assert est2.get_depth() == est.get_depth()
    assert est2.score(X, y) == est.score(X, y)


def test_pickle_dataframe_with_categorical(iris):
    X, y = load_iris(return_X_y=True, as_frame=True)
    X = X.copy()
    X["bucket"] = pd.Categorical(np.where(X["sepal length (cm)"] > 5.8, "big", "small"))
    est = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, y)
    est2 = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(est2.feature_names_in_, X.columns)
    np.testing.assert_array_equal(est2.predict(X), est.predict(X))
    np.testing.assert_array_equal(est2.predict_proba(X), est.predict_proba(X))


def test_pickle_unfitted_round_trip():
    est = DecisionTreeClassifier(max_depth=3, criterion="entropy", max_bins=16)
    est2 = pickle.loads(pickle.dumps(est))
    assert est2.get_params() == est.get_params()
    with pytest.raises(NotFittedError):
        est2.predict(np.zeros((2, 3)))


# --------------------------------------------------------------------------
# scikit-learn's estimator check suite
# --------------------------------------------------------------------------


@parametrize_with_checks([DecisionTreeClassifier(), DecisionTreeRegressor()])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
