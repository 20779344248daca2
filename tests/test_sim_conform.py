"""The conformance scenarios on the simulator's side: the kit's own loop (`agentkit.run` through `HTTPModel`) plays
every scenario in every format to its end with every rule it exercises passed, and a loop broken on purpose, one
rule class at a time, is logged with exactly that rule, at that request.

A broken loop here is the kit's loop with its request bodies changed on the way out (`Rewriting`, an httpx
transport): the same mistake a hand-written loop makes, at the same place in the conversation.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

import agentkit
from agentkit import tool
from agentkit.core.errors import ModelCallError
from agentkit.http.model import HTTPModel
from agentkit.providers import FORMATS
from agentkit.sim.conform import SCRIPTS, model_for, rules_of, scenario_of
from agentkit.sim.fidelity import ledger

PROMPT = "Weather in Paris and the time in Tokyo?"


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


@tool
def get_time(zone: str) -> str:
    """Current time in a time zone."""
    return f"12:00 in {zone}"


TOOLS = [get_weather, get_time]
#: The scenarios whose model ends the run with an error on purpose: the loop must stop there, not retry.
ENDS_IN_ERROR = {"spend-limit", "model-refuses-tools"}
PLAYS = [(fmt, scenario) for fmt in FORMATS for scenario in SCRIPTS if model_for(fmt, scenario)]


class Rewriting(httpx.HTTPTransport):
    """An httpx transport that changes each JSON request body on its way out: a loop with one bug."""

    def __init__(self, change: Callable[[dict], None]):
        super().__init__()
        self.change = change

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.content:
            body = json.loads(request.content)
            self.change(body)
            headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
            request = httpx.Request("POST", request.url, headers=headers, content=json.dumps(body).encode())
        return super().handle_request(request)


def play(server, fmt: str, scenario: str, change: Callable[[dict], None] | None = None, **settings):
    """Run the kit's loop on `scenario` in `fmt`; (the Run or the error it ended with, the requests' logs)."""
    server.reset()
    before = server.rule_logs()[-1].number if server.rule_logs() else 0
    model = HTTPModel(model_for(fmt, scenario), fmt, base_url=server.base_url(fmt), api_key="k", backoff=0.0,
                      max_delay=0.0, transport=Rewriting(change) if change else None)
    try:
        outcome = agentkit.run(model, PROMPT, TOOLS, **settings)
    except ModelCallError as exc:
        outcome = exc
    return outcome, server.rule_logs(after=before)


def not_passed(logs) -> list[tuple[int, str, str]]:
    """(request index, rule, outcome) of every finding that did not pass, the first request being 1."""
    return [(i, f.rule, f.outcome) for i, log in enumerate(logs, 1) for f in log.findings if f.outcome != "passed"]


@pytest.mark.parametrize(("fmt", "scenario"), PLAYS, ids=[f"{f}-{s}" for f, s in PLAYS])
def test_the_kits_loop_plays_every_scenario_with_every_rule_passed(server, fmt, scenario):
    outcome, logs = play(server, fmt, scenario, stream=scenario == "stream")
    assert logs and all(log.scenario == scenario and log.format == fmt for log in logs)
    if scenario in ENDS_IN_ERROR:
        assert isinstance(outcome, ModelCallError)
        assert [(rule, outcome) for _, rule, outcome in not_passed(logs)] == [(rules_of(fmt, scenario)[0],
                                                                               "answered")]
    else:
        assert not isinstance(outcome, Exception), outcome
        assert outcome.stop_reason == "final_answer" and "Here is what I found" in str(outcome.output)
        assert {o for _, _, o in not_passed(logs)} <= {"answered"}  # only the errors the scenario plays
    exercised = {f.rule for log in logs for f in log.findings}
    assert set(rules_of(fmt, scenario)) <= exercised
    assert exercised <= set(ledger())


def test_each_scenario_names_the_rules_it_exercises_and_they_are_ledger_rules():
    for fmt, scenario in PLAYS:
        assert set(rules_of(fmt, scenario)) <= set(ledger()), (fmt, scenario)
    assert rules_of("anthropic", "parallel")
    assert model_for("gemini", "spend-limit") is None  # no spend limit of its own to play
    assert scenario_of(model_for("ollama", "model-refuses-tools")) == "model-refuses-tools"
    assert scenario_of("claude-opus-5-5") is None and scenario_of("conform-no-such-scenario") is None


def test_a_scenario_plays_on_whatever_tools_the_client_declares(server):
    @tool
    def lookup_order(order_id: int, region: str = "eu") -> str:
        """Look an order up."""
        return f"order {order_id} shipped"

    model = HTTPModel(model_for("anthropic", "sequential"), "anthropic", base_url=server.base_url("anthropic"),
                      api_key="k")
    run = agentkit.run(model, "Where are my orders?", [lookup_order])
    calls = [c for m in run.messages if m.role == "assistant" for c in m.tool_calls]
    assert [c.name for c in calls] == ["lookup_order"] * 3
    args = [c.arguments_object() for c in calls]
    assert all(isinstance(a["order_id"], int) for a in args)  # every required argument filled, of its type
    assert [a["region"] for a in args] == ["item#1", "item#11", "item#21"]  # one free string marks the step


# -- a loop broken on purpose, one rule class at a time --------------------------------------------------

def drop_last_result(body: dict) -> None:
    results = [i for i, m in enumerate(body.get("messages", [])) if m.get("role") == "tool"]
    if results:
        del body["messages"][results[-1]]


def results_after_text(body: dict) -> None:
    for m in body.get("messages", []):
        if m["role"] == "user" and isinstance(m["content"], list) and any(
                c.get("type") == "tool_result" for c in m["content"]):
            m["content"].insert(0, {"type": "text", "text": "Here are the results."})


def drop_thinking(body: dict) -> None:
    for m in body.get("messages", []):
        if m["role"] == "assistant" and isinstance(m["content"], list):
            m["content"] = [c for c in m["content"] if c.get("type") not in ("thinking", "redacted_thinking")]


def drop_reasoning_items(body: dict) -> None:
    if isinstance(body.get("input"), list):
        body["input"] = [item for item in body["input"] if item.get("type") != "reasoning"]


def drop_phase(body: dict) -> None:
    for item in body.get("input") if isinstance(body.get("input"), list) else ():
        item.pop("phase", None)


def drop_later_signatures(body: dict) -> None:
    """The signature of every step after the first lost (a loop that keeps only the first one it saw)."""
    steps = [c for c in body.get("contents", []) if any("functionCall" in p for p in c.get("parts", []))]
    for step in steps[1:]:
        for part in step["parts"]:
            part.pop("thoughtSignature", None)


def drop_reasoning_details(body: dict) -> None:
    for m in body.get("messages", []):
        m.pop("reasoning_details", None)
        m.pop("reasoning", None)


def reorder_results(body: dict) -> None:
    messages = body.get("messages", [])
    results = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    if len(results) > 1:
        picked = [messages[i] for i in results]
        for i, m in zip(results, reversed(picked)):
            messages[i] = m


BROKEN = [  # format, scenario, the bug, the rule it breaks, its outcome, the request it happens at
    ("openai-chat", "parallel", drop_last_result, "openai-chat.tool_calls_unanswered", "refused", 2),
    ("openrouter", "parallel", drop_last_result, "openai-chat.tool_calls_unanswered", "refused", 2),
    ("anthropic", "parallel", results_after_text, "anthropic.tool_results_first", "refused", 2),
    ("anthropic", "parallel", drop_thinking, "anthropic.thinking_missing_in_open_cycle", "refused", 2),
    ("openai-responses", "parallel", drop_reasoning_items, "openai-responses.call_without_reasoning", "refused", 2),
    ("openai-responses", "parallel", drop_phase, "openai-responses.phase_dropped", "degraded", 2),
    ("gemini", "sequential", drop_later_signatures, "gemini.missing_thought_signature", "refused", 3),
    ("openrouter", "reasoning", drop_reasoning_details, "openrouter.reasoning_details_dropped", "degraded", 2),
    ("ollama", "parallel", reorder_results, "ollama.results_out_of_order", "degraded", 2),
]


@pytest.mark.parametrize(("fmt", "scenario", "bug", "rule", "outcome", "at"), BROKEN,
                         ids=[f"{b[0]}-{b[2].__name__}" for b in BROKEN])
def test_a_loop_broken_on_purpose_is_logged_with_exactly_that_rule(server, fmt, scenario, bug, rule, outcome, at):
    _, logs = play(server, fmt, scenario, bug)
    found = not_passed(logs)
    assert found and {r for _, r, _ in found} == {rule}
    assert found[0] == (at, rule, outcome)


def test_a_loop_that_retries_a_spend_limit_is_refused_on_the_retry(server):
    """The kit's loop stops at a spend limit ("answered"); a loop that sends the request again breaks its rule."""
    server.reset()
    before = server.rule_logs()[-1].number if server.rule_logs() else 0
    url = server.base_url("anthropic") + "/messages"
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    body = {"model": model_for("anthropic", "spend-limit"), "max_tokens": 2048, "messages": [
        {"role": "user", "content": PROMPT}], "tools": [{"name": "get_weather", "input_schema": {
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]}
    with httpx.Client(timeout=10) as client:
        first = client.post(url, json=body, headers=headers).json()
        results = [{"type": "tool_result", "tool_use_id": b["id"], "content": "sunny"}
                   for b in first["content"] if b["type"] == "tool_use"]
        body["messages"] += [{"role": "assistant", "content": first["content"]}, {"role": "user", "content": results}]
        statuses = [client.post(url, json=body, headers=headers).status_code for _ in range(2)]
    assert statuses == [429, 429]
    assert not_passed(server.rule_logs(after=before)) == [(2, "anthropic.spend_limit", "answered"),
                                                          (3, "anthropic.spend_limit", "refused")]


def test_a_report_reads_each_request_as_records(server):
    _, logs = play(server, "anthropic", "parallel", results_after_text)
    (record,) = [r for r in logs[1].records(2) if r["outcome"] != "passed"]
    assert record["format"] == "anthropic" and record["scenario"] == "parallel" and record["request"] == 2
    assert record["rule"] == "anthropic.tool_results_first" and record["message_index"] == 2
    assert record["words"].startswith("messages.2: Did not find 3 `tool_result` block(s)")
    assert record["status"] == 400
