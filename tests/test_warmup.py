"""``gputrees compile``: the CPU kernels compiled ahead, so that a later process's first fit compiles nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gputrees import cli
from gputrees._warmup import FAMILIES, compile_kernels

#: A new process's first fit of a family on Titanic, counting Numba's compilations.
FIRST_FIT = r"""
import json, sys
from numba.core import event
compiled = []

class Listener(event.Listener):
    def on_start(self, ev):
        compiled.append(str(ev.data.get("dispatcher")))
    def on_end(self, ev):
        pass

event.register("numba:compile", Listener())
import gputrees
from gputrees.datasets import load_titanic
d = load_titanic(as_frame=True)
getattr(gputrees, sys.argv[1])().fit(d.data, d.target).predict(d.data)
print(json.dumps(compiled))
"""


def test_unknown_family_is_named():
    with pytest.raises(ValueError, match="unknown families"):
        compile_kernels(["trees"])


def test_compile_command_reports_each_family(capsys):
    assert cli.main(["compile", "--families", "tree", "--jobs", "1"]) in (0, None)
    out = capsys.readouterr().out
    assert "compiling the CPU kernels of tree" in out and "  tree: " in out and "done in" in out


def test_compile_command_refuses_an_unknown_family(capsys):
    assert cli.main(["compile", "--families", "bagging"]) == 2
    assert "invalid choice: 'bagging'" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("family", ["tree", "gbdt"])
def test_after_compile_a_first_fit_compiles_nothing(tmp_path, family):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    subprocess.run([sys.executable, "-m", "gputrees", "compile", "--families", family], env=env, check=True,
                   capture_output=True)
    res = subprocess.run([sys.executable, "-c", FIRST_FIT, FAMILIES[family]], env=env, check=True,
                         capture_output=True, text=True)
    assert json.loads(res.stdout.strip().splitlines()[-1]) == []
