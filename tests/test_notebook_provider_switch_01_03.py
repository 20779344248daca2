"""Tutorials 01-03 on a learner's own model: each runs to the end on stand-ins that are not `sim-reasoner`.

The README promises that a tutorial switches to a real provider or any OpenAI-compatible server with
AGENTKIT_BASE_URL + AGENTKIT_MODEL. Here that endpoint is a separate server (`learner_models`): one model
that calls one tool per turn with random ids and answers in English, one that never calls a tool, both
behind a server that answers an unknown model with a 404 and streams each tool call whole, as Ollama's
`/v1` does. The other tutorials are in test_notebook_provider_switch_*.py; the helpers in notebook_switch.py.
"""

from __future__ import annotations

import pytest
from learner_models import LEARNER_MODEL, SILENT_MODEL
from nbclient.exceptions import CellExecutionError
from notebook_switch import configure, execute, run_on_stand_in

TUTORIALS = ["01_the_loop_from_raw_calls.ipynb", "02_provider_formats.ipynb",
             "03_tools_schemas_and_validation.ipynb"]


@pytest.mark.parametrize("model", [LEARNER_MODEL, SILENT_MODEL])
@pytest.mark.parametrize("tutorial", TUTORIALS)
def test_tutorial_runs_to_the_end_on_another_model(tutorial, model, stand_in, monkeypatch):
    run_on_stand_in(tutorial, model, stand_in, monkeypatch)  # no cell raises, the stand-in is reached, no key


def test_a_model_name_the_server_lacks_stops_at_the_first_request_with_the_servers_words(stand_in, monkeypatch):
    server, _ = stand_in
    configure(monkeypatch, server.base_url("openai-chat"), "no-such-model-7b")
    with pytest.raises(CellExecutionError) as failed:
        execute(TUTORIALS[0])
    message = str(failed.value)
    assert "HTTP 404" in message and "The model `no-such-model-7b` does not exist" in message
    assert "KeyError" not in message
