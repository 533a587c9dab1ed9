# Two commands do all the set-up on a fresh machine:
#   make run    create .venv, install, run the workflow on the bundled default (config.yaml)
#   make test   create .venv, install, run the test suite
VENV ?= .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: run test lint dry-run bench clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

run: $(VENV)/.installed
	$(VENV)/bin/snakemake --cores 2

test: $(VENV)/.installed
	$(PY) -m pytest -q

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/snakemake --lint

dry-run: $(VENV)/.installed
	$(VENV)/bin/snakemake -n

bench: $(VENV)/.installed
	$(PY) bench/bench_embedding.py

clean:
	rm -rf results logs .snakemake
