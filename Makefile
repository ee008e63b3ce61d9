# Two entry points that work on a fresh machine with only Python 3.10+:
#   make demo   - train on the bundled Titanic data and print what the tree learned
#   make test   - run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test venv bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $@

venv: $(VENV)/.installed

# the NumPy kernels: a fresh clone's demo compiles nothing (`gputrees demo` alone takes the compiled ones)
demo: venv
	$(BIN)/python -m gputrees demo --kernels bincount

# two worker processes (the CI machine's cores), each test file on one of them so
# that each compiles only its files' kernels, the files in the order tests/conftest.py
# gives them; threads that wait sleep rather than spin on the cores the other worker needs
TEST_WORKERS ?= 2
test: venv
	OMP_WAIT_POLICY=PASSIVE $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

bench: venv
	$(BIN)/python bench/bench_tree.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
