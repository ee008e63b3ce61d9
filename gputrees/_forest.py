"""Random forests and extremely randomised trees, grown a batch of trees at a time.

A forest's trees are independent, so a batch of them shares one level loop of
the grower: bootstrap samples are per-row integer counts (the ``multiplicity``
of :class:`gputrees._records.GrowerInputs`; no copy of X), node ids are offset
per tree, and one histogram call serves every node of every tree of the batch.

Reproducibility: tree ``t``'s bootstrap sample is ``n_draw`` counter-based
draws keyed by ``(random_state, t)`` (:func:`gputrees.kernels.rules.sample_row`),
counted by the fit's kernel set (on the GPU, where the counts are made and
stay; every set makes the same counts), and its feature subset for
``max_features_per_tree`` (and a sample without replacement) comes from its
own generator, seeded with ``(random_state, t)``: the samples do not depend
on how trees are batched, nor on the device.
The per-node draws (``max_features``, extra-trees thresholds) come from one
generator per batch, seeded with ``(random_state, first tree of the batch)``:
the same ``random_state`` and ``batch_size`` give the same forest.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from . import _backend
from ._model_io import ModelFileMixin
from .explain import ShapMixin, ShapModel
from ._binning import fit_bin_mapper
from ._classes import DecisionTreeClassifier, DecisionTreeRegressor, _BaseTree
from ._criteria import CLASSIFICATION_CRITERIA, REGRESSION_CRITERIA
from ._grower import grow
from ._records import DEFAULT_MEMORY_LIMIT, GrowerInputs, stack_batches, stack_node_arrays
from ._predictor import apply_trees, tree_value_sums
from .kernels.reference import compact_batch, gather_node_values
from ._progress import Monitor, Step
from ._scoring import ClassifierMixin, RegressorMixin
from ._sparse import is_sparse
from ._state import transactional_fit
from ._tree import Tree
from ._validation import drop_zero_weight_rows, sample_weight_to_host, y_to_host
from ._kernel_choice import chooses_kernels
from .kernels import get_kernels, quantisation_scale, quantise

__all__ = [
    "RandomForestClassifier",
    "RandomForestRegressor",
    "ExtraTreesClassifier",
    "ExtraTreesRegressor",
]

NP = _backend.namespace_of(np.empty(0))

#: Device bytes per (tree, in-bag row) of a batch: active-row arrays (row, node,
#: two multiplicities), gathered channels and routing temporaries. Batches
#: hold ``memory_limit // (n_samples * this)`` trees (at least one).
BYTES_PER_TREE_ROW_BASE = 96
BYTES_PER_TREE_ROW_CHANNEL = 16


class _BaseForest(ShapMixin, ModelFileMixin, BaseEstimator):
    _parameter_constraints: dict = {
        # the tree parameters, with the single trees' rules
        **{
            k: v
            for k, v in _BaseTree._parameter_constraints.items()
            if k not in ("criterion", "class_weight", "random_state")
        },
        "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_features_per_tree": [
            Interval(numbers.Integral, 1, None, closed="left"),
            Interval(numbers.Real, 0.0, 1.0, closed="right"),
            None,
        ],
        "bootstrap": ["boolean"],
        "oob_score": ["boolean"],
        "max_samples": [
            None,
            Interval(numbers.Real, 0.0, 1.0, closed="right"),
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
        "random_state": ["random_state"],
        "warm_start": ["boolean"],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "verbose": ["verbose"],
        "callbacks": [list, None],
    }
    for _k in ("pruning", "validation_fraction"):  # single-tree options only
        _parameter_constraints.pop(_k, None)
    del _k

    _random_splits = False
    _tree_class = None

    # -- set-up ------------------------------------------------------------
    def _template(self):
        """A single-tree estimator with this forest's tree parameters."""
        params = {
            "criterion": self.criterion,
            "max_depth": self.max_depth,
            "min_samples_split": self.min_samples_split,
            "min_samples_leaf": self.min_samples_leaf,
            "min_weight_fraction_leaf": self.min_weight_fraction_leaf,
            "max_features": self.max_features,
            "max_leaf_nodes": self.max_leaf_nodes,
            "min_impurity_decrease": self.min_impurity_decrease,
            "max_bins": self.max_bins,
            "categorical_features": self.categorical_features,
            "device": self.device,
            "memory_limit": self.memory_limit,
            "n_jobs": self.n_jobs,
        }
        if "class_weight" in self._tree_class._parameter_constraints:
            params["class_weight"] = None
        return self._tree_class(**params)

    def _base_seed(self) -> int:
        rs = self.random_state
        if isinstance(rs, numbers.Integral):
            return int(rs)
        if isinstance(rs, np.random.RandomState):
            return int(rs.randint(0, 2**31 - 1))
        return int(np.random.default_rng().integers(0, 2**63 - 1))

    def _n_draw(self, n: int) -> int:
        ms = self.max_samples
        if ms is None:
            return n
        if isinstance(ms, numbers.Integral):
            if ms > n:
                raise ValueError(f"max_samples={ms} is larger than the number of samples {n}")
            return int(ms)
        return max(1, int(round(ms * n)))

    def _tree_sample(self, t: int, n: int, n_features: int):
        """In-bag counts (n,) and allowed features (n_features,) of tree ``t``, host NumPy arrays (the draws of
        :meth:`_batch_sample`, whose counts every kernel set makes alike)."""
        counts, feats = self._batch_sample(NP, get_kernels(NP, "bincount"), t, t + 1, n, n_features)
        return counts[0], None if feats is None else feats[0]

    def _batch_sample(self, xp, kernels, first: int, stop: int, n: int, n_features: int):
        """In-bag counts (trees, n) float64 in ``xp`` and allowed features (trees, n_features) bool (host) or
        None of trees ``first .. stop - 1``.

        Bootstrap counts are the kernel set's (on the GPU made on the device:
        no (trees, n) array on the host). A sample without replacement
        (``bootstrap=False`` with ``max_samples``) is drawn on the host from
        the tree's generator: it needs a selection among all rows, not
        independent draws, and scikit-learn has no such option to match.
        """
        n_draw = self._n_draw(n)
        pasting = not self.bootstrap and n_draw < n
        mfpt = self.max_features_per_tree
        feats = None
        if mfpt is not None:
            k = int(mfpt) if isinstance(mfpt, numbers.Integral) else max(1, int(mfpt * n_features))
            if k > n_features:
                raise ValueError(f"max_features_per_tree={k} is larger than n_features={n_features}")
            feats = np.zeros((stop - first, n_features), dtype=bool)
        pasted = np.zeros((stop - first, n), dtype=np.float64) if pasting else None
        if pasting or feats is not None:
            for i, t in enumerate(range(first, stop)):
                rng = np.random.default_rng([self._seed, int(t)])
                if pasting:
                    pasted[i, rng.choice(n, n_draw, replace=False)] = 1.0
                if feats is not None:
                    feats[i, rng.choice(n_features, k, replace=False)] = True
        if self.bootstrap:
            counts = kernels.bootstrap_counts(xp, self._seed, first, stop - first, n, n_draw)
        elif pasting:
            counts = _backend.from_numpy(xp, pasted)
        else:
            counts = xp.ones((stop - first, n), dtype=xp.float64)
        return counts, feats

    def _batch_size(self, n: int, n_channels: int, n_trees: int) -> int:
        """Trees a batch grows: ``batch_size``, or the memory budget's count spread evenly over the batches
        it needs (40 trees under a budget of 37: two of 20, not 37 and 3, whose small last batch would grow
        level-wise: too few trees to hand whole to the subtree kernel's threads)."""
        if self.batch_size is not None:
            return min(int(self.batch_size), n_trees)
        per_tree = n * (BYTES_PER_TREE_ROW_BASE + BYTES_PER_TREE_ROW_CHANNEL * n_channels)
        most = int(max(1, min(n_trees, self.memory_limit // max(per_tree, 1))))
        n_batches = -(-n_trees // most)
        return -(-n_trees // n_batches)

    # -- fit ---------------------------------------------------------------
    @transactional_fit
    @chooses_kernels
    def fit(self, X, y, sample_weight=None):
        """Grow the forest.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array; NaN marks missing values.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Class labels (classifiers) or targets (regressors).
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        self
        """
        self._validate_params()
        if self.oob_score and not self.bootstrap:
            raise ValueError("Out of bag estimation only available if bootstrap=True")
        tmpl = self._template()
        xp, Xd, is_cat, categories = tmpl._prepare_X(X, fit=True)
        n_samples, n_features = Xd.shape
        # _prepare_X recorded the input's feature names on the template
        if hasattr(tmpl, "feature_names_in_"):
            self.feature_names_in_ = tmpl.feature_names_in_
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        y_host = y_to_host(y, n_samples, multi_output=not self._is_classifier)
        sw = sample_weight_to_host(sample_weight, n_samples)
        y_enc, criterion, sw = tmpl._encode_target(y_host, sw)
        if self._is_classifier and self.class_weight not in (None, "balanced_subsample"):
            from sklearn.utils.class_weight import compute_sample_weight

            sw = sw * compute_sample_weight(self.class_weight, y_host)
            if not np.any(sw > 0):
                raise ValueError("sample_weight times class_weight is zero for every sample")
        Xd, y_enc, sw = drop_zero_weight_rows(xp, Xd, y_enc, sw)
        n_samples = int(sw.shape[0])
        warm = self.warm_start and hasattr(self, "_batches")
        kernels = get_kernels(xp, n_jobs=self.n_jobs)
        if warm:
            if self.n_estimators < self._n_trees_fitted:
                raise ValueError(
                    f"n_estimators={self.n_estimators} must be larger or equal to "
                    f"len(estimators_)={self._n_trees_fitted} when warm_start==True"
                )
            if n_features != self.n_features_in_ or n_samples != self._n_train:
                raise ValueError("warm_start needs the same training data as the first fit")
            if self.n_estimators == self._n_trees_fitted:
                warnings.warn(
                    "Warm-start fitting without increasing n_estimators does not fit new trees.",
                    UserWarning,
                )
                return self
            bin_mapper = self._bin_mapper
            first = self._n_trees_fitted
        else:
            self._seed = self._base_seed()
            bin_mapper = fit_bin_mapper(xp, Xd, is_cat, self.max_bins, kernels)
            self._batches = []
            self._tree_counts_seen = None
            first = 0
        # the estimator-level attributes come from the template's encoding
        for attr in ("classes_", "n_classes_", "_y_ndim"):
            if hasattr(tmpl, attr):
                setattr(self, attr, getattr(tmpl, attr))
        codes = bin_mapper.transform(xp, Xd, kernels)
        # the routing's feature-major copy, once for every batch of trees (a
        # view for a sparse X: its fit's memory is the CSR's and the codes')
        codes_by_feature = kernels.feature_major(xp, codes, copy=not is_sparse(Xd))
        y_dev = _backend.from_numpy(xp, y_enc)
        channels = criterion.row_channels(xp, y_dev, _backend.from_numpy(xp, sw))
        grow_kernels = kernels
        if kernels.fixed_point:
            # the GPU's sums in int64 fixed point (order-independent, so a fit is the same run after run; the
            # device step's, which grows the batch in a few launches a level): every tree's rows (their
            # multiplicities sum to at most n_samples) summed exactly. Integer channels (unweighted classes)
            # stay as they are, hence the CPU's forest
            scale = quantisation_scale(xp, channels, max(1, n_samples))
            channels = quantise(xp, channels, scale)
            grow_kernels = kernels.quantised(scale)
        params = tmpl._grower_params(n_samples, n_features, float(sw.sum()))
        k = params.max_features
        n_channels = int(channels.shape[1])
        step = self._batch_size(n_samples, n_channels, self.n_estimators - first)
        n_batches = len(self._batches) + -(-(self.n_estimators - first) // step)
        monitor = Monitor(self, n_batches, len(self._batches), "batch")
        for start in range(first, self.n_estimators, step):
            stop = min(start + step, self.n_estimators)
            draws, tree_features = self._batch_sample(xp, kernels, start, stop, n_samples, n_features)
            # as scikit-learn: a row drawn k times is one row of weight k, so
            # n_node_samples and min_samples_* count distinct in-bag rows
            # (draws are whole numbers: at least 1 in the bag)
            mult = xp.minimum(draws, 1.0)
            wmult = draws
            if self._is_classifier and self.class_weight == "balanced_subsample":
                wmult = draws * self._subsample_class_weights(xp, draws, y_dev)
            inputs = GrowerInputs(
                codes=codes,
                channels=channels,
                multiplicity=mult,
                bin_mapper=bin_mapper,
                criterion=criterion,
                kernels=grow_kernels,
                rng=np.random.default_rng([self._seed, start, 1]),
                weight_multiplicity=wmult,
                tree_features=tree_features,
                random_splits=self._random_splits,
                codes_by_feature=codes_by_feature,
            )
            batch = grow(xp, inputs, params)
            if batch.node_count is None:  # the device step's perfect-tree layout: one host read lays it out
                batch, _ = compact_batch(xp, batch)
            if self.ccp_alpha > 0.0:
                from ._pruning import prune_ccp

                total_w = criterion.weight(xp, batch.stats[:, 0, :])
                batch = prune_ccp(xp, batch, criterion, self.ccp_alpha, total_w)
            self._batches.append(batch)
            if monitor.step(Step(len(self._batches) - 1, stop)):
                break
        monitor.close()
        self._bin_mapper = bin_mapper
        self._criterion = criterion
        self._categories = categories
        self._n_trees_fitted = sum(int(b.left.shape[0]) for b in self._batches)  # fewer if a callback stopped
        self._n_train = n_samples
        self.n_features_in_ = n_features
        self.is_categorical_ = is_cat
        self.max_features_ = k
        self._values = [criterion.value(xp, b.stats) for b in self._batches]
        self.n_outputs_ = int(self._values[0].shape[2])
        if self.oob_score:
            self._compute_oob(xp, kernels, Xd, y_enc, sw)
        self._estimators = None
        return self

    def _subsample_class_weights(self, xp, counts, y):
        """Per-tree "balanced" class weights (n_trees, n) of the in-bag samples ``counts`` (n_trees, n), in
        ``xp`` (``y``: the encoded classes there)."""
        f8 = xp.float64
        onehot = xp.astype(y[None, :] == xp.arange(self.n_classes_, dtype=y.dtype)[:, None], f8)  # (k, n)
        per_class = xp.matmul(counts, xp.permute_dims(onehot, (1, 0)))  # (trees, k)
        n_in = xp.sum(per_class, axis=1, keepdims=True)
        present = per_class > 0
        n_present = xp.sum(xp.astype(present, f8), axis=1, keepdims=True)  # at least 1: every tree draws a row
        cw = xp.where(present, n_in / (n_present * xp.where(present, per_class, 1.0)), 0.0)
        return xp.take(cw, xp.astype(y, xp.int64), axis=1)

    # -- prediction ----------------------------------------------------------
    def _X_for_predict(self, X):
        check_is_fitted(self, "_batches")
        tmpl = self._predict_template()
        xp, Xd, _, _ = tmpl._prepare_X(X, fit=False)
        return xp, self._bin_mapper.encode_for_predict(xp, Xd)

    def _shap_model(self, X):
        """``(xp, rows encoded for prediction, ShapModel)``: every tree, each leaf's value divided by the trees'
        count (the forest predicts their mean)."""
        xp, Xp = self._X_for_predict(X)
        batch = stack_batches(xp, self._batches)
        values = stack_node_arrays(
            xp, [xp.reshape(v, (int(v.shape[0]), int(v.shape[1]), -1)) for v in self._values], 0.0,
            int(batch.left.shape[1]),
        ) / float(self._n_trees_fitted)
        model = ShapModel(
            batch=batch, values=values, cover=self._criterion.weight(xp, batch.stats), base=None,
            missing_bin=self._bin_mapper.missing_bin, one_output=not self._is_classifier and self._y_ndim == 1,
        )
        return xp, Xp, model

    def _predict_template(self):
        """A fitted-looking single tree carrying what _prepare_X reads at predict."""
        tmpl = self._template()
        tmpl._batch = self._batches[0].tree(0)
        tmpl._categories = self._categories
        tmpl.n_features_in_ = self.n_features_in_
        if hasattr(self, "feature_names_in_"):
            tmpl.feature_names_in_ = self.feature_names_in_
        return tmpl

    def _row_chunk(self, n: int, width: int) -> int:
        per_row = max(1, width) * 8 * 4
        return max(1, min(n, int(self.memory_limit // per_row)))

    def _mean_values(self, xp, Xp, weights=None):
        """Mean over trees of the leaf values, (n, n_outputs, k); ``weights`` (trees, n) masks trees."""
        n = Xp.shape[0]
        k_out = self._values[0].shape[2] * self._values[0].shape[3]
        widest = max(int(b.left.shape[0]) for b in self._batches)
        step = self._row_chunk(n, widest * k_out)
        out = []
        for r0 in range(0, n, step):
            r1 = min(r0 + step, n)
            Xc = Xp[r0:r1, ...]
            acc = None
            t0 = 0
            for batch, values in zip(self._batches, self._values):
                tb = int(batch.left.shape[0])
                if weights is None:
                    s = tree_value_sums(xp, batch, values, Xc, self._bin_mapper.missing_bin, n_jobs=self.n_jobs)
                else:
                    leaves = apply_trees(xp, batch, Xc, self._bin_mapper.missing_bin, n_jobs=self.n_jobs)
                    v = gather_node_values(xp, values, leaves)  # (rows, trees, out, k)
                    w = weights[t0 : t0 + tb, r0:r1, ...]  # (trees, rows)
                    s = xp.sum(v * xp.permute_dims(w, (1, 0))[:, :, None, None], axis=1)
                acc = s if acc is None else acc + s
                t0 += tb
            out.append(acc)
        total = xp.concat(out, axis=0)
        if weights is None:
            return total / float(self._n_trees_fitted)
        return total

    def apply(self, X):
        """Leaf index of every sample in every tree, shape (n_samples, n_estimators).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        xp, Xp = self._X_for_predict(X)
        leaves = [apply_trees(xp, b, Xp, self._bin_mapper.missing_bin, n_jobs=self.n_jobs) for b in self._batches]
        return _backend.output_like(X, xp.concat(leaves, axis=1))

    def decision_path(self, X):
        """Nodes each sample goes through.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.

        Returns
        -------
        indicator : sparse matrix of shape (n_samples, total number of nodes)
        n_nodes_ptr : ndarray of shape (n_estimators + 1,)
            Columns ``n_nodes_ptr[i]:n_nodes_ptr[i + 1]`` are the nodes of tree ``i``.
        """
        leaves = _backend.to_numpy(self.apply(X))
        counts = np.concatenate([b.node_count for b in self._batches])
        ptr = np.concatenate([[0], np.cumsum(counts)])
        rows, cols = [], []
        t = 0
        for batch in self._batches:
            left = _backend.to_numpy(batch.left)
            right = _backend.to_numpy(batch.right)
            tb, width = left.shape
            parent = np.full((tb, width), -1, dtype=np.int64)
            ti, ni = np.nonzero(left >= 0)
            parent[ti, left[ti, ni]] = ni
            parent[ti, right[ti, ni]] = ni
            node = leaves[:, t : t + tb]
            tree_idx = np.broadcast_to(np.arange(tb), node.shape)
            r = np.broadcast_to(np.arange(node.shape[0])[:, None], node.shape)
            alive = np.ones(node.shape, dtype=bool)
            while alive.any():
                rows.append(r[alive])
                cols.append(node[alive] + ptr[t + tree_idx[alive]])
                node = np.where(alive, parent[tree_idx, np.maximum(node, 0)], -1)
                alive = node >= 0
            t += tb
        rows, cols = np.concatenate(rows), np.concatenate(cols)
        ind = sp.csr_matrix(
            (np.ones(rows.shape[0], dtype=np.int64), (rows, cols)), shape=(leaves.shape[0], int(ptr[-1]))
        )
        return ind, ptr

    @property
    def feature_importances_(self):
        """Mean over trees of each tree's normalised impurity decrease, shape (n_features,)."""
        check_is_fitted(self, "_batches")
        xp = _backend.namespace_of(self._batches[0].left)
        total = np.zeros(self.n_features_in_)
        for batch in self._batches:
            left = _backend.to_numpy(batch.left)
            right = _backend.to_numpy(batch.right)
            feature = _backend.to_numpy(batch.feature)
            stats = batch.stats
            w = _backend.to_numpy(self._criterion.weight(xp, stats))
            imp = _backend.to_numpy(self._criterion.impurity(xp, stats))
            ti, ni = np.nonzero(left >= 0)
            li, ri = left[ti, ni], right[ti, ni]
            dec = w[ti, ni] * imp[ti, ni] - w[ti, li] * imp[ti, li] - w[ti, ri] * imp[ti, ri]
            per_tree = np.zeros((left.shape[0], self.n_features_in_))
            np.add.at(per_tree, (ti, feature[ti, ni]), dec)
            sums = per_tree.sum(axis=1, keepdims=True)
            per_tree = np.divide(per_tree, sums, out=np.zeros_like(per_tree), where=sums > 0)
            total += per_tree.sum(axis=0)
        total /= self._n_trees_fitted
        s = total.sum()
        return total / s if s > 0 else total

    @property
    def estimators_(self):
        """The trees, each as a fitted DecisionTree estimator (built on first access)."""
        check_is_fitted(self, "_batches")
        if self._estimators is None:
            xp = _backend.namespace_of(self._batches[0].left)
            ests = []
            for batch, values in zip(self._batches, self._values):
                for t in range(int(batch.left.shape[0])):
                    est = self._template()
                    one = batch.tree(t)
                    est._batch = one
                    est._bin_mapper = self._bin_mapper
                    est._criterion = self._criterion
                    est._categories = self._categories
                    est._values = values[t : t + 1, : int(one.node_count[0]), ...]
                    est.max_features_ = self.max_features_
                    est.n_outputs_ = self.n_outputs_
                    est.n_features_in_ = self.n_features_in_
                    est.is_categorical_ = self.is_categorical_
                    est.tree_ = Tree(one, self._criterion, xp, self._bin_mapper, self._categories)
                    for attr in ("classes_", "n_classes_", "_y_ndim", "feature_names_in_"):
                        if hasattr(self, attr):
                            setattr(est, attr, getattr(self, attr))
                    ests.append(est)
            self._estimators = ests
        return self._estimators

    def __len__(self):
        return self._n_trees_fitted if hasattr(self, "_batches") else 0

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True  # scipy.sparse X, see gputrees._sparse
        return tags

    def _compute_oob(self, xp, kernels, Xd, y_enc, sw):
        """OOB predictions from the per-tree in-bag counts (the fit's, drawn again by ``kernels``), batched over
        trees."""
        n = int(Xd.shape[0])
        counts, _ = self._batch_sample(xp, kernels, 0, self._n_trees_fitted, n, int(Xd.shape[1]))
        oob_w = xp.astype(counts == 0, xp.float64)
        Xp = self._bin_mapper.encode_for_predict(xp, Xd)
        sums = _backend.to_numpy(self._mean_values(xp, Xp, weights=oob_w))
        n_oob = _backend.to_numpy(xp.sum(oob_w, axis=0))
        if np.any(n_oob == 0):
            warnings.warn(
                "Some inputs do not have OOB scores. This probably means too few trees were "
                "used to compute any reliable OOB estimates.",
                UserWarning,
            )
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = sums / n_oob[:, None, None]
        seen = n_oob > 0
        self._set_oob(mean, seen, y_enc, sw)


class _ForestClassifier(ClassifierMixin, _BaseForest):
    _is_classifier = True
    _tree_class = DecisionTreeClassifier
    _parameter_constraints = {
        **_BaseForest._parameter_constraints,
        "criterion": [StrOptions(set(CLASSIFICATION_CRITERIA))],
        "class_weight": [StrOptions({"balanced", "balanced_subsample"}), dict, None],
    }

    def _set_oob(self, mean, seen, y_enc, sw):
        proba = mean[:, 0, :]
        self.oob_decision_function_ = proba
        pred = np.argmax(np.nan_to_num(proba[seen], nan=-1.0), axis=1)
        self.oob_score_ = accuracy_score(y_enc[seen], pred)

    def predict_proba(self, X):
        """Mean class probabilities of the trees, shape (n_samples, n_classes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        xp, Xp = self._X_for_predict(X)
        proba = self._mean_values(xp, Xp)[:, 0, :]
        return _backend.output_like(X, proba)

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba` (``-inf`` for probability 0), in the input's namespace.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        return _backend.log_like(self.predict_proba(X))

    def predict(self, X):
        """Class with the highest mean probability, shape (n_samples,).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        xp, Xp = self._X_for_predict(X)
        return _backend.labels_like(X, self.classes_, xp.argmax(self._mean_values(xp, Xp)[:, 0, :], axis=1))


class _ForestRegressor(RegressorMixin, _BaseForest):
    _is_classifier = False
    _tree_class = DecisionTreeRegressor
    _parameter_constraints = {
        **_BaseForest._parameter_constraints,
        "criterion": [StrOptions(set(REGRESSION_CRITERIA))],
    }

    def _set_oob(self, mean, seen, y_enc, sw):
        pred = mean[:, :, 0]
        self.oob_prediction_ = pred[:, 0] if self._y_ndim == 1 else pred
        self.oob_score_ = r2_score(y_enc[seen], pred[seen])

    def predict(self, X):
        """Mean of the trees' predictions, shape (n_samples,) or (n_samples, n_outputs).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        xp, Xp = self._X_for_predict(X)
        out = self._mean_values(xp, Xp)[:, :, 0]
        if self._y_ndim == 1:
            out = out[:, 0]
        return _backend.output_like(X, out)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags


_FOREST_DOC = """
    Parameters
    ----------
    n_estimators : int, default=100
    criterion : str
        As for the single trees.
    max_depth, min_samples_split, min_samples_leaf, min_weight_fraction_leaf,
    max_leaf_nodes, min_impurity_decrease, max_bins, categorical_features, device
        As for the single trees (scikit-learn's meanings).
    max_features : int, float, {{"sqrt", "log2"}} or None, default={max_features!r}
        Features drawn per split.
    max_features_per_tree : int, float or None, default=None
        A feature subset drawn once per tree (random subspaces; with
        ``max_samples``, random patches). Per-split draws come from it.
    bootstrap : bool, default={bootstrap}
        Draw rows with replacement. With ``bootstrap=False`` and
        ``max_samples`` below the number of rows, rows are drawn without
        replacement (pasting) -- scikit-learn refuses that combination.
    oob_score : bool, default=False
        Score the out-of-bag predictions (``oob_score_``, and
        ``oob_decision_function_`` or ``oob_prediction_``).
    max_samples : int, float or None, default=None
        Rows drawn per tree (count or fraction); None: n_samples.
    random_state : int, RandomState instance or None, default=None
    ccp_alpha : float, default=0.0
        Cost-complexity pruning of every tree (batched over trees).
    warm_start : bool, default=False
        Add trees to the fitted forest (same data; the bins of the first fit).
    memory_limit : int, default=1 GiB
        Histogram memory bound of a level, and the budget the number of trees
        per batch is sized from: at most ``memory_limit // (n_samples * (96 +
        16 * n_channels))`` trees (at least 1), spread evenly over the
        batches that takes. The two budgets add up: the measured
        peak extra memory of a fit is about 3 x ``memory_limit`` (about 1.5 x
        with ``batch_size=1``) besides the fitted trees' own arrays (about 90
        bytes a node: fully grown trees hold up to two nodes per distinct
        in-bag row, 100 regression trees on 200k rows about 2.1 GiB).
    n_jobs : int or None, default=None
        Threads of the compiled CPU kernels (Numba): None or -1 = every core
        (as XGBoost, LightGBM and HistGradientBoosting), -2 = all but one,
        k > 0 = k. The fitted model does not depend on it. Ignored on the GPU
        and by the NumPy fallback kernels (``GPUTREES_KERNELS``).
    batch_size : int or None, default=None
        Trees grown together; overrides the budget above.
    verbose : int, default=0
        Above 0, show the batches of trees done and the time left: a tqdm
        progress bar when tqdm is installed, else a line every ``verbose``
        batches.
    callbacks : list or None, default=None
        Objects with ``on_iteration(env) -> bool`` called after every batch
        of trees with a :class:`gputrees.callbacks.IterationEnv`; True stops
        the fit, keeping the trees grown (``len(estimators_)`` then is
        below ``n_estimators``; see :mod:`gputrees.callbacks`).
    {class_weight}
    Attributes
    ----------
    estimators_ : list of DecisionTree estimators
    feature_importances_ : ndarray of shape (n_features,)
    n_features_in_, feature_names_in_, n_outputs_{classes}
    oob_score_ : float
"""


def _forest_init(self, criterion, max_features, bootstrap, class_weight=None, **kw):
    self.n_estimators = kw["n_estimators"]
    self.criterion = criterion
    self.max_depth = kw["max_depth"]
    self.min_samples_split = kw["min_samples_split"]
    self.min_samples_leaf = kw["min_samples_leaf"]
    self.min_weight_fraction_leaf = kw["min_weight_fraction_leaf"]
    self.max_features = max_features
    self.max_leaf_nodes = kw["max_leaf_nodes"]
    self.min_impurity_decrease = kw["min_impurity_decrease"]
    self.bootstrap = bootstrap
    self.oob_score = kw["oob_score"]
    self.max_samples = kw["max_samples"]
    self.random_state = kw["random_state"]
    self.ccp_alpha = kw["ccp_alpha"]
    self.warm_start = kw["warm_start"]
    self.max_bins = kw["max_bins"]
    self.categorical_features = kw["categorical_features"]
    self.device = kw["device"]
    self.max_features_per_tree = kw["max_features_per_tree"]
    self.memory_limit = kw["memory_limit"]
    self.n_jobs = kw["n_jobs"]
    self.batch_size = kw["batch_size"]
    self.verbose = kw["verbose"]
    self.callbacks = kw["callbacks"]


class RandomForestClassifier(_ForestClassifier):
    __doc__ = "A random forest classifier: bootstrap samples, best splits among random features.\n" + _FOREST_DOC.format(
        max_features="sqrt",
        bootstrap=True,
        class_weight='class_weight : dict, "balanced", "balanced_subsample" or None, default=None\n',
        classes=", classes_, n_classes_\n    oob_decision_function_ : ndarray of shape (n_samples, n_classes)",
    )

    def __init__(
        self,
        n_estimators=100,
        *,
        criterion="gini",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features="sqrt",
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=True,
        oob_score=False,
        random_state=None,
        warm_start=False,
        class_weight=None,
        ccp_alpha=0.0,
        max_samples=None,
        max_bins=255,
        categorical_features=None,
        device=None,
        max_features_per_tree=None,
        memory_limit=DEFAULT_MEMORY_LIMIT,
        n_jobs=None,
        batch_size=None,
        verbose=0,
        callbacks=None,
    ):
        _forest_init(**locals())
        self.class_weight = class_weight


class ExtraTreesClassifier(_ForestClassifier):
    __doc__ = "Extremely randomised trees: one random threshold per (node, feature), the best kept.\n" + _FOREST_DOC.format(
        max_features="sqrt",
        bootstrap=False,
        class_weight='class_weight : dict, "balanced", "balanced_subsample" or None, default=None\n',
        classes=", classes_, n_classes_\n    oob_decision_function_ : ndarray of shape (n_samples, n_classes)",
    )
    _random_splits = True

    def __init__(
        self,
        n_estimators=100,
        *,
        criterion="gini",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features="sqrt",
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=False,
        oob_score=False,
        random_state=None,
        warm_start=False,
        class_weight=None,
        ccp_alpha=0.0,
        max_samples=None,
        max_bins=255,
        categorical_features=None,
        device=None,
        max_features_per_tree=None,
        memory_limit=DEFAULT_MEMORY_LIMIT,
        n_jobs=None,
        batch_size=None,
        verbose=0,
        callbacks=None,
    ):
        _forest_init(**locals())
        self.class_weight = class_weight


class RandomForestRegressor(_ForestRegressor):
    __doc__ = "A random forest regressor: bootstrap samples, mean of the trees.\n" + _FOREST_DOC.format(
        max_features=1.0, bootstrap=True, class_weight="", classes="\n    oob_prediction_ : ndarray"
    )

    def __init__(
        self,
        n_estimators=100,
        *,
        criterion="squared_error",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=1.0,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=True,
        oob_score=False,
        random_state=None,
        warm_start=False,
        ccp_alpha=0.0,
        max_samples=None,
        max_bins=255,
        categorical_features=None,
        device=None,
        max_features_per_tree=None,
        memory_limit=DEFAULT_MEMORY_LIMIT,
        n_jobs=None,
        batch_size=None,
        verbose=0,
        callbacks=None,
    ):
        _forest_init(**locals())


class ExtraTreesRegressor(_ForestRegressor):
    __doc__ = "Extremely randomised regression trees.\n" + _FOREST_DOC.format(
        max_features=1.0, bootstrap=False, class_weight="", classes="\n    oob_prediction_ : ndarray"
    )
    _random_splits = True

    def __init__(
        self,
        n_estimators=100,
        *,
        criterion="squared_error",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=1.0,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=False,
        oob_score=False,
        random_state=None,
        warm_start=False,
        ccp_alpha=0.0,
        max_samples=None,
        max_bins=255,
        categorical_features=None,
        device=None,
        max_features_per_tree=None,
        memory_limit=DEFAULT_MEMORY_LIMIT,
        n_jobs=None,
        batch_size=None,
        verbose=0,
        callbacks=None,
    ):
        _forest_init(**locals())
