"""The three gates every tool call passes before it runs: parse -> schema -> rules.

    result = validate_arguments(get_weather, '{"city": "Paris", "days": "3"}')
    result.ok            # False
    result.gate          # "schema"
    result.first         # ArgumentError(kind="schema", message="'3' is a string; the schema wants an
                         #   integer (send 3 without quotes)", path="$.days", keyword="type")
    error_result(call, result).envelope()   # what the model reads back

1. parse   arguments arrive as a JSON string (OpenAI) or an object (Anthropic, Gemini, MCP). Bad JSON,
           non-objects, oversized and over-deep input each get their own error kind.
2. schema  JSON Schema Draft 2020-12 (jsonschema), one compiled validator per schema, cached. Every
           error is reported, sorted, with a JSON path (`$.items[0].qty`) and the failing keyword.
           Nothing is coerced: "5" for an integer is an error that says so.
3. rules   the tool's own business checks (date order, permissions), only after 1 and 2 passed.

Also here: `error_result` (the envelope for a failed gate), `lookup_result` (for a tool that is not
there), `canonical_arguments` (a call's arguments in one spelling, for the repeat cap), and OpenAI strict
mode's linter and rewrite (`strict_problems`, `to_strict`) re-exported from `agentkit.core.strict`. The
shared argument examples live in `agentkit.fixtures`; the text a model reads when a *tool* fails is
sanitised in `agentkit.core.policies`.

Left out on purpose: repairing arguments (closing brackets, unquoting numbers): the model is told what is
wrong and fixes its own call; and remote `$ref`s (schemas are self-contained).
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Literal, NamedTuple

from .errors import ToolDefinitionError
from .schema_check import meta_schema_error
from .strict import strict_problems, to_strict
from .tools import RuleViolation, Tool
from .types import ToolCall, ToolResult, json_shape

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "ArgumentError",
    "GateResult",
    "ValidatorCache",
    "date_order",
    "error_result",
    "parse_gate",
    "rules_gate",
    "schema_gate",
    "strict_problems",
    "to_strict",
    "validate_arguments",
    "validator_for",
]

Gate = Literal["parse", "schema", "rules"]
ErrorKind = Literal["bad_json", "not_object", "too_large", "too_deep", "schema", "rule"]

MAX_BYTES = 1_000_000   # larger arguments are refused unread: no legitimate tool call needs a megabyte
MAX_DEPTH = 64          # deeper nesting is refused before any recursive code (json, jsonschema) sees it
MAX_ERRORS = 50         # a model needs the first few errors, not 100,000 of them


@dataclass(frozen=True, slots=True)
class ArgumentError:
    """One thing wrong with a call's arguments. `path` is a JSON path like `$.items[0].qty` (or None)."""

    kind: ErrorKind
    message: str
    path: str | None = None
    keyword: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


class GateResult(NamedTuple):
    """The outcome of the gates. `arguments` is the parsed object whenever parsing worked (also when a
    later gate failed, so traces can show it); `gate` says where it failed (None when ok).

    A NamedTuple (immutable, cheap to build): every tool call produces one."""

    ok: bool
    arguments: dict | None = None
    gate: Gate | None = None
    errors: tuple[ArgumentError, ...] = ()

    @property
    def first(self) -> ArgumentError | None:
        return self.errors[0] if self.errors else None

    def message(self, limit: int = 10) -> str:
        """All errors in one short text: `$.city: missing required property 'city'; ...`."""
        parts = [f"{e.path}: {e.message}" if e.path else e.message for e in self.errors[:limit]]
        if len(self.errors) > limit:
            parts.append(f"... and {len(self.errors) - limit} more")
        return "; ".join(parts)

    def to_dict(self) -> dict:
        return {"ok": self.ok, "arguments": self.arguments, "gate": self.gate,
                "errors": [e.to_dict() for e in self.errors]}


# ----------------------------------------------------------------------------------------------------------
# All three, in order
# ----------------------------------------------------------------------------------------------------------

def validate_arguments(tool: Tool | Any, raw: str | dict | None, *, max_bytes: int = MAX_BYTES,
                       max_depth: int = MAX_DEPTH, max_errors: int = MAX_ERRORS) -> GateResult:
    """Run parse -> schema -> rules for one call to `tool` (a Tool, or anything with `.parameters`).

    Never raises for anything the model sent; raises ToolDefinitionError if the tool's own schema is
    not valid JSON Schema, and lets a rule's own bug (an exception other than RuleViolation) propagate.
    """
    schema = tool.parameters
    arguments, problem = _parse(raw, schema.get("required") or (), max_bytes, max_depth)
    if problem is not None:
        return GateResult(ok=False, gate="parse", errors=(problem,))
    errors = _schema_errors(schema, arguments, max_errors, getattr(tool, "name", None))
    if errors:
        return GateResult(ok=False, arguments=arguments, gate="schema", errors=errors)
    rules = getattr(tool, "rules", ())
    errors = _rule_errors(rules, arguments) if rules else ()
    if errors:
        return GateResult(ok=False, arguments=arguments, gate="rules", errors=errors)
    return GateResult(ok=True, arguments=arguments)


# ----------------------------------------------------------------------------------------------------------
# Gate 1: parse
# ----------------------------------------------------------------------------------------------------------

def parse_gate(raw: str | dict | None, *, required: tuple[str, ...] = (), max_bytes: int = MAX_BYTES,
               max_depth: int = MAX_DEPTH) -> GateResult:
    """JSON text or an object -> a dict, or the reason it is not one.

    Empty arguments ("" or None) count as {} only when nothing is required. OpenAI sends "{}" for a call
    without arguments, but some local servers (llama.cpp, older Ollama) send "": for a tool with no
    required parameters that means "no arguments". When fields are required, empty text is a cut-off or
    failed generation, and "the arguments were empty" is the message that helps the model fix it.
    """
    arguments, problem = _parse(raw, required, max_bytes, max_depth)
    if problem is not None:
        return GateResult(ok=False, gate="parse", errors=(problem,))
    return GateResult(ok=True, arguments=arguments)


def _parse(raw: Any, required: Iterable[str], max_bytes: int, max_depth: int) -> tuple[Any, ArgumentError | None]:
    """(the arguments as a dict, None), or (None, what is wrong with them)."""
    if raw is None or (isinstance(raw, str) and (not raw or raw.isspace())):
        if not required:
            return {}, None
        return None, ArgumentError("bad_json", f"the arguments were empty; expected a JSON object with "
                                               f"{_names(required)}")
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).decode("utf-8", errors="replace")
    if isinstance(raw, str):
        # len() counts characters; UTF-8 needs at most 4 bytes each, so encode only when it could matter
        size = len(raw) if len(raw) > max_bytes or len(raw) * 4 <= max_bytes else len(raw.encode("utf-8"))
        if size > max_bytes:
            return None, _too_large(size, max_bytes)
        try:
            value = _decode(raw)
        except json.JSONDecodeError as exc:
            return None, ArgumentError("bad_json", _bad_json_message(raw, exc))
        except _NotJSON as exc:
            return None, ArgumentError("bad_json", str(exc))
        except RecursionError:  # json's C parser refuses ~1000+ levels with RecursionError: same verdict
            return None, _too_deep(max_depth)
        if isinstance(value, str) and value.strip().startswith("{"):
            return None, ArgumentError("not_object", "the arguments are a JSON string that contains JSON "
                                                     "(encoded twice); send the object itself, not a string")
        # Nesting needs an opening bracket per level: when there are fewer brackets than the depth limit,
        # skip the walk (two C-speed counts instead of visiting every node, on every call).
        shallow = raw.count("{") + raw.count("[") <= max_depth
        problem = None if shallow else _shape_problem(value, max_bytes=None, max_depth=max_depth)
    else:
        # An object from Anthropic/Gemini/MCP: measure it without recursion, stopping at the first limit.
        problem = _shape_problem(raw, max_bytes=max_bytes, max_depth=max_depth)
        value = raw
    if problem is not None:
        return None, problem
    if not isinstance(value, dict):
        return None, ArgumentError("not_object", f"the arguments must be a JSON object, got "
                                                 f"{_a(_json_type_of(value))}: {_show(value)}")
    return value, None


class _NotJSON(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    # Python's json reads NaN/Infinity, but they are not JSON and no provider would accept them back.
    raise _NotJSON(f"{name} is not valid JSON (JSON numbers are finite)")


# Built once: json.loads(text, parse_constant=...) would build a new decoder on every call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_JSON_WHITESPACE = " \t\n\r"


def _decode(text: str) -> Any:
    """json.loads(text), the same value and the same errors, minus two regular-expression scans per call:
    whitespace around the document is rare in arguments, so it is looked for only when it is there."""
    start = 0
    if text[0] in _JSON_WHITESPACE:
        start = len(text) - len(text.lstrip(_JSON_WHITESPACE))
    value, end = _DECODER.raw_decode(text, start)
    if end != len(text):
        rest = text[end:].lstrip(_JSON_WHITESPACE)
        if rest:
            raise json.JSONDecodeError("Extra data", text, len(text) - len(rest))
    return value


def _bad_json_message(raw: str, exc: json.JSONDecodeError) -> str:
    near = raw[max(0, exc.pos - 20):exc.pos + 20].replace("\n", " ")
    return (f"the arguments are not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}, "
            f"char {exc.pos}), near {near!r}")


def _too_large(size: int, limit: int) -> ArgumentError:
    return ArgumentError("too_large", f"the arguments are {size:,} bytes; the limit is {limit:,}")


def _too_deep(limit: int) -> ArgumentError:
    return ArgumentError("too_deep", f"the arguments are nested more than {limit} levels deep")


def _shape_problem(value: Any, *, max_bytes: int | None, max_depth: int) -> ArgumentError | None:
    """Depth (and, for objects that never were text, approximate JSON size), measured without recursion:
    a 10,000-deep object must not raise RecursionError here or anywhere after."""
    size, depth = json_shape(value, max_depth=max_depth, max_size=max_bytes)
    if depth > max_depth:
        return _too_deep(max_depth)
    if max_bytes is not None and size > max_bytes:
        return _too_large(size, max_bytes)
    return None


# ----------------------------------------------------------------------------------------------------------
# Gate 2: schema
# ----------------------------------------------------------------------------------------------------------

class ValidatorCache:
    """Compiled Draft 2020-12 validators, one per schema object, least recently used dropped first.

    Keyed by id(schema), so a large schema is never hashed or compared per call; each entry keeps its
    schema alive, so an id cannot be reused by another schema while cached. Schemas are treated as
    immutable: change one and you must build a new dict (Tool.from_schema copies for this reason).
    """

    def __init__(self, maxsize: int = 512):
        self.maxsize = maxsize
        self.compiled = 0   # how many validators were built: a cache that works keeps this small
        self._entries: OrderedDict[int, tuple[dict, Any, Any]] = OrderedDict()
        self._lock = threading.Lock()  # executors may validate from several threads

    def get(self, schema: dict, name: str | None = None) -> Any:
        return self.pair(schema, name)[0]

    def pair(self, schema: dict, name: str | None = None) -> tuple[Any, Any]:
        """(the jsonschema validator, a fast yes/no validator or None) for `schema`, compiled once."""
        with self._lock:
            entry = self._entries.get(id(schema))
            if entry is not None and entry[0] is schema:
                self._entries.move_to_end(id(schema))
                return entry[1], entry[2]
        validator, fast = _compile(schema, name), _compile_fast(schema)
        with self._lock:
            self.compiled += 1
            self._entries[id(schema)] = (schema, validator, fast)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)
        return validator, fast

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


VALIDATORS = ValidatorCache()


def validator_for(schema: dict, name: str | None = None) -> Any:
    """The cached jsonschema Draft202012Validator for `schema` (compiled on first use)."""
    return VALIDATORS.get(schema, name)


def _compile(schema: dict, name: str | None) -> Any:
    # jsonschema loads here, on the first validation, not when agentkit is imported (it is slow to import).
    from jsonschema import Draft202012Validator

    error = meta_schema_error(schema)
    if error is not None:
        where = "".join(f"/{p}" for p in error.absolute_path)
        who = f"tool {name!r}: " if name else ""
        raise ToolDefinitionError(f"{who}the parameters are not valid JSON Schema 2020-12: {error.message} "
                                  f"(at #{where})") from error
    # format checking on: a "date" that is not a date is as wrong as a number that is a string
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def _compile_fast(schema: dict) -> Any:
    """A yes/no validator from jsonschema-rs (Rust, Draft 2020-12, ~0.1 us a call), or None without it.

    Most calls are valid, and the only question for them is "valid?": the fast validator answers it.
    Any "no" is explained by the jsonschema validator, which stays the one that decides and reports.
    """
    try:
        import jsonschema_rs
    except ImportError:
        return None
    try:
        return jsonschema_rs.Draft202012Validator(schema, validate_formats=True)
    except Exception:  # noqa: BLE001 — a schema it cannot compile is simply validated the slow way
        return None


def schema_gate(schema: dict, arguments: dict, *, max_errors: int = MAX_ERRORS,
                name: str | None = None) -> GateResult:
    """Validate against `schema` and report every error (up to max_errors), sorted by path then keyword."""
    errors = _schema_errors(schema, arguments, max_errors, name)
    if errors:
        return GateResult(ok=False, arguments=arguments, gate="schema", errors=errors)
    return GateResult(ok=True, arguments=arguments)


def _schema_errors(schema: dict, arguments: dict, max_errors: int, name: str | None) -> tuple[ArgumentError, ...]:
    validator, fast = VALIDATORS.pair(schema, name)
    if fast is not None and fast.is_valid(arguments):
        return ()
    from itertools import islice
    try:
        raw_errors = list(islice(validator.iter_errors(arguments), max_errors + 1))
    except Exception as exc:  # a $ref that points nowhere: the schema's fault, not the model's
        from referencing.exceptions import Unresolvable

        if not isinstance(exc, Unresolvable):
            raise
        who = f"tool {name!r}: " if name else ""
        raise ToolDefinitionError(f"{who}the parameters have a $ref that points nowhere: "
                                  f"{getattr(exc, 'ref', None) or exc}") from None
    if not raw_errors:
        return ()
    errors: list[ArgumentError] = []
    seen: set[tuple] = set()
    for err in raw_errors[:max_errors]:
        for item in _explain(err):
            if (item.path, item.keyword, item.message) not in seen:
                seen.add((item.path, item.keyword, item.message))
                errors.append(item)
    errors.sort(key=lambda e: (_path_sort_key(e.path), e.keyword or "", e.message))
    if len(raw_errors) > max_errors:
        errors.append(ArgumentError("schema", f"more errors not shown (the first {max_errors} are above)"))
    return tuple(errors)


def _explain(err: Any) -> list[ArgumentError]:
    """One jsonschema ValidationError -> ArgumentErrors with a path that names the field concerned."""
    parts = list(err.absolute_path)
    keyword = err.validator
    instance = err.instance
    if keyword == "required" and isinstance(instance, dict):
        # one error per missing field, pointing at the field rather than at its parent object
        return [ArgumentError("schema", f"missing required property {name!r}", _path([*parts, name]),
                              "required")
                for name in err.validator_value if name not in instance]
    if keyword == "additionalProperties" and isinstance(instance, dict) and err.validator_value is False:
        allowed = list((err.schema.get("properties") or {}).keys())
        patterns = list((err.schema.get("patternProperties") or {}).keys())
        extras = [k for k in instance if k not in allowed and not any(re.search(p, k) for p in patterns)]
        hint = f" (allowed: {', '.join(allowed[:20])})" if allowed else " (this object takes no properties)"
        return [ArgumentError("schema", f"unexpected property {k!r}{hint}", _path([*parts, k]),
                              "additionalProperties") for k in extras]
    if keyword == "type":
        return [ArgumentError("schema", _type_message(instance, err.validator_value), _path(parts), "type")]
    if keyword in ("anyOf", "oneOf") and err.context:
        wanted = _branch_types(err)
        if wanted is not None:  # every branch failed only on its type, e.g. Optional[int] given "5"
            return [ArgumentError("schema", _type_message(instance, wanted), _path(parts), keyword)]
        # Ignore the branches whose type does not even match (for Optional[Address] given an object, the
        # null branch); if one branch is left, its errors are the real ones.
        branches: dict[Any, list] = {}
        for sub in err.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        matching = [errs for errs in branches.values()
                    if not any(s.validator == "type" and not list(s.relative_path) for s in errs)]
        if len(matching) == 1:
            return [item for sub in matching[0] for item in _explain(sub)]
        from jsonschema.exceptions import best_match

        return _explain(best_match([s for errs in (matching or branches.values()) for s in errs]))
    if keyword == "enum":
        options = ", ".join(_show(v) for v in err.validator_value[:20])
        return [ArgumentError("schema", f"{_show(instance)} is not one of {options}", _path(parts), "enum")]
    if keyword == "format":
        example = _FORMAT_EXAMPLES.get(err.validator_value)
        tail = f", e.g. {example}" if example else ""
        return [ArgumentError("schema", f"{_show(instance)} is not a valid {err.validator_value}{tail}",
                              _path(parts), "format")]
    return [ArgumentError("schema", _shorten(err.message, 200), _path(parts), keyword)]


_FORMAT_EXAMPLES = {"date": "2026-01-31", "date-time": "2026-01-31T09:30:00Z", "time": "09:30:00Z",
                    "email": "name@example.com", "uuid": "123e4567-e89b-12d3-a456-426614174000",
                    "ipv4": "192.0.2.1"}


def _branch_types(err: Any) -> list[str] | None:
    wanted: list[str] = []
    for sub in err.context:
        if sub.validator != "type" or list(sub.relative_path):
            return None
        value = sub.validator_value
        wanted.extend(value if isinstance(value, list) else [value])
    return list(dict.fromkeys(wanted))


def _type_message(instance: Any, wanted: str | list) -> str:
    """`'5' is a string; the schema wants an integer (send 5 without quotes)`."""
    wanted_list = wanted if isinstance(wanted, list) else [wanted]
    got = "null is not allowed here" if instance is None else f"{_show(instance)} is {_a(_json_type_of(instance))}"
    text = f"{got}; the schema wants " + " or ".join(
        _a(w) if w != "null" else "null" for w in wanted_list)
    if isinstance(instance, str):
        # A value of the wanted type wrapped in quotes ("5", "true", "[1, 2]"): say how to send it.
        try:
            inner = json.loads(instance, parse_constant=_reject_constant)
        except ValueError:
            return text
        inner_type = _json_type_of(inner)
        if inner_type in wanted_list or (inner_type == "integer" and "number" in wanted_list):
            text += f" (send {json.dumps(inner)} without quotes)"
    return text


def _json_type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _a(word: str) -> str:
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


def _show(value: Any, limit: int = 60) -> str:
    """A string in quotes, as Python writes it ('5': so a number sent as text shows as text), anything else
    as JSON (null, true, 5)."""
    try:
        text = repr(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:
        text = repr(value)
    return _shorten(text, limit)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _path(parts: Iterable[Any]) -> str:
    """['items', 0, 'qty'] -> '$.items[0].qty'; odd keys are quoted: $['first name']."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.match(part):
            out += f".{part}"
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out


_PATH_TOKEN = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[(\"(?:[^\"\\]|\\.)*\")\]")


def _path_sort_key(path: str | None) -> tuple:
    if path is None:
        return ()
    key = []
    for name, index, quoted in _PATH_TOKEN.findall(path):
        key.append((0, int(index), "") if index else (1, 0, name or json.loads(quoted)))
    return tuple(key)


def _names(names: Iterable[str]) -> str:
    names = list(names)
    return ("the required field " if len(names) == 1 else "the required fields ") + ", ".join(names)


# ----------------------------------------------------------------------------------------------------------
# Gate 3: rules
# ----------------------------------------------------------------------------------------------------------

def rules_gate(rules: Iterable[Any], arguments: dict) -> GateResult:
    """Run every rule on the schema-valid arguments; each refusal becomes a `rule` error.

    A rule returns None (fine) or a message (refused), or raises RuleViolation(message, path).
    """
    errors = _rule_errors(rules, arguments)
    if errors:
        return GateResult(ok=False, arguments=arguments, gate="rules", errors=errors)
    return GateResult(ok=True, arguments=arguments)


def _rule_errors(rules: Iterable[Any], arguments: dict) -> tuple[ArgumentError, ...]:
    errors = []
    for rule in rules:
        keyword = getattr(rule, "__name__", type(rule).__name__)
        try:
            verdict = rule(arguments)
        except RuleViolation as exc:
            errors.append(ArgumentError("rule", exc.message, _rule_path(exc.path), keyword))
            continue
        if verdict is None:
            continue
        if not isinstance(verdict, str):
            raise TypeError(f"rule {keyword!r} returned {verdict!r}; a rule returns None or a message")
        errors.append(ArgumentError("rule", verdict, None, keyword))
    return tuple(errors)


def _rule_path(path: str | None) -> str | None:
    if path is None or path.startswith("$"):
        return path
    return _path(path.split("."))


def date_order(start: str, end: str) -> Any:
    """A rule: the ISO date in field `end` must not come before the one in `start`.

        search = Tool.from_schema(...).with_rules(date_order("startDate", "endDate"))
    """
    def rule(arguments: dict) -> str | None:
        first, last = arguments.get(start), arguments.get(end)
        # ISO dates of one format compare correctly as text; missing or null fields are gate 2's business
        if isinstance(first, str) and isinstance(last, str) and last < first:
            raise RuleViolation(f"{end} {last} is before {start} {first}", _path([end]))
        return None

    rule.__name__ = "date_order"
    return rule


# ----------------------------------------------------------------------------------------------------------
# The envelope for a failed gate
# ----------------------------------------------------------------------------------------------------------

def error_result(call: ToolCall, gate_result: GateResult) -> ToolResult:
    """The ToolResult the model reads for a call that failed a gate.

    kind/path/keyword come from the first error; the message lists every error (up to ten)."""
    if gate_result.ok or not gate_result.errors:
        raise ValueError("error_result needs a failed GateResult")
    first = gate_result.errors[0]
    message = first.message if len(gate_result.errors) == 1 else (
        f"{len(gate_result.errors)} problems: {gate_result.message()}")
    return ToolResult.failure(call, first.kind, message, first.path, first.keyword)


def lookup_result(call: ToolCall, tools: Iterable[str], withdrawn: Iterable[str] = ()) -> ToolResult:
    """The ToolResult the model reads for a call to a tool that is not among `tools` (the lookup before the
    gates): "stale_tool" when the name was withdrawn from the list during the run, else "unknown_tool"."""
    known = ", ".join(sorted(tools)) or "none"
    if call.name in withdrawn:  # the model is behind the list, not mistaken: say so
        return ToolResult.failure(call, "stale_tool", f"tool {call.name!r} was withdrawn: the tool list changed "
                                                      f"during this run; available tools: {known}")
    return ToolResult.failure(call, "unknown_tool", f"no tool named {call.name!r}; available tools: {known}")


def canonical_arguments(call: ToolCall) -> str:
    """A call's arguments in one spelling, so {"a":1,"b":2} and {"b":2,"a":1} count as the same call
    (Limits.max_repeats); measured first, as the parse gate measures, so a deep object cannot recurse."""
    if call.arguments is None:  # text that is not a JSON object: the text itself
        return call.raw_arguments if isinstance(call.raw_arguments, str) else "<not an object>"
    if json_shape(call.arguments, max_depth=MAX_DEPTH)[1] > MAX_DEPTH:  # json.dumps would recurse too deep;
        return "<too deep>"  # the parse gate refuses such a call anyway
    return json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=str)
