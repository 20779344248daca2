"""Tutorial 03 on a learner's own model, in English, with a planted key: one run, every promise checked.

`@tool` and the three gates meet the configured model's calls, mistakes included, beside the simulator's
careless presets. The checks every tutorial's run passes: `tutorial_runs.EveryTutorialPromise`.
"""

from __future__ import annotations

from tutorial_runs import EveryTutorialPromise, Tutorial, tutorial_run

run = tutorial_run(Tutorial("03_tools_schemas_and_validation.ipynb"))


class TestTutorial03(EveryTutorialPromise):
    pass
