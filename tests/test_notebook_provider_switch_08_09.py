"""Tutorials 08 and 09 on a learner's own model: each runs to the end on stand-ins unlike `sim-reasoner`.

As in test_notebook_provider_switch.py: AGENTKIT_BASE_URL + AGENTKIT_MODEL point at a separate server of
stand-ins (`learner_models`): "learner-7b" calls one tool per turn with random ids and answers in English,
"silent-7b" never calls a tool. Tutorial 08 runs its steps 1-8 on the simulator whatever the environment
says (they need the oracle and reproducible models) and benchmarks the configured model in step 9; tutorial
09 asks the configured model in steps 3 and 5. No cell may raise, the model calls must reach the stand-in,
and a planted key must never appear in an output. Outputs are not compared with the stored ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from learner_models import LEARNER_MODEL, SILENT_MODEL, serve_stand_in
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
KEY = "-".join(["sk", "switch", "test", "08", "09", "abcdef"])  # planted: must never be printed


@pytest.fixture(scope="module")
def stand_in():
    server, respond = serve_stand_in()
    yield server, respond
    server.stop()


@pytest.mark.parametrize("model", [LEARNER_MODEL, SILENT_MODEL])
@pytest.mark.parametrize("tutorial", ["08_benchmark_a_model.ipynb", "09_tools_over_mcp.ipynb"])
def test_tutorial_runs_to_the_end_on_another_model(tutorial, model, stand_in, monkeypatch):
    server, respond = stand_in
    monkeypatch.delenv("AGENTKIT_PROVIDER", raising=False)
    monkeypatch.setenv("AGENTKIT_BASE_URL", server.base_url("openai-chat"))
    monkeypatch.setenv("AGENTKIT_MODEL", model)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    before = respond.requests[model]
    nb = nbformat.read(NOTEBOOKS / tutorial, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()  # raises if a cell fails

    outputs = json.dumps([c.get("outputs", []) for c in nb.cells], ensure_ascii=False)
    assert KEY not in outputs
    assert f"{server.url}/v1: {model} in openai-chat format" in outputs  # lab.describe names the endpoint
    assert respond.requests[model] > before  # the notebook's model calls reached the stand-in
