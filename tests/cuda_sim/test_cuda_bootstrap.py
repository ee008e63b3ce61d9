"""Forests' bootstrap counts drawn by the cuda set (gputrees.kernels.gpu.bootstrap) in numba-cuda's simulator:
the CPU sets' counts, exactly.

Run by tests/test_kernels_cuda_sim.py in a process with ``NUMBA_ENABLE_CUDASIM=1``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from gputrees._backend import namespace_of
from gputrees.kernels import get_kernels

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":  # pragma: no cover - guarded by tests/conftest.py
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 (run by tests/test_kernels_cuda_sim.py)", allow_module_level=True)

NP = namespace_of(np.empty(0))
# the simulator runs the keys' mixing (wrapping uint64 arithmetic, as meant) on NumPy scalars, which warn
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


# (seed, first tree, trees, rows, draws): small (a CUDA thread is a Python thread here), one row, one draw,
# more draws than the launch's threads, a seed past 2^63
@pytest.mark.parametrize("case", [(0, 0, 2, 1, 1), (7, 5, 3, 50, 50), (2**64 - 1, 97, 2, 257, 100),
                                  (31337, 2, 1, 30, 0)])
def test_cuda_counts_equal_the_cpu_sets(case):
    want = get_kernels(NP, "reference").bootstrap_counts(NP, *case)
    got = get_kernels(NP, "cuda").bootstrap_counts(NP, *case)
    assert got.dtype == np.float64 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, get_kernels(NP, "numba").bootstrap_counts(NP, *case))
