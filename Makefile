# Two commands matter: `make lab` and `make test`. Both build .venv from nothing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
export UV_PYTHON_DOWNLOADS := never
export PYTHONHASHSEED := 0

.PHONY: lab test test-durations unit lint notebooks docs bench bench-data venv clean

venv: $(STAMP)

# uv installs the kit with its extras, less tools/venv-excludes.txt (a parser that costs every notebook
# kernel two seconds); uv is itself installed with the venv's pip. Each phase says what it
# does, and uv shows its own progress (resolving, downloading, installing): the first run takes a minute
# or two (see the README), later ones nothing.
$(STAMP): pyproject.toml tools/venv-excludes.txt
	@echo "==> [1/3] creating $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	@echo "==> [2/3] installing pip and uv into $(VENV)"
	$(BIN)/python -m pip install --upgrade pip uv
	@echo "==> [3/3] installing agentkit with its lab, dev and docs extras (uv; the first time downloads ~200 packages)"
	@echo "    after its last progress line uv compiles every package's bytecode, printing nothing until it is done:"
	@echo "    up to a minute on a busy 2-core machine (so that notebooks and tests start quickly later)"
	$(BIN)/uv pip install --compile-bytecode --python $(BIN)/python --excludes tools/venv-excludes.txt -e '.[lab,dev,docs]'
	touch $(STAMP)
	@echo "==> $(VENV) is ready"

# `jupyter trust` lets JupyterLab draw the widgets saved in a tutorial (08's playground, say) as soon as it
# opens, before any cell runs; in an untrusted notebook they show as plain text. tools/lab-overrides.json
# (copied into this .venv only) answers JupyterLab's "get notified about Jupyter news?" pop-up with "never",
# and the two --LabApp options stop the server fetching news or checking for updates: no internet needed.
# More options for jupyter lab go in LAB_ARGS, e.g. `make lab LAB_ARGS=--port=9999`.
LAB_ARGS ?=
lab: $(STAMP)
	@echo "==> trusting the tutorials, then starting JupyterLab: open the http://127.0.0.1:... URL it prints"
	$(BIN)/jupyter trust notebooks/*.ipynb
	mkdir -p $(VENV)/share/jupyter/lab/settings
	cp tools/lab-overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json
	$(BIN)/jupyter lab --ip=127.0.0.1 --no-browser --allow-root --notebook-dir=notebooks \
		--LabApp.news_url=None --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate $(LAB_ARGS)

# Lint, then unit tests, property tests and every notebook under nbval, in one pytest run.
# Provider variables are cleared: stored notebook outputs come from the simulator, never a paid API
# (and AGENTKIT_LANG: they hold the seeds' Japanese prompts).
# HYPOTHESIS_PROFILE=full runs every property test at its full example count (local runs: "quick").
# Each file runs whole on one of two workers (--dist loadfile), the longest first (tests/slowest_files.txt,
# see tests/conftest.py; --no-loadscope-reorder keeps that order instead of xdist's "most tests first"),
# and AGENTKIT_FILE_PROGRESS says when the workers are up and have collected, then prints a line as each
# file or notebook starts.
PYTEST_ALL = env -u AGENTKIT_PROVIDER -u AGENTKIT_BASE_URL -u AGENTKIT_MODEL -u AGENTKIT_LANG HYPOTHESIS_PROFILE=full \
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder tests $(wildcard notebooks/*.ipynb) \
	--nbval --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg
test: $(STAMP) lint bench-data docs
	@echo "==> pytest on 2 workers: unit, property and packaging tests, then every notebook under nbval"
	AGENTKIT_FILE_PROGRESS=1 $(PYTEST_ALL)

# The same run, which also rewrites tests/slowest_files.txt with the seconds each file took.
test-durations: $(STAMP) bench-data
	AGENTKIT_TEST_DURATIONS=tests/slowest_files.txt $(PYTEST_ALL)

# BFCL's public data for agentkit.bench, read from the bfcl-eval wheel into the user cache; a no-op once there.
bench-data: $(STAMP)
	$(BIN)/python -m agentkit.bench fetch bfcl

# The static site of the stored, executed tutorials (nothing is re-executed, nothing fetched), warnings as errors.
# Open docs/_build/html/index.html in a browser; it works offline from the folder.
docs: $(STAMP)
	$(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	@echo "The site: docs/_build/html/index.html"

lint: $(STAMP)
	$(BIN)/ruff check agentkit tests benchmarks tools

# The quick Hypothesis profile: for iterating locally.
unit: $(STAMP)
	$(BIN)/python -m pytest -q tests

# Re-execute the notebooks and store deterministic outputs (rerun gives no diff).
notebooks: $(STAMP)
	$(BIN)/python tools/execute_notebooks.py notebooks/*.ipynb

bench: $(STAMP)
	$(BIN)/python benchmarks/loop_overhead.py
	$(BIN)/python benchmarks/parallel.py
	$(BIN)/python benchmarks/import_time.py
	$(BIN)/python benchmarks/sim_latency.py
	$(BIN)/python benchmarks/sim_flood.py
	$(BIN)/python benchmarks/deadlines.py
	$(BIN)/python benchmarks/mcp_roundtrip.py
	$(BIN)/python benchmarks/bench_concurrency.py
	$(BIN)/python benchmarks/single_stream.py --answer 1 --timeout 3
	$(BIN)/python benchmarks/bfcl_multiturn.py
	$(BIN)/python benchmarks/noise_floor.py

clean:
	rm -rf $(VENV)
