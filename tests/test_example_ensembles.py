"""examples/ensembles.py runs in its fast mode: every ensemble beats 80% on Adult."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "ensembles.py"
MODELS = [
    "single tree (max_depth=10)",
    "bagging (BaggingClassifier)",
    "pasting (BaggingClassifier)",
    "random subspaces (BaggingClassifier)",
    "random patches (BaggingClassifier)",
    "bagging (gputrees forest)",
    "pasting (gputrees forest)",
    "random subspaces (gputrees forest)",
    "random patches (gputrees forest)",
    "random forest",
    "extra trees",
    "voting (soft)",
    "stacking (logistic regression)",
]


def _load():
    spec = importlib.util.spec_from_file_location("example_ensembles", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ensembles_fast(capsys):
    module = _load()
    if not (module.DEFAULT_DATA_DIR / "adult.csv").is_file():
        pytest.skip(f"{module.DEFAULT_DATA_DIR / 'adult.csv'} not found")
    out = module.main(["--fast"])
    assert list(out) == MODELS
    for name, row in out.items():
        assert row["accuracy"] > 0.8, name
        assert row["fit_s"] > 0.0, name
    text = capsys.readouterr().out
    assert "3,000 training rows" in text and "10 trees per ensemble" in text
    for name, row in out.items():
        assert f"{row['accuracy']:13.4f}" in text.split(name, 1)[1].splitlines()[0]


def test_ensembles_missing_data_dir(tmp_path):
    with pytest.raises(FileNotFoundError, match="--data-dir"):
        _load().main(["--fast", "--data-dir", str(tmp_path)])
