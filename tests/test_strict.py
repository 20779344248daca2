"""agentkit.core.strict: the strict-mode linter names every finding; the rewrite leaves none, is idempotent,
and keeps a valid schema that accepts null for what was optional."""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from profiles import examples

from agentkit.core.strict import strict_problems, to_strict
from agentkit.core.validate import schema_gate

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
