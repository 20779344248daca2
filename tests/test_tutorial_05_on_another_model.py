"""Tutorial 05 on a learner's own model, in English, with a planted key: one run, every promise checked.

Most cells use a scripted model or the simulator on purpose; Part 4 asks the configured model, here in
Anthropic's format named by AGENTKIT_PROVIDER=anthropic. The checks every tutorial's run passes:
`tutorial_runs.EveryTutorialPromise`.
"""

from __future__ import annotations

from tutorial_runs import EveryTutorialPromise, Tutorial, tutorial_run

run = tutorial_run(Tutorial("05_parallel_tools.ipynb", fmt="anthropic", provider="anthropic"))


class TestTutorial05(EveryTutorialPromise):
    pass
