"""What a tool call costs when the tool lives behind MCP, and how long a stdio server takes to start.

    python benchmarks/mcp_roundtrip.py

Per call: `agentkit.run` with a scripted model that asks for one instant tool per step (200 steps, the
sync driver, the default thread executor), the same tool local and behind agentkit's MCP client — in
memory, over stdio (a child process), over Streamable HTTP on 127.0.0.1. Median of 3 runs each.
Start-up: `connect()` to `python -m agentkit.mcp serve` until the tools are listed, median of 3, beside the
same for a server written with the SDK alone (`MCPServer`, one tool, on stdio); and the kit server's
`close()`, until its process group is gone, median of 3. The servers import the same agentkit as this
script (its folder goes first on their PYTHONPATH), so a copy of another commit measures that commit.

`--revisions`: also the two revisions against each other in this one process, alternated five times (so
both meet the same load): per call in memory and over stdio with `connect(protocol="2025-11-25")` and
`protocol="2026-07-28"`, medians of the five.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import agentkit
import agentkit.core.validate
from agentkit import ScriptedModel, call, tool
from agentkit.mcp import ToolServer, connect

STEPS = 200
MODULE = '''
from agentkit import tool


@tool
def echo(text: str) -> str:
    """Say it back."""
    return text


TOOLS = [echo]
'''
SDK_MODULE = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("sdk-echo")


@server.tool()
def echo(text: str) -> str:
    """Say it back."""
    return text


if __name__ == "__main__":
    server.run()
'''


@tool
def echo(text: str) -> str:
    """Say it back."""
    return text


def per_call(tools) -> float:
    """Seconds per step of a run whose every step is one call to `echo` (median of 3 runs)."""
    times = []
    for _ in range(3):
        script = ScriptedModel([*([call("echo", {"text": "hi"})] for _ in range(STEPS)), "done"])
        start = time.perf_counter()
        run = agentkit.run(script, "go", tools=tools, limits=agentkit.Limits(max_steps=STEPS + 1))
        times.append((time.perf_counter() - start) / STEPS)
        assert run.tool_runs == STEPS and all(r.ok for r in run.results)
    return statistics.median(times)


def start_and_stop(command: list[str], folder: Path, env: dict[str, str]) -> tuple[float, float]:
    """Median seconds of 3 starts (connect() until the tools are listed) and 3 stops (close())."""
    starts, closes = [], []
    for _ in range(3):
        start = time.perf_counter()
        client = connect(command, cwd=str(folder), env=env)
        assert client.tools  # connect() has listed them: this only reads
        starts.append(time.perf_counter() - start)
        start = time.perf_counter()
        client.close()
        closes.append(time.perf_counter() - start)
    return statistics.median(starts), statistics.median(closes)


def revisions_side_by_side(command: list[str], folder: Path, env: dict[str, str]) -> None:
    """Per call on each revision, alternated in this process: what the revision itself costs."""
    figures: dict[tuple[str, str], list[float]] = {}
    for _ in range(5):
        for protocol in ("2025-11-25", "2026-07-28"):
            with connect(ToolServer([echo]), protocol=protocol) as client:
                figures.setdefault(("in memory", protocol), []).append(per_call(client.tools))
            with connect(command, cwd=str(folder), env=env, protocol=protocol) as client:
                figures.setdefault(("stdio", protocol), []).append(per_call(client.tools))
    print("per tool call on each revision, alternated 5 times in this process (median):")
    for where in ("in memory", "stdio"):
        old, new = (statistics.median(figures[(where, p)]) for p in ("2025-11-25", "2026-07-28"))
        print(f"  MCP, {where:<16} 2025-11-25 {old * 1e6:7.0f} µs   2026-07-28 {new * 1e6:7.0f} µs   "
              f"({new / old:.2f}x)")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--revisions", action="store_true", help="also both revisions, alternated")
    args = options.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="agentkit-bench-"))
    (folder / "bench_tools.py").write_text(MODULE, encoding="utf-8")
    (folder / "sdk_echo.py").write_text(SDK_MODULE, encoding="utf-8")
    command = [sys.executable, "-m", "agentkit.mcp", "serve", "bench_tools:TOOLS"]
    env = {"PYTHONPATH": str(Path(agentkit.__file__).resolve().parents[1])}

    agentkit.core.validate.validator_for(echo.parameters)  # jsonschema loads on first use: not part of a call
    local = per_call([echo])
    with connect(ToolServer([echo])) as client:
        in_memory = per_call(client.tools)
    with connect(command, cwd=str(folder), env=env) as client:
        stdio = per_call(client.tools)
        revision = getattr(client, "protocol_version", "?")
    server = ToolServer([echo])
    with server.serve_http() as url, connect(url) as client:
        http = per_call(client.tools)

    kit_start, kit_stop = start_and_stop(command, folder, env)
    sdk_start, _ = start_and_stop([sys.executable, "sdk_echo.py"], folder, env)

    print(f"per tool call (run() step, median of 3 x {STEPS}):")
    for label, seconds in [("local tool", local), ("MCP, in memory", in_memory), ("MCP, stdio", stdio),
                           ("MCP, Streamable HTTP", http)]:
        print(f"  {label:<22} {seconds * 1e6:9.0f} µs")
    print(f"protocol revision negotiated over stdio: {revision}")
    print("stdio server start (connect() until the tools are listed, median of 3):")
    print(f"  agentkit serve         {kit_start:9.2f} s")
    print(f"  the SDK's MCPServer    {sdk_start:9.2f} s   (agentkit / SDK: {kit_start / sdk_start:.2f}x)")
    print(f"stdio server stop (close() until its process group is gone, median of 3): {kit_stop:.2f} s")
    if args.revisions:
        revisions_side_by_side(command, folder, env)


if __name__ == "__main__":
    main()
