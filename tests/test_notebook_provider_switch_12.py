"""Tutorial 12 on a learner's own model: it runs to the end on stand-ins unlike `sim-reasoner`.

Its benchmark runs use the simulator's oracle, reasoner and noisy preset by name (scores by construction, so the
lessons hold whatever model is configured); Step 6 plays a BFCL multi-turn case on the configured model. No cell
may raise, that call must reach the stand-in, and the planted key must never appear in an output. Helpers:
notebook_switch.py.
"""

from __future__ import annotations

import pytest
from learner_models import LEARNER_MODEL, SILENT_MODEL
from notebook_switch import run_on_stand_in


@pytest.mark.parametrize("model", [LEARNER_MODEL, SILENT_MODEL])
def test_tutorial_12_runs_to_the_end_on_another_model(model, stand_in, monkeypatch):
    outputs = run_on_stand_in("12_benchmark_agent_loops.ipynb", model, stand_in, monkeypatch)
    assert "playing multi_turn_base_11 on " in outputs and f"measured (your model, {model})" in outputs
    assert "model calls" in outputs and "tool calls: Verdict(" in outputs
