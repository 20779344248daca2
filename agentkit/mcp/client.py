"""Use any MCP server's tools in the agent loop: each becomes an agentkit Tool whose calls go over tools/call.

    import sys, agentkit
    from agentkit.mcp import connect

    with connect([sys.executable, "-m", "agentkit.mcp", "serve", "myapp.tools:TOOLS"]) as server:
        run = agentkit.run(model, "Weather in Paris?", tools=server.tools)

`connect(target)` takes a command (a list, or one string: the server runs as a child process on stdio),
an `http://.../mcp` URL (Streamable HTTP), or a server object — an agentkit `ToolServer`, or the SDK's
`Server` / `MCPServer` — run in memory (tests, notebooks). It lists the tools and hands out `client.tools`.
The protocol work is the official MCP SDK's `Client`; this module translates between it and the loop.

Which revision. By default (`protocol="auto"`) the client speaks the newest revision the server offers:
it asks `server/discover` first, and a server that answers it is spoken to statelessly on 2026-07-28 —
no handshake, every request carrying its protocol version, client info and capabilities in `_meta` (the
2026-07-28 changelog, items 2 and 3); any other answer means a 2025-era server, and the client falls back
to the `initialize` handshake (the specification's versioning page, "Backward Compatibility"). `protocol=
"2025-11-25"` forces the handshake, `protocol="2026-07-28"` the stateless revision; `client.protocol_version`
says which one is spoken.

Everything the loop does still applies, because an MCP tool is an ordinary Tool: its arguments pass the
three gates against the server's `inputSchema` before anything is sent, and limits, approval, timeouts
and error policies work unchanged. How answers map:

    result                          the tool returns `structuredContent` (or the text; resource links kept,
                                    see codec.result_from_mcp): the loop wraps it
    a result that breaks the        raises McpToolError, kind "bad_return", with the path: a tool that lists
      tool's `outputSchema`           an outputSchema promises it (agentkit.mcp.structured)
    isError: true                   raises McpToolError: the error policy decides (report, raise, retry)
    input_required (2026-07-28),    `on_input(request)` answers (agentkit.mcp.inputs: the same shapes as an
      elicitation (2025-11-25)        approval); without it the client declares no elicitation capability
    JSON-RPC error                  raises McpError (agentkit.mcp.codec) with the code; also an answer
                                    the SDK cannot read (it breaks the protocol), with INTERNAL_ERROR
    no answer within `timeout`      raises ToolTimeout (the envelope's kind is "timeout"); the SDK sends
                                    notifications/cancelled to the server
    over `max_result_bytes`         raises McpToolError, kind "too_large", with both sizes; the connection
                                    stays up (on stdio the answer is never held in memory whole)
    server gone (crash, exit,       raises McpConnectionError at once, for this and every later call; so
      SIGKILL), or it broke the       does a server that writes bytes that are not UTF-8 (the connection
      stream                          is broken: nothing later on it could be trusted)

A stale tool list. A server may change its tools while we hold the list. Two signals say so: a
`notifications/tools/list_changed` notice (the list is marked stale, `client.stale` is set), or the server's
own "unknown tool" error. On 2026-07-28 the notice comes only on a `subscriptions/listen` stream the client
opened (changelog item 4), so the client opens one (`client.listening`) before it lists the tools, when the
server's `server/discover` says `tools.listChanged`; a 2025-era server sends it on the session unasked. A
notice marks the list stale the moment it is read off the transport, before any later message: on an ordered
transport (stdio, in memory) a change the server tells before it answers a call — an agentkit server does — is
known when that answer reaches the loop, so the next turn's `client.tools` is current. Either way the client
lists the tools again before it answers the call, then: the tool is gone -> StaleToolError naming the tools
the server offers now (the model reads it); the tool's schema changed and the arguments no longer fit ->
StaleToolError with the gate's message; otherwise the call is sent (once more, after an "unknown tool" error:
one retry). A call is refused only on a list read for it: a notice may still be on its way (the server removed
a tool and has put it back), so a call checked against an older list has the tools listed again before it is
refused. Given `tools=client.tools`, a run keeps the list it started with; given `tools=lambda: client.tools`,
the loop asks before every model call, so the new list reaches the model at its next turn (and the trace
records `tools_changed`).

Why a thread: the SDK's session lives on one event loop, but `agentkit.run()` calls tools from worker
threads and `arun()` from the caller's loop (a notebook has its own). The client therefore keeps the
session on a private event loop in a daemon thread, and every call — from any thread or loop — is handed
to it (anyio's BlockingPortal). One session is thus safe to share between threads.

Processes. A command runs in a process group of its own (agentkit.mcp.stdio); close() ends the server the
spec's way (stdin closed, then SIGTERM, then SIGKILL) and then whatever is left of its group, so a server's
own children go with it. A client killed outright (SIGKILL) cannot clean up: its servers' stdin closes, and
an agentkit server exits on that at once, even in the middle of a call. A server that ignores the end of
its stdin, or a child that leaves the group (setsid), is beyond a client's reach.

Left out on purpose: resources, prompts, sampling, URL-mode elicitation; reconnecting to a server that
died, or re-listening when a listen stream is lost (the next call lists the tools again instead);
authentication; the client-side response cache of 2026-07-28 (`ttlMs`: the loop's list must be the
server's, so every listing asks).
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import json
import queue
import re
import shlex
import sys
import tempfile
import threading
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, AsyncIterator, Sequence

try:
    import mcp_types
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.lowlevel import Server
    from mcp.server.mcpserver import MCPServer
    from mcp.shared.exceptions import MCPError
    from mcp.shared.memory import create_client_server_memory_streams
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
except ImportError:  # without the extra: one line naming it, not a traceback
    from . import missing_sdk

    raise missing_sdk() from None

from ..core.errors import AgentkitError, ToolDefinitionError, ToolFailure, ToolTimeout
from ..core.tools import Tool, ToolContext
from ..core.types import ToolCall, ToolResult
from ..core.validate import validate_arguments, validator_for
from . import codec, inputs, structured
from .codec import McpError
from .server import CALL_ID_META_KEY, ToolServer
from .stdio import LINE_TOO_LONG, StdioTransport
from .wirelog import RECEIVED, WireLog, recorded

#: The ToolContext goes to the call under this keyword; a server whose tool has a parameter of this name
#: cannot be used (it would be overwritten).
_CONTEXT = "_agentkit_context"
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_MAX_PAGES = 100  # tools/list pages; a paginator that never ends cannot hang us
#: The largest answer (one JSON-RPC message, in bytes) a client takes by default: far more than a model's
#: context holds, far less than what would hurt the process. connect(max_result_bytes=...) changes it.
MAX_RESULT_BYTES = 4 * 1024 * 1024
#: `connect(protocol=...)`: the SDK's `mode` for each choice. "2026-07-28" asks server/discover too (what the
#: server says of itself: its name, `tools.listChanged`), and then refuses a server that answers otherwise.
_MODES = {"auto": "auto", "2026-07-28": "auto", "2025-11-25": "legacy"}
#: The tool a call over MCP is for (its agentkit name, and its trace's `record`), for `on_input`.
_CALLING: contextvars.ContextVar[tuple[str, Any] | None] = contextvars.ContextVar("agentkit_mcp_calling",
                                                                                   default=None)


# ----------------------------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------------------------

class McpConnectionError(AgentkitError, ConnectionError):
    """The MCP server could not be started or reached, did not answer initialize, or went away."""


class McpToolError(ToolFailure):
    """The server answered a tools/call with `isError: true`: the loop sends its kind and words on.

    `kind`, `path` and `keyword` come from an agentkit server's envelope (kind "schema", "rule",
    "tool_error", ...); from other servers kind is "tool_error" and the message is the server's text.
    """

    def __init__(self, message: str, kind: str = "tool_error", path: str | None = None,
                 keyword: str | None = None):
        super().__init__(kind, message, path, keyword)
        if kind == "tool_error":  # the server's words alone: its own kind adds nothing
            self.args = (message,)

    @classmethod
    def from_result(cls, result: ToolResult) -> McpToolError:
        error = result.error or {}
        return cls(str(error.get("message") or "the tool reported an error"), str(error.get("kind") or "tool_error"),
                   error.get("path"), error.get("keyword"))


class StaleToolError(McpToolError):
    """The tool list the model was given is out of date: the tool is gone, or its arguments no longer fit."""

    def __init__(self, message: str):
        super().__init__(message, "stale_tool")


# ----------------------------------------------------------------------------------------------------------
# connect()
# ----------------------------------------------------------------------------------------------------------

def connect(target: Any, *, timeout: float = 60.0, connect_timeout: float = 30.0, prefix: str = "",
            env: dict[str, str] | None = None, cwd: str | None = None, wire: WireLog | None = None,
            max_result_bytes: int = MAX_RESULT_BYTES, protocol: str = "auto",
            on_input: Any = None) -> McpClient:
    """Connect to an MCP server and list its tools; use as `with connect(...) as client:` (or call close()).

    target           a command (list of str, or one string split like a shell), an http(s) URL, an
                     agentkit ToolServer, or the SDK's Server / MCPServer (in memory)
    timeout          seconds one tools/call may take
    connect_timeout  seconds for the handshake (a command's start-up included) and each tools/list
    prefix           put before every tool name (two servers may both have a `search`)
    env, cwd         for a command: extra environment variables and the working directory
    wire             a WireLog that records every JSON-RPC message of the session
    max_result_bytes the largest answer taken (bytes of one JSON-RPC message); a bigger tool result is a
                     "too_large" error, the connection stays up
    protocol         "auto" (the newest the server offers), "2026-07-28" or "2025-11-25"
    on_input         fn(InputRequest) -> answer, when a server's tool asks for input (agentkit.mcp.inputs)
    """
    client = McpClient(target, timeout=timeout, connect_timeout=connect_timeout, prefix=prefix, env=env,
                       cwd=cwd, wire=wire, max_result_bytes=max_result_bytes, protocol=protocol,
                       on_input=on_input)
    client.open()
    return client


async def aconnect(target: Any, **options: Any) -> McpClient:
    """`connect()` for async code: the handshake happens off the caller's event loop.

        async with await aconnect(server) as client:
            run = await agentkit.arun(model, prompt, tools=client.tools)
    """
    return await asyncio.to_thread(connect, target, **options)


@dataclass(frozen=True)
class _Entry:
    """One listed tool: its MCP name, its definition as listed, and the agentkit Tool made from it."""

    mcp_name: str
    definition: dict
    tool: Tool


class McpClient:
    """A connection to one MCP server, with its tools as agentkit Tools (`.tools`).

    Safe to use from several threads and event loops at once; `close()` ends the session and, for a
    command, stops the server process (closing its stdin, then SIGTERM, then SIGKILL, as the SDK does).
    """

    def __init__(self, target: Any, *, timeout: float = 60.0, connect_timeout: float = 30.0, prefix: str = "",
                 env: dict[str, str] | None = None, cwd: str | None = None, wire: WireLog | None = None,
                 max_result_bytes: int = MAX_RESULT_BYTES, protocol: str = "auto", on_input: Any = None):
        for label, value in (("timeout", timeout), ("connect_timeout", connect_timeout)):
            if not (isinstance(value, (int, float)) and value > 0):
                raise ValueError(f"{label}={value!r}: give a positive number of seconds")
        if not (isinstance(max_result_bytes, int) and not isinstance(max_result_bytes, bool) and max_result_bytes > 0):
            raise ValueError(f"max_result_bytes={max_result_bytes!r}: give a positive number of bytes")
        if protocol not in _MODES:
            raise ValueError(f"protocol={protocol!r}: give one of {', '.join(map(repr, _MODES))}")
        if on_input is not None and not callable(on_input):
            raise ValueError(f"on_input={on_input!r}: give a function of one InputRequest")
        if prefix and not re.fullmatch(r"[A-Za-z0-9_-]+", prefix):
            raise ValueError(f"prefix={prefix!r}: use letters, digits, '_' or '-' (tool names allow no others)")
        self.target = target
        self.timeout, self.connect_timeout, self.prefix = float(timeout), float(connect_timeout), prefix
        self.wire, self.max_result_bytes = wire, max_result_bytes
        self.protocol, self.on_input = protocol, on_input
        self.listening = False          # a 2026-07-28 subscriptions/listen stream for tool changes is open
        self._listen_lost = False       # ... was open and ended: changes since may not have been told
        self._stdio: StdioTransport | None = None  # a command's transport: its pid, and why it broke
        self.describe, self._make_transport, self._stderr = self._transport_for(target, env, cwd)
        self.stale = threading.Event()  # set by a list_changed notice, cleared when the list is read again
        self.refreshes: list[str] = []  # why the tool list was read: "initial", "list_changed", "unknown_tool",
        #                                 "recheck" (before refusing a call), "requested" (refresh()),
        #                                 "listen_lost" (the listen stream ended)
        self.problems: list[str] = []   # listed tools that could not become agentkit Tools, and why
        self.server_name: str = self.describe
        self.protocol_version: str | None = None
        self._entries: dict[str, _Entry] = {}
        self._listings = 0              # tool lists installed so far: refusals at the same moment share one
        self._sdk: Client | None = None
        self._lock: Any = None          # an anyio.Lock, made on the session's loop
        self._portal: Any = None
        self._thread: threading.Thread | None = None
        self._session: Any = None
        self._closed = False

    # -- life cycle ------------------------------------------------------------------------------------------

    def open(self) -> McpClient:
        """Start: transport, the revision (server/discover, or the initialize handshake), the listen stream
        on 2026-07-28, the first tools/list. Idempotent."""
        if self._session is not None:
            return self
        if self._closed:
            raise McpConnectionError(f"this client of {self.describe} was closed; connect again")
        self._portal, self._thread = _start_portal(f"agentkit-mcp:{self.describe[:40]}")
        session = self._portal.wrap_async_context_manager(self._lifetime())
        try:
            session.__enter__()
        except BaseException as exc:
            self._stop_portal()
            self._closed = True
            error = self._connect_error(_unwrap(exc))  # reads the server's stderr: close it afterwards
            if self._stderr is not None:
                self._stderr.close()
            raise error from exc
        self._session = session
        atexit.register(self.close)  # a notebook that never closes still stops its servers at exit
        return self

    def close(self) -> None:
        """End the session and stop the server (a command's process is gone when this returns). Idempotent."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        session, self._session = self._session, None
        try:
            if session is not None:
                session.__exit__(None, None, None)
        except BaseException:  # noqa: BLE001 — a dead server's transport may complain on the way out
            pass
        finally:
            self._stop_portal()
            if self._stderr is not None:
                self._stderr.close()

    def _stop_portal(self) -> None:
        portal, thread = self._portal, self._thread
        if portal is None:
            return
        try:
            portal.call(portal.stop, True)
        except RuntimeError:  # already stopped
            pass
        if thread is not None:
            thread.join(30)

    def __enter__(self) -> McpClient:
        return self.open()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> McpClient:
        if self._session is None:
            await asyncio.to_thread(self.open)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await asyncio.to_thread(self.close)

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("open" if self._session is not None else "not open")
        return f"<McpClient {self.server_name!r} {state}: {', '.join(e.tool.name for e in self._entries.values())}>"

    @asynccontextmanager
    async def _lifetime(self) -> AsyncIterator[None]:
        """The whole session, on the portal's loop: entered by open(), left by close()."""
        import anyio

        from .. import __version__

        self._lock = anyio.Lock()
        # The change watch sits next to the session: a notice is seen as the session reads it, before the
        # next message (a call's answer) is read at all.
        transport = recorded(self._make_transport(), _ChangeWatch(self.stale))
        if self.wire is not None:
            transport = recorded(transport, self.wire)
        # read_timeout_seconds is the session's default: it bounds discover / initialize and tools/list;
        # each tools/call passes its own. cache=None: tools/list must always ask the server.
        # elicitation_callback: only with on_input, so a client that cannot answer declares no elicitation.
        client = Client(transport, mode=_MODES[self.protocol], read_timeout_seconds=self.connect_timeout, cache=None,
                        elicitation_callback=self._elicit if self.on_input is not None else None,
                        client_info=mcp_types.Implementation(name="agentkit", version=__version__))
        async with client:
            self._sdk = client
            info = client.server_info
            self.server_name = info.name if info is not None and info.name else self.describe
            self.protocol_version = client.protocol_version
            if self.protocol != "auto" and self.protocol_version != self.protocol:
                raise McpConnectionError(f"the MCP server {self.describe} does not speak {self.protocol} (it "
                                         f"answered on {self.protocol_version})")
            async with anyio.create_task_group() as tasks:
                try:
                    if self.protocol_version in MODERN_PROTOCOL_VERSIONS and _announces_changes(client):
                        await tasks.start(self._listen, client)  # before the listing: no change is missed
                    await self._refresh("initial")
                    yield
                finally:
                    self._sdk = None
                    tasks.cancel_scope.cancel()

    async def _listen(self, client: Client, *, task_status: Any) -> None:
        """Keep a subscriptions/listen stream open for tool-list changes (2026-07-28)."""
        started = False
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                self.listening = bool(subscription.honored.tools_list_changed)
                started = True
                task_status.started()
                async for _event in subscription:
                    self.stale.set()  # the change watch has already set it; this drains the stream
        except Exception:  # noqa: BLE001 — a refused or lost stream: the next call lists the tools again
            self._listen_lost = True
        finally:
            self.listening = False
            if not started:
                task_status.started()

    async def _elicit(self, context: Any, params: Any) -> Any:
        """A server asks for input (an `elicitation/create`, inside a call or in an InputRequiredResult)."""
        import anyio

        if getattr(params, "mode", "form") not in (None, "form"):
            return mcp_types.ErrorData(code=codec.INVALID_PARAMS, message="agentkit's client answers form-mode "
                                                                          "elicitation only")
        calling = _CALLING.get()
        schema = params.requested_schema
        schema = schema.model_dump(by_alias=True, exclude_none=True) if hasattr(schema, "model_dump") else dict(schema)
        request = inputs.InputRequest(params.message, schema, tool=calling[0] if calling else None,
                                      key=str(context.request_id) if context.request_id is not None else None)
        try:
            action, content = inputs.normalize_answer(await anyio.to_thread.run_sync(self.on_input, request))
        except Exception as exc:  # noqa: BLE001 — told to the server; the call then fails there
            return mcp_types.ErrorData(code=codec.INTERNAL_ERROR, message=f"on_input failed: {_one_line(exc)[:300]}")
        if calling is not None:
            calling[1]("mcp_input", message=request.message, action=action, content=content)
        return mcp_types.ElicitResult(action=action, content=content)

    def _transport_for(self, target: Any, env: dict[str, str] | None, cwd: str | None) -> tuple[str, Any, Any]:
        """(a short description, a factory of the transport, the stderr file of a child process or None)."""
        if isinstance(target, ToolServer):
            return f"{target.name!r} (in memory)", lambda: _in_memory(target.server), None
        if isinstance(target, MCPServer):
            # The SDK's own Client unwraps MCPServer the same way (it has no public accessor yet).
            return f"{target.name!r} (in memory)", lambda: _in_memory(target._lowlevel_server), None
        if isinstance(target, Server):
            return f"{target.name!r} (in memory)", lambda: _in_memory(target), None
        if isinstance(target, str) and re.match(r"(?i)https?://", target):
            # The SDK bounds one SSE event; a bigger answer fails that request alone, with the SDK's words.
            return target, lambda: streamable_http_client(target, max_sse_event_size=self.max_result_bytes), None
        if isinstance(target, str):
            target = shlex.split(target)
        if isinstance(target, (list, tuple)) and target and all(isinstance(part, str) for part in target):
            target = StdioServerParameters(command=target[0], args=list(target[1:]), env=env, cwd=cwd)
        if isinstance(target, StdioServerParameters):
            # The child's stderr goes to a file we can quote when it fails (a notebook's sys.stderr has no
            # file descriptor for a child process to write to). Append mode: the child and our reads share
            # the file's offset, and O_APPEND makes every write land at the end whatever we seek to.
            log = tempfile.TemporaryFile("a+", encoding="utf-8", errors="replace")
            params = target
            describe = shlex.join([params.command, *params.args])[:120]
            if sys.platform == "win32":  # pragma: no cover - no process groups: the SDK's transport
                return describe, lambda: stdio_client(params, errlog=log), log

            def transport() -> Any:
                self._stdio = StdioTransport([params.command, *params.args], env=params.env,
                                             cwd=None if params.cwd is None else str(params.cwd), errlog=log,
                                             max_line_bytes=self.max_result_bytes)
                return self._stdio.open()

            return describe, transport, log
        raise TypeError(f"connect() takes a command (list of str or a string), an http(s):// URL, a ToolServer "
                        f"or an MCP SDK Server/MCPServer, not {type(target).__name__}: {target!r:.80}")

    def _connect_error(self, exc: BaseException) -> McpConnectionError:
        where = self.describe
        if isinstance(exc, McpConnectionError):  # the first tools/list failed
            return exc
        if isinstance(exc, MCPError) and exc.code == mcp_types.REQUEST_TIMEOUT:
            text = f"the MCP server {where} did not answer initialize within {self.connect_timeout:g} s"
        elif isinstance(exc, MCPError) and exc.code == mcp_types.CONNECTION_CLOSED:
            text = f"the MCP server {where} closed the connection during the handshake"
        elif isinstance(exc, MCPError):
            text = f"the MCP server {where} refused the handshake: {exc.code} {exc.message}"
        elif isinstance(exc, FileNotFoundError):
            text = f"cannot start the MCP server: no such command {_command_word(self.target)!r}"
        elif isinstance(exc, OSError):
            text = f"cannot start or reach the MCP server {where}: {exc.strerror or exc}"
        elif type(exc).__module__.startswith(("httpx", "httpcore")):
            text = f"cannot reach the MCP server at {where}: {type(exc).__name__}: {exc}"
        else:
            text = f"cannot connect to the MCP server {where}: {type(exc).__name__}: {_one_line(exc)}"
        if self._stdio is not None and self._stdio.broken:
            text = f"the MCP server {where} {self._stdio.broken}"
        return McpConnectionError(text + self._evidence())

    def _evidence(self) -> str:
        """What a stdio server showed of itself, for error messages: stray stdout, its last stderr line."""
        told = ""
        noise = self._stdio.noise if self._stdio is not None else []
        if noise:
            told += (f"; it wrote {len(noise)}{'+' if len(noise) >= 5 else ''} line(s) to stdout that are not "
                     f"JSON-RPC (stdout is the protocol's channel), the first: {_one_line(noise[0])[:120]!r}")
        try:
            lines = [line.strip() for line in self.stderr().splitlines() if line.strip()]
        except (OSError, ValueError):  # an error message must not fail for want of the server's words
            return told
        return told + (f"; its stderr ends: {lines[-1][:300]}" if lines else "")

    @property
    def pid(self) -> int | None:
        """The process id of a command's server (None for other transports)."""
        return self._stdio.pid if self._stdio is not None else None

    def stderr(self) -> str:
        """Everything a stdio server wrote to stderr so far ('' for other transports)."""
        log = self._stderr
        if log is None or log.closed:
            return ""
        log.flush()
        log.seek(0)
        return log.read()

    # -- the tool list ---------------------------------------------------------------------------------------

    @property
    def tools(self) -> list[Tool]:
        """The server's tools as agentkit Tools, listed again first if a list_changed notice arrived."""
        self._require_open()
        if self.stale.is_set():
            self._portal.call(self._refresh, "list_changed")
        return [entry.tool for entry in self._entries.values()]

    def refresh(self) -> list[Tool]:
        """List the tools again now (whether or not the server said they changed)."""
        self._require_open()
        self._portal.call(self._refresh, "requested")
        return [entry.tool for entry in self._entries.values()]

    def _require_open(self) -> None:
        if self._session is None:
            state = "was closed" if self._closed else "is not open"
            raise McpConnectionError(f"the MCP client of {self.describe} {state}")

    async def _refresh(self, reason: str, since: int | None = None) -> bool:
        """List the tools again; False when another call just did it (a list_changed refresh that finds the
        list no longer stale, or a refresh for a call that began after `since` listings, finding more)."""
        async with self._lock:  # one listing at a time; callers that waited find a fresh list
            if reason == "list_changed" and not self.stale.is_set():
                return False
            if since is not None and self._listings > since:
                return False
            self.stale.clear()  # before listing: a notice that arrives meanwhile marks the new list stale
            listed: list[Any] = []
            cursor = None
            sdk = self._connected()
            for _ in range(_MAX_PAGES):
                try:
                    page = await sdk.list_tools(cursor=cursor)
                except MCPError as exc:
                    raise self._protocol_error(exc, "tools/list", self.connect_timeout) from None
                except Exception as exc:  # noqa: BLE001 — a broken stream, an answer the SDK cannot read
                    raise self._unreadable(exc, "tools/list") from None
                listed.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
            self._install(listed)
            self._listings += 1
            self.refreshes.append(reason)
            return True

    def _connected(self) -> Client:
        sdk = self._sdk
        if sdk is None:
            raise McpConnectionError(f"the MCP server {self.server_name!r} is not connected")
        return sdk

    def _install(self, listed: Sequence[Any]) -> None:
        entries: dict[str, _Entry] = {}
        names: set[str] = set()
        self.problems = []
        for sdk_tool in listed:
            definition = _wire_json(sdk_tool)
            old = self._entries.get(sdk_tool.name)
            if old is not None and old.definition == definition:
                entry = old  # the same Tool object: validators stay compiled, identity stays stable
            else:
                try:
                    entry = _Entry(sdk_tool.name, definition, self._make_tool(definition))
                except (TypeError, ToolDefinitionError) as exc:
                    self.problems.append(f"{sdk_tool.name}: {exc}")
                    continue
            if entry.tool.name in names:
                self.problems.append(f"{sdk_tool.name}: its agentkit name {entry.tool.name!r} is taken by "
                                     f"another tool of this server")
                continue
            names.add(entry.tool.name)
            entries[sdk_tool.name] = entry
        self._entries = entries  # one assignment: readers in other threads see the old or the new dict

    def _make_tool(self, definition: dict) -> Tool:
        spec = codec.tool_from_mcp(definition)
        if _CONTEXT in (spec.parameters.get("properties") or {}):
            raise ToolDefinitionError(f"a parameter is named {_CONTEXT!r}, which agentkit reserves")
        annotations = definition.get("annotations") or {}
        idempotent = bool(annotations.get("idempotentHint") or annotations.get("readOnlyHint"))
        local = _local_name(self.prefix + spec.name)
        mcp_name, listed_schema, client = spec.name, spec.parameters, self
        output_schema = definition.get("outputSchema")
        if output_schema is not None:
            if not isinstance(output_schema, dict):
                raise ToolDefinitionError(f"its outputSchema is not a JSON Schema object: {output_schema!r:.80}")
            validator_for(output_schema, local)  # a schema that cannot compile is refused here, this tool alone

        async def call_over_mcp(**arguments: Any) -> Any:
            context = arguments.pop(_CONTEXT, None)
            return await client._acall(mcp_name, local, listed_schema, arguments, context, output_schema)

        call_over_mcp.__name__ = call_over_mcp.__qualname__ = local
        tool = Tool.from_schema(local, spec.description, spec.parameters, call_over_mcp, context_param=_CONTEXT,
                                idempotent=idempotent)
        validator_for(tool.parameters, tool.name)  # a schema JSON Schema cannot compile is refused here
        return tool

    # -- tools/call ------------------------------------------------------------------------------------------

    async def _acall(self, mcp_name: str, local: str, listed_schema: dict, arguments: dict,
                     context: ToolContext | None, output_schema: dict | None = None) -> Any:
        """Runs in the caller's loop (any loop, any thread); the session's work is handed to its own loop."""
        self._require_open()
        call_id = context.call_id if context is not None and context.call_id else local
        future = self._portal.start_task_soon(self._call, mcp_name, local, listed_schema, arguments, call_id,
                                              context)
        # Cancelling this await (a loop timeout, arun cancelled) cancels the future, hence the request,
        # and the SDK tells the server with notifications/cancelled.
        try:
            answer = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            if self._closed:  # close() ended the session under this call; it was not our caller's cancel
                raise McpConnectionError(f"the MCP client of {self.describe} was closed during the call") from None
            raise
        result = codec.result_from_mcp(ToolCall(call_id, local), answer)
        if not result.ok:
            raise McpToolError.from_result(result)
        if output_schema is not None:  # the SDK checks too; this also names the path
            problem = structured.output_problem(output_schema, answer.get("structuredContent"), local)
            if problem is not None:
                raise McpToolError(f"tool {local!r} of the MCP server {self.server_name!r}: {problem['message']}",
                                   "bad_return", problem["path"], problem["keyword"])
        return result.result

    async def _call(self, mcp_name: str, local: str, listed_schema: dict, arguments: dict, call_id: str,
                    context: ToolContext | None) -> dict:
        """Runs on the session's loop: refresh if stale, check the tool still fits, send, retry once."""
        record = context.record if context is not None else (lambda kind, **data: None)
        _CALLING.set((local, record))  # this task's own context: what on_input is told
        if self._listen_lost:  # a lost stream may have lost a notice with it (a dead server: this call fails)
            self._listen_lost = False
            await self._refresh("listen_lost")
            record("mcp_refresh", reason="listen_lost")
        # A listing under way (its lock held) has cleared `stale` already, but not yet installed the new
        # list: wait for it too, or this call would be checked against the old one.
        listed_here = (self.stale.is_set() or self._lock.locked()) and await self._refresh("list_changed")
        if listed_here:
            record("mcp_refresh", reason="list_changed")  # in the trace of the call that did the listing
        try:
            self._check_current(mcp_name, local, listed_schema, arguments)
        except StaleToolError:
            if listed_here:  # this call read the list itself, for this check: the refusal stands
                raise
            # A list this call did not read may be out of date with its notice still on the way (the server
            # removed the tool and has put it back): read it again before refusing. Calls refused at the
            # same moment share that listing.
            if await self._refresh("recheck", since=self._listings):
                record("mcp_refresh", reason="recheck")
            self._check_current(mcp_name, local, listed_schema, arguments)
        answer = await self._send(mcp_name, local, arguments, call_id)
        if _says_unknown_tool(answer, mcp_name):
            await self._refresh("unknown_tool")
            record("mcp_refresh", reason="unknown_tool")
            self._check_current(mcp_name, local, listed_schema, arguments)  # gone -> StaleToolError
            answer = await self._send(mcp_name, local, arguments, call_id)  # still listed: one retry
        if isinstance(answer, McpError):
            raise answer
        record("mcp_result", result=answer)  # the raw payload belongs in the trace, not the envelope
        return answer

    def _check_current(self, mcp_name: str, local: str, listed_schema: dict, arguments: dict) -> None:
        entry = self._entries.get(mcp_name)
        if entry is None:
            offered = ", ".join(e.tool.name for e in self._entries.values()) or "no tools"
            raise StaleToolError(f"tool {local!r} no longer exists on the MCP server {self.server_name!r} (its "
                                 f"tool list changed); it now offers: {offered}")
        if entry.tool.parameters != listed_schema:
            checked = validate_arguments(entry.tool, arguments)
            if not checked.ok:
                raise StaleToolError(f"tool {local!r} changed on the MCP server {self.server_name!r} since its "
                                     f"tool list was read; for the new version: {checked.message()}")

    async def _send(self, mcp_name: str, local: str, arguments: dict, call_id: str) -> dict | McpError:
        """One tools/call: the result as JSON, or the JSON-RPC error as a value (the caller decides)."""
        sdk = self._connected()
        try:
            result = await sdk.call_tool(mcp_name, arguments, read_timeout_seconds=self.timeout,
                                         meta={CALL_ID_META_KEY: call_id})
            answer = _wire_json(result)
        except RuntimeError as exc:
            bad_output = _breaks_output_schema(exc, mcp_name, local, self.server_name)
            if bad_output is None:
                raise self._unreadable(exc, "tools/call") from None
            raise bad_output from None
        except MCPError as exc:
            if exc.code == mcp_types.REQUEST_TIMEOUT:
                raise ToolTimeout(local, self.timeout) from None
            too_large = self._too_large(exc, local)
            if too_large is not None:
                raise too_large from None
            error = self._protocol_error(exc, "tools/call", self.timeout)
            if isinstance(error, McpConnectionError):
                raise error from None
            return error
        except Exception as exc:  # noqa: BLE001 — a broken stream, an answer the SDK cannot read
            raise self._unreadable(exc, "tools/call") from None
        if self._stdio is None:  # on stdio the transport bounds every line before it is read
            size = len(json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
            if size > self.max_result_bytes:
                raise self._result_too_large(local, f"{size:,} bytes")
        return answer

    def _too_large(self, exc: MCPError, local: str) -> McpToolError | None:
        """An answer over max_result_bytes, as our stdio transport or the SDK's HTTP transport reports it."""
        if exc.code == LINE_TOO_LONG:
            return self._result_too_large(local, exc.message.removeprefix("the answer is ").split(";")[0])
        found = re.search(r"exceeded the \d+ byte limit", exc.message or "")
        if exc.code == mcp_types.CONNECTION_CLOSED and found:  # httpx's SSE decoder stops at the limit
            return self._result_too_large(local, f"more than {self.max_result_bytes:,} bytes")
        return None

    def _result_too_large(self, local: str, size: str) -> McpToolError:
        return McpToolError(f"tool {local!r} answered {size}; the limit is {self.max_result_bytes:,} (set by "
                            f"connect(max_result_bytes=...)); nothing of the answer was kept", "too_large")

    def _unreadable(self, exc: Exception, method: str) -> McpConnectionError | McpError:
        """Anything else the SDK raised: the connection is gone, or the answer breaks the protocol."""
        import anyio

        if isinstance(exc, (McpConnectionError, McpError, ToolFailure)):
            return exc
        gone = isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream,
                                ConnectionError)) or (self._stdio is not None and self._stdio.broken)
        if gone:
            return self._protocol_error(MCPError(mcp_types.CONNECTION_CLOSED, "Connection closed"), method, 0)
        return McpError(codec.INTERNAL_ERROR, f"the answer of the MCP server {self.server_name!r} to {method} "
                                              f"could not be read: {type(exc).__name__}: {_one_line(exc)[:300]}")

    def _protocol_error(self, exc: MCPError, method: str, timeout: float) -> McpError | McpConnectionError:
        """The SDK's MCPError as agentkit's: a closed connection or a silent server, or a JSON-RPC error."""
        if exc.code == mcp_types.CONNECTION_CLOSED:
            if self._stdio is not None and self._stdio.broken:
                what = self._stdio.broken
            elif exc.message and exc.message.lower() != "connection closed":  # e.g. the SDK's HTTP words
                what = f"closed the connection ({_one_line(exc.message)[:200]})"
            else:
                what = "closed the connection (did it exit or crash?)"
            return McpConnectionError(f"the MCP server {self.server_name!r} {what}{self._evidence()}")
        if exc.code == mcp_types.REQUEST_TIMEOUT:
            return McpConnectionError(f"the MCP server {self.server_name!r} did not answer {method} within "
                                      f"{timeout:g} s")
        return McpError(exc.code, exc.message, exc.data)


def _announces_changes(client: Client) -> bool:
    """Does the server say (in server/discover) that it tells clients when its tool list changes?"""
    tools = client.server_capabilities.tools
    return tools is not None and bool(tools.list_changed)


class _ChangeWatch:
    """Sets `stale` the moment a tools/list_changed notice is read off the transport (either revision)."""

    def __init__(self, stale: threading.Event):
        self.stale = stale

    def record(self, direction: str, item: Any) -> None:
        message = getattr(item, "message", None)
        message = getattr(message, "root", message)
        if direction == RECEIVED and getattr(message, "method", None) == "notifications/tools/list_changed":
            self.stale.set()


def _breaks_output_schema(exc: RuntimeError, mcp_name: str, local: str, server: str) -> McpToolError | None:
    """The SDK's RuntimeError for a result that breaks the tool's outputSchema, as a "bad_return" failure."""
    text = str(exc)
    if not text.startswith((f"Invalid structured content returned by tool {mcp_name}",
                            f"Tool {mcp_name} has an output schema but did not return structured content")):
        return None
    cause = exc.__cause__
    path = keyword = None
    if cause is not None and hasattr(cause, "absolute_path"):
        path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in cause.absolute_path)
        keyword = getattr(cause, "validator", None)
        text = f"{path}: {getattr(cause, 'message', text)}"
    elif "did not return structured content" in text:
        keyword, text = "outputSchema", "the tool declares an outputSchema but the result has no structuredContent"
    return McpToolError(f"tool {local!r} of the MCP server {server!r}: the result breaks the tool's outputSchema: "
                        f"{_one_line(text)[:300]}", "bad_return", path, keyword)


def _wire_json(sdk_object: Any) -> dict:
    """An SDK object as plain JSON, the way the 2025 wire carries it (camelCase keys, no null fields)."""
    data = sdk_object.model_dump(by_alias=True, mode="json", exclude_none=True)
    for key in ("resultType", "ttlMs", "cacheScope"):  # 2026-07-28 fields the 2025 wire does not carry
        data.pop(key, None)
    return data


def _says_unknown_tool(answer: dict | McpError, name: str) -> bool:
    """Did the server answer "I have no tool called `name`"? Servers say it in their own words.

    The spec asks for a JSON-RPC error (-32602); the Python SDK's MCPServer answers isError "Unknown tool:
    x"; the TypeScript SDK says "Tool x not found". Only those shapes count: a tool's own error that just
    happens to say "not found" must not be retried.
    """
    if isinstance(answer, McpError):
        if answer.code not in (codec.INVALID_PARAMS, codec.METHOD_NOT_FOUND):
            return False
        text = answer.message
    else:
        if answer.get("isError") is not True:
            return False
        text = " ".join(b.get("text", "") for b in answer.get("content", ()) if isinstance(b, dict))
        if text.lstrip().startswith("{"):  # an agentkit envelope: the tool ran (or was refused), it exists
            return False
    quoted = rf"['\"`]?{re.escape(name)}['\"`]?"
    pattern = (rf"(?i)^\s*(?:MCP error -?\d+:\s*)?(?:unknown tool:?\s*{quoted}|tool\s+{quoted}\s+(?:not found|does not "
               rf"exist|is not available)|no (?:such )?tool (?:named )?{quoted})\W*$")
    return len(text) < 300 and re.match(pattern, text.strip()) is not None


def _one_line(value: Any) -> str:
    """Text of any length on one line: an error message must not break a log, a table or a CLI's output."""
    return " ".join(str(value).split())


def _local_name(name: str) -> str:
    """An MCP tool name (up to 128 chars, may contain '.') as an agentkit name (1-64 of [A-Za-z0-9_-])."""
    return _NAME_CHARS.sub("_", name)[:64] or "_"


def _unwrap(exc: BaseException) -> BaseException:
    """anyio task groups wrap errors in ExceptionGroups; the first real one explains what went wrong."""
    while isinstance(getattr(exc, "exceptions", None), tuple) and exc.exceptions:  # (Base)ExceptionGroup
        exc = exc.exceptions[0]
    return exc


def _command_word(target: Any) -> str:
    if isinstance(target, StdioServerParameters):
        return target.command
    if isinstance(target, str):
        return (shlex.split(target) or [""])[0]
    return str(target[0]) if target else ""


# ----------------------------------------------------------------------------------------------------------
# Transports
# ----------------------------------------------------------------------------------------------------------

@asynccontextmanager
async def _in_memory(server: Server) -> AsyncIterator[tuple[Any, Any]]:
    """The server runs as a task next to the client, joined by the SDK's memory streams (no bytes, no process)."""
    import anyio

    async with create_client_server_memory_streams() as (client_streams, server_streams):
        stopped = anyio.Event()

        async def run_server() -> None:
            try:
                await server.run(*server_streams, server.create_initialization_options())
            finally:
                stopped.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run_server)
            try:
                yield client_streams
            finally:
                # End of input ends the server's loop (as stdin closing ends a stdio server); a server
                # still busy after a grace period is cancelled.
                await client_streams[1].aclose()
                with anyio.move_on_after(2):
                    await stopped.wait()
                tasks.cancel_scope.cancel()


def _start_portal(name: str) -> tuple[Any, threading.Thread]:
    """A private event loop in a daemon thread, and anyio's BlockingPortal into it.

    A daemon thread (anyio's own start_blocking_portal uses a non-daemon one): an interpreter that exits
    without closing the client must not wait for it; atexit closes it first anyway.
    """
    import anyio
    from anyio.from_thread import BlockingPortal

    handoff: queue.Queue = queue.Queue()

    async def serve() -> None:
        async with BlockingPortal() as portal:
            handoff.put(portal)
            await portal.sleep_until_stopped()

    def main() -> None:
        try:
            anyio.run(serve)
        except BaseException as exc:  # noqa: BLE001 — handed to the thread that waits for the portal
            handoff.put(exc)

    thread = threading.Thread(target=main, name=name, daemon=True)
    thread.start()
    portal = handoff.get()
    if isinstance(portal, BaseException):
        raise portal
    return portal, thread
