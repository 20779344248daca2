"""Tutorial 10 on a configured model that is not a reasoning model at all.

Its steps 1-7 talk to the embedded simulator whatever the environment says (they need three providers'
reasoning models and deliberately broken requests); step 8 asks the learner's own model. Here that model
is the `learner_models` stand-in that never calls a tool and returns no reasoning state: the notebook must
still run to the end, reach it, say so, and never print the planted key. Helpers: notebook_switch.py.
"""

from __future__ import annotations

from learner_models import SILENT_MODEL
from notebook_switch import run_on_stand_in


def test_tutorial_10_runs_to_the_end_on_a_model_that_answers_without_tools(stand_in, monkeypatch):
    outputs = run_on_stand_in("10_reasoning_models_in_the_loop.ipynb", SILENT_MODEL, stand_in, monkeypatch)
    assert f"{SILENT_MODEL} in openai-chat format: final_answer after 1 model call(s)" in outputs
    assert "reasoning state handed back: none" in outputs
