"""The Gemini generateContent codec: recorded shapes, optional call ids, both sides, streams, errors."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import codec_strategies
import httpx
import pytest
from codec_strategies import arguments, json_values, names, texts, tool_specs
from google import genai
from google.genai import errors as sdk_errors
from google.genai import types as gt
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentkit.core import errors
from agentkit.core.types import Message, ModelOptions, ModelTurn, ToolCall, ToolResult, ToolSpec, Usage
from agentkit.providers import gemini as codec
from agentkit.sim.wire import gemini as codec_server
from agentkit.sim.wire.common import ChatRequest, RequestInvalid

# --- recorded shapes: _4_5 a response with two parallel calls ---------------------------------------------------------

RESPONSE_4_5 = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"functionCall": {"id": "fc_w1", "name": "get_weather", "args": {"city": "Paris"}}},
                    {
                        "functionCall": {
                            "id": "fc_t2",
                            "name": "get_time",
                            "args": {"timezone": "Europe/Paris"},
                        }
                    },
                ],
            },
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "usageMetadata": {
        "promptTokenCount": 71,
        "candidatesTokenCount": 30,
        "totalTokenCount": 101,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 71}],
    },
    "modelVersion": "gemini-2.5-flash",
    "responseId": "Sim0001respId",
}


def without_ids(body: dict) -> dict:
    body = copy.deepcopy(body)
    for part in body["candidates"][0]["content"]["parts"]:
        part["functionCall"].pop("id", None)
    return body


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
    turn = codec.parse_response(RESPONSE_4_5)
    assert turn.text is None
    assert [(c.id, c.name) for c in turn.tool_calls] == [("fc_w1", "get_weather"), ("fc_t2", "get_time")]
    assert turn.tool_calls[1].raw_arguments == {"timezone": "Europe/Paris"} == turn.tool_calls[1].arguments
    assert (turn.stop, turn.native_stop) == ("tool_calls", "STOP")  # Gemini says STOP; the calls tell
    assert turn.usage == Usage(71, 30)
    assert (turn.model, turn.id, turn.raw) == ("gemini-2.5-flash", "Sim0001respId", RESPONSE_4_5)


def test_calls_without_ids_get_stable_synthetic_ids_and_their_results_go_back_by_position():
    body = without_ids(RESPONSE_4_5)
    turn = codec.parse_response(body)
    ids = [c.id for c in turn.tool_calls]
    assert all(codec.is_synthetic_id(i) for i in ids) and ids[0].endswith("_0") and ids[1].endswith("_1")
    assert ids == [c.id for c in codec.parse_response(copy.deepcopy(body)).tool_calls]  # deterministic
    other = copy.deepcopy(body)
    other["responseId"] = "another"
    assert {c.id for c in codec.parse_response(other).tool_calls}.isdisjoint(ids)

    weather, time = turn.tool_calls
    messages = [
        Message.user("What's the weather and local time in Paris?"),
        turn.as_message(),
        Message.tool(ToolResult.success(weather, {"temp_c": 18})),
        Message.tool(ToolResult.failure(time, "tool_error", "upstream timeout")),
    ]
    contents = codec.build_request("gemini-2.5-flash", messages, [WEATHER, TIME]).body["contents"]
    assert contents[1] == {
        "role": "model",
        "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
            {"functionCall": {"name": "get_time", "args": {"timezone": "Europe/Paris"}}},
        ],
    }
    results = contents[2]["parts"]
    assert [list(p["functionResponse"]) for p in results] == [["name", "response"]] * 2  # no ids
    assert [p["functionResponse"]["name"] for p in results] == ["get_weather", "get_time"]
    assert results[0]["functionResponse"]["response"] == {
        "output": ToolResult.success(weather, {"temp_c": 18}).envelope()
    }
    assert results[1]["functionResponse"]["response"]["error"]["error"]["message"] == "upstream timeout"


def test_real_ids_are_echoed_and_gemini_3_calls_carry_the_signature_placeholder():
    turn = codec.parse_response(RESPONSE_4_5)
    messages = [
        Message.user("hi"),
        turn.as_message(),
        *[Message.tool(ToolResult.success(c, "ok")) for c in turn.tool_calls],
    ]
    contents = codec.build_request("gemini-3-flash-preview", messages, [WEATHER, TIME]).body["contents"]
    assert contents[1]["parts"][0] == {
        "functionCall": {"id": "fc_w1", "name": "get_weather", "args": {"city": "Paris"}},
        "thoughtSignature": codec.THOUGHT_SIGNATURE_PLACEHOLDER,
    }
    assert [p["functionResponse"]["id"] for p in contents[2]["parts"]] == ["fc_w1", "fc_t2"]
    older = codec.build_request("gemini-2.5-flash", messages, [WEATHER, TIME]).body["contents"]
    assert "thoughtSignature" not in older[1]["parts"][0]


def test_request_matches_the_reference_shapes():
    options = ModelOptions(
        tool_choice={"name": "get_weather"}, parallel_tool_calls=False, max_tokens=64, temperature=0.3
    )
    wire = codec.build_request(
        "gemini-2.5-flash",
        [Message.system("Be brief."), Message.user("Paris?")],
        [WEATHER, TIME],
        options,
        safetySettings=[],
    )
    assert wire.path == "/models/gemini-2.5-flash:generateContent" and not wire.stream
    assert wire.body == {
        "contents": [{"role": "user", "parts": [{"text": "Paris?"}]}],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "Current weather for a city",
                        "parametersJsonSchema": WEATHER.parameters,
                    },
                    {
                        "name": "get_time",
                        "description": "Current local time in a zone",
                        "parametersJsonSchema": TIME.parameters,
                    },
                ]
            }
        ],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}},
        "generationConfig": {"maxOutputTokens": 64, "temperature": 0.3},
        "safetySettings": [],
    }  # no parallel switch anywhere: Gemini has none
    streamed = codec.build_request(
        "models/gemini-2.5-flash", [Message.user("x")], (), ModelOptions(stream=True)
    )
    assert streamed.path == "/models/gemini-2.5-flash:streamGenerateContent?alt=sse" and streamed.stream
    assert codec.auth_headers("k") == {"x-goog-api-key": "k"}


@pytest.mark.parametrize(
    "choice, config",
    [
        ("auto", {"mode": "AUTO"}),
        ("required", {"mode": "ANY"}),
        ("none", {"mode": "NONE"}),
        ({"name": "f"}, {"mode": "ANY", "allowedFunctionNames": ["f"]}),
    ],
)
def test_tool_choice_maps_to_function_calling_modes(choice, config):
    assert codec.tool_choice_to_wire(choice) == {"functionCallingConfig": config}


# --- hypothesis strategies ---------------------------------------------------------------------------



@st.composite
def conversations(draw) -> list[Message]:
    """Valid conversations; each assistant turn's calls either all have real ids or all synthetic ones."""
    counter = iter(range(10**6))
    messages = [Message.system(draw(texts))] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(1, 3))):
        messages.append(Message.user(draw(texts)))
        for _ in range(draw(st.integers(0, 2))):
            synthetic = draw(st.booleans())
            calls = [
                ToolCall.from_raw(
                    f"{codec.SYNTHETIC_ID_PREFIX}x_{n}" if synthetic else f"fc_{n}",
                    draw(names),
                    draw(arguments),
                )
                for n in (next(counter) for _ in range(draw(st.integers(1, 3))))
            ]
            messages.append(Message.assistant(draw(st.none() | texts), calls))
            for call in calls:
                if draw(st.booleans()):
                    result = ToolResult.success(call, draw(json_values))
                elif draw(st.booleans()):
                    result = ToolResult.failure(call, "tool_error", draw(st.text(max_size=10)))
                else:
                    result = ToolResult.success(call, None)
                    result = replace(result, text="plain words: " + draw(st.text(max_size=10)))
                messages.append(Message.tool(result))
            if draw(st.booleans()):
                messages.append(Message.user(draw(texts)))
        if draw(st.booleans()):
            messages.append(Message.assistant(draw(texts)))
    return messages


def normalise_ids(messages) -> list[Message]:
    """Synthetic ids differ between client and server; compare them by order of appearance instead."""
    seen: dict[str, str] = {}

    def fix(call_id):
        if call_id is None or not codec.is_synthetic_id(call_id):
            return call_id
        return seen.setdefault(call_id, f"synthetic-{len(seen)}")

    out = []
    for m in messages:
        calls = tuple(replace(c, id=fix(c.id)) for c in m.tool_calls)
        out.append(replace(m, tool_calls=calls, tool_call_id=fix(m.tool_call_id)))
    return out


choices = st.sampled_from(["auto", "none", "required"]) | st.builds(lambda n: {"name": n}, names)
options_strategy = st.builds(
    ModelOptions,
    choices,
    st.none() | st.booleans(),
    st.booleans(),
    st.none() | st.integers(1, 4096),
    st.none() | st.floats(0, 2, allow_nan=False),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    conversations(),
    st.lists(tool_specs, min_size=1, max_size=3, unique_by=lambda t: t.name),
    options_strategy,
)
def test_client_request_round_trips_through_the_server_decoder(messages, tools, options):
    wire = codec.build_request("gemini-2.5-flash", messages, tools, options)
    decoded = codec_server.parse_request(json.loads(json.dumps(wire.body)), model="gemini-2.5-flash")
    system = [m.content for m in messages if m.role == "system"]
    want = ([Message.system("\n\n".join(system))] if system else []) + [
        m for m in messages if m.role != "system"
    ]
    assert normalise_ids(decoded.messages) == normalise_ids(want)
    assert list(decoded.tools) == [replace(t, strict=False) for t in tools]  # Gemini has no strict flag
    # The stream flag lives in the URL and the parallel switch does not exist: neither survives the body.
    assert decoded.options == ModelOptions(
        options.tool_choice, None, False, options.max_tokens, options.temperature
    )


@st.composite
def turns(draw, with_ids: bool) -> ModelTurn:
    hexes = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=8, max_size=8)
    calls = tuple(
        ToolCall.from_raw(draw(hexes) if with_ids else f"call_{i}", draw(names), draw(arguments))
        for i in range(draw(st.integers(0, 3)))
    )
    stop = draw(st.sampled_from(["tool_calls", "length"] if calls else ["stop", "length", "content_filter"]))
    return ModelTurn(
        draw(st.none() | texts),
        calls,
        stop,
        codec_server.NEUTRAL_TO_FINISH[stop],
        Usage(draw(st.integers(0, 10**5)), draw(st.integers(0, 10**5))),
        "gemini-test-model",
        draw(st.text("abcdefABCDEF0123456789", min_size=6, max_size=12)),
    )


def reassemble(events) -> ModelTurn:
    assembler = codec.StreamAssembler()
    for event in events:
        assert event.event is None  # Gemini streams are `data:` lines only
        assembler.feed(event.event, event.data)
    return assembler.turn()


@pytest.fixture(scope="module")
def streaming_sdk():
    """One SDK client for every example, and the stream its transport answers (`answer["body"]`): building
    a genai.Client takes about 0.15 s, so one per example spent 15 s of the test on construction."""
    answer = {"body": b""}
    client = sdk_client(lambda r: httpx.Response(200, content=answer["body"],
                                                 headers={"content-type": "text/event-stream"}))
    return client, answer


@settings(max_examples=100, deadline=None)
@given(turn=turns(with_ids=True))
def test_gemini_3_responses_carry_ids_round_trip_validate_and_stream_to_the_same_turn(streaming_sdk, turn):
    request = ChatRequest("gemini-3.1-pro-preview", (Message.user("hi"),))
    body = codec_server.build_response(turn, request)
    gt.GenerateContentResponse.model_validate(body)  # pydantic, extra="forbid": unknown fields would fail
    assert codec.parse_response(json.loads(json.dumps(body))) == turn
    events = codec_server.build_stream(turn, request)
    for event in events:
        gt.GenerateContentResponse.model_validate(json.loads(event.data))
    assert "finishReason" in json.loads(events[-1].data)["candidates"][0]
    assert reassemble(events) == codec.parse_response(body)
    # The SDK's SSE reader yields one response per chunk, with every call whole and its id intact.
    client, answer = streaming_sdk
    answer["body"] = "".join(e.encode() for e in events).encode()
    chunks = list(client.models.generate_content_stream(model="gemini-3.1-pro-preview", contents="hi"))
    assert len(chunks) == len(events)
    assert [(c.id, c.name, c.args) for chunk in chunks for c in chunk.function_calls or []] == [
        (c.id, c.name, c.raw_arguments) for c in turn.tool_calls
    ]


@settings(max_examples=100, deadline=None)
@given(turns(with_ids=False))
def test_older_models_answer_without_ids_and_streams_synthesise_the_same_ids(turn):
    request = ChatRequest("gemini-2.5-flash", (Message.user("hi"),))
    body = codec_server.build_response(turn, request)
    gt.GenerateContentResponse.model_validate(body)
    assert all(
        "id" not in p["functionCall"]
        for p in body["candidates"][0]["content"]["parts"]
        if "functionCall" in p
    )
    parsed = codec.parse_response(body)
    assert all(codec.is_synthetic_id(c.id) for c in parsed.tool_calls)
    assert replace(parsed, tool_calls=()) == replace(turn, tool_calls=())
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [
        (c.name, c.arguments) for c in turn.tool_calls
    ]
    assert reassemble(codec_server.build_stream(turn, request)) == parsed  # same synthetic ids, too


def test_call_ids_follow_the_model_name_unless_the_request_says_otherwise():
    turn = ModelTurn(None, (ToolCall.from_raw("call_1", "f", {}),), "tool_calls", id="r1")

    def first_call(model, **extras):
        body = codec_server.build_response(turn, ChatRequest(model, (), extras=extras))
        return body["candidates"][0]["content"]["parts"][0]["functionCall"]

    assert "id" in first_call("gemini-3-flash-preview") and "id" not in first_call("gemini-2.5-flash")
    assert "id" in first_call("gemini-2.5-flash", **{codec_server.CALL_IDS_OPTION: True})
    assert "id" not in first_call("gemini-3-pro", **{codec_server.CALL_IDS_OPTION: False})
    assert first_call("gemini-3-pro") == first_call("gemini-3-pro")  # deterministic


# --- the real SDK against these bodies, over an in-process transport ----------------------------------


def sdk_client(handler):
    http = httpx.Client(transport=httpx.MockTransport(handler))
    return genai.Client(
        api_key="k", http_options=gt.HttpOptions(base_url="http://sim.test", httpx_client=http)
    )


CONFIG = gt.GenerateContentConfig(
    system_instruction="Be brief.",
    tools=[
        gt.Tool(
            function_declarations=[
                gt.FunctionDeclaration(
                    name="get_weather",
                    description="Current weather for a city",
                    parameters_json_schema=WEATHER.parameters,
                ),
                gt.FunctionDeclaration(
                    name="get_time",
                    description="d",
                    parameters=gt.Schema(type="OBJECT", properties={"timezone": gt.Schema(type="STRING")}),
                ),
            ]
        )
    ],
    tool_config=gt.ToolConfig(function_calling_config=gt.FunctionCallingConfig(mode="ANY")),
    automatic_function_calling=gt.AutomaticFunctionCallingConfig(disable=True),
)


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-flash-preview"])
def test_the_sdk_reads_responses_and_streams_and_its_requests_decode(model):
    turn = ModelTurn(
        "Looking.",
        tuple(
            ToolCall.from_raw(f"c{i}", n, a)
            for i, (n, a) in enumerate(
                [("get_weather", {"city": "Paris"}), ("get_time", {"timezone": "Europe/Paris"})]
            )
        ),
        "tool_calls",
        usage=Usage(71, 30),
        id="Sim0002respId",
    )
    sent = []

    def handler(request):
        body = json.loads(request.content)
        sent.append(body)
        chat = codec_server.parse_request(body, model=request.url.path.split("/models/")[1].split(":")[0])
        if "streamGenerateContent" in request.url.path:
            data = "".join(e.encode() for e in codec_server.build_stream(turn, chat)).encode()
            return httpx.Response(200, content=data, headers={"content-type": "text/event-stream"})
        return httpx.Response(200, json=codec_server.build_response(turn, chat))

    client = sdk_client(handler)
    response = client.models.generate_content(
        model=model, contents="Weather and time in Paris?", config=CONFIG
    )
    chunks = list(
        client.models.generate_content_stream(model=model, contents="Weather and time?", config=CONFIG)
    )
    calls = [(c.name, c.args) for c in response.function_calls]
    assert calls == [("get_weather", {"city": "Paris"}), ("get_time", {"timezone": "Europe/Paris"})]
    assert [(c.name, c.args) for chunk in chunks for c in chunk.function_calls or []] == calls
    assert (response.function_calls[0].id is not None) == model.startswith("gemini-3")
    decoded = codec_server.parse_request(sent[0], model=model)
    assert decoded.messages == (Message.system("Be brief."), Message.user("Weather and time in Paris?"))
    assert decoded.options.tool_choice == "required"
    # The SDK sent `parameters_json_schema` (snake_case) and an OpenAPI `parameters` schema: both decode.
    assert decoded.tools[0].parameters == WEATHER.parameters
    assert decoded.tools[1].parameters == {"type": "object", "properties": {"timezone": {"type": "string"}}}


@pytest.mark.parametrize(
    "status, sdk_error",
    [(400, sdk_errors.ClientError), (429, sdk_errors.ClientError), (503, sdk_errors.ServerError)],
)
def test_the_sdk_reads_build_error_bodies(status, sdk_error):
    client = sdk_client(lambda request: httpx.Response(status, json=codec_server.build_error(status, "nope")))
    with pytest.raises(sdk_error) as caught:
        client.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert (caught.value.code, caught.value.status, caught.value.message) == (
        status,
        codec_server.STATUS_NAMES[status],
        "nope",
    )


# --- server-side decoding and validation --------------------------------------------------------------

CALL_TURN = {
    "role": "model",
    "parts": [
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
        {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
    ],
}


def answer(*outputs, **keys):
    return {
        "role": "user",
        "parts": [{"functionResponse": {"name": "get_weather", "response": o, **keys}} for o in outputs],
    }


def test_results_without_ids_pair_with_calls_by_position_even_for_the_same_function():
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "Paris and Rome?"}]},
            CALL_TURN,
            answer({"output": "sunny"}, {"error": {"kind": "timeout"}}),
        ]
    }
    chat = codec_server.parse_request(body, model="gemini-2.5-flash")
    _, call_message, paris, rome = chat.messages
    assert [c.arguments for c in call_message.tool_calls] == [{"city": "Paris"}, {"city": "Rome"}]
    assert (
        paris.tool_call_id == call_message.tool_calls[0].id
        and paris.content == "sunny"
        and not paris.is_error
    )
    assert rome.tool_call_id == call_message.tool_calls[1].id and rome.is_error
    assert json.loads(rome.content) == {"kind": "timeout"}


def test_snake_case_requests_and_openapi_schemas_decode():
    body = {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "system_instruction": {"parts": [{"text": "Be brief."}]},
        "tools": [
            {
                "function_declarations": [
                    {
                        "name": "lookup",
                        "parameters": {
                            "type": "OBJECT",
                            "properties": {
                                "q": {"type": "STRING", "nullable": True},
                                "n": {"type": "ARRAY", "items": {"type": "INTEGER"}, "max_items": 3},
                            },
                            "required": ["q"],
                            "property_ordering": ["q", "n"],
                        },
                    }
                ]
            },
            {"google_search": {}},
        ],
        "tool_config": {"function_calling_config": {"mode": "ANY", "allowed_function_names": ["a", "b"]}},
        "generation_config": {"max_output_tokens": 10, "temperature": 0.1, "top_k": 3},
    }
    chat = codec_server.parse_request(body, model="models/gemini-2.5-flash")
    assert chat.model == "gemini-2.5-flash"
    assert chat.messages[0] == Message.system("Be brief.")
    assert chat.tools[0].parameters == {
        "type": "object",
        "properties": {
            "q": {"type": ["string", "null"]},
            "n": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
        },
        "required": ["q"],
    }
    assert (chat.options.tool_choice, chat.options.max_tokens, chat.options.temperature) == (
        "required",
        10,
        0.1,
    )
    assert chat.extras == {
        "server_tools": [{"google_search": {}}],
        "allowed_function_names": ["a", "b"],
        "generationConfig": {"top_k": 3},
    }


USER = {"role": "user", "parts": [{"text": "hi"}]}


@pytest.mark.parametrize(
    "contents, wording",
    [
        (
            [USER, CALL_TURN, answer({"output": 1})],
            (
                "Please ensure that the number of function response parts is equal to the number of "
                "function call parts "
                "of the function call turn."
            ),
        ),
        (
            [USER, answer({"output": 1})],
            ("Please ensure that function response turn comes immediately after a function call turn."),
        ),
        (
            [CALL_TURN],
            (
                "Please ensure that function call turn comes immediately after a user turn or after a "
                "function "
                "response turn."
            ),
        ),
        (
            [USER, {"role": "model", "parts": [{"text": "hm"}]}, CALL_TURN],
            "Please ensure that function call turn",
        ),
        (
            [
                USER,
                {"role": "model", "parts": [{"functionCall": {"id": "a1", "name": "f"}}]},
                {"role": "user", "parts": [{"functionResponse": {"id": "zz", "name": "f", "response": {}}}]},
            ],
            "functionResponse.id does not match functionCall.id",
        ),
        ([{"role": "assistant", "parts": [{"text": "x"}]}], "Please use a valid role: user, model."),
        (
            [{"role": "user", "parts": []}],
            "* GenerateContentRequest.contents[0].parts: contents.parts must not be empty.",
        ),
        (
            [{"role": "user", "parts": [{"foo": 1}]}],
            "* GenerateContentRequest.contents[0].parts[0].data: required oneof",
        ),
        ([], "* GenerateContentRequest.contents: contents is not specified"),
    ],
)
def test_turn_order_violations_are_rejected_with_the_api_wording(contents, wording):
    with pytest.raises(RequestInvalid) as caught:
        codec_server.parse_request({"contents": contents}, model="gemini-2.5-flash")
    assert caught.value.message.startswith(wording) and caught.value.status == 400


def test_invalid_tool_definitions_and_modes_are_rejected():
    def parse(**body):
        return codec_server.parse_request({"contents": [USER], **body}, model="gemini-2.5-flash")

    with pytest.raises(RequestInvalid, match="Invalid function name"):
        parse(tools=[{"functionDeclarations": [{"name": "9lives"}]}])
    with pytest.raises(RequestInvalid, match="mutually exclusive"):
        parse(tools=[{"functionDeclarations": [{"name": "f", "parameters": {}, "parametersJsonSchema": {}}]}])
    with pytest.raises(RequestInvalid, match="FunctionCallingConfig.Mode"):
        parse(toolConfig={"functionCallingConfig": {"mode": "SOMETIMES"}})
    assert parse(tools=[{"functionDeclarations": [{"name": "f"}]}]).tools[0].parameters == {
        "type": "object",
        "properties": {},
    }


VALID = {
    "contents": [
        USER,
        CALL_TURN,
        answer({"output": "a"}, {"error": "b"}),
        {"role": "model", "parts": [{"text": "ok"}]},
    ],
    "systemInstruction": {"parts": [{"text": "s"}]},
    "tools": [
        {
            "functionDeclarations": [
                {"name": "get_weather", "parametersJsonSchema": WEATHER.parameters},
                {"name": "g", "parameters": {"type": "OBJECT"}},
            ]
        }
    ],
    "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}},
    "generationConfig": {"maxOutputTokens": 5, "temperature": 0.5},
}
KEYS = [
    "contents",
    "role",
    "parts",
    "text",
    "functionCall",
    "function_call",
    "functionResponse",
    "name",
    "args",
    "id",
    "response",
    "output",
    "error",
    "user",
    "model",
    "tools",
    "functionDeclarations",
    "parameters",
    "parametersJsonSchema",
    "type",
    "OBJECT",
    "properties",
    "toolConfig",
    "functionCallingConfig",
    "mode",
    "ANY",
    "allowedFunctionNames",
    "systemInstruction",
    "generationConfig",
    "maxOutputTokens",
    "nullable",
]
any_json = codec_strategies.any_json(KEYS)
mutated_bodies = codec_strategies.mutated_bodies(VALID, any_json)


def test_the_fuzz_seed_body_is_valid():
    chat = codec_server.parse_request(VALID, model="gemini-2.5-flash")
    assert [m.role for m in chat.messages] == ["system", "user", "assistant", "tool", "tool", "assistant"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(any_json, mutated_bodies))
def test_malformed_request_bodies_only_ever_raise_request_invalid(body):
    try:
        chat = codec_server.parse_request(body, model="gemini-2.5-flash")
    except RequestInvalid as e:
        assert e.message and e.status == 400
    else:
        assert isinstance(chat, ChatRequest)


# --- errors -------------------------------------------------------------------------------------------


def test_quota_errors_carry_the_retry_delay_from_the_body():
    body = {
        "error": {
            "code": 429,
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "46s"},
            ],
        }
    }
    error = codec.parse_error(429, json.dumps(body), {})
    assert isinstance(error, errors.RateLimitError) and error.retryable
    assert (error.retry_after, error.error_type, error.provider) == (46.0, "RESOURCE_EXHAUSTED", "gemini")
    assert codec.parse_error(429, codec_server.build_error(429, "slow down", retry_after=0.5), {}).retry_after == 0.5
    assert codec.parse_error(429, b"{}", {"Retry-After": "9"}).retry_after == 9.0


@pytest.mark.parametrize(
    "status, cls",
    [
        (400, errors.BadRequestError),
        (403, errors.AuthenticationError),
        (404, errors.BadRequestError),
        (429, errors.RateLimitError),
        (500, errors.ServerError),
        (503, errors.ServerError),
        (504, errors.ServerError),
    ],
)
def test_error_bodies_become_typed_provider_errors(status, cls):
    body = codec_server.build_error(status, "it failed")
    assert body["error"]["code"] == status and body["error"]["status"] == codec_server.STATUS_NAMES[status]
    error = codec.parse_error(status, body, None)
    assert type(error) is cls and (error.message, error.error_type) == (
        "it failed",
        codec_server.STATUS_NAMES[status],
    )


def test_error_details_and_tolerated_bodies():
    bad_key = codec_server.build_error(
        400, "API key not valid. Please pass a valid API key.", reason="API_KEY_INVALID"
    )
    assert bad_key["error"]["details"][0]["reason"] == "API_KEY_INVALID"
    field = codec_server.build_error(400, "bad", param="contents[0].parts")
    assert field["error"]["details"][0]["fieldViolations"] == [
        {"field": "contents[0].parts", "description": "bad"}
    ]
    wrapped = codec.parse_error(503, json.dumps([codec_server.build_error(503, "The model is overloaded.")]), {})
    assert isinstance(wrapped, errors.ServerError) and wrapped.message == "The model is overloaded."
    html = codec.parse_error(502, b"<html>Bad gateway</html>", {})
    assert isinstance(html, errors.ServerError) and "Bad gateway" in html.message


def test_stream_errors_and_cut_streams():
    turn = codec.parse_response(RESPONSE_4_5)
    events = codec_server.build_stream(turn, ChatRequest("gemini-2.5-flash", ()))
    with pytest.raises(errors.BadResponseError, match="finishReason"):
        reassemble(events[:-1])
    assembler = codec.StreamAssembler()
    with pytest.raises(errors.ServerError):
        assembler.feed(None, json.dumps(codec_server.build_error(503, "overloaded")))
    with pytest.raises(errors.BadResponseError):
        assembler.feed(None, "{cut")


def test_blocked_prompts_and_bad_bodies():
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 5}}
    turn = codec.parse_response(blocked)
    assert (turn.text, turn.tool_calls, turn.stop, turn.native_stop) == (None, (), "content_filter", "SAFETY")
    assembler = codec.StreamAssembler()
    assembler.feed(None, json.dumps(blocked))
    assert assembler.turn() == turn
    for body in ({}, {"error": {"code": 500}}, "text", None):
        with pytest.raises(errors.BadResponseError):
            codec.parse_response(body)


def test_tool_definitions_convert_both_ways():
    spec = ToolSpec("lookup.v2", "Find it", {"type": "object", "properties": {"q": {"type": "string"}}})
    assert codec_server.tool_from_wire(codec.tool_to_wire(spec)) == spec
    assert codec.tool_to_wire(replace(spec, strict=True)) == codec.tool_to_wire(spec)  # no strict flag


def test_results_without_ids_pair_with_their_calls_by_name_not_by_position():
    """The docs link a functionResponse to its call by `name` (and `id` when the call had one), not by order."""
    calls = {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                                        {"functionCall": {"name": "get_time", "args": {"city": "Tokyo"}}}]}
    swapped = {"role": "user", "parts": [{"functionResponse": {"name": "get_time", "response": {"output": "9:00"}}},
                                         {"functionResponse": {"name": "get_weather", "response": {"output": "sun"}}}]}
    body = {"contents": [{"role": "user", "parts": [{"text": "?"}]}, calls, swapped]}
    request = codec_server.parse_request(body, model="gemini-2.5-flash")
    asked = {c.id: c.name for m in request.messages for c in m.tool_calls}
    answered = {asked[m.tool_call_id]: m.content for m in request.messages if m.role == "tool"}
    assert answered == {"get_time": "9:00", "get_weather": "sun"}
    stranger = {"role": "user", "parts": [{"functionResponse": {"name": "get_news", "response": {}}},
                                          {"functionResponse": {"name": "get_weather", "response": {}}}]}
    with pytest.raises(RequestInvalid, match="matches no functionCall"):
        codec_server.parse_request({"contents": [body["contents"][0], calls, stranger]}, model="gemini-2.5-flash")
