"""Budgets: tokens, dollars and seconds, each stopping a model that never stops, with its own stop reason."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentkit import LimitExceeded, Limits, StopReason, Thread, call, run, tool
from agentkit.core.budgets import DEFAULT_PRICES, TOKEN_KINDS, Price, cost, tokens_of
from agentkit.core.errors import UnknownPriceError
from agentkit.core.drive import arun
from agentkit.core.types import ModelTurn, Usage
from agentkit.models import FunctionModel
from agentkit.providers import anthropic, gemini, ollama, openai_chat, openai_responses


@tool
def search(q: str) -> str:
    """Search something."""
    return f"results for {q}"


def never_ending(usage: Usage = Usage(100, 20, 5, 30), model: str = "claude-sonnet-4-5", calls: int = 2,
                 answer: str = "Here is what I found so far.") -> FunctionModel:
    """Two calls every turn, `usage` each turn, and never an answer while tools are offered."""
    def fn(messages, tools, options):
        if options.tool_choice == "none":
            return ModelTurn(text=answer, usage=usage, model=model)
        step = sum(m.role == "assistant" for m in messages)
        return ModelTurn(tool_calls=tuple(call("search", {"q": f"{step}-{i}"}) for i in range(calls)),
                         stop="tool_calls", usage=usage, model=model)
    return FunctionModel(fn, "never_ending")


def answered(run_) -> bool:
    """Every call in the history has exactly one result, right after its turn."""
    asked = [c.id for m in run_.messages for c in m.tool_calls]
    answers = [m.tool_call_id for m in run_.messages if m.role == "tool"]
    return sorted(asked) == sorted(answers) and len(set(answers)) == len(answers)


# -- usage kinds, as each format reports them --------------------------------------------------------------

def test_each_format_fills_reasoning_and_cached_tokens_from_its_own_usage_fields():
    chat = openai_chat._usage_from_wire({"prompt_tokens": 96, "completion_tokens": 48, "total_tokens": 144,
                                         "prompt_tokens_details": {"cached_tokens": 64, "cache_write_tokens": 8},
                                         "completion_tokens_details": {"reasoning_tokens": 16}})
    responses = openai_responses._usage_from_wire({"input_tokens": 90, "output_tokens": 52, "total_tokens": 142,
                                                   "input_tokens_details": {"cached_tokens": 32,
                                                                            "cache_write_tokens": 20},
                                                   "output_tokens_details": {"reasoning_tokens": 12}})
    claude = anthropic._usage_from_wire({"input_tokens": 10, "output_tokens": 96, "cache_read_input_tokens": 300,
                                         "cache_creation_input_tokens": 100,
                                         "cache_creation": {"ephemeral_5m_input_tokens": 70,
                                                            "ephemeral_1h_input_tokens": 30},
                                         "output_tokens_details": {"thinking_tokens": 40}})
    google = gemini._usage_from_wire({"promptTokenCount": 71, "candidatesTokenCount": 30, "thoughtsTokenCount": 25,
                                      "cachedContentTokenCount": 50})
    # cache writes are kept apart from reads (OpenRouter's Chat usage and Responses' carry them too)
    assert chat == Usage(96, 48, reasoning_tokens=16, cached_tokens=64, cache_write_tokens=8)
    assert responses == Usage(90, 52, reasoning_tokens=12, cached_tokens=32, cache_write_tokens=20)
    assert claude == Usage(410, 96, reasoning_tokens=40, cached_tokens=300, cache_write_tokens=100,
                           cache_write_1h_tokens=30)
    assert google == Usage(71, 55, reasoning_tokens=25, cached_tokens=50)  # thoughts are billed as output


def test_ollama_reports_no_reasoning_or_cached_tokens_so_they_count_zero():
    turn = ollama.parse_response({"model": "llama3.2", "message": {"role": "assistant", "content": "hi"},
                                  "done": True, "done_reason": "stop", "prompt_eval_count": 12, "eval_count": 3})
    assert turn.usage == Usage(12, 3)


def test_usage_without_the_new_kinds_serialises_as_before_and_round_trips():
    assert Usage(3, 4).to_dict() == {"input_tokens": 3, "output_tokens": 4}
    rich = Usage(3, 4, 1, 2)
    assert Usage.from_dict(rich.to_dict()) == rich and rich + rich == Usage(6, 8, 2, 4)
    cached = Usage(30, 4, cached_tokens=10, cache_write_tokens=12, cache_write_1h_tokens=2)
    assert Usage.from_dict(cached.to_dict()) == cached and (cached + cached).cache_write_1h_tokens == 4


# -- each budget stops a never-ending model ----------------------------------------------------------------

@pytest.mark.parametrize("kind, cap, steps", [("input", 250, 3), ("output", 50, 3), ("reasoning", 12, 3),
                                              ("cached", 80, 3), ("total", 300, 3)])
def test_a_token_budget_ends_the_run_with_its_own_stop_reason_and_every_call_answered(kind, cap, steps):
    result = run(never_ending(), "research", tools=[search], limits=Limits(max_tokens={kind: cap}))
    assert result.stop_reason is StopReason.TOKEN_BUDGET and result.steps == steps
    assert result.limit.limit == f"max_tokens:{kind}" and tokens_of(result.usage, kind) > cap
    assert result.output == result.messages[-1].content and f"{kind} tokens exceeded" in result.output
    assert answered(result)
    last_batch = [m for m in result.messages if m.role == "tool"][-2:]
    assert all('"not_run"' in m.content for m in last_batch)  # spent already: the results could not be read


def test_a_thread_token_budget_counts_across_runs():
    thread, limits = Thread(), Limits(max_thread_tokens={"input": 250})
    first = run(never_ending(), "one", tools=[search], limits=Limits(max_steps=2), thread=thread)
    assert first.stop_reason is StopReason.MAX_STEPS and thread.usage.input_tokens == 200
    second = run(never_ending(), "two", tools=[search], limits=limits, thread=thread)
    assert second.stop_reason is StopReason.TOKEN_BUDGET and second.steps == 1
    assert second.limit.limit == "max_thread_tokens:input" and "thread input tokens" in second.output


def test_the_cost_budget_uses_the_price_table_and_names_the_dollars():
    # claude-sonnet-4-5: $3 in, $0.30 cached, $15 out per million: 70*3 + 30*0.3 + 20*15 = 519 µ$ a turn
    result = run(never_ending(), "research", tools=[search], limits=Limits(max_cost_usd=0.0015))
    assert result.stop_reason is StopReason.COST_BUDGET and result.steps == 3
    assert result.cost() == (pytest.approx(3 * 519e-6), ())
    assert result.output == "Budget reached: cost exceeded ($0.0016/$0.0015)."


def test_a_user_price_overrides_the_table():
    cheap = {"claude-sonnet-4-5": Price(input=0.0, output=0.0)}
    result = run(never_ending(), "go", tools=[search], limits=Limits(max_cost_usd=0.001, max_steps=4, prices=cheap))
    assert result.stop_reason is StopReason.MAX_STEPS and result.cost(cheap).usd == 0.0


def test_an_unknown_model_says_it_has_no_price_instead_of_guessing():
    model = never_ending(model="sim-reasoner")
    with pytest.raises(UnknownPriceError, match="no price for model 'sim-reasoner'") as raised:
        run(model, "go", tools=[search], limits=Limits(max_cost_usd=1.0))
    assert raised.value.model == "sim-reasoner" and answered(raised.value.run)
    without_budget = run(model, "go", tools=[search], limits=Limits(max_steps=2))
    assert without_budget.cost() == (0.0, ("sim-reasoner",))


def test_prices_match_a_dated_snapshot_and_an_openrouter_prefix():
    usage = {"claude-haiku-4-5-20251001": Usage(1_000_000, 0), "anthropic/claude-haiku-4-5": Usage(0, 1_000_000)}
    assert cost(usage) == (pytest.approx(1.0 + 5.0), ())
    assert all(p.source and p.checked for p in DEFAULT_PRICES.values())


def test_openrouters_dotted_ids_find_the_hyphenated_price_and_a_dotted_openai_id_keeps_its_own():
    # OpenRouter spells a Claude version with a dot; the Messages API (and the table) with a hyphen
    usage = {"anthropic/claude-sonnet-4.5": Usage(1_000_000, 0), "anthropic/claude-opus-5.5": Usage(0, 1_000_000),
             "openai/gpt-6.1-sol": Usage(1_000_000, 0)}
    assert cost(usage) == (pytest.approx(3.0 + 20.0 + 2.0), ())
    result = run(never_ending(model="anthropic/claude-sonnet-4.5"), "go", tools=[search],
                 limits=Limits(max_cost_usd=1.0, max_steps=2))
    assert result.stop_reason is StopReason.MAX_STEPS and result.cost().unpriced == ()


def test_cache_writes_cost_more_than_input_and_reads_less_as_the_pricing_page_says():
    # Opus 5.5: $4 input, 5-minute writes $5 (1.25x), 1-hour writes $8 (2x), hits $0.20 (0.05x), output $20
    opus = DEFAULT_PRICES["claude-opus-5-5"]
    assert (opus.cache_write, opus.cache_write_1h) == (opus.input * 1.25, opus.input * 2)
    million = 1_000_000
    assert opus.usd(Usage(million, 0)) == pytest.approx(4.0)
    assert opus.usd(Usage(million, 0, cache_write_tokens=million)) == pytest.approx(5.0)
    assert opus.usd(Usage(million, 0, cache_write_tokens=million, cache_write_1h_tokens=million)) == pytest.approx(8.0)
    assert opus.usd(Usage(million, 0, cached_tokens=million)) == pytest.approx(0.20)
    # a request of 1M input tokens: 600K read, 300K written for 5 minutes, 100K fresh, and 10K output
    mixed = Usage(million, 10_000, cached_tokens=600_000, cache_write_tokens=300_000)
    assert opus.usd(mixed) == pytest.approx(0.6 * 0.20 + 0.3 * 5.0 + 0.1 * 4.0 + 0.01 * 20.0)
    # every 5-minute write price in the table is 1.25x its input and every 1-hour one 2x, as the page says
    claude = [p for name, p in DEFAULT_PRICES.items() if name.startswith("claude-")]
    assert all(p.cache_write == p.input * 1.25 and p.cache_write_1h == p.input * 2 for p in claude)


def test_a_price_without_cache_prices_bills_the_cache_as_input():
    plain = Price(input=2.0, output=8.0)
    assert plain.usd(Usage(1_000_000, 0, cached_tokens=400_000, cache_write_tokens=300_000)) == pytest.approx(2.0)


def test_the_current_claude_models_are_priced_and_an_unlisted_one_is_named_not_guessed():
    for model in ("claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5", "claude-fable-5-1",
                  "claude-mythos-5-1", "gpt-6.1-sol", "gpt-6-astra", "gpt-6.1-terra", "gemini-3-flash-preview"):
        assert cost({model: Usage(10, 10)}).unpriced == (), model
    assert cost({"claude-fable-5-2": Usage(10, 10), "gemini-4-argon": Usage(1, 1)}).unpriced == (
        "claude-fable-5-2", "gemini-4-argon")


class FakeClock:
    """Seconds that pass only when a test says so."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_time_budget_reads_an_injected_clock_also_while_tools_run():
    clock = FakeClock()

    @tool
    def slow(q: str) -> str:
        """Takes 4 seconds of the fake clock."""
        clock.now += 4
        return q

    def fn(messages, tools, options):
        return [call("slow", {"q": "x"})]
    result = run(FunctionModel(fn), "go", tools=[slow], limits=Limits(max_seconds=10, clock=clock))
    assert result.stop_reason is StopReason.TIME_BUDGET and result.steps == 3  # 12 s > 10 s after 3 batches
    assert result.output == "Budget reached: time exceeded (12/10 s)." and answered(result)


def test_continue_answers_the_calls_and_gives_the_model_one_last_call_without_tools():
    result = run(never_ending(), "research", tools=[search],
                 limits=Limits(max_tokens={"output": 50}, exit_behavior="continue"))
    assert result.stop_reason is StopReason.TOKEN_BUDGET and result.steps == 4
    assert result.output == "Here is what I found so far." == result.messages[-1].content
    spent = [m for m in result.messages if m.role == "tool"][-2:]
    assert all("Answer now with what you have" in m.content for m in spent) and answered(result)
    assert [e.data["action"] for e in result.trace.of("limit")] == ["wrap_up"]


def test_continue_ends_when_the_last_call_still_asks_for_tools():
    def stubborn(messages, tools, options):
        return ModelTurn(tool_calls=(call("search", {"q": "more"}),), usage=Usage(10, 30), model="m")
    result = run(FunctionModel(stubborn), "go", tools=[search],
                 limits=Limits(max_tokens={"output": 50}, exit_behavior="continue"))
    assert result.stop_reason is StopReason.TOKEN_BUDGET and result.steps == 3 and answered(result)
    assert result.output.startswith("Budget reached: output tokens exceeded")


def test_error_raises_limit_exceeded_carrying_the_partial_run():
    with pytest.raises(LimitExceeded) as raised:
        run(never_ending(), "go", tools=[search], limits=Limits(max_tokens={"total": 100}, exit_behavior="error"))
    error = raised.value
    assert error.limit == "max_tokens:total" and error.run.stop_reason is StopReason.ERROR
    assert answered(error.run) and error.run.usage.total_tokens == 120


def test_arun_keeps_the_same_budgets():
    result = asyncio.run(arun(never_ending(), "go", tools=[search], limits=Limits(max_tokens={"output": 50})))
    assert result.stop_reason is StopReason.TOKEN_BUDGET and result.steps == 3 and answered(result)


def test_bad_budgets_say_what_to_use():
    with pytest.raises(TypeError, match=r"Limits.max_tokens=1000: a budget per token kind, e.g. \{'total': 1000\}"):
        Limits(max_tokens=1000)
    with pytest.raises(ValueError, match="unknown token kind 'thinking'"):
        Limits(max_tokens={"thinking": 10})
    with pytest.raises(ValueError, match="max_cost_usd"):
        Limits(max_cost_usd=-1)
    with pytest.raises(TypeError, match="prices"):
        Limits(prices={"m": 3.0})


@given(per_turn=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 200)), min_size=1, max_size=8),
       kind=st.sampled_from(TOKEN_KINDS[:2] + ("total",)), cap=st.integers(0, 600),
       behavior=st.sampled_from(["end", "continue"]))
def test_a_token_budget_stops_at_the_first_turn_that_goes_past_it(per_turn, kind, cap, behavior):
    """Property: the run stops right after the first model call whose running total exceeds the cap."""
    def fn(messages, tools, options):
        step = sum(m.role == "assistant" for m in messages)
        used = Usage(*per_turn[min(step, len(per_turn) - 1)])
        if options.tool_choice == "none":
            return ModelTurn(text="done", usage=used, model="m")
        return ModelTurn(tool_calls=(call("search", {"q": str(step)}),), usage=used, model="m")
    result = run(FunctionModel(fn), "go", tools=[search],
                 limits=Limits(max_steps=10, max_tokens={kind: cap}, exit_behavior=behavior))
    totals, running = [], Usage()
    for step in range(9):  # at the 10th call the step cap wins: it is checked first
        running = running + Usage(*per_turn[min(step, len(per_turn) - 1)])
        totals.append(tokens_of(running, kind))
    first_over = next((i + 1 for i, t in enumerate(totals) if t > cap), None)
    assert answered(result)
    if first_over is None:
        assert result.stop_reason is StopReason.MAX_STEPS
    else:
        assert result.stop_reason is StopReason.TOKEN_BUDGET
        assert result.steps == first_over + (1 if behavior == "continue" else 0)


def test_a_cancel_wins_over_the_last_call_a_spent_budget_allows():
    answered_once = []
    result = run(never_ending(), "go", tools=[search], cancel=lambda: bool(answered_once),
                 on_event=lambda e: answered_once.append(e) if e.kind == "model_response" else None,
                 limits=Limits(max_tokens={"output": 10}, exit_behavior="continue"))
    assert result.stop_reason is StopReason.USER_CANCEL and result.steps == 1 and answered(result)


def test_a_model_without_a_name_is_priced_under_none_and_the_error_names_the_way():
    from agentkit import ModelTurn, Usage, call, run, tool
    from agentkit.core.budgets import Price
    from agentkit.core.errors import UnknownPriceError
    from agentkit.models import FunctionModel

    @tool
    def work(x: int) -> str:
        """Work."""
        return "done"

    def nameless(messages, tools, options):
        return ModelTurn(tool_calls=(call("work", {"x": 1}),), stop="tool_calls", usage=Usage(1000, 100))
    with pytest.raises(UnknownPriceError, match=r"Limits\(prices=\{None: Price") as refused:
        run(FunctionModel(nameless), "go", tools=[work], limits=Limits(max_cost_usd=0.01, prices={"x": Price(1, 1)}))
    assert refused.value.model is None
    priced = Limits(max_steps=50, max_cost_usd=0.01, prices={None: Price(input=2.0, output=10.0)})
    r = run(FunctionModel(nameless), "go", tools=[work], limits=priced)
    assert r.stop_reason == "cost_budget" and r.steps == 4 and r.cost({None: Price(2.0, 10.0)}).unpriced == ()
    with pytest.raises(TypeError, match="prices key 3"):
        Limits(prices={3: Price(1, 1)})
