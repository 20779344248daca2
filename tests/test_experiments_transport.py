"""agentkit.experiments.transport: every fault of tutorial 07 met by a retry, a fallback or a typed error,
against a simulator of the test's own (the outcomes, never the seconds, are asserted)."""

from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")

from agentkit.core.errors import (BadResponseError, ProviderConnectionError, ProviderTimeout, RateLimitError,  # noqa: E402
                                  ServerError, SpendLimitError)
from agentkit.experiments import transport  # noqa: E402
from agentkit.providers import FORMATS  # noqa: E402

FAST = {"backoff": 0.001}  # retries wait a millisecond: the waits are not what is tested here


#: The first attempt's outcome for each fault, in the anthropic format.
FIRST = {"429": 429, "spend": 429, "500": 500, "503": 503, "529": 529, "timeout": "timeout",
         "drop": "RemoteProtocolError", "truncate": "RemoteProtocolError", "badjson": "invalid_json",
         "cut": "RemoteProtocolError", "instream": 529}


def test_the_catalogue_meets_every_fault_once_with_a_retry_and_the_timeout_with_the_fallback(server):
    met = {m.fault: m for m in transport.catalogue("anthropic", server=server, **FAST)}
    assert list(met) == list(transport.FAULTS) == list(FIRST)
    for name, m in met.items():
        if name == "spend":  # final: one attempt, no retry, no fallback, the typed error
            assert isinstance(m.error, SpendLimitError) and m.path == "429" and m.answered_by is None
            assert m.how == "a typed error: SpendLimitError"
            continue
        assert m.error is None and m.attempts[0].outcome == FIRST[name] and m.attempts[-1].ok, name
        if name == "timeout":  # a slow model is slow every time: the retries time out too
            assert m.path == "timeout ×3 → 200 (sim-reasoner)" and m.how == "the fallback: sim-reasoner"
        else:
            assert m.path == f"{FIRST[name]} → 200" and m.how == "a retry" and m.answered_by == m.model


def test_a_429_waits_what_the_server_said(server):
    met = transport.meet("429", server=server)
    assert [a.wait for a in met.attempts] == [0.0, 0.1]  # the simulator's retry-after-ms: 100


@pytest.mark.parametrize("fault, error", [("429", RateLimitError), ("500", ServerError),
                                          ("drop", ProviderConnectionError), ("badjson", BadResponseError),
                                          ("timeout", ProviderTimeout)])
def test_a_lasting_fault_with_nowhere_to_go_is_a_typed_error_after_every_retry(server, fault, error):
    met = transport.meet(fault, lasting=True, max_retries=1, server=server, **FAST)
    assert isinstance(met.error, error) and met.answered_by is None
    assert met.how == f"a typed error: {error.__name__}" and len(met.attempts) == 2
    assert met.error.attempts == [(met.model, a.outcome) for a in met.attempts]


def test_the_fallback_list_is_tried_in_priority_order(server):
    met = transport.meet("503", lasting=True, fallback=["sim-reasoner-500", "sim-reasoner"], server=server, **FAST)
    assert [a.model for a in met.attempts] == ["sim-reasoner-503"] * 3 + ["sim-reasoner-500"] * 3 + ["sim-reasoner"]
    assert met.path == "503 ×3 → 500 ×3 (sim-reasoner-500) → 200 (sim-reasoner)"
    assert met.how == "the fallback: sim-reasoner"


def test_openrouter_falls_back_on_its_side_in_one_attempt(server):
    met = transport.meet("503", format="openrouter", lasting=True, fallback=["sim-reasoner-500", "sim-reasoner"],
                         server=server)
    assert met.path == "200" and met.answered_by == "sim-reasoner" and met.how == "the fallback: sim-reasoner"


def test_a_retry_after_longer_than_max_retry_wait_falls_over_at_once(server):
    met = transport.meet("429", lasting=True, max_retry_wait=0.01, fallback=["sim-reasoner"], server=server)
    assert met.path == "429 → 200 (sim-reasoner)" and [a.wait for a in met.attempts] == [0.0, 0.0]


def test_a_lasting_in_stream_error_falls_back_while_streaming(server):
    met = transport.meet("instream", format="anthropic", lasting=True, fallback=["sim-reasoner"], max_retries=1,
                         server=server, **FAST)
    assert met.path == "529 ×2 → 200 (sim-reasoner)"


#: Where each format's in-stream error shows in the raw body of a 200 stream.
IN_STREAM = {"anthropic": ["event: error", '"overloaded_error"'], "openai-chat": ['data: {"error":'],
             "openai-responses": ["event: error", '"type":"error"'], "gemini": ['"status": "UNAVAILABLE"'],
             "openrouter": ['"finish_reason":"error"'], "ollama": ['{"error":']}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_the_raw_stream_carries_the_providers_own_error_after_a_200(server, fmt):
    status, tail = transport.raw_stream_tail(fmt, server=server)
    assert status == 200
    assert all(marker in tail for marker in IN_STREAM[fmt]), tail


def test_an_unknown_fault_is_refused_with_the_choices(server):
    with pytest.raises(ValueError, match="choose one of 429, spend, 500"):
        transport.meet("418", server=server)


def test_the_playground_draws_the_attempts_of_one_call(server, monkeypatch):
    monkeypatch.setattr(transport.sim, "shared", lambda: server)
    fig = transport.playground(fault="503", format="openai-chat", lasting=True, fallback=True, max_retries=1)
    (ax,) = fig.axes
    assert ax.get_title() == "met by the fallback: sim-reasoner: 503 ×2 → 200 (sim-reasoner)"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["503 lasting (openai-chat)"]
