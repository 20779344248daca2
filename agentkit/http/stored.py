"""The conversations an API stored, as one HTTPModel remembers them (`continue_stored_responses=True`).

    stored = StoredConversations()
    stored.remember("resp_1", "gpt-4.1", (question, answer))       # the API stored this conversation
    stored.continuation("gpt-4.1", [question, answer, follow_up])   # -> ("resp_1", [follow_up])
    stored.forget("resp_1")                                         # the server no longer has it (a 400)

An API that keeps its responses (OpenAI Responses with `store`) lets a request send only what is new
since a stored response, plus that response's id. This is the bookkeeping: which conversation ended in
which stored response, found again by its last assistant message, and only when the new messages extend
it exactly (same model, same messages before). It holds the last `size` conversations (a run needs one;
concurrent runs one each) and is safe to share between threads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from ..core.types import Message

__all__ = ["StoredConversations"]


class StoredConversations:
    """A bounded table: an assistant message -> (stored response id, model, the conversation it ended)."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._entries: OrderedDict[tuple, tuple[str, str, tuple[Message, ...]]] = OrderedDict()
        self._lock = threading.Lock()

    def continuation(self, model: str, messages: Sequence[Message]) -> tuple[str, list[Message]] | None:
        """(stored response id, the messages to send) when `messages` extend a stored response's
        conversation exactly, else None. Leading system messages are sent again: the API does not carry
        instructions over."""
        last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "assistant"), None)
        if last is None or last == len(messages) - 1:
            return None
        with self._lock:
            entry = self._entries.get(_fingerprint(messages[last]))
        if entry is None:
            return None
        response_id, stored_model, conversation = entry
        if stored_model != model or len(conversation) != last + 1 or tuple(messages[:last + 1]) != conversation:
            return None
        system = [m for m in messages[:1] if m.role == "system"]
        return response_id, system + list(messages[last + 1:])

    def remember(self, response_id: str, model: str, conversation: tuple[Message, ...]) -> None:
        """Keep `conversation`, whose last message is the stored response `response_id` (oldest out first)."""
        key = _fingerprint(conversation[-1])
        with self._lock:
            self._entries[key] = (response_id, model, conversation)
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def forget(self, response_id: str) -> None:
        with self._lock:
            for key in [k for k, entry in self._entries.items() if entry[0] == response_id]:
                del self._entries[key]


def _fingerprint(message: Message) -> tuple:
    """What identifies an assistant message cheaply: its text and its calls' ids and names."""
    return message.content, tuple((c.id, c.name) for c in message.tool_calls)
