"""The package's layers, read from its source: no import cycles, and the kernels import nothing of the engine.

Every ``import`` statement of every module counts, those inside functions
too (a lazy import is still a dependency). Module ``a`` depends on module
``b`` when it imports ``b`` or a name from it; importing a name from a
package that is one of its submodules (``from . import reference``) is a
dependency on that submodule.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import gputrees

PACKAGE = Path(gputrees.__file__).parent
#: What the kernels layer may import of gputrees: itself, the records and the backend helpers.
KERNEL_ALLOWED = ("gputrees.kernels", "gputrees._records", "gputrees._backend")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(name: str, path: Path, modules) -> set[str]:
    """The gputrees modules ``name`` imports (anywhere in its source)."""
    is_package = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module
            # a name imported from a package may be one of its submodules
            targets = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in modules else prefix for a in node.names]
        else:
            continue
        for t in targets:
            if t == "gputrees" or t.startswith("gputrees."):
                while t not in modules:  # ``import gputrees.kernels.cpu.grow as g`` names a module; a.b.c -> a.b
                    t = t.rsplit(".", 1)[0]
                if t != name:
                    out.add(t)
    return out


def _graph():
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycle(graph):
    """One import cycle as a list of modules, or None."""
    state = {}

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, stack)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def _is_package_of(a: str, b: str) -> bool:
    """Whether ``a`` is a package containing module ``b`` (a package's ``__init__`` may import its submodules)."""
    return b.startswith(a + ".")


def test_no_import_cycles():
    graph = _graph()
    # a package importing its own submodules is how Python packages expose them: not a cycle when the
    # submodules do not import the package back
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_kernels_import_nothing_of_the_engine():
    bad = {
        name: sorted(t for t in deps if not t.startswith(KERNEL_ALLOWED))
        for name, deps in _graph().items()
        if name == "gputrees.kernels" or name.startswith("gputrees.kernels.")
    }
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, f"kernel modules importing the engine: {bad}"


def test_records_are_the_bottom():
    deps = _graph()["gputrees._records"]
    assert deps <= {"gputrees._backend"}, f"gputrees._records imports {sorted(deps)}"


#: The formulas of the criteria, split rules and draws, as written in gputrees/kernels/rules.py.
FORMULAS = [
    "1.0 - sum_sq / (w * w)",  # Gini impurity
    "sum_sq / w - mean * mean",  # squared error's variance
    "p * (log_p / LOG2)",  # entropy
    "sl / wl + sr / wr",  # Gini's and squared error's proxy
    "diff * diff / (wl * wr)",  # Friedman's proxy
    "g * g / d",  # Newton's score
    "-g / d",  # Newton's leaf value
    "-(2.0 * g * v + (h + l2) * v * v)",  # Newton's score at a forced value
    "(w / total_weight) * (i - (wr / ws) * ir - (wl / ws) * il)",  # scikit-learn's impurity decrease
    "improvement + EPSILON >= min_decrease",  # its acceptance
    "best - tie_rtol * abs(best)",  # the tie rule's target
    "lo / 2.0 + hi / 2.0",  # a threshold between two values
    "(z ^ (z >> _U30)) * MIX_1",  # SplitMix64, the draws' mixing
]


@pytest.mark.parametrize("formula", FORMULAS)
def test_each_formula_is_written_once(formula):
    """A rule's formula appears once in the package, in gputrees/kernels/rules.py, which the compiled kernels and
    the array-API oracle both call."""
    hits = {p.relative_to(PACKAGE).as_posix(): p.read_text().count(formula) for p in PACKAGE.rglob("*.py")}
    hits = {k: v for k, v in hits.items() if v}
    assert hits == {"kernels/rules.py": 1}
