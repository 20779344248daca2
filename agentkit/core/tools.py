"""@tool: a typed Python function becomes a `Tool` a model can call.

    @tool
    def get_weather(city: str, days: int = 1) -> dict:
        '''Current weather for a city.

        Args:
            city: City name, e.g. "Paris".
            days: Days of forecast.
        '''
        return {"city": city, "temp_c": 18}

    get_weather.parameters        # JSON Schema built by pydantic from the type hints
    get_weather.spec              # the ToolSpec a codec puts on the wire
    get_weather.invoke({"city": "Paris"}, None)   # JSON arguments -> typed Python call

The words of this module:

    Tool           name, description, JSON Schema `parameters`, the function, and flags
                   (return_direct, idempotent, timeout, max_calls, strict, rules)
    ToolContext    a parameter typed ToolContext is hidden from the model and filled in at call time
                   (call id, read-only run state, step, per-tool counters, run id, attempt)
    Update         return Update(state={...}, message=...) to change run state *and* answer the call
    RuleViolation  raised by a rule (gate 3) to refuse a call, with the path of the culprit field

`@tool(strict=True)` rewrites the schema for OpenAI strict mode with `agentkit.core.strict.to_strict`.

The schema comes from pydantic (we do not write a schema generator); the conversion of JSON arguments
to Python values uses the same pydantic model, built once per tool.

Every tool is checked when it is defined (its schema by `agentkit.core.schema_check`), so a mistake shows up
at its definition with the tool's name, not as a failed call in the middle of a run: the schema must be
valid JSON Schema 2020-12 (checked against the meta-schema), plain JSON (no NaN), self-contained (every
$ref resolves) and satisfiable (no empty enum, no minimum above maximum; a typed function's defaults must
fit their types); the function must return one value (no generators, no classes); the flags must be of
their kind (`timeout` a finite number of seconds, `max_calls` a whole number, not True). Each refusal is a
ToolDefinitionError naming the parameter.

Left out on purpose: positional-only parameters and *args/**kwargs (a model sends one JSON object, so
every parameter needs a name); output schemas; type hints that only resolve inside a function body
(define hint types at module level).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as _dt
import enum
import inspect
import json
import math
import re
import threading
import typing
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType, UnionType
from typing import Any, Union

from .errors import ToolDefinitionError, ToolReturnError
from .schema_check import check_defaults, check_parameters, shorten
from .strict import accepts_null, to_strict, walk
from .types import ToolSpec

#: A business rule (gate 3): gets the schema-valid JSON arguments, returns a refusal message or None.
Rule = Callable[[dict], Union[str, None]]  # noqa: UP007 (a runtime alias; py3.10 safe)

# OpenAI and Anthropic both accept these names; other providers accept a superset.
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_EMPTY: Mapping[str, Any] = MappingProxyType({})
_MAX_RESULT_DEPTH = 200


# ----------------------------------------------------------------------------------------------------------
# The small vocabulary: ToolContext, Update, RuleViolation
# ----------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ToolContext:
    """What a tool may know about the run it is part of. Never shown to the model.

        @tool
        def remember(city: str, ctx: ToolContext) -> str:
            return f"call {ctx.call_id}, step {ctx.step}, city so far: {ctx.state.get('city')}"

    `state` and `counters` are read-only snapshots: a tool changes state only by returning an `Update`,
    so parallel tools never see each other's half-written changes.
    """

    call_id: str
    tool_name: str
    state: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    step: int = 0                          # model calls so far in this run
    counters: Mapping[str, int] = field(default_factory=lambda: _EMPTY)  # tool calls so far, per tool
    run_id: str = ""
    attempt: int = 1                       # 1-based; >1 when a retry policy runs the call again
    trace: Any = field(default=None, repr=False, compare=False)  # the run's Trace, for `record`

    def __post_init__(self) -> None:
        # a copy behind a read-only view: later changes to the run's state do not leak into this call
        for name in ("state", "counters"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    def record(self, kind: str = "payload", **data: Any) -> None:
        """Put something in the run's trace, tagged with this call — e.g. the raw downstream payload,
        which belongs in the log, not in the envelope the model reads. A no-op outside a run."""
        if self.trace is not None:
            self.trace.record(kind, call_id=self.call_id, tool=self.tool_name, **data)


@dataclass(frozen=True)
class Update:
    """A tool's answer that also changes the run's state.

        return Update(state={"city": city}, message=f"remembered {city}")

    `message` is the result the model reads; it is required, because every tool call needs exactly one
    result (an Update without one is a `ToolReturnError`, see `Tool.check_return`).
    """

    state: Mapping[str, Any] = field(default_factory=dict)
    message: Any = None


class RuleViolation(ValueError):
    """A rule refuses a call: `raise RuleViolation("endDate is before startDate", "$.endDate")`."""

    def __init__(self, message: str, path: str | None = None):
        super().__init__(message)
        self.message, self.path = message, path


# ----------------------------------------------------------------------------------------------------------
# Tool
# ----------------------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)  # eq=False: a tool is itself (hashable by identity, usable as a cache key)
class Tool:
    """A callable the model may ask for: what it is told (name, description, parameters) plus how to run it.

    Build one with `@tool` (from type hints) or `Tool.from_schema` (from a hand-written JSON Schema).
    Calling the Tool like the function still works: `get_weather("Paris")`.
    """

    name: str
    description: str
    parameters: dict = field(repr=False)
    fn: Callable[..., Any] = field(repr=False)
    is_async: bool
    context_param: str | None
    return_direct: bool = False
    idempotent: bool = False
    timeout: float | None = None
    max_calls: int | None = None
    strict: bool = False
    rules: tuple[Rule, ...] = field(default=(), repr=False)  # functions: their repr has an address
    # JSON arguments -> keyword arguments of `fn` (None: pass the JSON through, as for from_schema tools)
    _convert: Callable[[dict], dict] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # Every way of building a Tool ends here, so every tool is checked: a mistake surfaces when the
        # tool is defined, with its name, not at the first call in the middle of a run.
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ToolDefinitionError(
                f"tool name {self.name!r} is not allowed: use 1-64 letters, digits, '_' or '-'")
        check_flags(self.name, description=self.description, return_direct=self.return_direct,
                    idempotent=self.idempotent, timeout=self.timeout, max_calls=self.max_calls,
                    strict=self.strict)
        check_function(self.name, self.fn)
        check_parameters(self.name, self.parameters)
        rules = tuple(self.rules)
        for rule in rules:
            if not callable(rule):
                raise ToolDefinitionError(f"tool {self.name!r}: rule {rule!r} is not callable")
        object.__setattr__(self, "rules", rules)

    # -- what the model is told ---------------------------------------------------------------------------

    @property
    def spec(self) -> ToolSpec:
        """The wire-neutral definition every codec encodes (name, description, parameters, strict)."""
        return ToolSpec(self.name, self.description, self.parameters, self.strict)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(self.parameters.get("required", ()))

    # -- building -----------------------------------------------------------------------------------------

    @classmethod
    def from_schema(cls, name: str, description: str, parameters: dict, fn: Callable[..., Any], *,
                    context_param: str | None = None, return_direct: bool = False,
                    idempotent: bool = False, timeout: float | None = None, max_calls: int | None = None,
                    strict: bool = False, rules: Iterable[Rule] = ()) -> Tool:
        """A tool from a hand-written JSON Schema (e.g. an imported MCP tool); `fn(**arguments)` gets JSON.

            echo = Tool.from_schema("echo", "Say it back", {"type": "object",
                                    "properties": {"text": {"type": "string"}}, "required": ["text"]},
                                    lambda text: text)
        """
        if strict:  # check what was written, before the rewrite moves defaults into descriptions
            check_parameters(name, parameters)
        # A private copy: validators are cached per schema object, so nobody may change it under us.
        params = to_strict(parameters) if strict else copy.deepcopy(parameters)
        return cls(name=name, description=description, parameters=params, fn=fn, is_async=_is_async(fn),
                   context_param=context_param, return_direct=return_direct, idempotent=idempotent,
                   timeout=timeout, max_calls=max_calls, strict=strict, rules=tuple(rules))

    def with_rules(self, *rules: Rule) -> Tool:
        """A copy with more gate-3 rules (a frozen Tool cannot grow a `@my_tool.rule` decorator)."""
        return dataclasses.replace(self, rules=self.rules + rules)

    # -- running ------------------------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def invoke(self, arguments: dict, context: ToolContext | None = None) -> Any:
        """Call the function with schema-valid JSON arguments converted to its declared Python types.

        Enum members, pydantic models, dates ... are built from their JSON form; nothing else is coerced
        (pydantic strict mode: "5" never becomes 5). Run the gates (`agentkit.core.validate`) first; arguments
        that still do not fit raise pydantic's ValidationError (a ValueError). For an async tool this
        returns the coroutine, which the executor awaits.
        """
        kwargs = self._convert(arguments) if self._convert is not None else dict(arguments)
        if self.context_param is not None:
            kwargs[self.context_param] = context if context is not None else ToolContext("", self.name)
        return self.fn(**kwargs)

    def check_return(self, value: Any) -> Any:
        """Refuse a return value the loop could not answer the call with; give it back unchanged otherwise."""
        if isinstance(value, Update):
            if value.message is None:
                raise ToolReturnError(self.name, "returned a state update without its result message; "
                                                 "every tool call needs exactly one result")
            if not isinstance(value.state, Mapping):
                raise ToolReturnError(self.name, f"returned Update(state=...) with a "
                                                 f"{type(value.state).__name__}; state must be a mapping")
        return value

    def split_return(self, value: Any) -> tuple[Any, dict | None]:
        """(JSON-able result for the model, state update or None): what a return value means, for the
        loop and the MCP server alike. Raises ToolReturnError for a value no call can be answered with
        (see `check_return`), before any state is handed out."""
        if isinstance(value, Update):
            self.check_return(value)
            return self.to_jsonable(value.message), dict(value.state)
        return self.to_jsonable(value), None

    def to_jsonable(self, value: Any) -> Any:
        """Plain JSON data from a return value: pydantic models and dataclasses become dicts, Enums their
        value, sets sorted lists, dates ISO strings. Anything else raises ToolReturnError naming the type."""
        return _jsonable(value, self.name, 0)


# ----------------------------------------------------------------------------------------------------------
# Checked at definition: what would otherwise fail at the first call, or on the wire
# ----------------------------------------------------------------------------------------------------------

def check_flags(tool_name: str, *, description: Any, return_direct: Any, idempotent: Any, timeout: Any,
                max_calls: Any, strict: Any) -> None:
    """Refuse a flag of the wrong kind: `timeout=float("inf")` would fail every call with OverflowError."""
    def refuse(flag: str, value: Any, wanted: str) -> ToolDefinitionError:
        return ToolDefinitionError(f"tool {tool_name!r}: {flag}={value!r}: {wanted}")

    if not isinstance(description, str):
        raise refuse("description", description, "use a str")
    for flag, value in (("return_direct", return_direct), ("idempotent", idempotent), ("strict", strict)):
        if not isinstance(value, bool):
            raise refuse(flag, value, "use True or False")
    if timeout is not None and not is_valid_timeout(timeout):
        raise refuse("timeout", timeout, f"use a number of seconds > 0 (at most {threading.TIMEOUT_MAX:g}), "
                                         f"or None for no timeout")
    if max_calls is not None and (isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 1):
        raise refuse("max_calls", max_calls, "use a whole number >= 1, or None for no cap")


def is_valid_timeout(seconds: Any) -> bool:
    """A timeout a thread can wait for: seconds > 0, at most threading.TIMEOUT_MAX (not True, NaN or inf).
    The one rule for a tool's `timeout` flag and the run's `tool_timeout`."""
    return (not isinstance(seconds, bool) and isinstance(seconds, (int, float))
            and 0 < seconds <= threading.TIMEOUT_MAX)  # also refuses NaN: every comparison with it is False


def check_function(tool_name: str, fn: Any) -> None:
    """Refuse what cannot answer a call with one value: classes, generators, non-callables."""
    if isinstance(fn, type):
        raise ToolDefinitionError(f"tool {tool_name!r}: {fn.__qualname__} is a class; a tool is a function "
                                  f"(or an object with __call__)")
    if not callable(fn):
        raise ToolDefinitionError(f"tool {tool_name!r}: {fn!r} is not callable")
    call = fn if inspect.isroutine(fn) else type(fn).__call__
    if inspect.isgeneratorfunction(call) or inspect.isasyncgenfunction(call):
        raise ToolDefinitionError(f"tool {tool_name!r}: the function is a generator; every call needs exactly "
                                  f"one result, so collect the items and return them as a list")


# ----------------------------------------------------------------------------------------------------------
# @tool
# ----------------------------------------------------------------------------------------------------------

def tool(fn: Callable[..., Any] | None = None, /, *, name: str | None = None, description: str | None = None,
         return_direct: bool = False, idempotent: bool = False, timeout: float | None = None,
         max_calls: int | None = None, strict: bool = False, rules: Iterable[Rule] = ()) -> Any:
    """Turn a typed function (sync or async) into a `Tool`. Use as `@tool`, `@tool(...)` or `tool(fn)`.

    Every parameter needs a type hint (str, int, float, bool, list[...], dict[str, ...], Literal, Enum,
    Optional / X | None, date/datetime, pydantic models, TypedDicts). `Annotated[int, "meaning"]` or
    `Annotated[int, Field(description=...)]` describes a parameter; so does the docstring's Args section.
    A parameter typed `ToolContext` is hidden from the model. `strict=True` makes the schema OpenAI-strict
    (see `to_strict`): optional parameters become nullable, and a null then means "use the default".
    """
    flags = {"name": name, "description": description, "return_direct": return_direct,
             "idempotent": idempotent, "timeout": timeout, "max_calls": max_calls, "strict": strict,
             "rules": tuple(rules)}
    if fn is None:
        return lambda f: _build(f, **flags)
    return _build(fn, **flags)


def _build(fn: Callable[..., Any], *, name: str | None, description: str | None, return_direct: bool,
           idempotent: bool, timeout: float | None, max_calls: int | None, strict: bool,
           rules: tuple[Rule, ...]) -> Tool:
    # pydantic and docstring_parser load here, not at import: `import agentkit` stays cheap.
    import docstring_parser
    from pydantic import ConfigDict, Field, create_model

    if isinstance(fn, Tool) or not callable(fn):
        raise ToolDefinitionError(f"@tool needs a plain function, got {fn!r}")
    tool_name = name or getattr(fn, "__name__", "")
    if not isinstance(tool_name, str) or not _NAME.match(tool_name):
        raise ToolDefinitionError(f"tool name {tool_name!r} is not allowed: use 1-64 letters, digits, "
                                  f"'_' or '-' (a lambda needs name=...)")
    check_function(tool_name, fn)
    check_flags(tool_name, description="" if description is None else description, return_direct=return_direct,
                idempotent=idempotent, timeout=timeout, max_calls=max_calls, strict=strict)

    doc = docstring_parser.parse(inspect.getdoc(fn) or "")
    doc_params = {p.arg_name: p.description for p in doc.params if p.description}
    if description is None:
        description = "\n\n".join(p for p in (doc.short_description, doc.long_description) if p)

    signature = inspect.signature(fn)
    hints = _type_hints(fn, tool_name, signature)
    fields: dict[str, Any] = {}
    aliases: dict[str, str] = {}   # pydantic field name -> parameter name
    has_default: set[str] = set()
    context_param = None
    for param in signature.parameters.values():
        pname = param.name
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(f"tool {tool_name!r}: parameter {pname!r} is *args/**kwargs; a model "
                                      f"sends one JSON object, so every parameter needs a name and a type")
        if param.kind is param.POSITIONAL_ONLY:
            raise ToolDefinitionError(f"tool {tool_name!r}: parameter {pname!r} is positional-only; "
                                      f"tools are called with keyword arguments")
        if pname not in hints:
            raise ToolDefinitionError(f"tool {tool_name!r}: parameter {pname!r} has no type hint; "
                                      f"the JSON Schema the model sees is built from the hints")
        hint = hints[pname]
        if _is_context(hint):
            if context_param is not None:
                raise ToolDefinitionError(f"tool {tool_name!r}: two ToolContext parameters "
                                          f"({context_param!r}, {pname!r}); one is enough")
            context_param = pname
            continue
        hint, desc = _split_annotated(hint)
        desc = desc or (None if _has_field_description(hint) else doc_params.get(pname))
        default = ... if param.default is param.empty else param.default
        if default is not ...:
            has_default.add(pname)
        # Internal field names p0, p1 ... with the real name as alias: parameters may be called `json`,
        # `schema` or `model_config` without clashing with BaseModel's own attributes.
        key = f"p{len(fields)}"
        aliases[key] = pname
        # description only when we have one: an explicit None would erase Annotated[..., Field(description=)]
        fields[key] = (hint, Field(default, alias=pname, **({"description": desc} if desc else {})))

    try:
        model = create_model(f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            raw_schema = model.model_json_schema()
    except Exception as exc:  # pydantic raises several kinds; name the culprit parameter
        raise _type_error(tool_name, fields, aliases, exc) from exc
    for key in fields:  # pydantic only warns about a default it cannot write as JSON, and leaves it out
        pname = aliases[key]
        if pname in has_default and "default" not in raw_schema["properties"].get(pname, {}) and caught:
            raise ToolDefinitionError(f"tool {tool_name!r}: parameter {pname!r}: the default "
                                      f"{shorten(repr(signature.parameters[pname].default))} cannot be written as "
                                      f"JSON, so the model could not be told it")

    parameters = _tidy_schema(raw_schema)
    # In strict mode, null for an optional parameter that cannot be None means "use the default".
    null_means_default = frozenset(p for p in has_default
                                   if not accepts_null(parameters["properties"].get(p, {})))
    check_parameters(tool_name, parameters)  # what pydantic wrote, before strict mode moves defaults
    check_defaults(tool_name, parameters)
    if strict:
        parameters = to_strict(parameters)
    convert = _converter(model, aliases, null_means_default if strict else frozenset())
    return Tool(name=tool_name, description=description, parameters=parameters, fn=fn, is_async=_is_async(fn),
                context_param=context_param, return_direct=return_direct, idempotent=idempotent,
                timeout=timeout, max_calls=max_calls, strict=strict, rules=rules, _convert=convert)


def _type_hints(fn: Callable[..., Any], tool_name: str, signature: inspect.Signature) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # NameError, TypeError, SyntaxError: all mean the same
        # Find the parameter whose hint does not resolve, so the message can name it.
        globalns = getattr(inspect.unwrap(fn), "__globals__", {})
        for param in signature.parameters.values():
            ann = param.annotation
            if isinstance(ann, str):
                try:
                    eval(ann, globalns)  # what get_type_hints does for one string annotation
                except Exception as inner:  # noqa: BLE001 - any failure names this parameter
                    raise ToolDefinitionError(
                        f"tool {tool_name!r}: the type hint {ann!r} of parameter {param.name!r} does not "
                        f"resolve ({inner}); define the type at module level") from exc
        raise ToolDefinitionError(f"tool {tool_name!r}: cannot read the type hints: {exc}") from exc


def _type_error(tool_name: str, fields: dict, aliases: dict, exc: Exception) -> ToolDefinitionError:
    from pydantic import TypeAdapter

    for key, (hint, _) in fields.items():
        try:
            TypeAdapter(hint).json_schema()
        except Exception as inner:  # noqa: BLE001 - any failure names this parameter
            first = str(inner).strip().splitlines()[0] if str(inner).strip() else type(inner).__name__
            return ToolDefinitionError(f"tool {tool_name!r}: parameter {aliases[key]!r} has type "
                                       f"{_type_name(hint)} that cannot become JSON Schema: {first}")
    return ToolDefinitionError(f"tool {tool_name!r}: cannot build the JSON Schema: {exc}")


def _type_name(hint: Any) -> str:
    return getattr(hint, "__qualname__", None) or repr(hint)


def _is_context(hint: Any) -> bool:
    """ToolContext, or Optional[ToolContext]."""
    if isinstance(hint, type):
        return issubclass(hint, ToolContext)
    if typing.get_origin(hint) in (Union, UnionType):
        return any(isinstance(a, type) and issubclass(a, ToolContext) for a in typing.get_args(hint))
    return False


def _split_annotated(hint: Any) -> tuple[Any, str | None]:
    """Annotated[int, "meaning", Field(ge=1)] -> (Annotated[int, Field(ge=1)], "meaning").

    pydantic ignores plain strings in Annotated; we read them as the parameter's description."""
    if typing.get_origin(hint) is not typing.Annotated:
        return hint, None
    base, *meta = typing.get_args(hint)
    texts = [m for m in meta if isinstance(m, str)]
    rest = [m for m in meta if not isinstance(m, str)]
    rebuilt = typing.Annotated[(base, *rest)] if rest else base
    return rebuilt, (texts[0] if texts else None)


def _has_field_description(hint: Any) -> bool:
    if typing.get_origin(hint) is not typing.Annotated:
        return False
    return any(getattr(m, "description", None) for m in typing.get_args(hint)[1:])


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    # an object with an `async def __call__` counts too
    return not inspect.isroutine(fn) and inspect.iscoroutinefunction(type(fn).__call__)


def _auto_title(name: str) -> str:
    return name.title().replace("_", " ")  # what pydantic writes when nobody chose a title


def _tidy_schema(raw: dict) -> dict:
    """pydantic's schema, minus titles that only repeat names, with the root keys in reading order."""
    for _, node in walk(raw):
        props = node.get("properties")
        if isinstance(props, dict):
            for key, sub in props.items():
                if isinstance(sub, dict) and sub.get("title") == _auto_title(key):
                    del sub["title"]
    for key, sub in (raw.get("$defs") or {}).items():
        if isinstance(sub, dict) and sub.get("title") == key:
            del sub["title"]
    root = {"type": "object", "properties": raw.get("properties", {}), "required": raw.get("required", []),
            "additionalProperties": raw.get("additionalProperties", False)}
    for key, value in raw.items():
        if key not in root and key != "title":
            root[key] = value
    return root


def _converter(model: Any, aliases: dict[str, str], null_means_default: frozenset) -> Callable[[dict], dict]:
    from pydantic import ValidationError

    validate_python = model.__pydantic_validator__.validate_python  # model_validate without its wrapper

    def convert(arguments: dict) -> dict:
        if null_means_default:
            arguments = {k: v for k, v in arguments.items() if not (v is None and k in null_means_default)}
        try:
            # Most arguments are already of the declared Python types (str, int, list[str] ...): strict
            # validation of the Python values accepts exactly those, and costs no JSON round trip.
            validated = validate_python(arguments, strict=True)
        except ValidationError as python_error:
            try:
                text = json.dumps(arguments)
            except (TypeError, ValueError):  # Python values that JSON cannot carry: that error stands
                raise python_error from None
            # JSON text is the form a model sends: strict JSON validation builds Enum members, dates,
            # tuples and nested models from it, and still never turns "5" into 5.
            try:
                validated = model.model_validate_json(text, strict=True)
            except ValidationError as exc:
                # JSON Schema counts 5.0 as an integer, pydantic's strict mode does not. Retry once with
                # integral floats written as integers: the schema could not tell them apart either.
                if not any(e["type"] == "int_type" and isinstance(e.get("input"), float)
                           and e["input"].is_integer() for e in exc.errors()):
                    raise
                validated = model.model_validate_json(json.dumps(_integral(arguments)), strict=True)
        # Only what the model sent: the function's own defaults apply to everything else.
        return {aliases[key]: getattr(validated, key) for key in validated.model_fields_set}

    return convert


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


# ----------------------------------------------------------------------------------------------------------
# Return values -> JSON
# ----------------------------------------------------------------------------------------------------------

def _jsonable(value: Any, tool_name: str, depth: int) -> Any:
    if depth > _MAX_RESULT_DEPTH:
        raise ToolReturnError(tool_name, f"returned data nested deeper than {_MAX_RESULT_DEPTH} levels "
                                         f"(or data that contains itself)")
    if isinstance(value, enum.Enum):  # before str/int: StrEnum and IntEnum are both
        return _jsonable(value.value, tool_name, depth + 1)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ToolReturnError(tool_name, f"returned {value!r}, which JSON cannot carry")
        return value
    if isinstance(value, Mapping):
        return {_json_key(k, tool_name): _jsonable(v, tool_name, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, tool_name, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [_jsonable(v, tool_name, depth + 1) for v in value]
        try:
            return sorted(items)
        except TypeError:  # mixed types: any fixed order will do, as long as it is always the same
            return sorted(items, key=lambda v: (type(v).__name__, json.dumps(v, sort_keys=True)))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name), tool_name, depth + 1)
                for f in dataclasses.fields(value)}
    if callable(getattr(type(value), "model_dump", None)) and not isinstance(value, type):  # pydantic model
        try:
            return value.model_dump(mode="json")
        except Exception as exc:
            raise ToolReturnError(tool_name, f"returned a {type(value).__name__} that pydantic cannot "
                                             f"turn into JSON: {exc}") from exc
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    import decimal  # here, not at the top: rare types should not slow down `import agentkit`
    import pathlib
    import uuid

    if isinstance(value, (uuid.UUID, decimal.Decimal, pathlib.PurePath)):
        return str(value)
    hint = " (an async function's result that was never awaited?)" if inspect.isawaitable(value) else ""
    raise ToolReturnError(tool_name, f"returned a value of type {type(value).__qualname__!r}{hint}, which "
                                     f"cannot be sent to the model as JSON; return a dict, list, str, "
                                     f"number, bool, None, a dataclass or a pydantic model")


def _json_key(key: Any, tool_name: str) -> str:
    if isinstance(key, enum.Enum):
        key = key.value
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key)  # what json.dumps itself does with such keys
    raise ToolReturnError(tool_name, f"returned a dict with a key of type {type(key).__qualname__!r}; "
                                     f"JSON object keys are strings")
