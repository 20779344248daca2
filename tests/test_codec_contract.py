"""The codec contract, checked for every registered format: the names exist, and the two halves agree.

A format is a client file (`providers/<format>.py`, one line in `providers.FORMATS`) and a server file
(`sim/wire/<format>.py`, one line in `sim.wire.SERVERS`); this module is what tells their author the
files are complete. For each format: every name of `providers.contract.ClientCodec` and of
`sim.wire.contract.ServerCodec` is there; a conversation survives client encode -> server decode; an
answer survives server encode -> client decode, streamed or not; an error body and an in-stream error
come back as the right typed ProviderError; and the simulator serves every route the server half
declares, with no line of `sim/` naming the format.
"""

from __future__ import annotations

import json
from dataclasses import replace
from urllib.parse import urlsplit

import httpx
import pytest

from agentkit.core import errors
from agentkit.core.types import Message, ModelOptions, ModelTurn, ToolCall, ToolResult, ToolSpec, Usage
from agentkit.providers import FORMATS, contract, get_codec
from agentkit.providers.common import JSONLine, SSEvent
from agentkit.sim import wire as server_halves
from agentkit.sim.wire import contract as server_contract
from agentkit.sim.wire import get_server
from agentkit.sim.wire.common import ChatRequest

ALL = list(FORMATS)
WEATHER = ToolSpec("get_weather", "Current weather for a city",
                   {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
RATE = ToolSpec("get_exchange_rate", "Exchange rate between two currencies",
                {"type": "object", "properties": {"base": {"type": "string"}, "quote": {"type": "string"}},
                 "required": ["base", "quote"]})


def conversation(codec, wire) -> list[Message]:
    """A user ask, two parallel calls the format itself issued, both results, a follow-up."""
    question = ChatRequest("m", (Message.user("東京の天気と、1ドル何円か教えて"),), (WEATHER, RATE))
    turn = ModelTurn(None, (ToolCall.from_raw("1", "get_weather", {"city": "東京"}),
                            ToolCall.from_raw("2", "get_exchange_rate", {"base": "USD", "quote": "JPY"})),
                     "tool_calls", usage=Usage(40, 12), model="m")
    issued = codec.parse_response(json.loads(json.dumps(wire.build_response(turn, question))))
    results = [Message.tool(ToolResult.success(c, f"result of {c.name}")) for c in issued.tool_calls]
    return [*question.messages, issued.as_message(), *results, Message.user("ありがとう")]


def asked(codec, wire, stream: bool = False) -> ChatRequest:
    """What the server decodes from the codec's own client request (so stream options are the client's)."""
    request = codec.build_request("sim-reasoner", [Message.user("hi")], [WEATHER], ModelOptions(stream=stream))
    return wire.parse_request(json.loads(json.dumps(request.body)), model="sim-reasoner")


def test_every_registered_format_names_every_verb_of_the_contract():
    assert {fmt: contract.conforms(get_codec(fmt)) for fmt in ALL} == {fmt: [] for fmt in ALL}
    assert {fmt: server_contract.conforms(get_server(fmt)) for fmt in ALL} == {fmt: [] for fmt in ALL}
    assert {"openai-chat", "openai-responses", "anthropic", "gemini", "openrouter", "ollama"} <= set(FORMATS)


def test_every_format_has_both_halves_and_neither_half_names_the_other_sides_verbs():
    """One registry line each: the same formats, and a client file holds no server verb (nor the reverse)."""
    assert list(server_halves.SERVERS) == list(FORMATS)
    client_only = {name for name, _ in contract.NAMES}
    server_only = {name for name, _ in server_contract.NAMES}
    for fmt in ALL:
        assert not [n for n in server_only if hasattr(get_codec(fmt), n)], fmt
        assert not [n for n in client_only - {"NAME"} if n in vars(get_server(fmt))
                    and getattr(get_server(fmt), n) is not getattr(get_codec(fmt), n)], fmt


@pytest.mark.parametrize("fmt", ALL)
def test_the_codec_knows_its_name_and_its_facts(fmt):
    codec = get_codec(fmt)
    server = get_server(fmt).SERVER
    assert codec.NAME == fmt and codec.STREAM_FRAMING in ("sse", "ndjson")
    assert codec.DEFAULT_BASE_URL.startswith(("https://", "http://localhost"))
    actions = {(r.method, r.action) for r in server.routes}
    assert {("POST", "chat"), ("GET", "models")} <= actions
    assert server.no_key is None or server.no_key[0] in (401, 403)
    assert {429, 500, 503} <= set(server.fault_messages)
    assert set(server.nearest_status.values()) <= set(server.fault_messages)
    assert server.not_json.format(detail="x")  # a template that fills in


@pytest.mark.parametrize("fmt", ALL)
def test_a_conversation_survives_client_encode_then_server_decode(fmt):
    codec, wire = get_codec(fmt), get_server(fmt)
    messages = conversation(codec, wire)
    sent = codec.build_request("sim-reasoner", messages, [WEATHER, RATE], ModelOptions(max_tokens=256))
    request = wire.parse_request(json.loads(json.dumps(sent.body)), model="sim-reasoner")
    assert request.model == "sim-reasoner"
    assert [t.name for t in request.tools] == ["get_weather", "get_exchange_rate"]
    assistant = next(m for m in request.messages if m.role == "assistant")
    assert [(c.name, c.arguments) for c in assistant.tool_calls] == [
        ("get_weather", {"city": "東京"}), ("get_exchange_rate", {"base": "USD", "quote": "JPY"})]
    results = [m for m in request.messages if m.role == "tool"]
    # Each result answers its own call, whether the format links them by id, by name or by position.
    assert [m.tool_call_id for m in results] == [c.id for c in assistant.tool_calls]
    assert all("result of" in m.content for m in results)
    assert request.messages[-1] == Message.user("ありがとう")


@pytest.mark.parametrize("fmt", ALL)
def test_an_answer_survives_server_encode_then_client_decode_streamed_or_not(fmt):
    codec, wire = get_codec(fmt), get_server(fmt)
    request = asked(codec, wire, stream=True)
    for turn in (ModelTurn("Tokyo is sunny.", (), "stop", usage=Usage(10, 4), model="sim-reasoner"),
                 ModelTurn(None, (ToolCall.from_raw("c1", "get_weather", {"city": "Tokyo"}),), "tool_calls",
                           usage=Usage(10, 4), model="sim-reasoner")):
        plain = codec.parse_response(json.loads(json.dumps(wire.build_response(turn, request))))
        assert (plain.text, plain.stop, plain.usage) == (turn.text, turn.stop, turn.usage)
        assert [(c.name, c.arguments) for c in plain.tool_calls] == [(c.name, c.arguments) for c in turn.tool_calls]
        events = wire.build_stream(turn, request)
        kind = SSEvent if codec.STREAM_FRAMING == "sse" else JSONLine
        assert events and all(isinstance(e, kind) for e in events)
        assembler = codec.StreamAssembler()
        for event in events:
            if event.comment is None:  # an SSE parser never hands comments on
                assembler.feed(event.event, event.data)
        assert assembler.turn() == plain
        assert wire.response_id(turn, request) == wire.response_id(turn, request)


@pytest.mark.parametrize("fmt", ALL)
@pytest.mark.parametrize("status, cls", [(429, errors.RateLimitError), (500, errors.ServerError),
                                         (503, errors.ServerError), (529, errors.ServerError)])
def test_an_error_inside_a_stream_raises_the_typed_retryable_error(fmt, status, cls):
    codec, wire = get_codec(fmt), get_server(fmt)
    request = asked(codec, wire, stream=True)
    events = wire.build_stream(ModelTurn("Tokyo is sunny, 22 degrees.", model="sim-reasoner"), request)
    sent = events[: max(1, len(events) // 2)]
    answered = wire.SERVER.nearest_status.get(status, status)
    failure = wire.build_stream_error(answered, "it broke", request, sent)
    assembler = codec.StreamAssembler()
    with pytest.raises(errors.ProviderError, match="it broke") as info:
        for event in [*sent, failure]:
            if event.comment is None:
                assembler.feed(event.event, event.data)
    assert info.value.retryable and info.value.provider == fmt
    # Ollama's error line is `{"error": "text"}` and nothing else once content was sent (its server
    # drops the status), so every in-stream failure there is a server failure.
    assert type(info.value) is (errors.ServerError if fmt == "ollama" else cls)


@pytest.mark.parametrize("fmt", ALL)
@pytest.mark.parametrize("status", [400, 401, 404, 429, 500, 503])
def test_an_error_body_comes_back_as_the_class_of_its_status(fmt, status):
    codec, wire = get_codec(fmt), get_server(fmt)
    body = wire.build_error(status, "it failed", request_id="req_1", param="model", code="x", retry_after=2)
    error = codec.parse_error(status, json.dumps(body), {})
    assert isinstance(error, errors.error_for_status(status)) and "it failed" in error.message
    assert error.status == status and error.provider == fmt


@pytest.mark.parametrize("fmt", ALL)
def test_tool_definitions_convert_both_ways_and_bad_schemas_are_refused(fmt):
    codec, server = get_codec(fmt), get_server(fmt)
    wire = json.loads(json.dumps(codec.tool_to_wire(WEATHER)))
    assert server.tool_from_wire(wire) == replace(WEATHER, strict=False)
    broken = json.loads(json.dumps(codec.tool_to_wire(replace(WEATHER, parameters={
        "type": "object", "properties": -1}))))
    with pytest.raises(Exception) as info:  # noqa: B017 - the type is checked on the next line
        server.tool_from_wire(broken)
    assert type(info.value).__name__ == "RequestInvalid"


# --- the simulator serves what the server half declares, generically --------------------------------------

@pytest.mark.parametrize("fmt", ALL)
def test_the_simulator_serves_every_route_the_codec_declares(server, fmt):
    codec, facts = get_codec(fmt), get_server(fmt).SERVER
    key = {"authorization": "Bearer sk-contract"}
    extra = {name: "2023-06-01" for name in facts.required_headers}
    with httpx.Client(base_url=server.url, timeout=10, headers={**key, **extra}) as client:
        for route in facts.routes:
            if route.action == "models":
                headers = {h: "x" for h in facts.client_headers}  # a shared path answers by client
                r = client.get(route.path, headers=headers)
                models = list(server.app.state.sim.models)
                assert r.status_code == 200 and r.json() == get_server(fmt).build_model_list(models)
                continue
            wire = codec.build_request("sim-reasoner", [Message.user("東京の天気は？")], [WEATHER],
                                       ModelOptions(stream=bool(route.stream)))
            path = route.path.replace("{model}", "sim-reasoner")
            query = {facts.sse_query[0]: facts.sse_query[1]} if route.stream and facts.sse_query \
                else None
            if route.action == "count_tokens":  # the same inputs as a message, less what only generating takes
                body = {k: v for k, v in wire.body.items() if k not in ("max_tokens", "stream")}
                r = client.post(path, json=body, headers=wire.headers)
                assert r.status_code == 200 and set(r.json()) == {"input_tokens"}, (path, r.text)
                assert facts.count_request(body, None).model == "sim-reasoner"
                continue
            r = client.post(path, json=wire.body, headers=wire.headers, params=query)
            assert r.status_code == 200, (path, r.text)
    # Where HTTPModel sends a request (its base URL + the codec's path) is a route the codec declares.
    declared = {r.path.replace("{model}", "sim-reasoner") for r in facts.routes if r.action == "chat"}
    for stream in (False, True):
        wire = codec.build_request("sim-reasoner", [Message.user("hi")], options=ModelOptions(stream=stream))
        assert urlsplit(server.base_url(fmt) + wire.path).path in declared


# --- reasoning state: every format carries it both ways, streamed or not, and drops it elsewhere --------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

#: For each format: a model and the request fields that ask it for reasoning, in that API's own words.
#: Adding a format means adding its line here (the test below fails until then).
REASONING_ASKED = {
    "openai-chat": ("deepseek-v4-flash", {"thinking": {"type": "enabled"}}),           # DeepSeek's switch
    "openai-responses": ("gpt-6.1-sol", {"reasoning": {"effort": "low", "summary": "auto"}}),
    "anthropic": ("claude-sonnet-4-5", {"thinking": {"type": "enabled", "budget_tokens": 1024}}),
    "gemini": ("gemini-3-flash-preview", {}),                                            # Gemini 3 always signs
    "openrouter": ("anthropic/claude-sonnet-4.5", {"reasoning": {"max_tokens": 1024}}),
    "ollama": ("qwen3", {"think": True}),
}
ASK = "東京の天気と、1ドル何円か教えて"


def test_every_registered_format_says_how_to_ask_it_for_reasoning():
    assert set(REASONING_ASKED) == set(FORMATS)


def decoded(codec, model, messages, extras, stream=False):
    wire = codec.build_request(model, messages, [WEATHER, RATE], ModelOptions(max_tokens=2048, stream=stream),
                               **extras)
    return get_server(codec.NAME).parse_request(json.loads(json.dumps(wire.body)), model=model), wire


def streamed(codec, events):
    assembler = codec.StreamAssembler()
    for event in events:
        if event.comment is None:
            assembler.feed(event.event, event.data)
    return assembler.turn()


def opaque_strings(value) -> list[str]:
    """The long strings inside reasoning items (signatures, thinking text, encrypted content, item ids);
    a `call_id` is the call's own id, which every format sends."""
    if isinstance(value, dict):
        return [s for k, v in value.items() if k != "call_id" for s in opaque_strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in opaque_strings(v)]
    return [value] if isinstance(value, str) and len(value) > 24 else []


PLANNED = [("get_weather", {"city": "東京"}), ("get_exchange_rate", {"base": "USD", "quote": "JPY"})]
answers = st.tuples(st.sampled_from([None, "Tokyo is sunny; 1 USD is 155 JPY."]),
                    st.lists(st.sampled_from(PLANNED), max_size=3)).filter(lambda a: a[0] or a[1])


@pytest.mark.parametrize("fmt", ALL)
@settings(max_examples=12, deadline=None)
@given(answer=answers)
def test_reasoning_state_survives_client_encode_server_decode_server_encode_client_decode(fmt, answer):
    codec, server = get_codec(fmt), get_server(fmt)
    model, extras = REASONING_ASKED[fmt]
    text, planned = answer
    request, _ = decoded(codec, model, [Message.user(ASK)], extras, stream=True)  # a stream that counts usage
    calls = tuple(ToolCall.from_raw(f"c{i}", name, args) for i, (name, args) in enumerate(planned))
    turn = ModelTurn(text, calls, "tool_calls" if calls else "stop", usage=Usage(30, 9), model=model)
    state = server.reasoning_for(turn, request)
    assert state is not None and state.format == fmt and state.items

    # server encode -> client decode, plain and streamed: the client holds exactly the server's state
    body = json.loads(json.dumps(server.build_response(replace(turn, reasoning=state), request)))
    plain = codec.parse_response(body)
    assert plain.reasoning == state
    assert streamed(codec, server.build_stream(replace(turn, reasoning=state), request)) == plain

    # client encode -> server decode: the replayed turn carries the same state back, after its results
    if not plain.tool_calls:
        return
    history = [Message.user(ASK), plain.as_message(),
               *[Message.tool(ToolResult.success(c, "ok")) for c in plain.tool_calls]]
    again, wire = decoded(codec, model, history, extras)
    replayed = next(m for m in again.messages if m.role == "assistant")
    assert replayed.reasoning == state and replayed.tool_calls == plain.tool_calls

    # ... and to another model, or another format, none of it goes: no signature is forwarded
    for other_fmt in ALL:
        other = get_codec(other_fmt)
        for other_model in ("some-other-model", model):
            if (other_fmt, other_model) == (fmt, model):
                continue
            body_text = json.dumps(other.build_request(other_model, history, [WEATHER, RATE]).body, ensure_ascii=False)
            assert not [s for s in opaque_strings(state.items) if s in body_text], (other_fmt, other_model)


@pytest.mark.parametrize("fmt", ALL)
def test_a_turn_without_reasoning_is_encoded_as_before(fmt):
    """Only a request that asks for reasoning gets state: every other answer is byte-for-byte as it was."""
    codec, wire = get_codec(fmt), get_server(fmt)
    request = asked(codec, wire)
    turn = ModelTurn(None, (ToolCall.from_raw("c1", "get_weather", {"city": "Tokyo"}),), "tool_calls",
                     usage=Usage(10, 4), model="sim-reasoner")
    assert wire.reasoning_for(turn, request) is None
    assert codec.parse_response(json.loads(json.dumps(wire.build_response(turn, request)))).reasoning is None


def test_only_the_responses_format_stores_responses():
    stores = {fmt: get_codec(fmt).CONTINUATION_FIELD for fmt in ALL}
    assert stores == {fmt: "previous_response_id" if fmt == "openai-responses" else None for fmt in ALL}
    for fmt in ALL:
        codec, wire = get_codec(fmt), get_server(fmt)
        if codec.CONTINUATION_FIELD is None:
            body = {"model": "m"}
            assert wire.resolve_stored(body, lambda key: None) is body
            assert wire.stored_records(body, {"id": "x"}) == {}
            assert codec.stored_response_id(body, ModelTurn("hi", id="x")) is None


def test_a_tool_schema_nested_thousands_deep_is_refused_in_words_not_a_recursion_error():
    from agentkit.sim.wire.common import MAX_SCHEMA_DEPTH, schema_problem

    deep: dict = {"type": "string"}
    for _ in range(10_000):
        deep = {"type": "object", "properties": {"x": deep}}
    assert schema_problem(deep) == f"the schema is nested more than {MAX_SCHEMA_DEPTH} levels deep"
    assert schema_problem({"type": "object", "properties": {"x": {"type": "string"}}}) is None
