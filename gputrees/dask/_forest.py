"""Random forests on a Dask cluster: data-parallel, or trees grown on local rows."""

from __future__ import annotations

import dataclasses

import numpy as np
from sklearn.base import clone

from .. import _backend
from .._criteria import CLASSIFICATION_CRITERIA, REGRESSION_CRITERIA
from .._forest import RandomForestClassifier, RandomForestRegressor
from .._grower import grow
from .._records import GrowerInputs
from .._progress import Monitor, Step
from ..kernels import get_kernels
from ._cluster import DaskRows
from ._common import DaskEstimator, dask_signature, fit_bins, scale_by_class

#: Values of the ``distribution`` parameter.
DISTRIBUTIONS = ("data_parallel", "local")


class _DaskForest(DaskEstimator):
    """The Dask fit shared by the forest classifier and regressor.

    ``distribution="data_parallel"`` (default) grows the single-machine
    forest: every worker draws each tree's bootstrap over the global row
    index and keeps its rows' counts, histograms of all trees of a batch are
    summed across workers level by level, and the trees equal those of the
    single-machine forest on the concatenated data (numerical features,
    the same bin edges; values to float rounding). ``"local"`` spreads the
    trees over the workers, each grown on that worker's rows only: no
    exchange per level, but then it is a forest of *local* bootstraps (each
    tree sees one worker's rows), not the single-machine forest.
    """

    _fitted_attr = "_batches"

    def _check_dask_params(self):
        name = type(self).__name__
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(f"distribution must be one of {DISTRIBUTIONS}, got {self.distribution!r}")
        if self.oob_score:
            raise ValueError(f"{name} does not compute oob_score (it needs every row's out-of-bag trees)")
        if self.warm_start:
            raise ValueError(f"{name} does not support warm_start")
        if getattr(self, "class_weight", None) == "balanced_subsample":
            raise ValueError(f"{name} does not support class_weight='balanced_subsample' (per-tree bootstrap "
                             "counts): use 'balanced', a dict, or sample_weight")

    def _fit_shards(self, shards, n, n_features):
        xp = _backend.namespace_for(np.empty(0), None)
        criterion, shard_weights = self._targets(shards)
        self._seed = self._base_seed()
        bin_mapper = fit_bins(shards, n, self.max_bins, n_features, self.is_categorical_)
        shards.call("set_bins", bin_mapper)
        n_channels = shards.call("forest_channels", criterion, self._is_classifier)[0]
        tmpl = self._template()
        total_w = float(sum(shard_weights))
        spec = clone(self)
        spec._seed = self._seed
        kernels = get_kernels(xp, n_jobs=self.n_jobs)
        self._batches = []
        if self.distribution == "local":
            params = [
                tmpl._grower_params(m, n_features, float(w)) for m, w in zip(shards.n_rows, shard_weights)
            ]
            bounds = np.linspace(0, self.n_estimators, len(shards.actors) + 1).round().astype(int)
            args = [
                (spec, int(bounds[i]), int(bounds[i + 1]), criterion, bin_mapper, params[i])
                for i in range(len(shards.actors))
            ]
            for batch in shards.call_each("forest_local", args):
                if batch is not None:  # None: a worker given no tree (fewer trees than workers)
                    self._batches.append(self._pruned(xp, batch, criterion))
        else:
            params = dataclasses.replace(
                tmpl._grower_params(n, n_features, total_w),
                # the sort-based search of small nodes reads rows: histograms only
                sorted_small_nodes=False,
            )
            step = self._batch_size(n, n_channels, self.n_estimators)
            monitor = Monitor(self, -(-self.n_estimators // step), 0, "batch")
            for start in range(0, self.n_estimators, step):
                stop = min(start + step, self.n_estimators)
                feats = [self._tree_sample(t, n, n_features)[1] for t in range(start, stop)]
                shards.call("forest_batch", spec, start, stop, n)
                inputs = GrowerInputs(
                    codes=None,
                    channels=None,
                    multiplicity=None,
                    bin_mapper=bin_mapper,
                    criterion=criterion,
                    kernels=kernels,
                    rng=np.random.default_rng([self._seed, start, 1]),
                    tree_features=None if feats[0] is None else np.stack(feats),
                    random_splits=self._random_splits,
                )
                rows = DaskRows(shards, stop - start, n_channels)
                self._batches.append(self._pruned(xp, grow(xp, inputs, params, rows=rows), criterion))
                if monitor.step(Step(len(self._batches) - 1, stop)):
                    break
            monitor.close()
        self._bin_mapper = bin_mapper
        self._criterion = criterion
        self._n_trees_fitted = sum(int(b.left.shape[0]) for b in self._batches)
        self._n_train = n
        self.max_features_ = tmpl._resolve_sizes(n, n_features)[2]
        self._values = [criterion.value(xp, b.stats) for b in self._batches]
        self.n_outputs_ = int(self._values[0].shape[2])
        self._estimators = None
        return self

    def _pruned(self, xp, batch, criterion):
        batch = dataclasses.replace(batch, **{
            f.name: _backend.from_numpy(xp, getattr(batch, f.name))
            for f in dataclasses.fields(batch)
            if isinstance(getattr(batch, f.name), np.ndarray) and f.name != "node_count"
        })
        if self.ccp_alpha > 0.0:
            from .._pruning import prune_ccp

            total_w = criterion.weight(xp, batch.stats[:, 0, :])
            batch = prune_ccp(xp, batch, criterion, self.ccp_alpha, total_w)
        return batch

class DaskRandomForestClassifier(_DaskForest, RandomForestClassifier):
    """A random forest classifier trained on a Dask cluster.

    The parameters are those of :class:`gputrees.RandomForestClassifier`
    plus ``distribution`` (``"data_parallel"``: the single-machine forest,
    its histograms summed across workers level by level; ``"local"``: each
    worker grows its share of the trees on its own rows, a forest of local
    bootstraps). ``oob_score``, ``warm_start`` and
    ``class_weight="balanced_subsample"`` are not supported (``"balanced"``
    and dicts are, from the global class counts); categorical features are a dataframe's ``category`` columns
    (categories known to dask) and those named in ``categorical_features``.
    Call ``fit`` with dask collections while a ``distributed.Client`` is
    active.
    """

    _local_class = RandomForestClassifier
    __init__ = dask_signature(RandomForestClassifier, extra={"distribution": "data_parallel"})

    def _targets(self, shards):
        per = shards.call("label_weights")
        classes = np.unique(np.concatenate([p[0] for p in per]))
        self.classes_ = classes
        self.n_classes_ = int(classes.shape[0])
        shards.call("encode_labels", classes)
        if self.class_weight is not None:
            per = scale_by_class(shards, per, self.class_weight, classes)
        crit = CLASSIFICATION_CRITERIA[self.criterion](n_outputs=1, n_classes=self.n_classes_)
        weights = [float(np.sum(p[1])) for p in per]
        if not sum(weights) > 0:
            raise ValueError("every training row has sample_weight 0")
        return crit, weights

    def predict_proba(self, X):
        """Class probabilities (n, n_classes); lazily for dask input."""
        return self._dask_or_local("predict_proba", X, self.n_classes_, np.float64, list(self.classes_))

    def predict(self, X):
        """Predicted classes; lazily for dask input."""
        return self._dask_or_local("predict", X, None, self.classes_.dtype)


class DaskRandomForestRegressor(_DaskForest, RandomForestRegressor):
    """A random forest regressor trained on a Dask cluster (see :class:`DaskRandomForestClassifier`)."""

    _local_class = RandomForestRegressor
    __init__ = dask_signature(RandomForestRegressor, extra={"distribution": "data_parallel"})

    def _targets(self, shards):
        per = shards.call("target_sums")
        if sum(p[4] for p in per):
            raise ValueError("y contains NaN or infinity")
        weights = [p[1] for p in per]
        if not sum(weights) > 0:
            raise ValueError("every training row has sample_weight 0")
        if self.criterion == "poisson" and (min(p[2] for p in per) < 0 or not sum(p[0] for p in per) > 0):
            raise ValueError("criterion='poisson' needs y >= 0 and a positive sum of y")
        self._y_ndim = 1
        crit = REGRESSION_CRITERIA[self.criterion](n_outputs=1, n_classes=1)
        return crit, weights

    def predict(self, X):
        """Predicted values; lazily for dask input."""
        return self._dask_or_local("predict", X, None, np.float64)
