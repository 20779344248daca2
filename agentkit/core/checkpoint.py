"""A paused run as plain data: what `Run.to_json()` writes and `agentkit.long_running.resume` reads back —
checked on the way in, never trusted.

A run paused by an approval gate (`Pause()`) stops *before* the step whose calls wait for a decision:
that model answer is kept aside (`Run.pending`), not in the history, so the history a Thread or a provider sees
is valid as it stands (every call in it answered). The JSON holds the history, the waiting answer (with its
provider reasoning state and the pause's one-time token), the counters as they were before that step,
usage, the seconds the run has been running, state, results, and what a compaction strategy needs to send
the same requests again (`Run.compaction`); not the trace (its events stay in the process) and not the
exception of a run that raised.

Reading a state back (`read_state`) checks all of it, in two steps, and refuses anything else with one
`StateError` that names the field:

1. its shape: `STATE_SCHEMA`, a JSON Schema (Draft 2020-12) of exactly what `run_to_dict` writes, checked
   with jsonschema (every key, type and bound: `steps: -50` or `messages: {}` stop here);
2. what the loop guarantees of a run it wrote (`state_problem`): every call in the history answered right
   after its turn and every result by its call (`agentkit.core.history.pairing_problem`), the model never
   speaking first, one model turn per step, the waiting turn the last one recorded and its waiting calls
   among its calls, the model's answers in the history being the recorded turns, each result the text of
   its tool message, the counters consistent with the messages, usage the sum of the turns'.

So a damaged or edited state either reads back as the run it was, or is refused: it never resumes into a
history a provider refuses, nor into counters that send the run round its caps.

Writing is strict the other way (`run_to_dict`): `Run.state` must be plain JSON (dicts with string keys,
lists, strings, finite numbers, booleans, None). A set, a tuple, a datetime, bytes, a Decimal, an int key
or an object would come back as something else after a restart, so `to_json()` refuses it, naming where it
is, instead of changing it silently. (A tool's result value is stored as the envelope the model read, so a
datetime returned by a tool comes back as its text, which is what the model saw.)

Left out on purpose: the model, the tools and the settings (code, not data: `resume` takes them again),
and a Thread's own counters (pass the Thread to `resume` if the run had one).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import secrets
from dataclasses import dataclass, field
from typing import Any

from .errors import StateError
from .history import pairing_problem
from .types import Message, ModelTurn, ToolResult, Usage, parse_arguments

#: The format's version. Version 1 (before the pause token, the running time and the compaction state) is
#: still read; any other version is refused with a clear error.
VERSION = 2


@dataclass(frozen=True)
class Paused:
    """A model answer whose calls wait for a decision, the counters as they were before its step, and the
    pause's token: a random id made when it paused, which a resume claims (so it is resumed once)."""

    turn: ModelTurn
    waiting: tuple[str, ...]  # the ids of the calls an approval paused
    counters: dict = field(default_factory=dict)  # tool_call_count, invalid_calls, per_tool, repeats
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    passed: tuple[str, ...] = ()  # the calls of the turn that passed the gates before approval asked

    def to_dict(self) -> dict:
        return {"turn": self.turn.to_dict(), "waiting": list(self.waiting), "counters": self.counters,
                "token": self.token, "passed": list(self.passed)}

    @classmethod
    def from_dict(cls, d: dict) -> Paused:
        return cls(ModelTurn.from_dict(d["turn"]), tuple(d["waiting"]), dict(d.get("counters") or {}),
                   d.get("token") or _token_of(d), tuple(d.get("passed") or ()))


def _token_of(pending: dict) -> str:
    """A token for a state written before tokens existed: a digest of its waiting turn (the same state,
    read twice, gets the same one)."""
    text = json.dumps(pending, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


# -- writing -------------------------------------------------------------------------------------------------

def run_to_dict(run: Any) -> dict:
    """The JSON-ready state of a Run (see the module docstring for what is left out); StateError when its
    `state` (or a compaction strategy's) is not plain JSON."""
    plain_json(run.state, "state")
    plain_json(run.compaction, "compaction")
    limit = run.limit
    return {
        "agentkit_run": VERSION,
        "run_id": run.run_id,
        "stop_reason": run.stop_reason.value if run.stop_reason is not None else None,
        "output": run.output if isinstance(run.output, (str, type(None))) else json.loads(json.dumps(
            run.output, default=str)),
        "messages": [m.to_dict() for m in run.messages],
        "start_index": run.start_index,
        "steps": run.steps, "tool_call_count": run.tool_call_count, "tool_runs": run.tool_runs,
        "invalid_calls": run.invalid_calls,
        "usage": run.usage.to_dict(),
        "usage_by_model": [[model, usage.to_dict()] for model, usage in run.usage_by_model.items()],
        "results": [r.to_dict() for r in run.results],
        "turns": [t.to_dict() for t in run.turns],
        "state": run.state,
        "pending": run.pending.to_dict() if run.pending is not None else None,
        "limit": [limit.limit, limit.count, limit.maximum] if limit is not None else None,
        "elapsed_seconds": run.elapsed_seconds,
        "compaction": run.compaction,
    }


def plain_json(value: Any, where: str) -> None:
    """Raise StateError naming the first value inside `value` that JSON would not give back as it is."""
    stack = [(value, where)]
    while stack:
        node, path = stack.pop()
        if node is None or isinstance(node, (str, bool, int)):
            continue
        if isinstance(node, float):
            if not math.isfinite(node):
                raise StateError(path, f"{node!r} is not a JSON number")
            continue
        if type(node) is dict:
            for key, child in node.items():
                if not isinstance(key, str):
                    raise StateError(path, f"the key {key!r} is a {type(key).__name__}: JSON keys are strings, so "
                                           "it would come back as text; use string keys")
                stack.append((child, f"{path}[{key!r}]"))
            continue
        if type(node) is list:
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(node))
            continue
        kind = type(node).__name__
        raise StateError(path, f"a {kind} is not plain JSON: after a restart it would come back as "
                               f"{_comes_back_as(node)}; keep dicts, lists, strings, numbers, booleans and "
                               "None in the run's state (convert it before the run pauses)")


def _comes_back_as(node: Any) -> str:
    if isinstance(node, (tuple, set, frozenset)):
        return "a list" if isinstance(node, tuple) else "an error (a set is not JSON)"
    return "its text (str())"


# -- reading: the shape ------------------------------------------------------------------------------------

_TEXT = {"type": ["string", "null"]}
_COUNT = {"type": "integer", "minimum": 0}
_USAGE = {"type": "object", "required": ["input_tokens", "output_tokens"], "additionalProperties": False,
          "properties": {k: _COUNT for k in ("input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens")}}
_REASONING = {"type": "object", "required": ["format", "items"], "additionalProperties": False,
              "properties": {"format": {"type": "string"}, "model": _TEXT,
                             "items": {"type": "array", "items": {"type": "object"}}}}
_CALL = {"type": "object", "required": ["id", "name", "raw_arguments"], "additionalProperties": False,
         "properties": {"id": {"type": "string", "minLength": 1}, "name": {"type": "string"},
                        "raw_arguments": {"type": ["string", "object"]}, "arguments": {"type": ["object", "null"]}}}
_CALLS = {"type": "array", "items": _CALL}
_MESSAGE = {"type": "object", "required": ["role"], "additionalProperties": False,
            "properties": {"role": {"enum": ["system", "user", "assistant", "tool"]}, "content": _TEXT,
                           "tool_calls": _CALLS, "tool_call_id": _TEXT, "name": _TEXT,
                           "is_error": {"type": "boolean"}, "reasoning": _REASONING},
            "if": {"properties": {"role": {"const": "tool"}}},
            "then": {"required": ["tool_call_id"], "properties": {"tool_call_id": {"type": "string"}}},
            "else": {"properties": {"tool_call_id": {"type": "null"}, "is_error": {"const": False}}}}
_ERROR = {"type": "object", "required": ["kind", "message"], "additionalProperties": False,
          "properties": {"kind": {"type": "string"}, "message": {"type": "string"}, "path": _TEXT, "keyword": _TEXT}}
_RESULT = {"type": "object", "required": ["call_id", "name", "ok"], "additionalProperties": False,
           "properties": {"call_id": {"type": "string"}, "name": {"type": "string"}, "ok": {"type": "boolean"},
                          "result": {}, "error": {"oneOf": [{"type": "null"}, _ERROR]}, "text": _TEXT},
           "if": {"properties": {"ok": {"const": False}}}, "then": {"required": ["error"],
                                                                    "properties": {"error": _ERROR}}}
_TURN = {"type": "object", "additionalProperties": False,
         "properties": {"text": _TEXT, "tool_calls": _CALLS, "usage": _USAGE, "model": _TEXT, "id": _TEXT,
                        "stop": {"enum": ["tool_calls", "stop", "length", "content_filter", "other"]},
                        "native_stop": _TEXT, "raw": {}, "reasoning": _REASONING}}
_COUNTERS = {"type": "object", "additionalProperties": False,
             "required": ["tool_call_count", "invalid_calls", "per_tool", "repeats", "thread_tool_calls"],
             "properties": {"tool_call_count": _COUNT, "invalid_calls": _COUNT,
                            "per_tool": {"type": "object", "additionalProperties": _COUNT},
                            "repeats": {"type": "array", "items": {
                                "type": "array", "prefixItems": [{"type": "string"}, {"type": "string"},
                                                                 {"type": "integer", "minimum": 1}],
                                "minItems": 3, "maxItems": 3}},
                            "thread_tool_calls": {"type": ["integer", "null"], "minimum": 0}}}
_IDS = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
_PENDING = {"type": "object", "required": ["turn", "waiting", "counters", "token", "passed"],
            "additionalProperties": False,
            "properties": {"turn": _TURN, "waiting": {**_IDS, "minItems": 1}, "counters": _COUNTERS,
                           "token": {"type": "string", "pattern": "^[0-9a-f]{32}$"}, "passed": _IDS}}
_STOPS = ["final_answer", "max_steps", "tool_limit", "repeated_call", "return_direct", "user_cancel",
          "schema_fail", "error", "token_budget", "cost_budget", "time_budget", "paused"]

#: The JSON Schema of a saved run (`Run.to_json()`, format VERSION): every key it writes, nothing else.
STATE_SCHEMA: dict = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "agentkit saved run",
    "type": "object",
    "required": ["agentkit_run", "run_id", "stop_reason", "messages", "start_index", "steps", "tool_call_count",
                 "tool_runs", "invalid_calls", "usage", "usage_by_model", "results", "turns", "state", "pending"],
    "additionalProperties": False,
    "properties": {
        "agentkit_run": {"const": VERSION}, "run_id": {"type": "string", "minLength": 1},
        "stop_reason": {"enum": [*_STOPS, None]}, "output": {},
        "messages": {"type": "array", "items": _MESSAGE}, "start_index": _COUNT,
        "steps": _COUNT, "tool_call_count": _COUNT, "tool_runs": _COUNT, "invalid_calls": _COUNT,
        "usage": _USAGE,
        "usage_by_model": {"type": "array", "items": {"type": "array", "prefixItems": [_TEXT, _USAGE],
                                                      "minItems": 2, "maxItems": 2}},
        "results": {"type": "array", "items": _RESULT}, "turns": {"type": "array", "items": _TURN},
        "state": {"type": "object"}, "pending": {"oneOf": [{"type": "null"}, _PENDING]},
        "limit": {"oneOf": [{"type": "null"}, {"type": "array", "prefixItems": [
            {"type": "string"}, {"type": "number"}, {"type": "number"}], "minItems": 3, "maxItems": 3}]},
        "elapsed_seconds": {"type": "number", "minimum": 0}, "compaction": {"type": ["object", "null"]},
    },
}


def read_state(state: str | bytes | dict) -> dict:
    """A state written by `Run.to_json()` (the text, or its json.loads), checked whole: the data, or one
    StateError naming the first field that is wrong (see the module docstring)."""
    if isinstance(state, (str, bytes, bytearray)):
        try:
            data = json.loads(state)
        except (ValueError, RecursionError) as exc:
            raise StateError("", f"not JSON ({exc}): give the text of Run.to_json()") from None
    else:
        data = state
    if not isinstance(data, dict) or "agentkit_run" not in data:
        raise StateError("", "not a saved agentkit run: give the text of Run.to_json() (or its json.loads)")
    if data["agentkit_run"] == 1:
        data = _from_version_1(data)
    if data["agentkit_run"] != VERSION:
        raise StateError("agentkit_run", f"a saved run of format {data['agentkit_run']!r}; this agentkit reads "
                                         f"formats 1 and {VERSION}")
    _check_schema(data)
    problem = state_problem(data)
    if problem is not None:
        raise StateError(*problem)
    return data


def _from_version_1(data: dict) -> dict:
    """A version-1 state (written before tokens, running time and compaction state) as version 2."""
    data = {**data, "agentkit_run": VERSION}
    if isinstance(data.get("pending"), dict):
        data["pending"] = {"passed": [], **data["pending"], "token": _token_of(data["pending"])}
    return data


@functools.lru_cache(maxsize=1)
def _validators() -> tuple[Any, Any]:
    """(a fast yes/no check, python-jsonschema's validator to word a no), built once. jsonschema-rs checks a
    state of a thousand messages in well under a millisecond; only a refusal asks python-jsonschema why."""
    from jsonschema import Draft202012Validator

    try:
        import jsonschema_rs

        fast = jsonschema_rs.validator_for(STATE_SCHEMA).is_valid
    except Exception:  # noqa: BLE001 - without jsonschema-rs, python-jsonschema decides alone
        fast = None
    return fast, Draft202012Validator(STATE_SCHEMA)


def _check_schema(data: dict) -> None:
    fast, full = _validators()
    try:
        if fast is not None and fast(data):
            return
    except Exception:  # noqa: BLE001 - a value jsonschema-rs cannot read (a huge integer): ask the other one
        pass
    from jsonschema.exceptions import best_match

    error = best_match(full.iter_errors(data))
    if error is not None:
        raise StateError(_path(error.absolute_path), error.message[:300])


def _path(parts: Any) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


# -- reading: the loop's guarantees ----------------------------------------------------------------------------

def state_problem(data: dict) -> tuple[str, str] | None:
    """(field, what is wrong) for the first guarantee of the loop a schema-valid state breaks, or None."""
    messages = [Message.from_dict(m) for m in data["messages"]]
    start = data["start_index"]
    if start > len(messages):
        return "start_index", f"{start} is past the end of the {len(messages)} messages"
    broken = pairing_problem(messages)
    if broken is not None:
        return f"messages[{broken[0]}]", broken[1]
    first = next((i for i, m in enumerate(messages) if m.role != "system"), None)
    if first is not None and messages[first].role != "user":
        return f"messages[{first}]", "the conversation starts with the model speaking, not with a user message"
    for i, m in enumerate(messages):
        problem = _calls_problem(m.tool_calls, f"messages[{i}]")
        if problem is not None:
            return problem
    if (data["pending"] is not None) != (data["stop_reason"] == "paused"):
        return "pending", "a paused run has a waiting turn, and only a paused run has one"
    turns = [ModelTurn.from_dict(t) for t in data["turns"]]
    return (_turns_problem(data, messages[start:], turns) or _results_problem(data, messages[start:])
            or _usage_problem(data, turns) or _pending_problem(data, turns))


def _calls_problem(calls: Any, where: str) -> tuple[str, str] | None:
    ids = [c.id for c in calls]
    if len(set(ids)) != len(ids):
        return f"{where}.tool_calls", "two calls of one turn share an id, so their results cannot be told apart"
    for j, c in enumerate(calls):
        if c.arguments != parse_arguments(c.raw_arguments) and not (c.arguments is None and isinstance(
                c.raw_arguments, str)):
            return f"{where}.tool_calls[{j}].arguments", "differs from what raw_arguments holds"
    return None


def _turns_problem(data: dict, own: list[Message], turns: list[ModelTurn]) -> tuple[str, str] | None:
    steps, paused = data["steps"], data["stop_reason"] == "paused"
    cut_short = data["stop_reason"] in ("error", "user_cancel")  # a model call can fail or be stopped midway
    if not (steps == len(turns) or (cut_short and steps == len(turns) + 1)):
        return "steps", f"{steps} model calls, but {len(turns)} model turns are recorded"
    for i, t in enumerate(turns):
        problem = _calls_problem(t.tool_calls, f"turns[{i}]")
        if problem is not None:
            return problem
    answers = [m for m in own if m.role == "assistant"]
    in_history = turns[:-1] if paused else turns
    if answers[:len(in_history)] != [t.as_message() for t in in_history]:
        at = next((i for i, (m, t) in enumerate(zip(answers, in_history)) if m != t.as_message()),
                  min(len(answers), len(in_history)))
        return "turns", f"the model's answer {at + 1} in the history is not the turn recorded for it"
    extra = answers[len(in_history):]
    if len(extra) > (0 if paused else 1) or any(m.tool_calls for m in extra):
        return "messages", "the history holds model answers that no recorded turn gave"
    return None


def _results_problem(data: dict, own: list[Message]) -> tuple[str, str] | None:
    answers = [m for m in own if m.role == "tool"]
    results = [ToolResult.from_dict(r) for r in data["results"]]
    if len(results) != len(answers):
        return "results", f"{len(results)} results for the {len(answers)} tool messages of the run"
    for i, (result, message) in enumerate(zip(results, answers)):
        if Message.tool(result) != message:
            return f"results[{i}]", f"is not the result the tool message for call {message.tool_call_id} holds"
    if data["invalid_calls"] > data["tool_call_count"]:
        return "invalid_calls", "more refused calls than calls counted"
    if data["tool_call_count"] > len(answers):
        return "tool_call_count", f"{data['tool_call_count']} calls counted, but {len(answers)} were answered"
    ran = sum(r.ok for r in results)
    if data["tool_runs"] < ran:
        return "tool_runs", f"{data['tool_runs']} tool runs for {ran} results of calls that ran"
    return None


def _usage_problem(data: dict, turns: list[ModelTurn]) -> tuple[str, str] | None:
    by_model: dict[Any, Usage] = {}
    for t in turns:
        if t.usage.input_tokens or t.usage.output_tokens:
            by_model[t.model] = by_model.get(t.model, Usage()) + t.usage
    saved = {model: Usage.from_dict(u) for model, u in data["usage_by_model"]}
    if len(saved) != len(data["usage_by_model"]) or saved != by_model:
        return "usage_by_model", "is not the usage of the recorded turns, model by model"
    if Usage.from_dict(data["usage"]) != sum(by_model.values(), Usage()):
        return "usage", "is not the sum of usage_by_model"
    return None


def _pending_problem(data: dict, turns: list[ModelTurn]) -> tuple[str, str] | None:
    pending = data["pending"]
    if pending is None:
        return None
    turn = ModelTurn.from_dict(pending["turn"])
    if not turns or turns[-1] != turn:
        return "pending.turn", "is not the last turn recorded (turns), the one the run paused at"
    ids = [c.id for c in turn.tool_calls]
    for i, call_id in enumerate(pending["waiting"]):
        if call_id not in ids:
            return f"pending.waiting[{i}]", f"{call_id!r} is not a call of the waiting turn"
    for i, call_id in enumerate(pending.get("passed") or ()):
        if call_id not in ids:
            return f"pending.passed[{i}]", f"{call_id!r} is not a call of the waiting turn"
    counters = pending["counters"]
    for name in ("tool_call_count", "invalid_calls"):
        if name in counters and counters[name] != data[name]:
            return f"pending.counters.{name}", f"{counters[name]}, but the run counts {data[name]}"
    per_tool = counters.get("per_tool") or {}
    if "per_tool" in counters and sum(per_tool.values()) != data["tool_call_count"]:
        return "pending.counters.per_tool", "does not add up to tool_call_count"
    if sum(n for *_, n in counters.get("repeats") or ()) > data["tool_call_count"]:
        return "pending.counters.repeats", "counts more calls than tool_call_count"
    return None


def restored_fields(data: dict) -> dict:
    """The Run fields a checked state (read_state) gives back, as objects."""
    return {
        "run_id": data["run_id"], "start_index": data["start_index"],
        "messages": [Message.from_dict(m) for m in data["messages"]],
        "steps": data["steps"], "tool_call_count": data["tool_call_count"], "tool_runs": data["tool_runs"],
        "invalid_calls": data["invalid_calls"], "usage": Usage.from_dict(data["usage"]),
        "usage_by_model": {model: Usage.from_dict(u) for model, u in data["usage_by_model"]},
        "results": [ToolResult.from_dict(r) for r in data["results"]],
        "turns": [ModelTurn.from_dict(t) for t in data.get("turns") or ()],
        "state": dict(data["state"]),
        "elapsed_seconds": float(data.get("elapsed_seconds") or 0.0),
        "compaction": data.get("compaction"),
    }
