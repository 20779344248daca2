"""The fidelity ledger: what the simulator does on behalf of each real API, and where that comes from.

Every rule the simulator enforces and every error it answers in a provider's name has an entry in
`fidelity.toml` (next to this file): the format, the rule, the exact wording, whether those words are
the provider's documented ones, reported by users, or the simulator's own ("wording ours"), the source
and the date it was checked. `tests/test_fidelity_ledger.py` makes the simulator produce each entry and
asserts that its text equals the ledger's.

    from agentkit.sim.fidelity import ledger, ledger_table
    entry = ledger()["anthropic.forced_tool_use"]
    entry.wording                         # 'tool_choice: type "tool" and "any" are not supported ...'
    print(ledger_table("anthropic"))      # a Markdown table, as notebook 02 shows it

Left out on purpose: checking the sources (that is done by hand, with the date recorded).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["Entry", "ledger", "ledger_table", "rules_as_of", "LEDGER_FILE", "WORDING_KINDS"]

LEDGER_FILE = "fidelity.toml"
#: Where an entry's words come from; "ours" is shown as "wording ours" and is never the API's words.
WORDING_KINDS = ("documented", "reported", "ours")
#: "error": the simulator refuses (4xx) as the API does; "behaviour": what it shows on success;
#: "degradation": the API accepts the request, but its provider documents (or users report) a worse
#: result, which the simulator's models reproduce in the kit's own way.
KINDS = ("error", "behaviour", "degradation")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class Entry:
    """One rule of one format, as the ledger states it (see the header of fidelity.toml)."""

    id: str
    format: str
    rule: str
    kind: str
    status: int
    wording: str
    wording_is: str
    source: str
    checked: str
    models: tuple[str, ...] = ()
    claim: str | None = None
    note: str = ""
    formats: tuple[str, ...] = ()  # every format the rule applies to, when more than `format`

    @property
    def applies_to(self) -> tuple[str, ...]:
        return self.formats or (self.format,)

    @property
    def outcome(self) -> str:
        """What breaking the rule gets: "refused" (a 4xx), "degraded" (accepted, a worse result), or
        "shown" (a behaviour, not a rule a client can break)."""
        return {"error": "refused", "degradation": "degraded"}.get(self.kind, "shown")

    def matches(self, text: str) -> dict[str, str] | None:
        """The parts a request decides ({i}, {model}, ...) when `text` is this entry's wording, else None."""
        pattern = re.escape(self.wording)
        pattern = re.sub(r"\\\{(\w+)\\\}", lambda m: f"(?P<{m.group(1)}>.+?)", pattern)
        found = re.fullmatch(pattern, text, flags=re.DOTALL)
        return found.groupdict() if found else None

    @property
    def shown_wording(self) -> str:
        """The wording as a table shows it: marked when the words are the simulator's own."""
        return f"{self.wording} (wording ours)" if self.wording_is == "ours" else self.wording


def _entry(raw: dict[str, Any]) -> Entry:
    fields = {**raw, "models": tuple(raw.get("models", ())), "formats": tuple(raw.get("formats", ()))}
    try:
        entry = Entry(**fields)
    except TypeError as exc:
        raise ValueError(f"{LEDGER_FILE}: entry {raw.get('id', '?')!r}: {exc}") from None
    checks = {f"wording_is must be one of {WORDING_KINDS}": entry.wording_is in WORDING_KINDS,
              f"kind must be one of {KINDS}": entry.kind in KINDS,
              "checked must be a date YYYY-MM-DD": bool(_DATE.match(entry.checked)),
              "source is empty": bool(entry.source.strip())}
    problems = [problem for problem, ok in checks.items() if not ok]
    if problems:
        raise ValueError(f"{LEDGER_FILE}: entry {entry.id!r}: " + "; ".join(problems))
    return entry


@lru_cache(maxsize=1)
def ledger() -> dict[str, Entry]:
    """Every entry of the ledger, by id, in the file's order (checked when read: a bad entry raises)."""
    text = resources.files(__package__).joinpath(LEDGER_FILE).read_text(encoding="utf-8")
    entries = [_entry(raw) for raw in tomllib.loads(text).get("entry", [])]
    ids = [e.id for e in entries]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"{LEDGER_FILE}: duplicate ids {duplicates}")
    return {e.id: e for e in entries}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def ledger_table(fmt: str | None = None, *, columns: tuple[str, ...] = ("rule", "status", "shown_wording",
                                                                        "wording_is", "source", "checked")) -> str:
    """The ledger (or one format's part of it) as a Markdown table, one row per entry.

    `columns` are Entry attributes; `shown_wording` marks the simulator's own words "(wording ours)"."""
    rows = [e for e in ledger().values() if fmt is None or fmt in e.applies_to]
    if not rows:
        raise ValueError(f"no ledger entries for format {fmt!r}")
    heads = {"shown_wording": "wording", "wording_is": "words are"}
    lines = ["| " + " | ".join(heads.get(c, c) for c in columns) + " |",
             "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(_cell(str(getattr(e, c))) for c in columns) + " |" for e in rows]
    return "\n".join(lines)


def rules_as_of(fmt: str) -> str:
    """The date the newest rule of `fmt` was checked against its source: "rules as of <date>"."""
    dates = [e.checked for e in ledger().values() if fmt in e.applies_to]
    if not dates:
        raise ValueError(f"no ledger entries for format {fmt!r}")
    return max(dates)
