"""The agent loop: a sans-I/O core that decides, and two short drivers that do the I/O.

    run = agentkit.run(model, "東京の天気と、1ドル何円か教えて", tools=[get_weather, get_exchange_rate])
    run.output        # the final answer
    run.stop_reason   # StopReason.FINAL_ANSWER
    run.trace.table() # what happened, in order

One step of the loop, as a numbered recipe (the phases are the methods of `LoopCore`):

    1. build the request: the whole conversation + the tool list (re-sent every turn) + tool_choice
    2. call the model -> ModelTurn (text, tool calls, stop signal, usage)           [driver]
    3. no tool calls -> stop "final_answer"
    4. check limits: step cap, per-run / per-thread / per-tool caps, repeated identical calls
    5. per call: lookup -> parse -> schema -> rules -> approval -> execute (retries, timeout) [driver]
       -> envelope
    6. append one result per call, in the model's emitted order, and go to 1

`LoopCore` never does I/O: it is given model turns and tool outcomes and answers "what next?", so
`run()` and `arun()` are a dozen lines each and cannot drift apart, and the core can be fuzzed.

Every tool call in the history gets exactly one result — also when a batch is cut short by a limit, a
cancel or the step cap — because providers reject a conversation with an unanswered call.

Left out on purpose: streaming tokens to the caller (see HTTPModel.stream), memory summarisation, and
multi-agent hand-offs; they sit around this loop, not inside it.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import json
import uuid
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Iterable, Sequence, Union

from .errors import LimitExceeded, ModelCallError, RunError, ToolExecutionError, ToolReturnError, ToolTimeout
from .execute import Executor, Job, Outcome, make_executor
from .policies import (CONTINUE_TEXT, REPORT, Deny, Edit, ErrorPolicyLike, LimitHit, Limits, sanitize_error_text,
                       normalize_approval, resolve_error_policy)
from .tools import Tool, ToolContext, Update
from .trace import Event, Trace
from .types import Message, ModelOptions, ModelTurn, ToolCall, ToolChoice, ToolResult, Usage
from .validate import error_result, validate_arguments


class StopReason(str, enum.Enum):
    """Why a run stopped. A str, so traces and tables show the plain word."""

    FINAL_ANSWER = "final_answer"  # the model answered without asking for tools
    MAX_STEPS = "max_steps"  # the step cap: the model was called Limits.max_steps times
    TOOL_LIMIT = "tool_limit"  # a per-run, per-thread or per-tool cap with exit_behavior "end"
    REPEATED_CALL = "repeated_call"  # the same call (name + arguments) past Limits.repeat_limit
    RETURN_DIRECT = "return_direct"  # every call of the last batch was a return_direct tool
    USER_CANCEL = "user_cancel"  # cancel was set from outside
    SCHEMA_FAIL = "schema_fail"  # more argument errors than Limits.max_invalid_calls
    ERROR = "error"  # the run raised (the exception carries this Run)

    def __str__(self) -> str:
        return self.value


#: tool_choice per turn: a fixed value, "required_first" (required on turn 1, then auto), or a function.
ToolChoicePolicy = Union[ToolChoice, str, Callable[[int, "Run"], ToolChoice]]


@dataclass
class Run:
    """The result of one run: the conversation, why it stopped, counters and the trace."""

    messages: list[Message]
    stop_reason: StopReason | None = None
    output: Any = None  # the final answer text (or the direct result, or the limit message)
    steps: int = 0  # model calls
    tool_calls: int = 0  # calls admitted by the limits (valid or not)
    tool_runs: int = 0  # tool executions, retries included
    invalid_calls: int = 0  # calls refused by lookup / parse / schema / rules
    usage: Usage = field(default_factory=Usage)
    results: list[ToolResult] = field(default_factory=list)
    state: dict = field(default_factory=dict)
    limit: LimitHit | None = None
    error: BaseException | None = None
    trace: Trace = field(default_factory=Trace, repr=False)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12], repr=False)
    start_index: int = 0  # where this run's messages begin (earlier ones came from the Thread)

    @property
    def new_messages(self) -> list[Message]:
        return self.messages[self.start_index:]

    def summary(self) -> dict:
        """The counters as a plain dict: handy for tables and assertions."""
        return {"stop_reason": str(self.stop_reason), "steps": self.steps, "tool_calls": self.tool_calls,
                "tool_runs": self.tool_runs, "invalid_calls": self.invalid_calls,
                "limit": self.limit.limit if self.limit else None}


class Thread:
    """A conversation that outlives one run: messages, state, and the per-thread tool-call counter.

        thread = Thread()
        agentkit.run(model, "Remember Osaka", tools=tools, thread=thread)
        agentkit.run(model, "Which city?", tools=tools, thread=thread)   # sees the first exchange
    """

    def __init__(self, messages: Iterable[Message] = (), state: dict | None = None):
        self.messages: list[Message] = list(messages)
        self.state: dict = dict(state or {})
        self.tool_calls = 0
        self.runs: list[Run] = []


@dataclass
class _Slot:
    """One call of a batch on its way to a result: either already answered, or waiting for a job."""

    call: ToolCall
    result: ToolResult | None = None
    job: Job | None = None
    tool: Tool | None = None


@dataclass
class _Batch:
    slots: list[_Slot]
    stop: LimitHit | None = None  # a limit that ends the run after this batch

    def jobs(self) -> list[Job]:
        return [s.job for s in self.slots if s.job is not None]


class LoopCore:
    """The decisions of the loop, without I/O. Drivers call, in a cycle:

        request() -> (messages, tool specs, options) or None when stopped
        on_turn(turn) -> list of Jobs to execute (possibly empty)
        on_outcomes(outcomes)
    """

    def __init__(self, tools: Sequence[Tool], messages: list[Message], *, limits: Limits,
                 on_tool_error: ErrorPolicyLike, tool_choice: ToolChoicePolicy,
                 parallel_tool_calls: bool | None, stream: bool, thread: Thread | None,
                 approve: Callable | None, cancel: Any, trace: Trace, start_index: int, state: dict,
                 tool_timeout: float | None = None):
        self.tools = {t.name: t for t in tools}
        if len(self.tools) != len(tools):
            raise ValueError("two tools share a name: " + ", ".join(sorted(
                {t.name for t in tools if sum(u.name == t.name for u in tools) > 1})))
        self.specs = tuple(t.spec for t in tools)
        self.limits, self.policy = limits, resolve_error_policy(on_tool_error)
        self.tool_choice, self.parallel, self.stream = tool_choice, parallel_tool_calls, stream
        self.thread, self.approve, self.cancel = thread, approve, cancel
        self.tool_timeout = tool_timeout  # for tools without a timeout of their own
        self.run = Run(messages, trace=trace, start_index=start_index, state=state)
        self.per_tool: dict[str, int] = {}
        self.repeats: dict[tuple[str, str], int] = {}
        self.batch: _Batch | None = None
        self.chars = sum(_size(m) for m in messages)  # request size, kept up to date incrementally
        self._check_tool_choice(tool_choice)

    # -- helpers -----------------------------------------------------------------------------------
    @property
    def stopped(self) -> bool:
        return self.run.stop_reason is not None

    def _append(self, message: Message) -> None:
        self.run.messages.append(message)
        self.chars += _size(message)

    def _cancelled(self) -> bool:
        c = self.cancel
        if c is None:
            return False
        return bool(c.is_set() if hasattr(c, "is_set") else c())

    def stop(self, reason: StopReason, output: Any = None) -> None:
        run = self.run
        run.stop_reason, run.output = reason, output
        run.trace.record("stop", reason=reason.value, steps=run.steps, tool_calls=run.tool_calls)

    def _check_tool_choice(self, choice: ToolChoicePolicy) -> None:
        if isinstance(choice, dict) and choice.get("name") not in self.tools:
            raise ValueError(f"tool_choice names {choice.get('name')!r}, which is not among the tools "
                             f"({', '.join(self.tools) or 'none'})")
        if isinstance(choice, str) and choice not in ("auto", "none", "required", "required_first"):
            raise ValueError(f"tool_choice={choice!r}: use 'auto', 'none', 'required', 'required_first', "
                             "{'name': tool}, or a function (step, run) -> choice")

    def _choice_for_this_turn(self) -> ToolChoice:
        choice = self.tool_choice
        if choice == "required_first":  # force a tool on the first turn only, or no final answer is possible
            return "required" if self.run.steps == 0 else "auto"
        if callable(choice):
            choice = choice(self.run.steps, self.run)
            self._check_tool_choice(choice)
        return choice

    # -- phase 1: build the request ------------------------------------------------------------------
    def request(self) -> tuple[list[Message], tuple, ModelOptions] | None:
        run, limits = self.run, self.limits
        if self.stopped:
            return None
        if self._cancelled():
            self.stop(StopReason.USER_CANCEL)
            return None
        if limits.max_steps is not None and run.steps >= limits.max_steps:  # only when max_steps == 0
            self._hit(LimitHit("max_steps", run.steps, limits.max_steps))
            return None
        options = ModelOptions(tool_choice=self._choice_for_this_turn() if self.specs else "auto",
                               parallel_tool_calls=self.parallel, stream=self.stream)
        run.steps += 1
        run.trace.record("model_request", step=run.steps, messages=len(run.messages), tools=len(self.specs),
                         tool_choice=options.tool_choice, chars=self.chars)
        return run.messages, self.specs, options

    def on_model_error(self, exc: BaseException) -> None:
        self.run.error = exc
        self.stop(StopReason.ERROR)
        raise ModelCallError(f"the model call failed at step {self.run.steps}: {exc}", self.run) from exc

    # -- phases 2-5: read the turn, check limits, prepare the calls ----------------------------------
    def on_turn(self, turn: ModelTurn) -> list[Job]:
        run = self.run
        run.usage = run.usage + turn.usage
        run.trace.record("model_response", step=run.steps, text_chars=len(turn.text or ""),
                         tool_calls=len(turn.tool_calls), stop=turn.stop, usage=turn.usage.total_tokens)
        self._append(turn.as_message())

        # 3. no tool calls: the model has answered
        if not turn.tool_calls:
            self.stop(StopReason.FINAL_ANSWER, turn.text)
            return []

        # 4. the step cap: results cannot reach the model any more, so requested tools are not run
        if self.limits.max_steps is not None and run.steps >= self.limits.max_steps:
            hit = LimitHit("max_steps", run.steps, self.limits.max_steps)
            self.batch = _Batch([_Slot(c, self._not_run(c, hit)) for c in turn.tool_calls], stop=hit)
            return []

        # 4-5. per call: limits, then lookup -> parse -> schema -> rules -> approval -> a job
        slots = []
        stop: LimitHit | None = None
        for call in turn.tool_calls:
            if stop is not None:  # the batch was cut short by an earlier call of it
                slots.append(_Slot(call, self._not_run(call, stop)))
                continue
            hit = self._admit(call)
            if hit is not None and self.limits.exit_behavior == "continue":
                slots.append(_Slot(call, ToolResult.failure(call, "limit", hit.message(), text=CONTINUE_TEXT)))
                continue
            if hit is not None:
                stop = hit
                slots.append(_Slot(call, self._not_run(call, hit)))
                continue
            slots.append(self._prepare(call))
        self.batch = _Batch(slots, stop)
        return self.batch.jobs()

    def _admit(self, call: ToolCall) -> LimitHit | None:
        """Count the call against every cap; the first cap it would exceed, or None (and it is counted)."""
        run, limits, tool = self.run, self.limits, self.tools.get(call.name)
        caps = [("run_limit", run.tool_calls, limits.run_limit)]
        if self.thread is not None:
            caps.append(("thread_limit", self.thread.tool_calls, limits.thread_limit))
        per_tool = [c for c in ((limits.per_tool or {}).get(call.name), tool.max_calls if tool else None)
                    if c is not None]
        if per_tool:
            caps.append((f"per_tool:{call.name}", self.per_tool.get(call.name, 0), min(per_tool)))
        # the canonical spelling costs a json.dumps: only pay for it when a repeat limit is set
        key = (call.name, _canonical(call)) if limits.repeat_limit is not None else None
        if key is not None:
            caps.append(("repeat_limit", self.repeats.get(key, 0), limits.repeat_limit))
        for name, used, cap in caps:
            if cap is not None and used + 1 > cap:
                hit = LimitHit(name, used + 1, cap)
                run.trace.record("limit", call_id=call.id, limit=name, count=used + 1, maximum=cap,
                                 action="blocked" if limits.exit_behavior == "continue" else limits.exit_behavior)
                return hit
        run.tool_calls += 1
        if self.thread is not None:
            self.thread.tool_calls += 1
        self.per_tool[call.name] = self.per_tool.get(call.name, 0) + 1
        if key is not None:
            self.repeats[key] = self.repeats.get(key, 0) + 1
        return None

    def _not_run(self, call: ToolCall, hit: LimitHit) -> ToolResult:
        return ToolResult.failure(call, "not_run", f"not run: {hit.message()}")

    def _gate(self, call: ToolCall, gate: str, ok: bool, kind: str | None = None) -> None:
        self.run.trace.record("gate", call_id=call.id, tool=call.name, gate=gate, ok=ok, error=kind)

    def _refuse(self, call: ToolCall, result: ToolResult, gate: str) -> _Slot:
        """An argument error or unknown tool: reported to the model, unless the policy says raise."""
        self.run.invalid_calls += 1
        self._gate(call, gate, False, result.error_kind)
        if self.policy.raise_argument_errors:
            self.batch = None
            self.run.error = None
            self.stop(StopReason.ERROR)
            raise ToolExecutionError(f"tool call {call.name!r} ({call.id}) refused at the {gate} gate: "
                                     f"{result.error['message']}", self.run, call)
        return _Slot(call, result)

    def _prepare(self, call: ToolCall) -> _Slot:
        tool = self.tools.get(call.name)
        if tool is None:  # lookup: an unknown name (a typo, or a stale cached tool list)
            known = ", ".join(sorted(self.tools)) or "none"
            return self._refuse(call, ToolResult.failure(
                call, "unknown_tool", f"no tool named {call.name!r}; available tools: {known}"), "lookup")
        checked = validate_arguments(tool, call.raw_arguments)  # parse -> schema -> rules
        if not checked.ok:
            return self._refuse(call, error_result(call, checked), checked.gate or "parse")
        self._gate(call, "rules", True)
        arguments = checked.arguments
        if self.approve is not None:  # a human (or a rule) may approve, deny or edit the call
            decision = normalize_approval(self.approve(call, self._context(tool, call, 1)))
            if isinstance(decision, Deny):
                self._gate(call, "approval", False, "denied")
                return _Slot(call, ToolResult.failure(call, "denied", decision.reason))
            if isinstance(decision, Edit):
                checked = validate_arguments(tool, decision.arguments)
                if not checked.ok:
                    return self._refuse(call, error_result(call, checked), "approval")
                arguments = checked.arguments
            self._gate(call, "approval", True)
        return _Slot(call, None, self._job(tool, call, arguments), tool)

    def _context(self, tool: Tool, call: ToolCall, attempt: int) -> ToolContext:
        return ToolContext(call_id=call.id, tool_name=tool.name, state=MappingProxyType(self.run.state),
                           step=self.run.steps, counters=MappingProxyType(self.per_tool),
                           run_id=self.run.run_id, attempt=attempt, trace=self.run.trace)

    def _job(self, tool: Tool, call: ToolCall, arguments: dict) -> Job:
        if tool.context_param:
            def invoke(attempt: int) -> Any:
                return tool.invoke(arguments, self._context(tool, call, attempt))
        else:
            def invoke(attempt: int) -> Any:
                return tool.invoke(arguments, None)
        timeout = tool.timeout if tool.timeout is not None else self.tool_timeout
        return Job(call.id, tool.name, invoke, tool.is_async, timeout, self.policy.retry, tool.idempotent)

    # -- phase 6: results in emitted order, then decide whether to go on -------------------------------
    def on_outcomes(self, outcomes: Sequence[Outcome]) -> None:
        run, batch = self.run, self.batch
        assert batch is not None, "on_outcomes() without a pending batch"
        waiting = [slot for slot in batch.slots if slot.job is not None]
        if len(waiting) != len(outcomes):
            raise ValueError(f"{len(outcomes)} outcomes for {len(waiting)} jobs: an executor lost or added results")
        run.tool_runs += sum(o.attempts for o in outcomes)  # counted first: a raising policy may end the run
        for slot, outcome in zip(waiting, outcomes):
            slot.result = self._result(slot, outcome)
        cancelled = self._cancelled()
        for slot in batch.slots:
            result = slot.result
            run.results.append(result)
            run.trace.record("result", call_id=result.call_id, tool=result.name, ok=result.ok,
                             error=result.error_kind)
            self._append(Message.tool(result))
        self.batch = None

        # why we might stop now, in order of precedence
        if batch.stop is not None:
            self._hit(batch.stop)
        elif cancelled:
            self.stop(StopReason.USER_CANCEL)
        elif self.limits.max_invalid_calls is not None and run.invalid_calls > self.limits.max_invalid_calls:
            self._hit(LimitHit("max_invalid_calls", run.invalid_calls, self.limits.max_invalid_calls))
        elif all(s.tool is not None and s.tool.return_direct and s.result.ok for s in batch.slots):
            # return_direct ends the run only when *every* call of the batch asks for it
            direct = [s.result.result for s in batch.slots]
            self.stop(StopReason.RETURN_DIRECT, direct[0] if len(direct) == 1 else direct)

    def _result(self, slot: _Slot, outcome: Outcome) -> ToolResult:
        call, tool = slot.call, slot.tool
        if outcome.ok:
            try:
                value = outcome.value
                if isinstance(value, Update):
                    value = tool.check_return(value)  # raises ToolReturnError without a message
                    self.run.state.update(value.state)
                    if self.thread is not None:
                        self.thread.state.update(value.state)
                    # the message goes in the same envelope as any return value: one stable shape
                    return ToolResult.success(call, tool.to_jsonable(value.message))
                return ToolResult.success(call, tool.to_jsonable(value))
            except ToolReturnError as exc:
                outcome = Outcome(error=exc, attempts=outcome.attempts)
        exc = outcome.error
        text = self.policy.decide(exc, call)
        if text is None:  # the policy says raise
            self.batch = None
            self.run.error = exc
            self.stop(StopReason.ERROR)
            said = str(exc) if isinstance(exc, ToolReturnError) else f"tool {call.name!r} raised {exc!r}"
            raise ToolExecutionError(said, self.run, call) from exc
        kind = "timeout" if isinstance(exc, ToolTimeout) else (
            "bad_return" if isinstance(exc, ToolReturnError) else "tool_error")
        message = sanitize_error_text(f"{type(exc).__name__}: {exc}")
        if outcome.attempts > 1:
            message += f" (after {outcome.attempts} attempts)"
        return ToolResult.failure(call, kind, message, text=None if text == REPORT else text)

    def _hit(self, hit: LimitHit) -> None:
        """A cap that ends the run: raise (exit_behavior="error") or stop with a message naming it."""
        run = self.run
        run.limit = hit
        text = hit.message()
        run.trace.record("limit", limit=hit.limit, count=hit.count, maximum=hit.maximum,
                         action="error" if self.limits.exit_behavior == "error" else "end")
        self._append(Message.assistant(text))
        if self.limits.exit_behavior == "error":
            self.stop(StopReason.ERROR, text)
            raise LimitExceeded(text, run, hit.limit, hit.count, hit.maximum)
        self.stop(StopReason(hit.stop_reason), text)


def _size(message: Message) -> int:
    size = len(message.content or "")
    for call in message.tool_calls:
        raw = call.raw_arguments
        size += len(call.name) + (len(raw) if isinstance(raw, str) else len(json.dumps(raw, default=str)))
    return size


def _canonical(call: ToolCall) -> str:
    """The arguments in one spelling, so {"a":1,"b":2} and {"b":2,"a":1} count as the same call."""
    if call.arguments is not None:
        try:
            return json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):
            pass
    return str(call.raw_arguments)


# -- the drivers -----------------------------------------------------------------------------------------

def _start(prompt: Any, tools: Sequence[Tool], *, system: str | None, thread: Thread | None,
           limits: Limits | None, on_tool_error: ErrorPolicyLike, tool_choice: ToolChoicePolicy,
           parallel_tool_calls: bool | None, stream: bool, approve: Callable | None, cancel: Any,
           on_event: Callable[[Event], Any] | None, trace: Trace | None,
           tool_timeout: float | None) -> LoopCore:
    history = list(thread.messages) if thread is not None else []
    start = len(history)
    if system and not any(m.role == "system" for m in history):
        history.insert(0, Message.system(system))
    history.extend(_as_messages(prompt))
    trace = trace or Trace()
    if on_event is not None:
        trace.listeners.append(on_event)
    state = thread.state if thread is not None else {}
    return LoopCore(list(tools), history, limits=limits if limits is not None else Limits(),
                    on_tool_error=on_tool_error, tool_choice=tool_choice,
                    parallel_tool_calls=parallel_tool_calls, stream=stream, thread=thread, approve=approve,
                    cancel=cancel, trace=trace, start_index=start, state=dict(state), tool_timeout=tool_timeout)


def _as_messages(prompt: Any) -> list[Message]:
    if prompt is None:
        return []
    if isinstance(prompt, str):
        return [Message.user(prompt)]
    if isinstance(prompt, Message):
        return [prompt]
    if isinstance(prompt, (list, tuple)) and all(isinstance(m, Message) for m in prompt):
        return list(prompt)
    raise TypeError(f"prompt must be a str, a Message or a list of Messages, not {type(prompt).__name__}")


def _finish(core: LoopCore, thread: Thread | None) -> Run:
    run = core.run
    if thread is not None:
        thread.messages = list(run.messages)
        thread.runs.append(run)
    return run


def run(model: Any, prompt: Any, tools: Sequence[Tool] = (), *, system: str | None = None,
        limits: Limits | None = None, on_tool_error: ErrorPolicyLike = "report",
        tool_choice: ToolChoicePolicy = "auto", parallel_tool_calls: bool | None = None, stream: bool = False,
        executor: str | Executor | None = "threads", max_concurrency: int = 64, thread: Thread | None = None,
        approve: Callable | None = None, cancel: Any = None, on_event: Callable[[Event], Any] | None = None,
        trace: Trace | None = None, tool_timeout: float | None = None) -> Run:
    """Run the loop to a stop reason and return the Run. `model` has complete(messages, tools, options).

    `tool_timeout` (seconds) bounds every tool without a `timeout` of its own. It is off by default
    because Python cannot interrupt a function: a timed call runs in a separate thread, which costs
    about 50 µs a call; set it whenever a tool could hang.
    """
    core = _start(prompt, tools, system=system, thread=thread, limits=limits, on_tool_error=on_tool_error,
                  tool_choice=tool_choice, parallel_tool_calls=parallel_tool_calls, stream=stream,
                  approve=approve, cancel=cancel, on_event=on_event, trace=trace, tool_timeout=tool_timeout)
    pool, owned = make_executor(executor, max_concurrency=max_concurrency)
    complete = _sync_complete(model)
    try:
        while (request := core.request()) is not None:
            try:
                turn = complete(*request)
            except Exception as exc:  # noqa: BLE001 — becomes ModelCallError carrying the run
                core.on_model_error(exc)
            jobs = core.on_turn(turn)
            if core.batch is not None:
                core.on_outcomes(pool.run_batch(jobs, core.run.trace))
    except RunError:
        _finish(core, thread)
        raise
    finally:
        if owned:
            pool.close()
    return _finish(core, thread)


async def arun(model: Any, prompt: Any, tools: Sequence[Tool] = (), *, system: str | None = None,
               limits: Limits | None = None, on_tool_error: ErrorPolicyLike = "report",
               tool_choice: ToolChoicePolicy = "auto", parallel_tool_calls: bool | None = None,
               stream: bool = False, executor: str | Executor | None = "asyncio", max_concurrency: int = 64,
               thread: Thread | None = None, approve: Callable | None = None, cancel: Any = None,
               on_event: Callable[[Event], Any] | None = None, trace: Trace | None = None,
               tool_timeout: float | None = None) -> Run:
    """The same loop as `run`, driven from asyncio: model.acomplete and tools awaited concurrently."""
    core = _start(prompt, tools, system=system, thread=thread, limits=limits, on_tool_error=on_tool_error,
                  tool_choice=tool_choice, parallel_tool_calls=parallel_tool_calls, stream=stream,
                  approve=approve, cancel=cancel, on_event=on_event, trace=trace, tool_timeout=tool_timeout)
    pool, owned = make_executor(executor, default="asyncio", max_concurrency=max_concurrency)
    acomplete = _async_complete(model)
    try:
        while (request := core.request()) is not None:
            try:
                turn = await acomplete(*request)
            except Exception as exc:  # noqa: BLE001
                core.on_model_error(exc)
            jobs = core.on_turn(turn)
            if core.batch is not None:
                core.on_outcomes(await pool.arun_batch(jobs, core.run.trace))
    except RunError:
        _finish(core, thread)
        raise
    finally:
        if owned:
            pool.close()
    return _finish(core, thread)


def _sync_complete(model: Any) -> Callable[..., ModelTurn]:
    if hasattr(model, "complete"):
        return model.complete
    if hasattr(model, "acomplete"):
        from .execute import _run_in_daemon_thread
        return lambda *a: _run_in_daemon_thread(lambda: asyncio.run(model.acomplete(*a)), None, "model")
    if callable(model):
        return model
    raise TypeError(f"{type(model).__name__} is not a model: give it complete(messages, tools, options)")


def _async_complete(model: Any) -> Callable[..., Any]:
    if hasattr(model, "acomplete"):
        return model.acomplete
    complete = _sync_complete(model)
    if inspect.iscoroutinefunction(complete):
        return complete
    return lambda *a: asyncio.to_thread(complete, *a)
