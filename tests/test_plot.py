"""gputrees.plot renders headless (Agg) to valid PNGs; scikit-learn's displays work with our estimators."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris, make_moons

import gputrees

mpl = pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install gputrees[plot])")
mpl.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from gputrees import plot  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png(ax, tmp_path, name="fig.png"):
    path = tmp_path / name
    ax.figure.savefig(path, dpi=40)
    plt.close(ax.figure)
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 1000
    return path


def _nodes(ax):
    """The node boxes, root first (the highest box)."""
    return sorted((t for t in ax.texts if t.get_gid() == "node"), key=lambda t: -t.get_position()[1])


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


@pytest.fixture(scope="module")
def cancer():
    return load_breast_cancer(return_X_y=True)


def test_import_does_not_import_matplotlib():
    code = "import sys, gputrees, gputrees.plot, gputrees.callbacks; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_missing_matplotlib_names_the_extra(monkeypatch, iris):
    tree = gputrees.DecisionTreeClassifier(max_depth=2).fit(*iris)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install gputrees\[plot\]"):
        plot.plot_tree(tree)


def test_plot_tree_one_box_per_node(iris, tmp_path):
    X, y = iris
    tree = gputrees.DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    ax = plot.plot_tree(tree, feature_names=["sl", "sw", "pl", "pw"], class_names=["setosa", "versicolor", "virginica"])
    boxes = _nodes(ax)
    assert len(boxes) == tree.tree_.node_count
    root = boxes[0].get_text()
    assert root.startswith("pl <= 2.45") or root.startswith("pw <= 0.80")
    assert "gini = 0.67" in root and "samples = 150" in root and "class = setosa" in root
    assert len(ax.lines) == tree.tree_.node_count - 1  # one edge per non-root node
    _png(ax, tmp_path)


def test_plot_tree_max_depth_and_regressor(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = X[:, 0] + rng.normal(scale=0.1, size=300)
    tree = gputrees.DecisionTreeRegressor(max_depth=6).fit(X, y)
    ax = plot.plot_tree(tree, max_depth=2)
    depth = np.zeros(tree.tree_.node_count, dtype=int)  # nodes are numbered breadth-first
    for node in range(tree.tree_.node_count):
        for child in (tree.tree_.children_left[node], tree.tree_.children_right[node]):
            if child >= 0:
                depth[child] = depth[node] + 1
    assert len(_nodes(ax)) == int(np.sum(depth <= 2))
    assert sum(t.get_text().endswith("...") for t in _nodes(ax)) == 4  # the depth-2 nodes, all split further
    assert "squared_error" in _nodes(ax)[0].get_text() and "value = " in _nodes(ax)[0].get_text()
    _png(ax, tmp_path)
    with pytest.raises(ValueError, match="max_depth"):
        plot.plot_tree(tree, max_depth=-1)


def test_plot_tree_of_ensembles(cancer, tmp_path):
    X, y = cancer
    forest = gputrees.RandomForestClassifier(n_estimators=3, max_depth=2, random_state=0).fit(X, y)
    ax = plot.plot_tree(forest, index=2)
    assert len(_nodes(ax)) == forest.estimators_[2].tree_.node_count and ax.get_title() == "tree 2"
    _png(ax, tmp_path, "forest.png")
    with pytest.raises(IndexError, match="out of range"):
        plot.plot_tree(forest, index=3)
    gb = gputrees.GradientBoostingClassifier(n_estimators=3, max_depth=2, early_stopping=False).fit(X, y)
    ax = plot.plot_tree(gb, index=1)
    assert len(_nodes(ax)) == int(gb.trees_.node_count[1]) and ax.get_title() == "round 1"
    leaves = [t.get_text() for t in _nodes(ax) if "value = " in t.get_text()]
    values = gb.tree_values_[1, : int(gb.trees_.node_count[1])]
    assert len(leaves) == int(np.sum(np.asarray(gb.trees_.left)[1, : len(values)] < 0))
    _png(ax, tmp_path, "gb.png")
    ada = gputrees.AdaBoostClassifier(n_estimators=2).fit(X, y)
    assert len(_nodes(plot.plot_tree(ada, index=1))) == 3  # a stump
    plt.close("all")


def test_plot_importance_top_k(cancer, tmp_path):
    X, y = cancer
    names = [f"f{i}" for i in range(X.shape[1])]
    gb = gputrees.GradientBoostingClassifier(n_estimators=10, max_depth=3, early_stopping=False).fit(X, y)
    ax = plot.plot_importance(gb, top_k=5, feature_names=names)
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(bars) == 5
    widths = [b.get_width() for b in sorted(bars, key=lambda b: -b.get_y())]  # top to bottom
    np.testing.assert_allclose(widths, np.sort(gb.feature_importances_)[::-1][:5])
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[int(np.argmax(ax.get_yticks()))] == names[int(np.argmax(gb.feature_importances_))]
    _png(ax, tmp_path)
    ax = plot.plot_importance(gb, top_k=None, importance_type="split")
    assert len(ax.patches) == X.shape[1]
    plt.close("all")
    with pytest.raises(ValueError, match="top_k"):
        plot.plot_importance(gb, top_k=0)


def test_plot_learning_curve(cancer, tmp_path):
    X, y = cancer
    gb = gputrees.GradientBoostingClassifier(n_estimators=20, early_stopping=False)
    gb.fit(X[:400], y[:400], eval_set=[(X[400:], y[400:])])
    ax = plot.plot_learning_curve(gb)
    train, val = ax.get_lines()[:2]
    np.testing.assert_allclose(train.get_ydata(), -gb.train_score_)
    np.testing.assert_allclose(val.get_ydata(), -gb.validation_score_)
    _png(ax, tmp_path, "gb.png")
    ada = gputrees.AdaBoostClassifier(n_estimators=8, random_state=0).fit(X[:400], y[:400])
    ax = plot.plot_learning_curve(ada, X[:400], y[:400], X_val=X[400:], y_val=y[400:])
    train, val = ax.get_lines()
    assert len(train.get_xdata()) == len(ada.estimators_)
    assert train.get_ydata()[-1] == pytest.approx(1 - ada.score(X[:400], y[:400]))
    assert val.get_ydata()[-1] == pytest.approx(1 - ada.score(X[400:], y[400:]))
    _png(ax, tmp_path, "ada.png")
    with pytest.raises(ValueError, match="pass the training X and y"):
        plot.plot_learning_curve(ada)
    with pytest.raises(TypeError, match="no learning curve"):
        plot.plot_learning_curve(gputrees.DecisionTreeClassifier().fit(X, y))


def test_plot_decision_boundary(tmp_path):
    X, y = make_moons(200, noise=0.2, random_state=0)
    tree = gputrees.DecisionTreeClassifier(max_depth=4).fit(X, y)
    ax = plot.plot_decision_boundary(tree, X, y, grid_resolution=50)
    scatters = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(scatters) == 1 and scatters[0].get_offsets().shape == (200, 2)
    assert len(ax.collections) >= 2  # the regions' contour set and the points
    _png(ax, tmp_path)
    with pytest.raises(ValueError, match=r"shape \(n_samples, 2\)"):
        plot.plot_decision_boundary(tree, np.c_[X, X], y)


def test_sklearn_displays_work_with_our_estimators(cancer, tmp_path):
    from sklearn.metrics import ConfusionMatrixDisplay, RocCurveDisplay, confusion_matrix, roc_auc_score

    X, y = cancer
    gb = gputrees.GradientBoostingClassifier(n_estimators=10, early_stopping=False).fit(X[:400], y[:400])
    roc = RocCurveDisplay.from_estimator(gb, X[400:], y[400:])
    assert roc.roc_auc == pytest.approx(roc_auc_score(y[400:], gb.predict_proba(X[400:])[:, 1]))
    _png(roc.ax_, tmp_path, "roc.png")
    forest = gputrees.RandomForestClassifier(n_estimators=10, random_state=0).fit(X[:400], y[:400])
    cm = ConfusionMatrixDisplay.from_estimator(forest, X[400:], y[400:])
    np.testing.assert_array_equal(cm.confusion_matrix, confusion_matrix(y[400:], forest.predict(X[400:])))
    _png(cm.ax_, tmp_path, "cm.png")
