"""What the examples share: the command line, optional matplotlib, a tree drawing.

matplotlib is optional (``pip install gputrees[plot]``): without it the
examples print their figures and save no pictures. It always runs on the Agg
backend, so no display is needed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def parser(doc: str) -> argparse.ArgumentParser:
    """Argument parser with the flags every example takes."""
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="train on the CPU (NumPy) or the GPU (CuPy)")
    p.add_argument("--fast", action="store_true", help="small settings (the tests run this)")
    p.add_argument("--out", default=".", help="folder for the pictures (created if needed)")
    return p


def pyplot():
    """matplotlib.pyplot on the Agg backend, or None when matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, out: str, name: str) -> str:
    """Save ``fig`` as ``out/name`` and close it; returns the path."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    fig.savefig(path, dpi=120, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    print(f"saved {path}")
    return str(path)


def _split_text(tree, node, names):
    f = names[tree.feature[node]]
    if tree.is_categorical[node]:
        cats = ", ".join(str(c) for c in tree.categories_left[node])
        return f"{f} in {{{cats}}}"
    return f"{f} <= {tree.threshold[node]:.2f}"


def _node_text(est, node, names, class_names):
    tree = est.tree_
    lines = [_split_text(tree, node, names)] if tree.children_left[node] >= 0 else []
    lines.append(f"samples = {tree.n_node_samples[node]}")
    value = tree.value[node, 0]
    if class_names is not None:
        counts = np.rint(value * tree.weighted_n_node_samples[node]).astype(int)
        lines.append("value = [" + ", ".join(str(c) for c in counts) + "]")
        lines.append(f"class = {class_names[int(np.argmax(value))]}")
    else:
        lines.append(f"value = {value[0]:.3f}")
    return "\n".join(lines)


def plot_tree(est, feature_names, class_names=None, title=None):
    """A matplotlib figure of a fitted gputrees tree (boxes and yes/no edges), or None."""
    plt = pyplot()
    if plt is None:
        return None
    tree = est.tree_
    x, y = {}, {}
    next_leaf = [0]

    def place(node, depth):  # leaves left to right, parents centred over children
        y[node] = -depth
        if tree.children_left[node] < 0:
            x[node] = next_leaf[0]
            next_leaf[0] += 1
        else:
            place(tree.children_left[node], depth + 1)
            place(tree.children_right[node], depth + 1)
            x[node] = (x[tree.children_left[node]] + x[tree.children_right[node]]) / 2

    place(0, 0)
    n_leaves, depth = next_leaf[0], est.get_depth()
    fig, ax = plt.subplots(figsize=(max(6.0, 2.2 * n_leaves), max(3.0, 1.8 * (depth + 1))))
    for node in range(tree.node_count):
        for child, label in ((tree.children_left[node], "yes"), (tree.children_right[node], "no")):
            if child >= 0:
                ax.plot([x[node], x[child]], [y[node], y[child]], color="0.6", zorder=1)
                ax.text((x[node] + x[child]) / 2, (y[node] + y[child]) / 2, label, fontsize=7, color="0.4")
        leaf = tree.children_left[node] < 0
        ax.text(
            x[node],
            y[node],
            _node_text(est, node, feature_names, class_names),
            ha="center",
            va="center",
            fontsize=7,
            zorder=2,
            bbox={"boxstyle": "round", "facecolor": "#e8f4e8" if leaf else "#eef0fa", "edgecolor": "0.5"},
        )
    ax.set_xlim(-0.7, n_leaves - 0.3)
    ax.set_ylim(-depth - 0.6, 0.6)
    ax.axis("off")
    if title:
        ax.set_title(title)
    return fig
