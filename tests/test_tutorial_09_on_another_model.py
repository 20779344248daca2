"""Tutorial 09 on a learner's own model, in English, with a planted key: one run, every promise checked.

MCP servers' tools in the loop, asked of the configured model in steps 3 and 5. The checks every
tutorial's run passes: `tutorial_runs.EveryTutorialPromise`.
"""

from __future__ import annotations

from tutorial_runs import EveryTutorialPromise, Tutorial, tutorial_run

run = tutorial_run(Tutorial("09_tools_over_mcp.ipynb"))


class TestTutorial09(EveryTutorialPromise):
    pass
