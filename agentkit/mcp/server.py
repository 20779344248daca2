"""Serve agentkit Tools over MCP: any MCP client (Claude Desktop, an IDE, another agent) can call them.

    from agentkit.mcp import ToolServer

    server = ToolServer([get_weather, get_time], name="weather")
    server.run_stdio()                     # what `python -m agentkit.mcp serve app:TOOLS` does
    server.run_http(8000)                  # Streamable HTTP on http://127.0.0.1:8000/mcp
    with server.serve_http() as url: ...   # the same in a background thread, for notebooks

What a client sees:

    tools/list   each Tool's name, description and JSON Schema, exactly as @tool made them (`inputSchema`);
                 idempotent tools carry the hint `annotations.idempotentHint`
    tools/call   the arguments pass the same three gates as in the loop (agentkit.core.validate: parse ->
                 schema -> rules), then the tool runs. The answer is the loop's own envelope as text,
                 plus the value as `structuredContent`. A refused call, a tool that raises, times out or
                 returns something JSON cannot carry is an `isError: true` result whose text is the very
                 envelope the loop would send its model. An unknown tool name is a JSON-RPC error
                 (-32602), as the MCP spec asks.

The protocol itself (JSON-RPC framing, the initialize handshake, sessions, stdio and HTTP transports) is
the official MCP SDK's low-level `Server`; this module only answers tools/list and tools/call.

`set_tools()` replaces the tool set while clients are connected and sends them
`notifications/tools/list_changed` (tutorial 09 uses it to make a client's cached list stale).

Left out on purpose: resources, prompts, sampling, output schemas; run state and run limits (a server
has no run: a tool's `Update(state=...)` is answered with its message and the state dropped, and
`max_calls` is the calling loop's business); authentication; and the 2026-07-28 revision's subscription
stream (change notices go to 2025-era sessions, which is what agentkit's client speaks).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

try:
    import mcp_types
    from mcp.server.lowlevel import NotificationOptions, Server
    from mcp.shared.exceptions import MCPError
except ImportError:  # without the extra: one line naming it, not a traceback
    from . import missing_sdk

    raise missing_sdk() from None

from ..core.errors import ToolDefinitionError, ToolReturnError
from ..core.execute import AsyncioExecutor, Job
from ..core.policies import failure_result
from ..core.tools import Tool, ToolContext
from ..core.trace import Trace
from ..core.types import ToolCall, ToolResult
from ..core.validate import error_result, validate_arguments, validator_for
from . import codec

#: A request's `_meta` may carry the model's call id under this key; the envelope then names it, so the
#: text is byte-for-byte what the loop would send. Other clients get the JSON-RPC request id instead.
CALL_ID_META_KEY = "agentkit/toolCallId"

_MAX_REMEMBERED_CLIENTS = 256  # clients told about list changes; the oldest are forgotten first


class ToolServer:
    """A list of agentkit Tools as an MCP server (the SDK's low-level `Server` underneath, as `.server`).

    `trace`: a Trace to record the server-side events into (tool_start, tool_end, ...); by default each
    call gets a throwaway one.
    """

    def __init__(self, tools: Iterable[Tool], *, name: str = "agentkit", version: str | None = None,
                 instructions: str | None = None, trace: Trace | None = None):
        from .. import __version__

        self._tools = _by_name(tools)
        self.trace = trace
        self.calls = 0  # tools/call requests answered, for tests and notebooks
        self._executor = AsyncioExecutor()
        self._clients: OrderedDict[Any, tuple[Any, asyncio.AbstractEventLoop]] = OrderedDict()
        self._lock = threading.Lock()
        self._notices: set[asyncio.Task] = set()
        self.server = _ListChangedServer(name, version=version or __version__, instructions=instructions,
                                         on_list_tools=self._list_tools, on_call_tool=self._call_tool)

    @property
    def name(self) -> str:
        return self.server.name

    @property
    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def __repr__(self) -> str:
        return f"<ToolServer {self.name!r}: {', '.join(self._tools) or 'no tools'}>"

    # -- tools/list -----------------------------------------------------------------------------------------

    def definitions(self) -> list[dict]:
        """What tools/list answers, as plain JSON (camelCase, as on the wire)."""
        return [_definition(t) for t in self._tools.values()]

    async def _list_tools(self, ctx: Any, params: Any) -> mcp_types.ListToolsResult:
        self._remember(ctx)
        return mcp_types.ListToolsResult(tools=[mcp_types.Tool.model_validate(d) for d in self.definitions()])

    # -- tools/call -----------------------------------------------------------------------------------------

    async def _call_tool(self, ctx: Any, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        self._remember(ctx)
        self.calls += 1
        tool = self._tools.get(params.name)
        if tool is None:
            # A protocol error, not a tool result: the spec lists unknown tools among JSON-RPC errors.
            raise MCPError(codec.INVALID_PARAMS, f"Unknown tool: {params.name}",
                           {"tools": list(self._tools)})
        call = ToolCall.from_raw(_call_id(ctx, params), params.name,
                                 params.arguments if params.arguments is not None else {})
        result = await self.answer(tool, call)
        return mcp_types.CallToolResult.model_validate(codec.result_to_mcp(result))

    async def answer(self, tool: Tool, call: ToolCall) -> ToolResult:
        """One call to one tool, as the loop would answer it under on_tool_error="report".

        The same steps as the loop's phase 5: gates -> execute (with the tool's timeout) -> envelope.
        """
        checked = validate_arguments(tool, call.raw_arguments)  # parse -> schema -> rules
        if not checked.ok:
            return error_result(call, checked)
        trace = self.trace if self.trace is not None else Trace()
        arguments = checked.arguments

        def invoke(attempt: int) -> Any:
            context = ToolContext(call.id, tool.name, attempt=attempt, trace=trace) if tool.context_param else None
            return tool.invoke(arguments, context)

        outcome = await self._executor.arun_job(Job(call.id, tool.name, invoke, tool.is_async, tool.timeout), trace)
        error = outcome.error
        if error is None:
            try:
                value, _state = tool.split_return(outcome.value)  # no run state on a server: only the message
                return ToolResult.success(call, value)
            except ToolReturnError as exc:
                error = exc
        return failure_result(call, error)

    # -- changing the tool set --------------------------------------------------------------------------------

    def set_tools(self, tools: Iterable[Tool]) -> None:
        """Replace the tools and send `notifications/tools/list_changed` to every client that has listed
        or called them. Safe from any thread; from inside the server's own loop the notices are sent
        in the background."""
        self._tools = _by_name(tools)
        with self._lock:
            clients = list(self._clients.values())
        for session, loop in clients:
            if loop.is_closed():  # that client's server has stopped
                self._forget(session)
                continue
            if _running_loop() is loop:
                task = loop.create_task(session.send_tool_list_changed())
                self._notices.add(task)  # a task nobody references may be collected before it runs
                task.add_done_callback(self._notices.discard)
                continue
            try:
                asyncio.run_coroutine_threadsafe(session.send_tool_list_changed(), loop).result(timeout=10)
            except Exception:  # noqa: BLE001 — a client that went away is simply not told
                self._forget(session)

    def _forget(self, session: Any) -> None:
        with self._lock:
            self._clients = OrderedDict((k, v) for k, v in self._clients.items() if v[0] is not session)

    def _remember(self, ctx: Any) -> None:
        # The SDK hands handlers a per-request session; its connection is what identifies a client (the
        # SDK has no public handle for it), and the session's standalone channel outlives the request.
        key = getattr(ctx.session, "_connection", ctx.session)
        with self._lock:
            self._clients[key] = (ctx.session, asyncio.get_running_loop())
            self._clients.move_to_end(key)
            while len(self._clients) > _MAX_REMEMBERED_CLIENTS:
                self._clients.popitem(last=False)

    # -- transports -------------------------------------------------------------------------------------------

    def run_stdio(self) -> None:
        """Serve one client on stdin/stdout until stdin closes (blocking). Logs go to stderr."""
        import anyio

        anyio.run(self._serve_stdio)

    async def _serve_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        try:
            async with stdio_server() as (read_stream, write_stream):
                await self.server.run(read_stream, write_stream, self.server.create_initialization_options())
        finally:
            self._executor.close()

    def http_app(self) -> Any:
        """The Streamable HTTP ASGI app (a fresh one each time: the SDK's session manager runs once)."""
        return self.server.streamable_http_app(streamable_http_path="/mcp")

    def run_http(self, port: int = 8000, host: str = "127.0.0.1", log_level: str = "warning",
                 announce: Any = None) -> None:
        """Serve Streamable HTTP on http://127.0.0.1:PORT/mcp (blocking; port 0: the OS chooses).

        Loopback only. `announce(url)` is called once the port is bound (the CLI prints it)."""
        import uvicorn

        from ..sim.server import listening_socket

        _check_loopback(host)
        sock = listening_socket(host, port)  # bind first: "address in use" is reported before anything runs
        url = f"http://{host}:{sock.getsockname()[1]}/mcp"
        if announce is not None:
            announce(url)
        try:
            uvicorn.Server(_uvicorn_config(self.http_app(), host, port, log_level)).run(sockets=[sock])
        finally:
            sock.close()
            self._executor.close()

    @contextlib.contextmanager
    def serve_http(self, port: int = 0, host: str = "127.0.0.1", startup_timeout: float = 10.0) -> Iterator[str]:
        """Serve Streamable HTTP in a background thread; yields the endpoint URL (`.../mcp`).

        `port=0` lets the OS choose. For notebooks and tests: a kernel's own event loop must not host the
        server a synchronous client then talks to.
        """
        import time

        import uvicorn

        from ..sim.server import listening_socket

        _check_loopback(host)
        sock = listening_socket(host, port)
        server = uvicorn.Server(_uvicorn_config(self.http_app(), host, port, "warning"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True,
                                  name=f"agentkit-mcp-http:{sock.getsockname()[1]}")
        thread.start()
        try:
            deadline = time.monotonic() + startup_timeout
            while not server.started:
                if not thread.is_alive() or time.monotonic() > deadline:
                    raise RuntimeError(f"the MCP HTTP server did not start on {host}:{sock.getsockname()[1]}")
                time.sleep(0.005)
            yield f"http://{host}:{sock.getsockname()[1]}/mcp"
        finally:
            server.should_exit = True
            thread.join(10)
            sock.close()


class _ListChangedServer(Server):
    """The SDK's low-level Server, announcing `tools.listChanged: true` on every transport.

    The in-memory, stdio and HTTP runners all call `create_initialization_options()` with no arguments;
    this is the one place to say that this server sends list-changed notices."""

    def create_initialization_options(self, notification_options: NotificationOptions | None = None,
                                      experimental_capabilities: dict | None = None,
                                      extensions: dict | None = None) -> Any:
        return super().create_initialization_options(notification_options or NotificationOptions(tools_changed=True),
                                                     experimental_capabilities, extensions)


def _by_name(tools: Iterable[Tool]) -> dict[str, Tool]:
    by_name: dict[str, Tool] = {}
    for t in tools:
        if not isinstance(t, Tool):
            raise ToolDefinitionError(f"an MCP server serves agentkit Tools (from @tool or Tool.from_schema), "
                                      f"not {type(t).__name__}: {t!r:.80}")
        if t.name in by_name:
            raise ToolDefinitionError(f"two tools are named {t.name!r}; MCP clients call tools by name")
        validator_for(t.parameters, t.name)  # compiled now, so the first call does not pay for it
        by_name[t.name] = t
    return by_name


def _definition(tool: Tool) -> dict:
    definition = codec.tool_to_mcp(tool.spec)
    if tool.idempotent:
        definition["annotations"] = {"idempotentHint": True}
    return definition


def _call_id(ctx: Any, params: mcp_types.CallToolRequestParams) -> str:
    meta = params.meta or {}
    given = meta.get(CALL_ID_META_KEY) if isinstance(meta, dict) else None
    return given if isinstance(given, str) and given else str(ctx.request_id)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _check_loopback(host: str) -> None:
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(f"agentkit's MCP server binds loopback only (127.0.0.1), not {host!r}: it has no "
                         f"authentication")


def _uvicorn_config(app: Any, host: str, port: int, log_level: str) -> Any:
    import uvicorn

    # lifespan "on": the SDK's Streamable HTTP session manager starts and stops in the app's lifespan.
    return uvicorn.Config(app, host=host, port=port, loop="asyncio", lifespan="on", log_config=None,
                          log_level=log_level, access_log=False, server_header=False)


# ----------------------------------------------------------------------------------------------------------
# MODULE:ATTR
# ----------------------------------------------------------------------------------------------------------

_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def load_server(spec: str, name: str | None = None) -> ToolServer:
    """Import `MODULE:ATTR` and serve what it names: a Tool, a list or tuple of Tools, or a ToolServer.

    Every problem is a ValueError with one line that says what to fix (the CLI prints it as is), however
    the module fails: an exception, `sys.exit()`, KeyboardInterrupt or any other BaseException, at import
    or in a module `__getattr__`, with a message of any number of lines. (A module that ends the process
    outright, `os._exit()`, cannot be caught in the process itself: the CLI loads it in a child it watches.)
    Anything the module prints while it is imported goes to stderr: on stdio, stdout is the protocol.
    """
    module_name, colon, attr = spec.partition(":")
    if not colon or not _DOTTED.fullmatch(module_name) or not _DOTTED.fullmatch(attr):
        raise ValueError(f"{spec!r} is not MODULE:ATTR (for example myapp.tools:TOOLS)")
    try:
        with contextlib.redirect_stdout(sys.stderr):
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise ValueError(f"no module named {module_name!r}: run from the folder that contains it, or put "
                             f"that folder on PYTHONPATH") from None
        raise ValueError(f"importing {module_name!r} failed: {_one_line(exc)}") from None
    except BaseException as exc:  # noqa: BLE001 — the module's own bug (or exit), told in one line
        raise ValueError(f"importing {module_name!r} failed: {_failure(exc)}") from None
    value: Any = module
    for part in attr.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise ValueError(f"module {module_name!r} has no attribute {attr!r}") from None
        except BaseException as exc:  # noqa: BLE001 — e.g. a module __getattr__ that fails
            raise ValueError(f"reading {attr!r} from module {module_name!r} failed: {_failure(exc)}") from None
    if isinstance(value, ToolServer):
        return value
    if isinstance(value, Tool):
        value = [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(t, Tool) for t in value):
        try:
            return ToolServer(value, name=name or module_name)
        except ToolDefinitionError as exc:
            raise ValueError(f"{spec}: {_one_line(exc)}") from None
    hint = "; decorate it with @agentkit.tool" if callable(value) else ""
    raise ValueError(f"{spec} is {_a_type(value)}, not a Tool, a list of Tools or a ToolServer{hint}")


def _failure(exc: BaseException) -> str:
    """What a module did instead of loading, on one line."""
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({_one_line(repr(exc.code))})"
    text = _one_line(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _one_line(value: Any) -> str:
    try:
        text = str(value)
    except BaseException:  # noqa: BLE001 — an exception whose own __str__ fails still gets its line
        text = f"(its message could not be read: {type(value).__name__}.__str__ failed)"
    return " ".join(text.split())[:500]


def _a_type(value: Any) -> str:
    if isinstance(value, (list, tuple)) and not value:
        return f"an empty {type(value).__name__}"
    name = type(value).__name__
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"
