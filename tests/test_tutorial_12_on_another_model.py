"""Tutorial 12 on a learner's own model, in English, with a planted key: one run, every promise checked.

Its benchmark runs use the simulator's oracle, reasoner and noisy preset by name (scores by construction,
so the lessons hold whatever model is configured); Step 6 plays a BFCL multi-turn case on the configured
model, each user turn a run. The checks every tutorial's run passes: `tutorial_runs.EveryTutorialPromise`.
"""

from __future__ import annotations

from learner_models import LEARNER_MODEL
from tutorial_runs import EveryTutorialPromise, Tutorial, tutorial_run

run = tutorial_run(Tutorial("12_benchmark_agent_loops.ipynb"))


class TestTutorial12(EveryTutorialPromise):
    def test_step_6_plays_the_case_on_the_configured_model_and_scores_it(self, run):
        assert "playing multi_turn_base_11 on " in run.outputs
        assert f"measured (your model, {LEARNER_MODEL})" in run.outputs
        assert "model calls" in run.outputs and "tool calls: Verdict(" in run.outputs
