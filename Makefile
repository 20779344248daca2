# Two commands matter: `make lab` and `make test`. Both build .venv from nothing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
export UV_PYTHON_DOWNLOADS := never
export PYTHONHASHSEED := 0

.PHONY: lab test unit lint notebooks docs bench bench-data venv clean

venv: $(STAMP)

# uv installs the kit with its extras in seconds; it is itself installed with the venv's pip.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip uv
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[lab,dev,docs]'
	touch $(STAMP)

# `jupyter trust` lets JupyterLab draw the widgets saved in a tutorial (08's playground, say) as soon as it
# opens, before any cell runs; in an untrusted notebook they show as plain text. tools/lab-overrides.json
# (copied into this .venv only) answers JupyterLab's "get notified about Jupyter news?" pop-up with "never",
# and the two --LabApp options stop the server fetching news or checking for updates: no internet needed.
# More options for jupyter lab go in LAB_ARGS, e.g. `make lab LAB_ARGS=--port=9999`.
LAB_ARGS ?=
lab: $(STAMP)
	$(BIN)/jupyter trust notebooks/*.ipynb
	mkdir -p $(VENV)/share/jupyter/lab/settings
	cp tools/lab-overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json
	$(BIN)/jupyter lab --ip=127.0.0.1 --no-browser --allow-root --notebook-dir=notebooks \
		--LabApp.news_url=None --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate $(LAB_ARGS)

# Lint, then unit tests, property tests and every notebook under nbval, in one pytest run.
# Provider variables are cleared: stored notebook outputs come from the simulator, never a paid API
# (and AGENTKIT_LANG: they hold the seeds' Japanese prompts).
# HYPOTHESIS_PROFILE=full runs every property test at its full example count (local runs: "quick").
test: $(STAMP) lint bench-data docs
	env -u AGENTKIT_PROVIDER -u AGENTKIT_BASE_URL -u AGENTKIT_MODEL -u AGENTKIT_LANG HYPOTHESIS_PROFILE=full $(BIN)/python -m pytest -q -n 2 --dist loadfile tests $(wildcard notebooks/*.ipynb) \
		--nbval --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg

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
	$(BIN)/python benchmarks/bfcl_multiturn.py
	$(BIN)/python benchmarks/noise_floor.py

clean:
	rm -rf $(VENV)
