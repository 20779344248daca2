"""Tutorial 13 on a learner's own model, in English, with a planted key: one run, every promise checked.

Parts 1-9 run the conformance check, which always plays its scenarios on the simulator (a scenario makes the
model fail on cue); Part 10 sends the fixed loop to the configured model, its only run there, which the
stand-in starts with mistakes (arguments that are not JSON, a call more than the question needs): the raw loop
answers them as failed calls and goes on to the answer. The checks
every tutorial's run passes: `tutorial_runs.EveryTutorialPromise`.
"""

from __future__ import annotations

from learner_models import MISTAKES
from tutorial_runs import EveryTutorialPromise, Tutorial, tutorial_run

run = tutorial_run(Tutorial("13_does_your_loop_survive_the_real_apis.ipynb"))


class TestTutorial13(EveryTutorialPromise):
    WAYS = {MISTAKES}

    def test_the_check_ran_on_the_simulator_whatever_the_learner_configured(self, run):
        assert "exit code 1" in run.outputs and "exit code 0" in run.outputs
        assert "openai-chat.tool_without_call" in run.outputs
        assert "openrouter.reasoning_details_dropped" in run.outputs

    def test_part_10_asked_the_configured_model_and_printed_its_answer(self, run):
        assert "answer: " in run.outputs
