"""Tutorial 07 on a learner's own model, in English, with a planted key: one run, every promise checked.

The transport faults play on the simulator; the last run asks the configured model (with `max_retries=2`).
That is its only run, so it meets one way: a model that answers without calling a tool. The checks every
tutorial's run passes: `tutorial_runs.EveryTutorialPromise`.
"""

from __future__ import annotations

from learner_models import NO_TOOL
from tutorial_runs import EveryTutorialPromise, Tutorial, tutorial_run

run = tutorial_run(Tutorial("07_transport_faults_and_fallbacks.ipynb", starts=(NO_TOOL,)))


class TestTutorial07(EveryTutorialPromise):
    WAYS = {NO_TOOL}
