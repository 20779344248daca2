"""Property test: whatever a model does, the loop keeps its promises.

Hypothesis draws a random model behaviour — turns of random batch sizes, tool names including unknown
ones, arguments valid, malformed, mistyped, huge or nested 10,000 deep (as text and as an object), tools
that raise — and random limits, error policies (including every one that raises), drivers and
executors. Each draw runs twice on one Thread: the second run continues the conversation of the first,
whether the first ended normally or by raising. For every run:

- it stops with a stop reason, within its limits;
- every tool call in the history (the Run's, and the Thread's) has exactly one result, right after its
  turn, in the emitted order, with matching ids — also when the run raised;
- the counters agree with the trace, and the trace ends with one "stop";
- nothing escapes unless the policy or exit_behavior says raise.
"""

from __future__ import annotations

import asyncio
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples

from agentkit import (
    LimitExceeded,
    Limits,
    Retry,
    StopReason,
    Thread,
    ToolExecutionError,
    ToolTimeout,
    arun,
    call,
    run,
    tool,
)
from agentkit.core.types import ToolCall
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


def nested(depth: int) -> dict:
    node: dict = {}
    for _ in range(depth):
        node = {"a": node}
    return node


class AsObject:
    """Arguments handed over already decoded (Anthropic, Gemini and MCP send objects, not text)."""

    def __init__(self, value: dict, label: str):
        self.value, self.label = value, label

    def __repr__(self) -> str:  # a 10,000-deep dict has no printable repr
        return f"AsObject({self.label})"


TOOLS = [echo, explode, direct, add]
NAMES = ["echo", "explode", "direct", "add", "missing_tool", ""]
DEEP_OBJECT = AsObject({"text": nested(10_000)}, "nested 10,000 deep")

arguments = st.one_of(
    st.builds(lambda t: {"text": t}, st.text(max_size=20)),
    st.builds(lambda a, b: {"a": a, "b": b}, st.integers(), st.integers()),
    st.just({"a": "5", "b": 1}),  # numbers as strings
    st.just({}),  # missing fields
    st.just('{"text": "unterminated'),  # bad JSON
    st.just("[1, 2]"),  # not an object
    st.just('{"text": "x", "extra": 1}'),
    st.just("[" * 5000 + "]" * 5000),  # deep nesting, as text
    st.just(DEEP_OBJECT),  # deep nesting, as an object
    st.builds(lambda t: AsObject({"text": t}, repr(t)), st.text(max_size=5)),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
calls = st.tuples(st.sampled_from(NAMES), arguments)
turn = st.one_of(st.text(max_size=10), st.lists(calls, min_size=0, max_size=5))
RAISING = ["raise", KeyError, Retry(max_retries=1, backoff=0.0, on_failure="raise")]
policies = st.sampled_from(["report", "Tool failed.", RuntimeError, Retry(max_retries=1, backoff=0.0),
                            *RAISING, lambda exc, c: None, lambda exc, c: f"{c.name} failed"])
limits = st.builds(
    Limits,
    max_steps=st.one_of(st.none(), st.integers(0, 8)),
    max_tool_calls=st.one_of(st.none(), st.integers(0, 6)),
    max_thread_tool_calls=st.one_of(st.none(), st.integers(0, 10)),
    max_repeats=st.one_of(st.none(), st.integers(1, 3)),
    max_calls_per_tool=st.one_of(st.none(), st.just({"echo": 2})),
    max_invalid_calls=st.one_of(st.none(), st.integers(0, 4)),
    exit_behavior=st.sampled_from(["continue", "end", "error"]),
)


def as_call(name: str, args) -> ToolCall:
    if isinstance(args, AsObject):
        return ToolCall.from_raw("", name, args.value)
    return call(name, raw=args) if isinstance(args, str) else call(name, args)


def scripted(turns):
    """Plays the drawn turns, then answers: a model that always ends, unless limits end it first.

    Like a real provider, it refuses a history with an unanswered call (the bug this test guards against)."""
    def fn(messages, tools, options):
        assert_every_call_answered_once(messages)
        step = sum(1 for m in messages if m.role == "assistant")
        if step >= len(turns):
            return "final"
        t = turns[step]
        if isinstance(t, str):
            return t
        return [as_call(name, args) for name, args in t]
    return FunctionModel(fn)


def assert_every_call_answered_once(messages) -> None:
    """Each assistant turn's calls are answered right after it, once each, ids matching, in emitted order."""
    messages = list(messages)
    answered = 0
    for i, m in enumerate(messages):
        if m.role == "assistant" and m.tool_calls:
            answers = messages[i + 1:i + 1 + len(m.tool_calls)]
            assert [a.role for a in answers] == ["tool"] * len(m.tool_calls)
            assert [a.tool_call_id for a in answers] == [c.id for c in m.tool_calls]
            answered += len(m.tool_calls)
    assert answered == sum(1 for m in messages if m.role == "tool")


def one_run(turns, thread, limits, policy, driver, executor):
    """Run once; (the Run, the exception it raised or None)."""
    model = scripted(turns)
    try:
        if driver == "run":
            r = run(model, "go", tools=TOOLS, limits=limits, on_tool_error=policy, executor=executor, thread=thread)
        else:
            r = asyncio.run(arun(model, "go", tools=TOOLS, limits=limits, on_tool_error=policy, thread=thread))
        return r, None
    except (LimitExceeded, ToolExecutionError) as exc:
        return exc.run, exc


def check(r, raised, limits, policy, thread):
    if isinstance(raised, LimitExceeded):
        assert limits.exit_behavior == "error"
    elif raised is not None:  # ToolExecutionError: only a policy that says raise lets it out
        assert policy in RAISING or callable(policy) and not isinstance(policy, (type, Retry))
    if raised is not None:
        assert r.stop_reason is StopReason.ERROR and raised.run is r

    # it stopped, with a reason, within its limits
    assert isinstance(r.stop_reason, StopReason)
    if limits.max_steps is not None:
        assert r.steps <= limits.max_steps
    if limits.max_tool_calls is not None:
        assert r.tool_call_count <= limits.max_tool_calls
    if limits.max_thread_tool_calls is not None:
        assert thread.tool_call_count <= limits.max_thread_tool_calls

    # counters agree with the trace; one stop, at the end; a limit is recorded once
    t = r.trace
    assert t.count("model_request") == r.steps
    assert t.count("tool_start") == r.tool_runs
    assert t.count("result") == len(r.results)
    assert t.count("stop") == 1 and t.events[-1].kind == "stop"
    if r.limit is not None:
        assert sum(e.data["limit"] == r.limit.limit and e.data["action"] != "blocked" for e in t.of("limit")) == 1

    # every call has exactly one result, in the Run and in the Thread, raised or not
    assert_every_call_answered_once(r.messages)
    assert_every_call_answered_once(thread.messages)
    assert thread.messages == r.messages and thread.runs[-1] is r
    assert sum(1 for m in r.new_messages if m.role == "tool") == len(r.results)

    # every error result is a well-formed envelope (or the policy's own text) and leaks no host names
    for m in r.messages:
        if m.role == "tool" and m.is_error and m.content.startswith("{"):
            body = json.loads(m.content)
            assert body["ok"] is False and {"kind", "message", "path", "keyword"} <= set(body["error"])
            assert "db.internal" not in m.content


@settings(max_examples=examples(1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=st.lists(turn, max_size=8), second=st.lists(turn, max_size=4), limits=limits, policy=policies,
       driver=st.sampled_from(["run", "run", "arun"]), executor=st.sampled_from(["sequential", "threads"]))
def test_the_loop_keeps_its_promises_run_after_run_on_one_thread(first, second, limits, policy, driver, executor):
    thread = Thread()
    for turns in (first, second):  # the second run continues the first one's conversation, however it ended
        r, raised = one_run(turns, thread, limits, policy, driver, executor)
        check(r, raised, limits, policy, thread)


def test_timeouts_are_typed():
    assert issubclass(ToolTimeout, TimeoutError)
