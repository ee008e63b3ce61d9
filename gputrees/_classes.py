"""DecisionTreeClassifier and DecisionTreeRegressor."""

from __future__ import annotations

import math
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
from sklearn.utils import Bunch
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _backend
from ._model_io import ModelFileMixin
from .explain import ShapMixin, ShapModel
from ._binning import MAX_BINS_LIMIT, fit_bin_mapper
from ._criteria import CLASSIFICATION_CRITERIA, REGRESSION_CRITERIA
from ._grower import grow
from ._records import DEFAULT_MEMORY_LIMIT, GrowerInputs, GrowerParams
from ._predictor import apply_trees
from .kernels.reference import gather_node_values
from ._pruning import ccp_path, prune_ccp, prune_reduced_error
from ._scoring import ClassifierMixin, RegressorMixin
from ._sparse import is_sparse
from ._state import transactional_fit
from ._tree import Tree
from ._validation import (
    encode_classes,
    check_class_labels,
    check_finite_x,
    check_predict_columns,
    drop_zero_weight_rows,
    holdout_split,
    check_target_scale,
    regression_target,
    resolve_max_features,
    sample_weight_to_host,
    take_rows,
    to_numeric_2d,
    y_to_host,
)
from ._kernel_choice import chooses_kernels
from .kernels import get_kernels

__all__ = ["DecisionTreeClassifier", "DecisionTreeRegressor"]


class _BaseTree(ShapMixin, ModelFileMixin, BaseEstimator):
    _parameter_constraints: dict = {
        "max_depth": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "min_samples_split": [
            Interval(numbers.Integral, 2, None, closed="left"),
            Interval(numbers.Real, 0.0, 1.0, closed="right"),
        ],
        "min_samples_leaf": [
            Interval(numbers.Integral, 1, None, closed="left"),
            Interval(numbers.Real, 0.0, 1.0, closed="neither"),
        ],
        "min_weight_fraction_leaf": [Interval(numbers.Real, 0.0, 0.5, closed="both")],
        "max_features": [
            Interval(numbers.Integral, 1, None, closed="left"),
            Interval(numbers.Real, 0.0, 1.0, closed="right"),
            StrOptions({"sqrt", "log2"}),
            None,
        ],
        "random_state": ["random_state"],
        "max_leaf_nodes": [Interval(numbers.Integral, 2, None, closed="left"), None],
        "min_impurity_decrease": [Interval(numbers.Real, 0.0, None, closed="left")],
        "max_bins": [Interval(numbers.Integral, 2, MAX_BINS_LIMIT, closed="both")],
        "categorical_features": ["array-like", None],
        "device": [StrOptions({"cpu", "cuda"}), None],
        "memory_limit": [Interval(numbers.Integral, 1 << 20, None, closed="left")],
        "n_jobs": [numbers.Integral, None],
        "ccp_alpha": [Interval(numbers.Real, 0.0, None, closed="left")],
        "pruning": [StrOptions({"reduced_error"}), None],
        "validation_fraction": [Interval(numbers.Real, 0.0, 1.0, closed="neither")],
    }

    _is_classifier = False

    # -- fit -------------------------------------------------------------------
    def _prepare_X(self, X, fit: bool):
        """Namespace and float64 matrix of X, with the fit-time checks."""
        if fit:
            xp = _backend.namespace_for(X, self.device)
        else:
            xp = _backend.namespace_of(self._batch.left)
        Xd, is_cat, categories = to_numeric_2d(
            X,
            xp,
            self.categorical_features if fit else None,
            None if fit else self._categories,
        )
        if fit:
            validate_data(self, X, reset=True, skip_check_array=True)
        else:
            check_predict_columns(self, X)
        check_finite_x(xp, Xd)
        return xp, Xd, is_cat, categories

    def _grower_params(self, n_samples: int, n_features: int, total_weight: float) -> GrowerParams:
        """The grower's stopping rules from this estimator's parameters."""
        msl, mss, k = self._resolve_sizes(n_samples, n_features)
        return GrowerParams(
            max_depth=self.max_depth,
            min_samples_split=mss,
            min_samples_leaf=msl,
            min_weight_leaf=self.min_weight_fraction_leaf * total_weight,
            min_impurity_decrease=self.min_impurity_decrease,
            max_leaf_nodes=self.max_leaf_nodes,
            max_features=k,
            memory_limit=self.memory_limit,
        )

    def _resolve_sizes(self, n_samples: int, n_features: int):
        msl = self.min_samples_leaf
        if not isinstance(msl, numbers.Integral):
            msl = int(math.ceil(msl * n_samples))
        mss = self.min_samples_split
        if not isinstance(mss, numbers.Integral):
            mss = max(2, int(math.ceil(mss * n_samples)))
        k = resolve_max_features(self.max_features, n_features)
        return int(msl), int(max(mss, 2 * msl)), k

    def _fit(self, X, y, sample_weight, apply_pruning=True):
        """Grow the tree, then apply ``ccp_alpha`` and ``pruning`` (when ``apply_pruning``)."""
        self._validate_params()
        xp, Xd, is_cat, categories = self._prepare_X(X, fit=True)
        n_samples, n_features = Xd.shape
        y_host = y_to_host(y, n_samples, multi_output=not self._is_classifier)
        sw = sample_weight_to_host(sample_weight, n_samples)
        y_enc, criterion, sw = self._encode_target(y_host, sw)
        rng = _backend.host_rng(self.random_state)
        validation = None
        if self.pruning == "reduced_error":
            train, held = self._holdout(y_enc, rng)
            validation = (
                take_rows(xp, Xd, held),
                y_enc[held],
                sw[held],
            )
            Xd = take_rows(xp, Xd, train)
            y_enc, sw = y_enc[train], sw[train]
            n_samples = int(train.shape[0])
            if not np.any(sw > 0):
                raise ValueError("every training row left after the validation hold-out has weight 0")
        Xd, y_enc, sw = drop_zero_weight_rows(xp, Xd, y_enc, sw)
        kernels = get_kernels(xp, n_jobs=self.n_jobs)
        bin_mapper = fit_bin_mapper(xp, Xd, is_cat, self.max_bins, kernels)
        codes = bin_mapper.transform(xp, Xd, kernels)
        y_dev = _backend.from_numpy(xp, y_enc)
        w_dev = _backend.from_numpy(xp, sw)
        channels = criterion.row_channels(xp, y_dev, w_dev)
        params = self._grower_params(n_samples, n_features, float(sw.sum()))
        k = params.max_features
        inputs = GrowerInputs(
            codes=codes,
            channels=channels,
            multiplicity=None,
            bin_mapper=bin_mapper,
            criterion=criterion,
            kernels=kernels,
            rng=rng,
            # a view for a sparse X (its fit's memory is the CSR's and the codes'); else made where read
            codes_by_feature=kernels.feature_major(xp, codes, copy=False) if is_sparse(Xd) else None,
        )
        batch = grow(xp, inputs, params)
        if apply_pruning and self.ccp_alpha > 0.0:
            batch = prune_ccp(xp, batch, criterion, self.ccp_alpha)
        self._install(xp, batch, bin_mapper, criterion, categories, is_cat, k)
        if apply_pruning and validation is not None:
            Xv, yv, wv = validation
            self._prune_reduced_error(xp, Xv, yv, wv)
        return self

    def _install(self, xp, batch, bin_mapper, criterion, categories, is_cat, k):
        """Set the fitted state from a grown one-tree batch and the fit's binning."""
        self._bin_mapper = bin_mapper
        self._criterion = criterion
        self._categories = categories
        self.max_features_ = k
        self.is_categorical_ = is_cat
        self.categories_ = [
            None if not is_cat[j] else (categories[j] if categories[j] is not None else _backend.to_numpy(bin_mapper.category_values[j]))
            for j in range(is_cat.shape[0])
        ]
        self._set_batch(xp, batch)
        for attr in ("pruned_nodes_", "validation_errors_"):
            if hasattr(self, attr):
                delattr(self, attr)

    # -- many fits on data binned once (AdaBoost) --------------------------------
    def _bin_once(self, X, y, sample_weight):
        """Check, encode and bin the training data once for a sequence of fits.

        Runs the fit-time checks of :meth:`fit` on this estimator (setting
        ``n_features_in_``, ``classes_``, ...), drops the rows of weight 0 and
        bins the rest; :meth:`_fit_binned` then grows trees on it with any
        weights, without binning again. ``pruning`` must be None.

        Returns
        -------
        data : Bunch
            ``xp`` (namespace); ``codes`` (n, n_features), uint8/uint16, and
            ``codes_by_feature`` (its feature-major copy for the kernels' routing, a view for a sparse X, or None);
            ``X_predict`` (n, n_features), float64, the rows as
            :func:`apply_trees` reads them; ``y_dev`` the encoded targets on
            the device ((n,) int64 class codes or (n, n_outputs) float64);
            ``sample_weight`` (n,) float64, host, the kept rows' weights;
            ``class_factor`` (n,) float64, device, the ``class_weight``
            factor of each row (ones without); ``n_input``, the number of
            rows of ``X``; the binning and the fitted attributes to copy onto
            every tree.
        """
        self._validate_params()
        if self.pruning is not None:
            raise ValueError("pruning must be None to fit on data binned once")
        xp, Xd, is_cat, categories = self._prepare_X(X, fit=True)
        n_samples = Xd.shape[0]
        y_host = y_to_host(y, n_samples, multi_output=not self._is_classifier)
        sw = sample_weight_to_host(sample_weight, n_samples)
        y_enc, criterion, factor = self._encode_target(y_host, np.ones(n_samples))
        kept = np.flatnonzero(sw > 0)
        if kept.shape[0] < n_samples:  # a row of weight 0 is a row that is not there
            Xd = take_rows(xp, Xd, kept)
            y_enc, factor = y_enc[kept], factor[kept]
        kernels = get_kernels(xp, n_jobs=self.n_jobs)
        bin_mapper = fit_bin_mapper(xp, Xd, is_cat, self.max_bins, kernels)
        names = ("n_features_in_", "feature_names_in_", "classes_", "n_classes_", "_y_ndim")
        codes = bin_mapper.transform(xp, Xd, kernels)
        return Bunch(
            xp=xp,
            codes=codes,
            # (no copy for a sparse X: its fit's memory is the CSR's and the codes')
            codes_by_feature=kernels.feature_major(xp, codes, copy=not is_sparse(Xd)),
            X_predict=bin_mapper.encode_for_predict(xp, Xd),
            y_dev=_backend.from_numpy(xp, y_enc),
            sample_weight=sw[kept],
            class_factor=_backend.from_numpy(xp, factor),
            n_input=n_samples,
            bin_mapper=bin_mapper,
            criterion=criterion,
            categories=categories,
            is_categorical=is_cat,
            attrs={a: getattr(self, a) for a in names if hasattr(self, a)},
        )

    def _fit_binned(self, data, w, multiplicity=None):
        """Grow this tree on ``data`` of :meth:`_bin_once` with device weights.

        Parameters
        ----------
        data : Bunch
            From :meth:`_bin_once` (of this estimator or a clone of it).
        w : array of shape (n,), float64, in ``data.xp``
            Weight of every row (times ``class_weight``'s factor here).
        multiplicity : array of shape (n,), float64, in ``data.xp``, or None
            How many times each row enters (bootstrap counts, counted in
            ``n_node_samples`` as repeated rows; 0 = out); the weighted
            channels are multiplied by it too. None: every row once.

        Returns
        -------
        self
        """
        xp = data.xp
        for name, value in data.attrs.items():
            setattr(self, name, value)
        n_samples, n_features = data.codes.shape
        w = w * data.class_factor
        mult, n_rows = None, n_samples
        if multiplicity is not None:
            mult = xp.reshape(multiplicity, (1, n_samples))
            n_rows = int(round(float(xp.sum(multiplicity))))  # fractional min_samples_* count repeats
        total = float(xp.sum(w if mult is None else w * multiplicity))
        params = self._grower_params(n_rows, n_features, total)
        inputs = GrowerInputs(
            codes=data.codes,
            channels=data.criterion.row_channels(xp, data.y_dev, w),
            multiplicity=mult,
            bin_mapper=data.bin_mapper,
            criterion=data.criterion,
            kernels=get_kernels(xp, n_jobs=self.n_jobs),
            rng=_backend.host_rng(self.random_state),
            codes_by_feature=data.codes_by_feature,
        )
        batch = grow(xp, inputs, params)
        if self.ccp_alpha > 0.0:
            batch = prune_ccp(xp, batch, data.criterion, self.ccp_alpha)
        self._install(
            xp, batch, data.bin_mapper, data.criterion, data.categories, data.is_categorical, params.max_features
        )
        return self

    def _set_batch(self, xp, batch):
        """Install a fitted (or pruned) one-tree batch: ``tree_`` and node values."""
        self._batch = batch
        self._values = self._criterion.value(xp, batch.stats)  # (1, nodes, n_outputs, k)
        self.n_outputs_ = int(self._values.shape[2])
        self.tree_ = Tree(batch, self._criterion, xp, self._bin_mapper, self._categories)

    def _holdout(self, y_enc, rng):
        """Training and validation row indices for ``pruning="reduced_error"`` (host int64).

        ``validation_fraction`` of the rows, drawn with ``random_state``;
        stratified by class for classifiers when every class has two rows.
        """
        seed = int(rng.integers(0, 2**31 - 1))
        return holdout_split(
            y_enc.shape[0], self.validation_fraction, y_enc if self._is_classifier else None, seed
        )

    # -- pruning -----------------------------------------------------------------
    @chooses_kernels
    def cost_complexity_pruning_path(self, X, y, sample_weight=None):
        """Compute the pruning path of minimal cost-complexity pruning (as scikit-learn).

        Grows the tree of these parameters with ``ccp_alpha=0`` (on the
        training part of the rows when ``pruning="reduced_error"`` holds some
        out, without pruning it) and runs the weakest-link loop on it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        ccp_path : Bunch
            ``ccp_alphas`` : ndarray of shape (n_steps,), float64, the
            effective alphas of the successive weakest links (0 first, for the
            full tree; increasing); ``impurities`` : ndarray of shape
            (n_steps,), float64, the sum over the leaves of the pruned tree of
            ``weighted_n_node_samples * impurity / weighted_n_node_samples[0]``
            for each alpha. Fitting with ``ccp_alpha=ccp_alphas[i]`` gives the
            tree of ``impurities[i]``.
        """
        est = clone(self).set_params(ccp_alpha=0.0)
        est._fit(X, y, sample_weight, apply_pruning=False)
        xp = _backend.namespace_of(est._batch.left)
        alphas, impurities = ccp_path(xp, est._batch, est._criterion)[0]
        return Bunch(ccp_alphas=alphas, impurities=impurities)

    @chooses_kernels
    def prune(self, X_val, y_val, sample_weight=None):
        """Reduced-error pruning with a validation set (the course notes' method).

        Every internal node is scored at once: the validation error of its
        subtree minus the error if it were a leaf predicting its training
        majority class (classifier) or mean (regressor). The node of largest
        reduction becomes a leaf, and so on until no single prune reduces the
        error. Ties go to the lowest node index of ``tree_`` (of two nested
        nodes, the ancestor). See :func:`gputrees._pruning.prune_reduced_error`.

        Parameters
        ----------
        X_val : array-like of shape (n_val, n_features)
            Validation rows (any input ``predict`` accepts).
        y_val : array-like of shape (n_val,) or (n_val, n_outputs)
            Their targets. Class labels the tree never saw count as errors.
        sample_weight : array-like of shape (n_val,), optional
            Weights of the validation rows (error = weighted number of
            misclassified rows, or weighted sum of squared errors averaged
            over outputs).

        Returns
        -------
        self
            With ``tree_`` pruned, ``pruned_nodes_`` (int64, the nodes made
            leaves, in pruning order, numbered as in ``tree_`` before this
            call) and ``validation_errors_`` (float64, the validation error
            before pruning and after each step, decreasing).
        """
        check_is_fitted(self, "_batch")
        xp, Xd, _, _ = self._prepare_X(X_val, fit=False)
        n = int(Xd.shape[0])
        y_host = y_to_host(y_val, n, multi_output=not self._is_classifier)
        sw = sample_weight_to_host(sample_weight, n)
        self._prune_reduced_error(xp, Xd, self._encode_validation_target(y_host), sw)
        return self

    def _encode_validation_target(self, y):
        """Validation targets as the codes / floats the pruning compares with node values."""
        if self._is_classifier:
            classes = self.classes_
            try:
                pos = np.clip(np.searchsorted(classes, y), 0, classes.shape[0] - 1)
                known = classes[pos] == y
            except TypeError as exc:
                raise ValueError(
                    f"y_val labels of dtype {y.dtype} cannot be compared with classes_ of dtype {classes.dtype}"
                ) from exc
            return np.where(known, pos, -1).astype(np.int64)
        if y.dtype.kind not in "biuf":
            raise ValueError(f"y must be numeric for regression, got dtype {y.dtype}")
        y2 = y.astype(np.float64)
        y2 = y2[:, None] if y2.ndim == 1 else y2
        if y2.shape[1] != self.n_outputs_:
            raise ValueError(f"y_val has {y2.shape[1]} outputs, the tree has {self.n_outputs_}")
        return np.ascontiguousarray(y2)

    def _prune_reduced_error(self, xp, Xd, y_enc, sw):
        """Reduced-error pruning of the fitted tree with validation rows (device X, host y and weights)."""
        Xp = self._bin_mapper.encode_for_predict(xp, Xd)
        leaves = apply_trees(xp, self._batch, Xp, self._bin_mapper.missing_bin, n_jobs=self.n_jobs)
        batch, pruned, errors = prune_reduced_error(
            xp,
            self._batch,
            self._values,
            leaves,
            _backend.from_numpy(xp, y_enc),
            _backend.from_numpy(xp, np.asarray(sw, dtype=np.float64)),
            self._is_classifier,
            get_kernels(xp, n_jobs=self.n_jobs),
        )
        self._set_batch(xp, batch)
        self.pruned_nodes_ = pruned[0]
        self.validation_errors_ = errors[0]

    # -- predict ----------------------------------------------------------------
    def _leaves(self, X):
        xp, Xd, _, _ = self._checked_X(X)
        Xp = self._bin_mapper.encode_for_predict(xp, Xd)
        return xp, apply_trees(xp, self._batch, Xp, self._bin_mapper.missing_bin, n_jobs=self.n_jobs)

    def _shap_model(self, X):
        """``(xp, rows encoded for prediction, ShapModel)``: the tree and its ``predict`` / ``predict_proba`` output."""
        xp, Xd, _, _ = self._checked_X(X)
        values = self._values  # (1, nodes, n_outputs, k): outputs of a regressor, classes of a classifier
        n_nodes = int(values.shape[1])
        model = ShapModel(
            batch=self._batch, values=xp.reshape(values, (1, n_nodes, -1)),
            cover=self._criterion.weight(xp, self._batch.stats), base=None,
            missing_bin=self._bin_mapper.missing_bin, one_output=not self._is_classifier and self._y_ndim == 1,
        )
        return xp, self._bin_mapper.encode_for_predict(xp, Xd), model

    def _checked_X(self, X):
        """``predict``'s checks of ``X`` on a fitted tree: ``(xp, Xd, is_cat, categories)``."""
        check_is_fitted(self, "_batch")
        return self._prepare_X(X, fit=False)

    def _node_values(self, X):
        xp, leaves = self._leaves(X)
        return xp, gather_node_values(xp, self._values, leaves)[:, 0, ...]  # (n, n_outputs, k)

    def apply(self, X):
        """Index of the leaf (node of ``tree_``) each sample ends in, shape (n_samples,).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        _, leaves = self._leaves(X)
        return _backend.output_like(X, leaves[:, 0])

    def decision_path(self, X):
        """Sparse indicator (n_samples, node_count) of the nodes each sample goes through.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        leaves = _backend.to_numpy(self._leaves(X)[1][:, 0])
        parent = np.full(self.tree_.node_count, -1, dtype=np.int64)
        internal = np.flatnonzero(self.tree_.children_left >= 0)
        parent[self.tree_.children_left[internal]] = internal
        parent[self.tree_.children_right[internal]] = internal
        # walk up from each leaf: at most max_depth steps, vectorised over samples
        rows, cols = [], []
        node = leaves.copy()
        idx = np.arange(leaves.shape[0])
        while idx.size:
            rows.append(idx)
            cols.append(node)
            up = parent[node]
            keep = up >= 0
            idx, node = idx[keep], up[keep]
        rows = np.concatenate(rows)
        cols = np.concatenate(cols)
        data = np.ones(rows.shape[0], dtype=np.int64)
        return sp.csr_matrix((data, (rows, cols)), shape=(leaves.shape[0], self.tree_.node_count))

    def get_depth(self) -> int:
        """Depth of the fitted tree (the root alone: 0).

        Returns
        -------
        int
        """
        check_is_fitted(self, "_batch")
        return self.tree_.max_depth

    def get_n_leaves(self) -> int:
        """Number of leaves of the fitted tree.

        Returns
        -------
        int
        """
        check_is_fitted(self, "_batch")
        return self.tree_.n_leaves

    @property
    def feature_importances_(self):
        """Normalised total impurity decrease of each feature, shape (n_features,)."""
        check_is_fitted(self, "_batch")
        return self.tree_.compute_feature_importances(self.n_features_in_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True  # scipy.sparse X, see gputrees._sparse
        return tags


_COMMON_DOC = """
    max_depth : int or None, default=None
        Maximum depth; None grows until leaves are pure or hold fewer than
        ``min_samples_split`` samples.
    min_samples_split : int or float, default=2
        Minimum number of samples to split a node (a float is a fraction of n_samples).
    min_samples_leaf : int or float, default=1
        Minimum number of samples in each child of a split.
    min_weight_fraction_leaf : float, default=0.0
        Minimum fraction of the total sample weight in each child.
    max_features : int, float, {"sqrt", "log2"} or None, default=None
        Number of features drawn at random (without replacement, per node) to
        search a split among; None uses all features.
    random_state : int, RandomState instance or None, default=None
        Seed of the ``max_features`` draws.
    max_leaf_nodes : int or None, default=None
        Grow best-first (the split of largest weighted impurity decrease next,
        as scikit-learn) up to this many leaves.
    min_impurity_decrease : float, default=0.0
        A node is split only if the weighted impurity decrease is at least this.
    max_bins : int, default=255
        Largest number of value bins per feature (2 .. 65535). Features with at
        most ``max_bins`` distinct values are split exactly, at midpoints.
        Missing values have a bin of their own on top. Codes are uint8 up to
        255 value bins, uint16 above (256 included: with the missing bin that
        makes 257 codes), which doubles the binned matrix's memory and slows
        the histograms.
    categorical_features : array-like of int, str or bool, or None, default=None
        Columns split as categories (indices, DataFrame column names, or a
        boolean mask). pandas ``category`` columns are always categorical.
        String columns must be declared here (or be ``category``).
    device : {None, "cpu", "cuda"}, default=None
        None follows the input (CuPy arrays train on the GPU); "cpu" uses
        NumPy; "cuda" moves the data to the GPU with CuPy.
    memory_limit : int, default=1 GiB
        Bound, in bytes, on the histogram memory of one level; levels with more
        nodes are processed in chunks (see ``gputrees._grower``).
    n_jobs : int or None, default=None
        Threads of the compiled CPU kernels (Numba): None or -1 = every core
        (as XGBoost, LightGBM and HistGradientBoosting), -2 = all but one,
        k > 0 = k. The fitted model does not depend on it. Ignored on the GPU
        and by the NumPy fallback kernels (``GPUTREES_KERNELS``).
    ccp_alpha : float, default=0.0
        Complexity parameter of minimal cost-complexity pruning, applied after
        growth as in scikit-learn: the pruned tree is the smallest subtree
        minimising ``sum_leaves w_t * impurity_t / W + ccp_alpha * n_leaves``
        (``W`` the total sample weight). 0 prunes nothing. See
        :meth:`cost_complexity_pruning_path`.
    pruning : {None, "reduced_error"}, default=None
        ``"reduced_error"`` holds ``validation_fraction`` of the rows out of the
        growth and prunes the grown tree with them (see :meth:`prune`), after
        ``ccp_alpha``.
    validation_fraction : float, default=0.3
        Fraction of the rows held out for ``pruning="reduced_error"`` (the
        course notes hold out about a third), drawn with ``random_state``;
        stratified by class for classifiers. Unused otherwise.
"""


class DecisionTreeClassifier(ClassifierMixin, _BaseTree):
    __doc__ = (
        """A classification tree grown level by level from binned histograms.

    Parameters
    ----------
    criterion : {"gini", "entropy", "log_loss", "misclassification"}, default="gini"
        Impurity: Gini index, Shannon entropy in bits ("log_loss" is a synonym),
        or classification error ``1 - max_k p_k``.
    """
        + _COMMON_DOC
        + """    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, multiplied into the sample weights.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_classes_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when X was a DataFrame with string column names.
    feature_importances_ : ndarray of shape (n_features_in_,)
    tree_ : Tree
        NumPy arrays of the fitted tree (``children_left``, ``threshold``, ...).
    max_features_ : int
    categories_ : list
        Per feature: the category labels (categorical features) or None.
    pruned_nodes_ : ndarray of shape (n_pruned,), int64
        After reduced-error pruning (:meth:`prune` or ``pruning``): the nodes
        made leaves, in pruning order, numbered as in ``tree_`` before pruning.
    validation_errors_ : ndarray of shape (n_pruned + 1,), float64
        After reduced-error pruning: the validation error (weighted number of
        misclassified rows) before pruning and after each prune.
    """
    )

    _parameter_constraints = {
        **_BaseTree._parameter_constraints,
        "criterion": [StrOptions(set(CLASSIFICATION_CRITERIA))],
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }
    _is_classifier = True

    def __init__(
        self,
        *,
        criterion="gini",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=None,
        random_state=None,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        class_weight=None,
        max_bins=255,
        categorical_features=None,
        device=None,
        memory_limit=DEFAULT_MEMORY_LIMIT,
        n_jobs=None,
        ccp_alpha=0.0,
        pruning=None,
        validation_fraction=0.3,
    ):
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.random_state = random_state
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.class_weight = class_weight
        self.max_bins = max_bins
        self.categorical_features = categorical_features
        self.device = device
        self.memory_limit = memory_limit
        self.n_jobs = n_jobs
        self.ccp_alpha = ccp_alpha
        self.pruning = pruning
        self.validation_fraction = validation_fraction

    def _encode_target(self, y, sw):
        check_class_labels(y)
        classes, y_enc = encode_classes(y)
        self.classes_ = classes
        self.n_classes_ = int(classes.shape[0])
        if self.class_weight is not None:
            sw = sw * compute_sample_weight(self.class_weight, y)
            if not np.any(sw > 0):
                raise ValueError("sample_weight times class_weight is zero for every sample")
        crit = CLASSIFICATION_CRITERIA[self.criterion](n_outputs=1, n_classes=self.n_classes_)
        return y_enc.astype(np.int64), crit, sw

    @transactional_fit
    @chooses_kernels
    def fit(self, X, y, sample_weight=None):
        """Grow the tree.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array; NaN marks missing values.
        y : array-like of shape (n_samples,)
            Class labels (any type np.unique can sort).
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        self
        """
        return self._fit(X, y, sample_weight)

    def predict_proba(self, X):
        """Class probabilities, shape (n_samples, n_classes), float64.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        xp, v = self._node_values(X)
        return _backend.output_like(X, v[:, 0, :])

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba` (``-inf`` for probability 0).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        return _backend.log_like(self.predict_proba(X))

    def predict(self, X):
        """Most probable class of each sample, shape (n_samples,).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        xp, v = self._node_values(X)
        return _backend.labels_like(X, self.classes_, xp.argmax(v[:, 0, :], axis=1))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = False
        return tags


class DecisionTreeRegressor(RegressorMixin, _BaseTree):
    __doc__ = (
        """A regression tree grown level by level from binned histograms.

    Parameters
    ----------
    criterion : {"squared_error", "friedman_mse", "poisson"}, default="squared_error"
        Squared error (leaf means), Friedman's improvement score, or half
        Poisson deviance (needs y >= 0 with a positive sum).
    """
        + _COMMON_DOC
        + """
    Attributes
    ----------
    n_outputs_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
    feature_importances_ : ndarray of shape (n_features_in_,)
    tree_ : Tree
    max_features_ : int
    categories_ : list
    pruned_nodes_ : ndarray of shape (n_pruned,), int64
        After reduced-error pruning (:meth:`prune` or ``pruning``): the nodes
        made leaves, in pruning order, numbered as in ``tree_`` before pruning.
    validation_errors_ : ndarray of shape (n_pruned + 1,), float64
        After reduced-error pruning: the validation error (weighted sum of
        squared errors, averaged over outputs) before pruning and after each
        prune.
    """
    )

    _parameter_constraints = {
        **_BaseTree._parameter_constraints,
        "criterion": [StrOptions(set(REGRESSION_CRITERIA))],
    }

    def __init__(
        self,
        *,
        criterion="squared_error",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=None,
        random_state=None,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        max_bins=255,
        categorical_features=None,
        device=None,
        memory_limit=DEFAULT_MEMORY_LIMIT,
        n_jobs=None,
        ccp_alpha=0.0,
        pruning=None,
        validation_fraction=0.3,
    ):
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.random_state = random_state
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.max_bins = max_bins
        self.categorical_features = categorical_features
        self.device = device
        self.memory_limit = memory_limit
        self.n_jobs = n_jobs
        self.ccp_alpha = ccp_alpha
        self.pruning = pruning
        self.validation_fraction = validation_fraction

    def _encode_target(self, y, sw):
        y = regression_target(y)
        check_target_scale(y, sw)
        y2 = y[:, None] if y.ndim == 1 else y
        self._y_ndim = y.ndim
        if self.criterion == "poisson":
            if np.any(y2 < 0):
                raise ValueError("Some value(s) of y are negative which is not allowed for Poisson regression.")
            if np.any(y2.sum(axis=0) <= 0):
                raise ValueError("Sum of y is not positive which is necessary for Poisson regression.")
        crit = REGRESSION_CRITERIA[self.criterion](n_outputs=y2.shape[1], n_classes=1)
        return np.ascontiguousarray(y2), crit, sw

    @transactional_fit
    @chooses_kernels
    def fit(self, X, y, sample_weight=None):
        """Grow the tree.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        self
        """
        return self._fit(X, y, sample_weight)

    def predict(self, X):
        """Predicted values, shape (n_samples,) or (n_samples, n_outputs).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array.
        """
        xp, v = self._node_values(X)
        out = v[:, :, 0]
        if self._y_ndim == 1:
            out = out[:, 0]
        return _backend.output_like(X, out)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags
