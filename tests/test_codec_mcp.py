"""MCP conversions: tool definitions, CallToolResult both ways, JSON-RPC messages (checked with the SDK)."""

from __future__ import annotations

import json
from dataclasses import replace

import mcp.types as mcp_types
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_codec_openai_chat import WEATHER, json_values, raw_arguments, texts, tool_lists

from agentkit.core.types import ToolCall, ToolResult, ToolSpec
from agentkit import tool
from agentkit.mcp import codec as mcp

JSONRPC_MESSAGE = pydantic.TypeAdapter(mcp_types.JSONRPCMessage)

# --- captured verbatim from the MCP SDK's server over stdio (_5_2: its tools/list answer) -----------------------------

TOOLS_LIST_5_2 = {"jsonrpc": "2.0", "id": 2, "result": {"tools": [
    {"name": "get_weather", "description": "Current weather for a city",
     "inputSchema": {"type": "object", "properties": {"city": {"title": "City", "type": "string"}},
                     "required": ["city"], "title": "get_weatherArguments"},
     "outputSchema": {"type": "object", "properties": {"temp_c": {"title": "Temp C", "type": "number"},
                                                       "sky": {"title": "Sky", "type": "string"}},
                      "required": ["temp_c", "sky"], "title": "Weather"}},
    {"name": "get_time", "description": "Current local time in an IANA zone",
     "inputSchema": {"type": "object", "properties": {"timezone": {"title": "Timezone", "type": "string"}},
                     "required": ["timezone"], "title": "get_timeArguments"},
     "outputSchema": {"type": "object", "properties": {"result": {"title": "Result", "type": "string"}},
                      "required": ["result"], "title": "get_timeOutput"}}]}}
CALL_OK_5_2 = {"jsonrpc": "2.0", "id": 3, "result": {
    "content": [{"type": "text", "text": "{\n  \"temp_c\": 18.0,\n  \"sky\": \"cloudy\"\n}"}],
    "structuredContent": {"temp_c": 18.0, "sky": "cloudy"}, "isError": False}}
CALL_ERROR_5_2 = {"jsonrpc": "2.0", "id": 4, "result": {
    "content": [{"type": "text", "text": "Error executing tool get_time"}], "isError": True}}
NO_METHOD_5_2 = {"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "Method not found",
                                                      "data": "no/such_method"}}

WEATHER_CALL = ToolCall.from_raw("call_Wx1", "get_weather", "{\"city\": \"Paris\"}")


def test_captured_tools_list_decodes_to_tool_specs():
    specs, cursor = mcp.tools_from_list_response(TOOLS_LIST_5_2)
    assert [s.name for s in specs] == ["get_weather", "get_time"] and cursor is None
    assert specs[0].parameters["required"] == ["city"]
    assert specs[0].description == "Current weather for a city"
    assert not any(s.strict for s in specs)  # MCP has no strict mode
    paged = mcp.tools_from_list_response({**TOOLS_LIST_5_2, "result": {**TOOLS_LIST_5_2["result"],
                                                                         "nextCursor": "page2"}})
    assert paged[1] == "page2"


def test_captured_call_results_decode_to_tool_results():
    ok = mcp.result_from_response(WEATHER_CALL, CALL_OK_5_2)
    assert ok == ToolResult.success(WEATHER_CALL, {"temp_c": 18.0, "sky": "cloudy"})
    time_call = ToolCall.from_raw("call_Tm2", "get_time", {"timezone": "Mars/Olympus"})
    failed = mcp.result_from_response(time_call, CALL_ERROR_5_2)
    assert not failed.ok and failed.error_kind == "tool_error"
    assert failed.error["message"] == "Error executing tool get_time" and failed.call_id == "call_Tm2"
    image = {"type": "image", "data": "", "mimeType": "image/png"}
    text_only = mcp.result_from_mcp(WEATHER_CALL, {"content": [{"type": "text", "text": "sunny"}, image]})
    assert text_only == ToolResult.success(WEATHER_CALL, "sunny")


def test_protocol_errors_raise_mcp_error():
    with pytest.raises(mcp.McpError) as exc:
        mcp.result_from_response(WEATHER_CALL, NO_METHOD_5_2)
    assert (exc.value.code, exc.value.message) == (-32601, "Method not found")
    assert exc.value.data == "no/such_method"
    assert exc.value.to_response(7) == NO_METHOD_5_2
    with pytest.raises(mcp.McpError) as wrong_method:
        mcp.call_from_request(mcp.request(7, "no/such_method"))
    assert wrong_method.value.to_response(7) == NO_METHOD_5_2
    for bad in ["not a message", {"jsonrpc": "2.0", "id": 1}, {"jsonrpc": "2.0", "id": 1, "result": []}]:
        with pytest.raises(mcp.McpError):
            mcp.result_of(bad)
    with pytest.raises(mcp.McpError) as parse:
        mcp.from_line("{not json")
    assert parse.value.code == mcp.PARSE_ERROR
    for params in [{"arguments": {}}, {"name": "f", "arguments": [1]}, None]:
        with pytest.raises(mcp.McpError) as invalid:
            mcp.call_from_request({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
        assert invalid.value.code == mcp.INVALID_PARAMS


# --- definitions ----------------------------------------------------------------------------------------

@settings(max_examples=100)
@given(tool_lists)
def test_tool_definitions_round_trip_and_validate_with_the_sdk(specs):
    for spec in specs:
        wire = mcp.tool_to_mcp(spec)
        assert "inputSchema" in wire and "input_schema" not in wire  # camelCase on the wire
        tool = mcp_types.Tool.model_validate(wire)
        assert tool.input_schema == spec.parameters
        assert mcp.tool_from_mcp(wire) == replace(spec, strict=False)
    listed = mcp.list_tools_response(5, specs, next_cursor="c2")
    JSONRPC_MESSAGE.validate_python(listed)
    mcp_types.ListToolsResult.model_validate(listed["result"])
    assert mcp.tools_from_list_response(listed) == ([replace(s, strict=False) for s in specs], "c2")


def test_bad_tool_definitions_are_refused():
    for bad in [{"name": "f", "input_schema": {}}, {"inputSchema": {}}, {"name": "", "inputSchema": {}}, "f"]:
        with pytest.raises(TypeError):
            mcp.tool_from_mcp(bad)
    empty = {"type": "object", "properties": {}}
    assert mcp.tool_to_mcp(ToolSpec("f")) == {"name": "f", "inputSchema": empty}
    assert mcp.tool_to_mcp(WEATHER)["description"] == "Current weather for a city"


# --- results ----------------------------------------------------------------------------------------------

@st.composite
def results(draw) -> ToolResult:
    name = draw(st.sampled_from(["get_weather", "add"]))
    call = ToolCall.from_raw("call_" + draw(texts), name, draw(raw_arguments))
    if draw(st.booleans()):
        return ToolResult.success(call, draw(json_values))
    return ToolResult.failure(call, draw(st.sampled_from(["tool_error", "schema", "timeout"])), draw(texts),
                              draw(st.none() | st.just("$.city")), draw(st.none() | st.just("type")))


@settings(max_examples=200)
@given(results())
def test_results_round_trip_and_validate_with_the_sdk(result):
    call = ToolCall(result.call_id, result.name)
    wire = mcp.result_to_mcp(result)
    model = mcp_types.CallToolResult.model_validate(wire)
    assert model.is_error is (not result.ok)
    assert model.content[0].text == result.content()  # what the model reads: the envelope
    if result.ok and result.result is not None and not isinstance(result.result, str):
        structured = result.result if isinstance(result.result, dict) else {"result": result.result}
        assert wire["structuredContent"] == structured
    else:
        assert "structuredContent" not in wire
    assert mcp.result_from_mcp(call, json.loads(json.dumps(wire))) == result
    response = mcp.call_tool_response(9, result)
    JSONRPC_MESSAGE.validate_python(response)
    assert mcp.result_from_response(call, response) == result


def test_non_json_values_are_sent_as_text():
    import datetime

    result = ToolResult.success(WEATHER_CALL, {"at": datetime.date(2026, 1, 1)})
    assert mcp.result_to_mcp(result)["structuredContent"] == {"at": "2026-01-01"}


# --- JSON-RPC messages -----------------------------------------------------------------------------------

@settings(max_examples=100)
@given(st.integers(0, 10**6) | st.text(min_size=1, max_size=8), st.sampled_from(["get_weather", "add"]),
       raw_arguments)
def test_tools_call_requests_round_trip(request_id, name, raw):
    call = ToolCall.from_raw("c1", name, raw)
    message = mcp.call_tool_request(request_id, call)
    JSONRPC_MESSAGE.validate_python(message)
    mcp_types.CallToolRequest.model_validate({"method": message["method"], "params": message["params"]})
    assert message["params"]["arguments"] == call.arguments_object()  # always an object; {} when unparsable
    line = mcp.to_line(message)
    assert line.endswith("\n") and "\n" not in line[:-1]  # one message per stdio line
    served = mcp.call_from_request(mcp.from_line(line))
    assert (served.id, served.name, served.arguments) == (str(request_id), name, call.arguments_object())


def test_handshake_and_list_messages_have_the_captured_shapes():
    init = mcp.initialize_request(1, "wire-kit", "0.1")
    assert init == {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "wire-kit", "version": "0.1"}}}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert mcp.notification("notifications/initialized") == initialized
    assert mcp.list_tools_request(2) == {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    assert mcp.list_tools_request(3, "c2")["params"] == {"cursor": "c2"}
    for message in [init, mcp.notification("notifications/initialized"), mcp.list_tools_request(2),
                    mcp.error_response(None, mcp.INVALID_REQUEST, "Bad Request: Missing session ID")]:
        JSONRPC_MESSAGE.validate_python(message)
    assert mcp.call_tool_request(3, WEATHER_CALL) == {
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "get_weather", "arguments": {"city": "Paris"}}}


# --- 2026-07-28: request _meta, discover, structuredContent of any JSON, resource links ----------------------

def test_a_2026_request_carries_version_client_and_capabilities_in_meta():
    message = mcp.discover_request(1, mcp.request_meta("kit", "1.0", {"elicitation": {}}))
    assert message == {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "kit", "version": "1.0"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}}
    assert mcp.PROTOCOL_VERSIONS == ("2026-07-28", "2025-11-25")


def test_structured_content_of_any_json_value_is_the_result():
    call_ = ToolCall("c1", "count")
    answer = {"content": [{"type": "text", "text": "[1, 2]"}], "structuredContent": [1, 2], "isError": False}
    assert mcp.result_from_mcp(call_, answer).result == [1, 2]


def test_resource_links_in_a_result_are_kept_not_skipped():
    call_ = ToolCall("c1", "find")
    link = {"type": "resource_link", "uri": "file:///src/main.rs", "name": "main.rs", "mimeType": "text/x-rust"}
    answer = {"content": [{"type": "text", "text": "found one"}, link], "isError": False}
    assert mcp.result_from_mcp(call_, answer).result == {"result": "found one", "resource_links": [link]}


def test_output_schemas_come_from_return_types_and_wrap_what_is_not_an_object():
    from agentkit.mcp.structured import output_problem, output_schema

    @tool
    def as_list(n: int) -> list[int]:
        """x"""

    @tool
    def as_text(n: int) -> str:
        """x"""

    @tool
    def unannotated(n: int):
        """x"""

    schema, wrapped = output_schema(as_list)
    assert wrapped and schema == {"type": "object", "required": ["result"],
                                  "properties": {"result": {"type": "array", "items": {"type": "integer"}}}}
    assert output_schema(as_text) == output_schema(unannotated) == (None, False)  # text: no schema to promise
    assert output_problem(schema, {"result": [1, 2]}) is None
    assert output_problem(schema, {"result": [1, "2"]})["path"] == "$.result[1]"
    assert output_problem(schema, None)["keyword"] == "outputSchema"
