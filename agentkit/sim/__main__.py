"""Run the simulator in the foreground: `python -m agentkit.sim --port 8765` (Ctrl-C stops it).

It binds 127.0.0.1 only, because it needs no API key (`--require-key`: a request without one gets the
provider's own 401 or 403, as from the real API).
"""

from __future__ import annotations

import argparse
import sys

from ..cli import OneLineParser, port, whole
from ..providers import FORMATS
from .faults import FAULTS, parse_spec
from .fidelity import LEDGER_FILE, currency
from .server import base_path, http_protocol, listening_socket, sdk_base_path


def main(argv: list[str] | None = None) -> int:
    fault_lines = "\n".join(f"  {name + ('[=N]' if default is not None else ''):12} {text}"
                            + (f" (N={default})" if default is not None else "")
                            for name, (default, text) in FAULTS.items())
    parser = OneLineParser(
        prog="python -m agentkit.sim", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="agentkit's provider simulator (the wire formats: " + ", ".join(FORMATS) + ").",
        epilog=f"The rules it enforces for each API, from the fidelity ledger (agentkit/sim/{LEDGER_FILE}):\n"
               f"{rule_lines()}\n\n"
               "Faults on demand, by model-name suffix (sim-reasoner-429-flaky2) or request header\n"
               f"(x-sim-fault: 429=2000, flaky=2):\n{fault_lines}")
    parser.add_argument("--port", type=port, default=8765, help="TCP port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--faults", type=_fault_spec, default=None, metavar="SPEC",
                        help='a fault spec applied to every request, e.g. "slow=200"')
    parser.add_argument("--no-faults", action="store_true", help="ignore x-sim-fault headers and model suffixes")
    parser.add_argument("--max-body-bytes", type=whole(1), default=None, help="request size limit (default 4 MiB)")
    parser.add_argument("--require-key", action="store_true",
                        help="answer a request without an API key with the provider's own 401/403 (default: no "
                             "key needed)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)

    import uvicorn

    from .app import create_app

    options: dict = {"faults": False if args.no_faults else (args.faults or True), "require_key": args.require_key}
    if args.max_body_bytes is not None:
        options["max_body_bytes"] = args.max_body_bytes
    app = create_app(**options)

    try:
        sock = listening_socket("127.0.0.1", args.port)
    except OSError as exc:
        print(f"cannot bind 127.0.0.1:{args.port}: {exc.strerror}", file=sys.stderr)
        return 1
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    print(f"agentkit.sim listening on {url}")
    for fmt in FORMATS:
        print(f"  {fmt:17} base_url {url + base_path(fmt):32} SDK base_url {url + sdk_base_path(fmt)}")
    print("Any API key works; Ctrl-C stops.", flush=True)
    _log_to_terminal(args.log_level)
    config = uvicorn.Config(app, http=http_protocol(), loop="asyncio", lifespan="off", log_level=args.log_level,
                            access_log=args.log_level == "debug", server_header=False, proxy_headers=False)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


def _log_to_terminal(level: str) -> None:
    """The simulator's own log lines (e.g. why a simulated call lacks a required argument) on stderr, at
    --log-level, in uvicorn's style; inside a notebook (`sim.serve()`) they stay in the log, unprinted."""
    import logging

    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s:     %(message)s"))
    logger = logging.getLogger("agentkit.sim")
    logger.setLevel(level.upper())
    logger.addHandler(handler)


def rule_lines() -> str:
    """One line per format: when its rules were last checked against their sources, and how many there are."""
    return "\n".join(f"  {fmt:17} rules as of {date or 'never checked'} ({count} rules, {ours} in the "
                     "simulator's own words)" for fmt, date, count, ours in currency(FORMATS))


def _fault_spec(text: str) -> str:
    """A spec the simulator can read ("slow=200", "429,flaky2"), checked before the server starts."""
    try:
        parse_spec(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


if __name__ == "__main__":
    sys.exit(main())
