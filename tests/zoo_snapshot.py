"""A fixed zoo of fitted models, reduced to their public outputs: the bit-identical snapshot.

:func:`snapshot_models` fits every entry of :data:`ZOO` (or of the smaller
:data:`SIM_ZOO`, for the cuda kernels in numba-cuda's simulator) on small,
fixed data and returns a flat dict ``"entry.output" -> ndarray`` of what the
public API shows of the models: ``predict``, ``predict_proba``,
``decision_function``, ``apply`` and the staged predictions on probe rows,
``feature_importances_`` and the other public fitted attributes, each tree's
public ``tree_`` arrays (single trees, every tree of forests and AdaBoost)
and, for gradient boosting, the documented arrays of the public ``trees_``
(each tree cut to its ``node_count``), ``tree_values_``, ``train_score_``,
``validation_score_``, ``n_iter_`` and ``best_iteration_``.

Only the public API is read (no private module or attribute), so a refactor
of the internals that changes no model leaves the dict equal bit for bit:
``tests/data/make_zoo_snapshot.py`` saves it per kernel set and
``tests/test_zoo_snapshot.py`` compares a refit with the saved files.

The kernel set is the one ``GPUTREES_KERNELS`` names when the fits run (it is
read at every fit and prediction); the cuda set needs ``NUMBA_ENABLE_CUDASIM=1``
set before numba is imported, hence a process of its own.

Entries (see :data:`ZOO`) cover the engine's distinct paths: single trees
grown depth-wise and best-first, every criterion, cost-complexity and
reduced-error pruning, class and sample weights, ``min_samples_leaf``,
``max_features`` draws, binned (``max_bins``) and exact thresholds,
categorical features and missing values (Titanic), multi-output regression;
forests and extra trees fully grown on a few thousand rows (the whole-subtree
kernels) and depth-limited, with ``max_samples``, ``balanced_subsample``,
OOB scores, several batches and ``warm_start``; AdaBoost (SAMME and R2, with
the binned and the generic learner paths); gradient boosting binary and
3-class, every regression loss, ``subsample``, ``min_samples_leaf=1`` (the
[G, H] channels) and the default, ``l2_regularization``, ``monotonic_cst``,
categorical features, missing values, best-first trees, feature draws,
quantised gradients, early stopping on an ``eval_set`` and on its own
validation split, ``max_bins=63`` and ``warm_start``.
"""

from __future__ import annotations

import functools
import json
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import gputrees

#: Public array attributes of ``tree_`` (gputrees._tree.Tree) stored per tree.
TREE_ARRAYS = (
    "children_left", "children_right", "feature", "threshold", "missing_go_to_left", "is_categorical",
    "value", "impurity", "n_node_samples", "weighted_n_node_samples",
)
TREE_SCALARS = ("node_count",)  # max_depth and n_leaves follow from the arrays
#: Documented arrays of a boosting model's public ``trees_`` (one padded batch), cut per tree.
BOOST_TREE_ARRAYS = ("left", "right", "feature", "threshold", "missing_left", "is_categorical", "cat_left", "stats")
#: Public fitted attributes stored when an estimator has them (and they are not None).
FITTED = (
    "classes_", "n_classes_", "max_features_",
    "feature_importances_", "oob_score_", "oob_decision_function_", "oob_prediction_",
    "pruned_nodes_", "validation_errors_", "estimator_weights_", "estimator_errors_",
    "n_iter_", "n_trees_per_iteration_", "best_iteration_", "train_score_", "validation_score_", "tree_values_",
)
PREDICTIONS = ("predict", "predict_proba", "decision_function", "apply")
STAGED = ("staged_predict", "staged_predict_proba", "staged_decision_function")
#: Probe rows for the staged predictions (every round of them is stored).
N_STAGED = 10
#: Titanic columns of the simulator's zoo (categories, missing values) -- three, see SIM_ZOO.
SIM_TITANIC = ["Sex", "Age", "Embarked"]


# -- data ------------------------------------------------------------------------
@functools.cache
def _numeric(seed: int, n: int, f: int = 6, nan: float = 0.0, noise: float = 0.4):
    """(X, signal): standard normal features, a share ``nan`` of them missing, and a noisy signal."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, f))
    X[:, f - 1] = np.round(X[:, f - 1] * 2)  # few distinct values: exact thresholds at midpoints
    if nan:
        X[rng.random(X.shape) < nan] = np.nan
    z = np.nan_to_num(X)
    last = -0.5 * z[:, 3] if f > 3 else 0.0
    signal = z[:, 0] + 0.8 * z[:, 1] * z[:, 2] + last + noise * rng.standard_normal(n)
    return X, signal


def _clf(seed, n, f=6, nan=0.0, classes=3, noise=0.4):
    X, s = _numeric(seed, n, f, nan, noise)
    cuts = [0.0] if classes == 2 else np.quantile(s, np.linspace(0, 1, classes + 1)[1:-1])
    return X, np.digitize(s, cuts).astype(np.int64)


def _reg(seed, n, f=6, nan=0.0, kind="plain", noise=0.4):
    X, s = _numeric(seed, n, f, nan, noise)
    if kind == "grid":  # values on a coarse grid: fully grown trees reach pure leaves early
        return X, np.round(s * 2) / 2
    if kind == "poisson":
        return X, np.random.default_rng(seed + 1).poisson(np.exp(0.5 * s)).astype(np.float64)
    if kind == "gamma":
        return X, np.exp(0.5 * s) * np.random.default_rng(seed + 1).gamma(2.0, 0.5, s.shape[0])
    if kind == "multi":
        return X, np.stack([s, np.nan_to_num(X[:, 4]) - s], axis=1)
    return X, s


@functools.lru_cache(maxsize=1)
def _titanic():
    from gputrees.datasets import load_titanic

    d = load_titanic(as_frame=True)
    return d.data, np.asarray(d.target).astype(np.int64)


@dataclass(frozen=True)
class Data:
    """Training rows, probe rows (what predictions are taken on), fit keywords."""

    X: object
    y: np.ndarray
    X_probe: object
    fit_kw: dict = field(default_factory=dict)


def _data(name: str) -> Data:
    return _DATA[name]()


def _split(X, y, n_train, n_probe, fit_kw=None):
    # copies: the cached arrays stay as made whatever a fit does with its input
    return Data(X[:n_train].copy(), y[:n_train].copy(), X[n_train : n_train + n_probe].copy(), fit_kw or {})


def _weights(n, seed=7):
    return np.random.default_rng(seed).integers(0, 4, n).astype(np.float64)  # zero weights included


def _titanic_data(target="survived"):
    X, survived = _titanic()
    if target == "fare":
        y = X["Fare"].to_numpy(dtype=np.float64)
        X = X.drop(columns="Fare")
    else:
        y = survived
    return Data(X.iloc[:700].copy(), y[:700].copy(), X.iloc[700:800].copy())


def _eval_set(task):
    X, y = _clf(3, 1000, nan=0.03, classes=2) if task == "clf" else _reg(3, 1000, nan=0.03)
    return Data(X[:700].copy(), y[:700].copy(), X[700:800].copy(), {"eval_set": [(X[800:].copy(), y[800:].copy())]})


_DATA: dict[str, Callable[[], Data]] = {
    "clf3": lambda: _split(*_clf(0, 700), 600, 100),
    "clf3_nan": lambda: _split(*_clf(1, 700, nan=0.05), 600, 100),
    "clf2_nan": lambda: _split(*_clf(2, 700, nan=0.05, classes=2), 600, 100),
    "clf3_nan_sw": lambda: _with_weights(_split(*_clf(1, 700, nan=0.05), 600, 100)),
    "reg": lambda: _split(*_reg(4, 700), 600, 100),
    "reg_nan": lambda: _split(*_reg(5, 700, nan=0.05), 600, 100),
    "reg_nan_sw": lambda: _with_weights(_split(*_reg(5, 700, nan=0.05), 600, 100)),
    "reg_poisson": lambda: _split(*_reg(6, 700, nan=0.05, kind="poisson"), 600, 100),
    "reg_multi": lambda: _split(*_reg(7, 700, kind="multi"), 600, 100),
    # fully grown forests: big_reg has more rows than 8 x 255 bins at the root (the subtree kernel takes the
    # nodes below that); little noise: smaller trees, a smaller snapshot
    "big_clf2": lambda: _split(*_clf(8, 1600, f=8, nan=0.03, classes=2, noise=0.1), 1500, 100),
    "big_reg": lambda: _split(*_reg(9, 2300, f=8, nan=0.03, kind="grid", noise=0.1), 2200, 100),
    "mid_clf3": lambda: _split(*_clf(15, 900, f=8, nan=0.03, noise=0.1), 800, 100),
    "mid_reg": lambda: _split(*_reg(16, 900, f=8, nan=0.03, kind="grid", noise=0.1), 800, 100),
    "boost_clf2": lambda: _split(*_clf(10, 800, nan=0.03, classes=2), 700, 100),
    "boost_clf3": lambda: _split(*_clf(11, 800, nan=0.03), 700, 100),
    "boost_reg": lambda: _split(*_reg(12, 800, nan=0.03), 700, 100),
    "boost_reg_sw": lambda: _with_weights(_split(*_reg(12, 800, nan=0.03), 700, 100)),
    "boost_reg_dense": lambda: _split(*_reg(13, 800), 700, 100),
    "boost_poisson": lambda: _split(*_reg(14, 800, nan=0.03, kind="poisson"), 700, 100),
    "boost_gamma": lambda: _split(*_reg(14, 800, nan=0.03, kind="gamma"), 700, 100),
    "titanic": _titanic_data,
    "titanic_fare": lambda: _titanic_data("fare"),
    "eval_clf": lambda: _eval_set("clf"),
    "eval_reg": lambda: _eval_set("reg"),
    # the simulator's: tens of rows, 3 features (see SIM_ZOO)
    "sim_clf3": lambda: _split(*_clf(20, 110, f=3, nan=0.08), 80, 30),
    "sim_clf2": lambda: _split(*_clf(21, 110, f=3, nan=0.08, classes=2), 80, 30),
    "sim_reg": lambda: _split(*_reg(22, 110, f=3, nan=0.08), 80, 30),
    "sim_titanic": lambda: Data(_titanic()[0][SIM_TITANIC].iloc[:90].copy(), _titanic()[1][:90].copy(),
                                _titanic()[0][SIM_TITANIC].iloc[90:120].copy()),
}


def _with_weights(d: Data) -> Data:
    return Data(d.X, d.y, d.X_probe, {**d.fit_kw, "sample_weight": _weights(len(d.y))})


# -- the zoo ---------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    """``make()`` an unfitted estimator; ``data`` a key of the data sets; ``refit``: ``warm_start`` params."""

    make: Callable
    data: str
    refit: dict | None = None


G = gputrees
DTC, DTR = G.DecisionTreeClassifier, G.DecisionTreeRegressor
RFC, RFR, ETC, ETR = G.RandomForestClassifier, G.RandomForestRegressor, G.ExtraTreesClassifier, G.ExtraTreesRegressor
GBC, GBR = G.GradientBoostingClassifier, G.GradientBoostingRegressor


def _e(make, data, refit=None):
    return Entry(make, data, refit)


ZOO: dict[str, Entry] = {
    # single trees: growth orders, criteria, pruning, weights, draws, categories and missing values
    "tree_clf_gini_full": _e(lambda: DTC(), "clf3_nan"),
    "tree_clf_entropy_depth5": _e(lambda: DTC(criterion="entropy", max_depth=5), "clf3"),
    "tree_clf_misclassification": _e(lambda: DTC(criterion="misclassification", max_depth=6), "clf3_nan"),
    "tree_clf_best_first": _e(lambda: DTC(max_leaf_nodes=17), "clf3_nan"),
    "tree_clf_ccp": _e(lambda: DTC(ccp_alpha=0.004), "clf3_nan"),
    "tree_clf_reduced_error": _e(lambda: DTC(pruning="reduced_error", random_state=0), "clf2_nan"),
    "tree_clf_balanced_leaf5": _e(lambda: DTC(class_weight="balanced", min_samples_leaf=5), "clf3_nan"),
    "tree_clf_sample_weight": _e(lambda: DTC(max_depth=8, min_samples_split=6), "clf3_nan_sw"),
    "tree_clf_max_features": _e(lambda: DTC(max_features="sqrt", random_state=3), "clf3_nan"),
    "tree_clf_bins15_min_impurity": _e(lambda: DTC(max_bins=15, min_impurity_decrease=0.002), "clf2_nan"),
    "tree_clf_titanic": _e(lambda: DTC(max_depth=6), "titanic"),
    "tree_clf_titanic_full": _e(lambda: DTC(criterion="entropy"), "titanic"),
    "tree_reg_full": _e(lambda: DTR(), "reg_nan"),
    "tree_reg_friedman_depth6": _e(lambda: DTR(criterion="friedman_mse", max_depth=6), "reg"),
    "tree_reg_poisson": _e(lambda: DTR(criterion="poisson", max_depth=7, min_samples_leaf=3), "reg_poisson"),
    "tree_reg_best_first": _e(lambda: DTR(max_leaf_nodes=25), "reg_nan"),
    "tree_reg_ccp": _e(lambda: DTR(ccp_alpha=0.01, min_weight_fraction_leaf=0.01), "reg_nan"),
    "tree_reg_sample_weight_leaf4": _e(lambda: DTR(min_samples_leaf=4), "reg_nan_sw"),
    "tree_reg_max_features": _e(lambda: DTR(max_features=0.5, max_depth=9, random_state=5), "reg_nan"),
    "tree_reg_multi_output": _e(lambda: DTR(max_depth=6), "reg_multi"),
    "tree_reg_titanic_fare": _e(lambda: DTR(max_depth=7, max_bins=63), "titanic_fare"),
    # forests and extra trees: fully grown on 800 to 2,200 rows (whole-subtree kernels), depth-limited, sampled.
    # With the numba set, 8 trees on one thread go whole from their roots to the subtree kernel; of the 2 trees
    # on 2,200 rows the root levels grow level-wise and the small nodes' subtrees in the kernel (n_jobs=1 pins
    # these paths: they depend on the thread count, the models do not)
    "rf_clf_full_whole_trees": _e(lambda: RFC(n_estimators=8, n_jobs=1, random_state=0), "big_clf2"),
    "rf_reg_full_subtrees": _e(lambda: RFR(n_estimators=2, max_features=0.5, n_jobs=1, random_state=1), "big_reg"),
    "et_clf_full": _e(lambda: ETC(n_estimators=2, random_state=2), "mid_clf3"),
    "et_reg_full": _e(lambda: ETR(n_estimators=2, random_state=3), "mid_reg"),
    "rf_clf_depth6_balanced_subsample_oob": _e(
        lambda: RFC(n_estimators=6, max_depth=6, class_weight="balanced_subsample", oob_score=True, random_state=4),
        "clf3_nan"),
    "rf_reg_max_samples_oob": _e(
        lambda: RFR(n_estimators=8, max_depth=6, max_samples=0.5, oob_score=True, random_state=5), "reg_nan"),
    "rf_clf_entropy_batches": _e(
        lambda: RFC(n_estimators=6, criterion="entropy", max_depth=7, batch_size=4, max_features_per_tree=4,
                    min_samples_leaf=2, random_state=6), "clf3_nan_sw"),
    "et_clf_bootstrap_oob_depth6": _e(
        lambda: ETC(n_estimators=6, max_depth=6, bootstrap=True, oob_score=True, class_weight="balanced",
                    random_state=7), "clf2_nan"),
    "et_reg_depth6_poisson": _e(lambda: ETR(n_estimators=5, max_depth=6, criterion="poisson", random_state=8),
                                "reg_poisson"),
    "rf_clf_titanic": _e(lambda: RFC(n_estimators=6, max_depth=8, random_state=9), "titanic"),
    "et_reg_titanic_fare": _e(lambda: ETR(n_estimators=5, max_depth=8, random_state=10), "titanic_fare"),
    "rf_reg_warm_start": _e(lambda: RFR(n_estimators=3, max_depth=5, warm_start=True, random_state=11), "reg_nan",
                            refit={"n_estimators": 5}),
    # AdaBoost: SAMME (2 and 3 classes), R2 losses; gputrees learners on data binned once, and the generic path
    "ada_clf2_stumps": _e(lambda: G.AdaBoostClassifier(n_estimators=12, random_state=0), "clf2_nan"),
    "ada_clf3_depth2": _e(lambda: G.AdaBoostClassifier(DTC(max_depth=2), n_estimators=8, learning_rate=0.5,
                                                       random_state=1), "clf3_nan_sw"),
    "ada_clf_titanic_generic_learner": _e(
        lambda: G.AdaBoostClassifier(DTC(max_depth=2, pruning="reduced_error", categorical_features=[1, 6],
                                         random_state=0), n_estimators=5,
                                     random_state=2), "titanic"),
    "ada_reg_linear": _e(lambda: G.AdaBoostRegressor(n_estimators=8, random_state=3), "reg_nan"),
    "ada_reg_square_features": _e(
        lambda: G.AdaBoostRegressor(DTR(max_depth=4, max_features=3), n_estimators=6, loss="square",
                                    random_state=4), "reg_nan"),
    "ada_reg_exponential": _e(lambda: G.AdaBoostRegressor(n_estimators=6, loss="exponential", random_state=5),
                              "reg"),
    # gradient boosting
    "gb_clf2_default": _e(lambda: GBC(n_estimators=15), "boost_clf2"),
    "gb_clf3_default": _e(lambda: GBC(n_estimators=10, max_depth=4), "boost_clf3"),
    "gb_clf2_subsample_l2_leaf1": _e(
        lambda: GBC(n_estimators=12, max_depth=4, subsample=0.7, l2_regularization=1.0, min_samples_leaf=1,
                    random_state=0),
        "boost_clf2"),
    "gb_clf3_subsample_balanced": _e(
        lambda: GBC(n_estimators=8, subsample=0.8, class_weight="balanced", max_depth=3, random_state=1),
        "boost_clf3"),
    "gb_clf2_monotonic_best_first": _e(
        lambda: GBC(n_estimators=12, max_depth=None, max_leaf_nodes=12, monotonic_cst=[1, 0, 0, -1, 0, 0]),
        "boost_clf2"),
    "gb_clf_titanic": _e(lambda: GBC(n_estimators=15, max_depth=4, learning_rate=0.2), "titanic"),
    "gb_clf2_early_stopping_eval_set": _e(
        lambda: GBC(n_estimators=300, learning_rate=0.5, early_stopping=True, n_iter_no_change=4, max_depth=4),
        "eval_clf"),
    "gb_reg_squared_error": _e(lambda: GBR(n_estimators=15), "boost_reg"),
    "gb_reg_absolute_error": _e(lambda: GBR(loss="absolute_error", n_estimators=12, max_depth=4), "boost_reg"),
    "gb_reg_huber": _e(lambda: GBR(loss="huber", alpha=0.8, n_estimators=12, max_depth=4), "boost_reg"),
    "gb_reg_quantile": _e(lambda: GBR(loss="quantile", alpha=0.3, n_estimators=12, max_depth=4), "boost_reg"),
    "gb_reg_poisson": _e(lambda: GBR(loss="poisson", n_estimators=12, max_depth=4), "boost_poisson"),
    "gb_reg_gamma": _e(lambda: GBR(loss="gamma", n_estimators=12, max_depth=4), "boost_gamma"),
    "gb_reg_leaf1_dense": _e(lambda: GBR(n_estimators=12, min_samples_leaf=1, max_depth=5), "boost_reg_dense"),
    "gb_reg_leaf1_missing": _e(lambda: GBR(n_estimators=12, min_samples_leaf=1, max_depth=5), "boost_reg"),
    "gb_reg_subsample_l2_sample_weight": _e(
        lambda: GBR(n_estimators=12, subsample=0.6, l2_regularization=2.0, min_split_gain=0.01, random_state=2),
        "boost_reg_sw"),
    "gb_reg_monotonic_bins63": _e(
        lambda: GBR(n_estimators=12, max_bins=63, monotonic_cst=[1, 1, 0, -1, 0, 0]), "boost_reg"),
    "gb_reg_feature_draws": _e(
        lambda: GBR(n_estimators=10, max_features=0.5, colsample_bytree=0.8, random_state=3), "boost_reg"),
    "gb_reg_quantised": _e(lambda: GBR(n_estimators=10, quantised_gradients=True, subsample=0.8, random_state=4),
                           "boost_reg"),
    "gb_reg_titanic_fare": _e(lambda: GBR(n_estimators=12, max_depth=4, loss="huber"), "titanic_fare"),
    "gb_reg_early_stopping_eval_set": _e(
        lambda: GBR(n_estimators=300, learning_rate=0.4, early_stopping=True, n_iter_no_change=4, max_depth=3),
        "eval_reg"),
    "gb_reg_early_stopping_own_split": _e(
        lambda: GBR(n_estimators=300, learning_rate=0.4, max_depth=4, early_stopping=True, n_iter_no_change=4,
                    validation_fraction=0.2, random_state=5), "boost_reg"),
    "gb_reg_warm_start": _e(lambda: GBR(n_estimators=5, max_depth=3, warm_start=True), "boost_reg",
                            refit={"n_estimators": 9}),
}

#: The zoo for the cuda kernels in numba-cuda's simulator, where every CUDA thread
#: is a Python thread: tens of rows, few bins, shallow trees. Only fits whose
#: sums are exact on the GPU kernels (so the same in any atomic order, hence
#: reproducible): classifiers with integer row weights (counts) and boosting
#: with quantised gradients (on by default with the cuda kernels). Three
#: features at most: in the simulator the histogram kernel's shared-memory
#: index ``(f - f0) * cell + b * n_channels`` is Python arithmetic on a NumPy
#: uint8 code ``b``, which NumPy 2 keeps uint8: with the 7 Titanic columns it
#: raised "OverflowError: Python integer 288 out of bounds for uint8" (a
#: simulator-only limit: compiled for a GPU, numba computes it in int64).
SIM_ZOO: dict[str, Entry] = {
    "sim_tree_clf": _e(lambda: DTC(max_depth=4, max_bins=15), "sim_clf3"),
    "sim_tree_clf_best_first": _e(lambda: DTC(max_leaf_nodes=6, max_bins=15, criterion="entropy"), "sim_clf3"),
    "sim_tree_clf_titanic": _e(lambda: DTC(max_depth=3, max_bins=15), "sim_titanic"),
    "sim_forest_clf": _e(lambda: RFC(n_estimators=3, max_depth=3, max_bins=15, random_state=0), "sim_clf2"),
    "sim_extra_trees_clf": _e(lambda: ETC(n_estimators=2, max_depth=3, max_bins=15, random_state=1), "sim_clf3"),
    "sim_gb_reg": _e(lambda: GBR(n_estimators=3, max_depth=2, max_bins=15, min_samples_leaf=4, subsample=0.8,
                                 random_state=0), "sim_reg"),
    "sim_gb_clf3": _e(lambda: GBC(n_estimators=2, max_depth=2, max_bins=15, min_samples_leaf=4), "sim_clf3"),
}


# -- the outputs -------------------------------------------------------------------
def _host(v) -> np.ndarray:
    if hasattr(v, "get") and not isinstance(v, (np.ndarray, dict)):  # a CuPy array
        v = v.get()
    return np.asarray(v)


def _trees(out: dict, prefix: str, trees) -> None:
    """The public arrays of ``tree_`` objects, each array concatenated over the trees (node after node)."""
    for name in TREE_ARRAYS:
        out[f"{prefix}.{name}"] = np.concatenate([_host(getattr(t, name)) for t in trees])
    for name in TREE_SCALARS:
        out[f"{prefix}.{name}"] = np.asarray([int(getattr(t, name)) for t in trees], dtype=np.int64)
    cats = ["-" if c is None else repr(np.asarray(c).tolist()) for t in trees for c in t.categories_left]
    out[f"{prefix}.categories_left"] = np.asarray(cats, dtype=str)


def _boosted_trees(out: dict, prefix: str, est) -> None:
    batch = est.trees_
    count = _host(batch.node_count).astype(np.int64)
    out[f"{prefix}.trees_.node_count"] = count
    for name in BOOST_TREE_ARRAYS:
        a = _host(getattr(batch, name))
        out[f"{prefix}.trees_.{name}"] = np.concatenate([a[t, : count[t], ...] for t in range(count.shape[0])])
    values = _host(est.tree_values_)
    out[f"{prefix}.tree_values_"] = np.concatenate([values[t, : count[t]] for t in range(count.shape[0])])


def _outputs(out: dict, prefix: str, est, X_probe) -> None:
    for name in PREDICTIONS:
        if hasattr(est, name):
            out[f"{prefix}.{name}"] = _host(getattr(est, name)(X_probe))
    few = X_probe[:N_STAGED]
    for name in STAGED:
        if hasattr(est, name):
            out[f"{prefix}.{name}"] = np.stack([_host(s) for s in getattr(est, name)(few)])
    for name in FITTED:
        if name == "tree_values_":
            continue  # with the trees, cut like them
        v = getattr(est, name, None)
        if v is not None:
            out[f"{prefix}.{name}"] = _host(v)
    if hasattr(est, "get_feature_importance"):
        out[f"{prefix}.feature_importance_split"] = _host(est.get_feature_importance("split"))
    if hasattr(est, "tree_"):
        _trees(out, f"{prefix}.tree_", [est.tree_])
    if hasattr(est, "trees_"):
        _boosted_trees(out, prefix, est)
    if getattr(est, "estimators_", None):
        _trees(out, f"{prefix}.estimators_[:].tree_", [sub.tree_ for sub in est.estimators_])


def fit_entry(entry: Entry):
    """The entry's estimator fitted on its data (refitted with more rounds for ``warm_start`` entries)."""
    d = _data(entry.data)
    est = entry.make().fit(d.X, d.y, **d.fit_kw)
    if entry.refit:
        est.set_params(**entry.refit).fit(d.X, d.y, **d.fit_kw)
    return est


def snapshot_entry(name: str, entry: Entry) -> dict:
    """``{f"{name}.{output}": ndarray}`` of one fitted entry."""
    out: dict = {}
    est = fit_entry(entry)
    _outputs(out, name, est, _data(entry.data).X_probe)
    if name == "tree_clf_ccp":  # the public pruning path of the same data
        d = _data(entry.data)
        path = entry.make().cost_complexity_pruning_path(d.X, d.y)
        out[f"{name}.ccp_path.ccp_alphas"] = _host(path.ccp_alphas)
        out[f"{name}.ccp_path.impurities"] = _host(path.impurities)
    if name == "ada_clf3_depth2":
        d = _data(entry.data)
        out[f"{name}.staged_sample_weight"] = np.stack(
            [_host(w) for w in est.staged_sample_weight(d.X, d.y, d.fit_kw.get("sample_weight"))])
    return out


def snapshot_models(zoo: str = "full", names=None, timings: dict | None = None) -> dict:
    """Fit the zoo and return ``{"entry.output": ndarray}`` (float64 and every dtype as produced).

    Parameters
    ----------
    zoo : {"full", "sim"}
        :data:`ZOO`, or :data:`SIM_ZOO` (the cuda kernels in the simulator).
    names : iterable of str, optional
        Only these entries.
    timings : dict, optional
        Filled with the seconds each entry took.
    """
    entries = ZOO if zoo == "full" else SIM_ZOO
    out: dict = {}
    for name in names or entries:
        t0 = time.perf_counter()
        with warnings.catch_warnings():  # empty OOB rows, 0 * inf in an impurity: the snapshot shows the outcome
            warnings.simplefilter("ignore")
            out.update(snapshot_entry(name, entries[name]))
        if timings is not None:
            timings[name] = time.perf_counter() - t0
    return out


# -- comparison ----------------------------------------------------------------------
META = "__meta__"  # the key of the file's JSON description (environment, timings), not compared


#: With another machine's stack (:func:`environment`), float arrays may differ by this much, relative to each
#: value and to the array's largest (a sum that cancels to near zero keeps its terms' rounding): a CPU with
#: other vector units rounds NumPy's ``exp`` and ``log`` and Numba's vectorised sums differently.
OTHER_STACK_RTOL = 1e-12


def differences(got: dict, want: dict, limit: int = 10, *, same_stack: bool = True) -> list[str]:
    """What differs between two snapshots, first difference first: key sets, then each array in key order.

    Arrays must have the same dtype and shape and be equal element for element
    (NaN equal to NaN: ``np.array_equal(..., equal_nan=True)``, which for
    float64 is bit for bit except for the sign of zero and NaN payloads, that
    ``tobytes`` equality catches too). Without ``same_stack``, float arrays
    within :data:`OTHER_STACK_RTOL` of the saved ones are equal (every other
    array still exactly).
    """
    out = []
    keys_got = {k for k in got if k != META}
    keys_want = {k for k in want if k != META}
    if keys_got != keys_want:
        missing, extra = sorted(keys_want - keys_got), sorted(keys_got - keys_want)
        out.append(f"key sets differ: {len(missing)} missing {missing[:limit]}, {len(extra)} new {extra[:limit]}")
    for key in [k for k in want if k in keys_got]:  # the saved order: entry by entry
        a, b = np.asarray(got[key]), np.asarray(want[key])
        if a.dtype != b.dtype or a.shape != b.shape:
            out.append(f"{key}: dtype/shape {a.dtype}{a.shape} != saved {b.dtype}{b.shape}")
        elif not same_stack and a.dtype.kind in "fc":
            finite = np.abs(b[np.isfinite(b)])
            scale = max(1.0, float(finite.max())) if finite.size else 1.0
            if not np.allclose(a, b, rtol=OTHER_STACK_RTOL, atol=OTHER_STACK_RTOL * scale, equal_nan=True):
                out.append(f"{key}: {_describe(a, b)}")
        elif not (np.array_equal(a, b, equal_nan=a.dtype.kind in "fc") and a.tobytes() == b.tobytes()):
            out.append(f"{key}: {_describe(a, b)}")
        if len(out) >= limit:
            break
    return out


def _describe(a: np.ndarray, b: np.ndarray) -> str:
    """Where and by how much ``a`` (new) differs from ``b`` (saved), same dtype and shape."""
    if a.dtype.kind in "fc":
        ne = ~((a == b) | (np.isnan(a) & np.isnan(b))) | (np.signbit(a) != np.signbit(b))
    else:
        ne = a != b
    idx = np.argwhere(np.atleast_1d(ne))
    if not idx.size:
        return "equal values, different bytes (NaN payloads)"
    first = tuple(int(i) for i in idx[0])
    x, y = np.atleast_1d(a)[first].item(), np.atleast_1d(b)[first].item()
    text = f"{int(ne.sum())} of {a.size} elements differ; first at {first}: {x!r} != saved {y!r}"
    if a.dtype.kind == "f":
        both = np.isfinite(a) & np.isfinite(b)
        if both.any():
            text += f"; largest |difference| {float(np.max(np.abs(a[both] - b[both]))):.3g}"
    return text


def environment() -> dict:
    """Versions that can change float results (a snapshot is made and checked on one machine's stack)."""
    import platform

    import llvmlite.binding
    import numba
    import sklearn

    return {
        "kernels": os.environ.get("GPUTREES_KERNELS", "auto"),
        "cudasim": os.environ.get("NUMBA_ENABLE_CUDASIM", "0"),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "scikit-learn": sklearn.__version__,
        "machine": f"{platform.system()} {platform.machine()}",
        # the CPU Numba compiles for (its vector units also choose NumPy's loops)
        "cpu": llvmlite.binding.get_host_cpu_name(),
    }


def save(path, zoo: str = "full", **meta) -> dict:
    """Fit the zoo with the kernel set of ``GPUTREES_KERNELS`` and save it to ``path`` (compressed .npz)."""
    timings: dict = {}
    t0 = time.perf_counter()
    out = snapshot_models(zoo, timings=timings)
    info = {**environment(), "zoo": zoo, "seconds": round(time.perf_counter() - t0, 1), **meta,
            "entry_seconds": {k: round(v, 2) for k, v in timings.items()}}
    np.savez_compressed(path, **out, **{META: np.asarray(json.dumps(info))})
    return info


if __name__ == "__main__":  # python tests/zoo_snapshot.py OUT.npz [full|sim [META_JSON]] (env: GPUTREES_KERNELS)
    import sys

    from simulator_run import quicken_simulator

    quicken_simulator()
    extra = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    print(json.dumps(save(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "full", **extra)))
