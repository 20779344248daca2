"""A server for the tests of both MCP revisions (`python -m agentkit.mcp serve mcp_revision_tools:SERVER`,
or `make_server()` in memory): structured output, a tool that asks for input, a stateful tool that works
by handles, a tool that changes the tool list, and one tool whose return type has no JSON Schema."""

from __future__ import annotations

import secrets
import typing

from agentkit import ToolFailure, tool
from agentkit.mcp import ToolServer, ask_user


class Forecast(typing.TypedDict):  # typing's own TypedDict: pydantic refuses it on Python < 3.12
    city: str
    temp_c: float


def make_server() -> ToolServer:
    baskets: dict[str, list[str]] = {}

    @tool
    def echo(text: str) -> dict:
        """Say it back.

        Args:
            text: Anything.
        """
        return {"echo": text}

    @tool
    def count(n: int) -> list[int]:
        """Count from 0; for n=3 it answers a string among the numbers, breaking its own outputSchema.

        Args:
            n: How many.
        """
        return [*range(n), "three"] if n == 3 else list(range(n))

    @tool
    def transfer(amount: int) -> dict:
        """Send money, once the user has confirmed it.

        Args:
            amount: Euros.
        """
        answer = ask_user(f"Send {amount} EUR?", {"type": "object", "properties": {"ok": {"type": "boolean"}},
                                                  "required": ["ok"]})
        return {"amount": amount, "sent": bool(answer.get("ok"))}

    @tool
    def open_basket() -> dict:
        """Open a shopping basket; pass its basket_id to add_item. Baskets live as long as this server."""
        basket_id = f"bsk_{secrets.token_hex(8)}"
        baskets[basket_id] = []
        return {"basket_id": basket_id}

    @tool
    def add_item(basket_id: str, sku: str) -> dict:
        """Put an item into a basket opened with open_basket.

        Args:
            basket_id: The handle open_basket answered.
            sku: The item.
        """
        if basket_id not in baskets:
            raise ToolFailure("unknown_handle", f"no basket {basket_id!r}: open one with open_basket")
        baskets[basket_id].append(sku)
        return {"basket_id": basket_id, "items": list(baskets[basket_id])}

    @tool
    def drop(name: str) -> str:
        """Remove a tool from this server.

        Args:
            name: The tool to remove.
        """
        server.set_tools([t for t in server.tools if t.name != name])
        return f"dropped {name}"

    @tool
    async def drop_soon(name: str) -> str:
        """Remove a tool from this server, from a tool that runs on the server's event loop.

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

    @tool
    def forecast(city: str) -> Forecast:
        """A forecast (its return type has no JSON Schema here: the server refuses this tool alone)."""
        return {"city": city, "temp_c": 18.0}

    everything = [echo, count, transfer, open_basket, add_item, drop, drop_soon, restore, forecast]
    server = ToolServer(everything, name="revisions")
    return server


SERVER = make_server()
