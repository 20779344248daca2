"""agentkit.mcp's server side: the official MCP SDK's own client talks to a ToolServer (in memory, on stdio,
over Streamable HTTP), and the command line refuses bad input in one line."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

import agentkit
from agentkit import ScriptedModel, Tool, ToolContext, Update, call, tool
from agentkit.fixtures import load_fixtures
from agentkit.mcp import CALL_ID_META_KEY, ToolServer, load_server

TESTS = Path(__file__).parent
FIXTURES = load_fixtures()


@tool(idempotent=True)
def forecast(city: str, days: int = 1) -> dict:
    """Current weather for a city.

    Args:
        city: City name, e.g. "Paris".
        days: Days of forecast.
    """
    if city == "Atlantis":
        raise ValueError("no weather station at db-7.prod.internal:5432")
    return {"city": city, "days": days, "temp_c": 18}


@tool
def remember(city: str, ctx: ToolContext) -> Update:
    """Remember a city (the answer names the call it belongs to)."""
    return Update(state={"city": city}, message=f"remembered {city} for {ctx.call_id}")


@tool
def bad_return() -> object:
    """Returns something JSON cannot carry."""
    return object()


RELEASE = threading.Event()  # set at the end of the module, so no tool thread outlives the tests


@tool(timeout=0.2)
def hangs() -> str:
    """Never finishes within its timeout."""
    RELEASE.wait(60)
    return "late"


SERVED = [forecast, remember, bad_return, hangs, *FIXTURES.tools.values()]


@pytest.fixture(scope="module")
def server():
    yield ToolServer(SERVED, name="test-server")
    RELEASE.set()


@pytest.fixture(scope="module")
def sdk_client(server):
    """The SDK's own Client, connected in memory and kept open on a portal for the whole module."""
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(server.server, mode="legacy")) as client:
            yield portal, client


def sdk_call(sdk_client, name: str, arguments: dict, call_id: str | None = None):
    portal, client = sdk_client
    meta = {CALL_ID_META_KEY: call_id} if call_id else None
    return portal.call(lambda: client.call_tool(name, arguments, meta=meta))


def loop_answer(tool_: Tool, arguments: dict, call_id: str) -> agentkit.ToolResult:
    """What the agent loop itself sends its model for this call."""
    run = agentkit.run(ScriptedModel([[call(tool_.name, arguments, id=call_id)], "done"]), "go", tools=[tool_])
    return run.results[0]


# --- the SDK's client against the server ------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_sdk_client_lists_every_tool_with_its_schema_exactly_as_tool_made_it(server, mode):
    async def main():
        async with Client(server.server, mode=mode) as client:
            return client.protocol_version, (await client.list_tools()).tools

    version, listed = anyio.run(main)
    assert version == {"legacy": "2025-11-25", "auto": "2026-07-28"}[mode]  # both eras are served
    assert [t.name for t in listed] == [t.name for t in SERVED]
    for sdk_tool, ours in zip(listed, SERVED):
        assert sdk_tool.input_schema == ours.parameters  # exactly, not re-derived
        assert sdk_tool.description == ours.description
        hint = sdk_tool.annotations.idempotent_hint if sdk_tool.annotations else None
        assert hint == (True if ours.idempotent else None)
    assert "ctx" not in listed[1].input_schema["properties"]  # the hidden ToolContext stays hidden


def test_a_result_is_the_envelope_as_text_plus_the_value_as_structured_content(sdk_client):
    result = sdk_call(sdk_client, "forecast", {"city": "Oslo"}, "call_7")
    assert result.is_error is False
    assert result.structured_content == {"city": "Oslo", "days": 1, "temp_c": 18}
    assert json.loads(result.content[0].text) == {"toolCallId": "call_7", "name": "forecast", "ok": True,
                                                   "result": {"city": "Oslo", "days": 1, "temp_c": 18}}
    plain = sdk_call(sdk_client, "remember", {"city": "Osaka"}, "call_8")  # an Update: its message answers
    assert json.loads(plain.content[0].text)["result"] == "remembered Osaka for call_8"
    assert plain.structured_content is None  # text is not structured content


def test_without_a_call_id_the_envelope_names_the_json_rpc_request(sdk_client):
    text = sdk_call(sdk_client, "forecast", {"city": "Oslo"}).content[0].text
    assert re.fullmatch(r"\d+", json.loads(text)["toolCallId"])


CASES = [(case.name, case.tool, case.arguments) for case in FIXTURES if isinstance(case.arguments, dict)]
FAILURES = [("raises", "forecast", {"city": "Atlantis"}), ("bad return", "bad_return", {}),
            ("timeout", "hangs", {}), ("update", "remember", {"city": "Kyoto"})]


@pytest.mark.parametrize("label, name, arguments", CASES + FAILURES, ids=[c[0] for c in CASES + FAILURES])
def test_every_answer_is_the_text_the_loop_would_send(sdk_client, label, name, arguments):
    tool_ = next(t for t in SERVED if t.name == name)
    expected = loop_answer(tool_, arguments, "call_same")
    served = sdk_call(sdk_client, name, arguments, "call_same")
    assert served.content[0].text == expected.content()
    assert served.is_error is (not expected.ok)


def test_the_fixture_verdicts_reach_the_client_with_gate_kind_path_and_keyword(sdk_client):
    for case in FIXTURES:
        if not isinstance(case.arguments, dict):
            continue  # MCP carries arguments as an object: text that is not one cannot be sent
        envelope = json.loads(sdk_call(sdk_client, case.tool, case.arguments, "c1").content[0].text)
        if case.ok:
            assert envelope["ok"] is True, case.name
        else:
            error = envelope["error"]
            assert (error["kind"], error["keyword"], error["path"]) == (case.kind, case.keyword, case.path), case.name


invoice_arguments = st.fixed_dictionaries(
    {}, optional={"startDate": st.sampled_from(["2026-01-01", "2026-02-30", "01/31/2026", 20260101]),
                  "endDate": st.sampled_from(["2026-01-31", "2025-12-31", None]),
                  "status": st.sampled_from(["paid", "Paid", "void", 3]),
                  "extra": st.integers()})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arguments=invoice_arguments)
def test_any_arguments_get_the_loops_own_verdict_over_mcp(sdk_client, arguments):
    search = FIXTURES.tools["searchInvoices"]
    expected = loop_answer(search, arguments, "call_h")
    served = sdk_call(sdk_client, "searchInvoices", arguments, "call_h")
    assert (served.is_error, served.content[0].text) == (not expected.ok, expected.content())


def test_an_unknown_tool_is_a_json_rpc_invalid_params_error(sdk_client):
    with pytest.raises(MCPError) as error:
        sdk_call(sdk_client, "forcast", {"city": "Oslo"})
    assert error.value.code == -32602
    assert error.value.message == "Unknown tool: forcast"
    assert error.value.data == {"tools": [t.name for t in SERVED]}


def test_set_tools_tells_every_connected_client_that_the_list_changed():
    server = ToolServer([forecast])
    notices: list[str] = []

    async def on_message(message):
        notices.append(type(message).__name__)

    async def main():
        async with Client(server.server, mode="legacy", message_handler=on_message) as client:
            assert client.server_capabilities.tools.list_changed is True
            await client.list_tools()
            server.set_tools([forecast, remember])  # from inside the server's loop: sent in the background
            with anyio.fail_after(10):
                while not notices:
                    await anyio.sleep(0.01)
            return [t.name for t in (await client.list_tools()).tools]

    assert anyio.run(main) == ["forecast", "remember"]
    assert notices == ["ToolListChangedNotification"]


def test_set_tools_from_another_thread_reaches_the_client(server):
    changing = ToolServer([forecast])
    seen = threading.Event()

    async def on_message(message):
        seen.set()

    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(changing.server, mode="legacy",
                                                      message_handler=on_message)) as client:
            portal.call(client.list_tools)
            changing.set_tools([remember])  # this thread is not the server's
            assert seen.wait(10)
            assert [t.name for t in portal.call(client.list_tools).tools] == ["remember"]


# --- over stdio and HTTP -----------------------------------------------------------------------------------

def test_sdk_client_over_stdio_talks_to_the_command_line_server():
    params = StdioServerParameters(command=sys.executable, cwd=str(TESTS),
                                   args=["-m", "agentkit.mcp", "serve", "mcp_tools:TOOLS", "--name", "stdio-test"])

    async def main():
        with open(os.devnull, "w") as errlog:  # the server's status line is not this test's business
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                init = await session.initialize()
                listed = await session.list_tools()
                echoed = await session.call_tool("echo", {"text": "hi"})
                shouted = await session.call_tool("shout", {"text": "hi"})  # prints to stdout on the way
                refused = await session.call_tool("echo", {"text": 5})
                return init, listed, echoed, shouted, refused

    init, listed, echoed, shouted, refused = anyio.run(main)
    assert init.server_info.name == "stdio-test" and init.capabilities.tools.list_changed is True
    assert [t.name for t in listed.tools] == ["echo", "whoami", "crash", "shout"]
    assert echoed.structured_content == {"echo": "hi"}
    assert json.loads(shouted.content[0].text)["result"] == "HI"  # a tool's print() did not break the wire
    assert refused.is_error and json.loads(refused.content[0].text)["error"]["keyword"] == "type"


def test_streamable_http_serves_the_same_tools_on_loopback(server):
    async def main(url):
        async with Client(url, mode="legacy") as client:
            listed = await client.list_tools()
            result = await client.call_tool("forecast", {"city": "Lima"}, meta={CALL_ID_META_KEY: "call_h1"})
            return listed, result

    with server.serve_http() as url:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/mcp", url)
        listed, result = anyio.run(main, url)
    assert [t.name for t in listed.tools] == [t.name for t in SERVED]
    assert result.content[0].text == loop_answer(forecast, {"city": "Lima"}, "call_h1").content()


def test_serving_binds_loopback_only(server):
    with pytest.raises(ValueError, match="loopback"):
        with server.serve_http(host="0.0.0.0"):
            pass
    with pytest.raises(ValueError, match="loopback"):
        server.run_http(8000, host="0.0.0.0")


# --- what cannot be served ---------------------------------------------------------------------------------

def test_a_server_refuses_what_it_cannot_serve():
    with pytest.raises(agentkit.ToolDefinitionError, match="two tools are named"):
        ToolServer([forecast, forecast])
    with pytest.raises(agentkit.ToolDefinitionError, match="not function"):
        ToolServer([forecast.fn])
    with pytest.raises(agentkit.ToolDefinitionError, match="not valid JSON Schema"):  # refused at definition
        Tool.from_schema("broken", "", {"type": "object", "properties": {"x": {"type": "nonsense"}}}, lambda x: x)


@pytest.mark.parametrize("spec, message", [
    ("mcp_tools", "is not MODULE:ATTR"),
    ("mcp_tools:", "is not MODULE:ATTR"),
    (":TOOLS", "is not MODULE:ATTR"),
    ("mcp tools:TOOLS", "is not MODULE:ATTR"),
    ("no_such_module_here:TOOLS", "no module named 'no_such_module_here'"),
    ("mcp_tools:NOPE", "has no attribute 'NOPE'"),
    ("mcp_tools:NOT_A_TOOL", "is a function, not a Tool, a list of Tools or a ToolServer; decorate it"),
    ("mcp_tools:EMPTY", "is an empty list"),
    ("mcp_tools:NOT_TOOLS", "is a list, not a Tool"),
    ("mcp_broken_module:TOOLS", "importing 'mcp_broken_module' failed: RuntimeError: broken on purpose"),
])
def test_a_bad_module_attr_is_one_clear_value_error(spec, message):
    with pytest.raises(ValueError) as error:
        load_server(spec)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_module_attr_may_name_a_tool_list_a_single_tool_or_a_server():
    assert [t.name for t in load_server("mcp_tools:TOOLS").tools] == ["echo", "whoami", "crash", "shout"]
    assert load_server("mcp_tools:TOOLS").name == "mcp_tools"
    assert [t.name for t in load_server("mcp_tools:echo", name="one").tools] == ["echo"]


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentkit.mcp", *args], cwd=TESTS, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("args, code, message", [
    (["serve", "mcp_tools"], 2, "'mcp_tools' is not MODULE:ATTR"),
    (["serve", "mcp_broken_module:TOOLS"], 2, "RuntimeError: broken on purpose"),
    (["serve", "mcp_tools:TOOLS", "--http", "http"], 2, "'http' is not a port number"),
    (["tools", "--", "no-such-mcp-server-command"], 1, "no such command 'no-such-mcp-server-command'"),
    (["tools", "--timeout", "0.5", "--", "sleep", "600"], 1, "did not answer initialize within 0.5 s"),
    (["tools", "--timeout", "120", "--", sys.executable, "mcp_sdk_servers.py", "exit"], 1,
     "closed the connection during the handshake; its stderr ends: cannot open the database"),
])
def test_the_command_line_answers_bad_input_with_one_line_and_an_exit_code(args, code, message):
    done = cli(*args)
    assert done.returncode == code
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert done.stdout == ""


def test_the_command_line_serves_http_and_lists_a_servers_tools():
    server = subprocess.Popen([sys.executable, "-m", "agentkit.mcp", "serve", "mcp_tools:TOOLS", "--http", "0"],
                              cwd=TESTS, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        announced = server.stderr.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/mcp", announced).group(0)
        listed = cli("tools", "--timeout", "120", url)
    finally:
        server.terminate()
        server.wait(30)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == ["mcp_tools (2026-07-28): 4 tools", "  echo(text)  Say it back.",
                                          "  whoami()  The server's process id (tests check that it is gone "
                                          "afterwards).",
                                          "  crash()  End the server process at once, the way a crash would.",
                                          "  shout(text)  Print to stdout (which on stdio is the protocol's "
                                          "channel), then answer."]


def test_import_agentkit_does_not_import_the_mcp_sdk():
    code = ("import sys, agentkit; import agentkit.mcp.codec; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'agentkit.mcp')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    assert "agentkit.mcp" not in subprocess.run(
        [sys.executable, "-c", "import sys, agentkit; print(list(sys.modules))"],
        capture_output=True, text=True, check=True).stdout


def test_concurrent_sdk_clients_each_get_their_own_answers(server):
    # several SDK clients at once, each on its own loop: every one gets its own answers
    async def one(i: int):
        async with Client(server.server, mode="legacy") as client:
            result = await client.call_tool("forecast", {"city": f"City{i}"}, meta={CALL_ID_META_KEY: f"c{i}"})
            return json.loads(result.content[0].text)

    async def main():
        return await asyncio.gather(*(one(i) for i in range(5)))

    answers = asyncio.run(main())
    assert [(a["toolCallId"], a["result"]["city"]) for a in answers] == [(f"c{i}", f"City{i}") for i in range(5)]
