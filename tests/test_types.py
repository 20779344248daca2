"""agentkit.core.types: the vocabulary round-trips through JSON, stays frozen, and shapes the envelope exactly."""

from __future__ import annotations

import dataclasses
import datetime
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from profiles import examples

from agentkit.core.types import (
    Message,
    ModelOptions,
    ModelTurn,
    ReasoningState,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    parse_arguments,
    same_model,
)

# -- strategies -------------------------------------------------------------------------------------------

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**53, 2**53),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
json_values = st.recursive(json_scalars,
                           lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                   st.dictionaries(st.text(max_size=6), inner, max_size=4)),
                           max_leaves=12)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=4)
maybe_text = st.one_of(st.none(), st.text(max_size=20))

usages = st.builds(Usage, st.integers(0, 10**9), st.integers(0, 10**9))
tool_calls = st.builds(ToolCall, st.text(max_size=12), st.text(max_size=12),
                       st.one_of(st.text(max_size=30), json_objects), st.one_of(st.none(), json_objects))
# an empty `parameters` dict has its own test below
tool_specs = st.builds(ToolSpec, st.text(max_size=12), st.text(max_size=30),
                       st.builds(lambda props: {"type": "object", "properties": props},
                                 st.dictionaries(st.text(max_size=6), st.just({"type": "string"}),
                                                 max_size=3)),
                       st.booleans())
errors = st.one_of(st.none(), st.fixed_dictionaries(
    {"kind": st.text(max_size=10), "message": st.text(max_size=20), "path": maybe_text,
     "keyword": maybe_text}))
tool_results = st.builds(ToolResult, st.text(max_size=12), st.text(max_size=12), st.booleans(), json_values,
                         errors, maybe_text)
reasoning_states = st.one_of(st.none(), st.builds(ReasoningState, st.sampled_from(["anthropic", "gemini"]), maybe_text,
                                                  st.lists(json_objects, max_size=3).map(tuple)))
messages = st.builds(Message, st.sampled_from(["system", "user", "assistant", "tool"]), maybe_text,
                     st.lists(tool_calls, max_size=3).map(tuple), maybe_text, maybe_text, st.booleans(),
                     reasoning_states)
model_turns = st.builds(ModelTurn, maybe_text, st.lists(tool_calls, max_size=3).map(tuple),
                        st.sampled_from(["tool_calls", "stop", "length", "content_filter", "other"]),
                        maybe_text, usages, maybe_text, maybe_text, st.one_of(st.none(), json_objects),
                        reasoning_states)
model_options = st.builds(ModelOptions,
                          st.one_of(st.sampled_from(["auto", "none", "required"]),
                                    st.builds(lambda n: {"name": n}, st.text(max_size=8))),
                          st.one_of(st.none(), st.booleans()), st.booleans(),
                          st.one_of(st.none(), st.integers(1, 10**6)),
                          st.one_of(st.none(), st.floats(0, 2)))


def through_json(obj):
    return type(obj).from_dict(json.loads(json.dumps(obj.to_dict())))


# -- JSON round trips ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("values", [usages, tool_calls, tool_specs, tool_results, messages, model_turns],
                         ids=["Usage", "ToolCall", "ToolSpec", "ToolResult", "Message", "ModelTurn"])
@settings(max_examples=examples(40), deadline=None)
@given(data=st.data())
def test_every_value_survives_to_dict_json_and_from_dict(values, data):
    value = data.draw(values)
    back = through_json(value)
    assert back == value
    assert type(back) is type(value)


@settings(max_examples=examples(30), deadline=None)
@given(model_turns)
def test_model_turn_round_trip_keeps_the_raw_provider_json(turn):
    assert through_json(turn).raw == turn.raw


@settings(max_examples=examples(30), deadline=None)
@given(model_turns)
def test_the_turns_reasoning_state_rides_on_its_message_and_through_json(turn):
    message = turn.as_message()
    assert message.reasoning == turn.reasoning
    assert through_json(message).reasoning == turn.reasoning


def test_a_message_without_reasoning_state_serialises_as_it_always_did():
    """The simulator hashes messages into its ids: an empty state must not change a single byte."""
    assert Message.user("hi").to_dict() == {"role": "user", "content": "hi", "tool_calls": [], "tool_call_id": None,
                                            "name": None, "is_error": False}
    assert "reasoning" not in ModelTurn("hi").to_dict()


def test_reasoning_state_is_usable_only_for_its_format_and_model():
    state = ReasoningState("anthropic", "claude-sonnet-4-5-20250929", ({"type": "thinking"},))
    assert state.usable_for("anthropic", "claude-sonnet-4-5")  # an alias of the dated snapshot
    assert not state.usable_for("anthropic", "claude-opus-4-5")
    assert not state.usable_for("openrouter", "claude-sonnet-4-5")
    assert not ReasoningState("gemini", None).usable_for("gemini", "gemini-3.1-pro-preview")  # model unknown: no
    assert "thinking" in repr(state) and "signature" not in repr(state)  # kinds only, never the opaque text


@settings(max_examples=examples(50), deadline=None)
@given(st.from_regex(r"[a-z][a-z.-]{0,20}", fullmatch=True), st.from_regex(r"[a-z][a-z.-]{0,20}", fullmatch=True))
def test_same_model_ignores_only_the_models_prefix_and_a_dated_suffix(a, b):
    assert same_model(a, "models/" + a) and same_model(a + "-20250929", a) and same_model(a, a + "-2025-08-07")
    assert same_model(a, b) == (a == b)
    assert not same_model(a, a + "-mini") and not same_model(a, None)


@settings(max_examples=examples(30), deadline=None)
@given(messages)
def test_round_tripped_messages_keep_tuples_so_they_stay_immutable(message):
    back = through_json(message)
    assert isinstance(back.tool_calls, tuple)


@settings(max_examples=examples(50), deadline=None)
@given(model_options)
def test_model_options_to_dict_is_plain_json(options):
    d = options.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert set(d) == {"tool_choice", "parallel_tool_calls", "stream", "max_tokens", "temperature"}


def test_model_options_round_trip_through_json():
    options = ModelOptions(tool_choice={"name": "get_weather"}, parallel_tool_calls=False, max_tokens=50)
    assert through_json(options) == options


def test_tool_spec_with_an_empty_schema_round_trips_unchanged():
    spec = ToolSpec("anything", "accepts any arguments", parameters={})
    assert through_json(spec) == spec


def test_tool_spec_from_dict_fills_defaults_for_missing_fields():
    spec = ToolSpec.from_dict({"name": "ping"})
    assert (spec.name, spec.description, spec.strict) == ("ping", "", False)
    assert spec.parameters["type"] == "object"


def test_to_dict_turns_nested_tuples_into_lists():
    turn = ModelTurn("hi", (ToolCall("c1", "f", "{}", {}),), usage=Usage(3, 4))
    d = turn.to_dict()
    assert isinstance(d["tool_calls"], list) and d["tool_calls"][0]["id"] == "c1"
    assert d["usage"] == {"input_tokens": 3, "output_tokens": 4}


# -- frozen ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, field", [
    (Usage(1, 2), "input_tokens"),
    (ToolSpec("x"), "name"),
    (ToolCall("c1", "f"), "arguments"),
    (ToolResult("c1", "f", True), "ok"),
    (Message.user("hi"), "content"),
    (ModelTurn("hi"), "text"),
    (ModelOptions(), "tool_choice"),
])
def test_values_are_frozen(value, field):
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, field, None)


def test_model_turn_equality_ignores_raw_provider_json():
    assert ModelTurn("hi", raw={"id": "a"}) == ModelTurn("hi", raw={"id": "b"})


# -- ToolCall.from_raw ---------------------------------------------------------------------------------------

def test_from_raw_parses_a_json_string_and_keeps_the_text_exactly():
    text = '{"city":  "Tokyo"}'
    c = ToolCall.from_raw("call_1", "get_weather", text)
    assert c.arguments == {"city": "Tokyo"}
    assert c.raw_arguments == text and c.arguments_json() == text


def test_from_raw_accepts_an_object_as_anthropic_and_gemini_send_it():
    c = ToolCall.from_raw("toolu_1", "get_weather", {"city": "Tokyo"})
    assert c.arguments == {"city": "Tokyo"} and c.raw_arguments == {"city": "Tokyo"}
    assert json.loads(c.arguments_json()) == {"city": "Tokyo"}


def test_arguments_json_keeps_non_ascii_text_readable():
    c = ToolCall.from_raw("c", "f", {"city": "Zürich"})
    assert c.arguments_json() == '{"city": "Zürich"}'


@pytest.mark.parametrize("raw", [None, "", "   "])
def test_missing_or_empty_arguments_mean_an_empty_object(raw):
    c = ToolCall.from_raw("c", "f", raw)
    assert c.arguments == {} and c.arguments_object() == {}
    assert isinstance(c.raw_arguments, str)


@pytest.mark.parametrize("raw", ['{"city": "Tok', "{", "not json", "{'single': 'quotes'}", '{"a": 1}}'])
def test_bad_json_parses_to_none_without_raising(raw):
    c = ToolCall.from_raw("c", "f", raw)
    assert c.arguments is None and c.raw_arguments == raw
    assert c.arguments_object() == {}


@pytest.mark.parametrize("raw", ["[1, 2]", '"text"', "42", "null", "true"])
def test_json_that_is_not_an_object_parses_to_none(raw):
    assert ToolCall.from_raw("c", "f", raw).arguments is None


@pytest.mark.parametrize("raw", ["[" * 100_000 + "]" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000])
def test_deeply_nested_json_parses_to_none_without_raising(raw):
    assert ToolCall.from_raw("c", "f", raw).arguments is None


@pytest.mark.parametrize("raw", [[1, 2], 42, 3.5])
def test_arguments_of_another_type_parse_to_none(raw):
    assert ToolCall.from_raw("c", "f", raw).arguments is None


@settings(deadline=None)
@given(st.text(max_size=60))
def test_from_raw_never_raises_and_only_returns_what_json_says(raw):
    parsed = ToolCall.from_raw("c", "f", raw).arguments
    if parsed is not None:
        expected = json.loads(raw) if raw.strip() else {}
        assert parsed == expected and isinstance(parsed, dict)


@settings(max_examples=examples(50), deadline=None)
@given(json_objects)
def test_any_object_serialised_to_text_parses_back_to_itself(obj):
    assert parse_arguments(json.dumps(obj)) == obj


# -- ToolResult: the envelope ------------------------------------------------------------------------------

CALL = ToolCall("call_7", "get_weather", '{"city": "Tokyo"}', {"city": "Tokyo"})


def test_success_envelope_has_exactly_the_four_fields_in_order():
    r = ToolResult.success(CALL, {"temp": 22})
    assert list(r.envelope()) == ["toolCallId", "name", "ok", "result"]
    assert r.envelope() == {"toolCallId": "call_7", "name": "get_weather", "ok": True, "result": {"temp": 22}}
    assert json.loads(r.content()) == r.envelope()
    assert r.error_kind is None


def test_failure_envelope_carries_kind_message_path_and_keyword():
    r = ToolResult.failure(CALL, "schema", "'city' is a required property", path="$", keyword="required")
    assert r.envelope() == {"toolCallId": "call_7", "name": "get_weather", "ok": False,
                            "error": {"kind": "schema", "message": "'city' is a required property",
                                      "path": "$", "keyword": "required"}}
    assert json.loads(r.content()) == r.envelope()
    assert r.error_kind == "schema"


def test_failure_without_path_or_keyword_still_has_all_four_error_keys():
    err = ToolResult.failure(CALL, "tool_error", "boom").envelope()["error"]
    assert err == {"kind": "tool_error", "message": "boom", "path": None, "keyword": None}


def test_text_overrides_the_content_but_not_the_envelope():
    r = ToolResult.failure(CALL, "tool_error", "boom", text="Tool failed, try later.")
    assert r.content() == "Tool failed, try later."
    assert r.envelope()["error"]["kind"] == "tool_error"
    ok = ToolResult(CALL.id, CALL.name, True, result=5, text="five")
    assert ok.content() == "five"


def test_content_keeps_non_ascii_and_never_fails_on_non_json_results():
    assert "22°C" in ToolResult.success(CALL, "22°C").content()
    when = datetime.date(2024, 5, 1)
    assert json.loads(ToolResult.success(CALL, when).content())["result"] == "2024-05-01"


# -- Message ------------------------------------------------------------------------------------------------

def test_message_tool_from_a_success_answers_its_call():
    m = Message.tool(ToolResult.success(CALL, "sunny"))
    assert (m.role, m.tool_call_id, m.name, m.is_error) == ("tool", "call_7", "get_weather", False)
    assert json.loads(m.content)["result"] == "sunny"
    assert m.tool_calls == ()


def test_message_tool_from_a_failure_is_marked_as_an_error():
    m = Message.tool(ToolResult.failure(CALL, "timeout", "too slow"))
    assert m.is_error is True
    assert json.loads(m.content)["error"]["kind"] == "timeout"


def test_message_tool_uses_the_override_text_as_content():
    m = Message.tool(ToolResult.failure(CALL, "tool_error", "x", text="Try again."))
    assert m.content == "Try again." and m.is_error


def test_constructors_set_the_role_and_assistant_turns_lists_into_tuples():
    assert Message.system("s").role == "system" and Message.user("u").content == "u"
    a = Message.assistant(None, [CALL])
    assert a.role == "assistant" and a.tool_calls == (CALL,) and isinstance(a.tool_calls, tuple)


def test_model_turn_as_message_is_the_assistant_entry():
    turn = ModelTurn("checking", (CALL,), stop="tool_calls")
    assert turn.as_message() == Message("assistant", "checking", (CALL,))


# -- Usage ---------------------------------------------------------------------------------------------------

def test_usage_adds_field_by_field_and_totals():
    total = Usage(10, 2) + Usage(5, 3)
    assert total == Usage(15, 5) and total.total_tokens == 20


@settings(deadline=None)
@given(st.lists(usages, max_size=6))
def test_summing_usages_matches_summing_the_counts(items):
    total = sum(items, Usage())
    assert total.input_tokens == sum(u.input_tokens for u in items)
    assert total.output_tokens == sum(u.output_tokens for u in items)


def test_usage_from_a_partial_dict_defaults_to_zero():
    assert Usage.from_dict({}) == Usage(0, 0)
    assert Usage.from_dict({"output_tokens": "7"}) == Usage(0, 7)


# -- the envelope's text is exactly json.dumps of the envelope ---------------------------------------------

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                           lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(), kids, max_size=3),
                           max_leaves=10)


@settings(max_examples=examples(300), deadline=None)
@given(call_id=st.text(), name=st.text(), result=json_values, ok=st.booleans(), message=st.text())
def test_envelope_text_is_json_dumps_of_the_envelope(call_id, name, result, ok, message):
    call = ToolCall(call_id, name, "{}", {})
    r = ToolResult.success(call, result) if ok else ToolResult.failure(call, "tool_error", message)
    assert r.content() == json.dumps(r.envelope(), ensure_ascii=False, default=str)
    assert json.loads(r.content()) == json.loads(json.dumps(r.envelope(), default=str))


# -- a call written by hand ----------------------------------------------------------------------------------

def test_a_call_given_only_its_parsed_arguments_carries_them_through_the_gates():
    """A scripted model's `ToolCall(id, name, arguments={...})` once left the raw arguments at "{}", so the
    schema gate saw no city at all; it is the same call agentkit.call makes."""
    import agentkit

    @agentkit.tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"{city}: sunny"

    by_hand = ToolCall("c1", "get_weather", arguments={"city": "東京"})
    assert by_hand == agentkit.call("get_weather", {"city": "東京"}, id="c1")
    assert by_hand.raw_arguments == '{"city": "東京"}'
    run = agentkit.run(agentkit.ScriptedModel([[by_hand], "ok"]), "weather?", tools=[get_weather])
    assert run.results[0].ok and run.results[0].result == "東京: sunny"


def test_a_call_keeps_raw_arguments_as_they_arrived_and_refuses_arguments_that_are_not_an_object():
    assert ToolCall("c1", "f", '{"a": 1', None).raw_arguments == '{"a": 1'  # broken JSON kept for gate 1
    assert ToolCall("c1", "f", {"a": 1}, {"a": 1}).raw_arguments == {"a": 1}
    assert ToolCall("c1", "f").raw_arguments == "{}" and ToolCall("c1", "f", arguments={}).raw_arguments == "{}"
    with pytest.raises(TypeError, match="a dict"):
        ToolCall("c1", "f", arguments=["Tokyo"])
