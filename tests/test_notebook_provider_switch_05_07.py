"""Tutorials 05 and 07 on a learner's own model: each runs to the end on stand-ins that are not `sim-reasoner`.

The configured endpoint is the stand-in server of `learner_models`, whose models call one tool per turn
with random ids, or never call a tool. Most cells of 05 and 07 use a scripted model or the simulator on
purpose; the ones that talk to the configured model (05's Part 4, 07's last run) must reach the stand-in —
in the format configured, Anthropic through AGENTKIT_PROVIDER or OpenAI Chat through AGENTKIT_BASE_URL
alone — no cell may raise, and the planted key must never appear in an output. Helpers: notebook_switch.py.
"""

from __future__ import annotations

import pytest
from learner_models import LEARNER_MODEL, SILENT_MODEL
from notebook_switch import run_on_stand_in


# Two runs (each tutorial takes seconds): between them, both stand-ins and both ways of configuring.
@pytest.mark.parametrize(("tutorial", "fmt", "model"), [
    ("05_parallel_tools.ipynb", "anthropic", LEARNER_MODEL),
    ("07_transport_faults_and_fallbacks.ipynb", "openai-chat", SILENT_MODEL),
])
def test_tutorial_runs_to_the_end_on_another_model(tutorial, fmt, model, stand_in, monkeypatch):
    run_on_stand_in(tutorial, model, stand_in, monkeypatch, fmt, provider=None if fmt == "openai-chat" else fmt)
