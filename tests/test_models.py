"""agentkit.models: scripted and function models, their presets, and the call() helper."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentkit.core.errors import ScriptError
from agentkit.core.types import Message, ModelOptions, ModelTurn, ToolResult, ToolSpec, Usage
from agentkit.models import (
    FunctionModel,
    ScriptedModel,
    always_calls,
    as_turn,
    call,
    malformed_then_fixed,
    parallel_calls,
    repeats,
)

OPTS = ModelOptions()
TOOLS = [ToolSpec("get_weather")]


def ask(model, messages=None, tools=TOOLS, options=OPTS) -> ModelTurn:
    return model.complete(messages if messages is not None else [Message.user("hi")], tools, options)


def answer_all(messages, turn, ok=True):
    """Append the assistant turn and one tool result per call, as the loop would."""
    out = [*messages, turn.as_message()]
    for c in turn.tool_calls:
        result = ToolResult.success(c, "fine") if ok else ToolResult.failure(c, "parse", "bad JSON")
        out.append(Message.tool(result))
    return out


# -- call() --------------------------------------------------------------------------------------------------

def test_call_builds_a_tool_call_with_json_text_and_parsed_arguments():
    c = call("get_weather", {"city": "Zürich"})
    assert c.name == "get_weather" and c.id == ""
    assert c.arguments == {"city": "Zürich"} and json.loads(c.raw_arguments) == {"city": "Zürich"}
    assert "Zürich" in c.raw_arguments


def test_call_without_arguments_sends_an_empty_object():
    c = call("now")
    assert c.arguments == {} and c.raw_arguments == "{}"


def test_call_keeps_an_explicit_id():
    assert call("now", id="call_abc").id == "call_abc"


def test_call_with_raw_sends_exactly_that_text_even_when_it_is_broken():
    c = call("get_weather", raw='{"city": "Tok')
    assert c.raw_arguments == '{"city": "Tok' and c.arguments is None


def test_call_with_raw_valid_json_parses_it():
    assert call("get_weather", raw='{"city":"Oslo"}').arguments == {"city": "Oslo"}


# -- as_turn and ScriptedModel step forms --------------------------------------------------------------------

def test_a_string_step_is_a_final_answer():
    turn = ask(ScriptedModel(["It is sunny."]))
    assert turn == ModelTurn(text="It is sunny.", stop="stop")


def test_a_list_of_calls_is_one_parallel_batch_with_stable_ids():
    model = ScriptedModel(["first", [call("a", {"x": 1}), call("b")]])
    ask(model)
    turn = ask(model)
    assert turn.stop == "tool_calls" and turn.text is None
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [("call_2_0", "a", {"x": 1}),
                                                                      ("call_2_1", "b", {})]


def test_a_single_call_step_is_a_batch_of_one():
    turn = ask(ScriptedModel([call("a")]))
    assert turn.stop == "tool_calls" and [c.id for c in turn.tool_calls] == ["call_1_0"]


def test_a_tuple_of_calls_works_like_a_list():
    turn = ask(ScriptedModel([(call("a"), call("b"))]))
    assert [c.id for c in turn.tool_calls] == ["call_1_0", "call_1_1"]


def test_an_empty_list_step_is_a_turn_without_calls():
    turn = ask(ScriptedModel([[]]))
    assert turn.tool_calls == () and turn.stop == "stop"


def test_explicit_ids_are_kept_and_only_missing_ones_are_filled():
    turn = ask(ScriptedModel([[call("a", id="mine"), call("b")]]))
    assert [c.id for c in turn.tool_calls] == ["mine", "call_1_1"]


def test_a_model_turn_step_is_played_as_is_with_ids_filled():
    step = ModelTurn("thinking", (call("a"),), "tool_calls", "tool_use", Usage(5, 6), "m", "resp_1", {"x": 1})
    turn = ask(ScriptedModel([step]))
    assert (turn.text, turn.stop, turn.native_stop, turn.usage, turn.model, turn.id, turn.raw) == (
        "thinking", "tool_calls", "tool_use", Usage(5, 6), "m", "resp_1", {"x": 1})
    assert turn.tool_calls[0].id == "call_1_0"


def test_a_model_turn_step_with_ids_comes_back_unchanged():
    step = ModelTurn("done", (call("a", id="x"),), "tool_calls")
    assert ask(ScriptedModel([step])) == step


def test_a_function_step_sees_the_request_and_returns_any_step_form():
    seen = []

    def step(messages, tools, options):
        seen.append((len(messages), [t.name for t in tools], options))
        return [call("get_weather", {"city": messages[-1].content})]

    turn = ask(ScriptedModel([step]), [Message.user("Oslo")])
    assert seen == [(1, ["get_weather"], OPTS)]
    assert turn.tool_calls[0].arguments == {"city": "Oslo"} and turn.tool_calls[0].id == "call_1_0"


def test_ids_are_the_same_on_every_replay_of_the_script():
    def play():
        model = ScriptedModel([[call("a"), call("b")], [call("c")], "done"])
        return [c.id for _ in range(3) for c in ask(model).tool_calls]

    assert play() == play() == ["call_1_0", "call_1_1", "call_2_0"]


@pytest.mark.parametrize("bad", [42, None, {"text": "hi"}, [call("a"), "b"], ["a", "b"]])
def test_a_step_of_another_type_is_a_script_error_naming_the_step(bad):
    model = ScriptedModel(["ok", bad])
    ask(model)
    expected = rf"script step 2 is a {type(bad).__name__}; use a ModelTurn, a str"
    with pytest.raises(ScriptError, match=expected):
        ask(model)


def test_a_function_step_returning_a_bad_value_is_a_script_error():
    with pytest.raises(ScriptError, match="script step 1 is a int"):
        ask(ScriptedModel([lambda m, t, o: 7]))


def test_as_turn_normalises_directly():
    assert as_turn("hi", 3) == ModelTurn("hi")
    assert as_turn([call("x")], 3).tool_calls[0].id == "call_3_0"


# -- ScriptedModel bookkeeping -------------------------------------------------------------------------------

def test_the_model_records_the_size_of_every_request():
    model = ScriptedModel(["a", "b"])
    ask(model, [Message.user("x")], [], OPTS)
    history = [Message.user("x"), Message.assistant("a"), Message.user("y")]
    ask(model, history, TOOLS, ModelOptions("required"))
    assert model.requests == [(1, 0, OPTS), (3, 1, ModelOptions("required"))]
    assert model.calls == 2 and model.remaining == 0


def test_asking_past_the_end_of_the_script_is_a_clear_script_error():
    model = ScriptedModel(["only"], name="weather-script")
    ask(model)
    with pytest.raises(ScriptError, match=r"weather-script: asked for step 2, but the script has only 1 "
                                          r"steps \(the loop called the model more often than planned\)"):
        ask(model)


def test_an_empty_script_fails_on_the_first_call():
    with pytest.raises(ScriptError, match="asked for step 1, but the script has only 0 steps"):
        ask(ScriptedModel([]))


def test_assert_complete_names_the_unused_steps():
    model = ScriptedModel(["a", "b", "c"])
    ask(model)
    with pytest.raises(ScriptError, match=r"scripted: 2 of 3 steps were never used \(the loop stopped "
                                          r"after 1 model calls\)"):
        model.assert_complete()


def test_assert_complete_passes_once_every_step_was_used():
    model = ScriptedModel(["a", "b"])
    ask(model)
    ask(model)
    model.assert_complete()


def test_script_error_is_an_assertion_error_for_test_runners():
    assert issubclass(ScriptError, AssertionError)


def test_acomplete_plays_the_same_script():
    model = ScriptedModel([[call("a")], "done"])
    first = asyncio.run(model.acomplete([Message.user("x")], TOOLS, OPTS))
    second = asyncio.run(model.acomplete([Message.user("x")], TOOLS, OPTS))
    assert first.tool_calls[0].id == "call_1_0" and second.text == "done"


# -- FunctionModel -------------------------------------------------------------------------------------------

def test_function_model_calls_the_function_every_turn_and_numbers_ids_by_call():
    seen = []

    def fn(messages, tools, options):
        seen.append(len(messages))
        return [call("echo")] if len(messages) < 3 else "enough"

    model = FunctionModel(fn)
    assert model.name == "fn"
    first = ask(model, [Message.user("a")])
    second = ask(model, [Message.user("a"), Message.user("b")])
    third = ask(model, [Message.user("a")] * 3)
    assert first.tool_calls[0].id == "call_1_0" and second.tool_calls[0].id == "call_2_0"
    assert third.text == "enough" and model.calls == 3 and seen == [1, 2, 3]


def test_function_model_takes_a_name_and_an_async_path():
    model = FunctionModel(lambda m, t, o: "hi", name="greeter")
    assert model.name == "greeter"
    assert asyncio.run(model.acomplete([], [], OPTS)).text == "hi"


def test_function_model_refuses_a_bad_return_with_a_script_error():
    with pytest.raises(ScriptError):
        ask(FunctionModel(lambda m, t, o: {"not": "a step"}))


# -- presets -------------------------------------------------------------------------------------------------

def play(model, turns: int, ok=True) -> list[ModelTurn]:
    messages, out = [Message.user("go")], []
    for _ in range(turns):
        turn = ask(model, messages)
        out.append(turn)
        messages = answer_all(messages, turn, ok)
    return out


def test_always_calls_calls_every_turn_and_never_answers():
    turns = play(always_calls("ping", {"host": "a"}), 5)
    assert all(t.text is None and t.stop == "tool_calls" for t in turns)
    assert all([(c.name, c.arguments) for c in t.tool_calls] == [("ping", {"host": "a"})] for t in turns)


def test_always_calls_without_arguments_sends_an_empty_object():
    (turn,) = play(always_calls("ping"), 1)
    assert turn.tool_calls[0].arguments == {}


def test_always_calls_with_a_function_varies_the_arguments_by_turn_number():
    turns = play(always_calls("page", lambda step: {"page": step}), 4)
    assert [t.tool_calls[0].arguments for t in turns] == [{"page": 1}, {"page": 2}, {"page": 3}, {"page": 4}]
    assert [t.tool_calls[0].id for t in turns] == ["call_1_0", "call_2_0", "call_3_0", "call_4_0"]


def test_repeats_asks_for_the_very_same_call_every_turn():
    turns = play(repeats("search", {"q": "x"}), 4)
    assert len({(c.name, c.raw_arguments) for t in turns for c in t.tool_calls}) == 1
    assert all(len(t.tool_calls) == 1 for t in turns)


def test_parallel_calls_emits_n_calls_then_the_answer():
    model = parallel_calls("nap", 4, answer="Slept.")
    first, second = play(model, 2)
    assert [c.arguments for c in first.tool_calls] == [{"i": 0}, {"i": 1}, {"i": 2}, {"i": 3}]
    assert len({c.id for c in first.tool_calls}) == 4
    assert second.text == "Slept." and second.tool_calls == ()


def test_parallel_calls_takes_an_arguments_function():
    (turn,) = play(parallel_calls("fetch", 2, arguments=lambda i: {"url": f"/page/{i}"}), 1)
    assert [c.arguments for c in turn.tool_calls] == [{"url": "/page/0"}, {"url": "/page/1"}]


def test_parallel_calls_starts_over_after_a_new_user_message():
    model = parallel_calls("nap", 2)
    messages = [Message.user("go")]
    turn = ask(model, messages)
    messages = answer_all(messages, turn) + [Message.assistant("All done."), Message.user("again")]
    assert len(ask(model, messages).tool_calls) == 2


def test_malformed_then_fixed_sends_broken_json_then_the_valid_call_then_answers():
    model = malformed_then_fixed("get_weather", {"city": "Tokyo"}, answer="Sunny.")
    messages = [Message.user("weather?")]
    broken = ask(model, messages)
    assert broken.tool_calls[0].raw_arguments == '{"city": "Tok' and broken.tool_calls[0].arguments is None
    messages = answer_all(messages, broken, ok=False)
    fixed = ask(model, messages)
    assert fixed.tool_calls[0].arguments == {"city": "Tokyo"}
    messages = answer_all(messages, fixed, ok=True)
    assert ask(model, messages).text == "Sunny."


def test_malformed_then_fixed_takes_its_own_raw_text():
    (turn,) = play(malformed_then_fixed("f", {"a": 1}, raw="{a: 1}"), 1)
    assert turn.tool_calls[0].raw_arguments == "{a: 1}"


def test_presets_have_names_that_say_what_they_do():
    assert always_calls("ping").name == "always_calls(ping)"
    assert repeats("search").name == "repeats(search)"
    assert parallel_calls("nap", 3).name == "parallel_calls(nap, 3)"
    assert malformed_then_fixed("f", {}).name == "malformed_then_fixed(f)"
