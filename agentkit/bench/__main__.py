"""python -m agentkit.bench: fetch the data, run a benchmark, report on results.

    python -m agentkit.bench fetch bfcl
    python -m agentkit.bench run --suite bfcl:simple_python,agentkit:error_recovery --provider sim --model oracle
    python -m agentkit.bench run --suite bfcl:live_simple --provider openai --model gpt-4.1-mini --trials 3
    python -m agentkit.bench run --suite agentkit --provider openai-chat --base-url http://localhost:11434/v1 \\
        --model llama3.1                                  # Ollama, vLLM, llama.cpp: any OpenAI-compatible server
    python -m agentkit.bench report bench-results/ --charts charts/

Every failure the user can fix is one line on stderr and an exit code (2: fix the command or the
setup; 1: the run could not go on), never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import sys
from pathlib import Path
from typing import Any

EPILOG = """\
providers: "sim" runs the embedded simulator (models: oracle, sim-reasoner, sim-noisy-SEED, ...; --format
picks its wire format); any wire format (openai-chat, openai-responses, anthropic, gemini, openrouter,
ollama; also openai, claude, google) talks to that provider with its usual key variable (OPENAI_API_KEY,
ANTHROPIC_API_KEY, GEMINI_API_KEY, OPENROUTER_API_KEY, OLLAMA_API_KEY for ollama.com), or to --base-url
(no key needed there). A model name with {seed} in it gets trial i's seed (seed+i): --model
sim-noisy-{seed} --trials 5 (its results file: sim-noisy-seed.jsonl).
Results go to OUT/<label>.jsonl: the run's configuration, then one line per (case, trial); running
the same command again resumes (another configuration under the same label is refused: change --label
or --out; a server on this machine on another port is the same server). A local server that answers
one request at a time: --concurrency 1 and a --timeout two or three times its slowest answer.
report merges any number of files or folders (shards, models).
"""


class UsageProblem(Exception):
    """Something the user must fix in the command or the setup (exit 2)."""


INTERRUPTED = "agentkit.bench: interrupted; finished cases are kept: run the same command again to resume"


def main(argv: list[str] | None = None) -> int:
    """The command line; Ctrl-C at any point, from its first instant, is one line and exit code 130."""
    try:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():  # Ctrl-C is a KeyboardInterrupt again (the
            signal.signal(signal.SIGINT, signal.default_int_handler)  # kit's import had it exit at once)
        return _main(argv)
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130


def _main(argv: list[str] | None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help (0), or a bad flag value already told in one line (2)
        return exit_.code if isinstance(exit_.code, int) else 2
    if args.command is None:
        parser.print_help()
        return 2
    from ..core.errors import AuthenticationError, MissingExtra
    from .bfcl import DataNotFetched, FetchError
    from .record import BadRecording, NoRecording
    from .results import ConfigMismatch, ResultsError
    from .runner import BenchAborted
    from .scenarios import ScenarioError
    from .suites import UnknownSuite

    try:
        _needs_extras(args)
        return args.handler(args)
    except (UsageProblem, UnknownSuite, DataNotFetched, NoRecording, BadRecording, ScenarioError,
            AuthenticationError, ConfigMismatch, ResultsError, MissingExtra, OSError) as exc:
        # OSError: a path that is a folder, a file we may not read or write, ...
        print(f"agentkit.bench: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except (BenchAborted, FetchError) as exc:
        print(f"agentkit.bench: stopped: {_one_line(exc)}", file=sys.stderr)
        return 1


def _one_line(exc: BaseException) -> str:
    text = str(exc) if str(exc) else type(exc).__name__
    if isinstance(exc, OSError) and exc.filename and str(exc.filename) not in text:
        text = f"{text}: {exc.filename}"
    return " ".join(text.split())


def _parser() -> argparse.ArgumentParser:
    from ..cli import OneLineParser, folder, http_url, number, seconds, whole, writable_file
    from ..sim.faults import MAX_DELAY_MS

    parser = OneLineParser(prog="python -m agentkit.bench", description=(
        "Benchmark a model's tool calling: BFCL's public data and agentkit's own loop-robustness suite, "
        "native tool calling, scored, resumable, recordable."), epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="{run,fetch,report,suites}", parser_class=OneLineParser)
    price = number(0.0)

    run = sub.add_parser("run", help="run suites against a model", epilog=EPILOG,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("--suite", required=True, help="e.g. bfcl:simple_python,agentkit:error_recovery (bfcl or "
                                                    "agentkit alone: every category)")
    run.add_argument("--provider", required=True, help="sim, or a wire format / provider name")
    run.add_argument("--model", help="model name (default: sim-reasoner on sim, else the format's default)")
    run.add_argument("--base-url", type=http_url,
                     help="an OpenAI-compatible (or other format's) server instead of the provider")
    run.add_argument("--format", default="openai-chat", help="the simulator's wire format (default openai-chat)")
    run.add_argument("--trials", type=whole(1), default=1, help="runs per case (pass@1 and pass^k are reported)")
    run.add_argument("--concurrency", type=whole(1), default=8, help="cases in flight at once (default 8; "
                                                                     "1 for a server that answers one at a time)")
    run.add_argument("--limit", type=whole(1), help="the first N cases of each category")
    run.add_argument("--shard", type=_shard, help="i/n: run every n-th case starting at the i-th (1-based)")
    run.add_argument("--out", type=folder, default=Path("bench-results"),
                     help="folder for the results (default bench-results)")
    run.add_argument("--label", help="the model's name in results and reports (default: --model)")
    run.add_argument("--seed", type=whole(0), default=0, help="seed of trial 0; trial i uses seed+i")
    run.add_argument("--rpm", type=number(0.0, above=True), help="at most this many model calls per minute")
    run.add_argument("--max-retries", type=whole(0), default=2, help="HTTPModel retries per model call")
    run.add_argument("--timeout", type=seconds, default=60.0, help="seconds per HTTP attempt (default 60)")
    run.add_argument("--stream", action="store_true", help="ask for streamed answers")
    run.add_argument("--temperature", type=_temperature, default=0.001,
                     help="sent with every request (default 0.001, BFCL's own; 'none' sends none: the provider's "
                          "default); recorded in the results file")
    run.add_argument("--sim-latency-ms", type=whole(0, MAX_DELAY_MS),
                     help="sim only: every answer this many ms late")
    run.add_argument("--price-in", type=price, help="USD per million input tokens (adds cost to the report)")
    run.add_argument("--price-out", type=price, help="USD per million output tokens")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--lenient-scoring", action="store_true", help="BFCL cases: accept ints in lists of floats and "
                     "count non-JSON calls on irrelevance (default: BFCL's own verdict; the report says which)")
    run.add_argument("--formats", help="run every case through each of these wire formats, e.g. chat,responses,"
                     "anthropic,gemini,openrouter,ollama (the format x fault matrix; see agentkit.bench.matrix)")
    run.add_argument("--faults", help="... and under each of these injected faults, e.g. none,429,cut,instream,badjson "
                     "(simulator faults; a real server gets a fault proxy on 127.0.0.1)")
    tape = run.add_mutually_exclusive_group()
    tape.add_argument("--record", metavar="FILE", type=writable_file,
                      help="store every HTTP exchange in this cassette (keys removed)")
    tape.add_argument("--replay", metavar="FILE", type=writable_file,
                      help="answer every HTTP request from this cassette, offline")
    run.set_defaults(handler=_run)

    fetch = sub.add_parser("fetch", help="download a suite's data into the cache (once)")
    fetch.add_argument("what", nargs="?", default="bfcl", choices=["bfcl"])
    fetch.add_argument("--wheel", type=writable_file, help="use this bfcl-eval wheel instead of downloading it")
    fetch.set_defaults(handler=_fetch)

    report = sub.add_parser("report", help="merge results files and print the report")
    report.add_argument("paths", nargs="+", help="results files or folders of them")
    form = report.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="JSON instead of Markdown")
    form.add_argument("--csv", action="store_true", help="CSV instead of Markdown: a row per model and category")
    report.add_argument("--charts", metavar="DIR", type=folder,
                        help="also save accuracy, labels and latency charts (PNG)")
    report.add_argument("--price-in", type=price, help="USD per million input tokens")
    report.add_argument("--price-out", type=price, help="USD per million output tokens")
    report.set_defaults(handler=_report)

    suites = sub.add_parser("suites", help="list the suites and their categories")
    suites.set_defaults(handler=_suites)
    return parser


# -- fetch, suites ------------------------------------------------------------------------------------------

def _fetch(args: argparse.Namespace) -> int:
    from . import bfcl

    if bfcl.is_fetched():
        print(f"BFCL {bfcl.VERSION} is already in {bfcl.cache_dir()}")
        return 0
    bfcl.fetch(wheel=Path(args.wheel) if args.wheel else None, quiet=False)
    return 0


def _suites(args: argparse.Namespace) -> int:
    from . import bfcl, scenarios

    fetched = bfcl.is_fetched()
    print("bfcl (Berkeley Function Calling Leaderboard v4, Apache-2.0)" +
          ("" if fetched else f" — not fetched yet: {bfcl.FETCH_COMMAND}"))
    for category in bfcl.CATEGORIES:
        print(f"  bfcl:{category}" + (f"  ({len(bfcl.load(category))} cases)" if fetched else ""))
    from . import multiturn

    for category in multiturn.CATEGORIES:  # named explicitly (bfcl:multi_turn for all four): BFCL's back-ends run
        print(f"  bfcl:{category}" + (f"  ({len(multiturn.load(category))} cases, multi-turn)" if fetched else ""))
    print("agentkit (our own loop-robustness suite, agentkit/data/scenarios/)")
    for category in scenarios.CATEGORIES:
        print(f"  agentkit:{category}  ({len(scenarios.load(category))} cases)")
    return 0


# -- run ------------------------------------------------------------------------------------------------------

def _needs_extras(args: argparse.Namespace) -> None:
    """The optional packages a command uses, checked before it starts: one line naming the extra, no
    half-made results file."""
    from ..extras import need

    if args.command == "run":
        need("tqdm.auto", "bench", "a benchmark run's progress bar")
        if args.record or args.replay:
            need("vcr", "bench", "recording and replaying HTTP (--record / --replay)")
    if getattr(args, "charts", None):
        need("matplotlib", "viz", "charts (--charts)")


def _run(args: argparse.Namespace) -> int:
    from ..core.errors import AuthenticationError
    from ..providers import FORMATS
    from .runner import HTTPModels, RateLimit, check_resume, run_benchmark
    from .suites import load_cases

    if args.formats or args.faults:  # the format x fault matrix: its own runner and report section
        from .matrix import run_from_args

        try:
            return run_from_args(args, _provider(args.provider, FORMATS))
        except ValueError as exc:
            raise UsageProblem(str(exc)) from None
    shard = args.shard
    provider = _provider(args.provider, FORMATS)
    cases = load_cases(args.suite, limit=args.limit, shard=shard, lenient=args.lenient_scoring)
    if not cases:
        raise UsageProblem("no cases to run (check --suite, --limit and --shard)")
    fmt = args.format if provider == "sim" else provider
    if fmt not in FORMATS:
        raise UsageProblem(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    model_name = args.model or ("sim-reasoner" if provider == "sim" else _default_model(fmt))
    label = args.label or model_name
    out = Path(args.out) / (_slug(label) + (f".shard-{shard[0]}-of-{shard[1]}" if shard else "") + ".jsonl")
    if out.is_dir():
        raise UsageProblem(f"the results file {out} is a folder: move it away, or choose another --label or --out")
    # Before anything starts: a file holding another run's results is refused now, not after the set-up.
    check_resume(out, cases, label=label, provider=fmt, stream=args.stream, seed=args.seed,
                 config=_run_config(args, provider, args.base_url, model_name), generation=_generation(args))

    with contextlib.ExitStack() as stack:
        base_url = args.base_url
        if provider == "sim" and not args.replay:
            from .oracle import serve_with_oracle

            faults: Any = f"slow={args.sim_latency_ms}" if args.sim_latency_ms else True
            server = stack.enter_context(serve_with_oracle(cases, faults=faults))
            base_url = server.base_url(fmt)
        elif provider == "sim":
            from ..sim.server import base_url_on

            # never contacted: the cassette answers (requests match on path, not host or port)
            base_url = base_url_on("http://127.0.0.1:9", fmt)
        api_key = "sim-key" if provider == "sim" else None
        if args.replay and api_key is None and not _has_key(fmt):
            api_key = "replay"  # any key: requests are answered from the cassette, and keys were never stored

        make_model = HTTPModels(model_name, fmt, base_url=base_url, api_key=api_key, max_retries=args.max_retries,
                                timeout=args.timeout, send_case=provider == "sim")  # one per worker and trial
        try:
            first = make_model(args.seed)  # fails now, not in every worker, when the key is missing
        except AuthenticationError:
            names = " or ".join(_codec(fmt).API_KEY_ENVS) or "the provider's key variable"
            raise UsageProblem(f"no API key for {fmt}: set {names} (or give --base-url for a server that "
                               "needs none)") from None
        del first
        secrets = [api_key]  # plus every provider key variable's value: recording() scrubs those itself
        if args.record:
            from .record import recording

            stack.enter_context(recording(args.record, secrets=secrets))
        elif args.replay:
            from .record import replaying

            stack.enter_context(replaying(args.replay))
        rate = RateLimit(per_minute=args.rpm) if args.rpm else None
        print(f"{len(cases)} cases x {args.trials} trial(s) on {label} ({'simulator, ' if provider == 'sim' else ''}"
              f"{fmt}{', replayed' if args.replay else ''}) -> {out}", file=sys.stderr)
        summary = asyncio.run(run_benchmark(
            cases, make_model=make_model, out=out, label=label, provider=fmt, trials=args.trials,
            concurrency=args.concurrency, seed=args.seed, rate=rate, stream=args.stream,
            progress=not args.no_progress, replayed=bool(args.replay), secrets=secrets,
            config=_run_config(args, provider, base_url, model_name), generation=_generation(args)))
    print(f"{summary.done} run, {summary.skipped} already done, {summary.passed} passed this time, "
          f"{summary.errors} not scored (failed model calls); results in {out}", file=sys.stderr)
    if summary.timeouts:
        print(timeout_advice(summary.timeouts, args.timeout, args.concurrency), file=sys.stderr)
    from .report import Report

    report = Report.load(out, prices=_price(args))
    _warn(report.warnings)
    print(report.to_markdown())
    return 0


def timeout_advice(timeouts: int, timeout: float, concurrency: int) -> str:
    """What to change when model calls ran out of time: --timeout bounds each HTTP attempt from when its
    request is sent (an --rpm wait comes before it; every conversation has its own connection, so none
    waits for another's), and a server that answers one request at a time keeps the others waiting."""
    lower = (f" or lower --concurrency (now {concurrency}; 1 for a server that answers one request at a time)"
             if concurrency > 1 else "")
    return (f"agentkit.bench: {timeouts} not scored because a model call ran out of time: raise --timeout "
            f"(now {timeout:g} s per attempt, from when its request is sent) to two or three times the slowest "
            f"answer{lower}; the same command with the new flags resumes and runs only the unscored cases")


def _run_config(args: argparse.Namespace, provider: str, base_url: str | None, model_name: str) -> dict:
    """What decides the meaning of this run's results, beyond what the runner knows itself. A new flag that
    changes what a case asks or how it is judged belongs in "options", so a resumed run compares it."""
    return {"base_url": "sim" if provider == "sim" else base_url, "model": model_name,
            "options": {"lenient_scoring": args.lenient_scoring},
            "transport": {"timeout": args.timeout, "max_retries": args.max_retries, "rpm": args.rpm}}


def _warn(warnings: list[str], shown: int = 10) -> None:
    for warning in warnings[:shown]:
        print(f"agentkit.bench: warning: {warning}", file=sys.stderr)
    if len(warnings) > shown:
        print(f"agentkit.bench: warning: ... and {len(warnings) - shown} more lines skipped", file=sys.stderr)


def _provider(name: str, formats: Any) -> str:
    from ..http.environment import PROVIDER_ALIASES  # the friendlier names AGENTKIT_PROVIDER accepts, accepted here too

    name = name.strip().lower()
    name = PROVIDER_ALIASES.get(name, name)
    if name != "sim" and name not in formats:
        raise UsageProblem(f"unknown provider {name!r}: use sim or one of {', '.join(formats)} "
                           f"(or {', '.join(PROVIDER_ALIASES)})")
    return name


def _codec(fmt: str) -> Any:
    from ..providers import get_codec

    return get_codec(fmt)


def _default_model(fmt: str) -> str:
    return _codec(fmt).DEFAULT_MODEL


def _has_key(fmt: str) -> bool:
    return any(os.environ.get(v) for v in _codec(fmt).API_KEY_ENVS)


def _temperature(text: str) -> float | None:
    from ..cli import number

    return None if text.strip().lower() == "none" else number(0.0)(text)


def _generation(args: argparse.Namespace) -> dict:
    """The generation settings the command sends with every request (BFCL's temperature unless told)."""
    return {} if args.temperature is None else {"temperature": args.temperature}


def _shard(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise argparse.ArgumentTypeError(f"{text!r}: write i/n with 1 <= i <= n, e.g. 2/4")
    return int(match[1]), int(match[2])


def _slug(label: str) -> str:
    """The label as a file name: "sim-noisy-{seed}" -> "sim-noisy-seed" (the placeholder read as its word),
    anything else that is not a letter, digit, dot, dash or underscore -> "_"."""
    label = label.replace("{seed}", "seed")
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_") or "model"


def _price(args: argparse.Namespace) -> Any:
    from .report import Price

    if args.price_in is None and args.price_out is None:
        return None
    return Price(args.price_in or 0.0, args.price_out or 0.0)


# -- report ----------------------------------------------------------------------------------------------------

def _report(args: argparse.Namespace) -> int:
    from .report import Report

    report = Report.load(*args.paths, prices=_price(args))
    if not report.records:  # one line, not a warning for each line of a file that is not a results file
        skipped = f" ({len(report.warnings)} line(s) that are not results records)" if report.warnings else ""
        raise UsageProblem(f"no results in {', '.join(args.paths)}{skipped}: give results files written by "
                           "`python -m agentkit.bench run` (or their folders)")
    _warn(report.warnings)
    text = report.to_json() + "\n" if args.json else report.to_csv() if args.csv else report.to_markdown()
    sys.stdout.write(text)
    if args.charts:
        for path in report.save_charts(args.charts):
            print(f"chart: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
