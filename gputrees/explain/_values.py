"""``shap_values`` of every estimator: the estimator's trees as TreeSHAP reads them, and the kernel call."""

from __future__ import annotations

from dataclasses import dataclass

from .. import _backend, _sparse

__all__ = ["ShapModel", "ShapMixin"]


@dataclass(frozen=True)
class ShapModel:
    """An estimator's trees as TreeSHAP reads them (device arrays).

    Attributes
    ----------
    batch : TreeBatch or None
        Every tree of the model in one padded batch (None: no tree, the
        model predicts its base alone).
    values : array of shape (n_trees, n_nodes, K), float64
        What each leaf adds to each of the K explained outputs.
    cover : array of shape (n_trees, n_nodes), float64
        Each node's training weight (the path-dependent distribution).
    base : array of shape (K,), float64, or None
        Added to every prediction besides the trees (boosting's baseline).
    missing_bin : int
    one_output : bool
        The explained output is 1-D (n_samples,): values come as (n, F + 1).
    """

    batch: object
    values: object
    cover: object
    base: object
    missing_bin: int
    one_output: bool


class ShapMixin:
    """Adds :meth:`shap_values` to an estimator that defines ``_shap_model(X) -> (xp, Xp, ShapModel)``."""

    def shap_values(self, X, interactions=False):
        """Exact SHAP values (path-dependent TreeSHAP) of every sample, the bias last.

        The explained output, per estimator (its space):

        * ``DecisionTreeClassifier``, ``RandomForestClassifier``,
          ``ExtraTreesClassifier``: ``predict_proba`` (probabilities, one
          output per class; forests the mean over trees), as shap's
          TreeExplainer explains scikit-learn's;
        * ``DecisionTreeRegressor`` and the forest regressors: ``predict``;
        * ``GradientBoostingClassifier``: the raw score, ``decision_function``
          (log-odds for two classes, one output per class otherwise);
        * ``GradientBoostingRegressor``: the raw score (``predict`` before the
          inverse link of ``poisson`` / ``gamma``: log of the mean);
        * ``AdaBoostClassifier``: ``decision_function`` (the normalised
          weighted vote; its learners must be gputrees trees).

        Each row's values sum (over the feature axis) to that output: the
        bias (last column) is the output's expected value under the training
        weights of the trees' nodes (the node covers), boosting's baseline
        included. Covers are the weighted sample counts of each node
        (``tree_.weighted_n_node_samples``; forests: of each tree's bootstrap
        sample; AdaBoost: of the round's weighted rows), and for gradient
        boosting the hessian sums, as XGBoost's. ``AdaBoostRegressor``
        predicts the weighted median of its trees, which is not a sum of
        trees: it has no exact TreeSHAP values (TypeError; explain one of
        its ``estimators_``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            NumPy, pandas, CuPy or any array-API array, or a scipy.sparse
            matrix (read in dense blocks of rows), checked as ``predict``
            checks it (feature count and names, no infinity).
        interactions : bool, default=False
            SHAP interaction values instead, as XGBoost's ``pred_interactions``:
            ``[i, j]`` half the interaction of features ``i`` and ``j`` off the
            diagonal, each feature's main effect on it, the bias at ``[F, F]``;
            summing over the last feature axis gives the SHAP values.

        Returns
        -------
        values : array of shape (n_samples, n_features + 1) for a 1-D output,
            else (n_samples, n_features + 1, n_outputs); with ``interactions``
            (n_samples, n_features + 1, n_features + 1[, n_outputs]). float64,
            in the namespace of ``X`` (NumPy for NumPy/pandas input).
        """
        xp, Xp, model = self._shap_model(X)
        n, n_features = int(Xp.shape[0]), int(Xp.shape[1])
        k = int(model.values.shape[-1]) if model.batch is not None else int(model.base.shape[0])
        f1 = n_features + 1
        shape = (n, f1, f1, k) if interactions else (n, f1, k)
        if model.batch is None:
            phi = xp.zeros(shape, dtype=xp.float64)
        else:
            from ..kernels import get_kernels

            kernels = get_kernels(xp, n_jobs=getattr(self, "n_jobs", None))

            def explain(rows):
                return kernels.tree_shap(xp, model.batch, model.values, model.cover, rows, model.missing_bin,
                                         interactions=interactions)

            if _sparse.is_sparse(Xp):  # the values are dense whatever X is: its rows in dense blocks
                phi = xp.concat([explain(block) for _, _, block in _sparse.dense_blocks(Xp.tocsr())], axis=0)
            else:
                phi = explain(Xp)
        if model.base is not None:
            # the baseline goes to the bias entry: [F] (values) or [F, F] (interactions)
            e = xp.astype(xp.arange(f1) == n_features, xp.float64)
            at_bias = (e[:, None] * e[None, :])[None, :, :, None] if interactions else e[None, :, None]
            phi = phi + at_bias * xp.asarray(model.base, dtype=xp.float64)
        if model.one_output:
            phi = phi[..., 0]
        return _backend.output_like(X, phi)
