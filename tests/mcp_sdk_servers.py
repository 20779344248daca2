"""MCP servers built with the official SDK alone — no agentkit — for the tests of agentkit's client side.

    python mcp_sdk_servers.py weather          # an MCPServer on stdio
    python mcp_sdk_servers.py exit             # writes to stderr and exits before the handshake

In-process tests import `weather_server()` and `flaky_server()` instead.
"""

from __future__ import annotations

import sys

from mcp.server.lowlevel import Server
from pydantic import BaseModel
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import (INVALID_PARAMS, CallToolRequestParams, CallToolResult, ListToolsResult, TextContent, Tool,
                       ToolAnnotations)


class Weather(BaseModel):
    city: str
    sky: str
    temp_c: float


def weather_server(name: str = "sdk-weather") -> MCPServer:
    """Two tools the SDK's own way: schemas from type hints, errors as isError results."""
    server = MCPServer(name)
    server.calls = {"get_weather": 0, "get_time": 0}

    @server.tool(annotations=ToolAnnotations(idempotent_hint=True))
    def get_weather(city: str) -> Weather:
        """Current weather for a city."""
        server.calls["get_weather"] += 1
        if city == "Atlantis":
            raise ValueError("no weather station in Atlantis")
        return Weather(city=city, sky="cloudy", temp_c=18.0)

    @server.tool()
    def get_time(timezone: str) -> str:
        """Current local time in an IANA zone."""
        server.calls["get_time"] += 1
        return "09:30"

    return server


def flaky_server(unknown_first: int = 0, error: tuple[int, str] | None = None, name: str = "flaky",
                 tool_name: str = "ping") -> Server:
    """A low-level SDK server with one tool, `ping`. It answers the first `unknown_first` calls with the
    spec's unknown-tool error (-32602), as a server does while it restarts with a new tool set, or every
    call with the JSON-RPC `error` (code, message). `server.calls` counts, `server.names` records."""
    calls = {"ping": 0, "list": 0}
    names: list[str] = []

    async def list_tools(ctx, params) -> ListToolsResult:
        calls["list"] += 1
        return ListToolsResult(tools=[Tool(name=tool_name, description="Answer pong.",
                                           input_schema={"type": "object", "properties": {}})])

    async def call_tool(ctx, params: CallToolRequestParams) -> CallToolResult:
        calls["ping"] += 1
        names.append(params.name)
        if error is not None:
            raise MCPError(*error)
        if calls["ping"] <= unknown_first:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}")
        return CallToolResult(content=[TextContent(text="pong")])

    server = Server(name, on_list_tools=list_tools, on_call_tool=call_tool)
    server.calls, server.names = calls, names
    return server


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "weather":
        weather_server().run()
    elif kind == "exit":
        print("cannot open the database", file=sys.stderr, flush=True)
        sys.exit(3)
    else:
        sys.exit(f"unknown server kind {kind!r}")
