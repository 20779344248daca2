"""Tutorial 01 on a learner's own model, in English, with a planted key: one run, every promise checked.

Its raw-HTTP cells, the hand loop and `agentkit.run` all ask the configured model. Its runs start with one
tool per turn and with no tool, not with mistakes: the lesson's hand-written cells hand the model's
arguments straight to the Python function (what a tool call *is*, before any gate), so a call with another
tool's arguments stops them with a TypeError — tutorial 03 teaches the gates that catch it. The checks
every tutorial's run passes: `tutorial_runs.EveryTutorialPromise`.
"""

from __future__ import annotations

import pytest
from learner_models import NO_TOOL, ONE_TOOL_PER_TURN
from nbclient.exceptions import CellExecutionError
from tutorial_runs import EveryTutorialPromise, Tutorial, configure, execute, tutorial_run

TUTORIAL = Tutorial("01_the_loop_from_raw_calls.ipynb", starts=(ONE_TOOL_PER_TURN, NO_TOOL))
run = tutorial_run(TUTORIAL)


class TestTutorial01(EveryTutorialPromise):
    WAYS = {ONE_TOOL_PER_TURN, NO_TOOL}


def test_a_model_name_the_server_lacks_stops_at_the_first_request_with_the_servers_words(stand_in, monkeypatch):
    server, _ = stand_in
    configure(monkeypatch, server.base_url("openai-chat"), "no-such-model-7b")
    with pytest.raises(CellExecutionError) as failed:  # stops at its first request: a few cells, not the tutorial
        execute(TUTORIAL.notebook)
    message = str(failed.value)
    assert "HTTP 404" in message and "The model `no-such-model-7b` does not exist" in message
    assert "KeyError" not in message
