"""The same model, the same cases, through every wire format and under every transport fault.

    from agentkit.bench import matrix
    records = await matrix.run_matrix(cases, "oracle", formats=["openai-chat", "anthropic"],
                                      faults=matrix.parse_faults("none,429,cut"), out="bench-results/m.jsonl")
    print("\\n".join(matrix.markdown(records)))    # score spread, calls, retries and tokens per solved case
    matrix.chart(records)                         # two heat maps: pass@1, and wasted calls per solved case

    python -m agentkit.bench run --suite bfcl:multi_turn_base --limit 20 --provider sim --model oracle \\
        --formats chat,responses,anthropic,gemini,openrouter,ollama --faults none,429,cut,instream,badjson

A benchmark scores a model on one wire format with a healthy network. This one runs each cell
(format × fault) with its own HTTPModel, and the cells differ only in the format and the fault:

- a fault is asked for the way the simulator takes it, the `x-sim-fault` header (agentkit/sim/faults.py).
  On the simulator the server itself obeys it; in front of a real server (`base_url=`, or each
  provider's own host) a fault proxy on 127.0.0.1 does (agentkit/bench/faultproxy.py);
- a fault item is one or more tokens joined by "+" ("429", "instream=503", "503+flaky3"). Unless it
  names its own `flaky=N`, it hits only the first attempt of every model call (flaky=1): the question is
  whether the client recovers and what recovering costs. "503+flaky3" with --max-retries 2 never recovers;
- the flaky counters are reset before each (cell, trial), so every trial meets the same faults.

Per cell the records say how many HTTP attempts the cases made (`attempts`), how many were retries
(`retries`: attempts after the first of a model call) and how many failed (`failed_attempts`: an error
status, a broken connection or stream, a bad body: the wasted calls). The summary divides each by the
solved trials: what one solved case costs in calls, wasted calls, retries and tokens. The spread is the
largest pass@1 minus the smallest, across formats (without faults) and across faults (per format).

Each record is written to `out` as soon as it is done (one JSON line, with "format" and "fault"), so an
interrupted matrix resumes: (cell, case, trial) already there are skipped, failed model calls tried again.

Left out on purpose: faults on a fraction of calls (every fault is asked for, so every run is the same),
and combining a format's cell with a fallback model.
"""

from __future__ import annotations

import os
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..sim import faults as F

NO_FAULT = "none"
#: Short names for the formats (the full names and PROVIDER_ALIASES are accepted too).
FORMAT_SHORT = {"chat": "openai-chat", "responses": "openai-responses"}


@dataclass(frozen=True)
class Cell:
    """One column of the matrix: a wire format and a fault (`header`: the x-sim-fault value, None: no fault)."""

    format: str
    fault: str
    header: str | None

    def label(self, model: str) -> str:
        return f"{model} · {self.format} · {self.fault}"


def parse_formats(text: str) -> list[str]:
    """"chat,responses,anthropic" -> the formats' full names, in order. Raises ValueError (one line)."""
    from ..http.environment import PROVIDER_ALIASES
    from ..providers import FORMATS

    names = [t.strip().lower() for t in text.split(",") if t.strip()]
    if not names:
        raise ValueError("--formats is empty: name one or more of chat, responses, anthropic, gemini, "
                         "openrouter, ollama")
    out = []
    for name in names:
        full = FORMAT_SHORT.get(name) or PROVIDER_ALIASES.get(name) or name
        if full not in FORMATS:
            raise ValueError(f"--formats: unknown format {name!r}; choose from chat, responses, "
                             f"{', '.join(f for f in FORMATS if f not in FORMAT_SHORT.values())}")
        if full not in out:
            out.append(full)
    return out


def parse_faults(text: str) -> list[tuple[str, str | None]]:
    """"none,429,503+flaky3" -> [(name, x-sim-fault header or None)]. Raises ValueError (one line).

    A fault without its own flaky=N gets flaky=1: only the first attempt of each model call fails."""
    items = [t.strip().lower() for t in text.split(",") if t.strip()]
    if not items:
        raise ValueError(f"--faults is empty: name {NO_FAULT!r} or faults such as 429, cut, instream, badjson")
    out: list[tuple[str, str | None]] = []
    for item in items:
        if item == NO_FAULT:
            out.append((item, None))
            continue
        tokens = [t.strip() for t in item.split("+") if t.strip()]
        try:
            plan = F.parse_spec(", ".join(tokens))
        except ValueError as exc:
            raise ValueError(f"--faults {item!r}: {exc}") from None
        if not plan.fails and not plan.latency_ms and not plan.pace_ms and not plan.flaky:
            raise ValueError(f"--faults {item!r} asks for no fault")
        if plan.fails and not plan.flaky:
            tokens.append("flaky=1")
        out.append((item, ", ".join(tokens)))
    if len({name for name, _ in out}) < len(out):
        raise ValueError("--faults names the same fault twice")
    return out


def cells(formats: Sequence[str], faults: Sequence[tuple[str, str | None]]) -> list[Cell]:
    return [Cell(fmt, name, header) for fmt in formats for name, header in faults]


async def run_matrix(cases: Sequence[Any], model: str, *, formats: Sequence[str],
                     faults: Sequence[tuple[str, str | None]], out: str | os.PathLike | None = None,
                     base_url: str | None = None, api_key: str | None = None, trials: int = 1, seed: int = 0,
                     concurrency: int = 8, stream: bool = False, max_retries: int = 2, backoff: float = 0.5,
                     timeout: float = 60.0, progress: bool | dict = False, simulator: bool | None = None,
                     generation: dict | None = None) -> list[dict]:
    """Run every cell; return all records (those already in `out` too). See the module docstring.

    simulator=True (the default when neither base_url nor a provider key is meant): an embedded simulator
    that knows `cases` (model "oracle" answers them; other names are the simulator's models). Otherwise
    `base_url` is a server's root that speaks the formats at their documented paths (Ollama, a gateway),
    or None: each format's own provider host with its key variable; faults then go through a fault proxy.
    `generation` is sent with every request (default: BFCL's, `bfcl.GENERATION`).
    """
    import contextlib

    from .runner import HTTPModels, _Appender, read_records, record_key, run_benchmark

    if trials < 1 or concurrency < 1:
        raise ValueError("trials and concurrency must be >= 1")
    simulator = base_url is None and api_key is None if simulator is None else simulator
    grid = cells(formats, faults)
    previous = [r for r in read_records(out) if "fault" in r] if out else []
    finished = {record_key(r) for r in previous if r.get("label") != "provider_error"}
    records = [r for r in previous if record_key(r) in finished]
    writer = _Appender(out) if out else None
    with contextlib.ExitStack() as stack:
        if simulator:
            from .oracle import serve_with_oracle

            server = stack.enter_context(serve_with_oracle(cases))
            key = "sim-key"
        proxies: dict[str, Any] = {}
        try:
            for cell in grid:
                if simulator:
                    url, resets = server.base_url(cell.format), server.reset
                else:
                    from ..providers import get_codec
                    from ..sim.server import base_url_on

                    url = base_url_on(base_url, cell.format) if base_url else \
                        get_codec(cell.format).DEFAULT_BASE_URL
                    key = api_key  # None: HTTPModel reads the format's key variable (none needed with base_url)
                    resets = None
                    if cell.header is not None:  # a real server does not read x-sim-fault: the proxy does
                        if cell.format not in proxies:
                            from .faultproxy import fault_proxy

                            proxies[cell.format] = stack.enter_context(fault_proxy(url, cell.format))
                        url, resets = proxies[cell.format].base_url, proxies[cell.format].reset
                label = cell.label(model)
                for trial in range(trials):
                    todo = [c for c in cases if (label, c.suite, c.id, trial) not in finished]
                    if not todo:
                        continue
                    if resets is not None:
                        resets()  # every trial meets the same faults: flaky counts start again

                    def keep(record: dict, cell: Cell = cell, trial: int = trial) -> None:
                        record.update({"trial": trial, "seed": seed + trial, "format": cell.format,
                                       "fault": cell.fault, "matrix_model": model})
                        if writer is not None:
                            writer.write(record)
                        records.append(record)

                    headers = {"x-sim-fault": cell.header} if cell.header else None
                    make_model = HTTPModels(model, cell.format, base_url=url, api_key=key, max_retries=max_retries,
                                            backoff=backoff, timeout=timeout, headers=headers, send_case=simulator)
                    await run_benchmark(todo, make_model=make_model, label=label, provider=cell.format, trials=1,
                                        concurrency=concurrency, seed=seed + trial, stream=stream,
                                        progress=progress, on_record=keep, generation=generation)
        finally:
            if writer is not None:
                writer.close()
    latest: dict[tuple, dict] = {}
    for r in records:
        latest[record_key(r)] = r
    return list(latest.values())


# -- the numbers ---------------------------------------------------------------------------------------------

def summary(records: Iterable[dict]) -> dict:
    """Per cell: pass@1, solved trials, and calls, wasted calls, retries and tokens per solved case;
    the spread across formats (no fault) and across faults (per format)."""
    by_cell: dict[tuple[str, str], list[dict]] = defaultdict(list)
    models: dict[str, None] = {}
    for r in records:
        if "fault" in r:
            by_cell[(r["format"], r["fault"])].append(r)
            models[r.get("matrix_model", r["model"])] = None
    rows = []
    for (fmt, fault), mine in by_cell.items():
        per_case: dict[tuple, list[bool]] = defaultdict(list)
        for r in mine:
            per_case[(r["suite"], r["case"])].append(bool(r["ok"]))
        solved = sum(r["ok"] for r in mine)
        totals = {"attempts": sum(r.get("attempts", 0) for r in mine),
                  "wasted": sum(r.get("failed_attempts", 0) for r in mine),
                  "retries": sum(r.get("retries", 0) for r in mine),
                  "tokens": sum(r.get("input_tokens", 0) + r.get("output_tokens", 0) for r in mine)}
        rows.append({"format": fmt, "fault": fault, "cases": len(per_case), "trials": len(mine), "solved": solved,
                     "pass@1": statistics.fmean(sum(v) / len(v) for v in per_case.values()),
                     "provider_errors": sum(r["label"] == "provider_error" for r in mine), **totals,
                     **{f"{k}_per_solved": (v / solved if solved else None) for k, v in totals.items()}})
    formats = list(dict.fromkeys(r["format"] for r in rows))
    faults = list(dict.fromkeys(r["fault"] for r in rows))
    score = {(r["format"], r["fault"]): r["pass@1"] for r in rows}
    spread: dict[str, Any] = {"faults": {}}
    clean = [score[(f, NO_FAULT)] for f in formats if (f, NO_FAULT) in score]
    if len(clean) > 1:
        spread["formats"] = max(clean) - min(clean)
    for fmt in formats:
        values = [score[(fmt, fault)] for fault in faults if (fmt, fault) in score]
        if len(values) > 1:
            spread["faults"][fmt] = max(values) - min(values)
    values = list(score.values())
    spread["all"] = max(values) - min(values) if values else None
    return {"models": list(models), "formats": formats, "faults": faults, "cells": rows, "spread": spread}


def markdown(records: Iterable[dict]) -> list[str]:
    """The report's "Formats × faults" section, as Markdown lines (nothing when no record has a fault)."""
    data = summary(records)
    if not data["cells"]:
        return []

    def per(value: float | None, digits: int = 2) -> str:
        return "—" if value is None else f"{value:,.{digits}f}"

    lines = ["## Formats × faults", "",
             f"The same cases on {', '.join(data['models'])} through each wire format and under each injected "
             "fault (x-sim-fault; a fault without flaky=N hits the first attempt of every model call). "
             "Wasted calls: failed HTTP attempts; retries: attempts after a model call's first.", "",
             "| format | fault | pass@1 | solved / trials | calls per solved | wasted calls per solved | "
             "retries per solved | tokens per solved | failed model calls |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in data["cells"]:
        lines.append(f"| {r['format']} | {r['fault']} | {r['pass@1']:.1%} | {r['solved']} / {r['trials']} | "
                     f"{per(r['attempts_per_solved'])} | {per(r['wasted_per_solved'])} | "
                     f"{per(r['retries_per_solved'])} | {per(r['tokens_per_solved'], 0)} | {r['provider_errors']} |")
    spread = data["spread"]
    lines.append("")
    if "formats" in spread:
        lines.append(f"Spread across formats without faults: {spread['formats'] * 100:.1f} points.")
    for fmt, value in spread["faults"].items():
        lines.append(f"Spread across faults on {fmt}: {value * 100:.1f} points.")
    return lines + [""]


def chart(records: Iterable[dict], title: str = "The same model across formats and faults") -> Any:
    """Two heat maps, formats down and faults across: pass@1, and wasted calls per solved case."""
    from ..viz import finish, pyplot

    data = summary(records)
    formats, faults = data["formats"], data["faults"]
    cell = {(r["format"], r["fault"]): r for r in data["cells"]}
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(2.6 + 1.7 * len(faults), 1.4 + 0.4 * len(formats)), sharey=True)
    panels = [("pass@1 (%)", lambda r: 100 * r["pass@1"], "Greens", 100, "{:.0f}"),
              ("wasted calls per solved case", lambda r: r["wasted_per_solved"], "Reds", None, "{:.2f}")]
    for ax, (name, value, cmap, top, form) in zip(axes, panels):
        grid = [[(value(cell[(f, x)]) if (f, x) in cell and value(cell[(f, x)]) is not None else float("nan"))
                 for x in faults] for f in formats]
        finite = [v for row in grid for v in row if v == v]
        top = top if top is not None else max(finite + [1.0])
        ax.imshow(grid, cmap=cmap, vmin=0, vmax=1.8 * top, aspect="auto")  # light shades: the numbers stay legible
        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                ax.text(j, i, "none solved" if v != v else form.format(v), ha="center", va="center", fontsize=8)
        ax.set_xticks(range(len(faults)), faults, fontsize=8)
        ax.set_yticks(range(len(formats)), formats)
        ax.xaxis.tick_top()
        ax.set_title(name, pad=22, fontsize=9)
        for spine in ax.spines.values():
            spine.set_visible(False)
    fig.suptitle(title, fontsize=10)
    return finish(fig)


def run_from_args(args: Any, provider: str) -> int:
    """`python -m agentkit.bench run --formats ... --faults ...`: raises ValueError for a bad command."""
    import asyncio
    import sys
    from pathlib import Path

    from .suites import load_cases

    if args.shard or args.record or args.replay or args.rpm:
        raise ValueError("--formats/--faults do not combine with --shard, --record, --replay or --rpm")
    if args.sim_latency_ms:
        raise ValueError("--formats/--faults: ask for latency as a fault instead (--faults none,slow=300)")
    formats = parse_formats(args.formats) if args.formats else [args.format if provider == "sim" else provider]
    if provider != "sim" and args.formats and not args.base_url and formats != [provider]:
        raise ValueError("--formats with a real provider needs --base-url (a server that speaks them all, "
                         "e.g. Ollama's root URL); each provider's own host speaks only its own format")
    faults = parse_faults(args.faults) if args.faults else [(NO_FAULT, None)]
    cases = load_cases(args.suite, limit=args.limit, lenient=args.lenient_scoring)
    if not cases:
        raise ValueError("no cases to run (check --suite and --limit)")
    model = args.model or ("sim-reasoner" if provider == "sim" else None)
    if model is None:
        raise ValueError("--formats/--faults need --model (the same model name on every format)")
    label = args.label or model
    slug = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in label).strip("_") or "model"
    out = Path(args.out) / f"{slug}.matrix.jsonl"
    print(f"{len(cases)} cases x {args.trials} trial(s) x {len(formats)} format(s) x {len(faults)} fault(s) on "
          f"{label} -> {out}", file=sys.stderr)
    records = asyncio.run(run_matrix(
        cases, model, formats=formats, faults=faults, out=out, base_url=args.base_url,
        api_key="sim-key" if provider == "sim" else None, simulator=provider == "sim", trials=args.trials,
        seed=args.seed, concurrency=args.concurrency, stream=args.stream, max_retries=args.max_retries,
        timeout=args.timeout, progress=not args.no_progress,
        generation={} if args.temperature is None else {"temperature": args.temperature}))
    print("\n".join(markdown(records)))
    return 0
