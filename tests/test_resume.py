"""Pause and resume: an approval that decides later, a JSON round trip standing in for a restart, and a
decision per waiting call; in every format against the simulator, the history stays valid (no 400)."""

from __future__ import annotations

import dataclasses
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


# -- promises across a pause: money, time, and running once ---------------------------------------------------

PAYMENTS: list[int] = []


@tool
def pay(to: str, amount: int) -> str:
    """Send money (and remember it was sent)."""
    PAYMENTS.append(amount)
    return f"sent {amount} to {to}"


def paying_forever():
    """Pays 100 every turn, 1,000 input and 100 output tokens a call, priced: never answers by itself."""
    from agentkit import ModelTurn, Usage
    from agentkit.models import FunctionModel

    def fn(messages, tools, options):
        step = sum(m.role == "assistant" for m in messages)
        if options.tool_choice == "none":
            return ModelTurn(text="stopping", usage=Usage(1000, 100), model="claude-sonnet-4-5")
        return ModelTurn(tool_calls=(call("pay", {"to": "bob", "amount": 100}, id=f"p{step}"),), stop="tool_calls",
                         usage=Usage(1000, 100), model="claude-sonnet-4-5")
    return FunctionModel(fn)


def pause_payments(call_, ctx):
    return Pause() if call_.name == "pay" else True


def resumed_at_every_pause(limits, *, between=lambda: None):
    """Run with a gate that pauses every payment; save, (restart), resume approving it; until the run ends."""
    model = paying_forever()
    current = run(model, "pay bob until told", tools=[pay], limits=limits, approve=pause_payments)
    while current.stop_reason is StopReason.PAUSED:
        saved = json.loads(current.to_json())
        between()
        current = resume(saved, dict.fromkeys(saved["pending"]["waiting"], "approve"), model, tools=[pay],
                         limits=limits, approve=pause_payments)
    return current


def test_a_cost_budget_counts_what_was_spent_before_each_pause():
    limits = Limits(max_steps=30, max_cost_usd=0.02)
    PAYMENTS.clear()
    at_once = run(paying_forever(), "pay bob until told", tools=[pay], limits=limits)
    once = list(PAYMENTS)
    PAYMENTS.clear()
    paused = resumed_at_every_pause(limits)
    assert at_once.stop_reason is StopReason.COST_BUDGET and paused.stop_reason is StopReason.COST_BUDGET
    assert paused.steps == at_once.steps == 5 and PAYMENTS == once == [100] * 4  # $0.0045 a call: over at call 5
    assert paused.cost().usd == pytest.approx(at_once.cost().usd) and paused.limit == at_once.limit


def test_a_time_budget_counts_time_running_not_time_waiting_paused():
    from agentkit.experiments.long_running import TickingClock

    clock = TickingClock(seconds_per_tool=3.0)
    limits = Limits(max_steps=30, max_seconds=10, clock=clock)
    at_once = run(paying_forever(), "pay bob until told", tools=[pay], limits=limits, on_event=clock.tick)
    clock = TickingClock(seconds_per_tool=3.0)
    limits = Limits(max_steps=30, max_seconds=10, clock=clock)

    def a_day_passes():
        clock.now += 86_400.0

    model = paying_forever()
    current = run(model, "pay bob until told", tools=[pay], limits=limits, approve=pause_payments, on_event=clock.tick)
    while current.stop_reason is StopReason.PAUSED:
        saved = json.loads(current.to_json())
        a_day_passes()
        current = resume(saved, dict.fromkeys(saved["pending"]["waiting"], "approve"), model, tools=[pay],
                         limits=limits, approve=pause_payments, on_event=clock.tick)
    assert at_once.stop_reason is StopReason.TIME_BUDGET and current.stop_reason is StopReason.TIME_BUDGET
    assert current.steps == at_once.steps and current.tool_runs == at_once.tool_runs == 4
    assert current.elapsed_seconds == at_once.elapsed_seconds == 12.0  # four tools of 3 s; the days not counted


def test_the_same_paused_state_is_resumed_once_and_the_approved_call_runs_once():
    from agentkit.core.errors import AlreadyResumed

    PAYMENTS.clear()
    paused = run(paying_forever(), "pay bob", tools=[pay], approve=pause_payments, limits=Limits(max_steps=2))
    saved = paused.to_json()
    first = resume(saved, {"p0": "approve"}, paying_forever(), tools=[pay], limits=Limits(max_steps=2))
    for again in (saved, json.loads(saved), paused):  # the text, its json.loads, the Run: the same pause
        with pytest.raises(AlreadyResumed, match="resumed already") as refused:
            resume(again, {"p0": "approve"}, paying_forever(), tools=[pay])
        assert refused.value.token == paused.pending.token
    assert PAYMENTS == [100] and first.run_id == paused.run_id


def test_racing_resumes_of_one_state_let_exactly_one_through():
    import threading

    from agentkit.core.errors import AlreadyResumed

    PAYMENTS.clear()
    saved = run(paying_forever(), "pay bob", tools=[pay], approve=pause_payments).to_json()
    outcomes, start = [], threading.Barrier(8)

    def attempt():
        start.wait()
        try:
            resume(saved, {"p0": "approve"}, paying_forever(), tools=[pay], limits=Limits(max_steps=2))
            outcomes.append("resumed")
        except AlreadyResumed:
            outcomes.append("refused")
    threads = [threading.Thread(target=attempt) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["refused"] * 7 + ["resumed"] and PAYMENTS == [100]


def test_across_processes_a_shared_file_ledger_refuses_the_second_resume(tmp_path):
    import subprocess
    import sys

    from agentkit.core.errors import AlreadyResumed
    from agentkit.long_running.ledger import FileLedger

    saved = run(paying_forever(), "pay bob", tools=[pay], approve=pause_payments).to_json()
    (tmp_path / "state.json").write_text(saved)
    script = (
        "import json, sys\n"
        "from agentkit import ScriptedModel, tool\n"
        "from agentkit.long_running.ledger import FileLedger\n"
        "from agentkit.long_running.resume import resume\n"
        "@tool\n"
        "def pay(to: str, amount: int) -> str:\n"
        "    '''Send money.'''\n"
        "    print('PAID', amount)\n"
        "    return 'sent'\n"
        "done = resume(open(sys.argv[1]).read(), {'p0': 'approve'}, ScriptedModel(['Paid.']), tools=[pay],\n"
        "              ledger=FileLedger(sys.argv[2]))\n"
        "print(done.stop_reason)\n")
    other = subprocess.run([sys.executable, "-c", script, str(tmp_path / "state.json"), str(tmp_path / "ledger")],
                           capture_output=True, text=True, timeout=120)
    assert other.returncode == 0 and "PAID 100" in other.stdout and "final_answer" in other.stdout, other.stderr
    PAYMENTS.clear()
    with pytest.raises(AlreadyResumed):
        resume(saved, {"p0": "approve"}, paying_forever(), tools=[pay], ledger=FileLedger(tmp_path / "ledger"))
    assert PAYMENTS == []
    token = json.loads(saved)["pending"]["token"]
    assert (tmp_path / "ledger" / f"{token}.resumed").stat().st_mode & 0o077 == 0  # the owner's alone


def test_a_paused_call_whose_tool_is_gone_or_changed_is_refused_before_anything_runs():
    from agentkit.core.errors import ResumeError

    @tool
    def pay_changed(to: str, amount: str, currency: str) -> str:
        """Send money in a currency."""
        return "sent"

    changed = dataclasses.replace(pay_changed, name="pay")
    saved = run(paying_forever(), "pay bob", tools=[pay], approve=pause_payments).to_json()
    with pytest.raises(ResumeError, match="asks for tool 'pay', which resume was not given"):
        resume(saved, {"p0": "approve"}, paying_forever(), tools=[lookup])
    with pytest.raises(ResumeError, match="no longer fits its tool's schema"):
        resume(saved, {"p0": "approve"}, paying_forever(), tools=[changed])
    denied = resume(saved, {"p0": "deny"}, ScriptedModel(["ok"]), tools=[lookup])  # a denied call needs no tool
    assert denied.stop_reason is StopReason.FINAL_ANSWER


@pytest.mark.parametrize("decisions", [None, ["approve"], "approve", {"p0": 3}, {"p0": Edit("amount=5")}])
def test_decisions_of_the_wrong_shape_are_refused_in_one_clear_error(decisions):
    from agentkit.core.errors import ResumeError

    saved = run(paying_forever(), "pay bob", tools=[pay], approve=pause_payments).to_json()
    with pytest.raises(ResumeError, match="decision"):
        resume(saved, decisions, paying_forever(), tools=[pay])


def test_a_summarized_run_resumed_with_a_fresh_strategy_is_sent_the_summary_it_was_sent_before():
    """Summarize's summary is saved with the run (Run.compaction): a fresh Summarize (a new process), whose
    model would write another summary, sends the saved one, so the resumed cycle keeps its prefix."""
    from agentkit.long_running.compaction import Summarize
    from agentkit.models import FunctionModel

    sent = []

    def recording(messages, tools, options):
        sent.append([m.content for m in messages])
        if messages[-1].role == "user":  # each question: a lookup and a payment, then an answer
            return [call("lookup", {"q": messages[-1].content}, id=f"l{len(sent)}"),
                    call("send_payment", {"to": "bob", "amount": 1}, id=f"p{len(sent)}")]
        return "ok"
    thread = Thread()
    strategy = Summarize(FunctionModel(lambda m, t, o: "the summary written before the pause"), keep_rounds=1)
    for q in ("one", "two", "three"):
        run(FunctionModel(recording), q, tools=[lookup, send_payment], thread=thread, compact=strategy)
    paused = run(FunctionModel(recording), "four", tools=[lookup, send_payment], thread=thread, compact=strategy,
                 approve=gate)
    assert paused.stop_reason is StopReason.PAUSED and paused.compaction["summaries"]
    before = sent[-1]
    fresh = Summarize(FunctionModel(lambda m, t, o: "ANOTHER SUMMARY"), keep_rounds=1)
    done = resume(paused.to_json(), dict.fromkeys(paused.pending.waiting, "approve"), FunctionModel(recording),
                  tools=[lookup, send_payment], compact=fresh)
    assert done.stop_reason is StopReason.FINAL_ANSWER and fresh.calls == 0
    assert sent[-1][:len(before)] == before and not any("ANOTHER" in (c or "") for c in sent[-1])
