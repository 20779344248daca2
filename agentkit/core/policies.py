"""What the loop does when a tool fails, and when it must stop: error policies, Retry, Limits, approval.

Error policies (`on_tool_error=` of `run`) for exceptions raised *inside* a tool:

    "report"             default: the model sees a sanitised error envelope and can react
    "raise"              the run stops with ToolExecutionError (LangGraph ToolNode's default)
    "any other text"     the model sees exactly this text; a near miss of a mode name ("rasie", "Report",
                         "raise ") is refused with "did you mean 'raise'?", never taken as the text
    ValueError / (A, B)  only these exception classes are reported; any other one raises
    fn(exc, call)        returns the text the model sees, or None to raise
    Retry(...)           run the tool again (idempotent tools only, unless told otherwise), then
                         `on_failure`: "report", "raise", or any of the policies above

Argument errors (bad JSON, schema, rules) and unknown tools are not exceptions of the tool: they are
always reported to the model, except under "raise", which raises for them too.

What "report" shows is `sanitize_error_text(exception)`: no stack traces, URLs, hostnames, IPs, e-mail
addresses, SQL or file paths reach the model. The exception itself is yours: a function policy receives
it, and `Run.results` / the trace's `tool_end` events say which call failed with which exception type.

Limits (`limits=` of `run`): one dataclass, None switches a cap off. `exit_behavior` says what
happens when a cap is hit: "end" stops with a final message naming the limit and the counts; "error"
raises LimitExceeded carrying the partial run; "continue" means one thing per kind of limit (the table in
Limits' docstring): for a tool-call cap, the over-limit calls are answered with an error and the model goes
on; for a budget, a *wrap_up*: one last model call, without tools.

Left out on purpose: circuit breakers and per-exception backoff tables (a callable policy can do both).
"""

from __future__ import annotations

import difflib
import functools
import random
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Literal, Mapping, Union

from .budgets import price_table, validate_token_caps
from .errors import ToolFailure, ToolReturnError, ToolTimeout
from .types import ToolCall, ToolResult

ExitBehavior = Literal["continue", "end", "error"]


# -- error policies ------------------------------------------------------------------------------------

def capped_backoff(retry: int, *, backoff: float, multiplier: float, max_delay: float) -> float:
    """`backoff * multiplier**retry` seconds (retry 0 is the first), at most `max_delay`: the one back-off
    shape, of tool retries (`Retry.delays`) and of HTTP retries (`agentkit.http.retries.backoff_delay`). Each
    adds its own randomness on top, under its own name: Retry's `jitter` spreads a delay both ways (so a
    delay may pass max_delay by that much); the HTTP retry's `shorten_by` only shortens one, as the OpenAI
    and Anthropic SDKs do, so there `max_delay` is a hard cap."""
    if backoff == 0:
        return 0.0
    try:
        return min(max_delay, backoff * multiplier ** retry)
    except OverflowError:  # a float power too large for a float: the cap, long before
        return max_delay


@dataclass(frozen=True)
class Retry:
    """Run a failing tool again: `max_retries=2` means up to 3 runs in all.

    Delays: backoff, backoff*multiplier, ... capped at max_delay (`capped_backoff`), each scaled by a random
    factor in [1-jitter, 1+jitter]. Only tools flagged `idempotent=True` are retried unless `only_idempotent=False`:
    running a payment twice is worse than reporting a timeout once.
    """

    max_retries: int = 2
    backoff: float = 1.0
    multiplier: float = 2.0
    max_delay: float = 60.0
    jitter: float = 0.25
    retry_on: tuple[type[BaseException], ...] = (Exception,)
    on_failure: Any = "report"
    only_idempotent: bool = True

    def __post_init__(self):
        if not isinstance(self.max_retries, int) or isinstance(self.max_retries, bool) or self.max_retries < 0:
            raise ValueError(f"Retry(max_retries={self.max_retries!r}): use a whole number, 0 or more")
        if self.backoff < 0 or self.max_delay < 0 or self.multiplier < 0 or not 0 <= self.jitter <= 1:
            raise ValueError("Retry: backoff, multiplier and max_delay must be >= 0 and jitter in [0, 1]")
        retry_on = self.retry_on
        if isinstance(retry_on, type):
            object.__setattr__(self, "retry_on", retry_on := (retry_on,))
        if not (isinstance(retry_on, tuple) and retry_on
                and all(isinstance(c, type) and issubclass(c, BaseException) for c in retry_on)):
            raise TypeError(f"Retry(retry_on={self.retry_on!r}): use an exception class or a tuple of them")
        if isinstance(self.on_failure, Retry):
            raise ValueError("Retry(on_failure=Retry(...)) makes no sense: add the retries together")

    def delays(self, rng: random.Random) -> Iterator[float]:
        for retry in range(self.max_retries):
            base = capped_backoff(retry, backoff=self.backoff, multiplier=self.multiplier, max_delay=self.max_delay)
            yield base * (1 + self.jitter * (2 * rng.random() - 1))

    def applies_to(self, exc: BaseException, idempotent: bool) -> bool:
        return (idempotent or not self.only_idempotent) and isinstance(exc, self.retry_on)


ErrorPolicyLike = Union[str, type, tuple, Callable[[BaseException, Any], Union[str, None]], Retry]


@dataclass(frozen=True)
class ErrorPolicy:
    """A policy value resolved once: `decide(exc, call)` gives the text to report, or None to raise."""

    source: Any
    decide: Callable[[BaseException, Any], Union[str, None]] = field(repr=False)
    retry: Retry | None = None
    raise_argument_errors: bool = False


REPORT = "report"  # marker: use the default sanitised envelope


def resolve_error_policy(policy: ErrorPolicyLike) -> ErrorPolicy:
    """Turn any accepted `on_tool_error` value into an ErrorPolicy; a clear TypeError otherwise."""
    if isinstance(policy, ErrorPolicy):
        return policy
    if isinstance(policy, Retry):
        inner = resolve_error_policy(policy.on_failure)
        return ErrorPolicy(source=policy, decide=inner.decide, retry=policy,
                           raise_argument_errors=inner.raise_argument_errors)
    if policy == "report":
        return ErrorPolicy(source=policy, decide=lambda exc, call: REPORT)
    if policy == "raise":
        return ErrorPolicy(source=policy, decide=lambda exc, call: None, raise_argument_errors=True)
    if isinstance(policy, str):
        _refuse_near_miss(policy)
        return ErrorPolicy(source=policy, decide=lambda exc, call: policy)
    if isinstance(policy, type) and issubclass(policy, BaseException):
        policy = (policy,)
    if isinstance(policy, tuple) and policy and all(
            isinstance(p, type) and issubclass(p, BaseException) for p in policy):
        classes = policy
        return ErrorPolicy(source=policy, decide=lambda exc, call: REPORT if isinstance(exc, classes) else None)
    if isinstance(policy, type):  # a class is callable, but int(exc, call) is not a policy
        raise TypeError(f"on_tool_error={policy!r} is not a policy: a class must be an exception class")
    if callable(policy):
        def decide(exc, call, fn=policy):
            text = fn(exc, call)
            if text is not None and not isinstance(text, str):
                raise TypeError(f"on_tool_error function returned {type(text).__name__}; "
                                "return a str for the model, or None to raise")
            return text
        return ErrorPolicy(source=policy, decide=decide)
    raise TypeError(f"on_tool_error={policy!r} is not a policy: use 'report', 'raise', a text, "
                    "exception class(es), a function (exc, call) -> str | None, or Retry(...)")


MODES = ("report", "raise")


def _refuse_near_miss(text: str) -> None:
    """A single word close to a mode name is a typo, not the text the model should read: refuse it.
    A sentence (words with spaces between) is a text, whatever its words."""
    word = text.strip()
    if not word or any(ch.isspace() for ch in word):
        return
    close = difflib.get_close_matches(word.lower(), MODES, n=1, cutoff=0.75)
    if close:
        raise ValueError(f"on_tool_error={text!r} is not a mode: did you mean {close[0]!r}? "
                         "(for a fixed text the model reads, write a sentence, e.g. 'The tool failed.')")


# -- error text a model may read: what "report" shows of a tool's exception ----------------------------

@functools.lru_cache(maxsize=1)
def redaction_patterns() -> tuple[tuple[re.Pattern, str], ...]:
    """What `sanitize_error_text` replaces, as (pattern, replacement) in the order they run: URLs, e-mail
    addresses, SQL, Windows and POSIX paths, IPv6 and IPv4 addresses, hostnames. Compiled on first use,
    not at import.

        for pattern, replacement in redaction_patterns():
            text = pattern.sub(replacement, text)
    """
    return (
        (re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+"), "<url>"),
        (re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"), "<email>"),
        (re.compile(r"(?is)\b(?:select\b.+?\bfrom\b|insert\s+into\b|update\s+\S+\s+set\b|"
                    r"delete\s+from\b|(?:create|drop|alter|truncate)\s+"
                    r"(?:table|index|view|database|schema)\b)[^\n]*"), "<sql>"),
        (re.compile(r"\b[A-Za-z]:\\[^\s'\"]+"), "<path>"),
        (re.compile(r"(?<![\w.:/])(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?"), "<path>"),
        # IPv6: hex groups and colons with a hex letter or a "::" somewhere (so 12:30:45 stays a time)
        (re.compile(r"\[[0-9a-fA-F:]+\](?::\d+)?|(?<![\w:])(?=[0-9a-fA-F:]*(?:::|[a-fA-F]))"
                    r"[0-9a-fA-F]{0,4}(?::[0-9a-fA-F]{0,4}){2,7}(?![\w:])"), "<ip>"),
        (re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b"), "<ip>"),
        # hostnames: a known suffix, or a country code after two labels, or localhost, or name:port
        (re.compile(r"(?i)\b(?:(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:com|net|org|io|dev|app|cloud|"
                    r"internal|local|lan|corp|intra|svc|cluster)"
                    r"|(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.){2,}[a-z]{2}|localhost)\b(?::\d{1,5})?"
                    r"|\b[a-z][a-z0-9-]*:\d{4,5}\b"), "<host>"),
    )


_TRACE_LINE = r'^\s*(File ".*", line \d+.*|at [\w$.<>]+\(.*\)|Traceback \(most recent call last\):)\s*$'


def sanitize_error_text(text: str, max_length: int = 300) -> str:
    """Exception text made safe and short enough to show a model: no stack traces, URLs, hostnames, IPs,
    e-mail addresses, SQL or file paths.

        sanitize_error_text('could not connect to db-7.prod.internal:5432 (SELECT * FROM users)')
        -> 'could not connect to <host> (<sql>)'

    First the lines of a stack trace go (after a Python traceback only its last line, the exception, is
    kept), then each of `redaction_patterns()` runs, then the text is cut to `max_length` characters.
    Pattern-based, so it errs towards removing too much.
    Left out on purpose: secrets that look like ordinary words (a redaction list belongs to the app).
    """
    lines = [line for line in str(text).splitlines() if not re.match(_TRACE_LINE, line)]
    if "Traceback (most recent call last)" in str(text):
        # after a traceback's frames come source lines; the last line is the exception itself
        lines = [line for line in lines if line.strip()][-1:]
    out = " ".join(line.strip() for line in lines if line.strip())
    for pattern, replacement in redaction_patterns():
        out = pattern.sub(replacement, out)
    out = re.sub(r"\s+", " ", out).strip()
    return out if len(out) <= max_length else out[:max_length - 1] + "…"


def failure_result(call: ToolCall, error: BaseException, attempts: int = 1, text: str | None = None) -> ToolResult:
    """The result a model sees for a call whose tool failed: the error envelope, kind by what went wrong.

        failure_result(call, TimeoutError("upstream"))  ->  ok=False, kind "tool_error", sanitised message

    A `ToolFailure` the tool raised keeps its own kind, words, path and keyword. `text` replaces the
    envelope with a fixed message (a policy's own wording). The loop and the MCP
    server both answer failures with this, so a model sees one shape whichever runs the tool.
    """
    path = keyword = None
    if isinstance(error, ToolFailure):  # the tool chose its kind and words
        kind, message, path, keyword = error.kind, error.message, error.path, error.keyword
    else:
        kind = "timeout" if isinstance(error, ToolTimeout) else (
            "bad_return" if isinstance(error, ToolReturnError) else "tool_error")
        message = sanitize_error_text(f"{type(error).__name__}: {error}")
    if attempts > 1:
        message += f" (after {attempts} attempts)"
    return ToolResult.failure(call, kind, message, path=path, keyword=keyword, text=text)


# -- limits --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Limits:
    """Caps on a run, each named `max_<what it counts>`. None switches a cap off.

    max_steps              model calls per run (the iteration cap; requested tools are not run at the cap)
    max_tool_calls         tool calls per run
    max_thread_tool_calls  tool calls across all runs of one Thread
    max_calls_per_tool     {"tool_name": cap} per run (a tool's own `max_calls` flag adds to this)
    max_repeats            how often the same tool with the same arguments may run per run
    max_invalid_calls      argument errors (bad JSON, schema, rules, unknown tool) per run before the
                           run stops with "schema_fail"
    exit_behavior          "end" (default) | "error" | "continue": what a hit tool-call cap or budget does
                           (the table below); the step caps and max_invalid_calls always stop: with "error"
                           they raise, otherwise they end

Budgets (see `agentkit.core.budgets`), checked after every model call (the time budget also before one):

    max_tokens             {kind: cap} per run, kinds "input", "output", "reasoning", "cached", "total"
    max_thread_tokens      the same across all runs of one Thread
    max_thread_steps       model calls across all runs of one Thread
    max_cost_usd           USD per run, from `prices` (merged over budgets.DEFAULT_PRICES); a model
                           without a price stops the run with UnknownPriceError instead of a guess
    max_seconds            seconds the run has been running, read from `clock` (time.monotonic by default;
                           pass your own to test without waiting); across a pause, the time it waited
                           paused does not count (Run.elapsed_seconds carries the time it ran), while
                           the tokens and money it spent before the pause do

What `exit_behavior` does, per kind of limit (in each column, a word means one behaviour):

                 a tool-call cap                              a budget
                 (max_tool_calls, max_thread_tool_calls,      (max_tokens, max_thread_tokens,
                 max_calls_per_tool, max_repeats)             max_cost_usd, max_seconds)
    "end"        stop: "tool_limit" or "repeated_call", a     stop: the budget's reason ("token_budget",
                 final message naming the limit and the       "cost_budget", "time_budget"), a final message
                 counts; the over-limit call and the rest     naming it; the calls of the step that went
                 of its step are answered "not_run"           over are answered "not_run"
    "error"      as "end", then LimitExceeded is raised, carrying the partial run (stop reason "error")
    "continue"   refuse and go on: each over-limit call is    wrap_up: the calls of the step that went over
                 answered with an error result (its message   are answered "not_run", saying the budget is
                 CONTINUE_TEXT; trace action "blocked") and   spent; the model gets one last call, without
                 the model goes on; only another limit can    tools (tool_choice "none"), and the run stops
                 stop the run                                 with the budget's reason (trace: "wrap_up")

    LangChain's ToolCallLimitMiddleware calls the first two tool-call caps `run_limit` and `thread_limit`;
    the final message keeps its words ("Tool call limit reached: run limit exceeded (4/3 calls).") so that
    the two can be compared side by side.

    The default caps a run at 20 model calls: an agent that never stops is the most common bug, and a
    cap you did not choose is better than none (LangGraph's default is 10,007 steps).
    """

    max_steps: int | None = 20
    max_tool_calls: int | None = None
    max_thread_tool_calls: int | None = None
    max_calls_per_tool: Mapping[str, int] | None = None
    max_repeats: int | None = None
    max_invalid_calls: int | None = None
    exit_behavior: ExitBehavior = "end"
    max_tokens: Mapping[str, int] | None = None
    max_thread_tokens: Mapping[str, int] | None = None
    max_thread_steps: int | None = None
    max_cost_usd: float | None = None
    max_seconds: float | None = None
    prices: Mapping[str, Any] | None = field(default=None, repr=False)
    clock: Callable[[], float] | None = field(default=None, repr=False)

    def __post_init__(self):
        for name in ("max_steps", "max_tool_calls", "max_thread_tool_calls", "max_repeats", "max_invalid_calls",
                     "max_thread_steps"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise ValueError(f"Limits.{name}={value!r}: use a whole number >= 0, or None for no cap")
        if self.max_calls_per_tool is not None and not isinstance(self.max_calls_per_tool, Mapping):
            raise TypeError(f"Limits.max_calls_per_tool={self.max_calls_per_tool!r}: use a dict {{tool_name: cap}}")
        for tool_name, cap in (self.max_calls_per_tool or {}).items():
            if not isinstance(cap, int) or isinstance(cap, bool) or cap < 0:
                raise ValueError(f"Limits.max_calls_per_tool[{tool_name!r}]={cap!r}: use a whole number >= 0")
        if self.exit_behavior not in ("continue", "end", "error"):
            raise ValueError(f"Limits.exit_behavior={self.exit_behavior!r}: use 'continue', 'end' or 'error'")
        validate_token_caps("max_tokens", self.max_tokens)
        validate_token_caps("max_thread_tokens", self.max_thread_tokens)
        for name in ("max_cost_usd", "max_seconds"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
                raise ValueError(f"Limits.{name}={value!r}: use a number >= 0, or None for no budget")
        object.__setattr__(self, "prices", price_table(self.prices))  # checked now, not at the first call
        if self.clock is not None and not callable(self.clock):
            raise TypeError(f"Limits.clock={self.clock!r}: use a function returning seconds, like time.monotonic")

    @property
    def budget_behavior(self) -> Literal["wrap_up", "end", "error"]:
        """What a spent budget does: exit_behavior, where "continue" means "wrap_up" (the table above)."""
        return "wrap_up" if self.exit_behavior == "continue" else self.exit_behavior

    @property
    def budgeted(self) -> bool:
        """Is any budget set? (Without one, the loop skips their checks.)"""
        return any(cap is not None for cap in (self.max_tokens, self.max_thread_tokens, self.max_cost_usd,
                                               self.max_seconds))


#: Budget limits: (stop reason, what ran out, unit of the counts).
_BUDGETS = {"max_tokens": ("token_budget", "{kind} tokens", "tokens"),
            "max_thread_tokens": ("token_budget", "thread {kind} tokens", "tokens"),
            "max_cost_usd": ("cost_budget", "cost", "$"),
            "max_seconds": ("time_budget", "time", "s")}


@dataclass(frozen=True)
class LimitHit:
    """Which cap was reached, with the counts the final message names.

    `limit` is the Limits field ("max_tool_calls", "max_steps", ...); for a per-tool cap it also names
    the tool: "max_calls_per_tool:search".
    """

    limit: str
    count: int | float
    maximum: int | float

    @property
    def stop_reason(self) -> str:
        budget = _BUDGETS.get(self.limit.split(":")[0])
        if budget is not None:
            return budget[0]
        return {"max_repeats": "repeated_call", "max_steps": "max_steps", "max_thread_steps": "max_steps",
                "max_invalid_calls": "schema_fail"}.get(self.limit, "tool_limit")

    def message(self) -> str:
        name, _, kind = self.limit.partition(":")
        budget = _BUDGETS.get(name)
        if budget is not None:
            _, what, unit = budget
            what = what.format(kind=kind)
            if unit == "$":
                counts = f"${self.count:.4f}/${self.maximum:.4f}"
            else:
                counts = f"{self.count:g}/{self.maximum:g} {unit}"
            return f"Budget reached: {what} exceeded ({counts})."
        if self.limit == "max_thread_steps":
            return f"Step limit reached: thread limit exceeded ({self.count}/{self.maximum} model calls)."
        label = {"max_tool_calls": "run limit", "max_thread_tool_calls": "thread limit",
                 "max_repeats": "repeat limit", "max_steps": "step limit", "max_invalid_calls": "invalid call limit",
                 }.get(self.limit, self.limit.replace("max_calls_per_tool:", "limit for "))
        unit = "model calls" if self.limit == "max_steps" else "calls"
        head = "Step limit reached" if self.limit == "max_steps" else "Tool call limit reached"
        return f"{head}: {label} exceeded ({self.count}/{self.maximum} {unit})."


#: The error message of an over-limit call's envelope under exit_behavior="continue": LangChain's
#: ToolCallLimitMiddleware sentence (langchain/agents/middleware/tool_call_limit.py; README claim C9).
CONTINUE_TEXT = "Tool call limit exceeded. Do not make additional tool calls."


# -- approval --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Approve:
    pass


@dataclass(frozen=True)
class Deny:
    reason: str = "denied by the user"


@dataclass(frozen=True)
class Edit:
    arguments: dict


@dataclass(frozen=True)
class Pause:
    """Decide later: the run stops with "paused" before this step's calls run; `run.to_json()` keeps it,
    and `agentkit.resume(state, {call_id: decision})` goes on (see agentkit.long_running.resume)."""

    reason: str = "waiting for a decision"


def normalize_approval(answer: Any) -> Approve | Deny | Edit | Pause:
    """An approval hook may answer True/None (approve), False or a str (deny, with reason), or the classes."""
    if answer is None or answer is True:
        return Approve()
    if answer is False:
        return Deny()
    if isinstance(answer, str):
        return Deny(answer)
    if isinstance(answer, (Approve, Deny, Edit, Pause)):
        return answer
    raise TypeError(f"approval hook returned {answer!r}; return True/False, a denial reason, "
                    "Approve(), Deny(reason), Edit(arguments) or Pause()")
