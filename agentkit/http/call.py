"""Step 4's bookkeeping for HTTPModel: one call's state and decisions, with no I/O.

    call = Call(model, messages, tools, options)
    request = call.next_request()          # step 1: the next attempt, to the plan's current model
    call.succeeded(request)                # or:
    wait = call.failed(request, error)     # step 4: the seconds to wait before the next attempt, or raise

`AttemptRequest` is step 1's output: everything one attempt needs, and what names it in an error. `Call`
holds the retry plan (`agentkit.http.retries.RetryPlan`), the budget (`total_timeout`) and the attempts so far,
so the sync and async drivers in `agentkit.http` share every decision and differ only in how they wait.
Every attempt is recorded once, here: in the call's list, in every `record_attempts()` block open in this
thread or task, in the debug log and through `on_attempt`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..core.errors import ProviderError
from ..core.types import Message, ModelOptions, ToolSpec
from .deadlines import AttemptClock
from .retries import Attempt, RetryPlan

if TYPE_CHECKING:
    from .model import HTTPModel

log = logging.getLogger("agentkit.http")

#: The recorders opened by `HTTPModel.record_attempts()` in this thread or task: (model, list) pairs.
RECORDERS: ContextVar[tuple[tuple[Any, list], ...]] = ContextVar("agentkit_attempt_recorders", default=())


@dataclass(frozen=True)
class AttemptRequest:
    """Step 1's output: everything needed to send one attempt, and to name it in an error."""

    model: str
    url: str
    path: str  # URL path + query, for the record (never holds a key)
    headers: dict
    body: dict
    stream: bool
    clock: AttemptClock
    history: tuple  # (model, outcome) of the call's earlier attempts
    wait: float  # slept before this attempt
    started: float  # time.perf_counter() when it was built
    messages: tuple = ()  # the whole conversation, kept only to remember stored responses
    continued: str | None = None  # the stored response this attempt continues from
    sent: list = field(default_factory=list)  # the body's size in bytes, once httpx has encoded it


class Call:
    """One call's state and decisions, shared by the sync and async drivers (no I/O).

    The retry plan, the budget, the attempts so far; `next_request()` builds the next attempt (step 1),
    `failed()` records a failure and answers how long to wait, or raises the error (step 4).
    """

    def __init__(self, owner: HTTPModel, messages: Sequence[Message], tools: Sequence[ToolSpec],
                 options: ModelOptions):
        self.owner, self.messages, self.tools, self.options = owner, list(messages), list(tools), options
        self.plan = RetryPlan(owner.models, owner.max_retries, owner.backoff, owner.max_delay,
                              owner.max_retry_wait, owner._rng)
        self.number = next(owner._call_numbers)
        self.ends = None if owner.total_timeout is None else time.monotonic() + owner.total_timeout
        self.attempts: list[Attempt] = []
        self.recorders = [found for who, found in RECORDERS.get() if who is owner]
        self.wait = 0.0
        self.may_continue = owner.continue_stored  # False after a continued attempt was refused

    def next_request(self) -> AttemptRequest:
        return self.owner._build(self)

    def succeeded(self, request: AttemptRequest) -> None:
        self._record(request, None)

    def failed(self, request: AttemptRequest, error: ProviderError) -> float:
        """Record the failure; the seconds to wait before the next attempt, or raise `error`."""
        self._record(request, error)
        if request.continued is not None and error.status == 400:
            # The server does not know the stored response (expired, or another server): send it all.
            self.owner._stored.forget(request.continued)
            self.may_continue = False
            return 0.0
        if self.ends is None:
            time_left = None
        else:  # a passed budget is passed, however close the clock reads to its end
            time_left = 0.0 if error.error_type == "total_timeout" else self.ends - time.monotonic()
        wait = self.plan.after(error, time_left)
        if wait is None:
            raise error
        self.wait = wait
        return wait

    def spoilt(self, error: ProviderError) -> None:
        """A watched stream broke after its first event: its attempt, counted as a success, failed."""
        counted = self.attempts[-1]
        failed = replace(counted, error=type(error).__name__, error_type=error.error_type, status=error.status,
                         message=error.message)
        for records in (self.attempts, *self.recorders):
            records[:] = [failed if a is counted else a for a in records]

    def _record(self, request: AttemptRequest, error: ProviderError | None) -> None:
        attempt = Attempt(request.model, request.path, 200 if error is None else error.status,
                          error=None if error is None else type(error).__name__,
                          error_type=None if error is None else error.error_type,
                          message=None if error is None else error.message,
                          wait=round(request.wait, 6), elapsed=time.perf_counter() - request.started,
                          call=self.number, request_bytes=request.sent[-1] if request.sent else None)
        self.attempts.append(attempt)
        for recorder in self.recorders:
            recorder.append(attempt)
        log.debug("call %d: %s %s -> %s (waited %.3fs)", self.number, attempt.model, attempt.path,
                  attempt.outcome, request.wait)
        if self.owner.on_attempt is not None:
            self.owner.on_attempt(attempt)

