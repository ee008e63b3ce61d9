"""What the examples share: the command line, optional matplotlib, a tree drawing.

matplotlib is optional (``pip install gputrees[plot]``): without it the
examples print their figures and save no pictures. It always runs on the Agg
backend, so no display is needed.
"""

from __future__ import annotations

import argparse
from pathlib import Path



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


def plot_tree(est, feature_names, class_names=None, title=None):
    """A matplotlib figure of a fitted gputrees tree (``gputrees.plot.plot_tree``), or None without matplotlib."""
    if pyplot() is None:
        return None
    from gputrees.plot import plot_tree as draw

    ax = draw(est, feature_names=feature_names, class_names=class_names)
    if title:
        ax.set_title(title)
    return ax.figure
