"""Plots of fitted gputrees models (matplotlib, an optional dependency).

``import gputrees`` does not import matplotlib, nor does ``import
gputrees.plot``; each function imports it when called and raises an
ImportError naming ``pip install gputrees[plot]`` when it is missing. Every
function draws on the matplotlib Axes ``ax`` it is given (a new figure's when
``ax`` is None) and returns that Axes.

For ROC curves, confusion matrices and other metric displays use
scikit-learn's ``RocCurveDisplay``, ``ConfusionMatrixDisplay``, ... directly:
they work with every gputrees estimator (see ``examples/displays.py``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from sklearn.utils.validation import check_is_fitted

from . import _backend
from ._export import _class_names, _names

__all__ = ["plot_tree", "plot_importance", "plot_learning_curve", "plot_decision_boundary", "plot_shap_summary"]

#: Figure inches per leaf column and per tree level of ``plot_tree``: room for
#: four lines of 8-point text per box (a depth-5 tree: 32 columns).
_INCHES_PER_LEAF, _INCHES_PER_LEVEL = 1.9, 1.3


def _pyplot():
    """matplotlib.pyplot, or an ImportError saying how to install it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "gputrees.plot needs matplotlib: pip install gputrees[plot] (or pip install matplotlib)"
        ) from exc
    return plt


def _axes(ax, figsize):
    if ax is not None:
        return ax
    _, ax = _pyplot().subplots(figsize=figsize)
    return ax


@dataclasses.dataclass(frozen=True)
class _TreeView:
    """One tree as host arrays to draw.

    children_left, children_right : ndarray of shape (n_nodes,), int64 (-1 at leaves)
    labels : list of str, one box text per node
    shade : ndarray of shape (n_nodes,), int64: colour index of each node (class, or 0)
    strength : ndarray of shape (n_nodes,), float64 in [0, 1]: colour strength
    """

    children_left: np.ndarray
    children_right: np.ndarray
    labels: list
    shade: np.ndarray
    strength: np.ndarray


def _split_text(feature_name, threshold, cats_left, decimals):
    if cats_left is not None:
        return f"{feature_name} in {{{', '.join(str(c) for c in np.asarray(cats_left).tolist())}}}"
    return f"{feature_name} <= {threshold:.{decimals}f}"


def _single_tree_view(est, feature_names, class_names, decimals) -> _TreeView:
    """Boxes of a fitted DecisionTreeClassifier / DecisionTreeRegressor."""
    tree = est.tree_
    names = _names(est, feature_names)
    classes = _class_names(est, class_names)
    criterion = {"log_loss": "entropy"}.get(est.criterion, est.criterion)
    labels = []
    n = tree.node_count
    shade = np.zeros(n, dtype=np.int64)
    strength = np.full(n, 0.35)
    for node in range(n):
        lines = []
        if tree.children_left[node] >= 0:
            f = tree.feature[node]
            lines.append(_split_text(names[f], tree.threshold[node], tree.categories_left[node], decimals))
        lines.append(f"{criterion} = {tree.impurity[node]:.{decimals}f}")
        lines.append(f"samples = {tree.n_node_samples[node]}")
        value = tree.value[node]
        if classes is not None:
            proba = value[0]
            k = int(np.argmax(proba))
            lines.append(f"class = {classes[k]} ({proba[k]:.{decimals}f})")
            shade[node] = k
            # 1/K (uniform) -> pale, 1 (pure) -> full colour
            strength[node] = (proba[k] - 1.0 / len(proba)) / (1.0 - 1.0 / len(proba))
        else:
            lines.append("value = " + ", ".join(f"{v:.{decimals}f}" for v in value[:, 0]))
        labels.append("\n".join(lines))
    return _TreeView(tree.children_left, tree.children_right, labels, shade, np.clip(strength, 0.05, 1.0))


def _boosted_tree_view(est, index, feature_names, decimals) -> _TreeView:
    """Boxes of tree ``index`` of a fitted gradient-boosting model (round ``index // K``)."""
    from ._tree import categories_left

    batch = est.trees_
    n_trees = int(batch.left.shape[0])
    if not 0 <= index < n_trees:
        raise IndexError(f"tree index {index} is out of range: the model has {n_trees} trees")
    n = int(batch.node_count[index])
    host = {f: _backend.to_numpy(getattr(batch, f))[index, :n] for f in ("left", "right", "feature", "threshold")}
    is_cat = _backend.to_numpy(batch.is_categorical)[index, :n].astype(bool)
    stats = _backend.to_numpy(batch.stats)[index, :n]  # channels: count, gradient, hessian
    values = _backend.to_numpy(est.tree_values_)[index, :n]
    cats = categories_left(batch, index, host["feature"].astype(np.int64), is_cat, est._bin_mapper, est._categories)
    names = _names(est, feature_names)
    labels = []
    for node in range(n):
        lines = []
        if host["left"][node] >= 0:
            f = int(host["feature"][node])
            lines.append(_split_text(names[f], host["threshold"][node], cats[node], decimals))
        lines.append(f"samples = {int(round(stats[node, 0]))}")
        lines.append(f"hessian = {stats[node, 2]:.{decimals}f}")
        if host["left"][node] < 0:
            lines.append(f"value = {values[node]:.{decimals + 2}f}")
        labels.append("\n".join(lines))
    span = float(np.max(np.abs(values))) or 1.0
    shade = np.where(values < 0, 1, 0).astype(np.int64)
    strength = np.clip(np.abs(values) / span, 0.05, 1.0)
    return _TreeView(host["left"].astype(np.int64), host["right"].astype(np.int64), labels, shade, strength)


def _tree_view(est, index, feature_names, class_names, decimals):
    """The tree to draw and its title: a single tree, or tree ``index`` of an ensemble."""
    if hasattr(est, "tree_"):
        return _single_tree_view(est, feature_names, class_names, decimals), None
    if hasattr(est, "trees_") and hasattr(est, "tree_values_"):
        check_is_fitted(est, "_rounds")
        k = est.n_trees_per_iteration_
        title = f"round {index // k}" + (f", class {est.classes_[index % k]}" if k > 1 else "")
        return _boosted_tree_view(est, index, feature_names, decimals), title
    check_is_fitted(est, "estimators_")
    members = est.estimators_
    if not -len(members) <= index < len(members):
        raise IndexError(f"tree index {index} is out of range: the ensemble has {len(members)} members")
    member = members[index]
    if not hasattr(member, "tree_"):
        raise TypeError(f"member {index} of {type(est).__name__} is a {type(member).__name__}, not a gputrees tree")
    if feature_names is None and hasattr(est, "feature_names_in_") and not hasattr(member, "feature_names_in_"):
        feature_names = est.feature_names_in_
    return _single_tree_view(member, feature_names, class_names, decimals), f"tree {index}"


def _layout(view: _TreeView, max_depth: int):
    """x (leaf columns) and depth of every node drawn down to ``max_depth``; leaves left to right."""
    x, depth = {}, {}
    next_col = 0
    # iterative post-order walk: (node, depth, children placed?)
    stack = [(0, 0, False)]
    while stack:
        node, d, placed = stack.pop()
        left, right = view.children_left[node], view.children_right[node]
        if left < 0 or d >= max_depth:
            x[node], depth[node] = float(next_col), d
            next_col += 1
        elif placed:
            x[node], depth[node] = (x[left] + x[right]) / 2.0, d
        else:
            stack.append((node, d, True))
            stack.append((right, d + 1, False))
            stack.append((left, d + 1, False))
    return x, depth, next_col


def plot_tree(
    est,
    *,
    index=0,
    max_depth=None,
    feature_names=None,
    class_names=None,
    decimals=2,
    fontsize=8,
    ax=None,
):
    """Draw a fitted tree: one box per node with its split, impurity, samples and class or value.

    Parameters
    ----------
    est : fitted estimator
        A DecisionTreeClassifier / DecisionTreeRegressor; for a forest, extra
        trees or AdaBoost (with gputrees trees as learners), tree ``index``
        of ``estimators_``; for gradient boosting, tree ``index`` of
        ``trees_`` (round ``index // n_trees_per_iteration_``), whose boxes
        show the split, samples, hessian sum and (leaves) the value added to
        the raw prediction.
    index : int, default=0
        Which tree of an ensemble; ignored for single trees.
    max_depth : int or None, default=None
        Draw nodes down to this depth (root: 0); deeper subtrees end in a
        box marked "...". None: the whole tree. Trees up to depth 5 stay
        readable at the default size.
    feature_names : list of str, optional
        Default: ``feature_names_in_`` or ``feature_0, ...``.
    class_names : list of str, optional
        Names for ``classes_`` (classifiers).
    decimals : int, default=2
    fontsize : float, default=8
    ax : matplotlib Axes, optional
        Where to draw; None: a new figure sized to the tree.

    Returns
    -------
    matplotlib.axes.Axes
        Holds one text box (a ``Text`` with ``gid="node"``) per node drawn
        and one line per edge.
    """
    plt = _pyplot()
    if max_depth is not None and (not isinstance(max_depth, (int, np.integer)) or max_depth < 0):
        raise ValueError(f"max_depth must be None or an int >= 0, got {max_depth!r}")
    view, title = _tree_view(est, index, feature_names, class_names, decimals)
    limit = np.iinfo(np.int64).max if max_depth is None else int(max_depth)
    x, depth, n_cols = _layout(view, limit)
    levels = max(depth.values()) + 1
    ax = _axes(ax, (max(6.0, _INCHES_PER_LEAF * n_cols), max(2.5, _INCHES_PER_LEVEL * levels)))
    cmap = plt.get_cmap("tab10")
    for node, xn in x.items():
        yn = -depth[node]
        left, right = view.children_left[node], view.children_right[node]
        text = view.labels[node]
        if left >= 0 and left not in x:
            text += "\n..."
        for child, edge in ((left, "yes"), (right, "no")):
            if child >= 0 and child in x:
                ax.plot([xn, x[child]], [yn, -depth[child]], color="0.6", zorder=1)
                ax.text((xn + x[child]) / 2, (yn - depth[child]) / 2, edge, fontsize=fontsize - 1, color="0.4")
        r, g, b, _ = cmap(int(view.shade[node]) % 10)
        a = 0.15 + 0.6 * float(view.strength[node])
        ax.text(
            xn,
            yn,
            text,
            gid="node",
            ha="center",
            va="center",
            fontsize=fontsize,
            zorder=2,
            bbox={"boxstyle": "round", "facecolor": (r, g, b, a), "edgecolor": "0.4"},
        )
    ax.set_xlim(-0.7, n_cols - 0.3)
    ax.set_ylim(-levels + 0.4, 0.6)
    ax.axis("off")
    if title:
        ax.set_title(title)
    return ax


def plot_importance(est, *, top_k=20, feature_names=None, importance_type=None, ax=None):
    """Horizontal bars of the ``top_k`` largest feature importances.

    Parameters
    ----------
    est : fitted estimator
        Any estimator with ``feature_importances_`` of shape (n_features,).
    top_k : int or None, default=20
        Bars drawn (the largest importances, largest on top); None: all.
    feature_names : list of str, optional
        Default: ``feature_names_in_`` or ``feature_0, ...``.
    importance_type : {"gain", "split"} or None, default=None
        Gradient boosting only: ``get_feature_importance(importance_type)``;
        None: ``feature_importances_``.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        Holds one bar (a ``Rectangle`` patch) per feature shown.
    """
    _pyplot()
    if importance_type is None:
        imp = np.asarray(est.feature_importances_, dtype=np.float64)
        label = "importance"
    else:
        if not hasattr(est, "get_feature_importance"):
            raise ValueError(f"importance_type is for gradient boosting; {type(est).__name__} has one importance")
        imp = np.asarray(est.get_feature_importance(importance_type), dtype=np.float64)
        label = f"importance ({importance_type})"
    names = _names(est, feature_names)
    if top_k is not None and (not isinstance(top_k, (int, np.integer)) or top_k < 1):
        raise ValueError(f"top_k must be None or an int >= 1, got {top_k!r}")
    order = np.argsort(-imp, kind="stable")[: len(imp) if top_k is None else int(top_k)]
    ax = _axes(ax, (6.0, max(2.0, 0.3 * len(order) + 1.0)))
    pos = np.arange(len(order))[::-1]  # largest on top
    ax.barh(pos, imp[order], color="C0")
    ax.set_yticks(pos, [names[i] for i in order])
    ax.set_xlabel(label)
    ax.set_title(f"{type(est).__name__}: top {len(order)} features")
    return ax


def plot_shap_summary(est, X, *, output=None, top_k=20, feature_names=None, ax=None, random_state=0):
    """A beeswarm of SHAP values (``est.shap_values(X)``), without the shap package.

    One row of dots per feature, the ``top_k`` of largest mean ``|SHAP
    value|`` (largest on top): each dot a sample at its SHAP value, spread
    vertically where they crowd, coloured by the feature's value (low blue,
    high red, from each feature's 5th to 95th percentile; missing values and
    categories' codes as they come, grey where missing).

    Parameters
    ----------
    est : fitted gputrees estimator (with ``shap_values``)
    X : array-like of shape (n_samples, n_features)
    output : int or None, default=None
        For models of several outputs (classifiers' classes): the output
        shown. Required there; must be None for one output.
    top_k : int or None, default=20
    feature_names : list of str, optional
        Default: ``feature_names_in_`` or ``feature_0, ...``.
    ax : matplotlib Axes, optional
    random_state : int, default=0
        Seed of the vertical jitter.

    Returns
    -------
    matplotlib.axes.Axes
        Holds one scatter collection per feature shown.
    """
    plt = _pyplot()
    from .explain import numeric_data

    phi = _backend.to_numpy(est.shap_values(X))[:, :-1, ...]
    if phi.ndim == 3:
        if output is None:
            raise ValueError(f"{type(est).__name__} explains {phi.shape[2]} outputs: choose one with output=")
        phi = phi[:, :, int(output)]
    elif output is not None:
        raise ValueError(f"{type(est).__name__} explains one output: output must be None, got {output!r}")
    if top_k is not None and (not isinstance(top_k, (int, np.integer)) or top_k < 1):
        raise ValueError(f"top_k must be None or an int >= 1, got {top_k!r}")
    names = _names(est, feature_names)
    data = numeric_data(X)
    order = np.argsort(-np.mean(np.abs(phi), axis=0), kind="stable")[: phi.shape[1] if top_k is None else int(top_k)]
    ax = _axes(ax, (7.0, max(2.0, 0.4 * len(order) + 1.0)))
    rng = np.random.default_rng(random_state)
    cmap = plt.get_cmap("coolwarm")
    for pos, j in zip(np.arange(len(order))[::-1], order):
        v, x = phi[:, j], data[:, j]
        known = ~np.isnan(x)
        lo, hi = (np.nanpercentile(x, [5, 95]) if known.any() else (0.0, 1.0))
        scaled = np.clip((x - lo) / (hi - lo if hi > lo else 1.0), 0.0, 1.0)
        colors = np.where(known[:, None], cmap(np.nan_to_num(scaled)), np.array([[0.6, 0.6, 0.6, 1.0]]))
        # spread dots vertically by how crowded their neighbourhood of SHAP values is
        bins = np.digitize(v, np.linspace(v.min(), v.max() + 1e-12, 50))
        crowd = np.bincount(bins, minlength=52)[bins] / max(1, len(v))
        jitter = rng.uniform(-1, 1, len(v)) * np.minimum(0.4, 4.0 * crowd)
        ax.scatter(v, pos + jitter, c=colors, s=8, linewidths=0)
    ax.axvline(0.0, color="0.5", linewidth=0.8)
    ax.set_yticks(np.arange(len(order))[::-1], [names[j] for j in order])
    ax.set_xlabel("SHAP value" + ("" if output is None else f" (output {output})"))
    ax.set_title(f"{type(est).__name__}: SHAP values of {phi.shape[0]} samples")
    return ax


def plot_learning_curve(est, X=None, y=None, *, X_val=None, y_val=None, ax=None):
    """Training and validation loss (or error) after each boosting round.

    Parameters
    ----------
    est : fitted GradientBoosting* or AdaBoost* estimator
        Gradient boosting: the stored curves, minus ``train_score_`` and
        minus ``validation_score_`` (the loss before the first round and
        after each round), with ``best_iteration_`` marked; ``X``, ``y``,
        ``X_val``, ``y_val`` must be None. AdaBoost stores no curve: it is
        computed from ``staged_score`` on (X, y) and, if given, (X_val,
        y_val), as ``1 - accuracy`` (classifier) or ``1 - R^2`` (regressor)
        after each round.
    X : array-like of shape (n_samples, n_features), optional
        Training rows (AdaBoost only).
    y : array-like of shape (n_samples,), optional
    X_val : array-like of shape (n_val, n_features), optional
        Validation rows (AdaBoost only).
    y_val : array-like of shape (n_val,), optional
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        Holds one line per curve ("train", "validation").
    """
    _pyplot()
    if hasattr(est, "train_score_"):
        if any(a is not None for a in (X, y, X_val, y_val)):
            raise ValueError(
                "gradient boosting stores its curves (train_score_, validation_score_): do not pass X, y, X_val, y_val"
            )
        curves = [("train", -np.asarray(est.train_score_))]
        if len(est.validation_score_):
            curves.append(("validation", -np.asarray(est.validation_score_)))
        rounds = np.arange(len(curves[0][1]))
        ylabel = f"loss ({getattr(est, 'loss', 'log_loss')})"
        best = est.best_iteration_
    elif hasattr(est, "staged_score"):
        check_is_fitted(est, "estimators_")
        if X is None or y is None:
            raise ValueError(f"{type(est).__name__} stores no learning curve: pass the training X and y")
        if (X_val is None) != (y_val is None):
            raise ValueError("pass both X_val and y_val, or neither")
        curves = [("train", 1.0 - np.fromiter(est.staged_score(X, y), dtype=np.float64))]
        if X_val is not None:
            curves.append(("validation", 1.0 - np.fromiter(est.staged_score(X_val, y_val), dtype=np.float64)))
        rounds = np.arange(1, len(curves[0][1]) + 1)
        ylabel = "error (1 - accuracy)" if hasattr(est, "classes_") else "1 - R^2"
        best = None
    else:
        raise TypeError(f"{type(est).__name__} has no learning curve: gradient boosting and AdaBoost have")
    ax = _axes(ax, (6.0, 4.0))
    for name, values in curves:
        ax.plot(rounds, values, label=name)
    if best is not None:
        ax.axvline(best + 1, color="0.5", linestyle="--", linewidth=1)
    ax.set_xlabel("round")
    ax.set_ylabel(ylabel)
    ax.set_title(f"{type(est).__name__} learning curve")
    ax.legend()
    return ax


def plot_decision_boundary(
    est,
    X,
    y=None,
    *,
    response_method="predict",
    grid_resolution=200,
    feature_names=None,
    sizes=None,
    alpha=0.4,
    ax=None,
    **contour_kw,
):
    """Regions of a fitted model on two features, with the data points on top.

    A thin layer over scikit-learn's
    ``sklearn.inspection.DecisionBoundaryDisplay.from_estimator``.

    Parameters
    ----------
    est : fitted estimator
        Trained on exactly 2 features.
    X : array-like of shape (n_samples, 2)
        Sets the plotted range (with a margin of 1); the points are drawn
        coloured by ``y`` when it is given.
    y : array-like of shape (n_samples,), optional
    response_method : {"predict", "predict_proba", "decision_function", "auto"}, default="predict"
        What is drawn over the plane (scikit-learn's meaning).
    grid_resolution : int, default=200
        Grid points per axis.
    feature_names : list of 2 str, optional
        Axis labels; default the estimator's ``feature_names_in_`` or "x0", "x1".
    sizes : array-like of shape (n_samples,), optional
        Marker areas of the points (e.g. sample weights scaled).
    alpha : float, default=0.4
        Opacity of the regions.
    ax : matplotlib Axes, optional
    **contour_kw
        Passed on to matplotlib's ``contourf`` (e.g. ``levels``, ``colors``,
        ``cmap``).

    Returns
    -------
    matplotlib.axes.Axes
        Holds the regions (a contour set) and, with ``y``, one scatter of
        n_samples points.
    """
    _pyplot()
    from sklearn.inspection import DecisionBoundaryDisplay

    Xh = np.asarray(_backend.to_numpy(X) if not hasattr(X, "iloc") else X.to_numpy(), dtype=np.float64)
    if Xh.ndim != 2 or Xh.shape[1] != 2:
        raise ValueError(f"plot_decision_boundary needs X of shape (n_samples, 2), got {Xh.shape}")
    names = list(feature_names) if feature_names is not None else None
    if names is None:
        names = [str(n) for n in getattr(est, "feature_names_in_", ["x0", "x1"])]
    ax = _axes(ax, (5.0, 4.5))
    X_in = X if hasattr(X, "iloc") else Xh
    display = DecisionBoundaryDisplay.from_estimator(
        est,
        X_in,
        response_method=response_method,
        grid_resolution=grid_resolution,
        alpha=alpha,
        ax=ax,
        xlabel=names[0],
        ylabel=names[1],
        **contour_kw,
    )
    if y is not None:
        yh = np.asarray(_backend.to_numpy(y) if not hasattr(y, "iloc") else y.to_numpy())
        if yh.shape[0] != Xh.shape[0]:
            raise ValueError(f"y has {yh.shape[0]} rows, X has {Xh.shape[0]}")
        if yh.dtype.kind not in "biuf":  # labels drawn as their sorted codes, as the regions
            yh = np.unique(yh, return_inverse=True)[1]
        surface = display.surface_
        ax.scatter(
            Xh[:, 0],
            Xh[:, 1],
            c=yh,
            cmap=surface.cmap,
            norm=surface.norm,
            s=None if sizes is None else np.asarray(sizes, dtype=np.float64),
            edgecolors="k",
            linewidths=0.5,
        )
    return ax
