"""The tutorials on a learner's own model: each runs to the end on stand-ins that are not `sim-reasoner`.

The README promises that a tutorial switches to a real provider or any OpenAI-compatible server with
AGENTKIT_BASE_URL + AGENTKIT_MODEL. Here that endpoint is a separate server (`learner_models`): one
model that calls one tool per turn with random ids and answers in English, one that never calls a tool,
both behind a server that answers an unknown model with a 404 and streams each tool call whole, as
Ollama's `/v1` does. Every tutorial must run top to bottom on each (no cell may raise), its model calls
must reach that server, and a planted key must never appear in an output. Outputs are not compared with
the stored ones: another model answers differently.

To cover a new tutorial, add its file name to TUTORIALS.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from learner_models import LEARNER_MODEL, SILENT_MODEL, serve_stand_in
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
TUTORIALS = [
    "01_the_loop_from_raw_calls.ipynb",
    "02_provider_formats.ipynb",
    "03_tools_schemas_and_validation.ipynb",
]
KEY = "-".join(["sk", "switch", "test", "0123456789abcdef"])  # planted: must never be printed


@pytest.fixture(scope="module")
def stand_in():
    server, respond = serve_stand_in()
    yield server, respond
    server.stop()


def execute(name: str) -> nbformat.NotebookNode:
    """Run a notebook the way JupyterLab would: a fresh kernel that inherits this process's environment."""
    path = NOTEBOOKS / name
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


def point_at(monkeypatch, server, model: str) -> None:
    monkeypatch.delenv("AGENTKIT_PROVIDER", raising=False)
    monkeypatch.setenv("AGENTKIT_BASE_URL", server.base_url("openai-chat"))
    monkeypatch.setenv("AGENTKIT_MODEL", model)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


@pytest.mark.parametrize("model", [LEARNER_MODEL, SILENT_MODEL])
@pytest.mark.parametrize("tutorial", TUTORIALS)
def test_tutorial_runs_to_the_end_on_another_model(tutorial, model, stand_in, monkeypatch):
    server, respond = stand_in
    point_at(monkeypatch, server, model)
    before = respond.requests[model]
    nb = execute(tutorial)  # raises CellExecutionError if any cell fails

    outputs = json.dumps([c.get("outputs", []) for c in nb.cells], ensure_ascii=False)
    assert KEY not in outputs
    assert f"{server.url}/v1: {model} in openai-chat format" in outputs  # lab.describe names the endpoint
    assert respond.requests[model] > before  # the notebook's model calls reached the stand-in


def test_a_model_name_the_server_lacks_stops_at_the_first_request_with_the_servers_words(stand_in, monkeypatch):
    server, _ = stand_in
    point_at(monkeypatch, server, "no-such-model-7b")
    with pytest.raises(CellExecutionError) as failed:
        execute(TUTORIALS[0])
    message = str(failed.value)
    assert "HTTP 404" in message and "The model `no-such-model-7b` does not exist" in message
    assert "KeyError" not in message
