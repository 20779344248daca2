"""Serve agentkit Tools over MCP: any MCP client (Claude Desktop, an IDE, another agent) can call them.

    from agentkit.mcp import ToolServer

    server = ToolServer([get_weather, get_time], name="weather")
    server.run_stdio()                     # what `python -m agentkit.mcp serve app:TOOLS` does
    server.run_http(8000)                  # Streamable HTTP on http://127.0.0.1:8000/mcp
    with server.serve_http() as url: ...   # the same in a background thread, for notebooks

Both revisions, on every transport. A client that opens with `initialize` gets 2025-11-25 (the handshake,
then a session); a client whose requests carry `_meta` with `io.modelcontextprotocol/protocolVersion`
gets 2026-07-28, stateless: every request stands alone, and `server/discover` says what the server
speaks (the 2026-07-28 changelog, items 2 and 3). The SDK's low-level `Server` tells the two apart and
answers a `_meta` version it does not speak with the revision's `UnsupportedProtocolVersionError`
(-32022, listing the versions it does speak).

What a client sees:

    tools/list   each Tool's name, description and JSON Schema, exactly as @tool made them (`inputSchema`),
                 and an `outputSchema` from the return type (agentkit.mcp.structured); idempotent tools carry
                 the hint `annotations.idempotentHint`. On 2026-07-28 the listing carries the cache hints
                 `ttlMs` (`list_ttl`, 0 by default: the list may change at any moment) and `cacheScope`
                 "public" (every caller gets the same list).
    tools/call   the arguments pass the same three gates as in the loop (agentkit.core.validate: parse ->
                 schema -> rules), then the tool runs. The answer is the loop's own envelope as text,
                 plus the value as `structuredContent`, checked against the tool's `outputSchema` first: a
                 value that breaks it is an `isError` result of kind "bad_return", never a success. A
                 refused call, a tool that raises, times out or returns something JSON cannot carry is an
                 `isError: true` result whose text is the very envelope the loop would send its model. An
                 unknown tool name is a JSON-RPC error (-32602), as the MCP spec asks. A tool that calls
                 `ask_user` gets its answer from the client (agentkit.mcp.inputs).

`set_tools()` replaces the tool set while clients are connected and tells them: on 2026-07-28 with
`notifications/tools/list_changed` on each `subscriptions/listen` stream that asked for it (tagged with
the stream's `io.modelcontextprotocol/subscriptionId`), on 2025-11-25 with the same notice on the
session. A change made while a call runs is told before that call's answer goes out, so on an ordered
transport (stdio, in memory) a client knows the list changed before it reads the answer.

Tools whose return type has no JSON Schema are refused one by one, each with its reason in `problems`;
the others are served.

Left out on purpose: resources, prompts, sampling; run state and run limits (a server has no run: a
tool's `Update(state=...)` is answered with its message and the state dropped, and `max_calls` is the
calling loop's business; state that spans calls travels in a handle the tool mints and the model passes
back as an ordinary argument, the 2026-07-28 pattern); authentication.
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
from dataclasses import dataclass, field
from typing import Any

try:
    import mcp_types
    from mcp.server.caching import CacheHint
    from mcp.server.lowlevel import NotificationOptions, Server
    from mcp.shared.exceptions import MCPError
    from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
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
from . import codec, inputs, structured

#: A request's `_meta` may carry the model's call id under this key; the envelope then names it, so the
#: text is byte-for-byte what the loop would send. Other clients get the JSON-RPC request id instead.
CALL_ID_META_KEY = "agentkit/toolCallId"

_MAX_REMEMBERED_CLIENTS = 256  # clients told about list changes; the oldest are forgotten first
_MAX_INPUT_ROUNDS = 8  # questions answered inside one 2025-era call before the server gives up
_NOTICE_GRACE = 5.0  # seconds an answer waits for the change notices sent during its call


@dataclass(eq=False)
class _Listener:
    """Someone to tell when the tools change: a 2025-era session, or a 2026-07-28 listen stream."""

    session: Any
    loop: asyncio.AbstractEventLoop
    subscription: Any = None  # the listen request's id; None for a 2025-era session
    ready: asyncio.Event = field(default_factory=asyncio.Event)  # a stream's ack went out first

    async def tell(self) -> None:
        if self.subscription is None:
            await self.session.send_tool_list_changed()
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.ready.wait(), _NOTICE_GRACE)
        meta = {SUBSCRIPTION_ID_META_KEY: self.subscription}
        notice = mcp_types.ToolListChangedNotification(params=mcp_types.NotificationParams(_meta=meta))
        await self.session.send_notification(notice, related_request_id=self.subscription)


class ToolServer:
    """A list of agentkit Tools as an MCP server (the SDK's low-level `Server` underneath, as `.server`).

    `trace`: a Trace to record the server-side events into (tool_start, tool_end, ...); by default each
    call gets a throwaway one. `list_ttl`: seconds a 2026-07-28 client may keep the tool list (`ttlMs`).
    """

    def __init__(self, tools: Iterable[Tool], *, name: str = "agentkit", version: str | None = None,
                 instructions: str | None = None, trace: Trace | None = None, list_ttl: float = 0.0):
        from .. import __version__

        if not (isinstance(list_ttl, (int, float)) and list_ttl >= 0):
            raise ValueError(f"list_ttl={list_ttl!r}: give a number of seconds, 0 or more")
        self.problems: list[str] = []  # tools refused, one line each (a return type with no JSON Schema)
        self._tools, self._outputs = self._serveable(tools)
        self.trace = trace
        self.calls = 0  # tools/call requests answered, for tests and notebooks
        self._executor = AsyncioExecutor()
        self._legacy: OrderedDict[Any, _Listener] = OrderedDict()  # 2025-era sessions, by connection
        self._streams: dict[Any, _Listener] = {}  # 2026-07-28 listen streams asking for tool changes
        self._lock = threading.Lock()
        self._notices: set[asyncio.Task] = set()
        self._generation = 0  # set_tools calls so far
        hint = CacheHint(ttl_ms=round(list_ttl * 1000), scope="public")
        self.server = _ListChangedServer(name, version=version or __version__, instructions=instructions,
                                         on_list_tools=self._list_tools, on_call_tool=self._call_tool,
                                         on_subscriptions_listen=self._listen, cache_hints={"tools/list": hint})

    @property
    def name(self) -> str:
        return self.server.name

    @property
    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def __repr__(self) -> str:
        return f"<ToolServer {self.name!r}: {', '.join(self._tools) or 'no tools'}>"

    def _serveable(self, tools: Iterable[Tool]) -> tuple[dict[str, Tool], dict[str, tuple[dict, bool]]]:
        """The tools by name and their output schemas; a tool whose return type has no schema is left out,
        with its reason in `problems` (a bad list — not Tools, two of one name — still raises)."""
        served: dict[str, Tool] = {}
        outputs: dict[str, tuple[dict, bool]] = {}
        problems: list[str] = []
        for name, tool in _by_name(tools).items():
            try:
                schema, wrapped = structured.output_schema(tool)
                if schema is not None:
                    validator_for(schema, name)  # compiled now, like the input schema
            except ToolDefinitionError as exc:
                problems.append(str(exc))
                continue
            served[name] = tool
            if schema is not None:
                outputs[name] = (schema, wrapped)
        self.problems = problems
        return served, outputs

    # -- tools/list -----------------------------------------------------------------------------------------

    def definitions(self) -> list[dict]:
        """What tools/list answers, as plain JSON (camelCase, as on the wire)."""
        return [_definition(t, self._outputs.get(name)) for name, t in self._tools.items()]

    async def _list_tools(self, ctx: Any, params: Any) -> mcp_types.ListToolsResult:
        self._remember(ctx)
        return mcp_types.ListToolsResult(tools=[mcp_types.Tool.model_validate(d) for d in self.definitions()])

    # -- tools/call -----------------------------------------------------------------------------------------

    async def _call_tool(self, ctx: Any, params: mcp_types.CallToolRequestParams) -> Any:
        self._remember(ctx)
        self.calls += 1
        generation = self._generation
        tool = self._tools.get(params.name)
        if tool is None:
            # A protocol error, not a tool result: the spec lists unknown tools among JSON-RPC errors.
            raise MCPError(codec.INVALID_PARAMS, f"Unknown tool: {params.name}",
                           {"tools": list(self._tools)})
        call = ToolCall.from_raw(_call_id(ctx, params), params.name,
                                 params.arguments if params.arguments is not None else {})
        capabilities = ctx.session.client_capabilities
        can_ask = capabilities is not None and capabilities.elicitation is not None
        given = _input_responses(params)
        for _ in range(_MAX_INPUT_ROUNDS):
            result = await self._answer(tool, call, given, can_ask)
            if not isinstance(result, inputs.InputNeeded):
                break
            if _modern(ctx):  # 2026-07-28: hand the questions back; the client retries with the answers
                return mcp_types.InputRequiredResult(input_requests={
                    key: mcp_types.ElicitRequest(params=mcp_types.ElicitRequestFormParams(
                        message=r.message, requested_schema=r.schema)) for key, r in result.requests.items()})
            for key, r in result.requests.items():  # 2025-11-25: ask now, inside this call
                reply = await ctx.session.elicit_form(r.message, r.schema, related_request_id=ctx.request_id)
                given[key] = (reply.action, reply.content)
        else:
            result = ToolResult.failure(call, "input_unavailable", f"tool {tool.name!r} asked for input more than "
                                                                   f"{_MAX_INPUT_ROUNDS} times in one call")
        if self._generation != generation:
            await self._notices_sent()  # the change notices of this call go out before its answer
        return mcp_types.CallToolResult.model_validate(
            codec.result_to_mcp(result, structured=self._structured(tool, result)))

    async def answer(self, tool: Tool, call: ToolCall) -> ToolResult:
        """One call to one tool, as the loop would answer it under on_tool_error="report".

        The same steps as the loop's phase 5: gates -> execute (with the tool's timeout) -> envelope,
        then the tool's outputSchema. (A tool that asks for input gets "input_unavailable" here: there is
        no client to ask.)
        """
        result = await self._answer(tool, call, {}, False)
        assert isinstance(result, ToolResult)  # can_ask=False: ask_user fails the call instead of asking
        return result

    async def _answer(self, tool: Tool, call: ToolCall, given: dict, can_ask: bool) -> ToolResult | inputs.InputNeeded:
        checked = validate_arguments(tool, call.raw_arguments)  # parse -> schema -> rules
        if not checked.ok:
            return error_result(call, checked)
        trace = self.trace if self.trace is not None else Trace()
        arguments = checked.arguments

        def invoke(attempt: int) -> Any:
            context = ToolContext(call.id, tool.name, attempt=attempt, trace=trace) if tool.context_param else None
            return tool.invoke(arguments, context)

        token = inputs.answering(given, can_ask)  # what this run of the tool's ask_user calls find
        try:
            outcome = await self._executor.arun_job(Job(call.id, tool.name, invoke, tool.is_async, tool.timeout),
                                                    trace)
        finally:
            inputs.done_answering(token)
        error = outcome.error
        if isinstance(error, inputs.InputNeeded):
            return error
        if error is None:
            try:
                value, _state = tool.split_return(outcome.value)  # no run state on a server: only the message
                return self._checked_output(tool, call, ToolResult.success(call, value))
            except ToolReturnError as exc:
                error = exc
        return failure_result(call, error)

    def _checked_output(self, tool: Tool, call: ToolCall, result: ToolResult) -> ToolResult:
        """The result, or a "bad_return" failure when its value breaks the tool's outputSchema."""
        output = self._outputs.get(tool.name)
        if output is None:
            return result
        schema, wrapped = output
        problem = structured.output_problem(schema, structured.structured_value(codec.jsonable(result.result),
                                                                                wrapped), tool.name)
        if problem is None:
            return result
        return ToolResult.failure(call, "bad_return", problem["message"], problem["path"], problem["keyword"])

    def _structured(self, tool: Tool, result: ToolResult) -> Any:
        """`structuredContent` for a successful result of a tool with an outputSchema, else codec's default."""
        output = self._outputs.get(tool.name)
        if output is None or not result.ok:
            return codec.DEFAULT
        return structured.structured_value(codec.jsonable(result.result), output[1])

    # -- changing the tool set --------------------------------------------------------------------------------

    def set_tools(self, tools: Iterable[Tool]) -> None:
        """Replace the tools and tell every client: `notifications/tools/list_changed` on each 2026-07-28
        listen stream that asked for it, and to each 2025-era client that has listed or called them.
        Safe from any thread; from inside the server's own loop the notices are sent in the background
        (and a call that changed the tools waits for them before it answers)."""
        self._tools, self._outputs = self._serveable(tools)
        self._generation += 1
        with self._lock:
            listeners = [*self._legacy.values(), *self._streams.values()]
        by_loop: dict[asyncio.AbstractEventLoop, list[_Listener]] = {}
        for listener in listeners:
            by_loop.setdefault(listener.loop, []).append(listener)
        for loop, group in by_loop.items():
            if loop.is_closed():  # that client's server has stopped
                for listener in group:
                    self._forget(listener)
                continue
            if _running_loop() is loop:
                task = loop.create_task(self._tell(group))
                self._notices.add(task)  # a task nobody references may be collected before it runs
                task.add_done_callback(self._notices.discard)
                continue
            with contextlib.suppress(Exception):  # a loop that stopped meanwhile: its clients are gone
                asyncio.run_coroutine_threadsafe(self._tell(group), loop).result(timeout=10)

    async def _tell(self, listeners: list[_Listener]) -> None:
        for listener in listeners:
            try:
                await listener.tell()
            except Exception:  # noqa: BLE001 — a client that went away is simply not told
                self._forget(listener)

    async def _notices_sent(self) -> None:
        loop = asyncio.get_running_loop()
        pending = [task for task in list(self._notices) if task.get_loop() is loop]
        if pending:
            await asyncio.wait(pending, timeout=_NOTICE_GRACE)

    def _forget(self, listener: _Listener) -> None:
        with self._lock:
            self._legacy = OrderedDict((k, v) for k, v in self._legacy.items() if v is not listener)
            self._streams = {k: v for k, v in self._streams.items() if v is not listener}

    def _remember(self, ctx: Any) -> None:
        # A 2025-era client is told on its session; the SDK hands handlers a per-request session, whose
        # connection identifies the client (the SDK has no public handle for it) and outlives the request.
        # A 2026-07-28 client is told only on a listen stream it opened: nothing to remember here.
        if _modern(ctx):
            return
        key = getattr(ctx.session, "_connection", ctx.session)
        with self._lock:
            self._legacy[key] = _Listener(ctx.session, asyncio.get_running_loop())
            self._legacy.move_to_end(key)
            while len(self._legacy) > _MAX_REMEMBERED_CLIENTS:
                self._legacy.popitem(last=False)

    async def _listen(self, ctx: Any, params: mcp_types.SubscriptionsListenRequestParams) -> Any:
        """`subscriptions/listen` (2026-07-28): acknowledge what is honored (tool-list changes: this server
        has no prompts or resources), then keep the stream open; set_tools writes the notices on it."""
        subscription = ctx.request_id
        if subscription is None:
            raise MCPError(codec.INVALID_REQUEST, "subscriptions/listen needs a request id")
        wants_tools = bool(params.notifications.tools_list_changed)
        listener = _Listener(ctx.session, asyncio.get_running_loop(), subscription)
        key = object()
        if wants_tools:  # registered before the ack: a change made while it is written is not lost
            with self._lock:
                self._streams[key] = listener
        meta = {SUBSCRIPTION_ID_META_KEY: subscription}
        honored = mcp_types.SubscriptionFilter(tools_list_changed=True if wants_tools else None)
        try:
            await ctx.session.send_notification(mcp_types.SubscriptionsAcknowledgedNotification(
                params=mcp_types.SubscriptionsAcknowledgedNotificationParams(notifications=honored, _meta=meta)),
                related_request_id=subscription)
            listener.ready.set()
            await asyncio.Event().wait()  # until the client goes away, which cancels this request
        finally:
            with self._lock:
                self._streams.pop(key, None)
        return mcp_types.SubscriptionsListenResult(_meta=meta)  # pragma: no cover - a stream ends by cancel

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
    """The SDK's low-level Server, announcing `tools.listChanged: true` on every transport, and both revisions.

    The in-memory, stdio and HTTP runners all call `create_initialization_options()` with no arguments;
    this is the one place to say that this server sends list-changed notices. (On 2026-07-28 the SDK
    derives `listChanged` from the subscriptions/listen handler.) `server/discover` lists 2025-11-25 too:
    this server answers `initialize` with it, and the versioning page's own example of a dual-era server's
    `supported` list names both."""

    async def _handle_discover(self, ctx: Any, params: Any) -> Any:
        result = await super()._handle_discover(ctx, params)
        legacy = [v for v in codec.PROTOCOL_VERSIONS if v not in result.supported_versions]
        return result.model_copy(update={"supported_versions": [*result.supported_versions, *legacy]})

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


def _definition(tool: Tool, output: tuple[dict, bool] | None) -> dict:
    definition = codec.tool_to_mcp(tool.spec)
    if output is not None:
        definition["outputSchema"] = output[0]
    if tool.idempotent:
        definition["annotations"] = {"idempotentHint": True}
    return definition


def _modern(ctx: Any) -> bool:
    """Is this request on the stateless revision (2026-07-28), not a 2025-era session?"""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _input_responses(params: mcp_types.CallToolRequestParams) -> dict[str, tuple[str, dict | None]]:
    """The answers a 2026-07-28 retry carries (`inputResponses`): key -> (action, content)."""
    given: dict[str, tuple[str, dict | None]] = {}
    for key, response in (params.input_responses or {}).items():
        data = response.model_dump(by_alias=True, exclude_none=True) if hasattr(response, "model_dump") else response
        if isinstance(data, dict) and isinstance(data.get("action"), str):
            given[key] = (data["action"], data.get("content") if isinstance(data.get("content"), dict) else None)
    return given


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
