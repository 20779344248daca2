"""Tutorial 02 on a learner's own model, in English, with a planted key: one run, every promise checked.

One conversation goes through every format; only the configured one (openai-chat, by AGENTKIT_BASE_URL)
leaves the simulator. Its runs start with one tool per turn and with no tool, not with mistakes: its
step-1 cells run the model's calls by hand (`by_name[call.name](**call.arguments)`, the format lesson,
before any gate), so a call with another tool's arguments stops them with a TypeError. The checks every
tutorial's run passes: `tutorial_runs.EveryTutorialPromise`.
"""

from __future__ import annotations

from learner_models import NO_TOOL, ONE_TOOL_PER_TURN
from tutorial_runs import EveryTutorialPromise, Tutorial, tutorial_run

run = tutorial_run(Tutorial("02_provider_formats.ipynb", starts=(ONE_TOOL_PER_TURN, NO_TOOL)))


class TestTutorial02(EveryTutorialPromise):
    WAYS = {ONE_TOOL_PER_TURN, NO_TOOL}
