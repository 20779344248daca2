"""What one loop did in each (format, scenario): the rules it kept, broke or degraded, and how its run ended.

    report.exit_code       0 clean, 1 a rule refused or degraded, 3 a run crashed, hung or sent nothing
    print(report.table())  the grid of scenarios x formats, then every refusal and degradation in words
    report.records         one Record per rule and run (the JSON of `--json`)

The simulator logs, per request, every rule it checked and what it found (`agentkit.sim.wire.common.Finding`):
**passed**; **refused** (the real API answers 4xx, and so did the simulator); **degraded** (the real API
accepts the request, with a worse result); **answered** (an error the scenario plays on purpose, a 429, a
529, a spend limit, a model without tools: it counts against no loop). A run's records add two things the
log of one request cannot know:

- **A final error sent again is refused.** The simulator already refuses a spend limit sent again; a run
  that sends a tool-less model its tools again after the refusal is refused the same way here (the words
  say "sent again").
- **Every rule of the format no request touched is "not exercised"**, so a clean report says how much of
  the ledger the scenario reached.

Records keep one finding per rule and run: each refusal and degradation with its request and message index,
else the first request that passed (or answered) the rule, else "not exercised". A request number counts
the run's own requests (1 is the first the loop sent); a message index counts the request's messages
(input items, contents) from 0, as the API names them.

Left out on purpose: judging the loop's final answer (the check is about the wire, not the words).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from ..sim.conform import SCRIPTS
from ..sim.fidelity import ledger
from .scenarios import ENDS_IN_ERROR

__all__ = ["FAILED", "KEPT", "OUTCOMES", "Record", "Report", "Run", "records_of"]

OUTCOMES = ("passed", "refused", "degraded", "answered", "not exercised")
#: Outcomes that count for the loop: the rule was kept, or the scenario's own error was met.
KEPT = ("passed", "answered")
#: How a run can end without an answer the check can read: each makes the exit code 3.
FAILED = ("crashed", "hung", "silent")
CLEAN, BROKEN, COMMAND_FAILED = 0, 1, 3


@dataclass(frozen=True)
class Record:
    """One rule in one run: what the loop did with it, where, and the words of a refusal or degradation."""

    format: str
    scenario: str
    rule: str
    outcome: str  # one of OUTCOMES
    request: int | None = None  # the run's request number, 1 = the first the loop sent
    message: int | None = None  # the message (input item, content) index in that request
    words: str | None = None
    source: str | None = None  # the ledger's source for the rule


@dataclass
class Run:
    """One (format, scenario): the model it was played by, how the loop's run ended, and its records."""

    format: str
    scenario: str
    model: str
    ended: str  # "finished", "stopped" (after a refusal or a final provider error), or one of FAILED
    requests: int = 0
    detail: str = ""  # the command's exit code and last lines of output, or the loop's exception
    records: list[Record] = field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(1 for r in self.records if r.outcome == outcome)

    @property
    def broken(self) -> list[Record]:
        return [r for r in self.records if r.outcome in ("refused", "degraded")]

    def summary(self) -> str:
        """One cell of the grid: "ok", "2 refused", "1 degraded", "hung", ..."""
        if self.ended in FAILED:
            return self.ended
        counts = Counter(r.outcome for r in self.broken)
        return ", ".join(f"{n} {outcome}" for outcome, n in counts.items()) or "ok"


def _source(rule: str) -> str | None:
    entry = ledger().get(rule)
    return entry.source if entry else None


def records_of(fmt: str, scenario: str, logs: list[Any]) -> list[Record]:
    """The records of one run from its requests' logs (`SimServer.rule_logs`), oldest first."""
    kept: dict[str, list[Record]] = {}
    final = (SCRIPTS[scenario].answers_with or {}).get(fmt, ())  # what the scenario's model refuses, for good
    for number, log in enumerate(logs, start=1):
        for finding in log.findings:
            outcome, words = finding.outcome, finding.words
            if outcome == "answered" and finding.rule in final and finding.rule in kept:
                outcome, words = "refused", f"sent again after a final error: {words}"
            kept.setdefault(finding.rule, []).append(Record(fmt, scenario, finding.rule, outcome, number,
                                                            finding.message_index, words, _source(finding.rule)))
    records = []
    for found in kept.values():
        broken = [r for r in found if r.outcome not in KEPT]
        records += broken or found[:1]
    records += [Record(fmt, scenario, entry.id, "not exercised", source=entry.source)
                for entry in ledger().values() if fmt in entry.applies_to and entry.id not in kept]
    return records


def ended_as(scenario: str, exited_badly: bool, records: list[Record], requests: int) -> str:
    """How a run ended: a loop that fails after a refusal, or after a scenario's final provider error,
    stopped where it should; one that fails otherwise crashed; one that ends well having sent nothing is
    silent."""
    if not exited_badly:
        return "finished" if requests else "silent"
    final_met = scenario in ENDS_IN_ERROR and any(r.outcome == "answered" for r in records)
    refused = any(r.outcome == "refused" for r in records)
    return "stopped" if final_met or refused else "crashed"


@dataclass
class Report:
    """Every run of one check."""

    runs: list[Run]

    @property
    def records(self) -> list[Record]:
        return [record for run in self.runs for record in run.records]

    @property
    def broken(self) -> list[Record]:
        return [record for run in self.runs for record in run.broken]

    @property
    def failed(self) -> list[Run]:
        return [run for run in self.runs if run.ended in FAILED]

    @property
    def exit_code(self) -> int:
        """3 when a run crashed, hung or sent nothing (the report is incomplete), else 1 when a rule was
        refused or degraded, else 0."""
        return COMMAND_FAILED if self.failed else BROKEN if self.broken else CLEAN

    def passed_by_format(self) -> dict[str, tuple[int, int]]:
        """Per format: (rules kept, rules exercised) over all its runs; a rule counts as kept in a format
        only if no run there refused or degraded it (passed, or its error answered as the scenario plays it)."""
        exercised: dict[str, set[str]] = {}
        broken: dict[str, set[str]] = {}
        for r in self.records:
            if r.outcome != "not exercised":
                exercised.setdefault(r.format, set()).add(r.rule)
            if r.outcome in ("refused", "degraded"):
                broken.setdefault(r.format, set()).add(r.rule)
        return {fmt: (len(rules - broken.get(fmt, set())), len(rules)) for fmt, rules in exercised.items()}

    def table(self) -> str:
        """The grid (a row per scenario, a column per format), then each run that did not come out clean:
        how it ended, and each rule it refused or degraded, with the first request and message it happened
        at, how many more times, and the words (every one is a record: `records`, `to_json`)."""
        formats = list(dict.fromkeys(run.format for run in self.runs))
        scenarios = list(dict.fromkeys(run.scenario for run in self.runs))
        cells = {(run.scenario, run.format): run.summary() for run in self.runs}
        width = max([len("scenario"), *map(len, scenarios)])
        widths = [max(len(fmt), *(len(cells.get((s, fmt), "-")) for s in scenarios)) for fmt in formats]
        lines = ["  ".join(["scenario".ljust(width), *(f.ljust(w) for f, w in zip(formats, widths))]).rstrip()]
        for s in scenarios:
            lines.append("  ".join([s.ljust(width), *(cells.get((s, f), "-").ljust(w)
                                                      for f, w in zip(formats, widths))]).rstrip())
        for run in self.runs:
            if run.ended == "finished" and not run.broken:
                continue
            lines += ["", f"{run.format} / {run.scenario} ({run.model}): {run.ended} after {run.requests} "
                          f"request{'s' if run.requests != 1 else ''}" + (f"; {run.detail}" if run.detail and
                                                                           run.ended != "finished" else "")]
            groups: dict[tuple[str, str], list[Record]] = {}
            for r in run.broken:  # a rule broken at every message is one line, not one per message
                groups.setdefault((r.outcome, r.rule), []).append(r)
            for (outcome, rule), found in groups.items():
                first = found[0]
                where = f"request {first.request}" + (f", message {first.message}" if first.message is not None else "")
                if len(found) > 1:
                    where += f"; {len(found) - 1} more, up to request {found[-1].request}"
                lines.append(f"  {outcome:8} {rule}  ({where}): {first.words}")
        passed = sum(run.count(outcome) for run in self.runs for outcome in KEPT)
        lines += ["", f"{len(self.runs)} runs: {passed} rule checks kept, {len(self.broken)} refused or "
                      f"degraded, {len(self.failed)} runs crashed, hung or sent nothing; exit code {self.exit_code}"]
        return "\n".join(lines)

    def to_json(self) -> str:
        """The records, and how each run ended, as JSON."""
        return json.dumps({
            "exit_code": self.exit_code,
            "runs": [{"format": run.format, "scenario": run.scenario, "model": run.model, "ended": run.ended,
                      "requests": run.requests, "detail": run.detail} for run in self.runs],
            "records": [asdict(record) for record in self.records],
        }, indent=1)
