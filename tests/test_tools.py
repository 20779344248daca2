"""@tool and Tool: the schema a model sees, the hidden context, conversion in, JSON out."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
import io
import json
import math
import subprocess
import sys
import typing
from collections.abc import Callable
from typing import Annotated, Literal, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples
from pydantic import BaseModel, Field, ValidationError
from typing_extensions import TypedDict

from agentkit.core.errors import ToolDefinitionError, ToolReturnError
from agentkit.core.strict import strict_problems
from agentkit.core.tools import RuleViolation, Tool, ToolContext, Update, tool
from agentkit.core.types import ToolSpec


# Hint types live at module level: hints are strings here (from __future__ import annotations), and
# strings resolve in the module's namespace.
class Color(enum.Enum):
    red = "red"
    blue = "blue"


class Address(BaseModel):
    city: str
    zip: int = 0


class Item(TypedDict):
    sku: str
    qty: int


class Opaque:
    pass


def schema_of(fn: Callable) -> dict:
    return tool(fn).parameters


def prop(fn: Callable, name: str) -> dict:
    return schema_of(fn)["properties"][name]


def walk(node: typing.Any) -> typing.Iterator[dict]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


# ---------------------------------------------------------------------------------------------------------
# Schema generation
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("hint, expected", [
    (str, {"type": "string"}),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (bool, {"type": "boolean"}),
    (list[int], {"type": "array", "items": {"type": "integer"}}),
    (dict[str, float], {"type": "object", "additionalProperties": {"type": "number"}}),
    (Literal["c", "f"], {"type": "string", "enum": ["c", "f"]}),
    (Optional[int], {"anyOf": [{"type": "integer"}, {"type": "null"}]}),  # noqa: UP045
    (typing.Union[str, None], {"anyOf": [{"type": "string"}, {"type": "null"}]}),  # noqa: UP007
    (datetime.date, {"type": "string", "format": "date"}),
])
def test_each_basic_type_becomes_its_json_schema(hint, expected):
    def f(x): ...
    f.__annotations__ = {"x": hint}
    assert prop(f, "x") == expected


def test_pipe_union_with_none_is_nullable():
    def f(x: int | None): ...
    assert prop(f, "x") == {"anyOf": [{"type": "integer"}, {"type": "null"}]}


def test_enum_becomes_a_def_with_its_values():
    def f(color: Color): ...
    schema = schema_of(f)
    assert schema["properties"]["color"] == {"$ref": "#/$defs/Color"}
    assert schema["$defs"]["Color"] == {"type": "string", "enum": ["red", "blue"]}


def test_nested_pydantic_model_and_typeddict_become_defs():
    def f(address: Address, items: list[Item]): ...
    schema = schema_of(f)
    assert schema["properties"]["items"] == {"type": "array", "items": {"$ref": "#/$defs/Item"}}
    assert schema["$defs"]["Address"]["properties"] == {"city": {"type": "string"},
                                                        "zip": {"type": "integer", "default": 0}}
    assert schema["$defs"]["Address"]["required"] == ["city"]
    assert schema["$defs"]["Item"]["required"] == ["sku", "qty"]


def test_defaults_are_shown_and_make_a_parameter_optional():
    def f(city: str, days: int = 1, color: Color = Color.red): ...
    schema = schema_of(f)
    assert schema["required"] == ["city"]
    assert schema["properties"]["days"] == {"type": "integer", "default": 1}
    assert schema["properties"]["color"]["default"] == "red"


def test_root_is_a_closed_object_with_required_listed_first_keys_in_order():
    def f(city: str): ...
    schema = schema_of(f)
    assert schema == {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                      "additionalProperties": False}
    assert list(schema)[:3] == ["type", "properties", "required"]


def test_no_parameters_gives_an_empty_object_schema():
    def ping() -> str:
        """Are you there?"""
        return "pong"
    assert schema_of(ping) == {"type": "object", "properties": {}, "required": [],
                               "additionalProperties": False}


def test_titles_that_only_repeat_names_are_dropped():
    def f(start_date: str, address: Address, color: Color, items: list[Item]): ...
    titles = [node["title"] for node in walk(schema_of(f)) if "title" in node]
    assert titles == []


def test_a_chosen_title_is_kept():
    def f(x: Annotated[int, Field(title="The X")]): ...
    assert prop(f, "x")["title"] == "The X"


def test_annotated_string_and_field_descriptions():
    def f(a: Annotated[str, "what a is"], b: Annotated[int, Field(description="what b is", ge=1)]): ...
    assert prop(f, "a") == {"type": "string", "description": "what a is"}
    assert prop(f, "b") == {"type": "integer", "description": "what b is", "minimum": 1}


def test_parameter_named_like_a_basemodel_attribute_works():
    def f(json: str, schema: int, model_config: bool = False): ...
    t = tool(f)
    assert list(t.parameters["properties"]) == ["json", "schema", "model_config"]
    assert t.invoke({"json": "x", "schema": 1}) is None


# ---------------------------------------------------------------------------------------------------------
# Docstrings
# ---------------------------------------------------------------------------------------------------------

def test_google_docstring_gives_description_and_parameter_descriptions():
    @tool
    def search(start_date: str, status: str = "paid") -> list:
        """Search invoices by date.

        Only invoices of this account.

        Args:
            start_date: First day, ISO format.
            status: Invoice status.

        Returns:
            The matching invoices.
        """
        return []
    assert search.description == "Search invoices by date.\n\nOnly invoices of this account."
    assert search.parameters["properties"]["start_date"]["description"] == "First day, ISO format."
    assert search.parameters["properties"]["status"]["description"] == "Invoice status."


def test_rest_and_numpy_docstrings_work_too():
    @tool
    def rest(city: str) -> str:
        """Weather.

        :param city: City name.
        """
        return city

    @tool
    def numpy(city: str) -> str:
        """Weather.

        Parameters
        ----------
        city : str
            City name.
        """
        return city
    assert rest.parameters["properties"]["city"]["description"] == "City name."
    assert numpy.parameters["properties"]["city"]["description"] == "City name."
    assert rest.description == numpy.description == "Weather."


def test_annotated_description_wins_over_the_docstring():
    @tool
    def f(city: Annotated[str, "from the hint"]) -> None:
        """F.

        Args:
            city: from the docstring
        """
    assert f.parameters["properties"]["city"]["description"] == "from the hint"


def test_description_argument_overrides_the_docstring():
    @tool(description="Short and sweet")
    def f(city: str) -> None:
        """Long docstring."""
    assert f.description == "Short and sweet"


def test_no_docstring_gives_an_empty_description():
    @tool
    def f(city: str) -> None: ...
    assert f.description == ""


# ---------------------------------------------------------------------------------------------------------
# Definition errors
# ---------------------------------------------------------------------------------------------------------

def test_missing_hint_names_tool_and_parameter():
    def lookup(city, days: int): ...
    with pytest.raises(ToolDefinitionError, match=r"tool 'lookup': parameter 'city' has no type hint"):
        tool(lookup)


def star_args(*args: int): ...
def star_kwargs(**kwargs: int): ...
def positional_only(a: int, /): ...


@pytest.mark.parametrize("fn, param", [(star_args, "args"), (star_kwargs, "kwargs"), (positional_only, "a")])
def test_star_args_kwargs_and_positional_only_are_refused(fn, param):
    with pytest.raises(ToolDefinitionError, match=rf"tool '{fn.__name__}': parameter '{param}'"):
        tool(fn)


@pytest.mark.parametrize("hint", [Opaque, io.TextIOWrapper, Callable[[int], int]])
def test_unsupported_type_names_tool_and_parameter(hint):
    def weird(ok: int, bad): ...
    weird.__annotations__ = {"ok": int, "bad": hint}
    with pytest.raises(ToolDefinitionError, match=r"tool 'weird': parameter 'bad' has type .* cannot become"):
        tool(weird)


def test_hint_that_does_not_resolve_names_the_parameter():
    def f(city: str, when: NotDefinedAnywhere): ...  # noqa: F821
    with pytest.raises(ToolDefinitionError, match=r"'when'.*does not resolve"):
        tool(f)


@pytest.mark.parametrize("flags, message", [
    ({"name": "has space"}, "not allowed"), ({"timeout": 0}, "timeout"), ({"timeout": -1.5}, "timeout"),
    ({"max_calls": 0}, "max_calls"), ({"rules": [42]}, "not callable")])
def test_bad_flags_are_definition_errors(flags, message):
    def f(city: str): ...
    with pytest.raises(ToolDefinitionError, match=message):
        tool(f, **flags)


# -- every mistake refused when the tool is defined, naming tool, parameter and problem ------------------

class Empty(enum.Enum):
    pass


def _gen(x: int):
    """A generator."""
    yield x


async def _agen(x: int):
    """An async generator."""
    yield x


class NotATool:
    """A class."""

    def __init__(self, x: int):
        self.x = x


@pytest.mark.parametrize("flags, message", [
    ({"timeout": float("inf")}, r"tool 'f': timeout=inf: use a number of seconds > 0"),
    ({"timeout": float("nan")}, r"tool 'f': timeout=nan"),
    ({"timeout": True}, r"tool 'f': timeout=True"),
    ({"timeout": "5"}, r"tool 'f': timeout='5'"),
    ({"timeout": 1e300}, r"tool 'f': timeout=1e\+300: use a number of seconds > 0 \(at most"),
    ({"max_calls": True}, r"tool 'f': max_calls=True: use a whole number >= 1"),
    ({"max_calls": 2.0}, r"tool 'f': max_calls=2.0"),
    ({"return_direct": "yes"}, r"tool 'f': return_direct='yes': use True or False"),
    ({"idempotent": 1}, r"tool 'f': idempotent=1: use True or False"),
    ({"description": 42}, r"tool 'f': description=42: use a str"),
])
def test_a_flag_of_the_wrong_kind_is_refused_naming_it(flags, message):
    def f(city: str):
        """F."""
    with pytest.raises(ToolDefinitionError, match=message):
        tool(f, **flags)
    with pytest.raises(ToolDefinitionError, match=message):
        Tool.from_schema("f", flags.pop("description", ""), {"type": "object"}, lambda: None, **flags)


@pytest.mark.parametrize("fn, message", [
    (_gen, r"tool '_gen': the function is a generator"),
    (_agen, r"tool '_agen': the function is a generator"),
    (NotATool, r"tool 'NotATool': NotATool is a class"),
])
def test_generators_and_classes_are_refused(fn, message):
    with pytest.raises(ToolDefinitionError, match=message):
        tool(fn)
    with pytest.raises(ToolDefinitionError, match=message.replace(fn.__name__, "t", 1)):
        Tool.from_schema("t", "", {"type": "object"}, fn)


def _nan_default(x: float = math.nan) -> float:
    """NaN default."""
    return x


def _inf_default(x: float = math.inf) -> float:
    """Infinite default."""
    return x


def _wrong_default(x: int = "abc") -> int:
    """Wrong-type default."""
    return x


def _none_default(x: int = None) -> int:
    """None for an int."""
    return x


def _object_default(x: int = object()) -> int:
    """A default JSON cannot carry."""
    return x


def _empty_enum(x: Empty) -> int:
    """No value can be sent."""
    return 1


def _ge_above_le(x: Annotated[int, Field(ge=5, le=1)] = 3) -> int:
    """No value can be sent."""
    return x


def _default_outside_its_bounds(x: Annotated[int, Field(ge=1)] = 0) -> int:
    """The default breaks its own bound."""
    return x


@pytest.mark.parametrize("fn, message", [
    (_nan_default, r"tool '_nan_default': parameter 'x' \(at default\): nan is not a JSON number"),
    (_inf_default, r"tool '_inf_default': parameter 'x' \(at default\): inf is not a JSON number"),
    (_wrong_default, r"tool '_wrong_default': parameter 'x': the default \"abc\" does not fit its own schema"),
    (_none_default, r"tool '_none_default': parameter 'x': the default null does not fit its own schema"),
    (_object_default, r"tool '_object_default': parameter 'x': the default <object object .*> cannot be "
                      r"written as JSON"),
    (_empty_enum, r"tool '_empty_enum': parameter 'x': the enum is empty"),
    (_ge_above_le, r"tool '_ge_above_le': parameter 'x': minimum 5 is above maximum 1"),
    (_default_outside_its_bounds, r"tool '_default_outside_its_bounds': parameter 'x': the default 0 does not "
                                  r"fit its own schema \(0 is less than the minimum of 1\)"),
])
@pytest.mark.parametrize("strict", [False, True])
def test_a_parameter_no_call_could_use_is_refused_naming_it(fn, message, strict):
    with pytest.raises(ToolDefinitionError, match=message):
        tool(fn, strict=strict)


@pytest.mark.parametrize("schema, message", [
    ({"type": "object", "properties": {"a": {"type": "nope"}}},
     r"tool 't': parameter 'a' \(at type\): not valid JSON Schema 2020-12: 'nope' is not valid"),
    ({"type": "object", "properties": []}, r"tool 't': parameters at #/properties: not valid JSON Schema"),
    ({"type": "object", "required": "a"}, r"tool 't': parameters at #/required: not valid JSON Schema"),
    ({"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}},
     r"tool 't': parameter 'a' \(at \$ref\): \$ref '#/\$defs/Missing' points nowhere"),
    ({"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}},
     r"tool 't': parameter 'a' \(at \$ref\): \$ref 'https://example.com/a.json' points nowhere"),
    ({"type": "object", "properties": {"a": {"type": "number", "default": math.nan}}},
     r"tool 't': parameter 'a' \(at default\): nan is not a JSON number"),
    ({"type": "object", "properties": {"a": {"enum": []}}}, r"tool 't': parameter 'a': the enum is empty"),
    ({"type": "object", "properties": {"a": {"type": "string", "minLength": 3, "maxLength": 2}}},
     r"tool 't': parameter 'a': minLength 3 is above maxLength 2"),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"],
      "additionalProperties": False}, r"tool 't': parameters: 'b' is required but not a property"),
    ({"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}},
     r"tool 't': parameter 'a' \(at pattern\): not valid JSON Schema 2020-12"),
    ({"type": "object", "properties": {"a": {"type": "string", "default": {1, 2}}}},
     r"tool 't': parameter 'a' \(at default\): a set is not JSON"),
])
@pytest.mark.parametrize("strict", [False, True])
def test_from_schema_refuses_a_schema_no_call_could_use(schema, message, strict):
    with pytest.raises(ToolDefinitionError, match=message):
        Tool.from_schema("t", "", schema, lambda **kw: None, strict=strict)


def test_from_schema_keeps_a_default_that_is_only_a_hint():
    """Real tool lists (MCP servers, BFCL's function docs) write `"default": null` on a string or a default
    outside the enum; JSON Schema says a default SHOULD validate, not MUST. A hand-written schema keeps it."""
    schema = {"type": "object", "properties": {"when": {"type": "string", "default": None},
                                               "mode": {"type": "string", "enum": ["a", "b"], "default": "any"}}}
    echo = Tool.from_schema("t", "", schema, lambda **kw: kw)
    assert echo.parameters["properties"]["when"]["default"] is None
    assert echo.invoke({"mode": "a"}, None) == {"mode": "a"}


def test_a_valid_schema_with_refs_and_an_id_is_accepted():
    schema = {"$id": "https://example.com/root.json", "type": "object",
              "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "https://example.com/root.json#/$defs/A"},
                             "c": {"$id": "inner.json", "$defs": {"X": {"type": "string"}},
                                   "type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}}},
              "$defs": {"A": {"type": "string", "default": "ok"}}}
    assert Tool.from_schema("t", "", schema, lambda **kw: None).parameters == schema


def test_lambda_needs_a_name():
    with pytest.raises(ToolDefinitionError, match="name="):
        tool(lambda: None)
    assert tool(name="noop")(lambda: None).name == "noop"


def test_two_context_parameters_are_refused():
    def f(a: ToolContext, b: ToolContext): ...
    with pytest.raises(ToolDefinitionError, match="two ToolContext"):
        tool(f)


# ---------------------------------------------------------------------------------------------------------
# Decorator forms, flags, spec
# ---------------------------------------------------------------------------------------------------------

def test_three_ways_to_decorate_give_the_same_tool():
    def get_weather(city: str) -> str:
        """Current weather."""
        return city

    plain, called, direct = tool(get_weather), tool()(get_weather), tool(get_weather)
    for t in (plain, called, direct):
        assert isinstance(t, Tool) and t.name == "get_weather" and t.description == "Current weather."
        assert t.parameters == plain.parameters


def test_flags_are_kept_and_spec_carries_the_wire_part():
    @tool(name="weather", return_direct=True, idempotent=True, timeout=2.5, max_calls=3, strict=True)
    def get_weather(city: str) -> str:
        """Current weather."""
        return city
    assert (get_weather.return_direct, get_weather.idempotent, get_weather.timeout, get_weather.max_calls,
            get_weather.strict) == (True, True, 2.5, 3, True)
    assert get_weather.spec == ToolSpec("weather", "Current weather.", get_weather.parameters, True)


def test_calling_the_tool_still_calls_the_function():
    @tool
    def add(a: int, b: int) -> int:
        return a + b
    assert add(2, 3) == 5


def test_tools_are_hashable_by_identity():
    def f(city: str): ...
    a, b = tool(f), tool(f)
    assert a != b and len({a, b}) == 2


# ---------------------------------------------------------------------------------------------------------
# Hidden context
# ---------------------------------------------------------------------------------------------------------

def test_context_parameter_is_hidden_and_injected():
    seen = {}

    @tool
    def remember(city: str, ctx: ToolContext) -> str:
        seen["ctx"] = ctx
        return f"{ctx.call_id}:{ctx.state.get('city')}:{city}"
    assert remember.context_param == "ctx"
    assert list(remember.parameters["properties"]) == ["city"]
    assert remember.parameters["required"] == ["city"]
    context = ToolContext("call_1", "remember", state={"city": "Osaka"}, step=2, counters={"remember": 1})
    assert remember.invoke({"city": "Tokyo"}, context) == "call_1:Osaka:Tokyo"
    assert seen["ctx"] is context


def test_optional_context_is_hidden_too_and_a_blank_one_is_made_outside_a_run():
    @tool
    def f(city: str, ctx: ToolContext | None = None) -> str:
        return ctx.tool_name
    assert "ctx" not in f.parameters["properties"]
    assert f.invoke({"city": "x"}, None) == "f"


def test_context_state_is_a_read_only_snapshot():
    run_state = {"a": 1}
    context = ToolContext("c", "t", state=run_state)
    run_state["a"] = 99
    assert context.state["a"] == 1
    with pytest.raises(TypeError):
        context.state["a"] = 2  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.step = 5  # type: ignore[misc]


# ---------------------------------------------------------------------------------------------------------
# invoke: JSON arguments -> Python values
# ---------------------------------------------------------------------------------------------------------

def test_invoke_converts_json_to_declared_types():
    got = {}

    @tool
    def f(color: Color, address: Address, items: list[Item], when: datetime.date, ratio: float) -> None:
        got.update(color=color, address=address, items=items, when=when, ratio=ratio)
    f.invoke({"color": "blue", "address": {"city": "Paris"}, "items": [{"sku": "a", "qty": 2}],
              "when": "2026-01-31", "ratio": 1})
    assert got["color"] is Color.blue
    assert got["address"] == Address(city="Paris")
    assert got["items"] == [{"sku": "a", "qty": 2}] and isinstance(got["items"][0], dict)
    assert got["when"] == datetime.date(2026, 1, 31)
    assert got["ratio"] == 1.0 and isinstance(got["ratio"], float)


DEFAULT_TAGS = ["a"]


def test_invoke_passes_only_what_was_sent_so_function_defaults_apply():
    @tool
    def f(city: str, tags: list[str] = DEFAULT_TAGS) -> list:  # a shared default on purpose
        return tags
    # the function's own default object arrives, not a copy made by validation
    assert f.invoke({"city": "x"}) is DEFAULT_TAGS
    assert f.invoke({"city": "x", "tags": ["b"]}) == ["b"]


def test_invoke_never_coerces_a_number_string():
    @tool
    def f(days: int) -> int:
        return days
    with pytest.raises(ValidationError):
        f.invoke({"days": "5"})


def test_invoke_accepts_an_integral_float_for_an_integer_as_json_schema_does():
    @tool
    def f(days: int) -> int:
        return days
    assert f.invoke({"days": 5.0}) == 5 and isinstance(f.invoke({"days": 5.0}), int)
    with pytest.raises(ValidationError):
        f.invoke({"days": 5.5})


def test_invoke_from_python_accepts_python_values():
    @tool
    def f(color: Color, when: datetime.date) -> tuple:
        return color, when
    assert f.invoke({"color": Color.red, "when": datetime.date(2026, 1, 1)}) == (Color.red,
                                                                                 datetime.date(2026, 1, 1))


def test_async_tool_invoke_returns_a_coroutine_the_executor_awaits():
    @tool
    async def slow(city: str) -> str:
        await asyncio.sleep(0)
        return city.upper()
    assert slow.is_async
    pending = slow.invoke({"city": "paris"}, None)
    assert asyncio.iscoroutine(pending)
    assert asyncio.run(pending) == "PARIS"


def test_strict_tool_treats_null_as_use_the_default():
    @tool(strict=True)
    def f(city: str, days: int = 3, note: str | None = "keep") -> tuple:
        return days, note
    assert f.parameters["required"] == ["city", "days", "note"]
    assert f.parameters["properties"]["days"]["type"] == ["integer", "null"]
    assert strict_problems(f.parameters) == []
    # days cannot be None in Python, so null means "default"; note can be None, so null stays None
    assert f.invoke({"city": "x", "days": None, "note": None}) == (3, None)


def test_from_schema_passes_json_through_and_keeps_its_own_copy():
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    echo = Tool.from_schema("echo", "Say it back", schema, lambda text: text * 2)
    schema["properties"]["text"]["type"] = "integer"
    assert echo.parameters["properties"]["text"] == {"type": "string"}
    assert echo.invoke({"text": "ab"}) == "abab"
    assert not echo.is_async and echo.context_param is None


def test_from_schema_with_context_param_and_async_fn():
    async def call(ctx: ToolContext, **arguments):
        return ctx.call_id, arguments
    t = Tool.from_schema("remote", "", {"type": "object", "properties": {}}, call, context_param="ctx")
    assert t.is_async
    assert asyncio.run(t.invoke({"a": 1}, ToolContext("c9", "remote"))) == ("c9", {"a": 1})


def test_from_schema_refuses_a_non_object_schema():
    with pytest.raises(ToolDefinitionError, match="object schema"):
        Tool.from_schema("bad", "", {"type": "string"}, print)


# ---------------------------------------------------------------------------------------------------------
# Return values
# ---------------------------------------------------------------------------------------------------------

def test_update_without_message_is_an_error_naming_the_tool():
    @tool
    def remember_city(city: str) -> Update:
        return Update(state={"city": city})
    with pytest.raises(ToolReturnError, match="remember_city") as info:
        remember_city.check_return(remember_city.invoke({"city": "Osaka"}))
    assert "without its result message; every tool call needs exactly one result" in str(info.value)
    assert info.value.tool_name == "remember_city"


def test_update_with_message_splits_into_result_and_state():
    @tool
    def remember_city(city: str) -> Update:
        return Update(state={"city": city}, message={"remembered": city})
    value = remember_city.invoke({"city": "Osaka"})
    assert remember_city.check_return(value) is value
    assert remember_city.split_return(value) == ({"remembered": "Osaka"}, {"city": "Osaka"})
    assert remember_city.split_return("plain") == ("plain", None)


def test_update_state_must_be_a_mapping():
    def f(x: int): ...
    t = tool(f)
    with pytest.raises(ToolReturnError, match="state must be a mapping"):
        t.check_return(Update(state=[1, 2], message="ok"))  # type: ignore[arg-type]


@dataclasses.dataclass
class Forecast:
    city: str
    colors: set
    when: datetime.date


def test_to_jsonable_turns_rich_values_into_plain_json():
    def f(x: int): ...
    t = tool(f)
    forecast = Forecast("Oslo", {"b", "a", "c"}, datetime.date(2026, 1, 2))
    value = {"model": Address(city="Paris"), "forecast": forecast, "color": Color.blue, "tuple": (1, 2),
             "nums": {3, 1, 2}, 7: None}
    out = t.to_jsonable(value)
    assert out == {"model": {"city": "Paris", "zip": 0},
                   "forecast": {"city": "Oslo", "colors": ["a", "b", "c"], "when": "2026-01-02"},
                   "color": "blue", "tuple": [1, 2], "nums": [1, 2, 3], "7": None}
    assert json.loads(json.dumps(out)) == out


@pytest.mark.parametrize("make, type_name", [
    (lambda: open(__file__), "TextIOWrapper"),  # noqa: SIM115 - an open file is the point
    (lambda: (lambda x: x), "function"),
    (lambda: {"inner": [object()]}, "object"),
    (lambda: b"raw bytes", "bytes")])
def test_unserialisable_return_names_the_tool_and_the_type(make, type_name):
    def fetch(x: int): ...
    t = tool(fetch)
    value = make()
    try:
        with pytest.raises(ToolReturnError, match=rf"tool 'fetch'.*{type_name}"):
            t.to_jsonable(value)
    finally:
        if hasattr(value, "close"):
            value.close()


def test_nan_and_self_containing_values_are_refused():
    def f(x: int): ...
    t = tool(f)
    with pytest.raises(ToolReturnError, match="JSON cannot carry"):
        t.to_jsonable({"x": float("nan")})
    loop: list = []
    loop.append(loop)
    with pytest.raises(ToolReturnError, match="contains itself"):
        t.to_jsonable(loop)


def test_unawaited_coroutine_return_gets_a_hint():
    async def inner():
        return 1

    def f(x: int): ...
    t = tool(f)
    coroutine = inner()
    try:
        with pytest.raises(ToolReturnError, match="never awaited"):
            t.to_jsonable(coroutine)
    finally:
        coroutine.close()


# ---------------------------------------------------------------------------------------------------------
# Rules and the import budget
# ---------------------------------------------------------------------------------------------------------

def test_with_rules_returns_a_copy_with_more_rules():
    def no_mars(args: dict) -> str | None:
        return "no weather on Mars" if args.get("city") == "Mars" else None

    def f(city: str): ...
    base = tool(f, rules=[no_mars])
    more = base.with_rules(lambda args: None)
    assert base.rules == (no_mars,) and len(more.rules) == 2
    assert more.parameters is base.parameters and more.name == base.name


def test_rule_violation_carries_message_and_path():
    exc = RuleViolation("endDate is before startDate", "$.endDate")
    assert (exc.message, exc.path, str(exc)) == ("endDate is before startDate", "$.endDate",
                                                  "endDate is before startDate")


def test_importing_tools_does_not_import_jsonschema():
    code = "import sys, agentkit.core.tools; print('jsonschema' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- the meta-schema check's fast path agrees with python-jsonschema --------------------------------------

_PATTERNS = st.sampled_from(["[a-z]+", "^x$", "(", "a{2,1}", "\\d", "[", "ok"])
_LEAF_SCHEMA = st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["string", "integer", "object", "array", "nope", ["string", "null"], 3]),
    "pattern": _PATTERNS,
    "minimum": st.one_of(st.integers(-2, 2), st.just("x")),
    "enum": st.lists(st.sampled_from(["a", "b", 1]), max_size=3),
    "format": st.sampled_from(["date", "email", 7]),
    "required": st.one_of(st.lists(st.sampled_from(["a", "b"]), max_size=2), st.just("a")),
})
_SCHEMA = st.recursive(_LEAF_SCHEMA, lambda inner: st.one_of(
    st.tuples(_LEAF_SCHEMA, st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2)).map(
        lambda pair: {**pair[0], "properties": pair[1]}),
    st.tuples(_LEAF_SCHEMA, st.dictionaries(_PATTERNS, inner, max_size=2)).map(
        lambda pair: {**pair[0], "patternProperties": pair[1]}),
    st.tuples(_LEAF_SCHEMA, inner).map(lambda pair: {**pair[0], "items": pair[1]}),
    st.tuples(_LEAF_SCHEMA, st.lists(inner, min_size=1, max_size=2)).map(lambda pair: {**pair[0], "anyOf": pair[1]}),
), max_leaves=8)


@settings(max_examples=examples(1000), deadline=None)
@given(_SCHEMA)
def test_the_fast_meta_schema_check_refuses_exactly_what_python_jsonschema_refuses(schema):
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    from agentkit.core.schema_check import meta_schema_error

    try:
        Draft202012Validator.check_schema(schema)
        expected = None
    except SchemaError as exc:
        expected = exc.message
    error = meta_schema_error(schema)
    assert (error.message if error is not None else None) == expected
