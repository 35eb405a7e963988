# The two entry points of the README: `make demo` (the main job) and `make test`.
# Both create and use the project-local virtual environment in .venv.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-all bench setup clean

setup: $(STAMP)

$(STAMP): pyproject.toml scripts/setup.sh
	bash scripts/setup.sh "$(PYTHON)" "$(VENV)"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/dmq demo

test: $(STAMP)
	bash scripts/run-tests.sh

test-all: $(STAMP)
	$(BIN)/python -m pytest -m "slow or not slow"

bench: $(STAMP)
	for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
