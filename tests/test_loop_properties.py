"""Property test: whatever a model does, the loop keeps its promises.

Hypothesis draws a random model behaviour — turns of random batch sizes, tool names including unknown
ones, arguments valid, malformed, mistyped or huge, tools that raise — and random limits and error
policies. For every draw:

- the run stops with a stop reason, within its limits;
- every tool call in the history has exactly one result, right after its turn, in emitted order;
- the counters agree with the trace;
- nothing escapes unless the policy or exit_behavior says raise.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples

from agentkit import (LimitExceeded, Limits, Retry, StopReason, ToolExecutionError, ToolTimeout, call, run,
                      tool)
from agentkit.models import FunctionModel


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


@tool(idempotent=True)
def explode(text: str) -> str:
    """Always raises."""
    raise RuntimeError(f"boom at db.internal:5432 {text[:10]}")


@tool(return_direct=True)
def direct(text: str) -> str:
    """Answer directly."""
    return text


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TOOLS = [echo, explode, direct, add]
NAMES = ["echo", "explode", "direct", "add", "missing_tool", ""]

arguments = st.one_of(
    st.builds(lambda t: {"text": t}, st.text(max_size=20)),
    st.builds(lambda a, b: {"a": a, "b": b}, st.integers(), st.integers()),
    st.just({"a": "5", "b": 1}),  # numbers as strings
    st.just({}),  # missing fields
    st.just('{"text": "unterminated'),  # bad JSON
    st.just("[1, 2]"),  # not an object
    st.just('{"text": "x", "extra": 1}'),
    st.just("[" * 5000 + "]" * 5000),  # deep nesting
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
calls = st.tuples(st.sampled_from(NAMES), arguments)
turn = st.one_of(st.text(max_size=10), st.lists(calls, min_size=0, max_size=5))
policies = st.sampled_from(["report", "Tool failed.", RuntimeError, Retry(max_retries=1, backoff=0.0), "raise"])
limits = st.builds(
    Limits,
    max_steps=st.one_of(st.none(), st.integers(0, 8)),
    max_tool_calls=st.one_of(st.none(), st.integers(0, 6)),
    max_repeats=st.one_of(st.none(), st.integers(1, 3)),
    max_calls_per_tool=st.one_of(st.none(), st.just({"echo": 2})),
    max_invalid_calls=st.one_of(st.none(), st.integers(0, 4)),
    exit_behavior=st.sampled_from(["continue", "end", "error"]),
)


def scripted(turns):
    """Plays the drawn turns, then answers: a model that always ends, unless limits end it first."""
    def fn(messages, tools, options):
        step = sum(1 for m in messages if m.role == "assistant")
        if step >= len(turns):
            return "final"
        t = turns[step]
        if isinstance(t, str):
            return t
        return [call(name, raw=args) if isinstance(args, str) else call(name, args) for name, args in t]
    return FunctionModel(fn)


@settings(max_examples=examples(1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=st.lists(turn, max_size=8), limits=limits, policy=policies,
       executor=st.sampled_from(["sequential", "threads"]))
def test_the_loop_keeps_its_promises(turns, limits, policy, executor):
    try:
        r = run(scripted(turns), "go", tools=TOOLS, limits=limits, on_tool_error=policy, executor=executor)
        raised = None
    except (LimitExceeded, ToolExecutionError) as exc:
        raised, r = exc, exc.run
        if isinstance(exc, LimitExceeded):
            assert limits.exit_behavior == "error"
        else:
            assert policy == "raise"  # no other policy lets a tool error escape
        assert r.stop_reason is StopReason.ERROR

    # it stopped, with a reason, within its limits
    assert isinstance(r.stop_reason, StopReason)
    if limits.max_steps is not None:
        assert r.steps <= limits.max_steps
    if limits.max_tool_calls is not None:
        assert r.tool_call_count <= limits.max_tool_calls

    # counters agree with the trace
    t = r.trace
    assert t.count("model_request") == r.steps
    assert t.count("tool_start") == r.tool_runs
    assert t.count("result") == len(r.results)
    assert t.count("stop") == 1 and t.events[-1].kind == "stop"

    if raised is not None:
        return
    # every call has exactly one result, right after its turn, in the emitted order
    msgs = r.messages
    answered = 0
    for i, m in enumerate(msgs):
        if m.role == "assistant" and m.tool_calls:
            answers = msgs[i + 1:i + 1 + len(m.tool_calls)]
            assert [a.role for a in answers] == ["tool"] * len(m.tool_calls)
            assert [a.tool_call_id for a in answers] == [c.id for c in m.tool_calls]
            answered += len(m.tool_calls)
    assert answered == sum(1 for m in msgs if m.role == "tool") == len(r.results)

    # every error result is a well-formed envelope (or the policy's own text) and leaks no host names
    for m in msgs:
        if m.role == "tool" and m.is_error and m.content.startswith("{"):
            body = json.loads(m.content)
            assert body["ok"] is False and {"kind", "message", "path", "keyword"} <= set(body["error"])
            assert "db.internal" not in m.content


def test_timeouts_are_typed():
    assert issubclass(ToolTimeout, TimeoutError)
