"""The tutorials' switch to a real provider, exercised without a real provider.

`AGENTKIT_PROVIDER`, a key and `AGENTKIT_BASE_URL` pointed at a *separate* simulator process stand in for
a real OpenAI-compatible endpoint: tutorial 01 must run top to bottom on that code path (the same one a
paid run takes), its model calls must reach that endpoint, and the key must never appear in an output.
Outputs are not compared with the stored ones: a real model answers differently.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbclient import NotebookClient

import agentkit

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "01_the_loop_from_raw_calls.ipynb"


def test_tutorial_01_runs_against_a_configured_provider(monkeypatch):
    key = "-".join(["sk", "switch", "test", "0123456789"])
    with agentkit.sim.serve() as stand_in:
        monkeypatch.setenv("AGENTKIT_PROVIDER", "openai-chat")
        monkeypatch.setenv("AGENTKIT_MODEL", "gpt-4.1")
        monkeypatch.setenv("AGENTKIT_BASE_URL", stand_in.base_url("openai-chat"))
        monkeypatch.setenv("OPENAI_API_KEY", key)
        nb = nbformat.read(NOTEBOOK, as_version=4)
        # the kernel inherits this process's environment, as a kernel started from JupyterLab would
        client = NotebookClient(nb, timeout=120, kernel_name="python3",
                                resources={"metadata": {"path": str(NOTEBOOK.parent)}})
        client.execute()  # raises CellExecutionError if any cell fails

    outputs = json.dumps([c.get("outputs", []) for c in nb.cells], ensure_ascii=False)
    assert key not in outputs
    assert stand_in.url + "/v1: gpt-4.1 in openai-chat format" in outputs  # describe() names the endpoint
