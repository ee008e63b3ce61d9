"""Write ``tests/data/zoo_snapshot_<set>.npz``: the zoo of ``tests/zoo_snapshot.py`` fitted with each kernel set.

Run from the repository root, on the commit whose models are the reference::

    python tests/data/make_zoo_snapshot.py                 # every set that runs here
    python tests/data/make_zoo_snapshot.py numba bincount  # some of them

Each set fits in a process of its own, with ``GPUTREES_KERNELS`` (and, for
``cuda``, ``NUMBA_ENABLE_CUDASIM=1``: numba-cuda's simulator on NumPy arrays,
with the reduced ``SIM_ZOO``) set before anything is imported.
``tests/test_zoo_snapshot.py`` then checks that a refit equals these files bit
for bit. Regenerate them only for a change that is meant to change models, and
say so in its commit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent
TESTS = DATA.parent
ROOT = TESTS.parent
#: kernel set -> (zoo, extra environment)
SETS = {
    "reference": ("full", {}),
    "bincount": ("full", {}),
    "numba": ("full", {}),
    "cuda": ("sim", {"NUMBA_ENABLE_CUDASIM": "1"}),
}


def child_env(kernels: str) -> dict:
    """The environment of a process that fits the zoo with ``kernels``."""
    env = {k: v for k, v in os.environ.items() if k not in ("GPUTREES_KERNELS", "NUMBA_ENABLE_CUDASIM")}
    env.update(SETS[kernels][1], GPUTREES_KERNELS=kernels, PYTHONHASHSEED="0")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), str(TESTS), env.get("PYTHONPATH", "")) if p)
    return env


def fit_in_child(kernels: str, out: Path, timeout: float = 1800, **meta) -> dict:
    """Fit the zoo of ``kernels`` in a fresh process and save it to ``out``; returns the file's description."""
    zoo = SETS[kernels][0]
    args = [sys.executable, str(TESTS / "zoo_snapshot.py"), str(out), zoo]
    if meta:
        args.append(json.dumps(meta))
    run = subprocess.run(
        args, cwd=ROOT, env=child_env(kernels), capture_output=True, text=True, timeout=timeout, check=False
    )
    if run.returncode != 0:
        raise RuntimeError(f"the {kernels} zoo failed:\n{run.stdout[-3000:]}\n{run.stderr[-6000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    names = argv or list(SETS)
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()

    commit = git("rev-parse", "HEAD")
    dirty = git("status", "--porcelain", "--", "gputrees")
    for name in names:
        if name not in SETS:
            raise SystemExit(f"unknown kernel set {name!r}; one of {list(SETS)}")
        path = DATA / f"zoo_snapshot_{name}.npz"
        info = fit_in_child(name, path, commit=commit + ("+changes" if dirty else ""))
        print(f"{name:10s} {info['seconds']:7.1f} s  {path.stat().st_size / 1e6:.3f} MB  {path.relative_to(ROOT)}",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
