"""The Anthropic Messages codec: recorded shapes, both sides of the wire, streams, errors, the real SDK."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import anthropic as sdk
import codec_strategies
import httpx2
import pydantic
import pytest
from codec_strategies import arguments, json_values, names, texts, tool_specs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentkit.core import errors
from agentkit.core.types import Message, ModelOptions, ModelTurn, ToolCall, ToolResult, ToolSpec, Usage
from agentkit.providers import anthropic as codec
from agentkit.sim.wire import anthropic as codec_server
from agentkit.sim.wire.common import ChatRequest, RequestInvalid

# --- recorded shapes: _3_5 a response with two parallel calls ---------------------------------------------------------

RESPONSE_3_5 = {
    "id": "msg_01Sim0001",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [
        {"type": "text", "text": "I'll look up both."},
        {"type": "tool_use", "id": "toolu_01Wx", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_02Tm", "name": "get_time", "input": {"timezone": "Europe/Paris"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 410,
        "output_tokens": 96,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "service_tier": "standard",
    },
}

WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TIME = ToolSpec(
    "get_time",
    "Current local time in a zone",
    {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]},
)


def test_recorded_response_decodes_parallel_calls_with_ids_object_args_and_usage():
    turn = codec.parse_response(RESPONSE_3_5)
    assert turn.text == "I'll look up both."
    assert [(c.id, c.name) for c in turn.tool_calls] == [
        ("toolu_01Wx", "get_weather"),
        ("toolu_02Tm", "get_time"),
    ]
    assert turn.tool_calls[0].raw_arguments == {"city": "Paris"}  # an object, kept as it came
    assert turn.tool_calls[0].arguments == {"city": "Paris"}
    assert (turn.stop, turn.native_stop) == ("tool_calls", "tool_use")
    assert turn.usage == Usage(410, 96)
    assert (turn.model, turn.id, turn.raw) == ("claude-sonnet-4-5-20250929", "msg_01Sim0001", RESPONSE_3_5)


def test_cached_prompt_tokens_count_as_input():
    body = {
        **RESPONSE_3_5,
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 300,
        },
    }
    # the reads are billed lower and the writes higher than input: the neutral Usage keeps them apart
    assert codec.parse_response(body).usage == Usage(410, 5, cached_tokens=300, cache_write_tokens=100)


def test_one_hour_cache_writes_are_kept_apart_from_five_minute_ones():
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 0,
             "cache_creation": {"ephemeral_5m_input_tokens": 40, "ephemeral_1h_input_tokens": 60}}
    assert codec.parse_response({**RESPONSE_3_5, "usage": usage}).usage == Usage(
        110, 5, cache_write_tokens=100, cache_write_1h_tokens=60)


@pytest.mark.parametrize(
    "native, neutral",
    [
        ("end_turn", "stop"),
        ("max_tokens", "length"),
        ("refusal", "content_filter"),
        ("stop_sequence", "stop"),
        ("pause_turn", "other"),
        ("something_new", "other"),
    ],
)
def test_stop_reasons_map_to_neutral_stops(native, neutral):
    body = {**RESPONSE_3_5, "content": [{"type": "text", "text": "x"}], "stop_reason": native}
    assert (codec.parse_response(body).stop, codec.parse_response(body).native_stop) == (neutral, native)


def test_request_matches_the_reference_shapes():
    calls = [
        ToolCall.from_raw("toolu_01Wx", "get_weather", {"city": "Paris"}),
        ToolCall.from_raw("toolu_02Tm", "get_time", {"timezone": "Europe/Paris"}),
    ]
    messages = [
        Message.system("Be brief."),
        Message.user("What's the weather and local time in Paris?"),
        Message.assistant("I'll look up both.", calls),
        Message("tool", '{"temp_c": 18, "sky": "cloudy"}', (), "toolu_01Wx", "get_weather"),
        Message("tool", "upstream timeout", (), "toolu_02Tm", "get_time", is_error=True),
        Message.user("(optional extra user text, after the results)"),
    ]
    wire = codec.build_request("claude-sonnet-4-5", messages, [WEATHER, TIME], ModelOptions())
    assert (wire.path, wire.stream) == ("/messages", False)
    assert wire.headers["anthropic-version"] == "2023-06-01"
    body = wire.body
    assert body["max_tokens"] == 1024 and body["system"] == "Be brief."
    assert body["tools"][0] == {
        "name": "get_weather",
        "description": "Current weather for a city",
        "input_schema": WEATHER.parameters,
    }
    assert body["tool_choice"] == {"type": "auto"}
    assert body["messages"] == [
        {"role": "user", "content": "What's the weather and local time in Paris?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I'll look up both."},
                {"type": "tool_use", "id": "toolu_01Wx", "name": "get_weather", "input": {"city": "Paris"}},
                {
                    "type": "tool_use",
                    "id": "toolu_02Tm",
                    "name": "get_time",
                    "input": {"timezone": "Europe/Paris"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01Wx",
                    "content": '{"temp_c": 18, "sky": "cloudy"}',
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_02Tm",
                    "content": "upstream timeout",
                    "is_error": True,
                },
                {"type": "text", "text": "(optional extra user text, after the results)"},
            ],
        },
    ]
    assert codec.auth_headers("sk-test") == {"x-api-key": "sk-test"}


def test_unparsed_arguments_are_replayed_as_an_empty_object_and_strict_tools_say_so():
    bad = ToolCall.from_raw("toolu_01", "get_weather", '{"city": "Par')
    messages = [
        Message.user("hi"),
        Message.assistant(None, [bad]),
        Message.tool(ToolResult.failure(bad, "parse", "x")),
    ]
    body = codec.build_request("m", messages, [replace(WEATHER, strict=True)], ModelOptions()).body
    assert body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {}}
    ]
    assert body["tools"][0]["strict"] is True


@pytest.mark.parametrize(
    "choice, parallel, wire",
    [
        ("auto", None, {"type": "auto"}),
        ("auto", False, {"type": "auto", "disable_parallel_tool_use": True}),
        ("required", True, {"type": "any", "disable_parallel_tool_use": False}),
        (
            {"name": "get_time"},
            False,
            {"type": "tool", "name": "get_time", "disable_parallel_tool_use": True},
        ),
        ("none", False, {"type": "none"}),  # `none` has no parallel flag
    ],
)
def test_tool_choice_and_parallel_switch(choice, parallel, wire):
    options = ModelOptions(
        tool_choice=choice, parallel_tool_calls=parallel, max_tokens=50, temperature=0.5, stream=True
    )
    request = codec.build_request(
        "m", [Message.user("hi")], [WEATHER, TIME], options, metadata={"user_id": "u"}
    )
    assert request.body["tool_choice"] == wire
    assert (request.body["max_tokens"], request.body["temperature"], request.body["stream"]) == (
        50,
        0.5,
        True,
    )
    assert request.stream and request.body["metadata"] == {"user_id": "u"}


# --- hypothesis strategies: valid conversations and turns --------------------------------------------



@st.composite
def conversations(draw) -> list[Message]:
    counter = iter(range(10**6))
    messages = [Message.system(draw(texts))] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(1, 3))):
        messages.append(Message.user(draw(texts)))
        for _ in range(draw(st.integers(0, 2))):
            calls = [
                ToolCall.from_raw(f"toolu_01{next(counter):06d}", draw(names), draw(arguments))
                for _ in range(draw(st.integers(1, 3)))
            ]
            messages.append(Message.assistant(draw(st.none() | texts), calls))
            for call in calls:
                if draw(st.booleans()):
                    result = ToolResult.success(call, draw(json_values))
                else:
                    result = ToolResult.failure(call, "tool_error", draw(st.text(max_size=10)))
                messages.append(Message.tool(result))
            if draw(st.booleans()):
                messages.append(Message.user(draw(texts)))  # extra text after the results
        if draw(st.booleans()):
            messages.append(Message.assistant(draw(texts)))
    return messages


choices = st.sampled_from(["auto", "none", "required"]) | st.builds(lambda n: {"name": n}, names)
options_strategy = st.builds(
    ModelOptions,
    choices,
    st.none() | st.booleans(),
    st.booleans(),
    st.none() | st.integers(1, 4096),
    st.none() | st.floats(0, 1, allow_nan=False),
)


def expected_server_view(messages, tools, options) -> tuple:
    """What the server should decode: system prompts joined, defaults filled in."""
    system = [m.content for m in messages if m.role == "system"]
    rest = [m for m in messages if m.role != "system"]
    parallel = options.parallel_tool_calls if tools and options.tool_choice != "none" else None
    expected_options = ModelOptions(
        options.tool_choice if tools else "auto",
        parallel,
        options.stream,
        options.max_tokens or 1024,
        options.temperature,
    )
    return ([Message.system("\n\n".join(system))] if system else []) + rest, list(tools), expected_options


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    conversations(),
    st.lists(tool_specs, min_size=1, max_size=3, unique_by=lambda t: t.name),
    options_strategy,
)
def test_client_request_round_trips_through_the_server_decoder(messages, tools, options):
    wire = codec.build_request("claude-test", messages, tools, options)
    decoded = codec_server.parse_request(json.loads(json.dumps(wire.body)))
    want_messages, want_tools, want_options = expected_server_view(messages, tools, options)
    assert list(decoded.messages) == want_messages
    assert list(decoded.tools) == want_tools
    assert decoded.options == want_options
    assert decoded.model == "claude-test"


@st.composite
def turns(draw) -> ModelTurn:
    calls = tuple(
        ToolCall.from_raw(
            f"toolu_01{i:04d}{draw(st.text('abcdef0123456789', min_size=4, max_size=4))}",
            draw(names),
            draw(arguments),
        )
        for i in range(draw(st.integers(0, 3)))
    )
    stop = draw(st.sampled_from(["tool_calls", "length"] if calls else ["stop", "length", "content_filter"]))
    return ModelTurn(
        draw(st.none() | texts),
        calls,
        stop,
        codec_server.NEUTRAL_TO_STOP[stop],
        Usage(draw(st.integers(0, 10**5)), draw(st.integers(0, 10**5))),
        "claude-sonnet-4-5-20250929",
        "msg_01" + draw(st.text("abcdef0123456789", min_size=8, max_size=8)),
    )


REQUEST = ChatRequest("claude-sonnet-4-5", (Message.user("hi"),))
message_adapter = pydantic.TypeAdapter(sdk.types.Message)
event_adapter = pydantic.TypeAdapter(sdk.types.RawMessageStreamEvent)


def reassemble(events) -> ModelTurn:
    assembler = codec.StreamAssembler()
    for event in events:
        assembler.feed(event.event, event.data)
    return assembler.turn()


@settings(max_examples=150, deadline=None)
@given(turns())
def test_server_response_round_trips_validates_with_the_sdk_and_streams_to_the_same_turn(turn):
    body = codec_server.build_response(turn, REQUEST)
    message_adapter.validate_python(body)  # strict pydantic validation, as the strict SDK client does
    assert codec.parse_response(json.loads(json.dumps(body))) == turn
    events = codec_server.build_stream(turn, REQUEST)
    for event in events:
        data = json.loads(event.data)
        assert event.event == data["type"]  # the SDK drops events without an `event:` line
        if event.event != "ping":  # the SDK skips pings; every other event is one of its models
            event_adapter.validate_python(data)
    assert reassemble(events) == codec.parse_response(body)
    # The SDK's own stream accumulator rebuilds the very message the non-streamed body holds.
    client = sdk_client(
        lambda request: httpx2.Response(
            200,
            content="".join(e.encode() for e in events).encode(),
            headers={"content-type": "text/event-stream"},
        )
    )
    with client.messages.stream(
        model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        assert stream.get_final_message().model_dump(exclude_none=True) == sdk.types.Message.model_validate(
            body
        ).model_dump(exclude_none=True)


def test_stream_framing_follows_the_reference():
    turn = codec.parse_response(RESPONSE_3_5)
    events = codec_server.build_stream(turn, REQUEST)
    kinds = [e.event for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert "ping" in kinds
    fragments = [
        json.loads(e.data)["delta"]["partial_json"]
        for e in events
        if e.event == "content_block_delta" and json.loads(e.data)["index"] == 1
    ]
    assert fragments[0] == "" and len([f for f in fragments if f]) >= 2
    assert json.loads("".join(fragments)) == {"city": "Paris"}
    assert all(e.encode().startswith("event: ") for e in events)


def test_ids_are_provider_style_deterministic_and_unique_per_turn():
    turn = ModelTurn(
        None, (ToolCall.from_raw("call_1", "a", {}), ToolCall.from_raw("call_2", "b", {})), "tool_calls"
    )
    first = codec_server.build_response(turn, REQUEST)
    assert first == codec_server.build_response(turn, REQUEST)
    assert first["id"].startswith("msg_01")
    ids = [b["id"] for b in first["content"]]
    assert all(i.startswith("toolu_01") for i in ids) and len(set(ids)) == 2
    later = codec_server.build_response(turn, replace(REQUEST, messages=REQUEST.messages * 3))
    assert {b["id"] for b in later["content"]}.isdisjoint(ids)  # "call_1" again, in a later turn


# --- the real SDK against these bodies, over an in-process transport ----------------------------------


def sdk_client(handler):
    return sdk.Anthropic(
        api_key="sk-test",
        base_url="http://sim.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        _strict_response_validation=True,
    )


def test_the_sdk_reads_responses_and_streams_and_its_requests_decode():
    turn = codec.parse_response(RESPONSE_3_5)
    sent = []

    def handler(request):
        body = json.loads(request.content)
        sent.append(body)
        chat = codec_server.parse_request(body)
        if chat.options.stream:
            data = "".join(e.encode() for e in codec_server.build_stream(turn, chat)).encode()
            return httpx2.Response(200, content=data, headers={"content-type": "text/event-stream"})
        return httpx2.Response(200, json=codec_server.build_response(turn, chat))

    client = sdk_client(handler)
    kwargs = {
        "model": "claude-haiku-4-5",
        "max_tokens": 100,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "Weather and time in Paris?"}],
        "tools": [codec.tool_to_wire(WEATHER), codec.tool_to_wire(TIME)],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
    }
    message = client.messages.create(**kwargs)
    assert [b.input for b in message.content if b.type == "tool_use"] == [
        {"city": "Paris"},
        {"timezone": "Europe/Paris"},
    ]
    with client.messages.stream(**kwargs) as stream:
        final = stream.get_final_message()
    assert final.model_dump() == message.model_dump()
    decoded = codec_server.parse_request(sent[0])
    assert decoded.options.tool_choice == "required" and decoded.options.parallel_tool_calls is False
    assert decoded.messages[0] == Message.system("Be brief.")


@pytest.mark.parametrize(
    "status, sdk_error",
    [
        (400, sdk.BadRequestError),
        (401, sdk.AuthenticationError),
        (429, sdk.RateLimitError),
        (529, sdk.InternalServerError),
    ],
)
def test_the_sdk_maps_build_error_bodies_to_its_exceptions(status, sdk_error):
    client = sdk_client(lambda request: httpx2.Response(status, json=codec_server.build_error(status, "nope")))
    with pytest.raises(sdk_error) as caught:
        client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.body["error"]["message"] == "nope"


# --- server-side validation: the documented 400s ----------------------------------------------------


def body_with(messages, **extra):
    tools = [codec.tool_to_wire(WEATHER)]
    return {"model": "claude-test", "max_tokens": 100, "messages": messages, "tools": tools, **extra}


USE = {
    "role": "assistant",
    "content": [{"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Paris"}}],
}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "sunny"}


@pytest.mark.parametrize(
    "messages, wording",
    [
        (
            [{"role": "user", "content": "hi"}, USE, {"role": "user", "content": "and now?"}],
            (
                "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message. "
                "Messages following "
                "`tool_use` blocks must begin with a matching number of `tool_result` blocks."
            ),
        ),
        (
            [
                {"role": "user", "content": "hi"},
                USE,
                {"role": "user", "content": [{"type": "text", "text": "x"}, RESULT]},
            ],
            "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message.",
        ),
        (
            [{"role": "user", "content": "hi"}, USE],
            (
                "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
                "toolu_01A. Each "
                "`tool_use` block must have a corresponding `tool_result` block in the next message."
            ),
        ),
        (
            [{"role": "user", "content": "hi"}, USE, {"role": "assistant", "content": "hm"}],
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01A",
        ),
        (
            [{"role": "user", "content": [RESULT]}],
            (
                "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01A. "
                "Each "
                "`tool_result` block must have a corresponding `tool_use` block in the previous message."
            ),
        ),
        (
            [
                {"role": "user", "content": "hi"},
                USE,
                {"role": "user", "content": [RESULT, {**RESULT, "tool_use_id": "toolu_01Other"}]},
            ],
            "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01Other.",
        ),
        (
            [
                {"role": "user", "content": "hi"},
                USE,
                {"role": "user", "content": "later"},
                {"role": "user", "content": [RESULT]},
            ],
            "messages.2: Did not find 1 `tool_result` block(s)",
        ),
    ],
)
def test_tool_ordering_violations_are_rejected_with_the_api_wording(messages, wording):
    with pytest.raises(RequestInvalid) as caught:
        codec_server.parse_request(body_with(messages))
    assert caught.value.message.startswith(wording)
    assert caught.value.status == 400


@pytest.mark.parametrize(
    "mutate, wording, param",
    [
        (lambda b: b.pop("max_tokens"), "max_tokens: Field required", "max_tokens"),
        (lambda b: b.pop("messages"), "messages: Field required", "messages"),
        (lambda b: b.pop("model"), "model: Field required", "model"),
        (lambda b: b.update(messages=[]), "messages: at least one message is required", "messages"),
        (lambda b: b.update(max_tokens="10"), "max_tokens: Input should be a valid integer", "max_tokens"),
        (
            lambda b: b["messages"].insert(0, {"role": "system", "content": "x"}),
            'messages: Unexpected role "system"',  # the API's words (reported, aaronrussell/anthropix#2)
            "messages.0.role",
        ),
        (
            lambda b: b.pop("tools"),
            "Requests which include `tool_use` or `tool_result` blocks must define tools.",
            "tools",
        ),
        (
            lambda b: b["tools"][0].pop("input_schema"),
            "tools.0.custom.input_schema: Field required",
            "tools.0.input_schema",
        ),
        (
            lambda b: b.update(tool_choice={"type": "sometimes"}),
            "tool_choice: Input tag 'sometimes'",
            "tool_choice.type",
        ),
    ],
)
def test_malformed_fields_name_the_parameter(mutate, wording, param):
    body = body_with([{"role": "user", "content": "hi"}, USE, {"role": "user", "content": [RESULT]}])
    assert codec_server.parse_request(copy.deepcopy(body)).messages[-1].tool_call_id == "toolu_01A"
    mutate(body)
    with pytest.raises(RequestInvalid) as caught:
        codec_server.parse_request(body)
    assert caught.value.message.startswith(wording) and caught.value.param == param


def test_server_side_decoding_of_results_names_and_extras():
    body = body_with(
        [
            {"role": "user", "content": "hi"},
            USE,
            {
                "role": "user",
                "content": [
                    {**RESULT, "is_error": True, "content": [{"type": "text", "text": "boom"}]},
                    {"type": "text", "text": "go on"},
                ],
            },
        ],
        system=[{"type": "text", "text": "Be brief."}],
        top_p=0.9,
        tool_choice={"type": "tool", "name": "get_weather"},
    )
    body["tools"].append({"type": "web_search_20250305", "name": "web_search"})
    chat = codec_server.parse_request(body)
    assert chat.messages[0] == Message.system("Be brief.")
    assert chat.messages[3] == Message("tool", "boom", (), "toolu_01A", "get_weather", True)
    assert chat.messages[4] == Message.user("go on")
    assert chat.options.tool_choice == {"name": "get_weather"}
    assert chat.extras == {
        "top_p": 0.9,
        "server_tools": [{"type": "web_search_20250305", "name": "web_search"}],
    }


VALID = body_with(
    [{"role": "user", "content": "hi"}, USE, {"role": "user", "content": [RESULT]}],
    system="s",
    tool_choice={"type": "auto"},
    stream=False,
    temperature=0.2,
)
KEYS = [
    "model",
    "max_tokens",
    "messages",
    "role",
    "content",
    "type",
    "text",
    "tool_use",
    "tool_result",
    "id",
    "name",
    "input",
    "tool_use_id",
    "is_error",
    "tools",
    "input_schema",
    "tool_choice",
    "system",
    "user",
    "assistant",
    "stream",
    "temperature",
    "disable_parallel_tool_use",
    "auto",
    "any",
    "tool",
    "none",
]
any_json = codec_strategies.any_json(KEYS)
mutated_bodies = codec_strategies.mutated_bodies(VALID, any_json)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(any_json, mutated_bodies))
def test_malformed_request_bodies_only_ever_raise_request_invalid(body):
    try:
        chat = codec_server.parse_request(body)
    except RequestInvalid as e:
        assert e.message and e.status == 400
    else:
        assert isinstance(chat, ChatRequest)


# --- errors -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "status, cls",
    [
        (400, errors.BadRequestError),
        (401, errors.AuthenticationError),
        (403, errors.AuthenticationError),
        (404, errors.BadRequestError),
        (413, errors.BadRequestError),
        (429, errors.RateLimitError),
        (500, errors.ServerError),
        (504, errors.ServerError),
        (529, errors.ServerError),
    ],
)
def test_error_bodies_become_typed_provider_errors(status, cls):
    body = codec_server.build_error(status, "it failed", request_id="req_011X")
    assert body == {
        "type": "error",
        "error": {"type": codec.ERROR_TYPES[status], "message": "it failed"},
        "request_id": "req_011X",
    }
    error = codec.parse_error(status, json.dumps(body), {})
    assert type(error) is cls
    assert (error.status, error.error_type, error.message, error.provider) == (
        status,
        codec.ERROR_TYPES[status],
        "it failed",
        "anthropic",
    )


def test_overloaded_529_is_a_retryable_server_error():
    error = codec.parse_error(529, codec_server.build_error(529, "Overloaded"), {"retry-after": "3"})
    assert isinstance(error, errors.ServerError) and error.retryable
    assert (error.error_type, error.retry_after) == ("overloaded_error", 3.0)


def test_retry_after_headers_and_non_json_bodies():
    assert codec.parse_error(429, b"{}", {"Retry-After": "7"}).retry_after == 7.0
    assert codec.parse_error(429, "{}", {"retry-after-ms": "50", "retry-after": "7"}).retry_after == 0.05
    # an HTTP date is read too (one helper for every format): a date in the past means "now"
    assert codec.parse_error(429, "{}", {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}).retry_after == 0.0
    error = codec.parse_error(502, "<html>Bad gateway</html>", None)
    assert isinstance(error, errors.ServerError) and "Bad gateway" in error.message
    assert codec.parse_error(500, b"", {}).message == "HTTP 500"


def test_stream_error_event_raises_the_typed_error():
    assembler = codec.StreamAssembler()
    assembler.feed("message_start", json.dumps({"type": "message_start", "message": RESPONSE_3_5}))
    with pytest.raises(errors.ServerError) as caught:
        assembler.feed(
            "error",
            json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        )
    assert caught.value.status == 529


def test_a_stream_cut_before_message_stop_is_a_bad_response():
    events = codec_server.build_stream(codec.parse_response(RESPONSE_3_5), REQUEST)
    with pytest.raises(errors.BadResponseError):
        reassemble(events[:-1])
    with pytest.raises(errors.BadResponseError):
        codec.StreamAssembler().feed("message_start", "{not json")


def test_non_message_bodies_are_bad_responses():
    for body in ({"type": "error", "error": {}}, [], "text", None):
        with pytest.raises(errors.BadResponseError):
            codec.parse_response(body)


def test_tool_definitions_convert_both_ways():
    spec = ToolSpec(
        "lookup",
        "Find it",
        {"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": False},
        strict=True,
    )
    assert codec_server.tool_from_wire(codec.tool_to_wire(spec)) == spec
    assert codec_server.tool_from_wire({"name": "x", "input_schema": {"type": "object"}}) == ToolSpec(
        "x", "", {"type": "object"}
    )
    with pytest.raises(RequestInvalid):
        codec_server.tool_from_wire({"name": "x", "input_schema": {"type": "array"}})
