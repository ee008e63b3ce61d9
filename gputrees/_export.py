"""Text and Graphviz renderings of a fitted tree, in the style of scikit-learn's."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

_CRITERION_LABEL = {"log_loss": "entropy"}


def _names(est, feature_names):
    if feature_names is not None:
        names = list(feature_names)
        if len(names) != est.n_features_in_:
            raise ValueError(
                f"feature_names has {len(names)} entries, the tree has {est.n_features_in_} features"
            )
        return [str(n) for n in names]
    if hasattr(est, "feature_names_in_"):
        return [str(n) for n in est.feature_names_in_]
    return [f"feature_{i}" for i in range(est.n_features_in_)]


def _class_names(est, class_names):
    if not hasattr(est, "classes_"):
        return None
    if class_names is None:
        return [str(c) for c in est.classes_]
    names = list(class_names)
    if len(names) != len(est.classes_):
        raise ValueError(f"class_names has {len(names)} entries, the tree has {len(est.classes_)} classes")
    return [str(c) for c in names]


def _fmt_set(values) -> str:
    return "{" + ", ".join(str(v) for v in np.asarray(values).tolist()) + "}"


def _conditions(tree, node, name, decimals):
    """(left text, right text) of an internal node."""
    if tree.is_categorical[node]:
        cats = _fmt_set(tree.categories_left[node])
        left, right = f"{name} in {cats}", f"{name} not in {cats}"
    else:
        thr = tree.threshold[node]
        left = f"{name} <= {thr:.{decimals}f}"
        right = f"{name} >  {thr:.{decimals}f}"
    return left, right


def _leaf_text(est, tree, node, classes, decimals, show_details):
    value = tree.value[node]
    if classes is not None:
        text = f"class: {classes[int(np.argmax(value[0]))]}"
        if show_details:
            frac = ", ".join(f"{v:.{decimals}f}" for v in value[0])
            text += f" (proba [{frac}])"
    else:
        vals = value[:, 0]
        text = "value: [" + ", ".join(f"{v:.{decimals}f}" for v in vals) + "]"
    if show_details:
        text += (
            f", {est.criterion} = {tree.impurity[node]:.{decimals}f}"
            f", samples = {tree.n_node_samples[node]}"
        )
    return text


def export_text(
    decision_tree,
    *,
    feature_names=None,
    class_names=None,
    max_depth=10,
    spacing=3,
    decimals=2,
    show_details=False,
):
    """Text report of the rules of a fitted tree.

    Parameters
    ----------
    decision_tree : DecisionTreeClassifier or DecisionTreeRegressor
    feature_names : list of str, optional
        Defaults to ``feature_names_in_`` or ``feature_0, feature_1, ...``.
    class_names : list of str, optional
        Names for ``classes_`` (classifiers).
    max_depth : int, default=10
        Deeper subtrees are shown as "truncated branch".
    spacing : int, default=3
    decimals : int, default=2
    show_details : bool, default=False
        Also print the impurity, the number of samples and (classifiers) the
        class probabilities of each leaf.

    Returns
    -------
    str
    """
    check_is_fitted(decision_tree, "tree_")
    if spacing <= 0:
        raise ValueError(f"spacing must be > 0, got {spacing}")
    if decimals < 0:
        raise ValueError(f"decimals must be >= 0, got {decimals}")
    tree = decision_tree.tree_
    names = _names(decision_tree, feature_names)
    classes = _class_names(decision_tree, class_names)
    lines = []
    indent = "|" + " " * spacing
    branch = "|" + "-" * spacing + " "
    # explicit stack (node, depth) instead of recursion
    stack = [(0, 0, None)]
    while stack:
        node, depth, text = stack.pop()
        prefix = indent * (depth - 1) + branch if depth > 0 else ""
        if text is not None:
            lines.append(prefix + text)
        left = tree.children_left[node]
        if left < 0:
            pad = indent * depth + branch
            lines.append(pad + _leaf_text(decision_tree, tree, node, classes, decimals, show_details))
            continue
        if depth >= max_depth:
            lines.append(indent * depth + branch + f"truncated branch of depth {_subtree_depth(tree, node)}")
            continue
        ltext, rtext = _conditions(tree, node, names[tree.feature[node]], decimals)
        stack.append((tree.children_right[node], depth + 1, rtext))
        stack.append((left, depth + 1, ltext))
    # the root has no condition line: children are printed at depth 1
    return "\n".join(lines) + "\n"


def _subtree_depth(tree, node) -> int:
    depth, frontier = 0, [node]
    while frontier:
        nxt = [c for n in frontier for c in (tree.children_left[n], tree.children_right[n]) if c >= 0]
        if nxt:
            depth += 1
        frontier = nxt
    return depth


def export_graphviz(
    decision_tree,
    out_file=None,
    *,
    max_depth=None,
    feature_names=None,
    class_names=None,
    filled=False,
    impurity=True,
    node_ids=False,
    proportion=False,
    rounded=False,
    precision=3,
):
    """Graphviz DOT text of a fitted tree (feature, threshold, impurity, samples, value, class).

    Parameters
    ----------
    decision_tree : fitted gputrees tree
    out_file : path or file object, optional
        Also write the DOT text there.
    max_depth : int, optional
        Deeper nodes are drawn as "(...)".
    feature_names, class_names : list of str, optional
    filled : bool, default=False
        Colour nodes by majority class (classification) or value (regression).
    impurity, node_ids, proportion, rounded : bool
        As in scikit-learn.
    precision : int, default=3

    Returns
    -------
    str
        The DOT source.
    """
    check_is_fitted(decision_tree, "tree_")
    tree = decision_tree.tree_
    names = _names(decision_tree, feature_names)
    classes = _class_names(decision_tree, class_names)
    crit = _CRITERION_LABEL.get(decision_tree.criterion, decision_tree.criterion)
    style = 'node [shape=box, style="filled, rounded", fontname="helvetica"] ;' if rounded else (
        'node [shape=box, style="filled", fontname="helvetica"] ;' if filled else "node [shape=box] ;"
    )
    out = ["digraph Tree {", style, 'edge [fontname="helvetica"] ;']
    total = tree.n_node_samples[0]
    palette = ["#e58139", "#39e581", "#8139e5", "#e5d439", "#39d4e5", "#e539c0", "#7be539", "#397be5"]
    vmin, vmax = float(tree.value.min()), float(tree.value.max())
    stack = [(0, 0)]
    while stack:
        node, depth = stack.pop()
        if max_depth is not None and depth > max_depth:
            out.append(f'{node} [label="(...)"] ;')
            continue
        parts = []
        if node_ids:
            parts.append(f"node #{node}")
        left = tree.children_left[node]
        if left >= 0:
            parts.append(_conditions(tree, node, names[tree.feature[node]], precision)[0])
        if impurity:
            parts.append(f"{crit} = {tree.impurity[node]:.{precision}f}")
        if proportion:
            parts.append(f"samples = {100.0 * tree.n_node_samples[node] / total:.1f}%")
        else:
            parts.append(f"samples = {tree.n_node_samples[node]}")
        val = tree.value[node]
        if classes is not None:
            shown = val[0] if proportion else val[0] * tree.weighted_n_node_samples[node]
            parts.append("value = [" + ", ".join(f"{v:.{precision}g}" for v in shown) + "]")
            parts.append(f"class = {classes[int(np.argmax(val[0]))]}")
        else:
            parts.append("value = " + ", ".join(f"{v:.{precision}f}" for v in val[:, 0]))
        label = "\\n".join(p.replace('"', '\\"') for p in parts)
        attrs = f'label="{label}"'
        if filled:
            if classes is not None:
                k = int(np.argmax(val[0]))
                alpha = int(255 * (val[0][k] - (np.sort(val[0])[-2] if val.shape[1] > 1 else 0)))
                attrs += f', fillcolor="{palette[k % len(palette)]}{max(0, min(255, alpha)):02x}"'
            else:
                a = 0 if vmax == vmin else int(255 * (float(val[0, 0]) - vmin) / (vmax - vmin))
                attrs += f', fillcolor="#e58139{a:02x}"'
        out.append(f"{node} [{attrs}] ;")
        if left >= 0:
            right = tree.children_right[node]
            if node == 0:
                out.append(f'{node} -> {left} [labeldistance=2.5, labelangle=45, headlabel="True"] ;')
                out.append(f'{node} -> {right} [labeldistance=2.5, labelangle=-45, headlabel="False"] ;')
            else:
                out.append(f"{node} -> {left} ;")
                out.append(f"{node} -> {right} ;")
            stack.append((right, depth + 1))
            stack.append((left, depth + 1))
    out.append("}")
    dot = "\n".join(out) + "\n"
    if out_file is not None:
        if hasattr(out_file, "write"):
            out_file.write(dot)
        else:
            with open(out_file, "w", encoding="utf-8") as fh:
                fh.write(dot)
    return dot
