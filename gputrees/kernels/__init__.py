"""Hot-path kernels behind one interface, chosen by array namespace.

Every kernel has a twin written only against the array API standard
(:mod:`gputrees.kernels._reference`), which is the oracle the tests compare
the fast ones against and the path used for namespaces with no fast kernel
(array-api-strict, for instance).

``GPUTREES_KERNELS`` (environment variable) forces ``"reference"`` on every
namespace, for tests and benchmarks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from .._backend import is_cupy_namespace, is_numpy_namespace

__all__ = ["Kernels", "get_kernels", "KERNEL_NAMES"]

KERNEL_NAMES = ("auto", "reference", "bincount")


@dataclass(frozen=True)
class Kernels:
    """The kernel set used by a fit.

    Attributes
    ----------
    name : str
    build_histograms : callable
        ``build_histograms(xp, codes, rows, node, weights, n_nodes, n_bins)``
        returning an array of shape (n_nodes, n_features, n_bins, n_channels),
        float64; see :func:`gputrees.kernels._reference.build_histograms`.
    segmented_cumsum, segment_max, segment_min : callable
        ``f(xp, values, seg, max_len)``: running sum inside runs of equal
        ``seg``, and the max / min of each run broadcast to its elements (the
        sort-based split search of small nodes).
    """

    name: str
    build_histograms: Callable
    segmented_cumsum: Callable
    segment_max: Callable
    segment_min: Callable


def get_kernels(xp, name: str | None = None) -> Kernels:
    """Kernels for namespace ``xp``: ``"bincount"`` on NumPy/CuPy, else ``"reference"``."""
    name = name or os.environ.get("GPUTREES_KERNELS", "auto")
    if name not in KERNEL_NAMES:
        raise ValueError(f"kernels must be one of {KERNEL_NAMES}, got {name!r}")
    if name == "auto":
        name = "bincount" if (is_numpy_namespace(xp) or is_cupy_namespace(xp)) else "reference"
    if name == "bincount":
        if not (is_numpy_namespace(xp) or is_cupy_namespace(xp)):
            raise ValueError("the bincount kernels need NumPy or CuPy arrays")
        from . import _bincount, _reference

        if is_numpy_namespace(xp):
            return Kernels(
                "bincount",
                _bincount.build_histograms,
                _bincount.segmented_cumsum,
                _bincount.segment_max,
                _bincount.segment_min,
            )
        return Kernels(
            "bincount",
            _bincount.build_histograms,
            _reference.segmented_cumsum,
            _reference.segment_max,
            _reference.segment_min,
        )
    from . import _reference

    return Kernels(
        "reference",
        _reference.build_histograms,
        _reference.segmented_cumsum,
        _reference.segment_max,
        _reference.segment_min,
    )
