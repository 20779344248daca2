"""The Ollama codec (native /api/chat): recorded shapes, round trips, NDJSON streams, Go-typed 400s, errors.

The recorded shapes are the examples of Ollama's API documentation (docs/api.md, "Chat request (with
tools)", "Streaming with tools", "With history, with tools"; docs/capabilities/tool-calling.mdx;
docs/api/errors.mdx), trimmed to what the codec reads. The official client's own pydantic models
(`ollama._types`) check every body the server side writes.
"""

from __future__ import annotations

import json
from dataclasses import replace

import codec_strategies
import pytest
from codec_strategies import arguments, json_values, names, texts, tool_specs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ollama._types import ChatResponse, ListResponse

from agentkit.core import errors
from agentkit.core.types import Message, ModelOptions, ModelTurn, ToolCall, ToolResult, ToolSpec, Usage
from agentkit.providers import ollama as codec
from agentkit.providers.common import JSONLine
from agentkit.sim.wire import ollama as codec_server
from agentkit.sim.wire.common import ChatRequest, RequestInvalid

WEATHER = ToolSpec("get_weather", "Get the weather in a given city",
                   {"type": "object", "properties": {"city": {"type": "string",
                                                              "description": "The city to get the weather for"}},
                    "required": ["city"]})

# --- recorded shapes (Ollama's docs) ----------------------------------------------------------------------

RESPONSE_WITH_TOOLS = {
    "model": "llama3.2", "created_at": "2024-07-22T20:33:28.123648Z",
    "message": {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "get_current_weather", "arguments": {"format": "celsius", "location": "Paris, FR"}}}]},
    "done_reason": "stop", "done": True, "total_duration": 885095291, "load_duration": 3753500,
    "prompt_eval_count": 122, "prompt_eval_duration": 328493000, "eval_count": 33, "eval_duration": 552222000}

STREAM_WITH_TOOLS = [
    {"model": "llama3.2", "created_at": "2025-07-07T20:22:19.184789Z",
     "message": {"role": "assistant", "content": "",
                 "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Tokyo"}}}]},
     "done": False},
    {"model": "llama3.2", "created_at": "2025-07-07T20:22:19.19314Z", "message": {"role": "assistant", "content": ""},
     "done_reason": "stop", "done": True, "total_duration": 182242375, "load_duration": 41295167,
     "prompt_eval_count": 169, "prompt_eval_duration": 24573166, "eval_count": 15, "eval_duration": 115959084}]

HISTORY_WITH_TOOLS = {
    "model": "llama3.2",
    "messages": [
        {"role": "user", "content": "what is the weather in Toronto?"},
        {"role": "assistant", "content": "",
         "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Toronto"}}}]},
        {"role": "tool", "content": "11 degrees celsius", "tool_name": "get_weather"}],
    "stream": False,
    "tools": [{"type": "function", "function": {
        "name": "get_weather", "description": "Get the weather in a given city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string",
                                                                  "description": "The city to get the weather for"}},
                       "required": ["city"]}}}]}

STREAM_ERROR = ['{"model":"gemma4","created_at":"2025-10-26T17:21:21.196249Z","message":{"role":"assistant",'
                '"content":" Yes"},"done":false}',
                '{"error":"an error was encountered while running the model"}']


def feed(lines) -> ModelTurn:
    assembler = codec.StreamAssembler()
    for line in lines:
        assembler.feed(None, line if isinstance(line, str) else json.dumps(line))
    return assembler.turn()


def test_a_documented_response_decodes_object_arguments_synthetic_ids_and_usage():
    ChatResponse.model_validate(RESPONSE_WITH_TOOLS)
    turn = codec.parse_response(RESPONSE_WITH_TOOLS)
    (call,) = turn.tool_calls
    assert call.name == "get_current_weather" and call.raw_arguments == {"format": "celsius", "location": "Paris, FR"}
    assert codec.is_synthetic_id(call.id) and call.id == codec.parse_response(RESPONSE_WITH_TOOLS).tool_calls[0].id
    assert (turn.stop, turn.native_stop, turn.usage, turn.text, turn.id) == (
        "tool_calls", "stop", Usage(122, 33), None, None)
    with_id = {**RESPONSE_WITH_TOOLS, "message": {**RESPONSE_WITH_TOOLS["message"], "tool_calls": [
        {"id": "call_abcd1234", **RESPONSE_WITH_TOOLS["message"]["tool_calls"][0]}]}}
    assert codec.parse_response(with_id).tool_calls[0].id == "call_abcd1234"  # recent servers send one


@pytest.mark.parametrize("reason, stop", [("stop", "stop"), ("length", "length"), ("load", "other"), (None, "stop")])
def test_done_reasons_map_to_neutral_stops(reason, stop):
    body = {"model": "m", "message": {"role": "assistant", "content": "hi"}, "done": True}
    if reason:
        body["done_reason"] = reason
    assert codec.parse_response(body).stop == stop


def test_a_documented_stream_assembles_whole_calls_and_the_counters_of_the_last_line():
    turn = feed(STREAM_WITH_TOOLS)
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("get_weather", {"city": "Tokyo"})]
    assert turn.usage == Usage(169, 15) and turn.stop == "tool_calls"
    with pytest.raises(errors.BadResponseError, match="done: true"):
        feed(STREAM_WITH_TOOLS[:1])  # the stream ended before its last line


def test_an_error_line_inside_a_stream_is_a_retryable_server_error():
    with pytest.raises(errors.ServerError, match="running the model") as info:
        feed(STREAM_ERROR)
    assert info.value.retryable and info.value.provider == "ollama"
    with pytest.raises(errors.ServerError):
        codec.parse_response({"error": "boom"})


def test_the_documented_history_decodes_results_by_tool_name():
    request = codec_server.parse_request(HISTORY_WITH_TOOLS)
    user, assistant, result = request.messages
    assert result.role == "tool" and result.name == "get_weather" and result.content == "11 degrees celsius"
    assert result.tool_call_id == assistant.tool_calls[0].id  # paired by name: the call had no id
    assert request.tools[0].name == "get_weather" and request.options.stream is False


def test_build_request_states_stream_sends_object_arguments_and_names_each_result():
    call = ToolCall.from_raw("call_abcd1234", "get_weather", {"city": "Toronto"})
    made_up = ToolCall.from_raw(codec.SYNTHETIC_ID_PREFIX + "x_0", "get_weather", {"city": "Osaka"})
    history = [Message.user("what is the weather in Toronto?"), Message.assistant(None, [call, made_up]),
               Message.tool(ToolResult.success(call, "11 degrees celsius")),
               Message.tool(ToolResult(made_up.id, "get_weather", True, text="20 degrees"))]
    wire = codec.build_request("llama3.2", history, [WEATHER], ModelOptions(max_tokens=64, temperature=0))
    body = wire.body
    assert wire.path == "/api/chat" and body["stream"] is False and wire.stream is False
    assert body["options"] == {"temperature": 0, "num_predict": 64}
    calls = body["messages"][1]["tool_calls"]
    assert calls[0] == {"id": "call_abcd1234", "function": {"index": 0, "name": "get_weather",
                                                            "arguments": {"city": "Toronto"}}}
    assert "id" not in calls[1]  # a made-up id is never sent
    results = body["messages"][2:]
    assert [r["tool_name"] for r in results] == ["get_weather", "get_weather"]
    assert results[0]["tool_call_id"] == "call_abcd1234" and "tool_call_id" not in results[1]
    assert body["tools"] == HISTORY_WITH_TOOLS["tools"]
    assert codec.build_request("m", history[:1], options=ModelOptions(stream=True)).body["stream"] is True


def test_tool_choice_has_no_field_none_sends_no_tools_and_a_named_tool_goes_alone():
    other = ToolSpec("get_time", "", {"type": "object", "properties": {}})
    question = [Message.user("hi")]
    assert "tools" not in codec.build_request("m", question, [WEATHER, other], ModelOptions("none")).body
    alone = codec.build_request("m", question, [WEATHER, other], ModelOptions({"name": "get_time"})).body
    assert [t["function"]["name"] for t in alone["tools"]] == ["get_time"]
    both = codec.build_request("m", question, [WEATHER, other], ModelOptions("required")).body
    assert len(both["tools"]) == 2 and "tool_choice" not in both
    assert codec.tool_choice_to_wire("required", True) is None


def test_a_local_ollama_needs_no_key_and_ollama_com_takes_a_bearer():
    assert codec_server.SERVER.no_key is None and codec.DEFAULT_BASE_URL == "http://localhost:11434"
    assert codec.auth_headers("k") == {"Authorization": "Bearer k"} and codec.API_KEY_ENVS == ("OLLAMA_API_KEY",)
    assert codec.STREAM_FRAMING == "ndjson"


# --- round trips -----------------------------------------------------------------------------------------

@st.composite
def conversations(draw) -> list[Message]:
    counter = iter(range(10**6))
    messages = [Message.system(draw(texts))] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(1, 3))):
        messages.append(Message.user(draw(texts)))
        for _ in range(draw(st.integers(0, 2))):
            calls = [ToolCall.from_raw(f"call_{next(counter):08d}", draw(names), draw(arguments))
                     for _ in range(draw(st.integers(1, 3)))]
            messages.append(Message.assistant(draw(st.none() | texts), calls))
            for call in calls:
                result = (ToolResult.success(call, draw(json_values)) if draw(st.booleans())
                          else ToolResult.failure(call, "tool_error", draw(st.text(max_size=10))))
                messages.append(Message.tool(result))
        if draw(st.booleans()):
            messages.append(Message.assistant(draw(texts)))
    return messages


options_strategy = st.builds(ModelOptions, st.just("auto"), st.none() | st.booleans(), st.booleans(),
                             st.none() | st.integers(1, 4096), st.none() | st.floats(0, 1, allow_nan=False))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.lists(tool_specs, min_size=1, max_size=3, unique_by=lambda t: t.name), options_strategy)
def test_client_request_round_trips_through_the_server_decoder(messages, tools, options):
    wire = codec.build_request("qwen3", messages, tools, options)
    decoded = codec_server.parse_request(json.loads(json.dumps(wire.body)))
    # What does not survive: tool messages' is_error (Ollama has no error flag: the text says it).
    want = [Message(m.role, m.content or ("" if m.role != "assistant" else None), m.tool_calls, m.tool_call_id,
                    m.name) for m in messages]
    assert list(decoded.messages) == want
    assert list(decoded.tools) == [replace(t, strict=False) for t in tools]  # no strict mode in Ollama
    assert decoded.model == "qwen3"
    assert decoded.options == ModelOptions("auto", None, options.stream, options.max_tokens, options.temperature)


@st.composite
def turns(draw) -> ModelTurn:
    calls = tuple(ToolCall.from_raw(f"call_{draw(st.text('abcdefghij0123456789', min_size=8, max_size=8))}",
                                    draw(names), draw(arguments)) for _ in range(draw(st.integers(0, 3))))
    stop = draw(st.sampled_from(["tool_calls", "length"] if calls else ["stop", "length"]))
    return ModelTurn(draw(st.none() | texts), calls, stop, "length" if stop == "length" else "stop",
                     Usage(draw(st.integers(0, 10**5)), draw(st.integers(0, 10**5))), "qwen3")


@settings(max_examples=150, deadline=None)
@given(turns())
def test_server_answers_round_trip_validate_with_the_client_and_stream_to_the_same_turn(turn):
    request = ChatRequest("qwen3", (Message.user("hi"),))
    body = codec_server.build_response(turn, request)
    ChatResponse.model_validate(body)  # the official client's own model
    parsed = codec.parse_response(json.loads(json.dumps(body)))
    assert parsed == turn
    lines = codec_server.build_stream(turn, request)
    assert all(isinstance(line, JSONLine) and line.encode().endswith("}\n") for line in lines)
    for line in lines:
        ChatResponse.model_validate(json.loads(line.data))
    assert feed([line.data for line in lines]) == parsed
    assert [json.loads(line.data)["done"] for line in lines] == [False] * (len(lines) - 1) + [True]


def test_server_call_ids_look_like_a_recent_servers_and_are_deterministic():
    turn = ModelTurn(None, (ToolCall.from_raw("1", "f", {}), ToolCall.from_raw("2", "f", {})), "tool_calls")
    request = ChatRequest("qwen3", (Message.user("hi"),))
    ids = [c["id"] for c in codec_server.build_response(turn, request)["message"]["tool_calls"]]
    assert len(set(ids)) == 2 and all(i.startswith("call_") and len(i) == 13 for i in ids)
    assert ids == [c["id"] for c in codec_server.build_response(turn, request)["message"]["tool_calls"]]


def test_the_model_list_validates_with_the_client():
    listing = ListResponse.model_validate(codec_server.build_model_list(["qwen3", "sim-reasoner"]))
    assert [m.model for m in listing.models] == ["qwen3", "sim-reasoner"]


# --- the server's 400s: Go's types ---------------------------------------------------------------------------

@pytest.mark.parametrize("mutate, wording", [
    (lambda b: b.update(model=""), "model is required"),
    (lambda b: b.pop("model"), "model is required"),
    (lambda b: b.update(model=7), "cannot unmarshal number into Go struct field ChatRequest.model of type string"),
    (lambda b: b["messages"][0].update(content=[{"type": "text", "text": "hi"}]),
     "cannot unmarshal array into Go struct field Message.messages.content of type string"),
    (lambda b: b.update(messages={"role": "user"}),
     "cannot unmarshal object into Go struct field ChatRequest.messages"),
    (lambda b: b.update(stream="yes"), "cannot unmarshal string into Go struct field ChatRequest.stream of type bool"),
    (lambda b: b["tools"][0]["function"]["parameters"].update(properties=-1),
     "cannot unmarshal number into Go struct field ToolFunctionParameters.tools.function.parameters.properties"),
    (lambda b: b["tools"][0]["function"]["parameters"].update(required="city"),
     "ToolFunctionParameters.tools.function.parameters.required of type []string"),
    (lambda b: b["messages"][1]["tool_calls"][0]["function"].update(arguments="{}"),
     "cannot unmarshal string into Go struct field ToolCallFunction"),
    (lambda b: b["messages"][0].update(role="robot"), "invalid role 'robot'"),
])
def test_wrong_types_are_refused_in_go_encoding_json_words(mutate, wording):
    body = json.loads(json.dumps(HISTORY_WITH_TOOLS))
    mutate(body)
    with pytest.raises(RequestInvalid, match=wording.replace("[", r"\[").replace("]", r"\]")):
        codec_server.parse_request(body)


def test_what_go_accepts_is_accepted():
    body = json.loads(json.dumps(HISTORY_WITH_TOOLS))
    body["tools"][0]["function"]["parameters"]["properties"]["city"]["type"] = "nope"  # only a string to Go
    body["messages"][0]["role"] = "USER"  # the server lowercases roles
    body["keep_alive"], body["format"] = "5m", {"type": "object"}  # kept for the curious
    del body["stream"]  # Ollama streams unless told otherwise
    request = codec_server.parse_request(body)
    assert request.options.stream is True and request.messages[0].role == "user"
    assert request.extras == {"keep_alive": "5m", "format": {"type": "object"}}


VALID = HISTORY_WITH_TOOLS
KEYS = ["model", "messages", "role", "content", "tool_calls", "function", "name", "arguments", "tool_name",
        "tools", "type", "parameters", "properties", "required", "stream", "options", "user", "assistant", "tool"]
any_json = codec_strategies.any_json(KEYS)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(any_json, codec_strategies.mutated_bodies(VALID, any_json)))
def test_malformed_request_bodies_only_ever_raise_request_invalid(body):
    try:
        request = codec_server.parse_request(body)
    except RequestInvalid as e:
        assert e.message and e.status == 400
    else:
        assert isinstance(request, ChatRequest)


# --- errors ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("status, cls", [(400, errors.BadRequestError), (404, errors.BadRequestError),
                                         (429, errors.RateLimitError), (500, errors.ServerError),
                                         (502, errors.ServerError), (503, errors.ServerError)])
def test_error_bodies_become_typed_provider_errors(status, cls):
    body = codec_server.build_error(status, "model 'x' not found")
    assert body == {"error": "model 'x' not found"}
    error = codec.parse_error(status, json.dumps(body), {"retry-after": "2"})
    assert type(error) is cls and error.message == "model 'x' not found" and error.retry_after == 2.0
    proxy = codec.parse_error(502, "<html>Bad Gateway</html>")
    assert isinstance(proxy, errors.ServerError) and "Bad Gateway" in proxy.message


def test_a_stream_error_is_one_more_json_line():
    line = codec_server.build_stream_error(503, "server busy", ChatRequest("m", ()))
    assert line.encode() == '{"error":"server busy"}\n'
