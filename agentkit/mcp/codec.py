"""MCP (Model Context Protocol) tool definitions, results and JSON-RPC messages, as pure functions.

MCP is not a model API. An MCP *server* offers tools; an MCP *client* (the agent's host) lists them
and calls them with JSON-RPC 2.0 messages (the MCP specification, revisions 2025-11-25 and 2026-07-28). This module
converts between the kit's vocabulary and those messages, so a `@tool` can be offered over MCP and an
MCP server's tools can be handed to any model:

    ToolSpec   <-> Tool            {"name", "description", "inputSchema"}              (camelCase on the wire)
    ToolCall    -> tools/call      {"jsonrpc": "2.0", "id", "method": "tools/call",
                                    "params": {"name", "arguments"}}
    ToolResult <-> CallToolResult  {"content": [{"type": "text", "text"}], "structuredContent", "isError"}

The two revisions differ in how a conversation starts, not in these messages. 2025-11-25 opens with a
handshake (`initialize_request`, then the `notifications/initialized` notification) and the session
remembers what was agreed; 2026-07-28 has none: each request carries `request_meta(...)` under
`params._meta` (protocol version, client info, client capabilities), `server/discover` says what a server
supports, and results carry `resultType` (the 2026-07-28 changelog, major changes 2, 3 and 8).

A tool that failed is still a *result*, with `isError: true`, because the model should read it; a
protocol problem (unknown method, malformed params) is a JSON-RPC `error`, raised here as McpError.
There is no strict mode, tool_choice or parallel switch in MCP: the host's model decides, and a
client may send several `tools/call` requests at once under different ids.

    from agentkit.mcp import codec as mcp
    line = mcp.to_line(mcp.call_tool_request(3, call))        # what a client writes on stdio
    result = mcp.result_from_response(call, mcp.from_line(reply_line))

`tool_to_wire` / `tool_from_wire` are the same two functions under the verbs every codec shares.

Left out on purpose: transports and sessions (stdio, Streamable HTTP: that is I/O, and the official
SDK's work; `agentkit.mcp` uses it to serve Tools and to call any MCP server's tools from the loop),
capabilities beyond tools, image/audio/embedded-resource content (skipped when read), pagination beyond
handing back `nextCursor`, and tasks.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..core.errors import AgentkitError
from ..core.types import ToolCall, ToolResult, ToolSpec

NAME = "mcp"
JSONRPC = "2.0"
#: The revisions the kit speaks, newest first: the stateless one, and the last with the initialize handshake.
LATEST_PROTOCOL_VERSION = "2026-07-28"
PROTOCOL_VERSION = "2025-11-25"  # what `initialize_request` offers; the server answers with the one it chose
PROTOCOL_VERSIONS = (LATEST_PROTOCOL_VERSION, PROTOCOL_VERSION)
#: The `_meta` keys every 2026-07-28 request carries (its changelog, major change 2).
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"

# JSON-RPC error codes (the MCP specification, revision 2025-11-25).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: 2026-07-28: a `_meta` protocol version the server does not speak; `data` lists the ones it does.
UNSUPPORTED_PROTOCOL_VERSION = -32022


class McpError(AgentkitError):
    """A JSON-RPC `error` (protocol level), received or about to be sent: `code`, `message`, `data`."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(f"{code} {message}")
        self.code, self.message, self.data = code, message, data

    def to_response(self, id: Any) -> dict:
        return error_response(id, self.code, self.message, self.data)


# --- tool definitions ------------------------------------------------------------------------------

def tool_to_mcp(spec: ToolSpec) -> dict:
    """A ToolSpec as an MCP `Tool`: the JSON Schema goes unchanged into camelCase `inputSchema`."""
    tool: dict[str, Any] = {"name": spec.name}
    if spec.description:
        tool["description"] = spec.description
    tool["inputSchema"] = spec.parameters
    return tool


#: The verb every codec has (`agentkit.providers.contract`): the tool definition as this format writes it.
tool_to_wire = tool_to_mcp


def tool_from_mcp(d: Any) -> ToolSpec:
    """An MCP `Tool` -> ToolSpec. `strict` is off: MCP has no strict mode, and server schemas rarely
    meet OpenAI's strict rules (every property required, `additionalProperties: false`)."""
    if not isinstance(d, dict) or not isinstance(d.get("name"), str) or not d["name"]:
        raise TypeError(f"an MCP tool needs a non-empty string `name`: {d!r:.200}")
    schema = d.get("inputSchema")
    if not isinstance(schema, dict):
        raise TypeError(f"MCP tool {d['name']!r} needs an `inputSchema` object (note the camelCase)")
    description = d.get("description") if isinstance(d.get("description"), str) else ""
    return ToolSpec(d["name"], description or "", schema, False)


#: The verb every codec has: a tool definition in this format read back as a ToolSpec.
tool_from_wire = tool_from_mcp


# --- tool results ----------------------------------------------------------------------------------

#: `result_to_mcp(result, structured=DEFAULT)`: no structured content given, derive it from the value.
DEFAULT: Any = object()


def result_to_mcp(result: ToolResult, structured: Any = DEFAULT) -> dict:
    """A ToolResult as a `CallToolResult`: the envelope as text, the value as `structuredContent`.

    The text block is what a model reads (the kit's envelope, or the tool's own words); a successful
    non-text value is also sent as `structuredContent`, wrapped as {"result": value} unless it is an
    object, the way the MCP SDK wraps non-object outputs. `structured`: the structured content to send
    instead (a tool with an outputSchema: see agentkit.mcp.structured).
    """
    out: dict[str, Any] = {"content": [{"type": "text", "text": result.content()}]}
    if structured is not DEFAULT:
        out["structuredContent"] = structured
    elif result.ok and result.result is not None and not isinstance(result.result, str):
        value = jsonable(result.result)
        out["structuredContent"] = value if isinstance(value, dict) else {"result": value}
    out["isError"] = not result.ok
    return out


def result_from_mcp(call: ToolCall, d: Any) -> ToolResult:
    """A `CallToolResult` -> the ToolResult answering `call`.

    Our own envelope (from `result_to_mcp`) comes back as it went; another server's answer becomes
    a success with `structuredContent` (any JSON value, as 2026-07-28 allows; else the text), or a
    "tool_error" failure when `isError` is set. Resource links (`resource_link` blocks, revision
    2025-06-18 on) are kept: the value becomes {"result": value, "resource_links": [...]}.
    """
    if not isinstance(d, dict) or not isinstance(d.get("content"), list):
        raise TypeError(f"a CallToolResult needs a `content` list: {d!r:.200}")
    blocks = [block for block in d["content"] if isinstance(block, dict) and block.get("type") == "text"]
    texts = [block.get("text") for block in blocks]
    text = "\n".join(t for t in texts if isinstance(t, str))
    envelope = _kit_envelope(text)
    if envelope is not None:
        if envelope["ok"]:
            return ToolResult.success(call, envelope.get("result"))
        error = envelope.get("error") if isinstance(envelope.get("error"), dict) else {}
        kind, message = str(error.get("kind") or "tool_error"), str(error.get("message") or "")
        return ToolResult.failure(call, kind, message, error.get("path"), error.get("keyword"))
    if d.get("isError") is True:
        return ToolResult.failure(call, "tool_error", text or "the tool reported an error")
    value = d["structuredContent"] if d.get("structuredContent") is not None else text
    links = [block for block in d["content"] if isinstance(block, dict) and block.get("type") == "resource_link"]
    if links:
        value = {"result": value, "resource_links": links}
    return ToolResult.success(call, value)


def _kit_envelope(text: str) -> dict | None:
    """The parsed envelope when `text` is one (`{"toolCallId", "name", "ok", ...}`), else None."""
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or not {"toolCallId", "name", "ok"} <= value.keys():
        return None
    return value if isinstance(value["ok"], bool) else None


def jsonable(value: Any) -> Any:
    """A tool's value as plain JSON. Tools may return dates, sets, ...: the text envelope already shows
    them as strings; so does this."""
    return json.loads(json.dumps(value, default=str))


# --- JSON-RPC messages -----------------------------------------------------------------------------

def request(id: int | str, method: str, params: dict | None = None) -> dict:
    return {"jsonrpc": JSONRPC, "id": id, "method": method, "params": params or {}}


def notification(method: str, params: dict | None = None) -> dict:
    """A message without `id`: nobody answers it (over HTTP the server replies 202 with no body)."""
    message: dict[str, Any] = {"jsonrpc": JSONRPC, "method": method}
    if params:
        message["params"] = params
    return message


def response(id: int | str, result: dict) -> dict:
    return {"jsonrpc": JSONRPC, "id": id, "result": result}


def error_response(id: int | str | None, code: int, message: str, data: Any = None) -> dict:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": JSONRPC, "id": id, "error": error}


def initialize_request(id: int | str, client_name: str = "agentkit", client_version: str = "0.1.0",
                       protocol_version: str = PROTOCOL_VERSION) -> dict:
    """The first request of a session; follow its answer with `notification("notifications/initialized")`."""
    return request(id, "initialize", {"protocolVersion": protocol_version, "capabilities": {},
                                      "clientInfo": {"name": client_name, "version": client_version}})


def request_meta(client_name: str = "agentkit", client_version: str = "0.1.0", capabilities: dict | None = None,
                 protocol_version: str = LATEST_PROTOCOL_VERSION) -> dict:
    """What a 2026-07-28 request carries in `params._meta` in place of the handshake."""
    return {META_PROTOCOL_VERSION: protocol_version, META_CLIENT_INFO: {"name": client_name, "version": client_version},
            META_CLIENT_CAPABILITIES: capabilities or {}}


def discover_request(id: int | str, meta: dict | None = None) -> dict:
    """2026-07-28: ask a server which revisions and capabilities it supports (servers MUST answer it)."""
    return request(id, "server/discover", {"_meta": meta if meta is not None else request_meta()})


def list_tools_request(id: int | str, cursor: str | None = None) -> dict:
    return request(id, "tools/list", {"cursor": cursor} if cursor else {})


def list_tools_response(id: int | str, tools: Iterable[ToolSpec], next_cursor: str | None = None) -> dict:
    result: dict[str, Any] = {"tools": [tool_to_mcp(t) for t in tools]}
    if next_cursor:
        result["nextCursor"] = next_cursor
    return response(id, result)


def tools_from_list_response(message: Any) -> tuple[list[ToolSpec], str | None]:
    """A tools/list answer -> (tool specs, the cursor of the next page or None)."""
    result = result_of(message)
    tools = result.get("tools")
    if not isinstance(tools, list):
        raise McpError(INVALID_REQUEST, "tools/list result has no `tools` list", result)
    cursor = result.get("nextCursor")
    return [tool_from_mcp(t) for t in tools], cursor if isinstance(cursor, str) else None


def call_tool_request(id: int | str, call: ToolCall) -> dict:
    """A model's ToolCall as tools/call; MCP wants the arguments as an object ({} when they never parsed)."""
    return request(id, "tools/call", {"name": call.name, "arguments": call.arguments_object()})


def call_from_request(message: Any) -> ToolCall:
    """Server side: a tools/call request -> ToolCall (its id is the JSON-RPC id, as text).

    Raises McpError (INVALID_REQUEST / METHOD_NOT_FOUND / INVALID_PARAMS); answer it with
    `exc.to_response(id)`.
    """
    if not isinstance(message, dict) or message.get("jsonrpc") != JSONRPC or "id" not in message:
        raise McpError(INVALID_REQUEST, "Invalid Request")
    if message.get("method") != "tools/call":
        raise McpError(METHOD_NOT_FOUND, "Method not found", message.get("method"))
    params = message.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("name"), str):
        raise McpError(INVALID_PARAMS, "Invalid params: tools/call needs a string `name`")
    arguments = params.get("arguments", {})
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise McpError(INVALID_PARAMS, "Invalid params: `arguments` must be an object")
    return ToolCall.from_raw(str(message["id"]), params["name"], arguments)


def call_tool_response(id: int | str, result: ToolResult) -> dict:
    return response(id, result_to_mcp(result))


def result_from_response(call: ToolCall, message: Any) -> ToolResult:
    """Client side: the answer to a tools/call -> ToolResult (a JSON-RPC error raises McpError)."""
    return result_from_mcp(call, result_of(message))


def result_of(message: Any) -> dict:
    """The `result` of a JSON-RPC response; raises McpError when it carries an `error` instead."""
    if not isinstance(message, dict):
        raise McpError(INVALID_REQUEST, "a JSON-RPC response must be an object", message)
    error = message.get("error")
    if isinstance(error, dict):
        code = error.get("code") if isinstance(error.get("code"), int) else INTERNAL_ERROR
        raise McpError(code, str(error.get("message") or "error"), error.get("data"))
    result = message.get("result")
    if not isinstance(result, dict):
        raise McpError(INVALID_REQUEST, "a JSON-RPC response needs a `result` object or an `error`", message)
    return result


def to_line(message: dict) -> str:
    """One message as a stdio line: compact JSON (newlines inside strings are escaped), then "\\n"."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"


def from_line(line: str | bytes) -> dict:
    """One stdio line -> message; bad JSON is the protocol's parse error (-32700)."""
    try:
        message = json.loads(line)
    except ValueError:
        raise McpError(PARSE_ERROR, "Parse error") from None
    if not isinstance(message, dict):
        raise McpError(INVALID_REQUEST, "Invalid Request")
    return message
