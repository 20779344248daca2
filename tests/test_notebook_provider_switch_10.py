"""Tutorial 10 on a configured provider that is not a reasoning model at all.

Its steps 1-7 talk to the embedded simulator whatever the environment says (they need three providers'
reasoning models and deliberately broken requests); step 8 asks the learner's own model. Here that model
is a stand-in behind `AGENTKIT_BASE_URL`, on a separate simulator, that never calls a tool and returns
no reasoning state: the notebook must still run to the end and say so.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbclient import NotebookClient

import agentkit
from agentkit.types import ModelTurn

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "10_reasoning_models_in_the_loop.ipynb"


def test_tutorial_10_runs_to_the_end_on_a_model_that_answers_without_tools(monkeypatch):
    def never_calls_a_tool(request) -> ModelTurn:
        return ModelTurn("I cannot look that up.", usage=agentkit.Usage(5, 6))

    with agentkit.sim.serve(respond=never_calls_a_tool) as stand_in:
        monkeypatch.delenv("AGENTKIT_PROVIDER", raising=False)
        monkeypatch.setenv("AGENTKIT_BASE_URL", stand_in.base_url("openai-chat"))
        monkeypatch.setenv("AGENTKIT_MODEL", "local-model")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-stand-in")  # the stand-in, like the simulator, wants some key
        nb = nbformat.read(NOTEBOOK, as_version=4)
        client = NotebookClient(nb, timeout=120, kernel_name="python3",
                                resources={"metadata": {"path": str(NOTEBOOK.parent)}})
        client.execute()  # raises CellExecutionError if any cell fails

    outputs = json.dumps([c.get("outputs", []) for c in nb.cells], ensure_ascii=False)
    assert "openai-chat / local-model: final_answer after 1 model call(s)" in outputs
    assert "reasoning state handed back: none" in outputs
