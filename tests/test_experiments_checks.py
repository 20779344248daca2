"""unanswered_calls: the check tutorials 04 and 06 print — a provider's rule, read strictly."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit import Message, ToolCall, ToolResult
from agentkit.experiments.checks import unanswered_calls
from profiles import examples


def turn(*ids):
    return Message.assistant(None, [ToolCall(i, "f", "{}", {}) for i in ids])


def answer(call_id):
    return Message.tool(ToolResult(call_id, "f", True, 1))


def test_an_answered_history_has_nothing_missing():
    history = [Message.user("x"), turn("a", "b"), answer("b"), answer("a"), Message.assistant("ok")]
    assert unanswered_calls(history) == []


def test_a_missing_a_late_and_a_doubled_answer_all_count():
    assert unanswered_calls([turn("a", "b"), answer("a")]) == ["b"]
    assert unanswered_calls([turn("a"), Message.user("hi"), answer("a")]) == ["a"]  # not right after its turn
    assert unanswered_calls([turn("a"), answer("a"), answer("a")]) == ["a"]


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=5), st.data())
def test_dropping_any_one_answer_is_caught(batches, data):
    messages, n = [Message.user("go")], 0
    for size in batches:
        ids = [f"c{n + i}" for i in range(size)]
        n += size
        messages += [turn(*ids), *(answer(i) for i in data.draw(st.permutations(ids)))]
    assert unanswered_calls(messages) == []
    drop = data.draw(st.sampled_from([i for i, m in enumerate(messages) if m.role == "tool"]))
    assert unanswered_calls(messages[:drop] + messages[drop + 1:]) == [messages[drop].tool_call_id]
