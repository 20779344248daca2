"""Results files: what a run's configuration was, and reading the records back whatever state the file is in.

    config = run_config(cases, label="gpt-4.1", provider="openai-chat", model="gpt-4.1", seed=0)
    problems = differences(previous, config)      # ["seed: 0 in the file, 1 now", ...]; [] = the same run
    results = read_results("bench-results/gpt-4.1.jsonl")
    results.records, results.runs, results.warnings  # good records, run lines, "line 7: ..." for each skipped line

A results file is JSON Lines, appended to and flushed one line at a time. A run writes one *run line*
first — `{"run": {...}}`: the whole configuration that decides what a result means (wire format, model,
label, base URL, streaming, seed, options, the generation settings sent with every request — BFCL's
temperature 0.001 by default —, the scorer's version) and, for the record, the transport
settings that do not (timeout, retries, concurrency, rate) — then one record per (case, trial), carrying
its case's version (a fingerprint of the case's content). A resumed run compares its configuration
with the file's run lines and refuses to append when they differ or a case it would skip has changed
since (`ConfigMismatch`, naming every difference), so one file never mixes two runs.

Reading is forgiving line by line and strict about the file: a damaged or hand-edited line (not JSON,
invalid UTF-8, nested too deep, a field missing or of the wrong type, a `null` model, a number that is
not finite) is skipped with a warning that gives its line number; a file that is not UTF-8 JSON Lines
at all (UTF-16, binary) is one clear `ResultsError`. A line cut short by an interrupted run (the last
line, no newline) is skipped quietly: the runner runs that case again.

Left out on purpose: repairing files, and merging run lines of different configurations.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any

RECORD_VERSION = 2
#: The keys of a run line that decide what its results mean: two runs that differ in one of them never share a file.
COMPARED = ("label", "format", "model", "base_url", "stream", "seed", "options", "generation", "scorer")
#: Recorded for the reader, not compared: they change how fast and how often a call fails, not what a case scores.
TRANSPORT = ("timeout", "max_retries", "concurrency", "rpm")
#: A record's fields and the types they must have (None allowed where the tuple holds type(None)).
FIELDS: dict[str, tuple[type, ...]] = {
    "model": (str,), "suite": (str,), "category": (str,), "case": (str,), "trial": (int,), "ok": (bool,),
    "label": (str, type(None)),
}
OPTIONAL: dict[str, tuple[type, ...]] = {
    "provider": (str, type(None)), "seed": (int, type(None)), "detail": (str, type(None)),
    "steps": (int,), "tool_calls": (int,), "input_tokens": (int,), "output_tokens": (int,),
    "latency_ms": (int, float, type(None)), "replayed": (bool,), "stop_reason": (str, type(None)),
    "answer": (str, type(None)), "case_version": (str,),
}
MAX_NESTING = 32  # a record is a flat object; a line nested deeper is not one of ours


class ResultsError(ValueError):
    """The file as a whole cannot be read as results (wrong encoding, not JSON Lines): one line says why."""


class ConfigMismatch(ValueError):
    """The results file holds a run of another configuration; the message names every difference."""


@dataclass
class Results:
    """What one results file holds: good records, run lines, and a warning per skipped line."""

    path: str
    records: list[dict] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # the line number of each record, for warnings
    runs: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        return len(self.warnings)


# -- the configuration -----------------------------------------------------------------------------------------

def run_config(cases: Iterable[Any], *, label: str, provider: str | None, model: str | None,
               base_url: str | None = None, stream: bool = False, seed: int = 0, options: dict | None = None,
               transport: dict | None = None, generation: dict | None = None) -> dict:
    """The run line's configuration (see the module docstring). Each record carries its case's version
    (`case_version`), so a resumed run with more or fewer cases still compares the cases both ran."""
    categories = sorted({f"{c.suite}:{c.category}" for c in cases})
    return {"label": label, "format": provider, "model": model, "base_url": base_url, "stream": bool(stream),
            "seed": seed, "options": dict(sorted((options or {}).items())),
            "generation": dict(sorted((generation or {}).items())), "scorer": scorer_version(),
            "categories": categories, **{k: v for k, v in (transport or {}).items() if k in TRANSPORT}}


def case_version(case: Any) -> str:
    """A fingerprint of one case's content (prompt, tools, expected answers, world): an edited case gets
    another one, so its old results are not taken for results of the new case."""
    lenient = getattr(case, "lenient", False)  # BFCL's opt-in leniencies judge the same case differently
    digest = hashlib.sha256(f"{case.suite}\0{case.category}\0{case.id}\0{lenient}\0".encode())
    digest.update(_content(case.source).encode())
    return digest.hexdigest()[:12]


def _content(source: Any) -> str:
    try:
        data = asdict(source) if is_dataclass(source) and not isinstance(source, type) else source
        return json.dumps(data, sort_keys=True, default=repr, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # something asdict cannot copy: its repr stands in
        return repr(source)


def scorer_version() -> str:
    """A fingerprint of the code that asks a case and turns the run into a verdict (BFCL's requests, its
    multi-turn play, the scoring rules, the scenarios' judges, the suites)."""
    digest = hashlib.sha256()
    for name in ("scoring.py", "scenarios.py", "suites.py", "bfcl.py", "multiturn.py"):
        try:
            digest.update((Path(__file__).with_name(name)).read_bytes())
        except OSError:  # an install without the sources (bytecode only): the version of the package stands in
            digest.update(f"{name}:{_package_version()}".encode())
    return digest.hexdigest()[:16]


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agentkit-lab")
    except PackageNotFoundError:
        return "unknown"


def differences(recorded: dict | None, config: dict, records: Iterable[dict] = (),
                versions: dict[tuple[str, str, str], str] | None = None) -> list[str]:
    """Why results written under `recorded` must not be mixed with a run of `config`; [] when they may.

    With `records` (the file's) and `versions` ((suite, category, id) -> case_version of the cases about
    to run), a case that changed since it was run is a difference too."""
    if recorded is None:
        return ["the file records no configuration (written by an older agentkit, or by hand)"]
    found = [f"{key}: {_show(recorded.get(key))} in the file, {_show(config.get(key))} now"
             for key in COMPARED if recorded.get(key) != config.get(key)
             and not (key == "base_url" and same_server(recorded.get(key), config.get(key)))]
    if versions:
        changed = sorted({f"{r['suite']}:{r['category']}/{r['case']}" for r in records
                          if versions.get((r["suite"], r["category"], r["case"]), r.get("case_version"))
                          != r.get("case_version")})
        if changed:
            more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
            found.append(f"case{'s' if len(changed) > 1 else ''} {', '.join(changed[:3])}{more} changed since "
                         "the file was written")
    return found


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def same_server(recorded: Any, now: Any) -> bool:
    """Do two base URLs name the same model's server? Equal ones do, and so does a server on this machine
    restarted on another port (`http://127.0.0.1:8080/v1` then `http://localhost:8081/v1`): the port of a
    local server says where it listens today, not which model answers. Any other difference (a host, a
    path, a scheme) is another server."""
    if recorded == now:
        return True
    if not (isinstance(recorded, str) and isinstance(now, str)):
        return False
    from urllib.parse import urlsplit

    try:
        a, b = urlsplit(recorded), urlsplit(now)
        a.port, b.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        return False
    return (a.hostname in LOOPBACK and b.hostname in LOOPBACK and a.scheme == b.scheme
            and a.path.rstrip("/") == b.path.rstrip("/") and a.query == b.query)


def merged_config(runs: list[dict]) -> dict | None:
    """The configuration the file's run lines describe together, or None for none; when two run lines
    disagree on a compared key, the later one's value stands, so `differences` names it."""
    if not runs:
        return None
    merged = dict(runs[0])
    for run in runs[1:]:
        for key in COMPARED:
            if run.get(key) != merged.get(key):
                merged[key] = run.get(key)
    return merged


def _show(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)[:80]


# -- reading ---------------------------------------------------------------------------------------------------

def read_results(path: str | os.PathLike, missing_ok: bool = True) -> Results:
    """Every good record and run line of `path`; a warning with the line number for each line skipped."""
    results = Results(str(path))
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        if missing_ok:
            return results
        raise
    _check_encoding(data, path)
    lines = data.split(b"\n")
    cut_short = bool(lines) and lines[-1] != b""  # the last line has no newline: an interrupted write
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        last = number == len(lines)
        problem, value = _parse(raw)
        if problem is None and isinstance(value, dict) and "run" in value and "case" not in value:
            problem = _check_run(value["run"])
            if problem is None:
                results.runs.append(value["run"])
                continue
        elif problem is None:
            problem = check_record(value)
            if problem is None:
                results.records.append(value)
                results.lines.append(number)
                continue
        if last and cut_short:
            continue  # half a line from an interrupted run: not damage, and the case runs again
        results.warnings.append(f"{path} line {number}: {problem}; skipped")
    return results


def _check_encoding(data: bytes, path: Any) -> None:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or data[:200].count(b"\0") > 0:
        raise ResultsError(f"{path} is not UTF-8 JSON Lines (UTF-16 or binary?): results files are UTF-8; "
                           "save it as UTF-8 or run again into a new --out")


def _parse(raw: bytes) -> tuple[str | None, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"invalid UTF-8 at byte {exc.start}", None
    text = text.removeprefix("\ufeff")  # a UTF-8 byte-order mark an editor added
    if _nesting(text) > MAX_NESTING:
        return f"nested more than {MAX_NESTING} deep (not a results record)", None
    try:
        return None, json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        return f"not JSON ({' '.join(str(exc).split())[:80]})", None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _nesting(text: str) -> int:
    """How deep brackets nest, counted without parsing (strings are skipped): cheap, and no recursion."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def check_record(value: Any) -> str | None:
    """What is wrong with a decoded line as a results record, in words; None for a good one."""
    if not isinstance(value, dict):
        return f"a JSON {type(value).__name__}, not a record"
    for name, types in FIELDS.items():
        if name not in value:
            return f"no {name!r} field"
        if problem := _wrong_type(name, value[name], types):
            return problem
    for name, types in OPTIONAL.items():
        if name in value and (problem := _wrong_type(name, value[name], types)):
            return problem
    if value["trial"] < 0:
        return f"'trial' is {value['trial']}, not a trial number (0 or more)"
    if not value["model"].strip():
        return "'model' is empty"
    return None


def _wrong_type(name: str, value: Any, types: tuple[type, ...]) -> str | None:
    if isinstance(value, bool) and bool not in types:  # True is an int to Python, not to a reader of results
        return f"{name!r} is a boolean, not {_names(types)}"
    if not isinstance(value, types):
        return f"{name!r} is {_kind(value)}, not {_names(types)}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{name!r} is not a finite number"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**53:
        return f"{name!r} is too large"
    return None


def _check_run(run: Any) -> str | None:
    if not isinstance(run, dict):
        return "a run line whose 'run' is not an object"
    return None


def _kind(value: Any) -> str:
    return "null" if value is None else f"a {type(value).__name__}"


def _names(types: tuple[type, ...]) -> str:
    words = {str: "a string", int: "a whole number", float: "a number", bool: "true or false", type(None): "null"}
    return " or ".join(words.get(t, t.__name__) for t in types)


# -- keys out of everything written ----------------------------------------------------------------------------

def scrub_keys(value: Any, secrets: Iterable[str | None] = ()) -> Any:
    """`value` (JSON-able) with every form of `secrets` and of the provider key variables' values masked."""
    from ..http.redaction import redact_json
    from .record import KEY_VARIABLES

    found = [s for s in (*secrets, *(os.environ.get(v) for v in KEY_VARIABLES)) if s]
    return redact_json(value, found) if found else value


# -- the suite as it is now ------------------------------------------------------------------------------------

def known_cases(suite: str, category: str) -> dict[str, set[str]] | None:
    """id -> the case_versions a record of that case may carry now (with and without BFCL's leniencies);
    None when that cannot be known here (BFCL not fetched, a data file that does not load)."""
    from dataclasses import fields, replace

    from .suites import UnknownSuite, load_cases

    if suite == "bfcl":
        from . import bfcl

        if not bfcl.is_fetched():
            return None
    try:
        cases = load_cases(f"{suite}:{category}")
    except UnknownSuite:
        return {}  # a suite or category that does not exist (any more): none of its cases can be counted
    except (OSError, ValueError):
        return None
    scorings = [{}] + ([{"lenient": True}] if any(f.name == "lenient" for f in fields(cases[0])) else []) \
        if cases else [{}]
    return {c.id: {case_version(replace(c, **how)) for how in scorings} for c in cases}
