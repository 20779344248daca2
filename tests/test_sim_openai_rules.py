"""The OpenAI and OpenRouter rules of December 2026, each driven over HTTP (the official openai SDK where one
applies, else httpx or HTTPModel) and named by the fidelity-ledger entry it checks:

    allowed_tools                  openai-chat.allowed_tools, openai-responses.allowed_tools
    strict schemas                 openai-chat.strict_additional_properties, openai-chat.strict_required
    an unknown item under store    openai-responses.item_not_found (a 404: NotFoundError)
    phase                          openai-responses.phase_emitted, openai-responses.phase_dropped
    spend and quota 429s           openai-chat.spend_limit, anthropic.spend_limit
    tool search                    openai-responses.deferred_tool_hidden, .deferred_without_tool_search,
                                   .tool_search_model
    OpenRouter without tools       openrouter.no_tool_endpoints
    Responses pairing              openai-responses.call_without_output
"""

from __future__ import annotations

import httpx
import openai
import pytest

import agentkit
from agentkit import HTTPModel, Limits, tool
from agentkit.core.errors import (
    ModelCallError,
    QuotaExceededError,
    RateLimitError,
    SpendLimitError,
    ToolsNotSupportedError,
)
from agentkit.core.types import Message, ModelOptions, ToolSpec
from agentkit.http.classify import final_class
from agentkit.providers import openai_responses as responses_codec
from agentkit.sim.fidelity import ledger

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TIME = {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}
ASK = "What is the weather in Paris?"
CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
              {"type": "function", "function": {"name": "get_time", "parameters": TIME}}]
FLAT_TOOLS = [{"type": "function", "name": "get_weather", "parameters": WEATHER, "strict": False},
              {"type": "function", "name": "get_time", "parameters": TIME, "strict": False}]


def words(entry_id: str, text: str) -> dict:
    """The parts of `text` the request decided, asserting it is the ledger entry's wording."""
    found = ledger()[entry_id].matches(text)
    assert found is not None, f"{text!r} is not the wording of {entry_id}"
    return found


@pytest.fixture(scope="module")
def oai(server):
    client = openai.OpenAI(base_url=server.base_url("openai-chat"), api_key="k", max_retries=0,
                           _strict_response_validation=True)
    yield client
    client.close()


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


@tool
def get_time(zone: str) -> str:
    """The time in a time zone."""
    return f"{zone}: 12:00"


def model_on(server, fmt: str, model: str, **kw) -> HTTPModel:
    return HTTPModel(model, fmt, base_url=server.base_url(fmt), api_key="k", seed=0, sleep=lambda s: None, **kw)


# --- tool_choice allowed_tools: the subset reaches the model ---------------------------------------------

def test_chat_allowed_tools_required_calls_only_the_allowed_tool(oai):
    choice = {"type": "allowed_tools", "allowed_tools": {
        "mode": "required", "tools": [{"type": "function", "function": {"name": "get_time"}}]}}
    message = oai.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": ASK}],
                                          tools=CHAT_TOOLS, tool_choice=choice).choices[0].message
    assert [c.function.name for c in message.tool_calls] == [ledger()["openai-chat.allowed_tools"].wording]


def test_chat_allowed_tools_auto_may_answer_but_never_calls_outside_the_subset(oai):
    choice = {"type": "allowed_tools", "allowed_tools": {
        "mode": "auto", "tools": [{"type": "function", "function": {"name": "get_time"}}]}}
    message = oai.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": ASK}],
                                          tools=CHAT_TOOLS, tool_choice=choice).choices[0].message
    assert all(c.function.name == "get_time" for c in message.tool_calls or ())
    # without the subset the same request calls get_weather: the subset, not the question, decided
    plain = oai.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": ASK}],
                                        tools=CHAT_TOOLS).choices[0].message
    assert [c.function.name for c in plain.tool_calls] == ["get_weather"]


def test_responses_allowed_tools_is_flat_and_echoed_as_sent(oai):
    choice = {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "get_time"}]}
    response = oai.responses.create(model="gpt-4.1-mini", input=ASK, tools=FLAT_TOOLS, tool_choice=choice)
    assert [i.name for i in response.output if i.type == "function_call"] == ["get_time"]
    assert response.tool_choice.type == "allowed_tools" and response.tool_choice.mode == "required"
    # Chat's nested form is not Responses' shape: refused like any missing field
    with pytest.raises(openai.BadRequestError, match="Missing required parameter: 'tool_choice.mode'"):
        oai.responses.create(model="gpt-4.1-mini", input=ASK, tools=FLAT_TOOLS, tool_choice={
            "type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": []}})


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "openrouter"])
def test_the_loop_asks_for_a_subset_and_the_model_keeps_to_it(server, fmt):
    model = model_on(server, fmt, "openai/gpt-4.1-mini" if fmt == "openrouter" else "gpt-4.1-mini")
    run = agentkit.run(model, ASK, tools=[get_weather, get_time], limits=Limits(max_steps=3),
                       tool_choice={"allowed": ["get_time"], "mode": "required"})
    assert run.results and {r.name for r in run.results} == {"get_time"}
    with pytest.raises(ValueError, match="allowed names tools"):
        agentkit.run(model, ASK, tools=[get_weather], tool_choice={"allowed": ["get_news"], "mode": "auto"})


def test_the_codecs_write_both_shapes():
    from agentkit.providers import openai_chat

    subset = {"allowed": ["get_time"], "mode": "auto"}
    assert openai_chat.tool_choice_to_wire(subset) == {"type": "allowed_tools", "allowed_tools": {
        "mode": "auto", "tools": [{"type": "function", "function": {"name": "get_time"}}]}}
    assert responses_codec.tool_choice_to_wire(subset) == {
        "type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "get_time"}]}


# --- strict function schemas ----------------------------------------------------------------------------

LOOSE = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
         "required": ["city"]}


def test_chat_refuses_a_strict_tool_strict_mode_cannot_take(oai):
    tools = [{"type": "function", "function": {"name": "forecast", "parameters": LOOSE, "strict": True}}]
    with pytest.raises(openai.BadRequestError) as info:
        oai.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": ASK}], tools=tools)
    assert words("openai-chat.strict_additional_properties", info.value.body["message"]) == {
        "name": "forecast", "context": "()"}
    assert info.value.code == "invalid_function_parameters" and info.value.param == "tools[0].function.parameters"
    closed = {**LOOSE, "additionalProperties": False}
    tools = [{"type": "function", "function": {"name": "forecast", "parameters": closed, "strict": True}}]
    with pytest.raises(openai.BadRequestError) as info:
        oai.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": ASK}], tools=tools)
    assert words("openai-chat.strict_required", info.value.body["message"])["key"] == "days"
    # not strict: the same schema is fine (Chat Completions is best-effort by default)
    tools = [{"type": "function", "function": {"name": "forecast", "parameters": LOOSE}}]
    oai.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": ASK}], tools=tools)


def test_a_nested_object_is_named_by_its_context(oai):
    nested = {"type": "object", "additionalProperties": False, "required": ["where"],
              "properties": {"where": {"type": "object", "properties": {"city": {"type": "string"}},
                                       "required": ["city"]}}}
    with pytest.raises(openai.BadRequestError) as info:
        oai.responses.create(model="gpt-4.1-mini", input=ASK, tools=[
            {"type": "function", "name": "forecast", "parameters": nested, "strict": True}])
    assert words("openai-chat.strict_additional_properties", info.value.body["message"])["context"] == \
        "('properties', 'where')"
    assert info.value.param == "tools[0].parameters"


def test_responses_refuses_only_an_explicit_strict_true(oai):
    """Left out, `strict` makes Responses normalize the schema or fall back to best effort: no 400."""
    oai.responses.create(model="gpt-4.1-mini", input=ASK, tools=[
        {"type": "function", "name": "forecast", "parameters": LOOSE}])
    with pytest.raises(openai.BadRequestError, match="'additionalProperties' is required"):
        oai.responses.create(model="gpt-4.1-mini", input=ASK, tools=[
            {"type": "function", "name": "forecast", "parameters": LOOSE, "strict": True}])


def test_the_kits_strict_tools_pass(server):
    @tool(strict=True)
    def forecast(city: str, days: int = 1) -> str:
        """A forecast."""
        return f"{city}: sunny for {days} days"

    for fmt in ("openai-chat", "openai-responses"):
        run = agentkit.run(model_on(server, fmt, "gpt-4.1-mini"), "Forecast for Paris?", tools=[forecast])
        assert run.stop_reason == "final_answer" and run.results


# --- Responses: pairing and stored items -----------------------------------------------------------------

def test_a_call_without_its_output_is_refused_in_the_apis_words(oai):
    call = {"type": "function_call", "call_id": "call_A", "name": "get_weather", "arguments": "{}"}
    with pytest.raises(openai.BadRequestError) as info:
        oai.responses.create(model="gpt-4.1-mini", input=[{"role": "user", "content": ASK}, call], tools=FLAT_TOOLS)
    assert words("openai-responses.call_without_output", info.value.body["message"]) == {"id": "call_A"}


def test_an_item_never_stored_is_a_404_not_found(oai):
    with pytest.raises(openai.NotFoundError) as info:
        oai.responses.create(model="gpt-4.1-mini", store=False, input=[
            {"role": "user", "content": ASK}, {"type": "reasoning", "id": "rs_gone", "summary": []},
            {"role": "assistant", "content": "sunny"}])
    assert words("openai-responses.item_not_found", info.value.body["message"]) == {"id": "rs_gone"}


# --- phase --------------------------------------------------------------------------------------------------

TWO_CITIES = "Weather in Paris and in Tokyo?"


def responses_loop(client, model: str, keep_phase: bool) -> tuple[int, list[str]]:
    """A two-call task, one call per turn, replaying each output whole (or without its phase)."""
    items: list = [{"role": "user", "content": TWO_CITIES}]
    calls, phases = 0, []
    for _ in range(6):
        output = [i.model_dump(exclude_none=True) for i in client.responses.create(
            model=model, input=items, tools=FLAT_TOOLS, parallel_tool_calls=False).output]
        phases += [i["phase"] for i in output if i["type"] == "message"]
        if not keep_phase:
            output = [{k: v for k, v in i.items() if k != "phase"} for i in output]
        items += output
        done = [i for i in output if i["type"] == "function_call"]
        if not done:
            return calls, phases
        calls += len(done)
        items += [{"type": "function_call_output", "call_id": c["call_id"], "output": "sunny"} for c in done]
    raise AssertionError("no answer")


def test_phase_models_mark_commentary_and_final_answer(oai):
    calls, phases = responses_loop(oai, "gpt-5.4", keep_phase=True)
    assert calls == 2 and phases == ["commentary", "commentary", "final_answer"]
    assert ledger()["openai-responses.phase_emitted"].wording == "commentary final_answer"
    # models the sources do not name mark no phase
    assert oai.responses.create(model="gpt-4.1-mini", input=ASK).output[0].phase is None


def test_a_history_without_phase_degrades_and_the_model_stops_early(oai, server):
    """The kit's model of the reported effect: the dropped commentary is taken for the answer."""
    before = len(server.rule_logs())
    calls, _ = responses_loop(oai, "gpt-5.4", keep_phase=False)
    assert calls == 1  # against 2 with phase kept
    found = [f for log in server.rule_logs()[before:] for f in log.findings
             if f.rule == "openai-responses.phase_dropped"]
    assert found and found[0].outcome == "degraded" and found[0].where == "input[1]"
    assert found[0].words == ledger()["openai-responses.phase_dropped"].wording


def test_the_codec_keeps_phase_and_sends_it_back(server):
    """HTTPModel on Responses: the phase rides in the turn's ReasoningState and goes back; no degradation."""
    before = len(server.rule_logs())
    run = agentkit.run(model_on(server, "openai-responses", "gpt-5.4"), TWO_CITIES, tools=[get_weather],
                       parallel_tool_calls=False)
    assert run.stop_reason == "final_answer" and len(run.results) == 2
    logs = server.rule_logs()[before:]
    assert not any(f.outcome == "degraded" for log in logs for f in log.findings)
    assert any(f.rule == "openai-responses.phase_dropped" and f.outcome == "passed"
               for log in logs for f in log.findings)
    kept = [m.reasoning.items for m in run.messages if m.role == "assistant" and m.reasoning]
    assert {"type": "message", "phase": "commentary"} in kept[0]


def test_phase_goes_back_where_the_message_stood():
    output = [{"type": "message", "role": "assistant", "phase": "commentary",
               "content": [{"type": "output_text", "text": "Calling get_weather."}]},
              {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "{}"}]
    turn = responses_codec.parse_response({"id": "resp_1", "model": "gpt-5.4", "status": "completed",
                                           "output": output})
    body = responses_codec.build_request("gpt-5.4", [Message.user(ASK), turn.as_message()]).body
    assert [(i.get("type"), i.get("phase")) for i in body["input"][1:]] == [(None, "commentary"),
                                                                            ("function_call", None)]
    # another model gets no phase (the state is this model's alone)
    other = responses_codec.build_request("gpt-4.1", [Message.user(ASK), turn.as_message()]).body
    assert "phase" not in other["input"][1]


# --- spend and quota 429s: final ----------------------------------------------------------------------------

@pytest.mark.parametrize("fmt, model, code", [
    ("openai-chat", "gpt-4.1-mini-spend", "project_spend_limit_exceeded"),
    ("openai-responses", "gpt-4.1-mini-spend", "project_spend_limit_exceeded"),
    ("anthropic", "claude-sonnet-4-5-spend", "enforced_spend_limit_reached")])
def test_a_spend_limit_is_one_attempt_no_retry_no_fallback(server, fmt, model, code):
    model = model_on(server, fmt, model, max_retries=4, fallback_models=["gpt-4.1" if "gpt" in model else
                                                                           "claude-haiku-4-5"])
    with pytest.raises(SpendLimitError) as info:
        model.complete([Message.user(ASK)], [], ModelOptions())
    assert [a.status for a in model.last_attempts] == [429] and info.value.error_type == code
    assert isinstance(info.value, QuotaExceededError) and not info.value.retryable
    entry = "anthropic.spend_limit" if fmt == "anthropic" else "openai-chat.spend_limit"
    assert ledger()[entry].matches(info.value.message.removesuffix(" (simulated fault)")) is not None


def test_the_loop_stops_on_a_spend_limit_with_the_typed_error(server):
    with pytest.raises(ModelCallError) as info:
        agentkit.run(model_on(server, "openai-chat", "gpt-4.1-mini-spend"), ASK, tools=[get_weather])
    assert isinstance(info.value.__cause__, SpendLimitError)


@pytest.mark.parametrize("code", ["organization_spend_limit_exceeded", "project_spend_limit_exceeded",
                                  "credit_balance_exhausted", "organization_usage_limit_exceeded"])
def test_the_code_alone_makes_a_429_final(code):
    """OpenAI's help centre: read error.code (the type may be something else than insufficient_quota)."""
    body = {"error": {"type": "requests", "code": code, "message": "x"}}
    assert final_class(429, body, "x") == (SpendLimitError, code)


def test_anthropic_details_make_a_429_final_and_a_rate_limit_stays_retryable():
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "x",
                                       "details": {"error_code": "enforced_spend_limit_reached"}}}
    assert final_class(429, body, "x") == (SpendLimitError, "enforced_spend_limit_reached")
    assert final_class(429, {"error": {"type": "requests", "code": "rate_limit_exceeded"}}, "slow down") is None


def test_an_ordinary_429_is_still_retried(server):
    model = model_on(server, "openai-chat", "gpt-4.1-mini-429-flaky", max_retries=2)
    turn = model.complete([Message.user(ASK)], [], ModelOptions())
    assert turn.text and [a.status for a in model.last_attempts] == [429, 200]
    assert issubclass(RateLimitError, type(RateLimitError("x"))) and RateLimitError.retryable


# --- tool search ------------------------------------------------------------------------------------------------

DEFERRED = [{"type": "function", "name": "get_weather", "description": "Current weather for a city",
             "parameters": WEATHER, "strict": False, "defer_loading": True},
            {"type": "function", "name": "get_time", "description": "The time in a time zone",
             "parameters": TIME, "strict": False, "defer_loading": True},
            {"type": "tool_search"}]


def test_a_deferred_tool_is_searched_then_called_and_the_search_round_trips(oai):
    first = oai.responses.create(model="gpt-6.1-sol", input=ASK, tools=DEFERRED)
    kinds = [i.type for i in first.output]
    assert " ".join(kinds) == ledger()["openai-responses.deferred_tool_hidden"].wording
    loaded = first.output[1]
    assert loaded.execution == "server" and [t.name for t in loaded.tools] == ["get_weather"]
    items = [i.model_dump(exclude_none=True) for i in first.output]
    call = first.output[2]
    second = oai.responses.create(model="gpt-6.1-sol", tools=DEFERRED, input=[
        {"role": "user", "content": ASK}, *items,
        {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}])
    assert "sunny" in second.output_text
    with oai.responses.stream(model="gpt-6.1-sol", input=ASK, tools=DEFERRED) as stream:
        streamed = stream.get_final_response()
    assert [i.type for i in streamed.output] == kinds


def test_a_deferred_schema_is_not_counted_until_loaded(oai):
    eager = [{k: v for k, v in t.items() if k != "defer_loading"} for t in DEFERRED[:2]]
    hidden = oai.responses.create(model="gpt-6.1-sol", input="Hello", tools=DEFERRED).usage.input_tokens
    shown = oai.responses.create(model="gpt-6.1-sol", input="Hello", tools=eager).usage.input_tokens
    assert hidden < shown


def test_tool_search_rules_in_the_apis_words(oai):
    with pytest.raises(openai.BadRequestError, match="Deferred tools require tools.tool_search"):
        oai.responses.create(model="gpt-5.4", input=ASK, tools=DEFERRED[:2])
    with pytest.raises(openai.BadRequestError) as info:
        oai.responses.create(model="gpt-5.2", input=ASK, tools=DEFERRED)
    assert words("openai-responses.tool_search_model", info.value.body["message"]) == {"model": "gpt-5.2"}


def test_the_codec_replays_the_search_items_whole():
    output = [{"type": "tool_search_call", "id": "tsc_1", "execution": "server", "status": "completed",
               "arguments": {"query": "get_weather"}},
              {"type": "tool_search_output", "id": "tso_1", "execution": "server", "status": "completed",
               "tools": [{"type": "function", "name": "get_weather", "parameters": WEATHER, "strict": False}]},
              {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "{}"}]
    turn = responses_codec.parse_response({"id": "r", "model": "gpt-5.4", "status": "completed", "output": output})
    body = responses_codec.build_request("gpt-5.4", [Message.user(ASK), turn.as_message()]).body
    assert body["input"][1:] == [output[0], output[1], {**output[2]}]


def test_namespaced_functions_are_deferred_too(oai):
    namespace = {"type": "namespace", "name": "weather", "description": "Weather tools",
                 "tools": [{**DEFERRED[0]}]}
    first = oai.responses.create(model="gpt-6.1-sol", input=ASK, tools=[namespace, {"type": "tool_search"}])
    assert [i.type for i in first.output][:2] == ["tool_search_call", "tool_search_output"]


# --- OpenRouter: a model without tools ------------------------------------------------------------------------

def test_a_tool_less_openrouter_model_answers_404_and_the_client_types_it(server):
    r = httpx.post(server.base_url("openrouter") + "/chat/completions", headers={"authorization": "Bearer k"},
                   json={"model": "google/gemma-3-27b-it:free", "messages": [{"role": "user", "content": ASK}],
                         "tools": CHAT_TOOLS})
    assert r.status_code == 404 and r.json()["error"]["code"] == 404
    assert words("openrouter.no_tool_endpoints", r.json()["error"]["message"]) == {"tool": "get_weather"}
    model = model_on(server, "openrouter", "google/gemma-3-27b-it:free", max_retries=3)
    with pytest.raises(ToolsNotSupportedError) as info:
        model.complete([Message.user(ASK)], [ToolSpec("get_weather", "", WEATHER)], ModelOptions())
    assert len(model.last_attempts) == 1 and "google/gemma-3-27b-it:free" in str(info.value)
    # without tools the same model answers
    assert model.complete([Message.user("Hello")], [], ModelOptions()).text
    listed = httpx.get(server.base_url("openrouter") + "/models").json()["data"]
    assert next(m for m in listed if m["id"] == "google/gemma-3-27b-it:free")["supported_parameters"] == []
