"""The OpenRouter codec: Chat Completions plus fallbacks, routing, gen- ids, native stops, keep-alives."""

from __future__ import annotations

import json
from dataclasses import replace

import httpx2
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai._streaming import SSEDecoder
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from test_codec_openai_chat import (
    QUESTION,
    REQUEST_1_4,
    RESPONSE_1_5,
    TIME,
    WEATHER,
    any_json,
    assert_only_bad_response,
    assert_only_request_invalid,
    conversations,
    expected_messages,
    expected_turn,
    mutated_answers,
    mutated_bodies,
    mutated_streams,
    options_for,
    sdk_client,
    tool_lists,
    turns,
    wire_json,
)

from agentkit.core.errors import BadRequestError, RateLimitError, ServerError
from agentkit.core.types import Message, ModelOptions, ModelTurn, ToolCall, Usage
from agentkit.providers import openrouter
from agentkit.sim.wire import openai_chat as openai_chat_server
from agentkit.sim.wire import openrouter as openrouter_server
from agentkit.sim.wire.common import RequestInvalid

# --- recorded shapes: _6_3 a routed request (models, provider), _6_4 its answer, _6_5 a stream ------------------------

ROUTED_6_3 = {
    "model": "openai/gpt-4.1",
    "models": ["openai/gpt-4.1", "anthropic/claude-sonnet-4.5", "google/gemini-2.5-flash"],
    "provider": {"order": ["openai", "azure"], "allow_fallbacks": True, "require_parameters": True,
                 "data_collection": "deny", "sort": "throughput"},
    "messages": [{"role": "user", "content": QUESTION}],
    "tools": REQUEST_1_4["tools"], "tool_choice": "auto", "parallel_tool_calls": True}

RESPONSE_6_4 = {**RESPONSE_1_5, "id": "gen-1767225600-AbCdEfGhIjKlMnOpQrSt", "model": "openai/gpt-4.1",
                "provider": "OpenAI",
                "choices": [{**RESPONSE_1_5["choices"][0], "native_finish_reason": "tool_calls"}],
                "usage": {**RESPONSE_1_5["usage"], "cost": 0.00042}}

STREAM_ERROR_6_5 = (": OPENROUTER PROCESSING\n\n"
                    'data: {"id":"gen-Sim","object":"chat.completion.chunk","created":1767225600,'
                    '"model":"openai/gpt-4.1","provider":"OpenAI","error":{"code":"server_error",'
                    '"message":"Provider disconnected unexpectedly"},'
                    '"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}\n\n'
                    "data: [DONE]\n\n")


def sse(text: str):
    """A real SSE parser (the OpenAI SDK's): comment lines never become events."""
    return list(SSEDecoder().iter_bytes(iter([text.encode()])))


def test_recorded_response_decodes_with_the_upstream_stop_word():
    ChatCompletion.model_validate(RESPONSE_6_4)  # extra fields (provider, native_finish_reason) are fine
    turn = openrouter.parse_response(RESPONSE_6_4)
    assert [c.id for c in turn.tool_calls] == ["call_Wx1", "call_Tm2"]
    assert turn.tool_calls[0].raw_arguments == "{\"city\": \"Paris\"}" and turn.usage == Usage(96, 48)
    assert (turn.stop, turn.native_stop, turn.id, turn.model) == (
        "tool_calls", "tool_calls", "gen-1767225600-AbCdEfGhIjKlMnOpQrSt", "openai/gpt-4.1")
    anthropic_upstream = {**RESPONSE_6_4, "choices": [{**RESPONSE_6_4["choices"][0],
                                                       "native_finish_reason": "tool_use"}]}
    assert openrouter.parse_response(anthropic_upstream).native_stop == "tool_use"


def test_build_request_adds_fallbacks_and_routing():
    options = ModelOptions(tool_choice="auto", parallel_tool_calls=True)
    wire = openrouter.build_request("openai/gpt-4.1", [Message.user(QUESTION)], [WEATHER, TIME], options,
                                    models=ROUTED_6_3["models"], provider=ROUTED_6_3["provider"])
    assert wire.body == ROUTED_6_3 and wire.path == "/chat/completions"
    capped = openrouter.build_request("m", [Message.user("hi")], options=ModelOptions(max_tokens=99))
    assert capped.body["max_tokens"] == 99 and "max_completion_tokens" not in capped.body
    assert openrouter.DEFAULT_BASE_URL == "https://openrouter.ai/api/v1"
    assert openrouter.API_KEY_ENVS == ("OPENROUTER_API_KEY",) and openrouter.NAME == "openrouter"
    assert openrouter.auth_headers("sk-or-1") == {"Authorization": "Bearer sk-or-1"}


def test_parse_request_reads_fallbacks_and_keeps_routing_in_extras():
    request = openrouter_server.parse_request(ROUTED_6_3)
    assert request.fallback_models == tuple(ROUTED_6_3["models"])
    assert request.extras == {"provider": ROUTED_6_3["provider"]}
    assert request.tools == (WEATHER, TIME) and request.options.parallel_tool_calls is True
    alone = openrouter_server.parse_request({k: v for k, v in ROUTED_6_3.items() if k != "model"})
    assert alone.model == "openai/gpt-4.1"  # `models` alone: the first one leads
    for bad in ({**ROUTED_6_3, "models": "openai/gpt-4.1"}, {**ROUTED_6_3, "models": [1]},
                {**ROUTED_6_3, "provider": ["openai"]}):
        with pytest.raises(RequestInvalid):
            openrouter_server.parse_request(bad)


# --- round trips ----------------------------------------------------------------------------------------

@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), tool_lists, st.data())
def test_client_to_server_request_round_trip(messages, tools, data):
    options = data.draw(options_for(tools))
    models = data.draw(st.lists(st.sampled_from(["openai/gpt-4.1", "anthropic/claude-sonnet-4.5"]),
                                max_size=2))
    wire = openrouter.build_request("openai/gpt-4.1", messages, tools, options, models=models,
                                    provider={"sort": "price"})
    request = openrouter_server.parse_request(wire_json(wire.body))
    assert request.messages == expected_messages(messages) and request.tools == tuple(tools)
    assert request.options == (options if tools
                               else replace(options, tool_choice="auto", parallel_tool_calls=None))
    assert request.fallback_models == tuple(models) and request.extras["provider"] == {"sort": "price"}


def _request(stream: bool = False):
    return openrouter_server.parse_request(wire_json(openrouter.build_request(
        "openai/gpt-4.1", [Message.user("hi")], options=ModelOptions(stream=stream)).body))


@settings(max_examples=150)
@given(turns(), st.none() | st.sampled_from(["end_turn", "tool_use", "STOP"]))
def test_server_to_client_response_round_trip(turn, native):
    turn = replace(turn, native_stop=native)
    request = _request()
    body = openrouter_server.build_response(turn, request)
    ChatCompletion.model_validate(body)
    assert body["id"].startswith("gen-") and body["provider"] == "OpenAI"
    finish = openai_chat_server.finish_reason(turn)
    assert body["choices"][0]["finish_reason"] == finish
    assert openrouter.parse_response(wire_json(body)) == expected_turn(
        openai_chat_server, turn, request, native or finish, response_id=body["id"])


@settings(max_examples=150)
@given(turns())
def test_stream_with_keepalive_comments_reassembles_to_the_plain_turn(turn):
    request = _request(stream=True)
    events = openrouter_server.build_stream(turn, request)
    assert events[0].comment == openrouter_server.KEEPALIVE and events[-1].data == "[DONE]"
    wire = "".join(e.encode() for e in events)
    assert wire.startswith(": OPENROUTER PROCESSING\n\n")
    assembler = openrouter.StreamAssembler()
    for event in sse(wire):
        if event.data != "[DONE]":
            chunk = ChatCompletionChunk.model_validate(json.loads(event.data))
            assert chunk.id.startswith("gen-") and chunk.model_extra["provider"] == "OpenAI"
        assembler.feed(event.event, event.data)
    assert assembler.turn() == openrouter.parse_response(openrouter_server.build_response(turn, request))


def test_assembler_fed_the_comment_events_directly_ignores_them():
    call = ToolCall.from_raw("call_1", "get_time", "{}")
    turn = ModelTurn(None, (call,), "tool_calls", "tool_use", model="m")
    request = _request(stream=True)
    assembler = openrouter.StreamAssembler()
    for event in openrouter_server.build_stream(turn, request):
        assembler.feed(event.event, event.data if event.comment is None else f": {event.comment}")
    assert assembler.turn().native_stop == "tool_use"


def test_in_stream_error_raises_a_server_error_and_the_sdk_raises_too():
    assembler = openrouter.StreamAssembler()
    with pytest.raises(ServerError, match="Provider disconnected unexpectedly") as err:
        for event in sse(STREAM_ERROR_6_5):
            assembler.feed(event.event, event.data)
    assert err.value.provider == "openrouter" and err.value.error_type == "server_error" and err.value.retryable
    request = _request()
    sent = openrouter_server.build_stream(ModelTurn("x", model="openai/gpt-4.1"), request)[:2]
    built = json.loads(openrouter_server.build_stream_error(503, "gone", request, sent).data)
    assert built["choices"][0]["finish_reason"] == "error" and built["error"]["code"] == "server_error"
    assert built["id"] == json.loads(sent[1].data)["id"]  # the same stream's id
    with pytest.raises(RateLimitError):  # a numeric code is the status itself
        openrouter.StreamAssembler().feed(None, openrouter_server.build_stream_error(429, "slow", request).data)

    def handler(http_request):
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               content=STREAM_ERROR_6_5.encode())

    client = openai.OpenAI(api_key="sk-or-test", base_url="http://sim.test/api/v1", max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    with pytest.raises(openai.APIError, match="Provider disconnected"):
        list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}],
                                            stream=True))


# --- the official SDK against the server side ---------------------------------------------------------------

PARALLEL = ModelTurn(None, (ToolCall.from_raw("w1", "get_weather", "{\"city\": \"Paris\"}"),
                            ToolCall.from_raw("t2", "get_time", "{\"timezone\": \"Europe/Paris\"}")),
                     "tool_calls", "tool_use", Usage(96, 48), "anthropic/claude-sonnet-4.5")


def test_the_openai_sdk_works_against_the_openrouter_server_side():
    seen: list = []
    client = sdk_client(openrouter, lambda request: PARALLEL, seen, base_url="http://sim.test/api/v1")
    completion = client.chat.completions.create(
        model="openai/gpt-4.1", messages=[{"role": "user", "content": QUESTION}], tools=REQUEST_1_4["tools"],
        extra_body={"models": ROUTED_6_3["models"], "provider": ROUTED_6_3["provider"]})
    request = seen[0][1]
    assert request.fallback_models == tuple(ROUTED_6_3["models"])
    assert request.extras["provider"]["sort"] == "throughput"
    assert completion.model_extra["provider"] == "Anthropic" and completion.id.startswith("gen-")
    assert completion.choices[0].model_extra["native_finish_reason"] == "tool_use"
    assert [c.function.name for c in completion.choices[0].message.tool_calls] == ["get_weather", "get_time"]
    with client.chat.completions.stream(model="openai/gpt-4.1", tools=REQUEST_1_4["tools"],
                                        messages=[{"role": "user", "content": QUESTION}]) as stream:
        final = stream.get_final_completion()
    assert [c.function.parsed_arguments for c in final.choices[0].message.tool_calls] == [
        {"city": "Paris"}, {"timezone": "Europe/Paris"}]


# --- bad input and errors -------------------------------------------------------------------------------

@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(any_json, mutated_bodies(openrouter)))
def test_fuzzed_request_bodies_only_ever_raise_request_invalid(body):
    assert_only_request_invalid(openrouter, body, ChatCompletion.model_validate)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(any_json, mutated_answers(openrouter)), mutated_streams(openrouter))
def test_fuzzed_answers_decode_or_raise_bad_response(body, events):
    assert_only_bad_response(openrouter, body=body)
    assert_only_bad_response(openrouter, events=events)


def test_error_bodies_have_an_integer_code_and_map_to_provider_errors():
    body = openrouter_server.build_error(429, "Rate limit exceeded", metadata={"provider_name": "OpenAI"})
    assert body == {"error": {"code": 429, "message": "Rate limit exceeded",
                              "metadata": {"provider_name": "OpenAI"}}}
    assert openrouter_server.build_error(401, "No auth credentials found") == {
        "error": {"code": 401, "message": "No auth credentials found"}}
    described = openrouter_server.build_error(400, "bad", "invalid_request_error", param="models")
    assert described["error"]["metadata"] == {"error_type": "invalid_request_error", "param": "models"}
    limited = openrouter.parse_error(429, body, {"Retry-After": "3"})
    assert isinstance(limited, RateLimitError) and limited.retry_after == 3.0
    assert (limited.error_type, limited.provider) == ("429", "openrouter")
    credits = openrouter.parse_error(402, {"error": {"code": 402, "message": "Insufficient credits",
                                                     "metadata": {"limit_source": "key"}}}, {})
    assert isinstance(credits, BadRequestError) and not credits.retryable
    metadata = {"provider_name": "OpenAI", "raw": "{}"}
    upstream = openrouter.parse_error(502, {"error": {"code": 502, "message": "Provider returned error",
                                                      "metadata": metadata}}, {})
    assert isinstance(upstream, ServerError) and upstream.body["error"]["metadata"] == metadata


def test_the_sdk_reads_our_error_body():
    def handler(http_request):
        return httpx2.Response(429, json=openrouter_server.build_error(429, "Rate limit exceeded"))

    client = openai.OpenAI(api_key="sk-or-test", base_url="http://sim.test/api/v1", max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    with pytest.raises(openai.RateLimitError) as exc:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert exc.value.code == "429" and "Rate limit exceeded" in str(exc.value)
