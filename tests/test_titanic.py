"""The course notes' Titanic facts, with the bundled data set."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from sklearn.model_selection import train_test_split

import gputrees
from gputrees.datasets import load_titanic

FEATURES = ["Pclass", "Sex", "Age", "SibSp", "Parch", "Fare", "Embarked"]
SEX = FEATURES.index("Sex")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(params=["array", "frame"])
def titanic(request):
    return load_titanic(as_frame=request.param == "frame")


def _split(data):
    return train_test_split(
        data.data, data.target, test_size=0.25, random_state=0, stratify=data.target
    )


def test_dataset_shape_and_missing_values():
    data = load_titanic()
    assert data.data.shape == (891, 7)
    assert data.feature_names == FEATURES
    assert data.target_names == ["died", "survived"]
    assert int(np.isnan(data.data[:, FEATURES.index("Age")]).sum()) == 177
    assert int(np.isnan(data.data[:, FEATURES.index("Embarked")]).sum()) == 2
    frame = load_titanic(as_frame=True)
    assert str(frame.data["Sex"].dtype) == "category"
    assert str(frame.data["Embarked"].dtype) == "category"
    assert int(frame.data["Embarked"].isna().sum()) == 2
    X, y = load_titanic(return_X_y=True)
    np.testing.assert_array_equal(X, data.data)


def test_root_holds_549_died_342_survived(titanic):
    tree = gputrees.DecisionTreeClassifier(max_depth=1).fit(titanic.data, titanic.target).tree_
    counts = tree.value[0, 0] * tree.weighted_n_node_samples[0]
    np.testing.assert_allclose(counts, [549.0, 342.0])
    assert tree.n_node_samples[0] == 891
    # Gini of the root: 1 - (549/891)^2 - (342/891)^2
    assert tree.impurity[0] == pytest.approx(1 - (549 / 891) ** 2 - (342 / 891) ** 2, rel=1e-12)


def test_first_split_is_on_sex_numeric():
    X, y = load_titanic(return_X_y=True)
    est = gputrees.DecisionTreeClassifier(max_depth=3).fit(X, y)
    tree = est.tree_
    assert tree.feature[0] == SEX
    assert not tree.is_categorical[0]
    assert tree.threshold[0] == 0.5  # Sex coded 0 = male, 1 = female
    left, right = tree.children_left[0], tree.children_right[0]
    # the men (left) died much more often than the women
    assert tree.n_node_samples[left] == 577 and tree.n_node_samples[right] == 314
    assert tree.value[left, 0, 1] < 0.2 < 0.7 < tree.value[right, 0, 1]
    assert np.argmax(est.feature_importances_) == SEX


def test_first_split_is_on_sex_category():
    data = load_titanic(as_frame=True)
    est = gputrees.DecisionTreeClassifier(max_depth=3).fit(data.data, data.target)
    tree = est.tree_
    assert tree.feature[0] == SEX
    assert tree.is_categorical[0]
    assert est.is_categorical_[SEX] and est.is_categorical_[FEATURES.index("Embarked")]
    assert set(tree.categories_left[0].tolist()) in ({"male"}, {"female"})
    sent_left = tree.categories_left[0].tolist()
    men = tree.children_left[0] if sent_left == ["male"] else tree.children_right[0]
    assert tree.n_node_samples[men] == 577
    assert list(est.feature_names_in_) == FEATURES


def test_depth_3_tree_test_accuracy(titanic):
    X_train, X_test, y_train, y_test = _split(titanic)
    est = gputrees.DecisionTreeClassifier(max_depth=3, min_samples_split=20, min_samples_leaf=5)
    est.fit(X_train, y_train)
    assert est.get_depth() == 3
    assert est.tree_.n_node_samples[est.tree_.children_left < 0].min() >= 5
    acc = est.score(X_test, y_test)
    assert acc > 0.77


def test_numeric_and_category_encodings_agree():
    """Sex has two categories: the categorical split is the numerical 0.5 split."""
    a = load_titanic()
    b = load_titanic(as_frame=True)
    ea = gputrees.DecisionTreeClassifier(max_depth=3).fit(a.data, a.target)
    eb = gputrees.DecisionTreeClassifier(max_depth=3).fit(b.data, b.target)
    np.testing.assert_allclose(ea.predict_proba(a.data), eb.predict_proba(b.data))


def test_export_text_mentions_sex_at_the_root(titanic):
    est = gputrees.DecisionTreeClassifier(max_depth=3).fit(titanic.data, titanic.target)
    names = None if hasattr(titanic.data, "columns") else FEATURES
    text = gputrees.export_text(est, feature_names=names, class_names=titanic.target_names)
    first = text.splitlines()[0]
    assert first.startswith("|--- Sex")
    # both branches of the root are at depth 1
    depth1 = [line for line in text.splitlines() if line.startswith("|--- ")]
    assert len(depth1) == 2 and all("Sex" in line for line in depth1)
    assert "died" in text and "survived" in text


def test_demo_runs_and_returns_accuracy(capsys):
    spec = importlib.util.spec_from_file_location("demo_titanic", EXAMPLES / "demo_titanic.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    acc = demo.main([])
    assert isinstance(acc, float)
    assert 0.77 < acc <= 1.0
    out = capsys.readouterr().out
    assert "891 passengers, 549 died / 342 survived" in out
    assert "Sex" in out
    assert f"{acc:.3f}" in out
