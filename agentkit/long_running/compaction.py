"""Context compaction: what the model is sent once the conversation grows long, without ever breaking it.

    run = agentkit.run(model, prompt, tools=tools, thread=thread, compact=DropOldest(keep_rounds=4))
    run.trace.of("compact")   # each compaction: the strategy, messages and characters before and after

The hook `compact=` of `run` / `arun` is asked before every model call. It changes what is *sent*;
`run.messages` keeps the whole history (a Thread too), so a compaction can be replayed, compared or
undone. Three strategies ship:

    DropOldest(keep_rounds=k)        drop the oldest earlier turns, whole, keeping the newest k rounds of them
    ElideToolResults(keep_last=k)    replace earlier turns' tool results with a short marker; the newest k stay
    Summarize(model, keep_rounds=k)  replace what DropOldest would drop with a summary the model writes

What each may change, and why (the invariants of `agentkit.core.history`): only the **earlier turns**.
The current turn — the request and every round since it, the tool cycle the model is in — is sent whole:
a model that no longer sees a result it asked for asks again (with `keep_rounds=1` inside a cycle of four
calls, a model calls the dropped tools again until the step cap), and providers bind reasoning state to
what came before it. Anthropic's models with preserved thinking (Claude Opus 5.5, Sonnet 5.5, Fable 5.1)
refuse a kept thinking block once anything before it changed: "Invalid `signature` in `thinking` block.
The block is bound to a different conversation." (platform.claude.com, build-with-claude/preserved-thinking).
So every strategy

- decides from the earlier turns alone, so every request of one tool cycle has the same prefix — the
  cycle's own thinking stays bound to it, also after a pause and a restart (a strategy's state, such as
  Summarize's summary, is saved with the run: `Run.compaction`);
- leaves the reasoning state out of the earlier turns it keeps after the first change, as Anthropic's
  documentation says to do once the history was edited ("remove the thinking"); no provider needs an
  earlier turn's reasoning back (Gemini checks the current turn's signatures, OpenAI Responses a call's
  reasoning item only when the call is sent by its item id, which goes with the state). What the state
  holds that is not reasoning stays: Responses' `phase` on each assistant message, without which GPT-5.4
  and later take their earlier commentary for an answer and stop early (`ReasoningState.without_reasoning`).

It does not use Anthropic's `thinking.block_binding.prefix_mismatch_behavior: "drop_block"` (a beta that
drops the invalid blocks server-side): with a stable prefix nothing is invalid, and the documentation warns
that dropping costs more and can change the output.

A *round* is one model answer: an assistant message with the tool messages that answer its calls, or a
final answer; a *turn* is a user message and everything up to the next one. Each strategy compacts only
once the earlier turns are longer than `over_chars` characters (0: always). The kit's strategies answer
the loop with a `Plan` (`plan(messages, index)`), so a step costs the same however long the run: what was
measured once is not measured again (`agentkit.core.history.HistoryIndex`). Called as a function,
`strategy(messages)` returns the list that would be sent.

Left out on purpose: compacting inside the current tool cycle (a single task of a thousand tool calls is
kept whole: a budget or the step cap bounds it), token counting with the provider's tokenizer (characters
are a stand-in; about 4 per token in English), and compacting the tool definitions, re-sent at every step.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from ..core.errors import ScriptError, StateError
from ..core.history import (
    CompactedRequests,
    CompactionError,
    Compactor,
    HistoryIndex,
    Plan,
    check_history,
    compact_request,
    materialize,
    message_chars,
    split_history,
)
from ..core.types import Message, ModelOptions

__all__ = ["DropOldest", "ElideToolResults", "Summarize", "check_history", "split_history", "message_chars",
           "CompactionError", "Compactor", "compact_request", "CompactedRequests", "HistoryIndex", "Plan"]


class _Strategy:
    """What the three share: the call as a function, and one Plan per tool cycle (cached by its key)."""

    over_chars: int
    _key: Any
    _plan: Plan | None

    def __call__(self, messages: list[Message]) -> list[Message]:
        return materialize(self.plan(messages, HistoryIndex(messages)), messages)

    def plan(self, messages: Sequence[Message], index: HistoryIndex) -> Plan | None:
        """What to send for `messages` (None: all of it), decided from the earlier turns alone."""
        request = index.request
        if request is None or index.size_before(request) <= self.over_chars:
            return None
        # The same earlier turns give the same plan: checked once, and the prefix stays the same.
        key = (request, id(messages[request]), id(messages[0]), index.size_before(request))
        if key != getattr(self, "_key", None):
            self._key, self._plan = key, self._make(messages, index, request)
        return self._plan

    def _make(self, messages: Sequence[Message], index: HistoryIndex, request: int) -> Plan | None:
        """The plan for the earlier turns messages[:request] (read only as far as needed: once per cycle)."""
        raise NotImplementedError


def _cut(index: HistoryIndex, request: int, keep_rounds: int, keep_turns: int) -> int | None:
    """Where the kept earlier turns begin (the current request when none is kept): the newest turn start
    that keeps at least `keep_turns` earlier turns and `keep_rounds` model answers of them; None when
    nothing would be dropped."""
    users = index.users  # the last is the request: the starts of the earlier turns come before it
    kept = 0
    while True:  # from the newest earlier turn back, as far as the kept turns must go (not the whole list)
        begin = users[-1 - kept]
        if kept >= keep_turns and index.answers_between(begin, request) >= keep_rounds:
            break
        if kept + 1 >= len(users):
            return None  # every earlier turn is needed
        kept += 1
    systems = sum(1 for i in index.systems if i < begin)
    return begin if begin - systems > 0 else None  # something other than system messages goes


def _without_reasoning(messages: Sequence[Message]) -> list[Message]:
    """The messages without their reasoning; a message's own fields kept with it stay (Responses' phase)."""
    return [replace(m, reasoning=m.reasoning.without_reasoning()) if m.reasoning is not None else m
            for m in messages]


def _systems(messages: Sequence[Message], index: HistoryIndex, before: int) -> list[Message]:
    return [messages[i] for i in index.systems if i < before]


def _kept(messages: Sequence[Message], begin: int, request: int) -> list[Message]:
    """The earlier turns kept (messages[begin:request]) without their system messages and reasoning state."""
    return _without_reasoning([m for m in messages[begin:request] if m.role != "system"])


@dataclass(eq=False)
class DropOldest(_Strategy):
    """Drop the oldest earlier turns, whole, while the earlier turns kept still hold at least `keep_rounds`
    rounds and `keep_turns` turns (0 and 0: only the current turn is sent). The current turn is never cut."""

    keep_rounds: int = 4
    keep_turns: int = 0
    over_chars: int = 0
    name: str = field(default="drop_oldest", init=False)

    def __post_init__(self):
        _check_counts(self, keep_rounds=0, keep_turns=0)

    def _make(self, messages: Sequence[Message], index: HistoryIndex, request: int) -> Plan | None:
        cut = _cut(index, request, self.keep_rounds, self.keep_turns)
        if cut is None:
            return None
        return Plan((*_systems(messages, index, request), *_kept(messages, cut, request)), request)

    def split(self, messages: list[Message]) -> tuple[list[Message], list[Message]]:
        """(what is kept, what is dropped), each in the history's order."""
        index = HistoryIndex(messages)
        request = index.request
        cut = _cut(index, request, self.keep_rounds, self.keep_turns) if request is not None else None
        if cut is None:
            return list(messages), []
        return materialize(self._make(messages, index, request), list(messages)), \
            [m for m in messages[:cut] if m.role != "system"]


@dataclass(eq=False)
class ElideToolResults(_Strategy):
    """Replace every tool result of the earlier turns but the newest `keep_last` with a short marker naming
    what was there. The tool message itself stays (its call keeps its one answer); only its text shrinks.
    The current turn's results, which the model is reading, always stay."""

    keep_last: int = 3
    marker: str = "[result elided to save context: {chars} characters]"
    over_chars: int = 0
    name: str = field(default="elide_tool_results", init=False)
    _done: list[Message] = field(default_factory=list, init=False, repr=False)  # earlier messages, as sent
    _changed: int | None = field(default=None, init=False, repr=False)  # the first position changed
    _seen: Any = field(default=None, init=False, repr=False)  # the last earlier message `_done` covers

    def __post_init__(self):
        _check_counts(self, keep_last=0)

    def _make(self, messages: Sequence[Message], index: HistoryIndex, request: int) -> Plan | None:
        earlier = list(messages[:request])  # its head is every earlier message: built once per cycle
        first = next((i for i, m in enumerate(earlier) if m.role != "system"), None)
        if first is None or earlier[first].role != "user":
            return None  # the model speaks first in this history: nothing may change before its turn
        done = self._done
        if len(done) > len(earlier) or (done and earlier[len(done) - 1] is not self._seen):
            done, self._changed = [], None  # another history: start over
        results = [i for i in index.tools if i < request]
        elide = set(results[:max(0, len(results) - self.keep_last)])
        done = done + earlier[len(done):]  # the messages new to the earlier turns, as they came
        for i in sorted(elide):
            text = earlier[i].content or ""
            short = self.marker.format(chars=len(text))
            if done[i] is earlier[i] and len(short) < len(text):
                done[i] = replace(earlier[i], content=short)
                self._changed = i if self._changed is None else min(self._changed, i)
        if self._changed is not None:  # after the first change, the earlier turns go without reasoning state
            done[self._changed:] = _without_reasoning(done[self._changed:])
        self._done, self._seen = done, earlier[-1] if earlier else None
        return Plan(tuple(done), request) if self._changed is not None else None


@dataclass(eq=False)
class Summarize(_Strategy):
    """Replace what `DropOldest(keep_rounds, keep_turns)` would drop with a summary written by `model`
    (one extra model call, without tools). The summary goes in a user message where the dropped turns
    were, and is extended, not rewritten, as more is dropped: each message is summarised once.

    Its summaries are part of the run's saved state (`checkpoint()`, in `Run.compaction`): a run resumed
    in a fresh process sends the same summary, and `replay` plays the recorded summaries back instead of
    asking the model (`replaying`). The summary call is `model.complete`, synchronous also under `arun`
    (a compaction hook is a plain function)."""

    model: Any
    keep_rounds: int = 2
    keep_turns: int = 0
    over_chars: int = 0
    instructions: str = ("Summarise the conversation below for the assistant who will continue it: the "
                         "user's requests, each tool's findings (numbers and names exactly), and what is "
                         "still open. At most 120 words.")
    name: str = field(default="summarize", init=False)
    calls: int = field(default=0, init=False)  # summaries written (model calls made)
    _summaries: list[list] = field(default_factory=list, init=False, repr=False)  # [cut, text], in order
    _last: Any = field(default=None, init=False, repr=False)  # the last message summarised (this history?)
    _recorded: dict | None = field(default=None, init=False, repr=False)  # replaying: cut -> text

    def __post_init__(self):
        _check_counts(self, keep_rounds=0, keep_turns=0)
        if not (hasattr(self.model, "complete") or callable(self.model)):
            raise TypeError(f"Summarize(model={self.model!r}): give a model with complete(messages, tools, options)")

    def _make(self, messages: Sequence[Message], index: HistoryIndex, request: int) -> Plan | None:
        cut = _cut(index, request, self.keep_rounds, self.keep_turns)
        if cut is None:
            return None
        covered = self._summaries[-1][0] if self._summaries else 0
        if covered > cut or (covered and self._last is not None and messages[covered - 1] is not self._last
                             and messages[covered - 1] != self._last):
            self._summaries, covered = [], 0  # another history: start over
        if cut > covered:
            new = [m for m in messages[covered:cut] if m.role != "system"]
            self._summaries.append([cut, self._write(new, cut)])
        self._last = messages[cut - 1]
        note = Message.user(f"[Summary of the earlier conversation, written to save context]\n{self._summaries[-1][1]}")
        return Plan((*_systems(messages, index, request), note, *_kept(messages, cut, request)), request)

    def _write(self, new: list[Message], cut: int) -> str:
        if self._recorded is not None:  # a replay: the summary the run was sent, or another path
            if cut not in self._recorded:
                raise ScriptError(f"summarize: the replay asks for a summary of the first {cut} messages, which "
                                  "the run did not write: the replay took another path")
            return self._recorded[cut]
        summary = self._summaries[-1][1] if self._summaries else ""
        lines = [f"Summary so far: {summary}"] if summary else []
        for m in new:
            calls = "; ".join(f"calls {c.name}({c.arguments_json()})" for c in m.tool_calls)
            lines.append(f"{m.role}: {' '.join(x for x in (m.content or '', calls) if x)}")
        request = [Message.system(self.instructions), Message.user("\n".join(lines))]
        complete = self.model.complete if hasattr(self.model, "complete") else self.model
        turn = complete(request, (), ModelOptions(tool_choice="none"))
        self.calls += 1
        return (turn.text or "").strip() or "(no summary)"

    # -- what a saved run keeps of it ---------------------------------------------------------------------

    def checkpoint(self) -> dict:
        """The summaries written so far, as plain JSON ({"summaries": [[cut, text], ...]})."""
        return {"strategy": self.name, "summaries": [list(s) for s in self._summaries]}

    def restore(self, state: dict | None) -> None:
        """Take back the summaries of a saved run (StateError when they are not a checkpoint of this kind)."""
        self._summaries, self._last, self._key = _summaries_of(state), None, None

    def replaying(self, state: dict | None) -> Summarize:
        """A copy that answers with the summaries `state` recorded, never asking the model."""
        twin = copy.copy(self)
        twin._summaries, twin._last, twin._key, twin._plan = [], None, None, None
        twin._recorded = {cut: text for cut, text in _summaries_of(state)}
        return twin


def _summaries_of(state: Any) -> list[list]:
    if state is None:
        return []
    summaries = state.get("summaries") if isinstance(state, dict) else None
    if state.get("strategy") != "summarize" if isinstance(state, dict) else True:
        raise StateError("compaction.strategy", "is not a checkpoint of Summarize")
    if not isinstance(summaries, list) or not all(
            isinstance(s, list) and len(s) == 2 and isinstance(s[0], int) and not isinstance(s[0], bool)
            and s[0] > 0 and isinstance(s[1], str) for s in summaries):
        raise StateError("compaction.summaries", "is not a list of [messages covered, summary text]")
    if [s[0] for s in summaries] != sorted({s[0] for s in summaries}):
        raise StateError("compaction.summaries", "do not cover more and more of the history, in order")
    return [list(s) for s in summaries]


def _check_counts(strategy: Any, **minimums: int) -> None:
    for name, minimum in minimums.items():
        value = getattr(strategy, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise ValueError(f"{type(strategy).__name__}({name}={value!r}): use a whole number >= {minimum}")
    over = strategy.over_chars
    if not isinstance(over, int) or isinstance(over, bool) or over < 0:
        raise ValueError(f"{type(strategy).__name__}(over_chars={over!r}): use a whole number of characters >= 0")
