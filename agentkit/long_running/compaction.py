"""Context compaction: what the model is sent once the history grows long, without ever breaking it.

    run = agentkit.run(model, prompt, tools=tools, compact=ElideToolResults(keep_last=2))
    run.trace.of("compact")   # each compaction: the strategy, messages and characters before and after

The hook `compact=` of `run` / `arun` is any function `messages -> messages`, asked before every model
call. It changes what is *sent*; `run.messages` keeps the whole history (a Thread too), so a compaction
can be replayed, compared or undone. Three strategies ship:

    DropOldest(keep_rounds=k)        drop the oldest whole turns, then the oldest rounds of the current one
    ElideToolResults(keep_last=k)    replace old tool results with a short marker; the newest k stay verbatim
    Summarize(model, keep_rounds=k)  replace what DropOldest would drop with a summary the model writes

A *round* is an assistant message with its tool calls and the results that answer them; a *turn* is a
user message and everything up to the next one (`agentkit.core.history.split_history`). Every strategy
keeps the invariants of `agentkit.core.history` (a call never without its result, reasoning state with
its round, the request and the newest round kept, a user message first), and the loop refuses a hook's
answer that breaks one (`check_history`).

Each strategy compacts only once the messages are longer than `over_chars` characters (0: always).
Left out on purpose: token counting with the provider's tokenizer (characters are a stand-in; about
4 per token in English), and compacting the tool definitions, which are re-sent whole at every step.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from ..core.history import CompactionError, Compactor, check_history, compact_request, message_chars, split_history
from ..core.types import Message, ModelOptions

__all__ = ["DropOldest", "ElideToolResults", "Summarize", "check_history", "split_history", "message_chars",
           "CompactionError", "Compactor", "compact_request"]


def _flat(groups: Sequence[Sequence[Message]]) -> list[Message]:
    return [m for group in groups for m in group]


@dataclass
class DropOldest:
    """Drop the oldest whole turns, then the oldest rounds of the current turn, keeping the newest
    `keep_turns` earlier turns and the newest `keep_rounds` rounds (at least 1)."""

    keep_rounds: int = 4
    keep_turns: int = 0
    over_chars: int = 0
    name: str = field(default="drop_oldest", init=False)

    def __post_init__(self):
        _check_counts(self, keep_rounds=1, keep_turns=0)

    def __call__(self, messages: list[Message]) -> list[Message]:
        if message_chars(messages) <= self.over_chars:
            return messages
        kept, _ = self.split(messages)
        return kept

    def split(self, messages: list[Message]) -> tuple[list[Message], list[Message]]:
        """(what is kept, what is dropped), each in the history's order."""
        system, earlier, request, rounds = split_history(messages)
        cut_turns = max(0, len(earlier) - self.keep_turns)
        cut_rounds = max(0, len(rounds) - self.keep_rounds)
        dropped = _flat(earlier[:cut_turns]) + _flat(rounds[:cut_rounds])
        if not request:  # no user message at all: nothing may be dropped, or the model would speak first
            return list(messages), []
        kept = system + _flat(earlier[cut_turns:]) + request + _flat(rounds[cut_rounds:])
        return kept, dropped


@dataclass
class ElideToolResults:
    """Replace every tool result but the newest `keep_last` with a short marker naming what was there.
    The tool message itself stays (its call keeps its one answer); only its text shrinks. The newest
    round's results, which the model is about to read, always stay."""

    keep_last: int = 3
    marker: str = "[result elided to save context: {chars} characters]"
    over_chars: int = 0
    name: str = field(default="elide_tool_results", init=False)

    def __post_init__(self):
        _check_counts(self, keep_last=0)

    def __call__(self, messages: list[Message]) -> list[Message]:
        if message_chars(messages) <= self.over_chars:
            return messages
        newest = max((i for i, m in enumerate(messages) if m.tool_calls), default=len(messages))
        positions = [i for i, m in enumerate(messages) if m.role == "tool"]
        old = [i for i in positions[:max(0, len(positions) - self.keep_last)] if i < newest]
        if not old:
            return messages
        out = list(messages)
        for i in old:
            text = out[i].content or ""
            short = self.marker.format(chars=len(text))
            if len(short) < len(text):
                out[i] = replace(out[i], content=short)
        return out


@dataclass
class Summarize:
    """Replace what `DropOldest(keep_rounds, keep_turns)` would drop with a summary written by `model`
    (one extra model call, without tools). The summary goes in a user message where the dropped messages
    were, and is extended, not rewritten, as more is dropped: each message is summarised once. The summary
    call is `model.complete`, synchronous also under `arun` (a compaction hook is a plain function)."""

    model: Any
    keep_rounds: int = 2
    keep_turns: int = 0
    over_chars: int = 0
    instructions: str = ("Summarise the conversation below for the assistant who will continue it: the "
                         "user's requests, each tool's findings (numbers and names exactly), and what is "
                         "still open. At most 120 words.")
    name: str = field(default="summarize", init=False)
    calls: int = field(default=0, init=False)  # summaries written (model calls made)
    _done: list[Message] = field(default_factory=list, init=False, repr=False)
    _summary: str = field(default="", init=False, repr=False)

    def __post_init__(self):
        _check_counts(self, keep_rounds=1, keep_turns=0)
        if not (hasattr(self.model, "complete") or callable(self.model)):
            raise TypeError(f"Summarize(model={self.model!r}): give a model with complete(messages, tools, options)")

    def __call__(self, messages: list[Message]) -> list[Message]:
        if message_chars(messages) <= self.over_chars:
            return messages
        kept, dropped = DropOldest(self.keep_rounds, self.keep_turns).split(messages)
        if not dropped:
            return messages
        if dropped[:len(self._done)] != self._done:  # another history: start over
            self._done, self._summary = [], ""
        new = dropped[len(self._done):]
        if new:
            self._summary = self._write(new)
            self._done = list(dropped)
        note = Message.user(f"[Summary of the earlier conversation, written to save context]\n{self._summary}")
        # before the first kept turn when whole turns went, else just before the current request (not after
        # it: the request stays the user text the kept calls answer, which reasoning state may be bound to)
        users = [i for i, m in enumerate(kept) if m.role == "user"]
        at = users[0] if any(m.role == "user" for m in dropped) else users[-1]
        return kept[:at] + [note] + kept[at:]

    def _write(self, new: list[Message]) -> str:
        lines = [f"Summary so far: {self._summary}"] if self._summary else []
        for m in new:
            calls = "; ".join(f"calls {c.name}({c.arguments_json()})" for c in m.tool_calls)
            lines.append(f"{m.role}: {' '.join(x for x in (m.content or '', calls) if x)}")
        request = [Message.system(self.instructions), Message.user("\n".join(lines))]
        complete = self.model.complete if hasattr(self.model, "complete") else self.model
        turn = complete(request, (), ModelOptions(tool_choice="none"))
        self.calls += 1
        return (turn.text or "").strip() or "(no summary)"


def _check_counts(strategy: Any, **minimums: int) -> None:
    for name, minimum in minimums.items():
        value = getattr(strategy, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise ValueError(f"{type(strategy).__name__}({name}={value!r}): use a whole number >= {minimum}")
    over = strategy.over_chars
    if not isinstance(over, int) or isinstance(over, bool) or over < 0:
        raise ValueError(f"{type(strategy).__name__}(over_chars={over!r}): use a whole number of characters >= 0")
