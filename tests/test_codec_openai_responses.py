"""The OpenAI Responses codec: recorded shapes, round trips, SDK validation, named events, bad input."""

from __future__ import annotations

import json
from dataclasses import replace

import httpx2
import openai
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.responses import Response, ResponseStreamEvent
from test_codec_openai_chat import (
    PARIS_ARGS,
    PARIS_CALLS,
    QUESTION,
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

from agentkit.core.errors import BadResponseError, RateLimitError, ServerError
from agentkit.core.types import Message, ModelOptions, ModelTurn, ToolCall, ToolResult, ToolSpec, Usage
from agentkit.providers import openai_responses as responses
from agentkit.providers.common import SSEvent, WireRequest
from agentkit.sim.wire import openai_responses as responses_server
from agentkit.sim.wire.common import ChatRequest, RequestInvalid

STREAM_EVENT = pydantic.TypeAdapter(ResponseStreamEvent)

# --- recorded shapes: _2_4 a request, _2_5 two parallel calls, _2_6 the results sent back -----------------------------

TOOLS_2_4 = [
    {"type": "function", "name": "get_weather", "description": "Current weather for a city",
     "parameters": WEATHER.parameters, "strict": True},
    {"type": "function", "name": "get_time", "description": "Current local time in a zone",
     "parameters": TIME.parameters, "strict": True}]

REQUEST_2_4 = {"model": "gpt-4.1", "input": [{"role": "user", "content": QUESTION}], "tools": TOOLS_2_4,
               "tool_choice": "auto", "parallel_tool_calls": True}

CALL_ITEMS = [
    {"type": "function_call", "id": "fc_0001", "call_id": "call_Wx1", "name": "get_weather",
     "arguments": "{\"city\": \"Paris\"}", "status": "completed"},
    {"type": "function_call", "id": "fc_0002", "call_id": "call_Tm2", "name": "get_time",
     "arguments": "{\"timezone\": \"Europe/Paris\"}", "status": "completed"}]

RESPONSE_2_5 = {
    "id": "resp_Sim0001", "object": "response", "created_at": 1767225600, "status": "completed",
    "model": "gpt-4.1-2025-04-14", "output": CALL_ITEMS,
    "parallel_tool_calls": True, "tool_choice": "auto", "tools": TOOLS_2_4,
    "error": None, "incomplete_details": None, "instructions": None, "previous_response_id": None,
    "temperature": 1.0, "top_p": 1.0, "truncation": "disabled", "store": True, "metadata": {},
    "text": {"format": {"type": "text"}}, "reasoning": {"effort": None, "summary": None},
    "usage": {"input_tokens": 90, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
              "output_tokens": 52, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 142}}

FOLLOW_UP_2_6 = [
    {"role": "user", "content": QUESTION},
    *CALL_ITEMS,
    {"type": "function_call_output", "call_id": "call_Wx1",
     "output": "{\"temp_c\": 18, \"sky\": \"cloudy\"}"},
    {"type": "function_call_output", "call_id": "call_Tm2", "output": "{\"time\": \"14:05\"}"}]


def _recorded_stream() -> list[tuple[str, str]]:
    """The stream of RESPONSE_2_5 as the API sends it: (event name, data) pairs."""
    start = {**RESPONSE_2_5, "status": "in_progress", "output": [], "usage": None}
    events: list[dict] = [{"type": "response.created", "response": start},
                          {"type": "response.in_progress", "response": start}]
    for index, item in enumerate(CALL_ITEMS):
        half = len(item["arguments"]) // 2
        events += [
            {"type": "response.output_item.added", "output_index": index,
             "item": {**item, "arguments": "", "status": "in_progress"}},
            {"type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": index,
             "delta": item["arguments"][:half]},
            {"type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": index,
             "delta": item["arguments"][half:]},
            {"type": "response.function_call_arguments.done", "item_id": item["id"], "output_index": index,
             "arguments": item["arguments"]},
            {"type": "response.output_item.done", "output_index": index, "item": item}]
    events.append({"type": "response.completed", "response": RESPONSE_2_5})
    return [(e["type"], json.dumps({**e, "sequence_number": n})) for n, e in enumerate(events)]


def test_recorded_response_decodes_both_calls_by_call_id():
    Response.model_validate(RESPONSE_2_5)
    turn = responses.parse_response(RESPONSE_2_5)
    assert [c.id for c in turn.tool_calls] == ["call_Wx1", "call_Tm2"]  # call_id links results, not fc_…
    assert turn.tool_calls[0].raw_arguments == "{\"city\": \"Paris\"}"
    assert turn.tool_calls[1].arguments == {"timezone": "Europe/Paris"}
    assert (turn.stop, turn.native_stop, turn.text) == ("tool_calls", "completed", None)
    assert turn.usage == Usage(90, 52)
    assert (turn.model, turn.id) == ("gpt-4.1-2025-04-14", "resp_Sim0001")


def test_recorded_stream_reassembles_into_the_same_turn():
    assembler = responses.StreamAssembler()
    for name, data in _recorded_stream():
        STREAM_EVENT.validate_json(data)
        assembler.feed(name, data)
    assert assembler.turn() == responses.parse_response(RESPONSE_2_5)


def test_build_request_writes_the_recorded_request_and_follow_up():
    options = ModelOptions(tool_choice="auto", parallel_tool_calls=True)
    wire = responses.build_request("gpt-4.1", [Message.user(QUESTION)], [WEATHER, TIME], options)
    assert wire == WireRequest("/responses", REQUEST_2_4, {}, stream=False)
    turn = responses.parse_response(RESPONSE_2_5)
    results = [ToolResult("call_Wx1", "get_weather", True, text="{\"temp_c\": 18, \"sky\": \"cloudy\"}"),
               ToolResult("call_Tm2", "get_time", True, text="{\"time\": \"14:05\"}")]
    messages = [Message.user(QUESTION), turn.as_message()] + [Message.tool(r) for r in results]
    items = responses.build_request("gpt-4.1", messages, [WEATHER, TIME]).body["input"]
    # The same items, less the output item ids and statuses, which a stateless replay leaves out.
    assert items == [{k: v for k, v in item.items() if k not in ("id", "status")} for item in FOLLOW_UP_2_6]


def test_parse_request_reads_the_recorded_follow_up():
    request = responses_server.parse_request({**REQUEST_2_4, "input": FOLLOW_UP_2_6})
    assert request.tools == (WEATHER, TIME) and request.options == ModelOptions("auto", True)
    _user, assistant, weather, time_ = request.messages
    assert [c.id for c in assistant.tool_calls] == ["call_Wx1", "call_Tm2"] and assistant.content is None
    assert (weather.tool_call_id, weather.name, time_.name) == ("call_Wx1", "get_weather", "get_time")


def test_system_prompt_goes_to_instructions_and_tools_always_state_strict():
    messages = [Message.system("be brief"), Message.user("hi"), Message.assistant("hello"),
                Message.system("now be verbose"), Message.user("again")]
    options = ModelOptions(max_tokens=64, stream=True)
    body = responses.build_request("m", messages, [ToolSpec("f")], options).body
    assert body["instructions"] == "be brief"
    assert body["input"][2] == {"role": "system", "content": "now be verbose"}
    assert body["tools"][0]["strict"] is False and body["max_output_tokens"] == 64 and body["stream"] is True
    assert "stream_options" not in body
    assert responses_server.parse_request(body).messages == tuple(messages)
    # Leave `strict` out and the API makes the tool strict; so does the simulator.
    assert responses_server.tool_from_wire({"type": "function", "name": "f"}).strict is True
    assert responses.tool_choice_to_wire({"name": "f"}) == {"type": "function", "name": "f"}


def test_auth_header_and_module_constants():
    assert responses.auth_headers("sk-1") == {"Authorization": "Bearer sk-1"}
    assert (responses.DEFAULT_BASE_URL, responses.PATH, responses.NAME) == (
        "https://api.openai.com/v1", "/responses", "openai-responses")
    assert responses.API_KEY_ENVS == ("OPENAI_API_KEY",) and responses.DEFAULT_MODEL


# --- round trips ----------------------------------------------------------------------------------------

@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), tool_lists, st.data())
def test_client_to_server_request_round_trip(messages, tools, data):
    options = data.draw(options_for(tools, min_tokens=16))
    wire = responses.build_request("gpt-4.1", messages, tools, options)
    request = responses_server.parse_request(wire_json(wire.body))
    assert request.messages == expected_messages(messages)
    assert request.tools == tuple(tools)
    assert request.options == (options if tools else replace(options, tool_choice="auto"))


NATIVE = {"tool_calls": "completed", "stop": "completed", "length": "max_output_tokens",
          "content_filter": "content_filter"}


@settings(max_examples=150)
@given(turns(), tool_lists, st.data())
def test_server_to_client_response_round_trip_validates_with_the_sdk(turn, tools, data):
    options = data.draw(options_for(tools, min_tokens=16))
    wire = responses.build_request("gpt-4.1", [Message.system("s"), Message.user("hi")], tools, options)
    request = responses_server.parse_request(wire_json(wire.body))
    body = responses_server.build_response(turn, request)
    Response.model_validate(body)  # all required fields, full usage incl. cache_write_tokens
    assert body["tools"] == [responses.tool_to_wire(t) for t in tools]  # echoed
    assert body["parallel_tool_calls"] is (options.parallel_tool_calls is not False)
    assert body["instructions"] == "s"
    expected = expected_turn(responses_server, turn, request, NATIVE[turn.stop])
    assert responses.parse_response(wire_json(body)) == expected


@settings(max_examples=150)
@given(turns())
def test_stream_reassembles_to_the_same_turn_as_the_plain_response(turn):
    request = responses_server.parse_request({"model": "gpt-4.1", "input": "hi", "stream": True})
    events = responses_server.build_stream(turn, request)
    assembler = responses.StreamAssembler()
    for number, event in enumerate(events):
        payload = STREAM_EVENT.validate_json(event.data)
        assert payload.sequence_number == number and event.event == payload.type  # named, numbered events
        assembler.feed(event.event, event.data)
    assert events[-1].event in ("response.completed", "response.incomplete")
    assert assembler.turn() == responses.parse_response(responses_server.build_response(turn, request))


def test_stream_sends_the_four_events_per_call_and_the_text_events():
    calls = (ToolCall.from_raw("call_a", "get_weather", "{\"city\": \"Paris\"}"),
             ToolCall.from_raw("call_b", "get_time", "{}"))
    turn = ModelTurn("Looking.", calls, "tool_calls", model="gpt-4.1")
    request = responses_server.parse_request({"model": "gpt-4.1", "input": "hi", "stream": True})
    names = [e.event for e in responses_server.build_stream(turn, request)]
    assert names[:2] == ["response.created", "response.in_progress"] and names[-1] == "response.completed"
    assert names[2:8] == ["response.output_item.added", "response.content_part.added",
                          "response.output_text.delta", "response.output_text.delta",
                          "response.output_text.delta", "response.output_text.done"]
    call_events = names[9:-1]
    assert call_events[0] == "response.output_item.done"  # closes the message item
    per_call = ["response.output_item.added", "response.function_call_arguments.delta",
                "response.function_call_arguments.delta", "response.function_call_arguments.delta",
                "response.function_call_arguments.done", "response.output_item.done"]
    assert call_events[1:7] == per_call  # the arguments arrive in pieces
    assert call_events[7:] == ["response.output_item.added", "response.function_call_arguments.delta",
                               "response.function_call_arguments.delta",
                               "response.function_call_arguments.done", "response.output_item.done"]


def test_incomplete_and_failed_answers():
    cut = ModelTurn("Once upon", (), "length", usage=Usage(5, 16), model="m")
    request = responses_server.parse_request({"model": "m", "input": "tell a story", "max_output_tokens": 16})
    body = responses_server.build_response(cut, request)
    assert body["status"] == "incomplete" and body["incomplete_details"] == {"reason": "max_output_tokens"}
    assert responses.parse_response(body).stop == "length"
    assert responses_server.build_stream(cut, request)[-1].event == "response.incomplete"
    with pytest.raises(ServerError, match="overloaded") as failed:
        responses.parse_response({**body, "status": "failed", "error": {"code": "server_error",
                                                                          "message": "overloaded"}})
    assert failed.value.error_type == "server_error" and failed.value.retryable


def test_error_events_raise_the_error_they_name_and_cut_streams_a_bad_response():
    good = _recorded_stream()
    assembler = responses.StreamAssembler()
    assembler.feed(*good[0])
    sent = [SSEvent(data, event=name) for name, data in good[:1]]
    with pytest.raises(RateLimitError, match="Rate limit") as err:
        event = responses_server.build_stream_error(429, "Rate limit reached", ChatRequest("gpt-4.1", ()), sent)
        assert json.loads(event.data)["sequence_number"] == 1  # numbering goes on from the events sent
        assembler.feed(event.event, event.data)
    assert err.value.error_type == "rate_limit_exceeded" and err.value.retryable
    failed = responses.StreamAssembler()
    with pytest.raises(ServerError, match="boom"):
        broken = {**RESPONSE_2_5, "status": "failed", "error": {"code": "server_error", "message": "boom"}}
        failed.feed("response.failed",
                    json.dumps({"type": "response.failed", "sequence_number": 0, "response": broken}))
    cut = responses.StreamAssembler()
    for name, data in good[:-1]:
        cut.feed(name, data)
    with pytest.raises(BadResponseError, match="response.completed"):
        cut.turn()


# --- the official SDK against the server side ---------------------------------------------------------------

PARALLEL = ModelTurn("Checking both.", PARIS_CALLS, "tool_calls", usage=Usage(90, 52),
                     model="gpt-4.1-2025-04-14")


def test_sdk_sends_what_the_server_side_reads_and_parses_what_it_answers():
    seen: list = []
    client = sdk_client(responses, lambda request: PARALLEL, seen)
    result = client.responses.create(model="gpt-4.1", input=FOLLOW_UP_2_6, tools=TOOLS_2_4,
                                     instructions="be brief", parallel_tool_calls=False)
    _body, request = seen[0]
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "tool", "tool"]
    assert request.options.parallel_tool_calls is False and request.tools == (WEATHER, TIME)
    calls = [item for item in result.output if item.type == "function_call"]
    assert [json.loads(c.arguments) for c in calls] == PARIS_ARGS
    assert result.output_text == "Checking both." and result.usage.total_tokens == 142
    assert result.parallel_tool_calls is False and result.instructions == "be brief"


def test_sdk_stream_helper_accumulates_our_events():
    client = sdk_client(responses, lambda request: PARALLEL)
    with client.responses.stream(model="gpt-4.1", input=QUESTION, tools=TOOLS_2_4) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[-1] == "response.completed"
    calls = [item for item in final.output if item.type == "function_call"]
    assert [c.parsed_arguments for c in calls] == PARIS_ARGS
    assert final.output_text == "Checking both."


def test_sdk_reads_our_error_event_as_its_error_event_model():
    def handler(http_request):
        request = responses_server.parse_request(json.loads(http_request.content))
        sent = responses_server.build_stream(PARALLEL, request)[:3]
        events = [*sent, responses_server.build_stream_error(500, "upstream died", request, sent)]
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               content="".join(e.encode() for e in events).encode())

    client = openai.OpenAI(api_key="sk-test", base_url="http://sim.test/v1", max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    # The SDK hands the `error` event to the caller (it only raises on a top-level `error` key);
    # our assembler turns it into the typed error its code names (server_error: a ServerError).
    last = list(client.responses.create(model="m", input="x", stream=True))[-1]
    assert (last.type, last.message, last.code, last.sequence_number) == ("error", "upstream died",
                                                                          "server_error", 3)


# --- malformed requests ----------------------------------------------------------------------------------

def _invalid(body) -> RequestInvalid:
    with pytest.raises(RequestInvalid) as exc:
        responses_server.parse_request(body)
    return exc.value


def test_the_api_400s():
    assert _invalid({"input": "x"}).message == "Missing required parameter: 'model'."
    assert _invalid({"model": "m"}).message == "Missing required parameter: 'input'."
    assert _invalid({"model": "m", "input": 7}).code == "invalid_type"
    chat_tool = {"type": "function", "function": {"name": "f"}}
    nested = _invalid({"model": "m", "input": "x", "tools": [chat_tool]})
    assert (nested.message, nested.param) == ("Missing required parameter: 'tools[0].name'.", "tools[0].name")
    chat_choice = _invalid({"model": "m", "input": "x", "tools": TOOLS_2_4,
                            "tool_choice": {"type": "function", "function": {"name": "get_time"}}})
    assert chat_choice.param == "tool_choice.name"
    orphan = _invalid({"model": "m", "input": [{"role": "user", "content": "x"}, FOLLOW_UP_2_6[-1]]})
    assert (orphan.message, orphan.param) == (
        "No tool call found for function call output with call_id call_Tm2.", "input")
    unanswered = _invalid({"model": "m", "input": FOLLOW_UP_2_6[:3]})
    assert unanswered.message == "No tool output found for function call call_Wx1."
    role = _invalid({"model": "m", "input": [{"role": "tool", "content": "x"}]})
    assert role.message == ("Invalid value: 'tool'. Supported values are: 'user', 'assistant', 'system', and "
                            "'developer'.")
    assert role.param == "input[0].role"
    assert _invalid({"model": "m", "input": [{"type": "bogus"}]}).param == "input[0].type"
    assert _invalid({"model": "m", "input": "x", "max_output_tokens": 8}).code == "integer_below_min_value"
    no_text = _invalid({"model": "m", "input": [{"role": "user", "content": [{"type": "input_text"}]}]})
    assert no_text.param == "input[0].content[0].text"


def test_accepted_shapes_from_the_sdk_and_server_state():
    request = responses_server.parse_request({
        "model": "m", "instructions": "sys", "store": False,
        "input": [{"type": "message", "role": "developer",
                   "content": [{"type": "input_text", "text": "dev"}]},
                  {"role": "user", "content": [{"type": "input_text", "text": "look "},
                                               {"type": "input_image", "image_url": "data:,"}]},
                  {"type": "reasoning", "id": "rs_1", "summary": []},
                  {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
                   "content": [{"type": "output_text", "text": "ok", "annotations": []}]},
                  *CALL_ITEMS,
                  {"type": "function_call_output", "call_id": "call_Wx1",
                   "output": [{"type": "input_text", "text": "sunny"}]},
                  FOLLOW_UP_2_6[-1],
                  {"id": "msg_old"}],  # an item_reference without its type
        "tools": [{"type": "web_search"}, *TOOLS_2_4, {"type": "custom", "name": "grammar"}],
        "tool_choice": {"type": "allowed_tools", "mode": "required",
                        "tools": [{"type": "function", "name": "f"}]}})
    assert [m.role for m in request.messages] == ["system", "system", "user", "assistant", "tool", "tool"]
    assert request.messages[2].content == "look " and request.messages[3].content == "ok"
    assert len(request.messages[3].tool_calls) == 2 and request.messages[4].content == "sunny"
    assert request.tools == (WEATHER, TIME) and request.options.tool_choice == {"allowed": ["f"], "mode": "required"}
    body = responses_server.build_response(ModelTurn("done", model="m"), request)
    Response.model_validate(body)
    assert body["tool_choice"]["type"] == "allowed_tools" and body["store"] is False
    # With server-side state the call may live in an earlier response.
    stateful = responses_server.parse_request({"model": "m", "previous_response_id": "resp_1",
                                        "input": [FOLLOW_UP_2_6[-1]]})
    assert stateful.messages[0].tool_call_id == "call_Tm2" and stateful.messages[0].name is None
    assert stateful.extras["previous_response_id"] == "resp_1"


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(any_json, mutated_bodies(responses, min_tokens=16)))
def test_fuzzed_request_bodies_only_ever_raise_request_invalid(body):
    assert_only_request_invalid(responses, body, Response.model_validate)


@settings(max_examples=100)
@given(conversations().filter(lambda ms: any(m.role == "tool" for m in ms)), st.data())
def test_dropping_any_output_is_refused_naming_its_call(messages, data):
    drop = data.draw(st.sampled_from([i for i, m in enumerate(messages) if m.role == "tool"]))
    body = wire_json(responses.build_request("m", messages[:drop] + messages[drop + 1:]).body)
    assert _invalid(body).message == f"No tool output found for function call {messages[drop].tool_call_id}."


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(any_json, mutated_answers(responses)))
def test_fuzzed_response_bodies_decode_or_raise_bad_response(body):
    assert_only_bad_response(responses, body=body)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated_streams(responses))
def test_fuzzed_streams_assemble_or_raise_bad_response(events):
    assert_only_bad_response(responses, events=events)


# --- error bodies -----------------------------------------------------------------------------------------

def test_error_bodies_map_like_chat():
    limited = responses.parse_error(429, responses_server.build_error(429, "slow down"), {"retry-after": "2"})
    assert isinstance(limited, RateLimitError)
    assert (limited.retry_after, limited.error_type) == (2.0, "requests")
    assert isinstance(responses.parse_error(502, b"Bad Gateway", {}), ServerError)
    assert responses_server.build_error(400, "bad", param="input", code=None) == {
        "error": {"message": "bad", "type": "invalid_request_error", "param": "input", "code": None}}
