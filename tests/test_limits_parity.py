"""Every limit of five peers, expressed in agentkit (and run), or named as one agentkit cannot express.

The peers' semantics, as their documentation states them (checked 2026-12-01):
- LangChain `ModelCallLimitMiddleware(thread_limit, run_limit, exit_behavior "end" | "error")` and
  `ToolCallLimitMiddleware(thread_limit, run_limit, tool_name, exit_behavior "continue" | "error" | "end")`
  (reference.langchain.com, langchain.agents.middleware).
- AI SDK `stopWhen`: `stepCountIs(n)`, `hasToolCall(name)`, or any function of the steps (ai-sdk.dev,
  ai-sdk-core/step-count-is; the source of stop-condition.ts).
- pydantic-ai `UsageLimits`: `request_limit`, `tool_calls_limit`, `input_tokens_limit`, `output_tokens_limit`,
  `total_tokens_limit`, `count_tokens_before_request` (pydantic_ai/usage.py).
- Inspect: `message_limit`, `token_limit`, `time_limit`, `working_limit`, `cost_limit`
  (inspect.aisi.org.uk/setting-limits.html).
- OpenRouter `callModel({stopWhen})`: `stepCountIs`, `hasToolCall`, `maxTokensUsed`, `maxCost`, and the server
  tools' `finish_reason_is` (openrouter.ai/docs/sdks/call-model/stop-conditions).

The README's parity table is this table; `test_the_readme_shows_the_parity_table` keeps them in step.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkit import LimitExceeded, Limits, StopReason, Thread, call, run, tool
from agentkit.core.types import ModelTurn, Usage
from agentkit.models import FunctionModel

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


@tool
def search(q: str) -> str:
    """Search something."""
    return f"results for {q}"


@tool(return_direct=True)
def finish(summary: str) -> str:
    """Hand in the result."""
    return summary


def stubborn(finish_at: int | None = None) -> FunctionModel:
    """One search a turn (100 input, 10 output tokens, a priced model), never an answer; calls `finish`
    alone at turn `finish_at`."""
    def fn(messages, tools, options):
        step = sum(m.role == "assistant" for m in messages) + 1
        name, arguments = ("finish", {"summary": "done"}) if step == finish_at else ("search", {"q": str(step)})
        return ModelTurn(tool_calls=(call(name, arguments),), usage=Usage(100, 10), model="claude-haiku-4-5")
    return FunctionModel(fn)


# (library, limit, agentkit's expression or None, what the row shows or why agentkit cannot)
PARITY = [
    ("LangChain", "ModelCallLimitMiddleware(run_limit=n)", "Limits(max_steps=n)", "stops before model call n+1"),
    ("LangChain", "ModelCallLimitMiddleware(thread_limit=n)", "Limits(max_thread_steps=n)",
     "model calls across a Thread's runs"),
    ("LangChain", "ModelCallLimitMiddleware(exit_behavior=...)", "Limits(exit_behavior='end' or 'error')",
     "end with a message, or raise with the partial run"),
    ("LangChain", "ToolCallLimitMiddleware(run_limit=n)", "Limits(max_tool_calls=n)", "tool calls per run"),
    ("LangChain", "ToolCallLimitMiddleware(thread_limit=n)", "Limits(max_thread_tool_calls=n)",
     "tool calls across a Thread's runs"),
    ("LangChain", "ToolCallLimitMiddleware(tool_name=t)", "Limits(max_calls_per_tool={t: n})", "calls of one tool"),
    ("LangChain", "ToolCallLimitMiddleware(exit_behavior=...)", "Limits(exit_behavior='continue', 'end' or 'error')",
     "the same three words"),
    ("AI SDK", "stopWhen: stepCountIs(n)", "Limits(max_steps=n)", "n model calls"),
    ("AI SDK", "stopWhen: hasToolCall(name)", "@tool(return_direct=True)",
     "only when every call of the batch is return_direct (hasToolCall stops on any batch containing it)"),
    ("AI SDK", "stopWhen: custom function of the steps", "run(cancel=lambda: ...)",
     "any predicate, checked before each model call; the stop reason is user_cancel"),
    ("pydantic-ai", "UsageLimits(request_limit=n)", "Limits(max_steps=n)", "n model calls"),
    ("pydantic-ai", "UsageLimits(tool_calls_limit=n)", "Limits(max_tool_calls=n)", "tool calls per run"),
    ("pydantic-ai", "UsageLimits(input_tokens_limit=n)", "Limits(max_tokens={'input': n})", "token_budget"),
    ("pydantic-ai", "UsageLimits(output_tokens_limit=n)", "Limits(max_tokens={'output': n})", "token_budget"),
    ("pydantic-ai", "UsageLimits(total_tokens_limit=n)", "Limits(max_tokens={'total': n})", "token_budget"),
    ("pydantic-ai", "UsageLimits(count_tokens_before_request=True)", None,
     "agentkit counts the tokens the provider reports after a call; it does not ask the provider to count first"),
    ("Inspect", "token_limit", "Limits(max_tokens={'total': n})", "token_budget"),
    ("Inspect", "time_limit", "Limits(max_seconds=s)", "time_budget, read from an injectable clock"),
    ("Inspect", "cost_limit", "Limits(max_cost_usd=x)", "cost_budget, from a dated price table"),
    ("Inspect", "message_limit", None,
     "agentkit counts model calls and tool calls, not messages; max_steps + max_tool_calls bound them"),
    ("Inspect", "working_limit", None,
     "time minus waits for rate limits and shared resources: agentkit's clock does not know what was waiting"),
    ("OpenRouter", "stopWhen: stepCountIs(n)", "Limits(max_steps=n)", "n model calls"),
    ("OpenRouter", "stopWhen: hasToolCall(name)", "@tool(return_direct=True)", "as for the AI SDK"),
    ("OpenRouter", "stopWhen: maxTokensUsed(n)", "Limits(max_tokens={'total': n})", "token_budget"),
    ("OpenRouter", "stopWhen: maxCost(x)", "Limits(max_cost_usd=x)", "cost_budget"),
    ("OpenRouter", "server tools: finish_reason_is(reason)", None,
     "agentkit's loop ends on the absence of calls, not on a finish reason; cancel= cannot read the last turn"),
]


def test_every_row_is_expressed_or_says_why_not():
    assert len({(lib, limit) for lib, limit, _, _ in PARITY}) == len(PARITY)
    assert {lib for lib, *_ in PARITY} == {"LangChain", "AI SDK", "pydantic-ai", "Inspect", "OpenRouter"}
    assert all(why for *_, why in PARITY)


def test_the_readme_shows_the_parity_table():
    for library, limit, expression, _ in PARITY:
        row = f"| {library} | `{limit}` | " + (f"`{expression}`" if expression else "**cannot**")
        assert row in README, row


# -- the expressed rows, run ------------------------------------------------------------------------------

@pytest.mark.parametrize("limits, steps, reason", [
    (Limits(max_steps=3), 3, StopReason.MAX_STEPS),  # run_limit / stepCountIs / request_limit
    (Limits(max_tool_calls=2), 3, StopReason.TOOL_LIMIT),  # ToolCallLimit run_limit / tool_calls_limit
    (Limits(max_calls_per_tool={"search": 2}), 3, StopReason.TOOL_LIMIT),  # tool_name
    (Limits(max_tokens={"input": 250}), 3, StopReason.TOKEN_BUDGET),  # input_tokens_limit
    (Limits(max_tokens={"output": 25}), 3, StopReason.TOKEN_BUDGET),  # output_tokens_limit
    (Limits(max_tokens={"total": 250}), 3, StopReason.TOKEN_BUDGET),  # total / token_limit / maxTokensUsed
    (Limits(max_cost_usd=0.0003), 3, StopReason.COST_BUDGET),  # cost_limit / maxCost: $1 + $5 per Mtok
])
def test_each_expressed_limit_stops_a_stubborn_model(limits, steps, reason):
    result = run(stubborn(), "go", tools=[search], limits=limits)
    assert (result.steps, result.stop_reason) == (steps, reason)


def test_thread_limits_count_across_runs():
    thread = Thread()
    run(stubborn(), "one", tools=[search], limits=Limits(max_steps=2), thread=thread)
    second = run(stubborn(), "two", tools=[search], limits=Limits(max_thread_steps=3), thread=thread)
    assert (second.steps, second.stop_reason, second.limit.limit) == (1, StopReason.MAX_STEPS, "max_thread_steps")
    third = run(stubborn(), "three", tools=[search], limits=Limits(max_thread_tool_calls=4), thread=thread)
    assert third.stop_reason is StopReason.TOOL_LIMIT and thread.tool_call_count == 4


def test_the_exit_behaviors_are_langchains_three():
    with pytest.raises(LimitExceeded):
        run(stubborn(), "go", tools=[search], limits=Limits(max_steps=2, exit_behavior="error"))
    kept_going = run(stubborn(), "go", tools=[search], limits=Limits(max_steps=4, max_tool_calls=1,
                                                                     exit_behavior="continue"))
    assert kept_going.stop_reason is StopReason.MAX_STEPS and kept_going.tool_call_count == 1


def test_has_tool_call_is_a_return_direct_tool():
    result = run(stubborn(finish_at=2), "go", tools=[search, finish])
    assert (result.steps, result.stop_reason, result.output) == (2, StopReason.RETURN_DIRECT, "done")


def test_a_custom_stop_condition_is_a_cancel_function():
    calls = []
    result = run(stubborn(), "go", tools=[search], cancel=lambda: len(calls) >= 2,
                 on_event=lambda e: calls.append(e) if e.kind == "tool_end" else None)
    assert (result.steps, result.stop_reason) == (2, StopReason.USER_CANCEL)


def test_time_limit_reads_the_injected_clock():
    ticks = iter(range(0, 1000, 4))
    result = run(stubborn(), "go", tools=[search], limits=Limits(max_seconds=10, clock=lambda: next(ticks)))
    assert result.stop_reason is StopReason.TIME_BUDGET
