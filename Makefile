# Two commands do all the set-up on a fresh machine:
#   make run    create .venv, install the package (base dependencies only: the default run
#               replays recorded generations and needs no llama.cpp), run the workflow on the
#               bundled default (config.yaml)
#   make test   create .venv, install the package with its dev extra (pytest, ruff, ir-measures,
#               the SLURM plugin, llama-cpp-python, which compiles for minutes), run the tests
#   The tests run as on a fresh machine: the optional extras (mpnet, bench, gpu, ...) are hidden
#   even where they are installed, and the model folder and hub cache are empty
#   (tests/hermetic.py); `make test-extras` runs them with whatever is installed.
# Each install leaves a stamp: `make test` after `make run` only adds the dev extra; editing
# pyproject.toml reinstalls both.
VENV ?= .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: run test test-extras lint dry-run bench clean

$(VENV)/.installed-base: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed-base
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

run: $(VENV)/.installed-base
	$(VENV)/bin/snakemake --cores 2

test: $(VENV)/.installed-dev
	$(PY) -m pytest -q

test-extras: $(VENV)/.installed-dev
	STRUCTABLATE_TEST_EXTRAS=installed $(PY) -m pytest -q

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/snakemake --lint

dry-run: $(VENV)/.installed-base
	$(VENV)/bin/snakemake -n

bench: $(VENV)/.installed-base
	$(PY) bench/bench_embedding.py

clean:
	rm -rf results logs .snakemake
