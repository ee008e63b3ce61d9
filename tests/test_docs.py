"""The documentation site builds without warnings, and every public name has a numpydoc docstring."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import gputrees
import gputrees.callbacks
import gputrees.explain
import gputrees.plot

ROOT = Path(__file__).resolve().parents[1]
MODULES = [gputrees, gputrees.plot, gputrees.callbacks, gputrees.explain]


def _public_objects():
    """(qualified name, object) of every name in the modules' ``__all__`` and their public methods and properties."""
    for mod in MODULES:
        for name in mod.__all__:
            if name.startswith("__"):
                continue
            obj = getattr(mod, name)
            yield f"{mod.__name__}.{name}", obj
            if not inspect.isclass(obj):
                continue
            for attr in dir(obj):
                if attr.startswith("_"):
                    continue
                static = inspect.getattr_static(obj, attr)
                member = static.fget if isinstance(static, property) else getattr(obj, attr)
                if not (inspect.isfunction(member) or isinstance(static, property)):
                    continue
                if not getattr(member, "__module__", "").startswith("gputrees"):
                    continue  # inherited from scikit-learn, documented there
                yield f"{mod.__name__}.{name}.{attr}", member


PUBLIC = list(_public_objects())


def _parameters(obj):
    target = obj.__init__ if inspect.isclass(obj) else obj
    if inspect.isclass(obj) and target is object.__init__:
        return []
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return []
    return [p for p in sig.parameters if p not in ("self", "cls") and not p.startswith("*")]


def test_the_walk_finds_the_api():
    names = {n for n, _ in PUBLIC}
    assert "gputrees.GradientBoostingClassifier.predict_proba" in names
    assert "gputrees.RandomForestRegressor.feature_importances_" in names
    assert "gputrees.plot.plot_tree" in names and "gputrees.callbacks.EarlyStopping.on_iteration" in names
    assert len(PUBLIC) > 100


@pytest.mark.parametrize("name,obj", PUBLIC, ids=[n for n, _ in PUBLIC])
def test_public_docstring(name, obj):
    doc = inspect.getdoc(obj)
    assert doc, f"{name} has no docstring"
    params = [p for p in _parameters(obj) if not p.startswith("_")]
    if isinstance(obj, type) and params:
        # a frozen dataclass made by gputrees documents its fields as Attributes
        section = "Attributes" if dataclasses.is_dataclass(obj) else "Parameters"
        assert f"{section}\n----------" in doc, f"{name} takes {params}: its docstring needs a {section} section"
        missing = [p for p in params if p not in doc]
        assert not missing, f"{name}: parameters {missing} are not described"
    if inspect.isfunction(obj) and params:
        assert "Parameters\n----------" in doc, f"{name} takes {params}: its docstring needs a Parameters section"
        missing = [p for p in params if p not in doc]
        assert not missing, f"{name}: parameters {missing} are not described"


def test_array_docstrings_give_shapes():
    """Every docstring of an estimator method taking X names the shape of X."""
    bad = [n for n, obj in PUBLIC if inspect.isfunction(obj) and "X" in _parameters(obj) and "shape" not in inspect.getdoc(obj)]
    assert not bad, f"no shapes in: {bad}"


@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None,
    reason="mkdocs and mkdocstrings[python] are not installed (pip install gputrees[docs])",
)
def test_docs_build_strict(tmp_path):
    """``mkdocs build --strict``: any warning (broken link, bad docstring, missing page) fails."""
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    for name in ("RandomForestClassifier", "plot_decision_boundary", "EarlyStopping", "max_features_per_tree"):
        assert name in api
