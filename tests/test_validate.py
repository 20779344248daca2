"""The three gates, the envelope, and the fast validator agreeing with the one that explains."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples
from pydantic import BaseModel

from agentkit.core import validate as V
from agentkit.core.errors import ToolDefinitionError
from agentkit.core.tools import RuleViolation, Tool, tool
from agentkit.core.types import ToolCall
from agentkit.core.validate import (
    ArgumentError,
    GateResult,
    date_order,
    error_result,
    parse_gate,
    schema_gate,
    validate_arguments,
    validator_for,
)
from agentkit.fixtures import load_fixtures

FIXTURES = load_fixtures()


class Line(BaseModel):
    sku: str
    qty: int


@tool
def place_order(customer: str, items: list[Line], note: str | None = None) -> dict:
    """Place an order."""
    return {"ok": True}


def weather_tool(**flags) -> Tool:
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
              "required": ["city"], "additionalProperties": False}
    return Tool.from_schema("get_weather", "Current weather", schema, lambda city, days=1: city, **flags)


def no_args_tool() -> Tool:
    return Tool.from_schema("ping", "", {"type": "object", "properties": {}}, lambda: "pong")




# ---------------------------------------------------------------------------------------------------------
# Gate 1: parse
# ---------------------------------------------------------------------------------------------------------

def test_bad_json_reports_line_column_and_char():
    result = validate_arguments(weather_tool(), '{\n  "city": "Paris",\n}')
    assert (result.gate, result.first.kind) == ("parse", "bad_json")
    assert "line 3, column 1, char 21" in result.first.message


@pytest.mark.parametrize("raw, shown", [("[1]", "an array"), ('"x"', "a string"), ("5", "an integer"),
                                        ("null", "a null"), (["city"], "an array")])
def test_non_objects_are_not_object(raw, shown):
    result = validate_arguments(weather_tool(), raw)
    assert (result.gate, result.first.kind) == ("parse", "not_object")
    assert shown in result.first.message


def test_arguments_encoded_twice_are_named_as_such():
    result = validate_arguments(weather_tool(), json.dumps(json.dumps({"city": "Paris"})))
    assert result.first.kind == "not_object" and "encoded twice" in result.first.message


@pytest.mark.parametrize("raw", ["", "   ", None])
def test_empty_arguments_mean_no_arguments_only_when_nothing_is_required(raw):
    assert validate_arguments(no_args_tool(), raw) == GateResult(True, {})
    refused = validate_arguments(weather_tool(), raw)
    assert (refused.gate, refused.first.kind) == ("parse", "bad_json")
    assert "empty" in refused.first.message and "city" in refused.first.message


def test_nan_is_not_json():
    assert validate_arguments(weather_tool(), '{"city": "x", "days": NaN}').first.kind == "bad_json"


def test_ten_megabytes_are_refused_unread(monkeypatch):
    text = json.dumps({"city": "x" * 10_000_000})

    def never(*args, **kwargs):
        raise AssertionError("the ten megabytes were parsed")

    monkeypatch.setattr(json, "loads", never)  # the gate must refuse before it reads
    result = validate_arguments(weather_tool(), text)
    assert (result.gate, result.first.kind, result.arguments) == ("parse", "too_large", None)


class Measured(str):
    """A string that counts how often its length is asked for: how much of an object the gate walked."""

    seen = 0

    def __len__(self):
        Measured.seen += 1
        return super().__len__()


def test_ten_megabyte_object_is_refused_at_the_first_megabyte():
    Measured.seen = 0
    arguments = {"city": "Paris", "blob": [Measured("y" * 1000) for _ in range(10_000)]}
    result = validate_arguments(weather_tool(), arguments)
    assert result.first.kind == "too_large"
    assert Measured.seen <= 1_100  # stopped soon after one megabyte, not after walking all ten


def test_size_limit_is_configurable():
    assert validate_arguments(weather_tool(), '{"city": "Paris"}', max_bytes=10).first.kind == "too_large"
    assert validate_arguments(weather_tool(), '{"city": "Paris"}', max_bytes=100).ok


def nested(depth: int) -> dict:
    node: dict = {}
    for _ in range(depth):
        node = {"a": node}
    return node


@pytest.mark.parametrize("depth", [65, 900, 10_000, 100_000])
def test_deep_nesting_is_too_deep_never_a_recursion_error(depth):
    as_text = '{"city": "x", "deep": ' + "[" * depth + "]" * depth + "}"
    as_object = {"city": "x", "deep": nested(depth)}
    for raw in (as_text, as_object):
        result = validate_arguments(weather_tool(), raw)
        assert (result.gate, result.first.kind) == ("parse", "too_deep")


def test_depth_within_the_limit_passes_to_the_schema_gate():
    tool_ = Tool.from_schema("deep", "", {"type": "object"}, lambda **kw: None)
    assert validate_arguments(tool_, nested(63)).ok
    assert validate_arguments(tool_, nested(64)).first.kind == "too_deep"


@settings(max_examples=examples(200), suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_any_text_gives_a_result_never_an_exception(text):
    result = validate_arguments(weather_tool(), text)
    assert isinstance(result, GateResult)
    assert result.ok or result.errors


json_scalars = (st.none() | st.booleans() | st.integers() | st.text()
                | st.floats(allow_nan=False, allow_infinity=False))
json_values = st.recursive(
    json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=20)


@settings(max_examples=examples(200))
@given(st.dictionaries(st.text(), json_values, max_size=5))
def test_any_json_object_parses_to_itself(obj):
    assert parse_gate(json.dumps(obj)).arguments == obj
    assert parse_gate(obj).arguments is obj


# ---------------------------------------------------------------------------------------------------------
# Gate 2: schema
# ---------------------------------------------------------------------------------------------------------

def test_every_error_is_reported_sorted_with_json_paths_and_keywords():
    result = validate_arguments(place_order, {"items": [{"sku": "a", "qty": "2"}, {"qty": 1}],
                                              "bogus": 1, "note": 5})
    assert result.gate == "schema" and result.arguments is not None
    assert [(e.path, e.keyword) for e in result.errors] == [
        ("$.bogus", "additionalProperties"), ("$.customer", "required"), ("$.items[0].qty", "type"),
        ("$.items[1].sku", "required"), ("$.note", "anyOf")]
    assert all(e.kind == "schema" for e in result.errors)


def test_numbers_as_strings_are_type_errors_with_a_hint_never_coerced():
    result = validate_arguments(weather_tool(), {"city": "Paris", "days": "5"})
    assert result.first == ArgumentError("schema", "'5' is a string; the schema wants an integer "
                                                   "(send 5 without quotes)", "$.days", "type")
    nullable = validate_arguments(place_order, {"customer": "c", "items": [], "note": 5})
    assert nullable.first.message == "5 is an integer; the schema wants a string or null"


def test_missing_required_field_path_names_the_field():
    result = validate_arguments(weather_tool(), {})
    assert (result.first.path, result.first.keyword) == ("$.city", "required")
    assert result.first.message == "missing required property 'city'"


def test_errors_inside_an_optional_model_point_into_it():
    class Address(BaseModel):
        city: str
        zip: int

    def ship(address: Address | None = None): ...
    ship.__annotations__ = {"address": Address | None}
    result = validate_arguments(tool(ship), {"address": {"city": 5}})
    assert [(e.path, e.keyword) for e in result.errors] == [("$.address.city", "type"),
                                                           ("$.address.zip", "required")]


def test_odd_property_names_are_quoted_in_paths():
    t = Tool.from_schema("t", "", {"type": "object", "properties": {"first name": {"type": "string"}}},
                         lambda **kw: None)
    assert validate_arguments(t, {"first name": 1}).first.path == '$["first name"]'


def test_error_count_is_capped_with_a_note():
    t = Tool.from_schema("t", "", {"type": "object", "properties": {"xs": {"type": "array",
                                   "items": {"type": "integer"}}}}, lambda **kw: None)
    result = validate_arguments(t, {"xs": ["a"] * 500}, max_errors=5)
    assert len(result.errors) == 6 and "more errors" in result.errors[-1].message


def test_validator_is_compiled_once_per_schema(monkeypatch):
    compiled = []
    real = V._compile
    monkeypatch.setattr(V, "_compile", lambda schema, name: compiled.append(name) or real(schema, name))
    weather = weather_tool()
    for raw in ('{"city": "a"}', '{"city": 1}', {"city": "b"}, '{}'):
        validate_arguments(weather, raw)
    assert compiled == ["get_weather"]
    assert validator_for(weather.parameters) is validator_for(weather.parameters)
    # a copy of the tool with more rules shares the schema object, so the validator too
    validate_arguments(weather.with_rules(lambda a: None), '{"city": "c"}')
    assert compiled == ["get_weather"]
    validate_arguments(weather_tool(), '{"city": "d"}')  # a new schema object: compiled once more
    assert compiled == ["get_weather", "get_weather"]


def test_cache_evicts_least_recently_used():
    cache = V.ValidatorCache(maxsize=2)
    a, b, c = ({"type": "object", "title": t} for t in "abc")
    for schema in (a, b, a, c, a):
        cache.get(schema)
    assert cache.compiled == 3  # a stayed (recently used), b was evicted for c


def test_an_invalid_schema_is_a_definition_error_naming_the_tool():
    # A Tool refuses it when it is defined (tests/test_tools.py); anything else with `.parameters` that
    # reaches the gates gets the same typed error, never jsonschema's own exception.
    broken = SimpleNamespace(name="broken", parameters={"type": "object", "properties": {"x": {"type": "strng"}}})
    with pytest.raises(ToolDefinitionError, match="tool 'broken'.*not valid JSON Schema"):
        validate_arguments(broken, {"x": 1})


def test_a_dangling_ref_at_the_gates_is_a_definition_error_not_a_jsonschema_internal():
    dangling = SimpleNamespace(name="dangling", parameters={
        "type": "object", "properties": {"x": {"$ref": "#/$defs/Missing"}}})
    with pytest.raises(ToolDefinitionError, match="tool 'dangling'.*points nowhere.*defs/Missing"):
        validate_arguments(dangling, {"x": 1})


def test_schema_gate_can_be_used_alone():
    assert schema_gate({"type": "object", "required": ["a"]}, {"a": 1}).ok
    assert schema_gate({"type": "object", "required": ["a"]}, {}).first.path == "$.a"


# ---------------------------------------------------------------------------------------------------------
# Gate 3: rules
# ---------------------------------------------------------------------------------------------------------

def no_mars(args: dict) -> str | None:
    return "no weather on Mars" if args["city"] == "Mars" else None


def short_forecast(args: dict) -> None:
    if args.get("days", 1) > 7:
        raise RuleViolation("at most 7 days", "days")


def test_rules_run_after_the_schema_and_report_every_refusal():
    weather = weather_tool(rules=[no_mars, short_forecast])
    result = validate_arguments(weather, {"city": "Mars", "days": 9})
    assert result.gate == "rules"
    assert [(e.kind, e.keyword, e.path, e.message) for e in result.errors] == [
        ("rule", "no_mars", None, "no weather on Mars"),
        ("rule", "short_forecast", "$.days", "at most 7 days")]
    assert validate_arguments(weather, {"city": "Paris", "days": 2}).ok


def test_rules_do_not_run_when_the_schema_fails():
    calls = []
    weather = weather_tool(rules=[lambda args: calls.append(args)])
    assert validate_arguments(weather, {"city": 5}).gate == "schema"
    assert calls == []


def test_a_rule_returning_something_odd_is_a_bug_not_a_refusal():
    with pytest.raises(TypeError, match="returns None or a message"):
        validate_arguments(weather_tool(rules=[lambda args: False]), {"city": "x"})


def test_date_order_rule():
    rule = date_order("startDate", "endDate")
    assert rule({"startDate": "2026-01-01", "endDate": "2026-01-31"}) is None
    with pytest.raises(RuleViolation) as info:
        rule({"startDate": "2026-02-01", "endDate": "2026-01-31"})
    assert info.value.path == "$.endDate"


# ---------------------------------------------------------------------------------------------------------
# The envelope
# ---------------------------------------------------------------------------------------------------------

def test_error_result_is_the_stable_envelope():
    call = ToolCall.from_raw("call_8f3a", "searchInvoices", FIXTURES["wrong_enum"].raw)
    gate = validate_arguments(FIXTURES.tools["searchInvoices"], call.raw_arguments)
    envelope = error_result(call, gate).envelope()
    assert envelope == {"toolCallId": "call_8f3a", "name": "searchInvoices", "ok": False,
                        "error": {"kind": "schema", "message": gate.first.message, "path": "$.status",
                                  "keyword": "enum"}}


def test_error_result_lists_every_problem_in_its_message():
    call = ToolCall.from_raw("c1", "place_order", "{}")
    result = error_result(call, validate_arguments(place_order, call.raw_arguments))
    assert result.error["message"].startswith("2 problems: $.customer: missing required property")
    assert "$.items" in result.error["message"]


def test_error_result_refuses_a_passing_gate():
    with pytest.raises(ValueError):
        error_result(ToolCall.from_raw("c", "t", "{}"), GateResult(True, {}))


# -- the fast path agrees with the validator that explains ---------------------------------------------

AGREEMENT_SCHEMAS = [
    {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
     "required": ["city"], "additionalProperties": False},
    {"type": "object", "properties": {"startDate": {"type": "string", "format": "date"},
                                      "endDate": {"type": "string", "format": "date"},
                                      "status": {"type": "string", "enum": ["draft", "sent", "paid", "void"]}},
     "required": ["startDate", "endDate", "status"], "additionalProperties": False},
    {"type": "object", "$defs": {"Item": {"type": "object", "properties": {"sku": {"type": "string"},
                                                                           "qty": {"type": "integer"}},
                                          "required": ["sku"]}},
     "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
                    "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
     "required": ["items"]},
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["2026-01-31", "2026-02-30", "01/31/2026", "paid", "unpaid", "5", ""]) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(["city", "days", "startDate", "endDate", "status", "items", "sku", "qty", "note", "x"]),
        children, max_size=4),
    max_leaves=12)


@settings(max_examples=examples(600), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=st.sampled_from(AGREEMENT_SCHEMAS), instance=st.dictionaries(
    st.sampled_from(["city", "days", "startDate", "endDate", "status", "items", "note", "x"]), json_values,
    max_size=4))
def test_fast_yes_no_agrees_with_the_explaining_validator(schema, instance):
    from agentkit.core.validate import VALIDATORS

    validator, fast = VALIDATORS.pair(schema)
    assert fast is not None, "jsonschema-rs is a core dependency: the fast path must be available"
    assert fast.is_valid(instance) == validator.is_valid(instance), instance


def test_every_fixture_gets_the_same_verdict_from_both_validators():
    from agentkit.core.validate import VALIDATORS

    for fixture in FIXTURES:
        parsed = parse_gate(fixture.raw)
        if not parsed.ok:
            continue
        validator, fast = VALIDATORS.pair(FIXTURES.tools[fixture.tool].parameters)
        assert fast.is_valid(parsed.arguments) == validator.is_valid(parsed.arguments), fixture.name


def test_without_the_fast_validator_the_gates_give_the_same_results(monkeypatch):
    # A prototype that copies validate.py without jsonschema-rs still works: only slower.
    from agentkit.core.validate import VALIDATORS

    expected = {f.name: validate_arguments(FIXTURES.tools[f.tool], f.raw) for f in FIXTURES}
    monkeypatch.setattr(V, "_compile_fast", lambda schema: None)
    VALIDATORS.clear()
    try:
        assert {f.name: validate_arguments(FIXTURES.tools[f.tool], f.raw) for f in FIXTURES} == expected
    finally:
        VALIDATORS.clear()


# -- gate 1 reads JSON exactly as json.loads does (it skips json's whitespace scans for speed) ------------

json_bits = st.sampled_from([" ", "\t", "\n", "\r", "{", "}", "[", "]", '"a"', ":", ",", "1", "-", ".", "e", "true",
                             "null", "NaN", "x", "\u00a0", '"\\u00e9"', '""'])


@settings(max_examples=examples(2000), deadline=None)
@given(text=st.lists(json_bits, min_size=1, max_size=12).map("".join))
def test_the_parse_gate_reads_text_exactly_as_json_loads(text):
    result = parse_gate(text)
    try:
        expected = json.loads(text)
    except ValueError as exc:
        if text.strip():
            assert not result.ok and result.first.kind in ("bad_json", "not_object")
            if isinstance(exc, json.JSONDecodeError) and "NaN" not in text:
                assert exc.msg in result.first.message and f"char {exc.pos}" in result.first.message
        return
    if isinstance(expected, dict):
        assert result.ok and result.arguments == expected
    else:
        assert not result.ok and result.first.kind in ("not_object", "bad_json")
