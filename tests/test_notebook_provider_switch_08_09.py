"""Tutorials 08 and 09 on a learner's own model: each runs to the end on stand-ins unlike `sim-reasoner`.

AGENTKIT_BASE_URL + AGENTKIT_MODEL point at the stand-in server of `learner_models`: "learner-7b" calls one
tool per turn with random ids and answers in English, "silent-7b" never calls a tool. Tutorial 08 runs its
steps 1-8 on the simulator whatever the environment says (they need the oracle and reproducible models) and
benchmarks the configured model in step 9; tutorial 09 asks the configured model in steps 3 and 5. No cell
may raise, the model calls must reach the stand-in, and the planted key must never appear in an output.
"""

from __future__ import annotations

import pytest
from learner_models import LEARNER_MODEL, SILENT_MODEL
from notebook_switch import run_on_stand_in


@pytest.mark.parametrize("model", [LEARNER_MODEL, SILENT_MODEL])
@pytest.mark.parametrize("tutorial", ["08_benchmark_a_model.ipynb", "09_tools_over_mcp.ipynb"])
def test_tutorial_runs_to_the_end_on_another_model(tutorial, model, stand_in, monkeypatch):
    run_on_stand_in(tutorial, model, stand_in, monkeypatch)  # no cell raises, the stand-in is reached, no key
