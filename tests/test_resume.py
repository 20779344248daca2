"""Pause and resume: an approval that decides later, a JSON round trip standing in for a restart, and a
decision per waiting call; in every format against the simulator, the history stays valid (no 400)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_compaction import REASONING, TOOLS

from agentkit import Deny, Edit, Limits, StopReason, Thread, call, run, tool
from agentkit.core.policies import Pause
from agentkit.http import HTTPModel
from agentkit.long_running.resume import resume
from agentkit.models import ScriptedModel


@tool
def send_payment(to: str, amount: int) -> str:
    """Send money."""
    return f"sent {amount} to {to}"


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def ask_payments(*answers: str) -> ScriptedModel:
    """Turn 1: a lookup and a payment in one batch; turn 2: answers."""
    return ScriptedModel([[call("lookup", {"q": "invoice"}, id="c1"), call("send_payment", {"to": "bob", "amount": 5},
                                                                          id="c2")], *answers])


def gate(call_, ctx):
    return Pause() if call_.name == "send_payment" else True


def unanswered(messages) -> list[str]:
    asked = [c.id for m in messages for c in m.tool_calls]
    return [i for i in asked if i not in {m.tool_call_id for m in messages if m.role == "tool"}]


def test_a_pause_ends_the_run_before_the_turn_and_keeps_the_history_valid():
    paused = run(ask_payments(), "pay bob", tools=[lookup, send_payment], approve=gate)
    assert paused.stop_reason is StopReason.PAUSED and paused.pending.waiting == ("c2",)
    assert [m.role for m in paused.messages] == ["user"] and paused.tool_call_count == 0
    assert paused.trace.count("gate", gate="approval", error="paused") == 1


@pytest.mark.parametrize("decision, kind, ran", [("approve", None, 1), ("deny", "denied", 0),
                                                 (Deny("not today"), "denied", 0),
                                                 (Edit({"to": "bob", "amount": 3}), None, 1)])
def test_resume_after_a_json_round_trip_with_each_decision(decision, kind, ran):
    paused = run(ask_payments(), "pay bob", tools=[lookup, send_payment], approve=gate)
    saved = json.loads(json.dumps(json.loads(paused.to_json())))  # what a file or a database gives back
    model = ScriptedModel(["Done."])
    done = resume(saved, {"c2": decision}, model, tools=[lookup, send_payment], approve=gate)
    assert done.stop_reason is StopReason.FINAL_ANSWER and done.output == "Done." and not unanswered(done.messages)
    payment = next(r for r in done.results if r.call_id == "c2")
    assert payment.error_kind == kind and done.tool_runs == 1 + ran
    if isinstance(decision, Edit):
        assert payment.result == "sent 3 to bob"
    if decision == "deny":
        assert next(m for m in done.messages if m.tool_call_id == "c2").is_error
    assert done.tool_call_count == 2 and done.steps == 2 and done.run_id == paused.run_id


def test_resume_needs_a_decision_for_exactly_the_waiting_calls():
    saved = run(ask_payments(), "pay bob", tools=[lookup, send_payment], approve=gate).to_json()
    with pytest.raises(ValueError, match=r"missing \['c2'\]"):
        resume(saved, {}, ScriptedModel([]), tools=[lookup, send_payment])
    with pytest.raises(ValueError, match=r"not waiting \['c9'\]"):
        resume(saved, {"c2": "approve", "c9": "deny"}, ScriptedModel([]), tools=[lookup, send_payment])
    with pytest.raises(ValueError, match="not a saved agentkit run"):
        resume("{}", {}, ScriptedModel([]))
    finished = run(ScriptedModel(["hi"]), "hi").to_json()
    with pytest.raises(ValueError, match="nothing to resume"):
        resume(finished, {}, ScriptedModel([]))


def test_a_thread_resumes_where_it_paused():
    thread = Thread()
    paused = run(ask_payments(), "pay bob", tools=[lookup, send_payment], approve=gate, thread=thread)
    assert thread.messages == paused.messages and not unanswered(thread.messages)
    done = resume(paused.to_json(), {"c2": "deny"}, ScriptedModel(["ok"]), tools=[lookup, send_payment],
                  thread=thread)
    assert thread.messages == done.messages and done.stop_reason is StopReason.FINAL_ANSWER


@pytest.mark.parametrize("fmt", sorted(REASONING))
@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_pause_json_resume_round_trips_in_every_format(server, fmt, decision):
    name, extra = REASONING[fmt]
    model = HTTPModel(name, fmt, base_url=server.base_url(fmt), api_key="sim-key", extra_body=extra, max_retries=0)

    def pause_rates(call_, ctx):
        return Pause() if call_.name == "get_exchange_rate" else True
    paused = run(model, "東京の天気と、1ドル何円か教えて", tools=TOOLS, approve=pause_rates)
    assert paused.stop_reason is StopReason.PAUSED, paused.summary()
    saved = paused.to_json()
    waiting = json.loads(saved)["pending"]["waiting"]
    done = resume(saved, dict.fromkeys(waiting, decision), model, tools=TOOLS)
    assert done.stop_reason is StopReason.FINAL_ANSWER and not unanswered(done.messages)
    decided = [r for r in done.results if r.call_id in waiting]
    assert decided and all(r.ok == (decision == "approve") for r in decided)
    assert all(r.error_kind == "denied" for r in decided if not r.ok)
    resumed_turn = next(m for m in done.messages if m.tool_calls and m.tool_calls[0].id == paused.pending.turn
                        .tool_calls[0].id)
    assert resumed_turn.reasoning == paused.pending.turn.reasoning  # the provider's state came back whole


def test_aresume_continues_from_asyncio():
    import asyncio

    from agentkit.long_running.resume import aresume

    saved = run(ask_payments(), "pay bob", tools=[lookup, send_payment], approve=gate).to_json()
    done = asyncio.run(aresume(saved, {"c2": "approve"}, ScriptedModel(["Paid."]), tools=[lookup, send_payment]))
    assert done.stop_reason is StopReason.FINAL_ANSWER and done.tool_runs == 2 and not unanswered(done.messages)



@given(plan=st.lists(st.lists(st.sampled_from(["pay", "look", "bad"]), min_size=1, max_size=3), min_size=1,
                     max_size=4),
       cap=st.one_of(st.none(), st.integers(1, 8)))
def test_pausing_and_approving_gives_the_history_of_approving_at_once(plan, cap):
    """Property: pause at every payment, save, resume approving them — the same history and counters as a run
    whose gate approved at once (calls refused at a gate, caps and all)."""
    arguments = {"pay": lambda i: ("send_payment", {"to": f"p{i}", "amount": i}),
                 "look": lambda i: ("lookup", {"q": f"q{i}"}), "bad": lambda i: ("send_payment", {"to": 3})}
    steps = [[call(*arguments[kind](10 * b + i), id=f"c{b}_{i}") for i, kind in enumerate(batch)]
             for b, batch in enumerate(plan)] + ["done"]
    limits = Limits(max_tool_calls=cap, exit_behavior="continue")
    at_once = run(ScriptedModel(steps), "go", tools=[lookup, send_payment], limits=limits, approve=lambda c, x: True)
    model, state = ScriptedModel(steps), None
    current = run(model, "go", tools=[lookup, send_payment], limits=limits, approve=gate)
    while current.stop_reason is StopReason.PAUSED:
        state = json.loads(current.to_json())
        current = resume(state, dict.fromkeys(state["pending"]["waiting"], "approve"), model,
                         tools=[lookup, send_payment], limits=limits, approve=gate)
    assert [m.to_dict() for m in current.messages] == [m.to_dict() for m in at_once.messages]
    assert (current.tool_call_count, current.invalid_calls, current.steps) == (
        at_once.tool_call_count, at_once.invalid_calls, at_once.steps)
