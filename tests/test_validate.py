"""The three gates, the envelope, strict-mode lint and the shared argument fixtures."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from agentkit import validate as V
from agentkit.errors import ToolDefinitionError
from agentkit.tools import RuleViolation, Tool, tool
from agentkit.types import ToolCall
from agentkit.validate import (
    ArgumentError,
    GateResult,
    date_order,
    error_result,
    load_fixtures,
    parse_gate,
    sanitize_error_text,
    schema_gate,
    strict_problems,
    to_strict,
    validate_arguments,
    validator_for,
)

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
# Fixtures: every case through the gates, as text (OpenAI) and as an object (Anthropic/Gemini/MCP)
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", FIXTURES.cases, ids=[c.name for c in FIXTURES.cases])
def test_fixture_gives_the_expected_gate_kind_keyword_and_path(case):
    forms = [case.raw] + ([case.arguments] if isinstance(case.arguments, dict) else [])
    for raw in forms:
        result = validate_arguments(FIXTURES.tools[case.tool], raw)
        assert result.ok is case.ok
        assert result.gate == case.gate
        if case.ok:
            assert result.errors == () and result.arguments == case.arguments
        else:
            first = result.first
            assert (first.kind, first.keyword, first.path) == (case.kind, case.keyword, case.path)


def test_fixture_index_covers_the_required_files():
    names = {c.file for c in FIXTURES}
    assert {"valid.json", "missing_field.json", "wrong_enum.json", "wrong_type.json",
            "numbers_as_strings.json", "bad_json.txt", "extra_property.json"} <= names
    assert FIXTURES["valid"].tool == "searchInvoices"


def test_fixture_tools_run_and_answer_with_their_example_result():
    search = FIXTURES.tools["searchInvoices"]
    assert search.strict and strict_problems(search.parameters) == []
    assert search.invoke(FIXTURES["valid"].arguments)["count"] == 2


def test_seed_strict_schema_is_already_strict():
    seed = json.loads((FIXTURES.root / "tools.json").read_text())["searchInvoices"]["parameters"]
    assert strict_problems(seed) == [] and to_strict(seed) == seed


def test_load_fixtures_from_a_missing_place_says_where_to_look(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="fixtures.json"):
        load_fixtures(tmp_path)


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


def test_invalid_schema_is_a_definition_error_naming_the_tool():
    broken = Tool.from_schema("broken", "", {"type": "object", "properties": {"x": {"type": "strng"}}},
                              lambda **kw: None)
    with pytest.raises(ToolDefinitionError, match="tool 'broken'.*not valid JSON Schema"):
        validate_arguments(broken, {"x": 1})


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


# ---------------------------------------------------------------------------------------------------------
# Sanitising error text
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, gone, kept", [
    ("could not connect to db-7.prod.internal:5432", ["db-7", "5432"], ["could not connect to <host>"]),
    ("query failed: SELECT * FROM users WHERE id = 7", ["users", "SELECT"], ["query failed: <sql>"]),
    ("GET https://api.example.com/v1/x?token=abc failed: 503", ["example", "token"], ["<url>", "503"]),
    ("cannot open /var/lib/app/secrets.yaml", ["secrets"], ["cannot open <path>"]),
    ("cannot open C:\\Users\\bob\\key.txt", ["bob"], ["<path>"]),
    ("peer 10.0.3.7:8080 and fe80::1ff:fe23:4567:890a reset", ["10.0.3.7", "fe80"], ["<ip>"]),
    ("mail ops@example.com", ["ops@"], ["<email>"]),
    ("redis:6379 refused", ["redis"], ["<host> refused"]),
    ("upstream 503 at 12:30:45", [], ["upstream 503 at 12:30:45"]),
])
def test_sanitize_removes_infrastructure_details(text, gone, kept):
    out = sanitize_error_text(text)
    for word in gone:
        assert word not in out
    for word in kept:
        assert word in out


def test_sanitize_drops_stack_traces_and_keeps_the_exception_line():
    text = ('Traceback (most recent call last):\n  File "/srv/app/db.py", line 12, in query\n'
            '    cur.execute(sql)\npsycopg.OperationalError: server at "10.0.3.7" refused')
    assert sanitize_error_text(text) == 'psycopg.OperationalError: server at "<ip>" refused'


def test_sanitize_keeps_text_short():
    assert len(sanitize_error_text("x" * 5000)) == 300
    assert len(sanitize_error_text("x" * 5000, max_length=50)) == 50


# ---------------------------------------------------------------------------------------------------------
# Strict mode
# ---------------------------------------------------------------------------------------------------------

LOOSE = {"type": "object",
         "properties": {"city": {"type": "string", "minLength": 1},
                        "days": {"type": "integer", "default": 1},
                        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                        "address": {"$ref": "#/$defs/Address", "description": "where"},
                        "kind": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
         "required": ["city"],
         "$defs": {"Address": {"type": "object", "properties": {"street": {"type": "string"}}}}}


def test_strict_problems_names_every_finding():
    problems = strict_problems(LOOSE)
    expected = ["#: additionalProperties must be false",
                "#: 'days' must be listed in required",
                "#/properties/city: 'minLength' is not supported",
                "#/properties/days: 'default' is not supported",
                "#/properties/tags: 'uniqueItems' is not supported",
                "#/properties/address: '$ref' with sibling keywords (description) must be inlined",
                "#/properties/kind: 'oneOf' is not supported",
                "#/$defs/Address: additionalProperties must be false",
                "#/$defs/Address: 'street' must be listed in required"]
    for fragment in expected:
        assert any(p.startswith(fragment) for p in problems), fragment
    assert len(problems) == 12  # + tags, address and kind missing from required


def test_to_strict_rewrites_the_loose_schema():
    strict = to_strict(LOOSE)
    assert strict["required"] == ["city", "days", "tags", "address", "kind"]
    assert strict["additionalProperties"] is False
    assert strict["properties"]["city"] == {"type": "string", "description": "(minLength=1)"}
    assert strict["properties"]["days"] == {"type": ["integer", "null"], "description": "(default=1)"}
    assert strict["properties"]["address"] == {
        "type": ["object", "null"], "properties": {"street": {"type": ["string", "null"]}},
        "description": "where", "required": ["street"], "additionalProperties": False}
    assert strict["properties"]["kind"] == {"anyOf": [{"type": "string"}, {"type": "integer"},
                                                      {"type": "null"}]}
    assert strict_problems(strict) == []
    assert LOOSE["properties"]["days"] == {"type": "integer", "default": 1}  # input untouched


def test_strict_schema_accepts_null_for_what_was_optional():
    strict = to_strict(LOOSE)
    args = {"city": "Paris", "days": None, "tags": None, "address": None, "kind": None}
    assert schema_gate(strict, args).ok
    assert not schema_gate(strict, {"city": "Paris"}).ok  # but every field must be present


names = st.text("abcdefgh", min_size=1, max_size=4)


def leaf_schemas() -> st.SearchStrategy[dict]:
    plain = st.sampled_from([{"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"},
                             {"type": "null"}, {"type": "string", "format": "date"},
                             {"type": "string", "format": "uri"}, {"type": "string", "minLength": 2},
                             {"type": "integer", "minimum": 0, "default": 3}, {"enum": ["a", "b"]},
                             {"type": "string", "enum": ["x", "y"], "default": "x"}, {"const": "k"},
                             {"type": ["string", "null"]}, {"$ref": "#/$defs/Leaf"},
                             {"$ref": "#/$defs/Leaf", "description": "a leaf"},
                             {"$ref": "#/$defs/Leaf", "default": None}, {}])
    described = st.tuples(plain, st.booleans()).map(
        lambda pair: {**pair[0], "description": "d"} if pair[1] and "description" not in pair[0] else pair[0])
    return described


def object_of(children: st.SearchStrategy[dict]) -> st.SearchStrategy[dict]:
    @st.composite
    def build(draw):
        props = draw(st.dictionaries(names, children, max_size=4))
        node: dict = {"type": "object", "properties": props}
        if props:
            node["required"] = draw(st.lists(st.sampled_from(sorted(props)), unique=True))
        extra = draw(st.sampled_from(["absent", True, False, {"type": "string"}]))
        if extra != "absent":
            node["additionalProperties"] = extra
        if draw(st.booleans()):
            node["minProperties"] = 1
        return node
    return build()


def containers(children: st.SearchStrategy[dict]) -> st.SearchStrategy[dict]:
    return st.one_of(
        object_of(children),
        st.builds(lambda items, unique: {"type": "array", "items": items, "uniqueItems": unique},
                  children, st.booleans()),
        st.lists(children, min_size=1, max_size=3).map(lambda xs: {"anyOf": xs}),
        st.lists(children, min_size=1, max_size=3).map(lambda xs: {"oneOf": xs}),
        st.lists(object_of(children), min_size=1, max_size=2).map(lambda xs: {"allOf": xs}),
        children.map(lambda x: {"type": "object", "not": x}),
    )


schemas = st.recursive(leaf_schemas(), containers, max_leaves=12)


@st.composite
def root_schemas(draw) -> dict:
    root = draw(object_of(schemas))
    root["$defs"] = {"Leaf": draw(object_of(leaf_schemas()))}
    return root


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(root_schemas())
def test_to_strict_is_idempotent_and_leaves_no_problems(schema):
    before = copy.deepcopy(schema)
    strict = to_strict(schema)
    assert schema == before                     # the input is not changed
    assert to_strict(strict) == strict          # idempotent
    assert strict_problems(strict) == []        # and really strict
    Draft202012Validator.check_schema(strict)   # and still a valid schema


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(root_schemas())
def test_strict_problems_is_empty_only_for_strict_schemas(schema):
    if strict_problems(schema) == []:
        assert to_strict(schema) == schema


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
    from agentkit.validate import VALIDATORS

    validator, fast = VALIDATORS.pair(schema)
    assert fast is not None, "jsonschema-rs is a core dependency: the fast path must be available"
    assert fast.is_valid(instance) == validator.is_valid(instance), instance


def test_every_fixture_gets_the_same_verdict_from_both_validators():
    from agentkit.validate import VALIDATORS

    for fixture in FIXTURES:
        parsed = parse_gate(fixture.raw)
        if not parsed.ok:
            continue
        validator, fast = VALIDATORS.pair(FIXTURES.tools[fixture.tool].parameters)
        assert fast.is_valid(parsed.arguments) == validator.is_valid(parsed.arguments), fixture.name


def test_without_the_fast_validator_the_gates_give_the_same_results(monkeypatch):
    # A prototype that copies validate.py without jsonschema-rs still works: only slower.
    from agentkit.validate import VALIDATORS

    expected = {f.name: validate_arguments(FIXTURES.tools[f.tool], f.raw) for f in FIXTURES}
    monkeypatch.setattr(V, "_compile_fast", lambda schema: None)
    VALIDATORS.clear()
    try:
        assert {f.name: validate_arguments(FIXTURES.tools[f.tool], f.raw) for f in FIXTURES} == expected
    finally:
        VALIDATORS.clear()
