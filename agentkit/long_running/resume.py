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

from typing import Any, Mapping

from ..core.checkpoint import Paused, read_state, restored_fields
from ..core.drive import adrive, drive
from ..core.execute import Executor
from ..core.loop import LoopCore
from ..core.policies import Approve, Deny, Edit, normalize_approval
from ..core.runs import Run, Settings, Thread, ToolsLike, takes_settings
from ..core.trace import Trace

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
             trace: Trace | None, settings: Settings) -> LoopCore:
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
    decided = {call_id: _decision(call_id, answer) for call_id, answer in decisions.items()}
    core = LoopCore(tools, None, settings, thread=thread, trace=trace)
    core.restore(restored_fields(data), pending, decided)  # the core sets its own fields, then retakes the turn
    return core


#: The settings resume does not take: the system prompt went into the conversation when the run began.
LEFT_OUT = ("system",)


def resume(state: str | dict, decisions: Mapping[str, Any], model: Any, tools: ToolsLike = (), *,
           thread: Thread | None = None, trace: Trace | None = None, executor: str | Executor | None = "threads",
           max_concurrency: int = 64, **settings: Any) -> Run:
    """Continue a paused run from its saved state with a decision per waiting call, then run to its end.

    Takes the model, tools and settings again (they are code, not state); the same ones as the paused
    run, or others. The settings are run()'s:
    """
    chosen = Settings.from_keywords("resume", settings, LEFT_OUT)
    core = _prepare(state, decisions, tools, thread, trace, chosen)
    return drive(core, model, executor, max_concurrency)


async def aresume(state: str | dict, decisions: Mapping[str, Any], model: Any, tools: ToolsLike = (), *,
                  thread: Thread | None = None, trace: Trace | None = None,
                  executor: str | Executor | None = "asyncio", max_concurrency: int = 64, **settings: Any) -> Run:
    """`resume`, driven from asyncio. The settings are run()'s:
    """
    chosen = Settings.from_keywords("aresume", settings, LEFT_OUT)
    core = _prepare(state, decisions, tools, thread, trace, chosen)
    return await adrive(core, model, executor, max_concurrency)


takes_settings(resume, LEFT_OUT)
takes_settings(aresume, LEFT_OUT)
