"""The whole stack, end to end: agentkit.run -> HTTPModel -> codec -> real HTTP -> simulator, per format.

The same seed request must reach the same final answer through every wire format, streamed or not, with
the sync and the async driver: the formats differ on the wire, never in what the loop sees.
"""

from __future__ import annotations

import asyncio

import pytest

import agentkit
from agentkit import HTTPModel, Limits, StopReason, tool
from agentkit.providers import FORMATS


@tool
def get_weather(city: str) -> str:
    """指定した都市の現在の天気を返す。cityは日本語の都市名で渡す。"""
    return f"{city}は晴れ、22度です。"


@tool
def get_exchange_rate(base: str, quote: str) -> str:
    """2通貨間の為替レートを返す。baseとquoteはISO 4217の3文字コード（例: USD, JPY）。"""
    return f"1 {base} = 155.2 {quote}"


TOOLS = [get_weather, get_exchange_rate]
QUESTION = "東京の天気と、1ドル何円か教えて"


@pytest.fixture(scope="module")
def sim():
    with agentkit.sim.serve() as server:
        yield server


def outcome(run):
    """What the loop saw, independent of ids and wire details."""
    results = [(r.name, r.ok, r.result) for r in run.results]
    return run.stop_reason, run.steps, run.output, results


def model_for(sim, fmt: str, stream: bool):
    return HTTPModel("sim-reasoner", fmt, base_url=sim.base_url(fmt), api_key="sim-key")


def test_every_format_streamed_or_not_reaches_the_same_answer(sim):
    seen = {}
    for fmt in FORMATS:
        for stream in (False, True):
            model = model_for(sim, fmt, stream)
            run = agentkit.run(model, QUESTION, tools=TOOLS, stream=stream)
            model.close()
            seen[(fmt, stream)] = outcome(run)
    first = next(iter(seen.values()))
    assert first[0] is StopReason.FINAL_ANSWER and first[1] == 2
    assert first[3] == [("get_weather", True, "東京は晴れ、22度です。"),
                        ("get_exchange_rate", True, "1 USD = 155.2 JPY")]
    assert "155.2" in first[2] and "晴れ" in first[2]
    assert all(o == first for o in seen.values()), {k: v for k, v in seen.items() if v != first}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_async_driver_over_http_matches_the_sync_driver(sim, fmt):
    sync_model = HTTPModel("sim-reasoner", fmt, base_url=sim.base_url(fmt), api_key="sim-key")
    async_model = HTTPModel("sim-reasoner", fmt, base_url=sim.base_url(fmt), api_key="sim-key")

    async def go():
        try:
            return await agentkit.arun(async_model, QUESTION, tools=TOOLS)
        finally:
            await async_model.aclose()

    assert outcome(asyncio.run(go())) == outcome(agentkit.run(sync_model, QUESTION, tools=TOOLS))
    sync_model.close()


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_model_that_never_stops_is_stopped_by_the_step_cap_over_http(sim, fmt):
    model = HTTPModel("sim-always-tool", fmt, base_url=sim.base_url(fmt), api_key="sim-key")
    run = agentkit.run(model, QUESTION, tools=TOOLS, limits=Limits(max_steps=3))
    assert run.stop_reason is StopReason.MAX_STEPS and run.steps == 3
    calls = sum(len(m.tool_calls) for m in run.messages if m.role == "assistant")
    assert calls == sum(1 for m in run.messages if m.role == "tool")
    model.close()


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "openrouter"])
def test_malformed_arguments_are_caught_and_corrected_over_http(sim, fmt):
    # Only the formats whose arguments are JSON *text* can carry broken JSON; Anthropic and Gemini carry
    # an object, so the simulator's broken call arrives there as {} and the schema gate catches it.
    model = HTTPModel("sim-bad-json", fmt, base_url=sim.base_url(fmt), api_key="sim-key")
    run = agentkit.run(model, QUESTION, tools=TOOLS)
    assert run.stop_reason is StopReason.FINAL_ANSWER and run.invalid_calls >= 1
    kinds = [r.error_kind for r in run.results if not r.ok]
    assert "bad_json" in kinds
    model.close()


@pytest.mark.parametrize("fmt", ["anthropic", "gemini"])
def test_object_argument_formats_turn_broken_json_into_a_schema_error(sim, fmt):
    model = HTTPModel("sim-bad-json", fmt, base_url=sim.base_url(fmt), api_key="sim-key")
    run = agentkit.run(model, QUESTION, tools=TOOLS)
    assert run.stop_reason is StopReason.FINAL_ANSWER and run.invalid_calls >= 1
    assert {r.error_kind for r in run.results if not r.ok} == {"schema"}
    model.close()


def test_gpt6_needs_the_responses_api_for_tools(sim):
    chat = HTTPModel("gpt-6.1-sol", "openai-chat", base_url=sim.base_url("openai-chat"), api_key="k")
    with pytest.raises(agentkit.ModelCallError) as info:
        agentkit.run(chat, QUESTION, tools=TOOLS)
    assert isinstance(info.value.__cause__, agentkit.core.errors.BadRequestError)
    responses = HTTPModel("gpt-6.1-sol", "openai-responses", base_url=sim.base_url("openai-responses"),
                          api_key="k")
    assert agentkit.run(responses, QUESTION, tools=TOOLS).stop_reason is StopReason.FINAL_ANSWER
    chat.close()
    responses.close()


def test_claude_5x_refuses_a_forced_tool_choice_but_auto_works(sim):
    model = HTTPModel("claude-opus-5-5", "anthropic", base_url=sim.base_url("anthropic"), api_key="k")
    with pytest.raises(agentkit.ModelCallError) as info:
        agentkit.run(model, QUESTION, tools=TOOLS, tool_choice="required")
    assert info.value.__cause__.status == 400
    assert agentkit.run(model, QUESTION, tools=TOOLS).stop_reason is StopReason.FINAL_ANSWER
    model.close()


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_an_error_inside_a_stream_reaches_the_caller_typed_and_a_retry_answers(sim, fmt):
    """The `instream` fault: half the answer, then the provider's own error event inside the 200 stream."""
    options = agentkit.ModelOptions(stream=True)
    messages = [agentkit.Message.user(QUESTION)]
    specs = [t.spec for t in TOOLS]
    model = HTTPModel("sim-reasoner-instream", fmt, base_url=sim.base_url(fmt), api_key="sim-key", max_retries=0)
    # Gemini writes its error as raw JSON lines between the `data:` events (google-genai reads them); an SSE
    # parser keeps only `data:` lines, so there the stream just ends early: still a retryable error.
    # (Ollama's error line carries no kind once content has started: a server failure.)
    expected = (agentkit.core.errors.ServerError, agentkit.core.errors.BadResponseError) if fmt == "gemini" \
        else agentkit.core.errors.ServerError
    with pytest.raises(expected) as info:
        model.complete(messages, specs, options)
    assert info.value.retryable
    model.close()
    sim.reset()
    flaky = HTTPModel("sim-reasoner-instream-flaky", fmt, base_url=sim.base_url(fmt), api_key="sim-key",
                      sleep=lambda seconds: None)
    turn = flaky.complete(messages, specs, options)
    assert [c.name for c in turn.tool_calls] == ["get_weather", "get_exchange_rate"]
    assert [a.ok for a in flaky.last_attempts] == [False, True]
    flaky.close()


# --- reasoning models: the loop hands their state back, and a request without it is refused ----------------

#: The three mechanisms, each asked for in its API's own words.
REASONING = {
    "anthropic": ("claude-sonnet-4-5", {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 2048}),
    "gemini": ("gemini-3-flash-preview", {}),
    "openai-responses": ("gpt-6.1-sol", {"reasoning": {"effort": "low"}}),
}


@pytest.mark.parametrize("fmt", list(REASONING))
@pytest.mark.parametrize("stream", [False, True])
def test_run_keeps_each_providers_reasoning_state_and_finishes(sim, fmt, stream):
    model_name, extras = REASONING[fmt]
    model = HTTPModel(model_name, fmt, base_url=sim.base_url(fmt), api_key="sim-key", extra_body=extras)
    run = agentkit.run(model, QUESTION, tools=TOOLS, stream=stream)
    model.close()
    assert run.stop_reason is StopReason.FINAL_ANSWER and "155.2" in run.output
    first = next(m for m in run.messages if m.role == "assistant")
    assert first.reasoning is not None and first.reasoning.format == fmt


@pytest.mark.parametrize("fmt", ["anthropic", "openai-chat"])
def test_a_fallback_to_another_provider_drops_foreign_state_and_continues(sim, fmt):
    """A thread begun with Gemini 3 continues with another provider: the thought signatures stay behind."""
    thread = agentkit.Thread()
    gemini = HTTPModel("gemini-3-flash-preview", "gemini", base_url=sim.base_url("gemini"), api_key="sim-key")
    agentkit.run(gemini, QUESTION, tools=TOOLS, thread=thread)
    assert any(m.reasoning is not None for m in thread.messages)
    other = HTTPModel("sim-reasoner", fmt, base_url=sim.base_url(fmt), api_key="sim-key")
    run = agentkit.run(other, "And in Osaka?", tools=TOOLS, thread=thread)
    assert run.stop_reason is StopReason.FINAL_ANSWER
    gemini.close()
    other.close()


def test_a_tool_cycle_moved_to_claude_with_thinking_on_gets_claudes_400(sim):
    """Mid-cycle, the assistant turn Claude must see has no thinking block of its own: the API refuses."""
    gemini = HTTPModel("gemini-3-flash-preview", "gemini", base_url=sim.base_url("gemini"), api_key="sim-key")
    messages = [agentkit.Message.user(QUESTION)]
    turn = gemini.complete(messages, [t.spec for t in TOOLS])
    results = [agentkit.Message.tool(agentkit.ToolResult.success(c, "ok")) for c in turn.tool_calls]
    claude = HTTPModel("claude-sonnet-4-5", "anthropic", base_url=sim.base_url("anthropic"), api_key="sim-key",
                       extra_body=REASONING["anthropic"][1])
    with pytest.raises(agentkit.core.errors.BadRequestError, match="Expected `thinking` or `redacted_thinking`"):
        claude.complete([*messages, turn.as_message(), *results], [t.spec for t in TOOLS])
    plain = HTTPModel("claude-sonnet-4-5", "anthropic", base_url=sim.base_url("anthropic"), api_key="sim-key")
    assert plain.complete([*messages, turn.as_message(), *results], [t.spec for t in TOOLS]).text
    for model in (gemini, claude, plain):
        model.close()


@pytest.mark.parametrize("stream", [False, True])
def test_continuing_stored_responses_sends_only_the_new_items(sim, stream):
    sizes: dict[bool, list] = {}
    for continued in (False, True):
        model = HTTPModel("gpt-6.1-sol", "openai-responses", base_url=sim.base_url("openai-responses"),
                          api_key="sim-key", extra_body=REASONING["openai-responses"][1],
                          continue_stored_responses=continued)
        bodies: list = []
        model.on_attempt = lambda a, bodies=bodies: bodies.append(a.request_bytes)
        run = agentkit.run(model, "Weather in Tokyo, Osaka and Paris?", tools=TOOLS, parallel_tool_calls=False,
                           stream=stream, system="Be brief.")
        model.close()
        assert run.stop_reason is StopReason.FINAL_ANSWER and run.steps == 4
        sizes[continued] = bodies
    full, lean = sizes[False], sizes[True]
    assert full[0] == lean[0]                        # the first request has nothing to continue from
    assert full == sorted(full) and full[-1] > 2 * full[0]   # the whole conversation, growing
    assert max(lean[1:]) < full[1] and len(set(lean[1:])) <= 2  # the new items only, about the same each time
