"""Model files: save_model / load_model round trips, hostile files, a seeded fuzz test, pickle."""

from __future__ import annotations

import io
import json
import os
import pickle
import zipfile

import joblib
import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.tree import DecisionTreeClassifier as SkTree

import gputrees
from gputrees import ModelFormatError, load_model
from gputrees.datasets import load_titanic

from conftest import _cupy_available

SMALL = {
    "DecisionTreeClassifier": {"max_depth": 4},
    "DecisionTreeRegressor": {"max_depth": 4},
    "RandomForestClassifier": {"n_estimators": 4, "max_depth": 4, "random_state": 0},
    "RandomForestRegressor": {"n_estimators": 4, "max_depth": 4, "random_state": 0},
    "ExtraTreesClassifier": {"n_estimators": 4, "max_depth": 4, "random_state": 0},
    "ExtraTreesRegressor": {"n_estimators": 4, "max_depth": 4, "random_state": 0},
    "AdaBoostClassifier": {"n_estimators": 4, "random_state": 0},
    "AdaBoostRegressor": {"n_estimators": 4, "random_state": 0},
    "GradientBoostingClassifier": {"n_estimators": 4, "max_depth": 3},
    "GradientBoostingRegressor": {"n_estimators": 4, "max_depth": 3},
}
CLASSIFIERS = [n for n in SMALL if n.endswith("Classifier")]
REGRESSORS = [n for n in SMALL if n.endswith("Regressor")]
MULTI_OUTPUT = ["DecisionTreeRegressor", "RandomForestRegressor", "ExtraTreesRegressor"]


def test_every_estimator_is_covered():
    public = {n for n in gputrees.__all__ if isinstance(getattr(gputrees, n), type) and hasattr(getattr(gputrees, n), "fit")}
    assert public == set(SMALL)


@pytest.fixture(scope="module")
def titanic():
    data = load_titanic(as_frame=True)
    return data.data, data.target  # Sex, Embarked categories; Age has NaN


@pytest.fixture(scope="module")
def iris_nan():
    X, y = load_iris(return_X_y=True)
    X = X.copy()
    X[::7, 2] = np.nan
    X[3::11, 0] = np.nan
    return X, y


def _predictions(est, X):
    out = [est.predict(X)]
    if hasattr(est, "predict_proba"):
        out.append(est.predict_proba(X))
    return out


def _round_trip(est, X, tmp_path):
    path = tmp_path / "model.gpt"
    assert est.save_model(path) is est
    loaded = load_model(path)
    assert type(loaded) is type(est)
    assert loaded.get_params() == est.get_params() or type(est).__name__.startswith("AdaBoost")
    for a, b in zip(_predictions(est, X), _predictions(loaded, X)):
        assert np.array_equal(a, b)
    for attr in ("classes_", "feature_names_in_", "n_features_in_", "n_outputs_"):
        if hasattr(est, attr):
            np.testing.assert_array_equal(getattr(loaded, attr), getattr(est, attr))
    if hasattr(est, "categories_"):
        assert [None if c is None else list(c) for c in loaded.categories_] == [
            None if c is None else list(c) for c in est.categories_
        ]
    assert [p.name for p in tmp_path.iterdir()] == ["model.gpt"]  # no temporary file left
    return loaded


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_round_trip_classifier_categorical_missing(name, titanic, tmp_path):
    X, y = titanic
    est = getattr(gputrees, name)(**SMALL[name]).fit(X, y)
    loaded = _round_trip(est, X, tmp_path)
    assert list(loaded.feature_names_in_) == list(X.columns)


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_round_trip_multiclass_string_labels(name, iris_nan, tmp_path):
    X, y = iris_nan
    labels = np.asarray(["setosa", "versicolor", "virginica"], dtype=object)[y]
    est = getattr(gputrees, name)(**SMALL[name]).fit(X, labels)
    loaded = _round_trip(est, X, tmp_path)
    assert list(loaded.classes_) == ["setosa", "versicolor", "virginica"]


@pytest.mark.parametrize("name", REGRESSORS)
def test_round_trip_regressor_categorical_missing(name, titanic, tmp_path):
    X, _ = titanic
    est = getattr(gputrees, name)(**SMALL[name]).fit(X.drop(columns="Fare"), X["Fare"])
    _round_trip(est, X.drop(columns="Fare"), tmp_path)


@pytest.mark.parametrize("name", MULTI_OUTPUT)
def test_round_trip_multi_output(name, iris_nan, tmp_path):
    X, y = iris_nan
    Y = np.stack([y * 1.5, np.nan_to_num(X[:, 1])], axis=1)
    est = getattr(gputrees, name)(**SMALL[name]).fit(X, Y)
    loaded = _round_trip(est, X, tmp_path)
    assert loaded.predict(X).shape == (X.shape[0], 2)


def test_round_trip_declared_categorical_and_boosting_losses(titanic, tmp_path):
    X, y = titanic
    Xn = X.assign(Sex=X["Sex"].cat.codes, Embarked=X["Embarked"].cat.codes.replace(-1, np.nan))
    est = gputrees.DecisionTreeClassifier(max_depth=4, categorical_features=["Sex", "Embarked"]).fit(Xn, y)
    _round_trip(est, Xn, tmp_path)
    for loss in ("quantile", "poisson", "huber"):
        reg = gputrees.GradientBoostingRegressor(loss=loss, n_estimators=3).fit(Xn.drop(columns="Fare"), Xn["Fare"].fillna(0) + 1)
        _round_trip(reg, Xn.drop(columns="Fare"), tmp_path)


def test_pickle_and_joblib_still_work(titanic, tmp_path):
    X, y = titanic
    for name in ("RandomForestClassifier", "GradientBoostingClassifier", "AdaBoostClassifier"):
        est = getattr(gputrees, name)(**SMALL[name]).fit(X, y)
        again = pickle.loads(pickle.dumps(est))
        joblib.dump(est, tmp_path / "m.joblib")
        from_joblib = joblib.load(tmp_path / "m.joblib")
        for other in (again, from_joblib):
            assert np.array_equal(other.predict_proba(X), est.predict_proba(X))


def test_unfitted_and_foreign_estimators_are_refused(titanic, tmp_path):
    X, y = titanic
    with pytest.raises(Exception, match="not fitted"):
        gputrees.DecisionTreeClassifier().save_model(tmp_path / "m.gpt")
    path = tmp_path / "m.gpt"
    path.write_bytes(b"previous contents")
    Xn = X.assign(Sex=X["Sex"].cat.codes, Embarked=X["Embarked"].cat.codes).fillna(0)
    ada = gputrees.AdaBoostClassifier(SkTree(max_depth=1), n_estimators=2).fit(Xn, y)
    with pytest.raises(ValueError, match="pickle or joblib"):
        ada.save_model(path)
    assert path.read_bytes() == b"previous contents"  # a failed save leaves the old file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.gpt"]


@pytest.mark.gpu
@pytest.mark.skipif(not _cupy_available(), reason="CuPy with a CUDA GPU is not available")
@pytest.mark.parametrize("name", ["DecisionTreeClassifier", "RandomForestClassifier", "GradientBoostingClassifier", "AdaBoostClassifier"])
def test_cupy_model_loads_as_numpy(name, iris_nan, tmp_path):
    import cupy

    X, y = iris_nan
    est = getattr(gputrees, name)(**SMALL[name]).fit(cupy.asarray(X), cupy.asarray(y))
    est.save_model(tmp_path / "m.gpt")
    loaded = load_model(tmp_path / "m.gpt")
    proba = loaded.predict_proba(X)
    assert isinstance(proba, np.ndarray)
    # the same trees; a forest's or booster's sum over trees is a NumPy sum here
    # and a CuPy reduction on the GPU, which add in other orders: last bits only
    np.testing.assert_allclose(proba, cupy.asnumpy(est.predict_proba(cupy.asarray(X))), rtol=1e-14, atol=1e-15)
    np.testing.assert_array_equal(loaded.predict(X), cupy.asnumpy(est.predict(cupy.asarray(X))))


# -- hostile and damaged files ------------------------------------------------
@pytest.fixture(scope="module")
def saved(tmp_path_factory, titanic):
    X, y = titanic
    est = gputrees.GradientBoostingClassifier(n_estimators=3, max_depth=3).fit(X, y)
    path = tmp_path_factory.mktemp("model") / "gb.gpt"
    est.save_model(path)
    return path.read_bytes(), X


def _members(data):
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _rezip(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for n, b in members.items():
            zf.writestr(n, b)
    return buf.getvalue()


def _edit(data, change):
    """The model file with its metadata passed through ``change(meta, members)``."""
    members = _members(data)
    meta = json.loads(members["model.json"])
    change(meta, members)
    members["model.json"] = json.dumps(meta).encode()
    return _rezip(members)


def _npy(a):
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def _refused(tmp_path, data, match):
    path = tmp_path / "bad.gpt"
    path.write_bytes(data)
    with pytest.raises(ModelFormatError, match=match):
        load_model(path)


def _first_array(meta, dtype, ndim):
    return next(k for k, s in meta["arrays"].items() if s["dtype"] == dtype and len(s["shape"]) == ndim)


def _state(meta):
    return meta["estimator"]["state"]


def _mutations():
    def version(meta, m):
        meta["format_version"] = 2

    def wrong_shape(meta, m):
        k = _first_array(meta, "<i8", 2)
        m[k + ".npy"] = _npy(np.zeros((1, 1), dtype=np.int64))

    def wrong_dtype(meta, m):
        k = _first_array(meta, "<i8", 2)
        shape = meta["arrays"][k]["shape"]
        m[k + ".npy"] = _npy(np.zeros(shape, dtype=np.float64))

    def metadata_lies_consistently(meta, m):  # shape changed in both places: the tree checks catch it
        k = _first_array(meta, "<i8", 2)
        meta["arrays"][k]["shape"] = [1, 1]
        m[k + ".npy"] = _npy(np.zeros((1, 1), dtype=np.int64))

    def missing_state(meta, m):
        del _state(meta)["_bin_mapper"]

    def missing_categories(meta, m):
        del _state(meta)["_categories"]

    def missing_tree_field(meta, m):
        rnd = _state(meta)["_rounds"]["items"][0]
        del rnd["fields"]["batch"]["fields"]["threshold"]

    def missing_param(meta, m):
        del meta["estimator"]["params"]["learning_rate"]

    def unknown_class(meta, m):
        meta["estimator"]["class"] = "os.system"

    def dunder_attribute(meta, m):
        _state(meta)["__class__"] = "x"

    def method_attribute(meta, m):
        _state(meta)["predict"] = 1

    def cyclic_tree(meta, m):
        rnd = _state(meta)["_rounds"]["items"][0]
        name = rnd["fields"]["batch"]["fields"]["left"]["name"]
        with zipfile.ZipFile(io.BytesIO(_rezip(m))) as zf, zf.open(name + ".npy") as fh:
            left = np.load(fh)
        left[0, 0] = 0  # the root's left child is the root
        m[name + ".npy"] = _npy(left)

    def feature_out_of_range(meta, m):
        rnd = _state(meta)["_rounds"]["items"][0]
        name = rnd["fields"]["batch"]["fields"]["feature"]["name"]
        with zipfile.ZipFile(io.BytesIO(_rezip(m))) as zf, zf.open(name + ".npy") as fh:
            feat = np.load(fh)
        feat[0, 0] = 99
        m[name + ".npy"] = _npy(feat)

    def object_array(meta, m):
        k = _first_array(meta, "<f8", 2)
        meta["arrays"][k]["dtype"] = "|O"

    def bad_param_value(meta, m):
        meta["estimator"]["params"]["max_depth"] = "deep"

    def extra_member(meta, m):
        m["evil.pkl"] = pickle.dumps(object())

    return [
        (version, "format version 2"),
        (wrong_shape, "does not match shape|stored as"),
        (wrong_dtype, "does not match shape|stored as"),
        (metadata_lies_consistently, "node_count: values outside"),
        (missing_state, "arrays never referenced"),
        (missing_categories, "cannot predict"),
        (missing_tree_field, "missing \\['threshold'\\]"),
        (missing_param, "missing \\['learning_rate'\\]"),
        (unknown_class, "not a known estimator class"),
        (dunder_attribute, "not a valid attribute name"),
        (method_attribute, "not a valid attribute name"),
        (cyclic_tree, "not a later node"),
        (feature_out_of_range, "feature index"),
        (object_array, "not allowed"),
        (bad_param_value, "invalid parameter"),
        (extra_member, "unexpected members"),
    ]


@pytest.mark.parametrize("change,match", _mutations(), ids=lambda v: getattr(v, "__name__", ""))
def test_hostile_metadata_is_refused(change, match, saved, tmp_path):
    _refused(tmp_path, _edit(saved[0], change), match)


def test_damaged_files_are_refused(saved, tmp_path):
    data, _ = saved
    _refused(tmp_path, data[: len(data) // 2], "not a valid gputrees model file")
    _refused(tmp_path, data[:3], "not a ZIP archive")
    _refused(tmp_path, np.random.default_rng(0).bytes(5000), "not a ZIP archive")
    _refused(tmp_path, b"PK\x03\x04" + np.random.default_rng(1).bytes(5000), "not a valid gputrees model file")
    # a pickle renamed to the model extension
    _refused(tmp_path, pickle.dumps(gputrees.DecisionTreeClassifier()), "not a ZIP archive")
    # a zip without model.json, and someone else's JSON
    _refused(tmp_path, _rezip({"x.npy": _npy(np.zeros(3))}), "no model.json")
    _refused(tmp_path, _rezip({"model.json": b'{"format": "other"}'}), "format 'other'")
    _refused(tmp_path, _rezip({"model.json": b"[1, NaN]"}), "not valid JSON")


def test_zip_bomb_is_refused_before_decompression(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("model.json", b" " * (80 << 20))  # 80 MiB of spaces compress to ~80 kB
    assert len(buf.getvalue()) < 1 << 20
    _refused(tmp_path, buf.getvalue(), "declares")


def test_deeply_nested_json_is_refused(tmp_path, saved):
    def nest(meta, m):
        node = 1
        for _ in range(200):
            node = {"type": "list", "items": [node]}
        _state(meta)["deep_"] = node

    _refused(tmp_path, _edit(saved[0], nest), "nested deeper")


def test_fuzzed_files_are_refused_or_predict_finite(saved, tmp_path):
    """Seeded mutants (flipped bytes, truncations, dropped JSON keys): ModelFormatError or a working model."""
    data, X = saved
    rng = np.random.default_rng(0)
    path = tmp_path / "fuzz.gpt"
    meta = json.loads(_members(data)["model.json"])

    def dropped_keys(n):
        """Metadata with one random key of some JSON object removed, ``n`` times."""
        out = []
        objects = []

        def collect(node, trail):
            if isinstance(node, dict):
                for k, v in node.items():
                    objects.append(trail + (k,))
                    collect(v, trail + (k,))
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    collect(v, trail + (i,))

        collect(meta, ())
        for i in rng.choice(len(objects), size=n, replace=False):
            m = json.loads(json.dumps(meta))
            *head, last = objects[i]
            node = m
            for k in head:
                node = node[k]
            del node[last]
            members = _members(data)
            members["model.json"] = json.dumps(m).encode()
            out.append(_rezip(members))
        return out

    mutants = []
    for _ in range(60):
        b = bytearray(data)
        for pos in rng.integers(0, len(b), size=int(rng.integers(1, 4))):
            b[pos] ^= 1 << int(rng.integers(0, 8))
        mutants.append(bytes(b))
    mutants += [data[:cut] for cut in rng.integers(0, len(data), size=30)]
    mutants += dropped_keys(60)
    outcomes = {"refused": 0, "loaded": 0}
    for m in mutants:
        path.write_bytes(m)
        try:
            est = load_model(path)
        except ModelFormatError:
            outcomes["refused"] += 1
            continue
        proba = est.predict_proba(X)
        assert proba.shape == (X.shape[0], 2) and np.all(np.isfinite(proba))
        outcomes["loaded"] += 1
    assert sum(outcomes.values()) == len(mutants) == 150
    assert outcomes["refused"] > 100, outcomes


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path / "nope.gpt")


def test_format_is_documented():
    doc = os.path.join(os.path.dirname(__file__), "..", "docs", "model_format.md")
    text = open(doc, encoding="utf-8").read()
    assert f"format_version\": {gputrees._model_io.FORMAT_VERSION}" in text
    for kind in ("array", "object_array", "scalar", "float", "list", "tuple", "dict", "estimator", "dataclass", "object"):
        assert f'"{kind}"' in text
