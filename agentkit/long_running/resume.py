"""Pause and resume: an approval gate that decides later, even after a restart — and only once.

    def approve(call, ctx):
        return Pause() if call.name == "send_payment" else True

    paused = agentkit.run(model, prompt, tools=tools, approve=approve)
    paused.stop_reason            # StopReason.PAUSED; paused.pending.waiting names the calls
    saved = paused.to_json()      # ... store it, restart the kernel, read it back ...
    run = agentkit.resume(saved, {"call_1": "deny"}, model, tools=tools)
    agentkit.resume(saved, {"call_1": "approve"}, model, tools=tools)   # AlreadyResumed: it went on already

Each waiting call gets a decision: "approve" (or True, Approve()), "deny" (or False, a reason text,
Deny(reason)) or Edit(arguments). A denied call is answered with an error result (kind "denied"), so the
history stays valid in every format; an edited call is checked against the schema again and runs with
the new arguments. The other calls of the paused turn go through the gates again as they did the first
time (an approval hook given to resume is asked for them, and may pause again).

Checked before anything runs, each with a clear error and nothing consumed: the saved state, whole
(`agentkit.core.checkpoint.read_state`: StateError naming the field); the decisions (a dict with one
decision for each waiting call: ResumeError); and the tools of the paused turn (ResumeError when a call
that is to run names a tool that resume was not given, or its arguments no longer fit the tool's schema:
the tool changed since the pause, and running it silently answered with an error is not what was approved).

**Once.** A paused state is resumed at most once: its pause carries a token (`Run.pending.token`, a random
id made when it paused, saved in the JSON), and resuming *claims* it in a ledger before the first call
runs. A second resume of the same state — the text, a copy of it, its json.loads — finds the token claimed
and raises AlreadyResumed; the approved call never runs twice. Which ledger:

    resume(saved, decisions, model, tools=tools)                           # this process's (the default)
    resume(saved, decisions, model, tools=tools, ledger=FileLedger(path))  # every process sharing `path`

What the kit can promise, and what it cannot:
- within one process: always (the default ledger is the process's own, `PROCESS_LEDGER`);
- across processes: only through a ledger they share. `FileLedger(folder)` claims a token by creating a
  file named after it with O_CREAT | O_EXCL, which one process wins on a local POSIX file system (not
  across machines on a network share that lacks exclusive create); anything with `claim(token) -> bool`
  will do (a database row with a unique key, a Redis SETNX, ...);
- at most once, not exactly once: the claim comes before the calls run, so a process that dies after it
  leaves the state claimed — the call ran or it did not, and the kit cannot know which. Resume the state
  the run saved afterwards, or check the side effect yourself (an idempotency key on the payment);
- it cannot stop a copy of the state resumed with another ledger, or with the token edited: the token is a
  guard against mistakes (a double click, a retried job), not a security boundary.

Left out on purpose: storing the state (it is a string: put it in a file, a database, a queue) and
expiring a pause (a decision days later is the caller's choice). Time a run waits paused does not count
against its time budget (see `BudgetMeter.carry_over`); the money it spent before the pause does.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..core.checkpoint import Paused, read_state, restored_fields
from ..core.drive import adrive, drive
from ..core.errors import AlreadyResumed, ResumeError
from ..core.execute import Executor
from ..core.loop import LoopCore
from ..core.policies import Approve, Deny, Edit, normalize_approval
from ..core.runs import Run, Settings, Thread, ToolsLike, takes_settings
from ..core.trace import Trace
from ..core.validate import validate_arguments
from .ledger import PROCESS_LEDGER, FileLedger, MemoryLedger

#: The words a decision may also be given as.
WORDS = {"approve": Approve(), "deny": Deny()}
__all__ = ["resume", "aresume", "FileLedger", "MemoryLedger", "PROCESS_LEDGER", "WORDS"]


def _decision(call_id: str, answer: Any) -> Approve | Deny | Edit:
    if isinstance(answer, str) and answer in WORDS:
        return WORDS[answer]
    try:
        decision = normalize_approval(answer)
    except TypeError:
        decision = None
    if not isinstance(decision, (Approve, Deny, Edit)) or (isinstance(decision, Edit)
                                                             and not isinstance(decision.arguments, dict)):
        raise ResumeError(f"decision for {call_id}: {answer!r}; give 'approve', 'deny', a reason, or "
                          "Edit({...arguments})")
    return decision


def _decisions(decisions: Any, pending: Paused) -> dict[str, Approve | Deny | Edit]:
    """The decisions, one per waiting call, checked; ResumeError otherwise."""
    if not isinstance(decisions, Mapping):
        raise ResumeError(f"decisions={decisions!r}: give a dict {{call_id: decision}} with one decision for each "
                          f"waiting call {list(pending.waiting)}")
    missing = [call_id for call_id in pending.waiting if call_id not in decisions]
    unknown = [call_id for call_id in decisions if call_id not in pending.waiting]
    if missing or unknown:
        raise ResumeError(f"decisions are needed for exactly the waiting calls {list(pending.waiting)}"
                          + (f"; missing {missing}" if missing else "")
                          + (f"; not waiting {unknown}" if unknown else ""))
    return {call_id: _decision(call_id, answer) for call_id, answer in decisions.items()}


def _check_tools(pending: Paused, decided: Mapping[str, Any], tools: dict) -> None:
    """Every call of the paused turn that passed the gates then, and is to run now, finds its tool and fits
    its schema now; else the tools changed since the pause: ResumeError, before anything runs."""
    for call in pending.turn.tool_calls:
        decision = decided.get(call.id)
        if call.id not in pending.passed and call.id not in pending.waiting or isinstance(decision, Deny):
            continue
        tool = tools.get(call.name)
        if tool is None:
            raise ResumeError(f"call {call.id} of the paused turn asks for tool {call.name!r}, which resume was not "
                              f"given (tools: {', '.join(sorted(tools)) or 'none'}); give it again, or deny the call")
        arguments = decision.arguments if isinstance(decision, Edit) else call.raw_arguments
        checked = validate_arguments(tool, arguments)
        if not checked.ok and checked.gate != "rules":  # a rule may answer otherwise today: the gates tell
            raise ResumeError(f"call {call.id} ({call.name}) no longer fits its tool's schema "
                              f"({checked.message(3)}): the tool changed since the pause (give the tool as it was, "
                              "or Edit the arguments)")


def _prepare(state: Any, decisions: Any, tools: ToolsLike, thread: Thread | None, trace: Trace | None,
             settings: Settings, ledger: Any) -> LoopCore:
    if isinstance(state, Run):
        state = state.to_json()
    data = read_state(state)
    if data.get("pending") is None:
        raise ResumeError(f"this run ended {data.get('stop_reason')!r}, not 'paused': there is nothing to resume")
    pending = Paused.from_dict(data["pending"])
    decided = _decisions(decisions, pending)
    core = LoopCore(tools, None, settings, thread=thread, trace=trace)
    _check_tools(pending, decided, core.tools)
    if not (ledger if ledger is not None else PROCESS_LEDGER).claim(pending.token):
        raise AlreadyResumed(f"this paused state (run {data['run_id']}, pause {pending.token[:8]}) was resumed "
                             "already, so its approved calls may have run: it is resumed once. Go on from the run "
                             "that resume returned (or the state it saved when it paused again)", pending.token)
    core.restore(restored_fields(data), pending, decided)  # the core sets its own fields, then retakes the turn
    return core


#: The settings resume does not take: the system prompt went into the conversation when the run began.
LEFT_OUT = ("system",)


def resume(state: str | dict | Run, decisions: Mapping[str, Any], model: Any, tools: ToolsLike = (), *,
           thread: Thread | None = None, trace: Trace | None = None, executor: str | Executor | None = "threads",
           max_concurrency: int = 64, ledger: Any = None, **settings: Any) -> Run:
    """Continue a paused run from its saved state with a decision per waiting call, then run to its end.

    `state` is the text of `Run.to_json()`, its json.loads, or the paused Run itself. Takes the model,
    tools and settings again (they are code, not state); the same ones as the paused run, or others.
    `ledger` is where the pause's token is claimed (default: this process's; `FileLedger(folder)` for
    every process sharing the folder): a state is resumed once. The settings are run()'s:
    """
    chosen = Settings.from_keywords("resume", settings, LEFT_OUT)
    core = _prepare(state, decisions, tools, thread, trace, chosen, ledger)
    return drive(core, model, executor, max_concurrency)


async def aresume(state: str | dict | Run, decisions: Mapping[str, Any], model: Any, tools: ToolsLike = (), *,
                  thread: Thread | None = None, trace: Trace | None = None,
                  executor: str | Executor | None = "asyncio", max_concurrency: int = 64, ledger: Any = None,
                  **settings: Any) -> Run:
    """`resume`, driven from asyncio. The settings are run()'s:
    """
    chosen = Settings.from_keywords("aresume", settings, LEFT_OUT)
    core = _prepare(state, decisions, tools, thread, trace, chosen, ledger)
    return await adrive(core, model, executor, max_concurrency)


takes_settings(resume, LEFT_OUT)
takes_settings(aresume, LEFT_OUT)
