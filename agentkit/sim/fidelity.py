"""The fidelity ledger: what the simulator does on behalf of each real API, and where that comes from.

Every rule the simulator enforces and every error it answers in a provider's name has an entry in
`fidelity.toml` (next to this file): the format, the rule, the exact wording, whether those words are
the provider's documented ones, reported by users, or the simulator's own ("wording ours"), the source
and the date it was checked. `tests/test_fidelity_ledger.py` makes the simulator produce each entry and
asserts that its text equals the ledger's.

    from agentkit.sim.fidelity import ledger, ledger_table, rules_as_of
    entry = ledger()["anthropic.forced_tool_use"]
    entry.wording                         # 'tool_choice: type "tool" and "any" are not supported ...'
    print(ledger_table("anthropic"))      # a Markdown table; the simulator's own words marked "(wording ours)"
    rules_as_of("gemini")                 # '2026-12-01': when its newest rule was checked against its source

An entry without a source (a URL) or without a real date is refused when the ledger is read, so a rule
cannot be added without saying where it comes from and when that was checked.

Left out on purpose: checking the sources (that is done by hand, with the date recorded).
"""

from __future__ import annotations

import datetime
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from collections.abc import Sequence
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["Entry", "ledger", "parse_ledger", "ledger_table", "rules_as_of", "currency", "LEDGER_FILE",
           "WORDING_KINDS"]

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
              "checked must be a date YYYY-MM-DD": _is_date(entry.checked),
              "source must name a page (an https:// URL)": "https://" in entry.source}
    problems = [problem for problem, ok in checks.items() if not ok]
    if problems:
        raise ValueError(f"{LEDGER_FILE}: entry {entry.id!r}: " + "; ".join(problems))
    return entry


def _is_date(text: Any) -> bool:
    if not isinstance(text, str) or not _DATE.match(text):
        return False
    try:
        datetime.date.fromisoformat(text)
    except ValueError:  # 2026-02-30 has the shape, not the date
        return False
    return True


@lru_cache(maxsize=1)
def ledger() -> dict[str, Entry]:
    """Every entry of the ledger, by id, in the file's order (checked when read: a bad entry raises)."""
    return parse_ledger(resources.files(__package__).joinpath(LEDGER_FILE).read_text(encoding="utf-8"))


def parse_ledger(text: str) -> dict[str, Entry]:
    """Entries from the ledger's TOML text, checked: a field missing (a source, a date, ...), a source that
    names no URL, a date that is not one, an unknown kind or a repeated id raises ValueError."""
    entries = [_entry(raw) for raw in tomllib.loads(text).get("entry", [])]
    ids = [e.id for e in entries]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"{LEDGER_FILE}: duplicate ids {duplicates}")
    return {e.id: e for e in entries}


def _cell(text: str) -> str:
    """Literal text in a Markdown table cell: the APIs' words keep their backticks and asterisks."""
    return re.sub(r"([\\`*<|])", r"\\\1", text).replace("\n", " ")


def ledger_table(fmt: str | None = None, *, columns: tuple[str, ...] = ("rule", "status", "shown_wording",
                                                                        "wording_is", "source", "checked")) -> str:
    """The ledger (or one format's part of it) as a Markdown table, one row per entry.

    `columns` are Entry attributes; the wording is always shown marked where the words are the simulator's
    own ("(wording ours)"), whether the column is asked for as `shown_wording` or as `wording`."""
    columns = tuple("shown_wording" if c == "wording" else c for c in columns)
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


def currency(formats: Sequence[str]) -> list[tuple[str, str, int, int]]:
    """Per format: (format, rules as of, how many rules, how many of them in the simulator's own words);
    a format without entries has "" for its date. What `python -m agentkit.sim --help` and the site show.

        currency(["gemini"])  ->  [("gemini", "2026-12-01", <its rules>, <of them ours>)]
    """
    rows = []
    for fmt in formats:
        entries = [e for e in ledger().values() if fmt in e.applies_to]
        rows.append((fmt, max((e.checked for e in entries), default=""), len(entries),
                     sum(e.wording_is == "ours" for e in entries)))
    return rows
