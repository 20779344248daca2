"""What one loop did in each (format, scenario): the rules it kept, broke or degraded, and how its run ended.

    report.exit_code       0 clean, 1 a rule refused or degraded, 3 a run crashed, hung or sent nothing
    print(report.table())  the grid of scenarios x formats, then every refusal and degradation in words
    report.records         one Record per rule and run (the JSON of `--json`)

The simulator logs, per request, every rule it checked and what it found (`agentkit.sim.wire.common.Finding`:
passed, refused, degraded). A run's records read those logs with two things the log alone does not know:

- **The scenario's own provider errors are not the loop's.** A 429, a 529 or a spend limit the scenario plans
  is recorded as *passed* the first time the loop meets it (the loop did nothing wrong by receiving it). A
  final error (a spend limit, a model that refuses tools) sent again is *refused*: retrying it is the
  break. A retried 429 or 529 is what the provider asks for.
- **Every rule of the format no request touched is "not exercised"**, so a clean report says how much of the
  ledger the scenario reached.

Records keep one finding per rule and run: each refusal and degradation with its request and message index,
else the first request that passed the rule, else "not exercised". A request number counts the run's own
requests (1 is the first the loop sent); a message index counts the request's messages (input items,
contents) from 0, as the API names them.

Left out on purpose: judging the loop's final answer (the check is about the wire, not the words).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from ..sim.fidelity import ledger
from .scenarios import ENDS_IN_ERROR

__all__ = ["Record", "Run", "Report", "OUTCOMES", "FAILED", "records_of"]

OUTCOMES = ("passed", "refused", "degraded", "not exercised")
#: How a run can end without an answer the check can read: each makes the exit code 3.
FAILED = ("crashed", "hung", "silent")
CLEAN, BROKEN, COMMAND_FAILED = 0, 1, 3

#: The rules a scenario's provider errors are logged under (`sim.app.fault_rule`), and the refusal of a
#: model that has no tools: what the scenario does to the loop, not what the loop does wrong.
_PROVIDER_ERROR = re.compile(r"\.(?:fault_\d+|spend_limit|provider_down|model_without_tools)$")
_FINAL_ERROR = re.compile(r"\.(?:spend_limit|model_without_tools)$")
#: Where a finding is, as each API writes it: "messages[3]", "input[2].content", "messages.3.content.0".
_MESSAGE = re.compile(r"^(?:messages|input|contents)(?:\[(\d+)\]|\.(\d+))")


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


def _message_index(where: str | None) -> int | None:
    match = _MESSAGE.match(where or "")
    return int(match.group(1) or match.group(2)) if match else None


def _source(rule: str) -> str | None:
    entry = ledger().get(rule)
    return entry.source if entry else None


def records_of(fmt: str, scenario: str, logs: list[Any]) -> list[Record]:
    """The records of one run from its requests' logs (`SimServer.rule_logs`), oldest first."""
    kept: dict[str, list[Record]] = {}
    final_errors_met: set[str] = set()
    for number, log in enumerate(logs, start=1):
        for finding in log.findings:
            outcome, words = finding.outcome, finding.words
            if outcome == "refused" and _PROVIDER_ERROR.search(finding.rule):
                if _FINAL_ERROR.search(finding.rule) and finding.rule in final_errors_met:
                    words = f"sent again after a final error: {words}"
                else:
                    final_errors_met.add(finding.rule)
                    outcome = "passed"
            record = Record(fmt, scenario, finding.rule, outcome, number, _message_index(finding.where), words,
                            _source(finding.rule))
            kept.setdefault(finding.rule, []).append(record)
    records = []
    for found in kept.values():
        broken = [r for r in found if r.outcome != "passed"]
        records += broken or found[:1]
    touched = set(kept)
    records += [Record(fmt, scenario, entry.id, "not exercised", source=entry.source)
                for entry in ledger().values() if fmt in entry.applies_to and entry.id not in touched]
    return records


def ended_as(scenario: str, exited_badly: bool, records: list[Record], requests: int) -> str:
    """How a run ended: a loop that fails after a refusal, or after a scenario's final provider error,
    stopped where it should; one that fails otherwise crashed; one that ends well having sent nothing is
    silent."""
    if not exited_badly:
        return "finished" if requests else "silent"
    final_met = scenario in ENDS_IN_ERROR and any(_FINAL_ERROR.search(r.rule) for r in records)
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
        """Per format: (rules passed, rules exercised) over all its runs; a rule counts as passed in a
        format only if no run there refused or degraded it."""
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
        how it ended, and every refusal and degradation with its request, message and words."""
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
            for r in run.broken:
                where = f"request {r.request}" + (f", message {r.message}" if r.message is not None else "")
                lines.append(f"  {r.outcome:8} {r.rule}  ({where}): {r.words}")
        passed = sum(run.count("passed") for run in self.runs)
        lines += ["", f"{len(self.runs)} runs: {passed} rule checks passed, {len(self.broken)} refused or "
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
