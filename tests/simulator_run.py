"""Running tests of ``tests/cuda_sim/`` in a child pytest process with numba-cuda's simulator switched on.

The simulator (``NUMBA_ENABLE_CUDASIM=1``) must be on before ``numba.cuda`` is
first imported in a process and stays on, while the main test process keeps
real CUDA for the ``gpu`` tests: so the simulator's tests run in a child
process. Two test modules each run a part of the folder
(``test_kernels_cuda_sim.py``: the kernels; ``test_device_cuda_sim.py``: the
device step), so that the suite's two workers can run them at once, each
within its own time limit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SIMULATOR_TESTS = Path(__file__).resolve().parent / "cuda_sim"

#: The simulator runs a block's threads as Python threads while its own loop polls them without sleeping: at
#: Python's default switch interval (5 ms) each simulated thread waits that long for the GIL at every turn. At
#: 0.5 ms the simulator's tests run 3-4 times faster.
SIMULATOR_SWITCH_INTERVAL = 0.0005


def quicken_simulator() -> None:
    """In a process running the simulator, switch threads at ``SIMULATOR_SWITCH_INTERVAL``."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        sys.setswitchinterval(SIMULATOR_SWITCH_INTERVAL)


def device_step_files() -> list[Path]:
    """The device step's simulator tests (``cuda_sim/test_device_*.py``)."""
    return sorted(SIMULATOR_TESTS.glob("test_device_*.py"))


def kernel_files() -> list[Path]:
    """Every other simulator test file."""
    device = set(device_step_files())
    return [p for p in sorted(SIMULATOR_TESTS.glob("test_*.py")) if p not in device]


def run_in_simulator(files: list[Path]) -> None:
    """Run ``files`` with pytest in a child process under the simulator; fail showing its output if any test
    fails or is skipped."""
    pytest.importorskip("numba.cuda")
    assert files, "no simulator test files"
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    env.pop("GPUTREES_KERNELS", None)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *map(str, files)],
        cwd=SIMULATOR_TESTS.parent.parent, env=env, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, f"simulator tests failed:\n{run.stdout[-6000:]}\n{run.stderr[-3000:]}"
    assert " passed" in run.stdout and "skipped" not in run.stdout, run.stdout[-2000:]
