"""One HTTP call's retry state: the plan, the budget and the attempts so far, and what to do after each (no I/O).

    state = RetryState(RetryPlan(["a", "b"], 2, 0.5, 8.0, 60.0, random.Random(0)), number=1)
    state.plan.model                      # "a": where the next attempt goes
    state.succeeded(request)              # or:
    wait = state.failed(request, error)   # seconds to wait before the next attempt; raises `error` if none is left
    state.attempts                        # [Attempt(model="a", status=503, ...), Attempt(model="a", status=200, ...)]

The sync and async drivers of `HTTPModel` share every decision through it and differ only in how they
wait. Each attempt is recorded once, here: in `attempts`, in each `recorders` list (the
`record_attempts()` blocks open in the caller's thread or task), in the debug log and through `on_attempt`.
The decisions themselves are `RetryPlan`'s (`agentkit.http.retries`); what this adds is one call's
bookkeeping: the budget's end, the attempts, and a continued request that the server refused.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..core.errors import ProviderError
from .request import AttemptRequest
from .retries import Attempt, RetryPlan
from .stored import StoredConversations

__all__ = ["RetryState"]

log = logging.getLogger("agentkit.http")


class RetryState:
    """One call: its retry plan, its budget, its attempts so far.

    `number` numbers the calls of one model (1, 2, ...; every Attempt carries it). `total_timeout` starts
    the call's budget now. `stored`, when given, are the stored conversations this call may continue
    from; after the server refuses a continued attempt it is None and the call sends everything.
    """

    def __init__(self, plan: RetryPlan, number: int, *, total_timeout: float | None = None,
                 stored: StoredConversations | None = None, recorders: Sequence[list[Attempt]] = (),
                 on_attempt: Callable[[Attempt], None] | None = None,
                 now: Callable[[], float] = time.monotonic):
        self.plan, self.number, self.stored, self.now = plan, number, stored, now
        self.ends = None if total_timeout is None else now() + total_timeout
        self.attempts: list[Attempt] = []
        self.recorders = list(recorders)
        self.on_attempt = on_attempt
        self.wait = 0.0  # slept before the next attempt

    def history(self) -> tuple[tuple[str, int | str], ...]:
        """(model, outcome) of each attempt so far: what an error of the next attempt lists before its own."""
        return tuple((a.model, a.outcome) for a in self.attempts)

    def succeeded(self, request: AttemptRequest) -> None:
        self._record(request, None)

    def failed(self, request: AttemptRequest, error: ProviderError) -> float:
        """Record the failure; the seconds to wait before the next attempt, or raise `error`."""
        self._record(request, error)
        if request.continued is not None and error.status == 400 and self.stored is not None:
            # The server does not know the stored response (expired, or another server): send it all.
            self.stored.forget(request.continued)
            self.stored = None
            return 0.0
        if self.ends is None:
            time_left = None
        else:  # a passed budget is passed, however close the clock reads to its end
            time_left = 0.0 if error.error_type == "total_timeout" else self.ends - self.now()
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
        if self.on_attempt is not None:
            self.on_attempt(attempt)
