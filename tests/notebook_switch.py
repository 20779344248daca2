"""Running a tutorial the way a learner with their own model would: shared by test_notebook_provider_switch_*.

Each of those files points the environment at a stand-in endpoint (AGENTKIT_BASE_URL, AGENTKIT_MODEL,
sometimes AGENTKIT_PROVIDER, and a planted key), runs whole tutorials in a fresh kernel that inherits that
environment, and checks that no cell raised, that the configured cells reached the stand-in and that the key
never appears in an output. Outputs are not compared with the stored ones: another model answers differently.
The tutorials are split over several files so that `pytest -n 2 --dist loadfile` spreads them over workers.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from agentkit.providers import FORMATS, get_codec

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
KEY = "-".join(["sk", "switch", "test", "0123456789abcdef"])  # planted: must never be printed


def configure(monkeypatch, base_url: str, model: str, provider: str | None = None) -> None:
    """Set the environment as the README tells a learner to: a provider's format, or only a base URL."""
    if provider is None:  # an OpenAI-compatible server of your own (Ollama, vLLM, ...): the URL says it all
        monkeypatch.delenv("AGENTKIT_PROVIDER", raising=False)
    else:
        monkeypatch.setenv("AGENTKIT_PROVIDER", provider)
    monkeypatch.setenv("AGENTKIT_BASE_URL", base_url)
    monkeypatch.setenv("AGENTKIT_MODEL", model)
    for fmt in FORMATS:
        for variable in get_codec(fmt).API_KEY_ENVS:
            monkeypatch.setenv(variable, KEY)


def execute(name: str, timeout: int = 180) -> nbformat.NotebookNode:
    """Run a notebook top to bottom in a fresh kernel; raises CellExecutionError if any cell fails."""
    path = NOTEBOOKS / name
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


def outputs_of(nb: nbformat.NotebookNode) -> str:
    """Every output of the executed notebook as one string, to search for the key and the endpoint."""
    return json.dumps([cell.get("outputs", []) for cell in nb.cells], ensure_ascii=False)


def run_on_stand_in(tutorial: str, model: str, stand_in, monkeypatch, fmt: str = "openai-chat",
                    provider: str | None = None) -> str:
    """Run `tutorial` configured for `model` on the stand-in server, in `fmt` (named as AGENTKIT_PROVIDER when
    `provider` is given, else reached through the base URL alone); return the outputs, after checking that
    the notebook named the endpoint (lab.describe), that its calls reached it, and that the key never showed."""
    server, respond = stand_in
    configure(monkeypatch, server.base_url(fmt), model, provider)
    before = respond.requests[model]
    outputs = outputs_of(execute(tutorial))
    assert KEY not in outputs
    assert f"{server.base_url(fmt)}: {model} in {fmt} format" in outputs
    assert respond.requests[model] > before
    return outputs
