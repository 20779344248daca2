"""Replay, fork and diff: a run's model turns and tool results, played back offline or branched.

    again = replay(run, tools)                    # offline: the same history, byte for byte
    other = fork(run, step=3, model=cheaper)      # the same first 2 steps, then another model
    print(diff(run, other))                       # where the two first differ

A Run records what the model said (`run.turns`, every ModelTurn as it came) and what the tools answered
(`run.results`). `replay` runs the loop again with a model that plays the turns back and stand-ins for
the tools that answer with the recorded results (by call id), so nothing is sent and no tool runs; the
gates, limits and envelopes run as before, so with the same settings the history comes out the same,
byte for byte. A saved run (`Run.to_json()`, read back with `checkpoint`) replays the same way.

`fork(run, step=k, model=...)` keeps the history as it was before the k-th model call and runs the
rest with another model (or other tools or settings): its counters start again at 0.
`diff(a, b)` names the first message where two runs part, and the model call of `a` it belongs to.

Steps are the run's own model calls, counted from 1 in every one of them: a run that continues a Thread
counts from its own first call (not the thread's), and the loop's own final message naming a limit is
not a step (no model wrote it). Each takes a Run, the text of `Run.to_json()` or its json.loads.

replay sends nothing: a `compact=Summarize(model)` setting plays back the summaries the run recorded
(`Run.compaction`) instead of asking its model. It refuses, with ReplayError, what it cannot reproduce:
a run that called a tool `tools` does not hold (its calls would be answered "unknown tool"), a paused
run (resume it instead), and a replay that came out otherwise than the run (other settings, other tools'
schemas): the error carries the replayed run and says where the two part.

Left out on purpose: replaying side effects (state updates a tool made are not re-made) and fuzzy
matching (a diff is exact: one changed character is a divergence).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, NamedTuple, Sequence

from ..core.checkpoint import Paused, read_state, restored_fields
from ..core.drive import run
from ..core.errors import ReplayError, ScriptError, ToolFailure
from ..core.policies import LimitHit
from ..core.runs import Run, StopReason, Thread
from ..core.tools import Tool
from ..core.types import Message, ModelTurn, ToolResult

_CONTEXT = "replay_context"


class Playback:
    """A model that answers with recorded turns, in order, and says so when asked for one more."""

    def __init__(self, turns: Sequence[ModelTurn], name: str = "playback"):
        self.turns, self.name, self.calls = list(turns), name, 0

    def complete(self, messages, tools, options) -> ModelTurn:
        if self.calls >= len(self.turns):
            raise ScriptError(f"{self.name}: asked for turn {self.calls + 1}, but the run recorded "
                              f"{len(self.turns)}: the replay took another path")
        self.calls += 1
        return self.turns[self.calls - 1]

    async def acomplete(self, messages, tools, options) -> ModelTurn:
        return self.complete(messages, tools, options)


def stand_ins(tools: Sequence[Tool], results: Sequence[ToolResult]) -> list[Tool]:
    """Copies of `tools` (names, schemas, flags kept) that answer each call with its recorded result."""
    by_id = {r.call_id: r for r in results}

    def answer(**kwargs: Any) -> Any:
        call_id = kwargs[_CONTEXT].call_id
        recorded = by_id.get(call_id)
        if recorded is None:
            raise ToolFailure("not_recorded", f"no recorded result for call {call_id}: the replay took another path")
        if recorded.ok:
            return recorded.result
        error = recorded.error or {}
        raise ToolFailure(error.get("kind") or "tool_error", error.get("message") or "", error.get("path"),
                          error.get("keyword"))
    return [dataclasses.replace(t, fn=answer, is_async=False, context_param=_CONTEXT, _convert=None)
            for t in tools]


def as_run(value: Any, what: str = "run") -> Run:
    """A Run, from a Run, the text of `Run.to_json()` or its json.loads (StateError when that is damaged)."""
    if isinstance(value, Run):
        return value
    if isinstance(value, (str, bytes, dict)):
        return load(value)
    raise TypeError(f"{what}={value!r}: give a Run, or the text (or json.loads) of Run.to_json()")


def replay(recorded: Run | str | dict, tools: Sequence[Tool], **settings: Any) -> Run:
    """Run `recorded` again offline: its turns played back, its tools answered from its results.

    `tools` are the run's tools (only their names, schemas and flags are used; none is called);
    `settings` are run()'s keywords (system, limits, compact, ...), which should be the recorded run's.
    ReplayError when the replay cannot come out as the run did (see the module docstring)."""
    recorded = as_run(recorded, "recorded")
    if recorded.pending is not None:
        raise ReplayError("this run is paused: resume it (agentkit.resume), then replay the run that returns")
    _check_tools(recorded, tools)
    hook = settings.get("compact")
    if hook is not None and hasattr(hook, "replaying"):  # its own model is not asked again either
        settings["compact"] = hook.replaying(recorded.compaction)
    prefix = recorded.messages[:recorded.start_index + _prompt_length(recorded)]
    thread = Thread(prefix[:recorded.start_index])
    again = run(Playback(recorded.turns), prefix[recorded.start_index:], stand_ins(tools, recorded.results),
                thread=thread, **settings)
    parted = diff(recorded, again)
    if parted is not None:
        raise ReplayError(f"the replay came out otherwise than the run (other settings or tools?): {parted}", again)
    return again


def _check_tools(recorded: Run, tools: Sequence[Tool]) -> None:
    """Every tool the run's calls found must be among `tools` (a call the run answered "unknown tool" needs none)."""
    given = {t.name for t in tools}
    lookups = {r.call_id for r in recorded.results if r.error_kind in ("unknown_tool", "stale_tool")}
    needed = {c.name: step for step, t in enumerate(recorded.turns, 1) for c in reversed(t.tool_calls)
              if c.id not in lookups}
    missing = sorted(name for name in needed if name not in given)
    if missing:
        raise ReplayError(f"replay needs the run's tools: {', '.join(missing)} (called at step "
                          f"{min(needed[m] for m in missing)}) not given; pass the tools the run had")


def _prompt_length(r: Run) -> int:
    """How many of the run's own messages came before its first model turn (the prompt)."""
    new = r.new_messages
    return next((i for i, m in enumerate(new) if m.role == "assistant"), len(new))


def model_steps(r: Run) -> list[int]:
    """The index in `r.messages` of each of the run's own model answers, step 1 first (the loop's own
    final message naming a limit is not one)."""
    answers = [i for i in range(r.start_index, len(r.messages)) if r.messages[i].role == "assistant"]
    if r.turns:
        return answers[:len(r.turns)]
    if answers and r.limit is not None and r.messages[answers[-1]].content == r.limit.message():
        answers.pop()
    return answers


def fork(recorded: Run | str | dict, step: int, model: Any, tools: Sequence[Tool] = (), **settings: Any) -> Run:
    """Re-run `recorded` from its step `step` (1 = its first model call) with `model`, `tools`, `settings`.

    The history before that model call is kept as it was; the new run continues from it."""
    recorded = as_run(recorded, "recorded")
    answers = model_steps(recorded)
    if not isinstance(step, int) or isinstance(step, bool) or not 1 <= step <= max(len(answers), 1):
        raise ValueError(f"fork(step={step!r}): the run has steps 1 to {len(answers)}")
    cut = answers[step - 1] if answers else len(recorded.messages)
    forked = run(model, None, tools, thread=Thread(recorded.messages[:cut]), **settings)
    forked.trace.record("fork", run_id=recorded.run_id, step=step, messages=cut)
    return forked


class Divergence(NamedTuple):
    """Where two runs first differ: the message index, the model call of the first run it belongs to (1 = its
    first; 0: before it, in the thread it continued), and each side's message."""

    index: int
    step: int
    a: Message | None
    b: Message | None

    def __str__(self) -> str:
        return (f"first divergence at message {self.index} (step {self.step}):\n"
                f"  a: {_describe(self.a)}\n  b: {_describe(self.b)}")


def diff(a: Run | str | dict, b: Run | str | dict) -> Divergence | None:
    """The first message where runs `a` and `b` differ (None when their histories are identical); its step
    is counted in `a`'s model calls, as fork counts them."""
    a, b = as_run(a, "a"), as_run(b, "b")
    for index in range(max(len(a.messages), len(b.messages))):
        ma = a.messages[index] if index < len(a.messages) else None
        mb = b.messages[index] if index < len(b.messages) else None
        if _bytes(ma) != _bytes(mb):
            step = 0 if index < a.start_index else 1 + sum(i < index for i in model_steps(a))
            return Divergence(index, step, ma, mb)
    return None


def history_bytes(r: Run) -> bytes:
    """The history as bytes (JSON of every message): what "byte-identical" compares."""
    return json.dumps([m.to_dict() for m in r.messages], ensure_ascii=False, sort_keys=True).encode()


def _bytes(m: Message | None) -> str | None:
    return None if m is None else json.dumps(m.to_dict(), ensure_ascii=False, sort_keys=True)


def _describe(m: Message | None) -> str:
    if m is None:
        return "(no message: the run ended)"
    if m.tool_calls:
        return f"{m.role} calls " + ", ".join(f"{c.name}({c.arguments_json()})" for c in m.tool_calls)
    text = (m.content or "").replace("\n", " ")
    return f"{m.role}: {text[:100]}{'…' if len(text) > 100 else ''}"


def load(state: str | dict) -> Run:
    """A Run read back from `Run.to_json()` (its history, turns, results and counters; no trace)."""
    data = read_state(state)
    loaded = Run(**restored_fields(data))
    loaded.stop_reason = StopReason(data["stop_reason"]) if data.get("stop_reason") else None
    loaded.output = data.get("output")
    loaded.pending = Paused.from_dict(data["pending"]) if data.get("pending") else None
    loaded.limit = LimitHit(*data["limit"]) if data.get("limit") else None
    return loaded
