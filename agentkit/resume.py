"""Pause and resume: an approval gate that decides later, even after a restart.

    def approve(call, ctx):
        return Pause() if call.name == "send_payment" else True

    paused = agentkit.run(model, prompt, tools=tools, approve=approve)
    paused.stop_reason            # StopReason.PAUSED; paused.pending.waiting names the calls
    saved = paused.to_json()      # ... store it, restart the kernel, read it back ...
    run = agentkit.resume(saved, {"call_1": "deny"}, model, tools=tools)

Each waiting call gets a decision: "approve" (or True, Approve()), "deny" (or False, a reason text,
Deny(reason)) or Edit(arguments). A denied call is answered with an error result (kind "denied"), so the
history stays valid in every format; an edited call is checked against the schema again and runs with
the new arguments. The other calls of the paused turn go through the gates again as they did the first
time (an approval hook given to resume is asked for them, and may pause again).

Left out on purpose: storing the state (it is a string: put it in a file, a database, a queue) and
expiring a pause (a decision days later is the caller's choice).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Mapping

from .checkpoint import Paused, read_state, restored_fields
from .execute import Executor
from .loop import LoopCore, Run, Settings, Thread, ToolsLike, _size, adrive, drive
from .policies import Approve, Deny, Edit, Limits, normalize_approval
from .trace import Trace
from .types import Usage

#: The words a decision may also be given as.
WORDS = {"approve": Approve(), "deny": Deny()}


def _decision(call_id: str, answer: Any) -> Approve | Deny | Edit:
    if isinstance(answer, str) and answer in WORDS:
        return WORDS[answer]
    decision = normalize_approval(answer)
    if not isinstance(decision, (Approve, Deny, Edit)):
        raise ValueError(f"decision for {call_id}: {answer!r}; give 'approve', 'deny', a reason, or Edit(arguments)")
    return decision


def _prepare(state: str | dict, decisions: Mapping[str, Any], tools: ToolsLike, thread: Thread | None,
             trace: Trace | None, settings: Settings) -> tuple[LoopCore, Paused]:
    data = read_state(state)
    if data.get("pending") is None:
        raise ValueError(f"this run ended {data.get('stop_reason')!r}, not 'paused': there is nothing to resume")
    pending = Paused.from_dict(data["pending"])
    missing = [call_id for call_id in pending.waiting if call_id not in decisions]
    unknown = [call_id for call_id in decisions if call_id not in pending.waiting]
    if missing or unknown:
        raise ValueError(f"decisions are needed for exactly the waiting calls {list(pending.waiting)}"
                         + (f"; missing {missing}" if missing else "")
                         + (f"; not waiting {unknown}" if unknown else ""))
    core = LoopCore(tools, None, settings, thread=thread, trace=trace)
    run = core.run
    for name, value in restored_fields(data).items():
        setattr(run, name, value)
    if thread is not None:  # the thread's history up to the pause, as the state has it
        thread.messages = list(run.messages)
    counters = pending.counters
    core.per_tool = dict(counters.get("per_tool") or {})
    core.repeats = {(name, arguments): n for name, arguments, n in counters.get("repeats") or ()}
    core.chars = sum(_size(m) for m in run.messages)
    core.decisions = {call_id: _decision(call_id, answer) for call_id, answer in decisions.items()}
    run.trace.record("resume", run_id=run.run_id, waiting=list(pending.waiting),
                     decisions={k: type(v).__name__.lower() for k, v in core.decisions.items()})
    # the turn's tokens were counted when it first came: taken again, it adds none
    if run.turns and run.turns[-1] == pending.turn:
        run.turns.pop()  # recorded when it first came; taken again just below
    core.take_turn(replace(pending.turn, usage=Usage()))
    run.turns[-1] = pending.turn  # as the model gave it, usage included (for agentkit.replay)
    return core, pending


def resume(state: str | dict, decisions: Mapping[str, Any], model: Any, tools: ToolsLike = (), *,
           limits: Limits | None = None, on_tool_error: Any = "report", tool_choice: Any = "auto",
           parallel_tool_calls: bool | None = None, stream: bool = False, approve: Callable | None = None,
           cancel: Any = None, tool_timeout: float | None = None, on_event: Callable | None = None,
           compact: Callable | None = None, thread: Thread | None = None, trace: Trace | None = None,
           executor: str | Executor | None = "threads", max_concurrency: int = 64) -> Run:
    """Continue a paused run from its saved state with a decision per waiting call, then run to its end.

    Takes the model, tools and settings again (they are code, not state); the same ones as the paused
    run, or others."""
    settings = Settings(limits=limits, on_tool_error=on_tool_error, tool_choice=tool_choice,
                        parallel_tool_calls=parallel_tool_calls, stream=stream, approve=approve, cancel=cancel,
                        tool_timeout=tool_timeout, on_event=on_event, compact=compact)
    core, _ = _prepare(state, decisions, tools, thread, trace, settings)
    return drive(core, model, executor, max_concurrency)


async def aresume(state: str | dict, decisions: Mapping[str, Any], model: Any, tools: ToolsLike = (), *,
                  limits: Limits | None = None, on_tool_error: Any = "report", approve: Callable | None = None,
                  compact: Callable | None = None, thread: Thread | None = None, trace: Trace | None = None,
                  executor: str | Executor | None = "asyncio", max_concurrency: int = 64) -> Run:
    """`resume`, driven from asyncio."""
    settings = Settings(limits=limits, on_tool_error=on_tool_error, approve=approve, compact=compact)
    core, _ = _prepare(state, decisions, tools, thread, trace, settings)
    return await adrive(core, model, executor, max_concurrency)

