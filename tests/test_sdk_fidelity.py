"""The official SDKs, pointed at the simulator, run the seed's two-tool parallel loop unchanged.

The seed (000) asks "東京の天気と、1ドル何円か教えて" with two tools, get_weather(city) and
get_exchange_rate(base, quote). Against the simulator each SDK must see what it would see from the
real API: a first response with two parallel calls, then, after the test sends both results back
through the SDK, a final answer quoting them. Streaming goes through each SDK's own stream helpers.
The OpenAI and Anthropic clients run with `_strict_response_validation=True`, so every response is
validated against the SDK's pydantic models (google-genai always validates).

The documented quirks must surface as the SDK's own exception classes, and a 429 carrying
retry-after-ms must be retried by the SDK and then succeed.
"""

from __future__ import annotations

import json
import time

import pytest


# The SDKs are dev dependencies (pyproject [dev]): a missing one is an install error, not a skip.
import anthropic  # noqa: E402
import openai  # noqa: E402
from google import genai  # noqa: E402
from google.genai import errors as genai_errors  # noqa: E402
from google.genai import types as gt  # noqa: E402

from agentkit import sim  # noqa: E402
from agentkit.sim.wire import anthropic as anthropic_server  # noqa: E402

ASK = "東京の天気と、1ドル何円か教えて"
CLAUDE = "claude-sonnet-5-5"  # an id from the anthropic SDK's model list (the 4-5 ids warn: deprecated)
WEATHER_DOC = "指定した都市の現在の天気を返す。cityは日本語の都市名で渡す。"
RATE_DOC = "2通貨間の為替レートを返す。baseとquoteはISO 4217の3文字コード（例: USD, JPY）。"
WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
RATE_SCHEMA = {"type": "object", "properties": {"base": {"type": "string"}, "quote": {"type": "string"}},
               "required": ["base", "quote"]}


def get_weather(city: str) -> str:
    return f"{city}は晴れ、22度です。"


def get_exchange_rate(base: str, quote: str) -> str:
    return f"1 {base} = 155.2 {quote}"


TOOLS = {"get_weather": get_weather, "get_exchange_rate": get_exchange_rate}


def run_tool(name: str, arguments: dict) -> str:
    return TOOLS[name](**arguments)


def assert_quotes_both(text: str | None) -> None:
    assert text and "22度" in text and "155.2" in text, text


CHAT_TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": WEATHER_DOC, "parameters": WEATHER_SCHEMA}},
    {"type": "function", "function": {"name": "get_exchange_rate", "description": RATE_DOC, "parameters": RATE_SCHEMA}},
]
RESPONSES_TOOLS = [
    {"type": "function", "name": "get_weather", "description": WEATHER_DOC, "parameters": WEATHER_SCHEMA,
     "strict": False},
    {"type": "function", "name": "get_exchange_rate", "description": RATE_DOC, "parameters": RATE_SCHEMA,
     "strict": False},
]
ANTHROPIC_TOOLS = [
    {"name": "get_weather", "description": WEATHER_DOC, "input_schema": WEATHER_SCHEMA},
    {"name": "get_exchange_rate", "description": RATE_DOC, "input_schema": RATE_SCHEMA},
]


@pytest.fixture()
def oai(server):
    client = openai.OpenAI(base_url=server.sdk_base_url("openai-chat"), api_key="sk-sim",
                           _strict_response_validation=True)
    yield client
    client.close()


@pytest.fixture()
def claude(server):
    client = anthropic.Anthropic(base_url=server.sdk_base_url("anthropic"), api_key="sk-ant-sim",
                                 _strict_response_validation=True)
    yield client
    client.close()


@pytest.fixture()
def gemini(server):
    return genai.Client(api_key="AIza-sim", http_options=gt.HttpOptions(base_url=server.sdk_base_url("gemini")))


# --- OpenAI Chat Completions ----------------------------------------------------------------------

def chat_tool_messages(calls) -> list[dict]:
    return [{"role": "tool", "tool_call_id": c.id,
             "content": run_tool(c.function.name, json.loads(c.function.arguments))} for c in calls]


def test_openai_chat_two_tool_parallel_loop(oai):
    messages: list = [{"role": "user", "content": ASK}]
    first = oai.chat.completions.create(model="sim-reasoner", messages=messages, tools=CHAT_TOOLS)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert [c.function.name for c in choice.message.tool_calls] == ["get_weather", "get_exchange_rate"]
    assert json.loads(choice.message.tool_calls[0].function.arguments) == {"city": "東京"}
    assert first._request_id and first._request_id.startswith("req_")

    messages += [choice.message.model_dump(exclude_none=True), *chat_tool_messages(choice.message.tool_calls)]
    final = oai.chat.completions.create(model="sim-reasoner", messages=messages, tools=CHAT_TOOLS)
    assert final.choices[0].finish_reason == "stop"
    assert_quotes_both(final.choices[0].message.content)


def test_openai_chat_streaming_loop_with_the_stream_helper(oai):
    messages: list = [{"role": "user", "content": ASK}]
    with oai.chat.completions.stream(model="sim-reasoner", messages=messages, tools=CHAT_TOOLS,
                                     stream_options={"include_usage": True}) as stream:
        first = stream.get_final_completion()
    calls = first.choices[0].message.tool_calls
    assert [c.function.name for c in calls] == ["get_weather", "get_exchange_rate"]
    assert first.usage and first.usage.total_tokens > 0

    messages += [{"role": "assistant", "tool_calls": [c.model_dump(exclude_none=True, exclude={"parsed_arguments"})
                                                      for c in calls]},
                 *chat_tool_messages(calls)]
    pieces = [chunk.choices[0].delta.content or "" for chunk in
              oai.chat.completions.create(model="sim-reasoner", messages=messages, tools=CHAT_TOOLS, stream=True)
              if chunk.choices]
    assert len(pieces) > 1
    assert_quotes_both("".join(pieces))


def test_openai_gpt6_tools_on_chat_is_a_bad_request_error(oai):
    with pytest.raises(openai.BadRequestError) as info:
        oai.chat.completions.create(model="gpt-6.1-sol", messages=[{"role": "user", "content": ASK}],
                                    tools=CHAT_TOOLS)
    assert "tool calling requires Responses" in info.value.message
    assert info.value.request_id and info.value.request_id.startswith("req_")


# --- OpenAI Responses -----------------------------------------------------------------------------

def test_openai_responses_two_tool_parallel_loop_with_gpt6(oai):
    items: list = [{"role": "user", "content": ASK}]
    first = oai.responses.create(model="gpt-6.1-sol", input=items, tools=RESPONSES_TOOLS)
    calls = [item for item in first.output if item.type == "function_call"]
    assert [c.name for c in calls] == ["get_weather", "get_exchange_rate"]

    items += [item.model_dump(exclude_none=True) for item in first.output]
    items += [{"type": "function_call_output", "call_id": c.call_id,
               "output": run_tool(c.name, json.loads(c.arguments))} for c in calls]
    final = oai.responses.create(model="gpt-6.1-sol", input=items, tools=RESPONSES_TOOLS)
    assert not [item for item in final.output if item.type == "function_call"]
    assert_quotes_both(final.output_text)


def test_openai_responses_streaming_loop_with_the_stream_helper(oai):
    items: list = [{"role": "user", "content": ASK}]
    with oai.responses.stream(model="sim-reasoner", input=items, tools=RESPONSES_TOOLS) as stream:
        kinds = {event.type for event in stream}
        first = stream.get_final_response()
    assert "response.function_call_arguments.delta" in kinds
    calls = [item for item in first.output if item.type == "function_call"]
    assert len(calls) == 2

    items += [item.model_dump(exclude_none=True) for item in first.output]
    items += [{"type": "function_call_output", "call_id": c.call_id,
               "output": run_tool(c.name, json.loads(c.arguments))} for c in calls]
    with oai.responses.stream(model="sim-reasoner", input=items, tools=RESPONSES_TOOLS) as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert len(deltas) > 1
    assert_quotes_both(final.output_text)


# --- Anthropic ------------------------------------------------------------------------------------

def anthropic_results(blocks) -> dict:
    return {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": b.id, "content": run_tool(b.name, b.input)}
        for b in blocks if b.type == "tool_use"]}


def test_anthropic_two_tool_parallel_loop(claude):
    messages: list = [{"role": "user", "content": ASK}]
    first = claude.messages.create(model=CLAUDE, max_tokens=1024, messages=messages,
                                   tools=ANTHROPIC_TOOLS)
    assert first.stop_reason == "tool_use"
    uses = [b for b in first.content if b.type == "tool_use"]
    assert [b.name for b in uses] == ["get_weather", "get_exchange_rate"]
    assert uses[1].input == {"base": "USD", "quote": "JPY"}
    assert first._request_id and first._request_id.startswith("req_")

    messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                 anthropic_results(first.content)]
    final = claude.messages.create(model=CLAUDE, max_tokens=1024, messages=messages,
                                   tools=ANTHROPIC_TOOLS)
    assert final.stop_reason == "end_turn"
    assert_quotes_both("".join(b.text for b in final.content if b.type == "text"))


def test_anthropic_streaming_loop_with_the_stream_helper(claude):
    messages: list = [{"role": "user", "content": ASK}]
    with claude.messages.stream(model=CLAUDE, max_tokens=1024, messages=messages,
                                tools=ANTHROPIC_TOOLS) as stream:
        first = stream.get_final_message()
    assert [b.name for b in first.content if b.type == "tool_use"] == ["get_weather", "get_exchange_rate"]

    messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
                 anthropic_results(first.content)]
    with claude.messages.stream(model=CLAUDE, max_tokens=1024, messages=messages,
                                tools=ANTHROPIC_TOOLS) as stream:
        pieces = list(stream.text_stream)
    assert len(pieces) > 1
    assert_quotes_both("".join(pieces))


@pytest.mark.parametrize("choice", [{"type": "any"}, {"type": "tool", "name": "get_weather"}])
@pytest.mark.parametrize("model", ["claude-opus-5-5", "claude-fable-5-1"])
def test_anthropic_forced_tool_choice_on_opus_5_5_is_a_bad_request_error(claude, choice, model):
    with pytest.raises(anthropic.BadRequestError) as info:
        claude.messages.create(model=model, max_tokens=1024, tool_choice=choice,
                               messages=[{"role": "user", "content": ASK}], tools=ANTHROPIC_TOOLS)
    assert info.value.body["error"] == {"type": "invalid_request_error", "message": anthropic_server.FORCED_TOOL_USE}
    # ... and tool_choice auto is fine on the same model.
    ok = claude.messages.create(model=model, max_tokens=1024, tool_choice={"type": "auto"},
                                messages=[{"role": "user", "content": ASK}], tools=ANTHROPIC_TOOLS)
    assert ok.stop_reason == "tool_use"


# --- google-genai ---------------------------------------------------------------------------------

GEMINI_CONFIG = gt.GenerateContentConfig(
    tools=[gt.Tool(function_declarations=[
        gt.FunctionDeclaration(name="get_weather", description=WEATHER_DOC, parameters_json_schema=WEATHER_SCHEMA),
        gt.FunctionDeclaration(name="get_exchange_rate", description=RATE_DOC, parameters_json_schema=RATE_SCHEMA),
    ])],
    automatic_function_calling=gt.AutomaticFunctionCallingConfig(disable=True),
)


def gemini_results(calls) -> gt.Content:
    return gt.Content(role="user", parts=[
        gt.Part(function_response=gt.FunctionResponse(id=c.id, name=c.name,
                                                      response={"result": run_tool(c.name, c.args)}))
        for c in calls])


def test_gemini_two_tool_parallel_loop(gemini):
    contents: list = [gt.Content(role="user", parts=[gt.Part(text=ASK)])]
    first = gemini.models.generate_content(model="gemini-2.5-flash", contents=contents, config=GEMINI_CONFIG)
    assert [c.name for c in first.function_calls] == ["get_weather", "get_exchange_rate"]
    assert first.function_calls[0].args == {"city": "東京"}

    contents += [first.candidates[0].content, gemini_results(first.function_calls)]
    final = gemini.models.generate_content(model="gemini-2.5-flash", contents=contents, config=GEMINI_CONFIG)
    assert not final.function_calls
    assert_quotes_both(final.text)


def test_gemini_streaming_loop(gemini):
    contents: list = [gt.Content(role="user", parts=[gt.Part(text=ASK)])]
    calls = []
    parts = []
    for chunk in gemini.models.generate_content_stream(model="gemini-2.5-flash", contents=contents,
                                                       config=GEMINI_CONFIG):
        calls += chunk.function_calls or []
        parts += chunk.candidates[0].content.parts or []
    assert [c.name for c in calls] == ["get_weather", "get_exchange_rate"]

    contents += [gt.Content(role="model", parts=parts), gemini_results(calls)]
    pieces = [chunk.text or "" for chunk in gemini.models.generate_content_stream(
        model="gemini-2.5-flash", contents=contents, config=GEMINI_CONFIG)]
    assert len(pieces) > 1
    assert_quotes_both("".join(pieces))


# --- OpenRouter through the OpenAI SDK --------------------------------------------------------------

def test_openrouter_fallback_list_through_the_openai_sdk(server):
    client = openai.OpenAI(base_url=server.sdk_base_url("openrouter"), api_key="sk-or-sim",
                           _strict_response_validation=True, max_retries=0)
    with client:
        r = client.chat.completions.create(model="sim-reasoner-503", messages=[{"role": "user", "content": ASK}],
                                           tools=CHAT_TOOLS, extra_body={"models": ["sim-reasoner-503", "gpt-4.1"]})
    assert r.model == "gpt-4.1"
    assert [c.function.name for c in r.choices[0].message.tool_calls] == ["get_weather", "get_exchange_rate"]
    assert r.model_extra.get("provider")  # OpenRouter's extra field survives strict validation


# --- model lists ------------------------------------------------------------------------------------

def test_each_sdk_lists_the_simulators_models(oai, claude, gemini):
    from agentkit.sim.behaviours import KNOWN_MODELS

    assert [m.id for m in oai.models.list()] == list(KNOWN_MODELS)
    assert [m.id for m in claude.models.list()] == list(KNOWN_MODELS)
    assert [m.name for m in gemini.models.list()] == [f"models/{n}" for n in KNOWN_MODELS]


# --- faults through the SDKs ----------------------------------------------------------------------

def sdk_waits(monkeypatch, sdk) -> list[float]:
    """The seconds an SDK's retry loop sleeps, as it asks for them (its base client's `time.sleep`, which
    still sleeps): what the SDK chose to wait, read without a stopwatch."""
    import types

    real_time = time  # the real module, for everything else the base client reads from it
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        real_time.sleep(seconds)

    shim = types.SimpleNamespace(**{name: getattr(real_time, name) for name in dir(real_time)
                                    if not name.startswith("__")})
    shim.sleep = sleep
    monkeypatch.setattr(sdk._base_client, "time", shim)
    return waits


def test_openai_sdk_retries_a_429_with_retry_after_ms_and_succeeds(server, oai, monkeypatch):
    server.reset()
    waits = sdk_waits(monkeypatch, openai)
    r = oai.chat.completions.create(model="sim-reasoner", messages=[{"role": "user", "content": ASK}],
                                    tools=CHAT_TOOLS, extra_headers={"x-sim-fault": "429=50, flaky"})
    assert r.choices[0].finish_reason == "tool_calls"
    # The SDK waited the server's 50 ms (retry-after-ms), not its own 0.5 s default backoff.
    assert waits == [0.05]


def test_anthropic_sdk_retries_a_429_with_retry_after_ms_and_succeeds(server, claude, monkeypatch):
    server.reset()
    waits = sdk_waits(monkeypatch, anthropic)
    r = claude.messages.create(model="claude-sonnet-5-5-429-flaky", max_tokens=1024,
                               messages=[{"role": "user", "content": ASK}], tools=ANTHROPIC_TOOLS)
    assert r.stop_reason == "tool_use" and r.model == "claude-sonnet-5-5-429-flaky"
    assert waits == [0.1]  # retry-after-ms: 100 was honoured


def test_sdk_exception_classes_for_each_fault(server):
    oai = openai.OpenAI(base_url=server.sdk_base_url("openai-chat"), api_key="k", max_retries=0)
    claude = anthropic.Anthropic(base_url=server.sdk_base_url("anthropic"), api_key="k", max_retries=0)
    gem = genai.Client(api_key="k", http_options=gt.HttpOptions(base_url=server.sdk_base_url("gemini")))
    user = [{"role": "user", "content": ASK}]

    expected_openai = {"429": openai.RateLimitError, "500": openai.InternalServerError,
                       "529": openai.InternalServerError, "drop": openai.APIConnectionError,
                       "truncate": openai.APIConnectionError}
    for fault, exc in expected_openai.items():
        with pytest.raises(exc):
            oai.chat.completions.create(model=f"sim-reasoner-{fault}", messages=user)
    expected_anthropic = {"429": anthropic.RateLimitError, "529": anthropic.OverloadedError,
                          "503": anthropic.InternalServerError, "drop": anthropic.APIConnectionError}
    for fault, exc in expected_anthropic.items():
        with pytest.raises(exc):
            claude.messages.create(model=f"{CLAUDE}-{fault}", max_tokens=64, messages=user)
    with pytest.raises(openai.NotFoundError):
        oai.chat.completions.create(model="no-such-model", messages=user)
    with pytest.raises(genai_errors.ClientError) as info:
        gem.models.generate_content(model="gemini-2.5-flash-429", contents=ASK)
    assert info.value.code == 429 and info.value.status == "RESOURCE_EXHAUSTED"
    with pytest.raises(genai_errors.ServerError) as info:
        gem.models.generate_content(model="gemini-2.5-flash-529", contents=ASK)
    assert info.value.code == 503
    oai.close()
    claude.close()


def test_missing_key_is_the_sdks_authentication_error():
    import httpx

    # The SDKs refuse to send without a key, so strip the header on the way out.
    def no_auth(request: httpx.Request) -> None:
        for name in ("authorization", "x-api-key"):
            if name in request.headers:
                del request.headers[name]

    http = httpx.Client(event_hooks={"request": [no_auth]})
    try:
        # The simulator needs no key unless asked to want one, as the real API does.
        with sim.serve(require_key=True) as wants_a_key:
            oai = openai.OpenAI(base_url=wants_a_key.sdk_base_url("openai-chat"), api_key="k", max_retries=0,
                                http_client=http)
            with pytest.raises(openai.AuthenticationError):
                oai.chat.completions.create(model="sim-reasoner", messages=[{"role": "user", "content": "hi"}])
    finally:
        http.close()


# --- errors inside a 200 stream (the `instream` fault) ---------------------------------------------

def test_each_sdk_raises_on_its_providers_in_stream_error(server):
    """Half of the answer, then each provider's own error event: every official client raises on it."""
    user = [{"role": "user", "content": ASK}]
    oai = openai.OpenAI(base_url=server.sdk_base_url("openai-chat"), api_key="k", max_retries=0)
    with pytest.raises(openai.APIError, match="overloaded"):  # `data: {"error": ...}`
        list(oai.chat.completions.create(model="sim-reasoner-instream", messages=user, tools=CHAT_TOOLS,
                                         stream=True))
    router = openai.OpenAI(base_url=server.sdk_base_url("openrouter"), api_key="k", max_retries=0)
    with pytest.raises(openai.APIError, match="model is down"):  # the chunk with finish_reason "error"
        list(router.chat.completions.create(model="sim-reasoner-instream", messages=user, tools=CHAT_TOOLS,
                                            stream=True))
    # Responses: the SDK yields the `error` event to the caller, who reads its code.
    events = list(oai.responses.create(model="sim-reasoner-instream429", input=ASK, tools=RESPONSES_TOOLS,
                                       stream=True))
    assert (events[-1].type, events[-1].code) == ("error", "rate_limit_exceeded")
    claude = anthropic.Anthropic(base_url=server.sdk_base_url("anthropic"), api_key="k", max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as info:  # `event: error`, overloaded_error, in a 200
        with claude.messages.stream(model=f"{CLAUDE}-instream", max_tokens=256, messages=user,
                                    tools=ANTHROPIC_TOOLS) as stream:
            stream.get_final_message()
    assert "overloaded_error" in str(info.value)
    gem = genai.Client(api_key="k", http_options=gt.HttpOptions(base_url=server.sdk_base_url("gemini")))
    with pytest.raises(genai_errors.ServerError) as gerr:  # raw JSON lines between the `data:` events
        list(gem.models.generate_content_stream(model="gemini-2.5-flash-instream", contents=ASK,
                                                config=GEMINI_CONFIG))
    assert gerr.value.code == 503 and gerr.value.status == "UNAVAILABLE"
    oai.close()
    router.close()
    claude.close()


# --- reasoning state: each SDK replaying its own objects keeps it; dropping it gets the API's 400 ---------

def test_anthropic_thinking_blocks_replayed_pass_and_dropped_are_refused(claude):
    user = [{"role": "user", "content": ASK}]
    ask = {"model": CLAUDE, "max_tokens": 2048, "tools": ANTHROPIC_TOOLS, "thinking": {"type": "adaptive"}}
    first = claude.messages.create(messages=user, **ask)
    assert [b.type for b in first.content] == ["thinking", "tool_use", "tool_use"] and first.content[0].signature

    def history(blocks):
        return [*user, {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in blocks]},
                anthropic_results(first.content)]

    final = claude.messages.create(messages=history(first.content), **ask)
    assert final.stop_reason == "end_turn"
    assert_quotes_both("".join(b.text for b in final.content if b.type == "text"))
    with pytest.raises(anthropic.BadRequestError) as info:
        claude.messages.create(messages=history([b for b in first.content if b.type != "thinking"]), **ask)
    assert info.value.body["error"]["message"].startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`.")
    with pytest.raises(anthropic.BadRequestError, match="are not supported for this model"):  # a 5.x rule
        claude.messages.create(messages=user, tool_choice={"type": "any"}, **ask)
    older = ask | {"model": "claude-sonnet-4-5", "thinking": {"type": "enabled", "budget_tokens": 1024}}
    with pytest.raises(anthropic.BadRequestError, match="Thinking may not be enabled when tool_choice forces"):
        claude.messages.create(messages=user, tool_choice={"type": "any"}, **older)

    # The stream helper's final message holds the block whole (thinking_delta + signature_delta).
    with claude.messages.stream(messages=user, **ask) as stream:
        streamed = stream.get_final_message()
    assert streamed.content[0].model_dump() == first.content[0].model_dump()
    assert claude.messages.create(messages=history(streamed.content), **ask).stop_reason == "end_turn"


def test_openai_responses_reasoning_items_replayed_pass_and_dropped_are_refused(oai):
    user = [{"role": "user", "content": ASK}]
    ask = {"model": "gpt-6.1-sol", "tools": RESPONSES_TOOLS, "reasoning": {"effort": "low", "summary": "auto"}}
    first = oai.responses.create(input=user, **ask)
    assert [i.type for i in first.output] == ["reasoning", "function_call", "function_call"]
    assert first.output[0].encrypted_content and first.output[0].summary

    def outputs_for(response) -> list[dict]:
        return [{"type": "function_call_output", "call_id": c.call_id,
                 "output": run_tool(c.name, json.loads(c.arguments))}
                for c in response.output if c.type == "function_call"]

    outputs = outputs_for(first)

    def history(items, answers=outputs):
        return [*user, *[i.model_dump(exclude_none=True) for i in items], *answers]

    assert_quotes_both(oai.responses.create(input=history(first.output), **ask).output_text)
    with pytest.raises(openai.BadRequestError) as info:
        oai.responses.create(input=history([i for i in first.output if i.type != "reasoning"]), **ask)
    assert "of type 'function_call' was provided without its required 'reasoning' item" in info.value.message

    # Stored (the default): continue from the response with only the new items; a made-up id is refused.
    assert_quotes_both(oai.responses.create(previous_response_id=first.id, input=outputs, **ask).output_text)
    with pytest.raises(openai.BadRequestError) as info:
        oai.responses.create(previous_response_id="resp_made_up", input=outputs, **ask)
    assert info.value.code == "previous_response_not_found" and info.value.param == "previous_response_id"

    # Stateless (another model, so that no item of it was ever stored): the reasoning item must carry its
    # encrypted_content; sent by id alone, it names an item the server never kept.
    lean_ask = {**ask, "model": "o4-mini", "store": False}
    lean = oai.responses.create(input=user, include=["reasoning.encrypted_content"], **lean_ask)
    assert_quotes_both(oai.responses.create(input=history(lean.output, outputs_for(lean)), **lean_ask).output_text)
    by_id = [i.model_dump(exclude_none=True, exclude={"encrypted_content"}) if i.type == "reasoning" else
             i.model_dump(exclude_none=True) for i in lean.output]
    # ... a 404, as the real API answers it, so the SDK raises NotFoundError (ledger: item_not_found)
    with pytest.raises(openai.NotFoundError, match="Items are not persisted when `store` is set to false"):
        oai.responses.create(input=[*user, *by_id, *outputs_for(lean)], **lean_ask)

    # The stream helper's final response replays the same way.
    with oai.responses.stream(input=user, **ask) as stream:
        kinds = {event.type for event in stream}
        streamed = stream.get_final_response()
    assert {"response.reasoning_summary_text.delta", "response.output_item.done"} <= kinds
    assert streamed.output[0].encrypted_content
    assert_quotes_both(oai.responses.create(input=history(streamed.output), **ask).output_text)


def test_gemini_3_thought_signatures_replayed_pass_and_dropped_are_refused(gemini):
    contents: list = [gt.Content(role="user", parts=[gt.Part(text=ASK)])]
    first = gemini.models.generate_content(model="gemini-3-flash-preview", contents=contents, config=GEMINI_CONFIG)
    parts = first.candidates[0].content.parts
    assert [p.thought_signature is not None for p in parts] == [True, False]  # a parallel batch: the first only
    final = gemini.models.generate_content(model="gemini-3-flash-preview", config=GEMINI_CONFIG,
                                           contents=[*contents, first.candidates[0].content,
                                                     gemini_results(first.function_calls)])
    assert_quotes_both(final.text)
    # Rebuilding the parts from name and args drops the signature: the API's 400.
    rebuilt = gt.Content(role="model", parts=[gt.Part(function_call=c) for c in first.function_calls])
    with pytest.raises(genai_errors.ClientError) as info:
        gemini.models.generate_content(model="gemini-3-flash-preview", config=GEMINI_CONFIG,
                                       contents=[*contents, rebuilt, gemini_results(first.function_calls)])
    assert info.value.code == 400 and "Function call is missing a thought_signature" in info.value.message
    assert "`default_api:get_weather` , position 2." in info.value.message
    # A signature cut short (or another API's) is refused as corrupted.
    cut = first.candidates[0].content.model_copy(deep=True)
    cut.parts[0].thought_signature = cut.parts[0].thought_signature[:-6]
    with pytest.raises(genai_errors.ClientError, match="Corrupted thought signature"):
        gemini.models.generate_content(model="gemini-3-flash-preview", config=GEMINI_CONFIG,
                                       contents=[*contents, cut, gemini_results(first.function_calls)])

    # Streamed parts keep their signatures too.
    chunks = gemini.models.generate_content_stream(model="gemini-3-flash-preview", contents=contents,
                                                   config=GEMINI_CONFIG)
    streamed = [p for chunk in chunks for p in chunk.candidates[0].content.parts]
    assert streamed[0].thought_signature == parts[0].thought_signature
    final = gemini.models.generate_content(model="gemini-3-flash-preview", config=GEMINI_CONFIG,
                                           contents=[*contents, gt.Content(role="model", parts=streamed),
                                                     gemini_results(first.function_calls)])
    assert_quotes_both(final.text)
