"""The loop core: the decisions of the agent loop, without any I/O.

One step of the loop, as a numbered recipe (the `# 1.` ... `# 6.` markers in the code are these steps):

    1. build the request: the whole conversation + the tool list (re-sent at every step) + tool_choice;
       a `compact=` hook may send less (agentkit.long_running.compaction; run.messages keeps everything)
    2. call the model -> ModelTurn (text, tool calls, stop signal, usage)                  [driver]
    3. no tool calls -> the run ends with "final_answer"
    4. check limits: the step cap, the budgets (tokens, cost, time: agentkit.core.budgets), the tool-call caps
       (per run, per thread, per tool), repeated calls
    5. per call: lookup -> parse -> schema -> rules -> approval -> a Job; the driver runs the jobs
       (retries, timeouts) [driver], and each outcome becomes a result (envelope, error policy)
    6. answer every call, in the model's emitted order; decide whether the run ends; go to 1

`LoopCore.next()` is the one place that decides what happens next. A driver asks it and does what it says:

    CallModel(messages, tools, options)  call the model, then take_turn(turn) (or model_failed(exc))
    RunTools(jobs, trace)                run the jobs, then take_outcomes(outcomes)
    Done(run)                            the run has ended: result() returns it, or raises its error

so the drivers `run()` and `arun()` (agentkit.core.drive) are one short `while` loop each and cannot drift
apart, and the core is tested and fuzzed without any I/O. Why did the run stop? One ordered table,
`LoopCore.STOP_CHECKS`, answers: small named checks asked before every model call, the first that answers
decides, so the precedence is read, not inferred. What a run takes and gives back (Settings, Run, Thread,
StopReason) is agentkit.core.runs.

Every tool call keeps exactly one result, whatever ends the run: a final answer, a limit, a cancel, the
step cap, return_direct, an error policy or a limit that raises, a bug in an approval hook, Ctrl-C. A
model answer with calls enters the history together with their results (the raising call its error
result, calls that never ran "not_run"), so `run.messages`, the partial run an exception carries, and a Thread's
messages never hold an unanswered call, and a Thread stays usable after a run raised. This is where
agentkit differs from LangChain v1: `create_agent` with a checkpointer saves the orphaned call when a
tool raises, and sends it to the model on the thread's next invocation, which a real provider refuses
with a 400 (OpenAI: "An assistant message with 'tool_calls' must be followed by tool messages responding
to each 'tool_call_id'."; the symptom of langchain-ai/langgraph issue 531).

Left out on purpose: streaming tokens to the caller (the driver of agentkit.core.stream hands the model's
pieces on and gives the core whole turns) and multi-agent hand-offs; they sit around this loop, not inside
it. So do resuming a paused run (which continues through `LoopCore.restore`), replaying and forking one,
and its OpenTelemetry spans (agentkit.long_running).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from .budgets import WRAP_UP_TEXT, BudgetMeter, Unpriced
from .checkpoint import Paused
from .errors import LimitExceeded, ModelCallError, RunError, ToolExecutionError, ToolReturnError, UnknownPriceError
from .execute import Job, Outcome
from .history import CompactedRequests, HistoryIndex
from .policies import CONTINUE_TEXT, REPORT, Approve, Deny, Edit, LimitHit, Pause, failure_result, normalize_approval
from .runs import Run, Settings, StopReason, Thread, ToolsLike, check_tool_choice
from .tools import Tool, ToolContext
from .trace import Trace
from .types import Message, ModelOptions, ModelTurn, ToolCall, ToolChoice, ToolResult, ToolSpec, Usage
from .validate import canonical_arguments, error_result, lookup_result, validate_arguments

# -- what the core answers: the driver's next move ------------------------------------------------------


class CallModel(NamedTuple):
    messages: list[Message]
    tools: tuple[ToolSpec, ...]
    options: ModelOptions


class RunTools(NamedTuple):
    jobs: list[Job]
    trace: Trace


class Done(NamedTuple):
    run: Run


@dataclass(slots=True)
class _Slot:
    """One call of the current step on its way to its one result."""

    call: ToolCall
    result: ToolResult | None = None
    job: Job | None = None  # waiting for the executor while result is None
    tool: Tool | None = None
    paused: bool = False  # an approval answered Pause(): no result until resume()


@dataclass(frozen=True)
class _Ending:
    """How the run ends: the reason, what `run.output` says, and for an ending that raises, the error."""

    reason: StopReason
    output: Any = None
    error: RunError | None = None
    cause: BaseException | None = None  # the exception behind `error` (raise error from cause)
    limit: LimitHit | None = None
    said: bool = False  # the output is already in the history (the model's last word after a wrap_up)


#: What the budget_wind_down check answers: not a stop, but one last model call without tools.
WRAP_UP = "wrap_up"


class LoopCore:
    """The decisions of the loop, without I/O. A driver asks `next()` and does what it says (see the module
    docstring), and calls abort(exc) if anything else raises on the way, so the conversation is closed anyway."""

    def __init__(self, tools: ToolsLike, prompt: Any, settings: Settings | None = None, *,
                 thread: Thread | None = None, trace: Trace | None = None):
        self.settings = settings = settings if settings is not None else Settings()
        self.limits = settings.limits
        if isinstance(tools, Tool):
            raise TypeError("tools is a list of Tools (or a function returning one), not a single Tool: "
                            "tools=[my_tool]")
        # A function is asked again before every model call: a tool list that changes while the run goes on
        # (an MCP server's, after notifications/tools/list_changed) reaches the model at the next step.
        self.tool_source: Callable[[], Sequence[Tool]] | None = tools if callable(tools) else None
        self.tools: dict[str, Tool] = {}
        self.withdrawn: set[str] = set()  # offered earlier in this run, gone from the list since
        self._use_tools(list(tools() if callable(tools) else tools))
        self.thread = thread
        self.run = Run.begin(prompt, settings, thread, trace)
        # every message measured once, as it comes (the thread's own index goes on, not measured again)
        self.index = HistoryIndex.continuing(self.run.messages, thread.history_index if thread else None)
        self.compacted = CompactedRequests(settings.compact) if settings.compact is not None else None

        self.per_tool: dict[str, int] = {}  # calls admitted per tool name
        self.repeats: dict[tuple[str, str], int] = {}  # calls admitted per (name, canonical arguments)
        self.options: dict[str, ModelOptions] = {}  # per tool_choice word, built on first use
        self.turn: ModelTurn | None = None  # the model's last answer
        self.batch: list[_Slot] | None = None  # its calls, until they are answered
        # Facts for the stop checks, recorded where they happen:
        self.hit: LimitHit | None = None  # a cap reached by the last step (exit "end"/"error"), or the step cap
        self.failure: tuple[RunError, BaseException | None] | None = None  # an error to raise, and its cause
        self.direct: list[Any] | None = None  # the results of a batch of return_direct calls
        self.ending: _Ending | None = None  # set once: how the run ended
        self.meter = BudgetMeter(self.limits) if self.limits.budgeted else None
        self.wrap_up: LimitHit | None = None  # a budget ran out, exit "wrap_up": one last call, no tools
        self.wrapping_up = False  # that last call has been asked for
        self.decisions: dict[str, Any] = {}  # approval decisions given to restore(), by call id

    def _use_tools(self, tools: list[Tool]) -> None:
        """Take this tool list: by name for lookups, as specs for the request, and the facts derived from it."""
        by_name = {t.name: t for t in tools}
        if len(by_name) != len(tools):
            raise ValueError("two tools share a name: " + ", ".join(sorted(
                {t.name for t in tools if sum(u.name == t.name for u in tools) > 1})))
        check_tool_choice(self.settings.tool_choice, by_name)
        self.withdrawn = (self.withdrawn | self.tools.keys()) - by_name.keys()
        self.tools, self.tool_ids = by_name, tuple(map(id, tools))
        self.specs = tuple(t.spec for t in tools)
        limits = self.limits
        # without any tool-call cap, admitting a call is just counting it
        self.capped = any(cap is not None for cap in (limits.max_tool_calls, limits.max_thread_tool_calls,
                                                      limits.max_calls_per_tool, limits.max_repeats,
                                                      *(t.max_calls for t in tools)))
        self.any_direct = any(t.return_direct for t in tools)

    # -- the one place that decides -------------------------------------------------------------------------

    def next(self) -> CallModel | RunTools | Done:
        """What the driver does now."""
        if self.batch is not None:
            jobs = [slot.job for slot in self.batch if slot.result is None]
            if jobs:  # 5. the calls that passed the gates, for the driver to execute
                return RunTools(jobs, self.run.trace)
            self._answer_batch()  # 6.
        if self.ending is None:
            ending = self._why_stop()
            if ending is None:
                return self._request()  # 1.
            self._end(ending)
        return Done(self.run)

    def _why_stop(self) -> _Ending | None:
        """How the run ends now, or None to go on: the answer of the first check in STOP_CHECKS that has one."""
        for check in self.STOP_CHECKS:
            answer = check(self)
            if answer is not None:  # an ending, or WRAP_UP: not yet, one last call without tools first
                return answer if isinstance(answer, _Ending) else None
        return None

    # -- why did the run stop? The checks, each a condition with its stop reason, in the table's order ------

    def failed(self) -> _Ending | None:
        """error: the model call failed, or an error policy (or a model without a price) says raise."""
        if self.failure is None:
            return None
        error, cause = self.failure
        return _Ending(StopReason.ERROR, error=error, cause=cause)

    def model_answered(self) -> _Ending | None:
        """final_answer: the last step asked for no tool (after a wrap_up: the model's last word)."""
        turn = self.turn
        if turn is None or turn.tool_calls:
            return None
        if self.wrapping_up:
            return _Ending(StopReason(self.wrap_up.stop_reason), turn.text, limit=self.wrap_up, said=True)
        return _Ending(StopReason.FINAL_ANSWER, output=turn.text)

    def limit_reached(self) -> _Ending | None:
        """A cap the last step reached as it was taken: a tool-call cap, a budget, the step cap."""
        return None if self.hit is None else self._ends(self.hit)

    def step_cap(self) -> _Ending | None:
        """max_steps: the model was called Limits.max_steps times (take_turn asks too: see step 4 there)."""
        maximum = self.limits.max_steps
        if maximum is None:
            return None
        return self._ends(self._over("max_steps", self.run.steps, maximum, or_equal=True))

    def thread_step_cap(self) -> _Ending | None:
        """max_steps: the model was called Limits.max_thread_steps times across the thread's runs."""
        maximum, thread = self.limits.max_thread_steps, self.thread
        if maximum is None or thread is None:
            return None
        return self._ends(self._over("max_thread_steps", thread.steps, maximum, or_equal=True))

    def time_budget(self) -> _Ending | None:
        """time_budget: Limits.max_seconds have passed, also while tools ran (under wrap_up: no stop yet)."""
        if self.meter is None or self.wrap_up is not None or not (over := self.meter.over_time()):
            return None
        return self._ends(self._budget_spent(LimitHit(*over)))

    def cancelled(self) -> _Ending | None:
        """user_cancel: the cancel setting was set from outside."""
        cancel = self.settings.cancel
        if cancel is None or not (cancel.is_set() if hasattr(cancel, "is_set") else cancel()):
            return None
        return _Ending(StopReason.USER_CANCEL)

    def too_many_invalid_calls(self) -> _Ending | None:
        """schema_fail: more argument errors (and unknown tools) than Limits.max_invalid_calls."""
        maximum = self.limits.max_invalid_calls
        if maximum is None:
            return None
        return self._ends(self._over("max_invalid_calls", self.run.invalid_calls, maximum))

    def budget_wind_down(self) -> str | None:
        """Not a stop: a budget ran out under wrap_up, so the next model call is the last, without tools."""
        if self.wrap_up is None or self.wrapping_up:
            return None
        self.wrapping_up = True
        return WRAP_UP

    def all_return_direct(self) -> _Ending | None:
        """return_direct: every call of the last batch was a return_direct tool, and succeeded."""
        direct = self.direct
        if direct is None:
            return None
        return _Ending(StopReason.RETURN_DIRECT, output=direct[0] if len(direct) == 1 else direct)

    #: Why did the run stop? Asked before every model call, top to bottom: the first check that answers
    #: decides. A check answers an _Ending (the run stops with its reason; for a cap under exit_behavior
    #: "error" that is "error", raising LimitExceeded), WRAP_UP (not yet: one last call without tools) or
    #: None. So a failure beats a final answer, a final answer beats every cap, a cancel comes after the
    #: step and time caps but before the invalid-call cap, and return_direct comes last. Two endings come
    #: from elsewhere: "paused" (an approval answered Pause(): _pause) and what abort() records.
    STOP_CHECKS: tuple[Callable[[LoopCore], _Ending | str | None], ...] = (
        failed,                  # error
        model_answered,          # final_answer (after a wrap_up: the budget's reason)
        limit_reached,           # tool_limit, repeated_call, token/cost/time_budget, max_steps (as the step came)
        step_cap,                # max_steps
        thread_step_cap,         # max_steps (limit "max_thread_steps")
        time_budget,             # time_budget
        cancelled,               # user_cancel
        too_many_invalid_calls,  # schema_fail
        budget_wind_down,        # WRAP_UP: no stop; the next call is the last, without tools
        all_return_direct,       # return_direct
    )

    def _ends(self, hit: LimitHit | None) -> _Ending | None:
        """How a cap ends the run: a final message naming the limit and the counts, or, under "error", raising."""
        if hit is None:
            return None
        text = hit.message()
        if self.limits.exit_behavior == "error":
            error = LimitExceeded(text, self.run, hit.limit, hit.count, hit.maximum)
            return _Ending(StopReason.ERROR, output=text, error=error, limit=hit)
        return _Ending(StopReason(hit.stop_reason), output=text, limit=hit)

    def _end(self, ending: _Ending) -> None:
        run = self.run
        self.ending = ending
        if ending.limit is not None:
            run.limit = ending.limit
        if ending.limit is not None and not ending.said:
            self._append(Message.assistant(ending.output))  # the final message names the limit and the counts
        run.stop_reason, run.output = ending.reason, ending.output
        if self.meter is not None:
            run.elapsed_seconds = self.meter.running_seconds()
        if ending.error is not None:
            run.error = ending.cause if ending.cause is not None else ending.error
        self._write_back()
        run.trace.record("stop", reason=ending.reason.value, steps=run.steps, tool_calls=run.tool_call_count)

    def result(self) -> Run:
        """The finished Run, or the RunError it ended with (carrying the same Run) raised."""
        if self.ending is None:
            raise RuntimeError("result() before the run ended: drive it with next() until Done")
        if self.ending.error is not None:
            raise self.ending.error from self.ending.cause
        return self.run

    def abort(self, exc: BaseException) -> None:
        """Something raised outside the core's decisions (a hook's bug, a broken listener, Ctrl-C): close
        the conversation, so that every call has its result and a Thread stays usable, then let it go on."""
        run, ended_here = self.run, self.ending is None
        # GeneratorExit: the caller stopped reading a streamed run (agentkit.core.stream) — a cancel too
        stopped_reading = isinstance(exc, GeneratorExit)
        if ended_here:
            cancelled = stopped_reading or isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError))
            self.ending = _Ending(StopReason.USER_CANCEL if cancelled else StopReason.ERROR, cause=exc)
            run.stop_reason, run.error = self.ending.reason, exc
        why = "the caller stopped reading the run's stream" if stopped_reading else \
            f"the run stopped ({type(exc).__name__})"
        for slot in self.batch or ():
            if slot.result is None:
                slot.result = _not_run(slot.call, why)
        try:
            if self.batch is not None:
                self._answer_batch()
            if ended_here:
                run.trace.record("stop", reason=run.stop_reason.value, steps=run.steps,
                                 tool_calls=run.tool_call_count)
        except Exception:  # noqa: BLE001 — a second failure (a broken listener) must not hide the first
            pass
        finally:
            self._write_back()

    # -- 1. build the request ----------------------------------------------------------------------------

    def _request(self) -> CallModel:
        run, settings = self.run, self.settings
        if self.tool_source is not None:  # the tools as they are now (the list is re-sent at every step anyway)
            current = list(self.tool_source())
            if tuple(map(id, current)) != self.tool_ids:
                self._use_tools(current)
                run.trace.record("tools_changed", step=run.steps + 1, tools=[t.name for t in current])
        # the wrap_up call, after a budget ran out, is without tools: answer with what you have
        choice = ("none" if self.wrapping_up else self._choice_for_this_turn()) if self.specs else "auto"
        options = self.options.get(choice) if isinstance(choice, str) else None
        if options is None:
            options = ModelOptions(tool_choice=choice, parallel_tool_calls=settings.parallel_tool_calls,
                                   stream=settings.stream)
            if isinstance(choice, str):  # the same few options at every step: built once
                self.options[choice] = options
        run.steps += 1
        if self.thread is not None:
            self.thread.steps += 1
        run.trace.record("model_request", step=run.steps, messages=len(run.messages), tools=len(self.specs),
                         tool_choice=options.tool_choice, chars=self.index.total)
        if self.compacted is not None:  # what is sent may be shorter; run.messages keeps everything
            return CallModel(self.compacted.request(run, self.index), self.specs, options)
        return CallModel(run.messages, self.specs, options)

    def _choice_for_this_turn(self) -> ToolChoice:
        choice = self.settings.tool_choice
        if choice == "auto":
            return choice
        if choice == "required_first":  # force a tool at the first step only, or no final answer is possible
            return "required" if self.run.steps == 0 else "auto"
        if callable(choice):
            choice = choice(self.run.steps, self.run)
            check_tool_choice(choice, self.tools)
        return choice

    # -- 2. the model's answer (the driver called the model) ---------------------------------------------

    def model_failed(self, exc: BaseException) -> None:
        error = ModelCallError(f"the model call failed at step {self.run.steps}: {exc}", self.run)
        self.failure = (error, exc)

    def take_turn(self, turn: ModelTurn) -> None:
        """The model's answer: its usage counted, and its calls taken through the limits and the gates."""
        run = self.run
        if turn.usage.input_tokens or turn.usage.output_tokens:
            self._add_usage(turn.usage, turn.model)
        # turn.stop is the provider's signal for this answer ("tool_calls", "length", ...), not the run's end
        run.trace.record("model_response", step=run.steps, text_chars=len(turn.text or ""),
                         tool_calls=len(turn.tool_calls), stop=turn.stop, usage=turn.usage.total_tokens)
        self.turn = turn
        run.turns.append(turn)
        if not turn.tool_calls:  # 3. no tool calls: the answer joins the history; next() ends the run
            self._append(turn.as_message())
            return
        self.batch = [_Slot(call) for call in turn.tool_calls]
        # 4. the step cap: the results could not reach the model any more, so the calls are not run
        at_cap = self.step_cap()
        if at_cap is not None:
            self.hit = at_cap.limit
        elif self.meter is not None:  # 4. the budgets: the tokens are spent already
            self._check_budgets(turn)
        # a Pause() from the approval gate takes the answer back out: the counters as they were before it
        before = self._counters() if self.settings.approve is not None else None
        self._admit_batch()
        if self.failure is not None:  # the run ends by raising: nothing of this batch runs any more
            for slot in self.batch:
                if slot.result is None:
                    slot.result = _not_run(slot.call, self._why_cut_short())
        elif before is not None and any(slot.paused for slot in self.batch):
            self._pause(before)

    def _add_usage(self, usage: Usage, model: str | None) -> None:
        run = self.run
        run.usage = run.usage + usage
        spent = run.usage_by_model.get(model)
        run.usage_by_model[model] = usage if spent is None else spent + usage
        if self.thread is not None:
            self.thread.usage = self.thread.usage + usage

    def _admit_batch(self) -> None:
        """4.-5. per call: the caps, then lookup -> parse -> schema -> rules -> approval -> a job."""
        for slot in self.batch:
            if self.hit is not None or self.failure is not None or self.wrap_up is not None:  # cut short
                slot.result = _not_run(slot.call, self._why_cut_short())
                continue
            hit = self._admit(slot.call)
            if hit is None:
                self._prepare(slot)
            elif self.limits.exit_behavior == "continue":  # refused, the model goes on: LangChain's words
                slot.result = ToolResult.failure(slot.call, "limit", CONTINUE_TEXT)
            else:
                self.hit = hit
                slot.result = _not_run(slot.call, hit.message())

    def _why_cut_short(self) -> str:
        if self.hit is not None:
            return self.hit.message()
        if self.wrap_up is not None:
            return f"{self.wrap_up.message()} {WRAP_UP_TEXT}"
        error = self.failure[0]
        where = f" at call {error.call.id}" if getattr(error, "call", None) is not None else ""
        return f"the run stopped{where} ({type(error).__name__})"

    # -- a pause, and going on from one ----------------------------------------------------------------------

    def _counters(self) -> dict:
        return {"tool_call_count": self.run.tool_call_count, "invalid_calls": self.run.invalid_calls,
                "per_tool": dict(self.per_tool), "repeats": [[*key, n] for key, n in self.repeats.items()],
                "thread_tool_calls": self.thread.tool_call_count if self.thread is not None else None}

    def _pause(self, before: dict) -> None:
        """An approval answered Pause(): the answer stays out of the history (none of its calls has run), and
        the run ends "paused", keeping the answer and the counters as they were before it for resume()."""
        run, waiting = self.run, tuple(slot.call.id for slot in self.batch if slot.paused)
        run.tool_call_count, run.invalid_calls = before["tool_call_count"], before["invalid_calls"]
        self._set_call_counters(before)
        if self.thread is not None:
            self.thread.tool_call_count = before["thread_tool_calls"]
        passed = tuple(slot.call.id for slot in self.batch if slot.job is not None or slot.paused
                       or (slot.result is not None and slot.result.error_kind == "denied"))
        run.pending, self.batch, self.hit = Paused(self.turn, waiting, before, passed=passed), None, None
        self._end(_Ending(StopReason.PAUSED, output=f"paused: {len(waiting)} call(s) wait for a decision "
                                                    f"({', '.join(waiting)})"))

    def _set_call_counters(self, counters: Mapping) -> None:
        self.per_tool = dict(counters.get("per_tool") or {})
        self.repeats = {(name, arguments): n for name, arguments, n in counters.get("repeats") or ()}

    def restore(self, fields: Mapping[str, Any], paused: Paused,
                decisions: Mapping[str, Approve | Deny | Edit]) -> None:
        """Go on from a paused run: its saved Run fields (checkpoint.restored_fields) and counters back, then
        the paused answer taken again, each waiting call with its decision (agentkit.long_running.resume)."""
        run = self.run
        for name, value in fields.items():
            setattr(run, name, value)
        if self.thread is not None:  # the thread's history up to the pause, as the state has it
            self.thread.messages = list(run.messages)
        self._set_call_counters(paused.counters)
        self.index = HistoryIndex(run.messages)
        unpriced = self.meter.carry_over(run) if self.meter is not None else None  # money and time so far
        if unpriced is not None:
            self.failure = (UnknownPriceError(str(unpriced), run, unpriced.model), None)
        if self.compacted is not None and hasattr(self.compacted.hook, "restore"):
            self.compacted.hook.restore(run.compaction)  # e.g. Summarize's summaries: the same requests again
        self.decisions = dict(decisions)
        run.trace.record("resume", run_id=run.run_id, waiting=list(paused.waiting),
                         decisions={k: type(v).__name__.lower() for k, v in self.decisions.items()})
        if run.turns and run.turns[-1] == paused.turn:
            run.turns.pop()  # recorded when it first came; taken again just below
        self.take_turn(replace(paused.turn, usage=Usage()))  # its tokens were counted when it first came
        run.turns[-1] = paused.turn  # as the model gave it, usage included (for agentkit.long_running.replay)

    # -- 4. limits ----------------------------------------------------------------------------------------

    def _check_budgets(self, turn: ModelTurn) -> None:
        """After a model call: has it taken the run past a budget (agentkit.core.budgets)?"""
        if self.wrapping_up:  # the wrap_up call: calls it still asks for are not run
            self.hit = self.wrap_up
            return
        run, thread = self.run, self.thread
        try:
            over = self.meter.after_turn(run.usage, thread.usage if thread is not None else None, turn.usage,
                                         turn.model)
        except Unpriced as exc:
            self.failure = (UnknownPriceError(str(exc), run, exc.model), None)
            return
        if over is not None:
            self._budget_spent(LimitHit(*over))

    def _budget_spent(self, hit: LimitHit) -> LimitHit | None:
        """A budget ran out: the run ends ("end", "error"), or gets one last call without tools ("wrap_up")."""
        behavior = self.limits.budget_behavior
        self._reached(hit, behavior)
        if behavior == "wrap_up":
            self.wrap_up = hit
            return None
        self.hit = hit
        return hit

    def _admit(self, call: ToolCall) -> LimitHit | None:
        """Count the call against every cap: the first cap it would exceed (recorded), or None (counted)."""
        run, limits, thread = self.run, self.limits, self.thread
        if not self.capped:
            self._count(call, None)
            return None
        caps = [("max_tool_calls", run.tool_call_count, limits.max_tool_calls)]
        if thread is not None:
            caps.append(("max_thread_tool_calls", thread.tool_call_count, limits.max_thread_tool_calls))
        tool = self.tools.get(call.name)
        per_tool = [cap for cap in ((limits.max_calls_per_tool or {}).get(call.name),
                                    tool.max_calls if tool is not None else None) if cap is not None]
        if per_tool:
            caps.append((f"max_calls_per_tool:{call.name}", self.per_tool.get(call.name, 0), min(per_tool)))
        # the canonical spelling costs a json.dumps: only pay for it when a repeat cap is set
        key = (call.name, canonical_arguments(call)) if limits.max_repeats is not None else None
        if key is not None:
            caps.append(("max_repeats", self.repeats.get(key, 0), limits.max_repeats))
        for name, used, cap in caps:
            if cap is not None and used + 1 > cap:
                action = "blocked" if limits.exit_behavior == "continue" else limits.exit_behavior
                return self._reached(LimitHit(name, used + 1, cap), action, call.id)
        self._count(call, key)
        return None

    def _count(self, call: ToolCall, repeat_key: tuple[str, str] | None) -> None:
        self.run.tool_call_count += 1
        if self.thread is not None:
            self.thread.tool_call_count += 1
        self.per_tool[call.name] = self.per_tool.get(call.name, 0) + 1
        if repeat_key is not None:
            self.repeats[repeat_key] = self.repeats.get(repeat_key, 0) + 1

    def _over(self, limit: str, count: int, maximum: int, or_equal: bool = False) -> LimitHit | None:
        """The run-level cap `limit` (model calls, invalid calls), recorded, when `count` is above `maximum`
        (or at it, with or_equal: at the step cap no further model call is allowed); else None."""
        if count < maximum or (count == maximum and not or_equal):
            return None
        return self._reached(LimitHit(limit, count, maximum))

    def _reached(self, hit: LimitHit, action: str | None = None, call_id: str | None = None) -> LimitHit:
        """Record a cap once, where it is noticed; "end" or "error" unless told otherwise."""
        if action is None:
            action = "error" if self.limits.exit_behavior == "error" else "end"
        detail = {"call_id": call_id} if call_id is not None else {}
        self.run.trace.record("limit", **detail, limit=hit.limit, count=hit.count, maximum=hit.maximum,
                              action=action)
        return hit

    # -- 5. lookup -> parse -> schema -> rules -> approval -> a job; then the outcome ----------------------

    def _prepare(self, slot: _Slot) -> None:
        call, tool = slot.call, self.tools.get(slot.call.name)
        if tool is None:  # lookup: an unknown name (a typo), or one the tool list lost during the run
            self._refuse(slot, lookup_result(call, self.tools, self.withdrawn), "lookup")
            return
        checked = validate_arguments(tool, call.raw_arguments)  # parse -> schema -> rules
        if not checked.ok:
            self._refuse(slot, error_result(call, checked), checked.gate or "parse")
            return
        self._gate(call, "rules", True)
        arguments = checked.arguments
        if self.settings.approve is not None or call.id in self.decisions:  # approve, deny, edit or pause
            arguments = self._approve(slot, tool, arguments)
            if arguments is None:
                return
        slot.tool, slot.job = tool, self._job(tool, call, arguments)

    def _approve(self, slot: _Slot, tool: Tool, arguments: dict) -> dict | None:
        """The approval gate: the arguments to run with, or None (the call paused, denied or refused)."""
        call = slot.call
        decision = self.decisions.pop(call.id, None)  # a decision given to restore() comes first
        if decision is None:
            decision = normalize_approval(self.settings.approve(call, self._context(tool, call, 1)))
        if isinstance(decision, Pause):
            self._gate(call, "approval", False, "paused")
            slot.paused = True
            return None
        if isinstance(decision, Deny):
            self._gate(call, "approval", False, "denied")
            slot.result = ToolResult.failure(call, "denied", decision.reason)
            return None
        if isinstance(decision, Edit):
            checked = validate_arguments(tool, decision.arguments)
            if not checked.ok:
                self._refuse(slot, error_result(call, checked), "approval")
                return None
            arguments = checked.arguments
        self._gate(call, "approval", True)
        return arguments

    def _gate(self, call: ToolCall, gate: str, ok: bool, kind: str | None = None) -> None:
        self.run.trace.record("gate", call_id=call.id, tool=call.name, gate=gate, ok=ok, error=kind)

    def _refuse(self, slot: _Slot, result: ToolResult, gate: str) -> None:
        """An argument error or an unknown tool: reported to the model; under "raise" the run ends too."""
        call = slot.call
        self.run.invalid_calls += 1
        self._gate(call, gate, False, result.error_kind)
        slot.result = result
        if self.settings.policy.raise_argument_errors and self.failure is None:
            error = ToolExecutionError(f"tool call {call.name!r} ({call.id}) refused at the {gate} gate: "
                                       f"{result.error['message']}", self.run, call)
            self.failure = (error, None)

    def _context(self, tool: Tool, call: ToolCall, attempt: int) -> ToolContext:
        run = self.run
        # ToolContext keeps read-only copies of state and counters: a tool sees them as of its call
        return ToolContext(call_id=call.id, tool_name=tool.name, state=run.state, step=run.steps,
                           counters=self.per_tool, run_id=run.run_id, attempt=attempt, trace=run.trace)

    def _job(self, tool: Tool, call: ToolCall, arguments: dict) -> Job:
        if tool.context_param:
            def invoke(attempt: int) -> Any:
                return tool.invoke(arguments, self._context(tool, call, attempt))
        else:
            def invoke(attempt: int) -> Any:
                return tool.invoke(arguments, None)
        timeout = tool.timeout if tool.timeout is not None else self.settings.tool_timeout
        return Job(call_id=call.id, tool=tool.name, invoke=invoke, is_async=tool.is_async, timeout=timeout,
                   retry=self.settings.policy.retry, idempotent=tool.idempotent)

    def take_outcomes(self, outcomes: Sequence[Outcome]) -> None:
        """The executor's outcomes, one per job in the order given: each becomes its call's result."""
        waiting = [slot for slot in self.batch or () if slot.result is None]
        if len(waiting) != len(outcomes):
            raise ValueError(f"{len(outcomes)} outcomes for {len(waiting)} jobs: an executor lost or added results")
        for outcome in outcomes:  # all counted first: turning an outcome into a result may raise (a hook's bug)
            self.run.tool_runs += outcome.attempts
        for slot, outcome in zip(waiting, outcomes):
            slot.result = self._result(slot, outcome)

    def _result(self, slot: _Slot, outcome: Outcome) -> ToolResult:
        call, exc = slot.call, outcome.error
        if exc is None:
            try:
                # an Update's message goes in the same envelope as any return value: one stable shape
                value, state = slot.tool.split_return(outcome.value)
            except ToolReturnError as bad_return:  # e.g. an Update without its message: a failed call
                exc = bad_return
            else:
                if state:
                    self.run.state.update(state)
                    if self.thread is not None:
                        self.thread.state.update(state)
                return ToolResult.success(call, value)
        text = self.settings.policy.decide(exc, call)
        if text is None and self.failure is None:  # the policy says raise: this call still gets its result
            said = str(exc) if isinstance(exc, ToolReturnError) else f"tool {call.name!r} raised {exc!r}"
            self.failure = (ToolExecutionError(said, self.run, call), exc)
        return failure_result(call, exc, outcome.attempts, text=text if text not in (None, REPORT) else None)

    # -- 6. every call answered, in the model's emitted order ----------------------------------------------

    def _answer_batch(self) -> None:
        """The model's answer and its results join the history together: the history never holds an unanswered call."""
        run, batch = self.run, self.batch
        self.batch = None
        self._append(self.turn.as_message())
        for slot in batch:
            run.results.append(slot.result)
            self._append(Message.tool(slot.result))
        for slot in batch:  # recorded after the history is whole: a listener that raises cannot split it
            result = slot.result
            run.trace.record("result", call_id=result.call_id, tool=result.name, ok=result.ok,
                             error=result.error_kind)
        # return_direct ends the run only when *every* call of the batch asks for it, and succeeded
        if self.any_direct and all(slot.tool is not None and slot.tool.return_direct and slot.result.ok
                                   for slot in batch):
            self.direct = [slot.result.result for slot in batch]

    def _append(self, message: Message) -> None:
        self.run.messages.append(message)
        self.index.add(message)

    def _write_back(self) -> None:
        thread = self.thread
        if thread is not None and (not thread.runs or thread.runs[-1] is not self.run):
            # handed over, not copied: the run is over, and the next run starts from a copy
            thread.messages, thread.history_index = self.run.messages, self.index
            thread.runs.append(self.run)


def _not_run(call: ToolCall, why: str) -> ToolResult:
    return ToolResult.failure(call, "not_run", f"not run: {why}")

