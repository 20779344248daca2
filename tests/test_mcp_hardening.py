"""agentkit.mcp under fire: modules that fail to load in every way a module can, servers that print garbage,
die or are killed in the middle of a call, answer 10 MB or bytes that are not UTF-8, change their tools
under a client; and clients killed outright. Each gets the documented error, at once, and no process the
kit started outlives its owner. (Every wait is a hang guard, none a speed test.)"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentkit
from agentkit import ScriptedModel, Tool, call, tool
from agentkit.mcp import McpToolError, StaleToolError, ToolServer, WireLog, connect
from agentkit.mcp.codec import McpError

TESTS = Path(__file__).parent
PYTHON = sys.executable
SERVE = [PYTHON, "-m", "agentkit.mcp", "serve", "mcp_process_tools:TOOLS"]
#: A server gets a clean environment (the SDK's rule); an agentkit put first on PYTHONPATH reaches it too,
#: so both sides run the code under test.
SAME_CODE = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
#: Hang guards: a child process starts slowly on a busy machine; no test measures these.
PATIENT = {"cwd": str(TESTS), "connect_timeout": 120, "timeout": 120, "env": SAME_CODE}
GUARD = 120.0


def envelope(result: agentkit.ToolResult) -> dict:
    return json.loads(result.content())


def one_call(tools, name: str, arguments: dict | None = None) -> agentkit.ToolResult:
    return agentkit.run(ScriptedModel([[call(name, arguments or {})], "done"]), "go", tools=tools).results[0]


def alive(pid: int) -> bool:
    """Running, that is: a zombie (ended, not yet reaped) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def gone(*pids: int) -> bool:
    """For processes that must end on their own: a hang guard, not a speed test."""
    deadline = time.monotonic() + GUARD
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def started_by(owner: int, pid: int) -> int:
    """The process `owner` started that `pid` descends from (itself, or the serving parent above it)."""
    while True:
        parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        if parent == owner:
            return pid
        assert parent > 1, f"{pid} does not descend from {owner}"
        pid = parent


def wait_for(path: Path) -> str:
    deadline = time.monotonic() + GUARD
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
    return path.read_text()


# --- `serve MODULE:ATTR`: every way a module can fail to load is one line and exit code 2 ----------------------

FAILING_MODULES = {
    "sys_exit": ("import sys\nsys.exit(5)\n", "it called sys.exit(5)"),
    "sys_exit_text": ("import sys\nsys.exit('cannot start:\\nno config')\n", "it called sys.exit("),
    "keyboard_interrupt": ("raise KeyboardInterrupt\n", "KeyboardInterrupt"),
    "os_exit": ("import os\nos._exit(7)\n", "it ended the process with exit code 7"),
    "os_exit_zero": ("import os\nos._exit(0)\n", "it ended the process with exit code 0"),
    "killed": ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "it was killed by SIGKILL"),
    "base_exception": ("class Boom(BaseException):\n    pass\nraise Boom('base boom')\n", "Boom: base boom"),
    "multi_line": ("raise ValueError('line one\\nline two\\n\\nline three')\n",
                   "ValueError: line one line two line three"),
    "getattr_raises": ("def __getattr__(name):\n    raise RuntimeError('lazy\\nfailure')\n",
                       "reading 'TOOLS' from module 'getattr_raises' failed: RuntimeError: lazy failure"),
    "getattr_exits": ("def __getattr__(name):\n    raise SystemExit(4)\n", "it called sys.exit(4)"),
    "unprintable": ("class Odd(Exception):\n    def __str__(self):\n        raise TypeError('no')\nraise Odd()\n",
                    "Odd: (its message could not be read"),
}


@pytest.mark.parametrize("module", sorted(FAILING_MODULES))
def test_serve_reports_every_module_failure_in_one_line_with_exit_code_2(module, tmp_path):
    source, message = FAILING_MODULES[module]
    (tmp_path / f"{module}.py").write_text(source)
    done = subprocess.run([PYTHON, "-m", "agentkit.mcp", "serve", f"{module}:TOOLS"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=GUARD, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("agentkit.mcp serve: ") and message in done.stderr
    assert done.stdout == ""


def test_a_module_that_writes_to_file_descriptor_1_at_import_does_not_break_the_protocol(tmp_path):
    (tmp_path / "noisy_tools.py").write_text(textwrap.dedent('''
        import os
        from agentkit import tool
        os.write(1, b"written straight to descriptor 1\\n")
        print("printed while importing")

        @tool
        def ping() -> str:
            """pong"""
            return "pong"

        TOOLS = [ping]
    '''))
    with connect([PYTHON, "-m", "agentkit.mcp", "serve", "noisy_tools:TOOLS"], cwd=str(tmp_path),
                 connect_timeout=GUARD, env=SAME_CODE) as client:
        assert one_call(client.tools, "ping").result == "pong"
        assert "written straight to descriptor 1" in client.stderr()
        assert "printed while importing" in client.stderr()


# --- `tools` against a server that prints garbage ----------------------------------------------------------

def test_tools_against_a_server_that_prints_a_banner_and_exits_is_one_line_naming_the_banner():
    done = subprocess.run([PYTHON, "-m", "agentkit.mcp", "tools", "--timeout", "120", "--", PYTHON,
                           "mcp_raw_server.py", "banner-exit"], cwd=TESTS, capture_output=True, text=True,
                          timeout=GUARD)
    assert done.returncode == 1
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "closed the connection during the handshake" in done.stderr
    assert "not JSON-RPC (stdout is the protocol's channel), the first: 'Starting the weather server" in done.stderr


def test_tools_skips_a_banner_before_initialize_without_a_traceback():
    done = subprocess.run([PYTHON, "-m", "agentkit.mcp", "tools", "--timeout", "120", "--", PYTHON,
                           "mcp_raw_server.py", "banner"], cwd=TESTS, capture_output=True, text=True,
                          timeout=GUARD)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines()[0] == "raw (2025-11-25): 2 tools"


# --- a server that dies, breaks the stream or answers too much ---------------------------------------------

def test_a_server_killed_mid_call_is_a_connection_error_at_once_for_that_call_and_every_later_one():
    with connect(SERVE, **PATIENT) as client:
        tools = client.tools
        killed, later = one_call(tools, "die"), one_call(tools, "ping")
    for result in (killed, later):
        assert result.error_kind == "tool_error"  # not "timeout": the client knew at once
        assert envelope(result)["error"]["message"].startswith(
            "McpConnectionError: the MCP server 'mcp_process_tools' closed the connection (did it exit or crash?)")


def test_bytes_that_are_not_utf8_break_the_connection_at_once_instead_of_stalling_every_later_call():
    with connect([PYTHON, "mcp_raw_server.py", "garble"], **PATIENT) as client:
        tools = client.tools
        assert one_call(tools, "ping").result == "pong"
        garbled, later = one_call(tools, "garble"), one_call(tools, "ping")
    # line 5: the raw server (a 2025-era one) answers the client's server/discover probe, its initialize,
    # tools/list and the first call before the garbled answer
    expected = ("McpConnectionError: the MCP server 'raw' sent bytes that are not UTF-8 (line 5, byte 77: 0xff); "
                "the connection is broken")
    assert envelope(garbled)["error"]["message"] == envelope(later)["error"]["message"] == expected
    assert garbled.error_kind == later.error_kind == "tool_error"  # not "timeout"


@tool
def big(megabytes: int = 10) -> str:
    """A result of this many megabytes."""
    return "x" * (megabytes * 1_000_000)


@tool
def ping() -> str:
    """pong"""
    return "pong"


def test_a_10_mb_result_is_refused_with_both_sizes_and_the_connection_stays_up_on_stdio():
    with connect(SERVE, **PATIENT) as client:
        huge, after = one_call(client.tools, "big"), one_call(client.tools, "ping")
    assert huge.error_kind == "too_large"
    # 10 MB of text, in the JSON-RPC message that carries the envelope: never read into memory whole
    assert re.fullmatch(r"tool 'big' answered 10,000,\d{3} bytes; the limit is 4,194,304 \(set by "
                        r"connect\(max_result_bytes=\.\.\.\)\); nothing of the answer was kept",
                        envelope(huge)["error"]["message"])
    assert after.result == "pong"


def test_a_10_mb_result_is_refused_in_memory_too():
    with connect(ToolServer([big, ping])) as client:
        huge, after = one_call(client.tools, "big"), one_call(client.tools, "ping")
    assert huge.error_kind == "too_large" and "the limit is 4,194,304" in envelope(huge)["error"]["message"]
    assert after.result == "pong"


def test_a_result_over_the_limit_is_refused_over_streamable_http_and_the_session_goes_on():
    with ToolServer([big, ping]).serve_http() as url:
        with connect(url, max_result_bytes=1_000_000, connect_timeout=GUARD, timeout=GUARD) as client:
            huge, after = one_call(client.tools, "big", {"megabytes": 2}), one_call(client.tools, "ping")
    assert huge.error_kind == "too_large"
    # On 2026-07-28 the answer comes as one JSON body, measured whole; an SSE event stops at the limit
    assert re.match(r"tool 'big' answered (more than 1,000,000|2,\d{3},\d{3}) bytes; the limit is 1,000,000",
                    envelope(huge)["error"]["message"])
    assert after.result == "pong"


def test_a_result_that_breaks_its_tools_output_schema_is_a_bad_return_error_with_the_path():
    """A result that breaks the tool's own outputSchema (another server's, which does not check it): the SDK
    refuses it, and the loop gets an McpToolError of kind "bad_return" naming where, never a success."""
    from mcp.server.lowlevel import Server
    from mcp_types import CallToolResult, ListToolsResult, TextContent
    from mcp_types import Tool as McpTool

    async def list_tools(ctx, params):
        return ListToolsResult(tools=[McpTool(name="count", input_schema={"type": "object", "properties": {}},
                                              output_schema={"type": "object", "required": ["n"],
                                                             "properties": {"n": {"type": "integer"}}})])

    async def call_tool(ctx, params):
        return CallToolResult(content=[TextContent(text="many")], structured_content={"n": "many"})

    with connect(Server("liar", on_list_tools=list_tools, on_call_tool=call_tool)) as client:
        with pytest.raises(agentkit.ToolExecutionError) as error:
            agentkit.run(ScriptedModel([[call("count")], "done"]), "go", tools=client.tools, on_tool_error="raise")
    cause = error.value.__cause__
    assert isinstance(cause, McpToolError) and (cause.kind, cause.path, cause.keyword) == ("bad_return", "$.n", "type")
    assert cause.message == ("tool 'count' of the MCP server 'liar': the result breaks the tool's outputSchema: "
                             "$.n: 'many' is not of type 'integer'")


def test_an_answer_the_sdk_cannot_read_is_a_typed_mcp_error():
    """A result that is no CallToolResult at all (no `content`): the loop gets an McpError, not a crash."""
    from mcp.server.lowlevel import Server
    from mcp_types import ListToolsResult
    from mcp_types import Tool as McpTool

    async def list_tools(ctx, params):
        return ListToolsResult(tools=[McpTool(name="count", input_schema={"type": "object", "properties": {}})])

    async def call_tool(ctx, params):
        return {"contents": "many"}  # a misspelt field: not a CallToolResult

    with connect(Server("liar", on_list_tools=list_tools, on_call_tool=call_tool)) as client:
        with pytest.raises(agentkit.ToolExecutionError) as error:
            agentkit.run(ScriptedModel([[call("count")], "done"]), "go", tools=client.tools, on_tool_error="raise")
    cause = error.value.__cause__
    assert isinstance(cause, McpError) and cause.code == -32603
    # the server's SDK refuses to send it ("Handler returned an invalid result"); what reaches the loop is
    # the JSON-RPC error, typed
    assert str(cause) == "-32603 Handler returned an invalid result"


def test_the_wire_log_records_what_a_transport_hands_over_instead_of_a_message():
    from mcp.shared.exceptions import MCPError

    log = WireLog()
    log.record("<<<", MCPError(-32000, "Connection\nclosed"))  # an exception with a `message` of its own
    log.record("<<<", ValueError("not JSON"))
    assert log.messages == [("<<<", {"error": "MCPError: Connection closed"}),
                            ("<<<", {"error": "ValueError: not JSON"})]


def test_max_result_bytes_must_be_a_positive_number_of_bytes():
    for bad in (0, -1, 1.5, True, "4MB"):
        with pytest.raises(ValueError, match="max_result_bytes"):
            connect(ToolServer([ping]), max_result_bytes=bad)


# --- stale lists: refresh before refusing ---------------------------------------------------------------------

def _switchable_server():
    """A low-level SDK server whose tool list the test sets, and which never sends list_changed: what a
    client sees when a notice is still on its way."""
    from mcp.server.lowlevel import Server
    from mcp_types import CallToolResult, ListToolsResult, TextContent
    from mcp_types import Tool as McpTool

    offered = {"names": ["ping"]}

    async def list_tools(ctx, params):
        return ListToolsResult(tools=[McpTool(name=n, input_schema={"type": "object", "properties": {}})
                                      for n in offered["names"]])

    async def call_tool(ctx, params):
        return CallToolResult(content=[TextContent(text=f"{params.name}: pong")])

    return Server("switchable", on_list_tools=list_tools, on_call_tool=call_tool), offered


def test_a_tool_put_back_before_its_notice_arrives_is_called_not_refused():
    server, offered = _switchable_server()
    with connect(server) as client:
        held = client.tools                 # the model was given ping
        offered["names"] = []
        assert client.refresh() == []       # the client read the list while ping was gone
        offered["names"] = ["ping"]         # ... and the server put it back; no notice has arrived
        result = one_call(held, "ping")
        assert result.result == "ping: pong"
        assert client.refreshes == ["initial", "requested", "recheck"]


def test_a_tool_still_gone_after_the_recheck_is_refused_as_stale():
    server, offered = _switchable_server()
    with connect(server) as client:
        held = client.tools
        offered["names"] = ["pong"]
        client.refresh()
        result = one_call(held, "ping")
    assert result.error_kind == "stale_tool"
    assert envelope(result)["error"]["message"].endswith("it now offers: pong")


def test_a_removed_tool_is_stale_tool_on_stdio_as_in_memory():
    stdio = [PYTHON, "-m", "agentkit.mcp", "serve", "mcp_dynamic_tools:SERVER"]
    for target in (stdio, _dynamic_server()):
        with connect(target, **PATIENT) as client:
            for tools in (client.tools, lambda: client.tools):  # the list as it was, and the live list
                run = agentkit.run(ScriptedModel([[call("drop", {"name": "echo"})], [call("echo", {"text": "hi"})],
                                                  [call("restore")], "done"]), "go", tools=tools)
                assert run.results[0].result == "dropped echo"
                assert run.results[1].error_kind == "stale_tool", run.results[1].content()


def _dynamic_server() -> ToolServer:
    sys.path.insert(0, str(TESTS))
    try:
        import mcp_dynamic_tools
    finally:
        sys.path.remove(str(TESTS))
    return mcp_dynamic_tools.make_server()


VARIANTS = [{"type": "object", "properties": {"x": {"type": "string"}}},
            {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
            {"type": "object", "properties": {}, "additionalProperties": False}]


def _variant(name: str, schema: dict) -> Tool:
    return Tool.from_schema(name, f"{name}.", schema, lambda **arguments: {"tool": name, **arguments})


change = st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from(range(len(VARIANTS)))), max_size=3,
                  unique_by=lambda t: t[0])
step = st.one_of(st.tuples(st.just("set"), change),
                 st.tuples(st.just("call"), st.tuples(st.sampled_from("abc"),
                                                     st.sampled_from([{}, {"x": "s"}, {"x": 1}]),
                                                     st.booleans())))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=12))
def test_tool_lists_changing_between_calls_in_memory_only_ever_give_documented_answers(steps):
    server = ToolServer([_variant("a", VARIANTS[0])], name="shifting")
    with connect(server, timeout=GUARD) as client:
        held = client.tools
        for kind, detail in steps:
            if kind == "set":
                server.set_tools([_variant(name, VARIANTS[v]) for name, v in detail])
                continue
            name, arguments, live = detail
            run = agentkit.run(ScriptedModel([[call(name, arguments)], "done"]), "go",
                               tools=(lambda: client.tools) if live else held)
            result = run.results[0]
            assert result.ok or result.error_kind in {"stale_tool", "unknown_tool", "schema"}, result.content()


def test_a_stale_tool_error_is_an_mcp_tool_error_the_error_policy_sees():
    server, offered = _switchable_server()
    with connect(server) as client:
        held = client.tools
        offered["names"] = []
        client.refresh()
        with pytest.raises(agentkit.ToolExecutionError) as error:
            agentkit.run(ScriptedModel([[call("ping")], "done"]), "go", tools=held, on_tool_error="raise")
    assert isinstance(error.value.__cause__, StaleToolError)


# --- processes: nothing the kit started outlives its owner ---------------------------------------------------

def test_a_server_that_exits_at_once_leaves_no_child_of_its_own_behind(tmp_path):
    """The server ends promptly when its stdin closes, so nothing is ever killed on its account; a process
    it started (here by the shell that became the server) must still not outlive close()."""
    pid_file = tmp_path / "sleeper"
    script = (f"{PYTHON} -c 'import time; time.sleep(600)' </dev/null >/dev/null & echo $! > {pid_file}; "
              f"exec {PYTHON} mcp_sdk_servers.py weather")
    with connect(["sh", "-c", script], **PATIENT) as client:
        assert [t.name for t in client.tools] == ["get_weather", "get_time"]
        sleeper = int(wait_for(pid_file))
        assert alive(sleeper)
    assert not alive(sleeper)


def test_a_servers_own_children_are_gone_when_close_returns():
    client = connect(SERVE, **PATIENT)
    try:
        grandchild = one_call(client.tools, "start_grandchild").result
        assert alive(grandchild)
    finally:
        client.close()
    assert not alive(grandchild)  # close() ended the server's whole process group before it returned


KILLED_CLIENT = """
import sys, agentkit
from agentkit.mcp import connect
client = connect({serve!r}, cwd={cwd!r}, connect_timeout=120, env={env!r})
agentkit.run(agentkit.ScriptedModel([[agentkit.call("linger", {{"started": {started!r}}})], "done"]), "go",
             tools=client.tools)
"""


def test_sigkill_of_a_client_mid_call_leaves_no_server_and_no_server_child(tmp_path):
    started = tmp_path / "started"
    code = KILLED_CLIENT.format(serve=SERVE, cwd=str(TESTS), started=str(started), env=SAME_CODE)
    client = subprocess.Popen([PYTHON, "-c", code])
    try:
        serving, grandchild = map(int, wait_for(started).split())
        server = started_by(client.pid, serving)
        assert alive(server) and alive(serving) and alive(grandchild)  # the call is under way
    finally:
        client.kill()
        client.wait(GUARD)
    # the client never cleaned up: the end of the server's stdin is all it left behind
    assert gone(server, serving, grandchild)


@pytest.mark.parametrize("victim", ["serving process", "process the client started"])
def test_sigkill_of_a_server_mid_call_is_a_connection_error_and_leaves_no_survivors(victim, tmp_path):
    import threading

    started = tmp_path / "started"
    with connect(SERVE, **PATIENT) as client:
        results: list[agentkit.ToolResult] = []
        caller = threading.Thread(target=lambda: results.append(one_call(client.tools, "linger",
                                                                         {"started": str(started)})))
        caller.start()
        serving, grandchild = map(int, wait_for(started).split())
        server = started_by(os.getpid(), serving)
        os.kill(serving if victim == "serving process" else server, signal.SIGKILL)
        caller.join(GUARD)
        assert not caller.is_alive()
        later = one_call(client.tools, "ping")
    assert results[0].error_kind == later.error_kind == "tool_error"  # not "timeout"
    assert "McpConnectionError: the MCP server 'mcp_process_tools' closed the connection" in results[0].content()
    assert gone(server, serving, grandchild)


# --- the stdio transport's line reader: any split of the bytes gives the same messages ------------------------

class _Stdout:
    def __init__(self, chunks: list[bytes]):
        self.chunks = list(chunks)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        import anyio

        if not self.chunks:
            raise anyio.EndOfStream
        return self.chunks.pop(0)


def _read_all(data: bytes, cuts: list[int], limit: int) -> tuple[list, list[str], str | None]:
    """What the transport hands the session when the server writes `data` in pieces cut at `cuts`."""
    import anyio

    from agentkit.mcp.stdio import StdioTransport

    bounds = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    process = type("Process", (), {"stdout": _Stdout([data[a:b] for a, b in zip(bounds, bounds[1:])])})()
    transport = StdioTransport(["unused"], max_line_bytes=limit)

    async def main() -> list:
        sender, receiver = anyio.create_memory_object_stream(100)
        await transport._read(process, sender)
        return [item.message.model_dump(by_alias=True, exclude_none=True) async for item in receiver]

    return anyio.run(main), transport.noise, transport.broken


def _response(request_id: int, text: str) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}}


lines = st.lists(st.one_of(st.tuples(st.just("answer"), st.text(max_size=80)),
                           st.tuples(st.just("huge"), st.integers(200, 600)),
                           st.tuples(st.just("noise"), st.text(alphabet="abc xyz!", min_size=1, max_size=30))),
                 max_size=8)


@settings(max_examples=200, deadline=None)
@given(lines, st.lists(st.integers(0, 10_000), max_size=12))
def test_the_stdio_reader_gives_the_same_messages_however_the_bytes_are_cut(plan, cuts):
    limit = 180
    data, expected, noise = b"", [], []
    for number, (kind, detail) in enumerate(plan):
        if kind == "noise":
            data += detail.encode() + b"\n"
            noise.append(detail.strip())
            continue
        text = detail if kind == "answer" else "x" * detail
        line = json.dumps(_response(number, text)).encode()
        data += line + b"\n"
        if len(line) <= limit:
            expected.append(_response(number, text))
        else:  # over the limit: never held whole, answered with its size instead
            expected.append({"jsonrpc": "2.0", "id": number, "error": {
                "code": -32090, "message": f"the answer is {len(line):,} bytes; the limit is {limit:,}"}})
    received, kept, broken = _read_all(data, cuts, limit)
    assert received == expected
    assert kept == [n for n in noise if n][:5] and broken is None


def test_the_stdio_reader_stops_at_the_first_byte_that_is_not_utf8():
    data = json.dumps(_response(1, "fine")).encode() + b"\n" + b'{"jsonrpc": "2.0", "id": 2, "re\xc3\x28' + b"\n"
    received, _, broken = _read_all(data + json.dumps(_response(3, "never read")).encode() + b"\n", [7, 70], 10_000)
    assert received == [_response(1, "fine")]
    assert broken == "sent bytes that are not UTF-8 (line 2, byte 31: 0xc3); the connection is broken"
