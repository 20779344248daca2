"""The command line: serve agentkit tools over MCP, or list any MCP server's tools.

    python -m agentkit.mcp serve myapp.tools:TOOLS               # stdio: an MCP client starts this command
    python -m agentkit.mcp serve myapp.tools:TOOLS --http 8000   # Streamable HTTP on 127.0.0.1:8000/mcp
    python -m agentkit.mcp tools http://127.0.0.1:8000/mcp       # what a server offers, one tool a line
    python -m agentkit.mcp tools -- python -m agentkit.mcp serve myapp.tools:TOOLS

A mistake (a malformed MODULE:ATTR, a module that does not import, a server that does not answer) is one
line on stderr and an exit code, never a traceback: 2 for a wrong command line or MODULE:ATTR, 1 for a
server that fails at run time. Status lines go to stderr; on stdio, stdout carries the protocol only.

How `serve` loads MODULE:ATTR. Whatever the module raises while it is imported (SystemExit and
KeyboardInterrupt included) is caught, but a module can also end the process outright (`os._exit()`, a
crash in C): nothing in that process can report it. So, where the OS can fork, `serve` forks first: the
child loads the module, tells the parent over a pipe that it did (or that it reported a failure itself),
and serves; the parent only waits, passes signals on and returns the child's exit code. A child that ends
without a word is reported by the parent in one line (exit 2). Stdin and stdout belong to the child alone,
so a client sees the end of the stream when the server ends. On stdio the server exits as soon as its
stdin closes (its client is gone), even in the middle of a call: nobody is left to read the answer.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any, Sequence

USAGE_ERROR, RUNTIME_ERROR = 2, 1
_LOADED, _REPORTED = b"L", b"R"  # what the serving child tells its parent: loaded, or failed and said why


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
    from . import MissingExtra, require_sdk

    try:
        require_sdk()
    except MissingExtra as missing:  # a command line says it in one line, exit 2
        _say(f"agentkit.mcp: error: {missing}")
        return USAGE_ERROR
    if args.command == "serve":
        return _serve(args)
    return _list_tools(args)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _serve(args: argparse.Namespace) -> int:
    # the folder the command runs in holds the user's module, as with `python -m`
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    if not hasattr(os, "fork"):  # pragma: no cover - Windows: an os._exit() at import goes unreported
        return _load_and_serve(args, None)
    report_r, report_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    child = os.fork()
    if child == 0:
        os.close(report_r)
        _die_with_parent(parent)
        code = RUNTIME_ERROR
        try:
            code = _load_and_serve(args, report_w)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else RUNTIME_ERROR
        except BaseException:  # noqa: BLE001 — not the user's mistake: agentkit's own, shown in full
            import traceback

            traceback.print_exc()
        finally:  # no interpreter shutdown: a tool still running in a thread must not keep the process alive
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os._exit(code)
    os.close(report_w)
    return _watch(child, report_r, args.spec.partition(":")[0])


def _watch(child: int, report: int, module: str) -> int:
    """The parent: hold none of the protocol, pass signals on, and speak only if the child could not."""
    quiet = os.open(os.devnull, os.O_RDWR)
    os.dup2(quiet, 0)
    os.dup2(quiet, 1)
    os.close(quiet)

    def pass_on(signum: int, frame: Any) -> None:
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, pass_on)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the child stops
    said = os.read(report, 1)
    os.close(report)
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    if os.getsid(0) == os.getpid():  # started in a session of its own, as MCP clients start servers
        _end_session()
    if said:  # it loaded (and served), or it told why it could not
        return code if code >= 0 else 128 - code
    if code < 0:
        how = f"it was killed by {signal.Signals(-code).name}"
    else:
        how = f"it ended the process with exit code {code} (os._exit or a crash)"
    _say(f"agentkit.mcp serve: importing {module!r} failed: {how}")
    return USAGE_ERROR


def _end_session() -> None:
    """End what the tools started (their own processes, in our process group): nothing outlives the server.

    Only a session leader does this: the group was made for the server (a client's start_new_session), so
    everything in it is the server's. SIGTERM first, then SIGKILL for whatever is left after a grace period
    (Linux lists the group in /proc; elsewhere SIGTERM is all).
    """
    import time

    from .stdio import TERM_GRACE, running_in_group

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    group, me = os.getpgrp(), os.getpid()
    members = running_in_group(group)
    others = [pid for pid in members or [] if pid != me]
    if members is not None and not others:
        return
    os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE
    while others and time.monotonic() < deadline:
        time.sleep(0.01)
        others = [pid for pid in running_in_group(group) or [] if pid != me]
    for pid in others:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _die_with_parent(parent: int) -> None:
    """Linux: the serving child is stopped when the parent goes (a parent killed outright cannot pass it on)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the client closing stdin is the only link
        return
    if os.getppid() != parent:  # the parent went before the request was made
        os._exit(RUNTIME_ERROR)


def _load_and_serve(args: argparse.Namespace, report: int | None) -> int:
    from .server import load_server

    def tell(word: bytes) -> None:
        if report is not None:
            os.write(report, word)
            os.close(report)

    # While the module is imported, file descriptor 1 points at stderr too: a module that writes to the
    # descriptor directly (a C library, os.write) must not put bytes into the protocol's channel.
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        server = load_server(args.spec, name=args.name)
    except ValueError as exc:
        _say(f"agentkit.mcp serve: {exc}")
        tell(_REPORTED)
        return USAGE_ERROR
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
    tell(_LOADED)
    for problem in server.problems:  # tools refused one by one; the others are served
        _say(f"agentkit.mcp serve: not serving {problem}")
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
    import logging

    from .client import McpConnectionError, connect

    # The SDK logs what it cannot parse with a traceback (Python prints it when nobody set up logging);
    # this command's own error line says what went wrong.
    logging.getLogger("mcp").addHandler(logging.NullHandler())

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
