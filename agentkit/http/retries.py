"""Retry, in an HTTP call's recipe, as decisions without I/O: after a failure, wait how long, then which model.

    plan = RetryPlan(["a", "b"], max_retries=2, backoff=0.5, max_delay=8.0, max_retry_wait=60,
                     rng=random.Random(0))
    plan.model                   -> "a"
    plan.after(error_429)        -> 0.05    wait this long, then try plan.model again
    ...                          -> 0.0     retries used up: plan.model is now "b"
    ...                          -> None    nothing left: raise the error

How long to wait: the server's hint (`error.retry_after`, read from `retry-after-ms` / `retry-after` / the
body by the caller), else `backoff_delay` — exponential, capped, jittered. A wait longer than
`max_retry_wait`, or longer than what is left of the call's budget (`time_left`), is not waited for: the
plan moves to the next model at once, or gives up.

`backoff` and `max_delay` are the words `agentkit.Retry` uses for retrying tools, and mean the same: one
back-off shape, one function (`policies.capped_backoff`: backoff, backoff*multiplier, ... at most
max_delay). The randomness differs, so its name does: here `shorten_by` only ever shortens a wait (as the
OpenAI and Anthropic SDKs do), so `max_delay` is a real cap while clients that failed together still
spread out; a tool Retry's `jitter` spreads a delay both ways.

`Attempt` is the record of one try, as `HTTPModel.last_attempts` and `on_attempt` show it.

Left out on purpose: circuit breakers that remember failures across calls, and client-side rate limits.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from ..core.errors import ProviderError, QuotaExceededError
from ..core.policies import capped_backoff

__all__ = ["Attempt", "RetryPlan", "attempt_outcome", "backoff_delay", "moves_to_fallback"]


def backoff_delay(retry: int, rng: random.Random, *, backoff: float = 0.5, max_delay: float = 8.0,
                  multiplier: float = 2.0, shorten_by: float = 0.25) -> float:
    """Seconds to wait before retry number `retry` (0 = the first): `backoff * multiplier**retry`, at most
    `max_delay` (`policies.capped_backoff`, the shape tool retries use too), less a random part of it, up
    to `shorten_by` (0.25: up to a quarter shorter; 0: no randomness).

        backoff_delay(0, random.Random(1))  ->  between 0.375 and 0.5
        backoff_delay(9, random.Random(1))  ->  between 6.0 and 8.0   (capped)
    """
    base = capped_backoff(retry, backoff=backoff, multiplier=multiplier, max_delay=max_delay)
    return base * (1 - shorten_by * rng.random())


def moves_to_fallback(error: ProviderError, model: str) -> bool:
    """Would another model plausibly succeed where `model` failed?

    Yes for anything retryable (the retries were used up), for 404 (model not found, or it takes no
    tools), and for a 400/422 whose message names the model or says something is not supported ("model
    does not support tools"). No for 401/403 (same key everywhere), 413 and other 400s (the request itself
    is wrong), and for a quota or spend limit (the same account pays for every model: QuotaExceededError).
    """
    if isinstance(error, QuotaExceededError):
        return False
    if error.retryable or error.status == 404:
        return True
    if error.status in (400, 422):
        text = f"{error.error_type or ''} {error.message or ''}".lower()
        return model.lower() in text or "support" in text
    return False


class RetryPlan:
    """The retry and fallback policy for one call: no I/O, just decisions (sync and async share it)."""

    def __init__(self, models: Sequence[str], max_retries: int, backoff: float, max_delay: float,
                 max_retry_wait: float, rng: random.Random):
        self.models, self.max_retries = tuple(models), max_retries
        self.backoff, self.max_delay, self.max_retry_wait, self.rng = backoff, max_delay, max_retry_wait, rng
        self.index = 0  # which model
        self.retries = 0  # retries of that model so far

    @property
    def model(self) -> str:
        return self.models[self.index]

    def after(self, error: ProviderError, time_left: float | None = None) -> float | None:
        """Seconds to wait before the next attempt (of `self.model`, which may have moved on), or None.

        `time_left`: seconds left of the call's budget (None: no budget). Nothing left: None.
        """
        if time_left is not None and time_left <= 0:
            return None
        if error.retryable and self.retries < self.max_retries:
            hint = error.retry_after
            if hint is not None:
                wait = max(0.0, hint)
            else:
                wait = backoff_delay(self.retries, self.rng, backoff=self.backoff, max_delay=self.max_delay)
            if wait <= self.max_retry_wait and (time_left is None or wait < time_left):
                self.retries += 1
                return wait
            # The server wants a longer pause than we accept or can afford: fall over instead.
        if moves_to_fallback(error, self.model) and self.index + 1 < len(self.models):
            self.index, self.retries = self.index + 1, 0
            return 0.0  # a different model has its own limits: no reason to wait
        return None


def attempt_outcome(status: int | None, error_type: str | None = None, error: str | None = None) -> int | str:
    """One word for how an attempt ended: the HTTP status when there was one to blame, else what went
    wrong ("ConnectError", "timeout", "invalid_json", ...)."""
    if status is not None and (error is None or status >= 400):
        return status
    return error_type or error or "?"


@dataclass(frozen=True)
class Attempt:
    """One HTTP try of a call: which model, which URL path, what came back, the wait before it, its duration.

    `status` is the HTTP status (None when no response arrived); `error` the ProviderError class name and
    `error_type` the provider's error type, or what went wrong on the way ("ConnectError", "timeout",
    "stalled", "total_timeout"). `message` is already scrubbed of keys. `call` numbers the calls of one
    HTTPModel (1, 2, ...), so the attempts of concurrent calls can be told apart. `request_bytes` is the
    size of the JSON body sent (None when the attempt failed before it was built).
    """

    model: str
    path: str
    status: int | None = None
    error: str | None = None
    error_type: str | None = None
    message: str | None = None
    wait: float = 0.0
    elapsed: float = 0.0
    call: int = 0
    request_bytes: int | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def outcome(self) -> int | str:
        """The HTTP status when there was one to blame, else the name of what went wrong."""
        return attempt_outcome(self.status, self.error_type, self.error)

    def to_dict(self) -> dict:
        return asdict(self)
