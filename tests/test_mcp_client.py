"""agentkit.mcp's client side: the agent loop uses tools that live behind MCP servers — built with the SDK
alone, or agentkit's own — in memory, on stdio and over HTTP; every error policy, limit, timeout and
approval gate works unchanged; stale tool lists are detected, refreshed and explained; bad input gets a
clear error; and no server process outlives its client."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pydantic
import pytest
from mcp_sdk_servers import flaky_server, weather_server
from mcp_types import JSONRPCMessage

import agentkit
from agentkit import Limits, Retry, ScriptedModel, StopReason, Tool, call, tool
from agentkit.mcp import McpConnectionError, McpToolError, StaleToolError, ToolServer, WireLog, aconnect, connect
from agentkit.mcp.client import _says_unknown_tool
from agentkit.mcp.codec import McpError

TESTS = Path(__file__).parent
PYTHON = sys.executable
SERVE = [PYTHON, "-m", "agentkit.mcp", "serve", "mcp_tools:TOOLS"]
#: Child processes start slowly on a busy machine; a handshake deadline is not what these tests measure.
PATIENT = {"cwd": str(TESTS), "connect_timeout": 120}
JSONRPC = pydantic.TypeAdapter(JSONRPCMessage)


def run_script(tools, *steps, **options) -> agentkit.Run:
    return agentkit.run(ScriptedModel([*steps, "done"]), "go", tools=tools, **options)


def envelope(result: agentkit.ToolResult) -> dict:
    return json.loads(result.content())


def alive(pid: int) -> bool:
    """Running, that is: a zombie (exited, waiting for its parent to reap it) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_gone(pid: int, patience: float = 60.0) -> bool:
    """For a process that must end on its own (its parent died): a deadline for liveness, not a speed test."""
    deadline = time.monotonic() + patience
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# --- a server built with the SDK alone -----------------------------------------------------------------------

def test_the_loop_uses_an_sdk_built_server_in_memory():
    server = weather_server()
    with connect(server) as client:
        assert client.server_name == "sdk-weather" and client.protocol_version == "2026-07-28"
        tools = client.tools
        assert [t.name for t in tools] == ["get_weather", "get_time"]
        assert tools[0].parameters["required"] == ["city"] and tools[0].idempotent  # idempotentHint
        assert not tools[1].idempotent
        run = run_script(tools, [call("get_weather", {"city": "Paris"}), call("get_time", {"timezone": "UTC"})])
    assert run.stop_reason is StopReason.FINAL_ANSWER
    assert [r.result for r in run.results] == [{"city": "Paris", "sky": "cloudy", "temp_c": 18.0}, {"result": "09:30"}]
    raw = {e.data["call_id"]: e.data["result"] for e in run.trace.of("mcp_result")}  # in completion order
    assert [raw[r.call_id]["structuredContent"] for r in run.results] == [r.result for r in run.results]
    assert raw[run.results[0].call_id]["content"][0]["type"] == "text"  # the raw answer lives in the trace


def test_the_loop_uses_an_sdk_built_server_over_stdio():
    with connect([PYTHON, "mcp_sdk_servers.py", "weather"], **PATIENT) as client:
        run = run_script(client.tools, [call("get_weather", {"city": "Oslo"})],
                         [call("get_weather", {"city": "Atlantis"})])
    assert run.results[0].result == {"city": "Oslo", "sky": "cloudy", "temp_c": 18.0}
    error = envelope(run.results[1])["error"]
    assert error["kind"] == "tool_error"
    assert error["message"] == "Error executing tool get_weather"  # the server's words (the SDK hides the exception)


def test_the_loop_uses_an_agentkit_server_over_streamable_http():
    server = ToolServer(agentkit.mcp.load_server("mcp_tools:TOOLS").tools[:1], name="over-http")
    with server.serve_http() as url, connect(url) as client:
        assert client.server_name == "over-http"
        run = run_script(client.tools, [call("echo", {"text": "hi"})], [call("echo", {"text": 5})])
    assert run.results[0].result == {"echo": "hi"} and envelope(run.results[1])["error"]["kind"] == "schema"


async def _arun_with(client_tools):
    return await agentkit.arun(ScriptedModel([[call("get_weather", {"city": "Rome"})], "done"]), "go",
                               tools=client_tools)


def test_arun_works_and_the_client_opens_off_the_event_loop():
    async def main():
        async with await aconnect(weather_server()) as client:
            return await _arun_with(client.tools)

    assert asyncio.run(main()).results[0].result["city"] == "Rome"


def test_async_with_connect_also_works():
    async def main():
        async with connect(weather_server()) as client:
            return await _arun_with(client.tools)

    assert asyncio.run(main()).results[0].ok


# --- every error policy, limit, timeout and approval gate, unchanged ------------------------------------------

@pytest.fixture()
def weather():
    server = weather_server()
    with connect(server) as client:
        yield server, client


ATLANTIS = [call("get_weather", {"city": "Atlantis"})]


def test_an_is_error_result_is_reported_by_default(weather):
    server, client = weather
    run = run_script(client.tools, ATLANTIS)
    assert not run.results[0].ok and run.stop_reason is StopReason.FINAL_ANSWER


def test_raise_policy_stops_the_run_with_the_mcp_tool_error_as_cause(weather):
    server, client = weather
    with pytest.raises(agentkit.ToolExecutionError) as error:
        run_script(client.tools, ATLANTIS, on_tool_error="raise")
    assert isinstance(error.value.__cause__, McpToolError)
    assert error.value.run.stop_reason is StopReason.ERROR


def test_text_and_class_policies_see_the_mcp_tool_error(weather):
    server, client = weather
    run = run_script(client.tools, ATLANTIS, on_tool_error="The weather service failed.")
    assert run.results[0].content() == "The weather service failed."
    run = run_script(client.tools, ATLANTIS, on_tool_error=McpToolError)
    assert not run.results[0].ok
    with pytest.raises(agentkit.ToolExecutionError):
        run_script(client.tools, ATLANTIS, on_tool_error=McpError)  # a protocol error class: this one raises


def test_retry_runs_an_idempotent_mcp_tool_again(weather):
    server, client = weather
    run = run_script(client.tools, ATLANTIS, on_tool_error=Retry(max_retries=2, backoff=0))
    assert server.calls["get_weather"] == 3 and run.tool_runs == 3  # idempotentHint made it retryable
    run = run_script(client.tools, [call("get_time", {"timezone": "x"})], on_tool_error=Retry(max_retries=2, backoff=0))
    assert server.calls["get_time"] == 1  # not marked idempotent: run once


def test_limits_and_approval_stop_calls_before_they_reach_the_server(weather):
    server, client = weather
    two = [call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Rome"})]
    run = run_script(client.tools, two, limits=Limits(max_tool_calls=1, exit_behavior="continue"))
    assert server.calls["get_weather"] == 1 and [r.ok for r in run.results] == [True, False]
    run = run_script(client.tools, two, approve=lambda call, ctx: "not today")
    assert server.calls["get_weather"] == 1 and envelope(run.results[0])["error"]["kind"] == "denied"
    bad = [call("get_weather", {"city": 5}), call("get_wether", {"city": "Rome"})]
    run = run_script(client.tools, bad)
    assert server.calls["get_weather"] == 1  # the gates refused both locally: nothing was sent
    assert [envelope(r)["error"]["kind"] for r in run.results] == ["schema", "unknown_tool"]


def test_a_call_that_times_out_is_a_timeout_result_and_the_server_is_told():
    release = asyncio.Event()
    cancelled = threading.Event()

    @tool
    async def wait_forever() -> str:
        """Waits until cancelled."""
        try:
            await release.wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    log = WireLog()
    with connect(ToolServer([wait_forever]), timeout=0.3, wire=log) as client:
        run = run_script(client.tools, [call("wait_forever")])
        error = envelope(run.results[0])["error"]
        assert error["kind"] == "timeout"  # agentkit's ToolTimeout: Retry and policies treat it as such
        assert error["message"] == "ToolTimeout: tool 'wait_forever' did not finish within 0.3 s"
        assert cancelled.wait(30)  # the SDK sent notifications/cancelled; the server cancelled the tool
    sent = [m for d, m in log if d == ">>>"]
    cancel = next(m for m in sent if m.get("method") == "notifications/cancelled")
    called = next(m for m in sent if m.get("method") == "tools/call")
    assert cancel["params"]["requestId"] == called["id"]


def test_the_loops_own_tool_timeout_cancels_the_mcp_request_under_arun():
    cancelled = threading.Event()

    @tool
    async def wait_forever() -> str:
        """Waits until cancelled."""
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()

    log = WireLog()

    async def main():
        async with await aconnect(ToolServer([wait_forever]), wire=log) as client:
            run = await agentkit.arun(ScriptedModel([[call("wait_forever")], "done"]), "go", tools=client.tools,
                                      tool_timeout=0.3)
            assert await asyncio.to_thread(cancelled.wait, 30)
            return run

    run = asyncio.run(main())
    assert envelope(run.results[0])["error"]["kind"] == "timeout"
    assert "notifications/cancelled" in [m.get("method") for d, m in log if d == ">>>"]


def test_one_client_serves_many_threads_and_parallel_batches_at_once():
    arrived, lock, everyone = [0], threading.Lock(), asyncio.Event()
    parties = 8

    @tool
    async def meet(who: int) -> int:
        """Waits until all parties have arrived: only possible if the calls really run at the same time."""
        with lock:
            arrived[0] += 1
            if arrived[0] % parties == 0:
                everyone.set()
        await everyone.wait()
        return who

    with connect(ToolServer([meet]), timeout=60) as client:
        tools = client.tools
        batch = run_script(tools, [call("meet", {"who": i}) for i in range(parties)])  # one batch, 8 workers
        assert [r.result for r in batch.results] == list(range(parties))
        everyone.clear()
        answers: dict[int, object] = {}

        def one(i: int) -> None:
            answers[i] = run_script(tools, [call("meet", {"who": 100 + i})]).results[0].result

        threads = [threading.Thread(target=one, args=(i,)) for i in range(parties)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert answers == {i: 100 + i for i in range(parties)}


def test_a_protocol_error_is_an_mcp_error_with_its_code():
    with connect(flaky_server(error=(-32603, "database unavailable"))) as client:
        run = run_script(client.tools, [call("ping")])
        with pytest.raises(agentkit.ToolExecutionError) as error:
            run_script(client.tools, [call("ping")], on_tool_error="raise")
    assert envelope(run.results[0])["error"]["message"] == "McpError: -32603 database unavailable"
    assert isinstance(error.value.__cause__, McpError) and error.value.__cause__.code == -32603


# --- stale tool lists --------------------------------------------------------------------------------------

@tool(idempotent=True)
def get_weather(city: str) -> dict:
    """Current weather for a city."""
    return {"city": city, "temp_c": 21}


@tool
def get_time(city: str) -> str:
    """Local time in a city."""
    return "09:30"


@tool(name="get_weather")
def get_weather_v2(city: str, unit: str) -> dict:
    """Current weather for a city, in a unit."""
    return {"city": city, "temp": 21, "unit": unit}


@tool(name="get_weather")
def get_weather_v3(city: str, unit: str = "C") -> dict:
    """Current weather for a city (a new optional field)."""
    return {"city": city, "temp": 21, "unit": unit}


def test_list_changed_marks_the_list_stale_and_the_next_call_refreshes_it():
    server = ToolServer([get_weather, get_time], name="weather")
    with connect(server) as client:
        old = client.tools
        server.set_tools([get_weather_v2])
        assert client.stale.wait(10)
        run = run_script(old, [call("get_time", {"city": "Tokyo"}), call("get_weather", {"city": "Paris"})],
                         executor="sequential")
        # the second call began after the first had read the list: it reads it again before refusing
        assert client.refreshes == ["initial", "list_changed", "recheck"] and not client.stale.is_set()
        gone, changed = (envelope(r)["error"] for r in run.results)
        assert gone["kind"] == changed["kind"] == "stale_tool"
        assert gone["message"] == ("tool 'get_time' no longer exists on the MCP server 'weather' (its tool "
                                   "list changed); it now offers: get_weather")
        assert changed["message"] == ("tool 'get_weather' changed on the MCP server 'weather' since its "
                                      "tool list was read; for the new version: $.unit: missing required property "
                                      "'unit'")
        assert [e.data["reason"] for e in run.trace.of("mcp_refresh")] == ["list_changed", "recheck"]
        assert server.calls == 0  # neither stale call was sent
        fresh = client.tools
        assert [t.name for t in fresh] == ["get_weather"] and fresh[0].parameters["required"] == ["city", "unit"]
        run = run_script(fresh, [call("get_weather", {"city": "Paris", "unit": "C"})])
        assert run.results[0].result == {"city": "Paris", "temp": 21, "unit": "C"}


def test_parallel_calls_on_a_stale_list_list_the_tools_once_and_send_nothing_stale():
    server = ToolServer([get_weather, get_time])
    with connect(server) as client:
        old = client.tools
        server.set_tools([get_weather_v3])
        assert client.stale.wait(10)
        batch = [call(name, {"city": c}) for c in ("Paris", "Rome", "Oslo") for name in ("get_time", "get_weather")]
        run = run_script(old, batch)  # six calls on six threads, all finding the list stale at once
        # one listing for the notice; a refused get_time call that did not read the list itself reads it
        # once more before refusing (how many did depends on the threads; calls refused together share one)
        assert client.refreshes[:2] == ["initial", "list_changed"] and set(client.refreshes[2:]) <= {"recheck"}
    assert server.calls == 3  # the get_weather calls (their arguments fit the new schema); no get_time
    assert [r.ok for r in run.results] == [False, True] * 3
    assert all("no longer exists" in envelope(r)["error"]["message"] for r in run.results[::2])
    assert [e.data["reason"] for e in run.trace.of("mcp_refresh")] == client.refreshes[1:]  # by the calls that listed


def test_a_call_that_arrives_while_the_list_is_being_read_waits_for_the_new_list():
    from mcp.server.lowlevel import Server
    from mcp_types import CallToolResult, ListToolsResult, TextContent
    from mcp_types import Tool as McpTool

    listing_started, release, sent = threading.Event(), asyncio.Event(), []
    version = {"tools": ["ping", "gone"], "listings": 0}

    async def list_tools(ctx, params):
        version["listings"] += 1
        if version["listings"] == 2:  # the refresh after the notice: hold it until the test says go
            listing_started.set()
            await release.wait()
        return ListToolsResult(tools=[McpTool(name=n, input_schema={"type": "object"}) for n in version["tools"]])

    async def call_tool(ctx, params):
        sent.append(params.name)
        return CallToolResult(content=[TextContent(text=params.name)])

    server = Server("slow-lister", on_list_tools=list_tools, on_call_tool=call_tool)
    with connect(server) as client:
        old = client.tools
        version["tools"] = ["ping"]
        client.stale.set()  # as a list_changed notice would
        first = threading.Thread(target=run_script, args=(old, [call("ping")]))
        first.start()
        assert listing_started.wait(30)  # the first call is reading the list now
        answers = {}
        second = threading.Thread(target=lambda: answers.update(run=run_script(old, [call("gone")])))
        second.start()
        deadline = time.monotonic() + 30  # until the second call waits for the listing, or (wrongly) sends
        while not sent and client._portal.call(lambda: client._lock.statistics().tasks_waiting) == 0:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        client._portal.call(release.set)
        first.join(30)
        second.join(30)
    assert sent == ["ping"]  # "gone" was checked against the new list and never sent
    assert "no longer exists" in envelope(answers["run"].results[0])["error"]["message"]
    # the second call read the list once more before refusing: the first call's listing began before it came
    assert client.refreshes == ["initial", "list_changed", "recheck"]


def test_arguments_that_still_fit_a_changed_schema_are_sent():
    server = ToolServer([get_weather])
    with connect(server) as client:
        old = client.tools
        server.set_tools([get_weather_v3])
        assert client.stale.wait(10)
        run = run_script(old, [call("get_weather", {"city": "Paris"})])
    assert run.results[0].result == {"city": "Paris", "temp": 21, "unit": "C"}


def test_unchanged_tools_keep_their_identity_across_refreshes():
    server = ToolServer([get_weather, get_time])
    with connect(server) as client:
        before = client.tools
        server.set_tools([get_weather, Tool.from_schema("get_time", "Local time, now with a zone.",
                                                         get_time.parameters, get_time.fn)])
        assert client.stale.wait(10)
        after = client.tools
    assert after[0] is before[0] and after[1] is not before[1]


def test_an_sdk_servers_unknown_tool_answer_makes_the_client_refresh():
    server = weather_server()
    with connect(server) as client:
        old = client.tools
        server.remove_tool("get_time")  # the SDK's MCPServer sends no notice on a 2025 session
        assert not client.stale.is_set()
        run = run_script(old, [call("get_time", {"timezone": "UTC"})])
        assert client.refreshes == ["initial", "unknown_tool"]
    assert envelope(run.results[0])["error"] == {"kind": "stale_tool", "path": None, "keyword": None, "message": (
        "tool 'get_time' no longer exists on the MCP server 'sdk-weather' (its tool list changed); "
        "it now offers: get_weather")}
    assert [e.data["reason"] for e in run.trace.of("mcp_refresh")] == ["unknown_tool"]
    with connect(weather_server()) as client:
        old = client.tools
        client_server_removes = client.target
        client_server_removes.remove_tool("get_weather")
        with pytest.raises(agentkit.ToolExecutionError) as error:
            run_script(old, [call("get_weather", {"city": "Oslo"})], on_tool_error="raise")
    assert isinstance(error.value.__cause__, StaleToolError) and error.value.__cause__.kind == "stale_tool"


def test_an_unknown_tool_error_for_a_tool_still_listed_is_retried_once():
    server = flaky_server(unknown_first=1)
    with connect(server) as client:
        run = run_script(client.tools, [call("ping")])
    assert run.results[0].result == "pong" and client.refreshes == ["initial", "unknown_tool"]
    assert server.calls == {"ping": 2, "list": 2}  # one retry after one fresh tools/list


def test_the_retry_after_an_unknown_tool_error_happens_once_only():
    server = flaky_server(unknown_first=5)
    with connect(server) as client:
        run = run_script(client.tools, [call("ping")])
    assert server.calls["ping"] == 2
    assert envelope(run.results[0])["error"]["message"] == "McpError: -32602 Unknown tool: ping"


@pytest.mark.parametrize("answer, unknown", [
    (McpError(-32602, "Unknown tool: get_time"), True),
    (McpError(-32602, "MCP error -32602: Tool get_time not found"), True),
    (McpError(-32601, "No such tool 'get_time'"), True),
    ({"isError": True, "content": [{"type": "text", "text": "Unknown tool: get_time"}]}, True),
    ({"isError": True, "content": [{"type": "text", "text": "Tool 'get_time' does not exist"}]}, True),
    (McpError(-32603, "Unknown tool: get_time"), False),  # an internal error is not about the name
    (McpError(-32602, "Unknown tool: get_timezone"), False),  # another tool
    ({"isError": True, "content": [{"type": "text", "text": "city not found for get_time"}]}, False),
    ({"isError": False, "content": [{"type": "text", "text": "Unknown tool: get_time"}]}, False),
    ({"isError": True, "content": [{"type": "text", "text": json.dumps(
        {"toolCallId": "c", "name": "get_time", "ok": False, "error": {"message": "Unknown tool: get_time"}})}]},
     False),  # an agentkit envelope: the tool exists (the server says unknown tools with a JSON-RPC error)
])
def test_only_an_unknown_tool_answer_counts_as_a_stale_list(answer, unknown):
    assert _says_unknown_tool(answer, "get_time") is unknown


# --- names, schemas, the wire ---------------------------------------------------------------------------------

def test_names_are_made_valid_and_a_prefix_keeps_two_servers_apart():
    dotted = flaky_server(tool_name="files.read/v2")  # MCP allows '.' and '/'; agentkit names do not
    with connect(dotted, prefix="fs_") as client:
        assert [t.name for t in client.tools] == ["fs_files_read_v2"]
        run = run_script(client.tools, [call("fs_files_read_v2")])
    assert run.results[0].result == "pong"
    assert dotted.names == ["files.read/v2"]  # sent under its MCP name
    with pytest.raises(ValueError, match="prefix"):
        connect(weather_server(), prefix="a.b")


def test_a_tool_whose_schema_cannot_be_used_is_skipped_with_a_reason():
    broken = flaky_server()
    handler = broken._request_handlers["tools/list"]

    async def list_broken(ctx, params):
        result = await handler.handler(ctx, params)
        good = result.tools[0].model_copy()
        bad = result.tools[0].model_copy(update={"name": "bad", "input_schema": {
            "type": "object", "properties": {"x": {"type": "nonsense"}}}})
        result.tools = [good, bad]
        return result

    broken._request_handlers["tools/list"] = type(handler)(handler.params_type, list_broken)
    with connect(broken) as client:
        assert [t.name for t in client.tools] == ["ping"]
        assert len(client.problems) == 1 and client.problems[0].startswith("bad: ")
        assert "not valid JSON Schema" in client.problems[0]


def test_the_wire_log_holds_the_real_json_rpc_exchange_in_order():
    """2026-07-28, the default: no handshake; discover, the listen stream, then every request with `_meta`."""
    log = WireLog()
    with connect(ToolServer([get_weather], name="w"), wire=log) as client:
        run_script(client.tools, [call("get_weather", {"city": "Paris"}, id="call_1")])
    assert log.methods()[:8] == [">>> server/discover", "<<< result", ">>> subscriptions/listen",
                                 "<<< notifications/subscriptions/acknowledged", ">>> tools/list", "<<< result",
                                 ">>> tools/call", "<<< result"]
    for _direction, message in log:
        JSONRPC.validate_python(message)  # every line is a JSON-RPC message the SDK accepts
    discover, called, answer = log.messages[0][1], log.messages[6][1], log.messages[7][1]
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "agentkit", "version": agentkit.__version__},
            "io.modelcontextprotocol/clientCapabilities": {}}
    assert discover["params"]["_meta"] == meta
    assert called["params"] == {"_meta": {"agentkit/toolCallId": "call_1", **meta}, "name": "get_weather",
                                "arguments": {"city": "Paris"}}
    assert answer["id"] == called["id"] and answer["result"]["structuredContent"] == {"city": "Paris", "temp_c": 21}
    assert log.lines()[0].startswith('>>> {"jsonrpc":"2.0","id":1,"method":"server/discover"')


def test_the_wire_log_of_a_2025_session_opens_with_the_handshake():
    log = WireLog()
    with connect(ToolServer([get_weather], name="w"), wire=log, protocol="2025-11-25") as client:
        assert client.protocol_version == "2025-11-25" and not client.listening
        run_script(client.tools, [call("get_weather", {"city": "Paris"}, id="call_1")])
    assert log.methods() == [">>> initialize", "<<< result", ">>> notifications/initialized", ">>> tools/list",
                             "<<< result", ">>> tools/call", "<<< result"]
    init, called = log.messages[0][1], log.messages[5][1]
    assert init["params"]["protocolVersion"] == "2025-11-25"
    assert init["params"]["clientInfo"] == {"name": "agentkit", "version": agentkit.__version__}
    assert called["params"] == {"_meta": {"agentkit/toolCallId": "call_1"}, "name": "get_weather",
                                "arguments": {"city": "Paris"}}


# --- bad input: connecting ----------------------------------------------------------------------------------

def test_connect_refuses_what_is_not_a_server():
    with pytest.raises(TypeError, match="connect\\(\\) takes a command"):
        connect(42)
    with pytest.raises(ValueError, match="timeout"):
        connect(weather_server(), timeout=0)


def test_a_missing_command_is_a_clear_connection_error():
    with pytest.raises(McpConnectionError, match="no such command 'no-such-mcp-server'"):
        connect(["no-such-mcp-server", "--stdio"])


def test_a_server_that_exits_before_the_handshake_is_reported_with_its_stderr():
    with pytest.raises(McpConnectionError) as error:
        connect([PYTHON, "mcp_sdk_servers.py", "exit"], cwd=str(TESTS))
    assert str(error.value) == (f"the MCP server {PYTHON} mcp_sdk_servers.py exit closed the connection during "
                                f"the handshake; its stderr ends: cannot open the database")


def test_a_server_that_never_answers_initialize_times_out_and_is_stopped(tmp_path):
    pid_file = tmp_path / "pid"
    # a shell notes its pid, then becomes `sleep`: a process that reads nothing and answers nothing
    silent = ["sh", "-c", f"echo $$ > {pid_file}; exec sleep 600"]
    with pytest.raises(McpConnectionError, match="did not answer initialize within 0.5 s"):
        connect(silent, connect_timeout=0.5)
    pid = int(pid_file.read_text())
    assert not alive(pid)  # the SDK closed its stdin, then terminated it, before connect() returned


def test_an_unreachable_url_is_a_clear_connection_error():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        with pytest.raises(McpConnectionError, match=f"127.0.0.1:{port}"):
            connect(f"http://127.0.0.1:{port}/mcp", connect_timeout=5)


def test_a_closed_client_says_so():
    client = connect(weather_server())
    tools = client.tools
    client.close()
    client.close()  # idempotent
    with pytest.raises(McpConnectionError, match="was closed"):
        _ = client.tools
    run = run_script(tools, [call("get_weather", {"city": "Paris"})])
    assert "was closed" in envelope(run.results[0])["error"]["message"]


# --- a server that dies, and no orphans ---------------------------------------------------------------------

def test_a_server_that_dies_mid_call_fails_clearly_and_no_process_outlives_the_raising_run():
    with pytest.raises(agentkit.ToolExecutionError) as error:
        with connect(SERVE, **PATIENT) as client:
            tools = client.tools
            run = run_script(tools, [call("whoami")], [call("crash")], [call("echo", {"text": "still there?"})])
            pid = run.results[0].result
            crash, later = (envelope(r)["error"] for r in run.results[1:])
            assert crash["message"] == later["message"] == (
                "McpConnectionError: the MCP server 'mcp_tools' closed the connection (did it exit or crash?); "
                "its stderr ends: crashing on purpose")
            assert run.stop_reason is StopReason.FINAL_ANSWER  # the policy said report: the loop went on
            run_script(tools, [call("echo", {"text": "x"})], on_tool_error="raise")  # this policy stops it
    assert isinstance(error.value.__cause__, McpConnectionError)
    assert not alive(pid)


CHILD = """
import os, signal, sys
import agentkit
from agentkit.mcp import connect
client = connect({serve!r}, cwd={cwd!r}, connect_timeout=120)
run = agentkit.run(agentkit.ScriptedModel([[agentkit.call("whoami")], "done"]), "go", tools=client.tools)
print(run.results[0].result, flush=True)
{ending}
"""


@pytest.mark.parametrize("ending", ["os.kill(os.getpid(), signal.SIGKILL)", "sys.exit(0)"],
                         ids=["the client process is killed", "the client exits without closing"])
def test_no_server_process_outlives_its_client_process(ending):
    code = CHILD.format(serve=SERVE, cwd=str(TESTS), ending=ending)
    done = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=120)
    server_pid = int(done.stdout.strip())
    assert wait_gone(server_pid)  # its stdin closed with the client: the server ended by itself


def test_a_run_given_the_clients_live_list_offers_the_changed_tools_at_the_next_turn():
    """`tools=lambda: client.tools`: the loop asks before every model call, so a list_changed notice
    during a run reaches the model at its next turn, not only at the next run."""
    server = ToolServer([get_weather, get_time], name="weather")
    offered: list[list[str]] = []

    def model_fn(messages, tools, options):
        offered.append(sorted(t.name for t in tools))
        if len(offered) == 1:
            server.set_tools([get_weather_v2])
            assert client.stale.wait(10)
            return [call("get_time", {"city": "Tokyo"})]
        return "done"

    with connect(server) as client:
        run = agentkit.run(agentkit.FunctionModel(model_fn), "go", tools=lambda: client.tools)
    assert offered == [["get_time", "get_weather"], ["get_weather"]]
    assert run.results[0].error_kind == "stale_tool"
    assert [e.data["tools"] for e in run.trace.of("tools_changed")] == [["get_weather"]]
