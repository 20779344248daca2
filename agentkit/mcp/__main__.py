"""The command line: serve agentkit tools over MCP, or list any MCP server's tools.

    python -m agentkit.mcp serve myapp.tools:TOOLS               # stdio: an MCP client starts this command
    python -m agentkit.mcp serve myapp.tools:TOOLS --http 8000   # Streamable HTTP on 127.0.0.1:8000/mcp
    python -m agentkit.mcp tools http://127.0.0.1:8000/mcp       # what a server offers, one tool a line
    python -m agentkit.mcp tools -- python -m agentkit.mcp serve myapp.tools:TOOLS

A mistake (a malformed MODULE:ATTR, a module that does not import, a server that does not answer) is one
line on stderr and an exit code, never a traceback: 2 for a wrong command line or MODULE:ATTR, 1 for a
server that fails at run time. Status lines go to stderr; on stdio, stdout carries the protocol only.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

USAGE_ERROR, RUNTIME_ERROR = 2, 1


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse prints usage and the error over several lines
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message} (see --help)\n")


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0-65535; 0: the OS chooses)")
    return port


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} must be a positive number of seconds")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m agentkit.mcp", description="agentkit tools over MCP (Model Context Protocol)")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    serve = commands.add_parser("serve", help="serve agentkit tools to MCP clients")
    serve.add_argument("spec", metavar="MODULE:ATTR", help="a Tool, a list of Tools or a ToolServer, e.g. app:TOOLS")
    serve.add_argument("--http", metavar="PORT", type=_port,
                       help="Streamable HTTP on http://127.0.0.1:PORT/mcp instead of stdio (0: any free port)")
    serve.add_argument("--name", help="the server name clients see (default: the module name)")
    tools = commands.add_parser("tools", help="list the tools of an MCP server (a URL, or a command after --)")
    tools.add_argument("target", nargs="+", metavar="URL_OR_COMMAND")
    tools.add_argument("--timeout", type=_seconds, default=30.0, help="seconds to wait for the handshake (default 30)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    return _list_tools(args)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _serve(args: argparse.Namespace) -> int:
    from .server import load_server

    # the folder the command runs in holds the user's module, as with `python -m`
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        server = load_server(args.spec, name=args.name)
    except ValueError as exc:
        _say(f"agentkit.mcp serve: {exc}")
        return USAGE_ERROR
    names = ", ".join(t.name for t in server.tools)
    try:
        if args.http is None:
            _say(f"agentkit.mcp: serving {server.name!r} on stdio (pid {os.getpid()}): {names}")
            server.run_stdio()
        else:
            server.run_http(args.http, announce=lambda url: _say(
                f"agentkit.mcp: serving {server.name!r} on {url} (pid {os.getpid()}): {names}"))
    except KeyboardInterrupt:
        return 0
    except OSError as exc:  # e.g. the port is in use
        _say(f"agentkit.mcp serve: {exc.strerror or exc}")
        return RUNTIME_ERROR
    return 0


def _list_tools(args: argparse.Namespace) -> int:
    from .client import McpConnectionError, connect

    target = args.target[0] if len(args.target) == 1 and "://" in args.target[0] else list(args.target)
    try:
        with connect(target, connect_timeout=args.timeout) as client:
            print(f"{client.server_name} ({client.protocol_version}): {len(client.tools)} tools")
            for tool in client.tools:
                summary = (tool.description or "").strip().splitlines()[:1]
                print(f"  {tool.name}({', '.join(tool.parameters.get('properties') or {})})"
                      + (f"  {summary[0]}" if summary else ""))
            for problem in client.problems:
                print(f"  skipped {problem}")
    except McpConnectionError as exc:
        _say(f"agentkit.mcp tools: {exc}")
        return RUNTIME_ERROR
    return 0


if __name__ == "__main__":
    sys.exit(main())
