"""Tutorials 04 and 06 on a configured provider that behaves differently from `sim-reasoner`.

AGENTKIT_PROVIDER, a key and AGENTKIT_BASE_URL point at a *separate* simulator process standing in for an
OpenAI-compatible endpoint. The stand-in model is `sim-noisy-5`, which makes mistakes the stored outputs
never saw (wrong tools, missing fields, broken JSON), so the cells that ask `model` meet a model unlike the
one they were written against: no cell may fail, the cells must reach the stand-in, and the key must never
appear in an output. Helpers: notebook_switch.py.
"""

from __future__ import annotations

import pytest
from notebook_switch import KEY, configure, execute, outputs_of

import agentkit


@pytest.mark.parametrize("name", ["04_error_handling.ipynb", "06_limits_and_stopping.ipynb"])
def test_tutorial_runs_against_a_configured_provider_that_behaves_differently(name, monkeypatch):
    with agentkit.sim.serve() as stand_in:
        configure(monkeypatch, stand_in.base_url("openai-chat"), "sim-noisy-5", provider="openai-chat")
        outputs = outputs_of(execute(name))

    assert KEY not in outputs
    assert stand_in.url + "/v1: sim-noisy-5 in openai-chat format" in outputs  # the cells asked the stand-in
