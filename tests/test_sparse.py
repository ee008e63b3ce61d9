"""scipy.sparse input: every estimator fitted on a CSR/CSC matrix equals the one fitted on its dense twin."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import gputrees
import gputrees._binning as binning
from gputrees._binning import fit_bin_mapper
from gputrees._backend import namespace_of

NP = namespace_of(np.empty(0))

ESTIMATORS = [
    ("DecisionTreeClassifier", dict(random_state=0)),
    ("DecisionTreeRegressor", dict(random_state=0, max_depth=6)),
    ("RandomForestClassifier", dict(n_estimators=12, random_state=0, oob_score=True)),
    ("RandomForestRegressor", dict(n_estimators=4, random_state=0, max_depth=5)),
    ("ExtraTreesClassifier", dict(n_estimators=4, random_state=0)),
    ("ExtraTreesRegressor", dict(n_estimators=4, random_state=0, max_depth=5)),
    ("AdaBoostClassifier", dict(n_estimators=5, random_state=0)),
    ("AdaBoostRegressor", dict(n_estimators=5, random_state=0)),
    ("GradientBoostingClassifier", dict(n_estimators=5, random_state=0, early_stopping=True,
                                        validation_fraction=0.2, subsample=0.8)),
    ("GradientBoostingRegressor", dict(n_estimators=5, random_state=0, max_depth=4, min_samples_leaf=3)),
]


def _sparse_data(n=300, p=12, seed=0):
    """Mostly-zero features: some integer (exact bins), some continuous (quantile bins with max_bins=16),
    negative values, a stored NaN, an all-zero column and an explicitly stored zero."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * (rng.random((n, p)) < 0.2)
    X[:, :4] = np.round(X[:, :4] * 3)
    X[:, 5] = 0.0
    X[3, 6] = np.nan
    y_reg = X[:, 0] - 2 * (X[:, 7] > 0) + X[:, 8] + rng.normal(scale=0.3, size=n)
    y_clf = (y_reg > np.median(y_reg)).astype(int)
    csr = sp.csr_matrix(X)
    csr.data[csr.data == 1.0] = 1.0
    csr = sp.csr_matrix((np.append(csr.data, 0.0), np.append(csr.indices, 5), np.append(csr.indptr[:-1],
                        csr.indptr[-1] + 1)), shape=X.shape)  # row n-1 stores a zero in column 5
    return X, csr, y_reg, y_clf


def _trees(est):
    """Every fitted tree's node arrays (host) of a gputrees estimator."""
    if hasattr(est, "trees_"):
        batches = [est.trees_]
    elif hasattr(est, "_batches"):
        batches = est._batches
    elif hasattr(est, "estimators_"):
        batches = [e._batch for e in est.estimators_]
    else:
        batches = [est._batch]
    return [{k: np.asarray(getattr(b, k)) for k in ("left", "right", "feature", "bin", "threshold", "stats")}
            for b in batches]


def test_sparse_binning_equals_the_dense_one(monkeypatch):
    X, csr, _, _ = _sparse_data()
    for subsample in (binning.BIN_SUBSAMPLE, 100):  # the sampled edges and their every-row check too
        monkeypatch.setattr(binning, "BIN_SUBSAMPLE", subsample)
        for max_bins in (16, 255):
            dense = fit_bin_mapper(NP, X, np.zeros(X.shape[1], bool), max_bins)
            sparse = fit_bin_mapper(NP, csr, np.zeros(X.shape[1], bool), max_bins)
            np.testing.assert_array_equal(sparse.thresholds, dense.thresholds)
            np.testing.assert_array_equal(sparse.n_value_bins, dense.n_value_bins)
            np.testing.assert_array_equal(sparse.is_exact, dense.is_exact)
            np.testing.assert_array_equal(sparse.transform(NP, csr), dense.transform(NP, X))


@pytest.mark.parametrize("values,zeros", [
    ([-2.0, -1.0, -1.0, 0.5, 3.0], 4),  # zeros among negatives and positives
    ([-0.0, 0.0, 1.0], 2),  # stored zeros of either sign after the implicit ones
    ([1.0, 2.0], 3), ([-3.0, -1.0], 1), ([4.0], 0), ([], 5), ([], 0),
])
def test_sorted_column_stands_for_the_array_with_its_zeros(values, zeros):
    """A sparse column's SortedColumn reads as its dense twin's sorted values: every position, the last one,
    the distinct values (the zeros' run starting with +0.0, as the dense binning's sorted column has it)."""
    from gputrees._sparse import SortedColumn

    v = np.asarray(values, dtype=np.float64)
    at = int(np.searchsorted(v, 0.0, side="left"))
    dense = np.concatenate([v[:at], np.zeros(zeros), v[at:]])
    col = SortedColumn(v, zeros)
    assert col.shape == dense.shape
    np.testing.assert_array_equal(col.take(np.arange(dense.shape[0])), dense)
    if dense.shape[0]:
        assert col[-1] == dense[-1] and col[0] == dense[0]
    want = binning._distinct(NP, dense)
    got = col.distinct()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("name,params", ESTIMATORS, ids=[e[0] for e in ESTIMATORS])
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_fit_on_sparse_equals_fit_on_dense(name, params, fmt):
    X, csr, y_reg, y_clf = _sparse_data()
    y = y_clf if "Classifier" in name else y_reg
    cls = getattr(gputrees, name)
    extra = {"max_bins": 16} if "AdaBoost" not in name else {}
    dense = cls(**params, **extra).fit(X, y)
    sparse = cls(**params, **extra).fit(csr.asformat(fmt), y)
    for a, b in zip(_trees(dense), _trees(sparse), strict=True):
        for k in a:
            np.testing.assert_array_equal(b[k], a[k], err_msg=k)
    methods = ["predict"] + (["predict_proba"] if "Classifier" in name else [])
    for m in methods:
        expected = getattr(dense, m)(X)
        np.testing.assert_array_equal(getattr(sparse, m)(csr.asformat(fmt)), expected)
        np.testing.assert_array_equal(getattr(dense, m)(csr), expected)
    if hasattr(dense, "oob_score_"):
        assert sparse.oob_score_ == dense.oob_score_


NUMBA_CASES = [
    ("DecisionTreeRegressor", dict(random_state=0, max_depth=6)),
    ("RandomForestClassifier", dict(n_estimators=4, random_state=0)),
    ("ExtraTreesRegressor", dict(n_estimators=3, random_state=0, max_depth=5)),
    ("GradientBoostingClassifier", dict(n_estimators=5, early_stopping=False)),
    ("AdaBoostClassifier", dict(n_estimators=3, random_state=0)),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,params", NUMBA_CASES, ids=[e[0] for e in NUMBA_CASES])
def test_numba_fit_on_sparse_keeps_no_feature_major_copy(monkeypatch, name, params):
    """On the Numba kernels a sparse X's fit asks for the codes feature-major without a copy (the kernels read
    ``codes.T``, F-contiguous), a dense fit for the copy, and both grow the same trees."""
    from gputrees.kernels.interface import Kernels

    monkeypatch.setenv("GPUTREES_KERNELS", "numba")
    asked = []
    real = Kernels.feature_major

    def spy(self, xp, codes, copy=True):
        asked.append(copy)
        return real(self, xp, codes, copy)

    monkeypatch.setattr(Kernels, "feature_major", spy)
    X, csr, y_reg, y_clf = _sparse_data()
    y = y_clf if "Classifier" in name else y_reg
    cls = getattr(gputrees, name)
    dense = cls(**params).fit(X, y)
    assert all(asked)
    asked.clear()
    sparse = cls(**params).fit(csr, y)
    assert asked and not any(asked)
    for a, b in zip(_trees(dense), _trees(sparse), strict=True):
        for k in a:
            np.testing.assert_array_equal(b[k], a[k], err_msg=k)
    np.testing.assert_array_equal(sparse.predict(csr), dense.predict(X))


@pytest.mark.parametrize("kernels", ["bincount", "numba"])
def test_prediction_in_dense_blocks(monkeypatch, kernels):
    """A kernel set that does not walk a CSR matrix's rows (``Kernels.csr_columns``) walks dense blocks of them;
    the compiled CPU set the rows as they are: the dense twin's predictions either way."""
    import gputrees._predictor as predictor
    import gputrees._sparse as sparse_mod

    if kernels == "numba":
        pytest.importorskip("numba")
    monkeypatch.setenv("GPUTREES_KERNELS", kernels)
    X, csr, y_reg, _ = _sparse_data(n=500)
    m = gputrees.GradientBoostingRegressor(n_estimators=4, early_stopping=False).fit(csr, y_reg)
    expected = m.predict(X)
    monkeypatch.setattr(sparse_mod, "DENSE_BLOCK_BYTES", 8 * X.shape[1] * 7)  # blocks of 7 rows or more
    heights = []
    monkeypatch.setattr(predictor, "dense_blocks",
                        lambda Xc: ((s, e, heights.append(e - s) or b) for s, e, b in sparse_mod.dense_blocks(Xc)))
    np.testing.assert_array_equal(m.predict(csr), expected)
    staged = list(m.staged_predict(csr))
    np.testing.assert_array_equal(staged[-1], expected)
    assert len(heights) > 1 if kernels == "bincount" else not heights


@pytest.mark.parametrize("name, params", [
    ("DecisionTreeClassifier", dict(max_depth=2, random_state=0)),
    ("RandomForestRegressor", dict(n_estimators=3, max_depth=3, random_state=0)),
    ("AdaBoostClassifier", dict(n_estimators=3, random_state=0)),
    ("GradientBoostingRegressor", dict(n_estimators=3, max_depth=2, early_stopping=False)),
])
@pytest.mark.parametrize("kernels", ["numba", "bincount"])
def test_prediction_reads_the_tested_columns_only(monkeypatch, name, params, kernels):
    """A sparse X wider than the kernel set walks as it is (all of it for dense blocks, which take none) is
    walked in the columns the trees test only: few of a wide matrix's, predictions and leaves those of its
    dense twin."""
    import gputrees._predictor as predictor
    import gputrees._sparse as sparse_mod

    monkeypatch.setenv("GPUTREES_KERNELS", kernels)
    if kernels == "numba":
        pytest.importorskip("numba")
        from gputrees.kernels import cpu

        monkeypatch.setattr(cpu.predict, "CSR_SCRATCH_COLUMNS", 10)  # walked as it is up to 10 columns
    X, _, y_reg, y_clf = _sparse_data(n=400, p=60)
    csr = sp.csr_matrix(X)
    y = y_clf if "Classifier" in name else y_reg
    m = getattr(gputrees, name)(**params).fit(csr, y)
    widths = []

    def cut(Xs, feature):
        X_cut, numbered = sparse_mod.tested_columns(Xs, feature)
        widths.append(X_cut.shape[1])
        return X_cut, numbered

    monkeypatch.setattr(predictor, "tested_columns", cut)
    np.testing.assert_array_equal(m.predict(csr), m.predict(X))
    if hasattr(m, "apply"):
        np.testing.assert_array_equal(m.apply(csr), m.apply(X))
    assert widths and 1 <= max(widths) < 20


def test_tested_columns_of_trees_of_leaves_only():
    """A batch that tests no column (every tree a leaf) still walks a one-column matrix; leaves' codes kept."""
    from gputrees._sparse import tested_columns

    csr = sp.random(5, 7, density=0.5, format="csr", random_state=0)
    cut, feature = tested_columns(csr, np.array([[-2, -2], [-2, -2]]))
    assert cut.shape == (5, 1) and (feature == -2).all()
    cut, feature = tested_columns(csr, np.array([[6, 2, -2], [2, -2, -2]]))
    np.testing.assert_array_equal(cut.toarray(), csr.toarray()[:, [2, 6]])
    np.testing.assert_array_equal(feature, [[1, 0, -2], [0, -2, -2]])


def test_sparse_eval_set_and_warm_start():
    X, csr, y_reg, _ = _sparse_data()
    kw = dict(n_estimators=3, early_stopping=False, warm_start=True)
    a = gputrees.GradientBoostingRegressor(**kw).fit(csr, y_reg, eval_set=[(csr[:100], y_reg[:100])])
    b = gputrees.GradientBoostingRegressor(**kw).fit(X, y_reg, eval_set=[(X[:100], y_reg[:100])])
    np.testing.assert_array_equal(a.validation_score_, b.validation_score_)
    a.set_params(n_estimators=5).fit(csr, y_reg, eval_set=[(csr[:100], y_reg[:100])])
    b.set_params(n_estimators=5).fit(X, y_reg, eval_set=[(X[:100], y_reg[:100])])
    np.testing.assert_array_equal(a.predict(csr), b.predict(X))


def test_sparse_input_errors():
    X, csr, y_reg, _ = _sparse_data()
    bad = csr.copy()
    bad.data[0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        gputrees.DecisionTreeRegressor().fit(bad, y_reg)
    with pytest.raises(ValueError, match="categorical_features are not taken from a sparse X"):
        gputrees.DecisionTreeRegressor(categorical_features=[0]).fit(csr, y_reg)
    with pytest.raises(ValueError, match="Complex data"):
        gputrees.DecisionTreeRegressor().fit(sp.csr_matrix(np.array([[1j], [2.0]])), [1.0, 2.0])


@pytest.mark.parametrize("name, params", [
    ("DecisionTreeClassifier", dict(max_depth=4, random_state=0)),
    ("RandomForestRegressor", dict(n_estimators=3, max_depth=4, random_state=0)),
    ("GradientBoostingClassifier", dict(n_estimators=3, max_depth=3, early_stopping=False)),
])
def test_shap_values_of_a_sparse_matrix(monkeypatch, name, params):
    """SHAP values (and interaction values) of a CSR matrix's rows, read in dense blocks, are its dense twin's."""
    import gputrees._sparse as sparse_mod

    X, csr, y_reg, y_clf = _sparse_data(n=200)
    m = getattr(gputrees, name)(**params).fit(csr, y_clf if "Classifier" in name else y_reg)
    monkeypatch.setattr(sparse_mod, "DENSE_BLOCK_BYTES", 8 * X.shape[1] * 64)  # blocks of 64 rows
    np.testing.assert_array_equal(m.shap_values(csr), m.shap_values(X))
    np.testing.assert_array_equal(m.shap_values(csr, interactions=True), m.shap_values(X, interactions=True))
