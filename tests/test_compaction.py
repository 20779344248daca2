"""Context compaction: the three strategies, their invariants (property-tested), the loop's hook and trace,
and every format's simulator accepting every compacted request (no 400s)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples

import agentkit
from agentkit import Thread, run, tool
from agentkit.core.types import Message, ModelTurn, ReasoningState, ToolCall, ToolResult
from agentkit.http import HTTPModel
from agentkit.long_running.compaction import (
    CompactionError,
    DropOldest,
    ElideToolResults,
    Summarize,
    check_history,
    message_chars,
)
from agentkit.models import FunctionModel
from agentkit.providers import FORMATS


def summariser() -> FunctionModel:
    """Writes a summary that says how much it read (a stand-in for a model call)."""
    return FunctionModel(lambda messages, tools, options: f"summary of {len(messages[-1].content)} characters")


# -- histories, built by hypothesis ------------------------------------------------------------------------

@st.composite
def histories(draw) -> list[Message]:
    """System prompt, then turns: a user message, rounds of 1-3 calls (some with reasoning state) and
    their results, and (except for the last, current turn) a final answer."""
    messages = [Message.system("You are terse.")] if draw(st.booleans()) else []
    turns = draw(st.integers(1, 4))
    n = 0
    for t in range(turns):
        messages.append(Message.user(f"request {t} " + "x" * draw(st.integers(0, 40))))
        for _ in range(draw(st.integers(0 if t < turns - 1 else 1, 4))):
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                n += 1
                calls.append(ToolCall(f"c{n}", "lookup", f'{{"k": {n}}}', {"k": n}))
            state = ReasoningState("anthropic", "m", ({"type": "thinking", "thinking": f"t{n}"},)) \
                if draw(st.booleans()) else None
            messages.append(Message.assistant(None, calls, state))
            for c in calls:
                messages.append(Message.tool(ToolResult.success(c, "r" * draw(st.integers(0, 200)))))
        if t < turns - 1:
            messages.append(Message.assistant(f"answer {t}"))
    return messages


STRATEGIES = st.one_of(
    st.builds(DropOldest, keep_rounds=st.integers(1, 4), keep_turns=st.integers(0, 2)),
    st.builds(ElideToolResults, keep_last=st.integers(0, 4)),
    st.builds(lambda k, t: Summarize(summariser(), keep_rounds=k, keep_turns=t), st.integers(1, 3),
              st.integers(0, 2)),
)


@given(history=histories(), strategy=STRATEGIES)
def test_every_strategy_keeps_the_invariants(history, strategy):
    sent = strategy(list(history))
    assert check_history(history, sent) is None
    assert message_chars(sent) <= message_chars(history) + 200  # a summary note costs at most its own text
    if history and history[0].role == "system":
        assert sent[0] == history[0]


@given(history=histories(), keep=st.integers(1, 4))
def test_drop_oldest_keeps_the_newest_rounds_whole_and_in_order(history, keep):
    sent = DropOldest(keep_rounds=keep)(list(history))
    assert all(any(m is s for s in history) for m in sent)  # nothing rewritten, only dropped
    assert [history.index(m) for m in sent] == sorted(history.index(m) for m in sent)
    newest = [m for m in history[history.index([m for m in history if m.role == "user"][-1]):]]
    assert sent[-len(newest):] == newest or len([m for m in newest if m.tool_calls]) > keep


@given(history=histories(), keep=st.integers(0, 4))
def test_elide_keeps_the_newest_results_verbatim_and_every_call_answered(history, keep):
    sent = ElideToolResults(keep_last=keep)(list(history))
    results = [(a, b) for a, b in zip(history, sent) if a.role == "tool"]
    assert len(sent) == len(history)
    for i, (before, after) in enumerate(reversed(results)):
        assert (after.tool_call_id, after.name, after.is_error) == (before.tool_call_id, before.name, before.is_error)
        if i < keep:
            assert after.content == before.content


def test_summarize_writes_each_message_into_the_summary_once():
    model = summariser()
    strategy = Summarize(model, keep_rounds=1)
    history = [Message.user("go")]
    for n in range(1, 5):
        c = ToolCall(f"c{n}", "lookup", "{}", {})
        history += [Message.assistant(None, [c]), Message.tool(ToolResult.success(c, n))]
        sent = strategy(list(history))
        assert check_history(history, sent) is None
    # the summary goes just before the current request, which stays the user text the kept calls answer
    assert strategy.calls == 3 and sent[0].content.startswith("[Summary of the earlier conversation")
    assert sent[1].content == "go"


def test_check_history_names_each_broken_invariant():
    c1, c2 = ToolCall("c1", "f", "{}", {}), ToolCall("c2", "f", "{}", {})
    thought = ReasoningState("anthropic", "m", ({"type": "thinking"},))
    history = [Message.system("s"), Message.user("u"), Message.assistant(None, [c1], thought),
               Message.tool(ToolResult.success(c1, 1)), Message.assistant(None, [c2]),
               Message.tool(ToolResult.success(c2, 2))]
    assert "without its result" in check_history(history, history[:3] + history[4:])
    assert "without the call" in check_history(history, history[:2] + history[3:])
    assert "reasoning state" in check_history(history, history[:2] + [Message.assistant(None, [c1])] + history[3:])
    assert "system prompt" in check_history(history, history[1:])
    assert "current request" in check_history(history, [history[0]] + history[4:])
    assert "newest round" in check_history(history, history[:4])
    assert "starts with the model" in check_history(history, [history[0]] + history[2:] + [history[1]])


# -- in the loop -------------------------------------------------------------------------------------------

@tool
def lookup(k: int) -> str:
    """Look something up."""
    return "data " * 50


def digging(turns: int = 6) -> FunctionModel:
    """Looks something up `turns` times, then answers (it counts its own calls: it sees only what is sent)."""
    steps = []

    def fn(messages, tools, options):
        steps.append(len(messages))
        if len(steps) > turns:
            return "done"
        return [agentkit.call("lookup", {"k": len(steps)})]
    model = FunctionModel(fn)
    model.seen = steps
    return model


def test_the_hook_changes_what_is_sent_and_the_trace_records_it_while_the_run_keeps_everything():
    model = digging()
    result = run(model, "dig", tools=[lookup], compact=DropOldest(keep_rounds=2))
    assert result.stop_reason == "final_answer" and len(result.messages) == 14
    assert model.seen == [1, 3, 5, 5, 5, 5, 5]  # the request + the newest two rounds
    events = result.trace.of("compact")
    assert [e.data["messages_after"] for e in events] == [5, 5, 5, 5]
    assert all(e.data["strategy"] == "drop_oldest" and e.data["chars_after"] < e.data["chars_before"]
               for e in events)


def test_over_chars_waits_until_the_history_is_long():
    result = run(digging(), "dig", tools=[lookup], compact=ElideToolResults(keep_last=1, over_chars=800))
    events = result.trace.of("compact")
    assert [e.data["step"] for e in events] == [4, 5, 6, 7]  # three results of ~300 characters go past 800
    assert events[0].data["chars_before"] > 800 > message_chars(result.messages[:6])


def test_a_hook_that_breaks_the_history_is_refused_and_every_call_still_answered():
    def careless(messages):
        return [m for m in messages if m.role != "tool"]
    with pytest.raises(CompactionError, match="careless.*without its result") as raised:
        run(digging(), "dig", tools=[lookup], compact=careless)
    assert raised.value is not None


def test_bad_strategy_settings_say_what_to_use():
    with pytest.raises(ValueError, match="keep_rounds=0"):
        DropOldest(keep_rounds=0)
    with pytest.raises(TypeError, match="complete"):
        Summarize(model=3)


# -- every format's simulator accepts every compacted request ----------------------------------------------

#: Per format: a model name and request switches under which the simulator hands out reasoning state.
#: "sim-missing-field" leaves a required field out of each first call and adds it after the error, so a
#: turn has two rounds; OpenAI Responses and Gemini sign only for their reasoning models' names (one round).
REASONING = {
    "openai-chat": ("sim-missing-field", {"thinking": {"type": "enabled"}}),
    "openai-responses": ("gpt-6.1-sol", {"reasoning": {"effort": "low"}}),
    "anthropic": ("sim-missing-field", {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 2048}),
    "gemini": ("gemini-3-flash-preview", {}),
    "openrouter": ("sim-missing-field", {"reasoning": {"effort": "low"}}),
    "ollama": ("sim-missing-field", {"think": True}),
}
QUESTIONS = ("東京の天気と、1ドル何円か教えて", "What is the weather in Paris?", "And how many yen is one euro?")


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny, 22°C"


@tool
def get_exchange_rate(base: str, quote: str) -> str:
    """Exchange rate between two ISO 4217 currencies."""
    return f"1 {base} = 155.2 {quote}"


TOOLS = [get_weather, get_exchange_rate]


def test_every_format_is_covered():
    assert set(REASONING) == set(FORMATS)


@pytest.fixture(scope="module")
def recorded(server):
    """Per format: every request a three-turn thread sent (history, tools, options), reasoning state on."""
    out = {}
    for fmt, (name, extra) in REASONING.items():
        model = HTTPModel(name, fmt, base_url=server.base_url(fmt), api_key="sim-key", extra_body=extra,
                          max_retries=0)
        requests = []

        def recording(messages, tools, options, model=model, requests=requests):
            requests.append((list(messages), tools, options))
            return model.complete(messages, tools, options)
        thread = Thread()
        for question in QUESTIONS:
            result = run(FunctionModel(recording), question, tools=TOOLS, thread=thread)
            assert result.stop_reason == "final_answer", (fmt, result.summary())
        assert any(m.reasoning is not None for m in thread.messages), fmt
        out[fmt] = (model, requests)
    return out


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), fmt=st.sampled_from(sorted(REASONING)), strategy=STRATEGIES)
def test_every_format_accepts_every_compacted_request(recorded, data, fmt, strategy):
    model, requests = recorded[fmt]
    messages, tools, options = data.draw(st.sampled_from(requests))
    sent = strategy(list(messages))
    assert check_history(messages, sent) is None
    turn = model.complete(sent, tools, options)  # a 400 would raise BadRequestError
    assert isinstance(turn, ModelTurn)


@pytest.mark.parametrize("fmt", sorted(REASONING))
@pytest.mark.parametrize("make", [lambda: DropOldest(keep_rounds=1), lambda: ElideToolResults(keep_last=1),
                                  lambda: Summarize(summariser(), keep_rounds=1)], ids=["drop", "elide", "summarize"])
def test_a_compacted_thread_runs_to_its_answers_in_every_format(server, fmt, make):
    name, extra = REASONING[fmt]
    model = HTTPModel(name, fmt, base_url=server.base_url(fmt), api_key="sim-key", extra_body=extra, max_retries=0)
    thread, strategy = Thread(), make()
    for question in QUESTIONS:
        result = run(model, question, tools=TOOLS, thread=thread, compact=strategy)
        assert result.stop_reason == "final_answer", result.summary()
    assert thread.runs[-1].trace.count("compact") >= 1


def test_arun_compacts_the_same_way():
    import asyncio

    model = digging()
    result = asyncio.run(agentkit.arun(model, "dig", tools=[lookup], compact=DropOldest(keep_rounds=2)))
    assert result.stop_reason == "final_answer" and model.seen == [1, 3, 5, 5, 5, 5, 5]
