"""Tutorials 04 and 06 on the switch to a real provider, exercised without a real provider.

As in test_notebook_provider_switch.py: AGENTKIT_PROVIDER, a key and AGENTKIT_BASE_URL point at a *separate*
simulator process standing in for an OpenAI-compatible endpoint. The stand-in model is `sim-noisy-5`, which
makes mistakes the stored outputs never saw (wrong tools, missing fields, broken JSON), so the cells that ask
`model` meet a model unlike the one they were written against: no cell may fail, and the key must never appear
in an output. Outputs are not compared with the stored ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import agentkit

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


@pytest.mark.parametrize("name", ["04_error_handling.ipynb", "06_limits_and_stopping.ipynb"])
def test_tutorial_runs_against_a_configured_provider_that_behaves_differently(name, monkeypatch):
    key = "-".join(["sk", "switch", "test", "0123456789"])
    with agentkit.sim.serve() as stand_in:
        monkeypatch.setenv("AGENTKIT_PROVIDER", "openai-chat")
        monkeypatch.setenv("AGENTKIT_MODEL", "sim-noisy-5")
        monkeypatch.setenv("AGENTKIT_BASE_URL", stand_in.base_url("openai-chat"))
        monkeypatch.setenv("OPENAI_API_KEY", key)
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        client = NotebookClient(nb, timeout=180, kernel_name="python3",
                                resources={"metadata": {"path": str(NOTEBOOKS)}})
        client.execute()  # raises CellExecutionError if any cell fails

    outputs = json.dumps([c.get("outputs", []) for c in nb.cells], ensure_ascii=False)
    assert key not in outputs
    assert stand_in.url + "/v1: sim-noisy-5 in openai-chat format" in outputs  # the cells asked the stand-in
