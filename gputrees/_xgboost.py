"""Export of gradient boosting models to XGBoost's JSON model format.

``est.export_xgboost_json(path)`` writes a file that ``xgboost.Booster(model_file=path)``
(and every tool reading XGBoost models: Treelite / FIL, SHAP, ...) loads and
predicts with, to float32 precision (XGBoost stores thresholds and leaf values
as float32 and reads features as float32).

Mapping
-------
* a split of ours sends ``x <= t`` (float64) left; XGBoost sends ``x < c``
  left, comparing float32 values. ``c`` is the float32 just above the largest
  float32 ``<= t``, so both send every float32 value the same way;
* missing values follow ``missing_left`` (XGBoost's ``default_left``);
* our raw baseline becomes ``base_score`` in XGBoost's output space
  (probability for ``binary:logistic``, mean for the log-link objectives);
  each tree's leaves carry its values, learning rate included;
* round ``r``'s tree of class ``k`` is tree ``r * K + k`` with ``tree_info`` k.

Categorical splits are not exported (a clear error): XGBoost's categorical
format also needs its own category encoding of the data.
"""

from __future__ import annotations

import json

import numpy as np

from . import _backend
from ._model_io import write_atomic

__all__ = ["XGBoostExportMixin", "export_xgboost_json"]

#: XGBoost's value of ``parents`` at the root (its ``kInvalidNodeId`` as unsigned).
XGB_ROOT_PARENT = 2147483647
#: Version written in the file: the JSON schema of XGBoost 2.1 to 3.x.
XGB_JSON_VERSION = [2, 1, 0]


class XGBoostExportMixin:
    """Adds :meth:`export_xgboost_json` to gradient boosting estimators."""

    def export_xgboost_json(self, path):
        """Write the fitted model in XGBoost's JSON model format.

        Load it with ``xgboost.Booster(model_file=path)``; its predictions
        (``output_margin=True`` for the raw scores) equal this model's to
        float32 precision. Objectives: ``log_loss`` -> ``binary:logistic`` or
        ``multi:softprob``; ``squared_error`` -> ``reg:squarederror``;
        ``absolute_error`` -> ``reg:absoluteerror``; ``quantile`` ->
        ``reg:quantileerror`` (``quantile_alpha=alpha``); ``poisson`` ->
        ``count:poisson``; ``gamma`` -> ``reg:gamma``. ``huber`` has no XGBoost
        counterpart and models with categorical features are refused
        (ValueError).

        Parameters
        ----------
        path : str or os.PathLike
            Destination ``.json`` file (written atomically).

        Returns
        -------
        self
        """
        export_xgboost_json(self, path)
        return self


def _float32_below(t: np.ndarray) -> np.ndarray:
    """Largest float32 ``<= t`` for every float64 ``t`` (shape kept)."""
    f = t.astype(np.float32)
    over = f.astype(np.float64) > t
    return np.where(over, np.nextafter(f, np.float32(-np.inf)), f)


def split_conditions(threshold: np.ndarray) -> np.ndarray:
    """XGBoost ``split_conditions`` (``x < c``) equal to ``x <= threshold`` on float32 ``x``.

    Parameters
    ----------
    threshold : ndarray of shape (n,), float64

    Returns
    -------
    ndarray of shape (n,), float32
        ``+inf`` thresholds ("all values left") become the largest float32.
    """
    c = np.nextafter(_float32_below(threshold), np.float32(np.inf))
    return np.where(np.isinf(c), np.finfo(np.float32).max, c).astype(np.float32)


def _objective(est):
    """XGBoost objective JSON and ``base_score`` values (host float64) of ``est``."""
    base = _backend.to_numpy(est._baseline).astype(np.float64)
    if est._is_classifier:
        if est.n_classes_ == 2:
            return {"name": "binary:logistic", "reg_loss_param": {"scale_pos_weight": "1"}}, 1 / (1 + np.exp(-base))
        k = str(est.n_classes_)
        return {"name": "multi:softprob", "softmax_multiclass_param": {"num_class": k}}, base
    loss = est.loss
    if loss == "squared_error":
        return {"name": "reg:squarederror", "reg_loss_param": {"scale_pos_weight": "1"}}, base
    if loss == "absolute_error":
        return {"name": "reg:absoluteerror"}, base
    if loss == "quantile":
        return {"name": "reg:quantileerror", "quantile_loss_param": {"quantile_alpha": f"[{est.alpha!r}]"}}, base
    if loss == "poisson":
        return {"name": "count:poisson", "poisson_regression_param": {"max_delta_step": "0.7"}}, np.exp(base)
    if loss == "gamma":
        return {"name": "reg:gamma"}, np.exp(base)
    raise ValueError(f"loss={loss!r} has no XGBoost objective to export to (exportable: log_loss, squared_error, "
                     "absolute_error, quantile, poisson, gamma)")


def _tree_json(tree_id, batch, values, t, n_features):
    """One XGBoost tree from tree ``t`` of a host TreeBatch, nodes renumbered breadth-first from the root."""
    left, right, feature = batch["left"][t], batch["right"][t], batch["feature"][t]
    order, new_id = [0], {0: 0}
    i = 0
    while i < len(order):  # breadth-first walk: reachable nodes only
        node = order[i]
        if feature[node] >= 0:
            for child in (int(left[node]), int(right[node])):
                new_id[child] = len(order)
                order.append(child)
        i += 1
    idx = np.asarray(order, dtype=np.int64)
    internal = feature[idx] >= 0
    parents = np.full(idx.shape[0], XGB_ROOT_PARENT, dtype=np.int64)
    lc = np.full(idx.shape[0], -1, dtype=np.int64)
    rc = np.full(idx.shape[0], -1, dtype=np.int64)
    for pos in np.flatnonzero(internal):
        node = order[pos]
        lc[pos], rc[pos] = new_id[int(left[node])], new_id[int(right[node])]
        parents[lc[pos]] = parents[rc[pos]] = pos
    leaf_value = values[t][idx].astype(np.float32)
    cond = np.where(internal, split_conditions(batch["threshold"][t][idx]), leaf_value)
    stats = batch["stats"][t][idx]
    return {
        "base_weights": leaf_value.tolist(),
        "categories": [],
        "categories_nodes": [],
        "categories_segments": [],
        "categories_sizes": [],
        "default_left": batch["missing_left"][t][idx].astype(int).tolist(),
        "id": tree_id,
        "left_children": lc.tolist(),
        "loss_changes": [0.0] * idx.shape[0],
        "parents": parents.tolist(),
        "right_children": rc.tolist(),
        "split_conditions": cond.astype(np.float32).tolist(),
        "split_indices": np.where(internal, feature[idx], 0).tolist(),
        "split_type": [0] * idx.shape[0],
        "sum_hessian": stats[:, -1].tolist(),
        "tree_param": {
            "num_deleted": "0",
            "num_feature": str(n_features),
            "num_nodes": str(idx.shape[0]),
            "size_leaf_vector": "1",
        },
    }


def _fmt(values) -> str:
    return "[" + ",".join(repr(float(v)) for v in np.asarray(values, dtype=np.float32)) + "]"


def xgboost_model_dict(est) -> dict:
    """The XGBoost JSON model (a dict) of a fitted gradient boosting estimator."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(est, "_rounds")
    if np.any(est.is_categorical_):
        names = np.flatnonzero(est.is_categorical_).tolist()
        raise ValueError(f"categorical features {names} cannot be exported to XGBoost JSON (numerical splits only)")
    objective, base_score = _objective(est)
    n_features = int(est.n_features_in_)
    k = int(est.n_trees_per_iteration_)
    trees, info = [], []
    for r, rnd in enumerate(est._rounds):
        batch = {
            name: _backend.to_numpy(getattr(rnd.batch, name))
            for name in ("left", "right", "feature", "threshold", "missing_left", "stats")
        }
        values = _backend.to_numpy(rnd.values).astype(np.float64)
        for c in range(k):
            trees.append(_tree_json(len(trees), batch, values, c, n_features))
            info.append(c)
    names = getattr(est, "feature_names_in_", None)
    return {
        "learner": {
            "attributes": {},
            "feature_names": [] if names is None else [str(n) for n in names],
            "feature_types": [] if names is None else ["float"] * n_features,
            "gradient_booster": {
                "model": {
                    "gbtree_model_param": {"num_parallel_tree": "1", "num_trees": str(len(trees))},
                    "iteration_indptr": list(range(0, len(trees) + 1, k)),
                    "tree_info": info,
                    "trees": trees,
                },
                "name": "gbtree",
            },
            "learner_model_param": {
                "base_score": _fmt(base_score),
                "boost_from_average": "1",
                "num_class": str(est.n_classes_) if est._is_classifier and est.n_classes_ > 2 else "0",
                "num_feature": str(n_features),
                "num_target": "1",
            },
            "objective": objective,
        },
        "version": XGB_JSON_VERSION,
    }


def export_xgboost_json(est, path):
    """Write ``est`` (GradientBoostingClassifier / Regressor) as an XGBoost JSON model (atomic write)."""
    write_atomic(path, json.dumps(xgboost_model_dict(est), allow_nan=False).encode("utf-8"))
