"""The agent loop: a sans-I/O core that decides what happens next, and two short drivers that do the I/O.

    run = agentkit.run(model, "東京の天気と、1ドル何円か教えて", tools=[get_weather, get_exchange_rate])
    run.output        # the final answer
    run.stop_reason   # StopReason.FINAL_ANSWER
    run.trace.table() # what happened, in order

One step of the loop, as a numbered recipe (the `# 1.` ... `# 6.` markers in the code are these steps):

    1. build the request: the whole conversation + the tool list (re-sent every turn) + tool_choice;
       a `compact=` hook may send less (agentkit.long_running.compaction; run.messages keeps everything)
    2. call the model -> ModelTurn (text, tool calls, stop signal, usage)                  [driver]
    3. no tool calls -> the run ends with "final_answer"
    4. check limits: the step cap, the budgets (tokens, cost, time: agentkit.core.budgets), the tool-call caps
       (per run, per thread, per tool), repeated calls
    5. per call: lookup -> parse -> schema -> rules -> approval -> a Job; the driver runs the jobs
       (retries, timeouts) [driver], and each outcome becomes a result (envelope, error policy)
    6. answer every call, in the model's emitted order; decide whether the run ends; go to 1

`LoopCore.next()` is the one place that decides what happens next. It answers one of

    CallModel(messages, tools, options)  the driver calls the model and hands the turn to take_turn()
    RunTools(jobs, trace)                the driver runs the jobs and hands the outcomes to take_outcomes()
    Done(run)                            the run has ended: result() returns it, or raises its error

so `run()` and `arun()` are one short `while` loop each and cannot drift apart, and the core is tested
and fuzzed without any I/O. Whether the run ends is decided in one method, `_why_stop`, in one order of
precedence; what `run()` and `arun()` accept is one `Settings` object.

Every tool call keeps exactly one result, whatever ends the run: a final answer, a limit, a cancel, the
step cap, return_direct, an error policy or a limit that raises, a bug in an approval hook, Ctrl-C. A
turn with calls enters the history together with its answers (the raising call its error result, calls
that never ran "not_run"), so `run.messages`, the partial run an exception carries, and a Thread's
messages never hold an unanswered call, and a Thread stays usable after a run raised. This is where
agentkit differs from LangChain v1: `create_agent` with a checkpointer saves the orphaned call when a
tool raises, and sends it to the model on the thread's next invocation, which a real provider refuses
with a 400 (OpenAI: "An assistant message with 'tool_calls' must be followed by tool messages responding
to each 'tool_call_id'."; the symptom of langchain-ai/langgraph issue 531).

Left out on purpose: streaming tokens to the caller (see HTTPModel.stream) and multi-agent hand-offs;
they sit around this loop, not inside it. So do resuming a paused run, replaying and forking one, and its
OpenTelemetry spans (agentkit.long_running: resume, replay, otel).
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import inspect
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, NamedTuple, Sequence, Union

from .budgets import WRAP_UP_TEXT, BudgetMeter, Cost, Unpriced, cost
from .checkpoint import Paused, run_to_dict
from .errors import LimitExceeded, ModelCallError, RunError, ToolExecutionError, ToolReturnError, UnknownPriceError
from .execute import Executor, Job, Outcome, make_executor, run_in_daemon_thread
from .history import compact_request
from .policies import (
    CONTINUE_TEXT,
    REPORT,
    Deny,
    Edit,
    ErrorPolicy,
    ErrorPolicyLike,
    LimitHit,
    Limits,
    Pause,
    failure_result,
    normalize_approval,
    resolve_error_policy,
)
from .tools import Tool, ToolContext, is_valid_timeout
from .trace import Event, Trace
from .types import Message, ModelOptions, ModelTurn, ToolCall, ToolChoice, ToolResult, ToolSpec, Usage, json_shape
from .validate import MAX_BYTES, MAX_DEPTH, error_result, validate_arguments


class StopReason(str, enum.Enum):
    """Why a run stopped. A str, so traces and tables show the plain word."""

    FINAL_ANSWER = "final_answer"  # the model answered without asking for tools
    MAX_STEPS = "max_steps"  # the step cap: the model was called Limits.max_steps times
    TOOL_LIMIT = "tool_limit"  # a per-run, per-thread or per-tool cap with exit_behavior "end"
    REPEATED_CALL = "repeated_call"  # the same call (name + arguments) past Limits.max_repeats
    RETURN_DIRECT = "return_direct"  # every call of the last batch was a return_direct tool
    USER_CANCEL = "user_cancel"  # cancel was set from outside (or Ctrl-C, or the task was cancelled)
    SCHEMA_FAIL = "schema_fail"  # more argument errors than Limits.max_invalid_calls
    ERROR = "error"  # the run raised (the exception carries this Run)
    TOKEN_BUDGET = "token_budget"  # Limits.max_tokens / max_thread_tokens ran out (agentkit.core.budgets)
    COST_BUDGET = "cost_budget"  # Limits.max_cost_usd ran out
    TIME_BUDGET = "time_budget"  # Limits.max_seconds ran out
    PAUSED = "paused"  # an approval answered Pause(): Run.to_json(), then agentkit.resume(...)

    def __str__(self) -> str:
        return self.value


#: tool_choice per turn: a fixed value, "required_first" (required on turn 1, then auto), or a function.
ToolChoicePolicy = Union[ToolChoice, str, Callable[[int, "Run"], ToolChoice]]

#: The tools of a run: a list, or a function returning the current list (asked before every model call).
ToolsLike = Union[Sequence[Tool], Callable[[], Sequence[Tool]]]


@dataclass
class Run:
    """The result of one run: the conversation, why it stopped, counters and the trace."""

    messages: list[Message]
    stop_reason: StopReason | None = None
    output: Any = None  # the final answer text (or the direct result, or the limit message)
    steps: int = 0  # model calls
    tool_call_count: int = 0  # tool calls admitted by the limits (valid or not)
    tool_runs: int = 0  # tool executions, retries included
    invalid_calls: int = 0  # calls refused by lookup / parse / schema / rules
    usage: Usage = field(default_factory=Usage)
    usage_by_model: dict[str | None, Usage] = field(default_factory=dict)  # what each model spent: its cost
    results: list[ToolResult] = field(default_factory=list)
    turns: list[ModelTurn] = field(default_factory=list)  # the model's answers, as they came (for replay)
    state: dict = field(default_factory=dict)
    limit: LimitHit | None = None
    error: BaseException | None = None  # what ended the run by raising: the original exception if any
    trace: Trace = field(default_factory=Trace, repr=False)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12], repr=False)
    start_index: int = 0  # where this run's messages begin (earlier ones came from the Thread)
    pending: Paused | None = None  # a paused run's turn, whose calls wait for a decision

    def to_json(self, indent: int | None = None) -> str:
        """The run as JSON, to be resumed after a restart (`agentkit.resume`); see agentkit.core.checkpoint."""
        return json.dumps(run_to_dict(self), ensure_ascii=False, indent=indent, default=str)

    @property
    def new_messages(self) -> list[Message]:
        return self.messages[self.start_index:]

    def cost(self, prices: dict | None = None) -> Cost:
        """What the run's tokens cost (USD), from budgets.DEFAULT_PRICES with `prices` merged over it;
        models without a price are named in `.unpriced`, not guessed."""
        return cost(self.usage_by_model, prices)

    def summary(self) -> dict:
        """The counters as a plain dict: handy for tables and assertions."""
        return {"stop_reason": str(self.stop_reason), "steps": self.steps, "tool_call_count": self.tool_call_count,
                "tool_runs": self.tool_runs, "invalid_calls": self.invalid_calls,
                "limit": self.limit.limit if self.limit else None}


class Thread:
    """A conversation that outlives one run: messages, state, and the per-thread tool-call counter.

        thread = Thread()
        agentkit.run(model, "Remember Osaka", tools=tools, thread=thread)
        agentkit.run(model, "Which city?", tools=tools, thread=thread)   # sees the first exchange

    Every run writes its messages back, also one that raised: every call in them has its result.
    """

    def __init__(self, messages: Iterable[Message] = (), state: dict | None = None):
        self.messages: list[Message] = list(messages)
        self.state: dict = dict(state or {})
        self.tool_call_count = 0
        self.steps = 0  # model calls across its runs (Limits.max_thread_steps)
        self.usage = Usage()  # tokens across its runs (Limits.max_thread_tokens)
        self.runs: list[Run] = []


@dataclass(frozen=True)
class Settings:
    """How a run behaves: what `run()` / `arun()` take besides the model, prompt, tools, thread, trace and
    executor. The core reads its choices from here and nowhere else. Each setting is defined and described
    once, here: the drivers take them as `**settings`, and `takes_settings` puts each field in their
    signatures and this table in their help (a new field needs its line here).

    Settings (keywords of run(), arun(), resume() and aresume()):
        system               a system prompt, put first in the conversation unless it has one (default None)
        limits               Limits(...): the step cap, tool-call caps per run / thread / tool, repeated
                             calls, invalid calls, token / cost / time budgets, and what a hit cap does
                             (exit_behavior); default None means Limits(): 20 model calls at most. See
                             agentkit.core.policies.Limits
        on_tool_error        what an exception inside a tool does: "report" (default: the model reads a
                             sanitised error), "raise", a fixed text (a sentence) the model reads, exception
                             class(es) to report (others raise), fn(exc, call) -> text or None to raise, or
                             Retry(...). A near miss of a mode name ("rasie") is refused
        tool_choice          "auto" (default), "none", "required", "required_first" (required on the first
                             turn, then auto), {"name": tool} to force one tool, or fn(step, run) -> one of those
        parallel_tool_calls  True / False asks the provider to allow / forbid several calls in one turn;
                             None (default) sends nothing and leaves the provider's default
        stream               True: the model is called with streaming on (the turn is reassembled)
        approve              fn(call, ctx) asked before each call runs: True / None approves, False or a
                             reason denies, Approve() / Deny(reason) / Edit(arguments); default None: all run
        cancel               a threading.Event (or anything with is_set()), or a function returning a bool:
                             once set, the run stops with "user_cancel", every call answered
        tool_timeout         seconds bounding every tool without a `timeout` of its own (default None: off,
                             because Python cannot interrupt a function: a timed call runs in a thread of
                             its own, about 50 µs a call; set it whenever a tool could hang)
        on_event             fn(event) called with each trace Event as it happens (progress, logging)
        compact              fn(messages) -> messages, asked before each model call: what is sent
                             (run.messages keeps everything); agentkit.long_running.compaction's DropOldest /
                             ElideToolResults / Summarize; default None: everything is sent
    """

    system: str | None = None
    limits: Limits | None = None  # None: Limits() (20 model calls at most)
    on_tool_error: ErrorPolicyLike = "report"
    tool_choice: ToolChoicePolicy = "auto"
    parallel_tool_calls: bool | None = None
    stream: bool = False
    approve: Callable[[ToolCall, ToolContext], Any] | None = None
    cancel: Any = None  # a threading.Event (or anything with is_set()), or a function returning a bool
    tool_timeout: float | None = None
    on_event: Callable[[Event], Any] | None = None
    compact: Callable[[list[Message]], list[Message]] | None = None  # what to send: see long_running.compaction
    policy: ErrorPolicy = field(init=False, repr=False)  # on_tool_error, resolved once

    @classmethod
    def from_keywords(cls, driver: str, keywords: dict[str, Any], leave_out: tuple[str, ...] = ()) -> Settings:
        """The Settings a driver's `**settings` name; an unknown keyword is refused as Python refuses one."""
        for name in keywords:
            if name not in SETTING_NAMES or name in leave_out:
                raise TypeError(f"{driver}() got an unexpected keyword argument {name!r}")
        return cls(**keywords)

    def __post_init__(self) -> None:
        limits = Limits() if self.limits is None else self.limits
        if not isinstance(limits, Limits):
            raise TypeError(f"limits={self.limits!r}: use Limits(...) or None")
        object.__setattr__(self, "limits", limits)
        object.__setattr__(self, "policy", resolve_error_policy(self.on_tool_error))
        timeout = self.tool_timeout
        if timeout is not None and not is_valid_timeout(timeout):  # the same rule as a tool's own timeout
            raise ValueError(f"tool_timeout={timeout!r}: use a number of seconds > 0, or None for no timeout")
        if self.parallel_tool_calls is not None and not isinstance(self.parallel_tool_calls, bool):
            raise TypeError(f"parallel_tool_calls={self.parallel_tool_calls!r}: use True, False or None")
        if self.compact is not None and not callable(self.compact):
            raise TypeError(f"compact={self.compact!r}: use a function messages -> messages, e.g. DropOldest()")


#: The settings a driver takes as keywords (policy is derived, not given).
SETTING_NAMES = frozenset(f.name for f in dataclasses.fields(Settings) if f.init)


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
    """One call of the current turn on its way to its one result."""

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
    said: bool = False  # the output is already in the history (the model's last word after a budget)


class LoopCore:
    """The decisions of the loop, without I/O. A driver asks `next()` and does what it says:

        CallModel -> call the model, then take_turn(turn)      (or model_failed(exc))
        RunTools  -> run the jobs, then take_outcomes(outcomes)
        Done      -> return result()                           (which raises if the run ended by raising)

    and calls abort(exc) if anything else raises on the way, so that the conversation is closed anyway.
    """

    def __init__(self, tools: ToolsLike, prompt: Any, settings: Settings | None = None, *,
                 thread: Thread | None = None, trace: Trace | None = None):
        self.settings = settings = settings if settings is not None else Settings()
        self.limits = settings.limits
        if isinstance(tools, Tool):
            raise TypeError("tools is a list of Tools (or a function returning one), not a single Tool: "
                            "tools=[my_tool]")
        # A function is asked again before every model call: a tool list that changes while the run goes on
        # (an MCP server's, after notifications/tools/list_changed) reaches the model at the next turn.
        self.tool_source: Callable[[], Sequence[Tool]] | None = tools if callable(tools) else None
        self.tools: dict[str, Tool] = {}
        self.withdrawn: set[str] = set()  # offered earlier in this run, gone from the list since
        self._use_tools(list(tools() if callable(tools) else tools))
        self.thread = thread

        history = list(thread.messages) if thread is not None else []
        if settings.system and not any(m.role == "system" for m in history):
            history.insert(0, Message.system(settings.system))
        start = len(history)
        history.extend(_as_messages(prompt))
        trace = trace if trace is not None else Trace()
        if settings.on_event is not None:
            trace.listeners.append(settings.on_event)
        self.run = Run(messages=history, trace=trace, start_index=start,
                       state=dict(thread.state) if thread is not None else {})
        self.chars = sum(_size(m) for m in history)  # request size, kept up to date incrementally

        self.per_tool: dict[str, int] = {}  # calls admitted per tool name
        self.repeats: dict[tuple[str, str], int] = {}  # calls admitted per (name, canonical arguments)
        self.options: dict[str, ModelOptions] = {}  # per tool_choice word, built on first use
        self.turn: ModelTurn | None = None  # the model's last answer
        self.batch: list[_Slot] | None = None  # its calls, until they are answered
        # Facts for _why_stop, recorded where they happen:
        self.hit: LimitHit | None = None  # a cap reached with exit_behavior "end"/"error", or the step cap
        self.failure: tuple[RunError, BaseException | None] | None = None  # an error to raise, and its cause
        self.direct: list[Any] | None = None  # the results of a batch of return_direct calls
        self.ending: _Ending | None = None  # set once: how the run ended
        self.meter = BudgetMeter(self.limits) if self.limits.budgeted else None
        self.wrap_up: LimitHit | None = None  # a budget ran out under "continue": one last call, no tools
        self.wrapping = False  # that last call has been asked for
        self.decisions: dict[str, Any] = {}  # approval decisions given to resume(), by call id

    def _use_tools(self, tools: list[Tool]) -> None:
        """Take this tool list: by name for lookups, as specs for the request, and the facts derived from it."""
        by_name = {t.name: t for t in tools}
        if len(by_name) != len(tools):
            raise ValueError("two tools share a name: " + ", ".join(sorted(
                {t.name for t in tools if sum(u.name == t.name for u in tools) > 1})))
        _check_tool_choice(self.settings.tool_choice, by_name)
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
        """Whether the run ends before the next model call, and how; in order of precedence."""
        run, limits = self.run, self.limits
        if self.failure is not None:  # the model call failed, or an error policy said raise
            error, cause = self.failure
            return _Ending(StopReason.ERROR, error=error, cause=cause)
        if self.turn is not None and not self.turn.tool_calls:  # 3. no tool calls: the model has answered
            if self.wrapping:  # its last word after a budget ran out under "continue"
                return _Ending(StopReason(self.wrap_up.stop_reason), self.turn.text, limit=self.wrap_up, said=True)
            return _Ending(StopReason.FINAL_ANSWER, output=self.turn.text)
        hit = self.hit
        if hit is None and limits.max_steps is not None:  # also max_steps=0, before the first model call
            hit = self._over("max_steps", run.steps, limits.max_steps, or_equal=True)
        if hit is None and limits.max_thread_steps is not None and self.thread is not None:
            hit = self._over("max_thread_steps", self.thread.steps, limits.max_thread_steps, or_equal=True)
        if hit is None and self.meter is not None and self.wrap_up is None and (over := self.meter.over_time()):
            hit = self._budget_spent(LimitHit(*over))  # the time budget also runs out while tools run
        if hit is None and self.settings.cancel is not None and self._cancelled():
            return _Ending(StopReason.USER_CANCEL)
        if hit is None and limits.max_invalid_calls is not None:
            hit = self._over("max_invalid_calls", run.invalid_calls, limits.max_invalid_calls)
        if hit is not None:  # a cap ends the run: with a final message naming it, or by raising
            text = hit.message()
            if limits.exit_behavior == "error":
                error = LimitExceeded(text, run, hit.limit, hit.count, hit.maximum)
                return _Ending(StopReason.ERROR, output=text, error=error, limit=hit)
            return _Ending(StopReason(hit.stop_reason), output=text, limit=hit)
        if self.wrap_up is not None and not self.wrapping:
            self.wrapping = True  # a budget ran out under "continue": one last call, without tools
            return None
        if self.direct is not None:  # every call of the batch was return_direct
            return _Ending(StopReason.RETURN_DIRECT, output=self.direct[0] if len(self.direct) == 1 else self.direct)
        return None

    def _end(self, ending: _Ending) -> None:
        run = self.run
        self.ending = ending
        if ending.limit is not None:
            run.limit = ending.limit
        if ending.limit is not None and not ending.said:
            self._append(Message.assistant(ending.output))  # the final message names the limit and the counts
        run.stop_reason, run.output = ending.reason, ending.output
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
        if ended_here:
            cancelled = isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError))
            self.ending = _Ending(StopReason.USER_CANCEL if cancelled else StopReason.ERROR, cause=exc)
            run.stop_reason, run.error = self.ending.reason, exc
        for slot in self.batch or ():
            if slot.result is None:
                slot.result = _not_run(slot.call, f"the run stopped ({type(exc).__name__})")
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
        if self.tool_source is not None:  # the tools as they are now (the list is re-sent every turn anyway)
            current = list(self.tool_source())
            if tuple(map(id, current)) != self.tool_ids:
                self._use_tools(current)
                run.trace.record("tools_changed", step=run.steps + 1, tools=[t.name for t in current])
        # after a budget ran out under "continue", the last call is without tools: answer with what you have
        choice = ("none" if self.wrapping else self._choice_for_this_turn()) if self.specs else "auto"
        options = self.options.get(choice) if isinstance(choice, str) else None
        if options is None:
            options = ModelOptions(tool_choice=choice, parallel_tool_calls=settings.parallel_tool_calls,
                                   stream=settings.stream)
            if isinstance(choice, str):  # the same few options every turn: built once
                self.options[choice] = options
        run.steps += 1
        if self.thread is not None:
            self.thread.steps += 1
        run.trace.record("model_request", step=run.steps, messages=len(run.messages), tools=len(self.specs),
                         tool_choice=options.tool_choice, chars=self.chars)
        if settings.compact is not None:  # what is sent may be shorter; run.messages keeps everything
            return CallModel(compact_request(settings.compact, run.messages, run.trace, run.steps), self.specs,
                             options)
        return CallModel(run.messages, self.specs, options)

    def _choice_for_this_turn(self) -> ToolChoice:
        choice = self.settings.tool_choice
        if choice == "auto":
            return choice
        if choice == "required_first":  # force a tool on the first turn only, or no final answer is possible
            return "required" if self.run.steps == 0 else "auto"
        if callable(choice):
            choice = choice(self.run.steps, self.run)
            _check_tool_choice(choice, self.tools)
        return choice

    # -- 2. the model's answer (the driver called the model) ---------------------------------------------

    def model_failed(self, exc: BaseException) -> None:
        error = ModelCallError(f"the model call failed at step {self.run.steps}: {exc}", self.run)
        self.failure = (error, exc)

    def take_turn(self, turn: ModelTurn) -> None:
        run, limits = self.run, self.limits
        if turn.usage.input_tokens or turn.usage.output_tokens:
            run.usage = run.usage + turn.usage
            spent = run.usage_by_model.get(turn.model)
            run.usage_by_model[turn.model] = turn.usage if spent is None else spent + turn.usage
            if self.thread is not None:
                self.thread.usage = self.thread.usage + turn.usage
        # turn.stop is the provider's signal for this turn ("tool_calls", "length", ...), not the run's end
        run.trace.record("model_response", step=run.steps, text_chars=len(turn.text or ""),
                         tool_calls=len(turn.tool_calls), stop=turn.stop, usage=turn.usage.total_tokens)
        self.turn = turn
        run.turns.append(turn)
        if not turn.tool_calls:  # 3. no tool calls: the answer joins the history; next() ends the run
            self._append(turn.as_message())
            return
        self.batch = [_Slot(call) for call in turn.tool_calls]

        # 4. the step cap: results could not reach the model any more, so the calls are not run
        if limits.max_steps is not None:
            self.hit = self._over("max_steps", run.steps, limits.max_steps, or_equal=True)
        if self.meter is not None and self.hit is None:  # 4. the budgets: the tokens are spent already
            self._check_budgets(turn)
        # a Pause() from the approval gate takes the turn back out: the counters as they were before it
        before = self._counters() if self.settings.approve is not None else None
        # 4.-5. per call: the caps, then lookup -> parse -> schema -> rules -> approval -> a job
        for slot in self.batch:
            if self.hit is not None or self.failure is not None or self.wrap_up is not None:  # cut short
                slot.result = _not_run(slot.call, self._why_cut_short())
                continue
            hit = self._admit(slot.call)
            if hit is None:
                self._prepare(slot)
            elif limits.exit_behavior == "continue":
                slot.result = ToolResult.failure(slot.call, "limit", CONTINUE_TEXT)  # the envelope, LangChain's words
            else:
                self.hit = hit
                slot.result = _not_run(slot.call, hit.message())
        if self.failure is not None:  # the run ends by raising: nothing of this batch runs any more
            for slot in self.batch:
                if slot.result is None:
                    slot.result = _not_run(slot.call, self._why_cut_short())
        elif before is not None and any(slot.paused for slot in self.batch):
            self._pause(before)

    def _counters(self) -> dict:
        return {"tool_call_count": self.run.tool_call_count, "invalid_calls": self.run.invalid_calls,
                "per_tool": dict(self.per_tool), "repeats": [[*key, n] for key, n in self.repeats.items()],
                "thread_tool_calls": self.thread.tool_call_count if self.thread is not None else None}

    def _pause(self, before: dict) -> None:
        """An approval answered Pause(): the turn stays out of the history (none of its calls has run), and
        the run ends "paused", keeping the turn and the counters as they were before it for resume()."""
        run, waiting = self.run, tuple(slot.call.id for slot in self.batch if slot.paused)
        run.tool_call_count, run.invalid_calls = before["tool_call_count"], before["invalid_calls"]
        self.per_tool, self.repeats = before["per_tool"], {(n, a): c for n, a, c in before["repeats"]}
        if self.thread is not None:
            self.thread.tool_call_count = before["thread_tool_calls"]
        run.pending, self.batch, self.hit = Paused(self.turn, waiting, before), None, None
        self._end(_Ending(StopReason.PAUSED, output=f"paused: {len(waiting)} call(s) wait for a decision "
                                                    f"({', '.join(waiting)})"))

    def _why_cut_short(self) -> str:
        if self.hit is not None:
            return self.hit.message()
        if self.wrap_up is not None:
            return f"{self.wrap_up.message()} {WRAP_UP_TEXT}"
        error = self.failure[0]
        where = f" at call {error.call.id}" if getattr(error, "call", None) is not None else ""
        return f"the run stopped{where} ({type(error).__name__})"

    # -- 4. limits ----------------------------------------------------------------------------------------

    def _check_budgets(self, turn: ModelTurn) -> None:
        """After a model call: has it taken the run past a budget (agentkit.core.budgets)?"""
        if self.wrapping:  # the last call after a budget ran out: calls it still asks for are not run
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
        """A budget ran out: the run ends ("end", "error"), or gets one last call without tools ("continue")."""
        behavior = self.limits.exit_behavior
        self._reached(hit, "wrap_up" if behavior == "continue" else behavior)
        if behavior == "continue":
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
        key = (call.name, _canonical(call)) if limits.max_repeats is not None else None
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

    def _cancelled(self) -> bool:
        cancel = self.settings.cancel
        return bool(cancel.is_set() if hasattr(cancel, "is_set") else cancel())

    # -- 5. lookup -> parse -> schema -> rules -> approval -> a job; then the outcome ----------------------

    def _prepare(self, slot: _Slot) -> None:
        call, tool = slot.call, self.tools.get(slot.call.name)
        if tool is None:  # lookup: an unknown name (a typo), or one the tool list lost during the run
            known = ", ".join(sorted(self.tools)) or "none"
            if call.name in self.withdrawn:  # the model is behind the list, not mistaken: say so
                refusal = ToolResult.failure(call, "stale_tool", f"tool {call.name!r} was withdrawn: the tool list "
                                                                 f"changed during this run; available tools: {known}")
            else:
                refusal = ToolResult.failure(call, "unknown_tool",
                                             f"no tool named {call.name!r}; available tools: {known}")
            self._refuse(slot, refusal, "lookup")
            return
        checked = validate_arguments(tool, call.raw_arguments)  # parse -> schema -> rules
        if not checked.ok:
            self._refuse(slot, error_result(call, checked), checked.gate or "parse")
            return
        self._gate(call, "rules", True)
        arguments = checked.arguments
        if self.settings.approve is not None or call.id in self.decisions:  # approve, deny, edit or pause
            decision = self.decisions.pop(call.id, None)  # a decision given to resume() comes first
            if decision is None:
                decision = normalize_approval(self.settings.approve(call, self._context(tool, call, 1)))
            if isinstance(decision, Pause):
                self._gate(call, "approval", False, "paused")
                slot.paused = True
                return
            if isinstance(decision, Deny):
                self._gate(call, "approval", False, "denied")
                slot.result = ToolResult.failure(call, "denied", decision.reason)
                return
            if isinstance(decision, Edit):
                checked = validate_arguments(tool, decision.arguments)
                if not checked.ok:
                    self._refuse(slot, error_result(call, checked), "approval")
                    return
                arguments = checked.arguments
            self._gate(call, "approval", True)
        slot.tool, slot.job = tool, self._job(tool, call, arguments)

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
        """The turn and its answers join the history together: the history never holds an unanswered call."""
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
        self.chars += _size(message)

    def _write_back(self) -> None:
        thread = self.thread
        if thread is not None and (not thread.runs or thread.runs[-1] is not self.run):
            thread.messages = list(self.run.messages)
            thread.runs.append(self.run)


def _not_run(call: ToolCall, why: str) -> ToolResult:
    return ToolResult.failure(call, "not_run", f"not run: {why}")


def _check_tool_choice(choice: Any, tools: dict[str, Tool]) -> None:
    if isinstance(choice, dict) and choice.get("name") not in tools:
        raise ValueError(f"tool_choice names {choice.get('name')!r}, which is not among the tools "
                         f"({', '.join(tools) or 'none'})")
    if isinstance(choice, str) and choice not in ("auto", "none", "required", "required_first"):
        raise ValueError(f"tool_choice={choice!r}: use 'auto', 'none', 'required', 'required_first', "
                         "{'name': tool}, or a function (step, run) -> choice")


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


def _size(message: Message) -> int:
    """Characters a message adds to the request (arguments given as an object measured without recursion)."""
    size = len(message.content or "")
    for call in message.tool_calls:
        raw = call.raw_arguments
        size += len(call.name) + (len(raw) if isinstance(raw, str) else json_shape(raw, max_size=MAX_BYTES)[0])
    return size


def _canonical(call: ToolCall) -> str:
    """The arguments in one spelling, so {"a":1,"b":2} and {"b":2,"a":1} count as the same call."""
    if call.arguments is None:  # text that is not a JSON object: the text itself
        return call.raw_arguments if isinstance(call.raw_arguments, str) else "<not an object>"
    if json_shape(call.arguments, max_depth=MAX_DEPTH)[1] > MAX_DEPTH:  # json.dumps would recurse too deep;
        return "<too deep>"  # the parse gate refuses such a call anyway
    return json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=str)


# -- the drivers: do what the core says, and nothing else ---------------------------------------------------

def run(model: Any, prompt: Any, tools: ToolsLike = (), *, thread: Thread | None = None, trace: Trace | None = None,
        executor: str | Executor | None = "threads", max_concurrency: int = 64, **settings: Any) -> Run:
    """Run the loop to a stop reason and return the Run. A run that ends by raising raises a RunError
    whose `.run` is the partial Run, with every call answered.

        model                anything with complete(messages, tools, options) -> ModelTurn (HTTPModel,
                             ScriptedModel, FunctionModel, your own); an async-only model works too
        prompt               a str (one user message), a Message, a list of Messages, or None (a thread's)
        tools                a list of Tools, or a function returning the current list: it is asked before
                             every model call, so a tool set that changes during the run (an MCP server's:
                             `tools=lambda: client.tools`) reaches the model at the next turn
        thread               a Thread: carries the conversation, state and call counts over from earlier runs
        trace                a Trace to record into (default: a new one, as `run.trace`)
        executor             runs the tool calls: "threads" (default), "sequential", "asyncio" or an Executor
        max_concurrency      how many calls of one batch run at once (default 64)

    The other keywords are the run's `Settings`, one object the core reads:
    """
    core = LoopCore(tools, prompt, Settings.from_keywords("run", settings), thread=thread, trace=trace)
    return drive(core, model, executor, max_concurrency)


def drive(core: LoopCore, model: Any, executor: str | Executor | None = "threads",
          max_concurrency: int = 64) -> Run:
    """The sync driver's loop: do what the core says until it is done (run() and resume() use it)."""
    pool, owned = make_executor(executor, max_concurrency=max_concurrency)
    complete = _sync_complete(model)
    try:
        while not isinstance(step := core.next(), Done):
            if isinstance(step, RunTools):
                core.take_outcomes(pool.run_batch(step.jobs, step.trace))  # 5. execute
                continue
            try:
                turn = complete(*step)  # 2. call the model
            except Exception as exc:  # noqa: BLE001 — the run ends with ModelCallError carrying it
                core.model_failed(exc)
                continue
            core.take_turn(turn)
    except BaseException as exc:
        core.abort(exc)
        raise
    finally:
        if owned:
            pool.close()
    return core.result()


async def arun(model: Any, prompt: Any, tools: ToolsLike = (), *, thread: Thread | None = None,
               trace: Trace | None = None, executor: str | Executor | None = "asyncio", max_concurrency: int = 64,
               **settings: Any) -> Run:
    """The same loop as `run`, driven from asyncio: model.acomplete and the tools are awaited (a model
    with only complete() runs in a worker thread). The keywords are run()'s:

        model, prompt, tools, thread, trace, max_concurrency   as for run()
        executor             "asyncio" (default), "threads", "sequential" or an Executor

    The other keywords are the run's `Settings`, one object the core reads:
    """
    core = LoopCore(tools, prompt, Settings.from_keywords("arun", settings), thread=thread, trace=trace)
    return await adrive(core, model, executor, max_concurrency)


async def adrive(core: LoopCore, model: Any, executor: str | Executor | None = "asyncio",
                 max_concurrency: int = 64) -> Run:
    """The async driver's loop (arun() and aresume() use it)."""
    pool, owned = make_executor(executor, default="asyncio", max_concurrency=max_concurrency)
    acomplete = _async_complete(model)
    try:
        while not isinstance(step := core.next(), Done):
            if isinstance(step, RunTools):
                core.take_outcomes(await pool.arun_batch(step.jobs, step.trace))  # 5. execute
                continue
            try:
                turn = await acomplete(*step)  # 2. call the model
            except Exception as exc:  # noqa: BLE001
                core.model_failed(exc)
                continue
            core.take_turn(turn)
    except BaseException as exc:
        core.abort(exc)
        raise
    finally:
        if owned:
            pool.close()
    return core.result()


def takes_settings(driver: Callable, leave_out: tuple[str, ...] = ()) -> None:
    """Give a driver that takes `**settings` the settings as keywords of its signature and help: each
    with its type (as written) and default from `Settings`, and the table of Settings' docstring appended to its own.
    So `help(run)` and IDEs show every setting, and a setting is defined and described once, in Settings.
    `leave_out` names settings the driver does not take (resume: `system` was sent when the run began)."""
    own = inspect.signature(driver).parameters.values()
    keywords = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.type)
                for f in dataclasses.fields(Settings) if f.init and f.name not in leave_out]
    positional = [p for p in own if p.kind is p.POSITIONAL_OR_KEYWORD]
    keyword_only = [p for p in own if p.kind is p.KEYWORD_ONLY]
    signature = inspect.signature(driver).replace(parameters=positional + keywords + keyword_only)
    driver.__signature__ = signature  # type: ignore[attr-defined]
    doc = Settings.__doc__ or ""
    table = doc[doc.index("    Settings (keywords"):].rstrip() + "\n"
    if leave_out:
        table += f"\n    ({', '.join(leave_out)}: not taken here)\n"
    driver.__doc__ = (driver.__doc__ or "") + "\n" + table


takes_settings(run)
takes_settings(arun)


def _sync_complete(model: Any) -> Callable[..., ModelTurn]:
    if hasattr(model, "complete"):
        return model.complete
    if hasattr(model, "acomplete"):  # an async-only model from sync code, even inside a running loop
        return lambda *a: run_in_daemon_thread(lambda: asyncio.run(model.acomplete(*a)), None, "model")
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
