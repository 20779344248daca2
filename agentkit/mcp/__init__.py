"""agentkit tools <-> MCP (Model Context Protocol), with the official MCP Python SDK.

    from agentkit.mcp import ToolServer, connect

    server = ToolServer([get_weather, get_time])          # serve agentkit Tools to any MCP client
    with connect(server) as client:                        # ... or use any MCP server's tools
        run = agentkit.run(model, "Weather in Paris?", tools=client.tools)

From a shell: `python -m agentkit.mcp serve myapp.tools:TOOLS` (stdio) or `... --http 8000`, and
`python -m agentkit.mcp tools COMMAND...` / `tools URL` to list what a server offers.

    server.py   ToolServer: tools/list and tools/call answered with the loop's own gates and envelope
    client.py   connect(): an MCP server's tools as agentkit Tools; errors, timeouts, stale tool lists
    stdio.py    the stdio transport: a server as a child process in its own process group, lines bounded,
                a stream that breaks (bytes that are not UTF-8) ended at once
    wire.py     WireLog: the JSON-RPC messages of a session, as the stdio transport writes them
    __main__    the command line

The pure conversions (tool definitions, CallToolResult, JSON-RPC messages) live in
`agentkit.providers.mcp_codec`. `import agentkit` does not import this package or the SDK; it needs the
optional extra: `pip install 'agentkit-lab[mcp]'`.
"""

from __future__ import annotations

import sys

from ..errors import MissingExtra
from ..extras import install_hint

try:
    import mcp_types  # noqa: F401 — the SDK's 2.x type package; 1.x has none
    from mcp import Client  # noqa: F401
except ImportError:
    _missing = MissingExtra(f"agentkit.mcp needs the MCP SDK 2.x (mcp>=2,<3): {install_hint('mcp')}")
    if sys.argv[:1] == ["-m"]:  # `python -m agentkit.mcp` is importing its package: one line, not a traceback
        print(f"agentkit.mcp: error: {_missing}", file=sys.stderr)
        raise SystemExit(2) from None
    raise _missing from None

from .client import (McpClient, McpConnectionError, McpToolError, StaleToolError, aconnect,  # noqa: E402
                     connect)
from .server import CALL_ID_META_KEY, ToolServer, load_server  # noqa: E402
from .wire import WireLog  # noqa: E402

__all__ = ["ToolServer", "connect", "aconnect", "McpClient", "McpConnectionError", "McpToolError",
           "StaleToolError", "WireLog", "CALL_ID_META_KEY", "load_server"]

