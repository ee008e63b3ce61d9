"""The GPU's device level step (``tests/cuda_sim/test_device_*.py``) in numba-cuda's simulator, in a child
process (see ``simulator_run.py``)."""

from __future__ import annotations

from simulator_run import device_step_files, run_in_simulator


def test_device_step_in_the_simulator():
    run_in_simulator(device_step_files())
