"""The gputrees command line: every command in a subprocess, user mistakes as one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gputrees
from gputrees import cli
from gputrees.datasets import load_titanic

ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = ROOT.parent / "shared" / "data"


def run(*args, env=None):
    """``python -m gputrees ARGS`` from the repository root; (returncode, stdout, stderr)."""
    import os

    full_env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    proc = subprocess.run([sys.executable, "-m", "gputrees", *args], cwd=ROOT, capture_output=True, text=True,
                          env=full_env, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def titanic_csv(tmp_path_factory):
    data = load_titanic(as_frame=True)
    df = data.data.assign(Survived=np.asarray(data.target_names)[data.target])
    path = tmp_path_factory.mktemp("data") / "titanic.csv"
    df.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def adult_csv(tmp_path_factory):
    src = DATA_DIR / "adult.csv"
    if not src.is_file():
        pytest.skip(f"{src} not found (shared data sets absent)")
    path = tmp_path_factory.mktemp("data") / "adult3000.csv"
    pd.read_csv(src, nrows=3000).to_csv(path, index=False)
    return path


def test_train_predict_evaluate_inspect_titanic(titanic_csv, tmp_path):
    model = tmp_path / "titanic.gpt"
    rc, out, err = run("train", str(titanic_csv), "--target", "Survived", "--model", "gbdt",
                       "--param", "n_estimators=5", "--param", "max_depth=3", "--out", str(model))
    assert rc == 0, err
    assert "task classification" in out and "2 categorical" in out
    for name in ("accuracy", "precision", "recall", "F1", "ROC AUC"):
        assert name in out
    acc = float(out.split("accuracy")[1].split()[0])
    assert 0.7 < acc <= 1.0

    # the saved model: what the command printed is what scikit-learn computes on the same split
    est = gputrees.load_model(model)
    assert est.n_estimators == 5 and list(est.classes_) == ["died", "survived"]

    pred = tmp_path / "pred.csv"
    rc, out, err = run("predict", str(model), str(titanic_csv), "--out", str(pred))
    assert rc == 0, err
    df = pd.read_csv(pred)
    assert list(df.columns) == ["prediction", "proba_died", "proba_survived"]
    X = cli.read_table(titanic_csv).drop(columns="Survived")
    np.testing.assert_allclose(df[["proba_died", "proba_survived"]].to_numpy(), est.predict_proba(X), rtol=1e-12)
    assert (df["prediction"] == est.predict(X)).all()

    rc, out, err = run("evaluate", str(model), str(titanic_csv), "--target", "Survived")
    assert rc == 0, err
    from sklearn.metrics import accuracy_score

    y = pd.read_csv(titanic_csv)["Survived"]
    assert f"{accuracy_score(y, est.predict(X)):.4f}" in out

    rc, out, err = run("inspect", str(model))
    assert rc == 0, err
    assert "GradientBoostingClassifier" in out and "feature importances" in out and "Sex" in out


def test_tree_regression_and_inspect_rules(titanic_csv, tmp_path, capsys):
    model = tmp_path / "fare.gpt"
    assert cli.main(["train", str(titanic_csv), "--target", "Fare", "--model", "tree",
                     "--param", "max_depth=2", "--out", str(model)]) == 0
    out = capsys.readouterr().out
    assert "task regression" in out and "RMSE" in out and "R2" in out
    assert cli.main(["inspect", str(model)]) == 0
    out = capsys.readouterr().out
    assert "DecisionTreeRegressor" in out and "rules:" in out and "|---" in out


def test_train_and_evaluate_adult_sample(adult_csv, tmp_path, capsys):
    model = tmp_path / "adult.gpt"
    assert cli.main(["train", str(adult_csv), "--target", "income", "--model", "forest", "--param", "n_estimators=5",
                     "--param", "max_depth=6", "--seed", "1", "--out", str(model)]) == 0
    out = capsys.readouterr().out
    assert "3000 rows, 14 features (8 categorical)" in out
    assert float(out.split("ROC AUC")[1].split()[0]) > 0.8
    pred = tmp_path / "adult_pred.csv"
    assert cli.main(["predict", str(model), str(adult_csv), "--out", str(pred)]) == 0
    assert list(pd.read_csv(pred).columns) == ["prediction", "proba_<=50K", "proba_>50K"]
    assert cli.main(["evaluate", str(model), str(adult_csv), "--target", "income"]) == 0
    assert "accuracy" in capsys.readouterr().out


def test_user_mistakes_are_one_line_errors(titanic_csv, tmp_path, capsys):
    rc, out, err = run("train", str(titanic_csv), "--target", "nope", "--out", str(tmp_path / "m.gpt"))
    assert rc == 2 and err.strip().count("\n") == 0
    assert err.startswith("gputrees: error: column 'nope' not in the data") and "Traceback" not in err
    bad = tmp_path / "bad.gpt"
    bad.write_bytes(b"not a model")
    assert cli.main(["predict", str(bad), str(titanic_csv), "--out", str(tmp_path / "p.csv")]) == 2


@pytest.mark.parametrize(
    "argv,message",
    [
        (["train", "{missing}", "--target", "x", "--out", "m.gpt"], "data file not found"),
        (["train", "{csv}", "--target", "Survived", "--task", "regression", "--out", "m.gpt"], "is not numeric"),
        (["train", "{csv}", "--target", "Fare", "--task", "classification", "--out", "m.gpt"], "non-integer numbers"),
        (["train", "{csv}", "--target", "Survived", "--param", "colour=red", "--out", "m.gpt"], "unknown parameter(s) colour"),
        (["train", "{csv}", "--target", "Survived", "--param", "max_depth=-3", "--out", "m.gpt"], "training failed"),
        (["train", "{csv}", "--target", "Survived", "--param", "max_depth", "--out", "m.gpt"], "expects key=value"),
        (["train", "{csv}", "--target", "Survived", "--model", "svm", "--out", "m.gpt"], "invalid choice"),
        (["train", "{bad_csv}", "--target", "x", "--out", "m.gpt"], "cannot read"),
        (["predict", "{missing}", "{csv}", "--out", "p.csv"], "model file not found"),
        (["evaluate", "{model}", "{csv}", "--target", "Pclass"], "classes the model never saw"),
        (["inspect"], "the following arguments are required"),
    ],
)
def test_user_mistakes_in_process(argv, message, titanic_csv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    parquet = tmp_path / "t.parquet"
    parquet.write_bytes(b"PAR1")
    model = tmp_path / "m0.gpt"
    X = cli.read_table(titanic_csv).drop(columns=["Survived", "Pclass"])
    gputrees.DecisionTreeClassifier(max_depth=1).fit(X, ["a"] * X.shape[0]).save_model(model)
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_bytes(b"a,b\n1,2\n3,4,5,6\n")
    paths = {"bad_csv": str(bad_csv), "missing": str(tmp_path / "missing.csv"), "csv": str(titanic_csv), "parquet": str(parquet), "model": str(model)}
    rc = cli.main([a.format(**paths) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("gputrees: error: ") and err.count("\n") == 1 and message in err, err


def test_parquet(titanic_csv, tmp_path, capsys):
    df = pd.read_csv(titanic_csv)
    path = tmp_path / "t.parquet"
    try:
        df.to_parquet(path)
    except ImportError:
        path.write_bytes(b"PAR1")
        assert cli.main(["train", str(path), "--target", "Survived", "--out", str(tmp_path / "m.gpt")]) == 2
        err = capsys.readouterr().err
        assert "reading Parquet needs pyarrow" in err and err.count("\n") == 1
        return
    assert cli.main(["train", str(path), "--target", "Survived", "--model", "tree", "--out", str(tmp_path / "m.gpt")]) == 0


def test_params_are_parsed_as_json_when_possible():
    assert cli.parse_params(["a=3", "b=0.5", "c=true", "d=null", "e=sqrt", "f=[1, 2]"]) == {
        "a": 3, "b": 0.5, "c": True, "d": None, "e": "sqrt", "f": [1, 2]}


def test_auto_task():
    assert cli.infer_task(pd.Series([0, 1, 1, 0], name="y"), "auto") == "classification"
    assert cli.infer_task(pd.Series(["a", "b"], name="y"), "auto") == "classification"
    assert cli.infer_task(pd.Series([0.5, 1.25], name="y"), "auto") == "regression"
    assert cli.infer_task(pd.Series(np.arange(100), name="y"), "auto") == "regression"


def _fake_script(path, options=("--quick",)):
    """A bench script that declares ``options`` (as argparse would) and prints a table row."""
    declared = "".join(f"# add_argument({opt!r})\n".replace("'", '"') for opt in options)
    path.write_text(declared + "import sys\nprint('args', sys.argv[1:])\nprint('| ' + __file__[-10:-3] + ' | 1.0 |')\n")


def test_bench_runs_quick_mode_of_each_script(tmp_path):
    for name in ("bench_a.py", "bench_b.py"):
        _fake_script(tmp_path / name)
    _fake_script(tmp_path / "bench_c.py", options=())
    rc, out, err = run("bench", env={"GPUTREES_BENCH_DIR": str(tmp_path)})
    assert rc == 0, err
    assert "== bench_a.py --quick" in out and "| bench_a | 1.0 |" in out and "| bench_b | 1.0 |" in out
    assert out.count("args ['--quick']") == 2
    assert "bench_c" not in out.split("not run")[0] and "not run (no quick mode; run them directly): bench_c.py" in out


def test_bench_refuses_what_a_script_cannot_do(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GPUTREES_BENCH_DIR", str(tmp_path))
    _fake_script(tmp_path / "bench_a.py")
    _fake_script(tmp_path / "bench_c.py", options=())
    assert cli.main(["bench", "--only", "a", "--only", "c"]) == 2
    err = capsys.readouterr().err
    assert "bench_c.py has no quick mode" in err and f"python {tmp_path / 'bench_c.py'} --help" in err
    assert cli.main(["bench", "--only", "a", "--device", "cpu"]) == 2
    assert "bench_a.py has no --device option" in capsys.readouterr().err


def test_bench_unknown_script(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GPUTREES_BENCH_DIR", str(tmp_path))
    assert cli.main(["bench"]) == 2
    assert "no bench scripts in" in capsys.readouterr().err
    (tmp_path / "bench_a.py").write_text("")
    assert cli.main(["bench", "--only", "c"]) == 2
    assert "no bench script named c" in capsys.readouterr().err


def test_each_repository_script_with_a_quick_mode_accepts_it():
    """The scripts `gputrees bench` runs declare --quick and --device (the bug: it passed --quick to all)."""
    scripts = {p.name: cli._script_options(p) for p in cli._bench_dir().glob("bench_*.py")}
    quick = {name for name, opts in scripts.items() if "--quick" in opts}
    assert {"bench_tree.py", "bench_forest.py", "bench_boost.py"} <= quick
    assert all("--device" in scripts[name] for name in quick)


def test_bench_finds_the_repository_scripts():
    assert {p.name for p in cli._bench_dir().glob("bench_*.py")} >= {"bench_tree.py", "bench_forest.py", "bench_boost.py"}


def test_demo_trains_three_models():
    rc, out, err = run("demo")
    assert rc == 0, err
    for label in ("decision tree", "random forest", "gradient boosting"):
        assert f"== {label}" in out
    accs = [float(line.split()[-1]) for line in out.splitlines() if line.startswith("test accuracy")]
    assert len(accs) == 3 and all(0.75 < a < 0.95 for a in accs), accs
    assert "|--- Sex" in out  # the tree's rules


def test_demo_with_the_kernels_that_compile_nothing(monkeypatch):
    monkeypatch.delenv("GPUTREES_KERNELS", raising=False)
    rc, out, err = run("demo", "--kernels", "bincount")
    assert rc == 0, err
    assert out.startswith("kernels: bincount (nothing to compile)")
    assert out.count("test accuracy") == 3


def test_console_script_is_declared():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'gputrees = "gputrees.cli:main"' in text
