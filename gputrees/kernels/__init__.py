"""Hot-path kernels behind one interface, chosen by array namespace.

Every kernel has a counterpart written only against the array API standard
(:mod:`gputrees.kernels.reference`), which is the oracle the tests compare
the fast ones against and what a set without a fast kernel of its own runs:
every :class:`Kernels` is complete, each slot a callable.

Kernel sets:

* ``"cuda"``: GPU kernels written with numba-cuda (:mod:`gputrees.kernels._cuda`),
  launched on CuPy arrays; node histograms in shared memory (global-memory
  atomics when a feature's bins x channels do not fit), node sums, row
  routing and the prediction walk. Under numba-cuda's simulator
  (``NUMBA_ENABLE_CUDASIM=1``) the same kernels run on NumPy arrays, on the
  CPU: that is how CI tests them;
* ``"numba"``: compiled, multi-threaded CPU kernels (NumPy arrays; needs
  Numba; :mod:`gputrees.kernels.cpu`), with whole-tree fast paths
  (:class:`FastPaths`);
* ``"bincount"``: NumPy (or CuPy) primitives, one thread;
* ``"reference"``: the array-API standard only (any namespace).

``"auto"`` (the default) picks ``"cuda"`` for CuPy arrays when numba-cuda
imports and sees a GPU, ``"numba"`` for NumPy arrays when Numba can be
imported, else ``"bincount"`` for NumPy and CuPy, else ``"reference"``;
but until an estimator family's Numba kernels are compiled on the machine,
its small fits (and predictions until some family has compiled) take
``"bincount"``, which compiles nothing (:mod:`gputrees.kernels.cold_start`). The
environment variable ``GPUTREES_KERNELS`` (one of :data:`KERNEL_NAMES`)
forces a set on every fit, for tests and benchmarks; asking for ``"numba"``
where Numba is missing, or ``"cuda"`` where numba-cuda has no GPU (and no
simulator), raises ImportError rather than silently falling back.

The rules every compiled kernel applies (criteria, split rules, leaf values,
draws) are written once, in :mod:`gputrees.kernels.rules`.

Quantised sums (:mod:`gputrees.kernels._quantise`): channels rounded to
multiples of a power-of-two ``1 / scale`` sum to the same numbers on every
set. :meth:`Kernels.quantised` gives the set to use for such channels: the
cuda set then accumulates int64 fixed-point sums (order-independent
atomics); the CPU sets' float64 sums of such values are exact already.
"""

from __future__ import annotations

import functools
import importlib
import os

from .._backend import is_cupy_namespace, is_numpy_namespace
from .._records import ActiveRows, TreeRows
from . import cold_start, reference
from ._quantise import quantisation_scale, quantise
from .interface import NO_FAST_PATHS, FastPaths, Kernels, assemble

__all__ = ["ActiveRows", "TreeRows", "Kernels", "FastPaths", "NO_FAST_PATHS", "get_kernels", "KERNEL_NAMES",
           "numba_available", "cuda_available", "quantisation_scale", "quantise"]

KERNEL_NAMES = ("auto", "reference", "bincount", "numba", "cuda")


@functools.lru_cache(maxsize=1)
def cuda_available() -> bool:
    """Whether numba-cuda imports and can launch kernels: a GPU, or its simulator (checked once, on first use)."""
    try:
        cuda = importlib.import_module("numba.cuda")
        return bool(cuda.is_available())
    except Exception:  # ImportError, or CUDA driver errors on a machine without a GPU
        return False


def cuda_simulated() -> bool:
    """Whether numba-cuda's simulator is on (``NUMBA_ENABLE_CUDASIM=1``): cuda kernels then run on NumPy arrays."""
    if not numba_available():
        return False
    import numba

    return bool(numba.config.ENABLE_CUDASIM)


@functools.lru_cache(maxsize=1)
def numba_available() -> bool:
    """Whether Numba can be imported (checked once, on first use; never at import)."""
    try:
        importlib.import_module("numba")
    except ImportError:
        return False
    return True


def get_kernels(xp, name: str | None = None, n_jobs: int | None = None, prediction: bool = False) -> Kernels:
    """Kernels for namespace ``xp``.

    Parameters
    ----------
    xp : array namespace
    name : str or None
        One of :data:`KERNEL_NAMES`; None reads ``GPUTREES_KERNELS`` (default ``"auto"``).
    n_jobs : int or None
        Threads of the Numba kernels: None or -1 = every core (as XGBoost,
        LightGBM and scikit-learn's HistGradientBoosting do by default), -2 =
        all but one, k > 0 = k; the other kernel sets use one thread.
    prediction : bool
        Asked for a prediction: outside a fit, ``"auto"`` on NumPy arrays
        then takes ``"bincount"`` until some family has compiled.
    """
    name = name or os.environ.get("GPUTREES_KERNELS", "auto")
    if name not in KERNEL_NAMES:
        raise ValueError(f"kernels must be one of {KERNEL_NAMES}, got {name!r}")
    if name == "auto":
        if is_cupy_namespace(xp) and cuda_available() and not cuda_simulated():
            name = "cuda"
        elif is_numpy_namespace(xp) and numba_available():
            compiled = cold_start.fit_choice()
            if compiled is None:
                compiled = not prediction or cold_start.any_compiled()
            name = "numba" if compiled else "bincount"
        elif is_numpy_namespace(xp) or is_cupy_namespace(xp):
            name = "bincount"
        else:
            name = "reference"
    if name == "numba":
        if not is_numpy_namespace(xp):
            raise ValueError("the numba kernels need NumPy arrays")
        if not numba_available():
            raise ImportError("GPUTREES_KERNELS=numba needs Numba: pip install numba")
        from .cpu import make_kernels

        return make_kernels(n_jobs)
    if name == "cuda":
        return _cuda_set(xp)
    if name == "bincount":
        if not (is_numpy_namespace(xp) or is_cupy_namespace(xp)):
            raise ValueError("the bincount kernels need NumPy or CuPy arrays")
        from . import _bincount

        if is_numpy_namespace(xp):
            return assemble("bincount", _bincount.build_histograms, reference.apply_trees,
                            segmented_cumsum=_bincount.segmented_cumsum, segment_max=_bincount.segment_max,
                            segment_min=_bincount.segment_min, scatter_rows=_bincount.scatter_rows,
                            bootstrap_counts=_bincount.bootstrap_counts)
        return assemble("bincount", _bincount.build_histograms, reference.apply_trees,
                        scatter_rows=_bincount.scatter_rows, bootstrap_counts=_bincount.bootstrap_counts)
    return assemble("reference", reference.build_histograms, reference.apply_trees)


def _cuda_set(xp) -> Kernels:
    """The numba-cuda kernels: CuPy arrays on a GPU, NumPy arrays in the simulator."""
    simulated = cuda_simulated()
    if simulated and not is_numpy_namespace(xp):
        raise ValueError("under numba-cuda's simulator (NUMBA_ENABLE_CUDASIM=1) the cuda kernels need NumPy arrays")
    if not simulated and not is_cupy_namespace(xp):
        raise ValueError(
            "the cuda kernels need CuPy arrays (pass CuPy input or device='cuda'; "
            "NUMBA_ENABLE_CUDASIM=1 runs them on NumPy arrays in numba-cuda's simulator)"
        )
    if not cuda_available():
        raise ImportError("GPUTREES_KERNELS=cuda needs numba-cuda and a CUDA GPU: pip install gputrees[cuda12]")
    from . import _cuda
    from .gpu import bootstrap, quantise, tree, treeshap, workspace

    scans = {}
    if simulated:  # NumPy arrays: the CPU set's scans (Numba is a dependency of gputrees)
        from .cpu import segments

        scans = dict(segmented_cumsum=segments.segmented_cumsum, segment_max=segments.segment_max,
                     segment_min=segments.segment_min)
    # GPUTREES_DEVICE_STEP=0 grows every batch level by level (to compare the two on a GPU)
    device_step = simulated or os.environ.get("GPUTREES_DEVICE_STEP") != "0"
    return assemble(
        "cuda", _cuda.build_histograms, _cuda.apply_trees, fixed_point=True, node_histograms=_cuda.node_histograms,
        node_sums=_cuda.node_sums, route_rows=_cuda.route_rows, predict_raw=_cuda.predict_raw,
        tree_shap=treeshap.tree_shap, bootstrap_counts=bootstrap.bootstrap_counts, workspace=workspace.workspace,
        fast=FastPaths(grow_tree=tree.grow_tree, quantiser=quantise.DeviceQuantiser) if device_step
        else NO_FAST_PATHS, **scans,
    )
