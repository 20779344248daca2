"""Tutorials 05 and 07 on a learner's own model: each runs to the end on stand-ins that are not `sim-reasoner`.

As in test_notebook_provider_switch.py (01-03), the configured endpoint is a separate server
(`learner_models`) whose models call one tool per turn with random ids, or never call a tool. Most cells of
05 and 07 use a scripted model or the simulator on purpose; the ones that talk to the configured model (05's
Part 4, 07's last run) must reach the stand-in — in the format configured, OpenAI Chat through
AGENTKIT_BASE_URL or Anthropic through AGENTKIT_PROVIDER — no cell may raise, and a planted key must never
appear in an output. Outputs are not compared with the stored ones: another model answers differently.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from learner_models import LEARNER_MODEL, SILENT_MODEL, serve_stand_in
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
KEY = "-".join(["sk", "switch", "test", "05", "07", "0123456789"])  # planted: must never be printed


@pytest.fixture(scope="module")
def stand_in():
    server, respond = serve_stand_in()
    yield server, respond
    server.stop()


# Two runs (each tutorial takes seconds): between them, both stand-ins and both ways of configuring.
@pytest.mark.parametrize(("tutorial", "fmt", "model"), [
    ("05_parallel_tools.ipynb", "anthropic", LEARNER_MODEL),
    ("07_transport_faults_and_fallbacks.ipynb", "openai-chat", SILENT_MODEL),
])
def test_tutorial_runs_to_the_end_on_another_model(tutorial, fmt, model, stand_in, monkeypatch):
    server, respond = stand_in
    if fmt == "openai-chat":  # an OpenAI-compatible server of your own (Ollama, vLLM, ...): the URL says it all
        monkeypatch.delenv("AGENTKIT_PROVIDER", raising=False)
    else:  # a provider named: its own format, here at the stand-in's address
        monkeypatch.setenv("AGENTKIT_PROVIDER", fmt)
    monkeypatch.setenv("AGENTKIT_BASE_URL", server.base_url(fmt))
    monkeypatch.setenv("AGENTKIT_MODEL", model)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    before = respond.requests[model]
    path = NOTEBOOKS / tutorial
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()

    outputs = json.dumps([c.get("outputs", []) for c in nb.cells], ensure_ascii=False)
    assert KEY not in outputs
    assert f"{server.base_url(fmt)}: {model} in {fmt} format" in outputs  # lab.describe names the endpoint
    assert respond.requests[model] > before  # the notebook's configured cells reached the stand-in
