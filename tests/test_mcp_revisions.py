"""Both MCP revisions, 2026-07-28 (stateless) and 2025-11-25 (the handshake), from both sides: the official
SDK's client against agentkit's server, agentkit's client against a server written with the SDK alone; the
tool-list change known before the next turn; structured output; input asked for in the middle of a call;
state in a handle; a `_meta` version the server does not speak."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_types import ToolListChangedNotification

import agentkit
from agentkit import Deny, FunctionModel, ScriptedModel, call
from agentkit.mcp import McpToolError, connect
from mcp_revision_tools import make_server

TESTS = Path(__file__).parent
PYTHON = sys.executable
#: A server gets a clean environment (the SDK's rule); an agentkit put first on PYTHONPATH reaches it too.
SAME_CODE = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
SERVE = [PYTHON, "-m", "agentkit.mcp", "serve", "mcp_revision_tools:SERVER"]
SDK_SERVER = [PYTHON, "mcp_sdk_servers.py", "weather"]
#: Hang guards: a child process starts slowly on a busy machine; no test measures these.
PATIENT = {"cwd": str(TESTS), "connect_timeout": 120, "timeout": 120, "env": SAME_CODE}
REVISIONS = ["2026-07-28", "2025-11-25"]
#: The SDK client's `mode` that ends on each revision: "auto" asks server/discover (2026-07-28), "legacy"
#: opens with initialize.
SDK_MODE = {"2026-07-28": "auto", "2025-11-25": "legacy"}
SERVED = ["echo", "count", "transfer", "open_basket", "add_item", "drop", "drop_soon", "restore"]


def stdio(command: list[str]) -> StdioServerParameters:
    return StdioServerParameters(command=command[0], args=command[1:], cwd=str(TESTS), env=SAME_CODE or None)


def run_script(tools, *steps, **options) -> agentkit.Run:
    return agentkit.run(ScriptedModel([*steps, "done"]), "go", tools=tools, **options)


# --- the SDK's own client against agentkit's server, on stdio ----------------------------------------------

@pytest.mark.parametrize("revision", REVISIONS)
def test_the_sdks_client_lists_and_calls_the_kits_stdio_server_on_both_revisions(revision):
    async def main():
        async with Client(stdio(SERVE), mode=SDK_MODE[revision], cache=None) as client:
            listed = await client.list_tools()
            echoed = await client.call_tool("echo", {"text": "hi"})
            return client.protocol_version, client.server_capabilities, listed, echoed

    version, capabilities, listed, echoed = anyio.run(main)
    assert version == revision
    assert capabilities.tools.list_changed is True  # 2026-07-28: served on subscriptions/listen
    assert [t.name for t in listed.tools] == SERVED  # `forecast` (no schema for its return type) refused alone
    assert listed.tools[0].output_schema == {"type": "object", "additionalProperties": True}  # `-> dict`
    assert listed.tools[1].output_schema == {"type": "object", "required": ["result"],
                                             "properties": {"result": {"type": "array", "items": {"type": "integer"}}}}
    assert echoed.structured_content == {"echo": "hi"} and not echoed.is_error
    if revision == "2026-07-28":  # the cache hints of a listing (2026-07-28 changelog, minor change 5)
        assert (listed.ttl_ms, listed.cache_scope) == (0, "public")


@pytest.mark.parametrize("revision", REVISIONS)
def test_the_sdks_client_hears_of_a_tool_list_change_on_each_revisions_channel(revision):
    """2026-07-28: on the subscriptions/listen stream it opened; 2025-11-25: on the session, unasked."""
    notices: list[ToolListChangedNotification] = []

    async def on_message(message):
        if isinstance(message, ToolListChangedNotification):
            notices.append(message)

    async def main():
        async with Client(stdio(SERVE), mode=SDK_MODE[revision], cache=None, message_handler=on_message) as client:
            if revision == "2026-07-28":
                async with client.listen(tools_list_changed=True) as subscription:
                    assert subscription.honored.tools_list_changed
                    await client.call_tool("drop", {"name": "echo"})
                    with anyio.fail_after(60):
                        event = await subscription.__anext__()
                    assert type(event).__name__ == "ToolsListChanged"
            else:
                await client.call_tool("drop", {"name": "echo"})
            with anyio.fail_after(60):
                while not notices:
                    await anyio.sleep(0.01)
            return [t.name for t in (await client.list_tools()).tools]

    assert "echo" not in anyio.run(main)
    meta = notices[0].params.meta if notices[0].params is not None else None
    if revision == "2026-07-28":  # tagged with the stream it belongs to
        assert meta["io.modelcontextprotocol/subscriptionId"].startswith("listen-")
    else:
        assert not meta


def test_a_meta_protocol_version_the_server_does_not_speak_gets_the_revisions_error():
    """The versioning page of 2026-07-28: UnsupportedProtocolVersionError (-32022) listing what it supports."""
    server = subprocess.Popen(SERVE, cwd=TESTS, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, env={**os.environ, **SAME_CODE})
    try:
        def ask(message: dict) -> dict:
            server.stdin.write(json.dumps(message) + "\n")
            server.stdin.flush()
            ready, _, _ = select.select([server.stdout], [], [], 120)
            assert ready, "the server did not answer"
            return json.loads(server.stdout.readline())

        meta = {"io.modelcontextprotocol/clientCapabilities": {}}
        wrong = ask({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                     "params": {"_meta": {**meta, "io.modelcontextprotocol/protocolVersion": "1900-01-01"}}})
        right = ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                     "params": {"_meta": {**meta, "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})
    finally:
        server.stdin.close()
        server.wait(60)
    assert wrong["id"] == 1 and wrong["error"]["code"] == -32022
    assert "2026-07-28" in wrong["error"]["data"]["supported"]
    assert wrong["error"]["data"]["requested"] == "1900-01-01"
    assert [t["name"] for t in right["result"]["tools"]] == SERVED  # the server went on


# --- agentkit's client against a server written with the SDK alone ------------------------------------------

@pytest.mark.parametrize("revision", REVISIONS)
def test_the_kits_client_uses_the_sdks_own_server_on_both_revisions(revision):
    with connect(SDK_SERVER, protocol=revision, **PATIENT) as client:
        assert (client.server_name, client.protocol_version) == ("sdk-weather", revision)
        assert client.listening is (revision == "2026-07-28")  # MCPServer serves subscriptions/listen
        run = run_script(client.tools, [call("get_weather", {"city": "Paris"}), call("get_time", {"timezone": "UTC"})])
    assert [r.result for r in run.results] == [{"city": "Paris", "sky": "cloudy", "temp_c": 18.0}, {"result": "09:30"}]


def test_by_default_the_kits_client_speaks_the_newest_revision_the_server_offers():
    with connect(SDK_SERVER, **PATIENT) as client:
        assert client.protocol_version == "2026-07-28"
    with connect([PYTHON, "mcp_raw_server.py", "plain"], **PATIENT) as client:  # a 2025-era server
        assert client.protocol_version == "2025-11-25" and not client.listening
        assert run_script(client.tools, [call("ping")]).results[0].result == "pong"


# --- a change known before the next turn ---------------------------------------------------------------------

@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("where", ["stdio", "in memory"])
def test_a_tool_removed_during_a_call_is_not_offered_at_the_next_turn(revision, where):
    """No waiting for the notice: the server tells the change before the call's answer, and the client
    marks its list stale as the notice is read, so `tools=lambda: client.tools` is current at every turn."""
    offered: list[set[str]] = []
    rounds = 6

    def model_fn(messages, tools, options):
        offered.append({t.name for t in tools})
        turn = len(offered)
        if turn > 2 * rounds:
            return "done"
        return [call("drop", {"name": "echo"})] if turn % 2 else [call("restore")]

    target = SERVE if where == "stdio" else make_server()
    with connect(target, protocol=revision, **PATIENT) as client:
        run = agentkit.run(FunctionModel(model_fn), "go", tools=lambda: client.tools,
                           limits=agentkit.Limits(max_steps=2 * rounds + 2))
    assert all(r.ok for r in run.results)
    assert ["echo" in names for names in offered] == [True, *([False, True] * rounds)]


@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("dropper", ["drop", "drop_soon"])
def test_the_answer_of_a_call_that_changed_the_tools_waits_for_its_notices(revision, dropper, monkeypatch):
    """A notice that is slow to go out (a busy stream, a loaded machine) still goes out before the answer,
    whether set_tools ran in a worker thread (`drop`) or on the server's own event loop (`drop_soon`)."""
    from agentkit.mcp import server as server_module

    told = server_module._Listener.tell

    async def slow_tell(listener):
        await anyio.sleep(0.3)
        await told(listener)

    monkeypatch.setattr(server_module._Listener, "tell", slow_tell)
    offered: list[set[str]] = []

    def model_fn(messages, tools, options):
        offered.append({t.name for t in tools})
        return [call(dropper, {"name": "echo"})] if len(offered) == 1 else "done"

    with connect(make_server(), protocol=revision) as client:
        agentkit.run(FunctionModel(model_fn), "go", tools=lambda: client.tools)
    assert ["echo" in names for names in offered] == [True, False]


# --- structured output ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("revision", REVISIONS)
def test_a_result_that_breaks_its_output_schema_is_refused_by_the_server(revision):
    with connect(make_server(), protocol=revision) as client:
        run = run_script(client.tools, [call("count", {"n": 2}), call("count", {"n": 3})])
    fits, breaks = run.results
    assert fits.ok and fits.result == [0, 1]  # the envelope carries the value; structuredContent wraps it
    assert not breaks.ok and (breaks.error_kind, breaks.error["path"], breaks.error["keyword"]) == \
        ("bad_return", "$.result[3]", "type")
    assert "breaks the tool's outputSchema" in breaks.error["message"]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="pydantic refuses typing.TypedDict on Python < 3.12 only")
def test_a_tool_whose_return_type_has_no_schema_is_refused_alone():
    server = make_server()
    assert [t.name for t in server.tools] == SERVED
    assert server.problems == ["tool 'forecast': its return type Forecast cannot become an output schema: Please "
                               "use `typing_extensions.TypedDict` instead of `typing.TypedDict` on Python < 3.12."]


# --- input asked for in the middle of a call ------------------------------------------------------------------

@pytest.mark.parametrize("revision", REVISIONS)
def test_a_tool_that_asks_for_input_gets_the_answer_on_input_gives(revision):
    asked = []

    def decide(request):
        asked.append(request)
        return {"ok": True}

    with connect(make_server(), protocol=revision, on_input=decide) as client:
        run = run_script(client.tools, [call("transfer", {"amount": 5})])
    assert run.results[0].result == {"amount": 5, "sent": True}
    assert [r.message for r in asked] == ["Send 5 EUR?"]
    assert asked[0].schema["required"] == ["ok"]
    if revision == "2026-07-28":  # the answer goes with the retry, inside the call's own task
        assert asked[0].tool == "transfer"
        assert [e.data["action"] for e in run.trace.of("mcp_input")] == ["accept"]


@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("answer", [False, "not now", Deny("no")])
def test_a_declined_request_fails_the_call_with_its_kind(revision, answer):
    with connect(make_server(), protocol=revision, on_input=lambda request: answer) as client:
        result = run_script(client.tools, [call("transfer", {"amount": 5})]).results[0]
    assert result.error_kind == "input_declined"


@pytest.mark.parametrize("revision", REVISIONS)
def test_without_on_input_the_client_declares_no_elicitation_and_the_tool_says_so(revision):
    with connect(make_server(), protocol=revision) as client:
        result = run_script(client.tools, [call("transfer", {"amount": 5})]).results[0]
    assert result.error_kind == "input_unavailable"
    assert "declared no elicitation capability" in result.error["message"]


def test_on_input_must_answer_in_the_approval_shapes():
    with connect(make_server(), on_input=lambda request: 42) as client:
        result = run_script(client.tools, [call("transfer", {"amount": 5})]).results[0]
    assert not result.ok  # the client told the server its on_input failed; the call failed there, visibly


# --- state in a handle ------------------------------------------------------------------------------------

def test_state_that_spans_calls_travels_in_a_handle_not_in_the_connection():
    server = make_server()
    with connect(server) as first:
        handle = run_script(first.tools, [call("open_basket")]).results[0].result["basket_id"]
    with connect(server) as second:  # another connection, no session: the handle is all it takes
        added = run_script(second.tools, [call("add_item", {"basket_id": handle, "sku": "tea"})]).results[0]
        unknown = run_script(second.tools, [call("add_item", {"basket_id": "bsk_0", "sku": "tea"})]).results[0]
    assert added.result == {"basket_id": handle, "items": ["tea"]}
    assert unknown.error_kind == "unknown_handle" and "open one with open_basket" in unknown.error["message"]


def test_a_stale_tool_is_refused_on_2026_07_28_as_on_2025_11_25():
    with connect(make_server()) as client:
        tools = client.tools  # the list a run would start with
        run = run_script(tools, [call("drop", {"name": "echo"})], [call("echo", {"text": "hi"})])
    stale = run.results[1]
    assert stale.error_kind == "stale_tool" and "no longer exists" in stale.error["message"]
    assert isinstance(McpToolError("x"), agentkit.ToolFailure)


def test_streamable_http_serves_2026_07_28_with_its_listen_stream():
    server = make_server()
    with server.serve_http() as url, connect(url, connect_timeout=120) as client:
        assert client.protocol_version == "2026-07-28" and client.listening
        server.set_tools([t for t in server.tools if t.name != "echo"])
        assert client.stale.wait(60)  # the notice came on the listen stream's own POST response
        assert "echo" not in [t.name for t in client.tools]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="pydantic refuses typing.TypedDict on Python < 3.12 only")
def test_serve_names_each_tool_it_refuses_on_stderr_and_serves_the_rest():
    server = subprocess.Popen(SERVE, cwd=TESTS, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, env={**os.environ, **SAME_CODE})
    lines: list[str] = []

    def read_until_serving() -> None:
        for line in server.stderr:
            lines.append(line)
            if line.startswith("agentkit.mcp: serving"):
                return

    reader = threading.Thread(target=read_until_serving, daemon=True)
    reader.start()
    try:
        reader.join(120)  # a hang guard: a child process starts slowly on a busy machine
        assert lines and lines[-1].startswith("agentkit.mcp: serving"), lines
    finally:
        server.stdin.close()
        server.wait(60)
    assert lines[0].startswith("agentkit.mcp serve: not serving tool 'forecast': its return type Forecast cannot")
    assert lines[-1].startswith("agentkit.mcp: serving 'revisions' on stdio") and "forecast" not in lines[-1]


def test_asking_for_2026_07_28_of_a_2025_era_server_is_a_clear_connection_error():
    from agentkit.mcp import McpConnectionError

    with pytest.raises(McpConnectionError, match=r"does not speak 2026-07-28 \(it answered on 2025-11-25\)"):
        connect([PYTHON, "mcp_raw_server.py", "plain"], protocol="2026-07-28", **PATIENT)
