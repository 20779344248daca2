"""agentkit tools <-> MCP (Model Context Protocol), with the official MCP Python SDK.

    from agentkit.mcp import ToolServer, connect

    server = ToolServer([get_weather, get_time])          # serve agentkit Tools to any MCP client
    with connect(server) as client:                        # ... or use any MCP server's tools
        run = agentkit.run(model, "Weather in Paris?", tools=client.tools)

From a shell: `python -m agentkit.mcp serve myapp.tools:TOOLS` (stdio) or `... --http 8000`, and
`python -m agentkit.mcp tools COMMAND...` / `tools URL` to list what a server offers.

    server.py   ToolServer: tools/list and tools/call answered with the loop's own gates and envelope, on
                2025-11-25 and 2026-07-28; subscriptions/listen; change notices before the answer
    client.py   connect(): an MCP server's tools as agentkit Tools, on the newest revision the server
                offers; errors, timeouts, stale tool lists
    structured.py  outputSchema from a tool's return type; the check of what it returned
    inputs.py   ask_user() inside a served tool, and the answer a client's on_input gives
    stdio.py    the stdio transport: a server as a child process in its own process group, lines bounded,
                a stream that breaks (bytes that are not UTF-8) ended at once
    wirelog.py  WireLog: the JSON-RPC messages of a session, as the stdio transport writes them
    __main__    the command line

The pure conversions (tool definitions, CallToolResult, JSON-RPC messages of both revisions) live in
`agentkit.mcp.codec`; `structured` and `inputs` need no SDK either. `import agentkit` does not import
this package or the SDK; it needs the optional extra: `pip install 'agentkit-lab[mcp]'`.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..core.errors import MissingExtra
from ..extras import install_hint

#: What the package exports, and the module each name lives in (imported on first use, with the SDK).
_EXPORTS = {"ToolServer": "server", "CALL_ID_META_KEY": "server", "load_server": "server", "connect": "client",
            "aconnect": "client", "McpClient": "client", "McpConnectionError": "client", "McpToolError": "client",
            "StaleToolError": "client", "WireLog": "wirelog", "ask_user": "inputs",
            "InputRequest": "inputs"}

__all__ = list(_EXPORTS)


def missing_sdk() -> MissingExtra:
    """The error for a missing (or 1.x) MCP SDK: one line naming the extra."""
    return MissingExtra(f"agentkit.mcp needs the MCP SDK 2.x (mcp>=2,<3): {install_hint('mcp')}")


def require_sdk() -> None:
    """Stop here with a MissingExtra (one line naming the extra) unless the MCP SDK 2.x can be imported."""
    try:
        import mcp_types  # noqa: F401 — the SDK's 2.x type package; 1.x has none
        from mcp import Client  # noqa: F401
    except ImportError:
        raise missing_sdk() from None


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        require_sdk()
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
