"""A server whose tools change its own tool list (`python -m agentkit.mcp serve mcp_dynamic_tools:SERVER`, or
`make_server()` in memory): `drop` removes a tool, `restore` puts every tool back."""

from __future__ import annotations

from agentkit import tool
from agentkit.mcp import ToolServer


def make_server() -> ToolServer:
    @tool
    def echo(text: str) -> str:
        """Say it back.

        Args:
            text: Anything.
        """
        return text

    @tool
    def drop(name: str) -> str:
        """Remove a tool from this server.

        Args:
            name: The tool to remove.
        """
        server.set_tools([t for t in server.tools if t.name != name])
        return f"dropped {name}"

    @tool
    def restore() -> str:
        """Put every tool back."""
        server.set_tools(everything)
        return "restored"

    everything = [echo, drop, restore]
    server = ToolServer(everything, name="dynamic")
    return server


SERVER = make_server()
