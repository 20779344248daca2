"""The invariants of a conversation, and the check of what a `compact=` hook would send.

A *round* is an assistant message with its tool calls and the results that answer them; a *turn* is a
user message and everything up to the next one (`split_history` cuts a history into them). Whatever is
sent to a model keeps these (`check_history` says, in one sentence, which one a history breaks):

1. a call is never separated from its result: rounds are kept or dropped whole;
2. reasoning state the provider requires rides on its assistant message, so it is kept with its round
   or dropped together with it (never stripped from a kept round, never left without its calls);
3. the system prompt and the current turn's request are kept, and the newest round (whose results the
   model is about to read) too;
4. what is sent starts, after the system prompt, with a user message: Gemini answers a history that
   starts with a function call with a 400, "Please ensure that function call turn comes immediately after
   a user turn or after a function response turn." (google-gemini/gemini-cli issue 11814).

The loop asks a `compact=` hook what to send before each model call and refuses an answer that breaks
one of them (`compact_request`); the strategies that ship are in `agentkit.long_running.compaction`.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .types import Message

#: A compaction hook: the whole history in, what to send out.
Compactor = Callable[[list[Message]], list[Message]]


def message_chars(messages: Sequence[Message]) -> int:
    """Characters of content and call arguments: the stand-in for tokens that triggers a compaction."""
    return sum(len(m.content or "") + sum(len(c.arguments_json()) + len(c.name) for c in m.tool_calls)
               for m in messages)


Groups = list[list[Message]]


def split_history(messages: Sequence[Message]) -> tuple[list[Message], Groups, list[Message], Groups]:
    """(system messages, earlier turns, the current request, the current turn's rounds).

    An earlier turn is a list starting with its user message; a round is an assistant message followed by
    the tool messages answering it. The current request is the last user message (and anything before
    the first user message that is not a system prompt, kept with it)."""
    system = [m for m in messages if m.role == "system"]
    rest = [m for m in messages if m.role != "system"]
    last_user = max((i for i, m in enumerate(rest) if m.role == "user"), default=None)
    if last_user is None:
        return system, [], [], _rounds(rest)
    earlier: list[list[Message]] = []
    for m in rest[:last_user]:
        if m.role == "user" or not earlier:
            earlier.append([m])
        else:
            earlier[-1].append(m)
    return system, earlier, [rest[last_user]], _rounds(rest[last_user + 1:])


def _rounds(messages: Sequence[Message]) -> list[list[Message]]:
    rounds: list[list[Message]] = []
    for m in messages:
        if m.role == "tool" and rounds:
            rounds[-1].append(m)
        else:
            rounds.append([m])
    return rounds



# -- the invariants, checked on what a hook returns ---------------------------------------------------

def check_history(original: Sequence[Message], sent: Sequence[Message]) -> str | None:
    """What is wrong with sending `sent` for the history `original`, in one sentence; None if nothing.

    Checks the invariants above: every call in `sent` has its one result right after its turn and every
    result its call; assistant messages keep their reasoning state as it was; the system prompt, the
    current request and the newest round are all there; the first message after the system prompt is
    the user's."""
    answered: dict[str, int] = {}
    pending: set[str] = set()
    for m in sent:
        if m.role == "tool":
            if m.tool_call_id not in pending:
                return f"a tool result ({m.tool_call_id}) is sent without the call it answers right before it"
            pending.discard(m.tool_call_id)
            answered[m.tool_call_id] = answered.get(m.tool_call_id, 0) + 1
            continue
        if pending:
            return f"call {sorted(pending)[0]} is sent without its result"
        pending = {c.id for c in m.tool_calls}
    if pending:
        return f"call {sorted(pending)[0]} is sent without its result"
    by_calls = {tuple(c.id for c in m.tool_calls): m for m in original if m.tool_calls}
    for m in sent:
        if m.tool_calls and (kept := by_calls.get(tuple(c.id for c in m.tool_calls))) is not None \
                and kept.reasoning != m.reasoning:
            return "an assistant message with calls was sent without the reasoning state it came with"
    system, _, request, rounds = split_history(list(original))
    for m in system + request + (rounds[-1] if rounds else []):
        if not any(s is m or s == m for s in sent):
            what = {"system": "the system prompt", "user": "the current request"}.get(m.role, "the newest round")
            return f"{what} is missing from what is sent"
    after_system = [m for m in sent if m.role != "system"]
    if request and after_system and after_system[0].role != "user":
        return "what is sent starts with the model speaking; Gemini refuses a call that no user turn precedes"
    return None


def strategy_name(hook: Any) -> str:
    return getattr(hook, "name", None) or getattr(hook, "__name__", None) or type(hook).__name__


class CompactionError(ValueError):
    """A compaction hook returned a history that breaks an invariant (see check_history)."""


def compact_request(hook: Compactor, messages: list[Message], trace: Any, step: int) -> list[Message]:
    """Ask the hook what to send for `messages`, check it, and record the compaction in the trace."""
    given = list(messages)
    sent = hook(given)
    if sent is None or sent is given or (len(sent) == len(given) and all(a is b for a, b in zip(sent, given))):
        return messages  # nothing compacted
    sent = list(sent)
    if not all(isinstance(m, Message) for m in sent):
        raise CompactionError(f"compact hook {strategy_name(hook)!r} returned something other than Messages")
    problem = check_history(messages, sent)
    if problem is not None:
        raise CompactionError(f"compact hook {strategy_name(hook)!r}: {problem}")
    trace.record("compact", step=step, strategy=strategy_name(hook), messages_before=len(messages),
                 messages_after=len(sent), chars_before=message_chars(messages), chars_after=message_chars(sent))
    return sent
