"""Tutorial 08 on a learner's own model, in English, with a planted key: one run, every promise checked.

Steps 1-8 run on the simulator whatever the environment says (they need the oracle and reproducible
models); step 9 benchmarks the configured model on four cases, two at a time. Which case's run starts in
which way then hangs on their order of arrival, but not the ways met: every case asks for a call, so its
run makes a mistake, calls one tool or answers at once, as its turn in the order says. The checks every
tutorial's run passes: `tutorial_runs.EveryTutorialPromise`.
"""

from __future__ import annotations

from tutorial_runs import EveryTutorialPromise, Tutorial, tutorial_run

run = tutorial_run(Tutorial("08_benchmark_a_model.ipynb"))


class TestTutorial08(EveryTutorialPromise):
    pass
