"""Tutorial 11 on a learner's own model: it runs to the end on stand-ins unlike `sim-reasoner`.

Its budget, compaction, pause, replay and span experiments use a scripted model or the simulator's presets
by name (they need usage fixed by construction, a model that never stops, and reasoning state); Part 1's
last cell asks the configured model under a budget. No cell may raise, the call must reach the stand-in, and
the planted key must never appear in an output. Helpers: notebook_switch.py.
"""

from __future__ import annotations

import pytest
from learner_models import LEARNER_MODEL, SILENT_MODEL
from notebook_switch import run_on_stand_in


@pytest.mark.parametrize("model", [LEARNER_MODEL, SILENT_MODEL])
def test_tutorial_11_runs_to_the_end_on_another_model(model, stand_in, monkeypatch):
    outputs = run_on_stand_in("11_long_running_loops.ipynb", model, stand_in, monkeypatch)
    assert "model call(s), usage Usage(" in outputs
