"""The simulated models: respond()'s contract, ids and usage, names, and every behaviour preset."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from agentkit.core.types import Message, ModelOptions, ModelTurn, ToolCall, ToolResult, ToolSpec
from agentkit.sim import behaviours as M
from agentkit.sim.behaviours import KNOWN_MODELS, UnknownModel, describe, respond
from agentkit.sim.wire.common import ChatRequest

WEATHER = ToolSpec("get_weather", "指定した都市の現在の天気を返す。cityは日本語の都市名で渡す。",
                   {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
FX = ToolSpec("get_exchange_rate",
              "2通貨間の為替レートを返す。baseとquoteはISO 4217の3文字コード（例: USD, JPY）。",
              {"type": "object", "properties": {"base": {"type": "string"}, "quote": {"type": "string"}},
               "required": ["base", "quote"]})
WAIT = ToolSpec("wait", "Wait for some seconds.", {
    "type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]})
SLOW = ToolSpec("slow_task", "A slow task.", {"type": "object", "properties": {
    "task_id": {"type": "integer"}, "seconds": {"type": "number"}}, "required": ["task_id", "seconds"]})
TOOLS = (WEATHER, FX)
ASK = "東京の天気と、1ドル何円か教えて"
TOKYO = ("get_weather", {"city": "東京"})
USD_JPY = ("get_exchange_rate", {"base": "USD", "quote": "JPY"})


def chat(model: str, messages, tools=TOOLS, **options) -> ChatRequest:
    messages = [Message.user(messages)] if isinstance(messages, str) else messages
    return ChatRequest(model, tuple(messages), tuple(tools), ModelOptions(**options))


def fake_tool(call: ToolCall, spec: ToolSpec) -> ToolResult:
    """What the loop's gates and a demo tool would answer: parse, schema, then a fixed result."""
    if call.arguments is None:
        return ToolResult.failure(call, "bad_json", "the arguments are not valid JSON")
    errors = sorted(Draft202012Validator(spec.parameters).iter_errors(call.arguments), key=str)
    if errors:
        e = errors[0]
        path = "$." + ".".join(map(str, e.absolute_path)) if e.absolute_path else None
        if e.validator == "required":
            missing = next(n for n in e.validator_value if n not in e.instance)
            return ToolResult.failure(call, "schema", f"missing required property {missing!r}",
                                      f"$.{missing}", "required")
        return ToolResult.failure(call, "schema", e.message, path, e.validator)
    return ToolResult.success(call, f"{call.name} ok: {json.dumps(call.arguments, ensure_ascii=False)}")


def drive(model: str, text: str, tools=TOOLS, max_turns: int = 8, **options) -> list[ModelTurn]:
    """A minimal loop: ask, run every call with `fake_tool`, repeat until a text answer (or max_turns)."""
    specs = {t.name: t for t in tools}
    messages, turns = [Message.user(text)], []
    for _ in range(max_turns):
        turn = respond(chat(model, messages, tools, **options))
        turns.append(turn)
        if not turn.tool_calls:
            break
        messages.append(turn.as_message())
        for call in turn.tool_calls:
            spec = specs.get(call.name)
            result = (fake_tool(call, spec) if spec
                      else ToolResult.failure(call, "unknown_tool", "no such tool"))
            messages.append(Message.tool(result))
    return turns


def calls(turn: ModelTurn) -> list[tuple[str, object]]:
    return [(c.name, c.arguments if c.arguments is not None else c.raw_arguments) for c in turn.tool_calls]


# ── respond(): the contract ────────────────────────────────────────────────────────────────────────

def test_respond_returns_a_neutral_turn_with_calls_ids_usage_and_the_model_name():
    turn = respond(chat("sim-reasoner", ASK))
    assert calls(turn) == [TOKYO, USD_JPY]
    assert turn.stop == "tool_calls" and turn.text is None and turn.model == "sim-reasoner"
    assert turn.id and all(c.id for c in turn.tool_calls) and len({c.id for c in turn.tool_calls}) == 2
    assert all(isinstance(c.raw_arguments, dict) for c in turn.tool_calls)
    assert turn.usage.input_tokens > 0 and turn.usage.output_tokens > 0


def test_the_same_request_gives_the_same_turn_ids_included():
    assert respond(chat("sim-reasoner", ASK)) == respond(chat("sim-reasoner", ASK))
    assert respond(chat("sim-noisy-5", ASK)) == respond(chat("sim-noisy-5", ASK))


def test_different_requests_get_different_ids_but_streaming_does_not_matter():
    a, b = respond(chat("sim-reasoner", ASK)), respond(chat("sim-reasoner", ASK + "！"))
    assert a.id != b.id and a.tool_calls[0].id != b.tool_calls[0].id
    assert respond(chat("sim-reasoner", ASK, stream=True)) == a


def test_usage_counts_tool_definitions_and_is_about_a_token_per_four_bytes():
    without = respond(chat("sim-reasoner", "hello", ()))
    with_tools = respond(chat("sim-reasoner", "hello"))
    assert with_tools.usage.input_tokens > without.usage.input_tokens
    assert M.count_tokens("abcd" * 10) == 10 and M.count_tokens("東京") == 2
    assert without.usage.output_tokens == M.count_tokens(without.text)


def test_a_text_answer_stops_with_stop():
    turn = respond(chat("sim-reasoner", "hello"))
    assert turn.stop == "stop" and turn.tool_calls == () and turn.text.startswith("Hello")


# ── names ──────────────────────────────────────────────────────────────────────────────────────────

@pytest.mark.parametrize("name", ["", "  ", "no-such-model", "openai/no-such-model"])
def test_invalid_names_are_unknown(name):
    with pytest.raises(UnknownModel) as info:
        respond(chat(name, ASK))
    assert info.value.name == name


@pytest.mark.parametrize("name", ["gpt-6.1-sol", "gpt-6-astra", "claude-opus-5-5", "claude-sonnet-5-5",
                                  "claude-fable-5-1", "claude-mythos-5-1", "gpt-4.1", "claude-sonnet-4-5",
                                  "gemini-2.5-flash", "gemini-3-flash-preview", "openai/gpt-4.1",
                                  "google/gemini-3-flash-preview", "anything-else"])
def test_every_other_name_is_a_reasoner(name):
    turn = respond(chat(name, ASK))
    assert calls(turn) == calls(respond(chat("sim-reasoner", ASK)))
    assert turn.model == name


def test_known_models_all_work_and_are_described():
    assert {"sim-reasoner", "sim-always-tool", "sim-repeat", "sim-bad-json", "sim-string-numbers",
            "sim-missing-field", "sim-parallel-8", "sim-noisy-42"} <= set(KNOWN_MODELS)
    for name, line in KNOWN_MODELS.items():
        assert line and "\n" not in line
        assert describe(name)
        respond(chat(name, ASK))
    assert "3 parallel" in describe("sim-parallel-3") and "seed 7" in describe("sim-noisy-7")
    with pytest.raises(UnknownModel):
        describe("no-such-thing")


def test_presets_match_by_prefix():
    assert M.resolve("sim-parallel-16")[0].prefix == "sim-parallel-"
    assert M.resolve("sim-always-tool-v2")[0].prefix == "sim-always-tool"
    assert M.resolve("models/sim-repeat")[0].prefix == "sim-repeat"
    assert M.resolve("sim-reasoner-mini")[0].prefix == "sim-reasoner"


# ── the presets ────────────────────────────────────────────────────────────────────────────────────

def test_the_reasoner_finishes_the_seed_request_in_two_turns():
    turns = drive("sim-reasoner", ASK)
    assert len(turns) == 2
    assert "東京" in turns[-1].text and "USD" in turns[-1].text


def test_always_tool_calls_every_turn_and_never_answers():
    turns = drive("sim-always-tool", "hello", max_turns=5)
    assert len(turns) == 5 and all(t.tool_calls for t in turns)
    assert {c.name for t in turns for c in t.tool_calls} == {"get_weather"}
    named = drive("sim-always-tool", ASK, max_turns=3, tool_choice={"name": "get_exchange_rate"})
    assert {c.name for t in named for c in t.tool_calls} == {"get_exchange_rate"}


def test_always_tool_still_obeys_tool_choice_none():
    turn = respond(chat("sim-always-tool", ASK, tool_choice="none"))
    assert turn.tool_calls == () and turn.text


def test_repeat_sends_the_same_call_every_turn():
    turns = drive("sim-repeat", "東京の天気は？", max_turns=4)
    assert len(turns) == 4
    assert {json.dumps(calls(t)) for t in turns} == {json.dumps([("get_weather", {"city": "東京"})])}
    assert len({t.tool_calls[0].id for t in turns}) == 4  # same call, new id each turn


def test_bad_json_first_then_valid_json_after_the_error():
    turns = drive("sim-bad-json", "東京の天気は？")
    first = turns[0].tool_calls[0]
    assert isinstance(first.raw_arguments, str) and first.arguments is None
    with pytest.raises(ValueError):
        json.loads(first.raw_arguments)
    assert calls(turns[1]) == [("get_weather", {"city": "東京"})]
    assert turns[2].text and "晴" not in turns[2].text and "get_weather ok" in turns[2].text


def test_string_numbers_first_then_numbers():
    turns = drive("sim-string-numbers", "wait 0.2 seconds", (WAIT,))
    assert calls(turns[0]) == [("wait", {"seconds": "0.2"})]
    assert calls(turns[1]) == [("wait", {"seconds": 0.2})]
    assert turns[2].text


def test_missing_field_first_then_the_field():
    turns = drive("sim-missing-field", ASK)
    assert calls(turns[0]) == [("get_weather", {}), ("get_exchange_rate", {"quote": "JPY"})]
    assert calls(turns[1]) == [TOKYO, USD_JPY]
    assert turns[2].text


def test_parallel_n_emits_n_distinct_calls_then_answers():
    turns = drive("sim-parallel-8", "run the slow task for 0.2 seconds", (SLOW,))
    assert len(turns) == 2 and len(turns[0].tool_calls) == 8
    args = [c.arguments for c in turns[0].tool_calls]
    assert [a["task_id"] for a in args] == list(range(8)) and {a["seconds"] for a in args} == {0.2}
    assert len({c.id for c in turns[0].tool_calls}) == 8
    assert turns[1].text and turns[1].text.count("slow_task ok") == 8


def test_parallel_n_with_only_a_number_keeps_calls_distinct_and_close():
    turn = respond(chat("sim-parallel-4", "wait 0.2 seconds", (WAIT,)))
    assert [c.arguments["seconds"] for c in turn.tool_calls] == [0.2, 0.21, 0.22, 0.23]


def test_parallel_n_goes_one_per_turn_when_parallel_calls_are_off():
    turns = drive("sim-parallel-3", "run the slow task", (SLOW,), parallel_tool_calls=False)
    assert [len(t.tool_calls) for t in turns] == [1, 1, 1, 0]
    assert [t.tool_calls[0].arguments["task_id"] for t in turns[:3]] == [0, 1, 2]


REQUESTS = [ASK, "東京の天気は？", "What's the weather in Tokyo and how many yen is one dollar?",
            "1ドル何円？", "東京と大阪の天気", "Weather in Paris, London and Lagos", "USD to EUR rate",
            "パリの天気を教えて"]


def test_noisy_models_make_reproducible_mistakes_at_about_the_fixed_rate():
    mistakes = total = 0
    for seed in range(30):
        for text in REQUESTS:
            clean = calls(respond(chat("sim-reasoner", text)))
            noisy = respond(chat(f"sim-noisy-{seed}", text))
            assert noisy == respond(chat(f"sim-noisy-{seed}", text))
            assert {c.name for c in noisy.tool_calls} <= {"get_weather", "get_exchange_rate"}
            total += len(clean)
            mistakes += calls(noisy) != clean
    assert 0.1 < mistakes / total < 0.4


def test_noisy_models_still_mostly_finish_the_task():
    finished = sum(bool(drive(f"sim-noisy-{seed}", ASK)[-1].text) for seed in range(20))
    assert finished == 20  # mistakes get corrected or explained; the turn cap ends every run


def test_every_model_honours_parallel_tool_calls_false():
    for name in ("sim-reasoner", "sim-bad-json", "sim-missing-field", "sim-noisy-1", "sim-noisy-2",
                 "sim-parallel-4", "sim-always-tool", "sim-repeat"):
        for turn in drive(name, ASK, max_turns=4, parallel_tool_calls=False):
            assert len(turn.tool_calls) <= 1, name


# ── property: any request, any tools — no crash, only offered tools, "none" means none ─────────────

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=8))
prop_schemas = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "number", "boolean", "array",
                                                     "object", "null"])},
                          optional={"description": st.text(max_size=30),
                                    "enum": st.lists(json_scalars, max_size=4),
                                    "format": st.sampled_from(["date", "date-time", "email"]),
                                    "default": json_scalars, "items": st.just({"type": "string"})}),
    st.just({"type": ["string", "null"]}), st.just({}), st.just("not a schema"), st.integers())
tool_specs = st.builds(
    lambda name, description, props, required: ToolSpec(name, description, {
        "type": "object", "properties": props, "required": required}),
    st.one_of(names, st.sampled_from(["get_weather", "get_exchange_rate", "searchInvoices", "web_search"])),
    st.text(max_size=60), st.dictionaries(names, prop_schemas, max_size=4), st.lists(names, max_size=3))
weird_tool = st.builds(lambda n, p: ToolSpec(n, "", p), names, st.one_of(st.none(), st.just([]), st.just({
    "properties": "nope", "required": "city"})))
texts = st.one_of(st.text(max_size=80), st.sampled_from(
    REQUESTS + ["hello", "", "2026年1月の支払済みの請求書を探して", "find paid invoices from January 2026"]))
contents = st.one_of(st.none(), texts, st.just('{"ok": false, "error": {"kind": "schema", "path": "$.x"}}'),
                     st.just('{"ok": true, "result": [1, 2]}'), st.just('{"output": 1}'), st.just("[1,"))
histories = st.lists(st.one_of(
    st.builds(Message.user, texts),
    st.builds(lambda n, a: Message.assistant(None, [ToolCall("x", n, a, a if isinstance(a, dict) else None)]),
              names, st.one_of(st.just("{"), st.dictionaries(names, json_scalars, max_size=2))),
    st.builds(lambda c, i, n, e: Message("tool", c, (), i, n, e), contents,
              st.one_of(st.none(), st.just("x")), st.one_of(st.none(), names), st.booleans()),
    st.builds(Message.system, texts)), max_size=6)
choices = st.one_of(st.sampled_from(["auto", "none", "required", "any", "bogus"]),
                    st.builds(lambda n: {"name": n}, names), st.just({"type": "function", "function": "x"}))
models = st.sampled_from(["sim-reasoner", "sim-always-tool", "sim-repeat", "sim-bad-json",
                          "sim-string-numbers", "sim-missing-field", "sim-parallel-3", "sim-parallel-x",
                          "sim-noisy-1", "sim-noisy-99", "gpt-4.1", "", "no-such-model"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=models, history=histories, last=texts,
       tools=st.lists(st.one_of(tool_specs, weird_tool), max_size=4), choice=choices,
       parallel=st.sampled_from([None, True, False]))
def test_any_request_gets_a_turn_that_only_calls_offered_tools(model, history, last, tools, choice, parallel):
    request = ChatRequest(model, (*history, Message.user(last)), tuple(tools),
                          ModelOptions(tool_choice=choice, parallel_tool_calls=parallel))
    try:
        turn = respond(request)
    except UnknownModel:
        assert model in ("", "no-such-model")
        return
    offered = {t.name for t in tools if isinstance(t.name, str) and t.name}
    assert {c.name for c in turn.tool_calls} <= offered
    if choice == "none" or not offered:
        assert turn.tool_calls == () and isinstance(turn.text, str)
    if parallel is False:
        assert len(turn.tool_calls) <= 1
    for c in turn.tool_calls:
        assert isinstance(c.raw_arguments, str) or c.raw_arguments == c.arguments
        json.dumps(c.arguments)  # what the codecs will serialise
    assert turn == respond(replace(request))
