"""The simulator's rule log: each request is checked against the fidelity ledger's rules, and what each
check found (passed, refused, degraded) is kept per request, so a conformance check can say which rules a
client's loop keeps and which it breaks, also when one request breaks two (the answer names the first)."""

from __future__ import annotations

import httpx
import pytest

from agentkit.sim.fidelity import ledger
from agentkit.sim.wire.common import Finding, RequestInvalid, breaks, holds, rule_log

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
ASK = {"role": "user", "content": "Weather in Paris and in Tokyo?"}
PAIRING = {"openai-chat.tool_calls_unanswered", "openai-chat.tool_without_call"}
CALLS = [{"id": f"call_{x}", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
         for x in "AB"]


def chat(server, client, model: str, messages: list) -> httpx.Response:
    return client.post(server.base_url("openai-chat") + "/chat/completions",
                       json={"model": model, "messages": messages, "tools": TOOLS})


@pytest.fixture
def client():
    with httpx.Client(timeout=10) as c:
        yield c


def findings_of(server, model: str) -> list[Finding]:
    (log,) = [log for log in server.rule_logs() if log.model == model]
    return list(log.findings)


def test_a_well_paired_history_passes_both_pairing_rules(server, client):
    answered = [ASK, {"role": "assistant", "content": None, "tool_calls": CALLS},
                *({"role": "tool", "tool_call_id": c["id"], "content": "sunny"} for c in CALLS)]
    assert chat(server, client, "rule-log-paired", answered).status_code == 200
    outcomes = {(f.rule, f.outcome) for f in findings_of(server, "rule-log-paired") if f.rule in PAIRING}
    assert outcomes == {("openai-chat.tool_calls_unanswered", "passed"), ("openai-chat.tool_without_call", "passed")}


def test_a_request_that_breaks_two_rules_has_both_recorded_and_the_first_answered(server, client):
    broken = [ASK, {"role": "tool", "tool_call_id": "call_X", "content": "orphan"},
              {"role": "assistant", "content": None, "tool_calls": CALLS}]
    r = chat(server, client, "rule-log-two", broken)
    assert r.status_code == 400
    assert r.json()["error"]["message"].startswith("Invalid parameter: messages with role 'tool'")
    refused = [f for f in findings_of(server, "rule-log-two") if f.outcome == "refused"]
    assert [f.rule for f in refused] == ["openai-chat.tool_without_call", "openai-chat.tool_calls_unanswered"]
    assert [f.message_index for f in refused] == [1, 2]  # where in the conversation each happened


def test_a_request_without_tool_traffic_does_not_exercise_the_pairing_rules(server, client):
    assert chat(server, client, "rule-log-none", [ASK]).status_code == 200
    assert not [f for f in findings_of(server, "rule-log-none") if f.rule in PAIRING]


def test_every_rule_id_a_finding_names_is_in_the_ledger(server, client):
    chat(server, client, "rule-log-ids", [ASK, {"role": "tool", "tool_call_id": "x", "content": "?"}])
    assert {f.rule for f in findings_of(server, "rule-log-ids")} <= set(ledger())


def test_outside_a_rule_log_a_break_is_raised_at_once_and_a_pass_is_not_kept():
    with pytest.raises(RequestInvalid, match="first"):
        breaks(RequestInvalid("first", rule="x.first"))
    holds("x.ok")  # nothing to record into: no error either
    with rule_log() as log:
        breaks(RequestInvalid("first", rule="x.first"))
        breaks(RequestInvalid("second", rule="x.second"))
        holds("x.ok")
    assert log.first_refusal().message == "first"
    assert [(f.rule, f.outcome) for f in log.findings] == [("x.first", "refused"), ("x.second", "refused"),
                                                          ("x.ok", "passed")]
