"""The check tutorials 04 and 06 print after every way a run can end: does each tool call have its result?

    unanswered_calls(run.messages)     # [] : every call was answered, the history can be sent again
    unanswered_calls(broken_history)   # ['call_1'] : a provider would refuse this conversation

A provider reads the rule strictly: OpenAI wants "tool messages responding to each 'tool_call_id'" right
after the assistant message that made the calls, Anthropic a `tool_result` block for each `tool_use` in
the very next message. So a call counts as answered only when exactly one tool message with its id sits
in the unbroken run of tool messages that follows its turn.

Left out on purpose: checking the *content* of the results (any result, even an error, answers a call).
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from ..core.types import Message


def unanswered_calls(messages: Sequence[Message]) -> list[str]:
    """The ids of the calls in `messages` without exactly one result right after their turn, in order."""
    missing: list[str] = []
    for i, message in enumerate(messages):
        if message.role != "assistant" or not message.tool_calls:
            continue
        answers: Counter[str] = Counter()
        for later in messages[i + 1:]:
            if later.role != "tool":
                break
            answers[later.tool_call_id] += 1
        missing += [call.id for call in message.tool_calls if answers[call.id] != 1]
    return missing
