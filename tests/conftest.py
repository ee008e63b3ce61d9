"""Shared fixtures: the array backends every engine test runs on.

``backend`` yields (name, xp-like module, to_backend function). NumPy and
array-api-strict always run; CuPy runs where it imports and sees a GPU, and is
reported as *skipped* (with the reason) everywhere else.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# Property-based tests that do not set ``max_examples`` themselves run under
# the profile named by GPUTREES_HYPOTHESIS_PROFILE (or hypothesis' own
# ``--hypothesis-profile``): "ci" (default, bounded so the suite stays within
# CI's time) or "long" (by hand: many more examples).
settings.register_profile(
    "ci", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "long", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("GPUTREES_HYPOTHESIS_PROFILE", "ci"))


# tests/cuda_sim runs only in a process with numba-cuda's simulator on (it must
# be on before numba.cuda is imported, and the main run keeps real CUDA for the
# gpu tests): tests/test_kernels_cuda_sim.py and test_device_cuda_sim.py start it (simulator_run.py)
collect_ignore = [] if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" else ["cuda_sim"]


def _cupy_available():
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # ImportError, or CUDA runtime errors without a driver
        return False


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


#: Test files that start the suite, in this order (``make test`` runs the files in collection order,
#: ``--no-loadscope-reorder``): each simulator child process runs one or two minutes in one test, and the PTX
#: compilations take long too, none of them compiling CPU kernels; so they run on one worker while the other
#: compiles the tree kernels (test_robustness) once for both, rather than both compiling them at the start
#: and the single long tests ending the suite on one worker.
FIRST_FILES = ("test_device_cuda_sim.py", "test_robustness.py", "test_kernels_cuda_sim.py", "test_cuda_compiles.py")


def pytest_collection_modifyitems(config, items):
    # the other files after them, the largest first (what pytest-xdist's loadfile does by default)
    counts = {}
    for item in items:
        counts[item.path.name] = counts.get(item.path.name, 0) + 1
    rank = {name: i for i, name in enumerate(FIRST_FILES)}
    items.sort(key=lambda item: (rank.get(item.path.name, len(rank)), -counts[item.path.name], item.path.name))
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


def _numpy_backend():
    return np, (lambda a: np.asarray(a))


def _strict_backend():
    import array_api_strict as xs

    return xs, (lambda a: xs.asarray(np.asarray(a)))


def _cupy_backend():
    import cupy

    return cupy, (lambda a: cupy.asarray(np.asarray(a)))


BACKENDS = [
    pytest.param("numpy", id="numpy"),
    pytest.param("array_api_strict", id="array_api_strict"),
    pytest.param(
        "cupy",
        id="cupy",
        marks=[
            pytest.mark.gpu,
            pytest.mark.skipif(not _cupy_available(), reason="CuPy with a CUDA GPU is not available"),
        ],
    ),
]


@pytest.fixture(params=BACKENDS)
def backend(request):
    name = request.param
    mod, conv = {"numpy": _numpy_backend, "array_api_strict": _strict_backend, "cupy": _cupy_backend}[name]()
    return name, mod, conv


def to_numpy(a):
    from gputrees._backend import to_numpy as _tn

    return _tn(a)
