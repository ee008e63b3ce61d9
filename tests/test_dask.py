"""gputrees.dask on a LocalCluster of two worker processes.

The data-parallel estimators must grow the same trees as the single-machine
ones on the concatenated data when the bin edges are the same (every feature
here has fewer distinct values than ``max_bins``, so both bin exactly), with
values equal to float rounding (histograms are summed across workers).
"""

import os
import signal

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

import gputrees  # noqa: E402
from gputrees._binning import bin_mapper_from_summaries, fit_bin_mapper  # noqa: E402
from gputrees._backend import namespace_for  # noqa: E402
from gputrees.dask import (  # noqa: E402
    DaskGradientBoostingClassifier,
    DaskGradientBoostingRegressor,
    DaskRandomForestClassifier,
    DaskRandomForestRegressor,
    WorkerLostError,
)

N, F = 2400, 5


def _cluster():
    return distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=50
    )


@pytest.fixture(scope="module")
def client():
    with _cluster() as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(N, F)), 1)  # about 60 distinct values per feature
    X[rng.random(X.shape) < 0.05] = np.nan
    z = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2 - 0.5 * np.nan_to_num(X[:, 2])
    y_bin = (z + rng.normal(size=N) > 1).astype(np.int64)
    y_multi = np.digitize(z + rng.normal(size=N), [0.0, 1.0, 2.0])
    y_reg = z + 0.3 * rng.normal(size=N)
    w = rng.integers(1, 4, size=N).astype(np.float64)
    return X, y_bin, y_multi, y_reg, w


def _dask(a, chunk=500):
    return da.from_array(a, chunks=(chunk,) + a.shape[1:])


def _same_trees(dask_model, local_model):
    """The fitted trees: same structure and splits, values to float rounding."""
    a, b = dask_model._forest(), local_model._forest()
    for name in ("feature", "bin", "left", "right", "missing_left"):
        np.testing.assert_array_equal(getattr(a[0], name), getattr(b[0], name), err_msg=name)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("target", ["binary", "multiclass"])
def test_booster_equals_single_machine(client, data, target):
    X, y_bin, y_multi, _, w = data
    y = y_bin if target == "binary" else y_multi
    kw = dict(n_estimators=6, max_depth=4, subsample=0.8, colsample_bytree=0.8, random_state=3, early_stopping=False)
    dm = DaskGradientBoostingClassifier(**kw).fit(_dask(X), _dask(y), sample_weight=_dask(w))
    lm = gputrees.GradientBoostingClassifier(**kw).fit(X, y, sample_weight=w)
    _same_trees(dm, lm)
    np.testing.assert_allclose(dm.predict_proba(X), lm.predict_proba(X), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dm.train_score_, lm.train_score_, rtol=1e-10)
    np.testing.assert_array_equal(dm.classes_, lm.classes_)
    # only node-sized arrays came back: never more than a level's histograms
    k = lm.n_trees_per_iteration_
    most = max(e.bytes_received for e in dm.exchanges_)
    assert most <= 2 * k * 2 ** 3 * F * dm._bin_mapper.n_bins * 3 * 8


@pytest.mark.parametrize("eval_kind", ["numpy", "dask"])
def test_booster_early_stopping_on_eval_sets_equals_single_machine(client, data, eval_kind):
    X, _, _, y, w = data
    Xt, yt, Xv, yv, wv = X[:1800], y[:1800], X[1800:], y[1800:], w[1800:]
    kw = dict(n_estimators=60, max_depth=4, learning_rate=0.5, random_state=0, early_stopping=True,
              n_iter_no_change=3, tol=0.0, eval_metric=["mae", "rmse"])
    conv = _dask if eval_kind == "dask" else (lambda a: a)
    dm = DaskGradientBoostingRegressor(**kw).fit(_dask(Xt), _dask(yt), eval_set=[(conv(Xv), conv(yv))],
                                                 eval_sample_weight=[conv(wv)])
    lm = gputrees.GradientBoostingRegressor(**kw).fit(Xt, yt, eval_set=[(Xv, yv)], eval_sample_weight=[wv])
    assert lm.n_iter_ < 59  # it did stop early
    assert dm.n_iter_ == lm.n_iter_ and dm.best_iteration_ == lm.best_iteration_
    _same_trees(dm, lm)
    np.testing.assert_allclose(dm.validation_score_, lm.validation_score_, rtol=1e-10)
    for name in ("mae", "rmse"):
        np.testing.assert_allclose(dm.evals_result_["validation_0"][name], lm.evals_result_["validation_0"][name],
                                   rtol=1e-10)


@pytest.mark.parametrize("class_weight", ["balanced", {0: 1.0, 1: 3.0, 2: 0.5, 3: 2.0}])
def test_booster_class_weight_equals_single_machine(client, data, class_weight):
    X, _, y, _, w = data
    kw = dict(n_estimators=4, max_depth=3, random_state=0, early_stopping=False, class_weight=class_weight)
    dm = DaskGradientBoostingClassifier(**kw).fit(_dask(X), _dask(y), sample_weight=_dask(w))
    lm = gputrees.GradientBoostingClassifier(**kw).fit(X, y, sample_weight=w)
    _same_trees(dm, lm)
    np.testing.assert_allclose(dm.train_score_, lm.train_score_, rtol=1e-10)
    plain = gputrees.GradientBoostingClassifier(**{**kw, "class_weight": None}).fit(X, y, sample_weight=w)
    assert not np.allclose(plain.predict_proba(X), lm.predict_proba(X))  # the weights mattered
    fkw = dict(n_estimators=3, max_depth=5, random_state=1, class_weight=class_weight)
    df = DaskRandomForestClassifier(**fkw).fit(_dask(X, 700), _dask(y, 700), sample_weight=_dask(w, 700))
    lf = gputrees.RandomForestClassifier(**fkw).fit(X, y, sample_weight=w)
    for a, b in zip(df._batches, lf._batches):
        for name in ("feature", "bin", "left", "right", "missing_left"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_allclose(df.predict_proba(X), lf.predict_proba(X), rtol=1e-12, atol=1e-12)


def _with_categories(X, y):
    """A frame of X's features plus a string category column (some missing) that y depends on."""
    rng = np.random.default_rng(7)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(F)])
    city = rng.choice(["oslo", "lima", "pune", "kiev", "rome"], size=len(y)).astype(object)
    city[rng.random(len(y)) < 0.05] = None
    frame["city"] = pd.Categorical(city, categories=["kiev", "lima", "oslo", "pune", "rome", "unused"])
    y = y + 1.5 * np.isin(city, ["lima", "rome"])
    return frame, y


def test_booster_categorical_features_equal_single_machine(client, data):
    X, _, _, y, _ = data
    frame, y = _with_categories(X, y)
    kw = dict(n_estimators=5, max_depth=3, random_state=0, early_stopping=False, categorical_features=["f4"])
    X_int = frame.assign(f4=np.nan_to_num(frame["f4"].to_numpy()).round())  # f4 declared categorical: few values
    ddf = dd.from_pandas(X_int, npartitions=3)
    dm = DaskGradientBoostingRegressor(**kw).fit(ddf, dd.from_pandas(pd.Series(y), npartitions=3))
    lm = gputrees.GradientBoostingRegressor(**kw).fit(X_int, y)
    assert dm.is_categorical_.tolist() == lm.is_categorical_.tolist() == [False] * 4 + [True, True]
    _same_trees(dm, lm)
    assert np.any(lm.trees_.is_categorical)  # the category columns were split on
    np.testing.assert_allclose(dm.predict(ddf).compute().to_numpy(), lm.predict(X_int), rtol=1e-12)
    np.testing.assert_allclose(dm.to_local().predict(X_int), lm.predict(X_int), rtol=1e-12)
    # the data-parallel forest too
    fkw = dict(n_estimators=3, max_depth=4, random_state=0)
    df = gputrees.dask.DaskRandomForestRegressor(**fkw).fit(ddf, dd.from_pandas(pd.Series(y), npartitions=3))
    lf = gputrees.RandomForestRegressor(**fkw).fit(X_int, y)
    np.testing.assert_allclose(df.predict(X_int), lf.predict(X_int), rtol=1e-12)
    # categories dask does not know cannot be agreed across partitions
    unknown = dd.from_pandas(X_int.assign(city=X_int["city"].astype(object)), npartitions=3).astype(
        {"city": "category"})
    with pytest.raises(ValueError, match="categorize"):
        DaskGradientBoostingRegressor(**kw).fit(unknown, dd.from_pandas(pd.Series(y), npartitions=3))


def _logistic(y, raw, w):
    p = 1.0 / (1.0 + np.exp(-raw))
    return (p - y) * w, np.maximum(p * (1.0 - p), 1e-16) * w


def test_booster_custom_objective_equals_single_machine(client, data):
    X, y, _, _, w = data
    kw = dict(n_estimators=4, max_depth=3, random_state=0, early_stopping=False, subsample=0.8)
    dm = DaskGradientBoostingClassifier(loss=_logistic, **kw).fit(_dask(X), _dask(y), sample_weight=_dask(w))
    lm = gputrees.GradientBoostingClassifier(loss=_logistic, **kw).fit(X, y, sample_weight=w)
    builtin = gputrees.GradientBoostingClassifier(**kw).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(dm._baseline, lm._baseline, rtol=1e-12)
    _same_trees(dm, lm)
    _same_trees(dm, builtin)
    assert np.all(np.isnan(dm.train_score_))  # no loss value, no metric of the workers' rows
    with pytest.raises(ValueError, match="hessian has negative values for boosting round 0"):
        DaskGradientBoostingClassifier(loss=lambda y, r, w: (r - y, -w), baseline=0.0, **kw).fit(_dask(X), _dask(y))


def _squared_unless_marked(y, raw, w):
    """Squared error, failing on the rows holding the marker target once the trees have moved the predictions."""
    if np.any(y == 123.0) and np.ptp(raw) > 0:
        raise ValueError("boom on the marked worker")
    return (raw - y) * w, w


def test_booster_rounds_grown_on_the_workers_and_one_workers_error_raised(client, data):
    X, _, _, y, w = data
    kw = dict(n_estimators=5, max_depth=3, random_state=0, early_stopping=False)
    dm = DaskGradientBoostingRegressor(**kw).fit(_dask(X), _dask(y), sample_weight=_dask(w))
    kinds = [e.kind for e in dm.exchanges_]
    # one request for the rounds (nothing to read between them; the workers exchange the levels' histograms among
    # themselves), none a level
    assert kinds.count("mesh_rounds") == 1 and "histograms" not in kinds and "sums" not in kinds
    lm = gputrees.GradientBoostingRegressor(**kw).fit(X, y, sample_weight=w)
    _same_trees(dm, lm)
    # no missing value on any worker: the workers' histograms leave the row count out (counted apart)
    X_full = np.nan_to_num(X)
    dm = DaskGradientBoostingRegressor(**kw).fit(_dask(X_full), _dask(y), sample_weight=_dask(w))
    _same_trees(dm, gputrees.GradientBoostingRegressor(**kw).fit(X_full, y, sample_weight=w))
    # an error on one worker mid-fit: its peers stop waiting for it, and its own error is raised
    y_marked = y.copy()
    y_marked[-1] = 123.0
    with pytest.raises(ValueError, match="boom on the marked worker"):
        DaskGradientBoostingRegressor(loss=_squared_unless_marked, baseline=0.0, **kw).fit(_dask(X), _dask(y_marked))
    # the same through the scheduler (a client that does not talk to the workers itself)
    with distributed.Client(client.cluster, direct_to_workers=False, set_as_default=True):
        with pytest.raises(ValueError, match="boom on the marked worker"):
            DaskGradientBoostingRegressor(loss=_squared_unless_marked, baseline=0.0, **kw).fit(_dask(X),
                                                                                                _dask(y_marked))


@pytest.mark.parametrize("loss,alpha,subsample", [("absolute_error", 0.9, 0.8), ("quantile", 0.3, 0.8),
                                                ("huber", 0.8, 0.8), ("huber", 0.8, 1.0)])
def test_booster_quantile_leaves_equal_single_machine(client, data, loss, alpha, subsample):
    X, _, _, y, w = data
    kw = dict(n_estimators=4, max_depth=3, random_state=0, early_stopping=False, subsample=subsample, loss=loss,
              alpha=alpha)
    dm = DaskGradientBoostingRegressor(**kw).fit(_dask(X), _dask(y), sample_weight=_dask(w))
    lm = gputrees.GradientBoostingRegressor(**kw).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(dm._baseline, lm._baseline)  # a data value: exact
    _same_trees(dm, lm)
    np.testing.assert_allclose(dm.train_score_, lm.train_score_, rtol=1e-10)


def test_distributed_weighted_quantiles_equal_the_local_ones(client):
    from gputrees._loss import weighted_quantiles
    from gputrees.dask._cluster import make_shards
    from gputrees.dask._quantiles import dask_weighted_quantiles
    from gputrees.kernels import get_kernels

    rng = np.random.default_rng(3)
    n = 3000
    y = np.round(rng.normal(size=n), 2)  # ties
    w = rng.integers(0, 4, size=n).astype(float)  # zero weights too
    shards = make_shards(client, _dask(np.zeros((n, 1))), _dask(y), _dask(w), None)[0]
    try:
        shards.call("target_sums")  # the shards' y_enc
        for alpha in (0.0, 0.1, 0.5, 0.9, 1.0):
            got = dask_weighted_quantiles(shards, "y", 1, alpha)
            xp = namespace_for(y, None)
            want = weighted_quantiles(xp, get_kernels(xp, "reference"), np.zeros(n, np.int64), y, w, 1, alpha)
            np.testing.assert_array_equal(got, want)
    finally:
        shards.close()


def test_regressor_equals_single_machine_and_predicts_on_dataframes(client, data):
    X, _, _, y, _ = data
    kw = dict(n_estimators=5, max_depth=3, random_state=0, early_stopping=False, max_features=0.6)
    cols = [f"f{i}" for i in range(F)]
    frame = pd.DataFrame(X, columns=cols)
    ddf = dd.from_pandas(frame, npartitions=3)
    dm = DaskGradientBoostingRegressor(**kw).fit(ddf, dd.from_pandas(pd.Series(y), npartitions=3))
    lm = gputrees.GradientBoostingRegressor(**kw).fit(frame, y)
    _same_trees(dm, lm)
    assert list(dm.feature_names_in_) == cols
    lazy = dm.predict(ddf)
    assert isinstance(lazy, dd.Series)
    np.testing.assert_allclose(lazy.compute().to_numpy(), lm.predict(frame), rtol=1e-12)
    np.testing.assert_allclose(dm.predict(_dask(X)).compute(), lm.predict(X), rtol=1e-12)


@pytest.mark.parametrize("max_features", [None, "sqrt"])
def test_forest_data_parallel_equals_single_machine(client, data, max_features):
    X, _, y, _, w = data
    kw = dict(n_estimators=4, max_depth=6, random_state=1, max_features=max_features)
    dm = DaskRandomForestClassifier(**kw).fit(_dask(X, 700), _dask(y, 700), sample_weight=_dask(w, 700))
    lm = gputrees.RandomForestClassifier(**kw).fit(X, y, sample_weight=w)
    for a, b in zip(dm._batches, lm._batches):
        for name in ("feature", "bin", "left", "right", "missing_left"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_allclose(dm.predict_proba(X), lm.predict_proba(X), rtol=1e-12, atol=1e-12)
    proba = dm.predict_proba(dd.from_pandas(pd.DataFrame(X), npartitions=2)).compute()
    assert list(proba.columns) == list(lm.classes_)
    np.testing.assert_allclose(proba.to_numpy(), lm.predict_proba(X), rtol=1e-12, atol=1e-12)


def test_forest_regressor_and_local_mode(client, data):
    X, _, _, y, _ = data
    kw = dict(n_estimators=4, max_depth=5, random_state=2)
    dm = DaskRandomForestRegressor(**kw).fit(_dask(X), _dask(y))
    lm = gputrees.RandomForestRegressor(**kw).fit(X, y)
    np.testing.assert_allclose(dm.predict(X), lm.predict(X), rtol=1e-12)
    # local bootstraps: each worker grows its share of the trees on its own rows
    loc = DaskRandomForestRegressor(distribution="local", n_estimators=5, random_state=2).fit(_dask(X), _dask(y))
    assert loc._n_trees_fitted == 5
    assert len(loc._batches) == 2  # one batch per worker
    assert not any(e.kind == "histograms" for e in loc.exchanges_)
    assert loc.score(X, y) > 0.7


def test_models_are_plain_gputrees_models(client, data, tmp_path):
    X, y, _, _, _ = data
    dm = DaskGradientBoostingClassifier(n_estimators=3, max_depth=3).fit(_dask(X), _dask(y))
    local = dm.to_local()
    assert type(local) is gputrees.GradientBoostingClassifier
    dm.save_model(tmp_path / "m.gpt")
    loaded = gputrees.load_model(tmp_path / "m.gpt")
    assert type(loaded) is gputrees.GradientBoostingClassifier
    np.testing.assert_array_equal(loaded.predict_proba(X), dm.predict_proba(X))
    forest = DaskRandomForestClassifier(n_estimators=3, max_depth=3).fit(_dask(X), _dask(y))
    forest.save_model(tmp_path / "f.gpt")
    np.testing.assert_array_equal(gputrees.load_model(tmp_path / "f.gpt").predict(X), forest.predict(X))


def test_quantile_bins_from_worker_summaries(client):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(3000, 3))  # all distinct: quantile bins
    y = (X[:, 0] > 0).astype(int)
    dm = DaskGradientBoostingClassifier(n_estimators=3, max_depth=2, max_bins=32).fit(_dask(X), _dask(y))
    bm = dm._bin_mapper
    assert not bm.is_exact.any() and bm.n_bins == 33
    local = fit_bin_mapper(namespace_for(X, None), X, np.zeros(3, dtype=bool), 32)
    # edges from the pooled sample track the exact quantiles closely
    assert np.max(np.abs(bm.thresholds[:, :-1] - local.thresholds[:, :-1])) < 0.1
    assert dm.score(X, y) > 0.95


def test_bin_mapper_from_summaries_matches_exact_binning():
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(500, 4)), 1)
    X[::7, 1] = np.nan
    xp = namespace_for(X, None)
    distinct = [np.unique(X[:, f][~np.isnan(X[:, f])]) for f in range(4)]
    a = bin_mapper_from_summaries(xp, distinct, X[:10], np.zeros(4, dtype=bool), 255)
    b = fit_bin_mapper(xp, X, np.zeros(4, dtype=bool), 255)
    np.testing.assert_array_equal(a.thresholds, b.thresholds)
    np.testing.assert_array_equal(a.bin_values, b.bin_values)
    assert a.is_exact.all() and a.n_bins == b.n_bins


def test_bad_input_gets_clear_errors(client, data):
    X, y, _, _, _ = data
    with pytest.raises(TypeError, match="dask array or dask dataframe"):
        DaskGradientBoostingClassifier().fit(X, y)
    with pytest.raises(ValueError, match="stops early only on an eval_set"):
        DaskGradientBoostingClassifier(early_stopping=True).fit(_dask(X), _dask(y))
    with pytest.raises(ValueError, match="eval_sample_weight is given without an eval_set"):
        DaskGradientBoostingClassifier().fit(_dask(X), _dask(y), eval_sample_weight=[None])
    with pytest.raises(ValueError, match="balanced_subsample"):
        DaskRandomForestClassifier(class_weight="balanced_subsample").fit(_dask(X), _dask(y))
    with pytest.raises(ValueError, match="distribution must be one of"):
        DaskRandomForestClassifier(distribution="nope").fit(_dask(X), _dask(y))
    with pytest.raises(ValueError, match="y has 10 rows"):
        DaskGradientBoostingClassifier().fit(_dask(X), _dask(y[:10]))
    bad = X.copy()
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        DaskGradientBoostingClassifier().fit(_dask(bad), _dask(y))
    frame = dd.from_pandas(pd.DataFrame({"a": ["x", "y"] * 10, "b": np.arange(20.0)}), npartitions=2)
    with pytest.raises(ValueError, match="non-numeric columns"):
        DaskGradientBoostingClassifier().fit(frame, _dask(np.arange(20) % 2))


def test_dask_estimators_follow_sklearn_params():
    from sklearn.base import clone

    est = DaskRandomForestClassifier(n_estimators=7, distribution="local")
    params = est.get_params()
    assert params["n_estimators"] == 7 and params["distribution"] == "local"
    assert clone(est).get_params() == params
    assert DaskGradientBoostingRegressor().early_stopping is False
    with pytest.raises(TypeError, match="unexpected keyword"):
        DaskGradientBoostingClassifier(nonsense=1)


class _KillWorker:
    """A callback that kills the process of one worker after the first round."""

    def __init__(self, pid):
        self.pid = pid

    def on_iteration(self, env):
        if env.iteration == 0:
            os.kill(self.pid, signal.SIGKILL)
        return False


@pytest.mark.parametrize("early_stopping", [False, True])
def test_worker_lost_mid_fit_raises_and_keeps_no_model(data, early_stopping):
    X, y, _, _, _ = data
    with _cluster() as cluster, distributed.Client(cluster) as c:
        pids = c.run(os.getpid)
        victim = sorted(pids)[0]
        est = DaskGradientBoostingClassifier(n_estimators=50, max_depth=3, callbacks=[_KillWorker(pids[victim])],
                                             early_stopping=early_stopping)
        fit_kw = {"eval_set": [(X[:300], y[:300])]} if early_stopping else {}
        with pytest.raises(WorkerLostError, match="was lost during the fit"):
            est.fit(_dask(X), _dask(y), **fit_kw)
        assert not hasattr(est, "_rounds")  # no partial model
        with pytest.raises(Exception, match="not fitted"):
            est.predict(X)


@pytest.mark.gpu
def test_cupy_chunks_on_dask_cuda(data):
    cupy = pytest.importorskip("cupy")
    dask_cuda = pytest.importorskip("dask_cuda")
    X, y, _, _, _ = data
    with dask_cuda.LocalCUDACluster(n_workers=1) as cluster, distributed.Client(cluster):
        Xg = _dask(X).map_blocks(cupy.asarray)
        yg = _dask(y).map_blocks(cupy.asarray)
        dm = DaskGradientBoostingClassifier(n_estimators=4, max_depth=3).fit(Xg, yg)
        lm = gputrees.GradientBoostingClassifier(n_estimators=4, max_depth=3, early_stopping=False).fit(X, y)
        _same_trees(dm, lm)
