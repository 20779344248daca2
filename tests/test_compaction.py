"""Context compaction: the three strategies and their invariants (property-tested), the loop's hook, its trace
and its cost (a plan checked once per tool cycle), and every simulated model with reasoning on accepting every
compacted conversation (no 400: Claude 5.x's prefix-bound thinking included) and finishing its answers."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples

import agentkit
from agentkit import Thread, run, tool
from agentkit.core.history import HistoryIndex, Plan
from agentkit.core.types import Message, ReasoningState, ToolCall, ToolResult
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
    turns = draw(st.integers(1, 5))
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
    st.builds(DropOldest, keep_rounds=st.integers(0, 4), keep_turns=st.integers(0, 2)),
    st.builds(ElideToolResults, keep_last=st.integers(0, 4)),
    st.builds(lambda k, t: Summarize(summariser(), keep_rounds=k, keep_turns=t), st.integers(0, 3),
              st.integers(0, 2)),
)


def current_turn(history: list[Message]) -> list[Message]:
    return history[max(i for i, m in enumerate(history) if m.role == "user"):]


@given(history=histories(), strategy=STRATEGIES)
def test_every_strategy_keeps_the_invariants_and_the_current_turn_whole(history, strategy):
    sent = strategy(list(history))
    assert check_history(history, sent) is None
    now = current_turn(history)
    assert sent[-len(now):] == now and all(a is b for a, b in zip(sent[-len(now):], now))  # whole, as it is
    assert message_chars(sent) <= message_chars(history) + 200  # a summary note costs at most its own text
    if history and history[0].role == "system":
        assert sent[0] == history[0]


@given(history=histories(), keep=st.integers(0, 4), turns=st.integers(0, 2))
def test_drop_oldest_drops_whole_earlier_turns_and_strips_reasoning_after_the_cut(history, keep, turns):
    sent = DropOldest(keep_rounds=keep, keep_turns=turns)(list(history))
    if sent is history or len(sent) == len(history):
        return  # nothing to drop: sent as it is
    earlier = [m for m in sent[:-len(current_turn(history))] if m.role != "system"]
    assert earlier == [] or earlier[0].role == "user"  # whole turns: the kept ones start with their request
    assert all(m.reasoning is None for m in earlier)  # the prefix of what they came with changed
    kept_rounds = sum(m.role == "assistant" for m in earlier)
    assert kept_rounds >= keep and sum(m.role == "user" for m in earlier) >= turns


@given(history=histories(), keep=st.integers(0, 4))
def test_elide_keeps_the_newest_earlier_results_and_the_current_turn_verbatim(history, keep):
    sent = ElideToolResults(keep_last=keep)(list(history))
    assert len(sent) == len(history)
    request = max(i for i, m in enumerate(history) if m.role == "user")
    earlier = [(a, b) for a, b in zip(history[:request], sent[:request]) if a.role == "tool"]
    for i, (before, after) in enumerate(reversed(earlier)):
        assert (after.tool_call_id, after.name, after.is_error) == (before.tool_call_id, before.name, before.is_error)
        if i < keep:
            assert after.content == before.content
    assert sent[request:] == history[request:]


def test_summarize_writes_each_earlier_message_into_the_summary_once_across_a_thread():
    model = summariser()
    strategy = Summarize(model, keep_rounds=2)
    history: list[Message] = []
    for n in range(1, 6):
        c = ToolCall(f"c{n}", "lookup", "{}", {})
        history += [Message.user(f"question {n}"), Message.assistant(None, [c]), Message.tool(ToolResult.success(c, n))]
        sent = strategy(list(history))
        assert check_history(history, sent) is None
        history.append(Message.assistant(f"answer {n}"))
    # turns 1-3 were dropped one at a time (the newest earlier turn's two rounds are kept): three summaries
    assert strategy.calls == 3 and sent[0].content.startswith("[Summary of the earlier conversation")
    assert sent[1].content == "question 4" and [m.content for m in sent[-3:-1]] == ["question 5", None]
    assert [cut for cut, _ in strategy.checkpoint()["summaries"]] == [4, 8, 12]


def test_check_history_names_each_broken_invariant():
    c1, c2 = ToolCall("c1", "f", "{}", {}), ToolCall("c2", "f", "{}", {})
    thought = ReasoningState("anthropic", "m", ({"type": "thinking"},))
    earlier = [Message.system("s"), Message.user("u0"), Message.assistant(None, [c1], thought),
               Message.tool(ToolResult.success(c1, 1)), Message.assistant("a0")]
    now = [Message.user("u1"), Message.assistant(None, [c2], thought), Message.tool(ToolResult.success(c2, 2))]
    history = earlier + now
    assert check_history(history, history) is None
    assert "without its result" in check_history(history, history[:3] + history[4:])
    assert "without the call" in check_history(history, history[:2] + history[3:])
    assert "system prompt" in check_history(history, history[1:])
    assert "current request" in check_history(history, earlier + now[1:])
    assert "current turn" in check_history(history, earlier + now[:2] + [Message.tool(ToolResult.success(c2, 3))])
    assert "starts with the model" in check_history(history, [history[0], history[4]] + now)
    # an earlier turn keeps its reasoning only while nothing before it changed
    edited = [earlier[0], Message.user("u0, edited"), *earlier[2:]]
    assert "reasoning state after a change" in check_history(history, edited + now)
    stripped = [edited[0], edited[1], Message.assistant(None, [c1]), *earlier[3:]]
    assert check_history(history, stripped + now) is None


def test_leaving_reasoning_out_keeps_a_messages_own_fields():
    """Responses keeps each assistant message's `phase` with its reasoning state: it is no reasoning, so it
    stays after a change (GPT-5.4 and later stop early without it), and reasoning beside it does not."""
    c1 = ToolCall("c1", "f", "{}", {})
    both = ReasoningState("openai-responses", "gpt-5.4", ({"type": "reasoning", "id": "rs_1"},
                                                          {"type": "message", "phase": "commentary"},
                                                          {"type": "function_call", "call_id": "c1", "id": "fc_1"}))
    phase = both.without_reasoning()
    assert phase == ReasoningState("openai-responses", "gpt-5.4", ({"type": "message", "phase": "commentary"},))
    assert phase.without_reasoning() is phase
    assert ReasoningState("anthropic", "m", ({"type": "thinking"},)).without_reasoning() is None
    history = [Message.user("u0"), Message.assistant(None, [c1], both), Message.tool(ToolResult.success(c1, 1)),
               Message.assistant("a0"), Message.user("u1")]
    edited = [Message.user("u0, edited")]
    assert "reasoning state after a change" in check_history(history, edited + history[1:])
    kept = [edited[0], Message.assistant(None, [c1], phase), *history[2:]]
    assert check_history(history, kept) is None
    # DropOldest drops the first turn and keeps the second, whose call keeps its phase and loses its reasoning
    longer = [Message.user("u"), Message.assistant("a"), *history[:4], Message.user("u1")]
    sent = DropOldest(keep_rounds=1)(longer)
    assert sent[0].content == "u0" and [m.reasoning for m in sent if m.reasoning is not None] == [phase]


# -- in the loop -------------------------------------------------------------------------------------------

@tool
def lookup(k: int) -> str:
    """Look something up."""
    return "data " * 50


def answering(calls_per_turn: int = 1) -> FunctionModel:
    """Looks something up `calls_per_turn` times in each user turn, then answers (it counts from what it is
    sent: a round dropped inside the turn would make it look again)."""
    sent = []

    def fn(messages, tools, options):
        sent.append(len(messages))
        since = next(i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user")
        done = sum(m.role == "assistant" for m in messages[since:])
        return "done" if done >= calls_per_turn else [agentkit.call("lookup", {"k": len(sent)})]
    model = FunctionModel(fn)
    model.sent = sent
    return model


def a_thread(model, strategy, questions: int = 6, **settings):
    thread = Thread()
    runs = [run(model, f"question {q}", tools=[lookup], thread=thread, compact=strategy, **settings)
            for q in range(questions)]
    return thread, runs


def test_the_hook_changes_what_is_sent_the_trace_records_it_and_the_thread_keeps_everything():
    model = answering()
    thread, runs = a_thread(model, DropOldest(keep_rounds=2))
    assert all(r.stop_reason == "final_answer" for r in runs) and len(thread.messages) == 6 * 4
    # each turn: the request, then its call and result; one earlier turn (two rounds: call, answer) kept
    assert model.sent == [1, 3, 5, 7, 5, 7, 5, 7, 5, 7, 5, 7]
    events = [e for r in runs for e in r.trace.of("compact")]
    assert [e.data["messages_after"] for e in events] == [5, 7] * 4
    assert all(e.data["strategy"] == "drop_oldest" and e.data["chars_after"] < e.data["chars_before"]
               for e in events)


def test_inside_one_tool_cycle_nothing_is_dropped_so_the_model_never_asks_again():
    model = answering(calls_per_turn=4)
    result = run(model, "dig", tools=[lookup], compact=DropOldest(keep_rounds=1))
    assert result.stop_reason == "final_answer" and result.steps == 5 and not result.trace.of("compact")


def test_one_plan_per_tool_cycle_checked_once_and_extended():
    strategy = DropOldest(keep_rounds=2)
    made = []
    original = strategy._make
    strategy._make = lambda *a: made.append(1) or original(*a)
    thread, runs = a_thread(answering(calls_per_turn=3), strategy, questions=5)
    assert len(made) == 4  # one decision per user turn with earlier turns (tool cycle), not per model call (20)
    plans = [strategy.plan(r.messages[:r.start_index + 1 + k], HistoryIndex(r.messages[:r.start_index + 1 + k]))
             for r in runs[-1:] for k in (0, 2, 4)]
    assert plans[0] is not None and plans[0] == plans[1] == plans[2]


def test_over_chars_waits_until_the_earlier_turns_are_long():
    thread, runs = a_thread(answering(), ElideToolResults(keep_last=1, over_chars=800))
    compacted = [i for i, r in enumerate(runs) if r.trace.of("compact")]
    assert compacted == [3, 4, 5]  # three earlier turns of ~260 characters go past 800


def test_a_hook_that_breaks_the_history_is_refused_and_every_call_still_answered():
    def careless(messages):
        return [m for m in messages if m.role != "tool"]
    with pytest.raises(CompactionError, match="careless.*without its result") as raised:
        run(answering(calls_per_turn=2), "dig", tools=[lookup], compact=careless)
    assert raised.value is not None


def test_a_plan_that_cuts_into_the_current_turn_is_refused():
    class Greedy:
        def plan(self, messages, index):
            return Plan((), index.request + 1) if len(messages) > 2 else None
    with pytest.raises(CompactionError, match="current turn"):
        run(answering(calls_per_turn=2), "dig", tools=[lookup], compact=Greedy())


def test_bad_strategy_settings_say_what_to_use():
    with pytest.raises(ValueError, match="keep_rounds=-1"):
        DropOldest(keep_rounds=-1)
    with pytest.raises(TypeError, match="complete"):
        Summarize(model=3)


def test_arun_compacts_the_same_way():
    import asyncio

    async def thread_of_questions(model):
        thread = Thread()
        for q in range(6):
            await agentkit.arun(model, f"question {q}", tools=[lookup], thread=thread,
                                compact=DropOldest(keep_rounds=2))
    model = answering()
    asyncio.run(thread_of_questions(model))
    assert model.sent == [1, 3, 5, 7, 5, 7, 5, 7, 5, 7, 5, 7]


# -- every simulated model with reasoning on: every compacted conversation accepted, every answer given ------

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
_ENABLED = {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 2048}
#: Every model the simulator serves that hands out reasoning state, with the switches that turn it on: the
#: formats' reasoning presets, and Anthropic's current models, four of which always think (three of them
#: bind a kept thinking block to its prefix: the rule compaction has to live with).
SIMULATED_REASONING_MODELS = [
    *((fmt, name, extra) for fmt, (name, extra) in REASONING.items()),
    ("openai-chat", "sim-reasoner", {"thinking": {"type": "enabled"}}),
    ("openai-responses", "gpt-6-astra", {"reasoning": {"effort": "low"}}),
    ("openai-responses", "gpt-6.1-terra", {"reasoning": {"effort": "low"}}),
    ("anthropic", "claude-sonnet-4-5", _ENABLED),
    ("anthropic", "claude-opus-5-5", {"max_tokens": 2048}),
    ("anthropic", "claude-sonnet-5-5", {"max_tokens": 2048}),
    ("anthropic", "claude-fable-5-1", {"max_tokens": 2048}),
    ("anthropic", "claude-mythos-5-1", {"max_tokens": 2048}),
    ("anthropic", "claude-haiku-5-5", _ENABLED),
    ("anthropic", "claude-fable-5-2", {"max_tokens": 2048}),
    ("anthropic", "claude-mythos-5-2", {"max_tokens": 2048}),
    ("openai-responses", "gpt-5.4", {"reasoning": {"effort": "low"}}),
    ("openai-responses", "gpt-5.5", {"reasoning": {"effort": "low"}}),
    ("gemini", "gemini-4-argon", {}),
    ("gemini", "gemini-4-carbon", {}),
    ("openrouter", "sim-reasoner", {"reasoning": {"effort": "low"}}),
    ("ollama", "sim-reasoner", {"think": True}),
]
MODEL_IDS = [f"{fmt}:{name}" for fmt, name, _ in SIMULATED_REASONING_MODELS]
QUESTIONS = ("東京の天気と、1ドル何円か教えて", "What is the weather in Paris?", "And how many yen is one euro?",
             "Weather in Tokyo, Paris, London and Osaka?")
#: A question whose answer needs four tool calls, one per model call (parallel_tool_calls=False): 5 steps.
FOUR_CALLS = "Weather in Tokyo, Paris, London and Osaka?"


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny, 22°C"


@tool
def get_exchange_rate(base: str, quote: str) -> str:
    """Exchange rate between two ISO 4217 currencies."""
    return f"1 {base} = 155.2 {quote}"


TOOLS = [get_weather, get_exchange_rate]
MAKERS = {"drop": lambda: DropOldest(keep_rounds=1), "drop-all": lambda: DropOldest(keep_rounds=0),
          "elide": lambda: ElideToolResults(keep_last=1), "summarize": lambda: Summarize(summariser(), keep_rounds=1)}


def sim_model(server, fmt: str, name: str, extra: dict) -> HTTPModel:
    return HTTPModel(name, fmt, base_url=server.base_url(fmt), api_key="sim-key", extra_body=extra, max_retries=0)


def test_every_format_is_covered():
    assert set(REASONING) == set(FORMATS) == {fmt for fmt, _, _ in SIMULATED_REASONING_MODELS}


@pytest.mark.parametrize("fmt, name, extra", SIMULATED_REASONING_MODELS, ids=MODEL_IDS)
@pytest.mark.parametrize("make", list(MAKERS.values()), ids=list(MAKERS))
def test_a_compacted_thread_runs_to_its_answers_on_every_simulated_reasoning_model(server, fmt, name, extra, make):
    """Four questions on one thread, the last needing four calls one after the other: every run ends with its
    answer (no 400, no calls asked again), and the strategy compacted something."""
    model, thread, strategy = sim_model(server, fmt, name, extra), Thread(), make()
    for question in QUESTIONS:
        result = run(model, question, tools=TOOLS, thread=thread, compact=strategy,
                     parallel_tool_calls=False if question == FOUR_CALLS else None)
        assert result.stop_reason == "final_answer", (question, result.summary(), result.error)
    # the last run looked up what the same question alone looks up (Ollama's API has no switch for parallel
    # calls; a preset that gets first calls wrong corrects them), and no call was asked again
    alone = run(model, FOUR_CALLS, tools=TOOLS, parallel_tool_calls=False)
    looked_up = sorted(r.result for r in result.results if r.ok)
    assert looked_up == sorted(r.result for r in alone.results if r.ok) and len(looked_up) >= 2
    assert result.steps == alone.steps
    assert any(m.reasoning is not None for m in thread.messages), "reasoning state was not on"
    assert sum(r.trace.count("compact") for r in thread.runs) >= 1


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), strategy=STRATEGIES)
def test_every_simulated_reasoning_model_accepts_every_compacted_thread(server, data, strategy):
    """Property: any strategy with any settings, on any simulated reasoning model, over a thread of three
    random questions: every request is accepted (a 400 would raise) and every run answers."""
    fmt, name, extra = data.draw(st.sampled_from(SIMULATED_REASONING_MODELS), label="model")
    questions = data.draw(st.lists(st.sampled_from(QUESTIONS), min_size=2, max_size=3), label="questions")
    model, thread = sim_model(server, fmt, name, extra), Thread()
    for question in questions:
        result = run(model, question, tools=TOOLS, thread=thread, compact=strategy,
                     parallel_tool_calls=False if question == FOUR_CALLS else None)
        assert result.stop_reason == "final_answer", (fmt, name, question, result.summary(), result.error)
        for r in thread.runs:
            assert check_history(r.messages, r.messages) is None
