"""Every exception agentkit raises, in one tree.

    AgentkitError
    ├── ToolDefinitionError        @tool could not build a tool (unsupported hint, bad flag, duplicate name)
    ├── ToolReturnError            a tool returned something the loop cannot send back (e.g. a state
    │                              update without its result message); names the tool
    ├── ScriptError                a ScriptedModel ran out of steps, or steps were left unconsumed
    ├── MissingExtra               a feature needs an optional dependency; names the extra that brings it
    │                              (also an ImportError)
    ├── ToolTimeout                a tool ran past its timeout (also a TimeoutError)
    ├── ToolFailure                raised by a tool to choose its error envelope: kind, message, path,
    │                              keyword (an MCP server's isError result arrives as one)
    ├── RunError                   the run stopped by raising; `.run` holds the partial Run, in which
    │   │                          every tool call has its result (a Thread stays usable)
    │   ├── LimitExceeded          a Limits cap with exit_behavior="error"
    │   ├── UnknownPriceError      a cost budget, and a model the price table does not know
    │   ├── ToolExecutionError     the error policy said "raise": a tool raised (__cause__ = original),
    │   │                          or a call was refused at a gate
    │   └── ModelCallError         the model call failed (__cause__ = the ProviderError or other)
    ├── StateError                 a saved run (Run.to_json()) that is damaged, edited or not plain JSON;
    │                              `.field` names the place ("messages[3].tool_calls[0].id"); also a ValueError
    ├── ResumeError                a paused run cannot go on as asked: decisions that do not fit its waiting
    │   │                          calls, or a tool of the paused turn gone or changed; also a ValueError
    │   └── AlreadyResumed         this paused state was resumed before (`.token` names the pause)
    ├── ReplayError                replay() cannot reproduce the run (a tool it needs not given, another path
    │                              taken); `.run` is the replayed run when there is one
    └── ProviderError              an HTTP model call failed; carries status, provider error type, message
        ├── BadRequestError        400/404/413/422: the request is wrong; retrying will not help
        │   └── ToolsNotSupportedError  this model takes no tools (Ollama's 400 "… does not support tools",
        │                          OpenRouter's 404 "No endpoints found that support tool use"): `model`
        │                          names it; another model may (a fallback list moves on)
        ├── AuthenticationError    401/403, or a key that is missing or malformed (checked when built)
        ├── RateLimitError         429 (retryable; `retry_after` in seconds when the server said)
        │   └── QuotaExceededError 429 that is billing, not load (OpenAI's insufficient_quota): not retryable
        │       └── SpendLimitError  429 for a spend or usage limit (OpenAI's organization/project spend
        │                          limit, credit balance or usage limit codes; Anthropic's
        │                          enforced_spend_limit_reached): final, no retry, no fallback
        ├── ServerError            5xx, 529 overloaded (retryable)
        ├── ProviderTimeout        an attempt or the whole call ran out of time (retryable; `error_type`
        │                          says which: "timeout", "stalled" stream, "total_timeout")
        ├── ProviderConnectionError  no connection, or it dropped mid-answer (retryable)
        └── BadResponseError       2xx with a body that is not the format's JSON (truncated, invalid, cut stream)

Messages never contain API keys: `ProviderError` text is built from the response, never the request, and
HTTPModel scrubs its keys out of every message, body and attempt record (`agentkit.http.redaction`).
"""

from __future__ import annotations

from typing import Any


class AgentkitError(Exception):
    """Base of everything agentkit raises on purpose."""


class ToolDefinitionError(AgentkitError, TypeError):
    pass


class ToolReturnError(AgentkitError, TypeError):
    def __init__(self, tool_name: str, message: str):
        super().__init__(f"tool {tool_name!r}: {message}")
        self.tool_name = tool_name


class ScriptError(AgentkitError, AssertionError):
    pass


class MissingExtra(AgentkitError, ImportError):
    """An optional feature's dependency is not installed; the message names the extra to install."""


class ToolTimeout(AgentkitError, TimeoutError):
    def __init__(self, tool_name: str, timeout: float):
        super().__init__(f"tool {tool_name!r} did not finish within {timeout:g} s")
        self.tool_name, self.timeout = tool_name, timeout


class ToolFailure(AgentkitError):
    """Raised by a tool to say how it failed, in the error envelope's own terms.

        raise ToolFailure("not_found", "no invoice INV-1099")
        # the model sees {"ok": false, "error": {"kind": "not_found", "message": "no invoice INV-1099", ...}}

    Any other exception becomes kind "tool_error" with its text sanitised; a ToolFailure's message is the
    tool's own words for the model and is sent as written. The error policies treat it like any exception.
    """

    def __init__(self, kind: str, message: str, path: str | None = None, keyword: str | None = None):
        where = f" at {path}" if path else ""
        super().__init__(f"{kind}{where}: {message}")
        self.kind, self.message, self.path, self.keyword = kind, message, path, keyword


class RunError(AgentkitError):
    """The run ended by raising; `run` is the partial Run (messages, trace, counters) up to that point.

    Cancelling is a stop reason ("user_cancel"), not an error. An exception from a function you gave the
    run (an approval hook, a rule, a tool_choice function, an on_event listener) propagates as itself,
    after the run has answered every call and written its messages back to the Thread.
    """

    def __init__(self, message: str, run: Any = None):
        super().__init__(message)
        self.run = run


class LimitExceeded(RunError):
    """`limit` names the Limits field ("max_tool_calls", ...); `count` of `maximum` were reached."""

    def __init__(self, message: str, run: Any = None, limit: str = "", count: int = 0, maximum: int = 0):
        super().__init__(message, run)
        self.limit, self.count, self.maximum = limit, count, maximum


class UnknownPriceError(RunError):
    """A cost budget cannot be kept: the model has no price in the table (`model` names it)."""

    def __init__(self, message: str, run: Any = None, model: str | None = None):
        super().__init__(message, run)
        self.model = model


class ToolExecutionError(RunError):
    """`call` is the ToolCall that ended the run."""

    def __init__(self, message: str, run: Any = None, call: Any = None):
        super().__init__(message, run)
        self.call = call


class ModelCallError(RunError):
    pass


class StateError(AgentkitError, ValueError):
    """A saved run state that cannot be trusted: damaged, edited, of another version, or holding values
    that are not plain JSON. `field` is where, as a path into the saved JSON ("steps",
    "messages[3].tool_calls[0].id", "state['when']"); the message starts with it.

        StateError("steps", "-50 is less than the minimum of 0")
        -> "saved run state, steps: -50 is less than the minimum of 0"
    """

    def __init__(self, field: str, problem: str):
        super().__init__(f"saved run state, {field}: {problem}" if field else f"saved run state: {problem}")
        self.field, self.problem = field, problem


class ResumeError(AgentkitError, ValueError):
    """A paused run cannot go on as asked; nothing has run. The message says what to change."""


class AlreadyResumed(ResumeError):
    """This paused state was resumed before: resuming it again would run its approved calls a second time.
    `token` is the pause's id (`Run.pending.token`), the key the resume ledger holds."""

    def __init__(self, message: str, token: str):
        super().__init__(message)
        self.token = token


class ReplayError(AgentkitError, ValueError):
    """replay() cannot reproduce a run; `run` is the replayed Run when the replay got that far."""

    def __init__(self, message: str, run: Any = None):
        super().__init__(message)
        self.run = run


class ProviderError(AgentkitError):
    """An HTTP model call failed. `retryable` says whether waiting and trying again can help.

    Built once, whole: `attempts` lists every try of the call as (model, outcome) pairs, this one last
    (outcome: the HTTP status, or what went wrong, e.g. "ConnectError", "timeout"); `retryable=` overrides
    the class's answer for one error (a 429 that means "out of credit" is not worth retrying).
    """

    retryable = False

    def __init__(self, message: str, *, status: int | None = None, error_type: str | None = None,
                 provider: str | None = None, model: str | None = None, retry_after: float | None = None,
                 body: Any = None, retryable: bool | None = None,
                 attempts: list | tuple = ()):
        self.status, self.error_type, self.provider, self.model = status, error_type, provider, model
        self.retry_after, self.body, self.message = retry_after, body, message
        if retryable is not None:
            self.retryable = retryable
        self.attempts = list(attempts)
        where = " ".join(str(p) for p in (provider, model) if p)
        head = f"{status} " if status is not None else ""
        kind = f"{error_type}: " if error_type else ""
        super().__init__(f"{head}{kind}{message}" + (f" [{where}]" if where else ""))


class BadRequestError(ProviderError):
    pass


class ToolsNotSupportedError(BadRequestError):
    """The model cannot be given tools at all (Ollama: 400 "… does not support tools"; OpenRouter: 404 "No
    endpoints found that support tool use"). Not retried: the same model answers the same; another model
    might (a fallback list moves on).

        except ToolsNotSupportedError as exc:
            print(exc.model)            # 'llama2:13b'
    """


class AuthenticationError(ProviderError):
    pass


class RateLimitError(ProviderError):
    retryable = True


class QuotaExceededError(RateLimitError):
    """A 429 that waiting will not fix: the account is out of quota or credit."""

    retryable = False


class SpendLimitError(QuotaExceededError):
    """A 429 for a spend, credit or usage limit: "retrying a billing, spending, or quota error does not
    restore access" (OpenAI's help centre). `error_type` holds the code that said so
    (`project_spend_limit_exceeded`, `enforced_spend_limit_reached`, ...). The same key would reach the
    same limit on any other model, so HTTPModel neither retries nor falls back."""


class ServerError(ProviderError):
    retryable = True


class ProviderTimeout(ProviderError):
    retryable = True


class ProviderConnectionError(ProviderError):
    retryable = True


class BadResponseError(ProviderError):
    retryable = True


def error_for_status(status: int) -> type[ProviderError]:
    """Which ProviderError subclass a status code maps to (408/409/429/5xx/529 are retryable)."""
    if status == 429:
        return RateLimitError
    if status in (401, 403):
        return AuthenticationError
    if status in (408, 409) or status >= 500:
        return ServerError
    return BadRequestError
