"""Tests of the tree exporters (gputrees.export_text, gputrees.export_graphviz)."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.exceptions import NotFittedError

import gputrees
from gputrees import DecisionTreeClassifier, DecisionTreeRegressor, export_graphviz, export_text

NODE_LINE = re.compile(r'^(\d+) \[label="([^"]*(?:\\"[^"]*)*)"(?:, fillcolor="#[0-9a-f]{8}")?\] ;$')
EDGE_LINE = re.compile(r"^(\d+) -> (\d+)(?: \[.*\])? ;$")


@pytest.fixture(scope="module")
def iris():
    return load_iris()


@pytest.fixture(scope="module")
def iris_tree(iris):
    return DecisionTreeClassifier(max_depth=2, random_state=0).fit(iris.data, iris.target)


@pytest.fixture(scope="module")
def iris_regressor(iris):
    # predict sepal length from the other three features
    return DecisionTreeRegressor(max_depth=2, random_state=0).fit(iris.data[:, 1:], iris.data[:, 0])


@pytest.fixture(scope="module")
def categorical_tree():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    n = 200
    color = rng.choice(["red", "green", "blue", "yellow"], n)
    df = pd.DataFrame(
        {
            "noise": rng.standard_normal(n),
            "color": pd.Categorical(color),
        }
    )
    y = np.isin(color, ["red", "blue"]).astype(int)
    return DecisionTreeClassifier(max_depth=1, random_state=0).fit(df, y)


# ---------------------------------------------------------------------------
# export_text
# ---------------------------------------------------------------------------


def test_text_feature_names_and_conditions(iris, iris_tree):
    text = export_text(iris_tree, feature_names=iris.feature_names)
    tree = iris_tree.tree_
    used = {iris.feature_names[f] for f in tree.feature[tree.children_left >= 0]}
    assert used  # the tree has splits
    for name in used:
        assert name in text
    assert "<=" in text
    assert ">" in text
    lines = text.splitlines()
    class_lines = [ln for ln in lines if "class:" in ln]
    assert len(class_lines) == tree.n_leaves
    # one "<=" and one ">" line per internal node
    n_internal = int(np.sum(tree.children_left >= 0))
    assert sum("<=" in ln for ln in lines) == n_internal
    assert sum(">" in ln and "<=" not in ln for ln in lines) == n_internal
    assert text.endswith("\n")
    # every line starts with the tree drawing
    assert all(ln.startswith("|---") or ln.startswith("|   ") for ln in lines)
    # the root's split is the first line, at depth 1
    root = iris.feature_names[tree.feature[0]]
    assert lines[0].startswith(f"|--- {root} <= ")


def test_text_iris_known_tree(iris, iris_tree):
    """The depth-2 iris tree is the textbook one: petal length 2.45, petal width 1.75."""
    text = export_text(iris_tree, feature_names=iris.feature_names)
    expected = (
        "|--- petal length (cm) <= 2.45\n"
        "|   |--- class: 0\n"
        "|--- petal length (cm) >  2.45\n"
        "|   |--- petal width (cm) <= 1.75\n"
        "|   |   |--- class: 1\n"
        "|   |--- petal width (cm) >  1.75\n"
        "|   |   |--- class: 2\n"
    )
    assert text == expected


def test_text_default_feature_names(iris_tree):
    text = export_text(iris_tree)
    assert "feature_2" in text
    assert "petal" not in text


def test_text_class_names(iris, iris_tree):
    text = export_text(iris_tree, class_names=list(iris.target_names))
    for name in iris.target_names:
        assert f"class: {name}" in text
    with pytest.raises(ValueError, match="class_names"):
        export_text(iris_tree, class_names=["a", "b"])


def test_text_show_details(iris, iris_tree):
    plain = export_text(iris_tree, feature_names=iris.feature_names)
    assert "samples =" not in plain
    detailed = export_text(iris_tree, feature_names=iris.feature_names, show_details=True)
    assert "samples =" in detailed
    assert "gini =" in detailed
    assert "proba [" in detailed
    samples = [int(m) for m in re.findall(r"samples = (\d+)", detailed)]
    tree = iris_tree.tree_
    assert sorted(samples) == sorted(tree.n_node_samples[tree.children_left < 0].tolist())
    assert sum(samples) == 150


def test_text_max_depth_truncation(iris, iris_tree):
    text = export_text(iris_tree, feature_names=iris.feature_names, max_depth=1)
    assert "truncated branch" in text
    assert "petal width" not in text  # the depth-1 split is hidden
    assert "|   |--- truncated branch of depth 1" in text.splitlines()
    full = export_text(iris_tree, feature_names=iris.feature_names, max_depth=2)
    assert "truncated branch" not in full
    root_only = export_text(iris_tree, max_depth=0)
    assert root_only.splitlines() == ["|--- truncated branch of depth 2"]


def test_text_spacing_and_decimals(iris_tree):
    text = export_text(iris_tree, spacing=5, decimals=4)
    assert text.splitlines()[0] == "|----- feature_2 <= 2.4500"
    with pytest.raises(ValueError, match="spacing"):
        export_text(iris_tree, spacing=0)
    with pytest.raises(ValueError, match="decimals"):
        export_text(iris_tree, decimals=-1)


@pytest.mark.parametrize("export", [export_text, export_graphviz], ids=["text", "graphviz"])
@pytest.mark.parametrize("n_names", [3, 5, 0])
def test_feature_names_wrong_length(iris_tree, export, n_names):
    with pytest.raises(ValueError, match="feature_names"):
        export(iris_tree, feature_names=[f"f{i}" for i in range(n_names)])


@pytest.mark.parametrize("export", [export_text, export_graphviz], ids=["text", "graphviz"])
def test_not_fitted(export):
    with pytest.raises(NotFittedError):
        export(DecisionTreeClassifier())


def test_text_regressor_shows_value(iris_regressor):
    text = export_text(iris_regressor)
    assert "value: [" in text
    assert "class" not in text
    leaves = iris_regressor.tree_.children_left < 0
    values = [float(v) for v in re.findall(r"value: \[([-0-9.]+)\]", text)]
    assert len(values) == int(leaves.sum())
    np.testing.assert_allclose(
        sorted(values), sorted(iris_regressor.tree_.value[leaves, 0, 0]), atol=0.005
    )
    detailed = export_text(iris_regressor, show_details=True)
    assert "squared_error =" in detailed
    assert "samples =" in detailed


def test_text_dataframe_feature_names():
    pd = pytest.importorskip("pandas")
    iris = load_iris(as_frame=True)
    clf = DecisionTreeClassifier(max_depth=1).fit(iris.data, iris.target)
    text = export_text(clf)
    assert "petal" in text


def test_text_categorical_split(categorical_tree):
    text = export_text(categorical_tree)
    lines = text.splitlines()
    assert lines[0] == "|--- color in {green, yellow}"
    assert "|--- color not in {green, yellow}" in lines
    assert "noise" not in text


# ---------------------------------------------------------------------------
# export_graphviz
# ---------------------------------------------------------------------------


def _parse_dot(dot):
    lines = dot.strip().splitlines()
    nodes = {}
    edges = []
    for ln in lines[3:-1]:
        m = NODE_LINE.match(ln)
        if m:
            nodes[int(m.group(1))] = m.group(2)
            continue
        m = EDGE_LINE.match(ln)
        assert m, f"unexpected DOT line: {ln!r}"
        edges.append((int(m.group(1)), int(m.group(2))))
    return lines, nodes, edges


def test_graphviz_structure(iris, iris_tree):
    dot = export_graphviz(iris_tree, feature_names=iris.feature_names)
    lines, nodes, edges = _parse_dot(dot)
    assert dot.startswith("digraph Tree {")
    assert lines[0] == "digraph Tree {"
    assert lines[-1] == "}"
    assert dot.endswith("}\n")
    tree = iris_tree.tree_
    assert sorted(nodes) == list(range(tree.node_count))
    expected_edges = sorted(
        (n, int(c))
        for n in range(tree.node_count)
        for c in (tree.children_left[n], tree.children_right[n])
        if c >= 0
    )
    assert sorted(edges) == expected_edges
    assert "gini =" in dot
    assert "samples =" in dot
    assert "class =" in dot
    assert "value = [" in dot
    assert "petal length (cm) <= 2.450" in nodes[0]
    assert 'headlabel="True"' in dot and 'headlabel="False"' in dot
    # every node shows impurity, samples, value and class
    for label in nodes.values():
        parts = label.split("\\n")
        assert any(p.startswith("gini = ") for p in parts)
        assert any(p.startswith("samples = ") for p in parts)
        assert any(p.startswith("class = ") for p in parts)
    assert "samples = 150" in nodes[0]
    assert "value = [50, 50, 50]" in nodes[0]


def test_graphviz_filled(iris_tree):
    plain = export_graphviz(iris_tree)
    assert "fillcolor" not in plain
    filled = export_graphviz(iris_tree, filled=True)
    _, nodes, _ = _parse_dot(filled)
    fill_lines = [ln for ln in filled.splitlines() if "fillcolor=" in ln]
    assert len(fill_lines) == iris_tree.tree_.node_count
    assert 'style="filled"' in filled
    # a pure leaf is fully opaque
    assert re.search(r'fillcolor="#[0-9a-f]{6}ff"', filled)


def test_graphviz_options(iris_tree):
    tree = iris_tree.tree_
    dot = export_graphviz(iris_tree, impurity=False, node_ids=True, proportion=True, rounded=True)
    assert "gini" not in dot
    assert "node #0" in dot
    assert "samples = 100.0%" in dot
    assert "rounded" in dot
    _, nodes, _ = _parse_dot(dot)
    assert len(nodes) == tree.node_count
    dot = export_graphviz(iris_tree, class_names=["setosa", "versicolor", "virginica"])
    assert "class = setosa" in dot


def test_graphviz_max_depth(iris_tree):
    dot = export_graphviz(iris_tree, max_depth=0)
    assert '[label="(...)"]' in dot
    assert dot.count("(...)") == 2  # the two children of the root
    assert "samples = 150" in dot
    assert "samples = 50\\n" not in dot


def test_graphviz_out_file(tmp_path, iris_tree):
    path = tmp_path / "tree.dot"
    dot = export_graphviz(iris_tree, out_file=str(path))
    assert path.read_text(encoding="utf-8") == dot
    buf = io.StringIO()
    dot2 = export_graphviz(iris_tree, out_file=buf)
    assert buf.getvalue() == dot2 == dot


def test_graphviz_regressor_shows_value(iris_regressor):
    dot = export_graphviz(iris_regressor, filled=True)
    _, nodes, _ = _parse_dot(dot)
    assert "squared_error =" in dot
    assert "class" not in dot
    for n, label in nodes.items():
        m = re.search(r"value = ([-0-9.]+)", label)
        assert m, label
        assert float(m.group(1)) == pytest.approx(iris_regressor.tree_.value[n, 0, 0], abs=5e-4)
    assert dot.count("fillcolor=") == iris_regressor.tree_.node_count


def test_graphviz_categorical_split(categorical_tree):
    dot = export_graphviz(categorical_tree)
    assert "color in {green, yellow}" in dot
    assert "color" in categorical_tree.feature_names_in_.tolist()


def test_categorical_tree_sends_listed_categories_left(categorical_tree):
    """The categories printed in the split are the ones that go left."""
    pd = pytest.importorskip("pandas")
    tree = categorical_tree.tree_
    assert bool(tree.is_categorical[0])
    assert sorted(np.asarray(tree.categories_left[0]).tolist()) == ["green", "yellow"]
    X = pd.DataFrame(
        {
            "noise": np.zeros(4),
            "color": pd.Categorical(["red", "green", "blue", "yellow"]),
        }
    )
    # green/yellow -> class 0, red/blue -> class 1
    assert categorical_tree.predict(X).tolist() == [1, 0, 1, 0]


def test_export_is_public():
    assert gputrees.export_text is export_text
    assert gputrees.export_graphviz is export_graphviz
