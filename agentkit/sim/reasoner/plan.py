"""Step 4, plan the batch: what is done, what failed, what to call now.

Each intended call is tracked against the calls tried since the request; a failed one is retried once
with what the error names repaired, then explained instead. tool_choice and parallel_tool_calls=False
shape the batch.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from ...core.types import ModelOptions, ToolCall, ToolSpec
from .choose import best_tool, choose_tools
from .facts import Facts, as_number, read_facts
from .fill import MISSING, Param, city_named, fill_arguments, parameters
from .lexicon import MAX_ERRORS_PER_ASK
from .vocabulary import Observation, PlannedCall, Situation, TriedCall


def plan_intents(text: str, tools: tuple[ToolSpec, ...], notes: list[str] | None = None
                 ) -> list[PlannedCall]:
    """Every call the request needs: one per ask, or one per city when an ask names several — or names
    none, for a tool that takes one, while the request names several: "the weather and the local time in
    Paris and in Tokyo" asks for four facts, so it gets four calls."""
    context = read_facts(text)
    intents: list[PlannedCall] = []
    for ask in choose_tools(text, tools):
        for facts in _fan_out(ask.tool, read_facts(ask.text), context):
            left_out: list[tuple[str, str]] = []
            arguments = fill_arguments(ask.tool, facts, context, left_out)
            intents.append(PlannedCall(ask.tool.name, arguments, left_out=tuple(left_out)))
            if notes is not None:
                notes.append(f"ask {_brief(ask.text.strip())!r} -> {ask.tool.name} (score {ask.score}), "
                             f"arguments {_brief(key_of(intents[-1].arguments))}")
    return _dedupe(intents)


def _brief(text: str, limit: int = 80) -> str:
    """A note quotes at most `limit` characters: an ask can be a whole pasted document."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def follow_up_intents(text: str, earlier: str, tools: tuple[ToolSpec, ...]) -> list[PlannedCall]:
    """"And in Osaka?" names no tool, but the earlier request did: ask it again with the new values.
    Only calls the new text changes are kept, so "thanks!" after a question is not a follow-up."""
    before = plan_intents(earlier, tools)
    again = [PlannedCall(ask.tool.name, fill_arguments(ask.tool, facts, read_facts(ask.text)))
             for ask in choose_tools(earlier, tools) for facts in _fan_out(ask.tool, read_facts(text))]
    return _dedupe([c for c in again if c not in before and c.arguments])


def _fan_out(tool: ToolSpec, facts: Facts, context: Facts | None = None) -> list[Facts]:
    """Two cities for a tool that takes one city → two sets of facts, one city each. An ask that names
    no city takes the request's: all of them (each ask of "the weather and the time in Paris and Tokyo"
    is about both cities)."""
    places = [p for p in parameters(tool) if p.role in ("city", "timezone")
              or (p.role == "enum" and any(city_named(str(v)) for v in p.schema["enum"]))]
    cities = facts.cities or (context.cities if context is not None else ())
    if not places or len(cities) < 2:
        return [facts]
    return [replace(facts, cities=(c,)) for c in cities]


def _dedupe(calls: list[PlannedCall]) -> list[PlannedCall]:
    seen, out = set(), []
    for call in calls:
        key = (call.name, key_of(call.arguments))
        if key not in seen:
            seen.add(key)
            out.append(call)
    return out


def key_of(arguments: Any) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


@dataclass
class Progress:
    """How far one intended call has got: the calls tried for it so far (matched by tool name and arguments)."""

    intent: PlannedCall
    tried: list[TriedCall] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return any(a.observation.ok for a in self.tried)

    @property
    def errors(self) -> int:
        return sum(1 for a in self.tried if not a.observation.ok)


def track(intents: list[PlannedCall], tried: Iterable[TriedCall]) -> tuple[list[Progress], list[TriedCall]]:
    """Give each tried call to the intent it served; calls that served none (a wrong or unknown tool,
    an extra call) are returned as strays."""
    progress = [Progress(i) for i in intents]
    strays = []
    for attempt in tried:
        target = _intent_for(progress, attempt.call)
        if target is None:
            strays.append(attempt)
        else:
            target.tried.append(attempt)
    return progress, strays


def _intent_for(progress: list[Progress], call: ToolCall) -> Progress | None:
    open_ = [p for p in progress if p.intent.name == call.name and not p.done
             and p.errors < MAX_ERRORS_PER_ASK]
    args = key_of(call.arguments)
    for test in (lambda p: key_of(p.intent.arguments) == args,
                 lambda p: bool(p.tried) and key_of(p.tried[-1].call.arguments) == args,
                 lambda p: not p.tried, lambda p: True):
        found = next((p for p in open_ if test(p)), None)
        if found is not None:
            return found
    return None


def next_call(p: Progress, tool: ToolSpec | None, text: str = "") -> PlannedCall | None:
    """The call to send now for one intent: the first try, one corrected retry, or None (done/give up)."""
    if p.done or p.errors >= MAX_ERRORS_PER_ASK:
        return None
    if p.errors == 0:
        return p.intent
    failed = p.tried[-1]
    fixed = repair(p.intent.arguments or {}, failed, tool, text)
    if failed.call.arguments is not None and key_of(fixed) == key_of(failed.call.arguments):
        return None  # the same call would fail the same way: explain instead
    return PlannedCall(p.intent.name, fixed, left_out=tuple((name, why) for name, why in p.intent.left_out
                                                            if name not in fixed))


def repair(arguments: dict, failed: TriedCall, tool: ToolSpec | None, text: str = "") -> dict:
    """Read the error and fix what it names: send valid JSON after bad_json; take a value back from the
    failed call when only its type ("5" for 5) or its spelling ("Paid" for "paid") was wrong; for a
    required field the call left out, read the request `text` a second, looser way (`second_look`)."""
    fixed = dict(arguments)
    wrong = failed.call.arguments or {}
    name = _field_named(failed.observation)
    params = {p.name: p for p in parameters(tool)} if tool is not None else {}
    if name in wrong and name not in fixed and name in params:
        value = _coerce(wrong[name], params[name])
        if value is not MISSING:
            fixed[name] = value
    elif name in params and name not in wrong and name not in fixed and params[name].required:
        value = second_look(params[name], text)
        if value is not MISSING:
            fixed[name] = value
    return fixed


#: A name written with capitals ("Alice Smith", "Springfield") inside a sentence: a capital after a
#: sentence's end (". It's") starts a sentence, it names nothing.
PROPER_NAME = re.compile(r"(?<=[^\s.!?。]\s)[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")


def second_look(p: Param, text: str) -> Any:
    """What the first reading did not take, for a required parameter an error says is missing: for a
    string, a name written with capitals ("Find the customer Alice Smith" -> "Alice Smith"); for a
    number, any number. MISSING when there is none either: then the model explains, it does not guess."""
    if p.role in ("number",):
        numbers = read_facts(text).numbers
        return numbers[0].value if numbers else MISSING
    if p.type not in ("string", "") or p.role in ("enum", "const", "date", "start", "end", "base", "quote",
                                                   "currency", "boolean", "array"):
        return MISSING
    found = PROPER_NAME.search(text.strip())
    return found.group(0).strip() if found else MISSING


def _field_named(observation: Observation) -> str | None:
    """The field an error is about: from its path ("$.city") or its message ("… 'city' …")."""
    if observation.path:
        m = re.match(r"([A-Za-z_][\w-]*)", observation.path.lstrip("$").lstrip("./"))
        if m:
            return m.group(1)
    m = re.search(r"'([A-Za-z_][\w-]*)'", observation.message)
    return m.group(1) if m else None


def _coerce(value: Any, p: Param) -> Any:
    """"5" → 5 for a number; "Paid" → "paid" for an enum; anything else cannot be saved."""
    if p.role == "number" and isinstance(value, str):
        try:
            number = as_number(value.strip())
        except ValueError:
            return MISSING
        return int(number) if p.type == "integer" and float(number).is_integer() else number
    if p.role == "enum" and isinstance(value, str):
        same = [v for v in p.schema["enum"] if isinstance(v, str) and v.lower() == value.lower()]
        return same[0] if same else MISSING
    return MISSING


def tool_choice_of(options: ModelOptions, tools: tuple[ToolSpec, ...]) -> tuple[str, str | None]:
    """("auto" | "none" | "required", forced tool name or None), whatever shape the choice came in."""
    choice = options.tool_choice
    if isinstance(choice, dict) and "allowed" in choice:  # a subset: its mode (behaviours narrows the tools)
        choice = choice.get("mode")
    elif isinstance(choice, dict):
        function = choice.get("function")
        name = choice.get("name") or (function.get("name") if isinstance(function, dict) else None)
        if isinstance(name, str) and any(t.name == name for t in tools):
            return "required", name
        kind = choice.get("type")
        choice = kind if isinstance(kind, str) else "required"
    if not isinstance(choice, str):
        return "auto", None
    choice = {"any": "required", "tool": "required", "function": "required"}.get(choice, choice)
    return (choice if choice in ("auto", "none", "required") else "auto"), None


def turn_cap(intents: list[PlannedCall]) -> int:
    """However things go, stop calling after this many turns (each ask: a try and a retry, plus slack)."""
    return 2 * max(1, len(intents)) + 2


def plan_batch(s: Situation, progress: list[Progress]) -> list[PlannedCall]:
    """This turn's calls, honouring tool_choice and parallel_tool_calls=False (one call per turn)."""
    mode, forced = tool_choice_of(s.options, s.tools)
    by_name = {t.name: t for t in s.tools}
    calls = [c for c in (next_call(p, by_name.get(p.intent.name), s.text) for p in progress) if c is not None]
    if forced is not None:
        calls = [c for c in calls if c.name == forced] or [fresh_call(s.text, by_name[forced])]
    elif mode == "required" and not calls:
        calls = [fresh_call(s.text, best_tool(s.text, s.tools, threshold=-10**9)[0] or s.tools[0])]
    elif mode == "auto" and s.turns >= turn_cap([p.intent for p in progress]):
        calls = []
    if s.options.parallel_tool_calls is False:
        calls = calls[:1]
    return calls


def fresh_call(text: str, tool: ToolSpec) -> PlannedCall:
    """A call to this tool with whatever the whole request offers for its arguments."""
    left_out: list[tuple[str, str]] = []
    arguments = fill_arguments(tool, read_facts(text), left_out=left_out)
    return PlannedCall(tool.name, arguments, left_out=tuple(left_out))
