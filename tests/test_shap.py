"""SHAP values (``shap_values``): additivity for every family, the kernels against each other, and
independent implementations (the shap package's TreeExplainer, XGBoost's pred_contribs / pred_interactions)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.exceptions import NotFittedError

import gputrees
from gputrees.datasets import load_titanic
from gputrees.kernels import get_kernels, numba_available
from gputrees.kernels import treeshap

DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"

FAMILIES = {
    "tree_clf": lambda: gputrees.DecisionTreeClassifier(max_depth=5, random_state=0),
    "forest_clf": lambda: gputrees.RandomForestClassifier(n_estimators=4, max_depth=5, random_state=0),
    "extra_clf": lambda: gputrees.ExtraTreesClassifier(n_estimators=4, max_depth=5, random_state=0),
    "adaboost_clf": lambda: gputrees.AdaBoostClassifier(n_estimators=4, random_state=0),
    "gboost_clf": lambda: gputrees.GradientBoostingClassifier(n_estimators=5, max_depth=3, random_state=0),
    "tree_reg": lambda: gputrees.DecisionTreeRegressor(max_depth=5, random_state=0),
    "forest_reg": lambda: gputrees.RandomForestRegressor(n_estimators=4, max_depth=5, random_state=0),
    "extra_reg": lambda: gputrees.ExtraTreesRegressor(n_estimators=4, max_depth=5, random_state=0),
    "gboost_reg": lambda: gputrees.GradientBoostingRegressor(n_estimators=5, max_depth=3, random_state=0),
}


def _titanic():
    d = load_titanic(as_frame=True)  # Sex and Embarked categories, missing ages
    return d.data, np.asarray(d.target)


def _csv(name, target, n, positive=None):
    path = DATA_DIR / f"{name}.csv"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    df = pd.read_csv(path).sample(n=n, random_state=0)
    y = df.pop(target)
    for c in df.columns:
        if not pd.api.types.is_numeric_dtype(df[c]):
            df[c] = df[c].astype("category")
    y = (y.astype(str).str.strip() == positive).to_numpy().astype(np.int64) if positive else y.to_numpy()
    return df, y


DATASETS = {
    "titanic": _titanic,
    "breast_cancer": lambda: load_breast_cancer(return_X_y=True),
    "iris": lambda: load_iris(return_X_y=True),
    "california": lambda: _csv("california_housing", "median_house_value", 1500),
    "adult": lambda: _csv("adult", "income", 1500, positive=">50K"),
}
CLASSIFICATION = ["titanic", "breast_cancer", "iris", "adult"]


def _raw(est, X):
    """The output shap_values explains, as the estimator predicts it."""
    if isinstance(est, (gputrees.GradientBoostingClassifier, gputrees.AdaBoostClassifier)):
        return est.decision_function(X)
    if hasattr(est, "predict_proba"):
        return est.predict_proba(X)
    return est.predict(X)


def _rows(X, n=60):
    return X.iloc[:n] if hasattr(X, "iloc") else X[:n]


CASES = [(d, f) for d in DATASETS for f in FAMILIES
         if (d in CLASSIFICATION) == f.endswith("_clf") or (d == "titanic" and f.endswith("_reg"))]


@pytest.mark.parametrize("data,family", CASES)
def test_additivity(data, family):
    X, y = DATASETS[data]()
    est = FAMILIES[family]().fit(X, y)
    Xs = _rows(X)
    phi = est.shap_values(Xs)
    raw = _raw(est, Xs)
    n_features = X.shape[1]
    assert phi.shape == (raw.shape[0], n_features + 1) + tuple(raw.shape[1:])
    scale = max(1.0, float(np.abs(raw).max()))
    np.testing.assert_allclose(phi.sum(axis=1), raw, rtol=1e-9, atol=1e-9 * scale)
    # the bias is the same for every row
    np.testing.assert_array_equal(phi[:, -1, ...], np.broadcast_to(phi[:1, -1, ...], phi[:, -1, ...].shape))


@pytest.mark.parametrize("family", ["forest_clf", "gboost_clf", "adaboost_clf", "forest_reg"])
def test_interactions_sum_to_values(family):
    X, y = _titanic()
    est = FAMILIES[family]().fit(X, y)
    Xs = _rows(X, 25)
    phi = est.shap_values(Xs)
    inter = est.shap_values(Xs, interactions=True)
    f1 = X.shape[1] + 1
    assert inter.shape == (25, f1, f1) + phi.shape[2:]
    np.testing.assert_allclose(inter.sum(axis=2), phi, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(inter, np.swapaxes(inter, 1, 2), atol=1e-12)  # symmetric


def _kernel_sets():
    names = ["reference", "bincount"] + (["numba"] if numba_available() else [])
    return names


@pytest.mark.parametrize("family", ["forest_clf", "gboost_clf", "extra_reg", "adaboost_clf"])
@pytest.mark.parametrize("interactions", [False, True])
def test_kernel_sets_agree(family, interactions):
    X, y = _titanic()
    est = FAMILIES[family]().fit(X, y)
    xp, Xp, model = est._shap_model(_rows(X, 40))
    ref = treeshap.tree_shap(xp, model.batch, model.values, model.cover, Xp, model.missing_bin,
                             interactions=interactions)
    for name in _kernel_sets():
        out = get_kernels(np, name).tree_shap(xp, model.batch, model.values, model.cover, Xp, model.missing_bin,
                                              interactions=interactions)
        np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-13, err_msg=name)


def test_reference_on_strict_arrays():
    xs = pytest.importorskip("array_api_strict")
    X, y = _titanic()
    est = FAMILIES["gboost_clf"]().fit(X, y)
    xp, Xp, model = est._shap_model(_rows(X, 20))
    ref = treeshap.tree_shap(xp, model.batch, model.values, model.cover, Xp, model.missing_bin)
    b = model.batch
    strict = type(b)(**{f: (xs.asarray(np.asarray(getattr(b, f))) if f not in ("node_count", "max_depth")
                            and getattr(b, f) is not None else getattr(b, f))
                        for f in b.__dataclass_fields__})
    out = treeshap.tree_shap(xs, strict, xs.asarray(model.values), xs.asarray(model.cover), xs.asarray(Xp),
                             model.missing_bin, interactions=False)
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-12, atol=1e-14)


def test_output_follows_input_namespace():
    xs = pytest.importorskip("array_api_strict")
    X, y = load_breast_cancer(return_X_y=True)
    est = FAMILIES["gboost_clf"]().fit(X, y)
    out = est.shap_values(xs.asarray(X[:10]))
    assert not isinstance(out, np.ndarray)
    np.testing.assert_allclose(np.asarray(out), est.shap_values(X[:10]))


# -- bad input ---------------------------------------------------------------------
@pytest.mark.parametrize("family", list(FAMILIES) + ["adaboost_reg"])
def test_unfitted(family):
    est = FAMILIES[family]() if family in FAMILIES else gputrees.AdaBoostRegressor()
    with pytest.raises(NotFittedError):
        est.shap_values(np.zeros((2, 3)))


@pytest.mark.parametrize("family", list(FAMILIES))
def test_predict_checks(family):
    X, y = load_breast_cancer(return_X_y=True)
    X = X[:, :5]
    est = FAMILIES[family]().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.shap_values(X[:4, :4])
    bad = X[:4].copy()
    bad[0, 1] = np.inf
    with pytest.raises(ValueError, match="(?i)inf"):
        est.shap_values(bad)
    df = pd.DataFrame(X, columns=[f"c{i}" for i in range(5)])
    named = FAMILIES[family]().fit(df, y)
    with pytest.raises(ValueError, match="feature names"):
        named.shap_values(df.rename(columns={"c0": "other"}).iloc[:4])


def test_adaboost_regressor_has_no_tree_shap():
    X, y = load_breast_cancer(return_X_y=True)
    est = gputrees.AdaBoostRegressor(n_estimators=3, random_state=0).fit(X, y.astype(float))
    with pytest.raises(TypeError, match="weighted median"):
        est.shap_values(X[:3])
    # its learners are trees, which do
    assert est.estimators_[0].shap_values(X[:3]).shape == (3, X.shape[1] + 1)


# -- independent implementations ------------------------------------------------------
def _numeric_with_missing():
    X, y = load_breast_cancer(return_X_y=True)
    X = X[:, :8].copy()
    rng = np.random.default_rng(0)
    X[rng.random(X.shape) < 0.1] = np.nan
    return X.astype(np.float32).astype(np.float64), y  # float32 values: XGBoost reads float32


def _shap_dict(trees, scale):
    """shap's dictionary form of a tree ensemble from gputrees ``tree_`` objects, each tree's values scaled."""
    out = []
    for t in trees:
        out.append(dict(
            children_left=t.children_left, children_right=t.children_right,
            children_default=np.where(t.missing_go_to_left.astype(bool), t.children_left, t.children_right),
            features=np.where(t.feature < 0, -2, t.feature), thresholds=np.where(t.feature < 0, 0.0, t.threshold),
            values=t.value.reshape(t.node_count, -1) * scale, node_sample_weight=t.weighted_n_node_samples,
        ))
    return {"trees": out}


@pytest.mark.parametrize("family", ["tree_clf", "tree_reg", "forest_clf", "forest_reg", "extra_clf", "extra_reg"])
def test_against_shap_tree_explainer(family):
    shap = pytest.importorskip("shap")
    X, y = _numeric_with_missing()
    if family.endswith("_reg"):
        y = y + X[:, 0] / 10  # a regression target
        y = np.nan_to_num(y)
    est = FAMILIES[family]().fit(X, y)
    trees = [est.tree_] if family.startswith("tree") else [e.tree_ for e in est.estimators_]
    explainer = shap.TreeExplainer(_shap_dict(trees, 1.0 / len(trees)))
    Xs = X[:40]
    ours = est.shap_values(Xs)
    theirs = np.asarray(explainer.shap_values(Xs))
    bias = np.asarray(explainer.expected_value)
    if ours.ndim == 2:
        theirs, bias = theirs.reshape(ours[:, :-1].shape), bias.reshape(())
    np.testing.assert_allclose(ours[:, :-1], theirs, atol=1e-6)
    np.testing.assert_allclose(ours[:, -1], np.broadcast_to(bias, ours[:, -1].shape), atol=1e-6)
    inter = est.shap_values(Xs[:15], interactions=True)
    theirs_i = np.asarray(explainer.shap_interaction_values(Xs[:15]))
    np.testing.assert_allclose(inter[:, :-1, :-1].reshape(theirs_i.shape), theirs_i, atol=1e-6)


@pytest.mark.parametrize("task", ["binary", "multiclass", "regression"])
def test_against_xgboost(task, tmp_path):
    xgb = pytest.importorskip("xgboost")
    X, y = _numeric_with_missing()
    if task == "multiclass":
        y = np.digitize(np.nan_to_num(X[:, 0]), np.nanquantile(X[:, 0], [0.33, 0.66]))
        est = gputrees.GradientBoostingClassifier(n_estimators=5, max_depth=4, random_state=0)
    elif task == "binary":
        est = gputrees.GradientBoostingClassifier(n_estimators=5, max_depth=4, random_state=0)
    else:
        y = np.nan_to_num(X[:, 1]) + y
        est = gputrees.GradientBoostingRegressor(n_estimators=5, max_depth=4, random_state=0)
    est.fit(X, y)
    path = tmp_path / "model.json"
    est.export_xgboost_json(path)
    booster = xgb.Booster(model_file=str(path))
    Xs = X[:50]
    dm = xgb.DMatrix(Xs, missing=np.nan)
    contribs = booster.predict(dm, pred_contribs=True)
    inter = booster.predict(dm, pred_interactions=True)
    ours = est.shap_values(Xs)
    ours_i = est.shap_values(Xs, interactions=True)
    if task == "multiclass":  # XGBoost: (n, K, F + 1[, F + 1]); ours: outputs last
        ours, ours_i = np.moveaxis(ours, -1, 1), np.moveaxis(ours_i, -1, 1)
    np.testing.assert_allclose(ours, contribs, atol=1e-6)
    np.testing.assert_allclose(ours_i, inter, atol=1e-6)


# -- explainer, command line, plot, example ---------------------------------------------
def test_tree_explainer_gives_shap_explanation():
    shap = pytest.importorskip("shap")
    X, y = _titanic()
    est = FAMILIES["gboost_clf"]().fit(X, y)
    rows = _rows(X, 30)
    explanation = gputrees.explain.TreeExplainer(est)(rows)
    assert isinstance(explanation, shap.Explanation)
    phi = est.shap_values(rows)
    np.testing.assert_array_equal(explanation.values, phi[:, :-1])
    np.testing.assert_array_equal(explanation.base_values, phi[:, -1])
    assert list(explanation.feature_names) == list(X.columns)
    sex = list(X.columns).index("Sex")
    codes = X["Sex"].cat.codes.to_numpy()[:30]
    np.testing.assert_array_equal(explanation.data[:, sex], codes)


def test_tree_explainer_without_shap(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "shap", None)  # import shap -> ImportError
    X, y = load_iris(return_X_y=True)
    est = FAMILIES["forest_clf"]().fit(X, y)
    explainer = gputrees.explain.TreeExplainer(est)
    explanation = explainer(X[:10])
    assert isinstance(explanation, gputrees.explain.Explanation)
    phi = est.shap_values(X[:10])
    np.testing.assert_array_equal(explanation.values, phi[:, :-1, :])
    np.testing.assert_array_equal(explainer.shap_values(X[:10]), phi[:, :-1, :])
    np.testing.assert_array_equal(explainer.expected_value, phi[0, -1, :])
    inter = explainer.shap_interaction_values(X[:5])
    assert inter.shape == (5, 4, 4, 3)
    with pytest.raises(TypeError, match="shap_values"):
        gputrees.explain.TreeExplainer(object())


def test_cli_explain(tmp_path):
    from gputrees.cli import main

    X, y = _titanic()
    est = FAMILIES["forest_clf"]().fit(X, y)
    model = tmp_path / "forest.gpt"
    est.save_model(model)
    data = tmp_path / "rows.csv"
    X.iloc[:20].assign(Survived=y[:20]).to_csv(data, index=False)
    out = tmp_path / "contributions.csv"
    assert main(["explain", str(model), str(data), "--out", str(out)]) == 0
    table = pd.read_csv(out)
    assert list(table.columns[: X.shape[1] + 1]) == [f"{c}[0]" for c in X.columns] + ["bias[0]"]
    loaded = gputrees.load_model(model)
    proba = loaded.predict_proba(pd.read_csv(data).drop(columns="Survived").astype(X.dtypes.to_dict()))
    per_class = table.to_numpy().reshape(20, 2, X.shape[1] + 1).sum(axis=2)
    np.testing.assert_allclose(per_class, proba, rtol=1e-9, atol=1e-12)


def test_cli_explain_refuses_adaboost_regressor(tmp_path, capsys):
    from gputrees.cli import main

    X, y = load_breast_cancer(return_X_y=True)
    est = gputrees.AdaBoostRegressor(n_estimators=2, random_state=0).fit(X[:, :3], y.astype(float))
    model = tmp_path / "ada.gpt"
    est.save_model(model)
    data = tmp_path / "rows.csv"
    pd.DataFrame(X[:5, :3]).to_csv(data, index=False)
    assert main(["explain", str(model), str(data), "--out", str(tmp_path / "c.csv")]) != 0
    assert "weighted median" in capsys.readouterr().err


def test_plot_shap_summary():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from gputrees.plot import plot_shap_summary

    X, y = _titanic()
    est = FAMILIES["gboost_clf"]().fit(X, y)
    ax = plot_shap_summary(est, _rows(X, 80), top_k=4)
    assert len(ax.collections) == 4
    assert len(ax.get_yticklabels()) == 4
    forest = FAMILIES["forest_clf"]().fit(X, y)
    with pytest.raises(ValueError, match="output="):
        plot_shap_summary(forest, _rows(X, 10))
    assert len(plot_shap_summary(forest, _rows(X, 10), output=1, top_k=None).collections) == X.shape[1]


def test_example_explain(tmp_path):
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "examples" / "explain.py"
    if not (DATA_DIR / "adult.csv").is_file():
        pytest.skip("shared/data/adult.csv not found")
    spec = importlib.util.spec_from_file_location("example_explain", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main(["--fast", "--out", str(tmp_path)])
    assert out["adult_gap"] < 1e-9
    assert abs(out["titanic_phi"].sum() - out["titanic_proba"]) < 1e-9
    has_mpl = importlib.util.find_spec("matplotlib") is not None
    for name in ("shap_beeswarm.png", "shap_waterfall.png"):
        assert (tmp_path / name).is_file() == has_mpl


VARIANTS = {
    "ccp_pruned_tree": lambda: gputrees.DecisionTreeClassifier(ccp_alpha=0.01, random_state=0),
    "best_first_tree": lambda: gputrees.DecisionTreeRegressor(max_leaf_nodes=12, random_state=0),
    "balanced_forest": lambda: gputrees.RandomForestClassifier(n_estimators=3, max_depth=4, max_samples=0.5,
                                                               class_weight="balanced_subsample", random_state=0),
    "subsampled_booster": lambda: gputrees.GradientBoostingClassifier(n_estimators=4, max_depth=3, subsample=0.6,
                                                                      colsample_bytree=0.7, random_state=0),
    "monotonic_booster": lambda: gputrees.GradientBoostingRegressor(n_estimators=4, max_depth=3,
                                                                    monotonic_cst=[1, 0, 0, 0, 0, 0, 0],
                                                                    random_state=0),
    "multi_output_tree": lambda: gputrees.DecisionTreeRegressor(max_depth=4, random_state=0),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_additivity_of_variants(variant):
    X, y = _titanic()
    X = X.drop(columns=["Sex", "Embarked"]) if variant == "monotonic_booster" else X
    if variant == "monotonic_booster":
        X = X.assign(s=0.0, e=0.0)
    y = np.stack([y, np.nan_to_num(X["Age"].to_numpy())], axis=1) if variant == "multi_output_tree" else y
    w = np.linspace(0.5, 2.0, len(X))
    est = VARIANTS[variant]().fit(X, y, sample_weight=w)
    rows = _rows(X, 40)
    phi = est.shap_values(rows)
    raw = _raw(est, rows)
    if variant == "monotonic_booster":
        raw = est.predict(rows)  # squared error: the raw score
    np.testing.assert_allclose(phi.sum(axis=1), raw, rtol=1e-9, atol=1e-9 * max(1.0, float(np.abs(raw).max())))


def test_float32_rows_of_a_booster():
    X, y = load_breast_cancer(return_X_y=True)
    est = FAMILIES["gboost_clf"]().fit(X, y)
    X32 = X[:30].astype(np.float32)
    np.testing.assert_allclose(est.shap_values(X32).sum(axis=1), est.decision_function(X32), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(est.shap_values(X32), est.shap_values(X32.astype(np.float64)))
