"""The GPU's whole-tree path (numba-cuda): a boosting round's or a forest batch's trees grown on the device.

The cuda kernel set (:mod:`gputrees.kernels._cuda`) gives the generic grower
its per-level passes, around which the grower's array operations and host
reads run. :func:`tree.grow_tree` grows a batch of trees (the K trees of a
boosting round, or a random forest's batch) in a fixed number of launches
per level, with every shape known before the tree starts and nothing read
back to the host until the trees are laid out: the :class:`~gputrees.kernels.FastPaths` ``grow_tree``
of the cuda set. Under numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1``)
the same kernels run on NumPy arrays: that is how CI checks them against
the CPU.

Modules: :mod:`.rules` (the rules of :mod:`gputrees.kernels.rules` made
callable from CUDA kernels), :mod:`.tree` (the level step and its driver),
:mod:`.treeshap` (exact SHAP values, one thread per row and leaf path),
:mod:`.bootstrap` (forests' in-bag counts, one thread per draw).
"""

from __future__ import annotations
