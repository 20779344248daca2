"""Tools the process tests serve from a child (`python -m agentkit.mcp serve mcp_process_tools:TOOLS`): they
start processes of their own, hold a call open, and answer with bytes a client must survive."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from agentkit import tool


@tool
def whoami() -> int:
    """The serving process's id."""
    return os.getpid()


@tool
def start_grandchild(inherit_pipes: bool = False) -> int:
    """Start a long sleep of the server's own, its output to /dev/null (or on the server's own stdin and
    stdout, as careless code does).

    Args:
        inherit_pipes: Let it hold the server's stdin and stdout.
    """
    quiet = {} if inherit_pipes else {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL}
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], **quiet).pid


@tool
def linger(started: str, seconds: float = 600) -> str:
    """Start a long sleep of the server's own, write both process ids to the file `started` ("server
    grandchild"), then take `seconds` to answer.

    Args:
        started: A file to write once the call is under way.
        seconds: How long to take.
    """
    grandchild = start_grandchild.fn()
    Path(started + ".part").write_text(f"{os.getpid()} {grandchild}")
    os.replace(started + ".part", started)  # whole or absent: the test reads it as soon as it exists
    time.sleep(seconds)
    return "done"


@tool
def die() -> str:
    """The serving process kills itself (SIGKILL) in the middle of the call."""
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


@tool
def big(megabytes: int = 10) -> str:
    """A result of this many megabytes.

    Args:
        megabytes: The size.
    """
    return "x" * (megabytes * 1_000_000)


@tool
def ping() -> str:
    """pong"""
    return "pong"


TOOLS = [whoami, start_grandchild, linger, die, big, ping]
