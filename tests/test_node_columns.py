"""A batch's nodes written in place into reserved columns (gputrees._node_columns) give the batch the lists
give."""

from __future__ import annotations

import numpy as np
import pytest

import gputrees
from gputrees import _node_columns
from gputrees._node_columns import NodeColumns

from estimator_zoo import assert_same_model


def _data(categorical: bool):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 6))
    if categorical:
        X[:, 0] = rng.integers(0, 7, size=3000)
    y = (X[:, 0] > 3).astype(int) + (X[:, 1] + 0.5 * rng.normal(size=3000) > 0).astype(int) + (X[:, 2] > 1)
    return X, y


CASES = [
    ("extra trees, 4 classes", gputrees.ExtraTreesClassifier, dict(n_estimators=6), False),
    ("extra trees, categorical", gputrees.ExtraTreesClassifier, dict(n_estimators=6, categorical_features=[0]),
     True),
    ("deep forest, regression", gputrees.RandomForestRegressor, dict(n_estimators=6, max_features=3), False),
    ("deep forest, categorical", gputrees.RandomForestClassifier, dict(n_estimators=6, categorical_features=[0]),
     True),
]


@pytest.mark.parametrize("name, cls, params, categorical", CASES, ids=[c[0] for c in CASES])
def test_columns_give_the_lists_batch(name, cls, params, categorical, monkeypatch):
    X, y = _data(categorical)
    made = []
    reserve = NodeColumns.reserve.__func__

    def spy(klass, *args):
        cols = reserve(klass, *args)
        made.append(cols is not None)
        return cols

    monkeypatch.setattr(NodeColumns, "reserve", classmethod(spy))
    monkeypatch.setattr(_node_columns, "MIN_RESERVED_BYTES", 1 << 62)  # never: the lists
    lists = cls(random_state=0, n_jobs=2, **params).fit(X, y)
    assert made and not any(made)
    made.clear()
    monkeypatch.setattr(_node_columns, "MIN_RESERVED_BYTES", 0)
    columns = cls(random_state=0, n_jobs=2, **params).fit(X, y)
    assert made and all(made)
    assert_same_model(columns, lists)
    np.testing.assert_array_equal(columns.predict(X), lists.predict(X))


def test_columns_grow_past_their_room_and_keep_what_they_hold():
    cols = NodeColumns(node_room=2, split_room=1, n_channels=2, cat_width=3)
    cols.add_nodes(np.array([-1, 0]), np.array([0, 1]), np.array([0, 0]), np.array([[1.0, 2.0], [3.0, 4.0]]))
    cols.add_nodes(np.array([0, 1, 1]), np.array([1, 2, 2]), np.array([0, 0, 0]), np.full((3, 2), 5.0))
    parent, depth, tree, stats = cols.nodes()
    np.testing.assert_array_equal(parent, [-1, 0, 0, 1, 1])
    np.testing.assert_array_equal(depth, [0, 1, 1, 2, 2])
    np.testing.assert_array_equal(stats[:2], [[1.0, 2.0], [3.0, 4.0]])
    ids, *_, first_child, is_cat, cat_left = cols.split_slices(3)
    ids[...] = [0, 1, 2]
    first_child[...] = [1, 3, 5]
    is_cat[...] = False
    assert not cat_left.any()  # zeroed: the subtree kernel writes only categorical splits' rows
    got = cols.splits()
    np.testing.assert_array_equal(got[0], [0, 1, 2])
    np.testing.assert_array_equal(got[5], [1, 3, 5])
    assert got[7].shape == (3, 3)


def test_room_past_the_machines_share_keeps_the_lists(monkeypatch):
    monkeypatch.setattr(_node_columns, "MIN_RESERVED_BYTES", 0)
    monkeypatch.setattr(_node_columns, "_machine_bytes", lambda: 1 << 20)
    assert NodeColumns.reserve(10, 100_000, 6, 0) is None
    assert NodeColumns.reserve(1, 100, 6, 0) is not None
