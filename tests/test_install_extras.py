"""The GPU extras resolve to a set that works: NumPy below 2.5, with which numba-cuda 0.30 compiles no kernel.

``pip install "gputrees[cuda13]"`` resolved NumPy 2.5 on a fresh GPU
machine, and numba-cuda 0.30.4's first compile then failed (it registers
``np.row_stack``, which NumPy 2.5 removed). The extras cap NumPy; this test
asks pip what a fresh install of each extra would install (``--dry-run
--report``, the package index must be reachable) and checks the versions.
It needs the network, so it is marked slow: ``pytest --runslow tests/test_install_extras.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def _resolve(extra: str, tmp_path) -> dict:
    report = tmp_path / f"{extra}.json"
    run = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--report",
         str(report), f"{ROOT}[{extra}]"],
        capture_output=True, text=True, timeout=300,
    )
    if run.returncode != 0:
        if "Could not find" in run.stderr or "No matching distribution" in run.stderr or "connection" in run.stderr.lower():
            pytest.skip(f"the package index did not answer: {run.stderr.strip()[-300:]}")
        raise AssertionError(f"pip could not resolve gputrees[{extra}]:\n{run.stderr[-3000:]}")
    return {item["metadata"]["name"].lower(): Version(item["metadata"]["version"])
            for item in json.loads(report.read_text())["install"]}


@pytest.mark.slow
@pytest.mark.parametrize("extra", ["cuda12", "cuda13"])
def test_gpu_extra_resolves_a_working_set(extra, tmp_path):
    versions = _resolve(extra, tmp_path)
    assert versions["numpy"] < Version("2.5"), versions["numpy"]
    assert versions["numba-cuda"] >= Version("0.30")
    assert f"cupy-{extra}x" in versions
