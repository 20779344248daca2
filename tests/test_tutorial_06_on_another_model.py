"""Tutorial 06 on a learner's own model, in English, with a planted key: one run, every promise checked.

AGENTKIT_PROVIDER=openai-chat names the format and AGENTKIT_BASE_URL the stand-in. Limits and stop
reasons: the `sim-*` rows are presets by construction, the rows of `model` ask the configured model. The
checks every tutorial's run passes: `tutorial_runs.EveryTutorialPromise`.
"""

from __future__ import annotations

from tutorial_runs import EveryTutorialPromise, Tutorial, tutorial_run

run = tutorial_run(Tutorial("06_limits_and_stopping.ipynb", fmt="openai-chat", provider="openai-chat"))


class TestTutorial06(EveryTutorialPromise):
    pass
