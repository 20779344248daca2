"""agentkit's own suite: what BFCL's single-turn cases cannot see — the loop around the calls.

    from agentkit.bench import scenarios
    cases = scenarios.load("error_recovery")            # agentkit/data/scenarios/error_recovery.json
    case = cases[0]
    world = case.new_world()                             # a fresh copy of the stand-in company
    run = agentkit.run(model, case.prompt, tools=world.tools(case.tools))
    case.judge(run, world)                               # Verdict(ok=..., label=..., detail=...)

Four categories, one JSON file each, every file checked against `agentkit/data/scenarios/schema.json` (package data):

    multi_step      a call needs an earlier call's result (look up the customer, then its invoices)
    error_recovery  the first result is an error: fix the arguments, pick another tool, or explain
    strict_schema   enums, dates, ISO codes, nested objects, as the model must send them
    limits          stop when a tool says so, or within a call budget the user announced

The tools run for real against a `World` (world.py), and a case is judged by the state the tools end
in and the facts in the final answer — never by one exact path. In order:

    limit_ignored     more tool calls than the announced budget, or any call after a result that
                      said STOP_PHRASE
    (pass)            every state check holds, every fact is in the final answer, no absent word is
    ...otherwise, why, from what went wrong last:
    <gate label>      the last failed call was refused by a gate and never put right (bad_json,
                      type_error, missing_argument, unexpected_argument, wrong_value, wrong_function)
    no_recovery       the last failed call was a service error, and the run went nowhere after it
    no_final_answer   the run stopped at a cap without answering
    wrong_state       the tools' end state is not what the task needs
    missing_fact      the answer lacks a fact (or says an absent word)

Left out on purpose: judging style or tone of the answer, and LLM-as-judge. Facts are substrings.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..core.types import Message
from .oracle import case_key
from .scoring import Verdict
from .world import DATA_DIR, SERVICES, STOP_PHRASE, World, service_tools

CATEGORIES = ("multi_step", "error_recovery", "strict_schema", "limits")
DEFAULT_MAX_STEPS = 8

#: How a refused or failed call's error kind (the envelope's error.kind / keyword) reads as a label.
_GATE_LABELS = {"bad_json": "bad_json", "not_object": "bad_json", "too_large": "bad_json", "too_deep": "bad_json",
                "unknown_tool": "wrong_function", "rule": "wrong_value"}
_SCHEMA_LABELS = {"required": "missing_argument", "additionalProperties": "unexpected_argument",
                  "type": "type_error"}
_NOT_THE_MODELS_DOING = {"not_run", "denied"}


class ScenarioError(ValueError):
    """A scenario file does not follow the schema or names something that does not exist."""


@dataclass(frozen=True)
class Scenario:
    id: str
    category: str
    title: str
    prompt: str
    tools: tuple[str, ...]
    expect: dict
    oracle: tuple[dict, ...]
    system: str | None = None
    source: str | None = None
    world: dict = field(default_factory=dict)
    faults: tuple[dict, ...] = ()
    notices: tuple[dict, ...] = ()
    budget: int | None = None
    max_steps: int = DEFAULT_MAX_STEPS

    # -- running ----------------------------------------------------------------------------------------

    def messages(self) -> list[Message]:
        return ([Message.system(self.system)] if self.system else []) + [Message.user(self.prompt)]

    def new_world(self) -> World:
        return World.fresh(self.world, list(self.faults), list(self.notices))

    # -- the oracle plays the reference solution -------------------------------------------------------------

    def oracle_key(self) -> str:
        return case_key(self.messages(), [service_tools()[name] for name in self.tools])

    def oracle_step(self, step: int) -> tuple[list[tuple[str, dict]], str | None]:
        """Turn `step` (0 = first) of the reference solution: (calls, None) or ([], answer)."""
        if step >= len(self.oracle):
            return [], self.oracle[-1].get("answer", "Done.")
        turn = self.oracle[step]
        if "answer" in turn:
            return [], turn["answer"]
        return [(c["name"], c["arguments"]) for c in turn["calls"]], None

    # -- judging ------------------------------------------------------------------------------------------

    def judge(self, run: Any, world: World) -> Verdict:
        """Verdict for one finished run (see the module docstring for the order of the checks)."""
        messages = run.new_messages
        calls = [(i, c) for i, m in enumerate(messages) if m.role == "assistant" for c in m.tool_calls]
        if self.budget is not None and len(calls) > self.budget:
            return Verdict.failed("limit_ignored", f"{len(calls)} tool calls; the budget was {self.budget}")
        stop_at = next((i for i, m in enumerate(messages) if m.role == "tool" and STOP_PHRASE in (m.content or "")),
                       None)
        if stop_at is not None:
            late = [c.name for i, c in calls if i > stop_at]
            if late:
                return Verdict.failed("limit_ignored", f"called {', '.join(late)} after a tool said to stop")

        answer = run.output if str(run.stop_reason) == "final_answer" and isinstance(run.output, str) else None
        state_problem = next((p for p in (_check(world.state, c) for c in self.expect.get("state", ())) if p), None)
        fact_problem = _facts_problem(answer or "", self.expect.get("facts", ()), self.expect.get("absent", ()))
        if state_problem is None and fact_problem is None and answer is not None:
            return Verdict.passed()

        unresolved = _unresolved_failure(run)
        if unresolved is not None:
            return unresolved
        if answer is None:
            return Verdict.failed("no_final_answer", f"the run stopped with {run.stop_reason}")
        if state_problem is not None:
            return Verdict.failed("wrong_state", state_problem)
        return Verdict.failed("missing_fact", fact_problem or "")


def _unresolved_failure(run: Any) -> Verdict | None:
    """The last failed tool result, if no successful result came after it: the model never got past it."""
    results = [r for r in run.results if r.error_kind not in _NOT_THE_MODELS_DOING]
    if not results or results[-1].ok:
        return None
    last = results[-1]
    kind, keyword = last.error_kind, (last.error or {}).get("keyword")
    if kind == "schema":
        label = _SCHEMA_LABELS.get(keyword, "wrong_value")
    else:
        label = _GATE_LABELS.get(kind, "no_recovery")
    message = (last.error or {}).get("message", "")
    return Verdict.failed(label, f"{last.name}: {message}"[:300])


# -- state checks and facts ----------------------------------------------------------------------------------

_MISSING = object()


def _at(state: Any, path: str) -> Any:
    node = state
    for part in path.split("/"):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def _check(state: dict, check: dict) -> str | None:
    """None when the check holds, else what is wrong, for a person."""
    path = check["path"]
    value = _at(state, path)
    if check.get("missing"):
        return None if value is _MISSING else f"{path} exists ({_show(value)}) but should not"
    if value is _MISSING:
        return f"nothing at {path}"
    if "equals" in check and not _same(value, check["equals"]):
        return f"{path} is {_show(value)}, expected {_show(check['equals'])}"
    if "one_of" in check and not any(_same(value, v) for v in check["one_of"]):
        return f"{path} is {_show(value)}, expected one of {_show(check['one_of'])}"
    if "includes" in check and not _includes(value, check["includes"]):
        return f"{path} is {_show(value)}, expected it to include {_show(check['includes'])}"
    if "count" in check and (not isinstance(value, (list, dict)) or len(value) != check["count"]):
        size = len(value) if isinstance(value, (list, dict)) else "not a collection"
        return f"{path} has {size} entries, expected {check['count']}"
    return None


def _same(actual: Any, expected: Any) -> bool:
    if isinstance(expected, str) and isinstance(actual, str):
        return _loose(actual) == _loose(expected)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return actual is expected
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return abs(actual - expected) < 1e-9
    if isinstance(expected, dict):
        return isinstance(actual, dict) and actual.keys() == expected.keys() and all(
            _same(actual[k], v) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and _as_multiset(actual, expected)
    return actual == expected


def _includes(actual: Any, expected: dict) -> bool:
    if not isinstance(actual, dict):
        return False
    for key, want in expected.items():
        if key not in actual:
            return False
        have = actual[key]
        if isinstance(want, dict):
            if not _includes(have, want):
                return False
        elif not _same(have, want):
            return False
    return True


def _as_multiset(actual: list, expected: list) -> bool:
    """Every expected item matched by its own actual item, in any order (dicts: same keys, same values)."""
    left = list(actual)
    for want in expected:
        match = next((i for i, have in enumerate(left) if _same(have, want)), None)
        if match is None:
            return False
        left.pop(match)
    return True


def _loose(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def _answer_text(text: str) -> str:
    """The answer as facts are looked for in it: casefolded, thousands separators gone, spaces collapsed."""
    return re.sub(r"(?<=\d)[,\u2009\u202f](?=\d{3}\b)", "", _loose(text))


def _facts_problem(answer: str, facts: Any, absent: Any) -> str | None:
    text = _answer_text(answer)
    for fact in facts:
        if not any(_answer_text(spelling) in text for spelling in fact):
            return f"the answer does not say {fact[0]!r}" + (f" (or {', '.join(map(repr, fact[1:]))})"
                                                            if len(fact) > 1 else "")
    for word in absent:
        if _answer_text(word) in text:
            return f"the answer says {word!r}, which it should not"
    return None


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


# -- loading ---------------------------------------------------------------------------------------------------

def load(category: str, folder: Path | None = None) -> list[Scenario]:
    """Every case of one category, validated."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown agentkit category {category!r}; choose one of: {', '.join(CATEGORIES)}")
    return list(_load_file((folder or DATA_DIR) / f"{category}.json", category))


def load_all(folder: Path | None = None) -> list[Scenario]:
    return [case for category in CATEGORIES for case in load(category, folder)]


@lru_cache(maxsize=None)
def _load_file(path: Path, category: str) -> tuple[Scenario, ...]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ScenarioError(f"no scenario file {path}") from None
    except ValueError as exc:
        raise ScenarioError(f"{path.name} is not valid JSON: {exc}") from None
    validate_document(document, path.name)
    if document["category"] != category:
        raise ScenarioError(f"{path.name} says category {document['category']!r}, expected {category!r}")
    cases = tuple(_scenario(raw, category, path.name) for raw in document["cases"])
    seen: dict[str, str] = {}
    for case in cases:
        key = case.oracle_key()
        if case.id in seen.values() or key in seen:
            raise ScenarioError(f"{path.name}: {case.id} repeats the id or the prompt and tools of "
                                f"{seen.get(key, case.id)}")
        seen[key] = case.id
    return cases


def validate_document(document: Any, name: str = "scenario file") -> None:
    """Raise ScenarioError naming the first place where `document` breaks the schema."""
    errors = sorted(_validator().iter_errors(document), key=lambda e: [str(p) for p in e.instance_path])
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.instance_path) or "(top)"
        raise ScenarioError(f"{name}: at {where}: {first.message}")


@lru_cache(maxsize=1)
def _validator() -> Any:
    # jsonschema-rs (a core dependency): the pure-Python jsonschema takes seconds to import in some setups
    import jsonschema_rs

    return jsonschema_rs.Draft202012Validator(json.loads((DATA_DIR / "schema.json").read_text(encoding="utf-8")))


def make_scenario(raw: dict, category: str) -> Scenario:
    """One case from its JSON form (already schema-valid), with the checks `load` makes."""
    return _scenario(raw, category, "(given)")


def _scenario(raw: dict, category: str, file: str) -> Scenario:
    case_id = raw["id"]
    if case_id.split("/", 1)[0] != category:
        raise ScenarioError(f"{file}: {case_id} does not start with {category}/")
    known = set(SERVICES)
    named = set(raw["tools"]) | {x["tool"] for x in raw.get("faults", []) + raw.get("notices", [])}
    for step in raw["oracle"]:
        named |= {c["name"] for c in step.get("calls", [])}
    unknown = sorted(named - known)
    if unknown:
        raise ScenarioError(f"{file}: {case_id} names unknown services: {', '.join(unknown)}")
    offered = set(raw["tools"])
    for step in raw["oracle"]:
        for call in step.get("calls", []):
            if call["name"] not in offered:
                raise ScenarioError(f"{file}: {case_id}'s oracle calls {call['name']}, which is not offered")
    if "answer" not in raw["oracle"][-1]:
        raise ScenarioError(f"{file}: {case_id}'s oracle must end with an answer")
    oracle_calls = sum(len(step.get("calls", [])) for step in raw["oracle"])
    if raw.get("budget") is not None and oracle_calls > raw["budget"]:
        raise ScenarioError(f"{file}: {case_id}'s oracle makes {oracle_calls} calls, over its budget")
    if not raw["expect"].get("state") and not raw["expect"].get("facts"):
        raise ScenarioError(f"{file}: {case_id} expects nothing (give state checks or facts)")
    return Scenario(id=case_id, category=category, title=raw["title"], prompt=raw["prompt"],
                    tools=tuple(raw["tools"]), expect=raw["expect"], oracle=tuple(raw["oracle"]),
                    system=raw.get("system"), source=raw.get("source"), world=raw.get("world", {}),
                    faults=tuple(raw.get("faults", ())), notices=tuple(raw.get("notices", ())),
                    budget=raw.get("budget"), max_steps=raw.get("max_steps", DEFAULT_MAX_STEPS))
