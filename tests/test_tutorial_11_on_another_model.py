"""Tutorial 11 on a learner's own model, in English, with a planted key: one run, every promise checked.

Its budget, compaction, pause, replay and span experiments use a scripted model or the simulator's presets
by name (they need usage fixed by construction, a model that never stops, and reasoning state); Part 1's
last cell asks the configured model under a budget. That is its only run: it starts with a mistake, then
one corrected call, then the answer, so it meets every way but a run that begins without a tool call. The
checks every tutorial's run passes: `tutorial_runs.EveryTutorialPromise`.
"""

from __future__ import annotations

from learner_models import MISTAKES, ONE_TOOL_PER_TURN
from tutorial_runs import EveryTutorialPromise, Tutorial, tutorial_run

run = tutorial_run(Tutorial("11_long_running_loops.ipynb"))


class TestTutorial11(EveryTutorialPromise):
    WAYS = {MISTAKES, ONE_TOOL_PER_TURN}

    def test_part_1_reports_the_configured_models_run_under_its_budget(self, run):
        assert "model call(s), usage Usage(" in run.outputs
