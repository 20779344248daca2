"""Tutorial 10 on a learner's own model, in English, with a planted key: one run, every promise checked.

Steps 1-7 talk to the simulator's reasoning models whatever the environment says (they need three
providers' reasoning models and deliberately broken requests); step 8 asks the configured model, here one
that is no reasoning model at all and answers without calling a tool (its only run). The checks every
tutorial's run passes: `tutorial_runs.EveryTutorialPromise`.
"""

from __future__ import annotations

from learner_models import LEARNER_MODEL, NO_TOOL
from tutorial_runs import EveryTutorialPromise, Tutorial, tutorial_run

run = tutorial_run(Tutorial("10_reasoning_models_in_the_loop.ipynb", starts=(NO_TOOL,)))


class TestTutorial10(EveryTutorialPromise):
    WAYS = {NO_TOOL}

    def test_step_8_says_what_the_configured_model_did_and_that_it_handed_back_no_reasoning_state(self, run):
        assert f"{LEARNER_MODEL} in openai-chat format: final_answer after 1 model call(s)" in run.outputs
        assert "reasoning state handed back: none" in run.outputs
