"""The saved state is checked, not trusted: a JSON Schema for `Run.to_json()` (jsonschema) and the loop's own
guarantees, one StateError naming the field; state that is not plain JSON is refused when saved; and a property
test feeds random damage — every damaged state resumes correctly or is refused with the kit's typed error."""

from __future__ import annotations

import copy
import datetime
import decimal
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from agentkit import ModelTurn, StopReason, Thread, Update, Usage, call, run, tool
from agentkit.core.checkpoint import STATE_SCHEMA, VERSION, read_state
from agentkit.core.errors import ResumeError, StateError
from agentkit.core.policies import Pause
from agentkit.long_running.ledger import MemoryLedger
from agentkit.long_running.replay import load
from agentkit.long_running.resume import resume
from agentkit.models import FunctionModel, ScriptedModel

PAID: list[int] = []


@tool
def send_payment(to: str, amount: int) -> str:
    """Send money."""
    PAID.append(amount)
    return f"sent {amount} to {to}"


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


TOOLS = [lookup, send_payment]


def gate(call_, ctx):
    return Pause() if call_.name == "send_payment" else True


def turn(*calls, text=None):
    return ModelTurn(text=text, tool_calls=tuple(calls), stop="tool_calls" if calls else "stop",
                     usage=Usage(100, 10), model="claude-sonnet-4-5")


def paused_state() -> dict:
    """A run on a thread with an earlier exchange, one round of lookups, then a paused payment (with a lookup
    beside it in the same turn): every part of the state has something in it."""
    thread = Thread()
    run(ScriptedModel([turn(text="Hello.")]), "hi", thread=thread)
    model = ScriptedModel([turn(call("lookup", {"q": "invoice"}, id="c1"), call("lookup", {"n": 1}, id="c2")),
                           turn(call("lookup", {"q": "bob"}, id="c3"), call("send_payment", {"to": "bob", "amount": 5},
                                                                           id="c4"))])
    paused = run(model, "pay bob", tools=TOOLS, approve=gate, thread=thread, system="Be brief.")
    assert paused.stop_reason is StopReason.PAUSED
    return json.loads(paused.to_json())


STATE = paused_state()


def resume_it(state, ledger=None):
    waiting = state.get("pending", {}).get("waiting") if isinstance(state, dict) and isinstance(
        state.get("pending"), dict) else None
    decisions = {w: "approve" for w in waiting} if isinstance(waiting, list) and all(
        isinstance(w, str) for w in waiting) else {"c4": "approve"}
    return resume(state, decisions, FunctionModel(lambda m, t, o: "Done."), tools=TOOLS,
                  ledger=ledger or MemoryLedger())


def unanswered(messages) -> list[str]:
    asked = [c.id for m in messages for c in m.tool_calls]
    return [i for i in asked if i not in {m.tool_call_id for m in messages if m.role == "tool"}]


def test_a_saved_state_matches_its_schema_and_reads_back_whole():
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(STATE_SCHEMA)
    assert not list(Draft202012Validator(STATE_SCHEMA).iter_errors(STATE))
    assert read_state(json.dumps(STATE)) == STATE and STATE["agentkit_run"] == VERSION
    done = resume_it(copy.deepcopy(STATE))
    assert done.stop_reason is StopReason.FINAL_ANSWER and not unanswered(done.messages)


@pytest.mark.parametrize("edit, field", [
    (lambda s: s.update(steps=-50), "steps"),
    (lambda s: s.update(steps=9), "steps"),
    (lambda s: s.update(messages={}), "messages"),
    (lambda s: s["messages"].pop(5), "messages[4]"),  # a lookup's result removed: its call goes unanswered
    (lambda s: s["messages"].insert(1, {"role": "assistant", "content": "I speak first"}), "messages[1]"),
    (lambda s: s["messages"][2].update(role="robot"), "messages[2].role"),
    (lambda s: s["pending"]["turn"]["tool_calls"][1]["arguments"].update(amount=500), "pending.turn"),
    (lambda s: s["pending"].update(waiting=["c9"]), "pending.waiting[0]"),
    (lambda s: s["pending"]["counters"].update(tool_call_count=0), "pending.counters.tool_call_count"),
    (lambda s: s.update(tool_call_count=1), "pending.counters.tool_call_count"),
    (lambda s: s["usage"].update(input_tokens=1), "usage"),
    (lambda s: s.update(results=s["results"][:1]), "results"),
    (lambda s: s["results"][0].update(result="something else"), "results[0]"),
    (lambda s: s.update(start_index=999), "start_index"),
    (lambda s: s.update(stop_reason="final_answer"), "pending"),
    (lambda s: s.update(agentkit_run=7), "agentkit_run"),
    (lambda s: s.update(surprise=1), ""),
    (lambda s: s["pending"].update(token="../../etc/passwd"), "pending.token"),
])
def test_each_kind_of_damage_is_refused_with_one_error_naming_the_field(edit, field):
    damaged = copy.deepcopy(STATE)
    edit(damaged)
    with pytest.raises(StateError) as refused:
        resume_it(damaged)
    assert refused.value.field == field and str(refused.value).startswith("saved run state")
    assert isinstance(refused.value, ValueError)


def test_text_that_is_not_a_state_is_refused_in_one_line():
    for text in ("{}", "[1, 2]", "not json", '{"agentkit_run": 2'):
        with pytest.raises(StateError, match="saved run state"):
            read_state(text)


def test_a_version_1_state_is_still_read():
    old = copy.deepcopy(STATE)
    old["agentkit_run"] = 1
    for key in ("limit", "elapsed_seconds", "compaction"):
        old.pop(key)
    old["pending"].pop("token")
    old["pending"].pop("passed")
    assert resume_it(old).stop_reason is StopReason.FINAL_ANSWER


def remembering(value):
    """A tool that puts `value` into the run's state, then a turn that pauses on a payment."""
    @tool
    def remember(q: str) -> Update:
        """Remember something."""
        return Update(state={"kept": copy.deepcopy(value)}, message="ok")
    model = ScriptedModel([[call("remember", {"q": "x"})], [call("send_payment", {"to": "bob", "amount": 5})]])
    return run(model, "go", tools=[remember, send_payment], approve=gate), remember


@pytest.mark.parametrize("value, said", [({1, 2}, "set"), ((1, 2), "tuple"), (datetime.date(2026, 1, 1), "date"),
                                          (b"raw", "bytes"), (decimal.Decimal("1.5"), "Decimal"),
                                          ({1: "a"}, "key 1"), (float("nan"), "nan"), (object(), "object")])
def test_state_that_is_not_plain_json_is_refused_when_saved_not_changed(value, said):
    paused, _ = remembering({"value": value})
    assert paused.stop_reason is StopReason.PAUSED
    with pytest.raises(StateError, match=said) as refused:
        paused.to_json()
    assert refused.value.field.startswith("state['kept']")


def test_a_plain_json_state_round_trips_exactly():
    state = {"n": 1, "xs": [1, 2.5, "three", None, True], "nested": {"a": {"b": []}}}
    paused, remember = remembering(state)
    done = resume(paused.to_json(), dict.fromkeys(paused.pending.waiting, "approve"), ScriptedModel(["ok"]),
                  tools=[remember, send_payment])
    assert done.state == {"kept": state} and load(paused.to_json()).state == {"kept": state}


# -- the property: random damage -----------------------------------------------------------------------------

def paths(node, prefix=()):
    """Every place in a JSON document, as a tuple of keys and indexes."""
    yield prefix
    if isinstance(node, dict):
        for key, child in node.items():
            yield from paths(child, (*prefix, key))
    elif isinstance(node, list):
        for i, child in enumerate(node):
            yield from paths(child, (*prefix, i))


ALL_PATHS = [p for p in paths(STATE) if p]
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**20), st.floats(allow_nan=False, allow_infinity=False),
                   st.sampled_from(["", "x", "c1", "c4", "assistant", "tool", "user", "paused", "lookup", "0" * 32]),
                   st.just([]), st.just({}), st.just({"role": "user", "content": "hi"}))


def damage(state: dict, path: tuple, how: str, value) -> dict:
    state = copy.deepcopy(state)
    parent = state
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if how == "delete":
        del parent[last]
    elif how == "replace":
        parent[last] = value
    elif how == "duplicate" and isinstance(parent, list):
        parent.insert(last, copy.deepcopy(parent[last]))
    elif how == "swap" and isinstance(parent, list) and len(parent) > 1:
        other = (last + 1) % len(parent)
        parent[last], parent[other] = parent[other], parent[last]
    else:
        parent[last] = value
    return state


@settings(max_examples=examples(600), deadline=None)
@given(where=st.lists(st.sampled_from(ALL_PATHS), min_size=1, max_size=2),
       how=st.sampled_from(["delete", "replace", "duplicate", "swap"]), value=VALUES)
def test_every_damaged_state_resumes_correctly_or_is_refused_with_the_kits_typed_error(where, how, value):
    damaged = STATE
    for path in where:
        try:
            damaged = damage(damaged, path, how, value)
        except (KeyError, IndexError, TypeError):  # the second place is gone after the first change
            continue
    PAID.clear()
    try:
        done = resume_it(damaged)
    except (StateError, ResumeError):
        return
    # it resumed: as a run the loop could have written — every call answered, its own state valid again
    assert done.stop_reason is not None and not unanswered(done.messages)
    read_state(done.to_json())
    assert PAID.count(5) <= 1 and all(isinstance(a, int) for a in PAID)
