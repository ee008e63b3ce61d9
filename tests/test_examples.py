"""The examples of examples/ run in their fast mode and give the course notes' figures."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
HAS_MPL = importlib.util.find_spec("matplotlib") is not None


def _load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(name, tmp_path, *extra):
    return _load(name).main(["--fast", "--out", str(tmp_path), *extra])


def _saved(tmp_path, *names):
    for name in names:
        assert (tmp_path / name).is_file() == HAS_MPL, name


def test_iris_proba(tmp_path, capsys):
    out = _run("iris_proba", tmp_path)
    np.testing.assert_allclose(out["proba"], [0.0, 0.907, 0.093], atol=1e-3)
    np.testing.assert_allclose(out["proba"], [0.0, 49 / 54, 5 / 54], rtol=1e-12)
    assert out["predict"] == 1
    assert out["leaf_counts"] == [0, 49, 5]
    assert out["entropy"] == pytest.approx(0.445, abs=1e-3)
    assert out["gini"] == pytest.approx(1 - (49 / 54) ** 2 - (5 / 54) ** 2)
    text = capsys.readouterr().out
    assert "predict_proba([[5, 1.5]]) = [0.000, 0.907, 0.093]" in text
    assert "predict([[5, 1.5]]) = [1]" in text
    _saved(tmp_path, "iris_regions.png", "iris_tree.png")


def test_titanic_tree(tmp_path, capsys):
    out = _run("titanic_tree", tmp_path)
    assert (out["n_died"], out["n_survived"]) == (549, 342)
    died, survived = out["train_root"]
    assert died + survived == 668
    leaves = out["leaves"]
    assert sum(leaf["died"] for leaf in leaves) == died
    assert sum(leaf["survived"] for leaf in leaves) == survived
    assert all(leaf["died"] + leaf["survived"] == leaf["samples"] for leaf in leaves)
    texts = [leaf["text"] for leaf in leaves]
    assert (
        "131 females, Pclass 1 or 2, above age 2.5 (or age unknown): 6 died and 125 survived; "
        "survival probability 95.4%"
    ) in texts
    assert any(t.startswith("297 males, above age 13 (or age unknown), paying 26.14 or less") for t in texts)
    assert 0.75 < out["test_accuracy"] < 0.85
    text = capsys.readouterr().out
    assert "891 passengers, 549 died and 342 survived" in text
    assert "|--- Sex in {male}" in text
    assert f"test accuracy: {out['test_accuracy']:.3f}" in text
    _saved(tmp_path, "titanic_tree.png")


def test_hitters_pruning(tmp_path, capsys):
    out = _run("hitters_pruning", tmp_path)
    # the course's regions: 5.107, 5.999 (5.998 here, the notes round up), 6.740
    np.testing.assert_allclose(out["three_region_means"], [5.107, 5.999, 6.740], atol=1e-3)
    assert out["three_region_sizes"] == [90, 90, 83]
    assert len(out["alphas"]) == 12
    assert np.all(np.diff(out["path_impurities"]) >= -1e-12)
    assert out["best_leaves"] in out["n_leaves"]
    assert out["cv_mse"][out["alphas"].index(out["best_alpha"])] == pytest.approx(min(out["cv_mse"]))
    assert out["best_leaves"] < out["full_tree_leaves"]
    assert all(math.isfinite(v) for v in out["cv_mse"])
    text = capsys.readouterr().out
    assert "Years <= 4.5" in text and "$165,139" in text
    _saved(tmp_path, "hitters_pruning.png")


def test_overfitting_depth(tmp_path):
    out = _run("overfitting_depth", tmp_path)
    train = [out["depth"][d][0] for d in (1, 2, 3, 5, 10)]
    test = [out["depth"][d][1] for d in (1, 2, 3, 5, 10)]
    assert np.all(np.diff(train) <= 0)
    assert train[-1] < 0.05
    assert test[-1] > min(test)  # deeper is worse past the best depth
    assert out["min_samples_leaf"][1][0] == 0.0  # pure leaves fit the training set
    rep = out["reduced_error"]
    assert rep["leaves_after"] < rep["leaves_before"]
    assert rep["validation_error_after"] < rep["validation_error_before"]
    assert np.all(np.diff(rep["validation_errors"]) < 0)
    _saved(tmp_path, "overfitting.png")


def test_criteria(tmp_path):
    out = _run("criteria", tmp_path)
    half = out["p"].index(0.5)
    assert out["impurities"]["gini"][half] == 0.5
    assert out["impurities"]["entropy"][half] == 1.0
    assert out["impurities"]["misclassification"][half] == 0.5
    for c in ("gini", "entropy", "misclassification"):
        assert out["impurities"][c][0] == 0.0
        assert out["titanic_root"][c] == pytest.approx(out["titanic_root_formula"][c], rel=1e-12)
    assert out["titanic_root"]["gini"] == pytest.approx(1 - (549 / 891) ** 2 - (342 / 891) ** 2)
    trees = out["trees"]
    assert {t["root_split"] for t in trees.values()} == {"Sex"}
    assert all(t["depth"] <= 4 for t in trees.values())
    _saved(tmp_path, "criteria.png")


def test_examples_run_without_matplotlib(tmp_path, monkeypatch):
    """matplotlib is optional: without it the figures are printed, not saved."""
    _load("iris_proba")  # puts examples/ on sys.path
    common = sys.modules["_common"]
    monkeypatch.setattr(common, "pyplot", lambda: None)
    module = _load("iris_proba")
    monkeypatch.setattr(module, "pyplot", lambda: None)
    out = module.main(["--out", str(tmp_path)])
    assert out["predict"] == 1
    assert list(tmp_path.iterdir()) == []


def test_boosting_example(tmp_path, capsys):
    if not (_load("boosting").DEFAULT_DATA_DIR / "adult.csv").is_file():
        pytest.skip("shared/data/adult.csv not found")
    out = _run("boosting", tmp_path)
    # early stopping kept the rounds up to the best validation loss, which is the minimum
    assert out["n_iter"] == out["best_iteration"] + 1 < out["n_fitted"]
    assert out["validation_loss"][out["n_iter"]] == pytest.approx(out["validation_loss"][1:].min())
    assert out["auc"] > 0.85
    _saved(tmp_path, "boosting_learning_curve.png")


def test_custom_objective_example(tmp_path):
    if not (_load("custom_objective").DEFAULT_DATA_DIR / "bank_marketing.csv").is_file():
        pytest.skip("shared/data/bank_marketing.csv not found")
    out = _run("custom_objective", tmp_path)
    # the focal loss finds more of the rare class at the 0.5 threshold, ranking about as well
    assert out["focal loss"]["recall"] > out["log-loss"]["recall"] + 0.1
    assert out["focal loss"]["auc"] > out["log-loss"]["auc"] - 0.02


def test_overfitting_regions(tmp_path):
    out = _run("overfitting", tmp_path)
    train = [out["depth"][d][0] for d in (1, 2, 3, 5, 10)]
    test = [out["depth"][d][1] for d in (1, 2, 3, 5, 10)]
    assert np.all(np.diff(train) <= 0) and train[-1] < 0.05
    assert out["best_depth"] < 10 and test[-1] > min(test)
    _saved(tmp_path, "overfitting_regions.png")


def test_displays(tmp_path):
    out = _run("displays", tmp_path)
    assert all(a > 0.9 for a in out["auc"].values())
    assert out["confusion_matrix"].sum() == 143  # a quarter of the 569 rows
    _saved(tmp_path, "displays.png")


def test_dask_example(tmp_path):
    pytest.importorskip("distributed")
    out = _run("dask_boosting", tmp_path)
    assert out["auc"] > 0.8
    # the saved model loads as the plain estimator and predicts what the Dask one does
    X_test = out["X_test"]
    np.testing.assert_array_equal(out["loaded"].predict_proba(X_test), out["model"].predict_proba(X_test))
