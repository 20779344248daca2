"""agentkit tools that the MCP tests serve from a child process: `python -m agentkit.mcp serve mcp_tools:TOOLS`.

Also the bad MODULE:ATTR targets the CLI tests point at (NOT_A_TOOL, EMPTY, NOT_TOOLS).
"""

from __future__ import annotations

import os
import sys

from agentkit import tool


@tool(idempotent=True)
def echo(text: str) -> dict:
    """Say it back.

    Args:
        text: Anything.
    """
    return {"echo": text}


@tool
def whoami() -> int:
    """The server's process id (tests check that it is gone afterwards)."""
    return os.getpid()


@tool
def crash() -> str:
    """End the server process at once, the way a crash would."""
    print("crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@tool
def shout(text: str) -> str:
    """Print to stdout (which on stdio is the protocol's channel), then answer.

    Args:
        text: What to shout.
    """
    print("stray output from a tool")
    return text.upper()


TOOLS = [echo, whoami, crash, shout]


def NOT_A_TOOL(text: str) -> str:  # noqa: N802 — the name a user would point at by mistake
    return text


EMPTY: list = []
NOT_TOOLS = ["echo", "whoami"]
