"""Tutorial 04 on a learner's own model, in English, with a planted key: one run, every promise checked.

AGENTKIT_PROVIDER=openai-chat names the format and AGENTKIT_BASE_URL the stand-in. The failure grid, the
strategies and the repairs: the cells that ask `model` meet a model unlike the one they were written
against, making mistakes the stored outputs never saw. The checks every tutorial's run passes:
`tutorial_runs.EveryTutorialPromise`.
"""

from __future__ import annotations

from tutorial_runs import EveryTutorialPromise, Tutorial, tutorial_run

run = tutorial_run(Tutorial("04_error_handling.ipynb", fmt="openai-chat", provider="openai-chat"))


class TestTutorial04(EveryTutorialPromise):
    pass
