"""The OpenAI Chat codec: recorded shapes, round trips, SDK validation, streams, bad input, errors.

The Hypothesis strategies defined here (conversations, tool lists, options, turns, JSON fuzz) are shared
with the other OpenAI-style codec tests, which import them from this module.
"""

from __future__ import annotations

import copy
import json
import string
from dataclasses import replace

import httpx2
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from agentkit.core.errors import (
    AuthenticationError,
    BadRequestError,
    BadResponseError,
    ProviderError,
    QuotaExceededError,
    RateLimitError,
    ServerError,
)
from agentkit.core.types import Message, ModelOptions, ModelTurn, ToolCall, ToolResult, ToolSpec, Usage
from agentkit.providers import openai_chat as chat
from agentkit.providers.common import WireRequest
from agentkit.sim.wire import get_server
from agentkit.sim.wire import openai_chat as chat_server
from agentkit.sim.wire.common import ChatRequest, RequestInvalid

# --- recorded shapes: _1_4 a request, _1_5 two parallel calls, _1_6 the results sent back, _1_8 a stream --------------

WEATHER = ToolSpec("get_weather", "Current weather for a city",
                   {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                    "additionalProperties": False}, strict=True)
TIME = ToolSpec("get_time", "Current local time in a zone",
                {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"],
                 "additionalProperties": False}, strict=True)
QUESTION = "What's the weather and local time in Paris?"

REQUEST_1_4 = {
    "model": "gpt-4.1",
    "messages": [{"role": "user", "content": QUESTION}],
    "tools": [
        {"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city",
                                          "parameters": WEATHER.parameters, "strict": True}},
        {"type": "function", "function": {"name": "get_time", "description": "Current local time in a zone",
                                          "parameters": TIME.parameters, "strict": True}}],
    "tool_choice": "auto",
    "parallel_tool_calls": True}

RESPONSE_1_5 = {
    "id": "chatcmpl-Sim0001", "object": "chat.completion", "created": 1767225600,
    "model": "gpt-4.1-2025-04-14",
    "choices": [{
        "index": 0,
        "message": {"role": "assistant", "content": None, "refusal": None, "annotations": [],
                    "tool_calls": [
                        {"id": "call_Wx1", "type": "function",
                         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
                        {"id": "call_Tm2", "type": "function",
                         "function": {"name": "get_time", "arguments": "{\"timezone\": \"Europe/Paris\"}"}}]},
        "logprobs": None, "finish_reason": "tool_calls"}],
    "usage": {"prompt_tokens": 96, "completion_tokens": 48, "total_tokens": 144,
              "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
              "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                            "accepted_prediction_tokens": 0,
                                            "rejected_prediction_tokens": 0}},
    "service_tier": "default", "system_fingerprint": "fp_sim"}

FOLLOW_UP_1_6 = [
    {"role": "user", "content": QUESTION},
    {"role": "assistant", "content": None, "tool_calls": RESPONSE_1_5["choices"][0]["message"]["tool_calls"]},
    {"role": "tool", "tool_call_id": "call_Wx1", "content": "{\"temp_c\": 18, \"sky\": \"cloudy\"}"},
    {"role": "tool", "tool_call_id": "call_Tm2", "content": "{\"time\": \"14:05\"}"}]


def _chunk(delta: dict, finish: str | None = None) -> str:
    return json.dumps({"id": "chatcmpl-Sim0001", "object": "chat.completion.chunk", "created": 1767225600,
                       "model": "gpt-4.1-2025-04-14",
                       "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]})


STREAM_1_8 = [
    _chunk({"role": "assistant", "content": None, "refusal": None}),
    _chunk({"tool_calls": [{"index": 0, "id": "call_Wx1", "type": "function",
                            "function": {"name": "get_weather", "arguments": ""}}]}),
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\": "}}]}),
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "\"Paris\"}"}}]}),
    _chunk({"tool_calls": [{"index": 1, "id": "call_Tm2", "type": "function",
                            "function": {"name": "get_time", "arguments": ""}}]}),
    _chunk({"tool_calls": [{"index": 1, "function": {"arguments": "{\"timezone\": \"Europe/Paris\"}"}}]}),
    _chunk({}, "tool_calls"),
    json.dumps({"id": "chatcmpl-Sim0001", "object": "chat.completion.chunk", "created": 1767225600,
                "model": "gpt-4.1-2025-04-14", "choices": [],
                "usage": {"prompt_tokens": 96, "completion_tokens": 48, "total_tokens": 144}}),
    "[DONE]"]


def test_recorded_response_decodes_both_parallel_calls_with_raw_string_arguments():
    ChatCompletion.model_validate(RESPONSE_1_5)  # the fixture itself is a valid SDK shape
    turn = chat.parse_response(RESPONSE_1_5)
    assert [c.id for c in turn.tool_calls] == ["call_Wx1", "call_Tm2"]
    assert [c.name for c in turn.tool_calls] == ["get_weather", "get_time"]
    assert turn.tool_calls[0].raw_arguments == "{\"city\": \"Paris\"}"  # the string, exactly as sent
    assert turn.tool_calls[0].arguments == {"city": "Paris"}
    assert turn.tool_calls[1].arguments == {"timezone": "Europe/Paris"}
    assert (turn.stop, turn.native_stop, turn.text) == ("tool_calls", "tool_calls", None)
    assert turn.usage == Usage(96, 48)
    assert (turn.model, turn.id, turn.raw) == ("gpt-4.1-2025-04-14", "chatcmpl-Sim0001", RESPONSE_1_5)


def test_recorded_stream_reassembles_into_the_same_turn_as_the_plain_response():
    assembler = chat.StreamAssembler()
    for data in STREAM_1_8:
        assembler.feed(None, data)
    assert assembler.turn() == chat.parse_response(RESPONSE_1_5)


def test_build_request_writes_the_recorded_request_and_follow_up():
    options = ModelOptions(tool_choice="auto", parallel_tool_calls=True)
    wire = chat.build_request("gpt-4.1", [Message.user(QUESTION)], [WEATHER, TIME], options)
    assert wire == WireRequest("/chat/completions", REQUEST_1_4, {}, stream=False)
    turn = chat.parse_response(RESPONSE_1_5)
    results = [ToolResult("call_Wx1", "get_weather", True, text="{\"temp_c\": 18, \"sky\": \"cloudy\"}"),
               ToolResult("call_Tm2", "get_time", True, text="{\"time\": \"14:05\"}")]
    messages = [Message.user(QUESTION), turn.as_message()] + [Message.tool(r) for r in results]
    assert chat.build_request("gpt-4.1", messages, [WEATHER, TIME]).body["messages"] == FOLLOW_UP_1_6


def test_parse_request_reads_the_recorded_follow_up_and_names_each_result():
    request = chat_server.parse_request({**REQUEST_1_4, "messages": FOLLOW_UP_1_6})
    assert request.tools == (WEATHER, TIME)
    assert request.options == ModelOptions("auto", True)
    _user, assistant, weather, time_ = request.messages
    assert [c.id for c in assistant.tool_calls] == ["call_Wx1", "call_Tm2"]
    assert (weather.role, weather.tool_call_id, weather.name) == ("tool", "call_Wx1", "get_weather")
    assert time_.name == "get_time" and time_.content == "{\"time\": \"14:05\"}"


def test_forcing_a_tool_and_streaming_map_to_the_wire_words():
    options = ModelOptions(tool_choice={"name": "get_time"}, parallel_tool_calls=False, stream=True,
                           max_tokens=50, temperature=0.2)
    wire = chat.build_request("gpt-4.1", [Message.user("hi")], [TIME], options, seed=7)
    assert wire.body["tool_choice"] == {"type": "function", "function": {"name": "get_time"}}
    assert wire.body["parallel_tool_calls"] is False
    assert wire.body["stream"] is True and wire.body["stream_options"] == {"include_usage": True}
    assert (wire.body["max_completion_tokens"], wire.body["temperature"], wire.body["seed"]) == (50, 0.2, 7)
    assert wire.stream


def test_without_tools_neither_tool_choice_nor_the_parallel_switch_is_sent():
    wire = chat.build_request("m", [Message.user("hi")], [], ModelOptions("required", False))
    assert not {"tools", "tool_choice", "parallel_tool_calls"} & wire.body.keys()


def test_strict_flag_only_when_on_and_tools_round_trip():
    loose = ToolSpec("f")
    empty = {"type": "object", "properties": {}}
    assert chat.tool_to_wire(loose) == {"type": "function", "function": {"name": "f", "parameters": empty}}
    assert chat.tool_to_wire(WEATHER)["function"]["strict"] is True
    for spec in (loose, WEATHER, TIME):
        assert chat_server.tool_from_wire(chat.tool_to_wire(spec)) == spec
    assert chat_server.tool_from_wire({"type": "function", "function": {"name": "g"}}) == ToolSpec("g")


def test_auth_header_and_module_constants():
    assert chat.auth_headers("sk-1") == {"Authorization": "Bearer sk-1"}
    assert chat.DEFAULT_BASE_URL == "https://api.openai.com/v1" and chat.PATH == "/chat/completions"
    assert chat.API_KEY_ENVS == ("OPENAI_API_KEY",) and chat.NAME == "openai-chat" and chat.DEFAULT_MODEL


# --- shared Hypothesis strategies ---------------------------------------------------------------------------

texts = st.text(min_size=1, max_size=30)
tool_names = st.one_of(st.sampled_from(["get_weather", "get_time", "search_docs", "add"]),
                       st.from_regex(r"[a-zA-Z0-9_-]{1,20}", fullmatch=True))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8)
raw_arguments = st.one_of(st.dictionaries(st.text(max_size=6), json_values, max_size=3).map(json.dumps),
                          st.sampled_from(["", "{", "not json", "[1, 2]", "{\"a\": 1,}", "{}"]))
id_suffix = st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=10)
STRICT_SCHEMAS = [{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": ["string", "null"]}},
                   "required": ["a", "b"], "additionalProperties": False},
                  {"type": "object", "properties": {}, "additionalProperties": False}]
schemas = st.sampled_from([{"type": "object", "properties": {}}, WEATHER.parameters, *STRICT_SCHEMAS])
# A strict tool has a schema strict mode takes: the APIs refuse any other with a 400.
tool_lists = st.lists(st.builds(ToolSpec, tool_names, st.text(max_size=20), schemas, st.just(False))
                      | st.builds(ToolSpec, tool_names, st.text(max_size=20), st.sampled_from(STRICT_SCHEMAS),
                                  st.just(True)),
                      max_size=3, unique_by=lambda t: t.name)


@st.composite
def conversations(draw) -> list[Message]:
    """A valid conversation: every call answered right after its assistant turn (any order within)."""
    messages = [Message.system(draw(texts))] if draw(st.booleans()) else []
    messages.append(Message.user(draw(texts)))
    for turn in range(draw(st.integers(0, 3))):
        calls = [ToolCall.from_raw(f"call_{turn}{k}{draw(id_suffix)}", draw(tool_names), draw(raw_arguments))
                 for k in range(draw(st.integers(0, 3)))]
        messages.append(Message.assistant(draw(st.none() | texts) if calls else draw(texts), calls))
        for call in draw(st.permutations(calls)):
            result = (ToolResult.success(call, draw(json_values)) if draw(st.booleans())
                      else ToolResult.failure(call, "tool_error", draw(texts)))
            messages.append(Message.tool(result))
        if not calls or draw(st.booleans()):
            messages.append(Message.user(draw(texts)))
    return messages


@st.composite
def options_for(draw, tools: list[ToolSpec], min_tokens: int = 1) -> ModelOptions:
    choices = st.sampled_from(["auto", "none", "required"])
    if tools:
        choices = choices | st.sampled_from([t.name for t in tools]).map(lambda n: {"name": n})
    return ModelOptions(draw(choices), draw(st.none() | st.booleans()), draw(st.booleans()),
                        draw(st.none() | st.integers(min_tokens, 4096)),
                        draw(st.none() | st.floats(0, 2, allow_nan=False)))


@st.composite
def turns(draw, stops=("stop", "length", "content_filter")) -> ModelTurn:
    """A model turn as a simulator would produce it (neutral or provider-style ids)."""
    names = draw(st.lists(tool_names, max_size=3))
    calls = tuple(ToolCall.from_raw(draw(st.sampled_from(["", "call_"])) + f"{k}{draw(id_suffix)}", name,
                                    draw(raw_arguments)) for k, name in enumerate(names))
    stop = draw(st.sampled_from(["tool_calls", "length"])) if calls else draw(st.sampled_from(stops))
    return ModelTurn(draw(st.none() | texts), calls, stop, None,
                     Usage(draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6))),
                     draw(st.sampled_from(["gpt-4.1", "gpt-4.1-mini-2025-04-14"])),
                     draw(st.none() | id_suffix | id_suffix.map(lambda s: "chatcmpl-" + s)))


def wire_json(body: dict) -> dict:
    """What actually travels: JSON text, parsed again (tuples become lists, nothing else survives)."""
    return json.loads(json.dumps(body))


def expected_messages(messages: list[Message]) -> tuple[Message, ...]:
    """What a server reads back: OpenAI formats have no error flag on tool results."""
    return tuple(replace(m, is_error=False) for m in messages)


def server_of(codec):
    """The server half of `codec`'s format (the helpers below take either half)."""
    return codec if hasattr(codec, "parse_request") else get_server(codec.NAME)


def request_for(codec, tools=(), options: ModelOptions | None = None, model="gpt-4.1") -> ChatRequest:
    wire = codec.build_request(model, [Message.user("hi")], list(tools), options or ModelOptions())
    return server_of(codec).parse_request(wire_json(wire.body))


# Fuzz material: any JSON, and bodies that are valid but for a few random edits.
any_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["role", "content", "type", "function", "name", "arguments", "id",
                                       "tool_calls", "tool_call_id", "call_id", "output", "text",
                                       "parameters", "strict", "mode", "allowed_tools", "input", "model",
                                       "messages"])
                      | st.text(max_size=6), inner, max_size=4),
    max_leaves=20)


def _slots(value, out):
    """Every (container, key) in a JSON tree."""
    if isinstance(value, dict):
        for key in list(value):
            out.append((value, key))
            _slots(value[key], out)
    elif isinstance(value, list):
        for i in range(len(value)):
            out.append((value, i))
            _slots(value[i], out)
    return out


def edited(draw, tree):
    """A copy of a JSON tree with one to three random edits: replace, delete or duplicate a node."""
    tree = copy.deepcopy(tree)
    for _ in range(draw(st.integers(1, 3))):
        slots = _slots(tree, [])
        deep = [slot for slot in slots if slot[0] is not tree]  # edits inside messages/tools find more
        if not slots:
            break
        container, key = draw(st.sampled_from(deep if deep and draw(st.integers(0, 4)) else slots))
        action = draw(st.sampled_from(["replace", "replace", "delete", "duplicate"]))
        if action == "delete":
            del container[key]
        elif action == "duplicate" and isinstance(container, list):
            container.insert(key, copy.deepcopy(container[key]))
        else:
            container[key] = draw(any_json)
    return tree


@st.composite
def mutated_bodies(draw, codec, tool_strategy=tool_lists, min_tokens: int = 1) -> dict:
    tools = draw(tool_strategy)
    options = draw(options_for(tools, min_tokens))
    return edited(draw, wire_json(codec.build_request("gpt-4.1", draw(conversations()), tools, options).body))


@st.composite
def mutated_answers(draw, codec) -> dict:
    """A valid response body of `codec`, edited."""
    return edited(draw, wire_json(server_of(codec).build_response(draw(turns()), request_for(codec))))


@st.composite
def mutated_streams(draw, codec) -> list[tuple[str | None, str]]:
    """The (event, data) pairs of a valid stream, with one event edited, dropped, or turned to garbage."""
    events = [(e.event, e.data) for e in server_of(codec).build_stream(draw(turns()), request_for(codec))
              if e.comment is None]
    index = draw(st.integers(0, len(events) - 1))
    name, data = events[index]
    action = draw(st.sampled_from(["edit", "edit", "drop", "garbage"]))
    if action == "drop":
        del events[index]
    elif action == "garbage":
        events[index] = (name, draw(st.text(max_size=12)))
    elif data != "[DONE]":
        events[index] = (name, json.dumps(edited(draw, json.loads(data))))
    return events


def assert_only_bad_response(codec, body=None, events=None) -> None:
    """Client-side decoding gives a ModelTurn or raises a ProviderError: BadResponseError for a body that
    is not the format's, or the typed error a body's `error` names; never anything else."""
    try:
        if events is None:
            turn = codec.parse_response(body)
        else:
            assembler = codec.StreamAssembler()
            for name, data in events:
                assembler.feed(name, data)
            turn = assembler.turn()
    except BadResponseError as exc:
        assert exc.retryable and isinstance(exc.message, str)
        return
    except ProviderError as exc:  # an error inside a 200 (a set `error`, a failed status)
        assert isinstance(exc.message, str) and exc.status is not None
        return
    assert turn.text is None or isinstance(turn.text, str)
    assert all(isinstance(c.id, str) and isinstance(c.name, str) for c in turn.tool_calls)
    assert isinstance(turn.usage.input_tokens, int) and turn.stop in ("tool_calls", "stop", "length",
                                                                       "content_filter", "other")


def assert_only_request_invalid(codec, body, validate_response=None) -> None:
    """Decoding may succeed or raise RequestInvalid with the API's fields, never anything else."""
    try:
        request = server_of(codec).parse_request(body)
    except RequestInvalid as exc:
        assert isinstance(exc.message, str) and exc.message
        assert exc.param is None or isinstance(exc.param, str)
        assert exc.status == 400
        return
    assert isinstance(request, ChatRequest)
    if validate_response is not None:  # whatever decodes must also be answerable, in a valid shape
        validate_response(server_of(codec).build_response(ModelTurn("ok", model="m"), request))


# --- round trips ----------------------------------------------------------------------------------------

@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), tool_lists, st.data())
def test_client_to_server_request_round_trip(messages, tools, data):
    options = data.draw(options_for(tools))
    wire = chat.build_request("gpt-4.1", messages, tools, options)
    request = chat_server.parse_request(wire_json(wire.body))
    assert request.model == "gpt-4.1"
    assert request.messages == expected_messages(messages)
    assert request.tools == tuple(tools)
    # Without tools the API refuses tool_choice and the parallel switch, so they are not sent.
    assert request.options == (options if tools
                               else replace(options, tool_choice="auto", parallel_tool_calls=None))


def expected_turn(codec, turn: ModelTurn, request: ChatRequest, native: str | None = None,
                  response_id: str | None = None) -> ModelTurn:
    """The turn a client reads back: the provider's ids, empty text as None, the provider's stop word."""
    calls = tuple(replace(c, id=i) for c, i in zip(turn.tool_calls, codec.call_ids(turn, request)))
    return replace(turn, id=response_id or codec.response_id(turn, request), tool_calls=calls,
                   text=turn.text or None, native_stop=native or codec.finish_reason(turn))


@settings(max_examples=150)
@given(turns(), tool_lists, st.data())
def test_server_to_client_response_round_trip_validates_with_the_sdk(turn, tools, data):
    request = chat_server.parse_request(wire_json(chat.build_request("gpt-4.1", [Message.user("hi")], tools,
                                                              data.draw(options_for(tools))).body))
    body = chat_server.build_response(turn, request)
    ChatCompletion.model_validate(body)  # the SDK's strict pydantic validation
    assert chat.parse_response(wire_json(body)) == expected_turn(chat_server, turn, request)
    assert chat_server.build_response(turn, request) == body  # deterministic: same request, same answer


@settings(max_examples=150)
@given(turns())
def test_stream_reassembles_to_the_same_turn_as_the_plain_response(turn):
    request = request_for(chat, options=ModelOptions(stream=True))
    events = chat_server.build_stream(turn, request)
    assembler = chat.StreamAssembler()
    for event in events:
        assert event.event is None and event.comment is None  # Chat streams are `data:` lines only
        if event.data != "[DONE]":
            ChatCompletionChunk.model_validate(json.loads(event.data))
        assembler.feed(event.event, event.data)
    assert events[-1].data == "[DONE]"
    assert assembler.turn() == chat.parse_response(chat_server.build_response(turn, request))


def test_stream_splits_arguments_and_text_and_sends_usage_only_when_asked():
    turn = ModelTurn("Looking both up.", (ToolCall.from_raw("call_a", "get_weather", "{\"city\": \"Paris\"}"),
                                          ToolCall.from_raw("call_b", "get_time", "{\"timezone\": \"UTC\"}")),
                     "tool_calls", usage=Usage(10, 5), model="gpt-4.1")
    with_usage = request_for(chat, options=ModelOptions(stream=True))
    chunks = [json.loads(e.data) for e in chat_server.build_stream(turn, with_usage)[:-1]]
    fragments = {0: [], 1: []}
    for chunk in chunks:
        for choice in chunk["choices"]:
            for fragment in choice["delta"].get("tool_calls", []):
                fragments[fragment["index"]].append(fragment["function"]["arguments"])
    assert all(len([f for f in parts if f]) >= 2 for parts in fragments.values())
    assert "".join(fragments[0]) == "{\"city\": \"Paris\"}"
    assert sum(1 for c in chunks if c["choices"] and "content" in c["choices"][0]["delta"]
               and c["choices"][0]["delta"]["content"]) >= 2
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 15
    assert all(c["usage"] is None for c in chunks[:-1])

    body = {**chat.build_request("m", [Message.user("hi")]).body, "stream": True}  # no stream_options
    without = chat_server.parse_request(wire_json(body))
    plain = [json.loads(e.data) for e in chat_server.build_stream(turn, without)[:-1]]
    assert all("usage" not in c for c in plain) and plain[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_an_error_chunk_raises_the_error_it_names_and_a_cut_stream_a_bad_response():
    assembler = chat.StreamAssembler()
    assembler.feed(None, STREAM_1_8[0])
    with pytest.raises(ServerError, match="Provider disconnected") as err:
        assembler.feed(None, chat_server.build_stream_error(503, "Provider disconnected", request_for(chat)).data)
    assert err.value.error_type == "server_error" and err.value.retryable
    rate = chat.StreamAssembler()
    with pytest.raises(RateLimitError) as err:
        rate.feed(None, chat_server.build_stream_error(429, "slow down", request_for(chat)).data)
    assert err.value.retryable and err.value.status == 429
    quota = {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota"}}
    with pytest.raises(QuotaExceededError) as err:
        chat.StreamAssembler().feed(None, json.dumps(quota))
    assert not err.value.retryable
    cut = chat.StreamAssembler()
    for data in STREAM_1_8[:-1]:  # everything but [DONE]
        cut.feed(None, data)
    with pytest.raises(BadResponseError, match=r"\[DONE\]"):
        cut.turn()
    with pytest.raises(BadResponseError):
        chat.StreamAssembler().feed(None, "{not json")


def test_assembler_ignores_comments_and_blank_data():
    assembler = chat.StreamAssembler()
    for data in ["", ": OPENROUTER PROCESSING", *STREAM_1_8]:
        assembler.feed(None, data)
    assert assembler.turn() == chat.parse_response(RESPONSE_1_5)


def test_lenient_reading_of_compatible_servers():
    # Ollama-style: finish_reason "stop" with calls, arguments as an object, no usage.
    body = {"id": "x", "model": "llama3.2", "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": {"a": 1}}}]}}]}
    turn = chat.parse_response(body)
    assert turn.stop == "tool_calls" and turn.native_stop == "stop" and turn.text is None
    assert turn.tool_calls[0].arguments == {"a": 1} and turn.usage == Usage()
    for bad in [None, [], {"choices": []}, {"choices": [{"message": None}]}]:
        with pytest.raises(BadResponseError):
            chat.parse_response(bad)
    with pytest.raises(ServerError, match="boom"):  # an error inside a 200 body: untyped means the server's
        chat.parse_response({"error": {"message": "boom"}})


# --- the official SDK against the server side ---------------------------------------------------------------

def sdk_client(codec, answer, seen: list | None = None, base_url="http://sim.test/v1") -> openai.OpenAI:
    """An OpenAI client (strict validation) whose HTTP goes to the codec's server side, in-process."""

    def handler(http_request: httpx2.Request) -> httpx2.Response:
        body = json.loads(http_request.content)
        request = server_of(codec).parse_request(body)
        if seen is not None:
            seen.append((body, request))
        turn = answer(request)
        if request.options.stream:
            text = "".join(event.encode() for event in server_of(codec).build_stream(turn, request))
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=text.encode())
        return httpx2.Response(200, json=server_of(codec).build_response(turn, request))

    return openai.OpenAI(api_key="sk-test", base_url=base_url, max_retries=0,
                         _strict_response_validation=True,
                         http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


PARIS_CALLS = (ToolCall.from_raw("w1", "get_weather", "{\"city\": \"Paris\"}"),
               ToolCall.from_raw("t2", "get_time", "{\"timezone\": \"Europe/Paris\"}"))
PARIS_ARGS = [{"city": "Paris"}, {"timezone": "Europe/Paris"}]
PARALLEL = ModelTurn("Checking both.", PARIS_CALLS, "tool_calls", usage=Usage(96, 48),
                     model="gpt-4.1-2025-04-14")


def test_sdk_sends_what_the_server_side_reads_and_parses_what_it_answers():
    seen: list = []
    client = sdk_client(chat, lambda request: PARALLEL, seen)
    completion = client.chat.completions.create(model="gpt-4.1", messages=FOLLOW_UP_1_6,
                                                tools=REQUEST_1_4["tools"], parallel_tool_calls=True)
    _body, request = seen[0]
    assert [m.role for m in request.messages] == ["user", "assistant", "tool", "tool"]
    assert request.options.parallel_tool_calls is True and request.tools == (WEATHER, TIME)
    calls = completion.choices[0].message.tool_calls
    assert [json.loads(c.function.arguments) for c in calls] == PARIS_ARGS
    assert completion.choices[0].finish_reason == "tool_calls" and completion.usage.total_tokens == 144
    assert chat.parse_response(completion.model_dump(mode="json")) == chat.parse_response(
        chat_server.build_response(PARALLEL, request))


def test_sdk_stream_accumulates_our_chunks():
    client = sdk_client(chat, lambda request: PARALLEL)
    with client.chat.completions.stream(model="gpt-4.1", messages=[{"role": "user", "content": QUESTION}],
                                        tools=REQUEST_1_4["tools"],
                                        stream_options={"include_usage": True}) as s:
        final = s.get_final_completion()
    calls = final.choices[0].message.tool_calls
    assert [c.function.parsed_arguments for c in calls] == PARIS_ARGS
    assert final.choices[0].message.content == "Checking both." and final.usage.completion_tokens == 48


def test_sdk_raises_on_an_in_stream_error_chunk():
    def handler(http_request):
        text = "".join(e.encode() for e in [*chat_server.build_stream(PARALLEL, request_for(chat))[:2],
                                             chat_server.build_stream_error(500, "upstream died", request_for(chat))])
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=text.encode())

    client = openai.OpenAI(api_key="sk-test", base_url="http://sim.test/v1", max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    with pytest.raises(openai.APIError, match="upstream died"):
        list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}],
                                            stream=True))


def test_sdk_reads_our_error_bodies_like_the_real_api():
    def handler(http_request):
        try:
            chat_server.parse_request(json.loads(http_request.content))
        except RequestInvalid as exc:
            return httpx2.Response(exc.status, json=chat_server.build_error(exc.status, exc.message, param=exc.param,
                                                                     code=exc.code))
        return httpx2.Response(429, headers={"retry-after-ms": "50"}, json=chat_server.build_error(429, "slow down"))

    client = openai.OpenAI(api_key="sk-test", base_url="http://sim.test/v1", max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model="m", messages=[{"role": "bogus", "content": "x"}])
    assert bad.value.code == "invalid_value" and bad.value.param == "messages[0].role"
    with pytest.raises(openai.RateLimitError) as limited:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert limited.value.code == "rate_limit_exceeded" and limited.value.type == "requests"


# --- malformed requests ----------------------------------------------------------------------------------

def _invalid(body) -> RequestInvalid:
    with pytest.raises(RequestInvalid) as exc:
        chat_server.parse_request(body)
    return exc.value


def _body(**fields) -> dict:
    return {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}], **fields}


def test_the_api_400s_for_structure():
    assert _invalid({"messages": []}).message == "you must provide a model parameter"
    missing = _invalid({"model": "m"})
    assert (missing.message, missing.param, missing.code) == (
        "Missing required parameter: 'messages'.", "messages", "missing_required_parameter")
    assert _invalid(_body(messages="hi")).message == (
        "Invalid type for 'messages': expected an array of objects, but got a string instead.")
    assert _invalid(_body(messages=[])).code == "empty_array"
    assert _invalid(_body(messages=[7])).param == "messages[0]"
    role = _invalid(_body(messages=[{"role": "bogus", "content": "x"}]))
    assert role.message == ("Invalid value: 'bogus'. Supported values are: 'system', 'assistant', 'user', "
                            "'function', 'tool', and 'developer'.")
    assert (role.param, role.code) == ("messages[0].role", "invalid_value")
    assert _invalid(_body(messages=[{"content": "x"}])).param == "messages[0].role"
    assert _invalid(_body(messages=[{"role": "user", "content": 7}])).message == (
        "Invalid type for 'messages[0].content': expected one of a string or array of objects, but got an "
        "integer instead.")
    null = _invalid(_body(messages=[{"role": "user", "content": None}]))
    assert (null.message, null.param) == ("Invalid value for 'content': expected a string, got null.",
                                          "messages.[0].content")
    assert _invalid(_body(stream="yes")).param == "stream"
    assert _invalid(_body(max_completion_tokens=0)).code == "integer_below_min_value"
    assert _invalid(_body(temperature=3)).code == "decimal_above_max_value"
    assert _invalid("not an object").param is None


def test_the_api_400s_for_tool_pairing():
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    tools = [{"type": "function", "function": {"name": "f"}}]
    user = {"role": "user", "content": "x"}
    orphan = _invalid(_body(messages=[user, {"role": "tool", "tool_call_id": "call_9", "content": "r"}],
                            tools=tools))
    assert orphan.message == ("Invalid parameter: messages with role 'tool' must be a response to a "
                              "preceeding message with 'tool_calls'.")
    assert orphan.param == "messages.[1].role"
    two_calls = {"role": "assistant", "tool_calls": [call, {**call, "id": "call_2"}]}
    unanswered = _invalid(_body(messages=[user, two_calls,
                                          {"role": "tool", "tool_call_id": "call_1", "content": "r"},
                                          {"role": "user", "content": "and?"}], tools=tools))
    assert unanswered.message.startswith("An assistant message with 'tool_calls' must be followed by tool "
                                         "messages responding to each 'tool_call_id'.")
    assert unanswered.message.endswith("did not have response messages: call_2")
    at_end = _invalid(_body(messages=[user, {"role": "assistant", "tool_calls": [call]}]))
    assert "call_1" in at_end.message
    late = _invalid(_body(messages=[user, {"role": "assistant", "tool_calls": [call]},
                                    {"role": "tool", "tool_call_id": "call_1", "content": "r"},
                                    {"role": "user", "content": "again"},
                                    {"role": "tool", "tool_call_id": "call_1", "content": "r"}]))
    assert late.param == "messages.[4].role"  # a result must follow its own assistant turn
    assert _invalid(_body(messages=[{"role": "assistant", "tool_calls": []}])).code == "empty_array"
    bad_args = _invalid(_body(messages=[{"role": "assistant", "tool_calls": [
        {**call, "function": {"name": "f", "arguments": {"a": 1}}}]}]))
    assert bad_args.param == "messages[0].tool_calls[0].function.arguments"


def test_the_api_400s_for_tools_and_tool_choice():
    flat = _invalid(_body(tools=[{"type": "function", "name": "f", "parameters": {}}]))
    assert flat.message == "Missing required parameter: 'tools[0].function'."
    assert flat.param == "tools[0].function"
    assert _invalid(_body(tools=[{"type": "function", "function": {}}])).param == "tools[0].function.name"
    assert _invalid(_body(tools=[{"type": "function", "function": {"name": "a b"}}])).message.endswith(
        "'^[a-zA-Z0-9_-]+$'.")
    assert _invalid(_body(tools=[{"type": "retrieval"}])).param == "tools[0].type"
    assert _invalid(_body(tool_choice="required")).message == (
        "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
    assert _invalid(_body(parallel_tool_calls=True)).param == "parallel_tool_calls"
    tools = [{"type": "function", "function": {"name": "f"}}]
    assert _invalid(_body(tools=tools, tool_choice="bogus")).message == (
        "Invalid value: 'bogus'. Supported values are: 'none', 'auto', and 'required'.")
    assert _invalid(_body(tools=tools, tool_choice=7)).code == "invalid_type"
    flat_choice = _invalid(_body(tools=tools, tool_choice={"type": "function", "name": "f"}))
    assert flat_choice.param == "tool_choice.function"
    undeclared = _invalid(_body(tools=tools, tool_choice={"type": "function", "function": {"name": "g"}}))
    assert undeclared.param == "function_call" and "'g'" in undeclared.message


def test_accepted_extras_custom_tools_and_legacy_shapes():
    custom = {"type": "custom", "custom": {"name": "grammar", "description": "free text"}}
    request = chat_server.parse_request(_body(
        messages=[{"role": "developer",
                   "content": [{"type": "text", "text": "be "}, {"type": "text", "text": "nice"}]},
                  {"role": "user", "content": [{"type": "text", "text": "look"},
                                               {"type": "image_url", "image_url": {"url": "data:,"}}]},
                  {"role": "assistant", "content": None, "tool_calls": [
                      {"id": "c1", "type": "custom", "custom": {"name": "grammar", "input": "raw words"}}]},
                  {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "done"}]}],
        tools=[custom, {"type": "function", "function": {"name": "f"}}],
        tool_choice={"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": []}},
        response_format={"type": "text"}, max_tokens=20, user="u1"))
    assert request.tools == (ToolSpec("f"),)  # the custom tool is skipped, not fatal
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "tool"]
    assert request.messages[0].content == "be nice" and request.messages[1].content == "look"
    assert request.messages[2].tool_calls[0].raw_arguments == "raw words"
    assert request.messages[3].name == "grammar"
    # allowed_tools reaches the model as the kit's subset form (an empty subset here)
    assert request.options.tool_choice == {"allowed": [], "mode": "required"} and request.options.max_tokens == 20
    assert request.extras["response_format"] == {"type": "text"} and request.extras["user"] == "u1"


@settings(max_examples=100)
@given(conversations().filter(lambda ms: any(m.role == "tool" for m in ms)), st.data())
def test_dropping_any_tool_result_is_refused_naming_the_unanswered_call(messages, data):
    tool_positions = [i for i, m in enumerate(messages) if m.role == "tool"]
    drop = data.draw(st.sampled_from(tool_positions))
    body = wire_json(chat.build_request("gpt-4.1", messages[:drop] + messages[drop + 1:]).body)
    error = _invalid(body)
    assert "did not have response messages: " + messages[drop].tool_call_id in error.message
    assert error.param.startswith("messages.[") and error.param.endswith("].role")


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(any_json, mutated_bodies(chat)))
def test_fuzzed_request_bodies_only_ever_raise_request_invalid(body):
    assert_only_request_invalid(chat, body, ChatCompletion.model_validate)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(any_json, mutated_answers(chat)))
def test_fuzzed_response_bodies_decode_or_raise_bad_response(body):
    assert_only_bad_response(chat, body=body)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated_streams(chat))
def test_fuzzed_streams_assemble_or_raise_bad_response(events):
    assert_only_bad_response(chat, events=events)


# --- error bodies -----------------------------------------------------------------------------------------

def test_error_bodies_map_to_the_right_provider_error():
    limited = chat.parse_error(429, chat_server.build_error(429, "Rate limit reached"), {"Retry-After-Ms": "120"})
    assert isinstance(limited, RateLimitError) and limited.retryable
    assert (limited.retry_after, limited.error_type, limited.status, limited.message) == (
        0.12, "requests", 429, "Rate limit reached")
    assert chat.parse_error(429, b'{"error": {"message": "m", "type": "tokens"}}',
                            [("retry-after", "7")]).retry_after == 7.0
    dated = chat.parse_error(429, "{}", {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert dated.retry_after == 0.0  # a date in the past: go now
    quota = chat.parse_error(429, {"error": {"message": "You exceeded your current quota",
                                             "type": "insufficient_quota", "code": "insufficient_quota"}}, {})
    assert isinstance(quota, QuotaExceededError) and isinstance(quota, RateLimitError) and not quota.retryable
    unauthorized = chat.parse_error(401, chat_server.build_error(401, "Incorrect API key"), None)
    assert isinstance(unauthorized, AuthenticationError)
    assert isinstance(chat.parse_error(404, chat_server.build_error(404, "no model"), None), BadRequestError)
    server = chat.parse_error(503, "<html>Service Unavailable</html>", {})
    assert isinstance(server, ServerError) and server.message == "<html>Service Unavailable</html>"
    assert chat.parse_error(500, None, None).message == "HTTP 500"
    assert isinstance(chat.parse_error(400, {"error": "plain"}, {}), ProviderError)


def test_build_error_has_the_four_fields():
    assert chat_server.build_error(400, "bad", param="messages", code="missing_required_parameter") == {
        "error": {"message": "bad", "type": "invalid_request_error", "param": "messages",
                  "code": "missing_required_parameter"}}
    assert chat_server.build_error(500, "boom")["error"]["type"] == "server_error"
    assert chat_server.build_error(429, "slow")["error"]["code"] == "rate_limit_exceeded"

