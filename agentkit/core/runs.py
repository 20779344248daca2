"""What a run takes and gives back: its Settings, the Run, why it stopped (StopReason), and the Thread it
may continue.

    thread = Thread()
    result = agentkit.run(model, "Remember Osaka", tools=tools, thread=thread, limits=Limits(max_steps=5))
    result.stop_reason    # StopReason.FINAL_ANSWER, or what stopped it: max_steps, tool_limit, ...
    result.summary()      # the counters as a dict
    thread.messages       # the conversation, carried over to the thread's next run

The loop core (agentkit.core.loop) reads these and fills the Run; the drivers (agentkit.core.drive: run,
arun) take the settings as keywords. Each setting is defined and described once, in `Settings`, and
`takes_settings` puts them in a driver's signature and help.

The words, as the code counts them: a *step* is one model call (`Run.steps`), a *round* an assistant
message with the results that answer its calls, a *turn* a user message and what follows it
(agentkit.core.history), a *run* one call of run() / arun(), a *thread* a conversation across runs. The
tutorials' glossary (docs/glossary.md) defines each once.

Left out on purpose: what happens during a run. The core decides it and the drivers do it.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence, Union

from .budgets import Cost, cost
from .checkpoint import Paused, run_to_dict
from .policies import ErrorPolicy, ErrorPolicyLike, LimitHit, Limits, resolve_error_policy
from .tools import Tool, ToolContext, is_valid_timeout
from .trace import Event, Trace
from .types import Message, ModelTurn, ToolCall, ToolChoice, ToolResult, Usage


class StopReason(str, enum.Enum):
    """Why a run stopped. A str, so traces and tables show the plain word. Which check gives which reason,
    in order of precedence: the table `agentkit.core.loop.LoopCore.STOP_CHECKS` (besides it, "paused" comes
    from the approval gate, and a run that something outside the core interrupts ends "error" or, on
    Ctrl-C, a cancelled task or a streamed run its caller stopped reading, "user_cancel")."""

    FINAL_ANSWER = "final_answer"  # the model answered without asking for tools
    MAX_STEPS = "max_steps"  # the step cap: the model was called Limits.max_steps times
    TOOL_LIMIT = "tool_limit"  # a per-run, per-thread or per-tool cap with exit_behavior "end"
    REPEATED_CALL = "repeated_call"  # the same call (name + arguments) past Limits.max_repeats
    RETURN_DIRECT = "return_direct"  # every call of the last batch was a return_direct tool
    USER_CANCEL = "user_cancel"  # cancel was set from outside (or Ctrl-C, a cancelled task, a stream left early)
    SCHEMA_FAIL = "schema_fail"  # more argument errors than Limits.max_invalid_calls
    ERROR = "error"  # the run raised (the exception carries this Run)
    TOKEN_BUDGET = "token_budget"  # Limits.max_tokens / max_thread_tokens ran out (agentkit.core.budgets)
    COST_BUDGET = "cost_budget"  # Limits.max_cost_usd ran out
    TIME_BUDGET = "time_budget"  # Limits.max_seconds ran out
    PAUSED = "paused"  # an approval answered Pause(): Run.to_json(), then agentkit.resume(...)

    def __str__(self) -> str:
        return self.value


#: tool_choice per step (model call): a fixed value, "required_first" (required at step 1, then auto), or a
#: function of (step, run).
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
    pending: Paused | None = None  # a paused run's last answer, whose calls wait for a decision
    elapsed_seconds: float = 0.0  # time running, across pauses, by the time budget's clock (0: no time budget)
    compaction: dict | None = None  # what the compact= strategy needs to send the same requests (Summarize's)

    @classmethod
    def begin(cls, prompt: Any, settings: Settings, thread: Thread | None = None, trace: Trace | None = None) -> Run:
        """A new Run: the thread's history, the system prompt unless it has one, then the prompt."""
        history = list(thread.messages) if thread is not None else []
        index = thread.history_index if thread is not None else None  # it knows where the system messages are
        has_system = bool(index.systems) if index is not None and index.describes(history) else \
            any(m.role == "system" for m in history)
        if settings.system and not has_system:
            history.insert(0, Message.system(settings.system))
        start = len(history)
        history.extend(prompt_messages(prompt))
        trace = trace if trace is not None else Trace()
        if settings.on_event is not None:
            trace.listeners.append(settings.on_event)
        return cls(messages=history, trace=trace, start_index=start,
                   state=dict(thread.state) if thread is not None else {})

    def to_json(self, indent: int | None = None) -> str:
        """The run as JSON, to be resumed after a restart (`agentkit.resume`); see agentkit.core.checkpoint.
        StateError when `state` holds something JSON would not give back as it is (a set, a datetime, ...)."""
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

    Every run writes its messages back, also one that raised: every call in them has its result. The
    list a run leaves is the run's own (`thread.messages is thread.runs[-1].messages`: handed over, not
    copied); the next run starts from a copy of it. `history_index` measures it once for all runs
    (agentkit.core.history.HistoryIndex): a run on a 10,000-message thread does not measure it again.
    """

    def __init__(self, messages: Iterable[Message] = (), state: dict | None = None):
        self.messages: list[Message] = list(messages)
        self.history_index: Any = None  # the last run's HistoryIndex of `messages`
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
        tool_choice          "auto" (default), "none", "required", "required_first" (required at the first
                             step, then auto), {"name": tool} to force one tool, {"allowed": [tools], "mode":
                             "auto" | "required"} to offer only a subset (OpenAI's allowed_tools; Gemini takes
                             mode required), or fn(step, run) -> one of those
        parallel_tool_calls  True / False asks the provider to allow / forbid several calls in one step;
                             None (default) sends nothing and leaves the provider's default
        stream               True: the model is called with streaming on (each answer is reassembled); to
                             see its pieces as they arrive, use agentkit.run_stream / arun_stream
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
                             ElideToolResults / Summarize (they change only the earlier turns, the same way
                             for every request of a tool cycle); default None: everything is sent
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
        if self.compact is not None and not (callable(self.compact) or hasattr(self.compact, "plan")):
            raise TypeError(f"compact={self.compact!r}: use a function messages -> messages, e.g. DropOldest()")


#: The settings a driver takes as keywords (policy is derived, not given).
SETTING_NAMES = frozenset(f.name for f in dataclasses.fields(Settings) if f.init)


def check_tool_choice(choice: Any, tools: dict[str, Tool]) -> None:
    """A tool_choice setting (or what a tool_choice function answered) checked against the tools by name."""
    if isinstance(choice, dict) and "allowed" in choice:  # {"allowed": [names], "mode": "auto" | "required"}
        unknown = [name for name in choice["allowed"] if name not in tools]
        if unknown or choice.get("mode", "auto") not in ("auto", "required"):
            raise ValueError(f"tool_choice {choice!r}: allowed names tools ({', '.join(tools) or 'none'}), "
                             "mode is 'auto' or 'required'")
    elif isinstance(choice, dict) and choice.get("name") not in tools:
        raise ValueError(f"tool_choice names {choice.get('name')!r}, which is not among the tools "
                         f"({', '.join(tools) or 'none'})")
    if isinstance(choice, str) and choice not in ("auto", "none", "required", "required_first"):
        raise ValueError(f"tool_choice={choice!r}: use 'auto', 'none', 'required', 'required_first', "
                         "{'name': tool}, or a function (step, run) -> choice")


def prompt_messages(prompt: Any) -> list[Message]:
    """The prompt of run() as messages: a str is one user message; None adds none (a Thread's own go on)."""
    if prompt is None:
        return []
    if isinstance(prompt, str):
        return [Message.user(prompt)]
    if isinstance(prompt, Message):
        return [prompt]
    if isinstance(prompt, (list, tuple)) and all(isinstance(m, Message) for m in prompt):
        return list(prompt)
    raise TypeError(f"prompt must be a str, a Message or a list of Messages, not {type(prompt).__name__}")


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
