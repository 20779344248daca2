"""Tutorial 08 on a learner's own model, in English, with a planted key: one run, every promise checked.

Steps 1-8 run on the simulator whatever the environment says (they need the oracle and reproducible
models); step 9 benchmarks the configured model on four cases, with the settings a learner gives a server
that answers one request at a time (AGENTKIT_BENCH_CONCURRENCY=1, AGENTKIT_TIMEOUT=300): one case after
the other, so every case asks for a call and its run makes a mistake, calls one tool or answers at once,
as its turn in the order says. The checks every tutorial's run passes: `tutorial_runs.EveryTutorialPromise`.
"""

from __future__ import annotations

import pytest
from tutorial_runs import EveryTutorialPromise, Tutorial, run_tutorial

TUTORIAL = Tutorial("08_benchmark_a_model.ipynb")


@pytest.fixture(scope="module")
def run(stand_in):
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("AGENTKIT_BENCH_CONCURRENCY", "1")
        monkeypatch.setenv("AGENTKIT_TIMEOUT", "300")
        return run_tutorial(TUTORIAL, stand_in)


class TestTutorial08(EveryTutorialPromise):
    def test_step_9_takes_its_concurrency_and_timeout_from_the_environment(self, run):
        assert "concurrency 1, timeout 300 s per attempt" in run.outputs
