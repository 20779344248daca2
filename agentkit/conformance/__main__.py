"""`python -m agentkit.conformance run -- COMMAND ...`, `scenarios`, `rules`: the check from a shell.

Exit codes of `run`: 0 no rule refused or degraded; 1 some rule refused or degraded; 2 a usage error;
3 a run crashed, hung past --timeout or never called the simulator (its report is incomplete).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from ..cli import OneLineParser, seconds, writable_file
from ..providers import FORMATS
from ..sim.conform import SCRIPTS, model_for
from ..sim.fidelity import ledger
from .runner import DEFAULT_TIMEOUT, run_command
from .scenarios import formats_of, rules_of


def names(known: list[str]) -> Callable[[str], list[str]]:
    """A comma-separated list of names, each one of `known`."""
    def parse(text: str) -> list[str]:
        chosen = [name.strip() for name in text.split(",") if name.strip()]
        unknown = [name for name in chosen if name not in known]
        if unknown or not chosen:
            raise argparse.ArgumentTypeError(f"{text!r}: choose from {', '.join(known)}")
        return chosen
    return parse


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m agentkit.conformance", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    run = commands.add_parser("run", help="run COMMAND once per format and scenario, and report")
    run.add_argument("--formats", type=names(list(FORMATS)), default=None, help="comma-separated (default: all)")
    run.add_argument("--scenarios", type=names(list(SCRIPTS)), default=None, help="comma-separated (default: all)")
    run.add_argument("--json", type=writable_file, default=None, metavar="FILE", help="also write the records")
    run.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT,
                     help=f"seconds per format and scenario before a run is reported as hung ({DEFAULT_TIMEOUT:g})")
    run.add_argument("loop", nargs=argparse.REMAINDER, metavar="-- COMMAND ...")
    commands.add_parser("scenarios", help="list the scenarios: per format, the model that plays each and the rules it "
                                          "exercises")
    rules = commands.add_parser("rules", help="list the rules checked, per format, with their kind and source")
    rules.add_argument("--format", choices=list(FORMATS), default=None)
    args = parser.parse_args(argv)

    if args.command == "scenarios":  # each scenario, then per format its model and the rules it exercises
        for name, script in SCRIPTS.items():
            print(f"{name}: {script.description}")
            for fmt in formats_of(name):
                print(f"  {fmt:17} {model_for(fmt, name)}: {', '.join(rules_of(fmt, name)) or '(no rule of its own)'}")
        return 0
    if args.command == "rules":
        for entry in ledger().values():
            if args.format is None or args.format in entry.applies_to:
                outcome = {"error": "refuses", "degradation": "degrades"}.get(entry.kind, entry.kind)
                print(f"{entry.id:50} {outcome:9} {entry.rule}\n{'':50} {entry.source}")
        return 0
    loop = args.loop[1:] if args.loop[:1] == ["--"] else args.loop
    if not loop:
        parser.error("run needs a command after --")
    report = run_command(loop, args.formats, args.scenarios, timeout=args.timeout)
    print(report.table())
    if args.json is not None:
        Path(args.json).write_text(report.to_json(), encoding="utf-8")
    return report.exit_code


if __name__ == "__main__":
    sys.exit(main())
